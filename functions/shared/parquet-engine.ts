// The Parquet engine the deployment runs: the one place the default ParquetEngine is chosen, for the compact
// and verify functions, the CLI and the tools; core never picks one, it is handed one.
import { parquetWasmEngine } from '../adapters/parquet-wasm/engine.js';
import { parquetWasmTransforms } from '../adapters/parquet-wasm/transforms.js';
import type { ParquetEngine } from '../ports/parquet-engine.js';
import type { PartitionTransforms } from '../ports/partition-transforms.js';

/**
 * parquet-wasm: on the benchmark, the fastest engine that kept row order, at the lowest peak memory
 * (docs: Engine). Import this, not the adapter, so switching engines is a one-line change here.
 */
export const defaultParquetEngine: ParquetEngine = parquetWasmEngine;

/**
 * The partition rewrite's reader and writer (an operator's transformation, see core/transform/), over the same
 * Parquet libraries as the default engine: the plan, compact and verify functions and the CLI take this one.
 */
export const defaultPartitionTransforms: PartitionTransforms = parquetWasmTransforms;
