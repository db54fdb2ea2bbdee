// What verification requires of a group's outputs: the fingerprint recomputed from the outputs alone equals
// the inputs' in rows, schema identity, per-column null counts and row multiset hash, else VerificationError.
import { VerificationError } from '../errors.js';
import type { GroupFingerprint } from '../fingerprint/fingerprint.js';

/**
 * Compares the fingerprint an engine recomputed from the stored outputs (`actual`) with the one the
 * rewrite computed over the inputs (`expected`). The rule lives here, not in an engine, so that every
 * engine is held to the same one: a publishable group holds the same multiset of rows, with the same
 * schema and null counts, as its inputs.
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
  if (actual.hash !== expected.hash)
    found.push(`row hash: expected ${expected.hash}, outputs give ${actual.hash}`);
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
