// Plan Lambda: settles what earlier runs left in the partition, inventories and plans it, stores the plan
// and the Map's items file, creates the journal entries; returns only small data (counts, cost, where the plan is).
import { z } from 'zod';
import { CoordinationMismatchError } from '../core/errors.js';
import { coordinationRefusalMetrics } from '../core/metrics.js';
import { parseStepEvent, runContextSchema } from '../core/run-input.js';
import { type PlanStepResult, planRun } from '../core/workflow/plan.js';
import { emitMetrics, type Observability } from '../shared/middleware.js';
import { defaultParquetEngine, defaultPartitionTransforms } from '../shared/parquet-engine.js';
import { type WorkflowRuntime, workflowEntry } from '../shared/workflow-runtime.js';

const eventSchema = z.object({ run: runContextSchema });

/**
 * The plan step. A table refused because its log shows a writer that does not coordinate as declared
 * (CoordinationMismatchError) is counted in `CoordinationRefusals` (alarmed) before the error fails the run.
 */
export function createPlanHandler(
  runtime: WorkflowRuntime,
  metrics?: Observability['metrics'],
): (event: unknown) => Promise<PlanStepResult> {
  return async (event) => {
    const { run } = parseStepEvent(eventSchema, event, 'plan');
    try {
      return await planRun(
        {
          store: runtime.storeFor(run.bucket, run.table),
          journal: runtime.journalFor(run.bucket, run.table),
          clock: runtime.clock,
          engine: defaultParquetEngine,
          // A run with a `transform` (an operator's partition rewrite) is planned through these.
          transforms: defaultPartitionTransforms,
          leases: runtime.leases,
          quarantine: runtime.quarantine,
          format: runtime.formatFor(run),
        },
        run,
        { inlineGroupLimit: runtime.env.INLINE_GROUP_LIMIT, compactMemoryMb: runtime.env.COMPACT_MEMORY_MB },
      );
    } catch (err) {
      if (err instanceof CoordinationMismatchError && metrics !== undefined) {
        emitMetrics(metrics, coordinationRefusalMetrics(new Map([[run.table, 1]])));
      }
      throw err;
    }
  };
}

export const handler = workflowEntry((runtime, observability) =>
  createPlanHandler(runtime, observability.metrics),
);
