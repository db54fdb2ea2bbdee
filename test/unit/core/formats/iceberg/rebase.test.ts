// When to rebase a replace over commits made since its starting snapshot: never when an input was removed, a
// position delete / DV now applies to one, or a delete that applied to one no longer does; always when only
// equality deletes arrived (the rewritten rows keep the starting sequence number, so those deletes apply to them).
import { describe, expect, it } from 'vitest';
import {
  type DeleteKind,
  type LiveDataFile,
  rebaseConflicts,
  type SnapshotFiles,
} from '../../../../../functions/core/formats/iceberg/index.js';

/** A snapshot whose live data files are `files`, each with the deletes (kind, path, sequence) applying to it. */
function snapshotOf(files: Record<string, [DeleteKind, string, bigint][]>): SnapshotFiles {
  const dataFiles = Object.entries(files).map(
    ([path, deletes]) =>
      ({
        entry: { file: { path } },
        deletes: deletes.map(([kind, p, dataSequenceNumber]) => ({ kind, path: p, dataSequenceNumber })),
      }) as unknown as LiveDataFile,
  );
  return { dataFiles, deleteFiles: [], manifests: [] } as unknown as SnapshotFiles;
}

describe('rebaseConflicts', () => {
  it('finds none when the inputs are live with the same deletes, whatever else was appended', () => {
    // Prepare
    const starting = snapshotOf({ a: [['position', 'p1', 3n]], b: [] });
    const current = snapshotOf({ a: [['position', 'p1', 3n]], b: [], c: [] });
    // Act / Assess
    expect(rebaseConflicts(starting, current, ['a', 'b'])).toEqual([]);
  });

  it('names an input that is no longer live, and one that was never live', () => {
    // Prepare
    const starting = snapshotOf({ a: [], b: [] });
    const current = snapshotOf({ b: [] });
    // Act
    const reasons = rebaseConflicts(starting, current, ['a', 'b', 'z']);
    // Assess
    expect(reasons).toHaveLength(2);
    expect(reasons[0]).toMatch(/^a is no longer live/);
    expect(reasons[1]).toMatch(/^z is not a live data file of the starting snapshot/);
  });

  it('names a position delete or DV committed since the starting snapshot, but not an equality delete', () => {
    // Prepare
    const starting = snapshotOf({ a: [], b: [], c: [] });
    const current = snapshotOf({
      a: [['position', 'new-pos', 5n]],
      b: [['deletion-vector', 'new-dv.puffin', 5n]],
      c: [['equality', 'new-eq', 5n]],
    });
    // Act
    const reasons = rebaseConflicts(starting, current, ['a', 'b', 'c']);
    // Assess
    expect(reasons).toEqual([
      'a: position delete new-pos was committed after the starting snapshot and applies to it',
      'b: deletion-vector delete new-dv.puffin was committed after the starting snapshot and applies to it',
    ]);
  });

  it('names a delete that applied to an input at the starting snapshot and no longer does: its rows came back', () => {
    // Prepare
    const starting = snapshotOf({ a: [['position', 'p1', 3n]], b: [['equality', 'e1', 4n]], c: [] });
    const current = snapshotOf({ a: [], b: [], c: [] });
    // Act
    const reasons = rebaseConflicts(starting, current, ['a', 'b', 'c']);
    // Assess
    expect(reasons).toEqual([
      'a: position delete p1 applied to it in the starting snapshot and was removed since',
      'b: equality delete e1 applied to it in the starting snapshot and was removed since',
    ]);
  });
});
