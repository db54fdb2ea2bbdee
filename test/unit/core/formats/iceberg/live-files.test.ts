// The live files of every snapshot of every vendored Iceberg table are what the metadata defines: the counts,
// records and delete counts the writer recorded in each snapshot's summary, and files that exist in the store.
import { describe, expect, it } from 'vitest';
import {
  loadTable,
  readIcebergSnapshot,
  readSnapshotFiles,
} from '../../../../../functions/core/formats/iceberg/index.js';
import { FIXTURE_TABLES, fileName, fixtureStore, recordedSnapshots } from './fixture-tables.js';

const sum = (values: readonly bigint[]): bigint => values.reduce((a, b) => a + b, 0n);

describe('the live files of every snapshot of every fixture table', () => {
  it('vendors the seven tables the reader is proven on', () => {
    // Assess
    expect(FIXTURE_TABLES).toEqual([
      'java_v2_equality_deletes_identity_partitioned',
      'spark_v1_hour_identity_partitioned',
      'spark_v1_unpartitioned_small_files',
      'spark_v2_position_deletes',
      'spark_v2_schema_evolution',
      'spark_v3_deletion_vectors',
      'spark_v3_row_lineage_rewrite',
    ]);
  });

  for (const name of FIXTURE_TABLES) {
    it(`${name}: every snapshot's data files, delete files, records and deleted rows match the writer's summary counters`, async () => {
      // Prepare
      const store = fixtureStore();
      const table = await loadTable(store, name);
      const recorded = recordedSnapshots(name, fileName(table.metadataKey));
      expect(table.metadata.snapshots).toHaveLength(recorded.length);

      for (const [i, snapshot] of table.metadata.snapshots.entries()) {
        const writer = recorded[i];
        if (writer === undefined) throw new Error('unpaired snapshot');
        // Act
        const files = await readSnapshotFiles(store, table, { snapshotId: snapshot.snapshotId });
        // Assess: the summary's totals (v1 summaries have no delete counters: those tables have no deletes)
        const where = `${name} snapshot #${i}`;
        expect(files.snapshot?.snapshotId, where).toBe(snapshot.snapshotId);
        expect(String(files.dataFiles.length), where).toBe(writer.summary['total-data-files']);
        expect(String(files.deleteFiles.length), where).toBe(writer.summary['total-delete-files'] ?? '0');
        expect(String(sum(files.dataFiles.map((f) => f.entry.file.recordCount))), where).toBe(
          writer.summary['total-records'],
        );
        const positional = files.deleteFiles.filter((d) => d.kind !== 'equality');
        const equality = files.deleteFiles.filter((d) => d.kind === 'equality');
        expect(String(sum(positional.map((d) => d.entry.file.recordCount))), where).toBe(
          writer.summary['total-position-deletes'] ?? '0',
        );
        expect(String(sum(equality.map((d) => d.entry.file.recordCount))), where).toBe(
          writer.summary['total-equality-deletes'] ?? '0',
        );
        // Assess: sequence numbers never exceed the snapshot's (v1: all 0)
        for (const f of files.dataFiles)
          expect(f.entry.dataSequenceNumber <= BigInt(writer.sequenceNumber ?? 0), where).toBe(true);
      }
    });

    it(`${name}: every live file of the current snapshot is found in the store at the relocated key, with the manifest's size`, async () => {
      // Prepare
      const store = fixtureStore();
      // Act
      const { files } = await readIcebergSnapshot(store, name, { now: 0 });
      // Assess
      for (const f of [...files.dataFiles.map((d) => d.entry), ...files.deleteFiles.map((d) => d.entry)]) {
        expect(f.file.key.startsWith(`${name}/data/`), f.file.path).toBe(true);
        const head = await store.head(f.file.key);
        expect(head?.size, f.file.key).toBe(Number(f.file.fileSizeInBytes));
      }
    });
  }

  it('spark_v1_hour_identity_partitioned: three partitions rendered as Iceberg writes their paths, with 8, 6 and 6 one-row files', async () => {
    // Prepare
    const store = fixtureStore();
    // Act
    const { snapshot } = await readIcebergSnapshot(store, 'spark_v1_hour_identity_partitioned', { now: 42 });
    // Assess: the README's partition counts; the paths as the writer named the data directories
    expect(snapshot.listedAt).toBe(42);
    expect(snapshot.partitions.map((p) => [p.partition, p.files.length])).toEqual([
      ['event_time_hour=2020-01-01-08/action=view', 8],
      ['event_time_hour=2020-01-01-09/action=click', 6],
      ['event_time_hour=2020-01-01-10/action=download', 6],
    ]);
    for (const p of snapshot.partitions)
      for (const f of p.files) {
        expect(f.key).toContain(`/data/${p.partition}/`);
        expect(f.rows).toBe(1);
      }
    expect(snapshot.partitions[0]?.values).toEqual([
      { name: 'event_time_hour', value: '2020-01-01-08' },
      { name: 'action', value: 'view' },
    ]);
    expect(snapshot.ignored).toEqual([]);
  });

  it('spark_v2_position_deletes: the TableSnapshot keeps only the data file no delete applies to and sets the rest aside with why', async () => {
    // Prepare
    const store = fixtureStore();
    // Act
    const { files, snapshot } = await readIcebergSnapshot(store, 'spark_v2_position_deletes', { now: 0 });
    // Assess: one candidate, ten data files with deletes and three delete files ignored, nothing lost
    const clean = files.dataFiles.filter((f) => f.deletes.length === 0);
    expect(snapshot.partitions).toHaveLength(1);
    expect(snapshot.partitions[0]?.files.map((f) => f.key)).toEqual(clean.map((f) => f.entry.file.key));
    expect(snapshot.ignored).toHaveLength(files.dataFiles.length - clean.length + files.deleteFiles.length);
    const reasons = new Map(snapshot.ignored.map((i) => [i.key, i.reason]));
    for (const f of files.dataFiles.filter((d) => d.deletes.length > 0))
      expect(reasons.get(f.entry.file.key)).toMatch(
        /^Iceberg data file with \d+ position deletes? applied to it: /,
      );
    for (const d of files.deleteFiles)
      expect(reasons.get(d.entry.file.key)).toMatch(
        /^Iceberg position delete file applying to \d+ live data files?$/,
      );
  });

  it('reads an older snapshot by id given as a decimal string, exactly as by BigInt', async () => {
    // Prepare
    const store = fixtureStore();
    const table = await loadTable(store, 'spark_v2_position_deletes');
    const first = table.metadata.snapshots[0];
    if (first === undefined) throw new Error('no snapshot');
    // Act
    const byString = await readSnapshotFiles(store, table, { snapshotId: first.snapshotId.toString() });
    const byBigInt = await readSnapshotFiles(store, table, { snapshotId: first.snapshotId });
    // Assess
    expect(byString.dataFiles.map((f) => f.entry.file.path)).toEqual(
      byBigInt.dataFiles.map((f) => f.entry.file.path),
    );
    expect(byString.dataFiles).toHaveLength(2);
  });
});
