// Unit tests of the trigger for Iceberg tables: over generated partitions and rewriteDataFiles settings, the policy
// (resolved for the table as the profiler resolves it, counters kept as the profiler keeps them) says a partition is
// due exactly when the plan would plan a group; the decision says why in the options' names; the quiet window and
// cooldown hold as for Hive; Hive and Delta tables keep the policy's own size checks.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type RewriteDataFilesOptions,
  resolveRewriteOptions,
} from '../../../../../functions/core/formats/iceberg/rewrite-options.js';
import { planIcebergPartition } from '../../../../../functions/core/formats/iceberg/rewrite-plan.js';
import type { PlanInputFile } from '../../../../../functions/core/planning.js';
import {
  decide,
  isSmallUnderPolicy,
  type PartitionState,
  type Policy,
} from '../../../../../functions/core/policy.js';
import { resolveTablePolicy } from '../../../../../functions/core/table-config.js';

const MINUTE = 60_000;
const NOW = Date.UTC(2024, 2, 1, 12);

function icebergPolicy(options: RewriteDataFilesOptions | undefined): Policy {
  return resolveTablePolicy({
    format: 'iceberg',
    ...(options === undefined ? {} : { rewriteDataFiles: options }),
  });
}

/** The counters the profiler keeps for these sizes, each file classified by the table's policy as its event is. */
function counters(
  sizes: readonly number[],
  policy: Policy,
  extra: Partial<PartitionState> = {},
): PartitionState {
  const small = sizes.filter((s) => isSmallUnderPolicy(s, policy));
  return {
    fileCount: sizes.length,
    totalBytes: sizes.reduce((n, s) => n + s, 0),
    smallFileCount: small.length,
    smallFileBytes: small.reduce((n, s) => n + s, 0),
    state: 'idle',
    ...extra,
  };
}

function planGroups(sizes: readonly number[], options: RewriteDataFilesOptions): number {
  const files: PlanInputFile[] = sizes.map((size, i) => ({
    key: `data/f${String(i).padStart(3, '0')}.parquet`,
    size,
    etag: '',
    rows: 10,
    schemaFingerprint: 'schema-a',
  }));
  const resolved = resolveRewriteOptions(options, { engineGroupCapBytes: Number.MAX_SAFE_INTEGER });
  return planIcebergPartition({ table: 't', partition: 'data', files, snapshot: { listedAt: 1 } }, resolved)
    .groups.length;
}

/** Valid rewriteDataFiles settings around a small target, so generated partitions cross every threshold. */
const optionsArb: fc.Arbitrary<RewriteDataFilesOptions> = fc
  .record({
    target: fc.integer({ min: 200, max: 4000 }),
    minRatio: fc.option(fc.double({ min: 0.05, max: 0.95, noNaN: true }), { nil: undefined }),
    minInputFiles: fc.option(fc.integer({ min: 1, max: 9 }), { nil: undefined }),
    rewriteAll: fc.option(fc.boolean(), { nil: undefined }),
  })
  .map(({ target, minRatio, minInputFiles, rewriteAll }) => ({
    'target-file-size-bytes': target,
    ...(minRatio === undefined ? {} : { 'min-file-size-bytes': Math.floor(target * minRatio) }),
    ...(minInputFiles === undefined ? {} : { 'min-input-files': minInputFiles }),
    ...(rewriteAll === undefined ? {} : { 'rewrite-all': rewriteAll }),
  }));

describe('the trigger of an Iceberg table', () => {
  it('finds a partition due exactly when planIcebergPartition with the same options plans a group', () => {
    fc.assert(
      fc.property(
        optionsArb,
        // Sizes as fractions of max-file-size-bytes (at most it: files over it are outside what the counters see).
        fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 14 }),
        (options, fractions) => {
          // Prepare
          const max = resolveRewriteOptions(options, { engineGroupCapBytes: 1 }).maxFileSizeBytes;
          const sizes = fractions.map((f) => Math.max(1, Math.floor(f * max)));
          const policy = icebergPolicy(options);

          // Act
          const decision = decide(counters(sizes, policy), policy, NOW);

          // Assess
          expect(decision.compact).toBe(planGroups(sizes, options) > 0);
        },
      ),
      { numRuns: 400 },
    );
  });

  it('agrees with the plan at Iceberg’s defaults: 512 MiB target, small below 384 MiB, 5 input files', () => {
    // Prepare
    const MiB = 1024 * 1024;
    const policy = icebergPolicy(undefined);
    const partitions = [
      Array.from({ length: 5 }, () => 10 * MiB),
      Array.from({ length: 4 }, () => 10 * MiB),
      [300 * MiB, 300 * MiB],
      [384 * MiB, 384 * MiB, 384 * MiB, 384 * MiB, 384 * MiB],
      [383 * MiB],
    ];

    // Act
    const verdicts = partitions.map((sizes) => decide(counters(sizes, policy), policy, NOW).compact);

    // Assess
    expect(verdicts).toEqual(partitions.map((sizes) => planGroups(sizes, {}) > 0));
    expect(verdicts).toEqual([true, false, true, false, false]);
  });

  it('takes the table’s targetFileSizeMB as target-file-size-bytes, under its rewriteDataFiles, as a run’s plan does', () => {
    // Prepare: 3 files of 400 KiB are below 75 % of a 1 MiB target and together over it; at 512 MiB, too few.
    const KiB = 1024;
    const sizes = [400 * KiB, 400 * KiB, 400 * KiB];
    const byMiB = resolveTablePolicy({ format: 'iceberg', targetFileSizeMB: 1 });
    const optionWins = resolveTablePolicy({
      format: 'iceberg',
      targetFileSizeMB: 1,
      rewriteDataFiles: { 'target-file-size-bytes': 512 * 1024 * KiB },
    });

    // Act
    const byMiBDecision = decide(counters(sizes, byMiB), byMiB, NOW);
    const optionDecision = decide(counters(sizes, optionWins), optionWins, NOW);

    // Assess
    expect(byMiBDecision.compact).toBe(planGroups(sizes, { 'target-file-size-bytes': 1024 * KiB }) > 0);
    expect(byMiBDecision.compact).toBe(true);
    expect(optionDecision.compact).toBe(
      planGroups(sizes, { 'target-file-size-bytes': 512 * 1024 * KiB }) > 0,
    );
    expect(optionDecision.compact).toBe(false);
  });

  it('explains the verdict with the option names and numbers the plan uses', () => {
    // Prepare
    const policy = icebergPolicy({ 'target-file-size-bytes': 1000, 'min-input-files': 5 });
    const few = counters([100, 100, 100, 100, 900], policy);
    const many = counters([100, 100, 100, 100, 100], policy);
    const large = counters([700, 700], policy);

    // Act
    const [fewReason, manyReason, largeReason] = [few, many, large].map(
      (state) => decide(state, policy, NOW).reasons[1],
    );

    // Assess
    expect(fewReason).toBe(
      '4 files below min-file-size-bytes 750 B: 4 < min-input-files 5 and 400 B ≤ target-file-size-bytes 1000 B',
    );
    expect(manyReason).toBe(
      '5 files below min-file-size-bytes 750 B: 5 ≥ min-input-files 5 or 500 B ≤ target-file-size-bytes 1000 B',
    );
    expect(largeReason).toBe(
      '2 files below min-file-size-bytes 750 B: 2 < min-input-files 5 or 1.4 KiB > target-file-size-bytes 1000 B',
    );
  });

  it('replaces the policy’s two size checks by the one rule, keeping every other check', () => {
    // Prepare
    const policy = icebergPolicy({ 'target-file-size-bytes': 1000 });

    // Act
    const decision = decide(counters([100, 100, 100, 100, 100], policy), policy, NOW);

    // Assess
    expect(decision.compact).toBe(true);
    expect(decision.reasons).toEqual([
      'state idle',
      '5 files below min-file-size-bytes 750 B: 5 ≥ min-input-files 5 or 500 B ≤ target-file-size-bytes 1000 B',
      'no write recorded: quiet',
      'never compacted: no cooldown',
      'no partition date: look-back not applied',
    ]);
  });

  it('waits out the quiet window and the cooldown of a due partition, saying when it is eligible', () => {
    // Prepare
    const policy = icebergPolicy({ 'target-file-size-bytes': 1000 });
    const sizes = [100, 100, 100, 100, 100];
    const hot = counters(sizes, policy, { lastWriteAt: NOW - 5 * MINUTE });
    const cooling = counters(sizes, policy, { lastCompactedAt: NOW - 60 * MINUTE });

    // Act
    const hotDecision = decide(hot, policy, NOW);
    const coolingDecision = decide(cooling, policy, NOW);

    // Assess
    expect(hotDecision.compact).toBe(false);
    expect(hotDecision.eligibleAt).toBe(NOW - 5 * MINUTE + policy.quietMinutes * MINUTE);
    expect(hotDecision.reasons).toContain(`quiet for 5 min < ${policy.quietMinutes} min`);
    expect(coolingDecision.compact).toBe(false);
    expect(coolingDecision.eligibleAt).toBe(NOW - 60 * MINUTE + policy.cooldownMinutes * MINUTE);
  });

  it('counts a file as small below min-file-size-bytes, not at it, and every file with rewrite-all', () => {
    // Prepare
    const sized = icebergPolicy({ 'target-file-size-bytes': 1000, 'min-file-size-bytes': 400 });
    const all = icebergPolicy({ 'target-file-size-bytes': 1000, 'rewrite-all': true });

    // Act
    const verdicts = [399, 400].map((size) => isSmallUnderPolicy(size, sized));
    const allVerdict = isSmallUnderPolicy(5000, all);

    // Assess
    expect(verdicts).toEqual([true, false]);
    expect(allVerdict).toBe(true);
  });

  it('is never due for options the plan would refuse, and says so instead of failing every table', () => {
    // Prepare: min-file-size-bytes over Iceberg's default target of 512 MiB's max.
    const policy = icebergPolicy({ 'min-file-size-bytes': 2 * 1024 * 1024 * 1024 });

    // Act
    const decision = decide(counters([100, 100, 100, 100, 100, 100], policy), policy, NOW);

    // Assess
    expect(decision.compact).toBe(false);
    expect(decision.eligibleAt).toBeUndefined();
    expect(decision.reasons[1]).toMatch(/^rewriteDataFiles cannot be planned \(.*min-file-size-bytes/);
  });
});

describe('the trigger of Hive and Delta tables', () => {
  it('keeps the policy’s own size checks: no format rule, the same decision as before', () => {
    // Prepare
    const hive = resolveTablePolicy({ format: 'parquet' });
    const delta = resolveTablePolicy({ format: 'delta' });
    const state = counters([1000, 1000, 1000, 1000, 1000], hive);

    // Act
    const decision = decide(state, hive, NOW);

    // Assess
    expect(hive.formatRule).toBeUndefined();
    expect(delta.formatRule).toBeUndefined();
    expect(decision.reasons.slice(1, 3)).toEqual([
      '5 small files ≥ 5',
      'small-file ratio 100% ≥ 40% or average size 1000 B < 96.0 MiB',
    ]);
  });
});
