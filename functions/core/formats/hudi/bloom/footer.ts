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
import { compareCodePoints, compareUtf16, type RecordKeyOrder } from './record-keys.js';

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
  private readonly compare: (a: string, b: string) => number;

  constructor(settings: BloomFilterSettings = DEFAULT_BLOOM_SETTINGS, order: RecordKeyOrder = 'utf16') {
    this.filter = createBloomFilter(settings);
    this.compare = order === 'utf16' ? compareUtf16 : compareCodePoints;
  }

  add(key: string | null): void {
    if (key === null) throw new UnsupportedBloomFilterError('a row has no record key (null)');
    this.filter.add(key);
    if (this.min === undefined || this.compare(this.min, key) > 0) this.min = key;
    if (this.max === undefined || this.compare(this.max, key) < 0) this.max = key;
  }

  finish(): Record<string, string> {
    const out: Record<string, string> = { [HUDI_BLOOM_FILTER_KEY]: this.filter.serializeToString() };
    if (this.filter.typeCode.includes('DYNAMIC')) out[HUDI_BLOOM_FILTER_TYPE_CODE_KEY] = this.filter.typeCode;
    if (this.min !== undefined && this.max !== undefined) {
      out[HUDI_MIN_RECORD_KEY_KEY] = this.min;
      out[HUDI_MAX_RECORD_KEY_KEY] = this.max;
    }
    return out;
  }
}
