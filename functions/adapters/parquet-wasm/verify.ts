// Independent verification of a group's outputs: re-reads every output from the store and recomputes
// the fingerprint from those bytes alone, on engine workers; core/verify decides whether it matches the inputs'.

import { parquetMetadata } from 'hyparquet';
import pLimit from 'p-limit';
import {
  type GroupFingerprint,
  MultisetHash,
  schemaKeyOf,
  toGroupFingerprint,
} from '../../core/fingerprint/fingerprint.js';
import { readFooter } from '../../core/parquet/footer.js';
import { assertOutputsMatch } from '../../core/verify/verify.js';
import type { ObjectStore } from '../../ports/object-store.js';
import type { VerificationReport, VerifyOptions } from '../../ports/parquet-engine.js';
import { type HasherPool, workerHashers } from './parallel.js';

/**
 * Rows per decoded batch. Smaller batches would shrink the verifier's wasm heap and IPC copies but cost
 * more time in per-batch IPC overhead, and verification is not where the peak RSS is (docs: Engine).
 */
const DEFAULT_BATCH_ROWS = 65_536;

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
  const batchRows = options.batchRows ?? DEFAULT_BATCH_ROWS;
  // Always on engine workers, even one: parquet-wasm's streaming reader (the only one that reads an
  // output by ranges, without holding it whole) traps on a page it cannot decode, which would hang
  // or crash this thread; a worker dies instead and the output is reported corrupt.
  const workers = Math.max(1, Math.min(options.workers ?? 1, outputs.length));
  const pool = workerHashers(workers);
  try {
    return await compare(store, outputs, expected, batchRows, workers, pool);
  } finally {
    await pool.close();
  }
}

/** Reads each output's footer and hashes its rows on `pool`, `workers` outputs at a time; compares with `expected`. */
async function compare(
  store: ObjectStore,
  outputs: readonly { key: string; size: number }[],
  expected: GroupFingerprint,
  batchRows: number,
  workers: number,
  pool: HasherPool,
): Promise<VerificationReport> {
  const limit = pLimit(workers);
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
        const hashed = await pool.hash(store, output, batchRows);
        const acc = new MultisetHash();
        acc.merge(hashed);
        const rows = hashed.rows;
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
  assertOutputsMatch(expected, actual, problems);
  return {
    outputs: outputs.length,
    rows: actual.rows,
    bytes: outputs.reduce((n, o) => n + o.size, 0),
    fingerprint: actual,
  };
}
