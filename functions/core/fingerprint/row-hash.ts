// Order-independent 64-bit multiset hash of Arrow record batches: equal row multisets give equal
// hashes whatever the batching, slicing, dictionary encoding or row order; any changed, moved, added or dropped value changes it (with probability 1 − 2^-64).

import { type Data, type RecordBatch, Type } from 'apache-arrow';
import { UnsupportedInputError } from '../errors.js';
import type { ArrowColumn, ArrowSlots } from './ordered-digest.js';

/**
 * Per-slot hashes of one Arrow array: two independent 32-bit lanes, so the row hash is 64 bits.
 * Computing whole columns at a time keeps the inner loops monomorphic and typed-array based; a
 * per-row, per-value dispatch would be several times slower on 40 M-row groups.
 *
 * The kernels below take raw buffers (validity bitmap + bit offset, values, offsets), so the two
 * ways of reaching a batch's memory — arrow-js `Data` (via Arrow IPC: the tests' oracle, and the
 * fallback) and the Arrow C Data Interface over wasm memory (rewrite and verify, zero copy, see
 * ffi-hash.ts) — feed one canonical encoding:
 * - fixed-width values: the value's little-endian bytes, as 32-bit words when the width is a
 *   multiple of 4 (whatever the buffer's alignment), else byte by byte; then the width;
 * - variable-length values: their bytes in 32-bit little-endian words (the tail zero-padded),
 *   then the length;
 * - booleans: 0 or 1; lists and maps: element hashes in order, then the length; structs: child
 *   hashes in order, then the child count; dictionary-encoded values: the value's hash;
 * - null: a fixed marker pair, whatever the type;
 * - a row: its column hashes, each xor'ed with the column index, then the column count.
 */
export interface SlotHashes {
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

/** Validity of slot `i`: bit `offset + i` of `bits`; `undefined` means every slot is valid. */
function isValid(bits: Uint8Array | undefined, offset: number, i: number): boolean {
  if (bits === undefined) return true;
  const j = offset + i;
  return ((bits[j >> 3] as number) & (1 << (j & 7))) !== 0;
}

/**
 * Output arrays for `count` slots: views on `out` when it is large enough (a reused scratch, so a
 * 40 M-row group does not allocate — and leave the garbage collector — gigabytes of typed arrays),
 * else fresh arrays.
 */
function outputOf(count: number, out: SlotHashes | undefined): { h1: Uint32Array; h2: Uint32Array } {
  if (out !== undefined && out.h1.length >= count && out.h2.length >= count) {
    return { h1: out.h1.subarray(0, count), h2: out.h2.subarray(0, count) };
  }
  return { h1: new Uint32Array(count), h2: new Uint32Array(count) };
}

/** All-null slots (Arrow's Null type). */
export function nullSlots(count: number, out?: SlotHashes): SlotHashes {
  const { h1, h2 } = outputOf(count, out);
  h1.fill(NULL1);
  h2.fill(NULL2);
  return { h1, h2 };
}

/**
 * Hashes `count` slots of `width` bytes each; `bytes[0]` is slot 0's first byte. Widths that are
 * multiples of 4 are read as 32-bit little-endian words (8-byte values, the common case, unrolled).
 */
export function hashFixedSlots(
  bits: Uint8Array | undefined,
  bitOffset: number,
  bytes: Uint8Array,
  width: number,
  count: number,
  out?: SlotHashes,
): SlotHashes {
  const { h1, h2 } = outputOf(count, out);
  const words = width % 4 === 0 ? width / 4 : 0;
  const aligned = words > 0 && bytes.byteOffset % 4 === 0;
  const u32 = aligned ? new Uint32Array(bytes.buffer, bytes.byteOffset, count * words) : undefined;
  const s1 = SEED_FIXED;
  const s2 = SEED_FIXED ^ P1;
  if (u32 !== undefined && words === 2) {
    for (let i = 0; i < count; i++) {
      if (bits !== undefined && !isValid(bits, bitOffset, i)) {
        h1[i] = NULL1;
        h2[i] = NULL2;
        continue;
      }
      const lo = u32[2 * i] as number;
      const hi = u32[2 * i + 1] as number;
      h1[i] = fin1(mix1(mix1(s1, lo), hi) ^ 8);
      h2[i] = fin2(mix2(mix2(s2, lo), hi) ^ 8);
    }
    return { h1, h2 };
  }
  for (let i = 0; i < count; i++) {
    if (bits !== undefined && !isValid(bits, bitOffset, i)) {
      h1[i] = NULL1;
      h2[i] = NULL2;
      continue;
    }
    let a = s1;
    let b = s2;
    if (u32 !== undefined) {
      const base = i * words;
      for (let w = 0; w < words; w++) {
        const k = u32[base + w] as number;
        a = mix1(a, k);
        b = mix2(b, k);
      }
    } else if (words > 0) {
      const base = i * width;
      for (let p = base; p < base + width; p += 4) {
        const k =
          (bytes[p] as number) |
          ((bytes[p + 1] as number) << 8) |
          ((bytes[p + 2] as number) << 16) |
          ((bytes[p + 3] as number) << 24);
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

/**
 * Hashes `count` variable-length values (UTF-8 or binary) straight from the Arrow buffers:
 * `offsets[i]..offsets[i + 1]` are slot i's bytes in `values`.
 */
export function hashVariableSlots(
  bits: Uint8Array | undefined,
  bitOffset: number,
  offsets: Int32Array | BigInt64Array,
  values: Uint8Array,
  count: number,
  out?: SlotHashes,
): SlotHashes {
  const { h1, h2 } = outputOf(count, out);
  const words = new DataView(values.buffer, values.byteOffset, values.byteLength);
  const small = offsets instanceof Int32Array ? offsets : undefined;
  const large = offsets instanceof BigInt64Array ? offsets : undefined;
  let end = small !== undefined ? (small[0] as number) : Number(large?.[0]);
  for (let i = 0; i < count; i++) {
    const start = end;
    end = small !== undefined ? (small[i + 1] as number) : Number(large?.[i + 1]);
    if (bits !== undefined && !isValid(bits, bitOffset, i)) {
      h1[i] = NULL1;
      h2[i] = NULL2;
      continue;
    }
    let a = SEED_VAR;
    let b = SEED_VAR ^ P1;
    let p = start;
    for (; p + 4 <= end; p += 4) {
      const k = words.getUint32(p, true);
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

/** Hashes `count` booleans: bit `valueOffset + i` of `values`. */
export function hashBoolSlots(
  bits: Uint8Array | undefined,
  bitOffset: number,
  values: Uint8Array,
  valueOffset: number,
  count: number,
  out?: SlotHashes,
): SlotHashes {
  const { h1, h2 } = outputOf(count, out);
  for (let i = 0; i < count; i++) {
    if (bits !== undefined && !isValid(bits, bitOffset, i)) {
      h1[i] = NULL1;
      h2[i] = NULL2;
      continue;
    }
    const bit = isValid(values, valueOffset, i) ? 1 : 0;
    h1[i] = fin1(mix1(SEED_FIXED, bit));
    h2[i] = fin2(mix2(SEED_FIXED ^ P1, bit));
  }
  return { h1, h2 };
}

/**
 * Hashes `count` list-like slots as (element hashes in order, length). Slot i's elements are
 * `child[offsets[i]..offsets[i + 1]]`, or, with a fixed `size`, `child[base + i·size ..)`.
 */
export function hashListSlots(
  bits: Uint8Array | undefined,
  bitOffset: number,
  count: number,
  child: SlotHashes,
  layout: { readonly offsets: Int32Array | BigInt64Array } | { readonly size: number; readonly base: number },
  out?: SlotHashes,
): SlotHashes {
  const { h1, h2 } = outputOf(count, out);
  const offsets = 'offsets' in layout ? layout.offsets : undefined;
  const size = 'size' in layout ? layout.size : 0;
  const base = 'base' in layout ? layout.base : 0;
  for (let i = 0; i < count; i++) {
    if (bits !== undefined && !isValid(bits, bitOffset, i)) {
      h1[i] = NULL1;
      h2[i] = NULL2;
      continue;
    }
    const start = offsets !== undefined ? Number(offsets[i]) : base + i * size;
    const end = offsets !== undefined ? Number(offsets[i + 1]) : start + size;
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

/** Hashes `count` struct slots from their children's slot hashes, slot i being child slot `base + i`. */
export function hashStructSlots(
  bits: Uint8Array | undefined,
  bitOffset: number,
  count: number,
  children: readonly SlotHashes[],
  base: number,
  out?: SlotHashes,
): SlotHashes {
  const { h1, h2 } = outputOf(count, out);
  for (let i = 0; i < count; i++) {
    if (bits !== undefined && !isValid(bits, bitOffset, i)) {
      h1[i] = NULL1;
      h2[i] = NULL2;
      continue;
    }
    let a = SEED_STRUCT;
    let b = SEED_STRUCT ^ P1;
    for (const c of children) {
      a = mix1(a, c.h1[base + i] as number);
      b = mix2(b, c.h2[base + i] as number);
    }
    h1[i] = fin1(a ^ children.length);
    h2[i] = fin2(b ^ children.length);
  }
  return { h1, h2 };
}

/** Hashes `count` dictionary-encoded slots by value: slot i takes the hash of `values[indices[i]]`. */
export function hashDictionarySlots(
  bits: Uint8Array | undefined,
  bitOffset: number,
  count: number,
  values: SlotHashes,
  indices: ArrayLike<number | bigint>,
  out?: SlotHashes,
): SlotHashes {
  const { h1, h2 } = outputOf(count, out);
  for (let i = 0; i < count; i++) {
    if (bits !== undefined && !isValid(bits, bitOffset, i)) {
      h1[i] = NULL1;
      h2[i] = NULL2;
      continue;
    }
    const k = Number(indices[i]);
    h1[i] = values.h1[k] as number;
    h2[i] = values.h2[k] as number;
  }
  return { h1, h2 };
}

function bytesOf(values: ArrayBufferView): Uint8Array {
  return new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
}

/**
 * Per-slot hashes of one arrow-js array of any type Parquet can carry. arrow-js keeps `offset`
 * for the validity bitmap (and boolean values) only: value and offset buffers, and the children
 * of structs and fixed-size lists, are already sliced.
 */
export function hashData(data: Data, out?: SlotHashes): SlotHashes {
  const count = data.length;
  const type = data.type;
  const bits = data.nullCount > 0 ? (data.nullBitmap as Uint8Array | undefined) : undefined;
  const valid = bits !== undefined && bits.length > 0 ? bits : undefined;
  switch (type.typeId) {
    case Type.Null:
      return nullSlots(count, out);
    case Type.Bool:
      return hashBoolSlots(valid, data.offset, data.values as Uint8Array, data.offset, count, out);
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
      return hashFixedSlots(
        valid,
        data.offset,
        bytesOf(values).subarray(0, count * width),
        width,
        count,
        out,
      );
    }
    case Type.Utf8:
    case Type.Binary:
    case Type.LargeUtf8:
    case Type.LargeBinary:
      return hashVariableSlots(
        valid,
        data.offset,
        data.valueOffsets as Int32Array | BigInt64Array,
        data.values as Uint8Array,
        count,
        out,
      );
    case Type.List:
    case Type.LargeList:
    case Type.Map: {
      const childData = data.children[0];
      if (childData === undefined)
        throw new UnsupportedInputError('(batch)', `list without child in ${type}`);
      return hashListSlots(
        valid,
        data.offset,
        count,
        hashData(childData),
        { offsets: data.valueOffsets as Int32Array | BigInt64Array },
        out,
      );
    }
    case Type.FixedSizeList: {
      const childData = data.children[0];
      if (childData === undefined)
        throw new UnsupportedInputError('(batch)', `list without child in ${type}`);
      const size = (type as unknown as { listSize: number }).listSize;
      return hashListSlots(valid, data.offset, count, hashData(childData), { size, base: 0 }, out);
    }
    case Type.Struct:
      return hashStructSlots(
        valid,
        data.offset,
        count,
        data.children.map((c) => hashData(c)),
        0,
        out,
      );
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
      return hashDictionarySlots(
        valid,
        data.offset,
        count,
        { h1: d1, h2: d2 },
        data.values as ArrayLike<number | bigint>,
        out,
      );
    }
    default:
      throw new UnsupportedInputError('(batch)', `Arrow type ${type} cannot be fingerprinted`);
  }
}

/**
 * Running multiset hash: the sum (mod 2^64) of every row's 64-bit hash, plus row and null counts.
 * A sum is order-independent and mergeable across outputs, batches and workers.
 *
 * Rows are added column by column: `beginRows(n)`, then `mixColumn` for each column in schema
 * order (a column may come in several consecutive parts), then `endRows(columns)`.
 */
export class MultisetHash {
  private hi = 0;
  private lo = 0;
  private r1 = new Uint32Array(0);
  private r2 = new Uint32Array(0);
  private s1 = new Uint32Array(0);
  private s2 = new Uint32Array(0);
  private pending = 0;
  private pendingNulls: [string, number][] = [];
  rows = 0;
  readonly nullCounts = new Map<string, number>();

  /**
   * Reusable output for one column's slot hashes (valid until the next call): hand it to the
   * kernels for top-level columns, then to `mixColumn`.
   */
  scratch(n: number): SlotHashes {
    if (this.s1.length < n) {
      this.s1 = new Uint32Array(n);
      this.s2 = new Uint32Array(n);
    }
    return { h1: this.s1.subarray(0, n), h2: this.s2.subarray(0, n) };
  }

  /** Starts `n` rows; their column hashes follow through `mixColumn`. */
  beginRows(n: number): void {
    if (this.r1.length < n) {
      this.r1 = new Uint32Array(n);
      this.r2 = new Uint32Array(n);
    }
    this.r1.fill(SEED_ROW, 0, n);
    this.r2.fill(SEED_ROW ^ P1, 0, n);
    this.pending = n;
    this.pendingNulls = [];
  }

  /**
   * Mixes column `index`'s slot hashes into rows `at..at + slots.length` of the pending rows and
   * counts its `nulls` (top-level nulls) under `name`. Nothing is added to the hash or the null
   * counts before `endRows`, so a batch abandoned half-way (see ffi-hash.ts) leaves no trace.
   */
  mixColumn(index: number, name: string, slots: SlotHashes, nulls: number, at = 0): void {
    const { r1, r2 } = this;
    const { h1, h2 } = slots;
    const n = h1.length;
    for (let i = 0; i < n; i++) {
      r1[at + i] = mix1(r1[at + i] as number, (h1[i] as number) ^ index);
      r2[at + i] = mix2(r2[at + i] as number, (h2[i] as number) ^ index);
    }
    this.pendingNulls.push([name, nulls]);
  }

  /** Finishes the pending rows of a batch with `columns` columns and adds them to the sum. */
  endRows(columns: number): void {
    const n = this.pending;
    const { r1, r2 } = this;
    let lo = this.lo;
    let hi = this.hi;
    for (let i = 0; i < n; i++) {
      lo += fin1((r1[i] as number) ^ columns);
      hi += fin2((r2[i] as number) ^ columns);
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
    this.pending = 0;
    for (const [name, nulls] of this.pendingNulls) {
      this.nullCounts.set(name, (this.nullCounts.get(name) ?? 0) + nulls);
    }
    this.pendingNulls = [];
  }

  /** Adds every row of an arrow-js batch. Columns are mixed in schema order, so a torn row changes the hash. */
  addBatch(batch: RecordBatch): void {
    const n = batch.numRows;
    if (n === 0) return;
    this.beginRows(n);
    batch.schema.fields.forEach((field, c) => {
      const column = batch.getChildAt(c);
      if (column === null)
        throw new UnsupportedInputError('(batch)', `column ${field.name} missing from batch`);
      let offset = 0;
      for (const data of column.data) {
        const nulls = data.type.typeId === Type.Null ? data.length : data.nullCount;
        this.mixColumn(c, field.name, hashData(data, this.scratch(data.length)), nulls, offset);
        offset += data.length;
      }
    });
    this.endRows(batch.schema.fields.length);
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

/**
 * Slot hashes of an array given as the ordered digest reads it (`ArrowSlots`: offsets applied, bitmaps with their bit
 * offset), through the same kernels and in the same shape as the C Data Interface walker's (ffi-hash.ts `slotsOf`),
 * so the slots of a projected input hash as the written output's do when their values are equal.
 */
export function hashArrowSlots(slots: ArrowSlots, out?: SlotHashes): SlotHashes {
  if (slots.kind === 'null') return nullSlots(slots.length, out);
  const bits = slots.validity?.bits;
  const offset = slots.validity?.offset ?? 0;
  switch (slots.kind) {
    case 'bool':
      return hashBoolSlots(bits, offset, slots.values, slots.valueOffset, slots.length, out);
    case 'fixed':
      return hashFixedSlots(bits, offset, slots.bytes, slots.width, slots.length, out);
    case 'binary':
      return hashVariableSlots(bits, offset, slots.offsets, slots.values, slots.length, out);
    case 'list':
      return hashListSlots(
        bits,
        offset,
        slots.length,
        hashArrowSlots(slots.child),
        { offsets: slots.offsets },
        out,
      );
    case 'fixed-list':
      return hashListSlots(
        bits,
        offset,
        slots.length,
        hashArrowSlots(slots.child),
        { size: slots.size, base: slots.base },
        out,
      );
    case 'struct':
      return hashStructSlots(
        bits,
        offset,
        slots.length,
        slots.children.map((c) => hashArrowSlots(c)),
        slots.base,
        out,
      );
    case 'dictionary':
      return hashDictionarySlots(
        bits,
        offset,
        slots.length,
        hashArrowSlots(slots.values),
        slots.indices,
        out,
      );
  }
}

/** Whether slot `i` of `slots` is valid (its own bitmap only: a dictionary's values are not looked through). */
function validAt(slots: ArrowSlots, i: number): boolean {
  if (slots.kind === 'null') return false;
  const v = slots.validity;
  return v === undefined || isValid(v.bits, v.offset, i);
}

/**
 * Adds rows `offset .. offset + rows` of `columns` (as the ordered digest reads a batch, e.g. projected onto a
 * table's schema) to `acc`, each column mixed under its name in order, its top-level nulls counted as the walker
 * counts an array's (its validity bitmap; every slot of a null array).
 */
export function addColumnRows(
  acc: MultisetHash,
  columns: readonly ArrowColumn[],
  offset: number,
  rows: number,
): void {
  if (rows === 0) return;
  const hashed = columns.map((c) => hashArrowSlots(c.slots));
  acc.beginRows(rows);
  columns.forEach((c, i) => {
    const all = hashed[i] as SlotHashes;
    let nulls = 0;
    for (let r = offset; r < offset + rows; r++) if (!validAt(c.slots, r)) nulls++;
    acc.mixColumn(
      i,
      c.name,
      { h1: all.h1.subarray(offset, offset + rows), h2: all.h2.subarray(offset, offset + rows) },
      nulls,
    );
  });
  acc.endRows(columns.length);
}
