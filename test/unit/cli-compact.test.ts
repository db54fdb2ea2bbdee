// `lake-compactor compact` on a generated lake and on Spark's part files in a temp folder: partitions end
// as one file with the same row multiset (read back by DuckDB), --dry-run and failed groups change nothing,
// zero-row files are left alone, and failures exit non-zero; after a run dies at a chosen request, the next
// compact (or `settle`) rolls its groups forward or back from the journal in the folder and ends exact; a
// corrupt input is quarantined so its neighbours compact on the next run.
import { randomUUID } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { parquetMetadata } from 'hyparquet';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { TEMP_FILE_HOST } from '../../functions/adapters/local-object-store.js';
import { CLI_RUN_ID, runCompact } from '../../functions/cli/compact.js';
import { run } from '../../functions/cli/index.js';
import { CompactionFailedError, CorruptInputError } from '../../functions/core/errors.js';
import { executionName } from '../../functions/core/profiler/decisions.js';
import type { ParquetEngine } from '../../functions/ports/parquet-engine.js';
import { defaultParquetEngine } from '../../functions/shared/parquet-engine.js';
import { localFolderSink } from '../../functions/tools/generate.js';
import { writeSampleLake } from '../../functions/tools/sample-lake.js';
import { captureIo } from '../support/cli-io.js';
import { dyingStore, type StoreCall } from '../support/crash-store.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';
import { DELTA_FIXTURES } from '../support/fixtures.js';
import { folderSnapshot } from '../support/folder-snapshot.js';

const DAYS = ['2024-01-01', '2024-01-02', '2024-01-03'];

function capture() {
  return captureIo();
}

const snapshot = folderSnapshot;

/** Parquet files directly in a partition folder (not the work area under `_lake-compactor/`). */
async function dataFiles(table: string, day: string): Promise<string[]> {
  return (await readdir(join(table, `date=${day}`))).filter((n) => n.endsWith('.parquet')).sort();
}

let db: DuckDb;
let root: string;
let table: string;

/** Every row of the table's partitions, canonically ordered (a multiset comparable with toEqual). */
async function rowMultiset(): Promise<string[]> {
  const rows = await db.rows(
    `SELECT * FROM read_parquet(${sqlString(join(table, 'date=*', '*.parquet'))}) ORDER BY ALL`,
  );
  return rows.map((r) => JSON.stringify(r));
}

beforeAll(async () => {
  db = await openDuckDb();
});

afterAll(() => {
  db.close();
});

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'lc-compact-'));
  await writeSampleLake(localFolderSink(root), { days: 3, batches: 6, seed: 11, startDate: DAYS[0] });
  table = join(root, 'events');
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('lake-compactor compact', () => {
  it('compacts every partition into one verified file with the same row multiset, and a re-run plans nothing', async () => {
    // Prepare
    const rowsBefore = await rowMultiset();
    const io = capture();

    // Act
    const code = await run(['compact', table], io);
    const again = capture();
    const secondCode = await run(['compact', table], again);

    // Assess
    expect(code).toBe(0);
    for (const day of DAYS) expect(await dataFiles(table, day)).toHaveLength(1);
    expect(await rowMultiset()).toEqual(rowsBefore);
    const text = io.stdout.join('\n');
    for (const day of DAYS)
      expect(text).toMatch(new RegExp(`date=${day} g0001: 6 files → 1, \\d+ rows, verified, committed`));
    expect(text).toContain(
      `3 partitions: 18 → 3 files, ${rowsBefore.length} rows rewritten and verified, 0 failed`,
    );
    expect(secondCode).toBe(0);
    expect(again.stdout.join('\n')).toMatch(/date=2024-01-01: nothing to do/);
    for (const day of DAYS) expect(await dataFiles(table, day)).toHaveLength(1);
  });

  it('keeps the retired inputs of a sorted run in the trash under _lake-compactor/ instead of deleting them', async () => {
    // Prepare
    const io = capture();

    // Act
    const code = await run(
      ['compact', table, '--partition', 'date=2024-01-02', '--strategy', 'sort', '--columns', 'user_id'],
      io,
    );

    // Assess
    expect(code).toBe(0);
    const trashed = (await snapshot(join(table, '_lake-compactor'))).filter((l) => l.startsWith('trash/'));
    expect(trashed).toHaveLength(6);
  });

  it('retires the inputs of a bin-pack run without a trash copy (an undo would rebuild them from the outputs)', async () => {
    // Prepare
    const io = capture();

    // Act
    const code = await run(['compact', table, '--partition', 'date=2024-01-02'], io);

    // Assess
    expect(code).toBe(0);
    expect(await dataFiles(table, '2024-01-02')).toHaveLength(1);
    const trashed = (await snapshot(join(table, '_lake-compactor'))).filter((l) => l.startsWith('trash/'));
    expect(trashed).toEqual([]);
  });

  it('names its runs so vacuum can tell them from state-machine runs, even of a table called "cli"', async () => {
    // Prepare
    const io = capture();
    const stateMachineRun = executionName({ table: 'cli', partition: 'date=2024-01-02' }, 3);

    // Act
    await run(
      ['compact', table, '--partition', 'date=2024-01-02', '--strategy', 'sort', '--columns', 'user_id'],
      io,
    );

    // Assess: the trash folder is named by the run id
    const runIds = new Set(
      (await snapshot(join(table, '_lake-compactor')))
        .filter((l) => l.startsWith('trash/'))
        .map((l) => l.split('/')[1]),
    );
    expect(runIds.size).toBe(1);
    for (const runId of runIds) expect(runId).toMatch(CLI_RUN_ID);
    expect(stateMachineRun).toMatch(/^cli-/);
    expect(stateMachineRun).not.toMatch(CLI_RUN_ID);
  });

  it('compacts only the partition named by --partition', async () => {
    // Prepare
    const io = capture();

    // Act
    const code = await run(['compact', table, '--partition', 'date=2024-01-02', '--codec', 'snappy'], io);

    // Assess
    expect(code).toBe(0);
    expect(await dataFiles(table, '2024-01-01')).toHaveLength(6);
    expect(await dataFiles(table, '2024-01-02')).toHaveLength(1);
    expect(await dataFiles(table, '2024-01-03')).toHaveLength(6);
  });

  it('writes timestamps DELTA_BINARY_PACKED with --delta-encoding, keeping every row', async () => {
    // Prepare
    const rowsBefore = await rowMultiset();
    const io = capture();

    // Act
    const code = await run(['compact', table, '--partition', 'date=2024-01-02', '--delta-encoding'], io);

    // Assess
    expect(code).toBe(0);
    expect(await rowMultiset()).toEqual(rowsBefore);
    const [output] = await dataFiles(table, '2024-01-02');
    const encodings = await db.scalar(
      `SELECT string_agg(DISTINCT encodings, ',') FROM parquet_metadata(${sqlString(join(table, 'date=2024-01-02', output ?? ''))}) WHERE path_in_schema = 'event_timestamp'`,
    );
    expect(String(encodings)).toContain('DELTA_BINARY_PACKED');
  });

  it('changes nothing with --dry-run and says what it would rewrite', async () => {
    // Prepare
    const before = await snapshot(root);
    const io = capture();

    // Act
    const code = await run(['compact', table, '--dry-run'], io);

    // Assess
    expect(code).toBe(0);
    expect(await snapshot(root)).toEqual(before);
    const text = io.stdout.join('\n');
    expect(text).toMatch(/date=2024-01-03: would rewrite 6 files \(.+\) into 1 in 1 group/);
    expect(text).toContain('nothing was changed');
  });

  it('exits 1 naming an unknown partition, and changes nothing', async () => {
    // Prepare
    const before = await snapshot(root);
    const io = capture();

    // Act
    const code = await run(['compact', table, '--partition', 'date=1999-01-01'], io);

    // Assess
    expect(code).toBe(1);
    expect(io.stderr.join('\n')).toContain(
      'known partitions: date=2024-01-01, date=2024-01-02, date=2024-01-03',
    );
    expect(await snapshot(root)).toEqual(before);
  });

  it('fails with CompactionFailedError when a group fails, after rolling it back and compacting the others', async () => {
    // Prepare
    const rowsBefore = await rowMultiset();
    const io = capture();
    // The engine fails on the second partition's group, as on an unreadable input.
    const engine: ParquetEngine = {
      ...defaultParquetEngine,
      rewriteGroup: async (rio, group, options) => {
        if (group.files.some((f) => f.key.includes('date=2024-01-02/'))) {
          throw new CorruptInputError(group.files[0]?.key ?? '?', 'injected fault');
        }
        return defaultParquetEngine.rewriteGroup(rio, group, options);
      },
    };

    // Act
    const outcome = runCompact(table, {}, io, { engine });

    // Assess
    await expect(outcome).rejects.toThrow(CompactionFailedError);
    await expect(outcome).rejects.toThrow(/1 of 3 partitions failed \(date=2024-01-02: CorruptInputError\)/);
    expect(await dataFiles(table, '2024-01-01')).toHaveLength(1);
    expect(await dataFiles(table, '2024-01-02')).toHaveLength(6);
    expect(await dataFiles(table, '2024-01-03')).toHaveLength(1);
    expect(await rowMultiset()).toEqual(rowsBefore);
    expect(io.stdout.join('\n')).toMatch(/date=2024-01-02 g0001: FAILED CorruptInputError: .*\(aborted\)/);
    const staged = (await snapshot(join(table, '_lake-compactor'))).filter((l) => l.startsWith('staging/'));
    expect(staged).toEqual([]);
  });
});

/** The retire step of a partition's group: the batched conditional delete of its inputs (journal: published). */
function retiring(day: string): (call: StoreCall) => boolean {
  return (call) =>
    call.method === 'deleteMany' &&
    (call.refs ?? []).some((r) => r.ifMatch !== undefined && r.key.startsWith(`date=${day}/`));
}

/** Runs compact over a store that dies at the first request `dies` picks; the run must fail. */
async function compactUntil(dies: (call: StoreCall) => boolean): Promise<void> {
  const outcome = await runCompact(table, {}, capture(), { wrapStore: (s) => dyingStore(s, dies) }).then(
    () => 'finished',
    (err: unknown) => err,
  );
  expect(String(outcome)).toMatch(/injected: the process died/);
}

/** Files under the table's `_lake-compactor/<sub>` (relative to it). */
async function workFiles(sub: string): Promise<string[]> {
  return (await snapshot(join(table, '_lake-compactor')))
    .map((line) => line.split(' ')[0] as string)
    .filter((key) => key.startsWith(sub));
}

describe('lake-compactor compact and settle after a crash', () => {
  it('journals every group in the folder itself and leaves none open', async () => {
    // Prepare
    const io = capture();

    // Act
    const code = await run(['compact', table], io);

    // Assess
    expect(code).toBe(0);
    const entries = await workFiles('journal/runs/');
    expect(entries).toHaveLength(3);
    for (const entry of entries) {
      const stored = JSON.parse(await readFile(join(table, '_lake-compactor', entry), 'utf8'));
      expect(stored).toMatchObject({ state: 'done', table: 'events' });
      expect(stored.runId).toMatch(CLI_RUN_ID);
    }
    expect(await workFiles('journal/open/')).toEqual([]);
  });

  it('settle rolls a group that died published forward, and says so; a second settle finds nothing', async () => {
    // Prepare: the run dies as it retires the second partition's inputs (outputs in, inputs still there)
    const rowsBefore = await rowMultiset();
    await compactUntil(retiring('2024-01-02'));
    const rowsAfterCrash = await rowMultiset();
    const io = capture();
    const again = capture();

    // Act
    const code = await run(['settle', table], io);
    const secondCode = await run(['settle', table], again);

    // Assess
    expect(rowsAfterCrash.length).toBeGreaterThan(rowsBefore.length); // a listing reader saw rows twice
    expect(code).toBe(0);
    expect(io.stdout.join('\n')).toMatch(
      /date=2024-01-02 g0001 of run cli-\S+: rolled forward \(published → done\)/,
    );
    expect(io.stdout.join('\n')).toContain('1 group(s) settled, 0 could not be, in 1 partition(s)');
    expect(await rowMultiset()).toEqual(rowsBefore);
    expect(await dataFiles(table, '2024-01-01')).toHaveLength(1);
    expect(await dataFiles(table, '2024-01-02')).toHaveLength(1);
    expect(await dataFiles(table, '2024-01-03')).toHaveLength(6);
    expect(await workFiles('staging/')).toEqual([]);
    expect(await workFiles('journal/open/')).toEqual([]);
    expect(secondCode).toBe(0);
    expect(again.stdout.join('\n')).toContain('nothing to settle: no group is open');
  });

  it('a re-run rolls back a group that died while its outputs were staged, then compacts every partition exactly', async () => {
    // Prepare: the run dies while the first partition's output is being streamed to staging
    const rowsBefore = await rowMultiset();
    await compactUntil((call) => call.method === 'chunk');
    const io = capture();

    // Act
    const code = await run(['compact', table], io);

    // Assess
    expect(code).toBe(0);
    expect(io.stdout.join('\n')).toMatch(
      /date=2024-01-01 g0001 of run cli-\S+: rolled back \(planned → aborted\)/,
    );
    expect(await rowMultiset()).toEqual(rowsBefore);
    for (const day of DAYS) expect(await dataFiles(table, day)).toHaveLength(1);
    expect(await workFiles('staging/')).toEqual([]);
    expect(await workFiles('tmp/')).toEqual([]);
    expect(await workFiles('journal/open/')).toEqual([]);
  });

  it('settles an open group of a partition that the listing no longer shows', async () => {
    // Prepare: the run dies after staging the second partition; then that partition's files are dropped
    await compactUntil(
      (call) => call.method === 'put' && call.key.endsWith('/_fingerprint.json') && /-p1-/.test(call.key),
    );
    await rm(join(table, 'date=2024-01-02'), { recursive: true });
    expect(await workFiles('staging/')).not.toEqual([]);
    const io = capture();

    // Act
    const code = await run(['compact', table], io);

    // Assess
    expect(code).toBe(0);
    expect(io.stdout.join('\n')).toMatch(/date=2024-01-02 g0001 of run cli-\S+: rolled back/);
    expect(await workFiles('staging/')).toEqual([]);
    expect(await workFiles('journal/open/')).toEqual([]);
  });

  it('removes temp files that dead processes left before it plans', async () => {
    // Prepare: a write of a process that no longer exists (pid above Linux's 2^22 maximum)
    const temp = join(table, '_lake-compactor', 'tmp');
    await mkdir(temp, { recursive: true });
    const orphan = `${TEMP_FILE_HOST}.4194399.${randomUUID()}`;
    await writeFile(join(temp, orphan), 'half a parquet file');
    const io = capture();

    // Act
    const code = await run(['compact', table, '--partition', 'date=2024-01-01'], io);

    // Assess
    expect(code).toBe(0);
    expect(io.stdout.join('\n')).toMatch(/removed 1 temp file\(s\) of interrupted writes/);
    expect(await readdir(temp)).toEqual([]);
  });

  it('settle and compact exit 1 naming a group that cannot be settled, and compact plans nothing', async () => {
    // Prepare: the run dies as it publishes (outputs not yet copied in), then its staged outputs vanish
    await compactUntil((call) => call.method === 'copy' && call.key.startsWith('date=2024-01-01/part-cli-'));
    await rm(join(table, '_lake-compactor', 'staging'), { recursive: true });
    const before = await snapshot(table);
    const settle = capture();
    const compact = capture();

    // Act
    const settleCode = await run(['settle', table], settle);
    const compactCode = await run(['compact', table], compact);

    // Assess
    expect(settleCode).toBe(1);
    expect(settle.stdout.join('\n')).toMatch(
      /date=2024-01-01 g0001 of run cli-\S+: could not settle \(publishing\): ObjectNotFoundError/,
    );
    expect(settle.stderr.join('\n')).toMatch(
      /1 group\(s\) could not be settled.*run lake-compactor settle again/,
    );
    expect(compactCode).toBe(1);
    expect(compact.stderr.join('\n')).toMatch(/could not be settled \(listed above\); nothing was planned/);
    expect(await dataFiles(table, '2024-01-02')).toHaveLength(6);
    expect((await snapshot(table)).filter((l) => !l.startsWith('_lake-compactor/'))).toEqual(
      before.filter((l) => !l.startsWith('_lake-compactor/')),
    );
  });

  it('a dry run says which partitions have open groups and changes nothing', async () => {
    // Prepare
    await compactUntil(retiring('2024-01-01'));
    const before = await snapshot(root);
    const io = capture();

    // Act
    const code = await run(['compact', table, '--dry-run'], io);

    // Assess
    expect(code).toBe(0);
    expect(io.stdout.join('\n')).toMatch(
      /date=2024-01-01: 1 group\(s\) of an interrupted run are open; a real run settles them before planning/,
    );
    expect(await snapshot(root)).toEqual(before);
  });
});

describe('lake-compactor compact with a corrupt input', () => {
  /** Overwrites the file's first column chunk with garbage; its footer (which planning reads) stays intact. */
  async function corruptFirstPage(file: string): Promise<void> {
    const bytes = await readFile(file);
    const meta = parquetMetadata(
      bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer,
    );
    const chunk = meta.row_groups[0]?.columns[0]?.meta_data;
    const start = Number(chunk?.dictionary_page_offset ?? chunk?.data_page_offset);
    bytes.fill(0xff, start, start + Number(chunk?.total_compressed_size));
    await writeFile(file, bytes);
  }

  const rowsOf = async (files: readonly string[]) =>
    (await db.rows(`SELECT * FROM read_parquet([${files.map(sqlString).join(', ')}]) ORDER BY ALL`)).map(
      (r) => JSON.stringify(r),
    );

  it('quarantines it: the first run fails its group, the next compacts its neighbours and leaves it in place', async () => {
    // Prepare: the second file of one partition gets a corrupt page
    const day = '2024-01-02';
    const dir = join(table, `date=${day}`);
    const names = await dataFiles(table, day);
    const victim = names[1] as string;
    const neighbours = names.filter((n) => n !== victim);
    const neighbourRows = await rowsOf(neighbours.map((n) => join(dir, n)));
    await corruptFirstPage(join(dir, victim));
    const victimBytes = await readFile(join(dir, victim));
    const first = capture();
    const second = capture();
    const listed = capture();

    // Act
    const firstCode = await run(['compact', table], first);
    const afterFirst = await dataFiles(table, day);
    const secondCode = await run(['compact', table], second);
    const listCode = await run(['quarantine', table], listed);

    // Assess: run 1 fails that group and quarantines only the victim
    expect(firstCode).toBe(1);
    expect(first.stderr.join('\n')).toMatch(
      /1 of 3 partitions failed \(date=2024-01-02: CorruptInputError\)/,
    );
    expect(first.stdout.join('\n')).toMatch(
      new RegExp(
        `date=${day} g0001: FAILED CorruptInputError: Corrupt Parquet input date=${day}/${victim}: .*quarantined`,
      ),
    );
    expect(afterFirst).toEqual(names);
    // Run 2 compacts the five neighbours into one file with exactly their rows; the victim is untouched
    expect(secondCode).toBe(0);
    const after = await dataFiles(table, day);
    expect(after).toHaveLength(2);
    expect(after).toContain(victim);
    const output = after.find((n) => n !== victim) as string;
    expect(await rowsOf([join(dir, output)])).toEqual(neighbourRows);
    expect(Buffer.compare(await readFile(join(dir, victim)), victimBytes)).toBe(0);
    expect(second.stdout.join('\n')).toMatch(new RegExp(`date=${day} g0001: 5 files → 1`));
    // ...and lists it as quarantined
    expect(listCode).toBe(0);
    expect(listed.stdout.join('\n')).toMatch(
      new RegExp(`date=${day} +date=${day}/${victim} .*CorruptInputError`),
    );
    expect(listed.stdout.join('\n')).toContain('1 file quarantined in table events');
  });

  it('releases the quarantine once the file is replaced, and plans the new file again', async () => {
    // Prepare: a partition whose second file was quarantined, then replaced by a good one
    const day = '2024-01-03';
    const dir = join(table, `date=${day}`);
    const names = await dataFiles(table, day);
    const victim = join(dir, names[1] as string);
    const good = await readFile(victim);
    await corruptFirstPage(victim);
    await run(['compact', table, '--partition', `date=${day}`], capture());
    const held = capture();
    await run(['quarantine', table, '--json'], held);
    await writeFile(victim, good);
    const rowsBefore = await rowsOf(names.map((n) => join(dir, n)));

    // Act
    const code = await run(['compact', table, '--partition', `date=${day}`], capture());
    const after = capture();
    await run(['quarantine', table, '--json'], after);

    // Assess
    expect((JSON.parse(held.stdout.join('\n')) as { quarantined: unknown[] }).quarantined).toHaveLength(1);
    expect(code).toBe(0);
    const [output] = await dataFiles(table, day);
    expect(await dataFiles(table, day)).toHaveLength(1);
    expect(await rowsOf([join(dir, output as string)])).toEqual(rowsBefore);
    expect((JSON.parse(after.stdout.join('\n')) as { quarantined: unknown[] }).quarantined).toEqual([]);
  });
});

describe('lake-compactor compact on files Spark wrote', () => {
  it('compacts the non-empty part files of an unpartitioned table and leaves its zero-row files alone', async () => {
    // Prepare: simple_table's part files (Spark; five of the sixteen hold zero rows), without the Delta log
    const source = join(DELTA_FIXTURES, 'simple_table');
    const spark = join(root, 'spark');
    await mkdir(spark);
    const names = (await readdir(source)).filter((n) => n.endsWith('.parquet'));
    for (const name of names) await copyFile(join(source, name), join(spark, name));
    const counts = await db.rows(
      `SELECT file_name, num_rows FROM parquet_file_metadata(${sqlString(join(spark, '*.parquet'))})`,
    );
    const empty = counts.filter((r) => Number(r.num_rows) === 0).map((r) => String(r.file_name));
    const rows = async () =>
      (await db.rows(`SELECT * FROM read_parquet(${sqlString(join(spark, '*.parquet'))}) ORDER BY ALL`)).map(
        (r) => JSON.stringify(r),
      );
    const before = await rows();
    const io = capture();

    // Act
    const code = await run(['compact', spark], io);

    // Assess
    expect(empty.length).toBeGreaterThan(0);
    expect(code).toBe(0);
    expect(await rows()).toEqual(before);
    const after = (await readdir(spark)).filter((n) => n.endsWith('.parquet')).sort();
    expect(after).toHaveLength(empty.length + 1);
    for (const file of empty) expect(after).toContain(relative(spark, file));
  });
});
