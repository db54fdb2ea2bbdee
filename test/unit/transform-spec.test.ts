// A transformation file planned against a partition's columns (core/transform/spec.ts) and a row re-derived through
// the plan (rederive.ts, the verification's interpreter).
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../functions/core/errors.js';
import { rederiveRow, TransformValueError } from '../../functions/core/transform/rederive.js';
import {
  describePlan,
  type InputColumn,
  parseTransformSpec,
  planTransform,
  type TransformSpec,
} from '../../functions/core/transform/spec.js';

const input: InputColumn[] = [
  { name: 'id', type: 'string', typeText: 'string' },
  { name: 'name', type: 'string', typeText: 'string' },
  { name: 'ts', type: 'timestamp', typeText: 'timestamp-us' },
  { name: 'debug', type: 'string', typeText: 'string' },
];

function problemsOf(spec: TransformSpec, confirmed: string[] = []): readonly string[] {
  try {
    planTransform(spec, input, confirmed);
  } catch (err) {
    if (err instanceof InvalidInputError) return err.issues;
    throw err;
  }
  throw new Error('planned');
}

describe('parseTransformSpec', () => {
  it('refuses a file that is not JSON, or a step it does not know, naming the file', () => {
    // Act, Assess
    expect(() => parseTransformSpec('{', 't.json')).toThrow('Transformation file t.json is not JSON');
    expect(() => parseTransformSpec('{"steps":[{"op":"explode","column":"a"}]}', 't.json')).toThrow(
      'is not a valid transformation',
    );
    expect(() =>
      parseTransformSpec('{"steps":[{"op":"cast","column":"a","to":"int64","x":1}]}', 't.json'),
    ).toThrow('is not a valid transformation');
  });
});

describe('planTransform', () => {
  it('casts and renames in place, drops with confirmation and appends added columns', () => {
    // Prepare
    const spec = parseTransformSpec(
      JSON.stringify({
        steps: [
          { op: 'addColumn', name: 'year', type: 'int32', expression: 'year(ts)' },
          { op: 'cast', column: 'id', to: 'int64' },
          { op: 'rename', column: 'name', to: 'display_name' },
          { op: 'drop', column: 'debug' },
          { op: 'addColumn', name: 'source', type: 'string', default: 'legacy' },
        ],
      }),
      't.json',
    );

    // Act
    const plan = planTransform(spec, input, ['debug']);

    // Assess
    expect(describePlan(plan)).toEqual([
      'id  int64  (cast, checked)',
      'display_name  string  (renamed from name)',
      'ts  timestamp-us',
      'year  int32  (added: year(ts))',
      'source  string  (added: "legacy" in every row)',
      '(dropped: debug)',
    ]);
  });

  it('lists every problem: unknown column, two steps on a column, clash, unconfirmed drop, stray confirmation, bad expression and default', () => {
    // Act
    const problems = problemsOf(
      {
        steps: [
          { op: 'cast', column: 'nope', to: 'int64' },
          { op: 'cast', column: 'id', to: 'int64' },
          { op: 'rename', column: 'id', to: 'x' },
          { op: 'rename', column: 'name', to: 'ts' },
          { op: 'drop', column: 'debug' },
          { op: 'addColumn', name: 'y', type: 'int64', expression: 'year(name)' },
          { op: 'addColumn', name: 'z', type: 'int32', default: 'abc' },
          { op: 'addColumn', name: 'w', type: 'int32' },
        ],
      },
      ['ts'],
    );

    // Assess
    expect(problems).toEqual([
      'step 1 (cast): the partition has no column nope',
      'step 3 (rename): column id already has a step (one step per column)',
      'step 5 (drop): dropping column debug loses its values; confirm with --confirm-drop debug',
      'step 6 (addColumn): column y: year needs a date or timestamp here, not a string at column 6 of "year(name)"',
      'step 7 (addColumn): default "abc" of column z is not a int32: it is not an integer',
      'step 8 (addColumn): column w needs either a default or an expression (one of them)',
      '--confirm-drop ts: the transformation does not drop column ts',
      'two written columns would be named ts',
    ]);
  });
});

describe('rederiveRow', () => {
  const plan = planTransform(
    {
      steps: [
        { op: 'cast', column: 'id', to: 'int64' },
        {
          op: 'addColumn',
          name: 'parts',
          type: 'string',
          expression:
            "concat(cast(year(ts) as string), '/', cast(month(ts) as string), '/', cast(day(ts) as string), ' ', cast(hour(ts) as string))",
        },
        { op: 'addColumn', name: 'ratio', type: 'float64', expression: 'cast(id as int64) / 4' },
      ],
    },
    input,
  );

  it.each([
    // 2024-02-29T23:30:00Z, a leap day late in the evening
    [1_709_249_400_000_000n, '2024/2/29 23'],
    // 1969-12-31T23:00:00Z, before the epoch: the previous day
    [-3_600_000_000n, '1969/12/31 23'],
    // 2000-03-01T00:00:00Z
    [951_868_800_000_000n, '2000/3/1 0'],
  ])('re-derives the date parts of timestamp %s as %s', (micros, parts) => {
    // Act
    const row = rederiveRow(
      plan,
      { id: '10', name: 'n', ts: { kind: 'timestamp', micros }, debug: null },
      'k',
      0,
    );

    // Assess
    expect(row).toEqual([10n, 'n', { kind: 'timestamp', micros }, null, parts, 2.5]);
  });

  it('names file, row, column and value of a cast that does not convert', () => {
    // Act
    const act = () =>
      rederiveRow(
        plan,
        { id: 'x1', name: 'n', ts: { kind: 'timestamp', micros: 0n }, debug: null },
        'p/f.parquet',
        7,
      );

    // Assess
    expect(act).toThrow(TransformValueError);
    expect(act).toThrow(
      'Row 8 of p/f.parquet: column id value "x1" cannot be written (it is not an integer)',
    );
  });
});
