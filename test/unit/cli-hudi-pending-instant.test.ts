// What our pending clustering instant leaves for Hudi's writers, and how it is undone (pending-instant.ts):
// - while it is pending, each output in the table has its direct marker and the instant its heartbeat, renewed while
//   the group is rewritten; on completion both are gone;
// - a Hudi writer rolling our instant back the way Hudi's marker-based rollback does (deleting the files the markers
//   name, then the instant's files) deletes exactly our outputs, and our commit then aborts with nothing visible;
// - a run killed after its group aborted but before its instant was rolled back leaves the group open, so `settle`
//   finishes the rollback: nothing pending, no output, no heartbeat or marker left;
// - the no-lock opt-in (`--hudi-lock none`) needs the single-writer acknowledgement, whose refusal says the risk, and
//   clusters only outside its quiet window.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { StoreJournal } from '../../functions/adapters/store-journal.js';
import { runCompact } from '../../functions/cli/compact.js';
import { run } from '../../functions/cli/index.js';
import { hudiTable } from '../../functions/core/formats/hudi/format.js';
import { HUDI_STORAGE_LOCK_FILE } from '../../functions/core/formats/hudi/lock/storage-lock.js';
import { settleAfterDeadRun } from '../../functions/core/workflow/settle.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';
import type { ParquetEngine } from '../../functions/ports/parquet-engine.js';
import { defaultParquetEngine } from '../../functions/shared/parquet-engine.js';
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
const BATCHES = 5;
const FLAGS = { format: 'hudi', hudiLock: 'storage', hudiIndexType: 'BLOOM' } as const;
const CLI_FLAGS = ['--format', 'hudi', '--hudi-lock', 'storage', '--hudi-index-type', 'BLOOM'];
const ioAt = (now: number) => ({ out: () => {}, clock: { now: () => now }, env: {} });

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

async function freshTable(version: 6 | 8, start?: string): Promise<void> {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  dir = await mkdtemp(join(tmpdir(), 'lc-hudi-pending-'));
  store = new LocalObjectStore(dir);
  table = await createHudiTable(store, '', version, start);
  inputs = [];
  for (let b = 0; b < BATCHES; b += 1) inputs.push(await appendHudiInsert(table, '10', 3 + b));
}

async function liveRows(version: 6 | 8): Promise<{ files: string[]; rows: string[] }> {
  const files = await liveFiles(dir, version);
  const list = files.map((f) => sqlString(join(dir, f))).join(', ');
  const rows = await db.rows(
    `SELECT * EXCLUDE (_hoodie_file_name) FROM read_parquet([${list}]) ORDER BY ALL`,
  );
  return { files, rows: rows.map((r) => JSON.stringify(r)) };
}

async function pendingInstants(version: 6 | 8): Promise<string[]> {
  const names = await readdir(join(dir, version === 6 ? '.hoodie' : '.hoodie/timeline'));
  const completed = new Set(
    names.filter((n) => /^\d{17}(_\d{17})?\.[a-z]+$/.test(n)).map((n) => n.slice(0, 17)),
  );
  return names.filter((n) => /\.(requested|inflight)$/.test(n) && !completed.has(n.slice(0, 17))).sort();
}

/** Files under a folder of the table, relative to the table root. */
async function filesUnder(relative: string): Promise<string[]> {
  return (await readdir(join(dir, relative), { recursive: true, withFileTypes: true }).catch(() => []))
    .filter((d) => d.isFile())
    .map((d) => join(d.parentPath, d.name).slice(dir.length + 1))
    .sort();
}

async function partitionParquet(): Promise<string[]> {
  return (await readdir(join(dir, '10')))
    .filter((n) => n.endsWith('.parquet'))
    .map((n) => `10/${n}`)
    .sort();
}

/**
 * Hudi's marker-based rollback of a pending instant, as an independent test double: every `X.marker.CREATE` under
 * `.hoodie/.temp/T/` means "delete X"; then the instant's inflight and requested files and the marker folder go.
 * Returns the data files it deleted.
 */
async function hudiMarkerRollback(instant: string, version: 6 | 8): Promise<string[]> {
  const markers = await filesUnder(`.hoodie/.temp/${instant}`);
  const deleted = markers
    .filter((m) => m.endsWith('.marker.CREATE'))
    .map((m) => m.slice(`.hoodie/.temp/${instant}/`.length, -'.marker.CREATE'.length));
  await store.deleteMany(deleted.map((key) => ({ key })));
  const timeline = version === 6 ? '.hoodie' : '.hoodie/timeline';
  const action = version === 6 ? 'replacecommit' : 'clustering';
  await store.deleteMany([{ key: `${timeline}/${instant}.${action}.inflight` }]);
  await store.deleteMany([{ key: `${timeline}/${instant}.${action}.requested` }]);
  await store.deleteMany(markers.map((key) => ({ key })));
  return deleted.sort();
}

/** A store that runs `before` ahead of each head (once it returns, the head goes on). */
function beforeHead(inner: ObjectStore, before: (key: string) => Promise<void>): ObjectStore {
  const observed = observedStore(inner, {});
  return {
    ...observed,
    head: async (key) => {
      await before(key);
      return observed.head(key);
    },
  };
}

const isRequestedPlan = (key: string) =>
  key.endsWith('.replacecommit.requested') || key.endsWith('.clustering.requested');

describe.each([6, 8] as const)('our pending clustering instant on a Hudi table of version %i', (version) => {
  beforeEach(async () => {
    await freshTable(version);
  });

  it('has a marker per output and a heartbeat while pending, neither once completed', async () => {
    // Prepare: look at the table when the commit checks its plan (outputs placed, before the completed file)
    let seen: { markers: string[]; heartbeats: string[]; parquet: string[] } | undefined;
    const hooks = {
      wrapStore: (inner: ObjectStore): ObjectStore =>
        beforeHead(inner, async (key) => {
          if (seen === undefined && isRequestedPlan(key))
            seen = {
              markers: await filesUnder('.hoodie/.temp'),
              heartbeats: await filesUnder('.hoodie/.heartbeat'),
              parquet: await partitionParquet(),
            };
        }),
    };

    // Act
    await runCompact(dir, { ...FLAGS }, ioAt(NOW), hooks);

    // Assess: one marker per output (named as Hudi's direct markers), the instant's heartbeat; gone after
    const clustering = (await completedWrites(dir, version)).find((w) => w.name.endsWith('.replacecommit'));
    const instant = clustering?.name.slice(0, 17) ?? '';
    const outputs = clustering?.stats.map((s) => s.path) ?? [];
    expect(outputs).toHaveLength(1);
    expect(seen?.parquet).toEqual(expect.arrayContaining(outputs));
    expect(seen?.markers).toEqual(outputs.map((o) => `.hoodie/.temp/${instant}/${o}.marker.CREATE`));
    expect(seen?.heartbeats).toEqual([`.hoodie/.heartbeat/${instant}`]);
    expect(await filesUnder('.hoodie/.temp')).toEqual([]);
    expect(await filesUnder('.hoodie/.heartbeat')).toEqual([]);
  });

  it('lets a Hudi rollback of our instant delete exactly our outputs; our commit then aborts, nothing visible', async () => {
    // Prepare: a Hudi writer takes our instant for a failed one and rolls it back just before our commit
    const before = await liveRows(version);
    const inputsBefore = await partitionParquet();
    let rolledBack: { instant: string; deleted: string[] } | undefined;
    const hooks = {
      wrapStore: (inner: ObjectStore): ObjectStore =>
        beforeHead(inner, async (key) => {
          if (rolledBack === undefined && isRequestedPlan(key)) {
            const instant = key.slice(key.lastIndexOf('/') + 1, key.lastIndexOf('/') + 18);
            rolledBack = { instant, deleted: await hudiMarkerRollback(instant, version) };
          }
        }),
    };

    // Act
    await runCompact(dir, { ...FLAGS }, ioAt(NOW), hooks).catch((err: unknown) => err);

    // Assess: Hudi's rollback deleted one file, ours (`_<T>.parquet`), no input; nothing of ours is left
    expect(rolledBack?.deleted).toHaveLength(1);
    expect(rolledBack?.deleted[0]).toMatch(new RegExp(`^10/[^/]+_${rolledBack?.instant}\\.parquet$`));
    expect(await partitionParquet()).toEqual(inputsBefore);
    expect((await completedWrites(dir, version)).filter((w) => w.name.endsWith('.replacecommit'))).toEqual(
      [],
    );
    expect(await pendingInstants(version)).toEqual([]);
    expect(await filesUnder('.hoodie/.heartbeat')).toEqual([]);
    expect(await filesUnder('.hoodie/.temp')).toEqual([]);
    expect(await liveRows(version)).toEqual(before);
  });

  it('is rolled back by settle when the run died after aborting its group, before undoing its instant', async () => {
    // Prepare: a writer upserts an input's file group once our plan is written (our commit must abort), and the
    // process dies right after the journal records the abort
    const victim = inputs[0];
    let upserted: { key: string } | undefined;
    let dead = false;
    const calls: StoreCall[] = [];
    const hooks = {
      wrapStore: (inner: ObjectStore): ObjectStore => {
        const observed = observedStore(inner, {
          before: (call) => {
            if (dead) throw new Error(`injected: the process died before ${call.method} ${call.key}`);
          },
          after: (call) => {
            calls.push(call);
            const body = typeof call.body === 'string' ? call.body : '';
            if (call.method === 'put' && body.includes('"state":"aborted"')) dead = true;
          },
        });
        return {
          ...observed,
          put: async (key, body, options) => {
            if (upserted === undefined && isRequestedPlan(key))
              upserted = await upsertHudiFileGroup(table, '10', victim?.fileId ?? '', [1, 2, 3, 1000]);
            return observed.put(key, body, options);
          },
        };
      },
    };
    const first = await runCompact(dir, { ...FLAGS }, ioAt(NOW), hooks).catch((err: unknown) => err);
    expect(first).toBeInstanceOf(Error);
    expect(dead).toBe(true);
    const pendingAfterCrash = await pendingInstants(version);
    const strayAfterCrash = (await partitionParquet()).length;

    // Act: settle, past the storage lock's validity
    const io = captureIo({ now: NOW + 10 * 60_000 });
    const code = await run(['settle', dir, ...CLI_FLAGS], io);

    // Assess: the crash left our instant pending and our output in the partition; settle undid both
    expect(pendingAfterCrash).toHaveLength(2);
    expect(strayAfterCrash).toBe(BATCHES + 2);
    expect(code, io.stderr.join('\n')).toBe(0);
    expect(await pendingInstants(version)).toEqual([]);
    expect(await filesUnder('.hoodie/.heartbeat')).toEqual([]);
    expect(await filesUnder('.hoodie/.temp')).toEqual([]);
    expect(await partitionParquet()).toHaveLength(BATCHES + 1);
    const after = await liveRows(version);
    expect(after.files).toContain(upserted?.key);
    expect(after.files).toHaveLength(BATCHES);
  });
});

describe('the heartbeat of our pending instant during a long rewrite', () => {
  it('is renewed while the group is rewritten', async () => {
    // Prepare: a rewrite that lasts past the 30 s renewal interval (intervals faked: no wall clock)
    await freshTable(8);
    const heartbeatPuts: string[] = [];
    let duringRewrite = -1;
    const engine: ParquetEngine = {
      ...defaultParquetEngine,
      rewriteGroup: async (...args: Parameters<ParquetEngine['rewriteGroup']>) => {
        const already = heartbeatPuts.length;
        await vi.advanceTimersByTimeAsync(31_000);
        // The renewal is a real write: wait for it on the real clock's timeouts (not faked), at most ~2 s.
        for (let i = 0; i < 400 && heartbeatPuts.length === already; i += 1)
          await new Promise((resolve) => setTimeout(resolve, 5));
        duringRewrite = heartbeatPuts.length - already;
        return defaultParquetEngine.rewriteGroup(...args);
      },
    };
    const hooks = {
      engine,
      wrapStore: (inner: ObjectStore): ObjectStore =>
        observedStore(inner, {
          after: (call) => {
            if (call.method === 'put' && call.key.startsWith('.hoodie/.heartbeat/'))
              heartbeatPuts.push(call.key);
          },
        }),
    };
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });

    // Act
    try {
      await runCompact(dir, { ...FLAGS }, ioAt(NOW), hooks);
    } finally {
      vi.useRealTimers();
    }

    // Assess: one renewal during the rewrite, of the instant that completed; no heartbeat left
    const clustering = (await completedWrites(dir, 8)).find((w) => w.name.endsWith('.replacecommit'));
    expect(duringRewrite).toBe(1);
    expect(new Set(heartbeatPuts)).toEqual(new Set([`.hoodie/.heartbeat/${clustering?.name.slice(0, 17)}`]));
    expect(await filesUnder('.hoodie/.heartbeat')).toEqual([]);
  });
  it('is renewed once the outputs are in the table, before the commit waits for the table lock', async () => {
    // Prepare: the order of the run's heartbeat puts, output copies and lock writes
    await freshTable(8);
    const events: string[] = [];
    const hooks = {
      wrapStore: (inner: ObjectStore): ObjectStore =>
        observedStore(inner, {
          before: (call) => {
            if (call.method === 'put' && call.key.startsWith('.hoodie/.heartbeat/')) events.push('heartbeat');
            else if (call.method === 'put' && call.key === HUDI_STORAGE_LOCK_FILE) events.push('lock');
            else if (call.method === 'copy' && call.key.startsWith('10/')) events.push('output');
          },
        }),
    };

    // Act
    await runCompact(dir, { ...FLAGS }, ioAt(NOW), hooks);

    // Assess: after the last output entered the partition, a renewal before the commit's lock is taken
    const lastOutput = events.lastIndexOf('output');
    const nextLock = events.indexOf('lock', lastOutput);
    expect(lastOutput).toBeGreaterThanOrEqual(0);
    expect(nextLock).toBeGreaterThan(lastOutput);
    expect(events.slice(lastOutput + 1, nextLock)).toContain('heartbeat');
    expect((await completedWrites(dir, 8)).some((w) => w.name.endsWith('.replacecommit'))).toBe(true);
  });
});

describe('the no-lock opt-in', () => {
  it('is refused without the single-writer acknowledgement, naming the risk', async () => {
    // Prepare
    await freshTable(6);
    const io = captureIo({ now: NOW });

    // Act
    const code = await run(
      [
        'compact',
        dir,
        '--format',
        'hudi',
        '--hudi-lock',
        'none',
        '--hudi-quiet-minutes',
        '30',
        '--hudi-index-type',
        'BLOOM',
      ],
      io,
    );

    // Assess: a usage error saying what can go wrong, and nothing written to the table
    expect(code).toBe(2);
    expect(io.stderr.join('\n')).toMatch(/--hudi-single-writer/);
    expect(io.stderr.join('\n')).toMatch(/rows vanish or come back/);
    expect(await pendingInstants(6)).toEqual([]);
    expect((await completedWrites(dir, 6)).filter((w) => w.name.endsWith('.replacecommit'))).toEqual([]);
  });

  it('does not cluster while the writer committed inside the quiet window, and does once it is quiet', async () => {
    // Prepare: the writer's last commit a few milliseconds after 2024-04-01T00:00Z
    await freshTable(6, '20240401000000000');
    const before = await liveRows(6);
    const args = [
      'compact',
      dir,
      '--format',
      'hudi',
      '--hudi-lock',
      'none',
      '--hudi-quiet-minutes',
      '30',
      '--hudi-single-writer',
      '--hudi-index-type',
      'BLOOM',
    ];

    // Act: ten minutes after that commit, then an hour after it
    const inside = captureIo({ now: NOW + 10 * 60_000 });
    await run(args, inside);
    const clusteredInside = (await completedWrites(dir, 6)).filter((w) => w.name.endsWith('.replacecommit'));
    const pendingInside = await pendingInstants(6);
    const outside = captureIo({ now: NOW + 60 * 60_000 });
    const code = await run(args, outside);

    // Assess: nothing written inside the window; clustered outside it, same rows
    expect(clusteredInside).toEqual([]);
    expect(pendingInside).toEqual([]);
    expect(inside.stdout.join('\n') + inside.stderr.join('\n')).toMatch(/quiet window/);
    expect(code, outside.stderr.join('\n')).toBe(0);
    expect((await completedWrites(dir, 6)).filter((w) => w.name.endsWith('.replacecommit'))).toHaveLength(1);
    const after = await liveRows(6);
    expect(after.rows).toEqual(before.rows);
    expect(after.files).toHaveLength(1);
  });
});

describe.each([6, 8] as const)('a writer upserting beside our clustering of version %i', (version) => {
  it('aborts only the group whose file group it upserted; the other partition is clustered', async () => {
    // Prepare: two partitions, one group each; once partition 20's plan is written, a writer upserts one of its file
    // groups (a conflict with the instants completed since planning: a newer slice of an input)
    await freshTable(version);
    const others: { key: string; fileId: string }[] = [];
    for (let b = 0; b < BATCHES; b += 1) others.push(await appendHudiInsert(table, '20', 2 + b));
    const before = await liveRows(version);
    const victim = others[2];
    const victimRows = await db.rows(
      `SELECT * EXCLUDE (_hoodie_file_name) FROM read_parquet(${sqlString(join(dir, victim?.key ?? ''))})`,
    );
    const victimIds = victimRows.map((r) => Number(r.id));
    let upserted: { key: string } | undefined;
    const hooks = {
      wrapStore: (inner: ObjectStore): ObjectStore => {
        const observed = observedStore(inner, {});
        return {
          ...observed,
          put: async (key, body, options) => {
            const done = await observed.put(key, body, options);
            // The plan naming the victim's file group: partition 20's, whichever partition is planned first
            if (
              upserted === undefined &&
              isRequestedPlan(key) &&
              Buffer.from(body as Uint8Array).includes(victim?.fileId ?? '')
            )
              upserted = await upsertHudiFileGroup(table, '20', victim?.fileId ?? '', [...victimIds, 5000]);
            return done;
          },
        };
      },
    };

    // Act
    await runCompact(dir, { ...FLAGS }, ioAt(NOW), hooks).catch((err: unknown) => err);

    // Assess: one clustering, replacing exactly partition 10's file groups; partition 20 as the writer left it
    const clusterings = (await completedWrites(dir, version)).filter((w) =>
      w.name.endsWith('.replacecommit'),
    );
    expect(clusterings).toHaveLength(1);
    expect([...(clusterings[0]?.replaced ?? [])].sort()).toEqual(inputs.map((i) => i.fileId).sort());
    expect(await pendingInstants(version)).toEqual([]);
    expect(await filesUnder('.hoodie/.heartbeat')).toEqual([]);
    expect(await filesUnder('.hoodie/.temp')).toEqual([]);
    const in20 = (await readdir(join(dir, '20'))).filter((n) => n.endsWith('.parquet'));
    expect(in20).toHaveLength(BATCHES + 1);
    const after = await liveRows(version);
    expect(after.files).toContain(upserted?.key);
    expect(after.files.filter((f) => f.startsWith('20/'))).toHaveLength(BATCHES);
    expect(after.files.filter((f) => f.startsWith('10/'))).toHaveLength(1);
    const upsertRows = await db.rows(
      `SELECT * EXCLUDE (_hoodie_file_name) FROM read_parquet(${sqlString(join(dir, upserted?.key ?? ''))})`,
    );
    const expected = [...before.rows];
    for (const r of victimRows) expected.splice(expected.indexOf(JSON.stringify(r)), 1);
    expect(after.rows).toEqual([...expected, ...upsertRows.map((r) => JSON.stringify(r))].sort());
  });
});

describe.each([6, 8] as const)("the sweep's settle of a dead run on version %i", (version) => {
  it.each([
    [
      'after its clustering plan was written',
      (call: StoreCall) => call.method === 'put' && isRequestedPlan(call.key),
      ['requested'],
    ],
    [
      'after its outputs were copied into the table',
      (call: StoreCall) => call.method === 'copy' && call.key.startsWith('10/'),
      ['inflight', 'requested'],
    ],
  ])(
    'rolls back our instant of a run killed %s, through the journal that recorded it',
    async (_when, kills, left) => {
      // Prepare: a run dies right after the matching request; its journal records the pending instant
      await freshTable(version);
      const before = await liveRows(version);
      let dead = false;
      const first = await runCompact(dir, { ...FLAGS }, ioAt(NOW), {
        wrapStore: (inner) =>
          observedStore(inner, {
            before: (call) => {
              if (dead) throw new Error(`injected: the process died before ${call.method} ${call.key}`);
            },
            after: (call) => {
              if (kills(call)) dead = true;
            },
          }),
      }).catch((err: unknown) => err);
      expect(first).toBeInstanceOf(Error);
      const pendingAfterCrash = await pendingInstants(version);
      const journal = new StoreJournal(store, { table: { name: basename(dir), root: '' } });
      const partitions = await journal.openPartitions(basename(dir));

      // Act: the sweep settles each open partition of the dead run with the table's bound format
      const format = hudiTable.forTable({ hudiLock: { provider: 'storage' }, hudiIndexType: 'BLOOM' }, {});
      const outcomes = [];
      for (const partition of partitions)
        outcomes.push(
          await settleAfterDeadRun(
            { store, journal, clock: { now: () => NOW + 10 * 60_000 }, format },
            partition,
            'dead-run',
          ),
        );

      // Assess: the crash left our instant pending; the sweep rolled it back (before publish: nothing committed)
      expect(pendingAfterCrash.map((n) => n.slice(n.lastIndexOf('.') + 1))).toEqual(left);
      expect(partitions).toHaveLength(1);
      expect(outcomes.map((o) => [o.settled, o.unsettled, o.completed])).toEqual([[1, [], false]]);
      expect(await pendingInstants(version)).toEqual([]);
      expect(await filesUnder('.hoodie/.heartbeat')).toEqual([]);
      expect(await filesUnder('.hoodie/.temp')).toEqual([]);
      expect(await partitionParquet()).toHaveLength(BATCHES);
      expect(await liveRows(version)).toEqual(before);
      expect(await journal.openPartitions(basename(dir))).toEqual([]);
    },
  );
});
