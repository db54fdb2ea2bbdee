// `lake-compactor compact --readers … --statistics …` on a local folder: declared modern readers turn
// DELTA_BINARY_PACKED on, --no-delta-encoding and a legacy reader keep it off, an unknown reader exits 2 naming
// the accepted ones before anything changes, and --statistics auto drops min/max only on the unordered
// high-cardinality string column, every row kept.
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { run } from '../../functions/cli/index.js';
import { READERS } from '../../functions/core/readers.js';
import { captureIo } from '../support/cli-io.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';
import { folderSnapshot } from '../support/folder-snapshot.js';

const PARTITION = 'date=2024-01-01';
let db: DuckDb;
let root: string;
let table: string;

beforeAll(async () => {
  db = await openDuckDb();
});
afterAll(() => {
  db.close();
});

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'lc-readers-'));
  table = join(root, 'requests');
  await mkdir(join(table, PARTITION), { recursive: true });
  for (let part = 0; part < 6; part++) {
    await db.writeParquet(
      `SELECT i::BIGINT AS id,
              (TIMESTAMP '2024-01-01' + to_seconds(i))::TIMESTAMP_MS AS at,
              md5((i * 7919)::VARCHAR) AS request_id,
              (['get','put','list'])[(i % 3) + 1] AS verb
         FROM range(${part * 2_000}, ${(part + 1) * 2_000}) t(i)`,
      join(table, PARTITION, `part-${part}.parquet`),
    );
  }
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

async function output(): Promise<string> {
  const files = (await readdir(join(table, PARTITION))).filter((n) => n.endsWith('.parquet'));
  expect(files).toHaveLength(1);
  return sqlString(join(table, PARTITION, files[0] as string));
}

async function rows(): Promise<string[]> {
  const all = await db.rows(
    `SELECT * FROM read_parquet(${sqlString(join(table, PARTITION, '*.parquet'))}) ORDER BY ALL`,
  );
  return all.map((r) => JSON.stringify(r));
}

async function encodingsOf(column: string): Promise<string> {
  return String(
    await db.scalar(
      `SELECT string_agg(DISTINCT encodings, ',') FROM parquet_metadata(${await output()}) WHERE path_in_schema = '${column}'`,
    ),
  );
}

describe('lake-compactor compact --readers', () => {
  it.each([
    [['--readers', 'spark-3.3,trino,athena-v3,duckdb'], true],
    [['--readers', 'trino,spark-legacy'], false],
    [['--readers', 'duckdb,pyarrow', '--no-delta-encoding'], false],
    [[], false],
  ])('%j writes DELTA_BINARY_PACKED: %s', async (flags, delta) => {
    // Prepare
    const before = await rows();
    const io = captureIo();

    // Act
    const code = await run(['compact', table, ...flags], io);

    // Assess
    expect(code).toBe(0);
    expect(await rows()).toEqual(before);
    expect((await encodingsOf('at')).includes('DELTA_BINARY_PACKED')).toBe(delta);
  });

  it('exits 2 (usage) on an unknown reader, naming the accepted ones, and changes nothing', async () => {
    // Prepare
    const before = await folderSnapshot(root);
    const io = captureIo();

    // Act
    const code = await run(['compact', table, '--readers', 'trino,athena'], io);

    // Assess
    expect(code).toBe(2);
    const text = io.stderr.join('\n');
    expect(text).toContain('--readers: "athena" is not a reader this table can declare');
    for (const reader of READERS) expect(text).toContain(reader);
    expect(await folderSnapshot(root)).toEqual(before);
  });

  it('exits 2 (usage) when --delta-encoding contradicts a declared reader, and changes nothing', async () => {
    // Prepare
    const before = await folderSnapshot(root);
    const io = captureIo();

    // Act
    const code = await run(['compact', table, '--readers', 'impala', '--delta-encoding'], io);

    // Assess
    expect(code).toBe(2);
    expect(io.stderr.join('\n')).toContain('--delta-encoding is given but the declared reader(s) impala');
    expect(await folderSnapshot(root)).toEqual(before);
  });
});

describe('lake-compactor compact --statistics', () => {
  it('auto drops statistics on the unordered high-cardinality strings only, keeping every row', async () => {
    // Prepare
    const before = await rows();
    const io = captureIo();

    // Act
    const code = await run(['compact', table, '--statistics', 'auto'], io);

    // Assess
    expect(code).toBe(0);
    expect(await rows()).toEqual(before);
    const stats = await db.rows(
      `SELECT path_in_schema AS col, bool_and(stats_min_value IS NOT NULL) AS has
         FROM parquet_metadata(${await output()}) GROUP BY 1 ORDER BY 1`,
    );
    expect(stats.map((r) => [r.col, r.has])).toEqual([
      ['at', true],
      ['id', true],
      ['request_id', false],
      ['verb', true],
    ]);
  });
});
