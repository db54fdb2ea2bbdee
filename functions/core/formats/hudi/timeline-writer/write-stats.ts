// Hudi's commit metadata records (HoodieCommitMetadata / HoodieReplaceCommitMetadata and their HoodieWriteStat) as
// plain values shaped like the 1.x Avro schema, with every field Hudi writes, and the file-slice metrics its plans
// carry. The builders in ./clustering.ts and ./compaction.ts fill them; ./content.ts turns them into file bytes
// (Avro on table versions 8+, Jackson JSON on 6).
import { HudiTimelineWriteError } from './errors.js';
import { javaHashMapOrder } from './jackson-json.js';

/** HoodieRuntimeStats: milliseconds spent, as Hudi's handles report them (ours pass measured or zero values). */
export interface RuntimeStats {
  readonly totalScanTime: number | null;
  readonly totalCreateTime: number | null;
  readonly totalUpsertTime: number | null;
}

/** One HoodieWriteStat, fields in the 1.x schema's order. Counts are numbers (they stay far below 2^53). */
export interface WriteStat {
  readonly fileId: string | null;
  /** The file's path relative to the base path. */
  readonly path: string | null;
  /** The previous slice's base instant; the string "null" for a new file group (Hudi's NULL_COMMIT). */
  readonly prevCommit: string | null;
  readonly numWrites: number | null;
  readonly numDeletes: number | null;
  readonly numUpdateWrites: number | null;
  readonly totalWriteBytes: number | null;
  readonly totalWriteErrors: number | null;
  readonly partitionPath: string | null;
  readonly totalLogRecords: number | null;
  readonly totalLogFiles: number | null;
  readonly totalUpdatedRecordsCompacted: number | null;
  readonly numInserts: number | null;
  readonly totalLogBlocks: number | null;
  readonly totalCorruptLogBlock: number | null;
  readonly totalRollbackBlocks: number | null;
  readonly fileSizeInBytes: number | null;
  readonly logVersion: number | null;
  readonly logOffset: number | null;
  readonly baseFile: string | null;
  readonly logFiles: readonly string[] | null;
  readonly cdcStats: Readonly<Record<string, number>> | null;
  /** The base file this one replaces in its file group (compaction), by name. */
  readonly prevBaseFile: string | null;
  readonly minEventTime: number | null;
  readonly maxEventTime: number | null;
  readonly runtimeStats: RuntimeStats | null;
  readonly totalLogFilesCompacted: number | null;
  readonly totalLogReadTimeMs: number | null;
  readonly totalLogSizeCompacted: number | null;
  readonly tempPath: string | null;
  readonly numUpdates: number | null;
}

/** HoodieCommitMetadata (a compaction's completed `commit`), shaped as the 1.x Avro record. */
export interface CommitMetadata {
  /** Partition path → one stat per file written, keys in Java HashMap order (as Hudi's map iterates). */
  readonly partitionToWriteStats: Readonly<Record<string, readonly WriteStat[]>>;
  readonly compacted: boolean;
  readonly extraMetadata: Readonly<Record<string, string>>;
  /** Hudi 1.x leaves the record's version unset (null) in commit files; so do we. */
  readonly version: number | null;
  readonly operationType: string;
}

/** HoodieReplaceCommitMetadata (a clustering's completed `replacecommit`). */
export interface ReplaceCommitMetadata extends CommitMetadata {
  /** Partition path → the file group ids the instant replaces. */
  readonly partitionToReplaceFileIds: Readonly<Record<string, readonly string[]>>;
}

/** Hudi's NULL_COMMIT: the prevCommit of a file group's first slice. */
export const NULL_COMMIT = 'null';

/** A write stat with Hudi's values for what a file-writing handle leaves untouched (zeros, nulls). */
export function emptyWriteStat(): WriteStat {
  return {
    fileId: null,
    path: null,
    prevCommit: NULL_COMMIT,
    numWrites: 0,
    numDeletes: 0,
    numUpdateWrites: 0,
    totalWriteBytes: 0,
    totalWriteErrors: 0,
    partitionPath: null,
    totalLogRecords: 0,
    totalLogFiles: null,
    totalUpdatedRecordsCompacted: 0,
    numInserts: 0,
    totalLogBlocks: 0,
    totalCorruptLogBlock: 0,
    totalRollbackBlocks: 0,
    fileSizeInBytes: 0,
    logVersion: null,
    logOffset: null,
    baseFile: null,
    logFiles: null,
    cdcStats: null,
    prevBaseFile: null,
    minEventTime: null,
    maxEventTime: null,
    runtimeStats: null,
    totalLogFilesCompacted: 0,
    totalLogReadTimeMs: 0,
    totalLogSizeCompacted: 0,
    tempPath: null,
    numUpdates: 0,
  };
}

/** Groups per partition, the partitions (and so the map) in Java HashMap order, items in the given order. */
export function byPartitionInHashMapOrder<T>(
  items: readonly T[],
  partitionOf: (item: T) => string,
): Record<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const key = partitionOf(item);
    const list = groups.get(key);
    if (list === undefined) groups.set(key, [item]);
    else list.push(item);
  }
  const out: Record<string, T[]> = {};
  for (const key of javaHashMapOrder([...groups.keys()])) out[key] = groups.get(key) as T[];
  return out;
}

/** The sizes a file slice contributes to a plan's metrics. */
export interface SliceSizes {
  /** The base file's size in bytes; undefined for a slice without one. */
  readonly baseFileSizeBytes?: number;
  /** Each log file's size in bytes (unknown sizes, -1 as Hudi has them, are left out of the total). */
  readonly logFileSizesBytes?: readonly number[];
}

/** Hudi's default `hoodie.parquet.max.file.size` (120 MiB), what a slice without a base file counts as written. */
export const DEFAULT_PARQUET_MAX_FILE_SIZE = 120 * 1024 * 1024;

/**
 * The metrics Hudi records for a clustering group or a compaction operation (FileSliceMetricUtils
 * .addFileSliceCommonMetrics): log file count and bytes, and IO in whole MiB (integer division, as Java's long
 * arithmetic does). Keys in the order Hudi's HashMap holds them, so the encoding matches Hudi's byte for byte.
 */
export function fileSliceMetrics(
  slices: readonly SliceSizes[],
  defaultBaseFileSize: number = DEFAULT_PARQUET_MAX_FILE_SIZE,
): Record<string, number> {
  let numLogFiles = 0;
  let totalLogFileSize = 0;
  let totalRead = 0;
  let totalWrite = 0;
  for (const slice of slices) {
    const logs = slice.logFileSizesBytes ?? [];
    numLogFiles += logs.length;
    totalLogFileSize += logs.filter((size) => size >= 0).reduce((a, b) => a + b, 0);
    const base = slice.baseFileSizeBytes ?? 0;
    checkCount(base, 'base file size');
    totalRead += base;
    totalWrite += base > 0 ? base : defaultBaseFileSize;
  }
  const readMb = Math.floor((totalRead + totalLogFileSize) / (1024 * 1024));
  const writeMb = Math.floor(totalWrite / (1024 * 1024));
  const values: Record<string, number> = {
    TOTAL_IO_READ_MB: readMb,
    TOTAL_IO_WRITE_MB: writeMb,
    TOTAL_IO_MB: readMb + writeMb,
    TOTAL_LOG_FILES_SIZE: totalLogFileSize,
    TOTAL_LOG_FILES: numLogFiles,
  };
  const ordered: Record<string, number> = {};
  for (const key of javaHashMapOrder(Object.keys(values))) ordered[key] = values[key] as number;
  return ordered;
}

/** @throws HudiTimelineWriteError unless `n` is a non-negative safe integer. */
export function checkCount(n: number, what: string): void {
  if (!Number.isSafeInteger(n) || n < 0) throw new HudiTimelineWriteError(`${what} ${n} is not a count`);
}
