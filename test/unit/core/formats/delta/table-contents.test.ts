// What the reader exposes from real tables: partition values from the log (never the path), column mapping's
// physical names and ids, deletion vectors with cardinalities, stats and tags; and the port-shaped TableSnapshot.
import { describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../../../../functions/adapters/local-object-store.js';
import { readDeltaSnapshot, toTableSnapshot } from '../../../../../functions/core/formats/delta/index.js';
import { DELTA_FIXTURES } from '../../../../support/fixtures.js';
import { addAction, metaDataAction, protocolAction, syntheticTable } from './delta-test-kit.js';

const store = new LocalObjectStore(DELTA_FIXTURES);

describe('Delta table contents from the log', () => {
  it('delta-0.8.0-special-partition: values are the log’s ("A/A", "B B") and keys are the percent-decoded paths', async () => {
    // Act
    const snapshot = await readDeltaSnapshot(store, 'delta-0.8.0-special-partition');
    // Assess
    expect(snapshot.files.map((f) => [f.partitionValues.x, f.key])).toEqual([
      [
        'A/A',
        'delta-0.8.0-special-partition/x=A%2FA/part-00007-b350e235-2832-45df-9918-6cab4f7578f7.c000.snappy.parquet',
      ],
      [
        'B B',
        'delta-0.8.0-special-partition/x=B%20B/part-00015-e9abbc6f-85e9-457b-be8e-e9f5b8a22890.c000.snappy.parquet',
      ],
    ]);
    // every key names an object that exists
    for (const file of snapshot.files) expect(await store.head(file.key as string)).toBeDefined();
  });

  it('delta-0.8.0-null-partition: a null partition value is null, not the __HIVE_DEFAULT_PARTITION__ directory name', async () => {
    // Act
    const snapshot = await readDeltaSnapshot(store, 'delta-0.8.0-null-partition');
    // Assess
    expect(snapshot.files.map((f) => f.partitionValues)).toEqual([{ k: 'A' }, { k: null }]);
  });

  it('a path that says one partition and a log that says another: the log wins', async () => {
    // Prepare
    const memory = await syntheticTable('t/', [
      [protocolAction(1, 2), metaDataAction(), addAction('day=2024-01-01/a.parquet', '2024-01-02')],
    ]);
    // Act
    const snapshot = await readDeltaSnapshot(memory, 't');
    const port = toTableSnapshot(snapshot, 42);
    // Assess
    expect(snapshot.files[0]?.partitionValues).toEqual({ day: '2024-01-02' });
    expect(port.partitions.map((p) => [p.partition, p.values])).toEqual([
      ['day=2024-01-02', [{ name: 'day', value: '2024-01-02' }]],
    ]);
  });

  it('table_with_column_mapping: physical names and ids are exposed, partition values keyed by logical name', async () => {
    // Act
    const snapshot = await readDeltaSnapshot(store, 'table_with_column_mapping');
    // Assess
    expect(snapshot.metadata.columnMapping).toEqual({
      mode: 'name',
      columns: [
        { path: ['Company Very Short'], physicalName: 'col-173b4db9-b5ad-427f-9e75-516aae37fbbb', id: 1 },
        { path: ['Super Name'], physicalName: 'col-3877fd94-0973-4941-ac6b-646849a1ff65', id: 2 },
      ],
    });
    expect(snapshot.protocol.readerFeatures).toEqual(['columnMapping']);
    expect(snapshot.files.map((f) => [f.path, f.partitionValues, f.physicalPartitionValues])).toEqual([
      [
        '8v/part-00001-69b4a452-aeac-4ffa-bf5c-a0c2833d05eb.c000.zstd.parquet',
        { 'Company Very Short': 'BME' },
        { 'col-173b4db9-b5ad-427f-9e75-516aae37fbbb': 'BME' },
      ],
      [
        'BH/part-00000-4d6e745c-8e04-48d9-aa60-438228358f1a.c000.zstd.parquet',
        { 'Company Very Short': 'BMS' },
        { 'col-173b4db9-b5ad-427f-9e75-516aae37fbbb': 'BMS' },
      ],
    ]);
    expect(snapshot.files[1]?.stats).toEqual({
      numRecords: 4,
      minValues: { 'col-3877fd94-0973-4941-ac6b-646849a1ff65': 'Anthony Johnson' },
      maxValues: { 'col-3877fd94-0973-4941-ac6b-646849a1ff65': 'Stephanie Mcgrath' },
      nullCount: { 'col-3877fd94-0973-4941-ac6b-646849a1ff65': 0 },
    });
  });

  it('table-with-dv-small: the live file carries its deletion vector (2 deleted rows); the DV-less add is a tombstone', async () => {
    // Act
    const v0 = await readDeltaSnapshot(store, 'table-with-dv-small', { version: 0 });
    const v1 = await readDeltaSnapshot(store, 'table-with-dv-small');
    // Assess
    expect(v0.files[0]?.deletionVector).toBeUndefined();
    expect(v1.files).toHaveLength(1);
    expect(v1.files[0]?.deletionVector).toEqual({
      storageType: 'u',
      pathOrInlineDv: 'vBn[lx{q8@P<9BNH/isA',
      offset: 1,
      sizeInBytes: 36,
      cardinality: 2,
    });
    expect(v1.files[0]?.stats).toMatchObject({ numRecords: 10, tightBounds: false });
    expect(v1.files[0]?.tags).toMatchObject({ OPTIMIZE_TARGET_SIZE: '268435456' });
    expect(v1.tombstones.map((t) => [t.path, t.deletionVector, t.deletionTimestamp])).toEqual([
      ['part-00000-fae5310a-a37d-4e51-827b-c3d5516560ca-c000.snappy.parquet', undefined, 1677811194426],
    ]);
    expect(v1.protocol).toEqual({
      minReaderVersion: 3,
      minWriterVersion: 7,
      readerFeatures: ['deletionVectors'],
      writerFeatures: ['deletionVectors'],
    });
  });

  it('the port snapshot plans a file with a deletion vector, carrying the DV (id, cardinality, descriptor) and its physical rows', async () => {
    // Prepare
    const snapshot = await readDeltaSnapshot(store, 'table-with-dv-small');
    // Act
    const port = toTableSnapshot(snapshot, 7);
    // Assess
    expect(port.ignored).toEqual([]);
    expect(port.partitions[0]?.files).toEqual([
      {
        key: 'table-with-dv-small/part-00000-fae5310a-a37d-4e51-827b-c3d5516560ca-c000.snappy.parquet',
        size: 635,
        etag: '',
        rows: 10,
        deletes: {
          id: 'uvBn[lx{q8@P<9BNH/isA@1',
          rows: 2,
          descriptor: {
            storageType: 'u',
            pathOrInlineDv: 'vBn[lx{q8@P<9BNH/isA',
            offset: 1,
            sizeInBytes: 36,
            cardinality: 2,
          },
        },
        schemaFingerprint: snapshot.metadata.schemaFingerprint,
      },
    ]);
  });

  it('a file added by absolute URI has no key and is not to be touched, with why', async () => {
    // Prepare
    const memory = await syntheticTable('t/', [
      [
        protocolAction(1, 2),
        metaDataAction(),
        addAction('s3://other-bucket/clone-source/day=d1/x.parquet', 'd1'),
        addAction('day=d1/y.parquet', 'd1'),
      ],
    ]);
    // Act
    const snapshot = await readDeltaSnapshot(memory, 't');
    const port = toTableSnapshot(snapshot, 0);
    // Assess
    expect(snapshot.files.map((f) => [f.path, f.key])).toEqual([
      ['day=d1/y.parquet', 't/day=d1/y.parquet'],
      ['s3://other-bucket/clone-source/day=d1/x.parquet', undefined],
    ]);
    expect(port.partitions.flatMap((p) => p.files.map((f) => f.key))).toEqual(['t/day=d1/y.parquet']);
    expect(port.ignored).toEqual([
      {
        key: 's3://other-bucket/clone-source/day=d1/x.parquet',
        reason:
          'absolute path s3://other-bucket/clone-source/day=d1/x.parquet: an absolute URI is not resolved to a key of the store (a shallow clone’s source, or a writer that records full URIs), so it is left alone',
      },
    ]);
  });

  it('delta-2.2.0-partitioned-types: the port snapshot has one partition per log value set, rows from stats, one schema fingerprint', async () => {
    // Prepare
    const snapshot = await readDeltaSnapshot(store, 'delta-2.2.0-partitioned-types');
    // Act
    const port = toTableSnapshot(snapshot, 1234);
    // Assess
    expect(port.listedAt).toBe(1234);
    expect(port.tableRoot).toBe('delta-2.2.0-partitioned-types/');
    expect(port.foreignTables).toEqual([]);
    expect(port.partitions.map((p) => [p.partition, p.files.length, p.files[0]?.rows])).toEqual([
      ['c1=4/c2=c', 1, 1],
      ['c1=5/c2=b', 1, 1],
      ['c1=6/c2=a', 1, 1],
    ]);
    const fingerprints = new Set(port.partitions.flatMap((p) => p.files.map((f) => f.schemaFingerprint)));
    expect(fingerprints).toEqual(new Set([snapshot.metadata.schemaFingerprint]));
    expect(snapshot.metadata.schemaFingerprint).toMatch(/^delta:[0-9a-f]{64}$/);
  });

  it('a schema change changes the schema fingerprint; the same schema keeps it', async () => {
    // Prepare: version 1 rewrites metaData with the same schema, version 2 adds a column
    const widened = JSON.stringify({
      type: 'struct',
      fields: [
        { name: 'id', type: 'long', nullable: true, metadata: {} },
        { name: 'day', type: 'string', nullable: true, metadata: {} },
        { name: 'note', type: 'string', nullable: true, metadata: {} },
      ],
    });
    const memory = await syntheticTable('t/', [
      [protocolAction(1, 2), metaDataAction(), addAction('a.parquet', 'd1')],
      [metaDataAction({ 'delta.logRetentionDuration': 'interval 30 days' })],
      [{ metaData: { ...(metaDataAction() as { metaData: object }).metaData, schemaString: widened } }],
    ]);
    // Act
    const [v0, v1, v2] = await Promise.all(
      [0, 1, 2].map((version) => readDeltaSnapshot(memory, 't', { version })),
    );
    // Assess
    expect(v1?.metadata.schemaFingerprint).toBe(v0?.metadata.schemaFingerprint);
    expect(v2?.metadata.schemaFingerprint).not.toBe(v0?.metadata.schemaFingerprint);
    expect(v1?.metadata.configuration).toEqual({ 'delta.logRetentionDuration': 'interval 30 days' });
  });
});
