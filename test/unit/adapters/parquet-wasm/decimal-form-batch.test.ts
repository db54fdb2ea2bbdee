// Proves `toStoredDecimals` turns a decoded decimal column — 128-bit, or 256-bit where a file's Arrow schema asked the
// decoder for one — into the bytes Parquet stores for a FIXED_LEN_BYTE_ARRAY(n) or BYTE_ARRAY decimal, which an
// independent reader (hyparquet) decodes, once the footer is annotated, to the same values: negatives, zero, nulls
// and the precision's max and min; and refuses a value its fixed length cannot hold instead of cutting it.

import { Decimal, Field, makeData, RecordBatch, Schema, Struct, Table, tableToIPC } from 'apache-arrow';
import { parquetReadObjects } from 'hyparquet';
import { describe, expect, it } from 'vitest';
import {
  arrowSchemaEntry,
  DecimalOverflowError,
  toStoredDecimals,
} from '../../../../functions/adapters/parquet-wasm/decimal-form.js';
import { pw, writerProperties } from '../../../../functions/adapters/parquet-wasm/wasm.js';
import { type DecimalForm, withDecimalAnnotations } from '../../../../functions/core/parquet/decimal-form.js';

const MAX = 10n ** 10n - 1n;

/** One wasm batch of a nullable decimal(10, 2) column `d` of `bitWidth` bits holding `values` (unscaled). */
function decimalBatch(values: readonly (bigint | null)[], bitWidth: 128 | 256): pw.RecordBatch {
  const words = bitWidth / 32;
  const data = new Uint32Array(values.length * words);
  const validity = new Uint8Array(Math.ceil(values.length / 8));
  values.forEach((v, i) => {
    if (v === null) return;
    validity[i >> 3] = (validity[i >> 3] as number) | (1 << (i & 7));
    let x = BigInt.asUintN(bitWidth, v);
    for (let w = 0; w < words; w++) {
      data[i * words + w] = Number(x & 0xffffffffn);
      x >>= 32n;
    }
  });
  const type = new Decimal(2, 10, bitWidth);
  const field = new Field('d', type, true);
  const schema = new Schema([field]);
  const column = makeData({
    type,
    length: values.length,
    nullCount: values.filter((v) => v === null).length,
    nullBitmap: validity,
    data,
  });
  const batch = new RecordBatch(
    schema,
    makeData({ type: new Struct(schema.fields), length: values.length, nullCount: 0, children: [column] }),
  );
  const table = pw.Table.fromIPCStream(tableToIPC(new Table(schema, [batch]), 'stream'));
  const [out] = table.recordBatches();
  table.free();
  return out as pw.RecordBatch;
}

/** `batch` written with `form` and annotated, as the rewrite does; its values as hyparquet reads them (unscaled). */
async function written(batch: pw.RecordBatch, form: DecimalForm): Promise<(string | null)[]> {
  const arrowSchema = arrowSchemaEntry(batch.schema.intoIPCStream());
  const stored = toStoredDecimals(batch, [form]);
  const table = pw.Table.fromIPCStream(stored.intoIPCStream());
  const bytes = withDecimalAnnotations(
    pw.writeParquet(
      table,
      writerProperties({ codec: 'snappy', rowGroupRows: 1_000, keyValueMetadata: {}, decimalForms: [form] }),
    ),
    [form],
    arrowSchema,
  );
  const rows = await parquetReadObjects({
    file: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer,
  });
  return rows.map((r) => (r.d === null ? null : Number(r.d).toFixed(2)));
}

describe('toStoredDecimals', () => {
  const values = [0n, null, -1n, 1n, 12_345n, -99_999n, MAX, -MAX];
  const expected = values.map((v) => (v === null ? null : (Number(v) / 100).toFixed(2)));
  it.each([
    [128, 'FIXED_LEN_BYTE_ARRAY(5)', { physical: 'FIXED_LEN_BYTE_ARRAY', length: 5 }],
    [256, 'FIXED_LEN_BYTE_ARRAY(5)', { physical: 'FIXED_LEN_BYTE_ARRAY', length: 5 }],
    [128, 'FIXED_LEN_BYTE_ARRAY(20), sign-extended', { physical: 'FIXED_LEN_BYTE_ARRAY', length: 20 }],
    [128, 'BYTE_ARRAY', { physical: 'BYTE_ARRAY' }],
    [256, 'BYTE_ARRAY', { physical: 'BYTE_ARRAY' }],
  ] as const)(
    'stores %i-bit decimals as %s that read back as the same values',
    async (bitWidth, _form, shape) => {
      // Prepare
      const batch = decimalBatch(values, bitWidth);
      const form: DecimalForm = { column: 'd', precision: 10, scale: 2, ...shape };

      // Act
      const read = await written(batch, form);

      // Assess
      expect(read).toEqual(expected);
    },
  );

  it('refuses a value its FIXED_LEN_BYTE_ARRAY cannot hold instead of cutting it', () => {
    // Prepare: 2^39 needs 6 bytes in two's complement.
    const batch = decimalBatch([1n, 2n ** 39n], 128);

    // Act
    const act = () =>
      toStoredDecimals(batch, [
        { column: 'd', precision: 10, scale: 2, physical: 'FIXED_LEN_BYTE_ARRAY', length: 5 },
      ]);

    // Assess
    expect(act).toThrow(DecimalOverflowError);
  });
});
