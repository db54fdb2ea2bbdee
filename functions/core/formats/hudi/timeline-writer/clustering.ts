// What a clustering writes to Hudi's timeline (HUDI-NOTES §4): the plan (HoodieRequestedReplaceMetadata with a
// HoodieClusteringPlan) in `T.replacecommit.requested` (v6) or `T.clustering.requested` (v8+), and the completed
// HoodieReplaceCommitMetadata naming the new files and the file groups they replace. Pure: the values Hudi's own
// Spark clustering writes, from the caller's typed inputs.
import { HudiTimelineWriteError } from './errors.js';
import { relativeFilePath, timelineLayoutOf } from './names.js';
import {
  byPartitionInHashMapOrder,
  checkCount,
  DEFAULT_PARQUET_MAX_FILE_SIZE,
  emptyWriteStat,
  fileSliceMetrics,
  type ReplaceCommitMetadata,
  type WriteStat,
} from './write-stats.js';

/** The execution strategy Hudi's Spark clustering names in its plans (fixture cow_v9_txns_simple_meta). */
export const SPARK_SORT_AND_SIZE_EXECUTION_STRATEGY =
  'org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy';

/** One input file slice of a clustering group (a live base file, and its logs on Merge-on-Read). */
export interface ClusteringSliceInput {
  readonly partitionPath: string;
  readonly fileId: string;
  /** The base file's name (`<fileId>_<token>_<instant>.parquet`). */
  readonly baseFileName: string;
  readonly baseFileSizeBytes: number;
  /** Log file names of the slice; clustering here takes base-only slices, so normally none. */
  readonly logFileNames?: readonly string[];
  readonly logFileSizesBytes?: readonly number[];
}

/** One clustering group: slices of one partition rewritten into `numOutputFileGroups` new file groups. */
export interface ClusteringGroupInput {
  readonly slices: readonly ClusteringSliceInput[];
  /** Default 1. */
  readonly numOutputFileGroups?: number;
}

export interface ClusteringPlanInput {
  readonly tableVersion: number;
  /**
   * The table's base path as Hudi's writers spell it (`s3a://bucket/table`, `file:/tmp/t`): Hudi puts absolute
   * paths in a clustering plan's dataFilePath and deltaFilePaths.
   */
  readonly basePath: string;
  readonly groups: readonly ClusteringGroupInput[];
  /** Default {@link SPARK_SORT_AND_SIZE_EXECUTION_STRATEGY}, so Hudi's own executor could run the plan. */
  readonly strategyClassName?: string;
  /** Default none (`{}`), as in the fixture. */
  readonly strategyParams?: Readonly<Record<string, string>>;
  /** `hoodie.parquet.max.file.size`, what a slice without a base file counts as written; default 120 MiB. */
  readonly parquetMaxFileSizeBytes?: number;
}

/** HoodieSliceInfo. */
export interface SliceInfo {
  readonly dataFilePath: string | null;
  readonly deltaFilePaths: readonly string[] | null;
  readonly fileId: string | null;
  readonly partitionPath: string | null;
  readonly bootstrapFilePath: string | null;
  readonly version: number | null;
}

/** HoodieClusteringGroup (1.x shape; the v6 schema has the same fields). */
export interface ClusteringGroup {
  readonly slices: readonly SliceInfo[] | null;
  readonly metrics: Readonly<Record<string, number>> | null;
  readonly numOutputFileGroups: number | null;
  readonly extraMetadata: Readonly<Record<string, string>> | null;
  readonly version: number | null;
}

/** HoodieClusteringPlan; `missingSchedulePartitions` only on table versions 8+ (absent from the v6 schema). */
export interface ClusteringPlan {
  readonly inputGroups: readonly ClusteringGroup[] | null;
  readonly strategy: {
    readonly strategyClassName: string | null;
    readonly strategyParams: Readonly<Record<string, string>> | null;
    readonly version: number | null;
  } | null;
  readonly extraMetadata: Readonly<Record<string, string>> | null;
  readonly version: number | null;
  readonly preserveHoodieMetadata: boolean | null;
  readonly missingSchedulePartitions?: readonly string[] | null;
}

/** HoodieRequestedReplaceMetadata: the content of a clustering's requested file. */
export interface RequestedReplaceMetadata {
  readonly operationType: string | null;
  readonly clusteringPlan: ClusteringPlan | null;
  readonly extraMetadata: Readonly<Record<string, string>> | null;
  readonly version: number | null;
}

/**
 * The clustering plan as Hudi's Spark clustering writes it: operationType CLUSTER, one group per input group with
 * its slices (absolute paths, bootstrapFilePath "", version 1), Hudi's slice metrics, the Spark sort-and-size
 * strategy, preserveHoodieMetadata true (outputs keep each row's commit time and seqno), version 1.
 * @throws HudiTimelineWriteError for an empty group, a group spanning partitions, or an invalid count.
 */
export function buildClusteringPlan(input: ClusteringPlanInput): RequestedReplaceMetadata {
  const layout = timelineLayoutOf(input.tableVersion);
  if (input.groups.length === 0)
    throw new HudiTimelineWriteError('a clustering plan needs at least one group');
  const base = input.basePath.replace(/\/+$/, '');
  const inputGroups = input.groups.map((group, index): ClusteringGroup => {
    const first = group.slices[0];
    if (first === undefined) throw new HudiTimelineWriteError(`clustering group ${index} has no slices`);
    if (group.slices.some((s) => s.partitionPath !== first.partitionPath)) {
      throw new HudiTimelineWriteError(`clustering group ${index} spans more than one partition`);
    }
    const numOutputFileGroups = group.numOutputFileGroups ?? 1;
    if (!Number.isSafeInteger(numOutputFileGroups) || numOutputFileGroups < 1) {
      throw new HudiTimelineWriteError(
        `clustering group ${index} asks for ${numOutputFileGroups} output file groups`,
      );
    }
    return {
      slices: group.slices.map((slice) => {
        checkCount(slice.baseFileSizeBytes, 'base file size');
        return {
          dataFilePath: `${base}/${relativeFilePath(slice.partitionPath, slice.baseFileName)}`,
          deltaFilePaths: (slice.logFileNames ?? []).map(
            (name) => `${base}/${relativeFilePath(slice.partitionPath, name)}`,
          ),
          fileId: slice.fileId,
          partitionPath: slice.partitionPath,
          bootstrapFilePath: '',
          version: 1,
        };
      }),
      metrics: fileSliceMetrics(
        group.slices.map((s) => ({
          baseFileSizeBytes: s.baseFileSizeBytes,
          logFileSizesBytes: s.logFileSizesBytes,
        })),
        input.parquetMaxFileSizeBytes ?? DEFAULT_PARQUET_MAX_FILE_SIZE,
      ),
      numOutputFileGroups,
      extraMetadata: null,
      version: 1,
    };
  });
  const plan: ClusteringPlan = {
    inputGroups,
    strategy: {
      strategyClassName: input.strategyClassName ?? SPARK_SORT_AND_SIZE_EXECUTION_STRATEGY,
      strategyParams: { ...(input.strategyParams ?? {}) },
      version: 1,
    },
    extraMetadata: {},
    version: 1,
    preserveHoodieMetadata: true,
    ...(layout === 2 ? { missingSchedulePartitions: [] } : {}),
  };
  return { operationType: 'CLUSTER', clusteringPlan: plan, extraMetadata: {}, version: 1 };
}

/** One new base file a clustering wrote. */
export interface ClusteringOutput {
  readonly partitionPath: string;
  readonly fileId: string;
  readonly fileName: string;
  /** Rows written (all inserts, for a new file group). */
  readonly numWrites: number;
  readonly fileSizeInBytes: number;
  /** Milliseconds spent writing the file (Hudi's totalCreateTime); default 0. */
  readonly createTimeMs?: number;
}

export interface ClusteringCommitInput {
  /** The plan being completed: its slices are the file groups replaced. */
  readonly plan: RequestedReplaceMetadata;
  readonly outputs: readonly ClusteringOutput[];
  /** `extraMetadata.schema` of the table's latest completed commit (schema resolution reads it). */
  readonly schema: string;
}

/** The write stat of a new base file: all inserts, prevCommit "null", size as bytes written. */
export function newFileWriteStat(output: ClusteringOutput): WriteStat {
  checkCount(output.numWrites, 'numWrites');
  checkCount(output.fileSizeInBytes, 'fileSizeInBytes');
  return {
    ...emptyWriteStat(),
    fileId: output.fileId,
    path: relativeFilePath(output.partitionPath, output.fileName),
    numWrites: output.numWrites,
    totalWriteBytes: output.fileSizeInBytes,
    partitionPath: output.partitionPath,
    numInserts: output.numWrites,
    fileSizeInBytes: output.fileSizeInBytes,
    runtimeStats: { totalScanTime: 0, totalCreateTime: output.createTimeMs ?? 0, totalUpsertTime: 0 },
  };
}

/**
 * The completed replacecommit of a clustering: one write stat per new file, every input file group in
 * partitionToReplaceFileIds (in plan order), operationType CLUSTER, compacted false, the table schema copied.
 * @throws HudiTimelineWriteError when an output lies outside the plan's partitions or the plan has no groups.
 */
export function buildClusteringCommitMetadata(input: ClusteringCommitInput): ReplaceCommitMetadata {
  const slices = (input.plan.clusteringPlan?.inputGroups ?? []).flatMap((g) => g.slices ?? []);
  if (slices.length === 0) throw new HudiTimelineWriteError('the clustering plan replaces no file groups');
  const partitions = new Set(slices.map((s) => s.partitionPath ?? ''));
  for (const output of input.outputs) {
    if (!partitions.has(output.partitionPath)) {
      throw new HudiTimelineWriteError(
        `output ${output.fileName} is in partition "${output.partitionPath}", which the plan does not cluster`,
      );
    }
  }
  const replaced = byPartitionInHashMapOrder(slices, (s) => s.partitionPath ?? '');
  const partitionToReplaceFileIds: Record<string, string[]> = {};
  for (const [partition, list] of Object.entries(replaced)) {
    partitionToReplaceFileIds[partition] = list.map((s) => s.fileId ?? '');
  }
  return {
    partitionToWriteStats: byPartitionInHashMapOrder(
      input.outputs.map(newFileWriteStat),
      (s) => s.partitionPath ?? '',
    ),
    compacted: false,
    extraMetadata: { schema: input.schema },
    version: null,
    operationType: 'CLUSTER',
    partitionToReplaceFileIds,
  };
}
