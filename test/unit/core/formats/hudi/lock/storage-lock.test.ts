// Hudi's storage-based lock on the stores that run in-process: the in-memory store (atomic conditional writes) and
// a local folder (conditional writes atomic within one process, which is all these tests need). S3 runs the same
// contract in test/integration/hudi-lock-storage-s3.test.ts.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../../../../../functions/adapters/local-object-store.js';
import { MemoryObjectStore } from '../../../../../../functions/adapters/memory-object-store.js';
import { InvalidInputError } from '../../../../../../functions/core/errors.js';
import { HudiLockUnavailableError } from '../../../../../../functions/core/formats/hudi/lock/errors.js';
import { DEFAULT_HUDI_LOCK_WAIT_MS } from '../../../../../../functions/core/formats/hudi/lock/lock.js';
import {
  isStorageLockLive,
  parseStorageLockData,
  StorageBasedHudiLock,
  storageLockKey,
} from '../../../../../../functions/core/formats/hudi/lock/storage-lock.js';
import { ManualClock } from '../../../../../../functions/ports/clock.js';
import { storageLockContract } from './storage-lock.contract.js';

const memory = new MemoryObjectStore();
storageLockContract('the in-memory store', () => memory);

let dir: string;
let local: LocalObjectStore;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'hudi-lock-'));
  local = new LocalObjectStore(dir);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});
storageLockContract('a local folder', () => local);

describe('storage lock file', () => {
  it('lives at <base>/.hoodie/.locks/table_lock.json, also for a table at the store root', () => {
    // Prepare / Act / Assess
    expect(storageLockKey('lake/t1')).toBe('lake/t1/.hoodie/.locks/table_lock.json');
    expect(storageLockKey('lake/t1/')).toBe('lake/t1/.hoodie/.locks/table_lock.json');
    expect(storageLockKey('')).toBe('.hoodie/.locks/table_lock.json');
  });

  it('counts as live until validUntil + 500 ms, and never once expired', () => {
    // Prepare
    const data = { expired: false, validUntil: 1_000, owner: 'o' };

    // Act / Assess
    expect(isStorageLockLive(data, 1_500)).toBe(true);
    expect(isStorageLockLive(data, 1_501)).toBe(false);
    expect(isStorageLockLive({ ...data, expired: true }, 0)).toBe(false);
  });

  it('refuses JSON without the three typed fields Hudi requires', () => {
    // Prepare
    const bytes = (text: string) => new TextEncoder().encode(text);

    // Act / Assess
    expect(() => parseStorageLockData(bytes('not json'), 'f')).toThrow(/not JSON/);
    expect(() => parseStorageLockData(bytes('{"validUntil":1,"owner":"o"}'), 'f')).toThrow(/"expired"/);
    expect(() => parseStorageLockData(bytes('{"expired":false,"validUntil":"1","owner":"o"}'), 'f')).toThrow(
      /"validUntil"/,
    );
    expect(() => parseStorageLockData(bytes('{"expired":false,"validUntil":1,"ownerId":"o"}'), 'f')).toThrow(
      /"owner"/,
    );
  });

  it("waits Hudi's default 60 s (hoodie.write.lock.wait_time_ms) for a live lock when no wait is given", async () => {
    // Prepare: a holder with Hudi's default 5 min validity
    const store = new MemoryObjectStore();
    const holder = new StorageBasedHudiLock({ store, tableRoot: 't', clock: new ManualClock(0) });
    await holder.acquire();
    const clock = new ManualClock(0);
    const waiter = new StorageBasedHudiLock({
      store,
      tableRoot: 't',
      clock,
      sleep: async (ms) => clock.advance(ms),
    });

    // Act
    const error = await waiter.acquire().catch((e: unknown) => e);

    // Assess
    expect(error).toBeInstanceOf(HudiLockUnavailableError);
    expect((error as HudiLockUnavailableError).waitedMs).toBe(DEFAULT_HUDI_LOCK_WAIT_MS);
  });

  it('refuses the timings Hudi refuses (validity under 10 s or under 10 heartbeats)', () => {
    // Prepare
    const base = { store: new MemoryObjectStore(), tableRoot: 't', clock: new ManualClock(0) };

    // Act / Assess
    expect(
      () => new StorageBasedHudiLock({ ...base, validityMs: 9_999, heartbeatIntervalMs: 1_000 }),
    ).toThrow(InvalidInputError);
    expect(
      () => new StorageBasedHudiLock({ ...base, validityMs: 60_000, heartbeatIntervalMs: 10_000 }),
    ).toThrow(/10 x heartbeatIntervalMs/);
    expect(new StorageBasedHudiLock(base).heartbeatIntervalMs).toBe(30_000);
  });
});
