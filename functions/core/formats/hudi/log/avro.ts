// Decodes single Avro binary datums (no container) of a log block's writer schema, the way Hudi frames them: each
// record's bytes are given alone. The bytes are untrusted, so every datum is first walked without building it —
// each array or map count and each string or bytes length checked against the bytes left — and what avsc will
// allocate for it is spent from the scan's DecodeBudget (the walker is core/avro/datum.ts, shared with the container
// codec); only then does avsc decode it. 64-bit longs decode as
// BigInt always (exact past 2^53, and one type for every long, so ordering values compare without guessing), and a
// top-level decimal (`bytes` or `fixed` with logicalType decimal) as its unscaled integer and scale (decimal.ts).
import avro from 'avsc';
import {
  BIG_LONG,
  Cursor,
  checkDatum,
  collectNamed,
  DatumOverBudget,
  MAX_AVRO_DEPTH,
  type SchemaJson,
} from '../../../avro/datum.js';
import type { DecodeBudget } from './budget.js';
import { type AvroDecimalField, avroDecimalFields, twosComplement } from './decimal.js';

export { Cursor, type SchemaJson } from '../../../avro/datum.js';

/** A writer schema ready to decode datums: avsc's type and the named types the walker follows. */
export interface AvroReader {
  readonly schema: SchemaJson;
  readonly named: ReadonlyMap<string, SchemaJson>;
  readonly type: avro.Type;
  /** The top-level record's field names, in order. */
  readonly fields: readonly string[];
  /** The top-level fields holding decimals, by name (see decimal.ts). */
  readonly decimals: ReadonlyMap<string, AvroDecimalField>;
}

/**
 * A reader for datums of `schemaText` (a block header's SCHEMA).
 * @throws Error when the text is not an Avro record schema (the caller names the file).
 */
export function avroReader(schemaText: string): AvroReader {
  const schema = JSON.parse(schemaText) as SchemaJson;
  if (typeof schema !== 'object' || Array.isArray(schema) || schema.type !== 'record')
    throw new Error('the schema is not an Avro record');
  const named = collectNamed(schema, { shortNames: true });
  const type = avro.Type.forSchema(plainLongs(schema, 0) as avro.Schema, {
    registry: { long: BIG_LONG },
    wrapUnions: 'auto',
  });
  const fields = ((schema.fields ?? []) as { name: string }[]).map((f) => f.name);
  return { schema, named, type, fields, decimals: avroDecimalFields(schema, named) };
}

/**
 * One datum of `reader`'s schema from `bytes` (exactly one record's bytes, as Hudi frames them), its cost spent from
 * `budget` before avsc builds it.
 * @throws Error when the bytes do not hold a datum of the schema (the caller names the file and offset).
 * @throws MetadataTooLargeError (from the budget) when the scan's records would outgrow it.
 */
export function decodeDatum(
  reader: AvroReader,
  bytes: Uint8Array,
  budget: DecodeBudget,
  file: string,
): Record<string, unknown> {
  const cursor = new Cursor(bytes);
  const cost = { bytes: 0, limit: budget.limit - budget.spent };
  try {
    checkDatum(reader.schema, cursor, reader.named, cost);
  } catch (err) {
    // Stopped as soon as the walk passed the budget (an array of nulls can claim a count per byte): say so by name.
    if (err instanceof DatumOverBudget) budget.spend(cost.bytes, file);
    throw err;
  }
  budget.spend(cost.bytes, file);
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const decoded = reader.type.decode(buf, 0);
  if (decoded.offset !== cursor.pos)
    throw new Error('the record does not decode to the bytes its schema spans');
  const record = decoded.value as Record<string, unknown>;
  // avsc knows no decimal logical type: it hands the two's-complement bytes, whose scale only the schema says.
  for (const [name, decimal] of reader.decimals) {
    const raw = record[name];
    if (raw instanceof Uint8Array) record[name] = { unscaled: twosComplement(raw), scale: decimal.scale };
  }
  return record;
}

/**
 * `schema` with every `{"type": "long", …}` (a timestamp-micros, a time-micros) written as plain `"long"`, because
 * avsc's registry override reaches only the named primitive: an annotated long would otherwise decode as a lossy
 * number. avsc ignores the logical type anyway; the raw long (micros since the epoch) is what Hudi stores.
 */
function plainLongs(schema: SchemaJson, depth: number): SchemaJson {
  if (depth > MAX_AVRO_DEPTH) throw new Error(`the schema nests deeper than ${MAX_AVRO_DEPTH} levels`);
  if (Array.isArray(schema)) return schema.map((s) => plainLongs(s, depth + 1));
  if (typeof schema !== 'object') return schema;
  if (schema.type === 'long') return 'long';
  const out: Record<string, unknown> = { ...schema };
  if (typeof schema.type === 'object' && schema.type !== null)
    out.type = plainLongs(schema.type as SchemaJson, depth + 1);
  if (Array.isArray(schema.fields))
    out.fields = (schema.fields as { type: SchemaJson }[]).map((f) => ({
      ...f,
      type: plainLongs(f.type, depth + 1),
    }));
  if (schema.items !== undefined) out.items = plainLongs(schema.items as SchemaJson, depth + 1);
  if (schema.values !== undefined) out.values = plainLongs(schema.values as SchemaJson, depth + 1);
  return out;
}
