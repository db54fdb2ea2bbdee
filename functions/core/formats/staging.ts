// The staging area of a run's groups, shared by every format: outputs are written there before a format's
// commit publishes them, so what a failed run left is found the same way whatever the table's format.
import type { ObjectStore } from '../../ports/object-store.js';

/** Lists the keys under a run's staging prefix that a failed compaction may have left. */
export async function stagingLeftovers(store: ObjectStore, stagingPrefix: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const object of store.listAll(stagingPrefix)) keys.push(object.key);
  return keys;
}
