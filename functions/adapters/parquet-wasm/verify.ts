// Independent verification of a group's outputs: re-reads every output from the store, recomputes
// the fingerprint from those bytes alone and throws VerificationError on any difference from the inputs'.

import { parquetMetadata } from 'hyparquet';
import pLimit from 'p-limit';
import { VerificationError } from '../../core/errors.js';
import {
  type GroupFingerprint,
  MultisetHash,
  schemaKeyOf,
  toGroupFingerprint,
} from '../../core/fingerprint/fingerprint.js';
import { readFooter } from '../../core/parquet/footer.js';
import type { ObjectStore } from '../../ports/object-store.js';
import { type HasherPool, workerHashers } from './parallel.js';

export interface VerificationReport {
  readonly outputs: number;
  readonly rows: number;
  readonly bytes: number;
  /** The fingerprint recomputed from the outputs (equal to the expected one). */
  readonly fingerprint: GroupFingerprint;
}

export interface VerifyOptions {
  /**
   * Rows per decoded batch (default 65,536). Smaller batches would shrink the verifier's wasm heap
   * and IPC copies (32,768 rows: ~29 → ~23 MB of wasm) but cost ~25% more verification time on the
   * benchmark's set B (per-batch IPC overhead), and verification is not where the peak RSS is.
   */
  readonly batchRows?: number;
  /**
   * Engine worker threads hashing outputs (default 1), each with its own wasm instance: a worker
   * decodes and hashes one output at a time while this thread reads the footers and serves the
   * workers' byte ranges from the store. Pass the vCPUs the function has; outputs are verified
   * `workers` at a time.
   */
  readonly workers?: number;
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
  const batchRows = options.batchRows ?? 65_536;
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
