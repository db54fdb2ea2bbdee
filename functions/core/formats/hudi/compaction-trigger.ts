// When the workflow's plan step would schedule a Merge-on-Read compaction in one partition: the one rule the plan
// step (compaction-workflow.ts) and the profiler's change reader (changes.ts) both apply, so the trigger starts a run
// exactly when that run will compact, and a partition whose compaction is not due yet never starts a run that plans
// nothing (released at once, it would be started again and again). Pure: a table state in, a verdict with its reason.
import { CompactorError } from '../../errors.js';
import { compactionCandidates, compactionDeferral, compactionPolicy } from './compaction-run.js';
import type { HudiTableState } from './table-state.js';
import type { HudiPendingPlan } from './timeline.js';

/** One file slice a due compaction rewrites: its base file and log files, as listed. */
export interface DueSlice {
  readonly fileId: string;
  readonly base: { readonly key: string; readonly size: number };
  readonly logs: readonly { readonly key: string; readonly size: number }[];
}

/**
 * Whether a compaction of the partition is due now, with why (numbers included), and what it rewrites when it is: the
 * slices a new plan would name, or — a pending compaction the run finishes — that plan's file groups (set aside from
 * the live slices while it is pending; their files are the ones under those file ids in the partition).
 */
export type CompactionVerdict =
  | {
      readonly due: true;
      readonly reason: string;
      readonly slices: readonly DueSlice[];
      readonly resumes?: { readonly instant: string; readonly fileIds: readonly string[] };
    }
  | { readonly due: false; readonly reason: string };

/**
 * Delta commits that wrote to `partition` since the latest completed compaction that did: Hudi's NUM_COMMITS count
 * (`hoodie.compact.inline.max.delta.commits`), per partition because the workflow compacts one partition per run (a
 * table-wide count reset by one partition's compaction would starve the others).
 */
export function deltaCommitsInPartition(state: HudiTableState, partition: string): number {
  const writes = state.timeline.completedWrites.filter((w) =>
    w.metadata.partitionToWriteStats.has(partition),
  );
  let last = -1;
  writes.forEach((w, i) => {
    if (w.instant.action === 'commit' && w.metadata.compacted) last = i;
  });
  return writes.slice(last + 1).filter((w) => w.instant.action === 'deltacommit').length;
}

/**
 * The first pending compaction (by instant) naming a file group of `partition`. Hudi lets compactions of disjoint file
 * groups be pending at once (its scheduler asks only that a new one be the latest instant, and plans around the file
 * groups of pending ones), so one pending in another partition does not hold this partition's back.
 */
export function pendingCompactionIn(state: HudiTableState, partition: string): HudiPendingPlan | undefined {
  return state.timeline.pendingPlans.find(
    (p) => p.kind === 'compaction' && p.fileGroups.some((g) => g.partitionPath === partition),
  );
}

/**
 * Whether a compaction of `partition` is due on `state` under the trigger of `needed` delta commits. A pending
 * compaction of the partition comes first, as in the plan step (compaction-workflow.ts `resumePending`): due when all
 * of its file groups lie in the partition and have base files, whatever the count. One pending elsewhere only is no
 * concern of this partition's. Else a new one: the table is Merge-on-Read, at least
 * `needed` delta commits wrote to the partition since its last compaction, nothing defers scheduling
 * (`compactionDeferral`: table version 6 with a write pending), and the partition has a live slice with log files
 * and a base file. A table whose merge semantics are refused by name is never due: its run would refuse it.
 */
export function compactionDueIn(state: HudiTableState, partition: string, needed: number): CompactionVerdict {
  if (state.config.type !== 'MERGE_ON_READ')
    return { due: false, reason: 'a Copy-on-Write table has no log files to compact' };
  try {
    compactionPolicy(state);
  } catch (err) {
    if (!(err instanceof CompactorError)) throw err;
    return { due: false, reason: `compaction is refused on this table: ${err.message}` };
  }
  const pending = pendingCompactionIn(state, partition);
  if (pending !== undefined) {
    const time = pending.instant.time;
    const groups = pending.fileGroups;
    // As the plan step's resumePending: one wholly in the partition, every operation with a base file, is finished by
    // the partition's run; any other is left to Hudi's compactor or `lake-compactor compact` (a whole-table run).
    if (groups.length === 0 || groups.some((g) => g.partitionPath !== partition))
      return {
        due: false,
        reason: `compaction ${time} is pending with file groups outside the partition: left to Hudi's compactor or lake-compactor compact`,
      };
    if (groups.some((g) => g.hasBaseFile === false))
      return {
        due: false,
        reason: `compaction ${time} is pending with a log-only file slice: left to Hudi's compactor`,
      };
    return {
      due: true,
      reason: `compaction ${time} is pending with its ${groups.length} file group(s) in the partition: the run finishes it`,
      slices: [],
      resumes: { instant: time, fileIds: groups.map((g) => g.fileId) },
    };
  }
  const count = deltaCommitsInPartition(state, partition);
  if (count < needed)
    return {
      due: false,
      reason: `${count} delta commit(s) wrote to the partition since its last compaction < ${needed} (hudiCompactionDeltaCommits)`,
    };
  const deferral = compactionDeferral(state);
  if (deferral !== undefined) return { due: false, reason: deferral };
  const slices = compactionCandidates(state)
    .operations.filter((o) => o.partition === partition)
    .map((o) => ({ fileId: o.fileId, base: o.base, logs: o.logs }));
  if (slices.length === 0)
    return { due: false, reason: 'no live file slice of the partition has both a base file and log files' };
  return {
    due: true,
    reason: `${count} delta commit(s) wrote to the partition since its last compaction ≥ ${needed} (hudiCompactionDeltaCommits): ${slices.length} file slice(s) with log files`,
    slices,
  };
}
