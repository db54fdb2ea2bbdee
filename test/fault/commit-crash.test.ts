// Crash injection and concurrent writers against the commit protocol: for every request at which
// the committing process can die, a rerun ends with exactly the rows the table started with.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../functions/adapters/memory-journal.js';
import { MemoryObjectStore } from '../../functions/adapters/memory-object-store.js';
import { commitGroup, rollbackGroup } from '../../functions/core/formats/hive/commit.js';
import type { CommitDeps } from '../../functions/core/formats/table-format.js';
import { ManualClock } from '../../functions/ports/clock.js';
import type { Journal } from '../../functions/ports/journal.js';

/** Thrown by the fault hooks: stands for the Lambda dying between two requests. */
class Crash extends Error {
  override name = 'Crash';
}

const TABLE = 'events/';
const PARTITION = 'events/date=2024-01-01/';
const STAGING = '_lake-compactor/staging/run1/g0001/';
const TRASH = '_lake-compactor/trash/run1/';

/** Rows are text lines: a file's content is its rows, so multisets can be compared exactly. */
function rowsOf(bytes: Uint8Array): string[] {
  return new TextDecoder().decode(bytes).split('\n').filter(Boolean);
}

async function visibleRows(store: MemoryObjectStore): Promise<string[]> {
  const rows: string[] = [];
  for (const key of store.keys().filter((k) => k.startsWith(TABLE)))
    rows.push(...rowsOf(await store.get(key)));
  return rows.sort();
}

interface World {
  store: MemoryObjectStore;
  journal: MemoryJournal;
  clock: ManualClock;
  /** Fails the request numbered `crashAt` (1-based, store and journal requests counted together). */
  crashAt: number;
  /** Runs once before the request numbered `writerAt`: a concurrent writer's action. */
  writerAt: number;
  writer: (store: MemoryObjectStore) => Promise<void>;
  /** Settles when the writer has finished (immediately when it never ran). */
  writerDone: Promise<void>;
  requests: number;
}

async function prepareWorld(
  inputCount: number,
): Promise<{ world: World; deps: () => CommitDeps; expected: string[] }> {
  const world = {} as World;
  world.requests = 0;
  world.crashAt = Number.POSITIVE_INFINITY;
  world.writerAt = Number.POSITIVE_INFINITY;
  world.writer = async () => {};
  world.writerDone = Promise.resolve();
  let writerRan = false;
  let writing = false;
  const hook = async () => {
    if (writing) return; // the writer is another process: its requests never crash the committer
    world.requests += 1;
    if (world.requests === world.writerAt && !writerRan) {
      writerRan = true;
      writing = true;
      world.writerDone = world.writer(world.store).finally(() => {
        writing = false;
      });
      await world.writerDone;
    }
    if (world.requests === world.crashAt) throw new Crash(`crash at request ${world.requests}`);
  };
  world.store = new MemoryObjectStore({ interceptor: hook });
  world.clock = new ManualClock(1_700_000_000_000);
  world.journal = new MemoryJournal(hook);

  // Prepare: a partition of small files, their rewrite staged as two outputs, journal at `verified`.
  const saved = { crashAt: world.crashAt };
  const inputs = [];
  const all: string[] = [];
  for (let i = 0; i < inputCount; i++) {
    const rows = [`r${i}-a`, `r${i}-b`, `r${i}-a`]; // duplicates inside a file are part of the multiset
    all.push(...rows);
    const key = `${PARTITION}part-${String(i).padStart(5, '0')}.snappy.parquet`;
    const { etag } = await world.store.put(key, `${rows.join('\n')}\n`);
    inputs.push({ key, etag, size: 10 });
  }
  const half = Math.ceil(all.length / 2);
  const outputs = [];
  for (const [n, part] of [all.slice(0, half), all.slice(half)].entries()) {
    const stagingKey = `${STAGING}part-run1-${n}.zstd.parquet`;
    const { etag } = await world.store.put(stagingKey, `${part.join('\n')}\n`);
    outputs.push({
      stagingKey,
      finalKey: `${PARTITION}part-run1-0001-${n}.zstd.parquet`,
      etag,
      size: 1,
      rows: part.length,
    });
  }
  const created = await world.journal.create({
    runId: 'run1',
    groupId: 'g0001',
    table: 'events',
    partition: 'date=2024-01-01',
    state: 'planned',
    inputs,
    outputs,
    retireMode: 'trash',
    stagingPrefix: STAGING,
    trashPrefix: TRASH,
    createdAt: world.clock.now(),
    updatedAt: world.clock.now(),
  });
  const staged = await world.journal.transition(created, 'staged', {}, world.clock.now());
  await world.journal.transition(staged, 'verified', {}, world.clock.now());
  world.requests = 0;
  world.crashAt = saved.crashAt;
  const deps = (): CommitDeps => ({
    store: world.store,
    journal: world.journal as Journal,
    clock: world.clock,
  });
  return { world, deps, expected: [...all].sort() };
}

/**
 * Reruns the commit (as Step Functions' retry or the sweep would) after a crash. The rerun starts
 * once the dead attempt's in-flight requests have landed, as a retry interval of seconds ensures;
 * the concurrent writer, a separate process, is awaited before the state is assessed.
 */
async function commitWithRecovery(world: World, deps: () => CommitDeps) {
  try {
    return await commitGroup(deps(), 'run1', 'g0001');
  } catch (err) {
    if (!(err instanceof Crash)) throw err;
    world.crashAt = Number.POSITIVE_INFINITY;
    await world.writerDone;
    await new Promise((resolve) => setImmediate(resolve));
    return commitGroup(deps(), 'run1', 'g0001');
  } finally {
    world.crashAt = Number.POSITIVE_INFINITY; // the assessment's own reads must not crash
    await world.writerDone;
  }
}

describe('commit protocol under crashes', () => {
  it('without faults publishes the outputs, retires every input to trash and leaves no staging', async () => {
    // Prepare
    const { world, deps, expected } = await prepareWorld(6);
    // Act
    const result = await commitGroup(deps(), 'run1', 'g0001');
    // Assess
    expect(result.state).toBe('done');
    expect(result.published).toHaveLength(2);
    expect(result.retired).toHaveLength(6);
    expect(await visibleRows(world.store)).toEqual(expected);
    expect(world.store.keys().filter((k) => k.startsWith(TABLE))).toHaveLength(2);
    expect(world.store.keys().filter((k) => k.startsWith(STAGING))).toEqual([]);
    expect(world.store.keys().filter((k) => k.startsWith(TRASH))).toHaveLength(6);
    expect(result.visibilityWindowMs).toBe(0);
  });

  it('loses and duplicates no row when the process dies at any request and the commit is re-run', async () => {
    // Prepare: count the requests of a clean commit, so every boundary is injected once.
    const probe = await prepareWorld(5);
    await commitGroup(probe.deps(), 'run1', 'g0001');
    const total = probe.world.requests;
    expect(total).toBeGreaterThan(5);
    for (let crashAt = 1; crashAt <= total; crashAt++) {
      const { world, deps, expected } = await prepareWorld(5);
      world.crashAt = crashAt;
      // Act
      const result = await commitWithRecovery(world, deps);
      // Assess
      expect(result.state, `crash at request ${crashAt}`).toBe('done');
      expect(await visibleRows(world.store), `crash at request ${crashAt}`).toEqual(expected);
      expect(
        world.store.keys().filter((k) => k.startsWith(STAGING)),
        `crash at ${crashAt}`,
      ).toEqual([]);
    }
  });

  it('rolls back cleanly when the workflow abandons the group before publishing', async () => {
    // Prepare
    const { world, deps, expected } = await prepareWorld(4);
    // Act
    const result = await rollbackGroup(deps(), 'run1', 'g0001', 'compaction failed');
    // Assess
    expect(result.state).toBe('aborted');
    expect(await visibleRows(world.store)).toEqual(expected);
    expect(world.store.keys().filter((k) => !k.startsWith(TABLE))).toEqual([]);
  });

  it('keeps a concurrent writer’s new files and an overwritten input’s new content, at any moment', async () => {
    // Prepare: how many requests does a clean commit make?
    const probe = await prepareWorld(5);
    await commitGroup(probe.deps(), 'run1', 'g0001');
    const total = probe.world.requests;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: total }),
        fc.integer({ min: 1, max: total + 1 }),
        fc.constantFrom('append', 'overwrite'),
        async (writerAt, crashAt, action) => {
          const { world, deps, expected } = await prepareWorld(5);
          const victim = `${PARTITION}part-00002.snappy.parquet`;
          let truth = expected;
          world.writerAt = writerAt;
          world.crashAt = crashAt;
          world.writer = async (store) => {
            if (action === 'append') {
              await store.put(`${PARTITION}part-99999.snappy.parquet`, 'new-1\nnew-2\n');
              truth = [...expected, 'new-1', 'new-2'].sort();
            } else {
              // The writer replaces file 2: its old rows are gone from the truth, the new ones in.
              await store.put(victim, 'replaced\n');
              const old = ['r2-a', 'r2-b', 'r2-a'];
              const kept = [...expected];
              for (const row of old) kept.splice(kept.indexOf(row), 1);
              truth = [...kept, 'replaced'].sort();
            }
          };
          // Act
          const result = await commitWithRecovery(world, deps);
          // Assess
          expect(['done', 'aborted']).toContain(result.state);
          expect(await visibleRows(world.store)).toEqual(truth);
          expect(world.store.keys().filter((k) => k.startsWith(STAGING))).toEqual([]);
          if (action === 'overwrite' && result.state === 'done') {
            // Done despite an overwrite only if the overwrite came after the input was retired.
            expect(rowsOf(await world.store.get(victim))).toEqual(['replaced']);
          }
        },
      ),
      { numRuns: 80, seed: 20261130 },
    );
  });
});
