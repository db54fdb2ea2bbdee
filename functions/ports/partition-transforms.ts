// What an operator's partition rewrite needs of a Parquet reader and writer, beyond the ParquetEngine every run
// uses: the partition's columns to plan against, a preview of rows as rewritten, and an engine that applies a
// planned transformation (and verifies it by re-deriving it from the inputs). Implemented over parquet-wasm and
// hyparquet (adapters/parquet-wasm/transforms.ts); the CLI and the workflow's steps take the same one.
import type { InputColumn, TransformPlan } from '../core/transform/spec.js';
import type { ObjectStore } from './object-store.js';
import type { ParquetEngine } from './parquet-engine.js';

export interface PartitionTransforms {
  /** The top-level columns of the Parquet file `key`, as a transformation is planned against them. */
  columns(store: ObjectStore, key: string): Promise<InputColumn[]>;
  /**
   * The first `limit` rows of `key` as `plan` writes them, one value per written column (the dry run's preview).
   * @throws TransformValueError for a value the plan cannot write, as the rewrite would fail on it.
   */
  preview(store: ObjectStore, key: string, plan: TransformPlan, limit: number): Promise<unknown[][]>;
  /**
   * The engine of a rewrite of `plan` over inputs of `columns`: its `rewriteGroup` writes the group's inputs through
   * the plan, `inputsPerOutput[n]` consecutive inputs into its n-th output (absent: one output per input), its
   * `verifyOutputs` compares each output with its inputs re-derived by an independent reader and interpreter;
   * footers are read by `base`.
   */
  engine(
    plan: TransformPlan,
    columns: readonly InputColumn[],
    base: ParquetEngine,
    inputsPerOutput?: readonly number[],
  ): Promise<ParquetEngine>;
}
