// parquet-wasm access for the rewrite engine: one loaded instance, writer properties built the same
// way for trial and real writes, and decode errors mapped to typed errors that name the input.

import { type Table, Type, tableToIPC } from 'apache-arrow';
import * as pw from 'parquet-wasm';
import { CorruptInputError, UnsupportedInputError } from '../../core/errors.js';
import type { DecimalForm } from '../../core/parquet/decimal-form.js';
import type { Codec } from '../../ports/parquet-engine.js';

export { pw };

/** parquet-rs's compression per codec: a Record, so a codec added to the port fails typecheck here until mapped. */
const COMPRESSION: Readonly<Record<Codec, pw.Compression>> = {
  zstd: pw.Compression.ZSTD,
  snappy: pw.Compression.SNAPPY,
};

/** The one non-default column encoding the writer is told to use (see `columnPlan`). */
export type ColumnEncoding = 'DELTA_BINARY_PACKED';

export interface WriterSettings {
  readonly codec: Codec;
  /** Maximum rows per row group. */
  readonly rowGroupRows: number;
  /** Maximum bytes per row group (parquet-rs measures encoded bytes). */
  readonly rowGroupBytes?: number;
  /** File key-value metadata to write (the inputs'; `ARROW:schema` is added by the writer). */
  readonly keyValueMetadata: Readonly<Record<string, string>>;
  /** Per top-level column: dictionary encoding on or off (default on). */
  readonly dictionary?: Readonly<Record<string, boolean>>;
  /** Per top-level column written with DELTA_BINARY_PACKED (no dictionary); others: PLAIN/dictionary. */
  readonly encodings?: Readonly<Record<string, ColumnEncoding>>;
  /** Top-level columns written without chunk statistics (the `auto` statistics policy's choice, see runs.ts). */
  readonly noStatistics?: readonly string[];
  /**
   * `native`: the encoder writes pages uncompressed and a native ZSTD compresses them on the thread pool as they
   * stream out (`output.ts`; ZSTD only — elsewhere, or without a native ZSTD, the encoder compresses).
   */
  readonly pageCompression?: PageCompression;
  /**
   * Top-level decimal columns written in their input's physical form (FIXED_LEN_BYTE_ARRAY of its length, or
   * BYTE_ARRAY; `core/parquet/decimal-form.ts`): handed to the encoder as bytes and annotated in the footer after
   * (`output.ts`), without statistics — the encoder would order the bytes unsigned, which is wrong for a negative
   * decimal. Absent: none.
   */
  readonly decimalForms?: readonly DecimalForm[];
  /**
   * Columns (paths of names from the top-level column) a projection writes as `uuid`: stored by the encoder as
   * FIXED_LEN_BYTE_ARRAY(16) and given their UUID annotation in the footer after (`output.ts`,
   * core/parquet/uuid-annotation.ts). Absent: none.
   */
  readonly uuidColumns?: readonly (readonly string[])[];
  /**
   * Top-level columns whose inputs' Arrow hints disagree, with the plain type every batch of theirs is written as
   * (`plainTypesOf` in conform.ts); absent when the inputs agree, and each output takes its first batch's types.
   */
  readonly plainTypes?: Readonly<Record<string, PlainType>>;
}

/**
 * The Arrow type a column is written as, whatever its inputs' hints (conform.ts): a plain variable-length string or
 * binary type; a list (`large`: 64-bit offsets) whose items are written as `list` says (null: as they decode); a
 * map whose entries (a struct of key and value) are written as `map` says; a
 * struct whose fields named in `struct` are written as it says (the others as they decode). Plain data, so it
 * travels to worker threads with the rest of the settings.
 */
export type PlainType =
  | 'utf8'
  | 'large_utf8'
  | 'binary'
  | 'large_binary'
  | { readonly list: PlainType | null; readonly large: boolean }
  | { readonly map: PlainType }
  | { readonly struct: Readonly<Record<string, PlainType>> };

/** Who compresses an output's pages: the wasm encoder, or a native ZSTD after it (see `WriterSettings`). */
export type PageCompression = 'encoder' | 'native';

/**
 * A fresh WriterProperties (parquet-wasm consumes them per write). Chunk-level statistics: every
 * column chunk gets min/max/null count, which is what engines prune with; page-level statistics
 * cost encode time for little benefit on compacted files (docs, "Engine"). Columns in `noStatistics`
 * get none: computing min/max of long distinct strings is real encode time, spent for no pruning.
 * `uncompressed`: pages left for a native compressor after the encoder (see `WriterSettings.pageCompression`).
 */
export function writerProperties(
  settings: WriterSettings,
  options: { readonly uncompressed?: boolean } = {},
): pw.WriterProperties {
  let builder = new pw.WriterPropertiesBuilder()
    .setCompression(options.uncompressed === true ? pw.Compression.UNCOMPRESSED : COMPRESSION[settings.codec])
    .setStatisticsEnabled(pw.EnabledStatistics.Chunk)
    .setMaxRowGroupSize(settings.rowGroupRows)
    .setCreatedBy('lake-compactor (parquet-rs via parquet-wasm 0.8.0)');
  if (settings.rowGroupBytes !== undefined) builder = builder.setMaxRowGroupBytes(settings.rowGroupBytes);
  const kv = Object.entries(settings.keyValueMetadata).filter(([k]) => k !== 'ARROW:schema');
  if (kv.length > 0) builder = builder.setKeyValueMetadata(new Map(kv));
  for (const [column, enabled] of Object.entries(settings.dictionary ?? {})) {
    builder = builder.setColumnDictionaryEnabled(column, enabled);
  }
  for (const column of [
    ...(settings.noStatistics ?? []),
    ...(settings.decimalForms ?? []).map((d) => d.column),
  ]) {
    builder = builder.setColumnStatisticsEnabled(column, pw.EnabledStatistics.None);
  }
  for (const column of Object.keys(settings.encodings ?? {})) {
    builder = builder
      .setColumnDictionaryEnabled(column, false)
      .setColumnEncoding(column, pw.Encoding.DELTA_BINARY_PACKED);
  }
  return builder.build();
}

/** Whether a parquet-rs error message means "valid but not supported" rather than "damaged". */
function looksUnsupported(message: string): boolean {
  return /not yet implemented|not supported|unsupported|is not implemented/i.test(message);
}

/** Maps an error thrown by parquet-wasm while decoding `key` to CorruptInputError or UnsupportedInputError. */
export function decodeError(key: string, err: unknown): Error {
  if (err instanceof CorruptInputError || err instanceof UnsupportedInputError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return looksUnsupported(message)
    ? new UnsupportedInputError(key, `the decoder cannot read it (${message})`, { cause: err })
    : new CorruptInputError(key, `the decoder failed (${message})`, { cause: err });
}

/** Primitive types whose dictionary decision is made from a sample; nested columns keep the default. */
const SAMPLED = new Set([
  Type.Int,
  Type.Float,
  Type.Utf8,
  Type.LargeUtf8,
  Type.Binary,
  Type.Timestamp,
  Type.Date,
  Type.Decimal,
]);

/** Integer-backed types DELTA_BINARY_PACKED can carry (INT32/INT64 physical; not decimals, which may be FIXED_LEN_BYTE_ARRAY). */
const DELTA_CAPABLE = new Set([Type.Int, Type.Timestamp, Type.Date, Type.Time]);

/** How each sampled column is written: dictionary on or off, and which columns use DELTA_BINARY_PACKED. */
export interface ColumnPlan {
  readonly dictionary: Record<string, boolean>;
  readonly encodings: Record<string, ColumnEncoding>;
}

/**
 * Encoding per column, decided by trial: each sampled top-level column is encoded alone with the
 * real settings, with a dictionary and without (and, with `delta`, with DELTA_BINARY_PACKED for
 * integer, date, time and timestamp columns). The dictionary is kept only when it makes the
 * column at least `minSaving` smaller than the best encoding without one: below that it costs
 * encode time for nothing, while a column whose values repeat comes out smaller *and* faster with
 * one. DELTA_BINARY_PACKED is kept when it is no larger than PLAIN, as it is also faster to encode.
 * Nested columns keep the writer's default (dictionary on). Measurements: docs, "Engine".
 */
export function columnPlan(
  sample: Table,
  settings: Omit<WriterSettings, 'keyValueMetadata' | 'dictionary' | 'encodings'>,
  options: { readonly delta?: boolean; readonly minSaving?: number } = {},
): ColumnPlan {
  const minSaving = options.minSaving ?? 0.1;
  const plan: ColumnPlan = { dictionary: {}, encodings: {} };
  if (sample.numRows < 1_000) return plan;
  const encodedSize = (
    column: Table,
    name: string,
    how: 'dictionary' | 'plain' | 'delta-binary-packed',
  ): number =>
    pw.writeParquet(
      pw.Table.fromIPCStream(tableToIPC(column, 'stream')),
      writerProperties({
        ...settings,
        keyValueMetadata: {},
        dictionary: { [name]: how === 'dictionary' },
        ...(how === 'delta-binary-packed' && {
          encodings: { [name]: 'DELTA_BINARY_PACKED' satisfies ColumnEncoding },
        }),
      }),
    ).length;
  for (const field of sample.schema.fields) {
    if (!SAMPLED.has(field.type.typeId)) continue;
    const column = sample.select([field.name]);
    const withDictionary = encodedSize(column, field.name, 'dictionary');
    const plain = encodedSize(column, field.name, 'plain');
    const delta =
      options.delta === true && DELTA_CAPABLE.has(field.type.typeId)
        ? encodedSize(column, field.name, 'delta-binary-packed')
        : Number.POSITIVE_INFINITY;
    const withoutDictionary = Math.min(plain, delta);
    plan.dictionary[field.name] = withDictionary <= withoutDictionary * (1 - minSaving);
    if (!plan.dictionary[field.name] && delta <= plain) plan.encodings[field.name] = 'DELTA_BINARY_PACKED';
  }
  return plan;
}

/**
 * Decodes one input into record batches, one row group at a time, so decoded memory is bounded
 * by its largest row group rather than by the file (a file with one row group: one call, the
 * fastest path for small files). Batches not yet handed out are freed if the consumer stops
 * early; decode failures name the key.
 *
 * Always parquet-wasm's synchronous reader (`readParquet` with `rowGroups`), never its streaming
 * one: the streaming reader traps ("RuntimeError: unreachable") on a corrupt page, from a promise
 * callback, which hangs or crashes the process instead of failing the call. The cost is one copy
 * of the file into wasm memory per row group.
 */
export async function* decodeBatches(
  key: string,
  bytes: Uint8Array,
  batchRows: number,
  rowGroups: number,
): AsyncGenerator<pw.RecordBatch> {
  for (let group = 0; group < Math.max(1, rowGroups); group++) {
    let batches: pw.RecordBatch[];
    try {
      const table = pw.readParquet(bytes, {
        batchSize: batchRows,
        ...(rowGroups > 1 && { rowGroups: [group] }),
      });
      batches = table.recordBatches();
      table.free();
    } catch (err) {
      throw decodeError(key, err);
    }
    try {
      while (batches.length > 0) yield batches.shift() as pw.RecordBatch;
    } finally {
      for (const b of batches) b.free();
    }
  }
}

/** One wasm batch from an Arrow IPC stream that holds exactly one (a JS-built batch handed back to the writer). */
export function oneBatch(ipc: Uint8Array): pw.RecordBatch {
  const wasm = pw.Table.fromIPCStream(ipc);
  try {
    const batches = wasm.recordBatches();
    if (batches.length !== 1) {
      for (const extra of batches) extra.free();
      throw new Error(`a batch came back from Arrow IPC as ${batches.length} batches`);
    }
    return batches[0] as pw.RecordBatch;
  } finally {
    wasm.free();
  }
}
