// Opt-in conversion of Spark's legacy INT96 timestamps to INT64 TIMESTAMP(UTC): MICROS, exact for every
// value Spark writes (whole microseconds); NANOS for a column with sub-microsecond digits (Impala, Hive);
// refused for a column neither holds exactly (sub-microsecond digits and a date outside 1677–2262).

import {
  Field,
  makeData,
  RecordBatch,
  Schema,
  Struct,
  Table,
  TimestampMicrosecond,
  TimestampNanosecond,
  tableFromIPC,
  tableToIPC,
} from 'apache-arrow';
import { type AsyncBuffer, type FileMetaData, parquetReadObjects } from 'hyparquet';
import { UnsupportedInputError } from '../../core/errors.js';
import type { Int96Unit } from '../../core/parquet/logical-schema.js';
import { pw } from './wasm.js';

/** One INT96 column as written: its unit, and every row's value in that unit (null where null). */
export interface Int96Column {
  readonly unit: Int96Unit;
  readonly values: readonly (bigint | null)[];
}

/** The INT64 range: nanoseconds since the epoch from 1677-09-21 to 2262-04-11. */
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/**
 * Reads the raw INT96 values of `columns` and picks each column's unit: MICROS unless a value has
 * sub-microsecond digits, then NANOS — unless a value lies outside the years INT64 nanoseconds hold,
 * and then the input is refused, naming the column and the value, since neither unit keeps every value.
 *
 * Why not let parquet-rs convert: it decodes INT96 to Timestamp(ns), which silently wraps for
 * dates outside 1677–2262 (Spark's `9999-12-31` becomes 1816). The raw INT96 values are read
 * instead with hyparquet as exact nanosecond BigInts. The choice is the file's values' alone, so
 * pre-flight (which writes the schema) and the decode (which writes the values) make the same one.
 */
export async function readInt96(
  key: string,
  bytes: Uint8Array | AsyncBuffer,
  columns: readonly string[],
  metadata?: FileMetaData,
): Promise<Map<string, Int96Column>> {
  const nested = columns.filter((c) => c.includes('.'));
  if (nested.length > 0) {
    throw new UnsupportedInputError(
      key,
      `INT96 columns nested in groups (${nested.join(', ')}) cannot be converted`,
    );
  }
  const rows = (await parquetReadObjects({
    file:
      bytes instanceof Uint8Array
        ? (bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer)
        : bytes,
    ...(metadata === undefined ? {} : { metadata }),
    columns: [...columns],
    parsers: { timestampFromNanoseconds: (n: bigint) => n } as never,
  })) as Record<string, unknown>[];
  const out = new Map<string, Int96Column>();
  for (const c of columns) {
    const nanos = rows.map((r) => (r[c] === null || r[c] === undefined ? null : (r[c] as bigint)));
    const fine = nanos.find((ns): ns is bigint => ns !== null && ns % 1000n !== 0n);
    if (fine === undefined) {
      out.set(c, { unit: 'MICROS', values: nanos.map((ns) => (ns === null ? null : ns / 1000n)) });
      continue;
    }
    const far = nanos.find((ns): ns is bigint => ns !== null && (ns < INT64_MIN || ns > INT64_MAX));
    if (far !== undefined) {
      throw new UnsupportedInputError(
        key,
        `INT96 column ${c} holds ${fine} ns (${isoOf(fine)}), whose sub-microsecond digits TIMESTAMP(MICROS) would lose, and ${far} ns (${isoOf(far)}), which TIMESTAMP(NANOS) cannot hold: no INT64 unit keeps every value`,
      );
    }
    out.set(c, { unit: 'NANOS', values: nanos });
  }
  return out;
}

/** A nanosecond instant as ISO text with all nine digits (Date alone keeps milliseconds). */
function isoOf(ns: bigint): string {
  const ms = ns / 1_000_000n - (ns % 1_000_000n < 0n ? 1n : 0n);
  const date = new Date(Number(ms)).toISOString();
  const rest = ((ns % 1_000_000_000n) + 1_000_000_000n) % 1_000_000_000n;
  return `${date.slice(0, 19)}.${String(rest).padStart(9, '0')}Z`;
}

/** Each converted column's unit, by name: what the trial write and the output schema use. */
export function unitsOf(columns: ReadonlyMap<string, Int96Column>): Record<string, Int96Unit> {
  return Object.fromEntries([...columns].map(([c, v]) => [c, v.unit]));
}

/** The Arrow type of a converted INT96 column: timestamp[us|ns, UTC]. */
function timestampType(unit: Int96Unit): TimestampMicrosecond | TimestampNanosecond {
  return unit === 'NANOS' ? new TimestampNanosecond('UTC') : new TimestampMicrosecond('UTC');
}

/** The Arrow field an INT96 column becomes: timestamp[us|ns, UTC], nullability and metadata kept. */
function convertedField(field: Field, unit: Int96Unit): Field {
  return new Field(field.name, timestampType(unit), field.nullable, field.metadata);
}

/**
 * Replaces the INT96 columns of a wasm batch (rows `start..start+n` of its file) with the exact
 * values in their unit. Consumes `batch`; returns a new wasm batch.
 */
export function convertBatch(
  batch: pw.RecordBatch,
  start: number,
  columns: ReadonlyMap<string, Int96Column>,
): pw.RecordBatch {
  const n = batch.numRows;
  const js = tableFromIPC(batch.intoIPCStream());
  const fields = js.schema.fields.map((f) => {
    const column = columns.get(f.name);
    return column === undefined ? f : convertedField(f, column.unit);
  });
  const children = js.schema.fields.map((f, i) => {
    const column = columns.get(f.name);
    if (column === undefined) {
      const only = js.getChildAt(i)?.data;
      if (only?.length !== 1)
        throw new Error(`INT96 conversion: column ${f.name} arrived in ${only?.length} chunks`);
      return only[0];
    }
    const values = column.values;
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
      type: timestampType(column.unit),
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
export function convertedSchemaIpc(
  schemaIpc: Uint8Array,
  units: Readonly<Record<string, Int96Unit>>,
): Uint8Array {
  const js = tableFromIPC(schemaIpc);
  const fields = js.schema.fields.map((f) => {
    const unit = units[f.name];
    return unit === undefined ? f : convertedField(f, unit);
  });
  return tableToIPC(new Table(new Schema(fields, js.schema.metadata)), 'stream');
}
