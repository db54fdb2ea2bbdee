// Exactness of the profiler against DynamoDB Local: duplicated, shuffled and concurrent S3 events leave
// the partition counters equal to a fresh listing, and the trigger starts one execution per schedule.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoStatsStore } from '../../functions/adapters/dynamodb-stats-store.js';
import { MemoryObjectStore } from '../../functions/adapters/memory-object-store.js';
import { run } from '../../functions/cli/index.js';
import { inventoryTable } from '../../functions/core/formats/hive/inventory.js';
import { DEFAULT_POLICY } from '../../functions/core/policy.js';
import { sizeBucket } from '../../functions/core/profiler/accounting.js';
import { executionName } from '../../functions/core/profiler/decisions.js';
import type { PartitionSnapshot } from '../../functions/core/profiler/model.js';
import { reconcileTable, sweepTable } from '../../functions/core/profiler/sweep.js';
import { evaluatePartition, type TriggerDeps } from '../../functions/core/profiler/trigger.js';
import { isSmallFile, SIZE_BUCKETS } from '../../functions/core/stats.js';
import { parseTableConfigs, type TableConfig } from '../../functions/core/table-config.js';
import { createProfilerHandler, type ProfilerDeps, policiesOf } from '../../functions/handlers/profiler.js';
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
const KiB = 1024;
const MiB = 1024 * KiB;

/** A deterministic PRNG (mulberry32), so a failing shuffle can be replayed. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function shuffle<T>(items: readonly T[], random: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

/** One S3 operation on a key, as its notification record reports it. */
interface Op {
  readonly key: string;
  readonly kind: 'created' | 'removed';
  readonly size?: number;
  readonly seq: bigint;
  readonly time: number;
}

let sequence = 0x1000000000000n;
function nextSeq(): bigint {
  sequence += 1n;
  return sequence;
}

function op(key: string, kind: 'created' | 'removed', size?: number, time = NOW - 60 * MINUTE): Op {
  return { key, kind, ...(size === undefined ? {} : { size }), seq: nextSeq(), time };
}

/** The notification record S3 sends for `o`: URL-encoded key, hex sequencer of varying width. */
function s3Record(o: Op): unknown {
  return {
    eventVersion: '2.1',
    eventSource: 'aws:s3',
    awsRegion: 'us-east-1',
    eventTime: new Date(o.time).toISOString(),
    eventName: o.kind === 'created' ? 'ObjectCreated:Put' : 'ObjectRemoved:Delete',
    s3: {
      s3SchemaVersion: '1.0',
      bucket: { name: BUCKET, arn: `arn:aws:s3:::${BUCKET}` },
      object: {
        key: encodeURIComponent(o.key).replaceAll('%2F', '/').replaceAll('%20', '+'),
        ...(o.kind === 'created' ? { size: o.size, eTag: `etag-${o.seq}` } : {}),
        sequencer: o.seq.toString(16).toUpperCase(),
      },
    },
  };
}

let messageCounter = 0;
function sqsEvent(bodies: readonly string[]): SQSEvent {
  return {
    Records: bodies.map((body) => ({
      messageId: `m-${++messageCounter}`,
      receiptHandle: 'r',
      body,
      attributes: {} as SQSEvent['Records'][number]['attributes'],
      messageAttributes: {},
      md5OfBody: '',
      eventSource: 'aws:sqs',
      eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:q',
      awsRegion: 'us-east-1',
    })),
  };
}

const context = { functionName: 'profiler', awsRequestId: 'test' } as Context;

/** What the counters must say for the final state of `ops` (latest sequencer per key wins). */
function truth(ops: readonly Op[], target = DEFAULT_POLICY.targetFileSizeBytes) {
  const latest = new Map<string, Op>();
  for (const o of ops) {
    const seen = latest.get(o.key);
    if (seen === undefined || o.seq > seen.seq) latest.set(o.key, o);
  }
  const sizes = [...latest.values()].filter((o) => o.kind === 'created').map((o) => o.size ?? 0);
  return countersOf(sizes, target);
}

function countersOf(sizes: readonly number[], target = DEFAULT_POLICY.targetFileSizeBytes) {
  const small = sizes.filter((s) => isSmallFile(s, target));
  const histogram = SIZE_BUCKETS.map(() => 0);
  for (const s of sizes) histogram[sizeBucket(s)] = (histogram[sizeBucket(s)] ?? 0) + 1;
  return {
    fileCount: sizes.length,
    totalBytes: sizes.reduce((a, b) => a + b, 0),
    smallCount: small.length,
    smallBytes: small.reduce((a, b) => a + b, 0),
    histogram,
  };
}

function countersIn(snapshot: PartitionSnapshot | undefined) {
  return {
    fileCount: snapshot?.fileCount ?? 0,
    totalBytes: snapshot?.totalBytes ?? 0,
    smallCount: snapshot?.smallCount ?? 0,
    smallBytes: snapshot?.smallBytes ?? 0,
    histogram: [...(snapshot?.histogram ?? SIZE_BUCKETS.map(() => 0))],
  };
}

/** Records starts; `describe` answers from a map the test controls. */
class FakeStarter implements StateMachineStarter {
  readonly starts: { name: string; input: unknown }[] = [];
  readonly statuses = new Map<string, ExecutionInfo>();
  executionArn(name: string): string {
    return `arn:aws:states:us-east-1:000000000000:execution:compact:${name}`;
  }
  async start(name: string, input: unknown): Promise<StartResult> {
    const arn = this.executionArn(name);
    const already = this.statuses.has(arn);
    this.starts.push({ name, input });
    if (!already) this.statuses.set(arn, { status: 'RUNNING' });
    return { executionArn: arn, alreadyStarted: already };
  }
  async describe(arn: string): Promise<ExecutionInfo | undefined> {
    return this.statuses.get(arn);
  }
}

describe('profiler against DynamoDB Local', () => {
  let dynamo: DynamoDbLocalEndpoint;
  let client: DynamoDBClient;
  let tableName: string;
  let stats: DynamoStatsStore;
  const silent = (() => {
    process.env.POWERTOOLS_METRICS_DISABLED = 'true';
    process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';
    return createObservability('profiler-test');
  })();

  beforeAll(async () => {
    const starting = startTestDynamoDb();
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const stack = new LakeCompactorStack(app, 'ProfilerTest', {
      compactor: {
        tables: [{ name: 'events', bucketName: BUCKET, prefix: 'events/', partitionColumns: ['date'] }],
      },
    });
    const model = new TemplateModel(Template.fromStack(stack).toJSON() as CfnTemplate);
    dynamo = await starting;
    client = dynamo.client();
    const created = await createTablesFromTemplate(client, model);
    tableName = [...created.values()][0] as string;
    stats = new DynamoStatsStore({ client, tableName, backoffBaseMs: 2 });
  });

  afterAll(async () => {
    await dynamo?.stop();
  });

  /** A table config per test, so tests never share partitions. */
  function tablesFor(name: string, policy: Record<string, number> = {}): TableConfig[] {
    return parseTableConfigs([
      {
        name,
        bucket: BUCKET,
        prefix: name,
        partitionColumns: ['date'],
        dateColumn: 'date',
        dateFormat: 'yyyy-MM-dd',
        policy,
      },
    ]);
  }

  function deps(
    tables: TableConfig[],
    clock = new ManualClock(NOW),
    starter?: StateMachineStarter,
  ): ProfilerDeps {
    return {
      tables,
      policies: policiesOf(tables),
      stats,
      ...(starter === undefined ? {} : { starter }),
      clock,
      observability: silent,
    };
  }

  function triggerDeps(tables: TableConfig[], starter?: StateMachineStarter): TriggerDeps {
    return { stats, policies: policiesOf(tables), ...(starter === undefined ? {} : { starter }) };
  }

  /** Delivers ops as SQS batches of `batchSize` messages (one record each) through one handler. */
  async function deliver(
    handler: ReturnType<typeof createProfilerHandler>,
    ops: readonly Op[],
    batchSize = 10,
  ) {
    const responses: SQSBatchResponse[] = [];
    for (let i = 0; i < ops.length; i += batchSize) {
      const bodies = ops.slice(i, i + batchSize).map((o) => JSON.stringify({ Records: [s3Record(o)] }));
      responses.push((await handler(sqsEvent(bodies), context)) as SQSBatchResponse);
    }
    return responses;
  }

  it('counts each file once when every event is delivered three times, shuffled', async () => {
    // Prepare
    const random = prng(7);
    const table = 'dup3';
    const handler = createProfilerHandler(deps(tablesFor(table)));
    const ops: Op[] = [];
    for (let i = 0; i < 40; i++) {
      const key = `${table}/date=2026-11-29/part-${i}.parquet`;
      ops.push(op(key, 'created', 1000 + i * 37));
      if (i % 3 === 0) ops.push(op(key, 'created', 200 * MiB + i)); // overwrite, now large
      if (i % 4 === 0) ops.push(op(key, 'removed'));
      if (i % 8 === 0) ops.push(op(key, 'created', 5 * KiB));
    }
    const delivered = shuffle([...ops, ...ops, ...ops], random);

    // Act
    const responses = await deliver(handler, delivered);

    // Assess
    expect(responses.flatMap((r) => r.batchItemFailures)).toEqual([]);
    const snapshot = await stats.get({ table, partition: 'date=2026-11-29' });
    expect(countersIn(snapshot)).toEqual(truth(ops));
  });

  it.each([
    ['create then delete, delivered in order', ['created', 'removed'], false, 0],
    ['create then delete, delete delivered first', ['created', 'removed'], true, 0],
    ['delete then create, delivered in order', ['removed', 'created'], false, 1],
    ['delete then create, create delivered first', ['removed', 'created'], true, 1],
  ] as const)('ends in the later event’s state for %s', async (_title, kinds, reversed, expectedFiles) => {
    // Prepare
    const table = `order${kinds[0]}${reversed ? 'r' : 'i'}`;
    const handler = createProfilerHandler(deps(tablesFor(table)));
    const key = `${table}/date=2026-11-29/part-0.parquet`;
    const ops = kinds.map((kind) => op(key, kind, kind === 'created' ? 4096 : undefined));

    // Act (one batch per event, so nothing is collapsed inside a batch)
    for (const o of reversed ? [...ops].reverse() : ops) await deliver(handler, [o]);

    // Assess
    const snapshot = await stats.get({ table, partition: 'date=2026-11-29' });
    expect(snapshot?.fileCount).toBe(expectedFiles);
    expect(snapshot?.totalBytes).toBe(expectedFiles * 4096);
    const file = (await stats.getFiles([`${BUCKET}/${key}`], [{ table, partition: 'date=2026-11-29' }])).get(
      `${BUCKET}/${key}`,
    );
    expect(file?.present).toBe(expectedFiles === 1);
  });

  it('counts an overwrite once, moving bytes, small count and histogram by the size difference', async () => {
    // Prepare
    const table = 'overwrite';
    const handler = createProfilerHandler(deps(tablesFor(table)));
    const key = `${table}/date=2026-11-29/part-0.parquet`;
    const small = op(key, 'created', 10 * KiB);
    const large = op(key, 'created', 200 * MiB);

    // Act: the newer overwrite arrives first, the older create late
    await deliver(handler, [large]);
    await deliver(handler, [small]);
    await deliver(handler, [op(`${table}/date=2026-11-29/other.parquet`, 'created', 20 * KiB)]);

    // Assess
    const snapshot = await stats.get({ table, partition: 'date=2026-11-29' });
    expect(countersIn(snapshot)).toEqual(countersOf([200 * MiB, 20 * KiB]));
  });

  it('changes nothing for a delete of a file it never saw, and a late older create cannot resurrect it', async () => {
    // Prepare
    const table = 'unknowndel';
    const handler = createProfilerHandler(deps(tablesFor(table)));
    const key = `${table}/date=2026-11-29/ghost.parquet`;
    const create = op(key, 'created', 999);
    const remove = op(key, 'removed');

    // Act
    await deliver(handler, [remove]);
    const afterDelete = await stats.get({ table, partition: 'date=2026-11-29' });
    await deliver(handler, [create]);

    // Assess
    expect(countersIn(afterDelete)).toEqual(countersOf([]));
    const snapshot = await stats.get({ table, partition: 'date=2026-11-29' });
    expect(countersIn(snapshot)).toEqual(countersOf([]));
  });

  it('ignores objects outside every table and non-data objects without writing', async () => {
    // Prepare
    const table = 'ignored';
    const handler = createProfilerHandler(deps(tablesFor(table)));
    const ops = [
      op('elsewhere/date=2026-11-29/part-0.parquet', 'created', 5000),
      op(`${table}/date=2026-11-29/_SUCCESS`, 'created', 0),
      op(`${table}/_delta_log/00000.json`, 'created', 500),
      op(`${table}/date=2026-11-29/part-0.parquet.crc`, 'created', 50),
    ];

    // Act
    const responses = await deliver(handler, ops);

    // Assess
    expect(responses.flatMap((r) => r.batchItemFailures)).toEqual([]);
    expect(await stats.listPartitions(table)).toEqual([]);
  });

  it('counts EventBridge "Object Created"/"Object Deleted" events, invoked directly or through the queue', async () => {
    // Prepare
    const table = 'bridge';
    const handler = createProfilerHandler(deps(tablesFor(table)));
    const bridgeEvent = (o: Op) => ({
      version: '0',
      source: 'aws.s3',
      'detail-type': o.kind === 'created' ? 'Object Created' : 'Object Deleted',
      time: new Date(o.time).toISOString(),
      detail: {
        bucket: { name: BUCKET },
        object: {
          key: o.key,
          ...(o.kind === 'created' ? { size: o.size, etag: 'e' } : {}),
          sequencer: o.seq.toString(16).toUpperCase(),
        },
        ...(o.kind === 'removed' ? { 'deletion-type': 'Permanently Deleted' } : {}),
      },
    });
    const a = op(`${table}/date=2026-11-29/a.parquet`, 'created', 700);
    const b = op(`${table}/date=2026-11-29/b.parquet`, 'created', 900);
    const removeA = op(a.key, 'removed');

    // Act
    await handler(bridgeEvent(a), context);
    await handler(sqsEvent([JSON.stringify(bridgeEvent(b)), JSON.stringify(bridgeEvent(removeA))]), context);

    // Assess
    const snapshot = await stats.get({ table, partition: 'date=2026-11-29' });
    expect(countersIn(snapshot)).toEqual(countersOf([900]));
  });

  it('fails only the malformed messages of a batch and counts the rest', async () => {
    // Prepare
    const table = 'malformed';
    const handler = createProfilerHandler(deps(tablesFor(table)));
    const good = [
      op(`${table}/date=2026-11-29/a.parquet`, 'created', 100),
      op(`${table}/date=2026-11-29/b.parquet`, 'created', 200),
    ];
    const noSequencer = s3Record(op(`${table}/date=2026-11-29/c.parquet`, 'created', 300)) as {
      s3: { object: Record<string, unknown> };
    };
    delete noSequencer.s3.object.sequencer;
    const event = sqsEvent([
      JSON.stringify({ Records: [s3Record(good[0] as Op)] }),
      'this is not json',
      JSON.stringify({ Records: [noSequencer] }),
      JSON.stringify({ Records: [s3Record(good[1] as Op)] }),
      JSON.stringify({ Service: 'Amazon S3', Event: 's3:TestEvent', Bucket: BUCKET }),
    ]);

    // Act
    const response = (await handler(event, context)) as SQSBatchResponse;

    // Assess
    expect(response.batchItemFailures.map((f) => f.itemIdentifier)).toEqual([
      event.Records[1]?.messageId,
      event.Records[2]?.messageId,
    ]);
    const snapshot = await stats.get({ table, partition: 'date=2026-11-29' });
    expect(countersIn(snapshot)).toEqual(countersOf([100, 200]));
  });

  it('keeps 5,000 events of one partition exact across 4 concurrent handler invocations, equal to a fresh listing', async () => {
    // Prepare: a writer creates, overwrites and deletes files; S3 reports each operation (some twice)
    const table = 'hot';
    const random = prng(42);
    const lake = new MemoryObjectStore();
    const ops: Op[] = [];
    const live: string[] = [];
    for (let i = 0; ops.length < 4_600; i++) {
      const choice = random();
      if (choice < 0.7 || live.length === 0) {
        const key = `${table}/date=2026-11-29/part-${i}.parquet`;
        const size = 100 + Math.floor(random() * 50_000);
        await lake.put(key, new Uint8Array(size));
        ops.push(op(key, 'created', size));
        live.push(key);
      } else if (choice < 0.85) {
        const key = live[Math.floor(random() * live.length)] as string;
        const size = 100 + Math.floor(random() * 50_000);
        await lake.put(key, new Uint8Array(size));
        ops.push(op(key, 'created', size));
      } else {
        const key = live.splice(Math.floor(random() * live.length), 1)[0] as string;
        await lake.deleteMany([{ key }]);
        ops.push(op(key, 'removed'));
      }
    }
    const redelivered = shuffle(ops, random).slice(0, 5_000 - ops.length);
    const delivered = shuffle([...ops, ...redelivered], random);
    expect(delivered).toHaveLength(5_000);
    const handlers = Array.from({ length: 4 }, () => createProfilerHandler(deps(tablesFor(table))));
    const batches: Op[][] = [];
    for (let i = 0; i < delivered.length; i += 100) batches.push(delivered.slice(i, i + 100));

    // Act: 4 invocations pull batches of 100 (the event source mapping's batch size) concurrently, as Lambda's SQS poller does
    const failures: string[] = [];
    await Promise.all(
      handlers.map(async (handler) => {
        for (let batch = batches.shift(); batch !== undefined; batch = batches.shift()) {
          const response = (await handler(
            sqsEvent(batch.map((o) => JSON.stringify({ Records: [s3Record(o)] }))),
            context,
          )) as SQSBatchResponse;
          failures.push(...response.batchItemFailures.map((f) => f.itemIdentifier));
        }
      }),
    );

    // Assess
    expect(failures).toEqual([]);
    const listing = await inventoryTable(lake, `${table}/`, { now: NOW });
    const listedSizes = listing.partitions.flatMap((p) => p.files.map((f) => f.size));
    const snapshot = await stats.get({ table, partition: 'date=2026-11-29' });
    expect(countersIn(snapshot)).toEqual(countersOf(listedSizes));
    expect(countersIn(snapshot)).toEqual(truth(ops));
  });

  describe('trigger', () => {
    /** Creates `n` files of `size` in a fresh partition, written `ageMinutes` before NOW. */
    async function seed(
      table: string,
      n: number,
      size: number,
      ageMinutes: number,
      starter?: StateMachineStarter,
    ) {
      const handler = createProfilerHandler(
        deps(tablesFor(table, { quietMinutes: 15 }), new ManualClock(NOW), starter),
      );
      const ops = Array.from({ length: n }, (_, i) =>
        op(`${table}/date=2026-11-29/part-${i}.parquet`, 'created', size, NOW - ageMinutes * MINUTE),
      );
      await deliver(handler, ops, 50);
      return (await stats.get({ table, partition: 'date=2026-11-29' })) as PartitionSnapshot;
    }

    it('starts at exactly minInputFiles small files after exactly the quiet window, and not one file or one ms before', async () => {
      // Prepare
      const starter = new FakeStarter();
      const four = await seed('trig4', 4, 10 * KiB, 15, starter);
      const five = await seed('trig5', 5, 10 * KiB, 15, starter);
      const hot = await seed('trighot', 5, 10 * KiB, 0, starter);

      // Act
      const atBoundary = await evaluatePartition(
        triggerDeps(tablesFor('trig5', { quietMinutes: 15 }), starter),
        five,
        NOW,
      );
      const tooFew = await evaluatePartition(
        triggerDeps(tablesFor('trig4', { quietMinutes: 15 }), starter),
        four,
        NOW,
      );
      const oneMsEarly = await evaluatePartition(
        triggerDeps(tablesFor('trighot', { quietMinutes: 15 }), starter),
        hot,
        NOW + 15 * MINUTE - 1,
      );

      // Assess
      expect(five.state).toBe('scheduled'); // the handler itself decided at NOW: quiet exactly 15 min
      expect(atBoundary.action).toBe('leased');
      expect(tooFew.action).toBe('blocked');
      expect(tooFew.decision.reasons).toContain('4 small files < 5');
      expect(oneMsEarly.action).toBe('waiting');
      expect(oneMsEarly.decision.eligibleAt).toBe(NOW + 15 * MINUTE);
      const hotAfter = (await stats.get({
        table: 'trighot',
        partition: 'date=2026-11-29',
      })) as PartitionSnapshot;
      expect(hotAfter.state).toBe('idle');
      expect(hotAfter.dueAt).toBe(NOW + 15 * MINUTE);
      expect(starter.starts.map((s) => s.name)).toEqual([
        executionName({ table: 'trig5', partition: 'date=2026-11-29' }, 1),
      ]);
    });

    it('starts exactly one execution when many invocations trigger the same partition at once', async () => {
      // Prepare
      const starter = new FakeStarter();
      const snapshot = await seed('race', 8, 10 * KiB, 30); // no starter while seeding: recorded, not started
      const tables = tablesFor('race', { quietMinutes: 15 });

      // Act
      const outcomes = await Promise.all(
        Array.from({ length: 8 }, () => evaluatePartition(triggerDeps(tables, starter), snapshot, NOW)),
      );

      // Assess
      expect(outcomes.filter((o) => o.action === 'started')).toHaveLength(1);
      expect(outcomes.filter((o) => o.action === 'superseded')).toHaveLength(7);
      expect(starter.starts).toHaveLength(1);
      const after = (await stats.get({ table: 'race', partition: 'date=2026-11-29' })) as PartitionSnapshot;
      expect(after).toMatchObject({ state: 'scheduled', generation: 1 });
      expect(after.lease?.executionName).toBe(
        executionName({ table: 'race', partition: 'date=2026-11-29' }, 1),
      );
    });

    it('records a compact decision without starting anything when no state machine is configured', async () => {
      // Prepare / Act
      const snapshot = await seed('nosfn', 6, 10 * KiB, 20);

      // Assess
      expect(snapshot.state).toBe('idle');
      expect(snapshot.lastDecision).toMatchObject({
        compact: true,
        action: expect.stringMatching(/not started/),
      });
      const decisions = await stats.listDecisions({ table: 'nosfn', partition: 'date=2026-11-29' }, 10);
      expect(decisions[0]).toMatchObject({ compact: true });
      expect(await stats.listDue('nosfn', NOW)).toEqual([{ table: 'nosfn', partition: 'date=2026-11-29' }]);
    });

    it('status lists partitions by priority with the last decision, and --due only those the sweep would start', async () => {
      // Prepare
      await seed('statusT', 120, 10 * KiB, 20); // HIGH: >100 files averaging < 10 MB, due (no state machine)
      const handler = createProfilerHandler(deps(tablesFor('statusT', { quietMinutes: 15 })));
      await deliver(handler, [
        op('statusT/date=2026-11-28/only.parquet', 'created', 300 * MiB, NOW - 20 * MINUTE),
      ]);
      const lines: string[] = [];
      const io = {
        out: (t: string) => lines.push(t),
        err: (t: string) => lines.push(t),
        clock: new ManualClock(NOW),
        env: {
          AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
          AWS_ACCESS_KEY_ID: 'local',
          AWS_SECRET_ACCESS_KEY: 'local',
        },
      };

      // Act
      const all = await run(['status', '--table', 'statusT', '--state-table', tableName, '--json'], io);
      const allRows = JSON.parse(lines.join('\n')) as PartitionSnapshot[];
      lines.length = 0;
      const due = await run(['status', '--table', 'statusT', '--state-table', tableName, '--due'], io);

      // Assess
      expect([all, due]).toEqual([0, 0]);
      expect(allRows.map((r) => [r.partition, r.fileCount])).toEqual([
        ['date=2026-11-29', 120],
        ['date=2026-11-28', 1],
      ]);
      const text = lines.join('\n');
      expect(text).toMatch(/date=2026-11-29 +120 +120/);
      expect(text).toMatch(/not started: no state machine configured/);
      expect(text).not.toMatch(/date=2026-11-28/);
      expect(text).toMatch(/1 partition due now/);
    });

    it('sweeps: starts a partition once its quiet window passed, releases a finished lease and restarts a lost start', async () => {
      // Prepare
      const starter = new FakeStarter();
      const tables = tablesFor('sweep', { quietMinutes: 15, cooldownMinutes: 0 });
      const clock = new ManualClock(NOW);
      const handler = createProfilerHandler(deps(tables, clock, starter));
      await deliver(
        handler,
        Array.from({ length: 6 }, (_, i) =>
          op(`sweep/date=2026-11-29/p-${i}.parquet`, 'created', 8 * KiB, NOW),
        ),
      );
      const d = triggerDeps(tables, starter);

      // Act 1: before and after the quiet window
      const early = await sweepTable(d, 'sweep', NOW + 14 * MINUTE);
      const due = await sweepTable(d, 'sweep', NOW + 15 * MINUTE);

      // Assess 1
      expect(early.due).toEqual([]);
      expect(due.due.map((o) => o.action)).toEqual(['started']);

      // Act 2: the execution ended without releasing its lease; the sweep releases and re-decides
      const first = starter.starts[0]?.name as string;
      starter.statuses.set(starter.executionArn(first), { status: 'FAILED', stoppedAt: NOW + 20 * MINUTE });
      const released = await sweepTable(d, 'sweep', NOW + 30 * MINUTE);

      // Assess 2
      expect(released.leases).toEqual([
        { ref: { table: 'sweep', partition: 'date=2026-11-29' }, action: 'released (FAILED)' },
      ]);
      expect(released.due.map((o) => o.action)).toEqual(['started']);
      expect(starter.starts.map((s) => s.name)).toEqual([
        executionName({ table: 'sweep', partition: 'date=2026-11-29' }, 1),
        executionName({ table: 'sweep', partition: 'date=2026-11-29' }, 2),
      ]);

      // Act 3: the second start was lost (no such execution); the sweep starts it under the same name
      starter.statuses.clear();
      const restarted = await sweepTable(d, 'sweep', NOW + 40 * MINUTE);

      // Assess 3
      expect(restarted.leases.map((l) => l.action)).toEqual(['restart started']);
      expect(starter.starts.at(-1)?.name).toBe(
        executionName({ table: 'sweep', partition: 'date=2026-11-29' }, 2),
      );
    });

    it('in trigger dry-run records every verdict but starts nothing, and releases a lost start instead of restarting it', async () => {
      // Prepare: one partition quiet for an hour; another whose real start was lost before dry-run was on
      const starter = new FakeStarter();
      const tables = tablesFor('dry', { quietMinutes: 15, cooldownMinutes: 0 });
      const files = (partition: string, time: number) =>
        Array.from({ length: 6 }, (_, i) => op(`dry/${partition}/p-${i}.parquet`, 'created', 8 * KiB, time));
      await deliver(createProfilerHandler(deps(tables, new ManualClock(NOW), starter)), [
        ...files('date=2026-11-27', NOW - 60 * MINUTE),
      ]);
      expect(starter.starts).toHaveLength(1);
      starter.statuses.clear();
      const dryDeps = { ...deps(tables, new ManualClock(NOW), starter), dryRun: true };
      const dryTrigger: TriggerDeps = { ...triggerDeps(tables, starter), dryRun: true };

      // Act
      await deliver(createProfilerHandler(dryDeps), files('date=2026-11-28', NOW - 60 * MINUTE));
      const swept = await sweepTable(dryTrigger, 'dry', NOW + 15 * MINUTE);
      const again = await sweepTable(dryTrigger, 'dry', NOW + 30 * MINUTE);

      // Assess: still the one start from before dry-run; both partitions recorded as due, none leased
      expect(starter.starts).toHaveLength(1);
      expect(swept.leases).toEqual([
        { ref: { table: 'dry', partition: 'date=2026-11-27' }, action: 'released (NOT_FOUND)' },
      ]);
      expect(swept.due.map((o) => [o.ref.partition, o.action]).sort()).toEqual([
        ['date=2026-11-27', 'not-started'],
        ['date=2026-11-28', 'not-started'],
      ]);
      expect(again.leases).toEqual([]);
      for (const partition of ['date=2026-11-27', 'date=2026-11-28']) {
        const snapshot = await stats.get({ table: 'dry', partition });
        expect(snapshot?.state).toBe('idle');
        expect(snapshot?.lastDecision?.action).toMatch(/^not started: triggers are in dry-run/);
      }
    });

    it('reconciles counts that drifted through lost events to a fresh listing', async () => {
      // Prepare: the bucket holds 3 files; the profiler saw 2 creates and a delete that never happened
      const table = 'recon';
      const tables = tablesFor(table);
      const lake = new MemoryObjectStore();
      const keys = [0, 1, 2].map((i) => `${table}/date=2026-11-29/part-${i}.parquet`);
      for (const [i, key] of keys.entries()) await lake.put(key, new Uint8Array(1000 * (i + 1)));
      const handler = createProfilerHandler(deps(tables));
      const old = NOW - 3 * 60 * MINUTE;
      await deliver(handler, [
        op(keys[0] as string, 'created', 1000, old),
        op(keys[1] as string, 'created', 2000, old),
        op(keys[1] as string, 'removed', undefined, old),
      ]);
      const [config] = tables;

      // Act
      const report = await reconcileTable(triggerDeps(tables), lake, config as TableConfig, NOW);

      // Assess
      expect(report.partitions).toEqual([
        {
          partition: 'date=2026-11-29',
          result: 'corrected',
          stored: { fileCount: 1, totalBytes: 1000 },
          listed: { fileCount: 3, totalBytes: 6000 },
        },
      ]);
      const snapshot = await stats.get({ table, partition: 'date=2026-11-29' });
      expect(countersIn(snapshot)).toEqual(countersOf([1000, 2000, 3000]));
      // A later real delete of a repaired file is counted exactly.
      await deliver(handler, [op(keys[2] as string, 'removed', undefined, NOW)]);
      expect(countersIn(await stats.get({ table, partition: 'date=2026-11-29' }))).toEqual(
        countersOf([1000, 2000]),
      );
    });
  });
});
