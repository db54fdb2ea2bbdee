// The vacuum handler when a Delta table cannot be vacuumed: a table whose delta.deletedFileRetentionDuration is
// below the 168 h gate is refused and one configured as delta without a log cannot be read; each becomes that
// table's error (report, ERROR log, VacuumTableErrors metric), nothing of either is deleted, and the other tables
// are vacuumed all the same. With allowRetentionBelowMinimum the short retention of the table's property is used.
import { describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../../functions/adapters/memory-journal.js';
import { MemoryObjectStore } from '../../../functions/adapters/memory-object-store.js';
import { readDeltaSnapshot } from '../../../functions/core/formats/delta/log.js';
import { parseTableConfigs } from '../../../functions/core/table-config.js';
import { createVacuumHandler } from '../../../functions/handlers/vacuum.js';
import { ManualClock } from '../../../functions/ports/clock.js';
import { createObservability } from '../../../functions/shared/middleware.js';
import { appendDeltaEvents, createDeltaEventsTable } from '../../../functions/tools/sample-delta.js';
import { capturePowertoolsOutput } from '../../support/powertools-output.js';

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 0, 1);
const output = capturePowertoolsOutput();

/** `short` (Delta, 1-day retention, one removed file), `broken` (delta without a log), `clicks` (Parquet). */
async function world() {
  const clock = new ManualClock(T0);
  const store = new MemoryObjectStore({ now: () => new Date(clock.now()) });
  await createDeltaEventsTable(store, 'short', {
    now: T0,
    configuration: { 'delta.deletedFileRetentionDuration': 'interval 1 day' },
  });
  const first = await appendDeltaEvents(store, 'short', { day: '2025-12-31', rows: 5, seed: 1, now: T0 });
  await store.put(
    'short/_delta_log/00000000000000000002.json',
    `${JSON.stringify({ remove: { path: first.key.slice('short/'.length), deletionTimestamp: T0, dataChange: true } })}\n`,
  );
  await store.put('broken/date=2025-12-31/part-0.parquet', 'PAR1');
  await store.put('clicks/_temporary/0/part-0.parquet', 'old scratch');
  clock.advance(100 * HOUR);
  const tables = parseTableConfigs([
    {
      name: 'short',
      bucket: 'lake',
      prefix: 'short',
      partitionColumns: ['date'],
      format: 'delta',
      deltaLogStore: { type: 's3-conditional' },
    },
    {
      name: 'broken',
      bucket: 'lake',
      prefix: 'broken',
      format: 'delta',
      deltaLogStore: { type: 's3-conditional' },
    },
    { name: 'clicks', bucket: 'lake', prefix: 'clicks' },
  ]);
  const observability = createObservability('test');
  const handler = createVacuumHandler(
    {
      tables,
      workRoot: '_lake-compactor/',
      storeFor: () => store,
      journalFor: () => new MemoryJournal(),
      clock,
    },
    observability,
  );
  return { store, handler, observability, removed: first.key };
}

describe('vacuum handler and Delta tables it cannot vacuum', () => {
  it('reports a refused and an unreadable Delta table as their own errors, deletes nothing of them, and vacuums the rest', async () => {
    // Prepare
    const w = await world();
    const before = w.store.keys().filter((k) => !k.startsWith('clicks/'));

    // Act
    const report = await w.handler({ dryRun: false });
    w.observability.metrics.publishStoredMetrics();

    // Assess: the Parquet table's old scratch went, nothing of either Delta table did
    expect(w.store.keys().filter((k) => !k.startsWith('clicks/'))).toEqual(before);
    expect(w.store.keys()).not.toContain('clicks/_temporary/0/part-0.parquet');
    expect(report.removed.debris.count).toBe(1);
    expect(report.deltaTables?.map((t) => [t.table, t.error?.name])).toEqual([
      ['short', 'DeltaVacuumRefusedError'],
      ['broken', 'DeltaLogError'],
    ]);
    expect(report.notes.find((n) => n.startsWith('short: '))).toMatch(
      /^short: Delta VACUUM not run, nothing of the table was deleted \(DeltaVacuumRefusedError\): .*below the minimum of 168 h/,
    );
    expect(report.notes.find((n) => n.startsWith('broken: '))).toMatch(
      /^broken: Delta VACUUM not run, nothing of the table was deleted \(DeltaLogError\)/,
    );
    const errors = output.lines.filter((l) => l.level === 'ERROR');
    expect(errors.map((l) => l.table)).toEqual(['short', 'broken']);
    expect(output.lines.find((l) => 'VacuumTableErrors' in l)).toMatchObject({ VacuumTableErrors: 2 });
  });

  it('with allowRetentionBelowMinimum uses the table’s own short retention and deletes the expired tombstone', async () => {
    // Prepare
    const w = await world();

    // Act
    const report = await w.handler({ dryRun: false, allowRetentionBelowMinimum: true });

    // Assess
    expect(report.deltaTables?.find((t) => t.table === 'short')?.report).toMatchObject({
      retentionHours: 24,
      retentionSource: 'table property',
    });
    expect(w.store.keys()).not.toContain(w.removed);
    expect(report.removed['delta-tombstone']).toMatchObject({ count: 1 });
    expect((await readDeltaSnapshot(w.store, 'short')).files).toEqual([]);
  });
});
