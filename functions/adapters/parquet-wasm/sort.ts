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
  const slices: { batch: number; start: number; length: number }[] = [];
  for (const r of refs) {
    const last = slices.at(-1);
    if (last !== undefined && last.batch === r.batch && last.start + last.length === r.row) last.length++;
    else slices.push({ batch: r.batch, start: r.row, length: 1 });
  }
  return slices;
}
