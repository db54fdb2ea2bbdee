// Hudi 1.1's storage-based lock (RFC-91, `hoodie.write.lock.provider=org.apache.hudi.client.transaction.lock.
// StorageBasedLockProvider`), spoken through the ObjectStore port so it runs wherever conditional writes do (S3, the
// in-memory store; a local folder only within one process, see LocalObjectStore). Read from apache/hudi:
//   hudi-client/hudi-client-common/src/main/java/org/apache/hudi/client/transaction/lock/StorageBasedLockProvider.java
//   (commit 00c846f1): tryLock, renewLock, unlock/tryExpireCurrentLock, CLOCK_DRIFT_BUFFER_MS = 500,
//   DEFAULT_TABLE_LOCK_FILE_NAME = "table_lock.json", the retry sleep DEFAULT_LOCK_ACQUIRE_RETRY_WAIT_TIME_IN_MILLIS
//   (LockConfiguration.java: 1000 ms);
//   .../client/transaction/lock/models/StorageLockData.java and StorageLockFile.java (commit 378b76cc): the JSON is
//   Jackson's of {expired: boolean, validUntil: long epoch ms, owner: String} — the owner field is `owner`, not
//   `ownerId` — all three required, unknown fields ignored;
//   .../client/transaction/lock/StorageLockClient.java (getLockFolderPath: `<base>/` + LOCKS_FOLDER_NAME, which
//   HoodieTableMetaClient defines as `.hoodie/.locks`);
//   .../hudi/config/StorageBasedLockConfig.java: `hoodie.write.lock.storage.validity.timeout.secs` (default 300) and
//   `...heartbeat.poll.secs` (default 30), validity >= 10 s and >= 10 x heartbeat;
//   hudi-aws/src/main/java/org/apache/hudi/aws/transaction/lock/S3StorageLockClient.java (commit 00c846f1): create
//   with `If-None-Match: *` when no file was read, otherwise `If-Match: <etag of the file read>`; 412 means
//   "acquired by others".
//
// The protocol, as those classes run it:
//   acquire  GET the file. Live (expired=false and now <= validUntil + 500 ms) → held by another, retry after 1 s.
//            Otherwise PUT {expired:false, validUntil: now + validity, owner} with If-None-Match:* (no file) or
//            If-Match: <etag read> (an expired or dangling file): the one conditional PUT that lands wins.
//   renew    every heartbeat, PUT {expired:false, validUntil: now + validity, owner} If-Match: <own etag>; 412 =
//            another holder took it.
//   release  PUT {expired:true, validUntil: unchanged, owner} If-Match: <own etag>; 412 = already taken.
//
// Where this differs, on purpose: the file is read with HEAD (the ETag) and then GET, in that order, because the port
// returns no ETag with a GET — a file replaced between the two makes the conditional PUT fail, never succeed on a
// stale decision. A renewal after the guarantee lapsed is refused instead of "reviving" the lock as Hudi's
// renewLock does: the holder has already been told it may not write, and a lapsed commit aborts.
// Why a holder's guarantee ends at validUntil − margin by its own clock: a waiter takes the lock once its clock
// passes validUntil + 500 ms, so with clocks up to 500 ms apart no waiter takes it before validUntil by ours; the
// margin is for a write already in flight when the guarantee ends.
import { randomUUID } from 'node:crypto';
import type { Clock } from '../../../../ports/clock.js';
import type { ObjectStore } from '../../../../ports/object-store.js';
import { InvalidInputError, ObjectNotFoundError, PreconditionFailedError } from '../../../errors.js';
import { HudiLockStateError, HudiLockUnavailableError } from './errors.js';
import {
  DEFAULT_HUDI_LOCK_WAIT_MS,
  type HudiLockAcquireOptions,
  type HudiLockHandle,
  type HudiLockReleaseOutcome,
  type HudiTableLock,
  LeaseState,
} from './lock.js';

/** The lock file under the table's base path (`LOCKS_FOLDER_NAME` + `DEFAULT_TABLE_LOCK_FILE_NAME`). */
export const HUDI_STORAGE_LOCK_FILE = '.hoodie/.locks/table_lock.json';

/** `CLOCK_DRIFT_BUFFER_MS`: a lock counts as dangling only once the reader's clock is this far past `validUntil`. */
export const HUDI_STORAGE_LOCK_CLOCK_DRIFT_MS = 500;

/** Hudi's defaults: validity 5 min, heartbeat 30 s, 1 s between acquisition attempts. */
export const HUDI_STORAGE_LOCK_DEFAULTS = {
  validityMs: 300_000,
  heartbeatIntervalMs: 30_000,
  retryWaitMs: 1_000,
} as const;

/** The content of the lock file (Hudi's `StorageLockData`). */
export interface StorageLockData {
  /** True once its holder released it. */
  readonly expired: boolean;
  /** Epoch ms (the holder's clock) until which the holder's lease runs. */
  readonly validUntil: number;
  /** The holder's id (a UUID per Hudi lock provider instance). */
  readonly owner: string;
}

/** The key of the table's lock file, for a table at a key prefix of the store ('' = the store root). */
export function storageLockKey(tableRoot: string): string {
  const root = tableRoot.replace(/\/+$/, '');
  return root === '' ? HUDI_STORAGE_LOCK_FILE : `${root}/${HUDI_STORAGE_LOCK_FILE}`;
}

/**
 * The bytes Hudi writes: Jackson serialises the creator properties first, in their order (expired, validUntil,
 * owner). Readers do not depend on the order; it is kept so a file written here looks like one written by Hudi.
 */
export function encodeStorageLockData(data: StorageLockData): string {
  return JSON.stringify({ expired: data.expired, validUntil: data.validUntil, owner: data.owner });
}

/**
 * Reads a lock file as Hudi's `StorageLockFile.createFromStream` does: `expired`, `validUntil` and `owner` required
 * and typed (Jackson refuses null for the primitives), unknown fields ignored (room for later versions).
 * @throws HudiLockStateError otherwise.
 */
export function parseStorageLockData(bytes: Uint8Array, where: string): StorageLockData {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch (error) {
    throw new HudiLockStateError(where, `it is not JSON (${(error as Error).message})`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new HudiLockStateError(where, 'it is not a JSON object');
  }
  const { expired, validUntil, owner } = value as Record<string, unknown>;
  if (typeof expired !== 'boolean') throw new HudiLockStateError(where, '"expired" is not a boolean');
  if (typeof validUntil !== 'number' || !Number.isSafeInteger(validUntil)) {
    throw new HudiLockStateError(where, '"validUntil" is not a whole number of epoch milliseconds');
  }
  if (typeof owner !== 'string') throw new HudiLockStateError(where, '"owner" is not a string');
  return { expired, validUntil, owner };
}

/**
 * Whether a lock read at `now` still excludes others (`isLockStillValid`): not released, and `now` not certainly past
 * `validUntil` — certainly meaning by more than the clock-drift buffer.
 */
export function isStorageLockLive(data: StorageLockData, now: number): boolean {
  return !data.expired && now <= data.validUntil + HUDI_STORAGE_LOCK_CLOCK_DRIFT_MS;
}

export interface StorageBasedHudiLockOptions {
  readonly store: ObjectStore;
  /** The table's base path as a key prefix of `store` ('' = the store root). */
  readonly tableRoot: string;
  readonly clock: Clock;
  /** Waits between acquisition attempts. @default a real timer */
  readonly sleep?: (ms: number) => Promise<void>;
  /** A fresh owner id per acquisition. @default a random UUID, as Hudi's provider */
  readonly newOwnerId?: () => string;
  /** `hoodie.write.lock.storage.validity.timeout.secs`, in ms. @default 300000 */
  readonly validityMs?: number;
  /** `hoodie.write.lock.storage.heartbeat.poll.secs`, in ms. @default 30000 */
  readonly heartbeatIntervalMs?: number;
  /** Between acquisition attempts, in ms. @default 1000 (Hudi's) */
  readonly retryWaitMs?: number;
  /**
   * How long before `validUntil` (by this process's clock) the holder stops counting on the lock: the longest a
   * single write may take to land. @default a tenth of the validity (30 s by default)
   */
  readonly safetyMarginMs?: number;
}

/** The result of one acquisition attempt. */
type Attempt =
  | { readonly kind: 'acquired'; readonly handle: HudiLockHandle }
  | { readonly kind: 'held'; readonly owner: string | undefined };

/**
 * The storage-based lock of one Hudi table. Safe beside Hudi >= 1.1 writers configured with
 * `StorageBasedLockProvider` on the same base path (they read and write the same file the same way), and beside
 * other lake-compactor runs.
 */
export class StorageBasedHudiLock implements HudiTableLock {
  readonly description: string;
  readonly heartbeatIntervalMs: number;
  private readonly key: string;
  private readonly validityMs: number;
  private readonly retryWaitMs: number;
  private readonly safetyMarginMs: number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly newOwnerId: () => string;

  constructor(private readonly options: StorageBasedHudiLockOptions) {
    this.key = storageLockKey(options.tableRoot);
    this.description = `${options.store.description.replace(/\/+$/, '')}/${this.key}`;
    this.validityMs = options.validityMs ?? HUDI_STORAGE_LOCK_DEFAULTS.validityMs;
    this.heartbeatIntervalMs = options.heartbeatIntervalMs ?? HUDI_STORAGE_LOCK_DEFAULTS.heartbeatIntervalMs;
    this.retryWaitMs = options.retryWaitMs ?? HUDI_STORAGE_LOCK_DEFAULTS.retryWaitMs;
    this.safetyMarginMs = options.safetyMarginMs ?? Math.floor(this.validityMs / 10);
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.newOwnerId = options.newOwnerId ?? randomUUID;
    const problems: string[] = [];
    // StorageBasedLockConfig.checkRequiredProps, in ms.
    if (this.validityMs < 10_000) problems.push('validityMs must be at least 10000 (Hudi: 10 s)');
    if (this.heartbeatIntervalMs < 1_000)
      problems.push('heartbeatIntervalMs must be at least 1000 (Hudi: 1 s)');
    if (this.validityMs < this.heartbeatIntervalMs * 10) {
      problems.push('validityMs must be at least 10 x heartbeatIntervalMs (Hudi requires it)');
    }
    if (this.safetyMarginMs < 0 || this.safetyMarginMs >= this.validityMs - this.heartbeatIntervalMs) {
      problems.push('safetyMarginMs must be between 0 and validityMs - heartbeatIntervalMs');
    }
    if (problems.length > 0) {
      throw new InvalidInputError(
        `The storage-based Hudi lock ${this.description} is misconfigured`,
        problems,
      );
    }
  }

  /**
   * `tryLock(waitMs)`: attempts until one wins or the wait is over, 1 s apart. Always at least one attempt (Hudi's
   * loop makes none when the wait is 0). @default waitMs = {@link DEFAULT_HUDI_LOCK_WAIT_MS}, as Hudi's LockManager. A dangling lock of a crashed holder is taken on the first attempt after
   * its `validUntil` + 500 ms, so the longest wait that can matter is the holders' validity (5 min by default).
   */
  async acquire(options: HudiLockAcquireOptions = {}): Promise<HudiLockHandle> {
    const waitMs = options.waitMs ?? DEFAULT_HUDI_LOCK_WAIT_MS;
    const start = this.options.clock.now();
    for (;;) {
      const attempt = await this.tryOnce();
      if (attempt.kind === 'acquired') return attempt.handle;
      const waited = this.options.clock.now() - start;
      if (waited + this.retryWaitMs > waitMs) {
        throw new HudiLockUnavailableError(this.description, attempt.owner, waited);
      }
      await this.sleep(this.retryWaitMs);
    }
  }

  /** The lock file as it is now (read-only: for checks and tests). */
  async read(): Promise<{ readonly data: StorageLockData; readonly etag: string } | undefined> {
    const head = await this.options.store.head(this.key);
    if (head === undefined) return undefined;
    try {
      const bytes = await this.options.store.get(this.key);
      return { data: parseStorageLockData(bytes, this.description), etag: head.etag };
    } catch (error) {
      if (error instanceof ObjectNotFoundError) return undefined;
      throw error;
    }
  }

  private async tryOnce(): Promise<Attempt> {
    const store = this.options.store;
    // HEAD before GET: the ETag the PUT is conditioned on is never newer than the content decided on.
    const head = await store.head(this.key);
    if (head !== undefined) {
      let bytes: Uint8Array;
      try {
        bytes = await store.get(this.key);
      } catch (error) {
        if (error instanceof ObjectNotFoundError) return { kind: 'held', owner: undefined };
        throw error;
      }
      const current = parseStorageLockData(bytes, this.description);
      if (isStorageLockLive(current, this.options.clock.now())) return { kind: 'held', owner: current.owner };
    }
    const owner = this.newOwnerId();
    const validUntil = this.options.clock.now() + this.validityMs;
    const data: StorageLockData = { expired: false, validUntil, owner };
    try {
      const { etag } = await store.put(
        this.key,
        encodeStorageLockData(data),
        head === undefined
          ? { ifNoneMatch: '*', contentType: 'application/json' }
          : { ifMatch: head.etag, contentType: 'application/json' },
      );
      return { kind: 'acquired', handle: new StorageLockHandle(this, owner, validUntil, etag) };
    } catch (error) {
      if (error instanceof PreconditionFailedError || error instanceof ObjectNotFoundError) {
        return { kind: 'held', owner: undefined };
      }
      throw error;
    }
  }

  /** @internal The conditional PUT of a holder: the new ETag, or `taken` when the file is no longer its own. */
  async writeOwn(data: StorageLockData, etag: string): Promise<{ etag: string } | 'taken'> {
    try {
      return await this.options.store.put(this.key, encodeStorageLockData(data), {
        ifMatch: etag,
        contentType: 'application/json',
      });
    } catch (error) {
      if (error instanceof PreconditionFailedError || error instanceof ObjectNotFoundError) return 'taken';
      throw error;
    }
  }

  /** @internal */
  get timing(): { readonly validityMs: number; readonly safetyMarginMs: number; readonly clock: Clock } {
    return { validityMs: this.validityMs, safetyMarginMs: this.safetyMarginMs, clock: this.options.clock };
  }
}

/** One holding of the storage-based lock: the ETag of the file this holder wrote last. */
class StorageLockHandle implements HudiLockHandle {
  readonly description: string;
  private readonly state: LeaseState;

  constructor(
    private readonly lock: StorageBasedHudiLock,
    readonly ownerId: string,
    private validUntil: number,
    private etag: string,
  ) {
    this.description = lock.description;
    const { clock, safetyMarginMs } = lock.timing;
    this.state = new LeaseState(lock.description, () => clock.now(), validUntil - safetyMarginMs);
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

  async renew(): Promise<void> {
    const lost = this.state.lostError('renewing it');
    if (lost !== undefined) throw lost;
    const { clock, validityMs, safetyMarginMs } = this.lock.timing;
    const validUntil = clock.now() + validityMs;
    const written = await this.lock.writeOwn({ expired: false, validUntil, owner: this.ownerId }, this.etag);
    if (written === 'taken') throw this.state.markTaken();
    this.etag = written.etag;
    this.validUntil = validUntil;
    this.state.extend(validUntil - safetyMarginMs);
  }

  /**
   * `tryExpireCurrentLock`: the file rewritten with expired=true and the same validUntil, If-Match the own ETag. A
   * handle whose lease merely lapsed still tries (no one may have taken it, and then waiters need not wait for the
   * validity to run out); one that saw another holder writes nothing.
   */
  async release(): Promise<HudiLockReleaseOutcome> {
    if (this.state.released) return 'released';
    if (this.state.lost === 'taken') {
      this.state.markReleased();
      return 'lost';
    }
    const written = await this.lock.writeOwn(
      { expired: true, validUntil: this.validUntil, owner: this.ownerId },
      this.etag,
    );
    this.state.markReleased();
    return written === 'taken' ? 'lost' : 'released';
  }
}
