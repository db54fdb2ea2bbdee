// The operator's `where` partition filter (Iceberg's `rewrite_data_files(where => …)`, over partition fields): a
// small predicate language parsed into a tree before any state changes, with a message naming the position and
// what was expected, and evaluated against a partition's values field by field — never evaluated as code.
//
//   expr    := or
//   or      := and ("OR" and)*
//   and     := unary ("AND" unary)*
//   unary   := "NOT" unary | "(" expr ")" | field test
//   test    := ("=" | "!=" | "<>" | "<" | "<=" | ">" | ">=") literal
//            | ["NOT"] "IN" "(" literal ("," literal)* ")" | "IS" ["NOT"] "NULL"
//   field   := name ([A-Za-z_][A-Za-z0-9_]*) | `any text` | "any text"
//   literal := 'text' ('' for a quote) | number
import { InvalidInputError } from '../../errors.js';
import type { PartitionValue } from '../../partition.js';
import { nearestName } from './rewrite-options.js';

export type Comparison = '=' | '!=' | '<' | '<=' | '>' | '>=';
export type Literal =
  | { readonly kind: 'text'; readonly value: string }
  | { readonly kind: 'number'; readonly value: number; readonly text: string };

export type WhereExpr =
  | { readonly op: 'and' | 'or'; readonly left: WhereExpr; readonly right: WhereExpr }
  | { readonly op: 'not'; readonly operand: WhereExpr }
  | {
      readonly op: 'compare';
      readonly field: string;
      readonly comparison: Comparison;
      readonly literal: Literal;
    }
  | {
      readonly op: 'in';
      readonly field: string;
      readonly literals: readonly Literal[];
      readonly negated: boolean;
    }
  | { readonly op: 'null'; readonly field: string; readonly negated: boolean };

/**
 * The `where` filter cannot be parsed, or names a field no partition has: said with the position (1-based) and
 * what was expected there, before anything changes.
 */
export class InvalidWhereError extends InvalidInputError {
  constructor(
    readonly where: string,
    readonly reason: string,
  ) {
    super(
      `The where filter ${JSON.stringify(where)} is invalid: ${reason}. Nothing was changed; write e.g. action = 'click' AND event_time_hour >= '2020-01-01-09' (partition fields; =, !=, <, <=, >, >=, IN (…), IS NULL, AND, OR, NOT, parentheses)`,
    );
  }
}

type Token =
  | { readonly kind: 'word'; readonly text: string; readonly at: number }
  | { readonly kind: 'field'; readonly text: string; readonly at: number }
  | { readonly kind: 'text'; readonly text: string; readonly at: number }
  | { readonly kind: 'number'; readonly text: string; readonly at: number }
  | { readonly kind: 'symbol'; readonly text: string; readonly at: number }
  | { readonly kind: 'end'; readonly text: ''; readonly at: number };

const SYMBOLS = ['<=', '>=', '!=', '<>', '=', '<', '>', '(', ')', ','] as const;

function tokenize(where: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const fail = (why: string): never => {
    throw new InvalidWhereError(where, why);
  };
  while (i < where.length) {
    const c = where[i] as string;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    const at = i + 1;
    if (c === "'") {
      let text = '';
      i++;
      for (;;) {
        if (i >= where.length) fail(`the text starting at position ${at} has no closing quote`);
        if (where[i] === "'") {
          if (where[i + 1] === "'") {
            text += "'";
            i += 2;
            continue;
          }
          i++;
          break;
        }
        text += where[i];
        i++;
      }
      tokens.push({ kind: 'text', text, at });
      continue;
    }
    if (c === '`' || c === '"') {
      const end = where.indexOf(c, i + 1);
      if (end < 0) fail(`the field name starting at position ${at} has no closing ${c}`);
      const text = where.slice(i + 1, end);
      if (text === '') fail(`the field name at position ${at} is empty`);
      tokens.push({ kind: 'field', text, at });
      i = end + 1;
      continue;
    }
    const number = /^-?\d+(?:\.\d+)?/.exec(where.slice(i));
    if (number !== null) {
      tokens.push({ kind: 'number', text: number[0], at });
      i += number[0].length;
      continue;
    }
    const word = /^[A-Za-z_][A-Za-z0-9_]*/.exec(where.slice(i));
    if (word !== null) {
      tokens.push({ kind: 'word', text: word[0], at });
      i += word[0].length;
      continue;
    }
    const symbol = SYMBOLS.find((s) => where.startsWith(s, i));
    if (symbol === undefined) fail(`unexpected "${c}" at position ${at}`);
    tokens.push({ kind: 'symbol', text: symbol as string, at });
    i += (symbol as string).length;
  }
  tokens.push({ kind: 'end', text: '', at: where.length + 1 });
  return tokens;
}

const KEYWORDS = new Set(['AND', 'OR', 'NOT', 'IN', 'IS', 'NULL']);

/**
 * How deep NOT and parentheses may nest, and how many AND/OR a filter may have: the parser and every walk over the
 * tree recurse, so a filter of 20,000 nested parentheses (or a chain of 100,000 ANDs) would overflow the stack;
 * no filter over a table's few partition fields needs more.
 */
export const MAX_WHERE_DEPTH = 100;
export const MAX_WHERE_OPERATORS = 1000;

/**
 * Parses a `where` filter into its tree.
 * @throws InvalidWhereError naming the position and what was expected there.
 */
export function parseWhere(where: string): WhereExpr {
  const tokens = tokenize(where);
  let next = 0;
  const peek = (): Token => tokens[next] as Token;
  const describe = (t: Token) => (t.kind === 'end' ? 'the end' : `"${t.text}" at position ${t.at}`);
  const fail = (expected: string): never => {
    throw new InvalidWhereError(where, `expected ${expected}, found ${describe(peek())}`);
  };
  const isKeyword = (t: Token, k: string) => t.kind === 'word' && t.text.toUpperCase() === k;
  const take = (k: string): boolean => {
    if (!isKeyword(peek(), k)) return false;
    next++;
    return true;
  };
  const symbol = (s: string): boolean => {
    const t = peek();
    if (t.kind !== 'symbol' || t.text !== s) return false;
    next++;
    return true;
  };
  const literal = (): Literal => {
    const t = peek();
    if (t.kind === 'text') {
      next++;
      return { kind: 'text', value: t.text };
    }
    if (t.kind === 'number') {
      next++;
      return { kind: 'number', value: Number(t.text), text: t.text };
    }
    return fail("a value ('text' or a number)");
  };
  let depth = 0;
  let operators = 0;
  const deeper = <T>(at: Token, parse: () => T): T => {
    if (++depth > MAX_WHERE_DEPTH)
      throw new InvalidWhereError(
        where,
        `it nests NOT and parentheses deeper than ${MAX_WHERE_DEPTH} levels (at position ${at.at})`,
      );
    const result = parse();
    depth--;
    return result;
  };
  const counted = (at: Token): void => {
    if (++operators > MAX_WHERE_OPERATORS)
      throw new InvalidWhereError(
        where,
        `it joins more than ${MAX_WHERE_OPERATORS} conditions with AND and OR (at position ${at.at})`,
      );
  };
  const unary = (): WhereExpr => {
    const at = peek();
    if (take('NOT')) return deeper(at, () => ({ op: 'not', operand: unary() }));
    if (symbol('(')) {
      const inner = deeper(at, or);
      if (!symbol(')')) fail('")"');
      return inner;
    }
    const t = peek();
    if (!(t.kind === 'field' || (t.kind === 'word' && !KEYWORDS.has(t.text.toUpperCase()))))
      return fail('a partition field name');
    next++;
    const field = t.text;
    if (take('IS')) {
      const negated = take('NOT');
      if (!take('NULL')) fail('NULL');
      return { op: 'null', field, negated };
    }
    const negated = take('NOT');
    if (take('IN')) {
      if (!symbol('(')) fail('"(" after IN');
      const literals = [literal()];
      while (symbol(',')) literals.push(literal());
      if (!symbol(')')) fail('"," or ")"');
      return { op: 'in', field, literals, negated };
    }
    if (negated) return fail('IN after NOT');
    const op = peek();
    if (op.kind === 'symbol' && ['=', '!=', '<>', '<', '<=', '>', '>='].includes(op.text)) {
      next++;
      const comparison = (op.text === '<>' ? '!=' : op.text) as Comparison;
      return { op: 'compare', field, comparison, literal: literal() };
    }
    return fail(`a comparison after ${field} (=, !=, <, <=, >, >=, IN, IS NULL)`);
  };
  const and = (): WhereExpr => {
    let left = unary();
    for (let at = peek(); take('AND'); at = peek()) {
      counted(at);
      left = { op: 'and', left, right: unary() };
    }
    return left;
  };
  const or = (): WhereExpr => {
    let left = and();
    for (let at = peek(); take('OR'); at = peek()) {
      counted(at);
      left = { op: 'or', left, right: and() };
    }
    return left;
  };
  if (peek().kind === 'end') throw new InvalidWhereError(where, 'it is empty');
  const tree = or();
  if (peek().kind !== 'end') fail('AND, OR or the end');
  return tree;
}

/** The field names a filter reads, sorted. */
export function whereFields(expr: WhereExpr): string[] {
  const out = new Set<string>();
  const walk = (e: WhereExpr): void => {
    switch (e.op) {
      case 'and':
      case 'or':
        walk(e.left);
        walk(e.right);
        return;
      case 'not':
        walk(e.operand);
        return;
      default:
        out.add(e.field);
    }
  };
  walk(expr);
  return [...out].sort();
}

/**
 * Refuses a filter naming a field that none of `known` is (the table's partition fields), suggesting the nearest.
 * @throws InvalidWhereError
 */
export function checkWhereFields(where: string, expr: WhereExpr, known: readonly string[]): void {
  for (const field of whereFields(expr)) {
    if (known.includes(field)) continue;
    const nearest = nearestName(field, known);
    const list =
      known.length === 0 ? 'the table is unpartitioned' : `its partition fields are ${known.join(', ')}`;
    throw new InvalidWhereError(
      where,
      `no partition has a field "${field}"${nearest === undefined ? '' : ` (did you mean "${nearest}"?)`}; ${list}`,
    );
  }
}

/**
 * Whether a partition with `values` passes the filter. A field the partition lacks (another spec's) or a null value
 * fails every comparison and IN, as in SQL, and passes IS NULL. A number compares numerically with a value that is a
 * number; anything else compares as text in code-unit order (ISO dates and hours order correctly that way).
 */
export function matchesWhere(expr: WhereExpr, values: readonly PartitionValue[]): boolean {
  const fieldValue = (field: string): string | null => values.find((v) => v.name === field)?.value ?? null;
  switch (expr.op) {
    case 'and':
      return matchesWhere(expr.left, values) && matchesWhere(expr.right, values);
    case 'or':
      return matchesWhere(expr.left, values) || matchesWhere(expr.right, values);
    case 'not':
      return !matchesWhere(expr.operand, values);
    case 'null':
      return (fieldValue(expr.field) === null) !== expr.negated;
    case 'in': {
      const value = fieldValue(expr.field);
      if (value === null) return false;
      return expr.literals.some((l) => compare(value, l) === 0) !== expr.negated;
    }
    case 'compare': {
      const value = fieldValue(expr.field);
      if (value === null) return false;
      const order = compare(value, expr.literal);
      switch (expr.comparison) {
        case '=':
          return order === 0;
        case '!=':
          return order !== 0;
        case '<':
          return order < 0;
        case '<=':
          return order <= 0;
        case '>':
          return order > 0;
        case '>=':
          return order >= 0;
      }
    }
  }
}

const NUMERIC = /^-?\d+(?:\.\d+)?$/;

function compare(value: string, literal: Literal): number {
  if (literal.kind === 'number' && NUMERIC.test(value)) return Math.sign(Number(value) - literal.value);
  const text = literal.kind === 'number' ? literal.text : literal.value;
  return value < text ? -1 : value > text ? 1 : 0;
}
