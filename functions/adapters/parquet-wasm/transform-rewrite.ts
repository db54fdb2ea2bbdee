// A partition rewrite's engine: the ParquetEngine the workflow's compact and verify steps call for a `rewrite`
// run, so a transformation goes through the very plan → stage → verify → commit path of compaction. Each input
// is decoded by parquet-wasm into Arrow, its untouched columns passed through as decoded (renamed where the plan
// says), its cast and added columns computed by functions compiled from the plan, and streamed into the output the
// plan packed it in (consecutive inputs per output, to the target size). The fingerprint verify checks is not
// computed from these batches: it is each output's inputs re-derived through the plan's interpreter from another
// decoder (transform-verify.ts), so the evaluator here is checked, not trusted.
import {
  Bool,
  type DataType,
  Field,
  Float64,
  Int32,
  Int64,
  RecordBatch,
  Schema,
  Table,
  tableFromIPC,
  tableToIPC,
  Utf8,
  type Vector,
  vectorFromArray,
} from 'apache-arrow';
import { InvalidInputError } from '../../core/errors.js';
import type { OrderedFingerprint } from '../../core/fingerprint/fingerprint.js';
import { castExact, type Value, valueText } from '../../core/transform/cast.js';
import { type Expr, INT64_RANGE, type WrittenType } from '../../core/transform/expression.js';
import { TransformValueError } from '../../core/transform/rederive.js';
import type { InputColumn, OutputColumn, TransformPlan } from '../../core/transform/spec.js';
import type {
  ParquetEngine,
  RewriteGroup,
  RewriteIo,
  RewriteOptions,
  RewriteResult,
  WrittenOutput,
} from '../../ports/parquet-engine.js';
import { DEFAULT_CODEC } from '../../ports/parquet-engine.js';
import { OutputWriter } from './output.js';
import { expectedFingerprint, verifyTransformOutputs } from './transform-verify.js';
import { decodeError, pw, type WriterSettings } from './wasm.js';

/** A value as this evaluator carries it: Arrow's, with integers as bigint and times as Date. */
type Carried = null | boolean | bigint | number | string | Date;

/** Thrown inside a compiled function; turned into a TransformValueError naming file, row and column. */
class Refused extends Error {
  constructor(
    readonly value: Carried,
    readonly why: string,
  ) {
    super(why);
  }
}

const ARROW_TYPES: Readonly<Record<WrittenType, () => DataType>> = {
  int32: () => new Int32(),
  int64: () => new Int64(),
  float64: () => new Float64(),
  string: () => new Utf8(),
  boolean: () => new Bool(),
};

function shown(v: Carried): string {
  return v instanceof Date ? v.toISOString() : valueText(v as Value);
}

function checked(v: Carried, to: WrittenType, context: string): Carried {
  if (v instanceof Date) throw new Refused(v, `a time does not convert to ${to}`);
  const converted = castExact(v, to);
  if ('problem' in converted) throw new Refused(v, `${converted.problem}${context}`);
  return converted.value as Carried;
}

function inRange(v: bigint): bigint {
  if (v < INT64_RANGE.min || v > INT64_RANGE.max)
    throw new Refused(v, 'the result is out of the int64 range');
  return v;
}

type RowFn = (row: number) => Carried;

/** `e` as a function of the row index, over the batch's columns (`column` gives a column's reader). */
function compile(e: Expr, column: (name: string) => RowFn): RowFn {
  switch (e.kind) {
    case 'column':
      return column(e.name);
    case 'literal': {
      const value = e.value;
      return () => value;
    }
    case 'negate': {
      const f = compile(e.operand, column);
      return (r) => {
        const v = f(r);
        return v === null ? null : typeof v === 'bigint' ? inRange(-v) : -(v as number);
      };
    }
    case 'binary': {
      const l = compile(e.left, column);
      const rt = compile(e.right, column);
      const op = e.op;
      return (r) => {
        const a = l(r);
        const b = rt(r);
        if (a === null || b === null) return null;
        if (op === '/') {
          const d = typeof b === 'bigint' ? Number(b) : (b as number);
          if (d === 0) throw new Refused(a, 'division by zero');
          return (typeof a === 'bigint' ? Number(a) : (a as number)) / d;
        }
        if (typeof a === 'bigint' && typeof b === 'bigint') {
          if (op === '+') return inRange(a + b);
          if (op === '-') return inRange(a - b);
          return inRange(a * b);
        }
        const x = Number(a);
        const y = Number(b);
        return op === '+' ? x + y : op === '-' ? x - y : x * y;
      };
    }
    case 'cast': {
      const f = compile(e.operand, column);
      const to = e.to;
      return (r) => checked(f(r), to, `, in CAST to ${to}`);
    }
    case 'call': {
      const args = e.args.map((a) => compile(a, column));
      const [f0, f1, f2] = args;
      const date = (r: number): Date | null => (f0?.(r) ?? null) as Date | null;
      switch (e.fn) {
        case 'concat':
          return (r) => {
            let out = '';
            for (const f of args) {
              const v = f(r);
              if (v !== null) out += v as string;
            }
            return out;
          };
        case 'lower':
          return (r) => {
            const v = f0?.(r) ?? null;
            return v === null ? null : (v as string).toLowerCase();
          };
        case 'upper':
          return (r) => {
            const v = f0?.(r) ?? null;
            return v === null ? null : (v as string).toUpperCase();
          };
        case 'substring':
          return (r) => {
            const s = f0?.(r) ?? null;
            const start = f1?.(r) ?? null;
            const length = f2 === undefined ? undefined : f2(r);
            if (s === null || start === null || length === null) return null;
            const from = Number(start);
            const count = length === undefined ? undefined : Number(length);
            if (from < 1 || (count !== undefined && count < 0))
              throw new Refused(start, 'substring needs a start of 1 or more and a length of 0 or more');
            const chars = Array.from(s as string);
            return chars.slice(from - 1, count === undefined ? chars.length : from - 1 + count).join('');
          };
        case 'year':
          return (r) => {
            const d = date(r);
            return d === null ? null : BigInt(d.getUTCFullYear());
          };
        case 'month':
          return (r) => {
            const d = date(r);
            return d === null ? null : BigInt(d.getUTCMonth() + 1);
          };
        case 'day':
          return (r) => {
            const d = date(r);
            return d === null ? null : BigInt(d.getUTCDate());
          };
        case 'hour':
          return (r) => {
            const d = date(r);
            return d === null ? null : BigInt(d.getUTCHours());
          };
      }
    }
  }
}

/** A reader of one decoded column as this evaluator carries its values. */
function reader(vector: Vector, type: InputColumn['type']): RowFn {
  return (r) => {
    const v = vector.get(r) as unknown;
    if (v === null || v === undefined) return null;
    if (type === 'date' || type === 'timestamp') return v instanceof Date ? v : new Date(Number(v));
    if (type === 'int' && typeof v === 'number') return BigInt(v);
    return v as Carried;
  };
}

/** The written column `c` of a decoded table: a passed-through vector, or values computed row by row. */
function outputVector(
  key: string,
  table: Table,
  c: OutputColumn,
  types: ReadonlyMap<string, InputColumn['type']>,
): { field: Field; vector: Vector } {
  if (c.kind === 'copy') {
    const at = table.schema.fields.findIndex((f) => f.name === c.source);
    const vector = at < 0 ? null : table.getChildAt(at);
    const field = table.schema.fields[at];
    if (vector === null || field === undefined)
      throw new InvalidInputError(
        `${key} has no column ${c.source}; every input of a rewrite must have the partition's columns`,
      );
    return { field: new Field(c.name, field.type, field.nullable, field.metadata), vector };
  }
  const column = (name: string): RowFn => {
    const vector = table.getChild(name);
    if (vector === null)
      throw new InvalidInputError(
        `${key} has no column ${name}; every input of a rewrite must have the partition's columns`,
      );
    return reader(vector, types.get(name));
  };
  const type: WrittenType = c.kind === 'cast' ? c.to : c.type;
  const f: RowFn =
    c.kind === 'literal'
      ? (() => {
          const v = c.value as Carried;
          return () => v;
        })()
      : c.kind === 'cast'
        ? (() => {
            const read = column(c.source);
            return (r: number) => checked(read(r), c.to, '');
          })()
        : (() => {
            const g = compile(c.expr, column);
            return (r: number) => checked(g(r), c.type, ` (written as ${c.type})`);
          })();
  const values: Carried[] = new Array(table.numRows);
  for (let r = 0; r < table.numRows; r++) {
    try {
      const v = f(r);
      values[r] = type === 'int32' && typeof v === 'bigint' ? Number(v) : v;
    } catch (err) {
      if (err instanceof Refused) throw new TransformValueError(key, r, c.name, shown(err.value), err.why);
      throw err;
    }
  }
  const arrowType = ARROW_TYPES[type]();
  return { field: new Field(c.name, arrowType, true), vector: vectorFromArray(values, arrowType) };
}

/** One input rewritten through `plan`: its rows as record batches of the written schema, handed to the caller. */
function transformOne(
  key: string,
  bytes: Uint8Array,
  plan: TransformPlan,
  types: ReadonlyMap<string, InputColumn['type']>,
): { batches: pw.RecordBatch[]; rows: number } {
  let table: Table;
  try {
    const decoded = pw.readParquet(bytes);
    table = tableFromIPC(decoded.intoIPCStream());
  } catch (err) {
    throw decodeError(key, err);
  }
  const columns = plan.columns.map((c) => outputVector(key, table, c, types));
  const out = new Table(Object.fromEntries(columns.map((c) => [c.field.name, c.vector])));
  // Fields carry their nullability and metadata (a field id): the table built from vectors only knows types.
  const schema = new Schema(columns.map((c) => c.field));
  const withFields = new Table(out.batches.map((b) => new RecordBatch(schema, b.data)));
  const wasm = pw.Table.fromIPCStream(tableToIPC(withFields, 'stream'));
  try {
    return { batches: wasm.recordBatches(), rows: table.numRows };
  } finally {
    wasm.free();
  }
}

/**
 * The group's inputs cut as the plan packed them: `inputsPerOutput[n]` consecutive inputs for output n (absent: one
 * each, as a plan stored before packing says).
 * @throws InvalidInputError when the packing does not account for exactly the group's inputs.
 */
function packed<F>(files: readonly F[], inputsPerOutput: readonly number[] | undefined): F[][] {
  if (inputsPerOutput === undefined) return files.map((f) => [f]);
  const total = inputsPerOutput.reduce((n, k) => n + k, 0);
  if (total !== files.length)
    throw new InvalidInputError(
      `The rewrite's plan packs ${total} inputs into ${inputsPerOutput.length} outputs, but its group has ${files.length}; nothing was written. Start a new run`,
    );
  const out: F[][] = [];
  let at = 0;
  for (const k of inputsPerOutput) {
    out.push(files.slice(at, at + k));
    at += k;
  }
  return out;
}

/**
 * The `uuidColumns` writer setting for the top-level `uuid` columns `plan` copies (renamed or not): the writer stores
 * them as FIXED_LEN_BYTE_ARRAY(16) without the UUID annotation, which the footer is given after the write, so a copied
 * column keeps its type (and verification, which reads it back as a uuid, finds the values it re-derives).
 */
function uuidCopies(plan: TransformPlan): Pick<WriterSettings, 'uuidColumns'> {
  const uuids = plan.columns.filter((c) => c.kind === 'copy' && c.typeText === 'uuid').map((c) => [c.name]);
  return uuids.length > 0 ? { uuidColumns: uuids } : {};
}

/**
 * The engine of a `rewrite` run of `plan` over inputs of `columns`: `rewriteGroup` streams the group's inputs, in
 * order, into the outputs `inputsPerOutput` packs them in (absent: one output per input), `verifyOutputs` re-reads
 * each output against its own inputs' re-derivation, and footers are read by `base`. Memory holds one decoded input
 * at a time, whatever an output's size. Outputs keep no input footer entries: they describe the input's schema,
 * which the transformation changed.
 */
export function transformingEngine(
  plan: TransformPlan,
  columns: readonly InputColumn[],
  base: ParquetEngine,
  inputsPerOutput?: readonly number[],
): ParquetEngine {
  const types = new Map(columns.map((c) => [c.name, c.type]));
  return {
    name: `${base.name} (partition rewrite)`,
    readFooter: (store, key, size) => base.readFooter(store, key, size),
    async rewriteGroup(io: RewriteIo, group: RewriteGroup, options: RewriteOptions): Promise<RewriteResult> {
      const outputs: WrittenOutput[] = [];
      const started: string[] = [];
      let bytesRead = 0;
      const settings: WriterSettings = {
        codec: options.codec ?? DEFAULT_CODEC,
        rowGroupRows: options.rowGroupRows ?? 262_144,
        rowGroupBytes: options.rowGroupBytes ?? 16 * 1024 * 1024,
        keyValueMetadata: {},
        ...uuidCopies(plan),
      };
      const runs = packed(group.files, inputsPerOutput);
      try {
        for (const [index, files] of runs.entries()) {
          const key = options.outputKey(index);
          started.push(key);
          const writer = new OutputWriter(io.target, key, settings, options.stallTimeoutMs ?? 120_000);
          try {
            for (const file of files) {
              if (
                file.deleted !== undefined ||
                file.rowLineage !== undefined ||
                file.projection !== undefined
              )
                throw new InvalidInputError(
                  `${file.key}: a partition rewrite takes plain Parquet inputs (no deleted rows, row lineage or projection)`,
                );
              const bytes = await io.source.get(file.key);
              bytesRead += bytes.byteLength;
              const { batches, rows } = transformOne(file.key, bytes, plan, types);
              if (file.rows !== undefined && rows !== file.rows) {
                for (const b of batches) b.free();
                throw new InvalidInputError(
                  `${file.key} has ${rows} rows, planned ${file.rows}: it changed since planning`,
                );
              }
              // The writer takes each batch it is handed; those not reached on a failure are freed.
              for (const [at, batch] of batches.entries()) {
                try {
                  await writer.write(batch, file.key);
                } catch (err) {
                  for (const rest of batches.slice(at + 1)) rest.free();
                  throw err;
                }
              }
            }
            outputs.push(await writer.close());
          } catch (err) {
            await writer.abort(err instanceof Error ? err : new Error(String(err)));
            throw err;
          }
        }
        const fingerprint = await expectedFingerprint(io.source, runs, plan, columns);
        return { outputs, fingerprint, bytesRead };
      } catch (err) {
        if (started.length > 0) await io.target.deleteMany(started.map((key) => ({ key })));
        throw err;
      }
    },
    verifyOutputs: (store, outputs, expected) =>
      verifyTransformOutputs(store, outputs, expected as OrderedFingerprint),
  };
}
