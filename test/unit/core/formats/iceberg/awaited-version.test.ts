// What an Iceberg run's release records for the profiler's counters to wait for: the version its cursor reaches by
// reading the run's replace snapshot — the snapshot's sequence number (format version 2) — and not one before it, so
// a trigger never acts on counters that still count the files the run retired. The run goes through the workflow's
// own steps; its rows are the appended rows.
import { describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../../../../functions/adapters/memory-journal.js';
import { MemoryLeases } from '../../../../../functions/adapters/memory-leases.js';
import { MemoryObjectStore } from '../../../../../functions/adapters/memory-object-store.js';
import { loadTable } from '../../../../../functions/core/formats/iceberg/catalog.js';
import { committedIn } from '../../../../../functions/core/formats/iceberg/group-commit.js';
import { formatForTable } from '../../../../../functions/core/formats/index.js';
import { buildRunContext } from '../../../../../functions/core/run-input.js';
import { parseTableConfigs } from '../../../../../functions/core/table-config.js';
import { runPartition } from '../../../../../functions/core/workflow/run.js';
import { ManualClock } from '../../../../../functions/ports/clock.js';
import { defaultParquetEngine } from '../../../../../functions/shared/parquet-engine.js';
import {
  appendIcebergEvents,
  createIcebergEventsTable,
} from '../../../../../functions/tools/sample-iceberg.js';

const NOW = Date.UTC(2026, 11, 7, 12, 0, 0);
const PARTITION = 'data/event_timestamp_day=2026-12-06';
const TABLES = parseTableConfigs([
  { name: 'events', bucket: 'lake', prefix: 'events', format: 'iceberg', policy: { quietMinutes: 0 } },
]);

describe("an Iceberg run's release", () => {
  it('records the sequence number of its replace snapshot, the version the profiler counts it at', async () => {
    // Prepare: six appends to one day, one snapshot each
    const store = new MemoryObjectStore();
    await createIcebergEventsTable(store, 'events', { now: NOW });
    let appended = 0;
    for (let b = 0; b < 6; b += 1) {
      appended += (
        await appendIcebergEvents(store, 'events', { day: '2026-12-06', rows: 10 + b, seed: b, now: NOW })
      ).rows;
    }
    const format = formatForTable(TABLES, 'events', {});
    const leases = new MemoryLeases();

    // Act: the run, through the workflow's steps; then the profiler's reading of the table after it
    const result = await runPartition(
      {
        store,
        journal: new MemoryJournal(),
        clock: new ManualClock(NOW),
        engine: defaultParquetEngine,
        leases,
        format,
        wait: async () => {},
      },
      buildRunContext(
        { name: 'events', prefix: 'events', bucket: 'local', format: 'iceberg' },
        PARTITION,
        { quietMinutes: 0, trigger: 'operator' },
        { executionName: 'run-1', startedAt: NOW },
      ),
      { plan: { inlineGroupLimit: 100, compactMemoryMb: 1024 } },
    );
    const table = await loadTable(store, 'events');
    const changes = format.changes;
    const counted = changes.kind === 'commit-log' ? await changes.readState(store, 'events') : undefined;

    // Assess: one replace snapshot of all rows; its sequence number is what the release waits for
    expect(result.summary).toMatchObject({ status: 'SUCCEEDED', outcome: 'compacted', rows: appended });
    const replace = table.metadata.snapshots.at(-1);
    expect(replace?.summary.operation).toBe('replace');
    expect(leases.item({ table: 'events', partition: PARTITION })).toMatchObject({
      state: 'idle',
      awaitedVersion: Number(replace?.sequenceNumber),
    });
    expect(counted?.cursor.version).toBe(Number(replace?.sequenceNumber));
    //          a retried commit that finds the snapshot an earlier attempt made records the same version
    expect(committedIn(table, String(replace?.snapshotId))).toEqual({
      kind: 'committed',
      snapshotId: String(replace?.snapshotId),
      cursorVersion: Number(replace?.sequenceNumber),
    });
  });
});
