// Order-preserving per-column digest of Arrow record batches ('ordered-columns-v1'): native SHA-256 over a
// canonical byte stream per column, fed straight from the Arrow buffers. Equal row sequences give equal
// digests however they are cut into batches, slices, row groups or files, and whether a column is
// dictionary-encoded or plain; any changed, dropped, duplicated or moved value changes it.

import { createHash, type Hash } from 'node:crypto';
import { endianness } from 'node:os';
import { type Data, Type } from 'apache-arrow';
import { UnsupportedInputError } from '../errors.js';

/**
 * One Arrow array as the digest reads it — the shape both ways of reaching a batch's memory are
 * turned into: arrow-js `Data` (`slotsOfData`, after Arrow IPC) and the Arrow C Data Interface
 * over wasm memory (the parquet-wasm adapter, zero copy). Offsets are already applied: slot `i` is
 * `bytes[i·width ..]`, `offsets[i] .. offsets[i + 1]`, child slot `base + i`…; only bit positions
 * carry one (`validity.offset`, `valueOffset`), because bitmaps cannot be sliced at a bit.
 */
export type ArrowSlots =
  | { readonly kind: 'null'; readonly length: number }
  | (Common & { readonly kind: 'bool'; readonly values: Uint8Array; readonly valueOffset: number })
  | (Common & { readonly kind: 'fixed'; readonly width: number; readonly bytes: Uint8Array })
  | (Common & { readonly kind: 'binary'; readonly offsets: Offsets; readonly values: Uint8Array })
  | (Common & { readonly kind: 'list'; readonly offsets: Offsets; readonly child: ArrowSlots })
  | (Common & {
      readonly kind: 'fixed-list';
      readonly size: number;
      readonly base: number;
      readonly child: ArrowSlots;
    })
  | (Common & { readonly kind: 'struct'; readonly base: number; readonly children: readonly ArrowSlots[] })
  | (Common & {
      readonly kind: 'dictionary';
      readonly indices: ArrayLike<number | bigint>;
      readonly values: ArrowSlots;
    });

interface Common {
  readonly length: number;
  /** Slot i is valid when bit `offset + i` of `bits` is set; absent when no slot is null. */
  readonly validity: { readonly bits: Uint8Array; readonly offset: number } | undefined;
}

type Offsets = Int32Array | BigInt64Array;

/** One column of a batch: its name and its slots. */
export interface ArrowColumn {
  readonly name: string;
  readonly slots: ArrowSlots;
}

/** The digest of one output's rows (a segment of the group's row sequence), as it travels in JSON. */
export interface OrderedSegment {
  readonly rows: number;
  /**
   * SHA-256 (hex) over every column's digest, in schema order — or, with `cuts`, over the digests of the
   * output's consecutive parts (see {@link joinSegments}).
   */
  readonly digest: string;
  /** Top-level null count per column name. */
  readonly nullCounts: Readonly<Record<string, number>>;
  /**
   * Rows of each part, in order, when the output was digested in parts (its row groups encoded on several
   * workers, each digesting its own rows): verify cuts the output's rows at the same places.
   */
  readonly cuts?: readonly number[];
}

// Typed-array views are written in platform order; the canonical stream is little-endian.
if (endianness() !== 'LE') throw new Error('ordered-digest: a little-endian platform is required');

const PENDING_BYTES = 64 * 1024;
/** Pieces at least this large go to the native hash directly; smaller ones are gathered first. */
const DIRECT_BYTES = 16 * 1024;

/**
 * A SHA-256 stream that gathers small pieces: one `update` costs ~0.3 µs whatever its size, so
 * per-value pieces (dictionary values, null-separated runs) are copied into a buffer instead.
 */
class ByteStream {
  private readonly hash: Hash = createHash('sha256');
  private readonly pending = new Uint8Array(PENDING_BYTES);
  private readonly pendingView = new DataView(this.pending.buffer);
  private used = 0;
  total = 0;

  push(bytes: Uint8Array): void {
    const n = bytes.length;
    if (n === 0) return;
    this.total += n;
    if (n >= DIRECT_BYTES) {
      this.flush();
      this.hash.update(bytes);
      return;
    }
    if (this.used + n > PENDING_BYTES) this.flush();
    this.pending.set(bytes, this.used);
    this.used += n;
  }

  pushByte(b: number): void {
    if (this.used === PENDING_BYTES) this.flush();
    this.pending[this.used++] = b;
    this.total++;
  }

  pushU32(v: number): void {
    if (this.used + 4 > PENDING_BYTES) this.flush();
    this.pendingView.setUint32(this.used, v, true);
    this.used += 4;
    this.total += 4;
  }

  private flush(): void {
    if (this.used > 0) this.hash.update(this.pending.subarray(0, this.used));
    this.used = 0;
  }

  digest(): string {
    this.flush();
    return `${this.total}:${this.hash.digest('hex')}`;
  }
}

/** Set bits per byte value, for null counts. */
const POPCOUNT = Uint8Array.from({ length: 256 }, (_, b) => {
  let n = 0;
  for (let x = b; x !== 0; x >>= 1) n += x & 1;
  return n;
});

/** Validity of rows that cannot be null, pushed a block at a time. */
const ONES = new Uint8Array(8192).fill(0xff);

/**
 * A stream of bits packed LSB first into bytes whatever bit offsets they come from, so a bitmap
 * cut at any row gives the same bytes. Bits beyond the count (Arrow's padding) are never read.
 */
class BitStream {
  private readonly out = new ByteStream();
  private acc = 0;
  private used = 0;
  bits = 0;

  /** Appends bits `offset .. offset + count` of `bits` (all ones when undefined); returns how many were 0. */
  pushBits(bits: Uint8Array | undefined, offset: number, count: number): number {
    if (count <= 0) return 0;
    this.bits += count;
    if (bits === undefined) {
      this.pushOnes(count);
      return 0;
    }
    let zeros = 0;
    let at = offset;
    const end = offset + count;
    const shift = at & 7;
    if (this.used === 0 && shift === 0) {
      const whole = count >> 3;
      const bytes = bits.subarray(at >> 3, (at >> 3) + whole);
      for (let i = 0; i < whole; i++) zeros += 8 - (POPCOUNT[bytes[i] as number] as number);
      this.out.push(bytes);
      at += whole << 3;
    } else {
      for (; at + 8 <= end; at += 8) {
        const j = at >> 3;
        const s = at & 7;
        const b =
          s === 0
            ? (bits[j] as number)
            : (((bits[j] as number) >> s) | ((bits[j + 1] as number) << (8 - s))) & 0xff;
        zeros += 8 - (POPCOUNT[b] as number);
        this.pushByte(b);
      }
    }
    for (; at < end; at++) {
      const bit = ((bits[at >> 3] as number) >> (at & 7)) & 1;
      zeros += 1 - bit;
      this.put(bit);
    }
    return zeros;
  }

  pushBit(bit: number): void {
    this.bits++;
    this.put(bit);
  }

  private put(bit: number): void {
    this.acc |= bit << this.used;
    if (++this.used === 8) {
      this.out.pushByte(this.acc);
      this.acc = 0;
      this.used = 0;
    }
  }

  private pushByte(b: number): void {
    if (this.used === 0) {
      this.out.pushByte(b);
      return;
    }
    this.out.pushByte((this.acc | (b << this.used)) & 0xff);
    this.acc = b >> (8 - this.used);
  }

  private pushOnes(count: number): void {
    let left = count;
    while (left > 0 && this.used !== 0) {
      this.put(1);
      left--;
    }
    for (; left >= 8 * ONES.length; left -= 8 * ONES.length) this.out.push(ONES);
    if (left >= 8) {
      this.out.push(ONES.subarray(0, left >> 3));
      left &= 7;
    }
    for (; left > 0; left--) this.put(1);
  }

  digest(): string {
    if (this.used > 0) this.out.pushByte(this.acc);
    this.acc = 0;
    this.used = 0;
    return `${this.bits}b:${this.out.digest()}`;
  }
}

/** The type tag a column's canonical stream is defined by; a dictionary takes its values' tag. */
function tagOf(slots: ArrowSlots): string {
  switch (slots.kind) {
    case 'fixed':
      return `fixed:${slots.width}`;
    case 'fixed-list':
      return `fixed-list:${slots.size}`;
    case 'struct':
      return `struct:${slots.children.length}`;
    case 'dictionary':
      return tagOf(slots.values);
    default:
      return slots.kind;
  }
}

/**
 * The canonical streams of one column (and, for nested types, of its children), each its own
 * SHA-256 so that how rows are cut into batches cannot interleave them differently:
 * - validity: one bit per slot (1 valid), for every slot reached — what lies under a null is never read;
 * - lengths: uint32 LE per valid binary value or list;
 * - values: fixed-width values' bytes, binary values' bytes, or boolean bits — valid slots only;
 * - children: a list's elements and a struct's fields, for valid slots only, in order.
 */
class ColumnDigest {
  private tag: string | undefined;
  private readonly validity = new BitStream();
  private readonly lengths = new ByteStream();
  private readonly values = new ByteStream();
  private readonly bools = new BitStream();
  private children: ColumnDigest[] = [];
  private runs = new Int32Array(64);
  private lengthScratch = new Uint32Array(0);

  /** Appends slots `start .. start + count` of `slots`; returns how many were null. */
  append(slots: ArrowSlots, start: number, count: number): number {
    if (count <= 0) return 0;
    const tag = tagOf(slots);
    if (this.tag === undefined) {
      this.tag = tag;
      const n =
        slots.kind === 'struct'
          ? slots.children.length
          : slots.kind === 'list' || slots.kind === 'fixed-list'
            ? 1
            : 0;
      this.children = Array.from({ length: n }, () => new ColumnDigest());
    } else if (this.tag !== tag) {
      throw new UnsupportedInputError(
        '(batch)',
        `column changed type from ${this.tag} to ${tag} between batches`,
      );
    }
    if (slots.kind === 'null') {
      this.validity.pushBits(new Uint8Array(Math.ceil(count / 8)), 0, count);
      return count;
    }
    if (slots.kind === 'dictionary') return this.appendDictionary(slots, start, count);
    const v = slots.validity;
    const nulls = this.validity.pushBits(v?.bits, (v?.offset ?? 0) + start, count);
    if (nulls === 0) this.appendValid(slots, start, start + count);
    else if (nulls < count) {
      const runs = this.validRuns(v as NonNullable<typeof v>, start, count);
      // appendValid recurses into this column's children only, never into this column: `runs` stays as read.
      for (let r = 1; r <= (runs[0] as number); r++) {
        this.appendValid(slots, runs[2 * r - 1] as number, runs[2 * r] as number);
      }
    }
    return nulls;
  }

  /** Dictionary slots by value: a slot is null when its index or the value it points at is. */
  private appendDictionary(
    slots: Extract<ArrowSlots, { kind: 'dictionary' }>,
    start: number,
    count: number,
  ): number {
    const { indices, values } = slots;
    const v = slots.validity;
    const dv = values.kind === 'null' ? undefined : values.validity;
    let nulls = 0;
    for (let i = start; i < start + count; i++) {
      let valid =
        v === undefined || (((v.bits[(v.offset + i) >> 3] as number) >> ((v.offset + i) & 7)) & 1) === 1;
      const k = valid ? Number(indices[i]) : 0;
      if (valid && values.kind === 'null') valid = false;
      if (valid && dv !== undefined)
        valid = (((dv.bits[(dv.offset + k) >> 3] as number) >> ((dv.offset + k) & 7)) & 1) === 1;
      this.validity.pushBit(valid ? 1 : 0);
      if (valid) this.appendValid(values, k, k + 1);
      else nulls++;
    }
    return nulls;
  }

  /** Runs [from, to) of valid slots in `start .. start + count`: `runs[0]` pairs follow. */
  private validRuns(v: { bits: Uint8Array; offset: number }, start: number, count: number): Int32Array {
    let runs = this.runs;
    let n = 0;
    let from = -1;
    for (let i = start; i <= start + count; i++) {
      const j = v.offset + i;
      const valid = i < start + count && (((v.bits[j >> 3] as number) >> (j & 7)) & 1) === 1;
      if (valid && from < 0) from = i;
      else if (!valid && from >= 0) {
        if (2 * n + 3 > runs.length) {
          const grown = new Int32Array(runs.length * 2);
          grown.set(runs);
          runs = grown;
        }
        runs[2 * n + 1] = from;
        runs[2 * n + 2] = i;
        n++;
        from = -1;
      }
    }
    runs[0] = n;
    this.runs = runs;
    return runs;
  }

  /** Appends the values of valid slots `from .. to`. */
  private appendValid(slots: ArrowSlots, from: number, to: number): void {
    switch (slots.kind) {
      case 'null':
      case 'dictionary':
        throw new Error(`ordered-digest: appendValid(${slots.kind})`);
      case 'fixed':
        this.values.push(slots.bytes.subarray(from * slots.width, to * slots.width));
        return;
      case 'bool':
        this.bools.pushBits(slots.values, slots.valueOffset + from, to - from);
        return;
      case 'binary': {
        this.pushLengths(slots.offsets, from, to);
        this.values.push(slots.values.subarray(Number(slots.offsets[from]), Number(slots.offsets[to])));
        return;
      }
      case 'list': {
        this.pushLengths(slots.offsets, from, to);
        const a = Number(slots.offsets[from]);
        (this.children[0] as ColumnDigest).append(slots.child, a, Number(slots.offsets[to]) - a);
        return;
      }
      case 'fixed-list':
        (this.children[0] as ColumnDigest).append(
          slots.child,
          slots.base + from * slots.size,
          (to - from) * slots.size,
        );
        return;
      case 'struct':
        slots.children.forEach((c, k) => {
          (this.children[k] as ColumnDigest).append(c, slots.base + from, to - from);
        });
        return;
    }
  }

  private pushLengths(offsets: Offsets, from: number, to: number): void {
    const n = to - from;
    if (n === 1) {
      this.lengths.pushU32(Number(offsets[to]) - Number(offsets[from]));
      return;
    }
    if (this.lengthScratch.length < n) this.lengthScratch = new Uint32Array(Math.max(n, 1024));
    const out = this.lengthScratch;
    if (offsets instanceof Int32Array) {
      for (let i = 0; i < n; i++) out[i] = (offsets[from + i + 1] as number) - (offsets[from + i] as number);
    } else {
      for (let i = 0; i < n; i++)
        out[i] = Number((offsets[from + i + 1] as bigint) - (offsets[from + i] as bigint));
    }
    this.lengths.push(new Uint8Array(out.buffer, 0, 4 * n));
  }

  digest(): string {
    const h = createHash('sha256').update(`ordered-columns-v1|${this.tag ?? 'empty'}`);
    for (const part of [
      this.validity.digest(),
      this.lengths.digest(),
      this.values.digest(),
      this.bools.digest(),
    ]) {
      h.update(`|${part}`);
    }
    for (const c of this.children) h.update(`|(${c.digest()})`);
    return h.digest('hex');
  }
}

/**
 * The ordered digest of one segment of rows (one output's worth): feed row ranges of batches in
 * order with `add`, then `finish`. Top-level null counts are kept alongside, for core's verify rule.
 */
export class OrderedDigest {
  private columns: ColumnDigest[] = [];
  private names: string[] | undefined;
  rows = 0;
  readonly nullCounts = new Map<string, number>();

  /** Appends rows `start .. start + count` of a batch whose columns are `columns` (schema order). */
  add(columns: readonly ArrowColumn[], start: number, count: number): void {
    if (count <= 0) return;
    if (this.names === undefined) {
      this.names = columns.map((c) => c.name);
      this.columns = columns.map(() => new ColumnDigest());
    } else if (this.names.length !== columns.length || columns.some((c, i) => c.name !== this.names?.[i])) {
      throw new UnsupportedInputError(
        '(batch)',
        'batch columns differ from the earlier batches of its output',
      );
    }
    columns.forEach((c, i) => {
      if (c.slots.length < start + count) {
        throw new UnsupportedInputError('(batch)', `column ${c.name} is shorter than its batch`);
      }
      const nulls = (this.columns[i] as ColumnDigest).append(c.slots, start, count);
      this.nullCounts.set(c.name, (this.nullCounts.get(c.name) ?? 0) + nulls);
    });
    this.rows += count;
  }

  /** The segment's digest; the digest object is spent. */
  finish(): OrderedSegment {
    const h = createHash('sha256').update(`ordered-columns-v1|rows=${this.rows}`);
    (this.names ?? []).forEach((name, i) => {
      h.update(`|${JSON.stringify(name)}=${(this.columns[i] as ColumnDigest).digest()}`);
    });
    return {
      rows: this.rows,
      digest: h.digest('hex'),
      nullCounts: Object.fromEntries(
        [...this.nullCounts.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
      ),
    };
  }
}

/**
 * One output's digest from the digests of its consecutive parts, in order (an output whose row ranges were encoded
 * and digested on several workers). SHA-256 streams cannot be joined, so the output's digest is a SHA-256 over the
 * parts' rows and digests, and `cuts` records where the parts end: verify digests the stored output's rows cut at
 * the same rows and joins them the same way. As strict as one digest: each part's digest pins its rows in order,
 * and the parts are taken in order, so a row dropped, duplicated, changed or moved — across a cut too — changes it.
 * One part is that part's segment unchanged.
 */
export function joinSegments(parts: readonly OrderedSegment[]): OrderedSegment {
  if (parts.length === 1) return parts[0] as OrderedSegment;
  const h = createHash('sha256').update('ordered-columns-v1/parts');
  const nullCounts = new Map<string, number>();
  for (const p of parts) {
    if (p.cuts !== undefined) throw new Error('joinSegments: a part is itself joined');
    h.update(`|${p.rows}:${p.digest}`);
    for (const [k, v] of Object.entries(p.nullCounts)) nullCounts.set(k, (nullCounts.get(k) ?? 0) + v);
  }
  return {
    rows: parts.reduce((n, p) => n + p.rows, 0),
    digest: h.digest('hex'),
    nullCounts: Object.fromEntries(
      [...nullCounts.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    ),
    cuts: parts.map((p) => p.rows),
  };
}

/**
 * A group's row sequence cut into segments at the outputs' boundaries, the way the rewrite cuts it:
 * within a run, a segment ends when its quota is reached (except the run's last, which takes what is
 * left); runs never share a segment; a segment with no rows is not an output and is not kept. Segments
 * digested elsewhere (a worker's output) are appended in output order with `push`.
 */
export class OrderedSegments {
  readonly segments: OrderedSegment[] = [];
  private quotas: readonly number[] = [];
  private quotaIndex = 0;
  private current: OrderedDigest | undefined;

  startRun(quotas: readonly number[]): void {
    this.endRun();
    this.quotas = quotas;
    this.quotaIndex = 0;
  }

  /** Appends rows `offset .. offset + rows` of a batch (all of its rows), cut at the run's quota boundaries. */
  add(columns: readonly ArrowColumn[], offset: number, rows: number): void {
    let at = 0;
    while (at < rows) {
      this.current ??= new OrderedDigest();
      const quota = this.quotas[this.quotaIndex] ?? Number.POSITIVE_INFINITY;
      const last = this.quotaIndex >= this.quotas.length - 1;
      const take = last ? rows - at : Math.min(rows - at, quota - this.current.rows);
      this.current.add(columns, offset + at, take);
      at += take;
      if (!last && this.current.rows >= quota) {
        this.segments.push(this.current.finish());
        this.current = undefined;
        this.quotaIndex++;
      }
    }
  }

  endRun(): void {
    if (this.current !== undefined && this.current.rows > 0) this.segments.push(this.current.finish());
    this.current = undefined;
    this.quotas = [];
    this.quotaIndex = 0;
  }

  push(segment: OrderedSegment): void {
    this.endRun();
    this.segments.push(segment);
  }
}

function bytesOf(values: ArrayBufferView): Uint8Array {
  return new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
}

/**
 * The slots of one arrow-js array (the Arrow IPC path: the tests' oracle for the FFI walker). arrow-js keeps `offset` for
 * the validity bitmap (and boolean values) only: value and offset buffers, and the children of
 * structs and fixed-size lists, are already sliced.
 */
export function slotsOfData(data: Data): ArrowSlots {
  const length = data.length;
  const type = data.type;
  const bits = data.nullCount > 0 ? (data.nullBitmap as Uint8Array | undefined) : undefined;
  const validity = bits !== undefined && bits.length > 0 ? { bits, offset: data.offset } : undefined;
  switch (type.typeId) {
    case Type.Null:
      return { kind: 'null', length };
    case Type.Bool:
      return { kind: 'bool', length, validity, values: data.values as Uint8Array, valueOffset: data.offset };
    case Type.Int:
    case Type.Float:
    case Type.Decimal:
    case Type.Date:
    case Type.Time:
    case Type.Timestamp:
    case Type.Interval:
    case Type.Duration:
    case Type.FixedSizeBinary: {
      const values = data.values as ArrayBufferView & { BYTES_PER_ELEMENT: number };
      const width = values.BYTES_PER_ELEMENT * data.stride;
      return { kind: 'fixed', length, validity, width, bytes: bytesOf(values).subarray(0, length * width) };
    }
    case Type.Utf8:
    case Type.Binary:
    case Type.LargeUtf8:
    case Type.LargeBinary:
      return {
        kind: 'binary',
        length,
        validity,
        offsets: data.valueOffsets as Offsets,
        values: data.values as Uint8Array,
      };
    case Type.List:
    case Type.LargeList:
    case Type.Map: {
      const child = data.children[0];
      if (child === undefined) throw new UnsupportedInputError('(batch)', `list without child in ${type}`);
      return {
        kind: 'list',
        length,
        validity,
        offsets: data.valueOffsets as Offsets,
        child: slotsOfData(child),
      };
    }
    case Type.FixedSizeList: {
      const child = data.children[0];
      if (child === undefined) throw new UnsupportedInputError('(batch)', `list without child in ${type}`);
      const size = (type as unknown as { listSize: number }).listSize;
      return { kind: 'fixed-list', length, validity, size, base: 0, child: slotsOfData(child) };
    }
    case Type.Struct:
      return {
        kind: 'struct',
        length,
        validity,
        base: 0,
        children: data.children.map((c) => slotsOfData(c)),
      };
    case Type.Dictionary: {
      const dictionary = data.dictionary;
      if (dictionary === undefined)
        throw new UnsupportedInputError('(batch)', 'dictionary array without values');
      const parts = dictionary.data;
      if (parts.length !== 1) {
        throw new UnsupportedInputError('(batch)', `dictionary in ${parts.length} chunks cannot be digested`);
      }
      return {
        kind: 'dictionary',
        length,
        validity,
        indices: data.values as ArrayLike<number | bigint>,
        values: slotsOfData(parts[0] as Data),
      };
    }
    default:
      throw new UnsupportedInputError('(batch)', `Arrow type ${type} cannot be fingerprinted`);
  }
}

/** The columns of an arrow-js record batch, each as one array (a batch's columns are never chunked). */
export function columnsOfBatch(batch: {
  readonly schema: { readonly fields: readonly { readonly name: string }[] };
  readonly data: Data;
}): ArrowColumn[] {
  return batch.schema.fields.map((f, i) => {
    const child = batch.data.children[i];
    if (child === undefined)
      throw new UnsupportedInputError('(batch)', `column ${f.name} missing from batch`);
    return { name: f.name, slots: slotsOfData(child) };
  });
}
