// The profiler handler against DynamoDB Local on a Hudi Merge-on-Read table (`format: "hudi"`) whose every live file
// slice has log files, through S3's notifications of its completed deltacommits: below the table's compaction trigger
// (`hudiCompactionDeltaCommits`) the partition counts nothing and starts nothing, whatever the redeliveries and the
// sweep; the delta commit that meets the trigger makes the partition's statistics the due slices' base and log files,
// the partition waits out the quiet window, and the sweep then starts it — once, whatever the redeliveries.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { Context, SQSEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoStatsStore } from '../../functions/adapters/dynamodb-stats-store.js';
import { MemoryObjectStore } from '../../functions/adapters/memory-object-store.js';
import { compactionDueIn } from '../../functions/core/formats/hudi/compaction-trigger.js';
import { readHudiTable } from '../../functions/core/formats/hudi/table-state.js';
import { formatForTable } from '../../functions/core/formats/index.js';
import { sweepTable } from '../../functions/core/profiler/sweep.js';
import { parseTableConfigs } from '../../functions/core/table-config.js';
import { createProfilerHandler, policiesOf } from '../../functions/handlers/profiler.js';
import { ManualClock } from '../../functions/ports/clock.js';
import { createObservability } from '../../functions/shared/middleware.js';
import {
  appendHudiDeltaCommit,
  appendHudiInsert,
  createHudiMorTable,
} from '../../functions/tools/sample-hudi.js';
import { LakeCompactorStack } from '../../infra/app.js';
import { createTablesFromTemplate, type DynamoDbLocalEndpoint } from '../../infra/local/dynamodb-local.js';
import { type CfnTemplate, TemplateModel } from '../../infra/local/template.js';
import { startTestDynamoDb } from '../support/dynamodb-local.js';
import { RecordingStarter } from '../support/recording-starter.js';

const BUCKET = 'lake';
const NOW = Date.UTC(2026, 11, 7, 12, 0, 0);
const MINUTE = 60_000;
const ROOT = 'trips';
const PARTITION = '10';
const context = { functionName: 'profiler', awsRequestId: 'test' } as Context;

let sequence = 0x5000000000000n;

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

describe('profiler against DynamoDB Local with a Hudi Merge-on-Read table', () => {
  let dynamo: DynamoDbLocalEndpoint;
  let client: DynamoDBClient;
  let stats: DynamoStatsStore;
  const observability = (() => {
    process.env.POWERTOOLS_METRICS_DISABLED = 'true';
    process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';
    return createObservability('profiler-hudi-mor-test');
  })();

  beforeAll(async () => {
    const starting = startTestDynamoDb();
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const stack = new LakeCompactorStack(app, 'HudiMorProfilerTest', {
      compactor: {
        tables: [
          {
            name: 'trips',
            bucketName: BUCKET,
            prefix: `${ROOT}/`,
            format: 'hudi',
            hudiLock: { provider: 'storage' },
            hudiIndexType: 'BLOOM',
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
  }, 180_000);

  afterAll(async () => {
    await dynamo?.stop();
  });

  it('starts a partition whose slices all have logs once its compaction trigger is met, never before, once whatever the redeliveries', async () => {
    // Prepare: 2 insert deltacommits and 1 of updates (every live slice with a log): 3 < the trigger of 4
    const store = new MemoryObjectStore();
    const tables = parseTableConfigs([
      {
        name: 'trips',
        bucket: BUCKET,
        prefix: ROOT,
        format: 'hudi',
        partitionColumns: ['byteField'],
        hudiLock: { provider: 'storage' },
        hudiIndexType: 'BLOOM',
        hudiTimezone: 'UTC',
        hudiCompactionDeltaCommits: 4,
        policy: { quietMinutes: 15 },
      },
    ]);
    const table = await createHudiMorTable(store, ROOT, 8, '20261207110000000');
    await appendHudiInsert(table, PARTITION, 5);
    await appendHudiInsert(table, PARTITION, 5);
    await appendHudiDeltaCommit(table, PARTITION, { fraction: 0.4 });
    const written = NOW - 5 * MINUTE;
    const completed = async () => {
      const records: unknown[] = [];
      for await (const o of store.listAll(`${ROOT}/.hoodie/timeline/`))
        if (/\/\d{17}_\d{17}\.(deltacommit|commit)$/.test(o.key))
          records.push(s3Record(o.key, o.size, written));
      return records;
    };
    const starter = new RecordingStarter();
    const clock = new ManualClock(NOW);
    const policies = policiesOf(tables);
    const handler = createProfilerHandler({
      tables,
      policies,
      stats,
      storeFor: () => store,
      formatFor: (t) => formatForTable(tables, t.name, {}),
      starter,
      clock,
      observability,
    });
    const ref = { table: 'trips', partition: PARTITION };
    const sweepDeps = { stats, starter, policies };

    // Act: the events below the trigger (reversed, then all again), and sweeps past the quiet window
    const belowEvents = await completed();
    const below = await handler(sqsEvent([...belowEvents].reverse()), context);
    await handler(sqsEvent(belowEvents), context);
    const statsBelow = await stats.get(ref);
    clock.set(NOW + 30 * MINUTE);
    const sweptBelow = await sweepTable(sweepDeps, 'trips', clock.now());
    //      the 4th delta commit meets the trigger: its event, the sweep after the quiet window, and a redelivery
    clock.set(NOW);
    await appendHudiDeltaCommit(table, PARTITION, { fraction: 0.4 });
    const allEvents = await completed();
    const met = await handler(sqsEvent(allEvents.slice(belowEvents.length)), context);
    const waiting = await stats.get(ref);
    clock.set(NOW + 11 * MINUTE);
    const swept = await sweepTable(sweepDeps, 'trips', clock.now());
    const redelivered = await handler(sqsEvent(allEvents), context);

    // Assess: nothing counted or started below the trigger
    expect(below).toEqual({ batchItemFailures: [] });
    expect(statsBelow?.fileCount ?? 0).toBe(0);
    expect(sweptBelow.due.map((o) => o.action)).not.toContain('started');
    //         at the trigger: the due slices' base and log files counted as candidates, started once
    const state = await readHudiTable(store, ROOT);
    const due = compactionDueIn(state, PARTITION, 4);
    const files = due.due ? due.slices.flatMap((s) => [s.base, ...s.logs]) : [];
    expect(files).toHaveLength(6);
    expect(met).toEqual({ batchItemFailures: [] });
    expect(waiting).toMatchObject({
      fileCount: 6,
      smallCount: 6,
      totalBytes: files.reduce((n, f) => n + f.size, 0),
      state: 'idle',
      lastDecision: { compact: false, action: 'waiting' },
    });
    expect(swept.due.map((o) => o.action)).toEqual(['started']);
    expect(redelivered).toEqual({ batchItemFailures: [] });
    expect(starter.starts).toHaveLength(1);
    expect(await stats.get(ref)).toMatchObject({ state: 'scheduled', fileCount: 6 });
  }, 120_000);
});
