// `lake-compactor compact --format iceberg` on path-based Iceberg tables in a temp folder: a streaming-style
// appender's table (one file and one `append` snapshot per micro-batch) gets each partition's small files rewritten
// and committed as one `replace` snapshot; the live row multiset (DuckDB reading the files the current snapshot
// names) is identical, the outputs keep the inputs' Parquet field ids and carry metrics by field id, an append that
// wins the commit race is rebased over, a concurrent rewrite of an input aborts the group with nothing of it
// visible, and a run killed right after its metadata commit is completed by the next run without a second replace.
// Vendored tables written by Spark are compacted too (tables with deletes: cli-iceberg-compact-deletes.test.ts).
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { runCompact } from '../../functions/cli/compact.js';
import { run } from '../../functions/cli/index.js';
import { loadTable, PathCatalog } from '../../functions/core/formats/iceberg/catalog.js';
import { commitReplace } from '../../functions/core/formats/iceberg/commit.js';
import { GROUP_ID_PROPERTY, RUN_ID_PROPERTY } from '../../functions/core/formats/iceberg/group-commit.js';
import { readSnapshotFiles, type SnapshotFiles } from '../../functions/core/formats/iceberg/live-files.js';
import { schemaById } from '../../functions/core/formats/iceberg/metadata.js';
import { metricsConfig, readParquetMetrics } from '../../functions/core/formats/iceberg/metrics.js';
import { decodeSingleValue } from '../../functions/core/formats/iceberg/transforms.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';
import {
  appendIcebergEvents,
  createIcebergEventsTable,
  ICEBERG_EVENTS_SCHEMA,
} from '../../functions/tools/sample-iceberg.js';
import { captureIo } from '../support/cli-io.js';
import { observedStore, type StoreCall } from '../support/crash-store.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';
import { ICEBERG_FIXTURES } from '../support/fixtures.js';
import { liveRows, type TableCopy } from './core/formats/iceberg/commit-harness.js';

const DAYS = ['2024-03-01', '2024-03-02'];
const BATCHES = 6;
const NOW = Date.UTC(2024, 2, 3);
const PARTITION = (day: string) => `data/event_timestamp_day=${day}`;
const clock = { now: () => NOW };

let db: DuckDb;
let dir: string;
let store: LocalObjectStore;

/** The current snapshot's live data files, as keys, and every row they hold, canonically ordered. */
async function liveTable(): Promise<{ keys: string[]; rows: string[]; files: SnapshotFiles }> {
  const table = await loadTable(store, '');
  const files = await readSnapshotFiles(store, table);
  const keys = files.dataFiles.map((f) => f.entry.file.key).sort();
  const list = keys.map((k) => sqlString(join(dir, k))).join(', ');
  const rows = await db.rows(`SELECT * FROM read_parquet([${list}]) ORDER BY ALL`);
  return { keys, rows: rows.map((r) => JSON.stringify(r)), files };
}

/** The operation of every snapshot, in commit order, and their summaries. */
async function snapshots(): Promise<{ operation: string; summary: Record<string, string> }[]> {
  const table = await loadTable(store, '');
  return table.metadata.snapshots.map((s) => ({
    operation: s.summary.operation ?? '?',
    summary: { ...s.summary },
  }));
}

async function operationsAfter(count: number): Promise<string[]> {
  return (await snapshots()).slice(count).map((s) => s.operation);
}

/** `{ column: field id }` of a Parquet file's footer, read by DuckDB. */
async function fieldIds(key: string): Promise<Record<string, number>> {
  const rows = await db.rows(
    `SELECT name, field_id FROM parquet_schema(${sqlString(join(dir, key))}) WHERE num_children IS NULL OR num_children = 0`,
  );
  return Object.fromEntries(rows.map((r) => [r.name as string, Number(r.field_id)]));
}

beforeAll(async () => {
  db = await openDuckDb();
});

afterAll(async () => {
  db.close();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

beforeEach(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  dir = await mkdtemp(join(tmpdir(), 'lc-iceberg-'));
  store = new LocalObjectStore(dir);
  await createIcebergEventsTable(store, '', { now: NOW });
  let seed = 1;
  for (const day of DAYS) {
    for (let b = 0; b < BATCHES; b += 1) {
      await appendIcebergEvents(store, '', { day, rows: 40 + b, seed: seed++, now: NOW });
    }
  }
});

describe('lake-compactor compact --format iceberg', () => {
  it('rewrites each partition into one file committed as a replace snapshot, every row kept, inputs left for older snapshots', async () => {
    // Prepare
    const before = await liveTable();
    const snapshotsBefore = (await snapshots()).length;
    const io = captureIo();

    // Act
    const code = await run(['compact', dir, '--format', 'iceberg'], io);

    // Assess: one replace snapshot per partition, one live file per partition, the same rows
    expect(code, io.stderr.join('\n')).toBe(0);
    const after = await liveTable();
    expect(after.rows).toEqual(before.rows);
    expect(await operationsAfter(snapshotsBefore)).toEqual(['replace', 'replace']);
    expect(after.keys).toHaveLength(DAYS.length);
    for (const day of DAYS)
      expect(after.keys.filter((k) => k.startsWith(`${PARTITION(day)}/`))).toHaveLength(1);
    // Each replace says what it did and which run and group made it.
    const replaces = (await snapshots()).slice(snapshotsBefore).map((s) => s.summary);
    for (const summary of replaces) {
      expect(summary).toMatchObject({
        'added-data-files': '1',
        'deleted-data-files': String(BATCHES),
        [GROUP_ID_PROPERTY]: expect.stringMatching(/^g/),
        [RUN_ID_PROPERTY]: expect.stringMatching(/^cli-/),
      });
      expect(summary['added-records']).toBe(summary['deleted-records']);
    }
    // Readers of the snapshot before still find every input on storage.
    for (const key of before.keys) expect(await store.head(key), key).toBeDefined();
    const table = await loadTable(store, '');
    const older = await readSnapshotFiles(store, table, {
      snapshotId: table.metadata.snapshots[snapshotsBefore - 1]?.snapshotId ?? -1n,
    });
    expect(older.dataFiles.map((f) => f.entry.file.key).sort()).toEqual(before.keys);
  });

  it('keeps the Parquet field ids of the inputs in every output, and records metrics by field id for it', async () => {
    // Prepare
    const before = await liveTable();
    const inputIds = await fieldIds(before.keys[0] ?? '');
    const io = captureIo();

    // Act
    const code = await run(['compact', dir, '--format', 'iceberg'], io);

    // Assess: the output footers carry the table schema's ids, exactly as the inputs did
    expect(code, io.stderr.join('\n')).toBe(0);
    const expected = Object.fromEntries(ICEBERG_EVENTS_SCHEMA.fields.map((f) => [f.name, f.id]));
    expect(inputIds).toEqual(expected);
    const after = await liveTable();
    for (const key of after.keys) expect(await fieldIds(key), key).toEqual(expected);
    // The manifest entry of each output has its row count and per-field-id metrics, bounds as DuckDB sees them.
    for (const live of after.files.dataFiles) {
      const file = live.entry.file;
      const path = sqlString(join(dir, file.key));
      const [stats] = await db.rows(
        `SELECT count(*)::VARCHAR AS n, epoch_us(min(event_timestamp))::VARCHAR AS lo, epoch_us(max(event_timestamp))::VARCHAR AS hi FROM read_parquet(${path})`,
      );
      expect(String(file.recordCount)).toBe(stats?.n);
      expect([...file.valueCounts.keys()].sort()).toEqual([1, 2, 3, 4, 5]);
      expect([...file.nullValueCounts.values()].every((n) => n === 0n)).toBe(true);
      const lower = file.lowerBounds.get(3);
      const upper = file.upperBounds.get(3);
      expect(lower && String(decodeSingleValue('timestamptz', lower))).toBe(stats?.lo);
      expect(upper && String(decodeSingleValue('timestamptz', upper))).toBe(stats?.hi);
      expect(file.partition.values.map((v) => v.fieldId)).toEqual([1000]);
    }
  });

  it('rebases over an append that wins the metadata version it wanted, keeping the appended rows exactly once', async () => {
    // Prepare: the first time the compaction tries to commit, a writer commits that version first.
    const before = await liveTable();
    const snapshotsBefore = (await snapshots()).length;
    let appended: { key: string } | undefined;
    let raced = false;
    const hooks = {
      wrapStore: (inner: ObjectStore) =>
        interceptPut(inner, async (key) => {
          if (raced || !isMetadataFile(key)) return;
          raced = true;
          appended = await appendIcebergEvents(inner, '', {
            day: DAYS[0] ?? '',
            rows: 7,
            seed: 99,
            now: NOW,
          });
        }),
    };

    // Act
    await runCompact(dir, { format: 'iceberg' }, { out: () => {}, clock, env: {} }, hooks);

    // Assess: the append and both replace snapshots are in the table; rows = before + the appended batch
    expect(raced).toBe(true);
    const after = await liveTable();
    expect(await operationsAfter(snapshotsBefore)).toEqual(['append', 'replace', 'replace']);
    expect(after.keys).toContain(appended?.key);
    const appendedRows = await db.rows(
      `SELECT * FROM read_parquet(${sqlString(join(dir, appended?.key ?? ''))})`,
    );
    expect([...after.rows].sort()).toEqual(
      [...before.rows, ...appendedRows.map((r) => JSON.stringify(r))].sort(),
    );
    expect(after.rows).toHaveLength(before.rows.length + 7);
    expect(after.keys.filter((k) => k.startsWith(`${PARTITION(DAYS[0] ?? '')}/`))).toHaveLength(2);
  });

  it('aborts a group whose input a concurrent commit removed: nothing of it is committed or left in the table', async () => {
    // Prepare: before the compaction's first commit attempt, another engine rewrites one of its inputs elsewhere.
    const before = await liveTable();
    const snapshotsBefore = (await snapshots()).length;
    const victim = before.keys.find((k) => k.startsWith(`${PARTITION(DAYS[0] ?? '')}/`)) ?? '';
    const moved = `${PARTITION(DAYS[0] ?? '')}/rewritten-by-another-engine.parquet`;
    let rewritten = false;
    const hooks = {
      wrapStore: (inner: ObjectStore) =>
        interceptPut(inner, async (key) => {
          if (rewritten || !isMetadataFile(key)) return;
          rewritten = true;
          await moveDataFile(inner, victim, moved);
        }),
    };
    const folderBefore = new Set(await keysOf(`${PARTITION(DAYS[0] ?? '')}/`));

    // Act
    const outcome = await runCompact(
      dir,
      { format: 'iceberg' },
      { out: () => {}, clock, env: {} },
      hooks,
    ).catch((err: unknown) => err);

    // Assess: the other rewrite stands, the first partition's group left no snapshot and no file; the other compacted
    expect(rewritten).toBe(true);
    expect(outcome).not.toBeInstanceOf(Error);
    expect(await operationsAfter(snapshotsBefore)).toEqual(['replace', 'replace']);
    const [theirs, ours] = (await snapshots()).slice(snapshotsBefore).map((s) => s.summary);
    expect(theirs?.[RUN_ID_PROPERTY]).toBeUndefined();
    expect(ours?.[RUN_ID_PROPERTY]).toMatch(/^cli-/);
    const after = await liveTable();
    expect(after.rows).toEqual(before.rows);
    expect(new Set(await keysOf(`${PARTITION(DAYS[0] ?? '')}/`))).toEqual(new Set([...folderBefore, moved]));
    expect(after.keys.filter((k) => k.startsWith(`${PARTITION(DAYS[0] ?? '')}/`))).toHaveLength(BATCHES);
    expect(after.keys).toContain(moved);
    // Every manifest our aborted attempt wrote is gone too: each Avro file is reachable from a snapshot.
    expect(await unreachableAvroKeys()).toEqual([]);
  });

  it('completes a run killed right after its metadata commit on the next run, without a second replace', async () => {
    // Prepare: the process dies just after the first metadata file is written (before the journal knows).
    const before = await liveTable();
    const snapshotsBefore = (await snapshots()).length;
    const first = await runCompact(
      dir,
      { format: 'iceberg', partition: PARTITION(DAYS[0] ?? '') },
      { out: () => {}, clock, env: {} },
      { wrapStore: (inner) => diesAfter(inner, (call) => call.method === 'put' && isMetadataFile(call.key)) },
    ).catch((err: unknown) => err);
    expect(first).toBeInstanceOf(Error);
    expect(await operationsAfter(snapshotsBefore)).toEqual(['replace']);

    // Act: the next run settles the group (finds its own snapshot), then compacts what is left
    const io = captureIo();
    const code = await run(['compact', dir, '--format', 'iceberg'], io);

    // Assess
    expect(code, io.stderr.join('\n')).toBe(0);
    expect(await operationsAfter(snapshotsBefore)).toEqual(['replace', 'replace']);
    const after = await liveTable();
    expect(after.rows).toEqual(before.rows);
    expect(after.keys).toHaveLength(DAYS.length);
  });

  it('refuses --format iceberg on a folder with no Iceberg metadata, changing nothing', async () => {
    // Prepare
    const empty = await mkdtemp(join(tmpdir(), 'lc-not-iceberg-'));
    const io = captureIo();

    // Act
    const code = await run(['compact', empty, '--format', 'iceberg'], io);

    // Assess
    expect(code).not.toBe(0);
    expect(io.stderr.join('\n')).toMatch(/no metadata file under metadata\//);
    expect(await keysOfStore(new LocalObjectStore(empty), '')).toEqual([]);
    await rm(empty, { recursive: true, force: true });
  });
});

describe('lake-compactor compact --format iceberg on tables written by Spark', () => {
  let copy: TableCopy;

  async function copyFixture(name: string): Promise<TableCopy> {
    const root = await mkdtemp(join(tmpdir(), 'lc-iceberg-spark-'));
    await cp(join(ICEBERG_FIXTURES, name), join(root, name), { recursive: true });
    const tableStore = new LocalObjectStore(root);
    copy = {
      dir: root,
      store: tableStore,
      table: name,
      file: (key) => join(root, key),
      remove: () => undefined,
    };
    return copy;
  }

  async function current(): Promise<{ files: SnapshotFiles; rows: string[]; snapshots: number }> {
    const table = await loadTable(copy.store, copy.table);
    const files = await readSnapshotFiles(copy.store, table);
    return {
      files,
      rows: await liveRows(db, copy, table, files),
      snapshots: table.metadata.snapshots.length,
    };
  }

  afterAll(async () => {
    if (copy !== undefined) await rm(copy.dir, { recursive: true, force: true });
  });

  it('compacts the small files of an unpartitioned format-v1 table into one, every row kept', async () => {
    // Prepare
    await copyFixture('spark_v1_unpartitioned_small_files');
    const before = await current();
    const io = captureIo();

    // Act
    const code = await run(['compact', copy.file(copy.table), '--format', 'iceberg'], io);

    // Assess
    expect(code, io.stderr.join('\n')).toBe(0);
    const after = await current();
    expect(before.files.dataFiles.length).toBeGreaterThan(1);
    expect(after.files.dataFiles).toHaveLength(1);
    expect(after.files.dataFiles[0]?.entry.file.key).toMatch(
      new RegExp(`^${copy.table}/data/part-cli-[^/]+\\.parquet$`),
    );
    expect(after.rows).toEqual(before.rows);
    expect(after.snapshots).toBe(before.snapshots + 1);
  });
});

async function keysOfStore(s: ObjectStore, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of s.listAll(prefix)) keys.push(o.key);
  return keys;
}

function keysOf(prefix: string): Promise<string[]> {
  return keysOfStore(store, prefix);
}

/** A table's metadata file (what the path catalog's commit writes with put-if-absent). */
function isMetadataFile(key: string): boolean {
  return /(^|\/)metadata\/v\d+\.metadata\.json$/.test(key);
}

/** The Avro files under metadata/ that no snapshot's manifest list reaches (a failed attempt's leftovers). */
async function unreachableAvroKeys(): Promise<string[]> {
  const table = await loadTable(store, '');
  const reachable = new Set<string>();
  for (const s of table.metadata.snapshots) {
    reachable.add(table.paths.key(s.manifestList));
    const files = await readSnapshotFiles(store, table, { snapshotId: s.snapshotId });
    for (const m of files.manifests) reachable.add(m.key);
  }
  return (await keysOf('metadata/')).filter((k) => k.endsWith('.avro') && !reachable.has(k));
}

/** Another engine's rewrite of one data file: its bytes under a new name, committed as a replace of the old one. */
async function moveDataFile(inner: ObjectStore, from: string, to: string): Promise<void> {
  await inner.put(to, await inner.get(from));
  const table = await loadTable(inner, '');
  const files = await readSnapshotFiles(inner, table);
  const old = files.dataFiles.find((f) => f.entry.file.key === from);
  const schema = schemaById(table.metadata);
  if (old === undefined || schema === undefined || files.snapshot === undefined)
    throw new Error(`${from} is not live`);
  await commitReplace(
    inner,
    new PathCatalog(inner),
    {
      tableLocation: '',
      startingSnapshotId: files.snapshot.snapshotId,
      removedFiles: [old.entry.file.path],
      addedFiles: [
        {
          path: table.paths.path(to),
          partition: old.entry.file.partition,
          metrics: await readParquetMetrics(inner, to, schema, metricsConfig(table.metadata, schema)),
        },
      ],
    },
    { clock },
  );
}

/** Runs `before` ahead of every put (awaited), then the put itself. */
function interceptPut(inner: ObjectStore, before: (key: string) => Promise<void>): ObjectStore {
  const observed = observedStore(inner, {});
  return {
    ...observed,
    listAll: (prefix) => inner.listAll(prefix),
    put: async (key, body, options) => {
      await before(key);
      return inner.put(key, body, options);
    },
  };
}

/** A store whose process dies right after the first request `kills` matches completed: every later request fails. */
function diesAfter(inner: ObjectStore, kills: (call: StoreCall) => boolean): ObjectStore {
  let dead = false;
  return observedStore(inner, {
    before: (call) => {
      if (dead) throw new Error(`injected: the process died before ${call.method} ${call.key}`);
    },
    after: (call) => {
      if (kills(call)) dead = true;
    },
  });
}
