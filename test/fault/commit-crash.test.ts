// Crash injection and concurrent writers against the commit protocol: for every request at which
// the committing process can die, a rerun ends with exactly the rows the table started with — in trash
// mode and in delete-rebuild mode, whose undo re-creates retired inputs from the outputs' rows.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../functions/adapters/memory-journal.js';
import { MemoryObjectStore } from '../../functions/adapters/memory-object-store.js';
import { commitGroup, rollbackGroup } from '../../functions/core/formats/hive/commit.js';
import type { CommitDeps } from '../../functions/core/formats/table-format.js';
import { locateRows } from '../../functions/core/parquet/provenance.js';
import { ManualClock } from '../../functions/ports/clock.js';
import type { Journal, RetireMode } from '../../functions/ports/journal.js';
import { missingRows } from '../support/multiset.js';
import { textEngine } from '../support/text-engine.js';

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
  /** Runs the writer before every request this picks instead (when set): a writer timed by what the commit does. */
  writerWhen?: (method: string, key: string) => boolean;
  /** Settles when the writer has finished (immediately when it never ran). */
  writerDone: Promise<void>;
  requests: number;
}

async function prepareWorld(
  inputCount: number,
  retireMode: RetireMode = 'trash',
): Promise<{
  world: World;
  deps: () => CommitDeps;
  expected: string[];
  engine: ReturnType<typeof textEngine>;
}> {
  const world = {} as World;
  world.requests = 0;
  world.crashAt = Number.POSITIVE_INFINITY;
  world.writerAt = Number.POSITIVE_INFINITY;
  world.writer = async () => {};
  world.writerDone = Promise.resolve();
  let writerRan = false;
  let writing = false;
  const hook = async (method: string, key = '') => {
    if (writing) return; // the writer is another process: its requests never crash the committer
    world.requests += 1;
    const due =
      world.writerWhen === undefined ? world.requests === world.writerAt : world.writerWhen(method, key);
    if (due && (world.writerWhen !== undefined || !writerRan)) {
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
    inputs.push({ key, etag, size: 10, ...(retireMode === 'delete-rebuild' && { rows: rows.length }) });
  }
  const half = Math.ceil(all.length / 2);
  // Where each input's rows went, as the rewrite reports it (an input is cut at the halfway point).
  const sources = locateRows([
    { inputs: inputs.map((i) => ({ key: i.key, rows: 3 })), outputRows: [half, all.length - half] },
  ]);
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
      ...(retireMode === 'delete-rebuild' && { sources: sources[n] }),
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
    retireMode,
    stagingPrefix: STAGING,
    trashPrefix: TRASH,
    createdAt: world.clock.now(),
    updatedAt: world.clock.now(),
  });
  const staged = await world.journal.transition(created, 'staged', {}, world.clock.now());
  await world.journal.transition(staged, 'verified', {}, world.clock.now());
  world.requests = 0;
  world.crashAt = saved.crashAt;
  const engine = textEngine();
  const deps = (): CommitDeps => ({
    store: world.store,
    journal: world.journal as Journal,
    clock: world.clock,
    ...(retireMode === 'delete-rebuild' && { engine }),
  });
  return { world, deps, expected: [...all].sort(), engine };
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

  it.each(['trash', 'delete-rebuild'] as const)(
    'keeps a concurrent writer’s new files and an overwritten input’s new content, at any moment (%s)',
    async (mode) => {
      // Prepare: how many requests does a clean commit make?
      const probe = await prepareWorld(5, mode);
      await commitGroup(probe.deps(), 'run1', 'g0001');
      const total = probe.world.requests;
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: total }),
          fc.integer({ min: 1, max: total + 1 }),
          fc.constantFrom('append', 'overwrite'),
          async (writerAt, crashAt, action) => {
            const { world, deps, expected } = await prepareWorld(5, mode);
            const victim = `${PARTITION}part-00002.snappy.parquet`;
            let truth = expected;
            world.writerAt = writerAt;
            world.crashAt = crashAt;
            world.writer = async (store) => {
              if (action === 'append') {
                await store.put(`${PARTITION}part-99999.snappy.parquet`, 'new-1\nnew-2\n');
                truth = [...expected, 'new-1', 'new-2'].sort();
              } else {
                // The writer replaces file 2: its old rows are gone from the truth, the new ones in — unless the
                // commit had retired it already: then the writer creates a new file, and the old rows live on in
                // the outputs.
                const retired = (await store.head(victim)) === undefined;
                await store.put(victim, 'replaced\n');
                truth = retired ? [...expected, 'replaced'].sort() : replaced(expected, 2, 'replaced');
              }
            };
            // Act
            const result = await commitWithRecovery(world, deps);
            // Assess
            expect(['done', 'aborted']).toContain(result.state);
            expect(await visibleRows(world.store)).toEqual(truth);
            expect(world.store.keys().filter((k) => k.startsWith(STAGING))).toEqual([]);
            if (mode === 'delete-rebuild')
              expect(world.store.keys().filter((k) => k.startsWith(TRASH))).toEqual([]);
            if (action === 'overwrite' && result.state === 'done') {
              // Done despite an overwrite only if the overwrite came after the input was retired.
              expect(rowsOf(await world.store.get(victim))).toEqual(['replaced']);
            }
          },
        ),
        { numRuns: 80, seed: 20261130 },
      );
    },
  );
});

/** The old rows of input `i` taken out of `rows`, `replacement` put in: a writer replaced that input. */
function replaced(rows: readonly string[], i: number, replacement: string): string[] {
  const kept = [...rows];
  for (const row of [`r${i}-a`, `r${i}-b`, `r${i}-a`]) kept.splice(kept.indexOf(row), 1);
  return [...kept, replacement].sort();
}

const inputKey = (i: number) => `${PARTITION}part-${String(i).padStart(5, '0')}.snappy.parquet`;

/** The retiring round: the batched delete of the inputs (the first deleteMany of a partition key). */
const retiring = (method: string, key: string) => method === 'deleteMany' && key.startsWith(PARTITION);

describe('commit protocol in delete-rebuild mode', () => {
  it('publishes the outputs and retires every input without copying any', async () => {
    // Prepare
    const { world, deps, expected } = await prepareWorld(6, 'delete-rebuild');
    // Act
    const result = await commitGroup(deps(), 'run1', 'g0001');
    // Assess: the only copies are the two outputs' publishing; nothing in trash.
    expect(result.state).toBe('done');
    expect(result.retired).toHaveLength(6);
    expect(await visibleRows(world.store)).toEqual(expected);
    expect(world.store.requests.copy).toBe(2);
    expect(world.store.keys().filter((k) => !k.startsWith(TABLE))).toEqual([]);
  });

  it('loses and duplicates no row when the process dies at any request and the commit is re-run', async () => {
    // Prepare
    const probe = await prepareWorld(5, 'delete-rebuild');
    await commitGroup(probe.deps(), 'run1', 'g0001');
    const total = probe.world.requests;
    for (let crashAt = 1; crashAt <= total; crashAt++) {
      const { world, deps, expected } = await prepareWorld(5, 'delete-rebuild');
      world.crashAt = crashAt;
      // Act
      const result = await commitWithRecovery(world, deps);
      // Assess
      expect(result.state, `crash at request ${crashAt}`).toBe('done');
      expect(await visibleRows(world.store), `crash at request ${crashAt}`).toEqual(expected);
      expect(
        world.store.keys().filter((k) => !k.startsWith(TABLE)),
        `crash at ${crashAt}`,
      ).toEqual([]);
    }
  });

  it.each([
    ['in one pass over the outputs', false, 1],
    // The refused pass, then one rewrite per retired input.
    ['one input at a time when one pass cannot cut the outputs', true, 5],
  ] as const)(
    'rebuilds every other input from the outputs when a writer overwrites one after publishing, %s',
    async (_, oneOutputOnly, rewrites) => {
      // Prepare: input 0 is overwritten just before the retiring round; input 2's rows straddle both outputs.
      const { world, deps, expected, engine } = await prepareWorld(5, 'delete-rebuild');
      engine.oneOutputOnly = oneOutputOnly;
      const original = await Promise.all(
        [1, 2, 3, 4].map(async (i) => rowsOf(await world.store.get(inputKey(i)))),
      );
      world.writerWhen = retiring;
      world.writer = async (store) => {
        await store.put(inputKey(0), 'replaced\n');
      };
      // Act
      const result = await commitWithRecovery(world, deps);
      // Assess: the table is the original rows with input 0's replaced; every other input is back, row for row
      // in its original order; outputs, staging and the rebuilt copies are gone.
      expect(result.state).toBe('aborted');
      expect(result.conflicts.map((c) => c.key)).toEqual([inputKey(0)]);
      expect(await visibleRows(world.store)).toEqual(replaced(expected, 0, 'replaced'));
      for (const [n, i] of [1, 2, 3, 4].entries()) {
        expect(rowsOf(await world.store.get(inputKey(i)))).toEqual(original[n]);
      }
      expect(world.store.keys().filter((k) => k.startsWith(TABLE))).toHaveLength(5);
      expect(world.store.keys().filter((k) => !k.startsWith(TABLE))).toEqual([]);
      expect((await world.journal.get('run1', 'g0001'))?.undo).toBe('done');
      expect(engine.rewrites).toBe(rewrites);
    },
  );

  it('loses no row when the process dies at any request of the undo and it is re-run', async () => {
    // Prepare: count the requests of a commit whose input 0 is overwritten before the retiring round.
    const overwrite = (world: World) => {
      world.writerWhen = retiring;
      world.writer = async (store) => {
        await store.put(inputKey(0), 'replaced\n');
      };
    };
    const probe = await prepareWorld(5, 'delete-rebuild');
    overwrite(probe.world);
    await commitGroup(probe.deps(), 'run1', 'g0001');
    const total = probe.world.requests;
    expect(total).toBeGreaterThan(20);
    for (let crashAt = 1; crashAt <= total; crashAt++) {
      const { world, deps, expected } = await prepareWorld(5, 'delete-rebuild');
      overwrite(world);
      world.crashAt = crashAt;
      // Act
      const result = await commitWithRecovery(world, deps);
      // Assess
      expect(result.state, `crash at request ${crashAt}`).toBe('aborted');
      expect(await visibleRows(world.store), `crash at request ${crashAt}`).toEqual(
        replaced(expected, 0, 'replaced'),
      );
      expect(
        world.store.keys().filter((k) => !k.startsWith(TABLE)),
        `crash at ${crashAt}`,
      ).toEqual([]);
    }
  });

  it('never overwrites an input a writer re-created while the undo rebuilt it', async () => {
    // Prepare: input 0 overwritten before the retiring round; input 3, retired, re-created by a writer just as
    // the undo writes its rebuilt copy.
    const { world, deps, expected } = await prepareWorld(5, 'delete-rebuild');
    world.writerWhen = (method, key) =>
      retiring(method, key) || (method === 'put' && key === `${TRASH}${inputKey(3)}`);
    world.writer = async (store) => {
      if ((await store.get(inputKey(0)).then(rowsOf))[0] !== 'replaced') {
        await store.put(inputKey(0), 'replaced\n');
      } else await store.put(inputKey(3), 'recreated\n');
    };
    // Act
    const result = await commitWithRecovery(world, deps);
    // Assess: both writers' content wins; every other row is there once.
    expect(result.state).toBe('aborted');
    expect(rowsOf(await world.store.get(inputKey(3)))).toEqual(['recreated']);
    expect(await visibleRows(world.store)).toEqual(
      replaced(replaced(expected, 0, 'replaced'), 3, 'recreated'),
    );
  });

  it('keeps the group fenced, outputs in place, when no engine is there to rebuild an input', async () => {
    // Prepare
    const { world, deps, expected } = await prepareWorld(5, 'delete-rebuild');
    world.writerWhen = retiring;
    world.writer = async (store) => {
      await store.put(inputKey(0), 'replaced\n');
    };
    const { engine: _, ...withoutEngine } = deps();
    // Act
    const failed = await commitGroup(withoutEngine, 'run1', 'g0001').catch((err: unknown) => err);
    // Assess: nothing is missing (duplicates are, until the undo ends), and the undo is still pending.
    expect((failed as Error).name).toBe('InputRebuildError');
    const visible = await visibleRows(world.store);
    expect(missingRows(replaced(expected, 0, 'replaced'), visible)).toEqual([]);
    expect((await world.journal.get('run1', 'g0001'))?.undo).toBe('pending');
    // Act: a step with the engine settles it.
    const settled = await commitGroup(deps(), 'run1', 'g0001');
    // Assess
    expect(settled.state).toBe('aborted');
    expect(await visibleRows(world.store)).toEqual(replaced(expected, 0, 'replaced'));
  });

  it('falls back to trash mode before publishing when the outputs do not locate every input', async () => {
    // Prepare: input 4's rows are recorded as in no output (the journal lost a source).
    const { world, deps, expected } = await prepareWorld(5, 'delete-rebuild');
    const entry = await world.journal.get('run1', 'g0001');
    const outputs = (entry?.outputs ?? []).map((o, n) =>
      n === 1 ? { ...o, sources: o.sources?.filter((s) => s.key !== inputKey(4)) } : o,
    );
    await world.journal.transition(entry as NonNullable<typeof entry>, 'verified', { outputs }, 0);
    // Act
    const result = await commitGroup(deps(), 'run1', 'g0001');
    // Assess
    const after = await world.journal.get('run1', 'g0001');
    expect(after?.retireMode).toBe('trash');
    expect(after?.note).toMatch(/could not be rebuilt from the outputs/);
    expect(result.state).toBe('done');
    expect(await visibleRows(world.store)).toEqual(expected);
    expect(world.store.keys().filter((k) => k.startsWith(TRASH))).toHaveLength(5);
  });
});
