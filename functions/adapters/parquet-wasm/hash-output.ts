// Hashes one Parquet output read by byte ranges (footer, then a row group at a time) by the independent
// path: parquet-wasm decodes, Arrow IPC carries each batch to arrow-js, the shared kernels hash. Runs in
// an engine worker (verify), where a trap of parquet-wasm's streaming reader kills only the worker.

import { type FingerprintKind, MultisetHash, OrderedDigest } from '../../core/fingerprint/fingerprint.js';
import { columnsOfWasmBatchIpc, hashWasmBatchIpc, type OutputFingerprint } from './batch-hash.js';
import { decodeError, pw } from './wasm.js';

/**
 * How to hash an output: a fingerprint kind, or `rows-only` — decoded whole (so an unreadable output fails)
 * and its rows counted, nothing hashed: for stitched outputs, whose values verify proves from bytes.
 */
export type OutputHashKind = FingerprintKind | 'rows-only';

/** Reads bytes [start, end) of an object. */
export type RangeReader = (start: number, end: number) => Promise<Uint8Array>;

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
 * and the rows read. Through Arrow IPC, not the zero-copy C Data walker the rewrite uses: a walker
 * bug shows up as a mismatch. A 128 MiB output is never held whole: parquet-wasm asks for the footer, then one
 * row group's column chunks at a time.
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
): Promise<{ readonly rows: number; readonly fingerprint: OutputFingerprint }> {
  const multiset = kind === 'multiset-v1' ? new MultisetHash() : undefined;
  const ordered = kind === 'ordered-columns-v1' ? new OrderedDigest() : undefined;
  let failed: { readonly error: unknown } | undefined;
  const guarded: RangeReader = async (start, end) => {
    if (failed !== undefined) return new Uint8Array(0);
    try {
      return await read(start, end);
    } catch (error) {
      failed = { error };
      return new Uint8Array(0);
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
          if (multiset !== undefined) hashWasmBatchIpc(multiset, batch);
          else if (ordered !== undefined)
            columnsOfWasmBatchIpc(batch, (columns, offset, n) => ordered.add(columns, offset, n));
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
        : { kind: 'rows-only', rows };
  return { rows, fingerprint };
}
