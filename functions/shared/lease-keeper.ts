// Keeps the partition leases of a holder that is not a Step Functions execution (an operator's settle or undo, from
// the CLI or the console) alive while it works. The sweep describes a lease's execution once the grace period is
// over; for such a holder there is none to describe, so without renewals the sweep would release the partition
// under a settle or undo still running, and the next trigger could plan over a half-restored partition.
import { LeaseLostError } from '../core/errors.js';
import type { PartitionRef } from '../core/profiler/model.js';
import { LEASE_GRACE_MS } from '../core/profiler/sweep.js';
import type { PartitionLeases } from '../core/workflow/ports.js';
import type { Clock } from '../ports/clock.js';

/** Renewals per grace period: four may fail (a throttled request, a slow network) before the sweep may step in. */
export const RENEWALS_PER_GRACE = 5;

export interface LeaseKeeperOptions {
  /** Between renewals. @default the sweep's grace period / {@link RENEWALS_PER_GRACE} (one minute) */
  readonly intervalMs?: number;
  /** Told of a renewal request that failed (the next tick tries again). */
  readonly onError?: (ref: PartitionRef, error: unknown) => void;
}

/**
 * Runs `work` with `leases` wrapped so that every partition `holder` acquires through them is renewed every
 * `intervalMs` until `holder` releases it through them (or the work ends). A lease found no longer held while the
 * work still holds it (the sweep released it, or another run took it) is not renewed again, and once `work` has
 * ended the call fails with LeaseLostError naming the partitions: what the work did is done, but a run may have
 * planned the partition meanwhile, and the operator must look at it.
 */
export async function whileRenewing<T>(
  leases: PartitionLeases,
  holder: string,
  clock: Clock,
  work: (leases: PartitionLeases) => Promise<T>,
  options: LeaseKeeperOptions = {},
): Promise<T> {
  const idOf = (ref: PartitionRef) => `${ref.table}\u0000${ref.partition}`;
  const held = new Map<string, PartitionRef>();
  const lost = new Map<string, PartitionRef>();
  const renewAll = async (): Promise<void> => {
    for (const [id, ref] of [...held]) {
      try {
        const renewed = await leases.renew(ref, holder, clock.now());
        // Released through the wrapper meanwhile: its own release, not a loss.
        if (!renewed && held.has(id)) {
          held.delete(id);
          lost.set(id, ref);
        }
      } catch (err) {
        options.onError?.(ref, err);
      }
    }
  };
  const kept: PartitionLeases = {
    acquire: async (ref, request) => {
      const grant = await leases.acquire(ref, request);
      if (request.runId === holder) held.set(idOf(ref), ref);
      return grant;
    },
    lastWriteAt: (ref) => leases.lastWriteAt(ref),
    holds: (ref, runId) => leases.holds(ref, runId),
    renew: (ref, runId, now) => leases.renew(ref, runId, now),
    release: (ref, runId, patch) => {
      // Stop renewing first, so a renewal that reaches the table after the release is not taken for a loss.
      if (runId === holder) held.delete(idOf(ref));
      return leases.release(ref, runId, patch);
    },
    applyLayoutChange: (ref, change) => leases.applyLayoutChange(ref, change),
    putHistory: (item) => leases.putHistory(item),
  };
  let renewing: Promise<void> = Promise.resolve();
  const timer = setInterval(
    () => {
      // One renewal round at a time: a slow one is not overtaken by the next tick.
      renewing = renewing.then(renewAll);
    },
    options.intervalMs ?? LEASE_GRACE_MS / RENEWALS_PER_GRACE,
  );
  let result: T;
  try {
    result = await work(kept);
  } finally {
    clearInterval(timer);
    await renewing;
  }
  if (lost.size > 0) {
    const names = [...lost.values()].map((r) => `"${r.partition || '(root)'}" of table ${r.table}`);
    throw new LeaseLostError(
      `${holder} lost the lease of partition ${names.join(', ')} while it ran (the sweep released it, or another run took it): what it did is done, but a run may have planned the partition meanwhile; check it with \`lake-compactor status\` before anything else`,
    );
  }
  return result;
}
