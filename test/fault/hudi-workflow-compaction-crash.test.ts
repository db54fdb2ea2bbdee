// Crash injection into Merge-on-Read compaction as the workflow runs it (compaction-workflow.ts, through the
// workflow's steps in this process: plan → compact → verify → commit → finalize), on a table Hudi 0.x wrote
// (mor_v6_trips_8i1u), under Hudi's storage lock: the process dies before or after a request — the first request of
// each step that writes (the lock, the plan, the journaled plan's requested and inflight files, the staged log rows,
// the MERGE marker, the staged output, its copy into the table, the completed commit, the markers' removal) and
// seeded-random others — with its journal dying with it. Then the sweep settles the dead run and a new run goes.
// While dead, readers see exactly the merged view they had before (our pending compaction set aside); after recovery
// the same rows from one completed compaction, nothing pending, nothing left under `.hoodie/.temp/`. And beside another
// partition's run (tables of versions 6 and 8 the appender writes): a run killed with its compaction pending, the other
// partition compacts through what it left (its own compaction pending at the same time), and the sweep and a re-run
// finish the first.
import { mkdtemp, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { MemoryJournal } from '../../functions/adapters/memory-journal.js';
import { MemoryLeases } from '../../functions/adapters/memory-leases.js';
import { hudiTable } from '../../functions/core/formats/hudi/format.js';
import { readHudiTable } from '../../functions/core/formats/hudi/table-state.js';
import type { TableFormat } from '../../functions/core/formats/table-format.js';
import { buildRunContext, type RunContext } from '../../functions/core/run-input.js';
import { runPartition } from '../../functions/core/workflow/run.js';
import { settleAfterDeadRun } from '../../functions/core/workflow/settle.js';
import { ManualClock } from '../../functions/ports/clock.js';
import type { Journal } from '../../functions/ports/journal.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';
import { defaultParquetEngine } from '../../functions/shared/parquet-engine.js';
import {
  appendHudiDeltaCommit,
  appendHudiInsert,
  createHudiMorTable,
  MOR_ROW_COLUMNS,
} from '../../functions/tools/sample-hudi.js';
import { mulberry32 } from '../../functions/tools/sample-lake.js';
import type { StoreCall } from '../support/crash-store.js';
import { crashingStore, dyingJournal } from '../support/crashing-store.js';
import { type DuckDb, openDuckDb } from '../support/duckdb.js';
import { copyHudiFixture, hudiMergedView, hudiVisibleView } from '../support/hudi-mor-view.js';
import { soakFactor } from '../support/trials.js';

const NOW = Date.UTC(2026, 11, 1);
/** Past the storage lock's 5-minute validity, which a dead process never released. */
const LATER = NOW + 10 * 60_000;
const ROOT = 'trips';
const PARTITION = 'city=san_francisco';
const FIXTURE = 'mor_v6_trips_8i1u';

/** The first request of each writing step, recognised by what it touches. */
const STEPS: readonly { readonly name: string; readonly matches: (c: StoreCall) => boolean }[] = [
  { name: 'take the lock', matches: (c) => c.method === 'put' && c.key.includes('.hoodie/.locks') },
  { name: 'store the plan', matches: (c) => c.method === 'put' && c.key.includes('_lake-compactor/plans/') },
  {
    name: 'write the requested plan',
    matches: (c) => c.method === 'put' && c.key.endsWith('.compaction.requested'),
  },
  {
    name: 'write the inflight',
    matches: (c) => c.method === 'put' && c.key.endsWith('.compaction.inflight'),
  },
  {
    name: 'stage the log rows',
    matches: (c) => c.method === 'put' && c.key.includes('lake-compactor-staging'),
  },
  { name: 'write the marker', matches: (c) => c.method === 'put' && c.key.endsWith('.marker.MERGE') },
  {
    name: 'write the staged output',
    matches: (c) =>
      (c.method === 'put' || c.method === 'putStream') && c.key.includes('_lake-compactor/staging/'),
  },
  { name: 'copy the output into the table', matches: (c) => c.method === 'copy' },
  { name: 'write the completed commit', matches: (c) => c.method === 'put' && /\.commit$/.test(c.key) },
  { name: 'remove the markers', matches: (c) => c.method === 'deleteMany' && c.key.includes('.marker.') },
];

let db: DuckDb;
const dirs: string[] = [];
beforeAll(async () => {
  db = await openDuckDb();
});
afterAll(() => db.close());
afterEach(async () => {
  const { rm } = await import('node:fs/promises');
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

function boundFormat(): TableFormat {
  const forTable = hudiTable.forTable;
  if (forTable === undefined) throw new Error('the Hudi format binds per table');
  return forTable(
    {
      hudiLock: { provider: 'storage' },
      hudiIndexType: 'BLOOM',
      hudiTimezone: 'UTC',
      hudiCompactionDeltaCommits: 1,
    },
    {},
  );
}

function runOf(runId: string, startedAt: number, partition = PARTITION): RunContext {
  return buildRunContext(
    { name: 'trips', prefix: ROOT, bucket: 'local', format: 'hudi' },
    partition,
    { force: true, quietMinutes: 0, trigger: 'operator' },
    { executionName: runId, startedAt },
  );
}

async function runWith(store: ObjectStore, journal: Journal, run: RunContext, at: number) {
  return runPartition(
    {
      store,
      journal,
      clock: new ManualClock(at),
      engine: defaultParquetEngine,
      leases: new MemoryLeases(),
      format: boundFormat(),
      wait: async () => {},
    },
    run,
    { plan: { inlineGroupLimit: 100, compactMemoryMb: 1024 } },
  );
}

/** The sweep's settle of the dead run `run-1` of `partition`, once its lock lapsed. */
async function settleDeadRun(store: ObjectStore, journal: Journal, partition: string) {
  return settleAfterDeadRun(
    { store, journal, clock: new ManualClock(LATER), engine: defaultParquetEngine, format: boundFormat() },
    { table: 'trips', partition },
    'run-1',
  );
}

async function compactionCommits(dir: string): Promise<string[]> {
  const state = await readHudiTable(new LocalObjectStore(dir), ROOT);
  return state.timeline.completedWrites.filter((w) => w.metadata.compacted).map((w) => w.instant.time);
}

async function tempFiles(dir: string): Promise<string[]> {
  return (
    await readdir(join(dir, ROOT, '.hoodie', '.temp'), { recursive: true, withFileTypes: true }).catch(
      () => [],
    )
  )
    .filter((d) => d.isFile())
    .map((d) => d.name);
}

describe('Merge-on-Read compaction through the workflow steps, killed at any request', () => {
  it('shows the old view while dead and, after the sweep and a re-run, the same rows from one compaction', async () => {
    // Prepare: the requests of a clean run, and the crash points: each writing step's first request, and random ones.
    const probe = await copyHudiFixture(FIXTURE, ROOT, dirs);
    const calls: StoreCall[] = [];
    const probing = crashingStore(new LocalObjectStore(probe), Number.MAX_SAFE_INTEGER, 'before', calls);
    const clean = await runWith(probing.store, new MemoryJournal(), runOf('probe', NOW), NOW);
    expect(clean.summary.status).toBe('SUCCEEDED');
    const points = STEPS.map((s) => {
      const index = calls.findIndex(s.matches);
      expect(index, s.name).toBeGreaterThanOrEqual(0);
      return { at: index + 1, name: s.name };
    });
    const random = mulberry32(28);
    for (let i = 0; i < 4; i++) {
      const at = 1 + Math.floor(random() * calls.length);
      points.push({ at, name: `request ${at} (${calls[at - 1]?.method} ${calls[at - 1]?.key})` });
    }

    for (const point of points)
      for (const when of ['before', 'after'] as const) {
        const dir = await copyHudiFixture(FIXTURE, ROOT, dirs);
        const before = await hudiMergedView(db, dir, ROOT);
        const existing = await compactionCommits(dir);
        const journal = new MemoryJournal();
        const dying = crashingStore(new LocalObjectStore(dir), point.at, when);

        // Act: the run dies; the sweep settles it; a new run goes.
        await runWith(dying.store, dyingJournal(journal, dying.crashed), runOf('run-1', NOW), NOW).catch(
          () => undefined,
        );
        await dying.quiesce();
        const whileDead = await hudiVisibleView(db, dir, ROOT, '.hoodie', dirs);
        const live = new LocalObjectStore(dir);
        const sweep = await settleDeadRun(live, journal, PARTITION);
        const rerun = await runWith(live, journal, runOf('run-2', LATER + 60_000), LATER + 60_000);

        // Assess
        const label = `${when} ${point.name}`;
        expect(dying.crashed(), label).toBe(true);
        expect(whileDead, label).toEqual(before);
        expect(sweep.unsettled, label).toEqual([]);
        expect(rerun.summary.status, `${label}: ${JSON.stringify(rerun.summary.firstError)}`).toBe(
          'SUCCEEDED',
        );
        const state = await readHudiTable(live, ROOT);
        expect(state.timeline.pendingPlans, label).toEqual([]);
        expect(
          (await compactionCommits(dir)).filter((t) => !existing.includes(t)),
          label,
        ).toHaveLength(1);
        expect(await hudiMergedView(db, dir, ROOT), label).toEqual(before);
        expect(await tempFiles(dir), label).toEqual([]);
      }
  }, 600_000);

  it("a run killed beside another partition's: the other compacts through the dead run's leftovers, then the sweep and a re-run finish the first; each compaction once, the same rows", async () => {
    // Prepare: a table of two partitions, each due (two file groups, a delta commit of updates); the crash points:
    // the first request of the steps that leave something of T behind. The quick run kills after each point once,
    // table versions 6 and 8 in turn (both layouts, every point); a soak run (LAKE_COMPACTOR_SOAK) every point on
    // both versions, before and after the request.
    const tableOf = async (version: 6 | 8) => {
      const dir = await mkdtemp(join(tmpdir(), 'lc-hudi-two-crash-'));
      dirs.push(dir);
      const table = await createHudiMorTable(new LocalObjectStore(dir), ROOT, version);
      for (const partition of ['1', '2']) {
        await appendHudiInsert(table, partition, 4);
        await appendHudiInsert(table, partition, 4);
        await appendHudiDeltaCommit(table, partition, { fraction: 0.5 });
      }
      return dir;
    };
    const pointsOf = async (version: 6 | 8) => {
      const calls: StoreCall[] = [];
      const probing = crashingStore(
        new LocalObjectStore(await tableOf(version)),
        Number.MAX_SAFE_INTEGER,
        'before',
        calls,
      );
      expect(
        (await runWith(probing.store, new MemoryJournal(), runOf('probe', NOW, '1'), NOW)).summary.status,
      ).toBe('SUCCEEDED');
      return STEPS.filter((s) =>
        [
          'write the inflight',
          'write the marker',
          'copy the output into the table',
          'write the completed commit',
        ].includes(s.name),
      ).map((s) => ({ at: calls.findIndex(s.matches) + 1, name: s.name, version }));
    };
    const byVersion = { 6: await pointsOf(6), 8: await pointsOf(8) };
    const soak = soakFactor() > 1;
    const trials = byVersion[6].flatMap((p6, i) => {
      const p8 = byVersion[8][i];
      if (p8 === undefined) return [];
      if (!soak) return [{ point: i % 2 === 0 ? p6 : p8, when: 'after' as const }];
      return [p6, p8].flatMap((point) => (['before', 'after'] as const).map((when) => ({ point, when })));
    });
    expect([...byVersion[6], ...byVersion[8]].every((p) => p.at > 0)).toBe(true);
    expect(new Set(trials.map((t) => t.point.name)).size).toBe(4);
    expect(new Set(trials.map((t) => t.point.version))).toEqual(new Set([6, 8]));

    for (const { point, when } of trials) {
      const dir = await tableOf(point.version);
      const before = await hudiMergedView(db, dir, ROOT, MOR_ROW_COLUMNS);
      const journal = new MemoryJournal();
      const dying = crashingStore(new LocalObjectStore(dir), point.at, when);
      const live = new LocalObjectStore(dir);

      // Act: partition 1's run dies; partition 2's run goes through what it left (once the dead run's lock lapsed,
      // as the first test's re-run does); the sweep settles the dead run, and partition 1 runs again
      await runWith(dying.store, dyingJournal(journal, dying.crashed), runOf('run-1', NOW, '1'), NOW).catch(
        () => undefined,
      );
      await dying.quiesce();
      const other = await runWith(live, journal, runOf('run-2', LATER, '2'), LATER);
      const sweep = await settleDeadRun(live, journal, '1');
      const rerun = await runWith(live, journal, runOf('run-3', LATER + 60_000, '1'), LATER + 60_000);

      // Assess
      const label = `v${point.version}, ${when} ${point.name}`;
      expect(dying.crashed(), label).toBe(true);
      expect(other.summary.status, `${label}: ${JSON.stringify(other.summary.firstError)}`).toBe('SUCCEEDED');
      expect(sweep.unsettled, label).toEqual([]);
      expect(rerun.summary.status, `${label}: ${JSON.stringify(rerun.summary.firstError)}`).toBe('SUCCEEDED');
      const state = await readHudiTable(live, ROOT);
      expect(state.timeline.pendingPlans, label).toEqual([]);
      expect(await compactionCommits(dir), label).toHaveLength(2);
      expect(
        state.partitions.flatMap((p) => p.liveSlices).every((sl) => sl.logFiles.length === 0),
        label,
      ).toBe(true);
      expect(await hudiMergedView(db, dir, ROOT, MOR_ROW_COLUMNS), label).toEqual(before);
      expect(await tempFiles(dir), label).toEqual([]);
    }
  }, 600_000);
});
