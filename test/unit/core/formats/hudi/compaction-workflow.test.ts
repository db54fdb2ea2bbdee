// Merge-on-Read compaction as the deployed workflow runs it (compaction-workflow.ts), through the workflow's own
// steps in this process (core/workflow/run.ts runs plan → compact → verify → commit → finalize exactly as the state
// machine does) over copies of tables Hudi wrote, under Hudi's storage lock: the plan step schedules the compaction
// (T minted, one group per file slice, each output named `<fileId>_<token>_T.parquet` in the stored plan, T in every
// journal entry before the requested file exists); the compact step merges base + logs; verify checks the merged
// view; finalize completes one `commit` for all of T's groups. The rows Hudi's snapshot view reads (live base files by
// DuckDB, log records merged by the project's reader) are identical before and after. A group that fails aborts T's
// groups and rolls T back to its plan, which stays, and the next run finishes it; a run that died with every group
// published is completed by the settle the sweep runs. A run asking for schema fidelity logical still writes an Avro
// fixed(5) decimal(10, 2) base column as FIXED_LEN_BYTE_ARRAY(5), not the engine's standard INT64 — and so does a
// clustering of base-only file groups, by the same exact-fidelity request of the format. A clustering plan of ours a
// killed run left, its journal gone, is rolled back by the next run's plan step by its mark (abandoned-plans.ts); one
// whose killed run's group aborted with its undo still pending is left by the plan step's table service to the
// sweep, whose settle rolls it back with the rows unchanged.
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { LocalObjectStore } from '../../../../../functions/adapters/local-object-store.js';
import { MemoryJournal } from '../../../../../functions/adapters/memory-journal.js';
import { MemoryLeases } from '../../../../../functions/adapters/memory-leases.js';
import { ABANDONED_AFTER_MS } from '../../../../../functions/core/formats/hudi/abandoned-plans.js';
import { compactHudiMergeOnRead } from '../../../../../functions/core/formats/hudi/compaction-run.js';
import { hudiTable } from '../../../../../functions/core/formats/hudi/format.js';
import { StorageBasedHudiLock } from '../../../../../functions/core/formats/hudi/lock/index.js';
import {
  HEARTBEAT_RENEW_MS,
  renewHeartbeat,
} from '../../../../../functions/core/formats/hudi/pending-instant.js';
import { readHudiTable } from '../../../../../functions/core/formats/hudi/table-state.js';
import type { TableFormat } from '../../../../../functions/core/formats/table-format.js';
import { partitionPlanSchema } from '../../../../../functions/core/planning.js';
import { buildRunContext, type RunContext } from '../../../../../functions/core/run-input.js';
import { commitStep } from '../../../../../functions/core/workflow/commit.js';
import { compactGroup } from '../../../../../functions/core/workflow/compact.js';
import { planKey } from '../../../../../functions/core/workflow/layout.js';
import { binpackOptionsOf, planRun } from '../../../../../functions/core/workflow/plan.js';
import {
  runPartition,
  WORKFLOW_STEPS,
  type WorkflowSteps,
} from '../../../../../functions/core/workflow/run.js';
import { settleAfterDeadRun } from '../../../../../functions/core/workflow/settle.js';
import { verifyGroup } from '../../../../../functions/core/workflow/verify.js';
import { ManualClock } from '../../../../../functions/ports/clock.js';
import { isSettled, type Journal } from '../../../../../functions/ports/journal.js';
import type { ObjectStore } from '../../../../../functions/ports/object-store.js';
import type { ParquetEngine } from '../../../../../functions/ports/parquet-engine.js';
import { defaultParquetEngine } from '../../../../../functions/shared/parquet-engine.js';
import {
  AMOUNT_DECIMAL_10,
  appenderLatestRows,
  appendHudiDeltaCommit,
  appendHudiInsert,
  createHudiMorTable,
  MOR_ROW_COLUMNS,
} from '../../../../../functions/tools/sample-hudi.js';
import { ageFiles } from '../../../../support/age-files.js';
import { observedStore } from '../../../../support/crash-store.js';
import { type DuckDb, openDuckDb, sqlString } from '../../../../support/duckdb.js';
import { copyHudiFixture, hudiMergedView, hudiVisibleView } from '../../../../support/hudi-mor-view.js';

const NOW = Date.UTC(2026, 11, 1);

let db: DuckDb;
const dirs: string[] = [];
beforeAll(async () => {
  db = await openDuckDb();
});
afterAll(() => db.close());
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function copyFixture(name: string): Promise<string> {
  return copyHudiFixture(name, 'trips', dirs);
}

async function hudiView(dir: string): Promise<string[]> {
  return hudiMergedView(db, dir, 'trips');
}

/** The table's format bound as a deployment's table config binds it: storage lock, trigger after 1 delta commit. */
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

/** The partition holding a file slice with log files (the one the fixture's last delta commit wrote to). */
const PARTITIONS: Readonly<Record<string, string>> = {
  mor_v6_trips_8i1u: 'city=san_francisco',
  mor_v8_trips_8i3u1d: 'city=sao_paulo',
};

function runOf(runId: string, startedAt: number, fixture = 'mor_v6_trips_8i1u'): RunContext {
  return buildRunContext(
    { name: 'trips', prefix: 'trips', bucket: 'local', format: 'hudi' },
    PARTITIONS[fixture] ?? '',
    { force: true, quietMinutes: 0, trigger: 'operator' },
    { executionName: runId, startedAt },
  );
}

interface Deps {
  readonly store: ObjectStore;
  readonly journal: Journal;
  readonly clock: ManualClock;
  readonly engine: ParquetEngine;
  readonly leases: MemoryLeases;
  readonly format: TableFormat;
}

function depsOf(store: ObjectStore, journal: Journal, at: number, engine = defaultParquetEngine): Deps {
  return {
    store,
    journal,
    clock: new ManualClock(at),
    engine,
    leases: new MemoryLeases(),
    format: boundFormat(),
  };
}

async function runOnce(deps: Deps, run: RunContext) {
  return runPartition({ ...deps, wait: async () => {} }, run, {
    plan: { inlineGroupLimit: 100, compactMemoryMb: 1024 },
  });
}

/** The instant files of the timeline (not `.locks/`, `.temp/` and the other folders beside them). */
async function timelineFiles(dir: string, folder: string): Promise<string[]> {
  return (await readdir(join(dir, 'trips', folder))).filter((n) => /^\d/.test(n)).sort();
}

async function visibleWhilePending(dir: string, folder: string): Promise<string[]> {
  return hudiVisibleView(db, dir, 'trips', folder, dirs);
}

async function filesUnder(dir: string, relative: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (rel: string): Promise<void> => {
    let entries: import('node:fs').Dirent[];
    try {
      entries = await readdir(join(dir, rel), { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const child = `${rel}/${e.name}`;
      if (e.isDirectory()) await walk(child);
      else out.push(child);
    }
  };
  await walk(relative);
  return out;
}

/** The rows of the table's live base files (DuckDB), as a sorted multiset, each row but its file name. */
async function liveBaseRows(store: ObjectStore, dir: string): Promise<string[]> {
  const state = await readHudiTable(store, 'trips');
  const files = state.partitions.flatMap((p) => p.liveSlices.map((s) => join(dir, s.baseFile?.key ?? '')));
  const rows = await db.rows(
    `SELECT * EXCLUDE (_hoodie_file_name) FROM read_parquet([${files.map(sqlString).join(', ')}])`,
  );
  return rows.map((r) => JSON.stringify(r, (_k, v) => (typeof v === 'bigint' ? String(v) : v))).sort();
}

/**
 * A fresh version 8 Merge-on-Read table `trips` in a temp folder: six insert commits of 3–8 rows to partition `1`,
 * six small base-only file groups (what clustering takes).
 */
async function smallFileGroups(prefix: string) {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  dirs.push(dir);
  const store = new LocalObjectStore(dir);
  const table = await createHudiMorTable(store, 'trips', 8);
  for (let b = 0; b < 6; b += 1) await appendHudiInsert(table, '1', 3 + b);
  return { dir, store, table };
}

/** A run clustering partition `1` of the appender's table `trips`. */
function clusterRun(id: string, at: number): RunContext {
  return buildRunContext(
    { name: 'trips', prefix: 'trips', bucket: 'local', format: 'hudi' },
    '1',
    { force: true, quietMinutes: 0, trigger: 'operator' },
    { executionName: id, startedAt: at },
  );
}

const TEMPLATES = [
  { name: 'mor_v6_trips_8i1u', timeline: '.hoodie' },
  { name: 'mor_v8_trips_8i3u1d', timeline: '.hoodie/timeline' },
] as const;

describe('Merge-on-Read compaction through the workflow steps', () => {
  for (const template of TEMPLATES) {
    it(`${template.name}: plans T as data, merges base and logs, completes one compaction commit in finalize, same rows`, async () => {
      // Prepare
      const dir = await copyFixture(template.name);
      const store = new LocalObjectStore(dir);
      const before = await hudiView(dir);
      const timelineBefore = await timelineFiles(dir, template.timeline);
      const inner = new MemoryJournal();
      const journal = inner;
      const deps = depsOf(store, journal, NOW);
      const run = runOf('run-1', NOW, template.name);
      // At the requested file's put: every journal entry of the run already names T.
      const recordedAtRequest: string[][] = [];
      // T's heartbeat puts, and whether the output they were put before was written yet.
      const heartbeats: string[] = [];
      const watched: ObjectStore = new Proxy(store, {
        get(target, prop, receiver) {
          if (prop === 'put')
            return async (key: string, ...rest: unknown[]) => {
              if (key.includes('/.hoodie/.heartbeat/')) heartbeats.push(key.slice(key.lastIndexOf('/') + 1));
              if (key.endsWith('.compaction.requested')) {
                const instant = key.slice(key.lastIndexOf('/') + 1).split('.')[0] ?? '';
                const entries = await journal.listRun('run-1');
                recordedAtRequest.push(
                  entries.map((e) => `${e.groupId}:${e.formatState?.hudiInstant === instant}`),
                );
              }
              return (target.put as (...a: unknown[]) => Promise<unknown>).call(target, key, ...rest);
            };
          return Reflect.get(target, prop, receiver);
        },
      });

      // Act
      const result = await runOnce({ ...deps, store: watched }, run);

      // Assess
      expect(result.summary.status, JSON.stringify(result.summary)).toBe('SUCCEEDED');
      const plan = partitionPlanSchema.parse(
        JSON.parse(new TextDecoder().decode(await store.get(planKey(run.workRoot, run.runId)))),
      );
      const instant = String(plan.formatState?.hudiInstant);
      expect(plan.formatState?.hudiService).toBe('compaction');
      expect(plan.groups.length).toBeGreaterThan(0);
      expect(recordedAtRequest).toEqual([plan.groups.map((g) => `${g.groupId}:true`)]);
      const entries = await journal.listRun('run-1');
      expect(entries.map((e) => e.state)).toEqual(plan.groups.map(() => 'done'));
      // One completed compaction commit, nothing else new on the timeline but its plan and inflight.
      const added = (await timelineFiles(dir, template.timeline)).filter((f) => !timelineBefore.includes(f));
      expect(added.filter((f) => f.startsWith(instant)).sort()).toEqual(added.sort());
      const commitFile = added.filter((f) => /\.commit$/.test(f));
      expect(commitFile).toHaveLength(1);
      // The release records the second T's commit completed (its name's completion time; on layout 1 its time).
      const completed = /^(\d{17})(?:_(\d{17}))?\.commit$/.exec(commitFile[0] ?? '');
      expect(deps.leases.item({ table: 'trips', partition: run.partition }).awaitedVersion).toBe(
        Number((completed?.[2] ?? completed?.[1] ?? '').slice(0, 14)),
      );
      expect(added.filter((f) => f.endsWith('.compaction.requested'))).toHaveLength(1);
      // The new base files are the planned names, live, and the logs compacted into them are gone from the view.
      const state = await readHudiTable(store, 'trips');
      const live = state.partitions.flatMap((p) => p.liveSlices);
      const planned = plan.groups.map((g) => String(g.formatState?.hudiOutput)).sort();
      expect(
        live
          .filter((s) => s.baseInstantTime === instant)
          .map((s) => s.baseFile?.key.slice(s.baseFile.key.lastIndexOf('/') + 1))
          .sort(),
      ).toEqual(planned);
      expect(planned.every((n) => n.endsWith(`_${instant}.parquet`))).toBe(true);
      expect(live.filter((s) => s.baseInstantTime === instant).every((s) => s.logFiles.length === 0)).toBe(
        true,
      );
      expect(await hudiView(dir)).toEqual(before);
      expect(state.timeline.pendingPlans).toEqual([]);
      expect(await filesUnder(dir, 'trips/.hoodie/.temp')).toEqual([]);
      // T's heartbeat was kept while its groups were rewritten (a sign of life for another run of ours), and is gone.
      expect(new Set(heartbeats)).toEqual(new Set([instant]));
      expect(heartbeats.length).toBeGreaterThanOrEqual(plan.groups.length);
      expect(await filesUnder(dir, 'trips/.hoodie/.heartbeat')).toEqual([]);
    });
  }

  it('keeps an Avro fixed(5) decimal(10, 2) base column in its form when the run asks for logical fidelity', async () => {
    // Prepare: an appender table whose base files hold amount as FIXED_LEN_BYTE_ARRAY(5) DECIMAL(10, 2) (the engine's
    // standard form would be INT64), a delta commit updating some of it; a run asking for schema fidelity logical.
    const dir = await mkdtemp(join(tmpdir(), 'lc-hudi-mor-decimal-'));
    dirs.push(dir);
    const store = new LocalObjectStore(dir);
    const table = await createHudiMorTable(store, 'trips', 8, undefined, { amount: AMOUNT_DECIMAL_10 });
    await appendHudiInsert(table, '1', 6);
    await appendHudiDeltaCommit(table, '1', { fraction: 0.5, logBlock: 'avro' });
    const expected = appenderLatestRows(table)
      .map((r) => `${r._hoodie_record_key}:${r.amount == null ? null : (Number(r.amount) / 100).toFixed(2)}`)
      .sort();
    const run = buildRunContext(
      { name: 'trips', prefix: 'trips', bucket: 'local', format: 'hudi' },
      '1',
      { force: true, quietMinutes: 0, trigger: 'operator', schemaFidelity: 'logical' },
      { executionName: 'run-logical', startedAt: NOW },
    );

    // Act
    const result = await runOnce(depsOf(store, new MemoryJournal(), NOW), run);

    // Assess
    expect(result.summary.status, JSON.stringify(result.summary)).toBe('SUCCEEDED');
    const state = await readHudiTable(store, 'trips');
    const slices = state.partitions.flatMap((p) => p.liveSlices);
    expect(slices.every((s) => s.logFiles.length === 0)).toBe(true);
    const files = slices.map((s) => join(dir, s.baseFile?.key ?? ''));
    const list = `[${files.map(sqlString).join(', ')}]`;
    const read = `read_parquet(${list})`;
    const rows = await db.rows(`SELECT _hoodie_record_key AS k, CAST(amount AS VARCHAR) AS a FROM ${read}`);
    expect(rows.map((r) => `${r.k}:${r.a}`).sort()).toEqual(expected);
    const types = await db.rows(
      `SELECT DISTINCT type, type_length, converted_type FROM parquet_schema(${list}) WHERE name = 'amount'`,
    );
    expect(types).toEqual([{ type: 'FIXED_LEN_BYTE_ARRAY', type_length: '5', converted_type: 'DECIMAL' }]);
  });

  it("clustering keeps an Avro fixed(5) decimal(10, 2) base column in its form when the run asks for logical fidelity (the format's exact-fidelity request)", async () => {
    // Prepare: small base-only file groups (no logs: nothing for compaction, all for clustering) whose amount is
    // FIXED_LEN_BYTE_ARRAY(5) DECIMAL(10, 2) — the engine's logical form would be INT64 —; a run asking for logical.
    const dir = await mkdtemp(join(tmpdir(), 'lc-hudi-cluster-decimal-'));
    dirs.push(dir);
    const store = new LocalObjectStore(dir);
    const table = await createHudiMorTable(store, 'trips', 8, undefined, { amount: AMOUNT_DECIMAL_10 });
    for (let b = 0; b < 6; b += 1) await appendHudiInsert(table, '1', 3 + b);
    const expected = appenderLatestRows(table)
      .map((r) => `${r._hoodie_record_key}:${r.amount == null ? null : (Number(r.amount) / 100).toFixed(2)}`)
      .sort();
    const run = buildRunContext(
      { name: 'trips', prefix: 'trips', bucket: 'local', format: 'hudi' },
      '1',
      { force: true, quietMinutes: 0, trigger: 'operator', schemaFidelity: 'logical' },
      { executionName: 'run-cluster-logical', startedAt: NOW },
    );

    // Act
    const result = await runOnce(depsOf(store, new MemoryJournal(), NOW), run);

    // Assess: clustered into one base file by a replacecommit, the column in its Avro form, the same values
    expect(result.summary.status, JSON.stringify(result.summary)).toBe('SUCCEEDED');
    const state = await readHudiTable(store, 'trips');
    expect(state.timeline.completedWrites.filter((w) => w.instant.action === 'replacecommit')).toHaveLength(
      1,
    );
    const slices = state.partitions.flatMap((p) => p.liveSlices);
    expect(slices).toHaveLength(1);
    const files = slices.map((s) => join(dir, s.baseFile?.key ?? ''));
    const list = `[${files.map(sqlString).join(', ')}]`;
    const rows = await db.rows(
      `SELECT _hoodie_record_key AS k, CAST(amount AS VARCHAR) AS a FROM read_parquet(${list})`,
    );
    expect(rows.map((r) => `${r.k}:${r.a}`).sort()).toEqual(expected);
    const types = await db.rows(
      `SELECT DISTINCT type, type_length, converted_type FROM parquet_schema(${list}) WHERE name = 'amount'`,
    );
    expect(types).toEqual([{ type: 'FIXED_LEN_BYTE_ARRAY', type_length: '5', converted_type: 'DECIMAL' }]);
  });

  it('a clustering plan of ours a killed run left, its journal gone: rolled back by the next run (a new run id) once its heartbeat is stale, which clusters with the same rows', async () => {
    // Prepare: six small base-only file groups; a run killed once its heartbeat, clustering plan and inflight are
    // written (heartbeats are the store's modification times: the runs' clocks are the wall clock)
    const { dir, store } = await smallFileGroups('lc-hudi-abandoned-');
    const liveRows = () => liveBaseRows(store, dir);
    const before = await liveRows();
    let dead = false;
    const dying = observedStore(store, {
      before: (call) => {
        if (dead) throw new Error(`injected: the process died before ${call.method} ${call.key}`);
      },
      after: (call) => {
        if (call.method === 'put' && /\.(clustering|replacecommit)\.inflight$/.test(call.key)) dead = true;
      },
    });
    const t0 = Date.now();
    await runOnce(depsOf(dying, new MemoryJournal(), t0), clusterRun('run-1', t0)).catch(() => undefined);
    const pending = (await readHudiTable(store, 'trips')).timeline.pendingPlans.map((p) => p.mark);
    const later = t0 + ABANDONED_AFTER_MS + 60_000;
    // What the killed run wrote, as old as the next run's clock says (run-1's heartbeat stale by the store's times).
    await ageFiles(dir, ABANDONED_AFTER_MS + 60_000);

    // Act: the next run, its journal not the killed run's (a deployment torn down, another journal)
    const next = await runOnce(depsOf(store, new MemoryJournal(), later), clusterRun('run-2', later));

    // Assess: the killed run's plan carried our mark; rolled back, the partition clustered, the same rows
    expect(dead).toBe(true);
    expect(pending).toEqual([{ run: 'run-1', group: expect.any(String) }]);
    expect(next.summary.status, JSON.stringify(next.summary)).toBe('SUCCEEDED');
    const state = await readHudiTable(store, 'trips');
    expect(state.timeline.pendingPlans).toEqual([]);
    expect(state.timeline.completedWrites.filter((w) => w.instant.action === 'replacecommit')).toHaveLength(
      1,
    );
    expect(state.partitions.flatMap((p) => p.liveSlices)).toHaveLength(1);
    expect(await liveRows()).toEqual(before);
  });

  it.each([
    ['clustering', '1', 90_000],
    ['compaction', '2', 5 * 60_000],
  ] as const)(
    "%s: verify renews the pending instant's heartbeat when it starts and while it re-reads the outputs, so a LAZY Hudi writer does not take the plan for a dead one; the group completes with the same rows",
    async (service, partition, gapMs) => {
      // Prepare: partition 1 six small base-only file groups (clustered), partition 2 two file groups with a log
      // each (compacted at 1 delta commit); verify starts a while after its compact step ended (a retried step, a
      // slow Map slot): the heartbeat as old as that gap — for clustering 90 s, within Hudi's 2-minute tolerance;
      // for compaction, whose heartbeat only our own runs read (after 10 minutes), 5 minutes
      const { dir, store, table } = await smallFileGroups('lc-hudi-verify-alive-');
      await appendHudiInsert(table, '2', 4);
      await appendHudiInsert(table, '2', 4);
      await appendHudiDeltaCommit(table, '2', { fraction: 0.5 });
      const before = await hudiMergedView(db, dir, 'trips', MOR_ROW_COLUMNS);
      const heartbeats = join(dir, 'trips', '.hoodie', '.heartbeat');
      const ages: number[] = [];
      const renewalsDuringRead: number[] = [];
      let puts = 0;
      const counted = observedStore(store, {
        after: (call) => {
          if (call.method === 'put' && call.key.includes('.hoodie/.heartbeat/')) puts += 1;
        },
      });
      const engine: ParquetEngine = {
        ...defaultParquetEngine,
        verifyOutputs: async (...args) => {
          // The heartbeat's age by the store's own time as the outputs' re-read begins; then three renewal intervals
          const [beat] = await readdir(heartbeats);
          ages.push(Date.now() - (await stat(join(heartbeats, beat ?? ''))).mtimeMs);
          const at = puts;
          for (let interval = 1; interval <= 3; interval += 1) {
            await vi.advanceTimersByTimeAsync(HEARTBEAT_RENEW_MS);
            // One renewal at a time (whileAlive chains them): this interval's put lands before the next starts
            await vi.waitFor(() => expect(puts - at).toBe(interval));
          }
          renewalsDuringRead.push(puts - at);
          return defaultParquetEngine.verifyOutputs(...args);
        },
      };
      const steps: WorkflowSteps = {
        ...WORKFLOW_STEPS,
        verifyGroup: async (...args) => {
          await ageFiles(heartbeats, gapMs);
          return WORKFLOW_STEPS.verifyGroup(...args);
        },
      };
      const run = buildRunContext(
        { name: 'trips', prefix: 'trips', bucket: 'local', format: 'hudi' },
        partition,
        { force: true, quietMinutes: 0, trigger: 'operator' },
        { executionName: 'run-1', startedAt: NOW },
      );
      vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });

      // Act
      let result: Awaited<ReturnType<typeof runPartition>>;
      try {
        result = await runPartition(
          { ...depsOf(counted, new MemoryJournal(), NOW, engine), wait: async () => {} },
          run,
          { plan: { inlineGroupLimit: 100, compactMemoryMb: 1024 } },
          {},
          steps,
        );
      } finally {
        vi.useRealTimers();
      }

      // Assess: every group's verify found the heartbeat renewed (not as old as the gap) and renewed it 3 times more
      expect(result.summary.status, JSON.stringify(result.summary)).toBe('SUCCEEDED');
      expect(ages.length).toBe(result.groups.length);
      expect(ages.length).toBeGreaterThan(0);
      expect(Math.max(...ages)).toBeLessThan(60_000);
      expect(renewalsDuringRead).toEqual(ages.map(() => 3));
      //         the service completed, its heartbeat gone, and the merged view's rows unchanged
      const state = await readHudiTable(store, 'trips');
      expect(state.timeline.pendingPlans).toEqual([]);
      const completed = state.timeline.completedWrites.filter((w) =>
        service === 'clustering' ? w.instant.action === 'replacecommit' : w.metadata.compacted,
      );
      expect(completed).toHaveLength(1);
      expect(await filesUnder(dir, 'trips/.hoodie/.heartbeat')).toEqual([]);
      expect(await hudiMergedView(db, dir, 'trips', MOR_ROW_COLUMNS)).toEqual(before);
    },
  );

  it("records at the release the second its replacecommit completed: the profiler's version the partition's counters wait for", async () => {
    // Prepare: six small base-only file groups
    const { store } = await smallFileGroups('lc-hudi-awaited-');
    const deps = depsOf(store, new MemoryJournal(), NOW);

    // Act
    const result = await runOnce(deps, clusterRun('run-1', NOW));

    // Assess
    expect(result.summary.status, JSON.stringify(result.summary)).toBe('SUCCEEDED');
    const state = await readHudiTable(store, 'trips');
    const [replace] = state.timeline.completedWrites.filter((w) => w.instant.action === 'replacecommit');
    const completed = replace?.instant.completionTime ?? '';
    expect(completed).toMatch(/^\d{17}$/);
    expect(deps.leases.item({ table: 'trips', partition: '1' })).toMatchObject({
      state: 'idle',
      awaitedVersion: Number(completed.slice(0, 14)),
    });
  });

  it("keeps a clustering's heartbeat alive while its outputs are copied into the partition, however long the copies take; the group completes with the same rows", async () => {
    // Prepare: six small base-only file groups; the copy of the output into the partition lasts three renewal
    // intervals (timers faked), as many or large outputs may
    const { dir, store } = await smallFileGroups('lc-hudi-copy-alive-');
    const before = await liveBaseRows(store, dir);
    let puts = 0;
    let renewalsDuringCopy: number | undefined;
    const counted = observedStore(store, {
      after: (call) => {
        if (call.method === 'put' && call.key.includes('.hoodie/.heartbeat/')) puts += 1;
      },
    });
    const slowCopies: ObjectStore = {
      ...counted,
      copy: async (from, to, options) => {
        if (renewalsDuringCopy === undefined && to.startsWith('trips/1/') && to.endsWith('.parquet')) {
          const at = puts;
          for (let interval = 1; interval <= 3; interval += 1) {
            await vi.advanceTimersByTimeAsync(HEARTBEAT_RENEW_MS);
            await vi.waitFor(() => expect(puts - at).toBe(interval));
          }
          renewalsDuringCopy = puts - at;
        }
        return counted.copy(from, to, options);
      },
    };
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });

    // Act
    let result: Awaited<ReturnType<typeof runPartition>>;
    try {
      result = await runOnce(depsOf(slowCopies, new MemoryJournal(), NOW), clusterRun('run-1', NOW));
    } finally {
      vi.useRealTimers();
    }

    // Assess: three renewals while the copy ran; the clustering completed, nothing pending, the same rows
    expect(renewalsDuringCopy).toBe(3);
    expect(result.summary.status, JSON.stringify(result.summary)).toBe('SUCCEEDED');
    const state = await readHudiTable(store, 'trips');
    expect(state.timeline.pendingPlans).toEqual([]);
    expect(state.timeline.completedWrites.filter((w) => w.instant.action === 'replacecommit')).toHaveLength(
      1,
    );
    expect(await liveBaseRows(store, dir)).toEqual(before);
  });

  it('aborts a clustering whose heartbeat lapsed between its steps, as a Hudi writer aborts its own: verify leaves it dead, the commit rolls T back, same rows; the next run clusters the partition', async () => {
    // Prepare: six small base-only file groups; verify starts 5 minutes after the compact step ended (a retried step,
    // a slow Map slot), so T's heartbeat is past Hudi's 2-minute tolerance: a LAZY writer or clustering expiry may
    // already be rolling T back, and a renewal would let our commit complete T over files that rollback deletes
    const { dir, store } = await smallFileGroups('lc-hudi-lapsed-');
    const before = await liveBaseRows(store, dir);
    const inputs = (await readdir(join(dir, 'trips', '1'))).filter((n) => n.endsWith('.parquet')).sort();
    const heartbeats = join(dir, 'trips', '.hoodie', '.heartbeat');
    let heartbeatsAtVerify: string[] = [];
    const steps: WorkflowSteps = {
      ...WORKFLOW_STEPS,
      verifyGroup: async (...args) => {
        await ageFiles(heartbeats, 5 * 60_000);
        const result = await WORKFLOW_STEPS.verifyGroup(...args);
        heartbeatsAtVerify = await filesUnder(dir, 'trips/.hoodie/.heartbeat');
        return result;
      },
    };

    // Act
    const lapsed = await runPartition(
      { ...depsOf(store, new MemoryJournal(), NOW), wait: async () => {} },
      clusterRun('run-1', NOW),
      { plan: { inlineGroupLimit: 100, compactMemoryMb: 1024 } },
      {},
      steps,
    );
    const afterLapse = await readHudiTable(store, 'trips');
    const filesAfterLapse = (await readdir(join(dir, 'trips', '1')))
      .filter((n) => n.endsWith('.parquet'))
      .sort();
    const rowsAfterLapse = await liveBaseRows(store, dir);
    const next = await runOnce(
      depsOf(store, new MemoryJournal(), NOW + 60_000),
      clusterRun('run-2', NOW + 60_000),
    );

    // Assess: verify did not bring the heartbeat back (it is gone: dead for good), the commit aborted the group with
    // the reason, and T is rolled back — no pending plan, no completed clustering, no output, no heartbeat
    expect(heartbeatsAtVerify).toEqual([]);
    expect(lapsed.summary.groupsAborted).toBe(1);
    expect(lapsed.groups[0]?.result).toMatchObject({
      state: 'aborted',
      reason: expect.stringMatching(/heartbeat of clustering \d{17} lapsed/),
    });
    expect(afterLapse.timeline.pendingPlans).toEqual([]);
    expect(afterLapse.timeline.completedWrites.filter((w) => w.instant.action === 'replacecommit')).toEqual(
      [],
    );
    expect(filesAfterLapse).toEqual(inputs);
    expect(await filesUnder(dir, 'trips/.hoodie/.heartbeat')).toEqual([]);
    expect(rowsAfterLapse).toEqual(before);
    //         the next run clusters the six file groups into one, the same rows
    expect(next.summary.status, JSON.stringify(next.summary)).toBe('SUCCEEDED');
    const state = await readHudiTable(store, 'trips');
    expect(state.timeline.completedWrites.filter((w) => w.instant.action === 'replacecommit')).toHaveLength(
      1,
    );
    expect(state.partitions.flatMap((p) => p.liveSlices)).toHaveLength(1);
    expect(await liveBaseRows(store, dir)).toEqual(before);
  });

  it("leaves a clustering plan of ours to the sweep while its dead run's group is aborted with its undo still pending; the sweep's settle rolls it back, same rows", async () => {
    // Prepare: six small base-only file groups; run-1's rewrite fails after its clustering plan T is on the timeline,
    // and the process dies right after the journal records the group aborted with its undo pending (T's requested
    // and inflight still there). Heartbeats are judged by the store's modification times: what run-1 wrote is aged
    // past ABANDONED_AFTER_MS below, so only the journal says run-1 still holds T.
    const { dir, store } = await smallFileGroups('lc-hudi-undo-pending-');
    const before = await liveBaseRows(store, dir);
    let dead = false;
    const die = (what: string): void => {
      if (dead) throw new Error(`injected: the process died before ${what}`);
    };
    const journal = new MemoryJournal((method) => die(`journal ${method}`));
    const dyingJournal: Journal = {
      get: (runId, groupId) => journal.get(runId, groupId),
      create: (entry) => journal.create(entry),
      transition: async (current, to, patch, now) => {
        const next = await journal.transition(current, to, patch, now);
        if (next.state === 'aborted' && next.undo === 'pending') dead = true;
        return next;
      },
      listRun: (runId) => journal.listRun(runId),
      listOpen: (partition) => journal.listOpen(partition),
      closeFence: (partition, group) => journal.closeFence(partition, group),
    };
    const dyingStore = observedStore(store, { before: (call) => die(`${call.method} ${call.key}`) });
    const failing: ParquetEngine = {
      ...defaultParquetEngine,
      rewriteGroup: async () => {
        throw new Error('engine failed (test)');
      },
    };
    const t0 = Date.now();
    const run1 = clusterRun('run-1', t0);
    await runOnce(depsOf(dyingStore, dyingJournal, t0, failing), run1).catch(() => undefined);
    dead = false;
    const [left] = await journal.listRun('run-1');
    const pendingAtDeath = (await readHudiTable(store, 'trips')).timeline.pendingPlans;
    const instant = pendingAtDeath[0]?.instant.time ?? '';
    const later = t0 + ABANDONED_AFTER_MS + 60_000;
    // run-1's heartbeat stale by the store's times too: only the journal says run-1 still holds T.
    await ageFiles(dir, ABANDONED_AFTER_MS + 60_000);
    const deps = depsOf(store, journal, later);
    const run2 = clusterRun('run-2', later);
    const planService = deps.format.planService;
    if (planService === undefined) throw new Error('the Hudi format plans its table services');
    const recorded: unknown[] = [];

    // Act: run-2's plan step asks the format for its table service (the abandoned-plan check runs first) — called
    // directly: the step settles the partition's open groups before it, so this is the check a settle running beside
    // it (the sweep's) relies on —, then the sweep settles the dead run's partition, then run-3 clusters it.
    const service = await planService(
      { store, journal, clock: deps.clock },
      {
        location: { tableRoot: run2.tableRoot, partition: run2.partition, partitionDir: run2.partitionDir },
        table: run2.table,
        runId: run2.runId,
        now: later,
        binpack: binpackOptionsOf(run2),
        record: async (plan) => {
          recorded.push(plan);
        },
      },
    );
    const afterPlanStep = (await readHudiTable(store, 'trips')).timeline.pendingPlans.map(
      (p) => `${p.kind} ${p.instant.time} ${p.mark?.run}`,
    );
    const settled = await settleAfterDeadRun(deps, { table: run1.table, partition: run1.partition }, 'run-1');
    const afterSweep = await readHudiTable(store, 'trips');
    const rowsAfterSweep = await liveBaseRows(store, dir);
    const later3 = later + 60_000;
    const next = await runOnce(depsOf(store, journal, later3), clusterRun('run-3', later3));

    // Assess: run-1 died with its group aborted, undo pending, holding T; the plan step left T (nothing planned or
    // recorded); the sweep finished the undo (T rolled back, the group settled) with the rows unchanged; run-3 then
    // clustered the partition into one base file with the same rows.
    expect(left?.state).toBe('aborted');
    expect(left?.undo).toBe('pending');
    expect(left?.formatState?.hudiInstant).toBe(instant);
    expect(pendingAtDeath.map((p) => `${p.kind} ${p.instant.state} ${p.mark?.run}`)).toEqual([
      'clustering inflight run-1',
    ]);
    expect(service).toBeUndefined();
    expect(recorded).toEqual([]);
    expect(afterPlanStep).toEqual([`clustering ${instant} run-1`]);
    expect(settled.unsettled).toEqual([]);
    const [settledEntry] = await journal.listRun('run-1');
    expect(settledEntry === undefined ? false : isSettled(settledEntry)).toBe(true);
    expect(afterSweep.timeline.pendingPlans).toEqual([]);
    expect(await filesUnder(dir, 'trips/.hoodie/.heartbeat')).toEqual([]);
    expect(rowsAfterSweep).toEqual(before);
    expect(next.summary.status, JSON.stringify(next.summary)).toBe('SUCCEEDED');
    const state = await readHudiTable(store, 'trips');
    expect(state.timeline.pendingPlans).toEqual([]);
    expect(state.partitions.flatMap((p) => p.liveSlices)).toHaveLength(1);
    expect(await liveBaseRows(store, dir)).toEqual(before);
  });

  it.each([6, 8] as const)(
    "v%i: compactions of two partitions pending at once — a run of partition 2 compacts while partition 1's run is between its plan and its groups — both complete, rows of the merged view unchanged",
    async (version) => {
      // Prepare: two partitions, each two file groups updated by a delta commit (due at 1 delta commit)
      const dir = await mkdtemp(join(tmpdir(), 'lc-hudi-mor-two-'));
      dirs.push(dir);
      const store = new LocalObjectStore(dir);
      const table = await createHudiMorTable(store, 'trips', version);
      for (const partition of ['1', '2']) {
        await appendHudiInsert(table, partition, 4);
        await appendHudiInsert(table, partition, 4);
        await appendHudiDeltaCommit(table, partition, { fraction: 0.5 });
      }
      const expected = appenderLatestRows(table)
        .map((r) => r._hoodie_record_key)
        .sort();
      const before = await hudiMergedView(db, dir, 'trips', MOR_ROW_COLUMNS);
      const run = (partition: string, id: string) =>
        buildRunContext(
          { name: 'trips', prefix: 'trips', bucket: 'local', format: 'hudi' },
          partition,
          { force: true, quietMinutes: 0, trigger: 'operator' },
          { executionName: id, startedAt: NOW },
        );
      const journal = new MemoryJournal();
      let pendingWhileBoth: string[] = [];
      let second: Awaited<ReturnType<typeof runOnce>> | undefined;

      // Act: partition 1's run; once it has planned (T1 pending), partition 2's whole run
      const first = await runPartition(
        { ...depsOf(store, journal, NOW), wait: async () => {} },
        run('1', 'run-1'),
        { plan: { inlineGroupLimit: 100, compactMemoryMb: 1024 } },
        {
          planned: async () => {
            second = await runPartition(
              { ...depsOf(store, journal, NOW + 1_000), wait: async () => {} },
              run('2', 'run-2'),
              { plan: { inlineGroupLimit: 100, compactMemoryMb: 1024 } },
              {
                planned: async () => {
                  const state = await readHudiTable(store, 'trips');
                  pendingWhileBoth = state.timeline.pendingPlans.map(
                    (p) => `${p.kind} ${p.fileGroups.map((g) => g.partitionPath).join(',')}`,
                  );
                },
              },
            );
          },
        },
      );

      // Assess: two compactions were pending at once, each of its own partition, and both completed
      expect(pendingWhileBoth.sort()).toEqual(['compaction 1,1', 'compaction 2,2']);
      expect(first.summary.status, JSON.stringify(first.summary)).toBe('SUCCEEDED');
      expect(second?.summary.status, JSON.stringify(second?.summary)).toBe('SUCCEEDED');
      const state = await readHudiTable(store, 'trips');
      expect(state.timeline.pendingPlans).toEqual([]);
      expect(state.timeline.completedWrites.filter((w) => w.metadata.compacted)).toHaveLength(2);
      const slices = state.partitions.flatMap((p) => p.liveSlices);
      expect(slices).toHaveLength(4);
      expect(slices.every((s) => s.logFiles.length === 0)).toBe(true);
      //         the merged view's rows, and every record's latest version, exactly once
      expect(await hudiMergedView(db, dir, 'trips', MOR_ROW_COLUMNS)).toEqual(before);
      const keys = await db.rows(
        `SELECT _hoodie_record_key AS k FROM read_parquet([${slices.map((s) => sqlString(join(dir, s.baseFile?.key ?? ''))).join(', ')}])`,
      );
      expect(keys.map((r) => String(r.k)).sort()).toEqual(expected);
    },
  );

  it("the CLI's compaction, two plans of ours pending in two partitions: leaves the one whose run is alive, takes over and completes the dead run's", async () => {
    // Prepare: two partitions' plan steps schedule T1 and T2 (runs 1 and 2); both age past the liveness window, then
    // run 1 renews T1's heartbeat (alive), run 2 is dead
    const dir = await mkdtemp(join(tmpdir(), 'lc-hudi-mor-held-'));
    dirs.push(dir);
    const store = new LocalObjectStore(dir);
    const table = await createHudiMorTable(store, 'trips', 8);
    for (const partition of ['1', '2']) {
      await appendHudiInsert(table, partition, 4);
      await appendHudiInsert(table, partition, 4);
      await appendHudiDeltaCommit(table, partition, { fraction: 0.5 });
    }
    const latest = new Map(appenderLatestRows(table).map((r) => [r._hoodie_record_key, r]));
    const journal = new MemoryJournal();
    const deps = depsOf(store, journal, NOW);
    const instants: string[] = [];
    for (const [partition, id] of [
      ['1', 'run-1'],
      ['2', 'run-2'],
    ] as const) {
      const run = buildRunContext(
        { name: 'trips', prefix: 'trips', bucket: 'local', format: 'hudi' },
        partition,
        { force: true, quietMinutes: 0, trigger: 'operator' },
        { executionName: id, startedAt: NOW },
      );
      await deps.leases.acquire({ table: run.table, partition }, { runId: run.runId, now: NOW });
      await planRun(deps, run, { inlineGroupLimit: 100, compactMemoryMb: 1024 });
      const pending = (await readHudiTable(store, 'trips')).timeline.pendingPlans;
      instants.push(
        pending.find((p) => p.fileGroups.some((g) => g.partitionPath === partition))?.instant.time ?? '',
      );
    }
    const [t1, t2] = instants as [string, string];
    await ageFiles(dir, ABANDONED_AFTER_MS + 60_000);
    await renewHeartbeat(store, 'trips', t1);
    const t1Files = await timelineFiles(dir, '.hoodie/timeline');
    const later = NOW + ABANDONED_AFTER_MS + 60_000;

    // Act: `compact`'s table service (its own journal: neither run is in it)
    const result = await compactHudiMergeOnRead(
      {
        store,
        engine: defaultParquetEngine,
        clock: new ManualClock(later),
        coordination: {
          localZone: 'UTC',
          lockFor: () =>
            new StorageBasedHudiLock({ store, tableRoot: 'trips', clock: new ManualClock(later) }),
        },
        holdsInstant: async () => false,
      },
      'trips',
      { deltaCommits: 1 },
    );

    // Assess: T2 taken over and completed; T1 left as it was
    expect(t1 < t2).toBe(true);
    expect(result).toMatchObject({ kind: 'compacted', instant: t2, resumed: true });
    const state = await readHudiTable(store, 'trips');
    expect(state.timeline.pendingPlans.map((p) => p.instant.time)).toEqual([t1]);
    expect((await timelineFiles(dir, '.hoodie/timeline')).filter((n) => n.startsWith(t1))).toEqual(
      t1Files.filter((n) => n.startsWith(t1)),
    );
    const slices = state.partitions.find((p) => p.partition === '2')?.liveSlices ?? [];
    expect(slices).toHaveLength(2);
    expect(slices.every((sl) => sl.logFiles.length === 0)).toBe(true);
    const rows = await db.rows(
      `SELECT _hoodie_record_key AS k, name FROM read_parquet([${slices.map((sl) => sqlString(join(dir, sl.baseFile?.key ?? ''))).join(', ')}])`,
    );
    const expected = [...latest.values()]
      .filter((r) => r._hoodie_partition_path === '2')
      .map((r) => `${r._hoodie_record_key} ${r.name}`)
      .sort();
    expect(rows.map((r) => `${r.k} ${r.name}`).sort()).toEqual(expected);
  });

  it('a failed group aborts compaction T and rolls it back to its plan, which stays; the next run finishes it', async () => {
    // Prepare
    const dir = await copyFixture('mor_v6_trips_8i1u');
    const store = new LocalObjectStore(dir);
    const before = await hudiView(dir);
    const journal = new MemoryJournal();
    const failing: ParquetEngine = {
      ...defaultParquetEngine,
      rewriteGroup: async () => {
        throw new Error('engine failed (test)');
      },
    };

    // Act
    const first = await runOnce(depsOf(store, journal, NOW, failing), runOf('run-1', NOW));
    const afterFailure = await visibleWhilePending(dir, '.hoodie');
    const heartbeatsAfterFailure = await filesUnder(dir, 'trips/.hoodie/.heartbeat');
    const stateAfterFailure = await readHudiTable(store, 'trips');
    const second = await runOnce(depsOf(store, journal, NOW + 60_000), runOf('run-2', NOW + 60_000));

    // Assess
    expect(first.summary.status).toBe('FAILED');
    expect((await journal.listRun('run-1')).map((e) => e.state)).toEqual(['aborted']);
    expect(afterFailure).toEqual(before);
    expect(heartbeatsAfterFailure).toEqual([]);
    const kept = stateAfterFailure.timeline.pendingPlans.map((p) => `${p.kind} ${p.instant.state}`);
    expect(kept).toEqual(['compaction requested']);
    const instant = stateAfterFailure.timeline.pendingPlans[0]?.instant.time;
    expect(second.summary.status, JSON.stringify(second.summary)).toBe('SUCCEEDED');
    expect((await journal.listRun('run-2')).map((e) => e.state)).toEqual(['done']);
    const state = await readHudiTable(store, 'trips');
    expect(state.timeline.pendingPlans).toEqual([]);
    expect(
      state.timeline.completedWrites.filter((w) => w.metadata.compacted).map((w) => w.instant.time),
    ).toEqual([instant]);
    expect(await hudiView(dir)).toEqual(before);
  });

  it('a run that died with every group published is completed by the sweep, not rolled back', async () => {
    // Prepare
    const dir = await copyFixture('mor_v8_trips_8i3u1d');
    const store = new LocalObjectStore(dir);
    const before = await hudiView(dir);
    const journal = new MemoryJournal();
    const deps = depsOf(store, journal, NOW);
    const run = runOf('run-1', NOW, 'mor_v8_trips_8i3u1d');
    await deps.leases.acquire({ table: run.table, partition: run.partition }, { runId: run.runId, now: NOW });
    const plan = await planRun(deps, run, { inlineGroupLimit: 100, compactMemoryMb: 1024 });
    for (const group of plan.groups) {
      const compacted = await compactGroup(deps, run, group);
      await verifyGroup(deps, run, group.groupId, compacted.fingerprint);
      expect((await commitStep(deps, run.runId, group.groupId)).state).toBe('pending');
    }
    const pendingView = await visibleWhilePending(dir, '.hoodie/timeline');

    // Act: the execution died before finalize; the sweep settles the partition.
    const settled = await settleAfterDeadRun(deps, { table: run.table, partition: run.partition }, run.runId);

    // Assess
    expect(pendingView).toEqual(before);
    expect(settled.unsettled).toEqual([]);
    expect((await journal.listRun('run-1')).every((e) => e.state === 'done')).toBe(true);
    const state = await readHudiTable(store, 'trips');
    expect(state.timeline.pendingPlans).toEqual([]);
    expect(state.timeline.completedWrites.filter((w) => w.metadata.compacted)).toHaveLength(2);
    expect(await hudiView(dir)).toEqual(before);
  });
});
