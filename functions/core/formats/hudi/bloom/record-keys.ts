// Record keys as Hudi's writers see them: the bytes a key is hashed as, and the order its footer's min/max keys
// (`hoodie_min_record_key`, `hoodie_max_record_key`) are chosen by. Hudi's index prunes a file by that range before
// it consults the bloom filter, so a range one key too narrow makes an upsert miss the row and write a duplicate.

const encoder = new TextEncoder();
const SURROGATE = /[\uD800-\uDFFF]/;

/**
 * The bytes Java's `String.getBytes(StandardCharsets.UTF_8)` gives, which is what Hudi's Avro writer hashes: UTF-8,
 * except that an unpaired surrogate becomes `?` (0x3F) where TextEncoder writes U+FFFD (three bytes). Spark's row
 * writer hashes the UTF8String's own bytes instead, which equal these for every well-formed string.
 */
export function javaUtf8Bytes(key: string): Uint8Array {
  if (!SURROGATE.test(key)) return encoder.encode(key);
  let wellFormed = '';
  for (let i = 0; i < key.length; i++) {
    const unit = key.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = key.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        wellFormed += key[i] as string;
        wellFormed += key[i + 1] as string;
        i++;
        continue;
      }
      wellFormed += '?';
    } else if (unit >= 0xdc00 && unit <= 0xdfff) {
      wellFormed += '?';
    } else {
      wellFormed += key[i] as string;
    }
  }
  return encoder.encode(wellFormed);
}

/**
 * How a writer orders record keys when it keeps the footer's min/max:
 * - `utf16`: Java's `String.compareTo`, by UTF-16 code units: Hudi's Avro write path (`HoodieAvroWriteSupport`),
 *   the 0.x default and the one clustering uses unless its row writer is on.
 * - `utf8`: Spark's `UTF8String.compareTo`, by unsigned UTF-8 bytes (= code points): Hudi's Spark row writer
 *   (`HoodieRowParquetWriteSupport`).
 * They differ only when a key mixes a supplementary character (emoji, U+10000 and up) with one in U+E000–U+FFFF.
 */
export type RecordKeyOrder = 'utf16' | 'utf8';

/** Java's `String.compareTo` sign: JavaScript's `<` on strings compares UTF-16 code units, as Java does. */
export function compareUtf16(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** `UTF8String.compareTo` sign for well-formed strings: code point order. */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    // Differing units: a surrogate (a code point ≥ U+10000) sorts above every BMP unit, whatever its code unit value.
    const xs = x >= 0xd800 && x <= 0xdfff;
    const ys = y >= 0xd800 && y <= 0xdfff;
    if (xs !== ys) return xs ? 1 : -1;
    return x < y ? -1 : 1;
  }
  return a.length - b.length < 0 ? -1 : a.length > b.length ? 1 : 0;
}

/**
 * {@link compareUtf16}'s sign for two well-formed UTF-8 strings, from their bytes. At the first byte where they
 * differ, both bytes start a character (the characters before are equal) or both continue characters of one first
 * byte (so of one length); either way byte order is code point order there. UTF-16 order differs from code point
 * order only between a character of U+10000 and up (first byte F0–F4; in UTF-16 a surrogate pair, D800–DBFF
 * first) and one of U+E000–U+FFFF (first byte EE or EF): there the former is the smaller.
 */
export function compareUtf8BytesAsUtf16(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a[i] as number;
    const y = b[i] as number;
    if (x === y) continue;
    if (x >= 0xf0 && y >= 0xee && y < 0xf0) return -1;
    if (y >= 0xf0 && x >= 0xee && x < 0xf0) return 1;
    return x < y ? -1 : 1;
  }
  return a.length < b.length ? -1 : a.length > b.length ? 1 : 0;
}

/** {@link compareCodePoints}'s sign for two well-formed UTF-8 strings, from their bytes: unsigned byte order. */
export function compareUtf8Bytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a[i] as number;
    const y = b[i] as number;
    if (x !== y) return x < y ? -1 : 1;
  }
  return a.length < b.length ? -1 : a.length > b.length ? 1 : 0;
}

/** A file's record-key range, as its footer carries it. */
export interface RecordKeyRange {
  readonly min: string;
  readonly max: string;
}

/**
 * The smallest and largest record key in `order` — what Hudi's `HoodieBloomFilterWriteSupport.addKey` keeps — or
 * undefined for no keys (Hudi then writes neither footer entry).
 */
export function recordKeyRange(
  keys: Iterable<string>,
  order: RecordKeyOrder = 'utf16',
): RecordKeyRange | undefined {
  const compare = order === 'utf16' ? compareUtf16 : compareCodePoints;
  let min: string | undefined;
  let max: string | undefined;
  for (const key of keys) {
    if (min === undefined || compare(min, key) > 0) min = key;
    if (max === undefined || compare(max, key) < 0) max = key;
  }
  return min === undefined || max === undefined ? undefined : { min, max };
}
