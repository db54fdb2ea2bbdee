// Unit tests of the fragmentation gauges: sums of the partition counters, the small-file ratio by count,
// and "over the trigger" meaning exactly the policy's size checks.
import { describe, expect, it } from 'vitest';
import {
  fragmentationMetrics,
  stuckLeaseMetric,
  tableFragmentation,
} from '../../../functions/core/fragmentation.js';
import { DEFAULT_POLICY } from '../../../functions/core/policy.js';

const MIB = 1024 * 1024;
const part = (fileCount: number, smallCount: number, avgBytes: number) => ({
  fileCount,
  smallCount,
  totalBytes: fileCount * avgBytes,
  smallBytes: smallCount * Math.min(avgBytes, MIB),
});

describe('tableFragmentation', () => {
  it('sums files and small files over the partitions and gives the ratio by count', () => {
    // Prepare
    const partitions = [part(10, 8, MIB), part(30, 2, 200 * MIB)];

    // Act
    const f = tableFragmentation('events', partitions, DEFAULT_POLICY);

    // Assess
    expect(f).toEqual({
      table: 'events',
      partitions: 2,
      totalFiles: 40,
      smallFiles: 10,
      totalBytes: 10 * MIB + 30 * 200 * MIB,
      smallFileRatio: 0.25,
      partitionsOverTrigger: 1,
    });
  });

  it('counts a partition over the trigger by the policy: enough small files and a high ratio or small average', () => {
    // Prepare: min 5 small files, ratio ≥ 40% or average < 96 MiB (0.75 × 128 MiB)
    const partitions = [
      part(5, 5, MIB), // 5 small, 100%: over
      part(4, 4, MIB), // 4 small < 5: not over
      part(20, 5, 200 * MIB), // 5 small but 25% and a large average: not over
      part(20, 5, 50 * MIB), // 25%, but the average is small: over
    ];

    // Act
    const f = tableFragmentation('events', partitions, DEFAULT_POLICY);

    // Assess
    expect(f.partitionsOverTrigger).toBe(2);
  });

  it('follows the table policy override of minInputFiles', () => {
    // Prepare
    const partitions = [part(4, 4, MIB)];

    // Act
    const f = tableFragmentation('events', partitions, { ...DEFAULT_POLICY, minInputFiles: 3 });

    // Assess
    expect(f.partitionsOverTrigger).toBe(1);
  });

  it('leaves the ratio undefined for a table without files', () => {
    // Prepare / Act
    const f = tableFragmentation('empty', [], DEFAULT_POLICY);

    // Assess
    expect(f).toEqual({
      table: 'empty',
      partitions: 0,
      totalFiles: 0,
      smallFiles: 0,
      totalBytes: 0,
      partitionsOverTrigger: 0,
    });
  });
});

describe('fragmentationMetrics', () => {
  it('publishes the gauges under {Table} with the ratio in percent', () => {
    // Prepare
    const f = tableFragmentation('events', [part(10, 8, MIB)], DEFAULT_POLICY);

    // Act
    const metrics = fragmentationMetrics(f);

    // Assess
    const byName = Object.fromEntries(metrics.map((m) => [m.name, m]));
    expect(Object.keys(byName).sort()).toEqual([
      'Partitions',
      'PartitionsOverTrigger',
      'SmallFileRatio',
      'SmallFiles',
      'TotalFiles',
    ]);
    expect(byName.SmallFileRatio).toEqual({
      name: 'SmallFileRatio',
      unit: 'Percent',
      value: 80,
      dimensionSets: [{ Table: 'events' }],
    });
    for (const m of metrics) expect(m.dimensionSets).toEqual([{ Table: 'events' }]);
  });

  it('publishes no ratio for a table without files (no fake 0%)', () => {
    // Prepare / Act
    const metrics = fragmentationMetrics(tableFragmentation('empty', [], DEFAULT_POLICY));

    // Assess
    expect(metrics.map((m) => m.name)).not.toContain('SmallFileRatio');
  });
});

describe('stuckLeaseMetric', () => {
  it('counts stuck leases per table and in total (the alarm watches the total)', () => {
    // Prepare / Act
    const metric = stuckLeaseMetric('events', 2);

    // Assess
    expect(metric).toEqual({
      name: 'StuckLeases',
      unit: 'Count',
      value: 2,
      dimensionSets: [{ Table: 'events' }, {}],
    });
  });
});
