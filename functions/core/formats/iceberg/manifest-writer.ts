// Writes Iceberg manifests and manifest lists (Avro) for format versions 1, 2 and 3 with the spec's exact schemas:
// every field carries its `field-id` in the header schema, the partition struct is typed by the spec, and the
// header metadata says which schema, partition spec, format version and content the manifest holds.
import { encodeAvroContainer } from './avro.js';
import type { ContentFile, ManifestFile, PartitionFieldSummary } from './manifests.js';
import { findField, type IcebergSchema, type PartitionSpec, type TableMetadata } from './metadata.js';
import {
  baseType,
  decodeSingleValue,
  encodeSingleValue,
  type IcebergValue,
  partitionResultType,
  transformToString,
} from './transforms.js';

/** A data or delete file as a manifest records it (no store key: manifests hold paths). */
export type ManifestContentFile = Omit<ContentFile, 'key'>;

/**
 * One entry to write. An undefined snapshot id or sequence number is written as null, which readers inherit from
 * the manifest list (allowed for ADDED entries only: EXISTING and DELETED entries must carry their own).
 */
export interface ManifestWriteEntry {
  readonly status: 'existing' | 'added' | 'deleted';
  readonly snapshotId: bigint | undefined;
  readonly dataSequenceNumber: bigint | undefined;
  readonly fileSequenceNumber: bigint | undefined;
  readonly file: ManifestContentFile;
}

/** What the manifest list records about a manifest, apart from where it lies and its sequence numbers. */
export interface ManifestStats {
  readonly addedFilesCount: number;
  readonly existingFilesCount: number;
  readonly deletedFilesCount: number;
  readonly addedRowsCount: bigint;
  readonly existingRowsCount: bigint;
  readonly deletedRowsCount: bigint;
  /** The lowest explicit data sequence number of the entries; undefined when every entry inherits. */
  readonly minDataSequenceNumber: bigint | undefined;
  readonly partitions: readonly PartitionFieldSummary[];
}

const STATUS = { existing: 0, added: 1, deleted: 2 } as const;
const CONTENT = { data: 0, 'position-deletes': 1, 'equality-deletes': 2 } as const;
/** What Java writers put in v1's required `block_size_in_bytes` (readers ignore it). */
const V1_BLOCK_SIZE = 67_108_864n;

const nullable = (type: unknown) => ['null', type];

/** An Avro field name for a partition field (Iceberg's AvroSchemaUtil.makeCompatibleName). */
function avroName(name: string): string {
  if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) return name;
  let out = '';
  for (const [i, ch] of Array.from(name).entries()) {
    const ok = i === 0 ? /[A-Za-z_]/.test(ch) : /[A-Za-z0-9_]/.test(ch);
    out += ok
      ? ch
      : i === 0 && /\d/.test(ch)
        ? `_${ch}`
        : `_x${(ch.codePointAt(0) as number).toString(16).toUpperCase()}`;
  }
  return out;
}

function decimalSize(precision: number): number {
  let size = 1;
  while (2 ** (8 * size - 1) < 10 ** precision) size++;
  return size;
}

/** The Avro type of an Iceberg primitive (logical-type attributes as Iceberg's Avro writer sets them). */
function avroType(type: string, uniqueName: string): unknown {
  const base = baseType(type);
  switch (base) {
    case 'boolean':
    case 'int':
    case 'long':
    case 'float':
    case 'double':
    case 'string':
      return base;
    case 'binary':
      return 'bytes';
    case 'date':
      return { type: 'int', logicalType: 'date' };
    case 'time':
      return { type: 'long', logicalType: 'time-micros' };
    case 'timestamp':
    case 'timestamptz':
      return { type: 'long', logicalType: 'timestamp-micros', 'adjust-to-utc': base === 'timestamptz' };
    case 'timestamp_ns':
    case 'timestamptz_ns':
      return { type: 'long', logicalType: 'timestamp-nanos', 'adjust-to-utc': base === 'timestamptz_ns' };
    case 'uuid':
      return { type: 'fixed', name: `uuid_${uniqueName}`, size: 16, logicalType: 'uuid' };
    case 'fixed':
      return { type: 'fixed', name: `fixed_${uniqueName}`, size: Number(/\[(\d+)\]/.exec(type)?.[1]) };
    case 'decimal': {
      const [, p, s] = /decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)/.exec(type) ?? [];
      return {
        type: 'fixed',
        name: `decimal_${uniqueName}`,
        size: decimalSize(Number(p)),
        logicalType: 'decimal',
        precision: Number(p),
        scale: Number(s),
      };
    }
    default:
      throw new Error(`partition values of type ${type} cannot be written`);
  }
}

/** The type of each partition field of a spec, from the source column's type in any of the table's schemas. */
export function partitionTypes(metadata: TableMetadata, spec: PartitionSpec): string[] {
  return spec.fields.map((f) => {
    const source = metadata.schemas.map((s) => findField(s, f.sourceId)).find((x) => x !== undefined);
    const sourceType = typeof source?.type === 'string' ? source.type : 'unknown';
    return partitionResultType(f.transform, sourceType);
  });
}

/** A partition value as avsc encodes it for the field's Avro type. */
function avroValue(type: string, value: IcebergValue): unknown {
  if (value === null) return null;
  const base = baseType(type);
  if (base === 'long' || base.startsWith('time')) return BigInt(value as number | bigint);
  if (base === 'decimal') {
    const [, p] = /decimal\(\s*(\d+)/.exec(type) ?? [];
    const size = decimalSize(Number(p));
    const raw = encodeSingleValue(type, value as bigint | Uint8Array);
    const out = Buffer.alloc(size, raw.length > 0 && ((raw[0] as number) & 0x80) !== 0 ? 0xff : 0);
    out.set(raw.subarray(Math.max(0, raw.length - size)), Math.max(0, size - raw.length));
    return out;
  }
  if (value instanceof Uint8Array) return Buffer.from(value);
  return value;
}

const intMapType = (name: string, keyId: number, valueId: number, valueType: string) =>
  nullable({
    type: 'array',
    items: {
      type: 'record',
      name,
      fields: [
        { name: 'key', type: 'int', 'field-id': keyId },
        { name: 'value', type: valueType, 'field-id': valueId },
      ],
    },
    logicalType: 'map',
  });

/** The `manifest_entry` Avro schema of a format version, with the partition struct of `spec`. */
export function manifestEntrySchema(
  formatVersion: 1 | 2 | 3,
  spec: PartitionSpec,
  types: readonly string[],
): object {
  const partition = {
    type: 'record',
    name: 'r102',
    fields: spec.fields.map((f, i) => ({
      name: avroName(f.name),
      type: nullable(avroType(types[i] as string, String(f.fieldId))),
      default: null,
      'field-id': f.fieldId,
    })),
  };
  const field = (name: string, type: unknown, id: number, optional = true) =>
    optional ? { name, type: nullable(type), default: null, 'field-id': id } : { name, type, 'field-id': id };
  const dataFile = [
    ...(formatVersion >= 2 ? [field('content', 'int', 134, false)] : []),
    field('file_path', 'string', 100, false),
    field('file_format', 'string', 101, false),
    { name: 'partition', type: partition, 'field-id': 102 },
    field('record_count', 'long', 103, false),
    field('file_size_in_bytes', 'long', 104, false),
    ...(formatVersion === 1 ? [field('block_size_in_bytes', 'long', 105, false)] : []),
    { name: 'column_sizes', type: intMapType('k117_v118', 117, 118, 'long'), default: null, 'field-id': 108 },
    { name: 'value_counts', type: intMapType('k119_v120', 119, 120, 'long'), default: null, 'field-id': 109 },
    {
      name: 'null_value_counts',
      type: intMapType('k121_v122', 121, 122, 'long'),
      default: null,
      'field-id': 110,
    },
    {
      name: 'nan_value_counts',
      type: intMapType('k138_v139', 138, 139, 'long'),
      default: null,
      'field-id': 137,
    },
    {
      name: 'lower_bounds',
      type: intMapType('k126_v127', 126, 127, 'bytes'),
      default: null,
      'field-id': 125,
    },
    {
      name: 'upper_bounds',
      type: intMapType('k129_v130', 129, 130, 'bytes'),
      default: null,
      'field-id': 128,
    },
    field('key_metadata', 'bytes', 131),
    field('split_offsets', { type: 'array', items: 'long', 'element-id': 133 }, 132),
    ...(formatVersion >= 2
      ? [field('equality_ids', { type: 'array', items: 'int', 'element-id': 136 }, 135)]
      : []),
    field('sort_order_id', 'int', 140),
    ...(formatVersion >= 3 ? [field('first_row_id', 'long', 142)] : []),
    ...(formatVersion >= 2 ? [field('referenced_data_file', 'string', 143)] : []),
    ...(formatVersion >= 3
      ? [field('content_offset', 'long', 144), field('content_size_in_bytes', 'long', 145)]
      : []),
  ];
  return {
    type: 'record',
    name: 'manifest_entry',
    fields: [
      field('status', 'int', 0, false),
      field('snapshot_id', 'long', 1),
      ...(formatVersion >= 2
        ? [field('sequence_number', 'long', 3), field('file_sequence_number', 'long', 4)]
        : []),
      { name: 'data_file', type: { type: 'record', name: 'r2', fields: dataFile }, 'field-id': 2 },
    ],
  };
}

/** The `manifest_file` Avro schema (the manifest list's records) of a format version. */
export function manifestListSchema(formatVersion: 1 | 2 | 3): object {
  const req = (name: string, type: unknown, id: number) => ({ name, type, 'field-id': id });
  const opt = (name: string, type: unknown, id: number) => ({
    name,
    type: nullable(type),
    default: null,
    'field-id': id,
  });
  const v1 = formatVersion === 1;
  const count = (name: string, type: string, id: number) => (v1 ? opt(name, type, id) : req(name, type, id));
  const partitions = opt(
    'partitions',
    {
      type: 'array',
      items: {
        type: 'record',
        name: 'r508',
        fields: [
          req('contains_null', 'boolean', 509),
          ...(v1 ? [] : [opt('contains_nan', 'boolean', 518)]),
          opt('lower_bound', 'bytes', 510),
          opt('upper_bound', 'bytes', 511),
        ],
      },
      'element-id': 508,
    },
    507,
  );
  return {
    type: 'record',
    name: 'manifest_file',
    fields: [
      req('manifest_path', 'string', 500),
      req('manifest_length', 'long', 501),
      req('partition_spec_id', 'int', 502),
      ...(v1
        ? []
        : [
            req('content', 'int', 517),
            req('sequence_number', 'long', 515),
            req('min_sequence_number', 'long', 516),
          ]),
      count('added_snapshot_id', 'long', 503),
      count('added_files_count', 'int', 504),
      count('existing_files_count', 'int', 505),
      count('deleted_files_count', 'int', 506),
      count('added_rows_count', 'long', 512),
      count('existing_rows_count', 'long', 513),
      count('deleted_rows_count', 'long', 514),
      partitions,
      ...(v1 ? [] : [opt('key_metadata', 'bytes', 519)]),
      ...(formatVersion >= 3 ? [opt('first_row_id', 'long', 520)] : []),
    ],
  };
}

/** A schema as the metadata file writes it (the `schema` header of a manifest). */
export function schemaJson(schema: IcebergSchema): object {
  return {
    type: 'struct',
    'schema-id': schema.schemaId,
    ...(schema.identifierFieldIds.length > 0 && { 'identifier-field-ids': schema.identifierFieldIds }),
    fields: schema.fields,
  };
}

/** A partition spec's fields as the metadata file writes them. */
export function specFieldsJson(spec: PartitionSpec): object[] {
  return spec.fields.map((f) => ({
    name: f.name,
    transform: transformToString(f.transform),
    'source-id': f.sourceId,
    'field-id': f.fieldId,
  }));
}

function compareValues(type: string, a: Exclude<IcebergValue, null>, b: Exclude<IcebergValue, null>): number {
  const base = baseType(type);
  if (base === 'string')
    return Buffer.compare(Buffer.from(a as string, 'utf8'), Buffer.from(b as string, 'utf8'));
  if (base === 'decimal') {
    const x = a instanceof Uint8Array ? (decodeSingleValue(type, a) as bigint) : BigInt(a as bigint);
    const y = b instanceof Uint8Array ? (decodeSingleValue(type, b) as bigint) : BigInt(b as bigint);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a instanceof Uint8Array && b instanceof Uint8Array) return Buffer.compare(a, b);
  if (typeof a === 'boolean') return Number(a) - Number(b as boolean);
  return (a as number | bigint) < (b as number | bigint)
    ? -1
    : (a as number | bigint) > (b as number | bigint)
      ? 1
      : 0;
}

/** The manifest list's per-field partition summary over some files (Iceberg's PartitionSummary). */
export function summarisePartitions(
  spec: PartitionSpec,
  types: readonly string[],
  files: readonly ManifestContentFile[],
): PartitionFieldSummary[] {
  return spec.fields.map((f, i) => {
    const type = types[i] as string;
    let containsNull = false;
    let containsNan = false;
    let lower: Exclude<IcebergValue, null> | undefined;
    let upper: Exclude<IcebergValue, null> | undefined;
    for (const file of files) {
      const v = file.partition.values.find((p) => p.fieldId === f.fieldId)?.value ?? null;
      if (v === null) containsNull = true;
      else if (typeof v === 'number' && Number.isNaN(v)) containsNan = true;
      else {
        if (lower === undefined || compareValues(type, v, lower) < 0) lower = v;
        if (upper === undefined || compareValues(type, v, upper) > 0) upper = v;
      }
    }
    const floating = baseType(type) === 'float' || baseType(type) === 'double';
    return {
      containsNull,
      containsNan: floating ? containsNan : undefined,
      lowerBound: lower === undefined ? undefined : encodeSingleValue(type, lower),
      upperBound: upper === undefined ? undefined : encodeSingleValue(type, upper),
    };
  });
}

const mapOf = <V>(m: ReadonlyMap<number, V>, convert: (v: V) => unknown) =>
  m.size === 0
    ? null
    : [...m].sort(([a], [b]) => a - b).map(([key, value]) => ({ key, value: convert(value) }));

/**
 * Encodes a manifest of `entries` (all of one spec and one content: data, or deletes) and what the manifest list
 * will say about it.
 */
export function writeManifest(options: {
  readonly metadata: TableMetadata;
  readonly schema: IcebergSchema;
  readonly spec: PartitionSpec;
  readonly content: 'data' | 'deletes';
  readonly entries: readonly ManifestWriteEntry[];
}): { bytes: Uint8Array; stats: ManifestStats } {
  const { metadata, spec, entries } = options;
  const v = metadata.formatVersion;
  const types = partitionTypes(metadata, spec);
  const schema = manifestEntrySchema(v, spec, types);
  const records = entries.map((e) => {
    const f = e.file;
    const partition = Object.fromEntries(
      spec.fields.map((pf, i) => [
        avroName(pf.name),
        avroValue(
          types[i] as string,
          f.partition.values.find((p) => p.fieldId === pf.fieldId)?.value ?? null,
        ),
      ]),
    );
    const dataFile: Record<string, unknown> = {
      file_path: f.path,
      file_format: f.format,
      partition,
      record_count: f.recordCount,
      file_size_in_bytes: f.fileSizeInBytes,
      column_sizes: mapOf(f.columnSizes, BigInt),
      value_counts: mapOf(f.valueCounts, BigInt),
      null_value_counts: mapOf(f.nullValueCounts, BigInt),
      nan_value_counts: mapOf(f.nanValueCounts, BigInt),
      lower_bounds: mapOf(f.lowerBounds, (b) => Buffer.from(b)),
      upper_bounds: mapOf(f.upperBounds, (b) => Buffer.from(b)),
      key_metadata: null,
      split_offsets: f.splitOffsets === undefined ? null : f.splitOffsets.map(BigInt),
      sort_order_id: f.sortOrderId ?? null,
    };
    if (v === 1) dataFile.block_size_in_bytes = V1_BLOCK_SIZE;
    if (v >= 2) {
      dataFile.content = CONTENT[f.content];
      dataFile.equality_ids = f.equalityIds === undefined ? null : [...f.equalityIds];
      dataFile.referenced_data_file = f.referencedDataFile ?? null;
    }
    if (v >= 3) {
      dataFile.first_row_id = f.firstRowId ?? null;
      dataFile.content_offset = f.contentOffset ?? null;
      dataFile.content_size_in_bytes = f.contentSizeInBytes ?? null;
    }
    return {
      status: STATUS[e.status],
      snapshot_id: e.snapshotId ?? null,
      ...(v >= 2 && {
        sequence_number: e.dataSequenceNumber ?? null,
        file_sequence_number: e.fileSequenceNumber ?? null,
      }),
      data_file: dataFile,
    };
  });
  const header: Record<string, string> = {
    schema: JSON.stringify(schemaJson(options.schema)),
    'schema-id': String(options.schema.schemaId),
    'partition-spec': JSON.stringify(specFieldsJson(spec)),
    'partition-spec-id': String(spec.specId),
    'format-version': String(v),
    ...(v >= 2 && { content: options.content }),
  };
  const bytes = encodeAvroContainer(schema, records, header);
  let minSeq: bigint | undefined;
  for (const e of entries)
    if (e.dataSequenceNumber !== undefined && (minSeq === undefined || e.dataSequenceNumber < minSeq))
      minSeq = e.dataSequenceNumber;
  const count = (status: ManifestWriteEntry['status']) => entries.filter((e) => e.status === status);
  const rows = (list: readonly ManifestWriteEntry[]) => list.reduce((a, e) => a + e.file.recordCount, 0n);
  return {
    bytes,
    stats: {
      addedFilesCount: count('added').length,
      existingFilesCount: count('existing').length,
      deletedFilesCount: count('deleted').length,
      addedRowsCount: rows(count('added')),
      existingRowsCount: rows(count('existing')),
      deletedRowsCount: rows(count('deleted')),
      minDataSequenceNumber: minSeq,
      partitions: summarisePartitions(
        spec,
        types,
        entries.map((e) => e.file),
      ),
    },
  };
}

/** One record of a manifest list to write: a manifest written now, or one reused as the previous list had it. */
export type ManifestListEntry = Omit<ManifestFile, 'key'>;

/**
 * Encodes a manifest list. Manifests are written as given, in order; the header records the snapshot, its parent,
 * its sequence number (v2+) and first row id (v3), as Java writers do.
 */
export function writeManifestList(options: {
  readonly formatVersion: 1 | 2 | 3;
  readonly snapshotId: bigint;
  readonly parentSnapshotId: bigint | undefined;
  readonly sequenceNumber: bigint;
  readonly firstRowId?: bigint;
  readonly manifests: readonly ManifestListEntry[];
}): Uint8Array {
  const v = options.formatVersion;
  const records = options.manifests.map((m) => ({
    manifest_path: m.path,
    manifest_length: m.length,
    partition_spec_id: m.specId,
    ...(v >= 2 && {
      content: m.content === 'data' ? 0 : 1,
      sequence_number: m.sequenceNumber,
      min_sequence_number: m.minSequenceNumber,
      key_metadata: null,
    }),
    added_snapshot_id: m.addedSnapshotId ?? null,
    added_files_count: m.addedFilesCount ?? null,
    existing_files_count: m.existingFilesCount ?? null,
    deleted_files_count: m.deletedFilesCount ?? null,
    added_rows_count: m.addedRowsCount ?? null,
    existing_rows_count: m.existingRowsCount ?? null,
    deleted_rows_count: m.deletedRowsCount ?? null,
    partitions:
      m.partitions?.map((p) => ({
        contains_null: p.containsNull,
        ...(v >= 2 && { contains_nan: p.containsNan ?? null }),
        lower_bound: p.lowerBound === undefined ? null : Buffer.from(p.lowerBound),
        upper_bound: p.upperBound === undefined ? null : Buffer.from(p.upperBound),
      })) ?? null,
    ...(v >= 3 && { first_row_id: m.firstRowId ?? null }),
  }));
  const header: Record<string, string> = {
    'snapshot-id': String(options.snapshotId),
    'parent-snapshot-id': options.parentSnapshotId === undefined ? 'null' : String(options.parentSnapshotId),
    ...(v >= 2 && { 'sequence-number': String(options.sequenceNumber) }),
    'format-version': String(v),
    ...(v >= 3 && options.firstRowId !== undefined && { 'first-row-id': String(options.firstRowId) }),
  };
  return encodeAvroContainer(manifestListSchema(v), records, header);
}
