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

import {
  type Data,
  DataType,
  type Field,
  makeData,
  RecordBatch,
  type Schema,
  Struct,
  Table,
  tableFromIPC,
  tableToIPC,
  vectorFromArray,
} from 'apache-arrow';
import { UnsupportedInputError } from '../../core/errors.js';
import { pw } from './wasm.js';

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
 * column with the other offset width; a dictionary-encoded column as its plain values; a struct field by field.
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
  if (String(from) === String(type) && !DataType.isDictionary(from) && !isNested(from)) return data;
  if (DataType.isTimestamp(from) && DataType.isTimestamp(type) && from.unit === type.unit)
    return makeData({
      type,
      offset: data.offset,
      length: data.length,
      nullCount: data.nullCount,
      nullBitmap: data.nullBitmap,
      data: data.values,
    } as never);
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
