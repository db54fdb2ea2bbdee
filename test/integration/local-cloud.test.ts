// End-to-end proof of the local cloud harness on a toy stack synthesized by the real CDK: S3 events
// through SQS to a handler and DynamoDB Local, state machine runs, schedules, and clean shutdown.
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { DescribeTableCommand, DescribeTimeToLiveCommand, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectsCommand,
  HeadObjectCommand,
  PutObjectCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { ListExecutionsCommand } from '@aws-sdk/client-sfn';
import { PublishCommand, SNSClient } from '@aws-sdk/client-sns';
import { App } from 'aws-cdk-lib';
import type { S3Event, SQSEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isAlive } from '../../infra/local/dynamodb-local.js';
import { matchesPattern } from '../../infra/local/eventbridge.js';
import { LocalCloud } from '../../infra/local/local-cloud.js';
import { encodeS3EventKey } from '../../infra/local/s3-events.js';
import { TemplateModel } from '../../infra/local/template.js';
import { DELTA_FIXTURES } from '../support/fixtures.js';
import { ToyStack } from '../support/toy-stack.js';

const PARQUET = readFileSync(
  `${DELTA_FIXTURES}/simple_table_with_checkpoint/part-00000-3810fbe0-9892-431d-bcfd-7de5788dfe8d-c000.snappy.parquet`,
);

describe('local cloud on the toy stack', () => {
  let stack: ToyStack;
  let cloud: LocalCloud;
  let outdir: string;

  beforeAll(async () => {
    // Bundled (esbuild, ~1 s), so one test can run the bundle; the cloud assembly goes to a temp folder.
    outdir = await mkdtemp(path.join(tmpdir(), 'local-cloud-test-cdk-'));
    const app = new App({ outdir });
    stack = new ToyStack(app, 'Toy');
    cloud = await LocalCloud.start({
      stack,
      sqs: { batchingWindowMs: 100, redeliveryDelayMs: 5 },
      stepFunctions: { retryIntervalMs: 0, waitTimeMs: 0 },
    });
    console.log(`local cloud started in ${cloud.startupMs} ms`, cloud.startupPhases);
  });

  afterAll(async () => {
    await cloud?.stop();
    await rm(outdir, { recursive: true, force: true });
  });

  async function item(
    pk: string,
    sk: string,
  ): Promise<Record<string, { S?: string; N?: string }> | undefined> {
    const response = await cloud.dynamodb.send(
      new GetItemCommand({ TableName: cloud.tableName(stack.table), Key: { pk: { S: pk }, sk: { S: sk } } }),
    );
    return response.Item as Record<string, { S?: string; N?: string }> | undefined;
  }

  function recorderRecords(): { event: SQSEvent; records: S3Event['Records'] }[] {
    const recorder = cloud.logicalId(stack.recorder, 'AWS::Lambda::Function');
    return cloud.invocations
      .filter((invocation) => invocation.functionLogicalId === recorder)
      .map((invocation) => {
        const event = invocation.event as SQSEvent;
        return {
          event,
          records: event.Records.flatMap((message) => (JSON.parse(message.body) as S3Event).Records),
        };
      });
  }

  it('starts with the tables of the synthesized template (keys, GSI, TTL) and reports its startup time', async () => {
    // Prepare
    const tableName = cloud.tableName(stack.table);

    // Act
    const described = await cloud.dynamodb.send(new DescribeTableCommand({ TableName: tableName }));
    const ttl = await cloud.dynamodb.send(new DescribeTimeToLiveCommand({ TableName: tableName }));

    // Assess
    // Startup time is printed in beforeAll, not asserted: CI machines are shared and noisy (it is
    // 3–10 s on an idle 2-core machine, mostly Java's boot).
    expect(cloud.startupMs).toBeGreaterThan(0);
    expect(described.Table?.KeySchema).toEqual([
      { AttributeName: 'pk', KeyType: 'HASH' },
      { AttributeName: 'sk', KeyType: 'RANGE' },
    ]);
    expect(described.Table?.GlobalSecondaryIndexes?.map((index) => index.IndexName)).toEqual(['gsi1']);
    expect(ttl.TimeToLiveDescription).toMatchObject({
      TimeToLiveStatus: 'ENABLED',
      AttributeName: 'expiresAt',
    });
  });

  it('delivers S3-encoded notifications for matching Parquet writes, in SQS batches, to a handler that writes rows', async () => {
    // Prepare
    const keys = [
      'events/date=2024-01-15/part one.parquet',
      'events/date=2024-01-15/a+b.parquet',
      'events/date=2024-01-16/part-0.parquet',
    ];
    const ignored = ['events/date=2024-01-15/_SUCCESS', 'other/x.parquet'];

    // Act
    for (const key of [...keys, ...ignored]) {
      await cloud.s3.send(new PutObjectCommand({ Bucket: 'lake', Key: key, Body: PARQUET }));
    }
    await cloud.drain();

    // Assess
    const batches = recorderRecords();
    const records = batches.flatMap((batch) => batch.records);
    expect(records.map((record) => record.s3.object.key).sort()).toEqual(
      [
        'events/date%3D2024-01-15/part+one.parquet',
        'events/date%3D2024-01-15/a%2Bb.parquet',
        'events/date%3D2024-01-16/part-0.parquet',
      ].sort(),
    );
    expect(batches.every((batch) => batch.event.Records.length <= 4)).toBe(true);
    const head = await cloud.s3.send(new HeadObjectCommand({ Bucket: 'lake', Key: keys[0] }));
    const first = records.find(
      (record) => record.s3.object.key === 'events/date%3D2024-01-15/part+one.parquet',
    );
    expect(first).toMatchObject({
      eventSource: 'aws:s3',
      eventName: 'ObjectCreated:Put',
      s3: {
        bucket: { name: 'lake' },
        object: { size: PARQUET.length, eTag: head.ETag?.replaceAll('"', '') },
      },
    });
    expect(first?.s3.object.sequencer).toMatch(/^[0-9A-F]{18}$/);
    for (const key of keys) {
      expect(await item(`object#lake/${key}`, 'ObjectCreated:Put')).toMatchObject({
        role: { S: 'recorder' },
      });
    }
    for (const key of ignored) {
      expect(await item(`object#lake/${key}`, 'ObjectCreated:Put')).toBeUndefined();
    }
  });

  it('reports batch DeleteObjects, which s3rver does not, as one ObjectRemoved:Delete per key', async () => {
    // Prepare
    const keys = ['events/date=2024-02-01/x 1.parquet', 'events/date=2024-02-01/x-2.parquet'];
    for (const key of keys)
      await cloud.s3.send(new PutObjectCommand({ Bucket: 'lake', Key: key, Body: PARQUET }));
    await cloud.drain();

    // Act
    await cloud.s3.send(
      new DeleteObjectsCommand({ Bucket: 'lake', Delete: { Objects: keys.map((Key) => ({ Key })) } }),
    );
    await cloud.drain();

    // Assess
    for (const key of keys) {
      expect(await item(`object#lake/${key}`, 'ObjectRemoved:Delete')).toMatchObject({
        encodedKey: { S: encodeS3EventKey(key) },
      });
    }
  });

  it('reports copies with their eTag and multipart uploads as ObjectCreated:CompleteMultipartUpload', async () => {
    // Prepare
    const source = 'events/date=2024-02-02/source.parquet';
    const copy = 'events/date=2024-02-02/copy.parquet';
    const multipart = 'events/date=2024-02-02/multi.parquet';
    await cloud.s3.send(new PutObjectCommand({ Bucket: 'lake', Key: source, Body: PARQUET }));

    // Act
    await cloud.s3.send(
      new CopyObjectCommand({ Bucket: 'lake', Key: copy, CopySource: encodeURI(`lake/${source}`) }),
    );
    const { UploadId } = await cloud.s3.send(
      new CreateMultipartUploadCommand({ Bucket: 'lake', Key: multipart }),
    );
    const part = await cloud.s3.send(
      new UploadPartCommand({ Bucket: 'lake', Key: multipart, UploadId, PartNumber: 1, Body: PARQUET }),
    );
    await cloud.s3.send(
      new CompleteMultipartUploadCommand({
        Bucket: 'lake',
        Key: multipart,
        UploadId,
        MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag }] },
      }),
    );
    await cloud.drain();

    // Assess
    const records = cloud.s3Events.map((event) => event.record);
    const copied = records.find((record) => record.s3.object.key === encodeS3EventKey(copy));
    const head = await cloud.s3.send(new HeadObjectCommand({ Bucket: 'lake', Key: copy }));
    expect(copied).toMatchObject({
      eventName: 'ObjectCreated:Copy',
      s3: { object: { eTag: head.ETag?.replaceAll('"', '') } },
    });
    const completed = records.find((record) => record.s3.object.key === encodeS3EventKey(multipart));
    expect(completed?.eventName).toBe('ObjectCreated:CompleteMultipartUpload');
    expect(await item(`object#lake/${multipart}`, 'ObjectCreated:CompleteMultipartUpload')).toBeDefined();
  });

  it('routes S3 events of an EventBridge-enabled bucket through a pattern rule to its queue target', async () => {
    // Prepare
    const landed = 'landing/new file.parquet';

    // Act
    await cloud.s3.send(new PutObjectCommand({ Bucket: 'lake', Key: landed, Body: PARQUET }));
    await cloud.s3.send(new PutObjectCommand({ Bucket: 'lake', Key: 'elsewhere/x.parquet', Body: PARQUET }));
    await cloud.drain();

    // Assess
    const bodies = cloud.queueMessages(stack.auditQueue).map((message) => JSON.parse(message.body));
    expect(bodies).toEqual([
      expect.objectContaining({
        source: 'aws.s3',
        'detail-type': 'Object Created',
        detail: expect.objectContaining({
          bucket: { name: 'lake' },
          object: expect.objectContaining({ key: 'landing/new+file.parquet', size: PARQUET.length }),
          reason: 'PutObject',
        }),
      }),
    ]);
  });

  it('redelivers a batch item failure and dead-letters it after the queue redrive maxReceiveCount', async () => {
    // Prepare
    const key = 'events/date=2024-03-01/poison.parquet';

    // Act
    await cloud.s3.send(new PutObjectCommand({ Bucket: 'lake', Key: key, Body: PARQUET }));
    await cloud.drain();

    // Assess
    const deliveries = recorderRecords().filter((batch) =>
      batch.records.some((record) => record.s3.object.key.includes('poison')),
    );
    expect(deliveries).toHaveLength(2);
    const queueId = cloud.logicalId(stack.queue, 'AWS::SQS::Queue');
    const dlqId = cloud.logicalId(stack.deadLetterQueue, 'AWS::SQS::Queue');
    expect(cloud.deadLetters).toEqual([
      expect.objectContaining({ sourceQueue: queueId, deadLetterQueue: dlqId, receiveCount: 2 }),
    ]);
    expect(cloud.queueMessages(stack.deadLetterQueue)).toHaveLength(1);
    expect(cloud.queueMessages(stack.queue)).toHaveLength(0);
  });

  it('runs the synthesized state machine (Lambda, DynamoDB putItem, Choice, Map) to success with a readable history', async () => {
    // Prepare
    const input = { value: 3, items: [1, 2] };

    // Act
    const execution = await cloud.runExecution(stack.stateMachine, input, 'run-ok');

    // Assess
    expect(execution.status).toBe('SUCCEEDED');
    expect(execution.output).toMatchObject({
      value: 3,
      result: { doubled: 6 },
      fanned: [{ doubled: 2 }, { doubled: 4 }],
    });
    const entered = execution.history
      .filter((event) => event.type === 'StateEntered')
      .map((event) => event.state.name);
    expect(entered).toEqual(
      expect.arrayContaining(['Double', 'Record', 'Route', 'FanOut', 'DoubleItem', 'Done']),
    );
    expect(await item('run#run-ok', 'result')).toMatchObject({ doubled: { N: '6' } });
  });

  it("catches a forced task failure with the definition's Catch, by the handler error's name", async () => {
    // Act
    const execution = await cloud.runExecution(stack.stateMachine, { value: 1, fail: true }, 'run-fail');

    // Assess
    expect(execution.status).toBe('SUCCEEDED');
    expect(execution.output).toEqual({ recovered: 'ToyFailure' });
    expect(
      execution.history.some((event) => event.type === 'StateCaught' && event.state.name === 'Double'),
    ).toBe(true);
    expect(await item('failure#run-fail', 'ToyFailure')).toBeDefined();
    expect(await item('run#run-fail', 'result')).toBeUndefined();
  });

  it('runs service integrations locally: nested .sync execution, DynamoDB getItem, EventBridge and SNS recorded', async () => {
    // Act
    const execution = await cloud.runExecution(stack.integrations, { value: 5 }, 'integrations');

    // Assess
    expect(execution.status).toBe('SUCCEEDED');
    expect(execution.output).toMatchObject({ row: { doubled: '10' } });
    const child = cloud.executions.find((candidate) => candidate.name === 'integrations-child');
    expect(child?.status).toBe('SUCCEEDED');
    expect(cloud.events).toContainEqual(
      expect.objectContaining({ source: 'toy.compactor', detailType: 'RunDone', detail: { doubled: '10' } }),
    );
    const topicArn = cloud.model.arn(cloud.logicalId(stack.topic, 'AWS::SNS::Topic'));
    expect(cloud.notifications).toContainEqual(expect.objectContaining({ topicArn, message: '10' }));
  });

  it('feeds a Distributed Map ItemReader from a JSON file in S3', async () => {
    // Prepare
    await cloud.s3.send(
      new PutObjectCommand({
        Bucket: 'lake',
        Key: 'plans/p1.json',
        Body: JSON.stringify([{ value: 5 }, { value: 7 }]),
      }),
    );

    // Act
    const execution = await cloud.runExecution(stack.stateMachine, { value: 2, planKey: 'plans/p1.json' });

    // Assess
    expect(execution.status).toBe('SUCCEEDED');
    expect(execution.output).toMatchObject({ planned: [{ doubled: 10 }, { doubled: 14 }] });
  });

  it('fire() delivers the rule Input to its Lambda target and the scheduled-event document to its state machine', async () => {
    // Act
    const results = await cloud.fire(stack.schedule);

    // Assess
    const lambda = results.find((result) => result.kind === 'lambda');
    expect(lambda).toMatchObject({ result: { swept: true } });
    expect(await item('schedule#sweep', 'run')).toMatchObject({ role: { S: 'worker' } });
    const started = results.find((result) => result.kind === 'stateMachine');
    const execution = started?.kind === 'stateMachine' ? await started.execution.done : undefined;
    expect(execution?.input).toMatchObject({
      'detail-type': 'Scheduled Event',
      source: 'aws.events',
      detail: {},
    });
    expect(execution?.status).toBe('SUCCEEDED');
  });

  it('lets handlers start and describe executions through AWS_ENDPOINT_URL_SFN with the real SDK client', async () => {
    // Prepare
    const stateMachineArn = cloud.model.arn(
      cloud.logicalId(stack.stateMachine, 'AWS::StepFunctions::StateMachine'),
    );

    // Act
    const result = await cloud.invoke(stack.worker, {
      startExecution: { stateMachineArn, input: { value: 4 }, name: 'from-handler' },
    });
    const listed = await cloud.sfn.send(
      new ListExecutionsCommand({ stateMachineArn, statusFilter: 'SUCCEEDED' }),
    );

    // Assess
    expect(result).toMatchObject({ status: 'SUCCEEDED', output: { result: { doubled: 8 } } });
    expect(listed.executions?.map((execution) => execution.name)).toContain('from-handler');
  });

  it('records EventBridge PutEvents and SNS Publish sent with the real SDK clients to the local endpoint', async () => {
    // Prepare
    const eventBridge = new EventBridgeClient({});
    const sns = new SNSClient({});

    // Act
    await eventBridge.send(
      new PutEventsCommand({
        Entries: [{ Source: 'lake-compactor', DetailType: 'CompactionDone', Detail: '{"files":3}' }],
      }),
    );
    await sns.send(
      new PublishCommand({ TopicArn: 'arn:aws:sns:us-east-1:000000000000:alerts', Message: 'hello' }),
    );
    eventBridge.destroy();
    sns.destroy();

    // Assess
    expect(cloud.events).toContainEqual(
      expect.objectContaining({ source: 'lake-compactor', detail: { files: 3 } }),
    );
    expect(cloud.notifications).toContainEqual(expect.objectContaining({ message: 'hello' }));
  });

  it('runs the esbuild bundle CDK staged when asked, proving the bundle', async () => {
    // Act
    const result = await cloud.invoke(stack.worker, { value: 21 }, { bundle: true });

    // Assess
    expect(result).toEqual({ doubled: 42 });
  });

  it('gives each function its own environment at cold start and leaves none of it in process.env', () => {
    // Act
    const recorderEnv = cloud.functionEnv(stack.recorder);
    const workerEnv = cloud.functionEnv(stack.worker);

    // Assess
    expect(recorderEnv).toMatchObject({ TOY_ROLE: 'recorder', TABLE_NAME: cloud.tableName(stack.table) });
    expect(workerEnv).toMatchObject({ TOY_ROLE: 'worker', AWS_ENDPOINT_URL_SFN: cloud.endpoints.sfn });
    expect(process.env.TOY_ROLE).toBeUndefined();
    expect(process.env.AWS_ENDPOINT_URL_DYNAMODB).toBe(cloud.endpoints.dynamodb);
  });

  it('stop() kills the DynamoDB Local java process and removes the s3rver folder', async () => {
    // Prepare
    const pid = cloud.dynamoDbPid;
    if (pid === undefined)
      expect.unreachable('this cloud starts java of its own (no sharedDynamoDb): it has a pid');
    expect(isAlive(pid)).toBe(true);

    // Act
    await cloud.stop();

    // Assess
    expect(isAlive(pid)).toBe(false);
    expect(existsSync(cloud.s3Directory)).toBe(false);
    expect(process.env.AWS_ENDPOINT_URL_DYNAMODB).toBeUndefined();
  });
});

describe('template resolution and S3 key encoding', () => {
  it('resolves a Lambda GetAtt inside an Fn::Join to an ARN that ends in the logical id', () => {
    // Prepare
    const model = new TemplateModel({
      Resources: {
        Fn1: { Type: 'AWS::Lambda::Function' },
        T: { Type: 'AWS::DynamoDB::Table', Properties: { TableName: 'named' } },
      },
    });

    // Act
    const text = model.resolve({
      'Fn::Join': [
        '',
        ['arn:', { Ref: 'AWS::Partition' }, '|', { 'Fn::GetAtt': ['Fn1', 'Arn'] }, '|', { Ref: 'T' }],
      ],
    });

    // Assess
    expect(text).toBe('arn:aws|arn:aws:lambda:us-east-1:000000000000:function:Fn1|named');
    expect(
      model.findResource(
        'AWS::Lambda::Function',
        'arn:aws:lambda:us-east-1:000000000000:function:Fn1:$LATEST',
      ),
    ).toBe('Fn1');
  });

  it('matches EventBridge patterns with prefix, anything-but, exists, wildcard, numeric and $or like EventBridge', () => {
    // Prepare
    const event = {
      source: 'aws.s3',
      detail: { object: { key: 'landing/a.parquet', size: 42 }, reason: 'PutObject' },
    };

    // Act
    const verdicts = [
      matchesPattern({ source: ['aws.s3'], detail: { object: { key: [{ prefix: 'landing/' }] } } }, event),
      matchesPattern({ detail: { reason: [{ 'anything-but': ['DeleteObject'] }] } }, event),
      matchesPattern(
        { detail: { versionId: [{ exists: false }], object: { key: [{ wildcard: '*/a.*' }] } } },
        event,
      ),
      matchesPattern({ detail: { object: { size: [{ numeric: ['>', 10, '<=', 42] }] } } }, event),
      matchesPattern({ $or: [{ source: ['aws.events'] }, { detail: { reason: ['PutObject'] } }] }, event),
      matchesPattern({ source: ['aws.s3'], detail: { object: { key: [{ prefix: 'events/' }] } } }, event),
      matchesPattern({ detail: { reason: [{ 'anything-but': { prefix: 'Put' } }] } }, event),
    ];

    // Assess
    expect(verdicts).toEqual([true, true, true, true, true, false, false]);
  });

  it('encodes keys like S3 notifications do: spaces as +, reserved characters percent-encoded, slashes kept', () => {
    // Act
    const encoded = encodeS3EventKey("events/date=2024-01-15/a b+c (1)'.parquet");

    // Assess
    expect(encoded).toBe('events/date%3D2024-01-15/a+b%2Bc+%281%29%27.parquet');
    expect(decodeURIComponent(encoded.replace(/\+/g, ' '))).toBe("events/date=2024-01-15/a b+c (1)'.parquet");
  });
});
