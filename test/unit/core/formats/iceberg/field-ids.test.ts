// Manifest fields and column statistics are matched by Iceberg field id, never by name: writers name the same
// field differently, and a column renamed by schema evolution keeps its id across files written under each name.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../../functions/adapters/memory-object-store.js';
import {
  findField,
  loadTable,
  PathResolver,
  readManifest,
  readManifestList,
  readSnapshotFiles,
  schemaById,
} from '../../../../../functions/core/formats/iceberg/index.js';
import { type DuckDb, openDuckDb, sqlString } from '../../../../support/duckdb.js';
import {
  SCRAMBLED_MANIFEST_LIST_SCHEMA,
  SCRAMBLED_MANIFEST_SCHEMA,
  writeAvroContainer,
} from './avro-writer.js';
import { fixturePath, fixtureStore, recordedSnapshots } from './fixture-tables.js';

let duckdb: DuckDb;
beforeAll(async () => {
  duckdb = await openDuckDb();
});
afterAll(() => duckdb.close());

describe('fields matched by field id', () => {
  it('reads field 504 from manifest lists that name it added_data_files_count (Spark 2.4) and added_files_count (Iceberg 1.10)', async () => {
    // Prepare: the two writers' manifest lists, their header schemas checked as plain text
    const store = fixtureStore();
    const cases = [
      ['spark_v1_unpartitioned_small_files', 'added_data_files_count'],
      ['spark_v3_deletion_vectors', 'added_files_count'],
    ] as const;
    for (const [name, avroName] of cases) {
      const table = await loadTable(store, name);
      const first = table.metadata.snapshots[0];
      if (first === undefined) throw new Error('no snapshot');
      const header = readFileSync(fixturePath(table.paths.key(first.manifestList))).toString('latin1');
      expect(header).toContain(`"name":"${avroName}"`);
      // Act
      const manifests = await readManifestList(
        { store, table: name, paths: table.paths, formatVersion: table.metadata.formatVersion },
        first.manifestList,
      );
      // Assess: the count the writer's summary records for the snapshot's added data files
      const recorded = recordedSnapshots(name, table.metadataKey.split('/').pop() ?? '')[0];
      const added = manifests.reduce((a, m) => a + (m.addedFilesCount ?? 0), 0);
      expect(String(added)).toBe(recorded?.summary['added-data-files']);
    }
  });

  it('reads a manifest list and manifest whose fields are renamed, reordered and shadowed by decoy names', async () => {
    // Prepare: a manifest list with fields named a, b, … and a decoy `manifest_path` of another field id
    const store = new MemoryObjectStore();
    const manifest = await writeAvroContainer(SCRAMBLED_MANIFEST_SCHEMA, [
      {
        st: 1,
        snap: null,
        seq: null,
        file: {
          size: 1234n,
          rows: 7n,
          part: { whatever: 42 },
          fmt: 'parquet',
          where: 's3://b/t/data/x=42/f.parquet',
          kind: 0,
          km: null,
          file_path: 's3://b/t/data/decoy.parquet',
        },
      },
    ]);
    await store.put('t/metadata/m0.avro', manifest);
    const list = await writeAvroContainer(SCRAMBLED_MANIFEST_LIST_SCHEMA, [
      {
        a: 's3://b/t/metadata/m0.avro',
        manifest_path: 's3://b/t/metadata/decoy.avro',
        len: BigInt(manifest.byteLength),
        b: 0,
        c: 9007199254740993n, // 2^53 + 1: not representable as a JS number
        d: 5n,
        e: 5n,
        f: 0,
        k: null,
        g: null,
      },
    ]);
    await store.put('t/metadata/snap.avro', list);
    const ctx = {
      store,
      table: 'memory://t',
      paths: new PathResolver('memory://t', 's3://b/t', 't'),
      formatVersion: 2 as const,
    };
    // Act
    const manifests = await readManifestList(ctx, 's3://b/t/metadata/snap.avro');
    const entries = await readManifest(ctx, manifests[0] ?? (undefined as never));
    // Assess: values by field id, BigInt exact; ADDED entry inherits snapshot id and sequence number
    expect(manifests).toHaveLength(1);
    expect(manifests[0]).toMatchObject({
      path: 's3://b/t/metadata/m0.avro',
      key: 't/metadata/m0.avro',
      specId: 0,
      content: 'data',
      sequenceNumber: 5n,
      addedSnapshotId: 9007199254740993n,
    });
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      status: 'added',
      snapshotId: 9007199254740993n,
      dataSequenceNumber: 5n,
      fileSequenceNumber: 5n,
      file: {
        content: 'data',
        path: 's3://b/t/data/x=42/f.parquet',
        key: 't/data/x=42/f.parquet',
        format: 'PARQUET',
        recordCount: 7n,
        fileSizeInBytes: 1234n,
        partition: { specId: 0, values: [{ fieldId: 1000, value: 42 }] },
      },
    });
  });

  it('spark_v2_schema_evolution: column 2 is one column under the names new_column and payload, resolved by id through each snapshot schema', async () => {
    // Prepare
    const store = fixtureStore();
    const table = await loadTable(store, 'spark_v2_schema_evolution');
    // Act
    const files = await readSnapshotFiles(store, table);
    // Assess: the README's schema ids per snapshot, and field 2's name in each schema (dropped in 4's successor)
    expect(table.metadata.snapshots.map((s) => s.schemaId)).toEqual([0, 1, 2, 3, 4, 0, 5]);
    const names = table.metadata.schemas.map((s) => findField(s, 2)?.name ?? null);
    expect(names).toEqual([null, 'new_column', 'payload', 'payload', 'payload', null]);
    expect(findField(schemaById(table.metadata) ?? (undefined as never), 2)).toBeUndefined();
    // Assess: per data file, the Parquet footer's name for field id 2 (read with DuckDB) is the name in the
    // schema the file was written under, and the manifest's statistics for it are keyed by id 2 regardless
    const seen = new Set<string>();
    for (const f of files.dataFiles) {
      const columns = await duckdb.rows(
        `SELECT name, field_id FROM parquet_schema(${sqlString(fixturePath(f.entry.file.key))}) WHERE field_id = 2`,
      );
      if (columns.length === 0) {
        expect(f.entry.file.valueCounts.has(2)).toBe(false);
        continue;
      }
      const parquetName = columns[0]?.name as string;
      seen.add(parquetName);
      const writtenUnder = table.metadata.snapshots.find(
        (s) => s.snapshotId === f.entry.snapshotId,
      )?.schemaId;
      const schema = schemaById(table.metadata, writtenUnder);
      expect(schema === undefined ? undefined : findField(schema, 2)?.name).toBe(parquetName);
      expect(f.entry.file.valueCounts.get(2)).toBe(1n);
    }
    expect([...seen].sort()).toEqual(['new_column', 'payload']);
  });
});
