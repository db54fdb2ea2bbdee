// The partition rewrite's reader and writer (ports/partition-transforms.ts): the transforming engine over
// parquet-wasm, its verification and previews over hyparquet.
import type { PartitionTransforms } from '../../ports/partition-transforms.js';
import { transformingEngine } from './transform-rewrite.js';
import { partitionColumns, previewRows } from './transform-verify.js';

export const parquetWasmTransforms: PartitionTransforms = {
  columns: partitionColumns,
  preview: previewRows,
  engine: async (plan, columns, base, inputsPerOutput) =>
    transformingEngine(plan, columns, base, inputsPerOutput),
};
