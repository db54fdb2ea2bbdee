// Pre-flight's last check of a projected group: the trial output's footer, read back as every projection reads a
// file, must store each column as the projection says — type, annotation, nested shape and nested field ids — or the
// group is refused before anything is written. The writer stores every projection this project builds correctly, so
// these crafted footers stand for a writer that would not (a lost annotation, another unit, another list form, a
// dropped nested id): the check must name the column and both types.
import type { SchemaElement } from 'hyparquet';
import { describe, expect, it } from 'vitest';
import {
  type ColumnProjection,
  footerSchemaTree,
  mistypedColumn,
} from '../../../functions/core/projection.js';

const PROJECTION: ColumnProjection = {
  columns: [
    { field: { name: 'u', fieldId: 1, nullable: true, type: 'uuid' }, source: { column: 'u' } },
    { field: { name: 't', fieldId: 2, nullable: true, type: 'time-us' }, source: { column: 't' } },
    {
      field: {
        name: 'tags',
        fieldId: 3,
        nullable: true,
        type: { list: { name: 'element', fieldId: 4, nullable: true, type: 'int64' } },
      },
      source: { column: 'tags' },
    },
  ],
  keyValueMetadata: {},
};

const UUID: SchemaElement = {
  name: 'u',
  type: 'FIXED_LEN_BYTE_ARRAY',
  type_length: 16,
  repetition_type: 'OPTIONAL',
  field_id: 1,
  logical_type: { type: 'UUID' },
};
const TIME: SchemaElement = {
  name: 't',
  type: 'INT64',
  repetition_type: 'OPTIONAL',
  field_id: 2,
  logical_type: { type: 'TIME', isAdjustedToUTC: false, unit: 'MICROS' },
};
const TAGS: readonly SchemaElement[] = [
  { name: 'tags', repetition_type: 'OPTIONAL', num_children: 1, field_id: 3, logical_type: { type: 'LIST' } },
  { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
  { name: 'element', type: 'INT64', repetition_type: 'OPTIONAL', field_id: 4 },
];

/** The footer tree of a written file holding `columns` (each its flat schema elements). */
function written(...columns: (SchemaElement | readonly SchemaElement[])[]) {
  const flat = columns.flatMap((c) => (Array.isArray(c) ? c : [c])) as SchemaElement[];
  return footerSchemaTree([{ name: 'schema', num_children: columns.length }, ...flat]);
}

describe('mistypedColumn: a written footer checked against its projection', () => {
  it('finds nothing when every column is stored as projected', () => {
    // Act
    const found = mistypedColumn(written(UUID, TIME, TAGS), PROJECTION);

    // Assess
    expect(found).toBeUndefined();
  });

  it.each([
    [
      'a uuid stored without its UUID annotation',
      written({ ...UUID, logical_type: undefined }, TIME, TAGS),
      { column: 'u', stored: 'fixed(16)', type: 'uuid' },
    ],
    [
      'a time of day stored in milliseconds',
      written(
        UUID,
        { ...TIME, type: 'INT32', logical_type: { type: 'TIME', isAdjustedToUTC: false, unit: 'MILLIS' } },
        TAGS,
      ),
      {
        column: 't',
        stored: 'INT32 {"type":"TIME","isAdjustedToUTC":false,"unit":"MILLIS"}',
        type: 'time-us',
      },
    ],
    [
      'a list stored in a two-level form',
      written(UUID, TIME, [
        { ...(TAGS[0] as SchemaElement), num_children: 1 },
        { name: 'element', type: 'INT64', repetition_type: 'REPEATED', field_id: 4 },
      ]),
      { column: 'tags', stored: 'another shape', type: 'list<int64>' },
    ],
    [
      "a list element stored without the table's field id",
      written(UUID, TIME, [
        TAGS[0] as SchemaElement,
        TAGS[1] as SchemaElement,
        { ...(TAGS[2] as SchemaElement), field_id: undefined },
      ]),
      { column: 'tags.element', stored: 'field id (none)', type: 'field id 4' },
    ],
  ])('names %s, with the type it has and the one the table has', (_what, footer, expected) => {
    // Act
    const found = mistypedColumn(footer, PROJECTION);

    // Assess
    expect(found).toEqual(expected);
  });
});
