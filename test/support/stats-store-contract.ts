// The StatsStore port's contract as tests, run over every adapter that claims it: exact counts from duplicated
// and late events, conditional decisions and schedules (one winner), caps, releases, reconcile and the listings.
import { describe, expect, it } from 'vitest';
import type {
  Lease,
  PartitionRef,
  PartitionSnapshot,
  ResolvedEvent,
} from '../../functions/core/profiler/model.js';
import type { StatsStore } from '../../functions/ports/stats-store.js';

type S = PartitionSnapshot;

const NOW = Date.UTC(2026, 10, 30, 12, 0, 0);
const MINUTE = 60_000;
const MIB = 1024 * 1024;

/** A created (size given) or removed file of `ref`, as the profiler resolves S3's event for it. */
export function fileEvent(
  ref: PartitionRef,
  name: string,
  sequencer: number,
  size?: number,
  eventTime = NOW - 60 * MINUTE,
): ResolvedEvent {
  const key = `${ref.table}/${ref.partition}/${name}`;
  return {
    bucket: 'lake',
    key,
    kind: size === undefined ? 'removed' : 'created',
    ...(size === undefined ? {} : { size, small: size < 96 * MIB }),
    sequencer: sequencer.toString(16).toUpperCase().padStart(32, '0'),
    eventTime,
    eventName: size === undefined ? 'ObjectRemoved:Delete' : 'ObjectCreated:Put',
    ref,
    fileId: `lake/${key}`,
    values: [],
  };
}

function lease(runId: string, acquiredAt = NOW): Lease {
  return { runId, executionName: runId, acquiredAt };
}

function started(runId: string) {
  return { at: NOW, compact: true, reasons: ['5 small files'], action: `started ${runId}` };
}

const waiting = { at: NOW, compact: false, reasons: ['quiet window'], action: 'waiting' };

/**
 * Registers the contract's tests for one adapter. `open` returns the store and a table name no other test
 * uses (adapters may share one backing table between tests).
 */
export function statsStoreContract(name: string, open: () => Promise<{ stats: StatsStore; table: string }>) {
  describe(`StatsStore contract: ${name}`, () => {
    /** A partition that exists (touched once), and its snapshot. */
    async function touched(stats: StatsStore, ref: PartitionRef) {
      return stats.touch(ref, { lastWriteAt: NOW - 30 * MINUTE, firstWriteAt: NOW - 40 * MINUTE });
    }

    it('counts each file once whatever the duplicates, moves by the size difference on overwrite, and ignores a late older event', async () => {
      // Prepare
      const { stats, table } = await open();
      const ref = { table, partition: 'date=2026-11-29' };
      const first = [
        fileEvent(ref, 'a.parquet', 1, 100),
        fileEvent(ref, 'b.parquet', 2, 200 * MIB),
        fileEvent(ref, 'a.parquet', 1, 100),
      ];
      const second = [
        fileEvent(ref, 'a.parquet', 5, 300),
        fileEvent(ref, 'a.parquet', 3, 999),
        fileEvent(ref, 'never-seen.parquet', 4),
      ];

      // Act
      const appliedFirst = await stats.applyEvents(first);
      const appliedSecond = await stats.applyEvents(second);
      const late = await stats.applyEvents([fileEvent(ref, 'a.parquet', 4, 5_000)]);

      // Assess
      expect([appliedFirst, appliedSecond, late].map((r) => [r.applied, r.stale])).toEqual([
        [2, 1],
        [2, 1],
        [0, 1],
      ]);
      const snapshot = await stats.get(ref);
      expect(snapshot).toMatchObject({
        fileCount: 2,
        totalBytes: 300 + 200 * MIB,
        smallCount: 1,
        smallBytes: 300,
        state: 'idle',
        generation: 0,
      });
      expect(snapshot?.histogram.reduce((n, c) => n + c, 0)).toBe(2);
      const files = await stats.getFiles([`lake/${table}/${ref.partition}/never-seen.parquet`], [ref]);
      expect([...files.values()].map((f) => f.present)).toEqual([false]);
    });

    it('moves lastWriteAt only forward, keeps the first write time, and returns the fresh state either way', async () => {
      // Prepare
      const { stats, table } = await open();
      const ref = { table, partition: 'p' };
      const first = await stats.touch(ref, { lastWriteAt: NOW, firstWriteAt: NOW - 10 });

      // Act
      const older = await stats.touch(ref, { lastWriteAt: NOW - 5, firstWriteAt: NOW - 20 });
      const newer = await stats.touch(ref, {
        lastWriteAt: NOW + 1,
        firstWriteAt: NOW - 30,
        partitionDate: 7,
      });

      // Assess
      expect(older).toMatchObject({ lastWriteAt: NOW, firstWriteAt: NOW - 10, version: first.version });
      expect(newer).toMatchObject({ lastWriteAt: NOW + 1, firstWriteAt: NOW - 10, partitionDate: 7 });
      expect(newer.version).toBeGreaterThan(first.version);
    });

    it('records a decision only at the current version, and lists due partitions oldest due slot first', async () => {
      // Prepare
      const { stats, table } = await open();
      const refs = ['p-a', 'p-b', 'p-c', 'p-d', 'p-e'].map((partition) => ({ table, partition }));
      const snapshots = await Promise.all(refs.map((ref) => touched(stats, ref)));
      const [a, b, c, d, e] = snapshots as [S, S, S, S, S];

      // Act
      const recorded = [
        await stats.recordDecision(b, waiting, { dueAt: NOW - 10 * MINUTE, storeItem: false }),
        await stats.recordDecision(a, waiting, { dueAt: NOW - 11 * MINUTE, storeItem: false }),
        await stats.recordDecision(c, waiting, { dueAt: NOW - 30 * MINUTE, storeItem: true }),
        await stats.recordDecision(d, waiting, { dueAt: NOW + 30 * MINUTE, storeItem: false }),
        await stats.recordDecision(e, waiting, { storeItem: false }),
        await stats.recordDecision({ ...e, version: 0 }, started('x'), { storeItem: false }),
      ];
      const due = await stats.listDue(table, NOW);

      // Assess
      expect(recorded).toEqual([true, true, true, true, true, false]);
      // a and b share a 5-minute due slot: partition order decides between them.
      expect(due.map((r) => r.partition)).toEqual(['p-c', 'p-a', 'p-b']);
      expect((await stats.get(refs[2] as PartitionRef))?.dueAt).toBe(NOW - 30 * MINUTE);
      expect((await stats.get(refs[4] as PartitionRef))?.lastDecision?.action).toBe('waiting');
      expect(await stats.listDecisions(refs[2] as PartitionRef, 5)).toEqual([waiting]);
      expect(await stats.listDecisions(refs[0] as PartitionRef, 5)).toEqual([]);
    });

    it('schedules a partition for exactly one of two concurrent callers, which then is leased and no longer due', async () => {
      // Prepare
      const { stats, table } = await open();
      const ref = { table, partition: 'p' };
      const snapshot = await touched(stats, ref);
      await stats.recordDecision(snapshot, waiting, { dueAt: NOW - MINUTE, storeItem: false });
      const current = (await stats.get(ref)) as PartitionSnapshot;

      // Act
      const results = await Promise.all([
        stats.schedule(current, lease('run-1'), started('run-1')),
        stats.schedule(current, lease('run-2'), started('run-2')),
      ]);

      // Assess
      const winners = results.filter((r) => r !== undefined);
      expect(winners).toHaveLength(1);
      const stored = await stats.get(ref);
      expect(stored).toMatchObject({ state: 'scheduled', generation: 1 });
      expect(stored?.dueAt).toBeUndefined();
      expect(winners[0]).toMatchObject({ state: 'scheduled', generation: 1, lease: stored?.lease });
      expect((await stats.listLeased(table)).map((s) => s.partition)).toEqual(['p']);
      expect(await stats.listDue(table, NOW)).toEqual([]);
      expect((await stats.listDecisions(ref, 5)).map((d) => d.action)).toEqual([
        `started ${stored?.lease?.runId}`,
      ]);
    });

    it('refuses a schedule at the table cap without leasing, and frees the slot when the run is released', async () => {
      // Prepare
      const { stats, table } = await open();
      const limits = { table: 1, total: 1_000_000 };
      const p1 = await touched(stats, { table, partition: 'p1' });
      const p2 = await touched(stats, { table, partition: 'p2' });
      await stats.schedule(p1, lease('run-1'), started('run-1'), limits);

      // Act
      const refused = await stats.schedule(p2, lease('run-2'), started('run-2'), limits);
      const released = await stats.release({ table, partition: 'p1' }, 1, { lastCompactedAt: NOW });
      const accepted = await stats.schedule(p2, lease('run-3'), started('run-3'), limits);

      // Assess
      expect(refused).toEqual({ kind: 'cap-reached', scope: 'table', cap: 1, running: 1 });
      expect(released).toBe(true);
      expect(accepted).toMatchObject({ state: 'scheduled', generation: 1 });
      expect(await stats.reconcileRunCount(table)).toEqual({ running: 1, countedIn: [], countedOut: [] });
    });

    it('releases only the holding generation: idle and due at once, or needs-attention with the reason', async () => {
      // Prepare
      const { stats, table } = await open();
      const done = { table, partition: 'done' };
      const stuck = { table, partition: 'stuck' };
      await stats.schedule(await touched(stats, done), lease('run-d'), started('run-d'));
      await stats.schedule(await touched(stats, stuck), lease('run-s'), started('run-s'));
      const attention = { reason: 'AccessDenied on retire', runId: 'run-s', since: NOW - MINUTE };

      // Act
      const wrongGeneration = await stats.release(done, 0, {});
      const first = await stats.release(done, 1, { lastCompactedAt: NOW - 2 * MINUTE });
      const again = await stats.release(done, 1, {});
      const needsAttention = await stats.release(stuck, 1, { attention });

      // Assess
      expect([wrongGeneration, first, again, needsAttention]).toEqual([false, true, false, true]);
      const idle = await stats.get(done);
      expect(idle).toMatchObject({ state: 'idle', lastCompactedAt: NOW - 2 * MINUTE });
      expect(idle?.lease).toBeUndefined();
      expect((await stats.listDue(table, NOW)).map((r) => r.partition)).toEqual(['done']);
      const flagged = await stats.listNeedingAttention(table);
      expect(flagged.map((s) => [s.partition, s.state, s.attention, s.lease?.runId])).toEqual([
        ['stuck', 'needs-attention', attention, 'run-s'],
      ]);
      expect(await stats.listLeased(table)).toEqual([]);
      expect((await stats.reconcileRunCount(table)).running).toBe(0);
    });

    it('keeps the log version a release says the counters wait for, until a release that says none', async () => {
      // Prepare: a run released with the version it committed; the next one, of an object-event run, with none
      const { stats, table } = await open();
      const ref = { table, partition: 'p' };
      await stats.schedule(await touched(stats, ref), lease('run-1'), started('run-1'));

      // Act
      await stats.release(ref, 1, { lastCompactedAt: NOW, awaitedVersion: 42 });
      const waiting = await stats.get(ref);
      await stats.schedule(waiting as PartitionSnapshot, lease('run-2'), started('run-2'));
      const held = await stats.get(ref);
      await stats.release(ref, 2, { lastCompactedAt: NOW + MINUTE });
      const after = await stats.get(ref);

      // Assess
      expect(waiting).toMatchObject({ state: 'idle', awaitedVersion: 42 });
      expect(held).toMatchObject({ state: 'scheduled', awaitedVersion: 42 });
      expect(after?.state).toBe('idle');
      expect(after?.awaitedVersion).toBeUndefined();
    });

    it('claims each settle retry of a needs-attention partition once, at its generation and attempt count', async () => {
      // Prepare: one partition needs attention, another is idle
      const { stats, table } = await open();
      const stuck = { table, partition: 'stuck' };
      const idle = { table, partition: 'idle' };
      await stats.schedule(await touched(stats, stuck), lease('run-s'), started('run-s'));
      await stats.release(stuck, 1, { attention: { reason: 'AccessDenied', runId: 'run-s', since: NOW } });
      const flagged = (await stats.get(stuck)) as S;
      const retry = (attempts: number, at: number) => ({
        attempts,
        lastAt: at,
        nextAt: at + 30 * MINUTE,
        executionName: `${table}-settle-s${attempts}`,
      });

      // Act: eight sweeps race for the first retry, then one claims the second from what it read
      const first = await Promise.all(
        Array.from({ length: 8 }, () => stats.claimSettleRetry(flagged, retry(1, NOW))),
      );
      const afterFirst = (await stats.get(stuck)) as S;
      const stale = await stats.claimSettleRetry(flagged, retry(1, NOW + MINUTE));
      const second = await stats.claimSettleRetry(afterFirst, retry(2, NOW + 15 * MINUTE));
      const otherGeneration = await stats.claimSettleRetry(
        { ...((await stats.get(stuck)) as S), generation: 7 },
        retry(3, NOW + 45 * MINUTE),
      );
      const notStuck = await stats.claimSettleRetry((await touched(stats, idle)) as S, retry(1, NOW));

      // Assess
      expect(first.filter((won) => won)).toHaveLength(1);
      expect(afterFirst.settleRetry).toEqual(retry(1, NOW));
      expect([stale, second, otherGeneration, notStuck]).toEqual([false, true, false, false]);
      const stored = await stats.get(stuck);
      expect(stored).toMatchObject({ state: 'needs-attention', generation: 1 });
      expect(stored?.settleRetry).toEqual(retry(2, NOW + 15 * MINUTE));
      expect((await stats.listNeedingAttention(table))[0]?.settleRetry).toEqual(retry(2, NOW + 15 * MINUTE));
      expect((await stats.get(idle))?.settleRetry).toBeUndefined();
    });

    it('overwrites counters from a listing only when the partition has not moved since it was read', async () => {
      // Prepare
      const { stats, table } = await open();
      const ref = { table, partition: 'p' };
      await stats.applyEvents([fileEvent(ref, 'a.parquet', 1, 100), fileEvent(ref, 'b.parquet', 2, 200)]);
      const read = (await stats.get(ref)) as PartitionSnapshot;
      await stats.applyEvents([fileEvent(ref, 'c.parquet', 3, 300)]);
      const listed = [
        { fileId: `lake/${table}/p/a.parquet`, size: 100, small: true, eventTime: NOW },
        { fileId: `lake/${table}/p/lost.parquet`, size: 500 * MIB, small: false, eventTime: NOW },
      ];

      // Act
      const busy = await stats.reconcile(ref, listed, read.version, {});
      const current = (await stats.get(ref)) as PartitionSnapshot;
      const corrected = await stats.reconcile(ref, listed, current.version, { partitionDate: 9 });
      const listedNew = [{ fileId: `lake/${table}/new/x.parquet`, size: 10, small: true, eventTime: NOW }];
      const fresh = await stats.reconcile({ table, partition: 'new' }, listedNew, undefined, {});
      const freshAgain = await stats.reconcile({ table, partition: 'new' }, listedNew, undefined, {});

      // Assess
      expect(busy).toEqual({ kind: 'busy' });
      expect(corrected.kind).toBe('corrected');
      expect(fresh.kind).toBe('corrected');
      expect(freshAgain).toEqual({ kind: 'busy' });
      expect(await stats.get(ref)).toMatchObject({
        fileCount: 2,
        totalBytes: 100 + 500 * MIB,
        smallCount: 1,
        smallBytes: 100,
        partitionDate: 9,
      });
      const lost = await stats.getFiles([`lake/${table}/p/lost.parquet`], [ref]);
      expect([...lost.values()].map((f) => [f.present, f.size])).toEqual([[true, 500 * MIB]]);
    });

    it('counts the files a table service has due from a whole-partition count, and keeps that count exact as events replace or remove them, duplicates included', async () => {
      // Prepare: a partition counted whole with two of its three files due (a base file and its log), then events
      const { stats, table } = await open();
      const ref = { table, partition: 'due' };
      const id = (name: string) => `lake/${table}/due/${name}`;
      const listed = [
        { fileId: id('base.parquet'), size: 100, small: true, due: true, eventTime: NOW },
        { fileId: id('log.1'), size: 20, small: true, due: true, eventTime: NOW },
        { fileId: id('other.parquet'), size: 300 * MIB, small: false, eventTime: NOW },
      ];

      // Act
      await stats.reconcile(ref, listed, undefined, {});
      const counted = await stats.get(ref);
      const again = await stats.reconcile(ref, listed, counted?.version, {});
      const countedAgain = await stats.get(ref);
      // the log removed (twice: a redelivery), the base file rewritten (an event never makes a file due)
      await stats.applyEvents([fileEvent(ref, 'log.1', 7), fileEvent(ref, 'log.1', 7)]);
      const afterRemove = await stats.get(ref);
      await stats.applyEvents([fileEvent(ref, 'base.parquet', 8, 150)]);
      const afterRewrite = await stats.get(ref);
      // a later whole count that finds nothing due
      const recount = listed.map(({ due: _due, ...f }) => f);
      await stats.reconcile(ref, recount, afterRewrite?.version, {});
      const none = await stats.get(ref);

      // Assess
      expect(counted).toMatchObject({ fileCount: 3, smallCount: 2, dueCount: 2 });
      expect(again).toEqual({ kind: 'corrected', filesFixed: 0 });
      expect(countedAgain?.dueCount).toBe(2);
      expect(afterRemove).toMatchObject({ fileCount: 2, dueCount: 1 });
      expect(afterRewrite).toMatchObject({ fileCount: 2, dueCount: 0, totalBytes: 150 + 300 * MIB });
      expect(none?.dueCount ?? 0).toBe(0);
      const files = await stats.getFiles([id('base.parquet'), id('other.parquet')], [ref]);
      expect([...files.values()].map((f) => f.due === true)).toEqual([false, false]);
    });

    it('records a foreign-format marker once, and lists a table’s markers in root order', async () => {
      // Prepare
      const { stats, table } = await open();
      const marker = (root: string, evidenceKey: string) => ({
        format: 'delta' as const,
        root,
        evidenceKey,
        seenAt: NOW,
      });

      // Act
      const recorded = [
        await stats.markForeignFormat(table, marker('sub/', 'sub/_delta_log/0.json')),
        await stats.markForeignFormat(table, marker('', '_delta_log/0.json')),
        await stats.markForeignFormat(table, marker('sub/', 'sub/_delta_log/1.json')),
      ];

      // Assess
      expect(recorded).toEqual([true, true, false]);
      expect((await stats.foreignFormats(table)).map((m) => [m.root, m.evidenceKey])).toEqual([
        ['', '_delta_log/0.json'],
        ['sub/', 'sub/_delta_log/0.json'],
      ]);
      expect(await stats.foreignFormats(`${table}-other`)).toEqual([]);
    });

    it('moves a table’s change cursor only forward, and keeps one per table', async () => {
      // Prepare
      const { stats, table } = await open();
      const before = await stats.changeCursor(table);

      // Act
      const moves = [
        await stats.advanceChangeCursor(table, { version: 3, memo: 'layout-a' }),
        await stats.advanceChangeCursor(table, { version: 3, memo: 'layout-b' }),
        await stats.advanceChangeCursor(table, { version: 2, memo: 'layout-c' }),
        await stats.advanceChangeCursor(table, { version: 7, memo: 'layout-d' }),
        await stats.advanceChangeCursor(`${table}-other`, { version: 1, memo: 'other' }),
      ];

      // Assess
      expect(before).toBeUndefined();
      expect(moves).toEqual([true, false, false, true, true]);
      expect(await stats.changeCursor(table)).toEqual({ version: 7, memo: 'layout-d' });
      expect(await stats.changeCursor(`${table}-other`)).toEqual({ version: 1, memo: 'other' });
      expect(await stats.foreignFormats(table)).toEqual([]);
    });

    it('lists every partition of a table in partition order, and none of a table sharing its name prefix', async () => {
      // Prepare
      const { stats, table } = await open();
      for (const partition of ['date=2', 'date=1', '']) await touched(stats, { table, partition });
      await touched(stats, { table: `${table}x`, partition: 'date=1' });

      // Act
      const listed = await stats.listPartitions(table);

      // Assess
      expect(listed.map((s) => s.partition)).toEqual(['', 'date=1', 'date=2']);
      expect(await stats.get({ table, partition: 'date=3' })).toBeUndefined();
    });
  });
}
