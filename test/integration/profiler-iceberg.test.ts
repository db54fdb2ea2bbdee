// The profiler handler against DynamoDB Local on an Iceberg table (`format: "iceberg"`, path catalog) in a local S3
// (s3rver on 127.0.0.1): the PUTs of a writer's data files and manifests alone count nothing; each commit's new
// metadata file makes the partition's statistics exactly those of the new snapshot, and a compaction's `replace`
// snapshot lowers the file count — all read through the S3 API as the deployed function reads them.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { Context, SQSEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoStatsStore } from '../../functions/adapters/dynamodb-stats-store.js';
import { S3ObjectStore } from '../../functions/adapters/s3-object-store.js';
import { run } from '../../functions/cli/index.js';
import { loadTable, readSnapshotFiles } from '../../functions/core/formats/iceberg/index.js';
import { DEFAULT_POLICY } from '../../functions/core/policy.js';
import { isSmallFile } from '../../functions/core/stats.js';
import { parseTableConfigs } from '../../functions/core/table-config.js';
import { createProfilerHandler, policiesOf } from '../../functions/handlers/profiler.js';
import { ManualClock } from '../../functions/ports/clock.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';
import { createObservability } from '../../functions/shared/middleware.js';
import { appendIcebergEvents, createIcebergEventsTable } from '../../functions/tools/sample-iceberg.js';
import { LakeCompactorStack } from '../../infra/app.js';
import { createTablesFromTemplate, type DynamoDbLocalEndpoint } from '../../infra/local/dynamodb-local.js';
import { type RunningS3Server, startS3Server } from '../../infra/local/s3-server.js';
import { type CfnTemplate, TemplateModel } from '../../infra/local/template.js';
import { captureIo } from '../support/cli-io.js';
import { startTestDynamoDb } from '../support/dynamodb-local.js';

const BUCKET = 'lake';
const NOW = Date.UTC(2026, 10, 30, 12, 0, 0);
const DAY = '2026-11-29';
const PARTITION = `data/event_timestamp_day=${DAY}`;
const context = { functionName: 'profiler', awsRequestId: 'test' } as Context;

let sequence = 0x4000000000000n;
let messageCounter = 0;

/** One SQS message per S3 creation notification of `keys` (sizes as the store holds them). */
async function sqsEvent(store: ObjectStore, keys: readonly string[]): Promise<SQSEvent> {
  const records = [];
  for (const key of keys) {
    sequence += 1n;
    const size = (await store.head(key))?.size ?? 0;
    records.push({
      messageId: `m-${++messageCounter}`,
      receiptHandle: 'r',
      body: JSON.stringify({
        Records: [
          {
            eventVersion: '2.1',
            eventSource: 'aws:s3',
            eventTime: new Date(NOW).toISOString(),
            eventName: 'ObjectCreated:Put',
            s3: {
              bucket: { name: BUCKET },
              object: { key, size, eTag: `e${sequence}`, sequencer: sequence.toString(16).toUpperCase() },
            },
          },
        ],
      }),
      attributes: { ApproximateReceiveCount: '1' } as SQSEvent['Records'][number]['attributes'],
      messageAttributes: {},
      md5OfBody: '',
      eventSource: 'aws:sqs',
      eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:q',
      awsRegion: 'us-east-1',
    });
  }
  return { Records: records };
}

/** The keys under `prefix` now. */
async function keysUnder(store: ObjectStore, prefix: string): Promise<Set<string>> {
  const keys = new Set<string>();
  for await (const o of store.listAll(prefix)) keys.add(o.key);
  return keys;
}

/** The partition's counts a recount of the current snapshot's live data files gives. */
async function recount(
  store: ObjectStore,
): Promise<{ fileCount: number; totalBytes: number; smallCount: number }> {
  const files = await readSnapshotFiles(store, await loadTable(store, 'events'));
  const sizes = files.dataFiles.map((f) => Number(f.entry.file.fileSizeInBytes));
  return {
    fileCount: sizes.length,
    totalBytes: sizes.reduce((n, s) => n + s, 0),
    smallCount: sizes.filter((s) =>
      isSmallFile(s, DEFAULT_POLICY.targetFileSizeBytes, DEFAULT_POLICY.smallFileSizeRatio),
    ).length,
  };
}

describe('profiler against DynamoDB Local and a local S3 with an Iceberg table', () => {
  let dynamo: DynamoDbLocalEndpoint;
  let client: DynamoDBClient;
  let stats: DynamoStatsStore;
  let s3: RunningS3Server;
  let store: S3ObjectStore;
  const observability = (() => {
    process.env.POWERTOOLS_METRICS_DISABLED = 'true';
    process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';
    return createObservability('profiler-iceberg-test');
  })();

  beforeAll(async () => {
    const starting = startTestDynamoDb();
    s3 = await startS3Server({ buckets: [BUCKET] });
    store = new S3ObjectStore({ client: s3.client(), bucket: BUCKET });
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const stack = new LakeCompactorStack(app, 'IcebergProfilerTest', {
      compactor: { tables: [{ name: 'events', bucketName: BUCKET, prefix: 'events/', format: 'iceberg' }] },
    });
    const model = new TemplateModel(Template.fromStack(stack).toJSON() as CfnTemplate);
    dynamo = await starting;
    client = dynamo.client();
    const created = await createTablesFromTemplate(client, model);
    stats = new DynamoStatsStore({ client, tableName: [...created.values()][0] as string, backoffBaseMs: 2 });
  }, 180_000);

  afterAll(async () => {
    await dynamo?.stop();
    await s3?.stop();
  });

  it('counts each commit exactly from its metadata, never the data PUTs alone, and a replace snapshot lowers the count', async () => {
    // Prepare: the table, created and seen by the profiler; then 5 appends, each a data file, manifests and a
    // metadata file
    const tables = parseTableConfigs([
      { name: 'events', bucket: BUCKET, prefix: 'events', format: 'iceberg' },
    ]);
    const handler = createProfilerHandler({
      tables,
      policies: policiesOf(tables),
      stats,
      storeFor: () => store,
      clock: new ManualClock(NOW),
      observability,
    });
    const ref = { table: 'events', partition: PARTITION };
    await createIcebergEventsTable(store, 'events', { now: NOW });
    const created = await handler(await sqsEvent(store, ['events/metadata/v1.metadata.json']), context);
    const steps = [];

    // Act: per append, its data file and manifest PUTs first, then its metadata file (the last one twice)
    for (let seed = 1; seed <= 5; seed += 1) {
      const before = await keysUnder(store, 'events/');
      await appendIcebergEvents(store, 'events', { day: DAY, rows: 30, seed, now: NOW });
      const written = [...(await keysUnder(store, 'events/'))].filter((k) => !before.has(k));
      const metadata = written.filter((k) => k.endsWith('.metadata.json'));
      const data = written.filter((k) => !metadata.includes(k) && !k.endsWith('version-hint.text'));
      const dataResponse = await handler(await sqsEvent(store, data), context);
      const afterData = await stats.get(ref);
      const commitResponse = await handler(await sqsEvent(store, metadata), context);
      steps.push({
        data,
        metadata,
        responses: [dataResponse, commitResponse],
        afterData: afterData?.fileCount ?? 0,
        afterCommit: await stats.get(ref),
        expected: await recount(store),
      });
    }
    const redelivered = await handler(await sqsEvent(store, steps.at(-1)?.metadata ?? []), context);
    const afterRedelivery = await stats.get(ref);

    // Assess: the data PUTs left the previous commit's count; each commit made it the new snapshot's exactly
    expect(created).toEqual({ batchItemFailures: [] });
    for (const [i, step] of steps.entries()) {
      expect(step.metadata).toHaveLength(1);
      expect(step.data.length).toBeGreaterThanOrEqual(3);
      expect(step.responses).toEqual([{ batchItemFailures: [] }, { batchItemFailures: [] }]);
      expect(step.afterData).toBe(steps[i - 1]?.expected.fileCount ?? 0);
      expect(step.afterCommit).toMatchObject(step.expected);
    }
    expect(redelivered).toEqual({ batchItemFailures: [] });
    expect(afterRedelivery).toMatchObject(steps.at(-1)?.expected ?? {});

    // Act: a compaction commits a replace snapshot; its metadata file reaches the profiler
    const io = captureIo({
      env: {
        AWS_ENDPOINT_URL_S3: s3.endpoint,
        AWS_REGION: 'us-east-1',
        AWS_ACCESS_KEY_ID: 'S3RVER',
        AWS_SECRET_ACCESS_KEY: 'S3RVER',
      },
    });
    const beforeCompaction = await keysUnder(store, 'events/metadata/');
    const code = await run(['compact', `s3://${BUCKET}/events`, '--format', 'iceberg'], io);
    const replaced = [...(await keysUnder(store, 'events/metadata/'))].filter(
      (k) => !beforeCompaction.has(k) && k.endsWith('.metadata.json'),
    );
    const compacted = await handler(await sqsEvent(store, replaced), context);

    // Assess: the partition holds the one output file the replace snapshot left live
    expect(code, io.stderr.join('\n')).toBe(0);
    expect(compacted).toEqual({ batchItemFailures: [] });
    const expected = await recount(store);
    expect(expected.fileCount).toBe(1);
    expect(await stats.get(ref)).toMatchObject(expected);
    expect((await stats.changeCursor('events'))?.version).toBe(
      Number((await loadTable(store, 'events')).metadata.lastSequenceNumber),
    );
  }, 240_000);
});
