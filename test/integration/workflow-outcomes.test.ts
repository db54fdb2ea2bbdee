// What a run's execution ends with when things around the run fail, on the real state machine in the local
// cloud: a failed notification keeps the run's outcome; refused starts never reach finalize (no failed run).
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  historyItems,
  listPartition,
  parkIn,
  partitionItem,
  run,
  startWorkflowHarness,
  type WorkflowHarness,
  writePartition,
} from '../support/workflow-harness.js';

/** Service states a test makes fail, and what the stand-ins saw. */
const failing = new Set<string>();
const published: { state: string; input: unknown }[] = [];
const metrics: unknown[] = [];

function serviceError(state: string): Error {
  return Object.assign(new Error(`${state}: the topic's KMS key denied the request (test fault)`), {
    name: 'SNS.KMSAccessDeniedException',
  });
}

/** Stand-ins for the announce and notify tasks (they record, or fail while their state is in `failing`). */
function standIn(state: string) {
  return async (input: unknown) => {
    if (failing.has(state)) throw serviceError(state);
    published.push({ state, input });
    return {};
  };
}

describe('workflow outcomes on the local cloud', () => {
  let h: WorkflowHarness;

  beforeAll(async () => {
    h = await startWorkflowHarness(
      {},
      {
        taskOverrides: Object.fromEntries([
          ...['Announce completion', 'Notify completion', 'Announce failure', 'Notify failure'].map(
            (state) => [state, standIn(state)],
          ),
          [
            'Count notification failure',
            async (input: unknown) => {
              metrics.push(input);
              return {};
            },
          ],
        ]),
      },
    );
  });

  afterAll(async () => {
    await h?.stop();
  });

  afterEach(() => {
    h.hooks.clear();
    failing.clear();
    published.length = 0;
    metrics.length = 0;
  });

  const input = (day: string, extra: Record<string, unknown> = {}) => ({
    table: 'events',
    partition: `date=${day}`,
    strategy: 'binpack',
    quietMinutes: 0,
    ...extra,
  });

  /** Invocations of one workflow function whose event names `runId`. */
  const invocationsOf = (fn: 'finalize' | 'rollback', runId: string) => {
    const id = h.cloud.logicalId(h.stack.workflow.functions[fn] as never, 'AWS::Lambda::Function');
    return h.cloud.invocations.filter(
      (i) => i.functionLogicalId === id && JSON.stringify(i.event).includes(`"runId":"${runId}"`),
    );
  };

  const entered = (execution: { history: unknown[] }, state: string) =>
    execution.history.filter(
      (e) =>
        (e as { type?: string }).type === 'StateEntered' &&
        (e as { state?: { name?: string } }).state?.name === state,
    ).length;

  it('keeps a compacted run SUCCEEDED with its result when SNS refuses the notification, says notified: false and counts it once', async () => {
    // Prepare
    const day = '2024-03-01';
    await writePartition(h.store, day, 8, 41);
    failing.add('Notify completion');

    // Act
    const execution = await run(h, input(day), 'notify-fails-1');

    // Assess: the run's own outcome and result, nothing recorded or rolled back twice
    expect(execution.status, `${execution.error}: ${execution.cause}`).toBe('SUCCEEDED');
    expect(execution.output).toMatchObject({
      runId: 'notify-fails-1',
      outcome: 'compacted',
      status: 'SUCCEEDED',
      groupsDone: 1,
      filesRetired: 8,
      notified: false,
      notifyError: { Error: 'SNS.KMSAccessDeniedException' },
    });
    expect(published.map((p) => p.state)).toEqual(['Announce completion']);
    expect(metrics).toEqual([
      expect.objectContaining({
        Namespace: 'LakeCompactor',
        MetricData: [expect.objectContaining({ MetricName: 'NotificationsFailed', Value: 1 })],
      }),
    ]);
    expect(invocationsOf('finalize', 'notify-fails-1')).toHaveLength(1);
    expect(invocationsOf('rollback', 'notify-fails-1')).toHaveLength(0);
    expect(entered(execution, 'Record failure')).toBe(0);
    expect(await historyItems(h, day)).toEqual([
      expect.objectContaining({ runId: 'notify-fails-1', outcome: 'compacted', status: 'SUCCEEDED' }),
    ]);
    expect(await listPartition(h.store, day)).toHaveLength(1);
    expect(await partitionItem(h, day)).toMatchObject({ state: 'idle' });
  });

  it('still notifies when only the EventBridge announcement fails, and says so in the output', async () => {
    // Prepare
    const day = '2024-03-02';
    await writePartition(h.store, day, 6, 42);
    failing.add('Announce completion');

    // Act
    const execution = await run(h, input(day), 'announce-fails-1');

    // Assess
    expect(execution.status, `${execution.error}: ${execution.cause}`).toBe('SUCCEEDED');
    expect(execution.output).toMatchObject({
      outcome: 'compacted',
      notified: false,
      announceError: { Error: 'SNS.KMSAccessDeniedException' },
    });
    expect(published).toEqual([
      {
        state: 'Notify completion',
        input: expect.objectContaining({
          Message: expect.objectContaining({ runId: 'announce-fails-1', announceError: expect.anything() }),
        }),
      },
    ]);
    expect(metrics).toHaveLength(1);
    expect(invocationsOf('finalize', 'announce-fails-1')).toHaveLength(1);
  });

  it('says notified: true when both went out, and counts nothing', async () => {
    // Prepare
    const day = '2024-03-03';
    await writePartition(h.store, day, 6, 43);

    // Act
    const execution = await run(h, input(day), 'delivered-1');

    // Assess
    expect(execution.status, `${execution.error}: ${execution.cause}`).toBe('SUCCEEDED');
    expect(execution.output).toMatchObject({ outcome: 'compacted', notified: true });
    expect(published.map((p) => p.state)).toEqual(['Announce completion', 'Notify completion']);
    expect(metrics).toEqual([]);
  });

  it('fails a failed run with its own error, not the notification’s, recording it once', async () => {
    // Prepare: planning is denied (not retried), then the failure notification is refused too
    const day = '2024-03-04';
    await writePartition(h.store, day, 6, 44);
    h.hooks.set('Plan partition', () => {
      throw Object.assign(new Error('S3 denied the listing (test fault)'), { name: 'AccessDenied' });
    });
    failing.add('Notify failure');

    // Act
    const execution = await run(h, input(day), 'fails-twice-1');

    // Assess
    expect(execution.status).toBe('FAILED');
    expect(execution.error).toBe('AccessDenied');
    expect(entered(execution, 'Record failure')).toBe(1);
    expect(invocationsOf('finalize', 'fails-twice-1')).toHaveLength(1);
    expect(metrics).toHaveLength(1);
    expect(await historyItems(h, day)).toEqual([
      expect.objectContaining({ runId: 'fails-twice-1', outcome: 'failed', status: 'FAILED' }),
    ]);
    expect(await partitionItem(h, day)).toMatchObject({ state: 'idle' });
  });

  it('ends refused starts (invalid input, lease held) Failed for whoever started them, without a finalize: no failed run is counted', async () => {
    // Prepare: a run holding the partition, parked in its plan step
    const day = '2024-03-05';
    await writePartition(h.store, day, 6, 45);
    const { reached: inPlan, release } = parkIn(h, 'Plan partition');
    const holder = h.cloud.startExecution(h.stack.workflow.stateMachine, input(day), 'holder-1');
    await inPlan;

    // Act
    const leaseHeld = await run(h, input(day, { force: true }), 'refused-lease-1');
    const invalid = await run(
      h,
      { table: 'events', partition: `date=${day}`, strategy: 'sort' },
      'refused-input-1',
    );
    release();
    const holderEnded = await holder.done;

    // Assess: clearly not done in the console, and nothing an alarm counts as a failed run
    expect([leaseHeld.status, leaseHeld.error]).toEqual(['FAILED', 'LeaseHeldError']);
    expect([invalid.status, invalid.error]).toEqual(['FAILED', 'InvalidInputError']);
    for (const runId of ['refused-lease-1', 'refused-input-1']) {
      expect(invocationsOf('finalize', runId), runId).toHaveLength(0);
    }
    expect(published).toEqual([
      expect.objectContaining({ state: 'Announce completion' }),
      expect.objectContaining({ state: 'Notify completion' }),
    ]);
    expect(holderEnded.status, `${holderEnded.error}: ${holderEnded.cause}`).toBe('SUCCEEDED');
    expect(await historyItems(h, day)).toEqual([expect.objectContaining({ runId: 'holder-1' })]);
  });
});
