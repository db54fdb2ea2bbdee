// A Merge-on-Read file slice whose logs lake-compactor's merge refuses by name (here an HFILE_DATA block, which
// belongs to Hudi's metadata table) through the workflow's own steps, on tables Hudi 0.x (v6) and 1.x (v8) wrote,
// under Hudi's storage lock. The plan step runs the compact step's merge dry before it schedules anything, so the
// refusal leaves every byte of the table as it was — no plan Hudi's writers would then have to finish — and names
// the block and what to do. Before, the same slice was scheduled and then refused at the compact step, leaving a plan
// no run of ours could finish. The failed run leaves the partition needs-attention with the refusal, not idle, so no
// trigger restarts the same failing run on every sweep pass; a second run is refused until an operator settles it,
// and once the log is dealt with (here: the refused block removed), the settle run clears the partition and the next
// run compacts with the same merged rows. A plan refused at the compact step is unscheduled when it is ours: minted
// by the failing run, or carrying our mark (plan-mark.ts) from a run of ours that died — a Hudi writer's plan (no
// mark) is kept byte for byte.
import { createHash } from 'node:crypto';
import { readdir, readFile, rm } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { MemoryJournal } from '../../functions/adapters/memory-journal.js';
import { MemoryLeases } from '../../functions/adapters/memory-leases.js';
import { hudiTable } from '../../functions/core/formats/hudi/format.js';
import { planMarkOf } from '../../functions/core/formats/hudi/plan-mark.js';
import { readHudiTable } from '../../functions/core/formats/hudi/table-state.js';
import {
  COMPACTION_PLAN_SCHEMA,
  type CompactionPlan,
  compactionRequestedContent,
  decodeTimelineAvro,
} from '../../functions/core/formats/hudi/timeline-writer/index.js';
import type { TableFormat } from '../../functions/core/formats/table-format.js';
import { buildRunContext } from '../../functions/core/run-input.js';
import { runPartition } from '../../functions/core/workflow/run.js';
import { settleAfterDeadRun } from '../../functions/core/workflow/settle.js';
import { ManualClock } from '../../functions/ports/clock.js';
import type { Journal } from '../../functions/ports/journal.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';
import { defaultParquetEngine } from '../../functions/shared/parquet-engine.js';
import type { StoreCall } from '../support/crash-store.js';
import { crashingStore, dyingJournal } from '../support/crashing-store.js';
import { type DuckDb, openDuckDb } from '../support/duckdb.js';
import {
  appendRefusedBlock,
  copyHudiFixture,
  hudiMergedView,
  TRIPS_COLUMNS,
} from '../support/hudi-mor-view.js';

const NOW = Date.UTC(2026, 11, 7, 12);
/** Past the storage lock's 5-minute validity, which a dead process never released. */
const LATER = NOW + 10 * 60_000;
const ROOT = 'trips';

let db: DuckDb;
const dirs: string[] = [];
beforeAll(async () => {
  db = await openDuckDb();
});
afterAll(() => db?.close());
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

const CASES = [
  { fixture: 'mor_v6_trips_8i1u', version: 6, partition: 'city=san_francisco' },
  { fixture: 'mor_v8_trips_8i3u1d', version: 8, partition: 'city=sao_paulo' },
] as const;

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

/** Every file under the table root and its SHA-256. */
async function tableBytes(dir: string): Promise<Record<string, string>> {
  const root = join(dir, ROOT);
  const out: Record<string, string> = {};
  for (const entry of await readdir(root, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const file = join(entry.parentPath, entry.name);
    out[relative(root, file)] = createHash('sha256')
      .update(await readFile(file))
      .digest('hex');
  }
  return out;
}

function runOf(runId: string, partition: string, settle = false) {
  return buildRunContext(
    { name: 'trips', prefix: ROOT, bucket: 'local', format: 'hudi' },
    partition,
    { force: true, quietMinutes: 0, trigger: 'operator', ...(settle ? { settle: true } : {}) },
    { executionName: runId, startedAt: NOW },
  );
}

/** One run of the workflow's steps on `partition` at `at`, `hook` called once the plan is made. */
function runCase(
  partition: string,
  store: ObjectStore,
  journal: Journal,
  runId: string,
  at: number,
  hook?: () => Promise<void>,
) {
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
    runOf(runId, partition),
    { plan: { inlineGroupLimit: 100, compactMemoryMb: 1024 } },
    hook === undefined ? undefined : { planned: hook },
  );
}

describe('a Merge-on-Read slice whose logs the merge refuses, through the workflow steps', () => {
  for (const c of CASES)
    it(`v${c.version}: refused before the plan, every byte unchanged, the partition needs-attention (no restart loop); once the log is fixed a settle clears it and the compaction keeps the merged rows`, async () => {
      // Prepare
      const dir = await copyHudiFixture(c.fixture, ROOT, dirs);
      const store = new LocalObjectStore(dir);
      const rowsBefore = await hudiMergedView(db, dir, ROOT, TRIPS_COLUMNS);
      const refused = await appendRefusedBlock(store, ROOT, c.partition);
      const bytesBefore = await tableBytes(dir);
      const leases = new MemoryLeases();
      const deps = {
        store,
        journal: new MemoryJournal(),
        clock: new ManualClock(NOW),
        engine: defaultParquetEngine,
        leases,
        format: boundFormat(),
        wait: async () => {},
      };
      const options = { plan: { inlineGroupLimit: 100, compactMemoryMb: 1024 } };
      const settle = (r: Promise<unknown>) =>
        r.then(
          (value) => ({ ok: true as const, value }),
          (error: unknown) => ({ ok: false as const, error }),
        );

      // Act: a run, then a second one as the next trigger would start it
      const first = await settle(runPartition(deps, runOf('run-1', c.partition), options));
      const bytesAfterFirst = await tableBytes(dir);
      const item = leases.item({ table: 'trips', partition: c.partition });
      const stateAfterFirst = { state: item.state, reason: item.attention?.reason };
      const second = await settle(runPartition(deps, runOf('run-2', c.partition), options));

      // Assess: the plan step refused by name before anything was written; the partition waits for an operator
      expect(first.ok).toBe(false);
      const error = (first as { error: Error }).error;
      expect(error.name).toBe('HudiLogUnsupportedError');
      expect(error.message).toContain('an HFILE_DATA block');
      expect(error.message).toContain(refused.key.slice(refused.key.lastIndexOf('/') + 1));
      expect(error.message).toContain("leave this file group to Hudi's own compactor");
      expect(bytesAfterFirst).toEqual(bytesBefore);
      expect((await readHudiTable(store, ROOT)).timeline.pendingPlans).toEqual([]);
      expect(stateAfterFirst.state).toBe('needs-attention');
      expect(stateAfterFirst.reason).toContain('HudiLogUnsupportedError');
      expect(second.ok).toBe(false);
      expect((second as { error: Error }).error.name).toBe('PartitionNeedsAttentionError');
      expect(await tableBytes(dir)).toEqual(bytesBefore);

      // Act: the log fixed (the refused block gone), an operator's settle run, then a run
      await store.put(refused.key, refused.before);
      const settled = await runPartition(deps, runOf('settle-1', c.partition, true), options);
      const rerun = await runPartition(deps, runOf('run-3', c.partition), options);

      // Assess: the partition is free again and compacts with the merged view's rows
      expect(settled.summary.status).toBe('SUCCEEDED');
      expect(rerun.summary.status, JSON.stringify(rerun.summary)).toBe('SUCCEEDED');
      expect(rerun.summary.groupsDone).toBeGreaterThan(0);
      const after = await readHudiTable(store, ROOT);
      expect(after.timeline.pendingPlans).toEqual([]);
      expect(after.timeline.completedWrites.some((w) => w.metadata.compacted)).toBe(true);
      expect(await hudiMergedView(db, dir, ROOT, TRIPS_COLUMNS)).toEqual(rowsBefore);
    }, 120_000);
});

/** The first record of a compaction plan file, as Hudi's HoodieCompactionPlan schema decodes it. */
function firstPlan(bytes: Uint8Array): { extraMetadata?: unknown } {
  return decodeTimelineAvro(bytes, COMPACTION_PLAN_SCHEMA).records[0] as { extraMetadata?: unknown };
}

/** The same compaction plan with our mark taken out: a plan as a Hudi writer schedules it. */
function withoutMark(bytes: Uint8Array): Uint8Array {
  const plan = firstPlan(bytes) as unknown as CompactionPlan;
  const extra = Object.fromEntries(
    Object.entries(plan.extraMetadata ?? {}).filter(([k]) => !k.startsWith('lake-compactor.')),
  );
  return compactionRequestedContent({ ...plan, extraMetadata: extra });
}

/** The compaction plans pending on the timeline, by instant and state (requested or inflight). */
async function pendingCompactions(store: ObjectStore): Promise<string[]> {
  const state = await readHudiTable(store, ROOT);
  return state.timeline.pendingPlans
    .filter((p) => p.kind === 'compaction')
    .map((p) => `${p.instant.time}.${p.instant.state}`);
}

describe('a plan of ours the merge refuses at the compact step (a refused block committed below T after the check)', () => {
  const UNSCHEDULE = [
    { ...CASES[0], logUnderT: false },
    { ...CASES[1], logUnderT: false },
    { ...CASES[0], logUnderT: true },
  ] as const;
  for (const c of UNSCHEDULE)
    it(`v${c.version}${c.logUnderT ? ' with a log written under base instant T' : ''}: ${c.logUnderT ? "our plan is unscheduled and that log renamed into the slice it extends, as Hudi's unscheduleCompactionPlan does" : "our plan is unscheduled as Hudi's unscheduleCompactionPlan does, every byte of the table as before"}; the partition needs-attention, and after the log is fixed a settle and a run compact with the same merged rows`, async () => {
      // Prepare
      const dir = await copyHudiFixture(c.fixture, ROOT, dirs);
      const store = new LocalObjectStore(dir);
      const rowsBefore = await hudiMergedView(db, dir, ROOT, TRIPS_COLUMNS);
      const bytesBefore = await tableBytes(dir);
      const leases = new MemoryLeases();
      const deps = {
        store,
        journal: new MemoryJournal(),
        clock: new ManualClock(NOW),
        engine: defaultParquetEngine,
        leases,
        format: boundFormat(),
        wait: async () => {},
      };
      const options = { plan: { inlineGroupLimit: 100, compactMemoryMb: 1024 } };
      let refused: { key: string; before: Uint8Array } | undefined;
      let underT: string | undefined;

      // Act: once the plan step scheduled T, a refused block lands in a planned log (and, in one case, a v6 writer's
      // log of the same file group under base instant T)
      const failed = await runPartition(deps, runOf('run-1', c.partition), options, {
        planned: async () => {
          refused = await appendRefusedBlock(store, ROOT, c.partition);
          if (c.logUnderT) {
            const [t] = await pendingCompactions(store);
            const name = refused.key.slice(refused.key.lastIndexOf('/') + 1);
            const fileId = name.slice(1, name.indexOf('_'));
            underT = `${refused.key.slice(0, refused.key.lastIndexOf('/'))}/.${fileId}_${t?.slice(0, t.indexOf('.'))}.log.1_0-1-0`;
            await store.put(underT, new Uint8Array(0));
          }
        },
      });
      const pendingAfter = await pendingCompactions(store);
      const item = leases.item({ table: 'trips', partition: c.partition });
      const attention = { state: item.state, reason: item.attention?.reason };

      // Assess: the run failed naming the refusal; our plan is gone; every byte of the table as before but the
      // refused log — and, when a log was written under T, that log renamed after its slice's logs (Hudi's rule:
      // the next version of the base instant, Hudi's unknown write token); the partition waits for an operator
      expect(failed.summary.status).toBe('FAILED');
      expect(failed.summary.firstError?.error).toBe('HudiLogUnsupportedError');
      expect(pendingAfter).toEqual([]);
      expect(attention).toEqual({ state: 'needs-attention', reason: expect.stringContaining('HFILE_DATA') });
      if (refused === undefined) throw new Error('the plan step did not run');
      const restored = await tableBytes(dir);
      const logName = relative(ROOT, refused.key);
      expect(restored[logName]).not.toBe(bytesBefore[logName]);
      // The storage lock's file stays after its release (Hudi's StorageBasedLockProvider leaves it, expired).
      const { '.hoodie/.locks/table_lock.json': lockFile, ...rest } = restored;
      expect(lockFile).toBeDefined();
      let renamed: string | undefined;
      if (underT !== undefined) {
        const name = refused.key.slice(refused.key.lastIndexOf('/') + 1);
        renamed = `${refused.key.slice(0, refused.key.lastIndexOf('/'))}/${name.replace(/\.log\.(\d+)_.*$/, (_m, v: string) => `.log.${Number(v) + 1}_1-0-1`)}`;
        expect(rest[relative(ROOT, renamed)]).toBe(
          createHash('sha256').update(new Uint8Array(0)).digest('hex'),
        );
        delete rest[relative(ROOT, renamed)];
      }
      expect({ ...rest, [logName]: bytesBefore[logName] }).toEqual(bytesBefore);

      // Act: the log fixed (the refused block and the extra log gone), an operator's settle run, then a run
      await store.put(refused.key, refused.before);
      if (renamed !== undefined) await store.deleteMany([{ key: renamed }]);
      const settled = await runPartition(deps, runOf('settle-1', c.partition, true), options);
      const rerun = await runPartition(deps, runOf('run-2', c.partition), options);

      // Assess: compacted (a new plan, or the kept one resumed), nothing pending, the merged rows unchanged
      expect(settled.summary.status).toBe('SUCCEEDED');
      expect(rerun.summary.status, JSON.stringify(rerun.summary)).toBe('SUCCEEDED');
      expect(rerun.summary.groupsDone).toBeGreaterThan(0);
      expect(await pendingCompactions(store)).toEqual([]);
      expect(await hudiMergedView(db, dir, ROOT, TRIPS_COLUMNS)).toEqual(rowsBefore);
    }, 120_000);
});

describe('unscheduling our refused plan, killed between its steps', () => {
  it('v8: dies after the inflight is rolled back, before the requested plan is deleted; the sweep finishes the unschedule, and once the log is fixed a run compacts with the same rows', async () => {
    // Prepare: a clean run's requests, to find the deletion of the requested plan
    const c = CASES[1];
    const probeDir = await copyHudiFixture(c.fixture, ROOT, dirs);
    const calls: StoreCall[] = [];
    const probing = crashingStore(new LocalObjectStore(probeDir), Number.MAX_SAFE_INTEGER, 'before', calls);
    const run = (
      store: ObjectStore,
      journal: Journal,
      runId: string,
      at: number,
      hook?: () => Promise<void>,
    ) => runCase(c.partition, store, journal, runId, at, hook);
    const probeLive = new LocalObjectStore(probeDir);
    await run(probing.store, new MemoryJournal(), 'probe', NOW, async () => {
      await appendRefusedBlock(probeLive, ROOT, c.partition);
    });
    const at = calls.findIndex(
      (call) => call.method === 'deleteMany' && call.key.endsWith('.compaction.requested'),
    );
    expect(at).toBeGreaterThanOrEqual(0);

    const dir = await copyHudiFixture(c.fixture, ROOT, dirs);
    const live = new LocalObjectStore(dir);
    const rowsBefore = await hudiMergedView(db, dir, ROOT, TRIPS_COLUMNS);
    const journal = new MemoryJournal();
    const dying = crashingStore(live, at + 1, 'before');
    let refused: { key: string; before: Uint8Array } | undefined;

    // Act: the run dies before the deletion; the sweep settles the dead run
    await run(dying.store, dyingJournal(journal, dying.crashed), 'run-1', NOW, async () => {
      refused = await appendRefusedBlock(live, ROOT, c.partition);
    }).catch(() => undefined);
    await dying.quiesce();
    const whileDead = await pendingCompactions(live);
    const sweep = await settleAfterDeadRun(
      {
        store: live,
        journal,
        clock: new ManualClock(LATER),
        engine: defaultParquetEngine,
        format: boundFormat(),
      },
      { table: 'trips', partition: c.partition },
      'run-1',
    );
    const afterSweep = await pendingCompactions(live);

    // Assess: dead with T rolled back to requested only; the sweep's settle removed our plan
    expect(dying.crashed()).toBe(true);
    expect(whileDead).toEqual([expect.stringMatching(/\.requested$/)]);
    expect(sweep.unsettled).toEqual([]);
    expect(afterSweep).toEqual([]);

    // Act: the log fixed, a run
    if (refused === undefined) throw new Error('the plan step did not run');
    await live.put(refused.key, refused.before);
    const rerun = await run(live, journal, 'run-2', LATER + 60_000);

    // Assess
    expect(rerun.summary.status, JSON.stringify(rerun.summary)).toBe('SUCCEEDED');
    expect(await pendingCompactions(live)).toEqual([]);
    expect(await hudiMergedView(db, dir, ROOT, TRIPS_COLUMNS)).toEqual(rowsBefore);
  }, 120_000);

  it("v6: a writer's log under T, the run dead right after the plan's delete, before that log is renamed: the sweep's settle renames it into its slice and removes the trace; once the log is fixed a run compacts with the same rows", async () => {
    // Prepare: a clean run's requests (with the same writer's log), to find the deletion of the requested plan
    const c = CASES[0];
    const run = (
      store: ObjectStore,
      journal: Journal,
      runId: string,
      at: number,
      hook?: () => Promise<void>,
    ) => runCase(c.partition, store, journal, runId, at, hook);
    /** Once T is planned: a refused block in a log the plan names, and a v6 writer's (empty) log of its group under T. */
    const raceOn = (store: ObjectStore) => async () => {
      const refused = await appendRefusedBlock(store, ROOT, c.partition);
      const [t] = await pendingCompactions(store);
      const name = refused.key.slice(refused.key.lastIndexOf('/') + 1);
      const fileId = name.slice(1, name.indexOf('_'));
      const folder = refused.key.slice(0, refused.key.lastIndexOf('/'));
      await store.put(`${folder}/.${fileId}_${t?.slice(0, t.indexOf('.'))}.log.1_0-1-0`, new Uint8Array(0));
      return {
        refused,
        renamed: `${folder}/${name.replace(/\.log\.(\d+)_.*$/, (_m, v: string) => `.log.${Number(v) + 1}_1-0-1`)}`,
      };
    };
    const probeDir = await copyHudiFixture(c.fixture, ROOT, dirs);
    const calls: StoreCall[] = [];
    const probing = crashingStore(new LocalObjectStore(probeDir), Number.MAX_SAFE_INTEGER, 'before', calls);
    const probeRace = raceOn(new LocalObjectStore(probeDir));
    await run(probing.store, new MemoryJournal(), 'probe', NOW, async () => {
      await probeRace();
    });
    const at = calls.findIndex(
      (call) => call.method === 'deleteMany' && call.key.endsWith('.compaction.requested'),
    );
    expect(at).toBeGreaterThanOrEqual(0);

    const dir = await copyHudiFixture(c.fixture, ROOT, dirs);
    const live = new LocalObjectStore(dir);
    const rowsBefore = await hudiMergedView(db, dir, ROOT, TRIPS_COLUMNS);
    const journal = new MemoryJournal();
    const dying = crashingStore(live, at + 1, 'after');
    let raced: { refused: { key: string; before: Uint8Array }; renamed: string } | undefined;
    const race = raceOn(live);

    // Act: the run dies right after the plan's delete; the sweep settles the dead run
    await run(dying.store, dyingJournal(journal, dying.crashed), 'run-1', NOW, async () => {
      raced = await race();
    }).catch(() => undefined);
    await dying.quiesce();
    if (raced === undefined) throw new Error('the plan step did not run');
    const whileDead = {
      pending: await pendingCompactions(live),
      traces: (await live.list(`${ROOT}/.hoodie/.temp/lake-compactor-unscheduled/`)).objects.length,
      renamed: (await live.head(raced.renamed)) !== undefined,
    };
    const sweep = await settleAfterDeadRun(
      {
        store: live,
        journal,
        clock: new ManualClock(LATER),
        engine: defaultParquetEngine,
        format: boundFormat(),
      },
      { table: 'trips', partition: c.partition },
      'run-1',
    );

    // Assess: dead with the plan gone and its trace left (the copy made while the plan stood, the source not yet
    // deleted); the sweep's settle deleted the log under T and the trace
    expect(dying.crashed()).toBe(true);
    expect(whileDead).toEqual({ pending: [], traces: 1, renamed: true });
    expect(sweep.unsettled).toEqual([]);
    const partition = await readdir(join(dir, ROOT, c.partition));
    expect(partition.filter((n) => /_\d{17}\.log\.1_0-1-0$/.test(n))).toEqual([]);
    expect(partition).toContain(raced.renamed.slice(raced.renamed.lastIndexOf('/') + 1));
    expect((await live.list(`${ROOT}/.hoodie/.temp/lake-compactor-unscheduled/`)).objects).toEqual([]);

    // Act: the log fixed, a run
    await live.put(raced.refused.key, raced.refused.before);
    const rerun = await run(live, journal, 'run-2', LATER + 60_000);

    // Assess
    expect(rerun.summary.status, JSON.stringify(rerun.summary)).toBe('SUCCEEDED');
    expect(await pendingCompactions(live)).toEqual([]);
    expect(await hudiMergedView(db, dir, ROOT, TRIPS_COLUMNS)).toEqual(rowsBefore);
  }, 120_000);

  const RESUMED = [
    {
      mark: 'ours',
      text: 'a plan of ours a dead run left (a new run id resumes it by its mark): unscheduled, the table as before; once the log is fixed a run compacts with the same merged rows',
    },
    {
      mark: 'stripped',
      text: "a Hudi writer's plan (no mark) resumed and refused: never removed, left byte for byte as requested, the partition needs-attention",
    },
  ] as const;
  for (const r of RESUMED)
    it(`v8: ${r.text}`, async () => {
      // Prepare: a run dies right after writing T's requested plan; the sweep settles it (T stays, as Hudi keeps a
      // scheduled compaction); for a Hudi writer's plan, our mark is taken out of it; then a refused block lands in
      // a log T names
      const c = CASES[1];
      const dir = await copyHudiFixture(c.fixture, ROOT, dirs);
      const live = new LocalObjectStore(dir);
      const rowsBefore = await hudiMergedView(db, dir, ROOT, TRIPS_COLUMNS);
      const journal = new MemoryJournal();
      const calls: StoreCall[] = [];
      const probeDir = await copyHudiFixture(c.fixture, ROOT, dirs);
      const probing = crashingStore(new LocalObjectStore(probeDir), Number.MAX_SAFE_INTEGER, 'before', calls);
      const stepDeps = (store: ObjectStore, j: Journal, at: number, leases = new MemoryLeases()) => ({
        store,
        journal: j,
        clock: new ManualClock(at),
        engine: defaultParquetEngine,
        leases,
        format: boundFormat(),
        wait: async () => {},
      });
      const options = { plan: { inlineGroupLimit: 100, compactMemoryMb: 1024 } };
      await runPartition(
        stepDeps(probing.store, new MemoryJournal(), NOW),
        runOf('probe', c.partition),
        options,
      );
      const at = calls.findIndex(
        (call) => call.method === 'put' && call.key.endsWith('.compaction.requested'),
      );
      expect(at).toBeGreaterThanOrEqual(0);
      const dying = crashingStore(live, at + 1, 'after');
      await runPartition(
        stepDeps(dying.store, dyingJournal(journal, dying.crashed), NOW),
        runOf('run-1', c.partition),
        options,
      ).catch(() => undefined);
      await dying.quiesce();
      await settleAfterDeadRun(
        {
          store: live,
          journal,
          clock: new ManualClock(LATER),
          engine: defaultParquetEngine,
          format: boundFormat(),
        },
        { table: 'trips', partition: c.partition },
        'run-1',
      );
      const pendingBefore = await pendingCompactions(live);
      const [t] = pendingBefore;
      const requestedKey = `${ROOT}/.hoodie/timeline/${t?.slice(0, t.indexOf('.'))}.compaction.requested`;
      const markBefore = planMarkOf(firstPlan(await live.get(requestedKey)).extraMetadata);
      if (r.mark === 'stripped') await live.put(requestedKey, withoutMark(await live.get(requestedKey)));
      const planBytes = await live.get(requestedKey);
      const refused = await appendRefusedBlock(live, ROOT, c.partition);
      const tableBefore = await tableBytes(dir);
      const leases = new MemoryLeases();

      // Act
      const resumed = await runPartition(
        stepDeps(live, journal, LATER + 60_000, leases),
        runOf('run-2', c.partition),
        options,
      );

      // Assess: the resumed plan failed on the refusal; ours is gone, Hudi's kept as it was; the partition waits
      expect(dying.crashed()).toBe(true);
      expect(pendingBefore).toEqual([expect.stringMatching(/\.requested$/)]);
      expect(markBefore).toEqual({ run: 'run-1' });
      expect(resumed.summary.status).toBe('FAILED');
      expect(resumed.summary.firstError?.error).toBe('HudiLogUnsupportedError');
      expect(leases.item({ table: 'trips', partition: c.partition }).state).toBe('needs-attention');
      const { '.hoodie/.locks/table_lock.json': _lock, ...after } = await tableBytes(dir);
      const { '.hoodie/.locks/table_lock.json': _lockBefore, ...before } = tableBefore;
      if (r.mark === 'stripped') {
        expect(await pendingCompactions(live)).toEqual(pendingBefore);
        expect(Buffer.from(await live.get(requestedKey)).equals(Buffer.from(planBytes))).toBe(true);
        expect(after).toEqual(before);
        return;
      }
      const { [relative(ROOT, requestedKey)]: removed, ...kept } = before;
      expect(removed).toBeDefined();
      expect(await pendingCompactions(live)).toEqual([]);
      expect(after).toEqual(kept);

      // Act: the log fixed, an operator's settle run, then a run
      await live.put(refused.key, refused.before);
      await runPartition(
        stepDeps(live, journal, LATER + 120_000, leases),
        runOf('settle-1', c.partition, true),
        options,
      );
      const rerun = await runPartition(
        stepDeps(live, journal, LATER + 180_000, leases),
        runOf('run-3', c.partition),
        options,
      );

      // Assess: compacted afresh, nothing pending, the merged rows (a multiset, DuckDB) unchanged
      expect(rerun.summary.status, JSON.stringify(rerun.summary)).toBe('SUCCEEDED');
      expect(await pendingCompactions(live)).toEqual([]);
      expect(await hudiMergedView(db, dir, ROOT, TRIPS_COLUMNS)).toEqual(rowsBefore);
    }, 120_000);
});
