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
