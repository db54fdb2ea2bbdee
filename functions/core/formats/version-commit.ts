// The group commit of a format whose table is a log or a catalog (or a timeline): one journal-driven state
// machine, the format supplying only its atomic commit. Every step is idempotent, so the same function is both
// the first attempt and the recovery after a crash:
//
//   verified    → publishing  nothing to check on storage: the format's commit checks the inputs against the table.
//   publishing  copy staged outputs into the table's folders under fresh names. No version names them, so no
//               reader sees them.                                                              → published
//   published   the format's atomic commit (a log version, a snapshot): it first looks for this group's own
//               earlier commit (a tag), then for a conflict with what committed since planning, then commits.
//                                                            → retired (committed) or aborted (conflict)
//   retired     the format's after-commit work (a checkpoint), staging removed.                → done
//
// Outputs are deleted only where no attempt may commit them: before `published` (rollback aborts the entry first,
// and a twin's transition to `published` then fails on the revision) or after a conflict was found. From
// `published` on, rollback rolls forward. Readers switch from inputs to outputs at one version: no visibility window.
import pLimit from 'p-limit';
import type { FormatState, GroupJournalEntry } from '../../ports/journal.js';
import { failureText, NotVerifiedError } from '../errors.js';
import { whileAlive } from '../workflow/keep-alive.js';
import { deleteAll, requireEntry, stagingLeftovers } from './staging.js';
import type { CommitConflict, CommitDeps, CommitOutcome, KeepAlive } from './table-format.js';

/** What the format's atomic commit found or did. */
export type VersionCommitResult =
  | {
      readonly kind: 'committed';
      /** Merged into the group's formatState: the committed version (so a retry never commits again). */
      readonly state: FormatState;
    }
  | {
      readonly kind: 'conflict';
      readonly conflicts: readonly CommitConflict[];
      /**
       * The abort is this error's failure, not a concurrent change (e.g. the table's lock stayed held past its wait
       * when the format's commit had to complete): the group's reason records it as a failed step's does
       * (`FAILED <name>: <message>`), so the run ends FAILED naming it, and still nothing of the group is committed.
       */
      readonly failure?: Error;
    }
  /**
   * Not committed yet, and nothing wrong: the format commits this group with the run's others, once (e.g. one
   * completed compaction for all of its file slices). The group stays `published` (commit outcome `pending`) until
   * a settling call (rollback: finalize, settle, the sweep) commits it with them or aborts it.
   */
  | { readonly kind: 'deferred'; readonly reason: string };

/** How the commit is asked for: by the commit step, or by a settler ending the group's run (rollback). */
export interface VersionCommitContext {
  /**
   * True when the group's run is over for it (finalize, settle, the sweep, a failure's rollback): a format that
   * defers its commit must now commit the group or abort it, never defer again.
   */
  readonly settling: boolean;
}

/** The format-specific half of a group commit. */
export interface VersionProtocol {
  /** Finds the group's earlier commit, or the conflict that forbids it, or commits it (see the module comment). */
  commitVersion(
    deps: CommitDeps,
    entry: GroupJournalEntry,
    context: VersionCommitContext,
  ): Promise<VersionCommitResult>;
  /** Whether the entry records that its group committed (its outputs are then the table's, never removed). */
  isCommitted(entry: GroupJournalEntry): boolean;
  /** Work after a commit, before `done` (e.g. a checkpoint when one is due). Idempotent. */
  afterCommit?(deps: CommitDeps, entry: GroupJournalEntry): Promise<void>;
  /**
   * Undoes what the format wrote to the table for an aborted group besides its outputs (e.g. a pending
   * instant's inflight and requested files, which the table's writers would otherwise block on or roll back), after the
   * outputs are removed. Idempotent; never called for a committed group.
   */
  afterAbort?(deps: CommitDeps, entry: GroupJournalEntry): Promise<void>;
  /**
   * Work on the table before the outputs are copied into it (e.g. a marker per output, so a writer rolling the
   * pending instant back finds and deletes exactly those files). Idempotent; runs on every attempt of `publishing`.
   */
  beforePublish?(deps: CommitDeps, entry: GroupJournalEntry): Promise<void>;
  /**
   * The group's sign of life on the table while its outputs are copied in (e.g. a pending instant's heartbeat,
   * which a writer judges by its age): renewed while the copies run, however long they take.
   */
  keepAlive?(deps: CommitDeps, entry: GroupJournalEntry): KeepAlive | undefined;
}

/** The commit and rollback of a format whose commit is one atomic version (see the module comment). */
export function versionCommitter(protocol: VersionProtocol): {
  commit(deps: CommitDeps, runId: string, groupId: string): Promise<CommitOutcome>;
  rollback(deps: CommitDeps, runId: string, groupId: string, reason: string): Promise<CommitOutcome>;
} {
  async function commit(deps: CommitDeps, runId: string, groupId: string): Promise<CommitOutcome> {
    return commitAs(deps, runId, groupId, { settling: false });
  }

  async function commitAs(
    deps: CommitDeps,
    runId: string,
    groupId: string,
    context: VersionCommitContext,
  ): Promise<CommitOutcome> {
    let entry = await requireEntry(deps.journal, runId, groupId);
    const conflicts: CommitConflict[] = [];
    for (;;) {
      switch (entry.state) {
        case 'planned':
        case 'staged':
          throw new NotVerifiedError(
            `Group ${groupId} of run ${runId} is ${entry.state}, not verified: verify its outputs before committing (or roll it back).`,
          );
        case 'verified':
          // No publishStartedAt: readers never see inputs and outputs at once (no visibility window).
          entry = await deps.journal.transition(entry, 'publishing', {}, deps.clock.now());
          break;
        case 'publishing':
          await protocol.beforePublish?.(deps, entry);
          entry = await placeKeptAlive(protocol, deps, entry);
          break;
        case 'published': {
          const result = await protocol.commitVersion(deps, entry, context);
          if (result.kind === 'deferred')
            return { ...outcome(entry, conflicts), state: 'pending', reason: result.reason };
          if (result.kind === 'committed') {
            entry = await deps.journal.transition(
              entry,
              'retired',
              { formatState: { ...entry.formatState, ...result.state }, retiredAt: deps.clock.now() },
              deps.clock.now(),
            );
          } else {
            conflicts.push(...result.conflicts);
            const found = result.conflicts.map((c) => `${c.key} (${c.reason})`).join(', ');
            entry = await deps.journal.transition(
              entry,
              'aborted',
              {
                reason:
                  result.failure === undefined
                    ? `conflict with a concurrent commit, nothing of the group was committed: ${found}`
                    : failureText(
                        result.failure.name,
                        `${result.failure.message} Nothing of the group was committed: ${found}`,
                      ),
                ...undoPending(protocol),
              },
              deps.clock.now(),
            );
          }
          break;
        }
        case 'retired':
          await protocol.afterCommit?.(deps, entry);
          await deleteAll(deps.store, await stagingLeftovers(deps.store, entry.stagingPrefix));
          entry = await deps.journal.transition(entry, 'done', {}, deps.clock.now());
          break;
        case 'done':
          return outcome(entry, conflicts);
        case 'aborted':
          entry = await removeUncommitted(deps, entry, protocol);
          return outcome(entry, conflicts);
      }
    }
  }

  /**
   * Abandons a group: before `published` no attempt may commit, so the group aborts and its outputs (in staging,
   * and any already copied into the table, which no version names) are removed; from `published` on an attempt
   * may have committed, so the only safe direction is forward: the commit finds its own, or commits, or finds the
   * conflict that aborts it.
   */
  async function rollback(
    deps: CommitDeps,
    runId: string,
    groupId: string,
    reason: string,
  ): Promise<CommitOutcome> {
    const entry = await deps.journal.get(runId, groupId);
    if (!entry) return { state: 'aborted', published: [], retired: [], conflicts: [], reason };
    switch (entry.state) {
      case 'planned':
      case 'staged':
      case 'verified':
      case 'publishing': {
        const aborted = await deps.journal.transition(
          entry,
          'aborted',
          { reason, ...undoPending(protocol) },
          deps.clock.now(),
        );
        return outcome(await removeUncommitted(deps, aborted, protocol), []);
      }
      default:
        return commitAs(deps, runId, groupId, { settling: true });
    }
  }

  return { commit, rollback };
}

/** publishing → published: copies every staged output to its (fresh, unique) key in the table. Idempotent. */
/** {@link placeOutputs} with the group's sign of life renewed while the copies run (`VersionProtocol.keepAlive`). */
function placeKeptAlive(
  protocol: VersionProtocol,
  deps: CommitDeps,
  entry: GroupJournalEntry,
): Promise<GroupJournalEntry> {
  return whileAlive(protocol.keepAlive?.(deps, entry), () => placeOutputs(deps, entry));
}

async function placeOutputs(deps: CommitDeps, entry: GroupJournalEntry): Promise<GroupJournalEntry> {
  const limit = pLimit(deps.concurrency ?? 16);
  await Promise.all(
    entry.outputs.map((output) =>
      limit(async () => {
        try {
          await deps.store.copy(output.stagingKey, output.finalKey, { ifMatch: output.etag });
        } catch (err) {
          // A previous attempt may have copied it already (and staging may be gone since); else a real failure.
          const there = await deps.store.head(output.finalKey);
          if (there === undefined || there.size !== output.size) throw err;
        }
      }),
    ),
  );
  return deps.journal.transition(entry, 'published', {}, deps.clock.now());
}

/**
 * A format that undoes table writes on abort (`afterAbort`) keeps its aborted group open (`undo: 'pending'`, so the
 * partition stays fenced and every settle, re-run or sweep finishes the undo) until that undo is done: a crash
 * between the abort and the end of the undo must not leave, say, a pending instant no one will ever remove.
 */
function undoPending(protocol: VersionProtocol): { undo?: 'pending' } {
  return protocol.afterAbort === undefined ? {} : { undo: 'pending' };
}

/**
 * An aborted group's outputs: in staging, and any copy in the table's folders (no version names them: the group
 * aborted before or instead of committing), then the format's own undo, after which the group is settled.
 * Idempotent.
 */
async function removeUncommitted(
  deps: CommitDeps,
  entry: GroupJournalEntry,
  protocol: VersionProtocol,
): Promise<GroupJournalEntry> {
  if (protocol.isCommitted(entry)) return entry;
  const copies = entry.outputs.map((o) => o.finalKey);
  await deleteAll(deps.store, [...copies, ...(await stagingLeftovers(deps.store, entry.stagingPrefix))]);
  await protocol.afterAbort?.(deps, entry);
  return entry.undo === 'pending'
    ? deps.journal.transition(entry, 'aborted', { undo: 'done' }, deps.clock.now())
    : entry;
}

function outcome(entry: GroupJournalEntry, conflicts: readonly CommitConflict[]): CommitOutcome {
  const done = entry.state === 'done';
  return {
    state: done ? 'done' : 'aborted',
    published: done ? entry.outputs.map((o) => o.finalKey) : [],
    retired: done ? entry.inputs.map((i) => i.key) : [],
    conflicts,
    ...(entry.reason === undefined ? {} : { reason: entry.reason }),
  };
}
