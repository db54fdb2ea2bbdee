// Row lineage materialised while rewriting: every row of an input with `rowLineage` leaves with its `_row_id` and
// `_last_updated_sequence_number` written out, because a rewritten row lands in a file whose inherited first row id
// and sequence number are not its own (Iceberg v3 spec, "Row Lineage").

import {
  DataType,
  Field,
  Int64,
  makeData,
  RecordBatch,
  Schema,
  Struct,
  Table,
  tableFromIPC,
  tableToIPC,
} from 'apache-arrow';
import { UnsupportedInputError } from '../../core/errors.js';
import {
  LAST_UPDATED_SEQUENCE_NUMBER_FIELD,
  ROW_ID_FIELD,
  type RowLineage,
} from '../../ports/parquet-engine.js';
import { pw } from './wasm.js';

const FIELD_ID_KEY = 'PARQUET:field_id';
const LINEAGE = [ROW_ID_FIELD, LAST_UPDATED_SEQUENCE_NUMBER_FIELD] as const;

function isInt64(type: DataType): boolean {
  return DataType.isInt(type) && type.bitWidth === 64 && type.isSigned;
}

/**
 * Where each lineage column is in `schema` (-1: absent, to be appended). A column is the lineage column by its
 * field id; a column of that name without that id is refused rather than overwritten or duplicated, and so is a
 * lineage column that is not a 64-bit integer (its values could not be carried exactly).
 */
function lineageIndexes(key: string, schema: Schema): number[] {
  return LINEAGE.map((l) => {
    const byId = schema.fields.findIndex((f) => f.metadata.get(FIELD_ID_KEY) === String(l.id));
    const byName = schema.fields.findIndex((f) => f.name === l.name);
    if (byId < 0 && byName >= 0)
      throw new UnsupportedInputError(
        key,
        `its column ${l.name} has not the row lineage field id ${l.id}: it is not the table's row lineage, and this writer would have to overwrite it`,
      );
    const field = schema.fields[byId];
    if (field !== undefined && !isInt64(field.type))
      throw new UnsupportedInputError(
        key,
        `its row lineage column ${field.name} (field id ${l.id}) is ${field.type}, not a 64-bit integer`,
      );
    return byId;
  });
}

/** The output schema of a lineage input: the input's, with each lineage column it lacks appended (nullable INT64). */
function lineageSchema(key: string, schema: Schema): { schema: Schema; at: number[] } {
  const at = lineageIndexes(key, schema);
  const fields = [...schema.fields];
  for (const [i, l] of LINEAGE.entries())
    if (at[i] === -1) {
      at[i] = fields.length;
      fields.push(new Field(l.name, new Int64(), true, new Map([[FIELD_ID_KEY, String(l.id)]])));
    }
  return { schema: new Schema(fields, schema.metadata), at };
}

/** The Arrow schema (as IPC) a lineage input is written with, for the pre-flight trial write. */
export function lineageSchemaIpc(key: string, schemaIpc: Uint8Array): Uint8Array {
  return tableToIPC(new Table(lineageSchema(key, tableFromIPC(schemaIpc).schema).schema), 'stream');
}

/**
 * Rows `start..start + n` of input `key` (positions in the file, before deletes) with their lineage written out:
 * each lineage column holds the input's own value where it has one, else the inherited one — `firstRowId` +
 * position for `_row_id`, `sequenceNumber` for `_last_updated_sequence_number` — so no output row is null there.
 * Consumes `batch`; returns a new wasm batch.
 * @throws UnsupportedInputError for a column that clashes with the lineage columns.
 */
export function withRowLineage(
  key: string,
  batch: pw.RecordBatch,
  start: number,
  lineage: RowLineage,
): pw.RecordBatch {
  const n = batch.numRows;
  const js = tableFromIPC(batch.intoIPCStream());
  const { schema, at } = lineageSchema(key, js.schema);
  const inherited = [
    (r: number) => lineage.firstRowId + BigInt(start + r),
    () => lineage.sequenceNumber,
  ] as const;
  const children = schema.fields.map((f, i) => {
    const which = at.indexOf(i);
    const own = i < js.schema.fields.length ? js.getChildAt(i) : null;
    if (own !== null && own.data.length !== 1)
      throw new Error(`row lineage: column ${f.name} of ${key} arrived in ${own.data.length} chunks`);
    if (which < 0) return own?.data[0];
    const values = new BigInt64Array(n);
    const inherit = inherited[which] as (r: number) => bigint;
    for (let r = 0; r < n; r++) {
      const v = own?.get(r) as bigint | null | undefined;
      values[r] = v === null || v === undefined ? inherit(r) : v;
    }
    return makeData({ type: new Int64(), length: n, nullCount: 0, data: values });
  });
  const struct = makeData({
    type: new Struct(schema.fields),
    length: n,
    nullCount: 0,
    children: children as never,
  });
  const table = pw.Table.fromIPCStream(tableToIPC(new Table([new RecordBatch(schema, struct)]), 'stream'));
  const batches = table.recordBatches();
  table.free();
  if (batches.length !== 1) throw new Error(`row lineage of ${key} produced ${batches.length} batches`);
  return batches[0] as pw.RecordBatch;
}
