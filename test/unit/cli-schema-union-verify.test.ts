// Verification guards the union path too: `compact --schema-evolution union` with an engine whose batch building
// mangles the projection — the added column's values dropped, two columns of one type swapped — while the
// fingerprint is still taken from the inputs through the planned projection (as the engine's independent
// fingerprint path does) fails the group's verification. Nothing is committed: every input stays in place byte for
// byte, the rows DuckDB reads are the rows before, and no staged output is left behind.
import { mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../functions/adapters/memory-object-store.js';
import { runCompact } from '../../functions/cli/compact.js';
import { CompactionFailedError } from '../../functions/core/errors.js';
import type { ColumnProjection, ProjectedColumn } from '../../functions/core/projection.js';
import type { ParquetEngine } from '../../functions/ports/parquet-engine.js';
import { defaultParquetEngine } from '../../functions/shared/parquet-engine.js';
import { captureIo } from '../support/cli-io.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';
import { folderSnapshot } from '../support/folder-snapshot.js';
import { missingRows } from '../support/multiset.js';

let root: string;
let table: string;
let partition: string;
let db: DuckDb;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'lc-union-verify-'));
  table = join(root, 'events');
  partition = join(table, 'date=2024-01-01');
  await mkdir(partition, { recursive: true });
  db = await openDuckDb();
});

afterEach(async () => {
  db.close();
  await rm(root, { recursive: true, force: true });
});

/**
 * Three files before the change (id INTEGER, name, city) and three after it (id BIGINT, name, city, score DOUBLE):
 * the union widens id, adds score, and has two string columns a swap can confuse.
 */
async function writeTwoPopulations(): Promise<void> {
  for (let i = 0; i < 3; i++) {
    await db.writeParquet(
      `SELECT (range + ${i * 10})::INTEGER AS id, 'old-' || range || '-${i}' AS name, 'city-' || range AS city FROM range(4)`,
      join(partition, `part-a${i}.parquet`),
    );
    await db.writeParquet(
      `SELECT (range + 3000000000 + ${i * 10})::BIGINT AS id, 'new-' || range || '-${i}' AS name, 'town-' || range AS city, (range * 1.5 + ${i})::DOUBLE AS score FROM range(5)`,
      join(partition, `part-b${i}.parquet`),
    );
  }
}

async function dataFiles(): Promise<string[]> {
  return (await readdir(partition)).filter((n) => n.endsWith('.parquet')).sort();
}

/** Every row of the partition's files as DuckDB reads them unified by name, one JSON text per row. */
async function unionRows(): Promise<string[]> {
  const files = (await dataFiles()).map((n) => sqlString(join(partition, n))).join(', ');
  const rows = await db.rows(
    `SELECT id, name, city, score FROM read_parquet([${files}], union_by_name = true, hive_partitioning = false) ORDER BY ALL`,
  );
  return rows.map((r) => JSON.stringify(r));
}

type Mangle = (projection: ColumnProjection) => ColumnProjection;

/** The projection with `score` written null whatever the input holds: the added column's values dropped. */
const dropAddedColumn: Mangle = (p) => ({
  ...p,
  columns: p.columns.map((c): ProjectedColumn => (c.field.name === 'score' ? { field: c.field } : c)),
});

/** The projection with `name` and `city` (both strings) each filled from the other's source column. */
const swapStringColumns: Mangle = (p) => {
  const sourceOf = (name: string) => p.columns.find((c) => c.field.name === name)?.source;
  return {
    ...p,
    columns: p.columns.map((c): ProjectedColumn => {
      if (c.field.name === 'name') return { field: c.field, source: sourceOf('city') };
      if (c.field.name === 'city') return { field: c.field, source: sourceOf('name') };
      return c;
    }),
  };
};

/**
 * The default engine with a fault in what it writes on the union path: the outputs are built from the mangled
 * projection, but the fingerprint returned is the one of the planned projection (computed by a rewrite of the same
 * group into a scratch store), as the real engine's independent fingerprint path would have taken it. Groups
 * without a projection are rewritten as usual.
 */
function mangling(mangle: Mangle): { engine: ParquetEngine; mangled: () => number } {
  let mangled = 0;
  const engine: ParquetEngine = {
    ...defaultParquetEngine,
    rewriteGroup: async (io, group, options) => {
      if (!group.files.some((f) => f.projection !== undefined))
        return defaultParquetEngine.rewriteGroup(io, group, options);
      const planned = await defaultParquetEngine.rewriteGroup(
        { source: io.source, target: new MemoryObjectStore() },
        group,
        options,
      );
      const faulty = await defaultParquetEngine.rewriteGroup(
        io,
        {
          ...group,
          files: group.files.map((f) =>
            f.projection === undefined ? f : { ...f, projection: mangle(f.projection) },
          ),
        },
        options,
      );
      mangled++;
      return { ...faulty, fingerprint: planned.fingerprint };
    },
  };
  return { engine, mangled: () => mangled };
}

describe('verification of a union compaction whose writer mangles the projection', () => {
  it.each([
    ['drops the added column’s values', dropAddedColumn],
    ['swaps two string columns', swapStringColumns],
  ])(
    'fails the group when the writer %s: nothing committed, inputs and rows unchanged',
    async (_what, mangle) => {
      // Prepare
      await writeTwoPopulations();
      const names = await dataFiles();
      const bytes = await Promise.all(names.map((n) => readFile(join(partition, n))));
      const rowsBefore = await unionRows();
      const { engine, mangled } = mangling(mangle);
      const io = captureIo();

      // Act
      const outcome = runCompact(table, { schemaEvolution: 'union', minInputFiles: 3 }, io, { engine });

      // Assess
      await expect(outcome).rejects.toBeInstanceOf(CompactionFailedError);
      expect(mangled()).toBe(1);
      // Caught by the values re-read from the staged output, not by anything before it.
      expect(io.stdout.join('\n')).toMatch(
        /date=2024-01-01 g0001: FAILED VerificationError: Verification failed: .*between inputs and outputs: .*row hash: expected .*\(aborted\)/,
      );
      expect(await dataFiles()).toEqual(names);
      const after = await Promise.all(names.map((n) => readFile(join(partition, n))));
      expect(after.map((b, i) => b.equals(bytes[i] as Buffer))).toEqual(names.map(() => true));
      const rowsAfter = await unionRows();
      expect(missingRows(rowsBefore, rowsAfter)).toEqual([]);
      expect(missingRows(rowsAfter, rowsBefore)).toEqual([]);
      const staged = (await folderSnapshot(join(table, '_lake-compactor'))).filter((l) =>
        l.startsWith('staging/'),
      );
      expect(staged).toEqual([]);
    },
  );

  it('commits the same group when the writer follows the planned projection (the fault is what fails it)', async () => {
    // Prepare
    await writeTwoPopulations();
    const rowsBefore = await unionRows();
    const { engine, mangled } = mangling((p) => p);
    const io = captureIo();

    // Act
    await runCompact(table, { schemaEvolution: 'union', minInputFiles: 3 }, io, { engine });

    // Assess
    expect(mangled()).toBe(1);
    expect(await dataFiles()).toHaveLength(1);
    const rowsAfter = await unionRows();
    expect(missingRows(rowsBefore, rowsAfter)).toEqual([]);
    expect(missingRows(rowsAfter, rowsBefore)).toEqual([]);
  });
});
