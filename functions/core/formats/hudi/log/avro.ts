// Decodes single Avro binary datums (no container) of a log block's writer schema, the way Hudi frames them: each
// record's bytes are given alone. The bytes are untrusted, so every datum is first walked without building it —
// each array or map count and each string or bytes length checked against the bytes left — and what avsc will
// allocate for it is spent from the scan's DecodeBudget; only then does avsc decode it. 64-bit longs decode as
// BigInt always (exact past 2^53, and one type for every long, so ordering values compare without guessing).
import avro from 'avsc';
import type { DecodeBudget } from './budget.js';

/** Avro `long` as BigInt: avsc's default long refuses values past 2^53 instead of decoding them exactly. */
const BIG_LONG = avro.types.LongType.__with({
  fromBuffer: (buf: Buffer) => buf.readBigInt64LE(),
  toBuffer: (n: bigint) => {
    const buf = Buffer.alloc(8);
    buf.writeBigInt64LE(n);
    return buf;
  },
  fromJSON: (json: unknown) => BigInt(json as string),
  toJSON: (n: bigint) => n.toString(),
  isValid: (n: unknown) => typeof n === 'bigint',
  compare: (a: bigint, b: bigint) => (a === b ? 0 : a < b ? -1 : 1),
});

/** An Avro schema as JSON. */
export type SchemaJson = string | SchemaJson[] | { readonly [key: string]: unknown };

/** Deeper than any table schema Hudi writers produce; refuses a schema or value built to exhaust the stack. */
const MAX_DEPTH = 64;

/** A writer schema ready to decode datums: avsc's type and the named types the walker follows. */
export interface AvroReader {
  readonly schema: SchemaJson;
  readonly named: ReadonlyMap<string, SchemaJson>;
  readonly type: avro.Type;
  /** The top-level record's field names, in order. */
  readonly fields: readonly string[];
}

/**
 * A reader for datums of `schemaText` (a block header's SCHEMA).
 * @throws Error when the text is not an Avro record schema (the caller names the file).
 */
export function avroReader(schemaText: string): AvroReader {
  const schema = JSON.parse(schemaText) as SchemaJson;
  if (typeof schema !== 'object' || Array.isArray(schema) || schema.type !== 'record')
    throw new Error('the schema is not an Avro record');
  const named = new Map<string, SchemaJson>();
  collectNamed(schema, named, undefined, 0);
  const type = avro.Type.forSchema(plainLongs(schema, 0) as avro.Schema, {
    registry: { long: BIG_LONG },
    wrapUnions: 'auto',
  });
  const fields = ((schema.fields ?? []) as { name: string }[]).map((f) => f.name);
  return { schema, named, type, fields };
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
    checkValue(reader.schema, cursor, reader.named, 0, cost);
  } catch (err) {
    // Stopped as soon as the walk passed the budget (an array of nulls can claim a count per byte): say so by name.
    if (err instanceof OverBudget) budget.spend(cost.bytes, file);
    throw err;
  }
  budget.spend(cost.bytes, file);
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const decoded = reader.type.decode(buf, 0);
  if (decoded.offset !== cursor.pos)
    throw new Error('the record does not decode to the bytes its schema spans');
  return decoded.value as Record<string, unknown>;
}

/** The walk has already counted more than the budget has left; thrown to stop it at once. */
class OverBudget extends Error {}

/**
 * `schema` with every `{"type": "long", …}` (a timestamp-micros, a time-micros) written as plain `"long"`, because
 * avsc's registry override reaches only the named primitive: an annotated long would otherwise decode as a lossy
 * number. avsc ignores the logical type anyway; the raw long (micros since the epoch) is what Hudi stores.
 */
function plainLongs(schema: SchemaJson, depth: number): SchemaJson {
  if (depth > MAX_DEPTH) throw new Error(`the schema nests deeper than ${MAX_DEPTH} levels`);
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

/** A read position in `bytes`, never past its end: every read checks what is left. */
export class Cursor {
  pos = 0;

  constructor(readonly bytes: Uint8Array) {}

  get left(): number {
    return this.bytes.length - this.pos;
  }

  /** A zig-zag varint long as a number (exact to 2^53; callers needing counts check them). */
  long(): number {
    let result = 0;
    let factor = 1;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.bytes.length) throw new Error('the data ends inside a number');
      const b = this.bytes[this.pos++] as number;
      result += (b & 0x7f) * factor;
      if ((b & 0x80) === 0) return result % 2 === 0 ? result / 2 : -(result + 1) / 2;
      factor *= 128;
    }
    throw new Error('a number is longer than 10 bytes');
  }

  /** A zig-zag varint long, exact (for values: Avro longs may use all 64 bits). */
  bigLong(): bigint {
    let result = 0n;
    let shift = 0n;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.bytes.length) throw new Error('the data ends inside a number');
      const b = this.bytes[this.pos++] as number;
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return (result >> 1n) ^ -(result & 1n);
      shift += 7n;
    }
    throw new Error('a number is longer than 10 bytes');
  }

  /** A non-negative count or length no larger than the bytes left after it. */
  count(what: string): number {
    const n = this.long();
    if (!Number.isSafeInteger(n) || n < 0) throw new Error(`${what} ${n} is not a valid count`);
    if (n > this.left) throw new Error(`${what} ${n} is more than the ${this.left} bytes left`);
    return n;
  }

  take(n: number, what: string): Uint8Array {
    if (n > this.left) throw new Error(`${what} of ${n} bytes runs past the data`);
    const out = this.bytes.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }
}

/** Every named type a schema defines, by name and full name. */
function collectNamed(
  schema: SchemaJson,
  named: Map<string, SchemaJson>,
  namespace: string | undefined,
  depth: number,
): void {
  if (depth > MAX_DEPTH) throw new Error(`the schema nests deeper than ${MAX_DEPTH} levels`);
  if (Array.isArray(schema)) {
    for (const branch of schema) collectNamed(branch, named, namespace, depth + 1);
    return;
  }
  if (typeof schema !== 'object') return;
  const ns = typeof schema.namespace === 'string' ? schema.namespace : namespace;
  if (typeof schema.name === 'string') {
    named.set(schema.name, schema);
    if (ns !== undefined && !schema.name.includes('.')) named.set(`${ns}.${schema.name}`, schema);
    const short = schema.name.split('.').pop();
    if (short !== undefined) named.set(short, schema);
  }
  if (Array.isArray(schema.fields))
    for (const f of schema.fields as { type: SchemaJson }[]) collectNamed(f.type, named, ns, depth + 1);
  if (schema.items !== undefined) collectNamed(schema.items as SchemaJson, named, ns, depth + 1);
  if (schema.values !== undefined) collectNamed(schema.values as SchemaJson, named, ns, depth + 1);
  if (typeof schema.type === 'object' && schema.type !== null)
    collectNamed(schema.type as SchemaJson, named, ns, depth + 1);
}

const PRIMITIVES = new Set(['null', 'boolean', 'int', 'long', 'float', 'double', 'bytes', 'string']);

/** The type a schema names: a named type followed by its name, `{"type": "long", …}` as `long`. */
function resolveType(t: SchemaJson, named: ReadonlyMap<string, SchemaJson>): SchemaJson {
  if (typeof t === 'string') {
    if (PRIMITIVES.has(t)) return t;
    const found = named.get(t) ?? named.get(t.split('.').pop() ?? t);
    if (found === undefined) throw new Error(`the schema names an undefined type ${t}`);
    return found;
  }
  if (!Array.isArray(t) && typeof t.type === 'string' && PRIMITIVES.has(t.type)) return t.type;
  if (!Array.isArray(t) && typeof t.type === 'object' && t.type !== null) return t.type as SchemaJson;
  return t;
}

/** Whether values of `t` encode in zero bytes (null, or a record of such fields). */
function zeroSize(t: SchemaJson, named: ReadonlyMap<string, SchemaJson>, depth: number): boolean {
  if (depth > MAX_DEPTH) return false;
  const r = resolveType(t, named);
  if (r === 'null') return true;
  if (typeof r !== 'object' || Array.isArray(r) || r.type !== 'record') return false;
  return ((r.fields ?? []) as { type: SchemaJson }[]).every((f) => zeroSize(f.type, named, depth + 1));
}

/**
 * Walks one value of `t` at `c` without building it, checking every count and length against the bytes left and
 * adding what avsc will allocate for it to `cost` (approximately: values, Buffer views, object overheads).
 */
function checkValue(
  t: SchemaJson,
  c: Cursor,
  named: ReadonlyMap<string, SchemaJson>,
  depth: number,
  cost: { bytes: number; readonly limit: number },
): void {
  if (cost.bytes > cost.limit) throw new OverBudget();
  if (depth > MAX_DEPTH) throw new Error(`a value nests deeper than ${MAX_DEPTH} levels`);
  const r = resolveType(t, named);
  if (Array.isArray(r)) {
    const branch = c.long();
    if (!(branch >= 0 && branch < r.length)) throw new Error(`a union names branch ${branch} of ${r.length}`);
    checkValue(r[branch] as SchemaJson, c, named, depth + 1, cost);
    return;
  }
  if (typeof r === 'string') {
    switch (r) {
      case 'null':
        return;
      case 'boolean':
        c.take(1, 'a boolean');
        cost.bytes += 8;
        return;
      case 'int':
      case 'long':
        c.long();
        cost.bytes += 24;
        return;
      case 'float':
        c.take(4, 'a float');
        cost.bytes += 8;
        return;
      case 'double':
        c.take(8, 'a double');
        cost.bytes += 8;
        return;
      default: {
        const n = c.count(`a ${r} length`);
        c.pos += n;
        cost.bytes += n + (r === 'bytes' ? 100 : 24);
        return;
      }
    }
  }
  switch (r.type) {
    case 'record':
    case 'error': {
      const fields = (r.fields ?? []) as { type: SchemaJson }[];
      cost.bytes += 32 + 16 * fields.length;
      for (const f of fields) checkValue(f.type, c, named, depth + 1, cost);
      return;
    }
    case 'enum': {
      const index = c.long();
      const symbols = Array.isArray(r.symbols) ? r.symbols.length : 0;
      if (!(index >= 0 && index < symbols)) throw new Error(`an enum names symbol ${index} of ${symbols}`);
      cost.bytes += 8;
      return;
    }
    case 'fixed': {
      c.take(Number(r.size), 'a fixed value');
      cost.bytes += Number(r.size) + 100;
      return;
    }
    case 'array':
    case 'map': {
      cost.bytes += 64;
      for (;;) {
        let n = c.long();
        if (n === 0) return;
        if (n < 0) {
          n = -n;
          c.count(`a block size of an ${r.type}`);
        }
        // Each element takes at least one byte, unless the items encode in none (nulls, empty records): their
        // count is bounded by the budget instead, checked per element below, so the walk stops at the budget.
        if (
          !Number.isSafeInteger(n) ||
          (n > c.left && (r.type === 'map' || !zeroSize(r.items as SchemaJson, named, 0)))
        )
          throw new Error(`an ${r.type} block claims ${n} elements in the ${c.left} bytes left`);
        for (let i = 0; i < n; i++) {
          if (r.type === 'map') {
            const keyLength = c.count('a map key length');
            c.pos += keyLength;
            cost.bytes += keyLength + 40;
            checkValue(r.values as SchemaJson, c, named, depth + 1, cost);
          } else {
            cost.bytes += 8;
            checkValue(r.items as SchemaJson, c, named, depth + 1, cost);
          }
          if (cost.bytes > cost.limit) throw new OverBudget();
        }
      }
    }
    default:
      throw new Error(`the schema has a type ${JSON.stringify(r.type)} Avro does not define`);
  }
}
