// `lake-compactor compact --format delta` on a Delta table in a temp folder, written by a streaming-style appender
// (one file and one commit per micro-batch): each partition's small files are rewritten and committed as one
// OPTIMIZE version through the log; the live row multiset (read back by DuckDB from the files the log names) is
// identical, the inputs stay on storage for older versions, a writer's blind append that wins the race is rebased
// over, a concurrent delete of an input aborts the group with nothing of it visible, and a run killed right after
// its log commit is completed by the next run without a second commit.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { runCompact } from '../../functions/cli/compact.js';
import { run } from '../../functions/cli/index.js';
import { readCommitActions, readDeltaSnapshot } from '../../functions/core/formats/delta/log.js';
import { ConditionalPutLogStore } from '../../functions/core/formats/delta/log-store.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';
import { appendDeltaEvents, createDeltaEventsTable } from '../../functions/tools/sample-delta.js';
import { captureIo } from '../support/cli-io.js';
import { observedStore, type StoreCall } from '../support/crash-store.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';

const DAYS = ['2024-03-01', '2024-03-02'];
const BATCHES = 6;
const NOW = Date.UTC(2024, 2, 3);

let db: DuckDb;
let dir: string;
let store: LocalObjectStore;

/** The live files of the latest version, as keys, and every row they hold, canonically ordered. */
async function liveTable(): Promise<{ version: number; keys: string[]; rows: string[] }> {
  const snapshot = await readDeltaSnapshot(store, '');
  const keys = snapshot.files.map((f) => f.key ?? f.path).sort();
  const files = keys.map((k) => sqlString(join(dir, k))).join(', ');
  const rows = await db.rows(
    `SELECT * EXCLUDE (filename), regexp_extract(filename, 'date=([0-9-]+)', 1) AS date FROM read_parquet([${files}], filename = true) ORDER BY ALL`,
  );
  return { version: snapshot.version, keys, rows: rows.map((r) => JSON.stringify(r)) };
}

/** The operations of every commit from `from` on, in order. */
async function operationsFrom(from: number): Promise<string[]> {
  const ops: string[] = [];
  for (let v = from; ; v += 1) {
    const actions = await readCommitActions(store, '', v);
    if (actions === undefined) return ops;
    const info = actions.find((a) => a.kind === 'commitInfo');
    ops.push(info?.kind === 'commitInfo' ? (info.commitInfo.operation ?? '?') : '?');
  }
}

beforeAll(async () => {
  db = await openDuckDb();
});

afterAll(() => {
  db.close();
});

beforeEach(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  dir = await mkdtemp(join(tmpdir(), 'lc-delta-'));
  store = new LocalObjectStore(dir);
  await createDeltaEventsTable(store, '', { now: NOW });
  let seed = 1;
  for (const day of DAYS) {
    for (let b = 0; b < BATCHES; b += 1) {
      await appendDeltaEvents(store, '', { day, rows: 40 + b, seed: seed++, now: NOW });
    }
  }
});

describe('lake-compactor compact --format delta', () => {
  it('rewrites each partition into one file committed as an OPTIMIZE version, every row kept, inputs left for older versions', async () => {
    // Prepare
    const before = await liveTable();
    const io = captureIo();

    // Act
    const code = await run(['compact', dir, '--format', 'delta'], io);

    // Assess: one OPTIMIZE commit per partition, one live file per partition, the same rows
    expect(code, io.stderr.join('\n')).toBe(0);
    const after = await liveTable();
    expect(after.rows).toEqual(before.rows);
    expect(await operationsFrom(before.version + 1)).toEqual(['OPTIMIZE', 'OPTIMIZE']);
    expect(after.keys).toHaveLength(DAYS.length);
    for (const day of DAYS) expect(after.keys.filter((k) => k.startsWith(`date=${day}/`))).toHaveLength(1);
    // The commit says what it did, and readers of version N still find every input on storage.
    const actions = (await readCommitActions(store, '', before.version + 1)) ?? [];
    const info = actions.find((a) => a.kind === 'commitInfo');
    expect(info?.kind === 'commitInfo' && info.commitInfo).toMatchObject({
      operation: 'OPTIMIZE',
      readVersion: before.version,
      isBlindAppend: false,
      operationMetrics: { numRemovedFiles: String(BATCHES), numAddedFiles: '1' },
    });
    const removes = actions.flatMap((a) => (a.kind === 'remove' ? [a.remove] : []));
    const adds = actions.flatMap((a) => (a.kind === 'add' ? [a.add] : []));
    expect(removes).toHaveLength(BATCHES);
    expect(removes.every((r) => r.dataChange === false && r.extendedFileMetadata === true)).toBe(true);
    expect(adds.map((a) => [a.dataChange, JSON.parse(a.stats ?? '{}').numRecords])).toEqual([
      [false, 40 * BATCHES + 15],
    ]);
    for (const key of before.keys) expect(await store.head(key), key).toBeDefined();
    const older = await readDeltaSnapshot(store, '', { version: before.version });
    expect(older.files.map((f) => f.key).sort()).toEqual(before.keys);
  });

  it('rebases over a blind append that wins the version it wanted, keeping the appended rows exactly once', async () => {
    // Prepare: the first time the compaction tries to commit, a writer commits that version first.
    const before = await liveTable();
    let appended: { key: string } | undefined;
    let raced = false;
    const hooks = {
      wrapStore: (inner: ObjectStore) =>
        interceptPut(inner, async (key) => {
          if (raced || !key.includes('_delta_log/') || !key.endsWith('.json')) return;
          raced = true;
          appended = await appendDeltaEvents(inner, '', { day: DAYS[0] ?? '', rows: 7, seed: 99, now: NOW });
        }),
    };

    // Act
    await runCompact(dir, { format: 'delta' }, { out: () => {}, clock: { now: () => NOW }, env: {} }, hooks);

    // Assess: the append and both OPTIMIZE commits are in the log; rows = before + the appended batch
    expect(raced).toBe(true);
    const after = await liveTable();
    expect(await operationsFrom(before.version + 1)).toEqual(['WRITE', 'OPTIMIZE', 'OPTIMIZE']);
    expect(after.keys).toContain(appended?.key);
    const appendedRows = await db.rows(
      `SELECT *, '${DAYS[0]}' AS date FROM read_parquet(${sqlString(join(dir, appended?.key ?? ''))})`,
    );
    expect([...after.rows].sort()).toEqual(
      [...before.rows, ...appendedRows.map((r) => JSON.stringify(r))].sort(),
    );
    expect(after.rows).toHaveLength(before.rows.length + 7);
  });

  it('aborts a group whose input a concurrent commit removed: nothing of it is committed or left in the table', async () => {
    // Prepare: before the compaction's first commit attempt, another writer deletes one of its inputs.
    const before = await liveTable();
    const victim = before.keys.find((k) => k.startsWith(`date=${DAYS[0]}/`)) ?? '';
    let deleted = false;
    const hooks = {
      wrapStore: (inner: ObjectStore) =>
        interceptPut(inner, async (key) => {
          if (deleted || !key.includes('_delta_log/') || !key.endsWith('.json')) return;
          deleted = true;
          const latest = await readDeltaSnapshot(inner, '');
          const file = latest.files.find((f) => f.key === victim);
          const body = [
            { commitInfo: { timestamp: NOW, operation: 'DELETE', readVersion: latest.version } },
            {
              remove: {
                path: file?.path,
                deletionTimestamp: NOW,
                dataChange: true,
                extendedFileMetadata: true,
                partitionValues: file?.physicalPartitionValues,
                size: file?.size,
              },
            },
          ];
          await new ConditionalPutLogStore(inner).writeCommit(
            '',
            latest.version + 1,
            new TextEncoder().encode(`${body.map((a) => JSON.stringify(a)).join('\n')}\n`),
          );
        }),
    };
    const victimRows = await db.rows(
      `SELECT *, '${DAYS[0]}' AS date FROM read_parquet(${sqlString(join(dir, victim))})`,
    );
    const outputsBefore = new Set(await keysOf(`date=${DAYS[0]}/`));

    // Act
    const outcome = await runCompact(
      dir,
      { format: 'delta' },
      { out: () => {}, clock: { now: () => NOW }, env: {} },
      hooks,
    ).catch((err: unknown) => err);

    // Assess: the DELETE stands, the first partition's group left no commit and no file; the other compacted
    expect(deleted).toBe(true);
    expect(outcome).not.toBeInstanceOf(Error);
    expect(await operationsFrom(before.version + 1)).toEqual(['DELETE', 'OPTIMIZE']);
    const after = await liveTable();
    const removed = new Set(victimRows.map((r) => JSON.stringify(r)));
    expect(after.rows).toEqual(before.rows.filter((r) => !removed.has(r)));
    expect(new Set(await keysOf(`date=${DAYS[0]}/`))).toEqual(outputsBefore);
    expect(after.keys.filter((k) => k.startsWith(`date=${DAYS[0]}/`))).toHaveLength(BATCHES - 1);
  });

  it('completes a run killed right after its log commit on the next run, without a second OPTIMIZE', async () => {
    // Prepare: the process dies just after the first commit file is written (before the journal knows).
    const before = await liveTable();
    const killer = (call: StoreCall) =>
      call.method === 'put' && call.key.includes('_delta_log/') && call.key.endsWith('.json');
    const first = await runCompact(
      dir,
      { format: 'delta', partition: `date=${DAYS[0]}` },
      { out: () => {}, clock: { now: () => NOW }, env: {} },
      { wrapStore: (inner) => diesAfter(inner, killer) },
    ).catch((err: unknown) => err);
    expect(first).toBeInstanceOf(Error);
    expect(await operationsFrom(before.version + 1)).toEqual(['OPTIMIZE']);

    // Act: the next run settles the group (finds its own commit), then compacts what is left
    const io = captureIo();
    const code = await run(['compact', dir, '--format', 'delta'], io);

    // Assess
    expect(code, io.stderr.join('\n')).toBe(0);
    expect(await operationsFrom(before.version + 1)).toEqual(['OPTIMIZE', 'OPTIMIZE']);
    const after = await liveTable();
    expect(after.rows).toEqual(before.rows);
    expect(after.keys).toHaveLength(DAYS.length);
  });

  it('Z-orders a partition with --strategy zorder, recording zOrderBy in the OPTIMIZE commit, every row kept', async () => {
    // Prepare
    const before = await liveTable();
    const io = captureIo();

    // Act
    const code = await run(
      [
        'compact',
        dir,
        '--format',
        'delta',
        '--partition',
        `date=${DAYS[0]}`,
        '--strategy',
        'zorder',
        '--columns',
        'user_id,event_timestamp',
      ],
      io,
    );

    // Assess
    expect(code, io.stderr.join('\n')).toBe(0);
    expect((await liveTable()).rows).toEqual(before.rows);
    const actions = (await readCommitActions(store, '', before.version + 1)) ?? [];
    const info = actions.find((a) => a.kind === 'commitInfo');
    expect(info?.kind === 'commitInfo' && info.commitInfo).toMatchObject({
      operation: 'OPTIMIZE',
      operationParameters: { zOrderBy: '["user_id","event_timestamp"]' },
    });
  });

  it('refuses a Z-order of one column and --columns without a strategy with exit 2, writing nothing', async () => {
    // Prepare
    const before = await liveTable();
    const one = captureIo();
    const stray = captureIo();

    // Act
    const oneCode = await run(
      ['compact', dir, '--format', 'delta', '--strategy', 'zorder', '--columns', 'a'],
      one,
    );
    const strayCode = await run(['compact', dir, '--format', 'delta', '--columns', 'a'], stray);

    // Assess
    expect([oneCode, strayCode]).toEqual([2, 2]);
    expect(one.stderr.join('\n')).toMatch(/at least two columns/);
    expect(stray.stderr.join('\n')).toMatch(/--columns applies to --strategy sort or zorder/);
    expect((await liveTable()).version).toBe(before.version);
  });

  it('refuses --format delta on a folder with no Delta log, changing nothing', async () => {
    // Prepare
    const empty = await mkdtemp(join(tmpdir(), 'lc-not-delta-'));
    const io = captureIo();

    // Act
    const code = await run(['compact', empty, '--format', 'delta'], io);

    // Assess
    expect(code).not.toBe(0);
    expect(io.stderr.join('\n')).toMatch(/not a Delta table/);
    await rm(empty, { recursive: true, force: true });
  });
});

async function keysOf(prefix: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of store.listAll(prefix)) keys.push(o.key);
  return keys;
}

/** Runs `before` ahead of every put (awaited), then the put itself. */
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

/** A store whose process dies right after the first request `kills` matches completed: every later request fails. */
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
