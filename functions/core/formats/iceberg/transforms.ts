// Iceberg partition transforms (identity, bucket[N], truncate[W], year, month, day, hour, void): parsed from the
// spec's strings, applied to source values exactly as the spec defines (bucket = Murmur3 x86 32 of the spec's
// byte encoding), and rendered as the partition path Iceberg writers use. Anything else is refused by name.
import { IcebergUnsupportedError } from './errors.js';

export type Transform =
  | { readonly kind: 'identity' }
  | { readonly kind: 'bucket'; readonly n: number }
  | { readonly kind: 'truncate'; readonly width: number }
  | { readonly kind: 'year' }
  | { readonly kind: 'month' }
  | { readonly kind: 'day' }
  | { readonly kind: 'hour' }
  | { readonly kind: 'void' };

/**
 * A value of an Iceberg primitive type as this reader holds it: int, date (days), float, double as number;
 * long, time, timestamp (µs), timestamp_ns and decimal (unscaled) as bigint; string as string; boolean; uuid,
 * fixed and binary as bytes; null for null.
 */
export type IcebergValue = number | bigint | string | boolean | Uint8Array | null;

/**
 * Parses a transform string.
 * @throws IcebergUnsupportedError naming the transform when it is not one of the spec's eight.
 */
export function parseTransform(text: string, table: string, where: string): Transform {
  const t = text.trim().toLowerCase();
  switch (t) {
    case 'identity':
    case 'year':
    case 'month':
    case 'day':
    case 'hour':
    case 'void':
      return { kind: t };
  }
  const m = /^(bucket|truncate)\[(\d+)\]$/.exec(t);
  if (m !== null) {
    const n = Number(m[2]);
    if (n > 0 && n <= 2_147_483_647)
      return m[1] === 'bucket' ? { kind: 'bucket', n } : { kind: 'truncate', width: n };
  }
  throw new IcebergUnsupportedError(table, `the partition transform "${text}" (${where})`);
}

/** The transform as the spec spells it (`bucket[16]`). */
export function transformToString(t: Transform): string {
  return t.kind === 'bucket' ? `bucket[${t.n}]` : t.kind === 'truncate' ? `truncate[${t.width}]` : t.kind;
}

// ---------------------------------------------------------------------------------------------------------
// Murmur3 x86 32 (seed 0), as the spec's bucket transform defines it
// ---------------------------------------------------------------------------------------------------------

/** Murmur3 x86 32-bit hash with seed 0, as a signed 32-bit int (Guava's `murmur3_32().hashBytes`). */
export function murmur3x86_32(bytes: Uint8Array): number {
  const c1 = 0xcc9e2d51;
  const c2 = 0x1b873593;
  let h = 0;
  const blocks = bytes.length >> 2;
  for (let i = 0; i < blocks; i++) {
    const o = i * 4;
    let k =
      (bytes[o] as number) |
      ((bytes[o + 1] as number) << 8) |
      ((bytes[o + 2] as number) << 16) |
      ((bytes[o + 3] as number) << 24);
    k = Math.imul(k, c1);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, c2);
    h ^= k;
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  const tail = blocks * 4;
  const rest = bytes.length & 3;
  if (rest > 0) {
    let k = 0;
    if (rest === 3) k ^= (bytes[tail + 2] as number) << 16;
    if (rest >= 2) k ^= (bytes[tail + 1] as number) << 8;
    k ^= bytes[tail] as number;
    k = Math.imul(k, c1);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, c2);
    h ^= k;
  }
  h ^= bytes.length;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h | 0;
}

function longBytes(v: bigint): Uint8Array {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigInt64(0, BigInt.asIntN(64, v), true);
  return out;
}

/** A decimal's unscaled value as the minimum big-endian two's-complement bytes (Java's BigInteger.toByteArray). */
export function decimalBytes(unscaled: bigint): Uint8Array {
  const bytes: number[] = [];
  let v = unscaled;
  for (;;) {
    bytes.unshift(Number(BigInt.asUintN(8, v)));
    const sign = (bytes[0] as number) & 0x80;
    v >>= 8n;
    if ((v === 0n && sign === 0) || (v === -1n && sign !== 0)) break;
  }
  return Uint8Array.from(bytes);
}

/** The spec's hash of a value of `type` (an Iceberg primitive type name), as a signed 32-bit int. */
export function icebergHash(type: string, value: Exclude<IcebergValue, null>): number {
  const base = baseType(type);
  switch (base) {
    case 'int':
    case 'date':
    case 'long':
    case 'time':
    case 'timestamp':
    case 'timestamptz':
      return murmur3x86_32(longBytes(BigInt(value as number | bigint)));
    case 'timestamp_ns':
    case 'timestamptz_ns':
      return murmur3x86_32(longBytes(floorDiv(BigInt(value as bigint), 1000n)));
    case 'decimal':
      return murmur3x86_32(decimalBytes(BigInt(value as bigint)));
    case 'string':
      return murmur3x86_32(new TextEncoder().encode(value as string));
    case 'uuid':
    case 'fixed':
    case 'binary':
      return murmur3x86_32(value as Uint8Array);
    default:
      throw new Error(`the bucket transform is not defined for type ${type}`);
  }
}

/** `decimal(9,2)` → `decimal`, `fixed[16]` → `fixed`. */
export function baseType(type: string): string {
  return type.replace(/[([].*$/, '').trim();
}

function floorDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b !== 0n && a < 0n !== b < 0n ? q - 1n : q;
}

function floorDivNumber(a: number, b: number): number {
  return Math.floor(a / b);
}

const MICROS_PER_HOUR = 3_600_000_000n;
const MICROS_PER_DAY = 86_400_000_000n;

/** Days since 1970-01-01 of a value of a date or timestamp type. */
function epochDays(type: string, value: number | bigint): number {
  const base = baseType(type);
  if (base === 'date') return Number(value);
  if (base === 'timestamp_ns' || base === 'timestamptz_ns')
    return Number(floorDiv(BigInt(value), MICROS_PER_DAY * 1000n));
  return Number(floorDiv(BigInt(value), MICROS_PER_DAY));
}

function civil(days: number): { year: number; month: number; day: number } {
  const d = new Date(days * 86_400_000);
  return { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate() };
}

/**
 * Applies a transform to a source value of `sourceType`, giving the partition value manifests store: bucket and
 * the time transforms give ints (days for `day`), truncate keeps the type, void gives null, null stays null.
 */
export function applyTransform(transform: Transform, sourceType: string, value: IcebergValue): IcebergValue {
  if (value === null || transform.kind === 'void') return null;
  const base = baseType(sourceType);
  switch (transform.kind) {
    case 'identity':
      return value;
    case 'bucket':
      return (icebergHash(sourceType, value) & 0x7fffffff) % transform.n;
    case 'truncate': {
      const w = transform.width;
      if (base === 'int') return (value as number) - ((((value as number) % w) + w) % w);
      if (base === 'long' || base === 'decimal') {
        const v = BigInt(value as bigint);
        const bw = BigInt(w);
        return v - (((v % bw) + bw) % bw);
      }
      if (base === 'string') return [...(value as string)].slice(0, w).join('');
      if (base === 'binary') return (value as Uint8Array).slice(0, w);
      throw new Error(`the truncate transform is not defined for type ${sourceType}`);
    }
    case 'year':
    case 'month':
    case 'day': {
      const days = epochDays(sourceType, value as number | bigint);
      if (transform.kind === 'day') return days;
      const { year, month } = civil(days);
      return transform.kind === 'year' ? year - 1970 : (year - 1970) * 12 + (month - 1);
    }
    case 'hour': {
      const ns = base === 'timestamp_ns' || base === 'timestamptz_ns';
      return Number(floorDiv(BigInt(value as bigint), ns ? MICROS_PER_HOUR * 1000n : MICROS_PER_HOUR));
    }
  }
}

const pad = (n: number, width = 2): string => String(n).padStart(width, '0');

/**
 * A partition value as Iceberg writers render it in paths (`PartitionSpec.partitionToPath`): hours as
 * `2020-01-01-08`, days as `2020-01-01`, months `2020-01`, years `2020`, null as `null`, bytes in base64.
 */
export function humanPartitionValue(
  transform: Transform,
  sourceType: string,
  value: IcebergValue,
): string | null {
  if (value === null) return null;
  switch (transform.kind) {
    case 'year':
      return pad(1970 + Number(value), 4);
    case 'month': {
      const m = Number(value);
      return `${pad(1970 + floorDivNumber(m, 12), 4)}-${pad((((m % 12) + 12) % 12) + 1)}`;
    }
    case 'day': {
      const { year, month, day } = civil(Number(value));
      return `${pad(year, 4)}-${pad(month)}-${pad(day)}`;
    }
    case 'hour': {
      const h = Number(value);
      const { year, month, day } = civil(floorDivNumber(h, 24));
      return `${pad(year, 4)}-${pad(month)}-${pad(day)}-${pad(((h % 24) + 24) % 24)}`;
    }
    case 'bucket':
      return String(value);
    default:
      return humanValue(sourceType, value);
  }
}

/** A source-typed value as text (dates ISO, timestamps ISO in µs, bytes base64). */
function humanValue(type: string, value: Exclude<IcebergValue, null>): string {
  const base = baseType(type);
  if (base === 'decimal') {
    // manifests hold decimal partition values as big-endian unscaled bytes; render with the type's scale
    const unscaled =
      value instanceof Uint8Array ? (decodeSingleValue(type, value) as bigint) : BigInt(value as bigint);
    const scale = Number(/,\s*(\d+)\s*\)/.exec(type)?.[1] ?? 0);
    const digits = (unscaled < 0n ? -unscaled : unscaled).toString().padStart(scale + 1, '0');
    const text = scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
    return unscaled < 0n ? `-${text}` : text;
  }
  if (base === 'uuid' && value instanceof Uint8Array && value.byteLength === 16) {
    const h = Buffer.from(value).toString('hex');
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  }
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64');
  if (base === 'date') {
    const { year, month, day } = civil(Number(value));
    return `${pad(year, 4)}-${pad(month)}-${pad(day)}`;
  }
  if (base === 'timestamp' || base === 'timestamptz') {
    const micros = BigInt(value as bigint);
    const ms = Number(floorDiv(micros, 1000n));
    const iso = new Date(ms).toISOString().replace(/\.\d{3}Z$/, '');
    const frac = String(Number(((micros % 1_000_000n) + 1_000_000n) % 1_000_000n)).padStart(6, '0');
    return `${iso}.${frac}${base === 'timestamptz' ? '+00:00' : ''}`;
  }
  return String(value);
}

/**
 * Decodes a value from Iceberg's single-value binary serialization (manifest bounds): little-endian ints, longs,
 * floats; UTF-8 strings; big-endian two's-complement decimals; raw bytes for uuid, fixed and binary.
 */
export function decodeSingleValue(type: string, bytes: Uint8Array): IcebergValue {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  switch (baseType(type)) {
    case 'boolean':
      return bytes[0] !== 0;
    case 'int':
    case 'date':
      return view.getInt32(0, true);
    case 'long':
    case 'time':
    case 'timestamp':
    case 'timestamptz':
    case 'timestamp_ns':
    case 'timestamptz_ns':
      // v1 writers may store a long bound in 4 bytes for an int promoted to long
      return bytes.length === 4 ? BigInt(view.getInt32(0, true)) : view.getBigInt64(0, true);
    case 'float':
      return view.getFloat32(0, true);
    case 'double':
      return bytes.length === 4 ? view.getFloat32(0, true) : view.getFloat64(0, true);
    case 'string':
      return new TextDecoder().decode(bytes);
    case 'decimal': {
      let v = 0n;
      for (const b of bytes) v = (v << 8n) | BigInt(b);
      return bytes.length > 0 && ((bytes[0] as number) & 0x80) !== 0
        ? v - (1n << BigInt(bytes.length * 8))
        : v;
    }
    default:
      return Uint8Array.from(bytes);
  }
}

/**
 * Encodes a value in Iceberg's single-value binary serialization (spec Appendix D), the inverse of
 * {@link decodeSingleValue}: little-endian ints, longs (time and timestamps as µs or ns), floats and doubles;
 * UTF-8 strings; big-endian two's-complement decimals (unscaled, minimum bytes; bytes are taken as given);
 * raw bytes for uuid, fixed and binary.
 * @throws Error for a value that does not fit the type (a bug of the caller).
 */
export function encodeSingleValue(type: string, value: Exclude<IcebergValue, null>): Uint8Array {
  const base = baseType(type);
  const fixed = (n: number, write: (v: DataView) => void) => {
    const out = new Uint8Array(n);
    write(new DataView(out.buffer));
    return out;
  };
  switch (base) {
    case 'boolean':
      return Uint8Array.of(value === true ? 1 : 0);
    case 'int':
    case 'date':
      return fixed(4, (v) => v.setInt32(0, Number(value), true));
    case 'long':
    case 'time':
    case 'timestamp':
    case 'timestamptz':
    case 'timestamp_ns':
    case 'timestamptz_ns':
      return fixed(8, (v) => v.setBigInt64(0, BigInt(value as number | bigint), true));
    case 'float':
      return fixed(4, (v) => v.setFloat32(0, Number(value), true));
    case 'double':
      return fixed(8, (v) => v.setFloat64(0, Number(value), true));
    case 'string':
      return new TextEncoder().encode(String(value));
    case 'decimal':
      return value instanceof Uint8Array ? Uint8Array.from(value) : decimalBytes(BigInt(value as bigint));
    default:
      if (!(value instanceof Uint8Array)) throw new Error(`a ${type} value must be bytes`);
      return Uint8Array.from(value);
  }
}

/** The type of a partition field's values: the source type for identity, truncate and void; int otherwise. */
export function partitionResultType(transform: Transform, sourceType: string): string {
  switch (transform.kind) {
    case 'identity':
    case 'truncate':
    case 'void':
      return sourceType;
    default:
      return 'int';
  }
}
