// A folder's state as comparable lines: every file below it (recursively) with its size and modification
// time, so "nothing changed" can be asserted by equality before and after.
import { readdir, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';

/** `<relative path> <size> <mtimeMs>` of every file under `dir`, sorted. */
export async function folderSnapshot(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  const files = entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
  const lines = await Promise.all(
    files.map(async (f) => {
      const s = await stat(f);
      return `${relative(dir, f)} ${s.size} ${s.mtimeMs}`;
    }),
  );
  return lines.sort();
}
