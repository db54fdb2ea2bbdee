// The projection of a Delta data file's footer schema onto the table's current schema (PROTOCOL.md "Column Mapping",
// "Type Widening"): columns found by physical name (mode name), field id (mode id) or name (no mapping), partition
// columns never projected, widenings only under the typeWidening feature — of columns, struct fields, array elements,
// map keys and values —; a contradiction refused by name, a column the projection does not describe left to the
// as-written rewrite; and a partition's files planned as written when none needs a projection.
import type { SchemaElement } from 'hyparquet';
import { describe, expect, it } from 'vitest';
import {
  type DeltaProjectionTable,
  hasTypeWidening,
  projectDeltaFile,
} from '../../../../../functions/core/formats/delta/projection.js';
import type { DeltaField } from '../../../../../functions/core/formats/delta/schema.js';
import { settleProjections } from '../../../../../functions/core/formats/delta/table-snapshot.js';
import { type ColumnProjection, columnProjectionSchema } from '../../../../../functions/core/projection.js';

const root = (children: number): SchemaElement => ({ name: 'spark_schema', num_children: children });
const leaf = (name: string, type: SchemaElement['type'], id?: number, extra: Partial<SchemaElement> = {}) =>
  ({
    name,
    type,
    repetition_type: 'OPTIONAL',
    ...(id === undefined ? {} : { field_id: id }),
    ...extra,
  }) as SchemaElement;
const STRING = { logical_type: { type: 'STRING' } } as Partial<SchemaElement>;

/** A column-mapped field. */
const mapped = (
  name: string,
  physical: string,
  id: number,
  type: DeltaField['type'],
  nullable = true,
): DeltaField => ({
  name,
  type,
  nullable,
  metadata: { 'delta.columnMapping.id': id, 'delta.columnMapping.physicalName': physical },
});

const table = (fields: DeltaField[], options: Partial<DeltaProjectionTable> = {}): DeltaProjectionTable => ({
  schema: { type: 'struct', fields },
  partitionColumns: ['day'],
  mode: 'name',
  typeWidening: true,
  ...options,
});

describe('projectDeltaFile', () => {
  it('finds columns by physical name (a renamed column keeps its values), widens under typeWidening, nulls an added column, leaves out dropped and partition columns', () => {
    // Prepare
    const file = [
      root(5),
      leaf('col-n', 'INT32', 2),
      leaf('col-f', 'FLOAT', 3),
      leaf('col-d', 'INT32', 4, { logical_type: { type: 'DATE' } }),
      leaf('col-i', 'INT32', 5),
      leaf('col-gone', 'BYTE_ARRAY', 9, STRING),
    ];
    const current = table([
      mapped('day', 'col-day', 1, 'string'),
      mapped('amount', 'col-n', 2, 'long'),
      mapped('ratio', 'col-f', 3, 'double'),
      mapped('at', 'col-d', 4, 'timestamp_ntz'),
      mapped('mean', 'col-i', 5, 'double'),
      mapped('note', 'col-new', 6, 'string'),
    ]);

    // Act
    const projected = projectDeltaFile(file, current);

    // Assess
    expect(projected).toEqual({
      kind: 'projected',
      restates: false,
      projection: {
        keyValueMetadata: {},
        columns: [
          {
            field: { name: 'col-n', fieldId: 2, nullable: true, type: 'int64' },
            source: { column: 'col-n', widen: 'int32-int64' },
          },
          {
            field: { name: 'col-f', fieldId: 3, nullable: true, type: 'float64' },
            source: { column: 'col-f', widen: 'float32-float64' },
          },
          {
            field: { name: 'col-d', fieldId: 4, nullable: true, type: 'timestamp-us' },
            source: { column: 'col-d', widen: 'date32-timestamp-us' },
          },
          {
            field: { name: 'col-i', fieldId: 5, nullable: true, type: 'float64' },
            source: { column: 'col-i', widen: 'int32-float64' },
          },
          { field: { name: 'col-new', fieldId: 6, nullable: true, type: 'string' } },
        ],
      },
    });
  });

  it('projects a struct whose fields changed: each field by physical name, one added null, one dropped, one widened', () => {
    // Prepare: p{col-x int, col-gone string} in the file; p{x long, y double (added)} now
    const file = [
      root(1),
      { name: 'col-p', field_id: 2, num_children: 2, repetition_type: 'OPTIONAL' } as SchemaElement,
      leaf('col-gone', 'BYTE_ARRAY', 4, STRING),
      leaf('col-x', 'INT32', 3),
    ];
    const current = table([
      mapped('p', 'col-p', 2, {
        type: 'struct',
        fields: [mapped('x', 'col-x', 3, 'long'), mapped('y', 'col-y', 5, 'double')],
      }),
    ]);

    // Act
    const projected = projectDeltaFile(file, current);

    // Assess
    expect(projected.kind === 'projected' && projected.restates).toBe(false);
    expect(projected.kind === 'projected' && projected.projection.columns).toEqual([
      {
        field: {
          name: 'col-p',
          fieldId: 2,
          nullable: true,
          type: {
            struct: [
              { name: 'col-x', fieldId: 3, nullable: true, type: 'int64' },
              { name: 'col-y', fieldId: 5, nullable: true, type: 'float64' },
            ],
          },
        },
        source: {
          column: 'col-p',
          fields: [{ source: { column: 'col-x', position: 1, widen: 'int32-int64' } }, {}],
        },
      },
    ]);
  });

  it.each([
    [
      'a non-nullable struct field the file lacks',
      mapped('x', 'col-x', 3, 'long', false),
      'column p.x: it is not nullable but the file',
    ],
    [
      'a nested field id that is not the field’s',
      mapped('x', 'col-gone', 3, 'string'),
      'column p.x: its column col-gone has field id 4',
    ],
  ])('refuses %s, naming the nested column', (_what, sub, reason) => {
    // Prepare
    const file = [
      root(1),
      { name: 'col-p', field_id: 2, num_children: 1, repetition_type: 'OPTIONAL' } as SchemaElement,
      leaf('col-gone', 'BYTE_ARRAY', 4, STRING),
    ];
    const current = table([mapped('p', 'col-p', 2, { type: 'struct', fields: [sub] })]);

    // Act
    const projected = projectDeltaFile(file, current);

    // Assess
    expect(projected.kind === 'refused' && projected.reason).toContain(reason);
  });

  it('finds columns by field id in mode id, whatever their name in the file', () => {
    // Prepare
    const file = [root(1), leaf('old-name', 'INT64', 2)];
    const current = table([mapped('amount', 'col-n', 2, 'long')], { mode: 'id' });

    // Act
    const projected = projectDeltaFile(file, current);

    // Assess
    expect(projected.kind === 'projected' && projected.projection.columns).toEqual([
      { field: { name: 'col-n', fieldId: 2, nullable: true, type: 'int64' }, source: { column: 'old-name' } },
    ]);
  });

  it('says a file restates the current schema when its columns are the current ones in order, none changed', () => {
    // Prepare
    const file = [root(2), leaf('col-n', 'INT64', 2), leaf('col-s', 'BYTE_ARRAY', 3, STRING)];
    const current = table([
      mapped('day', 'col-day', 1, 'string'),
      mapped('amount', 'col-n', 2, 'long'),
      mapped('label', 'col-s', 3, 'string'),
    ]);

    // Act
    const projected = projectDeltaFile(file, current);

    // Assess
    expect(projected.kind === 'projected' && projected.restates).toBe(true);
  });

  it('uses logical names and writes no field ids on a table without column mapping', () => {
    // Prepare
    const file = [root(1), leaf('amount', 'INT64')];
    const current = table([{ name: 'amount', type: 'long', nullable: true, metadata: {} }], { mode: 'none' });

    // Act
    const projected = projectDeltaFile(file, current);

    // Assess
    expect(projected.kind === 'projected' && projected.projection.columns).toEqual([
      { field: { name: 'amount', nullable: true, type: 'int64' }, source: { column: 'amount' } },
    ]);
  });

  const int = (bitWidth: number) =>
    leaf('col-n', 'INT32', 2, { logical_type: { type: 'INTEGER', bitWidth, isSigned: true } });
  const decimal = (type: SchemaElement['type'], precision: number, scale: number) =>
    leaf('col-n', type, 2, { logical_type: { type: 'DECIMAL', precision, scale } });

  it.each([
    ['byte → short', int(8), 'short', 'int16', { widen: 'int8-int16' }],
    ['byte → integer', int(8), 'integer', 'int32', { widen: 'int8-int32' }],
    ['byte → long', int(8), 'long', 'int64', { widen: 'int8-int64' }],
    ['short → integer', int(16), 'integer', 'int32', { widen: 'int16-int32' }],
    ['short → long', int(16), 'long', 'int64', { widen: 'int16-int64' }],
    ['byte → double', int(8), 'double', 'float64', { widen: 'int8-float64' }],
    ['short → double', int(16), 'double', 'float64', { widen: 'int16-float64' }],
    [
      'byte → decimal(10, 0)',
      int(8),
      'decimal(10,0)',
      { decimal: { precision: 10, scale: 0 } },
      { widen: 'int8-decimal' },
    ],
    [
      'short → decimal(12, 2)',
      int(16),
      'decimal(12,2)',
      { decimal: { precision: 12, scale: 2 } },
      { widen: 'int16-decimal' },
    ],
    [
      'integer → decimal(11, 1)',
      leaf('col-n', 'INT32', 2),
      'decimal(11,1)',
      { decimal: { precision: 11, scale: 1 } },
      { widen: 'int32-decimal' },
    ],
    [
      'long → decimal(22, 2)',
      leaf('col-n', 'INT64', 2),
      'decimal(22,2)',
      { decimal: { precision: 22, scale: 2 } },
      { widen: 'int64-decimal' },
    ],
    [
      'decimal(10, 2) → decimal(12, 4): precision and scale together',
      decimal('INT64', 10, 2),
      'decimal(12,4)',
      { decimal: { precision: 12, scale: 4 } },
      { widen: 'decimal', fromScale: 2 },
    ],
    [
      'decimal(5, 2) → decimal(9, 3): precision more than scale',
      decimal('INT32', 5, 2),
      'decimal(9,3)',
      { decimal: { precision: 9, scale: 3 } },
      { widen: 'decimal', fromScale: 2 },
    ],
  ])('projects %s under typeWidening, naming the exact widening', (_what, column, now, type, widening) => {
    // Prepare
    const file = [root(1), column];
    const current = table([mapped('amount', 'col-n', 2, now)]);

    // Act
    const projected = projectDeltaFile(file, current);

    // Assess
    expect(projected.kind === 'projected' && projected.projection.columns).toEqual([
      {
        field: { name: 'col-n', fieldId: 2, nullable: true, type },
        source: { column: 'col-n', ...widening },
      },
    ]);
  });

  it('writes a byte or short column of the current schema as it is, a restatement', () => {
    // Prepare
    const file = [
      root(2),
      leaf('col-b', 'INT32', 2, { logical_type: { type: 'INTEGER', bitWidth: 8, isSigned: true } }),
      leaf('col-s', 'INT32', 3, { converted_type: 'INT_16' }),
    ];
    const current = table([mapped('b', 'col-b', 2, 'byte'), mapped('s', 'col-s', 3, 'short')]);

    // Act
    const projected = projectDeltaFile(file, current);

    // Assess
    expect(projected).toEqual({
      kind: 'projected',
      restates: true,
      projection: {
        keyValueMetadata: {},
        columns: [
          { field: { name: 'col-b', fieldId: 2, nullable: true, type: 'int8' }, source: { column: 'col-b' } },
          {
            field: { name: 'col-s', fieldId: 3, nullable: true, type: 'int16' },
            source: { column: 'col-s' },
          },
        ],
      },
    });
  });

  it.each([
    ['long → integer (a narrowing)', leaf('col-n', 'INT64', 2), 'integer', 'it is int32 now but int64'],
    ['short → byte (a narrowing)', int(16), 'byte', 'it is int8 now but int16'],
    ['long → double (not exact)', leaf('col-n', 'INT64', 2), 'double', 'it is float64 now but int64'],
    ['float → long', leaf('col-n', 'FLOAT', 2), 'long', 'it is int64 now but float32'],
    [
      'integer → decimal(9, 0) (too few digits)',
      leaf('col-n', 'INT32', 2),
      'decimal(9,0)',
      'it is decimal(9, 0) now but int32',
    ],
    [
      'long → decimal(21, 2) (the scale grows more than the precision)',
      leaf('col-n', 'INT64', 2),
      'decimal(21,2)',
      'it is decimal(21, 2) now but int64',
    ],
    [
      'decimal(10, 2) → decimal(11, 4) (the scale grows more than the precision)',
      decimal('INT64', 10, 2),
      'decimal(11,4)',
      'it is decimal(11, 4) now but decimal(10, 2)',
    ],
    [
      'decimal(10, 2) → decimal(12, 1) (a smaller scale)',
      decimal('INT64', 10, 2),
      'decimal(12,1)',
      'it is decimal(12, 1) now but decimal(10, 2)',
    ],
    ['decimal(10, 2) → double', decimal('INT64', 10, 2), 'double', 'it is float64 now but decimal(10, 2)'],
  ])('refuses %s, naming the column and both types', (_what, column, now, says) => {
    // Act
    const projected = projectDeltaFile([root(1), column], table([mapped('amount', 'col-n', 2, now)]));

    // Assess
    expect(projected.kind).toBe('refused');
    expect(projected.kind === 'refused' && projected.reason).toContain(
      `column amount: ${says} in the file, which is not a type change Delta allows`,
    );
  });

  it.each([
    [
      'a type change Delta does not allow',
      [root(1), leaf('col-n', 'BYTE_ARRAY', 2, STRING)],
      table([mapped('amount', 'col-n', 2, 'long')]),
      'column amount: it is int64 now but string in the file, which is not a type change Delta allows',
    ],
    [
      'a widening without the typeWidening feature',
      [root(1), leaf('col-n', 'INT32', 2)],
      table([mapped('amount', 'col-n', 2, 'long')], { typeWidening: false }),
      'column amount: it is int64 now but int32 in the file, and the table does not have the typeWidening feature',
    ],
    [
      'a narrowing, even under typeWidening',
      [root(1), leaf('col-n', 'DOUBLE', 2)],
      table([mapped('amount', 'col-n', 2, 'float')]),
      'column amount: it is float32 now but float64 in the file, which is not a type change Delta allows',
    ],
    [
      'a field id that is not the column’s',
      [root(1), leaf('col-n', 'INT64', 7)],
      table([mapped('amount', 'col-n', 2, 'long')]),
      'column amount: its column col-n has field id 7 in the file but delta.columnMapping.id 2 in the schema',
    ],
    [
      'a column of the physical name without its id, in mode id',
      [root(1), leaf('col-n', 'INT64')],
      table([mapped('amount', 'col-n', 2, 'long')], { mode: 'id' }),
      'column amount: its column col-n has field id (none) in the file but delta.columnMapping.id 2 in the schema',
    ],
    [
      'a non-nullable column the file lacks',
      [root(1), leaf('col-s', 'BYTE_ARRAY', 3, STRING)],
      table([mapped('amount', 'col-n', 2, 'long', false), mapped('label', 'col-s', 3, 'string')]),
      'column amount: it is not nullable but the file has no column col-n (field id 2)',
    ],
    [
      'a mapped column without a physical name',
      [root(1), leaf('col-n', 'INT64', 2)],
      table([{ name: 'amount', type: 'long', nullable: true, metadata: { 'delta.columnMapping.id': 2 } }]),
      'column amount: the table maps columns by name but the schema records no delta.columnMapping.physicalName for it',
    ],
  ])('refuses %s, naming the column', (_what, file, current, reason) => {
    // Act
    const projected = projectDeltaFile(file, current);

    // Assess
    expect(projected.kind).toBe('refused');
    expect(projected.kind === 'refused' && projected.reason).toContain(reason);
  });

  it.each([
    [
      'an INT96 timestamp',
      [root(2), leaf('col-t', 'INT96', 2), leaf('col-s', 'BYTE_ARRAY', 3, STRING)],
      table([mapped('at', 'col-t', 2, 'timestamp'), mapped('label', 'col-s', 3, 'string')]),
    ],
    [
      'a string column written as unannotated bytes',
      [root(1), leaf('col-s', 'BYTE_ARRAY', 2)],
      table([mapped('label', 'col-s', 2, 'string')]),
    ],
    [
      'a timestamp written without the UTC flag',
      [
        root(1),
        leaf('col-t', 'INT64', 2, {
          logical_type: { type: 'TIMESTAMP', unit: 'MICROS', isAdjustedToUTC: false },
        }),
      ],
      table([mapped('at', 'col-t', 2, 'timestamp')]),
    ],
    [
      'an array column',
      [
        root(1),
        { name: 'col-a', repetition_type: 'OPTIONAL', num_children: 1, field_id: 2 } as SchemaElement,
        { name: 'list', repetition_type: 'REPEATED', num_children: 1 } as SchemaElement,
        leaf('element', 'BYTE_ARRAY', undefined, STRING),
      ],
      table([mapped('tags', 'col-a', 2, { type: 'array', elementType: 'string', containsNull: true })]),
    ],
    [
      'a binary column stored as a 16-byte UUID',
      [
        root(1),
        leaf('col-b', 'FIXED_LEN_BYTE_ARRAY', 2, { type_length: 16, logical_type: { type: 'UUID' } }),
      ],
      table([mapped('blob', 'col-b', 2, 'binary')]),
    ],
    [
      'a binary column stored as fixed-length bytes',
      [root(1), leaf('col-b', 'FIXED_LEN_BYTE_ARRAY', 2, { type_length: 4 })],
      table([mapped('blob', 'col-b', 2, 'binary')]),
    ],
    [
      'a long column stored as a time of day',
      [
        root(1),
        leaf('col-t', 'INT64', 2, { logical_type: { type: 'TIME', unit: 'MICROS', isAdjustedToUTC: false } }),
      ],
      table([mapped('t', 'col-t', 2, 'long')]),
    ],
  ])('leaves a file with %s to the as-written rewrite', (_what, file, current) => {
    // Act
    const projected = projectDeltaFile(file, current);

    // Assess
    expect(projected.kind).toBe('as-written');
  });
});

describe('projectDeltaFile on array and map columns', () => {
  const group = (name: string, extra: Partial<SchemaElement>, children: number) =>
    ({ name, num_children: children, repetition_type: 'OPTIONAL', ...extra }) as SchemaElement;
  const repeated = (name: string, children: number) =>
    ({ name, num_children: children, repetition_type: 'REPEATED' }) as SchemaElement;
  const KEY = leaf('key', 'BYTE_ARRAY', undefined, { repetition_type: 'REQUIRED', ...STRING });
  /** tags array<int> (col-t, 2) and props map<string, int> (col-m, 3), in Parquet's standard forms, as Spark writes them. */
  const standard = [
    root(2),
    group('col-t', { field_id: 2, converted_type: 'LIST' }, 1),
    repeated('list', 1),
    leaf('element', 'INT32'),
    group('col-m', { field_id: 3, converted_type: 'MAP' }, 1),
    repeated('key_value', 2),
    KEY,
    leaf('value', 'INT32'),
  ];
  const array = (elementType: DeltaField['type']): DeltaField['type'] => ({
    type: 'array',
    elementType,
    containsNull: true,
  });
  const map = (keyType: DeltaField['type'], valueType: DeltaField['type']): DeltaField['type'] => ({
    type: 'map',
    keyType,
    valueType,
    valueContainsNull: true,
  });

  it('widens an array element and a map value under typeWidening, and writes them in the current types', () => {
    // Prepare
    const current = table([
      mapped('tags', 'col-t', 2, array('long')),
      mapped('props', 'col-m', 3, map('string', 'decimal(12,2)')),
    ]);

    // Act
    const projected = projectDeltaFile(standard, current);

    // Assess
    expect(projected).toEqual({
      kind: 'projected',
      restates: false,
      projection: {
        keyValueMetadata: {},
        columns: [
          {
            field: {
              name: 'col-t',
              fieldId: 2,
              nullable: true,
              type: { list: { name: 'element', nullable: true, type: 'int64' } },
            },
            source: { column: 'col-t', element: { widen: 'int32-int64' } },
          },
          {
            field: {
              name: 'col-m',
              fieldId: 3,
              nullable: true,
              type: {
                map: {
                  key: { name: 'key', nullable: false, type: 'string' },
                  value: { name: 'value', nullable: true, type: { decimal: { precision: 12, scale: 2 } } },
                },
              },
            },
            source: { column: 'col-m', value: { widen: 'int32-decimal' } },
          },
        ],
      },
    });
  });

  it('widens a map key (float → double, as the protocol allows for keys too)', () => {
    // Prepare
    const file = [
      root(1),
      group('col-m', { field_id: 3, converted_type: 'MAP' }, 1),
      repeated('key_value', 2),
      leaf('key', 'FLOAT', undefined, { repetition_type: 'REQUIRED' }),
      leaf('value', 'INT32'),
    ];
    const current = table([mapped('props', 'col-m', 3, map('double', 'integer'))]);

    // Act
    const projected = projectDeltaFile(file, current);

    // Assess
    expect(projected.kind === 'projected' ? projected.projection.columns[0]?.source : projected).toEqual({
      column: 'col-m',
      key: { widen: 'float32-float64' },
    });
  });

  it('copies an unchanged array and map as they are, so a file of the current schema restates it', () => {
    // Prepare
    const current = table([
      mapped('tags', 'col-t', 2, array('integer')),
      mapped('props', 'col-m', 3, map('string', 'integer')),
    ]);

    // Act
    const projected = projectDeltaFile(standard, current);

    // Assess
    expect(projected.kind === 'projected' && projected.restates).toBe(true);
    expect(projected.kind === 'projected' && projected.projection.columns.map((c) => c.source)).toEqual([
      { column: 'col-t' },
      { column: 'col-m' },
    ]);
  });

  it('rebuilds a struct element whose fields changed (by physical name: one widened, one added null, one dropped), and the projection travels in a plan unchanged', () => {
    // Prepare: pts array<struct<col-x int, col-gone string>> in the file; array<struct<x long, y double>> now
    const file = [
      root(1),
      group('col-p', { field_id: 4, converted_type: 'LIST' }, 1),
      repeated('list', 1),
      group('element', {}, 2),
      leaf('col-gone', 'BYTE_ARRAY', 8, STRING),
      leaf('col-x', 'INT32', 5),
    ];
    const current = table([
      mapped(
        'pts',
        'col-p',
        4,
        array({
          type: 'struct',
          fields: [mapped('x', 'col-x', 5, 'long'), mapped('y', 'col-y', 6, 'double')],
        }),
      ),
    ]);

    // Act
    const projected = projectDeltaFile(file, current);

    // Assess
    if (projected.kind !== 'projected') throw new Error(JSON.stringify(projected));
    expect(projected.projection.columns).toEqual([
      {
        field: {
          name: 'col-p',
          fieldId: 4,
          nullable: true,
          type: {
            list: {
              name: 'element',
              nullable: true,
              type: {
                struct: [
                  { name: 'col-x', fieldId: 5, nullable: true, type: 'int64' },
                  { name: 'col-y', fieldId: 6, nullable: true, type: 'float64' },
                ],
              },
            },
          },
        },
        source: {
          column: 'col-p',
          element: { fields: [{ source: { column: 'col-x', position: 1, widen: 'int32-int64' } }, {}] },
        },
      },
    ]);
    const parsed = columnProjectionSchema.safeParse(JSON.parse(JSON.stringify(projected.projection)));
    expect(parsed.success && parsed.data).toEqual(projected.projection);
  });

  it('finds the fields of a struct map value by field id in mode id, whatever their name in the file', () => {
    // Prepare
    const file = [
      root(1),
      group('col-m', { field_id: 3, converted_type: 'MAP' }, 1),
      repeated('key_value', 2),
      KEY,
      group('value', {}, 1),
      leaf('old-name', 'INT64', 7),
    ];
    const current = table(
      [
        mapped(
          'props',
          'col-m',
          3,
          map('string', { type: 'struct', fields: [mapped('n', 'col-n', 7, 'long')] }),
        ),
      ],
      { mode: 'id' },
    );

    // Act
    const projected = projectDeltaFile(file, current);

    // Assess
    expect(projected.kind === 'projected' ? projected.projection.columns[0]?.source : projected).toEqual({
      column: 'col-m',
      value: { fields: [{ source: { column: 'old-name', position: 0 } }] },
    });
  });

  it.each([
    [
      'an element type change Delta does not allow',
      table([
        mapped('tags', 'col-t', 2, array('string')),
        mapped('props', 'col-m', 3, map('string', 'integer')),
      ]),
      'column tags.element: it is string now but int32 in the file, which is not a type change Delta allows',
    ],
    [
      'a map value narrowed',
      table([
        mapped('tags', 'col-t', 2, array('integer')),
        mapped('props', 'col-m', 3, map('string', 'short')),
      ]),
      'column props.value: it is int16 now but int32 in the file, which is not a type change Delta allows',
    ],
    [
      'an element widened on a table without the typeWidening feature',
      table(
        [mapped('tags', 'col-t', 2, array('long')), mapped('props', 'col-m', 3, map('string', 'integer'))],
        { typeWidening: false },
      ),
      'column tags.element: it is int64 now but int32 in the file, and the table does not have the typeWidening feature',
    ],
    [
      'a map where the file has an array',
      table([
        mapped('tags', 'col-t', 2, map('string', 'integer')),
        mapped('props', 'col-m', 3, map('string', 'integer')),
      ]),
      'column tags: it is a map now but an array in the file',
    ],
    [
      'a struct where the file has a map',
      table([
        mapped('tags', 'col-t', 2, array('integer')),
        mapped('props', 'col-m', 3, { type: 'struct', fields: [mapped('key', 'key', 9, 'string')] }),
      ]),
      'column props: it is a struct now but a map in the file',
    ],
  ])('refuses %s, naming the nested column', (_what, current, reason) => {
    // Act
    const projected = projectDeltaFile(standard, current);

    // Assess
    expect(projected.kind).toBe('refused');
    expect(projected.kind === 'refused' && projected.reason).toContain(reason);
  });

  it('refuses an array the file holds as a primitive', () => {
    // Act
    const projected = projectDeltaFile(
      [root(1), leaf('col-t', 'INT32', 2)],
      table([mapped('tags', 'col-t', 2, array('integer'))]),
    );

    // Assess
    expect(projected.kind === 'refused' && projected.reason).toContain(
      'column tags: it is an array now but a primitive in the file',
    );
  });

  it.each([
    [
      'a list in the legacy two-level form (a repeated primitive)',
      [
        root(1),
        group('col-t', { field_id: 2, converted_type: 'LIST' }, 1),
        leaf('array', 'INT32', undefined, { repetition_type: 'REPEATED' }),
      ],
      table([mapped('tags', 'col-t', 2, array('long'))]),
      'column tags: the file writes this array in a legacy form',
    ],
    [
      'a list in the legacy two-level form (a repeated group named array)',
      [
        root(1),
        group('col-t', { field_id: 2, converted_type: 'LIST' }, 1),
        repeated('array', 1),
        leaf('col-x', 'INT32', 5),
      ],
      table([
        mapped('tags', 'col-t', 2, array({ type: 'struct', fields: [mapped('x', 'col-x', 5, 'long')] })),
      ]),
      'column tags: the file writes this array in a legacy form',
    ],
    [
      'an array element with a Parquet field id the schema does not record',
      [
        root(1),
        group('col-t', { field_id: 2, converted_type: 'LIST' }, 1),
        repeated('list', 1),
        leaf('element', 'INT32', 11),
      ],
      table([mapped('tags', 'col-t', 2, array('long'))]),
      'column tags.element: the file gives it Parquet field id 11',
    ],
    [
      'a map key the file writes as optional',
      [
        root(1),
        group('col-m', { field_id: 3, converted_type: 'MAP' }, 1),
        repeated('key_value', 2),
        leaf('key', 'BYTE_ARRAY', undefined, STRING),
        leaf('value', 'INT32'),
      ],
      table([mapped('props', 'col-m', 3, map('string', 'long'))]),
      'column props.key: the file writes this map key as optional',
    ],
    [
      'a table recording nested field ids (IcebergCompatV2)',
      standard,
      table([
        {
          ...mapped('tags', 'col-t', 2, array('long')),
          metadata: {
            'delta.columnMapping.id': 2,
            'delta.columnMapping.physicalName': 'col-t',
            'delta.columnMapping.nested.ids': { 'col-t.element': 11 },
          },
        },
        mapped('props', 'col-m', 3, map('string', 'long')),
      ]),
      'column tags: the schema records delta.columnMapping.nested.ids for it',
    ],
  ])('leaves a file with %s as written, saying why', (_what, file, current, reason) => {
    // Act
    const projected = projectDeltaFile(file, current);

    // Assess
    expect(projected.kind).toBe('as-written');
    expect(projected.kind === 'as-written' && projected.reason).toContain(reason);
  });
});

describe('hasTypeWidening', () => {
  it('is the feature (or its preview) in the protocol, or the table property', () => {
    // Act / Assess
    expect(hasTypeWidening({ readerFeatures: ['typeWidening'], writerFeatures: [] }, {})).toBe(true);
    expect(hasTypeWidening({ readerFeatures: [], writerFeatures: ['typeWidening-preview'] }, {})).toBe(true);
    expect(
      hasTypeWidening({ readerFeatures: [], writerFeatures: [] }, { 'delta.enableTypeWidening': 'true' }),
    ).toBe(true);
    expect(
      hasTypeWidening({ readerFeatures: ['columnMapping'], writerFeatures: ['columnMapping'] }, {}),
    ).toBe(false);
  });
});

describe('settleProjections', () => {
  const projection: ColumnProjection = {
    columns: [{ field: { name: 'a', nullable: true, type: 'int64' }, source: { column: 'a' } }],
    keyValueMetadata: {},
  };
  const file = (key: string, fingerprint: string, identity: boolean) => ({
    key,
    size: 10,
    etag: '',
    schemaFingerprint: fingerprint,
    projection,
    ...(identity ? { projectionIdentity: true } : {}),
  });

  it('drops the projections of a partition whose files all restate one Parquet schema', () => {
    // Act
    const settled = settleProjections([file('a', 'fp1', true), file('b', 'fp1', true)]);

    // Assess
    expect(settled).toEqual([
      { key: 'a', size: 10, etag: '', schemaFingerprint: 'fp1' },
      { key: 'b', size: 10, etag: '', schemaFingerprint: 'fp1' },
    ]);
  });

  it('keeps every projection, restating ones too, when a file needs one', () => {
    // Act
    const settled = settleProjections([file('a', 'fp1', true), file('b', 'fp2', false)]);

    // Assess
    expect(settled.map((f) => [f.key, f.projection !== undefined, 'projectionIdentity' in f])).toEqual([
      ['a', true, false],
      ['b', true, false],
    ]);
  });
});
