// Proves bad inputs are refused with typed errors naming the file — truncated, wrong magic, corrupt
// page, zero rows, unknown encoding, unreproducible types — that partial outputs are deleted and inputs never touched.

import { parquetMetadata } from 'hyparquet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { rewriteGroup } from '../../../../functions/adapters/parquet-wasm/rewrite.js';
import {
  CorruptInputError,
  RewriteStalledError,
  UnsupportedInputError,
} from '../../../../functions/core/errors.js';
import { type DuckWorkspace, duckWorkspace, eventsSelect } from './helpers.js';

let duck: DuckWorkspace;
beforeAll(async () => {
  duck = await duckWorkspace();
});
afterAll(async () => {
  await duck.close();
});

/** A source with `good` valid files followed by one bad file, and an empty target. */
async function groupWith(bad: Uint8Array, good = 4) {
  const source = new MemoryObjectStore();
  const target = new MemoryObjectStore();
  const files: { key: string; size: number; etag: string }[] = [];
  for (let i = 0; i < good; i++) {
    const bytes = await duck.parquet(eventsSelect(300, i));
    const key = `in/good-${i}.parquet`;
    files.push({ key, size: bytes.length, ...(await source.put(key, bytes)) });
  }
  const badKey = 'in/bad.parquet';
  files.push({ key: badKey, size: bad.length, ...(await source.put(badKey, bad)) });
  const before = new Map(files.map((f) => [f.key, f.etag]));
  return { source, target, files, badKey, before };
}

async function refusal(bad: Uint8Array, expectedOutputFiles = 5, workers = 1) {
  const g = await groupWith(bad);
  const err = await rewriteGroup(
    { source: g.source, target: g.target },
    { groupId: 'bad', files: g.files, expectedOutputFiles },
    { outputKey: (i) => `out/${i}.parquet`, workers },
  ).then(
    () => undefined,
    (e: unknown) => e,
  );
  const left = [];
  for await (const o of g.target.listAll('')) left.push(o.key);
  const untouched = [];
  for (const [key, etag] of g.before) untouched.push((await g.source.head(key))?.etag === etag);
  return { err, left, untouched, g };
}

function expectNamed(
  err: unknown,
  type: typeof CorruptInputError | typeof UnsupportedInputError,
  reason: RegExp,
) {
  expect(err).toBeInstanceOf(type);
  const e = err as CorruptInputError;
  expect(e.key).toBe('in/bad.parquet');
  expect(e.message).toContain('in/bad.parquet');
  expect(e.reason).toMatch(reason);
}

describe('rewriteGroup refuses bad inputs', () => {
  it('refuses a truncated file before writing anything', async () => {
    // Prepare
    const whole = await duck.parquet(eventsSelect(300, 99));

    // Act
    const { err, left, untouched, g } = await refusal(whole.slice(0, whole.length - 100));

    // Assess
    expectNamed(err, CorruptInputError, /magic|truncated/);
    expect(left).toEqual([]);
    expect(g.target.requests.putStream).toBe(0);
    expect(untouched.every(Boolean)).toBe(true);
  });

  it('refuses a file with the wrong magic bytes', async () => {
    // Prepare
    const bytes = await duck.parquet(eventsSelect(300, 98));
    bytes.set([0x58, 0x58, 0x58, 0x58], 0);

    // Act
    const { err, left } = await refusal(bytes);

    // Assess
    expectNamed(err, CorruptInputError, /magic/);
    expect(left).toEqual([]);
  });

  it('refuses a corrupt page found mid-rewrite and deletes the outputs already written', async () => {
    // Prepare
    const bytes = await duck.parquet(eventsSelect(300, 97));
    const meta = parquetMetadata(
      bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer,
    );
    const chunk = meta.row_groups[0]?.columns[0]?.meta_data;
    const start = Number(chunk?.dictionary_page_offset ?? chunk?.data_page_offset);
    bytes.fill(0xff, start, start + Number(chunk?.total_compressed_size));

    // Act
    const { err, left, untouched, g } = await refusal(bytes);

    // Assess: four outputs were complete before the bad file was reached, and all are gone.
    expectNamed(err, CorruptInputError, /decoder failed/);
    expect(g.target.requests.putStream).toBeGreaterThanOrEqual(4);
    expect(left).toEqual([]);
    expect(untouched.every(Boolean)).toBe(true);
  });

  it('refuses a corrupt page met by a worker thread with the same typed error and deletes all outputs', async () => {
    // Prepare
    const bytes = await duck.parquet(eventsSelect(300, 95));
    const meta = parquetMetadata(
      bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer,
    );
    const chunk = meta.row_groups[0]?.columns[0]?.meta_data;
    const start = Number(chunk?.dictionary_page_offset ?? chunk?.data_page_offset);
    bytes.fill(0xff, start, start + Number(chunk?.total_compressed_size));

    // Act
    const { err, left, untouched } = await refusal(bytes, 5, 2);

    // Assess
    expectNamed(err, CorruptInputError, /decoder failed/);
    expect(left).toEqual([]);
    expect(untouched.every(Boolean)).toBe(true);
  });

  it.each([1, 2])(
    'refuses a corrupt page in the second row group of a multi-row-group file (%i thread(s))',
    async (workers) => {
      // Prepare: such files are decoded by parquet-wasm's streaming reader, a row group at a time.
      const bytes = await duck.parquet(eventsSelect(3_000, 93), { rowGroupSize: 1_000 });
      const meta = parquetMetadata(
        bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer,
      );
      expect(meta.row_groups.length).toBeGreaterThan(1);
      const chunk = meta.row_groups[1]?.columns[0]?.meta_data;
      const start = Number(chunk?.dictionary_page_offset ?? chunk?.data_page_offset);
      bytes.fill(0xff, start, start + Number(chunk?.total_compressed_size));

      // Act
      const { err, left, untouched } = await refusal(bytes, 5, workers);

      // Assess
      expectNamed(err, CorruptInputError, /decoder failed/);
      expect(left).toEqual([]);
      expect(untouched.every(Boolean)).toBe(true);
    },
  );

  it('refuses a file with zero rows', async () => {
    // Prepare
    const bytes = await duck.parquet(`${eventsSelect(10, 1)} LIMIT 0`);

    // Act
    const { err, left } = await refusal(bytes);

    // Assess
    expectNamed(err, UnsupportedInputError, /zero rows/);
    expect(left).toEqual([]);
  });

  it('refuses a column chunk whose encoding the decoder does not know', async () => {
    // Prepare: patch the first column's encodings list in the footer (thrift compact:
    // field 1 type i32, then field 2 list<i32> header) so that its first entry is encoding 42.
    const bytes = await duck.parquet(eventsSelect(300, 96));
    const footerLength = new DataView(bytes.buffer).getUint32(bytes.length - 8, true);
    const footerStart = bytes.length - 8 - footerLength;
    let patched = false;
    for (let i = footerStart; i < bytes.length - 8 && !patched; i++) {
      if (bytes[i] === 0x15 && bytes[i + 2] === 0x19 && ((bytes[i + 3] as number) & 0x0f) === 5) {
        bytes[i + 4] = 84; // zigzag(42)
        patched = true;
      }
    }
    expect(patched).toBe(true);

    // Act
    const { err, left } = await refusal(bytes);

    // Assess
    expectNamed(err, UnsupportedInputError, /encoding/);
    expect(left).toEqual([]);
  });

  it('refuses a type the writer cannot reproduce exactly (UUID) before writing anything', async () => {
    // Prepare
    const bytes = await duck.parquet(`SELECT gen_random_uuid() AS id, i::BIGINT AS n FROM range(20) t(i)`);

    // Act
    const g = await groupWith(bytes, 0);
    const err = await rewriteGroup(
      { source: g.source, target: g.target },
      { groupId: 'uuid', files: g.files },
      { outputKey: (i) => `out/${i}.parquet` },
    ).catch((e: unknown) => e);

    // Assess
    expectNamed(err, UnsupportedInputError, /cannot reproduce its schema exactly.*UUID/);
    expect(g.target.requests.putStream).toBe(0);
  });

  it('fails with RewriteStalledError instead of hanging when the writer stops making progress', async () => {
    // Prepare: an upload that never reads its body, so the writer can never take another batch.
    const g = await groupWith(await duck.parquet(eventsSelect(300, 94)), 2);
    const stuck = Object.create(g.target) as MemoryObjectStore;
    stuck.putStream = () => new Promise<never>(() => undefined);

    // Act
    const err = await rewriteGroup(
      { source: g.source, target: stuck },
      { groupId: 'stall', files: g.files },
      { outputKey: (i) => `out/${i}.parquet`, stallTimeoutMs: 200, rowGroupRows: 100, batchRows: 100 },
    ).catch((e: unknown) => e);

    // Assess
    expect(err).toBeInstanceOf(RewriteStalledError);
    expect((err as Error).message).toMatch(/made no progress for 200 ms/);
  });
});
