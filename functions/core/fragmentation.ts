// Fragmentation of a table from its partitions' stored counters: files, small files, the small-file ratio
// and how many partitions pass the policy's size checks, as per-table gauges the sweep publishes.
import { DIMENSION, METRIC, type MetricDatum } from './metrics.js';
import { decide, type Policy } from './policy.js';
import type { PartitionSnapshot } from './profiler/model.js';

export interface TableFragmentation {
  readonly table: string;
  readonly partitions: number;
  readonly totalFiles: number;
  readonly smallFiles: number;
  readonly totalBytes: number;
  /** smallFiles / totalFiles (by count); undefined for a table without files (a ratio of nothing). */
  readonly smallFileRatio?: number;
  /**
   * Partitions whose counters pass the policy's size checks (enough small files, and a high small-file
   * ratio or a small average size): fragmented enough to compact, whether or not quiet time, cooldown or
   * the look-back window let it happen now.
   */
  readonly partitionsOverTrigger: number;
}

type Counters = Pick<PartitionSnapshot, 'fileCount' | 'totalBytes' | 'smallCount' | 'smallBytes'>;

/**
 * Sums a table's partition counters. "Over the trigger" asks the policy itself (`decide`) about the
 * counters alone — no write, compaction or date recorded, so only the size checks can fail — so this
 * gauge and the trigger can never disagree about what fragmented means.
 */
export function tableFragmentation(
  table: string,
  partitions: readonly Counters[],
  policy: Policy,
): TableFragmentation {
  let totalFiles = 0;
  let smallFiles = 0;
  let totalBytes = 0;
  let partitionsOverTrigger = 0;
  for (const p of partitions) {
    totalFiles += p.fileCount;
    smallFiles += p.smallCount;
    totalBytes += p.totalBytes;
    const sizeOnly = {
      fileCount: p.fileCount,
      totalBytes: p.totalBytes,
      smallFileCount: p.smallCount,
      smallFileBytes: p.smallBytes,
      state: 'idle' as const,
    };
    if (decide(sizeOnly, policy, 0).compact) partitionsOverTrigger += 1;
  }
  return {
    table,
    partitions: partitions.length,
    totalFiles,
    smallFiles,
    totalBytes,
    ...(totalFiles === 0 ? {} : { smallFileRatio: smallFiles / totalFiles }),
    partitionsOverTrigger,
  };
}

/** The gauges of one table under {Table}; the ratio in percent (CloudWatch's Percent unit is 0–100). */
export function fragmentationMetrics(f: TableFragmentation): MetricDatum[] {
  const dimensionSets = [{ [DIMENSION.table]: f.table }];
  const metrics: MetricDatum[] = [
    { name: METRIC.partitions, unit: 'Count', value: f.partitions, dimensionSets },
    { name: METRIC.totalFiles, unit: 'Count', value: f.totalFiles, dimensionSets },
    { name: METRIC.smallFiles, unit: 'Count', value: f.smallFiles, dimensionSets },
    { name: METRIC.partitionsOverTrigger, unit: 'Count', value: f.partitionsOverTrigger, dimensionSets },
  ];
  if (f.smallFileRatio !== undefined) {
    metrics.push({
      name: METRIC.smallFileRatio,
      unit: 'Percent',
      value: f.smallFileRatio * 100,
      dimensionSets,
    });
  }
  return metrics;
}

/**
 * `StuckLeases` of one sweep of a table, under {Table} and {} (the alarm watches the total): leases whose
 * execution had ended without releasing them, or had never started. Each means a run died between taking
 * the lease and its finalize step (timeout, abort, a finalize failure) or a start was lost.
 */
export function stuckLeaseMetric(table: string, count: number): MetricDatum {
  return {
    name: METRIC.stuckLeases,
    unit: 'Count',
    value: count,
    dimensionSets: [{ [DIMENSION.table]: table }, {}],
  };
}

/**
 * `PartitionsNeedingAttention` of a table at one sweep, under {Table} and {} (the alarm watches the total):
 * partitions a run could not settle (a request kept failing) or left for a person to fix. No trigger starts a
 * compaction on them; the sweep retries the settle of those with an open group on a backoff schedule, which ends
 * them once the cause is gone — until then listing readers may see rows twice, so any value above 0 deserves a page.
 */
export function attentionMetric(table: string, count: number): MetricDatum {
  return {
    name: METRIC.partitionsNeedingAttention,
    unit: 'Count',
    value: count,
    dimensionSets: [{ [DIMENSION.table]: table }, {}],
  };
}

/**
 * `SettleRetries` of a table at one sweep, under {Table} and {}: settle runs the sweep started for needs-attention
 * partitions (settle-retry.ts). A steady count while `PartitionsNeedingAttention` stays up is a cause that has not
 * gone; one retry followed by no more attention is the sweep having settled it.
 */
export function settleRetryMetric(table: string, count: number): MetricDatum {
  return {
    name: METRIC.settleRetries,
    unit: 'Count',
    value: count,
    dimensionSets: [{ [DIMENSION.table]: table }, {}],
  };
}
