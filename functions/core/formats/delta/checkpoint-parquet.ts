// Reads a checkpoint (or V2 sidecar) Parquet file into plain records: the one place the Parquet engine for the
// log is chosen (hyparquet); int64 becomes a number when safe (else exact text), so zod sees JSON commits' shapes.
import { parquetReadObjects } from 'hyparquet';

/**
 * Every row of a Parquet file as a plain object (structs as objects, maps as objects, lists as arrays).
 * Checkpoints are small next to the data and read whole, so no ranged reads: one GET, then decode.
 * @throws Error when the bytes are not Parquet (the caller names the file).
 */
export async function readParquetRecords(bytes: Uint8Array): Promise<Record<string, unknown>[]> {
  const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  const rows = await parquetReadObjects({ file });
  return rows.map((row) => toPlain(row) as Record<string, unknown>);
}

/**
 * bigint → number when it is a safe integer (every counter, size and timestamp of a real log), else its decimal
 * text: a long column's min/max in `stats_parsed` may be anywhere up to 2^63, and must neither fail the whole
 * checkpoint nor be rounded silently. A field the log needs as a number then fails its zod check, by name.
 */
function toPlain(value: unknown): unknown {
  if (typeof value === 'bigint')
    return Number.isSafeInteger(Number(value)) ? Number(value) : value.toString();
  if (Array.isArray(value)) return value.map(toPlain);
  if (
    value !== null &&
    typeof value === 'object' &&
    !(value instanceof Date) &&
    !(value instanceof Uint8Array)
  ) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, toPlain(v)]));
  }
  return value;
}
