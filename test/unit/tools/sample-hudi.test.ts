// The sample Hudi writer beside a table service (the demo's mode): with a clock, an insert commit's instant is
// minted after every instant on the timeline — including one another writer completed that the appender never
// saw — and its v8 completion time after its instant; with the table's storage lock, the commit is made under it
// and the lock is released afterwards. Without either, instants follow the appender's own last one (the tests').
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../../functions/adapters/local-object-store.js';
import { StorageBasedHudiLock } from '../../../functions/core/formats/hudi/lock/index.js';
import { ManualClock } from '../../../functions/ports/clock.js';
import { appendHudiInsert, createHudiTable } from '../../../functions/tools/sample-hudi.js';

let dir: string;
let store: LocalObjectStore;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'lc-sample-hudi-'));
  store = new LocalObjectStore(dir);
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('appendHudiInsert', () => {
  it('without a clock, follows its own last instant one millisecond at a time', async () => {
    // Prepare
    const table = await createHudiTable(store, 'events', 6, '20240301000000000');

    // Act
    const first = await appendHudiInsert(table, '1', 3);
    const second = await appendHudiInsert(table, '1', 3);

    // Assess
    expect([first.instant, second.instant]).toEqual(['20240301000000001', '20240301000000002']);
    expect(table.written).toBe(6);
  });

  it("with a clock behind the timeline, mints after another writer's completed instant, and completes after it", async () => {
    // Prepare: a replacecommit completed at 2026-01-01 00:00:05.000 that the appender did not write
    const table = await createHudiTable(store, 'events', 8, '20240301000000000');
    await store.put('events/.hoodie/timeline/20260101000000000_20260101000005000.replacecommit', 'x');
    const clock = () => Date.UTC(2025, 0, 1);

    // Act
    const { instant } = await appendHudiInsert(table, '1', 3, { clock });

    // Assess
    expect(instant).toBe('20260101000005001');
    const completed = (await readdir(join(dir, 'events/.hoodie/timeline'))).filter((n) =>
      n.startsWith(`${instant}_`),
    );
    expect(completed).toEqual([`${instant}_20260101000005002.commit`]);
    expect(table.last).toBe('20260101000005002');
  });

  it("commits under the table's storage lock and releases it", async () => {
    // Prepare
    const table = await createHudiTable(store, 'events', 8);
    const clock = new ManualClock(Date.UTC(2026, 11, 6));
    const lock = new StorageBasedHudiLock({ store, tableRoot: 'events', clock });

    // Act
    const { instant } = await appendHudiInsert(table, '2', 4, { clock: () => clock.now(), lock });

    // Assess
    expect(instant).toBe('20261206000000000');
    // The lock file exists only because the commit took the lock; released, it is marked expired.
    const lockFile = await lock.read();
    expect(lockFile?.data).toMatchObject({ expired: true });
  });
});
