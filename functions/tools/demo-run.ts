// The local-cloud demo end to end: streams a sample lake into the real stack on loopback, lets the profiler
// and sweep trigger compaction, then checks with DuckDB that every row survived; cleans up whatever happens.
//
// Nothing here decides anything the system does: it writes objects, fires the sweep's schedule (the 15-minute
// rule, compressed to a second), watches executions and reads the results back. Every figure shown comes
// from the run's own outputs, the state table or an independent DuckDB read of the bucket.
import { rmSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { QueryCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { App } from 'aws-cdk-lib';
import { LakeCompactorStack } from '../../infra/app.js';
import { LocalCloud } from '../../infra/local/local-cloud.js';
import { onProcessExit } from '../../infra/local/process-hygiene.js';
import type { LocalExecution } from '../../infra/local/step-functions.js';
import { S3ObjectStore } from '../adapters/s3-object-store.js';
import type { RunSummary } from '../core/workflow/finalize.js';
import { DEFAULT_WORK_ROOT, workFolder } from '../core/workflow/layout.js';
import { loadTableConfigs } from '../shared/table-source.js';
import {
  benchmarkReads,
  type DemoDuckDb,
  multisetDifference,
  openDemoDuckDb,
  type QueryTiming,
  sqlString,
  type TableTotals,
  tableTotals,
} from './demo-duckdb.js';
import { type DemoVacuum, demoVacuumDryRun } from './demo-vacuum.js';
import { writeSampleLake } from './sample-lake.js';

export const DEMO_BUCKET = 'lake';
export const DEMO_TABLE = 'events';
const TARGET_FILE_BYTES = 128 * 1024 * 1024;
const SMALL_RATIO = 0.75;
const DAY_MS = 86_400_000;

export interface DemoOptions {
  /** Days (partitions) of the sample lake; the last one is today (UTC). */
  readonly days: number;
  /** Micro-batch files per day. */
  readonly batches: number;
  /** Keep the before/after copies of the lake (the local cloud itself is always stopped). */
  readonly keep?: boolean;
  /** How often the sweep schedule is fired, ms (stands in for its 15-minute rate). @default 1000 */
  readonly sweepIntervalMs?: number;
  /** Give up waiting for compactions this long after the last write, ms. @default 120000 */
  readonly settleTimeoutMs?: number;
  /** The wall clock's "today" (for the partition dates). @default now */
  readonly now?: number;
  readonly seed?: number;
}

/** Where live progress goes (lines, and optionally a progress display). */
export interface DemoProgress {
  /** A line about something that happened (a partition triggered, a run ended). */
  line(text: string): void;
  /** Files written so far, of `total`. */
  written?(done: number, total: number): void;
  /** Partitions compacted so far, of `total`, and runs in flight. */
  compacted?(done: number, total: number, running: number): void;
}

/** The layout of one copy of the table. */
export interface LayoutStats {
  readonly partitions: number;
  readonly files: number;
  readonly bytes: number;
  readonly avgFileBytes: number;
  /** Share of files below 0.75 × the 128 MiB target. */
  readonly smallFileRatio: number;
  /** Uncompressed ÷ compressed column-chunk bytes, from the Parquet footers. */
  readonly compressionRatio: number;
}

/** One compaction run, from its execution (output and history). */
export interface DemoRun {
  readonly partition: string;
  readonly execution: string;
  /** Who started it (`profiler`, `sweep`, or `operator` when its input names none) and the verdict's reasons. */
  readonly trigger: string;
  readonly reasons: readonly string[];
  readonly status: string;
  readonly outcome?: string;
  readonly filesBefore: number;
  readonly filesAfter: number;
  readonly rows: number;
  readonly groups: number;
  readonly groupsDone: number;
  readonly failedGroups: number;
  /** Groups whose Verify step returned `verified` (read from the execution's event history). */
  readonly groupsVerified: number;
  /** Rows the Verify steps re-read from the outputs. */
  readonly rowsVerified: number;
  readonly visibilityWindowMs: number;
  readonly estimatedCostUsd: number;
  readonly durationMs: number;
  readonly error?: string;
}

export interface DemoCheck {
  readonly name: string;
  readonly ok: boolean;
  readonly detail: string;
}

export interface DemoResult {
  readonly ok: boolean;
  readonly checks: readonly DemoCheck[];
  readonly options: {
    readonly days: number;
    readonly batches: number;
    readonly policy: Readonly<Record<string, number>>;
  };
  readonly before: LayoutStats;
  readonly after: LayoutStats;
  readonly totals: { readonly before: TableTotals; readonly after: TableTotals };
  readonly multiset: { readonly onlyBefore: number; readonly onlyAfter: number };
  readonly runs: readonly DemoRun[];
  /** History items in the state table, per partition. */
  readonly historyItems: number;
  readonly benchmark: readonly QueryTiming[];
  readonly visibilityWindowMs: { readonly max: number; readonly total: number };
  readonly estimatedCostUsd: number;
  /** The vacuum core's dry-run, now and projected past the retention (information, not a check). */
  readonly vacuum?: DemoVacuum | { readonly error: string };
  readonly stagingLeft: readonly string[];
  readonly deadLetters: number;
  readonly timingsMs: {
    readonly startup: number;
    readonly stream: number;
    readonly settle: number;
    readonly checks: number;
    readonly total: number;
  };
  /** The kept data folder (only with `keep`). */
  readonly dataDir?: string;
}

/** Today's date (UTC) minus `days - 1`, so the last partition is today and all are inside the look-back. */
export function demoStartDate(now: number, days: number): string {
  return new Date(now - (days - 1) * DAY_MS).toISOString().slice(0, 10);
}

/**
 * Policy overrides that turn hours into seconds. The writer closes a day after `batches` files, so the
 * trigger is set to fire at that count (`minInputFiles`) with no quiet window: a quiet window of seconds
 * cannot be shown, because the sweep finds waiting partitions through an index whose due times are rounded
 * up to 5 minutes (DUE_GRANULARITY_MS). No cooldown; a look-back covering every generated day.
 */
export function demoPolicy(options: { batches: number; days: number }): Record<string, number> {
  return {
    minInputFiles: Math.max(2, options.batches),
    quietMinutes: 0,
    cooldownMinutes: 0,
    lookbackDays: Math.max(30, options.days + 2),
  };
}

/** The demo configuration of the real stack: one table `events` on bucket `lake`, daily partitions. */
export function demoStack(options: { batches: number; days: number }): LakeCompactorStack {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  return new LakeCompactorStack(app, 'LakeCompactorDemo', {
    compactor: {
      tables: [
        {
          name: DEMO_TABLE,
          bucketName: DEMO_BUCKET,
          prefix: `${DEMO_TABLE}/`,
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
 * Starts the local cloud with the real `stack`, with one more try when DynamoDB Local misses its start deadline
 * (it occasionally does on a loaded machine). Every demo (Parquet, Delta, Iceberg) starts it the same way.
 */
export async function startDemoCloud(stack: LakeCompactorStack): Promise<LocalCloud> {
  const start = () =>
    LocalCloud.start({
      stack,
      stepFunctions: { waitTimeMs: 1000, retryIntervalMs: 0 },
      sqs: { batchingWindowMs: 200, redeliveryDelayMs: 5 },
    });
  return start().catch((error: unknown) => {
    if (error instanceof Error && error.name === 'LocalCloudStartupError') return start();
    throw error;
  });
}

/** The demo's `count` days (`YYYY-MM-DD`), ending on the day of `now`. */
export function demoDays(now: number, count: number): string[] {
  const startDate = demoStartDate(now, count);
  return Array.from({ length: count }, (_, i) =>
    new Date(Date.parse(`${startDate}T00:00:00Z`) + i * DAY_MS).toISOString().slice(0, 10),
  );
}

/**
 * The sweep schedule (every 15 minutes in a deployment) compressed to `intervalMs`: the catch-up trigger and
 * lease release beside the profiler, which starts most runs itself. It runs while writes stream in, so early
 * days compact while later days are still written — writer and compactor share the bucket, as in production.
 * `onTick` follows the runs after each firing.
 */
export class SweepLoop {
  #running = true;
  readonly #done: Promise<void>;

  constructor(
    cloud: LocalCloud,
    stack: LakeCompactorStack,
    onTick: () => void,
    progress: DemoProgress,
    intervalMs: number,
  ) {
    const rule = stack.compactor.node.findChild('SweepSchedule');
    this.#done = (async () => {
      while (this.#running) {
        await cloud.fire(rule).catch((error: unknown) => {
          progress.line(`sweep failed: ${error instanceof Error ? error.message : String(error)}`);
        });
        onTick();
        await sleep(intervalMs);
      }
    })();
  }

  /** Stops after the firing in progress, and waits for it. */
  async stop(): Promise<void> {
    this.#running = false;
    await this.#done;
  }

  /** Asks the loop to stop without waiting (cleaning up after a failure: the cloud is stopped next). */
  halt(): void {
    this.#running = false;
  }
}

/**
 * The checks every demo that watches Hive-named day partitions makes of its runs: each partition has a compacted
 * run and none failed, and every compacted run verified all its groups and rows.
 */
export function runChecks(runs: readonly DemoRun[], partitions: readonly string[]): DemoCheck[] {
  const compactedRuns = runs.filter((r) => r.status === 'SUCCEEDED' && r.outcome === 'compacted');
  const compactedDays = new Set(compactedRuns.map((r) => r.partition));
  const notCompacted = partitions.filter((p) => !compactedDays.has(p));
  const unverified = compactedRuns.filter(
    (r) => r.failedGroups > 0 || r.groupsVerified !== r.groups || r.rowsVerified !== r.rows,
  );
  const failedRuns = runs.filter((r) => r.status !== 'SUCCEEDED' && r.status !== 'RUNNING');
  return [
    {
      name: 'every partition compacted',
      ok: notCompacted.length === 0 && failedRuns.length === 0,
      detail:
        notCompacted.length === 0 && failedRuns.length === 0
          ? `${compactedDays.size}/${partitions.length} partitions, ${runs.length} runs`
          : `not compacted: ${notCompacted.join(', ') || 'none'}; failed runs: ${failedRuns.map((r) => `${r.execution} (${r.error ?? r.status})`).join(', ') || 'none'}`,
    },
    {
      name: 'every run verified',
      ok: compactedRuns.length > 0 && unverified.length === 0,
      detail:
        unverified.length === 0
          ? `${compactedRuns.reduce((n, r) => n + r.groupsVerified, 0)} groups re-read, ${compactedRuns.reduce((n, r) => n + r.rowsVerified, 0)} rows matched their fingerprints`
          : `unverified: ${unverified.map((r) => `${r.partition} (${r.groupsVerified}/${r.groups} groups, ${r.rowsVerified}/${r.rows} rows)`).join(', ')}`,
    },
  ];
}

/** Runs the whole demo. Never throws for a failed check (see `ok`); throws only when it cannot run at all. */
export async function runDemo(options: DemoOptions, progress: DemoProgress): Promise<DemoResult> {
  const started = performance.now();
  const restoreEnv = quietHandlers();
  const root = await mkdtemp(path.join(tmpdir(), 'lake-compactor-demo-'));
  const beforeDir = path.join(root, 'before');
  const afterDir = path.join(root, 'after');
  // Ctrl-C or a crash must not leave the copies behind either (the local cloud cleans up after itself).
  const unhookRoot = options.keep
    ? () => undefined
    : onProcessExit(() => rmSync(root, { recursive: true, force: true }));
  let cloud: LocalCloud | undefined;
  let db: DemoDuckDb | undefined;
  let sweep: SweepLoop | undefined;
  try {
    const stack = demoStack({ batches: options.batches, days: options.days });
    progress.line('Starting the local cloud (s3rver, DynamoDB Local, Step Functions) with the real stack…');
    cloud = await startDemoCloud(stack);
    const running = cloud;
    const startupMs = performance.now() - started;
    progress.line(`Local cloud up in ${(startupMs / 1000).toFixed(1)} s.`);

    const days = demoDays(options.now ?? Date.now(), options.days);
    const startDate = days[0] ?? '';
    const total = options.days * options.batches;
    const watcher = new ExecutionWatcher(running, days, progress);

    sweep = new SweepLoop(running, stack, () => watcher.poll(), progress, options.sweepIntervalMs ?? 1000);

    // Stream the lake: every micro-batch goes to local S3 (its event to the profiler) and to the local
    // "before" copy DuckDB reads later.
    const streamStarted = performance.now();
    const lake = new S3ObjectStore({ client: running.s3, bucket: DEMO_BUCKET });
    let written = 0;
    progress.written?.(0, total);
    await writeSampleLake(
      async (key, bytes) => {
        const file = path.join(beforeDir, key);
        await mkdir(path.dirname(file), { recursive: true });
        await writeFile(file, bytes);
        await lake.put(key, bytes);
        written += 1;
        progress.written?.(written, total);
        watcher.poll();
      },
      {
        table: DEMO_TABLE,
        days: options.days,
        batches: options.batches,
        startDate,
        ...(options.seed === undefined ? {} : { seed: options.seed }),
      },
    );
    const streamMs = performance.now() - streamStarted;
    progress.line(`Wrote ${written} files in ${(streamMs / 1000).toFixed(1)} s; waiting for compactions…`);

    // Settle: keep sweeping until every partition has a compacted run (or the deadline passes).
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

    // Read the bucket back and check.
    const checksStarted = performance.now();
    const store = new S3ObjectStore({ client: running.s3, bucket: DEMO_BUCKET });
    for await (const object of store.listAll(`${DEMO_TABLE}/`)) {
      const name = object.key.split('/').at(-1) ?? '';
      if (name.startsWith('_') || name.startsWith('.') || !name.endsWith('.parquet')) continue;
      const file = path.join(afterDir, object.key);
      await mkdir(path.dirname(file), { recursive: true });
      await writeFile(file, await store.get(object.key));
    }
    const stagingLeft: string[] = [];
    const staging = workFolder(DEFAULT_WORK_ROOT, 'staging');
    for await (const object of store.listAll(staging)) stagingLeft.push(object.key);
    const historyItems = await countHistory(running, stack, days);

    db = await openDemoDuckDb();
    const tableBefore = path.join(beforeDir, DEMO_TABLE);
    const tableAfter = path.join(afterDir, DEMO_TABLE);
    const before = await layoutStats(db, tableBefore);
    const after = await layoutStats(db, tableAfter);
    const totals = { before: await tableTotals(db, tableBefore), after: await tableTotals(db, tableAfter) };
    const multiset = await multisetDifference(db, tableBefore, tableAfter);
    const benchDay = days[Math.floor(days.length / 2)] ?? startDate;
    const benchmark = await benchmarkReads(db, tableBefore, tableAfter, benchDay);
    const checksMs = performance.now() - checksStarted;

    let vacuum: DemoResult['vacuum'];
    try {
      vacuum = await demoVacuumDryRun({
        s3: running.s3,
        dynamodb: running.dynamodb,
        stateTable: running.tableName(stack.compactor.table),
        tables: loadTableConfigs(running.functionEnv(stack.compactor.sweepFunction)),
        now: Date.now(),
      });
    } catch (error) {
      vacuum = { error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) };
    }

    const runs = watcher.runs();
    const compactedRuns = runs.filter((r) => r.status === 'SUCCEEDED' && r.outcome === 'compacted');
    const checks: DemoCheck[] = [
      ...runChecks(
        runs,
        days.map((d) => `date=${d}`),
      ),
      {
        name: 'row count and revenue unchanged',
        ok:
          totals.before.rows === totals.after.rows &&
          totals.before.revenueUsd === totals.after.revenueUsd &&
          totals.before.rows > 0,
        detail: `before ${totals.before.rows} rows / $${totals.before.revenueUsd}, after ${totals.after.rows} rows / $${totals.after.revenueUsd}`,
      },
      {
        name: 'same rows (EXCEPT ALL both ways)',
        ok: multiset.onlyBefore === 0 && multiset.onlyAfter === 0,
        detail: `${multiset.onlyBefore} rows only before, ${multiset.onlyAfter} only after`,
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
    const windows = compactedRuns.map((r) => r.visibilityWindowMs);
    let dataDir: string | undefined;
    if (options.keep) dataDir = root;
    return {
      ok: checks.every((c) => c.ok),
      checks,
      options: { days: options.days, batches: options.batches, policy: demoPolicy(options) },
      before,
      after,
      totals,
      multiset,
      runs,
      historyItems,
      benchmark,
      visibilityWindowMs: {
        max: windows.length === 0 ? 0 : Math.max(...windows),
        total: windows.reduce((a, b) => a + b, 0),
      },
      estimatedCostUsd: compactedRuns.reduce((n, r) => n + r.estimatedCostUsd, 0),
      ...(vacuum === undefined ? {} : { vacuum }),
      stagingLeft,
      deadLetters: running.deadLetters.length,
      timingsMs: {
        startup: Math.round(startupMs),
        stream: Math.round(streamMs),
        settle: Math.round(settleMs),
        checks: Math.round(checksMs),
        total: Math.round(performance.now() - started),
      },
      ...(dataDir === undefined ? {} : { dataDir }),
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

const EMPTY_METRICS_WARNING = 'No application metrics to publish';

/**
 * Silences the in-process handlers' Powertools logs and EMF metrics, which would bury the demo's output
 * (variables the user set are kept). Powertools still warns about empty metric sets when disabled; dev
 * mode routes that warning through the global console, where exactly that message is dropped. Returns the
 * restore.
 */
export function quietHandlers(): () => void {
  const set: string[] = [];
  for (const [key, value] of [
    ['POWERTOOLS_LOG_LEVEL', 'SILENT'],
    ['POWERTOOLS_METRICS_DISABLED', 'true'],
    ['POWERTOOLS_DEV', 'true'],
  ] as const) {
    if (process.env[key] !== undefined) continue;
    process.env[key] = value;
    set.push(key);
  }
  const warn = console.warn;
  console.warn = (...args: unknown[]) => {
    if (typeof args[0] === 'string' && args[0].startsWith(EMPTY_METRICS_WARNING)) return;
    warn(...args);
  };
  return () => {
    console.warn = warn;
    for (const key of set) delete process.env[key];
  };
}

/** Follows executions as they appear and end, and reports each once. */
export class ExecutionWatcher {
  private readonly seen = new Set<LocalExecution>();
  private readonly ended = new Set<LocalExecution>();

  constructor(
    private readonly cloud: LocalCloud,
    private readonly days: readonly string[],
    private readonly progress: DemoProgress,
  ) {}

  poll(): void {
    for (const execution of this.cloud.executions) {
      const partition = partitionOf(execution);
      if (!this.seen.has(execution)) {
        this.seen.add(execution);
        const input = execution.input as { trigger?: unknown; reasons?: unknown } | undefined;
        const reasons = Array.isArray(input?.reasons) ? input.reasons.map(String).slice(1, 3).join('; ') : '';
        this.progress.line(
          `▶ ${partition}: ${String(input?.trigger ?? 'operator')} started ${execution.name}${reasons === '' ? '' : ` (${reasons})`}`,
        );
      }
      if (execution.status !== 'RUNNING' && !this.ended.has(execution)) {
        this.ended.add(execution);
        const run = describeRun(execution);
        this.progress.line(
          run.status === 'SUCCEEDED'
            ? `✔ ${partition}: ${run.outcome}, ${run.filesBefore} → ${run.filesAfter} files, ${run.rows} rows verified in ${run.groupsVerified}/${run.groups} groups (${(run.durationMs / 1000).toFixed(1)} s)`
            : `✘ ${partition}: ${run.status} ${run.error ?? ''}`,
        );
      }
    }
    const done = new Set(
      this.runs()
        .filter((r) => r.outcome === 'compacted')
        .map((r) => r.partition),
    ).size;
    const active = this.cloud.executions.filter((e) => e.status === 'RUNNING').length;
    this.progress.compacted?.(done, this.days.length, active);
  }

  runs(): DemoRun[] {
    return this.cloud.executions.map(describeRun);
  }

  allCompacted(): boolean {
    const done = new Set(
      this.runs()
        .filter((r) => r.outcome === 'compacted')
        .map((r) => r.partition),
    );
    return this.days.every((d) => done.has(`date=${d}`));
  }

  anyFailed(): boolean {
    return this.cloud.executions.some((e) => e.status !== 'RUNNING' && e.status !== 'SUCCEEDED');
  }
}

function partitionOf(execution: LocalExecution): string {
  const input = execution.input as { partition?: unknown } | undefined;
  return typeof input?.partition === 'string' ? input.partition : '(unknown partition)';
}

/** A run's figures from its output, and its Verify steps' results from the event history. */
export function describeRun(execution: LocalExecution): DemoRun {
  const output = (execution.output ?? {}) as Partial<RunSummary>;
  let groupsVerified = 0;
  let rowsVerified = 0;
  for (const event of execution.history) {
    if (event.type !== 'StateExited' || !event.state.name.startsWith('Verify group')) continue;
    // The Verify task's result is kept at `$.verify` of the state's output (resultPath).
    const exited = event.state.output as { verify?: { state?: unknown; rows?: unknown } } | undefined;
    const result = exited?.verify;
    if (result?.state === 'verified' || result?.state === 'publishing' || result?.state === 'done') {
      groupsVerified += 1;
      rowsVerified += typeof result.rows === 'number' ? result.rows : 0;
    }
  }
  const input = execution.input as { trigger?: unknown; reasons?: unknown } | undefined;
  return {
    partition: partitionOf(execution),
    execution: execution.name,
    trigger: typeof input?.trigger === 'string' ? input.trigger : 'operator',
    reasons: Array.isArray(input?.reasons) ? input.reasons.map(String) : [],
    status: execution.status,
    ...(output.outcome === undefined ? {} : { outcome: output.outcome }),
    filesBefore: output.filesBefore ?? 0,
    filesAfter: output.filesAfter ?? 0,
    rows: output.rows ?? 0,
    groups: output.groups ?? 0,
    groupsDone: output.groupsDone ?? 0,
    failedGroups: output.failedGroups ?? 0,
    groupsVerified,
    rowsVerified,
    visibilityWindowMs: output.visibilityWindowMs ?? 0,
    estimatedCostUsd: output.estimatedCost?.usd ?? 0,
    durationMs:
      output.durationMs ?? (execution.stopDate ?? new Date(0)).getTime() - execution.startDate.getTime(),
    ...(execution.error === undefined ? {} : { error: `${execution.error}: ${execution.cause ?? ''}` }),
  };
}

/** History items (`RUN#…`) the finalize step wrote, over every partition of the demo. */
async function countHistory(cloud: LocalCloud, stack: LakeCompactorStack, days: readonly string[]) {
  let n = 0;
  for (const day of days) {
    const result = await cloud.dynamodb.send(
      new QueryCommand({
        TableName: cloud.tableName(stack.compactor.table),
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :run)',
        ExpressionAttributeValues: {
          ':pk': { S: `PART#${DEMO_TABLE}#date=${day}` },
          ':run': { S: 'RUN#' },
        },
        ConsistentRead: true,
      }),
    );
    n += (result.Items ?? []).map((i) => unmarshall(i)).length;
  }
  return n;
}

/** Files, sizes and compression of a table folder (sizes from the filesystem, ratios from the footers). */
export async function layoutStats(db: DemoDuckDb, tableDir: string): Promise<LayoutStats> {
  const partitions = (await readdir(tableDir, { withFileTypes: true })).filter((d) => d.isDirectory());
  const sizes: number[] = [];
  for (const partition of partitions) {
    for (const name of await readdir(path.join(tableDir, partition.name))) {
      if (name.endsWith('.parquet')) sizes.push((await stat(path.join(tableDir, partition.name, name))).size);
    }
  }
  const bytes = sizes.reduce((a, b) => a + b, 0);
  const [meta] = await db.rows(
    `SELECT sum(total_compressed_size) AS c, sum(total_uncompressed_size) AS u FROM parquet_metadata(${sqlString(`${tableDir}/*/*.parquet`)})`,
  );
  const compressed = Number(meta?.c ?? 0);
  const uncompressed = Number(meta?.u ?? 0);
  return {
    partitions: partitions.length,
    files: sizes.length,
    bytes,
    avgFileBytes: sizes.length === 0 ? 0 : bytes / sizes.length,
    smallFileRatio:
      sizes.length === 0 ? 0 : sizes.filter((s) => s < SMALL_RATIO * TARGET_FILE_BYTES).length / sizes.length,
    compressionRatio: compressed === 0 ? 0 : uncompressed / compressed,
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Follows the executions as they start and end, and reports each once, for tables whose partitions are named as
 * the format's port names them (an Iceberg partition tuple's folder, a Hudi partition path) rather than `date=…`.
 */
export class PartitionRunWatcher {
  private readonly seen = new Set<LocalExecution>();
  private readonly ended = new Set<LocalExecution>();

  constructor(
    private readonly cloud: LocalCloud,
    private readonly partitions: readonly string[],
    private readonly progress: DemoProgress,
    /** What the format calls a group's commit, for the progress lines ("replace commits", "replacecommits"). */
    private readonly commitNoun = 'replace commits',
  ) {}

  poll(): void {
    for (const execution of this.cloud.executions) {
      if (!this.seen.has(execution)) {
        this.seen.add(execution);
        const input = execution.input as { trigger?: unknown; partition?: unknown } | undefined;
        this.progress.line(
          `▶ ${String(input?.partition)}: ${String(input?.trigger ?? 'operator')} started ${execution.name}`,
        );
      }
      if (execution.status !== 'RUNNING' && !this.ended.has(execution)) {
        this.ended.add(execution);
        const run = describeRun(execution);
        this.progress.line(
          run.status === 'SUCCEEDED'
            ? `✔ ${run.partition}: ${run.outcome}, ${run.filesBefore} → ${run.filesAfter} files, ${run.groupsDone} ${this.commitNoun} (${(run.durationMs / 1000).toFixed(1)} s)`
            : `✘ ${run.partition}: ${run.status} ${run.error ?? ''}`,
        );
      }
    }
    const active = this.cloud.executions.filter((e) => e.status === 'RUNNING').length;
    this.progress.compacted?.(this.compacted().size, this.partitions.length, active);
  }

  runs(): DemoRun[] {
    return this.cloud.executions.map(describeRun);
  }

  private compacted(): Set<string> {
    return new Set(
      this.runs()
        .filter((r) => r.outcome === 'compacted')
        .map((r) => r.partition),
    );
  }

  allCompacted(): boolean {
    const done = this.compacted();
    return this.partitions.every((p) => done.has(p));
  }

  anyFailed(): boolean {
    return this.cloud.executions.some((e) => e.status !== 'RUNNING' && e.status !== 'SUCCEEDED');
  }
}
