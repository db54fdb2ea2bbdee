// A Delta data file projected onto the table's current schema (`metaData.schemaString`), as a Delta reader resolves
// it (PROTOCOL.md "Column Mapping" and "Type Widening"): a column is found in the file by its physical name
// (`delta.columnMapping.physicalName`, mode `name`), by its field id (`delta.columnMapping.id`, mode `id`) or by its
// own name (no mapping), and a struct's fields alike at any depth — inside arrays and maps too, whose element, key
// and value are found by their place in Parquet's standard list and map forms; a column or struct field added after
// the file was written is null in its rows, a dropped one is not written, and a column, field, array element, map
// key or map value whose type was widened under the `typeWidening` feature is widened. The output is named and typed
// as a Delta writer of the current schema writes it: physical names, field ids where the table has them, the current
// types. Partition columns are not in Delta data files and are never projected.
//
// Three outcomes per file, so that nothing is approximated and nothing compacted today stops compacting:
//   - projected: every column can be carried over exactly;
//   - refused (named): the file contradicts the table — a type change that is not a widening Delta allows, a
//     widening on a table without the typeWidening feature, a non-nullable column the file lacks, a field id that is
//     not the column's, a primitive where an array, map or struct is — so a Delta reader could not read it either,
//     and it is left alone;
//   - as-written: the file is consistent with the table but holds a column this projection does not describe (an
//     INT96 timestamp, another Parquet form of the current type such as an unannotated string, a list in a legacy
//     two-level form, an array element or map key or value with a Parquet field id, a table recording nested field
//     ids for IcebergCompatV2): it is rewritten, as before, only among files of its own Parquet schema, which
//     readers read as they read the file itself.
// Every widening the typeWidening feature allows (PROTOCOL.md "Type Widening": byte → short → int → long, byte,
// short or int → double, float → double, date → timestamp_ntz, decimal(p, s) → decimal(p + k1, s + k2) with
// k1 ≥ k2 ≥ 0, byte, short or int → decimal(10 + k1, k2), long → decimal(20 + k1, k2)) is applied exactly, to a
// column, a struct field, an array element, a map key or a map value alike (the protocol allows each).
import type { SchemaElement } from 'hyparquet';
import {
  type ColumnProjection,
  type FooterSchemaNode,
  footerSchemaTree,
  LIST_ELEMENT,
  MAP_KEY,
  MAP_VALUE,
  nestedFormOf,
  type ProjectedColumn,
  type ProjectedField,
  type ProjectedFieldSource,
  type ProjectedSource,
  type ProjectedType,
  type ProjectedWidening,
  projectedLeafType,
  projectedTypeText,
} from '../../projection.js';
import type { SupportedProtocol } from './protocol.js';
import {
  type ColumnMappingMode,
  type DeltaField,
  type DeltaSchema,
  type DeltaType,
  FIELD_ID_KEY,
  PHYSICAL_NAME_KEY,
} from './schema.js';

/** What the projection needs of a table version: its schema, partition columns, mapping mode and widening. */
export interface DeltaProjectionTable {
  readonly schema: DeltaSchema;
  /** Logical names; these columns are not in the data files. */
  readonly partitionColumns: readonly string[];
  readonly mode: ColumnMappingMode;
  /** Whether the table has type widening: files may then hold a column in a narrower type than the schema's. */
  readonly typeWidening: boolean;
}

/** What becomes of one data file under the current schema (see the module comment). */
export type DeltaFileProjection =
  | {
      readonly kind: 'projected';
      readonly projection: ColumnProjection;
      /** The projection only restates the file: its columns are the current ones, in order, none widened or added. */
      readonly restates: boolean;
    }
  | { readonly kind: 'refused'; readonly reason: string }
  | { readonly kind: 'as-written'; readonly reason: string };

/** The file contradicts the table at `column`. */
class Contradiction extends Error {
  constructor(
    readonly column: string,
    readonly why: string,
  ) {
    super(`${column}: ${why}`);
  }
}

/** The file holds `column` in a form the projection does not describe; rewriting it as written stays exact. */
class NotDescribed extends Error {
  constructor(
    readonly column: string,
    readonly why: string,
  ) {
    super(`${column}: ${why}`);
  }
}

/** Whether the table has the type widening feature (or its preview), or its property on. */
export function hasTypeWidening(
  protocol: Pick<SupportedProtocol, 'readerFeatures' | 'writerFeatures'>,
  configuration: Readonly<Record<string, string>>,
): boolean {
  const features = [...protocol.readerFeatures, ...protocol.writerFeatures];
  return (
    features.includes('typeWidening') ||
    features.includes('typeWidening-preview') ||
    configuration['delta.enableTypeWidening'] === 'true'
  );
}

const DECIMAL = /^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$/;

/** The projected type of a Delta primitive, or undefined for one the projection does not describe. */
function primitiveOf(type: string): ProjectedType | undefined {
  const decimal = DECIMAL.exec(type);
  if (decimal !== null) return { decimal: { precision: Number(decimal[1]), scale: Number(decimal[2]) } };
  switch (type) {
    case 'boolean':
      return 'boolean';
    case 'byte':
      return 'int8';
    case 'short':
      return 'int16';
    case 'integer':
      return 'int32';
    case 'long':
      return 'int64';
    case 'float':
      return 'float32';
    case 'double':
      return 'float64';
    case 'date':
      return 'date32';
    case 'timestamp':
      return 'timestamp-us-utc';
    case 'timestamp_ntz':
      return 'timestamp-us';
    case 'string':
      return 'string';
    case 'binary':
      return 'binary';
    default:
      return undefined;
  }
}

/** The name a field has in the data files: its physical name under a mapping, else its own. */
function physicalNameOf(column: string, field: DeltaField, mode: ColumnMappingMode): string {
  if (mode === 'none') return field.name;
  const physical = field.metadata[PHYSICAL_NAME_KEY];
  if (typeof physical !== 'string' || physical === '')
    throw new Contradiction(
      column,
      `the table maps columns by ${mode} but the schema records no ${PHYSICAL_NAME_KEY} for it`,
    );
  return physical;
}

/** The field id a field's column carries in the data files (under a mapping), else undefined. */
function fieldIdOf(column: string, field: DeltaField, mode: ColumnMappingMode): number | undefined {
  if (mode === 'none') return undefined;
  const id = field.metadata[FIELD_ID_KEY];
  if (typeof id === 'number' && Number.isInteger(id)) return id;
  if (mode === 'id')
    throw new Contradiction(
      column,
      `the table maps columns by id but the schema records no ${FIELD_ID_KEY} for it`,
    );
  return undefined;
}

/** The written field of a current-schema field: physical name, field id, nullable as Delta writers write it. */
function writtenField(column: string, field: DeltaField, mode: ColumnMappingMode): ProjectedField {
  for (const key of NESTED_IDS_KEYS)
    if (field.metadata[key] !== undefined)
      throw new NotDescribed(
        column,
        `the schema records ${key} for it (field ids of its arrays' elements and maps' keys and values, written under IcebergCompatV2), which this rewrite does not write`,
      );
  const fieldId = fieldIdOf(column, field, mode);
  return {
    name: physicalNameOf(column, field, mode),
    ...(fieldId === undefined ? {} : { fieldId }),
    // Delta writers write every column nullable (Spark writes `schema.asNullable`); a REQUIRED column read here is
    // written OPTIONAL, which changes no value.
    nullable: true,
    type: writtenType(column, field.type, mode),
  };
}

/**
 * The metadata keys under which a schema records the field ids of the `element`, `key` and `value` of its arrays and
 * maps (PROTOCOL.md "Iceberg Compatibility V2"; the second is the name Delta Spark also writes). Delta readers never
 * match by them, but a writer of such a table must write them into the Parquet files: this rewrite does not, so a
 * file of such a table is left as written rather than projected without them.
 */
const NESTED_IDS_KEYS = ['delta.columnMapping.nested.ids', 'parquet.field.nested.ids'] as const;

/**
 * The written type of a current-schema type. An array is a list of one `element`, a map a `key` and a `value`, as
 * Parquet's standard forms name them (Delta has no names or ids for them: struct fields inside them keep theirs);
 * the element and the value are written nullable whatever `containsNull` / `valueContainsNull` say, as Spark writes
 * them (`asNullable`), and a key never null, as Parquet requires.
 */
function writtenType(column: string, type: DeltaType, mode: ColumnMappingMode): ProjectedType {
  if (typeof type === 'string') {
    const p = primitiveOf(type);
    if (p === undefined) throw new NotDescribed(column, `its type ${type} is not one this rewrite projects`);
    return p;
  }
  if (type.type === 'struct')
    return { struct: type.fields.map((f) => writtenField(`${column}.${f.name}`, f, mode)) };
  if (type.type === 'array')
    return {
      list: {
        name: LIST_ELEMENT,
        nullable: true,
        type: writtenType(`${column}.${LIST_ELEMENT}`, type.elementType, mode),
      },
    };
  return {
    map: {
      key: { name: MAP_KEY, nullable: false, type: writtenType(`${column}.${MAP_KEY}`, type.keyType, mode) },
      value: {
        name: MAP_VALUE,
        nullable: true,
        type: writtenType(`${column}.${MAP_VALUE}`, type.valueType, mode),
      },
    },
  };
}

/** How a file's column is widened to the current type: the widening, and the file's decimal scale when it grows. */
interface Widening {
  readonly widen: ProjectedWidening;
  readonly fromScale?: number;
}

/**
 * The widening that takes the file's `was` to the current `now` (undefined: the same type), as the type widening
 * feature allows it.
 * @throws Contradiction for a change Delta does not allow (or any change without the feature); NotDescribed for
 * another Parquet form of the same values.
 */
function wideningOf(
  column: string,
  was: ProjectedType,
  now: ProjectedType,
  typeWidening: boolean,
): Widening | undefined {
  const a = projectedTypeText(was);
  const b = projectedTypeText(now);
  if (a === b) return undefined;
  const allowed = deltaAllows(was, now);
  if (allowed === undefined && sameFamily(was, now))
    throw new NotDescribed(
      column,
      `it is ${b} now but ${a} in the file: another Parquet form of the same values (an unannotated string, a timestamp's time-zone flag), left as written`,
    );
  if (allowed === undefined)
    throw new Contradiction(
      column,
      `it is ${b} now but ${a} in the file, which is not a type change Delta allows (PROTOCOL.md "Type Widening")`,
    );
  if (!typeWidening)
    throw new Contradiction(
      column,
      `it is ${b} now but ${a} in the file, and the table does not have the typeWidening feature that would allow it`,
    );
  return allowed;
}

/**
 * Whether a writer may have written the same logical values in either form: a string as unannotated bytes (older
 * writers), a timestamp with or without the UTC flag (older delta-rs wrote `timestamp` unflagged). Such a file is not
 * a contradiction to refuse, only one this projection does not convert.
 */
function sameFamily(a: ProjectedType, b: ProjectedType): boolean {
  const family = (t: ProjectedType): string =>
    t === 'string' || t === 'binary'
      ? 'bytes'
      : t === 'timestamp-us' || t === 'timestamp-us-utc'
        ? 'timestamp'
        : projectedTypeText(t);
  return family(a) === family(b);
}

/** Delta's integer types, narrowest first: each widens to every later one (byte → short → int → long). */
const INTEGERS = ['int8', 'int16', 'int32', 'int64'] as const;
type DeltaInteger = (typeof INTEGERS)[number];
const isInteger = (t: ProjectedType): t is DeltaInteger => INTEGERS.includes(t as DeltaInteger);
/** The decimal precision an integer type needs whole (PROTOCOL.md: byte, short and int → 10, long → 20). */
const INTEGER_DIGITS: Readonly<Record<DeltaInteger, number>> = { int8: 10, int16: 10, int32: 10, int64: 20 };

/**
 * Whether Delta's type widening takes `from` to `to` (PROTOCOL.md "Type Widening"), as the exact conversion that
 * does it; undefined for a change Delta does not allow.
 */
function deltaAllows(from: ProjectedType, to: ProjectedType): Widening | undefined {
  if (isInteger(from) && isInteger(to))
    return INTEGERS.indexOf(from) < INTEGERS.indexOf(to)
      ? { widen: `${from}-${to}` as ProjectedWidening }
      : undefined;
  if (isInteger(from) && to === 'float64')
    return from === 'int64' ? undefined : { widen: `${from}-float64` as ProjectedWidening };
  if (from === 'float32' && to === 'float64') return { widen: 'float32-float64' };
  if (from === 'date32' && to === 'timestamp-us') return { widen: 'date32-timestamp-us' };
  if (typeof to !== 'object' || !('decimal' in to)) return undefined;
  const { precision, scale } = to.decimal;
  if (typeof from === 'object' && 'decimal' in from) {
    // decimal(p, s) → decimal(p + k1, s + k2) with k1 ≥ k2 ≥ 0: no integer digit is lost.
    const k1 = precision - from.decimal.precision;
    const k2 = scale - from.decimal.scale;
    if (k1 < k2 || k2 < 0) return undefined;
    return k2 === 0 ? { widen: 'decimal' } : { widen: 'decimal', fromScale: from.decimal.scale };
  }
  // An integer → decimal(digits + k1, k2) with k1 ≥ k2 ≥ 0.
  if (isInteger(from) && precision - INTEGER_DIGITS[from] >= scale)
    return { widen: `${from}-decimal` as ProjectedWidening };
  return undefined;
}

/**
 * How the file's struct `node` becomes the current struct of `fields`: each current field from the file's field that
 * holds it (by physical name, or by field id in mode `id`, as for top-level columns), null when the file has none
 * (a nullable field added since), the file's other fields not written; no `fields` when the file's struct already
 * is the current one, field for field.
 */
function structSource(
  column: string,
  fields: readonly DeltaField[],
  node: FooterSchemaNode,
  table: DeltaProjectionTable,
): SourceShape {
  if (node.children.length === 0)
    throw new Contradiction(column, 'it is a struct now but a primitive in the file');
  const annotation = annotationOf(node);
  if (annotation === 'LIST' || annotation === 'MAP' || annotation === 'MAP_KEY_VALUE')
    throw new Contradiction(
      column,
      `it is a struct now but ${annotation === 'LIST' ? 'an array' : 'a map'} in the file`,
    );
  let same = node.children.length === fields.length;
  const sources: ProjectedFieldSource[] = fields.map((f, i) => {
    const name = `${column}.${f.name}`;
    const child = findColumn(name, f, node, table.mode);
    if (child === undefined) {
      if (!f.nullable)
        throw new Contradiction(
          name,
          `it is not nullable but the file's struct has no field ${physicalNameOf(name, f, table.mode)}`,
        );
      same = false;
      return {};
    }
    const position = node.children.indexOf(child);
    const shape = sourceOf(name, f.type, child, table);
    if (
      position !== i ||
      child.element.name !== physicalNameOf(name, f, table.mode) ||
      Object.keys(shape).length > 0
    )
      same = false;
    return { source: { column: child.element.name, position, ...shape } };
  });
  return same ? {} : { fields: sources };
}

/** Checks the file's column carries the field's id, where the table maps by id or the file records one. */
function checkFieldId(
  column: string,
  field: DeltaField,
  node: FooterSchemaNode,
  mode: ColumnMappingMode,
): void {
  const id = fieldIdOf(column, field, mode);
  const inFile = node.element.field_id;
  if (id === undefined) return;
  if (inFile === undefined ? mode === 'id' : inFile !== id)
    throw new Contradiction(
      column,
      `its column ${node.element.name} has field id ${inFile ?? '(none)'} in the file but ${FIELD_ID_KEY} ${id} in the schema`,
    );
}

/** How a file's column becomes the current field: widened, or (a struct) rebuilt field by field; empty: as it is. */
type SourceShape = Omit<ProjectedSource, 'column'>;

/** How the file's column `node` becomes the current `type`, after checking it can be. */
function sourceOf(
  column: string,
  type: DeltaType,
  node: FooterSchemaNode,
  table: DeltaProjectionTable,
): SourceShape {
  const e = node.element;
  if (e.repetition_type === 'REPEATED') throw new NotDescribed(column, 'it is a repeated field in the file');
  if (typeof type !== 'string') {
    if (type.type === 'array') {
      const [element] = repeatedOf(column, node, 'array');
      return nestedSource(column, LIST_ELEMENT, type.elementType, element as FooterSchemaNode, table);
    }
    if (type.type === 'map') {
      const [key, value] = repeatedOf(column, node, 'map');
      return {
        ...nestedSource(column, MAP_KEY, type.keyType, key as FooterSchemaNode, table),
        ...nestedSource(column, MAP_VALUE, type.valueType, value as FooterSchemaNode, table),
      };
    }
    return structSource(column, type.fields, node, table);
  }
  if (node.children.length > 0) throw new Contradiction(column, `it is ${type} now but a group in the file`);
  const now = primitiveOf(type);
  if (now === undefined) throw new NotDescribed(column, `its type ${type} is not one this rewrite projects`);
  const was = projectedLeafType(e);
  // Delta has no time-of-day, uuid or fixed-length type: a file storing one is not read by this projection (as it
  // never was), so it is left as written rather than named a contradiction.
  if (was === undefined || was === 'time-us' || was === 'uuid' || (typeof was === 'object' && 'fixed' in was))
    throw new NotDescribed(
      column,
      `the file's ${e.type} ${JSON.stringify(e.logical_type ?? e.converted_type ?? null)} column is not one this rewrite reads`,
    );
  return wideningOf(column, was, now, table.typeWidening) ?? {};
}

/** A group's annotation: its logical type, else its converted type. */
function annotationOf(node: FooterSchemaNode): string | undefined {
  return node.element.logical_type?.type ?? node.element.converted_type;
}

/**
 * The children of the repeated group of a file's array (one: the element) or map (two: the key and the value), in
 * Parquet's standard form — a group annotated LIST (MAP) holding one repeated group of them —, which Delta writers
 * write (Spark, delta-rs). A file that keeps the column in another form Parquet's backward-compatibility rules
 * describe (a repeated primitive or a repeated group of several fields, a repeated group named `array` or
 * `<column>_tuple`: the legacy two-level lists), or in an unannotated group, is one this projection does not
 * describe; a primitive, or a map where an array is (and the reverse), is a contradiction.
 * @throws Contradiction, NotDescribed as above.
 */
function repeatedOf(
  column: string,
  node: FooterSchemaNode,
  kind: 'array' | 'map',
): readonly FooterSchemaNode[] {
  const nested = nestedFormOf(node, kind === 'array' ? 'list' : 'map');
  const now = kind === 'array' ? 'an array' : 'a map';
  switch (nested.form) {
    case 'standard':
      return nested.children;
    case 'primitive':
      throw new Contradiction(column, `it is ${now} now but a primitive in the file`);
    case 'other-nested':
      throw new Contradiction(
        column,
        `it is ${now} now but ${kind === 'array' ? 'a map' : 'an array'} in the file`,
      );
    case 'unannotated':
      throw new NotDescribed(
        column,
        `it is ${now} now, and a group not annotated ${kind === 'array' ? 'LIST' : 'MAP'} in the file, a form this rewrite does not project`,
      );
    case 'legacy':
      throw new NotDescribed(
        column,
        `the file writes this ${kind} in a legacy form (not a group of one repeated group of ${kind === 'array' ? 'its element' : 'its key and value'}), which this rewrite does not project`,
      );
  }
}

/**
 * How the file's array element (map key, map value) `node` becomes the current `type`: matched by its place in the
 * list or map, as every Delta reader matches it (Delta names and numbers none of them), converted as a column is —
 * widened under the typeWidening feature, a struct rebuilt field by field (its fields by physical name or id). Empty
 * when it is copied as it is. A file that gives it a Parquet field id, which the table's schema does not record, is
 * left as written: the projection would drop the id.
 */
function nestedSource(
  column: string,
  part: typeof LIST_ELEMENT | typeof MAP_KEY | typeof MAP_VALUE,
  type: DeltaType,
  node: FooterSchemaNode,
  table: DeltaProjectionTable,
): SourceShape {
  const name = `${column}.${part}`;
  const id = node.element.field_id;
  if (id !== undefined)
    throw new NotDescribed(
      name,
      `the file gives it Parquet field id ${id}, which the table's schema does not record, so a projection would drop it`,
    );
  if (part === MAP_KEY && node.element.repetition_type !== 'REQUIRED')
    throw new NotDescribed(
      name,
      'the file writes this map key as optional, which this rewrite does not project',
    );
  const shape = sourceOf(name, type, node, table);
  return Object.keys(shape).length === 0 ? {} : { [part]: shape };
}

/** The column of the file's `root` (a struct) holding `field`: by field id (mode `id`), else by the name the files use. */
function findColumn(
  column: string,
  field: DeltaField,
  root: FooterSchemaNode,
  mode: ColumnMappingMode,
): FooterSchemaNode | undefined {
  if (mode === 'id') {
    const id = fieldIdOf(column, field, mode);
    const byId = root.children.find((c) => c.element.field_id === id);
    if (byId !== undefined) return byId;
    // A column of the physical name without the id is not this column to an id-mode reader: refused, not read as null.
    const named = root.children.find((c) => c.element.name === physicalNameOf(column, field, mode));
    if (named !== undefined) checkFieldId(column, field, named, mode);
    return undefined;
  }
  const name = physicalNameOf(column, field, mode);
  const found = root.children.find((c) => c.element.name === name);
  if (found !== undefined) checkFieldId(column, field, found, mode);
  return found;
}

/**
 * Projects the data file whose footer schema is `elements` onto the table's current schema (see the module comment).
 * The outputs carry no footer key-value entries of their inputs: the Spark schema an input's footer may record is
 * its own, older one, and Delta readers take the schema from the log.
 */
export function projectDeltaFile(
  elements: readonly SchemaElement[],
  table: DeltaProjectionTable,
): DeltaFileProjection {
  const root = footerSchemaTree(elements);
  const partitions = new Set(table.partitionColumns.map((c) => c.toLowerCase()));
  const fields = table.schema.fields.filter((f) => !partitions.has(f.name.toLowerCase()));
  const columns: ProjectedColumn[] = [];
  let restates = root.children.length === fields.length;
  try {
    fields.forEach((f, i) => {
      const written = writtenField(f.name, f, table.mode);
      const node = findColumn(f.name, f, root, table.mode);
      if (node === undefined) {
        if (!f.nullable)
          throw new Contradiction(
            f.name,
            `it is not nullable but the file has no column ${written.name}${written.fieldId === undefined ? '' : ` (field id ${written.fieldId})`}`,
          );
        restates = false;
        columns.push({ field: written });
        return;
      }
      if (root.children[i] !== node || node.element.name !== written.name) restates = false;
      const shape = sourceOf(f.name, f.type, node, table);
      if (Object.keys(shape).length > 0) restates = false;
      columns.push({ field: written, source: { column: node.element.name, ...shape } });
    });
  } catch (err) {
    if (err instanceof Contradiction)
      return {
        kind: 'refused',
        reason: `it cannot be projected onto the table's current schema exactly: column ${err.column}: ${err.why}; a Delta reader could not read it as the schema says, so it is left alone`,
      };
    if (err instanceof NotDescribed)
      return {
        kind: 'as-written',
        reason: `column ${err.column}: ${err.why}`,
      };
    throw err;
  }
  if (columns.length === 0)
    return { kind: 'as-written', reason: 'the table has no columns beside its partition columns' };
  return { kind: 'projected', projection: { columns, keyValueMetadata: {} }, restates };
}
