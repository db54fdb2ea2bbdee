// REPRODUCTIONS, not the originals: five files of apache/parquet-testing (`data/`) that real lakes hold and that
// this engine once failed on, rebuilt here with the same features because the originals are not reachable from
// the machines the tests run on (no package of the npm registry ships them). Each is written by hyparquet-writer
// (pages) and given its distinctive footer with the project's Thrift codec, or, for the >2 GiB string map, written
// page by page. What each original is, from parquet-testing's `data/README.md` and the pull requests that added
// them, is said at each function; test/fixtures/NOTICE.md says the same.

import { once } from 'node:events';
import { brotliCompressSync, constants, createBrotliCompress } from 'node:zlib';
import { parquetWriteBuffer } from 'hyparquet-writer';
import {
  encodeStruct,
  field,
  setField,
  T,
  type ThriftList,
  type ThriftStruct,
  type ThriftValue,
} from '../../functions/core/parquet/thrift-compact.js';
import { patchFooter } from './legacy-parquet.js';

type WriteOptions = Parameters<typeof parquetWriteBuffer>[0];

const utf8 = new TextEncoder();
const text = new TextDecoder();

/** Thrift field ids of parquet.thrift used below. */
const FMD_SCHEMA = 2;
const FMD_NUM_ROWS = 3;
const FMD_ROW_GROUPS = 4;
const RG_COLUMNS = 1;
const RG_NUM_ROWS = 3;
const CC_META = 3;
const CMD_PATH = 3;
const CMD_NUM_VALUES = 5;
const CMD_KV = 8;
const CMD_DATA_PAGE_OFFSET = 9;
const CMD_DICTIONARY_PAGE_OFFSET = 11;
const SE_NAME = 4;
const SE_NUM_CHILDREN = 5;
const SE_CONVERTED = 6;
const SE_LOGICAL = 10;
const MAP_KEY_VALUE = 2;

function write(options: Omit<WriteOptions, 'writer'>): Uint8Array {
  return new Uint8Array(parquetWriteBuffer({ codec: 'UNCOMPRESSED', ...options } as WriteOptions));
}

function list(s: ThriftStruct, id: number): ThriftStruct[] {
  return ((field(s, id)?.value as ThriftList | undefined)?.items ?? []) as ThriftStruct[];
}

const nameOf = (e: ThriftStruct): string => text.decode(field(e, SE_NAME)?.value as Uint8Array);

function columnMetas(meta: ThriftStruct): ThriftStruct[] {
  return list(meta, FMD_ROW_GROUPS).flatMap((g) =>
    list(g, RG_COLUMNS).map((c) => field(c, CC_META)?.value as ThriftStruct),
  );
}

/**
 * Reproduction of `column_chunk_key_value_metadata.parquet` (parquet-testing PR #49, written by Arrow C++'s
 * low-level writer): one row group of ZERO rows, two optional INT32 columns `column1`, `column2`, the first with
 * column-chunk key-value metadata `{"foo": "bar", "thisiskeywithoutvalue": <no value>}`. Arrow C++ writes no data
 * page for a column without values, so each chunk holds only its (empty) dictionary page and its
 * `data_page_offset` stays 0 — the field that made the footer reader call the chunk "outside the data region".
 */
export function columnChunkKeyValueMetadataFile(): Uint8Array {
  const file = write({
    columnData: [
      { name: 'column1', data: [1] },
      { name: 'column2', data: [2] },
    ],
    schema: [
      { name: 'schema', num_children: 2 },
      { name: 'column1', type: 'INT32', repetition_type: 'OPTIONAL' },
      { name: 'column2', type: 'INT32', repetition_type: 'OPTIONAL' },
    ],
  } as never);
  return patchFooter(file, (meta) => {
    setField(meta, FMD_NUM_ROWS, T.I64, 0n);
    for (const group of list(meta, FMD_ROW_GROUPS)) setField(group, RG_NUM_ROWS, T.I64, 0n);
    for (const [i, m] of columnMetas(meta).entries()) {
      // The chunk's bytes stay where they are, now counted as its dictionary page; no data page offset.
      const start = field(m, CMD_DATA_PAGE_OFFSET)?.value as bigint;
      setField(m, CMD_NUM_VALUES, T.I64, 0n);
      setField(m, CMD_DICTIONARY_PAGE_OFFSET, T.I64, start);
      setField(m, CMD_DATA_PAGE_OFFSET, T.I64, 0n);
      if (i === 0) {
        setField(m, CMD_KV, T.LIST, {
          elementType: T.STRUCT,
          items: [
            {
              fields: [
                { id: 1, type: T.BINARY, value: utf8.encode('foo') },
                { id: 2, type: T.BINARY, value: utf8.encode('bar') },
              ],
            },
            { fields: [{ id: 1, type: T.BINARY, value: utf8.encode('thisiskeywithoutvalue') }] },
          ],
        });
      }
    }
  });
}

/** The rows of `repeated_no_annotation.parquet` as parquet-testing's readers expect them (arrow-rs's test). */
export const REPEATED_NO_ANNOTATION_ROWS: readonly {
  id: number;
  phoneNumbers: { phone: { number: bigint; kind: string | null }[] } | null;
}[] = [
  { id: 1, phoneNumbers: null },
  { id: 2, phoneNumbers: null },
  { id: 3, phoneNumbers: { phone: [] } },
  { id: 4, phoneNumbers: { phone: [{ number: 5555555555n, kind: null }] } },
  { id: 5, phoneNumbers: { phone: [{ number: 1111111111n, kind: 'home' }] } },
  {
    id: 6,
    phoneNumbers: {
      phone: [
        { number: 1111111111n, kind: 'home' },
        { number: 2222222222n, kind: null },
        { number: 3333333333n, kind: 'mobile' },
      ],
    },
  },
];

/**
 * Reproduction of `repeated_no_annotation.parquet` (parquet-mr's test file of a repeated group without a LIST
 * annotation):
 * `message user { required int32 id; optional group phoneNumbers { repeated group phone { required int64 number;
 * optional binary kind (UTF8); } } }`, with {@link REPEATED_NO_ANNOTATION_ROWS}. Written as
 * `phoneNumbers { required group phone (LIST) { repeated group list { required group element {…} } } }`, whose
 * levels are the same, then the two middle groups are dropped from the footer: every page stays valid.
 */
export function repeatedNoAnnotationFile(): Uint8Array {
  const file = write({
    columnData: [
      { name: 'id', data: Int32Array.from(REPEATED_NO_ANNOTATION_ROWS, (r) => r.id) },
      {
        name: 'phoneNumbers',
        data: REPEATED_NO_ANNOTATION_ROWS.map((r) =>
          r.phoneNumbers === null ? null : { phone: r.phoneNumbers.phone.map((p) => ({ ...p })) },
        ),
      },
    ],
    schema: [
      { name: 'user', num_children: 2 },
      { name: 'id', type: 'INT32', repetition_type: 'REQUIRED' },
      { name: 'phoneNumbers', repetition_type: 'OPTIONAL', num_children: 1 },
      { name: 'phone', repetition_type: 'REQUIRED', converted_type: 'LIST', num_children: 1 },
      { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
      { name: 'element', repetition_type: 'REQUIRED', num_children: 2 },
      { name: 'number', type: 'INT64', repetition_type: 'REQUIRED' },
      { name: 'kind', type: 'BYTE_ARRAY', repetition_type: 'OPTIONAL', converted_type: 'UTF8' },
    ],
  } as never);
  return patchFooter(file, (meta) => {
    const schema = field(meta, FMD_SCHEMA)?.value as ThriftList;
    const elements = schema.items as ThriftStruct[];
    const phone = elements.findIndex((e) => nameOf(e) === 'phone');
    // `list` becomes the repeated group `phone` with `element`'s two children.
    const repeated = elements[phone + 1] as ThriftStruct;
    setField(repeated, SE_NAME, T.BINARY, utf8.encode('phone'));
    setField(repeated, SE_NUM_CHILDREN, T.I32, 2);
    schema.items = elements.filter((_, i) => i !== phone && i !== phone + 2);
    for (const m of columnMetas(meta)) {
      const path = field(m, CMD_PATH)?.value as ThriftList;
      const names = path.items.map((p) => text.decode(p as Uint8Array));
      if (names[0] !== 'phoneNumbers') continue;
      path.items = ['phoneNumbers', 'phone', ...names.slice(4)].map((n) => utf8.encode(n));
    }
  });
}

/**
 * Reproduction of `unknown-logical-type.parquet` (parquet-testing PR #72: pyarrow with GEOMETRY's LogicalType id
 * hacked to 2555): optional BYTE_ARRAY `column with known type` (STRING) and `column with unknown type`, whose
 * LogicalType union holds only field 2555 (an empty struct), a type no reader knows yet.
 */
export function unknownLogicalTypeFile(): Uint8Array {
  const file = write({
    columnData: [
      { name: 'column with known type', data: ['known string 1', 'known string 2', 'known string 3'] },
      {
        name: 'column with unknown type',
        data: ['unknown bytes 1', 'unknown bytes 2', 'unknown bytes 3'].map((s) => utf8.encode(s)),
      },
    ],
    schema: [
      { name: 'schema', num_children: 2 },
      {
        name: 'column with known type',
        type: 'BYTE_ARRAY',
        repetition_type: 'OPTIONAL',
        converted_type: 'UTF8',
        logical_type: { type: 'STRING' },
      },
      { name: 'column with unknown type', type: 'BYTE_ARRAY', repetition_type: 'OPTIONAL' },
    ],
  } as never);
  return patchFooter(file, (meta) => {
    const element = list(meta, FMD_SCHEMA).find((e) => nameOf(e) === 'column with unknown type');
    if (element === undefined) throw new Error('no column with unknown type');
    setField(element, SE_LOGICAL, T.STRUCT, {
      fields: [{ id: 2555, type: T.STRUCT, value: { fields: [] } }],
    });
  });
}

/**
 * Reproduction of `incorrect_map_schema.parquet` (written by Presto/Trino before v386 / v0.274, and Athena): a MAP
 * whose keys are OPTIONAL, against the spec —
 * `message hive_schema { optional group my_map (MAP) { repeated group key_value (MAP_KEY_VALUE) {
 * optional binary key (UTF8); optional binary value (UTF8); } } }` — holding `{name: report, parent: another}`,
 * with a second row (null map) and a third (empty map) added here to cover both; `rows` gives other entries (a
 * null key, which the spec forbids and no reader can map).
 */
export function incorrectMapSchemaFile(
  rows: readonly (readonly { key: string | null; value: string | null }[] | null)[] = [
    [
      { key: 'name', value: 'report' },
      { key: 'parent', value: 'another' },
    ],
    null,
    [],
  ],
): Uint8Array {
  const file = write({
    // Entries as a list of {key, value}: the writer then writes a null key as null (an object's keys cannot be).
    columnData: [{ name: 'my_map', data: rows.map((r) => (r === null ? null : r.map((e) => ({ ...e })))) }],
    schema: [
      { name: 'hive_schema', num_children: 1 },
      { name: 'my_map', repetition_type: 'OPTIONAL', converted_type: 'MAP', num_children: 1 },
      { name: 'key_value', repetition_type: 'REPEATED', num_children: 2 },
      { name: 'key', type: 'BYTE_ARRAY', repetition_type: 'OPTIONAL', converted_type: 'UTF8' },
      { name: 'value', type: 'BYTE_ARRAY', repetition_type: 'OPTIONAL', converted_type: 'UTF8' },
    ],
  } as never);
  return patchFooter(file, (meta) => {
    const group = list(meta, FMD_SCHEMA).find((e) => nameOf(e) === 'key_value') as ThriftStruct;
    setField(group, SE_CONVERTED, T.I32, MAP_KEY_VALUE);
  });
}

/** Compact Thrift struct from `[id, type, value]` triples. */
const struct = (...fields: [number, number, ThriftValue][]): ThriftStruct => ({
  fields: fields.map(([id, type, value]) => ({ id, type, value })),
});
const i32 = (id: number, v: number): [number, number, ThriftValue] => [id, T.I32, v];
const i64 = (id: number, v: number | bigint): [number, number, ThriftValue] => [id, T.I64, BigInt(v)];
const bin = (id: number, v: string): [number, number, ThriftValue] => [id, T.BINARY, utf8.encode(v)];
const sub = (id: number, v: ThriftStruct): [number, number, ThriftValue] => [id, T.STRUCT, v];
const lst = (id: number, elementType: number, items: ThriftValue[]): [number, number, ThriftValue] => [
  id,
  T.LIST,
  { elementType, items },
];

/** A v1 data page header (PLAIN values, RLE levels) for `values` values. */
function dataPageHeader(values: number, uncompressed: number, compressed: number): Uint8Array {
  return encodeStruct(
    struct(
      i32(1, 0),
      i32(2, uncompressed),
      i32(3, compressed),
      sub(5, struct(i32(1, values), i32(2, 0), i32(3, 3), i32(4, 3))),
    ),
  );
}

/** One RLE run of `count` copies of `value` (1-byte value), with the 4-byte length prefix of v1 pages. */
function rleLevels(count: number, value: number): Uint8Array {
  return Uint8Array.of(2, 0, 0, 0, count << 1, value);
}

async function brotliOf(
  parts: readonly Uint8Array[],
  repeats: { byte: number; length: number },
): Promise<Uint8Array> {
  const encoder = createBrotliCompress({ params: { [constants.BROTLI_PARAM_QUALITY]: 1 } });
  const chunks: Buffer[] = [];
  encoder.on('data', (c: Buffer) => chunks.push(c));
  const ended = once(encoder, 'end');
  for (const p of parts) encoder.write(p);
  const block = Buffer.alloc(1 << 20, repeats.byte);
  for (let left = repeats.length; left > 0; left -= block.length) {
    const piece = left >= block.length ? block : block.subarray(0, left);
    if (!encoder.write(piece)) await once(encoder, 'drain');
  }
  encoder.end();
  await ended;
  return new Uint8Array(Buffer.concat(chunks));
}

/**
 * Reproduction of `large_string_map.brotli.parquet` (pyarrow, BROTLI): `arr MAP<STRING, INT32>`, two rows each
 * `{"a" * 2^30: 1}`, so the key column chunk of its one row group decodes to more than 2 GiB while each value is
 * under it. Written page by page (one 1 GiB value per data page, as a page's size is an i32), streaming the
 * compression, so building it takes about a second and little memory; the file is a few hundred KB.
 */
export async function largeStringMapFile(valueBytes = 2 ** 30): Promise<Uint8Array> {
  const parts: Uint8Array[] = [Uint8Array.of(0x50, 0x41, 0x52, 0x31)];
  let at = 4;
  // Key column: per page, rep level 0, def level 2 (max), then the PLAIN value (4-byte length + bytes).
  const keyStart = at;
  let keyUncompressed = 0;
  let keyCompressed = 0;
  for (let row = 0; row < 2; row++) {
    const length = new Uint8Array(4);
    new DataView(length.buffer).setUint32(0, valueBytes, true);
    const prefix = [rleLevels(1, 0), rleLevels(1, 2), length];
    const uncompressed = 12 + 4 + valueBytes;
    const body = await brotliOf(prefix, { byte: 0x61, length: valueBytes });
    const header = dataPageHeader(1, uncompressed, body.length);
    parts.push(header, body);
    at += header.length + body.length;
    keyUncompressed += header.length + uncompressed;
    keyCompressed += header.length + body.length;
  }
  // Value column: one page of both rows, rep 0, def 3 (max), values 1 and 1.
  const valueStart = at;
  const raw = Uint8Array.of(...rleLevels(2, 0), ...rleLevels(2, 3), 1, 0, 0, 0, 1, 0, 0, 0);
  const body = new Uint8Array(brotliCompressSync(raw));
  const header = dataPageHeader(2, raw.length, body.length);
  parts.push(header, body);
  at += header.length + body.length;
  const valueUncompressed = header.length + raw.length;
  const valueCompressed = header.length + body.length;

  const BROTLI = 4;
  const chunk = (
    path: string[],
    type: number,
    start: number,
    uncompressed: number,
    compressed: number,
  ): ThriftStruct =>
    struct(
      i64(2, start + compressed),
      sub(
        3,
        struct(
          i32(1, type),
          lst(2, T.I32, [0, 3]),
          lst(
            3,
            T.BINARY,
            path.map((p) => utf8.encode(p)),
          ),
          i32(4, BROTLI),
          i64(5, 2),
          i64(6, uncompressed),
          i64(7, compressed),
          i64(9, start),
        ),
      ),
    );
  const meta = struct(
    i32(1, 1),
    lst(2, T.STRUCT, [
      struct(bin(4, 'schema'), i32(5, 1)),
      struct(i32(3, 1), bin(4, 'arr'), i32(5, 1), i32(6, 1), sub(10, struct(sub(2, struct())))),
      struct(i32(3, 2), bin(4, 'key_value'), i32(5, 2)),
      struct(i32(1, 6), i32(3, 0), bin(4, 'key'), i32(6, 0), sub(10, struct(sub(1, struct())))),
      struct(i32(1, 1), i32(3, 1), bin(4, 'value')),
    ]),
    i64(3, 2),
    lst(4, T.STRUCT, [
      struct(
        lst(1, T.STRUCT, [
          chunk(['arr', 'key_value', 'key'], 6, keyStart, keyUncompressed, keyCompressed),
          chunk(['arr', 'key_value', 'value'], 1, valueStart, valueUncompressed, valueCompressed),
        ]),
        i64(2, keyUncompressed + valueUncompressed),
        i64(3, 2),
      ),
    ]),
    bin(6, 'parquet-cpp-arrow version 16.0.0 (reproduction)'),
  );
  const footer = encodeStruct(meta);
  const trailer = new Uint8Array(8);
  new DataView(trailer.buffer).setUint32(0, footer.length, true);
  trailer.set([0x50, 0x41, 0x52, 0x31], 4);
  parts.push(footer, trailer);
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let pos = 0;
  for (const p of parts) {
    out.set(p, pos);
    pos += p.length;
  }
  return out;
}
