// Tiny inputs planned from the listing, their footers unread (planning's `footerDeferred`): the rewrite reads each
// whole once and does what planning did with footers — schemas never mixed (one output set per schema population,
// a file alone of its schema left in place), an unreadable or zero-row file left out, in place and quarantined,
// without failing its neighbours — through the workflow's steps on real Parquet over an in-memory bucket. Rows are
// compared as multisets before and after (DuckDB), with the commit dying at each of its requests in turn and a
// writer adding a file while the run is under way.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../functions/adapters/memory-journal.js';
import { MemoryLeases } from '../../functions/adapters/memory-leases.js';
import { MemoryObjectStore } from '../../functions/adapters/memory-object-store.js';
import { MemoryQuarantine } from '../../functions/adapters/memory-quarantine.js';
import { buildRunContext, type RunContext } from '../../functions/core/run-input.js';
import {
  type PartitionRunResult,
  runPartition,
  WORKFLOW_STEPS,
  type WorkflowSteps,
} from '../../functions/core/workflow/run.js';
import { ManualClock } from '../../functions/ports/clock.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';
import { defaultParquetEngine } from '../../functions/shared/parquet-engine.js';
import { countingStore, type LoggedRequest } from '../support/counting-store.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';

/** Thrown by the fault hook: stands for the commit Lambda dying between two requests. */
class Crash extends Error {
  override name = 'Crash';
}

const DAY = '2024-03-01';
const PARTITION = `events/date=${DAY}/`;
/** Keys in key order: schemas A and B interleaved, C alone, then a corrupt file and a zero-row one. */
const A_KEYS = [0, 2, 4, 6, 8, 10].map((i) => `${PARTITION}part-${String(i).padStart(2, '0')}.parquet`);
const B_KEYS = [1, 3, 5, 7, 9, 11].map((i) => `${PARTITION}part-${String(i).padStart(2, '0')}.parquet`);
const ALONE = `${PARTITION}part-12.parquet`;
const CORRUPT = `${PARTITION}part-13.parquet`;
const EMPTY = `${PARTITION}part-14.parquet`;
const LATE = `${PARTITION}part-99-late.parquet`;

let db: DuckDb;
let scratch: string;
/** Every planted file's bytes, by key (the late writer's file apart). */
let planted: Map<string, Uint8Array>;
let lateBytes: Uint8Array;

async function parquetOf(select: string, name: string): Promise<Uint8Array> {
  const path = join(scratch, name);
  await db.writeParquet(select, path);
  return new Uint8Array(await readFile(path));
}

beforeAll(async () => {
  db = await openDuckDb();
  scratch = await mkdtemp(join(tmpdir(), 'lc-deferred-'));
  planted = new Map();
  for (const [n, key] of A_KEYS.entries()) {
    planted.set(
      key,
      await parquetOf(
        `SELECT i AS id, 'a-' || i AS name FROM range(${n * 20}, ${n * 20 + 20}) t(i)`,
        `a${n}.parquet`,
      ),
    );
  }
  for (const [n, key] of B_KEYS.entries()) {
    planted.set(
      key,
      await parquetOf(
        `SELECT i AS id, CAST(i * 1.5 AS DOUBLE) AS score FROM range(${n * 30}, ${n * 30 + 30}) t(i)`,
        `b${n}.parquet`,
      ),
    );
  }
  planted.set(ALONE, await parquetOf(`SELECT 'only' AS tag, i AS n FROM range(7) t(i)`, 'c.parquet'));
  // A Parquet trailer whose footer length points far outside the file: its footer cannot be read.
  const corrupt = new Uint8Array(64);
  corrupt.set([0x50, 0x41, 0x52, 0x31]);
  corrupt.set([0xff, 0xff, 0x00, 0x00, 0x50, 0x41, 0x52, 0x31], 56);
  planted.set(CORRUPT, corrupt);
  planted.set(EMPTY, await parquetOf(`SELECT 1 AS id, 'x' AS name WHERE false`, 'empty.parquet'));
  lateBytes = await parquetOf(
    `SELECT i AS id, 'late-' || i AS name FROM range(1000, 1010) t(i)`,
    'late.parquet',
  );
}, 120_000);

afterAll(async () => {
  db?.close();
  if (scratch !== undefined) await rm(scratch, { recursive: true, force: true });
});

let downloaded = 0;
/** Every row of the readable Parquet objects under `prefix` (the corrupt one aside), as sorted canonical JSON. */
async function rowsUnder(store: ObjectStore, prefix: string): Promise<string[]> {
  const files: string[] = [];
  for await (const o of store.listAll(prefix)) {
    if (!o.key.endsWith('.parquet') || o.key === CORRUPT) continue;
    const file = join(scratch, `read-${downloaded++}.parquet`);
    await writeFile(file, await store.get(o.key));
    files.push(file);
  }
  if (files.length === 0) return [];
  const rows = await db.rows(
    `SELECT * FROM read_parquet([${files.map(sqlString).join(', ')}], union_by_name = true) ORDER BY ALL`,
  );
  // Keys in one order whatever file the union's columns came from first.
  return rows
    .map((r) => JSON.stringify(Object.fromEntries(Object.entries(r).sort(([a], [b]) => (a < b ? -1 : 1)))))
    .sort();
}

interface World {
  readonly store: MemoryObjectStore;
  readonly journal: MemoryJournal;
  readonly quarantine: MemoryQuarantine;
  readonly run: RunContext;
  readonly rowsBefore: string[];
  /** The first commit step's store requests crash at this one (1-based). */
  crashAt: number;
  commitRequests: number;
  inFirstCommit: boolean;
}

async function prepareWorld(runId = 'deferred-footers'): Promise<World> {
  const world = { crashAt: Number.POSITIVE_INFINITY, commitRequests: 0, inFirstCommit: false } as World;
  const store = new MemoryObjectStore({
    interceptor: async () => {
      if (!world.inFirstCommit) return;
      world.commitRequests++;
      if (world.commitRequests === world.crashAt)
        throw new Crash(`commit died at request ${world.commitRequests}`);
    },
  });
  for (const [key, bytes] of planted) await store.put(key, bytes);
  return Object.assign(world, {
    store,
    journal: new MemoryJournal(),
    quarantine: new MemoryQuarantine(),
    run: runOf(runId),
    rowsBefore: await rowsUnder(store, PARTITION),
  });
}

function runOf(runId: string): RunContext {
  return buildRunContext(
    { name: 'events', prefix: 'events', bucket: 'lake' },
    `date=${DAY}`,
    { force: true, quietMinutes: 0 },
    { executionName: runId, startedAt: 0, versionedBuckets: [] },
  );
}

/** Runs the partition through the workflow's steps, with what each step sent. */
async function runWorld(
  world: World,
  run: RunContext = world.run,
  beforeCommit?: (world: World) => Promise<void>,
): Promise<{ result: PartitionRunResult; logBySteps: Record<string, LoggedRequest[]> }> {
  const counting = countingStore(world.store);
  const logBySteps: Record<string, LoggedRequest[]> = {};
  let commits = 0;
  const steps = Object.fromEntries(
    Object.entries(WORKFLOW_STEPS).map(([name, step]) => [
      name,
      async (...args: unknown[]) => {
        if (name === 'commitStep') await beforeCommit?.(world);
        world.inFirstCommit = name === 'commitStep' && commits++ === 0;
        const logged = counting.requests().length;
        try {
          return await (step as (...a: unknown[]) => Promise<unknown>)(...args);
        } finally {
          world.inFirstCommit = false;
          logBySteps[name] = [...(logBySteps[name] ?? []), ...counting.requests().slice(logged)];
        }
      },
    ]),
  ) as unknown as WorkflowSteps;
  const result = await runPartition(
    {
      store: counting.store,
      journal: world.journal,
      clock: new ManualClock(5_000),
      leases: new MemoryLeases(),
      quarantine: world.quarantine,
      engine: defaultParquetEngine,
      wait: async () => undefined,
    },
    run,
    { plan: { inlineGroupLimit: 40, compactMemoryMb: 1769 } },
    {},
    steps,
  );
  return { result, logBySteps };
}

/** The files left in place must be there byte for byte. */
async function expectLeftInPlace(store: ObjectStore, where: string): Promise<void> {
  for (const key of [ALONE, CORRUPT, EMPTY]) {
    expect(await store.get(key), `${where}: ${key}`).toEqual(planted.get(key));
  }
}

describe('tiny inputs planned without their footers', () => {
  it('reads each input once, writes one output per schema, and leaves the corrupt, empty and lone files in place', async () => {
    // Prepare
    const world = await prepareWorld();

    // Act
    const { result, logBySteps } = await runWorld(world);

    // Assess: planning read no input; the rewrite read each once; the group committed the readable populations.
    expect(result.plan?.groupCount).toBe(1);
    expect((logBySteps.planRun ?? []).filter((r) => planted.has(r.key))).toEqual([]);
    const reads = (logBySteps.compactGroup ?? []).filter((r) => r.op === 'get' && planted.has(r.key));
    expect(reads.map((r) => r.key).sort()).toEqual([...planted.keys()].sort());
    expect(result.groups.map((g) => g.result.state)).toEqual(['done']);
    expect(result.groups[0]?.result.retired).toBe(A_KEYS.length + B_KEYS.length);
    expect(await rowsUnder(world.store, PARTITION)).toEqual(world.rowsBefore);
    expect(world.rowsBefore).toHaveLength(6 * 20 + 6 * 30 + 7);
    await expectLeftInPlace(world.store, 'clean run');
    // One output per schema: each holds the columns of one population only.
    const left = world.store.keys().filter((k) => k.startsWith(PARTITION));
    const outputs = left.filter((k) => !planted.has(k));
    expect(outputs).toHaveLength(2);
    const columns = [];
    for (const key of outputs) {
      const file = join(scratch, `out-${downloaded++}.parquet`);
      await writeFile(file, await world.store.get(key));
      columns.push(
        (await db.columnTypes(`SELECT * FROM read_parquet(${sqlString(file)})`)).map((c) => c.name).join(),
      );
    }
    expect(columns.sort()).toEqual(['id,name', 'id,score']);
    // The corrupt and empty files are quarantined and named in the group's entry; the lone file is named only.
    const quarantined = await world.quarantine.listTable('events');
    expect(quarantined.map((q) => q.key).sort()).toEqual([CORRUPT, EMPTY]);
    const entry = await world.journal.get(world.run.runId, result.groups[0]?.item.groupId ?? '');
    expect(entry?.inputs.map((i) => i.key).sort()).toEqual([...A_KEYS, ...B_KEYS].sort());
    expect(entry?.inputs.every((i) => typeof i.rows === 'number' && i.rows > 0)).toBe(true);
    for (const key of [ALONE, CORRUPT, EMPTY]) expect(entry?.note).toContain(key);
  });

  it('plans nothing on the next run: the outputs and the lone file are too few, the bad files quarantined', async () => {
    // Prepare
    const world = await prepareWorld();
    await runWorld(world);

    // Act
    const { result } = await runWorld(world, runOf('deferred-footers-again'));

    // Assess: nothing planned, the quarantined files skipped for what they are.
    expect(result.plan?.groupCount).toBe(0);
    expect(await rowsUnder(world.store, PARTITION)).toEqual(world.rowsBefore);
    await expectLeftInPlace(world.store, 'second run');
  });

  it('does not retire a file a writer adds while the run is under way', async () => {
    // Prepare
    const world = await prepareWorld();
    // The rows the partition holds with the writer's file (read together, as the assessment reads them).
    const withLate = new MemoryObjectStore();
    for (const [key, bytes] of planted) await withLate.put(key, bytes);
    await withLate.put(LATE, lateBytes);
    const expected = await rowsUnder(withLate, PARTITION);

    // Act
    const { result } = await runWorld(world, world.run, async (w) => {
      await w.store.put(LATE, lateBytes);
    });

    // Assess
    expect(result.groups.map((g) => g.result.state)).toEqual(['done']);
    expect(await world.store.get(LATE)).toEqual(lateBytes);
    expect(await rowsUnder(world.store, PARTITION)).toEqual(expected);
    expect(expected.length).toBe(world.rowsBefore.length + 10);
    await expectLeftInPlace(world.store, 'late writer');
  });

  it('loses and duplicates no row when the commit dies at any of its requests and the run settles it', async () => {
    // Prepare: count the requests of a clean commit, so every boundary is injected once.
    const probe = await prepareWorld();
    await runWorld(probe);
    const total = probe.commitRequests;
    expect(total).toBeGreaterThan(3);

    for (let crashAt = 1; crashAt <= total; crashAt++) {
      const world = await prepareWorld();
      world.crashAt = crashAt;

      // Act: the commit dies; the run's rollback step settles the group (back before publishing, forward after).
      const { result } = await runWorld(world);
      const where = `crash at commit request ${crashAt} of ${total}`;

      // Assess: the rows as before, the left-out files in place, no staging left.
      expect(result.groups[0]?.error?.name, where).toBe('Crash');
      expect(['done', 'aborted'], where).toContain(result.groups[0]?.result.state);
      expect(await rowsUnder(world.store, PARTITION), where).toEqual(world.rowsBefore);
      await expectLeftInPlace(world.store, where);
      expect(
        world.store.keys().filter((k) => k.includes('/staging/')),
        where,
      ).toEqual([]);

      // Act again: a new run recovers whatever the crash left.
      const again = await runWorld(world, runOf(`deferred-footers-rerun-${crashAt}`));

      // Assess: still every row once, the left-out files untouched.
      expect(
        again.result.groups.every((g) => g.error === undefined),
        where,
      ).toBe(true);
      expect(await rowsUnder(world.store, PARTITION), where).toEqual(world.rowsBefore);
      await expectLeftInPlace(world.store, `${where}, re-run`);
    }
  }, 300_000);
});
