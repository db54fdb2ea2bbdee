// The profiler's composition root on an Iceberg table registered in AWS Glue: the current metadata is the one the
// Glue table's `metadata_location` names (read with the real Glue client against a narrow loopback emulation of
// GetTable, since no local Glue server exists), not the newest metadata file in the folder. A metadata file written
// before the writer's UpdateTable is not counted until Glue points at it.
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Context, SQSEvent } from 'aws-lambda';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MemoryStatsStore } from '../../../functions/adapters/memory-stats-store.js';
import { loadTable, readSnapshotFiles } from '../../../functions/core/formats/iceberg/index.js';
import { parseTableConfigs } from '../../../functions/core/table-config.js';
import { createProfilerHandler, policiesOf, profilerFormats } from '../../../functions/handlers/profiler.js';
import { ManualClock } from '../../../functions/ports/clock.js';
import { createObservability } from '../../../functions/shared/middleware.js';
import { type FakeGlue, startFakeGlue } from '../../support/fake-glue.js';
import {
  buildCatalogTable,
  CATALOG_TABLE_NOW,
  type CatalogTable,
} from '../../support/iceberg-catalog-table.js';
import { s3CreatedRecord } from '../../support/sqs-s3.js';

const context = { functionName: 'profiler', awsRequestId: 'req-1' } as Context;
const ENV = { AWS_REGION: 'eu-west-1', AWS_ACCESS_KEY_ID: 'AKIDTEST', AWS_SECRET_ACCESS_KEY: 'test-secret' };
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
    Parameters: { table_type: 'ICEBERG', metadata_location: t.initial.paths.path(`events/metadata/${name}`) },
    StorageDescriptor: { Location: t.location },
  });
}

function message(id: string, key: string, receives: number): SQSEvent['Records'][number] {
  const record = s3CreatedRecord(id, key, (0x200 + receives).toString(16), CATALOG_TABLE_NOW);
  return { ...record, attributes: { ...record.attributes, ApproximateReceiveCount: String(receives) } };
}

/** The live data files of the table at metadata file `name`, read straight from it: the oracle. */
async function liveAt(name: string): Promise<number> {
  const table = await loadTable(t.store, 'events', { metadataKey: `events/metadata/${name}` });
  return (await readSnapshotFiles(t.store, table)).dataFiles.length;
}

async function counted(stats: MemoryStatsStore): Promise<number> {
  return (await stats.listPartitions('events')).reduce((n, p) => n + p.fileCount, 0);
}

describe('profiler on an Iceberg table whose catalog is Glue', () => {
  it('counts the snapshot Glue points at, and a newer metadata file only once UpdateTable made it current', async () => {
    // Prepare: five metadata files in the folder (create, four appends); Glue still points at the fourth
    const newest = t.initial.metadataKey.slice('events/metadata/'.length);
    const previous = `v${t.initial.version - 1}.metadata.json`;
    pointGlueAt(previous);
    const stats = new MemoryStatsStore();
    const handler = createProfilerHandler({
      tables,
      policies: policiesOf(tables),
      stats,
      storeFor: () => t.store,
      formatFor: profilerFormats(
        tables,
        { ...ENV, AWS_ENDPOINT_URL_GLUE: glue.endpoint },
        new DynamoDBClient({ region: 'eu-west-1', endpoint: 'http://127.0.0.1:9' }),
      ),
      clock: new ManualClock(CATALOG_TABLE_NOW),
      observability: createObservability(),
    });

    // Act: the newest file's event before Glue's swap, the previous file's event, then the swap and a redelivery
    const early = await handler({ Records: [message('a', `events/metadata/${newest}`, 1)] }, context);
    const afterEarly = await counted(stats);
    const atPrevious = await handler({ Records: [message('b', `events/metadata/${previous}`, 1)] }, context);
    const afterPrevious = await counted(stats);
    pointGlueAt(newest);
    const late = await handler({ Records: [message('a', `events/metadata/${newest}`, 2)] }, context);

    // Assess
    expect(early).toEqual({ batchItemFailures: [{ itemIdentifier: 'a' }] });
    expect(afterEarly).toBe(0);
    expect(atPrevious).toEqual({ batchItemFailures: [] });
    expect(afterPrevious).toBe(await liveAt(previous));
    expect(late).toEqual({ batchItemFailures: [] });
    expect(await counted(stats)).toBe(await liveAt(newest));
    expect(await liveAt(newest)).toBeGreaterThan(await liveAt(previous));
    expect(new Set(glue.requests.map((r) => r.operation))).toEqual(new Set(['GetTable']));
  });
});
