// Checked casts (core/transform/cast.ts): a value converts only when the result stands for exactly that value.
import { describe, expect, it } from 'vitest';
import { castExact, type Value } from '../../functions/core/transform/cast.js';
import type { WrittenType } from '../../functions/core/transform/expression.js';

describe('castExact', () => {
  it.each<[Value, WrittenType, Value]>([
    ['12', 'int64', 12n],
    ['-0012', 'int64', -12n],
    ['9223372036854775807', 'int64', 9223372036854775807n],
    ['2147483647', 'int32', 2147483647n],
    [12, 'int64', 12n],
    [5n, 'float64', 5],
    ['12.5', 'float64', 12.5],
    ['-1e3', 'float64', -1000],
    [7n, 'string', '7'],
    [1.5, 'string', '1.5'],
    [true, 'string', 'true'],
    ['false', 'boolean', false],
    [1n, 'boolean', true],
    [null, 'int64', null],
  ])('converts %s to %s as %s', (value, to, expected) => {
    // Act
    const converted = castExact(value, to);

    // Assess
    expect(converted).toEqual({ value: expected });
  });

  it.each<[Value, WrittenType, string]>([
    ['12.5', 'int64', 'it is not an integer'],
    ['x', 'int64', 'it is not an integer'],
    [' 12', 'int64', 'it is not an integer'],
    ['+12', 'int64', 'it is not an integer'],
    ['', 'int64', 'it is not an integer'],
    ['9223372036854775808', 'int64', 'it is out of the int64 range'],
    ['2147483648', 'int32', 'it is out of the int32 range'],
    [12.5, 'int64', 'it has a fractional part'],
    [Number.NaN, 'int64', 'it has a fractional part'],
    [true, 'int64', 'a boolean does not convert to int64'],
    [9007199254740993n, 'float64', 'no double holds it exactly'],
    ['1e400', 'float64', 'it is out of the float64 range'],
    ['twelve', 'float64', 'it is not a number'],
    ['yes', 'boolean', 'it is not true, false, 0 or 1'],
    [2n, 'boolean', 'it is not true, false, 0 or 1'],
    [{ kind: 'date', days: 1 }, 'string', 'a date does not convert to string'],
  ])('refuses %s to %s: %s', (value, to, problem) => {
    // Act
    const converted = castExact(value, to);

    // Assess
    expect(converted).toEqual({ problem: expect.stringContaining(problem) });
  });
});
