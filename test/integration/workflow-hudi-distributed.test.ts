// The synthesized state machine on Hudi tables whose plans take the Distributed Map path (the inline group limit set
// to 1, so any plan of two or more groups is read from its items file by the Distributed Map, as a large plan is in
// production). The items file names only group ids: a Hudi group's state (its clustering instant; a compaction
// slice's instant, file id and output name) lives in its journal entry, which every Map step and finalize read.
//   Copy-on-Write: a partition of small base files clustered in several groups, each its own clustering instant
//   (v8: `T.clustering.requested` → inflight → `T_C.replacecommit`), every one completed.
//   Merge-on-Read: a compaction of several file slices (base + log), one instant T for all of them — each slice
//   published by its Map iteration, then completed together by finalize (requested → inflight → `T_C.commit`).
//   A slice failing in its Map iteration while the other is published: finalize rolls T back to its plan (the
//   published output removed, only `T.compaction.requested` kept, as Hudi keeps a scheduled compaction).
// Rows (every column but `_hoodie_file_name`) are Hudi's snapshot view: base rows by DuckDB, log records merged by the
// project's log reader (test/support/hudi-mor-view.ts); identical before and after, and for Merge-on-Read equal to
// what the appender committed last for every record.

import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { type HudiTableState, readHudiTable } from '../../functions/core/formats/hudi/table-state.js';
import { partitionPlanSchema } from '../../functions/core/planning.js';
import {
  type AppenderRow,
  appenderLatestRows,
  appendHudiDeltaCommit,
  appendHudiInsert,
  createHudiMorTable,
  createHudiTable,
  MOR_ROW_COLUMNS,
} from '../../functions/tools/sample-hudi.js';
import { type DuckDb, openDuckDb } from '../support/duckdb.js';
import { hudiMergedView, hudiVisibleView } from '../support/hudi-mor-view.js';
import { keysUnder, run, startWorkflowHarness, type WorkflowHarness } from '../support/workflow-harness.js';
import { WORKFLOW_BUCKET, WORKFLOW_TABLES } from '../support/workflow-stack.js';

const COW_ROOT = 'cow';
const MOR_ROOT = 'mor';
/** A Merge-on-Read table one of whose compaction slices fails verification. */
const ABORT_ROOT = 'mor-abort';
/** The appender's partition paths are its `byteField` values (not Hive-style). */
const PARTITION = '1';
/** The appender's columns but `_hoodie_file_name` (which names the file a row is in, so clustering changes it). */
const COW_COLUMNS = [
  '_hoodie_commit_time',
  '_hoodie_commit_seqno',
  '_hoodie_record_key',
  '_hoodie_partition_path',
  'id',
  'name',
  'byteField',
];
const MOR_COLUMNS = MOR_ROW_COLUMNS;

const TABLES = [
  ...WORKFLOW_TABLES,
  {
    name: 'hudi_cow',
    bucket: WORKFLOW_BUCKET,
    prefix: `${COW_ROOT}/`,
    format: 'hudi',
    hudiLock: { provider: 'storage' },
    hudiIndexType: 'BLOOM',
    hudiTimezone: 'UTC',
  },
  {
    name: 'hudi_mor',
    bucket: WORKFLOW_BUCKET,
    prefix: `${MOR_ROOT}/`,
    format: 'hudi',
    hudiLock: { provider: 'storage' },
    hudiIndexType: 'BLOOM',
    hudiTimezone: 'UTC',
    hudiCompactionDeltaCommits: 1,
  },
  {
    name: 'hudi_mor_abort',
    bucket: WORKFLOW_BUCKET,
    prefix: `${ABORT_ROOT}/`,
    format: 'hudi',
    hudiLock: { provider: 'storage' },
    hudiIndexType: 'BLOOM',
    hudiTimezone: 'UTC',
    hudiCompactionDeltaCommits: 1,
  },
];

/** The name of an instant file (its key's last segment). */
const nameOf = (key: string) => key.slice(key.lastIndexOf('/') + 1);

/** How many times the execution entered the state `name`. */
function entered(history: readonly unknown[], name: string): number {
  return history.filter(
    (e) =>
      (e as { type?: string } | undefined)?.type === 'StateEntered' &&
      (e as { state?: { name?: string } }).state?.name === name,
  ).length;
}

/** The rows as the canonical texts hudiMergedView returns (same columns, same order). */
function canonical(rows: readonly AppenderRow[], columns: readonly string[]): string[] {
  const plain = (v: unknown) => (typeof v === 'bigint' || typeof v === 'number' ? String(v) : v);
  return rows
    .map((r) => JSON.stringify(columns.map((c) => plain((r as unknown as Record<string, unknown>)[c]))))
    .sort();
}

describe('compaction workflow on Hudi tables through the Distributed Map, on the local cloud', () => {
  let h: WorkflowHarness;
  let db: DuckDb;

  beforeAll(async () => {
    // Inline limit 1: any plan of two or more groups takes the Distributed Map path.
    h = await startWorkflowHarness({
      inlineGroupLimit: 1,
      tablesJson: JSON.stringify(TABLES),
      tables: TABLES.map((t) => ({ bucketName: t.bucket, prefix: t.prefix })),
    });
    db = await openDuckDb();
  });

  afterAll(async () => {
    db?.close();
    await h?.stop();
  });

  /** The table as it is in S3, downloaded to a local folder; `read` gets the folder, which is removed after. */
  async function withDownload<T>(root: string, read: (dir: string) => Promise<T>): Promise<T> {
    const dir = await mkdtemp(join(h.scratch, 'hudi-'));
    try {
      for (const key of await keysUnder(h.store, `${root}/`)) {
        const file = join(dir, key);
        await mkdir(join(file, '..'), { recursive: true });
        await writeFile(file, await h.store.get(key));
      }
      return await read(dir);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  /** Hudi's snapshot view of the table (sorted row texts) and its state as the format's reader sees it. */
  function snapshot(root: string, columns: readonly string[]) {
    return withDownload(root, async (dir) => ({
      rows: await hudiMergedView(db, dir, root, columns),
      state: (await readHudiTable(new LocalObjectStore(dir), root)) as HudiTableState,
    }));
  }

  /** The instant files the run added to the timeline (v8 layout), sorted. */
  async function addedInstants(root: string, before: readonly string[]): Promise<string[]> {
    return (await keysUnder(h.store, `${root}/.hoodie/timeline/`))
      .filter((k) => !before.includes(k))
      .map(nameOf)
      .filter((n) => /^\d/.test(n))
      .sort();
  }

  /** A Merge-on-Read table of two file groups (an insert each), half of each slice's records updated in a log file. */
  async function morTable(root: string) {
    const table = await createHudiMorTable(h.store, root, 8);
    for (let i = 0; i < 2; i++) await appendHudiInsert(table, PARTITION, 20);
    const delta = await appendHudiDeltaCommit(table, PARTITION, { fraction: 0.5 });
    expect(delta?.logKeys).toHaveLength(2);
    return table;
  }

  async function planOf(planKey: string) {
    return partitionPlanSchema.parse(JSON.parse(new TextDecoder().decode(await h.store.get(planKey))));
  }

  it('clusters a Copy-on-Write partition in several groups, each completed as its own replacecommit, rows unchanged', async () => {
    // Prepare: four insert commits of 400 rows each, four small base files in one partition
    const table = await createHudiTable(h.store, COW_ROOT, 8);
    for (let i = 0; i < 4; i++) await appendHudiInsert(table, PARTITION, 400);
    const before = await snapshot(COW_ROOT, COW_COLUMNS);
    const timelineBefore = await keysUnder(h.store, `${COW_ROOT}/.hoodie/timeline/`);
    expect(before.rows).toHaveLength(1600);

    // Act: groups capped at two files, so the four files make two groups. Planning weighs a base file without its
    // footer's bloom filter (~430 kB, recomputed per output): ~8.5 kB each, small under a 12 kB target, three over
    // the 24.6 kB cap
    const execution = await run(
      h,
      {
        table: 'hudi_cow',
        partition: PARTITION,
        quietMinutes: 0,
        targetFileSizeMB: 0.0115,
        maxGroupMB: 0.0235,
        minInputFiles: 2,
      },
      'hudi-cow-distributed',
    );

    // Assess: the distributed path ran every group
    expect(execution.status, `${execution.error}: ${execution.cause}`).toBe('SUCCEEDED');
    const output = execution.output as { groups: number; groupsDone: number; planKey: string };
    expect(output.groups, JSON.stringify(execution.output)).toBe(2);
    expect(output.groupsDone).toBe(output.groups);
    expect(entered(execution.history, 'Compact group (distributed)')).toBe(output.groups);
    expect(entered(execution.history, 'Commit group (distributed)')).toBe(output.groups);
    expect(entered(execution.history, 'Compact group')).toBe(0);
    // One clustering instant per group (minted by its compact step, kept in its journal entry): requested, inflight
    // and the completed replacecommit each; nothing else added
    const added = await addedInstants(COW_ROOT, timelineBefore);
    const instants = [...new Set(added.map((n) => n.slice(0, 17)))];
    expect(instants).toHaveLength(output.groups);
    for (const instant of instants)
      expect(
        added.filter((n) => n.startsWith(instant)).map((n) => n.replace(/^\d{17}(_\d{17})?/, 'T')),
      ).toEqual(['T.clustering.inflight', 'T.clustering.requested', 'T.replacecommit']);
    const after = await snapshot(COW_ROOT, COW_COLUMNS);
    expect(after.state.timeline.pendingPlans).toEqual([]);
    expect(after.state.timeline.pendingWrites).toEqual([]);
    expect(
      after.state.timeline.completedWrites
        .filter((w) => instants.includes(w.instant.time))
        .map((w) => w.instant.action),
    ).toEqual(instants.map(() => 'replacecommit'));
    // Fewer live base files, the same rows
    const liveBefore = before.state.partitions.flatMap((p) => p.liveSlices).length;
    const liveAfter = after.state.partitions.flatMap((p) => p.liveSlices).length;
    expect(liveAfter).toBeLessThan(liveBefore);
    expect(after.rows).toEqual(before.rows);
    expect(await keysUnder(h.store, `${COW_ROOT}/.hoodie/.temp/`)).toEqual([]);
    expect(await keysUnder(h.store, '_lake-compactor/staging/')).toEqual([]);
  });

  it('compacts several Merge-on-Read file slices as one compaction instant completed after the Map: base files = merged view', async () => {
    // Prepare: two file groups (one insert each), then a delta commit updating half of each slice in a log file
    const table = await morTable(MOR_ROOT);
    const before = await snapshot(MOR_ROOT, MOR_COLUMNS);
    expect(before.rows).toEqual(canonical(appenderLatestRows(table), MOR_COLUMNS));
    const timelineBefore = await keysUnder(h.store, `${MOR_ROOT}/.hoodie/timeline/`);

    // Act
    const execution = await run(
      h,
      { table: 'hudi_mor', partition: PARTITION, quietMinutes: 0 },
      'hudi-mor-distributed',
    );

    // Assess: one group per file slice, all through the distributed path
    expect(execution.status, `${execution.error}: ${execution.cause}`).toBe('SUCCEEDED');
    const output = execution.output as { groups: number; groupsDone: number; planKey: string };
    expect(output.groups, JSON.stringify(execution.output)).toBe(2);
    expect(output.groupsDone).toBe(output.groups);
    expect(entered(execution.history, 'Compact group (distributed)')).toBe(2);
    expect(entered(execution.history, 'Commit group (distributed)')).toBe(2);
    expect(entered(execution.history, 'Compact group')).toBe(0);
    // One compaction instant for every slice: requested, inflight, then one completed commit
    const plan = await planOf(output.planKey);
    expect(plan.formatState?.hudiService).toBe('compaction');
    const instant = String(plan.formatState?.hudiInstant);
    const added = await addedInstants(MOR_ROOT, timelineBefore);
    expect(added.map((n) => n.replace(/^\d{17}(_\d{17})?/, 'T')).sort()).toEqual([
      'T.commit',
      'T.compaction.inflight',
      'T.compaction.requested',
    ]);
    expect(added.every((n) => n.startsWith(instant))).toBe(true);
    const after = await snapshot(MOR_ROOT, MOR_COLUMNS);
    expect(after.state.timeline.pendingPlans).toEqual([]);
    expect(after.state.timeline.pendingWrites).toEqual([]);
    expect(
      after.state.timeline.completedWrites
        .filter((w) => w.instant.time === instant)
        .map((w) => `${w.instant.action} ${w.metadata.compacted}`),
    ).toEqual(['commit true']);
    // Every live slice is a new base file of T, without logs, named as the plan fixed
    const live = after.state.partitions.flatMap((p) => p.liveSlices);
    expect(live.map((s) => [s.baseInstantTime, s.logFiles.length])).toEqual([
      [instant, 0],
      [instant, 0],
    ]);
    expect(live.map((s) => s.baseFile?.name).sort()).toEqual(
      plan.groups.map((g) => String(g.formatState?.hudiOutput)).sort(),
    );
    // The merged view of base + logs before = the new base files' rows after = the appender's latest versions
    expect(after.rows).toEqual(before.rows);
    expect(await keysUnder(h.store, `${MOR_ROOT}/.hoodie/.temp/`)).toEqual([]);
    expect(await keysUnder(h.store, '_lake-compactor/staging/')).toEqual([]);
  });

  it('rolls the whole compaction instant back to its plan when one slice fails in the Distributed Map: the output the other slice published removed, the view unchanged', async () => {
    // Prepare: the first slice whose verify step runs fails it (every attempt), the other verifies and publishes
    const table = await morTable(ABORT_ROOT);
    const before = await snapshot(ABORT_ROOT, MOR_COLUMNS);
    expect(before.rows).toEqual(canonical(appenderLatestRows(table), MOR_COLUMNS));
    const timelineBefore = await keysUnder(h.store, `${ABORT_ROOT}/.hoodie/timeline/`);
    const partitionBefore = (await keysUnder(h.store, `${ABORT_ROOT}/${PARTITION}/`)).sort();
    let failing: string | undefined;
    h.hooks.set('Verify group (distributed)', (input) => {
      const { groupId } = input as { groupId: string };
      failing ??= groupId;
      if (groupId === failing) throw new Error(`verification of ${groupId} failed (injected)`);
    });

    // Act
    const execution = await run(
      h,
      { table: 'hudi_mor_abort', partition: PARTITION, quietMinutes: 0 },
      'hudi-mor-abort-distributed',
    ).finally(() => h.hooks.delete('Verify group (distributed)'));

    // Assess: the run fails with the slice's error, after both slices went through the distributed path and
    // finalize settled them
    expect(failing).toBeDefined();
    expect(execution.status).toBe('FAILED');
    expect(execution.cause).toContain(`verification of ${failing} failed (injected)`);
    expect(entered(execution.history, 'Compact group (distributed)')).toBe(2);
    expect(entered(execution.history, 'Compact group')).toBe(0);
    expect(entered(execution.history, 'Commit group (distributed)')).toBe(1);
    expect(entered(execution.history, 'Finalize run')).toBe(1);
    // T is rolled back to its plan and kept (Hudi never removes a scheduled compaction): only the requested file
    const plan = await planOf('_lake-compactor/plans/hudi-mor-abort-distributed.json');
    expect(plan.groups).toHaveLength(2);
    const instant = String(plan.formatState?.hudiInstant);
    expect(await addedInstants(ABORT_ROOT, timelineBefore)).toEqual([`${instant}.compaction.requested`]);
    // No output left in the partition (the slice that verified was published, then removed), the view unchanged
    expect((await keysUnder(h.store, `${ABORT_ROOT}/${PARTITION}/`)).sort()).toEqual(partitionBefore);
    // (a reader sets the slices of the still-scheduled compaction aside: test/support/hudi-mor-view.ts)
    const dirs: string[] = [];
    try {
      const after = await withDownload(ABORT_ROOT, (dir) =>
        hudiVisibleView(db, dir, ABORT_ROOT, '.hoodie/timeline', dirs, MOR_COLUMNS),
      );
      expect(after).toEqual(before.rows);
    } finally {
      for (const dir of dirs) await rm(dir, { recursive: true, force: true });
    }
    expect(await keysUnder(h.store, `${ABORT_ROOT}/.hoodie/.temp/`)).toEqual([]);
    expect(await keysUnder(h.store, '_lake-compactor/staging/')).toEqual([]);
  });
});
