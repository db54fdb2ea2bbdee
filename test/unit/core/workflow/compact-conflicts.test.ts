// The compact step tells an input's own failure from a concurrent change by what identifies the input, also in a
// journal entry an older version planned without ETags (Delta and Iceberg inputs were planned with an empty one):
// an empty ETag says nothing about the object, so an engine error on unchanged inputs is that error (the input
// quarantined), and only a removed input, or one of another size than its log recorded, is a concurrent change.
import { beforeEach, describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../../../functions/adapters/memory-journal.js';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { MemoryQuarantine } from '../../../../functions/adapters/memory-quarantine.js';
import { UnsupportedInputError } from '../../../../functions/core/errors.js';
import { normalizeRunInput, type RunContext } from '../../../../functions/core/run-input.js';
import { parseTableConfigs } from '../../../../functions/core/table-config.js';
import { compactGroup } from '../../../../functions/core/workflow/compact.js';
import { stagingPrefix, trashPrefix } from '../../../../functions/core/workflow/layout.js';
import { ManualClock } from '../../../../functions/ports/clock.js';
import { defaultParquetEngine } from '../../../../functions/shared/parquet-engine.js';
import { int96File } from '../../../support/legacy-parquet.js';

const tables = parseTableConfigs([
  {
    name: 'sales',
    bucket: 'lake',
    prefix: 'sales',
    format: 'delta',
    deltaLogStore: { type: 's3-conditional' },
  },
]);
const KEYS = [0, 1, 2, 3, 4].map((i) => `sales/part-0000${i}.snappy.parquet`);

function runContext(runId: string): RunContext {
  const normalized = normalizeRunInput({ table: 'sales', partition: '', quietMinutes: 0 }, tables, {
    executionName: runId,
    startedAt: 1_000,
  });
  if (normalized.mode !== 'single') throw new Error('expected one partition');
  return normalized.run;
}

describe('the compact step on inputs planned without an ETag', () => {
  let store: MemoryObjectStore;
  let journal: MemoryJournal;
  let quarantine: MemoryQuarantine;
  const clock = new ManualClock(5_000);

  /** A planned group of the five INT96 files, as an older version journaled it: every ETag empty. */
  async function plannedGroup(run: RunContext): Promise<void> {
    const inputs = [];
    for (const key of KEYS) inputs.push({ key, etag: '', size: (await store.head(key))?.size ?? 0, rows: 2 });
    await journal.create({
      runId: run.runId,
      groupId: 'g0001',
      table: 'sales',
      partition: '',
      state: 'planned',
      inputs,
      outputs: [],
      retireMode: 'trash',
      format: 'delta',
      formatState: { tableRoot: 'sales', readVersion: 3 },
      stagingPrefix: stagingPrefix(run.workRoot, run.runId, 'g0001'),
      trashPrefix: trashPrefix(run.workRoot, run.runId),
      createdAt: clock.now(),
      updatedAt: clock.now(),
    });
  }

  beforeEach(async () => {
    store = new MemoryObjectStore();
    journal = new MemoryJournal();
    quarantine = new MemoryQuarantine();
    for (const [i, key] of KEYS.entries()) await store.put(key, int96File([BigInt(i) * 1_000n, null]));
  });

  it('rethrows the engine error on unchanged inputs and quarantines the input it names', async () => {
    // Prepare
    const run = runContext('run-1');
    await plannedGroup(run);

    // Act
    const outcome = compactGroup({ store, journal, clock, engine: defaultParquetEngine, quarantine }, run, {
      groupId: 'g0001',
      expectedOutputFiles: 1,
    });

    // Assess
    await expect(outcome).rejects.toThrow(UnsupportedInputError);
    await expect(outcome).rejects.toThrow(/INT96 timestamps.*--schema-fidelity logical/);
    expect((await journal.get(run.runId, 'g0001'))?.state).toBe('planned');
    expect((await quarantine.listTable('sales')).map((r) => r.key)).toEqual([KEYS[0]]);
  });

  it('aborts as a concurrent change when an input now has another size than planned, quarantining nothing', async () => {
    // Prepare
    const run = runContext('run-2');
    await plannedGroup(run);
    await store.put(KEYS[2] as string, int96File([1n, 2n, 3n]));

    // Act
    const result = await compactGroup(
      { store, journal, clock, engine: defaultParquetEngine, quarantine },
      run,
      {
        groupId: 'g0001',
        expectedOutputFiles: 1,
      },
    );

    // Assess
    expect(result.state).toBe('aborted');
    expect((await journal.get(run.runId, 'g0001'))?.reason).toMatch(
      new RegExp(
        `^inputs changed concurrently, group left as it was: ${KEYS[2]} \\(changed since planning \\(\\d+ bytes, planned \\d+\\)\\)$`,
      ),
    );
    expect(await quarantine.listTable('sales')).toEqual([]);
  });
});
