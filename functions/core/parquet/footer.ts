// Reads a Parquet file's footer through the ObjectStore port with at most two explicit ranged reads
// and returns rows, row groups, leaf columns and a schema fingerprint; damaged input is CorruptInputError.

import { createHash } from 'node:crypto';
import { type FileMetaData, parquetMetadata } from 'hyparquet';
import type { ObjectStore } from '../../ports/object-store.js';
import { CorruptInputError, ObjectNotFoundError, UnsupportedInputError } from '../errors.js';
import {
  currentMemoryBudget,
  currentMetadataLimits,
  describeBytes as describeSize,
} from '../memory-budget.js';
import { keyValueGroupingOf, keyValueRecord } from './key-value.js';
import {
  leafColumns,
  MalformedSchemaError,
  type ParquetColumn,
  schemaFingerprint,
  schemaTree,
} from './schema.js';
import {
  decodeStruct,
  encodeStruct,
  field,
  isList,
  isStruct,
  ThriftDecodeError,
  type ThriftStruct,
} from './thrift-compact.js';

export type { ParquetColumn, ParquetLogicalType, Repetition, TimeUnit } from './schema.js';

/** `PAR1`, at both ends of every unencrypted Parquet file. */
export const PARQUET_MAGIC: Readonly<Uint8Array> = Uint8Array.of(0x50, 0x41, 0x52, 0x31);
/** `PARE`, the trailing magic of files with an encrypted footer (Parquet modular encryption). */
const ENCRYPTED_MAGIC = Uint8Array.of(0x50, 0x41, 0x52, 0x45);
/** Leading magic + footer length + trailing magic: the smallest byte count a Parquet file can have. */
export const MIN_PARQUET_SIZE = 12;
/**
 * Bytes read from the end in the first request. 64 KiB holds the whole footer of almost every
 * file with up to a few hundred columns, so one GET per file is the common case; S3 bills per
 * request, not per byte, and a small file is often read whole by this single request.
 */
export const FOOTER_FIRST_READ_BYTES = 64 * 1024;

/**
 * Inputs up to this size are read whole by the rewrite's pre-flight while its cache of small inputs has room: one GET
 * instead of the footer's ranged read and the rewrite's read of the rest. At 1 MiB the extra bytes cost ~10 ms of
 * transfer on Lambda, less than a request's latency, and a GET costs the same whatever its size.
 */
export const PREFLIGHT_WHOLE_READ_BYTES = 1024 * 1024;

/** One row group as the footer describes it. */
export interface ParquetRowGroup {
  readonly rows: number;
  /** Uncompressed bytes of all column chunks (the writer's `total_byte_size`). */
  readonly totalByteSize: number;
  /** Compressed bytes on disk (`total_compressed_size`, else the sum of the column chunks). */
  readonly compressedBytes: number;
}

export interface ParquetFooter {
  readonly key: string;
  /** Size of the whole file in bytes. */
  readonly size: number;
  /** Length of the Thrift FileMetaData (without the 8 trailing bytes). */
  readonly metadataLength: number;
  /** Total rows; checked to equal the sum of the row groups and to be a safe integer. */
  readonly rows: number;
  readonly rowGroups: readonly ParquetRowGroup[];
  /** Leaf columns in file order. */
  readonly columns: readonly ParquetColumn[];
  /**
   * What files must share to be written into one output: the schema (see `schemaFingerprint` in schema.ts for
   * exactly what is hashed), plus, for a file whose key-value metadata holds entries that change how its values
   * read or describe its contents (`keyValueGroupingOf`), those entries. Provenance entries (writer versions and
   * timestamps, Spark's row schema) never count, so files that differ only in them group together.
   */
  readonly schemaFingerprint: string;
  /** Distinct compression codecs of the column chunks, sorted (e.g. `['SNAPPY']`). */
  readonly codecs: readonly string[];
  readonly createdBy?: string;
  /**
   * File-level key-value metadata (e.g. `ARROW:schema`, `org.apache.spark.sql.parquet.row.metadata`), without the
   * entries of the `ownedKeys` the footer was read with (never decoded: see `ownedEntryBytes`).
   */
  readonly keyValueMetadata: Readonly<Record<string, string>>;
  /**
   * UTF-8 bytes of the entries among `keyValueMetadata` the caller's rewrite recomputes per output (the `ownedKeys`
   * it read the footer with), keys and values; absent when there are none. What planning weighs the file without
   * (`PlanInputFile.recomputedFooterBytes`).
   */
  readonly ownedEntryBytes?: number;
}

/** What readFooter needs from a store: metadata for the size and ranged reads. */
export type FooterSource = Pick<ObjectStore, 'head' | 'getRange'>;

function startsWith(bytes: Uint8Array, offset: number, magic: Readonly<Uint8Array>): boolean {
  for (let i = 0; i < magic.length; i += 1) if (bytes[offset + i] !== magic[i]) return false;
  return true;
}

function describeBytes(bytes: Uint8Array): string {
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join(' ');
  const text = Array.from(bytes, (b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '.')).join('');
  return `${hex} ("${text}")`;
}

/**
 * Checks the 4-byte magic at both ends of a whole file held in memory. Throws CorruptInputError
 * with a reason that starts "not a Parquet file" when either end is wrong.
 */
export function assertParquetMagic(key: string, bytes: Uint8Array): void {
  if (bytes.length < MIN_PARQUET_SIZE) {
    throw new CorruptInputError(
      key,
      `not a Parquet file: ${bytes.length} bytes is shorter than the ${MIN_PARQUET_SIZE}-byte minimum`,
    );
  }
  if (!startsWith(bytes, 0, PARQUET_MAGIC)) {
    throw new CorruptInputError(
      key,
      `not a Parquet file: magic bytes at the start are ${describeBytes(bytes.subarray(0, 4))}, expected "PAR1"`,
    );
  }
  assertTrailingMagic(key, bytes);
}

function assertTrailingMagic(key: string, tail: Uint8Array): void {
  const end = tail.subarray(tail.length - 4);
  if (startsWith(end, 0, PARQUET_MAGIC)) return;
  if (startsWith(end, 0, ENCRYPTED_MAGIC)) {
    throw new UnsupportedInputError(key, 'the footer is encrypted (trailing magic "PARE")');
  }
  throw new CorruptInputError(
    key,
    `not a Parquet file: magic bytes at the end are ${describeBytes(end)}, expected "PAR1" (truncated or not Parquet)`,
  );
}

/**
 * Refuses a footer longer than the memory budget lets one footer be (it is read and parsed whole before any page):
 * as an unreadable footer, so planning skips that file by name and compacts the others.
 */
function checkFooterLength(key: string, metadataLength: number): void {
  const max = currentMetadataLimits().footerBytes;
  if (metadataLength > max) {
    throw new CorruptInputError(
      key,
      `its footer claims ${describeSize(metadataLength)}, more than the ${describeSize(max)} one footer may have in this process's memory (${currentMemoryBudget().advice})`,
    );
  }
}

/** A data page header takes at least this many bytes (page type, both sizes, the data page header's fields). */
const MIN_PAGE_BYTES = 8;
/** A page header's `num_values` is an i32: no page holds more values. */
const MAX_PAGE_VALUES = 2 ** 31 - 1;

/**
 * Where a column chunk's first page starts, from its `data_page_offset` and `dictionary_page_offset`. An offset
 * before the leading magic means "none" (no page can start there): some writers put 0 in dictionary_page_offset
 * when there is no dictionary, and Arrow C++ leaves data_page_offset 0 in a chunk that holds no data page — a
 * chunk of a zero-row row group, only its empty dictionary page (parquet-testing's
 * `column_chunk_key_value_metadata.parquet`) — so the other offset is where the chunk starts. When both are
 * unset the data offset stands and the range check refuses the chunk.
 */
export function columnChunkStart(dataOffset: number, dictionaryOffset: number): number {
  const dataSet = dataOffset >= PARQUET_MAGIC.length;
  const dictSet = dictionaryOffset >= PARQUET_MAGIC.length;
  if (dictSet && (!dataSet || dictionaryOffset < dataOffset)) return dictionaryOffset;
  return dataOffset;
}

function toSafeNumber(key: string, value: bigint | number | undefined, what: string): number {
  if (value === undefined) throw new CorruptInputError(key, `the footer has no ${what}`);
  const n = typeof value === 'bigint' ? value : BigInt(value);
  if (n < 0n || n > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new CorruptInputError(key, `the footer's ${what} ${n} is not a plausible count`);
  }
  return Number(n);
}

/**
 * Parses a footer from the file's last bytes. `tail` must end at the end of the file and hold at
 * least the FileMetaData and the 8 trailing bytes; when it is the whole file, the leading magic
 * is checked too. Pure: use it directly when the file is already in memory.
 */
export function parseFooter(key: string, size: number, tail: Uint8Array): ParquetFooter {
  return parseFooterWithMetadata(key, size, tail).footer;
}

/** What `schemaOf` derives from a footer's schema elements. */
interface DerivedSchema {
  readonly columns: readonly ParquetColumn[];
  readonly fingerprint: string;
}

/** Schemas derived lately, by their elements as parsed (see `schemaOf`); bounded, oldest dropped first. */
const derivedSchemas = new Map<string, DerivedSchema>();
const DERIVED_SCHEMAS_KEPT = 64;

/**
 * The leaf columns and fingerprint of a footer's schema. The files of one table share their schema, and for a
 * tiny file building the tree, its leaves and their SHA-256 was a measurable part of pre-flight, so the result
 * is kept by the elements' JSON — the whole input of the derivation, so a hit is exactly what a rebuild would
 * give. Elements that do not serialise (a 64-bit field hyparquet returns as BigInt) are derived every time.
 */
function schemaOf(elements: FileMetaData['schema']): DerivedSchema {
  let id: string | undefined;
  try {
    id = JSON.stringify(elements);
  } catch {
    id = undefined;
  }
  const kept = id === undefined ? undefined : derivedSchemas.get(id);
  if (kept !== undefined) return kept;
  const root = schemaTree(elements);
  const derived: DerivedSchema = {
    columns: Object.freeze(leafColumns(root)),
    fingerprint: schemaFingerprint(root),
  };
  if (id !== undefined) {
    if (derivedSchemas.size >= DERIVED_SCHEMAS_KEPT) {
      derivedSchemas.delete(derivedSchemas.keys().next().value as string);
    }
    derivedSchemas.set(id, derived);
  }
  return derived;
}

/**
 * `parseFooter` that also returns the FileMetaData it parsed, for callers that check parts of it
 * `ParquetFooter` does not keep (pre-flight's encodings, key-value pairs and schema elements): parsing
 * the Thrift footer is the largest per-file cost of a tiny file's pre-flight, so it is done once.
 */
export function parseFooterWithMetadata(
  key: string,
  size: number,
  tail: Uint8Array,
  ownedKeys: readonly string[] = [],
): { readonly footer: ParquetFooter; readonly metadata: FileMetaData } {
  if (size < MIN_PARQUET_SIZE || tail.length < 8) {
    throw new CorruptInputError(
      key,
      `not a Parquet file: ${size} bytes is shorter than the ${MIN_PARQUET_SIZE}-byte minimum`,
    );
  }
  if (tail.length === size) assertParquetMagic(key, tail);
  else assertTrailingMagic(key, tail);

  const view = new DataView(tail.buffer, tail.byteOffset, tail.byteLength);
  const metadataLength = view.getUint32(tail.length - 8, true);
  if (metadataLength + MIN_PARQUET_SIZE > size) {
    throw new CorruptInputError(
      key,
      `footer length ${metadataLength} does not fit in a file of ${size} bytes (truncated or overwritten)`,
    );
  }
  if (metadataLength + 8 > tail.length) {
    throw new CorruptInputError(
      key,
      `footer needs ${metadataLength + 8} bytes but only ${tail.length} were read`,
    );
  }
  const footerStart = size - 8 - metadataLength;
  checkFooterLength(key, metadataLength);

  const { footerBytes, ownedEntryBytes } = withoutOwnedEntries(
    key,
    tail.subarray(tail.length - 8 - metadataLength),
    ownedKeys,
  );
  let meta: FileMetaData;
  try {
    // geoparquet off: its JSON parsing of key-value metadata is irrelevant here and could throw.
    meta = parquetMetadata(footerBytes, { geoparquet: false });
  } catch (err) {
    throw new CorruptInputError(key, `unreadable footer metadata (${(err as Error).message})`, {
      cause: err,
    });
  }

  let columns: readonly ParquetColumn[];
  let fingerprint: string;
  try {
    ({ columns, fingerprint } = schemaOf(meta.schema ?? []));
  } catch (err) {
    if (!(err instanceof MalformedSchemaError)) throw err;
    throw new CorruptInputError(key, `malformed schema in the footer (${err.message})`, { cause: err });
  }

  const codecs = new Set<string>();
  const rowGroups = (meta.row_groups ?? []).map((group, index): ParquetRowGroup => {
    if (group.columns.length !== columns.length) {
      throw new CorruptInputError(
        key,
        `row group ${index} has ${group.columns.length} column chunks but the schema has ${columns.length} columns`,
      );
    }
    let chunkBytes = 0;
    let smallestChunk = Number.POSITIVE_INFINITY;
    for (const chunk of group.columns) {
      const md = chunk.meta_data;
      if (md === undefined) {
        throw new UnsupportedInputError(key, `row group ${index} keeps column metadata outside the footer`);
      }
      codecs.add(md.codec);
      const compressed = toSafeNumber(key, md.total_compressed_size, 'column chunk size');
      const dataOffset = toSafeNumber(key, md.data_page_offset, 'data page offset');
      const dict = md.dictionary_page_offset === undefined ? 0 : Number(md.dictionary_page_offset);
      const start = columnChunkStart(dataOffset, dict);
      if (start < PARQUET_MAGIC.length || start + compressed > footerStart) {
        throw new CorruptInputError(
          key,
          `column ${md.path_in_schema.join('.')} of row group ${index} points at bytes ${start}..${start + compressed} outside the data region 4..${footerStart}`,
        );
      }
      chunkBytes += compressed;
      smallestChunk = Math.min(smallestChunk, compressed);
    }
    const rows = toSafeNumber(key, group.num_rows, `row count of row group ${index}`);
    // Every row has a value (or a null) in every column chunk, a chunk's pages each hold at most 2^31 − 1 values
    // and take at least MIN_PAGE_BYTES: a count beyond that is a lie (a footer claiming 2^53 − 1 rows), which must
    // be an unreadable footer of that one file, not a plan whose sums overflow.
    const possible = Math.ceil(smallestChunk / MIN_PAGE_BYTES) * MAX_PAGE_VALUES;
    if (group.columns.length > 0 && rows > possible) {
      throw new CorruptInputError(
        key,
        `row group ${index} claims ${rows} rows, more than its ${smallestChunk}-byte column chunk can hold (${possible} at most), so the footer's row count is not plausible`,
      );
    }
    return {
      rows,
      totalByteSize: toSafeNumber(key, group.total_byte_size, `byte size of row group ${index}`),
      compressedBytes:
        group.total_compressed_size === undefined
          ? chunkBytes
          : toSafeNumber(key, group.total_compressed_size, `compressed size of row group ${index}`),
    };
  });

  const rows = toSafeNumber(key, meta.num_rows, 'row count');
  const groupRows = rowGroups.reduce((sum, g) => sum + g.rows, 0);
  if (groupRows !== rows) {
    throw new CorruptInputError(key, `the footer says ${rows} rows but its row groups hold ${groupRows}`);
  }

  const keyValueMetadata = keyValueRecord(meta.key_value_metadata ?? []);
  // Entries a rewrite recomputes per output (`ownedKeys`: a table format's index over each file's rows) describe
  // this file only, so they never keep it apart from files it may be merged with.
  const grouping = keyValueGroupingOf(
    ownedKeys.length === 0
      ? keyValueMetadata
      : Object.fromEntries(Object.entries(keyValueMetadata).filter(([k]) => !ownedKeys.includes(k))),
  );

  const footer: ParquetFooter = {
    key,
    size,
    metadataLength,
    rows,
    rowGroups,
    columns,
    // Unchanged for the files whose metadata has nothing to agree on, so stored plans keep their fingerprints.
    schemaFingerprint:
      grouping === ''
        ? fingerprint
        : createHash('sha256')
            .update(JSON.stringify(['parquet-schema+kv/v1', fingerprint, grouping]))
            .digest('hex'),
    codecs: [...codecs].sort(),
    ...(meta.created_by !== undefined && { createdBy: meta.created_by }),
    keyValueMetadata,
    ...(ownedEntryBytes > 0 && { ownedEntryBytes }),
  };
  return { footer, metadata: meta };
}

/**
 * The footer (FileMetaData and its 8-byte trailer) without the key-value entries of `ownedKeys`, and their UTF-8
 * bytes (keys and values). Why before parsing: those entries are a rewrite's to recompute per output and nobody who
 * names them reads their values from this parse, while a table format's index can dwarf the rest of a small file's
 * footer — a bloom filter of the file's keys is ~430 kB at one format's writers' defaults — and decoding it to a
 * string was the largest single cost of reading such footers (a CPU profile of a 500-file clustering: 4.4 s of
 * TextDecoder in the footer parser alone). Cut from the Thrift bytes (thrift-compact.ts keeps every other field as
 * it was), so the parser never sees them; a footer without them is returned as it is, unparsed.
 */
function withoutOwnedEntries(
  key: string,
  footer: Uint8Array,
  ownedKeys: readonly string[],
): { footerBytes: Uint8Array; ownedEntryBytes: number } {
  const unchanged = { footerBytes: footer, ownedEntryBytes: 0 };
  if (ownedKeys.length === 0) return unchanged;
  const haystack = Buffer.from(footer.buffer, footer.byteOffset, footer.byteLength);
  if (!ownedKeys.some((k) => haystack.includes(k))) return unchanged;
  const thrift = footer.subarray(0, footer.length - 8);
  let struct: ThriftStruct;
  try {
    ({ struct } = decodeStruct(thrift, 0, { shareBytes: true }));
  } catch (err) {
    if (!(err instanceof ThriftDecodeError)) throw err;
    throw new CorruptInputError(key, `unreadable footer metadata (${err.message})`, { cause: err });
  }
  const entries = field(struct, FILE_METADATA_KEY_VALUE);
  if (entries === undefined || !isList(entries.value)) return unchanged;
  let ownedEntryBytes = 0;
  const kept = entries.value.items.filter((item) => {
    const k = isStruct(item) ? field(item, 1)?.value : undefined;
    if (!(k instanceof Uint8Array) || !ownedKeys.includes(Buffer.from(k).toString('utf8'))) return true;
    const v = field(item as ThriftStruct, 2)?.value;
    ownedEntryBytes += k.length + (v instanceof Uint8Array ? v.length : 0);
    return false;
  });
  if (kept.length === entries.value.items.length) return unchanged;
  entries.value.items = kept;
  return { footerBytes: withFooter(new Uint8Array(0), encodeStruct(struct)), ownedEntryBytes };
}

/** `prefix` (a file's bytes before its footer, or none) followed by `metadata` as its footer: length, then magic. */
export function withFooter(prefix: Uint8Array, metadata: Uint8Array): Uint8Array {
  const out = new Uint8Array(prefix.length + metadata.length + 8);
  out.set(prefix, 0);
  out.set(metadata, prefix.length);
  new DataView(out.buffer).setUint32(prefix.length + metadata.length, metadata.length, true);
  out.set(PARQUET_MAGIC, prefix.length + metadata.length + 4);
  return out;
}

/** FileMetaData's `key_value_metadata` (a list of KeyValue structs: key 1, value 2). */
const FILE_METADATA_KEY_VALUE = 5;

async function readExactly(
  store: FooterSource,
  key: string,
  start: number,
  endInclusive: number,
): Promise<Uint8Array> {
  const bytes = await store.getRange(key, start, endInclusive);
  const expected = endInclusive - start + 1;
  if (bytes.length !== expected) {
    throw new CorruptInputError(
      key,
      `read ${bytes.length} bytes at ${start}..${endInclusive} where ${expected} were expected; the object is shorter than its listed size (truncated or replaced since listing — list again and retry)`,
    );
  }
  return bytes;
}

/** The last bytes of a Parquet file: at least the FileMetaData and the 8 trailing bytes, ending at the end. */
export interface FooterBytes {
  /** Size of the whole file in bytes. */
  readonly size: number;
  /** Bytes ending at the end of the file; input for `parseFooter` and the column statistics reader. */
  readonly tail: Uint8Array;
}

/**
 * Reads the bytes `parseFooter` needs, with the requests described at `readFooter`; `firstReadBytes` (at least the
 * usual first read) widens the first read, so a caller that will want a small file whole gets it in that one GET.
 * Exposed on its own for
 * readers of footer parts `ParquetFooter` does not keep (e.g. column statistics), so they make the same
 * two reads at most and never copy this logic.
 * @throws as `readFooter`, except for checks that need the parsed metadata.
 */
export async function readFooterBytes(
  store: FooterSource,
  key: string,
  size?: number,
  firstReadBytes = FOOTER_FIRST_READ_BYTES,
): Promise<FooterBytes> {
  let fileSize = size;
  if (fileSize === undefined) {
    const info = await store.head(key);
    if (info === undefined) throw new ObjectNotFoundError(key);
    fileSize = info.size;
  }
  if (!Number.isSafeInteger(fileSize) || fileSize < MIN_PARQUET_SIZE) {
    throw new CorruptInputError(
      key,
      `not a Parquet file: ${fileSize} bytes is shorter than the ${MIN_PARQUET_SIZE}-byte minimum`,
    );
  }

  const firstStart = Math.max(0, fileSize - Math.max(FOOTER_FIRST_READ_BYTES, firstReadBytes));
  const first = await readExactly(store, key, firstStart, fileSize - 1);
  assertTrailingMagic(key, first);
  const metadataLength = new DataView(first.buffer, first.byteOffset, first.byteLength).getUint32(
    first.length - 8,
    true,
  );
  if (metadataLength + MIN_PARQUET_SIZE > fileSize) {
    throw new CorruptInputError(
      key,
      `footer length ${metadataLength} does not fit in a file of ${fileSize} bytes (truncated or overwritten)`,
    );
  }

  checkFooterLength(key, metadataLength);
  const needed = metadataLength + 8;
  if (needed <= first.length) return { size: fileSize, tail: first };

  const restStart = fileSize - needed;
  const rest = await readExactly(store, key, restStart, firstStart - 1);
  const tail = new Uint8Array(needed);
  tail.set(rest, 0);
  tail.set(first, rest.length);
  return { size: fileSize, tail };
}

/**
 * Reads and parses the footer of `key`. `size` should come from the caller's listing (saves a
 * HEAD); without it one `head` is made. Then the last min(size, 64 KiB) bytes are read and, only
 * when the footer is longer, exactly the missing bytes before them — never more than two reads,
 * always with explicit ranges (suffix ranges are unreliable on local S3 servers).
 *
 * The leading `PAR1` is checked whenever the bytes read include the start of the file (always
 * for files up to 64 KiB); for larger files every column chunk's byte range is instead checked to
 * lie between the leading magic and the footer, which catches files cut or spliced in the middle.
 *
 * @throws CorruptInputError naming the key for anything that is not a sound Parquet footer.
 * @throws UnsupportedInputError for encrypted footers or column metadata kept in other files.
 * @throws ObjectNotFoundError when `size` is omitted and the object does not exist.
 */
export async function readFooter(
  store: FooterSource,
  key: string,
  size?: number,
  ownedKeys?: readonly string[],
): Promise<ParquetFooter> {
  const { size: fileSize, tail } = await readFooterBytes(store, key, size);
  return ownedKeys === undefined
    ? parseFooter(key, fileSize, tail)
    : parseFooterWithMetadata(key, fileSize, tail, ownedKeys).footer;
}
