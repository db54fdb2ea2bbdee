import type { SchemaElement } from 'hyparquet';
import { describe, expect, it } from 'vitest';
import {
  type UnionInput,
  type UnionVerdict,
  unifySchemas,
} from '../../../../../functions/core/formats/hive/schema-union.js';
import { projectionTargetKey } from '../../../../../functions/core/projection.js';
import { readersReadWidenedDecimals } from '../../../../../functions/core/readers.js';

/** A leaf of a footer schema, optional unless said. */
const leaf = (
  name: string,
  type: SchemaElement['type'],
  extra: Partial<SchemaElement> = {},
): SchemaElement => ({
  name,
  type,
  repetition_type: 'OPTIONAL',
  ...extra,
});
const int32 = (name: string) => leaf(name, 'INT32');
const int64 = (name: string) => leaf(name, 'INT64');
const float = (name: string) => leaf(name, 'FLOAT');
const double = (name: string) => leaf(name, 'DOUBLE');
const string = (name: string) => leaf(name, 'BYTE_ARRAY', { converted_type: 'UTF8' });
const decimal = (name: string, precision: number, scale: number) =>
  leaf(name, 'INT64', { converted_type: 'DECIMAL', precision, scale });

/** A file whose footer has these top-level leaves (its fingerprint: the leaves as JSON, distinct per schema). */
function file(key: string, ...columns: SchemaElement[]): UnionInput {
  const schema: SchemaElement[] = [{ name: 'schema', num_children: columns.length }, ...columns];
  return { key, schemaFingerprint: JSON.stringify(columns), schema };
}

const NO_DECIMALS = { widenDecimals: false };

function projected(verdict: UnionVerdict | undefined) {
  if (verdict?.kind !== 'projected') throw new Error(`not projected: ${JSON.stringify(verdict)}`);
  return verdict.projection;
}
function refused(verdict: UnionVerdict | undefined): string {
  if (verdict?.kind !== 'refused') throw new Error(`not refused: ${JSON.stringify(verdict)}`);
  return verdict.reason;
}

describe('unifySchemas (Hive-style schemaEvolution: union)', () => {
  it('leaves a partition of one schema population alone: nothing to unify, grouped by schema as always', () => {
    // Prepare
    const files = [
      file('a.parquet', int32('id'), string('name')),
      file('b.parquet', int32('id'), string('name')),
    ];

    // Act
    const verdicts = unifySchemas(files, NO_DECIMALS);

    // Assess
    expect(verdicts.size).toBe(0);
  });

  it('projects a file without an added column onto the union, nulls for the column it lacks, the other file as it is', () => {
    // Prepare
    const old = file('a.parquet', int32('id'), string('name'));
    const added = file('b.parquet', int32('id'), string('name'), double('score'));

    // Act
    const verdicts = unifySchemas([added, old], NO_DECIMALS);

    // Assess
    const a = projected(verdicts.get('a.parquet'));
    const b = projected(verdicts.get('b.parquet'));
    expect(a.columns).toEqual([
      { field: { name: 'id', nullable: true, type: 'int32' }, source: { column: 'id' } },
      { field: { name: 'name', nullable: true, type: 'string' }, source: { column: 'name' } },
      { field: { name: 'score', nullable: true, type: 'float64' } },
    ]);
    expect(b.columns.map((c) => c.source)).toEqual([
      { column: 'id' },
      { column: 'name' },
      { column: 'score' },
    ]);
    expect(a.keyValueMetadata).toEqual({});
    expect(projectionTargetKey(a)).toBe(projectionTargetKey(b));
  });

  it('widens int32 to int64 and float to double in the files that hold the narrower type', () => {
    // Prepare
    const narrow = file('a.parquet', int32('id'), float('x'));
    const wide = file('b.parquet', int64('id'), double('x'));

    // Act
    const verdicts = unifySchemas([narrow, wide], NO_DECIMALS);

    // Assess
    expect(projected(verdicts.get('a.parquet')).columns).toEqual([
      {
        field: { name: 'id', nullable: true, type: 'int64' },
        source: { column: 'id', widen: 'int32-int64' },
      },
      {
        field: { name: 'x', nullable: true, type: 'float64' },
        source: { column: 'x', widen: 'float32-float64' },
      },
    ]);
    expect(projected(verdicts.get('b.parquet')).columns.map((c) => c.source)).toEqual([
      { column: 'id' },
      { column: 'x' },
    ]);
  });

  it('widens byte and short (INT32 annotated INT(8), INT(16)) along int8 → int16 → int32 → int64 in the files that hold the narrower type', () => {
    // Prepare: the logical type in one file, the legacy converted type in another
    const byte = (name: string) =>
      leaf(name, 'INT32', { logical_type: { type: 'INTEGER', bitWidth: 8, isSigned: true } });
    const short = (name: string) => leaf(name, 'INT32', { converted_type: 'INT_16' });
    const a = file('a.parquet', byte('x'), byte('y'), short('z'));
    const b = file('b.parquet', short('x'), int32('y'), int64('z'));
    const c = file('c.parquet', byte('x'), int64('y'), short('z'));

    // Act
    const verdicts = unifySchemas([a, b, c], NO_DECIMALS);

    // Assess
    expect(projected(verdicts.get('a.parquet')).columns).toEqual([
      { field: { name: 'x', nullable: true, type: 'int16' }, source: { column: 'x', widen: 'int8-int16' } },
      { field: { name: 'y', nullable: true, type: 'int64' }, source: { column: 'y', widen: 'int8-int64' } },
      { field: { name: 'z', nullable: true, type: 'int64' }, source: { column: 'z', widen: 'int16-int64' } },
    ]);
    expect(projected(verdicts.get('b.parquet')).columns.map((c) => c.source)).toEqual([
      { column: 'x' },
      { column: 'y', widen: 'int32-int64' },
      { column: 'z' },
    ]);
    expect(projected(verdicts.get('c.parquet')).columns.map((c) => c.source)).toEqual([
      { column: 'x', widen: 'int8-int16' },
      { column: 'y' },
      { column: 'z', widen: 'int16-int64' },
    ]);
  });

  it('refuses, naming file and column, a byte beside a float and an unsigned byte, which are no widening of it', () => {
    // Prepare
    const byte = (name: string) => leaf(name, 'INT32', { converted_type: 'INT_8' });
    const unsigned = (name: string) =>
      leaf(name, 'INT32', { logical_type: { type: 'INTEGER', bitWidth: 8, isSigned: false } });
    const files = [
      file('a.parquet', byte('x'), string('name')),
      file('b.parquet', float('x'), string('name')),
      file('c.parquet', byte('x'), unsigned('u')),
      file('d.parquet', byte('x'), string('name'), double('extra')),
    ];

    // Act
    const verdicts = unifySchemas(files, NO_DECIMALS);

    // Assess
    expect(refused(verdicts.get('b.parquet'))).toMatch(
      /b\.parquet cannot join .*column x: it is float32 here but int8 in a\.parquet, which is not a widening/,
    );
    expect(refused(verdicts.get('a.parquet'))).toMatch(
      /a\.parquet cannot join .*column x: it is int8 here but float32 in b\.parquet/,
    );
    expect(refused(verdicts.get('c.parquet'))).toMatch(
      /c\.parquet cannot join .*column u: its INT32 .*"isSigned":false.* type is not one the union describes/,
    );
    expect(refused(verdicts.get('d.parquet'))).toContain('column x:');
  });

  it('makes a column required only when every file has it required', () => {
    // Prepare
    const required = { repetition_type: 'REQUIRED' as const };
    const a = file('a.parquet', leaf('id', 'INT64', required), leaf('k', 'INT64', required));
    const b = file('b.parquet', leaf('id', 'INT64', required), int64('k'), string('extra'));

    // Act
    const columns = projected(unifySchemas([a, b], NO_DECIMALS).get('a.parquet')).columns;

    // Assess
    expect(columns.map((c) => [c.field.name, c.field.nullable])).toEqual([
      ['id', false],
      ['k', true],
      ['extra', true],
    ]);
  });

  it('refuses, naming file and column, every file holding a column whose types are not a widening, and unifies the rest', () => {
    // Prepare
    const a = file('a.parquet', int32('id'), int32('code'));
    const b = file('b.parquet', int32('id'), string('code'));
    const c = file('c.parquet', int64('id'));

    // Act
    const verdicts = unifySchemas([a, b, c], NO_DECIMALS);

    // Assess
    expect(refused(verdicts.get('a.parquet'))).toContain(
      "a.parquet cannot join its partition's schema union: column code: it is int32 here but string in b.parquet, which is not a widening",
    );
    expect(refused(verdicts.get('b.parquet'))).toContain(
      "b.parquet cannot join its partition's schema union: column code: it is string here but int32 in a.parquet",
    );
    expect(projected(verdicts.get('c.parquet')).columns).toEqual([
      { field: { name: 'id', nullable: true, type: 'int64' }, source: { column: 'id' } },
    ]);
  });

  it('refuses every holder of a column of int64, int32 and double files: int32 → int64 widens, but no integer widens to double', () => {
    // Prepare
    const files = [
      file('a.parquet', int64('n')),
      file('b.parquet', int32('n')),
      file('c.parquet', double('n')),
    ];

    // Act
    const verdicts = unifySchemas(files, NO_DECIMALS);

    // Assess
    for (const key of ['a.parquet', 'b.parquet', 'c.parquet'])
      expect(refused(verdicts.get(key))).toMatch(
        new RegExp(`^schemaEvolution union: ${key.replace('.', '\\.')} .*column n:`),
      );
  });

  it('refuses names that differ only in case, which Hive and Spark read as one column', () => {
    // Prepare
    const files = [file('a.parquet', int32('userId')), file('b.parquet', int32('userid'), string('x'))];

    // Act
    const verdicts = unifySchemas(files, NO_DECIMALS);

    // Assess
    expect(refused(verdicts.get('a.parquet'))).toContain('column userId: it is named userid in b.parquet');
    expect(refused(verdicts.get('b.parquet'))).toContain('column userid: it is named userId in a.parquet');
  });

  /** A list column in Parquet's standard form, its element named `element` (or as given) of `leafType`. */
  const listOf = (name: string, element: SchemaElement): SchemaElement[] => [
    { name, repetition_type: 'OPTIONAL', num_children: 1, converted_type: 'LIST' },
    { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
    element,
  ];

  it('unifies a list column that two writers name the element of differently, and projects the file without it to null', () => {
    // Prepare: a.parquet's element is `element`, b.parquet's `item` (an older pyarrow's); c.parquet lacks the list
    const a: UnionInput = {
      key: 'a.parquet',
      schemaFingerprint: 'a',
      schema: [{ name: 'schema', num_children: 2 }, int32('id'), ...listOf('tags', string('element'))],
    };
    const b: UnionInput = {
      key: 'b.parquet',
      schemaFingerprint: 'b',
      schema: [{ name: 'schema', num_children: 2 }, int32('id'), ...listOf('tags', string('item'))],
    };
    const c = file('c.parquet', int32('id'), string('s'));

    // Act
    const verdicts = unifySchemas([a, b, c], NO_DECIMALS);

    // Assess
    const union = projected(verdicts.get('c.parquet'));
    expect(union.columns.map((col) => [col.field.name, col.source?.column ?? null])).toEqual([
      ['id', 'id'],
      ['tags', null],
      ['s', 's'],
    ]);
    expect(union.columns[1]?.field.type).toEqual({
      list: { name: 'element', nullable: true, type: 'string' },
    });
    expect(projected(verdicts.get('b.parquet')).columns[1]?.source).toEqual({ column: 'tags' });
    expect(projectionTargetKey(projected(verdicts.get('a.parquet')))).toBe(projectionTargetKey(union));
  });

  it.each([
    [
      'a list kept in a legacy two-level form',
      [
        { name: 'tags', repetition_type: 'OPTIONAL', num_children: 1, converted_type: 'LIST' },
        leaf('array', 'BYTE_ARRAY', { converted_type: 'UTF8', repetition_type: 'REPEATED' }),
      ] as SchemaElement[],
      'column tags: it is a list in a legacy form',
      ['id', 'tags', 's'],
    ],
    [
      'a list whose element is another type than in another file (nested types are never widened)',
      listOf('tags', int64('element')),
      'column tags: it is list<int64> here but list<int32> in b.parquet',
      ['id', 's'],
    ],
  ] as const)(
    'refuses a file holding %s, naming the column, and unifies the others',
    (_what, column, reason, union) => {
      // Prepare
      const a: UnionInput = {
        key: 'a.parquet',
        schemaFingerprint: 'a',
        schema: [{ name: 'schema', num_children: 2 }, int32('id'), ...column],
      };
      const b: UnionInput = {
        key: 'b.parquet',
        schemaFingerprint: 'b',
        schema: [{ name: 'schema', num_children: 2 }, int32('id'), ...listOf('tags', int32('element'))],
      };
      const c = file('c.parquet', int32('id'), string('s'));

      // Act
      const verdicts = unifySchemas([a, b, c], NO_DECIMALS);

      // Assess
      expect(refused(verdicts.get('a.parquet'))).toContain(reason);
      expect(projected(verdicts.get('c.parquet')).columns.map((col) => col.field.name)).toEqual(union);
    },
  );

  it('refuses a struct whose nested fields changed: nested changes are not unified', () => {
    // Prepare
    const struct = (...children: SchemaElement[]): SchemaElement[] => [
      { name: 'point', repetition_type: 'OPTIONAL', num_children: children.length },
      ...children,
    ];
    const a: UnionInput = {
      key: 'a.parquet',
      schemaFingerprint: 'a',
      schema: [{ name: 'schema', num_children: 1 }, ...struct(int32('x'))],
    };
    const b: UnionInput = {
      key: 'b.parquet',
      schemaFingerprint: 'b',
      schema: [{ name: 'schema', num_children: 2 }, ...struct(int32('x'), int32('y')), string('s')],
    };

    // Act
    const verdicts = unifySchemas([a, b], NO_DECIMALS);

    // Assess
    expect(refused(verdicts.get('a.parquet'))).toContain(
      'column point: it is struct<x: int32> here but struct<x: int32, y: int32> in b.parquet',
    );
    expect(refused(verdicts.get('b.parquet'))).toContain('column point:');
  });

  it('widens a decimal precision only when every declared reader reads it, and says why it does not otherwise', () => {
    // Prepare
    const files = [file('a.parquet', decimal('amount', 10, 2)), file('b.parquet', decimal('amount', 12, 2))];

    // Act
    const refusedByDefault = unifySchemas(files, { widenDecimals: readersReadWidenedDecimals(['trino']) });
    const allowed = unifySchemas(files, {
      widenDecimals: readersReadWidenedDecimals(['trino'], new Map([['trino', 'a test reader']])),
    });

    // Assess
    expect(refused(refusedByDefault.get('a.parquet'))).toContain(
      'column amount: it is decimal(10, 2) here but decimal(12, 2) in b.parquet, which is not a widening the union applies (a decimal precision widening is applied only when every reader',
    );
    expect(projected(allowed.get('a.parquet')).columns).toEqual([
      {
        field: { name: 'amount', nullable: true, type: { decimal: { precision: 12, scale: 2 } } },
        source: { column: 'amount', widen: 'decimal' },
      },
    ]);
  });

  it('keeps a field id only when every file holding the column gives it the same one', () => {
    // Prepare
    const a = file('a.parquet', leaf('id', 'INT64', { field_id: 1 }), leaf('v', 'INT64', { field_id: 2 }));
    const b = file(
      'b.parquet',
      leaf('id', 'INT64', { field_id: 1 }),
      leaf('v', 'INT64', { field_id: 3 }),
      int32('w'),
    );

    // Act
    const fields = projected(unifySchemas([a, b], NO_DECIMALS).get('a.parquet')).columns.map((c) => c.field);

    // Assess
    expect(fields.map((f) => [f.name, f.fieldId])).toEqual([
      ['id', 1],
      ['v', undefined],
      ['w', undefined],
    ]);
  });
});
