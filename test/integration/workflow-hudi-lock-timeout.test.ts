// A Hudi table whose writers' DynamoDB lock (DynamoDBBasedLockProvider's item, in DynamoDB Local) is held by another
// writer that heartbeats and never lets go, through the workflow's own steps (core/workflow/run.ts, as the state
// machine runs them): the lock's bounded wait runs out where the run first needs the lock, and the run aborts with
// HudiLockUnavailableError, having changed no byte of the table — no instant, no marker, no data file — and left no
// pending instant of ours or group open. Once the holder releases the lock, a re-run compacts (Merge-on-Read) or
// clusters (Copy-on-Write) with the rows Hudi's snapshot view reads unchanged. A holder that takes the lock after the
// plan step scheduled a compaction and keeps it past its completion: the run fails naming the same error, its groups
// aborted and T rolled back to its plan (outputs, markers, inflight, staging gone; the requested plan stays, as Hudi
// never removes a scheduled compaction), the partition released rather than left needs-attention; the re-run
// finishes T. A holder that takes the lock when a clustering group's outputs are verified, before its commit step:
// the group is rolled back (outputs, markers, plan, inflight: every byte as before), the run fails naming the same
// error with the partition released; a re-run while it is still held fails alike, the one after clusters with the
// same rows. The waits move a manual clock (each one a heartbeat of the holder), so no wall-clock time is waited.
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { CreateTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DynamoDbHudiLock, hudiLockTableInput } from '../../functions/adapters/formats/hudi/dynamodb-lock.js';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { MemoryJournal } from '../../functions/adapters/memory-journal.js';
import { MemoryLeases } from '../../functions/adapters/memory-leases.js';
import { hudiTable } from '../../functions/core/formats/hudi/format.js';
import { HudiLockUnavailableError } from '../../functions/core/formats/hudi/lock/errors.js';
import type { HudiLockHandle, HudiTableLock } from '../../functions/core/formats/hudi/lock/lock.js';
import { readHudiTable } from '../../functions/core/formats/hudi/table-state.js';
import type { TableFormat } from '../../functions/core/formats/table-format.js';
import { buildRunContext } from '../../functions/core/run-input.js';
import { runPartition, WORKFLOW_STEPS } from '../../functions/core/workflow/run.js';
import { settleAfterDeadRun } from '../../functions/core/workflow/settle.js';
import { ManualClock } from '../../functions/ports/clock.js';
import type { Journal } from '../../functions/ports/journal.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';
import { defaultParquetEngine } from '../../functions/shared/parquet-engine.js';
import { appendHudiInsert, createHudiTable } from '../../functions/tools/sample-hudi.js';
import type { DynamoDbLocalEndpoint } from '../../infra/local/dynamodb-local.js';
import type { StoreCall } from '../support/crash-store.js';
import { Crash, crashingStore, dyingJournal } from '../support/crashing-store.js';
import { type DuckDb, openDuckDb } from '../support/duckdb.js';
import { startTestDynamoDb } from '../support/dynamodb-local.js';
import { copyHudiFixture, hudiMergedView } from '../support/hudi-mor-view.js';

const NOW = Date.UTC(2026, 11, 7, 12);
const ROOT = 'trips';
/** The lease the table's writers write into the lock item (a Hudi writer's `hoodie.write.lock.wait_time_ms`). */
const LEASE_MS = 10_000;

let ddb: DynamoDbLocalEndpoint;
let dynamo: DynamoDBClient;
let db: DuckDb;
let lockTables = 0;
const dirs: string[] = [];

beforeAll(async () => {
  ddb = await startTestDynamoDb();
  dynamo = ddb.client();
  db = await openDuckDb();
}, 180_000);

afterAll(async () => {
  db?.close();
  await ddb?.stop();
});

afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

/** Every file under the table root and its SHA-256: the table's bytes, to compare before and after. */
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

/**
 * A lock table as Hudi creates it, a Hudi writer (its own lock client) holding the table's lock, and the format of the
 * table as a deployment declaring `hudiLock: { provider: "dynamodb" }` binds it — whose lock waits by moving `clock`,
 * each wait a heartbeat of the holder, so the holder never looks dead. `dyingFormat(dead)` is the same format in a
 * process that dies when `dead()` turns true: its locks then send nothing more (no heartbeat, no release), so a lock it
 * held stays in the table until its lease lapses and a later holder takes it over, as after a real crash.
 */
async function heldTable(clock: ManualClock, partitionKey: string) {
  lockTables += 1;
  const tableName = `hudi_locks_${lockTables}`;
  await dynamo.send(new CreateTableCommand(hudiLockTableInput(tableName)));
  let holding: HudiLockHandle | undefined;
  const timing = { leaseDurationMs: LEASE_MS, heartbeatIntervalMs: 2_000, safetyMarginMs: 500 };
  const writer = new DynamoDbHudiLock({
    client: dynamo,
    tableName,
    partitionKey,
    clock,
    ...timing,
    newOwnerName: () => 'hudi-spark-writer',
  });
  let waited = 0;
  const bind = (dead?: () => boolean): TableFormat => {
    const bound = hudiTable.forTable?.(
      {
        hudiLock: { provider: 'dynamodb', table: tableName },
        hudiIndexType: 'BLOOM',
        hudiTimezone: 'UTC',
        hudiCompactionDeltaCommits: 1,
      },
      {
        hudiDynamoDbLock: (setting) => {
          const lock = new DynamoDbHudiLock({
            client: dynamo,
            tableName: setting.table,
            partitionKey: setting.partitionKey,
            clock,
            ...timing,
            sleep: async (ms) => {
              clock.advance(ms);
              waited += ms;
              await holding?.renew();
            },
          });
          return dead === undefined ? lock : dyingLock(lock, dead);
        },
      },
    );
    if (bound === undefined) throw new Error('the Hudi format binds per table');
    return bound as TableFormat;
  };
  return {
    format: bind(),
    dyingFormat: bind,
    hold: async () => {
      holding = await writer.acquire({ waitMs: 0 });
    },
    release: async () => {
      const outcome = await holding?.release();
      holding = undefined;
      return outcome;
    },
    waited: () => waited,
  };
}

/** `lock` in a process that dies when `dead()` turns true: from then on it neither takes, renews nor releases. */
function dyingLock(lock: HudiTableLock, dead: () => boolean): HudiTableLock {
  const alive = () => {
    if (dead()) throw new Crash('the process died (lock)');
  };
  return {
    description: lock.description,
    heartbeatIntervalMs: lock.heartbeatIntervalMs,
    acquire: async (options) => {
      alive();
      const handle = await lock.acquire(options);
      return {
        ownerId: handle.ownerId,
        description: handle.description,
        guaranteedUntil: () => handle.guaranteedUntil(),
        isHeld: () => handle.isHeld(),
        assertHeld: (during) => handle.assertHeld(during),
        renew: async () => {
          alive();
          await handle.renew();
        },
        release: async () => {
          alive();
          return handle.release();
        },
      };
    },
  };
}

function runOf(runId: string, partition: string) {
  return buildRunContext(
    { name: 'trips', prefix: ROOT, bucket: 'local', format: 'hudi' },
    partition,
    { force: true, quietMinutes: 0, trigger: 'operator' },
    { executionName: runId, startedAt: NOW },
  );
}

/** A Copy-on-Write table of the project's appender (Hudi's fixtures hold one live file per partition): 6 inserts. */
async function cowTable(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'lc-hudi-lock-'));
  dirs.push(dir);
  const table = await createHudiTable(new LocalObjectStore(dir), ROOT, 8, '20261201000000000');
  for (let i = 0; i < 6; i += 1) await appendHudiInsert(table, '10', 3 + i);
  return dir;
}

const CASES = [
  {
    name: 'Merge-on-Read compaction (the plan step schedules it under the lock)',
    prepare: () => copyHudiFixture('mor_v8_trips_8i3u1d', ROOT, dirs),
    partition: 'city=sao_paulo',
    service: 'compaction',
  },
  {
    name: 'Copy-on-Write clustering (the compact step writes its plan under the lock)',
    prepare: cowTable,
    partition: '10',
    service: 'clustering',
  },
] as const;

describe('a Hudi table whose DynamoDB lock another writer holds and never releases, through the workflow steps', () => {
  for (const c of CASES)
    it(`${c.name}: aborts with HudiLockUnavailableError, every byte unchanged; re-run after the release succeeds, same rows`, async () => {
      // Prepare
      const dir = await c.prepare();
      const store = new LocalObjectStore(dir);
      const clock = new ManualClock(NOW);
      const config = (await readHudiTable(store, ROOT)).config;
      // Hudi's default partition key of the lock item: hoodie.table.name.
      const table = await heldTable(clock, config.name ?? ROOT);
      const bytesBefore = await tableBytes(dir);
      const rowsBefore = await hudiMergedView(db, dir, ROOT, await columnsOf(dir));
      const journal = new MemoryJournal();
      const leases = new MemoryLeases();
      const deps = {
        store,
        journal,
        clock,
        engine: defaultParquetEngine,
        leases,
        format: table.format,
        wait: async () => {},
      };
      const options = { plan: { inlineGroupLimit: 100, compactMemoryMb: 1024 } };
      await table.hold();

      // Act: a run while the lock is held throughout, then a run after the holder released it
      const held = await runPartition(deps, runOf('run-held', c.partition), options).then(
        (r) => ({ ok: true as const, r }),
        (error: unknown) => ({ ok: false as const, error }),
      );
      const bytesWhileHeld = await tableBytes(dir);
      const openAfterHeld = (await journal.listRun('run-held')).filter(
        (e) => e.state !== 'done' && e.state !== 'aborted',
      );
      const released = await table.release();
      const rerun = await runPartition(deps, runOf('run-after', c.partition), options);

      // Assess: the held run failed with the lock's typed error after the bounded wait — thrown by the plan step
      // (compaction: the state machine's Record failure), or as the failed group's error (clustering: its compact
      // step, the group rolled back) — and changed nothing
      if (c.service === 'compaction') {
        expect(held.ok ? held.r.summary : held.error).toBeInstanceOf(HudiLockUnavailableError);
        expect((held as { error: HudiLockUnavailableError }).error.holder).toBe('hudi-spark-writer');
      } else {
        const summary = held.ok ? held.r.summary : undefined;
        expect(summary, String(held.ok || held.error)).toMatchObject({
          status: 'FAILED',
          groupsDone: 0,
          failedGroups: 1,
          firstError: { error: 'HudiLockUnavailableError' },
        });
        expect(summary?.firstError?.cause).toContain('hudi-spark-writer');
      }
      expect(table.waited()).toBeGreaterThanOrEqual(LEASE_MS);
      expect(bytesWhileHeld).toEqual(bytesBefore);
      expect(openAfterHeld).toEqual([]);
      expect(await leases.holds({ table: 'trips', partition: c.partition }, 'run-held')).toBe(false);
      // the re-run, once the holder let go, rewrote the partition with the same rows
      expect(released).toBe('released');
      expect(rerun.summary.status, JSON.stringify(rerun.summary)).toBe('SUCCEEDED');
      expect(rerun.summary.groupsDone).toBeGreaterThan(0);
      expect(rerun.summary.groupsDone).toBe(rerun.summary.groups);
      const after = await readHudiTable(store, ROOT);
      expect(after.timeline.pendingPlans).toEqual([]);
      expect(
        after.timeline.completedWrites.some((w) =>
          c.service === 'compaction' ? w.metadata.compacted : w.instant.action === 'replacecommit',
        ),
      ).toBe(true);
      expect(await hudiMergedView(db, dir, ROOT, await columnsOf(dir))).toEqual(rowsBefore);
    }, 120_000);

  it('Merge-on-Read compaction whose completion finds the lock held: fails with HudiLockUnavailableError, rolled back to its plan; the re-run finishes it, same rows', async () => {
    // Prepare: the holder takes the lock once the plan step scheduled T, and keeps it through the run's end
    const dir = await copyHudiFixture('mor_v8_trips_8i3u1d', ROOT, dirs);
    const store = new LocalObjectStore(dir);
    const clock = new ManualClock(NOW);
    const start = await readHudiTable(store, ROOT);
    const compactedBefore = start.timeline.completedWrites
      .filter((w) => w.metadata.compacted)
      .map((w) => w.instant.time);
    const table = await heldTable(clock, start.config.name ?? ROOT);
    const bytesBefore = await tableBytes(dir);
    const rowsBefore = await hudiMergedView(db, dir, ROOT, await columnsOf(dir));
    const journal = new MemoryJournal();
    const leases = new MemoryLeases();
    const deps = {
      store,
      journal,
      clock,
      engine: defaultParquetEngine,
      leases,
      format: table.format,
      wait: async () => {},
    };
    const options = { plan: { inlineGroupLimit: 100, compactMemoryMb: 1024 } };
    const partition = 'city=sao_paulo';

    // Act
    const held = await runPartition(deps, runOf('run-held', partition), options, {
      planned: async () => {
        await table.hold();
      },
    });
    const bytesWhileHeld = await tableBytes(dir);
    const entries = await journal.listRun('run-held');
    const released = await table.release();
    const rerun = await runPartition(deps, runOf('run-after', partition), options);

    // Assess: the run failed naming the lock's error, every group aborted and settled, the partition released (not
    // needs-attention); of T only its requested plan is left (Hudi never removes a scheduled compaction), no
    // inflight, marker, staged row or output file
    expect(held.summary, JSON.stringify(held.summary)).toMatchObject({
      status: 'FAILED',
      groupsDone: 0,
      failedGroups: entries.length,
      firstError: { error: 'HudiLockUnavailableError' },
    });
    expect(held.summary.needsAttention).toBeUndefined();
    expect(entries.length).toBeGreaterThan(0);
    expect(entries.map((e) => e.state)).toEqual(entries.map(() => 'aborted'));
    const instant = String(entries[0]?.formatState?.hudiInstant);
    const changed = Object.keys({ ...bytesBefore, ...bytesWhileHeld }).filter(
      (k) => bytesBefore[k] !== bytesWhileHeld[k],
    );
    expect(changed).toEqual([`.hoodie/timeline/${instant}.compaction.requested`]);
    expect(await leases.holds({ table: 'trips', partition }, 'run-held')).toBe(false);
    expect(released).toBe('released');
    // the re-run, once the holder let go, finished T with the same rows
    expect(rerun.summary.status, JSON.stringify(rerun.summary)).toBe('SUCCEEDED');
    expect(rerun.summary.groupsDone).toBe(entries.length);
    const after = await readHudiTable(store, ROOT);
    expect(after.timeline.pendingPlans).toEqual([]);
    expect(
      after.timeline.completedWrites.filter((w) => w.metadata.compacted).map((w) => w.instant.time),
    ).toEqual([...compactedBefore, instant]);
    expect(await hudiMergedView(db, dir, ROOT, await columnsOf(dir))).toEqual(rowsBefore);
  }, 120_000);

  it('Copy-on-Write clustering whose commit step finds the lock held: the group rolls back, every byte unchanged; a held re-run fails alike, the one after the release clusters, same rows', async () => {
    // Prepare: the holder takes the lock once the group's outputs are verified (its plan is on the timeline, its
    // outputs about to enter the table) and keeps it through that run's end and the whole next run
    const dir = await cowTable();
    const store = new LocalObjectStore(dir);
    const clock = new ManualClock(NOW);
    const table = await heldTable(clock, (await readHudiTable(store, ROOT)).config.name ?? ROOT);
    const bytesBefore = await tableBytes(dir);
    const rowsBefore = await hudiMergedView(db, dir, ROOT, await columnsOf(dir));
    const journal = new MemoryJournal();
    const leases = new MemoryLeases();
    const deps = {
      store,
      journal,
      clock,
      engine: defaultParquetEngine,
      leases,
      format: table.format,
      wait: async () => {},
    };
    const options = { plan: { inlineGroupLimit: 100, compactMemoryMb: 1024 } };
    const partition = '10';
    const holdAtCommit = {
      ...WORKFLOW_STEPS,
      commitStep: async (...args: Parameters<typeof WORKFLOW_STEPS.commitStep>) => {
        await table.hold();
        return WORKFLOW_STEPS.commitStep(...args);
      },
    };

    // Act: a run whose commit step meets the held lock, a re-run while it is still held, a re-run after the release
    const held = await runPartition(deps, runOf('run-held', partition), options, {}, holdAtCommit);
    const bytesAfterHeld = await tableBytes(dir);
    const heldEntries = await journal.listRun('run-held');
    const again = await runPartition(deps, runOf('run-again', partition), options).then(
      (r) => ({ ok: true as const, r }),
      (error: unknown) => ({ ok: false as const, error }),
    );
    const bytesAfterAgain = await tableBytes(dir);
    const released = await table.release();
    const rerun = await runPartition(deps, runOf('run-after', partition), options);

    // Assess: the held run failed naming the lock's error, its group rolled back (outputs, markers, inflight,
    // requested plan, heartbeat gone: every byte as before), the partition released rather than needs-attention
    expect(held.summary, JSON.stringify(held.summary)).toMatchObject({
      status: 'FAILED',
      groupsDone: 0,
      failedGroups: heldEntries.length,
      firstError: { error: 'HudiLockUnavailableError' },
    });
    expect(held.summary.needsAttention).toBeUndefined();
    expect(heldEntries.length).toBeGreaterThan(0);
    expect(heldEntries.map((e) => [e.state, e.undo])).toEqual(heldEntries.map(() => ['aborted', 'done']));
    expect(bytesAfterHeld).toEqual(bytesBefore);
    expect(await hudiMergedView(db, dir, ROOT, await columnsOf(dir))).toEqual(rowsBefore);
    expect(await leases.holds({ table: 'trips', partition }, 'run-held')).toBe(false);
    // the run while it is still held fails the same way, changing nothing
    const summaryAgain = again.ok ? again.r.summary : undefined;
    expect(summaryAgain, String(again.ok || again.error)).toMatchObject({
      status: 'FAILED',
      groupsDone: 0,
      firstError: { error: 'HudiLockUnavailableError' },
    });
    expect(bytesAfterAgain).toEqual(bytesBefore);
    // the run after the release clusters the partition with the same rows
    expect(released).toBe('released');
    expect(rerun.summary.status, JSON.stringify(rerun.summary)).toBe('SUCCEEDED');
    expect(rerun.summary.groupsDone).toBeGreaterThan(0);
    const after = await readHudiTable(store, ROOT);
    expect(after.timeline.pendingPlans).toEqual([]);
    expect(after.timeline.completedWrites.some((w) => w.instant.action === 'replacecommit')).toBe(true);
    expect(await hudiMergedView(db, dir, ROOT, await columnsOf(dir))).toEqual(rowsBefore);
  }, 120_000);

  it('Merge-on-Read compaction whose lock stays held through its completion and the next two runs: each leaves only the requested plan; the run after the release finishes it, same rows', async () => {
    // Prepare: the holder takes the lock once the plan step scheduled T and keeps it through three runs
    const dir = await copyHudiFixture('mor_v8_trips_8i3u1d', ROOT, dirs);
    const store = new LocalObjectStore(dir);
    const clock = new ManualClock(NOW);
    const start = await readHudiTable(store, ROOT);
    const compactedBefore = compactionsOf(start);
    const table = await heldTable(clock, start.config.name ?? ROOT);
    const bytesBefore = await tableBytes(dir);
    const rowsBefore = await hudiMergedView(db, dir, ROOT, await columnsOf(dir));
    const journal = new MemoryJournal();
    const leases = new MemoryLeases();
    const deps = {
      store,
      journal,
      clock,
      engine: defaultParquetEngine,
      leases,
      format: table.format,
      wait: async () => {},
    };
    const options = { plan: { inlineGroupLimit: 100, compactMemoryMb: 1024 } };
    const partition = 'city=sao_paulo';

    // Act: the first run meets the lock at completion; two more while it is held; one after the release
    const first = await runPartition(deps, runOf('run-1', partition), options, {
      planned: async () => {
        await table.hold();
      },
    });
    const instant = String((await journal.listRun('run-1'))[0]?.formatState?.hudiInstant);
    const whileHeld: { outcome: unknown; changed: string[]; released: boolean }[] = [];
    for (const runId of ['run-2', 'run-3']) {
      const outcome = await runPartition(deps, runOf(runId, partition), options).then(
        (r) => r.summary,
        (error: unknown) => error,
      );
      const bytes = await tableBytes(dir);
      whileHeld.push({
        outcome,
        changed: Object.keys({ ...bytesBefore, ...bytes }).filter((k) => bytesBefore[k] !== bytes[k]),
        released: !(await leases.holds({ table: 'trips', partition }, runId)),
      });
    }
    await table.release();
    const last = await runPartition(deps, runOf('run-4', partition), options);

    // Assess: every held run failed on the lock and left of T only its requested plan, the partition released each
    // time; the run after the release finished that same T, with the rows of the merged view before
    expect(first.summary).toMatchObject({
      status: 'FAILED',
      firstError: { error: 'HudiLockUnavailableError' },
    });
    const requestedOnly = [`.hoodie/timeline/${instant}.compaction.requested`];
    for (const held of whileHeld) {
      expect(held.outcome).toBeInstanceOf(HudiLockUnavailableError);
      expect(held.changed).toEqual(requestedOnly);
      expect(held.released).toBe(true);
    }
    expect(last.summary.status, JSON.stringify(last.summary)).toBe('SUCCEEDED');
    const after = await readHudiTable(store, ROOT);
    expect(after.timeline.pendingPlans).toEqual([]);
    expect(compactionsOf(after)).toEqual([...compactedBefore, instant]);
    expect(await hudiMergedView(db, dir, ROOT, await columnsOf(dir))).toEqual(rowsBefore);
    expect(await tempFiles(dir)).toEqual([]);
  }, 180_000);

  it('Merge-on-Read compaction left at its plan by a completion lock timeout: the run that resumes it dies at any request, the sweep dies settling once; the next settle and run finish it, same rows', async () => {
    // Prepare: the requests of a clean resume (after a run that met the lock at completion), and the crash points —
    // the first request of each writing step of the resume
    const partition = 'city=sao_paulo';
    const options = { plan: { inlineGroupLimit: 100, compactMemoryMb: 1024 } };
    const afterTimeout = async () => {
      const dir = await copyHudiFixture('mor_v8_trips_8i3u1d', ROOT, dirs);
      const clock = new ManualClock(NOW);
      const live = new LocalObjectStore(dir);
      const start = await readHudiTable(live, ROOT);
      const table = await heldTable(clock, start.config.name ?? ROOT);
      const journal = new MemoryJournal();
      const rowsBefore = await hudiMergedView(db, dir, ROOT, await columnsOf(dir));
      const deps = (store: ObjectStore, format: TableFormat, j: Journal) => ({
        store,
        journal: j,
        clock,
        engine: defaultParquetEngine,
        leases: new MemoryLeases(),
        format,
        wait: async () => {},
      });
      const held = await runPartition(
        deps(live, table.format, journal),
        runOf('run-held', partition),
        options,
        {
          planned: async () => {
            await table.hold();
          },
        },
      );
      expect(held.summary.firstError?.error).toBe('HudiLockUnavailableError');
      await table.release();
      return { dir, live, clock, table, journal, deps, rowsBefore, compactedBefore: compactionsOf(start) };
    };
    const probe = await afterTimeout();
    const calls: StoreCall[] = [];
    const logging = crashingStore(probe.live, Number.MAX_SAFE_INTEGER, 'before', calls);
    const clean = await runPartition(
      probe.deps(logging.store, probe.table.format, probe.journal),
      runOf('probe', partition),
      options,
    );
    expect(clean.summary.status).toBe('SUCCEEDED');
    const points = RESUME_STEPS.map((step) => {
      const index = calls.findIndex(step.matches);
      expect(index, step.name).toBeGreaterThanOrEqual(0);
      return { at: index + 1, name: step.name };
    });

    for (const point of points)
      for (const when of ['before', 'after'] as const) {
        const t = await afterTimeout();
        const instant = String((await t.journal.listRun('run-held'))[0]?.formatState?.hudiInstant);
        const dying = crashingStore(t.live, point.at, when);

        // Act: the resuming run dies; the sweep's settle dies after its first request; the next settle; a new run
        await runPartition(
          t.deps(dying.store, t.table.dyingFormat(dying.crashed), dyingJournal(t.journal, dying.crashed)),
          runOf('run-resume', partition),
          options,
        ).catch(() => undefined);
        await dying.quiesce();
        t.clock.advance(10 * 60_000);
        const settler = crashingStore(t.live, 1, 'after');
        await settleAfterDeadRun(
          t.deps(
            settler.store,
            t.table.dyingFormat(settler.crashed),
            dyingJournal(t.journal, settler.crashed),
          ),
          { table: 'trips', partition },
          'run-resume',
        ).catch(() => undefined);
        await settler.quiesce();
        const sweep = await settleAfterDeadRun(
          t.deps(t.live, t.table.format, t.journal),
          { table: 'trips', partition },
          'run-resume',
        );
        const rerun = await runPartition(
          t.deps(t.live, t.table.format, t.journal),
          runOf('run-next', partition),
          options,
        );

        // Assess: T completed once (by the dying run, the settle or the new run), nothing pending or left under
        // `.hoodie/.temp/`, the rows of the merged view before
        const label = `${when} ${point.name}`;
        expect(dying.crashed(), label).toBe(true);
        expect(sweep.unsettled, label).toEqual([]);
        expect(rerun.summary.status, `${label}: ${JSON.stringify(rerun.summary.firstError)}`).toBe(
          'SUCCEEDED',
        );
        const state = await readHudiTable(t.live, ROOT);
        expect(state.timeline.pendingPlans, label).toEqual([]);
        expect(compactionsOf(state), label).toEqual([...t.compactedBefore, instant]);
        expect(await hudiMergedView(db, t.dir, ROOT, await columnsOf(t.dir)), label).toEqual(t.rowsBefore);
        expect(await tempFiles(t.dir), label).toEqual([]);
      }
  }, 900_000);
});

/** The data columns of the table's base files (the view compares every column but `_hoodie_file_name`). */
async function columnsOf(dir: string): Promise<string[]> {
  const state = await readHudiTable(new LocalObjectStore(dir), ROOT);
  const base = state.partitions.flatMap((p) => p.liveSlices).find((s) => s.baseFile !== undefined)?.baseFile;
  if (base === undefined) throw new Error('the fixture has no base file');
  const rows = await db.rows(`DESCRIBE SELECT * FROM read_parquet('${join(dir, base.key)}')`);
  return rows.map((r) => String(r.column_name)).filter((c) => c !== '_hoodie_file_name');
}

/** The completed compactions of the table, in timeline order. */
function compactionsOf(state: Awaited<ReturnType<typeof readHudiTable>>): string[] {
  return state.timeline.completedWrites.filter((w) => w.metadata.compacted).map((w) => w.instant.time);
}

/** Files under `.hoodie/.temp/` (markers, staged log rows): none once a compaction completed or was rolled back. */
async function tempFiles(dir: string): Promise<string[]> {
  const entries = await readdir(join(dir, ROOT, '.hoodie', '.temp'), {
    recursive: true,
    withFileTypes: true,
  }).catch(() => []);
  return entries.filter((d) => d.isFile()).map((d) => d.name);
}

/** The first request of each step of a run resuming a compaction left at its plan that writes, by what it touches. */
const RESUME_STEPS: readonly { readonly name: string; readonly matches: (c: StoreCall) => boolean }[] = [
  { name: 'store the plan', matches: (c) => c.method === 'put' && c.key.includes('_lake-compactor/plans/') },
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
