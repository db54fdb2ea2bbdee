// A folder's state as comparable lines: every file below it (recursively) with its size and modification
// time (and, on request, a hash of its bytes), so "nothing changed" can be asserted by equality before and after.
import { createHash } from 'node:crypto';
import { readdir, readFile, stat } from 'node:fs/promises';
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

/**
 * `<relative path> <size> <mtimeMs> <sha256 of the bytes>` of every file under `dir`, and `<relative path>/` of
 * every folder, sorted: every byte counts, and so does a folder created and left behind empty.
 */
export async function folderContentSnapshot(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  const files = entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
  const folders = entries
    .filter((e) => e.isDirectory())
    .map((e) => `${relative(dir, join(e.parentPath, e.name))}/`);
  const lines = await Promise.all(
    files.map(async (f) => {
      const s = await stat(f);
      const sha = createHash('sha256')
        .update(await readFile(f))
        .digest('hex');
      return `${relative(dir, f)} ${s.size} ${s.mtimeMs} ${sha}`;
    }),
  );
  return [...lines, ...folders].sort();
}
