// Independent verification of a group's outputs: re-reads every output from the store and recomputes
// the fingerprint from those bytes alone, on engine workers — or, for a stitched output, proves from its bytes
// and its sources' that it is the row groups it claims (stitched-proof.ts); core/verify decides the match.

import { basename } from 'node:path';
import pLimit from 'p-limit';
import { CorruptInputError, VerificationError } from '../../core/errors.js';
import {
  FINGERPRINT_KINDS,
  type FingerprintKind,
  fingerprintKindOf,
  type GroupFingerprint,
  isStitchedSegment,
  MultisetHash,
  type OrderedSegment,
  SEGMENT_KINDS,
  type StitchedSegment,
  schemaKeyOf,
  toGroupFingerprint,
  toOrderedFingerprint,
} from '../../core/fingerprint/fingerprint.js';
import { type FooterBytes, parseFooterWithMetadata, readFooterBytes } from '../../core/parquet/footer.js';
import { assertOutputsMatch } from '../../core/verify/verify.js';
import type { ObjectStore } from '../../ports/object-store.js';
import type { VerificationReport, VerifyOptions } from '../../ports/parquet-engine.js';
import type { OutputFingerprint } from './batch-hash.js';
import { type HasherPool, workerHashers } from './parallel.js';
import { StitchedProver } from './stitched-proof.js';

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
 * they were written), or the group's row multiset. A stitched output (`stitched-v1` segment) is proven
 * instead — footers and byte ranges against its sources as stored (`options.sources`, at the ETags the
 * segment records) — and still decoded whole, its rows counted. Verification reads through the store, not
 * from any state the rewrite kept, so a corrupted upload, a lost part or a writer bug shows up here.
 *
 * @throws VerificationError listing every difference; at once, before reading anything, for a kind or
 * segment kind this engine does not check.
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
  const unknown = (expected.kind === 'ordered-columns-v1' ? expected.segments : [])
    .map((s) => (s as { kind?: unknown }).kind)
    .filter((k) => k !== undefined && !(SEGMENT_KINDS as readonly unknown[]).includes(k));
  if (unknown.length > 0) {
    throw new VerificationError(
      `the fingerprint has segments of kind ${unknown.join(', ')}, which this engine cannot check`,
      {
        problems: unknown.map((k) => `segment kind: ${String(k)} is not one of ${SEGMENT_KINDS.join(', ')}`),
      },
    );
  }
  const batchRows = options.batchRows ?? DEFAULT_BATCH_ROWS;
  // Always on engine workers, even one: parquet-wasm's streaming reader (the only one that reads an
  // output by ranges, without holding it whole) traps on a page it cannot decode, which would hang
  // or crash this thread; a worker dies instead and the output is reported corrupt.
  const workers = Math.max(1, Math.min(options.workers ?? 1, outputs.length));
  const pool = workerHashers(workers);
  try {
    const prover = new StitchedProver(options.sources ?? store, store);
    return await compare(store, outputs, expected, kind as FingerprintKind, batchRows, workers, pool, prover);
  } finally {
    await pool.close();
  }
}

/** What a derived column holds in the output stored at `key` (the rule of `DERIVED_COLUMN_VALUES`). */
function derivedValue(rule: 'output-file-name', key: string): string {
  if (rule !== 'output-file-name') throw new VerificationError(`unknown derived column rule ${String(rule)}`);
  return basename(key);
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
  prover: StitchedProver,
): Promise<VerificationReport> {
  const limit = pLimit(workers);
  const schemaKeys: string[] = [];
  const problems: string[] = [];
  // Stitched outputs (by the fingerprint's word, which the proof then holds them to) are proven from bytes;
  // they are still decoded whole below, so an output no reader can read fails however its bytes compare.
  const claims = outputs.map((_, i) => {
    const s = expected.kind === 'ordered-columns-v1' ? expected.segments[i] : undefined;
    return s !== undefined && isStitchedSegment(s) ? s : undefined;
  });
  // Where the rewrite digested an output in parts (its row groups encoded on several workers), the output's rows are
  // digested cut at the same rows: the recorded cuts say only where, the rows and their digests must still match.
  const cutsOf = (i: number): readonly number[] | undefined => {
    const s = expected.kind === 'ordered-columns-v1' ? expected.segments[i] : undefined;
    return s !== undefined && !isStitchedSegment(s) ? s.cuts : undefined;
  };
  /** The output decoded whole by the engine (footer rows checked), its schema key noted, its rows hashed (not a stitched one's). */
  const decodeOutput = async (
    output: { key: string; size: number },
    stitched: boolean,
    footerRead: Promise<FooterBytes>,
    cuts: readonly number[] | undefined,
  ) => {
    // One read of the footer for both parsers, the worker's reader and a stitched output's proof.
    const { size, tail } = await footerRead;
    const { footer, metadata } = parseFooterWithMetadata(output.key, size, tail);
    schemaKeys.push(schemaKeyOf(metadata, expected.derived?.footerKeys));
    // The footer just read goes along: the worker's reader would otherwise fetch it again. Only the
    // footer: what lies before it (page indexes, data) is the worker's to fetch, as for any reader.
    const footerBytes = tail.subarray(tail.length - footer.metadataLength - 8);
    // A stitched output's values are proven from bytes: decoded and counted here, not hashed again.
    const hashed = await pool.hash(
      store,
      { key: output.key, size: output.size, tail: footerBytes },
      batchRows,
      stitched ? 'rows-only' : kind,
      // Each derived value is recomputed from the output's own key, never taken from the fingerprint.
      (expected.derived?.columns ?? []).map((d) => ({
        column: d.column,
        value: derivedValue(d.value, output.key),
      })),
      stitched || kind !== 'ordered-columns-v1' ? undefined : cuts,
    );
    for (const p of hashed.problems) problems.push(`${output.key}: ${p}`);
    const rows = hashed.rows;
    if (rows !== footer.rows) {
      problems.push(`${output.key}: footer says ${footer.rows} rows, ${rows} were read`);
    }
    return hashed;
  };
  const perOutput = await Promise.all(
    outputs.map((output, i) =>
      limit(async () => {
        const claim = claims[i];
        const footerRead = readFooterBytes(store, output.key, output.size);
        // Awaited (and its failure reported) by decodeOutput; this only keeps an early rejection from going unhandled.
        footerRead.catch(() => undefined);
        const proven =
          claim === undefined
            ? Promise.resolve([])
            : prover
                .prove(output, claim, footerRead)
                .catch((err: unknown) => [`stitched output cannot be proven (${(err as Error).message})`]);
        let read: { rows: number; fingerprint: OutputFingerprint };
        try {
          read = await decodeOutput(output, claim !== undefined, footerRead, cutsOf(i));
        } catch (err) {
          // A stitched output that does not decode fails with what its proof found, which says where.
          if (claim === undefined || !(err instanceof CorruptInputError)) throw err;
          problems.push(`${output.key}: cannot be read back (${err.reason})`);
          read = { rows: -1, fingerprint: { kind: 'rows-only', rows: -1 } };
        }
        const rows = read.rows;
        for (const p of await proven) problems.push(`${output.key}: ${p}`);
        if (claim === undefined) return read.fingerprint;
        // Proven (or failed, in `problems`): the segment holds the rows decoded and the sources checked.
        const segment: StitchedSegment = { ...claim, rows };
        return { kind: 'stitched-v1' as const, segment };
      }),
    ),
  );
  const stitched = claims.filter((c): c is StitchedSegment => c !== undefined);
  if (stitched.length > 0) problems.push(...(await prover.finish(stitched)));
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
    const segments: (OrderedSegment | StitchedSegment)[] = perOutput.map((part) => {
      if (part.kind === 'stitched-v1') return part.segment;
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
