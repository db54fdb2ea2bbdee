// Taking a partition's lease and waiting for it to be quiet: a bounded number of rounds, each saying how
// long to wait and why, so a partition under constant writes gives up with a reason instead of looping.
import type { StateMachineStarter } from '../../ports/state-machine-starter.js';
import { LeaseHeldError } from '../errors.js';
import { executionEnded } from '../executions.js';
import type { PartitionRef } from '../profiler/model.js';
import type { RunContext } from '../run-input.js';
import type { LeaseGrant, PartitionLeases } from './ports.js';

/** The verdict of one quiet check, shaped for a Choice state. */
export interface QuietCheck {
  readonly quiet: boolean;
  /** True when the rounds are used up and the partition is still being written. */
  readonly giveUp: boolean;
  /** Seconds the Wait state should pause before the next check (≥ 1). */
  readonly waitSeconds: number;
  /** How many checks have been made, this one included. */
  readonly round: number;
  readonly lastWriteAt?: number;
  readonly reason: string;
}

export interface QuietOptions {
  /** Checks before giving up. */
  readonly maxRounds: number;
  /** Longest single wait, seconds (a Wait state costs nothing, but a shorter one notices a quiet partition sooner). */
  readonly maxWaitSeconds: number;
}

export const DEFAULT_QUIET_OPTIONS: QuietOptions = { maxRounds: 6, maxWaitSeconds: 900 };

export function refOf(run: Pick<RunContext, 'table' | 'partition'>): PartitionRef {
  return { table: run.table, partition: run.partition };
}

/**
 * Acquires the lease and makes the first quiet check. When another run holds the lease but its execution
 * has ended (it died before finalize released it), the lease is taken over from exactly that holder: the
 * new run settles what the dead one left before planning (see settle.ts), so an operator's re-run is safe
 * without waiting for the sweep.
 */
export async function acquireLease(
  leases: PartitionLeases,
  run: RunContext,
  now: number,
  options: QuietOptions = DEFAULT_QUIET_OPTIONS,
  executions?: Pick<StateMachineStarter, 'describe'>,
): Promise<LeaseGrant & { readonly quiet: QuietCheck; readonly tookOverFrom?: string }> {
  const request = {
    runId: run.runId,
    ...(run.executionArn === undefined ? {} : { executionArn: run.executionArn }),
    ...(run.generation === undefined ? {} : { generation: run.generation }),
    ...(run.settle === true ? { settle: true } : {}),
    now,
  };
  let grant: LeaseGrant;
  let tookOverFrom: string | undefined;
  try {
    grant = await leases.acquire(refOf(run), request);
  } catch (err) {
    const holder = err instanceof LeaseHeldError ? err.holder : undefined;
    if (executions === undefined || holder?.executionArn === undefined) throw err;
    if (!executionEnded(await executions.describe(holder.executionArn), now)) throw err;
    grant = await leases.acquire(refOf(run), {
      ...request,
      takeOverFrom: { runId: holder.runId, generation: holder.generation },
    });
    tookOverFrom = holder.runId;
  }
  return {
    ...grant,
    quiet: quietVerdict(run, grant.lastWriteAt, 1, now, options),
    ...(tookOverFrom === undefined ? {} : { tookOverFrom }),
  };
}

/** Re-reads the partition's last write and decides: go, wait, or give up. */
export async function checkQuiet(
  leases: PartitionLeases,
  run: RunContext,
  previousRound: number,
  now: number,
  options: QuietOptions = DEFAULT_QUIET_OPTIONS,
): Promise<QuietCheck> {
  const lastWriteAt = await leases.lastWriteAt(refOf(run));
  return quietVerdict(run, lastWriteAt, previousRound + 1, now, options);
}

/** Pure: the verdict for a last write time, at `round`, now. */
export function quietVerdict(
  run: Pick<RunContext, 'quietMinutes' | 'force'>,
  lastWriteAt: number | undefined,
  round: number,
  now: number,
  options: QuietOptions,
): QuietCheck {
  const base = { round, ...(lastWriteAt === undefined ? {} : { lastWriteAt }) };
  if (run.force)
    return { ...base, quiet: true, giveUp: false, waitSeconds: 1, reason: 'force: quiet wait skipped' };
  const quietMs = run.quietMinutes * 60_000;
  if (lastWriteAt === undefined || now - lastWriteAt >= quietMs) {
    return {
      ...base,
      quiet: true,
      giveUp: false,
      waitSeconds: 1,
      reason:
        lastWriteAt === undefined
          ? 'no write recorded for the partition'
          : `last write ${Math.round((now - lastWriteAt) / 1000)} s ago, quiet window ${run.quietMinutes} min`,
    };
  }
  const remaining = Math.ceil((lastWriteAt + quietMs - now) / 1000);
  if (round >= options.maxRounds) {
    return {
      ...base,
      quiet: false,
      giveUp: true,
      waitSeconds: 1,
      reason: `partition still written ${options.maxRounds} checks in a row (last write ${new Date(lastWriteAt).toISOString()}); gave up — it will be scheduled again once quiet, or re-run with force: true`,
    };
  }
  return {
    ...base,
    quiet: false,
    giveUp: false,
    waitSeconds: Math.max(1, Math.min(options.maxWaitSeconds, remaining)),
    reason: `last write ${Math.round((now - lastWriteAt) / 1000)} s ago; waiting ${remaining} s for ${run.quietMinutes} quiet minutes`,
  };
}
