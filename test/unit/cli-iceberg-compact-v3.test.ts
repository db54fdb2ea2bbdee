// `lake-compactor compact --format iceberg` on format-v3 tables: every row keeps its lineage. The oracle here reads
// each live data file with DuckDB and computes each row's `_row_id` and `_last_updated_sequence_number` by the
// spec's rule (the value stored in the file, else the file's first_row_id + the row's position, and the file's data
// sequence number), drops the rows deletion vectors delete, and compares the multiset of (row, row id, sequence
// number) before and after the `replace` — so a rewrite that let a row inherit a new id would be caught. The
// metadata's row-id accounting (snapshot first-row-id / added-rows, table next-row-id) is checked against the
// manifests of the new snapshot. After a schema change the oracle reads each file onto the current schema itself
// (every column as text, a column the file lacks as its initial-default), so the projection is checked alike.
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Field, Int32, Int64, makeData, RecordBatch, Schema, Struct, Table, tableToIPC } from 'apache-arrow';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { pw } from '../../functions/adapters/parquet-wasm/wasm.js';
import { run } from '../../functions/cli/index.js';
import { type LoadedTable, loadTable, PathCatalog } from '../../functions/core/formats/iceberg/catalog.js';
import { commitAppend } from '../../functions/core/formats/iceberg/commit.js';
import { readSnapshotFiles, type SnapshotFiles } from '../../functions/core/formats/iceberg/live-files.js';
import { schemaById } from '../../functions/core/formats/iceberg/metadata.js';
import { metricsConfig, readParquetMetrics } from '../../functions/core/formats/iceberg/metrics.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';
import { captureIo } from './../support/cli-io.js';
import { type DuckDb, openDuckDb, sqlString } from './../support/duckdb.js';
import { ICEBERG_FIXTURES } from './../support/fixtures.js';

const NOW = Date.UTC(2026, 2, 3);
const clock = { now: () => NOW };
const ROW_ID = { id: 2147483540, name: '_row_id' };
const SEQ = { id: 2147483539, name: '_last_updated_sequence_number' };

let db: DuckDb;
let dir: string;

interface Lineage {
  readonly table: LoadedTable;
  readonly files: SnapshotFiles;
  /** Every live row as JSON `[columns…, _row_id, _last_updated_sequence_number]`, sorted. */
  readonly rows: string[];
}

/**
 * The live rows of the current snapshot with their lineage, computed here by the spec's rule. Deletion vectors are
 * applied only where they delete a whole file (their cardinality is the file's record count: no position needs
 * reading); any other delete file is beyond this oracle and fails the test.
 */
async function lineageRows(
  store: ObjectStore,
  root: string,
  /** For a column a file lacks (by field id): the SQL its rows read as (its initial-default); else the column. */
  missing: Readonly<Record<string, string>> = {},
): Promise<Lineage> {
  const table = await loadTable(store, root);
  const files = await readSnapshotFiles(store, table);
  // The table's current schema (the snapshot records the one it was written under)
  const schema = schemaById(table.metadata) ?? files.schema;
  const rows: string[] = [];
  for (const f of files.dataFiles) {
    const file = f.entry.file;
    if (f.deletes.length > 0) {
      const dvs = files.deleteFiles.filter((d) => d.appliesTo.includes(file.path));
      const whole = dvs.every(
        (d) => d.kind === 'deletion-vector' && d.entry.file.recordCount === file.recordCount,
      );
      if (!whole) throw new Error(`the oracle drops whole-file deletion vectors only (${file.key})`);
      continue;
    }
    const path = sqlString(join(dir, file.key));
    const stored = new Set(
      (await db.rows(`SELECT field_id::VARCHAR AS id FROM parquet_schema(${path})`)).map((r) => String(r.id)),
    );
    const own = (c: { id: number; name: string }) => (stored.has(String(c.id)) ? `"${c.name}"` : 'NULL');
    // Every column as text (a promoted column reads alike at either width); a column the file lacks as `missing` says
    const columns = schema.fields.map(
      (f) =>
        `(${stored.has(String(f.id)) ? `"${f.name}"` : (missing[f.name] ?? 'NULL')})::VARCHAR AS "${f.name}"`,
    );
    if (file.firstRowId === undefined) throw new Error(`${file.key} has no first_row_id`);
    const found = await db.rows(
      `SELECT ${columns.join(', ')},
              COALESCE(${own(ROW_ID)}, ${file.firstRowId}::BIGINT + file_row_number)::VARCHAR AS __row_id,
              COALESCE(${own(SEQ)}, ${f.entry.dataSequenceNumber}::BIGINT)::VARCHAR AS __seq
       FROM read_parquet(${path}, file_row_number = true)`,
    );
    for (const r of found)
      rows.push(JSON.stringify([...schema.fields.map((c) => r[c.name]), r.__row_id, r.__seq]));
  }
  return { table, files, rows: rows.sort() };
}

/** The data files the new snapshot added (not live before). */
function addedFiles(before: Lineage, after: Lineage) {
  const old = new Set(before.files.dataFiles.map((f) => f.entry.file.path));
  return after.files.dataFiles.filter((f) => !old.has(f.entry.file.path));
}

/**
 * The row-id accounting of the snapshot `after` ends at: it starts at the table's next-row-id before it, spends
 * the ADDED and EXISTING rows of every data manifest it wrote (`added-rows`), and the table moves past them.
 */
function expectRowIdsAccounted(before: Lineage, after: Lineage): void {
  const snapshot = after.files.snapshot;
  const ours = after.files.manifests.filter(
    (m) => m.content === 'data' && m.addedSnapshotId === snapshot?.snapshotId,
  );
  const spent = ours.reduce((n, m) => n + (m.addedRowsCount ?? 0n) + (m.existingRowsCount ?? 0n), 0n);
  expect(snapshot?.firstRowId).toBe(before.table.metadata.nextRowId);
  expect(snapshot?.addedRows).toBe(spent);
  expect(after.table.metadata.nextRowId).toBe((before.table.metadata.nextRowId ?? -1n) + spent);
}

/** Output rows without a stored lineage value (must be none: every rewritten row carries its own). */
async function outputRowsWithoutLineage(before: Lineage, after: Lineage): Promise<number> {
  let missing = 0;
  for (const f of addedFiles(before, after)) {
    const path = sqlString(join(dir, f.entry.file.key));
    missing += Number(
      await db.scalar(
        `SELECT count(*) FROM read_parquet(${path}) WHERE "${ROW_ID.name}" IS NULL OR "${SEQ.name}" IS NULL`,
      ),
    );
  }
  return missing;
}

/**
 * A Parquet file shaped like the files Iceberg Java writes for a v3 table (`i` optional INT32 with field id 1, both
 * lineage columns as optional INT64), its lineage columns null: what a writer of new rows leaves to inheritance.
 */
function v3File(values: readonly number[]): Uint8Array {
  const n = values.length;
  const id = (v: number) => new Map([['PARQUET:field_id', String(v)]]);
  const fields = [
    new Field('i', new Int32(), true, id(1)),
    new Field(ROW_ID.name, new Int64(), true, id(ROW_ID.id)),
    new Field(SEQ.name, new Int64(), true, id(SEQ.id)),
  ];
  const nulls = () =>
    makeData({
      type: new Int64(),
      length: n,
      nullCount: n,
      data: new BigInt64Array(n),
      nullBitmap: new Uint8Array(Math.ceil(n / 8)),
    });
  const children = [
    makeData({ type: new Int32(), length: n, nullCount: 0, data: Int32Array.from(values) }),
    nulls(),
    nulls(),
  ];
  const struct = makeData({ type: new Struct(fields), length: n, nullCount: 0, children });
  const ipc = tableToIPC(new Table([new RecordBatch(new Schema(fields), struct)]), 'stream');
  return pw.writeParquet(pw.Table.fromIPCStream(ipc));
}

/** Appends `values` as one new data file through the path catalog, as an ingest job would. */
async function append(
  store: ObjectStore,
  root: string,
  name: string,
  values: readonly number[],
): Promise<void> {
  const table = await loadTable(store, root);
  const key = `${root}/data/${name}.parquet`;
  await writeFile(join(dir, key), v3File(values));
  const schema = schemaById(table.metadata);
  if (schema === undefined) throw new Error('the table has a schema');
  await commitAppend(
    store,
    new PathCatalog(store),
    {
      tableLocation: root,
      addedFiles: [
        {
          path: table.paths.path(key),
          partition: { specId: 0, values: [] },
          metrics: await readParquetMetrics(store, key, schema, metricsConfig(table.metadata)),
        },
      ],
    },
    { clock },
  );
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
  dir = await mkdtemp(join(tmpdir(), 'lc-iceberg-v3-'));
});

describe('lake-compactor compact --format iceberg, format-v3 tables', () => {
  it('spark_v3_deletion_vectors: the rows the DVs delete leave with their ids, every other row keeps its _row_id and sequence number', async () => {
    // Prepare
    const name = 'spark_v3_deletion_vectors';
    await cp(join(ICEBERG_FIXTURES, name), join(dir, name), { recursive: true });
    const store = new LocalObjectStore(dir);
    const before = await lineageRows(store, name);
    const io = captureIo();

    // Act
    const code = await run(['compact', join(dir, name), '--format', 'iceberg'], io);

    // Assess: the same rows with the same lineage, now stored in the one output; no DV is left dangling
    expect(code, io.stderr.join('\n')).toBe(0);
    const after = await lineageRows(store, name);
    expect(before.rows).toHaveLength(3);
    expect(after.rows).toEqual(before.rows);
    expect(after.files.dataFiles).toHaveLength(1);
    expect(after.files.deleteFiles).toEqual([]);
    expect(await outputRowsWithoutLineage(before, after)).toBe(0);
    expect(after.files.snapshot?.operation).toBe('replace');
    expectRowIdsAccounted(before, after);
  });

  it('spark_v3_row_lineage_rewrite: ids Spark wrote into its rewritten file and ids inherited by appended files are both kept', async () => {
    // Prepare: four appends after Spark's rewrite (five files, the default min-input-files), their rows inheriting
    // ids from 6 on and their snapshots' sequence numbers
    const name = 'spark_v3_row_lineage_rewrite';
    await cp(join(ICEBERG_FIXTURES, name), join(dir, name), { recursive: true });
    const store = new LocalObjectStore(dir);
    for (const [n, values] of [[10, 11, 12], [20, 21], [30], [40, 41, 42, 43]].entries())
      await append(store, name, `appended-${n}`, values);
    const before = await lineageRows(store, name);
    const io = captureIo();

    // Act
    const code = await run(['compact', join(dir, name), '--format', 'iceberg'], io);

    // Assess: one replace took all five files; each row kept the id and sequence number it had
    expect(code, io.stderr.join('\n')).toBe(0);
    const after = await lineageRows(store, name);
    expect(before.files.dataFiles).toHaveLength(5);
    expect(after.files.snapshot?.operation).toBe('replace');
    expect(addedFiles(before, after).length).toBeGreaterThan(0);
    for (const f of before.files.dataFiles)
      expect(after.files.dataFiles.map((a) => a.entry.file.path)).not.toContain(f.entry.file.path);
    expect(after.rows).toEqual(before.rows);
    const ids = after.rows.map((r) => JSON.parse(r).at(-2));
    expect(new Set(ids).size).toBe(ids.length);
    expect(await outputRowsWithoutLineage(before, after)).toBe(0);
    expectRowIdsAccounted(before, after);
  });

  it('spark_v3_deletion_vectors after an ALTER TABLE (i promoted to long, d added with an initial-default): the live rows projected onto the current schema, d its default, each keeping its lineage', async () => {
    // Prepare: a new current schema — i int → long, d int added with initial-default 7 (write-default 8: not read)
    const name = 'spark_v3_deletion_vectors';
    await cp(join(ICEBERG_FIXTURES, name), join(dir, name), { recursive: true });
    const store = new LocalObjectStore(dir);
    const key = `${name}/metadata/v3.metadata.json`;
    const metadata = JSON.parse(new TextDecoder().decode(await store.get(key)));
    metadata.schemas.push({
      type: 'struct',
      'schema-id': 1,
      fields: [
        { id: 1, name: 'i', required: false, type: 'long' },
        { id: 2, name: 'd', required: false, type: 'int', 'initial-default': 7, 'write-default': 8 },
      ],
    });
    metadata['current-schema-id'] = 1;
    metadata['last-column-id'] = 2;
    await store.put(key, new TextEncoder().encode(JSON.stringify(metadata)));
    const before = await lineageRows(store, name, { d: '7' });
    const io = captureIo();

    // Act
    const code = await run(['compact', join(dir, name), '--format', 'iceberg'], io);

    // Assess: the same rows and lineage, d = 7 stored in the one output, i written as a long
    expect(code, io.stderr.join('\n')).toBe(0);
    const after = await lineageRows(store, name);
    expect(before.rows).toHaveLength(3);
    expect(after.rows).toEqual(before.rows);
    expect(after.rows.every((r) => JSON.parse(r)[1] === '7')).toBe(true);
    expect(after.files.dataFiles).toHaveLength(1);
    expect(after.files.deleteFiles).toEqual([]);
    expect(await outputRowsWithoutLineage(before, after)).toBe(0);
    const output = sqlString(join(dir, after.files.dataFiles[0]?.entry.file.key ?? ''));
    const types = await db.rows(`DESCRIBE SELECT * FROM read_parquet(${output})`);
    expect(types.map((t) => [t.column_name, t.column_type])).toEqual([
      ['i', 'BIGINT'],
      ['d', 'INTEGER'],
      [ROW_ID.name, 'BIGINT'],
      [SEQ.name, 'BIGINT'],
    ]);
    expectRowIdsAccounted(before, after);
  });
});
