// Finalize Lambda: ends every run (compacted, dry run, nothing to do, gave up, failed) — history item,
// partition statistics, lease release — publishes the run's metrics once, and returns the summary.
import { z } from 'zod';
import { parseStepEvent, runContextSchema } from '../core/run-input.js';
import { finalizeRun, type RunSummary } from '../core/workflow/finalize.js';
import type { PlanStepResult } from '../core/workflow/plan.js';
import { runMetrics } from '../core/workflow/run-metrics.js';
import { emitMetrics, type Observability } from '../shared/middleware.js';
import { defaultParquetEngine } from '../shared/parquet-engine.js';
import { type WorkflowRuntime, workflowEntry } from '../shared/workflow-runtime.js';

/**
 * The whole execution state is passed (`state.$: $`): JSONPath fails on a missing path, and which of
 * plan, error and quiet verdict exist depends on where the run ended.
 */
const eventSchema = z.object({
  outcome: z.enum(['compacted', 'dry-run', 'nothing-to-do', 'gave-up', 'failed', 'settled']),
  state: z.looseObject({
    run: runContextSchema,
    plan: z.looseObject({ planKey: z.string(), groupCount: z.number() }).nullish(),
    error: z.object({ Error: z.string().optional(), Cause: z.string().optional() }).nullish(),
    lease: z.looseObject({ quiet: z.looseObject({ reason: z.string() }).nullish() }).nullish(),
  }),
});

/**
 * Without `observability` (tools, tests of the summary) nothing is published. With it, the run's metrics
 * (see `runMetrics`) and one `run finished` log line go out after the run is recorded; a retried finalize
 * publishes again, which is rare: its Retry covers transient store and Lambda service errors, which
 * happen before this point, and nothing after it can fail the step.
 */
export function createFinalizeHandler(
  runtime: WorkflowRuntime,
  observability?: Observability,
): (event: unknown) => Promise<RunSummary> {
  return async (event) => {
    const { outcome, state } = parseStepEvent(eventSchema, event, 'finalize');
    const { run, plan, error } = state;
    const reason =
      outcome === 'gave-up'
        ? state.lease?.quiet?.reason
        : outcome === 'nothing-to-do'
          ? state.plan?.reason
          : undefined;
    const summary = await finalizeRun(
      {
        store: runtime.storeFor(run.bucket, run.table),
        journal: runtime.journalFor(run.bucket, run.table),
        leases: runtime.leases,
        clock: runtime.clock,
        engine: defaultParquetEngine,
        quarantine: runtime.quarantine,
        format: runtime.formatFor(run),
      },
      run,
      {
        outcome,
        ...(plan == null ? {} : { plan: plan as unknown as PlanStepResult }),
        ...(error == null ? {} : { error }),
        ...(typeof reason === 'string' ? { reason } : {}),
      },
    );
    if (observability !== undefined) {
      emitMetrics(observability.metrics, runMetrics(summary));
      // The summary holds no table rows (a rewrite's dry-run preview is an object in the work area it points at).
      observability.logger.info('run finished', { ...summary });
    }
    return summary;
  };
}

export const handler = workflowEntry((runtime, observability) =>
  createFinalizeHandler(runtime, observability),
);
