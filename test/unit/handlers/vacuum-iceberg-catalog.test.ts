// The scheduled vacuum on an Iceberg table registered in AWS Glue: the handler over the catalog clients its
// composition root builds from the environment (icebergCatalogServices, as the Lambda entry does), with the Glue
// endpoint pointed at test/support/fake-glue.ts — a narrow in-process emulation of GetTable/UpdateTable with Glue's
// VersionId lock on 127.0.0.1, because no local Glue server exists. expire_snapshots swaps Glue's pointer and deletes
// exactly what only expired snapshots referenced; without catalog clients the table is that table's error and nothing
// of it is touched (never maintained through the path catalog, whose commits Glue's readers would not see).

import { rm } from 'node:fs/promises';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { icebergCatalogServices } from '../../../functions/adapters/formats/iceberg/catalog-services.js';
import { GlueIcebergCatalog } from '../../../functions/adapters/formats/iceberg/glue-catalog.js';
import { MemoryJournal } from '../../../functions/adapters/memory-journal.js';
import { parseTableConfigs } from '../../../functions/core/table-config.js';
import { createVacuumHandler } from '../../../functions/handlers/vacuum.js';
import { ManualClock } from '../../../functions/ports/clock.js';
import { createObservability } from '../../../functions/shared/middleware.js';
import { type FakeGlue, startFakeGlue } from '../../support/fake-glue.js';
import {
  buildMaintainedTemplate,
  copyMaintainedTable,
  expectedExpiryDeletes,
  filesUnder,
  MAINTENANCE_FAR,
  type MaintainedTable,
} from '../../support/iceberg-maintenance-table.js';
import { capturePowertoolsOutput } from '../../support/powertools-output.js';

const ENV = {
  AWS_REGION: 'eu-west-1',
  AWS_ACCESS_KEY_ID: 'AKIDTEST',
  AWS_SECRET_ACCESS_KEY: 'test-secret',
};
const output = capturePowertoolsOutput();

let template: string;
let t: MaintainedTable;
let glue: FakeGlue;

beforeAll(async () => {
  template = await buildMaintainedTemplate();
});

afterAll(async () => {
  await rm(template, { recursive: true, force: true });
});

beforeEach(async () => {
  t = await copyMaintainedTable(template);
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

/** The vacuum handler over the copy, its Iceberg table configured with the Glue catalog. */
function handlerFor(withCatalogClients: boolean) {
  const tables = parseTableConfigs([
    {
      name: 'events',
      bucket: 'lake',
      prefix: 'events',
      format: 'iceberg',
      catalog: { type: 'glue', database: 'lake', table: 'events' },
    },
  ]);
  return createVacuumHandler(
    {
      tables,
      workRoot: '_lake-compactor/',
      storeFor: () => t.store,
      journalFor: () => new MemoryJournal(),
      clock: new ManualClock(MAINTENANCE_FAR),
      ...(withCatalogClients
        ? { services: () => icebergCatalogServices({ ...ENV, AWS_ENDPOINT_URL_GLUE: glue.endpoint }) }
        : {}),
    },
    createObservability('test'),
  );
}

describe('scheduled vacuum of an Iceberg table registered in Glue', () => {
  it('expires through Glue: the pointer moves, only the current snapshot stays, exactly the unreferenced files go', async () => {
    // Prepare
    const catalog = new GlueIcebergCatalog({
      client: glue.client(),
      setting: { type: 'glue', database: 'lake', table: 'events' },
      store: t.store,
    });
    const before = await catalog.load(t.root);
    const current = before.metadata.currentSnapshotId as bigint;
    const expected = await expectedExpiryDeletes(t.store, before, new Set([current]));
    const files = await filesUnder(t.dir);

    // Act: the schedule's input, for real
    const report = await handlerFor(true)({ dryRun: false, resume: true });

    // Assess
    const [table] = report.icebergTables ?? [];
    expect(table?.error).toBeUndefined();
    const committed = table?.report?.expire.committedMetadataKey;
    expect(glue.table('lake', 'events')?.Parameters?.metadata_location).toBe(
      before.paths.path(committed ?? '?'),
    );
    const after = await catalog.load(t.root);
    expect(after.metadata.snapshots.map((s) => s.snapshotId)).toEqual([current]);
    const dataAndManifests = files.filter((f) => !f.endsWith('.metadata.json'));
    const now = await filesUnder(t.dir);
    expect(dataAndManifests.filter((f) => !now.includes(f))).toEqual(expected);
    expect(report.removed['iceberg-expired'].count).toBe(expected.length);
    expect(report.notes).toContain('events: Iceberg maintenance through the Glue table lake.events');
  });

  it('without catalog clients makes the table its error and changes nothing of it, nor Glue', async () => {
    // Prepare
    const files = await filesUnder(t.dir);

    // Act
    const report = await handlerFor(false)({ dryRun: false });

    // Assess
    const [table] = report.icebergTables ?? [];
    expect(table?.error?.name).toBe('InvalidInputError');
    expect(table?.error?.message).toMatch(/the Glue table lake\.events.*without Iceberg catalog clients/);
    expect(await filesUnder(t.dir)).toEqual(files);
    expect(glue.requests).toEqual([]);
    expect(output.lines.some((l) => l.level === 'ERROR' && l.table === 'events')).toBe(true);
  });
});
