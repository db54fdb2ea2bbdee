// `npm run demo -- --format delta`: the local-cloud demo on a Delta Lake table. A streaming writer (the project's
// own appender, sample-delta.ts) commits one micro-batch per version into `events/`, day after day, while the
// profiler reads those commits and the real state machine compacts each finished day into an OPTIMIZE version of
// the same log — writer and compactor racing for versions as in production. Then the checks: every appended row is
// in the latest version exactly once (DuckDB, EXCEPT ALL both ways), and the log holds our OPTIMIZE versions.
//
// As in demo-run.ts, nothing here decides what the system does: it commits, fires the sweep's schedule, watches the
// executions and reads the results back; every figure comes from the log, the runs' outputs or DuckDB.

import { rmSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { App } from 'aws-cdk-lib';
import { LakeCompactorStack } from '../../infra/app.js';
import type { LocalCloud } from '../../infra/local/local-cloud.js';
import { onProcessExit } from '../../infra/local/process-hygiene.js';
import { S3ObjectStore } from '../adapters/s3-object-store.js';
import {
  checkpointDue,
  DeltaCheckpointError,
  writeCheckpoint,
} from '../core/formats/delta/checkpoint-writer.js';
import { compactorCommits, readDeltaHistory } from '../core/formats/delta/history.js';
import { readDeltaSnapshot } from '../core/formats/delta/log.js';
import { formatBytes } from '../core/stats.js';
import { plural } from '../core/words.js';
import { DEFAULT_WORK_ROOT, workFolder } from '../core/workflow/layout.js';
import type { ObjectStore } from '../ports/object-store.js';
import {
  type DemoDuckDb,
  multisetDifference,
  openDemoDuckDb,
  type TableTotals,
  tableTotals,
} from './demo-duckdb.js';
import {
  DEMO_BUCKET,
  DEMO_TABLE,
  type DemoCheck,
  type DemoProgress,
  type DemoRun,
  demoDays,
  demoPolicy,
  ExecutionWatcher,
  type LayoutStats,
  layoutStats,
  quietHandlers,
  runChecks,
  SweepLoop,
  startDemoCloud,
} from './demo-run.js';
import { appendDeltaEvents, createDeltaEventsTable } from './sample-delta.js';
import { deriveSeed, mulberry32 } from './sample-lake.js';

const MIN_ROWS = 500;
const MAX_ROWS = 2000;

export interface DeltaDemoOptions {
  /** Days (partitions) the writer fills one after another; the last one is today (UTC). */
  readonly days: number;
  /** Micro-batch commits per day. */
  readonly batches: number;
  /** Keep the before/after copies (the local cloud itself is always stopped). */
  readonly keep?: boolean;
  /** How often the sweep schedule is fired, ms. @default 1000 */
  readonly sweepIntervalMs?: number;
  /** Give up waiting for compactions this long after the last commit, ms. @default 120000 */
  readonly settleTimeoutMs?: number;
  /** The wall clock's "today" (for the partition dates). @default now */
  readonly now?: number;
  readonly seed?: number;
}

/** What the table's log says after the run. */
export interface DeltaDemoLog {
  /** The latest version. */
  readonly version: number;
  /** WRITE commits of the appender (one per micro-batch). */
  readonly appends: number;
  /** OPTIMIZE versions our runs committed (tagged `lakeCompactor`). */
  readonly optimize: number;
  /** Of those, committed above the version they were planned at + 1: rebased over the writer's appends. */
  readonly rebased: number;
  /** Versions with a checkpoint (the writer's and ours). */
  readonly checkpoints: readonly number[];
}

export interface DeltaDemoResult {
  readonly format: 'delta';
  readonly ok: boolean;
  readonly checks: readonly DemoCheck[];
  readonly options: {
    readonly days: number;
    readonly batches: number;
    readonly policy: Readonly<Record<string, number>>;
  };
  readonly log: DeltaDemoLog;
  /** The files the appender committed (before) and the files the latest version lists (after). */
  readonly before: LayoutStats;
  readonly after: LayoutStats;
  readonly totals: { readonly before: TableTotals; readonly after: TableTotals };
  readonly multiset: { readonly onlyBefore: number; readonly onlyAfter: number };
  readonly runs: readonly DemoRun[];
  readonly stagingLeft: readonly string[];
  readonly deadLetters: number;
  readonly timingsMs: {
    readonly startup: number;
    readonly stream: number;
    readonly settle: number;
    readonly checks: number;
    readonly total: number;
  };
  readonly dataDir?: string;
}

/**
 * The demo stack of demo-run.ts with its one table declared as Delta Lake (`format: "delta"`), its commits
 * coordinated as its writer's are: put-if-absent (`s3-conditional`).
 */
export function deltaDemoStack(options: { batches: number; days: number }): LakeCompactorStack {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  return new LakeCompactorStack(app, 'LakeCompactorDeltaDemo', {
    compactor: {
      tables: [
        {
          name: DEMO_TABLE,
          bucketName: DEMO_BUCKET,
          prefix: `${DEMO_TABLE}/`,
          format: 'delta',
          // The demo's writer (sample-delta.ts) commits with put-if-absent, as delta-rs does: declared, not assumed.
          deltaLogStore: { type: 's3-conditional' },
          partitionColumns: ['date'],
          dateColumn: 'date',
          dateFormat: 'yyyy-MM-dd',
          policy: demoPolicy(options),
        },
      ],
    },
  });
}

/**
 * Commits one micro-batch and, when its version is due, the checkpoint a good Delta writer leaves: without one the
 * appender (and the compactor) would replay a log that grows by hundreds of commits. Returns the committed file.
 */
async function commitBatch(
  store: ObjectStore,
  batch: { readonly day: string; readonly rows: number; readonly seed: number },
  configuration: Readonly<Record<string, string>>,
): Promise<{ key: string; version: number }> {
  const appended = await appendDeltaEvents(store, DEMO_TABLE, { ...batch, now: Date.now() });
  if (checkpointDue(appended.version, configuration)) {
    try {
      await writeCheckpoint(store, DEMO_TABLE, appended.version, { now: Date.now() });
    } catch (error) {
      // The commit is durable; a checkpoint the table's settings forbid is skipped, as any writer may.
      if (!(error instanceof DeltaCheckpointError)) throw error;
    }
  }
  return appended;
}

/** Runs the Delta demo. Never throws for a failed check (see `ok`); throws only when it cannot run at all. */
export async function runDeltaDemo(
  options: DeltaDemoOptions,
  progress: DemoProgress,
): Promise<DeltaDemoResult> {
  const started = performance.now();
  const restoreEnv = quietHandlers();
  const root = await mkdtemp(path.join(tmpdir(), 'lake-compactor-delta-demo-'));
  const beforeDir = path.join(root, 'before');
  const afterDir = path.join(root, 'after');
  const unhookRoot = options.keep
    ? () => undefined
    : onProcessExit(() => rmSync(root, { recursive: true, force: true }));
  let cloud: LocalCloud | undefined;
  let db: DemoDuckDb | undefined;
  let sweep: SweepLoop | undefined;
  try {
    const stack = deltaDemoStack(options);
    progress.line('Starting the local cloud (s3rver, DynamoDB Local, Step Functions) with a Delta table…');
    cloud = await startDemoCloud(stack);
    const running = cloud;
    const startupMs = performance.now() - started;
    progress.line(`Local cloud up in ${(startupMs / 1000).toFixed(1)} s.`);

    const days = demoDays(options.now ?? Date.now(), options.days);
    const total = options.days * options.batches;
    const lake = new S3ObjectStore({ client: running.s3, bucket: DEMO_BUCKET });
    const configuration = {};
    await createDeltaEventsTable(lake, DEMO_TABLE, { now: Date.now(), configuration });

    const watcher = new ExecutionWatcher(running, days, progress);
    sweep = new SweepLoop(running, stack, () => watcher.poll(), progress, options.sweepIntervalMs ?? 1000);

    // Stream: one WRITE version per micro-batch, a day at a time; a finished day is compacted while the next is
    // written, so our OPTIMIZE commits and the writer's appends race for the same log.
    const streamStarted = performance.now();
    const seed = options.seed ?? 42;
    let written = 0;
    progress.written?.(0, total);
    for (const [dayIndex, day] of days.entries()) {
      for (let b = 0; b < options.batches; b += 1) {
        const batchSeed = deriveSeed(seed, dayIndex, b);
        const rows = MIN_ROWS + Math.floor(mulberry32(batchSeed)() * (MAX_ROWS - MIN_ROWS + 1));
        const { key } = await commitBatch(lake, { day, rows, seed: batchSeed }, configuration);
        const file = path.join(beforeDir, key);
        await mkdir(path.dirname(file), { recursive: true });
        await writeFile(file, await lake.get(key));
        written += 1;
        progress.written?.(written, total);
        watcher.poll();
      }
    }
    const streamMs = performance.now() - streamStarted;
    progress.line(
      `Committed ${written} micro-batches in ${(streamMs / 1000).toFixed(1)} s; waiting for compactions…`,
    );

    const settleStarted = performance.now();
    const deadline = settleStarted + (options.settleTimeoutMs ?? 120_000);
    while (!watcher.allCompacted() && performance.now() < deadline && !watcher.anyFailed()) {
      await sleep(200);
      watcher.poll();
    }
    await sweep.stop();
    await running.drain(60_000).catch((error: unknown) => {
      progress.line(`drain: ${error instanceof Error ? error.message : String(error)}`);
    });
    watcher.poll();
    const settleMs = performance.now() - settleStarted;

    // Read the latest version back: the files its log lists, laid out by the partition values the log gives.
    const checksStarted = performance.now();
    const snapshot = await readDeltaSnapshot(lake, DEMO_TABLE);
    for (const live of snapshot.files) {
      const name = path.posix.basename(live.key ?? live.path);
      const file = path.join(afterDir, DEMO_TABLE, `date=${live.partitionValues.date}`, name);
      await mkdir(path.dirname(file), { recursive: true });
      await writeFile(file, await lake.get(live.key ?? live.path));
    }
    const history = await readDeltaHistory(lake, DEMO_TABLE);
    const ours = compactorCommits(history);
    const log: DeltaDemoLog = {
      version: history.latestVersion,
      appends: history.commits.filter((c) => c.operation === 'WRITE').length,
      optimize: ours.filter((c) => c.operation === 'OPTIMIZE').length,
      rebased: ours.filter((c) => c.readVersion !== undefined && c.version > c.readVersion + 1).length,
      checkpoints: history.checkpoints,
    };
    const stagingLeft: string[] = [];
    const staging = workFolder(DEFAULT_WORK_ROOT, 'staging');
    for await (const object of lake.listAll(staging)) stagingLeft.push(object.key);

    db = await openDemoDuckDb();
    const tableBefore = path.join(beforeDir, DEMO_TABLE);
    const tableAfter = path.join(afterDir, DEMO_TABLE);
    const before = await layoutStats(db, tableBefore);
    const after = await layoutStats(db, tableAfter);
    const totals = { before: await tableTotals(db, tableBefore), after: await tableTotals(db, tableAfter) };
    const multiset = await multisetDifference(db, tableBefore, tableAfter);
    const checksMs = performance.now() - checksStarted;

    const runs = watcher.runs();
    const groupsDone = runs.reduce((n, r) => n + r.groupsDone, 0);
    const checks: DemoCheck[] = [
      ...runChecks(
        runs,
        days.map((d) => `date=${d}`),
      ),
      {
        name: 'one OPTIMIZE version per group committed',
        ok: log.optimize > 0 && log.optimize === groupsDone,
        detail: `${plural(log.optimize, 'OPTIMIZE version')} tagged lakeCompactor in the log, ${plural(groupsDone, 'group')} done`,
      },
      {
        name: 'every micro-batch committed',
        ok: log.appends === total && before.files === total,
        detail: `${plural(log.appends, 'WRITE version')}, ${plural(before.files, 'file')} appended, ${plural(total, 'micro-batch', 'micro-batches')}`,
      },
      {
        name: 'row count and revenue unchanged',
        ok:
          totals.before.rows === totals.after.rows &&
          totals.before.revenueUsd === totals.after.revenueUsd &&
          totals.before.rows > 0,
        detail: `appended ${totals.before.rows} rows / $${totals.before.revenueUsd}, version ${log.version} holds ${totals.after.rows} rows / $${totals.after.revenueUsd}`,
      },
      {
        name: 'same rows (EXCEPT ALL both ways)',
        ok: multiset.onlyBefore === 0 && multiset.onlyAfter === 0,
        detail: `${multiset.onlyBefore} appended rows missing from version ${log.version}, ${multiset.onlyAfter} rows only in it`,
      },
      {
        name: 'no staging left',
        ok: stagingLeft.length === 0,
        detail: stagingLeft.length === 0 ? `${staging} is empty` : stagingLeft.join(', '),
      },
      {
        name: 'no dead letters',
        ok: running.deadLetters.length === 0,
        detail: `${running.deadLetters.length} profiler messages dead-lettered`,
      },
    ];
    return {
      format: 'delta',
      ok: checks.every((c) => c.ok),
      checks,
      options: { days: options.days, batches: options.batches, policy: demoPolicy(options) },
      log,
      before,
      after,
      totals,
      multiset,
      runs,
      stagingLeft,
      deadLetters: running.deadLetters.length,
      timingsMs: {
        startup: Math.round(startupMs),
        stream: Math.round(streamMs),
        settle: Math.round(settleMs),
        checks: Math.round(checksMs),
        total: Math.round(performance.now() - started),
      },
      ...(options.keep ? { dataDir: root } : {}),
    };
  } finally {
    sweep?.halt();
    db?.close();
    await cloud?.stop();
    if (!options.keep) await rm(root, { recursive: true, force: true });
    unhookRoot();
    restoreEnv();
  }
}

/** The Delta demo's text report: the log, the layout before and after, the runs and the checks. */
export function formatDeltaDemoReport(result: DeltaDemoResult): string {
  const { days, batches } = result.options;
  const { log, before, after } = result;
  const out = [
    '',
    `== Delta table events: ${days} days × ${batches} micro-batch commits ==`,
    '',
    `log: version ${log.version}; ${plural(log.appends, 'WRITE version')} by the writer, ${plural(log.optimize, 'OPTIMIZE version')} by lake-compactor (${log.rebased} rebased over the writer's newer versions); checkpoints at ${log.checkpoints.join(', ') || 'none'}`,
    `files: ${before.files} committed by the writer (${formatBytes(before.bytes)}) → ${after.files} in version ${log.version} (${formatBytes(after.bytes)}), ${before.partitions} partitions`,
    `rows: ${result.totals.before.rows} appended → ${result.totals.after.rows} in version ${log.version}`,
    '',
    `== Runs (${result.runs.length}) ==`,
    ...result.runs.map(
      (r) =>
        `${r.partition}  ${r.outcome ?? r.status}  ${r.filesBefore}→${r.filesAfter} files  ${r.rows} rows  ${r.groupsVerified}/${r.groups} groups verified  ${(r.durationMs / 1000).toFixed(1)} s${r.error === undefined ? '' : `  ${r.error}`}`,
    ),
    '',
    '== Checks ==',
    ...result.checks.map((c) => `${c.ok ? '✔' : '✘'} ${c.name}: ${c.detail}`),
    '',
    `Time: ${(result.timingsMs.total / 1000).toFixed(1)} s (local cloud start ${(result.timingsMs.startup / 1000).toFixed(1)} s, streaming ${(result.timingsMs.stream / 1000).toFixed(1)} s, last runs ${(result.timingsMs.settle / 1000).toFixed(1)} s, read-back and checks ${(result.timingsMs.checks / 1000).toFixed(1)} s)`,
  ];
  if (result.dataDir !== undefined) {
    out.push(
      `Kept: ${result.dataDir}/before (the files the writer committed) and ${result.dataDir}/after (the latest version's files).`,
    );
  }
  out.push(result.ok ? 'All checks held.' : 'FAILED: see the ✘ checks above.');
  return `${out.join('\n')}\n`;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
