// Proves retire mode delete-rebuild end to end with the real engine: the compact step records where every
// input's rows went (or falls back to trash when it cannot), the commit copies no input, and when a writer
// overwrites an input after publishing the undo re-creates every other input from the outputs' rows — the
// table's rows are then the original ones with the overwritten input's replaced by its new content, also when
// the process dies at any request of that undo and the commit is re-run.

import { tableFromIPC } from 'apache-arrow';
import { beforeEach, describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../../../../functions/adapters/memory-journal.js';
import { MemoryLeases } from '../../../../../functions/adapters/memory-leases.js';
import { MemoryObjectStore } from '../../../../../functions/adapters/memory-object-store.js';
import { pw } from '../../../../../functions/adapters/parquet-wasm/wasm.js';
import { commitGroup } from '../../../../../functions/core/formats/hive/commit.js';
import { normalizeRunInput, type RunContext } from '../../../../../functions/core/run-input.js';
import { parseTableConfigs } from '../../../../../functions/core/table-config.js';
import { compactGroup } from '../../../../../functions/core/workflow/compact.js';
import { acquireLease } from '../../../../../functions/core/workflow/lease.js';
import { planRun } from '../../../../../functions/core/workflow/plan.js';
import { verifyGroup } from '../../../../../functions/core/workflow/verify.js';
import { ManualClock } from '../../../../../functions/ports/clock.js';
import { defaultParquetEngine } from '../../../../../functions/shared/parquet-engine.js';
import { writeSampleLake } from '../../../../../functions/tools/sample-lake.js';
import { dyingStore, observedStore, type StoreCall } from '../../../../support/crash-store.js';

const tables = parseTableConfigs([
  { name: 'events', bucket: 'lake', prefix: 'events', partitionColumns: ['date'] },
]);
const DAY = '2024-03-01';
const PARTITION = `events/date=${DAY}/`;

function runContext(runId: string, extra: Record<string, unknown> = {}): RunContext {
  const normalized = normalizeRunInput(
    { table: 'events', partition: `date=${DAY}`, quietMinutes: 0, ...extra },
    tables,
    { executionName: runId, startedAt: 1_000 },
  );
  if (normalized.mode !== 'single') throw new Error('expected one partition');
  return { ...normalized.run, retireMode: 'delete-rebuild' };
}

/** A file's rows as canonical text, in order (bigints as decimal text). */
function rowsOf(bytes: Uint8Array): string[] {
  const table = tableFromIPC(pw.readParquet(bytes).intoIPCStream());
  return table
    .toArray()
    .map((row) =>
      JSON.stringify(row.toJSON(), (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)),
    );
}

async function tableRows(store: MemoryObjectStore): Promise<string[]> {
  const rows: string[] = [];
  for (const key of store.keys().filter((k) => k.startsWith(PARTITION)))
    rows.push(...rowsOf(await store.get(key)));
  return rows.sort();
}

describe('retire mode delete-rebuild', () => {
  let store: MemoryObjectStore;
  let journal: MemoryJournal;
  let clock: ManualClock;
  let inputs: string[];
  /** Runs before each request the store gets (a concurrent writer), when set. */
  let writer: ((method: string, key: string) => Promise<void>) | undefined;
  const deps = () => ({ store, journal, clock, engine: defaultParquetEngine });

  /** A fresh partition of `files` small files (seven unless said), a fresh journal, no writer. */
  async function freshLake(files = 7): Promise<void> {
    writer = undefined;
    store = new MemoryObjectStore({ interceptor: (method, key) => writer?.(method, key) });
    journal = new MemoryJournal();
    clock = new ManualClock(5_000);
    inputs = [];
    await writeSampleLake(
      async (key, bytes) => {
        await store.put(key, bytes);
        inputs.push(key);
      },
      { table: 'events', days: 1, batches: files, startDate: DAY, minRows: 10, maxRows: 30, seed: 11 },
    );
  }

  beforeEach(() => freshLake());

  /** Plans, compacts into `outputs` outputs and verifies the run's one group. */
  async function stageGroup(run: RunContext, outputs: number): Promise<void> {
    const leases = new MemoryLeases();
    await acquireLease(leases, run, clock.now());
    await planRun({ ...deps(), leases }, run, { inlineGroupLimit: 40, compactMemoryMb: 1024 });
    const compacted = await compactGroup(deps(), run, { groupId: 'g0001', expectedOutputFiles: outputs });
    await verifyGroup(deps(), run, 'g0001', compacted.fingerprint);
  }

  it('records where every input’s rows are in the staged outputs', async () => {
    // Prepare
    const run = runContext('rb-1');

    // Act
    await stageGroup(run, 2);

    // Assess: every input's rows are located once, and each output's sources add up to it.
    const entry = await journal.get('rb-1', 'g0001');
    expect(entry?.retireMode).toBe('delete-rebuild');
    expect(entry?.outputs).toHaveLength(2);
    for (const output of entry?.outputs ?? []) {
      expect(output.sources?.reduce((n, s) => n + s.rows, 0)).toBe(output.rows);
    }
    const located = new Map<string, number>();
    for (const s of (entry?.outputs ?? []).flatMap((o) => o.sources ?? [])) {
      located.set(s.key, (located.get(s.key) ?? 0) + s.rows);
    }
    expect(Object.fromEntries(located)).toEqual(
      Object.fromEntries((entry?.inputs ?? []).map((i) => [i.key, i.rows])),
    );
  });

  it('falls back to trash mode, and says why, when the rewrite sorts rows', async () => {
    // Prepare
    const run = runContext('rb-2', { strategy: 'sort', sortColumns: ['user_id'] });

    // Act
    await stageGroup(run, 1);

    // Assess
    const entry = await journal.get('rb-2', 'g0001');
    expect(entry?.retireMode).toBe('trash');
    expect(entry?.note).toMatch(/delete-rebuild mode fell back to trash mode: the rewrite reordered rows/);
    expect(entry?.outputs.every((o) => o.sources === undefined)).toBe(true);
  });

  it('commits without copying any input to trash', async () => {
    // Prepare
    const run = runContext('rb-3');
    await stageGroup(run, 2);
    const before = await tableRows(store);
    const copies = store.requests.copy;

    // Act
    const result = await commitGroup(deps(), 'rb-3', 'g0001');

    // Assess
    expect(result.state).toBe('done');
    expect(store.requests.copy - copies).toBe(2);
    expect(store.keys().filter((k) => k.startsWith('_lake-compactor/trash/'))).toEqual([]);
    expect(await tableRows(store)).toEqual(before);
  });

  it('restores every other input from the outputs, row for row, when a writer overwrites one after publishing', async () => {
    // Prepare: two outputs, so inputs straddle an output boundary; the writer replaces input 3 with new rows
    // just before the retiring round.
    const run = runContext('rb-4');
    await stageGroup(run, 2);
    const victim = inputs[3] as string;
    const originals = new Map<string, string[]>();
    for (const key of inputs) originals.set(key, rowsOf(await store.get(key)));
    const replacement = await store.get(inputs[0] as string);
    const expected = [
      ...inputs.flatMap((k) => (k === victim ? rowsOf(replacement) : (originals.get(k) ?? []))),
    ].sort();
    writer = async (method, key) => {
      if (method !== 'deleteMany' || !key.startsWith(PARTITION)) return;
      writer = undefined;
      await store.put(victim, replacement);
    };

    let rewrites = 0;
    const counting = {
      ...defaultParquetEngine,
      rewriteGroup: (...args: Parameters<typeof defaultParquetEngine.rewriteGroup>) => {
        rewrites += 1;
        return defaultParquetEngine.rewriteGroup(...args);
      },
    };

    // Act
    const result = await commitGroup({ ...deps(), engine: counting }, 'rb-4', 'g0001');

    // Assess: aborted on the overwrite; the table's rows are the original ones with the victim's replaced, every
    // other input is back with its rows in their order, and nothing is left outside the table.
    expect(result.state).toBe('aborted');
    expect(result.conflicts.map((c) => c.key)).toEqual([victim]);
    expect(await tableRows(store)).toEqual(expected);
    expect(
      store
        .keys()
        .filter((k) => k.startsWith(PARTITION))
        .sort(),
    ).toEqual([...inputs].sort());
    for (const key of inputs.filter((k) => k !== victim)) {
      expect(rowsOf(await store.get(key)), key).toEqual(originals.get(key));
    }
    expect(store.keys().filter((k) => !k.startsWith(PARTITION) && !k.includes('/plans/'))).toEqual([]);
    expect((await journal.get('rb-4', 'g0001'))?.undo).toBe('done');
    expect(rewrites).toBe(1); // the six inputs in one pass over the outputs
  });

  it('loses no row when the process dies at any request of the undo and the commit is re-run', async () => {
    // Prepare: the scenario above, its requests counted: the undo's are those after the retiring round.
    const scenario = async (runId: string) => {
      await freshLake();
      await stageGroup(runContext(runId), 2);
      const victim = inputs[3] as string;
      const replacement = await store.get(inputs[0] as string);
      const expected: string[] = [];
      for (const key of inputs) expected.push(...rowsOf(key === victim ? replacement : await store.get(key)));
      writer = async (method, key) => {
        if (method !== 'deleteMany' || !key.startsWith(PARTITION)) return;
        writer = undefined;
        await store.put(victim, replacement);
      };
      return expected.sort();
    };
    await scenario('probe');
    const calls: StoreCall[] = [];
    await commitGroup(
      { ...deps(), store: observedStore(store, { before: (c) => calls.push(c) }) },
      'probe',
      'g0001',
    );
    const retiring = calls.findIndex((c) => c.method === 'deleteMany' && c.key.startsWith(PARTITION)) + 1;
    expect(calls.length - retiring).toBeGreaterThan(10);

    for (let crashAt = retiring + 1; crashAt <= calls.length; crashAt++) {
      const expected = await scenario(`crash-${crashAt}`);
      let seen = 0;
      const dying = dyingStore(store, () => ++seen === crashAt);

      // Act
      const first = await commitGroup({ ...deps(), store: dying }, `crash-${crashAt}`, 'g0001').catch(
        (err: unknown) => err,
      );
      const result = await commitGroup(deps(), `crash-${crashAt}`, 'g0001');

      // Assess
      expect(first, `crash at ${crashAt}`).toBeInstanceOf(Error);
      expect(result.state, `crash at ${crashAt}`).toBe('aborted');
      expect(await tableRows(store), `crash at ${crashAt}`).toEqual(expected);
      expect(
        store.keys().filter((k) => !k.startsWith(PARTITION) && !k.includes('/plans/')),
        `crash at ${crashAt}`,
      ).toEqual([]);
    }
  }, 600_000); // a staged group per crash point: generous on a shared 2-core machine; nothing is timed

  it('checks the inputs before publishing with one listing of their folder, not a HEAD each', async () => {
    // Prepare: 26 inputs, whose HEADs would cost two LIST pages.
    await freshLake(26);
    const run = runContext('rb-list');
    await stageGroup(run, 1);
    const before = await tableRows(store);
    const calls: StoreCall[] = [];

    // Act
    const result = await commitGroup(
      { ...deps(), store: observedStore(store, { before: (c) => calls.push(c) }) },
      'rb-list',
      'g0001',
    );

    // Assess: done, every row kept, no input HEADed; the one listing before publishing was of the partition.
    expect(result.state).toBe('done');
    expect(result.retired).toHaveLength(26);
    expect(await tableRows(store)).toEqual(before);
    expect(calls.filter((c) => c.method === 'head' && inputs.includes(c.key))).toEqual([]);
    const publishing = calls.findIndex((c) => c.method === 'copy');
    expect(calls.slice(0, publishing).filter((c) => c.method === 'list')).toEqual([
      expect.objectContaining({ key: PARTITION }),
    ]);
  });

  it('HEADs the inputs of a group of twelve, whose HEADs cost less than one LIST page', async () => {
    // Prepare
    await freshLake(12);
    const run = runContext('rb-small');
    await stageGroup(run, 1);
    const before = await tableRows(store);
    const calls: StoreCall[] = [];

    // Act
    const result = await commitGroup(
      { ...deps(), store: observedStore(store, { before: (c) => calls.push(c) }) },
      'rb-small',
      'g0001',
    );

    // Assess
    const checks = calls.slice(
      0,
      calls.findIndex((c) => c.method === 'copy'),
    );
    expect(checks.filter((c) => c.method === 'list')).toEqual([]);
    expect(
      checks
        .filter((c) => c.method === 'head')
        .map((c) => c.key)
        .sort(),
    ).toEqual([...inputs].sort());
    expect(result.state).toBe('done');
    expect(await tableRows(store)).toEqual(before);
  });

  for (const change of ['replaced', 'removed'] as const) {
    it(`aborts before publishing, nothing lost, when the listing shows an input ${change} since planning`, async () => {
      // Prepare: a writer changes input 3 of 26 after verification, before the commit.
      await freshLake(26);
      const run = runContext(`rb-${change}`);
      await stageGroup(run, 1);
      const victim = inputs[3] as string;
      const replacement = await store.get(inputs[0] as string);
      const expected = (
        await Promise.all(
          inputs.map(async (k) =>
            k !== victim ? rowsOf(await store.get(k)) : change === 'replaced' ? rowsOf(replacement) : [],
          ),
        )
      )
        .flat()
        .sort();
      if (change === 'replaced') await store.put(victim, replacement);
      else await store.deleteMany([{ key: victim }]);
      const copies = store.requests.copy;

      // Act
      const result = await commitGroup(deps(), `rb-${change}`, 'g0001');

      // Assess: aborted as a conflict naming the input, nothing published, the table's rows are the writer's.
      expect(result.state).toBe('aborted');
      expect(result.conflicts).toEqual([
        {
          key: victim,
          reason:
            change === 'replaced'
              ? expect.stringMatching(/^changed since planning \(ETag .+, planned .+\)$/)
              : 'removed since planning',
        },
      ]);
      expect(store.requests.copy - copies).toBe(0);
      expect(await tableRows(store)).toEqual(expected);
      expect(store.keys().filter((k) => !k.startsWith(PARTITION) && !k.includes('/plans/'))).toEqual([]);
    });
  }

  it('HEADs the inputs a listing did not reach once its pages cost what their HEADs would', async () => {
    // Prepare: 7,000 other objects sort before the 26 inputs in their folder (seven pages of 1,000 keys); the 26
    // HEADs cost two pages.
    await freshLake(26);
    const run = runContext('rb-big');
    await stageGroup(run, 1);
    const before = await tableRows(store);
    const others = Array.from(
      { length: 7_000 },
      (_, i) => `${PARTITION}_other/${String(i).padStart(5, '0')}`,
    );
    for (const key of others) await store.put(key, 'x');
    const calls: StoreCall[] = [];

    // Act
    const result = await commitGroup(
      { ...deps(), store: observedStore(store, { before: (c) => calls.push(c) }) },
      'rb-big',
      'g0001',
    );

    // Assess: two pages listed (neither reached an input), then a HEAD per input; the group committed.
    const publishing = calls.findIndex((c) => c.method === 'copy');
    const checks = calls.slice(0, publishing);
    expect(checks.filter((c) => c.method === 'list')).toHaveLength(2);
    expect(
      checks
        .filter((c) => c.method === 'head')
        .map((c) => c.key)
        .sort(),
    ).toEqual([...inputs].sort());
    expect(result.state).toBe('done');
    await store.deleteMany(others.map((key) => ({ key }))); // not Parquet: out of the way of the row read
    expect(await tableRows(store)).toEqual(before);
  });
});
