import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../../functions/core/errors.js';
import {
  DEFAULT_POLICY,
  decide,
  type PartitionState,
  partitionDateFromValues,
  resolvePolicy,
} from '../../../functions/core/policy.js';

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
const MiB = 1024 * 1024;
const NOW = Date.UTC(2024, 0, 20, 12, 0, 0);

/** A partition that passes every check with the default policy: 10 of 10 files small, quiet 1 h. */
function partition(overrides: Partial<PartitionState> = {}): PartitionState {
  return {
    fileCount: 10,
    totalBytes: 10 * MiB,
    smallFileCount: 10,
    smallFileBytes: 10 * MiB,
    lastWriteAt: NOW - 60 * MINUTE,
    state: 'idle',
    ...overrides,
  };
}

describe('decide', () => {
  it('compacts a quiet, idle partition full of small files and states every check', () => {
    // Prepare
    const p = partition({ lastCompactedAt: NOW - 7 * 60 * MINUTE, partitionDate: NOW - 2 * DAY });
    // Act
    const decision = decide(p, DEFAULT_POLICY, NOW);
    // Assess
    expect(decision).toEqual({
      compact: true,
      reasons: [
        'state idle',
        '10 small files ≥ 5',
        'small-file ratio 100% ≥ 40% or average size 1.0 MiB < 96.0 MiB',
        'quiet for 60 min ≥ 15 min',
        'last compacted 420 min ago ≥ cooldown 360 min',
        'partition 2 days old ≤ look-back 30 days',
      ],
    });
  });

  it('starts a partition whose files a table service has due whatever minInputFiles and the share, still waiting out the quiet window', () => {
    // Prepare: one due file slice (a base file and one log) among large files, under the default minInputFiles 5
    const due = partition({
      fileCount: 20,
      totalBytes: 20 * 200 * MiB,
      smallFileCount: 2,
      smallFileBytes: 2 * MiB,
      serviceDueFiles: 2,
    });
    const dueButHot = { ...due, lastWriteAt: NOW - 5 * MINUTE };
    const sameWithoutService = { ...due, serviceDueFiles: 0 };
    // Act
    const decision = decide(due, DEFAULT_POLICY, NOW);
    const hot = decide(dueButHot, DEFAULT_POLICY, NOW);
    const plain = decide(sameWithoutService, DEFAULT_POLICY, NOW);
    // Assess
    expect(decision.compact).toBe(true);
    expect(decision.reasons[1]).toBe(
      "a table service of the table's format is due on 2 file(s): size checks not applied (minInputFiles 5)",
    );
    expect(hot).toMatchObject({ compact: false, eligibleAt: NOW + 10 * MINUTE });
    expect(plain.compact).toBe(false);
    expect(plain.reasons).toContain('2 small files < 5');
  });

  it('compacts with exactly minInputFiles small files and not with one fewer', () => {
    // Prepare
    const five = partition({ fileCount: 5, smallFileCount: 5 });
    const four = partition({ fileCount: 4, smallFileCount: 4 });
    // Act
    const atThreshold = decide(five, DEFAULT_POLICY, NOW);
    const below = decide(four, DEFAULT_POLICY, NOW);
    // Assess
    expect(atThreshold.compact).toBe(true);
    expect(below.compact).toBe(false);
    expect(below.reasons).toContain('4 small files < 5');
    expect(below.eligibleAt).toBeUndefined();
  });

  it('accepts a small-file ratio of exactly 40% even when the average is large', () => {
    // Prepare: 4 of 10 small, average 200 MiB (not small); 5 of 13 is 38.5%
    const ratio40 = partition({ fileCount: 10, smallFileCount: 4, totalBytes: 2000 * MiB });
    const below = partition({ fileCount: 13, smallFileCount: 5, totalBytes: 2600 * MiB });
    // Act
    const atFour = decide(ratio40, { ...DEFAULT_POLICY, minInputFiles: 4 }, NOW);
    const belowRatio = decide(below, DEFAULT_POLICY, NOW);
    // Assess
    expect(atFour.compact).toBe(true);
    expect(atFour.reasons[2]).toBe('small-file ratio 40% ≥ 40% or average size 200.0 MiB ≥ 96.0 MiB');
    expect(belowRatio.compact).toBe(false);
    expect(belowRatio.reasons[2]).toBe('small-file ratio 38.5% < 40% and average size 200.0 MiB ≥ 96.0 MiB');
  });

  it('accepts a low ratio when the average size is below 0.75·T, strictly', () => {
    // Prepare: 5 of 20 small (25%); average exactly 96 MiB vs one byte less
    const atMin = partition({ fileCount: 20, smallFileCount: 5, totalBytes: 20 * 96 * MiB });
    const belowMin = partition({ fileCount: 20, smallFileCount: 5, totalBytes: 20 * 96 * MiB - 20 });
    // Act
    const notSmall = decide(atMin, DEFAULT_POLICY, NOW);
    const small = decide(belowMin, DEFAULT_POLICY, NOW);
    // Assess
    expect(notSmall.compact).toBe(false);
    expect(small.compact).toBe(true);
  });

  it('waits until the partition has been quiet for exactly quietMinutes and says when to come back', () => {
    // Prepare
    const lastWriteAt = NOW - 15 * MINUTE;
    // Act
    const atQuiet = decide(partition({ lastWriteAt }), DEFAULT_POLICY, NOW);
    const justBefore = decide(partition({ lastWriteAt: lastWriteAt + 1 }), DEFAULT_POLICY, NOW);
    const threeMinutes = decide(partition({ lastWriteAt: NOW - 3 * MINUTE }), DEFAULT_POLICY, NOW);
    // Assess
    expect(atQuiet.compact).toBe(true);
    expect(justBefore.compact).toBe(false);
    expect(justBefore.reasons).toContain('quiet for 14 min < 15 min');
    expect(justBefore.eligibleAt).toBe(NOW + 1);
    expect(threeMinutes.reasons).toContain('quiet for 3 min < 15 min');
    expect(threeMinutes.eligibleAt).toBe(NOW + 12 * MINUTE);
  });

  it('waits out the cooldown to the millisecond and reports the later of quiet and cooldown', () => {
    // Prepare
    const cooled = partition({ lastCompactedAt: NOW - 360 * MINUTE });
    const warm = partition({ lastCompactedAt: NOW - 360 * MINUTE + 1 });
    const both = partition({ lastCompactedAt: NOW - 300 * MINUTE, lastWriteAt: NOW - 5 * MINUTE });
    // Act
    const atCooldown = decide(cooled, DEFAULT_POLICY, NOW);
    const inCooldown = decide(warm, DEFAULT_POLICY, NOW);
    const waitingForBoth = decide(both, DEFAULT_POLICY, NOW);
    // Assess
    expect(atCooldown.compact).toBe(true);
    expect(inCooldown.compact).toBe(false);
    expect(inCooldown.reasons).toContain('last compacted 359 min ago < cooldown 360 min');
    expect(inCooldown.eligibleAt).toBe(NOW + 1);
    expect(waitingForBoth.eligibleAt).toBe(NOW + 60 * MINUTE);
  });

  it('gives no eligibleAt when something other than time also fails', () => {
    // Prepare
    const p = partition({ lastWriteAt: NOW - MINUTE, state: 'scheduled' });
    // Act
    const decision = decide(p, DEFAULT_POLICY, NOW);
    // Assess
    expect(decision.compact).toBe(false);
    expect(decision.reasons[0]).toBe('state scheduled: a run is already queued or in progress');
    expect(decision.eligibleAt).toBeUndefined();
  });

  it('refuses any state but idle', () => {
    // Prepare
    const states = ['idle', 'scheduled', 'compacting'] as const;
    // Act
    const results = states.map((state) => decide(partition({ state }), DEFAULT_POLICY, NOW).compact);
    // Assess
    expect(results).toEqual([true, false, false]);
  });

  it('compacts inside the look-back window up to exactly lookbackDays, and not beyond', () => {
    // Prepare
    const edge = partition({ partitionDate: NOW - 30 * DAY });
    const old = partition({ partitionDate: NOW - 30 * DAY - 1 });
    // Act
    const atEdge = decide(edge, DEFAULT_POLICY, NOW);
    const tooOld = decide(old, DEFAULT_POLICY, NOW);
    // Assess
    expect(atEdge.compact).toBe(true);
    expect(tooOld.compact).toBe(false);
    expect(tooOld.reasons).toContain('partition 30 days old > look-back 30 days');
    expect(tooOld.eligibleAt).toBeUndefined();
  });

  it('tolerates a partition date up to one day ahead and refuses one further in the future', () => {
    // Prepare
    const tomorrow = partition({ partitionDate: NOW + DAY });
    const later = partition({ partitionDate: NOW + DAY + 1 });
    // Act
    const tolerated = decide(tomorrow, DEFAULT_POLICY, NOW);
    const refused = decide(later, DEFAULT_POLICY, NOW);
    // Assess
    expect(tolerated.compact).toBe(true);
    expect(refused.compact).toBe(false);
    expect(refused.reasons[5]).toMatch(/in the future/);
  });

  it('passes the time checks when nothing was recorded, and says so', () => {
    // Prepare
    const p = partition({ lastWriteAt: undefined });
    // Act
    const decision = decide(p, DEFAULT_POLICY, NOW);
    // Assess
    expect(decision.compact).toBe(true);
    expect(decision.reasons.slice(3)).toEqual([
      'no write recorded: quiet',
      'never compacted: no cooldown',
      'no partition date: look-back not applied',
    ]);
  });
});

describe('resolvePolicy', () => {
  it('overrides only the fields given and keeps the defaults', () => {
    // Prepare
    const overrides = { quietMinutes: 60, minInputFiles: undefined };
    // Act
    const policy = resolvePolicy(DEFAULT_POLICY, overrides);
    // Assess
    expect(policy).toEqual({ ...DEFAULT_POLICY, quietMinutes: 60 });
  });

  it('names every invalid field in one InvalidInputError', () => {
    // Prepare
    const overrides = { minInputFiles: 1, smallFileRatioThreshold: 2 };
    // Act
    const act = () => resolvePolicy(DEFAULT_POLICY, overrides);
    // Assess
    expect(act).toThrow(InvalidInputError);
    expect(act).toThrow(/policy\.minInputFiles[\s\S]*policy\.smallFileRatioThreshold/);
  });
});

describe('partitionDateFromValues', () => {
  it('reads single-column formats as UTC start of the period', () => {
    // Prepare
    const cases = [
      { value: '2024-01-15', format: 'yyyy-MM-dd', expected: Date.UTC(2024, 0, 15) },
      { value: '20240115', format: 'yyyyMMdd', expected: Date.UTC(2024, 0, 15) },
      { value: '2024-01-15-07', format: 'yyyy-MM-dd-HH', expected: Date.UTC(2024, 0, 15, 7) },
      { value: '2024011507', format: 'yyyyMMddHH', expected: Date.UTC(2024, 0, 15, 7) },
      { value: '2024-02', format: 'yyyy-MM', expected: Date.UTC(2024, 1, 1) },
    ] as const;
    // Act
    const results = cases.map((c) =>
      partitionDateFromValues([{ name: 'dt', value: c.value }], { column: 'dt', format: c.format }),
    );
    // Assess
    expect(results).toEqual(cases.map((c) => c.expected));
  });

  it('reads Hive year/month/day columns, unpadded as Spark writes them', () => {
    // Prepare: the layout of the delta-0.8.0-partitioned fixture
    const values = [
      { name: 'year', value: '2020' },
      { name: 'month', value: '2' },
      { name: 'day', value: '5' },
    ];
    // Act
    const date = partitionDateFromValues(values, { format: 'year/month/day' });
    const renamed = partitionDateFromValues(
      [
        { name: 'y', value: '2020' },
        { name: 'm', value: '02' },
        { name: 'd', value: '05' },
      ],
      { column: 'y, m, d', format: 'year/month/day' },
    );
    // Assess
    expect(date).toBe(Date.UTC(2020, 1, 5));
    expect(renamed).toBe(Date.UTC(2020, 1, 5));
  });

  it('returns undefined for missing, null, malformed or impossible dates', () => {
    // Prepare
    const spec = { column: 'dt', format: 'yyyy-MM-dd' } as const;
    // Act
    const results = [
      partitionDateFromValues([], spec),
      partitionDateFromValues([{ name: 'dt', value: null }], spec),
      partitionDateFromValues([{ name: 'dt', value: '2024-1-15' }], spec),
      partitionDateFromValues([{ name: 'dt', value: '2024-02-30' }], spec),
      partitionDateFromValues([{ name: 'dt', value: '2023-02-29' }], spec),
      partitionDateFromValues([{ name: 'year', value: '2020' }], { format: 'year/month/day' }),
    ];
    // Assess
    expect(results).toEqual([undefined, undefined, undefined, undefined, undefined, undefined]);
    expect(partitionDateFromValues([{ name: 'dt', value: '2024-02-29' }], spec)).toBe(Date.UTC(2024, 1, 29));
  });
});
