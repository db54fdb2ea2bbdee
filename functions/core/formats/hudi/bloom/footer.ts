// The footer entries a Hudi base file carries for its index, computed from the file's own record keys in row order
// (`HoodieBloomFilterWriteSupport.finalizeMetadata`): what a rewrite must write so that Hudi's bloom index still
// finds every key of the new file and prunes it by range.
import {
  HUDI_BLOOM_FILTER_KEY,
  HUDI_BLOOM_FILTER_TYPE_CODE_KEY,
  HUDI_MAX_RECORD_KEY_KEY,
  HUDI_MIN_RECORD_KEY_KEY,
} from './codec.js';
import { type BloomFilterSettings, createBloomFilter, DEFAULT_BLOOM_SETTINGS } from './filters.js';
import { type RecordKeyOrder, recordKeyRange } from './record-keys.js';

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
  const filter = createBloomFilter(settings);
  for (const key of keys) filter.add(key);
  const out: Record<string, string> = { [HUDI_BLOOM_FILTER_KEY]: filter.serializeToString() };
  if (filter.typeCode.includes('DYNAMIC')) out[HUDI_BLOOM_FILTER_TYPE_CODE_KEY] = filter.typeCode;
  const range = recordKeyRange(keys, order);
  if (range !== undefined) {
    out[HUDI_MIN_RECORD_KEY_KEY] = range.min;
    out[HUDI_MAX_RECORD_KEY_KEY] = range.max;
  }
  return out;
}
