// Thrift compact protocol, both ways, without a schema: a struct decodes to its fields in wire order with
// their wire types, and encodes back to the same bytes. Used to rebuild Parquet footers (stitching).

import { CompactorError } from '../errors.js';

/** Wire types of the compact protocol (field headers and collection element types). */
export const T = {
  TRUE: 1,
  FALSE: 2,
  BYTE: 3,
  I16: 4,
  I32: 5,
  I64: 6,
  DOUBLE: 7,
  BINARY: 8,
  LIST: 9,
  SET: 10,
  MAP: 11,
  STRUCT: 12,
} as const;

/** A list or set: its element type, as on the wire, and the elements. */
export interface ThriftList {
  readonly elementType: number;
  items: ThriftValue[];
}

export interface ThriftMap {
  readonly keyType: number;
  readonly valueType: number;
  entries: [ThriftValue, ThriftValue][];
}

/** One field of a struct: `type` is the wire type (for a bool field, TRUE or FALSE both mean bool). */
export interface ThriftField {
  readonly id: number;
  type: number;
  value: ThriftValue;
}

/** A struct as it came off the wire: fields in their order, unknown ones kept, so it encodes back unchanged. */
export interface ThriftStruct {
  fields: ThriftField[];
}

/** i64 are bigints (Parquet offsets and row counts can pass 2^53); other integers are numbers. */
export type ThriftValue = boolean | number | bigint | Uint8Array | ThriftList | ThriftMap | ThriftStruct;

/** Bytes that are not a well-formed compact-protocol struct (truncated, an unknown type, too deep). */
export class ThriftDecodeError extends CompactorError {}

/** Deeper than any Parquet structure (FileMetaData → RowGroup → ColumnChunk → ColumnMetaData → Statistics…). */
const MAX_DEPTH = 64;

class Reader {
  pos = 0;
  private readonly view: DataView;
  constructor(
    private readonly bytes: Uint8Array,
    /** Binary values as views of `bytes` rather than copies (see `DecodeOptions.shareBytes`). */
    private readonly share = false,
  ) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  byte(): number {
    if (this.pos >= this.bytes.length) throw new ThriftDecodeError('thrift: unexpected end of input');
    return this.bytes[this.pos++] as number;
  }

  varint(): bigint {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const b = this.byte();
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
      shift += 7n;
      if (shift > 70n) throw new ThriftDecodeError('thrift: varint too long');
    }
  }

  /** A 32-bit varint, without bigints (the common case: field ids, lengths, i16/i32). */
  varint32(): number {
    let result = 0;
    let shift = 0;
    for (;;) {
      const b = this.byte();
      if (shift < 28) result |= (b & 0x7f) << shift;
      else result += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) return result >>> 0 === result ? result : result >>> 0;
      shift += 7;
      if (shift > 35) throw new ThriftDecodeError('thrift: 32-bit varint too long');
    }
  }

  zigzag32(): number {
    const n = this.varint32();
    return (n >>> 1) ^ -(n & 1);
  }

  zigzag64(): bigint {
    const n = this.varint();
    return (n >> 1n) ^ -(n & 1n);
  }

  double(): number {
    if (this.pos + 8 > this.bytes.length) throw new ThriftDecodeError('thrift: unexpected end of input');
    const v = this.view.getFloat64(this.pos, true);
    this.pos += 8;
    return v;
  }

  binary(): Uint8Array {
    const n = this.varint32();
    if (this.pos + n > this.bytes.length) throw new ThriftDecodeError('thrift: binary runs past the end');
    const v = this.share
      ? this.bytes.subarray(this.pos, this.pos + n)
      : this.bytes.slice(this.pos, this.pos + n);
    this.pos += n;
    return v;
  }
}

function readValue(r: Reader, type: number, depth: number): ThriftValue {
  switch (type) {
    case T.TRUE:
      return true;
    case T.FALSE:
      return false;
    case T.BYTE: {
      const b = r.byte();
      return b > 127 ? b - 256 : b;
    }
    case T.I16:
    case T.I32:
      return r.zigzag32();
    case T.I64:
      return r.zigzag64();
    case T.DOUBLE:
      return r.double();
    case T.BINARY:
      return r.binary();
    case T.LIST:
    case T.SET: {
      const header = r.byte();
      const elementType = header & 0x0f;
      const size = header >> 4 === 15 ? r.varint32() : header >> 4;
      const items: ThriftValue[] = [];
      for (let i = 0; i < size; i++) {
        // In collections a bool is one byte: 1 true, anything else (0 or 2, by implementation) false.
        items.push(
          elementType === T.TRUE || elementType === T.FALSE
            ? r.byte() === 1
            : readValue(r, elementType, depth + 1),
        );
      }
      return { elementType, items };
    }
    case T.MAP: {
      const size = r.varint32();
      if (size === 0) return { keyType: 0, valueType: 0, entries: [] };
      const types = r.byte();
      const keyType = types >> 4;
      const valueType = types & 0x0f;
      const entries: [ThriftValue, ThriftValue][] = [];
      for (let i = 0; i < size; i++) {
        entries.push([readValue(r, keyType, depth + 1), readValue(r, valueType, depth + 1)]);
      }
      return { keyType, valueType, entries };
    }
    case T.STRUCT:
      return readStruct(r, depth + 1);
    default:
      throw new ThriftDecodeError(`thrift: unknown compact type ${type} at byte ${r.pos}`);
  }
}

function readStruct(r: Reader, depth: number): ThriftStruct {
  if (depth > MAX_DEPTH) throw new ThriftDecodeError('thrift: structs nested too deep');
  const fields: ThriftField[] = [];
  let last = 0;
  for (;;) {
    const header = r.byte();
    if (header === 0) return { fields };
    const type = header & 0x0f;
    const delta = header >> 4;
    const id = delta === 0 ? r.zigzag32() : last + delta;
    last = id;
    fields.push({ id, type, value: readValue(r, type, depth) });
  }
}

export interface DecodeOptions {
  /**
   * Binary values as views of the input rather than copies: for a caller that neither keeps the struct past the
   * input's life nor changes the input meanwhile (a footer re-encoded at once), where copying a large value — a
   * table format's index in a footer entry, hundreds of kB — would be most of the cost. @default false
   */
  readonly shareBytes?: boolean;
}

/**
 * Decodes one struct from `bytes` starting at `offset`; `end` is where it stopped (a Parquet page index or
 * bloom filter header is followed by other bytes).
 * @throws ThriftDecodeError on malformed input.
 */
export function decodeStruct(
  bytes: Uint8Array,
  offset = 0,
  options: DecodeOptions = {},
): { struct: ThriftStruct; end: number } {
  const r = new Reader(bytes, options.shareBytes === true);
  r.pos = offset;
  const struct = readStruct(r, 0);
  return { struct, end: r.pos };
}

class Writer {
  private buf = new Uint8Array(1024);
  length = 0;

  private ensure(n: number): void {
    if (this.length + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.length + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.length));
    this.buf = next;
  }

  byte(b: number): void {
    this.ensure(1);
    this.buf[this.length++] = b & 0xff;
  }

  varint32(n: number): void {
    let v = n >>> 0;
    while (v >= 0x80) {
      this.byte((v & 0x7f) | 0x80);
      v >>>= 7;
    }
    this.byte(v);
  }

  varint(n: bigint): void {
    let v = BigInt.asUintN(64, n);
    while (v >= 0x80n) {
      this.byte(Number(v & 0x7fn) | 0x80);
      v >>= 7n;
    }
    this.byte(Number(v));
  }

  zigzag32(n: number): void {
    this.varint32(((n << 1) ^ (n >> 31)) >>> 0);
  }

  zigzag64(n: bigint): void {
    this.varint(BigInt.asUintN(64, (n << 1n) ^ (n >> 63n)));
  }

  bytes(b: Uint8Array): void {
    this.ensure(b.length);
    this.buf.set(b, this.length);
    this.length += b.length;
  }

  double(v: number): void {
    this.ensure(8);
    new DataView(this.buf.buffer).setFloat64(this.length, v, true);
    this.length += 8;
  }

  result(): Uint8Array {
    return this.buf.slice(0, this.length);
  }
}

function fail(what: string, value: unknown): never {
  throw new TypeError(`thrift: cannot encode ${typeof value} as ${what}`);
}

function writeValue(w: Writer, type: number, value: ThriftValue): void {
  switch (type) {
    case T.TRUE:
    case T.FALSE:
      // Only inside collections: a bool field's value is its header's type.
      w.byte(value === true ? 1 : 2);
      return;
    case T.BYTE:
      if (typeof value !== 'number') fail('byte', value);
      w.byte(value);
      return;
    case T.I16:
    case T.I32:
      if (typeof value !== 'number') fail('i32', value);
      w.zigzag32(value);
      return;
    case T.I64:
      w.zigzag64(
        typeof value === 'bigint' ? value : typeof value === 'number' ? BigInt(value) : fail('i64', value),
      );
      return;
    case T.DOUBLE:
      if (typeof value !== 'number') fail('double', value);
      w.double(value);
      return;
    case T.BINARY:
      if (!(value instanceof Uint8Array)) fail('binary', value);
      w.varint32(value.length);
      w.bytes(value);
      return;
    case T.LIST:
    case T.SET: {
      const list = value as ThriftList;
      const n = list.items.length;
      if (n < 15) w.byte((n << 4) | list.elementType);
      else {
        w.byte(0xf0 | list.elementType);
        w.varint32(n);
      }
      for (const item of list.items) writeValue(w, list.elementType, item);
      return;
    }
    case T.MAP: {
      const map = value as ThriftMap;
      w.varint32(map.entries.length);
      if (map.entries.length === 0) return;
      w.byte((map.keyType << 4) | map.valueType);
      for (const [k, v] of map.entries) {
        writeValue(w, map.keyType, k);
        writeValue(w, map.valueType, v);
      }
      return;
    }
    case T.STRUCT:
      writeStruct(w, value as ThriftStruct);
      return;
    default:
      throw new TypeError(`thrift: unknown compact type ${type}`);
  }
}

function writeStruct(w: Writer, struct: ThriftStruct): void {
  let last = 0;
  for (const f of struct.fields) {
    const type = f.type === T.TRUE || f.type === T.FALSE ? (f.value === true ? T.TRUE : T.FALSE) : f.type;
    const delta = f.id - last;
    if (delta > 0 && delta <= 15) w.byte((delta << 4) | type);
    else {
      w.byte(type);
      w.zigzag32(f.id);
    }
    last = f.id;
    if (type !== T.TRUE && type !== T.FALSE) writeValue(w, type, f.value);
  }
  w.byte(0);
}

/** Encodes a struct (fields in the order given, as the compact protocol writes them). */
export function encodeStruct(struct: ThriftStruct): Uint8Array {
  const w = new Writer();
  writeStruct(w, struct);
  return w.result();
}

/** Whether a decoded Thrift value is a struct. */
export function isStruct(v: unknown): v is ThriftStruct {
  return typeof v === 'object' && v !== null && 'fields' in v;
}

/** Whether a decoded Thrift value is a list or set. */
export function isList(v: unknown): v is ThriftList {
  return typeof v === 'object' && v !== null && 'items' in v;
}

/** The field `id` of `struct`, if present. */
export function field(struct: ThriftStruct, id: number): ThriftField | undefined {
  return struct.fields.find((f) => f.id === id);
}

/** Sets (or adds, keeping ids ascending) field `id`. */
export function setField(struct: ThriftStruct, id: number, type: number, value: ThriftValue): void {
  const existing = field(struct, id);
  if (existing !== undefined) {
    existing.type = type;
    existing.value = value;
    return;
  }
  const at = struct.fields.findIndex((f) => f.id > id);
  const f: ThriftField = { id, type, value };
  if (at < 0) struct.fields.push(f);
  else struct.fields.splice(at, 0, f);
}

/** A deep copy (bytes shared: they are never changed in place). */
export function cloneStruct(struct: ThriftStruct): ThriftStruct {
  return { fields: struct.fields.map((f) => ({ id: f.id, type: f.type, value: cloneValue(f.value) })) };
}

function cloneValue(v: ThriftValue): ThriftValue {
  if (typeof v !== 'object' || v instanceof Uint8Array) return v;
  if ('fields' in v) return cloneStruct(v);
  if ('items' in v) return { elementType: v.elementType, items: v.items.map(cloneValue) };
  return {
    keyType: v.keyType,
    valueType: v.valueType,
    entries: v.entries.map(([k, x]) => [cloneValue(k), cloneValue(x)]),
  };
}
