// Plan Lambda: settles what earlier runs left in the partition, inventories and plans it, stores the plan
// and the Map's items file, creates the journal entries; returns only small data (counts, cost, where the plan is).
import { z } from 'zod';
import { parseStepEvent, runContextSchema } from '../core/run-input.js';
import { type PlanStepResult, planRun } from '../core/workflow/plan.js';
import { defaultParquetEngine } from '../shared/parquet-engine.js';
import { type WorkflowRuntime, workflowEntry } from '../shared/workflow-runtime.js';

const eventSchema = z.object({ run: runContextSchema });

export function createPlanHandler(runtime: WorkflowRuntime): (event: unknown) => Promise<PlanStepResult> {
  return async (event) => {
    const { run } = parseStepEvent(eventSchema, event, 'plan');
    return planRun(
      {
        store: runtime.storeFor(run.bucket, run.table),
        journal: runtime.journalFor(run.bucket, run.table),
        clock: runtime.clock,
        engine: defaultParquetEngine,
        leases: runtime.leases,
        quarantine: runtime.quarantine,
        format: runtime.formatFor(run),
      },
      run,
      { inlineGroupLimit: runtime.env.INLINE_GROUP_LIMIT, compactMemoryMb: runtime.env.COMPACT_MEMORY_MB },
    );
  };
}

export const handler = workflowEntry((runtime) => createPlanHandler(runtime));
