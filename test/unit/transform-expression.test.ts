// The rewrite's expression language (core/transform/expression.ts): parsed, never evaluated as code — precedence and
// associativity as SQL's, errors that name the position, typing against the partition's columns.
import { describe, expect, it } from 'vitest';
import {
  type Expr,
  ExpressionError,
  parseExpression,
  referencedColumns,
  typeOfExpression,
  type ValueType,
} from '../../functions/core/transform/expression.js';

/** The tree as fully parenthesised text, so precedence shows in one string. */
function shape(e: Expr): string {
  switch (e.kind) {
    case 'column':
      return e.name;
    case 'literal':
      return typeof e.value === 'string'
        ? `'${e.value}'`
        : `${e.value}${typeof e.value === 'bigint' ? 'n' : ''}`;
    case 'negate':
      return `(-${shape(e.operand)})`;
    case 'binary':
      return `(${shape(e.left)} ${e.op} ${shape(e.right)})`;
    case 'cast':
      return `cast(${shape(e.operand)} as ${e.to})`;
    case 'call':
      return `${e.fn}(${e.args.map(shape).join(', ')})`;
  }
}

function errorOf(source: string): ExpressionError {
  try {
    parseExpression(source);
  } catch (err) {
    if (err instanceof ExpressionError) return err;
    throw err;
  }
  throw new Error(`"${source}" parsed`);
}

const columns = new Map<string, ValueType | undefined>([
  ['a', 'int'],
  ['b', 'int'],
  ['price', 'float'],
  ['name', 'string'],
  ['ts', 'timestamp'],
  ['d', 'date'],
  ['payload', undefined],
]);

describe('parseExpression', () => {
  it.each([
    ['a + b * 2', '(a + (b * 2n))'],
    ['a * b + 2', '((a * b) + 2n)'],
    ['a - b - 1', '((a - b) - 1n)'],
    ['a / b / 2', '((a / b) / 2n)'],
    ['(a + b) * 2', '((a + b) * 2n)'],
    ['-a * b', '((-a) * b)'],
    ['a - -b', '(a - (-b))'],
    ['1.5 + .5e1', '(1.5 + 5)'],
    ['CAST(a + 1 AS int64) * 2', '(cast((a + 1n) as int64) * 2n)'],
    ["concat(lower(name), '-', 'it''s')", "concat(lower(name), '-', 'it's')"],
    ['"a b" + "select"', '(a b + select)'],
    ['YEAR(ts) * 100 + Month(ts)', '((year(ts) * 100n) + month(ts))'],
  ])('parses %s as %s', (source, expected) => {
    // Act
    const tree = parseExpression(source);

    // Assess
    expect(shape(tree)).toBe(expected);
  });

  it.each([
    ['a +', 'expected a value, found the end at column 4'],
    ['a + * b', 'expected a value, found "*" at column 5'],
    ['(a + b', 'expected ")", found the end at column 7'],
    ['a b', 'unexpected "b" after the expression at column 3'],
    ["'open", 'unterminated string at column 1'],
    ['a % b', 'unexpected character "%" at column 3'],
    ['sqrt(a)', 'unknown function sqrt'],
    [
      'cast(a as long)',
      'expected a type (int32, int64, float64, string, boolean), found "long" at column 11',
    ],
    ['cast(a int64)', 'expected AS in CAST, found "int64" at column 8'],
    ['99999999999999999999', 'integer 99999999999999999999 is out of the 64-bit range at column 1'],
  ])('refuses %s naming where: %s', (source, message) => {
    // Act
    const err = errorOf(source);

    // Assess
    expect(err.message).toContain(message);
  });

  it('lists the columns an expression reads, each once', () => {
    // Act
    const read = referencedColumns(parseExpression('a + b * a + year(ts)'));

    // Assess
    expect(read).toEqual(['a', 'b', 'ts']);
  });
});

describe('typeOfExpression', () => {
  const typeOf = (source: string) => typeOfExpression(source, parseExpression(source), columns);

  it.each([
    ['a + b', 'int'],
    ['a + price', 'float'],
    ['a / b', 'float'],
    ['upper(name)', 'string'],
    ['substring(name, 1, 3)', 'string'],
    ['year(d) + hour(ts)', 'int'],
    ['cast(name as int64)', 'int'],
    ['null + a', 'int'],
  ])('types %s as %s', (source, type) => {
    // Act, Assess
    expect(typeOf(source)).toBe(type);
  });

  it.each([
    ['missing + 1', 'unknown column missing at column 1'],
    ["name + 'x'", '"+" needs numbers, not a string (use concat) at column 1'],
    ['hour(d)', 'hour needs a timestamp here, not a date at column 6'],
    ['lower(a)', 'lower needs a string here, not a int at column 7'],
    ['substring(name)', 'substring takes 2 to 3 arguments, not 1 at column 1'],
    ['payload', 'column payload has a type expressions cannot read'],
    ['cast(ts as string)', 'a timestamp does not cast here'],
  ])('refuses %s: %s', (source, message) => {
    // Act, Assess
    expect(() => typeOf(source)).toThrow(message);
  });
});
