// withHudiLock: one critical section under a Hudi table lock — acquired with a bounded wait, renewed by a heartbeat
// while the work runs, released afterwards whatever the work did; a heartbeat that proves the lock lost makes the
// work's next assertHeld throw, so the section aborts before writing unprotected.
import { describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../../../functions/adapters/memory-object-store.js';
import { HudiLockLostError } from '../../../../../../functions/core/formats/hudi/lock/errors.js';
import {
  type HeartbeatTimers,
  withHudiLock,
} from '../../../../../../functions/core/formats/hudi/lock/lock.js';
import {
  parseStorageLockData,
  StorageBasedHudiLock,
  storageLockKey,
} from '../../../../../../functions/core/formats/hudi/lock/storage-lock.js';
import { ManualClock } from '../../../../../../functions/ports/clock.js';

const T0 = Date.UTC(2026, 11, 6);

/** Timers fired by the test: `tick()` runs the pending heartbeat and waits for it. */
function manualTimers(): HeartbeatTimers & { tick(): Promise<void>; pending(): number } {
  let queue: (() => void)[] = [];
  return {
    setTimeout(callback) {
      queue.push(callback);
      return callback;
    },
    clearTimeout(handle) {
      queue = queue.filter((c) => c !== handle);
    },
    async tick() {
      const next = queue.shift();
      next?.();
      for (let i = 0; i < 10; i++) await Promise.resolve();
    },
    pending: () => queue.length,
  };
}

function setup(clock = new ManualClock(T0)) {
  const store = new MemoryObjectStore();
  const lock = new StorageBasedHudiLock({
    store,
    tableRoot: 't',
    clock,
    validityMs: 10_000,
    heartbeatIntervalMs: 1_000,
    safetyMarginMs: 1_000,
    newOwnerId: () => 'me',
  });
  const file = async () => parseStorageLockData(await store.get(storageLockKey('t')), 'test');
  return { store, lock, clock, file };
}

describe('withHudiLock', () => {
  it('renews the lease every heartbeat while the work runs and releases it afterwards', async () => {
    // Prepare
    const { lock, clock, file } = setup();
    const timers = manualTimers();

    // Act
    const result = await withHudiLock(
      lock,
      async (handle) => {
        for (let beat = 0; beat < 3; beat++) {
          clock.advance(5_000);
          await timers.tick();
          handle.assertHeld('the next write');
        }
        return handle.guaranteedUntil();
      },
      { timers },
    );

    // Assess: 15 s of work on a 10 s lease, still guaranteed thanks to the heartbeats
    expect(result).toBe(T0 + 15_000 + 10_000 - 1_000);
    expect(await file()).toEqual({ expired: true, validUntil: T0 + 25_000, owner: 'me' });
    expect(timers.pending()).toBe(0);
  });

  it('aborts the work at its next write once a heartbeat finds another holder', async () => {
    // Prepare
    const { store, lock, clock } = setup();
    const timers = manualTimers();
    let wrote = 0;

    // Act
    const outcome = await withHudiLock(
      lock,
      async (handle) => {
        handle.assertHeld('writing the requested plan');
        wrote += 1;
        // Another writer overwrites the lock file (a writer whose clock is far ahead took it over).
        await store.put(storageLockKey('t'), '{"expired":false,"validUntil":1,"owner":"other"}');
        clock.advance(1_000);
        await timers.tick();
        handle.assertHeld('writing the completed instant');
        wrote += 1;
      },
      { timers },
    ).catch((e: unknown) => e);

    // Assess
    expect(outcome).toBeInstanceOf(HudiLockLostError);
    expect(outcome).toMatchObject({ reason: 'taken' });
    expect(wrote).toBe(1);
    // The other writer's lock is untouched by the release.
    expect(new TextDecoder().decode(await store.get(storageLockKey('t')))).toContain('"owner":"other"');
  });

  it('keeps heartbeating through failures that prove nothing, and stops guaranteeing once the lease lapses', async () => {
    // Prepare
    const { store, lock, clock } = setup();
    const timers = manualTimers();
    const failures: unknown[] = [];

    // Act
    const outcome = await withHudiLock(
      lock,
      async (handle) => {
        store.failNext('put', new Error('socket hang up'));
        clock.advance(5_000);
        await timers.tick();
        const afterFailure = handle.isHeld();
        clock.advance(4_000);
        return { afterFailure, atDeadline: handle.isHeld() };
      },
      { timers, onHeartbeatFailure: (e) => failures.push(e) },
    );

    // Assess
    expect(failures).toHaveLength(1);
    expect(outcome).toEqual({ afterFailure: true, atDeadline: false });
  });

  it('releases the lock when the work throws, and rethrows its error', async () => {
    // Prepare
    const { lock, file } = setup();
    const timers = manualTimers();

    // Act
    const outcome = await withHudiLock(
      lock,
      async () => {
        throw new Error('conflict with a concurrent commit');
      },
      { timers },
    ).catch((e: unknown) => e);

    // Assess
    expect(outcome).toMatchObject({ message: 'conflict with a concurrent commit' });
    expect((await file()).expired).toBe(true);
  });
});
