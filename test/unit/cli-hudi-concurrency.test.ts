// Clustering a Hudi table beside its writers: a concurrent upsert to a file group being clustered aborts our group
// (nothing of it visible: no output in the table, our requested and inflight instant files removed), while a
// concurrent insert into another file group does not stop our commit; a run killed right after its clustering plan
// was written is settled — by the next run or by `settle` — into the old or the new view with identical rows and no
// pending instant of ours left.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { runCompact } from '../../functions/cli/compact.js';
import { run } from '../../functions/cli/index.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';
import { captureIo } from '../support/cli-io.js';
import { observedStore, type StoreCall } from '../support/crash-store.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';
import {
  type AppenderTable,
  appendHudiInsert,
  createHudiTable,
  upsertHudiFileGroup,
} from '../support/hudi-appender.js';
import { completedWrites, liveFiles } from '../support/hudi-replay.js';

const NOW = Date.UTC(2024, 3, 1);
const BATCHES = 6;
const FLAGS = { format: 'hudi', hudiLock: 'storage', hudiIndexType: 'BLOOM' } as const;
const CLI_FLAGS = ['--format', 'hudi', '--hudi-lock', 'storage', '--hudi-index-type', 'BLOOM'];
const io = { out: () => {}, clock: { now: () => NOW }, env: {} };

let db: DuckDb;
let dir: string;
let store: LocalObjectStore;
let table: AppenderTable;
let inputs: { key: string; fileId: string }[];

beforeAll(async () => {
  db = await openDuckDb();
});

afterAll(async () => {
  db.close();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

/** Every live row by the independent replay (less `_hoodie_file_name`), canonically ordered, and the live files. */
async function live(version: 6 | 8): Promise<{ files: string[]; rows: string[] }> {
  const files = await liveFiles(dir, version);
  const list = files.map((f) => sqlString(join(dir, f))).join(', ');
  const rows = await db.rows(
    `SELECT * EXCLUDE (_hoodie_file_name) FROM read_parquet([${list}]) ORDER BY ALL`,
  );
  return { files, rows: rows.map((r) => JSON.stringify(r)) };
}

/** Requested or inflight files whose instant never completed: pending instants. */
async function pendingInstants(version: 6 | 8): Promise<string[]> {
  const names = await readdir(join(dir, version === 6 ? '.hoodie' : '.hoodie/timeline'));
  const completed = new Set(
    names.filter((n) => /^\d{17}(_\d{17})?\.[a-z]+$/.test(n)).map((n) => n.slice(0, 17)),
  );
  return names.filter((n) => /\.(requested|inflight)$/.test(n) && !completed.has(n.slice(0, 17))).sort();
}

/** Heartbeat files left under `.hoodie/.heartbeat/` (ours are removed when the instant completes or aborts). */
async function heartbeats(): Promise<string[]> {
  return readdir(join(dir, '.hoodie/.heartbeat')).catch(() => []);
}

/** A store that runs `before` ahead of each put (once it returns, the put goes on). */
function interceptPut(inner: ObjectStore, before: (key: string) => Promise<void>): ObjectStore {
  const observed = observedStore(inner, {});
  return {
    ...observed,
    listAll: (prefix) => inner.listAll(prefix),
    put: async (key, body, options) => {
      await before(key);
      return inner.put(key, body, options);
    },
  };
}

/** A store whose process dies right after the first request `kills` matches: every later request fails. */
function diesAfter(inner: ObjectStore, kills: (call: StoreCall) => boolean): ObjectStore {
  let dead = false;
  return observedStore(inner, {
    before: (call) => {
      if (dead) throw new Error(`injected: the process died before ${call.method} ${call.key}`);
    },
    after: (call) => {
      if (kills(call)) dead = true;
    },
  });
}

const isClusteringPlan = (key: string) =>
  key.endsWith('.replacecommit.requested') || key.endsWith('.clustering.requested');
const isCompletedClustering = (key: string) => /\d{17}(_\d{17})?\.replacecommit$/.test(key);

describe.each([6, 8] as const)('clustering a Hudi table of version %i beside its writers', (version) => {
  beforeEach(async () => {
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
    dir = await mkdtemp(join(tmpdir(), 'lc-hudi-race-'));
    store = new LocalObjectStore(dir);
    table = await createHudiTable(store, '', version);
    inputs = [];
    for (let b = 0; b < BATCHES; b += 1) inputs.push(await appendHudiInsert(table, '10', 4 + b));
  });

  it('aborts the group when a writer upserts one of its file groups after the plan: nothing of it visible', async () => {
    // Prepare: once our clustering plan is written, a writer commits a new slice of the first input's file group.
    const before = await live(version);
    const victim = inputs[0];
    let upserted: { key: string } | undefined;
    const hooks = {
      wrapStore: (inner: ObjectStore) =>
        interceptPut(inner, async (key) => {
          if (
            upserted !== undefined ||
            !key.includes('.inflight') ||
            (!key.includes('clustering') && !key.includes('replacecommit'))
          )
            return;
          upserted = await upsertHudiFileGroup(table, '10', victim?.fileId ?? '', [1, 2, 3, 4, 1000]);
        }),
    };

    // Act
    await runCompact(dir, { ...FLAGS }, io, hooks).catch((err: unknown) => err);

    // Assess: no clustering completed, no pending instant left, no output in the partition; the upsert is live
    expect(upserted).toBeDefined();
    expect((await completedWrites(dir, version)).filter((w) => w.name.endsWith('.replacecommit'))).toEqual(
      [],
    );
    expect(await pendingInstants(version)).toEqual([]);
    expect(await heartbeats()).toEqual([]);
    const after = await live(version);
    expect(after.files).toContain(upserted?.key);
    expect(after.files).toHaveLength(BATCHES);
    const partitionFiles = (await readdir(join(dir, '10'))).filter((n) => n.endsWith('.parquet'));
    expect(partitionFiles).toHaveLength(BATCHES + 1);
    const upsertRows = await db.rows(
      `SELECT * EXCLUDE (_hoodie_file_name) FROM read_parquet(${sqlString(join(dir, upserted?.key ?? ''))})`,
    );
    const victimRows = await db.rows(
      `SELECT * EXCLUDE (_hoodie_file_name) FROM read_parquet(${sqlString(join(dir, victim?.key ?? ''))})`,
    );
    const expected = [...before.rows];
    for (const r of victimRows) expected.splice(expected.indexOf(JSON.stringify(r)), 1);
    expect(after.rows).toEqual([...expected, ...upsertRows.map((r) => JSON.stringify(r))].sort());
  });

  it('commits when a writer inserts a new file group of the partition meanwhile: both are live', async () => {
    // Prepare
    const before = await live(version);
    let inserted: { key: string } | undefined;
    const hooks = {
      wrapStore: (inner: ObjectStore) =>
        interceptPut(inner, async (key) => {
          if (inserted !== undefined || !isClusteringPlan(key)) return;
          inserted = await appendHudiInsert(table, '10', 3);
        }),
    };

    // Act
    await runCompact(dir, { ...FLAGS }, io, hooks);

    // Assess
    expect(inserted).toBeDefined();
    const clusterings = (await completedWrites(dir, version)).filter((w) =>
      w.name.endsWith('.replacecommit'),
    );
    expect(clusterings).toHaveLength(1);
    expect([...(clusterings[0]?.replaced ?? [])].sort()).toEqual(inputs.map((i) => i.fileId).sort());
    expect(await pendingInstants(version)).toEqual([]);
    expect(await heartbeats()).toEqual([]);
    const after = await live(version);
    expect(after.files).toHaveLength(2);
    expect(after.files).toContain(inserted?.key);
    const insertedRows = await db.rows(
      `SELECT * EXCLUDE (_hoodie_file_name) FROM read_parquet(${sqlString(join(dir, inserted?.key ?? ''))})`,
    );
    expect(after.rows).toEqual([...before.rows, ...insertedRows.map((r) => JSON.stringify(r))].sort());
  });

  it.each([
    [
      'after its clustering plan is written',
      (call: StoreCall) => call.method === 'put' && isClusteringPlan(call.key),
    ],
    [
      'after its completed replacecommit is written',
      (call: StoreCall) => call.method === 'put' && isCompletedClustering(call.key),
    ],
  ])(
    'settles a run killed %s: re-run and settle end with identical rows and no pending instant',
    async (_when, kills) => {
      // Prepare: the process dies right after the matching write (the journal and rollback never run).
      const before = await live(version);
      const first = await runCompact(dir, { ...FLAGS }, io, {
        wrapStore: (inner) => diesAfter(inner, kills),
      }).catch((err: unknown) => err);
      expect(first).toBeInstanceOf(Error);

      // Act: settle, then a re-run, later: past the storage lock's validity, which the dead process never released
      const later = NOW + 10 * 60_000;
      const settled = captureIo({ now: later });
      const settleCode = await run(['settle', dir, ...CLI_FLAGS], settled);
      const settledView = await live(version);
      const pendingAfterSettle = await pendingInstants(version);
      const rerun = captureIo({ now: later });
      const code = await run(['compact', dir, ...CLI_FLAGS], rerun);

      // Assess: settle leaves the old or the new view with the same rows and nothing pending; the re-run clusters
      expect(settleCode, settled.stderr.join('\n')).toBe(0);
      expect(settledView.rows).toEqual(before.rows);
      expect([BATCHES, 1]).toContain(settledView.files.length);
      expect(pendingAfterSettle).toEqual([]);
      expect(code, rerun.stderr.join('\n')).toBe(0);
      const after = await live(version);
      expect(after.rows).toEqual(before.rows);
      expect(after.files).toHaveLength(1);
      expect(await pendingInstants(version)).toEqual([]);
      expect(await heartbeats()).toEqual([]);
    },
  );
});
