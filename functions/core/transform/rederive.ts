// The verification's side of a transformation: each output row re-derived from its input row by interpreting the
// plan, written apart from the rewrite's evaluator (adapters/parquet-wasm/transform-rewrite.ts, which compiles the
// same plan into functions over Arrow values) and fed by another Parquet decoder. Verification compares what this
// gives with what the outputs hold, so an evaluator that computed a value wrongly fails the group instead of being
// published — unless both got it wrong alike, which the unit tests and the DuckDB comparison guard against.
import { CompactorError } from '../errors.js';
import { castExact, type Value, valueText } from './cast.js';
import { type Expr, INT64_RANGE } from './expression.js';
import type { OutputColumn, TransformPlan } from './spec.js';

/**
 * A value of a row that the transformation cannot write exactly (a cast that does not convert, an integer out of
 * range, a division by zero): names the file, the row, the column and the value. The rewrite fails with it, before
 * anything of the group is published, and the inputs stay as they are.
 */
export class TransformValueError extends CompactorError {
  constructor(
    readonly key: string,
    readonly row: number,
    readonly column: string,
    readonly value: string,
    readonly problem: string,
  ) {
    // Rows counted from 1, as an operator finds them (`row` is the 0-based position).
    super(`Row ${row + 1} of ${key}: column ${column} value ${value} cannot be written (${problem})`);
  }
}

/** A row problem before it knows its file and row. */
class RowProblem extends Error {
  constructor(
    readonly value: Value,
    readonly problem: string,
  ) {
    super(problem);
  }
}

const MICROS_PER_DAY = 86_400_000_000n;
const MICROS_PER_HOUR = 3_600_000_000n;

/** Year, month, day of `days` since 1970-01-01 (proleptic Gregorian; H. Hinnant's civil_from_days). */
function civil(days: number): { year: number; month: number; day: number } {
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor(
    (doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365,
  );
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  return { year: yoe + era * 400 + (month <= 2 ? 1 : 0), month, day };
}

/** Floor division and modulo of bigints (a timestamp before 1970 is on the previous day). */
function floorDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b !== 0n && a < 0n !== b < 0n ? q - 1n : q;
}

function int(value: bigint): bigint {
  if (value < INT64_RANGE.min || value > INT64_RANGE.max)
    throw new RowProblem(value, 'the result is out of the int64 range');
  return value;
}

/** `e` evaluated over one row (`column` gives a column's value). @throws RowProblem */
function evaluate(e: Expr, column: (name: string) => Value): Value {
  switch (e.kind) {
    case 'column':
      return column(e.name);
    case 'literal':
      return e.value;
    case 'negate': {
      const v = evaluate(e.operand, column);
      if (v === null) return null;
      return typeof v === 'bigint' ? int(-v) : -(v as number);
    }
    case 'binary': {
      const l = evaluate(e.left, column);
      const r = evaluate(e.right, column);
      if (l === null || r === null) return null;
      if (e.op === '/') {
        if (Number(r) === 0) throw new RowProblem(l, 'division by zero');
        return Number(l) / Number(r);
      }
      if (typeof l === 'bigint' && typeof r === 'bigint')
        return int(e.op === '+' ? l + r : e.op === '-' ? l - r : l * r);
      const [a, b] = [Number(l), Number(r)];
      return e.op === '+' ? a + b : e.op === '-' ? a - b : a * b;
    }
    case 'cast': {
      const v = evaluate(e.operand, column);
      const converted = castExact(v, e.to);
      if ('problem' in converted) throw new RowProblem(v, `${converted.problem}, in CAST to ${e.to}`);
      return converted.value;
    }
    case 'call': {
      const args = e.args.map((a) => evaluate(a, column));
      if (e.fn === 'concat') return args.filter((a) => a !== null).join('');
      const first = args[0] ?? null;
      if (args.some((a) => a === null)) return null;
      switch (e.fn) {
        case 'lower':
          return (first as string).toLowerCase();
        case 'upper':
          return (first as string).toUpperCase();
        case 'substring': {
          const start = args[1] as bigint;
          const length = args[2] as bigint | undefined;
          if (start < 1n || (length !== undefined && length < 0n))
            throw new RowProblem(start, 'substring needs a start of 1 or more and a length of 0 or more');
          const chars = [...(first as string)];
          const from = Number(start) - 1;
          return chars.slice(from, length === undefined ? undefined : from + Number(length)).join('');
        }
        case 'year':
        case 'month':
        case 'day':
        case 'hour': {
          const t = first as Exclude<Value, null | boolean | bigint | number | string>;
          const micros = t.kind === 'date' ? BigInt(t.days) * MICROS_PER_DAY : t.micros;
          if (e.fn === 'hour')
            return floorDiv(micros - floorDiv(micros, MICROS_PER_DAY) * MICROS_PER_DAY, MICROS_PER_HOUR);
          const date = civil(Number(floorDiv(micros, MICROS_PER_DAY)));
          return BigInt(e.fn === 'year' ? date.year : e.fn === 'month' ? date.month : date.day);
        }
      }
    }
  }
}

/**
 * The values `plan` writes for one input row, in the plan's column order.
 * @param key the input file, @param row its 0-based row (both for the error).
 * @throws TransformValueError naming the file, row, column and value that cannot be written exactly.
 */
export function rederiveRow(
  plan: TransformPlan,
  input: Readonly<Record<string, Value>>,
  key: string,
  row: number,
): Value[] {
  const get = (name: string): Value => input[name] ?? null;
  return plan.columns.map((c: OutputColumn) => {
    try {
      return columnValue(c, get);
    } catch (err) {
      if (err instanceof RowProblem)
        throw new TransformValueError(key, row, c.name, valueText(err.value), err.problem);
      throw err;
    }
  });
}

/** The value `c` writes for the row `get` reads. @throws RowProblem */
function columnValue(c: OutputColumn, get: (name: string) => Value): Value {
  switch (c.kind) {
    case 'copy':
      return get(c.source);
    case 'literal':
      return c.value;
    case 'cast': {
      const converted = castExact(get(c.source), c.to);
      if ('problem' in converted) throw new RowProblem(get(c.source), converted.problem);
      return converted.value;
    }
    case 'derived': {
      const v = evaluate(c.expr, get);
      const converted = castExact(v, c.type);
      if ('problem' in converted) throw new RowProblem(v, `${converted.problem} (written as ${c.type})`);
      return converted.value;
    }
  }
}
