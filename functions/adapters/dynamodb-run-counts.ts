// Exact counts of running compactions in the state table: a slot item per leased partition and a counter per
// table and per deployment, changed only inside the transaction that leases or releases the partition.
import type { CancellationReason } from '@aws-sdk/client-dynamodb';
import type { PartitionRef } from '../core/profiler/model.js';
import type { RunCapReached, RunLimits } from '../core/run-caps.js';

/**
 * Item keys (see README, "State table"). Counters share one item collection, so one consistent query reads
 * every table's counter and the deployment's; slots live per table, so one consistent query reads a
 * table's slots. Table names cannot contain `#`.
 * - `RUNS` / `TOTAL`: runs of the deployment (`running`, `version`);
 * - `RUNS` / `TABLE#<table>`: runs of one table (`running`, `version`);
 * - `RUNS#<table>` / `SLOT#<partition>`: the partition holds a counted lease (`partition`, `since`, `by`).
 */
export const runCountKeys = {
  total: { pk: 'RUNS', sk: 'TOTAL' },
  table: (table: string) => ({ pk: 'RUNS', sk: `TABLE#${table}` }),
  slot: (ref: PartitionRef) => ({ pk: `RUNS#${ref.table}`, sk: `SLOT#${ref.partition}` }),
  slotsOf: (table: string) => ({ pk: `RUNS#${table}`, skPrefix: 'SLOT#' }),
  tablePrefix: 'TABLE#',
} as const;

/** Positions of the count items behind the partition item (index 0) of a counted transaction. */
export const SLOT_INDEX = 1;
export const TABLE_COUNTER_INDEX = 2;
export const TOTAL_COUNTER_INDEX = 3;

/** One element of TransactItems (document-client shape). */
export type TransactItem = Record<string, unknown>;

function counterUpdate(
  tableName: string,
  key: { pk: string; sk: string },
  delta: 1 | -1,
  cap: number | undefined,
): TransactItem {
  return {
    Update: {
      TableName: tableName,
      Key: key,
      // `version` moves with every change, so a recount can be conditioned on nothing having changed.
      UpdateExpression: 'ADD running :delta, version :one',
      ...(cap === undefined
        ? {}
        : { ConditionExpression: 'attribute_not_exists(running) OR running < :cap' }),
      ExpressionAttributeValues: {
        ':delta': delta,
        ':one': 1,
        ...(cap === undefined ? {} : { ':cap': cap }),
      },
      // On a refused schedule: how many runs the counter held, for the decision and the log.
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    },
  };
}

/**
 * The items that count a partition's new lease in: its slot (absent until now) and +1 on its table's and the
 * deployment's counters, each below its cap when `limits` are given (triggers), unconditionally when not
 * (operator runs are counted, never refused).
 */
export function countInItems(
  tableName: string,
  ref: PartitionRef,
  now: number,
  by: string,
  limits?: RunLimits,
): TransactItem[] {
  return [
    {
      Put: {
        TableName: tableName,
        Item: { ...runCountKeys.slot(ref), partition: ref.partition, since: now, by },
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    },
    counterUpdate(tableName, runCountKeys.table(ref.table), 1, limits?.table),
    counterUpdate(tableName, runCountKeys.total, 1, limits?.total),
  ];
}

/** The items that count a partition's lease out: its slot (present until now) and -1 on both counters. */
export function countOutItems(tableName: string, ref: PartitionRef): TransactItem[] {
  return [
    {
      Delete: {
        TableName: tableName,
        Key: runCountKeys.slot(ref),
        ConditionExpression: 'attribute_exists(pk)',
      },
    },
    counterUpdate(tableName, runCountKeys.table(ref.table), -1, undefined),
    counterUpdate(tableName, runCountKeys.total, -1, undefined),
  ];
}

/**
 * A slot that must exist (`present`) or not: a lease that changes state without changing the count (a stale
 * slot adopted by a new lease, an uncounted lease released) is still conditioned on what the slot says.
 */
export function slotCheckItem(tableName: string, ref: PartitionRef, present: boolean): TransactItem {
  return {
    ConditionCheck: {
      TableName: tableName,
      Key: runCountKeys.slot(ref),
      ConditionExpression: present ? 'attribute_exists(pk)' : 'attribute_not_exists(pk)',
    },
  };
}

/** Whether the transaction item at `index` failed its condition. */
export function failedAt(reasons: readonly CancellationReason[], index: number): boolean {
  return reasons[index]?.Code === 'ConditionalCheckFailed';
}

/** The cap a refused counted schedule hit, from the cancellation reasons; undefined when none did. */
export function capReachedOf(
  reasons: readonly CancellationReason[],
  limits: RunLimits,
): RunCapReached | undefined {
  const running = (index: number) => Number(reasons[index]?.Item?.running?.N ?? 0);
  if (failedAt(reasons, TABLE_COUNTER_INDEX)) {
    return { kind: 'cap-reached', scope: 'table', cap: limits.table, running: running(TABLE_COUNTER_INDEX) };
  }
  if (failedAt(reasons, TOTAL_COUNTER_INDEX)) {
    return {
      kind: 'cap-reached',
      scope: 'deployment',
      cap: limits.total,
      running: running(TOTAL_COUNTER_INDEX),
    };
  }
  return undefined;
}

/** Whether a cancellation can only be retried after a pause (another transaction held an item, throttling). */
export function mustWait(reasons: readonly CancellationReason[]): boolean {
  return reasons.some(
    (r) => r.Code !== undefined && r.Code !== 'None' && r.Code !== 'ConditionalCheckFailed',
  );
}

/** Whether the store refuses the request itself (a retry cannot pass). */
export function isInvalid(reasons: readonly CancellationReason[]): boolean {
  return reasons.some((r) => r.Code === 'ValidationError');
}
