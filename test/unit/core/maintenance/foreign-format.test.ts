// Scheduled vacuum and tiering never touch a Delta Lake, Iceberg or Hudi table: a configured table that is (or lies
// in) one is skipped with a note naming the format; one found below a configured root is left alone even when
// its log comes in a later call; the work-root steps (our own trash and staging) go on as before.
import { describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../../../functions/adapters/memory-journal.js';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { parseTieringRequest, tier } from '../../../../functions/core/maintenance/tiering.js';
import { parseVacuumRequest, vacuum } from '../../../../functions/core/maintenance/vacuum.js';
import { parseTableConfigs } from '../../../../functions/core/table-config.js';
import { DEFAULT_WORK_ROOT, trashPrefix } from '../../../../functions/core/workflow/layout.js';
import { ManualClock } from '../../../../functions/ports/clock.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const T0 = Date.UTC(2026, 0, 1);
const BIG = new Uint8Array(200 * 1024);

function world(tables: unknown) {
  const clock = new ManualClock(T0);
  const store = new MemoryObjectStore({ now: () => new Date(clock.now()) });
  const journal = new MemoryJournal();
  const configs = parseTableConfigs(tables);
  return {
    clock,
    store,
    vacuumDeps: {
      tables: configs,
      workRoot: DEFAULT_WORK_ROOT,
      storeFor: () => store,
      journalFor: () => journal,
      clock,
    },
    tieringDeps: { tables: configs, storeFor: () => store, clock },
  };
}

/** Every key with its ETag and storage class: equal before and after means nothing was touched. */
async function contents(store: MemoryObjectStore, prefix: string): Promise<string[]> {
  const lines: string[] = [];
  for await (const o of store.listAll(prefix)) {
    lines.push(`${o.key} ${o.etag} ${(await store.head(o.key))?.storageClass ?? ''}`);
  }
  return lines;
}

describe('scheduled vacuum and Delta Lake or Iceberg tables', () => {
  it('skips a configured table that is a Delta table, with a note naming the format, and vacuums the others', async () => {
    // Prepare
    const w = world([
      { name: 'events', bucket: 'lake', prefix: 'events', partitionColumns: ['date'] },
      { name: 'sales', bucket: 'lake', prefix: 'sales' },
    ]);
    await w.store.put('sales/_delta_log/00000000000000000000.json', '{}');
    await w.store.put('sales/part-0.parquet', 'PAR1');
    await w.store.put('sales/_temporary/0/part-0.parquet', 'old scratch');
    await w.store.put('events/_temporary/0/part-0.parquet', 'old scratch');
    await w.store.put(
      `${trashPrefix(DEFAULT_WORK_ROOT, 'cli-x')}events/date=2025-01-01/part-0.parquet`,
      'old trash',
    );
    w.clock.advance(400 * HOUR);
    const sales = await contents(w.store, 'sales/');

    // Act
    const report = await vacuum(w.vacuumDeps, parseVacuumRequest({ dryRun: false }));

    // Assess
    expect(await contents(w.store, 'sales/')).toEqual(sales);
    expect(w.store.keys().filter((k) => !k.startsWith('sales/'))).toEqual([]);
    expect(report.removed.debris.count).toBe(1);
    expect(report.removed.trash.count).toBe(1);
    expect(report.notes).toEqual([
      'sales: the whole table left alone: Delta Lake table at memory://sales/ (found memory://sales/_delta_log/00000000000000000000.json): its transaction log, not the file listing, defines which files are live, so none of its objects is treated as plain Parquet; to have it compacted and vacuumed through its log, configure the table with format: "delta" and prefix "sales"',
    ]);
  });

  it('skips a configured table that is a Hudi table, even its old writer scratch, with a note naming Hudi', async () => {
    // Prepare: a Copy-on-Write table: two file slices of one file group, the timeline, Spark scratch
    const w = world([{ name: 'trips', bucket: 'lake', prefix: 'trips', partitionColumns: ['byteField'] }]);
    await w.store.put('trips/.hoodie/20240426205419518.commit', '{}');
    await w.store.put('trips/.hoodie/hoodie.properties', 'hoodie.table.version=6');
    await w.store.put('trips/byteField=10/1ebfc908-0_0-35-78_20240426205419518.parquet', 'PAR1');
    await w.store.put('trips/byteField=10/1ebfc908-0_0-36-80_20240426215419518.parquet', 'PAR1');
    await w.store.put('trips/byteField=10/_temporary/0/part-0.parquet', 'old scratch');
    w.clock.advance(400 * HOUR);
    const before = await contents(w.store, '');

    // Act
    const report = await vacuum(w.vacuumDeps, parseVacuumRequest({ dryRun: false }));

    // Assess
    expect(await contents(w.store, '')).toEqual(before);
    expect(report.removed.debris.count).toBe(0);
    expect(report.notes).toEqual([
      `trips: the whole table left alone: Apache Hudi table at memory://trips/ (found memory://trips/.hoodie/hoodie.properties): its timeline, not the file listing, defines which file slices are live (older slices and replaced file groups stay on storage until its cleaner runs), so none of its objects is treated as plain Parquet; to have it clustered through its timeline, configure the table with format: "hudi", hudiLock and hudiIndexType and prefix "trips"; Hudi's own cleaner removes the file groups it replaces`,
    ]);
  });

  it('skips a configured table that lies inside an Iceberg table (its data/ folder)', async () => {
    // Prepare
    const w = world([{ name: 'orders', bucket: 'lake', prefix: 'orders/data' }]);
    await w.store.put('orders/metadata/v1.metadata.json', '{}');
    await w.store.put('orders/data/_temporary/0/part-0.parquet', 'old scratch');
    w.clock.advance(400 * HOUR);
    const before = await contents(w.store, '');

    // Act
    const report = await vacuum(w.vacuumDeps, parseVacuumRequest({ dryRun: false }));

    // Assess
    expect(await contents(w.store, '')).toEqual(before);
    expect(report.notes.join('\n')).toMatch(
      /^orders: the whole table left alone: Apache Iceberg table at memory:\/\/orders\/ \(found memory:\/\/orders\/metadata\/v1\.metadata\.json\)/,
    );
  });

  it('leaves the scratch of a Delta table nested below a configured root, even when its log is listed in a later call', async () => {
    // Prepare: the nested table's scratch (".spark-staging") sorts before its _delta_log/, and each call sees 2 keys
    const w = world([{ name: 'events', bucket: 'lake', prefix: 'events', partitionColumns: ['date'] }]);
    await w.store.put('events/date=2026-01-01/_temporary/0/part-0.parquet', 'old scratch');
    await w.store.put('events/imported/.spark-staging-1/part-0.parquet', 'old scratch of the Delta table');
    await w.store.put('events/imported/_delta_log/00000000000000000000.json', '{}');
    await w.store.put('events/imported/part-0.parquet', 'PAR1');
    w.clock.advance(400 * HOUR);
    const imported = await contents(w.store, 'events/imported/');

    // Act
    const notes: string[] = [];
    let removed = 0;
    let cursor: string | undefined;
    do {
      const report = await vacuum(
        w.vacuumDeps,
        parseVacuumRequest({ dryRun: false, maxObjects: 2, ...(cursor ? { cursor } : {}) }),
      );
      notes.push(...report.notes);
      removed += report.removed.debris.count;
      cursor = report.cursor;
    } while (cursor !== undefined);

    // Assess
    expect(removed).toBe(1);
    expect(await contents(w.store, 'events/imported/')).toEqual(imported);
    expect(w.store.keys()).not.toContain('events/date=2026-01-01/_temporary/0/part-0.parquet');
    expect(notes.join('\n')).toMatch(
      /events: everything under events\/imported\/ left alone: Delta Lake table at memory:\/\/events\/imported\//,
    );
  });
});

describe('scheduled tiering and Delta Lake or Iceberg tables', () => {
  const dated = { partitionColumns: ['date'], dateColumn: 'date', dateFormat: 'yyyy-MM-dd' };
  const old = new Date(T0 - 200 * DAY).toISOString().slice(0, 10);

  it('skips a configured table that is a Delta table, names the format, and moves no file of it', async () => {
    // Prepare
    const w = world([
      { name: 'sales', bucket: 'lake', prefix: 'sales', ...dated },
      { name: 'events', bucket: 'lake', prefix: 'events', ...dated },
    ]);
    await w.store.put('sales/_delta_log/00000000000000000000.json', '{}');
    await w.store.put(`sales/date=${old}/part-0.parquet`, BIG);
    await w.store.put(`events/date=${old}/part-0.parquet`, BIG);
    const sales = await contents(w.store, 'sales/');

    // Act
    const report = await tier(w.tieringDeps, parseTieringRequest({ dryRun: false }));

    // Assess
    expect(await contents(w.store, 'sales/')).toEqual(sales);
    expect((await w.store.head(`events/date=${old}/part-0.parquet`))?.storageClass).toBe('GLACIER_IR');
    expect(report.skippedTables).toEqual([
      {
        table: 'sales',
        reason:
          'the whole table left alone: Delta Lake table at memory://sales/ (found memory://sales/_delta_log/00000000000000000000.json): its transaction log, not the file listing, defines which files are live, so none of its objects is treated as plain Parquet; to have it compacted and vacuumed through its log, configure the table with format: "delta" and prefix "sales" (tiering is not supported for Delta tables yet; use S3 lifecycle rules on the table prefix)',
      },
    ]);
  });

  it('skips a configured table that is a Hudi table and moves no file slice of it', async () => {
    // Prepare
    const w = world([
      { name: 'trips', bucket: 'lake', prefix: 'trips', ...dated },
      { name: 'events', bucket: 'lake', prefix: 'events', ...dated },
    ]);
    await w.store.put('trips/.hoodie/hoodie.properties', 'hoodie.table.version=6');
    await w.store.put(`trips/date=${old}/1ebfc908-0_0-35-78_20240426205419518.parquet`, BIG);
    await w.store.put(`events/date=${old}/part-0.parquet`, BIG);
    const trips = await contents(w.store, 'trips/');

    // Act
    const report = await tier(w.tieringDeps, parseTieringRequest({ dryRun: false }));

    // Assess
    expect(await contents(w.store, 'trips/')).toEqual(trips);
    expect((await w.store.head(`events/date=${old}/part-0.parquet`))?.storageClass).toBe('GLACIER_IR');
    expect(report.skippedTables).toEqual([
      {
        table: 'trips',
        reason: expect.stringMatching(
          /^the whole table left alone: Apache Hudi table at memory:\/\/trips\/ \(found memory:\/\/trips\/\.hoodie\/hoodie\.properties\): .*configure the table with format: "hudi"/,
        ),
      },
    ]);
  });

  it('skips a table configured with format "delta" as not supported yet, never as a foreign table, and moves none of its files', async () => {
    // Prepare
    const w = world([
      {
        name: 'sales',
        bucket: 'lake',
        prefix: 'sales',
        format: 'delta',
        deltaLogStore: { type: 's3-conditional' },
        ...dated,
      },
      { name: 'events', bucket: 'lake', prefix: 'events', ...dated },
    ]);
    await w.store.put('sales/_delta_log/00000000000000000000.json', '{}');
    await w.store.put(`sales/date=${old}/part-0.parquet`, BIG);
    await w.store.put(`events/date=${old}/part-0.parquet`, BIG);
    const sales = await contents(w.store, 'sales/');

    // Act
    const report = await tier(w.tieringDeps, parseTieringRequest({ dryRun: false }));

    // Assess
    expect(await contents(w.store, 'sales/')).toEqual(sales);
    expect((await w.store.head(`events/date=${old}/part-0.parquet`))?.storageClass).toBe('GLACIER_IR');
    expect(report.skippedTables).toEqual([
      {
        table: 'sales',
        reason: 'tiering is not supported for Delta tables yet; use S3 lifecycle rules on the table prefix',
      },
    ]);
    expect(report.notes).toBeUndefined();
  });

  it('moves no data file of an Iceberg table nested below a configured root, even when its metadata comes in a later call', async () => {
    // Prepare: the nested table's data/ sorts before its metadata/, and each call sees 2 keys
    const w = world([{ name: 'events', bucket: 'lake', prefix: 'events', ...dated }]);
    await w.store.put(`events/date=${old}/part-0.parquet`, BIG);
    await w.store.put(`events/date=${old}/orders/data/00000-0.parquet`, BIG);
    await w.store.put(`events/date=${old}/orders/data/00001-0.parquet`, BIG);
    await w.store.put(`events/date=${old}/orders/metadata/v1.metadata.json`, '{}');
    const orders = await contents(w.store, `events/date=${old}/orders/`);

    // Act
    const notes: string[] = [];
    let cursor: string | undefined;
    do {
      const report = await tier(
        w.tieringDeps,
        parseTieringRequest({ dryRun: false, maxObjects: 2, ...(cursor ? { cursor } : {}) }),
      );
      notes.push(...(report.notes ?? []));
      cursor = report.cursor;
    } while (cursor !== undefined);

    // Assess
    expect(await contents(w.store, `events/date=${old}/orders/`)).toEqual(orders);
    expect((await w.store.head(`events/date=${old}/part-0.parquet`))?.storageClass).toBe('GLACIER_IR');
    expect(notes[0]).toMatch(
      new RegExp(`^events: everything under events/date=${old}/orders/ left alone: Apache Iceberg table at`),
    );
  });
});
