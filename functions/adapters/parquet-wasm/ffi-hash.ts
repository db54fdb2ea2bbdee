// Zero-copy fingerprinting of parquet-wasm record batches: walks the Arrow C Data Interface structs
// in wasm memory and feeds the same canonical hash kernels as the arrow-js path, so both give identical hashes.

import type { RecordBatch as WasmRecordBatch } from 'parquet-wasm';
import type { ArrowColumn, ArrowSlots } from '../../core/fingerprint/ordered-digest.js';
import {
  hashBoolSlots,
  hashDictionarySlots,
  hashFixedSlots,
  hashListSlots,
  hashStructSlots,
  hashVariableSlots,
  type MultisetHash,
  nullSlots,
  type SlotHashes,
} from '../../core/fingerprint/row-hash.js';

/** A layout this walker does not read (view types, unions, run-end encoding…): the caller falls back to Arrow IPC. */
export class FfiLayoutUnsupported extends Error {
  constructor(format: string) {
    super(`Arrow C format ${JSON.stringify(format)} is not read through FFI`);
    this.name = 'FfiLayoutUnsupported';
  }
}

const UTF8 = new TextDecoder();

/**
 * Views on wasm32 memory. Struct layouts (Arrow C Data Interface, 32-bit pointers, int64 aligned
 * to 8): ArrowSchema { format@0, name@4, metadata@8, flags@16, n_children@24, children@32,
 * dictionary@36 }; ArrowArray { length@0, null_count@8, offset@16, n_buffers@24, n_children@32,
 * buffers@40, children@44, dictionary@48 }.
 */
class Memory {
  readonly view: DataView;
  readonly bytes: Uint8Array;
  constructor(readonly buffer: ArrayBuffer) {
    this.view = new DataView(buffer);
    this.bytes = new Uint8Array(buffer);
  }
  u32(addr: number): number {
    return this.view.getUint32(addr, true);
  }
  i64(addr: number): number {
    return Number(this.view.getBigInt64(addr, true));
  }
  cString(addr: number): string {
    let end = addr;
    while (this.bytes[end] !== 0) end++;
    return UTF8.decode(this.bytes.subarray(addr, end));
  }
}

interface ArrayNode {
  readonly length: number;
  readonly nullCount: number;
  readonly offset: number;
  readonly buffers: readonly number[];
  readonly children: readonly number[];
  readonly dictionary: number;
}

interface SchemaNode {
  readonly format: string;
  readonly name: string;
  readonly children: readonly number[];
  readonly dictionary: number;
}

function pointers(m: Memory, at: number, n: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(m.u32(at + 4 * i));
  return out;
}

function arrayAt(m: Memory, addr: number): ArrayNode {
  return {
    length: m.i64(addr),
    nullCount: m.i64(addr + 8),
    offset: m.i64(addr + 16),
    buffers: pointers(m, m.u32(addr + 40), m.i64(addr + 24)),
    children: pointers(m, m.u32(addr + 44), m.i64(addr + 32)),
    dictionary: m.u32(addr + 48),
  };
}

function schemaAt(m: Memory, addr: number): SchemaNode {
  return {
    format: m.cString(m.u32(addr)),
    name: m.cString(m.u32(addr + 4)),
    children: pointers(m, m.u32(addr + 32), m.i64(addr + 24)),
    dictionary: m.u32(addr + 36),
  };
}

/** Byte width of a fixed-width primitive format, or 0 when the format is not one. */
function fixedWidth(format: string): number {
  switch (format) {
    case 'c':
    case 'C':
      return 1;
    case 's':
    case 'S':
    case 'e':
      return 2;
    case 'i':
    case 'I':
    case 'f':
    case 'tdD':
    case 'tts':
    case 'ttm':
    case 'tiM':
      return 4;
    case 'l':
    case 'L':
    case 'g':
    case 'tdm':
    case 'ttu':
    case 'ttn':
    case 'tiD':
      return 8;
    case 'tin':
      return 16;
  }
  if (format.startsWith('ts') || format.startsWith('tD')) return 8;
  if (format.startsWith('w:')) return Number(format.slice(2));
  if (format.startsWith('d:')) {
    const bits = format.slice(2).split(',')[2];
    return bits === undefined ? 16 : Number(bits) / 8;
  }
  return 0;
}

/** The validity bitmap and its bit offset, or undefined when no slot is null. */
function validity(m: Memory, a: ArrayNode): Uint8Array | undefined {
  const ptr = a.buffers[0] ?? 0;
  if (ptr === 0 || a.nullCount === 0 || a.length === 0) return undefined;
  return new Uint8Array(m.buffer, ptr, Math.ceil((a.offset + a.length) / 8));
}

function countNulls(bits: Uint8Array | undefined, offset: number, length: number): number {
  if (bits === undefined) return 0;
  let nulls = 0;
  for (let i = 0; i < length; i++) {
    const j = offset + i;
    if (((bits[j >> 3] as number) & (1 << (j & 7))) === 0) nulls++;
  }
  return nulls;
}

function offsetsView(m: Memory, ptr: number, offset: number, length: number, large: boolean) {
  return large
    ? new BigInt64Array(m.buffer, ptr + 8 * offset, length + 1)
    : new Int32Array(m.buffer, ptr + 4 * offset, length + 1);
}

function indexView(m: Memory, format: string, ptr: number, length: number): ArrayLike<number | bigint> {
  switch (format) {
    case 'c':
      return new Int8Array(m.buffer, ptr, length);
    case 'C':
      return new Uint8Array(m.buffer, ptr, length);
    case 's':
      return new Int16Array(m.buffer, ptr, length);
    case 'S':
      return new Uint16Array(m.buffer, ptr, length);
    case 'i':
      return new Int32Array(m.buffer, ptr, length);
    case 'I':
      return new Uint32Array(m.buffer, ptr, length);
    case 'l':
      return new BigInt64Array(m.buffer, ptr, length);
    case 'L':
      return new BigUint64Array(m.buffer, ptr, length);
  }
  throw new FfiLayoutUnsupported(format);
}

/** Slot hashes of every logical slot `0..length` of the array at `arrayAddr` (its own offset applied). */
function slotsOf(m: Memory, schemaAddr: number, arrayAddr: number, out?: SlotHashes): SlotHashes {
  const s = schemaAt(m, schemaAddr);
  const a = arrayAt(m, arrayAddr);
  const bits = validity(m, a);
  const { length, offset } = a;
  const f = s.format;
  if (s.dictionary !== 0) {
    const width = fixedWidth(f);
    const indices = indexView(m, f, (a.buffers[1] ?? 0) + width * offset, length);
    return hashDictionarySlots(bits, offset, length, slotsOf(m, s.dictionary, a.dictionary), indices, out);
  }
  if (f === 'n') return nullSlots(length, out);
  if (f === 'b') {
    const values = new Uint8Array(m.buffer, a.buffers[1] ?? 0, Math.ceil((offset + length) / 8));
    return hashBoolSlots(bits, offset, values, offset, length, out);
  }
  const width = fixedWidth(f);
  if (width > 0) {
    const bytes = new Uint8Array(m.buffer, (a.buffers[1] ?? 0) + width * offset, width * length);
    return hashFixedSlots(bits, offset, bytes, width, length, out);
  }
  if (f === 'u' || f === 'z' || f === 'U' || f === 'Z') {
    const offsets = offsetsView(m, a.buffers[1] ?? 0, offset, length, f === 'U' || f === 'Z');
    const end = Number(offsets[length]);
    const values = new Uint8Array(m.buffer, a.buffers[2] ?? 0, end);
    return hashVariableSlots(bits, offset, offsets, values, length, out);
  }
  if (f === '+l' || f === '+L' || f === '+m') {
    const child = slotsOf(m, s.children[0] ?? 0, a.children[0] ?? 0);
    const offsets = offsetsView(m, a.buffers[1] ?? 0, offset, length, f === '+L');
    return hashListSlots(bits, offset, length, child, { offsets }, out);
  }
  if (f.startsWith('+w:')) {
    const size = Number(f.slice(3));
    const child = slotsOf(m, s.children[0] ?? 0, a.children[0] ?? 0);
    return hashListSlots(bits, offset, length, child, { size, base: offset * size }, out);
  }
  if (f === '+s') {
    const children = s.children.map((c, i) => slotsOf(m, c, a.children[i] ?? 0));
    return hashStructSlots(bits, offset, length, children, offset, out);
  }
  throw new FfiLayoutUnsupported(f);
}

/** Throws FfiLayoutUnsupported when any field in the schema tree has a layout `slotsOf` does not read. */
function checkSupported(m: Memory, schemaAddr: number): void {
  const s = schemaAt(m, schemaAddr);
  const f = s.format;
  if (s.dictionary !== 0) {
    if (!/^[cCsSiIlL]$/.test(f)) throw new FfiLayoutUnsupported(f);
    checkSupported(m, s.dictionary);
    return;
  }
  const leaf = f === 'n' || f === 'b' || fixedWidth(f) > 0 || ['u', 'z', 'U', 'Z'].includes(f);
  const nested = ['+l', '+L', '+m', '+s'].includes(f) || /^\+w:\d+$/.test(f);
  if (!leaf && !nested) throw new FfiLayoutUnsupported(f);
  for (const c of s.children) checkSupported(m, c);
}

/**
 * Adds a wasm record batch's rows to `acc` through the C Data Interface, without copying or
 * consuming the batch. Synchronous on purpose: views on wasm memory die when it grows, and
 * nothing here calls into wasm between `toFFI()` and the last read.
 *
 * @throws FfiLayoutUnsupported (before anything is added to `acc`) for layouts it does not read.
 */
export function hashWasmBatchFfi(
  acc: MultisetHash,
  batch: WasmRecordBatch,
  memory: { readonly buffer: ArrayBuffer },
): void {
  const n = batch.numRows;
  if (n === 0) return;
  const ffi = batch.toFFI();
  try {
    const m = new Memory(memory.buffer);
    const s = schemaAt(m, ffi.schemaAddr());
    const a = arrayAt(m, ffi.arrayAddr());
    if (s.format !== '+s' || a.length !== n) throw new FfiLayoutUnsupported(s.format);
    // Check every column first, so an unsupported layout leaves `acc` untouched.
    for (const c of s.children) checkSupported(m, c);
    acc.beginRows(n);
    walk(m, s, a, n, acc);
    acc.endRows(s.children.length);
  } finally {
    ffi.free();
  }
}

/**
 * Mixes every column of the batch into `acc`'s pending rows. A view that cannot be made (a buffer
 * misaligned for its typed array, say) becomes FfiLayoutUnsupported: nothing is committed before
 * `endRows`, so the caller can hash the batch again through Arrow IPC.
 */
function walk(m: Memory, s: SchemaNode, a: ArrayNode, n: number, acc: MultisetHash): void {
  try {
    s.children.forEach((c, i) => {
      const cs = schemaAt(m, c);
      const ca = arrayAt(m, a.children[i] ?? 0);
      // A batch's columns are as long as the batch unless the batch itself carries an offset.
      const whole = a.offset === 0 && ca.length === n;
      const slots = slotsOf(m, c, a.children[i] ?? 0, whole ? acc.scratch(n) : undefined);
      const view = whole ? slots : sliceSlots(slots, a.offset, n);
      const nulls =
        cs.format === 'n'
          ? n
          : whole && ca.nullCount >= 0
            ? ca.nullCount
            : countNulls(validity(m, ca), ca.offset + a.offset, n);
      acc.mixColumn(i, cs.name, view, nulls);
    });
  } catch (err) {
    if (err instanceof FfiLayoutUnsupported || !(err instanceof RangeError || err instanceof TypeError)) {
      throw err;
    }
    throw new FfiLayoutUnsupported(`${s.format} (${err.message})`);
  }
}

function sliceSlots(slots: SlotHashes, from: number, n: number): SlotHashes {
  return { h1: slots.h1.subarray(from, from + n), h2: slots.h2.subarray(from, from + n) };
}

/**
 * The slots of the array at `arrayAddr` for the ordered digest, as views on wasm memory. In the C
 * Data Interface an array's `offset` applies to all of its buffers, so it is applied here (to
 * offsets, values and indices; bitmaps keep it as a bit offset); children keep their own, and a
 * struct's or fixed-size list's offset becomes the `base` of its child slots.
 */
function orderedSlotsOf(m: Memory, schemaAddr: number, arrayAddr: number): ArrowSlots {
  const s = schemaAt(m, schemaAddr);
  const a = arrayAt(m, arrayAddr);
  const { length, offset } = a;
  const bits = validity(m, a);
  const valid = bits === undefined ? undefined : { bits, offset };
  const f = s.format;
  if (s.dictionary !== 0) {
    const indices = indexView(m, f, (a.buffers[1] ?? 0) + fixedWidth(f) * offset, length);
    return {
      kind: 'dictionary',
      length,
      validity: valid,
      indices,
      values: orderedSlotsOf(m, s.dictionary, a.dictionary),
    };
  }
  if (f === 'n') return { kind: 'null', length };
  if (f === 'b') {
    const values = new Uint8Array(m.buffer, a.buffers[1] ?? 0, Math.ceil((offset + length) / 8));
    return { kind: 'bool', length, validity: valid, values, valueOffset: offset };
  }
  const width = fixedWidth(f);
  if (width > 0) {
    const bytes = new Uint8Array(m.buffer, (a.buffers[1] ?? 0) + width * offset, width * length);
    return { kind: 'fixed', length, validity: valid, width, bytes };
  }
  if (f === 'u' || f === 'z' || f === 'U' || f === 'Z') {
    const offsets = offsetsView(m, a.buffers[1] ?? 0, offset, length, f === 'U' || f === 'Z');
    const values = new Uint8Array(m.buffer, a.buffers[2] ?? 0, Number(offsets[length]));
    return { kind: 'binary', length, validity: valid, offsets, values };
  }
  if (f === '+l' || f === '+L' || f === '+m') {
    const offsets = offsetsView(m, a.buffers[1] ?? 0, offset, length, f === '+L');
    const child = orderedSlotsOf(m, s.children[0] ?? 0, a.children[0] ?? 0);
    return { kind: 'list', length, validity: valid, offsets, child };
  }
  if (f.startsWith('+w:')) {
    const size = Number(f.slice(3));
    const child = orderedSlotsOf(m, s.children[0] ?? 0, a.children[0] ?? 0);
    return { kind: 'fixed-list', length, validity: valid, size, base: offset * size, child };
  }
  if (f === '+s') {
    const children = s.children.map((c, i) => orderedSlotsOf(m, c, a.children[i] ?? 0));
    return { kind: 'struct', length, validity: valid, base: offset, children };
  }
  throw new FfiLayoutUnsupported(f);
}

/**
 * Hands a wasm record batch's columns, as views on wasm memory, to `sink` with the batch's own row
 * offset (the first of its rows in every column) and row count; without copying or consuming the
 * batch. Synchronous on purpose: views on wasm memory die when it grows, and nothing here calls into
 * wasm between `toFFI()` and the sink's return.
 *
 * @throws FfiLayoutUnsupported, before `sink` is called, for layouts it does not read (or a view
 * that cannot be made, e.g. a misaligned buffer): the caller can go through Arrow IPC instead.
 */
export function withWasmBatchColumns(
  batch: WasmRecordBatch,
  memory: { readonly buffer: ArrayBuffer },
  sink: (columns: readonly ArrowColumn[], offset: number, rows: number) => void,
): void {
  const n = batch.numRows;
  if (n === 0) return;
  const ffi = batch.toFFI();
  try {
    const m = new Memory(memory.buffer);
    const s = schemaAt(m, ffi.schemaAddr());
    const a = arrayAt(m, ffi.arrayAddr());
    if (s.format !== '+s' || a.length !== n) throw new FfiLayoutUnsupported(s.format);
    let columns: ArrowColumn[];
    try {
      columns = s.children.map((c, i) => ({
        name: schemaAt(m, c).name,
        slots: orderedSlotsOf(m, c, a.children[i] ?? 0),
      }));
    } catch (err) {
      if (err instanceof FfiLayoutUnsupported || !(err instanceof RangeError || err instanceof TypeError)) {
        throw err;
      }
      throw new FfiLayoutUnsupported(`${s.format} (${err.message})`);
    }
    sink(columns, a.offset, n);
  } finally {
    ffi.free();
  }
}
