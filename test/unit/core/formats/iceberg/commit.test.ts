// A replace snapshot committed through the path catalog keeps the table's rows exactly (a multiset read with
// DuckDB from the files themselves, deletes applied), takes the removed files out, records the spec's counters,
// rebases over a concurrent append and aborts, leaving nothing behind, when a concurrent commit removed an input;
// on a format-v3 table it assigns row ids as the spec says (first-row-id, added-rows, next-row-id).
import { readFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  commitAppend,
  commitReplace,
  decodeSingleValue,
  findField,
  IcebergCommitConflictError,
  type LoadedTable,
  loadTable,
  PathCatalog,
  readIcebergSnapshot,
  readManifest,
  readSnapshotFiles,
  type SnapshotFiles,
  schemaById,
} from '../../../../../functions/core/formats/iceberg/index.js';
import { ManualClock } from '../../../../../functions/ports/clock.js';
import type { ObjectStore, PutOptions } from '../../../../../functions/ports/object-store.js';
import { type DuckDb, openDuckDb, sqlString } from '../../../../support/duckdb.js';
import { pathCatalogOptions } from '../../../../support/fixtures.js';
import {
  addedFile,
  avroKeys,
  copyFixtureTable,
  liveRows,
  reachableMetadataKeys,
  rewriteInto,
  type TableCopy,
  writeWithFieldIds,
} from './commit-harness.js';

let duckdb: DuckDb;
beforeAll(async () => {
  duckdb = await openDuckDb();
});
afterAll(() => duckdb.close());

const copies: TableCopy[] = [];
afterEach(() => {
  for (const c of copies.splice(0)) c.remove();
});

const clock = new ManualClock(Date.UTC(2026, 0, 2));
const options = { clock, sleep: async () => {} };

async function open(name: string) {
  const copy = copyFixtureTable(name);
  copies.push(copy);
  const table = await loadTable(copy.store, name);
  const files = await readSnapshotFiles(copy.store, table);
  // A fixture whose metadata files are named 000NN-<uuid> is a path table here: said so, as a user must.
  return { copy, table, files, catalog: new PathCatalog(copy.store, pathCatalogOptions(name)) };
}

async function reread(copy: TableCopy): Promise<{ table: LoadedTable; files: SnapshotFiles }> {
  const { table, files } = await readIcebergSnapshot(copy.store, copy.table, { now: clock.now() });
  return { table, files };
}

const paths = (files: SnapshotFiles) => files.dataFiles.map((f) => f.entry.file.path);
const sum = (values: readonly bigint[]) => values.reduce((a, b) => a + b, 0n);

describe('commitReplace through the path catalog', () => {
  it('spark_v1_unpartitioned_small_files: five one-row files replaced by one keep every row, leave the table, and are counted in the summary', async () => {
    // Prepare: the five first live files rewritten into one
    const { copy, table, files, catalog } = await open('spark_v1_unpartitioned_small_files');
    const before = await liveRows(duckdb, copy, table, files);
    const inputs = files.dataFiles.slice(0, 5);
    const added = await rewriteInto(
      duckdb,
      copy,
      table,
      files,
      inputs,
      `${copy.table}/data/compacted-1.parquet`,
    );
    const startingId = table.metadata.currentSnapshotId ?? 0n;
    // Act
    const result = await commitReplace(
      copy.store,
      catalog,
      {
        tableLocation: copy.table,
        startingSnapshotId: startingId,
        removedFiles: inputs.map((f) => f.entry.file.path),
        addedFiles: [added],
      },
      options,
    );
    // Assess: same row multiset, inputs gone, the new file live once
    const after = await reread(copy);
    expect(await liveRows(duckdb, copy, after.table, after.files)).toEqual(before);
    const live = paths(after.files);
    for (const input of inputs) expect(live).not.toContain(input.entry.file.path);
    expect(live.filter((p) => p === added.path)).toHaveLength(1);
    expect(live).toHaveLength(files.dataFiles.length - inputs.length + 1);
    // Assess: the snapshot, its summary counters and the catalog's files
    const snapshot = after.files.snapshot;
    expect(snapshot?.snapshotId).toBe(result.snapshotId);
    expect(snapshot?.parentSnapshotId).toBe(startingId);
    expect(snapshot?.operation).toBe('replace');
    const inputSizes = sum(inputs.map((f) => f.entry.file.fileSizeInBytes));
    const totalSize = sum(after.files.dataFiles.map((f) => f.entry.file.fileSizeInBytes));
    expect(snapshot?.summary).toEqual({
      operation: 'replace',
      'added-data-files': '1',
      'deleted-data-files': '5',
      'added-records': '5',
      'deleted-records': '5',
      'added-files-size': String(added.metrics.fileSizeInBytes),
      'removed-files-size': String(inputSizes),
      'changed-partition-count': '1',
      'total-records': String(before.length),
      'total-files-size': String(totalSize),
      'total-data-files': String(live.length),
      'total-delete-files': '0',
      'total-position-deletes': '0',
      'total-equality-deletes': '0',
    });
    expect(after.table.metadataKey).toBe(`${copy.table}/metadata/v3.metadata.json`);
    expect(readFileSync(copy.file(`${copy.table}/metadata/version-hint.text`), 'utf8')).toBe('3');
    expect(after.table.metadata.metadataLog.at(-1)?.metadataFile).toBe(
      `${table.metadata.location}/metadata/v2.metadata.json`,
    );
    expect(after.table.metadata.snapshotLog.at(-1)?.snapshotId).toBe(result.snapshotId);
  });

  it('spark_v1_unpartitioned_small_files: the manifest holding the inputs is rewritten with them DELETED and the others EXISTING under their own snapshot', async () => {
    // Prepare
    const { copy, table, files, catalog } = await open('spark_v1_unpartitioned_small_files');
    const inputs = files.dataFiles.slice(3, 6);
    const added = await rewriteInto(
      duckdb,
      copy,
      table,
      files,
      inputs,
      `${copy.table}/data/compacted-2.parquet`,
    );
    // Act
    const result = await commitReplace(
      copy.store,
      catalog,
      {
        tableLocation: copy.table,
        startingSnapshotId: table.metadata.currentSnapshotId ?? 0n,
        removedFiles: inputs.map((f) => f.entry.file.path),
        addedFiles: [added],
      },
      options,
    );
    // Assess
    const after = await reread(copy);
    const ctx = { store: copy.store, table: copy.table, paths: after.table.paths, formatVersion: 1 as const };
    const entries = (await Promise.all(after.files.manifests.map((m) => readManifest(ctx, m)))).flat();
    const removed = new Set(inputs.map((f) => f.entry.file.path));
    const byStatus = (s: string) => entries.filter((e) => e.status === s).map((e) => e.file.path);
    expect(byStatus('added')).toEqual([added.path]);
    expect(byStatus('deleted').sort()).toEqual([...removed].sort());
    expect(byStatus('existing')).toHaveLength(files.dataFiles.length - inputs.length);
    const original = table.metadata.currentSnapshotId;
    for (const e of entries)
      expect(e.snapshotId).toBe(e.status === 'existing' ? original : result.snapshotId);
  });

  it('spark_v1_unpartitioned_small_files: a manifest left with DELETED entries only stays in the snapshot that wrote it and is not carried into the next, every row kept', async () => {
    // Prepare: all twenty files (the fixture's one manifest) replaced by one, so that snapshot's rewritten
    // manifest holds twenty DELETED entries and nothing live
    const { copy, table, files, catalog } = await open('spark_v1_unpartitioned_small_files');
    const original = await liveRows(duckdb, copy, table, files);
    const added = await rewriteInto(
      duckdb,
      copy,
      table,
      files,
      files.dataFiles,
      `${copy.table}/data/all.parquet`,
    );
    const replaced = await commitReplace(
      copy.store,
      catalog,
      {
        tableLocation: copy.table,
        startingSnapshotId: table.metadata.currentSnapshotId ?? 0n,
        removedFiles: paths(files),
        addedFiles: [added],
      },
      options,
    );
    const mid = await reread(copy);
    const ctx = { store: copy.store, table: copy.table, paths: mid.table.paths, formatVersion: 1 as const };
    const deletedOnly = [];
    for (const m of mid.files.manifests) {
      const entries = await readManifest(ctx, m);
      if (entries.length > 0 && entries.every((e) => e.status === 'deleted')) deletedOnly.push(m.path);
    }
    const rowsBefore = await liveRows(duckdb, copy, mid.table, mid.files);

    // Act: the next commit, an ingest job's append
    const appended = await appendOneRow(copy, mid.table, catalog, 'next');

    // Assess: the replace snapshot kept its own DELETED-only manifest (it says what that commit removed); the
    // append's snapshot lists only manifests with live entries; the rows are the replace's plus the appended one
    expect(deletedOnly).toHaveLength(1);
    expect(mid.files.snapshot?.snapshotId).toBe(replaced.snapshotId);
    const after = await reread(copy);
    const listed = after.files.manifests.map((m) => m.path);
    expect(listed).not.toContain(deletedOnly[0]);
    for (const m of after.files.manifests)
      expect((await readManifest(ctx, m)).some((e) => e.status !== 'deleted')).toBe(true);
    expect(paths(after.files).sort()).toEqual([added.path, appended].sort());
    expect(rowsBefore).toEqual(original);
    const rest = [...(await liveRows(duckdb, copy, after.table, after.files))];
    for (const row of rowsBefore) rest.splice(rest.indexOf(row), rest.indexOf(row) < 0 ? 0 : 1);
    expect(rest).toHaveLength(1);
    expect(rest[0]).toContain('next');
  });

  it('the added file metrics: bounds keyed by field id decode to the true min and max of its columns, counts match its rows', async () => {
    // Prepare
    const { copy, table, files } = await open('spark_v1_unpartitioned_small_files');
    const key = `${copy.table}/data/compacted-3.parquet`;
    // Act
    const added = await rewriteInto(duckdb, copy, table, files, files.dataFiles.slice(0, 8), key);
    // Assess: per column, DuckDB's min/max over the file (strings ≤ 16 characters: not truncated)
    const schema = schemaById(table.metadata);
    if (schema === undefined) throw new Error('no schema');
    const oracle = (
      await duckdb.rows(
        `SELECT min(id) AS id_min, max(id) AS id_max, min("user") AS user_min, max("user") AS user_max,
              min(action) AS action_min, max(action) AS action_max,
              epoch_us(min(event_time))::VARCHAR AS t_min, epoch_us(max(event_time))::VARCHAR AS t_max,
              count(*)::VARCHAR AS n, count(id)::VARCHAR AS id_n
       FROM read_parquet(${sqlString(copy.file(key))})`,
      )
    )[0] as Record<string, unknown>;
    const bound = (id: number, which: 'lowerBounds' | 'upperBounds') => {
      const type = findField(schema, id)?.type as string;
      const bytes = added.metrics[which].get(id);
      if (bytes === undefined) throw new Error(`no ${which} for field ${id}`);
      return decodeSingleValue(type, bytes);
    };
    expect([bound(1, 'lowerBounds'), bound(1, 'upperBounds')]).toEqual([oracle.id_min, oracle.id_max]);
    expect([bound(2, 'lowerBounds'), bound(2, 'upperBounds')]).toEqual([oracle.user_min, oracle.user_max]);
    expect([bound(3, 'lowerBounds'), bound(3, 'upperBounds')]).toEqual([
      oracle.action_min,
      oracle.action_max,
    ]);
    expect([bound(4, 'lowerBounds'), bound(4, 'upperBounds')]).toEqual([
      BigInt(oracle.t_min as string),
      BigInt(oracle.t_max as string),
    ]);
    expect(added.metrics.recordCount).toBe(BigInt(oracle.n as string));
    expect(added.metrics.valueCounts.get(1)).toBe(BigInt(oracle.n as string));
    expect(added.metrics.nullValueCounts.get(1)).toBe(
      BigInt(oracle.n as string) - BigInt(oracle.id_n as string),
    );
  });

  it('spark_v1_hour_identity_partitioned: one partition compacted keeps its partition tuple and every row of the table', async () => {
    // Prepare: the files of the partition with the most files
    const { copy, table, files, catalog } = await open('spark_v1_hour_identity_partitioned');
    const before = await liveRows(duckdb, copy, table, files);
    const { snapshot: view } = await readIcebergSnapshot(copy.store, copy.table, { now: clock.now() });
    const biggest = [...view.partitions].sort((a, b) => b.files.length - a.files.length)[0];
    if (biggest === undefined) throw new Error('no partition');
    const keys = new Set(biggest.files.map((f) => f.key));
    const inputs = files.dataFiles.filter((f) => keys.has(f.entry.file.key));
    expect(inputs.length).toBeGreaterThan(1);
    const key = `${copy.table}/data/${biggest.partition}/compacted.parquet`;
    const added = await rewriteInto(duckdb, copy, table, files, inputs, key);
    // Act
    const result = await commitReplace(
      copy.store,
      catalog,
      {
        tableLocation: copy.table,
        startingSnapshotId: table.metadata.currentSnapshotId ?? 0n,
        removedFiles: inputs.map((f) => f.entry.file.path),
        addedFiles: [added],
      },
      options,
    );
    // Assess
    const after = await readIcebergSnapshot(copy.store, copy.table, { now: clock.now() });
    expect(await liveRows(duckdb, copy, after.table, after.files)).toEqual(before);
    const partition = after.snapshot.partitions.find((p) => p.partition === biggest.partition);
    expect(partition?.files.map((f) => f.key)).toEqual([key]);
    expect(after.snapshot.partitions.map((p) => [p.partition, p.files.length])).toEqual(
      view.partitions.map((p) => [p.partition, p.partition === biggest.partition ? 1 : p.files.length]),
    );
    expect(result.summary['changed-partition-count']).toBe('1');
    expect(result.summary['deleted-data-files']).toBe(String(inputs.length));
  });

  it('spark_v2_position_deletes: inputs rewritten with their deletes applied keep the live rows; the rewritten file carries the starting sequence number; deletes left dangling are dropped', async () => {
    // Prepare: the 100-row file (the only target of the 75-row delete) and two more files with deletes
    const { copy, table, files, catalog } = await open('spark_v2_position_deletes');
    const before = await liveRows(duckdb, copy, table, files);
    const big = files.dataFiles.filter((f) => f.entry.file.recordCount === 100n);
    const others = files.dataFiles.filter((f) => f.entry.file.recordCount !== 100n && f.deletes.length > 0);
    const inputs = [...big, ...others.slice(0, 2)];
    expect(inputs).toHaveLength(3);
    const added = await rewriteInto(
      duckdb,
      copy,
      table,
      files,
      inputs,
      `${copy.table}/data/compacted.parquet`,
    );
    const removed = new Set(inputs.map((f) => f.entry.file.path));
    const dangling = files.deleteFiles.filter((d) => d.appliesTo.every((p) => removed.has(p)));
    expect(dangling.length).toBeGreaterThan(0);
    const startingSeq = files.snapshot?.sequenceNumber;
    // Act
    const result = await commitReplace(
      copy.store,
      catalog,
      {
        tableLocation: copy.table,
        startingSnapshotId: table.metadata.currentSnapshotId ?? 0n,
        removedFiles: [...removed],
        addedFiles: [added],
      },
      options,
    );
    // Assess: rows, sequence numbers, dropped deletes
    const after = await reread(copy);
    expect(await liveRows(duckdb, copy, after.table, after.files)).toEqual(before);
    expect(before).toHaveLength(110);
    const mine = after.files.dataFiles.find((f) => f.entry.file.path === added.path);
    expect(mine?.entry.dataSequenceNumber).toBe(startingSeq);
    expect(mine?.entry.fileSequenceNumber).toBe((startingSeq ?? 0n) + 1n);
    expect(result.sequenceNumber).toBe((startingSeq ?? 0n) + 1n);
    expect(after.table.metadata.lastSequenceNumber).toBe(result.sequenceNumber);
    expect([...result.droppedDeleteFiles].sort()).toEqual(dangling.map((d) => d.entry.file.path).sort());
    const liveDeletes = after.files.deleteFiles.map((d) => d.entry.file.path);
    for (const d of dangling) expect(liveDeletes).not.toContain(d.entry.file.path);
    expect(liveDeletes).toHaveLength(files.deleteFiles.length - dangling.length);
    expect(liveDeletes.length).toBeGreaterThan(0);
    expect(result.summary['removed-delete-files']).toBe(String(dangling.length));
    expect(result.summary['removed-position-deletes']).toBe(
      String(sum(dangling.map((d) => d.entry.file.recordCount))),
    );
    expect(result.summary['total-delete-files']).toBe(String(liveDeletes.length));
    expect(result.summary['added-records']).toBe(String(added.metrics.recordCount));
  });

  it('spark_v2_position_deletes: every data file compacted into one drops every position delete and keeps the 110 live rows', async () => {
    // Prepare
    const { copy, table, files, catalog } = await open('spark_v2_position_deletes');
    const before = await liveRows(duckdb, copy, table, files);
    const added = await rewriteInto(
      duckdb,
      copy,
      table,
      files,
      files.dataFiles,
      `${copy.table}/data/all.parquet`,
    );
    // Act
    const result = await commitReplace(
      copy.store,
      catalog,
      {
        tableLocation: copy.table,
        startingSnapshotId: table.metadata.currentSnapshotId ?? 0n,
        removedFiles: paths(files),
        addedFiles: [added],
      },
      options,
    );
    // Assess
    const after = await reread(copy);
    expect(await liveRows(duckdb, copy, after.table, after.files)).toEqual(before);
    expect(after.files.dataFiles.map((f) => f.entry.file.path)).toEqual([added.path]);
    expect(after.files.deleteFiles).toEqual([]);
    expect(added.metrics.recordCount).toBe(110n);
    expect(result.summary).toMatchObject({
      'deleted-data-files': String(files.dataFiles.length),
      'deleted-records': String(sum(files.dataFiles.map((f) => f.entry.file.recordCount))),
      'removed-delete-files': String(files.deleteFiles.length),
      'removed-position-deletes': String(sum(files.deleteFiles.map((d) => d.entry.file.recordCount))),
      'total-records': '110',
      'total-data-files': '1',
      'total-delete-files': '0',
      'total-position-deletes': '0',
      'total-files-size': String(added.metrics.fileSizeInBytes),
    });
  });

  it('a concurrent append committed after the rewrite read its inputs is rebased over: its rows stay live, exactly once', async () => {
    // Prepare: the rewrite reads snapshot S, then another writer appends one file
    const { copy, table, files, catalog } = await open('spark_v1_unpartitioned_small_files');
    const startingId = table.metadata.currentSnapshotId ?? 0n;
    const inputs = files.dataFiles.slice(0, 4);
    const added = await rewriteInto(
      duckdb,
      copy,
      table,
      files,
      inputs,
      `${copy.table}/data/compacted.parquet`,
    );
    const appended = await appendOneRow(copy, table, catalog, 'appended');
    const middle = await reread(copy);
    const expected = await liveRows(duckdb, copy, middle.table, middle.files);
    // Act
    const result = await commitReplace(
      copy.store,
      catalog,
      {
        tableLocation: copy.table,
        startingSnapshotId: startingId,
        removedFiles: inputs.map((f) => f.entry.file.path),
        addedFiles: [added],
      },
      options,
    );
    // Assess
    const after = await reread(copy);
    expect(await liveRows(duckdb, copy, after.table, after.files)).toEqual(expected);
    expect(paths(after.files).filter((p) => p === appended)).toHaveLength(1);
    expect(after.files.snapshot?.parentSnapshotId).toBe(middle.files.snapshot?.snapshotId);
    expect(result.summary['total-data-files']).toBe(String(files.dataFiles.length - inputs.length + 2));
  });

  it('a commit that loses the put-if-absent race to an append reloads, rebases and leaves no manifest of the lost attempt', async () => {
    // Prepare: the append lands just before our metadata file is written
    const { copy, table, files } = await open('spark_v1_unpartitioned_small_files');
    const inputs = files.dataFiles.slice(0, 4);
    const added = await rewriteInto(
      duckdb,
      copy,
      table,
      files,
      inputs,
      `${copy.table}/data/compacted.parquet`,
    );
    let appended = '';
    const racing = raceBeforeFirstMetadataPut(copy.store, async () => {
      appended = await appendOneRow(copy, table, new PathCatalog(copy.store), 'raced');
    });
    const before = await liveRows(duckdb, copy, table, files);
    // Act
    const result = await commitReplace(
      racing,
      new PathCatalog(racing),
      {
        tableLocation: copy.table,
        startingSnapshotId: table.metadata.currentSnapshotId ?? 0n,
        removedFiles: inputs.map((f) => f.entry.file.path),
        addedFiles: [added],
      },
      options,
    );
    // Assess: two attempts, the appended row live once on top of the original rows, no orphan Avro file
    expect(result.attempts).toBe(2);
    const after = await reread(copy);
    const rows = await liveRows(duckdb, copy, after.table, after.files);
    expect(rows).toHaveLength(before.length + 1);
    expect(paths(after.files).filter((p) => p === appended)).toHaveLength(1);
    expect(after.table.metadata.snapshots.map((s) => s.operation)).toEqual(['append', 'append', 'replace']);
    const reachable = await reachableMetadataKeys(copy.store, after.table);
    expect((await avroKeys(copy.store, copy.table)).filter((k) => !reachable.has(k))).toEqual([]);
  });

  it('a concurrent commit that removed one of the inputs aborts the replace with IcebergCommitConflictError, and nothing of it is visible', async () => {
    // Prepare: another writer compacts one of our inputs first
    const { copy, table, files, catalog } = await open('spark_v1_unpartitioned_small_files');
    const startingId = table.metadata.currentSnapshotId ?? 0n;
    const inputs = files.dataFiles.slice(0, 4);
    const added = await rewriteInto(duckdb, copy, table, files, inputs, `${copy.table}/data/ours.parquet`);
    const theirs = await rewriteInto(
      duckdb,
      copy,
      table,
      files,
      inputs.slice(0, 1),
      `${copy.table}/data/theirs.parquet`,
    );
    const other = await commitReplace(
      copy.store,
      catalog,
      {
        tableLocation: copy.table,
        startingSnapshotId: startingId,
        removedFiles: [inputs[0]?.entry.file.path ?? ''],
        addedFiles: [theirs],
      },
      options,
    );
    const between = await reread(copy);
    const rowsBetween = await liveRows(duckdb, copy, between.table, between.files);
    const avroBefore = await avroKeys(copy.store, copy.table);
    // Act
    const attempt = commitReplace(
      copy.store,
      catalog,
      {
        tableLocation: copy.table,
        startingSnapshotId: startingId,
        removedFiles: inputs.map((f) => f.entry.file.path),
        addedFiles: [added],
      },
      options,
    );
    // Assess: the typed error names the file; the table is exactly as the other writer left it
    const error = await attempt.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(IcebergCommitConflictError);
    expect((error as Error).name).toBe('IcebergCommitConflictError');
    expect((error as IcebergCommitConflictError).reasons.join('\n')).toContain(inputs[0]?.entry.file.path);
    const after = await reread(copy);
    expect(after.files.snapshot?.snapshotId).toBe(other.snapshotId);
    expect(after.table.metadataKey).toBe(between.table.metadataKey);
    expect(paths(after.files)).not.toContain(added.path);
    expect(await liveRows(duckdb, copy, after.table, after.files)).toEqual(rowsBetween);
    expect(await avroKeys(copy.store, copy.table)).toEqual(avroBefore);
  });

  it('refuses a replace whose added files hold a different number of rows than inputs without deletes', async () => {
    // Prepare: five inputs, a file with the rows of four
    const { copy, table, files, catalog } = await open('spark_v1_unpartitioned_small_files');
    const added = await rewriteInto(
      duckdb,
      copy,
      table,
      files,
      files.dataFiles.slice(0, 4),
      `${copy.table}/data/short.parquet`,
    );
    const avroBefore = await avroKeys(copy.store, copy.table);
    // Act
    const attempt = commitReplace(
      copy.store,
      catalog,
      {
        tableLocation: copy.table,
        startingSnapshotId: table.metadata.currentSnapshotId ?? 0n,
        removedFiles: files.dataFiles.slice(0, 5).map((f) => f.entry.file.path),
        addedFiles: [added],
      },
      options,
    );
    // Assess
    await expect(attempt).rejects.toThrow(/hold 4 rows where the removed files hold 5/);
    expect((await loadTable(copy.store, copy.table)).metadataKey).toBe(table.metadataKey);
    expect(await avroKeys(copy.store, copy.table)).toEqual(avroBefore);
  });
});

describe('the path catalog and refusals', () => {
  it('of two commits on the same base, exactly one becomes the next version; the other is told conflict', async () => {
    // Prepare
    const { copy, table, catalog } = await open('spark_v2_position_deletes');
    const text = readFileSync(copy.file(table.metadataKey), 'utf8');
    // Act
    const outcomes = await Promise.all([catalog.commit(table, text), catalog.commit(table, text)]);
    // Assess: the 00009-… table gets v10, once
    expect(outcomes.map((o) => o.outcome).sort()).toEqual(['committed', 'conflict']);
    expect((await loadTable(copy.store, copy.table)).metadataKey).toBe(
      `${copy.table}/metadata/v10.metadata.json`,
    );
    expect(await catalog.commit(table, text)).toEqual({ outcome: 'conflict' });
  });

  it('on a format-version 3 table assigns row ids as the spec does: new data manifests get the next ids, the table moves next-row-id past them', async () => {
    // Prepare: the DV table's five one-row files were appended in one manifest with ids 0 to 4 (next-row-id 5);
    // two files without deletes are replaced by one file holding their two rows
    const { copy, table, files, catalog } = await open('spark_v3_deletion_vectors');
    expect(table.metadata.nextRowId).toBe(5n);
    const clean = files.dataFiles.filter((f) => f.deletes.length === 0).slice(0, 2);
    const kept = files.dataFiles.filter((f) => !clean.includes(f));
    const replaced = `${copy.table}/data/replaced.parquet`;
    const sources = clean.map((f) => sqlString(copy.file(f.entry.file.key))).join(', ');
    await writeWithFieldIds(duckdb, copy, table, `SELECT i FROM read_parquet([${sources}])`, replaced);
    const added = await addedFile(copy.store, table, replaced, { specId: 0, values: [] });

    // Act
    const result = await commitReplace(
      copy.store,
      catalog,
      {
        tableLocation: copy.table,
        startingSnapshotId: table.metadata.currentSnapshotId ?? 0n,
        removedFiles: clean.map((f) => f.entry.file.path),
        addedFiles: [added],
      },
      options,
    );

    // Assess: ids from 5 on go to the added manifest (2 rows), then to the rewritten one for its 3 EXISTING rows
    // (Iceberg Java spends ids on them too): 5 ids, next-row-id 10
    const after = await reread(copy);
    const snapshot = after.table.metadata.snapshots.find((s) => s.snapshotId === result.snapshotId);
    expect(snapshot?.firstRowId).toBe(5n);
    expect(snapshot?.addedRows).toBe(5n);
    expect(after.table.metadata.nextRowId).toBe(10n);
    const firstRowIdOf = new Map(
      after.files.dataFiles.map((f) => [f.entry.file.path, f.entry.file.firstRowId]),
    );
    expect(firstRowIdOf.get(added.path)).toBe(5n);
    // The files that stay keep the ids they had: their rows' _row_id does not change.
    for (const f of kept) expect(firstRowIdOf.get(f.entry.file.path)).toBe(f.entry.file.firstRowId);
    // The manifest list records the snapshot's first row id in its header, and each new data manifest its own.
    const ours = after.files.manifests.filter((m) => m.addedSnapshotId === result.snapshotId);
    expect(ours.filter((m) => m.content === 'data').map((m) => m.firstRowId)).toEqual([5n, 7n]);
    expect(ours.filter((m) => m.content === 'deletes').map((m) => m.firstRowId)).toEqual([]);
  });

  it("on a format-version 3 table, a replace rebased over a concurrent append takes row ids after the append's, never the same", async () => {
    // Prepare: the rewrite read the starting snapshot; then an ingest job appends three rows (ids 5 to 7)
    const { copy, table, files, catalog } = await open('spark_v3_deletion_vectors');
    const startingSnapshotId = table.metadata.currentSnapshotId ?? 0n;
    const clean = files.dataFiles.filter((f) => f.deletes.length === 0).slice(0, 2);
    const replaced = `${copy.table}/data/replaced.parquet`;
    const sources = clean.map((f) => sqlString(copy.file(f.entry.file.key))).join(', ');
    await writeWithFieldIds(duckdb, copy, table, `SELECT i FROM read_parquet([${sources}])`, replaced);
    const added = await addedFile(copy.store, table, replaced, { specId: 0, values: [] });
    const appendedKey = `${copy.table}/data/appended.parquet`;
    await writeWithFieldIds(
      duckdb,
      copy,
      table,
      'SELECT (100 + i)::INTEGER AS i FROM range(3) t(i)',
      appendedKey,
    );
    const append = await commitAppend(
      copy.store,
      catalog,
      {
        tableLocation: copy.table,
        addedFiles: [await addedFile(copy.store, table, appendedKey, { specId: 0, values: [] })],
      },
      options,
    );

    // Act
    const result = await commitReplace(
      copy.store,
      catalog,
      {
        tableLocation: copy.table,
        startingSnapshotId,
        removedFiles: clean.map((f) => f.entry.file.path),
        addedFiles: [added],
      },
      options,
    );

    // Assess: the two snapshots' id ranges follow each other; every live file's first row id is distinct
    const after = await reread(copy);
    const byId = new Map(after.table.metadata.snapshots.map((s) => [s.snapshotId, s]));
    const appendSnapshot = byId.get(append.snapshotId);
    const replaceSnapshot = byId.get(result.snapshotId);
    expect([appendSnapshot?.firstRowId, appendSnapshot?.addedRows]).toEqual([5n, 3n]);
    expect(replaceSnapshot?.parentSnapshotId).toBe(append.snapshotId);
    expect(replaceSnapshot?.firstRowId).toBe(8n);
    expect(after.table.metadata.nextRowId).toBe(8n + (replaceSnapshot?.addedRows ?? 0n));
    const firstRowIds = after.files.dataFiles.map((f) => f.entry.file.firstRowId);
    expect(new Set(firstRowIds).size).toBe(firstRowIds.length);
    expect(after.files.dataFiles.find((f) => f.entry.file.key === appendedKey)?.entry.file.firstRowId).toBe(
      5n,
    );
  });

  it('on a format-version 3 table, an append gives its rows the next ids and only those', async () => {
    // Prepare
    const { copy, table, catalog } = await open('spark_v3_row_lineage_rewrite');
    expect(table.metadata.nextRowId).toBe(6n);
    const key = `${copy.table}/data/appended.parquet`;
    await writeWithFieldIds(duckdb, copy, table, 'SELECT i::INTEGER AS i FROM range(4) t(i)', key);

    // Act
    const result = await commitAppend(
      copy.store,
      catalog,
      {
        tableLocation: copy.table,
        addedFiles: [await addedFile(copy.store, table, key, { specId: 0, values: [] })],
      },
      options,
    );

    // Assess: the reused manifest keeps its ids, the four new rows get 6 to 9
    const after = await reread(copy);
    const snapshot = after.table.metadata.snapshots.find((s) => s.snapshotId === result.snapshotId);
    expect([snapshot?.firstRowId, snapshot?.addedRows, after.table.metadata.nextRowId]).toEqual([
      6n,
      4n,
      10n,
    ]);
    const appended = after.files.dataFiles.find((f) => f.entry.file.key === key);
    expect(appended?.entry.file.firstRowId).toBe(6n);
    expect(
      after.files.dataFiles.filter((f) => f.entry.file.key !== key).map((f) => f.entry.file.firstRowId),
    ).toEqual([3n]);
  });
});

/** Appends one file with one row (`user` = `who`) through the catalog, as an ingest job would; its path. */
async function appendOneRow(
  copy: TableCopy,
  table: LoadedTable,
  catalog: PathCatalog,
  who: string,
): Promise<string> {
  const key = `${copy.table}/data/${who}.parquet`;
  await writeWithFieldIds(
    duckdb,
    copy,
    table,
    `SELECT 999::INTEGER AS id, '${who}' AS "user", 'view' AS action, TIMESTAMPTZ '2020-01-02 03:04:05+00' AS event_time`,
    key,
  );
  const file = await addedFile(copy.store, table, key, { specId: 0, values: [] });
  await commitAppend(copy.store, catalog, { tableLocation: copy.table, addedFiles: [file] }, options);
  return file.path;
}

/** A store that runs `race` once, just before the first metadata file is put through it. */
function raceBeforeFirstMetadataPut(inner: ObjectStore, race: () => Promise<void>): ObjectStore {
  let raced = false;
  return new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop === 'put')
        return async (key: string, body: Uint8Array | string, opts?: PutOptions) => {
          if (!raced && key.endsWith('.metadata.json')) {
            raced = true;
            await race();
          }
          return target.put(key, body, opts);
        };
      const value = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
