// Tests of the Parquet footer reader against files written by DuckDB, Spark and delta-rs, and
// against damaged bytes; DuckDB is the independent oracle for row counts.
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { parquetMetadata } from 'hyparquet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { CorruptInputError, ObjectNotFoundError } from '../../../../functions/core/errors.js';
import {
  assertParquetMagic,
  FOOTER_FIRST_READ_BYTES,
  type FooterSource,
  type ParquetColumn,
  readFooter,
} from '../../../../functions/core/parquet/footer.js';
import {
  leafColumns,
  normalizedLogicalType,
  schemaFingerprint,
  schemaTree,
} from '../../../../functions/core/parquet/schema.js';
import type { ObjectInfo } from '../../../../functions/ports/object-store.js';
import { type DuckDb, openDuckDb, sqlString } from '../../../support/duckdb.js';
import { DELTA_FIXTURES } from '../../../support/fixtures.js';

const FIXTURES = DELTA_FIXTURES;

/** Wraps the in-memory ObjectStore and records every call readFooter makes, with its range. */
class RecordingStore implements FooterSource {
  readonly inner = new MemoryObjectStore({ now: () => new Date(0) });
  readonly calls: string[] = [];

  async put(key: string, bytes: Uint8Array): Promise<void> {
    await this.inner.put(key, bytes);
  }

  async head(key: string): Promise<ObjectInfo | undefined> {
    this.calls.push(`head ${key}`);
    return this.inner.head(key);
  }

  async getRange(key: string, start: number, endInclusive: number): Promise<Uint8Array> {
    this.calls.push(`getRange ${start}-${endInclusive}`);
    return this.inner.getRange(key, start, endInclusive);
  }
}

async function parquetFilesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile() && e.name.endsWith('.parquet'))
    .map((e) => join(e.parentPath, e.name))
    .sort();
}

const ALL_TYPES_SQL = `SELECT
  (i % 100)::TINYINT AS i8, i::SMALLINT AS i16, i::INTEGER AS i32, (i * 1000000000000)::BIGINT AS i64,
  (i % 200)::UTINYINT AS u8, i::USMALLINT AS u16, i::UINTEGER AS u32, i::UBIGINT AS u64,
  (i / 3)::DECIMAL(9,2) AS d9, (i / 7)::DECIMAL(18,4) AS d18, (i / 11)::DECIMAL(38,10) AS d38,
  'v' || i AS s, ('b' || i)::BLOB AS bl, i % 2 = 0 AS flag, DATE '2024-01-01' + i::INTEGER AS dt,
  TIMESTAMP '2024-01-01' + INTERVAL (i) SECOND AS ts,
  TIMESTAMPTZ '2024-01-01 00:00:00+00' + INTERVAL (i) SECOND AS tstz,
  TIME '12:00:00' AS tm, [i::INTEGER, i::INTEGER + 1] AS li, {'a': i::INTEGER, 'b': 'x'} AS st,
  MAP {'k': i::INTEGER} AS mp, NULL::INTEGER AS nothing
  FROM range(3000) t(i)`;

describe('readFooter', () => {
  let dir: string;
  let db: DuckDb;
  const store = new RecordingStore();

  /** Writes `sql` as Parquet with DuckDB and puts the bytes into the store under `key`. */
  async function duckFile(key: string, sql: string, options: Parameters<DuckDb['writeParquet']>[2] = {}) {
    const path = join(dir, key.replaceAll('/', '_'));
    await db.writeParquet(sql, path, options);
    const bytes = new Uint8Array(await readFile(path));
    await store.put(key, bytes);
    return { path, bytes };
  }

  function column(columns: readonly ParquetColumn[], path: string): ParquetColumn | undefined {
    return columns.find((c) => c.path.join('.') === path);
  }

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'footer-test-'));
    db = await openDuckDb();
  });

  afterAll(async () => {
    db.close();
    await rm(dir, { recursive: true, force: true });
  });

  describe('files written by DuckDB', () => {
    it('derives a schema once for all files that share it, and each other schema on its own', async () => {
      // Prepare: two files of one schema (other rows), one of another, read alternately
      const a1 = await duckFile('memo/a1.parquet', 'SELECT i AS id, i::VARCHAR AS name FROM range(10) t(i)');
      const b = await duckFile('memo/b.parquet', 'SELECT i::DOUBLE AS id, [i] AS tags FROM range(7) t(i)');
      const a2 = await duckFile(
        'memo/a2.parquet',
        'SELECT i AS id, i::VARCHAR AS name FROM range(30, 99) t(i)',
      );

      // Act
      const first = await readFooter(store, 'memo/a1.parquet', a1.bytes.length);
      const other = await readFooter(store, 'memo/b.parquet', b.bytes.length);
      const second = await readFooter(store, 'memo/a2.parquet', a2.bytes.length);

      // Assess: the shared schema's derivation is reused (one frozen array), and equals a fresh one per file
      expect(second.columns).toBe(first.columns);
      expect(Object.isFrozen(first.columns)).toBe(true);
      expect([first.rows, second.rows, other.rows]).toEqual([10, 69, 7]);
      for (const [footer, bytes] of [
        [first, a1.bytes],
        [other, b.bytes],
        [second, a2.bytes],
      ] as const) {
        const root = schemaTree(parquetMetadata(bytes).schema);
        expect(footer.columns).toEqual(leafColumns(root));
        expect(footer.schemaFingerprint).toBe(schemaFingerprint(root));
      }
      expect(other.schemaFingerprint).not.toBe(first.schemaFingerprint);
      expect(other.columns.map((c) => c.path.join('.'))).toEqual(['id', 'tags.list.element']);
    });

    it('reports rows, row groups, codec and every column type of a snappy file', async () => {
      // Prepare
      const { path, bytes } = await duckFile('all/snappy.parquet', ALL_TYPES_SQL, {
        compression: 'snappy',
        rowGroupSize: 2048,
      });

      // Act
      const footer = await readFooter(store, 'all/snappy.parquet', bytes.length);

      // Assess
      expect(footer.rows).toBe(
        Number(await db.scalar(`SELECT count(*) FROM read_parquet(${sqlString(path)})`)),
      );
      expect(footer.rows).toBe(3000);
      expect(footer.rowGroups.map((g) => g.rows)).toEqual([2048, 952]);
      expect(footer.rowGroups.every((g) => g.totalByteSize > 0 && g.compressedBytes > 0)).toBe(true);
      expect(footer.codecs).toEqual(['SNAPPY']);
      expect(footer.size).toBe(bytes.length);
      expect(footer.createdBy).toMatch(/^DuckDB/);
      const cols = footer.columns;
      expect(column(cols, 'i8')).toMatchObject({
        physicalType: 'INT32',
        logicalType: { type: 'INTEGER', bitWidth: 8, isSigned: true },
      });
      expect(column(cols, 'i64')).toMatchObject({ physicalType: 'INT64', repetition: 'OPTIONAL' });
      expect(column(cols, 'u64')).toMatchObject({
        physicalType: 'INT64',
        logicalType: { type: 'INTEGER', bitWidth: 64, isSigned: false },
        convertedType: 'UINT_64',
      });
      expect(column(cols, 'd9')).toMatchObject({ physicalType: 'INT32', precision: 9, scale: 2 });
      expect(column(cols, 'd18')).toMatchObject({ physicalType: 'INT64', precision: 18, scale: 4 });
      expect(column(cols, 'd38')).toMatchObject({
        physicalType: 'FIXED_LEN_BYTE_ARRAY',
        typeLength: 16,
        precision: 38,
        scale: 10,
      });
      expect(column(cols, 's')).toMatchObject({
        physicalType: 'BYTE_ARRAY',
        logicalType: { type: 'STRING' },
      });
      expect(column(cols, 'bl')).toEqual({
        path: ['bl'],
        physicalType: 'BYTE_ARRAY',
        repetition: 'OPTIONAL',
      });
      expect(column(cols, 'flag')?.physicalType).toBe('BOOLEAN');
      expect(column(cols, 'dt')?.logicalType).toEqual({ type: 'DATE' });
      expect(column(cols, 'ts')?.logicalType).toEqual({
        type: 'TIMESTAMP',
        unit: 'MICROS',
        isAdjustedToUTC: false,
      });
      expect(column(cols, 'tstz')?.logicalType).toEqual({
        type: 'TIMESTAMP',
        unit: 'MICROS',
        isAdjustedToUTC: true,
      });
      expect(column(cols, 'tm')?.logicalType).toMatchObject({ type: 'TIME', unit: 'MICROS' });
      expect(column(cols, 'li.list.element')).toMatchObject({ physicalType: 'INT32' });
      expect(column(cols, 'st.b')).toMatchObject({ physicalType: 'BYTE_ARRAY' });
      expect(column(cols, 'mp.key_value.key')).toMatchObject({ repetition: 'REQUIRED' });
      expect(column(cols, 'nothing')).toMatchObject({ physicalType: 'INT32' });
      expect(cols).toHaveLength(24);
    });

    it('reads a file with zero rows as 0 rows with its schema', async () => {
      // Prepare
      const { bytes } = await duckFile(
        'empty/none.parquet',
        'SELECT 1::BIGINT AS id, 2::VARCHAR AS s WHERE false',
      );

      // Act
      const footer = await readFooter(store, 'empty/none.parquet', bytes.length);

      // Assess
      expect(footer.rows).toBe(0);
      expect(footer.rowGroups.reduce((n, g) => n + g.rows, 0)).toBe(0);
      expect(footer.columns.map((c) => c.path[0])).toEqual(['id', 's']);
    });

    it('gives a zstd file of the same schema the same fingerprint and reports ZSTD', async () => {
      // Prepare
      const snappy = await duckFile('same/snappy.parquet', ALL_TYPES_SQL, { compression: 'snappy' });
      const zstd = await duckFile('same/zstd.parquet', ALL_TYPES_SQL, { compression: 'zstd' });

      // Act
      const a = await readFooter(store, 'same/snappy.parquet', snappy.bytes.length);
      const b = await readFooter(store, 'same/zstd.parquet', zstd.bytes.length);

      // Assess
      expect(b.codecs).toEqual(['ZSTD']);
      expect(b.rows).toBe(3000);
      expect(b.schemaFingerprint).toBe(a.schemaFingerprint);
      expect(a.schemaFingerprint).toMatch(/^[0-9a-f]{64}$/);
    });

    it('ignores key-value metadata and field ids in the fingerprint but exposes the metadata', async () => {
      // Prepare
      const plain = await duckFile('meta/plain.parquet', 'SELECT 1::INTEGER AS a, 2::BIGINT AS b');
      const tagged = await duckFile('meta/tagged.parquet', 'SELECT 1::INTEGER AS a, 2::BIGINT AS b', {
        extraOptions: ["KV_METADATA {origin: 'test-writer'}", 'FIELD_IDS {a: 7, b: 9}'],
      });

      // Act
      const a = await readFooter(store, 'meta/plain.parquet', plain.bytes.length);
      const b = await readFooter(store, 'meta/tagged.parquet', tagged.bytes.length);

      // Assess
      expect(b.keyValueMetadata.origin).toBe('test-writer');
      expect(a.keyValueMetadata.origin).toBeUndefined();
      expect(b.schemaFingerprint).toBe(a.schemaFingerprint);
    });

    it('parts files Spark reads in another calendar, or with their own bloom filter, but not by writer stamps', async () => {
      // Prepare: one schema, four footers
      const select = 'SELECT 1::INTEGER AS a, 2::BIGINT AS b';
      const spark = "'org.apache.spark.version': '3.5.0'";
      const entries = {
        modern1: `${spark}, 'com.databricks.spark.writeTimestamp': '1'`,
        modern2: `${spark}, 'com.databricks.spark.writeTimestamp': '2'`,
        legacy: `${spark}, 'org.apache.spark.legacyDateTime': ''`,
        keyed: `${spark}, 'hoodie_min_record_key': 'k1'`,
      };
      const sizes: Record<string, number> = {};
      for (const [name, kv] of Object.entries(entries)) {
        sizes[name] = (
          await duckFile(`kv/${name}.parquet`, select, { extraOptions: [`KV_METADATA {${kv}}`] })
        ).bytes.length;
      }

      // Act
      const fp: Record<string, string> = {};
      for (const name of Object.keys(entries)) {
        fp[name] = (await readFooter(store, `kv/${name}.parquet`, sizes[name])).schemaFingerprint;
      }

      // Assess
      expect(fp.modern2).toBe(fp.modern1);
      expect(new Set([fp.modern1, fp.legacy, fp.keyed]).size).toBe(3);
    });

    it.each([
      ['a column type differs', '1::INTEGER AS a, 2::BIGINT AS b', '1::INTEGER AS a, 2::INTEGER AS b'],
      ['the timestamp unit differs', "TIMESTAMP '2024-01-01' AS t", "TIMESTAMP_MS '2024-01-01' AS t"],
      ['isAdjustedToUTC differs', "TIMESTAMP '2024-01-01' AS t", "TIMESTAMPTZ '2024-01-01 00:00:00+00' AS t"],
      ['a decimal scale differs', '1.5::DECIMAL(18,4) AS d', '1.5::DECIMAL(18,3) AS d'],
      ['a column name differs', '1::INTEGER AS a, 2::BIGINT AS b', '1::INTEGER AS a, 2::BIGINT AS c'],
      [
        'the columns are in another order',
        '1::INTEGER AS a, 2::BIGINT AS b',
        '2::BIGINT AS b, 1::INTEGER AS a',
      ],
      ['a struct gains a field', "{'x': 1} AS st", "{'x': 1, 'y': 2} AS st"],
      ['a list becomes a scalar', '[1, 2] AS v', '1 AS v'],
    ])('gives a different fingerprint when %s', async (what, before, after) => {
      // Prepare
      const key = what.replaceAll(' ', '-');
      const a = await duckFile(`diff/${key}-a.parquet`, `SELECT ${before}`);
      const b = await duckFile(`diff/${key}-b.parquet`, `SELECT ${after}`);

      // Act
      const first = await readFooter(store, `diff/${key}-a.parquet`, a.bytes.length);
      const second = await readFooter(store, `diff/${key}-b.parquet`, b.bytes.length);

      // Assess
      expect(second.schemaFingerprint).not.toBe(first.schemaFingerprint);
    });
  });

  describe('files written by Spark and delta-rs (vendored fixtures)', () => {
    it('reads every fixture file with the row count DuckDB counts', async () => {
      // Prepare
      const files = await parquetFilesUnder(FIXTURES);
      expect(files.length).toBeGreaterThan(50);
      for (const file of files)
        await store.put(relative(FIXTURES, file), new Uint8Array(await readFile(file)));

      // Act
      const footers = await Promise.all(files.map((file) => readFooter(store, relative(FIXTURES, file))));

      // Assess
      const counted = await db.rows(
        `SELECT filename, count(*) AS n FROM read_parquet([${files.map(sqlString).join(', ')}], filename = true, union_by_name = true) GROUP BY filename`,
      );
      const byFile = new Map(counted.map((r) => [relative(FIXTURES, String(r.filename)), Number(r.n)]));
      for (const footer of footers)
        expect([footer.key, footer.rows]).toEqual([footer.key, byFile.get(footer.key) ?? 0]);
      expect(footers.some((f) => f.columns.some((c) => c.physicalType === 'INT96'))).toBe(true);
    });

    it('gives all files of one table with one schema the same fingerprint, and other tables another', async () => {
      // Prepare
      const simple = await parquetFilesUnder(join(FIXTURES, 'simple_table'));
      const partitioned = await parquetFilesUnder(join(FIXTURES, 'delta-0.8.0-partitioned'));
      for (const file of [...simple, ...partitioned]) {
        await store.put(relative(FIXTURES, file), new Uint8Array(await readFile(file)));
      }

      // Act
      const simpleFps = new Set<string>();
      for (const file of simple)
        simpleFps.add((await readFooter(store, relative(FIXTURES, file))).schemaFingerprint);
      const partitionedFps = new Set<string>();
      for (const file of partitioned) {
        partitionedFps.add((await readFooter(store, relative(FIXTURES, file))).schemaFingerprint);
      }

      // Assess
      expect(simple.length).toBeGreaterThan(30);
      expect(simpleFps.size).toBe(1);
      expect(partitionedFps.size).toBe(1);
      expect([...simpleFps][0]).not.toBe([...partitionedFps][0]);
    });

    it('keeps the fingerprint of a fixed schema stable across versions of this code', async () => {
      // Prepare: simple_table's files hold one nullable bigint column `id` (Spark). Stored plans and
      // DynamoDB items carry fingerprints, so changing what is hashed must be a deliberate act.
      const [file] = await parquetFilesUnder(join(FIXTURES, 'simple_table'));
      const key = relative(FIXTURES, file ?? '');
      await store.put(key, new Uint8Array(await readFile(file ?? '')));

      // Act
      const footer = await readFooter(store, key);

      // Assess
      expect(footer.columns).toEqual([{ path: ['id'], physicalType: 'INT64', repetition: 'OPTIONAL' }]);
      expect(footer.schemaFingerprint).toBe(
        '4af971816aa2634a571f9f233b6e4e104f68744f4021e7a52ea74542d9d32157',
      );
    });
  });

  describe('reads', () => {
    it('needs one ranged read when the size is known and the footer fits in 64 KiB', async () => {
      // Prepare
      const { bytes } = await duckFile('reads/small.parquet', 'SELECT range AS id FROM range(100)');
      store.calls.length = 0;

      // Act
      await readFooter(store, 'reads/small.parquet', bytes.length);

      // Assess
      expect(store.calls).toEqual([`getRange 0-${bytes.length - 1}`]);
    });

    it('makes one HEAD first when the caller does not know the size', async () => {
      // Prepare
      const { bytes } = await duckFile('reads/headed.parquet', 'SELECT range AS id FROM range(10)');
      store.calls.length = 0;

      // Act
      const footer = await readFooter(store, 'reads/headed.parquet');

      // Assess
      expect(footer.size).toBe(bytes.length);
      expect(store.calls).toEqual(['head reads/headed.parquet', `getRange 0-${bytes.length - 1}`]);
    });

    it('needs exactly two explicit reads when the footer is longer than 64 KiB', async () => {
      // Prepare
      const columns = Array.from({ length: 1200 }, (_, i) => `range + ${i} AS column_number_${i}`).join(', ');
      const { bytes } = await duckFile('reads/wide.parquet', `SELECT ${columns} FROM range(20)`);
      store.calls.length = 0;

      // Act
      const footer = await readFooter(store, 'reads/wide.parquet', bytes.length);

      // Assess
      expect(footer.metadataLength + 8).toBeGreaterThan(FOOTER_FIRST_READ_BYTES);
      expect(footer.columns).toHaveLength(1200);
      expect(footer.rows).toBe(20);
      const firstStart = bytes.length - FOOTER_FIRST_READ_BYTES;
      const restStart = bytes.length - footer.metadataLength - 8;
      expect(store.calls).toEqual([
        `getRange ${firstStart}-${bytes.length - 1}`,
        `getRange ${restStart}-${firstStart - 1}`,
      ]);
    });

    it('reads only the last 64 KiB of a large file whose footer is small', async () => {
      // Prepare
      const { bytes } = await duckFile(
        'reads/large.parquet',
        'SELECT range AS id, md5(range::VARCHAR) AS h FROM range(20000)',
      );
      store.calls.length = 0;

      // Act
      const footer = await readFooter(store, 'reads/large.parquet', bytes.length);

      // Assess
      expect(bytes.length).toBeGreaterThan(FOOTER_FIRST_READ_BYTES);
      expect(footer.rows).toBe(20000);
      expect(store.calls).toEqual([`getRange ${bytes.length - FOOTER_FIRST_READ_BYTES}-${bytes.length - 1}`]);
    });

    it('raises ObjectNotFoundError when the size is not given and the object does not exist', async () => {
      // Act
      const result = readFooter(store, 'reads/missing.parquet');

      // Assess
      await expect(result).rejects.toBeInstanceOf(ObjectNotFoundError);
    });
  });

  describe('damaged and foreign input', () => {
    let good: Uint8Array;

    beforeAll(async () => {
      good = (await duckFile('bad/good.parquet', 'SELECT range AS id, range::VARCHAR AS s FROM range(500)'))
        .bytes;
    });

    /** Puts `bytes` under `key`, reads its footer and returns the CorruptInputError it must raise. */
    async function corruptionOf(
      key: string,
      bytes: Uint8Array,
      size = bytes.length,
    ): Promise<CorruptInputError> {
      await store.put(key, bytes);
      const error = await readFooter(store, key, size).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(error).toBeInstanceOf(CorruptInputError);
      const corrupt = error as CorruptInputError;
      expect(corrupt.key).toBe(key);
      expect(corrupt.message).toContain(key);
      expect(corrupt.name).toBe('CorruptInputError');
      return corrupt;
    }

    it.each([0, 4, 11])('rejects a %i-byte file as too small to be Parquet', async (length) => {
      // Prepare
      const bytes = good.slice(0, length);

      // Act
      const error = await corruptionOf(`bad/tiny-${length}.parquet`, bytes);

      // Assess
      expect(error.reason).toMatch(/^not a Parquet file: \d+ bytes is shorter than the 12-byte minimum/);
    });

    it('says "not a Parquet file" for a CSV file and for random bytes', async () => {
      // Prepare
      const csv = new TextEncoder().encode('user_id,event_type\n1,click\n2,view\n');
      const random = Uint8Array.from({ length: 4096 }, (_, i) => (i * 2654435761) >>> 24);

      // Act
      const csvError = await corruptionOf('bad/data.csv', csv);
      const randomError = await corruptionOf('bad/random.bin', random);

      // Assess
      expect(csvError.reason).toMatch(/^not a Parquet file: magic bytes at the end are .*expected "PAR1"/);
      expect(randomError.reason).toMatch(/^not a Parquet file: magic bytes/);
    });

    it('rejects a file cut in the middle and a file with the last bytes of its footer cut', async () => {
      // Act
      const half = await corruptionOf('bad/half.parquet', good.slice(0, Math.floor(good.length / 2)));
      const cutTail = await corruptionOf('bad/cut-tail.parquet', good.slice(0, good.length - 3));

      // Assess
      expect(half.reason).toMatch(/magic bytes at the end/);
      expect(cutTail.reason).toMatch(/magic bytes at the end/);
    });

    it('rejects a file whose leading magic is wrong', async () => {
      // Prepare
      const bytes = good.slice();
      bytes.set([0x50, 0x4b, 0x03, 0x04], 0);

      // Act
      const error = await corruptionOf('bad/lead.parquet', bytes);

      // Assess
      expect(error.reason).toMatch(/^not a Parquet file: magic bytes at the start are 50 4b 03 04/);
    });

    it('rejects a footer length larger than the file', async () => {
      // Prepare
      const bytes = good.slice();
      new DataView(bytes.buffer).setUint32(bytes.length - 8, bytes.length, true);

      // Act
      const error = await corruptionOf('bad/length.parquet', bytes);

      // Assess
      expect(error.reason).toMatch(/footer length \d+ does not fit in a file of \d+ bytes/);
    });

    it('rejects metadata that is not valid Thrift', async () => {
      // Prepare
      const bytes = good.slice();
      const length = new DataView(bytes.buffer).getUint32(bytes.length - 8, true);
      bytes.fill(0xff, bytes.length - 8 - length, bytes.length - 8);

      // Act
      const error = await corruptionOf('bad/thrift.parquet', bytes);

      // Assess
      expect(error.reason).toMatch(/unreadable footer metadata|malformed schema/);
    });

    it('rejects a file whose data was cut out while the footer stayed intact', async () => {
      // Prepare: keep the leading magic and the footer, drop everything between.
      const length = new DataView(good.buffer).getUint32(good.length - 8, true);
      const spliced = new Uint8Array(4 + length + 8);
      spliced.set(good.subarray(0, 4), 0);
      spliced.set(good.subarray(good.length - length - 8), 4);

      // Act
      const error = await corruptionOf('bad/spliced.parquet', spliced);

      // Assess
      expect(error.reason).toMatch(/outside the data region/);
    });

    it('rejects an object shorter than the size its listing gave', async () => {
      // Act
      const error = await corruptionOf('bad/shrunk.parquet', good.slice(0, 100), good.length);

      // Assess
      expect(error.reason).toMatch(/shorter than its listed size/);
    });
  });
});

describe('assertParquetMagic', () => {
  it('accepts PAR1 at both ends and rejects a missing trailing magic', () => {
    // Prepare
    const ok = new TextEncoder().encode('PAR1........PAR1');
    const bad = new TextEncoder().encode('PAR1........PAR2');

    // Act
    const accept = () => assertParquetMagic('k', ok);
    const reject = () => assertParquetMagic('k', bad);

    // Assess
    expect(accept).not.toThrow();
    expect(reject).toThrow(CorruptInputError);
  });
});

describe('normalizedLogicalType', () => {
  it('maps legacy converted types to the logical types newer writers write', () => {
    // Act
    const utf8 = normalizedLogicalType({ name: 's', type: 'BYTE_ARRAY', converted_type: 'UTF8' });
    const millis = normalizedLogicalType({ name: 't', type: 'INT64', converted_type: 'TIMESTAMP_MILLIS' });
    const dec = normalizedLogicalType({
      name: 'd',
      type: 'INT64',
      converted_type: 'DECIMAL',
      precision: 18,
      scale: 4,
    });
    const u16 = normalizedLogicalType({ name: 'u', type: 'INT32', converted_type: 'UINT_16' });

    // Assess
    expect(utf8).toEqual(
      normalizedLogicalType({ name: 's', type: 'BYTE_ARRAY', logical_type: { type: 'STRING' } }),
    );
    expect(millis).toEqual({ type: 'TIMESTAMP', unit: 'MILLIS', isAdjustedToUTC: true });
    expect(dec).toEqual({ type: 'DECIMAL', precision: 18, scale: 4 });
    expect(u16).toEqual({ type: 'INTEGER', bitWidth: 16, isSigned: false });
  });

  it('prefers the logical type over the converted type when both are written', () => {
    // Act
    const local = normalizedLogicalType({
      name: 't',
      type: 'INT64',
      converted_type: 'TIMESTAMP_MICROS',
      logical_type: { type: 'TIMESTAMP', unit: 'MICROS', isAdjustedToUTC: false },
    });

    // Assess
    expect(local).toEqual({ type: 'TIMESTAMP', unit: 'MICROS', isAdjustedToUTC: false });
  });
});
