// Lease Lambda: takes the partition's lease (conditional write; LeaseHeldError names the holder) and
// answers the quiet-partition loop's checks. Release happens in finalize, with the run's record.
import { z } from 'zod';
import { parseStepEvent, runContextSchema } from '../core/run-input.js';
import { acquireLease, checkQuiet, type QuietCheck } from '../core/workflow/lease.js';
import type { LeaseGrant } from '../core/workflow/ports.js';
import { type WorkflowRuntime, workflowEntry } from '../shared/workflow-runtime.js';

const eventSchema = z.discriminatedUnion('action', [
  z.object({ action: z.literal('acquire'), run: runContextSchema }),
  z.object({ action: z.literal('quiet'), run: runContextSchema, round: z.number().int().nonnegative() }),
]);

export function createLeaseHandler(
  runtime: Pick<WorkflowRuntime, 'leases' | 'clock' | 'env'>,
): (event: unknown) => Promise<(LeaseGrant & { quiet: QuietCheck }) | QuietCheck> {
  return async (event) => {
    const parsed = parseStepEvent(eventSchema, event, 'lease');
    const options = {
      maxRounds: runtime.env.QUIET_MAX_ROUNDS,
      maxWaitSeconds: runtime.env.QUIET_MAX_WAIT_SECONDS,
    };
    if (parsed.action === 'acquire')
      return acquireLease(runtime.leases, parsed.run, runtime.clock.now(), options);
    return checkQuiet(runtime.leases, parsed.run, parsed.round, runtime.clock.now(), options);
  };
}

export const handler = workflowEntry((runtime) => createLeaseHandler(runtime));
