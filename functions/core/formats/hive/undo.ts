// Undo of a finished run on a Hive-style Parquet table (`lake-compactor undo`): the listing is the table, so the
// table of before the run is its inputs back at their keys and its outputs gone. Each retired input comes back from
// what its group's retire mode kept of it:
//
//   delete-versioned  the input's old version (its version id is journaled), copied over its key;
//   trash             the copy the commit made under the run's trash prefix (vacuum removes it after retention);
//   delete-rebuild    re-created from the published outputs' rows, as the rewrite's sources locate them
//                     (row-identical, not byte-identical: the same rebuild the commit's own undo makes).
//
// Refused, with nothing changed, when the table moved on since the run: an output that is gone or was replaced (a
// later run compacted it, a writer rewrote it), a file at an input's key again, or a copy the undo needs that
// retention removed. As atomic as a listing allows, in the commit's own order: every input is restored first, then
// the outputs are deleted, so a reader in between may see rows twice (the documented visibility window) but never
// misses one. A crash in between is finished by running the undo again (`resuming`: what is already back, or already
// gone, is taken as done).
import pLimit from 'p-limit';
import type { GroupJournalEntry, JournalInput, JournalOutput } from '../../../ports/journal.js';
import type { ObjectInfo, ObjectStore } from '../../../ports/object-store.js';
import { PreconditionFailedError } from '../../errors.js';
import { printable } from '../../keys.js';
import { indexPieces, piecesIn } from '../../parquet/provenance.js';
import { deleteAll } from '../staging.js';
import {
  type CommitDeps,
  type RunUndo,
  type RunUndoRequest,
  type RunUndoResult,
  type UndoChange,
  undoRefused,
} from '../table-format.js';
import { rebuildInputs, trashKey } from './commit.js';

/** One input to bring back, and from where. */
interface Restore {
  readonly entry: GroupJournalEntry;
  readonly input: JournalInput;
}

/** One output to delete, while it is still the one the run published. */
interface Removal {
  readonly key: string;
  readonly etag: string;
}

/** What the table looks like now against one group: which inputs are absent, which outputs are the run's. */
interface GroupFindings {
  readonly restores: Restore[];
  readonly removals: Removal[];
  readonly problems: string[];
  /** Inputs present and outputs absent (what an undo leaves), counted to tell an undone group. */
  readonly undoneSigns: number;
}

/**
 * Whether `head` is still the output the run published: its ETag, or (a store whose copy gives the published object
 * another ETag: a local folder's is the file's identity, S3 re-computes a multipart one) its size, written no later
 * than the store recorded the group done (see RunUndoRequest.settledAt): a writer's replacement is newer.
 */
function isPublishedOutput(head: ObjectInfo, output: JournalOutput, settledAt: number): boolean {
  if (head.etag === output.etag) return true;
  return head.size === output.size && head.lastModified.getTime() <= settledAt;
}

/** Why `input` cannot come back from what its group kept, or undefined when it can. */
async function restoreProblem(store: ObjectStore, entry: GroupJournalEntry, input: JournalInput) {
  switch (entry.retireMode) {
    case 'trash':
      return (await store.head(trashKey(entry, input.key))) === undefined
        ? `its trash copy ${printable(trashKey(entry, input.key))} is gone (vacuum removes trash after its retention)`
        : undefined;
    case 'delete-versioned':
      return input.versionId === undefined ? 'no version id of it was journaled' : undefined;
    case 'delete-rebuild': {
      const indexed = indexPieces(entry.outputs);
      if ('problem' in indexed) return `the outputs do not say where its rows went (${indexed.problem})`;
      if (input.rows === undefined || input.rows === 0) return 'its row count was not journaled';
      const found = piecesIn(indexed.index, input.key, input.rows);
      return 'problem' in found ? `its rows cannot be located in the outputs (${found.problem})` : undefined;
    }
  }
}

function describeSource(entry: GroupJournalEntry, input: JournalInput): string {
  switch (entry.retireMode) {
    case 'trash':
      return `from its trash copy ${printable(trashKey(entry, input.key))}`;
    case 'delete-versioned':
      return `from its old version ${input.versionId ?? ''}`;
    case 'delete-rebuild':
      return "rebuilt from the outputs' rows (row-identical, not byte-identical)";
  }
}

async function inspectGroup(
  deps: CommitDeps,
  entry: GroupJournalEntry,
  resuming: boolean,
  settledAt: number,
): Promise<GroupFindings> {
  const limit = pLimit(deps.concurrency ?? 16);
  const findings: GroupFindings = { restores: [], removals: [], problems: [], undoneSigns: 0 };
  let undoneSigns = 0;
  await Promise.all([
    ...entry.inputs.map((input) =>
      limit(async () => {
        if ((await deps.store.head(input.key)) !== undefined) {
          undoneSigns += 1;
          if (!resuming)
            findings.problems.push(
              `${printable(input.key)} (an input of the run) exists again: a writer put a file at its key since the run, and restoring the input would replace it`,
            );
          return;
        }
        const problem = await restoreProblem(deps.store, entry, input);
        if (problem !== undefined)
          findings.problems.push(`input ${printable(input.key)} cannot be restored: ${problem}`);
        else findings.restores.push({ entry, input });
      }),
    ),
    ...entry.outputs.map((output) =>
      limit(async () => {
        const head = await deps.store.head(output.finalKey);
        if (head === undefined) {
          undoneSigns += 1;
          if (!resuming)
            findings.problems.push(
              `output ${printable(output.finalKey)} is gone: a later run compacted it or a writer removed it (undo that run first, if it was ours)`,
            );
          return;
        }
        if (!isPublishedOutput(head, output, settledAt)) {
          findings.problems.push(
            `output ${printable(output.finalKey)} was replaced since the run (now ${head.size} bytes written ${head.lastModified.toISOString()}; the run's was ${output.size} bytes): deleting it would lose the new rows`,
          );
          return;
        }
        findings.removals.push({ key: output.finalKey, etag: head.etag });
      }),
    ),
  ]);
  return { ...findings, undoneSigns };
}

/** Brings every absent input back at its key (never over a file a writer put there meanwhile). */
async function restoreInputs(deps: CommitDeps, restores: readonly Restore[]): Promise<void> {
  const limit = pLimit(deps.concurrency ?? 16);
  // Rebuilds first, each into its input's trash key (the work area, invisible to readers), from the published
  // outputs, which the checks found unchanged: a rebuild that fails leaves the table as it was.
  const byGroup = new Map<GroupJournalEntry, JournalInput[]>();
  for (const r of restores) {
    if (r.entry.retireMode !== 'delete-rebuild') continue;
    byGroup.set(r.entry, [...(byGroup.get(r.entry) ?? []), r.input]);
  }
  for (const [entry, inputs] of byGroup) {
    const fromPublished = {
      ...entry,
      outputs: entry.outputs.map((o) => ({ ...o, stagingKey: o.finalKey })),
    };
    await rebuildInputs(deps, fromPublished, inputs);
  }
  await Promise.all(
    restores.map(({ entry, input }) =>
      limit(async () => {
        try {
          if (entry.retireMode === 'delete-versioned') {
            await deps.store.copy(input.key, input.key, {
              ...(input.versionId === undefined ? {} : { sourceVersionId: input.versionId }),
            });
          } else {
            const bytes = await deps.store.get(trashKey(entry, input.key));
            await deps.store.put(input.key, bytes, { ifNoneMatch: '*' });
          }
        } catch (err) {
          if (err instanceof PreconditionFailedError) {
            throw new PreconditionFailedError(
              `${printable(input.key)} was written by someone else while the undo restored it: the undo stopped there. Inputs restored so far stay (the outputs too, so no row is missing; rows may be doubled): look at the key, then run the undo again to finish`,
            );
          }
          throw err;
        }
      }),
    ),
  );
  // The rebuilt copies were only the way back.
  await deleteAll(
    deps.store,
    [...byGroup].flatMap(([entry, inputs]) => inputs.map((i) => trashKey(entry, i.key))),
  );
}

/** Deletes the run's outputs, each only while it is still the one it published. */
async function removeOutputs(store: ObjectStore, removals: readonly Removal[]): Promise<void> {
  if (removals.length === 0) return;
  const result = await store.deleteMany(removals.map((r) => ({ key: r.key, ifMatch: r.etag })));
  if (result.errors.length > 0) {
    throw new PreconditionFailedError(
      `the inputs are back, but ${result.errors.length} output(s) could not be deleted (${result.errors
        .map((e) => `${printable(e.key)}: ${e.message}`)
        .join('; ')}): rows of those outputs are doubled until they go. Run the undo again to finish`,
    );
  }
}

/** Reverts a finished run's groups of a Hive-style table (see the file's head). */
async function undoRun(deps: CommitDeps, request: RunUndoRequest): Promise<RunUndoResult> {
  const found = await Promise.all(
    request.groups.map((g) =>
      inspectGroup(
        deps,
        g,
        request.resuming,
        request.settledAt?.get(`${g.runId}/${g.groupId}`) ?? g.updatedAt,
      ),
    ),
  );
  const problems = found.flatMap((f) => f.problems);
  const restores = found.flatMap((f) => f.restores);
  const removals = found.flatMap((f) => f.removals);
  const everything = request.groups.reduce((n, g) => n + g.inputs.length + g.outputs.length, 0);
  // Every input in place and every output gone: what this undo leaves (by an earlier undo whose record was lost).
  if (
    !request.resuming &&
    restores.length === 0 &&
    removals.length === 0 &&
    found.every((f) => f.undoneSigns === f.problems.length)
  ) {
    return { kind: 'already-undone', reason: 'every input is in place and every output is gone' };
  }
  if (problems.length > 0) {
    const sample = problems.slice(0, 5).join('; ');
    const more = problems.length > 5 ? `; and ${problems.length - 5} more` : '';
    return undoRefused(`nothing was changed: ${sample}${more}`);
  }
  const changes: UndoChange[] = [
    ...restores.map(({ entry, input }) => ({
      action: 'restore' as const,
      key: input.key,
      detail: describeSource(entry, input),
    })),
    ...removals.map((r) => ({ action: 'remove' as const, key: r.key, detail: 'an output of the run' })),
  ];
  const notes = [
    'inputs are restored before the outputs are deleted: a reader listing the table in between may see rows twice, never miss one',
    ...(request.resuming && changes.length < everything
      ? [
          `resuming an earlier undo: ${everything - changes.length} of its ${everything} changes were made already`,
        ]
      : []),
  ];
  if (request.dryRun) return { kind: 'undone', changes, notes };
  await restoreInputs(deps, restores);
  await removeOutputs(deps.store, removals);
  return { kind: 'undone', changes, notes };
}

/** The Hive-style format's undo of a finished run. */
export const hiveUndo: RunUndo = {
  summary:
    "each retired input comes back from what the run kept of it (its old object version on a versioned bucket, its trash copy, or, for a bin-pack's delete-rebuild, re-created from the outputs' rows: row-identical, not byte-identical), then the outputs are deleted (a reader listing in between may see rows twice, never miss one).",
  undoRun,
};
