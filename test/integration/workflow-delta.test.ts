// The synthesized state machine compacting a Delta Lake table on the local cloud: the plan reads the log, each
// group commits as one OPTIMIZE version, the live row multiset (the files the log names) is unchanged, the inputs
// stay on storage for readers of older versions, and a writer appending during the run keeps its rows exactly once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readCommitActions, readDeltaSnapshot } from '../../functions/core/formats/delta/log.js';
import { appendDeltaEvents, createDeltaEventsTable } from '../../functions/tools/sample-delta.js';
import {
  keysUnder,
  rowMultiset,
  run,
  startWorkflowHarness,
  type WorkflowHarness,
} from '../support/workflow-harness.js';
import { WORKFLOW_BUCKET, WORKFLOW_TABLES } from '../support/workflow-stack.js';

const ROOT = 'orders';
const DAY = '2024-03-01';
const NOW = Date.UTC(2024, 2, 2);

const TABLES = [
  ...WORKFLOW_TABLES,
  {
    name: 'orders',
    bucket: WORKFLOW_BUCKET,
    prefix: `${ROOT}/`,
    format: 'delta',
    // The table's writer in these tests (sample-delta.ts) commits with put-if-absent, as delta-rs does.
    deltaLogStore: { type: 's3-conditional' },
    partitionColumns: ['date'],
  },
];

describe('compaction workflow on a Delta table, on the local cloud', () => {
  let h: WorkflowHarness;

  beforeAll(async () => {
    h = await startWorkflowHarness({
      tablesJson: JSON.stringify(TABLES),
      tables: TABLES.map((t) => ({ bucketName: t.bucket, prefix: t.prefix })),
    });
  });

  afterAll(async () => {
    await h?.stop();
  });

  /** Live keys of the latest version and their rows (each row with its partition value, as the log gives it). */
  async function live(): Promise<{ version: number; keys: string[]; rows: string[] }> {
    const snapshot = await readDeltaSnapshot(h.store, ROOT);
    const keys = snapshot.files.map((f) => f.key ?? f.path).sort();
    return { version: snapshot.version, keys, rows: await rowMultiset(h.store, keys, h.scratch) };
  }

  it('commits each group as an OPTIMIZE version beside a writer, keeping every row exactly once', async () => {
    // Prepare: a streaming writer's small files, and one more append while the first group verifies
    await createDeltaEventsTable(h.store, ROOT, { now: NOW });
    for (let b = 0; b < 24; b += 1) {
      await appendDeltaEvents(h.store, ROOT, { day: DAY, rows: 150 + b, seed: 40 + b, now: NOW });
    }
    const before = await live();
    // The groups verify in parallel: the first hook's promise is kept at once, so the writer appends exactly once.
    let appending: Promise<{ key: string; rows: number }> | undefined;
    h.hooks.set('Verify group', async () => {
      appending ??= appendDeltaEvents(h.store, ROOT, { day: DAY, rows: 5, seed: 77, now: NOW });
      await appending;
    });

    // Act
    const execution = await run(
      h,
      {
        table: 'orders',
        partition: `date=${DAY}`,
        quietMinutes: 0,
        targetFileSizeMB: 0.01,
        maxGroupMB: 0.02,
      },
      'delta-1',
    );

    // Assess: succeeded; the log has the append and one OPTIMIZE per group; rows = before + the append, once
    expect(execution.status, `${execution.error}: ${execution.cause}`).toBe('SUCCEEDED');
    const output = execution.output as { groups: number; groupsDone: number; filesAfter: number };
    expect(output.groups, JSON.stringify(execution.output)).toBeGreaterThan(1);
    expect(output.groupsDone).toBe(output.groups);
    const operations: string[] = [];
    for (let v = before.version + 1; ; v += 1) {
      const actions = await readCommitActions(h.store, ROOT, v);
      if (actions === undefined) break;
      const info = actions.find((a) => a.kind === 'commitInfo');
      operations.push(info?.kind === 'commitInfo' ? (info.commitInfo.operation ?? '?') : '?');
    }
    expect(operations.filter((o) => o === 'WRITE')).toHaveLength(1);
    expect(operations.filter((o) => o === 'OPTIMIZE')).toHaveLength(output.groups);
    const after = await live();
    const appended = await appending;
    const appendedRows = await rowMultiset(h.store, [appended?.key ?? ''], h.scratch);
    expect([...after.rows].sort()).toEqual([...before.rows, ...appendedRows].sort());
    expect(after.rows).toHaveLength(before.rows.length + 5);
    // The summary counts the files the log has live, not the removed inputs still on storage.
    expect(output.filesAfter).toBe(after.keys.length);
    // Inputs stay for readers of older versions; nothing of the run is left in staging.
    for (const key of before.keys) expect(await h.store.head(key), key).toBeDefined();
    expect(await keysUnder(h.store, '_lake-compactor/staging/')).toEqual([]);
    expect(await keysUnder(h.store, '_lake-compactor/trash/')).toEqual([]);
  });
});
