// The Journal contract over the in-memory journal and the store journal on a local folder and on the
// in-memory store; plus what only the store journal must prove: its write order survives a crash between
// its two objects, and settlePartition then closes the fence that was left.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../../functions/adapters/local-object-store.js';
import { MemoryJournal } from '../../../functions/adapters/memory-journal.js';
import { MemoryObjectStore, type StoreMethod } from '../../../functions/adapters/memory-object-store.js';
import { StoreJournal } from '../../../functions/adapters/store-journal.js';
import { settlePartition } from '../../../functions/core/workflow/settle.js';
import { ManualClock } from '../../../functions/ports/clock.js';
import { describeJournalContract, plannedEntry } from '../../support/journal-contract.js';

describeJournalContract({
  name: 'MemoryJournal',
  async open() {
    return { journal: new MemoryJournal(), close: async () => {} };
  },
});

describeJournalContract({
  name: 'StoreJournal on a local folder',
  async open() {
    const root = await mkdtemp(join(tmpdir(), 'store-journal-'));
    return {
      journal: new StoreJournal(new LocalObjectStore(root)),
      close: () => rm(root, { recursive: true, force: true }),
    };
  },
});

describeJournalContract({
  name: 'StoreJournal on the in-memory store',
  async open() {
    return { journal: new StoreJournal(new MemoryObjectStore()), close: async () => {} };
  },
});

/** A memory store whose `n`-th request of `method` (from 1) fails, as a process killed right there. */
function crashingStore(method: StoreMethod, n: number): MemoryObjectStore {
  let seen = 0;
  return new MemoryObjectStore({
    interceptor: (m) => {
      if (m !== method) return;
      seen += 1;
      if (seen === n) throw new Error(`injected: died at ${method} #${n}`);
    },
  });
}

describe('StoreJournal write order', () => {
  const ref = { table: 'events', partition: 'date=2024-01-01' };
  const deps = (store: MemoryObjectStore, journal: StoreJournal) => ({
    store,
    journal,
    clock: new ManualClock(10),
  });

  it('writes the fence before the entry: a crash between them leaves a fence that settling closes', async () => {
    // Prepare: the second put of create (the entry) fails
    const store = crashingStore('put', 2);
    const journal = new StoreJournal(store);
    await journal.create(plannedEntry('run-1')).catch(() => {});
    // Act
    const openBefore = await journal.listOpen(ref);
    const report = await settlePartition(deps(store, journal), ref, { reason: 'test' });
    // Assess
    expect(openBefore).toEqual([{ runId: 'run-1', groupId: 'g0001' }]);
    expect(await journal.get('run-1', 'g0001')).toBeUndefined();
    expect(report).toEqual({ settled: [], unsettled: [] });
    expect(await journal.listOpen(ref)).toEqual([]);
  });

  it('removes the fence after the settling entry: a crash between them leaves a fence that settling closes', async () => {
    // Prepare: the settling transition's fence delete fails, after the entry was written
    const store = crashingStore('deleteMany', 1);
    const journal = new StoreJournal(store);
    const created = await journal.create(plannedEntry('run-2'));
    const crash = await journal
      .transition(created, 'aborted', { reason: 'rolled back' }, 2)
      .catch((err: unknown) => err);
    // Act
    const openBefore = await journal.listOpen(ref);
    const report = await settlePartition(deps(store, journal), ref, { reason: 'test' });
    // Assess
    expect(crash).toBeInstanceOf(Error);
    expect((await journal.get('run-2', 'g0001'))?.state).toBe('aborted');
    expect(openBefore).toEqual([{ runId: 'run-2', groupId: 'g0001' }]);
    expect(report).toEqual({ settled: [], unsettled: [] });
    expect(await journal.listOpen(ref)).toEqual([]);
  });

  it('lists the partitions of a table that have open groups, including the root partition', async () => {
    // Prepare
    const journal = new StoreJournal(new MemoryObjectStore());
    await journal.create(plannedEntry('run-3', { partition: '' }));
    await journal.create(plannedEntry('run-3', { groupId: 'g0002', partition: 'year=2024/month=01' }));
    await journal.create(plannedEntry('run-3', { groupId: 'g0003', partition: 'year=2024/month=01' }));
    await journal.create(plannedEntry('run-3', { groupId: 'g0004', table: 'other' }));
    // Act
    const partitions = await journal.openPartitions('events');
    // Assess
    expect(partitions.map((p) => p.partition).sort()).toEqual(['', 'year=2024/month=01']);
    expect(partitions.every((p) => p.table === 'events')).toBe(true);
  });
});
