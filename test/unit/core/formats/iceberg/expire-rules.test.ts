// Which snapshots expire_snapshots keeps, on metadata written here by hand (a chain on main, a side branch, a tag,
// a snapshot on no branch), by Iceberg's RemoveSnapshots rules: main's own max-snapshot-age-ms and
// min-snapshots-to-keep win over the defaults, another branch keeps its own last N, a snapshot on no branch goes
// once older than the cut-off whatever retain-last says, and the current snapshot always stays.
import { describe, expect, it } from 'vitest';
import { planSnapshotExpiry } from '../../../../../functions/core/formats/iceberg/expire.js';
import { parseTableMetadata } from '../../../../../functions/core/formats/iceberg/metadata.js';

const HOUR = 3_600_000;
const NOW = Date.UTC(2025, 0, 10);

/** Snapshot `id` committed `hoursAgo` before NOW, child of `parent`. */
function snapshot(id: number, hoursAgo: number, parent?: number) {
  return {
    'snapshot-id': id,
    ...(parent === undefined ? {} : { 'parent-snapshot-id': parent }),
    'sequence-number': id,
    'timestamp-ms': NOW - hoursAgo * HOUR,
    summary: { operation: 'append' },
    'manifest-list': `s3://b/t/metadata/snap-${id}.avro`,
  };
}

/**
 * main: 1 ← 2 ← 3 ← 4 (current), one every 100 h back from 10 h ago; branch dev: 1 ← 5 ← 6; snapshot 7 on no
 * branch, 500 h old; `refs` as given.
 */
function metadata(refs: Record<string, unknown>, properties: Record<string, string> = {}) {
  return parseTableMetadata(
    JSON.stringify({
      'format-version': 2,
      location: 's3://b/t',
      'last-sequence-number': 7,
      'last-updated-ms': NOW,
      'last-column-id': 1,
      schemas: [
        { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'a', required: false, type: 'long' }] },
      ],
      'current-schema-id': 0,
      'partition-specs': [{ 'spec-id': 0, fields: [] }],
      'default-spec-id': 0,
      properties,
      'current-snapshot-id': 4,
      refs: { main: { 'snapshot-id': 4, type: 'branch' }, ...refs },
      snapshots: [
        snapshot(1, 310),
        snapshot(2, 210, 1),
        snapshot(3, 110, 2),
        snapshot(4, 10, 3),
        snapshot(5, 300, 1),
        snapshot(6, 250, 5),
        snapshot(7, 500),
      ],
    }),
    's3://b/t',
  );
}

const kept = (m: ReturnType<typeof metadata>, rules: Parameters<typeof planSnapshotExpiry>[1]) =>
  [...planSnapshotExpiry(m, rules).retained.keys()].map(Number).sort((a, b) => a - b);

describe('planSnapshotExpiry', () => {
  it('keeps main’s snapshots younger than the cut-off and the current one; a snapshot on no branch goes by age alone', () => {
    // Act
    const fiveDays = kept(metadata({}), { now: NOW });
    const oneDay = kept(metadata({}), { now: NOW, olderThanMs: 24 * HOUR, retainLast: 3 });

    // Assess: 5 days = 120 h keeps 3 (110 h) and 4; retain-last 3 keeps 2, 3, 4 but never 7 (on no branch)
    expect(fiveDays).toEqual([3, 4]);
    expect(oneDay).toEqual([2, 3, 4]);
  });

  it('lets main’s own max-snapshot-age-ms and min-snapshots-to-keep win over the operation’s options', () => {
    // Prepare
    const ownAge = metadata({
      main: { 'snapshot-id': 4, type: 'branch', 'max-snapshot-age-ms': 250 * HOUR },
    });
    const ownMinimum = metadata({ main: { 'snapshot-id': 4, type: 'branch', 'min-snapshots-to-keep': 4 } });

    // Act
    const byAge = kept(ownAge, { now: NOW, olderThanMs: 0 });
    const byMinimum = kept(ownMinimum, { now: NOW, olderThanMs: 0, retainLast: 1 });

    // Assess
    expect(byAge).toEqual([2, 3, 4]);
    expect(byMinimum).toEqual([1, 2, 3, 4]);
  });

  it('keeps a branch’s own last N and a tag’s head, and drops a ref older than its max-ref-age-ms', () => {
    // Prepare
    const refs = {
      dev: { 'snapshot-id': 6, type: 'branch', 'min-snapshots-to-keep': 2 },
      audit: { 'snapshot-id': 7, type: 'tag' },
      stale: { 'snapshot-id': 2, type: 'tag', 'max-ref-age-ms': 100 * HOUR },
    };

    // Act
    const plan = planSnapshotExpiry(metadata(refs), { now: NOW, olderThanMs: 0 });

    // Assess: dev keeps 6 and 5, the tag keeps 7, the stale tag goes and with it snapshot 2
    expect([...plan.retained.keys()].map(Number).sort((a, b) => a - b)).toEqual([4, 5, 6, 7]);
    expect(plan.removedRefs).toEqual(['stale']);
    expect(plan.expired.map((s) => Number(s.snapshotId))).toEqual([1, 2, 3]);
  });

  it('reads the cut-off and retain-last from the table properties when no option is given', () => {
    // Prepare
    const m = metadata(
      {},
      {
        'history.expire.max-snapshot-age-ms': String(220 * HOUR),
        'history.expire.min-snapshots-to-keep': '1',
      },
    );

    // Act
    const plan = planSnapshotExpiry(m, { now: NOW });

    // Assess
    expect(plan.olderThanSource).toBe('table property');
    expect([...plan.retained.keys()].map(Number).sort((a, b) => a - b)).toEqual([2, 3, 4]);
  });
});
