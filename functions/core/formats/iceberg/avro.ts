// Decodes an Avro object container file (manifest list or manifest) by Iceberg field id, never by name: 64-bit
// longs decode as BigInt (exact), and header metadata comes back as text. Every count and length the file claims
// is checked against the bytes present and the memory budget before anything is allocated for it. Also encodes
// container files for the commit path, with the writer's schema JSON (field ids included) in the header.
import { randomBytes } from 'node:crypto';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import avro from 'avsc';
import { currentMetadataLimits, describeBytes, inflationLimit } from '../../memory-budget.js';

/**
 * Avro `long` as BigInt: snapshot ids and sequence numbers exceed 2^53, and avsc's default long refuses them. The
 * commit path's manifest writer will use it too.
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

/** An Avro schema as JSON (the writer schema from the file header). */
type SchemaJson = string | SchemaJson[] | { readonly [key: string]: unknown };

interface RecordSchema {
  readonly type: 'record';
  readonly name: string;
  readonly fields: readonly {
    readonly name: string;
    readonly type: SchemaJson;
    readonly 'field-id'?: unknown;
  }[];
}

/** One decoded file: its header metadata (Iceberg writes the spec, schema, format version there) and records. */
export interface AvroContainer {
  readonly metadata: ReadonlyMap<string, string>;
  readonly records: readonly IdRecord[];
}

/**
 * A decoded Avro record read by Iceberg field id. Why: writers name manifest fields differently
 * (`added_data_files_count` vs `added_files_count` for field 504) and partition fields are named by the table,
 * so the field id in the writer schema (`field-id`) is the only stable key.
 */
export class IdRecord {
  private readonly byId: ReadonlyMap<number, { name: string; type: SchemaJson }>;

  constructor(
    schema: RecordSchema,
    private readonly value: Readonly<Record<string, unknown>>,
    private readonly named: ReadonlyMap<string, SchemaJson>,
  ) {
    this.byId = fieldsById(schema);
  }

  /** The field ids the writer's schema declares, in schema order. */
  get fieldIds(): number[] {
    return [...this.byId.keys()];
  }

  /** The Avro name the writer gave field `id` (for messages). */
  nameOf(id: number): string | undefined {
    return this.byId.get(id)?.name;
  }

  /** Whether the writer's schema has field `id` at all (absent ≠ null: v1 manifests lack v2 fields). */
  has(id: number): boolean {
    return this.byId.has(id);
  }

  /** Field `id`'s value (BigInt for longs, Buffer for bytes), or undefined when absent or null. */
  get(id: number): unknown {
    const field = this.byId.get(id);
    if (field === undefined) return undefined;
    const v = this.value[field.name];
    return v === null ? undefined : v;
  }

  /** Field `id` as a nested record, or undefined when absent or null. */
  record(id: number): IdRecord | undefined {
    const field = this.byId.get(id);
    const v = this.get(id);
    if (field === undefined || v === undefined) return undefined;
    const schema = this.resolveRecord(field.type);
    return schema === undefined ? undefined : new IdRecord(schema, v as Record<string, unknown>, this.named);
  }

  /** Field `id` as an array of records (an Iceberg list of structs), or undefined when absent or null. */
  records(id: number): IdRecord[] | undefined {
    const field = this.byId.get(id);
    const v = this.get(id);
    if (field === undefined || !Array.isArray(v)) return undefined;
    const array = this.resolve(field.type);
    const items =
      typeof array === 'object' && !Array.isArray(array)
        ? this.resolveRecord(array.items as SchemaJson)
        : undefined;
    if (items === undefined) return undefined;
    return v.map((item) => new IdRecord(items, item as Record<string, unknown>, this.named));
  }

  /** The record's fields in writer order as (field id, value) pairs — a partition tuple. */
  entries(): [number, unknown][] {
    return [...this.byId.keys()].map((id) => [id, this.get(id)]);
  }

  private resolve(type: SchemaJson): SchemaJson {
    if (Array.isArray(type)) {
      const branch = type.find((t) => t !== 'null');
      return branch === undefined ? 'null' : this.resolve(branch);
    }
    if (typeof type === 'string') return this.named.get(type) ?? type;
    return type;
  }

  private resolveRecord(type: SchemaJson): RecordSchema | undefined {
    const t = this.resolve(type);
    return typeof t === 'object' && !Array.isArray(t) && t.type === 'record'
      ? (t as unknown as RecordSchema)
      : undefined;
  }
}

/** Each record schema's fields by id, built once per schema: a manifest holds thousands of records of one schema. */
const fieldsByIdOf = new WeakMap<RecordSchema, ReadonlyMap<number, { name: string; type: SchemaJson }>>();

function fieldsById(schema: RecordSchema): ReadonlyMap<number, { name: string; type: SchemaJson }> {
  let byId = fieldsByIdOf.get(schema);
  if (byId === undefined) {
    const built = new Map<number, { name: string; type: SchemaJson }>();
    for (const field of schema.fields) {
      const id = Number(field['field-id']);
      if (Number.isInteger(id)) built.set(id, { name: field.name, type: field.type });
    }
    byId = built;
    fieldsByIdOf.set(schema, byId);
  }
  return byId;
}

/** Every named type a schema defines, by name and full name, so `IdRecord` can follow references. */
function collectNamed(
  schema: SchemaJson,
  named: Map<string, SchemaJson>,
  namespace: string | undefined,
  depth: number,
): void {
  if (depth > MAX_AVRO_DEPTH) throw new Error(`the schema nests deeper than ${MAX_AVRO_DEPTH} levels`);
  if (Array.isArray(schema)) {
    for (const branch of schema) collectNamed(branch, named, namespace, depth + 1);
    return;
  }
  if (typeof schema !== 'object') return;
  const ns = typeof schema.namespace === 'string' ? schema.namespace : namespace;
  if (typeof schema.name === 'string') {
    named.set(schema.name, schema);
    if (ns !== undefined && !schema.name.includes('.')) named.set(`${ns}.${schema.name}`, schema);
  }
  if (Array.isArray(schema.fields))
    for (const f of schema.fields as { type: SchemaJson }[]) collectNamed(f.type, named, ns, depth + 1);
  if (schema.items !== undefined) collectNamed(schema.items as SchemaJson, named, ns, depth + 1);
  if (schema.values !== undefined) collectNamed(schema.values as SchemaJson, named, ns, depth + 1);
}

/** What one container file may cost: its records decoded, and its deflate blocks inflated (together). */
export interface AvroLimits {
  /** Heap bytes the records may take once decoded (estimated per value while checking, before avsc decodes). */
  readonly decodedBytes: number;
  /** Bytes the file's blocks may inflate to, together (also at most MAX_INFLATION_RATIO times the file). */
  readonly inflatedBytes: number;
}

/**
 * The file is well formed but would take more memory than `AvroLimits` allow: the caller turns it into a
 * MetadataTooLargeError naming the file (this module does not know which file it decodes).
 */
export class AvroLimitError extends Error {
  override readonly name = 'AvroLimitError';
}

/** Deeper than any schema Iceberg writes (manifest_entry → data_file → partition / a map's key-value record). */
const MAX_AVRO_DEPTH = 64;

/**
 * Decodes a whole container file held in memory, checking as Avro Java's `SystemLimitException` does that nothing
 * it claims exceeds what is there: every record, array or map count against the bytes left (each element takes at
 * least one byte), every string or bytes length against the bytes left, each block's size against the file, and
 * the inflated blocks and the decoded records against `limits` (by default the current memory budget's). A record
 * schema that encodes in zero bytes is refused, since a block could then claim any number of records. Codecs:
 * `null` and `deflate`, what Iceberg writers use.
 * @throws AvroLimitError when the file is well formed but over `limits`.
 * @throws Error for anything malformed (the caller names the file).
 */
export async function decodeAvroContainer(
  bytes: Uint8Array,
  limits: AvroLimits = {
    decodedBytes: currentMetadataLimits().decodedBytes,
    inflatedBytes: currentMetadataLimits().inflatedBytes,
  },
): Promise<AvroContainer> {
  const cursor = new Cursor(bytes, 0, bytes.length);
  const header = readHeader(cursor);
  const schemaText = header.metadata.get('avro.schema');
  if (schemaText === undefined) throw new Error('the Avro header has no avro.schema');
  const schema = JSON.parse(schemaText) as SchemaJson;
  if (typeof schema !== 'object' || Array.isArray(schema) || schema.type !== 'record')
    throw new Error('the Avro schema is not a record');
  const named = new Map<string, SchemaJson>();
  collectNamed(schema, named, undefined, 0);
  const root = schema as unknown as RecordSchema;
  if (minEncodedSize(schema, named, new Set(), 0) === 0)
    throw new Error(
      'the record schema encodes in zero bytes, so its block counts cannot be checked against the data',
    );
  const codec = header.metadata.get('avro.codec') ?? 'null';
  if (codec !== 'null' && codec !== 'deflate')
    throw new Error(`codec ${codec} is not supported (Iceberg writes null or deflate)`);
  const type = avro.Type.forSchema(schema as avro.Schema, {
    registry: { long: BIG_LONG },
    wrapUnions: 'auto',
  });

  const maxInflated = inflationLimit(bytes.length, limits.inflatedBytes);
  const cost = { bytes: 0 };
  let inflated = 0;
  const records: IdRecord[] = [];
  while (cursor.pos < cursor.end) {
    const count = cursor.count('block record count');
    const size = cursor.count('block size');
    if (size + 16 > cursor.end - cursor.pos)
      throw new Error(`a block claims ${size} bytes but only ${cursor.end - cursor.pos - 16} are left`);
    const data = bytes.subarray(cursor.pos, cursor.pos + size);
    cursor.pos += size;
    if (!equalBytes(bytes.subarray(cursor.pos, cursor.pos + 16), header.sync))
      throw new Error("a block does not end with the header's sync marker");
    cursor.pos += 16;
    let block: Uint8Array = data;
    if (codec === 'deflate') {
      try {
        block = inflateRawSync(data, { maxOutputLength: Math.max(1, maxInflated - inflated) });
      } catch (err) {
        if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE')
          throw new AvroLimitError(
            `its deflate blocks inflate to more than ${describeBytes(maxInflated)} (at most ${describeBytes(limits.inflatedBytes)}, or 200 times its ${describeBytes(bytes.length)})`,
          );
        throw new Error(`a deflate block does not inflate (${(err as Error).message})`);
      }
      inflated += block.length;
    }
    // Each record takes at least one byte (a zero-byte schema was refused above).
    if (count > block.length)
      throw new Error(`a block claims ${count} records but holds ${block.length} bytes`);
    const buffer = Buffer.from(block.buffer, block.byteOffset, block.byteLength);
    const inBlock = new Cursor(block, 0, block.length);
    for (let i = 0; i < count; i++) {
      const start = inBlock.pos;
      checkValue(schema, inBlock, named, 0, cost);
      if (cost.bytes > limits.decodedBytes)
        throw new AvroLimitError(
          `its records would take more than ${describeBytes(limits.decodedBytes)} decoded (after ${records.length} records)`,
        );
      const decoded = type.decode(buffer, start);
      if (decoded.offset !== inBlock.pos)
        throw new Error(`record ${records.length} does not decode to the bytes its schema spans`);
      records.push(new IdRecord(root, decoded.value as Record<string, unknown>, named));
    }
  }
  return { metadata: header.metadata, records };
}

/** A read position in `bytes`, never past `end`: every read checks what is left. */
class Cursor {
  constructor(
    readonly bytes: Uint8Array,
    public pos: number,
    readonly end: number,
  ) {}

  /** A zig-zag varint long as a number (exact up to 2^53; larger magnitudes are refused by every caller). */
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

  /** A non-negative long no larger than the bytes left after it (a count or length that must fit them). */
  count(what: string): number {
    const n = this.long();
    if (!Number.isSafeInteger(n) || n < 0) throw new Error(`${what} ${n} is not a valid count`);
    const left = this.end - this.pos;
    if (n > left) throw new Error(`${what} ${n} is more than the ${left} bytes left`);
    return n;
  }

  skip(n: number, what: string): void {
    if (n > this.end - this.pos) throw new Error(`${what} of ${n} bytes runs past the data`);
    this.pos += n;
  }
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

const MAGIC = [0x4f, 0x62, 0x6a, 0x01];

/** The container header (magic, metadata map, sync marker), every length checked against the bytes. */
function readHeader(c: Cursor): { metadata: Map<string, string>; sync: Uint8Array } {
  if (c.end < MAGIC.length + 1 + 16 || MAGIC.some((b, i) => c.bytes[i] !== b))
    throw new Error('not an Avro object container file (no "Obj\\x01" magic)');
  c.pos = MAGIC.length;
  const metadata = new Map<string, string>();
  const text = new TextDecoder();
  for (;;) {
    let n = c.long();
    if (n === 0) break;
    if (n < 0) {
      n = -n;
      c.count('header block size');
    }
    // Each entry is at least two bytes (two empty strings).
    if (!Number.isSafeInteger(n) || n > (c.end - c.pos) / 2)
      throw new Error(`the header claims ${n} metadata entries in ${c.end - c.pos} bytes`);
    for (let i = 0; i < n; i++) {
      const keyLength = c.count('a header key length');
      const key = text.decode(c.bytes.subarray(c.pos, c.pos + keyLength));
      c.pos += keyLength;
      const valueLength = c.count('a header value length');
      metadata.set(key, text.decode(c.bytes.subarray(c.pos, c.pos + valueLength)));
      c.pos += valueLength;
    }
  }
  if (c.end - c.pos < 16) throw new Error('the header ends before its sync marker');
  const sync = c.bytes.slice(c.pos, c.pos + 16);
  c.pos += 16;
  return { metadata, sync };
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

/** The type a schema names: a named type followed by its name, `{"type": "long", …}` as `long`. */
function resolveType(t: SchemaJson, named: ReadonlyMap<string, SchemaJson>): SchemaJson {
  if (typeof t === 'string') {
    if (t in PRIMITIVE_SIZES) return t;
    const found = named.get(t);
    if (found === undefined) throw new Error(`the schema names an undefined type ${t}`);
    return found;
  }
  if (!Array.isArray(t) && typeof t.type === 'string' && t.type in PRIMITIVE_SIZES) return t.type;
  if (!Array.isArray(t) && typeof t.type === 'object' && t.type !== null) return t.type as SchemaJson;
  return t;
}

/** The fewest bytes a value of `t` encodes in (a recursive reference counts as one byte: a union index). */
function minEncodedSize(
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
        sum += minEncodedSize(f.type, named, visiting, depth + 1);
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

/**
 * Walks one value of `t` at `c` without building it, checking every count and length against the bytes left and
 * adding what avsc will allocate for it to `cost` (the value, Buffer views and object overheads, approximately).
 */
function checkValue(
  t: SchemaJson,
  c: Cursor,
  named: ReadonlyMap<string, SchemaJson>,
  depth: number,
  cost: { bytes: number },
): void {
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
        // Each element takes at least one byte (a map entry: its key's length), as Avro Java checks too.
        if (!Number.isSafeInteger(n) || n > c.end - c.pos)
          throw new Error(`an ${r.type} block claims ${n} elements in the ${c.end - c.pos} bytes left`);
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
        }
      }
    }
    default:
      throw new Error(`the schema has a type ${JSON.stringify(r.type)} Avro does not define`);
  }
}

/** Avro's zig-zag varint encoding of a long (block counts, lengths). */
function zigzag(n: number): Buffer {
  let v = BigInt(n) >= 0n ? BigInt(n) << 1n : (-BigInt(n) << 1n) - 1n;
  const out: number[] = [];
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v !== 0n) byte |= 0x80;
    out.push(byte);
  } while (v !== 0n);
  return Buffer.from(out);
}

function avroBytes(b: Buffer): Buffer {
  return Buffer.concat([zigzag(b.length), b]);
}

/** Records per container block: Iceberg writers use blocks of a few thousand entries; any size reads the same. */
const RECORDS_PER_BLOCK = 1000;

/**
 * Encodes an Avro object container file (deflate codec) holding `records` under `schema`, with `metadata` in the
 * header. The header's `avro.schema` is `schema` exactly as given. Why not avsc's BlockEncoder: given a Type
 * (needed for BigInt longs) it writes the schema without the `field-id` attributes, and Iceberg readers find
 * manifest fields by those ids.
 * @throws Error from avsc when a record does not match the schema (a bug of the caller, never data-dependent).
 */
export function encodeAvroContainer(
  schema: object,
  records: readonly unknown[],
  metadata: Readonly<Record<string, string>>,
): Uint8Array {
  const type = avro.Type.forSchema(schema as avro.Schema, { registry: { long: BIG_LONG } });
  const sync = randomBytes(16);
  const meta: Record<string, string> = {
    ...metadata,
    'avro.schema': JSON.stringify(schema),
    'avro.codec': 'deflate',
  };
  const entries = Object.entries(meta);
  const parts: Buffer[] = [Buffer.from([0x4f, 0x62, 0x6a, 0x01])];
  if (entries.length > 0) {
    parts.push(zigzag(entries.length));
    for (const [k, v] of entries)
      parts.push(avroBytes(Buffer.from(k, 'utf8')), avroBytes(Buffer.from(v, 'utf8')));
  }
  parts.push(zigzag(0), sync);
  for (let start = 0; start < records.length; start += RECORDS_PER_BLOCK) {
    const block = records.slice(start, start + RECORDS_PER_BLOCK);
    const raw = Buffer.concat(block.map((r) => type.toBuffer(r)));
    const compressed = deflateRawSync(raw);
    parts.push(zigzag(block.length), zigzag(compressed.length), compressed, sync);
  }
  return new Uint8Array(Buffer.concat(parts));
}
