// The path-based catalog finds a table's current metadata from version-hint.text or the highest-numbered file
// (both naming styles), and a table copied under another root is read there, its writer paths relocated. As a
// catalog (load and commit) it refuses a table whose metadata a metastore names unless the config says otherwise.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../../functions/adapters/memory-object-store.js';
import { checkPathMetadataNaming } from '../../../../../functions/core/formats/iceberg/catalog.js';
import { IcebergCatalogMismatchError } from '../../../../../functions/core/formats/iceberg/errors.js';
import {
  commitAppend,
  findCurrentMetadata,
  IcebergMetadataError,
  loadTable,
  PathCatalog,
  readSnapshotFiles,
} from '../../../../../functions/core/formats/iceberg/index.js';
import { fixtureStore, ICEBERG_FIXTURES } from './fixture-tables.js';

/** Copies a fixture table into a memory store under `root` (every file, byte for byte). */
async function copyTable(name: string, root: string): Promise<MemoryObjectStore> {
  const store = new MemoryObjectStore();
  const base = join(ICEBERG_FIXTURES, name);
  for (const entry of readdirSync(base, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    await store.put(`${root}/${path.slice(base.length + 1)}`, readFileSync(path));
  }
  return store;
}

const metadataOnly = async (entries: Record<string, string>): Promise<MemoryObjectStore> => {
  const store = new MemoryObjectStore();
  for (const [key, body] of Object.entries(entries)) await store.put(key, body);
  return store;
};

describe('the path-based catalog', () => {
  it('follows a numeric version-hint.text to vN.metadata.json (spark_v1_unpartitioned_small_files: hint 2)', async () => {
    // Act
    const found = await findCurrentMetadata(fixtureStore(), 'spark_v1_unpartitioned_small_files');
    // Assess
    expect(found).toEqual({
      key: 'spark_v1_unpartitioned_small_files/metadata/v2.metadata.json',
      version: 2,
    });
  });

  it('takes the highest vN.metadata.json when the hint is empty (spark_v3_deletion_vectors)', async () => {
    // Act
    const found = await findCurrentMetadata(fixtureStore(), 'spark_v3_deletion_vectors');
    // Assess
    expect(found).toEqual({ key: 'spark_v3_deletion_vectors/metadata/v3.metadata.json', version: 3 });
  });

  it('takes the highest NNNNN-<uuid>.metadata.json when there is no hint (spark_v2_schema_evolution: 00013)', async () => {
    // Act
    const found = await findCurrentMetadata(fixtureStore(), 'spark_v2_schema_evolution');
    // Assess
    expect(found).toEqual({
      key: 'spark_v2_schema_evolution/metadata/00013-0cfc30af-a802-4a38-9355-4ef102c0fe77.metadata.json',
      version: 13,
    });
  });

  it('moves past a hint that lags behind a newer committed version, as Hadoop tables do', async () => {
    // Prepare: v1 and v2 exist, the hint still says 1 (the commit wrote v2, the hint write was lost)
    const store = await metadataOnly({
      't/metadata/v1.metadata.json': '{}',
      't/metadata/v2.metadata.json': '{}',
      't/metadata/version-hint.text': '1\n',
    });
    // Act
    const found = await findCurrentMetadata(store, 't');
    // Assess
    expect(found).toEqual({ key: 't/metadata/v2.metadata.json', version: 2 });
  });

  it('falls back to listing when the hint names a file that does not exist', async () => {
    // Prepare
    const store = await metadataOnly({
      't/metadata/v3.metadata.json': '{}',
      't/metadata/version-hint.text': '7',
    });
    // Act
    const found = await findCurrentMetadata(store, 't');
    // Assess
    expect(found).toEqual({ key: 't/metadata/v3.metadata.json', version: 3 });
  });

  it('refuses a folder without metadata, naming where it looked', async () => {
    // Prepare
    const store = await metadataOnly({ 't/data/a.parquet': 'x' });
    // Act
    const attempt = findCurrentMetadata(store, 't');
    // Assess
    await expect(attempt).rejects.toThrow(IcebergMetadataError);
    await expect(attempt).rejects.toThrow(
      'Iceberg table memory://t has unreadable metadata: no metadata file under t/metadata/. Nothing was changed; check that the location is an Iceberg table root (with metadata/) and that its metadata files are complete',
    );
  });

  it('refuses two metadata files that claim the same version', async () => {
    // Prepare
    const store = await metadataOnly({
      't/metadata/00001-aaaa.metadata.json': '{}',
      't/metadata/00001-bbbb.metadata.json': '{}',
    });
    // Act
    const attempt = findCurrentMetadata(store, 't');
    // Assess
    await expect(attempt).rejects.toThrow(
      'Iceberg table memory://t has unreadable metadata: 2 metadata files claim version 1 (t/metadata/00001-aaaa.metadata.json, t/metadata/00001-bbbb.metadata.json); a path-based table has one per version',
    );
  });

  it('reads a gzip-compressed metadata file (vN.gz.metadata.json)', async () => {
    // Prepare: the equality-delete table with its current metadata re-published gzipped as the next version
    const store = await copyTable('java_v2_equality_deletes_identity_partitioned', 'lake/t');
    const plain = await store.get('lake/t/metadata/v6.metadata.json');
    await store.put('lake/t/metadata/v7.gz.metadata.json', gzipSync(plain));
    // Act
    const table = await loadTable(store, 'lake/t');
    // Assess
    expect(table.metadataKey).toBe('lake/t/metadata/v7.gz.metadata.json');
    expect(table.metadata.currentSnapshotId).toBe(3138177759849079112n);
  });

  it('reads a table copied under another root: the writer paths (s3://testbucketcdw/…) resolve below the new root', async () => {
    // Prepare
    const store = await copyTable('spark_v2_position_deletes', 'warehouse/db/events');
    // Act
    const table = await loadTable(store, 'warehouse/db/events/');
    const files = await readSnapshotFiles(store, table);
    // Assess: the current snapshot's 11 data and 3 delete files (README), every key present in the copy
    expect(table.tableRoot).toBe('warehouse/db/events');
    expect(files.dataFiles).toHaveLength(11);
    expect(files.deleteFiles).toHaveLength(3);
    for (const f of [...files.dataFiles, ...files.deleteFiles]) {
      expect(
        f.entry.file.path.startsWith(
          's3://testbucketcdw/spark_test/public/spark_generated_iceberg_test/data/',
        ),
      ).toBe(true);
      expect(f.entry.file.key.startsWith('warehouse/db/events/data/')).toBe(true);
      expect(await store.head(f.entry.file.key)).toBeDefined();
    }
  });
});

describe('the path catalog and metastore-named metadata', () => {
  const named = (names: readonly string[]) => () => checkPathMetadataNaming('memory://t', names, 'hadoop');

  it('accepts v<N> names (plain and gzipped) beside the hint and other files, and a folder without metadata', () => {
    // Act / Assess
    expect(
      named([
        'v1.metadata.json',
        'v2.gz.metadata.json',
        'v3.metadata.json.gz',
        'version-hint.text',
        'snap-1-1-a.avro',
      ]),
    ).not.toThrow();
    expect(named(['snap-1-1-a.avro'])).not.toThrow();
  });

  it('refuses 000NN-<uuid> names, alone or beside v<N> ones, and any other *.metadata.json, saying what it found', () => {
    // Act / Assess
    expect(named(['00000-a.metadata.json', '00001-b.metadata.json'])).toThrow(
      /holds no v<N>\.metadata\.json but 2 metadata files named as a metastore catalog names them \(00000-a\.metadata\.json, 00001-b\.metadata\.json\)/,
    );
    expect(named(['v1.metadata.json', '00001-b.gz.metadata.json'])).toThrow(
      /holds 1 metadata file named as a metastore catalog names them \(00001-b\.gz\.metadata\.json\) beside 1 v<N>\.metadata\.json/,
    );
    expect(named(['v1.metadata.json', 'current.metadata.json'])).toThrow(IcebergCatalogMismatchError);
    expect(
      named([
        '00000-a.metadata.json',
        '00001-b.metadata.json',
        '00002-c.metadata.json',
        '00003-d.metadata.json',
      ]),
    ).toThrow(/\(00000-a\.metadata\.json, …, 00003-d\.metadata\.json\)/);
  });

  it('accepts them when the config says metadataNaming "uuid"', () => {
    // Act / Assess
    expect(() => checkPathMetadataNaming('memory://t', ['00000-a.metadata.json'], 'uuid')).not.toThrow();
  });

  it('refuses at load (spark_v2_position_deletes) unless told, and loads the highest 000NN file when told', async () => {
    // Prepare
    const store = fixtureStore();

    // Act
    const refused = await new PathCatalog(store).load('spark_v2_position_deletes').catch((e: unknown) => e);
    const told = await new PathCatalog(store, { metadataNaming: 'uuid' }).load('spark_v2_position_deletes');

    // Assess
    expect(refused).toBeInstanceOf(IcebergCatalogMismatchError);
    expect(told.metadataKey).toMatch(/\/00009-[0-9a-f-]+\.metadata\.json$/);
  });

  it('refuses the commit when a catalog writer took the table over after the load, and the commit leaves none of its files', async () => {
    // Prepare: a v<N> table loaded; then a Glue writer puts its 00002-<uuid> file beside it
    const store = await copyTable('spark_v1_unpartitioned_small_files', 't');
    const catalog = new PathCatalog(store);
    await catalog.load('t');
    await store.put(
      't/metadata/00002-0b4a7d1c-4f7e-4c52-9d8a-1f2e3d4c5b6a.metadata.json',
      await store.get('t/metadata/v2.metadata.json'),
    );
    const keysBefore: string[] = [];
    for await (const o of store.listAll('t/')) keysBefore.push(o.key);
    const clock = { now: () => Date.UTC(2026, 0, 2) };

    // Act: an append through the commit loop (it writes its manifests before handing the metadata to the catalog)
    const appended = commitAppend(store, catalog, { tableLocation: 't', addedFiles: [] }, { clock });

    // Assess
    await expect(appended).rejects.toThrow(IcebergCatalogMismatchError);
    const keysAfter: string[] = [];
    for await (const o of store.listAll('t/')) keysAfter.push(o.key);
    expect(keysAfter).toEqual(keysBefore);
  });
});
