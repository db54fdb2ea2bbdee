// The staging area of a run's groups and the small steps every format's commit shares: outputs are written there
// before a format's commit publishes them, so what a failed run left is found the same way whatever the format.
import type { GroupJournalEntry, Journal } from '../../ports/journal.js';
import type { ObjectStore } from '../../ports/object-store.js';
import { InvalidInputError } from '../errors.js';

/** Lists the keys under a run's staging prefix that a failed compaction may have left. */
export async function stagingLeftovers(store: ObjectStore, stagingPrefix: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const object of store.listAll(stagingPrefix)) keys.push(object.key);
  return keys;
}

/** The group's journal entry. @throws InvalidInputError when the group was never planned in this run. */
export async function requireEntry(
  journal: Journal,
  runId: string,
  groupId: string,
): Promise<GroupJournalEntry> {
  const entry = await journal.get(runId, groupId);
  if (!entry) {
    throw new InvalidInputError(
      `No journal entry for group ${groupId} of run ${runId}: the group was never planned in this run; check the run id`,
    );
  }
  return entry;
}

/** Deletes `keys` (missing ones count as deleted). @throws Error naming every key that could not be deleted. */
export async function deleteAll(store: ObjectStore, keys: readonly string[]): Promise<void> {
  if (keys.length === 0) return;
  const result = await store.deleteMany(keys.map((key) => ({ key })));
  if (result.errors.length > 0) {
    throw new Error(
      `Could not delete ${result.errors.length} object(s): ${result.errors
        .map((e) => `${e.key}: ${e.code === undefined ? '' : `${e.code}: `}${e.message}`)
        .join('; ')}. Retry; the step is idempotent.`,
    );
  }
}
