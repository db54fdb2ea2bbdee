// The opt-in schema union of a Hive-style partition (`schemaEvolution: 'union'`): files whose Parquet schemas unify
// by column NAME are projected onto one written schema (core/projection.ts), so the bin-pack planner groups them and
// the engine writes and verifies them as it does Iceberg's projection onto the current schema. Hive-style Parquet has
// no table schema to project onto, so the written schema is the union of the files' own: every column any of them
// has, null in the rows of a file without it, widened where the files disagree only by a widening. Anything else is
// refused, naming the file and the column, and the file is left alone; nothing here guesses which file is right.
//
// Pure: the footers' schema elements in, a verdict per file out.
import type { SchemaElement } from 'hyparquet';
import {
  type ColumnProjection,
  type FooterSchemaNode,
  footerSchemaTree,
  LIST_ELEMENT,
  MAP_KEY,
  MAP_VALUE,
  nestedFormOf,
  PROJECTED_WIDENINGS,
  type ProjectedColumn,
  type ProjectedField,
  type ProjectedType,
  type ProjectedWidening,
  projectedLeafType,
  projectedTypeText,
} from '../../projection.js';

/** One readable file of the partition: its key, its schema fingerprint and its footer's schema elements. */
export interface UnionInput {
  readonly key: string;
  readonly schemaFingerprint: string;
  readonly schema: readonly SchemaElement[];
}

/** What the union makes of one file: projected onto the union, or refused with why (naming file and column). */
export type UnionVerdict =
  | { readonly kind: 'projected'; readonly projection: ColumnProjection }
  | { readonly kind: 'refused'; readonly reason: string };

/**
 * What the union may do beyond what every reader reads (a signed integer to a wider one — int8 → int16 → int32 →
 * int64 —, float32 → float64).
 */
export interface UnionOptions {
  /**
   * Widen a decimal to a larger precision at the same scale: only when every reader the table declares reads it
   * (core/readers.ts, `readersReadWidenedDecimals`), because the output's physical decimal type may change.
   */
  readonly widenDecimals: boolean;
}

/** A top-level column of one file, as the union reads it. */
interface FileColumn {
  readonly name: string;
  readonly nullable: boolean;
  readonly fieldId: number | undefined;
  readonly type: ProjectedType;
}

/** Why a column of a file cannot be described by a projection (a legacy list, an INT96 timestamp, ...). */
class NotDescribable extends Error {
  constructor(
    readonly column: string,
    readonly why: string,
  ) {
    super(`${column}: ${why}`);
  }
}

/** The projected type of a file's column node, or NotDescribable naming the (nested) column. */
function typeOf(column: string, node: FooterSchemaNode): ProjectedType {
  const e = node.element;
  if (e.repetition_type === 'REPEATED')
    throw new NotDescribable(column, 'it is a repeated field, which the union does not describe');
  if (node.children.length === 0) {
    const leaf = projectedLeafType(e);
    if (leaf === undefined)
      throw new NotDescribable(
        column,
        `its ${e.type} ${JSON.stringify(e.logical_type ?? e.converted_type ?? null)} type is not one the union describes`,
      );
    return leaf;
  }
  const annotation = e.logical_type?.type ?? e.converted_type;
  if (annotation === 'LIST' || annotation === 'MAP' || annotation === 'MAP_KEY_VALUE') {
    // A list or map in Parquet's standard form, its levels under their standard names (a reader matches them by
    // place, not name): so the same list written by two writers that name its element differently is one type.
    const kind = annotation === 'LIST' ? 'list' : 'map';
    const nested = nestedFormOf(node, kind);
    if (nested.form !== 'standard')
      throw new NotDescribable(
        column,
        `it is a ${kind} in a legacy form (not a group of one repeated group of ${kind === 'list' ? 'its element' : 'its key and value'}), which the union does not describe`,
      );
    const part = (name: string, child: FooterSchemaNode): ProjectedField => ({
      ...fieldOf(`${column}.${name}`, child),
      name,
    });
    const [first, second] = nested.children as [FooterSchemaNode, FooterSchemaNode];
    return kind === 'list'
      ? { list: part(LIST_ELEMENT, first) }
      : { map: { key: part(MAP_KEY, first), value: part(MAP_VALUE, second) } };
  }
  return {
    struct: node.children.map((child) => fieldOf(`${column}.${child.element.name}`, child)),
  };
}

function fieldOf(column: string, node: FooterSchemaNode): ProjectedField {
  const id = node.element.field_id;
  return {
    name: node.element.name,
    ...(id === undefined ? {} : { fieldId: id }),
    nullable: node.element.repetition_type !== 'REQUIRED',
    type: typeOf(column, node),
  };
}

/** The file's top-level columns, or the first it cannot describe. */
function columnsOf(file: UnionInput): FileColumn[] | NotDescribable {
  const root = footerSchemaTree(file.schema);
  try {
    return root.children.map((child) => {
      const field = fieldOf(child.element.name, child);
      return { name: field.name, nullable: field.nullable, fieldId: field.fieldId, type: field.type };
    });
  } catch (err) {
    if (err instanceof NotDescribable) return err;
    throw err;
  }
}

/**
 * The signed integers narrowest first: a byte or short (an INT32 annotated INT(8) or INT(16)) widens to any wider one,
 * as int32 does to int64 — every value sign-extends exactly. Where the wider type is int16 or int32 the output keeps
 * the column's physical INT32 and only its annotation widens, so every reader family (`any` too, which may ignore the
 * annotation) reads the same values; where it is int64 it is the int32 → int64 case (see core/readers.ts).
 */
const SIGNED_INTEGERS: readonly ProjectedType[] = ['int8', 'int16', 'int32', 'int64'];

/** The widening that takes `from` to `to`, 'same' when they are one type, undefined when neither. */
function wideningOf(from: ProjectedType, to: ProjectedType): ProjectedWidening | 'same' | undefined {
  if (JSON.stringify(from) === JSON.stringify(to)) return 'same';
  const narrow = SIGNED_INTEGERS.indexOf(from);
  const wide = SIGNED_INTEGERS.indexOf(to);
  if (narrow >= 0 && wide > narrow) {
    const name = `${String(from)}-${String(to)}`;
    return PROJECTED_WIDENINGS.find((w) => w === name);
  }
  if (from === 'float32' && to === 'float64') return 'float32-float64';
  if (
    typeof from === 'object' &&
    typeof to === 'object' &&
    'decimal' in from &&
    'decimal' in to &&
    from.decimal.scale === to.decimal.scale &&
    from.decimal.precision < to.decimal.precision
  )
    return 'decimal';
  return undefined;
}

/**
 * The type both `a` and `b` are read as: the same type, or the wider of a widening the union applies (nested
 * fields are never widened: a struct, a list's element, a map's key and value must be the same in every file);
 * undefined when they do not unify.
 */
function unified(a: ProjectedType, b: ProjectedType, options: UnionOptions): ProjectedType | undefined {
  for (const [from, to] of [
    [a, b],
    [b, a],
  ] as const) {
    const widening = wideningOf(from, to);
    if (widening === 'same') return to;
    if (widening === 'decimal' && !options.widenDecimals) continue;
    if (widening !== undefined) return to;
  }
  return undefined;
}

/** Why a decimal widening was not applied, when that is why `a` and `b` do not unify. */
function decimalNote(a: ProjectedType, b: ProjectedType): string {
  const widening = wideningOf(a, b) ?? wideningOf(b, a);
  return widening === 'decimal'
    ? ' (a decimal precision widening is applied only when every reader the table declares in `readers` reads it, and none declared here is known to)'
    : '';
}

/**
 * Unifies one partition's files by column name. Files of one schema population are not projected at all (nothing
 * to unify: they are grouped by their schema as always); otherwise every file is either projected onto the union of
 * the columns of the files that are not refused, or refused with why:
 *   - a column the projection cannot describe (a list or map in a legacy form, a repeated field, an INT96 or other
 *     unlisted type);
 *   - a column whose type differs between files other than by a widening the union applies (a signed integer to a
 *     wider one: int8 → int16 → int32 → int64, INT(8) and INT(16) being annotated INT32s; float32 → float64; and a
 *     decimal's precision at the same scale where the readers allow it), a struct whose fields (a list whose
 *     element, a map whose key or value) differ at all, or a name that differs from another file's only in case (Hive and Spark match columns
 *     case-insensitively, so they would be one column to them and two here): every file holding it is refused,
 *     because without a table schema there is no telling which of them is right.
 * The union's columns come in order of first appearance, files taken in key order; a column is nullable unless every
 * file has it and has it required; it keeps a field id only when every file holding it gives it the same one.
 */
export function unifySchemas(
  files: readonly UnionInput[],
  options: UnionOptions,
): ReadonlyMap<string, UnionVerdict> {
  const verdicts = new Map<string, UnionVerdict>();
  if (new Set(files.map((f) => f.schemaFingerprint)).size <= 1) return verdicts;
  const sorted = [...files].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const described: { key: string; columns: FileColumn[] }[] = [];
  for (const file of sorted) {
    const columns = columnsOf(file);
    if (columns instanceof NotDescribable)
      verdicts.set(file.key, {
        kind: 'refused',
        reason: refusal(file.key, columns.column, columns.why),
      });
    else described.push({ key: file.key, columns });
  }

  // Columns whose types do not unify, or whose names clash by case: every file holding them is refused.
  const conflicts = new Map<string, string>(); // file key → reason
  const byName = new Map<string, { key: string; column: FileColumn }[]>();
  for (const file of described)
    for (const column of file.columns) {
      const holders = byName.get(column.name) ?? [];
      holders.push({ key: file.key, column });
      byName.set(column.name, holders);
    }
  const byFolded = new Map<string, string[]>();
  for (const name of byName.keys()) {
    const folded = name.toLowerCase();
    byFolded.set(folded, [...(byFolded.get(folded) ?? []), name]);
  }
  for (const names of byFolded.values()) {
    if (names.length < 2) continue;
    for (const name of names)
      for (const holder of byName.get(name) ?? []) {
        const other = names.find((n) => n !== name) as string;
        const otherKey = byName.get(other)?.[0]?.key ?? '';
        conflicts.set(
          holder.key,
          refusal(
            holder.key,
            name,
            `it is named ${other} in ${otherKey}: names that differ only in case are one column to Hive and Spark and two to a union by name`,
          ),
        );
      }
  }
  for (const [name, holders] of byName) {
    let type: ProjectedType | undefined = holders[0]?.column.type;
    for (const holder of holders.slice(1)) {
      if (type === undefined) break;
      type = unified(type, holder.column.type, options);
    }
    if (type !== undefined) continue;
    for (const holder of holders) {
      const other = holders.find((h) => unified(h.column.type, holder.column.type, options) === undefined);
      if (other === undefined) continue;
      conflicts.set(
        holder.key,
        refusal(
          holder.key,
          name,
          `it is ${projectedTypeText(holder.column.type)} here but ${projectedTypeText(other.column.type)} in ${other.key}, which is not a widening the union applies${decimalNote(holder.column.type, other.column.type)}`,
        ),
      );
    }
    // A holder that unifies with every other holder still holds a column some files disagree on: refused too.
    for (const holder of holders)
      if (!conflicts.has(holder.key)) {
        const [a, b] = disagreeing(holders, options);
        conflicts.set(
          holder.key,
          refusal(
            holder.key,
            name,
            `its files disagree on its type (${projectedTypeText(a.column.type)} in ${a.key}, ${projectedTypeText(b.column.type)} in ${b.key}) beyond a widening the union applies`,
          ),
        );
      }
  }
  for (const [key, reason] of conflicts) verdicts.set(key, { kind: 'refused', reason });

  const kept = described.filter((f) => !conflicts.has(f.key));
  const union = unionOf(kept, options);
  for (const file of kept)
    verdicts.set(file.key, { kind: 'projected', projection: projectionOf(file, union) });
  return verdicts;
}

/** Two holders of a column whose types do not unify (one exists whenever the column's types do not). */
function disagreeing(
  holders: readonly { key: string; column: FileColumn }[],
  options: UnionOptions,
): [{ key: string; column: FileColumn }, { key: string; column: FileColumn }] {
  for (const a of holders)
    for (const b of holders) if (unified(a.column.type, b.column.type, options) === undefined) return [a, b];
  // Pairwise unifiable but not all together (int32, int64 and a decimal never are): name the first two types.
  return [
    holders[0] as { key: string; column: FileColumn },
    holders[1] as { key: string; column: FileColumn },
  ];
}

/** The union's fields, in order of first appearance (files in key order). */
function unionOf(
  files: readonly { key: string; columns: FileColumn[] }[],
  options: UnionOptions,
): ProjectedField[] {
  const order: string[] = [];
  const holders = new Map<string, FileColumn[]>();
  for (const file of files)
    for (const column of file.columns) {
      if (!holders.has(column.name)) order.push(column.name);
      holders.set(column.name, [...(holders.get(column.name) ?? []), column]);
    }
  return order.map((name) => {
    const columns = holders.get(name) ?? [];
    const type = columns
      .slice(1)
      .reduce<ProjectedType>(
        (t, c) => unified(t, c.type, options) as ProjectedType,
        (columns[0] as FileColumn).type,
      );
    const ids = new Set(columns.map((c) => c.fieldId));
    const id = ids.size === 1 ? [...ids][0] : undefined;
    const everyFile = columns.length === files.length;
    return {
      name,
      ...(id === undefined ? {} : { fieldId: id }),
      nullable: !everyFile || columns.some((c) => c.nullable),
      type,
    };
  });
}

/** One file's projection onto the union: its own column where it has one (widened if narrower), else nulls. */
function projectionOf(file: { columns: FileColumn[] }, union: readonly ProjectedField[]): ColumnProjection {
  const columns: ProjectedColumn[] = union.map((field) => {
    const own = file.columns.find((c) => c.name === field.name);
    if (own === undefined) return { field };
    const widening = wideningOf(own.type, field.type);
    return {
      field,
      source: {
        column: own.name,
        ...(widening === undefined || widening === 'same' ? {} : { widen: widening }),
      },
    };
  });
  // No footer entries of any input: they describe the schema that input was written with (Spark's row metadata,
  // pandas' schema), which the union's output does not have.
  return { columns, keyValueMetadata: {} };
}

function refusal(key: string, column: string, why: string): string {
  return `schemaEvolution union: ${key} cannot join its partition's schema union: column ${column}: ${why}; left alone`;
}
