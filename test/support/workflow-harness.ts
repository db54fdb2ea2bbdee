// Test helper for the compaction workflow on the local cloud: starts the WorkflowStack, writes sample
// partitions, runs executions, and reads partitions back (keys, DuckDB row multisets, journal, items).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { GetItemCommand, QueryCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { App } from 'aws-cdk-lib';
import { S3ObjectStore } from '../../functions/adapters/s3-object-store.js';
import type { ObjectInfo } from '../../functions/ports/object-store.js';
import { writeSampleLake } from '../../functions/tools/sample-lake.js';
import type { CompactionWorkflowProps } from '../../infra/compaction-workflow.js';
import { LocalCloud } from '../../infra/local/local-cloud.js';
import type { StepFunctionsOptions } from '../../infra/local/step-functions.js';
import { type DuckDb, openDuckDb, sqlString } from './duckdb.js';
import { sharedDynamoDb } from './dynamodb-local.js';
import { WORKFLOW_BUCKET, WorkflowStack } from './workflow-stack.js';

/** Runs before a Task state's real handler (by state name); throwing fails that attempt. */
export type TaskHook = (input: unknown) => Promise<void> | void;

/** A Task state's replacement (by state name), e.g. a handler built over a fault-injecting store. */
export type TaskOverride = (input: unknown) => Promise<unknown>;

/** Task states whose real handler can be preceded by a hook. */
export const HOOKABLE_STATES = {
  'Plan partition': 'plan',
  'Compact group': 'compact',
  'Compact group (distributed)': 'compact',
  'Verify group': 'verify',
  'Verify group (distributed)': 'verify',
  'Commit group': 'commit',
  'Commit group (distributed)': 'commit',
} as const;

export interface WorkflowHarness {
  readonly cloud: LocalCloud;
  /** Hooks by state name, set and cleared by tests. */
  readonly hooks: Map<string, TaskHook>;
  readonly stack: WorkflowStack;
  readonly store: S3ObjectStore;
  readonly scratch: string;
  stop(): Promise<void>;
}

/** Starts the local cloud on a fresh WorkflowStack (no bundling: handlers run from source). */
export async function startWorkflowHarness(
  workflow: Partial<Omit<CompactionWorkflowProps, 'stateTable'>> = {},
  stepFunctions: StepFunctionsOptions = {},
): Promise<WorkflowHarness> {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new WorkflowStack(app, 'WorkflowTest', { workflow });
  const hooks = new Map<string, TaskHook>();
  let started: LocalCloud | undefined;
  // Each hookable state runs its hook, then the real handler of its function (errors keep their names).
  const taskOverrides = Object.fromEntries(
    Object.entries(HOOKABLE_STATES).map(([state, fn]) => [
      state,
      async (input: unknown) => {
        await hooks.get(state)?.(input);
        return (started as LocalCloud).invoke(stack.workflow.functions[fn] as never, input);
      },
    ]),
  );
  // DynamoDB Local occasionally misses its start deadline on a loaded machine: one more try.
  const start = async () =>
    LocalCloud.start({
      stack,
      buckets: [WORKFLOW_BUCKET],
      sharedDynamoDb: await sharedDynamoDb(),
      stepFunctions: {
        retryIntervalMs: 0,
        waitTimeMs: 0,
        ...stepFunctions,
        taskOverrides: { ...taskOverrides, ...stepFunctions.taskOverrides },
      },
    });
  const cloud = await start().catch((error: unknown) => {
    if (error instanceof Error && error.name === 'LocalCloudStartupError') return start();
    throw error;
  });
  started = cloud;
  const scratch = await mkdtemp(path.join(tmpdir(), 'workflow-test-'));
  return {
    cloud,
    hooks,
    stack,
    store: new S3ObjectStore({ client: cloud.s3, bucket: WORKFLOW_BUCKET }),
    scratch,
    async stop() {
      await cloud.stop();
      await rm(scratch, { recursive: true, force: true });
    },
  };
}

/** Writes `files` sample files (rows 20–60 each) into `events/date=<day>/`; returns their keys. */
export async function writePartition(
  store: S3ObjectStore,
  day: string,
  files: number,
  seed = 7,
): Promise<{ keys: string[]; rows: number }> {
  const keys: string[] = [];
  const summary = await writeSampleLake(
    async (key, bytes) => {
      await store.put(key, bytes);
      keys.push(key);
    },
    { table: 'events', days: 1, batches: files, startDate: day, minRows: 20, maxRows: 60, seed },
  );
  return { keys, rows: summary.rows };
}

/** Objects directly in a partition directory, sorted by key. */
export async function listPartition(store: S3ObjectStore, day: string): Promise<ObjectInfo[]> {
  const dir = `events/date=${day}/`;
  const out: ObjectInfo[] = [];
  for await (const o of store.listAll(dir)) if (!o.key.slice(dir.length).includes('/')) out.push(o);
  return out.sort((a, b) => (a.key < b.key ? -1 : 1));
}

/** Every key under a prefix. */
export async function keysUnder(store: S3ObjectStore, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of store.listAll(prefix)) keys.push(o.key);
  return keys;
}

/** Every row of the given objects, canonically sorted, as JSON lines (a multiset, comparable with toEqual). */
export async function rowMultiset(
  store: S3ObjectStore,
  keys: readonly string[],
  scratch: string,
  shared?: DuckDb,
): Promise<string[]> {
  if (keys.length === 0) return [];
  const dir = await mkdtemp(path.join(scratch, 'rows-'));
  const files: string[] = [];
  for (const [i, key] of keys.entries()) {
    const file = path.join(dir, `${i}.parquet`);
    await writeFile(file, await store.get(key));
    files.push(file);
  }
  const db = shared ?? (await openDuckDb());
  try {
    const list = `[${files.map(sqlString).join(', ')}]`;
    const rows = await db.rows(`SELECT * FROM read_parquet(${list}) ORDER BY ALL`);
    return rows.map((r) => JSON.stringify(r));
  } finally {
    if (shared === undefined) db.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/** Runs one execution of the workflow and waits for its end. */
export function run(h: WorkflowHarness, input: unknown, name?: string) {
  return h.cloud.runExecution(h.stack.workflow.stateMachine, input, name);
}

/** The partition item (`PART#events#date=<day>` / `STATE`), unmarshalled. */
export async function partitionItem(
  h: WorkflowHarness,
  day: string,
): Promise<Record<string, unknown> | undefined> {
  const result = await h.cloud.dynamodb.send(
    new GetItemCommand({
      TableName: h.cloud.tableName(h.stack.table),
      Key: { pk: { S: `PART#events#date=${day}` }, sk: { S: 'STATE' } },
      ConsistentRead: true,
    }),
  );
  return result.Item === undefined ? undefined : unmarshall(result.Item);
}

/** History items of a partition. */
export async function historyItems(h: WorkflowHarness, day: string): Promise<Record<string, unknown>[]> {
  const result = await h.cloud.dynamodb.send(
    new QueryCommand({
      TableName: h.cloud.tableName(h.stack.table),
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :run)',
      ExpressionAttributeValues: { ':pk': { S: `PART#events#date=${day}` }, ':run': { S: 'RUN#' } },
      ConsistentRead: true,
    }),
  );
  return (result.Items ?? []).map((i) => unmarshall(i));
}

/**
 * Parks every execution that reaches `state` there until `release()`: `reached` resolves when the first one
 * enters it (so a test can act while a run holds its partition).
 */
export function parkIn(h: WorkflowHarness, state: string): { reached: Promise<void>; release: () => void } {
  let release: () => void = () => undefined;
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  let entered: () => void = () => undefined;
  const reached = new Promise<void>((resolve) => {
    entered = resolve;
  });
  h.hooks.set(state, async () => {
    entered();
    await held;
  });
  return { reached, release };
}
