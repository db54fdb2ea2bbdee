// Decimal columns handed to the writer in their input's physical form (core/parquet/decimal-form.ts says why): each
// batch bound for an output with such columns goes once through Arrow IPC and arrow-js, where every listed
// `decimal128` column becomes FixedSizeBinary(n) or Binary holding the unscaled values big-endian in two's
// complement — the bytes Parquet stores for a FIXED_LEN_BYTE_ARRAY or BYTE_ARRAY decimal — and back. The writer's
// footer then gets the DECIMAL annotation back (`withDecimalAnnotations`), so a reader decodes the same `decimal128`.
import {
  Binary,
  type Data,
  Field,
  FixedSizeBinary,
  makeData,
  RecordBatch,
  Schema,
  Struct,
  Table,
  Type,
  tableFromIPC,
  tableToIPC,
} from 'apache-arrow';
import { CompactorError } from '../../core/errors.js';
import type { DecimalForm } from '../../core/parquet/decimal-form.js';
import { ipcSchemaFieldNames, restoreFieldNames } from './per-output.js';
import { oneBatch, type pw } from './wasm.js';

/** A decoded value that does not fit its column's stored form (the decoder handed back more digits than it holds). */
export class DecimalOverflowError extends CompactorError {}

/**
 * The big-endian two's complement of the `slot`-byte little-endian value at `at` (16 bytes for a `decimal128`, 32 for
 * a `decimal256`, as arrow-js holds them), in `length` bytes (sign-extended or cut).
 */
function bigEndian(
  le: Uint8Array,
  slot: number,
  at: number,
  length: number,
  out: Uint8Array,
  outAt: number,
): void {
  const sign = (le[at + slot - 1] as number) & 0x80 ? 0xff : 0;
  for (let k = 0; k < length; k++) {
    const from = length - 1 - k;
    out[outAt + k] = from < slot ? (le[at + from] as number) : sign;
  }
  // Cut: the dropped high bytes must be the sign, and the kept top bit must say the same sign.
  if (length < slot) {
    for (let b = length; b < slot; b++)
      if (le[at + b] !== sign) throw new DecimalOverflowError(`a value needs more than ${length} bytes`);
    if (((le[at + length - 1] as number) & 0x80 ? 0xff : 0) !== sign)
      throw new DecimalOverflowError(`a value needs more than ${length} bytes`);
  }
}

/** How many leading bytes of the 16-byte big-endian `be` are redundant sign bytes (Java's `BigInteger.toByteArray`). */
function redundantSignBytes(be: Uint8Array): number {
  let skip = 0;
  while (skip < be.length - 1) {
    const b = be[skip] as number;
    const next = be[skip + 1] as number;
    if ((b === 0 && (next & 0x80) === 0) || (b === 0xff && (next & 0x80) !== 0)) skip++;
    else break;
  }
  return skip;
}

/** A validity bitmap of `data`'s slots, from 0 (the slice's own offset applied), or undefined without nulls. */
function validityOf(data: Data): Uint8Array | undefined {
  if (data.nullCount === 0) return undefined;
  const bitmap = new Uint8Array(Math.ceil(data.length / 8));
  for (let i = 0; i < data.length; i++)
    if (data.getValid(i)) bitmap[i >> 3] = (bitmap[i >> 3] as number) | (1 << (i & 7));
  return bitmap;
}

/** The column `data` (a `decimal128`, or a `decimal256` where the file's Arrow schema asked for one) as `form`'s bytes type. */
function storedData(data: Data, form: DecimalForm): Data {
  const values = data.values as Uint32Array;
  const le = new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
  const slot = (data.type as unknown as { bitWidth: number }).bitWidth / 8;
  const nullBitmap = validityOf(data);
  const common = { length: data.length, nullCount: data.nullCount, ...(nullBitmap && { nullBitmap }) };
  if (form.physical === 'FIXED_LEN_BYTE_ARRAY') {
    const width = form.length as number;
    const bytes = new Uint8Array(data.length * width);
    for (let i = 0; i < data.length; i++) {
      if (data.nullCount > 0 && !data.getValid(i)) continue;
      bigEndian(le, slot, (data.offset + i) * slot, width, bytes, i * width);
    }
    return makeData({ type: new FixedSizeBinary(width), ...common, data: bytes });
  }
  const offsets = new Int32Array(data.length + 1);
  const chunks: Uint8Array[] = [];
  const be = new Uint8Array(slot);
  let total = 0;
  for (let i = 0; i < data.length; i++) {
    if (!(data.nullCount > 0 && !data.getValid(i))) {
      bigEndian(le, slot, (data.offset + i) * slot, slot, be, 0);
      const chunk = be.slice(redundantSignBytes(be));
      chunks.push(chunk);
      total += chunk.length;
    }
    offsets[i + 1] = total;
  }
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.length;
  }
  return makeData({ type: new Binary(), ...common, valueOffsets: offsets, data: bytes });
}

/** `schema` with each form's column of bytes type; other fields (and every field's metadata) as they were. */
function storedSchema(schema: Schema, forms: readonly DecimalForm[]): Schema {
  const fields = schema.fields.map((f) => {
    const form = forms.find((d) => d.column === f.name);
    if (form === undefined) return f;
    const bitWidth = (f.type as unknown as { bitWidth?: number }).bitWidth;
    if (f.type.typeId !== Type.Decimal || (bitWidth !== 128 && bitWidth !== 256))
      throw new DecimalOverflowError(`column ${f.name} decoded as ${f.type}, not a 128- or 256-bit decimal`);
    const type =
      form.physical === 'FIXED_LEN_BYTE_ARRAY' ? new FixedSizeBinary(form.length as number) : new Binary();
    return new Field(f.name, type, f.nullable, f.metadata);
  });
  return new Schema(fields, schema.metadata);
}

/** An Arrow IPC stream read by arrow-js with the names it renames on reading put back (see `restoreFieldNames`). */
function readIpc(ipc: Uint8Array): Table {
  const table = tableFromIPC(ipc);
  restoreFieldNames(table.schema.fields, ipcSchemaFieldNames(ipc));
  return table;
}

/** `batch` (consumed) with each form's `decimal128` column as its stored bytes. */
export function toStoredDecimals(batch: pw.RecordBatch, forms: readonly DecimalForm[]): pw.RecordBatch {
  const table = readIpc(batch.intoIPCStream());
  const schema = storedSchema(table.schema, forms);
  const out = table.batches.map((b) => {
    const children = b.schema.fields.map((f, i) => {
      const child = b.data.children[i] as Data;
      const form = forms.find((d) => d.column === f.name);
      return form === undefined ? child : storedData(child, form);
    });
    return new RecordBatch(
      schema,
      makeData({ type: new Struct(schema.fields), length: b.numRows, nullCount: 0, children }),
    );
  });
  return oneBatch(tableToIPC(new Table(schema, out), 'stream'));
}

/** An Arrow IPC stream of a schema (no rows) with each form's column of its stored bytes type (the trial write's). */
export function storedDecimalSchemaIpc(ipc: Uint8Array, forms: readonly DecimalForm[]): Uint8Array {
  return tableToIPC(new Table(storedSchema(readIpc(ipc).schema, forms)), 'stream');
}

/**
 * The `ARROW:schema` footer entry for the Arrow schema an IPC stream starts with: its schema message (continuation
 * marker, length, flatbuffer), base64 — the form parquet-rs writes and reads. The writer records the schema it was
 * handed, with the bytes types; this entry says the decimals a reader is to decode.
 */
export function arrowSchemaEntry(ipc: Uint8Array): string {
  const view = new DataView(ipc.buffer, ipc.byteOffset, ipc.byteLength);
  const marked = view.getUint32(0, true) === 0xffffffff;
  const prefix = marked ? 8 : 4;
  const length = view.getUint32(marked ? 4 : 0, true);
  const message = new Uint8Array(8 + length);
  new DataView(message.buffer).setUint32(0, 0xffffffff, true);
  new DataView(message.buffer).setUint32(4, length, true);
  message.set(ipc.subarray(prefix, prefix + length), 8);
  return Buffer.from(message).toString('base64');
}
