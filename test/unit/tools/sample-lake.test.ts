// Tests of the sample-lake generator and its CLI: determinism, layout, row bounds, and the column
// types and values an independent reader (DuckDB) sees in the files.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetObjectCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../../functions/adapters/open-store.js';
import { InvalidInputError } from '../../../functions/core/errors.js';
import { parseFooter } from '../../../functions/core/parquet/footer.js';
import { runGenerate } from '../../../functions/tools/generate.js';
import {
  generateEventsBatch,
  mulberry32,
  planSampleLake,
  type SampleLakeOptions,
  writeSampleLake,
} from '../../../functions/tools/sample-lake.js';
import { type RunningS3Server, startS3Server } from '../../../infra/local/s3-server.js';
import { type DuckDb, openDuckDb, sqlString } from '../../support/duckdb.js';

const KEY_RE =
  /^events\/date=(\d{4}-\d{2}-\d{2})\/part-(\d{5})-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\.snappy\.parquet$/;

/** Generates a lake into memory: key → bytes, in write order. */
async function lakeInMemory(options: SampleLakeOptions) {
  const files = new Map<string, Uint8Array>();
  const summary = await writeSampleLake(async (key, bytes) => {
    files.set(key, bytes);
  }, options);
  return { files, summary };
}

describe('writeSampleLake', () => {
  it('writes byte-identical files under identical keys for the same seed and options', async () => {
    // Prepare
    const options = { days: 2, batches: 3, minRows: 50, maxRows: 120, seed: 7 };

    // Act
    const first = await lakeInMemory(options);
    const second = await lakeInMemory(options);

    // Assess
    expect([...second.files.keys()]).toEqual([...first.files.keys()]);
    for (const [key, bytes] of first.files)
      expect(Buffer.compare(bytes, second.files.get(key) ?? new Uint8Array())).toBe(0);
    expect(second.summary).toEqual(first.summary);
  });

  it('writes different names and different bytes for a different seed', async () => {
    // Prepare
    const options = { days: 1, batches: 3, minRows: 50, maxRows: 120 };

    // Act
    const a = await lakeInMemory({ ...options, seed: 1 });
    const b = await lakeInMemory({ ...options, seed: 2 });

    // Assess
    const aKeys = [...a.files.keys()];
    const bKeys = [...b.files.keys()];
    expect(aKeys.filter((k) => bKeys.includes(k))).toEqual([]);
    const aBodies = new Set([...a.files.values()].map((x) => Buffer.from(x).toString('base64')));
    expect([...b.files.values()].some((x) => aBodies.has(Buffer.from(x).toString('base64')))).toBe(false);
  });

  it('lays out days × batches files in date partitions with 5-digit part numbers and a per-partition summary', async () => {
    // Prepare
    const options = { days: 3, batches: 4, minRows: 20, maxRows: 40, startDate: '2024-02-28' };

    // Act
    const { files, summary } = await lakeInMemory(options);

    // Assess
    const keys = [...files.keys()];
    expect(keys).toHaveLength(12);
    const parsed = keys.map((k) => KEY_RE.exec(k));
    expect(parsed.every((m) => m !== null)).toBe(true);
    expect([...new Set(parsed.map((m) => m?.[1]))]).toEqual(['2024-02-28', '2024-02-29', '2024-03-01']);
    expect(parsed.slice(0, 4).map((m) => m?.[2])).toEqual(['00000', '00001', '00002', '00003']);
    expect(Object.keys(summary.partitions)).toEqual([
      'events/date=2024-02-28',
      'events/date=2024-02-29',
      'events/date=2024-03-01',
    ]);
    const footers = keys.map((k) =>
      parseFooter(k, files.get(k)?.length ?? 0, files.get(k) ?? new Uint8Array()),
    );
    expect(summary.files).toBe(12);
    expect(summary.rows).toBe(footers.reduce((n, f) => n + f.rows, 0));
    expect(summary.bytes).toBe([...files.values()].reduce((n, b) => n + b.length, 0));
    for (const [partition, p] of Object.entries(summary.partitions)) {
      const own = footers.filter((f) => f.key.startsWith(`${partition}/`));
      expect(p).toEqual({
        files: 4,
        rows: own.reduce((n, f) => n + f.rows, 0),
        bytes: own.reduce((n, f) => n + f.size, 0),
      });
    }
  });

  it('plans the default lake as 30 days × 20 files of 500..2000 rows without generating it', () => {
    // Act
    const plan = [...planSampleLake()];

    // Assess
    expect(plan).toHaveLength(600);
    expect(new Set(plan.map((f) => f.key)).size).toBe(600);
    const days = [...new Set(plan.map((f) => f.day))];
    expect(days).toHaveLength(30);
    expect(days[0]).toBe('2024-01-01');
    expect(days[29]).toBe('2024-01-30');
    for (const file of plan) {
      expect(file.key).toMatch(KEY_RE);
      expect(file.key.startsWith(`events/date=${file.day}/part-000`)).toBe(true);
      expect(file.rows).toBeGreaterThanOrEqual(500);
      expect(file.rows).toBeLessThanOrEqual(2000);
    }
    expect(plan.filter((f) => f.day === '2024-01-15').map((f) => KEY_RE.exec(f.key)?.[2])).toEqual(
      Array.from({ length: 20 }, (_, i) => String(i).padStart(5, '0')),
    );
  });

  it('writes exactly the planned keys and row counts, with rows inside the default 500..2000 bounds', async () => {
    // Prepare
    const options = { days: 1, batches: 4, seed: 3 };
    const plan = [...planSampleLake(options)];

    // Act
    const { files } = await lakeInMemory(options);

    // Assess
    expect([...files.keys()]).toEqual(plan.map((f) => f.key));
    for (const file of plan) {
      const bytes = files.get(file.key) ?? new Uint8Array();
      const rows = parseFooter(file.key, bytes.length, bytes).rows;
      expect(rows).toBe(file.rows);
      expect(rows).toBeGreaterThanOrEqual(500);
      expect(rows).toBeLessThanOrEqual(2000);
    }
  });

  it('spreads benchmark files of exactly M rows round-robin over the days, or into one partition', async () => {
    // Act
    const spread = await lakeInMemory({ files: 7, rows: 30, days: 3 });
    const single = await lakeInMemory({ files: 4, rows: 30, days: 3, partitions: 'single' });

    // Assess
    expect(Object.values(spread.summary.partitions).map((p) => p.files)).toEqual([3, 2, 2]);
    expect(spread.summary.rows).toBe(7 * 30);
    for (const [key, bytes] of spread.files) expect(parseFooter(key, bytes.length, bytes).rows).toBe(30);
    expect(Object.keys(single.summary.partitions)).toEqual(['events/date=2024-01-01']);
    expect([...single.files.keys()].map((k) => KEY_RE.exec(k)?.[2])).toEqual([
      '00000',
      '00001',
      '00002',
      '00003',
    ]);
  });

  it.each<[string, SampleLakeOptions, RegExp]>([
    ['zero days', { days: 0 }, /days/],
    ['minRows above maxRows', { minRows: 10, maxRows: 5 }, /minRows must not exceed maxRows/],
    ['files without rows', { files: 10 }, /both files and rows/],
    ['an impossible date', { startDate: '2024-02-30' }, /Invalid date "2024-02-30"/],
    ['a table name with a slash', { table: 'a/b' }, /table/],
  ])('rejects %s with InvalidInputError before writing anything', async (_what, options, message) => {
    // Prepare
    const written: string[] = [];

    // Act
    const result = writeSampleLake(async (key) => {
      written.push(key);
    }, options);

    // Assess
    await expect(result).rejects.toThrow(InvalidInputError);
    await expect(result).rejects.toThrow(message);
    expect(written).toEqual([]);
  });
});

describe('generateEventsBatch', () => {
  it('writes user_id as INT64 and event_timestamp as TIMESTAMP(MILLIS, UTC) with snappy in one row group', () => {
    // Act
    const bytes = generateEventsBatch(mulberry32(5), { rows: 321, day: '2024-03-10' });

    // Assess
    const footer = parseFooter('batch', bytes.length, bytes);
    expect(footer.rows).toBe(321);
    expect(footer.rowGroups).toHaveLength(1);
    expect(footer.codecs).toEqual(['SNAPPY']);
    expect(footer.columns.map((c) => [c.path.join('.'), c.physicalType, c.logicalType])).toEqual([
      ['user_id', 'INT64', undefined],
      ['event_type', 'BYTE_ARRAY', { type: 'STRING' }],
      ['event_timestamp', 'INT64', { type: 'TIMESTAMP', unit: 'MILLIS', isAdjustedToUTC: true }],
      ['session_id', 'BYTE_ARRAY', { type: 'STRING' }],
      ['revenue_usd', 'DOUBLE', undefined],
    ]);
  });
});

describe('the generated lake read back by DuckDB', () => {
  let dir: string;
  let db: DuckDb;
  let glob: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sample-lake-test-'));
    db = await openDuckDb();
    // Prepare (shared): 3 days × 3 batches with the default 500..2000 rows, through the CLI.
    const lines: string[] = [];
    const code = await runGenerate(['--out', dir, '--days', '3', '--batches', '3', '--seed', '11'], {
      out: (l) => lines.push(l),
      err: (l) => lines.push(l),
    });
    expect([code, lines.length]).toEqual([0, 1]);
    expect(lines[0]).toMatch(/^generated 9 files, \d+ rows, [\d.]+ MB in 3 partitions in [\d.]+ s → /);
    glob = sqlString(join(dir, 'events', '*', '*.parquet'));
  });

  afterAll(async () => {
    db.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('sees BIGINT, VARCHAR, TIMESTAMP WITH TIME ZONE, VARCHAR and DOUBLE columns', async () => {
    // Act
    const types = await db.columnTypes(`SELECT * FROM read_parquet(${glob}, hive_partitioning = false)`);

    // Assess
    expect(types).toEqual([
      { name: 'user_id', type: 'BIGINT' },
      { name: 'event_type', type: 'VARCHAR' },
      { name: 'event_timestamp', type: 'TIMESTAMP WITH TIME ZONE' },
      { name: 'session_id', type: 'VARCHAR' },
      { name: 'revenue_usd', type: 'DOUBLE' },
    ]);
  });

  it('has ≈10% non-zero revenue, only on purchases, and only the four event types', async () => {
    // Act
    const [stats] = await db.rows(`SELECT count(*) AS n,
        avg((revenue_usd <> 0)::INTEGER) AS nonzero,
        count(*) FILTER (WHERE (revenue_usd > 0) <> (event_type = 'purchase')) AS mismatched,
        count(*) FILTER (WHERE revenue_usd < 0 OR revenue_usd IS NULL) AS negative_or_null,
        list_sort(list_distinct(list(event_type))) AS types
      FROM read_parquet(${glob})`);

    // Assess
    expect(Number(stats?.n)).toBeGreaterThan(9 * 500 - 1);
    expect(Number(stats?.nonzero)).toBeGreaterThan(0.07);
    expect(Number(stats?.nonzero)).toBeLessThan(0.13);
    expect(Number(stats?.mismatched)).toBe(0);
    expect(Number(stats?.negative_or_null)).toBe(0);
    expect(stats?.types).toEqual(['click', 'purchase', 'search', 'view']);
  });

  it('has session ids like sess_00012345, positive user ids and timestamps inside the partition day', async () => {
    // Act
    const [stats] = await db.rows(`SELECT
        count(*) FILTER (WHERE NOT regexp_full_match(session_id, 'sess_[0-9]{8}')) AS bad_sessions,
        count(*) FILTER (WHERE user_id IS NULL OR user_id < 1) AS bad_users,
        count(*) FILTER (WHERE epoch_ms(event_timestamp) < epoch_ms(date::TIMESTAMP)
          OR epoch_ms(event_timestamp) >= epoch_ms(date::TIMESTAMP) + 86400000) AS outside_day,
        count(DISTINCT date) AS days
      FROM read_parquet(${glob}, hive_partitioning = true)`);

    // Assess
    expect(stats).toEqual({ bad_sessions: '0', bad_users: '0', outside_day: '0', days: '3' });
  });

  it('holds 500..2000 rows per file, as DuckDB counts them', async () => {
    // Act
    const perFile = await db.rows(
      `SELECT filename, count(*) AS n FROM read_parquet(${glob}, filename = true) GROUP BY filename`,
    );

    // Assess
    expect(perFile).toHaveLength(9);
    for (const row of perFile) {
      expect(Number(row.n)).toBeGreaterThanOrEqual(500);
      expect(Number(row.n)).toBeLessThanOrEqual(2000);
    }
    expect((await readdir(join(dir, 'events'))).sort()).toEqual([
      'date=2024-01-01',
      'date=2024-01-02',
      'date=2024-01-03',
    ]);
  });
});

describe('generate CLI', () => {
  it.each([
    [['--days', '3'], /required option '--out/],
    [['--out', '/tmp/x', '--days', 'two'], /--days <n>' argument 'two' is invalid/],
    [['--out', '/tmp/x', '--files', '5'], /benchmark mode needs both files and rows/],
    [['--out', 'gs://bucket/lake'], /use a local folder, file:\/\/\/path or s3:\/\/bucket\/prefix/],
  ])('exits with code 2 and says what is wrong for %j', async (argv, message) => {
    // Prepare
    const errors: string[] = [];

    // Act
    const code = await runGenerate(argv, { out: () => {}, err: (l) => errors.push(l) });

    // Assess
    expect(code).toBe(2);
    expect(errors.join('\n')).toMatch(message);
  });
});

describe('generate CLI writing to S3', () => {
  let s3: RunningS3Server;
  let client: S3Client;

  beforeAll(async () => {
    s3 = await startS3Server({ buckets: ['lake'] });
    client = s3.client();
  });

  afterAll(async () => {
    await s3.stop();
  });

  it('puts every file under the URI prefix with the same bytes the library generates', async () => {
    // Prepare
    const argv = ['--out', 's3://lake/raw/', '--files', '4', '--rows', '50', '--days', '2', '--seed', '9'];
    const lines: string[] = [];
    const expected = await lakeInMemory({ files: 4, rows: 50, days: 2, seed: 9 });

    // Act
    const code = await runGenerate(argv, {
      out: (l) => lines.push(l),
      err: (l) => lines.push(l),
      openStore: (uri) => openStore(uri, { s3Client: client }),
    });

    // Assess
    expect(code).toBe(0);
    expect(lines[0]).toMatch(/^generated 4 files, 200 rows, .* → s3:\/\/lake\/raw\/events$/);
    const listed = await client.send(new ListObjectsV2Command({ Bucket: 'lake', Prefix: 'raw/' }));
    const keys = (listed.Contents ?? []).map((o) => o.Key ?? '').sort();
    expect(keys).toEqual([...expected.files.keys()].map((k) => `raw/${k}`).sort());
    const [firstKey, firstBytes] = [...expected.files][0] ?? ['', new Uint8Array()];
    const got = await client.send(new GetObjectCommand({ Bucket: 'lake', Key: `raw/${firstKey}` }));
    expect(Buffer.compare((await got.Body?.transformToByteArray()) ?? new Uint8Array(), firstBytes)).toBe(0);
  });
});
