// The log rows a Merge-on-Read compaction writes as its rewrite's second input (logRowsParquet): a Parquet file in the
// base file's schema and key-value metadata, less Hudi's index entries. A base file whose only footer entries are
// those index keys leaves no entry at all, and the file must still be one the engine's reader (parquet-wasm) reads:
// an empty key-value list is written with no element type, which it refuses. A log decimal is written into the base
// file's own decimal column (FIXED_LEN_BYTE_ARRAY of its length, INT32, INT64) digit for digit, or refused by name when
// that column cannot hold it exactly (another scale, more digits, a value its log schema did not declare a decimal).
import { tableFromIPC } from 'apache-arrow';
import { parquetMetadata } from 'hyparquet';
import { parquetWriteBuffer } from 'hyparquet-writer';
import * as pw from 'parquet-wasm';
import { describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../../functions/adapters/memory-object-store.js';
import { HUDI_INDEX_FOOTER_KEYS } from '../../../../../functions/core/formats/hudi/bloom/index.js';
import { HudiCompactionUnsupportedError } from '../../../../../functions/core/formats/hudi/compaction-errors.js';
import {
  checkSliceWritable,
  logRowsParquet,
} from '../../../../../functions/core/formats/hudi/compaction-merge.js';
import { readRowsExact } from '../../../../../functions/core/formats/hudi/log/parquet-rows.js';

describe('logRowsParquet', () => {
  it('writes a file the engine reads when the base file carried only Hudi index entries in its footer', () => {
    // Prepare: a base file whose footer holds Hudi's min/max record keys and nothing else
    const base = parquetWriteBuffer({
      columnData: [
        { name: '_hoodie_record_key', data: ['k1', 'k2'], type: 'STRING' },
        { name: 'fare', data: [1.5, 2.5], type: 'DOUBLE' },
      ],
      kvMetadata: HUDI_INDEX_FOOTER_KEYS.slice(2).map((key) => ({ key, value: 'k1' })),
    });
    const baseMetadata = parquetMetadata(base);
    const merged = {
      merge: { dropPositions: [1], append: [{ _hoodie_record_key: 'k2', fare: 9.75 }] },
      counts: {
        baseRows: 2,
        logRecords: 1,
        logBlocks: 1,
        corruptBlocks: 0,
        rollbackBlocks: 0,
        keysTouched: 1,
      },
      baseMetadata,
    } as unknown as Parameters<typeof logRowsParquet>[0];

    // Act
    const written = logRowsParquet(merged, 'slice f1 of partition p');
    const table = tableFromIPC(pw.readParquet(written.bytes).intoIPCStream());

    // Assess
    expect(written.rows).toBe(1);
    expect(table.numRows).toBe(1);
    expect(table.getChild('fare')?.get(0)).toBe(9.75);
    expect(parquetMetadata(written.bytes.buffer.slice(0) as ArrayBuffer).key_value_metadata ?? []).toEqual(
      [],
    );
  });
});

/** A base file of a key and two decimal columns: decimal(20, 2) in FIXED_LEN_BYTE_ARRAY(9), decimal(9, 3) in INT32. */
function decimalBase(): ArrayBuffer {
  const decimal = (name: string, type: string, precision: number, scale: number, typeLength?: number) => ({
    name,
    type,
    ...(typeLength === undefined ? {} : { type_length: typeLength }),
    repetition_type: 'OPTIONAL',
    converted_type: 'DECIMAL',
    logical_type: { type: 'DECIMAL', precision, scale },
    precision,
    scale,
  });
  return parquetWriteBuffer({
    columnData: [
      { name: '_hoodie_record_key', data: ['k1'] },
      { name: 'amount', data: [1n] },
      { name: 'rate', data: [1n] },
    ],
    schema: [
      { name: 'root', num_children: 3 },
      { name: '_hoodie_record_key', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' },
      decimal('amount', 'FIXED_LEN_BYTE_ARRAY', 20, 2, 9),
      decimal('rate', 'INT32', 9, 3),
    ],
  } as never);
}

/** The merge of one base file with `append` as its log rows, as logRowsParquet takes it. */
function mergedWith(
  base: ArrayBuffer,
  append: Record<string, unknown>[],
): Parameters<typeof logRowsParquet>[0] {
  return {
    merge: { dropPositions: [], append },
    counts: {},
    baseMetadata: parquetMetadata(base),
  } as unknown as Parameters<typeof logRowsParquet>[0];
}

describe('logRowsParquet with decimal columns', () => {
  it('writes log decimals into the base file’s FIXED_LEN_BYTE_ARRAY and INT32 decimal columns digit for digit', async () => {
    // Prepare: 20 digits at both extremes, a negative, a null
    const base = decimalBase();
    const append = [
      {
        _hoodie_record_key: 'a',
        amount: { unscaled: 10n ** 20n - 1n, scale: 2 },
        rate: { unscaled: 999_999_999n, scale: 3 },
      },
      {
        _hoodie_record_key: 'b',
        amount: { unscaled: -(10n ** 20n - 1n), scale: 2 },
        rate: { unscaled: -1n, scale: 3 },
      },
      { _hoodie_record_key: 'c', amount: null, rate: null },
    ];

    // Act
    const written = logRowsParquet(mergedWith(base, append), 'slice f1 of partition p');
    const file = written.bytes.buffer.slice(
      written.bytes.byteOffset,
      written.bytes.byteOffset + written.bytes.byteLength,
    ) as ArrayBuffer;
    const metadata = parquetMetadata(file);
    const rows = await readRowsExact({ file, metadata });
    const engine = tableFromIPC(pw.readParquet(written.bytes).intoIPCStream());

    // Assess: the same values, in the base file's own column types, and the engine reads them too
    expect(rows).toEqual(append);
    expect(metadata.schema.slice(2).map((e) => [e.type, e.type_length, e.precision, e.scale])).toEqual([
      ['FIXED_LEN_BYTE_ARRAY', 9, 20, 2],
      ['INT32', undefined, 9, 3],
    ]);
    expect(engine.numRows).toBe(3);
    expect(String(engine.getChild('amount')?.get(2))).toBe('null');
  });

  it.each([
    [
      'of another scale',
      { unscaled: 1n, scale: 3 },
      /a log decimal of scale 3 for decimal\(20, 2\) column amount/,
    ],
    [
      'with more digits than the column',
      { unscaled: 10n ** 20n, scale: 2 },
      /a log decimal with unscaled value 100000000000000000000 for decimal\(20, 2\) column amount/,
    ],
    [
      'its log schema did not declare a decimal (plain bytes)',
      new Uint8Array([0, 1]),
      /a log value of decimal\(20, 2\) column amount that is not a decimal \(bytes\)/,
    ],
    ['read as a floating-point number', 1.25, /that is not a decimal \(number\)/],
  ])('refuses by name, writing nothing, a log decimal %s', (_what, amount, message) => {
    // Prepare
    const merged = mergedWith(decimalBase(), [{ _hoodie_record_key: 'a', amount, rate: null }]);

    // Act / Assess
    expect(() => logRowsParquet(merged, 'slice f1 of partition p')).toThrow(HudiCompactionUnsupportedError);
    expect(() => logRowsParquet(merged, 'slice f1 of partition p')).toThrow(message);
  });
});

describe('checkSliceWritable with decimal columns', () => {
  /** A base file with one decimal column `amount` of `type` (and `typeLength`), precision `precision`, scale 2. */
  function baseWith(type: string, precision: number, typeLength?: number): Uint8Array {
    return new Uint8Array(
      parquetWriteBuffer({
        columnData: [
          { name: '_hoodie_record_key', data: ['k1'] },
          { name: 'amount', data: [1n] },
        ],
        schema: [
          { name: 'root', num_children: 2 },
          {
            name: '_hoodie_record_key',
            type: 'BYTE_ARRAY',
            converted_type: 'UTF8',
            repetition_type: 'OPTIONAL',
          },
          {
            name: 'amount',
            type,
            ...(typeLength === undefined ? {} : { type_length: typeLength }),
            repetition_type: 'OPTIONAL',
            converted_type: 'DECIMAL',
            logical_type: { type: 'DECIMAL', precision, scale: 2 },
            precision,
            scale: 2,
          },
        ],
      } as never),
    );
  }

  it('accepts decimals in every physical form: the engine writes each base file back in its own (FIXED_LEN_BYTE_ARRAY of any length, BYTE_ARRAY, INT32, INT64)', async () => {
    // Prepare: the engine's own forms, and the forms Avro-based writers use that it once refused (fixed(5) for 10
    // digits, a fixed wider than its precision needs, bytes).
    const store = new MemoryObjectStore();
    const bases: [string, string, number, number?][] = [
      ['p/fixed20.parquet', 'FIXED_LEN_BYTE_ARRAY', 20, 9],
      ['p/fixed38.parquet', 'FIXED_LEN_BYTE_ARRAY', 38, 16],
      ['p/int32.parquet', 'INT32', 9],
      ['p/int64.parquet', 'INT64', 18],
      ['p/avro-fixed5.parquet', 'FIXED_LEN_BYTE_ARRAY', 10, 5],
      ['p/wide-fixed16.parquet', 'FIXED_LEN_BYTE_ARRAY', 20, 16],
      ['p/bytes.parquet', 'BYTE_ARRAY', 30],
    ];
    for (const [key, type, precision, typeLength] of bases)
      await store.put(key, baseWith(type, precision, typeLength));

    // Act / Assess
    for (const [key] of bases) await expect(checkSliceWritable(store, key), key).resolves.toBeUndefined();
  });
});
