// Delta commits coordinated through DynamoDB (Spark's S3DynamoDBLogStore protocol) against DynamoDB Local and
// s3rver: one writer per version wins, a writer that died mid-protocol is finished by the next reader or writer,
// the items look exactly like the ones Spark (and delta-rs < 1.0) write, so they can share one table; a won entry
// whose N.json another writer put first is `exists`, never a silent overwrite; the coordination check refuses a log
// with versions the commit table never saw; a missing table is refused without inviting a second lock table.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CreateTableCommand,
  DescribeTableCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DEFAULT_EXPIRE_AFTER_SECONDS,
  DynamoDbDeltaLogStore,
  deltaLogTableInput,
  s3TablePath,
} from '../../functions/adapters/formats/delta/dynamodb-log-store.js';
import { S3ObjectStore } from '../../functions/adapters/s3-object-store.js';
import { DeltaLogError } from '../../functions/core/formats/delta/errors.js';
import { readCommitActions, readDeltaSnapshot } from '../../functions/core/formats/delta/log.js';
import { commitFileName } from '../../functions/core/formats/delta/log-files.js';
import { ConditionalPutLogStore, commitKey } from '../../functions/core/formats/delta/log-store.js';
import { ManualClock } from '../../functions/ports/clock.js';
import type { ObjectStore, PutOptions } from '../../functions/ports/object-store.js';
import { appendDeltaEvents, createDeltaEventsTable } from '../../functions/tools/sample-delta.js';
import type { DynamoDbLocalEndpoint } from '../../infra/local/dynamodb-local.js';
import { type RunningS3Server, startS3Server } from '../../infra/local/s3-server.js';
import { startTestDynamoDb } from '../support/dynamodb-local.js';
import { faultyStore } from '../support/fault-store.js';
import { rowMultiset } from '../support/workflow-harness.js';

const BUCKET = 'lake';
/**
 * A fixed clock, so expireTime is a known number; in the future, because DynamoDB Local's TTL really deletes
 * items whose expireTime has passed.
 */
const NOW = Date.UTC(2099, 2, 1);

let ddb: DynamoDbLocalEndpoint;
let s3: RunningS3Server;
let dynamo: DynamoDBClient;
let store: ObjectStore;
let tableCount = 0;

beforeAll(async () => {
  [ddb, s3] = await Promise.all([startTestDynamoDb(), startS3Server({ buckets: [BUCKET] })]);
  dynamo = ddb.client();
  store = new S3ObjectStore({ client: s3.client(), bucket: BUCKET });
});

afterAll(async () => {
  await Promise.all([ddb?.stop(), s3?.stop()]);
});

/**
 * The table as Delta's and delta-rs's docs create it with the AWS CLI (`create-table` with these keys and
 * 5/5 provisioned throughput, then `update-time-to-live` on expireTime): spelled out here, not taken from
 * the adapter, so the adapter is checked against what a Spark deployment really has.
 */
async function createSparkTable(): Promise<string> {
  tableCount += 1;
  const name = `delta_log_${tableCount}`;
  await dynamo.send(
    new CreateTableCommand({
      TableName: name,
      AttributeDefinitions: [
        { AttributeName: 'tablePath', AttributeType: 'S' },
        { AttributeName: 'fileName', AttributeType: 'S' },
      ],
      KeySchema: [
        { AttributeName: 'tablePath', KeyType: 'HASH' },
        { AttributeName: 'fileName', KeyType: 'RANGE' },
      ],
      ProvisionedThroughput: { ReadCapacityUnits: 5, WriteCapacityUnits: 5 },
    }),
  );
  await dynamo.send(
    new UpdateTimeToLiveCommand({
      TableName: name,
      TimeToLiveSpecification: { Enabled: true, AttributeName: 'expireTime' },
    }),
  );
  return name;
}

function logStore(tableName: string, on: ObjectStore = store): DynamoDbDeltaLogStore {
  return new DynamoDbDeltaLogStore({
    client: dynamo,
    tableName,
    region: 'us-east-1',
    store: on,
    tablePath: s3TablePath(BUCKET),
    clock: new ManualClock(NOW),
  });
}

/** `store` as an S3-compatible store without conditional writes sees it: put-if-absent is a plain put. */
function withoutPutIfAbsent(inner: ObjectStore): ObjectStore {
  return new Proxy(inner, {
    get(target, property) {
      if (property === 'put') {
        return (key: string, body: Uint8Array | string, options: PutOptions = {}) =>
          target.put(key, body, { ...options, ifNoneMatch: undefined });
      }
      const value: unknown = Reflect.get(target, property);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

function bytesOf(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}

async function textAt(key: string): Promise<string> {
  return new TextDecoder().decode(await store.get(key));
}

async function keysUnder(prefix: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const object of store.listAll(prefix)) keys.push(object.key);
  return keys;
}

async function entry(tableName: string, tablePath: string, fileName: string) {
  const response = await dynamo.send(
    new GetItemCommand({
      TableName: tableName,
      Key: { tablePath: { S: tablePath }, fileName: { S: fileName } },
      ConsistentRead: true,
    }),
  );
  return response.Item;
}

describe('DynamoDbDeltaLogStore', () => {
  it('creates its table with the same key schema as the table a Spark deployment uses', async () => {
    // Prepare
    const spark = await createSparkTable();
    const ours = `${spark}_ours`;
    // Act
    await dynamo.send(new CreateTableCommand(deltaLogTableInput(ours)));
    // Assess
    const [sparkTable, ourTable] = await Promise.all(
      [spark, ours].map(
        async (name) => (await dynamo.send(new DescribeTableCommand({ TableName: name }))).Table,
      ),
    );
    expect(ourTable?.KeySchema).toEqual(sparkTable?.KeySchema);
    expect(ourTable?.AttributeDefinitions).toEqual(sparkTable?.AttributeDefinitions);
  });

  it('writes an entry shaped like Spark’s: string keys, string complete flag, numeric expireTime, .tmp temp path', async () => {
    // Prepare
    const tableName = await createSparkTable();
    // Act
    const result = await logStore(tableName).writeCommit('tables/shape', 0, bytesOf('{"commitInfo":{}}\n'));
    // Assess
    expect(result).toBe('written');
    const item = await entry(tableName, 's3://lake/tables/shape', '00000000000000000000.json');
    expect(Object.keys(item ?? {}).sort()).toEqual([
      'complete',
      'expireTime',
      'fileName',
      'tablePath',
      'tempPath',
    ]);
    expect(item).toMatchObject({
      tablePath: { S: 's3://lake/tables/shape' },
      fileName: { S: '00000000000000000000.json' },
      complete: { S: 'true' },
      expireTime: { N: String(NOW / 1000 + DEFAULT_EXPIRE_AFTER_SECONDS) },
    });
    expect(item?.tempPath?.S).toMatch(/^\.tmp\/00000000000000000000\.json\.[0-9a-f-]{36}$/);
    expect(await textAt(commitKey('tables/shape', 0))).toBe('{"commitInfo":{}}\n');
  });

  it('spells tablePath as Hadoop does: no trailing slash, the bucket root with one, the configured scheme', () => {
    // Act
    const s3 = s3TablePath('lake');
    const s3a = s3TablePath('lake', 's3a');
    // Assess
    expect(s3('tables/events')).toBe('s3://lake/tables/events');
    expect(s3('tables//events/')).toBe('s3://lake/tables/events');
    expect(s3('')).toBe('s3://lake/');
    expect(s3a('tables/events')).toBe('s3a://lake/tables/events');
  });

  it('lets exactly one of two writers racing for the same version write it, and leaves no temp file behind', async () => {
    // Prepare
    const tableName = await createSparkTable();
    await logStore(tableName).writeCommit('tables/race', 0, bytesOf('{"v":0}'));
    const bodies = ['{"writer":"a"}', '{"writer":"b"}'];
    // Act
    const results = await Promise.all(
      bodies.map((body) => logStore(tableName).writeCommit('tables/race', 1, bytesOf(body))),
    );
    // Assess
    expect([...results].sort()).toEqual(['exists', 'written']);
    const winner = bodies[results.indexOf('written')];
    expect(await textAt(commitKey('tables/race', 1))).toBe(winner);
    expect(await keysUnder('tables/race/_delta_log/')).toEqual([
      commitKey('tables/race', 0),
      commitKey('tables/race', 1),
    ]);
  });

  it('decides a race in DynamoDB alone when the object store ignores If-None-Match (S3-compatible stores)', async () => {
    // Prepare
    const tableName = await createSparkTable();
    const unconditional = withoutPutIfAbsent(store);
    await logStore(tableName, unconditional).writeCommit('tables/plain', 0, bytesOf('{"v":0}'));
    const bodies = [1, 2, 3, 4, 5].map((n) => `{"writer":${n}}`);
    // Act
    const results = await Promise.all(
      bodies.map((body) => logStore(tableName, unconditional).writeCommit('tables/plain', 1, bytesOf(body))),
    );
    // Assess
    expect(results.filter((result) => result === 'written')).toHaveLength(1);
    expect(await textAt(commitKey('tables/plain', 1))).toBe(bodies[results.indexOf('written')]);
    expect(await keysUnder('tables/plain/_delta_log/')).toEqual([
      commitKey('tables/plain', 0),
      commitKey('tables/plain', 1),
    ]);
  });

  it('answers exists to a later writer of a committed version and keeps the first commit', async () => {
    // Prepare
    const tableName = await createSparkTable();
    await logStore(tableName).writeCommit('tables/late', 0, bytesOf('first'));
    // Act
    const result = await logStore(tableName).writeCommit('tables/late', 0, bytesOf('second'));
    // Assess
    expect(result).toBe('exists');
    expect(await textAt(commitKey('tables/late', 0))).toBe('first');
  });

  it('finishes on the next read the commit of a writer that died after its entry was put (Spark-written steps)', async () => {
    // Prepare: version 0 committed; version 1 staged and claimed by hand, as a writer that died before the copy.
    const tableName = await createSparkTable();
    await logStore(tableName).writeCommit('tables/crash', 0, bytesOf('{"v":0}'));
    const tempPath = '.tmp/00000000000000000001.json.6f1c2a0e-3b5d-4c8e-9f10-2a3b4c5d6e7f';
    await store.put(`tables/crash/_delta_log/${tempPath}`, '{"v":1}');
    await dynamo.send(
      new PutItemCommand({
        TableName: tableName,
        Item: {
          tablePath: { S: 's3://lake/tables/crash' },
          fileName: { S: '00000000000000000001.json' },
          tempPath: { S: tempPath },
          complete: { S: 'false' },
        },
      }),
    );
    const reader = logStore(tableName);
    // Act
    const rival = await reader.writeCommit('tables/crash', 1, bytesOf('{"v":"rival"}'));
    await reader.prepareRead('tables/crash');
    const afterRead = await textAt(commitKey('tables/crash', 1));
    const entryAfterRead = await entry(tableName, 's3://lake/tables/crash', '00000000000000000001.json');
    const next = await reader.writeCommit('tables/crash', 2, bytesOf('{"v":2}'));
    // Assess
    expect(rival).toBe('exists');
    expect(afterRead).toBe('{"v":1}');
    expect(entryAfterRead).toMatchObject({
      complete: { S: 'true' },
      expireTime: { N: String(NOW / 1000 + DEFAULT_EXPIRE_AFTER_SECONDS) },
    });
    expect(next).toBe('written');
    expect(await textAt(commitKey('tables/crash', 2))).toBe('{"v":2}');
  });

  it('finishes an interrupted previous version before writing the next one, without a read in between', async () => {
    // Prepare: the writer of version 1 cannot write 1.json (denied every time), so its entry stays incomplete.
    const tableName = await createSparkTable();
    await logStore(tableName).writeCommit('tables/next', 0, bytesOf('{"v":0}'));
    const crippled = faultyStore(store, {
      denied: (op, key) => op === 'put' && key === commitKey('tables/next', 1),
    });
    const interrupted = await logStore(tableName, crippled).writeCommit('tables/next', 1, bytesOf('{"v":1}'));
    const leftIncomplete = await entry(tableName, 's3://lake/tables/next', '00000000000000000001.json');
    const visibleBefore = await store.head(commitKey('tables/next', 1));
    // Act
    const next = await logStore(tableName).writeCommit('tables/next', 2, bytesOf('{"v":2}'));
    // Assess
    expect(interrupted).toBe('written');
    expect(leftIncomplete?.complete).toEqual({ S: 'false' });
    expect(leftIncomplete?.expireTime).toBeUndefined();
    expect(visibleBefore).toBeUndefined();
    expect(next).toBe('written');
    expect(await textAt(commitKey('tables/next', 1))).toBe('{"v":1}');
    expect(await textAt(commitKey('tables/next', 2))).toBe('{"v":2}');
  });

  it('refuses a version whose predecessor does not exist', async () => {
    // Prepare
    const tableName = await createSparkTable();
    // Act
    const gap = logStore(tableName).writeCommit('tables/gap', 3, bytesOf('{"v":3}'));
    // Assess
    await expect(gap).rejects.toBeInstanceOf(DeltaLogError);
    expect(await keysUnder('tables/gap/')).toEqual([]);
  });

  it('refuses version 0 while the entries of a deleted table at the same path are still there', async () => {
    // Prepare: a table committed, then its files deleted (the entries stay until TTL removes them).
    const tableName = await createSparkTable();
    await logStore(tableName).writeCommit('tables/reborn', 0, bytesOf('old'));
    await store.deleteMany([{ key: commitKey('tables/reborn', 0) }]);
    // Act
    const recreated = logStore(tableName).writeCommit('tables/reborn', 0, bytesOf('new'));
    // Assess
    await expect(recreated).rejects.toBeInstanceOf(DeltaLogError);
    expect(await store.head(commitKey('tables/reborn', 0))).toBeUndefined();
  });

  it("answers exists when it won the entry but a put-if-absent writer's N.json is there first, and keeps that commit", async () => {
    // Prepare: a table; between lake-compactor's entry put and its copy, a delta-rs >= 1.0 style writer (no
    // DynamoDB, put-if-absent) commits the same version with a real append.
    const tableName = await createSparkTable();
    const root = 'tables/masked';
    await createDeltaEventsTable(store, root, { now: NOW, writer: logStore(tableName) });
    let foreign: { version: number; key: string } | undefined;
    const interloping = new Proxy(store, {
      get(target, property) {
        if (property === 'put') {
          return async (key: string, body: Uint8Array | string, options: PutOptions = {}) => {
            if (foreign === undefined && key === commitKey(root, 1) && options.ifNoneMatch === '*') {
              foreign = await appendDeltaEvents(target, root, {
                day: '2024-03-01',
                rows: 9,
                seed: 5,
                now: NOW,
              });
            }
            return target.put(key, body, options);
          };
        }
        const value: unknown = Reflect.get(target, property);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const ours = bytesOf('{"commitInfo":{"operation":"OPTIMIZE","engineInfo":"lake-compactor"}}\n');

    // Act
    const result = await logStore(tableName, interloping).writeCommit(root, 1, ours);

    // Assess: not "written" (lake-compactor would believe a commit that is not there), the writer's append is
    // version 1 as it wrote it, the entry is complete, and no temp file of ours is left.
    expect(result).toBe('exists');
    expect(foreign?.version).toBe(1);
    const actions = await readCommitActions(store, root, 1);
    expect(
      actions?.some((a) => a.kind === 'add' && a.add.path === foreign?.key.slice(`${root}/`.length)),
    ).toBe(true);
    expect((await entry(tableName, `s3://${BUCKET}/${root}`, commitFileName(1)))?.complete?.S).toBe('true');
    expect(await keysUnder(`${root}/_delta_log/.tmp/`)).toEqual([]);
    const live = (await readDeltaSnapshot(store, root)).files.flatMap((f) =>
      f.key === undefined ? [] : [f.key],
    );
    expect(live).toEqual([foreign?.key]);
    const scratch = await mkdtemp(join(tmpdir(), 'masked-'));
    try {
      expect(await rowMultiset(store as S3ObjectStore, live, scratch)).toHaveLength(9);
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  });

  it('checks a log whose every version went through the commit table as coordinated', async () => {
    // Prepare
    const tableName = await createSparkTable();
    const root = 'tables/coordinated';
    const writer = logStore(tableName);
    await createDeltaEventsTable(store, root, { now: NOW, writer });
    await appendDeltaEvents(store, root, { day: '2024-03-01', rows: 5, seed: 1, now: NOW, writer });

    // Act
    const finding = await writer.check(root, { now: Date.now(), purpose: 'commit' });

    // Assess
    expect(finding).toBeUndefined();
  });

  it('refuses a log with versions newer than the latest entry: a writer commits without the commit table', async () => {
    // Prepare: two coordinated versions, then two of a writer that bypasses DynamoDB (put-if-absent only)
    const tableName = await createSparkTable();
    const root = 'tables/bypassed';
    const writer = logStore(tableName);
    await createDeltaEventsTable(store, root, { now: NOW, writer });
    await appendDeltaEvents(store, root, { day: '2024-03-01', rows: 5, seed: 1, now: NOW, writer });
    for (const seed of [2, 3])
      await appendDeltaEvents(store, root, { day: '2024-03-01', rows: 5, seed, now: NOW });

    // Act: whatever the clock says, order alone proves it
    const finding = await writer.check(root, { now: Date.now() + 365 * 86_400_000, purpose: 'plan' });

    // Assess
    expect(finding?.kind).toBe('mismatch');
    expect(finding?.message).toMatch(
      /version\(s\) 2, 3 .* newer than the latest entry in the DynamoDB commit table dynamodb:delta_log_\d+ \(us-east-1\) for tablePath s3:\/\/lake\/tables\/bypassed \(00000000000000000001\.json\)/,
    );
    expect(finding?.message).toMatch(/delta-rs >= 1\.0 .* cannot use DynamoDB any more/);
  });

  it('refuses a recently written log of which the commit table holds no entry at all, and not an old one (TTL)', async () => {
    // Prepare
    const tableName = await createSparkTable();
    const root = 'tables/never';
    await createDeltaEventsTable(store, root, { now: NOW });
    await appendDeltaEvents(store, root, { day: '2024-03-01', rows: 5, seed: 1, now: NOW });
    const written = (await store.head(commitKey(root, 1)))?.lastModified.getTime() ?? 0;
    const writer = logStore(tableName);

    // Act
    const recent = await writer.check(root, { now: written + 60_000, purpose: 'plan' });
    const old = await writer.check(root, { now: written + 2 * 60 * 60_000, purpose: 'plan' });

    // Assess
    expect(recent?.kind).toBe('mismatch');
    expect(recent?.message).toMatch(/version 1 was written .* holds no entry of the table at all/);
    expect(old).toBeUndefined();
  });

  it('lets a put-if-absent table check a DynamoDB commit table for its entries, and refuses it when there are some', async () => {
    // Prepare: the same table path has an entry in the organisation's commit table
    const tableName = await createSparkTable();
    const root = 'tables/probed';
    await createDeltaEventsTable(store, root, { now: NOW, writer: logStore(tableName) });
    const clean = 'tables/unprobed';
    await createDeltaEventsTable(store, clean, { now: NOW });

    // Act
    const found = await new ConditionalPutLogStore(store, logStore(tableName)).check(root);
    const none = await new ConditionalPutLogStore(store, logStore(tableName)).check(clean);

    // Assess
    expect(found?.kind).toBe('mismatch');
    expect(found?.message).toMatch(
      /holds commit entries of this table \(tablePath s3:\/\/lake\/tables\/probed, latest 00000000000000000000\.json, complete\)/,
    );
    expect(none).toBeUndefined();
  });

  it('refuses a commit table that does not exist in the named region without inviting a second lock table', async () => {
    // Act
    const write = logStore('no_such_delta_log').writeCommit('tables/missing', 0, bytesOf('x'));

    // Assess
    await expect(write).rejects.toThrow(
      /The Delta commit table no_such_delta_log does not exist in region us-east-1\. Do not create one here: .*a second table of that name excludes nobody.*Spark's defaults: delta_log in us-east-1/,
    );
    expect(await store.head(commitKey('tables/missing', 0))).toBeUndefined();
  });
});
