// Hashes one Parquet output read by byte ranges (footer, then a row group at a time): this worker's own
// parquet-wasm reader decodes the stored bytes and the shared kernels hash each batch where it lies in wasm
// memory (the C Data walker; Arrow IPC only for layouts it does not read, or when asked, as the tests' oracle).
// Runs in an engine worker (verify), where a trap of parquet-wasm's streaming reader kills only the worker.

import {
  type ArrowColumn,
  columnsOfBatch,
  type FingerprintKind,
  joinSegments,
  MultisetHash,
  OrderedDigest,
  type OrderedSegment,
  OrderedSegments,
} from '../../core/fingerprint/fingerprint.js';
import {
  columnsOfWasmBatch,
  columnsOfWasmBatchIpc,
  hashWasmBatch,
  hashWasmBatchIpc,
  type OutputFingerprint,
  wasmBatchToTable,
  withoutColumns,
} from './batch-hash.js';
import { decodeError, pw } from './wasm.js';

/**
 * How to hash an output: a fingerprint kind, or `rows-only` — decoded whole (so an unreadable output fails)
 * and its rows counted, nothing hashed: for stitched outputs, whose values verify proves from bytes.
 */
export type OutputHashKind = FingerprintKind | 'rows-only';

/**
 * A column the rewrite set per output (`RewriteOptions.derivedColumns`) and the value every row of this output must
 * hold: checked row by row, and left out of the digest (the fingerprint of the inputs left it out too).
 */
export interface ExpectedDerivedColumn {
  readonly column: string;
  readonly value: string;
}

/** Reads bytes [start, end) of an object. */
export type RangeReader = (start: number, end: number) => Promise<Uint8Array>;

/**
 * How decoded batches reach the hash: `ffi` reads them in place in wasm memory (what verify does);
 * `ipc` copies each out through Arrow IPC into arrow-js first — a second, independent reader of the
 * same memory, kept as the oracle the FFI walker is tested against and for before/after measurements.
 */
export type BatchPath = 'ffi' | 'ipc';

/**
 * A Blob-shaped view of bytes [start, end) of an object, for parquet-wasm's ranged async reader
 * (footer first, then a row group's column chunks at a time).
 */
function rangeBlob(read: RangeReader, start: number, end: number): Blob {
  return {
    size: end - start,
    type: '',
    slice(s = 0, e = end - start) {
      return rangeBlob(read, start + Math.max(0, s), Math.min(end, start + e));
    },
    async arrayBuffer() {
      if (end <= start) return new ArrayBuffer(0);
      const bytes = await read(start, end);
      // Hand over the reader's buffer when the bytes fill it: a copy would double every column
      // chunk read (a row group per output in flight) until the GC runs.
      if (bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength) {
        return bytes.buffer as ArrayBuffer;
      }
      return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
    },
  } as unknown as Blob;
}

/**
 * The fingerprint of `kind` of every row of the `size`-byte Parquet object behind `read`, in order,
 * and the rows read. A 128 MiB output is never held whole: parquet-wasm asks for the footer, then one
 * row group's column chunks at a time.
 *
 * What keeps this independent of the writer is the bytes and the reader, not the hash path: the
 * bytes are the stored object's, fetched through `read`, and they are decoded by a reader instance
 * of this call's own (on verify's worker, another wasm instance than the writer's), so whatever the
 * writer got wrong is in the decoded values this hashes. Batches are hashed in place (`ffi`, no IPC
 * copy: that copy was about half of verify's hashing time). That the walker reads every value the
 * way Arrow IPC does — the cross-check verify used to make at run time by going through IPC — is
 * what the FFI property tests prove over generated tables of every type the engine writes.
 *
 * A read that fails is never handed to parquet-wasm as a rejection: its async reader traps
 * ("RuntimeError: unreachable") on one, from a promise callback, which crashes the process (or the
 * worker). The failure is kept, parquet-wasm gets no bytes and fails with an ordinary error, and the
 * kept failure — the store's own, typed error — is what this throws. Bytes that do not decode are a
 * CorruptInputError naming `key` (for verify: an output that cannot be read back).
 */
export async function hashParquetObject(
  key: string,
  read: RangeReader,
  size: number,
  kind: OutputHashKind,
  batchRows: number,
  options: {
    readonly path?: BatchPath;
    /** The object's last bytes, when the caller has them (verify reads the footer first): served from here. */
    readonly tail?: Uint8Array;
    /** Derived columns to check and leave out (ordered kind only): their batches go through Arrow IPC. */
    readonly derived?: readonly ExpectedDerivedColumn[];
    /**
     * Ordered kind only: the rows of each part the rewrite digested the output in (`OrderedSegment.cuts`): the rows
     * are digested cut at the same places and the parts joined (`joinSegments`), as the rewrite joined them.
     */
    readonly cuts?: readonly number[];
  } = {},
): Promise<{
  readonly rows: number;
  readonly fingerprint: OutputFingerprint;
  /** What the derived columns' check found (a count and the first wrong value per column); empty when all hold. */
  readonly problems: readonly string[];
}> {
  const { path = 'ffi', tail } = options;
  const derived = options.derived ?? [];
  if (derived.length > 0 && kind === 'multiset-v1') {
    throw new Error('derived columns are checked only with an ordered fingerprint');
  }
  const wrong = new Map<string, { count: number; first: unknown }>();
  const tailStart = size - (tail?.length ?? 0);
  const multiset = kind === 'multiset-v1' ? new MultisetHash() : undefined;
  const cuts = kind === 'ordered-columns-v1' ? options.cuts : undefined;
  const ordered = kind === 'ordered-columns-v1' && cuts === undefined ? new OrderedDigest() : undefined;
  const parts = cuts === undefined ? undefined : new OrderedSegments();
  parts?.startRun(cuts ?? []);
  let failed: { readonly error: unknown } | undefined;
  const guarded: RangeReader = async (start, end) => {
    if (failed !== undefined) return new Uint8Array(0);
    if (tail !== undefined && start >= tailStart && end <= size) {
      return tail.subarray(start - tailStart, end - tailStart);
    }
    try {
      return await read(start, end);
    } catch (error) {
      failed = { error };
      return new Uint8Array(0);
    }
  };
  const sink = withoutColumns(
    (columns: readonly ArrowColumn[], offset: number, n: number) =>
      parts === undefined ? ordered?.add(columns, offset, n) : parts.add(columns, offset, n),
    derived.map((d) => d.column),
  );
  const digesting = ordered !== undefined || parts !== undefined;
  /** Derived columns checked value by value through arrow-js (a second reader), the rest hashed from the same batch. */
  const checkDerived = (batch: pw.RecordBatch) => {
    if (batch.numRows === 0) return;
    for (const b of wasmBatchToTable(batch).batches) {
      for (const d of derived) {
        const column = b.getChild(d.column);
        for (let r = 0; r < b.numRows; r++) {
          const v = column === null ? undefined : (column.get(r) as unknown);
          if (v === d.value) continue;
          const seen = wrong.get(d.column);
          if (seen === undefined) wrong.set(d.column, { count: 1, first: v });
          else seen.count++;
        }
      }
      sink(columnsOfBatch(b), 0, b.numRows);
    }
  };
  let rows = 0;
  try {
    const file = await pw.ParquetFile.fromFile(rangeBlob(guarded, 0, size));
    try {
      const stream = (await file.stream({ batchSize: batchRows })) as ReadableStream<pw.RecordBatch>;
      for await (const batch of stream as unknown as AsyncIterable<pw.RecordBatch>) {
        try {
          rows += batch.numRows;
          if (multiset !== undefined) (path === 'ffi' ? hashWasmBatch : hashWasmBatchIpc)(multiset, batch);
          else if (digesting && derived.length > 0) checkDerived(batch);
          else if (digesting) (path === 'ffi' ? columnsOfWasmBatch : columnsOfWasmBatchIpc)(batch, sink);
        } finally {
          batch.free();
        }
      }
    } finally {
      file.free();
    }
  } catch (err) {
    throw failed === undefined ? decodeError(key, err) : failed.error;
  }
  if (failed !== undefined) throw failed.error;
  const fingerprint: OutputFingerprint =
    multiset !== undefined
      ? {
          kind: 'multiset-v1',
          rows: multiset.rows,
          hash: multiset.digest(),
          nullCounts: multiset.nullCountsRecord(),
        }
      : ordered !== undefined
        ? { kind: 'ordered-columns-v1', segment: ordered.finish() }
        : parts !== undefined
          ? { kind: 'ordered-columns-v1', segment: joinedParts(parts) }
          : { kind: 'rows-only', rows };
  const problems = derived.flatMap((d) => {
    const w = wrong.get(d.column);
    return w === undefined
      ? []
      : [
          `${w.count} row(s) of derived column ${d.column} differ from ${JSON.stringify(d.value)} (first: ${JSON.stringify(w.first ?? null)})`,
        ];
  });
  return { rows, fingerprint, problems };
}

/**
 * The output's parts joined as the rewrite joined them. Rows beyond the last cut go to the last part, and an output
 * with fewer rows than the cuts has fewer parts: either way the joined digest differs from the rewrite's, as it must.
 */
function joinedParts(parts: OrderedSegments): OrderedSegment {
  parts.endRun();
  return parts.segments.length === 0 ? new OrderedDigest().finish() : joinSegments(parts.segments);
}
