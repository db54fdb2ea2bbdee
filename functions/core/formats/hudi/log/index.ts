// Hudi log files: framing, block contents, the scan of a file slice's logs and the merge of their records with its
// base file — pure functions over bytes, for Merge-on-Read compaction — and the writer of blocks and log file names
// (the sample appender's delta commits). The timeline (which instants completed, which slice is live) is the caller's.
export { type FramedBlock, type LogBlock, readLogBlocks } from './blocks.js';
export { DecodeBudget } from './budget.js';
export { type BlockRecords, type DeleteEntry, decodeBlockRecords, type OrderingValue } from './content.js';
export { isLogDecimal, type LogDecimal } from './decimal.js';
export {
  HudiLogFormatError,
  HudiLogUnsupportedError,
  HudiLogWriteError,
  HudiMergeUnsupportedError,
} from './errors.js';
export {
  type BaseRowKey,
  baseComparisonsCannotRefuse,
  compareOrdering,
  comparesAnyWithBase,
  droppedRows,
  LogRecordMerger,
  type MergeConfig,
  type MergedLogRecord,
  type MergePolicy,
  mergeLogBlocks,
  mergePolicy,
  mergeSlice,
  type SliceMerge,
} from './merge.js';
export {
  compareLogFileNames,
  type LogFileInput,
  type LogFileName,
  type LogScan,
  parseLogFileName,
  type ScanOptions,
  scanLogFiles,
} from './scanner.js';
export {
  avroDataBlock,
  avroDataContent,
  BLOCK_CONTENT_VERSION,
  type DeleteInput,
  type DeleteOrderingValue,
  deleteBlock,
  deleteContent,
  encodeAvroRecords,
  encodeLogBlock,
  type LogBlockInput,
  type LogBlockMetadata,
  type LogFileNameInput,
  logFileInstant,
  logFileName,
  parquetDataBlock,
  rollbackBlock,
} from './writer.js';
