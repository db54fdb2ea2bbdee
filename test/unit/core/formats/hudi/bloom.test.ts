// Hudi's bloom filters and record-key ranges against the footers Hudi itself wrote: for every base file of every
// vendored Hudi table whose footer has them, the decoded filter finds every `_hoodie_record_key` of the file (read
// by DuckDB, an independent reader), a filter built from those keys with Hudi's defaults serialises to the footer's
// Base64 byte for byte, and the min/max keys equal the footer's. Then Hadoop's Murmur quirks, DYNAMIC_V0's growth
// and bound, Java's string order, and refusal of crafted filters whose sizes lie.
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import fc from 'fast-check';
import { asyncBufferFromFile, parquetMetadataAsync } from 'hyparquet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bloomBitSize,
  bloomFilterOfFooter,
  bloomNumHashes,
  CorruptBloomFilterError,
  compareCodePoints,
  compareUtf8Bytes,
  compareUtf8BytesAsUtf16,
  compareUtf16,
  createBloomFilter,
  DEFAULT_BLOOM_SETTINGS,
  DynamicBoundedBloomFilter,
  decodeBloomFilter,
  decodeBloomFilterBytes,
  HUDI_BLOOM_FILTER_KEY,
  HUDI_BLOOM_FILTER_TYPE_CODE_KEY,
  HUDI_MAX_RECORD_KEY_KEY,
  HUDI_MIN_RECORD_KEY_KEY,
  HudiIndexFooterBuilder,
  hadoopMurmurHash,
  hudiIndexFooterEntries,
  javaUtf8Bytes,
  recordKeyRange,
  SimpleBloomFilter,
  UnsupportedBloomFilterError,
} from '../../../../../functions/core/formats/hudi/bloom/index.js';
import { keyValueRecord } from '../../../../../functions/core/parquet/key-value.js';
import { type DuckDb, openDuckDb, sqlString } from '../../../../support/duckdb.js';
import { HUDI_FIXTURES, HUDI_TABLES } from '../../../../support/fixtures.js';

interface IndexedBaseFile {
  readonly table: string;
  readonly path: string;
  readonly footer: Record<string, string>;
}

/** Every base file of every vendored table whose footer carries Hudi's bloom filter. */
async function indexedBaseFiles(): Promise<IndexedBaseFile[]> {
  const out: IndexedBaseFile[] = [];
  for (const table of HUDI_TABLES) {
    const root = join(HUDI_FIXTURES, table);
    const files = readdirSync(root, { recursive: true, encoding: 'utf8' })
      .filter((p) => p.endsWith('.parquet') && !p.startsWith('.hoodie'))
      .sort();
    for (const file of files) {
      const path = join(root, file);
      const md = await parquetMetadataAsync(await asyncBufferFromFile(path));
      const footer = keyValueRecord(md.key_value_metadata ?? []);
      if (HUDI_BLOOM_FILTER_KEY in footer) out.push({ table, path, footer });
    }
  }
  return out;
}

let db: DuckDb;
let files: IndexedBaseFile[];

beforeAll(async () => {
  db = await openDuckDb();
  files = await indexedBaseFiles();
});

afterAll(() => {
  db.close();
});

async function recordKeysOf(path: string): Promise<string[]> {
  const rows = await db.rows(`SELECT _hoodie_record_key AS k FROM read_parquet(${sqlString(path)})`);
  return rows.map((r) => String(r.k));
}

describe('the footers Hudi wrote', () => {
  it('are found in every vendored table that keeps meta fields (and the tables are many)', () => {
    // Assess: the sweep below is not vacuous.
    expect(files.length).toBeGreaterThanOrEqual(50);
    expect(new Set(files.map((f) => f.table)).size).toBeGreaterThanOrEqual(8);
  });

  it('decode to a filter that finds every record key of its file', async () => {
    for (const { path, footer } of files) {
      // Prepare
      const keys = await recordKeysOf(path);
      expect(keys.length, path).toBeGreaterThan(0);
      // Act
      const filter = bloomFilterOfFooter(footer);
      // Assess
      expect(filter?.typeCode, path).toBe(footer[HUDI_BLOOM_FILTER_TYPE_CODE_KEY]);
      for (const key of keys)
        expect(filter?.mightContain(key), `${relative(HUDI_FIXTURES, path)}: ${key}`).toBe(true);
    }
  });

  it('are rebuilt byte for byte from the file keys with Hudi defaults, with the same min/max keys', async () => {
    for (const { path, footer } of files) {
      // Prepare
      const keys = await recordKeysOf(path);
      // Act
      const entries = hudiIndexFooterEntries(keys, DEFAULT_BLOOM_SETTINGS, 'utf16');
      // Assess: the whole Base64 string, not only a prefix, so every bit of every row is compared.
      const where = relative(HUDI_FIXTURES, path);
      expect(entries[HUDI_BLOOM_FILTER_KEY] === footer[HUDI_BLOOM_FILTER_KEY], where).toBe(true);
      expect(entries[HUDI_BLOOM_FILTER_TYPE_CODE_KEY], where).toBe(footer[HUDI_BLOOM_FILTER_TYPE_CODE_KEY]);
      expect(entries[HUDI_MIN_RECORD_KEY_KEY], where).toBe(footer[HUDI_MIN_RECORD_KEY_KEY]);
      expect(entries[HUDI_MAX_RECORD_KEY_KEY], where).toBe(footer[HUDI_MAX_RECORD_KEY_KEY]);
    }
  });

  it('re-serialise to the same Base64 after decoding', () => {
    for (const { path, footer } of files) {
      // Act
      const again = bloomFilterOfFooter(footer)?.serializeToString();
      // Assess
      expect(again === footer[HUDI_BLOOM_FILTER_KEY], path).toBe(true);
    }
  });

  it('reject keys the file does not hold, as a 1e-9 filter should', () => {
    // Prepare
    const first = files[0];
    if (first === undefined) throw new Error('no fixture');
    const filter = bloomFilterOfFooter(first.footer);
    // Act
    const hits = Array.from({ length: 2000 }, (_, i) => `not-a-key-${i}`).filter((k) =>
      filter?.mightContain(k),
    );
    // Assess
    expect(hits).toEqual([]);
  });
});

describe("Hudi's sizing", () => {
  it('gives 2,587,966 bits and 30 hashes at the defaults (60000 entries, fpp 1e-9), as the fixtures carry', () => {
    // Act
    const bits = bloomBitSize(60000, 1e-9);
    // Assess
    expect(bits).toBe(2587966);
    expect(bloomNumHashes(bits, 60000)).toBe(30);
  });
});

describe("Hadoop's MurmurHash", () => {
  it('sign-extends a trailing byte ≥ 0x80, unlike textbook MurmurHash2', () => {
    // Prepare: one byte 0xff; a textbook (unsigned) tail XORs 0x000000ff, Hadoop's XORs 0xffffffff.
    const m = 0x5bd1e995;
    const finish = (h0: number): number => {
      let h = Math.imul(h0, m);
      h ^= h >>> 13;
      h = Math.imul(h, m);
      h ^= h >>> 15;
      return h | 0;
    };
    // Act
    const got = hadoopMurmurHash(new Uint8Array([0xff]), 0);
    // Assess
    expect(got).toBe(finish(0 ^ 1 ^ -1));
    expect(got).not.toBe(finish(0 ^ 1 ^ 0xff));
  });

  it('hashes a key that is a multiple of four bytes without a tail step', () => {
    // Prepare: "abcd" is one block; recompute by hand.
    const m = 0x5bd1e995;
    let k = 0x64636261;
    k = Math.imul(k, m);
    k ^= k >>> 24;
    k = Math.imul(k, m);
    let h = Math.imul(0 ^ 4, m) ^ k;
    h ^= h >>> 13;
    h = Math.imul(h, m);
    h ^= h >>> 15;
    // Act / Assess
    expect(hadoopMurmurHash(new TextEncoder().encode('abcd'), 0)).toBe(h | 0);
  });
});

describe('DYNAMIC_V0 growth', () => {
  it('adds a row every numEntries keys while rows × numEntries < maxEntries, then fills rows round-robin', () => {
    // Prepare: 10 keys a row, bounded at 25 → rows grow to 3 (30 ≥ 25) and never past.
    const filter = DynamicBoundedBloomFilter.create(10, 0.01, 25);
    const keys = Array.from({ length: 100 }, (_, i) => `key-${i}`);
    // Act
    for (const [i, key] of keys.entries()) {
      filter.add(key);
      if (i === 9) expect(filter.rows.length).toBe(1);
      if (i === 10) expect(filter.rows.length).toBe(2);
      if (i === 20) expect(filter.rows.length).toBe(3);
    }
    // Assess
    expect(filter.rows.length).toBe(3);
    expect(filter.recordsInLastRow).toBe(100 - 20); // Hudi keeps counting past the bound.
    for (const key of keys) expect(filter.mightContain(key)).toBe(true);
    // Key 31 (index 30) is the first past the bound: it goes to row 0, as does index 31, then rows 1, 2, 0, …
    const only = (key: string): number[] =>
      filter.rows.flatMap((row, i) => (new SimpleBloomFilter(row).mightContain(key) ? [i] : []));
    expect(only('key-30')).toContain(0);
    expect(only('key-32')).toContain(1);
    expect(only('key-33')).toContain(2);
  });

  it("grows and sizes as Hudi's golden filter of 200 entries, fpp 1e-6, bounded at 1000, after 10000 keys", () => {
    // Prepare: the first 36 bytes (48 Base64 characters) of apache/hudi
    // hudi-common/src/test/resources/format/bloom-filter/hadoop/dynamic_200_000001_murmur_1000.bf.data (Apache-2.0),
    // written after adding 10000 keys: version -1, 20 hashes, Murmur, 5752 bits, 200 keys a row, 9200 keys in the
    // last row, 5 rows; then row 0's header. Those fields depend on the key count, not on the keys, so any 10000
    // keys give them (the golden's keys file is 370 KB and is not vendored).
    const golden = '/////wAAABQBAAAWeAAAAMgAACPwAAAABf////8AAAAUAQAA';
    const filter = createBloomFilter({
      typeCode: 'DYNAMIC_V0',
      numEntries: 200,
      fpp: 0.000001,
      maxEntries: 1000,
    });
    // Act
    for (let i = 0; i < 10000; i++) filter.add(`key-${i}`);
    // Assess
    expect(filter.serializeToString().slice(0, golden.length)).toBe(golden);
    expect(filter.toBytes().length).toBe(25 + 5 * (13 + Math.ceil(5752 / 8)));
  });

  it('round-trips a multi-row filter through its bytes', () => {
    // Prepare
    const filter = createBloomFilter({ typeCode: 'DYNAMIC_V0', numEntries: 50, fpp: 1e-6, maxEntries: 120 });
    for (let i = 0; i < 400; i++) filter.add(`id:${i}`);
    // Act
    const decoded = decodeBloomFilter(filter.serializeToString(), 'DYNAMIC_V0');
    // Assess
    expect(decoded.serializeToString()).toBe(filter.serializeToString());
    for (let i = 0; i < 400; i++) expect(decoded.mightContain(`id:${i}`)).toBe(true);
  });

  it('SIMPLE filters round-trip too, without a type code in the footer', () => {
    // Prepare
    const entries = hudiIndexFooterEntries(['b', 'a', 'c'], {
      typeCode: 'SIMPLE',
      numEntries: 100,
      fpp: 1e-6,
    });
    // Act
    const filter = bloomFilterOfFooter(entries);
    // Assess
    expect(entries[HUDI_BLOOM_FILTER_TYPE_CODE_KEY]).toBeUndefined();
    expect(filter?.typeCode).toBe('SIMPLE');
    expect(['a', 'b', 'c'].every((k) => filter?.mightContain(k))).toBe(true);
    expect(filter?.serializeToString()).toBe(entries[HUDI_BLOOM_FILTER_KEY]);
  });
});

describe('record keys as Java sees them', () => {
  it('order min/max by UTF-16 code units for the Avro writer and by code points for the row writer', () => {
    // Prepare: U+FF5E (a BMP char above the surrogates) against U+1F600 (a surrogate pair).
    const keys = ['\uff5e', '\u{1f600}', 'a'];
    // Act / Assess
    expect(recordKeyRange(keys, 'utf16')).toEqual({ min: 'a', max: '\uff5e' });
    expect(recordKeyRange(keys, 'utf8')).toEqual({ min: 'a', max: '\u{1f600}' });
    expect(compareUtf16('\ud83d\ude00', '\uff5e')).toBe(-1);
    expect(compareCodePoints('\ud83d\ude00', '\uff5e')).toBe(1);
    expect(recordKeyRange([])).toBeUndefined();
  });

  it("hash a lone surrogate as Java's getBytes does ('?'), not as U+FFFD", () => {
    // Act / Assess
    expect([...javaUtf8Bytes('a\ud800b')]).toEqual([0x61, 0x3f, 0x62]);
    expect([...javaUtf8Bytes('é\u{1f600}')]).toEqual([...new TextEncoder().encode('é\u{1f600}')]);
  });

  /** Well-formed keys weighted towards where the orders part: ASCII, U+E000–U+FFFF, supplementary characters. */
  const keyArb = fc
    .array(
      fc.oneof(
        fc.constantFrom('a', 'k', '0', 'é', '\ud7ff', '\ue000', '\uff5e', '\uffff', '\u{10000}', '\u{1f600}'),
        fc.string({ unit: 'grapheme', maxLength: 2 }),
      ),
      { minLength: 1, maxLength: 6 },
    )
    .map((parts) => parts.join(''))
    .filter((k) => k.length > 0);
  const utf8 = new TextEncoder();

  it("orders keys' UTF-8 bytes as Java orders the strings (UTF-16) and as the row writer does (code points)", () => {
    // Act / Assess
    fc.assert(
      fc.property(keyArb, keyArb, (a, b) => {
        expect(compareUtf8BytesAsUtf16(utf8.encode(a), utf8.encode(b))).toBe(compareUtf16(a, b));
        expect(compareUtf8Bytes(utf8.encode(a), utf8.encode(b))).toBe(compareCodePoints(a, b));
      }),
      { numRuns: 2000 },
    );
  });

  it('writes the same footer entries from keys given as UTF-8 bytes as from the keys, in either order', () => {
    // Act / Assess: small filters (several rows, round-robin past the bound) so row placement is exercised.
    const settings = { typeCode: 'DYNAMIC_V0', numEntries: 8, fpp: 1e-4, maxEntries: 20 } as const;
    fc.assert(
      fc.property(
        fc.array(keyArb, { minLength: 1, maxLength: 60 }),
        fc.constantFrom('utf16', 'utf8'),
        (keys, order) => {
          const fromBytes = new HudiIndexFooterBuilder(settings, order);
          for (const key of keys) fromBytes.addUtf8(utf8.encode(key));
          expect(fromBytes.finish()).toEqual(hudiIndexFooterEntries(keys, settings, order));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('keeps one range over keys given as strings and as bytes in one file', () => {
    // Prepare
    const builder = new HudiIndexFooterBuilder();
    // Act
    builder.add('m');
    builder.addUtf8(utf8.encode('\uff5e'));
    builder.addUtf8(utf8.encode('b'));
    builder.add('\u{1f600}');
    // Assess: Java's order, whichever way each key came.
    expect(builder.finish()).toEqual(hudiIndexFooterEntries(['m', '\uff5e', 'b', '\u{1f600}']));
  });

  it('refuses an empty key, as Hadoop does', () => {
    // Act / Assess
    expect(() => createBloomFilter().add('')).toThrow(UnsupportedBloomFilterError);
    expect(() => new HudiIndexFooterBuilder().addUtf8(new Uint8Array(0))).toThrow(
      UnsupportedBloomFilterError,
    );
  });
});

describe('untrusted filters', () => {
  const header = (parts: Array<[number, 'i' | 'b']>): Uint8Array => {
    const out = new Uint8Array(parts.reduce((n, [, t]) => n + (t === 'i' ? 4 : 1), 0));
    const view = new DataView(out.buffer);
    let at = 0;
    for (const [v, t] of parts) {
      if (t === 'i') {
        view.setInt32(at, v);
        at += 4;
      } else {
        view.setInt8(at, v);
        at += 1;
      }
    }
    return out;
  };

  it('refuses a vector size the bytes cannot hold, before allocating it', () => {
    // Prepare: a SIMPLE header claiming 2^31-1 bits, followed by 8 bytes.
    const lying = new Uint8Array([
      ...header([
        [-1, 'i'],
        [30, 'i'],
        [1, 'b'],
        [0x7fffffff, 'i'],
      ]),
      ...new Uint8Array(8),
    ]);
    // Act / Assess
    expect(() => decodeBloomFilterBytes(lying, 'SIMPLE')).toThrow(CorruptBloomFilterError);
    expect(() => decodeBloomFilterBytes(lying, 'SIMPLE')).toThrow(/needs 268435456 bytes but only 8 remain/);
  });

  it('refuses a matrix row count the bytes cannot hold, before allocating the rows', () => {
    // Prepare: a DYNAMIC_V0 header claiming 2^31-1 rows of 8 bits, and one real row.
    const row = [
      ...header([
        [-1, 'i'],
        [3, 'i'],
        [1, 'b'],
        [8, 'i'],
      ]),
      0xff,
    ];
    const lying = new Uint8Array([
      ...header([
        [-1, 'i'],
        [3, 'i'],
        [1, 'b'],
        [8, 'i'],
        [10, 'i'],
        [1, 'i'],
        [0x7fffffff, 'i'],
      ]),
      ...row,
    ]);
    // Act / Assess
    expect(() => decodeBloomFilterBytes(lying, 'DYNAMIC_V0')).toThrow(
      /declares 2147483647 rows but 14 bytes hold at most 1/,
    );
  });

  it('refuses negative sizes, absurd hash counts, unknown versions, hash types and type codes, and bad Base64', () => {
    // Prepare
    const simple = (nbHash: number, type: number, size: number, version = -1) =>
      new Uint8Array([
        ...header([
          [version, 'i'],
          [nbHash, 'i'],
          [type, 'b'],
          [size, 'i'],
        ]),
        0,
        0,
      ]);
    // Act / Assess
    expect(() => decodeBloomFilterBytes(simple(3, 1, -8), 'SIMPLE')).toThrow(CorruptBloomFilterError);
    expect(() => decodeBloomFilterBytes(simple(1e9, 1, 8), 'SIMPLE')).toThrow(/hashes/);
    expect(() => decodeBloomFilterBytes(simple(3, 7, 8), 'SIMPLE')).toThrow(/hash type 7/);
    expect(() => decodeBloomFilterBytes(simple(3, 1, 8, -2), 'SIMPLE')).toThrow(/version -2/);
    expect(() => decodeBloomFilter('AAAA', 'DYNAMIC_V1')).toThrow(CorruptBloomFilterError);
    expect(() => decodeBloomFilter('AA*A', 'SIMPLE')).toThrow(/Base64/);
    expect(() => decodeBloomFilterBytes(new Uint8Array(3), 'SIMPLE')).toThrow(CorruptBloomFilterError);
  });
});
