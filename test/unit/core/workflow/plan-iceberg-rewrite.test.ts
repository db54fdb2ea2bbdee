// The workflow's plan step on an Iceberg table Spark wrote (hour(event_time) × action; 8 small files in the view
// partition, 6 in click): it plans with rewrite_data_files semantics and the table's `rewriteDataFiles`, a run's
// options override the table's one by one, and a partition outside the run's `where` plans nothing and journals
// nothing.
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../../../functions/adapters/memory-journal.js';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { icebergTable } from '../../../../functions/core/formats/iceberg/format.js';
import { icebergGroupState } from '../../../../functions/core/formats/iceberg/group-commit.js';
import { normalizeRunInput, type RunContext } from '../../../../functions/core/run-input.js';
import { parseTableConfigs } from '../../../../functions/core/table-config.js';
import { planRun, readPlan } from '../../../../functions/core/workflow/plan.js';
import { ManualClock } from '../../../../functions/ports/clock.js';
import type { GroupJournalEntry } from '../../../../functions/ports/journal.js';
import { ICEBERG_FIXTURES } from '../../../support/fixtures.js';

const VIEW = 'data/event_time_hour=2020-01-01-08/action=view';
const CLICK = 'data/event_time_hour=2020-01-01-09/action=click';
const tables = parseTableConfigs([
  {
    name: 'clickstream',
    bucket: 'lake',
    prefix: 'clickstream',
    format: 'iceberg',
    rewriteDataFiles: { 'min-input-files': 7 },
  },
]);
const planOptions = { inlineGroupLimit: 40, compactMemoryMb: 1024 };

function runContext(runId: string, request: Record<string, unknown>): RunContext {
  const normalized = normalizeRunInput({ table: 'clickstream', force: true, ...request }, tables, {
    executionName: runId,
    startedAt: 1_000,
  });
  if (normalized.mode !== 'single') throw new Error('expected one partition');
  return normalized.run;
}

describe('the plan step on an Iceberg table', () => {
  let store: MemoryObjectStore;
  let journal: MemoryJournal;
  const deps = () => ({
    store,
    journal,
    clock: new ManualClock(5_000),
    leases: { holds: async () => true },
    format: icebergTable,
  });

  beforeEach(async () => {
    store = new MemoryObjectStore();
    journal = new MemoryJournal();
    const folder = join(ICEBERG_FIXTURES, 'spark_v1_hour_identity_partitioned');
    for (const entry of (await readdir(folder, { recursive: true, withFileTypes: true })).filter((e) =>
      e.isFile(),
    )) {
      const path = join(entry.parentPath, entry.name);
      await store.put(`clickstream/${relative(folder, path).split('\\').join('/')}`, await readFile(path));
    }
  });

  it('plans with the table’s rewriteDataFiles: 8 files reach min-input-files 7, 6 do not', async () => {
    // Prepare
    const view = runContext('run-view', { partition: VIEW });
    const click = runContext('run-click', { partition: CLICK });

    // Act
    const viewResult = await planRun(deps(), view, planOptions);
    const clickResult = await planRun(deps(), click, planOptions);

    // Assess
    expect([viewResult.groupCount, viewResult.plannedFiles]).toEqual([1, 8]);
    expect(clickResult.groupCount).toBe(0);
    expect(clickResult.reason).toBe(
      'nothing to compact: 6 candidates in a group rewrite_data_files would not rewrite (see skipped for each file)',
    );
    expect((await readPlan(store, view))?.options).toMatchObject({
      kind: 'iceberg-rewrite-data-files',
      minInputFiles: 7,
      targetFileSizeBytes: 536870912,
      targetSource: 'default',
    });
  });

  it('lets the run’s options override the table’s, one by one', async () => {
    // Prepare
    const click = runContext('run-click', { partition: CLICK, rewriteDataFiles: { 'min-input-files': 2 } });

    // Act
    const result = await planRun(deps(), click, planOptions);

    // Assess
    expect([result.groupCount, result.plannedFiles]).toEqual([1, 6]);
    expect(await journal.listOpen({ table: 'clickstream', partition: CLICK })).toHaveLength(1);
  });

  it('journals remove-dangling-deletes with each group’s snapshot, where the commit step (reading only the journal) finds it', async () => {
    // Prepare
    const withOption = runContext('run-dangling', {
      partition: VIEW,
      rewriteDataFiles: { 'remove-dangling-deletes': 'true' },
    });
    const without = runContext('run-plain', { partition: CLICK, rewriteDataFiles: { 'min-input-files': 2 } });

    // Act
    await planRun(deps(), withOption, planOptions);
    await planRun(deps(), without, planOptions);

    // Assess: the option's group carries it beside the snapshot id; the other's carries the snapshot id only
    const [dangling] = await journal.listOpen({ table: 'clickstream', partition: VIEW });
    const [plain] = await journal.listOpen({ table: 'clickstream', partition: CLICK });
    if (dangling === undefined || plain === undefined) throw new Error('expected one open group per run');
    const state = async (g: { runId: string; groupId: string }) =>
      icebergGroupState((await journal.get(g.runId, g.groupId)) as GroupJournalEntry);
    expect(await state(dangling)).toMatchObject({
      removeDanglingDeletes: true,
      snapshotId: expect.any(String),
    });
    expect(await state(plain)).not.toHaveProperty('removeDanglingDeletes');
    expect((await state(plain)).snapshotId).toEqual((await state(dangling)).snapshotId);
  });

  it('plans and journals nothing for a partition outside the run’s where filter', async () => {
    // Prepare
    const view = runContext('run-view', { partition: VIEW, where: "action = 'click'" });

    // Act
    const result = await planRun(deps(), view, planOptions);

    // Assess
    expect(result.groupCount).toBe(0);
    expect(result.reason).toBe('nothing to compact: 8 outside the where filter (see skipped for each file)');
    expect((await readPlan(store, view))?.skipped[0]?.reason).toBe(
      "its partition (event_time_hour=2020-01-01-08, action=view) is outside where action = 'click'",
    );
    expect(await journal.listOpen({ table: 'clickstream', partition: VIEW })).toEqual([]);
  });
});
