// Table version 6: unscheduling a refused compaction plan of ours while a v6 writer names its logs with the plan's
// base instant T (`lake-compactor compact`, local folders, fixture mor_v6_trips_8i1u):
// - the writer's log of the plan's file group lands under T before our check, between our check and the delete of
//   the plan, or right after the delete (injected through the store port at exactly those requests, not by timing):
//   the plan is gone and the log renamed into the slice it extends by Hudi's rule (`.<fileId>_<B>.log.<next>_1-0-1`),
//   every record readable through the slices the timeline defines — the rows (DuckDB over the base files, logs
//   merged by the project's reader) equal to those of the same table whose writer wrote its log into the live slice;
// - a writer still pending when the plan is deleted (it read the timeline while T was pending): the trace stays, and
//   the log it writes under T afterwards is renamed by the next run, which then removes the trace — the same rows;
// - the run killed right after it wrote the unschedule's trace, after the log's copy, or after the plan's delete:
//   the next run settles it — the same rows, nothing left under T, no trace.

import { readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { runCompact } from '../../functions/cli/compact.js';
import {
  avroDataBlock,
  DecodeBudget,
  decodeBlockRecords,
  readLogBlocks,
} from '../../functions/core/formats/hudi/log/index.js';
import { readHudiTable } from '../../functions/core/formats/hudi/table-state.js';
import { nextInstant } from '../../functions/core/formats/hudi/timeline-writer/instant-time.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';
import { observedStore } from '../support/crash-store.js';
import { type DuckDb, openDuckDb } from '../support/duckdb.js';
import {
  appendRefusedBlock,
  copyHudiFixture,
  hudiMergedView,
  TRIPS_COLUMNS,
} from '../support/hudi-mor-view.js';

const ROOT = 'trips';
const PARTITION = 'city=san_francisco';
const MOR_FLAGS = {
  format: 'hudi',
  hudiLock: 'storage',
  hudiIndexType: 'BLOOM',
  hudiTimezone: 'UTC',
  hudiCompactionDeltaCommits: 1,
} as const;
/** Past the storage lock's validity, which a killed process never released. */
const LOCK_EXPIRY_MS = 10 * 60_000;
/** The fixture's delta commit that wrote the partition's log (its files are the writer's template). */
const TEMPLATE = '20250331030645735';

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

/** The partition's file group with a log: its id, base instant and log file (in the fixture). */
async function loggedGroup(table: string): Promise<{ fileId: string; base: string; log: string }> {
  const names = await readdir(join(table, PARTITION));
  const log = names.find((n) => n.startsWith('.') && n.includes('.log.'));
  const m = log === undefined ? null : /^\.([^_]+)_(\d{17})\.log\./.exec(log);
  if (log === undefined || m === null) throw new Error('the fixture has no log in the partition');
  return { fileId: m[1] as string, base: m[2] as string, log };
}

/**
 * A v6 writer's delta commit `instant` updating the record of the fixture's log (a new fare, its own commit time):
 * the log bytes, and its requested, inflight and completed files as the fixture's writer left them.
 */
async function writerCommit(
  table: string,
  instant: string,
  logName: string,
  fare = 1234.5,
): Promise<{ log: Uint8Array; timeline: [string, Uint8Array | string][] }> {
  const { log } = await loggedGroup(table);
  const bytes = new Uint8Array(await readFile(join(table, PARTITION, log)));
  const [block] = readLogBlocks(log, bytes);
  if (block === undefined || block.kind !== 'block') throw new Error('the fixture log has no block');
  const decoded = await decodeBlockRecords(block, new DecodeBudget());
  if (decoded.kind !== 'data') throw new Error('the fixture log holds no records');
  const records = decoded.records.map((r, i) => ({
    ...r,
    _hoodie_commit_time: instant,
    _hoodie_commit_seqno: `${instant}_0_${i}`,
    fare: fare + i,
  }));
  const completed = (await readFile(join(table, '.hoodie', `${TEMPLATE}.deltacommit`), 'utf8')).replaceAll(
    log,
    logName,
  );
  return {
    log: avroDataBlock(instant, block.header.get('SCHEMA') ?? '', records),
    timeline: [
      [`.hoodie/${instant}.deltacommit.requested`, new Uint8Array(0)],
      [
        `.hoodie/${instant}.deltacommit.inflight`,
        new Uint8Array(await readFile(join(table, '.hoodie', `${TEMPLATE}.deltacommit.inflight`))),
      ],
      [`.hoodie/${instant}.deltacommit`, completed],
    ],
  };
}

/** Writes the writer's commit into the table at `table` (store rooted there): its log under `logName`. */
async function landCommit(
  table: string,
  commit: { log: Uint8Array; timeline: [string, Uint8Array | string][] },
  logName: string,
): Promise<void> {
  const store = new LocalObjectStore(table);
  await store.put(`${PARTITION}/${logName}`, commit.log);
  for (const [key, body] of commit.timeline) await store.put(key, body);
}

/**
 * The rows a reader must see once the writer's commit is in: the same table, its writer's log written into the live
 * slice (the next version of base instant B), as if no compaction had been scheduled.
 */
async function expectedRows(instant: string, fares: readonly number[] = [1234.5]): Promise<string[]> {
  const dir = await copyHudiFixture('mor_v6_trips_8i1u', ROOT, dirs);
  const table = join(dir, ROOT);
  const { fileId, base } = await loggedGroup(table);
  for (const [i, fare] of fares.entries()) {
    const name = `.${fileId}_${base}.log.${2 + i}_0-1-0`;
    await landCommit(table, await writerCommit(table, instant, name, fare), name);
  }
  return hudiMergedView(db, dir, ROOT, TRIPS_COLUMNS);
}

/** Every file under the partition (names) and under the trace folder. */
async function leftovers(table: string): Promise<{ partition: string[]; traces: string[] }> {
  const traces = await readdir(join(table, '.hoodie', '.temp', 'lake-compactor-unscheduled')).catch(
    () => [] as string[],
  );
  return { partition: (await readdir(join(table, PARTITION))).sort(), traces };
}

async function pendingCompactions(table: string): Promise<string[]> {
  const state = await readHudiTable(new LocalObjectStore(table), '');
  return state.timeline.pendingPlans
    .filter((p) => p.kind === 'compaction')
    .map((p) => `${p.instant.time}.${p.instant.state}`);
}

type When = 'before our check' | 'after our check, before the delete' | 'after the delete';

/**
 * A store that, once the plan is scheduled, appends a refused block to the log the plan names (so the merge refuses
 * the plan and the run unschedules it), and lands a v6 writer's commit whose log of the same file group is named with
 * base instant T at the request `when` says: the plan's inflight written (before the unschedule looks), the requested
 * file's delete about to be sent, or that delete done.
 */
function racingWriter(
  dir: string,
  when: When,
): {
  wrap: (inner: ObjectStore) => ObjectStore;
  seen: () => { instant?: string; underT?: string; refused?: { key: string; before: Uint8Array } };
} {
  const table = join(dir, ROOT);
  const seen: { instant?: string; underT?: string; refused?: { key: string; before: Uint8Array } } = {};
  const land = async (): Promise<void> => {
    if (seen.underT !== undefined || seen.instant === undefined) return;
    const { fileId } = await loggedGroup(table);
    const name = `.${fileId}_${seen.instant}.log.1_0-7-0`;
    seen.underT = name;
    await landCommit(table, await writerCommit(table, nextInstant(seen.instant), name), name);
  };
  const isPlanDelete = (refs: readonly { key: string }[]) =>
    seen.instant !== undefined && refs.some((r) => r.key.endsWith(`${seen.instant}.compaction.requested`));
  return {
    seen: () => seen,
    wrap: (inner) => {
      const observed = observedStore(inner, {});
      return {
        ...observed,
        put: async (key, body, options) => {
          const result = await observed.put(key, body, options);
          if (seen.refused === undefined && key.endsWith('.compaction.inflight')) {
            const name = key.slice(key.lastIndexOf('/') + 1);
            seen.instant = name.slice(0, name.indexOf('.'));
            seen.refused = await appendRefusedBlock(new LocalObjectStore(dir), ROOT, PARTITION);
            if (when === 'before our check') await land();
          }
          return result;
        },
        deleteMany: async (refs) => {
          if (when === 'after our check, before the delete' && isPlanDelete(refs)) await land();
          const result = await observed.deleteMany(refs);
          if (when === 'after the delete' && isPlanDelete(refs)) await land();
          return result;
        },
      };
    },
  };
}

describe('unscheduling a refused plan of ours on table version 6 while a writer names its logs with T', () => {
  for (const when of ['before our check', 'after our check, before the delete', 'after the delete'] as const)
    it(`the writer's log landing ${when}: the plan removed, the log renamed into its slice by Hudi's rule, every record readable`, async () => {
      // Prepare
      const dir = await copyHudiFixture('mor_v6_trips_8i1u', ROOT, dirs);
      const table = join(dir, ROOT);
      const { fileId, base } = await loggedGroup(table);
      const rowsBefore = await hudiMergedView(db, dir, ROOT, TRIPS_COLUMNS);
      const writer = racingWriter(dir, when);
      const t0 = Date.now();

      // Act
      const failed = await runCompact(table, { ...MOR_FLAGS }, ioAt(t0), { wrapStore: writer.wrap }).catch(
        (err: unknown) => err,
      );

      // Assess: refused by name; the plan gone; the writer's log renamed after the slice's one log (version 2,
      // Hudi's unknown write token), nothing left under T, no trace
      const { instant, underT, refused } = writer.seen();
      expect((failed as Error).name).toBe('HudiLogUnsupportedError');
      if (instant === undefined || underT === undefined || refused === undefined)
        throw new Error('the writer never raced the unschedule');
      expect(await pendingCompactions(table)).toEqual([]);
      const left = await leftovers(table);
      expect(left.traces).toEqual([]);
      expect(left.partition.filter((n) => n.includes(`_${instant}.log.`))).toEqual([]);
      const renamed = `.${fileId}_${base}.log.2_1-0-1`;
      expect(left.partition).toContain(renamed);
      const commit = await writerCommit(table, nextInstant(instant), underT);
      expect(new Uint8Array(await readFile(join(table, PARTITION, renamed)))).toEqual(commit.log);

      // Assess: with the refused block taken out again, every record of the writer's commit is read
      await new LocalObjectStore(dir).put(refused.key, refused.before);
      const expected = await expectedRows(nextInstant(instant));
      expect(expected).not.toEqual(rowsBefore);
      expect(await hudiMergedView(db, dir, ROOT, TRIPS_COLUMNS)).toEqual(expected);

      // Act: a run compacts the table
      await runCompact(table, { ...MOR_FLAGS }, ioAt(t0 + LOCK_EXPIRY_MS));

      // Assess: the same rows, the compaction complete
      expect(await pendingCompactions(table)).toEqual([]);
      expect(await hudiMergedView(db, dir, ROOT, TRIPS_COLUMNS)).toEqual(expected);
    }, 90_000);

  const DIES_AFTER = {
    'the trace is written': (call: { method: string; key: string }) =>
      call.method === 'put' && call.key.includes('lake-compactor-unscheduled/'),
    "the writer's log is copied into its slice": (call: { method: string; key: string }) =>
      call.method === 'copy' && call.key.endsWith('_1-0-1'),
    'the plan is deleted': (call: { method: string; key: string }) =>
      call.method === 'deleteMany' && call.key.endsWith('.compaction.requested'),
  };
  for (const [step, dies] of Object.entries(DIES_AFTER))
    it(`the run killed right after ${step}: the next run settles it — the same rows, nothing under T, no trace`, async () => {
      // Prepare: the writer's log under T before our check; the process dies right after `step`
      const dir = await copyHudiFixture('mor_v6_trips_8i1u', ROOT, dirs);
      const table = join(dir, ROOT);
      const writer = racingWriter(dir, 'before our check');
      let dead = false;
      const wrap = (inner: ObjectStore): ObjectStore =>
        writer.wrap(
          observedStore(inner, {
            before: (call) => {
              if (dead) throw new Error(`injected: the process died before ${call.method} ${call.key}`);
            },
            after: (call) => {
              if (!dead && dies(call)) {
                dead = true;
                throw new Error(`injected: the process died after ${call.method} ${call.key}`);
              }
            },
          }),
        );
      const t0 = Date.now();
      await runCompact(table, { ...MOR_FLAGS }, ioAt(t0), { wrapStore: wrap }).catch(() => undefined);
      const { instant, refused } = writer.seen();
      if (instant === undefined || refused === undefined)
        throw new Error('the writer never raced the unschedule');

      // Act: the next run (the refused block still there)
      await runCompact(table, { ...MOR_FLAGS }, ioAt(t0 + LOCK_EXPIRY_MS)).catch((err: unknown) => err);

      // Assess
      expect(dead).toBe(true);
      expect(await pendingCompactions(table)).toEqual([]);
      const left = await leftovers(table);
      expect(left.traces).toEqual([]);
      expect(left.partition.filter((n) => n.includes(`_${instant}.log.`))).toEqual([]);
      await new LocalObjectStore(dir).put(refused.key, refused.before);
      expect(await hudiMergedView(db, dir, ROOT, TRIPS_COLUMNS)).toEqual(
        await expectedRows(nextInstant(instant)),
      );
    }, 90_000);
  it('a writer still pending when the plan is deleted: the trace stays; the log it writes under T later is renamed by the next run, which then removes the trace — every record readable', async () => {
    // Prepare: once the plan is scheduled a refused block lands in its log; right before the plan's delete a v6
    // writer begins a delta commit (requested, inflight) and writes its first log of the file group under T
    const dir = await copyHudiFixture('mor_v6_trips_8i1u', ROOT, dirs);
    const table = join(dir, ROOT);
    const { fileId, base } = await loggedGroup(table);
    const seen: { instant?: string; refused?: { key: string; before: Uint8Array } } = {};
    const writer = () => nextInstant(seen.instant ?? '');
    const wrap = (inner: ObjectStore): ObjectStore => {
      const observed = observedStore(inner, {});
      return {
        ...observed,
        put: async (key, body, options) => {
          const result = await observed.put(key, body, options);
          if (seen.refused === undefined && key.endsWith('.compaction.inflight')) {
            const name = key.slice(key.lastIndexOf('/') + 1);
            seen.instant = name.slice(0, name.indexOf('.'));
            seen.refused = await appendRefusedBlock(new LocalObjectStore(dir), ROOT, PARTITION);
          }
          return result;
        },
        deleteMany: async (refs) => {
          if (
            seen.instant !== undefined &&
            refs.some((r) => r.key.endsWith(`${seen.instant}.compaction.requested`))
          ) {
            const name = `.${fileId}_${seen.instant}.log.1_0-7-0`;
            const commit = await writerCommit(table, writer(), name);
            const store = new LocalObjectStore(table);
            await store.put(`${PARTITION}/${name}`, commit.log);
            for (const [key, bytes] of commit.timeline.slice(0, 2)) await store.put(key, bytes);
          }
          return observed.deleteMany(refs);
        },
      };
    };
    const t0 = Date.now();
    await runCompact(table, { ...MOR_FLAGS }, ioAt(t0), { wrapStore: wrap }).catch(() => undefined);
    const { instant, refused } = seen;
    if (instant === undefined || refused === undefined)
      throw new Error('the writer never raced the unschedule');
    const afterRun = await leftovers(table);
    // The writer goes on: its second log under T (it read the timeline while T was pending), then its completion.
    const second = `.${fileId}_${instant}.log.2_0-7-0`;
    const commit = await writerCommit(table, writer(), second, 2234.5);
    await landCommit(table, commit, second);

    // Act
    await runCompact(table, { ...MOR_FLAGS }, ioAt(t0 + LOCK_EXPIRY_MS)).catch((err: unknown) => err);

    // Assess: after the first run the plan is gone, the first log renamed and the trace kept (a write pending); the
    // next run renamed the second log after it and removed the trace; the rows are those of the same writer logging
    // both updates into the live slice
    expect(afterRun.traces).toEqual([`${instant}.json`]);
    expect(afterRun.partition).toContain(`.${fileId}_${base}.log.2_1-0-1`);
    expect(afterRun.partition.filter((n) => n.includes(`_${instant}.log.`))).toEqual([]);
    expect(await pendingCompactions(table)).toEqual([]);
    const left = await leftovers(table);
    expect(left.traces).toEqual([]);
    expect(left.partition.filter((n) => n.includes(`_${instant}.log.`))).toEqual([]);
    expect(left.partition).toContain(`.${fileId}_${base}.log.3_1-0-1`);
    await new LocalObjectStore(dir).put(refused.key, refused.before);
    expect(await hudiMergedView(db, dir, ROOT, TRIPS_COLUMNS)).toEqual(
      await expectedRows(writer(), [1234.5, 2234.5]),
    );
  }, 90_000);
});
