// The CLI's refusal of locations inside another format's table before anything is written: the folders above the
// location are checked (for a local folder, the real parent folders too, which its store cannot see).

import { dirname } from 'node:path';
import { LocalObjectStore } from '../adapters/local-object-store.js';
import type { OpenedStore } from '../adapters/open-store.js';
import { UnsupportedTableFormatError } from '../core/errors.js';
import {
  type ForeignTable,
  ForeignTableProbe,
  locationOf,
  refuseForeignAround,
} from '../core/formats/foreign-tables.js';

/**
 * Refuses the opened location when it lies inside (or, with `includeLocation`, is) a table whose log or metadata owns it:
 * every directory from the store root down to it, and for a local folder every parent folder up to `/`
 * (outermost first, so the message names the table root, not a folder inside it). What lies below the
 * location is the caller's to check, with the listing it takes anyway (`refuseForeignAmong`).
 * @throws UnsupportedTableFormatError
 */
export async function refuseEnclosingForeignTable(
  opened: OpenedStore,
  options: { readonly includeLocation: boolean },
): Promise<void> {
  if (opened.store instanceof LocalObjectStore) {
    for (const folder of parentFolders(opened.store.root)) {
      const parent = new LocalObjectStore(folder);
      const found = await probeFolder(parent);
      if (found !== undefined) {
        throw new UnsupportedTableFormatError(
          found.format,
          locationOf(parent, found.root),
          locationOf(parent, found.evidenceKey),
          locationOf(opened.store, opened.prefix),
        );
      }
    }
  }
  await refuseForeignAround(opened.store, opened.prefix, options);
}

/** `/a/b/c` → `['/', '/a', '/a/b']`: the folders above `folder`, outermost first. */
function parentFolders(folder: string): string[] {
  const parents: string[] = [];
  for (let dir = dirname(folder); ; dir = dirname(dir)) {
    parents.unshift(dir);
    if (dirname(dir) === dir) return parents;
  }
}

/** A parent folder this user may not read cannot be checked: it is skipped rather than blocking every folder below it. */
async function probeFolder(store: LocalObjectStore): Promise<ForeignTable | undefined> {
  try {
    return await new ForeignTableProbe(store).at('');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EACCES' || code === 'EPERM') return undefined;
    throw err;
  }
}
