// Frames a Hudi log file into its blocks, byte for byte as Hudi writes them — which is not what the published spec
// says (block types are Java ordinals, the header and footer carry no length prefix; see the research notes §5.2):
//
//   magic "#HUDI#" | int64 block length (bytes after this field, to the end of the reverse pointer)
//   | int32 log format version (1) | int32 block type ordinal | header | int64 content length | content | footer
//   | int64 reverse pointer (= block length + 6)
//
// where a header or footer is an int32 entry count, then per entry an int32 key ordinal, an int32 length and that
// many UTF-8 bytes. A block that is truncated, whose reverse pointer disagrees with its length, or that is not
// followed by another magic (or the end of the file) is a CORRUPT block, as Hudi's HoodieLogFileReader decides
// (`isBlockCorrupt`, `createCorruptBlock`): the reader scans forward from just after the length field to the next
// magic and carries on from there, so a crashed append loses that block only. The file's bytes are untrusted: every
// length is checked against the bytes present before it is used, and a block's content stays a view of the file.
import { HudiLogFormatError, HudiLogUnsupportedError } from './errors.js';

/** Hudi's block types by ordinal (`HoodieLogBlock.HoodieLogBlockType`), the int32 written after the version. */
export const BLOCK_TYPES = [
  'COMMAND_BLOCK',
  'DELETE_BLOCK',
  'CORRUPT_BLOCK',
  'AVRO_DATA_BLOCK',
  'HFILE_DATA_BLOCK',
  'PARQUET_DATA_BLOCK',
  'CDC_DATA_BLOCK',
] as const;
export type HudiBlockType = (typeof BLOCK_TYPES)[number];

/** Hudi's header and footer keys by ordinal (`HoodieLogBlock.HeaderMetadataType`). */
export const HEADER_KEYS = [
  'INSTANT_TIME',
  'TARGET_INSTANT_TIME',
  'SCHEMA',
  'COMMAND_BLOCK_TYPE',
  'COMPACTED_BLOCK_TIMES',
  'RECORD_POSITIONS',
  'BLOCK_IDENTIFIER',
  'IS_PARTIAL',
  'BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS',
] as const;
export type HeaderKey = (typeof HEADER_KEYS)[number];

/** `#HUDI#`, the six bytes every block starts with. */
export const MAGIC: Readonly<Uint8Array> = Uint8Array.of(0x23, 0x48, 0x55, 0x44, 0x49, 0x23);

/** The only log format version Hudi has written since 0.x began (version 0 had no block types or headers). */
export const LOG_FORMAT_VERSION = 1;

/** A well-formed block: its type, header and footer decoded, its content a view of the file's bytes. */
export interface LogBlock {
  readonly kind: 'block';
  /** The log file it was read from (for messages). */
  readonly file: string;
  /** Byte offset of its magic in the file. */
  readonly offset: number;
  readonly type: HudiBlockType;
  readonly header: ReadonlyMap<HeaderKey, string>;
  readonly footer: ReadonlyMap<HeaderKey, string>;
  /** The content bytes (a view into the file, not a copy). */
  readonly content: Uint8Array;
  /** Byte offset of the content in the file (for messages about it). */
  readonly contentOffset: number;
}

/** Bytes Hudi's reader would turn into a CORRUPT block: skipped by every scanner, counted for reports. */
export interface CorruptBlock {
  readonly kind: 'corrupt';
  readonly file: string;
  /** Byte offset of the bytes skipped (just after the length field, as Hudi counts them). */
  readonly offset: number;
  /** How many bytes were skipped up to the next magic or the end of the file. */
  readonly length: number;
  /** Why the block was judged corrupt (for logs). */
  readonly reason: string;
}

export type FramedBlock = LogBlock | CorruptBlock;

/** Bytes of the fixed fields inside a block: version, type, header count, content length, footer count, pointer. */
const MIN_BLOCK_BODY = 4 + 4 + 4 + 8 + 4 + 8;

/**
 * Every block of one log file, in file order.
 * @param file the file's name or key, for messages and for the blocks' `file`.
 * @throws HudiLogFormatError when the file does not start with a magic, or a block that passed the corruption
 *   checks is malformed inside (Hudi's reader fails on both too).
 * @throws HudiLogUnsupportedError for a log format version other than 1.
 */
export function readLogBlocks(file: string, bytes: Uint8Array): FramedBlock[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const blocks: FramedBlock[] = [];
  let pos = 0;
  // Fewer than six bytes left is the end of the file for Hudi (`hasNextMagic` hits EOF), not a corrupt block.
  while (bytes.length - pos >= MAGIC.length) {
    if (!magicAt(bytes, pos)) throw new HudiLogFormatError(file, pos, 'no #HUDI# magic where a block starts');
    const lengthAt = pos + MAGIC.length;
    const bodyAt = lengthAt + 8;
    const verdict = corruption(bytes, view, lengthAt);
    if (verdict !== undefined) {
      const from = Math.min(bodyAt, bytes.length);
      const next = nextMagic(bytes, from);
      blocks.push({ kind: 'corrupt', file, offset: from, length: next - from, reason: verdict });
      pos = next;
      continue;
    }
    const length = Number(view.getBigInt64(lengthAt));
    const end = bodyAt + length;
    blocks.push(readBlock(file, bytes, view, pos, bodyAt, end));
    pos = end;
  }
  return blocks;
}

/**
 * Why the block whose length field is at `lengthAt` is corrupt, or undefined when it is sound: Hudi's
 * `isBlockCorrupt` checks that the length stays inside the file, that the reverse pointer at its end says the
 * same length (plus the magic), and that the next magic or the end of the file follows.
 */
function corruption(bytes: Uint8Array, view: DataView, lengthAt: number): string | undefined {
  if (bytes.length - lengthAt < 8) return 'the file ends inside the block length';
  const length = view.getBigInt64(lengthAt);
  const bodyAt = lengthAt + 8;
  if (length < BigInt(MIN_BLOCK_BODY) || length > BigInt(bytes.length - bodyAt))
    return `its length ${length} runs past the end of the file (${bytes.length - bodyAt} bytes left)`;
  const end = bodyAt + Number(length);
  const pointer = view.getBigInt64(end - 8);
  if (pointer - BigInt(MAGIC.length) !== length)
    return `its length ${length} disagrees with its reverse pointer ${pointer}`;
  if (bytes.length - end >= MAGIC.length && !magicAt(bytes, end)) return 'no magic follows it';
  return undefined;
}

/** The offset of the next magic at or after `from`, or the end of the file (`scanForNextAvailableBlockOffset`). */
function nextMagic(bytes: Uint8Array, from: number): number {
  for (let i = from; i + MAGIC.length <= bytes.length; i++) if (magicAt(bytes, i)) return i;
  return bytes.length;
}

function magicAt(bytes: Uint8Array, at: number): boolean {
  for (let i = 0; i < MAGIC.length; i++) if (bytes[at + i] !== MAGIC[i]) return false;
  return true;
}

/** The block at `start` whose body spans [bodyAt, end), its length already checked against the file. */
function readBlock(
  file: string,
  bytes: Uint8Array,
  view: DataView,
  start: number,
  bodyAt: number,
  end: number,
): LogBlock {
  const r = new BodyReader(file, bytes, view, bodyAt, end - 8);
  const version = r.int32('log format version');
  if (version !== LOG_FORMAT_VERSION)
    throw new HudiLogUnsupportedError(
      file,
      start,
      `log format version ${version}`,
      `only version ${LOG_FORMAT_VERSION} (every Hudi since 0.x) is read`,
    );
  const ordinal = r.int32('block type');
  const type = BLOCK_TYPES[ordinal];
  if (type === undefined)
    throw new HudiLogFormatError(file, r.pos - 4, `block type ordinal ${ordinal} is not one Hudi defines`);
  const header = r.metadata('header');
  const contentLength = r.int64('content length');
  const contentOffset = r.pos;
  const content = r.bytes(contentLength, 'content');
  const footer = r.metadata('footer');
  if (r.pos !== end - 8)
    throw new HudiLogFormatError(
      file,
      r.pos,
      `the block's fields end ${end - 8 - r.pos} bytes before its reverse pointer`,
    );
  return { kind: 'block', file, offset: start, type, header, footer, content, contentOffset };
}

/** Reads the fields of one block body, never past `end` (the reverse pointer). */
class BodyReader {
  private readonly text = new TextDecoder('utf-8', { fatal: true });

  constructor(
    private readonly file: string,
    private readonly buf: Uint8Array,
    private readonly view: DataView,
    public pos: number,
    private readonly end: number,
  ) {}

  private need(n: number, what: string): void {
    if (n > this.end - this.pos)
      throw new HudiLogFormatError(
        this.file,
        this.pos,
        `${what} needs ${n} bytes but the block has ${this.end - this.pos} left`,
      );
  }

  int32(what: string): number {
    this.need(4, what);
    const v = this.view.getInt32(this.pos);
    this.pos += 4;
    return v;
  }

  int64(what: string): number {
    this.need(8, what);
    const v = this.view.getBigInt64(this.pos);
    if (v < 0n || v > BigInt(this.end - this.pos - 8))
      throw new HudiLogFormatError(
        this.file,
        this.pos,
        `${what} ${v} is more than the ${this.end - this.pos - 8} bytes left in the block`,
      );
    this.pos += 8;
    return Number(v);
  }

  bytes(n: number, what: string): Uint8Array {
    this.need(n, what);
    const out = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  /** A header or footer: int32 count, then (int32 key ordinal, int32 length, UTF-8 value) per entry. */
  metadata(what: string): Map<HeaderKey, string> {
    const count = this.int32(`${what} entry count`);
    // Each entry takes at least eight bytes (key and length), so a count the block cannot hold is refused first.
    if (count < 0 || count > (this.end - this.pos) / 8)
      throw new HudiLogFormatError(
        this.file,
        this.pos - 4,
        `the ${what} claims ${count} entries in ${this.end - this.pos} bytes`,
      );
    const out = new Map<HeaderKey, string>();
    for (let i = 0; i < count; i++) {
      const ordinal = this.int32(`${what} key`);
      const key = HEADER_KEYS[ordinal];
      if (key === undefined)
        throw new HudiLogFormatError(
          this.file,
          this.pos - 4,
          `${what} key ordinal ${ordinal} is not one Hudi defines`,
        );
      const length = this.int32(`${what} value length`);
      if (length < 0) throw new HudiLogFormatError(this.file, this.pos - 4, `${what} value length ${length}`);
      const at = this.pos;
      const raw = this.bytes(length, `the ${what} value of ${key}`);
      try {
        out.set(key, this.text.decode(raw));
      } catch (err) {
        throw new HudiLogFormatError(this.file, at, `the ${what} value of ${key} is not UTF-8`, {
          cause: err,
        });
      }
    }
    return out;
  }
}
