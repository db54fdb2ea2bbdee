// Iceberg data-file metrics for a Parquet file lake-compactor wrote, from its footer alone: counts and sizes per
// column, bounds in Iceberg's single-value serialization keyed by field id, split offsets — honouring the table's
// `write.metadata.metrics.*` properties exactly as Iceberg's MetricsConfig reads them.
import { type FileMetaData, parquetMetadata, type SchemaElement } from 'hyparquet';
import type { ObjectStore } from '../../../ports/object-store.js';
import { CorruptInputError } from '../../errors.js';
import type { IcebergField, IcebergSchema, IcebergType, TableMetadata } from './metadata.js';
import { baseType, encodeSingleValue, type IcebergValue } from './transforms.js';

/** How much Iceberg records about a column (`none`, `counts`, `truncate(N)`, `full`). */
export type MetricsMode =
  | { readonly kind: 'none' }
  | { readonly kind: 'counts' }
  | { readonly kind: 'truncate'; readonly length: number }
  | { readonly kind: 'full' };

const DEFAULT_MODE: MetricsMode = { kind: 'truncate', length: 16 };
const DEFAULT_PROPERTY = 'write.metadata.metrics.default';
const COLUMN_PREFIX = 'write.metadata.metrics.column.';
const MAX_INFERRED_PROPERTY = 'write.metadata.metrics.max-inferred-column-defaults';
const MAX_INFERRED_DEFAULT = 100;

/** Parses a metrics mode as Iceberg's `MetricsModes.fromString` does (case-insensitive); undefined when invalid. */
export function parseMetricsMode(text: string): MetricsMode | undefined {
  const t = text.trim().toLowerCase();
  if (t === 'none' || t === 'counts' || t === 'full') return { kind: t };
  const m = /^truncate\((\d+)\)$/.exec(t);
  if (m === null) return undefined;
  const length = Number(m[1]);
  return length > 0 ? { kind: 'truncate', length } : undefined;
}

/** One column of a schema by field id: its full name (`a.b`, `l.element`, `m.key`) and type. */
interface IndexedField {
  readonly name: string;
  readonly type: IcebergType;
  /** Inside a list or map: Parquet counts and bounds of such leaves are not per-row values. */
  readonly repeated: boolean;
  /** The id of the top-level column it belongs to. */
  readonly topLevelId: number;
}

/** Every field of a schema (nested ones too) by id. */
export function indexSchema(schema: IcebergSchema): Map<number, IndexedField> {
  const out = new Map<number, IndexedField>();
  const visit = (id: number, name: string, type: IcebergType, repeated: boolean, top: number) => {
    out.set(id, { name, type, repeated, topLevelId: top });
    if (typeof type !== 'object') return;
    if (type.type === 'struct' && Array.isArray(type.fields))
      for (const f of type.fields as IcebergField[]) visit(f.id, `${name}.${f.name}`, f.type, repeated, top);
    else if (type.type === 'list')
      visit(Number(type['element-id']), `${name}.element`, type.element as IcebergType, true, top);
    else if (type.type === 'map') {
      visit(Number(type['key-id']), `${name}.key`, type.key as IcebergType, true, top);
      visit(Number(type['value-id']), `${name}.value`, type.value as IcebergType, true, top);
    }
  };
  for (const f of schema.fields) visit(f.id, f.name, f.type, false, f.id);
  return out;
}

/** Which metrics mode applies to each column of a table (Iceberg's MetricsConfig.forTable). */
export interface MetricsConfig {
  modeOf(fieldId: number): MetricsMode;
}

/**
 * The table's metrics configuration, as Iceberg's `MetricsConfig.forTable` builds it:
 * - `write.metadata.metrics.default` applies to every column when set (an invalid value falls back to truncate(16));
 * - when it is not set, truncate(16) applies to the first `write.metadata.metrics.max-inferred-column-defaults`
 *   (100) top-level columns and everything nested in them, and `none` to the rest;
 * - columns of the default sort order (order-preserving transforms) get at least truncate(16);
 * - `write.metadata.metrics.column.<full name>` overrides any of these.
 */
export function metricsConfig(metadata: TableMetadata, schema?: IcebergSchema): MetricsConfig {
  const s = schema ?? metadata.schemas.find((x) => x.schemaId === metadata.currentSchemaId);
  if (s === undefined) throw new Error('the table has no current schema');
  const props = metadata.properties;
  const fields = indexSchema(s);
  const byName = new Map<string, MetricsMode>();
  let defaultMode: MetricsMode;
  const configured = props[DEFAULT_PROPERTY];
  const maxInferredRaw = Number(props[MAX_INFERRED_PROPERTY] ?? MAX_INFERRED_DEFAULT);
  const maxInferred =
    Number.isInteger(maxInferredRaw) && maxInferredRaw >= 0 ? maxInferredRaw : MAX_INFERRED_DEFAULT;
  if (configured !== undefined) defaultMode = parseMetricsMode(configured) ?? DEFAULT_MODE;
  else if (s.fields.length <= maxInferred) defaultMode = DEFAULT_MODE;
  else {
    const firstIds = new Set(s.fields.slice(0, maxInferred).map((f) => f.id));
    for (const f of fields.values()) if (firstIds.has(f.topLevelId)) byName.set(f.name, DEFAULT_MODE);
    defaultMode = { kind: 'none' };
  }
  const sortedMode: MetricsMode =
    defaultMode.kind === 'none' || defaultMode.kind === 'counts' ? DEFAULT_MODE : defaultMode;
  const order = metadata.sortOrders.find((o) => o.orderId === metadata.defaultSortOrderId);
  for (const f of order?.fields ?? []) {
    if (f.sourceId === undefined || /^bucket/.test(f.transform) || f.transform === 'void') continue;
    const name = fields.get(f.sourceId)?.name;
    if (name !== undefined) byName.set(name, sortedMode);
  }
  for (const [key, value] of Object.entries(props))
    if (key.startsWith(COLUMN_PREFIX))
      byName.set(key.slice(COLUMN_PREFIX.length), parseMetricsMode(value) ?? defaultMode);
  return {
    modeOf(fieldId) {
      const name = fields.get(fieldId)?.name;
      return (name === undefined ? undefined : byName.get(name)) ?? defaultMode;
    },
  };
}

/** A data file's metrics as a manifest entry records them (maps keyed by field id). */
export interface DataFileMetrics {
  readonly recordCount: bigint;
  readonly fileSizeInBytes: bigint;
  readonly columnSizes: ReadonlyMap<number, bigint>;
  readonly valueCounts: ReadonlyMap<number, bigint>;
  readonly nullValueCounts: ReadonlyMap<number, bigint>;
  /** Empty: a footer does not tell how many NaNs a column holds, and an unknown count must be omitted. */
  readonly nanValueCounts: ReadonlyMap<number, bigint>;
  readonly lowerBounds: ReadonlyMap<number, Uint8Array>;
  readonly upperBounds: ReadonlyMap<number, Uint8Array>;
  /** Where each row group starts, ascending. */
  readonly splitOffsets: readonly bigint[];
}

/** The first `length` code points of a string (Iceberg's UnicodeUtil.truncateString). */
export function truncateString(value: string, length: number): string {
  const points = Array.from(value);
  return points.length <= length ? value : points.slice(0, length).join('');
}

/**
 * The smallest string of at most `length` code points that is ≥ `value` (Iceberg's
 * UnicodeUtil.truncateStringMax): `value` itself when short enough, else its prefix with the last code point that
 * can be incremented incremented (skipping the surrogate range) and everything after it dropped. Undefined when
 * no code point can be incremented (then no upper bound is recorded).
 */
export function truncateStringMax(value: string, length: number): string | undefined {
  const points = Array.from(value);
  if (points.length <= length) return value;
  const prefix = points.slice(0, length);
  for (let i = prefix.length - 1; i >= 0; i--) {
    let next = (prefix[i]?.codePointAt(0) as number) + 1;
    if (next >= 0xd800 && next <= 0xdfff) next = 0xe000;
    if (next <= 0x10ffff) return prefix.slice(0, i).join('') + String.fromCodePoint(next);
  }
  return undefined;
}

/** The first `length` bytes (Iceberg's BinaryUtil.truncateBinaryMin). */
export function truncateBinary(value: Uint8Array, length: number): Uint8Array {
  return value.length <= length ? value : value.subarray(0, length);
}

/**
 * The smallest byte string of at most `length` bytes that is ≥ `value` (BinaryUtil.truncateBinaryMax): the prefix
 * with its last byte below 0xFF incremented and the bytes after it dropped; undefined when every byte is 0xFF.
 */
export function truncateBinaryMax(value: Uint8Array, length: number): Uint8Array | undefined {
  if (value.length <= length) return value;
  for (let i = length - 1; i >= 0; i--) {
    const b = value[i] as number;
    if (b < 0xff) {
      const out = Uint8Array.from(value.subarray(0, i + 1));
      out[i] = b + 1;
      return out;
    }
  }
  return undefined;
}

/** A leaf column of a Parquet schema, in column-chunk order. */
interface Leaf {
  readonly element: SchemaElement;
  readonly fieldId: number | undefined;
  /** Under a REPEATED group or itself repeated. */
  readonly repeated: boolean;
}

function leaves(schema: readonly SchemaElement[]): Leaf[] {
  const out: Leaf[] = [];
  let i = 1; // element 0 is the root
  const walk = (repeated: boolean) => {
    const el = schema[i++];
    if (el === undefined) return;
    const rep = repeated || el.repetition_type === 'REPEATED';
    if ((el.num_children ?? 0) > 0) for (let c = 0; c < (el.num_children ?? 0); c++) walk(rep);
    else out.push({ element: el, fieldId: el.field_id, repeated: rep });
  };
  const rootChildren = schema[0]?.num_children ?? 0;
  for (let c = 0; c < rootChildren; c++) walk(false);
  return out;
}

/** A Parquet statistic as a comparable Iceberg value, or undefined when it cannot be a sound bound. */
function boundValue(type: IcebergType, el: SchemaElement, raw: unknown): IcebergValue | undefined {
  if (raw === undefined || raw === null || typeof type !== 'string') return undefined;
  const logical = el.logical_type as { type?: string; unit?: string; isSigned?: boolean } | undefined;
  const unsigned =
    (el.converted_type ?? '').startsWith('UINT_') ||
    (logical?.type === 'INTEGER' && logical.isSigned === false);
  if (unsigned || el.converted_type === 'DECIMAL' || logical?.type === 'DECIMAL') return undefined;
  const unit =
    logical?.type === 'TIMESTAMP' || logical?.type === 'TIME'
      ? logical.unit
      : el.converted_type === 'TIMESTAMP_MICROS' || el.converted_type === 'TIME_MICROS'
        ? 'MICROS'
        : el.converted_type === 'TIMESTAMP_MILLIS' || el.converted_type === 'TIME_MILLIS'
          ? 'MILLIS'
          : undefined;
  const base = baseType(type);
  switch (base) {
    case 'boolean':
      return el.type === 'BOOLEAN' ? (raw as boolean) : undefined;
    case 'int':
      return el.type === 'INT32' ? Number(raw) : undefined;
    case 'long':
      return el.type === 'INT64' || el.type === 'INT32' ? BigInt(raw as number | bigint) : undefined;
    case 'date':
      return el.type === 'INT32' ? Number(raw) : undefined;
    case 'time':
      return el.type === 'INT64' && unit === 'MICROS' ? BigInt(raw as bigint) : undefined;
    case 'timestamp':
    case 'timestamptz': {
      if (el.type !== 'INT64') return undefined;
      if (unit === 'MICROS') return BigInt(raw as bigint);
      return unit === 'MILLIS' ? BigInt(raw as bigint) * 1000n : undefined;
    }
    case 'timestamp_ns':
    case 'timestamptz_ns': {
      if (el.type !== 'INT64') return undefined;
      const scale = unit === 'NANOS' ? 1n : unit === 'MICROS' ? 1000n : unit === 'MILLIS' ? 1_000_000n : 0n;
      return scale === 0n ? undefined : BigInt(raw as bigint) * scale;
    }
    case 'string':
    case 'binary':
      return el.type === 'BYTE_ARRAY' && raw instanceof Uint8Array ? raw : undefined;
    case 'fixed':
    case 'uuid':
      return el.type === 'FIXED_LEN_BYTE_ARRAY' && raw instanceof Uint8Array ? raw : undefined;
    default:
      // float and double: a footer cannot prove its min/max exclude NaN; decimal: hyparquet rounds it
      return undefined;
  }
}

function compare(a: IcebergValue, b: IcebergValue): number {
  if (a instanceof Uint8Array && b instanceof Uint8Array) return Buffer.compare(a, b);
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  return (a as number | bigint) < (b as number | bigint)
    ? -1
    : (a as number | bigint) > (b as number | bigint)
      ? 1
      : 0;
}

/** Statistics parsers that keep raw values: bytes stay bytes (no UTF-8 decoding), dates and timestamps raw. */
const RAW_PARSERS = {
  timestampFromMilliseconds: (v: bigint) => v,
  timestampFromMicroseconds: (v: bigint) => v,
  timestampFromNanoseconds: (v: bigint) => v,
  dateFromDays: (v: number) => v,
  stringFromBytes: (v: Uint8Array) => v,
  jsonFromBytes: (v: Uint8Array) => v,
  uuidFromBytes: (v: Uint8Array) => v,
  geometryFromBytes: (v: Uint8Array) => v,
  geographyFromBytes: (v: Uint8Array) => v,
};

/** Parses a footer (`tail` ends at the end of the file and holds the whole FileMetaData) keeping raw statistics. */
export function parseFooterForMetrics(key: string, tail: Uint8Array): FileMetaData {
  try {
    return parquetMetadata(tail, { parsers: RAW_PARSERS, geoparquet: false });
  } catch (err) {
    throw new CorruptInputError(key, `unreadable footer metadata (${(err as Error).message})`, {
      cause: err,
    });
  }
}

/**
 * Iceberg metrics of a Parquet file from its footer, as Iceberg's `ParquetUtil.footerMetrics` derives them:
 * columns are matched by the Parquet `field_id` (columns without one, or unknown to `schema`, get none);
 * `column_sizes` are compressed chunk sizes, `value_counts` chunk value counts (nulls included), `null_value_counts`
 * the statistics' null counts; lower/upper bounds the statistics' `min_value`/`max_value`, truncated per the
 * column's mode. A column missing statistics in any row group gets no null count and no bounds (an unknown value
 * must be absent, never guessed). Bounds are also left out where a footer cannot give sound ones: float and
 * double (NaN), decimals, unsigned and INT96 columns, and columns inside lists and maps (no counts either).
 */
export function parquetMetrics(
  meta: FileMetaData,
  fileSize: number,
  schema: IcebergSchema,
  config: MetricsConfig,
): DataFileMetrics {
  const fields = indexSchema(schema);
  const columnSizes = new Map<number, bigint>();
  const valueCounts = new Map<number, bigint>();
  const nullValueCounts = new Map<number, bigint>();
  const mins = new Map<number, IcebergValue>();
  const maxs = new Map<number, IcebergValue>();
  const noStats = new Set<number>();
  const noBounds = new Set<number>();
  const add = (m: Map<number, bigint>, id: number, v: bigint | number) =>
    m.set(id, (m.get(id) ?? 0n) + BigInt(v));
  const cols = leaves(meta.schema);
  const splitOffsets: bigint[] = [];
  for (const group of meta.row_groups) {
    const first = group.columns[0]?.meta_data;
    if (first !== undefined) {
      const data = BigInt(first.data_page_offset);
      const dict = first.dictionary_page_offset === undefined ? 0n : BigInt(first.dictionary_page_offset);
      splitOffsets.push(dict > 0n && dict < data ? dict : data);
    }
    group.columns.forEach((chunk, i) => {
      const leaf = cols[i];
      const md = chunk.meta_data;
      if (leaf?.fieldId === undefined || md === undefined) return;
      const id = leaf.fieldId;
      const field = fields.get(id);
      const mode = config.modeOf(id);
      if (field === undefined || mode.kind === 'none') return;
      add(columnSizes, id, md.total_compressed_size);
      if (leaf.repeated || field.repeated) return;
      add(valueCounts, id, md.num_values);
      const stats = md.statistics;
      if (stats?.null_count === undefined) {
        noStats.add(id);
        return;
      }
      add(nullValueCounts, id, stats.null_count);
      if (mode.kind === 'counts' || BigInt(stats.null_count) === BigInt(md.num_values)) return;
      const min = boundValue(field.type, leaf.element, stats.min_value);
      const max = boundValue(field.type, leaf.element, stats.max_value);
      if (min === undefined || max === undefined) {
        noBounds.add(id);
        return;
      }
      const curMin = mins.get(id);
      if (curMin === undefined || compare(min, curMin) < 0) mins.set(id, min);
      const curMax = maxs.get(id);
      if (curMax === undefined || compare(max, curMax) > 0) maxs.set(id, max);
    });
  }
  for (const id of noStats) nullValueCounts.delete(id);
  const lowerBounds = new Map<number, Uint8Array>();
  const upperBounds = new Map<number, Uint8Array>();
  for (const [id, min] of mins) {
    const max = maxs.get(id);
    const field = fields.get(id);
    if (noStats.has(id) || noBounds.has(id) || max === undefined || field === undefined || min === null)
      continue;
    const type = field.type as string;
    const mode = config.modeOf(id);
    const base = baseType(type);
    const length = mode.kind === 'truncate' ? mode.length : undefined;
    if (base === 'string') {
      const lo = new TextDecoder().decode(min as Uint8Array);
      const hi = new TextDecoder().decode(max as Uint8Array);
      lowerBounds.set(id, encodeSingleValue(type, length === undefined ? lo : truncateString(lo, length)));
      const upper = length === undefined ? hi : truncateStringMax(hi, length);
      if (upper !== undefined) upperBounds.set(id, encodeSingleValue(type, upper));
    } else if (base === 'binary' || base === 'fixed') {
      lowerBounds.set(
        id,
        Uint8Array.from(
          length === undefined ? (min as Uint8Array) : truncateBinary(min as Uint8Array, length),
        ),
      );
      const upper = length === undefined ? (max as Uint8Array) : truncateBinaryMax(max as Uint8Array, length);
      if (upper !== undefined) upperBounds.set(id, Uint8Array.from(upper));
    } else if (max !== null) {
      lowerBounds.set(id, encodeSingleValue(type, min));
      upperBounds.set(id, encodeSingleValue(type, max));
    }
  }
  return {
    recordCount: BigInt(meta.num_rows),
    fileSizeInBytes: BigInt(fileSize),
    columnSizes,
    valueCounts,
    nullValueCounts,
    nanValueCounts: new Map(),
    lowerBounds,
    upperBounds,
    splitOffsets: splitOffsets.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)),
  };
}

/** Bytes read from the end of the file first; the footers of files we write fit (see parquet/footer.ts). */
const FIRST_READ = 64 * 1024;

/**
 * Reads a Parquet file's footer through the store (one HEAD, one or two ranged GETs) and returns its Iceberg
 * metrics under the table's metrics configuration.
 * @throws CorruptInputError when the object is not a readable Parquet file.
 */
export async function readParquetMetrics(
  store: ObjectStore,
  key: string,
  schema: IcebergSchema,
  config: MetricsConfig,
): Promise<DataFileMetrics> {
  const info = await store.head(key);
  if (info === undefined) throw new CorruptInputError(key, 'the file does not exist');
  const size = info.size;
  if (size < 12) throw new CorruptInputError(key, `not a Parquet file: ${size} bytes`);
  let tail = await store.getRange(key, Math.max(0, size - FIRST_READ), size - 1);
  const length = new DataView(tail.buffer, tail.byteOffset, tail.byteLength).getUint32(tail.length - 8, true);
  if (length + 12 > size)
    throw new CorruptInputError(key, `footer length ${length} does not fit in ${size} bytes`);
  if (length + 8 > tail.length) tail = await store.getRange(key, size - 8 - length, size - 1);
  return parquetMetrics(parseFooterForMetrics(key, tail), size, schema, config);
}
