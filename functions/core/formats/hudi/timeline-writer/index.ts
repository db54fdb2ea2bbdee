// What a clustering and a compaction write to Hudi's timeline, as pure builders: Hudi's own Avro schemas, the
// plan and commit contents, their bytes per table version, instant-time minting and every name Hudi gives the
// files. No I/O: the commit protocol (locks, conditional creates, journal) is the caller's.
export { decodeTimelineAvro, encodeTimelineAvro } from './avro-file.js';
export {
  buildClusteringCommitMetadata,
  buildClusteringPlan,
  type ClusteringCommitInput,
  type ClusteringGroup,
  type ClusteringGroupInput,
  type ClusteringOutput,
  type ClusteringPlan,
  type ClusteringPlanInput,
  type ClusteringSliceInput,
  newFileWriteStat,
  type RequestedReplaceMetadata,
  type SliceInfo,
  SPARK_SORT_AND_SIZE_EXECUTION_STRATEGY,
} from './clustering.js';
export {
  buildCompactionCommitMetadata,
  buildCompactionPlan,
  COMPACTION_PLAN_VERSION,
  type CompactionCommitInput,
  type CompactionOperation,
  type CompactionOperationInput,
  type CompactionOutput,
  type CompactionPlan,
  type CompactionPlanInput,
  compactedFileWriteStat,
} from './compaction.js';
export {
  clusteringRequestedContent,
  compactionCommitContent,
  compactionRequestedContent,
  EMPTY_INFLIGHT_CONTENT,
  replaceCommitContent,
  requestedReplaceSchemaFor,
  v6CommitMetadataJson,
} from './content.js';
export { HudiTimelineWriteError } from './errors.js';
export {
  formatInstantTime,
  type InstantTimeZone,
  instantTimeZoneFor,
  latestInstant,
  mintInstantTime,
  nextInstant,
} from './instant-time.js';
export { jacksonPrettyJson, javaHashMap, javaHashMapOrder } from './jackson-json.js';
export {
  baseFileName,
  completedInstantFile,
  type HudiTableVersion,
  heartbeatPath,
  type InstantLocation,
  type InstantOperation,
  type MarkerIoType,
  markerDir,
  markerPath,
  newFileId,
  type PendingInstantFiles,
  pendingInstantFiles,
  relativeFilePath,
  type TimelineLayout,
  timelineLayoutOf,
  type WriteTokenParts,
  writeToken,
} from './names.js';
export * from './schemas.js';
export {
  type CommitMetadata,
  DEFAULT_PARQUET_MAX_FILE_SIZE,
  emptyWriteStat,
  fileSliceMetrics,
  NULL_COMMIT,
  type ReplaceCommitMetadata,
  type RuntimeStats,
  type SliceSizes,
  type WriteStat,
} from './write-stats.js';
