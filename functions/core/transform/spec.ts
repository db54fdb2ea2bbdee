// An operator's partition rewrite as data: the transformation file's schema (zod), parsed once, and its plan against
// the partition's columns — the written schema, column by column, and where each column's values come from. Pure:
// the CLI reads the file and the footers, the engine and the verification apply the plan.
import type { SchemaElement } from 'hyparquet';
import { z } from 'zod';
import { InvalidInputError } from '../errors.js';
import { footerSchemaTree, type ProjectedType, projectedLeafType, projectedTypeText } from '../projection.js';
import { type Converted, castExact, type Value, valueText } from './cast.js';
import {
  type Expr,
  ExpressionError,
  parseExpression,
  referencedColumns,
  typeOfExpression,
  VALUE_TYPES,
  type ValueType,
  WRITTEN_TYPES,
  type WrittenType,
} from './expression.js';

const columnName = z.string().min(1);
const writtenType = z.enum(WRITTEN_TYPES);

/** One step of a transformation file. Every step names input columns (before any step ran). */
export const transformStepSchema = z.discriminatedUnion('op', [
  z.strictObject({
    op: z.literal('addColumn'),
    name: columnName,
    type: writtenType,
    /** A literal written in every row (JSON: a number, a string, a boolean or null); or: */
    default: z.union([z.number(), z.string(), z.boolean(), z.null()]).optional(),
    /** An expression over the input's columns (see expression.ts), evaluated per row. */
    expression: z.string().min(1).optional(),
  }),
  z.strictObject({ op: z.literal('cast'), column: columnName, to: writtenType }),
  z.strictObject({ op: z.literal('rename'), column: columnName, to: columnName }),
  z.strictObject({ op: z.literal('drop'), column: columnName }),
]);
export type TransformStep = z.infer<typeof transformStepSchema>;

export const transformSpecSchema = z.strictObject({ steps: z.array(transformStepSchema).min(1) });
export type TransformSpec = z.infer<typeof transformSpecSchema>;

/**
 * The transformation file `text` (read from `file`, named in messages) as a spec.
 * @throws InvalidInputError listing every problem (not JSON, an unknown step or field, a missing one).
 */
export function parseTransformSpec(text: string, file: string): TransformSpec {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new InvalidInputError(
      `Transformation file ${file} is not JSON (${err instanceof Error ? err.message : String(err)})`,
    );
  }
  const parsed = transformSpecSchema.safeParse(json);
  if (!parsed.success)
    throw new InvalidInputError(
      `Transformation file ${file} is not a valid transformation`,
      parsed.error.issues.map((i) => `${i.path.join('.') || '(file)'}: ${i.message}`),
    );
  return parsed.data;
}

/** One column of the input, as the partition's footers give it: its value type, undefined when expressions cannot read it. */
export interface InputColumn {
  readonly name: string;
  readonly type: ValueType | undefined;
  /** The column's type as printed (`int64`, `string`, `struct<…>`). */
  readonly typeText: string;
}

/**
 * A rewrite as a run carries it (the console's `transform` and `confirmDrop`, the CLI's file and flags): the
 * spec as parsed once, and the drops the operator confirmed. JSON-safe: it travels in the execution state.
 */
export const runTransformSchema = z.object({
  spec: transformSpecSchema,
  confirmDrop: z.array(columnName).readonly(),
});
export type RunTransform = z.infer<typeof runTransformSchema>;

/**
 * A rewrite as its stored plan records it: the run's transformation and the input columns it was planned against
 * (the first input's footer), so every later step re-plans exactly the same {@link TransformPlan} from the plan
 * alone ({@link planTransform} is pure) without reading a footer again.
 */
export const plannedTransformSchema = runTransformSchema.extend({
  columns: z.array(
    z.object({ name: z.string(), type: z.enum(VALUE_TYPES).optional(), typeText: z.string() }),
  ),
  /**
   * How the group's inputs (in key order) make its outputs: the n-th number is how many consecutive inputs the n-th
   * output holds, packed to the run's target file size (workflow/rewrite-plan.ts). Absent (a plan stored before
   * rewrites were packed): one output per input.
   */
  inputsPerOutput: z.array(z.number().int().positive()).min(1).optional(),
});
export type PlannedTransform = z.infer<typeof plannedTransformSchema>;

/** `columns` as a stored plan records them (JSON has no undefined: a type expressions cannot read is left out). */
export function plannedTransform(
  transform: RunTransform,
  columns: readonly InputColumn[],
  inputsPerOutput?: readonly number[],
): PlannedTransform {
  return {
    spec: transform.spec,
    confirmDrop: transform.confirmDrop,
    columns: columns.map((c) => ({
      name: c.name,
      ...(c.type === undefined ? {} : { type: c.type }),
      typeText: c.typeText,
    })),
    ...(inputsPerOutput === undefined ? {} : { inputsPerOutput: [...inputsPerOutput] }),
  };
}

/** The {@link TransformPlan} a stored plan's transformation gives (the plan step made the same one). */
export function replanTransform(planned: PlannedTransform): { plan: TransformPlan; columns: InputColumn[] } {
  const columns = planned.columns.map((c) => ({ name: c.name, type: c.type, typeText: c.typeText }));
  return { plan: planTransform(planned.spec, columns, planned.confirmDrop), columns };
}

/**
 * The drop steps of `spec` whose column `confirmed` does not list, and the confirmations of columns no step drops
 * (a typo must not pass for a confirmation). Needs no partition: an entry point checks it before reading anything.
 */
export function dropConfirmationProblems(
  spec: TransformSpec,
  confirmed: readonly string[],
): { readonly unconfirmed: readonly string[]; readonly stray: readonly string[] } {
  const dropped = spec.steps.flatMap((s) => (s.op === 'drop' ? [s.column] : []));
  return {
    unconfirmed: dropped.filter((c) => !confirmed.includes(c)),
    stray: confirmed.filter((c) => !dropped.includes(c)),
  };
}

/** One written column and where its values come from. */
export type OutputColumn =
  /** Copied from input column `source`, unchanged (renamed when `name` differs). */
  | { readonly kind: 'copy'; readonly name: string; readonly source: string; readonly typeText: string }
  /** Input column `source` converted exactly to `to` (see castExact). */
  | { readonly kind: 'cast'; readonly name: string; readonly source: string; readonly to: WrittenType }
  /** `expression` evaluated per row over the input, then converted exactly to `type`. */
  | {
      readonly kind: 'derived';
      readonly name: string;
      readonly type: WrittenType;
      readonly expression: string;
      readonly expr: Expr;
    }
  /** The same value in every row. */
  | { readonly kind: 'literal'; readonly name: string; readonly type: WrittenType; readonly value: Value };

/** A transformation planned against a partition's columns: the written columns in order. */
export interface TransformPlan {
  readonly columns: readonly OutputColumn[];
  /** Input columns not written (dropped with confirmation). */
  readonly dropped: readonly string[];
}

/** Which value types a result may be written as; each write is still checked value by value (castExact). */
function writable(from: ValueType, to: WrittenType): boolean {
  if (from === 'null' || from === 'string') return true;
  if (from === 'int') return true;
  if (from === 'float') return to === 'float64' || to === 'string' || to === 'int32' || to === 'int64';
  if (from === 'boolean') return to === 'boolean' || to === 'string';
  return false;
}

/**
 * Plans `spec` against the partition's columns: input columns in their order (cast in place, renamed in place,
 * dropped ones left out), added ones after them in the file's order.
 * @param confirmedDrops the columns the operator confirmed dropping (`--confirm-drop`): a drop needs its column here,
 * and a confirmation of a column the file does not drop is refused too (a typo must not pass for a confirmation).
 * @throws InvalidInputError listing every problem: an unknown column, a column given two steps, a name clash, an
 * unconfirmed drop, a cast from a type that does not convert, an expression that does not parse or type.
 */
export function planTransform(
  spec: TransformSpec,
  input: readonly InputColumn[],
  confirmedDrops: readonly string[] = [],
): TransformPlan {
  const problems: string[] = [];
  const byName = new Map(input.map((c) => [c.name, c]));
  const types = new Map(input.map((c) => [c.name, c.type]));
  const stepOf = new Map<string, TransformStep>();
  const added: OutputColumn[] = [];
  for (const [index, step] of spec.steps.entries()) {
    const where = `step ${index + 1} (${step.op})`;
    if (step.op === 'addColumn') {
      const planned = planAdd(step, types);
      if ('problem' in planned) problems.push(`${where}: ${planned.problem}`);
      else added.push(planned.column);
      continue;
    }
    const column = byName.get(step.column);
    if (column === undefined) {
      problems.push(`${where}: the partition has no column ${step.column}`);
      continue;
    }
    if (stepOf.has(step.column)) {
      problems.push(`${where}: column ${step.column} already has a step (one step per column)`);
      continue;
    }
    stepOf.set(step.column, step);
    if (
      step.op === 'cast' &&
      (column.type === undefined || column.type === 'date' || column.type === 'timestamp')
    )
      problems.push(`${where}: column ${step.column} (${column.typeText}) does not convert to ${step.to}`);
    if (step.op === 'drop' && !confirmedDrops.includes(step.column))
      problems.push(
        `${where}: dropping column ${step.column} loses its values; confirm with --confirm-drop ${step.column}`,
      );
  }
  for (const c of confirmedDrops)
    if (stepOf.get(c)?.op !== 'drop')
      problems.push(`--confirm-drop ${c}: the transformation does not drop column ${c}`);
  const columns: OutputColumn[] = [];
  for (const c of input) {
    const step = stepOf.get(c.name);
    if (step?.op === 'drop') continue;
    if (step?.op === 'cast') columns.push({ kind: 'cast', name: c.name, source: c.name, to: step.to });
    else if (step?.op === 'rename')
      columns.push({ kind: 'copy', name: step.to, source: c.name, typeText: c.typeText });
    else columns.push({ kind: 'copy', name: c.name, source: c.name, typeText: c.typeText });
  }
  columns.push(...added);
  const seen = new Set<string>();
  for (const c of columns) {
    if (seen.has(c.name)) problems.push(`two written columns would be named ${c.name}`);
    seen.add(c.name);
  }
  if (problems.length > 0)
    throw new InvalidInputError('The transformation cannot apply to this partition', problems);
  return {
    columns,
    dropped: [...stepOf].filter(([, s]) => s.op === 'drop').map(([name]) => name),
  };
}

function planAdd(
  step: Extract<TransformStep, { op: 'addColumn' }>,
  types: ReadonlyMap<string, ValueType | undefined>,
): { column: OutputColumn } | { problem: string } {
  if ((step.default === undefined) === (step.expression === undefined))
    return { problem: `column ${step.name} needs either a default or an expression (one of them)` };
  if (step.expression === undefined) {
    const literal: Value =
      typeof step.default === 'number'
        ? Number.isInteger(step.default)
          ? BigInt(step.default)
          : step.default
        : (step.default ?? null);
    const converted: Converted = castExact(literal, step.type);
    if ('problem' in converted)
      return {
        problem: `default ${valueText(literal)} of column ${step.name} is not a ${step.type}: ${converted.problem}`,
      };
    return { column: { kind: 'literal', name: step.name, type: step.type, value: converted.value } };
  }
  try {
    const expr = parseExpression(step.expression);
    const result = typeOfExpression(step.expression, expr, types);
    if (!writable(result, step.type))
      return {
        problem: `expression of column ${step.name} gives a ${result}, which is not written as ${step.type}`,
      };
    return {
      column: { kind: 'derived', name: step.name, type: step.type, expression: step.expression, expr },
    };
  } catch (err) {
    if (err instanceof ExpressionError) return { problem: `column ${step.name}: ${err.message}` };
    throw err;
  }
}

/** The input columns a plan writes unchanged, under their input names (the columns verification compares as they are). */
export function untouchedColumns(plan: TransformPlan): string[] {
  return plan.columns.filter((c) => c.kind === 'copy' && c.name === c.source).map((c) => c.name);
}

/** The input columns any written column reads. */
export function readColumns(plan: TransformPlan): string[] {
  const read = new Set<string>();
  for (const c of plan.columns) {
    if (c.kind === 'copy' || c.kind === 'cast') read.add(c.source);
    if (c.kind === 'derived') for (const r of referencedColumns(c.expr)) read.add(r);
  }
  return [...read];
}

/** The written schema, one line per column: its name, type and where it comes from (the dry run prints it). */
export function describePlan(plan: TransformPlan): string[] {
  return [...plan.columns.map(describeColumn), ...plan.dropped.map((d) => `(dropped: ${d})`)];
}

function describeColumn(c: OutputColumn): string {
  switch (c.kind) {
    case 'copy':
      return c.name === c.source
        ? `${c.name}  ${c.typeText}`
        : `${c.name}  ${c.typeText}  (renamed from ${c.source})`;
    case 'cast':
      return `${c.name}  ${c.to}  (cast, checked)`;
    case 'derived':
      return `${c.name}  ${c.type}  (added: ${c.expression})`;
    case 'literal':
      return `${c.name}  ${c.type}  (added: ${valueText(c.value)} in every row)`;
  }
}

/** The value type expressions read a column of `type` as; undefined for types they do not read (copied only). */
function valueTypeOfProjected(type: ProjectedType | undefined): ValueType | undefined {
  switch (type) {
    case 'boolean':
      return 'boolean';
    case 'int32':
    case 'int64':
      return 'int';
    case 'float32':
    case 'float64':
      return 'float';
    case 'string':
      return 'string';
    case 'date32':
      return 'date';
    case 'timestamp-us':
    case 'timestamp-us-utc':
      return 'timestamp';
    default:
      return undefined;
  }
}

/** A partition file's top-level columns as a transformation is planned against them (from its footer's schema). */
export function inputColumnsOf(schema: readonly SchemaElement[]): InputColumn[] {
  return footerSchemaTree(schema).children.map((node) => {
    const leaf = node.children.length === 0 && node.element.repetition_type !== 'REPEATED';
    const type = leaf ? projectedLeafType(node.element) : undefined;
    return {
      name: node.element.name,
      type: valueTypeOfProjected(type),
      typeText: type === undefined ? (leaf ? String(node.element.type) : 'nested') : projectedTypeText(type),
    };
  });
}
