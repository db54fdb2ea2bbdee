// Rollback Lambda: the per-group Catch target — removes staged outputs before publishing (or completes
// the commit after), recording the error that failed the group; the Map then goes on with other groups.
import { z } from 'zod';
import { parseStepEvent, runContextSchema } from '../core/run-input.js';
import { type GroupStepResult, rollbackStep } from '../core/workflow/commit.js';
import { defaultParquetEngine } from '../shared/parquet-engine.js';
import { type WorkflowRuntime, workflowEntry } from '../shared/workflow-runtime.js';

const eventSchema = z.object({
  run: runContextSchema,
  groupId: z.string().min(1),
  error: z.object({ Error: z.string().optional(), Cause: z.string().optional() }),
});

export function createRollbackHandler(
  runtime: WorkflowRuntime,
): (event: unknown) => Promise<GroupStepResult> {
  return async (event) => {
    const { run, groupId, error } = parseStepEvent(eventSchema, event, 'rollback');
    return rollbackStep(
      {
        store: runtime.storeFor(run.bucket, run.table),
        journal: runtime.journalFor(run.bucket, run.table),
        clock: runtime.clock,
        engine: defaultParquetEngine,
        format: runtime.formatFor(run),
      },
      run.runId,
      groupId,
      error,
    );
  };
}

export const handler = workflowEntry((runtime) => createRollbackHandler(runtime));
