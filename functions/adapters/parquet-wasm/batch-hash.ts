// Fingerprinting of parquet-wasm record batches: zero-copy through the Arrow C Data Interface in wasm memory,
// or through Arrow IPC and arrow-js (the reference path, the tests' oracle); both feed the same kernels: equal rows hash equal.
// And the rewrite's fingerprint of either kind: ordered per-column digests per output, or the row multiset.

import { type Table, tableFromIPC } from 'apache-arrow';
import type { RecordBatch as WasmRecordBatch } from 'parquet-wasm';
import * as pw from 'parquet-wasm';
import {
  type ArrowColumn,
  columnsOfBatch,
  type FingerprintKind,
  type GroupFingerprint,
  MultisetHash,
  type OrderedSegment,
  OrderedSegments,
  type StitchedSegment,
  toGroupFingerprint,
  toOrderedFingerprint,
} from '../../core/fingerprint/fingerprint.js';
import { projectColumns } from '../../core/fingerprint/projected-columns.js';
import { addColumnRows } from '../../core/fingerprint/row-hash.js';
import type { ColumnProjection } from '../../core/projection.js';
import { FfiLayoutUnsupported, hashWasmBatchFfi, withWasmBatchColumns } from './ffi-hash.js';

/**
 * Copies a wasm record batch out as an Arrow JS table through Arrow IPC, without consuming it (a
 * slice is consumed, not the original). Slower than FFI views, but a separate decoder of the
 * batch's memory (arrow-rs's IPC writer, arrow-js's reader): the oracle the FFI walker is tested
 * against, and the fallback for layouts the walker does not read.
 */
export function wasmBatchToTable(batch: WasmRecordBatch): Table {
  return tableFromIPC(batch.slice(0, batch.numRows).intoIPCStream());
}

/** Adds a wasm record batch's rows to `acc` through Arrow IPC and arrow-js (the reference path). */
export function hashWasmBatchIpc(acc: MultisetHash, batch: WasmRecordBatch): void {
  if (batch.numRows === 0) return;
  for (const b of wasmBatchToTable(batch).batches) acc.addBatch(b);
}

/**
 * Adds a wasm record batch's rows to `acc` without consuming the batch: zero-copy through the C
 * Data Interface, or through Arrow IPC for the rare layouts the FFI walker does not read. Both
 * give the same hash.
 */
export function hashWasmBatch(acc: MultisetHash, batch: WasmRecordBatch): void {
  try {
    hashWasmBatchFfi(acc, batch, pw.wasmMemory());
  } catch (err) {
    if (!(err instanceof FfiLayoutUnsupported)) throw err;
    hashWasmBatchIpc(acc, batch);
  }
}

/** Receives a batch's columns for the ordered digest: rows `offset .. offset + rows` of each. */
export type ColumnSink = (columns: readonly ArrowColumn[], offset: number, rows: number) => void;

/** Hands a wasm record batch's columns to `sink` through Arrow IPC and arrow-js (the reference path). */
export function columnsOfWasmBatchIpc(batch: WasmRecordBatch, sink: ColumnSink): void {
  if (batch.numRows === 0) return;
  for (const b of wasmBatchToTable(batch).batches) sink(columnsOfBatch(b), 0, b.numRows);
}

/**
 * Hands a wasm record batch's columns to `sink` without consuming the batch: as zero-copy views on
 * wasm memory, or through Arrow IPC for the layouts the FFI walker does not read. The sink sees the
 * same logical values either way, so it computes the same digest.
 */
export function columnsOfWasmBatch(batch: WasmRecordBatch, sink: ColumnSink): void {
  try {
    withWasmBatchColumns(batch, pw.wasmMemory(), sink);
  } catch (err) {
    if (!(err instanceof FfiLayoutUnsupported)) throw err;
    columnsOfWasmBatchIpc(batch, sink);
  }
}

/** What one output's rows add to a group fingerprint (a worker's, in verify or a parallel rewrite). */
export type OutputFingerprint =
  | {
      readonly kind: 'multiset-v1';
      readonly rows: number;
      readonly hash: string;
      readonly nullCounts: Readonly<Record<string, number>>;
    }
  | { readonly kind: 'ordered-columns-v1'; readonly segment: OrderedSegment }
  /** Decoded and counted, not hashed (verify of a stitched output, proven from bytes instead). */
  | { readonly kind: 'rows-only'; readonly rows: number };

/**
 * The rewrite's fingerprint of the rows it read, of the kind the rewrite needs: ordered when rows
 * keep their order (one segment per output, cut where the outputs are cut), multiset when sorted.
 * Batches come in read order; runs and outputs written elsewhere (workers) come in output order.
 */
export interface RewriteFingerprint {
  readonly kind: FingerprintKind;
  /** Rows read so far. */
  readonly rows: number;
  /**
   * Adds every row of a batch, in read order: with `projection`, the rows as projected (the batch is the input's as
   * decoded; the projection is applied to its columns here, independently of the batch the rewrite writes).
   */
  add(batch: WasmRecordBatch, projection?: ColumnProjection): void;
  /** The next rows belong to a new run, cut into outputs of these row counts. */
  startRun(quotas: readonly number[]): void;
  endRun(): void;
  /** An output fingerprinted elsewhere (a worker's), in output order. */
  addOutput(part: OutputFingerprint): void;
  /** A stitched output, in output order: the source row groups it copies, to be proven by verify. */
  addStitched(segment: StitchedSegment): void;
  /** Each output's rows, in output order, where the kind knows them (ordered). */
  outputRows(): readonly number[] | undefined;
  result(schemaKeys: Iterable<string>): GroupFingerprint;
}

/**
 * @param derivedColumns Columns the rewrite sets per output (`RewriteOptions.derivedColumns`): left out of the
 *   ordered digests and null counts, as verify leaves them out of the outputs'. Only with the ordered kind (the
 *   rewrite refuses them with a sort).
 */
export function rewriteFingerprint(
  kind: FingerprintKind,
  derivedColumns: readonly string[] = [],
): RewriteFingerprint {
  if (kind === 'multiset-v1') {
    if (derivedColumns.length > 0) throw new Error('derived columns in a multiset fingerprint');
    return multisetFingerprint();
  }
  return orderedFingerprint(derivedColumns);
}

/** `sink` seeing every column but `derivedColumns` (by top-level name). */
export function withoutColumns(sink: ColumnSink, derivedColumns: readonly string[]): ColumnSink {
  if (derivedColumns.length === 0) return sink;
  return (columns, offset, n) =>
    sink(
      columns.filter((c) => !derivedColumns.includes(c.name)),
      offset,
      n,
    );
}

/** `sink` seeing a batch's columns projected (see core/fingerprint/projected-columns.ts). */
function projectedSink(sink: ColumnSink, projection: ColumnProjection): ColumnSink {
  return (columns, offset, n) => sink(projectColumns(columns, projection, offset + n), offset, n);
}

function multisetFingerprint(): RewriteFingerprint {
  const acc = new MultisetHash();
  return {
    kind: 'multiset-v1',
    get rows() {
      return acc.rows;
    },
    add: (batch, projection) => {
      // A projected input (a sorted rewrite of files of several schemas) is hashed row by row as projected from its
      // columns as decoded, independently of the batch the rewrite writes, as the ordered kind digests it.
      if (projection === undefined) hashWasmBatch(acc, batch);
      else
        columnsOfWasmBatch(batch, (columns, offset, n) =>
          addColumnRows(acc, projectColumns(columns, projection, offset + n), offset, n),
        );
    },
    startRun: () => undefined,
    endRun: () => undefined,
    addOutput: (part) => {
      if (part.kind !== 'multiset-v1') throw new Error(`a ${part.kind} output in a multiset fingerprint`);
      acc.merge(part);
    },
    addStitched: () => {
      // A multiset is taken over rows read; stitching never runs with a sort, the only multiset rewrite.
      throw new Error('a stitched output in a multiset fingerprint');
    },
    outputRows: () => undefined,
    result: (keys) => toGroupFingerprint(acc, keys),
  };
}

function orderedFingerprint(derivedColumns: readonly string[]): RewriteFingerprint {
  const segments = new OrderedSegments();
  /** Stitched outputs, each with the number of digest segments before it (its place in output order). */
  const stitched: { readonly after: number; readonly segment: StitchedSegment }[] = [];
  let rows = 0;
  const sink = withoutColumns((columns, offset, n) => segments.add(columns, offset, n), derivedColumns);
  const all = (): (OrderedSegment | StitchedSegment)[] => {
    segments.endRun();
    const out: (OrderedSegment | StitchedSegment)[] = [];
    let next = 0;
    for (const [i, digest] of segments.segments.entries()) {
      while (stitched[next] !== undefined && (stitched[next]?.after as number) <= i) {
        out.push((stitched[next++] as { segment: StitchedSegment }).segment);
      }
      out.push(digest);
    }
    for (const s of stitched.slice(next)) out.push(s.segment);
    return out;
  };
  return {
    kind: 'ordered-columns-v1',
    get rows() {
      return rows;
    },
    add: (batch, projection) => {
      columnsOfWasmBatch(batch, projection === undefined ? sink : projectedSink(sink, projection));
      rows += batch.numRows;
    },
    startRun: (quotas) => segments.startRun(quotas),
    endRun: () => segments.endRun(),
    addOutput: (part) => {
      if (part.kind !== 'ordered-columns-v1')
        throw new Error(`a ${part.kind} output in an ordered fingerprint`);
      segments.push(part.segment);
      rows += part.segment.rows;
    },
    addStitched: (segment) => {
      segments.endRun();
      stitched.push({ after: segments.segments.length, segment });
      rows += segment.rows;
    },
    outputRows: () => all().map((s) => s.rows),
    result: (keys) => toOrderedFingerprint(all(), keys),
  };
}
