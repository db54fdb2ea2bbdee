// Proves the rewrite drops exactly an input's deleted rows (by position, at batch boundaries, first and last
// rows, whole files, millions of rows, on workers), fingerprints what it kept so verify passes, and that a
// filter keeping the wrong rows is caught before anything is published — outputs read back by DuckDB.

import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { rewriteGroup } from '../../../../functions/adapters/parquet-wasm/rewrite.js';
import { verifyOutputs } from '../../../../functions/adapters/parquet-wasm/verify.js';
import { DeletedRows } from '../../../../functions/core/deletes/deleted-rows.js';
import { CorruptInputError, VerificationError } from '../../../../functions/core/errors.js';
import type { InputFile } from '../../../../functions/ports/parquet-engine.js';
import { type DuckWorkspace, duckWorkspace, fileOf } from './helpers.js';

let duck: DuckWorkspace;
beforeAll(async () => {
  duck = await duckWorkspace();
});
afterAll(async () => {
  await duck.close();
});

/** A file of `rows` rows whose `id` is its position plus `base`, and a string that depends on it. */
async function idFile(
  store: MemoryObjectStore,
  key: string,
  rows: number,
  base: number,
  options: { rowGroupSize?: number; extraColumn?: boolean; idOnly?: boolean } = {},
): Promise<InputFile> {
  const extra = options.extraColumn === true ? ', 1::INTEGER AS extra' : '';
  const s = options.idOnly === true ? '' : ', md5(i::VARCHAR) AS s';
  await store.put(
    key,
    await duck.parquet(`SELECT (i + ${base})::BIGINT AS id${s}${extra} FROM range(${rows}) t(i)`, {
      ...(options.rowGroupSize !== undefined && { rowGroupSize: options.rowGroupSize }),
    }),
  );
  return fileOf(store, key);
}

/** The ids the outputs hold, in output order, read by DuckDB. */
async function outputIds(store: MemoryObjectStore, keys: readonly string[]): Promise<number[]> {
  if (keys.length === 0) return [];
  const files = await duck.materialise(store, keys);
  const rows = await duck.db.rows(
    `SELECT id FROM read_parquet(${files}, file_row_number = true, filename = true) ORDER BY list_position(${files}, filename), file_row_number`,
  );
  return rows.map((r) => Number(r.id));
}

/** Positions `0 .. rows` minus `deleted`, shifted by `base`: what an input keeps, computed here without the engine. */
function keptIds(rows: number, base: number, deleted: Iterable<number>): number[] {
  const gone = new Set(deleted);
  const out: number[] = [];
  for (let p = 0; p < rows; p++) if (!gone.has(p)) out.push(p + base);
  return out;
}

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

describe('rewriteGroup with deleted rows', () => {
  it('drops exactly the deleted positions at batch boundaries, the first and last rows and a whole batch, keeping order', async () => {
    // Prepare: batches of 1,000 rows; deletes at both edges of batches, across a boundary, a whole batch, the file's ends
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    const positions = [0, 999, 1_000, ...range(1_999, 2_002), ...range(5_000, 6_000), 7_777, 9_999];
    const a = await idFile(source, 'in/a.parquet', 10_000, 0, { rowGroupSize: 3_000 });
    const b = await idFile(source, 'in/b.parquet', 2_000, 100_000);
    const deleted = DeletedRows.of(positions);

    // Act
    const result = await rewriteGroup(
      { source, target },
      { groupId: 'g1', files: [{ ...a, deleted }, b], expectedOutputFiles: 2 },
      { outputKey: (i) => `out/${i}.parquet`, batchRows: 1_000 },
    );
    const report = await verifyOutputs(target, result.outputs, result.fingerprint);

    // Assess
    const expected = [...keptIds(10_000, 0, positions), ...keptIds(2_000, 100_000, [])];
    expect(
      await outputIds(
        target,
        result.outputs.map((o) => o.key),
      ),
    ).toEqual(expected);
    expect(result.fingerprint.rows).toBe(12_000 - positions.length);
    expect(report.rows).toBe(expected.length);
  });

  it('gives the same outputs and fingerprint with an empty set of deleted rows as with none', async () => {
    // Prepare
    const source = new MemoryObjectStore();
    const a = await idFile(source, 'in/a.parquet', 3_000, 0);
    const plain = new MemoryObjectStore();
    const empty = new MemoryObjectStore();

    // Act
    const without = await rewriteGroup(
      { source, target: plain },
      { groupId: 'g1', files: [a] },
      { outputKey: (i) => `out/${i}.parquet`, batchRows: 1_000 },
    );
    const withEmpty = await rewriteGroup(
      { source, target: empty },
      { groupId: 'g1', files: [{ ...a, deleted: DeletedRows.NONE }] },
      { outputKey: (i) => `out/${i}.parquet`, batchRows: 1_000 },
    );

    // Assess
    expect(withEmpty.fingerprint).toEqual(without.fingerprint);
    expect(await outputIds(empty, ['out/0.parquet'])).toEqual(range(0, 3_000));
  });

  it('lets a file whose every row is deleted contribute nothing: no rows, no schema run, no output', async () => {
    // Prepare: the middle file has another schema; were it a run, it would get an output of its own
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    const a = await idFile(source, 'in/a.parquet', 1_500, 0);
    const gone = await idFile(source, 'in/b.parquet', 800, 50_000, { extraColumn: true });
    const c = await idFile(source, 'in/c.parquet', 1_200, 90_000);

    // Act
    const result = await rewriteGroup(
      { source, target },
      { groupId: 'g1', files: [a, { ...gone, deleted: DeletedRows.of(range(0, 800)) }, c] },
      { outputKey: (i) => `out/${i}.parquet`, batchRows: 500 },
    );
    await verifyOutputs(target, result.outputs, result.fingerprint);

    // Assess
    expect(result.outputs).toHaveLength(1);
    expect(
      await outputIds(
        target,
        result.outputs.map((o) => o.key),
      ),
    ).toEqual([...range(0, 1_500), ...range(90_000, 91_200)]);
  });

  it('writes no output when every row of the group is deleted, and that verifies', async () => {
    // Prepare
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    const a = await idFile(source, 'in/a.parquet', 700, 0);

    // Act
    const result = await rewriteGroup(
      { source, target },
      { groupId: 'g1', files: [{ ...a, deleted: DeletedRows.of(range(0, 700)) }] },
      { outputKey: (i) => `out/${i}.parquet` },
    );
    const report = await verifyOutputs(target, result.outputs, result.fingerprint);

    // Assess
    expect(result.outputs).toEqual([]);
    expect(report.rows).toBe(0);
    expect((await target.list('')).objects).toEqual([]);
  });

  it('drops sparse positions up to the last row of a two-million-row file, and only those', async () => {
    // Prepare: 400 scattered positions up to the very last row, in a 2,000,000-row file
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    const rows = 2_000_000;
    const positions = [...Array.from({ length: 399 }, (_, k) => (k * 4_999 + 13) % (rows - 1)), rows - 1];
    const big = await idFile(source, 'in/big.parquet', rows, 0, { rowGroupSize: 250_000, idOnly: true });

    // Act
    const result = await rewriteGroup(
      { source, target },
      { groupId: 'g1', files: [{ ...big, deleted: DeletedRows.of(positions) }] },
      { outputKey: (i) => `out/${i}.parquet` },
    );
    await verifyOutputs(target, result.outputs, result.fingerprint);

    // Assess: count, no deleted id left, and every kept id there once (sum and count of distinct ids)
    const outputs = await duck.materialise(
      target,
      result.outputs.map((o) => o.key),
    );
    const gone = new Set(positions);
    const keptSum = (rows * (rows - 1)) / 2 - [...gone].reduce((n, p) => n + p, 0);
    const [summary] = await duck.db.rows(
      `SELECT count(*) AS n, count(DISTINCT id) AS d, sum(id) AS total,
        count(*) FILTER (WHERE id IN (${[...gone].join(',')})) AS deleted
       FROM read_parquet(${outputs})`,
    );
    expect(summary).toEqual({
      n: String(rows - gone.size),
      d: String(rows - gone.size),
      total: String(keptSum),
      deleted: '0',
    });
  });

  it('drops deleted rows on worker threads too, with outputs cut across the deletes', async () => {
    // Prepare: three outputs over two inputs whose deletes straddle the output boundaries
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    const aPositions = [0, ...range(2_500, 3_700), 5_999];
    const bPositions = [...range(100, 1_100), 3_999];
    const a = await idFile(source, 'in/a.parquet', 6_000, 0);
    const b = await idFile(source, 'in/b.parquet', 4_000, 10_000);

    // Act
    const result = await rewriteGroup(
      { source, target },
      {
        groupId: 'g1',
        files: [
          { ...a, deleted: DeletedRows.of(aPositions) },
          { ...b, deleted: DeletedRows.of(bPositions) },
        ],
        expectedOutputFiles: 3,
      },
      { outputKey: (i) => `out/${i}.parquet`, batchRows: 1_000, workers: 2 },
    );
    await verifyOutputs(target, result.outputs, result.fingerprint, { workers: 2 });

    // Assess
    expect(result.outputs).toHaveLength(3);
    expect(
      await outputIds(
        target,
        result.outputs.map((o) => o.key),
      ),
    ).toEqual([...keptIds(6_000, 0, aPositions), ...keptIds(4_000, 10_000, bPositions)]);
  });

  it('refuses deletes that name a row past the end of the file, before writing anything', async () => {
    // Prepare
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    const a = await idFile(source, 'in/a.parquet', 100, 0);

    // Act
    const attempt = rewriteGroup(
      { source, target },
      { groupId: 'g1', files: [{ ...a, deleted: DeletedRows.of([5, 100]) }] },
      { outputKey: (i) => `out/${i}.parquet` },
    );

    // Assess
    await expect(attempt).rejects.toThrow(CorruptInputError);
    await expect(attempt).rejects.toThrow(/deletes name row 100, but it holds 100 rows/);
    expect((await target.list('')).objects).toEqual([]);
  });

  it('catches a filter that keeps a deleted row and drops its neighbour instead, and publishes nothing', async () => {
    // Prepare: a deliberately wrong filter, off by one: every kept piece shifted one row later
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    const a = await idFile(source, 'in/a.parquet', 3_000, 0);
    const right = DeletedRows.prototype.keptIn;
    const spy = vi.spyOn(DeletedRows.prototype, 'keptIn').mockImplementation(function (
      this: DeletedRows,
      from: number,
      rows: number,
    ) {
      return right
        .call(this, from, rows)
        .map((s) => (s.offset + s.length < rows ? { offset: s.offset + 1, length: s.length } : s));
    });

    // Act
    const attempt = rewriteGroup(
      { source, target },
      { groupId: 'g1', files: [{ ...a, deleted: DeletedRows.of([10, 1_500]) }] },
      { outputKey: (i) => `out/${i}.parquet`, batchRows: 1_000 },
    );

    // Assess
    try {
      await expect(attempt).rejects.toThrow(VerificationError);
      await expect(attempt).rejects.toThrow(/dropping the deleted rows of in\/a.parquet/);
      expect((await target.list('')).objects).toEqual([]);
    } finally {
      spy.mockRestore();
    }
  });
});
