// Sort support for the rewrite: sort keys read exactly from Arrow buffers, a stable comparator
// (nulls first, then ascending), and the sorted order expressed as contiguous slices of the input batches.

import { type Table, Type } from 'apache-arrow';
import { InvalidInputError } from '../../core/errors.js';

export type SortValue = number | bigint | string | boolean | null;

/** Key columns of one batch, one array per sort column. */
export type BatchKeys = SortValue[][];

const SORTABLE = new Set([
  Type.Int,
  Type.Float,
  Type.Utf8,
  Type.LargeUtf8,
  Type.Bool,
  Type.Date,
  Type.Time,
  Type.Timestamp,
  Type.Duration,
]);

/**
 * Reads the sort columns of `table` as comparable JS values. Integer-like types are read from the
 * value buffer (bigint for 64-bit), never through Arrow JS's `get`, which turns timestamps into
 * float milliseconds and would lose sub-millisecond order.
 */
export function sortKeysOf(table: Table, columns: readonly string[]): BatchKeys {
  return columns.map((name) => {
    const vector = table.getChild(name);
    if (vector === null)
      throw new InvalidInputError(`Sort column ${name} does not exist in the group's schema`);
    const typeId = vector.type.typeId;
    if (!SORTABLE.has(typeId)) {
      throw new InvalidInputError(
        `Sort column ${name} has type ${vector.type}, which the sort does not support; sort by integer, float, string, boolean, date, time or timestamp columns`,
      );
    }
    const out: SortValue[] = new Array(vector.length);
    const direct = typeId !== Type.Utf8 && typeId !== Type.LargeUtf8 && typeId !== Type.Bool;
    let at = 0;
    for (const data of vector.data) {
      const values = data.values as ArrayLike<number | bigint>;
      const bitmap = data.nullCount > 0 ? data.nullBitmap : undefined;
      for (let i = 0; i < data.length; i++, at++) {
        const j = data.offset + i;
        const valid = bitmap === undefined || ((bitmap[j >> 3] as number) & (1 << (j & 7))) !== 0;
        if (!valid) out[at] = null;
        else if (direct && data.stride === 1) out[at] = values[i] as number | bigint;
        else out[at] = (vector.get(at) as SortValue) ?? null;
      }
    }
    return out;
  });
}

function compareValues(a: SortValue, b: SortValue): number {
  if (a === b) return 0;
  if (a === null) return -1;
  if (b === null) return 1;
  if (typeof a === 'number' && typeof b === 'number') {
    if (Number.isNaN(a)) return Number.isNaN(b) ? 0 : 1;
    if (Number.isNaN(b)) return -1;
  }
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A row position: batch index and row within it. */
export interface RowRef {
  readonly batch: number;
  readonly row: number;
}

/**
 * The sorted order of all rows (stable: equal keys keep input order), as maximal runs of
 * consecutive rows of one batch, so the writer gets slices rather than single rows.
 */
export function sortedSlices(keys: readonly BatchKeys[]): { batch: number; start: number; length: number }[] {
  const refs: RowRef[] = [];
  keys.forEach((k, batch) => {
    const n = k[0]?.length ?? 0;
    for (let row = 0; row < n; row++) refs.push({ batch, row });
  });
  refs.sort((x, y) => {
    const kx = keys[x.batch] as BatchKeys;
    const ky = keys[y.batch] as BatchKeys;
    for (let c = 0; c < kx.length; c++) {
      const d = compareValues(kx[c]?.[x.row] ?? null, ky[c]?.[y.row] ?? null);
      if (d !== 0) return d;
    }
    return x.batch - y.batch || x.row - y.row;
  });
  return toSlices(refs);
}

/** Bits of each column's scaled rank: 2^31 cells per axis, so a rank fits a 32-bit unsigned integer. */
const Z_BITS = 31;

/**
 * Each row's rank on each column, scaled to Z_BITS bits: the dense rank of its value among the group's distinct
 * values (nulls lowest), stretched so that every column spans the same range — a column of 3 distinct values
 * weighs as much in the curve as one of a million (OPTIMIZE ZORDER BY implementations rank values into range ids for the same reason).
 */
function scaledRanks(keys: readonly BatchKeys[], columns: number): Uint32Array[][] {
  return Array.from({ length: columns }, (_, c) => {
    const distinct = new Set<SortValue>();
    for (const batch of keys) for (const v of batch[c] ?? []) distinct.add(v);
    const ordered = [...distinct].sort(compareValues);
    const rank = new Map(ordered.map((v, i) => [v, i]));
    const scale = 2 ** Z_BITS / Math.max(1, ordered.length);
    return keys.map((batch) =>
      Uint32Array.from(batch[c] ?? [], (v) =>
        Math.min(2 ** Z_BITS - 1, Math.floor((rank.get(v) ?? 0) * scale)),
      ),
    );
  });
}

/** Whether the most significant set bit of `a` is below that of `b` (Chan's trick, for unsigned 32-bit values). */
function lessMsb(a: number, b: number): boolean {
  return a < b && a < (a ^ b) >>> 0;
}

/**
 * The Z-order of all rows (stable: equal cells keep input order) as maximal runs of consecutive rows of one batch:
 * rows are ordered by the interleaved bits of their columns' scaled ranks (the Morton code), compared without
 * building it — the column whose ranks differ in the highest bit decides. Ranges of every column then cluster,
 * so min/max statistics prune on any of them.
 */
export function zOrderSlices(keys: readonly BatchKeys[]): { batch: number; start: number; length: number }[] {
  const columns = keys[0]?.length ?? 0;
  const ranks = scaledRanks(keys, columns);
  const refs: RowRef[] = [];
  keys.forEach((k, batch) => {
    const n = k[0]?.length ?? 0;
    for (let row = 0; row < n; row++) refs.push({ batch, row });
  });
  refs.sort((x, y) => {
    let decisive = -1;
    let highest = 0;
    for (let c = 0; c < columns; c++) {
      const axis = ranks[c] as Uint32Array[];
      const diff = ((axis[x.batch]?.[x.row] ?? 0) ^ (axis[y.batch]?.[y.row] ?? 0)) >>> 0;
      if (decisive === -1 ? diff !== 0 : lessMsb(highest, diff)) {
        decisive = c;
        highest = diff;
      }
    }
    if (decisive === -1) return x.batch - y.batch || x.row - y.row;
    const axis = ranks[decisive] as Uint32Array[];
    return (axis[x.batch]?.[x.row] ?? 0) - (axis[y.batch]?.[y.row] ?? 0);
  });
  return toSlices(refs);
}

function toSlices(refs: readonly RowRef[]): { batch: number; start: number; length: number }[] {
  const slices: { batch: number; start: number; length: number }[] = [];
  for (const r of refs) {
    const last = slices.at(-1);
    if (last !== undefined && last.batch === r.batch && last.start + last.length === r.row) last.length++;
    else slices.push({ batch: r.batch, start: r.row, length: 1 });
  }
  return slices;
}
