// Proves that stitched outputs are held to the plan, not to the rewrite's word: the sources a fingerprint lists
// must be planned inputs at their planned ETags, each copied whole and once, none with deleted rows, and the
// re-encoded outputs must hold exactly the rows of the planned inputs not copied; and that a recorded
// fingerprint keeps its stitched segments through parsing while a segment of an unknown kind is refused.
import { describe, expect, it } from 'vitest';
import { VerificationError } from '../../../../functions/core/errors.js';
import {
  type FingerprintSegment,
  type GroupFingerprint,
  groupFingerprintSchema,
  type StitchedSegment,
} from '../../../../functions/core/fingerprint/fingerprint.js';
import { assertStitchedSources, type PlannedInput } from '../../../../functions/core/verify/verify.js';

const PLAN: readonly PlannedInput[] = [
  { key: 'small-a', etag: 'ea', rows: 300 },
  { key: 'large-b', etag: 'eb', rows: 2_000 },
  { key: 'large-c', etag: 'ec', rows: 1_500 },
  { key: 'small-d', etag: 'ed', rows: 200 },
];

/** A stitched segment copying `large-b` (two row groups) and `large-c` (one), as the rewrite records it. */
function stitched(sources: StitchedSegment['sources'] = STITCHED_SOURCES): StitchedSegment {
  return { kind: 'stitched-v1', rows: sources.reduce((n, s) => n + s.rows, 0), sources };
}
const STITCHED_SOURCES: StitchedSegment['sources'] = [
  { key: 'large-b', etag: 'eb', rowGroup: 0, rows: 1_000 },
  { key: 'large-b', etag: 'eb', rowGroup: 1, rows: 1_000 },
  { key: 'large-c', etag: 'ec', rowGroup: 0, rows: 1_500 },
];

function fingerprint(segments: readonly FingerprintSegment[]): GroupFingerprint {
  return {
    kind: 'ordered-columns-v1',
    rows: segments.reduce((n, s) => n + s.rows, 0),
    schemaFingerprint: 's',
    nullCounts: {},
    hash: 'h',
    segments,
  };
}

/** The message of the VerificationError `act` throws (a failure if it throws none). */
function problemsOf(act: () => void): string {
  try {
    act();
  } catch (err) {
    expect(err).toBeInstanceOf(VerificationError);
    return (err as Error).message;
  }
  throw new Error('expected a VerificationError');
}

describe('assertStitchedSources', () => {
  it('accepts stitched and re-encoded outputs that cover every planned input exactly once', () => {
    // Prepare
    const f = fingerprint([{ rows: 500, digest: 'd' }, stitched()]);

    // Act
    const act = () => assertStitchedSources(PLAN, f);

    // Assess
    expect(act).not.toThrow();
  });

  it('refuses a source the plan does not have, or has at another ETag', () => {
    // Prepare
    const f = fingerprint([
      { rows: 500, digest: 'd' },
      stitched([
        ...STITCHED_SOURCES.slice(0, 2),
        { key: 'large-c', etag: 'other', rowGroup: 0, rows: 1_500 },
        { key: 'elsewhere', etag: 'ex', rowGroup: 0, rows: 10 },
      ]),
    ]);

    // Act
    const problems = problemsOf(() => assertStitchedSources(PLAN, f));

    // Assess
    expect(problems).toMatch(/large-c copied at ETag other, planned at ec/);
    expect(problems).toMatch(/elsewhere is not an input of the plan/);
  });

  it('refuses an input copied in part, or a row group copied twice', () => {
    // Prepare
    const part = fingerprint([{ rows: 500, digest: 'd' }, stitched(STITCHED_SOURCES.slice(1))]);
    const twice = fingerprint([
      { rows: 500, digest: 'd' },
      stitched([STITCHED_SOURCES[0], ...STITCHED_SOURCES] as StitchedSegment['sources']),
    ]);

    // Act
    const partProblems = problemsOf(() => assertStitchedSources(PLAN, part));
    const twiceProblems = problemsOf(() => assertStitchedSources(PLAN, twice));

    // Assess
    expect(partProblems).toMatch(/large-b: row groups 1 copied/);
    expect(partProblems).toMatch(/large-b: 1000 rows copied, the plan read 2000/);
    expect(twiceProblems).toMatch(/large-b: row groups 0, 0, 1 copied/);
  });

  it('refuses re-encoded outputs that hold other rows than the inputs not copied (one input both ways, or one left out)', () => {
    // Prepare
    const both = fingerprint([{ rows: 500 + 1_500, digest: 'd' }, stitched()]);
    const left = fingerprint([{ rows: 300, digest: 'd' }, stitched()]);

    // Act
    const bothProblems = problemsOf(() => assertStitchedSources(PLAN, both));
    const leftProblems = problemsOf(() => assertStitchedSources(PLAN, left));

    // Assess
    expect(bothProblems).toMatch(
      /re-encoded outputs hold 2000 rows, the 2 planned inputs not copied hold 500/,
    );
    expect(leftProblems).toMatch(/re-encoded outputs hold 300 rows/);
  });

  it('refuses an input with deleted rows copied whole', () => {
    // Prepare
    const plan = PLAN.map((p) => (p.key === 'large-c' ? { ...p, deletes: { rows: 2 } } : p));
    const f = fingerprint([{ rows: 500, digest: 'd' }, stitched()]);

    // Act
    const problems = problemsOf(() => assertStitchedSources(plan, f));

    // Assess
    expect(problems).toMatch(/large-c: has deleted rows but was copied whole/);
  });
});

describe('groupFingerprintSchema with stitched segments', () => {
  it('keeps a stitched segment as recorded and refuses a segment of an unknown kind', () => {
    // Prepare
    const recorded = JSON.parse(JSON.stringify(fingerprint([{ rows: 500, digest: 'd' }, stitched()])));
    const unknown = { ...recorded, segments: [{ kind: 'stitched-v2', rows: 3_500, digest: 'd' }] };

    // Act
    const parsed = groupFingerprintSchema.safeParse(recorded);
    const refused = groupFingerprintSchema.safeParse(unknown);

    // Assess
    expect(parsed.success && parsed.data).toEqual(recorded);
    expect(refused.success).toBe(false);
  });
});
