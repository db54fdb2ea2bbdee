// Per-leaf column statistics of a Parquet file from its footer alone: null counts summed and min/max combined over
// the row groups, decoded from the raw statistic bytes to exact logical values (bigint, unscaled decimals, epoch
// nanoseconds), keeping only bounds the Parquet format says are trustworthy.
import { parquetMetadata, type SchemaElement } from 'hyparquet';
// The Thrift decoder hyparquet parses footers with (a public subpath export): the raw Statistics bytes are needed
// because `parquetMetadata` decodes decimals and timestamps to floats and milliseconds, losing the exact value.
import { deserializeTCompactProtocol } from 'hyparquet/src/thrift.js';
import { CorruptInputError } from '../errors.js';
import { parseFooter } from './footer.js';
import { normalizedLogicalType, type ParquetLogicalType, schemaTree } from './schema.js';

/** A statistic decoded to its logical value, exactly. */
export type ParquetStatValue =
  /** Any INT32/INT64 integer (signed, unsigned, INT_8 … UINT_64). */
  | { readonly kind: 'integer'; readonly value: bigint }
  | { readonly kind: 'float'; readonly value: number }
  | { readonly kind: 'boolean'; readonly value: boolean }
  /** value = unscaled × 10^-scale, whatever the physical type (INT32, INT64, FIXED_LEN_BYTE_ARRAY, BYTE_ARRAY). */
  | { readonly kind: 'decimal'; readonly unscaled: bigint; readonly scale: number }
  /** Days since 1970-01-01. */
  | { readonly kind: 'date'; readonly days: number }
  /** Nanoseconds since the epoch, whatever the unit written (MILLIS, MICROS, NANOS, INT96). */
  | { readonly kind: 'timestamp'; readonly nanos: bigint; readonly adjustedToUTC: boolean }
  | { readonly kind: 'string'; readonly value: string }
  | { readonly kind: 'binary'; readonly value: Uint8Array };

/** One leaf column's statistics over the whole file. */
export interface ParquetColumnStats {
  /** Names from the first field under the root down to the leaf, as in `ParquetColumn.path`. */
  readonly path: readonly string[];
  /** The leaf's Parquet field id, when the writer set one (column mapping by id). */
  readonly fieldId?: number;
  readonly physicalType: string;
  readonly logicalType?: ParquetLogicalType;
  /**
   * True when the leaf or one of its ancestors is REPEATED (inside a list or map): its counts are per element,
   * not per row, so they say nothing about the row-level column that contains it.
   */
  readonly repeated: boolean;
  /** Sum over the row groups; absent when any row group does not record it. */
  readonly nullCount?: number;
  /**
   * The smallest value of the file; absent when all values are null or when any row group holding a non-null
   * value has no trustworthy minimum (missing, legacy field with the wrong sort order, INT96, undecodable).
   */
  readonly min?: ParquetStatValue;
  readonly max?: ParquetStatValue;
  /**
   * False when a row group's bound was only a bound (`is_min_value_exact = false`, as parquet-rs writes for
   * strings it truncated to 64 bytes): still ≤ every value (≥ for max), but maybe not a value of the file.
   */
  readonly minExact: boolean;
  readonly maxExact: boolean;
}

export interface ParquetFileStats {
  /** Total rows of the file. */
  readonly rows: number;
  /** Leaf columns in file order. */
  readonly columns: readonly ParquetColumnStats[];
}

/** Thrift field ids of the Parquet format (parquet.thrift) this module reads from the raw footer. */
const F = {
  fileRowGroups: 'field_4',
  fileColumnOrders: 'field_7',
  rowGroupColumns: 'field_1',
  chunkMetaData: 'field_3',
  metaNumValues: 'field_5',
  metaStatistics: 'field_12',
  statMax: 'field_1',
  statMin: 'field_2',
  statNullCount: 'field_3',
  statMaxValue: 'field_5',
  statMinValue: 'field_6',
  statMaxExact: 'field_7',
  statMinExact: 'field_8',
  orderTypeDefined: 'field_1',
} as const;

type Thrift = { readonly [key: `field_${number}`]: unknown };

interface Leaf {
  readonly path: readonly string[];
  readonly element: SchemaElement;
  readonly logicalType?: ParquetLogicalType;
  readonly repeated: boolean;
}

interface Bound {
  readonly value: ParquetStatValue;
  readonly exact: boolean;
}

/**
 * The statistics of every leaf column of a Parquet file, from its footer. `tail` holds the file's last bytes as
 * for `parseFooter` (which validates it first). Which bounds are trusted, per the Parquet format
 * (parquet.thrift `Statistics`, `ColumnOrder`):
 * - `min_value`/`max_value` when present, unless `column_orders` names an order other than TypeDefinedOrder;
 * - the deprecated `min`/`max` only for types whose order is signed (BOOLEAN, signed INT32/INT64, FLOAT,
 *   DOUBLE): old writers compared every type signed, so for strings, unsigned integers and byte-array
 *   decimals those fields can be wrong;
 * - INT96 (Spark's legacy timestamps) has no defined order, so its bounds are used only for a chunk with a
 *   single non-null value, where min = max = that value whatever the writer's comparison.
 * Row groups are combined by comparing the decoded values (strings in code-point order, as Parquet's unsigned
 * byte order of UTF-8 is). A row group that is all nulls contributes no bound.
 * @throws CorruptInputError when the footer is not sound (see `parseFooter`).
 */
export function parquetColumnStats(key: string, size: number, tail: Uint8Array): ParquetFileStats {
  const footer = parseFooter(key, size, tail);
  const bytes = tail.subarray(tail.length - 8 - footer.metadataLength, tail.length - 8);
  let raw: Thrift;
  let schema: SchemaElement[];
  try {
    raw = deserializeTCompactProtocol({
      view: new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength),
      offset: 0,
    });
    schema = parquetMetadata(tail.subarray(tail.length - 8 - footer.metadataLength), {
      geoparquet: false,
    }).schema;
  } catch (err) {
    throw new CorruptInputError(key, `unreadable footer metadata (${(err as Error).message})`, {
      cause: err,
    });
  }
  const leaves = leavesOf(schema);
  const orders = raw[F.fileColumnOrders] as Thrift[] | undefined;
  const groups = (raw[F.fileRowGroups] as Thrift[] | undefined) ?? [];

  const columns = leaves.map((leaf, index): ParquetColumnStats => {
    const typeDefinedOrder = orders === undefined || orders[index]?.[F.orderTypeDefined] !== undefined;
    let nullCount: number | undefined = 0;
    let min: Bound | undefined;
    let max: Bound | undefined;
    let boundsKnown = true;
    for (const group of groups) {
      const chunk = (group[F.rowGroupColumns] as Thrift[])[index];
      const meta = chunk?.[F.chunkMetaData] as Thrift | undefined;
      const stats = meta?.[F.metaStatistics] as Thrift | undefined;
      const nulls = stats?.[F.statNullCount] as bigint | undefined;
      const values = meta?.[F.metaNumValues] as bigint | undefined;
      nullCount = nulls === undefined || nullCount === undefined ? undefined : nullCount + Number(nulls);
      if (nulls !== undefined && values !== undefined && !leaf.repeated && nulls === values) continue;
      const bounds =
        stats === undefined ? undefined : chunkBounds(leaf, stats, typeDefinedOrder, values, nulls);
      if (bounds === undefined) {
        boundsKnown = false;
        continue;
      }
      // On a tie an exact bound wins: the value then occurs in the file.
      const minOrder = min === undefined ? -1 : compareStat(bounds.min.value, min.value);
      const maxOrder = max === undefined ? 1 : compareStat(bounds.max.value, max.value);
      if (minOrder < 0 || (minOrder === 0 && bounds.min.exact)) min = bounds.min;
      if (maxOrder > 0 || (maxOrder === 0 && bounds.max.exact)) max = bounds.max;
    }
    const keepBounds = boundsKnown && min !== undefined && max !== undefined;
    return {
      path: leaf.path,
      ...(leaf.element.field_id !== undefined && { fieldId: leaf.element.field_id }),
      physicalType: leaf.element.type ?? '',
      ...(leaf.logicalType !== undefined && { logicalType: leaf.logicalType }),
      repeated: leaf.repeated,
      ...(nullCount !== undefined && { nullCount }),
      ...(keepBounds && { min: min?.value, max: max?.value }),
      minExact: keepBounds && min?.exact === true,
      maxExact: keepBounds && max?.exact === true,
    };
  });
  return { rows: footer.rows, columns };
}

/** Leaves in file order with whether any level on their path repeats. */
function leavesOf(schema: readonly SchemaElement[]): Leaf[] {
  const out: Leaf[] = [];
  const walk = (node: ReturnType<typeof schemaTree>, repeated: boolean): void => {
    const here = repeated || node.element.repetition_type === 'REPEATED';
    if (node.children.length === 0) {
      const logicalType = normalizedLogicalType(node.element);
      out.push({
        path: node.path,
        element: node.element,
        ...(logicalType !== undefined && { logicalType }),
        repeated: here,
      });
      return;
    }
    for (const child of node.children) walk(child, here);
  };
  for (const child of schemaTree(schema).children) walk(child, false);
  return out;
}

/** Whether the deprecated `min`/`max` fields were computed with this type's order (signed comparison). */
function legacyOrderIsRight(leaf: Leaf): boolean {
  const type = leaf.element.type;
  if (type === 'BOOLEAN' || type === 'FLOAT' || type === 'DOUBLE') return true;
  if (type !== 'INT32' && type !== 'INT64') return false;
  return !(leaf.logicalType?.type === 'INTEGER' && leaf.logicalType.isSigned === false);
}

function chunkBounds(
  leaf: Leaf,
  stats: Thrift,
  typeDefinedOrder: boolean,
  values: bigint | undefined,
  nulls: bigint | undefined,
): { min: Bound; max: Bound } | undefined {
  if (leaf.element.type === 'INT96') {
    const single = values !== undefined && nulls !== undefined && !leaf.repeated && values - nulls === 1n;
    const only = (stats[F.statMinValue] ?? stats[F.statMin]) as Uint8Array | undefined;
    const value = single && only !== undefined ? decodeStat(leaf, only) : undefined;
    return value === undefined ? undefined : { min: { value, exact: true }, max: { value, exact: true } };
  }
  let minBytes = stats[F.statMinValue] as Uint8Array | undefined;
  let maxBytes = stats[F.statMaxValue] as Uint8Array | undefined;
  let minExact = stats[F.statMinExact] !== false;
  let maxExact = stats[F.statMaxExact] !== false;
  if (!typeDefinedOrder) minBytes = maxBytes = undefined;
  if ((minBytes === undefined || maxBytes === undefined) && legacyOrderIsRight(leaf)) {
    minBytes = stats[F.statMin] as Uint8Array | undefined;
    maxBytes = stats[F.statMax] as Uint8Array | undefined;
    minExact = maxExact = true;
  }
  if (minBytes === undefined || maxBytes === undefined) return undefined;
  const min = decodeStat(leaf, minBytes);
  const max = decodeStat(leaf, maxBytes);
  if (min === undefined || max === undefined) return undefined;
  return { min: { value: min, exact: minExact }, max: { value: max, exact: maxExact } };
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });
const NANOS_PER_DAY = 86_400_000_000_000n;
/** Julian day number of 1970-01-01: INT96 timestamps count days from the Julian epoch. */
const JULIAN_EPOCH_DAY = 2_440_588n;
const TIME_UNIT_NANOS = { MILLIS: 1_000_000n, MICROS: 1_000n, NANOS: 1n } as const;

/** Big-endian two's complement, as DECIMAL stores it in byte arrays. */
function bigEndianSigned(bytes: Uint8Array): bigint {
  let n = 0n;
  for (const b of bytes) n = (n << 8n) | BigInt(b);
  return bytes.length > 0 && (bytes[0] ?? 0) >= 0x80 ? n - (1n << BigInt(bytes.length * 8)) : n;
}

/** The logical value of one PLAIN-encoded statistic, or undefined for types or bytes it cannot stand for. */
export function decodeStat(
  leaf: Pick<Leaf, 'element' | 'logicalType'>,
  bytes: Uint8Array,
): ParquetStatValue | undefined {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const logical = leaf.logicalType;
  const decimalScale = logical?.type === 'DECIMAL' ? (logical.scale ?? 0) : undefined;
  switch (leaf.element.type) {
    case 'BOOLEAN':
      return bytes.length === 1 ? { kind: 'boolean', value: bytes[0] !== 0 } : undefined;
    case 'INT32': {
      if (bytes.length !== 4) return undefined;
      if (logical?.type === 'DATE') return { kind: 'date', days: view.getInt32(0, true) };
      if (decimalScale !== undefined) {
        return { kind: 'decimal', unscaled: BigInt(view.getInt32(0, true)), scale: decimalScale };
      }
      if (logical?.type === 'TIME') return undefined;
      const unsigned = logical?.type === 'INTEGER' && logical.isSigned === false;
      return { kind: 'integer', value: BigInt(unsigned ? view.getUint32(0, true) : view.getInt32(0, true)) };
    }
    case 'INT64': {
      if (bytes.length !== 8) return undefined;
      if (logical?.type === 'TIMESTAMP' && logical.unit !== undefined) {
        return {
          kind: 'timestamp',
          nanos: view.getBigInt64(0, true) * TIME_UNIT_NANOS[logical.unit],
          adjustedToUTC: logical.isAdjustedToUTC !== false,
        };
      }
      if (decimalScale !== undefined) {
        return { kind: 'decimal', unscaled: view.getBigInt64(0, true), scale: decimalScale };
      }
      if (logical?.type === 'TIME') return undefined;
      const unsigned = logical?.type === 'INTEGER' && logical.isSigned === false;
      return { kind: 'integer', value: unsigned ? view.getBigUint64(0, true) : view.getBigInt64(0, true) };
    }
    case 'INT96': {
      if (bytes.length !== 12) return undefined;
      const nanosOfDay = view.getBigInt64(0, true);
      const julianDay = BigInt(view.getInt32(8, true));
      return {
        kind: 'timestamp',
        nanos: (julianDay - JULIAN_EPOCH_DAY) * NANOS_PER_DAY + nanosOfDay,
        adjustedToUTC: true,
      };
    }
    case 'FLOAT':
      return bytes.length === 4 ? { kind: 'float', value: view.getFloat32(0, true) } : undefined;
    case 'DOUBLE':
      return bytes.length === 8 ? { kind: 'float', value: view.getFloat64(0, true) } : undefined;
    case 'BYTE_ARRAY':
    case 'FIXED_LEN_BYTE_ARRAY': {
      if (decimalScale !== undefined) {
        return bytes.length === 0
          ? undefined
          : { kind: 'decimal', unscaled: bigEndianSigned(bytes), scale: decimalScale };
      }
      const textual = logical?.type === 'STRING' || logical?.type === 'ENUM' || logical?.type === 'JSON';
      if (!textual || leaf.element.type !== 'BYTE_ARRAY') return { kind: 'binary', value: bytes.slice() };
      try {
        return { kind: 'string', value: UTF8.decode(bytes) };
      } catch {
        return undefined;
      }
    }
    default:
      return undefined;
  }
}

/** Code-point order: the order of UTF-8 bytes, which Parquet readers compare strings by. */
export function compareCodePoints(a: string, b: string): number {
  const x = Array.from(a);
  const y = Array.from(b);
  for (let i = 0; i < Math.min(x.length, y.length); i += 1) {
    const d = (x[i]?.codePointAt(0) ?? 0) - (y[i]?.codePointAt(0) ?? 0);
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  for (let i = 0; i < Math.min(a.length, b.length); i += 1) {
    const d = (a[i] ?? 0) - (b[i] ?? 0);
    if (d !== 0) return d;
  }
  return a.length - b.length;
}

const sign = (d: bigint): number => (d < 0n ? -1 : d > 0n ? 1 : 0);

/** Orders two statistics of one column (so of one kind; decimals of one column share their scale). */
function compareStat(a: ParquetStatValue, b: ParquetStatValue): number {
  switch (a.kind) {
    case 'integer':
      return sign(a.value - (b as typeof a).value);
    case 'decimal':
      return sign(a.unscaled - (b as typeof a).unscaled);
    case 'timestamp':
      return sign(a.nanos - (b as typeof a).nanos);
    case 'date':
      return a.days - (b as typeof a).days;
    case 'float':
      return a.value - (b as typeof a).value;
    case 'boolean':
      return Number(a.value) - Number((b as typeof a).value);
    case 'string':
      return compareCodePoints(a.value, (b as typeof a).value);
    case 'binary':
      return compareBytes(a.value, (b as typeof a).value);
  }
}
