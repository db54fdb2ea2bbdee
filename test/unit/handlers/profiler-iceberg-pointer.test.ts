// The profiler handler on an Iceberg table whose catalog has not swapped to the metadata file an event names (the
// writer puts it before Glue UpdateTable or a REST commit, and a writer that lost the race never swaps): the message
// is failed so the queue redelivers it, a bounded number of times, then dropped with a warning; the other messages
// of the batch are applied meanwhile.
import type { Context, SQSEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../functions/adapters/memory-object-store.js';
import { MemoryStatsStore } from '../../../functions/adapters/memory-stats-store.js';
import { icebergChanges } from '../../../functions/core/formats/iceberg/changes.js';
import { icebergTable } from '../../../functions/core/formats/iceberg/format.js';
import { type IcebergCatalog, loadTable } from '../../../functions/core/formats/iceberg/index.js';
import { parseTableConfigs } from '../../../functions/core/table-config.js';
import {
  createProfilerHandler,
  NOT_CURRENT_MAX_RECEIVES,
  policiesOf,
} from '../../../functions/handlers/profiler.js';
import { ManualClock } from '../../../functions/ports/clock.js';
import { createObservability } from '../../../functions/shared/middleware.js';
import { appendIcebergEvents, createIcebergEventsTable } from '../../../functions/tools/sample-iceberg.js';
import { PROFILER_MAX_RECEIVES } from '../../../infra/profiler.js';
import { capturePowertoolsOutput } from '../../support/powertools-output.js';
import { s3CreatedRecord } from '../../support/sqs-s3.js';

const NOW = Date.UTC(2026, 10, 30, 12);
const context = { functionName: 'profiler', awsRequestId: 'req-1' } as Context;
const tables = parseTableConfigs([{ name: 'events', bucket: 'lake', prefix: 'events', format: 'iceberg' }]);
const output = capturePowertoolsOutput();

/** The SQS record `id` announcing `key`, delivered for the `receives`-th time. */
function message(id: string, key: string, receives: number): SQSEvent['Records'][number] {
  const record = s3CreatedRecord(id, key, (0x100 + receives).toString(16), NOW);
  return {
    ...record,
    attributes: { ...record.attributes, ApproximateReceiveCount: String(receives) },
  };
}

/** A handler over a table with one append, whose catalog points at `v2.metadata.json`. */
async function handlerAtV2() {
  const store = new MemoryObjectStore();
  await createIcebergEventsTable(store, 'events', { now: NOW });
  await appendIcebergEvents(store, 'events', { day: '2026-11-29', rows: 20, seed: 1, now: NOW });
  const catalog: IcebergCatalog = {
    load: (root) => loadTable(store, root, { metadataKey: 'events/metadata/v2.metadata.json' }),
    commit: () => Promise.reject(new Error('the profiler never commits')),
  };
  const stats = new MemoryStatsStore();
  const handler = createProfilerHandler({
    tables,
    policies: policiesOf(tables),
    stats,
    storeFor: () => store,
    formatFor: () => ({ ...icebergTable, changes: icebergChanges(() => catalog) }),
    clock: new ManualClock(NOW),
    observability: createObservability(),
  });
  return { handler, stats };
}

const CURRENT = 'events/metadata/00002-0f0f0f0f-0000-4000-8000-000000000000.metadata.json';
const NOT_SWAPPED = 'events/metadata/00003-1e1e1e1e-0000-4000-8000-000000000000.metadata.json';

describe('profiler handler and an Iceberg metadata file newer than the catalog pointer', () => {
  it('fails only that message while receives remain, and applies the current commit of the same batch', async () => {
    // Prepare
    const { handler, stats } = await handlerAtV2();

    // Act
    const response = await handler(
      { Records: [message('current', CURRENT, 1), message('early', NOT_SWAPPED, 1)] },
      context,
    );

    // Assess
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: 'early' }] });
    expect(
      await stats.get({ table: 'events', partition: 'data/event_timestamp_day=2026-11-29' }),
    ).toMatchObject({ fileCount: 1 });
  });

  it(`drops it with a warning as a lost race at the ${NOT_CURRENT_MAX_RECEIVES}th receive, before the dead-letter queue`, async () => {
    // Prepare
    const { handler } = await handlerAtV2();

    // Act
    const before = await handler(
      { Records: [message('early', NOT_SWAPPED, NOT_CURRENT_MAX_RECEIVES - 1)] },
      context,
    );
    const last = await handler(
      { Records: [message('early', NOT_SWAPPED, NOT_CURRENT_MAX_RECEIVES)] },
      context,
    );

    // Assess
    expect(before).toEqual({ batchItemFailures: [{ itemIdentifier: 'early' }] });
    expect(last).toEqual({ batchItemFailures: [] });
    expect(NOT_CURRENT_MAX_RECEIVES).toBeLessThan(PROFILER_MAX_RECEIVES);
    const warnings = output.lines.filter(
      (l) => l.level === 'WARN' && String(l.message).includes('lost the race'),
    );
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({
      table: 'events',
      key: NOT_SWAPPED,
      receives: NOT_CURRENT_MAX_RECEIVES,
    });
  });
});
