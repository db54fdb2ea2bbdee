// `npm run demo -- --format hudi --hudi-table-type mor`: the Hudi demo on a Merge-on-Read table. The project's own
// appender (sample-hudi.ts) streams, partition after partition and under the table's storage lock, insert
// deltacommits (new base files) and deltacommits of updates (new versions of existing records, in log files of
// their slices) while the real stack — profiler, sweep, state machine — compacts each partition through Hudi's
// compaction protocol (a compaction plan, then one completed `commit` for its slices) and clusters what is left of
// small base files. Then the checks read the table back through its timeline:
//   - every compaction's new base files hold exactly the merged view (base + logs, merged by record key and `ts`) of
//     the slices its plan named, at its instant: rows before and after the compaction, as multisets;
//   - the merged view of the live slices now is exactly the latest version of every record the appender wrote
//     (kept by the appender, independently of the reader);
//   - every partition compacted, no run failed, no pending instant, lock, staging or dead letter left.
//
// How the stream gets the stack to compact: the profiler counts what a partition's run would rewrite — its small
// base-only file slices, or, once its compaction is due (the table's trigger met, no other compaction pending on the
// table: compaction-trigger.ts), the base and log files of its slices with logs — and a run's plan step compacts first
// when that compaction is due. So each partition gets a few inserts (fewer than the policy's minimum of small files)
// and delta commits updating them — while the previous partition's run goes on — then, once the previous
// partition's compaction completed, the remaining inserts: the updated slices make a run due as soon as no other
// compaction is pending (it compacts them), and a later run clusters the partition's base files.
//
// As in the other demos, nothing here decides what the system does: it commits, fires the sweep's schedule, watches
// the executions and reads the results back.
import { rmSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { App } from 'aws-cdk-lib';
import { parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { LakeCompactorStack } from '../../infra/app.js';
import type { LocalCloud } from '../../infra/local/local-cloud.js';
import { onProcessExit } from '../../infra/local/process-hygiene.js';
import { S3ObjectStore } from '../adapters/s3-object-store.js';
import { mergeFileSlice } from '../core/formats/hudi/compaction-merge.js';
import { compactionPolicy, readPlan } from '../core/formats/hudi/compaction-run.js';
import { StorageBasedHudiLock } from '../core/formats/hudi/lock/index.js';
import type { MergePolicy } from '../core/formats/hudi/log/index.js';
import { type HudiTableState, readHudiTable } from '../core/formats/hudi/table-state.js';
import { isCommitted } from '../core/formats/hudi/timeline.js';
import { DEFAULT_WORK_ROOT, workFolder } from '../core/workflow/layout.js';
import { systemClock } from '../ports/clock.js';
import type { ObjectStore } from '../ports/object-store.js';
import { hudiDemoPartitions, hudiLockHeld } from './demo-hudi.js';
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
import {
  type AppenderRow,
  type AppenderTableVersion,
  appenderLatestRows,
  appendHudiDeltaCommit,
  appendHudiInsert,
  createHudiMorTable,
  MOR_ROW_COLUMNS,
} from './sample-hudi.js';

/** Delta commits of updates per partition, each updating this share of every slice it touches. */
const DELTA_COMMITS_PER_PARTITION = 2;
const UPDATE_FRACTION = 0.3;

export interface HudiMorDemoOptions {
  /** Partitions (`byteField` values 1, 2, …) the writer fills one after another. */
  readonly days: number;
  /** Insert deltacommits (one new file group each) per partition; at least 3. */
  readonly batches: number;
  /** Keep the whole table (timeline, base and log files) after the run. */
  readonly keep?: boolean;
  /** Hudi table version the appender creates. @default 8 */
  readonly tableVersion?: AppenderTableVersion;
  /** How often the sweep schedule is fired, ms. @default 1000 */
  readonly sweepIntervalMs?: number;
  /** Give up waiting for compactions this long after the last commit, ms. @default 120000 */
  readonly settleTimeoutMs?: number;
}

/** One compaction on the timeline, checked against the merged view of the slices its plan named. */
export interface HudiCompactionCheck {
  readonly instant: string;
  readonly partitions: readonly string[];
  readonly slices: number;
  readonly logFiles: number;
  /** Rows of the merged view of its input slices at its instant, and of its new base files. */
  readonly rowsBefore: number;
  readonly rowsAfter: number;
  /** Rows only in one of the two (multisets, every column but `_hoodie_file_name`). */
  readonly onlyBefore: number;
  readonly onlyAfter: number;
}

export interface HudiMorDemoResult {
  readonly ok: boolean;
  readonly format: 'hudi';
  readonly tableType: 'MERGE_ON_READ';
  readonly checks: readonly DemoCheck[];
  readonly options: {
    readonly days: number;
    readonly batches: number;
    readonly tableVersion: number;
    readonly policy: Readonly<Record<string, number>>;
  };
  /** What the appender committed. */
  readonly appended: {
    readonly insertCommits: number;
    readonly deltaCommits: number;
    readonly logFiles: number;
    readonly records: number;
    readonly updates: number;
    /** Commits made while a run was running (before and after the commit). */
    readonly commitsDuringRuns: number;
  };
  readonly timeline: {
    readonly tableVersion: number;
    readonly deltacommits: number;
    readonly compactions: number;
    readonly replacecommits: number;
    readonly pending: number;
    readonly latest: string;
  };
  readonly compactions: readonly HudiCompactionCheck[];
  /** The merged view of the live slices against the appender's latest records. */
  readonly rows: {
    readonly live: number;
    readonly latest: number;
    readonly onlyLatest: number;
    readonly onlyLive: number;
    readonly liveLogFiles: number;
  };
  readonly runs: readonly DemoRun[];
  readonly stagingLeft: readonly string[];
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
 * The policy of the Merge-on-Read demo table: a run is due at `minInputFiles` small base-only slices, one more than
 * the inserts made before a partition's delta commits, so the run comes once they are committed (and compacts them).
 */
export function hudiMorDemoPolicy(options: { batches: number; days: number }): Record<string, number> {
  return { ...demoPolicy(options), minInputFiles: Math.max(2, Math.ceil(options.batches / 2)) };
}

/** The demo stack: the Hudi demo's table, compacted after every delta commit to a partition (the trigger at 1). */
export function hudiMorDemoStack(options: { batches: number; days: number }): LakeCompactorStack {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  return new LakeCompactorStack(app, 'LakeCompactorHudiMorDemo', {
    compactor: {
      tables: [
        {
          name: DEMO_TABLE,
          bucketName: DEMO_BUCKET,
          prefix: `${DEMO_TABLE}/`,
          format: 'hudi',
          hudiLock: { provider: 'storage' },
          hudiIndexType: 'BLOOM',
          hudiCompactionDeltaCommits: 1,
          policy: hudiMorDemoPolicy(options),
        },
      ],
    },
  });
}

/** Rows of insert `i` of the stream: varied, as a real stream's are. */
function rowsOf(i: number): number {
  return 40 + ((i * 37) % 60);
}

/** Runs the Merge-on-Read Hudi demo. Never throws for a failed check (see `ok`); throws only when it cannot run. */
export async function runHudiMorDemo(
  options: HudiMorDemoOptions,
  progress: DemoProgress,
): Promise<HudiMorDemoResult> {
  if (options.batches < 3)
    throw new Error(
      `the Merge-on-Read demo needs at least 3 inserts per partition (got ${options.batches}): a few updated before the rest trigger the run`,
    );
  const started = performance.now();
  const restoreEnv = quietHandlers();
  const root = await mkdtemp(path.join(tmpdir(), 'lake-compactor-hudi-demo-'));
  const unhookRoot = options.keep
    ? () => undefined
    : onProcessExit(() => rmSync(root, { recursive: true, force: true }));
  let cloud: LocalCloud | undefined;
  let sweep: SweepLoop | undefined;
  try {
    const stack = hudiMorDemoStack(options);
    const policy = hudiMorDemoPolicy(options);
    progress.line('Starting the local cloud (s3rver, DynamoDB Local, Step Functions) with a Hudi MoR table…');
    cloud = await startDemoCloud(stack);
    const running = cloud;
    const startupMs = performance.now() - started;
    progress.line(`Local cloud up in ${(startupMs / 1000).toFixed(1)} s.`);

    const partitions = hudiDemoPartitions(options.days);
    const before = (policy.minInputFiles ?? 2) - 1;
    const perPartition = options.batches + DELTA_COMMITS_PER_PARTITION;
    const total = options.days * perPartition;
    const watcher = new PartitionRunWatcher(running, partitions, progress, 'groups');
    const lake = new S3ObjectStore({ client: running.s3, bucket: DEMO_BUCKET });
    const tableVersion = options.tableVersion ?? 8;
    const table = await createHudiMorTable(lake, DEMO_TABLE, tableVersion);
    const lock = new StorageBasedHudiLock({ store: lake, tableRoot: DEMO_TABLE, clock: systemClock });
    const commitOptions = { clock: () => Date.now(), lock };
    sweep = new SweepLoop(running, stack, () => watcher.poll(), progress, options.sweepIntervalMs ?? 1000);

    const streamStarted = performance.now();
    let commitsDuringRuns = 0;
    let insertCommits = 0;
    let deltaCommits = 0;
    let logFiles = 0;
    let updates = 0;
    let done = 0;
    progress.written?.(0, total);
    const anyRunning = () => running.executions.some((e) => e.status === 'RUNNING');
    const runStarted = (partition: string) =>
      running.executions.some(
        (e) => (e.input as { partition?: unknown } | undefined)?.partition === partition,
      );
    const counted = async (commit: () => Promise<void>) => {
      const during = anyRunning();
      await commit();
      if (during && anyRunning()) commitsDuringRuns += 1;
      done += 1;
      progress.written?.(done, total);
      watcher.poll();
    };
    for (const [p, partition] of partitions.entries()) {
      // The next partition waits for the previous one's run to start, so its commits land while that run compacts.
      const previous = partitions[p - 1];
      if (previous !== undefined) {
        const waitUntil = performance.now() + (options.settleTimeoutMs ?? 120_000);
        while (!runStarted(previous) && !watcher.anyFailed() && performance.now() < waitUntil) {
          await sleep(100);
          watcher.poll();
        }
      }
      const insert = (b: number) =>
        counted(async () => {
          await appendHudiInsert(table, partition, rowsOf(p * options.batches + b), commitOptions);
          insertCommits += 1;
        });
      for (let b = 0; b < before; b += 1) await insert(b);
      for (let d = 0; d < DELTA_COMMITS_PER_PARTITION; d += 1)
        await counted(async () => {
          const commit = await appendHudiDeltaCommit(table, partition, {
            ...commitOptions,
            fraction: UPDATE_FRACTION,
          });
          if (commit === undefined) return;
          deltaCommits += 1;
          logFiles += commit.logKeys.length;
          updates += commit.updated;
        });
      // The inserts that make the run due wait for the previous partition's compaction to complete: the workflow
      // runs one compaction at a time on a table, and a run planned while another is pending clusters instead.
      if (previous !== undefined) {
        const waitUntil = performance.now() + (options.settleTimeoutMs ?? 120_000);
        while (!watcher.anyFailed() && performance.now() < waitUntil) {
          if (partitionsCompacted(await readHudiTable(lake, DEMO_TABLE)).has(previous)) break;
          await sleep(300);
          watcher.poll();
        }
      }
      for (let b = before; b < options.batches; b += 1) await insert(b);
    }
    const streamMs = performance.now() - streamStarted;
    progress.line(
      `Committed ${insertCommits} insert and ${deltaCommits} update deltacommits (${logFiles} log files) in ${(streamMs / 1000).toFixed(1)} s; waiting for compactions…`,
    );

    // Settle: every partition compacted (a completed compaction commit names it), or a run failed, or time is up.
    const settleStarted = performance.now();
    const deadline = settleStarted + (options.settleTimeoutMs ?? 120_000);
    for (;;) {
      watcher.poll();
      const compacted = partitionsCompacted(await readHudiTable(lake, DEMO_TABLE));
      if (partitions.every((p) => compacted.has(p)) || watcher.anyFailed() || performance.now() > deadline)
        break;
      await sleep(500);
    }
    await sweep.stop();
    await running.drain(60_000).catch((error: unknown) => {
      progress.line(`drain: ${error instanceof Error ? error.message : String(error)}`);
    });
    watcher.poll();
    const settleMs = performance.now() - settleStarted;

    const checksStarted = performance.now();
    const state = await readHudiTable(lake, DEMO_TABLE);
    const policyOfTable = compactionPolicy(state);
    const compactions: HudiCompactionCheck[] = [];
    for (const write of compactionsOf(state))
      compactions.push(await checkCompaction(lake, state, policyOfTable, write.instant.time));
    const latest = appenderLatestRows(table);
    const rows = await compareLiveRows(lake, state, policyOfTable, latest);
    const lockLeft = await hudiLockHeld(lake);
    const stagingLeft: string[] = [];
    const staging = workFolder(DEFAULT_WORK_ROOT, 'staging');
    for await (const object of lake.listAll(staging)) stagingLeft.push(object.key);
    if (options.keep)
      for await (const object of lake.listAll(`${DEMO_TABLE}/`)) {
        const file = path.join(root, 'table', object.key.slice(DEMO_TABLE.length + 1));
        await mkdir(path.dirname(file), { recursive: true });
        await writeFile(file, await lake.get(object.key));
      }
    const checksMs = performance.now() - checksStarted;

    const timeline = timelineSummary(state);
    const runs = watcher.runs();
    const failedRuns = runs.filter((r) => r.status !== 'SUCCEEDED' && r.status !== 'RUNNING');
    const compactedPartitions = new Set(compactions.flatMap((c) => c.partitions));
    const notCompacted = partitions.filter((p) => !compactedPartitions.has(p));
    const wrong = compactions.filter(
      (c) => c.onlyBefore > 0 || c.onlyAfter > 0 || c.rowsBefore !== c.rowsAfter,
    );
    const checks: DemoCheck[] = [
      {
        name: 'every partition compacted, no run failed',
        ok: compactions.length > 0 && notCompacted.length === 0 && failedRuns.length === 0,
        detail:
          notCompacted.length === 0 && failedRuns.length === 0
            ? `${compactions.length} compactions over ${partitions.length} partitions, ${runs.length} runs`
            : `not compacted: ${notCompacted.join(', ') || 'none'}; failed runs: ${failedRuns.map((r) => `${r.execution} (${r.error ?? r.status})`).join(', ') || 'none'}`,
      },
      {
        name: 'each compaction = the merged view of its slices',
        ok: compactions.length > 0 && wrong.length === 0,
        detail:
          wrong.length === 0
            ? `${compactions.reduce((n, c) => n + c.slices, 0)} slices (${compactions.reduce((n, c) => n + c.logFiles, 0)} log files): ${compactions.reduce((n, c) => n + c.rowsBefore, 0)} rows merged before = ${compactions.reduce((n, c) => n + c.rowsAfter, 0)} rows in the new base files`
            : wrong
                .map(
                  (c) =>
                    `${c.instant}: ${c.rowsBefore} before, ${c.rowsAfter} after, ${c.onlyBefore} only before, ${c.onlyAfter} only after`,
                )
                .join('; '),
      },
      {
        name: 'merged view = latest version of every record',
        ok: rows.onlyLatest === 0 && rows.onlyLive === 0 && rows.live === rows.latest,
        detail: `${rows.live} live rows (${rows.liveLogFiles} live log files) at ${timeline.latest}, ${rows.latest} records written; ${rows.onlyLatest} only written, ${rows.onlyLive} only live`,
      },
      {
        name: 'every deltacommit completed',
        ok: timeline.deltacommits === insertCommits + deltaCommits && deltaCommits > 0,
        detail: `${timeline.deltacommits} deltacommits on the timeline for ${insertCommits} inserts and ${deltaCommits} updates`,
      },
      {
        name: 'the writer committed while runs ran',
        ok: partitions.length < 2 || commitsDuringRuns > 0,
        detail: `${commitsDuringRuns} of ${done} commits made while a run was running`,
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
      tableType: 'MERGE_ON_READ',
      checks,
      options: { days: options.days, batches: options.batches, tableVersion, policy },
      appended: {
        insertCommits,
        deltaCommits,
        logFiles,
        records: latest.length,
        updates,
        commitsDuringRuns,
      },
      timeline,
      compactions,
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
    await cloud?.stop();
    if (!options.keep) await rm(root, { recursive: true, force: true });
    unhookRoot();
    restoreEnv();
  }
}

/** The completed compactions (`commit` with compacted=true), in timeline order. */
function compactionsOf(state: HudiTableState) {
  return state.timeline.completedWrites.filter((w) => w.instant.action === 'commit' && w.metadata.compacted);
}

/** The partitions a completed compaction wrote to. */
function partitionsCompacted(state: HudiTableState): Set<string> {
  return new Set(compactionsOf(state).flatMap((w) => [...w.metadata.partitionToWriteStats.keys()]));
}

function timelineSummary(state: HudiTableState): HudiMorDemoResult['timeline'] {
  const { timeline } = state;
  const actions = timeline.completedWrites.map((w) => w.instant.action);
  return {
    tableVersion: state.config.version,
    deltacommits: actions.filter((a) => a === 'deltacommit').length,
    compactions: compactionsOf(state).length,
    replacecommits: actions.filter((a) => a === 'replacecommit').length,
    pending:
      timeline.pendingPlans.length +
      timeline.pendingReplaces.length +
      timeline.pendingWrites.length +
      timeline.pendingRollbacks.length,
    latest: timeline.latestCompletedWrite?.time ?? '(none)',
  };
}

/** One row as text: the row columns, every number and long as its decimal text. */
function rowText(row: Readonly<Record<string, unknown>>): string {
  return JSON.stringify(
    MOR_ROW_COLUMNS.map((c) => (row[c] === null || row[c] === undefined ? null : String(row[c]))),
  );
}

async function parquetRows(store: ObjectStore, key: string): Promise<Record<string, unknown>[]> {
  const bytes = await store.get(key);
  const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  return (await parquetReadObjects({ file, compressors })) as Record<string, unknown>[];
}

/** The merged view of one slice at `instant`: its base rows less those the logs replace or delete, plus log rows. */
async function mergedSlice(
  store: ObjectStore,
  state: HudiTableState,
  policy: MergePolicy,
  slice: { baseKey: string; logKeys: readonly string[] },
  instant: string,
): Promise<string[]> {
  const base = await parquetRows(store, slice.baseKey);
  if (slice.logKeys.length === 0) return base.map(rowText);
  const merged = await mergeFileSlice(store, slice, policy, (i) => isCommitted(state.timeline, i), instant);
  const dropped = new Set(merged.merge.dropPositions);
  return [...base.filter((_, i) => !dropped.has(i)), ...merged.merge.append].map(rowText);
}

/** What is in `a` and not in `b`, as multisets. */
function minus(a: readonly string[], b: readonly string[]): number {
  const counts = new Map<string, number>();
  for (const r of b) counts.set(r, (counts.get(r) ?? 0) + 1);
  let only = 0;
  for (const r of a) {
    const n = counts.get(r) ?? 0;
    if (n === 0) only += 1;
    else counts.set(r, n - 1);
  }
  return only;
}

function keyIn(partition: string, name: string): string {
  return `${DEMO_TABLE}/${partition === '' ? name : `${partition}/${name}`}`;
}

/**
 * Compaction `instant` against the merged view of the slices its plan (`.compaction.requested`) named, merged at
 * that instant: the rows of its new base files (the completed commit's write stats) must be the same multiset.
 */
async function checkCompaction(
  store: ObjectStore,
  state: HudiTableState,
  policy: MergePolicy,
  instant: string,
): Promise<HudiCompactionCheck> {
  const operations = await readPlan(store, state, instant);
  const before: string[] = [];
  let logFiles = 0;
  for (const op of operations) {
    const partition = op.partitionPath ?? '';
    const logs = (op.deltaFilePaths ?? []).map((n) => keyIn(partition, n));
    logFiles += logs.length;
    before.push(
      ...(await mergedSlice(
        store,
        state,
        policy,
        { baseKey: keyIn(partition, op.dataFilePath ?? ''), logKeys: logs },
        instant,
      )),
    );
  }
  const write = compactionsOf(state).find((w) => w.instant.time === instant);
  const after: string[] = [];
  const partitions: string[] = [];
  for (const [partition, stats] of write?.metadata.partitionToWriteStats ?? new Map()) {
    partitions.push(partition);
    for (const stat of stats)
      if (stat.path !== undefined)
        after.push(...(await parquetRows(store, `${DEMO_TABLE}/${stat.path}`)).map(rowText));
  }
  return {
    instant,
    partitions,
    slices: operations.length,
    logFiles,
    rowsBefore: before.length,
    rowsAfter: after.length,
    onlyBefore: minus(before, after),
    onlyAfter: minus(after, before),
  };
}

/** The merged view of every live slice now against every record's latest version as the appender wrote it. */
async function compareLiveRows(
  store: ObjectStore,
  state: HudiTableState,
  policy: MergePolicy,
  latest: readonly AppenderRow[],
): Promise<HudiMorDemoResult['rows']> {
  const live: string[] = [];
  let liveLogFiles = 0;
  for (const slice of state.partitions.flatMap((p) => p.liveSlices)) {
    if (slice.baseFile === undefined)
      throw new Error(`file group ${slice.fileId} has no base file; the appender writes one first`);
    liveLogFiles += slice.logFiles.length;
    live.push(
      ...(await mergedSlice(
        store,
        state,
        policy,
        { baseKey: slice.baseFile.key, logKeys: slice.logFiles.map((l) => l.key) },
        '99999999999999999',
      )),
    );
  }
  const written = latest.map((r) => rowText(r as unknown as Record<string, unknown>));
  return {
    live: live.length,
    latest: written.length,
    onlyLatest: minus(written, live),
    onlyLive: minus(live, written),
    liveLogFiles,
  };
}

/** The text report of a Merge-on-Read Hudi demo run. Pure formatting. */
export function formatHudiMorDemoReport(result: HudiMorDemoResult): string {
  const { days, batches, tableVersion } = result.options;
  const { timeline, appended } = result;
  const out = [
    '',
    `== Hudi Merge-on-Read table events (table version ${tableVersion}): ${days} partitions × ${batches} inserts + ${DELTA_COMMITS_PER_PARTITION} update deltacommits ==`,
    '',
    `timeline: latest completed instant ${timeline.latest}; ${timeline.deltacommits} deltacommits by the writer, ${timeline.compactions} compactions and ${timeline.replacecommits} replacecommits (clusterings) by lake-compactor, ${timeline.pending} pending instants`,
    `writer: ${appended.insertCommits} insert deltacommits, ${appended.deltaCommits} update deltacommits writing ${appended.logFiles} log files (${appended.updates} new record versions); ${appended.records} records; ${appended.commitsDuringRuns} commits made while a run ran`,
    `rows: ${result.rows.live} in the merged view now (${result.rows.liveLogFiles} live log files), ${result.rows.latest} records written`,
    '',
    `== Compactions (${result.compactions.length}) ==`,
    ...result.compactions.map(
      (c) =>
        `${c.instant}  ${c.partitions.join(', ')}  ${c.slices} slices, ${c.logFiles} log files  ${c.rowsBefore} rows merged before → ${c.rowsAfter} rows after`,
    ),
    '',
    `== Runs (${result.runs.length}) ==`,
    ...result.runs.map(
      (r) =>
        `${r.partition}  ${r.outcome ?? r.status}  ${r.filesBefore}→${r.filesAfter} files  ${r.groupsVerified}/${r.groups} groups verified  ${(r.durationMs / 1000).toFixed(1)} s${r.error === undefined ? '' : `  ${r.error}`}`,
    ),
    '',
    '== Checks ==',
    ...result.checks.map((c) => `${c.ok ? '✔' : '✘'} ${c.name}: ${c.detail}`),
    '',
    `Time: ${(result.timingsMs.total / 1000).toFixed(1)} s (local cloud start ${(result.timingsMs.startup / 1000).toFixed(1)} s, streaming ${(result.timingsMs.stream / 1000).toFixed(1)} s, last runs ${(result.timingsMs.settle / 1000).toFixed(1)} s, read-back and checks ${(result.timingsMs.checks / 1000).toFixed(1)} s)`,
  ];
  if (result.dataDir !== undefined)
    out.push(`Kept: ${result.dataDir}/table (the whole table with its timeline, base and log files).`);
  out.push(result.ok ? 'All checks held.' : 'FAILED: see the ✘ checks above.');
  return `${out.join('\n')}\n`;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
