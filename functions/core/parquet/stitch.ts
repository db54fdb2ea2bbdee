// Row-group stitching: copies whole row groups of Parquet inputs into one output without decoding or
// re-encoding a page, and rebuilds the footer around them — every offset that points into the file moved
// (column chunks, page indexes, bloom filters), everything else (statistics, encodings, sizes) kept as read.

import { createHash } from 'node:crypto';
import type { ComposedRange } from '../../ports/object-store.js';
import { CorruptInputError } from '../errors.js';
import { PARQUET_MAGIC } from './footer.js';
import { replaceKeyValues } from './footer-entries.js';
import { keyValueGroupingOf, thriftKeyValues } from './key-value.js';
import {
  cloneStruct,
  decodeStruct,
  encodeStruct,
  field,
  setField,
  T,
  type ThriftList,
  type ThriftStruct,
} from './thrift-compact.js';

/** Field ids of parquet.thrift used here. */
const FMD = {
  schema: 2,
  numRows: 3,
  rowGroups: 4,
  kv: 5,
  createdBy: 6,
  columnOrders: 7,
  encryption: 8,
  signingKey: 9,
};
const RG = { columns: 1, totalByteSize: 2, numRows: 3, fileOffset: 5, totalCompressed: 6, ordinal: 7 };
const CC = {
  filePath: 1,
  fileOffset: 2,
  metaData: 3,
  offsetIndexOffset: 4,
  offsetIndexLength: 5,
  columnIndexOffset: 6,
  columnIndexLength: 7,
  crypto: 8,
  encryptedMetaData: 9,
};
const CMD = {
  type: 1,
  encodings: 2,
  path: 3,
  codec: 4,
  compressed: 7,
  dataPageOffset: 9,
  indexPageOffset: 10,
  dictionaryPageOffset: 11,
  encodingStats: 13,
  bloomOffset: 14,
  bloomLength: 15,
};
const SCHEMA_TYPE = 1;
const INT32 = 1;
const INT64 = 2;
const INT96 = 3;
const DATA_PAGE = 0;
const DATA_PAGE_V2 = 3;
/** CompressionCodec of parquet.thrift, for the codecs a stitched output may carry. */
export const PARQUET_CODEC_IDS = { snappy: 1, zstd: 6 } as const;
const CODEC_NAMES = ['UNCOMPRESSED', 'SNAPPY', 'GZIP', 'LZO', 'BROTLI', 'LZ4', 'ZSTD', 'LZ4_RAW'];
const ENCODING_NAMES = [
  'PLAIN',
  'GROUP_VAR_INT',
  'PLAIN_DICTIONARY',
  'RLE',
  'BIT_PACKED',
  'DELTA_BINARY_PACKED',
  'DELTA_LENGTH_BYTE_ARRAY',
  'DELTA_BYTE_ARRAY',
  'RLE_DICTIONARY',
  'BYTE_STREAM_SPLIT',
];
/** Encodings every Parquet reader reads (what the engine's writer writes without opt-ins). */
const BASE_ENCODINGS = new Set([0, 2, 3, 4, 8]);
const DELTA_BINARY_PACKED = 5;

/** Bytes `[offset, offset + length)` of a file. */
export interface ByteRange {
  readonly offset: number;
  readonly length: number;
}

interface SourceChunk {
  readonly data: ByteRange;
  readonly columnIndex: ByteRange | undefined;
  readonly offsetIndex: ByteRange | undefined;
  /** Bloom filter start, and its length when the footer records it (else read from its header). */
  readonly bloom: { readonly offset: number; readonly length: number | undefined } | undefined;
}

export interface SourceRowGroup {
  readonly rows: number;
  readonly compressedBytes: number;
  readonly chunks: readonly SourceChunk[];
  readonly struct: ThriftStruct;
}

/** An input's footer decoded for stitching: the raw FileMetaData (every field kept) and its row groups' byte ranges. */
export interface StitchSource {
  readonly meta: ThriftStruct;
  readonly rowGroups: readonly SourceRowGroup[];
  readonly rows: number;
  /** Why the input's bytes cannot be copied as they are (ranges outside the data, encryption…), if so. */
  readonly unusable: string | undefined;
}

/** What an output must be for its row groups to be copied instead of re-encoded. */
export interface StitchTarget {
  readonly codec: keyof typeof PARQUET_CODEC_IDS;
  /** DELTA_BINARY_PACKED allowed on INT32/INT64 columns (the table's readers support it). */
  readonly deltaEncoding: boolean;
  /** A row group is large enough to copy with at least this many compressed bytes… */
  readonly minRowGroupBytes: number;
  /** …or at least this many rows. */
  readonly minRowGroupRows: number;
}

function num(s: ThriftStruct, id: number): number | undefined {
  const v = field(s, id)?.value;
  if (typeof v === 'bigint') return Number(v);
  return typeof v === 'number' ? v : undefined;
}

function struct(s: ThriftStruct, id: number): ThriftStruct | undefined {
  const v = field(s, id)?.value;
  return v !== undefined && typeof v === 'object' && 'fields' in v ? v : undefined;
}

function list(s: ThriftStruct, id: number): ThriftList | undefined {
  const v = field(s, id)?.value;
  return v !== undefined && typeof v === 'object' && 'items' in v ? v : undefined;
}

function structs(s: ThriftStruct, id: number): ThriftStruct[] {
  return (list(s, id)?.items ?? []) as ThriftStruct[];
}

/**
 * Where a column chunk's pages start: the dictionary page when there is one, else the first data page.
 * Old parquet-mr wrote dictionary_page_offset 0 for "none"; an implausible one makes the chunk unusable.
 */
function chunkStart(md: ThriftStruct): number | undefined {
  const data = num(md, CMD.dataPageOffset);
  const dict = num(md, CMD.dictionaryPageOffset);
  if (data === undefined) return undefined;
  if (dict === undefined) return data;
  return dict >= 4 && dict < data ? dict : undefined;
}

/**
 * Decodes an input's FileMetaData (`metadata`: the Thrift bytes before the footer's length and magic) and the
 * byte ranges of its row groups. `dataEnd` is where the footer starts: every range must end before it.
 * @throws CorruptInputError when the footer does not decode.
 */
export function stitchSourceOf(key: string, metadata: Uint8Array, dataEnd: number): StitchSource {
  let meta: ThriftStruct;
  try {
    meta = decodeStruct(metadata).struct;
  } catch (err) {
    throw new CorruptInputError(key, `unreadable footer metadata (${(err as Error).message})`, {
      cause: err,
    });
  }
  let unusable: string | undefined;
  const within = (r: ByteRange | undefined): boolean =>
    r === undefined || (r.offset >= 4 && r.length >= 0 && r.offset + r.length <= dataEnd);
  if (field(meta, FMD.encryption) !== undefined || field(meta, FMD.signingKey) !== undefined) {
    unusable = 'it is encrypted';
  }
  const rowGroups = structs(meta, FMD.rowGroups).map((rg, g): SourceRowGroup => {
    const chunks = structs(rg, RG.columns).map((cc, c): SourceChunk => {
      const md = struct(cc, CC.metaData);
      const where = `row group ${g} column ${c}`;
      if (field(cc, CC.filePath) !== undefined) unusable ??= `${where} lives in another file`;
      if (field(cc, CC.crypto) !== undefined || field(cc, CC.encryptedMetaData) !== undefined) {
        unusable ??= `${where} is encrypted`;
      }
      const start = md === undefined ? undefined : chunkStart(md);
      const length = md === undefined ? undefined : num(md, CMD.compressed);
      if (md === undefined || start === undefined || length === undefined) {
        unusable ??= `${where} has no usable page offsets`;
      }
      const data = { offset: start ?? 0, length: length ?? 0 };
      const rangeOf = (o: number, l: number): ByteRange | undefined => {
        const offset = num(cc, o);
        const len = num(cc, l);
        return offset === undefined || len === undefined ? undefined : { offset, length: len };
      };
      const columnIndex = rangeOf(CC.columnIndexOffset, CC.columnIndexLength);
      const offsetIndex = rangeOf(CC.offsetIndexOffset, CC.offsetIndexLength);
      const bloomOffset = md === undefined ? undefined : num(md, CMD.bloomOffset);
      const bloom =
        bloomOffset === undefined
          ? undefined
          : { offset: bloomOffset, length: md && num(md, CMD.bloomLength) };
      if (
        !within(data) ||
        !within(columnIndex) ||
        !within(offsetIndex) ||
        !within(bloom && { offset: bloom.offset, length: bloom.length ?? 0 })
      ) {
        unusable ??= `${where} points outside the file's data`;
      }
      return { data, columnIndex, offsetIndex, bloom };
    });
    const compressed = num(rg, RG.totalCompressed) ?? chunks.reduce((n, c) => n + c.data.length, 0);
    return { rows: num(rg, RG.numRows) ?? 0, compressedBytes: compressed, chunks, struct: rg };
  });
  const rows = rowGroups.reduce((n, g) => n + g.rows, 0);
  if (rows !== num(meta, FMD.numRows)) unusable ??= 'its row groups do not add up to its row count';
  return { meta, rowGroups, rows, unusable };
}

/**
 * Why `source`'s row groups may not be copied into an output of `target`, or undefined when they may:
 * every row group large enough (a small one is better re-encoded with others), no INT96 column, every
 * column chunk in the target's codec, with only encodings the target's writer would use itself (so the
 * table's readers read it), and version-1 data pages — known from the chunk's encoding statistics, so a
 * chunk without them is re-encoded rather than guessed.
 */
export function stitchRefusal(
  source: StitchSource,
  target: StitchTarget,
  /** The type of the first data page (see `firstDataPage`), for chunks without encoding statistics. */
  firstPageType?: number,
): string | undefined {
  if (source.unusable !== undefined) return source.unusable;
  if (source.rowGroups.length === 0) return 'it has no row groups';
  for (const e of structs(source.meta, FMD.schema)) {
    if (num(e, SCHEMA_TYPE) === INT96) return 'it has INT96 columns, which are converted';
  }
  const codec = PARQUET_CODEC_IDS[target.codec];
  for (const [g, rg] of source.rowGroups.entries()) {
    if (rg.rows < target.minRowGroupRows && rg.compressedBytes < target.minRowGroupBytes) {
      return `row group ${g} has ${rg.rows} rows in ${rg.compressedBytes} bytes, under the stitching thresholds (${target.minRowGroupRows} rows or ${target.minRowGroupBytes} bytes)`;
    }
    for (const cc of structs(rg.struct, RG.columns)) {
      const md = struct(cc, CC.metaData) as ThriftStruct;
      const path = (list(md, CMD.path)?.items ?? [])
        .map((p) => new TextDecoder().decode(p as Uint8Array))
        .join('.');
      const chunkCodec = num(md, CMD.codec);
      if (chunkCodec !== codec) {
        return `column ${path} is ${CODEC_NAMES[chunkCodec ?? -1] ?? `codec ${chunkCodec}`}, the target is ${CODEC_NAMES[codec]}`;
      }
      const type = num(md, CMD.type);
      const allowed = (e: number) =>
        BASE_ENCODINGS.has(e) ||
        (e === DELTA_BINARY_PACKED && target.deltaEncoding && (type === INT32 || type === INT64));
      for (const e of (list(md, CMD.encodings)?.items ?? []) as number[]) {
        if (!allowed(e))
          return `column ${path} uses ${ENCODING_NAMES[e] ?? `encoding ${e}`}, which the target does not write`;
      }
      const stats = list(md, CMD.encodingStats);
      if (stats === undefined && firstPageType !== DATA_PAGE) {
        return `column ${path} has no encoding statistics and its first data page is not known to be version 1`;
      }
      for (const s of (stats?.items ?? []) as ThriftStruct[]) {
        if (num(s, 1) === DATA_PAGE_V2) return `column ${path} has version-2 data pages`;
        const e = num(s, 2) ?? -1;
        if (!allowed(e))
          return `column ${path} uses ${ENCODING_NAMES[e] ?? `encoding ${e}`}, which the target does not write`;
      }
    }
  }
  return undefined;
}

/**
 * Where the file's first data page header is (its first column chunk's `data_page_offset`). Writers choose
 * the data page version per file (parquet-mr's writer version, DuckDB's PARQUET_VERSION, arrow's
 * data_page_version), so for footers without encoding statistics this one header tells the version.
 */
export function firstDataPage(source: StitchSource): number | undefined {
  const cc = structs(source.rowGroups[0]?.struct ?? { fields: [] }, RG.columns)[0];
  const md = cc === undefined ? undefined : struct(cc, CC.metaData);
  return md === undefined ? undefined : num(md, CMD.dataPageOffset);
}

/** The page type of the PageHeader at the start of `bytes` (field 1), or undefined when it does not decode. */
export function pageTypeOf(bytes: Uint8Array): number | undefined {
  try {
    return num(decodeStruct(bytes).struct, 1);
  } catch {
    return undefined;
  }
}

/**
 * Identity of what an output's footer takes from its inputs besides the row groups — schema elements
 * as written, created_by and column orders, and of the key-value metadata only what files must agree on
 * (`keyValueGroupingOf`: Spark's calendar rebase, content entries), not writer stamps. Inputs that share it
 * may share a stitched output, whose footer is its first input's (key-value metadata included, as a re-encoded
 * run's). created_by counts because readers work around known writer bugs by it (e.g. statistics of old
 * parquet-mr): an output says who wrote its pages.
 */
export function stitchKeyOf(source: StitchSource): string {
  const kept: ThriftStruct = {
    fields: source.meta.fields.filter((f) => [FMD.schema, FMD.createdBy, FMD.columnOrders].includes(f.id)),
  };
  return createHash('sha256')
    .update(encodeStruct(kept))
    .update(keyValueGroupingOf(thriftKeyValues(source.meta)))
    .digest('hex');
}

/** The length of the bloom filter at `offset` of `bytes`: its header (Thrift) plus the bitset it announces. */
function bloomLength(bytes: Uint8Array, offset: number): number {
  const { struct: header, end } = decodeStruct(bytes, offset);
  return end - offset + (num(header, 1) ?? 0);
}

/** OffsetIndex `bytes` with every page location's offset moved by `delta` (field 1: page_locations; PageLocation.1: offset). */
function rebasedOffsetIndex(bytes: Uint8Array, delta: number): Uint8Array {
  const index = decodeStruct(bytes).struct;
  for (const loc of structs(index, 1)) {
    const offset = field(loc, 1);
    if (offset !== undefined) offset.value = BigInt(num(loc, 1) ?? 0) + BigInt(delta);
  }
  return encodeStruct(index);
}

/** Bytes `[offset, offset + bytes.length)` of a file. */
export interface FileRegion {
  readonly offset: number;
  readonly bytes: Uint8Array;
}

/**
 * The bytes of `source` that stitching must read besides its pages: every column index, offset index and
 * bloom filter, as one span (writers put them together, between the last row group and the footer); a bloom
 * filter of unknown length reaches to `dataEnd` (the footer's start). Undefined when there are none.
 */
export function auxSpanOf(source: StitchSource, dataEnd: number): ByteRange | undefined {
  let start = Number.POSITIVE_INFINITY;
  let end = Number.NEGATIVE_INFINITY;
  const cover = (offset: number, until: number): void => {
    start = Math.min(start, offset);
    end = Math.max(end, until);
  };
  for (const group of source.rowGroups) {
    for (const chunk of group.chunks) {
      if (chunk.columnIndex)
        cover(chunk.columnIndex.offset, chunk.columnIndex.offset + chunk.columnIndex.length);
      if (chunk.offsetIndex)
        cover(chunk.offsetIndex.offset, chunk.offsetIndex.offset + chunk.offsetIndex.length);
      if (chunk.bloom) {
        cover(
          chunk.bloom.offset,
          chunk.bloom.length === undefined ? dataEnd : chunk.bloom.offset + chunk.bloom.length,
        );
      }
    }
  }
  return start > end ? undefined : { offset: start, length: end - start };
}

/** A row group's column chunk after copying: where its pages went, and its index and filter bytes, for the tail. */
interface PlacedChunk {
  readonly cc: ThriftStruct;
  readonly columnIndex: Uint8Array | undefined;
  readonly offsetIndex: Uint8Array | undefined;
  readonly bloom: Uint8Array | undefined;
}

/**
 * Builds one stitched output as a sequence of byte slices: `PAR1`, then each input's row groups as they
 * are (views of the input's bytes, never copied), then bloom filters, column indexes and offset indexes
 * (offset indexes rebased: they hold absolute page offsets), then the footer — the first input's FileMetaData
 * with its row groups replaced by the copied ones, every offset moved, row count summed.
 */
export class StitchAssembler {
  private position = PARQUET_MAGIC.length;
  private template: ThriftStruct | undefined;
  private readonly rowGroups: { rg: ThriftStruct; chunks: PlacedChunk[] }[] = [];
  rows = 0;

  /** The output's first bytes. */
  start(): Uint8Array[] {
    return [PARQUET_MAGIC.slice()];
  }

  /**
   * Appends row groups `rowGroups` (default: all) of an input whose whole file is `bytes`; returns the
   * slices to write next, in order. Inputs of one output must share a stitch key (see `stitchKeyOf`).
   */
  append(bytes: Uint8Array, source: StitchSource, rowGroups?: readonly number[]): Uint8Array[] {
    const out: Uint8Array[] = [];
    this.place(source, { offset: 0, bytes }, rowGroups, (range) => {
      const last = out.at(-1);
      const slice = bytes.subarray(range.offset, range.offset + range.length);
      // Adjacent chunks (the usual layout) go out as one view of the input.
      if (
        last !== undefined &&
        last.buffer === bytes.buffer &&
        last.byteOffset + last.length === slice.byteOffset
      ) {
        out[out.length - 1] = new Uint8Array(bytes.buffer, last.byteOffset, last.length + slice.length);
      } else out.push(slice);
    });
    return out;
  }

  /**
   * Appends row groups of an input without its page bytes: returns the ranges of `object` (at its ETag) to
   * write next, in order, for a store to copy. `aux` must hold the input's bytes over `auxSpanOf` (its page
   * indexes and bloom filters, which move to the output's tail and so must be read); the output is the same,
   * byte for byte, as `append` of the whole file makes.
   */
  appendRanges(
    source: StitchSource,
    object: { readonly key: string; readonly etag: string },
    aux: FileRegion,
    rowGroups?: readonly number[],
  ): ComposedRange[] {
    const out: ComposedRange[] = [];
    this.place(source, aux, rowGroups, (range) => {
      if (range.length === 0) return;
      const last = out.at(-1);
      if (last !== undefined && last.endInclusive + 1 === range.offset) {
        out[out.length - 1] = { ...last, endInclusive: range.offset + range.length - 1 };
      } else {
        out.push({
          kind: 'range',
          key: object.key,
          etag: object.etag,
          start: range.offset,
          endInclusive: range.offset + range.length - 1,
        });
      }
    });
    return out;
  }

  /**
   * Places row groups of `source`: each column chunk's pages go to `emit` (in output order) and its offsets
   * move; its page indexes and bloom filter are taken from `region` for the tail.
   */
  private place(
    source: StitchSource,
    region: FileRegion,
    rowGroups: readonly number[] | undefined,
    emit: (pages: ByteRange) => void,
  ): void {
    this.template ??= source.meta;
    const at = (offset: number, length: number): Uint8Array => {
      const from = offset - region.offset;
      if (from < 0 || from + length > region.bytes.length) {
        throw new Error(`StitchAssembler: bytes ${offset}+${length} are outside the region read`);
      }
      return region.bytes.subarray(from, from + length);
    };
    for (const g of rowGroups ?? source.rowGroups.map((_, i) => i)) {
      const group = source.rowGroups[g] as SourceRowGroup;
      const rg = cloneStruct(group.struct);
      const ccs = structs(rg, RG.columns);
      const placed: PlacedChunk[] = [];
      let first: number | undefined;
      for (const [c, chunk] of group.chunks.entries()) {
        const cc = ccs[c] as ThriftStruct;
        const delta = this.position - chunk.data.offset;
        first ??= this.position;
        emit(chunk.data);
        this.position += chunk.data.length;
        const md = struct(cc, CC.metaData) as ThriftStruct;
        for (const id of [CMD.dataPageOffset, CMD.indexPageOffset, CMD.dictionaryPageOffset]) {
          const f = field(md, id);
          if (f !== undefined) f.value = BigInt(num(md, id) ?? 0) + BigInt(delta);
        }
        const fileOffset = num(cc, CC.fileOffset);
        if (fileOffset !== undefined && fileOffset > 0)
          setField(cc, CC.fileOffset, T.I64, BigInt(fileOffset + delta));
        const bloom =
          chunk.bloom === undefined
            ? undefined
            : at(
                chunk.bloom.offset,
                chunk.bloom.length ?? bloomLength(region.bytes, chunk.bloom.offset - region.offset),
              ).slice();
        placed.push({
          cc,
          columnIndex:
            chunk.columnIndex === undefined
              ? undefined
              : at(chunk.columnIndex.offset, chunk.columnIndex.length).slice(),
          offsetIndex:
            chunk.offsetIndex === undefined
              ? undefined
              : rebasedOffsetIndex(at(chunk.offsetIndex.offset, chunk.offsetIndex.length), delta),
          bloom,
        });
      }
      if (field(rg, RG.fileOffset) !== undefined && first !== undefined)
        setField(rg, RG.fileOffset, T.I64, BigInt(first));
      if (field(rg, RG.ordinal) !== undefined) setField(rg, RG.ordinal, T.I16, this.rowGroups.length);
      this.rowGroups.push({ rg, chunks: placed });
      this.rows += group.rows;
    }
  }

  /** Bytes written so far (the data part of the output). */
  get bytes(): number {
    return this.position;
  }

  /**
   * The output's last bytes: bloom filters, column indexes, offset indexes, footer, its length, `PAR1`. With
   * `keyValues`, the footer's key-value metadata is changed as `withFooterEntries` changes a written file's (entries
   * computed over the joined rows, which no part's footer could hold).
   */
  finish(keyValues?: {
    readonly entries: Readonly<Record<string, string>>;
    readonly drop: readonly string[];
  }): Uint8Array[] {
    if (this.template === undefined) throw new Error('StitchAssembler: nothing appended');
    const out: Uint8Array[] = [];
    const place = (bytes: Uint8Array): number => {
      const at = this.position;
      out.push(bytes);
      this.position += bytes.length;
      return at;
    };
    for (const { chunks } of this.rowGroups) {
      for (const p of chunks) {
        if (p.bloom === undefined) continue;
        const md = struct(p.cc, CC.metaData) as ThriftStruct;
        setField(md, CMD.bloomOffset, T.I64, BigInt(place(p.bloom)));
        if (field(md, CMD.bloomLength) !== undefined) setField(md, CMD.bloomLength, T.I32, p.bloom.length);
      }
    }
    for (const [what, offsetId, lengthId] of [
      ['columnIndex', CC.columnIndexOffset, CC.columnIndexLength],
      ['offsetIndex', CC.offsetIndexOffset, CC.offsetIndexLength],
    ] as const) {
      for (const { chunks } of this.rowGroups) {
        for (const p of chunks) {
          const bytes = p[what];
          if (bytes === undefined) continue;
          setField(p.cc, offsetId, T.I64, BigInt(place(bytes)));
          setField(p.cc, lengthId, T.I32, bytes.length);
        }
      }
    }
    const meta = cloneStruct(this.template);
    setField(meta, FMD.numRows, T.I64, BigInt(this.rows));
    setField(meta, FMD.rowGroups, T.LIST, { elementType: T.STRUCT, items: this.rowGroups.map((g) => g.rg) });
    if (keyValues !== undefined) replaceKeyValues(meta, keyValues.entries, keyValues.drop);
    const footer = encodeStruct(meta);
    const length = new Uint8Array(4);
    new DataView(length.buffer).setUint32(0, footer.length, true);
    out.push(footer, length, PARQUET_MAGIC.slice());
    this.position += footer.length + 8;
    return out;
  }
}

/** The FileMetaData bytes of a whole Parquet file held in memory (between the data and the length + `PAR1`). */
export function metadataBytesOf(key: string, file: Uint8Array): Uint8Array {
  if (file.length < 12) throw new CorruptInputError(key, 'too short to be Parquet');
  const length = new DataView(file.buffer, file.byteOffset, file.byteLength).getUint32(file.length - 8, true);
  if (length + 12 > file.length) throw new CorruptInputError(key, `footer length ${length} exceeds the file`);
  return file.subarray(file.length - 8 - length, file.length - 8);
}

/**
 * The engine's default stitching thresholds: an input is copied row group by row group when every row group has at
 * least this many compressed bytes or rows (parquet-wasm's settings take their defaults from here, and planning
 * uses them to tell which inputs a run will copy — the cost estimate's stitched path).
 */
export const DEFAULT_STITCH_THRESHOLDS = {
  minRowGroupBytes: 16 * 1024 * 1024,
  minRowGroupRows: 100_000,
} as const;

/**
 * Bytes per ranged read when verify compares a stitched output's ranges with its sources' (`hashRange` in the
 * parquet-wasm adapter): memory stays bounded whatever a column chunk's size, at one GET per piece and side.
 */
export const PROOF_PIECE_BYTES = 8 * 1024 * 1024;

/** What copying an input row group by row group costs in requests, known from its footer (see `stitchCostOf`). */
export interface StitchCost {
  /** The codec an output must have for the input to be copied into it. */
  readonly codec: keyof typeof PARQUET_CODEC_IDS;
  readonly rowGroups: number;
  /**
   * Ranged GETs verify's proof sends to each side — the stitched output and this source — to compare the input's
   * ranges: its pages in `PROOF_PIECE_BYTES` pieces, each column index likewise, each offset index once, each
   * bloom filter once (twice, header then bytes, when the footer records no length).
   */
  readonly proofReadsPerSide: number;
  /** Whether the rewrite reads a data page header to learn the page version (no encoding statistics: DuckDB's files). */
  readonly pageHeaderRead: boolean;
}

/**
 * How the engine would copy `source` with the default thresholds, or undefined when it would re-encode it whatever
 * the run's codec: a row group under both thresholds, an unusable layout, INT96, an encoding or page version the
 * target does not write. Planning records it per input (the cost estimate's stitched path); the engine decides
 * again from the bytes, so a file changed since is only mispriced, never mis-copied.
 */
export function stitchCostOf(source: StitchSource): StitchCost | undefined {
  const codec = (Object.keys(PARQUET_CODEC_IDS) as (keyof typeof PARQUET_CODEC_IDS)[]).find(
    (c) =>
      stitchRefusal(source, { codec: c, deltaEncoding: false, ...DEFAULT_STITCH_THRESHOLDS }, DATA_PAGE) ===
      undefined,
  );
  if (codec === undefined) return undefined;
  const pieces = (r: ByteRange | undefined) =>
    r === undefined ? 0 : Math.ceil(r.length / PROOF_PIECE_BYTES);
  let proofReadsPerSide = 0;
  for (const group of source.rowGroups) {
    for (const chunk of group.chunks) {
      proofReadsPerSide += pieces(chunk.data) + pieces(chunk.columnIndex);
      if (chunk.offsetIndex !== undefined && chunk.offsetIndex.length > 0) proofReadsPerSide += 1;
      if (chunk.bloom !== undefined)
        proofReadsPerSide +=
          chunk.bloom.length === undefined ? 2 : pieces({ offset: 0, length: chunk.bloom.length });
    }
  }
  const target = { codec, deltaEncoding: false, ...DEFAULT_STITCH_THRESHOLDS };
  return {
    codec,
    rowGroups: source.rowGroups.length,
    proofReadsPerSide,
    pageHeaderRead: stitchRefusal(source, target) !== undefined,
  };
}
