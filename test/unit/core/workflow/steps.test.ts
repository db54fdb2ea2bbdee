// Unit tests of the workflow's step services over in-memory adapters and real Parquet: each step is
// idempotent, verification guards the commit, failures are recorded, and finalize never leaves a group midway.
import { parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { beforeEach, describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../../../functions/adapters/memory-journal.js';
import { MemoryLeases } from '../../../../functions/adapters/memory-leases.js';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { MemoryQuarantine } from '../../../../functions/adapters/memory-quarantine.js';
import { CorruptInputError, VerificationError } from '../../../../functions/core/errors.js';
import { commitGroup } from '../../../../functions/core/formats/hive/commit.js';
import { tableFormat } from '../../../../functions/core/formats/index.js';
import type { TableFormat } from '../../../../functions/core/formats/table-format.js';
import { normalizeRunInput, type RunContext } from '../../../../functions/core/run-input.js';
import { parseTableConfigs } from '../../../../functions/core/table-config.js';
import { commitStep, rollbackStep } from '../../../../functions/core/workflow/commit.js';
import { compactGroup } from '../../../../functions/core/workflow/compact.js';
import { finalizeRun } from '../../../../functions/core/workflow/finalize.js';
import { acquireLease } from '../../../../functions/core/workflow/lease.js';
import { planRun, readPlan } from '../../../../functions/core/workflow/plan.js';
import { verifyGroup } from '../../../../functions/core/workflow/verify.js';
import { ManualClock } from '../../../../functions/ports/clock.js';
import type { ParquetEngine } from '../../../../functions/ports/parquet-engine.js';
import { defaultParquetEngine } from '../../../../functions/shared/parquet-engine.js';
import { writeSampleLake } from '../../../../functions/tools/sample-lake.js';
import { faultyStore } from '../../../support/fault-store.js';

const tables = parseTableConfigs([
  { name: 'events', bucket: 'lake', prefix: 'events', partitionColumns: ['date'] },
]);
const DAY = '2024-03-01';

type RewriteFn = ParquetEngine['rewriteGroup'];
const { rewriteGroup } = defaultParquetEngine;
/** The default engine with its rewrite replaced (recording or failing on purpose). */
const withRewrite = (rewrite: RewriteFn): ParquetEngine => ({
  ...defaultParquetEngine,
  rewriteGroup: rewrite,
});

/** Every row of a Parquet file as JSON text (hyparquet, an independent reader, with its ZSTD; bigints as text). */
async function rowsOf(bytes: Uint8Array): Promise<string[]> {
  const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  const rows = await parquetReadObjects({ file, compressors });
  return rows.map((r) => JSON.stringify(r, (_, v) => (typeof v === 'bigint' ? `${v}n` : v)));
}

function runContext(runId: string, extra: Record<string, unknown> = {}): RunContext {
  const normalized = normalizeRunInput(
    { table: 'events', partition: `date=${DAY}`, quietMinutes: 0, ...extra },
    tables,
    {
      executionName: runId,
      startedAt: 1_000,
    },
  );
  if (normalized.mode !== 'single') throw new Error('expected one partition');
  return normalized.run;
}

describe('workflow step services', () => {
  let store: MemoryObjectStore;
  let journal: MemoryJournal;
  let leases: MemoryLeases;
  let clock: ManualClock;
  let inputs: string[];
  const deps = () => ({ store, journal, clock, engine: defaultParquetEngine });
  const planOptions = { inlineGroupLimit: 40, compactMemoryMb: 1024 };
  /** Plans as the workflow does: the run holds the partition's lease (a retried acquire is idempotent). */
  const planAs = async (run: RunContext, options: typeof planOptions) => {
    await acquireLease(leases, run, clock.now());
    return planRun({ ...deps(), leases }, run, options);
  };

  beforeEach(async () => {
    store = new MemoryObjectStore();
    journal = new MemoryJournal();
    leases = new MemoryLeases();
    clock = new ManualClock(5_000);
    inputs = [];
    await writeSampleLake(
      async (key, bytes) => {
        await store.put(key, bytes);
        inputs.push(key);
      },
      { table: 'events', days: 1, batches: 6, startDate: DAY, minRows: 10, maxRows: 30, seed: 3 },
    );
  });

  it('plans once: a retried plan step reuses the stored plan and creates no second journal entry', async () => {
    // Prepare
    const run = runContext('plan-1');

    // Act
    const first = await planAs(run, planOptions);
    await store.put(inputs[0] as string, await store.get(inputs[1] as string)); // the listing changes
    const second = await planAs(run, planOptions);

    // Assess
    expect(second).toEqual(first);
    expect(first.groups).toEqual([{ groupId: 'g0001', expectedOutputFiles: 1 }]);
    expect((await journal.listRun('plan-1')).map((e) => [e.groupId, e.state, e.inputs.length])).toEqual([
      ['g0001', 'planned', 6],
    ]);
  });

  it('lists no groups in the result above the inline limit (the Distributed Map reads the items file)', async () => {
    // Prepare
    await writeSampleLake((key, bytes) => store.put(key, bytes).then(() => undefined), {
      table: 'events',
      days: 1,
      batches: 14,
      startDate: DAY,
      minRows: 10,
      maxRows: 30,
      seed: 4,
    });
    const run = runContext('plan-2', { targetFileSizeMB: 0.004, maxGroupMB: 0.016 });

    // Act
    const result = await planAs(run, { ...planOptions, inlineGroupLimit: 1 });

    // Assess
    expect(result.groupCount).toBeGreaterThan(1);
    expect(result.groups).toEqual([]);
    const items = JSON.parse(new TextDecoder().decode(await store.get(result.itemsKey))) as unknown[];
    expect(items).toHaveLength(result.groupCount);
  });

  it('compacts, verifies and commits a group; repeating any step changes nothing', async () => {
    // Prepare
    const run = runContext('full-1');
    await planAs(run, planOptions);
    const item = { groupId: 'g0001', expectedOutputFiles: 1 };

    // Act
    const compacted = await compactGroup(deps(), run, item);
    const compactedAgain = await compactGroup(deps(), run, item);
    await verifyGroup(deps(), run, 'g0001', compacted.fingerprint);
    await verifyGroup(deps(), run, 'g0001');
    const committed = await commitStep(deps(), 'full-1', 'g0001');
    const committedAgain = await commitStep(deps(), 'full-1', 'g0001');

    // Assess
    expect(compactedAgain).toMatchObject({
      state: 'staged',
      rows: compacted.rows,
      fingerprint: compacted.fingerprint,
    });
    expect(committed).toMatchObject({ state: 'done', published: 1, retired: 6 });
    expect(committedAgain).toMatchObject({ state: 'done', published: 1, retired: 6 });
    const listed: string[] = [];
    for await (const o of store.listAll(`events/date=${DAY}/`)) listed.push(o.key);
    expect(listed).toEqual([`events/date=${DAY}/part-full-1-0001-00000.zstd.parquet`]);
  });

  it('keeps a run’s plan, items, staging and trash under the work root of its context, and nothing under the default one', async () => {
    // Prepare: a run of a deployment with its own work root, over a store that records every write and delete
    const run: RunContext = { ...runContext('root-1'), workRoot: '_lake-compactor-b/', retireMode: 'trash' };
    const written: string[] = [];
    const recording = faultyStore(store, {
      denied: (op, key) => {
        if (op === 'put' || op === 'putStream' || op === 'copy' || op === 'deleteMany') written.push(key);
        return false;
      },
    });
    const on = { store: recording, journal, clock, engine: defaultParquetEngine };
    const item = { groupId: 'g0001', expectedOutputFiles: 1 };

    // Act
    await acquireLease(leases, run, clock.now());
    const plan = await planRun({ ...on, leases }, run, planOptions);
    const compacted = await compactGroup(on, run, item);
    await verifyGroup(on, run, 'g0001', compacted.fingerprint);
    const committed = await commitStep(on, 'root-1', 'g0001');

    // Assess: everything besides the outputs and the retired inputs is in `_lake-compactor-b/`
    expect(committed).toMatchObject({ state: 'done', published: 1, retired: 6 });
    expect(plan).toMatchObject({
      planKey: '_lake-compactor-b/plans/root-1.json',
      itemsKey: '_lake-compactor-b/plans/root-1.items.json',
    });
    expect(await journal.get('root-1', 'g0001')).toMatchObject({
      stagingPrefix: '_lake-compactor-b/staging/root-1/g0001/',
      trashPrefix: '_lake-compactor-b/trash/root-1/',
    });
    const work = written.filter((k) => !k.startsWith(`events/date=${DAY}/`));
    expect(work.length).toBeGreaterThan(0);
    expect(work.filter((k) => !k.startsWith('_lake-compactor-b/'))).toEqual([]);
    for (const folder of ['plans/', 'staging/root-1/g0001/', 'trash/root-1/']) {
      expect(work.some((k) => k.startsWith(`_lake-compactor-b/${folder}`))).toBe(true);
    }
    expect(store.keys().filter((k) => k.startsWith('_lake-compactor/'))).toEqual([]);
    expect(store.keys().filter((k) => k.startsWith('_lake-compactor-b/trash/root-1/'))).toHaveLength(6);
  });

  it('hands the run’s DELTA encoding choice to the rewrite, and leaves it off otherwise', async () => {
    // Prepare: the real rewrite, with its options recorded.
    const seen: (boolean | undefined)[] = [];
    const recording: RewriteFn = (io, group, options) => {
      seen.push(options.deltaEncoding);
      return rewriteGroup(io, group, options);
    };
    const withDelta = runContext('delta-1', { deltaEncoding: true });
    const without = runContext('plain-1');
    const item = { groupId: 'g0001', expectedOutputFiles: 1 };

    // Act: one run after the other, as the lease allows
    await planAs(withDelta, planOptions);
    await compactGroup({ ...deps(), engine: withRewrite(recording) }, withDelta, item);
    await finalizeRun({ ...deps(), leases }, withDelta, { outcome: 'failed', error: { Error: 'Stopped' } });
    await planAs(without, planOptions);
    await compactGroup({ ...deps(), engine: withRewrite(recording) }, without, item);

    // Assess
    expect(seen).toEqual([true, undefined]);
  });

  it('hands the run’s schema fidelity to the rewrite, and leaves the engine’s default (exact) otherwise', async () => {
    // Prepare: the real rewrite, with its options recorded.
    const seen: (string | undefined)[] = [];
    const recording: RewriteFn = (io, group, options) => {
      seen.push(options.schemaFidelity);
      return rewriteGroup(io, group, options);
    };
    const logical = runContext('logical-1', { schemaFidelity: 'logical' });
    const exact = runContext('exact-1');
    const item = { groupId: 'g0001', expectedOutputFiles: 1 };

    // Act: one run after the other, as the lease allows
    await planAs(logical, planOptions);
    await compactGroup({ ...deps(), engine: withRewrite(recording) }, logical, item);
    await finalizeRun({ ...deps(), leases }, logical, { outcome: 'failed', error: { Error: 'Stopped' } });
    await planAs(exact, planOptions);
    await compactGroup({ ...deps(), engine: withRewrite(recording) }, exact, item);

    // Assess
    expect(seen).toEqual(['logical', undefined]);
  });

  it('lets the table format keep exact fidelity for its groups when the run asks for logical', async () => {
    // Prepare: the real rewrite, with its options recorded; a format whose readers need the exact physical schema.
    const seen: (string | undefined)[] = [];
    const recording: RewriteFn = (io, group, options) => {
      seen.push(options.schemaFidelity);
      return rewriteGroup(io, group, options);
    };
    const logical = runContext('logical-exact-1', { schemaFidelity: 'logical' });
    const plain = tableFormat(logical.format);
    const format: TableFormat = {
      ...plain,
      prepareGroup: async (_deps, entry) => ({ kind: 'ready', entry, rewrite: { schemaFidelity: 'exact' } }),
    };

    // Act
    await planAs(logical, planOptions);
    await compactGroup({ ...deps(), engine: withRewrite(recording), format }, logical, {
      groupId: 'g0001',
      expectedOutputFiles: 1,
    });

    // Assess
    expect(seen).toEqual(['exact']);
  });

  it('encodes on the table’s encodeWorkers capped by what the function holds, else on its default, rows unchanged', async () => {
    // Prepare: the real rewrite, its options recorded; a function whose default is 2 workers and ceiling 3.
    const seen: (number | undefined)[] = [];
    const recording: RewriteFn = (io, group, options) => {
      seen.push(options.workers);
      return rewriteGroup(io, group, options);
    };
    const runs = [
      { ...runContext('workers-1'), encodeWorkers: 4 },
      runContext('workers-2'),
      { ...runContext('workers-3'), encodeWorkers: 1 },
    ];
    const item = { groupId: 'g0001', expectedOutputFiles: 2 };
    const inputRows = (await Promise.all(inputs.map(async (k) => rowsOf(await store.get(k))))).flat().sort();

    // Act: one run after the other, as the lease allows
    const outputRows: string[][] = [];
    for (const run of runs) {
      await planAs(run, planOptions);
      const engine = withRewrite(recording);
      await compactGroup({ ...deps(), engine, workers: 2, maxWorkers: 3 }, run, item);
      const [entry] = await journal.listRun(run.runId);
      const outputs = await Promise.all(
        (entry?.outputs ?? []).map(async (o) => rowsOf(await store.get(o.stagingKey))),
      );
      outputRows.push(outputs.flat().sort());
      await finalizeRun({ ...deps(), leases }, run, { outcome: 'failed', error: { Error: 'Stopped' } });
    }

    // Assess: asked 4, held 3; the default 2; asked 1, so no workers. Each run's outputs hold the inputs' rows.
    expect(seen).toEqual([3, 2, undefined]);
    expect(inputRows.length).toBeGreaterThan(0);
    expect(outputRows).toEqual([inputRows, inputRows, inputRows]);
  });

  it('refuses to verify outputs whose rows differ from the inputs, leaving the group staged for rollback', async () => {
    // Prepare
    const run = runContext('verify-1');
    await planAs(run, planOptions);
    const compacted = await compactGroup(deps(), run, { groupId: 'g0001', expectedOutputFiles: 1 });
    const wrong = {
      ...(compacted.fingerprint as NonNullable<typeof compacted.fingerprint>),
      hash: '0000000000000000',
    };

    // Act
    const attempt = verifyGroup(deps(), run, 'g0001', wrong);

    // Assess
    await expect(attempt).rejects.toBeInstanceOf(VerificationError);
    expect((await journal.get('verify-1', 'g0001'))?.state).toBe('staged');
    const rolledBack = await rollbackStep(deps(), 'verify-1', 'g0001', {
      Error: 'VerificationError',
      Cause: '{"errorMessage":"hash differs"}',
    });
    expect(rolledBack).toMatchObject({ state: 'aborted', error: 'VerificationError' });
    const staged: string[] = [];
    for await (const o of store.listAll('_lake-compactor/staging/verify-1/')) staged.push(o.key);
    expect(staged).toEqual([]);
  });

  it('finalize reports the first failed group by error name, counts the layout, records history and releases', async () => {
    // Prepare
    const run = runContext('final-1');
    await acquireLease(leases, run, clock.now());
    const plan = await planAs(run, planOptions);
    await rollbackStep(deps(), 'final-1', 'g0001', {
      Error: 'CorruptInputError',
      Cause: '{"errorMessage":"Corrupt Parquet input x"}',
    });

    // Act
    const summary = await finalizeRun({ ...deps(), leases }, run, { outcome: 'compacted', plan });

    // Assess
    expect(summary).toMatchObject({
      status: 'FAILED',
      failedGroups: 1,
      firstError: { error: 'CorruptInputError', cause: 'Corrupt Parquet input x', groupId: 'g0001' },
      filesBefore: 6,
      filesAfter: 6,
      durationMs: 4_000,
    });
    expect(leases.history).toEqual([expect.objectContaining({ runId: 'final-1', status: 'FAILED' })]);
    expect(leases.item({ table: 'events', partition: `date=${DAY}` })).toMatchObject({ state: 'idle' });
    expect(leases.changes).toEqual([]);
  });

  describe('quarantine', () => {
    let quarantine: MemoryQuarantine;
    const ref = { table: 'events', partition: `date=${DAY}` };
    const withQuarantine = () => ({ ...deps(), quarantine });
    const planWithQuarantine = async (run: RunContext) => {
      await acquireLease(leases, run, clock.now());
      return planRun({ ...withQuarantine(), leases }, run, planOptions);
    };
    /** The real engine, except that it fails as `fail` says for the inputs it names. */
    const failing =
      (fail: (keys: readonly string[]) => Error | undefined): RewriteFn =>
      async (io, group, options) => {
        const err = fail(group.files.map((f) => f.key));
        if (err !== undefined) throw err;
        return rewriteGroup(io, group, options);
      };

    beforeEach(() => {
      quarantine = new MemoryQuarantine();
    });

    it('quarantines only the input a rewrite fails on by itself and rethrows; the next run compacts its neighbours', async () => {
      // Prepare
      const victim = inputs[2] as string;
      const etag = (await store.head(victim))?.etag;
      const first = runContext('q-1');
      await planWithQuarantine(first);
      const rewrite = failing(() => new CorruptInputError(victim, 'the decoder failed (unreachable)'));

      // Act 1: the group fails on the victim
      const attempt = compactGroup({ ...withQuarantine(), engine: withRewrite(rewrite) }, first, {
        groupId: 'g0001',
        expectedOutputFiles: 1,
      });

      // Assess 1: the same typed error, now saying how the quarantine is released; only the victim is held
      await expect(attempt).rejects.toBeInstanceOf(CorruptInputError);
      await expect(attempt).rejects.toThrow(
        new RegExp(
          `^Corrupt Parquet input ${victim}: the decoder failed \\(unreachable\\)\\. The file was left in place and quarantined \\(memory\\): later runs leave it out`,
        ),
      );
      expect(await quarantine.list(ref)).toEqual([
        {
          ...ref,
          key: victim,
          etag,
          reason: 'the decoder failed (unreachable)',
          errorName: 'CorruptInputError',
          runId: 'q-1',
          since: 5_000,
        },
      ]);
      await rollbackStep(deps(), 'q-1', 'g0001', { Error: 'CorruptInputError', Cause: 'x' });
      const ended = await finalizeRun({ ...withQuarantine(), leases }, first, { outcome: 'compacted' });
      expect(ended).toMatchObject({ status: 'FAILED', failedGroups: 1, quarantined: 1 });

      // Act 2: the next run
      const second = runContext('q-2');
      const plan = await planWithQuarantine(second);
      await compactGroup(withQuarantine(), second, { groupId: 'g0001', expectedOutputFiles: 1 });
      await verifyGroup(deps(), second, 'g0001');
      const committed = await commitStep(deps(), 'q-2', 'g0001');

      // Assess 2: the five neighbours are compacted, the victim is left where it was
      expect(plan).toMatchObject({ groupCount: 1, plannedFiles: 5, skippedFiles: 1 });
      expect((await readPlan(store, second))?.skipped).toEqual([
        {
          key: victim,
          reason: expect.stringMatching(/^quarantined since 1970-01-01T00:00:05\.000Z by run q-1: /),
        },
      ]);
      expect(committed).toMatchObject({ state: 'done', retired: 5 });
      const listed: string[] = [];
      for await (const o of store.listAll(`events/date=${DAY}/`)) listed.push(o.key);
      expect(listed.sort()).toEqual([`events/date=${DAY}/part-q-2-0001-00000.zstd.parquet`, victim].sort());
      expect((await store.head(victim))?.etag).toBe(etag);
    });

    it('quarantines nothing when the failure blames no input, is not the file’s own, or an input changed meanwhile', async () => {
      // Prepare: three runs, one failure each
      const cases: { runId: string; rewrite: RewriteFn; before?: () => Promise<void> }[] = [
        // The fingerprint names a batch, the parallel engine an output: neither is an input of the group.
        { runId: 'n-1', rewrite: failing(() => new CorruptInputError('(batch)', 'list without child')) },
        { runId: 'n-2', rewrite: failing(() => new Error('SlowDown: reduce your request rate')) },
        // A writer replaced another input after planning: a conflict, not the blamed file's fault.
        {
          runId: 'n-3',
          rewrite: failing(
            (keys) => new CorruptInputError(keys[0] as string, 'read 10 bytes where the plan says 99'),
          ),
          before: async () => {
            await store.put(inputs[3] as string, await store.get(inputs[4] as string));
          },
        },
      ];
      const outcomes: string[] = [];

      // Act
      for (const c of cases) {
        const run = runContext(c.runId);
        await planWithQuarantine(run);
        await c.before?.();
        try {
          const result = await compactGroup({ ...withQuarantine(), engine: withRewrite(c.rewrite) }, run, {
            groupId: 'g0001',
            expectedOutputFiles: 1,
          });
          outcomes.push(result.state);
        } catch (err) {
          outcomes.push((err as Error).name);
          await rollbackStep(deps(), c.runId, 'g0001', { Error: (err as Error).name });
        }
        await finalizeRun({ ...withQuarantine(), leases }, run, { outcome: 'compacted' });
      }

      // Assess
      expect(outcomes).toEqual(['CorruptInputError', 'Error', 'aborted']);
      expect(await quarantine.listTable('events')).toEqual([]);
    });

    it('releases the quarantine of a file that was replaced or removed, and plans the new file; a dry run releases nothing', async () => {
      // Prepare: two files quarantined as objects that are no longer there
      const replaced = inputs[0] as string;
      const removed = `events/date=${DAY}/part-gone.parquet`;
      const old = { ...ref, reason: 'bad page', errorName: 'CorruptInputError', runId: 'old', since: 1 };
      await quarantine.record({ ...old, key: replaced, etag: 'etag-of-the-corrupt-version' });
      await quarantine.record({ ...old, key: removed, etag: 'etag-of-a-removed-file' });

      // Act
      const dry = await planWithQuarantine(runContext('r-dry', { dryRun: true }));
      const afterDry = await quarantine.list(ref);
      await finalizeRun({ ...withQuarantine(), leases }, runContext('r-dry', { dryRun: true }), {
        outcome: 'dry-run',
      });
      const plan = await planWithQuarantine(runContext('r-1'));

      // Assess
      expect(dry).toMatchObject({ plannedFiles: 6, skippedFiles: 0 });
      expect(afterDry.map((r) => r.key)).toEqual([replaced, removed]);
      expect(plan).toMatchObject({ plannedFiles: 6, skippedFiles: 0 });
      expect(await quarantine.list(ref)).toEqual([]);
    });
  });

  it('finalize of a failed run rolls a half-published group forward, so no row is visible twice', async () => {
    // Prepare
    const run = runContext('final-2');
    await acquireLease(leases, run, clock.now());
    const plan = await planAs(run, planOptions);
    await compactGroup(deps(), run, { groupId: 'g0001', expectedOutputFiles: 1 });
    await verifyGroup(deps(), run, 'g0001');
    // The commit dies on the batched delete: outputs are in the partition, inputs too (readers see both).
    store.failNext('deleteMany', new Error('injected crash while retiring'));
    await expect(commitGroup({ store, journal, clock }, 'final-2', 'g0001')).rejects.toThrow('injected');
    expect((await journal.get('final-2', 'g0001'))?.state).toBe('published');

    // Act
    const summary = await finalizeRun({ ...deps(), leases }, run, {
      outcome: 'failed',
      plan,
      error: { Error: 'States.Timeout' },
    });

    // Assess
    expect((await journal.get('final-2', 'g0001'))?.state).toBe('done');
    expect(summary).toMatchObject({
      status: 'FAILED',
      groupsDone: 1,
      filesAfter: 1,
      firstError: { error: 'States.Timeout' },
    });
    expect(leases.changes).toHaveLength(1);
    expect(leases.item({ table: 'events', partition: `date=${DAY}` }).lastCompactedAt).toBe(5_000);
  });

  it('a dry run settles nothing: it reports the open groups a real run would settle, and changes no object', async () => {
    // Prepare: run A dies while retiring (outputs published, inputs still there); its lease is gone
    const a = runContext('dead-a');
    await planAs(a, planOptions);
    await compactGroup(deps(), a, { groupId: 'g0001', expectedOutputFiles: 1 });
    await verifyGroup(deps(), a, 'g0001');
    store.failNext('deleteMany', new Error('injected crash while retiring'));
    await expect(commitGroup({ store, journal, clock }, 'dead-a', 'g0001')).rejects.toThrow('injected');
    await leases.release({ table: 'events', partition: `date=${DAY}` }, 'dead-a', {});
    const objects = async () => {
      const all: string[] = [];
      for await (const o of store.listAll('')) if (!o.key.includes('/plans/')) all.push(`${o.key} ${o.etag}`);
      return all.sort();
    };
    const before = await objects();
    const dry = runContext('dry-b', { dryRun: true });

    // Act
    const plan = await planAs(dry, planOptions);
    await finalizeRun({ ...deps(), leases }, dry, { outcome: 'dry-run', plan });

    // Assess
    expect(plan.openGroups).toBe(1);
    expect(plan.settledGroups).toBeUndefined();
    expect(await objects()).toEqual(before);
    expect((await journal.get('dead-a', 'g0001'))?.state).toBe('published');
  });
});
