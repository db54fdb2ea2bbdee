// `npm run demo -- --format hudi`: a streaming writer (the project's own Hudi appender, sample-hudi.ts) commits
// insert commits into a Copy-on-Write table on the embedded local cloud — one new small file group per commit, under
// the table's storage lock as a Hudi 1.1 writer takes it — while the real stack (profiler, sweep, state machine)
// clusters each finished partition through Hudi's own timeline: a clustering plan, then a completed replacecommit
// naming the replaced file groups. Then the checks read the table back through the timeline: the live file slices
// at the latest completed instant must hold exactly the appended rows (DuckDB, EXCEPT ALL both ways over every
// column but `_hoodie_file_name`), in fewer live base files, with no pending instant and no lock left behind.
//
// As in the other demos, nothing here decides what the system does: it commits, fires the sweep's schedule, watches
// the executions and reads the results back.
import { rmSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { App } from 'aws-cdk-lib';
import { LakeCompactorStack } from '../../infra/app.js';
import type { LocalCloud } from '../../infra/local/local-cloud.js';
import { onProcessExit } from '../../infra/local/process-hygiene.js';
import { S3ObjectStore } from '../adapters/s3-object-store.js';
import { isStorageLockLive, StorageBasedHudiLock } from '../core/formats/hudi/lock/index.js';
import { type HudiTableState, readHudiTable } from '../core/formats/hudi/table-state.js';
import { formatBytes } from '../core/stats.js';
import { DEFAULT_WORK_ROOT, workFolder } from '../core/workflow/layout.js';
import { systemClock } from '../ports/clock.js';
import type { ObjectStore } from '../ports/object-store.js';
import { type DemoDuckDb, openDemoDuckDb, sqlString } from './demo-duckdb.js';
import {
  DEMO_BUCKET,
  DEMO_TABLE,
  type DemoCheck,
  type DemoProgress,
  type DemoRun,
  demoPolicy,
  PartitionRunWatcher,
  quietHandlers,
  SweepLoop,
  startDemoCloud,
} from './demo-run.js';
import { type AppenderTableVersion, appendHudiInsert, createHudiTable } from './sample-hudi.js';

/**
 * The Hudi demo's size when `--days`/`--batches` are not given: each partition is one clustering run of the real
 * state machine, and every insert commit takes the table's lock and lists its timeline, so a small table shows the
 * whole protocol in well under a minute.
 */
export const HUDI_DEMO_DEFAULTS = { days: 3, batches: 8 } as const;

/** Every column but `_hoodie_file_name`, which clustering rewrites to name each output file (Hudi's rule). */
const ROW_COLUMNS =
  '_hoodie_commit_time, _hoodie_commit_seqno, _hoodie_record_key, _hoodie_partition_path, id, name, byteField';

export interface HudiDemoOptions {
  /** Partitions (values of the table's `byteField` partition column: 1, 2, …) the writer fills one after another. */
  readonly days: number;
  /** Insert commits (one new file group each) per partition. */
  readonly batches: number;
  /** Keep the local copies (the appended base files, the live base files after, the whole table with its timeline). */
  readonly keep?: boolean;
  /** Hudi table version the appender creates. @default 8 */
  readonly tableVersion?: AppenderTableVersion;
  /** How often the sweep schedule is fired, ms (stands in for its 15-minute rate). @default 1000 */
  readonly sweepIntervalMs?: number;
  /** Give up waiting for clusterings this long after the last commit, ms. @default 120000 */
  readonly settleTimeoutMs?: number;
}

/** The table's timeline after the run, as the reader sees it. */
export interface HudiDemoTimeline {
  readonly tableVersion: number;
  /** Completed insert commits (the appender's). */
  readonly commits: number;
  /** Completed replacecommits (our clusterings, one per group). */
  readonly replacecommits: number;
  /** Requested or inflight instants left (plans, writes, replaces, rollbacks): must be none. */
  readonly pending: number;
  /** The latest completed instant. */
  readonly latest: string;
}

/** The live file slices at the latest completed instant. */
export interface HudiLiveFiles {
  readonly baseFiles: number;
  readonly logFiles: number;
  readonly bytes: number;
  readonly partitions: number;
}

export interface HudiDemoResult {
  readonly ok: boolean;
  readonly format: 'hudi';
  readonly checks: readonly DemoCheck[];
  readonly options: {
    readonly days: number;
    readonly batches: number;
    readonly tableVersion: number;
    readonly policy: Readonly<Record<string, number>>;
  };
  /** What the appender committed: one base file per commit. */
  readonly appended: {
    readonly commits: number;
    readonly baseFiles: number;
    readonly rows: number;
    /** Insert commits made while a clustering run was running (before and after the commit). */
    readonly commitsDuringRuns: number;
  };
  readonly timeline: HudiDemoTimeline;
  readonly live: HudiLiveFiles;
  /** The live rows against every appended row (EXCEPT ALL both ways). */
  readonly rows: { readonly live: number; readonly onlyAppended: number; readonly onlyLive: number };
  readonly runs: readonly DemoRun[];
  readonly stagingLeft: readonly string[];
  /** Whether the storage lock's file still names a holder whose lease has not run out (must not). */
  readonly lockLeft: boolean;
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
 * The demo configuration of the real stack: one Hudi table `events` on bucket `lake`, its writers coordinated by
 * Hudi 1.1's storage-based lock (`.hoodie/.locks/table_lock.json`, no extra infrastructure) and indexed by bloom
 * filters (what the appender's footers carry). No partition columns: a Hudi partition path (`1`, `2`, … here,
 * not Hive-style) is what the timeline names, and the port plans by it.
 */
export function hudiDemoStack(options: { batches: number; days: number }): LakeCompactorStack {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  return new LakeCompactorStack(app, 'LakeCompactorHudiDemo', {
    compactor: {
      tables: [
        {
          name: DEMO_TABLE,
          bucketName: DEMO_BUCKET,
          prefix: `${DEMO_TABLE}/`,
          format: 'hudi',
          hudiLock: { provider: 'storage' },
          hudiIndexType: 'BLOOM',
          policy: demoPolicy(options),
        },
      ],
    },
  });
}

/** The demo's partition paths: the appender's `byteField` values 1 … `count`. */
export function hudiDemoPartitions(count: number): string[] {
  return Array.from({ length: count }, (_, i) => String(i + 1));
}

/** Rows of insert commit `i` of the stream: varied, so base files differ in size as a real stream's do. */
function rowsOf(i: number): number {
  return 60 + ((i * 37) % 90);
}

/** Runs the Hudi demo. Never throws for a failed check (see `ok`); throws only when it cannot run at all. */
export async function runHudiDemo(options: HudiDemoOptions, progress: DemoProgress): Promise<HudiDemoResult> {
  const started = performance.now();
  const restoreEnv = quietHandlers();
  const root = await mkdtemp(path.join(tmpdir(), 'lake-compactor-hudi-demo-'));
  const unhookRoot = options.keep
    ? () => undefined
    : onProcessExit(() => rmSync(root, { recursive: true, force: true }));
  let cloud: LocalCloud | undefined;
  let db: DemoDuckDb | undefined;
  let sweep: SweepLoop | undefined;
  try {
    const stack = hudiDemoStack(options);
    progress.line('Starting the local cloud (s3rver, DynamoDB Local, Step Functions) with a Hudi table…');
    cloud = await startDemoCloud(stack);
    const running = cloud;
    const startupMs = performance.now() - started;
    progress.line(`Local cloud up in ${(startupMs / 1000).toFixed(1)} s.`);

    const partitions = hudiDemoPartitions(options.days);
    const total = options.days * options.batches;
    const watcher = new PartitionRunWatcher(running, partitions, progress, 'replacecommits');
    const lake = new S3ObjectStore({ client: running.s3, bucket: DEMO_BUCKET });
    const tableVersion = options.tableVersion ?? 8;
    // Each commit mints its instant from the wall clock, after every instant on the timeline, as a real writer does.
    const table = await createHudiTable(lake, DEMO_TABLE, tableVersion);
    const lock = new StorageBasedHudiLock({ store: lake, tableRoot: DEMO_TABLE, clock: systemClock });

    sweep = new SweepLoop(running, stack, () => watcher.poll(), progress, options.sweepIntervalMs ?? 1000);

    // Stream: one insert commit (a new file group) at a time, partition after partition; a finished partition is
    // clustered while the next is written, so the writer's commits and our replacecommits share one timeline.
    const appendedDir = path.join(root, 'appended');
    await mkdir(appendedDir, { recursive: true });
    const streamStarted = performance.now();
    let appendedRows = 0;
    progress.written?.(0, total);
    let commitsDuringRuns = 0;
    const runStarted = (partition: string) =>
      running.executions.some(
        (e) => (e.input as { partition?: unknown } | undefined)?.partition === partition,
      );
    const anyRunning = () => running.executions.some((e) => e.status === 'RUNNING');
    for (const [p, partition] of partitions.entries()) {
      // The next partition's commits wait for the previous partition's clustering to start, so they land on the
      // timeline while it runs (its plan, its replacecommit): the race the lock and the conflict check are for.
      const previous = partitions[p - 1];
      if (previous !== undefined) {
        const waitUntil = performance.now() + (options.settleTimeoutMs ?? 120_000);
        while (!runStarted(previous) && !watcher.anyFailed() && performance.now() < waitUntil) {
          await sleep(100);
          watcher.poll();
        }
      }
      for (let b = 0; b < options.batches; b += 1) {
        const i = p * options.batches + b;
        const rows = rowsOf(i);
        const during = anyRunning();
        const { key } = await appendHudiInsert(table, partition, rows, { clock: () => Date.now(), lock });
        if (during && anyRunning()) commitsDuringRuns += 1;
        await writeFile(path.join(appendedDir, path.posix.basename(key)), await lake.get(key));
        appendedRows += rows;
        progress.written?.(i + 1, total);
        watcher.poll();
      }
    }
    const streamMs = performance.now() - streamStarted;
    progress.line(
      `Committed ${total} insert commits in ${(streamMs / 1000).toFixed(1)} s; waiting for clusterings…`,
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

    // Read the table back through its timeline: the live slices at the latest completed instant.
    const checksStarted = performance.now();
    const state = await readHudiTable(lake, DEMO_TABLE);
    const timeline = timelineSummary(state);
    const live = liveFiles(state);
    db = await openDemoDuckDb();
    const rows = await compareLiveRows(db, lake, state, appendedDir, path.join(root, 'live'));
    const lockLeft = await hudiLockHeld(lake);
    const stagingLeft: string[] = [];
    const staging = workFolder(DEFAULT_WORK_ROOT, 'staging');
    for await (const object of lake.listAll(staging)) stagingLeft.push(object.key);
    if (options.keep) {
      // The whole table as it stands (timeline, every base file, replaced ones too), for reading it without us.
      for await (const object of lake.listAll(`${DEMO_TABLE}/`)) {
        const file = path.join(root, 'table', object.key.slice(DEMO_TABLE.length + 1));
        await mkdir(path.dirname(file), { recursive: true });
        await writeFile(file, await lake.get(object.key));
      }
    }
    const checksMs = performance.now() - checksStarted;

    const runs = watcher.runs();
    const compacted = runs.filter((r) => r.status === 'SUCCEEDED' && r.outcome === 'compacted');
    const compactedPartitions = new Set(compacted.map((r) => r.partition));
    const notCompacted = partitions.filter((p) => !compactedPartitions.has(p));
    const failedRuns = runs.filter((r) => r.status !== 'SUCCEEDED' && r.status !== 'RUNNING');
    const unverified = compacted.filter((r) => r.failedGroups > 0 || r.groupsVerified !== r.groupsDone);
    const groupsDone = compacted.reduce((n, r) => n + r.groupsDone, 0);
    const checks: DemoCheck[] = [
      {
        name: 'every partition clustered',
        ok: notCompacted.length === 0 && failedRuns.length === 0 && compacted.length > 0,
        detail:
          notCompacted.length === 0 && failedRuns.length === 0
            ? `${compactedPartitions.size}/${partitions.length} partitions, ${runs.length} runs`
            : `not clustered: ${notCompacted.join(', ') || 'none'}; failed runs: ${failedRuns.map((r) => `${r.execution} (${r.error ?? r.status})`).join(', ') || 'none'}`,
      },
      {
        name: 'every committed group verified',
        ok: compacted.length > 0 && unverified.length === 0,
        detail:
          unverified.length === 0
            ? `${compacted.reduce((n, r) => n + r.groupsVerified, 0)} groups re-read before their replacecommit`
            : `unverified: ${unverified.map((r) => `${r.partition} (${r.groupsVerified}/${r.groupsDone} groups)`).join(', ')}`,
      },
      {
        name: 'one replacecommit per group, every insert commit completed',
        ok: timeline.replacecommits === groupsDone && groupsDone > 0 && timeline.commits === total,
        detail: `${timeline.replacecommits} replacecommits for ${groupsDone} groups; ${timeline.commits} of ${total} insert commits completed`,
      },
      {
        name: 'the writer committed while clustering ran',
        ok: partitions.length < 2 || commitsDuringRuns > 0,
        detail: `${commitsDuringRuns} of ${total} insert commits made while a clustering run was running`,
      },
      {
        name: 'live rows = every appended row',
        ok: rows.live === appendedRows && rows.onlyAppended === 0 && rows.onlyLive === 0,
        detail: `${rows.live} live rows at ${timeline.latest}, ${appendedRows} appended; ${rows.onlyAppended} only appended, ${rows.onlyLive} only live`,
      },
      {
        name: 'fewer live base files',
        ok: live.baseFiles < total && live.logFiles === 0,
        detail: `${total} base files appended → ${live.baseFiles} live (${live.logFiles} log files)`,
      },
      {
        name: 'no pending instant or held lock left',
        ok: timeline.pending === 0 && !lockLeft,
        detail: `${timeline.pending} requested/inflight instants; storage lock ${lockLeft ? 'still held' : 'free'}`,
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
      ok: checks.every((c) => c.ok),
      format: 'hudi',
      checks,
      options: {
        days: options.days,
        batches: options.batches,
        tableVersion,
        policy: demoPolicy(options),
      },
      appended: { commits: total, baseFiles: total, rows: appendedRows, commitsDuringRuns },
      timeline,
      live,
      rows,
      runs,
      stagingLeft,
      lockLeft,
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

function timelineSummary(state: HudiTableState): HudiDemoTimeline {
  const { timeline } = state;
  const writes = timeline.completedWrites.map((w) => w.instant.action);
  const pending =
    timeline.pendingPlans.length +
    timeline.pendingReplaces.length +
    timeline.pendingWrites.length +
    timeline.pendingRollbacks.length;
  return {
    tableVersion: state.config.version,
    commits: writes.filter((a) => a === 'commit').length,
    replacecommits: writes.filter((a) => a === 'replacecommit').length,
    pending,
    latest: timeline.latestCompletedWrite?.time ?? '(none)',
  };
}

function liveFiles(state: HudiTableState): HudiLiveFiles {
  let baseFiles = 0;
  let logFiles = 0;
  let bytes = 0;
  for (const partition of state.partitions)
    for (const slice of partition.liveSlices) {
      if (slice.baseFile !== undefined) {
        baseFiles += 1;
        bytes += slice.baseFile.size;
      }
      logFiles += slice.logFiles.length;
    }
  return { baseFiles, logFiles, bytes, partitions: state.partitions.length };
}

/**
 * The live slices' rows (their base files, copied to `copyDir`; the appender writes no log files) against every
 * base file the appender committed (in `appendedDir`), as multisets (EXCEPT ALL both ways) in DuckDB.
 */
async function compareLiveRows(
  db: DemoDuckDb,
  store: ObjectStore,
  state: HudiTableState,
  appendedDir: string,
  copyDir: string,
): Promise<{ live: number; onlyAppended: number; onlyLive: number }> {
  await mkdir(copyDir, { recursive: true });
  let copied = 0;
  for (const partition of state.partitions)
    for (const slice of partition.liveSlices) {
      if (slice.logFiles.length > 0)
        throw new Error(`file group ${slice.fileId} has log files; the demo writes none`);
      if (slice.baseFile === undefined) continue;
      await writeFile(path.join(copyDir, slice.baseFile.name), await store.get(slice.baseFile.key));
      copied += 1;
    }
  const scan = (dir: string) => `SELECT ${ROW_COLUMNS} FROM read_parquet(${sqlString(`${dir}/*.parquet`)})`;
  const count = async (sql: string) => Number(await db.scalar(`SELECT count(*) FROM (${sql})`));
  if (copied === 0) return { live: 0, onlyAppended: await count(scan(appendedDir)), onlyLive: 0 };
  return {
    live: await count(scan(copyDir)),
    onlyAppended: await count(`${scan(appendedDir)} EXCEPT ALL ${scan(copyDir)}`),
    onlyLive: await count(`${scan(copyDir)} EXCEPT ALL ${scan(appendedDir)}`),
  };
}

/** Whether the storage lock's file names a holder whose lease still runs (a run that did not release it). */
export async function hudiLockHeld(store: ObjectStore): Promise<boolean> {
  const lock = new StorageBasedHudiLock({ store, tableRoot: DEMO_TABLE, clock: systemClock });
  const current = await lock.read();
  return current !== undefined && isStorageLockLive(current.data, Date.now());
}

/** The text report of a Hudi demo run. Pure formatting. */
export function formatHudiDemoReport(result: HudiDemoResult): string {
  const { days, batches, tableVersion } = result.options;
  const { timeline, live } = result;
  const out = [
    '',
    `== Hudi Copy-on-Write table events (table version ${tableVersion}): ${days} partitions × ${batches} insert commits ==`,
    '',
    `timeline: latest completed instant ${timeline.latest}; ${timeline.commits} insert commits by the writer, ${timeline.replacecommits} replacecommits (clusterings) by lake-compactor, ${timeline.pending} pending instants`,
    `base files: ${result.appended.baseFiles} committed by the writer → ${live.baseFiles} live at the latest instant (${formatBytes(live.bytes)}), ${live.partitions} partitions; replaced file groups stay on storage for the table's cleaner`,
    `rows: ${result.appended.rows} appended → ${result.rows.live} live; ${result.appended.commitsDuringRuns} of ${result.appended.commits} insert commits made while a clustering ran`,
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
  if (result.dataDir !== undefined)
    out.push(
      `Kept: ${result.dataDir}/appended (the base files the writer committed), ${result.dataDir}/live (the live base files) and ${result.dataDir}/table (the whole table with its timeline).`,
    );
  out.push(result.ok ? 'All checks held.' : 'FAILED: see the ✘ checks above.');
  return `${out.join('\n')}\n`;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
