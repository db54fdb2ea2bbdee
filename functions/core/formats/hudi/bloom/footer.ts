// The footer entries a Hudi base file carries for its index, computed from the file's own record keys in row order
// (`HoodieBloomFilterWriteSupport.finalizeMetadata`): what a rewrite must write so that Hudi's bloom index still
// finds every key of the new file and prunes it by range.
import {
  HUDI_BLOOM_FILTER_KEY,
  HUDI_BLOOM_FILTER_TYPE_CODE_KEY,
  HUDI_MAX_RECORD_KEY_KEY,
  HUDI_MIN_RECORD_KEY_KEY,
} from './codec.js';
import { UnsupportedBloomFilterError } from './errors.js';
import {
  type BloomFilterSettings,
  createBloomFilter,
  DEFAULT_BLOOM_SETTINGS,
  type HudiBloomFilter,
} from './filters.js';
import {
  compareCodePoints,
  compareUtf8Bytes,
  compareUtf8BytesAsUtf16,
  compareUtf16,
  type RecordKeyOrder,
} from './record-keys.js';

/**
 * The index entries of a file whose rows hold `keys` (in row order: a dynamic filter's rows fill in that order):
 * the serialised filter; the type code, which Hudi writes only for dynamic filters; and the min/max keys, which it
 * writes only when there is at least one key.
 */
export function hudiIndexFooterEntries(
  keys: readonly string[],
  settings: BloomFilterSettings = DEFAULT_BLOOM_SETTINGS,
  order: RecordKeyOrder = 'utf16',
): Record<string, string> {
  const builder = new HudiIndexFooterBuilder(settings, order);
  for (const key of keys) builder.add(key);
  return builder.finish();
}

/** The footer keys {@link HudiIndexFooterBuilder} owns: the inputs' values for them describe other rows. */
export const HUDI_INDEX_FOOTER_KEYS: readonly string[] = [
  HUDI_BLOOM_FILTER_KEY,
  HUDI_BLOOM_FILTER_TYPE_CODE_KEY,
  HUDI_MIN_RECORD_KEY_KEY,
  HUDI_MAX_RECORD_KEY_KEY,
];

/**
 * {@link hudiIndexFooterEntries} one key at a time, for a writer that sees an output's rows as it encodes them
 * (the engine's per-output footer hook): memory is the filter's, not the keys'. A null key is refused, as Hudi's
 * writer fails on one: a base file row without a record key cannot be indexed.
 */
export class HudiIndexFooterBuilder {
  private readonly filter: HudiBloomFilter;
  private min: string | undefined;
  private max: string | undefined;
  /** The min/max of the keys added as bytes ({@link addUtf8}), kept as bytes until {@link finish}. */
  private minBytes: Uint8Array | undefined;
  private maxBytes: Uint8Array | undefined;
  private readonly compare: (a: string, b: string) => number;
  private readonly compareBytes: (a: Uint8Array, b: Uint8Array) => number;

  constructor(settings: BloomFilterSettings = DEFAULT_BLOOM_SETTINGS, order: RecordKeyOrder = 'utf16') {
    this.filter = createBloomFilter(settings);
    this.compare = order === 'utf16' ? compareUtf16 : compareCodePoints;
    this.compareBytes = order === 'utf16' ? compareUtf8BytesAsUtf16 : compareUtf8Bytes;
  }

  add(key: string | null): void {
    if (key === null) throw new UnsupportedBloomFilterError('a row has no record key (null)');
    this.filter.add(key);
    if (this.min === undefined || this.compare(this.min, key) > 0) this.min = key;
    if (this.max === undefined || this.compare(this.max, key) < 0) this.max = key;
  }

  /**
   * {@link add} for a key given as its well-formed UTF-8 bytes — the bytes Java's `getBytes(UTF_8)` gives for the
   * decoded key, so the filter hashes them as they are, and the range compares them in the key order: the same
   * entries as {@link add} of the decoded key, with no string built per key. `bytes` is copied only when it becomes
   * the minimum or maximum.
   */
  addUtf8(bytes: Uint8Array): void {
    this.filter.add(bytes);
    if (this.minBytes === undefined || this.compareBytes(this.minBytes, bytes) > 0)
      this.minBytes = bytes.slice();
    if (this.maxBytes === undefined || this.compareBytes(this.maxBytes, bytes) < 0)
      this.maxBytes = bytes.slice();
  }

  finish(): Record<string, string> {
    const out: Record<string, string> = { [HUDI_BLOOM_FILTER_KEY]: this.filter.serializeToString() };
    if (this.filter.typeCode.includes('DYNAMIC')) out[HUDI_BLOOM_FILTER_TYPE_CODE_KEY] = this.filter.typeCode;
    const min = this.least(this.min, this.minBytes, -1);
    const max = this.least(this.max, this.maxBytes, 1);
    if (min !== undefined && max !== undefined) {
      out[HUDI_MIN_RECORD_KEY_KEY] = min;
      out[HUDI_MAX_RECORD_KEY_KEY] = max;
    }
    return out;
  }

  /** The smaller (`sign` −1) or larger (1) of the string-added and the byte-added extreme, in the key order. */
  private least(key: string | undefined, bytes: Uint8Array | undefined, sign: -1 | 1): string | undefined {
    const decoded = bytes === undefined ? undefined : UTF8.decode(bytes);
    if (key === undefined) return decoded;
    if (decoded === undefined) return key;
    return Math.sign(this.compare(decoded, key)) === sign ? decoded : key;
  }
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });
