// The workflow's plan step on real Delta Lake, Iceberg and Hudi tables copied into the in-memory store: a partition
// inside one, or a partition folder holding one, is refused with UnsupportedTableFormatError before any plan,
// items file or journal entry is written — and the same step still plans a Hive-style partition beside them.
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../../../functions/adapters/memory-journal.js';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { UnsupportedTableFormatError } from '../../../../functions/core/errors.js';
import { normalizeRunInput, type RunContext } from '../../../../functions/core/run-input.js';
import { parseTableConfigs } from '../../../../functions/core/table-config.js';
import { planRun } from '../../../../functions/core/workflow/plan.js';
import { ManualClock } from '../../../../functions/ports/clock.js';
import { writeSampleLake } from '../../../../functions/tools/sample-lake.js';
import { DELTA_FIXTURES, HUDI_FIXTURES, ICEBERG_FIXTURES } from '../../../support/fixtures.js';

const tables = parseTableConfigs([
  { name: 'sales', bucket: 'lake', prefix: 'warehouse/sales', partitionColumns: ['year', 'month', 'day'] },
  { name: 'orders', bucket: 'lake', prefix: 'warehouse/orders' },
  { name: 'events', bucket: 'lake', prefix: 'events', partitionColumns: ['date'] },
  { name: 'trips', bucket: 'lake', prefix: 'warehouse/trips', partitionColumns: ['byteField'] },
]);
const planOptions = { inlineGroupLimit: 40, compactMemoryMb: 1024 };

function runContext(runId: string, table: string, partition: string): RunContext {
  const normalized = normalizeRunInput({ table, partition, quietMinutes: 0, force: true }, tables, {
    executionName: runId,
    startedAt: 1_000,
  });
  if (normalized.mode !== 'single') throw new Error('expected one partition');
  return normalized.run;
}

/** Copies a fixture folder into the store under `prefix` (a copy: the vendored fixtures stay read-only). */
async function load(store: MemoryObjectStore, folder: string, prefix: string): Promise<void> {
  const entries = await readdir(folder, { recursive: true, withFileTypes: true });
  for (const entry of entries.filter((e) => e.isFile())) {
    const path = join(entry.parentPath, entry.name);
    await store.put(`${prefix}${relative(folder, path).split('\\').join('/')}`, await readFile(path));
  }
}

/** Every key with its ETag: equal before and after means no object was written, changed or removed. */
async function contents(store: MemoryObjectStore): Promise<string[]> {
  const lines: string[] = [];
  for await (const o of store.listAll('')) lines.push(`${o.key} ${o.etag}`);
  return lines;
}

describe('the plan step on Delta Lake, Iceberg and Hudi tables', () => {
  let store: MemoryObjectStore;
  let journal: MemoryJournal;
  // The run holds its partition's lease, as the workflow's acquire step ensures before planning.
  const deps = () => ({ store, journal, clock: new ManualClock(5_000), leases: { holds: async () => true } });

  beforeEach(async () => {
    store = new MemoryObjectStore();
    journal = new MemoryJournal();
    await load(store, join(DELTA_FIXTURES, 'delta-0.8.0-partitioned'), 'warehouse/sales/');
    await load(store, join(ICEBERG_FIXTURES, 'spark_v2_position_deletes'), 'warehouse/orders/');
    await load(store, join(HUDI_FIXTURES, 'cow_v6_simplekeygen_hivestyle_no_metafields'), 'warehouse/trips/');
    await writeSampleLake((key, bytes) => store.put(key, bytes).then(() => undefined), {
      table: 'events',
      days: 1,
      batches: 6,
      startDate: '2024-03-01',
      minRows: 10,
      maxRows: 30,
      seed: 3,
    });
  });

  it('refuses a partition of a Delta table (its _delta_log/ is above the partition) and writes nothing', async () => {
    // Prepare
    const before = await contents(store);
    const run = runContext('delta-1', 'sales', 'year=2021/month=12/day=4');

    // Act
    const planned = planRun(deps(), run, planOptions);

    // Assess
    await expect(planned).rejects.toThrow(UnsupportedTableFormatError);
    await expect(planned).rejects.toMatchObject({
      name: 'UnsupportedTableFormatError',
      format: 'delta',
      root: 'memory://warehouse/sales/',
      evidenceKey: 'memory://warehouse/sales/_delta_log/00000000000000000000.json',
      message: expect.stringMatching(
        /^memory:\/\/warehouse\/sales\/year=2021\/month=12\/day=4 is inside a Delta Lake table \(found memory:\/\/warehouse\/sales\/_delta_log\/\): its transaction log, not the file listing, defines which files are live/,
      ),
    });
    expect(await contents(store)).toEqual(before);
    expect(await journal.listRun('delta-1')).toEqual([]);
  });

  it('refuses the unpartitioned root of an Iceberg table and writes nothing', async () => {
    // Prepare
    const before = await contents(store);
    const run = runContext('iceberg-1', 'orders', '');

    // Act
    const planned = planRun(deps(), run, planOptions);

    // Assess
    await expect(planned).rejects.toMatchObject({
      name: 'UnsupportedTableFormatError',
      format: 'iceberg',
      evidenceKey:
        'memory://warehouse/orders/metadata/00000-e79de093-2976-491e-965a-e356a226956e.metadata.json',
      message: expect.stringMatching(/^memory:\/\/warehouse\/orders is an Apache Iceberg table/),
    });
    expect(await contents(store)).toEqual(before);
    expect(await journal.listRun('iceberg-1')).toEqual([]);
  });

  it('refuses a partition of a Hudi table configured as plain Parquet (its .hoodie/ is above it) and writes nothing', async () => {
    // Prepare
    const before = await contents(store);
    const run = runContext('hudi-1', 'trips', 'byteField=10');

    // Act
    const planned = planRun(deps(), run, planOptions);

    // Assess
    await expect(planned).rejects.toMatchObject({
      name: 'UnsupportedTableFormatError',
      format: 'hudi',
      root: 'memory://warehouse/trips/',
      evidenceKey: 'memory://warehouse/trips/.hoodie/hoodie.properties',
      message: expect.stringMatching(
        /^memory:\/\/warehouse\/trips\/byteField=10 is inside an Apache Hudi table \(found memory:\/\/warehouse\/trips\/\.hoodie\/hoodie\.properties\): its timeline, not the file listing, defines which file slices are live/,
      ),
    });
    expect(await contents(store)).toEqual(before);
    expect(await journal.listRun('hudi-1')).toEqual([]);
  });

  it('refuses a Hive partition whose folder holds a Delta table below it, and writes nothing', async () => {
    // Prepare: someone copied a Delta table into a partition folder of a Hive table
    await load(store, join(DELTA_FIXTURES, 'simple_table'), 'events/date=2024-03-01/imported/');
    const before = await contents(store);
    const run = runContext('parent-1', 'events', 'date=2024-03-01');

    // Act
    const planned = planRun(deps(), run, planOptions);

    // Assess
    await expect(planned).rejects.toMatchObject({
      name: 'UnsupportedTableFormatError',
      format: 'delta',
      root: 'memory://events/date=2024-03-01/imported/',
      message: expect.stringMatching(
        /^memory:\/\/events\/date=2024-03-01 contains a Delta Lake table \(found memory:\/\/events\/date=2024-03-01\/imported\/_delta_log\/\)/,
      ),
    });
    expect(await contents(store)).toEqual(before);
    expect(await journal.listRun('parent-1')).toEqual([]);
  });

  it('still plans a Hive-style partition in the same store', async () => {
    // Prepare
    const run = runContext('hive-1', 'events', 'date=2024-03-01');

    // Act
    const result = await planRun(deps(), run, planOptions);

    // Assess
    expect(result.groups).toEqual([{ groupId: 'g0001', expectedOutputFiles: 1 }]);
  });
});
