// End to end on the local cloud: the synthesized LakeCompactor stack runs on loopback — real S3 writes and
// deletes notify the queue, the profiler keeps DynamoDB counts equal to the bucket, and the sweep rule runs.
import { readFileSync } from 'node:fs';
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { DeleteObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { App } from 'aws-cdk-lib';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statsKeys } from '../../functions/adapters/dynamodb-keys.js';
import { DynamoStatsStore } from '../../functions/adapters/dynamodb-stats-store.js';
import { S3ObjectStore } from '../../functions/adapters/s3-object-store.js';
import { SfnStarter } from '../../functions/adapters/sfn-starter.js';
import { PreconditionFailedError } from '../../functions/core/errors.js';
import { inventoryTable } from '../../functions/core/formats/hive/inventory.js';
import { LakeCompactorStack } from '../../infra/app.js';
import { LocalCloud } from '../../infra/local/local-cloud.js';
import { sharedDynamoDb } from '../support/dynamodb-local.js';
import { DELTA_FIXTURES } from '../support/fixtures.js';

const PARQUET = readFileSync(
  `${DELTA_FIXTURES}/simple_table_with_checkpoint/part-00000-3810fbe0-9892-431d-bcfd-7de5788dfe8d-c000.snappy.parquet`,
);

describe('profiler on the local cloud', () => {
  let stack: LakeCompactorStack;
  let cloud: LocalCloud;
  let stats: DynamoStatsStore;
  let machine: sfn.StateMachine;

  beforeAll(async () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    stack = new LakeCompactorStack(app, 'ProfilerE2e', {
      compactor: {
        tables: [
          {
            name: 'events',
            bucketName: 'lake',
            prefix: 'events/',
            partitionColumns: ['date'],
            dateColumn: 'date',
            dateFormat: 'yyyy-MM-dd',
          },
        ],
      },
    });
    // A stand-in for the compaction workflow, which another issue delivers.
    machine = new sfn.StateMachine(stack, 'Workflow', {
      definitionBody: sfn.DefinitionBody.fromChainable(new sfn.Pass(stack, 'Done')),
    });
    stack.compactor.useCompactionStateMachine(machine);
    cloud = await LocalCloud.start({
      stack,
      sharedDynamoDb: await sharedDynamoDb(),
      sqs: { batchingWindowMs: 100, redeliveryDelayMs: 5 },
    });
    stats = new DynamoStatsStore({
      client: cloud.dynamodb,
      tableName: cloud.tableName(stack.compactor.table),
    });
  });

  afterAll(async () => {
    await cloud?.stop();
  });

  it('keeps the partition counts equal to the bucket through writes, overwrites and deletes', async () => {
    // Prepare
    const keys = Array.from({ length: 6 }, (_, i) => `events/date=2026-11-29/part ${i}.parquet`);
    const ignored = ['events/date=2026-11-29/_SUCCESS', 'elsewhere/x.parquet'];

    // Act
    for (const key of [...keys, ...ignored]) {
      await cloud.s3.send(
        new PutObjectCommand({ Bucket: 'lake', Key: key, Body: key.endsWith('_SUCCESS') ? '' : PARQUET }),
      );
    }
    await cloud.s3.send(
      new PutObjectCommand({ Bucket: 'lake', Key: keys[0], Body: Buffer.concat([PARQUET, PARQUET]) }),
    );
    await cloud.s3.send(new DeleteObjectCommand({ Bucket: 'lake', Key: keys[1] }));
    await cloud.drain();

    // Assess
    const listing = await inventoryTable(new S3ObjectStore({ client: cloud.s3, bucket: 'lake' }), 'events/', {
      now: Date.now(),
    });
    const files = listing.partitions.flatMap((p) => p.files);
    const snapshot = await stats.get({ table: 'events', partition: 'date=2026-11-29' });
    expect(snapshot).toMatchObject({
      fileCount: files.length,
      totalBytes: files.reduce((n, f) => n + f.size, 0),
      smallCount: files.length,
      partitionDate: Date.UTC(2026, 10, 29),
      state: 'idle',
    });
    expect(files).toHaveLength(5);
    expect(snapshot?.lastDecision?.reasons.length).toBeGreaterThan(0);
    expect(cloud.deadLetters).toEqual([]);
  });

  it('runs the sweep from its schedule rule without failing', async () => {
    // Prepare
    const rule = stack.compactor.node.findChild('SweepSchedule');

    // Act
    const results = await cloud.fire(rule);

    // Assess
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({ kind: 'lambda', result: { mode: 'sweep' } });
    expect((results[0] as { error?: unknown }).error).toBeUndefined();
  });

  it('corrects drifted counts from a real listing when the sweep is invoked in reconcile mode', async () => {
    // Prepare: pretend three creates were counted that S3 never had, and the partition went quiet 2 h ago
    const ref = { table: 'events', partition: 'date=2026-11-29' };
    const before = await stats.get(ref);
    const { pk, sk } = statsKeys.partition(ref);
    await cloud.dynamodb.send(
      new UpdateItemCommand({
        TableName: cloud.tableName(stack.compactor.table),
        Key: { pk: { S: pk }, sk: { S: sk } },
        UpdateExpression: 'SET lastWriteAt = :old ADD fileCount :three, smallCount :three, version :one',
        ExpressionAttributeValues: {
          ':old': { N: String(Date.now() - 2 * 3_600_000) },
          ':three': { N: '3' },
          ':one': { N: '1' },
        },
      }),
    );

    // Act
    const result = (await cloud.invoke(stack.compactor.sweepFunction, {
      mode: 'reconcile',
      table: 'events',
    })) as {
      mode: string;
      reports: { partitions: { partition: string; result: string }[] }[];
    };

    // Assess
    expect(result.mode).toBe('reconcile');
    expect(result.reports[0]?.partitions).toEqual([
      expect.objectContaining({ partition: 'date=2026-11-29', result: 'corrected' }),
    ]);
    const after = await stats.get(ref);
    expect(after).toMatchObject({
      fileCount: before?.fileCount,
      smallCount: before?.smallCount,
      totalBytes: before?.totalBytes,
    });
  });

  it('starts an execution once per name: a repeated start with the same input is success, another input is refused', async () => {
    // Prepare
    const starter = new SfnStarter(
      cloud.sfn,
      cloud.model.arn(cloud.logicalId(machine, 'AWS::StepFunctions::StateMachine')),
    );
    const input = { table: 'events', partition: 'date=2026-11-29', generation: 1 };

    // Act
    const first = await starter.start('events-abc-g1', input);
    await cloud.drain();
    const again = await starter.start('events-abc-g1', input);
    const other = starter.start('events-abc-g1', { ...input, generation: 2 });

    // Assess
    expect(first).toEqual({ executionArn: starter.executionArn('events-abc-g1'), alreadyStarted: false });
    expect(again).toEqual({ executionArn: first.executionArn, alreadyStarted: true });
    await expect(other).rejects.toBeInstanceOf(PreconditionFailedError);
    expect(await starter.describe(first.executionArn)).toMatchObject({ status: 'SUCCEEDED' });
    expect(await starter.describe(starter.executionArn('never-started'))).toBeUndefined();
  });
});
