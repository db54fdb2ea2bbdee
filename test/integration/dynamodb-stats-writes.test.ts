// The profiler's segment write path over DynamoDB Local: per partition and batch one new segment item and one
// conditional update of the partition item, no transaction; counts that stay exact through duplicates, reordering,
// a commit that loses to a concurrent batch, a crash between the segment put and the commit, and concurrent handlers;
// write units per event asserted from the capacity DynamoDB Local reports.
import { DynamoDBClient, PutItemCommand, QueryCommand } from '@aws-sdk/client-dynamodb';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statsKeys } from '../../functions/adapters/dynamodb-keys.js';
import { MAX_SEGMENTS, SEGMENT_PREFIX } from '../../functions/adapters/dynamodb-segments.js';
import { DynamoStatsStore } from '../../functions/adapters/dynamodb-stats-store.js';
import type { PartitionRef, PartitionSnapshot, ResolvedEvent } from '../../functions/core/profiler/model.js';
import { LakeCompactorStack } from '../../infra/app.js';
import { createTablesFromTemplate, type DynamoDbLocalEndpoint } from '../../infra/local/dynamodb-local.js';
import { TemplateModel } from '../../infra/local/template.js';
import { startTestDynamoDb } from '../support/dynamodb-local.js';
import { fileEvent } from '../support/stats-store-contract.js';

const NOW = Date.UTC(2026, 11, 6, 12, 0, 0);
const MIB = 1024 * 1024;

const WRITE_COMMANDS = new Set([
  'PutItem',
  'UpdateItem',
  'DeleteItem',
  'TransactWriteItems',
  'BatchWriteItem',
]);

let ddb: DynamoDbLocalEndpoint;
let tableName: string;
let tables = 0;

beforeAll(async () => {
  const starting = startTestDynamoDb();
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new LakeCompactorStack(app, 'StatsWrites', {
    compactor: { tables: [{ name: 'events', bucketName: 'lake', prefix: 'events/' }] },
  });
  ddb = await starting;
  const created = await createTablesFromTemplate(
    ddb.client(),
    new TemplateModel(Template.fromStack(stack).toJSON()),
  );
  tableName = [...created.values()][0] as string;
});

afterAll(async () => {
  await ddb?.stop();
});

/** A store over its own client whose requests are counted and may be interfered with before they are sent. */
function instrumented() {
  const clock = { now: NOW };
  const counts = new Map<string, number>();
  const capacity = { write: 0, read: 0 };
  const hooks: { before?: (command: string, input: Record<string, unknown>) => Promise<void> | void } = {};
  const client = new DynamoDBClient({
    endpoint: ddb.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const command = (context.commandName ?? 'unknown').replace('Command', '');
      counts.set(command, (counts.get(command) ?? 0) + 1);
      const input = args.input as Record<string, unknown>;
      input.ReturnConsumedCapacity = 'TOTAL';
      await hooks.before?.(command, input);
      const result = await next(args);
      const consumed = (result.output as { ConsumedCapacity?: unknown }).ConsumedCapacity;
      // DynamoDB Local reports only CapacityUnits: a write request's are write units, any other's read units.
      const writes = WRITE_COMMANDS.has(command);
      for (const c of Array.isArray(consumed) ? consumed : consumed === undefined ? [] : [consumed]) {
        const units = (c as { CapacityUnits?: number }).CapacityUnits ?? 0;
        if (writes) capacity.write += units;
        else capacity.read += units;
      }
      return result;
    },
    { step: 'initialize', name: 'testHooks', priority: 'high' },
  );
  const stats = new DynamoStatsStore({
    client,
    tableName,
    backoffBaseMs: 1,
    now: () => clock.now,
  });
  return { stats, counts, hooks, clock, capacity, client };
}

function freshRef(): PartitionRef {
  tables += 1;
  return { table: `writes${tables}`, partition: 'date=2026-12-06' };
}

/** The one write that makes a batch count: the partition update that lists its segment. */
const isCommit = (command: string, input: Record<string, unknown>) =>
  command === 'UpdateItem' && String(input.UpdateExpression).includes('segs = :segs');

function touchOf(events: readonly ResolvedEvent[]) {
  const times = events.map((e) => e.eventTime);
  return { lastWriteAt: Math.max(...times), firstWriteAt: Math.min(...times) };
}

/** The counters a set of events leaves: each file in the state of its greatest sequencer. */
function truth(events: readonly ResolvedEvent[]) {
  const latest = new Map<string, ResolvedEvent>();
  for (const e of events) {
    const held = latest.get(e.fileId);
    if (held === undefined || held.sequencer < e.sequencer) latest.set(e.fileId, e);
  }
  const live = [...latest.values()].filter((e) => e.kind === 'created');
  const small = live.filter((e) => e.small === true);
  const sum = (list: readonly ResolvedEvent[]) => list.reduce((n, e) => n + (e.size ?? 0), 0);
  return {
    fileCount: live.length,
    totalBytes: sum(live),
    smallCount: small.length,
    smallBytes: sum(small),
    histogramTotal: live.length,
  };
}

function counters(snapshot: PartitionSnapshot | undefined) {
  return {
    fileCount: snapshot?.fileCount,
    totalBytes: snapshot?.totalBytes,
    smallCount: snapshot?.smallCount,
    smallBytes: snapshot?.smallBytes,
    histogramTotal: snapshot?.histogram.reduce((n, c) => n + c, 0),
  };
}

/** A deterministic PRNG (mulberry32), so a failing run can be replayed from its seed. */
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

/** The segment ids stored under a partition, and those its partition item lists. */
async function segmentsOf(client: DynamoDBClient, ref: PartitionRef) {
  const pk = statsKeys.partition(ref).pk;
  const page = await client.send(
    new QueryCommand({
      TableName: tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': { S: pk } },
      ConsistentRead: true,
    }),
  );
  const stored = (page.Items ?? [])
    .map((item) => item.sk?.S ?? '')
    .filter((sk) => sk.startsWith(SEGMENT_PREFIX))
    .map((sk) => sk.slice(SEGMENT_PREFIX.length));
  const state = (page.Items ?? []).find((item) => item.sk?.S === 'STATE');
  const listed = (state?.segs?.L ?? []).map((v) => v.S ?? '');
  return { stored: stored.sort(), listed: [...listed].sort() };
}

/** Events delivered three times each, shuffled, cut into batches of 1–40 messages. */
function shuffledBatches(events: readonly ResolvedEvent[], random: () => number): ResolvedEvent[][] {
  const deliveries = [...events, ...events, ...events]
    .map((e) => ({ e, k: random() }))
    .sort((a, b) => a.k - b.k)
    .map(({ e }) => e);
  const queue: ResolvedEvent[][] = [];
  for (let i = 0; i < deliveries.length; ) {
    const size = 1 + Math.floor(random() * 40);
    queue.push(deliveries.slice(i, i + size));
    i += size;
  }
  return queue;
}

/** Creates, overwrites and deletes (a quarter) of 60 names per partition, sequencers in event order. */
function workload(refs: readonly PartitionRef[], count: number, random: () => number): ResolvedEvent[] {
  const events: ResolvedEvent[] = [];
  for (let i = 0; events.length < count; i++) {
    const ref = refs[i % refs.length] as PartitionRef;
    const name = `part-${Math.floor(random() * 60)}.parquet`;
    const size = random() < 0.1 ? 200 * MIB : 100 + Math.floor(random() * 50_000);
    events.push(fileEvent(ref, name, i + 1, random() < 0.25 ? undefined : size));
  }
  return events;
}

describe('DynamoStatsStore write path (DynamoDB Local)', () => {
  it('writes a batch as one segment put and one conditional partition update, no transaction, exact', async () => {
    // Prepare
    const { stats, counts } = instrumented();
    const ref = freshRef();
    const batch = [
      fileEvent(ref, 'a.parquet', 1, 100),
      fileEvent(ref, 'b.parquet', 2, 200),
      fileEvent(ref, 'a.parquet', 1, 100), // duplicate within the batch
      fileEvent(ref, 'c.parquet', 3, 300),
      fileEvent(ref, 'c.parquet', 4, 350), // overwrite within the batch: only the later counts
      fileEvent(ref, 'd.parquet', 6), // a remove before its add, same batch
      fileEvent(ref, 'd.parquet', 5, 400),
    ];

    // Act
    const result = await stats.applyBatch(ref, batch, touchOf(batch));

    // Assess
    expect(counters(result.snapshot)).toEqual(truth(batch));
    expect(counters(await stats.get(ref))).toEqual(truth(batch));
    expect(result.snapshot.lastWriteAt).toBe(touchOf(batch).lastWriteAt);
    expect([result.applied, result.stale]).toEqual([4, 3]);
    expect(counts.get('PutItem')).toBe(1);
    expect(counts.get('UpdateItem')).toBe(1);
    expect(counts.get('TransactWriteItems')).toBeUndefined();
  });

  it('spends at most 0.3 write units per event on a batch of 60 creates and 20 deletes of earlier files', async () => {
    // Prepare: a partition holding 20 files (one earlier batch), then a batch creating 60 and deleting those 20
    const { stats, capacity } = instrumented();
    const ref = freshRef();
    const earlier = Array.from({ length: 20 }, (_, i) => fileEvent(ref, `old-${i}.parquet`, i + 1, 4096 + i));
    await stats.applyBatch(ref, earlier, touchOf(earlier));
    const batch = [
      ...Array.from({ length: 60 }, (_, i) =>
        fileEvent(ref, `part-${String(i).padStart(5, '0')}-c000.snappy.parquet`, 100 + i, 8192 + i),
      ),
      ...Array.from({ length: 20 }, (_, i) => fileEvent(ref, `old-${i}.parquet`, 200 + i)),
    ];
    capacity.write = 0;

    // Act
    await stats.applyBatch(ref, batch, touchOf(batch));

    // Assess: counted from the capacity DynamoDB reports for every request of the batch
    expect(counters(await stats.get(ref))).toEqual(truth([...earlier, ...batch]));
    expect(capacity.write).toBeGreaterThan(0);
    expect(capacity.write / batch.length).toBeLessThanOrEqual(0.3);
  });

  it('stays under 0.3 write units per event on a hot partition over 100 batches of 20 creates, its folds included', async () => {
    // Prepare: 2,000 files land in one partition, 20 per batch (more batches than segments a partition lists)
    const { stats, capacity, client } = instrumented();
    const ref = freshRef();
    const events: ResolvedEvent[] = [];

    // Act
    for (let b = 0; b < 100; b++) {
      const batch = Array.from({ length: 20 }, (_, i) =>
        fileEvent(
          ref,
          `part-${String(b * 20 + i).padStart(5, '0')}-c000.snappy.parquet`,
          b * 20 + i + 1,
          8192,
        ),
      );
      events.push(...batch);
      await stats.applyBatch(ref, batch, touchOf(batch));
    }

    // Assess: counted from the capacity DynamoDB reports for every request, segment folds and deletes included
    expect(counters(await stats.get(ref))).toEqual(truth(events));
    expect((await segmentsOf(client, ref)).listed.length).toBeLessThanOrEqual(MAX_SEGMENTS);
    expect(capacity.write / events.length).toBeLessThanOrEqual(0.3);
  });

  it('changes nothing for duplicates across batches or an add arriving after its later remove', async () => {
    // Prepare
    const { stats, counts } = instrumented();
    const ref = freshRef();
    const first = [fileEvent(ref, 'a.parquet', 1, 100), fileEvent(ref, 'b.parquet', 9)];
    const late = [fileEvent(ref, 'a.parquet', 1, 100), fileEvent(ref, 'b.parquet', 8, 500)];
    await stats.applyBatch(ref, first, touchOf(first));
    counts.clear();

    // Act
    const result = await stats.applyBatch(ref, late, touchOf(late));

    // Assess
    expect(counters(await stats.get(ref))).toEqual(truth([...first, ...late]));
    expect(counters(await stats.get(ref))).toMatchObject({ fileCount: 1, totalBytes: 100 });
    expect([result.applied, result.stale]).toEqual([0, 2]);
    expect(counts.get('PutItem')).toBeUndefined(); // no segment: nothing changed
  });

  it('keeps counts exact when its commit loses to a concurrent batch on the same partition, re-reading and retrying', async () => {
    // Prepare: a.parquet exists; while this batch removes it, another batch overwrites it with a newer event
    const racer = instrumented();
    const other = instrumented();
    const ref = freshRef();
    const created = [fileEvent(ref, 'a.parquet', 1, 100), fileEvent(ref, 'b.parquet', 2, 100)];
    await racer.stats.applyBatch(ref, created, touchOf(created));
    const removal = [fileEvent(ref, 'a.parquet', 3), fileEvent(ref, 'c.parquet', 5, 300)];
    const overwrite = [fileEvent(ref, 'a.parquet', 4, 700), fileEvent(ref, 'b.parquet', 6)];
    let raced = false;
    racer.hooks.before = async (command, input) => {
      if (isCommit(command, input) && !raced) {
        raced = true;
        await other.stats.applyBatch(ref, overwrite, touchOf(overwrite));
      }
    };

    // Act
    const result = await racer.stats.applyBatch(ref, removal, touchOf(removal));

    // Assess: the removal is older than the overwrite (stale); c counts; the lost attempt's segment is gone
    expect(raced).toBe(true);
    expect(result.retries).toBeGreaterThanOrEqual(1);
    expect([result.applied, result.stale]).toEqual([1, 1]);
    expect(counters(await racer.stats.get(ref))).toEqual(truth([...created, ...removal, ...overwrite]));
    const segments = await segmentsOf(racer.client, ref);
    expect(segments.stored).toEqual(segments.listed);
  });

  it('leaves counts as they were when a batch crashes between its segment put and its commit, and counts the redelivery once', async () => {
    // Prepare: b.parquet exists; a batch creating a and removing b crashes before its one commit
    const { stats, hooks, clock, client } = instrumented();
    const ref = freshRef();
    const before = [fileEvent(ref, 'b.parquet', 1, 50)];
    await stats.applyBatch(ref, before, touchOf(before));
    const batch = [fileEvent(ref, 'a.parquet', 2, 100), fileEvent(ref, 'b.parquet', 3)];
    hooks.before = (command, input) => {
      if (isCommit(command, input)) throw new Error('Lambda timed out');
    };
    await expect(stats.applyBatch(ref, batch, touchOf(batch))).rejects.toThrow('Lambda timed out');
    hooks.before = undefined;
    const afterCrash = counters(await stats.get(ref));
    const leftover = await segmentsOf(client, ref);

    // Act: redelivered at once (nothing to wait for: the crashed batch's segment is not listed), then a
    // reconcile an hour later removes the leftover segment
    const redelivered = await stats.applyBatch(ref, batch, touchOf(batch));
    const again = await stats.applyBatch(ref, batch, touchOf(batch));
    clock.now += 2 * 3_600_000;
    const snapshot = (await stats.get(ref)) as PartitionSnapshot;
    await stats.reconcile(
      ref,
      [{ fileId: `lake/${ref.table}/${ref.partition}/a.parquet`, size: 100, small: true, eventTime: NOW }],
      snapshot.version,
      {},
    );

    // Assess
    expect(afterCrash).toEqual(truth(before));
    expect(leftover.stored.length).toBe(leftover.listed.length + 1);
    expect([redelivered.applied, again.applied, again.stale]).toEqual([2, 0, 2]);
    expect(counters(await stats.get(ref))).toEqual(truth([...before, ...batch]));
    expect(counters(await stats.get(ref))).toMatchObject({ fileCount: 1, totalBytes: 100 });
    const cleaned = await segmentsOf(client, ref);
    expect(cleaned.stored).toEqual(cleaned.listed);
  });

  it('stays exact over 504 shuffled deliveries (each event three times) in random batches, with batches crashing before their commit or while deleting segments', async () => {
    // Prepare: creates, overwrites and deletes across two partitions, every event delivered three times, shuffled
    const random = prng(504);
    const { stats, hooks, client } = instrumented();
    const refs = [freshRef(), freshRef()];
    const events = workload(refs, 168, random);
    const queue = shuffledBatches(events, random);
    expect(queue.flat()).toHaveLength(504);
    let crashes = 0;
    hooks.before = (command, input) => {
      const crashable = isCommit(command, input) || command === 'DeleteItem' || command === 'PutItem';
      if (crashable && random() < 0.15) {
        crashes += 1;
        throw new Error('Lambda timed out');
      }
    };

    // Act: batches split per partition as the handler does; a crashed batch is redelivered later
    for (let batch = queue.shift(); batch !== undefined; batch = queue.shift()) {
      for (const ref of refs) {
        const group = batch.filter((e) => e.ref.table === ref.table);
        if (group.length === 0) continue;
        try {
          await stats.applyBatch(ref, group, touchOf(group));
        } catch {
          queue.push(group);
        }
      }
    }

    // Assess
    expect(crashes).toBeGreaterThan(0);
    for (const ref of refs) {
      expect(counters(await stats.get(ref))).toEqual(truth(events.filter((e) => e.ref.table === ref.table)));
      const segments = await segmentsOf(client, ref);
      expect(segments.listed.every((id) => segments.stored.includes(id))).toBe(true);
    }
  });

  it('stays exact with four concurrent handlers applying shuffled, duplicated batches to the same partitions', async () => {
    // Prepare
    const random = prng(4);
    const handlers = [instrumented(), instrumented(), instrumented(), instrumented()];
    const refs = [freshRef(), freshRef()];
    const events = workload(refs, 240, random);
    const queue = shuffledBatches(events, random);

    // Act: each handler takes the next batch as soon as it is done with its last
    await Promise.all(
      handlers.map(async ({ stats }) => {
        for (let batch = queue.shift(); batch !== undefined; batch = queue.shift()) {
          for (const ref of refs) {
            const group = batch.filter((e) => e.ref.table === ref.table);
            if (group.length > 0) await stats.applyBatch(ref, group, touchOf(group));
          }
        }
      }),
    );

    // Assess
    for (const ref of refs) {
      expect(counters(await handlers[0]?.stats.get(ref))).toEqual(
        truth(events.filter((e) => e.ref.table === ref.table)),
      );
    }
  });

  it('keeps a partition to a bounded number of segments over many batches, dropping those its deletes emptied', async () => {
    // Prepare: 40 batches of 5 creates, then one batch deleting the first 150 files
    const { stats, client } = instrumented();
    const ref = freshRef();
    const all: ResolvedEvent[] = [];
    for (let b = 0; b < 40; b++) {
      const batch = Array.from({ length: 5 }, (_, i) =>
        fileEvent(ref, `f-${b * 5 + i}.parquet`, b * 5 + i + 1, 1000),
      );
      all.push(...batch);
      await stats.applyBatch(ref, batch, touchOf(batch));
    }
    const many = await segmentsOf(client, ref);
    const deletes = Array.from({ length: 150 }, (_, i) => fileEvent(ref, `f-${i}.parquet`, 1000 + i));

    // Act
    await stats.applyBatch(ref, deletes, touchOf(deletes));

    // Assess
    expect(many.listed.length).toBeLessThanOrEqual(MAX_SEGMENTS);
    expect(many.stored).toEqual(many.listed);
    expect(counters(await stats.get(ref))).toEqual(truth([...all, ...deletes]));
    const after = await segmentsOf(client, ref);
    expect(after.stored).toEqual(after.listed);
    expect(after.listed.length).toBeLessThanOrEqual(many.listed.length);
  });

  it('reads the per-file items of a partition written before segments, so a delete of such a file counts', async () => {
    // Prepare: a partition item and a file item as the earlier write path left them
    const { stats, client } = instrumented();
    const ref = freshRef();
    const fileId = `lake/${ref.table}/${ref.partition}/legacy.parquet`;
    await putLegacy(client, ref, fileId, 700);
    const removal = [fileEvent(ref, 'legacy.parquet', 2)];

    // Act
    const result = await stats.applyBatch(ref, removal, touchOf(removal));

    // Assess
    expect(result.applied).toBe(1);
    expect(counters(await stats.get(ref))).toMatchObject({ fileCount: 0, totalBytes: 0, histogramTotal: 0 });
    expect((await stats.getFiles([fileId], [ref])).get(fileId)?.present).toBe(false);
  });
  it('moves a file counted by a per-file item in another partition (a changed table config) in one transaction', async () => {
    // Prepare: the file is counted in partition A by its per-file item; its newer create now resolves to B, a
    // partition also written before segments (one file of its own)
    const { stats, client, counts } = instrumented();
    const a = freshRef();
    const b = { table: a.table, partition: 'date=2026-12-07' };
    const fileId = `lake/${a.table}/${a.partition}/moved.parquet`;
    await putLegacy(client, a, fileId, 700);
    await putLegacy(client, b, `lake/${b.table}/${b.partition}/stays.parquet`, 100);
    const create = { ...fileEvent(a, 'moved.parquet', 2, 900), ref: b };

    // Act
    const result = await stats.applyBatch(b, [create], touchOf([create]));

    // Assess
    expect(result.applied).toBe(1);
    expect(counts.get('TransactWriteItems')).toBe(1);
    expect(counters(await stats.get(a))).toMatchObject({ fileCount: 0, totalBytes: 0, histogramTotal: 0 });
    expect(counters(await stats.get(b))).toMatchObject({ fileCount: 2, totalBytes: 1000, histogramTotal: 2 });
    expect((await stats.getFiles([fileId], [b])).get(fileId)).toMatchObject({
      present: true,
      partition: b.partition,
    });
  });
});

function raw(key: { pk: string; sk: string }) {
  return { pk: { S: key.pk }, sk: { S: key.sk } };
}

/** A partition item and one present file item of `size` bytes, as the per-file write path left them. */
async function putLegacy(client: DynamoDBClient, ref: PartitionRef, fileId: string, size: number) {
  await client.send(
    new PutItemCommand({
      TableName: tableName,
      Item: {
        ...raw(statsKeys.partition(ref)),
        table: { S: ref.table },
        partition: { S: ref.partition },
        fileCount: { N: '1' },
        totalBytes: { N: String(size) },
        smallCount: { N: '1' },
        smallBytes: { N: String(size) },
        hist0: { N: '1' },
        version: { N: '3' },
        state: { S: 'idle' },
        generation: { N: '0' },
      },
    }),
  );
  await client.send(
    new PutItemCommand({
      TableName: tableName,
      Item: {
        ...raw(statsKeys.file(fileId)),
        present: { BOOL: true },
        size: { N: String(size) },
        small: { BOOL: true },
        sizeBucket: { N: '0' },
        seq: { S: '1'.padStart(32, '0') },
        table: { S: ref.table },
        partition: { S: ref.partition },
        eventTime: { N: String(NOW) },
      },
    }),
  );
}
