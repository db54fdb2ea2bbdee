// The UUID annotation given to a written footer (core/parquet/uuid-annotation.ts): the column at each path — top
// level or inside a struct — gains the UUID logical type, every byte before the footer stays as written, and a path
// that names no FIXED_LEN_BYTE_ARRAY(16) column is refused by name rather than annotated.
import {
  Field,
  FixedSizeBinary,
  Int32,
  makeData,
  RecordBatch,
  Schema,
  Struct,
  Table,
  tableFromIPC,
  tableToIPC,
} from 'apache-arrow';
import { parquetMetadata } from 'hyparquet';
import * as pw from 'parquet-wasm';
import { describe, expect, it } from 'vitest';
import {
  UuidAnnotationError,
  withUuidAnnotations,
} from '../../../../functions/core/parquet/uuid-annotation.js';

const BYTES = Uint8Array.from({ length: 32 }, (_, i) => i);

/** A two-row file: u FLBA(16), s struct<v FLBA(16), n int32>, f FLBA(3), as the Arrow writer stores them. */
function written(): Uint8Array {
  const u = new Field('u', new FixedSizeBinary(16), true);
  const inner = [new Field('v', new FixedSizeBinary(16), true), new Field('n', new Int32(), true)];
  const s = new Field('s', new Struct(inner), true);
  const f = new Field('f', new FixedSizeBinary(3), true);
  const schema = new Schema([u, s, f]);
  const children = [
    makeData({ type: u.type, length: 2, nullCount: 0, data: BYTES.slice() }),
    makeData({
      type: s.type,
      length: 2,
      nullCount: 0,
      children: [
        makeData({ type: inner[0]?.type as FixedSizeBinary, length: 2, nullCount: 0, data: BYTES.slice() }),
        makeData({ type: new Int32(), length: 2, nullCount: 0, data: Int32Array.of(1, 2) }),
      ],
    }),
    makeData({ type: f.type, length: 2, nullCount: 0, data: BYTES.slice(0, 6) }),
  ];
  const struct = makeData({ type: new Struct(schema.fields), length: 2, nullCount: 0, children });
  return pw.writeParquet(
    pw.Table.fromIPCStream(tableToIPC(new Table([new RecordBatch(schema, struct)]), 'stream')),
  );
}

function schemaOf(file: Uint8Array) {
  return parquetMetadata(file.buffer.slice(file.byteOffset, file.byteOffset + file.byteLength) as ArrayBuffer)
    .schema;
}

describe('withUuidAnnotations', () => {
  it('annotates a top-level and a nested 16-byte column UUID, leaving every other element and every byte before the footer as written', () => {
    // Prepare
    const file = written();
    const length = new DataView(file.buffer, file.byteOffset + file.length - 8, 4).getUint32(0, true);
    const footerAt = file.length - 8 - length;

    // Act
    const out = withUuidAnnotations(file, [['u'], ['s', 'v']]);

    // Assess
    expect(Buffer.from(out.subarray(0, footerAt)).equals(Buffer.from(file.subarray(0, footerAt)))).toBe(true);
    const before = schemaOf(file);
    const after = schemaOf(out);
    expect(after.map((e) => [e.name, e.logical_type?.type])).toEqual([
      ['arrow_schema', undefined],
      ['u', 'UUID'],
      ['s', undefined],
      ['v', 'UUID'],
      ['n', undefined],
      ['f', undefined],
    ]);
    expect(after.map(({ logical_type: _l, ...rest }) => rest)).toEqual(
      before.map(({ logical_type: _l, ...rest }) => rest),
    );
    // the values read back are the bytes written
    const table = tableFromIPC(pw.readParquet(out).intoIPCStream());
    expect([...((table.getChild('u')?.data[0]?.values ?? []) as Uint8Array)]).toEqual([...BYTES]);
  });

  it.each([
    ['a column that is not 16 bytes', ['f']],
    ['a group', ['s']],
    ['a column that does not exist', ['s', 'missing']],
  ])('refuses %s by name', (_what, path) => {
    // Act / Assess
    expect(() => withUuidAnnotations(written(), [path])).toThrow(UuidAnnotationError);
    expect(() => withUuidAnnotations(written(), [path])).toThrow(
      `column ${path.join('.')} was not written as FIXED_LEN_BYTE_ARRAY(16)`,
    );
  });

  it('returns the bytes untouched when no column is named', () => {
    // Prepare
    const file = written();

    // Act / Assess
    expect(withUuidAnnotations(file, [])).toBe(file);
  });
});
