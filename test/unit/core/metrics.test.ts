// Unit tests of the metric catalog: decisions are counted per outcome (never per partition), and the
// catalog's namespace, service and names are the ones the dashboard reads.
import { describe, expect, it } from 'vitest';
import {
  decisionMetrics,
  METRIC,
  METRICS_NAMESPACE,
  METRICS_SERVICE,
} from '../../../functions/core/metrics.js';

const ref = (table: string, partition: string) => ({ table, partition });

describe('decisionMetrics', () => {
  it('counts decisions per outcome over all tables, under {Outcome}', () => {
    // Prepare
    const outcomes = [
      { ref: ref('events', 'date=1'), action: 'waiting' as const },
      { ref: ref('events', 'date=2'), action: 'waiting' as const },
      { ref: ref('events', 'date=3'), action: 'started' as const },
      { ref: ref('clicks', 'date=1'), action: 'waiting' as const },
    ];

    // Act
    const metrics = decisionMetrics(outcomes);

    // Assess
    expect(metrics).toEqual([
      { name: 'Decisions', unit: 'Count', value: 1, dimensionSets: [{ Outcome: 'started' }] },
      { name: 'Decisions', unit: 'Count', value: 3, dimensionSets: [{ Outcome: 'waiting' }] },
    ]);
  });

  it('publishes nothing when no partition was decided', () => {
    // Prepare / Act
    const metrics = decisionMetrics([]);

    // Assess
    expect(metrics).toEqual([]);
  });

  it('never uses the partition as a dimension (one metric per partition would cost per partition)', () => {
    // Prepare
    const outcomes = Array.from({ length: 50 }, (_, i) => ({
      ref: ref('events', `date=${i}`),
      action: 'blocked' as const,
    }));

    // Act
    const metrics = decisionMetrics(outcomes);

    // Assess
    expect(metrics).toHaveLength(1);
    expect(metrics[0]?.value).toBe(50);
    expect(JSON.stringify(metrics)).not.toContain('date=');
  });

  it('names the namespace and service the dashboard and alarms key on', () => {
    // Prepare / Act / Assess
    expect(METRICS_NAMESPACE).toBe('LakeCompactor');
    expect(METRICS_SERVICE).toBe('lake-compactor');
    expect(METRIC.throughput).toBe('ThroughputMBps');
    expect(METRIC.estimatedCost).toBe('EstimatedCostUSD');
  });
});
