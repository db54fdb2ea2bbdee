// Checked conversions: the one definition of what `cast` and CAST(… AS …) accept. A value converts only when the
// result stands for exactly that value ('12' → 12, never '12.5' → 12 or 'x' → null); anything else fails the row,
// and with it the rewrite, naming the value — a type change that silently dropped or rounded data would be found
// by no verification, since the verification would check the same rounding.
import { INT64_RANGE, type WrittenType } from './expression.js';

/** A date as days since 1970-01-01, a timestamp as microseconds since the epoch (UTC or wall clock). */
export type TimeValue =
  | { readonly kind: 'date'; readonly days: number }
  | { readonly kind: 'timestamp'; readonly micros: bigint };

/** A value while a transformation evaluates: integers as bigint (exact), floats as number. */
export type Value = null | boolean | bigint | number | string | TimeValue;

const INT32_RANGE = { min: -(2n ** 31n), max: 2n ** 31n - 1n } as const;

/** The result of a conversion: the value, or why it does not convert. */
export type Converted = { readonly value: Value } | { readonly problem: string };

/** `value` as it reads in a message: strings quoted, integers plain, time values by their parts. */
export function valueText(value: Value): string {
  if (value === null) return 'null';
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'object')
    return value.kind === 'date' ? `date ${value.days}` : `timestamp ${value.micros}µs`;
  return String(value);
}

function integer(value: bigint, to: 'int32' | 'int64'): Converted {
  const range = to === 'int32' ? INT32_RANGE : INT64_RANGE;
  return value < range.min || value > range.max ? { problem: `it is out of the ${to} range` } : { value };
}

/**
 * `value` converted to `to`, exactly:
 * - to int32/int64: an integer in range; a float with no fractional part that is exactly that integer; a string of
 *   decimal digits with an optional leading minus (leading zeros allowed, nothing else: no spaces, no sign +, no
 *   point, no exponent); a boolean never;
 * - to float64: a float; an integer the double holds exactly; a decimal number string (the nearest double, as every
 *   SQL engine reads one) that is finite;
 * - to string: strings as they are, integers and booleans as their text, floats as JavaScript's shortest round-trip
 *   text;
 * - to boolean: booleans; the strings 'true' and 'false'; the integers 0 and 1.
 * Null stays null. Dates and timestamps do not convert (their parts do: year(), …).
 */
export function castExact(value: Value, to: WrittenType): Converted {
  if (value === null) return { value: null };
  if (typeof value === 'object') return { problem: `a ${value.kind} does not convert to ${to}` };
  switch (to) {
    case 'int32':
    case 'int64':
      if (typeof value === 'bigint') return integer(value, to);
      if (typeof value === 'number') {
        if (!Number.isInteger(value)) return { problem: `it has a fractional part (or is not finite)` };
        return integer(BigInt(value), to);
      }
      if (typeof value === 'string') {
        if (!/^-?[0-9]+$/.test(value)) return { problem: 'it is not an integer' };
        return integer(BigInt(value), to);
      }
      return { problem: `a boolean does not convert to ${to}` };
    case 'float64':
      if (typeof value === 'number') return { value };
      if (typeof value === 'bigint') {
        const n = Number(value);
        return BigInt(n) === value ? { value: n } : { problem: 'no double holds it exactly' };
      }
      if (typeof value === 'string') {
        if (!/^-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$/.test(value))
          return { problem: 'it is not a number' };
        const n = Number(value);
        return Number.isFinite(n) ? { value: n } : { problem: 'it is out of the float64 range' };
      }
      return { problem: 'a boolean does not convert to float64' };
    case 'string':
      return { value: String(value) };
    case 'boolean':
      if (typeof value === 'boolean') return { value };
      if (value === 'true' || value === 'false') return { value: value === 'true' };
      if (value === 0n || value === 1n) return { value: value === 1n };
      return { problem: 'it is not true, false, 0 or 1' };
  }
}
