// The sweep's reconcile on Iceberg tables: it reads a table the way its settings say — one registered in AWS Glue at
// the metadata Glue's `metadata_location` names, read with the real Glue client against test/support/fake-glue.ts
// (a narrow loopback emulation of GetTable/UpdateTable, since no local Glue server exists), never the newest
// metadata file in the folder — and it counts the files the profiler counts, so neither corrects the other.
import { readFileSync, writeFileSync } from 'node:fs';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { icebergCatalogServices } from '../../../functions/adapters/formats/iceberg/catalog-services.js';
import { MemoryStatsStore } from '../../../functions/adapters/memory-stats-store.js';
import { icebergTable } from '../../../functions/core/formats/iceberg/format.js';
import { loadTable, readSnapshotFiles } from '../../../functions/core/formats/iceberg/index.js';
import { reconcileTable } from '../../../functions/core/profiler/sweep.js';
import { parseTableConfigs, type TableConfig } from '../../../functions/core/table-config.js';
import { policiesOf } from '../../../functions/handlers/profiler.js';
import {
  createSweepHandler,
  type SweepTurnsResult,
  sweepFormats,
} from '../../../functions/handlers/sweep.js';
import { ManualClock } from '../../../functions/ports/clock.js';
import { dynamoDbClientsByRegion } from '../../../functions/shared/format-services.js';
import { createObservability } from '../../../functions/shared/middleware.js';
import { type FakeGlue, startFakeGlue } from '../../support/fake-glue.js';
import {
  buildCatalogTable,
  CATALOG_TABLE_NOW,
  type CatalogTable,
} from '../../support/iceberg-catalog-table.js';
import { copyFixtureTable, type TableCopy } from '../core/formats/iceberg/commit-harness.js';

const ENV = { AWS_REGION: 'eu-west-1', AWS_ACCESS_KEY_ID: 'AKIDTEST', AWS_SECRET_ACCESS_KEY: 'test-secret' };
const HOUR = 60 * 60_000;

function only(configs: TableConfig[]): TableConfig {
  const [table] = configs;
  if (table === undefined) throw new Error('no table configured');
  return table;
}

describe('reconcile of an Iceberg table whose catalog is Glue', () => {
  const tables = parseTableConfigs([
    {
      name: 'events',
      bucket: 'lake',
      prefix: 'events',
      format: 'iceberg',
      catalog: { type: 'glue', database: 'lake', table: 'events' },
    },
  ]);
  let t: CatalogTable;
  let glue: FakeGlue;

  beforeEach(async () => {
    process.env.POWERTOOLS_METRICS_DISABLED = 'true';
    process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';
    t = await buildCatalogTable(2);
    glue = await startFakeGlue();
  });

  afterEach(async () => {
    await glue.close();
    await t.remove();
  });

  /** Glue's table pointing at metadata file `name` of the table's folder. */
  function pointGlueAt(name: string): void {
    glue.putTable('lake', {
      Name: 'events',
      TableType: 'EXTERNAL_TABLE',
      Parameters: {
        table_type: 'ICEBERG',
        metadata_location: t.initial.paths.path(`events/metadata/${name}`),
      },
      StorageDescriptor: { Location: t.location },
    });
  }

  /** The live data files of the table at metadata file `name`, read straight from it: the oracle. */
  async function liveAt(name: string): Promise<number> {
    const table = await loadTable(t.store, 'events', { metadataKey: `events/metadata/${name}` });
    return (await readSnapshotFiles(t.store, table)).dataFiles.length;
  }

  function sweepHandler(stats: MemoryStatsStore, withCatalogs: boolean) {
    return createSweepHandler({
      tables,
      trigger: { stats, policies: policiesOf(tables), trigger: 'sweep' },
      storeFor: () => t.store,
      ...(withCatalogs
        ? {
            formatFor: sweepFormats(tables, {
              dynamodb: dynamoDbClientsByRegion(
                new DynamoDBClient({ region: 'eu-west-1', endpoint: 'http://127.0.0.1:9' }),
              ),
              clock: new ManualClock(CATALOG_TABLE_NOW),
              iceberg: icebergCatalogServices({ ...ENV, AWS_ENDPOINT_URL_GLUE: glue.endpoint }),
            }),
          }
        : {}),
      clock: new ManualClock(CATALOG_TABLE_NOW + 2 * HOUR),
      observability: createObservability(),
    });
  }

  it("counts the snapshot Glue's pointer names, not a newer metadata file the writer never made current", async () => {
    // Prepare: five metadata files in the folder; Glue points at the fourth (the fifth lost its race)
    const uncommitted = t.initial.metadataKey.slice('events/metadata/'.length);
    const current = `v${t.initial.version - 1}.metadata.json`;
    pointGlueAt(current);
    const stats = new MemoryStatsStore();

    // Act
    const result = (await sweepHandler(
      stats,
      true,
    )({ mode: 'reconcile', table: 'events' })) as SweepTurnsResult;

    // Assess
    const counted = (await stats.listPartitions('events')).reduce((n, p) => n + p.fileCount, 0);
    const listed = result.reports.flatMap((r) => ('partitions' in r ? r.partitions : []));
    expect(counted).toBe(await liveAt(current));
    expect(listed.reduce((n, p) => n + p.listed.fileCount, 0)).toBe(await liveAt(current));
    expect(await liveAt(uncommitted)).toBeGreaterThan(await liveAt(current));
    expect(glue.requests.map((r) => r.operation)).toContain('GetTable');
  });

  it('is refused, counting nothing, where the sweep has no catalog clients to read the table with', async () => {
    // Prepare
    pointGlueAt(`v${t.initial.version - 1}.metadata.json`);
    const stats = new MemoryStatsStore();

    // Act
    const outcome = (await sweepHandler(
      stats,
      false,
    )({
      mode: 'reconcile',
      table: 'events',
    })) as SweepTurnsResult;

    // Assess: the table's turn failed (reported by name); nothing else to serve
    expect(outcome.reports).toEqual([]);
    expect(outcome.tableFailures).toEqual([
      expect.objectContaining({
        table: 'events',
        kind: 'error',
        message: expect.stringMatching(/catalog is .*Glue.*without Iceberg catalog clients/i),
      }),
    ]);
    expect(await stats.listPartitions('events')).toEqual([]);
    expect(glue.requests).toEqual([]);
  });
});

describe('reconcile counts the Iceberg files the profiler counts', () => {
  const FIXTURE = 'java_v2_equality_deletes_identity_partitioned';
  let copy: TableCopy;

  beforeEach(() => {
    copy = copyFixtureTable(FIXTURE);
  });

  afterEach(() => copy.remove());

  it('counts a live data file the plan leaves out because its equality deletes cannot be applied', async () => {
    // Prepare: the copy's current schema declares the `id` column (an equality delete's field) as a timestamp —
    // a type whose equality deletes the rewrite does not match by value — so the plan leaves that data file out
    const hint = readFileSync(copy.file(`${FIXTURE}/metadata/version-hint.text`), 'utf8').trim();
    const metadataFile = copy.file(`${FIXTURE}/metadata/v${hint}.metadata.json`);
    const metadata = JSON.parse(readFileSync(metadataFile, 'utf8')) as {
      schemas: { fields: { id: number; type: unknown }[] }[];
    };
    for (const schema of metadata.schemas)
      for (const field of schema.fields) if (field.id === 1) field.type = 'timestamp';
    writeFileSync(metadataFile, JSON.stringify(metadata));
    const table = only(
      parseTableConfigs([{ name: 'people', bucket: 'lake', prefix: FIXTURE, format: 'iceberg' }]),
    );
    const stats = new MemoryStatsStore();
    const deps = { stats, policies: policiesOf([table]), trigger: 'sweep' as const };
    const planned = await icebergTable.snapshot(copy.store, FIXTURE, { now: CATALOG_TABLE_NOW });
    const changes = icebergTable.changes;
    if (changes.kind !== 'commit-log') throw new Error('Iceberg reads its commits');
    const profiled = await changes.readState(copy.store, FIXTURE);

    // Act
    const first = await reconcileTable(deps, copy.store, table, CATALOG_TABLE_NOW, { format: icebergTable });
    const again = await reconcileTable(deps, copy.store, table, CATALOG_TABLE_NOW, { format: icebergTable });

    // Assess
    const byPartition = (list: readonly { partition: string; files: readonly unknown[] }[]) =>
      Object.fromEntries(list.map((p) => [p.partition, p.files.length]));
    const stored = await stats.listPartitions('people');
    expect(Object.fromEntries(stored.map((s) => [s.partition, s.fileCount]))).toEqual(
      byPartition(profiled.partitions),
    );
    const plannedCount = planned.partitions.reduce((n, p) => n + p.files.length, 0);
    const profiledCount = profiled.partitions.reduce((n, p) => n + p.files.length, 0);
    expect(plannedCount).toBeLessThan(profiledCount);
    expect(planned.ignored.map((i) => i.reason)).toContainEqual(
      expect.stringMatching(/equality deletes on id \(timestamp\) are not matched by value/),
    );
    expect(first.partitions.some((p) => p.result === 'corrected')).toBe(true);
    expect(again.partitions.every((p) => p.result === 'ok')).toBe(true);
  });
});
