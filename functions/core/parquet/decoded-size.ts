// An upper bound of what each row group of a Parquet file decodes to (Arrow arrays: values, offsets, validity),
// computed before anything is decoded, so a file whose small dictionary expands to gigabytes is refused by name.
//
// Why a bound and not the footer's sizes: `total_uncompressed_size` counts a dictionary once, while the decoder
// materialises the dictionary's value for every row (a 4 KB file whose one 1 MiB string is referenced 1,500 times
// decodes to 1.5 GiB). The bound takes each column chunk's values times its longest possible value: from the footer
// alone when that is already small enough, else from the chunk's dictionary page (its longest value, read from the
// page itself) — so the file's bytes are needed only for the few chunks the footer cannot clear.

import type { ColumnChunk, FileMetaData } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { columnChunkStart } from './footer.js';
import type { ParquetColumn } from './schema.js';
import { decodeStruct, field, type ThriftStruct } from './thrift-compact.js';

/** Arrow's per-value overhead of a variable-length column: a 4- or 8-byte offset and a validity bit, rounded up. */
const OFFSET_BYTES = 8;

/** The row group whose decoded bound is the largest, and the column chunk that contributes most to it. */
export interface DecodedBound {
  readonly rowGroup: number;
  readonly bytes: number;
  readonly column: string;
}

/** The outcome of bounding a file's row groups. */
export type BoundResult =
  /** Every chunk was bounded; `worst` is the largest row group. */
  | { readonly kind: 'bounded'; readonly worst: DecodedBound }
  /**
   * Some chunk needs its dictionary page, which is in bytes the caller did not pass: `worst` is the footer's
   * worst case then, an upper bound that proves nothing against the file until the bytes say more.
   */
  | { readonly kind: 'needs-bytes'; readonly worst: DecodedBound };

const DICTIONARY_ENCODINGS = new Set(['PLAIN_DICTIONARY', 'RLE_DICTIONARY']);
const FIXED_WIDTH: Readonly<Record<string, number>> = {
  INT32: 4,
  FLOAT: 4,
  INT64: 8,
  DOUBLE: 8,
  INT96: 12,
};

/**
 * Dictionary pages read by ranged GETs instead of the whole file: each the bytes of one {@link ByteRange} of
 * {@link dictionaryPageRanges}, keyed by the range's offset.
 */
export type DictionaryPages = ReadonlyMap<number, Uint8Array>;

/** Bytes `offset` to `offset + length - 1` of a file. */
export interface ByteRange {
  readonly offset: number;
  readonly length: number;
}

/**
 * The decoded-size bound of every row group of the file `meta` describes. Chunks whose footer bound already fits
 * `budget` are not looked at further; the others need their dictionary page, read from `bytes` (the whole file, or
 * the pages {@link dictionaryPageRanges} names) when given, else the result is `needs-bytes` (check again once the
 * file is fetched).
 * @throws Error for a dictionary page that is not where the footer says or does not decompress (the caller names
 *   the file; the decoder would fail on it too).
 */
export function decodedRowGroupBounds(
  meta: FileMetaData,
  columns: readonly Pick<ParquetColumn, 'typeLength'>[],
  budget: number,
  bytes?: Uint8Array | DictionaryPages,
): BoundResult {
  let worst: DecodedBound = { rowGroup: 0, bytes: 0, column: '' };
  let needsBytes = false;
  for (const [index, group] of meta.row_groups.entries()) {
    let total = 0;
    let largest = { bytes: -1, column: '' };
    for (const [i, chunk] of group.columns.entries()) {
      const md = chunk.meta_data;
      if (md === undefined) continue;
      const column = md.path_in_schema.join('.');
      let bound = footerBound(chunk, columns[i]?.typeLength);
      if (bound > budget && variableLength(chunk) && usesDictionary(chunk)) {
        const fromDictionary = bytes === undefined ? undefined : dictionaryBound(chunk, bytes);
        if (fromDictionary === undefined) needsBytes = true;
        else bound = fromDictionary;
      }
      total += bound;
      if (bound > largest.bytes) largest = { bytes: bound, column };
    }
    if (total > worst.bytes) worst = { rowGroup: index, bytes: total, column: largest.column };
  }
  return { kind: needsBytes ? 'needs-bytes' : 'bounded', worst };
}

/**
 * Where the dictionary pages {@link decodedRowGroupBounds} needs are (the chunks the footer cannot clear), so a
 * caller that does not hold the file reads only them: from the page's start to the chunk's first data page, or the
 * whole chunk when its writer did not say where the dictionary page ends.
 */
export function dictionaryPageRanges(
  meta: FileMetaData,
  columns: readonly Pick<ParquetColumn, 'typeLength'>[],
  budget: number,
): ByteRange[] {
  const ranges: ByteRange[] = [];
  for (const group of meta.row_groups) {
    for (const [i, chunk] of group.columns.entries()) {
      const md = chunk.meta_data;
      if (md === undefined || !variableLength(chunk) || !usesDictionary(chunk)) continue;
      if (footerBound(chunk, columns[i]?.typeLength) <= budget) continue;
      const start = dictionaryStart(chunk);
      const dataOffset = Number(md.data_page_offset);
      const length = start < dataOffset ? dataOffset - start : Number(md.total_compressed_size);
      ranges.push({ offset: start, length });
    }
  }
  return ranges;
}

/** Where a chunk's dictionary page starts: some writers leave dictionary_page_offset unset (or 0) and put it first at data_page_offset. */
function dictionaryStart(chunk: ColumnChunk): number {
  const md = chunk.meta_data;
  if (md === undefined) return 0;
  const dictOffset = md.dictionary_page_offset === undefined ? 0 : Number(md.dictionary_page_offset);
  return columnChunkStart(Number(md.data_page_offset), dictOffset);
}

/** BYTE_ARRAY: the values whose decoded length only the dictionary bounds (fixed widths are exact already). */
function variableLength(chunk: ColumnChunk): boolean {
  return chunk.meta_data?.type === 'BYTE_ARRAY';
}

function usesDictionary(chunk: ColumnChunk): boolean {
  return (chunk.meta_data?.encodings ?? []).some((e) => DICTIONARY_ENCODINGS.has(e));
}

/**
 * A chunk's bound from the footer alone: fixed-width values are exact; a variable-length chunk without a dictionary
 * decodes to at most its uncompressed pages plus offsets (PLAIN and DELTA_LENGTH_BYTE_ARRAY hold every value's
 * bytes); with a dictionary, any value may be as long as the whole chunk.
 */
function footerBound(chunk: ColumnChunk, typeLength: number | undefined): number {
  const md = chunk.meta_data;
  if (md === undefined) return 0;
  const values = Number(md.num_values);
  const uncompressed = Number(md.total_uncompressed_size);
  const width = md.type === 'FIXED_LEN_BYTE_ARRAY' ? (typeLength ?? 0) : FIXED_WIDTH[md.type];
  if (md.type === 'BOOLEAN') return Math.ceil(values / 4);
  if (width !== undefined) return values * (width + 1);
  if (!usesDictionary(chunk)) return uncompressed + values * OFFSET_BYTES;
  return uncompressed + values * (uncompressed + OFFSET_BYTES);
}

/** Page types of the Thrift PageHeader (`type`, field 1). */
const DICTIONARY_PAGE = 2;

/**
 * A dictionary-encoded chunk's bound from its dictionary page: every value at most as long as the longest in the
 * dictionary (values a data page falls back to PLAIN for are within the uncompressed pages, counted too). Undefined
 * when `source` holds only other pages.
 */
function dictionaryBound(chunk: ColumnChunk, source: Uint8Array | DictionaryPages): number | undefined {
  const md = chunk.meta_data;
  if (md === undefined) return 0;
  const values = Number(md.num_values);
  const uncompressed = Number(md.total_uncompressed_size);
  const start = dictionaryStart(chunk);
  const bytes = source instanceof Uint8Array ? source : source.get(start);
  if (bytes === undefined) return undefined;
  const { struct, end } = decodeStruct(bytes, source instanceof Uint8Array ? start : 0);
  if (int(struct, 1) !== DICTIONARY_PAGE) {
    // No dictionary page where it should be: the footer's worst case stands.
    return uncompressed + values * (uncompressed + OFFSET_BYTES);
  }
  const pageSize = int(struct, 2);
  const compressedSize = int(struct, 3);
  const dictionaryHeader = field(struct, 7)?.value as ThriftStruct | undefined;
  const count = dictionaryHeader === undefined ? 0 : int(dictionaryHeader, 1);
  if (pageSize < 0 || compressedSize < 0 || end + compressedSize > bytes.length || pageSize > uncompressed)
    throw new Error(
      `the dictionary page of column ${md.path_in_schema.join('.')} does not fit its column chunk`,
    );
  const raw = bytes.subarray(end, end + compressedSize);
  const page = md.codec === 'UNCOMPRESSED' ? raw : decompress(md.codec, raw, pageSize);
  const longest = longestValue(page, count);
  return uncompressed + values * (longest + OFFSET_BYTES);
}

function int(struct: ThriftStruct, id: number): number {
  const v = field(struct, id)?.value;
  return typeof v === 'number' ? v : typeof v === 'bigint' ? Number(v) : -1;
}

function decompress(codec: string, input: Uint8Array, outputLength: number): Uint8Array {
  const decompressor = compressors[codec as keyof typeof compressors];
  if (decompressor === undefined) throw new Error(`codec ${codec} cannot be decompressed here`);
  return decompressor(input, outputLength);
}

/** The longest of the PLAIN BYTE_ARRAY values (4-byte little-endian length, then the bytes) of a dictionary page. */
function longestValue(page: Uint8Array, count: number): number {
  const view = new DataView(page.buffer, page.byteOffset, page.byteLength);
  let longest = 0;
  let pos = 0;
  for (let i = 0; i < count && pos + 4 <= page.length; i++) {
    const length = view.getUint32(pos, true);
    longest = Math.max(longest, length);
    pos += 4 + length;
  }
  return longest;
}
