// What a Merge-on-Read compaction writes to Hudi's timeline (HUDI-NOTES §5.1): the HoodieCompactionPlan in
// `T.compaction.requested`, and the completed HoodieCommitMetadata (`T.commit` / `T_C.commit`, compacted true,
// operationType COMPACT) with one write stat per new base file in the same file group. Pure.
import { HudiTimelineWriteError } from './errors.js';
import { relativeFilePath } from './names.js';
import {
  byPartitionInHashMapOrder,
  type CommitMetadata,
  checkCount,
  DEFAULT_PARQUET_MAX_FILE_SIZE,
  emptyWriteStat,
  fileSliceMetrics,
  type WriteStat,
} from './write-stats.js';

/** Hudi's LATEST_COMPACTION_METADATA_VERSION: plans written since 0.5 carry version 2 (file names, not paths). */
export const COMPACTION_PLAN_VERSION = 2;

/** One file slice to compact: its base file (if any) and its log files, by name. */
export interface CompactionOperationInput {
  readonly partitionPath: string;
  readonly fileId: string;
  /** The slice's base instant (the base file's instant; the file group's first log's on a log-only slice). */
  readonly baseInstantTime: string;
  readonly baseFileName: string | null;
  readonly baseFileSizeBytes?: number;
  /** Log file names in the slice, in Hudi's order (by version, then write token). */
  readonly logFileNames: readonly string[];
  readonly logFileSizesBytes: readonly number[];
}

export interface CompactionPlanInput {
  readonly operations: readonly CompactionOperationInput[];
  /**
   * The plan's extraMetadata. Default `{}`, what Hudi 1.1 writes without any (fixture mor_v9_txns_simple_nometa);
   * the v8 fixture's writer passed Spark SQL's `_hoodie.spark.sql.writes.prepped`.
   */
  readonly extraMetadata?: Readonly<Record<string, string>> | null;
  readonly parquetMaxFileSizeBytes?: number;
}

/** HoodieCompactionOperation. */
export interface CompactionOperation {
  readonly baseInstantTime: string | null;
  readonly deltaFilePaths: readonly string[] | null;
  readonly dataFilePath: string | null;
  readonly fileId: string | null;
  readonly partitionPath: string | null;
  readonly metrics: Readonly<Record<string, number>> | null;
  readonly bootstrapFilePath: string | null;
}

/** HoodieCompactionPlan (1.x shape). */
export interface CompactionPlan {
  readonly operations: readonly CompactionOperation[] | null;
  readonly extraMetadata: Readonly<Record<string, string>> | null;
  readonly version: number | null;
  readonly strategy: null;
  readonly preserveHoodieMetadata: boolean | null;
  readonly missingSchedulePartitions: readonly string[] | null;
}

/**
 * The compaction plan as Hudi's scheduler writes it (fixture mor_v8_trips_8i3u1d): one operation per slice with
 * file names (not paths), Hudi's slice metrics, bootstrapFilePath null, version 2, no strategy,
 * preserveHoodieMetadata false (the field concerns clustering-style rewrites; compaction keeps meta columns
 * regardless), missingSchedulePartitions empty.
 * @throws HudiTimelineWriteError for no operations, a slice without logs, or mismatched log sizes.
 */
export function buildCompactionPlan(input: CompactionPlanInput): CompactionPlan {
  if (input.operations.length === 0)
    throw new HudiTimelineWriteError('a compaction plan needs at least one operation');
  const seen = new Set<string>();
  const operations = input.operations.map((op): CompactionOperation => {
    const key = `${op.partitionPath}\0${op.fileId}`;
    if (seen.has(key)) throw new HudiTimelineWriteError(`file group ${op.fileId} appears twice in the plan`);
    seen.add(key);
    if (op.logFileNames.length === 0) {
      throw new HudiTimelineWriteError(
        `file group ${op.fileId} has no log files: there is nothing to compact`,
      );
    }
    if (op.logFileSizesBytes.length !== op.logFileNames.length) {
      throw new HudiTimelineWriteError(
        `file group ${op.fileId} has ${op.logFileNames.length} log files but ${op.logFileSizesBytes.length} sizes`,
      );
    }
    return {
      baseInstantTime: op.baseInstantTime,
      deltaFilePaths: [...op.logFileNames],
      dataFilePath: op.baseFileName,
      fileId: op.fileId,
      partitionPath: op.partitionPath,
      metrics: fileSliceMetrics(
        [{ baseFileSizeBytes: op.baseFileSizeBytes, logFileSizesBytes: op.logFileSizesBytes }],
        input.parquetMaxFileSizeBytes ?? DEFAULT_PARQUET_MAX_FILE_SIZE,
      ),
      bootstrapFilePath: null,
    };
  });
  return {
    operations,
    extraMetadata: input.extraMetadata === null ? null : { ...(input.extraMetadata ?? {}) },
    version: COMPACTION_PLAN_VERSION,
    strategy: null,
    preserveHoodieMetadata: false,
    missingSchedulePartitions: [],
  };
}

/** One new base file a compaction wrote, with what merging its slice counted. */
export interface CompactionOutput {
  readonly partitionPath: string;
  readonly fileId: string;
  readonly fileName: string;
  /** The compacted slice's base instant (the stat's prevCommit). */
  readonly baseInstantTime: string;
  /** The compacted slice's base file name, or null for a log-only slice. */
  readonly prevBaseFile: string | null;
  /** Rows written to the new base file. */
  readonly numWrites: number;
  /** Rows of the new file that a log record updated. */
  readonly numUpdateWrites: number;
  /**
   * Rows counted as inserts. Hudi's compactors disagree: 1.0 counted every row not updated by a log
   * (numWrites - numUpdateWrites, fixture mor_v8_trips_8i3u1d), 1.1 only rows whose key a log brought in
   * (fixture mor_v9_txns_simple_nometa: 0 when logs only update). The merge knows; no reader depends on it.
   */
  readonly numInserts: number;
  /** Rows a log delete removed. */
  readonly numDeletes: number;
  readonly fileSizeInBytes: number;
  /** Log records read (data and delete records). */
  readonly totalLogRecords: number;
  readonly totalLogBlocks: number;
  readonly totalCorruptLogBlock?: number;
  readonly totalRollbackBlocks?: number;
  /** Distinct record keys the logs touched. */
  readonly totalUpdatedRecordsCompacted: number;
  readonly totalLogFilesCompacted: number;
  readonly totalLogSizeCompacted: number;
  /** Milliseconds reading logs (also Hudi's totalScanTime) and merging (totalUpsertTime); default 0. */
  readonly logReadTimeMs?: number;
  readonly upsertTimeMs?: number;
}

export interface CompactionCommitInput {
  readonly outputs: readonly CompactionOutput[];
  /** `extraMetadata.schema` of the table's latest completed commit. */
  readonly schema: string;
}

/**
 * A compacted file's write stat as Hudi 1.x's compactor reports it: prevCommit is the slice's base instant,
 * prevBaseFile its base file, the row and log counters as merged.
 */
export function compactedFileWriteStat(output: CompactionOutput): WriteStat {
  const counts: [number, string][] = [
    [output.numWrites, 'numWrites'],
    [output.numUpdateWrites, 'numUpdateWrites'],
    [output.numDeletes, 'numDeletes'],
    [output.numInserts, 'numInserts'],
    [output.fileSizeInBytes, 'fileSizeInBytes'],
    [output.totalLogRecords, 'totalLogRecords'],
    [output.totalLogBlocks, 'totalLogBlocks'],
    [output.totalUpdatedRecordsCompacted, 'totalUpdatedRecordsCompacted'],
    [output.totalLogFilesCompacted, 'totalLogFilesCompacted'],
    [output.totalLogSizeCompacted, 'totalLogSizeCompacted'],
  ];
  for (const [n, what] of counts) checkCount(n, what);
  if (output.numUpdateWrites > output.numWrites) {
    throw new HudiTimelineWriteError(
      `${output.fileName}: more updated rows (${output.numUpdateWrites}) than rows written (${output.numWrites})`,
    );
  }
  const logReadTimeMs = output.logReadTimeMs ?? 0;
  return {
    ...emptyWriteStat(),
    fileId: output.fileId,
    path: relativeFilePath(output.partitionPath, output.fileName),
    prevCommit: output.baseInstantTime,
    numWrites: output.numWrites,
    numDeletes: output.numDeletes,
    numUpdateWrites: output.numUpdateWrites,
    totalWriteBytes: output.fileSizeInBytes,
    partitionPath: output.partitionPath,
    totalLogRecords: output.totalLogRecords,
    totalUpdatedRecordsCompacted: output.totalUpdatedRecordsCompacted,
    numInserts: output.numInserts,
    totalLogBlocks: output.totalLogBlocks,
    totalCorruptLogBlock: output.totalCorruptLogBlock ?? 0,
    totalRollbackBlocks: output.totalRollbackBlocks ?? 0,
    fileSizeInBytes: output.fileSizeInBytes,
    prevBaseFile: output.prevBaseFile,
    runtimeStats: {
      totalScanTime: logReadTimeMs,
      totalCreateTime: 0,
      totalUpsertTime: output.upsertTimeMs ?? 0,
    },
    totalLogFilesCompacted: output.totalLogFilesCompacted,
    totalLogReadTimeMs: logReadTimeMs,
    totalLogSizeCompacted: output.totalLogSizeCompacted,
  };
}

/** The completed compaction commit: compacted true, operationType COMPACT, the table schema copied. */
export function buildCompactionCommitMetadata(input: CompactionCommitInput): CommitMetadata {
  if (input.outputs.length === 0)
    throw new HudiTimelineWriteError('a compaction commit needs at least one output');
  return {
    partitionToWriteStats: byPartitionInHashMapOrder(
      input.outputs.map(compactedFileWriteStat),
      (s) => s.partitionPath ?? '',
    ),
    compacted: true,
    extraMetadata: { schema: input.schema },
    version: null,
    operationType: 'COMPACT',
  };
}
