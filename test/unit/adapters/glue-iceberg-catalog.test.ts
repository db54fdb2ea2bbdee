// The Glue Data Catalog as an Iceberg catalog, against a stand-in Glue endpoint (test/support/fake-glue.ts: an
// in-memory HTTP server on 127.0.0.1 speaking Glue's JSON protocol, because no local Glue server exists) driven
// by the real @aws-sdk/client-glue: commitReplace commits by a new `<N+1>-<uuid>.metadata.json` and UpdateTable
// with the VersionId read (parameters and StorageDescriptor kept as Iceberg's GlueCatalog keeps them), a commit
// that wins the race between our GetTable and UpdateTable is rebased over (our unreferenced file removed), one
// that removed an input aborts the replace, a failed UpdateTable removes the file only when Glue refused, and a
// GetTable without a VersionId is refused before anything is written (never an unconditional UpdateTable).
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { GlueIcebergCatalog } from '../../../functions/adapters/formats/iceberg/glue-catalog.js';
import { TransientStoreError } from '../../../functions/core/errors.js';
import { loadTable } from '../../../functions/core/formats/iceberg/catalog.js';
import { IcebergCatalogError } from '../../../functions/core/formats/iceberg/catalogs.js';
import { commitAppend, commitReplace } from '../../../functions/core/formats/iceberg/commit.js';
import { IcebergCommitConflictError } from '../../../functions/core/formats/iceberg/errors.js';
import { type FakeGlue, startFakeGlue } from '../../support/fake-glue.js';
import { folderContentSnapshot } from '../../support/folder-snapshot.js';
import {
  buildCatalogTable,
  CATALOG_TABLE_NOW,
  type CatalogTable,
  copyOfDataFile,
  livePaths,
} from '../../support/iceberg-catalog-table.js';

const clock = { now: () => CATALOG_TABLE_NOW + 60_000 };
const noWait = { clock, sleep: async () => {}, backoffMs: 0 };
const SETTING = { type: 'glue', database: 'lake', table: 'events' } as const;

let glue: FakeGlue;
let t: CatalogTable;

function catalog(): GlueIcebergCatalog {
  return new GlueIcebergCatalog({ client: glue.client(), setting: SETTING, store: t.store });
}

async function metadataFiles(): Promise<string[]> {
  return (await readdir(join(t.dir, t.root, 'metadata'))).filter((n) => n.endsWith('.metadata.json')).sort();
}

beforeEach(async () => {
  glue = await startFakeGlue();
  t = await buildCatalogTable();
  // Registered as Iceberg's GlueCatalog creates a table: parameters, and a StorageDescriptor with the columns.
  glue.putTable('lake', {
    Name: 'events',
    TableType: 'EXTERNAL_TABLE',
    Owner: 'ingest',
    Parameters: { table_type: 'ICEBERG', metadata_location: t.metadataLocation, 'team.owner': 'data-eng' },
    StorageDescriptor: {
      Location: t.location,
      Columns: [{ Name: 'user_id', Type: 'bigint', Parameters: { 'iceberg.field.id': '1' } }],
    },
  });
});

afterEach(async () => {
  await glue.close();
  await t.remove();
});

describe('GlueIcebergCatalog', () => {
  it('loads the metadata file the Glue table points at, with the version its name carries', async () => {
    // Act
    const loaded = await catalog().load(t.root);
    // Assess
    expect(loaded.metadataKey).toBe(t.initial.metadataKey);
    expect(loaded.version).toBe(t.initial.version);
    expect(loaded.metadata.currentSnapshotId).toBe(t.initial.metadata.currentSnapshotId);
  });

  it('commits a replace as a new <N+1>-<uuid> metadata file and an UpdateTable keeping the other parameters and the storage descriptor', async () => {
    // Prepare
    const [input] = await livePaths(t.store, t.initial);
    const output = await copyOfDataFile(t.store, t.initial, input as string);
    // Act
    const result = await commitReplace(
      t.store,
      catalog(),
      {
        tableLocation: t.root,
        startingSnapshotId: t.initial.metadata.currentSnapshotId ?? -1n,
        removedFiles: [input as string],
        addedFiles: [output],
      },
      noWait,
    );
    // Assess: Glue points at the new file, the old one is previous, the rest is as it was.
    const expectedName = new RegExp(
      `/metadata/${String(t.initial.version + 1).padStart(5, '0')}-[0-9a-f-]{36}\\.metadata\\.json$`,
    );
    expect(result.metadataKey).toMatch(expectedName);
    const table = glue.table('lake', 'events');
    expect(table?.Parameters).toEqual({
      table_type: 'ICEBERG',
      metadata_location: join(t.dir, result.metadataKey),
      previous_metadata_location: t.metadataLocation,
      'team.owner': 'data-eng',
    });
    expect(table?.Owner).toBe('ingest');
    expect(table?.StorageDescriptor).toEqual({
      Location: t.location,
      Columns: [{ Name: 'user_id', Type: 'bigint', Parameters: { 'iceberg.field.id': '1' } }],
    });
    const update = glue.requests.find((r) => r.operation === 'UpdateTable');
    expect(update?.body).toMatchObject({ DatabaseName: 'lake', VersionId: '1', SkipArchive: true });
    // What Glue points at is the replace: the input gone, its copy live.
    const after = await catalog().load(t.root);
    expect(after.metadata.currentSnapshotId).toBe(result.snapshotId);
    expect(await livePaths(t.store, after)).toContain(output.path);
    expect(await livePaths(t.store, after)).not.toContain(input);
  });

  it('keeps the Glue table’s own StorageDescriptor.Location, never the location the metadata file records (L5)', async () => {
    // Prepare: the Glue table says another location than the metadata (a writer of the table rewrote its metadata)
    const registered = glue.table('lake', 'events');
    glue.putTable('lake', {
      ...registered,
      Name: 'events',
      StorageDescriptor: { ...registered?.StorageDescriptor, Location: 's3://governed-bucket/events' },
    });
    const [input] = await livePaths(t.store, t.initial);
    const output = await copyOfDataFile(t.store, t.initial, input as string);

    // Act
    await commitReplace(
      t.store,
      catalog(),
      {
        tableLocation: t.root,
        startingSnapshotId: t.initial.metadata.currentSnapshotId ?? -1n,
        removedFiles: [input as string],
        addedFiles: [output],
      },
      noWait,
    );

    // Assess: the commit went through, and the Location Glue held is what it holds
    const update = glue.requests.find((r) => r.operation === 'UpdateTable');
    expect(update?.body).toMatchObject({
      TableInput: { StorageDescriptor: { Location: 's3://governed-bucket/events' } },
    });
    expect(glue.table('lake', 'events')?.StorageDescriptor?.Location).toBe('s3://governed-bucket/events');
    expect(t.initial.metadata.location).not.toBe('s3://governed-bucket/events');
  });

  it('rebases over an append committed between its GetTable and UpdateTable, and removes its refused metadata file', async () => {
    // Prepare: another writer appends (a copy of a file, as a new file) just before our UpdateTable is applied.
    const [input, other] = await livePaths(t.store, t.initial);
    const output = await copyOfDataFile(t.store, t.initial, input as string);
    const appended = await copyOfDataFile(t.store, t.initial, other as string);
    let appendSnapshot: bigint | undefined;
    glue.beforeUpdate(async () => {
      const r = await commitAppend(
        t.store,
        catalog(),
        { tableLocation: t.root, addedFiles: [appended] },
        noWait,
      );
      appendSnapshot = r.snapshotId;
    });
    // Act
    const result = await commitReplace(
      t.store,
      catalog(),
      {
        tableLocation: t.root,
        startingSnapshotId: t.initial.metadata.currentSnapshotId ?? -1n,
        removedFiles: [input as string],
        addedFiles: [output],
      },
      noWait,
    );
    // Assess: the second attempt committed on top of the append, which stays live.
    expect(result.attempts).toBe(2);
    const after = await catalog().load(t.root);
    const replace = after.metadata.snapshots.find((s) => s.snapshotId === result.snapshotId);
    expect(replace?.parentSnapshotId).toBe(appendSnapshot);
    expect(await livePaths(t.store, after)).toEqual(expect.arrayContaining([appended.path, output.path]));
    expect(await livePaths(t.store, after)).not.toContain(input);
    // Every metadata file is the path catalog's, the append's or the committed replace's: the refused one is gone.
    const uuidNamed = (await metadataFiles()).filter((n) => /^\d{5}-/.test(n));
    expect(uuidNamed).toHaveLength(2);
    expect(glue.table('lake', 'events')?.Parameters?.metadata_location).toBe(join(t.dir, result.metadataKey));
  });

  it('aborts when the commit that won the race removed one of its inputs, leaving Glue on that commit', async () => {
    // Prepare: another compaction replaces the same input first.
    const [input] = await livePaths(t.store, t.initial);
    const ours = await copyOfDataFile(t.store, t.initial, input as string);
    const theirs = await copyOfDataFile(t.store, t.initial, input as string);
    const starting = t.initial.metadata.currentSnapshotId ?? -1n;
    glue.beforeUpdate(async () => {
      await commitReplace(
        t.store,
        catalog(),
        {
          tableLocation: t.root,
          startingSnapshotId: starting,
          removedFiles: [input as string],
          addedFiles: [theirs],
        },
        noWait,
      );
    });
    // Act
    const attempt = commitReplace(
      t.store,
      catalog(),
      {
        tableLocation: t.root,
        startingSnapshotId: starting,
        removedFiles: [input as string],
        addedFiles: [ours],
      },
      noWait,
    );
    // Assess
    await expect(attempt).rejects.toBeInstanceOf(IcebergCommitConflictError);
    const after = await catalog().load(t.root);
    expect(await livePaths(t.store, after)).toContain(theirs.path);
    expect(await livePaths(t.store, after)).not.toContain(ours.path);
    expect((await metadataFiles()).filter((n) => /^\d{5}-/.test(n))).toHaveLength(1);
  });

  it('keeps its metadata file when UpdateTable fails with a 5xx (the outcome is unknown) and removes it when Glue refused', async () => {
    // Prepare
    const c = catalog();
    const base = await c.load(t.root);
    const text = await t.store.get(base.metadataKey);
    const before = await metadataFiles();
    // Act / Assess: unknown → retryable, the file stays.
    glue.failNextUpdate(500, 'InternalServiceException');
    await expect(c.commit(base, new TextDecoder().decode(text))).rejects.toBeInstanceOf(TransientStoreError);
    const kept = (await metadataFiles()).filter((n) => !before.includes(n));
    expect(kept).toHaveLength(1);
    // Act / Assess: refused → permanent, the new file removed.
    glue.failNextUpdate(400, 'AccessDeniedException');
    await expect(c.commit(base, new TextDecoder().decode(text))).rejects.toBeInstanceOf(IcebergCatalogError);
    expect((await metadataFiles()).filter((n) => !before.includes(n))).toEqual(kept);
    expect(glue.table('lake', 'events')?.Parameters?.metadata_location).toBe(t.metadataLocation);
  });

  it('refuses, as pyiceberg does, to commit when GetTable returns no VersionId: no UpdateTable is sent and nothing of the commit is left', async () => {
    // Prepare: an output ready to replace an input; Glue answers GetTable without a VersionId from now on
    const [input] = await livePaths(t.store, t.initial);
    const output = await copyOfDataFile(t.store, t.initial, input as string);
    glue.omitVersionId();
    const before = await folderContentSnapshot(t.dir);

    // Act
    const attempt = commitReplace(
      t.store,
      catalog(),
      {
        tableLocation: t.root,
        startingSnapshotId: t.initial.metadata.currentSnapshotId as bigint,
        removedFiles: [input as string],
        addedFiles: [output],
      },
      noWait,
    );

    // Assess: a permanent refusal naming why; Glue never asked to update; every manifest and metadata file written
    // for the attempt removed, so the folder is byte for byte what it was
    await expect(attempt).rejects.toBeInstanceOf(IcebergCatalogError);
    await expect(attempt).rejects.toThrow(/without a VersionId.*refused as pyiceberg refuses it/);
    expect(glue.requests.map((r) => r.operation)).not.toContain('UpdateTable');
    expect(glue.table('lake', 'events')?.Parameters?.metadata_location).toBe(t.metadataLocation);
    expect(await folderContentSnapshot(t.dir)).toEqual(before);
    expect(await livePaths(t.store, await catalog().load(t.root))).toContain(input);
  });

  it('refuses a Glue table that is not an Iceberg table, and one that does not exist', async () => {
    // Prepare
    glue.putTable('lake', { Name: 'hive', Parameters: { EXTERNAL: 'TRUE' } });
    const hive = new GlueIcebergCatalog({
      client: glue.client(),
      setting: { type: 'glue', database: 'lake', table: 'hive' },
      store: t.store,
    });
    const missing = new GlueIcebergCatalog({
      client: glue.client(),
      setting: { type: 'glue', database: 'lake', table: 'nope' },
      store: t.store,
    });
    // Act / Assess
    await expect(hive.load(t.root)).rejects.toThrow(/not an Iceberg table .*table_type parameter is missing/);
    await expect(missing.load(t.root)).rejects.toThrow(/EntityNotFoundException/);
    // The path-based view of the same folder is untouched by any of this.
    expect((await loadTable(t.store, t.root)).metadataKey).toBe(t.initial.metadataKey);
  });
});
