// One bounded walker for Avro binary datums, shared by the object container codec (./container.ts: Iceberg
// manifests, Hudi timeline files) and Hudi's log blocks (single datums per record). The bytes are untrusted, so a
// datum is walked without building it before avsc decodes it: every count and length is checked against the bytes
// left, and what avsc will allocate for it is costed against a budget, so a lying file fails with a bounded error
// instead of exhausting memory. Why one walker: the bounds rules (notably for items that encode in zero bytes) must
// be the same wherever untrusted Avro is read.
import avro from 'avsc';

/**
 * Avro `long` as BigInt: Iceberg snapshot ids and sequence numbers (and Hudi's longs) exceed 2^53, and avsc's
 * default long refuses them instead of decoding them exactly.
 */
export const BIG_LONG = avro.types.LongType.__with({
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

/** An Avro schema as JSON (a writer schema from a file header). */
export type SchemaJson = string | SchemaJson[] | { readonly [key: string]: unknown };

/**
 * Deeper than any schema Iceberg or Hudi writes (manifest_entry → data_file → partition; a clustering plan's slices);
 * refuses a schema or value built to exhaust the stack.
 */
export const MAX_AVRO_DEPTH = 64;

/** A read position in `bytes`, never past `end`: every read checks what is left. */
export class Cursor {
  constructor(
    readonly bytes: Uint8Array,
    public pos = 0,
    readonly end: number = bytes.length,
  ) {}

  get left(): number {
    return this.end - this.pos;
  }

  /** A zig-zag varint long as a number (exact up to 2^53; callers needing counts check them). */
  long(): number {
    let result = 0;
    let factor = 1;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw new Error('the data ends inside a number');
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
      if (this.pos >= this.end) throw new Error('the data ends inside a number');
      const b = this.bytes[this.pos++] as number;
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return (result >> 1n) ^ -(result & 1n);
      shift += 7n;
    }
    throw new Error('a number is longer than 10 bytes');
  }

  /** A non-negative long no larger than the bytes left after it (a count or length that must fit them). */
  count(what: string): number {
    const n = this.long();
    if (!Number.isSafeInteger(n) || n < 0) throw new Error(`${what} ${n} is not a valid count`);
    if (n > this.left) throw new Error(`${what} ${n} is more than the ${this.left} bytes left`);
    return n;
  }

  /** The next `n` bytes (a view, not a copy). */
  take(n: number, what: string): Uint8Array {
    if (n > this.left) throw new Error(`${what} of ${n} bytes runs past the data`);
    const out = this.bytes.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  skip(n: number, what: string): void {
    if (n > this.left) throw new Error(`${what} of ${n} bytes runs past the data`);
    this.pos += n;
  }
}

/** How {@link collectNamed} registers names. */
export interface NamedOptions {
  /**
   * Also register each dotted name by its last segment. Hudi's log schemas reference types by short name across
   * namespaces (what Hudi's own Avro reading tolerates); container headers keep names as written.
   */
  readonly shortNames?: boolean;
}

/**
 * Every named type a schema defines, by name and full name (and short name if told), so a walk can follow
 * references.
 * @throws Error when the schema nests deeper than MAX_AVRO_DEPTH.
 */
export function collectNamed(schema: SchemaJson, options: NamedOptions = {}): Map<string, SchemaJson> {
  const named = new Map<string, SchemaJson>();
  collectInto(schema, named, undefined, 0, options.shortNames === true);
  return named;
}

function collectInto(
  schema: SchemaJson,
  named: Map<string, SchemaJson>,
  namespace: string | undefined,
  depth: number,
  shortNames: boolean,
): void {
  if (depth > MAX_AVRO_DEPTH) throw new Error(`the schema nests deeper than ${MAX_AVRO_DEPTH} levels`);
  if (Array.isArray(schema)) {
    for (const branch of schema) collectInto(branch, named, namespace, depth + 1, shortNames);
    return;
  }
  if (typeof schema !== 'object') return;
  const ns = typeof schema.namespace === 'string' ? schema.namespace : namespace;
  if (typeof schema.name === 'string') {
    named.set(schema.name, schema);
    if (ns !== undefined && !schema.name.includes('.')) named.set(`${ns}.${schema.name}`, schema);
    const short = schema.name.split('.').pop();
    if (shortNames && short !== undefined) named.set(short, schema);
  }
  if (Array.isArray(schema.fields))
    for (const f of schema.fields as { type: SchemaJson }[])
      collectInto(f.type, named, ns, depth + 1, shortNames);
  if (schema.items !== undefined) collectInto(schema.items as SchemaJson, named, ns, depth + 1, shortNames);
  if (schema.values !== undefined) collectInto(schema.values as SchemaJson, named, ns, depth + 1, shortNames);
  if (typeof schema.type === 'object' && schema.type !== null)
    collectInto(schema.type as SchemaJson, named, ns, depth + 1, shortNames);
}

const PRIMITIVE_SIZES: Readonly<Record<string, number>> = {
  null: 0,
  boolean: 1,
  int: 1,
  long: 1,
  float: 4,
  double: 8,
  bytes: 1,
  string: 1,
};

/**
 * The type a schema names: a named type followed by its name (then by its last segment, for schemas that reference
 * across namespaces by short name), `{"type": "long", …}` as `long`.
 * @throws Error when a name is not defined.
 */
export function resolveType(t: SchemaJson, named: ReadonlyMap<string, SchemaJson>): SchemaJson {
  if (typeof t === 'string') {
    if (t in PRIMITIVE_SIZES) return t;
    const found = named.get(t) ?? named.get(t.split('.').pop() ?? t);
    if (found === undefined) throw new Error(`the schema names an undefined type ${t}`);
    return found;
  }
  if (!Array.isArray(t) && typeof t.type === 'string' && t.type in PRIMITIVE_SIZES) return t.type;
  if (!Array.isArray(t) && typeof t.type === 'object' && t.type !== null) return t.type as SchemaJson;
  return t;
}

/**
 * The fewest bytes a value of `t` encodes in (a recursive reference counts as one byte: a union index). Zero for
 * null, a fixed of size 0, and records of only such fields: a count of those cannot be checked against the bytes.
 */
export function minEncodedSize(t: SchemaJson, named: ReadonlyMap<string, SchemaJson>): number {
  return minSize(t, named, new Set(), 0);
}

function minSize(
  t: SchemaJson,
  named: ReadonlyMap<string, SchemaJson>,
  visiting: Set<SchemaJson>,
  depth: number,
): number {
  if (depth > MAX_AVRO_DEPTH) throw new Error(`the schema nests deeper than ${MAX_AVRO_DEPTH} levels`);
  const r = resolveType(t, named);
  if (typeof r === 'string') return PRIMITIVE_SIZES[r] as number;
  if (Array.isArray(r)) return 1;
  if (visiting.has(r)) return 1;
  switch (r.type) {
    case 'record':
    case 'error': {
      visiting.add(r);
      let sum = 0;
      for (const f of (r.fields ?? []) as { type: SchemaJson }[])
        sum += minSize(f.type, named, visiting, depth + 1);
      visiting.delete(r);
      return sum;
    }
    case 'fixed':
      return Number(r.size);
    default:
      // enum (an index), array and map (a block count), a logical type over one of those
      return 1;
  }
}

/** What a walk may allocate: `bytes` counted so far (the caller may start it above zero) and the `limit`. */
export interface DatumCost {
  bytes: number;
  readonly limit: number;
}

/**
 * The walk counted more than its cost limit and stopped at once; the caller turns it into its own typed error
 * naming the file (this module does not know which file it walks).
 */
export class DatumOverBudget extends Error {
  override readonly name = 'DatumOverBudget';
}

/**
 * Walks one value of `t` at `c` without building it, checking every count and length against the bytes left and
 * adding what avsc will allocate for it to `cost` (approximately: values, Buffer views, object overheads). Every
 * array or map element takes at least one byte, except array items that encode in none (nulls, empty records): a
 * count of those is valid past the bytes left, and is bounded by the cost limit instead, checked per element, so a
 * huge claimed count stops at the limit.
 * @throws DatumOverBudget as soon as `cost.bytes` passes `cost.limit`.
 * @throws Error for anything malformed.
 */
export function checkDatum(
  t: SchemaJson,
  c: Cursor,
  named: ReadonlyMap<string, SchemaJson>,
  cost: DatumCost,
): void {
  checkValue(t, c, named, 0, cost);
}

function checkValue(
  t: SchemaJson,
  c: Cursor,
  named: ReadonlyMap<string, SchemaJson>,
  depth: number,
  cost: DatumCost,
): void {
  if (cost.bytes > cost.limit) throw new DatumOverBudget();
  if (depth > MAX_AVRO_DEPTH) throw new Error(`a value nests deeper than ${MAX_AVRO_DEPTH} levels`);
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
        c.skip(1, 'a boolean');
        cost.bytes += 8;
        return;
      case 'int':
      case 'long':
        c.long();
        cost.bytes += 24;
        return;
      case 'float':
        c.skip(4, 'a float');
        cost.bytes += 8;
        return;
      case 'double':
        c.skip(8, 'a double');
        cost.bytes += 8;
        return;
      default: {
        // bytes (a Buffer view: ~100 bytes of object) or string (its characters)
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
      c.skip(Number(r.size), 'a fixed value');
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
        // Each element takes at least one byte (a map entry: its key's length), as Avro Java checks too, unless
        // the items encode in none: their count is bounded by the cost limit instead, checked per element below.
        if (
          !Number.isSafeInteger(n) ||
          (n > c.left && (r.type === 'map' || minEncodedSize(r.items as SchemaJson, named) > 0))
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
          if (cost.bytes > cost.limit) throw new DatumOverBudget();
        }
      }
    }
    default:
      throw new Error(`the schema has a type ${JSON.stringify(r.type)} Avro does not define`);
  }
}
