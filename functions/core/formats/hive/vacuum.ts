// Hive-style Parquet's vacuum rules: which retired input versions and trash copies of its journal commit may go
// after the retention, which writer scratch is debris, and how they are removed without touching a live object.
//
// Why these belong to the format: delete mode and trash mode are how the Hive commit retires inputs (see
// commit.ts); a Delta table's vacuum instead deletes what no version within the retention references.
import type { GroupJournalEntry } from '../../../ports/journal.js';
import type { DeleteRef, ObjectInfo, ObjectStore } from '../../../ports/object-store.js';
import { hoursAgo, iso, TERMINAL_RETIRED } from '../../maintenance/ages.js';
import type {
  RemovableObject,
  RemovalOutcome,
  RetiredVersion,
  VacuumDecision,
  VacuumRules,
} from '../table-format.js';

/**
 * Which of a run's retired input versions are past the retention. Only `delete-versioned` groups that
 * reached `retired`/`done` count: before that the inputs are still live or the commit may undo.
 */
export function retiredVersionsDue(
  entry: GroupJournalEntry,
  now: number,
  retentionMs: number,
): {
  due: RetiredVersion[];
  kept: { key: string; reason: string }[];
} {
  if (entry.retireMode !== 'delete-versioned' || !TERMINAL_RETIRED.includes(entry.state)) {
    return { due: [], kept: [] };
  }
  if (entry.retiredAt === undefined) return { due: [], kept: [] };
  if (now - entry.retiredAt < retentionMs) {
    return {
      due: [],
      kept: entry.inputs.map((i) => ({
        key: i.key,
        reason: `retired ${hoursAgo(now, entry.retiredAt as number)} by run ${entry.runId}: inside the retention`,
      })),
    };
  }
  const due: RetiredVersion[] = [];
  const kept: { key: string; reason: string }[] = [];
  for (const input of entry.inputs) {
    if (input.versionId === undefined) {
      kept.push({
        key: input.key,
        reason: 'the journal recorded no version id, so no version can be named safely',
      });
      continue;
    }
    due.push({
      key: input.key,
      versionId: input.versionId,
      etag: input.etag,
      size: input.size,
      reason: `version ${input.versionId} retired by run ${entry.runId} at ${iso(entry.retiredAt)} (${hoursAgo(now, entry.retiredAt)})`,
    });
  }
  return { due, kept };
}

/** Decides over one trash copy, given the journal entry of the group that made it (if any is left). */
export function decideTrash(
  object: Pick<ObjectInfo, 'lastModified'>,
  entry: GroupJournalEntry | undefined,
  now: number,
  retentionMs: number,
): VacuumDecision {
  if (entry === undefined) {
    const at = object.lastModified.getTime();
    return now - at >= retentionMs
      ? {
          action: 'delete',
          reason: `trash copy without a journal entry (expired or never written), copied ${hoursAgo(now, at)}`,
        }
      : {
          action: 'keep',
          reason: `trash copy without a journal entry, copied ${hoursAgo(now, at)}: inside the retention`,
        };
  }
  if (TERMINAL_RETIRED.includes(entry.state) && entry.retiredAt !== undefined) {
    return now - entry.retiredAt >= retentionMs
      ? {
          action: 'delete',
          reason: `input retired by run ${entry.runId} at ${iso(entry.retiredAt)} (${hoursAgo(now, entry.retiredAt)})`,
        }
      : {
          action: 'keep',
          reason: `retired ${hoursAgo(now, entry.retiredAt)} by run ${entry.runId}: inside the retention`,
        };
  }
  if (entry.state === 'aborted' && entry.undo === 'pending') {
    return {
      action: 'keep',
      reason: `run ${entry.runId} is undoing a partial publish: it restores inputs from these copies`,
    };
  }
  if (entry.state === 'aborted') {
    const at = object.lastModified.getTime();
    // The original is in place (never removed, or restored by the undo): the copy is redundant.
    return now - at >= retentionMs
      ? {
          action: 'delete',
          reason: `copy left by aborted run ${entry.runId}; the original was kept or restored`,
        }
      : { action: 'keep', reason: `copy left by aborted run ${entry.runId}: inside the retention` };
  }
  return {
    action: 'keep',
    reason: `run ${entry.runId} is mid-commit (${entry.state}): its commit or undo needs this copy`,
  };
}

/**
 * Writer scratch below a table root: anything under a `_temporary/` directory (Hadoop/Spark output
 * committers) or a `.spark-staging-*` directory (Spark dynamic partition overwrite). The Delta log is never debris.
 */
export function isWriterDebris(relativeKey: string): boolean {
  const dirs = relativeKey.split('/').slice(0, -1);
  if (dirs.includes('_delta_log')) return false;
  return dirs.some((d) => d === '_temporary' || d.startsWith('.spark-staging-'));
}

/** The folder (relative, '' or ending with `/`) holding a debris key's first scratch directory. */
export function debrisOwner(relativeKey: string): string {
  const dirs = relativeKey.split('/').slice(0, -1);
  const scratch = dirs.findIndex((d) => d === '_temporary' || d.startsWith('.spark-staging-'));
  return scratch <= 0 ? '' : `${dirs.slice(0, scratch).join('/')}/`;
}

/**
 * Why a retired version must stay after all: it is the key's current (live) version whatever the journal says,
 * or the bucket reports no version ids (an unversioned bucket has no old versions; a delete could only hit the
 * live object). Undefined when it may be deleted by its version id.
 */
export function spareRetiredVersion(
  candidate: { readonly versionId?: string | undefined; readonly etag?: string | undefined },
  current: Pick<ObjectInfo, 'versionId' | 'etag'> | undefined,
): string | undefined {
  const live =
    current !== undefined &&
    (current.versionId === candidate.versionId ||
      (current.versionId === undefined && current.etag === candidate.etag));
  if (live) {
    return `version ${candidate.versionId} is the current (live) version, whatever the journal says: never deleted`;
  }
  if (current !== undefined && current.versionId === undefined) {
    return 'the bucket reports no version ids (not versioned): nothing to delete by version';
  }
  return undefined;
}

/**
 * Deletes vacuum's candidates in one batched request: a retired version by its version id, any other object
 * only while it still has the ETag it was listed with (one that changed since is reported, not deleted).
 */
export async function removeCandidates(
  store: ObjectStore,
  candidates: readonly RemovableObject[],
): Promise<RemovalOutcome> {
  const changed = new Set<string>();
  const failed = new Map<string, string>();
  if (candidates.length === 0) return { changed, failed };
  const refs: DeleteRef[] = candidates.map((c) =>
    c.versionId !== undefined
      ? { key: c.key, versionId: c.versionId }
      : c.etag === undefined
        ? { key: c.key }
        : { key: c.key, ifMatch: c.etag },
  );
  const outcome = await store.deleteMany(refs);
  for (const error of outcome.errors) {
    if (error.code === 'PreconditionFailed') changed.add(error.key);
    else failed.set(error.key, error.message);
  }
  return { changed, failed };
}

/** Hive-style Parquet's answers to vacuum (see TableFormat.vacuum). */
export const hiveVacuumRules: VacuumRules = {
  retiresByVersion: true,
  retiredInputs: retiredVersionsDue,
  trashCopy: decideTrash,
  writerDebris: (relativeKey) =>
    isWriterDebris(relativeKey) ? { owner: debrisOwner(relativeKey) } : undefined,
  spareRetiredVersion,
  remove: removeCandidates,
};
