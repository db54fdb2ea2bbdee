// The Journal port's contract as tests, run over every adapter that claims it: create once, transitions
// conditioned on the revision (exactly one of two racers wins), and fences listed until the group settles.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JournalConflictError } from '../../functions/core/errors.js';
import type { GroupJournalEntry, Journal } from '../../functions/ports/journal.js';

/** One adapter under contract: how to make a fresh one and clean up after it. */
export interface JournalHarness {
  readonly name: string;
  open(): Promise<{ journal: Journal; close(): Promise<void> }>;
}

/** A planned entry of `runId`'s group `groupId` in `partition` of table `table`. */
export function plannedEntry(
  runId: string,
  options: { groupId?: string; table?: string; partition?: string } = {},
): Omit<GroupJournalEntry, 'revision'> {
  const groupId = options.groupId ?? 'g0001';
  const partition = options.partition ?? 'date=2024-01-01';
  return {
    runId,
    groupId,
    table: options.table ?? 'events',
    partition,
    state: 'planned',
    inputs: [0, 1, 2].map((i) => ({
      key: `events/${partition}/part-${i}.parquet`,
      etag: `etag-${i}`,
      size: 100 + i,
    })),
    outputs: [],
    retireMode: 'trash',
    stagingPrefix: `_lake-compactor/staging/${runId}/${groupId}/`,
    trashPrefix: `_lake-compactor/trash/${runId}/`,
    createdAt: 1,
    updatedAt: 1,
  };
}

/** Registers the contract's tests for `harness` (one journal per test, so tests cannot see each other). */
export function describeJournalContract(harness: JournalHarness): void {
  describe(`Journal contract: ${harness.name}`, () => {
    let journal: Journal;
    let closers: (() => Promise<void>)[] = [];

    beforeAll(() => {
      closers = [];
    });

    afterAll(async () => {
      for (const close of closers) await close();
    });

    async function fresh(): Promise<Journal> {
      const opened = await harness.open();
      closers.push(opened.close);
      journal = opened.journal;
      return journal;
    }

    it('creates an entry at revision 1 once and refuses a second create, keeping the first', async () => {
      // Prepare
      const j = await fresh();
      // Act
      const created = await j.create(plannedEntry('run-a'));
      const again = await j
        .create({ ...plannedEntry('run-a'), reason: 'second' })
        .catch((err: unknown) => err);
      // Assess
      expect(created.revision).toBe(1);
      expect(again).toBeInstanceOf(JournalConflictError);
      expect(await j.get('run-a', 'g0001')).toEqual(created);
      expect(await j.get('run-a', 'g9999')).toBeUndefined();
    });

    it('moves an entry from its current revision, applying the patch, and refuses a stale revision', async () => {
      // Prepare
      const j = await fresh();
      const created = await j.create(plannedEntry('run-b'));
      const outputs = [{ stagingKey: 's/o.parquet', finalKey: 'f/o.parquet', etag: 'e', size: 9, rows: 3 }];
      // Act
      const staged = await j.transition(created, 'staged', { outputs }, 5);
      const stale = await j
        .transition(created, 'aborted', { reason: 'late' }, 6)
        .catch((err: unknown) => err);
      // Assess
      expect(staged).toMatchObject({ state: 'staged', revision: 2, updatedAt: 5, outputs });
      expect(stale).toBeInstanceOf(JournalConflictError);
      expect(await j.get('run-b', 'g0001')).toEqual(staged);
    });

    it('lets exactly one of two transitions from the same revision win', async () => {
      // Prepare
      const j = await fresh();
      const created = await j.create(plannedEntry('run-c'));
      // Act
      const results = await Promise.allSettled([
        j.transition(created, 'staged', {}, 2),
        j.transition(created, 'aborted', { reason: 'rolled back' }, 2),
      ]);
      // Assess
      const won = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
      const lost = results.flatMap((r) => (r.status === 'rejected' ? [r.reason] : []));
      expect(won).toHaveLength(1);
      expect(lost).toHaveLength(1);
      expect(lost[0]).toBeInstanceOf(JournalConflictError);
      expect(await j.get('run-c', 'g0001')).toEqual(won[0]);
    });

    it('lists every unsettled group of a partition through its fence until a transition settles it', async () => {
      // Prepare
      const j = await fresh();
      const ref = { table: 'events', partition: 'date=2024-01-01' };
      const a = await j.create(plannedEntry('run-d', { groupId: 'g0001' }));
      const b = await j.create(plannedEntry('run-d', { groupId: 'g0002' }));
      await j.create(plannedEntry('run-d', { groupId: 'g0003', partition: 'date=2024-01-02' }));
      await j.create(plannedEntry('run-d', { groupId: 'g0004', table: 'other' }));
      // Act
      const before = await j.listOpen(ref);
      const publishing = await j.transition(a, 'publishing', {}, 2);
      const whilePublishing = await j.listOpen(ref);
      const undoing = await j.transition(
        await j.transition(publishing, 'published', {}, 3),
        'aborted',
        { undo: 'pending' },
        4,
      );
      const whileUndoing = await j.listOpen(ref);
      await j.transition(undoing, 'aborted', { undo: 'done' }, 5);
      await j.transition(b, 'aborted', { reason: 'rolled back' }, 5);
      const after = await j.listOpen(ref);
      // Assess
      const ids = (groups: readonly { runId: string; groupId: string }[]) =>
        groups.map((g) => `${g.runId}/${g.groupId}`).sort();
      expect(ids(before)).toEqual(['run-d/g0001', 'run-d/g0002']);
      expect(ids(whilePublishing)).toEqual(['run-d/g0001', 'run-d/g0002']);
      expect(ids(whileUndoing)).toEqual(['run-d/g0001', 'run-d/g0002']);
      expect(after).toEqual([]);
      expect(ids(await j.listOpen({ table: 'events', partition: 'date=2024-01-02' }))).toEqual([
        'run-d/g0003',
      ]);
      expect(ids(await j.listOpen({ table: 'other', partition: 'date=2024-01-01' }))).toEqual([
        'run-d/g0004',
      ]);
    });

    it('keeps partitions with /, =, spaces and the empty root partition apart', async () => {
      // Prepare
      const j = await fresh();
      const partitions = ['', 'year=2024/month=01', 'k=a b+c%2F', 'year=2024'];
      for (const [i, partition] of partitions.entries()) {
        await j.create(plannedEntry('run-e', { groupId: `g000${i}`, partition }));
      }
      // Act
      const listed = await Promise.all(
        partitions.map((partition) => j.listOpen({ table: 'events', partition })),
      );
      // Assess
      expect(listed).toEqual(partitions.map((_, i) => [{ runId: 'run-e', groupId: `g000${i}` }]));
    });

    it('closes a fence idempotently, and creates none for an entry created settled', async () => {
      // Prepare
      const j = await fresh();
      const ref = { table: 'events', partition: 'date=2024-01-01' };
      await j.create(plannedEntry('run-f'));
      await j.create({ ...plannedEntry('run-f', { groupId: 'g0002' }), state: 'done' });
      // Act
      await j.closeFence(ref, { runId: 'run-f', groupId: 'g0001' });
      await j.closeFence(ref, { runId: 'run-f', groupId: 'g0001' });
      // Assess
      expect(await j.listOpen(ref)).toEqual([]);
      expect((await j.get('run-f', 'g0001'))?.state).toBe('planned');
    });

    it('lists every group of a run and only that run', async () => {
      // Prepare
      const j = await fresh();
      await j.create(plannedEntry('run-g', { groupId: 'g0002' }));
      await j.create(plannedEntry('run-g', { groupId: 'g0001' }));
      await j.create(plannedEntry('run-g2', { groupId: 'g0001' }));
      // Act
      const run = await j.listRun('run-g');
      // Assess
      expect(run.map((e) => `${e.runId}/${e.groupId}`).sort()).toEqual(['run-g/g0001', 'run-g/g0002']);
      expect(await j.listRun('run-none')).toEqual([]);
    });
  });
}
