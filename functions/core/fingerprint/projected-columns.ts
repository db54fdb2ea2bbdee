// The columns an input's decoded rows have once projected (core/projection.ts), as the ordered digest reads them:
// computed from the decoded input's own slots, not from the batch the rewrite writes. This is the fingerprint's
// projection, kept apart from the engine's on purpose: the rewrite builds the written batches one way (arrow-js
// conversions), the fingerprint derives what their digest must be another way (slot views: renamed, widened byte by
// byte, nulls synthesised), and verify re-reads the stored outputs — so a projection that lost, moved or mangled
// a value, or typed a column otherwise than described, fails verification instead of being published.
import { UnsupportedInputError } from '../errors.js';
import type { ColumnProjection, ProjectedType, ProjectedWidening } from '../projection.js';
import type { ArrowColumn, ArrowSlots } from './ordered-digest.js';

const MICROS_PER_DAY = 86_400_000_000n;

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
      case 'int32':
      case 'float32':
      case 'date32':
        return { kind: 'fixed', length, validity, width: 4, bytes: new Uint8Array(length * 4) };
      case 'int64':
      case 'float64':
      case 'timestamp-us':
      case 'timestamp-us-utc':
        return { kind: 'fixed', length, validity, width: 8, bytes: new Uint8Array(length * 8) };
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
  return {
    kind: 'struct',
    length,
    validity,
    base: 0,
    children: type.struct.map((f) => nullSlots(f.type, length)),
  };
}

/**
 * `slots` with each value widened as `widen` says: int32 → int64 sign-extended, float32 → float64 and int32 →
 * float64 exactly, a date32's days → the microseconds of that day's midnight.
 */
function widened(column: string, slots: ArrowSlots, widen: ProjectedWidening): ArrowSlots {
  if (widen === 'decimal') return slots; // the unscaled value is stored alike at any precision (Decimal128)
  if (slots.kind === 'dictionary') return { ...slots, values: widened(column, slots.values, widen) };
  if (slots.kind !== 'fixed' || slots.width !== 4)
    throw new UnsupportedInputError(
      '(batch)',
      `column ${column} is not 32-bit wide as the projection's ${widen} needs`,
    );
  const from = new DataView(slots.bytes.buffer, slots.bytes.byteOffset, slots.bytes.byteLength);
  const bytes = new Uint8Array(slots.length * 8);
  const to = new DataView(bytes.buffer);
  for (let i = 0; i < slots.length; i++) {
    if (widen === 'int32-int64') to.setBigInt64(i * 8, BigInt(from.getInt32(i * 4, true)), true);
    else if (widen === 'int32-float64') to.setFloat64(i * 8, from.getInt32(i * 4, true), true);
    else if (widen === 'date32-timestamp-us')
      to.setBigInt64(i * 8, BigInt(from.getInt32(i * 4, true)) * MICROS_PER_DAY, true);
    else to.setFloat64(i * 8, from.getFloat32(i * 4, true), true);
  }
  return { kind: 'fixed', length: slots.length, validity: slots.validity, width: 8, bytes };
}

/**
 * The projected columns of one decoded batch of an input (its columns by name, `rows` long from `offset`): each
 * projected column under its written name, its values from the source column the projection names (widened where
 * it says), or nulls where it names none.
 * @throws UnsupportedInputError when a source column is missing from the batch.
 */
export function projectColumns(
  columns: readonly ArrowColumn[],
  projection: ColumnProjection,
  length: number,
): ArrowColumn[] {
  return projection.columns.map((c) => {
    if (c.source === undefined) return { name: c.field.name, slots: nullSlots(c.field.type, length) };
    const from = c.source.column;
    const found = columns.find((col) => col.name === from);
    if (found === undefined)
      throw new UnsupportedInputError(
        '(batch)',
        `column ${from} (projected as ${c.field.name}) is not in the batch`,
      );
    const slots = c.source.widen === undefined ? found.slots : widened(from, found.slots, c.source.widen);
    return { name: c.field.name, slots };
  });
}
