// The profiler and the sweep against DynamoDB Local when a configured Parquet table turns out to be (or hold) a
// Delta Lake, Iceberg or Hudi table: the commit's S3 event records a durable marker (once, whatever the redelivery),
// and no partition under it is ever scheduled — by the profiler in the same batch, or later by the sweep.
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { Context, SQSEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoStatsStore } from '../../functions/adapters/dynamodb-stats-store.js';
import { MemoryObjectStore } from '../../functions/adapters/memory-object-store.js';
import type { PartitionSnapshot } from '../../functions/core/profiler/model.js';
import { reconcileTable, sweepTable } from '../../functions/core/profiler/sweep.js';
import { parseTableConfigs, type TableConfig } from '../../functions/core/table-config.js';
import { createProfilerHandler, policiesOf } from '../../functions/handlers/profiler.js';
import { ManualClock } from '../../functions/ports/clock.js';
import type { StateMachineStarter } from '../../functions/ports/state-machine-starter.js';
import { createObservability } from '../../functions/shared/middleware.js';
import { LakeCompactorStack } from '../../infra/app.js';
import { createTablesFromTemplate, type DynamoDbLocalEndpoint } from '../../infra/local/dynamodb-local.js';
import { type CfnTemplate, TemplateModel } from '../../infra/local/template.js';
import { startTestDynamoDb } from '../support/dynamodb-local.js';
import { HUDI_FIXTURES } from '../support/fixtures.js';
import { RecordingStarter } from '../support/recording-starter.js';

/**
 * The real Hudi table's files, relative to its base path (`.hoodie/…`, `byteField=10/…`), with their bytes, plus
 * five more file slices of its `byteField=10` file group as later upserts leave them (same file id, newer instant):
 * six small files in one partition, which a plain-Parquet compaction would merge, live and superseded slices alike.
 */
async function hudiTable(): Promise<{ key: string; bytes: Uint8Array }[]> {
  const folder = join(HUDI_FIXTURES, 'cow_v6_simplekeygen_hivestyle_no_metafields');
  const entries = await readdir(folder, { recursive: true, withFileTypes: true });
  const files = await Promise.all(
    entries
      .filter((e) => e.isFile())
      .map(async (e) => {
        const path = join(e.parentPath, e.name);
        return { key: relative(folder, path).split('\\').join('/'), bytes: await readFile(path) };
      }),
  );
  const slice = files.find((f) => f.key.startsWith('byteField=10/') && f.key.endsWith('.parquet'));
  if (slice === undefined) throw new Error('the Hudi fixture has no base file in byteField=10');
  for (let i = 1; i <= 5; i++)
    files.push({ key: slice.key.replace('20240426205419518', `2024042621000000${i}`), bytes: slice.bytes });
  return files;
}

const BUCKET = 'lake';
const NOW = Date.UTC(2026, 10, 30, 12, 0, 0);
const MINUTE = 60_000;
const context = { functionName: 'profiler', awsRequestId: 'test' } as Context;

let sequence = 0x2000000000000n;

/** An S3 notification record of a create (or delete) of `key`, as S3 sends it. */
function s3Record(key: string, kind: 'created' | 'removed' = 'created', time = NOW - 60 * MINUTE): unknown {
  sequence += 1n;
  return {
    eventVersion: '2.1',
    eventSource: 'aws:s3',
    awsRegion: 'us-east-1',
    eventTime: new Date(time).toISOString(),
    eventName: kind === 'created' ? 'ObjectCreated:Put' : 'ObjectRemoved:Delete',
    s3: {
      s3SchemaVersion: '1.0',
      bucket: { name: BUCKET, arn: `arn:aws:s3:::${BUCKET}` },
      object: {
        key: encodeURIComponent(key).replaceAll('%2F', '/'),
        ...(kind === 'created' ? { size: 8 * 1024, eTag: `etag-${sequence}` } : {}),
        sequencer: sequence.toString(16).toUpperCase(),
      },
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

describe('profiler and sweep against DynamoDB Local, with Delta Lake and Iceberg tables', () => {
  let dynamo: DynamoDbLocalEndpoint;
  let client: DynamoDBClient;
  let stats: DynamoStatsStore;
  const observability = (() => {
    process.env.POWERTOOLS_METRICS_DISABLED = 'true';
    process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';
    return createObservability('profiler-foreign-test');
  })();

  beforeAll(async () => {
    const starting = startTestDynamoDb();
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const stack = new LakeCompactorStack(app, 'ForeignFormatTest', {
      compactor: { tables: [{ name: 'events', bucketName: BUCKET, prefix: 'events/' }] },
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

  function tablesFor(name: string): TableConfig[] {
    return parseTableConfigs([
      { name, bucket: BUCKET, prefix: name, partitionColumns: ['year'], policy: { quietMinutes: 15 } },
    ]);
  }

  function handlerFor(tables: TableConfig[], starter?: StateMachineStarter) {
    return createProfilerHandler({
      tables,
      policies: policiesOf(tables),
      stats,
      ...(starter === undefined ? {} : { starter }),
      clock: new ManualClock(NOW),
      observability,
    });
  }

  it('records a marker once per table and root, keeps the first evidence, and lists it apart from partitions', async () => {
    // Prepare
    const first = { format: 'delta' as const, root: '', evidenceKey: 'mark/_delta_log/0.json', seenAt: NOW };
    const nested = {
      format: 'iceberg' as const,
      root: 'year=2021/orders/',
      evidenceKey: 'mark/year=2021/orders/metadata/v1.metadata.json',
      seenAt: NOW + 1,
    };

    // Act
    const recorded = await stats.markForeignFormat('mark', first);
    const again = await stats.markForeignFormat('mark', { ...first, evidenceKey: 'mark/_delta_log/1.json' });
    await stats.markForeignFormat('mark', nested);
    const markers = await stats.foreignFormats('mark');

    // Assess
    expect(recorded).toBe(true);
    expect(again).toBe(false);
    expect(markers).toEqual([first, nested]);
    expect(await stats.foreignFormats('other')).toEqual([]);
    expect(await stats.listPartitions('mark')).toEqual([]);
  });

  it('schedules nothing when a batch brings a Delta commit with its data files, and records the marker once', async () => {
    // Prepare
    const starter = new RecordingStarter();
    const handler = handlerFor(tablesFor('sales'), starter);
    const batch = sqsEvent([
      ...Array.from({ length: 6 }, (_, i) => s3Record(`sales/year=2021/part-0000${i}-x.c000.snappy.parquet`)),
      s3Record('sales/_delta_log/00000000000000000000.json'),
    ]);

    // Act
    const response = await handler(batch, context);
    const redelivered = await handler(batch, context);

    // Assess
    expect(response).toEqual({ batchItemFailures: [] });
    expect(redelivered).toEqual({ batchItemFailures: [] });
    expect(starter.starts).toEqual([]);
    expect(await stats.foreignFormats('sales')).toEqual([
      {
        format: 'delta',
        root: '',
        evidenceKey: 'sales/_delta_log/00000000000000000000.json',
        seenAt: NOW - 60 * MINUTE,
      },
    ]);
    const partition = (await stats.get({ table: 'sales', partition: 'year=2021' })) as PartitionSnapshot;
    expect(partition).toMatchObject({ fileCount: 6, state: 'idle' });
    expect(partition.lastDecision).toMatchObject({ compact: false, action: 'blocked' });
    expect(partition.lastDecision?.reasons.at(-1)).toMatch(
      /^inside a Delta Lake table \(the whole table; found sales\/_delta_log\/00000000000000000000\.json\)/,
    );
    expect(await stats.listDue('sales', NOW + 60 * MINUTE)).toEqual([]);
  });

  it('the sweep does not start a partition that was due before an Iceberg commit was seen', async () => {
    // Prepare: data files counted with no state machine configured (due, not started) …
    const tables = tablesFor('orders');
    await handlerFor(tables)(
      sqsEvent(Array.from({ length: 6 }, (_, i) => s3Record(`orders/year=2021/data/0000${i}-0.parquet`))),
      context,
    );
    const dueBefore = await stats.listDue('orders', NOW);
    // … then the table's metadata write arrives
    await handlerFor(tables)(sqsEvent([s3Record('orders/year=2021/metadata/v1.metadata.json')]), context);
    const starter = new RecordingStarter();

    // Act
    const report = await sweepTable(
      { stats, starter, policies: policiesOf(tables), trigger: 'sweep' },
      'orders',
      NOW,
    );

    // Assess
    expect(dueBefore).toEqual([{ table: 'orders', partition: 'year=2021/data' }]);
    expect(report.due.map((o) => o.action)).toEqual(['blocked']);
    expect(report.due[0]?.decision.reasons.at(-1)).toMatch(
      /^inside an Apache Iceberg table \(everything under year=2021\/;/,
    );
    expect(starter.starts).toEqual([]);
    expect(await stats.listDue('orders', NOW + 60 * MINUTE)).toEqual([]);
  });

  it('schedules nothing for a batch bringing a real Hudi table, and reads its marker back as Hudi', async () => {
    // Prepare: every object of the table as it lands (a Hudi commit writes base files, then its timeline)
    const starter = new RecordingStarter();
    const tables = parseTableConfigs([
      {
        name: 'trips',
        bucket: BUCKET,
        prefix: 'trips',
        partitionColumns: ['byteField'],
        policy: { quietMinutes: 15 },
      },
    ]);
    const keys = (await hudiTable()).map((f) => `trips/${f.key}`).sort();
    const batch = sqsEvent(keys.map((key) => s3Record(key)));

    // Act
    const response = await handlerFor(tables, starter)(batch, context);

    // Assess: the first .hoodie/ write seen is the evidence, and the marker survives a read from DynamoDB
    expect(response).toEqual({ batchItemFailures: [] });
    expect(starter.starts).toEqual([]);
    expect(await stats.foreignFormats('trips')).toEqual([
      {
        format: 'hudi',
        root: '',
        evidenceKey: 'trips/.hoodie/20240426205419518.commit',
        seenAt: NOW - 60 * MINUTE,
      },
    ]);
    const partition = (await stats.get({ table: 'trips', partition: 'byteField=10' })) as PartitionSnapshot;
    expect(partition.lastDecision?.reasons.at(-1)).toMatch(
      /^inside an Apache Hudi table \(the whole table; found trips\/\.hoodie\/20240426205419518\.commit\): its timeline, not the file listing, defines which file slices are live .*so it is never compacted as plain Parquet; to have it clustered through its timeline, configure the table with format: "hudi", hudiLock and hudiIndexType and prefix "trips"/,
    );
    expect(await stats.listDue('trips', NOW + 60 * MINUTE)).toEqual([]);
  });

  it('reconcile records a Hudi table that predates the deployment by its hoodie.properties, so nothing starts', async () => {
    // Prepare
    const tables = parseTableConfigs([
      {
        name: 'old_trips',
        bucket: BUCKET,
        prefix: 'old_trips',
        partitionColumns: ['byteField'],
        policy: { quietMinutes: 15 },
      },
    ]);
    const store = new MemoryObjectStore({ now: () => new Date(NOW - 120 * MINUTE) });
    for (const f of await hudiTable()) await store.put(`old_trips/${f.key}`, f.bytes);
    const starter = new RecordingStarter();

    // Act
    const report = await reconcileTable(
      { stats, starter, policies: policiesOf(tables), trigger: 'sweep' },
      store,
      tables[0] as TableConfig,
      NOW,
    );

    // Assess
    expect(starter.starts).toEqual([]);
    expect(report.partitions.map((p) => p.partition)).toEqual([
      'byteField=10',
      'byteField=20',
      'byteField=30',
    ]);
    expect(await stats.foreignFormats('old_trips')).toEqual([
      { format: 'hudi', root: '', evidenceKey: 'old_trips/.hoodie/hoodie.properties', seenAt: NOW },
    ]);
    const slices = (await stats.get({ table: 'old_trips', partition: 'byteField=10' })) as PartitionSnapshot;
    expect(slices).toMatchObject({ fileCount: 6 });
    expect(slices.lastDecision).toMatchObject({ compact: false, action: 'blocked' });
    expect(await stats.listDue('old_trips', NOW + 60 * MINUTE)).toEqual([]);
  });

  it('reconcile records a Delta table that predates the deployment before re-deciding, so nothing starts', async () => {
    // Prepare: a table written before the profiler existed: no event was ever seen
    const tables = tablesFor('legacy');
    const store = new MemoryObjectStore({ now: () => new Date(NOW - 120 * MINUTE) });
    for (let i = 0; i < 6; i++)
      await store.put(`legacy/year=2021/part-0000${i}.snappy.parquet`, 'x'.repeat(900));
    await store.put('legacy/_delta_log/00000000000000000000.json', '{}');
    const starter = new RecordingStarter();

    // Act
    const report = await reconcileTable(
      { stats, starter, policies: policiesOf(tables), trigger: 'sweep' },
      store,
      tables[0] as TableConfig,
      NOW,
    );

    // Assess
    expect(report.partitions.map((p) => [p.partition, p.result])).toEqual([['year=2021', 'corrected']]);
    expect(starter.starts).toEqual([]);
    expect(await stats.foreignFormats('legacy')).toEqual([
      { format: 'delta', root: '', evidenceKey: 'legacy/_delta_log/00000000000000000000.json', seenAt: NOW },
    ]);
    const partition = (await stats.get({ table: 'legacy', partition: 'year=2021' })) as PartitionSnapshot;
    expect(partition.lastDecision).toMatchObject({ compact: false, action: 'blocked' });
  });
});
