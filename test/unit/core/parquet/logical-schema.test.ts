// Proves the logical shape schema fidelity `logical` compares: equal for the legacy and standard forms of one
// list, map, decimal or INT96 timestamp, and different wherever a reader would see something else (an element's
// nullability, a field id, an annotation, a decimal's scale, an INT96 unit).

import type { SchemaElement } from 'hyparquet';
import { describe, expect, it } from 'vitest';
import { logicalShapeOf } from '../../../../functions/core/parquet/logical-schema.js';

const root = (n: number): SchemaElement => ({ name: 'schema', num_children: n });
const int32 = (name: string, rep: SchemaElement['repetition_type'], extra: Partial<SchemaElement> = {}) =>
  ({ name, type: 'INT32', repetition_type: rep, ...extra }) as SchemaElement;
const group = (
  name: string,
  rep: SchemaElement['repetition_type'],
  n: number,
  extra: Partial<SchemaElement> = {},
) => ({ name, repetition_type: rep, num_children: n, ...extra }) as SchemaElement;

/** `optional group tags (LIST) { repeated group list { <element> } }`: the standard 3-level list. */
const threeLevel = (element: SchemaElement): SchemaElement[] => [
  root(1),
  group('tags', 'OPTIONAL', 1, { converted_type: 'LIST' }),
  group('list', 'REPEATED', 1),
  element,
];

describe('logicalShapeOf', () => {
  it('sees a 2-level list of a repeated primitive as the 3-level list of a required element', () => {
    // Prepare
    const twoLevel = [
      root(1),
      group('tags', 'OPTIONAL', 1, { converted_type: 'LIST' }),
      int32('array', 'REPEATED'),
    ];

    // Act
    const legacy = logicalShapeOf(twoLevel);

    // Assess
    expect(legacy).toBe(logicalShapeOf(threeLevel(int32('element', 'REQUIRED'))));
    expect(legacy).not.toBe(logicalShapeOf(threeLevel(int32('element', 'OPTIONAL'))));
  });

  it('sees a repeated group named array or <list>_tuple as the element itself (a struct), as the LIST spec says', () => {
    // Prepare
    const legacy = (name: string) => [
      root(1),
      group('tags', 'OPTIONAL', 1, { converted_type: 'LIST' }),
      group(name, 'REPEATED', 1),
      int32('x', 'OPTIONAL'),
    ];
    const standard = [
      root(1),
      group('tags', 'OPTIONAL', 1, { converted_type: 'LIST' }),
      group('list', 'REPEATED', 1),
      group('element', 'REQUIRED', 1),
      int32('x', 'OPTIONAL'),
    ];

    // Act
    const shapes = [logicalShapeOf(legacy('array')), logicalShapeOf(legacy('tags_tuple'))];

    // Assess
    expect(shapes).toEqual([logicalShapeOf(standard), logicalShapeOf(standard)]);
    expect(logicalShapeOf(legacy('bag'))).not.toBe(logicalShapeOf(standard));
  });

  it('sees a MAP_KEY_VALUE map as a MAP, and a map whose value changed nullability as another', () => {
    // Prepare
    const map = (kvAnnotation: Partial<SchemaElement>, value: SchemaElement) => [
      root(1),
      group('attrs', 'OPTIONAL', 1, { converted_type: 'MAP' }),
      group('key_value', 'REPEATED', 2, kvAnnotation),
      {
        name: 'key',
        type: 'BYTE_ARRAY',
        repetition_type: 'REQUIRED',
        converted_type: 'UTF8',
      } as SchemaElement,
      value,
    ];

    // Act
    const legacy = logicalShapeOf(map({ converted_type: 'MAP_KEY_VALUE' }, int32('value', 'OPTIONAL')));

    // Assess
    expect(legacy).toBe(logicalShapeOf(map({}, int32('value', 'OPTIONAL'))));
    expect(legacy).not.toBe(logicalShapeOf(map({}, int32('value', 'REQUIRED'))));
  });

  it('sees a map whose key is OPTIONAL (Presto/Trino, Athena) as the standard map, whose key is REQUIRED', () => {
    // Prepare
    const map = (keyRepetition: SchemaElement['repetition_type']) => [
      root(1),
      group('my_map', 'OPTIONAL', 1, { converted_type: 'MAP' }),
      group('key_value', 'REPEATED', 2, { converted_type: 'MAP_KEY_VALUE' }),
      {
        name: 'key',
        type: 'BYTE_ARRAY',
        repetition_type: keyRepetition,
        converted_type: 'UTF8',
      } as SchemaElement,
      {
        name: 'value',
        type: 'BYTE_ARRAY',
        repetition_type: 'OPTIONAL',
        converted_type: 'UTF8',
      } as SchemaElement,
    ];

    // Act
    const presto = logicalShapeOf(map('OPTIONAL'));

    // Assess: the same shape; the key's type still counts.
    expect(presto).toBe(logicalShapeOf(map('REQUIRED')));
    expect(presto).not.toBe(
      logicalShapeOf([...map('OPTIONAL').slice(0, 3), int32('key', 'OPTIONAL'), ...map('OPTIONAL').slice(4)]),
    );
  });

  it('compares decimals by precision and scale, not by physical type', () => {
    // Prepare
    const decimal = (type: SchemaElement['type'], precision: number, scale: number, length?: number) => [
      root(1),
      {
        name: 'd',
        type,
        repetition_type: 'OPTIONAL',
        converted_type: 'DECIMAL',
        precision,
        scale,
        ...(length === undefined ? {} : { type_length: length }),
      } as SchemaElement,
    ];

    // Act
    const fixed = logicalShapeOf(decimal('FIXED_LEN_BYTE_ARRAY', 9, 2, 4));

    // Assess
    expect(fixed).toBe(logicalShapeOf(decimal('INT32', 9, 2)));
    expect(fixed).toBe(logicalShapeOf(decimal('BYTE_ARRAY', 9, 2)));
    expect(fixed).not.toBe(logicalShapeOf(decimal('INT32', 9, 3)));
  });

  it('sees INT96 as the INT64 timestamp of its unit, and keeps field ids and other annotations significant', () => {
    // Prepare
    const ts = (e: Partial<SchemaElement>) => [
      root(1),
      { name: 'ts', repetition_type: 'OPTIONAL', ...e } as SchemaElement,
    ];
    const micros = ts({
      type: 'INT64',
      logical_type: { type: 'TIMESTAMP', unit: 'MICROS', isAdjustedToUTC: true },
    });
    const nanos = ts({
      type: 'INT64',
      logical_type: { type: 'TIMESTAMP', unit: 'NANOS', isAdjustedToUTC: true },
    });

    // Act
    const int96 = logicalShapeOf(ts({ type: 'INT96' }));
    const int96Nanos = logicalShapeOf(ts({ type: 'INT96' }), { ts: 'NANOS' });

    // Assess
    expect(int96).toBe(logicalShapeOf(micros));
    expect(int96Nanos).toBe(logicalShapeOf(nanos));
    expect(int96).not.toBe(int96Nanos);
    expect(logicalShapeOf([root(1), int32('a', 'OPTIONAL', { field_id: 1 })])).not.toBe(
      logicalShapeOf([root(1), int32('a', 'OPTIONAL', { field_id: 2 })]),
    );
    const text = (e: Partial<SchemaElement>) =>
      logicalShapeOf([
        root(1),
        { name: 's', type: 'BYTE_ARRAY', repetition_type: 'OPTIONAL', ...e } as SchemaElement,
      ]);
    expect(text({ converted_type: 'ENUM' })).not.toBe(text({ converted_type: 'UTF8' }));
  });
});
