// The projection of a data file's footer schema onto the table's current schema (Iceberg spec, "Column
// Projection"): matched by field id, with the promotions Iceberg allows, and every other change refused by name.
import type { SchemaElement } from 'hyparquet';
import { describe, expect, it } from 'vitest';
import type { IcebergSchema } from '../../../../../functions/core/formats/iceberg/metadata.js';
import {
  projectDataFile,
  projectionRestatesFile,
} from '../../../../../functions/core/formats/iceberg/projection.js';
import { columnProjectionSchema } from '../../../../../functions/core/projection.js';

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

  it('reads a timestamp or time in milliseconds as the microseconds of its Iceberg type (times 1,000), as Iceberg readers do', () => {
    // Prepare: at TIMESTAMP(MILLIS, UTC), wall the legacy TIMESTAMP_MILLIS (UTC), t TIME(MILLIS), t2 TIME_MILLIS
    const file = [
      root(4),
      leaf('at', 'INT64', 1, { logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MILLIS' } }),
      leaf('wall', 'INT64', 2, { converted_type: 'TIMESTAMP_MILLIS' }),
      leaf('t', 'INT32', 3, { logical_type: { type: 'TIME', isAdjustedToUTC: false, unit: 'MILLIS' } }),
      leaf('t2', 'INT32', 4, { converted_type: 'TIME_MILLIS' }),
    ];
    const current = schema([
      { id: 1, name: 'at', required: false, type: 'timestamptz' },
      { id: 2, name: 'wall', required: false, type: 'timestamptz' },
      { id: 3, name: 't', required: false, type: 'time' },
      { id: 4, name: 't2', required: false, type: 'time' },
    ]);

    // Act
    const projected = projectDataFile(file, current, '{}');

    // Assess
    expect(projected.kind === 'projected' ? projected.projection.columns : projected).toEqual([
      {
        field: { name: 'at', fieldId: 1, nullable: true, type: 'timestamp-us-utc' },
        source: { column: 'at', widen: 'timestamp-ms-us' },
      },
      {
        field: { name: 'wall', fieldId: 2, nullable: true, type: 'timestamp-us-utc' },
        source: { column: 'wall', widen: 'timestamp-ms-us' },
      },
      {
        field: { name: 't', fieldId: 3, nullable: true, type: 'time-us' },
        source: { column: 't', widen: 'time-ms-us' },
      },
      {
        field: { name: 't2', fieldId: 4, nullable: true, type: 'time-us' },
        source: { column: 't2', widen: 'time-ms-us' },
      },
    ]);
  });

  it('refuses a timestamp in milliseconds adjusted to UTC where the schema has a timestamp without zone', () => {
    // Prepare
    const file = [
      root(1),
      leaf('at', 'INT64', 1, { logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MILLIS' } }),
    ];

    // Act
    const projected = projectDataFile(
      file,
      schema([{ id: 1, name: 'at', required: false, type: 'timestamp' }]),
      '{}',
    );

    // Assess
    expect(projected.kind === 'refused' ? projected.reason : projected).toContain(
      'column at: it is timestamp now but timestamptz in milliseconds in the file',
    );
  });

  describe('lists and maps', () => {
    const group = (name: string, extra: Partial<SchemaElement>, children: number) =>
      ({ name, num_children: children, repetition_type: 'OPTIONAL', ...extra }) as SchemaElement;
    const repeated = (name: string, children: number) =>
      ({ name, num_children: children, repetition_type: 'REPEATED' }) as SchemaElement;
    /** tags list<int> (2; element 5) and props map<string, int> (3; key 6, value 7), in Parquet's standard forms. */
    const standard = [
      root(2),
      group('tags', { field_id: 2, converted_type: 'LIST' }, 1),
      repeated('list', 1),
      leaf('element', 'INT32', 5),
      group('props', { field_id: 3, converted_type: 'MAP' }, 1),
      repeated('key_value', 2),
      leaf('key', 'BYTE_ARRAY', 6, { repetition_type: 'REQUIRED', converted_type: 'UTF8' }),
      leaf('value', 'INT32', 7),
    ];
    const listOf = (element: unknown, id = 5) => ({
      type: 'list',
      'element-id': id,
      element,
      'element-required': false,
    });
    const mapOf = (value: unknown) => ({
      type: 'map',
      'key-id': 6,
      key: 'string',
      'value-id': 7,
      value,
      'value-required': false,
    });

    it('widens a list element and a map value by their field ids, and types them as the current schema', () => {
      // Prepare
      const current = schema([
        { id: 2, name: 'tags', required: false, type: listOf('long') },
        { id: 3, name: 'props', required: false, type: mapOf('long') },
      ]);

      // Act
      const projected = projectDataFile(standard, current, '{}');

      // Assess
      expect(projected.kind === 'projected' ? projected.projection.columns : projected).toEqual([
        {
          field: {
            name: 'tags',
            fieldId: 2,
            nullable: true,
            type: { list: { name: 'element', fieldId: 5, nullable: true, type: 'int64' } },
          },
          source: { column: 'tags', element: { widen: 'int32-int64' } },
        },
        {
          field: {
            name: 'props',
            fieldId: 3,
            nullable: true,
            type: {
              map: {
                key: { name: 'key', fieldId: 6, nullable: false, type: 'string' },
                value: { name: 'value', fieldId: 7, nullable: true, type: 'int64' },
              },
            },
          },
          source: { column: 'props', value: { widen: 'int32-int64' } },
        },
      ]);
    });

    it('copies an unchanged list and map as they are, so a file of the current schema restates it', () => {
      // Prepare
      const current = schema([
        { id: 2, name: 'tags', required: false, type: listOf('int') },
        { id: 3, name: 'props', required: false, type: mapOf('int') },
      ]);

      // Act
      const projected = projectDataFile(standard, current, '{}');

      // Assess
      expect(projected.kind).toBe('projected');
      if (projected.kind !== 'projected') return;
      expect(projected.projection.columns.map((c) => c.source)).toEqual([
        { column: 'tags' },
        { column: 'props' },
      ]);
      expect(projectionRestatesFile(standard, current, projected.projection)).toBe(true);
    });

    it('projects a list whose struct element gained a field: the element rebuilt field by field', () => {
      // Prepare: pts list<struct<x int (9)>> (4; element 8) in the file, struct<x long, y double (12)> now
      const file = [
        root(1),
        group('pts', { field_id: 4, converted_type: 'LIST' }, 1),
        repeated('list', 1),
        group('element', { field_id: 8 }, 1),
        leaf('x', 'INT32', 9),
      ];
      const element = {
        type: 'struct',
        fields: [
          { id: 9, name: 'x', required: false, type: 'long' },
          { id: 12, name: 'y', required: false, type: 'double' },
        ],
      };
      const current = schema([{ id: 4, name: 'pts', required: false, type: listOf(element, 8) }]);

      // Act
      const projected = projectDataFile(file, current, '{}');

      // Assess
      expect(projected.kind === 'projected' ? projected.projection.columns[0]?.source : projected).toEqual({
        column: 'pts',
        element: {
          fields: [{ source: { column: 'x', position: 0, widen: 'int32-int64' } }, {}],
        },
      });
    });

    it("travels in a plan unchanged, and a plan whose nested default is not of its field's type is refused at parse", () => {
      // Prepare: pts list<struct<x long, y double (12, initial-default 1.5)>> projected from a file without y
      const file = [
        root(1),
        group('pts', { field_id: 4, converted_type: 'LIST' }, 1),
        repeated('list', 1),
        group('element', { field_id: 8 }, 1),
        leaf('x', 'INT64', 9),
      ];
      const element = {
        type: 'struct',
        fields: [
          { id: 9, name: 'x', required: false, type: 'long' },
          { id: 12, name: 'y', required: false, type: 'double', 'initial-default': 1.5 },
        ],
      };
      const projected = projectDataFile(
        file,
        schema([
          { id: 4, name: 'pts', required: false, type: listOf(element, 8) },
          { id: 3, name: 'props', required: false, type: mapOf('long') },
        ]),
        '{}',
      );
      if (projected.kind !== 'projected') throw new Error(JSON.stringify(projected));
      const json = JSON.parse(JSON.stringify(projected.projection));
      const broken = JSON.parse(JSON.stringify(json).replace('"default":1.5', '"default":"1.5"'));

      // Act
      const parsed = columnProjectionSchema.safeParse(json);
      const refused = columnProjectionSchema.safeParse(broken);

      // Assess
      expect(parsed.success && parsed.data).toEqual(projected.projection);
      expect(projected.projection.columns[0]?.source).toEqual({
        column: 'pts',
        element: { fields: [{ source: { column: 'x', position: 0 } }, { default: 1.5 }] },
      });
      expect(refused.success).toBe(false);
      expect(refused.error?.issues[0]?.message).toContain("pts.element.y: a float64's value is a number");
    });

    it('writes a file of the current schema that keeps a legacy two-level list as written, and refuses one of an older schema', () => {
      // Prepare: tags as a repeated primitive inside the LIST group (a legacy form)
      const legacy = [
        root(2),
        leaf('id', 'INT64', 1),
        group('tags', { field_id: 2, converted_type: 'LIST' }, 1),
        leaf('array', 'INT32', 5, { repetition_type: 'REPEATED' }),
      ];
      const same = schema([
        { id: 1, name: 'id', required: false, type: 'long' },
        { id: 2, name: 'tags', required: false, type: listOf('int') },
      ]);
      const evolved = schema([...same.fields, { id: 9, name: 'note', required: false, type: 'string' }]);

      // Act
      const asWritten = projectDataFile(legacy, same, '{}');
      const older = projectDataFile(legacy, evolved, '{}');

      // Assess
      expect(asWritten).toEqual({ kind: 'as-written' });
      expect(older.kind === 'refused' ? older.reason : older).toContain(
        'column tags: the file writes this list in a legacy form',
      );
    });

    it.each([
      [
        'a list element of another field id',
        [
          root(1),
          group('tags', { field_id: 2, converted_type: 'LIST' }, 1),
          repeated('list', 1),
          leaf('element', 'INT32', 55),
        ],
        { id: 2, name: 'tags', required: false, type: listOf('int') },
        "column tags.element: it has field id 55 in the file, not the current schema's element id 5",
      ],
      [
        'a list element without a field id',
        [
          root(1),
          group('tags', { field_id: 2, converted_type: 'LIST' }, 1),
          repeated('list', 1),
          leaf('element', 'INT32'),
        ],
        { id: 2, name: 'tags', required: false, type: listOf('int') },
        'column tags.element: it has no Parquet field id in the file',
      ],
      [
        'a list column that is a primitive in the file',
        [root(1), leaf('tags', 'INT32', 2)],
        { id: 2, name: 'tags', required: false, type: listOf('int') },
        'column tags: it is a list now but a primitive in the file',
      ],
      [
        'a map value narrowed (long in the file, int now)',
        [
          root(1),
          group('props', { field_id: 3, converted_type: 'MAP' }, 1),
          repeated('key_value', 2),
          leaf('key', 'BYTE_ARRAY', 6, { repetition_type: 'REQUIRED', converted_type: 'UTF8' }),
          leaf('value', 'INT64', 7),
        ],
        { id: 3, name: 'props', required: false, type: mapOf('int') },
        'column props.value: it is int now but long in the file, which is not a promotion Iceberg allows',
      ],
      [
        'a map whose key is optional in the file',
        [
          root(1),
          group('props', { field_id: 3, converted_type: 'MAP' }, 1),
          repeated('key_value', 2),
          leaf('key', 'BYTE_ARRAY', 6, { converted_type: 'UTF8' }),
          leaf('value', 'INT32', 7),
        ],
        { id: 3, name: 'props', required: false, type: mapOf('int') },
        'column props.key: it is required now but optional in the file',
      ],
    ] as const)('refuses %s, naming the nested column', (_what, file, field, reason) => {
      // Prepare: the current schema has one more column, so the file is of an older schema
      const current = schema([
        field as unknown as IcebergSchema['fields'][number],
        { id: 99, name: 'note', required: false, type: 'string' },
      ]);

      // Act
      const projected = projectDataFile(file as unknown as readonly SchemaElement[], current, '{}');

      // Assess
      expect(projected.kind === 'refused' ? projected.reason : projected).toContain(reason);
    });
  });
});
