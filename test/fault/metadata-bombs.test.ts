// Each crafted input of the security review's appendix, made here (nothing vendored), run through the CLI — the
// same core the Lambdas run — in a child process under a given --memory-mb: each fails cleanly, by name, saying
// what to do, and the child's peak RSS (getrusage, every thread) stays below that memory. No time is asserted.
// Bounded inputs that stop nothing but one file (an empty 10^10-part checkpoint name, a footer claiming 2^53 − 1
// rows, a 20,000-level schema, a 20,000-parenthesis where) are run in process.
import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../../functions/cli/index.js';
import { captureIo } from '../support/cli-io.js';
import { avroCountBomb, avroDeflateBomb, gzipBomb, withClaimedRows } from '../support/crafted-metadata.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';
import { DELTA_FIXTURES, ICEBERG_FIXTURES } from '../support/fixtures.js';
import { bundleForNode, repoPath } from '../support/node-bundle.js';
import type { PeakRssReport } from '../support/peak-rss-child.js';

const MiB = 1024 * 1024;
const ICEBERG_TABLE = 'spark_v1_unpartitioned_small_files';
/** The current snapshot's manifest list of that table (its metadata names it). */
const MANIFEST_LIST = 'snap-93996984692289973-1-9b8c72ab-43b9-42fb-a5e9-1dcfa1801a21.avro';

let scratch: string;
let db: DuckDb;
/**
 * The child (test/support/peak-rss-child.ts) bundled with its dependencies and the engine's worker beside it, as
 * the Lambdas ship the same code: a plain `node` start instead of tsx transpiling the CLI's modules in each of
 * the five children (test/support/node-bundle.ts). The memory it reports is the CLI's, without the transpiler's.
 */
let child: string;
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'lc-bombs-'));
  // The CLI reads its version from the package.json two folders above its module (functions/cli/ in the sources).
  await mkdir(join(scratch, 'bundle', 'cli'), { recursive: true });
  await symlink(repoPath('package.json'), join(scratch, 'package.json'));
  ({ child } = (await bundleForNode(join(scratch, 'bundle', 'cli'), {
    child: 'test/support/peak-rss-child.ts',
    worker: 'functions/adapters/parquet-wasm/worker.ts',
  })) as { child: string });
  db = await openDuckDb();
});
afterAll(async () => {
  db.close();
  await rm(scratch, { recursive: true, force: true });
});

interface ChildRun {
  readonly exitCode: number;
  readonly maxRssBytes: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the CLI on `argv` in a child process and reports its exit code, output and peak RSS. */
async function cliInChild(argv: readonly string[]): Promise<ChildRun> {
  const report = join(scratch, `report-${Math.random().toString(36).slice(2)}.json`);
  const { stdout, stderr } = await new Promise<{ stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [child, report, ...argv],
      { maxBuffer: 16 * MiB, env: { ...process.env, LAKE_COMPACTOR_DEBUG: '' } },
      (_err, out, err) => resolve({ stdout: out, stderr: err }),
    );
  });
  const result = JSON.parse(await readFile(report, 'utf8').catch(() => '{}')) as Partial<PeakRssReport>;
  if (result.exitCode === undefined)
    throw new Error(`the child died without a report (the crash this test guards against):\n${stderr}`);
  console.log(
    `${argv.join(' ')}: exit ${result.exitCode}, peak RSS ${Math.round((result.maxRssBytes ?? 0) / MiB)} MiB`,
  );
  return { exitCode: result.exitCode, maxRssBytes: result.maxRssBytes ?? 0, stdout, stderr };
}

/** A copy of a fixture table in the scratch folder. */
async function copyOf(fixtures: string, table: string, name: string): Promise<string> {
  const dir = join(scratch, name);
  await cp(join(fixtures, table), dir, { recursive: true });
  return dir;
}

describe('bombs in table metadata fail cleanly within the memory the CLI is given', () => {
  it('the manifest list claiming 10^12 records is refused by name under 512 MB (review: V8 fatal error at 4.5 GiB)', async () => {
    // Prepare
    const table = await copyOf(ICEBERG_FIXTURES, ICEBERG_TABLE, 'avro-count');
    await writeFile(join(table, 'metadata', MANIFEST_LIST), avroCountBomb());

    // Act
    const result = await cliInChild(['plan', table, '--format', 'iceberg', '--memory-mb', '512']);

    // Assess
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(
      new RegExp(
        `^error: Iceberg table .*avro-count/ has unreadable metadata: manifest list metadata/${MANIFEST_LIST} is not a readable Avro file \\(the record schema encodes in zero bytes.*\\)\\. Nothing was changed; check that`,
      ),
    );
    expect(result.stderr).not.toMatch(/unexpected/);
    expect(result.maxRssBytes).toBeLessThan(512 * MiB);
  });

  it('the 1 MB deflate bomb (1 GiB inflated) is a MetadataTooLargeError under 512 MB (review: 3.2 GiB)', async () => {
    // Prepare
    const table = await copyOf(ICEBERG_FIXTURES, ICEBERG_TABLE, 'avro-deflate');
    await writeFile(join(table, 'metadata', MANIFEST_LIST), avroDeflateBomb(1024));

    // Act
    const result = await cliInChild(['plan', table, '--format', 'iceberg', '--memory-mb', '512']);

    // Assess
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(
      new RegExp(
        `^error: Iceberg table .*avro-deflate/: manifest list metadata/${MANIFEST_LIST} is too large for this process's memory: its deflate blocks inflate to more than 32\\.0 MiB.*Nothing was changed; run it with a larger --memory-mb \\(now 512\\).*, or have the table's owner rewrite its manifests`,
      ),
    );
    expect(result.maxRssBytes).toBeLessThan(512 * MiB);
  });

  it('the 1 MB gzip bomb (1 GiB of spaces) as the current metadata file is refused by name under 512 MB (review: 2.2 GiB)', async () => {
    // Prepare: v3 is the newest version and the hint names it
    const table = await copyOf(ICEBERG_FIXTURES, ICEBERG_TABLE, 'gzip');
    await writeFile(join(table, 'metadata', 'v3.gz.metadata.json'), gzipBomb(1024));
    await writeFile(join(table, 'metadata', 'version-hint.text'), '3');

    // Act
    const result = await cliInChild(['plan', table, '--format', 'iceberg', '--memory-mb', '512']);

    // Assess
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(
      /^error: Iceberg metadata file metadata\/v3\.gz\.metadata\.json is too large for this process's memory: its 1\.\d MiB of gzip inflate to more than 32\.0 MiB\. Nothing was changed; run it with a larger --memory-mb \(now 512\)/,
    );
    expect(result.maxRssBytes).toBeLessThan(512 * MiB);
  });

  it("the 1,000,000-add Delta checkpoint is refused from its footer under the profiler's 512 MB (review: heap OOM at 4.2 GiB)", async () => {
    // Prepare: the appendix's recipe, with DuckDB
    const table = await copyOf(DELTA_FIXTURES, 'simple_table_with_checkpoint', 'checkpoint');
    const checkpoint = join(table, '_delta_log', '00000000000000000010.checkpoint.parquet');
    await db.exec(`CREATE OR REPLACE TABLE c AS SELECT * FROM read_parquet(${sqlString(checkpoint)})`);
    await db.exec(
      `INSERT INTO c (add) SELECT {'path': 'p' || i || '.parquet', 'partitionValues': MAP {}::MAP(VARCHAR, VARCHAR), 'size': 100::BIGINT, 'modificationTime': 1600000000000::BIGINT, 'dataChange': true, 'tags': NULL::MAP(VARCHAR, VARCHAR), 'stats': '{"numRecords":1}'} FROM range(1000000) t(i)`,
    );
    await db.exec(
      `COPY c TO ${sqlString(checkpoint)} (FORMAT parquet, COMPRESSION snappy, ROW_GROUP_SIZE 1000000)`,
    );

    // Act
    const result = await cliInChild(['profile', table, '--format', 'delta', '--memory-mb', '512']);

    // Assess
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(
      /^error: Delta table \(store root\): log file _delta_log\/00000000000000000010\.checkpoint\.parquet is too large for this process's memory: the checkpoint holds 10000\d\d or more actions, more than the 65536 a table state may hold here .*run it with a larger --memory-mb \(now 512\).*, or have the table's owner compact it \(OPTIMIZE\)/,
    );
    expect(result.maxRssBytes).toBeLessThan(512 * MiB);
    // A hang guard only (nothing is timed): DuckDB writes a million actions, then a child reads the footer; on a
    // shared 2-core machine under load that has taken more than 120 s.
  }, 300_000);

  it('the 4 KB dictionary bomb (1.5 GiB decoded) is quarantined by name under 1,024 MB, and the next run compacts the rest (review: 3.1 GiB)', async () => {
    // Prepare: five ordinary files (a group's minimum without the bomb) and the bomb in one Hive partition
    const partition = join(scratch, 'dictionary', 'events', 'date=2024-01-01');
    await mkdir(partition, { recursive: true });
    for (let f = 0; f < 5; f++)
      await db.writeParquet(
        `SELECT (i + ${f * 100})::BIGINT AS id, 'v' || i::VARCHAR AS s FROM range(100) t(i)`,
        join(partition, `part-${f}.parquet`),
        { compression: 'zstd' },
      );
    await db.writeParquet(
      `SELECT i::BIGINT AS id, repeat('x', 1048576) AS s FROM range(1500) t(i)`,
      join(partition, 'bomb.parquet'),
      { compression: 'zstd' },
    );
    const table = join(scratch, 'dictionary', 'events');

    // Act
    const first = await cliInChild(['compact', table, '--memory-mb', '1024']);
    const second = await cliInChild(['compact', table, '--memory-mb', '1024']);

    // Assess
    expect(first.exitCode).toBe(1);
    expect(`${first.stdout}\n${first.stderr}`).toMatch(
      /Unsupported Parquet input date=2024-01-01\/bomb\.parquet: row group 0 could decode to 1501 MiB \(column s the most\), more than the 256 MiB one row group may take in this process's memory; run it with a larger --memory-mb \(now 1024\).*, or rewrite the file with smaller row groups\. The file was left in place and quarantined/,
    );
    expect(first.maxRssBytes).toBeLessThan(1024 * MiB);
    expect(second.exitCode).toBe(0);
    expect(second.maxRssBytes).toBeLessThan(1024 * MiB);
    const files = (await readdir(partition)).filter((n) => n.endsWith('.parquet')).sort();
    expect(files).toContain('bomb.parquet');
    expect(files.filter((n) => /^part-\d\.parquet$/.test(n))).toEqual([]);
    const others = files.filter((n) => n !== 'bomb.parquet').map((n) => join(partition, n));
    expect(
      await db.rows(
        `SELECT count(*)::INTEGER AS n, count(DISTINCT id)::INTEGER AS ids, min(id)::INTEGER AS lo, max(id)::INTEGER AS hi FROM read_parquet([${others.map(sqlString).join(', ')}])`,
      ),
    ).toEqual([{ n: 500, ids: 500, lo: 0, hi: 499 }]);
  }, 300_000);
});

describe('bounded inputs fail only what they are, by name', () => {
  it('an empty file named ….checkpoint.0000000001.9999999999.parquet is ignored: the Delta table profiles as before', async () => {
    // Prepare
    const table = await copyOf(DELTA_FIXTURES, 'simple_table_with_checkpoint', 'parts');
    const before = captureIo();
    await run(['profile', table, '--format', 'delta', '--json'], before);
    await writeFile(
      join(table, '_delta_log', '00000000000000000000.checkpoint.0000000001.9999999999.parquet'),
      '',
    );
    const after = captureIo();

    // Act
    const code = await run(['profile', table, '--format', 'delta', '--json'], after);

    // Assess
    expect(code).toBe(0);
    expect(after.stdout).toEqual(before.stdout);
  });

  it('a footer claiming 2^53 − 1 rows is skipped by name and the other files are compacted, rows exact', async () => {
    // Prepare: five ordinary files and the crafted one
    const partition = join(scratch, 'rows', 'events', 'date=2024-01-01');
    await mkdir(partition, { recursive: true });
    for (let f = 0; f < 5; f++)
      await db.writeParquet(
        `SELECT (i + ${f * 1000})::BIGINT AS id, md5(i::VARCHAR) AS s FROM range(1000) t(i)`,
        join(partition, `part-${f}.parquet`),
      );
    const crafted = join(scratch, 'rows-source.parquet');
    await db.writeParquet('SELECT 7::BIGINT AS id, 7::VARCHAR AS s', crafted);
    await writeFile(join(partition, 'huge.parquet'), withClaimedRows(await readFile(crafted)));
    const expected = await db.rows(
      `SELECT id, s FROM read_parquet(${sqlString(join(partition, 'part-*.parquet'))}) ORDER BY id`,
    );
    const io = captureIo();

    // Act
    const code = await run(['compact', join(scratch, 'rows', 'events')], io);

    // Assess
    expect(code).toBe(0);
    expect(io.stdout.join('\n')).toMatch(
      /date=2024-01-01\/huge\.parquet: footer unreadable: row group 0 claims 9007199254740991 rows, more than its \d+-byte column chunk can hold/,
    );
    const files = (await readdir(partition)).filter((n) => n.endsWith('.parquet'));
    expect(files.filter((n) => /^part-\d\.parquet$/.test(n))).toEqual([]);
    const outputs = files.filter((n) => n !== 'huge.parquet').map((n) => join(partition, n));
    expect(
      await db.rows(`SELECT id, s FROM read_parquet([${outputs.map(sqlString).join(', ')}]) ORDER BY id`),
    ).toEqual(expected);
  });

  it('a schema nested 20,000 levels fails the table by name, not with a stack overflow', async () => {
    // Prepare: v3 adds a column whose type nests 20,000 structs (written as text: JSON.stringify overflows too)
    const table = await copyOf(ICEBERG_FIXTURES, ICEBERG_TABLE, 'deep-schema');
    const v2 = JSON.parse(await readFile(join(table, 'metadata', 'v2.metadata.json'), 'utf8')) as {
      schema: { fields: unknown[] };
    };
    v2.schema.fields.push({ id: 99_999, name: 'deep', required: false, type: 'DEEP' });
    let open = '';
    let close = '';
    for (let i = 0; i < 20_000; i++) {
      open += `{"type":"struct","fields":[{"id":${100_000 + i},"name":"f${i}","required":false,"type":`;
      close += '}]}';
    }
    await writeFile(
      join(table, 'metadata', 'v3.metadata.json'),
      JSON.stringify(v2).replace('"DEEP"', `${open}"long"${close}`),
    );
    await writeFile(join(table, 'metadata', 'version-hint.text'), '3');
    const io = captureIo();

    // Act
    const code = await run(['plan', table, '--format', 'iceberg'], io);

    // Assess
    expect(code).toBe(1);
    expect(io.stderr.join('\n')).toMatch(
      /^error: Iceberg table .*deep-schema\/ uses a schema nested deeper than 256 levels \(schema 0, column deep\.f0\.f1…\), which lake-compactor does not support: nothing of it was read or changed/,
    );
    expect(io.stderr.join('\n')).not.toMatch(/RangeError|unexpected/);
  });

  it('a where of 20,000 nested parentheses is a usage error naming the limit (exit 2), not a stack overflow', async () => {
    // Prepare
    const table = await copyOf(ICEBERG_FIXTURES, ICEBERG_TABLE, 'deep-where');
    const io = captureIo();

    // Act
    const code = await run(
      ['plan', table, '--format', 'iceberg', '--where', `${'('.repeat(20_000)}a = 1${')'.repeat(20_000)}`],
      io,
    );

    // Assess
    expect(code).toBe(2);
    expect(io.stderr.join('\n')).toMatch(
      /^error: The where filter .* is invalid: it nests NOT and parentheses deeper than 100 levels \(at position 101\)\. Nothing was changed/,
    );
    expect(io.stderr.join('\n')).not.toMatch(/RangeError|unexpected/);
  });
});
