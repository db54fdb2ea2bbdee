// Order-independent 64-bit multiset hash of Arrow record batches: equal row multisets give equal
// hashes whatever the batching, slicing, dictionary encoding or row order; any changed, moved, added or dropped value changes it (with probability 1 − 2^-64).

import { type Data, type RecordBatch, Type } from 'apache-arrow';
import { UnsupportedInputError } from '../errors.js';

/**
 * Per-slot hashes of one Arrow array: two independent 32-bit lanes, so the row hash is 64 bits.
 * Computing whole columns at a time keeps the inner loops monomorphic and typed-array based; a
 * per-row, per-value dispatch would be several times slower on 40 M-row groups.
 */
interface SlotHashes {
  readonly h1: Uint32Array;
  readonly h2: Uint32Array;
}

// Lane 1 is a murmur3 block step, lane 2 an xxhash32 round: different families, so a collision
// in one lane is not systematically a collision in the other.
const C1 = 0xcc9e2d51;
const C2 = 0x1b873593;
const P1 = 0x9e3779b1;
const P2 = 0x85ebca77;
const P3 = 0xc2b2ae3d;

function mix1(h: number, k: number): number {
  let x = Math.imul(k, C1);
  x = (x << 15) | (x >>> 17);
  x = Math.imul(x, C2);
  let y = h ^ x;
  y = (y << 13) | (y >>> 19);
  return (Math.imul(y, 5) + 0xe6546b64) | 0;
}

function mix2(h: number, k: number): number {
  let y = (h + Math.imul(k, P2)) | 0;
  y = (y << 13) | (y >>> 19);
  return Math.imul(y, P1);
}

function fin1(h: number): number {
  let x = h ^ (h >>> 16);
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  return (x ^ (x >>> 16)) >>> 0;
}

function fin2(h: number): number {
  let x = h ^ (h >>> 15);
  x = Math.imul(x, P2);
  x ^= x >>> 13;
  x = Math.imul(x, P3);
  return (x ^ (x >>> 16)) >>> 0;
}

// Seeds per kind of value, so that e.g. an empty list, an empty string and a null differ.
const NULL1 = 0x6e756c6c;
const NULL2 = 0x4e554c4c;
const SEED_FIXED = 0x0f1e2d3c;
const SEED_VAR = 0x5a5a1234;
const SEED_LIST = 0x1157aa01;
const SEED_STRUCT = 0x57a0c7b2;
const SEED_ROW = 0x7207a5e3;

function isValid(bitmap: Uint8Array | undefined, offset: number, i: number): boolean {
  if (bitmap === undefined || bitmap.length === 0) return true;
  const j = offset + i;
  return ((bitmap[j >> 3] as number) & (1 << (j & 7))) !== 0;
}

function bytesOf(values: ArrayBufferView): Uint8Array {
  return new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
}

/** Hashes `count` slots of `width` bytes each, reading 32-bit words when the width allows. */
function hashFixed(data: Data, bytes: Uint8Array, width: number, count: number): SlotHashes {
  const h1 = new Uint32Array(count);
  const h2 = new Uint32Array(count);
  const bitmap = data.nullCount > 0 ? data.nullBitmap : undefined;
  const words = width % 4 === 0 && bytes.byteOffset % 4 === 0 ? width / 4 : 0;
  const u32 = words > 0 ? new Uint32Array(bytes.buffer, bytes.byteOffset, (count * width) / 4) : undefined;
  for (let i = 0; i < count; i++) {
    if (!isValid(bitmap, data.offset, i)) {
      h1[i] = NULL1;
      h2[i] = NULL2;
      continue;
    }
    let a = SEED_FIXED;
    let b = SEED_FIXED ^ P1;
    if (u32 !== undefined) {
      const base = i * words;
      for (let w = 0; w < words; w++) {
        const k = u32[base + w] as number;
        a = mix1(a, k);
        b = mix2(b, k);
      }
    } else {
      const base = i * width;
      for (let w = 0; w < width; w++) {
        const k = bytes[base + w] as number;
        a = mix1(a, k);
        b = mix2(b, k);
      }
    }
    h1[i] = fin1(a ^ width);
    h2[i] = fin2(b ^ width);
  }
  return { h1, h2 };
}

/** Hashes `count` variable-length values (UTF-8 or binary) straight from the Arrow buffers. */
function hashVariable(
  data: Data,
  offsets: Int32Array | BigInt64Array,
  values: Uint8Array,
  count: number,
): SlotHashes {
  const h1 = new Uint32Array(count);
  const h2 = new Uint32Array(count);
  const bitmap = data.nullCount > 0 ? data.nullBitmap : undefined;
  const large = offsets instanceof BigInt64Array;
  for (let i = 0; i < count; i++) {
    if (!isValid(bitmap, data.offset, i)) {
      h1[i] = NULL1;
      h2[i] = NULL2;
      continue;
    }
    const start = large ? Number(offsets[i]) : (offsets[i] as number);
    const end = large ? Number(offsets[i + 1]) : (offsets[i + 1] as number);
    let a = SEED_VAR;
    let b = SEED_VAR ^ P1;
    let p = start;
    for (; p + 4 <= end; p += 4) {
      const k =
        (values[p] as number) |
        ((values[p + 1] as number) << 8) |
        ((values[p + 2] as number) << 16) |
        ((values[p + 3] as number) << 24);
      a = mix1(a, k);
      b = mix2(b, k);
    }
    if (p < end) {
      let k = 0;
      for (let s = 0; p < end; p++, s += 8) k |= (values[p] as number) << s;
      a = mix1(a, k);
      b = mix2(b, k);
    }
    const len = end - start;
    h1[i] = fin1(a ^ len);
    h2[i] = fin2(b ^ len);
  }
  return { h1, h2 };
}

function hashBool(data: Data, count: number): SlotHashes {
  const h1 = new Uint32Array(count);
  const h2 = new Uint32Array(count);
  const bitmap = data.nullCount > 0 ? data.nullBitmap : undefined;
  const values = data.values as Uint8Array;
  for (let i = 0; i < count; i++) {
    if (!isValid(bitmap, data.offset, i)) {
      h1[i] = NULL1;
      h2[i] = NULL2;
      continue;
    }
    const bit = isValid(values, data.offset, i) ? 1 : 0;
    h1[i] = fin1(mix1(SEED_FIXED, bit));
    h2[i] = fin2(mix2(SEED_FIXED ^ P1, bit));
  }
  return { h1, h2 };
}

/** Hashes every slot of a list-like array as (length, element hashes in order). */
function hashListLike(
  data: Data,
  count: number,
  child: SlotHashes,
  bounds: (i: number) => readonly [number, number],
): SlotHashes {
  const h1 = new Uint32Array(count);
  const h2 = new Uint32Array(count);
  const bitmap = data.nullCount > 0 ? data.nullBitmap : undefined;
  for (let i = 0; i < count; i++) {
    if (!isValid(bitmap, data.offset, i)) {
      h1[i] = NULL1;
      h2[i] = NULL2;
      continue;
    }
    const [start, end] = bounds(i);
    let a = SEED_LIST;
    let b = SEED_LIST ^ P1;
    for (let j = start; j < end; j++) {
      a = mix1(a, child.h1[j] as number);
      b = mix2(b, child.h2[j] as number);
    }
    h1[i] = fin1(a ^ (end - start));
    h2[i] = fin2(b ^ (end - start));
  }
  return { h1, h2 };
}

/** Per-slot hashes of one Arrow array of any type Parquet can carry. */
export function hashData(data: Data): SlotHashes {
  const count = data.length;
  const type = data.type;
  switch (type.typeId) {
    case Type.Null: {
      return { h1: new Uint32Array(count).fill(NULL1), h2: new Uint32Array(count).fill(NULL2) };
    }
    case Type.Bool:
      return hashBool(data, count);
    case Type.Int:
    case Type.Float:
    case Type.Decimal:
    case Type.Date:
    case Type.Time:
    case Type.Timestamp:
    case Type.Interval:
    case Type.Duration:
    case Type.FixedSizeBinary: {
      const values = data.values as ArrayBufferView & { BYTES_PER_ELEMENT: number };
      const width = values.BYTES_PER_ELEMENT * data.stride;
      return hashFixed(data, bytesOf(values).subarray(0, count * width), width, count);
    }
    case Type.Utf8:
    case Type.Binary:
    case Type.LargeUtf8:
    case Type.LargeBinary:
      return hashVariable(
        data,
        data.valueOffsets as Int32Array | BigInt64Array,
        data.values as Uint8Array,
        count,
      );
    case Type.List:
    case Type.LargeList:
    case Type.Map: {
      const childData = data.children[0];
      if (childData === undefined)
        throw new UnsupportedInputError('(batch)', `list without child in ${type}`);
      const child = hashData(childData);
      const offsets = data.valueOffsets as Int32Array | BigInt64Array;
      const large = offsets instanceof BigInt64Array;
      return hashListLike(data, count, child, (i) =>
        large
          ? [Number(offsets[i]), Number(offsets[i + 1])]
          : [offsets[i] as number, offsets[i + 1] as number],
      );
    }
    case Type.FixedSizeList: {
      const childData = data.children[0];
      if (childData === undefined)
        throw new UnsupportedInputError('(batch)', `list without child in ${type}`);
      const child = hashData(childData);
      const size = (type as unknown as { listSize: number }).listSize;
      // Children of a sliced fixed-size list are not sliced in arrow-js: account for the offset.
      return hashListLike(data, count, child, (i) => [
        (data.offset + i) * size,
        (data.offset + i + 1) * size,
      ]);
    }
    case Type.Struct: {
      const children = data.children.map((c) => hashData(c));
      const h1 = new Uint32Array(count);
      const h2 = new Uint32Array(count);
      const bitmap = data.nullCount > 0 ? data.nullBitmap : undefined;
      for (let i = 0; i < count; i++) {
        if (!isValid(bitmap, data.offset, i)) {
          h1[i] = NULL1;
          h2[i] = NULL2;
          continue;
        }
        let a = SEED_STRUCT;
        let b = SEED_STRUCT ^ P1;
        for (const c of children) {
          a = mix1(a, c.h1[i] as number);
          b = mix2(b, c.h2[i] as number);
        }
        h1[i] = fin1(a ^ children.length);
        h2[i] = fin2(b ^ children.length);
      }
      return { h1, h2 };
    }
    case Type.Dictionary: {
      // Hash by value: a dictionary-encoded input and a plain output must agree.
      const dictionary = data.dictionary;
      if (dictionary === undefined)
        throw new UnsupportedInputError('(batch)', 'dictionary array without values');
      const parts = dictionary.data.map((d) => hashData(d));
      const total = parts.reduce((n, p) => n + p.h1.length, 0);
      const d1 = new Uint32Array(total);
      const d2 = new Uint32Array(total);
      let at = 0;
      for (const p of parts) {
        d1.set(p.h1, at);
        d2.set(p.h2, at);
        at += p.h1.length;
      }
      const indices = data.values as ArrayLike<number | bigint>;
      const h1 = new Uint32Array(count);
      const h2 = new Uint32Array(count);
      const bitmap = data.nullCount > 0 ? data.nullBitmap : undefined;
      for (let i = 0; i < count; i++) {
        if (!isValid(bitmap, data.offset, i)) {
          h1[i] = NULL1;
          h2[i] = NULL2;
          continue;
        }
        const k = Number(indices[i]);
        h1[i] = d1[k] as number;
        h2[i] = d2[k] as number;
      }
      return { h1, h2 };
    }
    default:
      throw new UnsupportedInputError('(batch)', `Arrow type ${type} cannot be fingerprinted`);
  }
}

/**
 * Running multiset hash: the sum (mod 2^64) of every row's 64-bit hash, plus row and null counts.
 * A sum is order-independent and mergeable across outputs, batches and workers.
 */
export class MultisetHash {
  private hi = 0;
  private lo = 0;
  rows = 0;
  readonly nullCounts = new Map<string, number>();

  /** Adds every row of `batch`. Columns are mixed in schema order, so a torn row changes the hash. */
  addBatch(batch: RecordBatch): void {
    const n = batch.numRows;
    if (n === 0) return;
    const r1 = new Uint32Array(n).fill(SEED_ROW);
    const r2 = new Uint32Array(n).fill(SEED_ROW ^ P1);
    batch.schema.fields.forEach((field, c) => {
      const column = batch.getChildAt(c);
      if (column === null)
        throw new UnsupportedInputError('(batch)', `column ${field.name} missing from batch`);
      let offset = 0;
      let nulls = 0;
      for (const data of column.data) {
        const { h1, h2 } = hashData(data);
        for (let i = 0; i < data.length; i++) {
          r1[offset + i] = mix1(r1[offset + i] as number, (h1[i] as number) ^ c);
          r2[offset + i] = mix2(r2[offset + i] as number, (h2[i] as number) ^ c);
        }
        offset += data.length;
        nulls += data.type.typeId === Type.Null ? data.length : data.nullCount;
      }
      this.nullCounts.set(field.name, (this.nullCounts.get(field.name) ?? 0) + nulls);
    });
    let lo = this.lo;
    let hi = this.hi;
    const width = batch.schema.fields.length;
    for (let i = 0; i < n; i++) {
      lo += fin1((r1[i] as number) ^ width);
      hi += fin2((r2[i] as number) ^ width);
      // Keep the float sums exact: fold the carry well before 2^53.
      if ((i & 0xfffff) === 0xfffff) {
        const carry = Math.floor(lo / 0x100000000);
        lo -= carry * 0x100000000;
        hi = (hi + carry) % 0x100000000;
      }
    }
    const carry = Math.floor(lo / 0x100000000);
    this.lo = lo - carry * 0x100000000;
    this.hi = (hi + carry) % 0x100000000;
    this.rows += n;
  }

  /** Adds another hash's rows (e.g. a worker's or another output's). */
  merge(other: { hash: string; rows: number; nullCounts: Readonly<Record<string, number>> }): void {
    const ohi = Number.parseInt(other.hash.slice(0, 8), 16);
    const olo = Number.parseInt(other.hash.slice(8), 16);
    const lo = this.lo + olo;
    const carry = Math.floor(lo / 0x100000000);
    this.lo = lo - carry * 0x100000000;
    this.hi = (this.hi + ohi + carry) % 0x100000000;
    this.rows += other.rows;
    for (const [k, v] of Object.entries(other.nullCounts))
      this.nullCounts.set(k, (this.nullCounts.get(k) ?? 0) + v);
  }

  /** The sum as 16 lowercase hex digits (high word first). */
  digest(): string {
    return this.hi.toString(16).padStart(8, '0') + this.lo.toString(16).padStart(8, '0');
  }

  nullCountsRecord(): Record<string, number> {
    return Object.fromEntries(
      [...this.nullCounts.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    );
  }
}
