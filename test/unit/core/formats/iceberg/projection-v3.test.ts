// The projection's v3 half (Iceberg spec, "Default values", "Schema Evolution" and Appendix D's JSON single-value
// serialization): a column or struct field a file lacks reads as its `initial-default` in the projection's exact
// spelling, `write-default` is not read, v3's date → timestamp promotion is a widening (only in v3), and a v3 table's
// row lineage columns are carried through after the schema's. Anything not exact is refused by name.
import type { SchemaElement } from 'hyparquet';
import { describe, expect, it } from 'vitest';
import type { IcebergField, IcebergSchema } from '../../../../../functions/core/formats/iceberg/metadata.js';
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
const schema = (fields: readonly Record<string, unknown>[]): IcebergSchema => ({
  schemaId: 3,
  fields: fields as unknown as IcebergField[],
  identifierFieldIds: [],
});
const ID_ONLY = [root(1), leaf('id', 'INT64', 1)];
const ID_FIELD = { id: 1, name: 'id', required: false, type: 'long' };

/** The projected column of field `name` of the file `ID_ONLY` projected onto `id` plus `added`. */
function addedColumn(added: Record<string, unknown>, formatVersion: 2 | 3 = 2) {
  const projected = projectDataFile(ID_ONLY, schema([ID_FIELD, added]), '{}', { formatVersion });
  if (projected.kind !== 'projected') throw new Error(JSON.stringify(projected));
  return projected.projection.columns[1];
}

describe('projectDataFile: a column added with an initial-default reads as it in files written before', () => {
  it.each([
    ['boolean', true, 'boolean', true],
    ['int', -7, 'int32', -7],
    ['long (short literal)', 42, 'int64', '42'],
    [
      'long past 2^53 (kept as its digits by the metadata reader)',
      '9007199254740993',
      'int64',
      '9007199254740993',
    ],
    ['float', 1.5, 'float32', 1.5],
    ['float (read as the nearest float32)', 0.1, 'float32', Math.fround(0.1)],
    ['double', 0.1, 'float64', 0.1],
    ['decimal(9, 2)', '-14.20', { decimal: { precision: 9, scale: 2 } }, '-1420'],
    [
      'decimal(38, 0)',
      '12345678901234567890123456789012345678',
      { decimal: { precision: 38, scale: 0 } },
      '12345678901234567890123456789012345678',
    ],
    ['date', '2017-11-16', 'date32', 17486],
    ['date before 1970', '1969-12-31', 'date32', -1],
    ['timestamp', '2017-11-16T22:31:08.123456', 'timestamp-us', '1510871468123456'],
    ['timestamp without seconds', '1970-01-01T00:01', 'timestamp-us', '60000000'],
    ['timestamptz', '2017-11-16T22:31:08.1+00:00', 'timestamp-us-utc', '1510871468100000'],
    [
      'timestamptz at another offset (read as its UTC instant)',
      '2017-11-16T17:31:08.1-05:00',
      'timestamp-us-utc',
      '1510871468100000',
    ],
    [
      'timestamptz at a half-hour offset across midnight',
      '2017-11-17T04:01:08.000001+05:30',
      'timestamp-us-utc',
      '1510871468000001',
    ],
    ['timestamptz in Z', '2017-11-16T22:31:08.1Z', 'timestamp-us-utc', '1510871468100000'],
    ['timestamp_ns', '2017-11-16T22:31:08.123456789', 'timestamp-ns', '1510871468123456789'],
    ['timestamp_ns before 1970', '1969-12-31T23:59:59.999999999', 'timestamp-ns', '-1'],
    ['timestamptz_ns', '2017-11-16T17:31:08.000000001-05:00', 'timestamp-ns-utc', '1510871468000000001'],
    ['string', 'n/a ✓', 'string', 'n/a ✓'],
    ['binary', '00FF10', 'binary', '00ff10'],
    ['time', '22:31:08.123456', 'time-us', '81068123456'],
    ['time without seconds', '00:01', 'time-us', '60000000'],
    ['time at the last microsecond of the day', '23:59:59.999999', 'time-us', '86399999999'],
    ['uuid', 'F79C3E09-677C-4BBD-A479-3F349CB785E7', 'uuid', 'f79c3e09677c4bbda4793f349cb785e7'],
    ['fixed[3]', '00FF10', { fixed: 3 }, '00ff10'],
  ] as const)('%s', (type, initial, written, value) => {
    // Prepare
    const icebergType =
      type.startsWith('decimal') || type.startsWith('fixed') ? type : (type.split(' ')[0] as string);
    const field = { id: 2, name: 'added', required: false, type: icebergType, 'initial-default': initial };

    // Act
    const column = addedColumn(field);

    // Assess: no source, the default in the written type's spelling, and a plan carrying it parses
    expect(column).toEqual({
      field: { name: 'added', fieldId: 2, nullable: true, type: written },
      default: value,
    });
    expect(columnProjectionSchema.safeParse({ columns: [column], keyValueMetadata: {} }).success).toBe(true);
  });

  it('a required column added with an initial-default is projected, not null (written required)', () => {
    // Act
    const column = addedColumn({
      id: 2,
      name: 'flag',
      required: true,
      type: 'boolean',
      'initial-default': false,
    });

    // Assess
    expect(column).toEqual({
      field: { name: 'flag', fieldId: 2, nullable: false, type: 'boolean' },
      default: false,
    });
  });

  it('a null initial-default, or only a write-default, reads null (write-default is for rows written later)', () => {
    // Act
    const nullDefault = addedColumn({
      id: 2,
      name: 'a',
      required: false,
      type: 'int',
      'initial-default': null,
    });
    const writeOnly = addedColumn({ id: 2, name: 'a', required: false, type: 'int', 'write-default': 5 });

    // Assess
    expect(nullDefault).toEqual({ field: { name: 'a', fieldId: 2, nullable: true, type: 'int32' } });
    expect(writeOnly).toEqual({ field: { name: 'a', fieldId: 2, nullable: true, type: 'int32' } });
  });

  it('a column the file has keeps its values whatever its initial-default', () => {
    // Act
    const projected = projectDataFile(ID_ONLY, schema([{ ...ID_FIELD, 'initial-default': 9 }]), '{}');

    // Assess
    expect(projected.kind === 'projected' && projected.projection.columns).toEqual([
      { field: { name: 'id', fieldId: 1, nullable: true, type: 'int64' }, source: { column: 'id' } },
    ]);
  });

  it("a struct field added with an initial-default reads as it inside the file's struct", () => {
    // Prepare: p{x double (4)} in the file; y long (5) added with a default
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
        type: {
          type: 'struct',
          fields: [
            { id: 4, name: 'x', required: false, type: 'double' },
            { id: 5, name: 'y', required: false, type: 'long', 'initial-default': 7 },
          ],
        },
      },
    ]);

    // Act
    const projected = projectDataFile(file, current, '{}');

    // Assess
    expect(projected.kind === 'projected' && projected.projection.columns[0]?.source).toEqual({
      column: 'p',
      fields: [{ source: { column: 'x', position: 0 } }, { default: '7' }],
    });
  });

  it("a struct column added with the initial-default {} reads as a struct of its fields' own defaults (null without one)", () => {
    // Act
    const column = addedColumn({
      id: 2,
      name: 'pt',
      required: false,
      'initial-default': {},
      type: {
        type: 'struct',
        fields: [
          { id: 3, name: 'x', required: false, type: 'double', 'initial-default': 0 },
          { id: 4, name: 'y', required: false, type: 'double' },
          {
            id: 5,
            name: 'z',
            required: false,
            'initial-default': {},
            type: {
              type: 'struct',
              fields: [{ id: 6, name: 'tag', required: true, type: 'string', 'initial-default': 'none' }],
            },
          },
        ],
      },
    });

    // Assess: no source, the struct default, and a plan carrying it parses
    expect(column?.default).toEqual({ struct: [0, null, { struct: ['none'] }] });
    expect(column?.source).toBeUndefined();
    expect(columnProjectionSchema.safeParse({ columns: [column], keyValueMetadata: {} }).success).toBe(true);
  });

  it.each([
    ['a decimal with another scale', 'decimal(9, 2)', '14.2', 'is not a decimal(9, 2)'],
    ['a decimal of more digits than its precision', 'decimal(3, 2)', '14.20', 'is not a decimal(3, 2)'],
    ['a date that is no calendar day', 'date', '2023-02-29', 'not an ISO-8601 date'],
    [
      'a timestamp with a zone offset',
      'timestamp',
      '2017-11-16T22:31:08+00:00',
      'a timestamp has no zone offset',
    ],
    ['a timestamptz without a zone offset', 'timestamptz', '2017-11-16T22:31:08', 'has a zone offset'],
    [
      'a timestamptz offset past 18 hours',
      'timestamptz',
      '2017-11-16T22:31:08+19:00',
      'not one from -18:00 to +18:00',
    ],
    ['a timestamp in nanoseconds', 'timestamp', '2017-11-16T22:31:08.123456789', 'at most microseconds'],
    [
      'a timestamp_ns past 2262-04-11 (beyond 64-bit nanoseconds)',
      'timestamp_ns',
      '2262-04-12T00:00:00',
      'decimal string of a 64-bit integer',
    ],
    ['a timestamptz_ns without a zone offset', 'timestamptz_ns', '2017-11-16T22:31:08', 'has a zone offset'],
    ['an int past 32 bits', 'int', 2147483648, 'is not a int'],
    ['an int written as a string', 'int', '5', 'not a JSON int'],
    ['a float written as a string', 'float', '1.5', 'not a JSON number'],
    ['binary not in hex', 'binary', 'xyz', 'not a hexadecimal string'],
    ['a time in nanoseconds', 'time', '22:31:08.123456789', 'with at most microseconds'],
    ['a time past 23:59:59', 'time', '24:00:00', 'not a time of day'],
    ['a time with a zone offset', 'time', '22:31:08+01:00', 'not an ISO-8601 time of day'],
    ['a time as a number', 'time', 81068123456, 'not an ISO-8601 time of day'],
    ['a uuid without its dashes', 'uuid', 'f79c3e09677c4bbda4793f349cb785e7', 'canonical 8-4-4-4-12'],
    ['a uuid of 15 bytes', 'uuid', 'f79c3e09-677c-4bbd-a479-3f349cb785', 'canonical 8-4-4-4-12'],
    ['a fixed[4] of 3 bytes', 'fixed[4]', '00ff10', 'exactly 4 bytes'],
    ['a fixed[2] not in hex', 'fixed[2]', 'zz00', 'exactly 2 bytes'],
  ] as const)('refuses %s by name, the file left alone', (_what, type, initial, why) => {
    // Act
    const projected = projectDataFile(
      ID_ONLY,
      schema([ID_FIELD, { id: 2, name: 'added', required: false, type, 'initial-default': initial }]),
      '{}',
    );

    // Assess
    expect(projected.kind).toBe('refused');
    expect(projected.kind === 'refused' && projected.reason).toContain('column added: ');
    expect(projected.kind === 'refused' && projected.reason).toContain(why);
  });
});

describe('projectDataFile: time, uuid and fixed columns a file holds', () => {
  const file = [
    root(3),
    leaf('t', 'INT64', 1, { logical_type: { type: 'TIME', unit: 'MICROS', isAdjustedToUTC: false } }),
    leaf('u', 'FIXED_LEN_BYTE_ARRAY', 2, { type_length: 16, logical_type: { type: 'UUID' } }),
    leaf('f', 'FIXED_LEN_BYTE_ARRAY', 3, { type_length: 5 }),
  ];
  const current = schema([
    { id: 1, name: 't', required: false, type: 'time' },
    { id: 2, name: 'u', required: false, type: 'uuid' },
    { id: 3, name: 'f', required: false, type: 'fixed[5]' },
  ]);

  it('reads them as the current schema types, and never lets a file with a uuid be rewritten as written (its annotation is given back only by a projection)', () => {
    // Act
    const projected = projectDataFile(file, current, '{}');

    // Assess
    if (projected.kind !== 'projected') throw new Error(JSON.stringify(projected));
    expect(projected.projection.columns.map((c) => [c.field.name, c.field.type, c.source?.column])).toEqual([
      ['t', 'time-us', 't'],
      ['u', 'uuid', 'u'],
      ['f', { fixed: 5 }, 'f'],
    ]);
    expect(projectionRestatesFile(file, current, projected.projection)).toBe(false);
    const withoutUuid = schema([
      { id: 1, name: 't', required: false, type: 'time' },
      { id: 3, name: 'f', required: false, type: 'fixed[5]' },
    ]);
    const noUuidFile = [root(2), file[1] as SchemaElement, file[3] as SchemaElement];
    const plain = projectDataFile(noUuidFile, withoutUuid, '{}');
    expect(
      plain.kind === 'projected' && projectionRestatesFile(noUuidFile, withoutUuid, plain.projection),
    ).toBe(true);
  });

  it.each([
    [
      'a time adjusted to UTC',
      leaf('t', 'INT64', 1, { logical_type: { type: 'TIME', unit: 'MICROS', isAdjustedToUTC: true } }),
    ],
    [
      'a timestamp in milliseconds (a time in milliseconds is read, times 1,000)',
      leaf('t', 'INT64', 1, { logical_type: { type: 'TIMESTAMP', unit: 'MILLIS', isAdjustedToUTC: false } }),
    ],
  ] as const)('refuses %s where the schema says time, naming the column', (_what, column) => {
    // Act
    const projected = projectDataFile(
      [root(1), column as SchemaElement],
      schema([{ id: 1, name: 't', required: false, type: 'time' }]),
      '{}',
    );

    // Assess
    expect(projected.kind).toBe('refused');
    expect(projected.kind === 'refused' && projected.reason).toContain('column t: ');
  });

  it('refuses a fixed column of another length than the schema says, naming it', () => {
    // Act
    const projected = projectDataFile(
      [root(1), leaf('f', 'FIXED_LEN_BYTE_ARRAY', 3, { type_length: 4 })],
      schema([{ id: 3, name: 'f', required: false, type: 'fixed[5]' }]),
      '{}',
    );

    // Assess
    expect(projected.kind).toBe('refused');
    expect(projected.kind === 'refused' && projected.reason).toContain(
      'column f: it is fixed[5] now but fixed[4] in the file',
    );
  });
});

describe('projectDataFile: promotions by format version', () => {
  const dateFile = [root(1), leaf('d', 'INT32', 1, { logical_type: { type: 'DATE' } })];

  it('widens a date to a timestamp (days to their midnight) in a v3 table', () => {
    // Act
    const projected = projectDataFile(
      dateFile,
      schema([{ id: 1, name: 'd', required: false, type: 'timestamp' }]),
      '{}',
      { formatVersion: 3 },
    );

    // Assess: the widening, then the lineage columns a v3 rewrite carries
    expect(projected.kind === 'projected' && projected.projection.columns[0]).toEqual({
      field: { name: 'd', fieldId: 1, nullable: true, type: 'timestamp-us' },
      source: { column: 'd', widen: 'date32-timestamp-us' },
    });
  });

  it('refuses date → timestamp in a v2 table, where Iceberg does not allow it', () => {
    // Act
    const projected = projectDataFile(
      dateFile,
      schema([{ id: 1, name: 'd', required: false, type: 'timestamp' }]),
      '{}',
      { formatVersion: 2 },
    );

    // Assess
    expect(projected.kind === 'refused' && projected.reason).toContain(
      'column d: it is timestamp now but date in the file, a promotion Iceberg allows from format version 3 only (the table is at 2)',
    );
  });

  it('refuses date → timestamptz, which no version allows', () => {
    // Act
    const projected = projectDataFile(
      dateFile,
      schema([{ id: 1, name: 'd', required: false, type: 'timestamptz' }]),
      '{}',
      { formatVersion: 3 },
    );

    // Assess
    expect(projected.kind === 'refused' && projected.reason).toContain(
      'column d: it is timestamptz now but date in the file, which is not a promotion Iceberg allows',
    );
  });

  it('widens a date to a timestamp_ns (days to their midnight in nanoseconds) in a v3 table', () => {
    // Act
    const projected = projectDataFile(
      dateFile,
      schema([{ id: 1, name: 'd', required: false, type: 'timestamp_ns' }]),
      '{}',
      { formatVersion: 3 },
    );

    // Assess
    expect(projected.kind === 'projected' && projected.projection.columns[0]).toEqual({
      field: { name: 'd', fieldId: 1, nullable: true, type: 'timestamp-ns' },
      source: { column: 'd', widen: 'date32-timestamp-ns' },
    });
  });

  it('refuses date → timestamptz_ns, which no version allows', () => {
    // Act
    const projected = projectDataFile(
      dateFile,
      schema([{ id: 1, name: 'd', required: false, type: 'timestamptz_ns' }]),
      '{}',
      { formatVersion: 3 },
    );

    // Assess
    expect(projected.kind === 'refused' && projected.reason).toContain(
      'column d: it is timestamptz_ns now but date in the file, which is not a promotion Iceberg allows',
    );
  });

  it('reads a nanosecond timestamp column as written (INT64 TIMESTAMP(NANOS), with and without UTC)', () => {
    // Prepare
    const nanos = (utc: boolean) => ({
      logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: utc, unit: 'NANOS' },
    });
    const file = [
      root(2),
      leaf('a', 'INT64', 1, nanos(false) as Partial<SchemaElement>),
      leaf('b', 'INT64', 2, nanos(true) as Partial<SchemaElement>),
    ];
    const current = schema([
      { id: 1, name: 'a', required: false, type: 'timestamp_ns' },
      { id: 2, name: 'b', required: false, type: 'timestamptz_ns' },
      { id: 3, name: 'c', required: false, type: 'int' },
    ]);

    // Act
    const projected = projectDataFile(file, current, '{}', { formatVersion: 3 });

    // Assess
    expect(projected.kind === 'projected' && projected.projection.columns.slice(0, 2)).toEqual([
      { field: { name: 'a', fieldId: 1, nullable: true, type: 'timestamp-ns' }, source: { column: 'a' } },
      { field: { name: 'b', fieldId: 2, nullable: true, type: 'timestamp-ns-utc' }, source: { column: 'b' } },
    ]);
  });
});

describe("projectDataFile: a v3 table's row lineage columns", () => {
  const ROW_ID = 2147483540;
  const SEQ = 2147483539;
  const current = schema([ID_FIELD, { id: 2, name: 'note', required: false, type: 'string' }]);
  const lineageColumns = [
    {
      field: { name: '_row_id', fieldId: ROW_ID, nullable: true, type: 'int64' },
      source: { column: '_row_id' },
    },
    {
      field: { name: '_last_updated_sequence_number', fieldId: SEQ, nullable: true, type: 'int64' },
      source: { column: '_last_updated_sequence_number' },
    },
  ];

  it("are written after the schema's columns, from the file's own where it has them, never taken for dropped columns", () => {
    // Prepare: a file rewritten before (lineage stored), without the column added since
    const file = [
      root(3),
      leaf('id', 'INT64', 1),
      leaf('_row_id', 'INT64', ROW_ID),
      leaf('_last_updated_sequence_number', 'INT64', SEQ),
    ];

    // Act
    const projected = projectDataFile(file, current, '{}', { formatVersion: 3 });

    // Assess
    expect(projected.kind === 'projected' && projected.projection.columns).toEqual([
      { field: { name: 'id', fieldId: 1, nullable: true, type: 'int64' }, source: { column: 'id' } },
      { field: { name: 'note', fieldId: 2, nullable: true, type: 'string' } },
      ...lineageColumns,
    ]);
  });

  it('are appended for a file without them (the engine fills them before projecting)', () => {
    // Act
    const projected = projectDataFile(ID_ONLY, schema([ID_FIELD]), '{}', { formatVersion: 3 });

    // Assess
    expect(projected.kind === 'projected' && projected.projection.columns.slice(1)).toEqual(lineageColumns);
  });

  it('do not stop a file of the current schema from being rewritten as written', () => {
    // Prepare
    const file = [
      root(3),
      leaf('id', 'INT64', 1),
      leaf('_row_id', 'INT64', ROW_ID),
      leaf('note', 'BYTE_ARRAY', 2, { logical_type: { type: 'STRING' } }),
    ];
    const trailing = [
      root(3),
      leaf('id', 'INT64', 1),
      leaf('note', 'BYTE_ARRAY', 2, { logical_type: { type: 'STRING' } }),
      leaf('_row_id', 'INT64', ROW_ID),
    ];
    const project = (elements: SchemaElement[]) => {
      const p = projectDataFile(elements, current, '{}', { formatVersion: 3 });
      if (p.kind !== 'projected') throw new Error(p.kind);
      return projectionRestatesFile(elements, current, p.projection, { formatVersion: 3 });
    };

    // Act / Assess: lineage after the schema's columns restates it; lineage in between does not
    expect(project(trailing)).toBe(true);
    expect(project(file)).toBe(false);
  });

  it('are not added in a v2 table', () => {
    // Act
    const projected = projectDataFile(ID_ONLY, schema([ID_FIELD]), '{}', { formatVersion: 2 });

    // Assess
    expect(projected.kind === 'projected' && projected.projection.columns).toHaveLength(1);
  });
});

describe('columnProjectionSchema: default values in a plan', () => {
  const column = (type: unknown, extra: Record<string, unknown>) => ({
    columns: [{ field: { name: 'c', fieldId: 1, nullable: true, type }, ...extra }],
    keyValueMetadata: {},
  });

  it.each([
    [
      'beside a source',
      column('int32', { source: { column: 'c' }, default: 1 }),
      'both a source and a default',
    ],
    ['an int64 as a number', column('int64', { default: 1 }), 'decimal string of a 64-bit integer'],
    ['an int32 out of range', column('int32', { default: 2 ** 31 }), 'an int32'],
    [
      'a decimal past its precision',
      column({ decimal: { precision: 2, scale: 0 } }, { default: '123' }),
      'has 3 digits',
    ],
    ['binary in uppercase hex', column('binary', { default: 'FF' }), 'lowercase hex'],
    [
      'a struct default missing a field',
      column(
        {
          struct: [
            { name: 'x', nullable: true, type: 'int32' },
            { name: 'y', nullable: true, type: 'int32' },
          ],
        },
        {
          default: { struct: [1] },
        },
      ),
      'for each of its 2 fields',
    ],
    [
      'a struct default null for a required field',
      column({ struct: [{ name: 'x', nullable: false, type: 'int32' }] }, { default: { struct: [null] } }),
      'field x is required',
    ],
    ['a struct default of a primitive', column('int32', { default: { struct: [] } }), 'has no struct value'],
    [
      'a nested field default of the wrong type',
      column(
        { struct: [{ name: 'x', nullable: true, type: 'boolean' }] },
        { source: { column: 'c', fields: [{ default: 'yes' }] } },
      ),
      'c.x: a boolean',
    ],
  ])('refuses a default %s', (_what, plan, why) => {
    // Act
    const parsed = columnProjectionSchema.safeParse(plan);

    // Assess
    expect(parsed.success).toBe(false);
    expect(JSON.stringify(parsed.error?.issues)).toContain(why);
  });
});

describe('projectDataFile: the unknown type (v3), always null and never stored', () => {
  const unknownField = (id: number, name: string, extra: Record<string, unknown> = {}) => ({
    id,
    name,
    required: false,
    type: 'unknown',
    ...extra,
  });

  it('writes no column for a top-level or struct field of the unknown type, and a file of the current schema is restated', () => {
    // Prepare: the file holds id and p{x}; the schema adds u (unknown) and p.v (unknown)
    const file = [
      root(2),
      leaf('id', 'INT64', 1),
      { name: 'p', field_id: 3, num_children: 1, repetition_type: 'OPTIONAL' } as SchemaElement,
      leaf('x', 'INT32', 4),
    ];
    const current = schema([
      ID_FIELD,
      unknownField(2, 'u'),
      {
        id: 3,
        name: 'p',
        required: false,
        type: {
          type: 'struct',
          fields: [{ id: 4, name: 'x', required: false, type: 'int' }, unknownField(5, 'v')],
        },
      },
    ]);

    // Act
    const projected = projectDataFile(file, current, '{}', { formatVersion: 3 });

    // Assess: id and p{x} from the file, nothing for u or p.v, and the projection only restates the file
    if (projected.kind !== 'projected') throw new Error(JSON.stringify(projected));
    expect(projected.projection.columns.slice(0, 2)).toEqual([
      { field: { name: 'id', fieldId: 1, nullable: true, type: 'int64' }, source: { column: 'id' } },
      {
        field: {
          name: 'p',
          fieldId: 3,
          nullable: true,
          type: { struct: [{ name: 'x', fieldId: 4, nullable: true, type: 'int32' }] },
        },
        source: { column: 'p' },
      },
    ]);
    expect(projectionRestatesFile(file, current, projected.projection, { formatVersion: 3 })).toBe(true);
  });

  it('reads a column promoted from unknown as null in a file written while it was unknown', () => {
    // Act
    const column = addedColumn({ id: 2, name: 'w', required: false, type: 'long' }, 3);

    // Assess
    expect(column).toEqual({ field: { name: 'w', fieldId: 2, nullable: true, type: 'int64' } });
  });

  it.each([
    [
      'a non-null initial-default',
      [unknownField(2, 'u', { 'initial-default': 1 })],
      ID_ONLY,
      'column u: it is of the unknown type with the initial-default 1, but an unknown column',
    ],
    [
      'a required unknown column',
      [{ ...unknownField(2, 'u'), required: true }],
      ID_ONLY,
      'column u: it is of the unknown type but required',
    ],
    [
      'a file storing a column of its field id',
      [unknownField(2, 'u')],
      [root(2), leaf('id', 'INT64', 1), leaf('u', 'INT32', 2)],
      'column u: it is of the unknown type, which is never stored in data files, but the file has a column of its field id',
    ],
  ])('refuses %s by name, the file left alone', (_what, added, file, why) => {
    // Act
    const projected = projectDataFile(file as SchemaElement[], schema([ID_FIELD, ...added]), '{}', {
      formatVersion: 3,
    });

    // Assess
    expect(projected.kind).toBe('refused');
    expect(projected.kind === 'refused' && projected.reason).toContain(why);
  });
});
