// Decodes an Avro object container file (manifest list or manifest) with avsc and exposes its records by Iceberg
// field id, never by name: 64-bit longs decode as BigInt (exact), and header metadata comes back as text. Also
// encodes container files for the commit path, with the writer's schema JSON (field ids included) in the header.
import { randomBytes } from 'node:crypto';
import { deflateRawSync } from 'node:zlib';
import avro from 'avsc';

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
    const byId = new Map<number, { name: string; type: SchemaJson }>();
    for (const field of schema.fields) {
      const id = Number(field['field-id']);
      if (Number.isInteger(id)) byId.set(id, { name: field.name, type: field.type });
    }
    this.byId = byId;
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

/** Every named type a schema defines, by name and full name, so `IdRecord` can follow references. */
function collectNamed(schema: SchemaJson, named: Map<string, SchemaJson>, namespace?: string): void {
  if (Array.isArray(schema)) {
    for (const branch of schema) collectNamed(branch, named, namespace);
    return;
  }
  if (typeof schema !== 'object') return;
  const ns = typeof schema.namespace === 'string' ? schema.namespace : namespace;
  if (typeof schema.name === 'string') {
    named.set(schema.name, schema);
    if (ns !== undefined && !schema.name.includes('.')) named.set(`${ns}.${schema.name}`, schema);
  }
  if (Array.isArray(schema.fields))
    for (const f of schema.fields as { type: SchemaJson }[]) collectNamed(f.type, named, ns);
  if (schema.items !== undefined) collectNamed(schema.items as SchemaJson, named, ns);
  if (schema.values !== undefined) collectNamed(schema.values as SchemaJson, named, ns);
}

/**
 * Decodes a whole container file held in memory (manifests are small: kilobytes to a few MB). Codecs `null` and
 * `deflate` (what Iceberg writers use) are built into avsc; any other codec is refused by avsc with its message.
 */
export async function decodeAvroContainer(bytes: Uint8Array): Promise<AvroContainer> {
  const metadata = new Map<string, string>();
  const values: Record<string, unknown>[] = [];
  await new Promise<void>((resolve, reject) => {
    const decoder = new avro.streams.BlockDecoder({
      parseHook: (schema: unknown) =>
        avro.Type.forSchema(schema as avro.Schema, { registry: { long: BIG_LONG }, wrapUnions: 'auto' }),
    });
    decoder.on('metadata', (_type: unknown, _codec: unknown, header: { meta: Record<string, Buffer> }) => {
      for (const [key, value] of Object.entries(header.meta)) metadata.set(key, value.toString('utf8'));
    });
    decoder.on('data', (record: Record<string, unknown>) => values.push(record));
    decoder.on('error', reject);
    decoder.on('end', () => resolve());
    decoder.end(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  });
  const schemaText = metadata.get('avro.schema');
  if (schemaText === undefined) throw new Error('the Avro header has no avro.schema');
  const schema = JSON.parse(schemaText) as SchemaJson;
  const named = new Map<string, SchemaJson>();
  collectNamed(schema, named);
  if (typeof schema !== 'object' || Array.isArray(schema) || schema.type !== 'record')
    throw new Error('the Avro schema is not a record');
  const root = schema as unknown as RecordSchema;
  return { metadata, records: values.map((v) => new IdRecord(root, v, named)) };
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
