// Values a rewrite sets per output rather than copies (`RewriteOptions.derivedColumns`) and the rows it feeds to a
// footer hook (`outputFooterEntries`): each batch bound for an output goes once through Arrow IPC and arrow-js,
// where the derived columns are replaced by the output's value and the hook's column is read (its values' bytes
// handed to the hook as stored, where it takes bytes), and back.
//
// Why through arrow-js: parquet-wasm's RecordBatch has no way to replace a column in place. The round trip keeps
// every field as it was (type, nullability, metadata), so the written schema is the one pre-flight expected, which
// verify checks. It costs a copy of each batch, paid only by rewrites that ask for it (a table format's small
// files), never by the others.
import { isUtf8 } from 'node:buffer';
import { basename } from 'node:path';
import {
  type Data,
  DataType,
  type Field,
  type LargeUtf8,
  makeData,
  RecordBatch,
  type Schema,
  Struct,
  Table,
  Type,
  tableFromIPC,
  tableToIPC,
  type Utf8,
} from 'apache-arrow';
import { InvalidInputError } from '../../core/errors.js';
import type {
  DerivedColumn,
  DerivedColumnValue,
  OutputFooterAccumulator,
  OutputFooterEntries,
} from '../../ports/parquet-engine.js';
import { oneBatch, type pw } from './wasm.js';

const STRING_TYPES = new Set<Type>([Type.Utf8, Type.LargeUtf8]);

/** The value a derived column holds in every row of the output stored at `outputKey`. */
export function derivedValueOf(rule: DerivedColumnValue, outputKey: string): string {
  switch (rule) {
    case 'output-file-name':
      return basename(outputKey);
  }
}

/** What one output sets and collects: its derived values and its footer accumulator. */
export class PerOutput {
  private readonly values: readonly { readonly column: string; readonly value: string }[];
  readonly accumulator: OutputFooterAccumulator | undefined;
  private checked = false;
  private readonly constant = new ConstantStrings();

  constructor(
    readonly outputKey: string,
    derivedColumns: readonly DerivedColumn[],
    private readonly footer: OutputFooterEntries | undefined,
  ) {
    this.values = derivedColumns.map((d) => ({
      column: d.column,
      value: derivedValueOf(d.value, outputKey),
    }));
    this.accumulator = footer?.begin(outputKey);
  }

  /** `batch` (consumed) with the derived columns set, its hook column's values fed to the accumulator. */
  apply(batch: pw.RecordBatch, sourceKey: string): pw.RecordBatch {
    const ipc = batch.intoIPCStream();
    const table = tableFromIPC(ipc);
    restoreFieldNames(table.schema.fields, ipcSchemaFieldNames(ipc));
    this.checked ||= checkColumns(sourceKey, table.schema, [
      ...this.values.map((v) => v.column),
      ...(this.footer === undefined ? [] : [this.footer.column]),
    ]);
    const out: RecordBatch[] = [];
    for (const b of table.batches) {
      const fields = b.schema.fields;
      const children = fields.map((field, i) => {
        const derived = this.values.find((v) => v.column === field.name);
        const child = b.data.children[i];
        if (derived === undefined || child === undefined) return child;
        return this.constant.of(field.type, derived.value, b.numRows);
      });
      const next = new RecordBatch(
        b.schema,
        makeData({ type: new Struct(fields), length: b.numRows, nullCount: 0, children: children as never }),
      );
      if (this.footer !== undefined && this.accumulator !== undefined) {
        const at = fields.findIndex((f) => f.name === this.footer?.column);
        const column = next.data.children[at];
        if (column !== undefined) feedAccumulator(this.accumulator, column as Data<StringType>);
      }
      out.push(next);
    }
    return oneBatch(tableToIPC(new Table(table.schema, out), 'stream'));
  }
}

type StringType = DataType<Type.Utf8 | Type.LargeUtf8>;

const utf8 = new TextEncoder();
/** Arrow-js's own decoding of a string value (replacement characters for bytes that are not UTF-8). */
const text = new TextDecoder();

/**
 * A string column holding one value in every row, built straight as Arrow data (the value's bytes repeated, offsets
 * a multiple of its length), not through arrow-js's builder, which encodes the same string once per row. The last
 * one built is kept (by type id: each batch's schema is decoded afresh): an output's batches are mostly of one size,
 * and Arrow data is immutable.
 */
class ConstantStrings {
  private last: { type: StringType; value: string; rows: number; data: Data } | undefined;

  of(type: StringType, value: string, rows: number): Data {
    const l = this.last;
    if (l !== undefined && l.type.typeId === type.typeId && l.value === value && l.rows === rows)
      return l.data;
    const bytes = utf8.encode(value);
    const values = new Uint8Array(bytes.length * rows);
    if (values.length > 0) {
      values.set(bytes, 0);
      // Doubling copies: log2(rows) native copies instead of one per row.
      for (let filled = bytes.length; filled < values.length; filled *= 2)
        values.copyWithin(filled, 0, Math.min(filled, values.length - filled));
    }
    const data = DataType.isLargeUtf8(type)
      ? makeData({
          type: type as LargeUtf8,
          length: rows,
          nullCount: 0,
          valueOffsets: BigInt64Array.from({ length: rows + 1 }, (_, i) => BigInt(i * bytes.length)),
          data: values,
        })
      : makeData({
          type: type as Utf8,
          length: rows,
          nullCount: 0,
          valueOffsets: Int32Array.from({ length: rows + 1 }, (_, i) => i * bytes.length),
          data: values,
        });
    this.last = { type, value, rows, data };
    return data;
  }
}

/**
 * Feeds a string column's values, in row order, to `accumulator`: as their stored bytes (`addUtf8`) where it takes
 * them and they are well-formed UTF-8, else as strings decoded as arrow-js decodes them. Well-formedness is checked
 * once for the batch's whole value buffer and per value only at its ends: a stretch of well-formed UTF-8 that
 * starts and ends on characters' boundaries (no continuation byte at its start, nor right after its end) is
 * well-formed itself.
 */
export function feedAccumulator(accumulator: OutputFooterAccumulator, column: Data<StringType>): void {
  const offsets = column.valueOffsets as Int32Array | BigInt64Array;
  const values = column.values as Uint8Array;
  const rows = column.length;
  const at = (r: number) => Number(offsets[r]);
  const addUtf8 = accumulator.addUtf8?.bind(accumulator);
  const last = rows > 0 ? at(rows) : 0;
  const whole = addUtf8 !== undefined && rows > 0 && isUtf8(values.subarray(at(0), last));
  const continues = (i: number) => i < last && ((values[i] as number) & 0xc0) === 0x80;
  for (let r = 0; r < rows; r++) {
    if (!column.getValid(r)) {
      accumulator.add(null);
      continue;
    }
    const start = at(r);
    const end = at(r + 1);
    const bytes = values.subarray(start, end);
    if (whole && !continues(start) && !continues(end)) addUtf8(bytes);
    else if (addUtf8 !== undefined && isUtf8(bytes)) addUtf8(bytes);
    else accumulator.add(text.decode(bytes));
  }
}

/**
 * Refuses a derived or hook column the rows do not have as a top-level string column (the engine would write a
 * value of the wrong type, or feed the hook nothing). Checked on an output's first batch, before its rows are
 * encoded; returns true.
 */
function checkColumns(sourceKey: string, schema: Schema, names: readonly string[]): true {
  const problems = names.flatMap((name) => {
    const field = schema.fields.find((f) => f.name === name);
    if (field === undefined) return [`column ${name} is not in the rows of ${sourceKey}`];
    return STRING_TYPES.has(field.type.typeId)
      ? []
      : [`column ${name} of ${sourceKey} is ${field.type}, not a string`];
  });
  if (problems.length > 0) throw new InvalidInputError('Cannot set per-output values', problems);
  return true;
}

/** A field's name and its children's, as an Arrow IPC schema message spells them. */
interface FieldNames {
  readonly name: string;
  readonly children: readonly FieldNames[];
}

/**
 * Puts back the names arrow-js renamed on reading: its Map type forces `entries`, `key` and `value` (ARROW-8716)
 * where the Parquet file, and so arrow-rs, say `key_value` or `map`. Written back as arrow-js has them, the output's
 * map groups would be renamed — a schema change verify refuses, rightly. Field objects are mutated in place.
 */
export function restoreFieldNames(fields: readonly Field[], names: readonly FieldNames[]): void {
  for (const [i, field] of fields.entries()) {
    const original = names[i];
    if (original === undefined) continue;
    if (field.name !== original.name) (field as { name: string }).name = original.name;
    restoreFieldNames((field.type.children ?? []) as Field[], original.children);
  }
}

/**
 * The field name tree of the schema message that starts an Arrow IPC stream, read straight from its flatbuffer
 * (Message.header → Schema.fields → Field.name / Field.children), so no Arrow type is built and nothing renamed.
 */
export function ipcSchemaFieldNames(ipc: Uint8Array): FieldNames[] {
  const view = new DataView(ipc.buffer, ipc.byteOffset, ipc.byteLength);
  const u32 = (at: number) => view.getUint32(at, true);
  // An encapsulated message: 0xFFFFFFFF, the metadata length, then the Message flatbuffer (older streams omit the marker).
  const base = u32(0) === 0xffffffff ? 8 : 4;
  const table = (at: number) => at + u32(at);
  const fieldAt = (t: number, index: number): number | undefined => {
    const vtable = t - view.getInt32(t, true);
    const length = view.getUint16(vtable, true);
    const slot = 4 + 2 * index;
    if (slot >= length) return undefined;
    const offset = view.getUint16(vtable + slot, true);
    return offset === 0 ? undefined : t + offset;
  };
  const tables = (t: number, index: number): number[] => {
    const at = fieldAt(t, index);
    if (at === undefined) return [];
    const vector = at + u32(at);
    return Array.from({ length: u32(vector) }, (_, i) => table(vector + 4 + 4 * i));
  };
  const text = new TextDecoder();
  const names = (f: number): FieldNames => {
    const at = fieldAt(f, 0);
    const s = at === undefined ? undefined : at + u32(at);
    const name = s === undefined ? '' : text.decode(ipc.subarray(s + 4, s + 4 + u32(s)));
    return { name, children: tables(f, 5).map(names) };
  };
  const message = table(base);
  const header = fieldAt(message, 2);
  if (header === undefined) return [];
  return tables(table(header), 1).map(names);
}

/** What a rewrite computes per output (see `RewriteOptions.derivedColumns` and `outputFooterEntries`). */
export interface PerOutputSettings {
  readonly derivedColumns: readonly DerivedColumn[];
  readonly footerEntries: OutputFooterEntries | undefined;
}

/** How a relayed value reached the accumulator: `addUtf8` (its bytes), `add` of a string (its UTF-8), `add(null)`. */
const RELAYED_UTF8 = 0;
const RELAYED_STRING = 1;
const RELAYED_NULL = 2;

/**
 * The calls an engine worker's footer accumulator received for a stretch of rows, in order, packed to cross to the
 * calling thread (typed arrays, transferred, not a string per row): value i is `bytes[ends[i-1]..ends[i])`, passed
 * as `kinds[i]` says.
 */
export interface RelayedFooterValues {
  readonly bytes: Uint8Array;
  readonly ends: Uint32Array;
  readonly kinds: Uint8Array;
}

/**
 * The footer accumulator an engine worker feeds in place of the caller's hook, which is a function and cannot cross
 * a thread boundary: it records each call (`take` hands them over, to be posted to the calling thread, where
 * {@link replayFooterValues} makes the same calls on the real accumulator). It offers `addUtf8`, so the worker passes
 * a value's bytes as stored wherever the one-thread path could; `finish` is the calling thread's.
 */
export class RelayAccumulator implements OutputFooterAccumulator {
  private bytes = new Uint8Array(64 * 1024);
  private length = 0;
  private ends: number[] = [];
  private kinds: number[] = [];

  add(value: string | null): void {
    if (value === null) this.push(new Uint8Array(0), RELAYED_NULL);
    else this.push(utf8.encode(value), RELAYED_STRING);
  }

  addUtf8(bytes: Uint8Array): void {
    this.push(bytes, RELAYED_UTF8);
  }

  finish(): Readonly<Record<string, string>> {
    throw new Error("a relayed accumulator's entries are finished by the calling thread");
  }

  /** The calls recorded since the last `take`, or undefined when there were none. */
  take(): RelayedFooterValues | undefined {
    if (this.kinds.length === 0) return undefined;
    const taken = {
      bytes: this.bytes.slice(0, this.length),
      ends: Uint32Array.from(this.ends),
      kinds: Uint8Array.from(this.kinds),
    };
    this.length = 0;
    this.ends = [];
    this.kinds = [];
    return taken;
  }

  private push(value: Uint8Array, kind: number): void {
    if (this.length + value.length > this.bytes.length) {
      const grown = new Uint8Array(Math.max(this.bytes.length * 2, this.length + value.length));
      grown.set(this.bytes.subarray(0, this.length));
      this.bytes = grown;
    }
    this.bytes.set(value, this.length);
    this.length += value.length;
    this.ends.push(this.length);
    this.kinds.push(kind);
  }
}

/**
 * Makes on `accumulator` the calls a worker's {@link RelayAccumulator} recorded, in order: the same values, the same
 * way — `addUtf8` for bytes the worker passed as bytes (or `add` of their text, as `feedAccumulator` does for an
 * accumulator without `addUtf8`), `add` of the same string (a UTF-8 round trip keeps any string `TextDecoder` made),
 * `add(null)`.
 */
export function replayFooterValues(values: RelayedFooterValues, accumulator: OutputFooterAccumulator): void {
  const addUtf8 = accumulator.addUtf8?.bind(accumulator);
  let start = 0;
  for (let i = 0; i < values.kinds.length; i++) {
    const end = values.ends[i] as number;
    const kind = values.kinds[i];
    if (kind === RELAYED_NULL) accumulator.add(null);
    else {
      const bytes = values.bytes.subarray(start, end);
      if (kind === RELAYED_UTF8 && addUtf8 !== undefined) addUtf8(bytes);
      else accumulator.add(text.decode(bytes));
    }
    start = end;
  }
}
