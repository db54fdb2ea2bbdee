// Several faults in one run, then whatever comes next, on the local cloud with the real stack (profiler,
// sweep, the synthesized state machine): no row is ever lost or left duplicated, and no state is left behind.
//
// "Killed" means the handler stops right after its k-th S3 request took effect, as a Lambda that is
// SIGKILLed (OOM, timeout) would: the request's effect stays, nothing after it runs, Step Functions sees a
// failed task. Kills are drawn per run for the commit, its rollback and the run's finalize (all three in one
// run), and the next actor is an operator's re-run, the sweep, or the profiler after one new file.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { App } from 'aws-cdk-lib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoJournal } from '../../functions/adapters/dynamodb-journal.js';
import { DynamoStatsStore } from '../../functions/adapters/dynamodb-stats-store.js';
import { S3ObjectStore } from '../../functions/adapters/s3-object-store.js';
import type { PartitionSnapshot } from '../../functions/core/profiler/model.js';
import { createCommitHandler } from '../../functions/handlers/commit.js';
import { createFinalizeHandler } from '../../functions/handlers/finalize.js';
import { createPlanHandler } from '../../functions/handlers/plan.js';
import { createRollbackHandler } from '../../functions/handlers/rollback.js';
import { createSweepHandler, sweepDepsFromEnv } from '../../functions/handlers/sweep.js';
import { ManualClock } from '../../functions/ports/clock.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';
import { createObservability } from '../../functions/shared/middleware.js';
import { createWorkflowRuntime } from '../../functions/shared/workflow-runtime.js';
import { mulberry32, writeSampleLake } from '../../functions/tools/sample-lake.js';
import { LakeCompactorStack } from '../../infra/app.js';
import { LocalCloud } from '../../infra/local/local-cloud.js';
import type { LocalExecution } from '../../infra/local/step-functions.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';
import { faultyStore, KillAfter, Killed, type StoreOp } from '../support/fault-store.js';
import { missingRows } from '../support/multiset.js';
import { keysUnder, listPartition, rowMultiset } from '../support/workflow-harness.js';

const DAY_MS = 86_400_000;
const BUCKET = 'lake';
/** The bucket of the table whose runs retire in delete-rebuild mode. */
const REBUILD_BUCKET = 'lake-rebuild';
/** Days inside the policy's look-back are triggered by the profiler; the scenario tests use older ones. */
const recentDay = (k: number) => new Date(Date.now() - k * DAY_MS).toISOString().slice(0, 10);

/** The faults of the current run, by function; cleared between runs. */
interface Faults {
  commit?: KillAfter;
  rollback?: KillAfter;
  finalize?: KillAfter;
  /** Denied for every function (a permission missing from the deployment). */
  denied?: (op: StoreOp, key: string) => boolean;
  /** Runs after each of the commit function's requests (observers, concurrent writers). */
  afterCommitRequest?: (op: StoreOp) => Promise<void> | void;
}

describe('settling after several faults in one run (real stack on the local cloud)', () => {
  let cloud: LocalCloud;
  let stack: LakeCompactorStack;
  let store: S3ObjectStore;
  let stats: DynamoStatsStore;
  let journal: DynamoJournal;
  let db: DuckDb;
  let scratch: string;
  let faults: Faults = {};
  /** Observer requests run outside the faults (they stand for another process). */
  const observing = false;

  beforeAll(async () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    stack = new LakeCompactorStack(app, 'SettleFaults', {
      compactor: {
        tables: [
          {
            name: 'events',
            bucketName: BUCKET,
            prefix: 'events/',
            partitionColumns: ['date'],
            dateColumn: 'date',
            dateFormat: 'yyyy-MM-dd',
            policy: { minInputFiles: 5, quietMinutes: 0, cooldownMinutes: 0, lookbackDays: 60 },
          },
          {
            // Not in versionedBuckets: bin-pack runs retire in delete-rebuild mode (no copies; an undo
            // re-creates inputs from the outputs).
            name: 'rebuilt',
            bucketName: REBUILD_BUCKET,
            prefix: 'events/',
            partitionColumns: ['date'],
            dateColumn: 'date',
            dateFormat: 'yyyy-MM-dd',
            policy: { minInputFiles: 5, quietMinutes: 0, cooldownMinutes: 0, lookbackDays: 60 },
          },
        ],
        // The local S3 is not versioned: delete mode must notice and fall back to trash (asserted below).
        workflow: { versionedBuckets: [BUCKET] },
      },
    });
    const fns = stack.compactor.workflow.functions;
    const handlers = new Map<string, (input: unknown) => Promise<unknown>>();
    const lives = new Map<string, { dead: boolean }>();
    /**
     * A step's real handler over a store with the current faults (built once, on first use). Once its kill
     * fires, the invocation is dead: every later S3 or DynamoDB request of it fails and it ends with
     * `Killed` whatever it would have returned — as a SIGKILLed Lambda, it does nothing after that request.
     */
    const step = (
      name: string,
      fn: keyof typeof fns,
      kill: (f: Faults) => KillAfter | undefined,
      make: (runtime: ReturnType<typeof createWorkflowRuntime>) => (input: unknown) => Promise<unknown>,
    ) => {
      // 'Record failure' and 'Finalize run' are one function: one handler, one life.
      const life = lives.get(name) ?? { dead: false };
      lives.set(name, life);
      const dead = () => new Killed(`${name}: the process was killed`);
      return async (input: unknown) => {
        let handler = handlers.get(name);
        if (handler === undefined) {
          const wrapStore = (plain: ObjectStore) =>
            faultyStore(plain, {
              before: () => {
                if (life.dead) throw dead();
              },
              denied: (op, key) => !observing && faults.denied?.(op, key) === true,
              after: async (op) => {
                if (observing) return;
                try {
                  kill(faults)?.tick();
                } catch (err) {
                  life.dead = true;
                  throw err;
                }
                if (fn === 'commit') await faults.afterCommitRequest?.(op);
              },
            });
          const dynamodb = new DynamoDBClient({});
          dynamodb.middlewareStack.add(
            (next) => async (args) => {
              if (life.dead) throw dead();
              return next(args);
            },
            { step: 'initialize', name: 'killSwitch' },
          );
          handler = make(
            createWorkflowRuntime({
              env: cloud.functionEnv(fns[fn] as never),
              s3: cloud.s3,
              dynamodb,
              wrapStore,
            }),
          );
          handlers.set(name, handler);
        }
        life.dead = false;
        try {
          const result = await handler(input);
          if (life.dead) throw dead();
          return result;
        } catch (err) {
          throw life.dead ? dead() : err;
        }
      };
    };
    const none = () => undefined;
    const taskOverrides = {
      'Plan partition': step('plan', 'plan', none, (r) => createPlanHandler(r)),
      'Commit group': step(
        'commit',
        'commit',
        (f) => f.commit,
        (r) => createCommitHandler(r),
      ),
      'Roll back group': step(
        'rollback',
        'rollback',
        (f) => f.rollback,
        (r) => createRollbackHandler(r),
      ),
      'Record failure': step(
        'finalize',
        'finalize',
        (f) => f.finalize,
        (r) => createFinalizeHandler(r),
      ),
      'Finalize run': step(
        'finalize',
        'finalize',
        (f) => f.finalize,
        (r) => createFinalizeHandler(r),
      ),
    };
    const start = () =>
      LocalCloud.start({
        stack,
        stepFunctions: { waitTimeMs: 0, retryIntervalMs: 0, taskOverrides },
        sqs: { batchingWindowMs: 50, redeliveryDelayMs: 5 },
      });
    cloud = await start().catch((error: unknown) => {
      if (error instanceof Error && error.name === 'LocalCloudStartupError') return start();
      throw error;
    });
    const tableName = cloud.tableName(stack.compactor.table);
    store = new S3ObjectStore({ client: cloud.s3, bucket: BUCKET });
    stats = new DynamoStatsStore({ client: cloud.dynamodb, tableName });
    journal = new DynamoJournal({ client: cloud.dynamodb, tableName });
    db = await openDuckDb();
    scratch = await mkdtemp(path.join(tmpdir(), 'settle-faults-'));
  }, 180_000);

  afterAll(async () => {
    db?.close();
    await cloud?.stop();
    if (scratch !== undefined) await rm(scratch, { recursive: true, force: true });
  });

  const ref = (day: string) => ({ table: 'events', partition: `date=${day}` });
  const machine = () => stack.compactor.workflow.stateMachine;
  const rowsOf = async (day: string) =>
    rowMultiset(
      store,
      (await listPartition(store, day)).map((o) => o.key),
      scratch,
      db,
    );
  const executionsOf = (day: string): LocalExecution[] =>
    cloud.executions.filter(
      (e) => (e.input as { partition?: string } | undefined)?.partition === `date=${day}`,
    );
  /** The sweep as its schedule runs it, `minutesLater` from now (its lease grace has passed). */
  const sweep = (minutesLater: number, dryRun = false, table = 'events') =>
    createSweepHandler(
      sweepDepsFromEnv(
        {
          ...cloud.functionEnv(stack.compactor.sweepFunction as never),
          ...(dryRun ? { TRIGGERS_DRY_RUN: 'true' } : {}),
        },
        createObservability(),
        { clock: new ManualClock(Date.now() + minutesLater * 60_000) },
      ),
    )({ mode: 'sweep', table });
  const partition = async (day: string): Promise<PartitionSnapshot | undefined> => stats.get(ref(day));
  /** Sample micro-batch files of one day (not written anywhere yet), named apart by `tag`. */
  const sampleFiles = async (day: string, count: number, seed: number, tag = 'part') => {
    const files: { key: string; bytes: Uint8Array }[] = [];
    await writeSampleLake(
      async (key, bytes) => {
        files.push({ key: key.replace(/\/part-/, `/${tag}-`), bytes });
      },
      { table: 'events', days: 1, batches: count, startDate: day, minRows: 20, maxRows: 60, seed },
    );
    return files;
  };
  /** The row multiset of Parquet bytes (DuckDB, canonically sorted JSON lines). */
  const rowsOfBytes = async (files: readonly Uint8Array[]) => {
    const dir = await mkdtemp(path.join(scratch, 'bytes-'));
    const paths = await Promise.all(
      files.map(async (bytes, i) => {
        const file = path.join(dir, `${i}.parquet`);
        await writeFile(file, bytes);
        return file;
      }),
    );
    const rows = await db.rows(
      `SELECT * FROM read_parquet([${paths.map(sqlString).join(', ')}]) ORDER BY ALL`,
    );
    await rm(dir, { recursive: true, force: true });
    return rows.map((r) => JSON.stringify(r));
  };

  /** Nothing is left of any run: no open group, no staging, no trash of an unsettled group. */
  async function assertClean(day: string, label: string) {
    expect(await journal.listOpen(ref(day)), `${label}: open groups`).toEqual([]);
    const staging = (await keysUnder(store, '_lake-compactor/staging/')).filter((k) =>
      executionsOf(day).some((e) => k.includes(`/${e.name}/`)),
    );
    expect(staging, `${label}: staging left`).toEqual([]);
    expect((await partition(day))?.state, `${label}: partition state`).toBe('idle');
  }

  it('kills commit, rollback and finalize in one run (≥ 30 runs), then a re-run, the sweep or the profiler ends exact', async () => {
    // Prepare
    const rng = mulberry32(20_261_201);
    const trials = 30;
    const tally = { allThreeKilled: 0, leftLeased: 0, byNext: { operator: 0, sweep: 0, profiler: 0 } };
    const profilerRuns: string[] = [];

    for (let i = 0; i < trials; i++) {
      const day = recentDay(i + 1);
      const next = (['operator', 'sweep', 'profiler'] as const)[i % 3] as 'operator' | 'sweep' | 'profiler';
      const label = `trial ${i} (${day}, then ${next})`;
      // A commit of 5 inputs makes 14 S3 requests in trash mode; rollback and finalize fewer.
      faults = {
        commit: new KillAfter(1 + Math.floor(rng() * 14)),
        rollback: new KillAfter(1 + Math.floor(rng() * 6)),
        finalize: new KillAfter(1 + Math.floor(rng() * 4)),
      };

      const files = await sampleFiles(day, 5, 4000 + i);
      const before = await rowsOfBytes(files.map((f) => f.bytes));

      // Act 1: a writer lands 5 small files; the profiler starts the run on the 5th; it dies three times.
      for (const f of files) await store.put(f.key, f.bytes);
      await cloud.drain();
      const killed = faults;
      faults = {};
      const first = executionsOf(day);
      expect(first, `${label}: the profiler started one run`).toHaveLength(1);
      if (killed.commit?.fired && killed.rollback?.fired && killed.finalize?.fired) tally.allThreeKilled++;
      if ((await partition(day))?.state === 'compacting') tally.leftLeased++;

      // Act 2: what the world does next.
      let expected = before;
      tally.byNext[next]++;
      if (next === 'operator') {
        const rerun = await cloud.runExecution(
          machine(),
          { table: 'events', partition: `date=${day}`, quietMinutes: 0 },
          `rerun-${i}`,
        );
        expect(rerun.status, `${label}: the re-run`).toBe('SUCCEEDED');
      } else if (next === 'sweep') {
        await sweep(20);
        await cloud.drain();
      } else {
        await sweep(20, true); // triggers in dry-run: the sweep settles and releases, starts nothing
        const [extra] = await sampleFiles(day, 1, 9000 + i, 'late');
        if (extra === undefined) throw new Error('no sample file');
        expected = [...before, ...(await rowsOfBytes([extra.bytes]))];
        await store.put(extra.key, extra.bytes);
        await cloud.drain();
        const started = executionsOf(day).filter((e) => !first.includes(e));
        if (started.length > 0) profilerRuns.push(...started.map((e) => `${e.name}: ${e.status}`));
      }

      // Assess
      expect((await rowsOf(day)).sort(), `${label}: rows lost or duplicated`).toEqual([...expected].sort());
      await assertClean(day, label);
    }
    // The faults did reach every stage: most runs died in all three functions, and finalize's death left
    // the lease held (what only the takeover or the sweep can resolve).
    expect(tally.allThreeKilled, JSON.stringify(tally)).toBeGreaterThanOrEqual(10);
    expect(tally.leftLeased, JSON.stringify(tally)).toBeGreaterThanOrEqual(10);
    expect(profilerRuns.length, 'profiler-triggered runs after the new file').toBeGreaterThan(0);
    expect(
      profilerRuns.every((r) => r.endsWith('SUCCEEDED')),
      profilerRuns.join(', '),
    ).toBe(true);
  }, 900_000); // dozens of executions on a shared 2-core machine; nothing is timed

  /**
   * A request S3 refuses every time (a permission missing from the deployment) during publish: the group
   * cannot be settled, so the partition is needs-attention — no run starts, nothing plans it — until an
   * operator has fixed the cause and started a settle run, which then ends exact.
   */
  async function persistentDenial(day: string, name: string, denied: Faults['denied'], targetMB?: number) {
    // Prepare: 6 small files in an old partition (outside the look-back: only operators start runs there)
    const files = await sampleFiles(day, 6, 777);
    for (const f of files) await store.put(f.key, f.bytes);
    await cloud.drain();
    const before = await rowsOfBytes(files.map((f) => f.bytes));
    faults = { denied };

    // Act 1: the run meets the refusal on every attempt of commit, rollback and finalize
    const failed = await cloud.runExecution(
      machine(),
      {
        table: 'events',
        partition: `date=${day}`,
        quietMinutes: 0,
        ...(targetMB === undefined ? {} : { targetFileSizeMB: targetMB }),
      },
      name,
    );

    // Assess 1
    expect(failed.status).toBe('FAILED');
    const item = await partition(day);
    expect(item?.state).toBe('needs-attention');
    expect(item?.attention?.reason).toContain('AccessDenied');
    expect(await journal.listOpen(ref(day))).toHaveLength(1);
    const swept = await sweep(20);
    expect(swept.mode === 'sweep' && swept.reports[0]?.needingAttention).toBeGreaterThanOrEqual(1);

    // Act 2: the world goes on: a writer adds a file (the profiler must not start a run), an operator
    // re-runs (refused at once, changing nothing), the sweep passes again.
    const [late] = await sampleFiles(day, 1, 778, 'late');
    if (late === undefined) throw new Error('no sample file');
    await store.put(late.key, late.bytes);
    await cloud.drain();
    const started = executionsOf(day).length;
    const rerun = await cloud.runExecution(
      machine(),
      { table: 'events', partition: `date=${day}`, quietMinutes: 0 },
      `${name}-rerun`,
    );
    await sweep(40);
    await cloud.drain();

    // Assess 2
    expect(rerun.status).toBe('FAILED');
    expect(rerun.error).toBe('PartitionNeedsAttentionError');
    expect(JSON.parse(rerun.cause ?? '{}').errorMessage).toContain(
      `{"table": "events", "partition": "date=${day}", "settle": true}`,
    );
    expect(executionsOf(day).map((e) => e.name)).toHaveLength(started + 1); // the refused re-run only
    expect((await partition(day))?.state).toBe('needs-attention');

    // Act 3: the permission is fixed; the operator settles
    faults = {};
    const settled = await cloud.runExecution(
      machine(),
      { table: 'events', partition: `date=${day}`, settle: true },
      `${name}-settle`,
    );

    // Assess 3: exact rows (the late file kept), nothing open, idle again
    expect(settled.status, JSON.stringify(settled.output)).toBe('SUCCEEDED');
    expect(settled.output).toMatchObject({ outcome: 'settled', settledGroups: 1 });
    const expected = [...before, ...(await rowsOfBytes([late.bytes]))].sort();
    expect((await rowsOf(day)).sort()).toEqual(expected);
    await assertClean(day, name);
    return failed;
  }

  it('a retire delete S3 denies every time: needs-attention, no run starts, the settle run ends exact', async () => {
    const day = '2020-03-01';
    const failed = await persistentDenial(
      day,
      'deny-retire',
      (op, key) =>
        op === 'deleteMany' && key.startsWith(`events/date=${day}/`) && !key.includes('/part-deny-'),
    );
    expect(failed.status).toBe('FAILED');
  }, 300_000);

  it('a second output copy S3 denies every time: needs-attention, no run starts, the settle run ends exact', async () => {
    const day = '2020-03-02';
    const failed = await persistentDenial(
      day,
      'deny-copy',
      (op, key) =>
        op === 'copy' &&
        key.startsWith(`events/date=${day}/part-deny-copy-0001-`) &&
        !key.includes('-0001-00000.'),
      0.004,
    );
    const outputs = (await journal.listRun('deny-copy'))[0]?.outputs ?? [];
    expect(outputs.length, 'the group has a second output to deny').toBeGreaterThanOrEqual(2);
    expect(failed.status).toBe('FAILED');
  }, 300_000);

  it('undoes a partial publish restoring inputs before removing outputs: no listing during the undo misses a row', async () => {
    // Prepare: 6 inputs; a writer replaces one right after the commit copied the inputs to trash, so the
    // retire round deletes five, refuses that one, and the group must be undone.
    const day = '2020-03-04';
    const files = await sampleFiles(day, 6, 780);
    for (const f of files) await store.put(f.key, f.bytes);
    await cloud.drain();
    const victim = files[2] as { key: string; bytes: Uint8Array };
    const [replacement] = await sampleFiles(day, 1, 781);
    if (replacement === undefined) throw new Error('no sample file');
    const expected = await rowsOfBytes(
      [...files.filter((f) => f !== victim), replacement].map((f) => f.bytes),
    );
    let copies = 0;
    let undoing = false;
    const snapshots: string[][] = [];
    faults = {
      afterCommitRequest: async (op) => {
        if (op === 'copy') copies += 1;
        if (op === 'copy' && copies === files.length) await store.put(victim.key, replacement.bytes);
        if (op === 'deleteMany' && copies > files.length) undoing = true;
        else if (undoing) snapshots.push(await rowsOf(day));
      },
    };

    // Act
    const execution = await cloud.runExecution(
      machine(),
      { table: 'events', partition: `date=${day}`, quietMinutes: 0 },
      'undo-order-1',
    );
    faults = {};

    // Assess: the group was undone, and at every request of the undo each expected row was listed
    expect(execution.status).toBe('SUCCEEDED');
    expect(execution.output).toMatchObject({ groupsAborted: 1, groupsDone: 0 });
    expect(snapshots.length).toBeGreaterThanOrEqual(3);
    for (const [i, rows] of snapshots.entries()) {
      expect(missingRows(expected, rows).length, `listing ${i} of the undo misses rows`).toBe(0);
    }
    expect((await rowsOf(day)).sort()).toEqual([...expected].sort());
    await assertClean(day, 'undo-order-1');
  }, 120_000);

  it('delete mode on an unversioned bucket falls back to trash mode and says so; no input is lost', async () => {
    // Prepare: the stack lists the bucket in versionedBuckets, but the local S3 is not versioned
    const day = '2020-03-03';
    const files = await sampleFiles(day, 5, 779);
    for (const f of files) await store.put(f.key, f.bytes);
    await cloud.drain();
    const before = await rowsOfBytes(files.map((f) => f.bytes));

    // Act
    const execution = await cloud.runExecution(
      machine(),
      { table: 'events', partition: `date=${day}`, quietMinutes: 0 },
      'unversioned-1',
    );

    // Assess
    expect(execution.status).toBe('SUCCEEDED');
    const [entry] = await journal.listRun('unversioned-1');
    expect(entry).toMatchObject({ state: 'done', retireMode: 'trash' });
    expect(entry?.note).toContain('versioning is disabled, not Enabled');
    const trash = await keysUnder(store, '_lake-compactor/trash/unversioned-1/');
    expect(trash.sort()).toEqual(files.map((f) => `_lake-compactor/trash/unversioned-1/${f.key}`).sort());
    expect((await rowsOf(day)).sort()).toEqual([...before].sort());
  }, 120_000);
  it('a delete-rebuild undo killed in commit, rollback and finalize: the sweep re-creates the inputs and ends exact', async () => {
    // Prepare: 6 inputs of the delete-rebuild table; a writer replaces one right after the commit published
    // the output, so the retire round deletes five, refuses that one, and the group must be undone — by
    // re-creating the five from the output, which takes the Parquet engine. The commit dies 2 requests into
    // the undo, the rollback and the run's finalize after 2 requests each: the run ends with the lease held.
    const day = '2020-03-05';
    const rebuildStore = new S3ObjectStore({ client: cloud.s3, bucket: REBUILD_BUCKET });
    const rebuildRef = { table: 'rebuilt', partition: `date=${day}` };
    const files = await sampleFiles(day, 6, 782);
    for (const f of files) await rebuildStore.put(f.key, f.bytes);
    await cloud.drain();
    const victim = files[2] as { key: string; bytes: Uint8Array };
    const [replacement] = await sampleFiles(day, 1, 783);
    if (replacement === undefined) throw new Error('no sample file');
    const expected = await rowsOfBytes(
      [...files.filter((f) => f !== victim), replacement].map((f) => f.bytes),
    );
    let replaced = false;
    let retireRefused = false;
    faults = {
      rollback: new KillAfter(2),
      finalize: new KillAfter(2),
      afterCommitRequest: async (op) => {
        if (op === 'copy' && !replaced) {
          replaced = true;
          await rebuildStore.put(victim.key, replacement.bytes);
        } else if (op === 'deleteMany' && replaced && !retireRefused) {
          retireRefused = true;
          faults.commit = new KillAfter(2);
        }
      },
    };

    // Act 1: the run
    const failed = await cloud.runExecution(
      machine(),
      { table: 'rebuilt', partition: `date=${day}`, quietMinutes: 0 },
      'rebuild-undo-1',
    );
    const killed = faults;
    faults = {};

    // Assess 1: all three died mid-way; the group is still being undone, the lease still held
    expect(failed.status).toBe('FAILED');
    expect([killed.commit?.fired, killed.rollback?.fired, killed.finalize?.fired]).toEqual([
      true,
      true,
      true,
    ]);
    expect(await journal.listOpen(rebuildRef)).toHaveLength(1);
    expect(await journal.get('rebuild-undo-1', 'g0001')).toMatchObject({
      retireMode: 'delete-rebuild',
      undo: 'pending',
    });
    expect((await stats.get(rebuildRef))?.state).toBe('compacting');

    // Act 2: the sweep's schedule comes round
    await sweep(20, false, 'rebuilt');
    await cloud.drain();

    // Assess 2: the sweep settled the group (inputs re-created, output removed): exact rows, nothing left
    const rows = await rowMultiset(
      rebuildStore,
      (await listPartition(rebuildStore, day)).map((o) => o.key),
      scratch,
      db,
    );
    expect(rows.sort()).toEqual([...expected].sort());
    expect(await journal.listOpen(rebuildRef)).toEqual([]);
    const [entry] = await journal.listRun('rebuild-undo-1');
    expect(entry?.state).toBe('aborted');
    const item = await stats.get(rebuildRef);
    expect(item?.state).toBe('idle');
    expect(item?.attention).toBeUndefined();
  }, 180_000);
});
