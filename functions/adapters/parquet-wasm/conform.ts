// A decoded batch brought to the Arrow schema of the output it joins, where its values are the same in either.
//
// Why: files of one run have the same Parquet schema (the planner groups them by it, pre-flight's trial write proved
// their outputs' Parquet schemas equal), but the decoder follows each file's own Arrow schema hint (the footer's
// `ARROW:schema`, which the writer chose): a column one writer recorded as a string and another as a large string,
// a timestamp stored in UTC that one labels `UTC` and another `Europe/Berlin`, a string column one writer kept
// dictionary-encoded, a field one decorated with metadata. The Parquet the output holds is the same whichever Arrow
// type the rows arrive in, so such a batch is converted to the output's type — value for value, never through a
// rounding or a reinterpretation — and the output's `ARROW:schema` is its first rows'. A difference that is not
// one of these is refused by name, with what to do: never reported as a damaged file, which it is not.
//
// Which Arrow type a string or binary column is written as — top-level, a list's items, a map's keys or values or a
// struct's field, at any depth — is chosen before the first row, from every input's hint (`plainTypesOf`, at planning): where the run's
// inputs disagree, the plain value type of the widest offsets, which every other form converts to exactly, and for a
// list the widest offsets any input's list has. Not the first batch's type: a dictionary cannot take a plain file's
// values without building a dictionary per batch, whose index type (int8 for a pandas categorical) may not hold
// them, and 32-bit offsets may not hold a large batch's bytes. Where the inputs agree nothing changes.

import {
  Binary,
  type Data,
  DataType,
  Field,
  LargeBinary,
  LargeList,
  LargeUtf8,
  List,
  Map_,
  MessageReader,
  makeData,
  RecordBatch,
  Schema,
  Struct,
  Table,
  tableFromIPC,
  tableToIPC,
  Utf8,
  vectorFromArray,
} from 'apache-arrow';
import { UnsupportedInputError } from '../../core/errors.js';
import { type PlainType, pw } from './wasm.js';

/** Why a column cannot be brought to the output's type exactly (a message part naming column and both types). */
class NotConformable extends Error {}

/** Whether `type` is a variable-length string or binary type (32- or 64-bit offsets). */
function isText(type: DataType): boolean {
  return DataType.isUtf8(type) || DataType.isLargeUtf8(type);
}
/** Whether `type` has child types (whose own differences String() may not show). */
function isNested(type: DataType): boolean {
  return type.children !== undefined && type.children !== null && type.children.length > 0;
}
function isBytes(type: DataType): boolean {
  return DataType.isBinary(type) || DataType.isLargeBinary(type);
}

/**
 * `data` (column `column` of the batch) as `type`, its values unchanged: the same type (metadata aside); a
 * timestamp of the same unit in another zone label (the stored instants are UTC either way); a string or binary
 * column with the other offset width; a dictionary-encoded column as its plain values; a struct field by field; a
 * list item by item, its offsets in the other width where the type asks (narrowed only where they fit); a map entry
 * by entry (key and value as a struct's fields).
 * @throws NotConformable for any other pair.
 */
function conformData(column: string, data: Data, type: DataType): Data {
  const from = data.type;
  if (DataType.isStruct(type) && DataType.isStruct(from)) {
    const fields = type.children;
    if (fields.length !== from.children.length || fields.some((f, i) => f.name !== from.children[i]?.name))
      throw new NotConformable(
        `its struct column ${column} has fields ${fieldNames(from.children)}, not ${fieldNames(fields)}`,
      );
    return makeData({
      type,
      offset: data.offset,
      length: data.length,
      nullCount: data.nullCount,
      nullBitmap: data.nullBitmap,
      children: fields.map((f, i) => conformData(`${column}.${f.name}`, data.children[i] as Data, f.type)),
    });
  }
  if (isListType(type) && isListType(from)) {
    const item = type.children[0] as Field;
    const child = conformData(`${column}[]`, data.children[0] as Data, item.type);
    return makeData({
      type,
      offset: data.offset,
      length: data.length,
      nullCount: data.nullCount,
      nullBitmap: data.nullBitmap,
      valueOffsets: listOffsets(column, data.valueOffsets, DataType.isLargeList(type)),
      child,
    } as never);
  }
  if (DataType.isMap(type) && DataType.isMap(from)) {
    const entries = type.children[0] as Field;
    return makeData({
      type,
      offset: data.offset,
      length: data.length,
      nullCount: data.nullCount,
      nullBitmap: data.nullBitmap,
      valueOffsets: data.valueOffsets,
      child: conformData(`${column}{}`, data.children[0] as Data, entries.type),
    } as never);
  }
  if (String(from) === String(type) && !DataType.isDictionary(from) && !isNested(from)) return data;
  if (DataType.isTimestamp(from) && DataType.isTimestamp(type) && from.unit === type.unit)
    return retyped(data, type);
  const plain = DataType.isDictionary(from) ? from.dictionary : from;
  const sameValues =
    (isText(plain) && isText(type)) ||
    (isBytes(plain) && isBytes(type)) ||
    (DataType.isDictionary(from) && String(plain) === String(type) && !isNested(type));
  if (sameValues) {
    const vector = new RecordBatch({ v: data }).getChild('v');
    if (vector !== null) {
      const converted = vectorFromArray([...vector] as never[], type);
      if (converted.data.length === 1 && converted.length === data.length) return converted.data[0] as Data;
    }
  }
  if (String(from) === String(type)) return data;
  throw new NotConformable(`its column ${column} decodes as ${from}`);
}

/** Whether `type` is a list with 32- or 64-bit offsets. */
function isListType(type: DataType): boolean {
  return DataType.isList(type) || DataType.isLargeList(type);
}

/**
 * A list's offsets (as arrow-js holds them for the slice: one more than its length) in the other width where `large`
 * asks for it: widened to 64 bits exactly; narrowed to 32 bits only where every offset fits, else NotConformable.
 */
function listOffsets(
  column: string,
  offsets: ArrayLike<number | bigint>,
  large: boolean,
): Int32Array | BigInt64Array {
  if (offsets instanceof BigInt64Array) {
    if (large) return offsets;
    const out = new Int32Array(offsets.length);
    for (let i = 0; i < offsets.length; i++) {
      const v = offsets[i] as bigint;
      if (v > 2_147_483_647n)
        throw new NotConformable(`its list column ${column} holds more items than 32-bit offsets address`);
      out[i] = Number(v);
    }
    return out;
  }
  const narrow = offsets instanceof Int32Array ? offsets : Int32Array.from(offsets as ArrayLike<number>);
  if (!large) return narrow;
  const out = new BigInt64Array(narrow.length);
  for (let i = 0; i < narrow.length; i++) out[i] = BigInt(narrow[i] as number);
  return out;
}

function fieldNames(fields: readonly Field[]): string {
  return `(${fields.map((f) => f.name).join(', ')})`;
}

/**
 * `batch` (rows of input `sourceKey`, consumed) as a batch of `target`, the Arrow schema of the rows already in
 * output `outputKey`; returns a new wasm batch.
 * @throws UnsupportedInputError naming the input, the column and both types when a column's values cannot be
 * written as the output's type exactly (a different Parquet schema never reaches here: such files are not grouped).
 */
export function conformBatch(
  sourceKey: string,
  batch: pw.RecordBatch,
  target: Schema,
  outputKey: string,
): pw.RecordBatch {
  const js = tableFromIPC(batch.intoIPCStream());
  const names = js.schema.fields.map((f) => f.name);
  const rows = js.numRows;
  try {
    if (names.length !== target.fields.length || target.fields.some((f, i) => f.name !== names[i]))
      throw new NotConformable(
        `its columns ${fieldNames(js.schema.fields)} are not the output's ${fieldNames(target.fields)}`,
      );
    const children = target.fields.map((f, i) => {
      const vector = js.getChildAt(i);
      const column = f.name;
      if (vector === null || vector.data.length > 1)
        throw new NotConformable(`its column ${column} did not decode as one array`);
      const data = vector.data[0];
      if (data === undefined) return vectorFromArray([], f.type).data[0] as Data;
      const converted = conformData(column, data, f.type);
      if (!DataType.isDictionary(f.type) && DataType.isDictionary(converted.type))
        throw new NotConformable(`its column ${column} decodes as ${converted.type}`);
      return converted;
    });
    const struct = makeData({ type: new Struct(target.fields), length: rows, nullCount: 0, children });
    const table = pw.Table.fromIPCStream(tableToIPC(new Table([new RecordBatch(target, struct)]), 'stream'));
    const batches = table.recordBatches();
    table.free();
    if (batches.length !== 1) {
      for (const b of batches) b.free();
      throw new NotConformable(`its rows did not convert into one batch`);
    }
    return batches[0] as pw.RecordBatch;
  } catch (err) {
    if (!(err instanceof NotConformable)) throw err;
    const column = target.fields.find((f, i) => String(f.type) !== String(js.schema.fields[i]?.type));
    throw new UnsupportedInputError(
      sourceKey,
      `it has the same Parquet schema as the files before it in output ${outputKey}, but its writer recorded other Arrow types for it (the footer's ARROW:schema): ${err.message}${column === undefined ? '' : `, the output's ${column.name} is ${column.type}`}, and the rewrite does not convert that exactly`,
      {
        advice:
          'Nothing was written; compact this file apart from the others (exclude it from the run, or plan it in a group of its own), or rewrite it with the same writer as the rest of the partition.',
      },
    );
  }
}

/** The Arrow schema a file's writer recorded (its footer's `ARROW:schema`), or undefined without a readable one. */
function hintOf(keyValueMetadata: Readonly<Record<string, string>>): Schema | undefined {
  const encoded = keyValueMetadata['ARROW:schema'];
  if (encoded === undefined) return undefined;
  try {
    return new MessageReader(new Uint8Array(Buffer.from(encoded, 'base64'))).readSchema() ?? undefined;
  } catch {
    // An unreadable hint is the decoder's problem to name (it reads the same entry); here it only means "no hint".
    return undefined;
  }
}

/** `type`'s family and offset width when it is a string or binary type, plain or as a dictionary's values. */
function textShape(type: DataType): { readonly bytes: boolean; readonly large: boolean } | undefined {
  const plain = DataType.isDictionary(type) ? type.dictionary : type;
  if (DataType.isUtf8(plain)) return { bytes: false, large: false };
  if (DataType.isLargeUtf8(plain)) return { bytes: false, large: true };
  if (DataType.isBinary(plain)) return { bytes: true, large: false };
  if (DataType.isLargeBinary(plain)) return { bytes: true, large: true };
  return undefined;
}

/**
 * The Arrow type each column of a run is written as where its inputs' hints disagree, from their key-value metadata
 * (their footers, read at pre-flight). A string or binary column (a dictionary beside plain values, 32- beside 64-bit
 * offsets, a file with no hint beside one with): the plain type of the widest offsets any of them has. A list: the
 * widest offsets any input's list has, its items chosen alike; a map: its entries' key and value alike; a struct: its
 * fields chosen alike, by name. Columns the hints agree on, or that differ otherwise (not all strings, or all
 * binaries, or all lists, or all maps, or all structs of the same fields), are left out — the conversion names them if their values differ; undefined when none is left, so a run
 * whose inputs agree is written exactly as before. A file without a hint decodes a top-level string or binary column
 * as plain 32-bit values; beside a nested column it leaves nothing chosen.
 */
export function plainTypesOf(
  keyValueMetadata: readonly Readonly<Record<string, string>>[],
): Readonly<Record<string, PlainType>> | undefined {
  const hints = keyValueMetadata.map(hintOf);
  const names = new Set(hints.flatMap((h) => h?.fields.map((f) => f.name) ?? []));
  const chosen: Record<string, PlainType> = {};
  for (const name of names) {
    const plain = plainTypeOf(hints.map((h) => h?.fields.find((f) => f.name === name)?.type));
    if (plain !== undefined) chosen[name] = plain;
  }
  return Object.keys(chosen).length === 0 ? undefined : chosen;
}

/** The type one column (or item, or field) is written as, from each input's hint of it; undefined: nothing chosen. */
function plainTypeOf(types: readonly (DataType | undefined)[]): PlainType | undefined {
  const first = types[0];
  if (first !== undefined && types.every((t) => t !== undefined && String(t) === String(first)))
    return undefined;
  const shapes = types.map((t) => (t === undefined ? undefined : textShape(t)));
  const known = shapes.filter((s) => s !== undefined);
  if (known.length > 0 && shapes.every((s, i) => s !== undefined || types[i] === undefined)) {
    const bytes = known[0]?.bytes ?? false;
    if (known.some((s) => s.bytes !== bytes)) return undefined;
    const large = known.some((s) => s.large);
    return bytes ? (large ? 'large_binary' : 'binary') : large ? 'large_utf8' : 'utf8';
  }
  const all = types.filter((t) => t !== undefined);
  if (all.length !== types.length) return undefined;
  if (all.every(isListType)) {
    const items = plainTypeOf(all.map((t) => (t.children[0] as Field).type));
    const large = all.some((t) => DataType.isLargeList(t));
    if (items === undefined && all.every((t) => DataType.isLargeList(t) === large)) return undefined;
    return { list: items ?? null, large };
  }
  if (all.every((t) => DataType.isMap(t))) {
    const entries = plainTypeOf(all.map((t) => (t.children[0] as Field).type));
    return entries === undefined ? undefined : { map: entries };
  }
  if (all.every((t) => DataType.isStruct(t))) {
    const names = all[0]?.children.map((f) => f.name) ?? [];
    if (all.some((t) => t.children.length !== names.length || t.children.some((f, i) => f.name !== names[i])))
      return undefined;
    const fields: Record<string, PlainType> = {};
    for (const [i, name] of names.entries()) {
      const field = plainTypeOf(all.map((t) => (t.children[i] as Field).type));
      if (field !== undefined) fields[name] = field;
    }
    return Object.keys(fields).length === 0 ? undefined : { struct: fields };
  }
  return undefined;
}

const PLAIN: Readonly<Record<Extract<PlainType, string>, () => DataType>> = {
  utf8: () => new Utf8(),
  large_utf8: () => new LargeUtf8(),
  binary: () => new Binary(),
  large_binary: () => new LargeBinary(),
};

/**
 * `schema` (a decoded batch's) with the columns of `plain` as their chosen types, keeping each field's name,
 * nullability and metadata; undefined when it already has them all.
 */
export function withPlainTypes(
  schema: Schema,
  plain: Readonly<Record<string, PlainType>>,
): Schema | undefined {
  let changed = false;
  const fields = schema.fields.map((f) => {
    const want = plain[f.name];
    if (want === undefined) return f;
    const type = withPlainType(f.type, want);
    if (type === f.type) return f;
    changed = true;
    return new Field(f.name, type, f.nullable, f.metadata);
  });
  return changed ? new Schema(fields, schema.metadata) : undefined;
}

/**
 * `type` (as a batch decoded it) written as `plain` says, at any depth; `type` itself where it already is, or where
 * it is not of the shape `plain` describes (the conversion then names the column).
 */
function withPlainType(type: DataType, plain: PlainType): DataType {
  if (typeof plain === 'string') {
    const want = PLAIN[plain]();
    return String(type) === String(want) && !DataType.isDictionary(type) ? type : want;
  }
  if ('list' in plain) {
    if (!isListType(type)) return type;
    const item = type.children[0] as Field;
    const itemType = plain.list === null ? item.type : withPlainType(item.type, plain.list);
    if (itemType === item.type && DataType.isLargeList(type) === plain.large) return type;
    const field = new Field(item.name, itemType, item.nullable, item.metadata);
    return plain.large ? new LargeList(field) : new List(field);
  }
  if ('map' in plain) {
    if (!DataType.isMap(type)) return type;
    const entries = type.children[0] as Field;
    const entriesType = withPlainType(entries.type, plain.map);
    if (entriesType === entries.type || !DataType.isStruct(entriesType)) return type;
    return new Map_(
      new Field(entries.name, entriesType, entries.nullable, entries.metadata),
      type.keysSorted,
    );
  }
  if (!DataType.isStruct(type)) return type;
  let changed = false;
  const fields = type.children.map((f) => {
    const want = plain.struct[f.name];
    const fieldType = want === undefined ? f.type : withPlainType(f.type, want);
    if (fieldType === f.type) return f;
    changed = true;
    return new Field(f.name, fieldType, f.nullable, f.metadata);
  });
  return changed ? new Struct(fields) : type;
}

/**
 * `data`'s values (fixed-width, same storage) under another Arrow `type` that reads the same bytes the same way: a
 * timestamp's zone label, an integer of the same width as its logical alias. No copy.
 */
export function retyped(data: Data, type: DataType): Data {
  return makeData({
    type,
    offset: data.offset,
    length: data.length,
    nullCount: data.nullCount,
    nullBitmap: data.nullBitmap,
    data: data.values,
  } as never);
}
