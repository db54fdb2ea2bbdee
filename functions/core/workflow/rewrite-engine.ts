// The engine a run's compact and verify steps use: the deployment's Parquet engine for a compaction, and for an
// operator's partition rewrite the transforming engine of the transformation its stored plan records — re-planned
// from the plan alone, so both steps (and every retry) apply and verify exactly what the plan step planned.
import type { ObjectStore } from '../../ports/object-store.js';
import type { ParquetEngine } from '../../ports/parquet-engine.js';
import type { PartitionTransforms } from '../../ports/partition-transforms.js';
import { InvalidInputError } from '../errors.js';
import type { RunContext } from '../run-input.js';
import { replanTransform } from '../transform/spec.js';
import { readPlan } from './plan.js';

export interface RunEngineDeps {
  readonly store: ObjectStore;
  readonly engine: ParquetEngine;
  /** The rewrite's reader and writer; needed only by a run with a `transform`. */
  readonly transforms?: PartitionTransforms;
}

/**
 * `deps.engine` for a compaction; for a rewrite, the engine applying its planned transformation over `deps.engine`.
 * @throws InvalidInputError when the run is a rewrite and the step has no transforms, or its plan records none.
 */
export async function runEngine(
  deps: RunEngineDeps,
  run: Pick<RunContext, 'runId' | 'workRoot' | 'transform'>,
): Promise<ParquetEngine> {
  if (run.transform === undefined) return deps.engine;
  if (deps.transforms === undefined)
    throw new InvalidInputError(
      `Run ${run.runId} rewrites its partition through a transformation, which this step was not given the means to apply; nothing was written`,
    );
  const stored = await readPlan(deps.store, run);
  if (stored?.transform === undefined)
    throw new InvalidInputError(
      `Run ${run.runId} rewrites its partition through a transformation, but its stored plan records none; nothing was written. Start a new execution`,
    );
  const { plan, columns } = replanTransform(stored.transform);
  return deps.transforms.engine(plan, columns, deps.engine, stored.transform.inputsPerOutput);
}
