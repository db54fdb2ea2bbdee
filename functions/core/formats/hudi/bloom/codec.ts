// Reading a footer's bloom filter: `org.apache.hudi.bloomfilter` (or the pre-Apache `com.uber.hoodie.bloomfilter`)
// decoded as Hudi's `BloomFilterFactory.fromString(value, typeCode)` does, the type code taken from
// `hoodie_bloom_filter_type_code` and SIMPLE when absent (files before dynamic filters).
//
// The value is untrusted (any writer can put any footer in a table folder): every size read — vector bits, hash
// count, matrix rows — is checked against the bytes actually present before anything of that size is allocated,
// so a 20-byte footer claiming 2^31 bits or 2^31 rows is refused in constant memory.
import {
  BitVectorFilter,
  FILTER_HEADER_BYTES,
  FILTER_VERSION,
  type FilterShape,
  JENKINS_HASH,
  MURMUR_HASH,
  vectorBytes,
} from './bit-vector-filter.js';
import { CorruptBloomFilterError } from './errors.js';
import {
  type BloomFilterTypeCode,
  DynamicBoundedBloomFilter,
  type HudiBloomFilter,
  SimpleBloomFilter,
} from './filters.js';

/** Footer keys Hudi's writers set (`HoodieBloomFilterWriteSupport`). */
export const HUDI_BLOOM_FILTER_KEY = 'org.apache.hudi.bloomfilter';
export const HUDI_OLD_BLOOM_FILTER_KEY = 'com.uber.hoodie.bloomfilter';
export const HUDI_BLOOM_FILTER_TYPE_CODE_KEY = 'hoodie_bloom_filter_type_code';
export const HUDI_MIN_RECORD_KEY_KEY = 'hoodie_min_record_key';
export const HUDI_MAX_RECORD_KEY_KEY = 'hoodie_max_record_key';

/**
 * Most hash values per key a Hudi-sized filter can have: `ceil(ln 2 × bits / entries)` is about log2(1 / fpp), at
 * most 1,075 for the smallest positive double. A larger count is refused, since testing one key costs that many
 * hashes and a lying header could otherwise make every lookup take minutes.
 */
export const MAX_HASHES = 2048;

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Strict standard Base64, as `java.util.Base64.getDecoder()` accepts it (Node's decoder skips bad characters). */
export function decodeBase64Strict(text: string): Uint8Array {
  if (text.length % 4 !== 0 || !BASE64.test(text)) {
    throw new CorruptBloomFilterError('the value is not standard padded Base64');
  }
  const buf = Buffer.from(text, 'base64');
  return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
}

/** A big-endian reader over the decoded bytes that refuses, by name, to read past their end. */
class Reader {
  private at = 0;
  private readonly view: DataView;
  constructor(private readonly bytes: Uint8Array) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  get remaining(): number {
    return this.bytes.length - this.at;
  }
  private need(n: number, what: string): void {
    if (n > this.remaining) {
      throw new CorruptBloomFilterError(`${what} needs ${n} bytes but only ${this.remaining} remain`);
    }
  }
  int(what: string): number {
    this.need(4, what);
    const v = this.view.getInt32(this.at);
    this.at += 4;
    return v;
  }
  byte(what: string): number {
    this.need(1, what);
    const v = this.view.getInt8(this.at);
    this.at += 1;
    return v;
  }
  take(n: number, what: string): Uint8Array {
    this.need(n, what);
    const out = this.bytes.slice(this.at, this.at + n);
    this.at += n;
    return out;
  }
}

/** Hadoop's `Filter.readFields` header, bounded. */
function readShape(r: Reader, what: string): FilterShape {
  const version = r.int(`${what} version`);
  let nbHash: number;
  let hashType: number;
  if (version > 0) {
    // Hadoop's pre-0.20 unversioned layout: the first int is nbHash and the hash is Jenkins.
    nbHash = version;
    hashType = JENKINS_HASH;
  } else if (version === FILTER_VERSION) {
    nbHash = r.int(`${what} hash count`);
    hashType = r.byte(`${what} hash type`);
  } else {
    throw new CorruptBloomFilterError(`${what} has unsupported version ${version}`);
  }
  const vectorSize = r.int(`${what} vector size`);
  if (nbHash <= 0 || nbHash > MAX_HASHES) {
    throw new CorruptBloomFilterError(`${what} declares ${nbHash} hashes (1..${MAX_HASHES} allowed)`);
  }
  if (hashType !== MURMUR_HASH && hashType !== JENKINS_HASH) {
    throw new CorruptBloomFilterError(`${what} declares unknown hash type ${hashType}`);
  }
  if (vectorSize <= 0) throw new CorruptBloomFilterError(`${what} declares vector size ${vectorSize}`);
  return { vectorSize, nbHash, hashType };
}

/** One standard filter: header, then exactly the vector bytes it declares — checked before they are copied. */
function readRow(r: Reader, what: string): BitVectorFilter {
  const shape = readShape(r, what);
  const bits = r.take(vectorBytes(shape.vectorSize), `${what}'s ${shape.vectorSize}-bit vector`);
  // Java reads only bits below vectorSize; clear the rest so re-serialising gives what Java would write.
  const spare = shape.vectorSize & 7;
  if (spare !== 0) bits[bits.length - 1] = (bits[bits.length - 1] as number) & ((1 << spare) - 1);
  return new BitVectorFilter(shape.vectorSize, shape.nbHash, shape.hashType, bits);
}

/**
 * The filter serialised in `bytes`, of the footer's type code. Bytes after the filter are ignored, as Java's
 * DataInputStream leaves them unread.
 */
export function decodeBloomFilterBytes(bytes: Uint8Array, typeCode: BloomFilterTypeCode): HudiBloomFilter {
  const r = new Reader(bytes);
  if (typeCode === 'SIMPLE') return new SimpleBloomFilter(readRow(r, 'the filter'));
  const shape = readShape(r, 'the dynamic filter');
  const nr = r.int('the keys per row');
  const currentNbRecord = r.int('the keys in the last row');
  const rowCount = r.int('the row count');
  // Every row is at least a header and one vector byte: a count the remaining bytes cannot hold is a lie, and is
  // refused before an array of that length exists.
  const minRow = FILTER_HEADER_BYTES + 1;
  if (rowCount < 0 || rowCount > Math.floor(r.remaining / minRow)) {
    throw new CorruptBloomFilterError(
      `the dynamic filter declares ${rowCount} rows but ${r.remaining} bytes hold at most ${Math.floor(r.remaining / minRow)}`,
    );
  }
  const rows: BitVectorFilter[] = [];
  for (let i = 0; i < rowCount; i++) rows.push(readRow(r, `row ${i}`));
  return new DynamicBoundedBloomFilter(shape, nr, currentNbRecord, rows, 0);
}

/** Parses a type code as `BloomFilterTypeCode.valueOf` does (exact, case-sensitive). */
export function parseBloomFilterTypeCode(code: string): BloomFilterTypeCode {
  if (code === 'SIMPLE' || code === 'DYNAMIC_V0') return code;
  throw new CorruptBloomFilterError(`unknown bloom filter type code "${code}"`);
}

/** `BloomFilterFactory.fromString(serString, typeCode)`: a footer value decoded. */
export function decodeBloomFilter(
  serialized: string,
  typeCode: BloomFilterTypeCode | string,
): HudiBloomFilter {
  return decodeBloomFilterBytes(decodeBase64Strict(serialized), parseBloomFilterTypeCode(typeCode));
}

/**
 * The bloom filter a Parquet footer's key-value metadata carries, read as Hudi's `readBloomFilterFromMetadata`
 * does, or undefined when it has none (a file written with the bloom index off, or not by Hudi).
 */
export function bloomFilterOfFooter(kv: Readonly<Record<string, string>>): HudiBloomFilter | undefined {
  const value = kv[HUDI_BLOOM_FILTER_KEY] ?? kv[HUDI_OLD_BLOOM_FILTER_KEY];
  if (value === undefined) return undefined;
  return decodeBloomFilter(value, kv[HUDI_BLOOM_FILTER_TYPE_CODE_KEY] ?? 'SIMPLE');
}
