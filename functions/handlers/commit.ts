// Commit Lambda: publishes a verified group's outputs and retires exactly its planned inputs, resuming
// from whatever journal state a crashed attempt reached (see core/formats/hive/commit.ts).
import { z } from 'zod';
import { coordinationRefusalMetrics } from '../core/metrics.js';
import { parseStepEvent, runContextSchema } from '../core/run-input.js';
import { commitStep, type GroupStepResult } from '../core/workflow/commit.js';
import { emitMetrics, type Observability } from '../shared/middleware.js';
import { defaultParquetEngine } from '../shared/parquet-engine.js';
import { type WorkflowRuntime, workflowEntry } from '../shared/workflow-runtime.js';

const eventSchema = z.object({ run: runContextSchema, groupId: z.string().min(1) });

/**
 * The commit step. A group aborted because the table's log shows a writer that does not coordinate as declared
 * (checked right before the put) is counted in `CoordinationRefusals` (alarmed).
 */
export function createCommitHandler(
  runtime: WorkflowRuntime,
  metrics?: Observability['metrics'],
): (event: unknown) => Promise<GroupStepResult> {
  return async (event) => {
    const { run, groupId } = parseStepEvent(eventSchema, event, 'commit');
    const result = await commitStep(
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
    if (result.coordinationMismatch === true && metrics !== undefined) {
      emitMetrics(metrics, coordinationRefusalMetrics(new Map([[run.table, 1]])));
    }
    return result;
  };
}

export const handler = workflowEntry((runtime, observability) =>
  createCommitHandler(runtime, observability.metrics),
);
