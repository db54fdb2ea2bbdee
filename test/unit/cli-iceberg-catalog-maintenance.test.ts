// `lake-compactor vacuum --format iceberg --catalog …` and `lake-compactor settle --format iceberg --catalog …` on
// Iceberg tables registered in a metastore catalog: the minimal REST catalog server (test/support/rest-catalog-
// server.ts) and the stand-in Glue endpoint (test/support/fake-glue.ts: a narrow in-process emulation of GetTable /
// UpdateTable with Glue's VersionId lock, because no local Glue server exists), both on 127.0.0.1, driven through
// the CLI's own flags and environment.
//
// vacuum expires through the catalog (its pointer moves, only the current snapshot stays, exactly the files only
// expired snapshots listed go). settle of a group whose Glue commit failed with an unknown outcome (every UpdateTable
// answered 500, the process died) goes through Glue: it finds no snapshot of the group where Glue points and commits
// it there — the path catalog would take the failed attempt's metadata file, which Glue never pointed at, for the
// table's newest version and call the group done.
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { GlueIcebergCatalog } from '../../functions/adapters/formats/iceberg/glue-catalog.js';
import { RestIcebergCatalog } from '../../functions/adapters/formats/iceberg/rest-catalog.js';
import { runCompact } from '../../functions/cli/compact.js';
import { run } from '../../functions/cli/index.js';
import type { IcebergCatalog } from '../../functions/core/formats/iceberg/catalog.js';
import { RUN_ID_PROPERTY } from '../../functions/core/formats/iceberg/group-commit.js';
import { readSnapshotFiles } from '../../functions/core/formats/iceberg/live-files.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';
import { captureIo } from '../support/cli-io.js';
import { observedStore } from '../support/crash-store.js';
import { type FakeGlue, startFakeGlue } from '../support/fake-glue.js';
import {
  buildCatalogTable,
  CATALOG_TABLE_DAYS,
  CATALOG_TABLE_NOW,
  type CatalogTable,
} from '../support/iceberg-catalog-table.js';
import {
  buildMaintainedTemplate,
  copyMaintainedTable,
  expectedExpiryDeletes,
  filesUnder,
  MAINTENANCE_FAR,
  type MaintainedTable,
} from '../support/iceberg-maintenance-table.js';
import { type RestCatalogServer, startRestCatalogServer } from '../support/rest-catalog-server.js';

const ENV = { AWS_REGION: 'eu-west-1', AWS_ACCESS_KEY_ID: 'AKIDTEST', AWS_SECRET_ACCESS_KEY: 'test-secret' };
const GLUE_FLAGS = ['--catalog', 'glue', '--glue-database', 'lake', '--glue-table', 'events'];

/** The live data files of what `catalog` points at, and the rows they hold by the manifests' record counts. */
async function liveOf(store: ObjectStore, catalog: IcebergCatalog, root: string) {
  const table = await catalog.load(root);
  const files = await readSnapshotFiles(store, table);
  return {
    table,
    snapshot: files.snapshot,
    keys: files.dataFiles.map((f) => f.entry.file.key).sort(),
    rows: files.dataFiles.reduce((n, f) => n + f.entry.file.recordCount, 0n),
  };
}

describe('lake-compactor vacuum --format iceberg --catalog rest', () => {
  let template: string;
  let t: MaintainedTable;
  let server: RestCatalogServer;
  const catalog = () =>
    new RestIcebergCatalog({
      setting: { type: 'rest', uri: server.uri, namespace: 'lake', table: 'events', auth: { type: 'none' } },
      auth: { type: 'none' },
      store: t.store,
    });

  beforeAll(async () => {
    template = await buildMaintainedTemplate();
  });

  afterAll(async () => {
    const { rm } = await import('node:fs/promises');
    await rm(template, { recursive: true, force: true });
  });

  beforeEach(async () => {
    t = await copyMaintainedTable(template);
    server = await startRestCatalogServer({ store: t.store, now: () => MAINTENANCE_FAR });
    await server.register('lake', 'events', t.root, t.metadataLocation);
  });

  afterEach(async () => {
    await server.close();
    await t.remove();
  });

  it('expires through the REST catalog and deletes exactly what only expired snapshots listed', async () => {
    // Prepare
    const before = await liveOf(t.store, catalog(), t.root);
    const current = before.table.metadata.currentSnapshotId as bigint;
    const expected = await expectedExpiryDeletes(t.store, before.table, new Set([current]));
    const files = (await filesUnder(t.dir)).filter((f) => !f.endsWith('.metadata.json'));
    const io = captureIo({ now: MAINTENANCE_FAR, env: ENV });
    const flags = ['--catalog', 'rest', '--rest-uri', server.uri, '--rest-namespace', 'lake'];

    // Act
    const code = await run(
      ['vacuum', join(t.dir, t.root), '--format', 'iceberg', ...flags, '--rest-table', 'events', '--yes'],
      io,
    );

    // Assess
    expect(code, io.stderr.join('\n')).toBe(0);
    expect(server.requests.filter((r) => r.method === 'POST')).toHaveLength(1);
    const after = await liveOf(t.store, catalog(), t.root);
    expect(after.table.metadataKey).not.toBe(before.table.metadataKey);
    expect(after.table.metadata.snapshots.map((s) => s.snapshotId)).toEqual([current]);
    expect(after.keys).toEqual(before.keys);
    const now = await filesUnder(t.dir);
    expect(files.filter((f) => !now.includes(f))).toEqual(expected);
  });

  it('refuses --catalog without --format iceberg before touching the catalog', async () => {
    // Prepare
    const io = captureIo({ now: MAINTENANCE_FAR, env: ENV });

    // Act
    const code = await run(['vacuum', join(t.dir, t.root), '--dry-run', ...GLUE_FLAGS], io);

    // Assess
    expect(code).toBe(2);
    expect(io.stderr.join('\n')).toMatch(/--catalog is a setting of Iceberg tables/);
    expect(server.requests).toEqual([]);
  });
});

describe('lake-compactor settle --format iceberg --catalog glue', () => {
  let t: CatalogTable;
  let glue: FakeGlue;
  const catalog = () =>
    new GlueIcebergCatalog({
      client: glue.client(),
      setting: { type: 'glue', database: 'lake', table: 'events' },
      store: t.store,
    });

  beforeEach(async () => {
    t = await buildCatalogTable(6);
    glue = await startFakeGlue();
    glue.putTable('lake', {
      Name: 'events',
      TableType: 'EXTERNAL_TABLE',
      Parameters: { table_type: 'ICEBERG', metadata_location: t.metadataLocation },
    });
  });

  afterEach(async () => {
    await glue.close();
    await t.remove();
  });

  it('commits through Glue a group whose UpdateTable outcome was unknown when its run died', async () => {
    // Prepare: the compaction's UpdateTable answers 500 and the process dies once its metadata file is written
    const env = { ...ENV, AWS_ENDPOINT_URL_GLUE: glue.endpoint };
    const before = await liveOf(t.store, catalog(), t.root);
    // Every UpdateTable of the run (the SDK retries a 500) fails; Glue applies none of them.
    const failEach = async () => {
      glue.failNextUpdate(500, 'InternalServiceException');
      glue.beforeUpdate(failEach);
    };
    glue.beforeUpdate(failEach);
    let dead = false;
    const crashed = await runCompact(
      join(t.dir, t.root),
      {
        format: 'iceberg',
        partition: `data/event_timestamp_day=${CATALOG_TABLE_DAYS[0]}`,
        catalog: 'glue',
        glueDatabase: 'lake',
        glueTable: 'events',
      },
      { out: () => {}, clock: { now: () => CATALOG_TABLE_NOW }, env },
      {
        wrapStore: (inner) =>
          observedStore(inner, {
            before: (call) => {
              if (dead) throw new Error(`injected: the process died before ${call.method} ${call.key}`);
            },
            after: (call) => {
              if (call.method === 'put' && /metadata\/\d{5}-[0-9a-f-]+\.metadata\.json$/.test(call.key))
                dead = true;
            },
          }),
      },
    ).catch((err: unknown) => err);
    expect(crashed).toBeInstanceOf(Error);
    expect(glue.table('lake', 'events')?.Parameters?.metadata_location).toBe(t.metadataLocation);
    glue.beforeUpdate(async () => {});
    const io = captureIo({ now: CATALOG_TABLE_NOW, env });

    // Act
    const code = await run(['settle', join(t.dir, t.root), '--format', 'iceberg', ...GLUE_FLAGS], io);

    // Assess: Glue now points at the group's replace, every row still live once
    expect(code, io.stderr.join('\n')).toBe(0);
    expect(io.stdout.join('\n')).toMatch(/rolled forward/);
    const after = await liveOf(t.store, catalog(), t.root);
    expect(after.table.metadataKey).not.toBe(before.table.metadataKey);
    expect(after.snapshot?.summary.operation).toBe('replace');
    expect(after.snapshot?.summary[RUN_ID_PROPERTY]).toMatch(/^cli-/);
    expect(after.rows).toBe(before.rows);
    const day = `event_timestamp_day=${CATALOG_TABLE_DAYS[0]}/`;
    expect(after.keys.filter((k) => k.includes(day))).toHaveLength(1);
  });
});
