// The expression language of a rewrite's derived columns: parsed into a tree, typed against the partition's columns,
// and never evaluated as code. A closed grammar (column references, literals, CAST, + - * /, a few string and date
// functions) because an operator's transformation file is data: anything it can say must be something both the
// rewrite and its independent verification know how to compute.
//
//   expr    := term (('+' | '-') term)*
//   term    := unary (('*' | '/') unary)*
//   unary   := '-' unary | primary
//   primary := number | 'string' | true | false | null | identifier | "quoted identifier"
//            | CAST '(' expr AS type ')' | function '(' [expr (',' expr)*] ')' | '(' expr ')'
import { CompactorError } from '../errors.js';

/** The types values take while an expression is evaluated (integers are exact: 64-bit, never floats). */
export const VALUE_TYPES = ['int', 'float', 'string', 'boolean', 'date', 'timestamp', 'null'] as const;
export type ValueType = (typeof VALUE_TYPES)[number];

/** The column types a transformation writes (`cast` targets, `addColumn` types, CAST in an expression). */
export const WRITTEN_TYPES = ['int32', 'int64', 'float64', 'string', 'boolean'] as const;
export type WrittenType = (typeof WRITTEN_TYPES)[number];

/** The value type a written type evaluates to. */
export function valueTypeOf(type: WrittenType): ValueType {
  switch (type) {
    case 'int32':
    case 'int64':
      return 'int';
    case 'float64':
      return 'float';
    case 'string':
      return 'string';
    case 'boolean':
      return 'boolean';
  }
}

export const STRING_FUNCTIONS = ['lower', 'upper', 'concat', 'substring'] as const;
export const DATE_PART_FUNCTIONS = ['year', 'month', 'day', 'hour'] as const;
export type FunctionName = (typeof STRING_FUNCTIONS)[number] | (typeof DATE_PART_FUNCTIONS)[number];
const FUNCTIONS: readonly string[] = [...STRING_FUNCTIONS, ...DATE_PART_FUNCTIONS];

/** A parsed expression. `at` is the 0-based character offset it starts at, for messages. */
export type Expr =
  | { readonly kind: 'column'; readonly name: string; readonly at: number }
  | {
      readonly kind: 'literal';
      readonly value: bigint | number | string | boolean | null;
      readonly at: number;
    }
  | { readonly kind: 'negate'; readonly operand: Expr; readonly at: number }
  | {
      readonly kind: 'binary';
      readonly op: '+' | '-' | '*' | '/';
      readonly left: Expr;
      readonly right: Expr;
      readonly at: number;
    }
  | { readonly kind: 'cast'; readonly operand: Expr; readonly to: WrittenType; readonly at: number }
  | { readonly kind: 'call'; readonly fn: FunctionName; readonly args: readonly Expr[]; readonly at: number };

/** An expression that does not parse or does not type: the message names the offset (1-based column) and why. */
export class ExpressionError extends CompactorError {
  constructor(
    readonly source: string,
    readonly position: number,
    readonly reason: string,
  ) {
    super(`${reason} at column ${position + 1} of "${source}"`);
  }
}

type Token =
  | { readonly kind: 'number'; readonly text: string; readonly at: number }
  | { readonly kind: 'string'; readonly value: string; readonly at: number }
  | { readonly kind: 'ident'; readonly name: string; readonly quoted: boolean; readonly at: number }
  | { readonly kind: 'punct'; readonly text: string; readonly at: number }
  | { readonly kind: 'end'; readonly at: number };

function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < source.length) {
    const c = source[i] as string;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    const at = i;
    if (/[0-9]/.test(c) || (c === '.' && /[0-9]/.test(source[i + 1] ?? ''))) {
      const m = /^(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?/.exec(source.slice(i));
      const text = m?.[0] ?? c;
      tokens.push({ kind: 'number', text, at });
      i += text.length;
      continue;
    }
    if (c === "'" || c === '"') {
      // SQL quoting: '' inside a string is one quote, "" inside a quoted identifier one double quote.
      let value = '';
      i++;
      for (;;) {
        if (i >= source.length)
          throw new ExpressionError(
            source,
            at,
            c === "'" ? 'unterminated string' : 'unterminated quoted name',
          );
        if (source[i] === c) {
          if (source[i + 1] === c) {
            value += c;
            i += 2;
            continue;
          }
          i++;
          break;
        }
        value += source[i];
        i++;
      }
      tokens.push(
        c === "'" ? { kind: 'string', value, at } : { kind: 'ident', name: value, quoted: true, at },
      );
      continue;
    }
    if (/[A-Za-z_]/.test(c)) {
      const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(source.slice(i));
      const name = m?.[0] ?? c;
      tokens.push({ kind: 'ident', name, quoted: false, at });
      i += name.length;
      continue;
    }
    if ('+-*/(),'.includes(c)) {
      tokens.push({ kind: 'punct', text: c, at });
      i++;
      continue;
    }
    throw new ExpressionError(source, at, `unexpected character ${JSON.stringify(c)}`);
  }
  tokens.push({ kind: 'end', at: source.length });
  return tokens;
}

/**
 * Parses `source` into an expression tree: `*` and `/` bind tighter than `+` and `-`, all left-associative, unary
 * minus tightest; keywords (CAST, AS, TRUE, FALSE, NULL) and function names in any case; a column whose name is not
 * a plain identifier (or is a keyword) in double quotes.
 * @throws ExpressionError naming the position and what was expected.
 */
export function parseExpression(source: string): Expr {
  const tokens = tokenize(source);
  let pos = 0;
  const peek = (): Token => tokens[pos] as Token;
  const next = (): Token => tokens[pos++] as Token;
  const isPunct = (t: Token, text: string) => t.kind === 'punct' && t.text === text;
  const isWord = (t: Token, word: string) => t.kind === 'ident' && !t.quoted && t.name.toLowerCase() === word;
  const describe = (t: Token) =>
    t.kind === 'end'
      ? 'the end'
      : t.kind === 'punct'
        ? `"${t.text}"`
        : t.kind === 'number'
          ? `number ${t.text}`
          : t.kind === 'string'
            ? 'a string'
            : `"${t.name}"`;
  const expect = (text: string): void => {
    const t = next();
    if (!isPunct(t, text))
      throw new ExpressionError(source, t.at, `expected "${text}", found ${describe(t)}`);
  };

  const expr = (): Expr => {
    let left = term();
    for (;;) {
      const t = peek();
      if (!isPunct(t, '+') && !isPunct(t, '-')) return left;
      next();
      left = { kind: 'binary', op: (t as { text: '+' | '-' }).text, left, right: term(), at: t.at };
    }
  };
  const term = (): Expr => {
    let left = unary();
    for (;;) {
      const t = peek();
      if (!isPunct(t, '*') && !isPunct(t, '/')) return left;
      next();
      left = { kind: 'binary', op: (t as { text: '*' | '/' }).text, left, right: unary(), at: t.at };
    }
  };
  const unary = (): Expr => {
    const t = peek();
    if (isPunct(t, '-')) {
      next();
      return { kind: 'negate', operand: unary(), at: t.at };
    }
    return primary();
  };
  const primary = (): Expr => {
    const t = next();
    switch (t.kind) {
      case 'number':
        return { kind: 'literal', value: numberLiteral(source, t.text, t.at), at: t.at };
      case 'string':
        return { kind: 'literal', value: t.value, at: t.at };
      case 'punct':
        if (t.text === '(') {
          const inner = expr();
          expect(')');
          return inner;
        }
        throw new ExpressionError(source, t.at, `expected a value, found ${describe(t)}`);
      case 'end':
        throw new ExpressionError(source, t.at, 'expected a value, found the end');
      case 'ident': {
        if (t.quoted) return { kind: 'column', name: t.name, at: t.at };
        const word = t.name.toLowerCase();
        if (word === 'true' || word === 'false') return { kind: 'literal', value: word === 'true', at: t.at };
        if (word === 'null') return { kind: 'literal', value: null, at: t.at };
        if (word === 'as') throw new ExpressionError(source, t.at, 'expected a value, found "AS"');
        if (!isPunct(peek(), '(')) return { kind: 'column', name: t.name, at: t.at };
        next();
        if (word === 'cast') {
          const operand = expr();
          const as = next();
          if (!isWord(as, 'as'))
            throw new ExpressionError(source, as.at, `expected AS in CAST, found ${describe(as)}`);
          const type = next();
          const to =
            type.kind === 'ident' ? WRITTEN_TYPES.find((w) => w === type.name.toLowerCase()) : undefined;
          if (to === undefined)
            throw new ExpressionError(
              source,
              type.at,
              `expected a type (${WRITTEN_TYPES.join(', ')}), found ${describe(type)}`,
            );
          expect(')');
          return { kind: 'cast', operand, to, at: t.at };
        }
        if (!FUNCTIONS.includes(word))
          throw new ExpressionError(
            source,
            t.at,
            `unknown function ${t.name} (known: cast, ${FUNCTIONS.join(', ')})`,
          );
        const args: Expr[] = [];
        if (!isPunct(peek(), ')')) {
          args.push(expr());
          while (isPunct(peek(), ',')) {
            next();
            args.push(expr());
          }
        }
        expect(')');
        return { kind: 'call', fn: word as FunctionName, args, at: t.at };
      }
    }
  };

  const tree = expr();
  const rest = peek();
  if (rest.kind !== 'end')
    throw new ExpressionError(source, rest.at, `unexpected ${describe(rest)} after the expression`);
  return tree;
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

function numberLiteral(source: string, text: string, at: number): bigint | number {
  if (/^[0-9]+$/.test(text)) {
    const value = BigInt(text);
    if (value > INT64_MAX)
      throw new ExpressionError(source, at, `integer ${text} is out of the 64-bit range`);
    return value;
  }
  const value = Number(text);
  if (!Number.isFinite(value)) throw new ExpressionError(source, at, `number ${text} is out of range`);
  return value;
}

/** The 64-bit range integers are evaluated in; a result outside it fails the row. */
export const INT64_RANGE = { min: INT64_MIN, max: INT64_MAX } as const;

/** The columns an expression reads, each once, in order of first reference. */
export function referencedColumns(e: Expr): string[] {
  const seen: string[] = [];
  const visit = (x: Expr): void => {
    switch (x.kind) {
      case 'column':
        if (!seen.includes(x.name)) seen.push(x.name);
        return;
      case 'literal':
        return;
      case 'negate':
      case 'cast':
        visit(x.operand);
        return;
      case 'binary':
        visit(x.left);
        visit(x.right);
        return;
      case 'call':
        for (const a of x.args) visit(a);
        return;
    }
  };
  visit(e);
  return seen;
}

/**
 * The type `e` evaluates to, given the value type of each column it may read.
 * @throws ExpressionError naming the position of the first sub-expression that does not type (an unknown column, a
 * string in arithmetic, a function given the wrong arguments).
 */
export function typeOfExpression(
  source: string,
  e: Expr,
  columns: ReadonlyMap<string, ValueType | undefined>,
): ValueType {
  const fail = (at: number, reason: string): never => {
    throw new ExpressionError(source, at, reason);
  };
  const visit = (x: Expr): ValueType => {
    switch (x.kind) {
      case 'column': {
        if (!columns.has(x.name)) return fail(x.at, `unknown column ${x.name}`);
        const type = columns.get(x.name);
        if (type === undefined)
          return fail(
            x.at,
            `column ${x.name} has a type expressions cannot read (a nested or unsupported type)`,
          );
        return type;
      }
      case 'literal':
        return x.value === null
          ? 'null'
          : typeof x.value === 'bigint'
            ? 'int'
            : typeof x.value === 'number'
              ? 'float'
              : typeof x.value === 'string'
                ? 'string'
                : 'boolean';
      case 'negate': {
        const t = visit(x.operand);
        if (t !== 'int' && t !== 'float' && t !== 'null') return fail(x.at, `cannot negate a ${t}`);
        return t;
      }
      case 'binary': {
        const l = visit(x.left);
        const r = visit(x.right);
        for (const [t, side] of [
          [l, x.left],
          [r, x.right],
        ] as const)
          if (t !== 'int' && t !== 'float' && t !== 'null')
            return fail(
              side.at,
              `"${x.op}" needs numbers, not a ${t}${t === 'string' ? ' (use concat)' : ''}`,
            );
        if (x.op === '/') return 'float';
        if (l === 'float' || r === 'float') return 'float';
        if (l === 'null' && r === 'null') return 'null';
        return 'int';
      }
      case 'cast': {
        const from = visit(x.operand);
        if (from === 'date' || from === 'timestamp')
          return fail(x.at, `a ${from} does not cast here; use year, month, day or hour for its parts`);
        return valueTypeOf(x.to);
      }
      case 'call': {
        const types = x.args.map(visit);
        const arity = (min: number, max: number) => {
          if (types.length < min || types.length > max)
            fail(
              x.at,
              `${x.fn} takes ${min === max ? min : `${min} to ${max}`} argument${max === 1 ? '' : 's'}, not ${types.length}`,
            );
        };
        const want = (i: number, allowed: readonly ValueType[]) => {
          const t = types[i] as ValueType;
          if (t !== 'null' && !allowed.includes(t))
            fail((x.args[i] as Expr).at, `${x.fn} needs a ${allowed.join(' or ')} here, not a ${t}`);
        };
        switch (x.fn) {
          case 'lower':
          case 'upper':
            arity(1, 1);
            want(0, ['string']);
            return 'string';
          case 'concat':
            arity(1, Number.MAX_SAFE_INTEGER);
            for (let i = 0; i < types.length; i++) want(i, ['string']);
            return 'string';
          case 'substring':
            arity(2, 3);
            want(0, ['string']);
            want(1, ['int']);
            if (types.length === 3) want(2, ['int']);
            return 'string';
          case 'year':
          case 'month':
          case 'day':
            arity(1, 1);
            want(0, ['date', 'timestamp']);
            return 'int';
          case 'hour':
            arity(1, 1);
            want(0, ['timestamp']);
            return 'int';
        }
      }
    }
  };
  return visit(e);
}
