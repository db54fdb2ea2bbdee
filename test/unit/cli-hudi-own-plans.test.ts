// `lake-compactor compact --format hudi` and the plans our runs leave on a Hudi table (local folders):
// - a compaction plan the merge refuses at its rewrite (a refused block committed below T after the plan-time check)
//   is unscheduled by the CLI as the workflow does: rolled back, then its requested file removed — every byte of the
//   table as before but the refused log; and so is a plan of ours a killed CLI run left, when the next run (a new
//   run id) resumes it by the mark in its extraMetadata; once the log is fixed, a run compacts with the merged rows
//   unchanged (a multiset, DuckDB over the base files, logs merged by the project's reader); on table version 6 too
//   (with a v6 writer's log named with base instant T: cli-hudi-unschedule-v6.test.ts);
// - a clustering plan of ours a killed run left, with no journal naming it (the run's working folder gone), is rolled
//   back by the next run once its heartbeat is stale, and the partition is clustered with the same rows; a Hudi
//   writer's plan (no mark) in the same state is left byte for byte.

import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { runCompact } from '../../functions/cli/compact.js';
import { ABANDONED_AFTER_MS } from '../../functions/core/formats/hudi/abandoned-plans.js';
import { planMarkOf } from '../../functions/core/formats/hudi/plan-mark.js';
import { readHudiTable } from '../../functions/core/formats/hudi/table-state.js';
import {
  clusteringRequestedContent,
  decodeTimelineAvro,
  type RequestedReplaceMetadata,
  requestedReplaceSchemaFor,
} from '../../functions/core/formats/hudi/timeline-writer/index.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';
import { ageFiles } from '../support/age-files.js';
import { observedStore } from '../support/crash-store.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';
import { appendHudiInsert, createHudiTable } from '../support/hudi-appender.js';
import {
  appendRefusedBlock,
  copyHudiFixture,
  hudiMergedView,
  TRIPS_COLUMNS,
} from '../support/hudi-mor-view.js';
import { liveFiles } from '../support/hudi-replay.js';

const ROOT = 'trips';
const MOR_FLAGS = {
  format: 'hudi',
  hudiLock: 'storage',
  hudiIndexType: 'BLOOM',
  hudiTimezone: 'UTC',
  hudiCompactionDeltaCommits: 1,
} as const;
/** Past the storage lock's validity, which a killed process never released. */
const LOCK_EXPIRY_MS = 10 * 60_000;

let db: DuckDb;
const dirs: string[] = [];
beforeAll(async () => {
  db = await openDuckDb();
});
afterAll(() => db?.close());
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

const ioAt = (now: number, lines: string[] = []) => ({
  out: (l: string) => lines.push(l),
  clock: { now: () => now },
  env: {},
});

/** A store whose process dies right after the first put of a key `dies` picks: that put and every later request throw. */
function dyingAfter(dies: (key: string) => boolean): {
  wrap: (inner: ObjectStore) => ObjectStore;
  died: () => boolean;
} {
  let dead = false;
  return {
    died: () => dead,
    wrap: (inner) =>
      observedStore(inner, {
        before: (call) => {
          if (dead) throw new Error(`injected: the process died before ${call.method} ${call.key}`);
        },
        after: (call) => {
          if (call.method === 'put' && dies(call.key)) {
            dead = true;
            throw new Error(`injected: the process died after put ${call.key}`);
          }
        },
      }),
  };
}

/** Every file under `root` (the store's journal and lock files aside) and its SHA-256. */
async function tableBytes(root: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const entry of await readdir(root, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const file = join(entry.parentPath, entry.name);
    const rel = relative(root, file);
    if (rel.startsWith('_lake-compactor') || rel.startsWith('.hoodie/.locks/')) continue;
    out[rel] = createHash('sha256')
      .update(await readFile(file))
      .digest('hex');
  }
  return out;
}

async function pendingOf(
  store: ObjectStore,
  root: string,
  kind: 'compaction' | 'clustering',
): Promise<string[]> {
  const state = await readHudiTable(store, root);
  return state.timeline.pendingPlans
    .filter((p) => p.kind === kind)
    .map((p) => `${p.instant.time}.${p.instant.state}`);
}

describe('a compaction plan of ours the merge refuses, through the CLI (v8 Merge-on-Read)', () => {
  it("the run's own plan: unscheduled — every byte of the table as before but the refused log — and once the log is fixed a run compacts with the same merged rows", async () => {
    // Prepare
    const dir = await copyHudiFixture('mor_v8_trips_8i3u1d', ROOT, dirs);
    const table = join(dir, ROOT);
    const store = new LocalObjectStore(table);
    const rowsBefore = await hudiMergedView(db, dir, ROOT, TRIPS_COLUMNS);
    let refused: { key: string; before: Uint8Array } | undefined;
    const hooks = {
      // Once the plan is scheduled (its inflight written), a refused block lands in a log the plan names.
      wrapStore: (inner: ObjectStore): ObjectStore => {
        const observed = observedStore(inner, {});
        return {
          ...observed,
          put: async (key, body, options) => {
            const result = await observed.put(key, body, options);
            if (refused === undefined && key.endsWith('.compaction.inflight'))
              refused = await appendRefusedBlock(new LocalObjectStore(dir), ROOT, 'city=sao_paulo');
            return result;
          },
        };
      },
    };
    const before = await tableBytes(table);

    // Act
    const failed = await runCompact(table, { ...MOR_FLAGS }, ioAt(Date.UTC(2026, 11, 7, 12)), hooks).catch(
      (err: unknown) => err,
    );

    // Assess: refused by name; no plan left; the table as before but the log the block was appended to
    expect((failed as Error).name).toBe('HudiLogUnsupportedError');
    if (refused === undefined) throw new Error('the plan was never scheduled');
    expect(await pendingOf(store, '', 'compaction')).toEqual([]);
    const logName = relative(ROOT, refused.key);
    const after = await tableBytes(table);
    expect(after[logName]).not.toBe(before[logName]);
    expect({ ...after, [logName]: before[logName] }).toEqual(before);

    // Act: the log fixed, a run
    await new LocalObjectStore(dir).put(refused.key, refused.before);
    await runCompact(table, { ...MOR_FLAGS }, ioAt(Date.UTC(2026, 11, 7, 12) + LOCK_EXPIRY_MS));

    // Assess
    expect(await pendingOf(store, '', 'compaction')).toEqual([]);
    expect(await hudiMergedView(db, dir, ROOT, TRIPS_COLUMNS)).toEqual(rowsBefore);
  }, 60_000);

  it('a plan a killed CLI run left: the next run (a new run id) resumes it by its mark and, refused, unschedules it; once the log is fixed a run compacts with the same merged rows', async () => {
    // Prepare: a run killed right after it scheduled its plan; then a refused block lands in a log the plan names
    const dir = await copyHudiFixture('mor_v8_trips_8i3u1d', ROOT, dirs);
    const table = join(dir, ROOT);
    const store = new LocalObjectStore(table);
    const rowsBefore = await hudiMergedView(db, dir, ROOT, TRIPS_COLUMNS);
    const before = await tableBytes(table);
    const dying = dyingAfter((key) => key.endsWith('.compaction.inflight'));
    // The clock from now on: whether the killed run is dead is read from the plan's file times.
    const t0 = Date.now();
    await runCompact(table, { ...MOR_FLAGS }, ioAt(t0), { wrapStore: dying.wrap }).catch(() => undefined);
    const [pending] = await pendingOf(store, '', 'compaction');
    const instant = pending?.slice(0, pending.indexOf('.')) ?? '';
    const plan = decodeTimelineAvro(await store.get(`.hoodie/timeline/${instant}.compaction.requested`))
      .records[0] as {
      extraMetadata?: unknown;
    };
    const refused = await appendRefusedBlock(new LocalObjectStore(dir), ROOT, 'city=sao_paulo');

    // Act: once the killed run is dead by our rule (what it wrote untouched for longer than ABANDONED_AFTER_MS)
    await ageFiles(table, ABANDONED_AFTER_MS + 60_000);
    const failed = await runCompact(
      table,
      { ...MOR_FLAGS },
      ioAt(t0 + ABANDONED_AFTER_MS + LOCK_EXPIRY_MS),
    ).catch((err: unknown) => err);

    // Assess: the killed run's plan was marked with its run, resumed, refused and unscheduled
    expect(dying.died()).toBe(true);
    expect(pending).toMatch(/\.inflight$/);
    expect(planMarkOf(plan.extraMetadata)?.run).toMatch(/^cli-/);
    expect((failed as Error).name).toBe('HudiLogUnsupportedError');
    expect(await pendingOf(store, '', 'compaction')).toEqual([]);
    const logName = relative(ROOT, refused.key);
    const after = await tableBytes(table);
    expect({ ...after, [logName]: before[logName] }).toEqual(before);

    // Act: the log fixed, a run
    await new LocalObjectStore(dir).put(refused.key, refused.before);
    await runCompact(table, { ...MOR_FLAGS }, ioAt(t0 + ABANDONED_AFTER_MS + 2 * LOCK_EXPIRY_MS));

    // Assess
    expect(await pendingOf(store, '', 'compaction')).toEqual([]);
    expect(await hudiMergedView(db, dir, ROOT, TRIPS_COLUMNS)).toEqual(rowsBefore);
  }, 60_000);
});

describe('a pending compaction plan of ours another CLI run scheduled (v8 Merge-on-Read)', () => {
  /** A run killed right after it scheduled its plan (requested and inflight written): its instant and run. */
  async function killedAfterScheduling(table: string, t0: number): Promise<{ instant: string; run: string }> {
    const store = new LocalObjectStore(table);
    const dying = dyingAfter((key) => key.endsWith('.compaction.inflight'));
    await runCompact(table, { ...MOR_FLAGS }, ioAt(t0), { wrapStore: dying.wrap }).catch(() => undefined);
    expect(dying.died()).toBe(true);
    const [pending] = await pendingOf(store, '', 'compaction');
    const instant = pending?.slice(0, pending.indexOf('.')) ?? '';
    const plan = decodeTimelineAvro(await store.get(`.hoodie/timeline/${instant}.compaction.requested`))
      .records[0] as { extraMetadata?: unknown };
    return { instant, run: planMarkOf(plan.extraMetadata)?.run ?? '' };
  }

  for (const skew of [0, ABANDONED_AFTER_MS + LOCK_EXPIRY_MS])
    it(`while its run may be alive (its plan written moments ago by the store's clock${skew === 0 ? '' : `; this machine's clock ${skew / 60_000} min ahead`}): left alone, the run holding it and what to do said, every byte unchanged`, async () => {
      // Prepare
      const dir = await copyHudiFixture('mor_v8_trips_8i3u1d', ROOT, dirs);
      const table = join(dir, ROOT);
      const t0 = Date.now();
      const { instant, run } = await killedAfterScheduling(table, t0);
      const before = await tableBytes(table);
      const lines: string[] = [];

      // Act: past the storage lock's validity (5 min) by this machine's clock; by the store's, well within
      // ABANDONED_AFTER_MS of the plan's last sign of life, however far this machine's clock runs ahead
      await runCompact(table, { ...MOR_FLAGS }, ioAt(t0 + 6 * 60_000 + skew, lines));

      // Assess
      expect(run).toMatch(/^cli-/);
      expect(lines.join('\n')).toContain(
        `Hudi Merge-on-Read compaction ${instant}: left alone — a pending plan of ours held by run ${run}, which is still alive`,
      );
      expect(lines.join('\n')).toContain('run compact again once its heartbeat is over 10 min old');
      expect(await pendingOf(new LocalObjectStore(table), '', 'compaction')).toEqual([`${instant}.inflight`]);
      expect(await tableBytes(table)).toEqual(before);
    }, 60_000);

  it('once its run is dead (nothing written for ABANDONED_AFTER_MS): taken over and completed, the merged rows unchanged', async () => {
    // Prepare
    const dir = await copyHudiFixture('mor_v8_trips_8i3u1d', ROOT, dirs);
    const table = join(dir, ROOT);
    const rowsBefore = await hudiMergedView(db, dir, ROOT, TRIPS_COLUMNS);
    const t0 = Date.now();
    const { instant } = await killedAfterScheduling(table, t0);
    const lines: string[] = [];

    // Act: what the killed run wrote is older than ABANDONED_AFTER_MS
    await ageFiles(table, ABANDONED_AFTER_MS + 60_000);
    await runCompact(table, { ...MOR_FLAGS }, ioAt(t0 + ABANDONED_AFTER_MS + LOCK_EXPIRY_MS, lines));

    // Assess
    expect(lines.join('\n')).toContain(`Hudi Merge-on-Read compaction ${instant} (a pending plan, finished)`);
    const state = await readHudiTable(new LocalObjectStore(table), '');
    expect(state.timeline.pendingPlans).toEqual([]);
    expect(
      state.timeline.completedWrites.filter((w) => w.instant.time === instant && w.metadata.compacted),
    ).toHaveLength(1);
    expect(await hudiMergedView(db, dir, ROOT, TRIPS_COLUMNS)).toEqual(rowsBefore);
  }, 60_000);
});

describe('a compaction plan of ours the merge refuses, through the CLI (v6 Merge-on-Read)', () => {
  const PARTITION = 'city=san_francisco';
  it("the run's own plan: unscheduled — every byte of the table as before but the refused log — and once the log is fixed a run compacts with the same merged rows", async () => {
    // Prepare: once the plan is scheduled (its inflight written), a refused block lands in a log the plan names
    const dir = await copyHudiFixture('mor_v6_trips_8i1u', ROOT, dirs);
    const table = join(dir, ROOT);
    const store = new LocalObjectStore(table);
    const rowsBefore = await hudiMergedView(db, dir, ROOT, TRIPS_COLUMNS);
    let refused: { key: string; before: Uint8Array } | undefined;
    const hooks = {
      wrapStore: (inner: ObjectStore): ObjectStore => {
        const observed = observedStore(inner, {});
        return {
          ...observed,
          put: async (key, body, options) => {
            const result = await observed.put(key, body, options);
            if (refused === undefined && key.endsWith('.compaction.inflight'))
              refused = await appendRefusedBlock(new LocalObjectStore(dir), ROOT, PARTITION);
            return result;
          },
        };
      },
    };
    const before = await tableBytes(table);
    const t0 = Date.UTC(2026, 11, 7, 12);

    // Act
    const failed = await runCompact(table, { ...MOR_FLAGS }, ioAt(t0), hooks).catch((err: unknown) => err);

    // Assess: refused by name; the plan gone; every byte of the table as before but the log the block was
    // appended to (the unschedule's trace removed once it was done)
    expect((failed as Error).name).toBe('HudiLogUnsupportedError');
    if (refused === undefined) throw new Error('the plan was never scheduled');
    expect(await pendingOf(store, '', 'compaction')).toEqual([]);
    const logName = relative(ROOT, refused.key);
    const after = await tableBytes(table);
    expect(after[logName]).not.toBe(before[logName]);
    expect({ ...after, [logName]: before[logName] }).toEqual(before);

    // Act: the log fixed, a run
    await new LocalObjectStore(dir).put(refused.key, refused.before);
    await runCompact(table, { ...MOR_FLAGS }, ioAt(t0 + LOCK_EXPIRY_MS));

    // Assess
    expect(await pendingOf(store, '', 'compaction')).toEqual([]);
    expect(await hudiMergedView(db, dir, ROOT, TRIPS_COLUMNS)).toEqual(rowsBefore);
  }, 60_000);
});

describe('a clustering plan a killed run left, its journal gone (v8 Copy-on-Write)', () => {
  async function killedClustering(): Promise<{
    dir: string;
    store: LocalObjectStore;
    rows: string[];
    instant: string;
  }> {
    const dir = await mkdtemp(join(tmpdir(), 'lc-hudi-own-'));
    dirs.push(dir);
    const store = new LocalObjectStore(dir);
    const table = await createHudiTable(store, '', 8);
    for (let b = 0; b < 5; b += 1) await appendHudiInsert(table, '10', 3 + b);
    const rows = await liveRows(dir);
    // Killed once the heartbeat, the plan and the inflight are written, before its output's marker
    const dying = dyingAfter((key) => /\.(clustering|replacecommit)\.inflight$/.test(key));
    await runCompact(dir, { format: 'hudi', hudiLock: 'storage', hudiIndexType: 'BLOOM' }, ioAt(Date.now()), {
      wrapStore: dying.wrap,
    }).catch(() => undefined);
    expect(dying.died()).toBe(true);
    // The run's journal is gone with its working folder (another machine's CLI, a deployment torn down).
    await rm(join(dir, '_lake-compactor'), { recursive: true, force: true });
    const [pending] = await pendingOf(store, '', 'clustering');
    return { dir, store, rows, instant: pending?.slice(0, pending.indexOf('.')) ?? '' };
  }

  async function liveRows(dir: string): Promise<string[]> {
    const list = (await liveFiles(dir, 8)).map((f) => sqlString(join(dir, f))).join(', ');
    const rows = await db.rows(
      `SELECT * EXCLUDE (_hoodie_file_name) FROM read_parquet([${list}]) ORDER BY ALL`,
    );
    return rows.map((r) => JSON.stringify(r, (_k, v) => (typeof v === 'bigint' ? String(v) : v)));
  }

  it('ours: once its heartbeat is stale the next run rolls it back and clusters the partition, rows unchanged', async () => {
    // Prepare
    const { dir, store, rows, instant } = await killedClustering();
    const lines: string[] = [];
    await ageFiles(dir, ABANDONED_AFTER_MS + 60_000);

    // Act
    await runCompact(
      dir,
      { format: 'hudi', hudiLock: 'storage', hudiIndexType: 'BLOOM' },
      ioAt(Date.now() + ABANDONED_AFTER_MS + LOCK_EXPIRY_MS, lines),
    );

    // Assess
    expect(instant).not.toBe('');
    expect(lines.join('\n')).toContain(
      `Hudi clustering ${instant}: a plan of ours whose run died, rolled back`,
    );
    expect(await pendingOf(store, '', 'clustering')).toEqual([]);
    const state = await readHudiTable(store, '');
    expect(state.timeline.completedWrites.filter((w) => w.instant.action === 'replacecommit')).toHaveLength(
      1,
    );
    expect(state.partitions.find((p) => p.partition === '10')?.liveSlices).toHaveLength(1);
    expect(await liveRows(dir)).toEqual(rows);
  }, 60_000);

  it("a Hudi writer's (no mark), as stale: left byte for byte, rows unchanged", async () => {
    // Prepare: our mark taken out of the plan, as a Hudi writer writes one
    const { dir, store, rows, instant } = await killedClustering();
    const key = `.hoodie/timeline/${instant}.clustering.requested`;
    const plan = decodeTimelineAvro(await store.get(key), requestedReplaceSchemaFor(8))
      .records[0] as RequestedReplaceMetadata;
    await store.put(key, clusteringRequestedContent(8, { ...plan, extraMetadata: {} }));
    await ageFiles(dir, ABANDONED_AFTER_MS + 60_000);
    const before = await tableBytes(dir);

    // Act
    await runCompact(
      dir,
      { format: 'hudi', hudiLock: 'storage', hudiIndexType: 'BLOOM' },
      ioAt(Date.now() + ABANDONED_AFTER_MS + LOCK_EXPIRY_MS),
    ).catch((err: unknown) => err);

    // Assess: the plan and everything its run left are as they were; no row changed
    const after = await tableBytes(dir);
    expect(await pendingOf(store, '', 'clustering')).toEqual([`${instant}.inflight`]);
    for (const [file, hash] of Object.entries(before))
      if (file.startsWith('.hoodie/') || file.includes(instant)) expect(after[file], file).toBe(hash);
    expect(await liveRows(dir)).toEqual(rows);
  }, 60_000);
});
