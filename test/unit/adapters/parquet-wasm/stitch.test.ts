// Proves row-group stitching: inputs with large row groups in the target's codec and encodings are copied page
// for page into outputs DuckDB and hyparquet read row for row, with valid page indexes and bloom filters; small,
// other-codec, other-encoding or flagged inputs are re-encoded; and verify catches a stitched offset gone wrong.

import { parquetReadObjects } from 'hyparquet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { rewriteGroup } from '../../../../functions/adapters/parquet-wasm/rewrite.js';
import { composesInStore } from '../../../../functions/adapters/parquet-wasm/stitch.js';
import { verifyOutputs } from '../../../../functions/adapters/parquet-wasm/verify.js';
import { pw } from '../../../../functions/adapters/parquet-wasm/wasm.js';
import { CorruptInputError, VerificationError } from '../../../../functions/core/errors.js';
import {
  auxSpanOf,
  metadataBytesOf,
  pageTypeOf,
  StitchAssembler,
  type StitchSource,
  stitchSourceOf,
} from '../../../../functions/core/parquet/stitch.js';
import {
  decodeStruct,
  encodeStruct,
  field,
  type ThriftField,
  type ThriftList,
  type ThriftStruct,
} from '../../../../functions/core/parquet/thrift-compact.js';
import type { ComposedPiece, ObjectStore } from '../../../../functions/ports/object-store.js';
import type { InputFile, RewriteOptions } from '../../../../functions/ports/parquet-engine.js';
import { type DuckWorkspace, duckWorkspace, eventsSelect, fileOf } from './helpers.js';

let duck: DuckWorkspace;
beforeAll(async () => {
  duck = await duckWorkspace();
});
afterAll(async () => {
  await duck.close();
});

const WRITER = 'stitch-test writer';
/** Thresholds scaled to test-sized files: 10,000-row row groups count as large. */
const STITCH = { minRowGroupRows: 10_000, minRowGroupBytes: 64 * 1024 * 1024 };

interface WasmInput {
  readonly rows: number;
  readonly seed: number;
  readonly rowGroupRows?: number;
  readonly codec?: 'zstd' | 'snappy';
  /** user_id as DELTA_BINARY_PACKED. */
  readonly delta?: boolean;
  readonly kv?: Record<string, string>;
}

/** An events file written by parquet-wasm with its own created_by and page-level statistics (column indexes). */
async function wasmInput(spec: WasmInput): Promise<Uint8Array> {
  const from = await duck.parquet(eventsSelect(spec.rows, spec.seed));
  let builder = new pw.WriterPropertiesBuilder()
    .setCompression(spec.codec === 'snappy' ? pw.Compression.SNAPPY : pw.Compression.ZSTD)
    .setStatisticsEnabled(pw.EnabledStatistics.Page)
    .setMaxRowGroupSize(spec.rowGroupRows ?? spec.rows)
    .setDataPageSizeLimit(64 * 1024)
    .setCreatedBy(WRITER);
  if (spec.delta === true) {
    builder = builder
      .setColumnDictionaryEnabled('user_id', false)
      .setColumnEncoding('user_id', pw.Encoding.DELTA_BINARY_PACKED);
  }
  if (spec.kv !== undefined) builder = builder.setKeyValueMetadata(new Map(Object.entries(spec.kv)));
  return pw.writeParquet(pw.readParquet(from), builder.build());
}

async function stored(store: MemoryObjectStore, inputs: Record<string, Uint8Array>): Promise<InputFile[]> {
  const files: InputFile[] = [];
  for (const [key, bytes] of Object.entries(inputs)) {
    await store.put(key, bytes);
    files.push(await fileOf(store, key));
  }
  return files;
}

function options(extra: Partial<RewriteOptions> = {}): RewriteOptions {
  return { outputKey: (i) => `out/part-${i}.parquet`, stitch: STITCH, ...extra };
}

function sourceOf(key: string, file: Uint8Array): StitchSource {
  const metadata = metadataBytesOf(key, file);
  return stitchSourceOf(key, metadata, file.length - 8 - metadata.length);
}

/** Every column chunk's page bytes, in file order. */
function chunkBytes(key: string, file: Uint8Array): Buffer[] {
  return sourceOf(key, file).rowGroups.flatMap((g) =>
    g.chunks.map((c) => Buffer.from(file.subarray(c.data.offset, c.data.offset + c.data.length))),
  );
}

/** The structs of list field `id`. */
function structsOf(s: ThriftStruct, id: number): ThriftStruct[] {
  return ((field(s, id) as ThriftField).value as ThriftList).items as ThriftStruct[];
}

function createdBy(file: Uint8Array): string {
  const v = field(decodeStruct(metadataBytesOf('f', file)).struct, 6)?.value as Uint8Array;
  return new TextDecoder().decode(v);
}

async function rowsOf(bytes: Uint8Array): Promise<Record<string, unknown>[]> {
  return parquetReadObjects({
    file: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer,
  });
}

/** Rows of inputs minus rows of outputs and back (DuckDB), and rows out of order: both 0 when equal in order. */
async function duckDifferences(
  source: MemoryObjectStore,
  inKeys: readonly string[],
  target: MemoryObjectStore,
  outKeys: readonly string[],
): Promise<{ missing: number; moved: number }> {
  const inputs = await duck.materialise(source, inKeys);
  const outputs = await duck.materialise(target, outKeys);
  const missing = await duck.db.scalar(
    `SELECT count(*) FROM ((SELECT * FROM read_parquet(${inputs}) EXCEPT ALL SELECT * FROM read_parquet(${outputs}))
      UNION ALL (SELECT * FROM read_parquet(${outputs}) EXCEPT ALL SELECT * FROM read_parquet(${inputs})))`,
  );
  const moved = await duck.db.scalar(
    `SELECT count(*) FROM (SELECT *, row_number() OVER () AS n FROM read_parquet(${inputs})) a
      FULL JOIN (SELECT *, row_number() OVER () AS n FROM read_parquet(${outputs})) b USING (n)
      WHERE a.user_id IS DISTINCT FROM b.user_id OR a.session_id IS DISTINCT FROM b.session_id
        OR a.revenue_usd IS DISTINCT FROM b.revenue_usd`,
  );
  return { missing: Number(missing), moved: Number(moved) };
}

describe('row-group stitching', () => {
  it('copies large row groups page for page into one output that DuckDB and hyparquet read row for row, with valid page indexes', async () => {
    // Prepare
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    // Snappy, so that hyparquet (without a ZSTD decompressor here) reads the output too.
    const inputs = {
      'a.parquet': await wasmInput({ rows: 25_000, seed: 1, rowGroupRows: 12_500, codec: 'snappy' }),
      'b.parquet': await wasmInput({ rows: 20_000, seed: 2, codec: 'snappy' }),
      'c.parquet': await wasmInput({ rows: 15_000, seed: 3, codec: 'snappy' }),
    };
    const files = await stored(source, inputs);

    // Act
    const result = await rewriteGroup(
      { source, target },
      { groupId: 'g', files },
      options({ codec: 'snappy' }),
    );

    // Assess
    expect(result.outputs.map((o) => o.rows)).toEqual([60_000]);
    const out = await target.get(result.outputs[0]?.key as string);
    expect(createdBy(out)).toBe(WRITER);
    const copied = Object.entries(inputs).flatMap(([k, f]) => chunkBytes(k, f));
    expect(chunkBytes('out', out).every((c, i) => c.equals(copied[i] as Buffer))).toBe(true);
    expect(sourceOf('out', out).rowGroups.map((g) => g.rows)).toEqual([12_500, 12_500, 20_000, 15_000]);
    expect(
      await duckDifferences(
        source,
        Object.keys(inputs),
        target,
        result.outputs.map((o) => o.key),
      ),
    ).toEqual({ missing: 0, moved: 0 });
    const expected = (await Promise.all(Object.values(inputs).map(rowsOf))).flat();
    expect(await rowsOf(out)).toEqual(expected);
    for (const g of sourceOf('out', out).rowGroups) {
      for (const chunk of g.chunks) {
        const index = chunk.offsetIndex as { offset: number; length: number };
        const locations = decodeStruct(out.subarray(index.offset, index.offset + index.length)).struct;
        const pages = structsOf(locations, 1);
        const offsets = pages.map((p) => Number(field(p, 1)?.value));
        expect(offsets.every((o) => pageTypeOf(out.subarray(o)) === 0)).toBe(true);
        expect(offsets[0]).toBeGreaterThanOrEqual(chunk.data.offset);
        expect(chunk.columnIndex).toBeDefined();
      }
    }
    await expect(
      verifyOutputs(target, result.outputs, result.fingerprint, { sources: source }),
    ).resolves.toMatchObject({
      rows: 60_000,
    });
  });

  it('stitches inputs whose footers differ only in writer stamps into one output with the first one’s, and keeps calendars apart', async () => {
    // Prepare: a and b differ in their write timestamp only; c is written in Spark's LEGACY rebase mode
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    const stamp = (i: number) => ({
      'org.apache.spark.version': '3.5.0',
      'com.databricks.spark.writeTimestamp': String(1_717_000_000_000 + i),
    });
    const inputs = {
      'a.parquet': await wasmInput({ rows: 20_000, seed: 1, kv: stamp(1) }),
      'b.parquet': await wasmInput({ rows: 20_000, seed: 2, kv: stamp(2) }),
      'c.parquet': await wasmInput({
        rows: 20_000,
        seed: 3,
        kv: { ...stamp(3), 'org.apache.spark.legacyDateTime': '' },
      }),
    };
    const files = await stored(source, inputs);

    // Act
    const result = await rewriteGroup({ source, target }, { groupId: 'g', files }, options());

    // Assess: a and b copied into one output carrying a's entries; c in its own; verify proves both from bytes
    expect(result.outputs.map((o) => o.rows)).toEqual([40_000, 20_000]);
    const kvOf = async (key: string) => {
      const meta = decodeStruct(metadataBytesOf(key, await target.get(key))).struct;
      const items = ((field(meta, 5) as ThriftField).value as ThriftList).items as ThriftStruct[];
      const text = new TextDecoder();
      return Object.fromEntries(
        items.map((kv) => [
          text.decode(field(kv, 1)?.value as Uint8Array),
          text.decode(field(kv, 2)?.value as Uint8Array),
        ]),
      );
    };
    const [ab, c] = result.outputs.map((o) => o.key) as [string, string];
    expect(await kvOf(ab)).toMatchObject(stamp(1));
    expect(await kvOf(c)).toMatchObject({ ...stamp(3), 'org.apache.spark.legacyDateTime': '' });
    expect(chunkBytes('out', await target.get(ab))).toEqual([
      ...chunkBytes('a', inputs['a.parquet']),
      ...chunkBytes('b', inputs['b.parquet']),
    ]);
    await expect(
      verifyOutputs(target, result.outputs, result.fingerprint, { sources: source }),
    ).resolves.toMatchObject({ rows: 60_000 });
    expect(
      await duckDifferences(
        source,
        Object.keys(inputs),
        target,
        result.outputs.map((o) => o.key),
      ),
    ).toEqual({ missing: 0, moved: 0 });
  });

  it('stitches DuckDB-written inputs (no encoding statistics, bloom filters) after reading their first page header', async () => {
    // Prepare
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    const inputs = {
      'a.parquet': await duck.parquet(eventsSelect(20_000, 5), { compression: 'zstd', rowGroupSize: 20_000 }),
      'b.parquet': await duck.parquet(eventsSelect(20_000, 6), { compression: 'zstd', rowGroupSize: 20_000 }),
    };
    const files = await stored(source, inputs);

    // Act
    const result = await rewriteGroup({ source, target }, { groupId: 'g', files }, options());

    // Assess
    const out = await target.get(result.outputs[0]?.key as string);
    expect(result.outputs).toHaveLength(1);
    const copied = Object.entries(inputs).flatMap(([k, f]) => chunkBytes(k, f));
    expect(chunkBytes('out', out).every((c, i) => c.equals(copied[i] as Buffer))).toBe(true);
    const blooms = (file: Uint8Array, key: string) =>
      sourceOf(key, file).rowGroups.flatMap((g) =>
        g.chunks.flatMap((c) =>
          c.bloom === undefined
            ? []
            : [Buffer.from(file.subarray(c.bloom.offset, c.bloom.offset + (c.bloom.length ?? 0)))],
        ),
      );
    const inputBlooms = Object.entries(inputs).flatMap(([k, f]) => blooms(f, k));
    expect(inputBlooms.length).toBeGreaterThan(0);
    expect(blooms(out, 'out').map((b) => b.toString('hex'))).toEqual(
      inputBlooms.map((b) => b.toString('hex')),
    );
    expect(
      await duckDifferences(
        source,
        Object.keys(inputs),
        target,
        result.outputs.map((o) => o.key),
      ),
    ).toEqual({ missing: 0, moved: 0 });
    await expect(
      verifyOutputs(target, result.outputs, result.fingerprint, { sources: source }),
    ).resolves.toMatchObject({
      rows: 40_000,
    });
  });

  it('re-encodes the small inputs of a mixed group into their own output and stitches the large ones, every row once', async () => {
    // Prepare
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    const inputs = {
      'a-small.parquet': await wasmInput({ rows: 3_000, seed: 11 }),
      'b-large.parquet': await wasmInput({ rows: 20_000, seed: 12 }),
      'c-small.parquet': await wasmInput({ rows: 4_000, seed: 13 }),
      'd-large.parquet': await wasmInput({ rows: 15_000, seed: 14 }),
    };
    const files = await stored(source, inputs);

    // Act
    const result = await rewriteGroup(
      { source, target },
      { groupId: 'g', files, expectedOutputFiles: 1 },
      options(),
    );

    // Assess
    expect(result.outputs.map((o) => o.rows)).toEqual([7_000, 35_000]);
    const [reencoded, stitched] = await Promise.all(result.outputs.map((o) => target.get(o.key)));
    expect(createdBy(reencoded as Uint8Array)).toMatch(/^lake-compactor/);
    expect(createdBy(stitched as Uint8Array)).toBe(WRITER);
    const small = ['a-small.parquet', 'c-small.parquet'];
    const large = ['b-large.parquet', 'd-large.parquet'];
    expect(
      await duckDifferences(
        source,
        [...small, ...large],
        target,
        result.outputs.map((o) => o.key),
      ),
    ).toEqual({
      missing: 0,
      moved: 0,
    });
    await expect(
      verifyOutputs(target, result.outputs, result.fingerprint, { sources: source }),
    ).resolves.toMatchObject({
      rows: 42_000,
    });
  });

  it('fails verification when a stitched output points a column at the wrong pages, or off a page boundary', async () => {
    // Prepare
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    const files = await stored(source, {
      'a.parquet': await wasmInput({ rows: 20_000, seed: 21 }),
      'b.parquet': await wasmInput({ rows: 20_000, seed: 22 }),
    });
    const result = await rewriteGroup({ source, target }, { groupId: 'g', files }, options());
    const key = result.outputs[0]?.key as string;
    const good = await target.get(key);
    await expect(
      verifyOutputs(target, result.outputs, result.fingerprint, { sources: source }),
    ).resolves.toBeDefined();
    /** The output with its footer changed by `edit` on the second row group's column chunks. */
    const corrupted = (edit: (columns: ThriftStruct[]) => void): Uint8Array => {
      const meta = decodeStruct(metadataBytesOf(key, good)).struct;
      const groups = structsOf(meta, 4);
      edit(structsOf(groups[1] as ThriftStruct, 1));
      const footer = encodeStruct(meta);
      const dataEnd = good.length - 8 - metadataBytesOf(key, good).length;
      const out = new Uint8Array(dataEnd + footer.length + 8);
      out.set(good.subarray(0, dataEnd));
      out.set(footer, dataEnd);
      new DataView(out.buffer).setUint32(dataEnd + footer.length, footer.length, true);
      out.set([0x50, 0x41, 0x52, 0x31], out.length - 4);
      return out;
    };
    // user_id (column 0) and event_timestamp (column 2) are both INT64: swapped, both still decode.
    const metaOf = (cc: ThriftStruct | undefined) => field(cc as ThriftStruct, 3)?.value as ThriftStruct;
    // Each takes the other's whole chunk (pages, page indexes, sizes, statistics) but keeps its own name.
    const swapped = corrupted(([userId, , timestamp]) => {
      const [a, b] = [userId as ThriftStruct, timestamp as ThriftStruct];
      [a.fields, b.fields] = [b.fields, a.fields];
      const [pathA, pathB] = [field(metaOf(a), 3), field(metaOf(b), 3)] as [ThriftField, ThriftField];
      [pathA.value, pathB.value] = [pathB.value, pathA.value];
    });
    // The chunk's first page one byte late; without its page indexes, readers go by this offset alone.
    const shifted = corrupted(([userId]) => {
      const cc = userId as ThriftStruct;
      cc.fields = cc.fields.filter((f) => f.id < 4 || f.id > 7);
      const start = field(metaOf(cc), 11) ?? field(metaOf(cc), 9);
      if (start !== undefined) start.value = (start.value as bigint) + 1n;
    });
    const outputs = (bytes: Uint8Array) => [{ key, size: bytes.length }];

    // Act / Assess
    await target.put(key, swapped);
    await expect(
      verifyOutputs(target, outputs(swapped), result.fingerprint, { sources: source }),
    ).rejects.toThrow(VerificationError);
    await target.put(key, shifted);
    await expect(
      verifyOutputs(target, outputs(shifted), result.fingerprint, { sources: source }),
    ).rejects.toSatisfy((e) => e instanceof VerificationError || e instanceof CorruptInputError);
  });

  it('re-encodes inputs in another codec, with encodings the target does not write, or flagged with more than stitching knows', async () => {
    // Prepare
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    const files = await stored(source, {
      'a-snappy.parquet': await wasmInput({ rows: 20_000, seed: 31, codec: 'snappy' }),
      'b-delta.parquet': await wasmInput({ rows: 20_000, seed: 32, delta: true }),
      'c-flagged.parquet': await wasmInput({ rows: 20_000, seed: 33 }),
    });
    const flagged = files.map((f) =>
      f.key === 'c-flagged.parquet' ? Object.assign({ deletedRows: [] as number[] }, f) : f,
    );

    // Act
    const plain = await rewriteGroup({ source, target }, { groupId: 'g', files: flagged }, options());
    const delta = await rewriteGroup(
      { source, target },
      { groupId: 'h', files: files.filter((f) => f.key === 'b-delta.parquet') },
      options({ outputKey: (i) => `delta/part-${i}.parquet`, deltaEncoding: true }),
    );

    // Assess
    expect(plain.outputs).toHaveLength(1);
    expect(createdBy(await target.get(plain.outputs[0]?.key as string))).toMatch(/^lake-compactor/);
    expect(createdBy(await target.get(delta.outputs[0]?.key as string))).toBe(WRITER);
    await expect(
      verifyOutputs(target, plain.outputs, plain.fingerprint, { sources: source }),
    ).resolves.toMatchObject({
      rows: 60_000,
    });
  });

  it('stitches only row groups at a threshold, by rows or by bytes, and nothing when stitching is off', async () => {
    // Prepare
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    const files = await stored(source, {
      'a.parquet': await wasmInput({ rows: 20_000, seed: 41, rowGroupRows: 10_000 }),
    });
    const bytesOfGroups = sourceOf('a', await source.get('a.parquet')).rowGroups.map(
      (g) => g.compressedBytes,
    );
    const smallest = Math.min(...bytesOfGroups);
    const cases: [string, RewriteOptions['stitch'], boolean][] = [
      ['at the row threshold', { minRowGroupRows: 10_000, minRowGroupBytes: 1e9 }, true],
      ['one row under it', { minRowGroupRows: 10_001, minRowGroupBytes: 1e9 }, false],
      ['at the byte threshold', { minRowGroupRows: 1e9, minRowGroupBytes: smallest }, true],
      ['one byte under it', { minRowGroupRows: 1e9, minRowGroupBytes: smallest + 1 }, false],
      ['off', false, false],
    ];

    for (const [name, stitch, expected] of cases) {
      // Act
      const result = await rewriteGroup(
        { source, target },
        { groupId: name, files },
        { outputKey: (i) => `${name}/part-${i}.parquet`, stitch },
      );

      // Assess
      const out = await target.get(result.outputs[0]?.key as string);
      expect(createdBy(out) === WRITER, name).toBe(expected);
    }
  });

  it('builds from ranges of the inputs the output it builds from their whole bytes, reading only page indexes, bloom filters and footers', async () => {
    // Prepare
    const pairs: Record<string, Record<string, Uint8Array>> = {
      'parquet-wasm (page indexes, two row groups)': {
        'a.parquet': await wasmInput({ rows: 25_000, seed: 51, rowGroupRows: 12_500 }),
        'b.parquet': await wasmInput({ rows: 20_000, seed: 52 }),
      },
      'DuckDB (bloom filters)': {
        'a.parquet': await duck.parquet(eventsSelect(20_000, 53), {
          compression: 'zstd',
          rowGroupSize: 20_000,
        }),
        'b.parquet': await duck.parquet(eventsSelect(20_000, 54), {
          compression: 'zstd',
          rowGroupSize: 20_000,
        }),
      },
    };

    for (const [writer, inputs] of Object.entries(pairs)) {
      // Act
      const whole = new StitchAssembler();
      const fromBytes = [...whole.start()];
      const ranged = new StitchAssembler();
      const pieces: ComposedPiece[] = ranged.start().map((bytes) => ({ kind: 'bytes', bytes }));
      let auxBytes = 0;
      for (const [key, file] of Object.entries(inputs)) {
        const source = sourceOf(key, file);
        fromBytes.push(...whole.append(file, source));
        const dataEnd = file.length - 8 - metadataBytesOf(key, file).length;
        const offset = Math.min(auxSpanOf(source, dataEnd)?.offset ?? dataEnd, dataEnd);
        auxBytes += dataEnd - offset;
        pieces.push(
          ...ranged.appendRanges(source, { key, etag: 'e' }, { offset, bytes: file.subarray(offset) }),
        );
      }
      fromBytes.push(...whole.finish());
      pieces.push(...ranged.finish().map((bytes): ComposedPiece => ({ kind: 'bytes', bytes })));

      // Assess
      const composed = Buffer.concat(
        pieces.map((p) =>
          p.kind === 'bytes' ? p.bytes : (inputs[p.key] as Uint8Array).subarray(p.start, p.endInclusive + 1),
        ),
      );
      expect(composed.equals(Buffer.concat(fromBytes)), writer).toBe(true);
      expect(ranged.rows, writer).toBe(whole.rows);
      // One range per input (its row groups are contiguous); what is read besides is the page indexes and blooms.
      expect(
        pieces.filter((p) => p.kind === 'range'),
        writer,
      ).toHaveLength(2);
      expect(auxBytes, writer).toBeGreaterThan(0);
      const pageBytes = Object.entries(inputs)
        .flatMap(([k, f]) => chunkBytes(k, f))
        .reduce((n, b) => n + b.length, 0);
      expect(auxBytes, writer).toBeLessThan(pageBytes / 10);
    }
  });

  it('composes in the store only when source and target are one store object that can compose', () => {
    // Prepare
    const memory = new MemoryObjectStore();
    const composing = (): ObjectStore =>
      Object.assign(Object.create(memory), { putComposed: async () => ({ etag: 'e', size: 0 }) });
    const one = composing();
    const another = composing();

    // Act
    const cases = {
      'one composing store': composesInStore({ source: one, target: one }),
      'two composing stores': composesInStore({ source: another, target: one }),
      'one store without putComposed': composesInStore({ source: memory, target: memory }),
    };

    // Assess
    expect(cases).toEqual({
      'one composing store': true,
      'two composing stores': false,
      'one store without putComposed': false,
    });
  });
});
