// A copy of a vendored Iceberg table whose metadata files are renamed as a metastore catalog's writer names them
// (Glue, REST catalogs, Hive and S3 Tables: `00000-<uuid>.metadata.json`, no `version-hint.text`): the table such a
// catalog manages, as the path catalog would find it on storage.
import { randomUUID } from 'node:crypto';
import { cp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ICEBERG_FIXTURES } from './fixtures.js';

/**
 * Copies `fixture` to `<into>/<root>` and renames `v<N>.metadata.json` to `<N-1 as %05d>-<uuid>.metadata.json`
 * (a catalog's first file is 00000), the metadata logs pointing at the new names, and removes
 * `version-hint.text` (metastore tables have none). Returns the copy's folder.
 */
export async function catalogNamedCopy(fixture: string, into: string, root = 'events'): Promise<string> {
  const dir = join(into, root);
  await cp(join(ICEBERG_FIXTURES, fixture), dir, { recursive: true });
  const metadata = join(dir, 'metadata');
  const names = (await readdir(metadata)).filter((n) => /^v\d+\.metadata\.json$/.test(n));
  const renamed = new Map(
    names.map((n) => [
      n,
      `${String(Number(/^v(\d+)/.exec(n)?.[1]) - 1).padStart(5, '0')}-${randomUUID()}.metadata.json`,
    ]),
  );
  for (const [from, to] of renamed) {
    let text = await readFile(join(metadata, from), 'utf8');
    for (const [a, b] of renamed) text = text.split(`/metadata/${a}`).join(`/metadata/${b}`);
    await writeFile(join(metadata, to), text);
    await rm(join(metadata, from));
  }
  await rm(join(metadata, 'version-hint.text'), { force: true });
  return dir;
}
