// Decimals in Hudi log records, exactly (issue #28): an Avro `fixed` or `bytes` with logicalType decimal, written by the
// log writer, reads back as its unscaled integer and scale; a Parquet data block's DECIMAL columns — FIXED_LEN_BYTE_ARRAY,
// BYTE_ARRAY, INT64 and INT32 — read back the same way, 20 and 30 digits included (a double holds 15); and the writer
// refuses, before a byte is written, a decimal its schema cannot hold exactly.
import { parquetWriteBuffer } from 'hyparquet-writer';
import { describe, expect, it } from 'vitest';
import { type LogBlock, readLogBlocks } from '../../../../../../functions/core/formats/hudi/log/blocks.js';
import { DecodeBudget } from '../../../../../../functions/core/formats/hudi/log/budget.js';
import { decodeBlockRecords } from '../../../../../../functions/core/formats/hudi/log/content.js';
import { HudiLogWriteError } from '../../../../../../functions/core/formats/hudi/log/errors.js';
import { avroDataBlock, parquetDataBlock } from '../../../../../../functions/core/formats/hudi/log/writer.js';

const INSTANT = '20240301000000002';

/** A log schema: a key, a nullable fixed(9) decimal(20, 2) and a nullable bytes decimal(38, 10). */
const SCHEMA = JSON.stringify({
  type: 'record',
  name: 'trips_record',
  namespace: 'hoodie.trips',
  fields: [
    { name: '_hoodie_record_key', type: ['null', 'string'], default: null },
    {
      name: 'amount',
      type: [
        'null',
        {
          type: 'fixed',
          name: 'fixed',
          namespace: 'hoodie.trips.amount',
          size: 9,
          logicalType: 'decimal',
          precision: 20,
          scale: 2,
        },
      ],
      default: null,
    },
    {
      name: 'rate',
      type: ['null', { type: 'bytes', logicalType: 'decimal', precision: 38, scale: 10 }],
      default: null,
    },
  ],
});

const MAX_20 = 10n ** 20n - 1n;
const MAX_38 = 10n ** 38n - 1n;

function only(bytes: Uint8Array): LogBlock {
  const [framed] = readLogBlocks('1/.f1-0_20240301000000001.log.1_0-1-0', bytes);
  if (framed?.kind !== 'block') throw new Error('expected one block');
  return framed;
}

async function records(bytes: Uint8Array): Promise<readonly Record<string, unknown>[]> {
  const decoded = await decodeBlockRecords(only(bytes), new DecodeBudget());
  if (decoded.kind !== 'data') throw new Error('expected a data block');
  return decoded.records;
}

describe('Hudi log decimals, Avro data blocks', () => {
  it('reads back a fixed and a bytes decimal as the unscaled value and scale written, at their extremes and null', async () => {
    // Prepare
    const written = [
      {
        _hoodie_record_key: 'a',
        amount: { unscaled: MAX_20, scale: 2 },
        rate: { unscaled: MAX_38, scale: 10 },
      },
      {
        _hoodie_record_key: 'b',
        amount: { unscaled: -MAX_20, scale: 2 },
        rate: { unscaled: -MAX_38, scale: 10 },
      },
      { _hoodie_record_key: 'c', amount: { unscaled: -1n, scale: 2 }, rate: { unscaled: 0n, scale: 10 } },
      { _hoodie_record_key: 'd', amount: null, rate: null },
    ];

    // Act
    const read = await records(avroDataBlock(INSTANT, SCHEMA, written));

    // Assess
    expect(read).toEqual(written);
  });

  it('stores a fixed decimal in exactly its size, sign-extended, as Hudi does', async () => {
    // Prepare: -1 as a fixed(9) is nine 0xff bytes; the datum is the key's union branch and string, then the amount's
    // union branch and its nine bytes, then the rate's null branch.
    const bytes = avroDataBlock(INSTANT, SCHEMA, [
      { _hoodie_record_key: 'k', amount: { unscaled: -1n, scale: 2 }, rate: null },
    ]);

    // Act
    const content = only(bytes).content;

    // Assess: version 3, one record of 14 bytes: [2, 2, 'k'] [2, 0xff × 9] [0]
    const datum = content.subarray(12);
    expect([...content.subarray(8, 12)]).toEqual([0, 0, 0, 14]);
    expect([...datum]).toEqual([2, 2, 0x6b, 2, ...Array(9).fill(0xff), 0]);
  });

  it.each([
    ['another scale', { unscaled: 1n, scale: 3 }, /record 0's decimal amount has scale 3, its schema 2/],
    ['more digits than the precision', { unscaled: MAX_20 + 1n, scale: 2 }, /more than the 20 digits/],
  ])('refuses, writing nothing, a decimal of %s', (_what, amount, message) => {
    // Act / Assess
    expect(() => avroDataBlock(INSTANT, SCHEMA, [{ _hoodie_record_key: 'k', amount, rate: null }])).toThrow(
      HudiLogWriteError,
    );
    expect(() => avroDataBlock(INSTANT, SCHEMA, [{ _hoodie_record_key: 'k', amount, rate: null }])).toThrow(
      message,
    );
  });

  it('refuses a decimal wider than its fixed when the schema claims more digits than the size holds', () => {
    // Prepare: a fixed(2) cannot hold 5 digits, whatever the schema says
    const narrow = JSON.stringify({
      type: 'record',
      name: 'r',
      fields: [
        {
          name: 'v',
          type: { type: 'fixed', name: 'f2', size: 2, logicalType: 'decimal', precision: 5, scale: 0 },
        },
      ],
    });

    // Act / Assess
    expect(() => avroDataBlock(INSTANT, narrow, [{ v: { unscaled: 99_999n, scale: 0 } }])).toThrow(
      /does not fit the 2 bytes of its fixed/,
    );
  });
});

describe('Hudi log decimals, Parquet data blocks', () => {
  it('reads FIXED_LEN_BYTE_ARRAY, BYTE_ARRAY, INT64 and INT32 decimals as their unscaled values, wider than a double too', async () => {
    // Prepare: a Parquet file of four decimal columns, one row at each one's extreme, one negative, one null
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
    const columns = {
      flba: [MAX_20, -123_456_789_012_345_678_9n, null],
      bin: [10n ** 30n - 1n, -1n, null],
      i64: [10n ** 18n - 1n, -42n, null],
      i32: [999_999_999n, -7n, null],
    };
    const parquet = parquetWriteBuffer({
      columnData: [
        { name: '_hoodie_record_key', data: ['a', 'b', 'c'] },
        ...Object.entries(columns).map(([name, data]) => ({ name, data })),
      ],
      schema: [
        { name: 'root', num_children: 5 },
        {
          name: '_hoodie_record_key',
          type: 'BYTE_ARRAY',
          converted_type: 'UTF8',
          repetition_type: 'OPTIONAL',
        },
        decimal('flba', 'FIXED_LEN_BYTE_ARRAY', 20, 2, 9),
        decimal('bin', 'BYTE_ARRAY', 30, 5),
        decimal('i64', 'INT64', 18, 4),
        decimal('i32', 'INT32', 9, 3),
      ],
    } as never);

    // Act
    const read = await records(parquetDataBlock(INSTANT, SCHEMA, new Uint8Array(parquet)));

    // Assess
    const scales = { flba: 2, bin: 5, i64: 4, i32: 3 };
    expect(read).toEqual(
      ['a', 'b', 'c'].map((key, i) => ({
        _hoodie_record_key: key,
        ...Object.fromEntries(
          Object.entries(columns).map(([name, data]) => {
            const v = data[i];
            return [
              name,
              v === null || v === undefined ? null : { unscaled: v, scale: scales[name as 'flba'] },
            ];
          }),
        ),
      })),
    );
  });
});
