// Compact Lambda: rewrites one group into its staging prefix and journals the outputs (planned → staged);
// returns the inputs' fingerprint for the verify step.
import { z } from 'zod';
import { parseStepEvent, runContextSchema } from '../core/run-input.js';
import { type CompactDeps, type CompactStepResult, compactGroup } from '../core/workflow/compact.js';
import { engineWorkers, functionMemoryMb, workerCeiling } from '../shared/engine-workers.js';
import { defaultParquetEngine, defaultPartitionTransforms } from '../shared/parquet-engine.js';
import { type WorkflowRuntime, workflowEntry } from '../shared/workflow-runtime.js';

const eventSchema = z.object({
  run: runContextSchema,
  group: z.object({ groupId: z.string().min(1), expectedOutputFiles: z.number().int().positive() }),
});

/** A sort may hold this share of the function's memory decoded (the rest: wasm, buffers, the runtime). */
const SORT_MEMORY_SHARE = 0.4;

export function createCompactHandler(
  runtime: WorkflowRuntime,
  overrides: Partial<Pick<CompactDeps, 'engine'>> = {},
): (event: unknown) => Promise<CompactStepResult> {
  // Once per cold start: the function's memory decides its default workers and the most a table may ask for.
  const memoryMb = functionMemoryMb(runtime.env);
  const workers = engineWorkers(memoryMb);
  const maxWorkers = workerCeiling(memoryMb);
  return async (event) => {
    const { run, group } = parseStepEvent(eventSchema, event, 'compact');
    return compactGroup(
      {
        store: runtime.storeFor(run.bucket, run.table),
        journal: runtime.journalFor(run.bucket, run.table),
        clock: runtime.clock,
        engine: defaultParquetEngine,
        // A run with a `transform` (an operator's partition rewrite) is rewritten by the engine these give.
        transforms: defaultPartitionTransforms,
        sortMemoryBudgetBytes: Math.floor(runtime.env.COMPACT_MEMORY_MB * 1024 * 1024 * SORT_MEMORY_SHARE),
        workers,
        maxWorkers,
        quarantine: runtime.quarantine,
        // The table's format bound to its settings: it reads deleted rows and prepares a group before its rewrite
        // (e.g. an instant minted under the table's declared lock).
        format: runtime.formatFor(run),
        ...overrides,
      },
      run,
      group,
    );
  };
}

export const handler = workflowEntry((runtime) => createCompactHandler(runtime));
