// Many small Parquet files as one, for decoding only: their data regions laid end to end and one footer
// whose row groups are theirs with every page offset moved, so a decoder sets up once for all of them.

import { PARQUET_MAGIC } from './footer.js';
import { T } from './thrift-compact.js';

/** One input to combine: its key (for reasons) and its whole bytes. */
export interface CombineInput {
  readonly key: string;
  readonly bytes: Uint8Array;
}

/** The combined file and its rows, or why these inputs are not combined (decode them one by one). */
export type Combined =
  | { readonly bytes: Uint8Array; readonly rows: number; readonly refused?: undefined }
  | { readonly refused: string };

/** FileMetaData field ids that the combined footer sets itself. */
const FMD_NUM_ROWS = 3;
const FMD_ROW_GROUPS = 4;
/** FileMetaData fields that make a footer uncombinable (encryption). */
const FMD_ENCRYPTION = 8;
const FMD_SIGNING_KEY = 9;
/** RowGroup: columns, file_offset and ordinal (dropped: a position in another file), num_rows. */
const RG_COLUMNS = 1;
const RG_NUM_ROWS = 3;
const RG_FILE_OFFSET = 5;
const RG_ORDINAL = 7;
/** ColumnChunk: file_path (external chunks), file_offset, meta_data, page indexes (dropped), encryption. */
const CC_FILE_PATH = 1;
const CC_FILE_OFFSET = 2;
const CC_META_DATA = 3;
const CC_FIRST_INDEX = 4;
const CC_LAST_INDEX = 7;
const CC_CRYPTO = 8;
const CC_ENCRYPTED = 9;
/** ColumnMetaData: compressed size, page offsets (moved), bloom filter (dropped). */
const CMD_COMPRESSED = 7;
const CMD_DATA_PAGE = 9;
const CMD_INDEX_PAGE = 10;
const CMD_DICTIONARY_PAGE = 11;
const CMD_BLOOM_OFFSET = 14;
const CMD_BLOOM_LENGTH = 15;

/** Not combinable; carries the reason out of the walker. */
class Refusal extends Error {}

/** Reads compact-protocol values without building them: positions, skips, and the few integers needed. */
class Cursor {
  pos: number;
  constructor(
    readonly bytes: Uint8Array,
    start: number,
    private readonly end: number,
  ) {
    this.pos = start;
  }

  byte(): number {
    if (this.pos >= this.end) throw new Refusal('the footer ends early');
    return this.bytes[this.pos++] as number;
  }

  /** An unsigned varint as a number (exact below 2^53: offsets and sizes of a file in memory are). */
  varint(): number {
    let result = 0;
    let scale = 1;
    for (let i = 0; i < 10; i++) {
      const b = this.byte();
      result += (b & 0x7f) * scale;
      if ((b & 0x80) === 0) return result;
      scale *= 128;
    }
    throw new Refusal('a varint is too long');
  }

  /** A zigzag-encoded integer (i16, i32 or i64 of a plausible size) as a number. */
  zigzag(): number {
    const n = this.varint();
    return n % 2 === 0 ? n / 2 : -(n + 1) / 2;
  }

  skip(type: number, depth = 0): void {
    if (depth > 64) throw new Refusal('the footer nests too deep');
    switch (type) {
      case T.TRUE:
      case T.FALSE:
        return;
      case T.BYTE:
        this.byte();
        return;
      case T.I16:
      case T.I32:
      case T.I64:
        this.varint();
        return;
      case T.DOUBLE:
        this.advance(8);
        return;
      case T.BINARY:
        this.advance(this.varint());
        return;
      case T.LIST:
      case T.SET: {
        const header = this.byte();
        const size = header >> 4 === 15 ? this.varint() : header >> 4;
        const element = header & 0x0f;
        for (let i = 0; i < size; i++) {
          if (element === T.TRUE || element === T.FALSE) this.byte();
          else this.skip(element, depth + 1);
        }
        return;
      }
      case T.MAP: {
        const size = this.varint();
        if (size === 0) return;
        const types = this.byte();
        for (let i = 0; i < size; i++) {
          this.skip(types >> 4, depth + 1);
          this.skip(types & 0x0f, depth + 1);
        }
        return;
      }
      case T.STRUCT:
        for (let f = this.field(0); f !== undefined; f = this.field(f.id)) this.skip(f.type, depth + 1);
        return;
      default:
        throw new Refusal(`unknown compact type ${type}`);
    }
  }

  private advance(n: number): void {
    if (this.pos + n > this.end) throw new Refusal('the footer ends early');
    this.pos += n;
  }

  /** The next field header of a struct (after field `last`), or undefined at its stop byte. */
  field(last: number): { id: number; type: number } | undefined {
    const header = this.byte();
    if (header === 0) return undefined;
    const delta = header >> 4;
    return { id: delta === 0 ? this.zigzag() : last + delta, type: header & 0x0f };
  }
}

/** Writes compact-protocol bytes: field headers from its own field sequence, values raw or re-encoded. */
class Out {
  private buf = new Uint8Array(4096);
  length = 0;

  private room(n: number): void {
    if (this.length + n <= this.buf.length) return;
    const next = new Uint8Array(Math.max(this.buf.length * 2, this.length + n));
    next.set(this.buf.subarray(0, this.length));
    this.buf = next;
  }

  byte(b: number): void {
    this.room(1);
    this.buf[this.length++] = b;
  }

  raw(bytes: Uint8Array, start: number, end: number): void {
    this.room(end - start);
    this.buf.set(bytes.subarray(start, end), this.length);
    this.length += end - start;
  }

  varint(n: number): void {
    let v = n;
    while (v >= 0x80) {
      this.byte((v % 128) | 0x80);
      v = Math.floor(v / 128);
    }
    this.byte(v);
  }

  zigzag(n: number): void {
    this.varint(n >= 0 ? n * 2 : -n * 2 - 1);
  }

  /** A field header, short form when the id follows `last` by 1..15. */
  header(id: number, last: number, type: number): void {
    const delta = id - last;
    if (delta > 0 && delta <= 15) this.byte((delta << 4) | type);
    else {
      this.byte(type);
      this.zigzag(id);
    }
  }

  listHeader(size: number, element: number): void {
    if (size < 15) this.byte((size << 4) | element);
    else {
      this.byte(0xf0 | element);
      this.varint(size);
    }
  }

  bytes(): Uint8Array {
    return this.buf.subarray(0, this.length);
  }
}

/** One input's footer, walked: its row groups rewritten for a data region moved by `delta`, and the rest. */
interface Walked {
  /** The footer's fields other than num_rows and row_groups, as on the wire in order (ids kept). */
  readonly rest: { id: number; type: number; start: number; end: number }[];
  /** The input's whole bytes (`rest` indexes into them). */
  readonly metadata: Uint8Array;
  /** How many row groups it has. */
  readonly rowGroups: number;
  readonly rows: number;
  /** Where the input's data region ends (its footer starts). */
  readonly dataEnd: number;
}

/** Copies a ColumnMetaData with its page offsets moved by `delta`, bloom filter dropped; checks its range. */
function columnMetaData(c: Cursor, out: Out, delta: number, dataEnd: number): void {
  let last = 0;
  let written = 0;
  let dataPage: number | undefined;
  let dictionaryPage: number | undefined;
  let compressed: number | undefined;
  for (let f = c.field(0); f !== undefined; f = c.field(last)) {
    last = f.id;
    if (f.id === CMD_BLOOM_OFFSET || f.id === CMD_BLOOM_LENGTH) {
      c.skip(f.type);
      continue;
    }
    if (
      (f.id === CMD_DATA_PAGE || f.id === CMD_INDEX_PAGE || f.id === CMD_DICTIONARY_PAGE) &&
      f.type === T.I64
    ) {
      const offset = c.zigzag();
      if (f.id === CMD_DATA_PAGE) dataPage = offset;
      if (f.id === CMD_DICTIONARY_PAGE) dictionaryPage = offset;
      out.header(f.id, written, T.I64);
      out.zigzag(offset + delta);
      written = f.id;
      continue;
    }
    const start = c.pos;
    if (f.id === CMD_COMPRESSED && f.type === T.I64) compressed = c.zigzag();
    else c.skip(f.type);
    out.header(f.id, written, f.type);
    out.raw(c.bytes, start, c.pos);
    written = f.id;
  }
  out.byte(0);
  if (dataPage === undefined || compressed === undefined)
    throw new Refusal('a column chunk has no page offsets');
  // The chunk's pages start at its dictionary page when there is one; any other value is a writer's quirk
  // (0 for "none", say) that a decoder may read differently once moved: such files are decoded alone.
  if (dictionaryPage !== undefined && !(dictionaryPage >= 4 && dictionaryPage < dataPage)) {
    throw new Refusal(`a column chunk's dictionary page offset ${dictionaryPage} is not before its data`);
  }
  const start = dictionaryPage ?? dataPage;
  if (start < 4 || compressed < 0 || start + compressed > dataEnd) {
    throw new Refusal('a column chunk points outside the data');
  }
}

function columnChunk(c: Cursor, out: Out, delta: number, dataEnd: number): void {
  let last = 0;
  let written = 0;
  let sawMeta = false;
  for (let f = c.field(0); f !== undefined; f = c.field(last)) {
    last = f.id;
    if (f.id === CC_FILE_PATH) throw new Refusal('a column chunk lives in another file');
    if (f.id === CC_CRYPTO || f.id === CC_ENCRYPTED) throw new Refusal('a column chunk is encrypted');
    if (f.id >= CC_FIRST_INDEX && f.id <= CC_LAST_INDEX) {
      c.skip(f.type); // page indexes: not needed to decode, and they sit outside the data region
      continue;
    }
    if (f.id === CC_FILE_OFFSET && f.type === T.I64) {
      const offset = c.zigzag();
      out.header(f.id, written, T.I64);
      out.zigzag(offset > 0 ? offset + delta : offset);
      written = f.id;
      continue;
    }
    if (f.id === CC_META_DATA && f.type === T.STRUCT) {
      out.header(f.id, written, T.STRUCT);
      columnMetaData(c, out, delta, dataEnd);
      sawMeta = true;
      written = f.id;
      continue;
    }
    const start = c.pos;
    c.skip(f.type);
    out.header(f.id, written, f.type);
    out.raw(c.bytes, start, c.pos);
    written = f.id;
  }
  out.byte(0);
  if (!sawMeta) throw new Refusal('a column chunk keeps its metadata elsewhere');
}

/** Appends a row group to `out` (the combined footer's row groups) and returns its rows. */
function rowGroup(c: Cursor, out: Out, delta: number, dataEnd: number): number {
  let last = 0;
  let written = 0;
  let rows: number | undefined;
  for (let f = c.field(0); f !== undefined; f = c.field(last)) {
    last = f.id;
    if (f.id === RG_FILE_OFFSET || f.id === RG_ORDINAL) {
      c.skip(f.type);
      continue;
    }
    if (f.id === RG_COLUMNS && f.type === T.LIST) {
      const header = c.byte();
      const size = header >> 4 === 15 ? c.varint() : header >> 4;
      if ((header & 0x0f) !== T.STRUCT) throw new Refusal('row group columns are not structs');
      out.header(f.id, written, T.LIST);
      out.listHeader(size, T.STRUCT);
      for (let i = 0; i < size; i++) columnChunk(c, out, delta, dataEnd);
      written = f.id;
      continue;
    }
    const start = c.pos;
    if (f.id === RG_NUM_ROWS && f.type === T.I64) rows = c.zigzag();
    else c.skip(f.type);
    out.header(f.id, written, f.type);
    out.raw(c.bytes, start, c.pos);
    written = f.id;
  }
  out.byte(0);
  if (rows === undefined || rows < 0) throw new Refusal('a row group has no row count');
  return rows;
}

/**
 * Walks one input's FileMetaData; `delta` is how far its data region moves in the combined file. Its row
 * groups, rewritten, are appended to `groups` (all inputs' row groups, in order).
 */
function walk(file: Uint8Array, delta: number, groups: Out): Walked {
  if (file.length < 12) throw new Refusal('it is too short to be Parquet');
  const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
  const length = view.getUint32(file.length - 8, true);
  const dataEnd = file.length - 8 - length;
  if (length + 12 > file.length) throw new Refusal(`its footer length ${length} exceeds the file`);
  for (let i = 0; i < 4; i++) {
    if (file[i] !== PARQUET_MAGIC[i] || file[file.length - 4 + i] !== PARQUET_MAGIC[i]) {
      throw new Refusal('it does not start and end with PAR1');
    }
  }
  const c = new Cursor(file, dataEnd, file.length - 8);
  const rest: Walked['rest'] = [];
  let rowGroups = 0;
  let rows: number | undefined;
  let groupRows: number | undefined;
  let last = 0;
  for (let f = c.field(0); f !== undefined; f = c.field(last)) {
    last = f.id;
    if (f.id === FMD_ENCRYPTION || f.id === FMD_SIGNING_KEY) throw new Refusal('it is encrypted');
    if (f.id === FMD_NUM_ROWS && f.type === T.I64) {
      rows = c.zigzag();
      continue;
    }
    if (f.id === FMD_ROW_GROUPS && f.type === T.LIST) {
      const header = c.byte();
      const size = header >> 4 === 15 ? c.varint() : header >> 4;
      if ((header & 0x0f) !== T.STRUCT) throw new Refusal('its row groups are not structs');
      groupRows = 0;
      for (let i = 0; i < size; i++) groupRows += rowGroup(c, groups, delta, dataEnd);
      rowGroups += size;
      continue;
    }
    const start = c.pos;
    c.skip(f.type);
    rest.push({ id: f.id, type: f.type, start, end: c.pos });
  }
  if (c.pos !== file.length - 8) throw new Refusal('its footer has bytes after the metadata');
  if (rows === undefined || groupRows === undefined)
    throw new Refusal('its footer has no rows or row groups');
  if (groupRows !== rows) throw new Refusal('its row groups do not add up to its rows');
  return { rest, metadata: file, rowGroups, rows, dataEnd };
}

/** Whether two footers agree on everything but their rows and row groups (schema, key-value metadata, created_by…). */
function sameRest(a: Walked, b: Walked): boolean {
  if (a.rest.length !== b.rest.length) return false;
  for (let i = 0; i < a.rest.length; i++) {
    const x = a.rest[i] as Walked['rest'][number];
    const y = b.rest[i] as Walked['rest'][number];
    if (x.id !== y.id || x.type !== y.type || x.end - x.start !== y.end - y.start) return false;
    for (let j = 0; j < x.end - x.start; j++) {
      if (a.metadata[x.start + j] !== b.metadata[y.start + j]) return false;
    }
  }
  return true;
}

/**
 * One Parquet file holding `inputs`' row groups in order, for a decoder to read in one call: `PAR1`, each
 * input's data region (from after its `PAR1` to its footer) as it is, then a footer that is the first input's
 * with num_rows summed and row_groups replaced by every input's, each page offset (data, dictionary, index
 * page; the chunks' file_offset) moved by where its data went. Page indexes and bloom filters are left out:
 * they lie outside the data regions and decoding does not need them; row-group file_offset and ordinal too.
 *
 * Only inputs whose footers agree byte for byte on every other field (schema, key-value metadata including
 * `ARROW:schema`, created_by, column orders, version) are combined, so the decoder sees the very schema it
 * would see in each file and decodes the same values of the same types. Anything this walker does not read
 * with certainty (encryption, external or index-less chunks, offsets outside the data, a malformed footer)
 * refuses the whole set with the reason: the caller then decodes the inputs one by one, as it always could,
 * so a damaged input is still found and named by the decoder.
 */
export function combineForDecode(inputs: readonly CombineInput[]): Combined {
  if (inputs.length === 0) return { refused: 'no inputs' };
  const walked: Walked[] = [];
  const groupBytes = new Out();
  let position = PARQUET_MAGIC.length;
  for (const input of inputs) {
    let w: Walked;
    try {
      w = walk(input.bytes, position - PARQUET_MAGIC.length, groupBytes);
    } catch (err) {
      if (err instanceof Refusal) return { refused: `${input.key}: ${err.message}` };
      throw err;
    }
    const first = walked[0];
    if (first !== undefined && !sameRest(first, w)) {
      return { refused: `${input.key}: its footer differs from ${inputs[0]?.key}'s beyond its row groups` };
    }
    walked.push(w);
    position += w.dataEnd - PARQUET_MAGIC.length;
  }
  const first = walked[0] as Walked;
  const rows = walked.reduce((n, w) => n + w.rows, 0);
  const groups = walked.reduce((n, w) => n + w.rowGroups, 0);
  const footer = new Out();
  let written = 0;
  const emitRowsAndGroups = (): void => {
    footer.header(FMD_NUM_ROWS, written, T.I64);
    footer.zigzag(rows);
    footer.header(FMD_ROW_GROUPS, FMD_NUM_ROWS, T.LIST);
    footer.listHeader(groups, T.STRUCT);
    const g = groupBytes.bytes();
    footer.raw(g, 0, g.length);
    written = FMD_ROW_GROUPS;
  };
  for (const f of first.rest) {
    if (written < FMD_NUM_ROWS && f.id > FMD_ROW_GROUPS) emitRowsAndGroups();
    footer.header(f.id, written, f.type);
    footer.raw(first.metadata, f.start, f.end);
    written = f.id;
  }
  if (written < FMD_NUM_ROWS) emitRowsAndGroups();
  footer.byte(0);
  const meta = footer.bytes();
  const out = new Uint8Array(position + meta.length + 8);
  out.set(PARQUET_MAGIC, 0);
  let at = PARQUET_MAGIC.length;
  for (const w of walked) {
    out.set(w.metadata.subarray(PARQUET_MAGIC.length, w.dataEnd), at);
    at += w.dataEnd - PARQUET_MAGIC.length;
  }
  out.set(meta, at);
  new DataView(out.buffer).setUint32(at + meta.length, meta.length, true);
  out.set(PARQUET_MAGIC, at + meta.length + 4);
  return { bytes: out, rows };
}
