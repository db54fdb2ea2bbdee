// The commit protocol for Hive-style Parquet partitions: publishes a verified group's outputs and
// retires exactly the planned inputs, so that no row is lost or duplicated whatever request fails.
//
// Every step is driven by the group's journal state and is idempotent, so the same function is
// both the first attempt and the recovery after a crash:
//
//   verified    HEAD every input; any missing or changed → abort (nothing was published).
//               delete mode needs a versioned bucket and a version id for every input (so a
//               retired input can be restored); otherwise the group falls back to trash mode.
//               trash mode: copy inputs to trash (If-Match), still invisible to readers.
//   publishing  copy staged outputs into the partition (readers may now see old + new).
//   published   delete inputs with If-Match on their planned ETag, in one batched round
//               (a changed input → undo: restore retired inputs, then remove outputs, abort).
//   retired     remove the staging objects.          → done
//
// Before `publishing` a failure rolls back (staging removed); from `publishing` on it rolls forward.
// A group is "settled" once `done` or `aborted` with no undo pending; until then its partition is
// fenced (see workflow/settle.ts): never planned, never released as idle.
import pLimit from 'p-limit';
import type { GroupJournalEntry, JournalInput } from '../../../ports/journal.js';
import type { DeleteRef, ObjectStore } from '../../../ports/object-store.js';
import { NotVerifiedError, PreconditionFailedError } from '../../errors.js';
import { deleteAll, requireEntry, stagingLeftovers } from '../staging.js';
import type { CommitConflict, CommitDeps, CommitOutcome } from '../table-format.js';

/** Key of an input's trash copy: the input's full key under the trash prefix. */
export function trashKey(entry: Pick<GroupJournalEntry, 'trashPrefix'>, inputKey: string): string {
  return `${entry.trashPrefix}${inputKey}`;
}

/**
 * Brings a verified group to `done` (or `aborted` when an input changed), resuming from whatever
 * state a previous attempt reached. Safe to call any number of times, also concurrently: journal
 * transitions are conditional, so only one caller acts per step.
 */
export async function commitGroup(deps: CommitDeps, runId: string, groupId: string): Promise<CommitOutcome> {
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
        entry = await prepare(deps, entry, conflicts);
        break;
      case 'publishing':
        entry = await publish(deps, entry);
        break;
      case 'published':
        entry = await retire(deps, entry, conflicts);
        break;
      case 'retired':
        await removeStaging(deps.store, entry);
        entry = await deps.journal.transition(entry, 'done', {}, deps.clock.now());
        break;
      case 'done':
        return outcome(entry, conflicts);
      case 'aborted':
        if (entry.undo === 'pending') entry = await undo(deps, entry);
        else await removeStaging(deps.store, entry);
        return outcome(entry, conflicts);
    }
  }
}

/**
 * Abandons a group after a failure. Before `publishing` nothing is visible, so the staged outputs
 * (and trash copies) are removed and the group is `aborted`; from `publishing` on, outputs may be
 * visible and the only safe direction is forward, so this completes the commit instead.
 */
export async function rollbackGroup(
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
      return outcome(await abortBeforePublish(deps, entry, reason), []);
    default:
      return commitGroup(deps, runId, groupId);
  }
}

/** verified → publishing: checks every input is still the planned one, and in trash mode copies it to trash. */
async function prepare(
  deps: CommitDeps,
  entry: GroupJournalEntry,
  conflicts: CommitConflict[],
): Promise<GroupJournalEntry> {
  const limit = pLimit(deps.concurrency ?? 16);
  const checked = await Promise.all(
    entry.inputs.map((input) =>
      limit(async (): Promise<JournalInput | CommitConflict> => {
        const head = await deps.store.head(input.key);
        if (!head) return { key: input.key, reason: 'removed since planning' };
        if (head.etag !== input.etag) {
          return {
            key: input.key,
            reason: `changed since planning (ETag ${head.etag}, planned ${input.etag})`,
          };
        }
        return head.versionId === undefined ? input : { ...input, versionId: head.versionId };
      }),
    ),
  );
  const changed = checked.filter((c): c is CommitConflict => 'reason' in c);
  if (changed.length > 0) {
    conflicts.push(...changed);
    return abortBeforePublish(deps, entry, describeConflicts(changed));
  }
  const inputs = checked as JournalInput[];
  const retirement = await retirementFor(deps.store, entry, inputs);
  if (retirement.retireMode === 'trash') {
    const copied = await Promise.allSettled(
      inputs.map((input) =>
        limit(() => deps.store.copy(input.key, trashKey(entry, input.key), { ifMatch: input.etag })),
      ),
    );
    const lost = copied.flatMap((result, i) =>
      result.status === 'rejected' && result.reason instanceof PreconditionFailedError
        ? [{ key: inputs[i]?.key ?? '', reason: 'changed while being moved to trash' }]
        : [],
    );
    if (lost.length > 0) {
      conflicts.push(...lost);
      return abortBeforePublish(deps, entry, describeConflicts(lost));
    }
    const failed = copied.find((result): result is PromiseRejectedResult => result.status === 'rejected');
    if (failed) throw failed.reason;
  }
  return deps.journal.transition(
    entry,
    'publishing',
    { inputs, publishStartedAt: deps.clock.now(), ...retirement },
    deps.clock.now(),
  );
}

/**
 * How the group's inputs leave the partition. Delete mode is only as safe as the bucket's versioning: an
 * undo restores a deleted input from its version, which exists only while versioning is Enabled (on a
 * Suspended bucket a delete removes the `null` version for good) and the input's version id is known. If
 * either is missing the group falls back to trash mode (a copy per input) and the journal says why.
 */
async function retirementFor(
  store: ObjectStore,
  entry: GroupJournalEntry,
  inputs: readonly JournalInput[],
): Promise<Pick<GroupJournalEntry, 'retireMode'> & { note?: string }> {
  if (entry.retireMode !== 'delete-versioned') return { retireMode: entry.retireMode };
  const versioning = store.versioning === undefined ? 'unknown' : await store.versioning();
  const unversioned = inputs.filter((i) => i.versionId === undefined);
  if (versioning === 'enabled' && unversioned.length === 0) return { retireMode: 'delete-versioned' };
  const why =
    versioning !== 'enabled'
      ? `the bucket's versioning is ${versioning}, not Enabled`
      : `${unversioned.length} input(s) have no version id (e.g. ${unversioned[0]?.key})`;
  return {
    retireMode: 'trash',
    note: `delete mode fell back to trash mode: ${why}, so a deleted input could not be restored. Enable versioning on the bucket (or drop it from versionedBuckets)`,
  };
}

/** publishing → published: copies every staged output to its final key (idempotent). */
async function publish(deps: CommitDeps, entry: GroupJournalEntry): Promise<GroupJournalEntry> {
  const limit = pLimit(deps.concurrency ?? 16);
  await Promise.all(
    entry.outputs.map((output) =>
      limit(async () => {
        try {
          await deps.store.copy(output.stagingKey, output.finalKey, { ifMatch: output.etag });
        } catch (err) {
          // A previous attempt may have copied it already; anything else is a real failure.
          if (!(await deps.store.head(output.finalKey))) throw err;
        }
      }),
    ),
  );
  return deps.journal.transition(entry, 'published', {}, deps.clock.now());
}

/**
 * published → retired: deletes every input in one batched round, each conditioned on its planned
 * ETag. An input that changed in the meantime is not deleted; the group is then undone.
 */
async function retire(
  deps: CommitDeps,
  entry: GroupJournalEntry,
  conflicts: CommitConflict[],
): Promise<GroupJournalEntry> {
  const refs: DeleteRef[] = entry.inputs.map((input) => ({ key: input.key, ifMatch: input.etag }));
  const result = await deps.store.deleteMany(refs);
  const changed = result.errors.filter((e) => e.code === 'PreconditionFailed');
  const failed = result.errors.filter((e) => e.code !== 'PreconditionFailed');
  if (changed.length > 0) {
    const found = changed.map((e) => ({ key: e.key, reason: 'changed after publishing started' }));
    conflicts.push(...found);
    const aborted = await deps.journal.transition(
      entry,
      'aborted',
      { reason: describeConflicts(found), undo: 'pending' },
      deps.clock.now(),
    );
    return undo(deps, aborted);
  }
  if (failed.length > 0) {
    throw new Error(
      `Could not retire ${failed.length} input(s) of group ${entry.groupId}: ${failed
        .map((e) => `${e.key}: ${e.code === undefined ? '' : `${e.code}: `}${e.message}`)
        .join('; ')}. The commit resumes from here when retried.`,
    );
  }
  return deps.journal.transition(entry, 'retired', { retiredAt: deps.clock.now() }, deps.clock.now());
}

/**
 * Reverses a partial publish after an input changed under us: restores every retired input that is
 * absent (never overwriting a key a writer re-created), then removes the published outputs, then
 * staging. Idempotent, so a crash mid-undo is finished by the next attempt (the group stays fenced).
 */
async function undo(deps: CommitDeps, entry: GroupJournalEntry): Promise<GroupJournalEntry> {
  const limit = pLimit(deps.concurrency ?? 16);
  // Inputs first, outputs second: in between a reader may see rows twice (the documented visibility
  // window), never miss one. Removing the outputs first would hide every row of the retired inputs.
  await Promise.all(
    entry.inputs.map((input) =>
      limit(async () => {
        if (await deps.store.head(input.key)) return;
        try {
          if (entry.retireMode === 'trash') {
            const bytes = await deps.store.get(trashKey(entry, input.key));
            await deps.store.put(input.key, bytes, { ifNoneMatch: '*' });
          } else {
            await deps.store.copy(input.key, input.key, {
              ...(input.versionId === undefined ? {} : { sourceVersionId: input.versionId }),
            });
          }
        } catch (err) {
          // Lost the race to a writer that re-created the key: its content wins.
          if (!(err instanceof PreconditionFailedError)) throw err;
        }
      }),
    ),
  );
  await deleteAll(
    deps.store,
    entry.outputs.map((o) => o.finalKey),
  );
  await removeStaging(deps.store, entry);
  if (entry.retireMode === 'trash') {
    await deleteAll(
      deps.store,
      entry.inputs.map((i) => trashKey(entry, i.key)),
    );
  }
  return deps.journal.transition(entry, 'aborted', { undo: 'done' }, deps.clock.now());
}

async function abortBeforePublish(
  deps: CommitDeps,
  entry: GroupJournalEntry,
  reason: string,
): Promise<GroupJournalEntry> {
  await removeStaging(deps.store, entry);
  // Only copies were made so far; the originals are all still in place. Delete mode may have fallen back
  // to trash before a crash (the journal did not record it yet), so its copies are removed too.
  await deleteAll(
    deps.store,
    entry.inputs.map((i) => trashKey(entry, i.key)),
  );
  return deps.journal.transition(entry, 'aborted', { reason }, deps.clock.now());
}

async function removeStaging(store: ObjectStore, entry: GroupJournalEntry): Promise<void> {
  await deleteAll(store, await stagingLeftovers(store, entry.stagingPrefix));
}

function describeConflicts(conflicts: readonly CommitConflict[]): string {
  return `inputs changed concurrently, group left as it was: ${conflicts.map((c) => `${c.key} (${c.reason})`).join(', ')}`;
}

function outcome(entry: GroupJournalEntry, conflicts: readonly CommitConflict[]): CommitOutcome {
  const done = entry.state === 'done';
  const window =
    done && entry.publishStartedAt !== undefined && entry.retiredAt !== undefined
      ? entry.retiredAt - entry.publishStartedAt
      : undefined;
  return {
    state: done ? 'done' : 'aborted',
    published: done ? entry.outputs.map((o) => o.finalKey) : [],
    retired: done ? entry.inputs.map((i) => i.key) : [],
    conflicts,
    ...(window === undefined ? {} : { visibilityWindowMs: window }),
    ...(entry.reason === undefined ? {} : { reason: entry.reason }),
  };
}
