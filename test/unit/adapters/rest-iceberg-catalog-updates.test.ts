// What the REST catalog client sends for a commit, as pure functions of the metadata read and the metadata wanted:
// the updates (an expiry's remove-snapshots with the statistics of the removed snapshots, a change it cannot
// express refused) and the assert-ref-snapshot-id requirements (main always; a ref set or removed; every ref when
// snapshots are removed, since which ones may go was decided from where each ref pointed).
import { describe, expect, it } from 'vitest';
import {
  metadataUpdates,
  refRequirements,
} from '../../../functions/adapters/formats/iceberg/rest-catalog.js';

const snapshot = (id: number) => ({
  'snapshot-id': id,
  'manifest-list': `s3://b/t/metadata/snap-${id}.avro`,
});
const statistics = (id: number, path = `s3://b/t/metadata/${id}.stats`) => ({
  'snapshot-id': id,
  'statistics-path': path,
});

/** A table of three snapshots, main at 3, a tag on 1, statistics of 1 and 3. */
function table(): Record<string, unknown> {
  return {
    'table-uuid': 'u-1',
    snapshots: [snapshot(1), snapshot(2), snapshot(3)],
    refs: { main: { 'snapshot-id': 3, type: 'branch' }, audit: { 'snapshot-id': 1, type: 'tag' } },
    statistics: [statistics(1), statistics(3)],
    properties: {},
  };
}

describe('metadataUpdates', () => {
  it('expresses an expiry as remove-snapshots and the removed snapshots’ remove-statistics', () => {
    // Prepare
    const from = table();
    const to = {
      ...table(),
      snapshots: [snapshot(3)],
      statistics: [statistics(3)],
      refs: { main: { 'snapshot-id': 3, type: 'branch' } },
    };

    // Act
    const updates = metadataUpdates(from, to);

    // Assess
    expect(updates).toEqual([
      { action: 'remove-snapshot-ref', 'ref-name': 'audit' },
      { action: 'remove-snapshots', 'snapshot-ids': [1, 2] },
      { action: 'remove-statistics', 'snapshot-id': 1 },
    ]);
  });

  it('refuses a statistics file changed for a snapshot that stays', () => {
    // Prepare
    const to = { ...table(), statistics: [statistics(1), statistics(3, 's3://b/t/metadata/other.stats')] };

    // Act
    const attempt = () => metadataUpdates(table(), to);

    // Assess
    expect(attempt).toThrow(/a change of statistics cannot be committed/);
  });

  it('sets a ref that did not exist before', () => {
    // Prepare
    const to = {
      ...table(),
      refs: { ...(table().refs as object), dev: { 'snapshot-id': 2, type: 'branch' } },
    };

    // Act
    const updates = metadataUpdates(table(), to);

    // Assess
    expect(updates).toEqual([
      { action: 'set-snapshot-ref', 'ref-name': 'dev', 'snapshot-id': 2, type: 'branch' },
    ]);
  });
});

describe('refRequirements', () => {
  it('asserts only main for a commit that moves main', () => {
    // Act
    const requirements = refRequirements(table(), [
      { action: 'add-snapshot', snapshot: snapshot(4) },
      { action: 'set-snapshot-ref', 'ref-name': 'main', 'snapshot-id': 4, type: 'branch' },
    ]);

    // Assess
    expect(requirements).toEqual([{ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': 3 }]);
  });

  it('asserts every ref as read when snapshots are removed, and a new ref as absent', () => {
    // Act
    const requirements = refRequirements(table(), [
      { action: 'set-snapshot-ref', 'ref-name': 'dev', 'snapshot-id': 3, type: 'branch' },
      { action: 'remove-snapshots', 'snapshot-ids': [2] },
    ]);

    // Assess
    expect(requirements).toEqual([
      { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': 3 },
      { type: 'assert-ref-snapshot-id', ref: 'dev', 'snapshot-id': null },
      { type: 'assert-ref-snapshot-id', ref: 'audit', 'snapshot-id': 1 },
    ]);
  });
});
