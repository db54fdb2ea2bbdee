// The profiler handler against DynamoDB Local on a Delta table (`format: "delta"`): the PUTs of a writer's data
// files alone count nothing and start nothing; its commits to `_delta_log/` make the partition's statistics those
// of the log, wait out the quiet window, and then the partition is started — once, whatever the redeliveries.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { Context, SQSEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoStatsStore } from '../../functions/adapters/dynamodb-stats-store.js';
import { MemoryObjectStore } from '../../functions/adapters/memory-object-store.js';
import { readDeltaSnapshot } from '../../functions/core/formats/delta/log.js';
import { commitFileName } from '../../functions/core/formats/delta/log-files.js';
import { sweepTable } from '../../functions/core/profiler/sweep.js';
import { parseTableConfigs } from '../../functions/core/table-config.js';
import { createProfilerHandler, policiesOf } from '../../functions/handlers/profiler.js';
import { ManualClock } from '../../functions/ports/clock.js';
import { createObservability } from '../../functions/shared/middleware.js';
import { appendDeltaEvents, createDeltaEventsTable } from '../../functions/tools/sample-delta.js';
import { LakeCompactorStack } from '../../infra/app.js';
import { createTablesFromTemplate, type DynamoDbLocalEndpoint } from '../../infra/local/dynamodb-local.js';
import { type CfnTemplate, TemplateModel } from '../../infra/local/template.js';
import { startTestDynamoDb } from '../support/dynamodb-local.js';
import { RecordingStarter } from '../support/recording-starter.js';

const BUCKET = 'lake';
const NOW = Date.UTC(2026, 10, 30, 12, 0, 0);
const MINUTE = 60_000;
const DAY = '2026-11-29';
const context = { functionName: 'profiler', awsRequestId: 'test' } as Context;

let sequence = 0x3000000000000n;

/** S3's notification record of the creation of `key` (`size` bytes) at `time`. */
function s3Record(key: string, size: number, time: number): unknown {
  sequence += 1n;
  return {
    eventVersion: '2.1',
    eventSource: 'aws:s3',
    awsRegion: 'us-east-1',
    eventTime: new Date(time).toISOString(),
    eventName: 'ObjectCreated:Put',
    s3: {
      s3SchemaVersion: '1.0',
      bucket: { name: BUCKET, arn: `arn:aws:s3:::${BUCKET}` },
      object: { key, size, eTag: `etag-${sequence}`, sequencer: sequence.toString(16).toUpperCase() },
    },
  };
}

let messageCounter = 0;
function sqsEvent(records: readonly unknown[]): SQSEvent {
  return {
    Records: records.map((record) => ({
      messageId: `m-${++messageCounter}`,
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

describe('profiler against DynamoDB Local with a Delta table', () => {
  let dynamo: DynamoDbLocalEndpoint;
  let client: DynamoDBClient;
  let stats: DynamoStatsStore;
  const observability = (() => {
    process.env.POWERTOOLS_METRICS_DISABLED = 'true';
    process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';
    return createObservability('profiler-delta-test');
  })();

  beforeAll(async () => {
    const starting = startTestDynamoDb();
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const stack = new LakeCompactorStack(app, 'DeltaProfilerTest', {
      compactor: {
        tables: [
          {
            name: 'events',
            bucketName: BUCKET,
            prefix: 'events/',
            format: 'delta',
            deltaLogStore: { type: 's3-conditional' },
          },
        ],
      },
    });
    const model = new TemplateModel(Template.fromStack(stack).toJSON() as CfnTemplate);
    dynamo = await starting;
    client = dynamo.client();
    const created = await createTablesFromTemplate(client, model);
    stats = new DynamoStatsStore({
      client,
      tableName: [...created.values()][0] as string,
      backoffBaseMs: 2,
    });
  });

  afterAll(async () => {
    await dynamo?.stop();
  });

  it('starts a partition after the quiet window from its commits, never from the data-file PUTs alone', async () => {
    // Prepare: a Delta table with 6 appends to one day, in the bucket the profiler reads its log from
    const store = new MemoryObjectStore();
    const tables = parseTableConfigs([
      {
        name: 'events',
        bucket: BUCKET,
        prefix: 'events',
        format: 'delta',
        deltaLogStore: { type: 's3-conditional' },
        partitionColumns: ['date'],
        policy: { quietMinutes: 15 },
      },
    ]);
    await createDeltaEventsTable(store, 'events', { now: NOW });
    const appends = [];
    for (let seed = 1; seed <= 6; seed += 1) {
      appends.push(await appendDeltaEvents(store, 'events', { day: DAY, rows: 30, seed, now: NOW }));
    }
    const sizeOf = async (key: string) => (await store.get(key)).length;
    const written = NOW - 5 * MINUTE;
    const dataPuts = await Promise.all(
      appends.map(async (a) => s3Record(a.key, await sizeOf(a.key), written - 60 * MINUTE)),
    );
    const commits = await Promise.all(
      [0, ...appends.map((a) => a.version)].map(async (v) => {
        const key = `events/_delta_log/${commitFileName(v)}`;
        return s3Record(key, await sizeOf(key), written);
      }),
    );
    const starter = new RecordingStarter();
    const clock = new ManualClock(NOW);
    const handler = createProfilerHandler({
      tables,
      policies: policiesOf(tables),
      stats,
      storeFor: () => store,
      starter,
      clock,
      observability,
    });
    const ref = { table: 'events', partition: `date=${DAY}` };

    // Act: the data PUTs alone (long quiet), the table's creation, the appends' commits (reordered, two duplicated),
    // then the sweep after the quiet window, and a redelivery of every commit
    const afterPuts = await handler(sqsEvent(dataPuts), context);
    const statsAfterPuts = await stats.get(ref);
    const created = await handler(sqsEvent(commits.slice(0, 1)), context);
    const appended = commits.slice(1);
    const afterCommits = await handler(
      sqsEvent([...appended].reverse().concat(appended.slice(0, 2))),
      context,
    );
    const waiting = await stats.get(ref);
    clock.set(NOW + 11 * MINUTE);
    const swept = await sweepTable({ stats, starter, policies: policiesOf(tables) }, 'events', clock.now());
    const redelivered = await handler(sqsEvent(commits), context);

    // Assess
    expect(afterPuts).toEqual({ batchItemFailures: [] });
    expect(statsAfterPuts).toBeUndefined();
    expect(created).toEqual({ batchItemFailures: [] });
    expect(afterCommits).toEqual({ batchItemFailures: [] });
    const live = (await readDeltaSnapshot(store, 'events')).files;
    expect(waiting).toMatchObject({
      fileCount: live.length,
      totalBytes: live.reduce((n, f) => n + f.size, 0),
      smallCount: 6,
      lastWriteAt: written,
      state: 'idle',
      lastDecision: { compact: false, action: 'waiting' },
    });
    expect(swept.due.map((o) => o.action)).toEqual(['started']);
    expect(redelivered).toEqual({ batchItemFailures: [] });
    expect(starter.starts).toHaveLength(1);
    expect(await stats.get(ref)).toMatchObject({ state: 'scheduled', fileCount: 6 });
    expect(await stats.changeCursor('events')).toMatchObject({ version: 6 });
  });
});
