// Proves the rewrite with `pageCompression: 'native'` (pages written uncompressed by parquet-wasm, compressed by a
// native ZSTD as they stream out) keeps every row: DuckDB reads the same row multiset from its outputs as from the
// inputs and as from the encoder-compressed rewrite, verify (the engine's own reader) passes them, on one thread and
// on workers; a flipped byte in a natively compressed page is caught by verify; and each native ZSTD this runtime
// has (the @mongodb-js/zstd package always; node:zlib's from Node.js 22.15) makes files DuckDB reads identically.

import * as zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { nativeZstd } from '../../../../functions/adapters/parquet-wasm/native-zstd.js';
import { rewriteGroup } from '../../../../functions/adapters/parquet-wasm/rewrite.js';
import { verifyOutputs } from '../../../../functions/adapters/parquet-wasm/verify.js';
import { pw } from '../../../../functions/adapters/parquet-wasm/wasm.js';
import { CorruptInputError, VerificationError } from '../../../../functions/core/errors.js';
import { readFooter } from '../../../../functions/core/parquet/footer.js';
import { compressPages, PARQUET_ZSTD } from '../../../../functions/core/parquet/page-compress.js';
import {
  decodeStruct,
  field,
  type ThriftList,
  type ThriftStruct,
} from '../../../../functions/core/parquet/thrift-compact.js';
import type { RewriteOptions, WrittenOutput } from '../../../../functions/ports/parquet-engine.js';
import { type DuckWorkspace, duckWorkspace, fileOf } from './helpers.js';

let duck: DuckWorkspace;
beforeAll(async () => {
  duck = await duckWorkspace();
});
afterAll(async () => {
  await duck.close();
});

/** How many inputs each source store holds (named by KEYS). */
const inputCount = new WeakMap<MemoryObjectStore, number>();
const KEYS = (files: number) => Array.from({ length: files }, (_, f) => `in/part-${f}.parquet`);

/** Inputs of every physical type the engine writes, with nulls and nested columns; seeded per file. */
function inputSelect(seed: number, rows: number): string {
  return `SELECT (i + ${seed})::BIGINT AS id,
    ((i + ${seed}) % 3 = 0) AS flag,
    CASE WHEN i % 11 = 0 THEN NULL ELSE (i * 7 + ${seed})::INTEGER END AS int32,
    ((i + ${seed}) / 8.0)::FLOAT AS f32,
    CASE WHEN i % 13 = 0 THEN NULL ELSE ((i + ${seed}) * 1.25)::DOUBLE END AS f64,
    ((i + ${seed}) * 12345.67)::DECIMAL(38, 2) AS dec38,
    CASE WHEN i % 7 = 0 THEN NULL ELSE 'value-' || ((i + ${seed}) % 500) END AS dict_string,
    md5((i + ${seed})::VARCHAR) AS plain_string,
    ('blob' || i)::BLOB AS bin,
    make_timestamp(1704067200000000 + (i + ${seed}) * 1000) AS ts,
    CASE WHEN i % 9 = 0 THEN NULL ELSE [i, i + 1, NULL] END AS ints,
    {'x': i % 17, 'y': CASE WHEN i % 4 = 0 THEN NULL ELSE 's' || i END} AS pair
  FROM range(${rows}) t(i)`;
}

async function inputs(files: number, rows: number): Promise<MemoryObjectStore> {
  const source = new MemoryObjectStore();
  for (let f = 0; f < files; f++) {
    await source.put(`in/part-${f}.parquet`, await duck.parquet(inputSelect(f * 100_000, rows)));
  }
  inputCount.set(source, files);
  return source;
}

async function rewrite(
  source: MemoryObjectStore,
  options: Partial<RewriteOptions>,
): Promise<{
  target: MemoryObjectStore;
  outputs: readonly WrittenOutput[];
  result: Awaited<ReturnType<typeof rewriteGroup>>;
}> {
  const target = new MemoryObjectStore();
  const files = await Promise.all(KEYS(inputCount.get(source) ?? 0).map((key) => fileOf(source, key)));
  const result = await rewriteGroup(
    { source, target },
    { groupId: 'g', files, expectedOutputFiles: 2 },
    { outputKey: (i) => `out/part-${i}.parquet`, rowGroupRows: 5_000, batchRows: 2_000, ...options },
  );
  return { target, outputs: result.outputs, result };
}

/** Rows in one set of files and not the other, both ways, as multisets (DuckDB). */
async function difference(a: string, b: string): Promise<number> {
  return Number(
    await duck.db.scalar(
      `SELECT count(*) FROM ((SELECT * FROM read_parquet(${a}) EXCEPT ALL SELECT * FROM read_parquet(${b}))
        UNION ALL (SELECT * FROM read_parquet(${b}) EXCEPT ALL SELECT * FROM read_parquet(${a})))`,
    ),
  );
}

describe("rewriteGroup with pageCompression: 'native'", () => {
  for (const workers of [1, 2]) {
    it(`writes ZSTD outputs with the inputs' rows, read by DuckDB and passed by verify (${workers} worker${workers > 1 ? 's' : ''})`, async () => {
      // Prepare
      const source = await inputs(4, 6_000);

      // Act
      const native = await rewrite(source, { pageCompression: 'native', workers });
      const encoder = await rewrite(source, { workers });

      // Assess
      const inputList = await duck.materialise(source, KEYS(4));
      const nativeList = await duck.materialise(
        native.target,
        native.outputs.map((o) => o.key),
      );
      const encoderList = await duck.materialise(
        encoder.target,
        encoder.outputs.map((o) => o.key),
      );
      expect(native.outputs.reduce((n, o) => n + o.rows, 0)).toBe(24_000);
      expect(await difference(inputList, nativeList)).toBe(0);
      expect(await difference(encoderList, nativeList)).toBe(0);
      const codecs = await duck.db.rows(`SELECT DISTINCT compression FROM parquet_metadata(${nativeList})`);
      expect(codecs).toEqual([{ compression: 'ZSTD' }]);
      for (const o of native.outputs)
        expect((await readFooter(native.target, o.key)).codecs).toEqual(['ZSTD']);
      const report = await verifyOutputs(native.target, native.outputs, native.result.fingerprint);
      expect(report.fingerprint.hash).toBe(native.result.fingerprint.hash);
      expect(native.result.fingerprint.hash).toBe(encoder.result.fingerprint.hash);
    });
  }

  it('has verify catch a flipped byte inside a natively compressed page', async () => {
    // Prepare: flip a byte in the middle of the largest page of the first output.
    const source = await inputs(2, 6_000);
    const { target, outputs, result } = await rewrite(source, { pageCompression: 'native' });
    const out = outputs[0] as WrittenOutput;
    const bytes = new Uint8Array(await target.get(out.key));
    const length = new DataView(bytes.buffer, bytes.byteOffset).getUint32(bytes.length - 8, true);
    const meta = decodeStruct(bytes.subarray(bytes.length - 8 - length, bytes.length - 8)).struct;
    const list = (s: ThriftStruct, id: number) =>
      ((field(s, id)?.value as ThriftList | undefined)?.items ?? []) as ThriftStruct[];
    let largest = { start: 0, size: 0 };
    for (const cc of list(list(meta, 4)[0] as ThriftStruct, 1)) {
      const md = field(cc, 3)?.value as ThriftStruct;
      const at = Number(field(md, 9)?.value);
      const { struct: header, end } = decodeStruct(bytes, at);
      const size = field(header, 3)?.value as number;
      if (size > largest.size) largest = { start: end, size };
    }
    const at = largest.start + Math.floor(largest.size / 2);
    bytes[at] = (bytes[at] as number) ^ 0x5a;
    await target.put(out.key, bytes);
    const tampered = { ...out, etag: (await target.head(out.key))?.etag as string };

    // Act
    const outcome = await verifyOutputs(target, [tampered, ...outputs.slice(1)], result.fingerprint).then(
      () => undefined,
      (err: unknown) => err,
    );

    // Assess
    expect(largest.size).toBeGreaterThan(100);
    expect(outcome instanceof VerificationError || outcome instanceof CorruptInputError).toBe(true);
  });
});

describe('native ZSTD sources', () => {
  it('uses node:zlib where the runtime has ZSTD, else the package, and both make files DuckDB reads identically', async () => {
    // Prepare
    const runtimeHasZstd = typeof (zlib as unknown as { zstdCompress?: unknown }).zstdCompress === 'function';
    const fromPackage = await nativeZstd({ prefer: '@mongodb-js/zstd' });
    const fromZlib = await nativeZstd({ prefer: 'node:zlib' });
    const source = await duck.parquet(inputSelect(0, 20_000));
    const uncompressed = pw.writeParquet(
      pw.readParquet(source),
      new pw.WriterPropertiesBuilder()
        .setCompression(pw.Compression.UNCOMPRESSED)
        .setStatisticsEnabled(pw.EnabledStatistics.Page)
        .build(),
    );

    // Act
    const chosen = await nativeZstd();
    const written = [];
    for (const codec of [fromPackage, fromZlib]) {
      if (codec === undefined) continue;
      const parts: Uint8Array[] = [];
      for await (const p of compressPages(
        (async function* () {
          yield uncompressed;
        })(),
        codec,
      ))
        parts.push(p);
      const key = `zstd-${codec.source}.parquet`;
      const store = new MemoryObjectStore();
      await store.put(key, Buffer.concat(parts));
      written.push(await duck.materialise(store, [key]));
    }

    // Assess
    expect(fromPackage?.source).toBe('@mongodb-js/zstd');
    expect(fromZlib?.source).toBe(runtimeHasZstd ? 'node:zlib' : undefined);
    expect(chosen?.source).toBe(runtimeHasZstd ? 'node:zlib' : '@mongodb-js/zstd');
    expect(chosen?.codecId).toBe(PARQUET_ZSTD);
    const sourceStore = new MemoryObjectStore();
    await sourceStore.put('source.parquet', source);
    const sourceList = await duck.materialise(sourceStore, ['source.parquet']);
    expect(written.length).toBe(runtimeHasZstd ? 2 : 1);
    for (const list of written) expect(await difference(sourceList, list)).toBe(0);
    if (written.length === 2) expect(await difference(written[0] as string, written[1] as string)).toBe(0);
  });
});
