// Settling a partition: every group an earlier run left unsettled (found through the partition's fences)
// is brought to its end from its journal entry — back before publishing, forward from it — before any run plans.
//
// Why this makes "no duplicate, ever" hold by construction: a group is fenced from the moment it is
// journaled until it settles (see ports/journal.ts), every run settles its partition before planning it
// (plan step, CLI), and no run releases a partition with a fence left (finalize, sweep). So a planner can
// only ever list a partition in which no group is half-published: never the outputs of a group together
// with inputs that group still has to retire. A group that settled never changes again (a format's commit on
// `done` or a finished abort does nothing), and two settlers of one group cannot both act on a step
// (journal transitions are conditioned on the revision; the loser re-reads and finds the step done).
import type { GroupJournalEntry, GroupState, JournalPartition, OpenGroup } from '../../ports/journal.js';
import { isSettled } from '../../ports/journal.js';
import { JournalConflictError } from '../errors.js';
import type { SettleOutcome } from '../profiler/model.js';
import { failureReason, groupFormat, type StepCommitDeps } from './commit.js';

/** A group this call brought to an end. */
export interface SettledGroup extends OpenGroup {
  /** The state it was found in. */
  readonly from: GroupState;
  readonly to: 'done' | 'aborted';
  /** The entry as it ended (inputs retired / outputs published when `done`). */
  readonly entry: GroupJournalEntry;
}

/** A group that could not be settled, and why (the request that failed, e.g. AccessDenied). */
export interface UnsettledGroup extends OpenGroup {
  readonly state: GroupState;
  readonly error: string;
}

export interface SettleReport {
  readonly settled: readonly SettledGroup[];
  readonly unsettled: readonly UnsettledGroup[];
}

export interface SettleOptions {
  /**
   * Recorded as the abort reason of a group rolled back before it published (a `FAILED <name>: …`
   * reason, see workflow/commit.ts `failureReason`).
   */
  readonly reason: string;
  /** Leave this run's groups alone (a run settles the others before planning; its own are its business). */
  readonly exceptRun?: string;
}

/** Attempts per group when another settler moves the same entry first (it re-reads and goes on). */
const CONFLICT_ATTEMPTS = 3;

/**
 * Settles every open group of `partition`: a group before `publishing` is rolled back (its staging
 * removed; nothing of it was visible), a group from `publishing` on is rolled forward (outputs published,
 * inputs retired), an interrupted undo is finished. Fences of groups found settled (or without an entry)
 * are removed. A group whose requests keep failing is reported in `unsettled` and keeps its fence: the
 * caller must not release the partition as idle (it marks it needs-attention instead).
 */
export async function settlePartition(
  deps: StepCommitDeps,
  partition: JournalPartition,
  options: SettleOptions,
): Promise<SettleReport> {
  const settled: SettledGroup[] = [];
  const unsettled: UnsettledGroup[] = [];
  for (const group of await deps.journal.listOpen(partition)) {
    if (group.runId === options.exceptRun) continue;
    const found = await deps.journal.get(group.runId, group.groupId);
    if (found === undefined || isSettled(found)) {
      await deps.journal.closeFence(partition, group);
      continue;
    }
    const result = await settleGroup(deps, found, options.reason);
    if ('error' in result) {
      unsettled.push({ ...group, state: result.state, error: result.error });
      continue;
    }
    await deps.journal.closeFence(partition, group);
    settled.push({
      ...group,
      from: found.state,
      to: result.entry.state === 'done' ? 'done' : 'aborted',
      entry: result.entry,
    });
  }
  return { settled, unsettled };
}

async function settleGroup(
  deps: StepCommitDeps,
  entry: GroupJournalEntry,
  reason: string,
): Promise<{ entry: GroupJournalEntry } | { state: GroupState; error: string }> {
  let state = entry.state;
  for (let attempt = 1; ; attempt++) {
    try {
      await groupFormat(deps, entry).rollback(deps, entry.runId, entry.groupId, reason);
    } catch (err) {
      if (!(err instanceof JournalConflictError) || attempt >= CONFLICT_ATTEMPTS) {
        const latest = await deps.journal.get(entry.runId, entry.groupId).catch(() => undefined);
        return { state: latest?.state ?? state, error: describe(err) };
      }
    }
    const latest = await deps.journal.get(entry.runId, entry.groupId);
    if (latest === undefined) return { state, error: 'the journal entry disappeared while settling it' };
    if (isSettled(latest)) return { entry: latest };
    state = latest.state;
    if (attempt >= CONFLICT_ATTEMPTS) {
      return { state, error: `still ${state} after ${attempt} attempts to settle it` };
    }
  }
}

function describe(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

/**
 * The sweep's settle before it releases the lease of a run whose execution ended without finalizing:
 * every open group of the partition (the dead run's, and any older one's) is settled.
 */
export async function settleAfterDeadRun(
  deps: StepCommitDeps,
  partition: JournalPartition,
  deadRunId: string,
): Promise<SettleOutcome> {
  const report = await settlePartition(deps, partition, {
    reason: failureReason({
      Error: 'RunInterrupted',
      Cause: `run ${deadRunId} ended before this group did; settled by the sweep`,
    }),
  });
  return {
    settled: report.settled.length,
    unsettled: report.unsettled.map((u) => `${u.runId}/${u.groupId} (${u.state}): ${u.error}`),
    completed: report.settled.some((g) => g.to === 'done'),
  };
}
