// Independent verification of a group's outputs: re-reads every output from the store, recomputes
// the fingerprint from those bytes alone and throws VerificationError on any difference from the inputs'.

import { parquetMetadata } from 'hyparquet';
import pLimit from 'p-limit';
import type { ObjectStore } from '../../ports/object-store.js';
import { VerificationError } from '../errors.js';
import {
  type GroupFingerprint,
  hashWasmBatchIpc,
  MultisetHash,
  schemaKeyOf,
  toGroupFingerprint,
} from '../fingerprint/fingerprint.js';
import { readFooter } from '../parquet/footer.js';
import { pw } from '../rewrite/wasm.js';

export interface VerificationReport {
  readonly outputs: number;
  readonly rows: number;
  readonly bytes: number;
  /** The fingerprint recomputed from the outputs (equal to the expected one). */
  readonly fingerprint: GroupFingerprint;
}

export interface VerifyOptions {
  /** Outputs read concurrently (default 2). Each holds one row group decoded at a time. */
  readonly concurrency?: number;
  /**
   * Rows per decoded batch (default 65,536). Smaller batches would shrink the verifier's wasm heap
   * and IPC copies (32,768 rows: ~29 → ~23 MB of wasm) but cost ~25% more verification time on the
   * benchmark's set B (per-batch IPC overhead), and verification is not where the peak RSS is.
   */
  readonly batchRows?: number;
}

/**
 * A Blob-shaped view of a stored object: parquet-wasm's async reader asks for byte ranges
 * (footer, then one row group's column chunks at a time), which become ranged GETs — so a
 * 128 MiB output is verified without ever being held whole in memory.
 */
function storeBlob(store: ObjectStore, key: string, size: number, start = 0, end = size): Blob {
  return {
    size: end - start,
    type: '',
    slice(s = 0, e = end - start) {
      const from = start + Math.max(0, s);
      const to = Math.min(end, start + e);
      return storeBlob(store, key, size, from, to);
    },
    async arrayBuffer() {
      if (end <= start) return new ArrayBuffer(0);
      const bytes = await store.getRange(key, start, end - 1);
      // Hand over the store's buffer when the bytes fill it: a copy would double every column
      // chunk read (up to a row group per output in flight) until the GC runs.
      if (bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength) {
        return bytes.buffer as ArrayBuffer;
      }
      return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
    },
  } as unknown as Blob;
}

async function hashOutput(
  store: ObjectStore,
  output: { key: string; size: number },
  acc: MultisetHash,
  batchRows: number,
): Promise<number> {
  const file = await pw.ParquetFile.fromFile(storeBlob(store, output.key, output.size));
  let rows = 0;
  try {
    const stream = (await file.stream({ batchSize: batchRows })) as ReadableStream<pw.RecordBatch>;
    for await (const batch of stream as unknown as AsyncIterable<pw.RecordBatch>) {
      try {
        rows += batch.numRows;
        hashWasmBatchIpc(acc, batch);
      } finally {
        batch.free();
      }
    }
  } finally {
    file.free();
  }
  return rows;
}

/**
 * Re-reads `outputs` and compares with `expected`: total rows, each output's footer row count,
 * schema identity (footer schema + key-value metadata + field ids), per-column null counts and
 * the row multiset hash. Verification reads through the store, not from any state the rewrite
 * kept, so a corrupted upload, a lost part or a writer bug shows up here.
 *
 * @throws VerificationError listing every difference.
 */
export async function verifyOutputs(
  store: ObjectStore,
  outputs: readonly { key: string; size: number }[],
  expected: GroupFingerprint,
  options: VerifyOptions = {},
): Promise<VerificationReport> {
  const limit = pLimit(options.concurrency ?? 2);
  const batchRows = options.batchRows ?? 65_536;
  const schemaKeys: string[] = [];
  const problems: string[] = [];
  const perOutput = await Promise.all(
    outputs.map((output) =>
      limit(async () => {
        const footer = await readFooter(store, output.key, output.size);
        const tailStart = Math.max(0, output.size - footer.metadataLength - 8);
        const tail = await store.getRange(output.key, tailStart, output.size - 1);
        const meta = parquetMetadata(
          tail.buffer.slice(tail.byteOffset, tail.byteOffset + tail.byteLength) as ArrayBuffer,
          {
            geoparquet: false,
          },
        );
        schemaKeys.push(schemaKeyOf(meta));
        const acc = new MultisetHash();
        const rows = await hashOutput(store, output, acc, batchRows);
        if (rows !== footer.rows) {
          problems.push(`${output.key}: footer says ${footer.rows} rows, ${rows} were read`);
        }
        return acc;
      }),
    ),
  );
  const total = new MultisetHash();
  for (const acc of perOutput) {
    total.merge({ hash: acc.digest(), rows: acc.rows, nullCounts: acc.nullCountsRecord() });
  }
  const actual = toGroupFingerprint(total, schemaKeys);
  if (actual.rows !== expected.rows)
    problems.push(`rows: expected ${expected.rows}, outputs hold ${actual.rows}`);
  if (actual.schemaFingerprint !== expected.schemaFingerprint) {
    problems.push(`schema: expected ${expected.schemaFingerprint}, outputs have ${actual.schemaFingerprint}`);
  }
  const columns = new Set([...Object.keys(expected.nullCounts), ...Object.keys(actual.nullCounts)]);
  for (const c of columns) {
    if (expected.nullCounts[c] !== actual.nullCounts[c]) {
      problems.push(
        `null count of ${c}: expected ${expected.nullCounts[c]}, outputs have ${actual.nullCounts[c]}`,
      );
    }
  }
  if (actual.hash !== expected.hash)
    problems.push(`row hash: expected ${expected.hash}, outputs give ${actual.hash}`);
  if (problems.length > 0) {
    throw new VerificationError(
      `${problems.length} difference(s) between inputs and outputs: ${problems.join('; ')}`,
      {
        expected,
        actual,
        problems,
      },
    );
  }
  return {
    outputs: outputs.length,
    rows: actual.rows,
    bytes: outputs.reduce((n, o) => n + o.size, 0),
    fingerprint: actual,
  };
}
