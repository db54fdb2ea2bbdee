// One partition compacted end to end (plan → compact → verify → commit → finalize, the workflow's own steps) over
// an in-memory S3-like store, every request counted as S3 bills it, per step: what the bench prices (issue #30's
// all-in line) and what the cost tests hold the run's estimate to. Journal and leases are in memory (DynamoDB in a
// deployment, not S3 requests).
import { MemoryJournal } from '../../functions/adapters/memory-journal.js';
import { MemoryLeases } from '../../functions/adapters/memory-leases.js';
import { MemoryObjectStore } from '../../functions/adapters/memory-object-store.js';
import { memoryBudget, withMemoryBudget } from '../../functions/core/memory-budget.js';
import { buildRunContext, type RunChoices } from '../../functions/core/run-input.js';
import type { RequestCounts } from '../../functions/core/workflow/cost.js';
import {
  type PartitionRunResult,
  runPartition,
  WORKFLOW_STEPS,
  type WorkflowSteps,
} from '../../functions/core/workflow/run.js';
import { ManualClock } from '../../functions/ports/clock.js';
import type { RetireMode } from '../../functions/ports/journal.js';
import { defaultParquetEngine } from '../../functions/shared/parquet-engine.js';
import { countingStore, type LoggedRequest } from './counting-store.js';

/** A counted run: its result, all its requests, and those of each workflow step. */
export interface CountedRun {
  readonly result: PartitionRunResult;
  readonly counted: RequestCounts;
  readonly bySteps: Readonly<Record<string, RequestCounts>>;
  /** Each step's requests in order, with the keys they named (for finding which request a count missed). */
  readonly logBySteps: Readonly<Record<string, readonly LoggedRequest[]>>;
}

export interface CountedRunOptions {
  /** Table name and prefix (`<prefix>/<partition>/…` holds the files). */
  readonly table: string;
  /** The partition's directory under the table, `date=2024-01-01`. */
  readonly partition: string;
  /**
   * How inputs retire, on a store versioned exactly when the mode needs it: `delete-versioned` (a versioned
   * bucket), `delete-rebuild` (an unversioned bucket's bin-pack), `trash` (an unversioned bucket's sort).
   */
  readonly mode: RetireMode;
  /** Planning choices besides `force` and `quietMinutes: 0`. */
  readonly choices?: RunChoices;
  /** Compact Lambda memory the plan's estimate assumes. @default 1769 */
  readonly compactMemoryMb?: number;
}

/**
 * Writes the files `fill` puts into a fresh store (uncounted), then runs their partition to the end on the
 * counting store. Trash is asked for directly (what sort and z-order runs use on an unversioned bucket), so every
 * mode is counted on the same bin-pack run.
 */
export async function countedWorkflowRun(
  fill: (put: (key: string, bytes: Uint8Array) => Promise<void>) => Promise<void>,
  options: CountedRunOptions,
): Promise<CountedRun> {
  const { mode } = options;
  // Listed as S3's ListObjectsV2 lists (no version ids): a version id is learnt from a GET's or a HEAD's response.
  const inner = new MemoryObjectStore({ versioned: mode === 'delete-versioned', listsVersionIds: false });
  await fill((key, bytes) => inner.put(key, bytes).then(() => undefined));
  const counting = countingStore(inner);
  const context = buildRunContext(
    { name: options.table, prefix: options.table, bucket: 'lake' },
    options.partition,
    { force: true, quietMinutes: 0, ...options.choices },
    {
      executionName: `counted-${mode}`,
      startedAt: 0,
      versionedBuckets: mode === 'delete-versioned' ? ['lake'] : [],
    },
  );
  const run = mode === 'trash' ? { ...context, retireMode: mode } : context;
  const bySteps: Record<string, RequestCounts> = {};
  const logBySteps: Record<string, LoggedRequest[]> = {};
  const steps = Object.fromEntries(
    Object.entries(WORKFLOW_STEPS).map(([name, step]) => [
      name,
      async (...args: unknown[]) => {
        const before = counting.counts();
        const logged = counting.requests().length;
        try {
          return await (step as (...a: unknown[]) => Promise<unknown>)(...args);
        } finally {
          const after = counting.counts();
          logBySteps[name] = [...(logBySteps[name] ?? []), ...counting.requests().slice(logged)];
          const seen = bySteps[name] ?? { get: 0, put: 0, copy: 0, delete: 0 };
          bySteps[name] = {
            get: seen.get + after.get - before.get,
            put: seen.put + after.put - before.put,
            copy: seen.copy + after.copy - before.copy,
            delete: seen.delete + after.delete - before.delete,
          };
        }
      },
    ]),
  ) as unknown as WorkflowSteps;
  // The steps run with the compact function's memory, as its Lambda would (the engine sizes its small-input cache
  // from it), and the plan's estimate assumes the same.
  const compactMemoryMb = options.compactMemoryMb ?? 1769;
  const result = await withMemoryBudget(memoryBudget(compactMemoryMb), () =>
    runPartition(
      {
        store: counting.store,
        journal: new MemoryJournal(),
        clock: new ManualClock(5_000),
        leases: new MemoryLeases(),
        engine: defaultParquetEngine,
        wait: async () => undefined,
      },
      run,
      { plan: { inlineGroupLimit: 40, compactMemoryMb } },
      {},
      steps,
    ),
  );
  return { result, counted: counting.counts(), bySteps, logBySteps };
}
