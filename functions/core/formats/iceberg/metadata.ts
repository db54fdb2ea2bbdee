// Parses an Iceberg table metadata file (format v1, v2, v3) into one normalised shape, zod-validated: 64-bit ids
// and sequence numbers as BigInt (exact), v1's single schema/spec lifted into lists, unsupported features refused.
import { z } from 'zod';
import { IcebergMetadataError, IcebergUnsupportedError } from './errors.js';
import { parseJsonExact } from './json.js';
import { parseTransform, type Transform } from './transforms.js';

/** The newest table format version this reader understands. */
export const MAX_FORMAT_VERSION = 3;

/** A 64-bit integer as JSON holds it: a number when short (exact), a decimal string when long (see json.ts). */
const long = z.union([z.number().int(), z.string().regex(/^-?\d+$/)]).transform((v) => BigInt(v));

/** An Iceberg type: a primitive name (`long`, `decimal(9,2)`, …) or a nested struct/list/map object. */
export type IcebergType = string | { readonly type: string; readonly [key: string]: unknown };
const icebergType: z.ZodType<IcebergType> = z.union([
  z.string(),
  z.looseObject({ type: z.string() }) as unknown as z.ZodType<{ type: string; [key: string]: unknown }>,
]);

const fieldSchema = z.looseObject({
  id: z.number().int(),
  name: z.string(),
  required: z.boolean(),
  type: icebergType,
  doc: z.string().optional(),
});
export type IcebergField = z.infer<typeof fieldSchema>;

const schemaSchema = z.looseObject({
  type: z.literal('struct'),
  'schema-id': z.number().int().optional(),
  'identifier-field-ids': z.array(z.number().int()).optional(),
  fields: z.array(fieldSchema),
});

const partitionFieldSchema = z.looseObject({
  name: z.string(),
  transform: z.string(),
  'source-id': z.number().int().optional(),
  'source-ids': z.array(z.number().int()).optional(),
  'field-id': z.number().int().optional(),
});

const sortOrderSchema = z.looseObject({
  'order-id': z.number().int(),
  fields: z.array(
    z.looseObject({
      transform: z.string(),
      'source-id': z.number().int().optional(),
      direction: z.enum(['asc', 'desc']),
      'null-order': z.enum(['nulls-first', 'nulls-last']),
    }),
  ),
});

const snapshotSchema = z.looseObject({
  'snapshot-id': long,
  'parent-snapshot-id': long.optional(),
  'sequence-number': long.optional(),
  'timestamp-ms': z.number().int(),
  'manifest-list': z.string().optional(),
  manifests: z.array(z.string()).optional(),
  summary: z.record(z.string(), z.string()).optional(),
  'schema-id': z.number().int().optional(),
  'first-row-id': long.optional(),
  'added-rows': long.optional(),
  'key-id': z.string().optional(),
});

const refSchema = z.looseObject({
  'snapshot-id': long,
  type: z.enum(['branch', 'tag']),
  'max-ref-age-ms': z.number().int().optional(),
  'max-snapshot-age-ms': z.number().int().optional(),
  'min-snapshots-to-keep': z.number().int().optional(),
});

const rawMetadataSchema = z.looseObject({
  'format-version': z.number().int(),
  'table-uuid': z.string().optional(),
  location: z.string(),
  'last-sequence-number': long.optional(),
  'last-updated-ms': z.number().int(),
  'last-column-id': z.number().int(),
  schema: schemaSchema.optional(),
  schemas: z.array(schemaSchema).optional(),
  'current-schema-id': z.number().int().optional(),
  'partition-spec': z.array(partitionFieldSchema).optional(),
  'partition-specs': z
    .array(z.looseObject({ 'spec-id': z.number().int(), fields: z.array(partitionFieldSchema) }))
    .optional(),
  'default-spec-id': z.number().int().optional(),
  'last-partition-id': z.number().int().optional(),
  properties: z.record(z.string(), z.string()).optional(),
  'current-snapshot-id': long.nullable().optional(),
  snapshots: z.array(snapshotSchema).optional(),
  'snapshot-log': z
    .array(z.looseObject({ 'timestamp-ms': z.number().int(), 'snapshot-id': long }))
    .optional(),
  'metadata-log': z
    .array(z.looseObject({ 'timestamp-ms': z.number().int(), 'metadata-file': z.string() }))
    .optional(),
  'sort-orders': z.array(sortOrderSchema).optional(),
  'default-sort-order-id': z.number().int().optional(),
  refs: z.record(z.string(), refSchema).optional(),
  'next-row-id': long.optional(),
  'encryption-keys': z.array(z.unknown()).optional(),
});

/** A table schema: its id and top-level fields (nested types kept as the JSON describes them). */
export interface IcebergSchema {
  readonly schemaId: number;
  readonly fields: readonly IcebergField[];
  readonly identifierFieldIds: readonly number[];
}

/** One partition field: which source column, which transform, and the field id manifests key it by. */
export interface PartitionField {
  readonly name: string;
  readonly sourceId: number;
  readonly fieldId: number;
  readonly transform: Transform;
}

export interface PartitionSpec {
  readonly specId: number;
  readonly fields: readonly PartitionField[];
}

export interface SortOrder {
  readonly orderId: number;
  readonly fields: readonly {
    readonly transform: string;
    readonly sourceId: number | undefined;
    readonly direction: 'asc' | 'desc';
    readonly nullOrder: 'nulls-first' | 'nulls-last';
  }[];
}

export interface Snapshot {
  readonly snapshotId: bigint;
  readonly parentSnapshotId: bigint | undefined;
  /** 0 in format v1 (no sequence numbers). */
  readonly sequenceNumber: bigint;
  readonly timestampMs: number;
  /** Location of the manifest list, as the writer wrote it (not relocated). */
  readonly manifestList: string;
  readonly operation: string | undefined;
  readonly summary: Readonly<Record<string, string>>;
  readonly schemaId: number | undefined;
  /** v3 row lineage: the first row id assigned to rows this snapshot added. */
  readonly firstRowId: bigint | undefined;
  /** v3 row lineage: how many row ids this snapshot assigned. */
  readonly addedRows: bigint | undefined;
}

export interface SnapshotRef {
  readonly snapshotId: bigint;
  readonly type: 'branch' | 'tag';
  readonly maxRefAgeMs: number | undefined;
  readonly maxSnapshotAgeMs: number | undefined;
  readonly minSnapshotsToKeep: number | undefined;
}

/** A table metadata file, normalised across format versions. */
export interface TableMetadata {
  readonly formatVersion: 1 | 2 | 3;
  readonly tableUuid: string | undefined;
  /** The table location as the writer recorded it; file paths in the metadata start with it. */
  readonly location: string;
  /** 0 in format v1. */
  readonly lastSequenceNumber: bigint;
  readonly lastUpdatedMs: number;
  readonly lastColumnId: number;
  readonly schemas: readonly IcebergSchema[];
  readonly currentSchemaId: number;
  readonly specs: readonly PartitionSpec[];
  readonly defaultSpecId: number;
  readonly lastPartitionId: number | undefined;
  readonly sortOrders: readonly SortOrder[];
  readonly defaultSortOrderId: number | undefined;
  readonly properties: Readonly<Record<string, string>>;
  /** Undefined when the table has no snapshot yet (v1 writes -1 for that). */
  readonly currentSnapshotId: bigint | undefined;
  readonly snapshots: readonly Snapshot[];
  readonly snapshotLog: readonly { readonly timestampMs: number; readonly snapshotId: bigint }[];
  readonly metadataLog: readonly { readonly timestampMs: number; readonly metadataFile: string }[];
  /** Branches and tags; `main` is derived from `current-snapshot-id` when the file has no refs (v1). */
  readonly refs: ReadonlyMap<string, SnapshotRef>;
  /** v3 row lineage: the next row id to assign. */
  readonly nextRowId: bigint | undefined;
}

/**
 * The deepest nesting of structs, lists and maps a schema may have: the same as the Parquet schema reader's limit
 * (core/parquet/schema.ts), since every data file of the table must hold the schema, and far below what the
 * recursive walks over a schema (field lookup, metrics, the writer's checks) can take before the stack runs out.
 */
export const MAX_SCHEMA_DEPTH = 256;

/**
 * The path (first levels) of a column nested deeper than {@link MAX_SCHEMA_DEPTH}, or undefined. Walked with an
 * explicit stack: the schema is the writer's, and a recursive walk is what a 20,000-level schema would overflow.
 */
function tooDeepColumn(fields: readonly IcebergField[]): string | undefined {
  const stack: { type: unknown; depth: number; path: string }[] = fields.map((f) => ({
    type: f.type,
    depth: 1,
    path: f.name,
  }));
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    if (typeof item.type !== 'object' || item.type === null) continue;
    if (item.depth > MAX_SCHEMA_DEPTH) return item.path.split('.').slice(0, 3).join('.');
    const t = item.type as Readonly<Record<string, unknown>>;
    const next = (type: unknown, name: string) =>
      stack.push({ type, depth: item.depth + 1, path: `${item.path}.${name}` });
    if (t.type === 'struct' && Array.isArray(t.fields))
      for (const f of t.fields as Readonly<Record<string, unknown>>[]) next(f.type, String(f.name));
    else if (t.type === 'list') next(t.element, 'element');
    else if (t.type === 'map') {
      next(t.key, 'key');
      next(t.value, 'value');
    }
  }
  return undefined;
}

/**
 * Parses and validates a metadata file's text.
 * @param table the table's location as the caller names it, for messages.
 * @throws IcebergMetadataError when the text is not valid metadata JSON.
 * @throws IcebergUnsupportedError for a format version above 3, encryption, inline v1 manifests, an unknown transform.
 */
export function parseTableMetadata(text: string, table: string): TableMetadata {
  let json: unknown;
  try {
    json = parseJsonExact(text);
  } catch (err) {
    throw new IcebergMetadataError(table, `the metadata file is not JSON (${(err as Error).message})`, {
      cause: err,
    });
  }
  const version = (json as { 'format-version'?: unknown } | null)?.['format-version'];
  if (typeof version === 'number' && version > MAX_FORMAT_VERSION)
    throw new IcebergUnsupportedError(
      table,
      `table format version ${version} (versions 1 to ${MAX_FORMAT_VERSION} are read)`,
    );
  const parsed = rawMetadataSchema.safeParse(json);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
    throw new IcebergMetadataError(table, `the metadata file does not follow the Iceberg spec (${issues})`);
  }
  const raw = parsed.data;
  const formatVersion = raw['format-version'];
  if (formatVersion !== 1 && formatVersion !== 2 && formatVersion !== 3)
    throw new IcebergMetadataError(table, `format-version ${formatVersion} is not a table format version`);

  if ((raw['encryption-keys']?.length ?? 0) > 0 || raw.snapshots?.some((s) => s['key-id'] !== undefined))
    throw new IcebergUnsupportedError(table, 'table encryption (encryption-keys)');

  const schemas: IcebergSchema[] =
    raw.schemas !== undefined
      ? raw.schemas.map((s) => ({
          schemaId: s['schema-id'] ?? 0,
          fields: s.fields,
          identifierFieldIds: s['identifier-field-ids'] ?? [],
        }))
      : raw.schema !== undefined
        ? [{ schemaId: raw.schema['schema-id'] ?? 0, fields: raw.schema.fields, identifierFieldIds: [] }]
        : [];
  if (schemas.length === 0) throw new IcebergMetadataError(table, 'the metadata file has no schema');
  for (const schema of schemas) {
    const deep = tooDeepColumn(schema.fields);
    if (deep !== undefined)
      throw new IcebergUnsupportedError(
        table,
        `a schema nested deeper than ${MAX_SCHEMA_DEPTH} levels (schema ${schema.schemaId}, column ${deep}…)`,
      );
  }
  const currentSchemaId = raw['current-schema-id'] ?? schemas[0]?.schemaId ?? 0;
  if (!schemas.some((s) => s.schemaId === currentSchemaId))
    throw new IcebergMetadataError(table, `current-schema-id ${currentSchemaId} names no schema`);

  const rawSpecs =
    raw['partition-specs'] ??
    (raw['partition-spec'] !== undefined ? [{ 'spec-id': 0, fields: raw['partition-spec'] }] : undefined);
  if (rawSpecs === undefined)
    throw new IcebergMetadataError(table, 'the metadata file has no partition spec');
  let nextV1FieldId = 1000; // v1 specs may omit field ids: they are assigned from 1000 in order
  const specs: PartitionSpec[] = rawSpecs.map((spec) => ({
    specId: spec['spec-id'],
    fields: spec.fields.map((f) => {
      const sourceIds = f['source-ids'] ?? (f['source-id'] === undefined ? [] : [f['source-id']]);
      if (sourceIds.length !== 1)
        throw new IcebergUnsupportedError(
          table,
          `a partition field over ${sourceIds.length} source columns (${f.name}: ${f.transform})`,
        );
      const fieldId = f['field-id'] ?? nextV1FieldId;
      nextV1FieldId = Math.max(nextV1FieldId, fieldId) + 1;
      return {
        name: f.name,
        sourceId: sourceIds[0] as number,
        fieldId,
        transform: parseTransform(f.transform, table, `partition field ${f.name}`),
      };
    }),
  }));
  const defaultSpecId = raw['default-spec-id'] ?? specs[0]?.specId ?? 0;
  if (!specs.some((s) => s.specId === defaultSpecId))
    throw new IcebergMetadataError(table, `default-spec-id ${defaultSpecId} names no partition spec`);

  const snapshots: Snapshot[] = (raw.snapshots ?? []).map((s) => {
    const manifestList = s['manifest-list'];
    if (manifestList === undefined)
      throw new IcebergUnsupportedError(
        table,
        `a v1 snapshot without a manifest list (snapshot ${s['snapshot-id']} lists its manifests inline)`,
      );
    return {
      snapshotId: s['snapshot-id'],
      parentSnapshotId: s['parent-snapshot-id'],
      sequenceNumber: s['sequence-number'] ?? 0n,
      timestampMs: s['timestamp-ms'],
      manifestList,
      operation: s.summary?.operation,
      summary: s.summary ?? {},
      schemaId: s['schema-id'],
      firstRowId: s['first-row-id'],
      addedRows: s['added-rows'],
    };
  });

  const rawCurrent = raw['current-snapshot-id'];
  const currentSnapshotId =
    rawCurrent === undefined || rawCurrent === null || rawCurrent === -1n ? undefined : rawCurrent;
  if (currentSnapshotId !== undefined && !snapshots.some((s) => s.snapshotId === currentSnapshotId))
    throw new IcebergMetadataError(table, `current-snapshot-id ${currentSnapshotId} names no snapshot`);

  const refs = new Map<string, SnapshotRef>();
  for (const [name, ref] of Object.entries(raw.refs ?? {}))
    refs.set(name, {
      snapshotId: ref['snapshot-id'],
      type: ref.type,
      maxRefAgeMs: ref['max-ref-age-ms'],
      maxSnapshotAgeMs: ref['max-snapshot-age-ms'],
      minSnapshotsToKeep: ref['min-snapshots-to-keep'],
    });
  if (!refs.has('main') && currentSnapshotId !== undefined)
    refs.set('main', {
      snapshotId: currentSnapshotId,
      type: 'branch',
      maxRefAgeMs: undefined,
      maxSnapshotAgeMs: undefined,
      minSnapshotsToKeep: undefined,
    });

  return {
    formatVersion,
    tableUuid: raw['table-uuid'],
    location: raw.location,
    lastSequenceNumber: raw['last-sequence-number'] ?? 0n,
    lastUpdatedMs: raw['last-updated-ms'],
    lastColumnId: raw['last-column-id'],
    schemas,
    currentSchemaId,
    specs,
    defaultSpecId,
    lastPartitionId: raw['last-partition-id'],
    sortOrders: (raw['sort-orders'] ?? []).map((o) => ({
      orderId: o['order-id'],
      fields: o.fields.map((f) => ({
        transform: f.transform,
        sourceId: f['source-id'],
        direction: f.direction,
        nullOrder: f['null-order'],
      })),
    })),
    defaultSortOrderId: raw['default-sort-order-id'],
    properties: raw.properties ?? {},
    currentSnapshotId,
    snapshots,
    snapshotLog: (raw['snapshot-log'] ?? []).map((e) => ({
      timestampMs: e['timestamp-ms'],
      snapshotId: e['snapshot-id'],
    })),
    metadataLog: (raw['metadata-log'] ?? []).map((e) => ({
      timestampMs: e['timestamp-ms'],
      metadataFile: e['metadata-file'],
    })),
    refs,
    nextRowId: raw['next-row-id'],
  };
}

/** The schema with id `schemaId` (the current one when omitted). */
export function schemaById(
  metadata: TableMetadata,
  schemaId = metadata.currentSchemaId,
): IcebergSchema | undefined {
  return metadata.schemas.find((s) => s.schemaId === schemaId);
}

/** The partition spec with id `specId`. */
export function specById(metadata: TableMetadata, specId: number): PartitionSpec | undefined {
  return metadata.specs.find((s) => s.specId === specId);
}

/** The top-level field with id `fieldId` in a schema (source columns of partition fields are top-level or nested). */
export function findField(schema: IcebergSchema, fieldId: number): IcebergField | undefined {
  const visit = (fields: readonly IcebergField[]): IcebergField | undefined => {
    for (const f of fields) {
      if (f.id === fieldId) return f;
      if (typeof f.type === 'object' && f.type.type === 'struct' && Array.isArray(f.type.fields)) {
        const inner = visit(f.type.fields as IcebergField[]);
        if (inner !== undefined) return inner;
      }
    }
    return undefined;
  };
  return visit(schema.fields);
}
