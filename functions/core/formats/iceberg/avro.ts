// Decodes an Avro object container file (manifest list or manifest) by Iceberg field id, never by name: the bounded
// container codec is shared (core/avro/container.ts: every count and length checked against the bytes and the memory
// budget, longs as BigInt); what is Iceberg's is reading records by the `field-id` of the writer's schema, and
// encoding manifests with deflate, as Iceberg writers do.
import {
  type AvroLimits,
  decodeContainer,
  encodeContainer,
  type RecordSchema,
  type SchemaJson,
} from '../../avro/container.js';

export { AvroLimitError, type AvroLimits, BIG_LONG } from '../../avro/container.js';

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

/**
 * Decodes a whole container file held in memory with the shared bounded codec (see core/avro/container.ts: every
 * count and length is checked against the bytes left, the inflated blocks and decoded records against `limits`),
 * each record read by Iceberg field id.
 * @throws AvroLimitError when the file is well formed but over `limits`.
 * @throws Error for anything malformed (the caller names the file).
 */
export async function decodeAvroContainer(bytes: Uint8Array, limits?: AvroLimits): Promise<AvroContainer> {
  const decoded = await decodeContainer(bytes, limits);
  return {
    metadata: decoded.metadata,
    records: decoded.records.map((value) => new IdRecord(decoded.schema, value, decoded.named)),
  };
}

/**
 * Encodes an Avro object container file (deflate codec) holding `records` under `schema`, with `metadata` in the
 * header; the header's `avro.schema` is `schema` exactly as given, its `field-id` attributes kept, because Iceberg
 * readers find manifest fields by those ids.
 * @throws Error from avsc when a record does not match the schema (a bug of the caller, never data-dependent).
 */
export function encodeAvroContainer(
  schema: object,
  records: readonly unknown[],
  metadata: Readonly<Record<string, string>>,
): Uint8Array {
  return encodeContainer(schema, records, metadata, { codec: 'deflate' });
}
