// What verification requires of a group's outputs: the fingerprint recomputed from the outputs alone equals
// the inputs' in rows, schema identity, per-column null counts and row multiset hash, else VerificationError.
import { VerificationError } from '../errors.js';
import { fingerprintKindOf, type GroupFingerprint } from '../fingerprint/fingerprint.js';

/**
 * Compares the fingerprint an engine recomputed from the stored outputs (`actual`) with the one the
 * rewrite computed over the inputs (`expected`). The rule lives here, not in an engine, so that every
 * engine is held to the same one: a publishable group holds the same rows (in the same order, output by
 * output, for an ordered fingerprint; the same multiset for a multiset one), with the same schema and
 * null counts, as its inputs. Hashes of different kinds are never compared: a kind mismatch is a
 * difference, whatever the hashes say.
 *
 * @param problems what the engine found while re-reading (e.g. an output whose footer disagrees with its
 * rows); any of them fails the verification too.
 * @throws VerificationError listing every difference at once.
 */
export function assertOutputsMatch(
  expected: GroupFingerprint,
  actual: GroupFingerprint,
  problems: readonly string[] = [],
): void {
  const found = [...problems];
  if (actual.rows !== expected.rows)
    found.push(`rows: expected ${expected.rows}, outputs hold ${actual.rows}`);
  if (actual.schemaFingerprint !== expected.schemaFingerprint) {
    found.push(`schema: expected ${expected.schemaFingerprint}, outputs have ${actual.schemaFingerprint}`);
  }
  const columns = new Set([...Object.keys(expected.nullCounts), ...Object.keys(actual.nullCounts)]);
  for (const c of columns) {
    if (expected.nullCounts[c] !== actual.nullCounts[c]) {
      found.push(
        `null count of ${c}: expected ${expected.nullCounts[c]}, outputs have ${actual.nullCounts[c]}`,
      );
    }
  }
  const kind = fingerprintKindOf(expected);
  if (fingerprintKindOf(actual) !== kind) {
    found.push(`fingerprint kind: expected ${kind}, outputs were hashed as ${fingerprintKindOf(actual)}`);
  } else if (actual.hash !== expected.hash) {
    found.push(
      `row hash: expected ${expected.hash}, outputs give ${actual.hash}${segmentsDiffering(expected, actual)}`,
    );
  }
  if (found.length > 0) {
    throw new VerificationError(
      `${found.length} difference(s) between inputs and outputs: ${found.join('; ')}`,
      {
        expected,
        actual,
        problems: found,
      },
    );
  }
}

/** For ordered fingerprints, which outputs differ (the row hash line says where to look). */
function segmentsDiffering(expected: GroupFingerprint, actual: GroupFingerprint): string {
  if (expected.kind !== 'ordered-columns-v1' || actual.kind !== 'ordered-columns-v1') return '';
  const e = expected.segments;
  const a = actual.segments;
  if (e.length !== a.length) return ` (${e.length} outputs expected, ${a.length} read)`;
  const differing = e
    .map((s, i) => ({ s, o: a[i], i }))
    .filter(({ s, o }) => o === undefined || o.rows !== s.rows || o.digest !== s.digest)
    .map(({ s, o, i }) =>
      o !== undefined && o.rows !== s.rows
        ? `output ${i}: ${o.rows} rows, expected ${s.rows}`
        : `output ${i}`,
    );
  return differing.length === 0 ? '' : ` (differing: ${differing.join(', ')})`;
}

/**
 * The rows a group's outputs must hold, from its plan alone: each input's footer rows minus the rows its table
 * format deletes; undefined when an input's rows were not recorded (nothing to check against).
 */
export function expectedLiveRows(
  inputs: readonly { readonly rows?: number; readonly deletes?: { readonly rows: number } }[],
): number | undefined {
  let rows = 0;
  for (const input of inputs) {
    if (input.rows === undefined) return undefined;
    rows += input.rows - (input.deletes?.rows ?? 0);
  }
  return rows;
}

/**
 * Holds verification independent of how the rewrite dropped deleted rows: the fingerprint it recorded, and
 * the outputs verify re-read, must both hold `rows(inputs) − |deleted|` rows, counted from the plan. The
 * fingerprint comparison alone cannot see a rewrite that ignored an input's deletes, or dropped one row too
 * many: it fingerprints what it kept, and the outputs hold exactly that.
 * @throws VerificationError naming both counts.
 */
export function assertLiveRows(expected: number, fingerprintRows: number, outputRows: number): void {
  const found: string[] = [];
  if (fingerprintRows !== expected) {
    found.push(`the rewrite kept ${fingerprintRows} rows`);
  }
  if (outputRows !== expected) found.push(`the outputs hold ${outputRows} rows`);
  if (found.length > 0) {
    throw new VerificationError(
      `the inputs hold ${expected} rows once their deleted rows are dropped, but ${found.join(' and ')}`,
      { expected, fingerprintRows, outputRows, problems: found },
    );
  }
}
