// Delta Lake (issue #17): the log reader, the OPTIMIZE commit and the TableFormat registered as `format: "delta"`.
export type {
  AddAction,
  DeletionVector,
  FileStats,
  MetadataAction,
  ProtocolAction,
  RemoveAction,
  TxnAction,
} from './actions.js';
export { deletionVectorUniqueId, parseStats } from './actions.js';
export { deltaChanges, MAX_VERSIONS_PER_READ } from './changes.js';
export * from './checkpoint-writer.js';
export { DeltaFeatureNotSupportedError, DeltaLogError, type DeltaRefusalKind } from './errors.js';
export { deltaLake } from './format.js';
export {
  type DeltaFile,
  type DeltaMetadata,
  type DeltaSnapshot,
  type DeltaTombstone,
  normalizeTableRoot,
  type ReadDeltaOptions,
  readDeltaSnapshot,
} from './log.js';
export { classifyLogFile, commitFileName, type LogFile } from './log-files.js';
export {
  ACCEPTED_READER_FEATURES,
  ACCEPTED_WRITER_FEATURES,
  checkProtocol,
  MAX_READER_VERSION,
  MAX_WRITER_VERSION,
  refusedFeatureMessage,
  refusedVersionMessage,
  type SupportedProtocol,
} from './protocol.js';
export {
  type ColumnMappingMode,
  type DeltaSchema,
  type MappedColumn,
  mappedColumns,
  parseDeltaSchema,
} from './schema.js';
export * from './stats.js';
export {
  type DeltaTableSnapshot,
  deltaPlanInputs,
  partitionPath,
  snapshotDeltaTable,
  toTableSnapshot,
} from './table-snapshot.js';
export * from './vacuum.js';
