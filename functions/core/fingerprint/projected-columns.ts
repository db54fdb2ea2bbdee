// The columns an input's decoded rows have once projected (core/projection.ts), as the ordered digest reads them:
// computed from the decoded input's own slots, not from the batch the rewrite writes. This is the fingerprint's
// projection, kept apart from the engine's on purpose: the rewrite builds the written batches one way (arrow-js
// conversions), the fingerprint derives what their digest must be another way (slot views: renamed, widened byte by
// byte, nulls synthesised), and verify re-reads the stored outputs — so a projection that lost, moved or mangled
// a value, or typed a column otherwise than described, fails verification instead of being published.
import { UnsupportedInputError } from '../errors.js';
import type {
  ColumnProjection,
  ProjectedDefault,
  ProjectedNestedSource,
  ProjectedType,
  ProjectedWidening,
} from '../projection.js';
import type { ArrowColumn, ArrowSlots } from './ordered-digest.js';

const MICROS_PER_DAY = 86_400_000_000n;
const NANOS_PER_DAY = 86_400_000_000_000n;

/** Slots of `length` nulls of a projected type, shaped as a decoded column of that type is (kind and width). */
function nullSlots(type: ProjectedType, length: number): ArrowSlots {
  const validity = { bits: new Uint8Array(Math.ceil(length / 8)), offset: 0 };
  if (typeof type === 'string') {
    switch (type) {
      case 'boolean':
        return {
          kind: 'bool',
          length,
          validity,
          values: new Uint8Array(Math.ceil(length / 8)),
          valueOffset: 0,
        };
      case 'int8':
        return { kind: 'fixed', length, validity, width: 1, bytes: new Uint8Array(length) };
      case 'int16':
        return { kind: 'fixed', length, validity, width: 2, bytes: new Uint8Array(length * 2) };
      case 'int32':
      case 'float32':
      case 'date32':
        return { kind: 'fixed', length, validity, width: 4, bytes: new Uint8Array(length * 4) };
      case 'int64':
      case 'float64':
      case 'timestamp-us':
      case 'timestamp-us-utc':
      case 'timestamp-ns':
      case 'timestamp-ns-utc':
      case 'time-us':
        return { kind: 'fixed', length, validity, width: 8, bytes: new Uint8Array(length * 8) };
      case 'uuid':
        return { kind: 'fixed', length, validity, width: 16, bytes: new Uint8Array(length * 16) };
      case 'string':
      case 'binary':
        return {
          kind: 'binary',
          length,
          validity,
          offsets: new Int32Array(length + 1),
          values: new Uint8Array(0),
        };
    }
  }
  if ('decimal' in type)
    return { kind: 'fixed', length, validity, width: 16, bytes: new Uint8Array(length * 16) };
  if ('fixed' in type)
    return { kind: 'fixed', length, validity, width: type.fixed, bytes: new Uint8Array(length * type.fixed) };
  // A null list or map: every slot empty, no items.
  if ('list' in type)
    return {
      kind: 'list',
      length,
      validity,
      offsets: new Int32Array(length + 1),
      child: nullSlots(type.list.type, 0),
    };
  if ('map' in type)
    return {
      kind: 'list',
      length,
      validity,
      offsets: new Int32Array(length + 1),
      child: {
        kind: 'struct',
        length: 0,
        validity: undefined,
        base: 0,
        children: [nullSlots(type.map.key.type, 0), nullSlots(type.map.value.type, 0)],
      },
    };
  return {
    kind: 'struct',
    length,
    validity,
    base: 0,
    children: type.struct.map((f) => nullSlots(f.type, length)),
  };
}

/** Byte width of each fixed-width primitive's slot (a decimal's is 16: Decimal128). */
const FIXED_WIDTH: Readonly<Record<string, number>> = {
  int8: 1,
  int16: 2,
  int32: 4,
  date32: 4,
  float32: 4,
  int64: 8,
  float64: 8,
  'timestamp-us': 8,
  'timestamp-us-utc': 8,
  'timestamp-ns': 8,
  'timestamp-ns-utc': 8,
  'time-us': 8,
};

/**
 * Slots of `length` copies of `value` (a default value, see ProjectedDefault) of a projected type, none null:
 * the value's bytes written once from its plan spelling (little-endian, as a decoded column holds them) and
 * repeated. Independent of the engine, which builds its constant columns through arrow-js.
 */
function constantSlots(
  column: string,
  type: ProjectedType,
  value: ProjectedDefault,
  length: number,
): ArrowSlots {
  if (typeof type === 'object' && ('list' in type || 'map' in type))
    throw new UnsupportedInputError(
      '(batch)',
      `column ${column} is a list or map, which has no default here`,
    );
  if (typeof type === 'object' && 'struct' in type) {
    if (typeof value !== 'object')
      throw new UnsupportedInputError('(batch)', `column ${column} is a struct, its default is not`);
    // A struct valid in every row, each field its own default or null.
    return {
      kind: 'struct',
      length,
      validity: undefined,
      base: 0,
      children: type.struct.map((f, i) => {
        const v = value.struct[i];
        return v === null || v === undefined
          ? nullSlots(f.type, length)
          : constantSlots(`${column}.${f.name}`, f.type, v, length);
      }),
    };
  }
  if (typeof value === 'object')
    throw new UnsupportedInputError('(batch)', `column ${column} is not a struct, its default is`);
  if (type === 'boolean')
    return {
      kind: 'bool',
      length,
      validity: undefined,
      values: new Uint8Array(Math.ceil(length / 8)).fill(value === true ? 0xff : 0),
      valueOffset: 0,
    };
  if (type === 'string' || type === 'binary') {
    const one =
      type === 'string'
        ? new TextEncoder().encode(String(value))
        : Uint8Array.from((String(value).match(/../g) ?? []).map((h) => Number.parseInt(h, 16)));
    const values = new Uint8Array(one.length * length);
    const offsets = new Int32Array(length + 1);
    for (let i = 0; i < length; i++) {
      values.set(one, i * one.length);
      offsets[i + 1] = (i + 1) * one.length;
    }
    return { kind: 'binary', length, validity: undefined, offsets, values };
  }
  if (type === 'uuid' || (typeof type === 'object' && 'fixed' in type)) {
    // Fixed-length bytes, as a decoded FixedSizeBinary holds them: the value's bytes (hex in the plan), repeated.
    const one = Uint8Array.from((String(value).match(/../g) ?? []).map((h) => Number.parseInt(h, 16)));
    const width = type === 'uuid' ? 16 : type.fixed;
    if (one.length !== width)
      throw new UnsupportedInputError('(batch)', `column ${column}'s default is not ${width} bytes`);
    const bytes = new Uint8Array(width * length);
    for (let i = 0; i < length; i++) bytes.set(one, i * width);
    return { kind: 'fixed', length, validity: undefined, width, bytes };
  }
  const width = typeof type === 'object' ? 16 : (FIXED_WIDTH[type] as number);
  const one = new DataView(new ArrayBuffer(width));
  if (typeof type === 'object') writeInt128(one, 0, BigInt(value as string));
  else if (type === 'float32') one.setFloat32(0, value as number, true);
  else if (type === 'float64') one.setFloat64(0, value as number, true);
  else if (width === 8) one.setBigInt64(0, BigInt(value as string), true);
  else if (width === 4) one.setInt32(0, value as number, true);
  else if (width === 2) one.setInt16(0, value as number, true);
  else one.setInt8(0, value as number);
  const bytes = new Uint8Array(width * length);
  const pattern = new Uint8Array(one.buffer);
  for (let i = 0; i < length; i++) bytes.set(pattern, i * width);
  return { kind: 'fixed', length, validity: undefined, width, bytes };
}

/** Byte width of a signed integer type a widening reads or writes. */
const INT_WIDTH = { int8: 1, int16: 2, int32: 4, int64: 8 } as const;
type IntName = keyof typeof INT_WIDTH;

/** What a widening reads (slot width and kind) and writes (slot width), from its name. */
function wideningShape(widen: Exclude<ProjectedWidening, 'decimal' | 'timestamp-ms-us' | 'time-ms-us'>): {
  readonly from: IntName | 'float32' | 'date32';
  readonly to: IntName | 'float64' | 'timestamp' | 'decimal';
} {
  const [from, to] = widen.split('-') as [string, string];
  return {
    from: from as IntName | 'float32' | 'date32',
    to: (to === 'timestamp' ? 'timestamp' : to) as IntName | 'float64' | 'timestamp' | 'decimal',
  };
}

/** The signed integer of `width` bytes at slot `i`. */
function readInt(view: DataView, i: number, width: number): bigint {
  switch (width) {
    case 1:
      return BigInt(view.getInt8(i));
    case 2:
      return BigInt(view.getInt16(i * 2, true));
    case 4:
      return BigInt(view.getInt32(i * 4, true));
    default:
      return view.getBigInt64(i * 8, true);
  }
}

const TWO_128 = 1n << 128n;

/** Writes `v` as a 128-bit two's complement little-endian integer (a Decimal128 slot) at slot `i`. */
function writeInt128(view: DataView, i: number, v: bigint): void {
  const u = v < 0n ? v + TWO_128 : v;
  view.setBigUint64(i * 16, u & 0xffff_ffff_ffff_ffffn, true);
  view.setBigUint64(i * 16 + 8, u >> 64n, true);
}

/** The 128-bit two's complement little-endian integer (a Decimal128 slot) at slot `i`. */
function readInt128(view: DataView, i: number): bigint {
  const u = view.getBigUint64(i * 16, true) | (view.getBigUint64(i * 16 + 8, true) << 64n);
  return u >= TWO_128 / 2n ? u - TWO_128 : u;
}

/**
 * `slots` of milliseconds (a 64-bit timestamp, or a 32-bit time of day) as the 64-bit microseconds of the same
 * instant (time of day), times 1,000, computed apart from the engine (which refuses a timestamp whose microseconds
 * overflow before anything is written; here such a slot would only wrap, and so fail verification).
 */
function millisToMicros(
  column: string,
  slots: ArrowSlots,
  widen: 'timestamp-ms-us' | 'time-ms-us',
): ArrowSlots {
  const fromWidth = widen === 'timestamp-ms-us' ? 8 : 4;
  if (slots.kind !== 'fixed' || slots.width !== fromWidth)
    throw new UnsupportedInputError(
      '(batch)',
      `column ${column} is not ${fromWidth * 8}-bit wide as the projection's ${widen} needs`,
    );
  const from = new DataView(slots.bytes.buffer, slots.bytes.byteOffset, slots.bytes.byteLength);
  const bytes = new Uint8Array(slots.length * 8);
  const to = new DataView(bytes.buffer);
  for (let i = 0; i < slots.length; i++) {
    const millis = fromWidth === 8 ? from.getBigInt64(i * 8, true) : BigInt(from.getInt32(i * 4, true));
    to.setBigInt64(i * 8, BigInt.asIntN(64, millis * 1000n), true);
  }
  return { kind: 'fixed', length: slots.length, validity: slots.validity, width: 8, bytes };
}

/**
 * `slots` with each value widened as `widen` says: a signed integer sign-extended, an integer or float32 as the
 * float64 of the same value, a date32's days → the microseconds (or nanoseconds) of that day's midnight, an integer as a decimal's
 * unscaled value times 10^scale, a decimal's unscaled value times 10^(scale − `fromScale`). Null slots are
 * converted too (whatever bytes they hold): the digest reads only valid slots.
 */
function widened(
  column: string,
  slots: ArrowSlots,
  widen: ProjectedWidening,
  type: ProjectedType,
  fromScale: number | undefined,
): ArrowSlots {
  if (slots.kind === 'dictionary')
    return { ...slots, values: widened(column, slots.values, widen, type, fromScale) };
  const scale = typeof type === 'object' && 'decimal' in type ? type.decimal.scale : undefined;
  if (widen === 'decimal') {
    // The unscaled value is stored alike at any precision (Decimal128); a larger scale multiplies it.
    const by = scale === undefined || fromScale === undefined ? 0 : scale - fromScale;
    if (by < 0 || (by > 0 && scale === undefined))
      throw new UnsupportedInputError('(batch)', `column ${column} cannot be rescaled by 10^${by}`);
    if (by === 0) return slots;
    if (slots.kind !== 'fixed' || slots.width !== 16)
      throw new UnsupportedInputError(
        '(batch)',
        `column ${column} is not a 128-bit decimal as a rescale needs`,
      );
    const from = new DataView(slots.bytes.buffer, slots.bytes.byteOffset, slots.bytes.byteLength);
    const bytes = new Uint8Array(slots.length * 16);
    const to = new DataView(bytes.buffer);
    const factor = 10n ** BigInt(by);
    for (let i = 0; i < slots.length; i++) writeInt128(to, i, readInt128(from, i) * factor);
    return { kind: 'fixed', length: slots.length, validity: slots.validity, width: 16, bytes };
  }
  if (widen === 'timestamp-ms-us' || widen === 'time-ms-us') return millisToMicros(column, slots, widen);
  const shape = wideningShape(widen);
  const fromWidth = shape.from === 'float32' || shape.from === 'date32' ? 4 : INT_WIDTH[shape.from];
  if (slots.kind !== 'fixed' || slots.width !== fromWidth)
    throw new UnsupportedInputError(
      '(batch)',
      `column ${column} is not ${fromWidth * 8}-bit wide as the projection's ${widen} needs`,
    );
  const toWidth =
    shape.to === 'decimal'
      ? 16
      : shape.to === 'float64' || shape.to === 'timestamp'
        ? 8
        : INT_WIDTH[shape.to];
  if (shape.to === 'decimal' && scale === undefined)
    throw new UnsupportedInputError(
      '(batch)',
      `column ${column} is widened to a decimal but not written as one`,
    );
  const from = new DataView(slots.bytes.buffer, slots.bytes.byteOffset, slots.bytes.byteLength);
  const bytes = new Uint8Array(slots.length * toWidth);
  const to = new DataView(bytes.buffer);
  const factor = 10n ** BigInt(scale ?? 0);
  const perDay = widen === 'date32-timestamp-ns' ? NANOS_PER_DAY : MICROS_PER_DAY;
  for (let i = 0; i < slots.length; i++) {
    if (shape.from === 'float32') to.setFloat64(i * 8, from.getFloat32(i * 4, true), true);
    else if (shape.from === 'date32')
      to.setBigInt64(i * 8, BigInt.asIntN(64, BigInt(from.getInt32(i * 4, true)) * perDay), true);
    else {
      const v = readInt(from, i, fromWidth);
      if (shape.to === 'float64') to.setFloat64(i * 8, Number(v), true);
      else if (shape.to === 'decimal') writeInt128(to, i, v * factor);
      else if (toWidth === 2) to.setInt16(i * 2, Number(v), true);
      else if (toWidth === 4) to.setInt32(i * 4, Number(v), true);
      else to.setBigInt64(i * 8, v, true);
    }
  }
  return { kind: 'fixed', length: slots.length, validity: slots.validity, width: toWidth, bytes };
}

/**
 * The slots of a column as `source` says, from the input's `slots`: widened where it says, a struct whose fields
 * changed rebuilt from the input struct's fields by position (a field added since: null slots), and a list's
 * element or a map's key and value (its entries' first and second field) converted alike, offsets kept.
 */
function fromSource(
  column: string,
  slots: ArrowSlots,
  type: ProjectedType,
  source: ProjectedNestedSource,
): ArrowSlots {
  if (typeof type === 'object' && 'list' in type && source.element !== undefined) {
    if (slots.kind !== 'list')
      throw new UnsupportedInputError('(batch)', `column ${column} is not the list the projection describes`);
    return {
      ...slots,
      child: fromSource(`${column}.${type.list.name}`, slots.child, type.list.type, source.element),
    };
  }
  if (typeof type === 'object' && 'map' in type && (source.key !== undefined || source.value !== undefined)) {
    const entries = slots.kind === 'list' ? slots.child : undefined;
    if (slots.kind !== 'list' || entries?.kind !== 'struct' || entries.children.length !== 2)
      throw new UnsupportedInputError('(batch)', `column ${column} is not the map the projection describes`);
    const [keys, values] = entries.children as [ArrowSlots, ArrowSlots];
    const { key, value } = type.map;
    return {
      ...slots,
      child: {
        ...entries,
        children: [
          source.key === undefined ? keys : fromSource(`${column}.${key.name}`, keys, key.type, source.key),
          source.value === undefined
            ? values
            : fromSource(`${column}.${value.name}`, values, value.type, source.value),
        ],
      },
    };
  }
  if (source.fields === undefined)
    return source.widen === undefined ? slots : widened(column, slots, source.widen, type, source.fromScale);
  if (slots.kind !== 'struct' || typeof type !== 'object' || !('struct' in type))
    throw new UnsupportedInputError('(batch)', `column ${column} is not the struct the projection describes`);
  const written = type.struct;
  const children = source.fields.map((f, i) => {
    const field = written[i];
    if (field === undefined)
      throw new UnsupportedInputError('(batch)', `column ${column} has more field sources than fields`);
    const from = f.source;
    if (from === undefined)
      return f.default === undefined
        ? nullSlots(field.type, slots.base + slots.length)
        : constantSlots(`${column}.${field.name}`, field.type, f.default, slots.base + slots.length);
    const child = slots.children[from.position];
    if (child === undefined)
      throw new UnsupportedInputError(
        '(batch)',
        `column ${column} has no field at position ${from.position}`,
      );
    return fromSource(`${column}.${from.column}`, child, field.type, from);
  });
  return { ...slots, children };
}

/**
 * The projected columns of one decoded batch of an input (its columns by name, `rows` long from `offset`): each
 * projected column under its written name, its values from the source column the projection names (widened where
 * it says), or its default value where it names none and has one, else nulls.
 * @throws UnsupportedInputError when a source column is missing from the batch.
 */
export function projectColumns(
  columns: readonly ArrowColumn[],
  projection: ColumnProjection,
  length: number,
): ArrowColumn[] {
  return projection.columns.map((c) => {
    if (c.source === undefined)
      return {
        name: c.field.name,
        slots:
          c.default === undefined
            ? nullSlots(c.field.type, length)
            : constantSlots(c.field.name, c.field.type, c.default, length),
      };
    const from = c.source.column;
    const found = columns.find((col) => col.name === from);
    if (found === undefined)
      throw new UnsupportedInputError(
        '(batch)',
        `column ${from} (projected as ${c.field.name}) is not in the batch`,
      );
    return { name: c.field.name, slots: fromSource(from, found.slots, c.field.type, c.source) };
  });
}
