// Reads a checkpoint (or V2 sidecar) Parquet file into plain records: the one place the Parquet engine for the
// log is chosen (hyparquet); int64 becomes a number when safe (else exact text), so zod sees JSON commits' shapes.
// A reader that must bound its memory takes the file's row groups first and decodes them one at a time.
import { type FileMetaData, parquetMetadata, parquetReadObjects } from 'hyparquet';

/** A Parquet file's footer as the log reader needs it: its row groups' row counts, before any page is decoded. */
export interface ParquetRowGroups {
  /** The file's bytes as hyparquet reads them (the caller's own buffer when it spans it, else one copy). */
  readonly file: ArrayBuffer;
  readonly metadata: FileMetaData;
  /** Rows of each row group, in file order. */
  readonly rows: readonly number[];
}

/**
 * The footer of a Parquet file held in memory (only its Thrift footer is parsed).
 * @throws Error when the bytes are not Parquet or a row count is not a safe integer (the caller names the file).
 */
export function parquetRowGroups(bytes: Uint8Array): ParquetRowGroups {
  const file =
    bytes.byteOffset === 0 &&
    bytes.byteLength === bytes.buffer.byteLength &&
    bytes.buffer instanceof ArrayBuffer
      ? bytes.buffer
      : (bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer);
  const metadata = parquetMetadata(file, { geoparquet: false });
  const rows = metadata.row_groups.map((g, i) => {
    const n = Number(g.num_rows);
    if (!Number.isSafeInteger(n) || n < 0) throw new Error(`row group ${i} claims ${g.num_rows} rows`);
    return n;
  });
  return { file, metadata, rows };
}

/**
 * Row group `index` of a file whose row groups `parquetRowGroups` read, as plain records: one row group decoded at
 * a time, so a checkpoint's rows need not all be held at once.
 */
export async function readParquetRowGroup(
  groups: ParquetRowGroups,
  index: number,
): Promise<Record<string, unknown>[]> {
  const file = groups.file;
  const rowStart = groups.rows.slice(0, index).reduce((a, b) => a + b, 0);
  const rows = await parquetReadObjects({
    file,
    metadata: groups.metadata,
    rowStart,
    rowEnd: rowStart + (groups.rows[index] ?? 0),
  });
  return rows.map((row) => toPlain(row) as Record<string, unknown>);
}

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
