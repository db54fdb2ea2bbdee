// Iceberg rewrite_data_files benchmark (issue #18): a path-catalog Iceberg table of N small files in one partition,
// written by the sample appender, is compacted into `replace` snapshots while a second writer — a child process —
// commits an append every second; against the same data files compacted as a Hive-style Parquet table in the same
// run. Prints MB/s, our commit retries and rebases, the appender's commits won / lost, and the metadata's overhead.
//
// `npm run bench -- iceberg [--files 2000] [--rows 20000] [--append-rows 1000]`
import { type ChildProcess, spawn } from 'node:child_process';
import { cp, mkdir, readdir, rm, stat } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { runCompact } from '../../functions/cli/compact.js';
import { loadTable } from '../../functions/core/formats/iceberg/catalog.js';
import { systemClock } from '../../functions/ports/clock.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';
import {
  appendIcebergEventFiles,
  createIcebergEventsTable,
  ICEBERG_EVENTS_PARTITION_FIELD,
} from '../../functions/tools/sample-iceberg.js';

const MB = 1e6;
const ROOT = join(process.cwd(), '.tmp', 'bench-iceberg');
const DAY = '2024-01-01';
const PARTITION_DIR = `${ICEBERG_EVENTS_PARTITION_FIELD.name}=${DAY}`;
/** A fixed epoch for the generated table, so its commits do not depend on when the set was made. */
const EPOCH = Date.UTC(2024, 0, 2);
const APPENDER = fileURLToPath(new URL('./iceberg-appender.ts', import.meta.url));

/** A manifest list: every commit attempt (won or lost) writes exactly one, before it asks the catalog to swap. */
const MANIFEST_LIST_KEY = /(^|\/)metadata\/snap-[^/]+\.avro$/;

/**
 * `store`, counting commit attempts by the manifest lists it writes. An attempt loses when another writer committed
 * first (the path catalog sees a newer metadata file, or its put-if-absent is refused): attempts - commits won =
 * retries, each a reload and rebase onto the newer snapshot.
 */
export function countingCommitAttempts(store: ObjectStore, counter: { attempts: number }): ObjectStore {
  return Object.assign(Object.create(store) as ObjectStore, {
    put: async (...args: Parameters<ObjectStore['put']>) => {
      const result = await store.put(...args);
      if (MANIFEST_LIST_KEY.test(args[0])) counter.attempts += 1;
      return result;
    },
  });
}

function flag(flags: readonly string[], name: string, fallback: number): number {
  const i = flags.indexOf(`--${name}`);
  const value = i >= 0 ? Number(flags[i + 1]) : fallback;
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} expects a positive integer`);
  return value;
}

/** Data files per `append` snapshot when the source table is generated. */
const FILES_PER_COMMIT = 100;

/**
 * The Iceberg source table, generated once through the sample appender and cached under .tmp keyed by its size:
 * one data file per seeded micro-batch, committed 100 files to an `append` snapshot (what a writer that merges
 * manifests leaves — Iceberg's `commit.manifest-merge.min-count-to-merge` is 100 — and without which each append
 * would read every earlier manifest, so generation would grow with the square of the file count).
 */
async function ensureIcebergSet(files: number, rows: number): Promise<string> {
  const dir = join(ROOT, `iceberg-${files}x${rows}-seed1-c${FILES_PER_COMMIT}`);
  const done = join(dir, '_COMPLETE');
  if (await stat(done).catch(() => undefined)) return dir;
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const t0 = performance.now();
  const store = new LocalObjectStore(dir);
  await createIcebergEventsTable(store, '', { now: EPOCH });
  for (let first = 0; first < files; first += FILES_PER_COMMIT) {
    const batch = Array.from({ length: Math.min(FILES_PER_COMMIT, files - first) }, (_, j) => ({
      day: DAY,
      rows,
      seed: 1_000_003 * (first + j) + 1,
    }));
    await appendIcebergEventFiles(store, '', batch, EPOCH + first);
  }
  await store.put('_COMPLETE', '');
  console.log(
    `  generated: ${files} Iceberg data files in ${Math.ceil(files / FILES_PER_COMMIT)} appends in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );
  return dir;
}

/** The same data files, without the metadata, as a Hive-style Parquet table (the peer). */
async function hiveCopyOf(source: string, target: string): Promise<void> {
  await rm(target, { recursive: true, force: true });
  await cp(join(source, 'data', PARTITION_DIR), join(target, PARTITION_DIR), { recursive: true });
}

async function icebergCopyOf(source: string, target: string): Promise<void> {
  await rm(target, { recursive: true, force: true });
  await cp(source, target, { recursive: true, filter: (src) => !src.endsWith('_COMPLETE') });
}

async function bytesIn(dir: string): Promise<{ files: number; bytes: number }> {
  let files = 0;
  let bytes = 0;
  for (const n of await readdir(dir)) {
    files += 1;
    bytes += (await stat(join(dir, n))).size;
  }
  return { files, bytes };
}

/** The appender child: started, and resolved once it has committed its first append (so it runs beside us). */
async function startAppender(dir: string, rows: number): Promise<{ stop: () => Promise<AppenderTally> }> {
  const child: ChildProcess = spawn(
    process.execPath,
    ['--import', 'tsx', APPENDER, dir, DAY, String(rows), '7000001'],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  let firstCommit: (() => void) | undefined;
  const committed = new Promise<void>((resolve) => {
    firstCommit = resolve;
  });
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString('utf8');
    if (out.includes('commit ')) firstCommit?.();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  await Promise.race([
    committed,
    exited.then((code) => {
      throw new Error(`the appender exited (${code}) before its first commit`);
    }),
  ]);
  return {
    stop: async () => {
      child.kill('SIGTERM');
      const code = await exited;
      const last = out.trim().split('\n').at(-1) ?? '';
      if (code !== 0 || !last.startsWith('{')) throw new Error(`the appender ended with ${code}: ${last}`);
      return JSON.parse(last) as AppenderTally;
    },
  };
}

interface AppenderTally {
  /** Appends committed. */
  readonly won: number;
  /** Commit attempts (manifest lists written): `attempts - won` lost to another writer and were retried. */
  readonly attempts: number;
}

interface SnapshotTally {
  readonly replaces: number;
  readonly appends: number;
  /** Replace snapshots whose parent is an append committed after the run started: re-checked and rebased over it. */
  readonly rebased: number;
}

/** Snapshots committed after `since` (the current snapshot when the run started), by operation. */
async function tallySnapshots(dir: string, since: bigint | undefined): Promise<SnapshotTally> {
  const { metadata } = await loadTable(new LocalObjectStore(dir), '');
  const newer = metadata.snapshots.filter((s) => since === undefined || s.sequenceNumber > sequenceOf(since));
  function sequenceOf(id: bigint): bigint {
    return metadata.snapshots.find((s) => s.snapshotId === id)?.sequenceNumber ?? 0n;
  }
  const appendIds = new Set(newer.filter((s) => s.operation === 'append').map((s) => s.snapshotId));
  const replaces = newer.filter((s) => s.operation === 'replace');
  return {
    replaces: replaces.length,
    appends: appendIds.size,
    rebased: replaces.filter((s) => s.parentSnapshotId !== undefined && appendIds.has(s.parentSnapshotId))
      .length,
  };
}

async function currentSnapshot(dir: string): Promise<bigint | undefined> {
  return (await loadTable(new LocalObjectStore(dir), '')).metadata.currentSnapshotId;
}

interface Timed {
  readonly wallMs: number;
  readonly cpuMs: number;
  readonly outputs: number;
}

/** One compaction of `dir` in this process, quietly; wall and CPU time. */
async function timeCompact(
  dir: string,
  format: 'iceberg' | 'parquet',
  wrapStore?: (s: ObjectStore) => ObjectStore,
): Promise<Timed> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const results = await runCompact(
    dir,
    { format, table: 'events' },
    { out: () => undefined, clock: systemClock, env: process.env },
    wrapStore === undefined ? {} : { wrapStore },
  );
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(c0);
  const outputs = results.flatMap((r) => r.groups).reduce((n, g) => n + g.published, 0);
  return { wallMs, cpuMs: (cpu.user + cpu.system) / 1000, outputs };
}

function ratio(m: Timed, peer: Timed): string {
  return `${(m.wallMs / peer.wallMs).toFixed(2)}× Hive wall, ${(m.cpuMs / peer.cpuMs).toFixed(2)}× CPU`;
}

function line(label: string, bytes: number, m: Timed, peer?: Timed): string {
  const s = m.wallMs / 1000;
  const parts = [
    `${label.padEnd(38)} ${s.toFixed(2).padStart(7)} s`,
    `CPU ${(m.cpuMs / 1000).toFixed(2).padStart(6)} s`,
    `${(bytes / MB / s).toFixed(1).padStart(6)} MB/s`,
    `${m.outputs} out`,
  ];
  if (peer !== undefined) parts.push(ratio(m, peer));
  return `  ${parts.join(' | ')}`;
}

/**
 * Flags: `--files <n>` (default 2,000) and `--rows <n>` (default 20,000) size the table, `--append-rows <n>`
 * (default 1,000) each concurrent append. Three compactions of the same files, in this order: Hive-style Parquet
 * (the peer), Iceberg alone, Iceberg beside the appender child. Figures are printed, not asserted.
 */
export async function run(flags: readonly string[]): Promise<void> {
  const files = flag(flags, 'files', 2000);
  const rows = flag(flags, 'rows', 20_000);
  const appendRows = flag(flags, 'append-rows', 1000);
  console.log(
    `  iceberg bench: ${files} files × ${rows} rows in one partition, ${cpus().length} CPUs, load ${loadavg()
      .map((l) => l.toFixed(1))
      .join('/')}, node ${process.version}`,
  );
  const source = await ensureIcebergSet(files, rows);
  const input = await bytesIn(join(source, 'data', PARTITION_DIR));
  const metadataAtRest = await bytesIn(join(source, 'metadata'));
  console.log(
    `  input: ${(input.bytes / MB).toFixed(1)} MB in ${input.files} data files; ${metadataAtRest.files} metadata files (${(metadataAtRest.bytes / MB).toFixed(1)} MB)`,
  );
  const work = join(ROOT, 'work');

  // Warm-up (module loading, parquet-wasm's instance) on two files, so the first measured run does not pay it.
  await hiveCopyOf(source, work);
  const part = join(work, PARTITION_DIR);
  for (const name of (await readdir(part)).sort().slice(2)) await rm(join(part, name));
  await timeCompact(work, 'parquet');

  await hiveCopyOf(source, work);
  const hive = await timeCompact(work, 'parquet');
  console.log(line('Hive-style Parquet (peer)', input.bytes, hive));

  await icebergCopyOf(source, work);
  const quietRaces = { attempts: 0 };
  const quietStart = await currentSnapshot(work);
  const metadataBefore = await bytesIn(join(work, 'metadata'));
  const quiet = await timeCompact(work, 'iceberg', (s) => countingCommitAttempts(s, quietRaces));
  const metadataAfter = await bytesIn(join(work, 'metadata'));
  const quietSnapshots = await tallySnapshots(work, quietStart);
  console.log(line('Iceberg, no other writer', input.bytes, quiet, hive));
  console.log(
    `    commits: ${quietSnapshots.replaces} replace snapshots in ${quietRaces.attempts} attempts (${quietRaces.attempts - quietSnapshots.replaces} retries); metadata written: ${metadataAfter.files - metadataBefore.files} files, ${((metadataAfter.bytes - metadataBefore.bytes) / 1000).toFixed(1)} kB`,
  );

  await icebergCopyOf(source, work);
  const races = { attempts: 0 };
  const busyStart = await currentSnapshot(work);
  const appender = await startAppender(work, appendRows);
  let busy: Timed;
  let tally: AppenderTally;
  try {
    busy = await timeCompact(work, 'iceberg', (s) => countingCommitAttempts(s, races));
  } finally {
    tally = await appender.stop();
  }
  const busySnapshots = await tallySnapshots(work, busyStart);
  console.log(line('Iceberg, appender committing every 1 s', input.bytes, busy, hive));
  console.log(
    `    commits: ${busySnapshots.replaces} replace snapshots in ${races.attempts} attempts (${races.attempts - busySnapshots.replaces} retries: another commit came first, reloaded and rebased), ${busySnapshots.rebased} replace snapshots committed onto an appender snapshot`,
  );
  console.log(
    `    appender (child process): ${tally.won} appends of ${appendRows} rows won (${busySnapshots.appends} in the table's snapshots), ${tally.attempts - tally.won} lost (attempts retried after another commit)`,
  );
  console.log(
    `  metadata overhead vs the Hive rewrite of the same data: ${ratio(quiet, hive)} alone, ${ratio(busy, hive)} beside the appender`,
  );
  await rm(work, { recursive: true, force: true });
}
