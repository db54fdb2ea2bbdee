// The profiler's transaction-free write path over DynamoDB Local: one put per changed file and two partition writes
// per batch (register, commit), and counts that stay exact through duplicates, reordering, a lost conditional put,
// and a writer that dies between its puts and its commit (taken over once its deadline passed).
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoStatsStore } from '../../functions/adapters/dynamodb-stats-store.js';
import { TransientStoreError } from '../../functions/core/errors.js';
import type { PartitionRef, PartitionSnapshot, ResolvedEvent } from '../../functions/core/profiler/model.js';
import { LakeCompactorStack } from '../../infra/app.js';
import {
  createTablesFromTemplate,
  type RunningDynamoDbLocal,
  startDynamoDbLocal,
} from '../../infra/local/dynamodb-local.js';
import { TemplateModel } from '../../infra/local/template.js';
import { fileEvent } from '../support/stats-store-contract.js';

const NOW = Date.UTC(2026, 11, 6, 12, 0, 0);
const LEASE_MS = 90_000;
const SKEW_MS = 30_000;
const MIB = 1024 * 1024;

let ddb: RunningDynamoDbLocal;
let tableName: string;
let tables = 0;

beforeAll(async () => {
  const starting = startDynamoDbLocal({ startTimeoutMs: 120_000 }); // the shared machine is slow under load
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
      await hooks.before?.(command, args.input as Record<string, unknown>);
      return next(args);
    },
    { step: 'initialize', name: 'testHooks', priority: 'high' },
  );
  const stats = new DynamoStatsStore({
    client,
    tableName,
    backoffBaseMs: 1,
    writerLeaseMs: LEASE_MS,
    now: () => clock.now,
  });
  return { stats, counts, hooks, clock };
}

function freshRef(): PartitionRef {
  tables += 1;
  return { table: `writes${tables}`, partition: 'date=2026-12-06' };
}

const isCommit = (command: string, input: Record<string, unknown>) =>
  command === 'UpdateItem' && String(input.UpdateExpression).includes('REMOVE #w');

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

describe('DynamoStatsStore write path (DynamoDB Local)', () => {
  it('aggregates a batch: one put per changed file, one register and one commit for the partition, no transaction', async () => {
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
    expect(counts.get('PutItem')).toBe(4);
    expect(counts.get('UpdateItem')).toBe(2);
    expect(counts.get('TransactWriteItems')).toBeUndefined();
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
    // Both creates are guessed new (no read), refused by their condition, read back and found stale: the
    // price of not reading every create first is one write unit per create that is a redelivery.
    expect(counts.get('PutItem')).toBe(2);
    expect(counts.get('UpdateItem')).toBe(2); // register, and a commit that only drops the registration
  });

  it('keeps counts exact when a conditional put loses a race to another writer, reading the record again', async () => {
    // Prepare: a.parquet exists; while this batch removes it, another writer overwrites it with a newer event
    const racer = instrumented();
    const other = instrumented();
    const ref = freshRef();
    const created = [fileEvent(ref, 'a.parquet', 1, 100)];
    await racer.stats.applyBatch(ref, created, touchOf(created));
    const removal = [fileEvent(ref, 'a.parquet', 2)];
    const overwrite = [fileEvent(ref, 'a.parquet', 3, 700)];
    let raced = false;
    racer.hooks.before = async (command) => {
      if (command === 'PutItem' && !raced) {
        raced = true;
        await other.stats.applyBatch(ref, overwrite, touchOf(overwrite));
      }
    };

    // Act
    const result = await racer.stats.applyBatch(ref, removal, touchOf(removal));

    // Assess
    expect(raced).toBe(true);
    expect(result.retries).toBeGreaterThanOrEqual(1);
    expect([result.applied, result.stale]).toEqual([0, 1]);
    expect(counters(await racer.stats.get(ref))).toEqual(truth([...created, ...removal, ...overwrite]));
  });

  it('takes over a writer that died between its puts and its commit only after its deadline, counting exactly', async () => {
    // Prepare: b.parquet exists; a writer puts a's create and b's removal (both in its first attempt: a
    // create is guessed new, a removal reads the record), then dies before its commit
    const { stats, hooks, clock } = instrumented();
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

    // Act: redelivered while the dead writer might still commit, then after its deadline and the skew margin
    const early = stats.applyBatch(ref, batch, touchOf(batch));
    await expect(early).rejects.toBeInstanceOf(TransientStoreError);
    clock.now += LEASE_MS + SKEW_MS + 1;
    const redelivered = await stats.applyBatch(ref, batch, touchOf(batch));

    // Assess
    expect(afterCrash).toEqual(truth(before));
    expect(redelivered.applied).toBe(2);
    expect(counters(await stats.get(ref))).toEqual(truth([...before, ...batch]));
    expect(counters(await stats.get(ref))).toMatchObject({ fileCount: 1, totalBytes: 100 });
  });

  it('refuses to commit after its own deadline, so a writer taken over never adds its delta too', async () => {
    // Prepare: the writer's puts are slow enough that its deadline passes before the commit
    const { stats, hooks, clock } = instrumented();
    const ref = freshRef();
    const batch = [fileEvent(ref, 'a.parquet', 1, 100)];
    hooks.before = (command) => {
      if (command === 'PutItem') clock.now += LEASE_MS + 1;
    };

    // Act
    const late = stats.applyBatch(ref, batch, touchOf(batch));

    // Assess
    await expect(late).rejects.toBeInstanceOf(TransientStoreError);
    hooks.before = undefined;
    clock.now += SKEW_MS;
    await stats.applyBatch(ref, batch, touchOf(batch));
    expect(counters(await stats.get(ref))).toEqual(truth(batch));
  });

  it('stays exact over 504 shuffled deliveries (each event three times) in random batches, with writers dying before their commit', async () => {
    // Prepare: creates, overwrites and deletes across two partitions, every event delivered three times, shuffled
    const random = prng(504);
    const { stats, hooks, clock } = instrumented();
    const refs = [freshRef(), freshRef()];
    const events: ResolvedEvent[] = [];
    let sequencer = 1;
    for (let i = 0; events.length < 168; i++) {
      const ref = refs[i % 2] as PartitionRef;
      const name = `part-${Math.floor(random() * 60)}.parquet`;
      const size = random() < 0.1 ? 200 * MIB : 100 + Math.floor(random() * 50_000);
      events.push(fileEvent(ref, name, sequencer++, random() < 0.25 ? undefined : size));
    }
    const deliveries = [...events, ...events, ...events]
      .map((e) => ({ e, k: random() }))
      .sort((a, b) => a.k - b.k)
      .map(({ e }) => e);
    expect(deliveries).toHaveLength(504);
    let crashes = 0;
    hooks.before = (command, input) => {
      if (isCommit(command, input) && random() < 0.15) {
        crashes += 1;
        throw new Error('Lambda timed out');
      }
    };

    // Act: batches of 1–40 messages, split per partition as the handler does; a crashed batch is redelivered later
    const queue: ResolvedEvent[][] = [];
    for (let i = 0; i < deliveries.length; ) {
      const size = 1 + Math.floor(random() * 40);
      queue.push(deliveries.slice(i, i + size));
      i += size;
    }
    for (let batch = queue.shift(); batch !== undefined; batch = queue.shift()) {
      for (const ref of refs) {
        const group = batch.filter((e) => e.ref.table === ref.table);
        if (group.length === 0) continue;
        try {
          await stats.applyBatch(ref, group, touchOf(group));
        } catch {
          queue.push(group); // SQS redelivers after the visibility timeout, when the writer is long dead
          clock.now += LEASE_MS + SKEW_MS + 1;
        }
      }
    }

    // Assess
    expect(crashes).toBeGreaterThan(0);
    for (const ref of refs) {
      expect(counters(await stats.get(ref))).toEqual(truth(events.filter((e) => e.ref.table === ref.table)));
    }
  });
});
