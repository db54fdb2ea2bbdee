// Hudi's bloom filters and record-key ranges, as Hudi serialises them into base files' footers: pure, no I/O.
export {
  BitVectorFilter,
  bitPositions,
  type FilterShape,
  JENKINS_HASH,
  MURMUR_HASH,
} from './bit-vector-filter.js';
export {
  bloomFilterOfFooter,
  decodeBloomFilter,
  decodeBloomFilterBytes,
  HUDI_BLOOM_FILTER_KEY,
  HUDI_BLOOM_FILTER_TYPE_CODE_KEY,
  HUDI_MAX_RECORD_KEY_KEY,
  HUDI_MIN_RECORD_KEY_KEY,
  HUDI_OLD_BLOOM_FILTER_KEY,
  MAX_HASHES,
  parseBloomFilterTypeCode,
} from './codec.js';
export { CorruptBloomFilterError, UnsupportedBloomFilterError } from './errors.js';
export {
  type BloomFilterSettings,
  type BloomFilterTypeCode,
  type BloomKey,
  bloomBitSize,
  bloomNumHashes,
  createBloomFilter,
  DEFAULT_BLOOM_SETTINGS,
  DynamicBoundedBloomFilter,
  type HudiBloomFilter,
  SimpleBloomFilter,
} from './filters.js';
export { HUDI_INDEX_FOOTER_KEYS, HudiIndexFooterBuilder, hudiIndexFooterEntries } from './footer.js';
export { hadoopMurmurHash } from './murmur.js';
export {
  compareCodePoints,
  compareUtf8Bytes,
  compareUtf8BytesAsUtf16,
  compareUtf16,
  javaUtf8Bytes,
  type RecordKeyOrder,
  type RecordKeyRange,
  recordKeyRange,
} from './record-keys.js';
