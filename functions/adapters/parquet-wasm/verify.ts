// Independent verification of a group's outputs: re-reads every output from the store and recomputes
// the fingerprint from those bytes alone, decoded by the engine workers' own readers and hashed in wasm
// memory (hash-output.ts); core/verify decides whether it matches the inputs'.

import { parquetMetadata } from 'hyparquet';
import pLimit from 'p-limit';
import { VerificationError } from '../../core/errors.js';
import {
  FINGERPRINT_KINDS,
  type FingerprintKind,
  fingerprintKindOf,
  type GroupFingerprint,
  MultisetHash,
  type OrderedSegment,
  schemaKeyOf,
  toGroupFingerprint,
  toOrderedFingerprint,
} from '../../core/fingerprint/fingerprint.js';
import { parseFooter, readFooterBytes } from '../../core/parquet/footer.js';
import { assertOutputsMatch } from '../../core/verify/verify.js';
import type { ObjectStore } from '../../ports/object-store.js';
import type { VerificationReport, VerifyOptions } from '../../ports/parquet-engine.js';
import { type HasherPool, workerHashers } from './parallel.js';

/**
 * Rows per decoded batch. Smaller batches shrink the verifier's wasm heap but cost more time per
 * batch (measured when batches still went through Arrow IPC: 32,768 rows, ~25 % more), and
 * verification is not where the peak RSS is (docs: Engine).
 */
const DEFAULT_BATCH_ROWS = 65_536;

/**
 * Re-reads `outputs` and compares with `expected`: total rows, each output's footer row count,
 * schema identity (footer schema + key-value metadata + field ids), per-column null counts and
 * the row hash of the kind `expected` records — each output's rows in order (`outputs` in the order
 * they were written), or the group's row multiset. Verification reads through the store, not from
 * any state the rewrite kept, so a corrupted upload, a lost part or a writer bug shows up here.
 *
 * @throws VerificationError listing every difference; at once, before reading anything, for a kind
 * this engine does not compute.
 */
export async function verifyOutputs(
  store: ObjectStore,
  outputs: readonly { key: string; size: number }[],
  expected: GroupFingerprint,
  options: VerifyOptions = {},
): Promise<VerificationReport> {
  const kind = fingerprintKindOf(expected);
  if (!(FINGERPRINT_KINDS as readonly string[]).includes(kind)) {
    throw new VerificationError(`the fingerprint is of kind ${kind}, which this engine cannot recompute`, {
      problems: [`fingerprint kind: ${kind} is not one of ${FINGERPRINT_KINDS.join(', ')}`],
    });
  }
  const batchRows = options.batchRows ?? DEFAULT_BATCH_ROWS;
  // Always on engine workers, even one: parquet-wasm's streaming reader (the only one that reads an
  // output by ranges, without holding it whole) traps on a page it cannot decode, which would hang
  // or crash this thread; a worker dies instead and the output is reported corrupt.
  const workers = Math.max(1, Math.min(options.workers ?? 1, outputs.length));
  const pool = workerHashers(workers);
  try {
    return await compare(store, outputs, expected, kind as FingerprintKind, batchRows, workers, pool);
  } finally {
    await pool.close();
  }
}

/** Reads each output's footer and hashes its rows on `pool`, `workers` outputs at a time; compares with `expected`. */
async function compare(
  store: ObjectStore,
  outputs: readonly { key: string; size: number }[],
  expected: GroupFingerprint,
  kind: FingerprintKind,
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
        // One read of the footer for both parsers (it used to be read again for hyparquet).
        const { size, tail } = await readFooterBytes(store, output.key, output.size);
        const footer = parseFooter(output.key, size, tail);
        const meta = parquetMetadata(
          tail.buffer.slice(tail.byteOffset, tail.byteOffset + tail.byteLength) as ArrayBuffer,
          { geoparquet: false },
        );
        schemaKeys.push(schemaKeyOf(meta));
        // The footer just read goes along: the worker's reader would otherwise fetch it again. Only the
        // footer: what lies before it (page indexes, data) is the worker's to fetch, as for any reader.
        const footerBytes = tail.subarray(tail.length - footer.metadataLength - 8);
        const hashed = await pool.hash(
          store,
          { key: output.key, size: output.size, tail: footerBytes },
          batchRows,
          kind,
        );
        const rows = hashed.rows;
        if (rows !== footer.rows) {
          problems.push(`${output.key}: footer says ${footer.rows} rows, ${rows} were read`);
        }
        return hashed.fingerprint;
      }),
    ),
  );
  // Promise.all keeps `outputs`' order, which is what ordered segments are compared in.
  let actual: GroupFingerprint;
  if (kind === 'multiset-v1') {
    const total = new MultisetHash();
    for (const part of perOutput) {
      if (part.kind !== 'multiset-v1')
        throw new Error(`verify: a ${part.kind} output for a multiset fingerprint`);
      total.merge(part);
    }
    actual = toGroupFingerprint(total, schemaKeys);
  } else {
    const segments: OrderedSegment[] = perOutput.map((part) => {
      if (part.kind !== 'ordered-columns-v1')
        throw new Error(`verify: a ${part.kind} output for an ordered fingerprint`);
      return part.segment;
    });
    actual = toOrderedFingerprint(segments, schemaKeys);
  }
  assertOutputsMatch(expected, actual, problems);
  return {
    outputs: outputs.length,
    rows: actual.rows,
    bytes: outputs.reduce((n, o) => n + o.size, 0),
    fingerprint: actual,
  };
}
