// The sweep's settle retries over the in-memory StatsStore: when a needs-attention partition gets a settle run, the
// backoff it records on the partition, one start per retry among racing sweeps, and partitions left for an operator.
import { describe, expect, it } from 'vitest';
import { MemoryStatsStore } from '../../../../functions/adapters/memory-stats-store.js';
import { DEFAULT_POLICY } from '../../../../functions/core/policy.js';
import { executionName, settleExecutionName } from '../../../../functions/core/profiler/decisions.js';
import type { PartitionRef, PartitionSnapshot } from '../../../../functions/core/profiler/model.js';
import {
  nextSettleRetry,
  type SettleRetryDeps,
  settleRetryDue,
  settleRetryInterval,
  settleRetrySchedule,
} from '../../../../functions/core/profiler/settle-retry.js';
import { sweepTable } from '../../../../functions/core/profiler/sweep.js';
import { profileEvents, type TriggerDeps } from '../../../../functions/core/profiler/trigger.js';
import type {
  ExecutionInfo,
  StateMachineStarter,
} from '../../../../functions/ports/state-machine-starter.js';
import { fileEvent } from '../../../support/stats-store-contract.js';

const NOW = Date.UTC(2026, 10, 30, 12, 0, 0);
const MINUTE = 60_000;
const TABLE = 'events';
const REF: PartitionRef = { table: TABLE, partition: 'date=2026-11-29' };
const SCHEDULE = settleRetrySchedule(15 * MINUTE);

/** Records starts (optionally failing them); `describe` knows what it started. */
class FakeStarter implements StateMachineStarter {
  readonly starts: { name: string; input: unknown }[] = [];
  readonly executions = new Map<string, ExecutionInfo>();
  failing = false;
  executionArn(name: string): string {
    return `arn:aws:states:us-east-1:000000000000:execution:compact:${name}`;
  }
  async start(name: string, input: unknown) {
    if (this.failing) throw Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' });
    const alreadyStarted = this.executions.has(this.executionArn(name));
    this.starts.push({ name, input });
    if (!alreadyStarted) this.executions.set(this.executionArn(name), { status: 'RUNNING' });
    return { executionArn: this.executionArn(name), alreadyStarted };
  }
  async describe(arn: string) {
    return this.executions.get(arn);
  }
}

/** A partition a run left needs-attention at NOW (its lease released with the reason, as finalize does). */
async function stuckPartition(stats: MemoryStatsStore): Promise<PartitionSnapshot> {
  const files = Array.from({ length: 6 }, (_, i) => fileEvent(REF, `part-${i}.parquet`, 1 + i, 64 * 1024));
  // The compaction the profiler started (another starter: the tests count the sweep's starts only).
  await profileEvents(deps(stats, { starter: new FakeStarter() }), files, NOW - 30 * MINUTE);
  const scheduled = (await stats.get(REF)) as PartitionSnapshot;
  const attention = {
    reason: '1 group(s) could not be settled: g0001: AccessDenied',
    runId: 'r1',
    since: NOW,
  };
  await stats.release(REF, scheduled.generation, { attention });
  return (await stats.get(REF)) as PartitionSnapshot;
}

function deps(stats: MemoryStatsStore, extra: Partial<TriggerDeps> = {}): TriggerDeps {
  return { stats, policies: new Map([[TABLE, DEFAULT_POLICY]]), trigger: 'sweep', ...extra };
}

function retries(fenced = true): SettleRetryDeps {
  return { schedule: SCHEDULE, fenced: async () => fenced };
}

describe('the settle-retry schedule', () => {
  it('waits one sweep period, then doubles twice and stays at four periods', () => {
    // Act
    const waits = [1, 2, 3, 4, 5, 40].map((n) => settleRetryInterval(n, SCHEDULE) / MINUTE);

    // Assess
    expect(SCHEDULE).toEqual({ firstMs: 15 * MINUTE, maxMs: 60 * MINUTE });
    expect(waits).toEqual([30, 60, 60, 60, 60, 60]);
  });

  it('is due one period after the partition got stuck, then at the recorded time, up to a minute early (a sweep tick)', () => {
    // Prepare
    const attention = { reason: 'x', runId: 'r', since: NOW };
    const retried = nextSettleRetry({ ...REF, generation: 3 }, NOW + 15 * MINUTE, SCHEDULE);

    // Act / Assess
    expect(settleRetryDue({ attention }, NOW + 14 * MINUTE - 1, SCHEDULE)).toBe(false); // over a minute early
    expect(settleRetryDue({ attention }, NOW + 15 * MINUTE - 20_000, SCHEDULE)).toBe(true);
    expect(retried).toEqual({
      attempts: 1,
      lastAt: NOW + 15 * MINUTE,
      nextAt: NOW + 45 * MINUTE,
      executionName: settleExecutionName(REF, 3, 1),
    });
    expect(settleRetryDue({ attention, settleRetry: retried }, NOW + 30 * MINUTE, SCHEDULE)).toBe(false);
    expect(settleRetryDue({ attention, settleRetry: retried }, NOW + 45 * MINUTE, SCHEDULE)).toBe(true);
  });

  it('names each retry apart from compactions and other retries, within 80 safe characters', () => {
    // Prepare
    const long = { table: 'a'.repeat(120), partition: 'date=2026-11-29/region=eu west' };

    // Act
    const names = [
      settleExecutionName(REF, 4, 1),
      settleExecutionName(REF, 4, 2),
      settleExecutionName(REF, 5, 1),
    ];

    // Assess
    expect(new Set([...names, executionName(REF, 4), executionName(REF, 5)]).size).toBe(5);
    expect(settleExecutionName(long, 12345, 678)).toMatch(/^[A-Za-z0-9_-]{1,80}$/);
    expect(settleExecutionName(long, 12345, 678)).toMatch(/-g12345-s678$/);
  });
});

describe('sweepTable settle retries', () => {
  it('starts a settle run on the backoff schedule while the partition needs attention, recording each retry on it', async () => {
    // Prepare: stuck at NOW; the sweep ticks every 15 minutes, some a few seconds early or late
    const stats = new MemoryStatsStore();
    const starter = new FakeStarter();
    await stuckPartition(stats);
    const recorded: { attempts: number; waitMinutes: number; at: number }[] = [];

    // Act: 6 hours of sweeps; the settle runs never end the partition (the cause stays)
    for (let tick = 1; tick <= 24; tick++) {
      const now = NOW + tick * 15 * MINUTE + ((tick % 3) - 1) * 20_000;
      const report = await sweepTable(deps(stats, { starter, settleRetry: retries() }), TABLE, now);
      const retry = (await stats.get(REF))?.settleRetry;
      if (report.settleRetries.length > 0 && retry !== undefined) {
        recorded.push({
          attempts: retry.attempts,
          waitMinutes: (retry.nextAt - retry.lastAt) / MINUTE,
          at: Math.round((retry.lastAt - NOW) / MINUTE),
        });
      }
      expect(report.needingAttention).toBe(1);
    }

    // Assess: retries at 15, 45, 105 minutes, then hourly; each recorded wait longer up to the cap
    expect(recorded.map((r) => r.at)).toEqual([15, 45, 105, 165, 225, 285, 345]);
    expect(recorded.map((r) => r.waitMinutes)).toEqual([30, 60, 60, 60, 60, 60, 60]);
    expect(recorded.map((r) => r.attempts)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(starter.starts.map((s) => s.name)).toEqual(
      [1, 2, 3, 4, 5, 6, 7].map((n) => settleExecutionName(REF, 1, n)),
    );
    expect(starter.starts[0]?.input).toMatchObject({
      table: TABLE,
      partition: REF.partition,
      settle: true,
      trigger: 'sweep',
    });
    expect((await stats.get(REF))?.state).toBe('needs-attention');
  });

  it('starts one settle run when several sweeps race for the same retry', async () => {
    // Prepare
    const stats = new MemoryStatsStore();
    const starter = new FakeStarter();
    await stuckPartition(stats);

    // Act
    const reports = await Promise.all(
      Array.from({ length: 6 }, () =>
        sweepTable(deps(stats, { starter, settleRetry: retries() }), TABLE, NOW + 15 * MINUTE),
      ),
    );

    // Assess
    const actions = reports.flatMap((r) => r.settleRetries.map((o) => o.action));
    expect(actions.filter((a) => a === 'started')).toHaveLength(1);
    expect(actions.filter((a) => a === 'claimed-elsewhere')).toHaveLength(5);
    expect(starter.starts).toHaveLength(1);
    expect((await stats.get(REF))?.settleRetry?.attempts).toBe(1);
  });

  it('leaves a needs-attention partition with no open group to an operator: no claim, no start', async () => {
    // Prepare
    const stats = new MemoryStatsStore();
    const starter = new FakeStarter();
    await stuckPartition(stats);

    // Act
    const report = await sweepTable(
      deps(stats, { starter, settleRetry: retries(false) }),
      TABLE,
      NOW + 60 * MINUTE,
    );

    // Assess
    expect(report.settleRetries.map((o) => o.action)).toEqual(['operator-only']);
    expect(starter.starts).toEqual([]);
    expect((await stats.get(REF))?.settleRetry).toBeUndefined();
    expect(report.needingAttention).toBe(1);
  });

  it('keeps the claim of a retry whose start failed: the next one waits for the grown interval', async () => {
    // Prepare
    const stats = new MemoryStatsStore();
    const starter = new FakeStarter();
    await stuckPartition(stats);
    starter.failing = true;

    // Act
    const failed = await sweepTable(
      deps(stats, { starter, settleRetry: retries() }),
      TABLE,
      NOW + 15 * MINUTE,
    );
    starter.failing = false;
    const tooSoon = await sweepTable(
      deps(stats, { starter, settleRetry: retries() }),
      TABLE,
      NOW + 30 * MINUTE,
    );
    const due = await sweepTable(deps(stats, { starter, settleRetry: retries() }), TABLE, NOW + 45 * MINUTE);

    // Assess
    expect(failed.settleRetries.map((o) => o.action)).toEqual(['start-failed']);
    expect(tooSoon.settleRetries).toEqual([]);
    expect(due.settleRetries.map((o) => [o.action, o.retry?.attempts])).toEqual([['started', 2]]);
    expect(starter.starts.map((s) => s.name)).toEqual([settleExecutionName(REF, 1, 2)]);
  });

  it('retries nothing without a state machine or without the retry settings (profiler, tools)', async () => {
    // Prepare
    const stats = new MemoryStatsStore();
    const starter = new FakeStarter();
    await stuckPartition(stats);

    // Act
    const noStarter = await sweepTable(deps(stats, { settleRetry: retries() }), TABLE, NOW + 60 * MINUTE);
    const noSettings = await sweepTable(deps(stats, { starter }), TABLE, NOW + 60 * MINUTE);

    // Assess
    expect([noStarter.settleRetries, noSettings.settleRetries]).toEqual([[], []]);
    expect(starter.starts).toEqual([]);
    expect((await stats.get(REF))?.settleRetry).toBeUndefined();
  });
});
