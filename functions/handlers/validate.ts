// Validate Lambda: checks the operator's (or profiler's) input against the schema and the configured
// tables before anything changes; one partition → the run's context, several → one child execution each.
import { SFNClient } from '@aws-sdk/client-sfn';
import { z } from 'zod';
import { SfnStarter } from '../adapters/sfn-starter.js';
import { type NormalizedRun, normalizeRunInput, parseStepEvent } from '../core/run-input.js';
import type { StateMachineStarter } from '../ports/state-machine-starter.js';
import { type WorkflowRuntime, workflowEntry } from '../shared/workflow-runtime.js';

const eventSchema = z.object({
  input: z.unknown(),
  execution: z.object({ name: z.string().min(1), id: z.string().optional(), startTime: z.string() }),
  /** The workflow's own ARN, for starting one child execution per partition. */
  stateMachineArn: z.string().min(1),
});

export type ValidateResult =
  | Extract<NormalizedRun, { mode: 'single' }>
  | {
      readonly mode: 'fanout';
      readonly children: readonly {
        name: string;
        partition: string;
        executionArn: string;
        alreadyStarted: boolean;
      }[];
    };

export function createValidateHandler(
  runtime: Pick<WorkflowRuntime, 'tables' | 'env'>,
  starterFor: (stateMachineArn: string) => StateMachineStarter = (arn) =>
    new SfnStarter(new SFNClient({}), arn),
): (event: unknown) => Promise<ValidateResult> {
  return async (event) => {
    const { input, execution, stateMachineArn } = parseStepEvent(eventSchema, event, 'validate');
    const normalized = normalizeRunInput(input, runtime.tables, {
      executionName: execution.name,
      ...(execution.id === undefined ? {} : { executionArn: execution.id }),
      startedAt: Date.parse(execution.startTime),
      versionedBuckets: runtime.env.VERSIONED_BUCKETS,
      workRoot: runtime.env.WORK_ROOT,
    });
    if (normalized.mode === 'single') return normalized;
    // Validated in full above; only now are children started (same names on a retry: no duplicates).
    const starter = starterFor(stateMachineArn);
    const children = [];
    for (const child of normalized.children) {
      const started = await starter.start(child.name, child.input);
      children.push({
        name: child.name,
        partition: child.partition,
        executionArn: started.executionArn,
        alreadyStarted: started.alreadyStarted,
      });
    }
    return { mode: 'fanout', children };
  };
}

export const handler = workflowEntry((runtime) => createValidateHandler(runtime));
