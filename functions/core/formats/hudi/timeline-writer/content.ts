// The bytes of each timeline file a clustering or compaction writes, per table version (HUDI-NOTES §2.2): plans
// are Avro in every version; completed commit metadata is Jackson JSON on version 6 and Avro on 8+; the inflight
// files of clustering and compaction are empty (both fixtures' are 0 bytes).
import { encodeTimelineAvro } from './avro-file.js';
import type { RequestedReplaceMetadata } from './clustering.js';
import type { CompactionPlan } from './compaction.js';
import { type JacksonValue, jacksonPrettyJson, javaHashMap } from './jackson-json.js';
import { timelineLayoutOf } from './names.js';
import {
  COMMIT_METADATA_SCHEMA,
  COMPACTION_PLAN_SCHEMA,
  REPLACE_COMMIT_METADATA_SCHEMA,
  REQUESTED_REPLACE_METADATA_SCHEMA,
  REQUESTED_REPLACE_METADATA_SCHEMA_V6,
} from './schemas.js';
import type { CommitMetadata, ReplaceCommitMetadata, WriteStat } from './write-stats.js';

/** The content of a clustering's or compaction's inflight file: empty, as Hudi leaves it. */
export const EMPTY_INFLIGHT_CONTENT: Uint8Array = new Uint8Array(0);

/** The schema of a clustering plan on this table version (v6's lacks missingSchedulePartitions). */
export function requestedReplaceSchemaFor(tableVersion: number) {
  return timelineLayoutOf(tableVersion) === 1
    ? REQUESTED_REPLACE_METADATA_SCHEMA_V6
    : REQUESTED_REPLACE_METADATA_SCHEMA;
}

/** `T.replacecommit.requested` (v6) or `T.clustering.requested` (v8+): Avro HoodieRequestedReplaceMetadata. */
export function clusteringRequestedContent(tableVersion: number, plan: RequestedReplaceMetadata): Uint8Array {
  const schema = requestedReplaceSchemaFor(tableVersion);
  if (schema === REQUESTED_REPLACE_METADATA_SCHEMA_V6 && plan.clusteringPlan !== null) {
    const { missingSchedulePartitions: _dropped, ...v6Plan } = plan.clusteringPlan;
    return encodeTimelineAvro(schema, { ...plan, clusteringPlan: v6Plan });
  }
  return encodeTimelineAvro(schema, plan);
}

/** The completed replacecommit: Jackson JSON on v6, Avro HoodieReplaceCommitMetadata on 8+. */
export function replaceCommitContent(tableVersion: number, metadata: ReplaceCommitMetadata): Uint8Array {
  if (timelineLayoutOf(tableVersion) === 1) return utf8(v6CommitMetadataJson(metadata));
  return encodeTimelineAvro(REPLACE_COMMIT_METADATA_SCHEMA, metadata);
}

/** `T.compaction.requested`: Avro HoodieCompactionPlan (1.x's schema; a 0.x reader skips the fields it lacks). */
export function compactionRequestedContent(plan: CompactionPlan): Uint8Array {
  return encodeTimelineAvro(COMPACTION_PLAN_SCHEMA, plan);
}

/** The completed compaction `commit`: Jackson JSON on v6, Avro HoodieCommitMetadata on 8+. */
export function compactionCommitContent(tableVersion: number, metadata: CommitMetadata): Uint8Array {
  if (timelineLayoutOf(tableVersion) === 1) return utf8(v6CommitMetadataJson(metadata));
  return encodeTimelineAvro(COMMIT_METADATA_SCHEMA, metadata);
}

/**
 * Commit metadata as Hudi 0.x's Jackson writes it on table version 6 (fixture
 * cow_v6_simplekeygen_nonhivestyle_overwritetable): the Java POJO's property order, which is not the Avro
 * schema's, no `version`, maps in HashMap order, and only the write-stat properties 0.x has (no prevBaseFile,
 * totalLogFiles, totalLogReadTimeMs, numUpdates; logVersion, logOffset, baseFile and logFiles only on a log
 * append's stat, one whose logFiles is set).
 */
export function v6CommitMetadataJson(metadata: CommitMetadata | ReplaceCommitMetadata): string {
  const stats = javaHashMap(
    Object.entries(metadata.partitionToWriteStats).map(([p, list]) => [p, list.map(v6WriteStat)] as const),
  );
  const pojo: Record<string, JacksonValue> = {
    partitionToWriteStats: stats,
    compacted: metadata.compacted,
    extraMetadata: javaHashMap(Object.entries(metadata.extraMetadata)),
    operationType: metadata.operationType,
  };
  if ('partitionToReplaceFileIds' in metadata) {
    pojo.partitionToReplaceFileIds = javaHashMap(
      Object.entries(metadata.partitionToReplaceFileIds).map(([p, ids]) => [p, [...ids]] as const),
    );
  }
  return jacksonPrettyJson(pojo);
}

function v6WriteStat(s: WriteStat): JacksonValue {
  const stat: Record<string, JacksonValue> = {
    fileId: s.fileId,
    path: s.path,
    cdcStats: s.cdcStats === null ? null : javaHashMap(Object.entries(s.cdcStats)),
    prevCommit: s.prevCommit,
    numWrites: s.numWrites,
    numDeletes: s.numDeletes,
    numUpdateWrites: s.numUpdateWrites,
    numInserts: s.numInserts,
    totalWriteBytes: s.totalWriteBytes,
    totalWriteErrors: s.totalWriteErrors,
    tempPath: s.tempPath,
    partitionPath: s.partitionPath,
    totalLogRecords: s.totalLogRecords,
    totalLogFilesCompacted: s.totalLogFilesCompacted,
    totalLogSizeCompacted: s.totalLogSizeCompacted,
    totalUpdatedRecordsCompacted: s.totalUpdatedRecordsCompacted,
    totalLogBlocks: s.totalLogBlocks,
    totalCorruptLogBlock: s.totalCorruptLogBlock,
    totalRollbackBlocks: s.totalRollbackBlocks,
    fileSizeInBytes: s.fileSizeInBytes,
    minEventTime: s.minEventTime,
    maxEventTime: s.maxEventTime,
    runtimeStats:
      s.runtimeStats === null
        ? null
        : {
            totalScanTime: s.runtimeStats.totalScanTime,
            totalUpsertTime: s.runtimeStats.totalUpsertTime,
            totalCreateTime: s.runtimeStats.totalCreateTime,
          },
  };
  if (s.logFiles === null) return stat;
  // A log append's HoodieDeltaWriteStat: 0.x's Jackson writes its own properties after the inherited ones, and its
  // empty Option of column stats as {"val": null} (fixture mor_v6_trips_8i1u's deltacommit).
  return {
    ...stat,
    logVersion: s.logVersion,
    logOffset: s.logOffset,
    baseFile: s.baseFile,
    logFiles: [...s.logFiles],
    recordsStats: { val: null },
  };
}

function utf8(text: string): Uint8Array {
  return new Uint8Array(Buffer.from(text, 'utf8'));
}
