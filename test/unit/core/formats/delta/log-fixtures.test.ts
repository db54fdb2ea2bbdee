// The live file set the reader returns at every version of every vendored Delta fixture equals what the log
// defines: an independent replay of the JSON commits, and file counts read off the JSON by hand.
import { describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../../../../functions/adapters/local-object-store.js';
import { DeltaLogError, readDeltaSnapshot } from '../../../../../functions/core/formats/delta/index.js';
import { DELTA_FIXTURES } from '../../../../support/fixtures.js';
import { asReference, referenceReplay } from './delta-test-kit.js';

const store = new LocalObjectStore(DELTA_FIXTURES);

/** Live files per version, counted by hand from each fixture's JSON commits (0 first). */
const LIVE_COUNTS: Readonly<Record<string, readonly number[]>> = {
  'delta-0.8.0-null-partition': [2],
  'delta-0.8.0-partitioned': [6],
  'delta-0.8.0-special-partition': [2],
  'delta-2.2.0-partitioned-types': [3],
  simple_table: [6, 22, 6, 6, 5],
  simple_table_with_checkpoint: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
  'table-with-dv-small': [1, 1],
  table_with_column_mapping: [2],
  table_with_edge_timestamps: [2],
};

describe('Delta log reader over the vendored fixtures', () => {
  for (const [table, counts] of Object.entries(LIVE_COUNTS)) {
    it(`${table}: the live files at every version equal an independent replay of the JSON commits`, async () => {
      for (const [version, count] of counts.entries()) {
        // Prepare
        const expected = referenceReplay(table, version);
        // Act
        const snapshot = await readDeltaSnapshot(store, table, { version });
        // Assess
        expect(snapshot.version).toBe(version);
        expect(asReference(snapshot.files), `${table}@${version}`).toEqual(expected);
        expect(snapshot.files, `${table}@${version}`).toHaveLength(count);
      }
    });

    it(`${table}: with no version asked for, the latest version (${counts.length - 1}) is read`, async () => {
      // Act
      const snapshot = await readDeltaSnapshot(store, table);
      // Assess
      expect(snapshot.version).toBe(counts.length - 1);
    });
  }

  it('simple_table_with_checkpoint: time travel below the checkpoint replays JSON; at the checkpoint it starts from it', async () => {
    // Act
    const below = await Promise.all(
      [0, 5, 9].map((version) => readDeltaSnapshot(store, 'simple_table_with_checkpoint', { version })),
    );
    const at = await readDeltaSnapshot(store, 'simple_table_with_checkpoint', { version: 10 });
    // Assess
    for (const snapshot of below) expect(snapshot.checkpoint).toBeUndefined();
    expect(at.checkpoint?.version).toBe(10);
  });

  it('simple_table: the in-flight .tmp/00000000000000000005.json is not a version', async () => {
    // Act
    const latest = await readDeltaSnapshot(store, 'simple_table');
    const beyond = readDeltaSnapshot(store, 'simple_table', { version: 5 });
    // Assess
    expect(latest.version).toBe(4);
    await expect(beyond).rejects.toThrow(
      'Delta log of simple_table/ cannot be read: version 5 does not exist (the latest version is 4). Nothing was changed; check the table with a Delta client (e.g. DESCRIBE HISTORY) before compacting it.',
    );
  });

  it('simple_table: removed files stay as tombstones with their deletion timestamps, and a re-added file leaves them', async () => {
    // Prepare: at version 1 the MERGE removed five of the six files of version 0
    const removedAtV1 = [
      'part-00001-c506e79a-0bf8-4e2b-a42b-9731b2e490ae-c000.snappy.parquet',
      'part-00003-508ae4aa-801c-4c2c-a923-f6f89930a5c1-c000.snappy.parquet',
      'part-00004-80938522-09c0-420c-861f-5a649e3d9674-c000.snappy.parquet',
      'part-00006-63ce9deb-bc0f-482d-b9a1-7e717b67f294-c000.snappy.parquet',
      'part-00007-94f725e2-3963-4b00-9e83-e31021a93cf9-c000.snappy.parquet',
    ];
    // Act
    const v1 = await readDeltaSnapshot(store, 'simple_table', { version: 1 });
    // Assess
    expect(v1.tombstones.map((t) => t.path)).toEqual(removedAtV1);
    expect(v1.tombstones.find((t) => t.path.startsWith('part-00006'))?.deletionTimestamp).toBe(1587968596250);
    expect(v1.tombstones.every((t) => t.key === `simple_table/${t.path}`)).toBe(true);
  });

  it('checkpoint_with_partitions: version 2 is read from its checkpoint, holding the two files the JSON commits add', async () => {
    // Act
    const snapshot = await readDeltaSnapshot(store, 'checkpoint_with_partitions');
    // Assess: the facts of 00000000000000000001.json and 00000000000000000002.json, read by hand
    expect(snapshot.checkpoint).toEqual({
      version: 2,
      files: ['00000000000000000002.checkpoint.parquet'],
      v2: false,
    });
    expect(snapshot.files.map((f) => [f.path, f.partitionValues, f.size])).toEqual([
      ['8ac7d8e1-daab-48ef-9d05-ec22fb4b0d2f', { color: null }, 100],
      ['f62d8868-d952-4f9d-8bb2-fd4e011ebf36', { color: 'red' }, 100],
    ]);
    expect(snapshot.metadata.partitionColumns).toEqual(['color']);
    expect(snapshot.protocol).toMatchObject({ minReaderVersion: 1, minWriterVersion: 2 });
  });

  it('checkpoint_with_partitions: version 1 cannot be reconstructed (commit 0 is gone) and the reader says so', async () => {
    // Act
    const read = readDeltaSnapshot(store, 'checkpoint_with_partitions', { version: 1 });
    // Assess
    await expect(read).rejects.toBeInstanceOf(DeltaLogError);
    await expect(read).rejects.toThrow(
      'commit 0 is gone and no complete checkpoint is at or below version 1: the history before 1 was cleaned up, so version 1 cannot be reconstructed',
    );
  });
});
