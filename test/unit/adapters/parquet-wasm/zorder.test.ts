// Proves the Z-order strategy: rows follow the Morton order of their columns' ranks (stable for equal cells), the
// row multiset is kept and verified, and — what Z-order is for — when the outputs are cut into files every file
// spans a narrow range of EACH listed column, where a lexicographic sort narrows only the first.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { rewriteGroup } from '../../../../functions/adapters/parquet-wasm/rewrite.js';
import { type BatchKeys, zOrderSlices } from '../../../../functions/adapters/parquet-wasm/sort.js';
import { verifyOutputs } from '../../../../functions/adapters/parquet-wasm/verify.js';
import { type DuckWorkspace, duckWorkspace } from './helpers.js';

/** The Morton code of two 4-bit ranks, x's bit above y's at every level (the reference, built bit by bit). */
function morton4(x: number, y: number): number {
  let code = 0;
  for (let bit = 3; bit >= 0; bit--) code = (code << 2) | (((x >> bit) & 1) << 1) | ((y >> bit) & 1);
  return code;
}

describe('zOrderSlices', () => {
  it('orders a shuffled 16 × 16 grid in Morton order, x before y, across batches', () => {
    // Prepare: every (x, y) once, shuffled deterministically, split over two batches
    const cells: [number, number][] = [];
    for (let x = 0; x < 16; x++) for (let y = 0; y < 16; y++) cells.push([x * 10, 1000 - y]);
    const shuffled = cells.map((c, i) => ({ c, k: (i * 7919) % 257 })).sort((a, b) => a.k - b.k);
    const half = shuffled.length / 2;
    const batches = [shuffled.slice(0, half), shuffled.slice(half)].map(
      (part): BatchKeys => [part.map((p) => p.c[0]), part.map((p) => p.c[1])],
    );

    // Act
    const order = zOrderSlices(batches).flatMap((s) =>
      Array.from({ length: s.length }, (_, i) => {
        const keys = batches[s.batch] as BatchKeys;
        return [keys[0]?.[s.start + i], keys[1]?.[s.start + i]] as [number, number];
      }),
    );

    // Assess: x = 10·i has rank i; y = 1000 − j has rank 15 − j (its values ascend as j falls)
    const rankOf = ([x, y]: [number, number]) => morton4(x / 10, 15 - (1000 - y));
    const expected = [...cells].sort((a, b) => rankOf(a) - rankOf(b));
    expect(order).toHaveLength(256);
    expect(order).toEqual(expected);
  });

  it('keeps input order for equal cells and puts nulls lowest', () => {
    // Prepare
    const batches: BatchKeys[] = [
      [
        [1, null, 1, 0],
        ['a', 'b', 'a', null],
      ],
    ];

    // Act
    const slices = zOrderSlices(batches);
    const rows = slices.flatMap((s) => Array.from({ length: s.length }, (_, i) => s.start + i));

    // Assess: (null,'b') and (0,null) have the lowest ranks; the two (1,'a') keep their order 0 then 2
    expect(rows.indexOf(0)).toBeLessThan(rows.indexOf(2));
    expect(rows.slice(-2)).toEqual([0, 2]);
  });
});

let duck: DuckWorkspace;
beforeAll(async () => {
  duck = await duckWorkspace();
});
afterAll(async () => {
  await duck.close();
});

describe('rewriteGroup with a Z-order', () => {
  it('clusters both columns: every output file spans a fraction of each, and the multiset verifies', async () => {
    // Prepare: 4 files of uniformly spread (a, b) points
    const source = new MemoryObjectStore();
    const files: { key: string; size: number; etag: string }[] = [];
    for (let i = 0; i < 4; i++) {
      const bytes = await duck.parquet(
        `SELECT (hash(r * 4 + ${i}) % 1000)::BIGINT AS a, (hash(r * 4 + ${i} + 7) % 1000)::BIGINT AS b, r AS id FROM range(4000) t(r)`,
      );
      const key = `in/${i}.parquet`;
      files.push({ key, size: bytes.length, ...(await source.put(key, bytes)) });
    }
    const rewrite = async (curve: 'zorder' | 'lexicographic') => {
      const target = new MemoryObjectStore();
      const result = await rewriteGroup(
        { source, target },
        { groupId: curve, files, expectedOutputFiles: 4 },
        {
          outputKey: (i) => `out/${i}.parquet`,
          sort: { columns: ['a', 'b'], memoryBudgetBytes: 64 * 1024 * 1024, curve },
          batchRows: 1000,
        },
      );
      await verifyOutputs(target, result.outputs, result.fingerprint);
      const spans = [];
      for (const o of result.outputs) {
        const [row] = await duck.db.rows(
          `SELECT max(a) - min(a) AS a, max(b) - min(b) AS b FROM read_parquet(${await duck.materialise(target, [o.key])})`,
        );
        spans.push({ a: Number(row?.a), b: Number(row?.b) });
      }
      return { result, spans, target };
    };

    // Act
    const z = await rewrite('zorder');
    const sorted = await rewrite('lexicographic');

    // Assess: same rows; Z-order files span well under the full range of BOTH columns, the sort's only of a
    expect(z.result.outputs.length).toBe(4);
    const all = await duck.materialise(
      source,
      files.map((f) => f.key),
    );
    const zOut = await duck.materialise(
      z.target,
      z.result.outputs.map((o) => o.key),
    );
    expect(await duck.db.rows(`SELECT * FROM read_parquet(${zOut}) ORDER BY id, a, b`)).toEqual(
      await duck.db.rows(`SELECT * FROM read_parquet(${all}) ORDER BY id, a, b`),
    );
    // (a file may straddle two quadrants where the cut does not fall exactly on a quadrant's edge)
    const narrow = (s: { a: number; b: number }) => s.a < 600 && s.b < 600;
    expect(z.spans.filter(narrow).length, JSON.stringify(z.spans)).toBeGreaterThanOrEqual(3);
    expect(
      sorted.spans.filter((s) => s.b < 990),
      JSON.stringify(sorted.spans),
    ).toEqual([]);
  });
});
