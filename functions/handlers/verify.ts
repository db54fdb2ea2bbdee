// Verify Lambda: re-reads a group's staged outputs and compares them with the inputs' fingerprint
// (staged → verified); a mismatch throws VerificationError, which the state machine never retries.
import { z } from 'zod';
import { type GroupFingerprint, groupFingerprintSchema } from '../core/fingerprint/fingerprint.js';
import { parseStepEvent, runContextSchema } from '../core/run-input.js';
import { type VerifyStepResult, verifyGroup } from '../core/workflow/verify.js';
import { engineWorkers, functionMemoryMb } from '../shared/engine-workers.js';
import { defaultParquetEngine, defaultPartitionTransforms } from '../shared/parquet-engine.js';
import { type WorkflowRuntime, workflowEntry } from '../shared/workflow-runtime.js';

const eventSchema = z.object({
  run: runContextSchema,
  groupId: z.string().min(1),
  /** The compact step's result (its fingerprint is absent when a retry found the group past `staged`). */
  compact: z.looseObject({ fingerprint: groupFingerprintSchema.nullish() }).nullish(),
});

export function createVerifyHandler(runtime: WorkflowRuntime): (event: unknown) => Promise<VerifyStepResult> {
  // Once per cold start: hashing outputs follows this function's own memory, as encoding follows compact's.
  const workers = engineWorkers(functionMemoryMb(runtime.env));
  return async (event) => {
    const { run, groupId, compact } = parseStepEvent(eventSchema, event, 'verify');
    return verifyGroup(
      {
        store: runtime.storeFor(run.bucket, run.table),
        journal: runtime.journalFor(run.bucket, run.table),
        clock: runtime.clock,
        engine: defaultParquetEngine,
        // A run with a `transform` (an operator's partition rewrite) is verified by the engine these give.
        transforms: defaultPartitionTransforms,
        workers,
        // The table's format: a group still pending on the table keeps its sign of life while it is verified.
        format: runtime.formatFor(run),
      },
      run,
      groupId,
      (compact?.fingerprint ?? undefined) as GroupFingerprint | undefined,
    );
  };
}

export const handler = workflowEntry((runtime) => createVerifyHandler(runtime));
