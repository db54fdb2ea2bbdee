// Settling a partition from its fences (in-memory journal and store, rows as text lines): every open group
// ends, back before publishing and forward after, a failing one keeps its fence, and an undo never hides rows.
import { describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../../../functions/adapters/memory-journal.js';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { commitGroup } from '../../../../functions/core/formats/hive/commit.js';
import { settlePartition } from '../../../../functions/core/workflow/settle.js';
import { ManualClock } from '../../../../functions/ports/clock.js';
import type { GroupJournalEntry, GroupState } from '../../../../functions/ports/journal.js';
import { missingRows } from '../../../support/multiset.js';

const REF = { table: 'events', partition: 'date=2024-01-01' };
const DIR = 'events/date=2024-01-01/';

/** A file's content is its rows, one per line: row multisets compare exactly without Parquet. */
const rowsOf = (bytes: Uint8Array) => new TextDecoder().decode(bytes).split('\n').filter(Boolean);

async function visibleRows(store: MemoryObjectStore): Promise<string[]> {
  const rows: string[] = [];
  for (const key of store.keys().filter((k) => k.startsWith(DIR))) rows.push(...rowsOf(await store.get(key)));
  return rows.sort();
}

/** One group of `run` with `n` inputs staged as one output, its journal entry moved to `state`. */
async function groupAt(
  world: { store: MemoryObjectStore; journal: MemoryJournal; clock: ManualClock },
  run: string,
  n: number,
  state: GroupState,
): Promise<{ entry: GroupJournalEntry; rows: string[] }> {
  const { store, journal, clock } = world;
  const inputs = [];
  const rows: string[] = [];
  for (let i = 0; i < n; i++) {
    const lines = [`${run}-r${i}-a`, `${run}-r${i}-b`];
    rows.push(...lines);
    const key = `${DIR}${run}-in-${i}.parquet`;
    inputs.push({ key, size: 10, ...(await store.put(key, `${lines.join('\n')}\n`)) });
  }
  const stagingKey = `_lake-compactor/staging/${run}/g0001/out.parquet`;
  const staged = await store.put(stagingKey, `${rows.join('\n')}\n`);
  let entry = await journal.create({
    runId: run,
    groupId: 'g0001',
    ...REF,
    state: 'planned',
    inputs,
    outputs: [
      {
        stagingKey,
        finalKey: `${DIR}part-${run}-0001-00000.parquet`,
        etag: staged.etag,
        size: 1,
        rows: rows.length,
      },
    ],
    retireMode: 'trash',
    stagingPrefix: `_lake-compactor/staging/${run}/g0001/`,
    trashPrefix: `_lake-compactor/trash/${run}/`,
    createdAt: clock.now(),
    updatedAt: clock.now(),
  });
  const path: GroupState[] = ['staged', 'verified'];
  for (const next of path) {
    if (entry.state === state) break;
    entry = await journal.transition(entry, next, {}, clock.now());
  }
  if (state === 'publishing' || state === 'published') {
    // Drive the real commit up to `state`, then stop it there (the Lambda died).
    const stopAt = state === 'publishing' ? 'copy' : 'deleteMany';
    let dead = false;
    const original = store.copy.bind(store);
    const originalDelete = store.deleteMany.bind(store);
    if (stopAt === 'copy') {
      store.copy = async (source, destination, options) => {
        if (!dead && destination.startsWith(DIR)) {
          dead = true;
          throw new Error('the commit Lambda died before publishing');
        }
        return original(source, destination, options);
      };
    } else {
      store.deleteMany = async (refs) => {
        if (!dead && refs.some((r) => r.key.startsWith(DIR))) {
          dead = true;
          throw new Error('the commit Lambda died before retiring');
        }
        return originalDelete(refs);
      };
    }
    await expect(commitGroup({ store, journal, clock }, run, 'g0001')).rejects.toThrow('died');
    store.copy = original;
    store.deleteMany = originalDelete;
    entry = (await journal.get(run, 'g0001')) as GroupJournalEntry;
  }
  expect(entry.state).toBe(state);
  return { entry, rows };
}

function world() {
  return { store: new MemoryObjectStore(), journal: new MemoryJournal(), clock: new ManualClock(1_000_000) };
}

describe('settlePartition', () => {
  it('rolls a published group forward and a verified one back, closing every fence, so the rows are exact', async () => {
    // Prepare: run A died with outputs published and inputs still in place (readers see rows twice);
    // run B died verified (nothing visible yet).
    const w = world();
    const a = await groupAt(w, 'run-a', 3, 'published');
    const b = await groupAt(w, 'run-b', 2, 'verified');
    expect(await visibleRows(w.store)).toEqual([...a.rows, ...a.rows, ...b.rows].sort());
    expect(await w.journal.listOpen(REF)).toHaveLength(2);

    // Act
    const report = await settlePartition(w, REF, { reason: 'FAILED RunInterrupted: test' });

    // Assess
    expect(report.unsettled).toEqual([]);
    expect(report.settled.map((g) => [g.runId, g.from, g.to])).toEqual([
      ['run-a', 'published', 'done'],
      ['run-b', 'verified', 'aborted'],
    ]);
    expect(await visibleRows(w.store)).toEqual([...a.rows, ...b.rows].sort());
    expect(await w.journal.listOpen(REF)).toEqual([]);
    expect(w.store.keys().filter((k) => k.includes('/staging/'))).toEqual([]);
  });

  it('leaves the caller’s own run alone and closes fences of entries that are missing or already settled', async () => {
    // Prepare
    const w = world();
    await groupAt(w, 'mine', 2, 'verified');
    const done = await groupAt(w, 'old', 2, 'published');
    await commitGroup(w, 'old', 'g0001');
    // A fence whose entry never got written (the process died between the two writes of a create).
    await w.journal.create({ ...done.entry, runId: 'ghost', state: 'planned' });
    const ghost = (await w.journal.listOpen(REF)).find((g) => g.runId === 'ghost');
    expect(ghost).toBeDefined();
    (w.journal as unknown as { entries: Map<string, unknown> }).entries.delete('ghost/g0001');

    // Act
    const report = await settlePartition(w, REF, { reason: 'x', exceptRun: 'mine' });

    // Assess
    expect(report.settled).toEqual([]);
    expect(await w.journal.listOpen(REF)).toEqual([{ runId: 'mine', groupId: 'g0001' }]);
    expect((await w.journal.get('mine', 'g0001'))?.state).toBe('verified');
  });

  it('reports a group whose requests keep failing as unsettled and keeps its fence', async () => {
    // Prepare: the bucket policy denies deleting table objects (every time)
    const w = world();
    const a = await groupAt(w, 'run-a', 3, 'published');
    const deleteMany = w.store.deleteMany.bind(w.store);
    w.store.deleteMany = async (refs) => ({
      deleted: [],
      errors: refs.map((r) => ({ key: r.key, code: 'AccessDenied', message: 'Access Denied' })),
    });

    // Act
    const report = await settlePartition(w, REF, { reason: 'x' });
    const again = await settlePartition(w, REF, { reason: 'x' });

    // Assess
    expect(report.unsettled).toEqual([
      expect.objectContaining({
        runId: 'run-a',
        state: 'published',
        error: expect.stringContaining('AccessDenied'),
      }),
    ]);
    expect(again.unsettled).toHaveLength(1);
    expect(await w.journal.listOpen(REF)).toEqual([{ runId: 'run-a', groupId: 'g0001' }]);
    // Once the permission is back, the same call ends it exactly.
    w.store.deleteMany = deleteMany;
    expect((await settlePartition(w, REF, { reason: 'x' })).settled).toHaveLength(1);
    expect(await visibleRows(w.store)).toEqual([...a.rows].sort());
  });

  it('undoes a partial publish restoring the inputs before removing the outputs: no moment misses a row', async () => {
    // Prepare: a writer replaces one input after its trash copy; the retire round then deletes the
    // others and refuses that one, and the group must be undone.
    const w = world();
    const a = await groupAt(w, 'run-a', 4, 'verified');
    const victim = a.entry.inputs[1]?.key as string;
    const replaced = ['writer-new-1', 'writer-new-2'];
    const expected = [...a.rows.filter((r) => !r.startsWith('run-a-r1-')), ...replaced].sort();
    const deleteMany = w.store.deleteMany.bind(w.store);
    let replacedYet = false;
    w.store.deleteMany = async (refs) => {
      if (!replacedYet && refs.some((r) => r.key === victim)) {
        replacedYet = true;
        await w.store.put(victim, `${replaced.join('\n')}\n`);
      }
      return deleteMany(refs);
    };
    // Every request of the undo is preceded by a look at what a listing reader would see.
    const seen: string[][] = [];
    let undoing = false;
    let looking = false;
    const observe = async () => {
      if (!undoing || looking) return;
      looking = true;
      seen.push(await visibleRows(w.store));
      looking = false;
    };
    for (const method of ['head', 'get', 'put', 'copy', 'deleteMany'] as const) {
      const original = (w.store[method] as (...args: unknown[]) => Promise<unknown>).bind(w.store);
      (w.store as unknown as Record<string, unknown>)[method] = async (...args: unknown[]) => {
        await observe();
        const result = await original(...args);
        if (method === 'deleteMany' && replacedYet) undoing = true;
        return result;
      };
    }

    // Act
    const outcome = await commitGroup(w, 'run-a', 'g0001');
    undoing = false;

    // Assess
    expect(outcome.state).toBe('aborted');
    expect(await visibleRows(w.store)).toEqual(expected);
    expect(seen.length).toBeGreaterThan(3);
    for (const [i, rows] of seen.entries()) {
      expect(missingRows(expected, rows), `snapshot ${i} of the undo hides rows`).toEqual([]);
    }
    expect(await w.journal.listOpen(REF)).toEqual([]);
  });
});
