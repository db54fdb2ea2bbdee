// What the table-format benches (delta.ts, iceberg.ts, hudi.ts) share: their flags, one timed compaction through the
// CLI path (`runCompact`, as `lake-compactor compact` runs it), the printed line with its ratio to the Hive rewrite of
// the same data, and the appender child that commits beside the compaction. One copy, so the three benches measure
// and print the same way and their figures can stand side by side in docs/benchmarks.md.
import { type ChildProcess, spawn } from 'node:child_process';
import { readdir, stat } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { type CompactOptions, runCompact } from '../../functions/cli/compact.js';
import { CompactionFailedError } from '../../functions/core/errors.js';
import { systemClock } from '../../functions/ports/clock.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';

export const MB = 1e6;

/** A positive integer flag `--<name> <n>`, or `fallback`. @throws Error when the value is not one. */
export function flag(flags: readonly string[], name: string, fallback: number): number {
  const i = flags.indexOf(`--${name}`);
  const value = i >= 0 ? Number(flags[i + 1]) : fallback;
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} expects a positive integer`);
  return value;
}

/** A positive number flag `--<name> <x>` (e.g. `--scale 0.1`), or `fallback`. @throws Error when it is not one. */
export function numberFlag(flags: readonly string[], name: string, fallback: number): number {
  const i = flags.indexOf(`--${name}`);
  const value = i >= 0 ? Number(flags[i + 1]) : fallback;
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} expects a positive number`);
  return value;
}

/**
 * The machine the figures were measured on, printed with them: the benches share a 2-core machine with other jobs,
 * so a figure means little without the load it was measured under.
 */
export function machineNote(): string {
  return `${cpus().length} CPUs, load ${loadavg()
    .map((l) => l.toFixed(1))
    .join('/')}, node ${process.version}`;
}

/** Files and bytes directly in `dir`. */
export async function bytesIn(dir: string): Promise<{ files: number; bytes: number }> {
  let files = 0;
  let bytes = 0;
  for (const n of await readdir(dir)) {
    files += 1;
    bytes += (await stat(join(dir, n))).size;
  }
  return { files, bytes };
}

export interface Timed {
  readonly wallMs: number;
  readonly cpuMs: number;
  /** Output files published by the groups that committed. */
  readonly outputs: number;
  /** Groups that ended committed (`done`). */
  readonly groupsDone: number;
  /** Groups that ended otherwise: left alone (an input changed, a conflict) or failed. */
  readonly groupsNotDone: number;
  /** The run's failure, when `failures: 'report'` was asked and some group failed (CompactionFailedError). */
  readonly failure?: string;
}

/**
 * One compaction of `dir` in this process, quietly, through the CLI path; wall and CPU time of this process (an
 * appender runs in its own). A run in which some group failed throws, unless `failures: 'report'`: then the failure
 * is returned beside the times, as a bench beside a concurrent writer counts lost groups rather than stopping.
 */
export async function timeCompact(
  dir: string,
  options: CompactOptions,
  wrapStore?: (s: ObjectStore) => ObjectStore,
  failures: 'throw' | 'report' = 'throw',
): Promise<Timed> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  let failure: string | undefined;
  const results = await runCompact(
    dir,
    options,
    { out: () => undefined, clock: systemClock, env: process.env },
    wrapStore === undefined ? {} : { wrapStore },
  ).catch((err: unknown) => {
    if (failures === 'report' && err instanceof CompactionFailedError) {
      failure = err.message;
      return [];
    }
    throw err;
  });
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(c0);
  const groups = results.flatMap((r) => r.groups);
  return {
    wallMs,
    cpuMs: (cpu.user + cpu.system) / 1000,
    outputs: groups.reduce((n, g) => n + g.published, 0),
    groupsDone: groups.filter((g) => g.state === 'done').length,
    groupsNotDone: groups.filter((g) => g.state !== 'done').length,
    ...(failure === undefined ? {} : { failure }),
  };
}

/** A run's times as multiples of the Hive rewrite's (the peer, measured in the same run). */
export function ratio(m: Timed, peer: Timed): string {
  return `${(m.wallMs / peer.wallMs).toFixed(2)}× Hive wall, ${(m.cpuMs / peer.cpuMs).toFixed(2)}× CPU`;
}

/** One printed run: wall, CPU, MB/s of `bytes` input, outputs, and `versusPeer` (e.g. {@link ratio}) when given. */
export function line(label: string, bytes: number, m: Timed, versusPeer?: string): string {
  const s = m.wallMs / 1000;
  const parts = [
    `${label.padEnd(38)} ${s.toFixed(2).padStart(7)} s`,
    `CPU ${(m.cpuMs / 1000).toFixed(2).padStart(6)} s`,
    `${(bytes / MB / s).toFixed(1).padStart(6)} MB/s`,
    `${m.outputs} out`,
  ];
  if (versusPeer !== undefined) parts.push(versusPeer);
  return `  ${parts.join(' | ')}`;
}

/**
 * Starts an appender child (a `*-appender.ts` script, run with `process.execPath --import tsx` so the compaction
 * cannot starve its timer nor count its CPU time) and resolves once it has committed for the first time, so it runs
 * beside the compaction from its start. The child's protocol: a `commit <n>` line per commit on stdout; on SIGTERM
 * it finishes the commit in flight and prints one JSON line, its tally, which `stop` returns parsed.
 */
export async function startAppenderChild(
  script: string,
  args: readonly string[],
): Promise<{ stop: () => Promise<unknown> }> {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', script, ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
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
      return JSON.parse(last) as unknown;
    },
  };
}
