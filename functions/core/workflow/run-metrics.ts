// Maps a finished run's summary to the metrics finalize publishes, as plain data: one `Runs` count per run,
// and rewrite figures only for runs that rewrote something, so sums and averages mean what they say.
import type { GroupJournalEntry } from '../../ports/journal.js';
import { DIMENSION, METRIC, type MetricDatum } from '../metrics.js';
import type { RunSummary } from './run-summary.js';

const MIB = 1024 * 1024;

/**
 * The rewrite window of a run, ms: from the plan (when the journal entries were created) to the last
 * group's `done`. It covers rewrite, verify and commit of every group, including Map scheduling, but not the
 * quiet-partition wait before the plan, which can be 15 minutes of nothing and says nothing about speed.
 * Undefined when no group finished.
 */
export function rewriteWindowMs(entries: readonly GroupJournalEntry[]): number | undefined {
  const done = entries.filter((e) => e.state === 'done');
  if (done.length === 0) return undefined;
  const start = Math.min(...entries.map((e) => e.createdAt));
  const end = Math.max(...done.map((e) => e.updatedAt));
  return Math.max(0, end - start);
}

export interface RunTiming {
  /** See `rewriteWindowMs`; overrides the summary's own. Without either, no throughput is published. */
  readonly rewriteWindowMs?: number;
}

/**
 * The outcome a run is counted under: the state machine's path, except that a run whose status is FAILED
 * (a group failed, or groups were left unsettled) counts as `failed` even when it ended on the compacted
 * path — a dashboard of failures must not hide a run whose every group failed verification. The sweep's settle
 * retry of a needs-attention partition (profiler/settle-retry.ts) counts as `settled` whether or not it could
 * settle: one that could not is the same incident the partition's needs-attention alarm already reports, and
 * counting it failed would page again on every retry of the backoff.
 */
export function metricOutcome(
  summary: Pick<RunSummary, 'outcome' | 'status' | 'trigger'>,
): RunSummary['outcome'] {
  if (summary.outcome === 'settled' && summary.trigger === 'sweep') return 'settled';
  return summary.status === 'FAILED' ? 'failed' : summary.outcome;
}

/**
 * The run's metrics:
 * - `Runs` = 1 per run under {Table, Outcome} and {Outcome} (runs by `metricOutcome`, overall and per table);
 * - `DurationMs` (start of the execution to finalize, quiet wait included) under {Table, Outcome}: a
 *   gave-up run's 15-minute wait must not blur the duration of compactions;
 * - when at least one group was published (a compaction, or the finished part of a failed run):
 *   `FilesBefore`, `FilesAfter`, `BytesRewritten` (input bytes retired), `RowsRewritten` (rows published),
 *   `RewriteDurationMs` and `ThroughputMBps` = BytesRewritten in MiB / rewrite window in s, under {Table};
 * - `EstimatedCostUSD` (the plan's estimate; unit None, CloudWatch has no currency) under {Table} and {}
 *   for runs that executed a plan (not dry runs, not runs that planned nothing).
 * Dry runs and runs with nothing to do publish `Runs` and `DurationMs` only: they moved no byte.
 */
export function runMetrics(summary: RunSummary, timing: RunTiming = {}): MetricDatum[] {
  const table = { [DIMENSION.table]: summary.table };
  const outcome = metricOutcome(summary);
  const tableOutcome = { ...table, [DIMENSION.outcome]: outcome };
  const metrics: MetricDatum[] = [
    {
      name: METRIC.runs,
      unit: 'Count',
      value: 1,
      dimensionSets: [tableOutcome, { [DIMENSION.outcome]: outcome }],
    },
    { name: METRIC.duration, unit: 'Milliseconds', value: summary.durationMs, dimensionSets: [tableOutcome] },
  ];
  if (summary.groupsDone > 0) {
    const perTable = (name: string, unit: MetricDatum['unit'], value: number): MetricDatum => ({
      name,
      unit,
      value,
      dimensionSets: [table],
    });
    metrics.push(
      perTable(METRIC.filesBefore, 'Count', summary.filesBefore),
      perTable(METRIC.filesAfter, 'Count', summary.filesAfter),
      perTable(METRIC.bytesRewritten, 'Bytes', summary.bytesRewritten),
      perTable(METRIC.rowsRewritten, 'Count', summary.rows),
    );
    const window = timing.rewriteWindowMs ?? summary.rewriteWindowMs;
    if (window !== undefined && window > 0) {
      metrics.push(
        perTable(METRIC.rewriteDuration, 'Milliseconds', window),
        perTable(METRIC.throughput, 'Megabytes/Second', summary.bytesRewritten / MIB / (window / 1000)),
      );
    }
  }
  const cost = summary.estimatedCost?.usd;
  if (cost !== undefined && !summary.dryRun && summary.groups > 0 && summary.outcome !== 'nothing-to-do') {
    metrics.push({ name: METRIC.estimatedCost, unit: 'None', value: cost, dimensionSets: [table, {}] });
  }
  return metrics;
}
