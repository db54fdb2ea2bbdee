// A column projection: the schema a rewrite writes (its top-level columns with names, field ids and types) and,
// for one input file, where each column's values come from. Format-neutral plan data: a table format that keeps
// its own schema (and evolves it) computes it from the file's footer; the engine applies it to every decoded
// batch, and fingerprints the inputs through an independent application of the same description.
import { createHash } from 'node:crypto';
import type { SchemaElement } from 'hyparquet';
import { z } from 'zod';

/** Primitive types a projected column may have (the Arrow type the engine writes, by name). */
export const PROJECTED_PRIMITIVES = [
  'boolean',
  'int8',
  'int16',
  'int32',
  'int64',
  'float32',
  'float64',
  'date32',
  'timestamp-us',
  'timestamp-us-utc',
  'timestamp-ns',
  'timestamp-ns-utc',
  'time-us',
  'string',
  'binary',
  'uuid',
] as const;
export type ProjectedPrimitive = (typeof PROJECTED_PRIMITIVES)[number];

/**
 * A projected column's type: a primitive, a decimal, a fixed-length binary of `fixed` bytes (Parquet
 * FIXED_LEN_BYTE_ARRAY without annotation), a struct of projected fields, a list of one element field, or a map of a
 * key field and a value field. `time-us` is a time of day in microseconds, not adjusted to UTC (Parquet INT64
 * TIME(MICROS, false)); `uuid` is 16 bytes annotated UUID. A list is written in Parquet's standard three-level form
 * (`<column> (LIST) { repeated group list { <element> } }`) and a map in its standard form (`<column> (MAP) {
 * repeated group key_value { required <key>; <value> } }`): the element, key and value fields carry their own names
 * (`element`, `key`, `value`), field ids and nullability; a map's key is never null.
 */
export type ProjectedType =
  | ProjectedPrimitive
  | { readonly decimal: { readonly precision: number; readonly scale: number } }
  | { readonly fixed: number }
  | { readonly struct: readonly ProjectedField[] }
  | { readonly list: ProjectedField }
  | { readonly map: { readonly key: ProjectedField; readonly value: ProjectedField } };

/** The name of a projected list's element field, a map's key and value fields (Parquet's standard names). */
export const LIST_ELEMENT = 'element';
export const MAP_KEY = 'key';
export const MAP_VALUE = 'value';

/**
 * One field of the written schema: its name, Parquet field id, nullability and type. A table whose files carry no
 * field ids (a format that matches columns by name) writes none: an id invented by the rewrite would be a fact about
 * the column no writer of the table ever stated.
 */
export interface ProjectedField {
  readonly name: string;
  readonly fieldId?: number;
  readonly nullable: boolean;
  readonly type: ProjectedType;
}

/**
 * How the values of one written column are obtained from the input: copied from its top-level column `column`
 * (whatever it is called there), converted by `widen` when the column was written with a narrower type (a signed
 * integer sign-extended to a wider one, `int8-int16` … `int32-int64`; an integer or a float32 as a float64 — every
 * value of them is a double exactly —; `date32-timestamp-us` / `date32-timestamp-ns`: the day's midnight, in
 * microseconds or nanoseconds (a day whose midnight the 64-bit nanoseconds cannot hold, outside 1677-09-21 …
 * 2262-04-11, fails the rewrite naming it); `int8-decimal` … `int64-decimal`:
 * the integer as the unscaled value times 10^scale of the written decimal; `decimal`: the same unscaled value at a
 * larger precision, times 10^(written scale − `fromScale`) when the file holds the column at the smaller scale
 * `fromScale`; `timestamp-ms-us`: a timestamp in milliseconds (Parquet TIMESTAMP(MILLIS)) as the same instant in
 * microseconds, times 1,000 (one whose microseconds 64 bits cannot hold fails the rewrite naming it); `time-ms-us`: a
 * time of day in milliseconds (INT32 TIME(MILLIS)) as its microseconds, times 1,000); or, with `source` absent, null
 * in every row (a column the input's schema did not have yet).
 *
 * Every widening listed is exact: no value of the narrower type is lost or rounded in the wider one (a format allows
 * only such changes, and a decimal's precision grows at least as much as its scale).
 */
export interface ProjectedSource {
  readonly column: string;
  readonly widen?: ProjectedWidening;
  /** For `decimal`: the scale the file holds the column in, when smaller than the written one. */
  readonly fromScale?: number;
  /**
   * For a struct whose fields changed since the file was written (one added, dropped, renamed or widened): where
   * each field of the written struct comes from within the file's struct, in the written struct's order. Absent:
   * the file's struct is the written one, field for field.
   */
  readonly fields?: readonly ProjectedFieldSource[];
  /**
   * For a list whose element type changed since the file was written (widened, or a struct element whose fields
   * changed): how each element of the file's list becomes the written element. Absent: copied as it is.
   */
  readonly element?: ProjectedNestedSource;
  /** For a map whose key type changed: how each key becomes the written key. Absent: copied as it is. */
  readonly key?: ProjectedNestedSource;
  /** For a map whose value type changed: how each value becomes the written value. Absent: copied as it is. */
  readonly value?: ProjectedNestedSource;
}

/**
 * How a list's element, or a map's key or value, is converted: as a column's source says, without a column name
 * (a list has one element, a map one key and one value, whatever the file calls them).
 */
export type ProjectedNestedSource = Omit<ProjectedSource, 'column'>;

/**
 * Where one field of a written struct comes from: the file's struct field `source.column` at `source.position`
 * among its fields, converted as `source` says; or, with `source` absent, `default` in every row where the struct is
 * not null (a field added since with a default value for the rows written before it), else null. The engine finds the
 * field by name and the fingerprint by position, so a plan in which they disagree fails verification instead of
 * writing one field's values under another's name.
 */
export interface ProjectedFieldSource {
  readonly source?: ProjectedSource & { readonly position: number };
  readonly default?: ProjectedDefault;
}

/**
 * One value of a primitive projected type, as plan JSON carries it exactly: `boolean` a boolean; `int8`…`int32` an
 * integer number; `date32` the integer number of days since 1970-01-01; `float32` a number a float32 holds exactly;
 * `float64` a number; `int64` a decimal integer string, and so `timestamp-us` / `timestamp-us-utc` (microseconds
 * since 1970-01-01 00:00:00, UTC for the latter) and `timestamp-ns` / `timestamp-ns-utc` (nanoseconds alike);
 * `time-us` the decimal integer string of the microseconds since midnight (0 … 86,399,999,999); a decimal the decimal
 * integer string of its unscaled value (`1.50` at scale 2 is `"150"`); `string` the string; `binary` its bytes as
 * lowercase hex, and so `uuid` (exactly 16 bytes, in the order the canonical text spells them) and a fixed-length
 * binary (exactly its length). Structs have no value here.
 */
export type ProjectedValue = boolean | number | string;

/**
 * A default value: a primitive's value, or a struct's — not null, each field's own default in the struct's field
 * order (null: the field is null). A table schema may declare a struct column's non-null default as `{}`, its
 * fields' values taken from their own defaults.
 */
export type ProjectedDefault = ProjectedValue | ProjectedStructDefault;
export interface ProjectedStructDefault {
  readonly struct: readonly (ProjectedDefault | null)[];
}

const INT_RANGE = {
  int8: [-(2 ** 7), 2 ** 7 - 1],
  int16: [-(2 ** 15), 2 ** 15 - 1],
  int32: [-(2 ** 31), 2 ** 31 - 1],
  date32: [-(2 ** 31), 2 ** 31 - 1],
} as const;
const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;
const TIME_US_PER_DAY = 86_400_000_000n;

/**
 * Why `value` is not a value of `type` as {@link ProjectedValue} spells it, or undefined when it is. Checked where a
 * plan is parsed, so the engine and the fingerprint never meet a value they would read differently.
 */
export function projectedValueProblem(type: ProjectedType, value: ProjectedDefault): string | undefined {
  const text = JSON.stringify(value);
  if (typeof type === 'object' && 'struct' in type) {
    if (typeof value !== 'object' || value.struct.length !== type.struct.length)
      return `a struct's value lists a default (or null) for each of its ${type.struct.length} fields, not ${text}`;
    for (const [i, f] of type.struct.entries()) {
      const v = value.struct[i];
      if (v === null || v === undefined) {
        if (!f.nullable) return `field ${f.name} is required, so its default is not null`;
        continue;
      }
      const why = projectedValueProblem(f.type, v);
      if (why !== undefined) return `field ${f.name}: ${why}`;
    }
    return undefined;
  }
  if (typeof type === 'object' && ('list' in type || 'map' in type))
    return `a ${projectedTypeText(type)} column has no default value in a projection (${text})`;
  if (typeof value === 'object') return `a ${projectedTypeText(type)} has no struct value (${text})`;
  if (typeof type === 'object' && 'fixed' in type)
    return typeof value === 'string' && new RegExp(`^([0-9a-f]{2}){${type.fixed}}$`).test(value)
      ? undefined
      : `a fixed(${type.fixed}) value is its ${type.fixed} bytes in lowercase hex, not ${text}`;
  if (typeof type === 'object') {
    if (typeof value !== 'string' || !/^-?\d+$/.test(value))
      return `a decimal's value is the decimal integer string of its unscaled value, not ${text}`;
    const digits = value.replace('-', '').replace(/^0+(?=\d)/, '').length;
    return digits > type.decimal.precision
      ? `${text} has ${digits} digits, more than decimal(${type.decimal.precision}, ${type.decimal.scale}) holds`
      : undefined;
  }
  switch (type) {
    case 'boolean':
      return typeof value === 'boolean' ? undefined : `a boolean's value is true or false, not ${text}`;
    case 'int8':
    case 'int16':
    case 'int32':
    case 'date32': {
      const [min, max] = INT_RANGE[type];
      return typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max
        ? undefined
        : `an ${type}'s value is an integer from ${min} to ${max}, not ${text}`;
    }
    case 'int64':
    case 'timestamp-us':
    case 'timestamp-us-utc':
    case 'timestamp-ns':
    case 'timestamp-ns-utc':
      return typeof value === 'string' &&
        /^-?\d+$/.test(value) &&
        BigInt(value) >= INT64_MIN &&
        BigInt(value) <= INT64_MAX
        ? undefined
        : `a ${type}'s value is a decimal string of a 64-bit integer, not ${text}`;
    case 'float32':
      return typeof value === 'number' && Math.fround(value) === value
        ? undefined
        : `a float32's value is a number a float32 holds exactly, not ${text}`;
    case 'float64':
      return typeof value === 'number' ? undefined : `a float64's value is a number, not ${text}`;
    case 'string':
      return typeof value === 'string' ? undefined : `a string's value is a string, not ${text}`;
    case 'binary':
      return typeof value === 'string' && /^([0-9a-f]{2})*$/.test(value)
        ? undefined
        : `a binary value is its bytes in lowercase hex, not ${text}`;
    case 'uuid':
      return typeof value === 'string' && /^[0-9a-f]{32}$/.test(value)
        ? undefined
        : `a uuid's value is its 16 bytes in lowercase hex, not ${text}`;
    case 'time-us':
      return typeof value === 'string' && /^\d+$/.test(value) && BigInt(value) < TIME_US_PER_DAY
        ? undefined
        : `a time-us value is a decimal string of the microseconds since midnight, 0 to ${TIME_US_PER_DAY - 1n}, not ${text}`;
  }
}
export const PROJECTED_WIDENINGS = [
  'int32-int64',
  'float32-float64',
  'int32-float64',
  'date32-timestamp-us',
  'date32-timestamp-ns',
  'decimal',
  'int8-int16',
  'int8-int32',
  'int8-int64',
  'int16-int32',
  'int16-int64',
  'int8-float64',
  'int16-float64',
  'int8-decimal',
  'int16-decimal',
  'int32-decimal',
  'int64-decimal',
  'timestamp-ms-us',
  'time-ms-us',
] as const;
export type ProjectedWidening = (typeof PROJECTED_WIDENINGS)[number];

/**
 * One written column and where its values come from: `source`, or with it absent, `default` in every row (a column
 * added since with a default value for the rows written before it), else null.
 */
export interface ProjectedColumn {
  readonly field: ProjectedField;
  readonly source?: ProjectedSource;
  readonly default?: ProjectedDefault;
}

/**
 * The projection of one input onto the written schema: every column in output order, and the footer key-value
 * entries the output carries instead of the input's (the format's own schema description, say), so outputs of
 * inputs written under different schemas have one footer. Columns of the input not named by any source are not
 * written.
 */
export interface ColumnProjection {
  readonly columns: readonly ProjectedColumn[];
  readonly keyValueMetadata: Readonly<Record<string, string>>;
}

const projectedFieldSchema: z.ZodType<ProjectedField> = z.lazy(() =>
  z.object({
    name: z.string().min(1),
    fieldId: z.number().int().optional(),
    nullable: z.boolean(),
    type: projectedTypeSchema,
  }),
);

const projectedTypeSchema: z.ZodType<ProjectedType> = z.lazy(() =>
  z.union([
    z.enum(PROJECTED_PRIMITIVES),
    z.object({
      decimal: z.object({ precision: z.number().int().min(1).max(38), scale: z.number().int().min(0) }),
    }),
    z.object({ fixed: z.number().int().min(1) }),
    z.object({ struct: z.array(projectedFieldSchema).min(1) }),
    z.object({ list: projectedFieldSchema }),
    z.object({ map: z.object({ key: projectedFieldSchema, value: projectedFieldSchema }) }),
  ]),
);

const nestedSourceShape = {
  widen: z.enum(PROJECTED_WIDENINGS).optional(),
  fromScale: z.number().int().min(0).optional(),
  fields: z.array(z.lazy((): z.ZodType<ProjectedFieldSource> => fieldSourceSchema)).optional(),
  element: z.lazy((): z.ZodType<ProjectedNestedSource> => nestedSourceSchema).optional(),
  key: z.lazy((): z.ZodType<ProjectedNestedSource> => nestedSourceSchema).optional(),
  value: z.lazy((): z.ZodType<ProjectedNestedSource> => nestedSourceSchema).optional(),
};
const nestedSourceSchema: z.ZodType<ProjectedNestedSource> = z.object(nestedSourceShape);
const sourceShape = { column: z.string().min(1), ...nestedSourceShape };

const projectedValueSchema: z.ZodType<ProjectedDefault> = z.lazy(() =>
  z.union([
    z.boolean(),
    z.number(),
    z.string(),
    z.object({ struct: z.array(projectedValueSchema.nullable()) }),
  ]),
);

const fieldSourceSchema: z.ZodType<ProjectedFieldSource> = z.object({
  source: z.object({ ...sourceShape, position: z.number().int().min(0) }).optional(),
  default: projectedValueSchema.optional(),
});

const projectedSourceSchema: z.ZodType<ProjectedSource> = z.object(sourceShape);

/**
 * Where a default value stands in a column or struct field of `type` with `source`: never beside a source, and of
 * the field's type; nested sources (a struct's fields, a list's element, a map's key and value) are checked alike.
 */
function defaultsProblem(
  name: string,
  type: ProjectedType,
  from: { readonly source?: ProjectedNestedSource; readonly default?: ProjectedDefault },
): string | undefined {
  if (from.default !== undefined) {
    if (from.source !== undefined) return `${name} has both a source and a default value`;
    const why = projectedValueProblem(type, from.default);
    return why === undefined ? undefined : `${name}: ${why}`;
  }
  const source = from.source;
  if (source === undefined || typeof type !== 'object') return undefined;
  if ('list' in type && source.element !== undefined)
    return defaultsProblem(`${name}.${type.list.name}`, type.list.type, { source: source.element });
  if ('map' in type) {
    for (const [part, nested] of [
      [type.map.key, source.key],
      [type.map.value, source.value],
    ] as const) {
      const why =
        nested === undefined
          ? undefined
          : defaultsProblem(`${name}.${part.name}`, part.type, { source: nested });
      if (why !== undefined) return why;
    }
    return undefined;
  }
  const fields = source.fields;
  if (fields === undefined || !('struct' in type)) return undefined;
  for (const [i, f] of fields.entries()) {
    const written = type.struct[i];
    if (written === undefined) return `${name} has more field sources than fields`;
    const why = defaultsProblem(`${name}.${written.name}`, written.type, f);
    if (why !== undefined) return why;
  }
  return undefined;
}

/** A projection as it travels in a plan and a journal entry (JSON). */
export const columnProjectionSchema: z.ZodType<ColumnProjection> = z.object({
  columns: z
    .array(
      z
        .object({
          field: projectedFieldSchema,
          source: projectedSourceSchema.optional(),
          default: projectedValueSchema.optional(),
        })
        .superRefine((c, ctx) => {
          const why = defaultsProblem(c.field.name, c.field.type, c);
          if (why !== undefined) ctx.addIssue({ code: 'custom', message: why });
        }),
    )
    .min(1),
  keyValueMetadata: z.record(z.string(), z.string()),
});

/**
 * The identity of the schema a projection writes (fields and footer entries, not where values come from):
 * inputs projected onto the same schema may share outputs, whatever schema each was written under.
 */
export function projectionTargetKey(projection: ColumnProjection): string {
  const target = {
    fields: projection.columns.map((c) => c.field),
    keyValueMetadata: Object.entries(projection.keyValueMetadata).sort(([a], [b]) => (a < b ? -1 : 1)),
  };
  return `projected:${createHash('sha256').update(JSON.stringify(target)).digest('hex')}`;
}

/** A node of a footer's flat schema list, as a tree: the element and its children in order. */
export interface FooterSchemaNode {
  readonly element: SchemaElement;
  readonly children: readonly FooterSchemaNode[];
}

/** The footer's flat schema list (depth-first, `num_children` per group) as a tree rooted at the schema root. */
export function footerSchemaTree(elements: readonly SchemaElement[]): FooterSchemaNode {
  let next = 0;
  const visit = (): FooterSchemaNode => {
    const element = elements[next++] as SchemaElement;
    const children: FooterSchemaNode[] = [];
    for (let i = 0; i < (element.num_children ?? 0); i++) children.push(visit());
    return { element, children };
  };
  return visit();
}

/**
 * How a file keeps a column that is a list (a map) in the table's schema: in Parquet's standard form — a group
 * annotated LIST (MAP, or the legacy MAP_KEY_VALUE) holding one repeated group of the element (the key and the
 * value), whose `children` these are —; as a primitive; as a group annotated as the other of the two; as a group
 * without either annotation; or in a legacy form Parquet's backward-compatibility rules describe (a repeated
 * primitive, a repeated group of another number of fields, a list's repeated group named `array` or
 * `<column>_tuple`: the two-level lists). Each format decides what a form other than the standard one means to it.
 */
export type NestedForm =
  | { readonly form: 'standard'; readonly children: readonly FooterSchemaNode[] }
  | { readonly form: 'primitive' }
  | { readonly form: 'other-nested' }
  | { readonly form: 'unannotated' }
  | { readonly form: 'legacy' };

/** How the file's column `node` keeps a `kind` (see {@link NestedForm}). */
export function nestedFormOf(node: FooterSchemaNode, kind: 'list' | 'map'): NestedForm {
  if (node.children.length === 0) return { form: 'primitive' };
  const annotation = node.element.logical_type?.type ?? node.element.converted_type;
  const isList = annotation === 'LIST';
  const isMap = annotation === 'MAP' || annotation === 'MAP_KEY_VALUE';
  if ((kind === 'list' && isMap) || (kind === 'map' && isList)) return { form: 'other-nested' };
  if (!(kind === 'list' ? isList : isMap)) return { form: 'unannotated' };
  const repeated = node.children.length === 1 ? node.children[0] : undefined;
  const legacy =
    repeated === undefined ||
    repeated.element.repetition_type !== 'REPEATED' ||
    repeated.children.length !== (kind === 'list' ? 1 : 2) ||
    (kind === 'list' &&
      (repeated.element.name === 'array' || repeated.element.name === `${node.element.name}_tuple`));
  return legacy || repeated === undefined
    ? { form: 'legacy' }
    : { form: 'standard', children: repeated.children };
}

/**
 * The projected type a Parquet leaf holds, as the engine decodes and writes it; undefined for a leaf whose
 * physical and logical type the projection does not describe (INT96, unsigned integers, times in other units or
 * adjusted to UTC, timestamps in other units, fixed-length or legacy decimals of a form not listed here, ...). Shared by every
 * projection (by field id or by column name, as the format matches them) so both read a file's column types alike.
 */
export function projectedLeafType(e: SchemaElement): ProjectedType | undefined {
  const logical = e.logical_type;
  const converted = e.converted_type;
  if (logical?.type === 'DECIMAL' || converted === 'DECIMAL') {
    const precision = logical?.type === 'DECIMAL' ? logical.precision : e.precision;
    const scale = logical?.type === 'DECIMAL' ? logical.scale : (e.scale ?? 0);
    return precision === undefined ? undefined : { decimal: { precision, scale } };
  }
  switch (e.type) {
    case 'BOOLEAN':
      return logical === undefined && converted === undefined ? 'boolean' : undefined;
    case 'INT32':
      if (logical?.type === 'DATE' || converted === 'DATE') return 'date32';
      if (logical === undefined && converted === undefined) return 'int32';
      if (logical?.type === 'INTEGER' && logical.isSigned)
        return logical.bitWidth === 8
          ? 'int8'
          : logical.bitWidth === 16
            ? 'int16'
            : logical.bitWidth === 32
              ? 'int32'
              : undefined;
      if (logical !== undefined) return undefined;
      return converted === 'INT_8'
        ? 'int8'
        : converted === 'INT_16'
          ? 'int16'
          : converted === 'INT_32'
            ? 'int32'
            : undefined;
    case 'INT64': {
      if (logical?.type === 'TIMESTAMP' && logical.unit === 'MICROS')
        return logical.isAdjustedToUTC ? 'timestamp-us-utc' : 'timestamp-us';
      if (logical?.type === 'TIMESTAMP' && logical.unit === 'NANOS')
        return logical.isAdjustedToUTC ? 'timestamp-ns-utc' : 'timestamp-ns';
      if (logical?.type === 'TIME' && logical.unit === 'MICROS' && !logical.isAdjustedToUTC) return 'time-us';
      if (logical === undefined && converted === 'TIMESTAMP_MICROS') return 'timestamp-us-utc';
      if (logical === undefined && converted === undefined) return 'int64';
      if (logical?.type === 'INTEGER' && logical.bitWidth === 64 && logical.isSigned) return 'int64';
      return converted === 'INT_64' ? 'int64' : undefined;
    }
    case 'FLOAT':
      return logical === undefined ? 'float32' : undefined;
    case 'DOUBLE':
      return logical === undefined ? 'float64' : undefined;
    case 'BYTE_ARRAY':
      if (logical?.type === 'STRING' || converted === 'UTF8') return 'string';
      return logical === undefined && converted === undefined ? 'binary' : undefined;
    case 'FIXED_LEN_BYTE_ARRAY':
      if (logical?.type === 'UUID') return e.type_length === 16 ? 'uuid' : undefined;
      return logical === undefined &&
        converted === undefined &&
        e.type_length !== undefined &&
        e.type_length > 0
        ? { fixed: e.type_length }
        : undefined;
    default:
      return undefined;
  }
}

/**
 * A projected type as text, for messages: `int32`, `decimal(10, 2)`, `struct<a: int32, b: string>`, `list<int64>`,
 * `map<string, float64>`.
 */
export function projectedTypeText(type: ProjectedType): string {
  if (typeof type === 'string') return type;
  if ('decimal' in type) return `decimal(${type.decimal.precision}, ${type.decimal.scale})`;
  if ('fixed' in type) return `fixed(${type.fixed})`;
  if ('list' in type) return `list<${projectedTypeText(type.list.type)}>`;
  if ('map' in type)
    return `map<${projectedTypeText(type.map.key.type)}, ${projectedTypeText(type.map.value.type)}>`;
  return `struct<${type.struct.map((f) => `${f.name}: ${projectedTypeText(f.type)}`).join(', ')}>`;
}

/**
 * The first column of a written file (its footer schema as a tree) whose stored Parquet type, shape or nested field
 * id is not its projected one, read back as every projection reads a file's leaves (`projectedLeafType`): the
 * projected schema is the table's, so an output the writer stored otherwise (a lost annotation, another unit, a
 * list in another form, a nested field id dropped) would not be of the table's schema. Pre-flight asks it of a
 * trial write, before anything is written.
 */
export function mistypedColumn(
  root: FooterSchemaNode,
  projection: ColumnProjection,
): { column: string; stored: string; type: string } | undefined {
  const check = (
    column: string,
    node: FooterSchemaNode | undefined,
    type: ProjectedType,
    fieldId?: number,
  ): { column: string; stored: string; type: string } | undefined => {
    // A nested field's id (a struct field's, a list element's, a map key's or value's) is the table's too.
    if (fieldId !== undefined && node !== undefined && node.element.field_id !== fieldId)
      return {
        column,
        stored: `field id ${node.element.field_id ?? '(none)'}`,
        type: `field id ${fieldId}`,
      };
    if (typeof type === 'object' && 'struct' in type) {
      if (node === undefined || node.children.length !== type.struct.length)
        return { column, stored: 'another shape', type: projectedTypeText(type) };
      for (const [i, f] of type.struct.entries()) {
        const found = check(`${column}.${f.name}`, node.children[i], f.type, f.fieldId);
        if (found !== undefined) return found;
      }
      return undefined;
    }
    if (typeof type === 'object' && ('list' in type || 'map' in type)) {
      // The standard forms: a LIST (MAP) group of one repeated group of the element (the key and the value).
      const parts = 'list' in type ? [type.list] : [type.map.key, type.map.value];
      const nested = node === undefined ? undefined : nestedFormOf(node, 'list' in type ? 'list' : 'map');
      if (nested?.form !== 'standard')
        return { column, stored: 'another shape', type: projectedTypeText(type) };
      for (const [i, f] of parts.entries()) {
        const found = check(`${column}.${f.name}`, nested.children[i], f.type, f.fieldId);
        if (found !== undefined) return found;
      }
      return undefined;
    }
    const stored =
      node === undefined || node.children.length > 0 ? undefined : projectedLeafType(node.element);
    return stored !== undefined && JSON.stringify(stored) === JSON.stringify(type)
      ? undefined
      : {
          column,
          stored:
            stored !== undefined
              ? projectedTypeText(stored)
              : `${node?.element.type ?? 'a group'} ${JSON.stringify(node?.element.logical_type ?? null)}`,
          type: projectedTypeText(type),
        };
  };
  for (const [i, c] of projection.columns.entries()) {
    const found = check(c.field.name, root.children[i], c.field.type);
    if (found !== undefined) return found;
  }
  return undefined;
}
