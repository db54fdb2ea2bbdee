// A Parquet schema's logical shape: what a reader decodes it to, whatever physical form the writer chose.
// Schema fidelity `logical` accepts an output whose exact schema differs from its input's only where the
// logical shapes are equal — a legacy decimal, list, map or INT96 written in today's standard form.

import type { SchemaElement } from 'hyparquet';
import { exactSchemaSignature } from '../fingerprint/fingerprint.js';

/** The unit an INT96 column is written in under schema fidelity `logical` (see parquet-wasm/int96.ts). */
export type Int96Unit = 'MICROS' | 'NANOS';

/** A node of the logical shape; JSON-comparable. Names of the levels a list or map adds are left out. */
type Shape =
  | readonly ['leaf', string | null, boolean, number | null, string, number, unknown]
  | readonly ['list', string | null, boolean, number | null, Shape]
  | readonly ['map', string | null, boolean, number | null, Shape, Shape]
  | readonly ['struct', string | null, boolean, number | null, readonly Shape[]];

interface Node {
  readonly element: SchemaElement;
  /** This node's entry of `exactSchemaSignature`: [name, repetition, children, type, length, fieldId, logical]. */
  readonly entry: readonly unknown[];
  /** Dotted path of names from the root (the root excluded). */
  readonly path: string;
  readonly children: readonly Node[];
}

function treeOf(schema: readonly SchemaElement[]): Node {
  const entries = exactSchemaSignature(schema) as unknown[][];
  let at = 0;
  const build = (parent: string): Node => {
    const index = at++;
    const element = schema[index] as SchemaElement;
    const path = index === 0 ? '' : parent === '' ? element.name : `${parent}.${element.name}`;
    const children: Node[] = [];
    for (let i = 0; i < (element.num_children ?? 0); i++) children.push(build(path));
    return { element, entry: entries[index] ?? [], path, children };
  };
  return build('');
}

const isGroup = (n: Node) => n.children.length > 0 || n.element.num_children !== undefined;
const logicalOf = (n: Node) => n.entry[6] as { type?: string; unit?: string } | null;
const fieldIdOf = (n: Node) => (n.entry[5] as number | null) ?? null;

/**
 * The logical shape of `schema`. Lists follow the LIST spec's backward-compatibility rules (a repeated
 * primitive, a repeated group of several fields or one named `array` / `<list>_tuple` is the element
 * itself: the 2-level forms), maps accept a MAP_KEY_VALUE repeated group and an OPTIONAL key, a bare repeated field is a list
 * of required elements, decimals are compared by precision and scale only, and an INT96 column is the
 * INT64 TIMESTAMP it is written as (`int96Units` by dotted path, MICROS when absent).
 */
export function logicalShapeOf(
  schema: readonly SchemaElement[],
  int96Units: Readonly<Record<string, Int96Unit>> = {},
): string {
  const leaf = (n: Node, name: string | null, required: boolean): Shape => {
    const logical = logicalOf(n);
    if (n.element.type === 'INT96') {
      const unit = int96Units[n.path] ?? 'MICROS';
      return [
        'leaf',
        name,
        required,
        fieldIdOf(n),
        'INT64',
        0,
        { type: 'TIMESTAMP', unit, isAdjustedToUTC: true },
      ];
    }
    if (logical?.type === 'DECIMAL') return ['leaf', name, required, fieldIdOf(n), '', 0, logical];
    return ['leaf', name, required, fieldIdOf(n), String(n.entry[3]), Number(n.entry[4]), logical];
  };
  /** A value node: `name` null for the levels lists and maps add, `required` for elements of 2-level lists. */
  const shape = (n: Node, name: string | null, forceRequired = false): Shape => {
    const rep = n.element.repetition_type ?? 'REQUIRED';
    const required = forceRequired || rep === 'REQUIRED';
    const logical = logicalOf(n);
    if (rep === 'REPEATED' && !forceRequired) {
      // A repeated field outside a LIST or MAP: a required list of required elements.
      return ['list', name, true, null, shape(n, null, true)];
    }
    if (!isGroup(n)) return leaf(n, name, required);
    if (logical?.type === 'LIST' && n.children.length === 1) {
      const r = n.children[0] as Node;
      const twoLevel =
        !isGroup(r) ||
        r.children.length > 1 ||
        r.element.name === 'array' ||
        r.element.name === `${n.element.name}_tuple`;
      const element = twoLevel ? shape(r, null, true) : shape(r.children[0] as Node, null);
      return ['list', name, required, fieldIdOf(n), element];
    }
    if (logical?.type === 'MAP' && n.children.length === 1) {
      const kv = n.children[0] as Node;
      if (kv.children.length === 2) {
        return [
          'map',
          name,
          required,
          fieldIdOf(n),
          // A key is never null (the MAP spec), so an OPTIONAL key — as Presto/Trino before 386/0.274 and Athena
          // wrote it (parquet-testing's `incorrect_map_schema.parquet`) — holds the values of a REQUIRED one; a null
          // key, were there one, fails the decode by name (see docs/engine.md).
          shape(kv.children[0] as Node, null, true),
          shape(kv.children[1] as Node, null),
        ];
      }
    }
    return ['struct', name, required, fieldIdOf(n), n.children.map((c) => shape(c, c.element.name))];
  };
  const root = treeOf(schema);
  return JSON.stringify(root.children.map((c) => shape(c, c.element.name)));
}
