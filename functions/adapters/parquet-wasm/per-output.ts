// Values a rewrite sets per output rather than copies (`RewriteOptions.derivedColumns`) and the rows it feeds to a
// footer hook (`outputFooterEntries`): each batch bound for an output goes once through Arrow IPC and arrow-js,
// where the derived columns are replaced by the output's value and the hook's column is read, and back.
//
// Why through arrow-js: parquet-wasm's RecordBatch has no way to replace a column in place. The round trip keeps
// every field as it was (type, nullability, metadata), so the written schema is the one pre-flight expected, which
// verify checks. It costs a copy of each batch, paid only by rewrites that ask for it (a table format's small
// files), never by the others.
import { basename } from 'node:path';
import {
  type Field,
  makeData,
  RecordBatch,
  type Schema,
  Struct,
  Table,
  Type,
  tableFromIPC,
  tableToIPC,
  vectorFromArray,
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
        return vectorFromArray(new Array<string>(b.numRows).fill(derived.value), field.type).data[0];
      });
      const next = new RecordBatch(
        b.schema,
        makeData({ type: new Struct(fields), length: b.numRows, nullCount: 0, children: children as never }),
      );
      if (this.footer !== undefined && this.accumulator !== undefined) {
        const column = next.getChild(this.footer.column);
        for (let r = 0; r < next.numRows; r++) {
          const v = column?.get(r) as unknown;
          this.accumulator.add(v === null || v === undefined ? null : String(v));
        }
      }
      out.push(next);
    }
    return oneBatch(tableToIPC(new Table(table.schema, out), 'stream'));
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
