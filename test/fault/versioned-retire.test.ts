// Delete mode on a versioned bucket, with each input's version id learnt from the rewrite's own GETs instead of a
// HEAD per input at the commit: the workflow's steps (plan → compact → verify → commit → finalize) on real Parquet,
// over an in-memory bucket that keeps every version and lists as S3's ListObjectsV2 does (no version ids). Rows are
// compared as multisets before and after (DuckDB), with a writer replacing an input between the steps, an input
// swapped and put back around the rewrite's read, and the commit Lambda dying at each of its requests in turn.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
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
import { writeSampleLake } from '../../functions/tools/sample-lake.js';
import { countingStore, type LoggedRequest } from '../support/counting-store.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';

/** Thrown by the fault hook: stands for the commit Lambda dying between two requests. */
class Crash extends Error {
  override name = 'Crash';
}

/** 20 inputs: more than the 13 whose HEADs would cost one LIST page, so the commit checks them with a listing. */
const INPUTS = 20;
const DAY = '2024-03-01';
const PARTITION = `events/date=${DAY}/`;

let db: DuckDb;
let scratch: string;
/** Parquet files of the same table written apart (another seed): what a writer replaces an input with. */
let otherFiles: Uint8Array[];

beforeAll(async () => {
  db = await openDuckDb();
  scratch = await mkdtemp(join(tmpdir(), 'lc-versioned-'));
  otherFiles = [];
  await writeSampleLake(
    async (_key, bytes) => {
      otherFiles.push(bytes);
    },
    { table: 'events', days: 1, batches: 2, startDate: DAY, minRows: 50, maxRows: 50, seed: 77 },
  );
}, 120_000);

afterAll(async () => {
  db?.close();
  if (scratch !== undefined) await rm(scratch, { recursive: true, force: true });
});

let written = 0;
/** Every row of the Parquet objects under `prefix`, as canonical JSON, sorted: a multiset. */
async function rowsUnder(store: ObjectStore, prefix: string): Promise<string[]> {
  const files: string[] = [];
  for await (const o of store.listAll(prefix)) {
    if (!o.key.endsWith('.parquet')) continue;
    const file = join(scratch, `${written++}.parquet`);
    await writeFile(file, await store.get(o.key));
    files.push(file);
  }
  if (files.length === 0) return [];
  const rows = await db.rows(`SELECT * FROM read_parquet([${files.map(sqlString).join(', ')}]) ORDER BY ALL`);
  return rows.map((r) => JSON.stringify(r));
}

interface World {
  readonly store: MemoryObjectStore;
  readonly journal: MemoryJournal;
  readonly quarantine: MemoryQuarantine;
  readonly run: RunContext;
  /** The inputs as written: key → bytes and the version id the bucket gave them. */
  readonly inputs: Map<string, { bytes: Uint8Array; versionId: string }>;
  readonly rowsBefore: string[];
  /** The first commit step's store requests crash at this one (1-based); later steps never crash. */
  crashAt: number;
  /** Store requests the first commit step sent (what a clean run's count of boundaries comes from). */
  commitRequests: number;
  /** Whether the first commit step is running (the interceptor counts its requests only). */
  inFirstCommit: boolean;
  /** A writer's action before a request of the run (another process: its own requests are not seen here). */
  onRequest?: ((method: string, key: string) => Promise<void>) | undefined;
}

async function prepareWorld(): Promise<World> {
  const world = {
    crashAt: Number.POSITIVE_INFINITY,
    commitRequests: 0,
    inFirstCommit: false,
  } as World;
  const store = new MemoryObjectStore({
    versioned: true,
    listsVersionIds: false,
    interceptor: async (method, key) => {
      const writer = world.onRequest;
      if (writer !== undefined) {
        world.onRequest = undefined; // the writer's own requests pass
        try {
          await writer(method, key);
        } finally {
          world.onRequest ??= writer;
        }
      }
      if (!world.inFirstCommit) return;
      world.commitRequests++;
      if (world.commitRequests === world.crashAt) {
        throw new Crash(`commit died at request ${world.commitRequests}`);
      }
    },
  });
  const inputs = new Map<string, { bytes: Uint8Array; versionId: string }>();
  await writeSampleLake(
    async (key, bytes) => {
      await store.put(key, bytes);
      inputs.set(key, { bytes, versionId: (await store.head(key))?.versionId ?? '' });
    },
    { table: 'events', days: 1, batches: INPUTS, startDate: DAY, minRows: 50, maxRows: 50, seed: 31 },
  );
  const run = buildRunContext(
    { name: 'events', prefix: 'events', bucket: 'lake' },
    `date=${DAY}`,
    { force: true, quietMinutes: 0 },
    { executionName: 'versioned-retire', startedAt: 0, versionedBuckets: ['lake'] },
  );
  return Object.assign(world, {
    store,
    journal: new MemoryJournal(),
    quarantine: new MemoryQuarantine(),
    run,
    inputs,
    rowsBefore: await rowsUnder(store, PARTITION),
  });
}

/** A writer's actions between the workflow's steps. */
interface Between {
  readonly beforeCompact?: (world: World) => Promise<void>;
  readonly beforeCommit?: (world: World) => Promise<void>;
}

/** Runs the partition through the workflow's steps, with what each step sent. */
async function runWorld(
  world: World,
  between: Between = {},
): Promise<{ result: PartitionRunResult; logBySteps: Record<string, LoggedRequest[]> }> {
  const counting = countingStore(world.store);
  const logBySteps: Record<string, LoggedRequest[]> = {};
  let commits = 0;
  const steps = Object.fromEntries(
    Object.entries(WORKFLOW_STEPS).map(([name, step]) => [
      name,
      async (...args: unknown[]) => {
        if (name === 'compactGroup') await between.beforeCompact?.(world);
        if (name === 'commitStep') await between.beforeCommit?.(world);
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
    world.run,
    { plan: { inlineGroupLimit: 40, compactMemoryMb: 1769 } },
    {},
    steps,
  );
  return { result, logBySteps };
}

/** The bytes of `versionId` of `key`, copied aside (the undo's own way of restoring it). */
async function versionBytes(store: MemoryObjectStore, key: string, versionId: string): Promise<Uint8Array> {
  const aside = `_aside/${key}`;
  await store.copy(key, aside, { sourceVersionId: versionId });
  return store.get(aside);
}

const firstKey = (world: World): string => [...world.inputs.keys()][0] as string;

describe('delete mode on a versioned bucket, versions learnt from the rewrite’s reads', () => {
  it('retires every input without a HEAD each, journaling the version read, which stays restorable', async () => {
    // Prepare
    const world = await prepareWorld();

    // Act
    const { result, logBySteps } = await runWorld(world);

    // Assess: the run compacted all inputs and lost no row.
    expect(result.summary.outcome).toBe('compacted');
    expect(result.groups.map((g) => g.result.state)).toEqual(['done']);
    expect(result.groups[0]?.result.retired).toBe(INPUTS);
    expect(await rowsUnder(world.store, PARTITION)).toEqual(world.rowsBefore);
    expect(world.rowsBefore.length).toBe(INPUTS * 50);
    // No HEAD of any input at the commit: one listing of their folder checked them.
    const commit = logBySteps.commitStep ?? [];
    expect(commit.filter((r) => r.op === 'head' && world.inputs.has(r.key))).toEqual([]);
    expect(commit.filter((r) => r.op === 'list' && r.key === PARTITION)).toHaveLength(1);
    // The journal holds each input's version as written (the one read), and each is still there for an undo.
    const entry = await world.journal.get(world.run.runId, result.groups[0]?.item.groupId ?? '');
    expect(entry?.retireMode).toBe('delete-versioned');
    expect(entry?.note).toBeUndefined();
    for (const input of entry?.inputs ?? []) {
      const planted = world.inputs.get(input.key);
      expect(input.versionId).toBe(planted?.versionId);
      expect(await versionBytes(world.store, input.key, input.versionId ?? '')).toEqual(planted?.bytes);
    }
  });

  it('leaves the group alone, nothing lost, when a writer replaces an input between the rewrite and the commit', async () => {
    // Prepare
    const world = await prepareWorld();
    const replaced = firstKey(world);
    const newBytes = otherFiles[0] as Uint8Array;
    // The rows of the partition the writer leaves: read together, as the assessment reads them (DuckDB unifies
    // the files' column types across one read).
    const left = new MemoryObjectStore();
    for (const [key, { bytes }] of world.inputs) await left.put(key, key === replaced ? newBytes : bytes);
    const expected = await rowsUnder(left, PARTITION);

    // Act
    const { result } = await runWorld(world, {
      beforeCommit: async (w) => {
        await w.store.put(replaced, newBytes);
      },
    });

    // Assess: aborted before publishing, the writer's file and every other input where they were.
    expect(result.groups.map((g) => g.result.state)).toEqual(['aborted']);
    expect(result.groups[0]?.result.reason).toContain(replaced);
    expect(await rowsUnder(world.store, PARTITION)).toEqual(expected);
    expect(await world.store.get(replaced)).toEqual(newBytes);
  });

  it('retires an input a writer re-put with the same bytes (a newer version), keeping both versions', async () => {
    // Prepare
    const world = await prepareWorld();
    const key = firstKey(world);
    const planted = world.inputs.get(key);
    let newer = '';

    // Act
    const { result } = await runWorld(world, {
      beforeCommit: async (w) => {
        await w.store.put(key, planted?.bytes ?? new Uint8Array());
        newer = (await w.store.head(key))?.versionId ?? '';
      },
    });

    // Assess: the same ETag, so the same rows: retired like the others, and neither version deleted outright.
    expect(result.groups.map((g) => g.result.state)).toEqual(['done']);
    expect(await rowsUnder(world.store, PARTITION)).toEqual(world.rowsBefore);
    expect(await world.store.head(key)).toBeUndefined();
    const entry = await world.journal.get(world.run.runId, result.groups[0]?.item.groupId ?? '');
    const journaled = entry?.inputs.find((i) => i.key === key)?.versionId;
    expect(journaled).toBe(planted?.versionId);
    expect(newer).not.toBe(journaled);
    expect(await versionBytes(world.store, key, journaled ?? '')).toEqual(planted?.bytes);
    expect(await versionBytes(world.store, key, newer)).toEqual(planted?.bytes);
  });

  it('aborts at the rewrite, quarantining nothing, when it read another file that was put back right after', async () => {
    // Prepare: a writer swaps an input for another file before the rewrite and puts the original back as soon as
    // the rewrite has read it, so a HEAD at any later point sees the planned ETag again.
    const world = await prepareWorld();
    const key = firstKey(world);
    const planted = world.inputs.get(key)?.bytes ?? new Uint8Array();
    let putBack = false;

    // Act
    const { result } = await runWorld(world, {
      beforeCompact: async (w) => {
        await w.store.put(key, otherFiles[1] as Uint8Array);
        let read = false;
        w.onRequest = async (method, k) => {
          if (read && !putBack) {
            await w.store.put(key, planted);
            putBack = true;
          } else if ((method === 'get' || method === 'getRange') && k === key) read = true;
        };
      },
    });
    world.onRequest = undefined;

    // Assess: a conflict (not a corrupt file, not a failed group), every row where it was, the input not quarantined.
    expect(putBack).toBe(true);
    expect(await world.store.get(key)).toEqual(planted);
    expect(result.groups[0]?.error).toBeUndefined();
    expect(result.groups.map((g) => g.result.state)).toEqual(['aborted']);
    expect(result.groups[0]?.result.reason).toMatch(/changed since planning \(read at ETag/);
    expect(await world.quarantine.listTable('events')).toEqual([]);
    expect(await rowsUnder(world.store, PARTITION)).toEqual(world.rowsBefore);
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

      // Assess: either every input retired into the outputs or every input in place, never a mix; no row lost.
      expect(result.groups[0]?.error?.name, where).toBe('Crash');
      expect(['done', 'aborted'], where).toContain(result.groups[0]?.result.state);
      expect(await rowsUnder(world.store, PARTITION), where).toEqual(world.rowsBefore);
      expect(
        world.store.keys().filter((k) => k.includes('/staging/')),
        where,
      ).toEqual([]);
    }
  });
});
