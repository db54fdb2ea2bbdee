// The state table's key layout: the sweep's range query over `DUE#` finds exactly the partitions due by now
// and never an idle or leased one, and a partition key parses back to the partition it was built from.
import { describe, expect, it } from 'vitest';
import {
  dueRange,
  gsiSortKey,
  refFromPartitionKey,
  statsKeys,
} from '../../../functions/adapters/dynamodb-keys.js';

const NOW = Date.UTC(2026, 10, 30, 12, 0, 0);

describe('gsi1 sort keys', () => {
  it('sorts due partitions by due time inside the due range and keeps idle and leased ones out of it', () => {
    // Prepare
    const range = dueRange(NOW);

    // Act
    const keys = {
      dueEarly: gsiSortKey({ partition: 'p', state: 'idle' }, NOW - 1),
      dueNow: gsiSortKey({ partition: 'p', state: 'idle' }, NOW),
      later: gsiSortKey({ partition: 'p', state: 'idle' }, NOW + 1),
      idle: gsiSortKey({ partition: 'p', state: 'idle' }, undefined),
      leased: gsiSortKey(
        { partition: 'p', state: 'scheduled', lease: { runId: 'r', executionName: 'r', acquiredAt: 1 } },
        NOW - 1,
      ),
    };

    // Assess
    const inRange = (k: string) => k >= range.from && k <= range.to;
    expect(
      Object.entries(keys)
        .filter(([, k]) => inRange(k))
        .map(([name]) => name),
    ).toEqual(['dueEarly', 'dueNow']);
    expect(keys.leased.startsWith('LEASE#')).toBe(true);
  });
});

describe('partition keys', () => {
  it('parse back to the same table and partition, also when the partition path holds a #', () => {
    // Prepare
    const refs = [
      { table: 'events', partition: 'date=2026-11-29/region=eu' },
      { table: 'events', partition: 'tag=a#b' },
      { table: 'flat', partition: '' },
    ];

    // Act
    const parsed = refs.map((ref) => refFromPartitionKey(statsKeys.partition(ref).pk));

    // Assess
    expect(parsed).toEqual(refs);
  });
});
