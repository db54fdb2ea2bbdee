// Parses a Delta `schemaString` into a typed tree and exposes column mapping: every field's logical path, physical
// name and field id exactly as the log records them, and a fingerprint that changes whenever the schema does.
import { createHash } from 'node:crypto';
import { z } from 'zod';

/** A Delta data type: a primitive name (`long`, `decimal(10,2)`, `timestamp_ntz`) or a nested type. */
export type DeltaType =
  | string
  | { readonly type: 'struct'; readonly fields: readonly DeltaField[] }
  | { readonly type: 'array'; readonly elementType: DeltaType; readonly containsNull: boolean }
  | {
      readonly type: 'map';
      readonly keyType: DeltaType;
      readonly valueType: DeltaType;
      readonly valueContainsNull: boolean;
    };

export interface DeltaField {
  readonly name: string;
  readonly type: DeltaType;
  readonly nullable: boolean;
  readonly metadata: Readonly<Record<string, unknown>>;
}

export interface DeltaSchema {
  readonly type: 'struct';
  readonly fields: readonly DeltaField[];
}

const typeSchema: z.ZodType<DeltaType> = z.lazy(() =>
  z.union([
    z.string(),
    z.object({ type: z.literal('struct'), fields: z.array(fieldSchema) }),
    z.object({ type: z.literal('array'), elementType: typeSchema, containsNull: z.boolean() }),
    z.object({
      type: z.literal('map'),
      keyType: typeSchema,
      valueType: typeSchema,
      valueContainsNull: z.boolean(),
    }),
  ]),
);
const fieldSchema: z.ZodType<DeltaField> = z.lazy(() =>
  z.object({
    name: z.string(),
    type: typeSchema,
    nullable: z.boolean(),
    metadata: z.record(z.string(), z.unknown()).default({}),
  }),
);
const rootSchema = z.object({ type: z.literal('struct'), fields: z.array(fieldSchema) });

/** @throws z.ZodError or SyntaxError when the string is not a Delta struct schema (the caller names the file). */
export function parseDeltaSchema(schemaString: string): DeltaSchema {
  return rootSchema.parse(JSON.parse(schemaString));
}

/** `delta.columnMapping.mode`: `none` when unset. */
export type ColumnMappingMode = 'none' | 'name' | 'id';

/** One field's mapping: where it is logically, what it is called in the files, and its id. */
export interface MappedColumn {
  /** Logical names from the top-level field down (`['address', 'city']`); array/map levels add `element`/`key`/`value`. */
  readonly path: readonly string[];
  /** `delta.columnMapping.physicalName`; the logical name itself when the table has no mapping. */
  readonly physicalName: string;
  /** `delta.columnMapping.id`, when present. */
  readonly id?: number;
}

export const PHYSICAL_NAME_KEY = 'delta.columnMapping.physicalName';
export const FIELD_ID_KEY = 'delta.columnMapping.id';

/**
 * Every struct field of the schema, depth first, with its physical name and id. Kept exactly as recorded:
 * a rewrite must write these names (and Parquet field ids), never the logical ones. In mode `none` the files use
 * the logical names (PROTOCOL.md "Column Mapping"), so any recorded physical name or id is not exposed.
 */
export function mappedColumns(schema: DeltaSchema, mode: ColumnMappingMode): MappedColumn[] {
  const out: MappedColumn[] = [];
  const visitType = (type: DeltaType, path: readonly string[]): void => {
    if (typeof type === 'string') return;
    if (type.type === 'struct') {
      for (const field of type.fields) {
        const here = [...path, field.name];
        const physical = mode === 'none' ? undefined : field.metadata[PHYSICAL_NAME_KEY];
        const id = mode === 'none' ? undefined : field.metadata[FIELD_ID_KEY];
        out.push({
          path: here,
          physicalName: typeof physical === 'string' ? physical : field.name,
          ...(typeof id === 'number' ? { id } : {}),
        });
        visitType(field.type, here);
      }
    } else if (type.type === 'array') {
      visitType(type.elementType, [...path, 'element']);
    } else {
      visitType(type.keyType, [...path, 'key']);
      visitType(type.valueType, [...path, 'value']);
    }
  };
  visitType(schema, []);
  return out;
}

/**
 * A fingerprint of the table schema: sha256 of its canonical JSON (keys sorted), prefixed `delta:` so it is never
 * mistaken for a Parquet footer's fingerprint. Two versions with the same fingerprint have the same schema.
 */
export function deltaSchemaFingerprint(schema: DeltaSchema): string {
  return `delta:${createHash('sha256').update(canonicalJson(schema)).digest('hex')}`;
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}
