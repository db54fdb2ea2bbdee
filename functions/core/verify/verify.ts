// What verification requires of a group's outputs: the fingerprint recomputed from the outputs alone equals
// the inputs' in rows, schema identity, per-column null counts and row hash, and stitched outputs copy exactly
// the planned inputs not re-encoded, else VerificationError.
import { VerificationError } from '../errors.js';
import {
  fingerprintKindOf,
  type GroupFingerprint,
  isStitchedSegment,
  type StitchedSegment,
} from '../fingerprint/fingerprint.js';

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
    .filter(({ s, o }) => o === undefined || JSON.stringify(o) !== JSON.stringify(s))
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

/** A planned input as the journal keeps it: what a stitched output's sources are checked against. */
export interface PlannedInput {
  readonly key: string;
  readonly etag: string;
  readonly rows?: number;
  readonly deletes?: { readonly rows: number };
}

/**
 * Holds a group's stitched outputs to its plan, not to the rewrite's word: every source row group a stitched
 * segment lists is of a planned input at its planned ETag (the version verify read), each input is copied
 * whole (its row groups 0…n−1, each once, over all outputs: its planned rows), none with deleted rows (a
 * copied row group keeps all its rows), and the re-encoded outputs hold the rows of exactly the planned inputs
 * not stitched — so stitched and re-encoded inputs together cover every planned input once. That the listed
 * row groups are the sources' and the outputs' bytes are theirs is the engine's proof (verifyOutputs).
 * @throws VerificationError listing every difference.
 */
export function assertStitchedSources(planned: readonly PlannedInput[], fingerprint: GroupFingerprint): void {
  if (fingerprint.kind !== 'ordered-columns-v1') return;
  const stitched = fingerprint.segments.filter((s): s is StitchedSegment => isStitchedSegment(s));
  if (stitched.length === 0) return;
  const byKey = new Map(planned.map((p) => [p.key, p]));
  const found: string[] = [];
  const copied = new Map<string, { rows: number; groups: number[] }>();
  for (const [i, segment] of fingerprint.segments.entries()) {
    if (!isStitchedSegment(segment)) continue;
    const listed = segment.sources.reduce((n, r) => n + r.rows, 0);
    if (listed !== segment.rows) {
      found.push(`output ${i}: ${segment.rows} rows, but its sources list ${listed}`);
    }
    for (const ref of segment.sources) {
      const plan = byKey.get(ref.key);
      if (plan === undefined) {
        found.push(`output ${i}: ${ref.key} is not an input of the plan`);
        continue;
      }
      if (ref.etag !== plan.etag) {
        found.push(`output ${i}: ${ref.key} copied at ETag ${ref.etag}, planned at ${plan.etag}`);
      }
      const seen = copied.get(ref.key) ?? { rows: 0, groups: [] };
      seen.rows += ref.rows;
      seen.groups.push(ref.rowGroup);
      copied.set(ref.key, seen);
    }
  }
  for (const [key, seen] of copied) {
    const plan = byKey.get(key) as PlannedInput;
    const whole = seen.groups.every((g, j) => g === j);
    if (!whole)
      found.push(`${key}: row groups ${seen.groups.join(', ')} copied, not each of 0…n−1 once in order`);
    if ((plan.deletes?.rows ?? 0) > 0) found.push(`${key}: has deleted rows but was copied whole`);
    if (plan.rows !== undefined && seen.rows !== plan.rows) {
      found.push(`${key}: ${seen.rows} rows copied, the plan read ${plan.rows}`);
    }
  }
  const rest = planned.filter((p) => !copied.has(p.key));
  const restRows = expectedLiveRows(rest);
  const digestRows = fingerprint.segments
    .filter((s) => !isStitchedSegment(s))
    .reduce((n, s) => n + s.rows, 0);
  if (restRows !== undefined && digestRows !== restRows) {
    found.push(
      `the re-encoded outputs hold ${digestRows} rows, the ${rest.length} planned inputs not copied hold ${restRows}`,
    );
  }
  if (found.length > 0) {
    throw new VerificationError(`stitched outputs do not match the plan: ${found.join('; ')}`, {
      problems: found,
    });
  }
}
