// Parquet schema description and fingerprint: turns the footer's flat schema into leaf columns and
// a stable hex fingerprint that is equal exactly when two files can be written into one output file.
import { createHash } from 'node:crypto';
import type { SchemaElement } from 'hyparquet';

/** Timestamp and time resolution as the Parquet LogicalType says it. */
export type TimeUnit = 'MILLIS' | 'MICROS' | 'NANOS';

/**
 * A column's logical annotation, normalised: files from writers that only set the legacy
 * `converted_type` (old Spark, Hive) get the equivalent LogicalType, so `UTF8` and `STRING` or
 * `TIMESTAMP_MILLIS` and `TIMESTAMP(MILLIS, UTC)` compare equal.
 */
export interface ParquetLogicalType {
  /** Upper-case LogicalType name: STRING, DECIMAL, TIMESTAMP, INTEGER, LIST, MAP, … */
  readonly type: string;
  readonly unit?: TimeUnit;
  readonly isAdjustedToUTC?: boolean;
  readonly bitWidth?: number;
  readonly isSigned?: boolean;
  readonly precision?: number;
  readonly scale?: number;
}

export type Repetition = 'REQUIRED' | 'OPTIONAL' | 'REPEATED';

/** One leaf (physical) column of a Parquet file. */
export interface ParquetColumn {
  /** Names from the first field under the root down to the leaf, e.g. `['tags', 'list', 'element']`. */
  readonly path: readonly string[];
  /** BOOLEAN, INT32, INT64, INT96, FLOAT, DOUBLE, BYTE_ARRAY or FIXED_LEN_BYTE_ARRAY. */
  readonly physicalType: string;
  /** Normalised logical annotation (see ParquetLogicalType); absent for plain physical columns. */
  readonly logicalType?: ParquetLogicalType;
  /** The legacy annotation exactly as written, when the writer wrote one. */
  readonly convertedType?: string;
  readonly repetition: Repetition;
  /** Byte width of FIXED_LEN_BYTE_ARRAY columns. */
  readonly typeLength?: number;
  /** Decimal precision and scale, when the column is a decimal. */
  readonly precision?: number;
  readonly scale?: number;
}

/** Raised by this module when the flat schema list does not form a tree; the footer reader maps it. */
export class MalformedSchemaError extends Error {
  override readonly name = 'MalformedSchemaError';
}

interface SchemaNode {
  readonly element: SchemaElement;
  readonly path: readonly string[];
  readonly children: readonly SchemaNode[];
}

/**
 * Rebuilds the schema tree from the footer's depth-first list, checking that `num_children`
 * adds up — a corrupt footer must fail here rather than produce a silently wrong column list.
 */
export function schemaTree(elements: readonly SchemaElement[]): SchemaNode {
  let next = 0;
  const visit = (path: readonly string[], depth: number): SchemaNode => {
    const element = elements[next];
    if (element === undefined) {
      throw new MalformedSchemaError(`schema list ends early at element ${next} of ${elements.length}`);
    }
    if (depth > 256) throw new MalformedSchemaError('schema is nested deeper than 256 levels');
    next += 1;
    const own = depth === 0 ? path : [...path, element.name];
    const count = element.num_children ?? 0;
    if (count < 0) throw new MalformedSchemaError(`element ${element.name} has ${count} children`);
    const children: SchemaNode[] = [];
    for (let i = 0; i < count; i += 1) children.push(visit(own, depth + 1));
    return { element, path: own, children };
  };
  const root = visit([], 0);
  if (next !== elements.length) {
    throw new MalformedSchemaError(`schema tree covers ${next} of ${elements.length} elements`);
  }
  if (root.children.length === 0) throw new MalformedSchemaError('schema has no columns');
  return root;
}

/** The legacy ConvertedType → LogicalType mapping of the Parquet format spec (LogicalTypes.md). */
function fromConvertedType(element: SchemaElement): ParquetLogicalType | undefined {
  const converted = element.converted_type;
  switch (converted) {
    case undefined:
      return undefined;
    case 'UTF8':
      return { type: 'STRING' };
    case 'MAP':
    case 'MAP_KEY_VALUE':
      return { type: 'MAP' };
    case 'DECIMAL':
      return { type: 'DECIMAL', precision: element.precision ?? 0, scale: element.scale ?? 0 };
    case 'TIME_MILLIS':
      return { type: 'TIME', unit: 'MILLIS', isAdjustedToUTC: true };
    case 'TIME_MICROS':
      return { type: 'TIME', unit: 'MICROS', isAdjustedToUTC: true };
    case 'TIMESTAMP_MILLIS':
      return { type: 'TIMESTAMP', unit: 'MILLIS', isAdjustedToUTC: true };
    case 'TIMESTAMP_MICROS':
      return { type: 'TIMESTAMP', unit: 'MICROS', isAdjustedToUTC: true };
    case 'UINT_8':
    case 'UINT_16':
    case 'UINT_32':
    case 'UINT_64':
      return { type: 'INTEGER', bitWidth: Number(converted.slice(5)), isSigned: false };
    case 'INT_8':
    case 'INT_16':
    case 'INT_32':
    case 'INT_64':
      return { type: 'INTEGER', bitWidth: Number(converted.slice(4)), isSigned: true };
    default:
      // LIST, ENUM, DATE, JSON, BSON, INTERVAL carry no parameters.
      return { type: converted };
  }
}

/**
 * The element's logical type: the LogicalType when written (it is the newer, more precise field),
 * else the one its ConvertedType implies. Unknown LogicalType unions (from a format version
 * newer than the parser) are kept as `UNKNOWN:<json>` so they never compare equal by accident.
 */
export function normalizedLogicalType(element: SchemaElement): ParquetLogicalType | undefined {
  const logical = element.logical_type as unknown;
  if (logical === undefined || logical === null) return fromConvertedType(element);
  const l = logical as Record<string, unknown>;
  if (typeof l.type !== 'string') {
    return { type: `UNKNOWN:${JSON.stringify(logical, (_k, v) => (typeof v === 'bigint' ? String(v) : v))}` };
  }
  switch (l.type) {
    case 'DECIMAL':
      return { type: 'DECIMAL', precision: Number(l.precision), scale: Number(l.scale) };
    case 'TIME':
    case 'TIMESTAMP':
      return { type: l.type, unit: l.unit as TimeUnit, isAdjustedToUTC: Boolean(l.isAdjustedToUTC) };
    case 'INTEGER':
      return { type: 'INTEGER', bitWidth: Number(l.bitWidth), isSigned: Boolean(l.isSigned) };
    default:
      return { type: l.type };
  }
}

/** Leaf columns in file order (the order of the row groups' column chunks). */
export function leafColumns(root: SchemaNode): ParquetColumn[] {
  const out: ParquetColumn[] = [];
  const walk = (node: SchemaNode): void => {
    if (node.children.length > 0) {
      for (const child of node.children) walk(child);
      return;
    }
    const e = node.element;
    if (e.type === undefined)
      throw new MalformedSchemaError(`leaf ${node.path.join('.')} has no physical type`);
    const logicalType = normalizedLogicalType(e);
    const decimal = logicalType?.type === 'DECIMAL';
    out.push({
      path: node.path,
      physicalType: e.type,
      ...(logicalType !== undefined && { logicalType }),
      ...(e.converted_type !== undefined && { convertedType: e.converted_type }),
      repetition: e.repetition_type ?? 'REQUIRED',
      ...(e.type === 'FIXED_LEN_BYTE_ARRAY' && e.type_length !== undefined && { typeLength: e.type_length }),
      ...(decimal && { precision: logicalType.precision, scale: logicalType.scale }),
    });
  };
  for (const child of root.children) walk(child);
  return out;
}

/**
 * Canonical text of one schema node for the fingerprint. What goes in, per node in depth-first
 * order: the name (not for the root, whose name is writer-specific: `spark_schema`,
 * `duckdb_schema`, `arrow_schema`…), the repetition (the root has none), the number of children
 * (group structure), the physical type, the type length (FIXED_LEN_BYTE_ARRAY only), and the
 * normalised logical type with its parameters (decimal precision/scale, time/timestamp unit and
 * isAdjustedToUTC, integer bit width and signedness). What stays out: field ids, key-value
 * metadata (including the embedded Arrow schema), encodings, codecs, statistics, and whether the
 * annotation was written as a ConvertedType or a LogicalType.
 */
function canonicalNode(node: SchemaNode, isRoot: boolean): unknown[] {
  const e = node.element;
  const logical = normalizedLogicalType(e);
  return [
    isRoot ? '' : e.name,
    isRoot ? '' : (e.repetition_type ?? 'REQUIRED'),
    node.children.length,
    e.type ?? '',
    e.type === 'FIXED_LEN_BYTE_ARRAY' ? (e.type_length ?? 0) : 0,
    logical === undefined
      ? ''
      : [
          logical.type,
          logical.unit ?? '',
          logical.isAdjustedToUTC ?? '',
          logical.bitWidth ?? '',
          logical.isSigned ?? '',
          logical.precision ?? '',
          logical.scale ?? '',
        ],
    node.children.map((child) => canonicalNode(child, false)),
  ];
}

/**
 * SHA-256 (hex, 64 characters) of the canonical schema text described at `canonicalNode`. Stable
 * across processes and versions of this code as long as that list does not change; two files
 * with equal fingerprints can be decoded into one Arrow schema and written into one output.
 */
export function schemaFingerprint(root: SchemaNode): string {
  const text = JSON.stringify(['parquet-schema/v1', canonicalNode(root, true)]);
  return createHash('sha256').update(text).digest('hex');
}
