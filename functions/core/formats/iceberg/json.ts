// Parses Iceberg metadata JSON without losing a digit: every integer literal too long to be exact as a JS number
// (snapshot ids, sequence numbers) reaches the parsed value as its decimal string, never as a rounded double.

/** Integer literals of at most this many digits are always exact doubles (< 2^53 ≈ 9.007e15). */
const SAFE_DIGITS = 15;

/**
 * `JSON.parse`, except that an integer literal with more than 15 digits is returned as its decimal string.
 *
 * Why: snapshot ids are random 63-bit numbers; `JSON.parse` rounds them to the nearest double, and a rounded id
 * names no snapshot (or the wrong one). Node 20 has no reviver with the source text, so a scanner walks the text
 * once, outside string literals, and quotes every long integer before `JSON.parse` sees it. Schema fields that
 * hold 64-bit values accept either form and convert to BigInt (see `metadata.ts`).
 */
export function parseJsonExact(text: string): unknown {
  let out = '';
  let copiedTo = 0;
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      // Skip a string literal, honouring escapes.
      i++;
      while (i < n) {
        const d = text.charCodeAt(i);
        if (d === 0x5c /* \ */) i += 2;
        else if (d === 0x22) {
          i++;
          break;
        } else i++;
      }
      continue;
    }
    if (c === 0x2d /* - */ || (c >= 0x30 && c <= 0x39)) {
      const start = i;
      i++;
      while (i < n && isNumberChar(text.charCodeAt(i))) i++;
      const literal = text.slice(start, i);
      if (/^-?\d+$/.test(literal) && literal.replace('-', '').length > SAFE_DIGITS) {
        out += `${text.slice(copiedTo, start)}"${literal}"`;
        copiedTo = i;
      }
      continue;
    }
    i++;
  }
  return JSON.parse(copiedTo === 0 ? text : out + text.slice(copiedTo));
}

function isNumberChar(c: number): boolean {
  // digits, '.', 'e', 'E', '+', '-'
  return (c >= 0x30 && c <= 0x39) || c === 0x2e || c === 0x65 || c === 0x45 || c === 0x2b || c === 0x2d;
}

/** Marks a long integer literal inside a parsed value kept for rewriting (see {@link parseJsonKeepingLongs}). */
const LONG_MARK = '\u0000long:';

/**
 * Like {@link parseJsonExact}, but a long integer literal becomes a marked string that
 * {@link stringifyJsonKeepingLongs} writes back as the bare literal. Why: a commit rewrites the whole metadata
 * file and must keep every field it does not understand, and keep snapshot ids numbers (not quoted strings, which
 * Iceberg readers reject), without confusing them with string values that happen to hold digits.
 */
export function parseJsonKeepingLongs(text: string): unknown {
  let out = '';
  let copiedTo = 0;
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      i++;
      while (i < n) {
        const d = text.charCodeAt(i);
        if (d === 0x5c) i += 2;
        else if (d === 0x22) {
          i++;
          break;
        } else i++;
      }
      continue;
    }
    if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      const start = i;
      i++;
      while (i < n && isNumberChar(text.charCodeAt(i))) i++;
      const literal = text.slice(start, i);
      if (/^-?\d+$/.test(literal) && literal.replace('-', '').length > SAFE_DIGITS) {
        out += `${text.slice(copiedTo, start)}"\\u0000long:${literal}"`;
        copiedTo = i;
      }
      continue;
    }
    i++;
  }
  return JSON.parse(copiedTo === 0 ? text : out + text.slice(copiedTo));
}

/** A 64-bit integer as a value {@link stringifyJsonKeepingLongs} writes as a bare JSON number. */
export function jsonLong(value: bigint | number | string): string {
  return `${LONG_MARK}${BigInt(value)}`;
}

/**
 * `JSON.stringify` that writes bigints and {@link jsonLong} marks as bare integer literals, exactly.
 */
export function stringifyJsonKeepingLongs(value: unknown): string {
  const text = JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? jsonLong(v) : v));
  return text.replace(/"\\u0000long:(-?\d+)"/g, '$1');
}
