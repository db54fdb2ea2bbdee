// The console's partition rewrite (`transform` in the run input) as the validate and plan steps take it: refused
// before anything is read when it cannot run (a drop without its confirmation, a confirmation of nothing, several
// partitions, a sort, a table whose format's capability refuses a transformation — by capability, from the
// registry), normalised into a run that carries the transformation and retires its inputs to trash (unless the
// bucket is versioned); and the plan step refuses a transformation that does not fit the partition's columns
// before it writes anything, while a fitting one is stored in the plan as data.
import { describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../../../functions/adapters/memory-journal.js';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { InvalidInputError } from '../../../../functions/core/errors.js';
import { TABLE_FORMATS } from '../../../../functions/core/formats/index.js';
import { normalizeRunInput, type RunContext } from '../../../../functions/core/run-input.js';
import { parseTableConfigs, type TableConfig } from '../../../../functions/core/table-config.js';
import { planRun, readPlan } from '../../../../functions/core/workflow/plan.js';
import { ManualClock } from '../../../../functions/ports/clock.js';
import { defaultPartitionTransforms } from '../../../../functions/shared/parquet-engine.js';
import { writeSampleLake } from '../../../../functions/tools/sample-lake.js';

const DAY = '2024-03-01';
const CAST = { steps: [{ op: 'cast', column: 'event_type', to: 'string' }] };
const tables = parseTableConfigs([
  { name: 'events', bucket: 'lake', prefix: 'events', partitionColumns: ['date'] },
  { name: 'archive', bucket: 'vault', prefix: 'archive', partitionColumns: ['date'] },
]);

function problemsOf(input: Record<string, unknown>, configured = tables): string[] {
  try {
    normalizeRunInput(input, configured, { executionName: 'rewrite-1', startedAt: 1_000 });
    return [];
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidInputError);
    return [...(err as InvalidInputError).issues];
  }
}

function runOf(input: Record<string, unknown>, versionedBuckets: string[] = []): RunContext {
  const normalized = normalizeRunInput(input, tables, {
    executionName: 'rewrite-1',
    startedAt: 1_000,
    versionedBuckets,
  });
  if (normalized.mode !== 'single') throw new Error('expected one partition');
  return normalized.run;
}

describe('the run input of a partition rewrite', () => {
  it('refuses a drop without its confirmation, and a confirmation of a column no step drops', () => {
    // Act
    const problems = problemsOf({
      table: 'events',
      partition: `date=${DAY}`,
      transform: { steps: [{ op: 'drop', column: 'session_id' }] },
      confirmDrop: ['sesion_id'],
    });

    // Assess
    expect(problems).toEqual([
      'confirmDrop: the transform drops column session_id, which loses its values; confirm with "confirmDrop": ["session_id"]',
      'confirmDrop: the transform does not drop column sesion_id',
    ]);
  });

  it('refuses a transform with several partitions, a sort or a settle, and confirmDrop without a transform', () => {
    // Act
    const combined = problemsOf({
      table: 'events',
      partitions: [`date=${DAY}`],
      transform: CAST,
      strategy: 'sort',
      sortColumns: ['user_id'],
      settle: true,
    });
    const stray = problemsOf({ table: 'events', partition: `date=${DAY}`, confirmDrop: ['user_id'] });

    // Assess
    expect(combined).toEqual([
      expect.stringMatching(/^partition: a transform rewrites one partition/),
      expect.stringMatching(/^strategy: a transform keeps each file's rows in order/),
      expect.stringMatching(/^settle: settle plans nothing/),
    ]);
    expect(stray).toEqual([
      'confirmDrop: confirmDrop confirms the drop steps of a `transform`; there is none',
    ]);
  });

  it('refuses an invalid transformation by the schema the CLI reads its file with', () => {
    // Act
    const problems = problemsOf({
      table: 'events',
      partition: `date=${DAY}`,
      transform: { steps: [{ op: 'cast', column: 'user_id', to: 'bigint' }] },
    });

    // Assess
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^transform\.steps\.0\.to: /);
  });

  it("refuses a transform on every table whose format's capability refuses one, with the format's advice", () => {
    // Prepare: every registered format that does not transform (by capability), as a configured table
    const refusing = [...TABLE_FORMATS.values()].filter((f) => f.partitionRewrite?.kind !== 'transform');
    expect(refusing.length).toBeGreaterThan(0);

    for (const format of refusing) {
      // The events table as that format's: the check reads the capability only, not the format's own settings.
      const configured = [
        { ...(tables[0] as TableConfig), name: 't', format: format.name as TableConfig['format'] },
      ];

      // Act
      const problems = problemsOf({ table: 't', partition: `date=${DAY}`, transform: CAST }, configured);

      // Assess
      const advice = format.partitionRewrite?.kind === 'table-schema' ? format.partitionRewrite.advice : '';
      expect(problems, format.name).toEqual([
        expect.stringContaining(
          `transform: table "t" is a ${format.title} table, which a transform does not rewrite`,
        ),
      ]);
      expect(problems[0]).toContain(advice);
    }
  });

  it('carries the transformation and retires to trash, or by delete on a versioned bucket', () => {
    // Act
    const plain = runOf({ table: 'events', partition: `date=${DAY}`, transform: CAST });
    const versioned = runOf({ table: 'archive', partition: `date=${DAY}`, transform: CAST }, ['vault']);
    const compaction = runOf({ table: 'events', partition: `date=${DAY}` });

    // Assess
    expect(plain.transform).toEqual({ spec: CAST, confirmDrop: [] });
    expect(plain.retireMode).toBe('trash');
    expect(versioned.retireMode).toBe('delete-versioned');
    expect(compaction.transform).toBeUndefined();
    expect(compaction.retireMode).toBe('delete-rebuild');
  });
});

describe('the plan step of a partition rewrite', () => {
  async function lake(): Promise<MemoryObjectStore> {
    const store = new MemoryObjectStore();
    await writeSampleLake((key, bytes) => store.put(key, bytes).then(() => undefined), {
      table: 'events',
      days: 1,
      batches: 3,
      startDate: DAY,
      minRows: 10,
      maxRows: 20,
      seed: 5,
    });
    return store;
  }

  async function contents(store: MemoryObjectStore): Promise<string[]> {
    const lines: string[] = [];
    for await (const o of store.listAll('')) lines.push(`${o.key} ${o.etag}`);
    return lines.sort();
  }

  const deps = (store: MemoryObjectStore) => ({
    store,
    journal: new MemoryJournal(),
    clock: new ManualClock(5_000),
    leases: { holds: async () => true },
    transforms: defaultPartitionTransforms,
  });
  const options = { inlineGroupLimit: 40, compactMemoryMb: 1024 };

  it('refuses a transformation naming a column the partition lacks before writing anything', async () => {
    // Prepare
    const store = await lake();
    const before = await contents(store);
    const run = runOf({
      table: 'events',
      partition: `date=${DAY}`,
      transform: { steps: [{ op: 'cast', column: 'userid', to: 'int64' }] },
    });

    // Act
    const planned = planRun(deps(store), run, options);

    // Assess
    await expect(planned).rejects.toThrow(InvalidInputError);
    await expect(planned).rejects.toThrow(/the partition has no column userid/);
    expect(await contents(store)).toEqual(before);
  });

  it('packs the files into outputs of the target size, as compaction packs a group, and stores the packing', async () => {
    // Prepare: a target of half the partition's bytes, so Iceberg's rule gives two outputs
    const store = await lake();
    let bytes = 0;
    for await (const o of store.listAll(`events/date=${DAY}/`)) bytes += o.size;
    const run = runOf({
      table: 'events',
      partition: `date=${DAY}`,
      transform: CAST,
      targetFileSizeMB: Math.ceil(bytes / 2) / (1024 * 1024),
    });

    // Act
    const result = await planRun(deps(store), run, options);

    // Assess
    const stored = await readPlan(store, run);
    const packing = stored?.transform?.inputsPerOutput ?? [];
    expect(result.groupCount).toBe(1);
    expect(result.expectedOutputFiles).toBe(2);
    expect(stored?.groups[0]?.expectedOutputFiles).toBe(2);
    expect(packing).toHaveLength(2);
    expect(packing.reduce((n, k) => n + k, 0)).toBe(3);
    expect(stored?.options).toMatchObject({ targetFileSizeBytes: run.targetFileSizeBytes });
  });

  it('stores one group of every file, packed into one output at the default target, with the transformation and its columns as data', async () => {
    // Prepare
    const store = await lake();
    const run = runOf({
      table: 'events',
      partition: `date=${DAY}`,
      transform: { steps: [{ op: 'drop', column: 'session_id' }] },
      confirmDrop: ['session_id'],
    });

    // Act
    const result = await planRun(deps(store), run, options);

    // Assess
    const stored = await readPlan(store, run);
    expect(result.groupCount).toBe(1);
    expect(stored?.groups[0]?.files).toHaveLength(3);
    expect(stored?.groups[0]?.expectedOutputFiles).toBe(1);
    expect(stored?.transform?.inputsPerOutput).toEqual([3]);
    expect(stored?.transform?.spec).toEqual({ steps: [{ op: 'drop', column: 'session_id' }] });
    expect(stored?.transform?.confirmDrop).toEqual(['session_id']);
    expect(stored?.transform?.columns.map((c) => c.name)).toEqual([
      'user_id',
      'event_type',
      'event_timestamp',
      'session_id',
      'revenue_usd',
    ]);
    expect(result.rewrite?.schema.at(-1)).toBe('(dropped: session_id)');
  });
});
