// Unit tests of the in-process orchestrator's own plumbing (its order and catches are tied to the state
// machine in test/infra/run-orchestrator.test.ts): the items file, the quiet waits, the observer.
import { describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { buildRunContext } from '../../../../functions/core/run-input.js';
import type { RunSummary } from '../../../../functions/core/workflow/finalize.js';
import type { QuietCheck } from '../../../../functions/core/workflow/lease.js';
import type { PlanStepResult } from '../../../../functions/core/workflow/plan.js';
import type { PartitionLeases } from '../../../../functions/core/workflow/ports.js';
import { runPartition, type WorkflowSteps } from '../../../../functions/core/workflow/run.js';
import type { Journal } from '../../../../functions/ports/journal.js';
import type { ParquetEngine } from '../../../../functions/ports/parquet-engine.js';

const run = buildRunContext(
  { name: 'events', prefix: 'events', bucket: 'lake' },
  'date=2024-01-15',
  { force: true },
  { executionName: 'run-1', startedAt: 0 },
);

const quiet = (round: number, isQuiet: boolean): QuietCheck => ({
  round,
  quiet: isQuiet,
  giveUp: false,
  waitSeconds: 7 * round,
  reason: isQuiet ? 'quiet' : 'written lately',
});

/** Steps that succeed, recording the groups they see; `plan` and the quiet verdicts are the test's. */
function steps(plan: PlanStepResult, verdicts: readonly QuietCheck[], seen: string[]): WorkflowSteps {
  const verdictAt = (i: number): QuietCheck => verdicts[i] ?? quiet(i + 1, true);
  return {
    acquireLease: async () => ({ runId: 'run-1', generation: 1, acquiredAt: 0, quiet: verdictAt(0) }),
    checkQuiet: async (_leases, _run, previousRound) => verdictAt(previousRound),
    planRun: async () => plan,
    compactGroup: async (_deps, _run, item) => {
      seen.push(item.groupId);
      return { groupId: item.groupId, state: 'staged', outputs: 1, rows: 3, bytesRead: 10 };
    },
    verifyGroup: async (_deps, _run, groupId) => ({ groupId, state: 'verified', rows: 3, outputs: 1 }),
    commitStep: async (_deps, _runId, groupId) => ({
      groupId,
      state: 'done',
      published: 1,
      retired: 2,
      conflicts: 0,
    }),
    rollbackStep: async (_deps, _runId, groupId) => ({
      groupId,
      state: 'aborted',
      published: 0,
      retired: 0,
      conflicts: 0,
    }),
    finalizeRun: async (_deps, _run, request) =>
      ({ outcome: request.outcome, status: 'SUCCEEDED' }) as RunSummary,
  };
}

/** Only the fields the orchestrator reads of a plan (the rest is finalize's business). */
function planOf(groupIds: readonly string[], inline: boolean): PlanStepResult {
  const groups = groupIds.map((groupId) => ({ groupId, expectedOutputFiles: 1 }));
  return {
    groupCount: groups.length,
    groups: inline ? groups : [],
    itemsKey: '_lake-compactor/plans/run-1.items.json',
  } as Partial<PlanStepResult> as PlanStepResult;
}

describe('runPartition', () => {
  it('reads the groups from the plan items file when the plan lists none inline, like the Distributed Map', async () => {
    // Prepare
    const store = new MemoryObjectStore();
    const plan = planOf(['g1', 'g2', 'g3'], false);
    await store.put(plan.itemsKey, JSON.stringify(planOf(['g1', 'g2', 'g3'], true).groups));
    const seen: string[] = [];
    const deps = {
      store,
      journal: {} as Journal,
      clock: { now: () => 0 },
      leases: {} as PartitionLeases,
      wait: async () => undefined,
      engine: {} as ParquetEngine, // the scripted steps never rewrite
    };

    // Act
    const result = await runPartition(
      deps,
      run,
      { plan: { inlineGroupLimit: 0, compactMemoryMb: 1024 } },
      {},
      steps(plan, [], seen),
    );

    // Assess
    expect(seen).toEqual(['g1', 'g2', 'g3']);
    expect(result.summary.outcome).toBe('compacted');
  });

  it('waits each verdict’s seconds before the next quiet check, and tells the observer of the plan and every group', async () => {
    // Prepare
    const waited: number[] = [];
    const told: string[] = [];
    const deps = {
      store: new MemoryObjectStore(),
      journal: {} as Journal,
      clock: { now: () => 0 },
      leases: {} as PartitionLeases,
      engine: {} as ParquetEngine, // the scripted steps never rewrite
      wait: async (seconds: number) => {
        waited.push(seconds);
      },
    };

    // Act
    const result = await runPartition(
      deps,
      run,
      { plan: { inlineGroupLimit: 40, compactMemoryMb: 1024 } },
      {
        planned: (plan) => {
          told.push(`planned ${plan.groupCount}`);
        },
        groupEnded: (group) => told.push(`${group.item.groupId} ${group.result.state} ${group.verified}`),
      },
      steps(planOf(['g1', 'g2'], true), [quiet(1, false), quiet(2, false), quiet(3, true)], []),
    );

    // Assess
    expect(waited).toEqual([7, 14]);
    expect(told).toEqual(['planned 2', 'g1 done true', 'g2 done true']);
    expect(result.groups.map((g) => g.compacted?.rows)).toEqual([3, 3]);
  });
});
