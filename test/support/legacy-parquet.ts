// Small Parquet files in the legacy physical forms older writers (parquet-mr with writeLegacyFormat, Hive,
// Impala, Spark's INT96) still leave on lakes, made here because no writer in the repo writes them any more:
// hyparquet-writer writes a modern file whose pages hold exactly the legacy form's bytes (FIXED_LEN_BYTE_ARRAY(12)
// for INT96, a 3-level list with a required element for a 2-level one: same levels), then the footer's schema
// is rewritten to the legacy form with the project's Thrift codec. Pages are never touched.

import { parquetWriteBuffer } from 'hyparquet-writer';
import {
  decodeStruct,
  encodeStruct,
  field,
  setField,
  T,
  type ThriftList,
  type ThriftStruct,
} from '../../functions/core/parquet/thrift-compact.js';

type WriteOptions = Parameters<typeof parquetWriteBuffer>[0];

/** Thrift field ids of parquet.thrift used below. */
const FMD_SCHEMA = 2;
const FMD_ROW_GROUPS = 4;
const RG_COLUMNS = 1;
const CC_META = 3;
const CMD_TYPE = 1;
const CMD_PATH = 3;
const SE_TYPE = 1;
const SE_TYPE_LENGTH = 2;
const SE_REPETITION = 3;
const SE_NAME = 4;
const SE_CONVERTED = 6;
const INT96 = 3;
const REPEATED = 2;
const MAP_KEY_VALUE = 2;

const utf8 = new TextEncoder();
const text = new TextDecoder();

/** Rewrites a whole file's FileMetaData with `edit`; page bytes and offsets stay as they are. */
export function patchFooter(file: Uint8Array, edit: (meta: ThriftStruct) => void): Uint8Array {
  const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
  const length = view.getUint32(file.length - 8, true);
  const start = file.length - 8 - length;
  const { struct } = decodeStruct(file.subarray(start, file.length - 8));
  edit(struct);
  const meta = encodeStruct(struct);
  const out = new Uint8Array(start + meta.length + 8);
  out.set(file.subarray(0, start));
  out.set(meta, start);
  new DataView(out.buffer).setUint32(start + meta.length, meta.length, true);
  out.set([0x50, 0x41, 0x52, 0x31], start + meta.length + 4);
  return out;
}

function list(s: ThriftStruct, id: number): ThriftStruct[] {
  return ((field(s, id)?.value as ThriftList | undefined)?.items ?? []) as ThriftStruct[];
}

function nameOf(e: ThriftStruct): string {
  return text.decode(field(e, SE_NAME)?.value as Uint8Array);
}

/** Every column chunk's metadata, in row-group then column order. */
function columnMetas(meta: ThriftStruct): ThriftStruct[] {
  return list(meta, FMD_ROW_GROUPS).flatMap((g) =>
    list(g, RG_COLUMNS).map((c) => field(c, CC_META)?.value as ThriftStruct),
  );
}

function write(options: Omit<WriteOptions, 'writer'>): Uint8Array {
  return new Uint8Array(parquetWriteBuffer({ codec: 'UNCOMPRESSED', ...options } as WriteOptions));
}

/** Nanoseconds since the epoch as Spark's INT96: nanoseconds of the day, then the Julian day, little-endian. */
export function int96Bytes(nanos: bigint): Uint8Array {
  const dayNs = 86_400_000_000_000n;
  let day = nanos / dayNs;
  let ns = nanos % dayNs;
  if (ns < 0n) {
    ns += dayNs;
    day -= 1n;
  }
  const out = new Uint8Array(12);
  const view = new DataView(out.buffer);
  view.setBigUint64(0, ns, true);
  view.setInt32(8, Number(day) + 2_440_588, true);
  return out;
}

/** A file with an optional INT96 column `ts` (as Spark writes timestamps) and an INT32 `id`. */
export function int96File(values: readonly (bigint | null)[]): Uint8Array {
  const file = write({
    columnData: [
      { name: 'id', data: Int32Array.from(values, (_, i) => i) },
      { name: 'ts', data: values.map((v) => (v === null ? null : int96Bytes(v))) },
    ],
    schema: [
      { name: 'spark_schema', num_children: 2 },
      { name: 'id', type: 'INT32', repetition_type: 'REQUIRED' },
      { name: 'ts', type: 'FIXED_LEN_BYTE_ARRAY', type_length: 12, repetition_type: 'OPTIONAL' },
    ],
    statistics: false,
  } as never);
  return patchFooter(file, (meta) => {
    const ts = list(meta, FMD_SCHEMA).find((e) => nameOf(e) === 'ts') as ThriftStruct;
    setField(ts, SE_TYPE, T.I32, INT96);
    ts.fields = ts.fields.filter((f) => f.id !== SE_TYPE_LENGTH);
    for (const m of columnMetas(meta)) {
      const path = list(m, CMD_PATH).map((p) => text.decode(p as unknown as Uint8Array));
      if (path.join('.') === 'ts') setField(m, CMD_TYPE, T.I32, INT96);
    }
  });
}

/**
 * Decimals as parquet-mr's legacy format writes them: `fixed` DECIMAL(9,2) as FIXED_LEN_BYTE_ARRAY(4) and
 * `binary` DECIMAL(18,4) as BYTE_ARRAY, where parquet-rs writes INT32 and INT64 (values as unscaled bigints).
 */
export function legacyDecimalFile(unscaled: readonly (bigint | null)[]): Uint8Array {
  return write({
    columnData: [
      { name: 'id', data: Int32Array.from(unscaled, (_, i) => i) },
      { name: 'fixed', data: [...unscaled] },
      { name: 'binary', data: unscaled.map((v) => (v === null ? null : v * 100n)) },
    ],
    schema: [
      { name: 'spark_schema', num_children: 3 },
      { name: 'id', type: 'INT32', repetition_type: 'REQUIRED' },
      {
        name: 'fixed',
        type: 'FIXED_LEN_BYTE_ARRAY',
        type_length: 4,
        repetition_type: 'OPTIONAL',
        converted_type: 'DECIMAL',
        precision: 9,
        scale: 2,
      },
      {
        name: 'binary',
        type: 'BYTE_ARRAY',
        repetition_type: 'OPTIONAL',
        converted_type: 'DECIMAL',
        precision: 18,
        scale: 4,
      },
    ],
  } as never);
}

/**
 * A 2-level list as parquet-mr wrote before the LIST spec's 3 levels (and Hive, Impala still do):
 * `optional group tags (LIST) { repeated int32 array; }` — each row's list of ints, or null.
 */
export function twoLevelListFile(rows: readonly (readonly number[] | null)[]): Uint8Array {
  const file = write({
    columnData: [
      { name: 'id', data: Int32Array.from(rows, (_, i) => i) },
      { name: 'tags', data: rows.map((r) => (r === null ? null : [...r])) },
    ],
    schema: [
      { name: 'hive_schema', num_children: 2 },
      { name: 'id', type: 'INT32', repetition_type: 'REQUIRED' },
      { name: 'tags', repetition_type: 'OPTIONAL', converted_type: 'LIST', num_children: 1 },
      { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
      { name: 'array', type: 'INT32', repetition_type: 'REQUIRED' },
    ],
  } as never);
  // Optional tags + repeated list + required element has the same levels (max def 2, max rep 1) as
  // optional tags + repeated element: dropping the middle group leaves every page valid.
  return patchFooter(file, (meta) => {
    const schema = field(meta, FMD_SCHEMA)?.value as ThriftList;
    const elements = schema.items as ThriftStruct[];
    const at = elements.findIndex((e) => nameOf(e) === 'list');
    const leaf = elements[at + 1] as ThriftStruct;
    setField(leaf, SE_REPETITION, T.I32, REPEATED);
    schema.items = elements.filter((_, i) => i !== at);
    for (const m of columnMetas(meta)) {
      const path = field(m, CMD_PATH)?.value as ThriftList;
      path.items = path.items.filter((p) => text.decode(p as Uint8Array) !== 'list');
    }
  });
}

/**
 * A map as parquet-mr wrote it before the MAP spec: the repeated group annotated MAP_KEY_VALUE —
 * `optional group attrs (MAP) { repeated group map (MAP_KEY_VALUE) { required binary key (UTF8); optional int32 value; } }`.
 */
export function mapKeyValueFile(
  rows: readonly (Readonly<Record<string, number | null>> | null)[],
): Uint8Array {
  const file = write({
    columnData: [
      { name: 'id', data: Int32Array.from(rows, (_, i) => i) },
      { name: 'attrs', data: rows.map((r) => (r === null ? null : { ...r })) },
    ],
    schema: [
      { name: 'hive_schema', num_children: 2 },
      { name: 'id', type: 'INT32', repetition_type: 'REQUIRED' },
      { name: 'attrs', repetition_type: 'OPTIONAL', converted_type: 'MAP', num_children: 1 },
      { name: 'map', repetition_type: 'REPEATED', num_children: 2 },
      { name: 'key', type: 'BYTE_ARRAY', repetition_type: 'REQUIRED', converted_type: 'UTF8' },
      { name: 'value', type: 'INT32', repetition_type: 'OPTIONAL' },
    ],
  } as never);
  return patchFooter(file, (meta) => {
    const group = list(meta, FMD_SCHEMA).find((e) => nameOf(e) === 'map') as ThriftStruct;
    setField(group, SE_CONVERTED, T.I32, MAP_KEY_VALUE);
  });
}

/**
 * The same file with a key-value pair in every column chunk's metadata (ColumnMetaData field 8, which
 * parquet-mr and arrow-rs can write) and a field no version of parquet.thrift defines (id 99) in the
 * FileMetaData and in every ColumnChunk: a reader must skip what it does not know.
 */
export function withColumnMetadataAndUnknownFields(file: Uint8Array): Uint8Array {
  const kv = (key: string, value: string): ThriftStruct => ({
    fields: [
      { id: 1, type: T.BINARY, value: utf8.encode(key) },
      { id: 2, type: T.BINARY, value: utf8.encode(value) },
    ],
  });
  return patchFooter(file, (meta) => {
    for (const g of list(meta, FMD_ROW_GROUPS)) {
      for (const c of list(g, RG_COLUMNS)) {
        const m = field(c, CC_META)?.value as ThriftStruct;
        setField(m, 8, T.LIST, { elementType: T.STRUCT, items: [kv('origin', 'legacy-writer')] });
        setField(c, 99, T.BINARY, utf8.encode('a field from the future'));
      }
    }
    setField(meta, 99, T.STRUCT, { fields: [{ id: 1, type: T.I64, value: 42n }] });
  });
}
