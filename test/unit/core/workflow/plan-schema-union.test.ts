// The workflow's plan step with `schemaEvolution: 'union'` from the table config or the console input: a Hive-style
// partition of two schema populations is planned as one group whose inputs are projected onto the union, the
// default plans them apart, and the input is refused on a table of a format whose own schema decides.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../../../functions/adapters/memory-journal.js';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { normalizeRunInput, type RunContext } from '../../../../functions/core/run-input.js';
import { parseTableConfigs } from '../../../../functions/core/table-config.js';
import { planRun, readPlan } from '../../../../functions/core/workflow/plan.js';
import { ManualClock } from '../../../../functions/ports/clock.js';
import { openDuckDb } from '../../../support/duckdb.js';

const tables = parseTableConfigs([
  { name: 'events', bucket: 'lake', prefix: 'events', partitionColumns: ['date'] },
  {
    name: 'unified',
    bucket: 'lake',
    prefix: 'unified',
    partitionColumns: ['date'],
    schemaEvolution: 'union',
  },
  { name: 'orders', bucket: 'lake', prefix: 'orders', format: 'iceberg' },
]);
const planOptions = { inlineGroupLimit: 40, compactMemoryMb: 1024 };

function runContext(runId: string, input: Record<string, unknown>): RunContext {
  const normalized = normalizeRunInput(
    { partition: 'date=2024-01-01', quietMinutes: 0, force: true, minInputFiles: 2, ...input },
    tables,
    { executionName: runId, startedAt: 1_000 },
  );
  if (normalized.mode !== 'single') throw new Error('expected one partition');
  return normalized.run;
}

let dir: string;
/** Two files before an added column and a widening (id INTEGER, name) and two after (id BIGINT, name, score). */
const files = new Map<string, Uint8Array>();

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'lc-plan-union-'));
  const db = await openDuckDb();
  try {
    for (let i = 0; i < 2; i++) {
      const old = join(dir, `a${i}.parquet`);
      const added = join(dir, `b${i}.parquet`);
      await db.writeParquet(`SELECT range::INTEGER AS id, 'o' || range AS name FROM range(3)`, old);
      await db.writeParquet(
        `SELECT range::BIGINT AS id, 'n' || range AS name, range::DOUBLE AS score FROM range(3)`,
        added,
      );
      files.set(`a${i}.parquet`, await readFile(old));
      files.set(`b${i}.parquet`, await readFile(added));
    }
  } finally {
    db.close();
  }
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('the plan step with schemaEvolution union', () => {
  let store: MemoryObjectStore;
  const deps = () => ({
    store,
    journal: new MemoryJournal(),
    clock: new ManualClock(5_000),
    leases: { holds: async () => true },
  });

  beforeEach(async () => {
    store = new MemoryObjectStore();
    for (const table of ['events', 'unified'])
      for (const [name, bytes] of files) await store.put(`${table}/date=2024-01-01/${name}`, bytes);
  });

  it('plans one group of both populations, each input projected onto the union, when the table config asks for it', async () => {
    // Prepare
    const run = runContext('u-1', { table: 'unified' });

    // Act
    const result = await planRun(deps(), run, planOptions);

    // Assess
    expect(result.groupCount).toBe(1);
    const plan = await readPlan(store, run);
    const group = plan?.groups[0];
    expect(group?.files.map((f) => f.key.split('/').pop())).toEqual([
      'a0.parquet',
      'a1.parquet',
      'b0.parquet',
      'b1.parquet',
    ]);
    expect(group?.schemaFingerprint).toMatch(/^projected:/);
    // A union needs every file's schema: even these tiny files' footers were read at planning.
    expect(group?.files.every((f) => f.footerDeferred === undefined)).toBe(true);
    const old = group?.files[0]?.projection;
    expect(old?.columns).toEqual([
      {
        field: { name: 'id', nullable: true, type: 'int64' },
        source: { column: 'id', widen: 'int32-int64' },
      },
      { field: { name: 'name', nullable: true, type: 'string' }, source: { column: 'name' } },
      { field: { name: 'score', nullable: true, type: 'float64' } },
    ]);
  });

  it('plans the same with the console input asking for it on a table that does not', async () => {
    // Prepare
    const run = runContext('u-2', { table: 'events', schemaEvolution: 'union' });

    // Act
    const result = await planRun(deps(), run, planOptions);

    // Assess
    expect(run.schemaEvolution).toBe('union');
    expect(result.groupCount).toBe(1);
  });

  it('keeps the populations apart by default, and when the run input says never over the table config', async () => {
    // Prepare
    const byDefault = runContext('d-1', { table: 'events' });
    const overridden = runContext('d-2', { table: 'unified', schemaEvolution: 'never' });

    // Act
    const planned = [
      await planRun(deps(), byDefault, planOptions),
      await planRun(deps(), overridden, planOptions),
    ];

    // Assess: nothing projected. These files are tiny, so they are planned from the listing without their footers
    // (one group) and the rewrite keeps the two populations apart, an output set each
    // (test/fault/deferred-footers.test.ts); the union above read every footer.
    for (const [i, result] of planned.entries()) {
      expect(result.groupCount).toBe(1);
      const plan = await readPlan(store, i === 0 ? byDefault : overridden);
      const files = plan?.groups.flatMap((g) => g.files) ?? [];
      expect(files.some((f) => f.projection !== undefined)).toBe(false);
      expect(files.every((f) => f.footerDeferred === true && f.schemaFingerprint === undefined)).toBe(true);
    }
  });

  it('refuses the run input on a table whose format has a schema of its own', () => {
    // Act
    const act = () => runContext('i-1', { table: 'orders', schemaEvolution: 'union' });

    // Assess
    expect(act).toThrow(/schemaEvolution: applies to Hive-style Parquet tables/);
  });

  it('refuses the table setting on a table of another format, and an unknown mode', () => {
    // Act
    const onIceberg = () =>
      parseTableConfigs([{ name: 'o', prefix: 'o', format: 'iceberg', schemaEvolution: 'union' }]);
    const unknown = () => parseTableConfigs([{ name: 'e', prefix: 'e', schemaEvolution: 'merge' }]);

    // Assess
    expect(onIceberg).toThrow(/schemaEvolution is a setting of Hive-style Parquet tables/);
    expect(unknown).toThrow(/schemaEvolution must be one of never, union/);
  });
});
