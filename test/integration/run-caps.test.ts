// The caps on running compactions against DynamoDB Local: a sweep over 100 due partitions starts exactly
// the cap, the next one starts what releases freed, concurrent profilers never exceed it, counts heal.
import {
  DeleteItemCommand,
  type DynamoDBClient,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { Context, SQSEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoPartitionLease } from '../../functions/adapters/dynamodb-partition-lease.js';
import { runCountKeys } from '../../functions/adapters/dynamodb-run-counts.js';
import { DynamoStatsStore } from '../../functions/adapters/dynamodb-stats-store.js';
import { executionName } from '../../functions/core/profiler/decisions.js';
import type { PartitionRef } from '../../functions/core/profiler/model.js';
import { sweepTable } from '../../functions/core/profiler/sweep.js';
import type { TriggerDeps } from '../../functions/core/profiler/trigger.js';
import type { RunCaps } from '../../functions/core/run-caps.js';
import { parseTableConfigs, type TableConfig } from '../../functions/core/table-config.js';
import { createProfilerHandler, policiesOf } from '../../functions/handlers/profiler.js';
import { ManualClock } from '../../functions/ports/clock.js';
import type {
  ExecutionInfo,
  StartResult,
  StateMachineStarter,
} from '../../functions/ports/state-machine-starter.js';
import { createObservability } from '../../functions/shared/middleware.js';
import { LakeCompactorStack } from '../../infra/app.js';
import { createTablesFromTemplate, type DynamoDbLocalEndpoint } from '../../infra/local/dynamodb-local.js';
import { type CfnTemplate, TemplateModel } from '../../infra/local/template.js';
import { startTestDynamoDb } from '../support/dynamodb-local.js';

const BUCKET = 'lake';
const NOW = Date.UTC(2026, 10, 30, 12, 0, 0);
const MINUTE = 60_000;
const context = { functionName: 'profiler', awsRequestId: 'test' } as Context;

/** Records starts; every started execution keeps running (the sweep leaves its lease alone). */
class RunningStarter implements StateMachineStarter {
  readonly started: string[] = [];
  executionArn(name: string): string {
    return `arn:aws:states:us-east-1:000000000000:execution:compact:${name}`;
  }
  async start(name: string): Promise<StartResult> {
    this.started.push(name);
    return { executionArn: this.executionArn(name), alreadyStarted: false };
  }
  async describe(): Promise<ExecutionInfo | undefined> {
    return { status: 'RUNNING' };
  }
}

let sequence = 0x2000000000000n;
/** One S3 notification per message: `files` small files in each partition, written `at`. */
function sqsEvent(table: string, partitions: readonly string[], files: number, at: number): SQSEvent {
  const records = partitions.flatMap((partition) =>
    Array.from({ length: files }, (_, i) => {
      sequence += 1n;
      return {
        eventSource: 'aws:s3',
        eventName: 'ObjectCreated:Put',
        eventTime: new Date(at).toISOString(),
        s3: {
          bucket: { name: BUCKET },
          object: {
            key: `${table}/${partition}/part-${i}.parquet`,
            size: 8 * 1024,
            eTag: `e${sequence}`,
            sequencer: sequence.toString(16).toUpperCase(),
          },
        },
      };
    }),
  );
  return {
    Records: records.map((record, i) => ({
      messageId: `${table}-${i}-${sequence}`,
      receiptHandle: 'r',
      body: JSON.stringify({ Records: [record] }),
      attributes: {} as SQSEvent['Records'][number]['attributes'],
      messageAttributes: {},
      md5OfBody: '',
      eventSource: 'aws:sqs',
      eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:q',
      awsRegion: 'us-east-1',
    })),
  };
}

const partitionsOf = (n: number) => Array.from({ length: n }, (_, i) => `p=${String(i).padStart(3, '0')}`);

describe('run caps against DynamoDB Local', () => {
  let dynamo: DynamoDbLocalEndpoint;
  let client: DynamoDBClient;
  let template: CfnTemplate;
  const silent = (() => {
    process.env.POWERTOOLS_METRICS_DISABLED = 'true';
    process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';
    return createObservability('run-caps-test');
  })();

  beforeAll(async () => {
    const starting = startTestDynamoDb();
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const stack = new LakeCompactorStack(app, 'RunCaps', {
      compactor: { tables: [{ name: 'seed', bucketName: BUCKET, prefix: 'seed/' }] },
    });
    template = Template.fromStack(stack).toJSON() as CfnTemplate;
    dynamo = await starting;
    client = dynamo.client();
  });

  afterAll(async () => {
    await dynamo?.stop();
  });

  /**
   * A fresh state table per test (the deployment-wide counter is one item per state table), created from the
   * synthesized template's own definition under a name of its own.
   */
  async function freshStore(name: string): Promise<{ stats: DynamoStatsStore; tableName: string }> {
    const copy = structuredClone(template) as CfnTemplate & {
      Resources: Record<string, { Type: string; Properties?: Record<string, unknown> }>;
    };
    for (const resource of Object.values(copy.Resources)) {
      if (resource.Type === 'AWS::DynamoDB::Table')
        resource.Properties = { ...resource.Properties, TableName: name };
    }
    const tableName = [
      ...(await createTablesFromTemplate(client, new TemplateModel(copy))).values(),
    ][0] as string;
    expect(tableName).toBe(name);
    return { stats: new DynamoStatsStore({ client, tableName, backoffBaseMs: 2 }), tableName };
  }

  function tablesFor(...names: string[]): TableConfig[] {
    return parseTableConfigs(
      names.map((name) => ({
        name,
        bucket: BUCKET,
        prefix: name,
        partitionColumns: ['p'],
        policy: { quietMinutes: 15, cooldownMinutes: 60 },
      })),
    );
  }

  /** Makes every partition due: the profiler records a compact verdict and, with no state machine, starts nothing. */
  async function seedDue(
    stats: DynamoStatsStore,
    tables: TableConfig[],
    table: string,
    partitions: string[],
  ) {
    const handler = createProfilerHandler({
      tables,
      policies: policiesOf(tables),
      stats,
      clock: new ManualClock(NOW),
      observability: silent,
    });
    for (let i = 0; i < partitions.length; i += 20) {
      await handler(sqsEvent(table, partitions.slice(i, i + 20), 5, NOW - 30 * MINUTE), context);
    }
    expect(await stats.listDue(table, NOW)).toHaveLength(partitions.length);
  }

  async function leasedCount(stats: DynamoStatsStore, table: string): Promise<number> {
    return (await stats.listLeased(table)).length;
  }

  it('starts exactly the table cap of 100 due partitions, records the rest as waiting, and starts what releases free on the next sweep', async () => {
    // Prepare
    const { stats, tableName } = await freshStore('CapSweep');
    const tables = tablesFor('events');
    await seedDue(stats, tables, 'events', partitionsOf(100));
    const starter = new RunningStarter();
    const runCaps: RunCaps = { total: 50, perTable: 10, byTable: {} };
    const deps: TriggerDeps = { stats, starter, policies: policiesOf(tables), trigger: 'sweep', runCaps };

    // Act 1
    const first = await sweepTable(deps, 'events', NOW + MINUTE);

    // Assess 1: the 10 oldest due started, 90 waiting and still due, counts exact
    expect(first.due.filter((o) => o.action === 'started')).toHaveLength(10);
    expect(first.due.filter((o) => o.action === 'capped')).toHaveLength(90);
    expect(starter.started).toHaveLength(10);
    expect(await leasedCount(stats, 'events')).toBe(10);
    expect(await stats.listDue('events', NOW + MINUTE)).toHaveLength(90);
    const waiting = await stats.get({ table: 'events', partition: 'p=099' });
    expect(waiting).toMatchObject({ state: 'idle' });
    expect(waiting?.lastDecision?.action).toBe('waiting: concurrency cap 10 of table events reached');
    expect((await stats.reconcileRunCount('events')).running).toBe(10);

    // Act 2: three runs end (through the workflow's lease: taken at their generation, released)
    const leases = new DynamoPartitionLease({ client, tableName, tables, policies: policiesOf(tables) });
    const ended = first.due.filter((o) => o.action === 'started').slice(0, 3);
    for (const outcome of ended) {
      const runId = outcome.executionName as string;
      await leases.acquire(outcome.ref, { runId, generation: 1, now: NOW + 2 * MINUTE });
    }
    const whileRunning = await leasedCount(stats, 'events'); // a hand-over does not count twice
    for (const outcome of ended) {
      const runId = outcome.executionName as string;
      await leases.release(outcome.ref, runId, { lastCompactedAt: NOW + 3 * MINUTE });
    }
    const second = await sweepTable(deps, 'events', NOW + 15 * MINUTE);

    // Assess 2: exactly the three freed slots are used, by the partitions waiting longest
    expect(whileRunning).toBe(10);
    expect(second.due.filter((o) => o.action === 'started').map((o) => o.ref.partition)).toHaveLength(3);
    expect(starter.started).toHaveLength(13);
    expect(await leasedCount(stats, 'events')).toBe(10);
    const report = await stats.reconcileRunCount('events');
    expect(report).toEqual({ running: 10, countedIn: [], countedOut: [] });
  });

  it('holds the deployment cap across tables: two tables of 10 each under a cap of 15 start 15', async () => {
    // Prepare
    const { stats } = await freshStore('CapTotal');
    const tables = tablesFor('orders', 'clicks');
    await seedDue(stats, tables, 'orders', partitionsOf(12));
    await seedDue(stats, tables, 'clicks', partitionsOf(12));
    const runCaps: RunCaps = { total: 15, perTable: 10, byTable: {} };
    const deps: TriggerDeps = {
      stats,
      starter: new RunningStarter(),
      policies: policiesOf(tables),
      trigger: 'sweep',
      runCaps,
    };

    // Act
    const orders = await sweepTable(deps, 'orders', NOW + MINUTE);
    const clicks = await sweepTable(deps, 'clicks', NOW + MINUTE);

    // Assess
    expect(orders.due.filter((o) => o.action === 'started')).toHaveLength(10);
    expect(clicks.due.filter((o) => o.action === 'started')).toHaveLength(5);
    const capped = await stats.get({ table: 'clicks', partition: 'p=011' });
    expect(capped?.lastDecision?.action).toBe('waiting: concurrency cap 15 of the deployment reached');
    expect((await stats.reconcileTotalRunCount()).running).toBe(15);
  });

  it('never exceeds the cap when 8 profiler invocations start 40 due partitions at once', async () => {
    // Prepare: 40 partitions written 30 minutes ago, their last events still to come
    const { stats } = await freshStore('CapProfilers');
    const tables = tablesFor('hot');
    const starter = new RunningStarter();
    const handler = () =>
      createProfilerHandler({
        tables,
        policies: policiesOf(tables),
        stats,
        starter,
        runCaps: { total: 50, perTable: 7, byTable: {} },
        clock: new ManualClock(NOW),
        observability: silent,
      });
    const partitions = partitionsOf(40);

    // Act: each invocation brings the fifth file of 5 partitions, which makes them due
    await Promise.all(
      Array.from({ length: 8 }, async (_, i) => {
        const mine = partitions.slice(i * 5, i * 5 + 5);
        await handler()(sqsEvent('hot', mine, 4, NOW - 30 * MINUTE), context);
        await handler()(sqsEvent('hot', mine, 5, NOW - 30 * MINUTE), context);
      }),
    );

    // Assess
    expect(starter.started).toHaveLength(7);
    expect(await leasedCount(stats, 'hot')).toBe(7);
    expect(await stats.listDue('hot', NOW)).toHaveLength(33);
    expect(await stats.reconcileRunCount('hot')).toEqual({ running: 7, countedIn: [], countedOut: [] });
  });

  it('counts an operator run above the cap without refusing it; the triggers wait until runs end', async () => {
    // Prepare: the table's cap of 2 is taken by the profiler
    const { stats, tableName } = await freshStore('CapOperator');
    const tables = tablesFor('ops');
    await seedDue(stats, tables, 'ops', partitionsOf(4));
    const runCaps: RunCaps = { total: 50, perTable: 2, byTable: {} };
    const deps: TriggerDeps = {
      stats,
      starter: new RunningStarter(),
      policies: policiesOf(tables),
      trigger: 'sweep',
      runCaps,
    };
    await sweepTable(deps, 'ops', NOW + MINUTE);
    const leases = new DynamoPartitionLease({ client, tableName, tables, policies: policiesOf(tables) });
    const operator: PartitionRef = { table: 'ops', partition: 'p=900' };

    // Act
    const grant = await leases.acquire(operator, { runId: 'console-1', now: NOW + 2 * MINUTE });
    const retried = await leases.acquire(operator, { runId: 'console-1', now: NOW + 3 * MINUTE });
    const counted = (await stats.reconcileRunCount('ops')).running;
    const whileFull = await sweepTable(deps, 'ops', NOW + 4 * MINUTE);
    await leases.release(operator, 'console-1', {});
    const afterOperator = await sweepTable(deps, 'ops', NOW + 5 * MINUTE);

    // Assess
    expect(grant.generation).toBe(1);
    expect(retried.generation).toBe(1);
    expect(counted).toBe(3);
    const actions = (report: typeof whileFull) =>
      report.due.map((o) => [o.ref.partition, o.action]).filter(([p]) => p !== operator.partition);
    expect(actions(whileFull)).toEqual([
      ['p=002', 'capped'],
      ['p=003', 'capped'],
    ]);
    // Still 2 of 2: the profiler's runs; the operator's ended and no longer counts.
    expect(actions(afterOperator)).toEqual([
      ['p=002', 'capped'],
      ['p=003', 'capped'],
    ]);
    expect(await stats.reconcileRunCount('ops')).toEqual({ running: 2, countedIn: [], countedOut: [] });
  });

  it('heals drifted counts: counts a lease without a slot, drops a slot without a lease, recounts both counters', async () => {
    // Prepare: two leases, then the state a lost update would leave — one lease's slot deleted, a slot for an
    // idle partition, and both counters wrong
    const { stats, tableName } = await freshStore('CapDrift');
    const tables = tablesFor('drift');
    await seedDue(stats, tables, 'drift', partitionsOf(3));
    const starter = new RunningStarter();
    const runCaps: RunCaps = { total: 50, perTable: 2, byTable: {} };
    const deps: TriggerDeps = { stats, starter, policies: policiesOf(tables), trigger: 'sweep', runCaps };
    await sweepTable(deps, 'drift', NOW + MINUTE);
    const slotKey = (partition: string) => {
      const key = runCountKeys.slot({ table: 'drift', partition });
      return { pk: { S: key.pk }, sk: { S: key.sk } };
    };
    const counter = (key: { pk: string; sk: string }, running: number) =>
      client.send(
        new UpdateItemCommand({
          TableName: tableName,
          Key: { pk: { S: key.pk }, sk: { S: key.sk } },
          UpdateExpression: 'SET running = :n ADD version :one',
          ExpressionAttributeValues: { ':n': { N: String(running) }, ':one': { N: '1' } },
        }),
      );
    await client.send(new DeleteItemCommand({ TableName: tableName, Key: slotKey('p=000') }));
    await client.send(
      new PutItemCommand({ TableName: tableName, Item: { ...slotKey('p=002'), partition: { S: 'p=002' } } }),
    );
    await counter(runCountKeys.table('drift'), 7);
    await counter(runCountKeys.total, 9);

    // Act
    const table = await stats.reconcileRunCount('drift');
    const total = await stats.reconcileTotalRunCount();
    const again = await stats.reconcileRunCount('drift');

    // Assess
    expect(table).toEqual({
      running: 2,
      countedIn: ['p=000'],
      countedOut: ['p=002'],
      corrected: { from: 7, to: 2 },
    });
    expect(total).toMatchObject({ running: 2, corrected: { from: 9, to: 2 } });
    expect(again).toEqual({ running: 2, countedIn: [], countedOut: [] });
    const third = await sweepTable(deps, 'drift', NOW + 20 * MINUTE);
    expect(third.due.map((o) => o.action)).toEqual(['capped']);
    expect(starter.started).toEqual([
      executionName({ table: 'drift', partition: 'p=000' }, 1),
      executionName({ table: 'drift', partition: 'p=001' }, 1),
    ]);
  });
});
