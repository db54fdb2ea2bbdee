import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../../functions/core/errors.js';
import {
  formatBytes,
  MB,
  nearestRankPercentile,
  priorityOf,
  profilePartition,
  SIZE_BUCKETS,
} from '../../../functions/core/stats.js';

const KiB = 1024;
const MiB = 1024 * KiB;
const T = 128 * MiB;
const sizes = (...values: number[]) => values.map((size) => ({ size }));

describe('profilePartition', () => {
  it('returns zeros and LOW for an empty partition', () => {
    // Prepare
    const files: { size: number }[] = [];
    // Act
    const profile = profilePartition(files, { targetFileSizeBytes: T });
    // Assess
    expect(profile).toMatchObject({
      count: 0,
      totalBytes: 0,
      avgBytes: 0,
      p50Bytes: 0,
      p95Bytes: 0,
      minBytes: 0,
      maxBytes: 0,
      smallFileCount: 0,
      smallFileBytes: 0,
      smallFileRatio: 0,
      priority: 'LOW',
    });
    expect(profile.histogram.every((b) => b.count === 0 && b.bytes === 0)).toBe(true);
  });

  it('computes totals, extremes and nearest-rank percentiles regardless of input order', () => {
    // Prepare: 1..20 KiB shuffled
    const values = [7, 3, 20, 1, 15, 9, 2, 18, 11, 5, 4, 13, 6, 17, 10, 8, 19, 12, 14, 16].map(
      (k) => k * KiB,
    );
    // Act
    const profile = profilePartition(sizes(...values), { targetFileSizeBytes: T });
    // Assess: p50 = rank ceil(0.5·20)=10 → 10 KiB; p95 = rank ceil(0.95·20)=19 → 19 KiB
    expect(profile.count).toBe(20);
    expect(profile.totalBytes).toBe(210 * KiB);
    expect(profile.avgBytes).toBe(10.5 * KiB);
    expect(profile.p50Bytes).toBe(10 * KiB);
    expect(profile.p95Bytes).toBe(19 * KiB);
    expect(profile.minBytes).toBe(KiB);
    expect(profile.maxBytes).toBe(20 * KiB);
  });

  it('counts a file as small strictly below 0.75 of the target', () => {
    // Prepare: 0.75·T = 96 MiB exactly
    const files = sizes(96 * MiB - 1, 96 * MiB, 200 * MiB);
    // Act
    const profile = profilePartition(files, { targetFileSizeBytes: T });
    // Assess
    expect(profile.smallFileCount).toBe(1);
    expect(profile.smallFileBytes).toBe(96 * MiB - 1);
    expect(profile.smallFileRatio).toBeCloseTo(1 / 3, 12);
  });

  it('puts each size in its documented bucket, lower bound inclusive', () => {
    // Prepare
    const files = sizes(0, 64 * KiB - 1, 64 * KiB, MiB, 8 * MiB, 127 * MiB, 128 * MiB, 1024 * MiB);
    // Act
    const profile = profilePartition(files, { targetFileSizeBytes: T });
    // Assess
    const counts = Object.fromEntries(profile.histogram.map((b) => [b.label, b.count]));
    expect(counts).toEqual({
      '<64KiB': 2,
      '<1MiB': 1,
      '<8MiB': 1,
      '<32MiB': 1,
      '<64MiB': 0,
      '<128MiB': 1,
      '<256MiB': 1,
      '<1GiB': 0,
      '>=1GiB': 1,
    });
    expect(profile.histogram.map((b) => b.upperBytes)).toEqual(SIZE_BUCKETS.map((b) => b.upperBytes));
    expect(profile.histogram[1]?.lowerBytes).toBe(64 * KiB);
  });

  it('rates 180,000 files of 8 KB as HIGH', () => {
    // Prepare
    const files = Array.from({ length: 180_000 }, () => ({ size: 8_000 }));
    // Act
    const profile = profilePartition(files, { targetFileSizeBytes: T });
    // Assess
    expect(profile.priority).toBe('HIGH');
    expect(profile.smallFileRatio).toBe(1);
  });

  it('rejects a non-positive target and negative sizes with InvalidInputError', () => {
    // Prepare
    const good = sizes(1, 2);
    // Act
    const badTarget = () => profilePartition(good, { targetFileSizeBytes: 0 });
    const badSize = () => profilePartition(sizes(1, -1), { targetFileSizeBytes: T });
    // Assess
    expect(badTarget).toThrow(InvalidInputError);
    expect(badSize).toThrow(/file #1 has size -1/);
  });
});

describe('priorityOf', () => {
  it('applies the playbook thresholds strictly, in decimal MB', () => {
    // Prepare
    const cases: [number, number, string][] = [
      [101, 10 * MB - 1, 'HIGH'],
      [100, 1, 'MEDIUM'],
      [101, 10 * MB, 'MEDIUM'],
      [51, 50 * MB - 1, 'MEDIUM'],
      [50, 1, 'LOW'],
      [51, 50 * MB, 'LOW'],
    ];
    // Act
    const results = cases.map(([count, avg]) => priorityOf(count, avg));
    // Assess
    expect(results).toEqual(cases.map(([, , expected]) => expected));
  });
});

describe('nearestRankPercentile', () => {
  it('returns an observed value at rank ceil(p·N)', () => {
    // Prepare
    const sorted = [10, 20, 30, 40];
    // Act
    const results = [0, 25, 26, 50, 95, 100].map((p) => nearestRankPercentile(sorted, p));
    // Assess
    expect(results).toEqual([10, 10, 20, 20, 40, 40]);
  });
});

describe('formatBytes', () => {
  it('uses binary units with one decimal', () => {
    // Prepare
    const values = [812, 20 * KiB, 96 * MiB, 2 * 1024 * MiB];
    // Act
    const text = values.map(formatBytes);
    // Assess
    expect(text).toEqual(['812 B', '20.0 KiB', '96.0 MiB', '2.0 GiB']);
  });
});
