// Hudi's DynamoDB table lock (`hoodie.write.lock.provider=org.apache.hudi.aws.transaction.lock.
// DynamoDBBasedLockProvider`), spoken item for item as Hudi speaks it, so a lake-compactor commit and a Hudi writer of
// the same table exclude each other. Hudi does not write the items itself: it drives awslabs' AmazonDynamoDBLockClient.
// Read from:
//   apache/hudi hudi-aws/src/main/java/org/apache/hudi/aws/transaction/lock/DynamoDBBasedLockProvider.java (commit
//   052478e7) and DynamoDBBasedLockProviderBase.java (commit 0f86cfd6): the table's single hash key `key` (S),
//   PAY_PER_REQUEST when Hudi creates it; lease = `hoodie.write.lock.wait_time_ms` (LockConfiguration: 60 s),
//   heartbeat = lease / 3 on a background thread; tryLock(time) = acquireLock(partitionKey,
//   additionalTimeToWaitForLock = time) with every other AcquireLockOptions default; unlock = releaseLock(lock).
//   .../hudi/config/DynamoDbBasedLockConfig.java (commit 052478e7): `hoodie.write.lock.dynamodb.table`, `.region`,
//   `.partition_key` (inferred from `hoodie.table.name`).
//   awslabs/amazon-dynamodb-lock-client src/main/java/com/amazonaws/services/dynamodbv2/AmazonDynamoDBLockClient.java
//   (commit 02ae4bd8) and AcquireLockOptions.java: the defaults Hudi gets — no sort key, no data (so no `data`
//   attribute is written), refresh period 1 s, replaceData true, deleteLockOnRelease true (release = DeleteItem),
//   updateExistingLockRecord false (every acquisition is a PutItem), acquireReleasedLocksConsistently false.
//
// The protocol (acquireLock / sendHeartbeat / releaseLock):
//   item      key (S, the partition key), ownerName (S), leaseDuration (S, decimal ms), recordVersionNumber (S, a
//             fresh UUID per write), isReleased (S "1", only on a lock released without deleting it), data (B, only
//             when a client passed data; Hudi never does).
//   acquire   GetItem (consistent). No item → PutItem if attribute_not_exists(key). A released item (isReleased is
//             present) → PutItem if attribute_exists(key) AND isReleased = "1". A held item → wait: the first
//             sighting extends the wait by the item's own leaseDuration; the lock is stolen (PutItem if
//             attribute_exists(key) AND recordVersionNumber = the one seen) once the same recordVersionNumber has been
//             seen for longer than that leaseDuration, counted from the read that first saw it. A lost conditional
//             put is retried until the wait is over. 1 s between reads.
//   heartbeat UpdateItem SET leaseDuration, recordVersionNumber = new UUID, if attribute_exists(key) AND
//             recordVersionNumber = own AND ownerName = own.
//   release   DeleteItem if attribute_exists(key) AND recordVersionNumber = own AND ownerName = own; a failed
//             condition means it was stolen already.
// Every time is a duration on the reader's own clock (no clock is compared across machines), so a holder's lease is
// guaranteed until its last successful write was *sent* + leaseDuration, less a margin for a write in flight.
//
// `DynamoDBBasedImplicitPartitionKeyLockProvider` is this same lock on the item whose key is derived from the base
// path: pass `hudiImplicitDynamoDbPartitionKey(basePath)` (core/formats/hudi/lock/implicit-partition-key.ts) as
// `partitionKey`.
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import {
  type AttributeValue,
  type CreateTableCommandInput,
  DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  type PutItemCommandInput,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { InvalidInputError, TransientStoreError } from '../../../core/errors.js';
import { HudiLockStateError, HudiLockUnavailableError } from '../../../core/formats/hudi/lock/errors.js';
import {
  type HudiLockAcquireOptions,
  type HudiLockHandle,
  type HudiLockReleaseOutcome,
  type HudiTableLock,
  LeaseState,
} from '../../../core/formats/hudi/lock/lock.js';
import type { Clock } from '../../../ports/clock.js';

/** Attribute names of a lock item, as AmazonDynamoDBLockClient (and DynamoDBBasedLockProviderBase) spell them. */
export const HUDI_DYNAMODB_LOCK_ATTRIBUTES = {
  key: 'key',
  ownerName: 'ownerName',
  leaseDuration: 'leaseDuration',
  recordVersionNumber: 'recordVersionNumber',
  isReleased: 'isReleased',
  data: 'data',
} as const;

/** `IS_RELEASED_VALUE`. */
const IS_RELEASED_VALUE = '1';

/** Hudi's defaults: lease `hoodie.write.lock.wait_time_ms` = 60 s, heartbeat lease / 3, 1 s between reads. */
export const HUDI_DYNAMODB_LOCK_DEFAULTS = {
  leaseDurationMs: 60_000,
  refreshPeriodMs: 1_000,
} as const;

/**
 * The lock table as Hudi creates it when missing (`createLockTableInDynamoDB`, default billing): for tests and for
 * operators who create it ahead of the writers. lake-compactor never creates it on its own: a table of that name
 * in another region or account would be a second lock that excludes nobody.
 */
export function hudiLockTableInput(tableName: string): CreateTableCommandInput {
  return {
    TableName: tableName,
    KeySchema: [{ AttributeName: HUDI_DYNAMODB_LOCK_ATTRIBUTES.key, KeyType: 'HASH' }],
    AttributeDefinitions: [{ AttributeName: HUDI_DYNAMODB_LOCK_ATTRIBUTES.key, AttributeType: 'S' }],
    BillingMode: 'PAY_PER_REQUEST',
  };
}

export interface DynamoDbHudiLockOptions {
  readonly client: DynamoDBClient;
  /** `hoodie.write.lock.dynamodb.table`. */
  readonly tableName: string;
  /** `hoodie.write.lock.dynamodb.region`, for messages (the client is already bound to it). */
  readonly region?: string;
  /**
   * `hoodie.write.lock.dynamodb.partition_key`: Hudi's default is the table name (`hoodie.table.name`); for the
   * implicit-key provider, `hudiImplicitDynamoDbPartitionKey(basePath)`.
   */
  readonly partitionKey: string;
  readonly clock: Clock;
  /** Waits between reads. @default a real timer */
  readonly sleep?: (ms: number) => Promise<void>;
  /** The `ownerName` of each acquisition. @default `lake-compactor@<host>:<uuid>` (Java: host name + UUID) */
  readonly newOwnerName?: () => string;
  /** @default a random UUID, as the Java client */
  readonly newRecordVersionNumber?: () => string;
  /** `hoodie.write.lock.wait_time_ms`: the lease written into the item. @default 60000 */
  readonly leaseDurationMs?: number;
  /** @default leaseDurationMs / 3, as Hudi */
  readonly heartbeatIntervalMs?: number;
  /** Between reads while waiting. @default 1000 (the Java client's) */
  readonly refreshPeriodMs?: number;
  /** How long before its lease ends the holder stops counting on it. @default a tenth of the lease */
  readonly safetyMarginMs?: number;
}

/** A lock item as read, with the local time of the read (`LockItem` of the Java client). */
export interface HudiDynamoDbLockItem {
  readonly ownerName: string;
  readonly leaseDurationMs: number;
  readonly recordVersionNumber: string;
  readonly released: boolean;
  readonly lookupTime: number;
}

/** The Hudi DynamoDB lock of one table (one item of the lock table). */
export class DynamoDbHudiLock implements HudiTableLock {
  readonly description: string;
  readonly heartbeatIntervalMs: number;
  readonly leaseDurationMs: number;
  private readonly refreshPeriodMs: number;
  private readonly safetyMarginMs: number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly newOwnerName: () => string;
  private readonly newRecordVersionNumber: () => string;

  constructor(private readonly options: DynamoDbHudiLockOptions) {
    this.description = `dynamodb:${options.tableName}${options.region === undefined ? '' : ` (${options.region})`}/${options.partitionKey}`;
    this.leaseDurationMs = options.leaseDurationMs ?? HUDI_DYNAMODB_LOCK_DEFAULTS.leaseDurationMs;
    this.heartbeatIntervalMs = options.heartbeatIntervalMs ?? Math.floor(this.leaseDurationMs / 3);
    this.refreshPeriodMs = options.refreshPeriodMs ?? HUDI_DYNAMODB_LOCK_DEFAULTS.refreshPeriodMs;
    this.safetyMarginMs = options.safetyMarginMs ?? Math.floor(this.leaseDurationMs / 10);
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.newOwnerName = options.newOwnerName ?? (() => `lake-compactor@${hostname()}:${randomUUID()}`);
    this.newRecordVersionNumber = options.newRecordVersionNumber ?? randomUUID;
    const problems: string[] = [];
    if (options.partitionKey === '') problems.push('partitionKey must not be empty');
    if (!Number.isSafeInteger(this.leaseDurationMs) || this.leaseDurationMs <= 0) {
      problems.push('leaseDurationMs must be a positive whole number of ms');
    }
    // The Java client's own check when it runs a heartbeat thread.
    if (this.leaseDurationMs < 2 * this.heartbeatIntervalMs) {
      problems.push(
        'heartbeatIntervalMs must be at most half of leaseDurationMs (the lock client requires it)',
      );
    }
    if (this.safetyMarginMs < 0 || this.safetyMarginMs >= this.leaseDurationMs - this.heartbeatIntervalMs) {
      problems.push('safetyMarginMs must be between 0 and leaseDurationMs - heartbeatIntervalMs');
    }
    if (problems.length > 0) {
      throw new InvalidInputError(`The Hudi DynamoDB lock ${this.description} is misconfigured`, problems);
    }
  }

  /**
   * `acquireLock(additionalTimeToWaitForLock = waitMs)`, as Hudi calls it. A lock held by another writer adds that
   * lock's own leaseDuration to the wait once, because a holder that stopped heartbeating can only be told from one
   * that is alive by watching its recordVersionNumber stay unchanged for a full lease: the longest wait is therefore
   * waitMs + the holder's lease (+ one refresh period). @default waitMs = the lease, as Hudi passes it.
   */
  async acquire(options: HudiLockAcquireOptions = {}): Promise<HudiLockHandle> {
    const clock = this.options.clock;
    const start = clock.now();
    let millisecondsToWait = options.waitMs ?? this.leaseDurationMs;
    let tracked: HudiDynamoDbLockItem | undefined;
    let sleptOnceForLease = false;
    let lastSeenOwner: string | undefined;
    for (;;) {
      const existing = await this.read();
      let attempt: HudiLockHandle | 'lost-race' | undefined;
      if (existing === undefined) {
        attempt = await this.put('new');
      } else if (existing.released) {
        attempt = await this.put('released');
      } else {
        lastSeenOwner = existing.ownerName;
        if (tracked === undefined) {
          tracked = existing;
          if (!sleptOnceForLease) {
            sleptOnceForLease = true;
            millisecondsToWait += existing.leaseDurationMs;
          }
        } else if (tracked.recordVersionNumber === existing.recordVersionNumber) {
          // The Java LockItem.isExpired() of the item as first seen: no heartbeat for longer than its lease.
          if (clock.now() - tracked.lookupTime > tracked.leaseDurationMs) {
            attempt = await this.put('expired', tracked.recordVersionNumber);
          }
        } else {
          tracked = existing;
        }
      }
      if (attempt !== undefined && attempt !== 'lost-race') return attempt;
      const waited = clock.now() - start;
      if (waited > millisecondsToWait) {
        throw new HudiLockUnavailableError(this.description, lastSeenOwner, waited);
      }
      await this.sleep(this.refreshPeriodMs);
    }
  }

  /** The lock item as it is now (read-only: for checks and tests); undefined when there is none. */
  async read(): Promise<HudiDynamoDbLockItem | undefined> {
    let item: Record<string, AttributeValue> | undefined;
    try {
      const response = await this.options.client.send(
        new GetItemCommand({
          TableName: this.options.tableName,
          Key: { [HUDI_DYNAMODB_LOCK_ATTRIBUTES.key]: { S: this.options.partitionKey } },
          ConsistentRead: true,
        }),
      );
      item = response.Item;
    } catch (error) {
      throw this.mapError(error);
    }
    if (item === undefined || Object.keys(item).length === 0) return undefined;
    return this.parse(item);
  }

  /** `createLockItem`: the attributes every lock client writes, or HudiLockStateError. */
  private parse(item: Record<string, AttributeValue>): HudiDynamoDbLockItem {
    const lookupTime = this.options.clock.now();
    const a = HUDI_DYNAMODB_LOCK_ATTRIBUTES;
    const ownerName = item[a.ownerName]?.S;
    const lease = item[a.leaseDuration]?.S;
    const recordVersionNumber = item[a.recordVersionNumber]?.S;
    if (ownerName === undefined || lease === undefined || recordVersionNumber === undefined) {
      throw new HudiLockStateError(
        this.description,
        `the item lacks ownerName, leaseDuration or recordVersionNumber as strings (attributes: ${Object.keys(item).sort().join(', ')})`,
      );
    }
    if (!/^\d+$/.test(lease) || !Number.isSafeInteger(Number(lease))) {
      throw new HudiLockStateError(this.description, `leaseDuration "${lease}" is not a whole number of ms`);
    }
    return {
      ownerName,
      leaseDurationMs: Number(lease),
      recordVersionNumber,
      // The Java client counts a lock as released when the attribute is there at all.
      released: item[a.isReleased] !== undefined,
      lookupTime,
    };
  }

  /**
   * One conditional PutItem of a fresh lock item: over no item, over a released one, or over an expired one whose
   * recordVersionNumber is still `seen`. `lost-race` when the condition failed (another writer was faster).
   */
  private async put(
    over: 'new' | 'released' | 'expired',
    seen?: string,
  ): Promise<HudiLockHandle | 'lost-race'> {
    const a = HUDI_DYNAMODB_LOCK_ATTRIBUTES;
    const ownerName = this.newOwnerName();
    const recordVersionNumber = this.newRecordVersionNumber();
    const condition: Pick<
      PutItemCommandInput,
      'ConditionExpression' | 'ExpressionAttributeNames' | 'ExpressionAttributeValues'
    > =
      over === 'new'
        ? { ConditionExpression: 'attribute_not_exists(#pk)', ExpressionAttributeNames: { '#pk': a.key } }
        : over === 'released'
          ? {
              ConditionExpression: 'attribute_exists(#pk) AND #ir = :ir',
              ExpressionAttributeNames: { '#pk': a.key, '#ir': a.isReleased },
              ExpressionAttributeValues: { ':ir': { S: IS_RELEASED_VALUE } },
            }
          : {
              ConditionExpression: 'attribute_exists(#pk) AND #rvn = :rvn',
              ExpressionAttributeNames: { '#pk': a.key, '#rvn': a.recordVersionNumber },
              ExpressionAttributeValues: { ':rvn': { S: seen ?? '' } },
            };
    // The lease counts from before the request is sent: the holder errs towards expiring sooner.
    const sentAt = this.options.clock.now();
    try {
      await this.options.client.send(
        new PutItemCommand({
          TableName: this.options.tableName,
          Item: {
            [a.key]: { S: this.options.partitionKey },
            [a.ownerName]: { S: ownerName },
            [a.leaseDuration]: { S: String(this.leaseDurationMs) },
            [a.recordVersionNumber]: { S: recordVersionNumber },
          },
          ...condition,
        }),
      );
    } catch (error) {
      if (isRetriedContention(error)) return 'lost-race';
      throw this.mapError(error);
    }
    return new DynamoDbLockHandle(this, ownerName, recordVersionNumber, sentAt);
  }

  /** @internal The heartbeat of a holder: the new record version, or `taken` when the item is no longer its own. */
  async heartbeat(ownerName: string, recordVersionNumber: string): Promise<string | 'taken'> {
    const a = HUDI_DYNAMODB_LOCK_ATTRIBUTES;
    const next = this.newRecordVersionNumber();
    try {
      await this.options.client.send(
        new UpdateItemCommand({
          TableName: this.options.tableName,
          Key: { [a.key]: { S: this.options.partitionKey } },
          UpdateExpression: 'SET #ld = :ld, #rvn = :newRvn',
          ConditionExpression: 'attribute_exists(#pk) AND #rvn = :rvn AND #on = :on',
          ExpressionAttributeNames: {
            '#pk': a.key,
            '#ld': a.leaseDuration,
            '#rvn': a.recordVersionNumber,
            '#on': a.ownerName,
          },
          ExpressionAttributeValues: {
            ':ld': { S: String(this.leaseDurationMs) },
            ':newRvn': { S: next },
            ':rvn': { S: recordVersionNumber },
            ':on': { S: ownerName },
          },
        }),
      );
      return next;
    } catch (error) {
      if (isConditionFailed(error)) return 'taken';
      throw this.mapError(error);
    }
  }

  /** @internal `releaseLock` with deleteLock = true: `taken` when the item is no longer the holder's. */
  async deleteOwn(ownerName: string, recordVersionNumber: string): Promise<'deleted' | 'taken'> {
    const a = HUDI_DYNAMODB_LOCK_ATTRIBUTES;
    try {
      await this.options.client.send(
        new DeleteItemCommand({
          TableName: this.options.tableName,
          Key: { [a.key]: { S: this.options.partitionKey } },
          ConditionExpression: 'attribute_exists(#pk) AND #rvn = :rvn AND #on = :on',
          ExpressionAttributeNames: { '#pk': a.key, '#rvn': a.recordVersionNumber, '#on': a.ownerName },
          ExpressionAttributeValues: { ':rvn': { S: recordVersionNumber }, ':on': { S: ownerName } },
        }),
      );
      return 'deleted';
    } catch (error) {
      if (isConditionFailed(error)) return 'taken';
      throw this.mapError(error);
    }
  }

  /** @internal */
  get timing(): { readonly leaseDurationMs: number; readonly safetyMarginMs: number; readonly clock: Clock } {
    return {
      leaseDurationMs: this.leaseDurationMs,
      safetyMarginMs: this.safetyMarginMs,
      clock: this.options.clock,
    };
  }

  /**
   * Throttling becomes retryable; a missing table is a configuration error that names the table and region, never
   * an invitation to create one here (a second lock table excludes nobody).
   */
  private mapError(error: unknown): unknown {
    const name = (error as { name?: string } | null)?.name;
    if (name !== undefined && THROTTLED.has(name)) {
      return new TransientStoreError(
        `The Hudi lock table ${this.options.tableName} is busy (${name}); retry later.`,
        { cause: error },
      );
    }
    if (name === 'ResourceNotFoundException') {
      const region = this.options.region === undefined ? 'the region asked' : `region ${this.options.region}`;
      return new InvalidInputError(
        `The Hudi lock table ${this.options.tableName} does not exist in ${region}. lake-compactor does not create it: it must be the table the table's Hudi writers lock through (hoodie.write.lock.dynamodb.table in hoodie.write.lock.dynamodb.region, us-east-1 or AWS_REGION when unset), and a table of that name elsewhere excludes nobody. Declare that table and region; nothing was written`,
        [],
        { cause: error },
      );
    }
    return error;
  }
}

/** One holding of the DynamoDB lock: the owner name and record version this holder wrote last. */
class DynamoDbLockHandle implements HudiLockHandle {
  readonly description: string;
  private readonly state: LeaseState;

  constructor(
    private readonly lock: DynamoDbHudiLock,
    readonly ownerId: string,
    private recordVersionNumber: string,
    sentAt: number,
  ) {
    this.description = lock.description;
    const { clock, leaseDurationMs, safetyMarginMs } = lock.timing;
    this.state = new LeaseState(
      lock.description,
      () => clock.now(),
      sentAt + leaseDurationMs - safetyMarginMs,
    );
  }

  /** The record version this holder wrote last (a waiter steals only while it stays unchanged for a full lease). */
  get currentRecordVersionNumber(): string {
    return this.recordVersionNumber;
  }

  guaranteedUntil(): number {
    return this.state.guaranteedUntil();
  }

  isHeld(): boolean {
    return this.state.isHeld();
  }

  assertHeld(during: string): void {
    this.state.assertHeld(during);
  }

  /**
   * `sendHeartbeat`: refused without a request once the lease lapsed (the Java client's `lockItem.isExpired()`
   * check), `taken` when the condition on record version and owner fails.
   */
  async renew(): Promise<void> {
    const lost = this.state.lostError('renewing it');
    if (lost !== undefined) throw lost;
    const { clock, leaseDurationMs, safetyMarginMs } = this.lock.timing;
    const sentAt = clock.now();
    const next = await this.lock.heartbeat(this.ownerId, this.recordVersionNumber);
    if (next === 'taken') throw this.state.markTaken();
    this.recordVersionNumber = next;
    this.state.extend(sentAt + leaseDurationMs - safetyMarginMs);
  }

  /** `releaseLock` (deleteLock = true, Hudi's default): DeleteItem conditioned on record version and owner. */
  async release(): Promise<HudiLockReleaseOutcome> {
    if (this.state.released) return 'released';
    if (this.state.lost === 'taken') {
      this.state.markReleased();
      return 'lost';
    }
    const outcome = await this.lock.deleteOwn(this.ownerId, this.recordVersionNumber);
    this.state.markReleased();
    return outcome === 'deleted' ? 'released' : 'lost';
  }
}

const THROTTLED = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'InternalServerError',
  'ServiceUnavailable',
]);

function isConditionFailed(error: unknown): boolean {
  return (error as { name?: string } | null)?.name === 'ConditionalCheckFailedException';
}

/**
 * What the Java client turns into "not granted this round" and retries until the wait is over: a lost conditional
 * put, and exceeded provisioned throughput.
 */
function isRetriedContention(error: unknown): boolean {
  const name = (error as { name?: string } | null)?.name;
  return name === 'ConditionalCheckFailedException' || name === 'ProvisionedThroughputExceededException';
}
