// Test helper: a folder as a run left it some time ago. Whether a run of ours is dead is judged by the object store's
// own times (a heartbeat's modification time against a probe's: abandoned-plans.ts `storeNow`), never by a run's
// clock, so a test makes a killed run's plan stale by ageing the files it wrote, as time would.
import { readdir, stat, utimes } from 'node:fs/promises';
import { join } from 'node:path';

/** Sets the modification (and access) time of every file under `dir` back by `ms`. */
export async function ageFiles(dir: string, ms: number): Promise<void> {
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const file = join(entry.parentPath, entry.name);
    const then = new Date((await stat(file)).mtimeMs - ms);
    await utimes(file, then, then);
  }
}
