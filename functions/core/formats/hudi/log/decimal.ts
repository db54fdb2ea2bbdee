// Decimals in Hudi log records, exactly: an Avro `bytes` or `fixed` with logicalType decimal, and a Parquet data
// block's DECIMAL column (INT32, INT64, BYTE_ARRAY or FIXED_LEN_BYTE_ARRAY), are read as their unscaled integer and
// their scale — never as doubles, which hold 15 digits — so a compaction writes back the very value the writer stored.
// The same value goes the other way for the log writer: sign-extended to a `fixed`'s size, minimal for `bytes`.
import type { SchemaJson } from '../../../avro/datum.js';

/** A decimal as a log record holds it: `unscaled × 10^-scale`. */
export interface LogDecimal {
  readonly unscaled: bigint;
  readonly scale: number;
}

/** Whether `v` is a {@link LogDecimal}. */
export function isLogDecimal(v: unknown): v is LogDecimal {
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof (v as { unscaled?: unknown }).unscaled === 'bigint' &&
    typeof (v as { scale?: unknown }).scale === 'number'
  );
}

/** A big-endian two's-complement integer (Avro's and Parquet's decimal bytes). */
export function twosComplement(bytes: Uint8Array): bigint {
  let v = 0n;
  for (const b of bytes) v = (v << 8n) | BigInt(b);
  if (bytes.length > 0 && ((bytes[0] as number) & 0x80) !== 0) v -= 1n << BigInt(bytes.length * 8);
  return v;
}

/**
 * `value` as big-endian two's complement: exactly `size` bytes (sign-extended) for a `fixed`, else the fewest that
 * hold it; undefined when it does not fit in `size` bytes.
 */
export function twosComplementBytes(value: bigint, size?: number): Uint8Array | undefined {
  let length = 1;
  while (value < -(1n << BigInt(length * 8 - 1)) || value >= 1n << BigInt(length * 8 - 1)) length++;
  if (size !== undefined && length > size) return undefined;
  const out = new Uint8Array(size ?? length);
  let v = value;
  for (let i = out.length - 1; i >= 0; i--) {
    out[i] = Number(v & 0xffn);
    v >>= 8n;
  }
  return out;
}

/** Whether `unscaled` has at most `precision` digits (a precision of 0 or less is not checked). */
export function fitsPrecision(unscaled: bigint, precision: number): boolean {
  if (!(precision > 0)) return true;
  const magnitude = unscaled < 0n ? -unscaled : unscaled;
  return magnitude < 10n ** BigInt(precision);
}

/** A top-level field of a log schema holding a decimal, as its writer schema declares it. */
export interface AvroDecimalField {
  readonly precision: number;
  readonly scale: number;
  /** The `fixed` size in bytes; undefined for `bytes`. */
  readonly size?: number;
}

/**
 * The top-level fields of a record schema whose type (or the one non-null branch of a nullable union) is a `bytes` or
 * `fixed` with logicalType decimal, by name. A named `fixed` is followed through `named` (as the walker follows it).
 */
export function avroDecimalFields(
  schema: SchemaJson,
  named: ReadonlyMap<string, SchemaJson>,
): Map<string, AvroDecimalField> {
  const out = new Map<string, AvroDecimalField>();
  const fields = typeof schema === 'object' && !Array.isArray(schema) ? schema.fields : undefined;
  if (!Array.isArray(fields)) return out;
  for (const field of fields as { name?: unknown; type?: SchemaJson }[]) {
    if (typeof field.name !== 'string' || field.type === undefined) continue;
    const branches = Array.isArray(field.type) ? field.type.filter((b) => b !== 'null') : [field.type];
    if (branches.length !== 1) continue;
    const decimal = decimalOf(branches[0] as SchemaJson, named);
    if (decimal !== undefined) out.set(field.name, decimal);
  }
  return out;
}

function decimalOf(type: SchemaJson, named: ReadonlyMap<string, SchemaJson>): AvroDecimalField | undefined {
  const resolved = typeof type === 'string' ? named.get(type) : type;
  if (typeof resolved !== 'object' || Array.isArray(resolved) || resolved.logicalType !== 'decimal')
    return undefined;
  const precision = Number(resolved.precision ?? 0);
  const scale = Number(resolved.scale ?? 0);
  if (resolved.type === 'bytes') return { precision, scale };
  if (resolved.type === 'fixed') return { precision, scale, size: Number(resolved.size) };
  return undefined;
}
