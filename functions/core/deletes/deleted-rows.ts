// The rows a table format deletes from one data file without rewriting it (Delta deletion vectors, Iceberg
// position deletes and DVs), as positions: 0-based row indexes within the file, held as sorted ranges.
import { CompactorError } from '../errors.js';

/**
 * Positions this representation holds: below 2^32 − 1, so a range end fits a Uint32. No Parquet file a
 * compactor rewrites has four billion rows; a position that large is a damaged deletion vector.
 */
export const MAX_DELETED_POSITION = 0xffff_fffe;

/** A set of deleted positions that is not a valid set (unsorted input aside: that is sorted here). */
export class InvalidDeletedRowsError extends CompactorError {}

/** One contiguous piece of a batch: rows `offset .. offset + length` of it. */
export interface BatchSlice {
  readonly offset: number;
  readonly length: number;
}

/**
 * Deleted row positions of one file as sorted, disjoint, non-adjacent half-open ranges
 * `[start, end)`, packed in one Uint32Array (`start0, end0, start1, end1, …`).
 *
 * Why ranges in a typed array: files have millions of rows, and deletes come both as long runs (a
 * DELETE by a clustered predicate) and scattered (a MERGE): a run costs 8 bytes whatever its length, a
 * lone position 8 bytes too — never a JS number or BigInt per position. The array is also what is
 * posted to engine workers (a class does not survive structured cloning; its array does).
 */
export class DeletedRows {
  /** Number of deleted positions. */
  readonly count: number;

  private constructor(readonly ranges: Uint32Array) {
    let count = 0;
    for (let i = 0; i < ranges.length; i += 2) count += (ranges[i + 1] as number) - (ranges[i] as number);
    this.count = count;
  }

  /** No deleted rows. */
  static readonly NONE = new DeletedRows(new Uint32Array(0));

  /**
   * From packed ranges as `ranges` exposes them (e.g. received by a worker).
   * @throws InvalidDeletedRowsError when they are not sorted, disjoint, non-adjacent and non-empty.
   */
  static fromRanges(ranges: Uint32Array): DeletedRows {
    if (ranges.length % 2 !== 0) throw new InvalidDeletedRowsError('deleted row ranges come in pairs');
    let previousEnd = -1;
    for (let i = 0; i < ranges.length; i += 2) {
      const start = ranges[i] as number;
      const end = ranges[i + 1] as number;
      if (end <= start || start <= previousEnd) {
        throw new InvalidDeletedRowsError(
          `deleted row range ${i / 2} [${start}, ${end}) is empty, out of order or touches the one before`,
        );
      }
      previousEnd = end;
    }
    return new DeletedRows(ranges);
  }

  /** From positions in any order (duplicates allowed). @throws InvalidDeletedRowsError for a bad position. */
  static of(positions: Iterable<number>): DeletedRows {
    const sorted = Float64Array.from(positions).sort();
    const builder = new DeletedRowsBuilder();
    let previous: number | undefined;
    for (const p of sorted) {
      if (p !== previous) builder.add(p);
      previous = p;
    }
    return builder.build();
  }

  /** The last deleted position, or undefined when none is. */
  get last(): number | undefined {
    return this.ranges.length === 0 ? undefined : (this.ranges[this.ranges.length - 1] as number) - 1;
  }

  /** Whether `position` is deleted. */
  has(position: number): boolean {
    const i = this.firstRangeEndingAfter(position);
    return i < this.ranges.length && (this.ranges[i] as number) <= position;
  }

  /** How many positions of `[from, to)` are deleted. */
  countIn(from: number, to: number): number {
    let n = 0;
    for (const s of this.deletedIn(from, to - from)) n += s.length;
    return n;
  }

  /**
   * The pieces of a batch holding rows `[from, from + rows)` of the file that are deleted, relative to
   * the batch, in order. Found by a binary search, so a batch costs O(log ranges + pieces).
   */
  deletedIn(from: number, rows: number): BatchSlice[] {
    const to = from + rows;
    const out: BatchSlice[] = [];
    for (let i = this.firstRangeEndingAfter(from); i < this.ranges.length; i += 2) {
      const start = this.ranges[i] as number;
      if (start >= to) break;
      const a = Math.max(start, from);
      const b = Math.min(this.ranges[i + 1] as number, to);
      out.push({ offset: a - from, length: b - a });
    }
    return out;
  }

  /**
   * The pieces of a batch holding rows `[from, from + rows)` of the file that are kept, relative to the
   * batch, in order: the complement of `deletedIn`. One piece covering the batch when none is deleted.
   */
  keptIn(from: number, rows: number): BatchSlice[] {
    const out: BatchSlice[] = [];
    let at = 0;
    for (const d of this.deletedIn(from, rows)) {
      if (d.offset > at) out.push({ offset: at, length: d.offset - at });
      at = d.offset + d.length;
    }
    if (at < rows) out.push({ offset: at, length: rows - at });
    return out;
  }

  /** Index (even) of the first range whose end is after `position`; `ranges.length` when none. */
  private firstRangeEndingAfter(position: number): number {
    let lo = 0;
    let hi = this.ranges.length / 2;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.ranges[mid * 2 + 1] as number) <= position) lo = mid + 1;
      else hi = mid;
    }
    return lo * 2;
  }
}

/**
 * Builds a DeletedRows from ascending positions or ranges (a Roaring bitmap's order), coalescing
 * neighbours, growing its array by doubling.
 */
export class DeletedRowsBuilder {
  private ranges = new Uint32Array(64);
  private length = 0;

  /** Adds `[start, end)` (default: the single position `start`); must not start before the last end. */
  add(start: number, end = start + 1): this {
    if (!Number.isInteger(start) || start < 0 || end - 1 > MAX_DELETED_POSITION || end <= start) {
      throw new InvalidDeletedRowsError(
        `deleted row position ${end <= start ? start : end - 1} is not a row index this engine can hold (0 to ${MAX_DELETED_POSITION})`,
      );
    }
    const lastEnd = this.length === 0 ? -1 : (this.ranges[this.length - 1] as number);
    if (start < lastEnd) {
      throw new InvalidDeletedRowsError(
        `deleted row positions are not ascending (${start} after ${lastEnd - 1})`,
      );
    }
    if (start === lastEnd) {
      this.ranges[this.length - 1] = end;
      return this;
    }
    if (this.length + 2 > this.ranges.length) {
      const grown = new Uint32Array(this.ranges.length * 2);
      grown.set(this.ranges);
      this.ranges = grown;
    }
    this.ranges[this.length++] = start;
    this.ranges[this.length++] = end;
    return this;
  }

  build(): DeletedRows {
    return DeletedRows.fromRanges(this.ranges.slice(0, this.length));
  }
}
