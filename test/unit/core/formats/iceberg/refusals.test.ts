// Every Iceberg feature the reader cannot handle safely is refused with IcebergUnsupportedError (never retried)
// whose message names the feature; malformed metadata is an IcebergMetadataError. Synthetic tables in memory.
import { describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../../functions/adapters/memory-object-store.js';
import { CompactorError } from '../../../../../functions/core/errors.js';
import {
  IcebergMetadataError,
  IcebergUnsupportedError,
  loadTable,
  readIcebergSnapshot,
  readSnapshotFiles,
} from '../../../../../functions/core/formats/iceberg/index.js';
import {
  SCRAMBLED_MANIFEST_LIST_SCHEMA,
  SCRAMBLED_MANIFEST_SCHEMA,
  writeAvroContainer,
} from './avro-writer.js';

/** The one refusal message, for the synthetic table at `memory://t`. */
const refusal = (feature: string): string =>
  `Iceberg table memory://t uses ${feature}, which lake-compactor does not support: nothing of it was read or changed. Leave this table to an Iceberg engine (Spark's rewrite_data_files), or remove it from the configuration`;

/** A minimal valid v2 table at `s3://lake/t` with no snapshot; `patch` overrides top-level fields. */
function metadata(patch: Record<string, unknown> = {}): string {
  return JSON.stringify({
    'format-version': 2,
    'table-uuid': '00000000-0000-0000-0000-000000000001',
    location: 's3://lake/t',
    'last-sequence-number': 1,
    'last-updated-ms': 1,
    'last-column-id': 1,
    'current-schema-id': 0,
    schemas: [
      { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'x', required: false, type: 'int' }] },
    ],
    'default-spec-id': 0,
    'partition-specs': [{ 'spec-id': 0, fields: [] }],
    'last-partition-id': 999,
    'default-sort-order-id': 0,
    'sort-orders': [{ 'order-id': 0, fields: [] }],
    properties: {},
    'current-snapshot-id': -1,
    snapshots: [],
    ...patch,
  });
}

const snapshot = (patch: Record<string, unknown> = {}) => ({
  'snapshot-id': 1,
  'sequence-number': 1,
  'timestamp-ms': 1,
  'manifest-list': 's3://lake/t/metadata/snap-1.avro',
  summary: { operation: 'append' },
  ...patch,
});

async function tableWith(text: string): Promise<MemoryObjectStore> {
  const store = new MemoryObjectStore();
  await store.put('t/metadata/v1.metadata.json', text);
  return store;
}

/** A manifest list entry (scrambled names, field ids as the spec) for `path` under spec `specId`. */
function listEntry(path: string, specId: number, keyMetadata: Buffer | null = null) {
  return {
    a: path,
    manifest_path: 'decoy',
    len: 1n,
    b: specId,
    c: 1n,
    d: 1n,
    e: 1n,
    f: 0,
    k: keyMetadata,
    g: null,
  };
}

/** A manifest with one ADDED data file in partition x=`x`. */
function manifest(path: string, x: number, keyMetadata: Buffer | null = null) {
  return writeAvroContainer(SCRAMBLED_MANIFEST_SCHEMA, [
    {
      st: 1,
      snap: null,
      seq: null,
      file: {
        size: 10n,
        rows: 1n,
        part: { whatever: x },
        fmt: 'PARQUET',
        where: path,
        kind: 0,
        km: keyMetadata,
        file_path: '',
      },
    },
  ]);
}

function expectRefusal(err: unknown, feature: string): void {
  expect(err).toBeInstanceOf(IcebergUnsupportedError);
  expect(err).toBeInstanceOf(CompactorError);
  const e = err as IcebergUnsupportedError;
  expect(e.name).toBe('IcebergUnsupportedError');
  expect(e.retryable).toBe(false);
  expect(e.feature).toBe(feature);
  expect(e.message).toBe(refusal(feature));
}

async function failure(attempt: Promise<unknown>): Promise<unknown> {
  return attempt.then(
    () => {
      throw new Error('expected a refusal');
    },
    (err: unknown) => err,
  );
}

/**
 * A table with partition specs 0 and 1 that both render `x=<n>` (spec 1 re-added the field): one file of spec 0
 * in `x=1`, one of spec 1 in `x=<secondPartition>`.
 */
async function twoSpecTable(secondPartition: number): Promise<MemoryObjectStore> {
  const specs = [0, 1].map((id) => ({
    'spec-id': id,
    fields: [{ name: 'x', transform: 'identity', 'source-id': 1, 'field-id': 1000 }],
  }));
  const store = await tableWith(
    metadata({
      'partition-specs': specs,
      'default-spec-id': 1,
      'current-snapshot-id': 1,
      snapshots: [snapshot()],
    }),
  );
  await store.put(
    't/metadata/snap-1.avro',
    await writeAvroContainer(SCRAMBLED_MANIFEST_LIST_SCHEMA, [
      listEntry('s3://lake/t/metadata/m0.avro', 0),
      listEntry('s3://lake/t/metadata/m1.avro', 1),
    ]),
  );
  await store.put('t/metadata/m0.avro', await manifest('s3://lake/t/data/x=1/a.parquet', 1));
  await store.put(
    't/metadata/m1.avro',
    await manifest(`s3://lake/t/data/x=${secondPartition}/b.parquet`, secondPartition),
  );
  return store;
}

describe('refused Iceberg features', () => {
  it('refuses format version 4 with the whole message', async () => {
    // Prepare
    const store = await tableWith(metadata({ 'format-version': 4 }));
    // Act
    const err = await failure(loadTable(store, 't'));
    // Assess
    expect((err as Error).message).toBe(
      "Iceberg table memory://t uses table format version 4 (versions 1 to 3 are read), which lake-compactor does not support: nothing of it was read or changed. Leave this table to an Iceberg engine (Spark's rewrite_data_files), or remove it from the configuration",
    );
    expectRefusal(err, 'table format version 4 (versions 1 to 3 are read)');
  });

  it('refuses an encrypted table (encryption-keys)', async () => {
    // Prepare
    const store = await tableWith(
      metadata({ 'encryption-keys': [{ 'key-id': 'k', 'encrypted-key-metadata': 'AA==' }] }),
    );
    // Act + Assess
    expectRefusal(await failure(loadTable(store, 't')), 'table encryption (encryption-keys)');
  });

  it('refuses a snapshot whose manifest list is encrypted (key-id)', async () => {
    // Prepare
    const store = await tableWith(
      metadata({ 'current-snapshot-id': 1, snapshots: [snapshot({ 'key-id': 'k' })] }),
    );
    // Act + Assess
    expectRefusal(await failure(loadTable(store, 't')), 'table encryption (encryption-keys)');
  });

  it('refuses an unknown partition transform, naming it and its field', async () => {
    // Prepare
    const spec = {
      'spec-id': 0,
      fields: [{ name: 'x_z', transform: 'zorder', 'source-id': 1, 'field-id': 1000 }],
    };
    const store = await tableWith(metadata({ 'partition-specs': [spec] }));
    // Act + Assess
    expectRefusal(
      await failure(loadTable(store, 't')),
      'the partition transform "zorder" (partition field x_z)',
    );
  });

  it('refuses a partition field over several source columns (v3 multi-argument transforms)', async () => {
    // Prepare
    const spec = {
      'spec-id': 0,
      fields: [{ name: 'x_b', transform: 'bucket[4]', 'source-ids': [1, 2], 'field-id': 1000 }],
    };
    const store = await tableWith(metadata({ 'partition-specs': [spec] }));
    // Act + Assess
    expectRefusal(
      await failure(loadTable(store, 't')),
      'a partition field over 2 source columns (x_b: bucket[4])',
    );
  });

  it('refuses a v1 snapshot that lists its manifests inline instead of a manifest list', async () => {
    // Prepare
    const inline = { 'snapshot-id': 1, 'timestamp-ms': 1, manifests: ['s3://lake/t/metadata/m.avro'] };
    const store = await tableWith(
      metadata({ 'format-version': 1, 'current-snapshot-id': 1, snapshots: [inline], 'partition-spec': [] }),
    );
    // Act + Assess
    expectRefusal(
      await failure(loadTable(store, 't')),
      'a v1 snapshot without a manifest list (snapshot 1 lists its manifests inline)',
    );
  });

  it('refuses a file outside the table location (write.data.path elsewhere)', async () => {
    // Prepare
    const outside = snapshot({ 'manifest-list': 's3://lake/lists/snap-1.avro' });
    const store = await tableWith(metadata({ 'current-snapshot-id': 1, snapshots: [outside] }));
    const table = await loadTable(store, 't');
    // Act + Assess
    expectRefusal(
      await failure(readSnapshotFiles(store, table)),
      'a file outside the table location s3://lake/t (s3://lake/lists/snap-1.avro)',
    );
  });

  it('refuses a file in another bucket even where its path is below the location’s path (never relocated)', async () => {
    // Prepare
    const elsewhere = snapshot({ 'manifest-list': 's3://other-bucket/t/metadata/snap-1.avro' });
    const store = await tableWith(metadata({ 'current-snapshot-id': 1, snapshots: [elsewhere] }));
    const table = await loadTable(store, 't');
    // Act + Assess
    expectRefusal(
      await failure(readSnapshotFiles(store, table)),
      'a file in another bucket or filesystem (s3://other-bucket) than the table location s3://lake/t (s3://other-bucket/t/metadata/snap-1.avro)',
    );
  });

  it('refuses encrypted manifests (key_metadata in the manifest list)', async () => {
    // Prepare
    const store = await tableWith(metadata({ 'current-snapshot-id': 1, snapshots: [snapshot()] }));
    await store.put(
      't/metadata/snap-1.avro',
      await writeAvroContainer(SCRAMBLED_MANIFEST_LIST_SCHEMA, [
        listEntry('s3://lake/t/metadata/m0.avro', 0, Buffer.from('k')),
      ]),
    );
    // Act + Assess
    expectRefusal(
      await failure(readIcebergSnapshot(store, 't', { now: 0 })),
      'encrypted manifests (key_metadata)',
    );
  });

  it('refuses encrypted data files (key_metadata in a manifest entry)', async () => {
    // Prepare
    const store = await tableWith(metadata({ 'current-snapshot-id': 1, snapshots: [snapshot()] }));
    await store.put(
      't/metadata/snap-1.avro',
      await writeAvroContainer(SCRAMBLED_MANIFEST_LIST_SCHEMA, [
        listEntry('s3://lake/t/metadata/m0.avro', 0),
      ]),
    );
    await store.put('t/metadata/m0.avro', await manifest('s3://lake/t/data/a.parquet', 1, Buffer.from('k')));
    // Act + Assess
    expectRefusal(
      await failure(readIcebergSnapshot(store, 't', { now: 0 })),
      'encrypted data or delete files (key_metadata)',
    );
  });

  it('refuses partition-spec evolution inside one group: one partition path holding files of specs 0 and 1', async () => {
    // Prepare: specs 0 and 1 both render x=1 (spec 1 re-added the field); one file under each
    const store = await twoSpecTable(1);
    // Act + Assess
    expectRefusal(
      await failure(readIcebergSnapshot(store, 't', { now: 0 })),
      'partition-spec evolution inside one group (partition "x=1" holds files of specs 0 and 1)',
    );
  });

  it('reads the same two-spec table when the partitions differ: one group per partition path', async () => {
    // Prepare: as above, but the spec-1 file is in x=2
    const store = await twoSpecTable(2);
    // Act
    const { snapshot: result } = await readIcebergSnapshot(store, 't', { now: 0 });
    // Assess
    expect(result.partitions.map((p) => [p.partition, p.files.map((f) => f.key)])).toEqual([
      ['x=1', ['t/data/x=1/a.parquet']],
      ['x=2', ['t/data/x=2/b.parquet']],
    ]);
  });
});

describe('malformed Iceberg metadata', () => {
  it('says a metadata file that is not JSON is unreadable', async () => {
    // Prepare
    const store = await tableWith('{"format-version": 2,');
    // Act
    const err = await failure(loadTable(store, 't'));
    // Assess
    expect(err).toBeInstanceOf(IcebergMetadataError);
    expect((err as IcebergMetadataError).retryable).toBe(false);
    expect((err as Error).message).toMatch(
      /^Iceberg table memory:\/\/t has unreadable metadata: the metadata file is not JSON \(.+\)\. Nothing was changed; /,
    );
  });

  it('says which field breaks the spec', async () => {
    // Prepare
    const store = await tableWith(metadata({ location: 42 }));
    // Act
    const err = await failure(loadTable(store, 't'));
    // Assess
    expect((err as Error).message).toMatch(
      /^Iceberg table memory:\/\/t has unreadable metadata: the metadata file does not follow the Iceberg spec \(location: /,
    );
  });

  it('says a current-snapshot-id that names no snapshot is unreadable', async () => {
    // Prepare
    const text = metadata().replace('"current-snapshot-id":-1', '"current-snapshot-id":9223372036854775807');
    const store = await tableWith(text);
    // Act
    const err = await failure(loadTable(store, 't'));
    // Assess: the id exactly as written (2^63 - 1), not rounded to 9223372036854775808
    expect((err as Error).message).toBe(
      'Iceberg table memory://t has unreadable metadata: current-snapshot-id 9223372036854775807 names no snapshot. Nothing was changed; check that the location is an Iceberg table root (with metadata/) and that its metadata files are complete',
    );
  });

  it('says a snapshot id asked for is not in the table', async () => {
    // Prepare
    const store = await tableWith(metadata());
    const table = await loadTable(store, 't');
    // Act
    const err = await failure(readSnapshotFiles(store, table, { snapshotId: '8270633197658268308' }));
    // Assess
    expect((err as Error).message).toBe(
      "Iceberg table memory://t has unreadable metadata: snapshot 8270633197658268308 is not in the table's metadata. Nothing was changed; check that the location is an Iceberg table root (with metadata/) and that its metadata files are complete",
    );
  });
});
