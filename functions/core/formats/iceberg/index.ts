// Apache Iceberg (issue #18): the reader, the replace commit and the TableFormat registered as `format: "iceberg"`
// (path-based tables; data files with deletes are left alone until the rewrite applies deletes), and the table's
// maintenance: expire_snapshots and remove_orphan_files. Pure core: all
// I/O goes through ObjectStore.
export { decodeAvroContainer, encodeAvroContainer, IdRecord } from './avro.js';
export {
  type CatalogCommitOutcome,
  describeTable,
  findCurrentMetadata,
  type IcebergCatalog,
  type LoadedTable,
  loadTable,
  PathCatalog,
  readMetadataText,
} from './catalog.js';
export {
  type AddedDataFile,
  type CommitOptions,
  type CommitResult,
  commitAppend,
  commitReplace,
  commitRowDelta,
  planSnapshot,
  type ReplacePlan,
  type ReplaceRequest,
  rebaseConflicts,
} from './commit.js';
export { decodePortableRoaring64, readDeletionVector } from './deletion-vectors.js';
export {
  IcebergCommitConflictError,
  IcebergMaintenanceRefusedError,
  IcebergMetadataError,
  IcebergUnsupportedError,
} from './errors.js';
export {
  DEFAULT_MAX_SNAPSHOT_AGE_MS,
  DEFAULT_MIN_SNAPSHOTS_TO_KEEP,
  type ExpireSnapshotsOptions,
  type ExpireSnapshotsReport,
  type ExpiryRules,
  expireSnapshots,
  GC_ENABLED_PROPERTY,
  type IcebergExpiredKind,
  type IcebergFileCandidate,
  MAX_REF_AGE_PROPERTY,
  MAX_SNAPSHOT_AGE_PROPERTY,
  MIN_SNAPSHOTS_TO_KEEP_PROPERTY,
  planSnapshotExpiry,
  type SnapshotExpiry,
  unreachableAfterExpiry,
} from './expire.js';
export { icebergTable } from './format.js';
export {
  GROUP_ID_PROPERTY,
  type IcebergCommitterOptions,
  type IcebergGroupState,
  icebergCommitter,
  icebergFormatState,
  icebergGroupState,
  ownSnapshotId,
  RUN_ID_PROPERTY,
} from './group-commit.js';
export { jsonLong, parseJsonExact, parseJsonKeepingLongs, stringifyJsonKeepingLongs } from './json.js';
export {
  type DeleteKind,
  type LiveDataFile,
  type LiveDeleteFile,
  partitionKey,
  readSnapshotFiles,
  type SnapshotFiles,
} from './live-files.js';
export {
  type ManifestContentFile,
  type ManifestListEntry,
  type ManifestStats,
  type ManifestWriteEntry,
  manifestEntrySchema,
  manifestListSchema,
  partitionTypes,
  summarisePartitions,
  writeManifest,
  writeManifestList,
} from './manifest-writer.js';
export {
  type ContentFile,
  type ContentKind,
  type ManifestEntry,
  type ManifestFile,
  type PartitionFieldSummary,
  type PartitionTuple,
  POSITION_DELETE_FILE_PATH_ID,
  readManifest,
  readManifestList,
} from './manifests.js';
export {
  findField,
  type IcebergField,
  type IcebergSchema,
  type IcebergType,
  MAX_FORMAT_VERSION,
  type PartitionField,
  type PartitionSpec,
  parseTableMetadata,
  type Snapshot,
  type SnapshotRef,
  type SortOrder,
  schemaById,
  specById,
  type TableMetadata,
} from './metadata.js';
export {
  type DataFileMetrics,
  type MetricsConfig,
  type MetricsMode,
  metricsConfig,
  parquetMetrics,
  parseFooterForMetrics,
  parseMetricsMode,
  readParquetMetrics,
  truncateBinary,
  truncateBinaryMax,
  truncateString,
  truncateStringMax,
} from './metrics.js';
export {
  MIN_ORPHAN_GRACE_HOURS,
  type OrphanCandidate,
  type OrphanKeepReason,
  planOrphans,
  type RemoveOrphanFilesOptions,
  type RemoveOrphanFilesReport,
  referencedKeys,
  removeOrphanFiles,
} from './orphans.js';
export { PathResolver } from './paths.js';
export { partitionPath, readIcebergSnapshot, toTableSnapshot } from './snapshot.js';
export {
  type IcebergTableSnapshot,
  icebergPartitionOf,
  snapshotIcebergTable,
  specFolders,
  toPortSnapshot,
} from './table-snapshot.js';
export {
  applyTransform,
  decodeSingleValue,
  encodeSingleValue,
  humanPartitionValue,
  type IcebergValue,
  icebergHash,
  murmur3x86_32,
  parseTransform,
  partitionResultType,
  type Transform,
  transformToString,
} from './transforms.js';
