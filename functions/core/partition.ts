// Maps object keys to partitions and says which objects are data: a key decodes to exactly one
// partition (its directory), Hive values are unescaped the way Spark escapes them, and non-data never passes.
import { InvalidInputError } from './errors.js';
import { keyRefusal } from './keys.js';

/** The value Hive and Spark write for a null partition value. */
export const HIVE_DEFAULT_PARTITION = '__HIVE_DEFAULT_PARTITION__';

/** One `name=value` directory segment, unescaped. `value` is null for `__HIVE_DEFAULT_PARTITION__`. */
export interface PartitionValue {
  readonly name: string;
  readonly value: string | null;
}

/** Where a key sits in its table. */
export interface ParsedKey {
  /** The table root without trailing slash ('' for a table at the bucket root). */
  readonly tableRoot: string;
  /**
   * The directory of the file relative to the root, raw (still escaped), without leading or trailing
   * slash; '' for a file directly under the root. This is the partition's identity: two keys are in the
   * same partition exactly when their partitionPath is equal.
   */
  readonly partitionPath: string;
  /** The Hive `name=value` segments of partitionPath, in path order, unescaped. */
  readonly values: readonly PartitionValue[];
  /** The last path segment (the object's name), raw. */
  readonly fileName: string;
}

/**
 * Decodes an object key as S3 event notifications deliver it: URL-encoded with `+` for space.
 * `+` must be replaced before percent-decoding, because a literal `+` in a key arrives as `%2B`.
 * @throws InvalidInputError when the key holds a malformed %-sequence (not a real S3 event).
 */
export function decodeS3EventKey(raw: string): string {
  try {
    return decodeURIComponent(raw.replace(/\+/g, ' '));
  } catch (cause) {
    throw new InvalidInputError(
      `S3 event key "${raw}" is not valid URL encoding (${String(cause)}); pass the key exactly as the S3 notification carries it`,
    );
  }
}

const HEX_PAIR = /^[0-9A-Fa-f]{2}$/;

/**
 * Reverses Hive/Spark path escaping (`ExternalCatalogUtils.escapePathName`): `%XX` becomes the character.
 * Runs of `%XX` are decoded as UTF-8 first, so writers that percent-encode UTF-8 (pyarrow's `uri`
 * segment encoding) round-trip too; a run that is not valid UTF-8 falls back to one character per
 * byte, which is what Spark's `unescapePathName` does. A `%` not followed by two hex digits stays
 * literal, as in Spark. Unescaped Unicode passes through untouched.
 */
export function unescapePathName(segment: string): string {
  if (!segment.includes('%')) return segment;
  let out = '';
  let i = 0;
  while (i < segment.length) {
    const ch = segment[i] as string;
    if (ch !== '%' || !HEX_PAIR.test(segment.slice(i + 1, i + 3))) {
      out += ch;
      i += 1;
      continue;
    }
    const bytes: number[] = [];
    while (segment[i] === '%' && HEX_PAIR.test(segment.slice(i + 1, i + 3))) {
      bytes.push(Number.parseInt(segment.slice(i + 1, i + 3), 16));
      i += 3;
    }
    out += decodeByteRun(bytes);
  }
  return out;
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

function decodeByteRun(bytes: readonly number[]): string {
  try {
    return strictUtf8.decode(Uint8Array.from(bytes));
  } catch {
    return String.fromCharCode(...bytes);
  }
}

/** Splits a directory segment into a Hive pair: on the FIRST `=`, with a non-empty name. */
function hiveSegment(segment: string): PartitionValue | undefined {
  const eq = segment.indexOf('=');
  if (eq <= 0) return undefined;
  const rawValue = segment.slice(eq + 1);
  return {
    name: unescapePathName(segment.slice(0, eq)),
    value: rawValue === HIVE_DEFAULT_PARTITION ? null : unescapePathName(rawValue),
  };
}

/** Strips trailing slashes, so `events/` and `events` name the same root. */
export function normalizeRoot(tableRoot: string): string {
  return tableRoot.replace(/\/+$/, '');
}

/** The part of `key` below `tableRoot`, or undefined when the key is not under it (segment-aware). */
export function relativeToRoot(key: string, tableRoot: string): string | undefined {
  const root = normalizeRoot(tableRoot);
  if (root === '') return key;
  return key.startsWith(`${root}/`) ? key.slice(root.length + 1) : undefined;
}

/**
 * Places a key in its table: partition directory, Hive values and file name.
 *
 * A partition is a directory. Segments between the root and the file that are not `name=value`
 * (e.g. Firehose's `2024/01/15/`) are kept in `partitionPath` — files in different directories are
 * never merged, because a reader expects each file where it was written — but contribute no
 * `values`. Hive pairs split on the first `=`, so values may contain `=`; `__HIVE_DEFAULT_PARTITION__`
 * becomes null and an empty value stays ''.
 *
 * @returns undefined when the key is not under `tableRoot` (matched per path segment, so root
 * `events` does not claim `events2/...`) or names no file (the root itself, or a `dir/` marker).
 */
export function parsePartition(key: string, tableRoot: string): ParsedKey | undefined {
  const relative = relativeToRoot(key, tableRoot);
  if (relative === undefined || relative === '' || relative.endsWith('/')) return undefined;
  const slash = relative.lastIndexOf('/');
  const partitionPath = slash < 0 ? '' : relative.slice(0, slash);
  const fileName = relative.slice(slash + 1);
  const values: PartitionValue[] = [];
  if (partitionPath !== '') {
    for (const segment of partitionPath.split('/')) {
      const pair = hiveSegment(segment);
      if (pair) values.push(pair);
    }
  }
  return { tableRoot: normalizeRoot(tableRoot), partitionPath, values, fileName };
}

/** The four bytes every Parquet file starts (and ends) with. */
const PARQUET_MAGIC = [0x50, 0x41, 0x52, 0x31] as const; // "PAR1"

/** True when `bytes` starts with the Parquet magic `PAR1`. */
export function isParquetMagic(bytes: Uint8Array): boolean {
  return bytes.length >= 4 && PARQUET_MAGIC.every((b, i) => bytes[i] === b);
}

/**
 * The smallest possible Parquet file: magic + footer length + magic (a real footer makes it larger).
 * Anything shorter cannot be Parquet, so it is refused without a read.
 */
export const MIN_PARQUET_BYTES = 12;

/**
 * Extensions that are certainly not Parquet. A `.parquet` suffix is NOT required (Spark writes
 * `.snappy.parquet`, Hive and many writers no suffix at all; the magic bytes decide), but a name that
 * says it is something else is refused without spending a GET on its first bytes.
 */
const NON_PARQUET_EXTENSIONS = new Set([
  'json',
  'jsonl',
  'ndjson',
  'csv',
  'tsv',
  'avro',
  'orc',
  'txt',
  'log',
  'tmp',
  'inprogress',
  'gz',
  'zip',
  'crc',
]);

export type ObjectClassification =
  | { readonly kind: 'data' }
  | { readonly kind: 'ignored'; readonly reason: string };

/** What `classifyObject` needs to know about an object. */
export interface ClassifyInput {
  readonly key: string;
  readonly size: number;
  /** The object's first bytes, when they were read; without them the magic check is left to the reader. */
  readonly head?: Uint8Array;
  /**
   * The table root. When given, only segments below it are checked for hidden names, so a table may
   * live under e.g. `_landing/`; without it every directory segment of the key is checked.
   */
  readonly tableRoot?: string;
}

/**
 * Says whether an object is a compaction candidate. Never candidates: a key the confinement rule refuses,
 * `_SUCCESS`, `*.crc`,
 * anything under `_temporary/` or `_delta_log/`, hidden names, zero-byte objects, objects too small
 * to be Parquet, known non-Parquet extensions, and — when `head` is given — anything not starting
 * with `PAR1`.
 *
 * Hidden means: the file name starts with `_` or `.`, or a directory segment starts with `_` or `.`
 * and is not a Hive `name=value` pair. Spark never writes a partition column starting with `_`, but a
 * user table partitioned by `_col` must still compact, while `.hive-staging_*` or `_checkpoint` dirs
 * (no `=`) are writer scratch.
 */
export function classifyObject(input: ClassifyInput): ObjectClassification {
  const { key, size, head } = input;
  if (key.endsWith('/')) return ignored('directory marker (key ends with /)');
  // The confinement rule (keys.ts): a listed key that a lenient server or a decoding reader resolves elsewhere, or
  // that holds control characters, is never read, rewritten or moved.
  const refused = keyRefusal(input.tableRoot ?? '', key);
  if (refused !== undefined) return ignored(`refused key: it ${refused}`);
  const relative = (input.tableRoot === undefined ? undefined : relativeToRoot(key, input.tableRoot)) ?? key;
  const segments = relative.split('/');
  const fileName = segments.pop() ?? '';
  if (fileName === '_SUCCESS') return ignored('writer success marker _SUCCESS');
  if (segments.includes('_temporary')) return ignored('writer scratch under _temporary/');
  if (segments.includes('_delta_log')) return ignored("a table format's transaction log under _delta_log/");
  if (fileName.endsWith('.crc')) return ignored('checksum file (*.crc)');
  const hiddenDir = segments.find((s) => (s.startsWith('_') || s.startsWith('.')) && !hiveSegment(s));
  if (hiddenDir !== undefined) return ignored(`under hidden directory ${hiddenDir}/`);
  if (fileName.startsWith('_') || fileName.startsWith('.'))
    return ignored('hidden file (name starts with _ or .)');
  const extension = fileName.includes('.') ? (fileName.split('.').pop() ?? '').toLowerCase() : '';
  if (NON_PARQUET_EXTENSIONS.has(extension)) return ignored(`not Parquet (.${extension} file)`);
  if (size === 0) return ignored('zero-byte object');
  if (size < MIN_PARQUET_BYTES) return ignored(`${size} bytes is too small to be Parquet`);
  if (head !== undefined && !isParquetMagic(head)) return ignored('not Parquet (first bytes are not PAR1)');
  return { kind: 'data' };
}

function ignored(reason: string): ObjectClassification {
  return { kind: 'ignored', reason };
}
