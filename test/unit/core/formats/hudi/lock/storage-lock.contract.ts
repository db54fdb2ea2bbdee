// What Hudi's storage-based lock must do on any store with conditional writes: run by the in-memory and local-folder
// stores (unit) and by S3 on the local S3 server (integration). Each holder has its own clock, as two writers on two
// machines do, so a test can put them up to a chosen drift apart.
import { describe, expect, it } from 'vitest';
import {
  HudiLockLostError,
  HudiLockUnavailableError,
} from '../../../../../../functions/core/formats/hudi/lock/errors.js';
import {
  encodeStorageLockData,
  HUDI_STORAGE_LOCK_CLOCK_DRIFT_MS,
  parseStorageLockData,
  StorageBasedHudiLock,
  storageLockKey,
} from '../../../../../../functions/core/formats/hudi/lock/storage-lock.js';
import { ManualClock } from '../../../../../../functions/ports/clock.js';
import type { ObjectStore } from '../../../../../../functions/ports/object-store.js';

const T0 = Date.UTC(2026, 11, 6, 9, 0, 0);
const VALIDITY = 10_000;
const HEARTBEAT = 1_000;
const MARGIN = 1_000;

/** A fresh table root per test, so tests never share a lock file. */
let tableCount = 0;
function freshTable(): string {
  tableCount += 1;
  return `warehouse/table_${tableCount}`;
}

interface Writer {
  readonly lock: StorageBasedHudiLock;
  readonly clock: ManualClock;
}

function writer(store: ObjectStore, tableRoot: string, owner: string, clock = new ManualClock(T0)): Writer {
  let n = 0;
  const lock = new StorageBasedHudiLock({
    store,
    tableRoot,
    clock,
    validityMs: VALIDITY,
    heartbeatIntervalMs: HEARTBEAT,
    safetyMarginMs: MARGIN,
    newOwnerId: () => `${owner}-${++n}`,
    // Waiting moves the writer's own clock, so a bounded wait takes no real time.
    sleep: async (ms) => clock.advance(ms),
  });
  return { lock, clock };
}

async function lockFile(store: ObjectStore, tableRoot: string) {
  return parseStorageLockData(await store.get(storageLockKey(tableRoot)), 'test');
}

export function storageLockContract(name: string, store: () => ObjectStore): void {
  describe(`Hudi storage-based lock on ${name}`, () => {
    it('lets exactly one of two contending writers take a free lock', async () => {
      // Prepare
      const table = freshTable();
      const a = writer(store(), table, 'a');
      const b = writer(store(), table, 'b');

      // Act
      const results = await Promise.allSettled([
        a.lock.acquire({ waitMs: 0 }),
        b.lock.acquire({ waitMs: 0 }),
      ]);

      // Assess
      const won = results.filter((r) => r.status === 'fulfilled');
      const lost = results.filter((r) => r.status === 'rejected');
      expect(won).toHaveLength(1);
      expect(lost).toHaveLength(1);
      expect((lost[0] as PromiseRejectedResult).reason).toBeInstanceOf(HudiLockUnavailableError);
      const holder = (won[0] as PromiseFulfilledResult<{ ownerId: string }>).value.ownerId;
      expect((await lockFile(store(), table)).owner).toBe(holder);
    });

    it('writes the lock file Hudi writes, under .hoodie/.locks/, valid for the validity from acquisition', async () => {
      // Prepare
      const table = freshTable();
      const a = writer(store(), table, 'a');

      // Act
      const handle = await a.lock.acquire();

      // Assess
      const bytes = new TextDecoder().decode(await store().get(`${table}/.hoodie/.locks/table_lock.json`));
      expect(bytes).toBe(`{"expired":false,"validUntil":${T0 + VALIDITY},"owner":"${handle.ownerId}"}`);
      expect(handle.guaranteedUntil()).toBe(T0 + VALIDITY - MARGIN);
      expect(handle.isHeld()).toBe(true);
    });

    it('makes a waiter wait for a live lock and take it only once validUntil + 500 ms has passed', async () => {
      // Prepare: a holds and then stops renewing (a crashed writer)
      const table = freshTable();
      const a = writer(store(), table, 'a');
      await a.lock.acquire();
      const b = writer(
        store(),
        table,
        'b',
        new ManualClock(T0 + VALIDITY + HUDI_STORAGE_LOCK_CLOCK_DRIFT_MS),
      );

      // Act: at validUntil + 500 the lock is still a's; 1 ms later it is dangling
      const atDrift = await b.lock.acquire({ waitMs: 0 }).catch((error: unknown) => error);
      b.clock.advance(1);
      const after = await b.lock.acquire();

      // Assess
      expect(atDrift).toBeInstanceOf(HudiLockUnavailableError);
      expect((atDrift as HudiLockUnavailableError).holder).toBe('a-1');
      expect((await lockFile(store(), table)).owner).toBe(after.ownerId);
      expect(after.ownerId).toBe('b-1');
    });

    it('waits within the bounded wait and takes the lock as soon as the holder releases it', async () => {
      // Prepare
      const table = freshTable();
      const a = writer(store(), table, 'a');
      const held = await a.lock.acquire();
      const b = writer(store(), table, 'b');

      // Act: b waits (each wait moves b's clock 1 s); a releases during b's second wait
      let waits = 0;
      const waiting = new StorageBasedHudiLock({
        store: store(),
        tableRoot: table,
        clock: b.clock,
        validityMs: VALIDITY,
        heartbeatIntervalMs: HEARTBEAT,
        newOwnerId: () => 'b-waiting',
        sleep: async (ms) => {
          b.clock.advance(ms);
          waits += 1;
          if (waits === 2) await held.release();
        },
      });
      const taken = await waiting.acquire({ waitMs: 5_000 });

      // Assess
      expect(taken.ownerId).toBe('b-waiting');
      expect(waits).toBe(2);
      expect(b.clock.now()).toBe(T0 + 2_000);
    });

    it('refuses after the bounded wait while the holder keeps renewing', async () => {
      // Prepare
      const table = freshTable();
      const a = writer(store(), table, 'a');
      await a.lock.acquire();
      const b = writer(store(), table, 'b');

      // Act
      const error = await b.lock.acquire({ waitMs: 3_000 }).catch((e: unknown) => e);

      // Assess: attempts at 0, 1, 2 and 3 s, then the wait is over
      expect(error).toBeInstanceOf(HudiLockUnavailableError);
      expect((error as HudiLockUnavailableError).waitedMs).toBe(3_000);
      expect((await lockFile(store(), table)).owner).toBe('a-1');
    });

    it('renews the lease with If-Match on its own ETag, extending validUntil', async () => {
      // Prepare
      const table = freshTable();
      const a = writer(store(), table, 'a');
      const handle = await a.lock.acquire();

      // Act
      a.clock.advance(HEARTBEAT);
      await handle.renew();
      a.clock.advance(HEARTBEAT);
      await handle.renew();

      // Assess
      expect((await lockFile(store(), table)).validUntil).toBe(T0 + 2 * HEARTBEAT + VALIDITY);
      expect(handle.guaranteedUntil()).toBe(T0 + 2 * HEARTBEAT + VALIDITY - MARGIN);
    });

    it('tells a holder whose renewal found another holder that it lost the lock, and writes nothing more', async () => {
      // Prepare: a's clock runs 3.5 s behind b's, far more than Hudi's 500 ms drift buffer, so b takes the lock
      // while a still believes it is guaranteed
      const table = freshTable();
      const a = writer(store(), table, 'a');
      const aHandle = await a.lock.acquire();
      a.clock.advance(VALIDITY - MARGIN - 2_000);
      const b = writer(store(), table, 'b', new ManualClock(a.clock.now() + 3_501));
      const bHandle = await b.lock.acquire();
      expect(aHandle.isHeld()).toBe(true);

      // Act
      const renewal = await aHandle.renew().catch((e: unknown) => e);
      const release = await aHandle.release();

      // Assess
      expect(renewal).toBeInstanceOf(HudiLockLostError);
      expect((renewal as HudiLockLostError).reason).toBe('taken');
      expect(aHandle.isHeld()).toBe(false);
      expect(() => aHandle.assertHeld('writing the completed instant')).toThrow(HudiLockLostError);
      expect(release).toBe('lost');
      const file = await lockFile(store(), table);
      expect(file).toEqual({ expired: false, validUntil: b.clock.now() + VALIDITY, owner: bHandle.ownerId });
    });

    it('stops guaranteeing the lock at validUntil minus the margin when no renewal succeeded', async () => {
      // Prepare
      const table = freshTable();
      const a = writer(store(), table, 'a');
      const handle = await a.lock.acquire();

      // Act
      a.clock.advance(VALIDITY - MARGIN - 1);
      const heldJustBefore = handle.isHeld();
      a.clock.advance(1);

      // Assess
      expect(heldJustBefore).toBe(true);
      expect(handle.isHeld()).toBe(false);
      expect(handle.guaranteedUntil()).toBe(0);
      expect(() => handle.assertHeld('writing the plan')).toThrow(/its lease ran out/);
      await expect(handle.renew()).rejects.toMatchObject({ reason: 'expired' });
      // Nobody took it: releasing still marks it expired, so waiters need not wait for the validity to pass.
      expect(await handle.release()).toBe('released');
      expect((await lockFile(store(), table)).expired).toBe(true);
    });

    it('releases by writing expired=true with the same validUntil, and the next writer takes it at once', async () => {
      // Prepare
      const table = freshTable();
      const a = writer(store(), table, 'a');
      const handle = await a.lock.acquire();
      const b = writer(store(), table, 'b');

      // Act
      const outcome = await handle.release();
      const again = await handle.release();
      const next = await b.lock.acquire();

      // Assess
      expect(outcome).toBe('released');
      expect(again).toBe('released');
      expect(handle.isHeld()).toBe(false);
      expect(() => handle.assertHeld('writing')).toThrow(/already released/);
      expect(next.ownerId).toBe('b-1');
      expect(await lockFile(store(), table)).toEqual({
        expired: false,
        validUntil: T0 + VALIDITY,
        owner: 'b-1',
      });
    });

    it('respects a lock file Hudi wrote (extra fields ignored) and takes it over once released', async () => {
      // Prepare: a Hudi writer's live lock, as Jackson writes it (plus a field a later Hudi might add)
      const table = freshTable();
      const key = storageLockKey(table);
      const hudi = {
        expired: false,
        validUntil: T0 + 60_000,
        owner: '5f0c2a4e-2d3b-4f4e-9a51-0c1d2e3f4a5b',
      };
      await store().put(key, JSON.stringify({ ...hudi, futureField: 1 }), { ifNoneMatch: '*' });
      const b = writer(store(), table, 'b');

      // Act
      const whileLive = await b.lock.acquire({ waitMs: 0 }).catch((e: unknown) => e);
      await store().put(key, encodeStorageLockData({ ...hudi, expired: true }));
      const afterRelease = await b.lock.acquire();

      // Assess
      expect(whileLive).toBeInstanceOf(HudiLockUnavailableError);
      expect((whileLive as HudiLockUnavailableError).holder).toBe(hudi.owner);
      expect(afterRelease.ownerId).toBe('b-1');
    });

    it('refuses a lock file Hudi could not have written, and leaves it as it is', async () => {
      // Prepare
      const table = freshTable();
      const key = storageLockKey(table);
      await store().put(key, '{"expired":false,"validUntil":null,"owner":"x"}', { ifNoneMatch: '*' });
      const b = writer(store(), table, 'b');

      // Act
      const error = await b.lock.acquire({ waitMs: 0 }).catch((e: unknown) => e);

      // Assess
      expect(error).toMatchObject({ name: 'HudiLockStateError' });
      expect(new TextDecoder().decode(await store().get(key))).toBe(
        '{"expired":false,"validUntil":null,"owner":"x"}',
      );
    });
  });
}
