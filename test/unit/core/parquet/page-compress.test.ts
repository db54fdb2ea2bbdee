// Proves page compression after the encoder (core/parquet/page-compress.ts) turns an UNCOMPRESSED Parquet file into
// a valid compressed one: every reader the project uses (DuckDB, parquet-wasm, hyparquet) reads the same rows from it
// as from the input, for every physical type, nulls, nested columns, dictionary and plain pages, data page v1 and v2,
// with page indexes; the footer's offsets and sizes, the offset indexes and the page headers agree with the bytes.
// The compressor is injected: gzip (every runtime has it, and GZIP is a Parquet codec) and the native ZSTD package.

import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { crc32, gunzipSync, gzip } from 'node:zlib';
import { parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nativeZstd } from '../../../../functions/adapters/parquet-wasm/native-zstd.js';
import { pw } from '../../../../functions/adapters/parquet-wasm/wasm.js';
import { PARQUET_MAGIC } from '../../../../functions/core/parquet/footer.js';
import {
  compressPages,
  PARQUET_GZIP,
  PARQUET_ZSTD,
  type PageCodec,
  PageCompressionError,
} from '../../../../functions/core/parquet/page-compress.js';
import {
  decodeStruct,
  encodeStruct,
  field,
  T,
  type ThriftList,
  type ThriftStruct,
} from '../../../../functions/core/parquet/thrift-compact.js';
import { type DuckWorkspace, duckWorkspace } from '../../adapters/parquet-wasm/helpers.js';

const gzipAsync = promisify(gzip);
const GZIP: PageCodec = { codecId: PARQUET_GZIP, compress: async (b) => new Uint8Array(await gzipAsync(b)) };

let duck: DuckWorkspace;
beforeAll(async () => {
  duck = await duckWorkspace();
});
afterAll(async () => {
  await duck.close();
});

/**
 * Rows per input, and per row group: small, because every reader reads each output whole (hyparquet, in JS, is the
 * slowest), while the writer settings below still give every chunk several pages, a dictionary that falls back to
 * plain pages part-way, and three row groups.
 */
const ROWS = 1_200;
const ROW_GROUP_ROWS = 500;

/** Every physical type the engine writes (INT96 is converted before), nulls, nested lists and structs. */
const ALL_TYPES = `SELECT i::BIGINT AS id,
    (i % 3 = 0) AS flag,
    (i % 120)::TINYINT AS tiny,
    CASE WHEN i % 11 = 0 THEN NULL ELSE (i * 7)::INTEGER END AS int32,
    (i * 1000003)::BIGINT AS int64,
    (i / 8.0)::FLOAT AS f32,
    CASE WHEN i % 13 = 0 THEN NULL ELSE i * 1.25 END AS f64,
    (i / 1000.0)::DECIMAL(18, 3) AS dec18,
    (i * 12345.67)::DECIMAL(38, 2) AS dec38,
    CASE WHEN i % 7 = 0 THEN NULL ELSE 'value-' || (i % 500) END AS dict_string,
    md5(i::VARCHAR) AS plain_string,
    ('blob' || i)::BLOB AS bin,
    DATE '2024-01-01' + (i % 400)::INTEGER AS day,
    make_timestamp(1704067200000000 + i * 1000) AS ts,
    CASE WHEN i % 9 = 0 THEN NULL ELSE [i, i + 1, NULL] END AS ints,
    {'x': i % 17, 'y': CASE WHEN i % 4 = 0 THEN NULL ELSE 's' || i END} AS pair,
    [{'k': 'a' || (i % 3), 'v': [i]}] AS nested
  FROM range(${ROWS}) t(i)`;

/**
 * The input, written UNCOMPRESSED by parquet-wasm (as the engine's encoder would) from DuckDB's rows: pages of at
 * most 1 KiB, checked every 100 rows, so a chunk has several (and its offset index several entries); a dictionary
 * page of at most 2 KiB, so the long strings' dictionaries fall back to plain pages within a chunk.
 */
async function uncompressedInput(options: { v2: boolean; dictionary: boolean }): Promise<Uint8Array> {
  const source = await duck.parquet(ALL_TYPES, { compression: 'snappy', rowGroupSize: ROW_GROUP_ROWS });
  const table = pw.readParquet(source);
  let builder = new pw.WriterPropertiesBuilder()
    .setCompression(pw.Compression.UNCOMPRESSED)
    .setStatisticsEnabled(pw.EnabledStatistics.Page)
    .setMaxRowGroupSize(ROW_GROUP_ROWS)
    .setWriteBatchSize(100)
    .setDataPageSizeLimit(1024)
    .setDictionaryPageSizeLimit(2 * 1024)
    .setDictionaryEnabled(options.dictionary);
  if (options.v2) builder = builder.setWriterVersion(pw.WriterVersion.V2);
  return pw.writeParquet(table, builder.build());
}

async function* cut(bytes: Uint8Array, sizes: readonly number[]): AsyncGenerator<Uint8Array> {
  let at = 0;
  let i = 0;
  while (at < bytes.length) {
    const n = sizes[i++ % sizes.length] as number;
    yield bytes.slice(at, at + n);
    at += n;
  }
}

async function collect(stream: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const p of stream) parts.push(p);
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function num(s: ThriftStruct, id: number): number | undefined {
  const v = field(s, id)?.value;
  return typeof v === 'bigint' ? Number(v) : typeof v === 'number' ? v : undefined;
}
function sub(s: ThriftStruct, id: number): ThriftStruct {
  return field(s, id)?.value as ThriftStruct;
}
function items(s: ThriftStruct, id: number): ThriftStruct[] {
  return ((field(s, id)?.value as ThriftList | undefined)?.items ?? []) as ThriftStruct[];
}

function metadataOf(file: Uint8Array): ThriftStruct {
  const length = new DataView(file.buffer, file.byteOffset).getUint32(file.length - 8, true);
  return decodeStruct(file.subarray(file.length - 8 - length, file.length - 8)).struct;
}

interface Layout {
  readonly codecs: Set<number>;
  readonly pageTypes: Set<number>;
  offsetIndexes: number;
  columnIndexes: number;
  rowGroups: number;
  /** The most data pages one column chunk holds. */
  maxDataPages: number;
  /** Column chunks with a dictionary page and data pages not dictionary-encoded (the dictionary's fallback). */
  dictionaryFallbacks: number;
  /** Version-2 pages: their (header, levels, body) for a check against the input's. */
  readonly v2Pages: { compressed: boolean | undefined; levels: Uint8Array }[];
}

/**
 * Walks every column chunk of `file` from its footer: its pages, header by header, must tile
 * [start, start + total_compressed_size) exactly, the dictionary page sit at dictionary_page_offset, a data page at
 * data_page_offset, total_uncompressed_size add up from the headers, and every offset index entry name a page start
 * with that page's size; column indexes must decode where the footer says. Fails the test otherwise.
 */
function checkLayout(file: Uint8Array): Layout {
  expect(file.subarray(0, 4)).toEqual(PARQUET_MAGIC);
  expect(file.subarray(file.length - 4)).toEqual(PARQUET_MAGIC);
  const meta = metadataOf(file);
  const layout: Layout = {
    codecs: new Set(),
    pageTypes: new Set(),
    offsetIndexes: 0,
    columnIndexes: 0,
    rowGroups: 0,
    maxDataPages: 0,
    dictionaryFallbacks: 0,
    v2Pages: [],
  };
  const footerStart =
    file.length - 8 - new DataView(file.buffer, file.byteOffset).getUint32(file.length - 8, true);
  for (const rg of items(meta, 4)) {
    layout.rowGroups++;
    let compressedSum = 0;
    for (const cc of items(rg, 1)) {
      const md = sub(cc, 3);
      layout.codecs.add(num(md, 4) as number);
      const dataOffset = num(md, 9) as number;
      const dictOffset = num(md, 11);
      const start = dictOffset ?? dataOffset;
      const length = num(md, 7) as number;
      compressedSum += length;
      const starts = new Map<number, number>();
      let at = start;
      let uncompressed = 0;
      let dataPages = 0;
      let plainAfterDictionary = false;
      while (at < start + length) {
        const { struct: header, end } = decodeStruct(file, at);
        const type = num(header, 1) as number;
        layout.pageTypes.add(type);
        if (type === 0 || type === 3) {
          dataPages++;
          // Field 2 of a v1 data page header, field 4 of a v2 one; 2 and 8 are the dictionary encodings.
          const encoding = type === 0 ? num(sub(header, 5), 2) : num(sub(header, 8), 4);
          if (dictOffset !== undefined && encoding !== 2 && encoding !== 8) plainAfterDictionary = true;
        }
        const size = num(header, 3) as number;
        starts.set(at, end - at + size);
        uncompressed += end - at + (num(header, 2) as number);
        if (at === dictOffset) expect(type).toBe(2);
        if (at === dataOffset) expect([0, 3]).toContain(type);
        if (type === 3) {
          const v2 = sub(header, 8);
          const levels = (num(v2, 5) ?? 0) + (num(v2, 6) ?? 0);
          const flag = field(v2, 7);
          layout.v2Pages.push({
            compressed: flag === undefined ? undefined : flag.value === true,
            levels: file.slice(end, end + levels),
          });
        }
        at = end + size;
      }
      expect(at).toBe(start + length);
      layout.maxDataPages = Math.max(layout.maxDataPages, dataPages);
      if (plainAfterDictionary) layout.dictionaryFallbacks++;
      expect(starts.has(dataOffset)).toBe(true);
      expect(num(md, 6)).toBe(uncompressed);
      const oi = num(cc, 4);
      if (oi !== undefined) {
        layout.offsetIndexes++;
        expect(oi + (num(cc, 5) as number)).toBeLessThanOrEqual(footerStart);
        const index = decodeStruct(file.subarray(oi, oi + (num(cc, 5) as number))).struct;
        const locations = items(index, 1);
        expect(locations.length).toBeGreaterThan(0);
        for (const loc of locations) expect(starts.get(num(loc, 1) as number)).toBe(num(loc, 2));
      }
      const ci = num(cc, 6);
      if (ci !== undefined) {
        layout.columnIndexes++;
        const { end } = decodeStruct(file, ci);
        expect(end - ci).toBe(num(cc, 7));
      }
    }
    expect(num(rg, 6)).toBe(compressedSum);
  }
  return layout;
}

/** Rows of `a` not in `b` and of `b` not in `a`, counted as multisets by DuckDB. */
async function duckDifference(a: Uint8Array, b: Uint8Array): Promise<number> {
  const pa = join(duck.dir, `a-${Math.random()}.parquet`);
  const pb = join(duck.dir, `b-${Math.random()}.parquet`);
  await writeFile(pa, a);
  await writeFile(pb, b);
  return Number(
    await duck.db.scalar(
      `SELECT count(*) FROM ((SELECT * FROM read_parquet('${pa}') EXCEPT ALL SELECT * FROM read_parquet('${pb}'))
        UNION ALL (SELECT * FROM read_parquet('${pb}') EXCEPT ALL SELECT * FROM read_parquet('${pa}')))`,
    ),
  );
}

/** The rows as hyparquet reads them, as JSON (bigints and bytes spelled out). */
async function hyparquetRows(file: Uint8Array): Promise<string> {
  const buffer = file.buffer.slice(file.byteOffset, file.byteOffset + file.length) as ArrayBuffer;
  const rows = await parquetReadObjects({ file: buffer, compressors });
  return JSON.stringify(rows, (_k, v) =>
    typeof v === 'bigint' ? `${v}n` : v instanceof Uint8Array ? Array.from(v) : v,
  );
}

/**
 * The rows as parquet-wasm decodes them: the SHA-256 of their Arrow IPC stream. A digest, because `toEqual` on
 * typed arrays compares element by element in JS, which took most of this file's time on a few hundred KB.
 */
function parquetWasmRows(file: Uint8Array): string {
  const table = pw.readParquet(file);
  return sha256(table.intoIPCStream());
}

function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

describe('compressPages', () => {
  for (const v2 of [false, true]) {
    for (const dictionary of [true, false]) {
      it(`turns an uncompressed file (data page v${v2 ? 2 : 1}, dictionary ${dictionary ? 'on' : 'off'}, page indexes) into a GZIP file every reader reads row for row`, async () => {
        // Prepare
        const input = await uncompressedInput({ v2, dictionary });

        // Act
        const output = await collect(compressPages(cut(input, [1, 7, 4096, 65_536, 333_333]), GZIP));

        // Assess
        const layout = checkLayout(output);
        expect([...layout.codecs]).toEqual([PARQUET_GZIP]);
        expect(layout.pageTypes.has(v2 ? 3 : 0)).toBe(true);
        expect(layout.pageTypes.has(v2 ? 0 : 3)).toBe(false);
        expect(layout.pageTypes.has(2)).toBe(dictionary);
        expect(layout.offsetIndexes).toBeGreaterThan(0);
        expect(layout.columnIndexes).toBeGreaterThan(0);
        expect(layout.rowGroups).toBe(Math.ceil(ROWS / ROW_GROUP_ROWS));
        expect(layout.maxDataPages).toBeGreaterThan(2);
        expect(layout.dictionaryFallbacks > 0).toBe(dictionary);
        expect(output.length).toBeLessThan(input.length);
        expect(await duckDifference(input, output)).toBe(0);
        expect(parquetWasmRows(output)).toBe(parquetWasmRows(input));
        expect(await hyparquetRows(output)).toBe(await hyparquetRows(input));
        if (v2) {
          // Levels stay as they were, uncompressed; values are flagged compressed.
          const before = checkLayout(input).v2Pages;
          expect(layout.v2Pages.map((p) => sha256(p.levels))).toEqual(before.map((p) => sha256(p.levels)));
          expect(layout.v2Pages.some((p) => p.compressed === true)).toBe(true);
        }
      });
    }
  }

  it('writes the same bytes however the stream is cut', async () => {
    // Prepare
    const input = await uncompressedInput({ v2: false, dictionary: true });

    // Act
    const whole = await collect(compressPages(cut(input, [input.length]), GZIP, { maxPagesInFlight: 1 }));
    const bytewise = await collect(
      compressPages(cut(input, [1, 2, 3, 5, 8, 13]), GZIP, { maxPagesInFlight: 3 }),
    );

    // Assess
    expect(sha256(bytewise)).toBe(sha256(whole));
    expect(bytewise.length).toBe(whole.length);
  });

  it('writes a ZSTD file with the native package that DuckDB, parquet-wasm and hyparquet read as the input', async () => {
    // Prepare
    const input = await uncompressedInput({ v2: false, dictionary: true });
    const zstd = await nativeZstd({ prefer: '@mongodb-js/zstd' });
    if (zstd === undefined) throw new Error('@mongodb-js/zstd is a dependency: it must load');

    // Act
    const output = await collect(compressPages(cut(input, [1 << 20]), zstd));

    // Assess
    expect([...checkLayout(output).codecs]).toEqual([PARQUET_ZSTD]);
    expect(await duckDifference(input, output)).toBe(0);
    expect(parquetWasmRows(output)).toBe(parquetWasmRows(input));
    expect(await hyparquetRows(output)).toBe(await hyparquetRows(input));
  });

  it('recomputes a page CRC over the compressed body', async () => {
    // Prepare: one dictionary-less INT32 page carrying a CRC, in a minimal file.
    const values = new Uint8Array(new Int32Array([1, 2, 3, 4]).buffer);
    const header: ThriftStruct = {
      fields: [
        { id: 1, type: T.I32, value: 0 },
        { id: 2, type: T.I32, value: values.length },
        { id: 3, type: T.I32, value: values.length },
        { id: 4, type: T.I32, value: crc32(values) | 0 },
        {
          id: 5,
          type: T.STRUCT,
          value: {
            fields: [
              { id: 1, type: T.I32, value: 4 },
              { id: 2, type: T.I32, value: 0 },
              { id: 3, type: T.I32, value: 3 },
              { id: 4, type: T.I32, value: 3 },
            ],
          },
        },
      ],
    };
    const headerBytes = encodeStruct(header);
    const chunkLength = headerBytes.length + values.length;
    const meta: ThriftStruct = {
      fields: [
        { id: 1, type: T.I32, value: 1 },
        {
          id: 4,
          type: T.LIST,
          value: {
            elementType: T.STRUCT,
            items: [
              {
                fields: [
                  {
                    id: 1,
                    type: T.LIST,
                    value: {
                      elementType: T.STRUCT,
                      items: [
                        {
                          fields: [
                            { id: 2, type: T.I64, value: 0n },
                            {
                              id: 3,
                              type: T.STRUCT,
                              value: {
                                fields: [
                                  { id: 1, type: T.I32, value: 1 },
                                  { id: 4, type: T.I32, value: 0 },
                                  { id: 5, type: T.I64, value: 4n },
                                  { id: 6, type: T.I64, value: BigInt(chunkLength) },
                                  { id: 7, type: T.I64, value: BigInt(chunkLength) },
                                  { id: 9, type: T.I64, value: 4n },
                                ],
                              },
                            },
                          ],
                        },
                      ],
                    },
                  },
                  { id: 2, type: T.I64, value: BigInt(chunkLength) },
                  { id: 3, type: T.I64, value: 4n },
                ],
              },
            ],
          },
        },
      ],
    };
    const footer = encodeStruct(meta);
    const file = new Uint8Array([
      ...PARQUET_MAGIC,
      ...headerBytes,
      ...values,
      ...footer,
      0,
      0,
      0,
      0,
      ...PARQUET_MAGIC,
    ]);
    new DataView(file.buffer).setUint32(file.length - 8, footer.length, true);

    // Act
    const output = await collect(compressPages(cut(file, [file.length]), GZIP));

    // Assess
    const { struct: page, end } = decodeStruct(output, 4);
    const body = output.subarray(end, end + (num(page, 3) as number));
    expect(num(page, 4)).toBe(crc32(body) | 0);
    expect(new Uint8Array(gunzipSync(body))).toEqual(values);
    expect(num(sub(items(items(metadataOf(output), 4)[0] as ThriftStruct, 1)[0] as ThriftStruct, 3), 7)).toBe(
      end - 4 + body.length,
    );
  });

  it('refuses a file whose pages the encoder already compressed', async () => {
    // Prepare
    const source = await duck.parquet('SELECT i FROM range(1000) t(i)', { compression: 'snappy' });

    // Act
    const attempt = collect(compressPages(cut(source, [source.length]), GZIP));

    // Assess
    await expect(attempt).rejects.toBeInstanceOf(PageCompressionError);
  });
});
