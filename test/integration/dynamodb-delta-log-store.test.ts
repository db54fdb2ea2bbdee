// Delta commits coordinated through DynamoDB (Spark's S3DynamoDBLogStore protocol) against DynamoDB Local and
// s3rver: one writer per version wins, a writer that died mid-protocol is finished by the next reader or writer,
// and the items look exactly like the ones Spark and delta-rs write, so all three can share one table.
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
} from '../../functions/adapters/dynamodb-delta-log-store.js';
import { S3ObjectStore } from '../../functions/adapters/s3-object-store.js';
import { DeltaLogError } from '../../functions/core/formats/delta/errors.js';
import { commitKey } from '../../functions/core/formats/delta/log-store.js';
import { ManualClock } from '../../functions/ports/clock.js';
import type { ObjectStore, PutOptions } from '../../functions/ports/object-store.js';
import { type RunningDynamoDbLocal, startDynamoDbLocal } from '../../infra/local/dynamodb-local.js';
import { type RunningS3Server, startS3Server } from '../../infra/local/s3-server.js';
import { faultyStore } from '../support/fault-store.js';

const BUCKET = 'lake';
/**
 * A fixed clock, so expireTime is a known number; in the future, because DynamoDB Local's TTL really deletes
 * items whose expireTime has passed.
 */
const NOW = Date.UTC(2099, 2, 1);

let ddb: RunningDynamoDbLocal;
let s3: RunningS3Server;
let dynamo: DynamoDBClient;
let store: ObjectStore;
let tableCount = 0;

beforeAll(async () => {
  [ddb, s3] = await Promise.all([startDynamoDbLocal(), startS3Server({ buckets: [BUCKET] })]);
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
});
