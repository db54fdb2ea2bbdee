// A data file projected onto the table's current schema, as Iceberg's readers project it (spec, "Schema Evolution"
// and "Column Projection"; Java's ParquetSchemaUtil / TypeWithSchemaVisitor): columns are matched by field id, never
// by name or position, so a renamed column keeps its values under its current name, a dropped column is not
// written, a column added after the file was written is null in its rows, and a column whose type was promoted
// (int → long, float → double, decimal(P, S) → decimal(P', S) with P' > P) is widened — at any depth of nested
// structs, whose fields are matched by id too. What cannot be projected exactly is named, and the file left alone.
import type { SchemaElement } from 'hyparquet';
import {
  type ColumnProjection,
  type FooterSchemaNode,
  footerSchemaTree,
  type ProjectedColumn,
  type ProjectedField,
  type ProjectedFieldSource,
  type ProjectedPrimitive,
  type ProjectedSource,
  type ProjectedType,
  projectedLeafType,
} from '../../projection.js';
import type { IcebergField, IcebergSchema, IcebergType } from './metadata.js';

/** The footer entry Iceberg's Parquet writer records the write schema in (Java's `ParquetWriter`, "iceberg.schema"). */
export const ICEBERG_SCHEMA_FOOTER_KEY = 'iceberg.schema';

/**
 * What becomes of one data file under the current schema: projected (`projection`), left alone with why
 * (`refused`: it was written under an older schema this projection cannot carry over exactly), or written as it is
 * (`as-written`: its columns are the current schema's by id, name and type, but a type of it — a list, a map — is
 * one the projection does not describe, so it keeps today's path: grouped with files of its own Parquet schema).
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
  string: 'string',
  binary: 'binary',
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
  return undefined;
}

const DECIMAL = /^decimal\((\d+),\s*(\d+)\)$/;

/** The written type of a current-schema type, or NotProjectable for one this projection does not describe. */
function projectedTypeOf(column: string, type: IcebergType): ProjectedType {
  if (typeof type === 'string') {
    const decimal = DECIMAL.exec(type);
    if (decimal !== null) return { decimal: { precision: Number(decimal[1]), scale: Number(decimal[2]) } };
    const p = (Object.keys(ICEBERG_PRIMITIVE) as ProjectedPrimitive[]).find(
      (k) => ICEBERG_PRIMITIVE[k] === type,
    );
    if (p === undefined)
      throw new NotProjectable(column, `its type ${type} is not one this rewrite projects`, false);
    return p;
  }
  if (type.type === 'struct') {
    const fields = (type.fields ?? []) as readonly IcebergField[];
    return { struct: fields.map((f) => projectedFieldOf(`${column}.${f.name}`, f)) };
  }
  throw new NotProjectable(column, `its type is a ${type.type}, which this rewrite does not project`, false);
}

function projectedFieldOf(column: string, f: IcebergField): ProjectedField {
  return { name: f.name, fieldId: f.id, nullable: !f.required, type: projectedTypeOf(column, f.type) };
}

/** How a file's column becomes the current field: widened, or (a struct) rebuilt field by field; empty: as it is. */
type SourceShape = Omit<ProjectedSource, 'column'>;

/**
 * Checks that the file's column `node` can be read as the current field `f` exactly, as Iceberg's readers read it:
 * a struct's fields matched by field id at any depth (a nested field added since is null, one dropped is not
 * written, one renamed keeps its values), and the promotions Iceberg allows; returns how the column is converted.
 */
function sourceOf(column: string, f: IcebergField, node: Node): SourceShape {
  const e = node.element;
  if (f.required && e.repetition_type !== 'REQUIRED')
    throw new NotProjectable(column, 'it is required now but optional in the file');
  if (e.repetition_type === 'REPEATED')
    throw new NotProjectable(column, 'it is a repeated field in the file');
  if (typeof f.type !== 'string') {
    if (f.type.type !== 'struct')
      throw new NotProjectable(
        column,
        `its type is a ${f.type.type}, which this rewrite does not project`,
        false,
      );
    if (node.children.length === 0)
      throw new NotProjectable(column, 'it is a struct now but a primitive in the file');
    return structSource(column, (f.type.fields ?? []) as readonly IcebergField[], node);
  }
  if (node.children.length > 0)
    throw new NotProjectable(column, `it is ${f.type} now but a group in the file`);
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
  throw new NotProjectable(
    column,
    `it is ${f.type} now but ${was} in the file, which is not a promotion Iceberg allows`,
  );
}

/**
 * How the file's struct `node` becomes the current struct of `fields`: each current field from the file's field of
 * its id (null when the file has none, unless it is required or has an initial-default), the file's other fields
 * not written. No `fields` when the file's struct already is the current one, field for field.
 */
function structSource(column: string, fields: readonly IcebergField[], node: Node): SourceShape {
  for (const child of node.children)
    if (child.element.field_id === undefined)
      throw new NotProjectable(
        `${column}.${child.element.name}`,
        'it has no Parquet field id in the file, so it cannot be matched to the current schema',
      );
  let same = node.children.length === fields.length;
  const sources: ProjectedFieldSource[] = fields.map((sub, i) => {
    const name = `${column}.${sub.name}`;
    const position = node.children.findIndex((c) => c.element.field_id === sub.id);
    const child = node.children[position];
    if (child === undefined) {
      same = false;
      if (sub['initial-default'] !== undefined)
        throw new NotProjectable(
          name,
          'it was added with an initial-default, which this rewrite does not write',
        );
      if (sub.required) throw new NotProjectable(name, 'it is required but the file does not have it');
      return {};
    }
    const shape = sourceOf(name, sub, child);
    if (position !== i || child.element.name !== sub.name || Object.keys(shape).length > 0) same = false;
    return { source: { column: child.element.name, position, ...shape } };
  });
  return same ? {} : { fields: sources };
}

/**
 * Projects the file whose footer schema is `elements` onto `current`. Every top-level column of the file must carry
 * a field id (files without ids would need the table's name mapping, which is not read); columns are matched by id.
 * @param schemaJson the current schema as the table metadata spells it: the outputs' `iceberg.schema` footer entry.
 */
export function projectDataFile(
  elements: readonly SchemaElement[],
  current: IcebergSchema,
  schemaJson: string,
): FileProjection {
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
  const columns: ProjectedColumn[] = [];
  let identical = root.children.length === current.fields.length;
  try {
    current.fields.forEach((f, i) => {
      const node = byId.get(f.id);
      if (node === undefined) {
        identical = false;
        if (f['initial-default'] !== undefined)
          throw new NotProjectable(
            f.name,
            'it was added with an initial-default, which this rewrite does not write',
          );
        if (f.required) throw new NotProjectable(f.name, 'it is required but the file does not have it');
        columns.push({ field: projectedFieldOf(f.name, f) });
        return;
      }
      if (root.children[i] !== node || node.element.name !== f.name) identical = false;
      const shape = sourceOf(f.name, f, node);
      if (Object.keys(shape).length > 0) identical = false;
      columns.push({ field: projectedFieldOf(f.name, f), source: { column: node.element.name, ...shape } });
    });
  } catch (err) {
    if (!(err instanceof NotProjectable)) throw err;
    if (!err.describable && identical && sameAsCurrent(root, current)) return { kind: 'as-written' };
    return {
      kind: 'refused',
      reason: `written under an older schema, it cannot be projected onto the current one exactly: column ${err.column}: ${err.why}`,
    };
  }
  return {
    kind: 'projected',
    projection: { columns, keyValueMetadata: { [ICEBERG_SCHEMA_FOOTER_KEY]: schemaJson } },
  };
}

/**
 * Whether a projection of the file whose footer schema is `elements` only restates it: its top-level columns are the
 * current schema's in order, by id and name, and none is widened (nested ones are exact, or it would be refused).
 * The planner then may rewrite files of one such Parquet schema as written, as on a table that never evolved.
 */
export function projectionRestatesFile(
  elements: readonly SchemaElement[],
  current: IcebergSchema,
  projection: ColumnProjection,
): boolean {
  return (
    sameAsCurrent(footerSchemaTree(elements), current) &&
    projection.columns.every(
      (c) => c.source !== undefined && c.source.widen === undefined && c.source.fields === undefined,
    )
  );
}

/** Whether the file's top-level columns are the current schema's, in order, by id and name. */
function sameAsCurrent(root: Node, current: IcebergSchema): boolean {
  return (
    root.children.length === current.fields.length &&
    current.fields.every((f, i) => {
      const e = root.children[i]?.element;
      return e !== undefined && e.field_id === f.id && e.name === f.name;
    })
  );
}
