// The projection of a data file's footer schema onto the table's current schema (Iceberg spec, "Column
// Projection"): matched by field id, with the promotions Iceberg allows, and every other change refused by name.
import type { SchemaElement } from 'hyparquet';
import { describe, expect, it } from 'vitest';
import type { IcebergSchema } from '../../../../../functions/core/formats/iceberg/metadata.js';
import { projectDataFile } from '../../../../../functions/core/formats/iceberg/projection.js';

const root = (children: number): SchemaElement => ({ name: 'schema', num_children: children });
const leaf = (name: string, type: SchemaElement['type'], id?: number, extra: Partial<SchemaElement> = {}) =>
  ({
    name,
    type,
    repetition_type: 'OPTIONAL',
    ...(id === undefined ? {} : { field_id: id }),
    ...extra,
  }) as SchemaElement;
const schema = (fields: IcebergSchema['fields']): IcebergSchema => ({
  schemaId: 7,
  fields,
  identifierFieldIds: [],
});

describe('projectDataFile', () => {
  it('maps columns by field id: renamed, int widened to long, float to double, decimal precision widened, added null, dropped unwritten', () => {
    // Prepare
    const file = [
      root(5),
      leaf('amount', 'INT32', 2),
      leaf('id', 'INT64', 1),
      leaf('ratio', 'FLOAT', 5),
      leaf('price', 'INT32', 6, { logical_type: { type: 'DECIMAL', precision: 9, scale: 2 } }),
      leaf('gone', 'BYTE_ARRAY', 3, { logical_type: { type: 'STRING' } }),
    ];
    const current = schema([
      { id: 1, name: 'id', required: false, type: 'long' },
      { id: 2, name: 'total', required: false, type: 'long' },
      { id: 5, name: 'ratio', required: false, type: 'double' },
      { id: 6, name: 'price', required: false, type: 'decimal(18, 2)' },
      { id: 4, name: 'note', required: false, type: 'string' },
    ]);

    // Act
    const projected = projectDataFile(file, current, '{}');

    // Assess
    expect(projected).toEqual({
      kind: 'projected',
      projection: {
        keyValueMetadata: { 'iceberg.schema': '{}' },
        columns: [
          { field: { name: 'id', fieldId: 1, nullable: true, type: 'int64' }, source: { column: 'id' } },
          {
            field: { name: 'total', fieldId: 2, nullable: true, type: 'int64' },
            source: { column: 'amount', widen: 'int32-int64' },
          },
          {
            field: { name: 'ratio', fieldId: 5, nullable: true, type: 'float64' },
            source: { column: 'ratio', widen: 'float32-float64' },
          },
          {
            field: {
              name: 'price',
              fieldId: 6,
              nullable: true,
              type: { decimal: { precision: 18, scale: 2 } },
            },
            source: { column: 'price', widen: 'decimal' },
          },
          { field: { name: 'note', fieldId: 4, nullable: true, type: 'string' } },
        ],
      },
    });
  });

  it('projects a struct whose fields changed, by field id at every depth: a field added null, one dropped, one renamed, one promoted, one reordered', () => {
    // Prepare: p{x: int (4), gone: string (6), q{a: long (8)} (7)} in the file
    const group = (name: string, id: number, children: number) =>
      ({ name, field_id: id, num_children: children, repetition_type: 'OPTIONAL' }) as SchemaElement;
    const file = [
      root(2),
      leaf('id', 'INT64', 1),
      group('p', 3, 3),
      leaf('x', 'INT32', 4),
      leaf('gone', 'BYTE_ARRAY', 6, { logical_type: { type: 'STRING' } }),
      group('q', 7, 1),
      leaf('a', 'INT64', 8),
    ];
    // now p{q{b: string (9), a (8)} (7), y: double (5), ex: long (4, renamed from x and promoted)}
    const current = schema([
      { id: 1, name: 'id', required: false, type: 'long' },
      {
        id: 3,
        name: 'p',
        required: false,
        type: {
          type: 'struct',
          fields: [
            {
              id: 7,
              name: 'q',
              required: false,
              type: {
                type: 'struct',
                fields: [
                  { id: 9, name: 'b', required: false, type: 'string' },
                  { id: 8, name: 'a', required: false, type: 'long' },
                ],
              },
            },
            { id: 5, name: 'y', required: false, type: 'double' },
            { id: 4, name: 'ex', required: false, type: 'long' },
          ],
        },
      },
    ]);

    // Act
    const projected = projectDataFile(file, current, '{}');

    // Assess
    expect(projected.kind === 'projected' && projected.projection.columns[1]?.source).toEqual({
      column: 'p',
      fields: [
        {
          source: {
            column: 'q',
            position: 2,
            fields: [{}, { source: { column: 'a', position: 0 } }],
          },
        },
        {},
        { source: { column: 'x', position: 0, widen: 'int32-int64' } },
      ],
    });
    expect(projected.kind === 'projected' && projected.projection.columns[1]?.field.type).toEqual({
      struct: [
        {
          name: 'q',
          fieldId: 7,
          nullable: true,
          type: {
            struct: [
              { name: 'b', fieldId: 9, nullable: true, type: 'string' },
              { name: 'a', fieldId: 8, nullable: true, type: 'int64' },
            ],
          },
        },
        { name: 'y', fieldId: 5, nullable: true, type: 'float64' },
        { name: 'ex', fieldId: 4, nullable: true, type: 'int64' },
      ],
    });
  });

  it('writes a struct that did not change as it is (no field sources)', () => {
    // Prepare
    const file = [
      root(1),
      { name: 'p', field_id: 3, num_children: 1, repetition_type: 'OPTIONAL' } as SchemaElement,
      leaf('x', 'DOUBLE', 4),
    ];
    const current = schema([
      {
        id: 3,
        name: 'p',
        required: false,
        type: { type: 'struct', fields: [{ id: 4, name: 'x', required: false, type: 'double' }] },
      },
    ]);

    // Act
    const projected = projectDataFile(file, current, '{}');

    // Assess
    expect(projected.kind === 'projected' && projected.projection.columns[0]?.source).toEqual({
      column: 'p',
    });
  });

  it.each([
    [
      'a column without field id',
      [root(1), leaf('id', 'INT64')],
      [{ id: 1, name: 'id', required: false, type: 'long' }],
      'its column id has no Parquet field id (a name mapping is not read)',
    ],
    [
      'a type change Iceberg does not allow (long → int)',
      [root(1), leaf('id', 'INT64', 1)],
      [{ id: 1, name: 'id', required: false, type: 'int' }],
      'column id: it is int now but long in the file, which is not a promotion Iceberg allows',
    ],
    [
      'a nested field required now that the file lacks',
      [
        root(1),
        { name: 'p', field_id: 3, num_children: 1, repetition_type: 'OPTIONAL' },
        leaf('x', 'DOUBLE', 4),
      ],
      [
        {
          id: 3,
          name: 'p',
          required: false,
          type: {
            type: 'struct',
            fields: [
              { id: 4, name: 'x', required: false, type: 'double' },
              { id: 5, name: 'y', required: true, type: 'double' },
            ],
          },
        },
      ],
      'column p.y: it is required but the file does not have it',
    ],
    [
      'a struct column added with an initial-default holding field values (the spec keeps them in the fields)',
      [root(1), leaf('id', 'INT64', 1)],
      [
        { id: 1, name: 'id', required: false, type: 'long' },
        {
          id: 3,
          name: 'p',
          required: false,
          'initial-default': { '5': 1.5 },
          type: {
            type: 'struct',
            fields: [{ id: 5, name: 'y', required: false, type: 'double', 'initial-default': 1.5 }],
          },
        },
      ],
      'column p: its initial-default {"5":1.5} is not {}',
    ],
    [
      'a nested field without a field id',
      [
        root(1),
        { name: 'p', field_id: 3, num_children: 1, repetition_type: 'OPTIONAL' },
        leaf('x', 'DOUBLE'),
      ],
      [
        {
          id: 3,
          name: 'p',
          required: false,
          type: { type: 'struct', fields: [{ id: 4, name: 'x', required: false, type: 'double' }] },
        },
      ],
      'column p.x: it has no Parquet field id in the file',
    ],
    [
      'a nested type change Iceberg does not allow (double → float)',
      [
        root(1),
        { name: 'p', field_id: 3, num_children: 1, repetition_type: 'OPTIONAL' },
        leaf('x', 'DOUBLE', 4),
      ],
      [
        {
          id: 3,
          name: 'p',
          required: false,
          type: { type: 'struct', fields: [{ id: 4, name: 'x', required: false, type: 'float' }] },
        },
      ],
      'column p.x: it is float now but double in the file, which is not a promotion Iceberg allows',
    ],
    [
      'a required column the file lacks',
      [root(1), leaf('id', 'INT64', 1)],
      [
        { id: 1, name: 'id', required: false, type: 'long' },
        { id: 2, name: 'must', required: true, type: 'long' },
      ],
      'column must: it is required but the file does not have it',
    ],
  ] as const)('refuses %s, naming the column', (_what, file, fields, reason) => {
    // Act
    const projected = projectDataFile(
      file as unknown as readonly SchemaElement[],
      schema(fields as unknown as IcebergSchema['fields']),
      '{}',
    );

    // Assess
    expect(projected.kind).toBe('refused');
    expect(projected.kind === 'refused' ? projected.reason : '').toContain(reason);
  });
});
