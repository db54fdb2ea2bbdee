// The commit protocol for Hive-style Parquet partitions: publishes a verified group's outputs and
// retires exactly the planned inputs, so that no row is lost or duplicated whatever request fails.
//
// Every step is driven by the group's journal state and is idempotent, so the same function is
// both the first attempt and the recovery after a crash:
//
//   verified    check every input (a HEAD each; one LIST per 1,000 keys instead when cheaper and no HEAD is
//               needed for a version id: delete-rebuild mode, or delete mode with every input's version id
//               journaled by the rewrite that read it); any missing or changed → abort (nothing published).
//               delete mode needs a versioned bucket and a version id for every input (so a
//               retired input can be restored); otherwise the group falls back to trash mode.
//               trash mode: copy inputs to trash (If-Match), still invisible to readers.
//               delete-rebuild mode: no copy; needs the outputs to locate every row of every input
//               (the rewrite's sources), else the group falls back to trash mode.
//   publishing  copy staged outputs into the partition (readers may now see old + new).
//   published   delete inputs with If-Match on their planned ETag, in one batched round
//               (a changed input → undo: restore retired inputs, then remove outputs, abort).
//   retired     remove the staging objects.          → done
//
// Undo restores an absent input from its old version (delete-versioned), its trash copy (trash), or
// (delete-rebuild) by rewriting the staged outputs that hold its rows with every other row dropped into
// its trash key, checking and verifying that file, then putting it at the input's key if still absent.
//
// Before `publishing` a failure rolls back (staging removed); from `publishing` on it rolls forward.
// A group is "settled" once `done` or `aborted` with no undo pending; until then its partition is
// fenced (see workflow/settle.ts): never planned, never released as idle.
import pLimit from 'p-limit';
import type { GroupJournalEntry, JournalInput, JournalOutput } from '../../../ports/journal.js';
import type { DeleteRef, ObjectInfo, ObjectStore } from '../../../ports/object-store.js';
import type { InputFile } from '../../../ports/parquet-engine.js';
import { DeletedRows } from '../../deletes/deleted-rows.js';
import {
  CompactorError,
  InvalidInputError,
  NotVerifiedError,
  PreconditionFailedError,
} from '../../errors.js';
import { type InputPiece, indexPieces, type PieceIndex, piecesIn } from '../../parquet/provenance.js';
import { deleteAll, requireEntry, stagingLeftovers } from '../staging.js';
import type { CommitConflict, CommitDeps, CommitOutcome } from '../table-format.js';

/**
 * A `delete-rebuild` undo could not re-create a retired input from the outputs: no engine was given, the outputs
 * do not account for its rows, or the rebuilt file does not hold its planned rows. Nothing is lost — the input's
 * rows are in the published outputs, which stay — but the group stays fenced (undo pending) until it is settled.
 */
export class InputRebuildError extends CompactorError {}

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
  const current = await currentInputs(deps.store, entry, limit);
  const checked = entry.inputs.map((input): JournalInput | CommitConflict => {
    const now = current.get(input.key);
    if (!now) return { key: input.key, reason: 'removed since planning' };
    if (now.etag !== input.etag) {
      return {
        key: input.key,
        reason: `changed since planning (ETag ${now.etag}, planned ${input.etag})`,
      };
    }
    // The version journaled (the one the rewrite read, see currentInputs) wins over the one a HEAD sees now.
    return input.versionId !== undefined || now.versionId === undefined
      ? input
      : { ...input, versionId: now.versionId };
  });
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
 * What one ListObjectsV2 page costs in HEADs: S3 bills a LIST as a PUT-class request ($0.005 per 1,000, us-east-1)
 * and a HEAD as a GET-class one ($0.0004 per 1,000). The cost model (workflow/cost.ts) prices with the same ratio.
 */
export const LIST_PRICE_IN_HEADS = 12.5;

/**
 * What the store holds now at each input's key (absent: not there), for the check before publishing.
 *
 * Delete-versioned mode needs each input's version id (its undo restores that version). The compact step journals
 * it from its own reads of the input (every GetObject response names the version it returned, see
 * workflow/input-reads.ts, and an input read at another ETag than planned aborted the group there); an input
 * without one — read through a store that does not say, or journaled by an older version — is HEADed for it, one
 * request each, as before. The version read rather than the version current now is the right one to keep: it is
 * the one whose rows are in the outputs. If a writer re-put the same bytes since (same ETag, a newer version), the
 * conditional delete below retires the newer one behind a delete marker and an undo restores the version read,
 * whose bytes are the same; the read version and the newer one both stay until vacuum, which deletes only the
 * version journaled and never a key's current version (`spareRetiredVersion`). Nothing here ever deletes a
 * version outright: the retire is a delete marker, so no version of an input is lost before vacuum's retention.
 *
 * Where no version id is needed — delete-rebuild mode (a bin-pack on an unversioned bucket: the tiny files'
 * usual case), or delete mode with every input's version journaled — existence and ETag are all the check needs,
 * which a listing of the inputs' common folder gives for up to 1,000 keys a request (S3 listings are strongly
 * consistent, and list the same ETag a HEAD does). Either is a check at one instant, like the HEADs were: what
 * makes retirement safe is the conditional delete on the planned ETag, not this check, which only spares a
 * publish and an undo when an input already changed. An input replaced by other bytes between the rewrite and
 * this check is caught here (its ETag); one replaced after it, by the conditional delete (undo). A LIST is billed
 * as a PUT, {@link LIST_PRICE_IN_HEADS} HEADs: a group lists only when its inputs' HEADs would cost more than a
 * page, and the listing is cut short once it has cost what HEADs of all the inputs would (a folder far larger
 * than the group); the inputs still unseen are then HEADed. Trash mode keeps its HEADs: it pays a COPY per input
 * anyway (a PUT-class request too), which dwarfs them.
 */
async function currentInputs(
  store: ObjectStore,
  entry: GroupJournalEntry,
  limit: ReturnType<typeof pLimit>,
): Promise<Map<string, ObjectInfo>> {
  const found = new Map<string, ObjectInfo>();
  const wanted = new Set(entry.inputs.map((i) => i.key));
  const headAll = async (keys: Iterable<string>) => {
    await Promise.all(
      [...keys].map((key) =>
        limit(async () => {
          const head = await store.head(key);
          if (head) found.set(key, head);
        }),
      ),
    );
  };
  const pageBudget = Math.floor(wanted.size / LIST_PRICE_IN_HEADS);
  if (!checkedByListing(entry) || pageBudget < 1) {
    await headAll(wanted);
    return found;
  }
  const prefix = commonFolder([...wanted]);
  let token: string | undefined;
  let pages = 0;
  do {
    const page = await store.list(prefix, token === undefined ? {} : { token });
    pages++;
    for (const object of page.objects) {
      if (wanted.delete(object.key)) found.set(object.key, object);
    }
    token = page.nextToken;
  } while (token !== undefined && wanted.size > 0 && pages < pageBudget);
  // Unseen and the listing complete: removed. Unseen with pages left unread: HEADed instead.
  if (token !== undefined && wanted.size > 0) await headAll(wanted);
  return found;
}

/**
 * Whether the check before publishing needs no HEAD per input (see {@link currentInputs}): delete-rebuild mode
 * needs no version id, and delete mode has every input's from the rewrite's reads.
 */
export function checkedByListing(entry: Pick<GroupJournalEntry, 'retireMode' | 'inputs'>): boolean {
  if (entry.retireMode === 'delete-rebuild') return true;
  return entry.retireMode === 'delete-versioned' && entry.inputs.every((i) => i.versionId !== undefined);
}

/** The longest folder (`…/`, or the root `''`) holding every key. */
function commonFolder(keys: readonly string[]): string {
  let common = keys[0] ?? '';
  for (const key of keys) {
    let i = 0;
    while (i < common.length && i < key.length && common[i] === key[i]) i++;
    common = common.slice(0, i);
  }
  return common.slice(0, common.lastIndexOf('/') + 1);
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
  if (entry.retireMode === 'delete-rebuild') return rebuildRetirement(entry, inputs);
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

/**
 * Delete-rebuild mode is only as safe as the outputs' record of where each input's rows went: the group keeps
 * it only when, for every input, the outputs' sources hold its planned rows exactly once and in order (see
 * `rebuildPlan`); otherwise it falls back to trash mode (a copy per input) before anything is published.
 */
function rebuildRetirement(
  entry: GroupJournalEntry,
  inputs: readonly JournalInput[],
): Pick<GroupJournalEntry, 'retireMode'> & { note?: string } {
  const indexed = indexPieces(entry.outputs);
  for (const input of inputs) {
    const plan = 'problem' in indexed ? indexed : locate(indexed.index, input);
    if ('problem' in plan) {
      return {
        retireMode: 'trash',
        note: `delete-rebuild mode fell back to trash mode: ${input.key} could not be rebuilt from the outputs (${plan.problem})`,
      };
    }
  }
  return { retireMode: 'delete-rebuild' };
}

/**
 * The engine's group that re-creates `input` from the staged outputs: each output holding some of its rows,
 * in order, with every row that is not the input's marked deleted. Staged outputs rather than published ones:
 * they are ours alone (outside the table, immutable, their ETags journaled), and stay until the undo is done.
 */
function rebuildPlan(
  entry: Pick<GroupJournalEntry, 'outputs'>,
  index: PieceIndex,
  input: JournalInput,
): { readonly files: InputFile[] } | { readonly problem: string } {
  const found = locate(index, input);
  if ('problem' in found) return found;
  const byOutput = new Map<number, InputPiece[]>();
  for (const piece of found.pieces) addTo(byOutput, piece);
  return { files: keptOnly(entry, byOutput) };
}

/**
 * Where `input`'s rows lie in the outputs, when a rebuild can take them back out: every row exactly once, and
 * in input order in output order (rows come back in output order).
 */
function locate(
  index: PieceIndex,
  input: JournalInput,
): { readonly pieces: InputPiece[] } | { readonly problem: string } {
  if (input.rows === undefined) return { problem: 'its row count was not recorded' };
  if (input.rows === 0) return { problem: 'it has no rows' };
  const found = piecesIn(index, input.key, input.rows);
  if ('problem' in found) return found;
  let previous: InputPiece | undefined;
  for (const piece of found.pieces) {
    if (
      previous !== undefined &&
      (piece.output < previous.output ||
        (piece.output === previous.output && piece.offset < previous.offset + previous.rows))
    ) {
      return { problem: 'its rows are not in the outputs in order' };
    }
    previous = piece;
  }
  return found;
}

function addTo(byOutput: Map<number, InputPiece[]>, piece: InputPiece): void {
  const pieces = byOutput.get(piece.output);
  if (pieces === undefined) byOutput.set(piece.output, [piece]);
  else pieces.push(piece);
}

/** The outputs holding `pieces` (by output index), each with every row outside its pieces marked deleted. */
function keptOnly(
  entry: Pick<GroupJournalEntry, 'outputs'>,
  byOutput: ReadonlyMap<number, readonly InputPiece[]>,
): InputFile[] {
  return [...byOutput]
    .sort(([a], [b]) => a - b)
    .map(([index, pieces]): InputFile => {
      const output = entry.outputs[index] as JournalOutput;
      const ranges: number[] = [];
      let at = 0;
      for (const piece of [...pieces].sort((a, b) => a.offset - b.offset)) {
        if (piece.offset > at) ranges.push(at, piece.offset);
        at = piece.offset + piece.rows;
      }
      if (at < output.rows) ranges.push(at, output.rows);
      return {
        key: output.stagingKey,
        size: output.size,
        etag: output.etag,
        rows: output.rows,
        ...(ranges.length === 0 ? {} : { deleted: DeletedRows.fromRanges(Uint32Array.from(ranges)) }),
      };
    });
}

/**
 * Re-creates the absent inputs at their trash keys from the staged outputs, checked (see `rebuildFrom`): in one
 * pass over the outputs, one output per input, when the inputs lie in the outputs one after another; else (say,
 * inputs of several schema runs, which one rewrite cannot cut into one run) one input at a time. Without the one
 * pass, an undo of n inputs would decode the outputs n times.
 */
export async function rebuildInputs(
  deps: CommitDeps,
  entry: GroupJournalEntry,
  absent: readonly JournalInput[],
): Promise<void> {
  if (absent.length === 0) return;
  const indexed = indexPieces(entry.outputs);
  if ('problem' in indexed)
    throw rebuildError(entry, absent[0] as JournalInput, `${indexed.problem}; restore it by hand.`);
  const together = absent.length > 1 ? rebuildPlanOfMany(entry, indexed.index, absent) : undefined;
  if (together !== undefined) {
    try {
      await rebuildFrom(deps, entry, together.inputs, together.files);
      return;
    } catch (err) {
      // The outputs make several schema runs: rebuild input by input below.
      if (!(err instanceof InvalidInputError)) throw err;
    }
  }
  // A rebuild decodes and re-encodes whole outputs: one at a time, so memory stays one rewrite's.
  for (const input of absent) {
    const plan = rebuildPlan(entry, indexed.index, input);
    if ('problem' in plan) throw rebuildError(entry, input, `${plan.problem}; restore it by hand.`);
    await rebuildFrom(deps, entry, [input], plan.files);
  }
}

/**
 * The engine's group re-creating several inputs in one pass: every output holding rows of any of them, with
 * every other row dropped, so the kept rows are the inputs' rows one input after another; undefined when they
 * are not (an input's rows interleaved with another's, or not all located: the per-input plan says why).
 */
function rebuildPlanOfMany(
  entry: Pick<GroupJournalEntry, 'outputs'>,
  index: PieceIndex,
  inputs: readonly JournalInput[],
): { readonly inputs: JournalInput[]; readonly files: InputFile[] } | undefined {
  const pieces: (InputPiece & { readonly input: JournalInput })[] = [];
  for (const input of inputs) {
    const found = locate(index, input);
    if ('problem' in found) return undefined;
    pieces.push(...found.pieces.map((p) => ({ ...p, input })));
  }
  pieces.sort((a, b) => a.output - b.output || a.offset - b.offset);
  const order: JournalInput[] = [];
  const seen = new Set<JournalInput>();
  for (const piece of pieces) {
    if (order.at(-1) === piece.input) continue;
    if (seen.has(piece.input)) return undefined;
    seen.add(piece.input);
    order.push(piece.input);
  }
  const byOutput = new Map<number, InputPiece[]>();
  for (const piece of pieces) addTo(byOutput, piece);
  return { inputs: order, files: keptOnly(entry, byOutput) };
}

/**
 * Rewrites `files` (outputs with rows dropped) into one file per input, in order, at the inputs' trash keys, and
 * checks them: each holds exactly its input's planned rows, and an independent re-read (the engine's verify)
 * matches the rows the rewrite read. A restored file is row-identical to its input, not byte-identical (written
 * by the engine, with its default codec). Trash keys are overwritten, so a crash mid-rebuild is rebuilt again.
 */
async function rebuildFrom(
  deps: CommitDeps,
  entry: GroupJournalEntry,
  inputs: readonly JournalInput[],
  files: InputFile[],
): Promise<void> {
  const first = inputs[0] as JournalInput;
  if (deps.engine === undefined) {
    throw rebuildError(
      entry,
      first,
      "this step was given no Parquet engine; settle it from a step that has one (the workflow's commit, rollback, plan or finalize step, or lake-compactor settle).",
    );
  }
  const keys = inputs.map((i) => trashKey(entry, i.key));
  const result = await deps.engine.rewriteGroup(
    { source: deps.store, target: deps.store },
    { groupId: `${entry.groupId}-restore`, files },
    {
      outputKey: (index) => keys[index] ?? `${trashKey(entry, first.key)}.extra-${index}`,
      stitch: false,
      outputRows: inputs.map((i) => i.rows ?? 0),
    },
  );
  const wrong = inputs.findIndex((input, i) => result.outputs[i]?.rows !== input.rows);
  if (wrong >= 0 || result.outputs.length !== inputs.length) {
    await deleteAll(
      deps.store,
      result.outputs.map((o) => o.key),
    );
    throw rebuildError(
      entry,
      inputs[Math.max(0, wrong)] as JournalInput,
      `the rebuild wrote ${result.outputs.length} file(s) of ${result.outputs.map((o) => o.rows).join(', ')} rows for ${inputs.length} input(s) of ${inputs.map((i) => i.rows).join(', ')}; retry, and report it if it repeats.`,
    );
  }
  await deps.engine.verifyOutputs(deps.store, result.outputs, result.fingerprint);
}

function rebuildError(entry: GroupJournalEntry, input: JournalInput, why: string): InputRebuildError {
  return new InputRebuildError(
    `Group ${entry.groupId} of run ${entry.runId} cannot restore ${input.key} from its outputs: ${why} Nothing is lost: its rows are in the published outputs, which stay until every input is back, and the partition stays fenced until the group is settled.`,
  );
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
  const absent = (
    await Promise.all(
      entry.inputs.map((input) =>
        limit(async () => ((await deps.store.head(input.key)) ? undefined : input)),
      ),
    )
  ).filter((input): input is JournalInput => input !== undefined);
  if (entry.retireMode === 'delete-rebuild') await rebuildInputs(deps, entry, absent);
  await Promise.all(
    absent.map((input) =>
      limit(async () => {
        try {
          if (entry.retireMode === 'trash' || entry.retireMode === 'delete-rebuild') {
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
  if (entry.retireMode === 'delete-rebuild') {
    // Staging is what an input is rebuilt from: it goes only once the undo is recorded as done, so a rerun
    // after any crash before that (say, a writer deleted a restored input meanwhile) can still rebuild.
    await deleteAll(
      deps.store,
      entry.inputs.map((i) => trashKey(entry, i.key)),
    );
    const undone = await deps.journal.transition(entry, 'aborted', { undo: 'done' }, deps.clock.now());
    await removeStaging(deps.store, entry);
    return undone;
  }
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
