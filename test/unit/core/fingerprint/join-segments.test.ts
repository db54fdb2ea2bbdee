// Properties of an output digested in parts and joined (`joinSegments`, for one output's row groups encoded on
// several workers): the same rows cut at the same rows join to the same digest; a row changed, moved across a cut
// or dropped changes it; the cuts and the null counts are what the parts say; one part is that part unchanged.

import { tableFromArrays } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import {
  columnsOfBatch,
  joinSegments,
  OrderedDigest,
  type OrderedSegment,
} from '../../../../functions/core/fingerprint/fingerprint.js';

/** The digest of each part of `values` (an Int32 column `v` and a nullable Utf8 column `s`), cut after `cuts` rows each. */
function partsOf(values: readonly (number | null)[], cuts: readonly number[]): OrderedSegment[] {
  const table = tableFromArrays({
    v: Int32Array.from(values, (v) => v ?? 0),
    s: values.map((v) => (v === null ? null : `s${v}`)),
  });
  const columns = columnsOfBatch(table.batches[0] as (typeof table.batches)[number]);
  const parts: OrderedSegment[] = [];
  let at = 0;
  for (const rows of cuts) {
    const digest = new OrderedDigest();
    digest.add(columns, at, rows);
    parts.push(digest.finish());
    at += rows;
  }
  return parts;
}

const VALUES = [1, 2, null, 4, 5, 6, null, 8, 9, 10];

describe('joinSegments', () => {
  it('joins the same rows cut at the same rows to the same digest, with the cuts and summed null counts', () => {
    // Act
    const a = joinSegments(partsOf(VALUES, [4, 6]));
    const b = joinSegments(partsOf([...VALUES], [4, 6]));

    // Assess
    expect(a).toEqual(b);
    expect(a.rows).toBe(10);
    expect(a.cuts).toEqual([4, 6]);
    expect(a.nullCounts).toEqual({ s: 2, v: 0 });
  });

  it('changes when a value changes, when two rows swap across a cut, or when a row is dropped', () => {
    // Prepare
    const reference = joinSegments(partsOf(VALUES, [4, 6])).digest;
    const swapped = [...VALUES];
    [swapped[3], swapped[4]] = [swapped[4] as number, swapped[3] as number];

    // Act
    const changed = joinSegments(partsOf([...VALUES.slice(0, 9), 11], [4, 6])).digest;
    const moved = joinSegments(partsOf(swapped, [4, 6])).digest;
    const dropped = joinSegments(partsOf(VALUES.slice(0, 9), [4, 5])).digest;

    // Assess
    expect(new Set([reference, changed, moved, dropped]).size).toBe(4);
  });

  it('differs from the one digest of the same rows, and leaves one part as it is', () => {
    // Act
    const [whole] = partsOf(VALUES, [10]);
    const joined = joinSegments(partsOf(VALUES, [4, 6]));

    // Assess
    expect(joinSegments([whole as OrderedSegment])).toBe(whole);
    expect(joined.digest).not.toBe(whole?.digest);
  });
});
