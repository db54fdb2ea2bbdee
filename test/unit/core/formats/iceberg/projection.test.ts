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
      'a nested struct change',
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
              { id: 5, name: 'y', required: false, type: 'double' },
            ],
          },
        },
      ],
      'column p: its struct fields changed since the file was written',
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
