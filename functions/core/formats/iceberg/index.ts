// The Iceberg metadata reader's public surface (not a registered TableFormat yet: Iceberg stays refused everywhere
// until rewriting with deletes and committing through catalogs exist). Pure core: all I/O goes through ObjectStore.
export { decodeAvroContainer, IdRecord } from './avro.js';
export { describeTable, findCurrentMetadata, type LoadedTable, loadTable } from './catalog.js';
export { decodePortableRoaring64, readDeletionVector } from './deletion-vectors.js';
export { IcebergMetadataError, IcebergUnsupportedError } from './errors.js';
export { parseJsonExact } from './json.js';
export {
  type DeleteKind,
  type LiveDataFile,
  type LiveDeleteFile,
  partitionKey,
  readSnapshotFiles,
  type SnapshotFiles,
} from './live-files.js';
export {
  type ContentFile,
  type ContentKind,
  type ManifestEntry,
  type ManifestFile,
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
export { PathResolver } from './paths.js';
export { partitionPath, readIcebergSnapshot, toTableSnapshot } from './snapshot.js';
export {
  applyTransform,
  decodeSingleValue,
  humanPartitionValue,
  type IcebergValue,
  icebergHash,
  murmur3x86_32,
  parseTransform,
  type Transform,
  transformToString,
} from './transforms.js';
