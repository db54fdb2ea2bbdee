// Profiles a partition's file sizes: exact counts, nearest-rank percentiles, a fixed-bucket histogram
// and the playbook's HIGH/MEDIUM/LOW priority; the same sizes always give the same profile.
import { InvalidInputError } from './errors.js';

const KiB = 1024;
const MiB = 1024 * KiB;
const GiB = 1024 * MiB;

/** Decimal megabyte, as the PySpark playbook's priority thresholds ("avg < 10 MB") mean it. */
export const MB = 1_000_000;

/** Default share of the target below which a file is small (`rewrite_data_files`' `min-file-size-bytes` = 0.75·T). */
export const DEFAULT_SMALL_FILE_RATIO = 0.75;

/**
 * Histogram bucket upper bounds (exclusive), binary units. Fixed rather than derived from the target so
 * that histograms of different tables and runs can be compared and summed: <64 KiB, <1 MiB, <8 MiB,
 * <32 MiB, <64 MiB, <128 MiB, <256 MiB, <1 GiB, and a last open bucket ≥1 GiB.
 */
export const SIZE_BUCKETS: readonly { readonly label: string; readonly upperBytes: number | null }[] = [
  { label: '<64KiB', upperBytes: 64 * KiB },
  { label: '<1MiB', upperBytes: MiB },
  { label: '<8MiB', upperBytes: 8 * MiB },
  { label: '<32MiB', upperBytes: 32 * MiB },
  { label: '<64MiB', upperBytes: 64 * MiB },
  { label: '<128MiB', upperBytes: 128 * MiB },
  { label: '<256MiB', upperBytes: 256 * MiB },
  { label: '<1GiB', upperBytes: GiB },
  { label: '>=1GiB', upperBytes: null },
];

export interface HistogramBucket {
  readonly label: string;
  /** Inclusive lower bound in bytes. */
  readonly lowerBytes: number;
  /** Exclusive upper bound in bytes; null for the last, open bucket. */
  readonly upperBytes: number | null;
  readonly count: number;
  readonly bytes: number;
}

export type Priority = 'HIGH' | 'MEDIUM' | 'LOW';

export interface PartitionProfile {
  readonly count: number;
  readonly totalBytes: number;
  /** Mean size; 0 for an empty partition. */
  readonly avgBytes: number;
  readonly p50Bytes: number;
  readonly p95Bytes: number;
  readonly minBytes: number;
  readonly maxBytes: number;
  /** Files with size < smallFileRatio · target. */
  readonly smallFileCount: number;
  readonly smallFileBytes: number;
  /** smallFileCount / count (a share of files, not of bytes); 0 for an empty partition. */
  readonly smallFileRatio: number;
  readonly histogram: readonly HistogramBucket[];
  readonly priority: Priority;
}

export interface ProfileOptions {
  readonly targetFileSizeBytes: number;
  /** Defaults to 0.75, the planner's and `rewrite_data_files`' threshold. */
  readonly smallFileRatio?: number;
}

/** True when a file of `size` bytes is small for target `target` (strictly below ratio · target). */
export function isSmallFile(size: number, target: number, ratio: number = DEFAULT_SMALL_FILE_RATIO): boolean {
  return size < ratio * target;
}

/**
 * Nearest-rank percentile of ascending `sorted` values: the value at rank ceil(p/100 · N) (1-based).
 * Always an observed value, never an interpolation, so "p95 = 8 KB" means a real file had 8 KB.
 * Returns 0 for an empty list.
 */
export function nearestRankPercentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1] as number;
}

/**
 * The playbook's triage: HIGH when more than 100 files average under 10 MB, MEDIUM when more than 50
 * files average under 50 MB, LOW otherwise (MB = 10^6 bytes; the bounds are strict).
 */
export function priorityOf(count: number, avgBytes: number): Priority {
  if (count > 100 && avgBytes < 10 * MB) return 'HIGH';
  if (count > 50 && avgBytes < 50 * MB) return 'MEDIUM';
  return 'LOW';
}

/**
 * Profiles a partition from its files' sizes.
 * @throws InvalidInputError when the target is not a positive number or a size is negative or not finite.
 */
export function profilePartition(
  files: readonly { readonly size: number }[],
  options: ProfileOptions,
): PartitionProfile {
  const { targetFileSizeBytes } = options;
  const ratio = options.smallFileRatio ?? DEFAULT_SMALL_FILE_RATIO;
  if (!(Number.isFinite(targetFileSizeBytes) && targetFileSizeBytes > 0)) {
    throw new InvalidInputError(
      `targetFileSizeBytes must be a positive number of bytes, got ${targetFileSizeBytes}; fix the table's target size`,
    );
  }
  if (!(ratio > 0 && ratio <= 1)) {
    throw new InvalidInputError(`smallFileRatio must be in (0, 1], got ${ratio}; fix the table's policy`);
  }
  const sizes = files.map((f) => f.size);
  const bad = sizes.findIndex((s) => !(Number.isFinite(s) && s >= 0));
  if (bad >= 0) {
    throw new InvalidInputError(
      `file #${bad} has size ${sizes[bad]}; sizes must be finite and ≥ 0 bytes — check the listing that produced them`,
    );
  }
  sizes.sort((a, b) => a - b);

  const histogram = SIZE_BUCKETS.map((bucket, i) => ({
    label: bucket.label,
    lowerBytes: i === 0 ? 0 : (SIZE_BUCKETS[i - 1]?.upperBytes ?? 0),
    upperBytes: bucket.upperBytes,
    count: 0,
    bytes: 0,
  }));
  let totalBytes = 0;
  let smallFileCount = 0;
  let smallFileBytes = 0;
  for (const size of sizes) {
    totalBytes += size;
    if (isSmallFile(size, targetFileSizeBytes, ratio)) {
      smallFileCount += 1;
      smallFileBytes += size;
    }
    const bucket = histogram.find((b) => b.upperBytes === null || size < b.upperBytes);
    if (bucket) {
      bucket.count += 1;
      bucket.bytes += size;
    }
  }
  const count = sizes.length;
  const avgBytes = count === 0 ? 0 : totalBytes / count;
  return {
    count,
    totalBytes,
    avgBytes,
    p50Bytes: nearestRankPercentile(sizes, 50),
    p95Bytes: nearestRankPercentile(sizes, 95),
    minBytes: sizes[0] ?? 0,
    maxBytes: sizes[count - 1] ?? 0,
    smallFileCount,
    smallFileBytes,
    smallFileRatio: count === 0 ? 0 : smallFileCount / count,
    histogram,
    priority: priorityOf(count, avgBytes),
  };
}

/** Human-readable binary size for reasons and logs: `812 B`, `20.0 KiB`, `96.0 MiB`, `2.0 GiB`. */
export function formatBytes(bytes: number): string {
  if (bytes < KiB) return `${bytes} B`;
  if (bytes < MiB) return `${(bytes / KiB).toFixed(1)} KiB`;
  if (bytes < GiB) return `${(bytes / MiB).toFixed(1)} MiB`;
  return `${(bytes / GiB).toFixed(1)} GiB`;
}
