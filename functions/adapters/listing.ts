// S3 semantics shared by the non-S3 stores: ListObjectsV2 paging (UTF-8 byte order, prefix, start-after,
// delimiter grouping, opaque tokens) and S3's range errors, so every store pages and fails like S3.

import { InvalidInputError } from '../core/errors.js';
import type { ObjectInfo } from '../ports/object-store.js';

/** S3 never returns more than this many entries (objects + common prefixes) in one page. */
export const MAX_KEYS_PER_PAGE = 1000;

const TOKEN_VERSION = 'v1:';

/**
 * Orders keys the way S3 does: by their UTF-8 bytes. Plain `<` on JS strings compares UTF-16 code
 * units, which disagrees with byte order for characters beyond U+FFFF versus U+E000–U+FFFF; a
 * listing that pages by "greater than the last key" must use one order everywhere or it skips keys.
 */
export function compareKeys(a: string, b: string): number {
  if (a === b) return 0;
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** Sorts in place by {@link compareKeys} and returns the same array. */
export function sortByKey<T extends { readonly key: string }>(items: T[]): T[] {
  const encoded = new Map<T, Buffer>();
  for (const item of items) encoded.set(item, Buffer.from(item.key, 'utf8'));
  return items.sort((x, y) => Buffer.compare(encoded.get(x) as Buffer, encoded.get(y) as Buffer));
}

/** Makes the opaque continuation token that resumes a listing after `lastName` (a key or a common prefix). */
export function encodeListToken(lastName: string): string {
  return Buffer.from(TOKEN_VERSION + lastName, 'utf8').toString('base64url');
}

/** Reads a token made by {@link encodeListToken}; anything else is an InvalidInputError. */
export function decodeListToken(token: string): string {
  const text = Buffer.from(token, 'base64url').toString('utf8');
  if (!text.startsWith(TOKEN_VERSION)) {
    throw new InvalidInputError(
      `Invalid continuation token "${token}": pass the nextToken of the previous page unchanged, or omit it to start over`,
    );
  }
  return text.slice(TOKEN_VERSION.length);
}

export interface PageRequest {
  readonly prefix: string;
  readonly delimiter?: string;
  /** Continuation token of the previous page. */
  readonly token?: string;
  /** Only keys strictly after this one (S3 `StartAfter`); ignored when a token is given. */
  readonly startAfter?: string;
  readonly maxKeys?: number;
}

export interface Page<T> {
  readonly objects: T[];
  readonly commonPrefixes: string[];
  readonly nextToken?: string;
}

/**
 * Cuts one page out of `sorted` (ascending by {@link compareKeys}). Objects and common prefixes
 * both count towards `maxKeys`, as on S3, and a common prefix is reported once across all pages
 * (the token remembers it), unlike s3rver, which repeats it on every page.
 */
export function listPage<T extends { readonly key: string }>(
  sorted: readonly T[],
  request: PageRequest,
): Page<T> {
  const { prefix, delimiter } = request;
  const maxKeys = Math.min(request.maxKeys ?? MAX_KEYS_PER_PAGE, MAX_KEYS_PER_PAGE);
  if (!Number.isInteger(maxKeys) || maxKeys < 0) {
    throw new InvalidInputError(
      `maxKeys must be an integer between 0 and ${MAX_KEYS_PER_PAGE}, got ${maxKeys}`,
    );
  }
  const objects: T[] = [];
  const commonPrefixes: string[] = [];
  if (maxKeys === 0) return { objects, commonPrefixes };

  const marker = request.token !== undefined ? decodeListToken(request.token) : request.startAfter;
  const floor = marker !== undefined && compareKeys(marker, prefix) > 0 ? marker : prefix;
  const markerBytes = marker === undefined ? undefined : Buffer.from(marker, 'utf8');
  let index = firstIndexAtOrAfter(sorted, floor);
  let count = 0;
  let lastName: string | undefined;
  for (; index < sorted.length; index++) {
    const item = sorted[index] as T;
    if (!item.key.startsWith(prefix)) {
      if (compareKeys(item.key, prefix) > 0) break;
      continue;
    }
    if (markerBytes !== undefined && Buffer.compare(Buffer.from(item.key, 'utf8'), markerBytes) <= 0)
      continue;
    const cut = delimiter ? item.key.indexOf(delimiter, prefix.length) : -1;
    const name = cut === -1 ? item.key : item.key.slice(0, cut + (delimiter as string).length);
    if (cut !== -1) {
      // Keys under a prefix the previous page ended on, or this page already reported, collapse into it.
      if (name === lastName || (marker !== undefined && compareKeys(name, marker) <= 0)) continue;
    }
    if (count === maxKeys) {
      return { objects, commonPrefixes, nextToken: encodeListToken(lastName as string) };
    }
    if (cut === -1) objects.push(item);
    else commonPrefixes.push(name);
    lastName = name;
    count++;
  }
  return { objects, commonPrefixes };
}

/** Binary search: first index whose key is >= `key` in byte order. */
function firstIndexAtOrAfter<T extends { readonly key: string }>(sorted: readonly T[], key: string): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (compareKeys((sorted[mid] as T).key, key) < 0) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** What S3 answers (416 InvalidRange) when a range starts at or past the end of the object. */
export function unsatisfiableRange(key: string, start: number, size: number): InvalidInputError {
  return new InvalidInputError(
    `Byte range starting at ${start} is not satisfiable for ${key} (${size} bytes): take sizes from head() or the listing`,
  );
}

/** Every object of a paginated listing, page after page: the `listAll` of every adapter. */
export async function* followPages(
  listPage: (token: string | undefined) => Promise<{ objects: readonly ObjectInfo[]; nextToken?: string }>,
): AsyncIterable<ObjectInfo> {
  let token: string | undefined;
  do {
    const page = await listPage(token);
    yield* page.objects;
    token = page.nextToken;
  } while (token !== undefined);
}

/** Refuses a range that S3 would misread (the port reads explicit ranges only, never suffixes). */
export function assertByteRange(key: string, start: number, endInclusive: number): void {
  if (
    !Number.isSafeInteger(start) ||
    !Number.isSafeInteger(endInclusive) ||
    start < 0 ||
    endInclusive < start
  ) {
    throw new InvalidInputError(
      `Invalid byte range ${start}-${endInclusive} for ${key}: pass 0 <= start <= endInclusive (both integers)`,
    );
  }
}
