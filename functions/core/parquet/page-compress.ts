// Page compression after the encoder: a Parquet file written with UNCOMPRESSED pages is streamed through here and
// comes out in another codec — each page's body compressed by a function given to it (a native ZSTD, off the thread
// that encodes), each page header rewritten, and the footer, offset indexes and bloom filter offsets moved to where
// the pages went. Pure apart from that function: bytes in, bytes out, so the same code is proven with any codec.

import { crc32 } from 'node:zlib';
import { CompactorError } from '../errors.js';
import { PARQUET_MAGIC } from './footer.js';
import {
  decodeStruct,
  encodeStruct,
  field,
  setField,
  T,
  ThriftDecodeError,
  type ThriftList,
  type ThriftStruct,
} from './thrift-compact.js';

/** Compresses one page body (or, for a version-2 data page, its values section): a pure function of the bytes. */
export type CompressBytes = (bytes: Uint8Array) => Promise<Uint8Array>;

/** A compressor and the Parquet codec (CompressionCodec of parquet.thrift) its output is in. */
export interface PageCodec {
  /** CompressionCodec id written into the footer: 6 ZSTD, 2 GZIP, … */
  readonly codecId: number;
  readonly compress: CompressBytes;
}

/** The stream was not what the encoder writes with UNCOMPRESSED pages, or the result would not be a valid file. */
export class PageCompressionError extends CompactorError {}

/** CompressionCodec.ZSTD of parquet.thrift. */
export const PARQUET_ZSTD = 6;
/** CompressionCodec.GZIP of parquet.thrift (used to prove the rewriting with a codec every runtime has). */
export const PARQUET_GZIP = 2;

const PH = { type: 1, uncompressed: 2, compressed: 3, crc: 4, dataV2: 8 };
const V2 = { defLength: 5, repLength: 6, isCompressed: 7 };
const DATA_PAGE = 0;
const INDEX_PAGE = 1;
const DICTIONARY_PAGE = 2;
const DATA_PAGE_V2 = 3;
const FMD = { rowGroups: 4 };
const RG = { columns: 1, totalByteSize: 2, fileOffset: 5, totalCompressed: 6 };
const CC = {
  fileOffset: 2,
  metaData: 3,
  offsetIndexOffset: 4,
  offsetIndexLength: 5,
  columnIndexOffset: 6,
  columnIndexLength: 7,
};
const CMD = {
  codec: 4,
  uncompressed: 6,
  compressed: 7,
  dataPageOffset: 9,
  indexPageOffset: 10,
  dictionaryPageOffset: 11,
  bloomOffset: 14,
  bloomLength: 15,
};
const UNCOMPRESSED = 0;

/** Bound on bytes held while looking for the end of a page header or the footer (a broken stream fails, not grows). */
const MAX_PENDING_BYTES = 256 * 1024 * 1024;

function num(s: ThriftStruct, id: number): number | undefined {
  const v = field(s, id)?.value;
  if (typeof v === 'bigint') return Number(v);
  return typeof v === 'number' ? v : undefined;
}

function sub(s: ThriftStruct, id: number): ThriftStruct | undefined {
  const v = field(s, id)?.value;
  return v !== undefined && typeof v === 'object' && 'fields' in v ? v : undefined;
}

function structs(s: ThriftStruct, id: number): ThriftStruct[] {
  const v = field(s, id)?.value;
  return v !== undefined && typeof v === 'object' && 'items' in v
    ? ((v as ThriftList).items as ThriftStruct[])
    : [];
}

/** What one item of the data region became: a page (its header sizes, for the chunk sizes) or a copied blob. */
interface Placed {
  readonly oldOffset: number;
  readonly oldLength: number;
  readonly newOffset: number;
  readonly newLength: number;
  /** Header bytes before and after (0 for a blob): `total_uncompressed_size` counts headers. */
  readonly oldHeader: number;
  readonly newHeader: number;
}

/** One item queued for output, in file order: its compression may still be running. */
interface Pending {
  readonly oldOffset: number;
  readonly oldLength: number;
  readonly oldHeader: number;
  readonly inputBytes: number;
  readonly result: Promise<{ header: Uint8Array; body: Uint8Array[] }>;
  settled: boolean;
}

/**
 * Whether `s` is a page header as the encoder writes it without compression: a known page type and equal,
 * non-negative sizes (a version-2 page also says it is not compressed). Anything else — a column index, an offset
 * index, a bloom filter header — ends the run of pages.
 */
function pageHeaderOf(s: ThriftStruct): { type: number; size: number } | undefined {
  const type = num(s, PH.type);
  const f2 = field(s, PH.uncompressed);
  const f3 = field(s, PH.compressed);
  if (type === undefined || f2?.type !== T.I32 || f3?.type !== T.I32) return undefined;
  if (type !== DATA_PAGE && type !== DICTIONARY_PAGE && type !== DATA_PAGE_V2 && type !== INDEX_PAGE)
    return undefined;
  const size = f3.value as number;
  return size >= 0 ? { type, size } : undefined;
}

/** A bloom filter header (BloomFilterHeader: numBytes, then algorithm, hash and compression structs). */
function bloomFilterBytesOf(s: ThriftStruct): number | undefined {
  const bytes = num(s, 1);
  const second = field(s, 2);
  return bytes !== undefined && bytes >= 0 && second?.type === T.STRUCT ? bytes : undefined;
}

/**
 * The new header and body of one page: version-1 data and dictionary pages compressed whole; a version-2 data page
 * keeps its repetition and definition levels as they are and compresses its values (an empty values section stays
 * uncompressed, flagged so: not every reader decompresses an empty buffer). The CRC, when the header has one, is
 * recomputed over the body as written.
 */
async function compressPage(
  header: ThriftStruct,
  type: number,
  body: Uint8Array,
  codec: PageCodec,
): Promise<{ header: Uint8Array; body: Uint8Array[] }> {
  const uncompressed = num(header, PH.uncompressed);
  if (uncompressed !== body.length) {
    throw new PageCompressionError(
      `a page's header says ${uncompressed} uncompressed bytes for ${body.length} bytes: the encoder did not write it uncompressed`,
    );
  }
  let parts: Uint8Array[];
  if (type === DATA_PAGE_V2) {
    const v2 = sub(header, PH.dataV2);
    if (v2 === undefined) throw new PageCompressionError('a version-2 data page has no data_page_header_v2');
    const levels = (num(v2, V2.defLength) ?? 0) + (num(v2, V2.repLength) ?? 0);
    if (levels > body.length)
      throw new PageCompressionError('a version-2 data page has levels longer than the page');
    const values = body.subarray(levels);
    if (values.length === 0) {
      parts = [copyOf(body)];
      setField(v2, V2.isCompressed, T.FALSE, false);
    } else {
      parts = [copyOf(body.subarray(0, levels)), await codec.compress(values)];
      setField(v2, V2.isCompressed, T.TRUE, true);
    }
  } else {
    parts = [await codec.compress(body)];
  }
  const size = parts.reduce((n, p) => n + p.length, 0);
  setField(header, PH.compressed, T.I32, size);
  if (field(header, PH.crc) !== undefined) {
    let crc = 0;
    for (const p of parts) crc = crc32(p, crc);
    setField(header, PH.crc, T.I32, crc | 0);
  }
  return { header: encodeStruct(header), body: parts };
}

/**
 * A copy of `b`, a slice of the input: yielded as a view, it would keep the encoder's whole chunk (a row group)
 * alive for as long as the consumer holds it (the output writer keeps its last bytes until close).
 */
function copyOf(b: Uint8Array): Uint8Array {
  return Uint8Array.prototype.slice.call(b);
}

/** Options of `compressPages`. */
export interface CompressPagesOptions {
  /** Pages whose compression may run at once (each runs where `compress` runs it: a thread pool). */
  readonly maxPagesInFlight?: number;
  /** Uncompressed bytes of those pages, at most (one larger page still runs alone). */
  readonly maxBytesInFlight?: number;
}

/**
 * Streams a Parquet file whose pages are UNCOMPRESSED (`source`, in order, cut anywhere) into the same file with
 * every page compressed by `codec`: pages are compressed as they arrive, several at once (bounded), and written in
 * order; what follows the last page (column and offset indexes, bloom filters, the footer) is held until the end
 * and rebuilt: each column chunk gets the codec, its new sizes and page offsets, each offset index its pages' new
 * offsets and sizes, each bloom filter and index its new place. Statistics, encodings and everything else are kept.
 * The footer is checked against the pages seen: each column chunk must be exactly a run of them.
 * What it yields may be views sharing an ArrayBuffer with other live bytes (a compressor's output buffer, a Node
 * Buffer pool): a consumer that transfers bytes to another thread copies them first.
 * @throws PageCompressionError when the stream is not an uncompressed Parquet file this can rewrite exactly.
 */
export async function* compressPages(
  source: AsyncIterable<Uint8Array>,
  codec: PageCodec,
  options: CompressPagesOptions = {},
): AsyncGenerator<Uint8Array> {
  const maxPages = Math.max(1, options.maxPagesInFlight ?? 8);
  const maxBytes = Math.max(1, options.maxBytesInFlight ?? 16 * 1024 * 1024);
  let buf: Uint8Array = new Uint8Array(0);
  let pos = 0;
  /** File offset of `buf[0]`. */
  let base = 0;
  let magicSeen = false;
  /** Pages are still being read; false from the first item that is not a page (the tail). */
  let inPages = true;
  let written = 0;
  let bytesInFlight = 0;
  const queue: Pending[] = [];
  const placed = new Map<number, Placed>();
  let dataEnd = 0;

  const enqueue = (
    oldOffset: number,
    oldLength: number,
    oldHeader: number,
    inputBytes: number,
    result: Pending['result'],
  ) => {
    const item: Pending = { oldOffset, oldLength, oldHeader, inputBytes, result, settled: false };
    result.then(
      () => {
        item.settled = true;
      },
      () => {
        item.settled = true;
      },
    );
    bytesInFlight += inputBytes;
    queue.push(item);
  };

  /** Writes the first queued item out (waiting for it), recording where it went. */
  async function* emitHead(): AsyncGenerator<Uint8Array> {
    const item = queue.shift() as Pending;
    const { header, body } = await item.result;
    bytesInFlight -= item.inputBytes;
    const newLength = header.length + body.reduce((n, b) => n + b.length, 0);
    placed.set(item.oldOffset, {
      oldOffset: item.oldOffset,
      oldLength: item.oldLength,
      newOffset: written,
      newLength,
      oldHeader: item.oldHeader,
      newHeader: header.length,
    });
    written += newLength;
    if (header.length > 0) yield header;
    for (const b of body) if (b.length > 0) yield b;
  }

  /** Queues every whole page (or data-region bloom filter) now in `buf`; stops at the first item of the tail. */
  const scan = (): void => {
    if (!magicSeen) {
      if (buf.length - pos < 4) return;
      if (PARQUET_MAGIC.some((b, i) => buf[pos + i] !== b))
        throw new PageCompressionError('the stream does not start with PAR1');
      const magic = buf.slice(pos, pos + 4);
      enqueue(0, 4, 0, 0, Promise.resolve({ header: new Uint8Array(0), body: [magic] }));
      pos += 4;
      magicSeen = true;
    }
    while (inPages && pos < buf.length) {
      let decoded: { struct: ThriftStruct; end: number };
      try {
        decoded = decodeStruct(buf, pos);
      } catch (err) {
        if (err instanceof ThriftDecodeError) {
          // Incomplete: wait for more bytes (or the end); twice as many, so a header cut into bytes is no
          // quadratic rescan.
          need = Math.max(64, 2 * (buf.length - pos));
          return;
        }
        throw err;
      }
      const offset = base + pos;
      const headerLength = decoded.end - pos;
      const page = pageHeaderOf(decoded.struct);
      const bloom = page === undefined ? bloomFilterBytesOf(decoded.struct) : undefined;
      if (page === undefined && bloom === undefined) {
        inPages = false;
        dataEnd = offset;
        return;
      }
      const bodyLength = page?.size ?? (bloom as number);
      if (decoded.end + bodyLength > buf.length) {
        need = decoded.end + bodyLength - pos;
        return;
      }
      const body = buf.subarray(decoded.end, decoded.end + bodyLength);
      const whole = buf.subarray(pos, decoded.end + bodyLength);
      if (page === undefined || page.type === INDEX_PAGE) {
        // A bloom filter written between row groups (or an index page): copied as it is, only moved.
        enqueue(
          offset,
          whole.length,
          0,
          0,
          Promise.resolve({ header: new Uint8Array(0), body: [copyOf(whole)] }),
        );
      } else {
        enqueue(
          offset,
          whole.length,
          headerLength,
          body.length,
          compressPage(decoded.struct, page.type, body, codec),
        );
      }
      pos = decoded.end + bodyLength;
    }
  };

  /** Chunks received but not yet joined to `buf`: joined only once `need` bytes are there (no rescan per chunk). */
  const parts: Uint8Array[] = [];
  let partsBytes = 0;
  /** Bytes from `pos` the next scan needs to make progress (0: any). */
  let need = 0;

  /** Adds a chunk; true when enough is held for the scan to make progress. */
  const append = (chunk: Uint8Array): boolean => {
    parts.push(chunk);
    partsBytes += chunk.length;
    const held = buf.length - pos + partsBytes;
    if (held > MAX_PENDING_BYTES) {
      throw new PageCompressionError(
        `more than ${MAX_PENDING_BYTES} bytes held without a whole page or footer`,
      );
    }
    if (held < need) return false;
    if (pos >= buf.length && parts.length === 1) {
      base += buf.length;
      buf = chunk;
    } else {
      const joined = new Uint8Array(held);
      joined.set(buf.subarray(pos), 0);
      let at = buf.length - pos;
      for (const p of parts) {
        joined.set(p, at);
        at += p.length;
      }
      base += pos;
      buf = joined;
    }
    parts.length = 0;
    partsBytes = 0;
    pos = 0;
    need = 0;
    return true;
  };

  for await (const chunk of source) {
    if (chunk.length === 0) continue;
    if (append(chunk) && inPages) scan();
    while (
      queue.length > 0 &&
      (queue[0]?.settled === true || queue.length > maxPages || bytesInFlight > maxBytes)
    ) {
      yield* emitHead();
    }
  }
  need = 0;
  if (partsBytes > 0) append(new Uint8Array(0));
  if (inPages) scan();
  while (queue.length > 0) yield* emitHead();
  if (inPages) {
    // The stream ended inside what looked like pages: only a footer can follow the last page.
    dataEnd = base + pos;
  }
  yield* rebuildTail(buf.subarray(pos), base + pos, dataEnd, placed, codec.codecId, written);
}

/**
 * The file after its data region: `tail` is every byte from `tailStart` (the first byte that was not a page) to the
 * end, holding the old indexes, bloom filters and footer. Emits the bloom filters, column indexes and offset indexes
 * that the footer points at (in their old order), then the rewritten footer, its length and `PAR1`.
 */
function* rebuildTail(
  tail: Uint8Array,
  tailStart: number,
  dataEnd: number,
  placed: ReadonlyMap<number, Placed>,
  codecId: number,
  written: number,
): Generator<Uint8Array> {
  const n = tail.length;
  if (n < 8 || PARQUET_MAGIC.some((b, i) => tail[n - 4 + i] !== b)) {
    throw new PageCompressionError('the stream does not end with a Parquet footer');
  }
  const footerLength = new DataView(tail.buffer, tail.byteOffset + n - 8, 4).getUint32(0, true);
  const footerStart = n - 8 - footerLength;
  if (footerStart < 0)
    throw new PageCompressionError('the footer is longer than the bytes after the last page');
  const meta = decodeStruct(tail.subarray(footerStart, n - 8)).struct;
  const shift = (offset: number): number => {
    const p = placed.get(offset);
    if (p === undefined)
      throw new PageCompressionError(`the footer points at ${offset}, where no page starts`);
    return p.newOffset;
  };
  /** Old offset → item of the tail the footer points at, with its new bytes (set when laid out). */
  const tailItems: {
    offset: number;
    length: number;
    bytes: Uint8Array;
    set: (at: number, length: number) => void;
  }[] = [];
  const tailBytes = (offset: number, length: number): Uint8Array => {
    const from = offset - tailStart;
    if (from < 0 || from + length > footerStart) {
      throw new PageCompressionError(
        `bytes ${offset}+${length} are not in the region between the pages and the footer`,
      );
    }
    return tail.subarray(from, from + length);
  };
  for (const rg of structs(meta, FMD.rowGroups)) {
    let first: number | undefined;
    let uncompressedDelta = 0;
    let compressedTotal = 0;
    for (const cc of structs(rg, RG.columns)) {
      const md = sub(cc, CC.metaData);
      if (md === undefined) throw new PageCompressionError('a column chunk has no metadata');
      if (num(md, CMD.codec) !== UNCOMPRESSED)
        throw new PageCompressionError('a column chunk is already compressed');
      const dataOffset = num(md, CMD.dataPageOffset);
      const dictOffset = num(md, CMD.dictionaryPageOffset);
      const length = num(md, CMD.compressed);
      if (dataOffset === undefined || length === undefined)
        throw new PageCompressionError('a column chunk has no offsets');
      const start =
        dictOffset !== undefined && dictOffset > 0 && dictOffset < dataOffset ? dictOffset : dataOffset;
      // Walk the chunk's pages: they must tile [start, start + length) exactly.
      let at = start;
      let newLength = 0;
      let headerDelta = 0;
      while (at < start + length) {
        const p = placed.get(at);
        if (p === undefined)
          throw new PageCompressionError(`column chunk at ${start}: no page starts at ${at}`);
        newLength += p.newLength;
        headerDelta += p.newHeader - p.oldHeader;
        at += p.oldLength;
      }
      if (at !== start + length || at > dataEnd) {
        throw new PageCompressionError(`column chunk at ${start} does not end where its last page ends`);
      }
      const newStart = shift(start);
      first ??= newStart;
      setField(md, CMD.codec, T.I32, codecId);
      setField(md, CMD.compressed, T.I64, BigInt(newLength));
      const oldUncompressed = num(md, CMD.uncompressed) ?? 0;
      setField(md, CMD.uncompressed, T.I64, BigInt(oldUncompressed + headerDelta));
      uncompressedDelta += headerDelta;
      compressedTotal += newLength;
      for (const id of [CMD.dataPageOffset, CMD.dictionaryPageOffset, CMD.indexPageOffset]) {
        const o = num(md, id);
        if (o !== undefined && (id !== CMD.dictionaryPageOffset || o === start))
          setField(md, id, T.I64, BigInt(shift(o)));
      }
      const fileOffset = num(cc, CC.fileOffset);
      if (fileOffset !== undefined && fileOffset > 0) {
        // Writers disagree on its meaning (chunk start, or the end of the metadata after it): move it with the chunk.
        const target =
          fileOffset === start ? newStart : fileOffset === start + length ? newStart + newLength : undefined;
        if (target === undefined)
          throw new PageCompressionError(`column chunk file_offset ${fileOffset} is not at its chunk`);
        setField(cc, CC.fileOffset, T.I64, BigInt(target));
      }
      const bloom = num(md, CMD.bloomOffset);
      if (bloom !== undefined) {
        const inData = placed.get(bloom);
        if (inData !== undefined) setField(md, CMD.bloomOffset, T.I64, BigInt(inData.newOffset));
        else {
          const header = decodeStruct(tail, bloom - tailStart);
          const length =
            num(md, CMD.bloomLength) ?? header.end - (bloom - tailStart) + (num(header.struct, 1) ?? 0);
          tailItems.push({
            offset: bloom,
            length,
            bytes: tailBytes(bloom, length),
            set: (o) => setField(md, CMD.bloomOffset, T.I64, BigInt(o)),
          });
        }
      }
      const ciOffset = num(cc, CC.columnIndexOffset);
      const ciLength = num(cc, CC.columnIndexLength);
      if (ciOffset !== undefined && ciLength !== undefined) {
        tailItems.push({
          offset: ciOffset,
          length: ciLength,
          bytes: tailBytes(ciOffset, ciLength),
          set: (o, l) => {
            setField(cc, CC.columnIndexOffset, T.I64, BigInt(o));
            setField(cc, CC.columnIndexLength, T.I32, l);
          },
        });
      }
      const oiOffset = num(cc, CC.offsetIndexOffset);
      const oiLength = num(cc, CC.offsetIndexLength);
      if (oiOffset !== undefined && oiLength !== undefined) {
        const index = decodeStruct(tailBytes(oiOffset, oiLength)).struct;
        for (const loc of structs(index, 1)) {
          const o = num(loc, 1);
          const p = o === undefined ? undefined : placed.get(o);
          if (p === undefined || num(loc, 2) !== p.oldLength) {
            throw new PageCompressionError(`an offset index entry at ${o} is not a page of the file`);
          }
          setField(loc, 1, T.I64, BigInt(p.newOffset));
          setField(loc, 2, T.I32, p.newLength);
        }
        tailItems.push({
          offset: oiOffset,
          length: oiLength,
          bytes: encodeStruct(index),
          set: (o, l) => {
            setField(cc, CC.offsetIndexOffset, T.I64, BigInt(o));
            setField(cc, CC.offsetIndexLength, T.I32, l);
          },
        });
      }
    }
    if (first !== undefined && field(rg, RG.fileOffset) !== undefined)
      setField(rg, RG.fileOffset, T.I64, BigInt(first));
    const totalBytes = num(rg, RG.totalByteSize);
    if (totalBytes !== undefined)
      setField(rg, RG.totalByteSize, T.I64, BigInt(totalBytes + uncompressedDelta));
    if (field(rg, RG.totalCompressed) !== undefined)
      setField(rg, RG.totalCompressed, T.I64, BigInt(compressedTotal));
  }
  let at = written;
  for (const item of tailItems.sort((a, b) => a.offset - b.offset)) {
    item.set(at, item.bytes.length);
    at += item.bytes.length;
    yield item.bytes;
  }
  const footer = encodeStruct(meta);
  const end = new Uint8Array(footer.length + 8);
  end.set(footer, 0);
  new DataView(end.buffer).setUint32(footer.length, footer.length, true);
  end.set(PARQUET_MAGIC, footer.length + 4);
  yield end;
}
