// Decoded batches projected onto the schema a table format writes (core/projection.ts): the written batch's columns
// are the projection's — names, field ids, types — with values taken from the input's column the projection names
// (renamed, widened where it says), or null where it names none. The fingerprint does not look at these batches: it
// applies the description to the decoded input itself (core/fingerprint/projected-columns.ts), so a mistake here is
// a verification failure, never a published file.

import {
  Binary,
  Bool,
  type Data,
  DataType,
  DateDay,
  DateUnit,
  Decimal,
  Field,
  FixedSizeBinary,
  Float32,
  Float64,
  Int8,
  Int16,
  Int32,
  Int64,
  List,
  Map_,
  makeData,
  RecordBatch,
  Schema,
  Struct,
  Table,
  TimeMicrosecond,
  TimestampMicrosecond,
  TimestampNanosecond,
  TimeUnit,
  tableFromIPC,
  tableToIPC,
  Utf8,
  vectorFromArray,
} from 'apache-arrow';
import { UnsupportedInputError } from '../../core/errors.js';
import type {
  ColumnProjection,
  ProjectedDefault,
  ProjectedField,
  ProjectedNestedSource,
  ProjectedType,
} from '../../core/projection.js';
import { retyped } from './conform.js';
import { pw } from './wasm.js';

const FIELD_ID_KEY = 'PARQUET:field_id';

/** The Arrow type a projected type is written as. */
function arrowTypeOf(type: ProjectedType): DataType {
  if (typeof type === 'string') {
    switch (type) {
      case 'boolean':
        return new Bool();
      case 'int8':
        return new Int8();
      case 'int16':
        return new Int16();
      case 'int32':
        return new Int32();
      case 'int64':
        return new Int64();
      case 'float32':
        return new Float32();
      case 'float64':
        return new Float64();
      case 'date32':
        return new DateDay();
      case 'timestamp-us':
        return new TimestampMicrosecond();
      case 'timestamp-us-utc':
        return new TimestampMicrosecond('UTC');
      case 'timestamp-ns':
        return new TimestampNanosecond();
      case 'timestamp-ns-utc':
        return new TimestampNanosecond('UTC');
      case 'string':
        return new Utf8();
      case 'binary':
        return new Binary();
      case 'time-us':
        return new TimeMicrosecond();
      case 'uuid':
        return new FixedSizeBinary(16);
    }
  }
  if ('decimal' in type) return new Decimal(type.decimal.scale, type.decimal.precision, 128);
  if ('fixed' in type) return new FixedSizeBinary(type.fixed);
  if ('list' in type) return new List(arrowFieldOf(type.list));
  if ('map' in type) {
    const map = new Map_(
      new Field(
        MAP_ENTRIES,
        new Struct([arrowFieldOf(type.map.key), arrowFieldOf(type.map.value)] as never[]),
        false,
      ),
    );
    // arrow-js names a map's entries `entries` whatever it is given (ARROW-8716); the writer names the Parquet group
    // after it, and Parquet's standard name (the one other writers use) is `key_value`: named back, as arrow-js named it.
    (map.children[0] as { name: string }).name = MAP_ENTRIES;
    return map;
  }
  return new Struct(type.struct.map(arrowFieldOf));
}

/**
 * The name of a map's entries (the repeated group of key and value): the writer names the Parquet group after it,
 * and Parquet's standard name is `key_value`.
 */
const MAP_ENTRIES = 'key_value';

/**
 * The Arrow field of a projected field: its Parquet field id as field metadata, none when the schema has none. A
 * `uuid` is also marked as Arrow's canonical uuid extension, so the output's `ARROW:schema` entry tells Arrow readers
 * what the footer's UUID annotation (given after the write, see `uuidColumnsOf`) tells Parquet readers.
 */
function arrowFieldOf(f: ProjectedField): Field {
  const metadata =
    f.fieldId === undefined ? new Map<string, string>() : new Map([[FIELD_ID_KEY, String(f.fieldId)]]);
  if (f.type === 'uuid') {
    metadata.set('ARROW:extension:name', 'arrow.uuid');
    metadata.set('ARROW:extension:metadata', '');
  }
  return new Field(f.name, arrowTypeOf(f.type), f.nullable, metadata);
}

/**
 * The paths (top-level column, then struct fields) of every `uuid` column a projection writes: the writer stores
 * them as FIXED_LEN_BYTE_ARRAY(16) without the UUID annotation, which the output's footer is given after the write
 * (core/parquet/decimal-form.ts, `withUuidAnnotations`) — the stored bytes are a UUID's either way.
 */
export function uuidColumnsOf(projection: ColumnProjection): string[][] {
  const out: string[][] = [];
  const visit = (path: readonly string[], type: ProjectedType): void => {
    if (type === 'uuid') out.push([...path]);
    else if (typeof type === 'object' && 'struct' in type)
      for (const f of type.struct) visit([...path, f.name], f.type);
    // The writer's three-level list (`list` the repeated group) and map (`key_value`) as the footer names them.
    else if (typeof type === 'object' && 'list' in type)
      visit([...path, 'list', type.list.name], type.list.type);
    else if (typeof type === 'object' && 'map' in type) {
      visit([...path, MAP_ENTRIES, type.map.key.name], type.map.key.type);
      visit([...path, MAP_ENTRIES, type.map.value.name], type.map.value.type);
    }
  };
  for (const c of projection.columns) visit([c.field.name], c.field.type);
  return out;
}

/** The Arrow schema of every batch a projection writes (field ids as Parquet field metadata). */
export function projectedSchema(projection: ColumnProjection): Schema {
  return new Schema(projection.columns.map((c) => arrowFieldOf(c.field)));
}

/** The projected schema as Arrow IPC, for pre-flight's trial write. */
export function projectedSchemaIpc(projection: ColumnProjection): Uint8Array {
  return tableToIPC(new Table(projectedSchema(projection)), 'stream');
}

/** Fixed-width types whose values are stored alike whatever their parameters (a time zone, a decimal precision). */
function sameStorage(from: DataType, to: DataType): boolean {
  if (from.typeId !== to.typeId) return false;
  if (DataType.isTimestamp(from) && DataType.isTimestamp(to)) return from.unit === to.unit;
  if (DataType.isDecimal(from) && DataType.isDecimal(to))
    return from.scale === to.scale && from.bitWidth === to.bitWidth && from.precision <= to.precision;
  return String(from) === String(to);
}

/** A column of `n` nulls of `type`. */
function nullData(type: DataType, n: number): Data {
  return vectorFromArray(new Array(n).fill(null), type).data[0] as Data;
}

/**
 * A column of `n` copies of `value` (a default value, see ProjectedDefault) as the written `type`, none null: what a
 * reader gives for a column or struct field a file was written without, when the table declares its default.
 */
function constantData(key: string, column: string, type: DataType, value: ProjectedDefault, n: number): Data {
  if (typeof value === 'object') {
    if (!DataType.isStruct(type))
      throw new UnsupportedInputError(key, `its column ${column} is not a struct, but its default is one`);
    const children = type.children.map((f, i) => {
      const v = value.struct[i];
      return v === null || v === undefined
        ? nullData(f.type, n)
        : constantData(key, `${column}.${f.name}`, f.type, v, n);
    });
    return makeData({ type, length: n, nullCount: 0, children });
  }
  if (DataType.isBool(type) || (DataType.isInt(type) && type.bitWidth <= 32) || DataType.isFloat(type)) {
    const v = vectorFromArray(new Array(n).fill(value), type);
    if (v.data.length === 1) return v.data[0] as Data;
  } else if (DataType.isUtf8(type)) {
    const v = vectorFromArray(new Array<string>(n).fill(String(value)), type);
    if (v.data.length === 1) return v.data[0] as Data;
  } else if (DataType.isBinary(type)) {
    const one = Buffer.from(String(value), 'hex');
    const data = new Uint8Array(one.length * n);
    const valueOffsets = new Int32Array(n + 1);
    for (let i = 0; i < n; i++) {
      data.set(one, i * one.length);
      valueOffsets[i + 1] = (i + 1) * one.length;
    }
    return makeData({ type, length: n, nullCount: 0, valueOffsets, data });
  } else if (DataType.isDate(type)) {
    return makeData({ type, length: n, nullCount: 0, data: new Int32Array(n).fill(Number(value)) } as never);
  } else if (DataType.isFixedSizeBinary(type)) {
    // A uuid or fixed-length binary: its bytes (hex in the plan), repeated.
    const one = Buffer.from(String(value), 'hex');
    if (one.length !== type.byteWidth)
      throw new UnsupportedInputError(
        key,
        `its column ${column}'s default has ${one.length} bytes, not the ${type.byteWidth} of its type`,
      );
    const data = new Uint8Array(one.length * n);
    for (let i = 0; i < n; i++) data.set(one, i * one.length);
    return makeData({ type, length: n, nullCount: 0, data });
  } else if (
    (DataType.isInt(type) && type.bitWidth === 64) ||
    DataType.isTimestamp(type) ||
    (DataType.isTime(type) && type.bitWidth === 64)
  ) {
    return makeData({
      type,
      length: n,
      nullCount: 0,
      data: new BigInt64Array(n).fill(BigInt(value)),
    } as never);
  } else if (DataType.isDecimal(type) && type.bitWidth === 128) {
    const data = new Uint32Array(n * 4);
    for (let i = 0; i < n; i++) setDecimal128(data, i, BigInt(value));
    return makeData({ type, length: n, nullCount: 0, data } as never);
  }
  throw new UnsupportedInputError(
    key,
    `its column ${column} cannot be written as ${type} of the default ${value}`,
  );
}

/** Whether `type` is a list with 32- or 64-bit offsets. */
function isList(type: DataType): boolean {
  return DataType.isList(type) || DataType.isLargeList(type);
}

/**
 * A list's offsets (one more than its length) as the 32-bit offsets a projected list is written with; a batch whose
 * items 32-bit offsets cannot address is refused by name (a batch is far smaller than that in practice).
 */
function int32Offsets(key: string, column: string, offsets: ArrayLike<number | bigint>): Int32Array {
  if (offsets instanceof Int32Array) return offsets;
  const out = new Int32Array(offsets.length);
  for (let i = 0; i < offsets.length; i++) {
    const v = Number(offsets[i]);
    if (v > 2_147_483_647)
      throw new UnsupportedInputError(
        key,
        `its list column ${column} holds more items than a batch addresses`,
      );
    out[i] = v;
  }
  return out;
}

/**
 * The list `data` as the written list `type`: the same offsets and validity, each element converted as `source`
 * says (copied, widened, or a struct element rebuilt field by field) — the element at every position of the child,
 * so the offsets stay valid whatever range of it the list's slots address.
 */
function listOf(
  key: string,
  column: string,
  data: Data,
  type: DataType,
  source: ProjectedNestedSource,
): Data {
  const element = type.children[0] as Field;
  const child = data.children[0];
  if (child === undefined)
    throw new UnsupportedInputError(key, `its list column ${column} has no element values`);
  return withChild(
    key,
    column,
    data,
    type,
    fromSource(key, `${column}.${element.name}`, child, element.type, source),
  );
}

/** The list or map `data` as `type` with its items (entries) `child`: its slots, validity and offsets kept. */
function withChild(key: string, column: string, data: Data, type: DataType, child: Data): Data {
  return makeData({
    type,
    offset: data.offset,
    length: data.length,
    nullCount: data.nullCount,
    nullBitmap: data.nullBitmap,
    valueOffsets: int32Offsets(key, column, data.valueOffsets),
    child,
  } as never);
}

/**
 * The map `data` as the written map `type`: the same offsets and validity, its keys and values converted as
 * `source.key` and `source.value` say (the entries are a struct of key and value, by position).
 */
function mapOf(key: string, column: string, data: Data, type: DataType, source: ProjectedNestedSource): Data {
  const entriesType = (type.children[0] as Field).type as Struct;
  const entries = data.children[0];
  if (entries === undefined || entries.children.length !== 2)
    throw new UnsupportedInputError(key, `its map column ${column} has not a key and a value per entry`);
  const [keyField, valueField] = entriesType.children as [Field, Field];
  const converted = makeData({
    type: entriesType,
    offset: entries.offset,
    length: entries.length,
    nullCount: entries.nullCount,
    nullBitmap: entries.nullBitmap,
    children: [
      fromSource(
        key,
        `${column}.${keyField.name}`,
        entries.children[0] as Data,
        keyField.type,
        source.key ?? {},
      ),
      fromSource(
        key,
        `${column}.${valueField.name}`,
        entries.children[1] as Data,
        valueField.type,
        source.value ?? {},
      ),
    ],
  });
  return withChild(key, column, data, type, converted);
}

/** `data` (one input column as decoded) as the written `field`'s type. */
function convert(key: string, column: string, data: Data, type: DataType): Data {
  if (String(data.type) === String(type) && !isList(type) && !DataType.isMap(type)) return data;
  if (DataType.isStruct(type) && DataType.isStruct(data.type)) {
    const fields = type.children;
    if (data.children.length !== fields.length)
      throw new UnsupportedInputError(key, `its struct column ${column} has not the projected fields`);
    return makeData({
      type,
      offset: data.offset,
      length: data.length,
      nullCount: data.nullCount,
      nullBitmap: data.nullBitmap,
      children: fields.map((f, i) => convert(key, `${column}.${f.name}`, data.children[i] as Data, f.type)),
    });
  }
  if (isList(type) && isList(data.type)) return listOf(key, column, data, type, {});
  if (DataType.isMap(type) && DataType.isMap(data.type)) return mapOf(key, column, data, type, {});
  if (sameStorage(data.type, type)) return retyped(data, type);
  const exact = widenedExactly(key, column, data, type);
  if (exact !== undefined) return exact;
  // Widenings (int → long, float or int → double, date → timestamp: arrow-js reads a day as its midnight's epoch
  // milliseconds and writes a timestamp from them) and other encodings of the same values (large strings): value by
  // value.
  const widenInt = DataType.isInt(data.type) && DataType.isInt(type) && type.bitWidth === 64;
  const values: unknown[] = [];
  const vector = new RecordBatch({ v: data }).getChild('v');
  if (vector === null) throw new UnsupportedInputError(key, `its column ${column} could not be read back`);
  for (const v of vector)
    values.push(v === null || v === undefined ? null : widenInt ? BigInt(v as number) : v);
  const converted = vectorFromArray(values, type);
  if (String(converted.type) !== String(type) || converted.data.length !== 1)
    throw new UnsupportedInputError(key, `its column ${column} (${data.type}) cannot be written as ${type}`);
  return converted.data[0] as Data;
}

const TWO_128 = 1n << 128n;
const MICROS_PER_DAY = 86_400_000_000n;
const NANOS_PER_DAY = 86_400_000_000_000n;
const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;

/** The signed integer `v` as the four little-endian 32-bit words of a Decimal128 value, at `at` of `out`. */
function setDecimal128(out: Uint32Array, at: number, v: bigint): void {
  const u = v < 0n ? v + TWO_128 : v;
  for (let w = 0; w < 4; w++) out[at * 4 + w] = Number((u >> BigInt(32 * w)) & 0xffff_ffffn);
}

/** The Decimal128 value (four little-endian 32-bit words) at `at` of `words`, as a signed integer. */
function getDecimal128(words: Uint32Array, at: number): bigint {
  let u = 0n;
  for (let w = 3; w >= 0; w--) u = (u << 32n) | BigInt(words[at * 4 + w] as number);
  return u >= TWO_128 / 2n ? u - TWO_128 : u;
}

/**
 * `data` widened to `type` slot by slot, where the conversion is one of integers or decimals that arrow-js would not
 * make exactly value by value (a narrower signed integer as a wider one, an integer as a decimal's unscaled value
 * times 10^scale, a decimal at a larger scale: its unscaled value times 10^(scale difference), a day as its
 * midnight's timestamp, a timestamp or time of day in milliseconds as microseconds); undefined for any other pair. The validity bitmap is kept as it is; null slots are converted too, and stay null.
 */
function widenedExactly(key: string, column: string, data: Data, type: DataType): Data | undefined {
  const from = data.type;
  const n = data.length;
  const values = data.values as ArrayLike<number | bigint>;
  let out: Int16Array | Int32Array | BigInt64Array | Uint32Array;
  if (DataType.isInt(from) && from.isSigned && DataType.isInt(type) && type.isSigned) {
    if (type.bitWidth <= from.bitWidth) return undefined;
    out =
      type.bitWidth === 16
        ? new Int16Array(n)
        : type.bitWidth === 32
          ? new Int32Array(n)
          : new BigInt64Array(n);
    for (let i = 0; i < n; i++)
      out[i] = (type.bitWidth === 64 ? BigInt(values[i] as number | bigint) : Number(values[i])) as never;
  } else if (DataType.isInt(from) && from.isSigned && DataType.isDecimal(type) && type.bitWidth === 128) {
    out = new Uint32Array(n * 4);
    const factor = 10n ** BigInt(type.scale);
    for (let i = 0; i < n; i++) setDecimal128(out, i, BigInt(values[i] as number | bigint) * factor);
  } else if (
    DataType.isDate(from) &&
    from.unit === DateUnit.DAY &&
    DataType.isTimestamp(type) &&
    (type.unit === TimeUnit.MICROSECOND || type.unit === TimeUnit.NANOSECOND)
  ) {
    // Days → the microseconds (nanoseconds) of their midnight, in 64-bit integers (arrow-js would go through a double
    // of milliseconds, inexact past 2^53 µs); a day whose midnight the timestamp cannot hold fails, as the spec demands.
    const nanos = type.unit === TimeUnit.NANOSECOND;
    const perDay = nanos ? NANOS_PER_DAY : MICROS_PER_DAY;
    out = new BigInt64Array(n);
    const valid = data.nullBitmap;
    for (let i = 0; i < n; i++) {
      const stamp = BigInt(values[i] as number) * perDay;
      const isValid =
        valid === undefined ||
        valid.length === 0 ||
        ((valid[(data.offset + i) >> 3] as number) >> ((data.offset + i) & 7)) & 1;
      if (isValid && (stamp < INT64_MIN || stamp > INT64_MAX))
        throw new UnsupportedInputError(
          key,
          `its date column ${column} holds day ${values[i]} (since 1970-01-01), whose midnight a timestamp in ${nanos ? 'nanoseconds (1677-09-21 … 2262-04-11)' : 'microseconds'} cannot hold: it cannot be read as the timestamp the table's schema now has; rewrite the row's value or leave the file as it is`,
        );
      out[i] = BigInt.asIntN(64, stamp);
    }
  } else if (
    ((DataType.isTimestamp(from) && DataType.isTimestamp(type)) ||
      (DataType.isTime(from) && DataType.isTime(type) && type.bitWidth === 64)) &&
    from.unit === TimeUnit.MILLISECOND &&
    type.unit === TimeUnit.MICROSECOND
  ) {
    // Milliseconds → microseconds of the same instant (time of day), exactly; a timestamp whose microseconds 64 bits
    // cannot hold (past ±292,000 years) fails, naming it, as a day too far for a timestamp does.
    out = new BigInt64Array(n);
    const valid = data.nullBitmap;
    for (let i = 0; i < n; i++) {
      const millis = BigInt(values[i] as number | bigint);
      const micros = millis * 1000n;
      const isValid =
        valid === undefined ||
        valid.length === 0 ||
        ((valid[(data.offset + i) >> 3] as number) >> ((data.offset + i) & 7)) & 1;
      if (isValid && (micros < INT64_MIN || micros > INT64_MAX))
        throw new UnsupportedInputError(
          key,
          `its column ${column} holds ${millis} ms since 1970-01-01, whose microseconds a 64-bit timestamp cannot hold: it cannot be read as the timestamp in microseconds the table's schema has; rewrite the row's value or leave the file as it is`,
        );
      out[i] = BigInt.asIntN(64, micros);
    }
  } else if (
    DataType.isDecimal(from) &&
    DataType.isDecimal(type) &&
    from.bitWidth === 128 &&
    type.bitWidth === 128 &&
    type.scale > from.scale &&
    type.precision - from.precision >= type.scale - from.scale
  ) {
    out = new Uint32Array(n * 4);
    const factor = 10n ** BigInt(type.scale - from.scale);
    const words = data.values as Uint32Array;
    for (let i = 0; i < n; i++) setDecimal128(out, i, getDecimal128(words, i) * factor);
  } else return undefined;
  return makeData({
    type,
    offset: data.offset,
    length: n,
    nullCount: data.nullCount,
    nullBitmap: data.nullBitmap,
    data: out,
  } as never);
}

/**
 * `data` (one input column as decoded) as the written `type`, its values from where `source` says: a struct whose
 * fields changed is rebuilt field by field — each written field from the input's struct field of the name its source
 * gives (converted likewise), or null where it gives none —; anything else is converted as a whole.
 */
function fromSource(
  key: string,
  column: string,
  data: Data,
  type: DataType,
  source: ProjectedNestedSource,
): Data {
  if (source.element !== undefined) {
    if (!isList(type) || !isList(data.type))
      throw new UnsupportedInputError(key, `its column ${column} is not the list its projection describes`);
    return listOf(key, column, data, type, source.element);
  }
  if (source.key !== undefined || source.value !== undefined) {
    if (!DataType.isMap(type) || !DataType.isMap(data.type))
      throw new UnsupportedInputError(key, `its column ${column} is not the map its projection describes`);
    return mapOf(key, column, data, type, source);
  }
  if (source.fields === undefined) return convert(key, column, data, type);
  if (!DataType.isStruct(type) || !DataType.isStruct(data.type))
    throw new UnsupportedInputError(key, `its column ${column} is not the struct its projection describes`);
  if (data.offset !== 0)
    throw new UnsupportedInputError(
      key,
      `its struct column ${column} arrived as a slice, which is not projected`,
    );
  const names = data.type.children.map((f) => f.name);
  const fields = type.children;
  if (source.fields.length !== fields.length)
    throw new Error(
      `projection: struct ${column} of ${key} has ${source.fields.length} sources for ${fields.length} fields`,
    );
  const children = fields.map((f, i) => {
    const from = source.fields?.[i]?.source;
    const value = source.fields?.[i]?.default;
    if (from === undefined)
      return value === undefined
        ? nullData(f.type, data.length)
        : constantData(key, `${column}.${f.name}`, f.type, value, data.length);
    const at = names.indexOf(from.column);
    const child = data.children[at];
    if (at < 0 || child === undefined)
      throw new UnsupportedInputError(
        key,
        `its struct column ${column} has no field ${from.column} (projected as ${f.name})`,
      );
    return fromSource(key, `${column}.${from.column}`, child, f.type, from);
  });
  return makeData({
    type,
    offset: 0,
    length: data.length,
    nullCount: data.nullCount,
    nullBitmap: data.nullBitmap,
    children,
  });
}

/**
 * `batch` (rows of input `key`, as decoded) projected onto `projection`'s schema; consumes `batch`, returns a new
 * wasm batch.
 * @throws UnsupportedInputError when a source column is missing or cannot be written as its projected type.
 */
export function projectBatch(
  key: string,
  batch: pw.RecordBatch,
  projection: ColumnProjection,
): pw.RecordBatch {
  const n = batch.numRows;
  const js = tableFromIPC(batch.intoIPCStream());
  const schema = projectedSchema(projection);
  const names = js.schema.fields.map((f) => f.name);
  const children = projection.columns.map((c, i) => {
    const type = (schema.fields[i] as Field).type;
    if (c.source === undefined)
      return c.default === undefined
        ? nullData(type, n)
        : constantData(key, c.field.name, type, c.default, n);
    const at = names.indexOf(c.source.column);
    const vector = at < 0 ? null : js.getChildAt(at);
    if (vector === null)
      throw new UnsupportedInputError(
        key,
        `it has no column ${c.source.column} (projected as ${c.field.name})`,
      );
    if (vector.data.length !== 1)
      throw new Error(
        `projection: column ${c.source.column} of ${key} arrived in ${vector.data.length} chunks`,
      );
    return fromSource(key, c.source.column, vector.data[0] as Data, type, c.source);
  });
  const struct = makeData({ type: new Struct(schema.fields), length: n, nullCount: 0, children });
  const table = pw.Table.fromIPCStream(tableToIPC(new Table([new RecordBatch(schema, struct)]), 'stream'));
  const batches = table.recordBatches();
  table.free();
  if (batches.length !== 1) throw new Error(`projection of ${key} produced ${batches.length} batches`);
  return batches[0] as pw.RecordBatch;
}
