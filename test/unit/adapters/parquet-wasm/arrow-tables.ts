// Seeded generator of Arrow tables for the FFI walker's property tests: random schemas over every type the
// engine reads and writes (ints of every width, floats with NaN/−0/±∞, decimals, strings and binaries with
// empty values, dictionaries, timestamps of each unit, dates, times, durations, booleans, nulls, nested lists,
// fixed-size lists, structs and maps) with nulls at every level, garbage under nulls, list offsets that do not
// start at 0, and rows cut into batches of random lengths. Built buffer by buffer (arrow-js `makeData`), so
// layouts the builders would never produce are reached too.

import {
  Binary,
  Bool,
  type Data,
  type DataType,
  DateDay,
  DateMillisecond,
  Decimal,
  Dictionary,
  DurationMicrosecond,
  DurationMillisecond,
  DurationNanosecond,
  DurationSecond,
  Field,
  FixedSizeBinary,
  FixedSizeList,
  Float16,
  Float32,
  Float64,
  Int8,
  Int16,
  Int32,
  Int64,
  LargeBinary,
  LargeList,
  LargeUtf8,
  List,
  Map_,
  makeData,
  makeVector,
  Null,
  RecordBatch,
  Schema,
  Struct,
  Table,
  TimeMicrosecond,
  TimeMillisecond,
  TimeNanosecond,
  TimeSecond,
  TimestampMicrosecond,
  TimestampMillisecond,
  TimestampNanosecond,
  TimestampSecond,
  Uint8,
  Uint16,
  Uint32,
  Uint64,
  Utf8,
} from 'apache-arrow';
import { mulberry32 } from '../../../../functions/tools/sample-lake.js';

/** A seeded source of choices. */
export class Rand {
  private readonly next: () => number;
  constructor(seed: number) {
    this.next = mulberry32(seed);
  }
  /** Uniform in [0, 1). */
  float(): number {
    return this.next();
  }
  /** Uniform integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)] as T;
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  bytes(n: number): Uint8Array {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i++) out[i] = this.int(256);
    return out;
  }
}

/** Leaf types, by the name the coverage check uses. */
const LEAVES: Readonly<Record<string, () => DataType>> = {
  int8: () => new Int8(),
  int16: () => new Int16(),
  int32: () => new Int32(),
  int64: () => new Int64(),
  uint8: () => new Uint8(),
  uint16: () => new Uint16(),
  uint32: () => new Uint32(),
  uint64: () => new Uint64(),
  float16: () => new Float16(),
  float32: () => new Float32(),
  float64: () => new Float64(),
  decimal128: () => new Decimal(2, 9, 128),
  decimal128wide: () => new Decimal(10, 38, 128),
  decimal256: () => new Decimal(5, 60, 256),
  utf8: () => new Utf8(),
  largeUtf8: () => new LargeUtf8(),
  binary: () => new Binary(),
  largeBinary: () => new LargeBinary(),
  fixedBinary: () => new FixedSizeBinary(5),
  bool: () => new Bool(),
  null: () => new Null(),
  dateDay: () => new DateDay(),
  dateMillisecond: () => new DateMillisecond(),
  timeSecond: () => new TimeSecond(),
  timeMillisecond: () => new TimeMillisecond(),
  timeMicrosecond: () => new TimeMicrosecond(),
  timeNanosecond: () => new TimeNanosecond(),
  timestampSecond: () => new TimestampSecond(),
  timestampMillisecond: () => new TimestampMillisecond('UTC'),
  timestampMicrosecond: () => new TimestampMicrosecond(),
  timestampNanosecond: () => new TimestampNanosecond('+01:00'),
  durationSecond: () => new DurationSecond(),
  durationMillisecond: () => new DurationMillisecond(),
  durationMicrosecond: () => new DurationMicrosecond(),
  durationNanosecond: () => new DurationNanosecond(),
  dictUtf8Int8: () => new Dictionary(new Utf8(), new Int8()),
  dictUtf8Int16: () => new Dictionary(new Utf8(), new Int16()),
  dictUtf8Int32: () => new Dictionary(new Utf8(), new Int32()),
  dictUtf8Uint32: () => new Dictionary(new Utf8(), new Uint32()),
  dictInt64Int32: () => new Dictionary(new Int64(), new Int32()),
  // arrow-js types dictionary keys as at most 32 bits wide, but reads and writes 64-bit ones.
  dictBinaryInt64: () => new Dictionary(new Binary(), new Int64() as unknown as Int32),
};

export const NESTED = ['list', 'largeList', 'fixedList', 'struct', 'map'] as const;

/** What a generated schema may contain: Parquet cannot hold every Arrow type. */
export interface TypeOptions {
  readonly leaves: readonly string[];
  readonly nested: readonly (typeof NESTED)[number][];
}

export const ALL_LEAVES = Object.keys(LEAVES);

let fieldNumber = 0;

/** A random type, nested at most `depth` levels; `seen` collects the names of what was chosen. */
export function randomType(
  rand: Rand,
  options: TypeOptions,
  depth: number,
  seen: Set<string>,
  top = false,
  chosen?: string,
): DataType {
  const nested = chosen === undefined ? undefined : options.nested.find((n) => n === chosen);
  if (
    nested !== undefined ||
    (chosen === undefined && depth > 0 && options.nested.length > 0 && rand.chance(0.35))
  ) {
    const kind = nested ?? rand.pick(options.nested);
    seen.add(kind);
    const child = () => new Field(`f${fieldNumber++}`, randomType(rand, options, depth - 1, seen), true);
    switch (kind) {
      case 'list':
        return new List(child());
      case 'largeList':
        return new LargeList(child());
      case 'fixedList':
        return new FixedSizeList(1 + rand.int(3), child());
      case 'struct':
        return new Struct(Array.from({ length: 1 + rand.int(3) }, child));
      case 'map': {
        const key = new Field<DataType>('key', rand.chance(0.5) ? new Utf8() : new Int32(), false);
        const value = new Field('value', randomType(rand, options, depth - 1, seen), true);
        return new Map_(new Field('entries', new Struct([key, value]), false) as never, false);
      }
    }
  }
  // arrow-js's IPC writer loses a Null array's null count below the top level (arrow-rs then refuses
  // the stream), so the Null type is only chosen for a column of its own.
  const leaves = top ? options.leaves : options.leaves.filter((l) => l !== 'null');
  const name = chosen ?? rand.pick(leaves);
  seen.add(name);
  return (LEAVES[name] as () => DataType)();
}

/** A validity bitmap with about `p` of `length` slots null, and its null count; none when p is 0. */
function validity(rand: Rand, length: number, p: number): { bitmap?: Uint8Array; nulls: number } {
  if (p === 0 || length === 0) return { nulls: 0 };
  const bitmap = new Uint8Array(Math.ceil(length / 8) + rand.int(2));
  let nulls = 0;
  for (let i = 0; i < length; i++) {
    if (rand.chance(p)) nulls++;
    else bitmap[i >> 3] = (bitmap[i >> 3] as number) | (1 << (i & 7));
  }
  // Bits past the end are padding, never read: set some.
  if (length % 8 !== 0 && rand.chance(0.5)) bitmap[length >> 3] = (bitmap[length >> 3] as number) | 0x80;
  return { bitmap, nulls };
}

function isValid(bitmap: Uint8Array | undefined, i: number): boolean {
  return bitmap === undefined || (((bitmap[i >> 3] as number) >> (i & 7)) & 1) === 1;
}

const TEXT = ['', 'a', 'b', 'é', '日本', '😀', 'xyz', ' ', 'longer value with spaces', '\u0000', 'A'];
const ENCODER = new TextEncoder();
const FLOATS = [Number.NaN, -0, 0, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 1.5, -2.25, 1e-310];
const HALF_FLOATS = [0x7e00, 0x7c01, 0x8000, 0x0000, 0x7c00, 0xfc00, 0x3c00, 0x0001];

function randomText(rand: Rand): Uint8Array {
  if (rand.chance(0.3)) return ENCODER.encode(rand.pick(TEXT));
  let s = '';
  for (let i = rand.int(12); i > 0; i--) s += rand.pick(TEXT);
  return ENCODER.encode(s);
}

function big(rand: Rand, bits: number): bigint {
  let v = 0n;
  for (let i = 0; i < bits; i += 16) v = (v << 16n) | BigInt(rand.int(65_536));
  v &= (1n << BigInt(bits)) - 1n;
  return rand.chance(0.5) ? -v : v;
}

/** Null probability for one array: often none, sometimes all. */
function nullRate(rand: Rand): number {
  return rand.pick([0, 0, 0.1, 0.3, 0.7, 1]);
}

/** Values of a fixed-width type, garbage under nulls included. */
function fixedValues(rand: Rand, type: DataType, length: number): ArrayBufferView {
  const t = type as DataType & { ArrayType: new (n: number) => ArrayBufferView & ArrayLike<unknown> };
  const name = type.toString();
  if (type instanceof Float16) return Uint16Array.from({ length }, () => rand.pick(HALF_FLOATS));
  if (type instanceof Float32 || type instanceof Float64) {
    const out = new t.ArrayType(length) as Float32Array | Float64Array;
    for (let i = 0; i < length; i++)
      out[i] = rand.chance(0.3) ? rand.pick(FLOATS) : (rand.float() - 0.5) * 1e6;
    return out;
  }
  if (type instanceof Decimal) {
    const words = type.bitWidth / 32;
    const out = new Uint32Array(length * words);
    const limit = 10n ** BigInt(type.precision);
    for (let i = 0; i < length; i++) {
      let v = big(rand, type.bitWidth) % limit;
      if (v < 0n) v += 1n << BigInt(type.bitWidth);
      for (let w = 0; w < words; w++) out[i * words + w] = Number((v >> BigInt(32 * w)) & 0xffffffffn);
    }
    return out;
  }
  if (type instanceof DateDay) return Int32Array.from({ length }, () => rand.int(200_000) - 100_000);
  if (type instanceof DateMillisecond) {
    return BigInt64Array.from({ length }, () => BigInt(rand.int(200_000) - 100_000) * 86_400_000n);
  }
  if (type instanceof TimeSecond) return Int32Array.from({ length }, () => rand.int(86_400));
  if (type instanceof TimeMillisecond) return Int32Array.from({ length }, () => rand.int(86_400_000));
  if (type instanceof TimeMicrosecond || type instanceof TimeNanosecond) {
    const scale = type instanceof TimeMicrosecond ? 1_000_000n : 1_000_000_000n;
    return BigInt64Array.from({ length }, () => BigInt(rand.int(86_400)) * scale + BigInt(rand.int(1000)));
  }
  if (name.startsWith('Timestamp') || name.startsWith('Duration')) {
    // Small enough that no unit conversion in a writer overflows.
    return BigInt64Array.from({ length }, () => big(rand, 40));
  }
  const out = new t.ArrayType(length);
  new Uint8Array(out.buffer).set(rand.bytes(out.byteLength));
  return out;
}

/**
 * Random data of `type`, `length` slots. Lists may start their offsets past 0 (the child holds
 * garbage before), null list slots may own elements, and null binary slots bytes.
 */
export function randomData(rand: Rand, type: DataType, length: number, nullable = true): Data {
  const { bitmap, nulls } =
    nullable && !(type instanceof Null) ? validity(rand, length, nullRate(rand)) : { nulls: 0 };
  const common = { type, length, nullCount: nulls, ...(bitmap !== undefined && { nullBitmap: bitmap }) };
  if (type instanceof Null) return makeData({ type, length, nullCount: length });
  if (type instanceof Bool) return makeData({ ...common, data: rand.bytes(Math.ceil(length / 8)) } as never);
  if (
    type instanceof Utf8 ||
    type instanceof Binary ||
    type instanceof LargeUtf8 ||
    type instanceof LargeBinary
  ) {
    const text = type instanceof Utf8 || type instanceof LargeUtf8;
    const parts: Uint8Array[] = [];
    const offsets = [0];
    let at = 0;
    for (let i = 0; i < length; i++) {
      const empty = !isValid(bitmap, i) && rand.chance(0.5);
      const v = empty ? new Uint8Array(0) : text ? randomText(rand) : rand.bytes(rand.int(9));
      parts.push(v);
      at += v.length;
      offsets.push(at);
    }
    const values = new Uint8Array(at);
    let k = 0;
    for (const p of parts) {
      values.set(p, k);
      k += p.length;
    }
    const large = type instanceof LargeUtf8 || type instanceof LargeBinary;
    const valueOffsets = large ? BigInt64Array.from(offsets, BigInt) : Int32Array.from(offsets);
    return makeData({ ...common, valueOffsets, data: values } as never);
  }
  if (type instanceof FixedSizeBinary) {
    return makeData({ ...common, data: rand.bytes(length * type.byteWidth) } as never);
  }
  if (type instanceof Dictionary) {
    const size = 1 + rand.int(6);
    const dictionary = makeVector(randomData(rand, type.dictionary, size));
    const indices = new type.indices.ArrayType(length) as ArrayLike<unknown> & Record<number, unknown>;
    const bigIndices = type.indices.bitWidth === 64;
    for (let i = 0; i < length; i++) {
      // Garbage under null indices stays in range: readers may look it up.
      indices[i] = bigIndices ? BigInt(rand.int(size)) : rand.int(size);
    }
    return makeData({ ...common, data: indices, dictionary } as never);
  }
  if (type instanceof List || type instanceof LargeList || type instanceof Map_) {
    const base = rand.chance(0.3) ? rand.int(4) : 0;
    const offsets = [base];
    let at = base;
    for (let i = 0; i < length; i++) {
      at += isValid(bitmap, i) || rand.chance(0.2) ? rand.int(4) : 0;
      offsets.push(at);
    }
    const childType = (type.children[0] as Field).type;
    const child =
      type instanceof Map_ ? randomEntries(rand, childType as Struct, at) : randomData(rand, childType, at);
    const valueOffsets =
      type instanceof LargeList ? BigInt64Array.from(offsets, BigInt) : Int32Array.from(offsets);
    return makeData({ ...common, valueOffsets, child } as never);
  }
  if (type instanceof FixedSizeList) {
    const child = randomData(rand, (type.children[0] as Field).type, length * type.listSize);
    return makeData({ ...common, child } as never);
  }
  if (type instanceof Struct) {
    const children = type.children.map((f) => randomData(rand, f.type, length));
    return makeData({ ...common, children } as never);
  }
  return makeData({ ...common, data: fixedValues(rand, type, length) } as never);
}

/** A map's entries: never null, keys never null, values anything. */
function randomEntries(rand: Rand, type: Struct, length: number): Data {
  const [key, value] = type.children as [Field, Field];
  const children = [randomData(rand, key.type, length, false), randomData(rand, value.type, length)];
  return makeData({ type, length, nullCount: 0, children } as never);
}

/**
 * A random table: 1–6 columns, `rows` rows in batches of random lengths (some empty). `first`, a leaf
 * or nested kind of `options`, is the first column's type (so that cycling through them covers all).
 */
export function randomTable(
  rand: Rand,
  options: TypeOptions,
  rows: number,
  seen: Set<string>,
  first?: string,
): Table {
  const fields = Array.from(
    { length: 1 + rand.int(6) },
    (_, i) => new Field(`c${i}`, randomType(rand, options, 2, seen, true, i === 0 ? first : undefined), true),
  );
  const schema = new Schema(fields);
  const batches: RecordBatch[] = [];
  let left = rows;
  while (left > 0 || batches.length === 0) {
    const n = Math.min(left, rand.chance(0.1) ? 0 : 1 + rand.int(rows));
    const children = fields.map((f) => randomData(rand, f.type, n));
    const data = makeData({ type: new Struct(fields), length: n, nullCount: 0, children });
    batches.push(new RecordBatch(schema, data));
    left -= n;
  }
  return new Table(schema, batches);
}
