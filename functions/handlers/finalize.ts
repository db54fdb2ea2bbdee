// Finalize Lambda: ends every run (compacted, dry run, nothing to do, gave up, failed) — history item,
// partition statistics, lease release — and returns the summary the completion event and SNS carry.
import { z } from 'zod';
import { parseStepEvent, runContextSchema } from '../core/run-input.js';
import { finalizeRun, type RunSummary } from '../core/workflow/finalize.js';
import type { PlanStepResult } from '../core/workflow/plan.js';
import { type WorkflowRuntime, workflowEntry } from '../shared/workflow-runtime.js';

/**
 * The whole execution state is passed (`state.$: $`): JSONPath fails on a missing path, and which of
 * plan, error and quiet verdict exist depends on where the run ended.
 */
const eventSchema = z.object({
  outcome: z.enum(['compacted', 'dry-run', 'nothing-to-do', 'gave-up', 'failed']),
  state: z.looseObject({
    run: runContextSchema,
    plan: z.looseObject({ planKey: z.string(), groupCount: z.number() }).nullish(),
    error: z.object({ Error: z.string().optional(), Cause: z.string().optional() }).nullish(),
    lease: z.looseObject({ quiet: z.looseObject({ reason: z.string() }).nullish() }).nullish(),
  }),
});

export function createFinalizeHandler(runtime: WorkflowRuntime): (event: unknown) => Promise<RunSummary> {
  return async (event) => {
    const { outcome, state } = parseStepEvent(eventSchema, event, 'finalize');
    const { run, plan, error } = state;
    const reason =
      outcome === 'gave-up'
        ? state.lease?.quiet?.reason
        : outcome === 'nothing-to-do'
          ? state.plan?.reason
          : undefined;
    return finalizeRun(
      {
        store: runtime.storeFor(run.bucket),
        journal: runtime.journalFor(run.bucket),
        leases: runtime.leases,
        clock: runtime.clock,
      },
      run,
      {
        outcome,
        ...(plan == null ? {} : { plan: plan as unknown as PlanStepResult }),
        ...(error == null ? {} : { error }),
        ...(typeof reason === 'string' ? { reason } : {}),
      },
    );
  };
}

export const handler = workflowEntry((runtime) => createFinalizeHandler(runtime));
