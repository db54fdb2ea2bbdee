// Lease Lambda: takes the partition's lease (conditional write; LeaseHeldError names the holder; a dead
// holder's lease is taken over) and answers the quiet-partition loop's checks. Release happens in finalize.
import { SFNClient } from '@aws-sdk/client-sfn';
import { z } from 'zod';
import { SfnStarter } from '../adapters/sfn-starter.js';
import { parseStepEvent, runContextSchema } from '../core/run-input.js';
import { acquireLease, checkQuiet, type QuietCheck } from '../core/workflow/lease.js';
import type { LeaseGrant } from '../core/workflow/ports.js';
import type { StateMachineStarter } from '../ports/state-machine-starter.js';
import { type WorkflowRuntime, workflowEntry } from '../shared/workflow-runtime.js';

const eventSchema = z.discriminatedUnion('action', [
  z.object({
    action: z.literal('acquire'),
    run: runContextSchema,
    /** This workflow's ARN: the holder of a lease is described through it (`$$.StateMachine.Id`). */
    stateMachineArn: z.string().min(1).optional(),
  }),
  z.object({ action: z.literal('quiet'), run: runContextSchema, round: z.number().int().nonnegative() }),
]);

export function createLeaseHandler(
  runtime: Pick<WorkflowRuntime, 'leases' | 'clock' | 'env'>,
  executionsFor: (stateMachineArn: string) => Pick<StateMachineStarter, 'describe'> = (arn) =>
    new SfnStarter(new SFNClient({}), arn),
): (event: unknown) => Promise<(LeaseGrant & { quiet: QuietCheck }) | QuietCheck> {
  return async (event) => {
    const parsed = parseStepEvent(eventSchema, event, 'lease');
    const options = {
      maxRounds: runtime.env.QUIET_MAX_ROUNDS,
      maxWaitSeconds: runtime.env.QUIET_MAX_WAIT_SECONDS,
    };
    if (parsed.action === 'acquire') {
      const executions =
        parsed.stateMachineArn === undefined ? undefined : executionsFor(parsed.stateMachineArn);
      return acquireLease(runtime.leases, parsed.run, runtime.clock.now(), options, executions);
    }
    return checkQuiet(runtime.leases, parsed.run, parsed.round, runtime.clock.now(), options);
  };
}

export const handler = workflowEntry((runtime) => createLeaseHandler(runtime));
