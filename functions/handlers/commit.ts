// Commit Lambda: publishes a verified group's outputs and retires exactly its planned inputs, resuming
// from whatever journal state a crashed attempt reached (see core/formats/hive/commit.ts).
import { z } from 'zod';
import { parseStepEvent, runContextSchema } from '../core/run-input.js';
import { commitStep, type GroupStepResult } from '../core/workflow/commit.js';
import { defaultParquetEngine } from '../shared/parquet-engine.js';
import { type WorkflowRuntime, workflowEntry } from '../shared/workflow-runtime.js';

const eventSchema = z.object({ run: runContextSchema, groupId: z.string().min(1) });

export function createCommitHandler(runtime: WorkflowRuntime): (event: unknown) => Promise<GroupStepResult> {
  return async (event) => {
    const { run, groupId } = parseStepEvent(eventSchema, event, 'commit');
    return commitStep(
      {
        store: runtime.storeFor(run.bucket, run.table),
        journal: runtime.journalFor(run.bucket, run.table),
        clock: runtime.clock,
        engine: defaultParquetEngine,
        format: runtime.formatFor(run),
      },
      run.runId,
      groupId,
    );
  };
}

export const handler = workflowEntry((runtime) => createCommitHandler(runtime));
