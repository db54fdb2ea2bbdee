// A data file projected onto the table's current schema, as Iceberg's readers project it (spec, "Schema Evolution",
// "Default values" and "Column Projection"; Java's ParquetSchemaUtil / TypeWithSchemaVisitor): columns are matched by
// field id, never by name or position, so a renamed column keeps its values under its current name, a dropped column
// is not written, a column added after the file was written is its `initial-default` in its rows (null without one),
// and a column whose type was promoted (int → long, float → double, decimal(P, S) → decimal(P', S) with P' > P; in
// format v3 also date → timestamp) is widened — at any depth of nested structs, lists and maps, whose fields,
// elements, keys and values are matched by id too.
// A v3 table's row lineage columns are carried through after the schema's. What cannot be projected exactly is
// named, and the file left alone.
import type { SchemaElement } from 'hyparquet';
import { z } from 'zod';
import { LAST_UPDATED_SEQUENCE_NUMBER_FIELD, ROW_ID_FIELD } from '../../../ports/parquet-engine.js';
import {
  type ColumnProjection,
  type FooterSchemaNode,
  footerSchemaTree,
  LIST_ELEMENT,
  MAP_KEY,
  MAP_VALUE,
  nestedFormOf,
  type ProjectedColumn,
  type ProjectedDefault,
  type ProjectedField,
  type ProjectedFieldSource,
  type ProjectedPrimitive,
  type ProjectedSource,
  type ProjectedType,
  type ProjectedValue,
  projectedLeafType,
  projectedValueProblem,
} from '../../projection.js';
import type { IcebergField, IcebergSchema, IcebergType } from './metadata.js';

/** The footer entry Iceberg's Parquet writer records the write schema in (Java's `ParquetWriter`, "iceberg.schema"). */
export const ICEBERG_SCHEMA_FOOTER_KEY = 'iceberg.schema';

/**
 * What becomes of one data file under the current schema: projected (`projection`), left alone with why
 * (`refused`: it was written under an older schema this projection cannot carry over exactly), or written as it is
 * (`as-written`: its columns are the current schema's by id, name and type, but a type of it — a v3 variant, a list
 * in a legacy two-level form — is one the projection does not describe, so it keeps today's path: grouped with
 * files of its own Parquet schema).
 */
export type FileProjection =
  | { readonly kind: 'projected'; readonly projection: ColumnProjection }
  | { readonly kind: 'refused'; readonly reason: string }
  | { readonly kind: 'as-written' };

type Node = FooterSchemaNode;

/** Why a projection stops: the column (current name) and what about it cannot be carried over. */
class NotProjectable extends Error {
  constructor(
    readonly column: string,
    readonly why: string,
    /** The file's column matches the current schema but the projection cannot describe its type. */
    readonly describable = true,
  ) {
    super(`${column}: ${why}`);
  }
}

/** Iceberg's name of each projected primitive (the spec's primitive types). */
const ICEBERG_PRIMITIVE: Readonly<Partial<Record<ProjectedPrimitive, string>>> = {
  boolean: 'boolean',
  int32: 'int',
  int64: 'long',
  float32: 'float',
  float64: 'double',
  date32: 'date',
  'timestamp-us': 'timestamp',
  'timestamp-us-utc': 'timestamptz',
  'timestamp-ns': 'timestamp_ns',
  'timestamp-ns-utc': 'timestamptz_ns',
  'time-us': 'time',
  string: 'string',
  binary: 'binary',
  uuid: 'uuid',
};

/**
 * The Iceberg primitive a Parquet leaf holds, as Iceberg's Parquet reader maps it (the leaf's projected type, read
 * as every projection reads it, in Iceberg's spelling); undefined: none it reads here.
 */
function primitiveOf(e: SchemaElement): string | undefined {
  const type = projectedLeafType(e);
  if (type === undefined) return undefined;
  // Iceberg has no byte or short type: a narrow integer leaf is not one this projection reads (as before).
  if (typeof type === 'string') return ICEBERG_PRIMITIVE[type];
  if ('decimal' in type) return `decimal(${type.decimal.precision}, ${type.decimal.scale})`;
  if ('fixed' in type) return `fixed[${type.fixed}]`;
  return undefined;
}

/**
 * The Iceberg type a leaf in milliseconds holds, and the widening to the microseconds every Iceberg type is in:
 * Iceberg's Parquet readers read TIMESTAMP(MILLIS) (and the legacy TIMESTAMP_MILLIS) as a timestamp in microseconds
 * and TIME(MILLIS) as a time in microseconds, times 1,000 (Java's `TimestampMillisReader`, `TimeMillisReader`) —
 * files that migrated or imported tables hold, written by Avro-based writers. Undefined for any other leaf.
 */
function millisOf(
  e: SchemaElement,
): { readonly type: string; readonly widen: 'timestamp-ms-us' | 'time-ms-us' } | undefined {
  const logical = e.logical_type;
  if (e.type === 'INT64' && logical?.type === 'TIMESTAMP' && logical.unit === 'MILLIS')
    return { type: logical.isAdjustedToUTC ? 'timestamptz' : 'timestamp', widen: 'timestamp-ms-us' };
  if (e.type === 'INT64' && logical === undefined && e.converted_type === 'TIMESTAMP_MILLIS')
    return { type: 'timestamptz', widen: 'timestamp-ms-us' };
  // A time of day is read so whatever its UTC flag says (Iceberg's `time` has no zone).
  if (e.type === 'INT32' && logical?.type === 'TIME' && logical.unit === 'MILLIS')
    return { type: 'time', widen: 'time-ms-us' };
  if (e.type === 'INT32' && logical === undefined && e.converted_type === 'TIME_MILLIS')
    return { type: 'time', widen: 'time-ms-us' };
  return undefined;
}

const DECIMAL = /^decimal\((\d+),\s*(\d+)\)$/;
const FIXED = /^fixed\[(\d+)\]$/;

/**
 * Whether `f` is of the v3 `unknown` type: always null and never stored in data files (spec, "Primitive Types"), so
 * it has no column in a file nor in an output: readers give null for it whatever file they read.
 */
function isUnknown(f: IcebergField): boolean {
  return f.type === 'unknown';
}

/** The fields of `fields` a data file stores: all but those of the `unknown` type. */
function storedFields(fields: readonly IcebergField[]): readonly IcebergField[] {
  return fields.filter((f) => !isUnknown(f));
}

/**
 * Checks what the spec demands of an `unknown` field (optional, null defaults) and that the file does not store
 * it; a table that breaks either is named, not guessed at.
 */
function checkUnknown(column: string, f: IcebergField, inFile: boolean): void {
  if (f.required)
    throw new NotProjectable(column, 'it is of the unknown type but required, which the spec does not allow');
  for (const key of ['initial-default', 'write-default'] as const) {
    const value = f[key];
    if (value !== undefined && value !== null)
      throw new NotProjectable(
        column,
        `it is of the unknown type with the ${key} ${JSON.stringify(value)}, but an unknown column's defaults must be null (spec, "Default values")`,
      );
  }
  if (inFile)
    throw new NotProjectable(
      column,
      'it is of the unknown type, which is never stored in data files, but the file has a column of its field id',
    );
}

/** A list type as the table metadata spells it (spec, Appendix C: `element-id`, `element`, `element-required`). */
const listTypeSchema = z.looseObject({
  type: z.literal('list'),
  'element-id': z.number().int(),
  element: z.unknown(),
  'element-required': z.boolean(),
});
/** A map type as the table metadata spells it (`key-id`, `key`, `value-id`, `value`, `value-required`). */
const mapTypeSchema = z.looseObject({
  type: z.literal('map'),
  'key-id': z.number().int(),
  key: z.unknown(),
  'value-id': z.number().int(),
  value: z.unknown(),
  'value-required': z.boolean(),
});

/** An element, key or value type: a primitive's name or a nested type, as a field's type is spelled. */
function nestedTypeOf(column: string, raw: unknown): IcebergType {
  if (typeof raw === 'string') return raw;
  if (typeof raw === 'object' && raw !== null && typeof (raw as { type?: unknown }).type === 'string')
    return raw as IcebergType;
  throw new NotProjectable(column, `its type ${JSON.stringify(raw)} is not an Iceberg type`, false);
}

/**
 * A list's element as a field (named `element`, as Parquet's standard list names it), so it is projected as a
 * struct field is: by its id, with its own nullability and type.
 * @throws NotProjectable (not describable) for a list type the table metadata spells otherwise than the spec.
 */
function listTypeOf(column: string, type: IcebergType): { readonly element: IcebergField } {
  const parsed = listTypeSchema.safeParse(type);
  if (!parsed.success)
    throw new NotProjectable(
      column,
      `its list type ${JSON.stringify(type)} is not one the spec spells`,
      false,
    );
  const l = parsed.data;
  return {
    element: {
      id: l['element-id'],
      name: LIST_ELEMENT,
      required: l['element-required'],
      type: nestedTypeOf(`${column}.${LIST_ELEMENT}`, l.element),
    },
  };
}

/**
 * A map's key and value as fields (named `key` and `value`): a key is always required (spec, "Nested Types").
 * @throws NotProjectable (not describable) for a map type the table metadata spells otherwise than the spec.
 */
function mapTypeOf(
  column: string,
  type: IcebergType,
): { readonly key: IcebergField; readonly value: IcebergField } {
  const parsed = mapTypeSchema.safeParse(type);
  if (!parsed.success)
    throw new NotProjectable(
      column,
      `its map type ${JSON.stringify(type)} is not one the spec spells`,
      false,
    );
  const m = parsed.data;
  return {
    key: {
      id: m['key-id'],
      name: MAP_KEY,
      required: true,
      type: nestedTypeOf(`${column}.${MAP_KEY}`, m.key),
    },
    value: {
      id: m['value-id'],
      name: MAP_VALUE,
      required: m['value-required'],
      type: nestedTypeOf(`${column}.${MAP_VALUE}`, m.value),
    },
  };
}

/** The written type of a current-schema type, or NotProjectable for one this projection does not describe. */
function projectedTypeOf(column: string, type: IcebergType): ProjectedType {
  if (typeof type === 'string') {
    const decimal = DECIMAL.exec(type);
    if (decimal !== null) return { decimal: { precision: Number(decimal[1]), scale: Number(decimal[2]) } };
    const fixed = FIXED.exec(type);
    if (fixed !== null && Number(fixed[1]) > 0) return { fixed: Number(fixed[1]) };
    const p = (Object.keys(ICEBERG_PRIMITIVE) as ProjectedPrimitive[]).find(
      (k) => ICEBERG_PRIMITIVE[k] === type,
    );
    if (p === undefined)
      throw new NotProjectable(column, `its type ${type} is not one this rewrite projects`, false);
    return p;
  }
  if (type.type === 'list') {
    const list = listTypeOf(column, type);
    return { list: projectedFieldOf(`${column}.${LIST_ELEMENT}`, list.element) };
  }
  if (type.type === 'map') {
    const map = mapTypeOf(column, type);
    return {
      map: {
        key: projectedFieldOf(`${column}.${MAP_KEY}`, map.key),
        value: projectedFieldOf(`${column}.${MAP_VALUE}`, map.value),
      },
    };
  }
  if (type.type === 'struct') {
    const fields = storedFields((type.fields ?? []) as readonly IcebergField[]);
    if (fields.length === 0)
      throw new NotProjectable(
        column,
        'every field of the struct is of the unknown type, so a data file has nothing of it to store',
        false,
      );
    return { struct: fields.map((f) => projectedFieldOf(`${column}.${f.name}`, f)) };
  }
  throw new NotProjectable(column, `its type is a ${type.type}, which this rewrite does not project`, false);
}

function projectedFieldOf(column: string, f: IcebergField): ProjectedField {
  return { name: f.name, fieldId: f.id, nullable: !f.required, type: projectedTypeOf(column, f.type) };
}

type FormatVersion = 1 | 2 | 3;

/**
 * The value rows of a file written without field `f` read as (spec, "Default values"): its `initial-default` in the
 * projection's spelling (see ProjectedDefault); undefined when it has none (null, or absent: the rows read null). A
 * struct's non-null default is `{}`, a struct whose fields are each their own `initial-default` (or null).
 * `write-default` is not read: it is for rows written after the field was added, and a rewrite writes none.
 * @throws NotProjectable for a required field without one, a default of a type the rewrite does not write, a
 * struct default holding field values (the spec keeps them in the fields' own defaults), or a default that is not
 * its type's JSON single-value serialization.
 */
function initialDefaultOf(column: string, f: IcebergField): ProjectedDefault | undefined {
  const raw = f['initial-default'];
  if (raw === undefined || raw === null) {
    if (f.required) throw new NotProjectable(column, 'it is required but the file does not have it');
    return undefined;
  }
  if (typeof f.type !== 'string') {
    if (f.type.type !== 'struct')
      throw new NotProjectable(
        column,
        `it was added with the initial-default ${JSON.stringify(raw)} of a ${f.type.type}, which this rewrite does not write`,
      );
    if (typeof raw !== 'object' || Array.isArray(raw) || Object.keys(raw).length > 0)
      throw new NotProjectable(
        column,
        `its initial-default ${JSON.stringify(raw)} is not {} (a struct's default holds no field values: each field has its own)`,
      );
    const fields = (f.type.fields ?? []) as readonly IcebergField[];
    for (const sub of fields) if (isUnknown(sub)) checkUnknown(`${column}.${sub.name}`, sub, false);
    return {
      struct: storedFields(fields).map((sub) => initialDefaultOf(`${column}.${sub.name}`, sub) ?? null),
    };
  }
  const type = projectedTypeOf(column, f.type);
  const value = icebergDefaultValue(f.type, raw);
  const why =
    typeof value === 'string' && value.startsWith('!') ? value.slice(1) : projectedValueProblem(type, value);
  if (why !== undefined)
    throw new NotProjectable(
      column,
      `its initial-default ${JSON.stringify(raw)} is not a ${f.type} as Iceberg's JSON single-value serialization spells it${why === undefined ? '' : ` (${why})`}`,
    );
  return value;
}

/** Days from 1970-01-01 to the proleptic Gregorian `y-m-d` (exact integer arithmetic, any year). */
function daysFromCivil(y: number, m: number, d: number): number {
  const yy = m <= 2 ? y - 1 : y;
  const era = Math.floor(yy / 400);
  const yoe = yy - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

function daysInMonth(y: number, m: number): number {
  if (m === 2) return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(m) ? 30 : 31;
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
/** An ISO-8601 time of day with at most microseconds (Appendix D: `22:31:08.123456`); seconds may be left out. */
const TIME = /^(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?$/;
/** A UUID's canonical text, 8-4-4-4-12 hex digits (either case, as Java's `UUID.fromString` reads it). */
const UUID = /^([0-9a-fA-F]{8})-([0-9a-fA-F]{4})-([0-9a-fA-F]{4})-([0-9a-fA-F]{4})-([0-9a-fA-F]{12})$/;
/**
 * An ISO-8601 date and time with at most nanoseconds (microseconds for `timestamp`/`timestamptz`), and a zone offset (`±hh:mm`, or `Z`) or none. Appendix D
 * writes a timestamptz with `+00:00`; Iceberg's own reader (Java's `OffsetDateTime` parse) takes any offset and
 * reads the instant in UTC, which is exact, so this does too.
 */
const TIMESTAMP =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:([+-])(\d{2}):(\d{2})|(Z))?$/;

/** Days since 1970-01-01 of an ISO-8601 date `yyyy-mm-dd`; undefined when it is not one (or not a calendar day). */
function isoDays(y: string, m: string, d: string): number | undefined {
  const [year, month, day] = [Number(y), Number(m), Number(d)];
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  return daysFromCivil(year, month, day);
}

/**
 * An Iceberg JSON single-value (spec, Appendix D) of primitive `type` in the projection's spelling, or `!why` when
 * it is not one this rewrite reads exactly; checked against the projected type by the caller.
 */
function icebergDefaultValue(type: string, raw: unknown): ProjectedValue {
  const fixed = FIXED.exec(type);
  if (fixed !== null) {
    // Its bytes as hexadecimal, exactly as many as the type's length.
    const length = Number(fixed[1]);
    return typeof raw === 'string' && /^([0-9a-fA-F]{2})*$/.test(raw) && raw.length === length * 2
      ? raw.toLowerCase()
      : `!not a hexadecimal string of exactly ${length} bytes`;
  }
  const decimal = DECIMAL.exec(type);
  if (decimal !== null) {
    // "14.20": as many digits right of the point as the scale (a negative scale is not an Iceberg type here).
    const scale = Number(decimal[2]);
    const m = typeof raw === 'string' ? /^(-?)(\d+)(?:\.(\d+))?$/.exec(raw) : null;
    if (m === null || (m[3] ?? '').length !== scale)
      return `!it has not exactly ${scale} digits after the point`;
    const unscaled = BigInt(`${m[1]}${m[2]}${m[3] ?? ''}`);
    return unscaled.toString();
  }
  switch (type) {
    case 'boolean':
      return typeof raw === 'boolean' ? raw : '!not a JSON boolean';
    case 'int':
      return typeof raw === 'number' ? raw : '!not a JSON int';
    case 'long':
      // Long literals past 2^53 reach here as their decimal string (json.ts keeps every digit).
      if (typeof raw === 'number' && Number.isSafeInteger(raw)) return String(raw);
      return typeof raw === 'string' && /^-?\d+$/.test(raw) ? raw : '!not a JSON long';
    case 'float':
      // The float nearest the JSON number, as Iceberg Java reads it (the number's double, narrowed).
      return typeof raw === 'number' ? Math.fround(raw) : '!not a JSON number';
    case 'double':
      if (typeof raw === 'number') return raw;
      // An integral literal of more than 15 digits arrives as its text: its double, as a JSON reader reads it.
      return typeof raw === 'string' && /^-?\d+$/.test(raw) ? Number(raw) : `!not a JSON number`;
    case 'date': {
      const m = typeof raw === 'string' ? DATE.exec(raw) : null;
      const days = m === null ? undefined : isoDays(m[1] as string, m[2] as string, m[3] as string);
      return days ?? '!not an ISO-8601 date yyyy-mm-dd';
    }
    case 'timestamp':
    case 'timestamptz':
    case 'timestamp_ns':
    case 'timestamptz_ns': {
      const nanos = type.endsWith('_ns');
      const digits = nanos ? 9 : 6;
      const m = typeof raw === 'string' ? TIMESTAMP.exec(raw) : null;
      if (m === null || (m[7] ?? '').length > digits)
        return `!not an ISO-8601 timestamp with at most ${nanos ? 'nanoseconds' : 'microseconds'}`;
      const zoned = m[8] !== undefined || m[11] !== undefined;
      if (type.startsWith('timestamptz') !== zoned)
        return type.startsWith('timestamptz')
          ? `!a ${type} has a zone offset (+00:00)`
          : `!a ${type} has no zone offset`;
      const days = isoDays(m[1] as string, m[2] as string, m[3] as string);
      const [h, min, sec] = [Number(m[4]), Number(m[5]), Number(m[6] ?? 0)];
      if (days === undefined || h > 23 || min > 59 || sec > 59) return '!not a calendar day and time of day';
      // The offset's minutes east of UTC: the UTC instant is the local time minus them (exact integer arithmetic).
      const [offsetH, offsetMin] = [Number(m[9] ?? 0), Number(m[10] ?? 0)];
      if (offsetH > 18 || offsetMin > 59 || (offsetH === 18 && offsetMin > 0))
        return '!its zone offset is not one from -18:00 to +18:00';
      const perSecond = nanos ? 1_000_000_000n : 1_000_000n;
      const minutes = (BigInt(days) * 24n + BigInt(h)) * 60n + BigInt(min);
      const offset = BigInt((m[8] === '-' ? -1 : 1) * (offsetH * 60 + offsetMin));
      // Out of the 64-bit range (a nanosecond timestamp outside 1677-09-21 … 2262-04-11): refused by the caller's check.
      return (
        (minutes - offset) * 60n * perSecond +
        BigInt(sec) * perSecond +
        BigInt((m[7] ?? '').padEnd(digits, '0'))
      ).toString();
    }
    case 'time': {
      // Microseconds since midnight; more than six fraction digits would not be exact.
      const m = typeof raw === 'string' ? TIME.exec(raw) : null;
      if (m === null) return '!not an ISO-8601 time of day HH:MM:SS[.ffffff] with at most microseconds';
      const [h, min, sec] = [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)];
      if (h > 23 || min > 59 || sec > 59) return '!not a time of day';
      return (
        BigInt((h * 60 + min) * 60 + sec) * 1_000_000n +
        BigInt((m[4] ?? '').padEnd(6, '0'))
      ).toString();
    }
    case 'uuid': {
      // The 16 bytes in the order the text spells them (RFC 4122; Iceberg stores them so, big-endian).
      const m = typeof raw === 'string' ? UUID.exec(raw) : null;
      return m === null
        ? '!not a UUID in its canonical 8-4-4-4-12 hexadecimal form'
        : m.slice(1).join('').toLowerCase();
    }
    case 'string':
      return typeof raw === 'string' ? raw : '!not a JSON string';
    case 'binary':
      return typeof raw === 'string' && /^([0-9a-fA-F]{2})*$/.test(raw)
        ? raw.toLowerCase()
        : '!not a hexadecimal string';
    default:
      return `!a ${type} default is not one this rewrite writes`;
  }
}

/** How a file's column becomes the current field: widened, or (a struct) rebuilt field by field; empty: as it is. */
type SourceShape = Omit<ProjectedSource, 'column'>;

/**
 * Checks that the file's column `node` can be read as the current field `f` exactly, as Iceberg's readers read it:
 * a struct's fields matched by field id at any depth (a nested field added since is null, one dropped is not
 * written, one renamed keeps its values), and the promotions Iceberg allows; returns how the column is converted.
 */
function sourceOf(column: string, f: IcebergField, node: Node, formatVersion: FormatVersion): SourceShape {
  const e = node.element;
  if (f.required && e.repetition_type !== 'REQUIRED')
    throw new NotProjectable(column, 'it is required now but optional in the file');
  if (e.repetition_type === 'REPEATED')
    throw new NotProjectable(column, 'it is a repeated field in the file');
  if (typeof f.type !== 'string') {
    if (f.type.type === 'list') {
      const [element] = repeatedOf(column, node, 'list');
      return nestedSource(
        'element',
        column,
        listTypeOf(column, f.type).element,
        element as Node,
        formatVersion,
      );
    }
    if (f.type.type === 'map') {
      const [key, value] = repeatedOf(column, node, 'map');
      const map = mapTypeOf(column, f.type);
      const shape = {
        ...nestedSource('key', column, map.key, key as Node, formatVersion),
        ...nestedSource('value', column, map.value, value as Node, formatVersion),
      };
      return shape;
    }
    if (f.type.type !== 'struct')
      throw new NotProjectable(
        column,
        `its type is a ${f.type.type}, which this rewrite does not project`,
        false,
      );
    if (node.children.length === 0)
      throw new NotProjectable(column, 'it is a struct now but a primitive in the file');
    return structSource(column, (f.type.fields ?? []) as readonly IcebergField[], node, formatVersion);
  }
  if (node.children.length > 0)
    throw new NotProjectable(column, `it is ${f.type} now but a group in the file`);
  const millis = millisOf(e);
  if (millis !== undefined) {
    if (millis.type === f.type) return { widen: millis.widen };
    throw new NotProjectable(
      column,
      `it is ${f.type} now but ${millis.type} in milliseconds in the file, which is not a promotion Iceberg allows`,
    );
  }
  const was = primitiveOf(e);
  if (was === undefined)
    throw new NotProjectable(
      column,
      `the file's ${e.type} ${JSON.stringify(e.logical_type ?? e.converted_type ?? null)} column is not one this rewrite reads`,
    );
  if (was === f.type) return {};
  if (was === 'int' && f.type === 'long') return { widen: 'int32-int64' };
  if (was === 'float' && f.type === 'double') return { widen: 'float32-float64' };
  const from = DECIMAL.exec(was);
  const to = DECIMAL.exec(f.type);
  if (from !== null && to !== null && from[2] === to[2] && Number(to[1]) > Number(from[1]))
    return { widen: 'decimal' };
  if (was === 'date' && (f.type === 'timestamp' || f.type === 'timestamp_ns')) {
    if (formatVersion < 3)
      throw new NotProjectable(
        column,
        `it is ${f.type} now but date in the file, a promotion Iceberg allows from format version 3 only (the table is at ${formatVersion})`,
      );
    return { widen: f.type === 'timestamp' ? 'date32-timestamp-us' : 'date32-timestamp-ns' };
  }
  throw new NotProjectable(
    column,
    `it is ${f.type} now but ${was} in the file, which is not a promotion Iceberg allows`,
  );
}

/**
 * The children of the repeated group of a file's list (one: the element) or map (two: the key and the value), in
 * Parquet's standard form: a group annotated LIST (MAP) holding one repeated group of them. A list the file keeps in
 * one of the legacy two-level forms the format's backward-compatibility rules describe (a repeated primitive, a
 * repeated group of several fields, one named `array` or `<column>_tuple`) is not one this projection describes.
 * @throws NotProjectable for a column that is not a list (a map) in the file; not describable for a legacy form.
 */
function repeatedOf(column: string, node: Node, kind: 'list' | 'map'): readonly Node[] {
  const nested = nestedFormOf(node, kind);
  switch (nested.form) {
    case 'standard':
      return nested.children;
    case 'primitive':
      throw new NotProjectable(column, `it is a ${kind} now but a primitive in the file`);
    case 'other-nested':
    case 'unannotated':
      throw new NotProjectable(column, `it is a ${kind} now but a group that is not one in the file`);
    case 'legacy':
      throw new NotProjectable(
        column,
        `the file writes this ${kind} in a legacy form (not a group of one repeated group of ${kind === 'list' ? 'its element' : 'its key and value'}), which this rewrite does not project`,
        false,
      );
  }
}

/**
 * How the file's list element (map key, map value) `node` becomes the current one `f`: matched by its field id
 * as Iceberg matches every nested field, converted as a field is. Empty when it is copied as it is.
 */
function nestedSource(
  part: 'element' | 'key' | 'value',
  column: string,
  f: IcebergField,
  node: Node,
  formatVersion: FormatVersion,
): SourceShape {
  const name = `${column}.${f.name}`;
  const id = node.element.field_id;
  if (id !== f.id)
    throw new NotProjectable(
      name,
      id === undefined
        ? `it has no Parquet field id in the file, so it cannot be matched to the current schema's ${part} (id ${f.id})`
        : `it has field id ${id} in the file, not the current schema's ${part} id ${f.id}`,
    );
  if (isUnknown(f))
    throw new NotProjectable(name, `a ${part} of the unknown type is not one this rewrite projects`, false);
  const shape = sourceOf(name, f, node, formatVersion);
  return Object.keys(shape).length === 0 ? {} : { [part]: shape };
}

/**
 * How the file's struct `node` becomes the current struct of `fields`: each current field from the file's field of
 * its id (null when the file has none, unless it is required or has an initial-default), the file's other fields
 * not written. No `fields` when the file's struct already is the current one, field for field.
 */
function structSource(
  column: string,
  fields: readonly IcebergField[],
  node: Node,
  formatVersion: FormatVersion,
): SourceShape {
  for (const child of node.children)
    if (child.element.field_id === undefined)
      throw new NotProjectable(
        `${column}.${child.element.name}`,
        'it has no Parquet field id in the file, so it cannot be matched to the current schema',
      );
  for (const sub of fields)
    if (isUnknown(sub))
      checkUnknown(
        `${column}.${sub.name}`,
        sub,
        node.children.some((c) => c.element.field_id === sub.id),
      );
  const stored = storedFields(fields);
  let same = node.children.length === stored.length;
  const sources: ProjectedFieldSource[] = stored.map((sub, i) => {
    const name = `${column}.${sub.name}`;
    const position = node.children.findIndex((c) => c.element.field_id === sub.id);
    const child = node.children[position];
    if (child === undefined) {
      same = false;
      const value = initialDefaultOf(name, sub);
      return value === undefined ? {} : { default: value };
    }
    const shape = sourceOf(name, sub, child, formatVersion);
    if (position !== i || child.element.name !== sub.name || Object.keys(shape).length > 0) same = false;
    return { source: { column: child.element.name, position, ...shape } };
  });
  return same ? {} : { fields: sources };
}

/** The row lineage metadata columns (Iceberg v3 `_row_id`, `_last_updated_sequence_number`), in the order written. */
const LINEAGE_FIELDS = [ROW_ID_FIELD, LAST_UPDATED_SEQUENCE_NUMBER_FIELD] as const;
const LINEAGE_IDS: ReadonlySet<number> = new Set(LINEAGE_FIELDS.map((l) => l.id));

/** Options of a projection: the table's format version (what it allows, and whether rows carry lineage). */
export interface ProjectionOptions {
  /** @default 2 */
  readonly formatVersion?: FormatVersion;
}

/**
 * The file's top-level columns that hold table data: a v3 table's row lineage columns (metadata columns, not in the
 * schema) left out.
 */
function dataColumns(root: Node, formatVersion: FormatVersion): readonly Node[] {
  return formatVersion >= 3
    ? root.children.filter((c) => c.element.field_id === undefined || !LINEAGE_IDS.has(c.element.field_id))
    : root.children;
}

/**
 * Projects the file whose footer schema is `elements` onto `current`. Every top-level column of the file must carry
 * a field id (files without ids would need the table's name mapping, which is not read); columns are matched by id.
 * In a format-v3 table the projection ends with the two row lineage columns (nullable longs with their reserved field
 * ids), read from the file's own lineage columns where it has them: the engine writes every row's lineage into them
 * before projecting (InputFile.rowLineage), so they carry each row's `_row_id` and sequence number through.
 * @param schemaJson the current schema as the table metadata spells it: the outputs' `iceberg.schema` footer entry.
 */
export function projectDataFile(
  elements: readonly SchemaElement[],
  current: IcebergSchema,
  schemaJson: string,
  options: ProjectionOptions = {},
): FileProjection {
  const formatVersion = options.formatVersion ?? 2;
  const root = footerSchemaTree(elements);
  const byId = new Map<number, Node>();
  for (const child of root.children) {
    const id = child.element.field_id;
    if (id === undefined)
      return {
        kind: 'refused',
        reason: `its column ${child.element.name} has no Parquet field id (a name mapping is not read), so it cannot be projected onto the current schema`,
      };
    byId.set(id, child);
  }
  const data = dataColumns(root, formatVersion);
  const columns: ProjectedColumn[] = [];
  const stored = storedFields(current.fields);
  let identical = data.length === stored.length;
  try {
    for (const f of current.fields) if (isUnknown(f)) checkUnknown(f.name, f, byId.has(f.id));
    stored.forEach((f, i) => {
      const node = byId.get(f.id);
      if (node === undefined) {
        // A column the file lacks: its default first, so a default the rewrite does not write is named as such.
        identical = false;
        const value = initialDefaultOf(f.name, f);
        const field = projectedFieldOf(f.name, f);
        columns.push(value === undefined ? { field } : { field, default: value });
        return;
      }
      // The written type first: a type the projection does not describe leaves a file of the current schema as written.
      const field = projectedFieldOf(f.name, f);
      if (data[i] !== node || node.element.name !== f.name) identical = false;
      const shape = sourceOf(f.name, f, node, formatVersion);
      if (Object.keys(shape).length > 0) identical = false;
      columns.push({ field, source: { column: node.element.name, ...shape } });
    });
  } catch (err) {
    if (!(err instanceof NotProjectable)) throw err;
    if (!err.describable && identical && sameAsCurrent(root, current, formatVersion))
      return { kind: 'as-written' };
    return {
      kind: 'refused',
      reason: `written under an older schema, it cannot be projected onto the current one exactly: column ${err.column}: ${err.why}`,
    };
  }
  if (formatVersion >= 3)
    for (const l of LINEAGE_FIELDS)
      columns.push({
        field: { name: l.name, fieldId: l.id, nullable: true, type: 'int64' },
        source: { column: byId.get(l.id)?.element.name ?? l.name },
      });
  return {
    kind: 'projected',
    projection: { columns, keyValueMetadata: { [ICEBERG_SCHEMA_FOOTER_KEY]: schemaJson } },
  };
}

/**
 * Whether a projection of the file whose footer schema is `elements` only restates it: its top-level columns are the
 * current schema's in order, by id and name (a v3 table's lineage columns aside), and none is widened, rebuilt or
 * defaulted (nested ones are exact, or it would be refused), and none is a uuid. The planner then may rewrite files of
 * one such Parquet schema as written, as on a table that never evolved (a v3 file's lineage is then written by the
 * engine as always). A uuid column is always projected: written as it is, the engine's writer would drop its UUID
 * annotation (and so refuse the file), while a projection's outputs are given it back.
 */
export function projectionRestatesFile(
  elements: readonly SchemaElement[],
  current: IcebergSchema,
  projection: ColumnProjection,
  options: ProjectionOptions = {},
): boolean {
  const formatVersion = options.formatVersion ?? 2;
  return (
    sameAsCurrent(footerSchemaTree(elements), current, formatVersion) &&
    projection.columns.every(
      (c) =>
        c.source !== undefined &&
        c.source.widen === undefined &&
        c.source.fields === undefined &&
        c.source.element === undefined &&
        c.source.key === undefined &&
        c.source.value === undefined &&
        !holdsUuid(c.field.type),
    )
  );
}

/** Whether a written type is, or (a struct, a list, a map) holds at any depth, a uuid. */
function holdsUuid(type: ProjectedType): boolean {
  if (type === 'uuid') return true;
  if (typeof type !== 'object') return false;
  if ('struct' in type) return type.struct.some((f) => holdsUuid(f.type));
  if ('list' in type) return holdsUuid(type.list.type);
  if ('map' in type) return holdsUuid(type.map.key.type) || holdsUuid(type.map.value.type);
  return false;
}

/**
 * Whether the file's top-level columns are the current schema's, in order, by id and name; in a v3 table, followed
 * by none, some or all of the row lineage columns (which the rewrite keeps where they are, appending any missing).
 */
function sameAsCurrent(root: Node, current: IcebergSchema, formatVersion: FormatVersion): boolean {
  const data = dataColumns(root, formatVersion);
  const stored = storedFields(current.fields);
  return (
    data.length === stored.length &&
    root.children.slice(0, data.length).every((c, i) => c === data[i]) &&
    stored.every((f, i) => {
      const e = data[i]?.element;
      return e !== undefined && e.field_id === f.id && e.name === f.name;
    })
  );
}
