// Validate Lambda: checks the operator's (or profiler's) input against the schema and the configured
// tables before anything changes; one partition → the run's context, several → one child execution each.
import { SFNClient } from '@aws-sdk/client-sfn';
import { z } from 'zod';
import { SfnStarter } from '../adapters/sfn-starter.js';
import {
  type NormalizedRun,
  normalizeRunInput,
  parseStepEvent,
  selectWherePartitions,
  tableToListForWhere,
} from '../core/run-input.js';
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

/**
 * The runtime the validate step reads: the tables and env, and — to list the partitions a `where`-only request
 * selects — the stores and formats (absent: such a request is refused with what to do instead).
 */
export type ValidateRuntime = Pick<WorkflowRuntime, 'tables' | 'env'> &
  Partial<Pick<WorkflowRuntime, 'storeFor' | 'formatFor' | 'clock'>>;

export function createValidateHandler(
  runtime: ValidateRuntime,
  starterFor: (stateMachineArn: string) => StateMachineStarter = (arn) =>
    new SfnStarter(new SFNClient({}), arn),
): (event: unknown) => Promise<ValidateResult> {
  return async (event) => {
    const parsedEvent = parseStepEvent(eventSchema, event, 'validate');
    const { execution, stateMachineArn } = parsedEvent;
    const input = await withWherePartitions(runtime, parsedEvent.input);
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

/**
 * A request with a `where` filter (of a format that takes one) and no partitions, as the partitions it selects: the table's current
 * snapshot (read through its catalog, as the plan step reads it) gives every partition and its values, and those
 * the filter passes become `partitions` — one child execution each, each planning with the filter again. Nothing is
 * written here; any other input is returned as it is, for normalizeRunInput to check in full.
 */
async function withWherePartitions(runtime: ValidateRuntime, raw: unknown): Promise<unknown> {
  const table = tableToListForWhere(raw, runtime.tables);
  const { storeFor, formatFor, clock } = runtime;
  if (table?.bucket === undefined || storeFor === undefined || formatFor === undefined || clock === undefined)
    return raw;
  const format = formatFor({ table: table.name, bucket: table.bucket, format: table.format });
  const snapshot = await format.snapshot(storeFor(table.bucket, table.name), table.prefix, {
    now: clock.now(),
  });
  return selectWherePartitions(raw, table, snapshot.partitions);
}

export const handler = workflowEntry((runtime) => createValidateHandler(runtime));
