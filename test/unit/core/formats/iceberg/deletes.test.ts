// Which delete files apply to which data files, proven against the delete files' own contents (read with hyparquet
// and the Puffin footer, not through the reader), and the v3 row-lineage fields the reader exposes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTable, readSnapshotFiles } from '../../../../../functions/core/formats/iceberg/index.js';
import type { ObjectStore } from '../../../../../functions/ports/object-store.js';
import { type DuckDb, openDuckDb, sqlString } from '../../../../support/duckdb.js';
import { fileName, fixturePath, fixtureStore, metadataText } from './fixture-tables.js';

let duckdb: DuckDb;
beforeAll(async () => {
  duckdb = await openDuckDb();
});
afterAll(() => duckdb.close());

/** A Parquet file's rows as DuckDB reads them (BIGINT as strings), by store key. */
async function readRows(
  _store: ObjectStore,
  key: string,
  columns?: string[],
): Promise<Record<string, unknown>[]> {
  const select = columns === undefined ? '*' : columns.map((c) => `"${c}"`).join(', ');
  return duckdb.rows(`SELECT ${select} FROM read_parquet(${sqlString(fixturePath(key))})`);
}

/** The blobs a Puffin file's footer lists (spec: payload JSON, then payload size, flags, magic `PFA1`). */
function puffinBlobs(
  bytes: Uint8Array,
): { type: string; offset: number; length: number; referenced: string }[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const end = bytes.byteLength;
  expect(new TextDecoder().decode(bytes.subarray(end - 4))).toBe('PFA1');
  const payloadSize = view.getInt32(end - 12, true);
  const payload = JSON.parse(new TextDecoder().decode(bytes.subarray(end - 12 - payloadSize, end - 12))) as {
    blobs: { type: string; offset: number; length: number; properties: Record<string, string> }[];
  };
  return payload.blobs.map((b) => ({
    type: b.type,
    offset: b.offset,
    length: b.length,
    referenced: b.properties['referenced-data-file'] ?? '',
  }));
}

describe('delete files and the data files they apply to', () => {
  it('spark_v2_position_deletes: each position delete applies to every data file its rows name, and the 75-row delete only to the 100-row file', async () => {
    // Prepare
    const store = fixtureStore();
    const table = await loadTable(store, 'spark_v2_position_deletes');
    // Act
    const files = await readSnapshotFiles(store, table);
    // Assess: the delete files' own rows (file_path, pos) name only files the reader says they apply to
    expect(
      files.deleteFiles.map((d) => [d.kind, d.entry.dataSequenceNumber, d.entry.file.recordCount]),
    ).toEqual([
      ['position', 7n, 4n],
      ['position', 8n, 3n],
      ['position', 9n, 75n],
    ]);
    const deletedPerFile = new Map<string, number>();
    for (const d of files.deleteFiles) {
      const rows = await readRows(store, d.entry.file.key, ['file_path', 'pos']);
      expect(rows).toHaveLength(Number(d.entry.file.recordCount));
      for (const row of rows) {
        const path = row.file_path as string;
        expect(d.appliesTo, `${fileName(d.entry.file.path)} names ${fileName(path)}`).toContain(path);
        deletedPerFile.set(path, (deletedPerFile.get(path) ?? 0) + 1);
      }
    }
    // Assess: the README's 100-row file with 77 deleted rows, and the last delete aimed at it alone
    const hundred = files.dataFiles.filter((f) => f.entry.file.recordCount === 100n);
    expect(hundred).toHaveLength(1);
    const big = hundred[0]?.entry.file.path ?? '';
    expect(deletedPerFile.get(big)).toBe(77);
    expect(files.deleteFiles[2]?.appliesTo).toEqual([big]);
    // Assess: 192 rows minus the 82 deleted positions = 110 live rows (README)
    const total = files.dataFiles.reduce((a, f) => a + Number(f.entry.file.recordCount), 0);
    expect(total - [...deletedPerFile.values()].reduce((a, b) => a + b, 0)).toBe(110);
  });

  it('spark_v2_position_deletes: a data file added after a position delete (sequence 9) is not touched by the deletes before it', async () => {
    // Prepare: the data files the snapshot before the last one held (its summary records 10)
    const store = fixtureStore();
    const table = await loadTable(store, 'spark_v2_position_deletes');
    const before = table.metadata.snapshots.at(-2);
    if (before === undefined) throw new Error('no snapshot');
    // Act
    const previous = await readSnapshotFiles(store, table, { snapshotId: before.snapshotId });
    const current = await readSnapshotFiles(store, table);
    // Assess
    const old = new Set(previous.dataFiles.map((f) => f.entry.file.path));
    expect(old.size).toBe(10);
    const added = current.dataFiles.filter((f) => !old.has(f.entry.file.path));
    expect(added).toHaveLength(1);
    expect(added[0]?.entry.dataSequenceNumber).toBe(9n);
    expect(added[0]?.deletes).toEqual([]);
  });

  it('java_v2_equality_deletes_identity_partitioned: each equality delete applies to the older data files of its partition whose rows it matches, and not to e', async () => {
    // Prepare
    const store = fixtureStore();
    const table = await loadTable(store, 'java_v2_equality_deletes_identity_partitioned');
    // Act
    const files = await readSnapshotFiles(store, table);
    // Assess: expected targets from the files' contents — data files holding a row with the delete's name
    const nameOfDataFile = new Map<string, string>();
    for (const f of files.dataFiles) {
      const rows = await readRows(store, f.entry.file.key);
      expect(rows).toHaveLength(1);
      nameOfDataFile.set(f.entry.file.path, rows[0]?.name as string);
    }
    expect([...nameOfDataFile.values()].sort()).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
    for (const d of files.deleteFiles) {
      const rows = await readRows(store, d.entry.file.key);
      expect(rows).toHaveLength(1);
      const deletedName = rows[0]?.name as string;
      const expected = [...nameOfDataFile].filter(([, n]) => n === deletedName).map(([path]) => path);
      expect(d.kind).toBe('equality');
      expect(d.appliesTo, `delete of name=${deletedName}`).toEqual(expected);
    }
    // Assess: the README's equality ids per delete file, and the live rows a, d, e
    expect(files.deleteFiles.map((d) => [d.entry.dataSequenceNumber, d.entry.file.equalityIds])).toEqual([
      [2n, [2]],
      [3n, [2, 1]],
      [5n, [2]],
    ]);
    const live = files.dataFiles
      .filter((f) => f.deletes.length === 0)
      .map((f) => nameOfDataFile.get(f.entry.file.path));
    expect(live.sort()).toEqual(['a', 'd', 'e']);
  });

  it('spark_v3_deletion_vectors: each DV is located in the Puffin file exactly where its footer says, and applies to its referenced data file only', async () => {
    // Prepare
    const store = fixtureStore();
    const table = await loadTable(store, 'spark_v3_deletion_vectors');
    // Act
    const files = await readSnapshotFiles(store, table);
    // Assess: every DV entry matches a `deletion-vector-v1` blob of its Puffin file (offset, length, target)
    expect(files.deleteFiles).toHaveLength(2);
    for (const d of files.deleteFiles) {
      const f = d.entry.file;
      expect(d.kind).toBe('deletion-vector');
      expect(f.format).toBe('PUFFIN');
      const blobs = puffinBlobs(await store.get(f.key));
      const blob = blobs.find((b) => BigInt(b.offset) === f.contentOffset);
      expect(blob).toEqual({
        type: 'deletion-vector-v1',
        offset: Number(f.contentOffset),
        length: Number(f.contentSizeInBytes),
        referenced: f.referencedDataFile,
      });
      expect(d.appliesTo).toEqual([f.referencedDataFile]);
    }
    // Assess: the README's layout (offsets 4 and 46, 42 bytes each, targets 00003-… and 00001-…)
    expect(
      files.deleteFiles.map((d) => [
        d.entry.file.contentOffset,
        d.entry.file.contentSizeInBytes,
        fileName(d.entry.file.referencedDataFile ?? '').slice(0, 5),
      ]),
    ).toEqual([
      [4n, 42n, '00003'],
      [46n, 42n, '00001'],
    ]);
    expect(files.dataFiles.filter((f) => f.deletes.length === 0)).toHaveLength(3);
  });

  it('spark_v3_deletion_vectors: data files inherit first row ids 0..4 from their manifest, ending at the table next-row-id', async () => {
    // Prepare
    const store = fixtureStore();
    const table = await loadTable(store, 'spark_v3_deletion_vectors');
    const raw = JSON.parse(metadataText('spark_v3_deletion_vectors', fileName(table.metadataKey))) as {
      'next-row-id': number;
    };
    // Act
    const files = await readSnapshotFiles(store, table);
    // Assess: consecutive ids, one per row, in manifest order, up to next-row-id
    const ids = files.dataFiles.map((f) => [f.entry.file.firstRowId, f.entry.file.recordCount]);
    expect(ids.map(([id]) => id).sort()).toEqual([0n, 1n, 2n, 3n, 4n]);
    expect(table.metadata.nextRowId).toBe(BigInt(raw['next-row-id']));
    expect(table.metadata.nextRowId).toBe(5n);
  });

  it('spark_v3_row_lineage_rewrite: the rewritten file keeps data sequence number 3 under commit 4 and inherits the replace snapshot first-row-id', async () => {
    // Prepare
    const store = fixtureStore();
    const table = await loadTable(store, 'spark_v3_row_lineage_rewrite');
    const raw = JSON.parse(metadataText('spark_v3_row_lineage_rewrite', fileName(table.metadataKey))) as {
      'next-row-id': number;
      snapshots: { 'first-row-id': number; 'added-rows': number; 'sequence-number': number }[];
    };
    const replace = raw.snapshots.at(-1);
    // Act
    const files = await readSnapshotFiles(store, table);
    // Assess: the writer's row-lineage fields, on the snapshots and on the one live file
    expect(table.metadata.snapshots.map((s) => [s.firstRowId, s.addedRows])).toEqual(
      raw.snapshots.map((s) => [BigInt(s['first-row-id']), BigInt(s['added-rows'])]),
    );
    expect(table.metadata.nextRowId).toBe(6n);
    expect(files.snapshot?.operation).toBe('replace');
    expect(files.dataFiles).toHaveLength(1);
    const only = files.dataFiles[0]?.entry;
    expect(only?.dataSequenceNumber).toBe(3n);
    expect(only?.fileSequenceNumber).toBe(BigInt(replace?.['sequence-number'] ?? -1));
    expect(only?.file.firstRowId).toBe(BigInt(replace?.['first-row-id'] ?? -1));
    expect(only?.file.recordCount).toBe(3n);
    // Assess: the file itself carries the original row ids 0..2 (_row_id), which a rewrite must keep
    const rows = await readRows(store, only?.file.key ?? '', ['_row_id']);
    expect(rows.map((r) => r._row_id).sort()).toEqual(['0', '1', '2']);
  });
});
