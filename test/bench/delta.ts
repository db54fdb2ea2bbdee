// Delta OPTIMIZE benchmark (issue #17): a Delta table of N small files written by the sample appender is compacted
// through its log while a second writer (in its own process) appends a micro-batch every second, against the same
// files compacted as a Hive-style Parquet table in the same run. Prints MB/s, the commits won / lost / rebased and the log's cost.
//
// `npm run bench -- delta [--files 2000] [--rows 20000] [--append-rows 1000]`
import { spawn } from 'node:child_process';
import { cp, mkdir, readdir, readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { PreconditionFailedError } from '../../functions/core/errors.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';
import { appendDeltaEvents, createDeltaEventsTable } from '../../functions/tools/sample-delta.js';
import { flag, line, MB, machineNote, type Timed, timeCompact } from './table-bench.js';

const ROOT = join(process.cwd(), '.tmp', 'bench-delta');
const DAY = '2024-01-01';
/** A fixed epoch for the generated table, so its commits do not depend on when the set was made. */
const EPOCH = Date.UTC(2024, 0, 2);
const COMMIT_KEY = /_delta_log\/\d{20}\.json$/;
const HIVE = { format: 'parquet', table: 'events' } as const;
const DELTA = { format: 'delta', table: 'events' } as const;

/**
 * The Delta source set, generated once through the sample appender (one file and one WRITE commit each, seeded
 * per file) and cached under .tmp keyed by its size. Each append re-reads the whole log, so generation grows with
 * the square of the file count: minutes for the full 2,000 files, paid once.
 */
async function ensureDeltaSet(files: number, rows: number): Promise<string> {
  const dir = join(ROOT, `delta-${files}x${rows}-seed1`);
  const done = join(dir, '_COMPLETE');
  if (await stat(done).catch(() => undefined)) return dir;
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const t0 = performance.now();
  const store = new LocalObjectStore(dir);
  await createDeltaEventsTable(store, '', { now: EPOCH });
  for (let i = 0; i < files; i++) {
    await appendDeltaEvents(store, '', { day: DAY, rows, seed: 1_000_003 * i + 1, now: EPOCH + i });
  }
  await store.put('_COMPLETE', '');
  console.log(`  generated: ${files} Delta appends in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return dir;
}

/** The same data files, without the log, as a Hive-style Parquet table (the peer). */
async function hiveCopyOf(source: string, target: string): Promise<void> {
  await rm(target, { recursive: true, force: true });
  await cp(join(source, `date=${DAY}`), join(target, `date=${DAY}`), { recursive: true });
}

async function deltaCopyOf(source: string, target: string): Promise<void> {
  await rm(target, { recursive: true, force: true });
  await cp(source, target, { recursive: true, filter: (src) => !src.endsWith('_COMPLETE') });
}

async function dataBytes(dir: string): Promise<number> {
  const part = join(dir, `date=${DAY}`);
  let total = 0;
  for (const n of await readdir(part)) total += (await stat(join(part, n))).size;
  return total;
}

/** Counts our put-if-absent writes of `_delta_log/<version>.json` that another writer had won. */
function countingLostRaces(store: ObjectStore, counter: { lost: number }): ObjectStore {
  return Object.assign(Object.create(store) as ObjectStore, {
    put: async (...args: Parameters<ObjectStore['put']>) => {
      try {
        return await store.put(...args);
      } catch (err) {
        if (err instanceof PreconditionFailedError && COMMIT_KEY.test(args[0])) counter.lost += 1;
        throw err;
      }
    },
  });
}

/**
 * A streaming writer beside the compaction: one micro-batch committed every second until stopped, in a child process
 * (delta-appender.ts) so that it does not share the compaction's event loop or count in its CPU time. Resolves once
 * the child runs; `stop` waits for its commit in flight and returns how many it committed.
 */
async function startAppender(dir: string, rows: number): Promise<{ stop: () => Promise<number> }> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      fileURLToPath(new URL('./delta-appender.ts', import.meta.url)),
      dir,
      String(rows),
      DAY,
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  let stdout = '';
  child.stdout.setEncoding('utf8');
  const exited = new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code) => resolve(code));
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: string) => {
      stdout += chunk;
      if (stdout.startsWith('ready\n')) resolve();
    });
    exited.then((code) => reject(new Error(`the appender exited (${code}) before it ran`)), reject);
  });
  return {
    stop: async () => {
      child.stdin.end('stop\n');
      const code = await exited;
      const last = stdout.trim().split('\n').at(-1) ?? '';
      if (code !== 0 || !last.startsWith('{'))
        throw new Error(`the appender failed (exit ${code}): ${stdout}`);
      return (JSON.parse(last) as { appended: number }).appended;
    },
  };
}

interface LogTally {
  readonly optimize: number;
  readonly writes: number;
  /** OPTIMIZE commits that landed above the version they were planned at + 1: re-checked and rebased. */
  readonly rebased: number;
}

async function tallyLog(dir: string, fromVersion: number): Promise<LogTally> {
  const log = join(dir, '_delta_log');
  let optimize = 0;
  let writes = 0;
  let rebased = 0;
  for (const name of (await readdir(log)).filter((n) => /^\d{20}\.json$/.test(n))) {
    const version = Number(name.slice(0, 20));
    if (version <= fromVersion) continue;
    const first = (await readFile(join(log, name), 'utf8')).split('\n')[0] ?? '{}';
    const info = (JSON.parse(first) as { commitInfo?: { operation?: string; readVersion?: number } })
      .commitInfo;
    if (info?.operation === 'OPTIMIZE') {
      optimize += 1;
      if (info.readVersion !== undefined && version > info.readVersion + 1) rebased += 1;
    } else if (info?.operation === 'WRITE') writes += 1;
  }
  return { optimize, writes, rebased };
}

/** The Delta run against the peer, as percentages (the goal is stated as one: < 5 % over Hive). */
function versusHive(m: Timed, peer: Timed): string {
  return `vs Hive ${((100 * (m.wallMs - peer.wallMs)) / peer.wallMs).toFixed(1)}% wall (CPU ${((100 * (m.cpuMs - peer.cpuMs)) / peer.cpuMs).toFixed(1)}%)`;
}

/**
 * Flags: `--files <n>` (default 2,000) and `--rows <n>` (default 20,000) size the table, `--append-rows <n>`
 * (default 1,000) each concurrent micro-batch. Three compactions of the same files, in this order: Hive-style
 * Parquet (the peer), Delta alone, Delta beside the appender. Goals are printed, not asserted.
 */
export async function run(flags: readonly string[]): Promise<void> {
  const files = flag(flags, 'files', 2000);
  const rows = flag(flags, 'rows', 20_000);
  const appendRows = flag(flags, 'append-rows', 1000);
  console.log(`  delta bench: ${files} files × ${rows} rows, ${machineNote()}`);
  const source = await ensureDeltaSet(files, rows);
  const bytes = await dataBytes(source);
  console.log(`  input: ${(bytes / MB).toFixed(0)} MB in ${files} files`);
  const work = join(ROOT, 'work');

  // Warm-up (module loading, parquet-wasm's instance) on two files, so the first measured run does not pay it.
  await hiveCopyOf(source, work);
  const part = join(work, `date=${DAY}`);
  for (const name of (await readdir(part)).sort().slice(2)) await rm(join(part, name));
  await timeCompact(work, HIVE);

  await hiveCopyOf(source, work);
  const hive = await timeCompact(work, HIVE);
  console.log(line('Hive-style Parquet (peer)', bytes, hive));

  await deltaCopyOf(source, work);
  const quietRaces = { lost: 0 };
  const quiet = await timeCompact(work, DELTA, (s) => countingLostRaces(s, quietRaces));
  const quietLog = await tallyLog(work, files);
  console.log(line('Delta, no other writer', bytes, quiet, versusHive(quiet, hive)));
  console.log(`    commits: ${quietLog.optimize} OPTIMIZE won, ${quietRaces.lost} lost races`);

  await deltaCopyOf(source, work);
  const races = { lost: 0 };
  const appender = await startAppender(work, appendRows);
  let busy: Timed;
  try {
    busy = await timeCompact(work, DELTA, (s) => countingLostRaces(s, races));
  } finally {
    const appended = await appender.stop();
    console.log(`    appender: ${appended} micro-batches of ${appendRows} rows committed during the run`);
  }
  const busyLog = await tallyLog(work, files);
  console.log(line('Delta, appender committing every 1 s', bytes, busy, versusHive(busy, hive)));
  console.log(
    `    commits: ${busyLog.optimize} OPTIMIZE won, ${busyLog.writes} appender WRITE, ${races.lost} lost races (put-if-absent on _delta_log/*.json refused), ${busyLog.rebased} OPTIMIZE rebased over newer versions`,
  );
  console.log(
    `  goal: the log costs < 5% over Hive: ${((100 * (quiet.wallMs - hive.wallMs)) / hive.wallMs).toFixed(1)}% alone, ${((100 * (busy.wallMs - hive.wallMs)) / hive.wallMs).toFixed(1)}% beside the appender (wall)`,
  );
  await rm(work, { recursive: true, force: true });
}
