// The lease keeper of holders that are not Step Functions executions (an operator's settle or undo): their leases are
// renewed while they work, their own release is not taken for a loss, and a lease the sweep released (or another
// run took) under them fails the call by name once the work is done. Over the in-memory leases (the DynamoDB
// adapter's renewal is checked on DynamoDB Local in test/integration/dynamodb-stats-store.test.ts); renewals are
// observed as they happen, nothing is timed.
import { describe, expect, it } from 'vitest';
import { MemoryLeases } from '../../../functions/adapters/memory-leases.js';
import { LeaseLostError } from '../../../functions/core/errors.js';
import type { PartitionRef } from '../../../functions/core/profiler/model.js';
import { ManualClock } from '../../../functions/ports/clock.js';
import { whileRenewing } from '../../../functions/shared/lease-keeper.js';

const REF: PartitionRef = { table: 'events', partition: 'date=2026-12-01' };
const HOLDER = 'undo-run-1';

/** MemoryLeases that tell each renewal's answer as it is given. */
class ObservedLeases extends MemoryLeases {
  readonly renewals: { runId: string; renewed: boolean }[] = [];
  private waiters: { count: number; resolve: () => void }[] = [];

  override async renew(ref: PartitionRef, runId: string, now: number): Promise<boolean> {
    const renewed = await super.renew(ref, runId, now);
    this.renewals.push({ runId, renewed });
    this.waiters = this.waiters.filter((w) => {
      if (this.renewals.length < w.count) return true;
      w.resolve();
      return false;
    });
    return renewed;
  }

  /** Resolves once `count` renewals have been answered. */
  renewed(count: number): Promise<void> {
    if (this.renewals.length >= count) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ count, resolve }));
  }
}

describe('whileRenewing (the lease keeper of an operator’s settle or undo)', () => {
  it('renews each lease the work took while the work runs, and returns what the work returned', async () => {
    // Prepare
    const leases = new ObservedLeases();
    const clock = new ManualClock(1_000);

    // Act
    const result = await whileRenewing(
      leases,
      HOLDER,
      clock,
      async (kept) => {
        await kept.acquire(REF, { runId: HOLDER, now: clock.now() });
        clock.advance(60_000);
        await leases.renewed(2);
        await kept.release(REF, HOLDER, {});
        return 'undone';
      },
      { intervalMs: 1 },
    );

    // Assess
    expect(result).toBe('undone');
    expect(leases.renewals.slice(0, 2)).toEqual([
      { runId: HOLDER, renewed: true },
      { runId: HOLDER, renewed: true },
    ]);
    expect(leases.item(REF).state).toBe('idle');
  });

  it('records each renewal on the lease, where the sweep reads it', async () => {
    // Prepare
    const leases = new ObservedLeases();
    const clock = new ManualClock(1_000);
    let seen: number | undefined;

    // Act
    await whileRenewing(
      leases,
      HOLDER,
      clock,
      async (kept) => {
        await kept.acquire(REF, { runId: HOLDER, now: clock.now() });
        clock.advance(90_000);
        await leases.renewed(1);
        seen = leases.item(REF).renewedAt;
        await kept.release(REF, HOLDER, {});
      },
      { intervalMs: 1 },
    );

    // Assess
    expect(seen).toBe(91_000);
  });

  it('does not renew a lease after the work released it, nor take that release for a loss', async () => {
    // Prepare
    const leases = new ObservedLeases();
    const clock = new ManualClock(1_000);
    const other: PartitionRef = { table: 'events', partition: 'date=2026-12-02' };

    // Act: one lease is released early, the other kept while renewals go on
    await whileRenewing(
      leases,
      HOLDER,
      clock,
      async (kept) => {
        await kept.acquire(REF, { runId: HOLDER, now: clock.now() });
        await kept.acquire(other, { runId: HOLDER, now: clock.now() });
        await kept.release(REF, HOLDER, {});
        const before = leases.renewals.length;
        await leases.renewed(before + 3);
        await kept.release(other, HOLDER, {});
      },
      { intervalMs: 1 },
    );

    // Assess: every renewal after the early release was of the other lease, and all succeeded (no LeaseLostError)
    expect(leases.renewals.every((r) => r.renewed)).toBe(true);
    expect(leases.item(REF).renewedAt).toBeUndefined();
    expect(leases.item(other).state).toBe('idle');
  });

  it('fails by name, after the work is done, when the sweep released the lease and another run took it', async () => {
    // Prepare
    const leases = new ObservedLeases();
    const clock = new ManualClock(1_000);
    let finished = false;

    // Act
    const outcome = whileRenewing(
      leases,
      HOLDER,
      clock,
      async (kept) => {
        await kept.acquire(REF, { runId: HOLDER, now: clock.now() });
        // The sweep releases the lease (not through the keeper), and a scheduled run takes the partition.
        await leases.release(REF, HOLDER, {});
        await leases.acquire(REF, { runId: 'compact-run-2', now: clock.now() });
        const before = leases.renewals.length;
        await leases.renewed(before + 1);
        finished = true;
      },
      { intervalMs: 1 },
    );

    // Assess
    await expect(outcome).rejects.toThrow(LeaseLostError);
    await expect(outcome).rejects.toThrow(/lost the lease of partition "date=2026-12-01" of table events/);
    expect(finished).toBe(true);
    expect(leases.item(REF).holder).toBe('compact-run-2');
    expect(leases.renewals.some((r) => !r.renewed)).toBe(true);
  });

  it('keeps renewing after a renewal request fails, and tells of the failure', async () => {
    // Prepare: the first renewal request throws (a throttled request), the next succeed
    const leases = new ObservedLeases();
    const clock = new ManualClock(1_000);
    const errors: unknown[] = [];
    let calls = 0;
    const flaky = Object.assign(Object.create(leases) as ObservedLeases, {
      renew: async (ref: PartitionRef, runId: string, now: number) => {
        calls += 1;
        if (calls === 1) throw new Error('ThrottlingException');
        return leases.renew(ref, runId, now);
      },
    });

    // Act
    await whileRenewing(
      flaky,
      HOLDER,
      clock,
      async (kept) => {
        await kept.acquire(REF, { runId: HOLDER, now: clock.now() });
        await leases.renewed(1);
        await kept.release(REF, HOLDER, {});
      },
      { intervalMs: 1, onError: (_ref, err) => errors.push(err) },
    );

    // Assess
    expect(errors.map((e) => (e as Error).message)).toEqual(['ThrottlingException']);
    expect(leases.renewals[0]).toEqual({ runId: HOLDER, renewed: true });
  });
});
