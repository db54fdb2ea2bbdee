// `lake-compactor vacuum --format hudi`: cleaning is the table's own cleaner's unless the table's cleaner policy is
// given (--hudi-clean-policy), and then replaced file groups go through a clean instant, live rows unchanged.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { run } from '../../functions/cli/index.js';
import { captureIo } from '../support/cli-io.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';
import { folderContentSnapshot } from '../support/folder-snapshot.js';
import { appendHudiInsert, createHudiTable } from '../support/hudi-appender.js';
import { liveFiles } from '../support/hudi-replay.js';

const CLUSTERED_AT = Date.UTC(2024, 3, 1);
const LATER = Date.UTC(2024, 5, 1);
const TABLE_FLAGS = ['--format', 'hudi', '--hudi-lock', 'storage', '--hudi-index-type', 'BLOOM'];
const CLEAN_FLAGS = ['--hudi-clean-policy', 'KEEP_LATEST_COMMITS', '--hudi-clean-retained', '1'];

let db: DuckDb;
let dir: string;
let replaced: string[];

beforeAll(async () => {
  db = await openDuckDb();
});

afterAll(async () => {
  db.close();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

async function cli(args: readonly string[], now: number) {
  const io = captureIo({ now });
  const code = await run([...args], io);
  return { code, out: io.stdout.join('\n'), err: io.stderr.join('\n') };
}

async function rows(files: readonly string[]): Promise<string[]> {
  const list = files.map((f) => sqlString(join(dir, f))).join(', ');
  return (await db.rows(`SELECT * FROM read_parquet([${list}]) ORDER BY ALL`)).map((r) => JSON.stringify(r));
}

async function parquetFiles(): Promise<string[]> {
  return (await readdir(join(dir, '10')))
    .filter((n) => n.endsWith('.parquet'))
    .map((n) => `10/${n}`)
    .sort();
}

describe('lake-compactor vacuum --format hudi', () => {
  beforeEach(async () => {
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
    dir = await mkdtemp(join(tmpdir(), 'lc-hudi-vacuum-'));
    const table = await createHudiTable(new LocalObjectStore(dir), '', 8);
    for (let b = 0; b < 6; b += 1) await appendHudiInsert(table, '10', 5 + b);
    replaced = await liveFiles(dir, 8);
    const compact = await cli(['compact', dir, ...TABLE_FLAGS], CLUSTERED_AT);
    expect(compact.code, compact.err).toBe(0);
    // A writer commits after the clustering, so the replacecommit precedes the earliest commit to retain.
    table.last = '20240401000100000';
    await appendHudiInsert(table, '10', 3);
  });

  it("leaves cleaning to the table's own cleaner when no cleaner policy is given", async () => {
    // Prepare
    const before = await parquetFiles();

    // Act
    const result = await cli(['vacuum', dir, ...TABLE_FLAGS, '--yes'], LATER);

    // Assess
    expect(result.code, result.err).toBe(0);
    expect(result.out).toContain("cleaning is left to the table's own cleaner");
    expect(await parquetFiles()).toEqual(before);
  });

  it('a dry run with a cleaner policy lists the replaced files and changes no byte', async () => {
    // Prepare
    const before = await folderContentSnapshot(dir);

    // Act
    const result = await cli(['vacuum', dir, ...TABLE_FLAGS, ...CLEAN_FLAGS, '--dry-run'], LATER);

    // Assess
    expect(result.code, result.err).toBe(0);
    for (const f of replaced) expect(result.out).toContain(f);
    expect(result.out).toContain('hudi-clean');
    expect(await folderContentSnapshot(dir)).toEqual(before);
  });

  it('with a cleaner policy deletes the replaced file groups through a clean instant, live rows unchanged', async () => {
    // Prepare
    const live = await liveFiles(dir, 8);
    const before = await rows(live);

    // Act
    const result = await cli(['vacuum', dir, ...TABLE_FLAGS, ...CLEAN_FLAGS, '--yes'], LATER);

    // Assess
    expect(result.code, result.err).toBe(0);
    expect(await parquetFiles()).toEqual(live);
    expect(await rows(live)).toEqual(before);
    const timeline = await readdir(join(dir, '.hoodie/timeline'));
    expect(timeline.filter((n) => /^\d{17}_\d{17}\.clean$/.test(n))).toHaveLength(1);
    expect(timeline.filter((n) => n.endsWith('.clean.requested'))).toHaveLength(1);
  });
});
