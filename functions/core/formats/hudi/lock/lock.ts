// The lock port of Hudi tables: the table-wide mutual exclusion Hudi's writers take around the two critical sections
// of every commit when they run with optimistic concurrency control (`hoodie.write.lock.provider`). lake-compactor
// must take the very lock the table's writers take, or the two exclude nobody:
//
//   CS1  mint the instant time and write `<T>.<action>.requested` (+ inflight), so no concurrent writer mints an
//        earlier time or plans the same file groups without seeing the plan;
//   CS2  re-read the timeline, check for conflicts with instants that completed since CS1, write the completed file.
//
// Between the two the lock is released (the execution in between takes minutes; Hudi's own writers do the same —
// tech-specs-1point0.md, "Writer Expectations"). Inside each section the holder writes only while the lock is
// guaranteed: every lock here is a lease (DynamoDB lock client: `leaseDuration`; storage-based lock: `validUntil`),
// and a holder that stalls past it can be taken over by a waiter while it still believes it holds the lock. So the
// port tells the holder how long its lease is guaranteed *by its own clock*, with margin for the request in flight,
// and the holder checks it before each write (`assertHeld`) instead of finding out afterwards.
//
// Implementations: storage-lock.ts (Hudi 1.1's storage-based lock, over the ObjectStore port) and
// functions/adapters/formats/hudi/dynamodb-lock.ts (Hudi's DynamoDBBasedLockProvider protocol).
import { HudiLockLostError } from './errors.js';

/** What a release found: the lock was given up, or another holder had it already (nothing was written then). */
export type HudiLockReleaseOutcome = 'released' | 'lost';

/** One holding of the lock, from a successful `acquire` to `release`. */
export interface HudiLockHandle {
  /** The owner id written into the lock (storage lock: `owner`; DynamoDB: `ownerName`). */
  readonly ownerId: string;
  /** Where the lock lives, for messages. */
  readonly description: string;
  /**
   * Epoch ms (this process's clock) until which no other writer can take the lock, already less the safety margin
   * for a request in flight: a write started before it lands while the lock is still held. 0 once lost or released.
   */
  guaranteedUntil(): number;
  /** Whether the lock is still guaranteed now (no I/O): false once lost, released, or past `guaranteedUntil`. */
  isHeld(): boolean;
  /**
   * Throws {@link HudiLockLostError} unless the lock is still guaranteed: call it right before each write of a
   * critical section, so a commit whose lease lapsed aborts instead of writing unprotected.
   */
  assertHeld(during: string): void;
  /**
   * Extends the lease (the heartbeat); also the way to confirm, with one request, that the lock is still this
   * holder's right before the write that matters most (the completed instant). {@link HudiLockLostError} when another holder is proven or the lease already
   * lapsed (the handle is lost from then on); any other error (throttling, network) leaves the handle as it was, to
   * be retried by the next heartbeat before the lease runs out.
   */
  renew(): Promise<void>;
  /**
   * Gives the lock up as Hudi's own client does, conditioned on still holding it: `lost` when another holder had it
   * already (nothing was changed). Idempotent. Errors other than a lost condition propagate (the lease then
   * expires by itself).
   */
  release(): Promise<HudiLockReleaseOutcome>;
}

/**
 * Hudi's `hoodie.write.lock.wait_time_ms` default (LockConfiguration: 60 s): how long Hudi's LockManager lets
 * `tryLock` wait, and what the locks here wait by default, so lake-compactor queues behind a writer as its peers do.
 * A Lambda caller with less time left passes a shorter wait.
 */
export const DEFAULT_HUDI_LOCK_WAIT_MS = 60_000;

export interface HudiLockAcquireOptions {
  /**
   * How long to wait for a lock another writer holds, in ms, before {@link HudiLockUnavailableError}. Each lock
   * documents how a dangling lock (a crashed holder) counts towards it. 0 = one attempt.
   */
  readonly waitMs?: number;
}

/** The lock of one Hudi table, as its writers take it. */
export interface HudiTableLock {
  /** Where the lock lives (`<store>/<table>/.hoodie/.locks/table_lock.json`, `dynamodb:<table>/<key>`). */
  readonly description: string;
  /** How often a holder should renew, in ms (Hudi's heartbeat period for this lock). */
  readonly heartbeatIntervalMs: number;
  /**
   * Takes the lock, waiting at most the bounded wait for another holder.
   * @throws HudiLockUnavailableError when it stayed held by another writer.
   */
  acquire(options?: HudiLockAcquireOptions): Promise<HudiLockHandle>;
}

/** How {@link withHudiLock} schedules its heartbeat; tests substitute their own. */
export interface HeartbeatTimers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const realTimers: HeartbeatTimers = {
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

export interface WithHudiLockOptions extends HudiLockAcquireOptions {
  /** Heartbeat period, in ms. @default the lock's `heartbeatIntervalMs` */
  readonly heartbeatIntervalMs?: number;
  readonly timers?: HeartbeatTimers;
  /**
   * Told when releasing failed after the work finished (the lease then expires by itself; waiters take it over
   * once it has). The work's result stands: what it wrote was written under the lock.
   */
  readonly onReleaseFailure?: (error: unknown) => void;
  /** Told when a heartbeat failed without proving the lock lost (it is retried at the next period). */
  readonly onHeartbeatFailure?: (error: unknown) => void;
}

/**
 * Runs one critical section under the table's lock: acquires it (bounded wait), renews it every heartbeat period
 * while `work` runs, and releases it afterwards whatever `work` did. `work` receives the handle and must call
 * `assertHeld` before each write; a heartbeat that proves the lock lost makes every later `assertHeld` throw, so the
 * section aborts at its next write. Heartbeat errors that prove nothing (throttling, network) are retried at the
 * next period; if none succeeds before the lease runs out, `isHeld` turns false by the clock alone.
 */
export async function withHudiLock<T>(
  lock: HudiTableLock,
  work: (handle: HudiLockHandle) => Promise<T>,
  options: WithHudiLockOptions = {},
): Promise<T> {
  const handle = await lock.acquire(options.waitMs === undefined ? {} : { waitMs: options.waitMs });
  const timers = options.timers ?? realTimers;
  const period = options.heartbeatIntervalMs ?? lock.heartbeatIntervalMs;
  let stopped = false;
  let pending: unknown;
  let inFlight: Promise<void> = Promise.resolve();

  const schedule = () => {
    if (stopped) return;
    pending = timers.setTimeout(() => {
      inFlight = beat().finally(schedule);
    }, period);
  };
  const beat = async () => {
    if (stopped) return;
    try {
      await handle.renew();
    } catch (error) {
      if (error instanceof HudiLockLostError) {
        stopped = true;
        return;
      }
      options.onHeartbeatFailure?.(error);
    }
  };

  schedule();
  let result: T;
  try {
    result = await work(handle);
  } catch (error) {
    stopped = true;
    timers.clearTimeout(pending);
    await inFlight;
    await handle.release().catch(() => undefined);
    throw error;
  }
  stopped = true;
  timers.clearTimeout(pending);
  await inFlight;
  try {
    await handle.release();
  } catch (error) {
    options.onReleaseFailure?.(error);
  }
  return result;
}

/** The state every lease-based handle keeps: when its guarantee ends, and whether it was lost or released. */
export class LeaseState {
  private guaranteeEndsAt: number;
  private lostReason: 'taken' | 'expired' | undefined;
  private releasedFlag = false;

  constructor(
    private readonly description: string,
    private readonly now: () => number,
    guaranteedUntil: number,
  ) {
    this.guaranteeEndsAt = guaranteedUntil;
  }

  get released(): boolean {
    return this.releasedFlag;
  }

  /** Why the handle is lost (`taken`: proven; `expired`: by the clock), undefined while it may be held. */
  get lost(): 'taken' | 'expired' | undefined {
    if (this.lostReason === undefined && !this.releasedFlag && this.now() >= this.guaranteeEndsAt) {
      this.lostReason = 'expired';
    }
    return this.lostReason;
  }

  guaranteedUntil(): number {
    return this.lost === undefined && !this.releasedFlag ? this.guaranteeEndsAt : 0;
  }

  isHeld(): boolean {
    return this.guaranteedUntil() > this.now();
  }

  /** The error for a holder that may no longer write, or undefined while it may. */
  lostError(during?: string): HudiLockLostError | undefined {
    if (this.releasedFlag) return new HudiLockLostError(this.description, 'released', during);
    const reason = this.lost;
    return reason === undefined ? undefined : new HudiLockLostError(this.description, reason, during);
  }

  assertHeld(during: string): void {
    const error = this.lostError(during);
    if (error !== undefined) throw error;
  }

  extend(guaranteedUntil: number): void {
    this.guaranteeEndsAt = guaranteedUntil;
  }

  markTaken(): HudiLockLostError {
    this.lostReason = 'taken';
    return new HudiLockLostError(this.description, 'taken');
  }

  markReleased(): void {
    this.releasedFlag = true;
  }
}
