// `lake-compactor compact` killed for real (SIGKILL) at random moments of a run on a local folder — after any
// store request, while a staged output is half written, or by wall clock — then run again: every time the
// table ends with exactly its original rows, no staging, no temp file, no half-moved trash, every group settled.
import { spawn } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LEGACY_TEMP_FILE_PREFIX } from '../../functions/adapters/local-object-store.js';
import { type GroupJournalEntry, isSettled } from '../../functions/ports/journal.js';
import { localFolderSink } from '../../functions/tools/generate.js';
import { mulberry32, type Rng, writeSampleLake } from '../../functions/tools/sample-lake.js';
import type { ChildTick, RerunResult } from '../support/cli-kill-child.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';
import { folderSnapshot } from '../support/folder-snapshot.js';
import { bundleForNode } from '../support/node-bundle.js';
import { repeatsPerPoint } from '../support/trials.js';

const DAYS = ['2024-05-01', '2024-05-02'];

/** How a trial ends its child: right after its k-th request (phase = where k falls), or after a delay. */
type Kill = { readonly after: number; readonly phase: string } | { readonly delayMs: number };

interface ChildExit {
  readonly signal: NodeJS.Signals | null;
  readonly code: number | null;
  readonly stdout: string;
}

let scratch: string;
let template: string;
let child: string;
let db: DuckDb;
let original: string[];

/**
 * The child bundled by esbuild with its dependencies (test/support/node-bundle.ts): a plain `node` start of
 * one file, and its engine workers, cost a fraction of tsx's (or of Node loading each package's files),
 * which keeps the real processes (a killed run per trial and the re-runs) within the time budget. The engine's
 * worker lands beside it as `worker.js`, where parallel.ts looks for it. It is the same CLI code.
 */
async function bundleChild(outdir: string): Promise<string> {
  const { child } = await bundleForNode(outdir, {
    child: 'test/support/cli-kill-child.ts',
    worker: 'functions/adapters/parquet-wasm/worker.ts',
  });
  return child as string;
}

/** Runs the child on `folder`; `kill.after` makes it kill itself, `kill.delayMs` has it killed from here. */
function runChild(folder: string, kill?: Kill): Promise<ChildExit> {
  return spawnChild([folder, ...(kill !== undefined && 'after' in kill ? [String(kill.after)] : [])], kill);
}

/** Re-runs compact to the end on each folder, in one fresh process. */
async function rerun(folders: readonly string[]): Promise<RerunResult[]> {
  const exit = await spawnChild(['--rerun', ...folders]);
  return exit.stdout
    .trim()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as RerunResult);
}

function spawnChild(childArgs: readonly string[], kill?: Kill): Promise<ChildExit> {
  const args = [child, ...childArgs];
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (d: Buffer) => {
      const first = stdout === '';
      stdout += d.toString();
      if (first && kill !== undefined && 'delayMs' in kill) {
        setTimeout(() => proc.kill('SIGKILL'), kill.delayMs);
      }
    });
    proc.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    proc.on('error', reject);
    proc.on('exit', (code, signal) => {
      if (code !== 0 && signal === null) reject(new Error(`child exited ${code}: ${stderr}`));
      else resolve({ code, signal, stdout });
    });
  });
}

/** Every row of the table's partitions, canonically ordered (a multiset comparable with toEqual). */
async function rowsOf(table: string): Promise<string[]> {
  const rows = await db.rows(
    `SELECT * FROM read_parquet(${sqlString(join(table, 'date=*', '*.parquet'))}) ORDER BY ALL`,
  );
  return rows.map((r) => JSON.stringify(r));
}

/** Files under the table (relative), from its snapshot. */
async function filesOf(table: string): Promise<string[]> {
  return (await folderSnapshot(table)).map((line) => line.split(' ')[0] as string);
}

/** `n` distinct picks from `items` with `rng` (all of them when there are fewer). */
function pick<T>(rng: Rng, items: readonly T[], n: number): T[] {
  const pool = [...items];
  const out: T[] = [];
  while (out.length < n && pool.length > 0) out.push(pool.splice(Math.floor(rng() * pool.length), 1)[0] as T);
  return out;
}

/** Runs `tasks` with at most `lanes` in flight (two children at a time on two cores). */
async function inLanes<T>(lanes: number, tasks: readonly (() => Promise<T>)[]): Promise<T[]> {
  const results: T[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (next < tasks.length) {
        const index = next++;
        results[index] = await (tasks[index] as () => Promise<T>)();
      }
    }),
  );
  return results;
}

/** One query at a time on the shared DuckDB connection. */
let exclusive: Promise<unknown> = Promise.resolve();
function alone<T>(section: () => Promise<T>): Promise<T> {
  const result = exclusive.then(section);
  exclusive = result.catch(() => {});
  return result;
}

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'cli-kill-'));
  template = join(scratch, 'template');
  await writeSampleLake(localFolderSink(template), {
    days: DAYS.length,
    batches: 5,
    seed: 7,
    startDate: DAYS[0],
    minRows: 40,
    maxRows: 80,
  });
  await mkdir(join(scratch, 'bundle'));
  child = await bundleChild(join(scratch, 'bundle'));
  db = await openDuckDb();
  original = await rowsOf(join(template, 'events'));
});

afterAll(async () => {
  db?.close();
  await rm(scratch, { recursive: true, force: true });
});

describe('lake-compactor compact killed with SIGKILL, then run again', () => {
  it('ends with exactly the original rows and nothing left over, wherever the kill lands', async () => {
    // Prepare: measure one undisturbed run — its requests, the journal state each happened in, its length
    const measured = join(scratch, 'measure');
    await cp(template, measured, { recursive: true });
    const clean = await runChild(join(measured, 'events'));
    const { ms, ticks } = JSON.parse(clean.stdout.trim().split('\n').at(-1) ?? '{}') as {
      ms: number;
      ticks: ChildTick[];
    };
    const phaseOf = (t: ChildTick) => (t.method === 'chunk' ? 'chunk' : t.phase);
    const byPhase = new Map<string, number[]>();
    for (const [i, t] of ticks.entries())
      byPhase.set(phaseOf(t), [...(byPhase.get(phaseOf(t)) ?? []), i + 1]);
    // Every phase of the commit protocol gets a kill, and one kill lands by wall clock (inside a request, too):
    // 9 kills in `npm test`, each distinct crash point once. A soak run (test/support/trials.ts) adds the repeats —
    // each phase at other request numbers (the short publishing window more than its share), uniform draws over
    // the whole run and more by wall clock: 2, 3, 1 and 2 per factor, 84 kills at LAKE_COMPACTOR_SOAK=4.
    const rng = mulberry32(20241201);
    const share: Record<string, number> = {
      plan: repeatsPerPoint(2),
      planned: repeatsPerPoint(2),
      chunk: repeatsPerPoint(2),
      staged: repeatsPerPoint(2),
      verified: repeatsPerPoint(2),
      publishing: repeatsPerPoint(3),
      published: repeatsPerPoint(3),
      retired: repeatsPerPoint(2),
    };
    const uniform = repeatsPerPoint(1, 0);
    const byClock = repeatsPerPoint(2);
    const kills: Kill[] = [
      ...Object.entries(share).flatMap(([phase, n]) =>
        pick(rng, byPhase.get(phase) ?? [], n).map((after) => ({ after, phase })),
      ),
      ...Array.from({ length: uniform }, () => {
        const after = 1 + Math.floor(rng() * ticks.length);
        return { after, phase: phaseOf(ticks[after - 1] as ChildTick) };
      }),
      ...Array.from({ length: byClock }, () => ({ delayMs: Math.floor(rng() * ms) })),
    ];

    // Act: kill a run in each trial's copy of the lake (two at a time), then re-run compact on every copy
    // in fresh processes, as an operator would
    const killed = await inLanes(
      2,
      kills.map((kill, index) => async () => {
        const table = join(scratch, `trial-${index}`, 'events');
        await cp(template, join(scratch, `trial-${index}`), { recursive: true });
        return { index, kill, table, exit: await runChild(table, kill) };
      }),
    );
    const tables = killed.map((k) => k.table);
    const half = Math.ceil(tables.length / 2);
    const reruns = (await Promise.all([rerun(tables.slice(0, half)), rerun(tables.slice(half))])).flat();
    const trials = await inLanes(
      2,
      killed.map(({ index, kill, table, exit }) => async () => {
        const files = await filesOf(table);
        const journal = await Promise.all(
          files
            .filter((f) => f.startsWith('_lake-compactor/journal/runs/'))
            .map(async (f) => JSON.parse(await readFile(join(table, f), 'utf8')) as GroupJournalEntry),
        );
        const again = reruns.find((r) => r.folder === table);
        return { index, kill, exit, again, files, journal, rows: await alone(() => rowsOf(table)) };
      }),
    );

    // Assess
    expect(clean.code).toBe(0);
    for (const phase of Object.keys(share)) expect(byPhase.get(phase)?.length, phase).toBeGreaterThan(0);
    for (const t of trials) {
      const label = `trial ${t.index} (${'after' in t.kill ? `killed after request ${t.kill.after} of ${ticks.length}, ${t.kill.phase}` : `killed ${t.kill.delayMs} ms in`})`;
      if ('after' in t.kill) expect(t.exit.signal, `${label}: the child was not killed`).toBe('SIGKILL');
      expect(t.again, `${label}: the re-run failed`).toEqual({ folder: expect.any(String) });
      expect(t.rows, `${label}: rows lost or duplicated`).toEqual(original);
      for (const day of DAYS) {
        expect(
          t.files.filter((f) => f.startsWith(`date=${day}/`) && f.endsWith('.parquet')),
          label,
        ).toHaveLength(1);
      }
      expect(
        t.files.filter((f) => f.startsWith('_lake-compactor/staging/')),
        `${label}: staging left`,
      ).toEqual([]);
      expect(
        t.files.filter((f) => f.startsWith('_lake-compactor/tmp/')),
        `${label}: temp files left`,
      ).toEqual([]);
      expect(
        t.files.filter((f) => f.split('/').at(-1)?.startsWith(LEGACY_TEMP_FILE_PREFIX)),
        `${label}: old-style temp files`,
      ).toEqual([]);
      expect(
        t.files.filter((f) => f.startsWith('_lake-compactor/journal/open/')),
        `${label}: fences left`,
      ).toEqual([]);
      expect(
        t.journal.filter((e) => !isSettled(e)).map((e) => `${e.runId}/${e.groupId} ${e.state}`),
        `${label}: unsettled groups`,
      ).toEqual([]);
      // Trash holds only inputs of groups that finished (an aborted group's copies were removed).
      const retired = new Set(
        t.journal
          .filter((e) => e.state === 'done')
          .flatMap((e) => e.inputs.map((i) => `${e.trashPrefix}${i.key}`)),
      );
      expect(
        t.files.filter((f) => f.startsWith('_lake-compactor/trash/') && !retired.has(f)),
        `${label}: trash of an unfinished group`,
      ).toEqual([]);
    }
    const landed = new Map<string, number>();
    for (const t of trials) {
      const where =
        'after' in t.kill ? t.kill.phase : t.exit.signal === 'SIGKILL' ? 'wall clock' : 'finished';
      landed.set(where, (landed.get(where) ?? 0) + 1);
    }
    console.info(
      `cli-kill: ${trials.length} trials over a run of ${ticks.length} requests (${ms} ms): ${[...landed]
        .map(([where, n]) => `${where} ${n}`)
        .join(', ')}`,
    );
  }, 900_000); // 9 killed child processes (more in a soak run) and their re-runs on a shared 2-core machine; nothing is timed
});
