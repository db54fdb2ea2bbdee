// `lake-compactor compact` on a partition of files that differ only in their footer's key-value stamps (Databricks'
// per-file write timestamp): Hive-style and Delta, the eight files compact to one output carrying the first file's
// entries, every row kept (read back by DuckDB from the objects), and a second run plans nothing and changes no
// byte. Files Spark reads in another calendar (LEGACY rebase) still compact apart, and converge too.
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parquetMetadata } from 'hyparquet';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { run } from '../../functions/cli/index.js';
import { readDeltaSnapshot } from '../../functions/core/formats/delta/log.js';
import { appendDeltaEvents, createDeltaEventsTable } from '../../functions/tools/sample-delta.js';
import { generateEventsBatch, mulberry32 } from '../../functions/tools/sample-lake.js';
import { captureIo } from '../support/cli-io.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';
import { folderContentSnapshot } from '../support/folder-snapshot.js';

const DAY = '2024-03-01';
const PARTITION = `date=${DAY}`;
const NOW = Date.UTC(2024, 2, 2);
const ROW_METADATA =
  '{"type":"struct","fields":[{"name":"user_id","type":"long","nullable":true,"metadata":{}}]}';

/** What Databricks writes into every file's footer: Spark's version and row schema, and its own write time. */
function databricks(i: number): Record<string, string> {
  return {
    'org.apache.spark.version': '3.5.0',
    'org.apache.spark.sql.parquet.row.metadata': ROW_METADATA,
    'com.databricks.spark.writeTimestamp': String(1_709_251_200_000 + i * 60_000),
  };
}

/** The same, from a writer in Spark's LEGACY datetime rebase mode: its dates read rebased from the Julian calendar. */
function legacy(i: number): Record<string, string> {
  return { ...databricks(i), 'org.apache.spark.legacyDateTime': '', 'org.apache.spark.timeZone': 'UTC' };
}

let db: DuckDb;
let dir: string;

beforeAll(async () => {
  db = await openDuckDb();
});

afterAll(() => {
  db.close();
});

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'lc-kv-converge-'));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Every row of the files at `paths`, every value as text, canonically ordered (DuckDB). */
async function rowsOf(paths: readonly string[]): Promise<string[]> {
  const list = paths.map(sqlString).join(', ');
  const rows = await db.rows(
    `SELECT COLUMNS(*)::VARCHAR FROM read_parquet([${list}], hive_partitioning = false) ORDER BY ALL`,
  );
  return rows.map((r) => JSON.stringify(r));
}

/** The footer key-value metadata of the file at `path`, without the Arrow schema a writer writes for itself. */
async function kvOf(path: string): Promise<Record<string, string>> {
  const bytes = await readFile(path);
  const meta = parquetMetadata(
    bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer,
  );
  return Object.fromEntries(
    (meta.key_value_metadata ?? [])
      .filter((e) => e.key !== 'ARROW:schema')
      .map((e) => [e.key, e.value ?? '']),
  );
}

/** The Parquet files of a Hive partition folder (the listing compact sees), as paths. */
async function partitionFiles(table: string): Promise<string[]> {
  const names = (await readdir(join(table, PARTITION))).filter((n) => n.endsWith('.parquet')).sort();
  return names.map((n) => join(table, PARTITION, n));
}

describe('compact on files that differ only in footer key-value stamps', () => {
  it('Hive: eight files compact to one with the first file’s entries, every row kept, and a second run plans nothing', async () => {
    // Prepare
    const table = join(dir, 'events');
    await mkdir(join(table, PARTITION), { recursive: true });
    for (let i = 0; i < 8; i += 1) {
      const body = generateEventsBatch(mulberry32(i + 1), {
        rows: 40 + i,
        day: DAY,
        keyValueMetadata: databricks(i),
      });
      await writeFile(join(table, PARTITION, `part-0000${i}.parquet`), body);
    }
    const inputs = await partitionFiles(table);
    const before = await rowsOf(inputs);

    // Act
    const first = captureIo();
    const firstCode = await run(['compact', table], first);
    const outputs = await partitionFiles(table);
    const bytes = await folderContentSnapshot(table);
    const second = captureIo();
    const secondCode = await run(['compact', table], second);

    // Assess: one output with the first input's entries, the same rows
    expect(firstCode, first.stderr.join('\n')).toBe(0);
    expect(first.stdout.join('\n')).toMatch(/8 files → 1/);
    expect(outputs).toHaveLength(1);
    expect(await rowsOf(outputs)).toEqual(before);
    expect(await kvOf(outputs[0] as string)).toEqual(databricks(0));
    // The second run: nothing to do, not a byte changed
    expect(secondCode, second.stderr.join('\n')).toBe(0);
    expect(second.stdout.join('\n')).toMatch(new RegExp(`${PARTITION}: nothing to do`));
    expect(await folderContentSnapshot(table)).toEqual(bytes);
  });

  it('Hive: files Spark reads in another calendar compact apart, each output with its own calendar, and converge', async () => {
    // Prepare: five modern files, then five written in Spark's LEGACY rebase mode
    const table = join(dir, 'events');
    await mkdir(join(table, PARTITION), { recursive: true });
    for (let i = 0; i < 10; i += 1) {
      const keyValueMetadata = i < 5 ? databricks(i) : legacy(i);
      const body = generateEventsBatch(mulberry32(i + 1), { rows: 40 + i, day: DAY, keyValueMetadata });
      await writeFile(join(table, PARTITION, `part-${String(i).padStart(5, '0')}.parquet`), body);
    }
    const before = await rowsOf(await partitionFiles(table));

    // Act
    const firstCode = await run(['compact', table], captureIo());
    const outputs = await partitionFiles(table);
    const bytes = await folderContentSnapshot(table);
    const second = captureIo();
    const secondCode = await run(['compact', table], second);

    // Assess: two outputs, one per calendar, the same rows; then nothing to do
    expect(firstCode).toBe(0);
    expect(outputs).toHaveLength(2);
    const calendars = await Promise.all(
      outputs.map(async (o) => 'org.apache.spark.legacyDateTime' in (await kvOf(o))),
    );
    expect(calendars.sort()).toEqual([false, true]);
    expect(await rowsOf(outputs)).toEqual(before);
    expect(secondCode).toBe(0);
    expect(second.stdout.join('\n')).toMatch(new RegExp(`${PARTITION}: nothing to do`));
    expect(await folderContentSnapshot(table)).toEqual(bytes);
  });

  it('Delta: eight appended files compact to one OPTIMIZE commit with the first input’s entries, and a second run commits nothing', async () => {
    // Prepare
    const store = new LocalObjectStore(dir);
    await createDeltaEventsTable(store, '', { now: NOW });
    for (let i = 0; i < 8; i += 1)
      await appendDeltaEvents(store, '', {
        day: DAY,
        rows: 40 + i,
        seed: i + 1,
        now: NOW,
        keyValueMetadata: databricks(i),
      });
    const live = async () => {
      const snapshot = await readDeltaSnapshot(store, '');
      return { version: snapshot.version, paths: snapshot.files.map((f) => join(dir, f.key ?? f.path)) };
    };
    const before = await live();
    const beforeRows = await rowsOf(before.paths);
    // The plan takes a partition's inputs in key order (random UUID names here): its first is the output's source
    const firstByKey = [...before.paths].sort()[0] as string;
    const firstKv = await kvOf(firstByKey);

    // Act
    const first = captureIo();
    const firstCode = await run(['compact', dir, '--format', 'delta'], first);
    const after = await live();
    const bytes = (await folderContentSnapshot(dir)).filter((l) => !l.startsWith('_lake-compactor'));
    const second = captureIo();
    const secondCode = await run(['compact', dir, '--format', 'delta'], second);

    // Assess: one commit, one live file with the first input's entries, the same rows
    expect(firstCode, first.stderr.join('\n')).toBe(0);
    expect(before.paths).toHaveLength(8);
    expect(after.version).toBe(before.version + 1);
    expect(after.paths).toHaveLength(1);
    expect(await rowsOf(after.paths)).toEqual(beforeRows);
    expect(firstKv).not.toEqual(await kvOf([...before.paths].sort()[1] as string));
    expect(await kvOf(after.paths[0] as string)).toEqual(firstKv);
    // The second run: nothing to do, no version, not a byte of the table changed
    expect(secondCode, second.stderr.join('\n')).toBe(0);
    expect(second.stdout.join('\n')).toMatch(new RegExp(`${PARTITION}: nothing to do`));
    expect((await live()).version).toBe(after.version);
    expect((await folderContentSnapshot(dir)).filter((l) => !l.startsWith('_lake-compactor'))).toEqual(bytes);
  });
});
