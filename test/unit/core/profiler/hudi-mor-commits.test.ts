// The profiler on a Hudi Merge-on-Read table: after the first event, each completed instant re-counts only the
// partitions the instants since the cursor wrote (ChangesRead `partitions`: the active timeline, and one listing of
// each such partition, never of the rest of the table), and the counters — due files included — always equal those of
// the whole state at the latest completed instant, whatever the inserts, updates in log files, compactions and the
// duplicates and order of their events. What no write to a partition shows is read again where it can move: an
// archived timeline makes the whole state be read; on table version 6 a pending write that completes re-counts every
// partition the active timeline names (its compaction was held back while the write was pending).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { MemoryStatsStore } from '../../../../functions/adapters/memory-stats-store.js';
import { compactHudiMergeOnRead } from '../../../../functions/core/formats/hudi/compaction-run.js';
import { HudiInstantCache } from '../../../../functions/core/formats/hudi/instant-cache.js';
import { StorageBasedHudiLock } from '../../../../functions/core/formats/hudi/lock/index.js';
import {
  compactionCommitContent,
  completedInstantFile,
  pendingInstantFiles,
} from '../../../../functions/core/formats/hudi/timeline-writer/index.js';
import { formatForTable } from '../../../../functions/core/formats/index.js';
import type {
  CommitLogChanges,
  TableChanges,
  TableFormat,
} from '../../../../functions/core/formats/table-format.js';
import { profileCommits, type TableLogDeps } from '../../../../functions/core/profiler/table-log.js';
import { isSmallFile } from '../../../../functions/core/stats.js';
import { parseTableConfigs, resolveTablePolicy } from '../../../../functions/core/table-config.js';
import { ManualClock } from '../../../../functions/ports/clock.js';
import type { ObjectStore } from '../../../../functions/ports/object-store.js';
import { defaultParquetEngine } from '../../../../functions/shared/parquet-engine.js';
import {
  type AppenderTable,
  appendHudiDeltaCommit,
  appendHudiInsert,
  createHudiMorTable,
  deltaCommitInflightContent,
  deltaCommitMetadata,
} from '../../../../functions/tools/sample-hudi.js';
import { countingStore } from '../../../support/counting-store.js';
import {
  commitEventsOf,
  completedInstantNames,
  timelineFolder as timelineFolderOf,
} from '../../../support/hudi-commit-events.js';

const NOW = Date.UTC(2026, 11, 7, 12, 0, 0);
const ROOT = 'trips';
const DELTA_COMMITS = 2;

const TABLES = parseTableConfigs([
  {
    name: 'trips',
    bucket: 'lake',
    prefix: ROOT,
    format: 'hudi',
    partitionColumns: ['byteField'],
    hudiLock: { provider: 'storage' },
    hudiIndexType: 'BLOOM',
    hudiTimezone: 'UTC',
    hudiCompactionDeltaCommits: DELTA_COMMITS,
  },
]);
const POLICY = resolveTablePolicy(TABLES[0] as (typeof TABLES)[number]);
const POLICIES = new Map([['trips', POLICY]]);
/** The table's format bound to its settings, as the deployment binds it (its trigger of 2 delta commits). */
const FORMAT = formatForTable(TABLES, 'trips', {});
const CHANGES = commitLogOf(FORMAT.changes);

function commitLogOf(changes: TableChanges): CommitLogChanges {
  if (changes.kind !== 'commit-log') throw new Error('a Hudi table is read through its timeline');
  return changes;
}

const commitEvent = commitEventsOf(TABLES, POLICIES, ROOT, NOW);
const completedNames = (store: ObjectStore, version: 6 | 8) => completedInstantNames(store, ROOT, version);
const timelineFolder = (version: 6 | 8) => timelineFolderOf(ROOT, version);

function profilerOf(store: ObjectStore, format: TableFormat = FORMAT) {
  const stats = new MemoryStatsStore();
  const deps: TableLogDeps = {
    stats,
    tables: TABLES,
    policies: POLICIES,
    storeFor: () => store,
    formatFor: () => format,
  };
  return { stats, deps };
}

type Counts = Record<string, { fileCount: number; totalBytes: number; smallCount: number; dueCount: number }>;

async function storedCounts(stats: MemoryStatsStore): Promise<Counts> {
  const counts: Counts = {};
  for (const p of await stats.listPartitions('trips')) {
    if (p.fileCount === 0 && p.totalBytes === 0) continue;
    counts[p.partition] = {
      fileCount: p.fileCount,
      totalBytes: p.totalBytes,
      smallCount: p.smallCount,
      dueCount: p.dueCount ?? 0,
    };
  }
  return counts;
}

/** The counters of the whole state at the latest completed instant (what a rebuild counts). */
async function recount(store: ObjectStore): Promise<Counts> {
  const state = await CHANGES.readState(store, ROOT);
  const counts: Counts = {};
  for (const p of state.partitions) {
    if (p.files.length === 0) continue;
    counts[p.partition] = {
      fileCount: p.files.length,
      totalBytes: p.files.reduce((n, f) => n + f.size, 0),
      smallCount: p.files.filter(
        (f) =>
          f.serviceDue === true || isSmallFile(f.size, POLICY.targetFileSizeBytes, POLICY.smallFileSizeRatio),
      ).length,
      dueCount: p.files.filter((f) => f.serviceDue === true).length,
    };
  }
  return counts;
}

/** Our compaction of every slice due (the table service a run of a due partition runs). */
async function compact(store: ObjectStore): Promise<void> {
  const clock = new ManualClock(NOW);
  await compactHudiMergeOnRead(
    {
      store,
      engine: defaultParquetEngine,
      clock,
      coordination: {
        localZone: 'UTC',
        lockFor: () => new StorageBasedHudiLock({ store, tableRoot: ROOT, clock }),
      },
    },
    ROOT,
    { deltaCommits: DELTA_COMMITS },
  );
}

/** One write of the streaming table: new records in a partition, updates of a partition's slices, a compaction. */
type Write =
  | { kind: 'insert'; partition: number }
  | { kind: 'update'; partition: number }
  | { kind: 'compact' };

async function apply(table: AppenderTable, w: Write): Promise<void> {
  if (w.kind === 'insert') await appendHudiInsert(table, String(w.partition), 3);
  else if (w.kind === 'update') await appendHudiDeltaCommit(table, String(w.partition), { fraction: 0.5 });
  else await compact(table.store);
}

/** A table of three partitions, two file groups each, every group updated once (one delta commit short of due). */
async function threePartitions(version: 6 | 8): Promise<AppenderTable> {
  const table = await createHudiMorTable(new MemoryObjectStore(), ROOT, version, '20261201000000000');
  for (const partition of ['10', '11', '12']) {
    await appendHudiInsert(table, partition, 3);
    await appendHudiInsert(table, partition, 3);
  }
  return table;
}

describe.each([6, 8] as const)(
  'Hudi commits of a version %i Merge-on-Read table applied to the partition statistics',
  (version) => {
    it('re-counts only the partitions a new instant wrote, listing none of the others, and equals the whole state', async () => {
      // Prepare: three partitions counted from their whole state; partition 10 updated once (its slices have logs)
      const table = await threePartitions(version);
      await appendHudiDeltaCommit(table, '10', { fraction: 0.5 });
      const counting = countingStore(table.store);
      const { stats, deps } = profilerOf(counting.store);
      const first = (
        await profileCommits(
          deps,
          (await completedNames(table.store, version)).map((n) => commitEvent(version, n)),
          NOW,
        )
      ).get('trips');
      const before = await completedNames(table.store, version);

      // Act: a second delta commit of partition 10 meets its trigger; its event alone
      await appendHudiDeltaCommit(table, '10', { fraction: 0.5 });
      const [name] = (await completedNames(table.store, version)).filter((n) => !before.includes(n));
      counting.reset();
      const result = (await profileCommits(deps, [commitEvent(version, name as string)], NOW)).get('trips');
      const listed = counting
        .requests()
        .filter((r) => r.op === 'list')
        .map((r) => r.key);
      counting.reset();
      await CHANGES.readState(counting.store, ROOT);
      const wholeListed = counting
        .requests()
        .filter((r) => r.op === 'list')
        .map((r) => r.key);

      // Assess
      expect(first).toMatchObject({ ok: true, mode: { kind: 'rebuild' } });
      expect(result).toMatchObject({ ok: true, mode: { kind: 'partitions', count: 1 } });
      expect(await storedCounts(stats)).toEqual(await recount(table.store));
      expect((await storedCounts(stats))['10']?.dueCount).toBeGreaterThan(0);
      expect(listed).toContain(`${ROOT}/10/`);
      expect(listed.filter((key) => /^trips\/1[12]\//.test(key))).toEqual([]);
      expect(wholeListed.some((key) => key.startsWith(`${ROOT}/11`))).toBe(true);
    });

    it('converges on the whole state whatever the inserts, updates, compactions and the duplicates and order of their events (property)', async () => {
      const write = fc.oneof(
        {
          arbitrary: fc.record({
            kind: fc.constant('insert' as const),
            partition: fc.integer({ min: 10, max: 11 }),
          }),
          weight: 2,
        },
        {
          arbitrary: fc.record({
            kind: fc.constant('update' as const),
            partition: fc.integer({ min: 10, max: 11 }),
          }),
          weight: 3,
        },
        { arbitrary: fc.record({ kind: fc.constant('compact' as const) }), weight: 1 },
      );
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.record({ write, deliver: fc.array(fc.nat(30), { maxLength: 3 }) }), {
            minLength: 1,
            maxLength: 7,
          }),
          async (steps) => {
            // Prepare
            const table = await createHudiMorTable(
              new MemoryObjectStore(),
              ROOT,
              version,
              '20261201000000000',
            );
            await appendHudiInsert(table, '10', 3);
            const { stats, deps } = profilerOf(table.store);
            const modes: string[] = [];
            const deliver = async (indexes: readonly number[]) => {
              const names = await completedNames(table.store, version);
              if (indexes.length === 0 || names.length === 0) return;
              const events = indexes.map((i) => commitEvent(version, names[i % names.length] as string));
              const result = (await profileCommits(deps, events, NOW)).get('trips');
              if (!result?.ok)
                throw new Error(`not applied: ${String(result?.ok === false && result.error)}`);
              modes.push(result.mode.kind);
            };

            // Act: after each write, a random batch of the events so far (none, duplicates, late ones, out of order),
            // then a compaction of whatever is due, then every event once more (a redelivery of all of them)
            await deliver([0]);
            for (const step of steps) {
              await apply(table, step.write);
              await deliver(step.deliver);
            }
            await apply(table, { kind: 'compact' });
            await deliver(Array.from({ length: 64 }, (_, i) => i));

            // Assess: the whole state's counters; after the first read, never a read of the whole state
            expect(await storedCounts(stats)).toEqual(await recount(table.store));
            expect(modes.slice(1).includes('rebuild')).toBe(false);
          },
        ),
        { numRuns: 10, seed: 0x304 + version },
      );
    }, 170_000);

    it("re-counts a partition from its compaction's commit: the compacted slices are base-only, nothing is due", async () => {
      // Prepare: partition 10 due (two delta commits), counted
      const table = await threePartitions(version);
      await appendHudiDeltaCommit(table, '10', { fraction: 0.5 });
      await appendHudiDeltaCommit(table, '10', { fraction: 0.5 });
      const { stats, deps } = profilerOf(table.store);
      await profileCommits(
        deps,
        (await completedNames(table.store, version)).map((n) => commitEvent(version, n)),
        NOW,
      );
      const due = await storedCounts(stats);
      const before = await completedNames(table.store, version);

      // Act: the compaction, and its commit's event
      await compact(table.store);
      const [name] = (await completedNames(table.store, version)).filter((n) => !before.includes(n));
      const result = (await profileCommits(deps, [commitEvent(version, name as string)], NOW)).get('trips');

      // Assess
      expect(name).toMatch(/\.commit$/);
      expect(due['10']?.dueCount).toBeGreaterThan(0);
      expect(result).toMatchObject({ ok: true, mode: { kind: 'partitions', count: 1 } });
      expect((await storedCounts(stats))['10']).toMatchObject({ fileCount: 2, dueCount: 0 });
      expect(await storedCounts(stats)).toEqual(await recount(table.store));
    });

    it('reads the whole state once the active timeline was archived since the cursor', async () => {
      // Prepare: counted; then the timeline's first completed write archived (its instant files gone from the folder)
      const table = await threePartitions(version);
      const { stats, deps } = profilerOf(table.store);
      await profileCommits(
        deps,
        (await completedNames(table.store, version)).map((n) => commitEvent(version, n)),
        NOW,
      );
      const [oldest] = await completedNames(table.store, version);
      const time = (oldest as string).slice(0, 17);
      for await (const o of table.store.listAll(timelineFolder(version)))
        if (o.key.slice(timelineFolder(version).length).startsWith(time))
          await table.store.deleteMany([{ key: o.key }]);
      await appendHudiDeltaCommit(table, '12', { fraction: 0.5 });
      const names = await completedNames(table.store, version);

      // Act
      const result = (await profileCommits(deps, [commitEvent(version, names.at(-1) as string)], NOW)).get(
        'trips',
      );

      // Assess
      expect(result).toMatchObject({
        ok: true,
        mode: { kind: 'rebuild', reason: expect.stringMatching(/archived since the cursor/) },
      });
      expect(await storedCounts(stats)).toEqual(await recount(table.store));
    });
  },
);

/**
 * A version 8 table of 20 partitions of 2 base files each, every commit profiled through `format`; then a delta
 * commit to partition 10, not yet profiled (its completed instant `last`). Requests are counted from the start.
 */
async function twentyPartitionsOneWritten(format: TableFormat) {
  const table = await createHudiMorTable(new MemoryObjectStore(), ROOT, 8, '20261201000000000');
  for (let p = 10; p < 30; p += 1) {
    await appendHudiInsert(table, String(p), 2);
    await appendHudiInsert(table, String(p), 2);
  }
  const counting = countingStore(table.store);
  const { stats, deps } = profilerOf(counting.store, format);
  await profileCommits(
    deps,
    (await completedNames(table.store, 8)).map((n) => commitEvent(8, n)),
    NOW,
  );
  await appendHudiDeltaCommit(table, '10', { fraction: 0.5 });
  const last = (await completedNames(table.store, 8)).at(-1) as string;
  return { table, counting, stats, deps, last };
}

describe('the requests of one Merge-on-Read commit event', () => {
  it('grow with the partitions the commit wrote and the active timeline, not with the table: 20 partitions, one written', async () => {
    // Prepare: a version 8 table of 20 partitions of 2 base files each, counted; then a delta commit to one
    const { counting, deps, last } = await twentyPartitionsOneWritten(FORMAT);

    // Act: the event, then the whole-state read it replaces
    counting.reset();
    const result = (await profileCommits(deps, [commitEvent(8, last)], NOW)).get('trips');
    const incremental = counting.requests();
    counting.reset();
    await CHANGES.readState(counting.store, ROOT);
    const whole = counting.requests();

    // Assess: the timeline's listings and instants alike; one partition listed instead of twenty
    const tally = (requests: typeof whole) => ({
      list: requests.filter((r) => r.op === 'list').length,
      get: requests.filter((r) => r.op === 'get').length,
    });
    if (process.env.LAKE_COMPACTOR_PRINT_REQUESTS === '1')
      console.info(JSON.stringify({ incremental: tally(incremental), whole: tally(whole) }));
    const partitionLists = (requests: typeof whole) =>
      requests.filter((r) => r.op === 'list' && /^trips\/\d+\//.test(r.key)).map((r) => r.key);
    expect(result).toMatchObject({ ok: true, mode: { kind: 'partitions', count: 1 } });
    expect(partitionLists(incremental)).toEqual([`${ROOT}/10/`]);
    expect(partitionLists(whole)).toHaveLength(20);
    expect(tally(incremental).get).toBe(tally(whole).get);
  });
});

describe('the requests of a Merge-on-Read commit event in a warm function (its instant cache)', () => {
  it('GET only what the timeline gained since the last read — hoodie.properties and the new instant — and count as the whole state does', async () => {
    // Prepare: the same 20-partition table, profiled by a format bound with one instant cache (one per cold start)
    const cache = new HudiInstantCache();
    const warm = formatForTable(TABLES, 'trips', { hudiInstantCache: cache });
    const { table, counting, stats, deps, last } = await twentyPartitionsOneWritten(warm);

    // Act
    counting.reset();
    const result = (await profileCommits(deps, [commitEvent(8, last)], NOW)).get('trips');
    const gets = counting
      .requests()
      .filter((r) => r.op === 'get')
      .map((r) => r.key.slice(r.key.lastIndexOf('/') + 1));

    // Assess: the 40 earlier instants came from the cache; the counts are the whole state's
    expect(result).toMatchObject({ ok: true, mode: { kind: 'partitions', count: 1 } });
    expect(gets.sort()).toEqual(['hoodie.properties', last].sort());
    expect(cache.size).toBe(41);
    expect(await storedCounts(stats)).toEqual(await recount(table.store));
  });
});

describe('Hudi commits of a version 6 Merge-on-Read table whose compaction a pending write held back', () => {
  it('counts a partition due once the pending write completes, though that write touched another partition', async () => {
    // Prepare: partition 10 meets its trigger while a write to partition 11 is pending (v6 schedules no compaction
    // then), counted as not due; the pending write then completes, writing nothing to partition 10
    const table = await threePartitions(6);
    const pending = '20261201000000500';
    const location = { tableVersion: 6, operation: 'deltacommit' as const, instant: pending };
    const files = pendingInstantFiles(location);
    await table.store.put(`${ROOT}/${files.requested}`, new Uint8Array(0));
    await table.store.put(
      `${ROOT}/${files.inflight}`,
      deltaCommitInflightContent(6, { partition: '11', inserts: 0, updates: [], operationType: 'UPSERT' }),
    );
    await appendHudiDeltaCommit(table, '10', { fraction: 0.5 });
    await appendHudiDeltaCommit(table, '10', { fraction: 0.5 });
    const { stats, deps } = profilerOf(table.store);
    await profileCommits(
      deps,
      (await completedNames(table.store, 6)).map((n) => commitEvent(6, n)),
      NOW,
    );
    const held = await storedCounts(stats);
    await table.store.put(
      `${ROOT}/${completedInstantFile(location)}`,
      compactionCommitContent(6, deltaCommitMetadata('11', [], {}, 'UPSERT')),
    );

    // Act: the completed write's event
    const result = (await profileCommits(deps, [commitEvent(6, `${pending}.deltacommit`)], NOW)).get('trips');

    // Assess: partition 10 was held back, and is due now; incrementally, and equal to the whole state
    expect(held['10']?.dueCount ?? 0).toBe(0);
    expect(result).toMatchObject({ ok: true, mode: { kind: 'partitions' } });
    expect((await storedCounts(stats))['10']?.dueCount).toBeGreaterThan(0);
    expect(await storedCounts(stats)).toEqual(await recount(table.store));
  });
});

describe('Hudi commits of a Merge-on-Read table whose merge settings changed in hoodie.properties', () => {
  it('counts every partition again: partitions a refused payload held back are due once it is a supported one, though the next commit touched another partition', async () => {
    // Prepare: partitions 10 and 11 meet their trigger while the table names a payload class the merge refuses (no
    // partition due); then the table's payload becomes a supported one, and a delta commit writes to partition 12 only
    const table = await threePartitions(8);
    const properties = `${ROOT}/.hoodie/hoodie.properties`;
    const original = new TextDecoder().decode(await table.store.get(properties));
    const withPayload = (payload: string) =>
      new TextEncoder().encode(
        original.replace(
          /^hoodie\.compaction\.payload\.class=.*$/m,
          `hoodie.compaction.payload.class=${payload}`,
        ),
      );
    await table.store.put(properties, withPayload('com.example.CustomMergePayload'));
    for (const partition of ['10', '11']) {
      await appendHudiDeltaCommit(table, partition, { fraction: 0.5 });
      await appendHudiDeltaCommit(table, partition, { fraction: 0.5 });
    }
    const { stats, deps } = profilerOf(table.store);
    await profileCommits(
      deps,
      (await completedNames(table.store, 8)).map((n) => commitEvent(8, n)),
      NOW,
    );
    const refused = await storedCounts(stats);
    await table.store.put(properties, new TextEncoder().encode(original));
    await appendHudiDeltaCommit(table, '12', { fraction: 0.5 });
    const names = await completedNames(table.store, 8);

    // Act: the last commit's event
    const result = (await profileCommits(deps, [commitEvent(8, names[names.length - 1] ?? '')], NOW)).get(
      'trips',
    );

    // Assess: nothing was due under the refused payload; the change is seen at once (the whole state is read), and
    // partitions 10 and 11 are due now, equal to the whole state
    expect(original).toMatch(/^hoodie\.compaction\.payload\.class=/m);
    expect(Object.values(refused).every((c) => c.dueCount === 0)).toBe(true);
    expect(result).toMatchObject({
      ok: true,
      mode: {
        kind: 'rebuild',
        reason: expect.stringMatching(/merge settings in hoodie\.properties changed/),
      },
    });
    const counts = await storedCounts(stats);
    expect(counts['10']?.dueCount).toBeGreaterThan(0);
    expect(counts['11']?.dueCount).toBeGreaterThan(0);
    expect(counts).toEqual(await recount(table.store));
  });
});
