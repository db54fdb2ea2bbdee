// Opt-in conversion of Spark's legacy INT96 timestamps to INT64 TIMESTAMP(MICROS, UTC): exact for
// every value Spark writes (whole microseconds), refused for values with sub-microsecond digits.

import {
  Field,
  makeData,
  RecordBatch,
  Schema,
  Struct,
  Table,
  TimestampMicrosecond,
  tableFromIPC,
  tableToIPC,
} from 'apache-arrow';
import { parquetReadObjects } from 'hyparquet';
import { UnsupportedInputError } from '../../core/errors.js';
import { pw } from './wasm.js';

/**
 * Why not let parquet-rs convert: it decodes INT96 to Timestamp(ns), which silently wraps for
 * dates outside 1677–2262 (Spark's `9999-12-31` becomes 1816). The raw INT96 values are read
 * instead with hyparquet as exact nanosecond BigInts.
 */
export async function readInt96Micros(
  key: string,
  bytes: Uint8Array,
  columns: readonly string[],
): Promise<Map<string, (bigint | null)[]>> {
  const nested = columns.filter((c) => c.includes('.'));
  if (nested.length > 0) {
    throw new UnsupportedInputError(
      key,
      `INT96 columns nested in groups (${nested.join(', ')}) cannot be converted`,
    );
  }
  const rows = (await parquetReadObjects({
    file: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer,
    columns: [...columns],
    parsers: { timestampFromNanoseconds: (n: bigint) => n } as never,
  })) as Record<string, unknown>[];
  const out = new Map<string, (bigint | null)[]>();
  for (const c of columns) {
    const values = rows.map((r) => {
      const v = r[c];
      if (v === null || v === undefined) return null;
      const ns = v as bigint;
      if (ns % 1000n !== 0n) {
        throw new UnsupportedInputError(
          key,
          `INT96 column ${c} holds ${ns} ns, which has sub-microsecond digits that TIMESTAMP(MICROS) would lose`,
        );
      }
      return ns / 1000n;
    });
    out.set(c, values);
  }
  return out;
}

/** The Arrow field an INT96 column becomes: timestamp[us, UTC], nullability and metadata kept. */
function convertedField(field: Field): Field {
  return new Field(field.name, new TimestampMicrosecond('UTC'), field.nullable, field.metadata);
}

/**
 * Replaces the INT96 columns of a wasm batch (rows `start..start+n` of its file) with the exact
 * microsecond values. Consumes `batch`; returns a new wasm batch.
 */
export function convertBatch(
  batch: pw.RecordBatch,
  start: number,
  micros: Map<string, (bigint | null)[]>,
): pw.RecordBatch {
  const n = batch.numRows;
  const js = tableFromIPC(batch.intoIPCStream());
  const fields = js.schema.fields.map((f) => (micros.has(f.name) ? convertedField(f) : f));
  const children = js.schema.fields.map((f, i) => {
    const values = micros.get(f.name);
    if (values === undefined) {
      const only = js.getChildAt(i)?.data;
      if (only?.length !== 1)
        throw new Error(`INT96 conversion: column ${f.name} arrived in ${only?.length} chunks`);
      return only[0];
    }
    const data = new BigInt64Array(n);
    const validity = new Uint8Array(Math.ceil(n / 8));
    let nulls = 0;
    for (let r = 0; r < n; r++) {
      const v = values[start + r];
      if (v === null || v === undefined) nulls++;
      else {
        data[r] = v;
        validity[r >> 3] = (validity[r >> 3] as number) | (1 << (r & 7));
      }
    }
    return makeData({
      type: new TimestampMicrosecond('UTC'),
      length: n,
      nullCount: nulls,
      data,
      nullBitmap: nulls > 0 ? validity : null,
    });
  });
  const schema = new Schema(fields, js.schema.metadata);
  const struct = makeData({ type: new Struct(fields), length: n, nullCount: 0, children: children as never });
  const converted = new Table([new RecordBatch(schema, struct)]);
  const table = pw.Table.fromIPCStream(tableToIPC(converted, 'stream'));
  const batches = table.recordBatches();
  table.free();
  if (batches.length !== 1) throw new Error(`INT96 conversion produced ${batches.length} batches`);
  return batches[0] as pw.RecordBatch;
}

/** The Arrow schema (as IPC) an INT96 input is written with, for the pre-flight trial write. */
export function convertedSchemaIpc(schemaIpc: Uint8Array, int96Columns: readonly string[]): Uint8Array {
  const js = tableFromIPC(schemaIpc);
  const fields = js.schema.fields.map((f) => (int96Columns.includes(f.name) ? convertedField(f) : f));
  return tableToIPC(new Table(new Schema(fields, js.schema.metadata)), 'stream');
}
