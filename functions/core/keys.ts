// The one key-confinement rule: a key derived from untrusted metadata or a listing is used (read, written, deleted,
// moved) only when it lies under its table root, spelled so that no store or reader could resolve it elsewhere.
//
// Why a rule of spelling and not only of prefix: AWS S3 treats keys as literal strings, so `t/../other/x` is a key
// under `t/` there, but S3-compatible servers that map keys onto a filesystem (s3rver, which the local cloud runs)
// resolve the `..` and act on `other/x`; Hadoop-based readers percent-decode and normalise paths, so a key holding
// `..%2F..%2F` may be another table's file to them. A key is therefore refused when any of its segments below the
// root is empty, `.` or `..`, when it climbs above the root once percent-decoded or split at backslashes (a decoding
// reader, a Windows-normalising server), when it is absolute, holds a control character, or does not start with the
// root. The same module says how partition values become path segments (Hive's escaping, and the Java URL encoding of partition paths) and how keys
// are shown on a terminal.
import { CompactorError } from './errors.js';

/** `a/b/`, `a/b` → `a/b`; '' stays '' (a bucket-root or folder-root table). */
export function normalizeKeyRoot(root: string): string {
  return root.replace(/\/+$/, '');
}

/** Control characters (C0, DEL, C1): never part of a key lake-compactor acts on, never printed raw. */
const CONTROL = /\p{Cc}/u;

/** `%25` (once more per round), `%2e` `.`, `%2f` `/`, `%5c` `\`: what a decoding reader turns into a traversal. */
const ENCODED_TRAVERSAL = /%(25|2e|2f|5c)/gi;
/** Rounds of decoding looked through (`%252e` is two): more nesting than this is refused by itself. */
const DECODE_ROUNDS = 4;

/** `s` with `%2e`, `%2f`, `%5c` and `%25` decoded, as often as they keep decoding (at most DECODE_ROUNDS). */
function decodeTraversal(s: string): string | undefined {
  let current = s;
  for (let round = 0; round < DECODE_ROUNDS; round++) {
    const next = current.replace(ENCODED_TRAVERSAL, (m) =>
      String.fromCharCode(Number.parseInt(m.slice(1), 16)),
    );
    if (next === current) return current;
    current = next;
  }
  return current.match(ENCODED_TRAVERSAL) === null ? current : undefined;
}

/**
 * Whether `below` (a key's part below its root) climbs above the root when read the way a lenient server or a
 * decoding reader reads it: percent-decoded, a backslash taken as a separator, dot segments resolved. Undefined when it
 * stays below; else the reason.
 */
function climbsOut(below: string): string | undefined {
  const decoded = decodeTraversal(below);
  if (decoded === undefined) return `is percent-encoded more than ${DECODE_ROUNDS} times over`;
  if (decoded !== below && /^[/\\]/.test(decoded))
    return `is an absolute path once percent-decoded ("${decoded}")`;
  let depth = 0;
  for (const piece of decoded.split(/[/\\]/)) {
    if (piece === '..') depth -= 1;
    else if (piece !== '.' && piece !== '') depth += 1;
    if (depth < 0)
      return decoded === below
        ? 'climbs out of the table root through a ".." after a backslash'
        : `climbs out of the table root once percent-decoded ("${decoded}")`;
  }
  return depth < 1 ? 'names the table root itself once its dot segments are resolved' : undefined;
}

/**
 * Why `key` may not be used as an object of the table rooted at `root` ('' for a bucket- or folder-root table), or
 * undefined when it may. Pure; the reasons read after the key ("… has a ".." segment").
 *
 * Refused: an empty key, a control character anywhere, an absolute path, a key not under `root/`, and below the
 * root an empty, `.` or `..` segment (never written by a well-behaved writer; resolved by lenient servers) or a
 * segment that, percent-decoded or split at backslashes, climbs above the root. A partition value holding an escaped
 * `/../` that stays below the root (`v=..%2Fx`) is a name like any other and is accepted.
 */
export function keyRefusal(root: string, key: string): string | undefined {
  const base = normalizeKeyRoot(root);
  if (key === '') return 'is empty';
  if (CONTROL.test(key)) return 'contains control characters';
  if (key.startsWith('/') || key.startsWith('\\')) return 'is an absolute path';
  const prefix = base === '' ? '' : `${base}/`;
  if (!key.startsWith(prefix)) return `is outside the table root ${base}/`;
  const below = key.slice(prefix.length);
  if (below === '') return `names the table root ${base}/ itself, not a file in it`;
  for (const segment of below.split('/')) {
    if (segment === '') return 'has an empty path segment (a "//" or a trailing "/")';
    if (segment === '.' || segment === '..') return `has a "${segment}" segment`;
  }
  return climbsOut(below);
}

/** How a listed key the rule refuses is reported among what maintenance keeps (`refused: the key …; …`). */
export function refusedKeyReason(refusal: string, advice: string): string {
  return `${REFUSED_KEY} the key ${refusal}; ${advice}`;
}
const REFUSED_KEY = 'refused:';

/** Whether a kept object's reason is {@link refusedKeyReason}'s: a listed key the rule refused, shown by name. */
export function isRefusedKeyReason(reason: string): boolean {
  return reason.startsWith(`${REFUSED_KEY} the key `);
}

/** A key built below a root, or why it may not be. */
export type RootedKey = { readonly key: string } | { readonly refused: string };

/**
 * The key of `relative` (a path as metadata names it, already decoded once) below `root`, checked by
 * {@link keyRefusal}: the one way a format turns a metadata path into a key.
 */
export function keyUnderRoot(root: string, relative: string): RootedKey {
  if (relative.startsWith('/') || relative.startsWith('\\')) return { refused: 'is an absolute path' };
  const base = normalizeKeyRoot(root);
  const key = base === '' ? relative : `${base}/${relative}`;
  const refused = keyRefusal(base, key);
  return refused === undefined ? { key } : { refused };
}

/**
 * A table's metadata names a file that leaves the table root: the table is refused before any of its data files is
 * read and before anything is written or deleted. Never retried: the same metadata names the same path; only its
 * owner can repair it (with the table's own engine), or a writer that breaks the rule must be fixed.
 */
export class KeyOutsideTableError extends CompactorError {
  constructor(
    /** How messages name the table (its location). */
    readonly table: string,
    /** The path (or key) as the metadata names it. */
    readonly path: string,
    /** Why it is refused, as {@link keyRefusal} words it. */
    readonly reason: string,
    /** What in the metadata names it (`a log add action`, `a manifest`, …). */
    readonly source: string,
  ) {
    super(
      `Table ${printable(table)}: ${source} names the file "${printable(path)}", which ${reason}: every file of a table must lie under its root. The table was refused: none of its data files was read, nothing was written or deleted. The metadata was written by a broken or hostile writer; repair it with the table's own engine (remove or restore that entry), then run again`,
    );
  }
}

/**
 * Spark's `ExternalCatalogUtils.escapePathName`, the Hive-style escaping of partition names and values in a path
 * segment (log-based tables' writers name their partition directories with it): control characters and the characters of
 * {@link SPARK_ESCAPED} (quote, hash, percent, apostrophe, star, slash, colon, equals, question mark, backslash,
 * braces and brackets, caret) become `%XX`.
 */
export function escapePathName(s: string): string {
  let out = '';
  for (const ch of s) {
    const code = ch.codePointAt(0) ?? 0;
    out +=
      code < 0x20 || code === 0x7f || SPARK_ESCAPED.includes(ch)
        ? `%${code.toString(16).toUpperCase().padStart(2, '0')}`
        : ch;
  }
  return out;
}
const SPARK_ESCAPED = '"#%\'*/:=?\\{[]^';

/**
 * Java's `URLEncoder.encode(s, UTF_8)`, which Java writers' `PartitionSpec.partitionToPath` applies to partition field
 * names and values alike: letters, digits and `.-*_` stay, a space becomes `+`, every other UTF-8 byte `%XX`.
 */
export function icebergPathEscape(s: string): string {
  let out = '';
  for (const byte of new TextEncoder().encode(s)) {
    const ch = String.fromCharCode(byte);
    if (/[A-Za-z0-9.\-*_]/.test(ch)) out += ch;
    else if (byte === 0x20) out += '+';
    else out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/**
 * Characters a terminal acts on instead of showing (C0/C1 controls, DEL: cursor moves, erase, colour, newline), and
 * invisible ones that reorder or break the lines around them (bidirectional overrides, line separators).
 */
const UNPRINTABLE = /[\p{Cc}\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\\]/gu;

/**
 * `text` as it may be written to a terminal: control and bidirectional-formatting characters as `\xNN` or `\uNNNN`
 * escapes and `\` as `\\`, so a key or value from untrusted metadata can neither move the cursor, erase or hide
 * lines, nor forge a line of its own, and the escaped form maps back to one key.
 */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, (ch) => {
    if (ch === '\\') return '\\\\';
    const code = ch.codePointAt(0) ?? 0;
    return code <= 0xff
      ? `\\x${code.toString(16).padStart(2, '0')}`
      : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/** {@link UNPRINTABLE} without the newline and the backslash: what {@link printableLines} escapes. */
const UNPRINTABLE_IN_LINES = /[\p{Cc}\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/gu;

/**
 * `text` with every character {@link printable} escapes, except newlines (a message's own line breaks), as
 * `\uNNNN` (which JSON reads back too, so `--json` output stays valid), and `\` left alone: the last line of
 * defence for whole blocks of output whose values were escaped with {@link printable} already.
 */
export function printableLines(text: string): string {
  return text.replace(UNPRINTABLE_IN_LINES, (ch) =>
    ch === '\n' ? ch : `\\u${(ch.codePointAt(0) ?? 0).toString(16).padStart(4, '0')}`,
  );
}
