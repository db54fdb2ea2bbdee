// The profiler on a Hudi Merge-on-Read table whose every live file slice has log files (a streaming upsert table):
// until the table's compaction trigger (`hudiCompactionDeltaCommits` delta commits in the partition since its last
// compaction) is met, the partition counts nothing a run would rewrite and no run starts, however often its events
// are delivered and the sweep looks; once it is met, the slices' base and log files are counted as candidates and
// exactly one run starts, whatever the duplicates and the order of the events. That run compacts the partition
// through the workflow's own steps with the merged view's rows unchanged, and the compaction's own commit event then
// leaves the partition with nothing due: no second run, even with no cooldown. A compaction left pending in the
// partition (scheduled by a run that died) is counted the same way, so the run that finishes it starts.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../../../functions/adapters/local-object-store.js';
import { MemoryJournal } from '../../../../functions/adapters/memory-journal.js';
import { MemoryLeases } from '../../../../functions/adapters/memory-leases.js';
import { compactHudiMergeOnRead } from '../../../../functions/core/formats/hudi/compaction-run.js';
import { compactionDueIn } from '../../../../functions/core/formats/hudi/compaction-trigger.js';
import { StorageBasedHudiLock } from '../../../../functions/core/formats/hudi/lock/index.js';
import { readHudiTable } from '../../../../functions/core/formats/hudi/table-state.js';
import { formatForTable } from '../../../../functions/core/formats/index.js';
import { partitionPlanSchema } from '../../../../functions/core/planning.js';
import { sweepTable } from '../../../../functions/core/profiler/sweep.js';
import { profileCommits } from '../../../../functions/core/profiler/table-log.js';
import { buildRunContext } from '../../../../functions/core/run-input.js';
import { parseTableConfigs, resolveTablePolicy } from '../../../../functions/core/table-config.js';
import { planKey } from '../../../../functions/core/workflow/layout.js';
import { runPartition } from '../../../../functions/core/workflow/run.js';
import { ManualClock } from '../../../../functions/ports/clock.js';
import { defaultParquetEngine } from '../../../../functions/shared/parquet-engine.js';
import {
  type AppenderTable,
  appendHudiDeltaCommit,
  appendHudiInsert,
  createHudiMorTable,
  MOR_ROW_COLUMNS,
} from '../../../../functions/tools/sample-hudi.js';
import { type DuckDb, openDuckDb } from '../../../support/duckdb.js';
import { commitEventsOf, completedInstantNames } from '../../../support/hudi-commit-events.js';
import { hudiMergedView } from '../../../support/hudi-mor-view.js';
import { profilerOf } from '../../../support/profiler-deps.js';

const NOW = Date.UTC(2026, 11, 7, 12, 0, 0);
const DAY = 24 * 60 * 60_000;
const ROOT = 'trips';
const PARTITION = '10';
/** The appender's columns, as Hudi's snapshot view reads them (the view's rows are compared as multisets). */
const COLUMNS = MOR_ROW_COLUMNS;

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
    hudiCompactionDeltaCommits: 4,
    // No quiet window and no cooldown: only what is counted can keep a run from starting (or make one loop).
    policy: { quietMinutes: 0, cooldownMinutes: 0 },
  },
]);
const POLICIES = new Map([['trips', resolveTablePolicy(TABLES[0] as (typeof TABLES)[number])]]);

let db: DuckDb;
const dirs: string[] = [];
beforeAll(async () => {
  db = await openDuckDb();
});
afterAll(() => db.close());
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

const commitEvent = commitEventsOf(TABLES, POLICIES, ROOT, NOW);
/** The completed write instants of the timeline, oldest first (each raised one event). */
const completedNames = (table: AppenderTable) =>
  completedInstantNames(table.store, ROOT, table.version, ['deltacommit', 'commit']);

/** The profiler's dependencies as the deployment builds them: the table's format bound to its settings. */
function profiler(store: LocalObjectStore) {
  return profilerOf(TABLES, POLICIES, store);
}

/** A Merge-on-Read table with two file groups in the partition, both updated by `updates` delta commits. */
async function streamingTable(version: 6 | 8, updates: number) {
  const dir = await mkdtemp(join(tmpdir(), 'lc-hudi-mor-trigger-'));
  dirs.push(dir);
  const store = new LocalObjectStore(dir);
  const table = await createHudiMorTable(store, ROOT, version, '20261201000000000');
  await appendHudiInsert(table, PARTITION, 5);
  await appendHudiInsert(table, PARTITION, 5);
  for (let i = 0; i < updates; i += 1) await appendHudiDeltaCommit(table, PARTITION, { fraction: 0.4 });
  return { dir, store, table };
}

describe.each([6, 8] as const)(
  'the trigger of a version %i Merge-on-Read table whose slices all have log files',
  (version) => {
    it('is not due below the delta-commit trigger, and then counts nothing and starts no run, whatever the redeliveries and sweeps', async () => {
      // Prepare: 2 inserts and 1 delta commit of updates: 3 delta commits < 4, every live slice with a log file
      const { store, table } = await streamingTable(version, 1);
      const state = await readHudiTable(store, ROOT);
      const { stats, starter, deps } = profiler(store);
      const names = await completedNames(table);

      // Act: every event, then every event again reversed and duplicated, then sweeps a day apart
      const first = (
        await profileCommits(
          deps,
          names.map((n) => commitEvent(version, n)),
          NOW,
        )
      ).get('trips');
      const again = (
        await profileCommits(
          deps,
          [...names].reverse().flatMap((n) => [commitEvent(version, n), commitEvent(version, n)]),
          NOW,
        )
      ).get('trips');
      const sweeps = [];
      for (let day = 1; day <= 3; day += 1)
        sweeps.push(await sweepTable({ stats, starter, policies: POLICIES }, 'trips', NOW + day * DAY));

      // Assess
      expect(state.partitions.flatMap((p) => p.liveSlices).every((s) => s.logFiles.length > 0)).toBe(true);
      expect(compactionDueIn(state, PARTITION, 4)).toEqual({
        due: false,
        reason:
          '3 delta commit(s) wrote to the partition since its last compaction < 4 (hudiCompactionDeltaCommits)',
      });
      expect(first).toMatchObject({ ok: true, mode: { kind: 'rebuild' } });
      expect(again).toMatchObject({ ok: true });
      expect(await stats.get({ table: 'trips', partition: PARTITION })).toBeUndefined();
      expect(sweeps.flatMap((s) => s.due)).toEqual([]);
      expect(starter.starts).toEqual([]);
    });

    it('counts the due slices once the trigger is met and starts one run, which compacts with the same rows; the compaction leaves nothing due', async () => {
      // Prepare: a 4th delta commit meets the trigger (2 slices, each a base file and 2 log files)
      const { dir, store, table } = await streamingTable(version, 2);
      const state = await readHudiTable(store, ROOT);
      const before = await hudiMergedView(db, dir, ROOT, COLUMNS);
      const { stats, starter, deps } = profiler(store);
      const names = await completedNames(table);
      const ref = { table: 'trips', partition: PARTITION };

      // Act: the events in reverse, then all of them again with duplicates
      await profileCommits(
        deps,
        [...names].reverse().map((n) => commitEvent(version, n)),
        NOW,
      );
      await profileCommits(
        deps,
        [...names, ...names].map((n) => commitEvent(version, n)),
        NOW,
      );
      const scheduled = await stats.get(ref);
      //      the run it started, through the workflow's own steps
      const clock = new ManualClock(NOW);
      const run = buildRunContext(
        { name: 'trips', prefix: ROOT, bucket: 'local', format: 'hudi' },
        PARTITION,
        { quietMinutes: 0, trigger: 'profiler' },
        { executionName: starter.starts[0] ?? 'none', startedAt: NOW },
      );
      const result = await runPartition(
        {
          store,
          journal: new MemoryJournal(),
          clock,
          engine: defaultParquetEngine,
          leases: new MemoryLeases(),
          format: formatForTable(TABLES, 'trips', {}),
          wait: async () => {},
        },
        run,
        { plan: { inlineGroupLimit: 100, compactMemoryMb: 1024 } },
      );
      //      its end releases the partition (as finalize does), and the compaction's commit event arrives
      await stats.release(ref, scheduled?.generation ?? 0, { lastCompactedAt: NOW });
      const compacted = (await completedNames(table)).filter((n) => !names.includes(n));
      await profileCommits(
        deps,
        compacted.map((n) => commitEvent(version, n)),
        NOW + 60_000,
      );
      const sweep = await sweepTable({ stats, starter, policies: POLICIES }, 'trips', NOW + DAY);

      // Assess: counted and started once
      const due = compactionDueIn(state, PARTITION, 4);
      expect(due.due).toBe(true);
      const files = due.due ? due.slices.flatMap((s) => [s.base, ...s.logs]) : [];
      expect(files).toHaveLength(6);
      expect(scheduled).toMatchObject({
        state: 'scheduled',
        fileCount: 6,
        smallCount: 6,
        totalBytes: files.reduce((n, f) => n + f.size, 0),
      });
      expect(starter.starts).toHaveLength(1);
      //         the run compacted the partition, same rows
      expect(result.summary.status, JSON.stringify(result.summary)).toBe('SUCCEEDED');
      const plan = partitionPlanSchema.parse(
        JSON.parse(new TextDecoder().decode(await store.get(planKey(run.workRoot, run.runId)))),
      );
      expect(plan.formatState?.hudiService).toBe('compaction');
      expect(plan.groups).toHaveLength(2);
      expect(await hudiMergedView(db, dir, ROOT, COLUMNS)).toEqual(before);
      const after = await readHudiTable(store, ROOT);
      expect(after.partitions.flatMap((p) => p.liveSlices).every((s) => s.logFiles.length === 0)).toBe(true);
      //         and nothing is due after it: the new base files are two, below minInputFiles; no second run
      expect(compacted.filter((n) => n.endsWith('.commit'))).toHaveLength(1);
      expect(compactionDueIn(after, PARTITION, 4).due).toBe(false);
      expect(await stats.get(ref)).toMatchObject({ state: 'idle', fileCount: 2, smallCount: 2 });
      expect(sweep.due.map((o) => o.action)).not.toContain('started');
      expect(starter.starts).toHaveLength(1);
    });

    it('starts a due partition of one file slice, fewer files than minInputFiles, and one whose compaction a failed run left at its plan', async () => {
      // Prepare: one file group, an insert and 3 delta commits of updates: due (4 ≥ 4), its slice a base file and 3
      // log files — 4 files, below the policy's minInputFiles of 5. A copy of it with the compaction scheduled by a
      // run that then failed (its plan left on the timeline, as after a lock timeout at completion).
      const tables = [];
      for (const leftAtPlan of [false, true]) {
        const dir = await mkdtemp(join(tmpdir(), 'lc-hudi-mor-trigger-'));
        dirs.push(dir);
        const store = new LocalObjectStore(dir);
        const table = await createHudiMorTable(store, ROOT, version, '20261201000000000');
        await appendHudiInsert(table, PARTITION, 5);
        for (let i = 0; i < 3; i += 1) await appendHudiDeltaCommit(table, PARTITION, { fraction: 0.4 });
        // The merged view before any compaction is scheduled (the view sets a pending compaction's groups aside).
        const before = await hudiMergedView(db, dir, ROOT, COLUMNS);
        if (leftAtPlan)
          await expect(
            compactHudiMergeOnRead(
              {
                store,
                engine: defaultParquetEngine,
                clock: new ManualClock(NOW),
                coordination: {
                  localZone: 'UTC',
                  lockFor: () =>
                    new StorageBasedHudiLock({ store, tableRoot: ROOT, clock: new ManualClock(NOW) }),
                },
              },
              ROOT,
              { deltaCommits: 4, crashAfter: 'scheduled' },
            ),
          ).rejects.toThrow(/crash after scheduling/);
        tables.push({ dir, store, table, before });
      }
      const ref = { table: 'trips', partition: PARTITION };

      // Act: each table's events, then the run the trigger started
      const outcomes = [];
      for (const t of tables) {
        const { stats, starter, deps } = profiler(t.store);
        const names = await completedNames(t.table);
        await profileCommits(
          deps,
          names.map((n) => commitEvent(version, n)),
          NOW,
        );
        const scheduled = await stats.get(ref);
        const result = await runPartition(
          {
            store: t.store,
            journal: new MemoryJournal(),
            clock: new ManualClock(NOW),
            engine: defaultParquetEngine,
            leases: new MemoryLeases(),
            format: formatForTable(TABLES, 'trips', {}),
            wait: async () => {},
          },
          buildRunContext(
            { name: 'trips', prefix: ROOT, bucket: 'local', format: 'hudi' },
            PARTITION,
            { quietMinutes: 0, trigger: 'profiler' },
            { executionName: starter.starts[0] ?? 'none', startedAt: NOW },
          ),
          { plan: { inlineGroupLimit: 100, compactMemoryMb: 1024 } },
        );
        outcomes.push({ scheduled, starts: starter.starts.length, result });
      }

      // Assess: both counted 4 due files (< minInputFiles 5) and started one run, which compacted with the same rows
      expect(POLICIES.get('trips')?.minInputFiles).toBe(5);
      for (const [i, o] of outcomes.entries()) {
        const t = tables[i] as (typeof tables)[number];
        expect(o.scheduled, `table ${i}`).toMatchObject({ state: 'scheduled', fileCount: 4, dueCount: 4 });
        expect(o.scheduled?.lastDecision?.reasons).toContain(
          "a table service of the table's format is due on 4 file(s): size checks not applied (minInputFiles 5)",
        );
        expect(o.starts, `table ${i}`).toBe(1);
        expect(o.result.summary.status, JSON.stringify(o.result.summary)).toBe('SUCCEEDED');
        const after = await readHudiTable(t.store, ROOT);
        expect(after.timeline.pendingPlans).toEqual([]);
        expect(after.timeline.completedWrites.filter((w) => w.metadata.compacted)).toHaveLength(1);
        expect(await hudiMergedView(db, t.dir, ROOT, COLUMNS)).toEqual(t.before);
      }
    });

    it('counts the file groups of a pending compaction wholly in the partition, whose run finishes it, same rows', async () => {
      // Prepare: a compaction of the partition's two slices scheduled by a run that died right after (its requested
      // and inflight files left on the timeline, their file groups set aside from the live slices)
      const { dir, store, table } = await streamingTable(version, 2);
      const before = await hudiMergedView(db, dir, ROOT, COLUMNS);
      const format = formatForTable(TABLES, 'trips', {});
      const coordination = {
        localZone: 'UTC',
        lockFor: () => new StorageBasedHudiLock({ store, tableRoot: ROOT, clock: new ManualClock(NOW) }),
      };
      await expect(
        compactHudiMergeOnRead(
          { store, engine: defaultParquetEngine, clock: new ManualClock(NOW), coordination },
          ROOT,
          { deltaCommits: 4, crashAfter: 'scheduled' },
        ),
      ).rejects.toThrow(/crash after scheduling/);
      const pending = (await readHudiTable(store, ROOT)).timeline.pendingPlans;
      const { stats, starter, deps } = profiler(store);
      const names = await completedNames(table);
      const ref = { table: 'trips', partition: PARTITION };

      // Act: every event twice; then the run it started, and the events of what the run completed
      await profileCommits(
        deps,
        [...names, ...names].map((n) => commitEvent(version, n)),
        NOW,
      );
      const scheduled = await stats.get(ref);
      const result = await runPartition(
        {
          store,
          journal: new MemoryJournal(),
          clock: new ManualClock(NOW),
          engine: defaultParquetEngine,
          leases: new MemoryLeases(),
          format,
          wait: async () => {},
        },
        buildRunContext(
          { name: 'trips', prefix: ROOT, bucket: 'local', format: 'hudi' },
          PARTITION,
          { quietMinutes: 0, trigger: 'profiler' },
          { executionName: starter.starts[0] ?? 'none', startedAt: NOW },
        ),
        { plan: { inlineGroupLimit: 100, compactMemoryMb: 1024 } },
      );
      await stats.release(ref, scheduled?.generation ?? 0, { lastCompactedAt: NOW });
      const completed = (await completedNames(table)).filter((n) => !names.includes(n));
      await profileCommits(
        deps,
        completed.map((n) => commitEvent(version, n)),
        NOW + 60_000,
      );

      // Assess: the pending plan's two file groups (a base file and two logs each) counted and started once; the run
      // finished that very instant with the same rows; then nothing is due
      expect(pending.map((p) => `${p.kind} ${p.fileGroups.length}`)).toEqual(['compaction 2']);
      expect(scheduled).toMatchObject({ state: 'scheduled', fileCount: 6, smallCount: 6 });
      expect(starter.starts).toHaveLength(1);
      expect(result.summary.status, JSON.stringify(result.summary)).toBe('SUCCEEDED');
      const after = await readHudiTable(store, ROOT);
      expect(after.timeline.pendingPlans).toEqual([]);
      expect(
        after.timeline.completedWrites.filter((w) => w.metadata.compacted).map((w) => w.instant.time),
      ).toEqual([pending[0]?.instant.time]);
      expect(await hudiMergedView(db, dir, ROOT, COLUMNS)).toEqual(before);
      expect(await stats.get(ref)).toMatchObject({ state: 'idle', fileCount: 2 });
      expect(starter.starts).toHaveLength(1);
    });
  },
);
