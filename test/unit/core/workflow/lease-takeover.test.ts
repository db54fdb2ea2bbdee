// Who may take a partition's lease: the holder of an ended execution is taken over (the new run settles
// first), a live or just-stopped one is not, and a needs-attention partition only by a settle run.
import { describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../../../functions/adapters/memory-journal.js';
import { MemoryLeases } from '../../../../functions/adapters/memory-leases.js';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import {
  LeaseHeldError,
  LeaseLostError,
  PartitionNeedsAttentionError,
} from '../../../../functions/core/errors.js';
import { STOPPED_RUN_GRACE_MS } from '../../../../functions/core/executions.js';
import { normalizeRunInput, type RunContext } from '../../../../functions/core/run-input.js';
import { parseTableConfigs } from '../../../../functions/core/table-config.js';
import { acquireLease } from '../../../../functions/core/workflow/lease.js';
import { planRun } from '../../../../functions/core/workflow/plan.js';
import { ManualClock } from '../../../../functions/ports/clock.js';
import type { ExecutionInfo } from '../../../../functions/ports/state-machine-starter.js';
import { settled } from '../../../support/settled.js';

const tables = parseTableConfigs([
  { name: 'events', bucket: 'lake', prefix: 'events', partitionColumns: ['date'] },
]);
const NOW = 10_000_000;
const REF = { table: 'events', partition: 'date=2024-03-01' };

function run(runId: string, extra: Record<string, unknown> = {}): RunContext {
  const normalized = normalizeRunInput(
    { table: 'events', partition: REF.partition, quietMinutes: 0, ...extra },
    tables,
    {
      executionName: runId,
      executionArn: `arn:aws:states:us-east-1:1:execution:sm:${runId}`,
      startedAt: NOW,
    },
  );
  if (normalized.mode !== 'single') throw new Error('expected one partition');
  return normalized.run;
}

/** The executions port as the lease step sees it: a fixed answer per execution name. */
function executions(byName: Record<string, ExecutionInfo | undefined>) {
  return {
    describe: async (arn: string) => byName[arn.slice(arn.lastIndexOf(':') + 1)],
  };
}

describe('acquireLease', () => {
  it('takes the lease over from a run whose execution failed without releasing it', async () => {
    // Prepare
    const leases = new MemoryLeases();
    await acquireLease(leases, run('dead'), NOW);

    // Act
    const grant = await acquireLease(
      leases,
      run('next'),
      NOW + 1000,
      undefined,
      executions({ dead: { status: 'FAILED', stoppedAt: NOW + 500 } }),
    );

    // Assess
    expect(grant.tookOverFrom).toBe('dead');
    expect(await leases.holds(REF, 'next')).toBe(true);
    expect(await leases.release(REF, 'dead', {})).toBe(false);
  });

  it('refuses while the holder runs, and while a stopped one’s Lambdas may still be running', async () => {
    // Prepare
    const leases = new MemoryLeases();
    await acquireLease(leases, run('holder'), NOW);
    const stoppedAt = NOW + 1000;

    // Act
    const whileRunning = acquireLease(
      leases,
      run('a'),
      NOW + 2000,
      undefined,
      executions({ holder: { status: 'RUNNING' } }),
    );
    const justAborted = acquireLease(
      leases,
      run('b'),
      stoppedAt + STOPPED_RUN_GRACE_MS - 1,
      undefined,
      executions({ holder: { status: 'ABORTED', stoppedAt } }),
    );
    const unknown = acquireLease(leases, run('c'), NOW + 2000, undefined, executions({}));
    await settled(whileRunning, justAborted, unknown);

    // Assess
    await expect(whileRunning).rejects.toBeInstanceOf(LeaseHeldError);
    await expect(justAborted).rejects.toBeInstanceOf(LeaseHeldError);
    await expect(unknown).rejects.toBeInstanceOf(LeaseHeldError);
    const later = await acquireLease(
      leases,
      run('d'),
      stoppedAt + STOPPED_RUN_GRACE_MS,
      undefined,
      executions({ holder: { status: 'ABORTED', stoppedAt } }),
    );
    expect(later.tookOverFrom).toBe('holder');
  });

  it('lets only a settle run take a needs-attention partition, and says how', async () => {
    // Prepare
    const leases = new MemoryLeases();
    await acquireLease(leases, run('stuck'), NOW);
    await leases.release(REF, 'stuck', {
      attention: { reason: 'AccessDenied on retire', runId: 'stuck', since: NOW },
    });

    // Act
    const compaction = acquireLease(
      leases,
      run('again'),
      NOW + 1,
      undefined,
      executions({ stuck: { status: 'FAILED' } }),
    );
    const settle = await acquireLease(leases, run('settle-1', { settle: true }), NOW + 2);

    // Assess
    await expect(compaction).rejects.toBeInstanceOf(PartitionNeedsAttentionError);
    expect(settle.runId).toBe('settle-1');
    expect(await leases.holds(REF, 'settle-1')).toBe(true);
  });

  it('a run that lost its lease (a redriven old execution) cannot plan: nothing is written', async () => {
    // Prepare: run "old" held the partition, died, and "new" took it over
    const store = new MemoryObjectStore();
    const journal = new MemoryJournal();
    const leases = new MemoryLeases();
    await acquireLease(leases, run('old'), NOW);
    await acquireLease(leases, run('new'), NOW + 1, undefined, executions({ old: { status: 'FAILED' } }));

    // Act: the old execution is redriven from its plan step
    const planned = planRun({ store, journal, clock: new ManualClock(NOW + 2), leases }, run('old'), {
      inlineGroupLimit: 40,
      compactMemoryMb: 1024,
    });

    // Assess
    await expect(planned).rejects.toBeInstanceOf(LeaseLostError);
    expect(store.keys()).toEqual([]);
    expect(await journal.listRun('old')).toEqual([]);
  });
});
