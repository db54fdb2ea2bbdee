// The profiler handler on Delta Lake and Iceberg commits inside a configured table: one durable marker per
// table and root (through the StatsStore port), a warning that says what to do, `ForeignFormatEvents` per
// table as EMF, and a failed marker write retries exactly the messages that carried it.
import type { Context, SQSEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import type { ForeignFormatMarker } from '../../../functions/core/formats/foreign-tables.js';
import { parseTableConfigs } from '../../../functions/core/table-config.js';
import { createProfilerHandler, policiesOf } from '../../../functions/handlers/profiler.js';
import { ManualClock } from '../../../functions/ports/clock.js';
import type { StatsStore } from '../../../functions/ports/stats-store.js';
import { createObservability } from '../../../functions/shared/middleware.js';
import { capturePowertoolsOutput } from '../../support/powertools-output.js';
import { s3CreatedRecord } from '../../support/sqs-s3.js';

const NOW = Date.UTC(2026, 10, 30, 12);
const context = { functionName: 'profiler', awsRequestId: 'req-1' } as Context;
const tables = parseTableConfigs([
  { name: 'events', bucket: 'lake', prefix: 'events', partitionColumns: ['date'] },
]);

/** Every JSON line written to stdout/stderr while the test runs (Powertools writes EMF and logs there). */
const output = capturePowertoolsOutput();

let sequence = 0x10;
function message(id: string, key: string): SQSEvent['Records'][number] {
  sequence += 1;
  return s3CreatedRecord(id, key, sequence.toString(16), NOW);
}

function handlerWith(markForeignFormat: StatsStore['markForeignFormat']) {
  const stats = { markForeignFormat } as unknown as StatsStore;
  return createProfilerHandler({
    tables,
    policies: policiesOf(tables),
    stats,
    clock: new ManualClock(NOW),
    observability: createObservability(),
  });
}

describe('profiler handler and Delta Lake or Iceberg commits', () => {
  it('records one marker per root, warns what to do, and counts ForeignFormatEvents per table', async () => {
    // Prepare
    const marked: { table: string; marker: ForeignFormatMarker }[] = [];
    const handler = handlerWith(async (table, marker) => {
      marked.push({ table, marker });
      return true;
    });
    const batch: SQSEvent = {
      Records: [
        message('a', 'events/_delta_log/00000000000000000001.json'),
        message('b', 'events/_delta_log/00000000000000000002.json'),
        message('c', 'events/imported/metadata/v1.metadata.json'),
      ],
    };

    // Act
    const response = await handler(batch, context);

    // Assess
    expect(response).toEqual({ batchItemFailures: [] });
    expect(marked).toEqual([
      {
        table: 'events',
        marker: {
          format: 'delta',
          root: '',
          evidenceKey: 'events/_delta_log/00000000000000000001.json',
          seenAt: NOW,
        },
      },
      {
        table: 'events',
        marker: {
          format: 'iceberg',
          root: 'imported/',
          evidenceKey: 'events/imported/metadata/v1.metadata.json',
          seenAt: NOW,
        },
      },
    ]);
    expect(output.lines.filter((l) => l.level === 'WARN').map((l) => l.message)).toEqual([
      'Delta Lake table at configured table events: none of its partitions is ever compacted (its log or metadata, not the listing, defines the live files); to have it compacted and vacuumed through its log, configure the table with format: "delta" and prefix "events"',
      `Apache Iceberg table inside configured table events at imported/: no partition under it is ever compacted (its log or metadata, not the listing, defines the live files); to have it compacted and maintained through its metadata, configure "events/imported" as a table of its own with format: "iceberg" (no configured root may contain another, so this table's root must then not contain it)`,
    ]);
    const emf = output.lines.find((l) => 'ForeignFormatEvents' in l) as Record<string, unknown> & {
      _aws: { CloudWatchMetrics: { Dimensions: string[][] }[] };
    };
    expect(emf).toMatchObject({ Table: 'events', ForeignFormatEvents: 3, service: 'lake-compactor' });
    expect(emf._aws.CloudWatchMetrics[0]?.Dimensions).toEqual([['service', 'Table']]);
  });

  it('records a Hudi table met inside the configured table and warns that it is left to Hudi', async () => {
    // Prepare
    const marked: ForeignFormatMarker[] = [];
    const handler = handlerWith(async (_table, marker) => {
      marked.push(marker);
      return true;
    });
    const batch: SQSEvent = {
      Records: [
        message('h1', 'events/imported/trips/.hoodie/timeline/20250713011316909_20250713011317225.commit'),
        message('h2', 'events/imported/trips/.hoodie/hoodie.properties'),
      ],
    };

    // Act
    const response = await handler(batch, context);

    // Assess
    expect(response).toEqual({ batchItemFailures: [] });
    expect(marked).toEqual([
      {
        format: 'hudi',
        root: 'imported/trips/',
        evidenceKey: 'events/imported/trips/.hoodie/timeline/20250713011316909_20250713011317225.commit',
        seenAt: NOW,
      },
    ]);
    expect(output.lines.filter((l) => l.level === 'WARN').map((l) => l.message)).toEqual([
      `Apache Hudi table inside configured table events at imported/trips/: no partition under it is ever compacted (its log or metadata, not the listing, defines the live files); everything under "events/imported/trips" is left alone and the rest of the configured table is still maintained; to have it clustered through its timeline, configure "events/imported/trips" as a table of its own with format: "hudi", hudiLock and hudiIndexType (no configured root may contain another)`,
    ]);
  });

  it('retries exactly the messages whose marker could not be written', async () => {
    // Prepare
    const handler = handlerWith(async (_table, marker) => {
      if (marker.format === 'iceberg') throw new Error('throttled');
      return false;
    });
    const batch: SQSEvent = {
      Records: [
        message('a', 'events/_delta_log/00000000000000000001.json'),
        message('c', 'events/imported/metadata/v1.metadata.json'),
        message('d', 'events/imported/metadata/v2.metadata.json'),
      ],
    };

    // Act
    const response = await handler(batch, context);

    // Assess
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: 'c' }, { itemIdentifier: 'd' }] });
  });
});
