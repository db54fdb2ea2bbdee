// `lake-compactor compact --format iceberg --catalog glue|rest` on an Iceberg table registered in a metastore
// catalog: the stand-in Glue endpoint (test/support/fake-glue.ts; no local Glue server exists) and the minimal REST
// catalog server (test/support/rest-catalog-server.ts), both on 127.0.0.1. The compaction reads the snapshot the
// catalog points at and commits each partition's replace through the catalog — the live row multiset (DuckDB
// reading the files the catalog's current snapshot names) is unchanged, the catalog's pointer moved, and no
// path-catalog `vN.metadata.json` was written (a commit the catalog's readers would never see). Flags that do not
// make a catalog are refused before anything is read.
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { GlueIcebergCatalog } from '../../functions/adapters/formats/iceberg/glue-catalog.js';
import { RestIcebergCatalog } from '../../functions/adapters/formats/iceberg/rest-catalog.js';
import { run } from '../../functions/cli/index.js';
import type { IcebergCatalog } from '../../functions/core/formats/iceberg/catalog.js';
import { readSnapshotFiles } from '../../functions/core/formats/iceberg/live-files.js';
import { captureIo } from '../support/cli-io.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';
import { type FakeGlue, startFakeGlue } from '../support/fake-glue.js';
import {
  buildCatalogTable,
  CATALOG_TABLE_DAYS,
  CATALOG_TABLE_NOW,
  type CatalogTable,
} from '../support/iceberg-catalog-table.js';
import { type RestCatalogServer, startRestCatalogServer } from '../support/rest-catalog-server.js';

/** Six small files per partition: worth merging under the default policy (four are not). */
const BATCHES = 6;
const ENV = { AWS_REGION: 'eu-west-1', AWS_ACCESS_KEY_ID: 'AKIDTEST', AWS_SECRET_ACCESS_KEY: 'test-secret' };

let db: DuckDb;
let t: CatalogTable;

/** The catalog's current snapshot: its live data files and every row they hold, canonically ordered. */
async function liveTable(
  catalog: IcebergCatalog,
): Promise<{ keys: string[]; rows: string[]; operation: string }> {
  const table = await catalog.load(t.root);
  const files = await readSnapshotFiles(t.store, table);
  const keys = files.dataFiles.map((f) => f.entry.file.key).sort();
  const list = keys.map((k) => sqlString(join(t.dir, k))).join(', ');
  const rows = await db.rows(`SELECT * FROM read_parquet([${list}]) ORDER BY ALL`);
  return {
    keys,
    rows: rows.map((r) => JSON.stringify(r)),
    operation: files.snapshot?.summary.operation ?? '',
  };
}

async function pathCatalogFiles(): Promise<string[]> {
  return (await readdir(join(t.dir, t.root, 'metadata')))
    .filter((n) => /^v\d+\.metadata\.json$/.test(n))
    .sort();
}

beforeAll(async () => {
  db = await openDuckDb();
});

afterAll(() => {
  db.close();
});

beforeEach(async () => {
  t = await buildCatalogTable(BATCHES);
});

afterEach(async () => {
  await t.remove();
});

describe('lake-compactor compact --format iceberg --catalog', () => {
  it('compacts a table registered in Glue through GetTable/UpdateTable, every row kept', async () => {
    // Prepare
    const glue: FakeGlue = await startFakeGlue();
    try {
      glue.putTable('lake', {
        Name: 'events',
        TableType: 'EXTERNAL_TABLE',
        Parameters: { table_type: 'ICEBERG', metadata_location: t.metadataLocation },
        StorageDescriptor: { Location: t.location },
      });
      const catalog = new GlueIcebergCatalog({
        client: glue.client(),
        setting: { type: 'glue', database: 'lake', table: 'events' },
        store: t.store,
      });
      const before = await liveTable(catalog);
      const pathFiles = await pathCatalogFiles();
      const io = captureIo({
        now: CATALOG_TABLE_NOW + 86_400_000,
        env: { ...ENV, AWS_ENDPOINT_URL_GLUE: glue.endpoint },
      });
      // Act
      const code = await run(
        [
          'compact',
          join(t.dir, t.root),
          '--format',
          'iceberg',
          '--catalog',
          'glue',
          '--glue-database',
          'lake',
          '--glue-table',
          'events',
        ],
        io,
      );
      // Assess
      expect(code, io.stderr.join('\n')).toBe(0);
      const after = await liveTable(catalog);
      expect(after.rows).toEqual(before.rows);
      expect(after.keys).toHaveLength(CATALOG_TABLE_DAYS.length);
      expect(after.operation).toBe('replace');
      expect(glue.table('lake', 'events')?.Parameters?.metadata_location).not.toBe(t.metadataLocation);
      expect(glue.requests.filter((r) => r.operation === 'UpdateTable')).toHaveLength(
        CATALOG_TABLE_DAYS.length,
      );
      expect(await pathCatalogFiles()).toEqual(pathFiles);
    } finally {
      await glue.close();
    }
  });

  it('compacts a table registered in a REST catalog with SigV4-signed requests, every row kept', async () => {
    // Prepare
    const server: RestCatalogServer = await startRestCatalogServer({
      store: t.store,
      now: () => CATALOG_TABLE_NOW + 86_400_000,
      sigv4: {
        signingName: 's3tables',
        region: 'eu-west-1',
        credentials: { accessKeyId: ENV.AWS_ACCESS_KEY_ID, secretAccessKey: ENV.AWS_SECRET_ACCESS_KEY },
      },
    });
    try {
      await server.register('lake', 'events', t.root, t.metadataLocation);
      const catalog = new RestIcebergCatalog({
        setting: {
          type: 'rest',
          uri: server.uri,
          namespace: 'lake',
          table: 'events',
          auth: { type: 'none' },
        },
        auth: {
          type: 'sigv4',
          signingName: 's3tables',
          region: 'eu-west-1',
          credentials: async () => ({
            accessKeyId: ENV.AWS_ACCESS_KEY_ID,
            secretAccessKey: ENV.AWS_SECRET_ACCESS_KEY,
          }),
        },
        store: t.store,
      });
      const before = await liveTable(catalog);
      const pathFiles = await pathCatalogFiles();
      const io = captureIo({ now: CATALOG_TABLE_NOW + 86_400_000, env: ENV });
      // Act
      const code = await run(
        [
          'compact',
          join(t.dir, t.root),
          '--format',
          'iceberg',
          '--catalog',
          'rest',
          '--rest-uri',
          server.uri,
          '--rest-namespace',
          'lake',
          '--rest-table',
          'events',
          '--rest-auth',
          'sigv4',
          '--rest-signing-name',
          's3tables',
          '--rest-region',
          'eu-west-1',
        ],
        io,
      );
      // Assess
      expect(code, io.stderr.join('\n')).toBe(0);
      const after = await liveTable(catalog);
      expect(after.rows).toEqual(before.rows);
      expect(after.keys).toHaveLength(CATALOG_TABLE_DAYS.length);
      expect(after.operation).toBe('replace');
      expect(server.metadataLocation('lake', 'events')).not.toBe(t.metadataLocation);
      expect(server.requests.filter((r) => r.method === 'POST')).toHaveLength(CATALOG_TABLE_DAYS.length);
      expect(await pathCatalogFiles()).toEqual(pathFiles);
    } finally {
      await server.close();
    }
  });

  it('refuses --catalog on a non-Iceberg format and an incomplete catalog, naming the flag, before reading anything', async () => {
    // Prepare
    const io = captureIo({ env: ENV });
    const io2 = captureIo({ env: ENV });
    // Act
    const onDelta = await run(['compact', t.dir, '--format', 'delta', '--catalog', 'glue'], io);
    const incomplete = await run(
      ['compact', join(t.dir, t.root), '--format', 'iceberg', '--catalog', 'glue', '--glue-database', 'lake'],
      io2,
    );
    // Assess
    expect(onDelta).toBe(2);
    expect(io.stderr.join('\n')).toMatch(/--catalog is a setting of Iceberg tables/);
    expect(incomplete).toBe(2);
    expect(io2.stderr.join('\n')).toMatch(/--glue-table/);
  });
});
