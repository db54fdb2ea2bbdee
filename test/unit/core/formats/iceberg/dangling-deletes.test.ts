// Which delete files `remove-dangling-deletes` drops (commit.ts `danglingDeletes`), case by case against the rule of
// Iceberg Java's RemoveDanglingDeletesSparkAction: per partition (spec id and tuple) the least data sequence number
// of the live data files after the commit; a position delete or DV below it, an equality delete at or below it, any
// delete of a partition without live data, and a DV whose data file is gone, dangle. An unpartitioned equality delete
// applies to every partition, so it is judged against the whole table (the one place this is stricter than Spark).
import { describe, expect, it } from 'vitest';
import { type AddedDataFile, danglingDeletes } from '../../../../../functions/core/formats/iceberg/commit.js';
import type {
  LiveDeleteFile,
  SnapshotFiles,
} from '../../../../../functions/core/formats/iceberg/live-files.js';
import type { TableMetadata } from '../../../../../functions/core/formats/iceberg/metadata.js';

/** Spec 0 is identity(name) (field 1000), spec 1 is unpartitioned. */
const METADATA = {
  specs: [
    { specId: 0, fields: [{ name: 'name', sourceId: 2, fieldId: 1000, transform: { kind: 'identity' } }] },
    { specId: 1, fields: [] },
  ],
} as unknown as TableMetadata;

const inPartition = (value: string) => ({ specId: 0, values: [{ fieldId: 1000, value }] });
const UNPARTITIONED = { specId: 1, values: [] };

function data(path: string, partition: ReturnType<typeof inPartition>, seq: bigint) {
  return { entry: { dataSequenceNumber: seq, file: { path, partition, content: 'data' } }, deletes: [] };
}

function del(
  path: string,
  kind: LiveDeleteFile['kind'],
  partition: { specId: number; values: { fieldId: number; value: string }[] },
  seq: bigint,
  referencedDataFile?: string,
) {
  return {
    kind,
    appliesTo: [],
    entry: {
      dataSequenceNumber: seq,
      file: { path, partition, referencedDataFile, contentOffset: undefined },
    },
  };
}

function files(dataFiles: unknown[], deleteFiles: unknown[]): SnapshotFiles {
  return {
    snapshot: undefined,
    schema: {},
    manifests: [],
    dataFiles,
    deleteFiles,
  } as unknown as SnapshotFiles;
}

const names = (list: readonly LiveDeleteFile[]) => list.map((d) => d.entry.file.path).sort();

describe('danglingDeletes', () => {
  it('drops a position delete below its partition’s least data sequence number and keeps one at it', () => {
    // Prepare: partition a's data at sequence 5 and 7
    const current = files(
      [data('a1', inPartition('a'), 5n), data('a2', inPartition('a'), 7n)],
      [del('pos-4', 'position', inPartition('a'), 4n), del('pos-5', 'position', inPartition('a'), 5n)],
    );
    // Act / Assess
    expect(names(danglingDeletes(METADATA, current, new Set(), [], 0n))).toEqual(['pos-4']);
  });

  it('drops an equality delete at or below its partition’s least data sequence number and keeps one above it', () => {
    // Prepare
    const current = files(
      [data('b1', inPartition('b'), 5n)],
      [
        del('eq-4', 'equality', inPartition('b'), 4n),
        del('eq-5', 'equality', inPartition('b'), 5n),
        del('eq-6', 'equality', inPartition('b'), 6n),
      ],
    );
    // Act / Assess
    expect(names(danglingDeletes(METADATA, current, new Set(), [], 0n))).toEqual(['eq-4', 'eq-5']);
  });

  it('judges the state after the commit: removed files leave, added files join with the starting sequence number', () => {
    // Prepare: c's only file (sequence 2) replaced by an output carrying the starting sequence number 6; the
    // equality delete at 6 no longer applies (6 is not below 6), the one at 7 still does
    const current = files(
      [data('c1', inPartition('c'), 2n)],
      [del('eq-6', 'equality', inPartition('c'), 6n), del('eq-7', 'equality', inPartition('c'), 7n)],
    );
    const added = [{ path: 'c-out', partition: inPartition('c') }] as unknown as AddedDataFile[];
    // Act / Assess
    expect(names(danglingDeletes(METADATA, current, new Set(['c1']), added, 6n))).toEqual(['eq-6']);
  });

  it('drops every delete of a partition left without live data, and a DV whose data file is gone', () => {
    // Prepare
    const current = files(
      [data('d1', inPartition('d'), 3n), data('e1', inPartition('e'), 3n)],
      [
        del('eq-d', 'equality', inPartition('d'), 9n),
        del('pos-d', 'position', inPartition('d'), 9n),
        del('dv-e', 'deletion-vector', inPartition('e'), 9n, 'e-gone'),
        del('dv-e1', 'deletion-vector', inPartition('e'), 9n, 'e1'),
      ],
    );
    // Act / Assess
    expect(names(danglingDeletes(METADATA, current, new Set(['d1']), [], 0n))).toEqual([
      'dv-e',
      'eq-d',
      'pos-d',
    ]);
  });

  it('keeps an unpartitioned equality delete while any file of any partition is older, where Spark’s join would drop it', () => {
    // Prepare: the table was unpartitioned once; its global equality delete (sequence 4) still applies to
    // partition f's file at sequence 3, though no file of the unpartitioned spec is left
    const kept = files([data('f1', inPartition('f'), 3n)], [del('eq-global', 'equality', UNPARTITIONED, 4n)]);
    const gone = files([data('f1', inPartition('f'), 4n)], [del('eq-global', 'equality', UNPARTITIONED, 4n)]);
    // Act / Assess
    expect(names(danglingDeletes(METADATA, kept, new Set(), [], 0n))).toEqual([]);
    expect(names(danglingDeletes(METADATA, gone, new Set(), [], 0n))).toEqual(['eq-global']);
  });
});
