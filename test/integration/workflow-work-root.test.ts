// The synthesized state machine of a deployment with its own work root, on the local cloud: plans, the
// Distributed Map's items file and staging are all written under that root, nothing under the default.
import { afterAll, describe, expect, it } from 'vitest';
import {
  keysUnder,
  listPartition,
  rowMultiset,
  run,
  startWorkflowHarness,
  type WorkflowHarness,
  writePartition,
} from '../support/workflow-harness.js';

const ROOT = '_lake-compactor-b/';

describe('compaction workflow with a configured work root, on the local cloud', () => {
  let h: WorkflowHarness | undefined;

  afterAll(async () => {
    await h?.stop();
  });

  it('writes plans, items and staging only under the configured work root, and no trash copies of a bin-pack', async () => {
    // Prepare: inline limit 1, so the run's groups go through the Distributed Map (which reads the items file)
    h = await startWorkflowHarness({ inlineGroupLimit: 1, workRoot: ROOT });
    const harness = h;
    const day = '2024-02-01';
    const written = await writePartition(harness.store, day, 20, 31);
    const before = await rowMultiset(harness.store, written.keys, harness.scratch);
    const staged: string[] = [];
    harness.hooks.set('Verify group (distributed)', async (input) => {
      const { run: context, groupId } = input as { run: { runId: string }; groupId: string };
      staged.push(...(await keysUnder(harness.store, `${ROOT}staging/${context.runId}/${groupId}/`)));
    });

    // Act
    const execution = await run(
      harness,
      {
        table: 'events',
        partition: `date=${day}`,
        quietMinutes: 0,
        targetFileSizeMB: 0.01,
        maxGroupMB: 0.02,
      },
      'work-root-1',
    );

    // Assess
    expect(execution.status, `${execution.error}: ${execution.cause}`).toBe('SUCCEEDED');
    const output = execution.output as { groups: number; groupsDone: number };
    expect(output.groups).toBeGreaterThan(1);
    expect(output.groupsDone).toBe(output.groups);
    expect(await keysUnder(harness.store, '_lake-compactor/')).toEqual([]);
    expect(await keysUnder(harness.store, `${ROOT}plans/`)).toEqual([
      `${ROOT}plans/work-root-1.items.json`,
      `${ROOT}plans/work-root-1.json`,
    ]);
    expect(staged.length).toBeGreaterThanOrEqual(output.groups);
    expect(await keysUnder(harness.store, `${ROOT}staging/`)).toEqual([]);
    // Bin-pack on an unversioned bucket retires without trash copies (delete-rebuild).
    expect(await keysUnder(harness.store, `${ROOT}trash/`)).toEqual([]);
    const after = (await listPartition(harness.store, day)).map((o) => o.key);
    expect(await rowMultiset(harness.store, after, harness.scratch)).toEqual(before);
  });
});
