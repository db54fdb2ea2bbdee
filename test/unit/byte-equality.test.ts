import { describe, expect, it } from 'vitest';
import { integerArrayEquality } from '../support/byte-equality.js';

/** A Buffer of `n` bytes counting up from `from`. */
function counting(n: number, from = 0): Buffer {
  return Buffer.from(Array.from({ length: n }, (_, i) => (from + i) % 256));
}

describe("toEqual's fast path for integer typed arrays (test/support/byte-equality.ts)", () => {
  it('decides equal bytes of one type equal, and any differing byte or length unequal', () => {
    // Prepare
    const bytes = counting(4096);
    const flipped = Buffer.from(bytes);
    flipped[4000] = (flipped[4000] ?? 0) ^ 1;

    // Act / Assess
    expect(integerArrayEquality(bytes, Buffer.from(bytes))).toBe(true);
    expect(integerArrayEquality(new Uint8Array(bytes), new Uint8Array(bytes))).toBe(true);
    expect(integerArrayEquality(bytes, flipped)).toBe(false);
    expect(integerArrayEquality(bytes, bytes.subarray(0, 4095))).toBe(false);
    expect(integerArrayEquality(bytes.subarray(1000, 2000), counting(1000, 1000))).toBe(true);
  });

  it('leaves to vitest what bytes alone cannot decide: other types, floats, named properties, small arrays', () => {
    // Prepare
    const bytes = counting(1024);
    const named = Object.assign(new Uint8Array(bytes), { label: 'x' });

    // Act / Assess
    expect(integerArrayEquality(bytes, new Uint8Array(bytes))).toBeUndefined();
    expect(integerArrayEquality(new Float64Array(512), new Float64Array(512).fill(-0))).toBeUndefined();
    expect(integerArrayEquality(named, new Uint8Array(bytes))).toBeUndefined();
    expect(integerArrayEquality(new Uint8Array(bytes), named)).toBeUndefined();
    expect(integerArrayEquality(counting(16), counting(16))).toBeUndefined();
    expect(integerArrayEquality([1, 2], [1, 2])).toBeUndefined();
  });

  it('is what toEqual uses: the verdicts match vitest’s own walk, named properties included', () => {
    // Prepare
    const bytes = counting(2048);
    const a = Object.assign(new Uint8Array(bytes), { label: 'a' });
    const b = Object.assign(new Uint8Array(bytes), { label: 'b' });

    // Act / Assess
    expect(bytes).toEqual(Buffer.from(bytes));
    expect({ file: bytes }).toStrictEqual({ file: Buffer.from(bytes) });
    expect(bytes).not.toEqual(counting(2048, 1));
    expect(a).not.toEqual(b);
    expect(a).toEqual(Object.assign(new Uint8Array(bytes), { label: 'a' }));
    expect(new Uint8Array(bytes)).not.toEqual(new Int8Array(bytes));
  });
});
