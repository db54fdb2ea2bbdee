// Which output columns keep their column-chunk statistics. Statistics cost encode time (−11 % without them on the
// benchmark's two high-cardinality string columns, docs/engine.md) and buy pruning only where a row group's
// min/max leave most values out. On a string column whose values are all different and spread in no order, every
// row group's [min, max] spans nearly the whole domain: no predicate can skip it, so the statistics are dead weight.
import { z } from 'zod';

/**
 * `all`: every column keeps chunk statistics (min, max, null count), as every writer does by default.
 * `auto`: columns the sampled data shows cannot be pruned on lose them (see {@link columnsWithoutStatistics}).
 */
export const STATISTICS_MODES = ['all', 'auto'] as const;
export type StatisticsMode = (typeof STATISTICS_MODES)[number];
export const statisticsModeSchema = z.enum(STATISTICS_MODES);
/** Today's behaviour, and what a table gets unless it opts in (docs/configuration.md argues why). */
export const DEFAULT_STATISTICS_MODE: StatisticsMode = 'all';

/** What the rule needs to know of one sampled column. */
export interface SampledColumn {
  readonly name: string;
  /** Only string and binary (BYTE_ARRAY) columns are candidates; numbers and times are cheap and often clustered. */
  readonly kind: 'string' | 'other';
  /** The sample's values in row order (nulls as null); binary values as latin1 strings, which keep byte order. */
  readonly values: readonly (string | null)[];
}

/** The thresholds, named so docs and tests say the same thing. */
export const STATISTICS_RULE = {
  /** Fewer sampled non-null values than this decide nothing: the column keeps its statistics. */
  minValues: 1_000,
  /**
   * Distinct over non-null values at least this: a high-cardinality column (IDs, hashes, free text, and IDs
   * repeated a few times each, like a session's ~8 events). Enum-like columns (a handful of values) stay under it
   * by orders of magnitude and keep their statistics: cheap, and a value confined to some files still prunes.
   */
  minDistinctRatio: 0.1,
  /** The sample is cut into this many consecutive blocks, standing in for row groups and files. */
  blocks: 8,
  /**
   * A block's [min, max] spans at least this share of the sample's sorted distinct values in every block: the
   * values are spread in no order, so a row group's min/max can prune nothing. Sorted or clustered values
   * (appended IDs, time-prefixed keys) span ~1/blocks each and keep their statistics.
   */
  minBlockSpan: 0.8,
  /**
   * Values whose order is judged at most (the distinct share is counted on all): a larger sample is thinned evenly
   * by position, keeping its blocks, as ranking 65,536 distinct strings costs ~200 ms and 8,192 ~20 ms.
   */
  maxValues: 8_192,
} as const;

/** Why a column keeps or loses its statistics, for logs and tests. */
export interface ColumnStatisticsDecision {
  readonly name: string;
  readonly keep: boolean;
  readonly reason: string;
}

/**
 * Decides per sampled column. Never drops statistics of a column in `keep` (the table's list, its partition,
 * sort and Z-order columns), of a non-string column, of a sample too small to judge, of a column with repeated
 * values (a dictionary-like column prunes well), or of one whose values cluster by position.
 */
export function decideColumnStatistics(
  columns: readonly SampledColumn[],
  keep: readonly string[],
): ColumnStatisticsDecision[] {
  const kept = new Set(keep);
  return columns.map((column) => {
    const decision = (keepIt: boolean, reason: string) => ({ name: column.name, keep: keepIt, reason });
    if (kept.has(column.name))
      return decision(true, 'listed to keep (table, partition, sort or Z-order column)');
    if (column.kind !== 'string') return decision(true, 'not a string column');
    const present = column.values.filter((v): v is string => v !== null);
    if (present.length < STATISTICS_RULE.minValues) return decision(true, 'sample too small to judge');
    const distinct = new Set(present);
    const ratio = distinct.size / present.length;
    if (ratio < STATISTICS_RULE.minDistinctRatio)
      return decision(true, `low cardinality (distinct/rows ${ratio.toFixed(2)})`);
    const judged = thinned(present);
    const span = minBlockSpan(judged, judged === present ? distinct : new Set(judged));
    if (span < STATISTICS_RULE.minBlockSpan)
      return decision(true, `values cluster by position (block span ${span.toFixed(2)})`);
    return decision(
      false,
      `high cardinality (distinct/rows ${ratio.toFixed(2)}) in no order (block span ${span.toFixed(2)}): min/max cannot prune`,
    );
  });
}

/** The names of the columns {@link decideColumnStatistics} drops statistics on. */
export function columnsWithoutStatistics(
  columns: readonly SampledColumn[],
  keep: readonly string[],
): string[] {
  return decideColumnStatistics(columns, keep)
    .filter((d) => !d.keep)
    .map((d) => d.name);
}

/** At most `maxValues` of `values`, evenly spaced by position, in order. */
function thinned(values: string[]): string[] {
  if (values.length <= STATISTICS_RULE.maxValues) return values;
  const step = values.length / STATISTICS_RULE.maxValues;
  return Array.from({ length: STATISTICS_RULE.maxValues }, (_, i) => values[Math.floor(i * step)] as string);
}

/**
 * The smallest share of the sample's distinct values (by rank in byte order) that one block's [min, max] spans:
 * near 1 when every block reaches from the bottom of the domain to its top, near 1/blocks when sorted.
 */
function minBlockSpan(values: readonly string[], distinct: ReadonlySet<string>): number {
  // The default sort compares UTF-16 code units: Parquet's unsigned byte order of UTF-8 outside surrogate pairs.
  const sorted = [...distinct].sort();
  if (sorted.length < 2) return 0;
  const rank = new Map(sorted.map((v, i) => [v, i]));
  const size = Math.ceil(values.length / STATISTICS_RULE.blocks);
  let smallest = 1;
  for (let start = 0; start < values.length; start += size) {
    let lo = Number.POSITIVE_INFINITY;
    let hi = Number.NEGATIVE_INFINITY;
    for (let i = start; i < Math.min(values.length, start + size); i++) {
      const r = rank.get(values[i] as string) as number;
      if (r < lo) lo = r;
      if (r > hi) hi = r;
    }
    smallest = Math.min(smallest, (hi - lo) / (sorted.length - 1));
  }
  return smallest;
}

/**
 * Columns that always keep statistics for a table: the ones it lists, its partition columns (identity partitions
 * are written into log-based tables' data files, and readers prune on them) and its sort and Z-order columns
 * (what a sorted layout is for). Deduplicated, in that order.
 */
export function statisticsKeepColumns(table: {
  readonly keepStatistics?: readonly string[] | undefined;
  readonly partitionColumns?: readonly string[] | undefined;
  readonly sortColumns?: readonly string[] | undefined;
  readonly zOrderColumns?: readonly string[] | undefined;
}): string[] {
  return [
    ...new Set([
      ...(table.keepStatistics ?? []),
      ...(table.partitionColumns ?? []),
      ...(table.sortColumns ?? []),
      ...(table.zOrderColumns ?? []),
    ]),
  ];
}
