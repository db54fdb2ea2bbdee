// The metric catalog: every custom metric's name, unit and dimensions, shared by the handlers that emit
// them (EMF via Powertools) and the CDK dashboard/alarms that read them, so the two cannot drift apart.
import type { TriggerAction, TriggerOutcome } from './profiler/model.js';
import type { RunOutcome } from './workflow/run-summary.js';

/** CloudWatch namespace of every lake-compactor metric. */
export const METRICS_NAMESPACE = 'LakeCompactor';

/**
 * Value of the `service` dimension Powertools adds to every metric it emits. CloudWatch matches metrics on
 * their full dimension set, so the dashboard and alarms must name it too: it is fixed here rather than
 * taken from `POWERTOOLS_SERVICE_NAME`, which only names the logs.
 */
export const METRICS_SERVICE = 'lake-compactor';

/** Dimension names. Deliberately never the partition: one metric per partition would cost per partition. */
export const DIMENSION = {
  service: 'service',
  table: 'Table',
  outcome: 'Outcome',
} as const;

/** Metric names, by what emits them. */
export const METRIC = {
  // finalize: once per compaction run
  runs: 'Runs',
  filesBefore: 'FilesBefore',
  filesAfter: 'FilesAfter',
  bytesRewritten: 'BytesRewritten',
  rowsRewritten: 'RowsRewritten',
  throughput: 'ThroughputMBps',
  rewriteDuration: 'RewriteDurationMs',
  duration: 'DurationMs',
  estimatedCost: 'EstimatedCostUSD',
  // profiler and sweep: one per trigger decision
  decisions: 'Decisions',
  // profiler: foreign tables' log or metadata writes inside a configured (Parquet) table, per table
  foreignFormatEvents: 'ForeignFormatEvents',
  // profiler (events) and sweep (sweeps): refused because the table's configured format is not implemented
  unsupportedFormatRefusals: 'UnsupportedFormatRefusals',
  // sweep: per table, every sweep
  partitions: 'Partitions',
  totalFiles: 'TotalFiles',
  smallFiles: 'SmallFiles',
  smallFileRatio: 'SmallFileRatio',
  partitionsOverTrigger: 'PartitionsOverTrigger',
  stuckLeases: 'StuckLeases',
  partitionsNeedingAttention: 'PartitionsNeedingAttention',
  settleRetries: 'SettleRetries',
  // sweep: compactions running (counted against the caps), per table and for the deployment
  concurrentRuns: 'ConcurrentRuns',
  // the state machine (CloudWatch PutMetricData): a run's end could not be announced or notified
  notificationsFailed: 'NotificationsFailed',
  // plan and commit steps, vacuum: a table refused because its log shows a writer that does not coordinate its
  // commits as the table's config declares (CoordinationMismatchError)
  coordinationRefusals: 'CoordinationRefusals',
  // sweep, reconcile, vacuum, tiering, profiler: a table whose turn failed (error, time budget, crash), the
  // others served all the same
  tableFailures: 'TableFailures',
} as const;

/** The CloudWatch units used here (the strings Powertools' MetricUnit holds). */
export type MetricUnitName = 'Count' | 'Bytes' | 'Milliseconds' | 'Megabytes/Second' | 'Percent' | 'None';

/** One metric value as plain data; the handler hands it to Powertools (see `emitMetrics`). */
export interface MetricDatum {
  readonly name: string;
  readonly unit: MetricUnitName;
  readonly value: number;
  /**
   * Dimension sets the value is published under (besides `service`): each set is its own CloudWatch
   * metric, so `[{ Table }, {}]` gives a per-table series and a total. `[]` = the `service` set only.
   */
  readonly dimensionSets: readonly Readonly<Record<string, string>>[];
}

/** The outcomes a run can end with (the `Outcome` of `Runs` and `DurationMs`); the dashboard lists them. */
export const RUN_OUTCOMES = [
  'compacted',
  'dry-run',
  'nothing-to-do',
  'gave-up',
  'failed',
  'settled',
] as const satisfies readonly RunOutcome[];

/** The outcomes a trigger decision can have (the `Outcome` of `Decisions`); the dashboard lists them. */
export const DECISION_OUTCOMES = [
  'started',
  'already-started',
  'start-failed',
  'not-started',
  'capped',
  'waiting',
  'blocked',
  'superseded',
  'leased',
] as const satisfies readonly TriggerAction[];

// Fail to compile when RunOutcome or TriggerAction gains a value these lists (so the dashboard) lack.
type Missing<All, Listed> = [Exclude<All, Listed>] extends [never] ? true : never;
const everyRunOutcomeListed: Missing<RunOutcome, (typeof RUN_OUTCOMES)[number]> = true;
const everyDecisionOutcomeListed: Missing<TriggerAction, (typeof DECISION_OUTCOMES)[number]> = true;
void everyRunOutcomeListed;
void everyDecisionOutcomeListed;

/**
 * `Decisions` per outcome over all tables, one count per outcome: a batch deciding about 40 partitions
 * publishes a handful of values, not 40. Not per table: eight outcomes per table would be eight custom
 * metrics per table (each billed monthly) for a figure the per-table fragmentation gauges already explain.
 */
export function decisionMetrics(outcomes: readonly Pick<TriggerOutcome, 'action'>[]): MetricDatum[] {
  const counts = new Map<string, number>();
  for (const { action } of outcomes) counts.set(action, (counts.get(action) ?? 0) + 1);
  return [...counts.entries()]
    .sort(([a], [b]) => cmp(a, b))
    .map(
      ([outcome, count]): MetricDatum => ({
        name: METRIC.decisions,
        unit: 'Count',
        value: count,
        dimensionSets: [{ [DIMENSION.outcome]: outcome }],
      }),
    );
}

/**
 * `ForeignFormatEvents` per table: foreign tables' log or metadata writes seen inside a configured Parquet
 * table. Non-zero means the configuration names such a table (or holds one); alarm on it. Per table because
 * the fix is per table, and a table only publishes it while misconfigured.
 */
export function foreignFormatMetrics(countsByTable: ReadonlyMap<string, number>): MetricDatum[] {
  return perTableCounts(METRIC.foreignFormatEvents, countsByTable);
}

/**
 * `UnsupportedFormatRefusals` per table: events the profiler (or sweeps the sweep) refused because the table's
 * configured format is not implemented. The config schema refuses such a table first, so non-zero means a table
 * list reached a function without passing it; alarm on it.
 */
export function unsupportedFormatMetrics(countsByTable: ReadonlyMap<string, number>): MetricDatum[] {
  return perTableCounts(METRIC.unsupportedFormatRefusals, countsByTable);
}

/**
 * `CoordinationRefusals` per table and in total: plans, commits and vacuums refused because the table's log shows
 * a writer that does not coordinate as declared (a table declared `dynamodb` whose recent versions have no
 * entry; one declared `s3-conditional` with Spark's DynamoDB temp files). The total is alarmed: the fix is a
 * configuration change or stopping that writer, and until then the table is not compacted or vacuumed.
 */
export function coordinationRefusalMetrics(countsByTable: ReadonlyMap<string, number>): MetricDatum[] {
  const total = [...countsByTable.values()].reduce((a, b) => a + b, 0);
  if (total === 0) return [];
  return [
    ...perTableCounts(METRIC.coordinationRefusals, countsByTable),
    { name: METRIC.coordinationRefusals, unit: 'Count', value: total, dimensionSets: [] },
  ];
}

/** One `Count` datum of `name` per table, in table order. */
function perTableCounts(name: string, countsByTable: ReadonlyMap<string, number>): MetricDatum[] {
  return [...countsByTable.entries()]
    .sort(([a], [b]) => cmp(a, b))
    .map(
      ([table, count]): MetricDatum => ({
        name,
        unit: 'Count',
        value: count,
        dimensionSets: [{ [DIMENSION.table]: table }],
      }),
    );
}

/**
 * `TableFailures`: turns of a table that failed in a function serving every table (sweep, reconcile, vacuum,
 * tiering, profiler) — unreadable metadata, a refusal, its time budget spent, or the process dying in it — under
 * {Table} for each table and under {} for all of them (what the alarm watches). A failure of no table (vacuum's work
 * area, `table` undefined) counts in the total only. Nothing is published when nothing failed.
 */
export function tableFailureMetrics(
  failures: readonly { readonly table: string | undefined }[],
): MetricDatum[] {
  if (failures.length === 0) return [];
  const byTable = new Map<string, number>();
  for (const { table } of failures)
    if (table !== undefined) byTable.set(table, (byTable.get(table) ?? 0) + 1);
  return [
    { name: METRIC.tableFailures, unit: 'Count', value: failures.length, dimensionSets: [] },
    ...perTableCounts(METRIC.tableFailures, byTable),
  ];
}

/**
 * `ConcurrentRuns`: compactions counted as running after the sweep recounted them, under {Table} for a
 * table, under {} for the deployment — the figures the caps are checked against.
 */
export function concurrentRunsMetric(table: string | undefined, running: number): MetricDatum {
  return {
    name: METRIC.concurrentRuns,
    unit: 'Count',
    value: running,
    dimensionSets: table === undefined ? [] : [{ [DIMENSION.table]: table }],
  };
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
