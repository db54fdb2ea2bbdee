// Properties of the row multiset hash: invariant under row order and batch boundaries (including
// slices), sensitive to any changed value, to values moved between rows, and to duplicated rows.

import {
  Field,
  Int32,
  Int64,
  List,
  type RecordBatch,
  Table,
  tableFromArrays,
  Utf8,
  vectorFromArray,
} from 'apache-arrow';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MultisetHash } from '../../../../functions/core/fingerprint/row-hash.js';

interface Row {
  readonly id: bigint | null;
  readonly name: string | null;
  readonly tags: number[] | null;
}

const rowArb: fc.Arbitrary<Row> = fc.record({
  id: fc.option(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), { nil: null }),
  name: fc.option(fc.string({ maxLength: 12 }), { nil: null }),
  tags: fc.option(fc.array(fc.integer({ min: -1000, max: 1000 }), { maxLength: 4 }), { nil: null }),
});

function table(rows: readonly Row[]): Table {
  return new Table({
    id: vectorFromArray(
      rows.map((r) => r.id),
      new Int64(),
    ),
    name: vectorFromArray(
      rows.map((r) => r.name),
      new Utf8(),
    ),
    tags: vectorFromArray(
      rows.map((r) => r.tags),
      new List(new Field('item', new Int32(), true)),
    ),
  });
}

function hashOf(batches: readonly RecordBatch[]): string {
  const acc = new MultisetHash();
  for (const b of batches) acc.addBatch(b);
  return acc.digest();
}

/** The rows as batches cut at `cuts` (slices of one batch, so offsets are exercised). */
function sliced(rows: readonly Row[], cuts: readonly number[]): RecordBatch[] {
  const whole = table(rows).batches[0] as RecordBatch;
  const points = [...new Set([0, ...cuts.map((c) => c % (rows.length + 1)), rows.length])].sort(
    (a, b) => a - b,
  );
  const out: RecordBatch[] = [];
  for (let i = 0; i + 1 < points.length; i++) out.push(whole.slice(points[i], points[i + 1]));
  return out;
}

describe('MultisetHash', () => {
  it('is the same for any row order and any batch boundaries', () => {
    // Prepare / Act / Assess
    fc.assert(
      fc.property(
        fc.array(rowArb, { minLength: 1, maxLength: 40 }),
        fc.array(fc.nat(), { maxLength: 5 }),
        fc.integer(),
        (rows, cuts, seed) => {
          const shuffled = [...rows].sort(
            (a, b) => (Math.imul(rows.indexOf(a) + 1, seed) | 0) - (Math.imul(rows.indexOf(b) + 1, seed) | 0),
          );
          expect(hashOf(sliced(shuffled, cuts))).toBe(hashOf(table(rows).batches));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('changes when one value changes, when two rows swap a value, and when a row is duplicated', () => {
    // Prepare / Act / Assess
    fc.assert(
      fc.property(fc.array(rowArb, { minLength: 2, maxLength: 30 }), fc.nat(), (rows, pick) => {
        const base = hashOf(table(rows).batches);
        const i = pick % rows.length;
        const changed = rows.map((r, j) => (j === i ? { ...r, id: r.id === null ? 0n : r.id + 1n } : r));
        expect(hashOf(table(changed).batches)).not.toBe(base);
        const j = rows.findIndex((r) => r.name !== rows[i]?.name);
        if (j >= 0) {
          const swapped = rows.map((r, k) =>
            k === i
              ? { ...r, name: rows[j]?.name ?? null }
              : k === j
                ? { ...r, name: rows[i]?.name ?? null }
                : r,
          );
          // Swapping can leave the same multiset (rows that differed only in that value): then equal is right.
          const multiset = (rs: readonly Row[]) => rs.map((r) => JSON.stringify(r, big)).sort();
          const sameRows = JSON.stringify(multiset(swapped)) === JSON.stringify(multiset(rows));
          if (sameRows) expect(hashOf(table(swapped).batches)).toBe(base);
          else expect(hashOf(table(swapped).batches)).not.toBe(base);
        }
        expect(hashOf(table([...rows, rows[i] as Row]).batches)).not.toBe(base);
      }),
      { numRuns: 200 },
    );
  });

  it('distinguishes null from empty string, empty list and zero', () => {
    // Prepare
    const variants = [
      tableFromArrays({ s: ['', null] as (string | null)[] }),
      tableFromArrays({ s: [null, null] as (string | null)[] }),
      tableFromArrays({ s: ['', ''] }),
    ];

    // Act
    const hashes = variants.map((t) => hashOf(t.batches));

    // Assess
    expect(new Set(hashes).size).toBe(3);
  });
});

function big(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString() : value;
}
