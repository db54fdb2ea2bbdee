// `npm run demo -- --format hudi` in small: the project's Hudi appender commits insert commits into a Copy-on-Write
// table on the embedded local cloud, under the table's storage lock, while the real state machine clusters each
// partition through Hudi's timeline. The demo's checks all hold, and the kept table, replayed independently of the
// format's reader (test/support/hudi-replay.ts), agrees: the live rows after clustering are the live rows just
// before the first replacecommit plus the rows the appender committed after it, in fewer live base files.
// The Merge-on-Read demo is tested in demo-hudi-mor.test.ts.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DemoIo, main } from '../../functions/tools/demo.js';
import { formatHudiDemoReport, type HudiDemoResult } from '../../functions/tools/demo-hudi.js';
import { expectOneCompactionPerPartition } from '../support/demo-runs.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';
import { completedWrites } from '../support/hudi-replay.js';

function capture(): DemoIo & { stdout: () => string; stderr: () => string } {
  let out = '';
  let err = '';
  return {
    out: (text) => {
      out += text;
    },
    err: (text) => {
      err += text;
    },
    tty: false,
    stdout: () => out,
    stderr: () => err,
  };
}

async function demoFolders(): Promise<string[]> {
  return (await readdir(tmpdir())).filter((name) => name.startsWith('lake-compactor-hudi-demo-'));
}

type Write = Awaited<ReturnType<typeof completedWrites>>[number];

/** The live base files after `writes` (completion order): each file group's latest file, less replaced groups. */
function liveAfter(writes: readonly Write[]): string[] {
  const latest = new Map<string, string>();
  const replaced = new Set<string>();
  for (const write of writes) {
    for (const s of write.stats) latest.set(s.fileId, s.path);
    for (const id of write.replaced) replaced.add(id);
  }
  return [...latest].filter(([id]) => !replaced.has(id)).map(([, path]) => path);
}

let db: DuckDb;
let kept: string | undefined;

/** The process's own temp folder (this file runs in a fork of its own): the other Hudi demo file, running beside it, creates demo folders of the same prefix in the shared one. */
let privateTmp: string | undefined;
const sharedTmp = process.env.TMPDIR;

beforeAll(async () => {
  privateTmp = await mkdtemp(join(tmpdir(), 'lc-demo-hudi-tmp-'));
  process.env.TMPDIR = privateTmp;
  db = await openDuckDb();
});

afterAll(async () => {
  db.close();
  if (kept !== undefined) await rm(kept, { recursive: true, force: true });
  if (sharedTmp === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = sharedTmp;
  if (privateTmp !== undefined) await rm(privateTmp, { recursive: true, force: true });
});

/** Every row of `files` (under `root`) but its `_hoodie_file_name`, one JSON text per row. */
async function rowsOf(root: string, files: readonly string[]): Promise<string[]> {
  if (files.length === 0) return [];
  const list = files.map((f) => sqlString(join(root, f))).join(', ');
  const rows = await db.rows(`SELECT * EXCLUDE (_hoodie_file_name) FROM read_parquet([${list}])`);
  return rows.map((r) => JSON.stringify(r));
}

describe('npm run demo -- --format hudi', () => {
  it('clusters every partition of a 3-partition × 5-commit Hudi table beside its appender: live rows = rows before clustering + rows appended since', async () => {
    // Prepare
    const io = capture();
    const foldersBefore = await demoFolders();

    // Act
    const code = await main(['--format', 'hudi', '--days', '3', '--batches', '5', '--keep', '--json'], io);

    // Assess: the demo's own checks
    expect(code, io.stderr()).toBe(0);
    const result = JSON.parse(io.stdout()) as HudiDemoResult;
    kept = result.dataDir;
    expect(result.format).toBe('hudi');
    expect(result.checks.map((c) => [c.name, c.ok])).toEqual([
      ['every partition clustered', true],
      ['every committed group verified', true],
      ['one replacecommit per group, every insert commit completed', true],
      ['the writer committed while clustering ran', true],
      ['live rows = every appended row', true],
      ['fewer live base files', true],
      ['no pending instant or held lock left', true],
      ['no staging left', true],
      ['no dead letters', true],
    ]);
    expect(result.ok).toBe(true);
    expect(result.timeline).toMatchObject({ tableVersion: 8, commits: 15, replacecommits: 3, pending: 0 });
    expect(result.live).toMatchObject({ baseFiles: 3, logFiles: 0, partitions: 3 });
    expect(result.rows).toEqual({ live: result.appended.rows, onlyAppended: 0, onlyLive: 0 });
    // One clustering per partition, five files into one; a second run of a partition finds nothing to do (see the
    // helper); the timeline's three replacecommits above say so too.
    expectOneCompactionPerPartition(result.runs, ['1', '2', '3'], 5);
    expect(io.stderr()).toContain('profiler started');

    // Assess: the kept table, replayed without the format's reader
    if (kept === undefined) throw new Error('--keep gave no data folder');
    const table = join(kept, 'table');
    const writes = await completedWrites(table, 8);
    const firstClustering = writes.findIndex((w) => w.name.endsWith('.replacecommit'));
    expect(firstClustering).toBeGreaterThan(0);
    const before = await rowsOf(table, liveAfter(writes.slice(0, firstClustering)));
    const appendedSince = await rowsOf(
      table,
      writes
        .slice(firstClustering)
        .flatMap((w) => (w.name.endsWith('.commit') ? w.stats.map((s) => s.path) : [])),
    );
    const liveFiles = liveAfter(writes);
    expect(liveFiles).toHaveLength(3);
    expect(liveFiles.length).toBeLessThan(liveAfter(writes.filter((w) => w.name.endsWith('.commit'))).length);
    const after = await rowsOf(table, liveFiles);
    expect(after).toHaveLength(result.appended.rows);
    expect([...after].sort()).toEqual([...before, ...appendedSince].sort());

    // Assess: nothing but the kept folder is left in the temp directory
    await rm(kept, { recursive: true, force: true });
    kept = undefined;
    expect(await demoFolders()).toEqual(foldersBefore);
  }, 240_000);

  it('reports FAILED and marks the check when a live row is missing', () => {
    // Prepare
    const result: HudiDemoResult = {
      ok: false,
      format: 'hudi',
      checks: [
        { name: 'every partition clustered', ok: true, detail: '1/1 partitions, 1 runs' },
        {
          name: 'live rows = every appended row',
          ok: false,
          detail: '9 live rows, 10 appended; 1 only appended',
        },
      ],
      options: { days: 1, batches: 2, tableVersion: 8, policy: {} },
      appended: { commits: 2, baseFiles: 2, rows: 10, commitsDuringRuns: 0 },
      timeline: { tableVersion: 8, commits: 2, replacecommits: 1, pending: 0, latest: '20261206000000005' },
      live: { baseFiles: 1, logFiles: 0, bytes: 2048, partitions: 1 },
      rows: { live: 9, onlyAppended: 1, onlyLive: 0 },
      runs: [],
      stagingLeft: [],
      lockLeft: false,
      deadLetters: 0,
      timingsMs: { startup: 0, stream: 0, settle: 0, checks: 0, total: 0 },
    };

    // Act
    const report = formatHudiDemoReport(result);

    // Assess
    expect(report).toContain('✘ live rows = every appended row: 9 live rows, 10 appended; 1 only appended');
    expect(report).toContain(
      '2 insert commits by the writer, 1 replacecommits (clusterings) by lake-compactor',
    );
    expect(report).toContain('FAILED');
    expect(report).not.toContain('All checks held.');
  });
});
