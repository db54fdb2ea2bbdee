// Compact Lambda: rewrites one group into its staging prefix and journals the outputs (planned → staged);
// returns the inputs' fingerprint for the verify step.
import { availableParallelism } from 'node:os';
import { z } from 'zod';
import { parseStepEvent, runContextSchema } from '../core/run-input.js';
import { type CompactDeps, type CompactStepResult, compactGroup } from '../core/workflow/compact.js';
import { type WorkflowRuntime, workflowEntry } from '../shared/workflow-runtime.js';

const eventSchema = z.object({
  run: runContextSchema,
  group: z.object({ groupId: z.string().min(1), expectedOutputFiles: z.number().int().positive() }),
});

/** A sort may hold this share of the function's memory decoded (the rest: wasm, buffers, the runtime). */
const SORT_MEMORY_SHARE = 0.4;

/**
 * Encoding worker threads: the vCPUs Lambda gives (1 per 1,769 MB; the 3,008 MB default gets
 * ~1.7, worth two threads), never more than the cores the runtime sees — it reports 2 even when
 * a small function gets a fraction of one, and each worker holds its own wasm heap (~200 MB).
 */
export function compactWorkers(memoryMb: number, cores = availableParallelism()): number {
  return Math.max(1, Math.min(cores, Math.round(memoryMb / 1769)));
}

export function createCompactHandler(
  runtime: WorkflowRuntime,
  overrides: Pick<CompactDeps, 'rewrite'> = {},
): (event: unknown) => Promise<CompactStepResult> {
  return async (event) => {
    const { run, group } = parseStepEvent(eventSchema, event, 'compact');
    return compactGroup(
      {
        store: runtime.storeFor(run.bucket),
        journal: runtime.journalFor(run.bucket),
        clock: runtime.clock,
        sortMemoryBudgetBytes: Math.floor(runtime.env.COMPACT_MEMORY_MB * 1024 * 1024 * SORT_MEMORY_SHARE),
        workers: compactWorkers(runtime.env.COMPACT_MEMORY_MB),
        ...overrides,
      },
      run,
      group,
    );
  };
}

export const handler = workflowEntry((runtime) => createCompactHandler(runtime));
