// Hudi's DynamoDB table lock against DynamoDB Local: one writer wins a free lock; a waiter steals a lock only after
// its recordVersionNumber stayed unchanged for a full lease; heartbeats keep it; release deletes the item; items
// shaped by the Java lock client (what a Hudi writer leaves) are waited for and stolen exactly as the Java client
// would; the items written here carry exactly the Java client's attributes. Each writer has its own clock, moved by
// its own waits, so no test sleeps for real.
import {
  CreateTableCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
} from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DynamoDbHudiLock,
  HUDI_DYNAMODB_LOCK_ATTRIBUTES,
  hudiLockTableInput,
} from '../../functions/adapters/formats/hudi/dynamodb-lock.js';
import { InvalidInputError } from '../../functions/core/errors.js';
import {
  HudiLockLostError,
  HudiLockStateError,
  HudiLockUnavailableError,
} from '../../functions/core/formats/hudi/lock/errors.js';
import { hudiImplicitDynamoDbPartitionKey } from '../../functions/core/formats/hudi/lock/implicit-partition-key.js';
import type { HudiLockHandle } from '../../functions/core/formats/hudi/lock/lock.js';
import { ManualClock } from '../../functions/ports/clock.js';
import type { DynamoDbLocalEndpoint } from '../../infra/local/dynamodb-local.js';
import { startTestDynamoDb } from '../support/dynamodb-local.js';

const T0 = Date.UTC(2026, 11, 6);
const LEASE = 3_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let ddb: DynamoDbLocalEndpoint;
let dynamo: DynamoDBClient;
let tableCount = 0;

beforeAll(async () => {
  ddb = await startTestDynamoDb();
  dynamo = ddb.client();
});

afterAll(async () => {
  await ddb?.stop();
});

/** A fresh lock table per test, created as Hudi creates it. */
async function lockTable(): Promise<string> {
  tableCount += 1;
  const name = `hudi_locks_${tableCount}`;
  await dynamo.send(new CreateTableCommand(hudiLockTableInput(name)));
  return name;
}

interface Writer {
  readonly lock: DynamoDbHudiLock;
  readonly clock: ManualClock;
}

/** A writer whose waits move its own clock; `onSleep` runs during each wait (another writer's heartbeat). */
function writer(
  tableName: string,
  name: string,
  options: { clock?: ManualClock; onSleep?: () => Promise<void>; partitionKey?: string } = {},
): Writer {
  const clock = options.clock ?? new ManualClock(T0);
  let n = 0;
  const lock = new DynamoDbHudiLock({
    client: dynamo,
    tableName,
    region: 'us-east-1',
    partitionKey: options.partitionKey ?? 'trips',
    clock,
    leaseDurationMs: LEASE,
    heartbeatIntervalMs: 1_000,
    safetyMarginMs: 300,
    newOwnerName: () => `${name}-${++n}`,
    sleep: async (ms) => {
      clock.advance(ms);
      await options.onSleep?.();
    },
  });
  return { lock, clock };
}

async function item(tableName: string, key = 'trips') {
  const response = await dynamo.send(
    new GetItemCommand({ TableName: tableName, Key: { key: { S: key } }, ConsistentRead: true }),
  );
  return response.Item;
}

describe('Hudi DynamoDB lock', () => {
  it('writes exactly the item the Java lock client writes for Hudi', async () => {
    // Prepare
    const table = await lockTable();
    const a = writer(table, 'a');

    // Act
    const handle = await a.lock.acquire();

    // Assess
    const stored = await item(table);
    expect(Object.keys(stored ?? {}).sort()).toEqual([
      'key',
      'leaseDuration',
      'ownerName',
      'recordVersionNumber',
    ]);
    expect(stored?.[HUDI_DYNAMODB_LOCK_ATTRIBUTES.key]).toEqual({ S: 'trips' });
    expect(stored?.ownerName).toEqual({ S: handle.ownerId });
    expect(stored?.leaseDuration).toEqual({ S: String(LEASE) });
    expect(stored?.recordVersionNumber?.S).toMatch(UUID);
    expect(handle.guaranteedUntil()).toBe(T0 + LEASE - 300);
  });

  it('lets exactly one of two contending writers take a free lock', async () => {
    // Prepare: the winner heartbeats during the loser's waits, as its heartbeat thread would
    const table = await lockTable();
    const held: HudiLockHandle[] = [];
    const heartbeat = async () => {
      for (const handle of held) await handle.renew();
    };
    const a = writer(table, 'a', { onSleep: heartbeat });
    const b = writer(table, 'b', { onSleep: heartbeat });
    const take = (w: Writer) =>
      w.lock.acquire({ waitMs: 0 }).then((handle) => {
        held.push(handle);
        return handle;
      });

    // Act
    const results = await Promise.allSettled([take(a), take(b)]);

    // Assess
    const won = results.filter((r): r is PromiseFulfilledResult<HudiLockHandle> => r.status === 'fulfilled');
    const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    const refusal: unknown = lost[0]?.reason;
    expect(refusal).toBeInstanceOf(HudiLockUnavailableError);
    expect((refusal as HudiLockUnavailableError).holder).toBe(won[0]?.value.ownerId);
    expect((await item(table))?.ownerName?.S).toBe(won[0]?.value.ownerId);
  });

  it('steals a lock whose recordVersionNumber stayed unchanged for longer than a full lease, and its holder learns it lost', async () => {
    // Prepare: a holds and stops heartbeating (a frozen process: its own clock does not move)
    const table = await lockTable();
    const a = writer(table, 'a');
    const aHandle = await a.lock.acquire();
    const rvn = (await item(table))?.recordVersionNumber?.S;
    const b = writer(table, 'b');

    // Act
    const bHandle = await b.lock.acquire({ waitMs: 0 });
    const renewal = await aHandle.renew().catch((e: unknown) => e);
    const release = await aHandle.release();

    // Assess: first seen at 0, still the same at 3 s (not longer than the lease), stolen at 4 s
    expect(b.clock.now()).toBe(T0 + 4_000);
    const stored = await item(table);
    expect(stored?.ownerName?.S).toBe(bHandle.ownerId);
    expect(stored?.recordVersionNumber?.S).not.toBe(rvn);
    expect(renewal).toBeInstanceOf(HudiLockLostError);
    expect((renewal as HudiLockLostError).reason).toBe('taken');
    expect(() => aHandle.assertHeld('completing the instant')).toThrow(HudiLockLostError);
    expect(release).toBe('lost');
    expect((await item(table))?.ownerName?.S).toBe(bHandle.ownerId);
  });

  it('never steals a lock whose holder keeps heartbeating, and gives up after the wait plus one lease', async () => {
    // Prepare
    const table = await lockTable();
    const a = writer(table, 'a');
    const aHandle = await a.lock.acquire();
    const versions = new Set<string>();
    const b = writer(table, 'b', {
      onSleep: async () => {
        a.clock.advance(1_000);
        await aHandle.renew();
        versions.add((await item(table))?.recordVersionNumber?.S ?? '');
      },
    });

    // Act
    const error = await b.lock.acquire({ waitMs: 2_000 }).catch((e: unknown) => e);

    // Assess
    expect(error).toBeInstanceOf(HudiLockUnavailableError);
    expect((error as HudiLockUnavailableError).waitedMs).toBe(6_000);
    expect(versions.size).toBe(6);
    expect((await item(table))?.ownerName?.S).toBe(aHandle.ownerId);
    expect(aHandle.isHeld()).toBe(true);
  });

  it('releases by deleting the item, so the next writer takes the lock at once', async () => {
    // Prepare
    const table = await lockTable();
    const a = writer(table, 'a');
    const handle = await a.lock.acquire();
    const b = writer(table, 'b');

    // Act
    const outcome = await handle.release();
    const gone = await item(table);
    const next = await b.lock.acquire({ waitMs: 0 });

    // Assess
    expect(outcome).toBe('released');
    expect(gone).toBeUndefined();
    expect(next.ownerId).toBe('b-1');
    expect(b.clock.now()).toBe(T0);
    expect(() => handle.assertHeld('writing')).toThrow(/already released/);
  });

  it("waits for a Java client's live item by that item's own leaseDuration, then steals it", async () => {
    // Prepare: the item a Hudi writer's lock client left behind (20 s lease, data attached), then froze
    const table = await lockTable();
    const rvn = '0b3a1d52-7f2e-4c8e-9d6a-2f9b1c4e5a67';
    await dynamo.send(
      new PutItemCommand({
        TableName: table,
        Item: {
          key: { S: 'trips' },
          ownerName: { S: 'ip-10-0-1-17.ec2.internal8c1f0e2a-5b7d-4e3c-a9f1-6d2b4c8e0f13' },
          leaseDuration: { S: '20000' },
          recordVersionNumber: { S: rvn },
          data: { B: new Uint8Array([1, 2, 3]) },
        },
      }),
    );
    const seen: (string | undefined)[] = [];
    const stealer = writer(table, 's', {
      onSleep: async () => {
        seen.push((await item(table))?.ownerName?.S);
      },
    });

    // Act
    const handle = await stealer.lock.acquire({ waitMs: 0 });

    // Assess: first seen at 0 and unchanged at 20 s (not longer than its 20 s lease): stolen at 21 s, not before
    expect(stealer.clock.now()).toBe(T0 + 21_000);
    expect(seen).toHaveLength(21);
    expect(new Set(seen)).toEqual(new Set(['ip-10-0-1-17.ec2.internal8c1f0e2a-5b7d-4e3c-a9f1-6d2b4c8e0f13']));
    const stored = await item(table);
    expect(stored?.ownerName?.S).toBe(handle.ownerId);
    expect(stored?.recordVersionNumber?.S).not.toBe(rvn);
    expect(stored?.data).toBeUndefined();
  });

  it('takes a released item the Java client left (isReleased = "1") at once, with a PutItem that drops the flag', async () => {
    // Prepare
    const table = await lockTable();
    await dynamo.send(
      new PutItemCommand({
        TableName: table,
        Item: {
          key: { S: 'trips' },
          ownerName: { S: 'hudi-writer' },
          leaseDuration: { S: '60000' },
          recordVersionNumber: { S: '7d4c2b1a-0e9f-4a8b-b7c6-d5e4f3a2b1c0' },
          isReleased: { S: '1' },
        },
      }),
    );
    const b = writer(table, 'b');

    // Act
    const handle = await b.lock.acquire({ waitMs: 0 });

    // Assess
    expect(b.clock.now()).toBe(T0);
    const stored = await item(table);
    expect(stored?.ownerName?.S).toBe(handle.ownerId);
    expect(stored?.isReleased).toBeUndefined();
  });

  it('follows a Java holder whose heartbeat changes the recordVersionNumber, restarting the lease count', async () => {
    // Prepare: a Java holder heartbeats twice (new record versions), then freezes
    const table = await lockTable();
    const javaItem = (rvn: string) =>
      new PutItemCommand({
        TableName: table,
        Item: {
          key: { S: 'trips' },
          ownerName: { S: 'hudi-writer' },
          leaseDuration: { S: '3000' },
          recordVersionNumber: { S: rvn },
        },
      });
    await dynamo.send(javaItem('00000000-0000-4000-8000-000000000001'));
    let sleeps = 0;
    const b = writer(table, 'b', {
      onSleep: async () => {
        sleeps += 1;
        if (sleeps === 2) await dynamo.send(javaItem('00000000-0000-4000-8000-000000000002'));
        if (sleeps === 4) await dynamo.send(javaItem('00000000-0000-4000-8000-000000000003'));
      },
    });

    // Act
    const handle = await b.lock.acquire({ waitMs: 10_000 });

    // Assess: the last version was first seen at 4 s, so it is stolen at 8 s (longer than 3 s unchanged)
    expect(b.clock.now()).toBe(T0 + 8_000);
    expect((await item(table))?.ownerName?.S).toBe(handle.ownerId);
  });

  it('keeps the lock for the partition key it is given, beside other tables in the same lock table', async () => {
    // Prepare
    const table = await lockTable();
    const trips = writer(table, 'a');
    const rides = writer(table, 'b', { partitionKey: 'rides' });

    // Act
    const first = await trips.lock.acquire({ waitMs: 0 });
    const second = await rides.lock.acquire({ waitMs: 0 });

    // Assess
    expect(first.isHeld() && second.isHeld()).toBe(true);
    expect((await item(table, 'rides'))?.ownerName?.S).toBe('b-1');
  });

  it("takes the implicit-key provider's item: the XXHash64 key of the s3a→s3 base path", async () => {
    // Prepare
    const table = await lockTable();
    const partitionKey = hudiImplicitDynamoDbPartitionKey('s3a://my-bucket/my_lake/my_table');
    const a = writer(table, 'a', { partitionKey });

    // Act
    const handle = await a.lock.acquire({ waitMs: 0 });

    // Assess
    expect(partitionKey).toBe('C0E15D0CE1AD11CC');
    expect((await item(table, 'C0E15D0CE1AD11CC'))?.ownerName?.S).toBe(handle.ownerId);
  });

  it('refuses an item no lock client wrote, and a lock table that does not exist', async () => {
    // Prepare
    const table = await lockTable();
    await dynamo.send(
      new PutItemCommand({ TableName: table, Item: { key: { S: 'trips' }, owner: { S: 'x' } } }),
    );
    const b = writer(table, 'b');
    const missing = writer('no_such_table', 'c');

    // Act
    const malformed = await b.lock.acquire({ waitMs: 0 }).catch((e: unknown) => e);
    const noTable = await missing.lock.acquire({ waitMs: 0 }).catch((e: unknown) => e);

    // Assess
    expect(malformed).toBeInstanceOf(HudiLockStateError);
    expect(noTable).toBeInstanceOf(InvalidInputError);
    expect((noTable as Error).message).toMatch(/does not create it/);
  });
});
