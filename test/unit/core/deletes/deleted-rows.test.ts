// Proves the deleted-rows set: positions coalesce into ranges, a batch's kept and deleted pieces are exact
// complements at any boundary, bad positions are refused, and millions of positions stay a small typed array.

import { describe, expect, it } from 'vitest';
import {
  DeletedRows,
  DeletedRowsBuilder,
  InvalidDeletedRowsError,
} from '../../../../functions/core/deletes/deleted-rows.js';

/** Positions of `[from, from + rows)` a reference filter keeps, relative to `from`. */
function keptByReference(deleted: ReadonlySet<number>, from: number, rows: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < rows; i++) if (!deleted.has(from + i)) out.push(i);
  return out;
}

function expand(slices: readonly { offset: number; length: number }[]): number[] {
  return slices.flatMap((s) => Array.from({ length: s.length }, (_, i) => s.offset + i));
}

describe('DeletedRows', () => {
  it('coalesces unsorted, repeated positions into sorted non-adjacent ranges', () => {
    // Act
    const deleted = DeletedRows.of([9, 3, 4, 5, 5, 0, 10]);
    // Assess
    expect([...deleted.ranges]).toEqual([0, 1, 3, 6, 9, 11]);
    expect(deleted.count).toBe(6);
    expect(deleted.last).toBe(10);
    expect(deleted.has(4)).toBe(true);
    expect(deleted.has(6)).toBe(false);
  });

  it('cuts every batch window into kept and deleted pieces that match a position-by-position filter', () => {
    // Prepare: runs and lone positions, windows at every offset and several sizes
    const positions = [0, 1, 2, 7, 15, 16, 31, 32, 33, 34, 63];
    const deleted = DeletedRows.of(positions);
    const set = new Set(positions);
    for (const rows of [1, 2, 5, 16, 64]) {
      for (let from = 0; from + rows <= 64; from++) {
        // Act
        const kept = expand(deleted.keptIn(from, rows));
        const dropped = expand(deleted.deletedIn(from, rows));
        // Assess
        expect(kept).toEqual(keptByReference(set, from, rows));
        expect([...kept, ...dropped].sort((a, b) => a - b)).toEqual(
          Array.from({ length: rows }, (_, i) => i),
        );
        expect(deleted.countIn(from, from + rows)).toBe(dropped.length);
      }
    }
  });

  it('holds a million scattered positions of a file of billions of rows in 8 bytes each', () => {
    // Prepare: every 4,001st position below 4 × 10^9
    const builder = new DeletedRowsBuilder();
    for (let k = 0; k < 1_000_000; k++) builder.add(k * 4_001);
    // Act
    const deleted = builder.build();
    // Assess
    expect(deleted.count).toBe(1_000_000);
    expect(deleted.ranges.byteLength).toBe(8_000_000);
    const last = 999_999 * 4_001;
    expect(deleted.last).toBe(last);
    expect(deleted.keptIn(last - 1, 3)).toEqual([
      { offset: 0, length: 1 },
      { offset: 2, length: 1 },
    ]);
    expect(deleted.deletedIn(last - 1, 3)).toEqual([{ offset: 1, length: 1 }]);
  });

  it('refuses positions that are negative, fractional, descending or past 2^32 − 2, and ranges that touch', () => {
    // Assess
    expect(() => DeletedRows.of([-1])).toThrow(InvalidDeletedRowsError);
    expect(() => DeletedRows.of([1.5])).toThrow(InvalidDeletedRowsError);
    expect(() => DeletedRows.of([2 ** 32 - 1])).toThrow(InvalidDeletedRowsError);
    expect(() => new DeletedRowsBuilder().add(5).add(4)).toThrow(InvalidDeletedRowsError);
    expect(() => DeletedRows.fromRanges(Uint32Array.from([0, 2, 2, 3]))).toThrow(InvalidDeletedRowsError);
    expect(() => DeletedRows.fromRanges(Uint32Array.from([3, 3]))).toThrow(InvalidDeletedRowsError);
  });
});
