// A Parquet input whose dictionary expands past the memory budget is refused, naming the file, row group and
// column, before any of it is decoded: a small one in pre-flight (nothing written), a large one (whose dictionary
// pre-flight did not fetch) before its first row group is decoded. Ordinary dictionary columns are bounded by their
// dictionary's longest value and still compact.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { rewriteGroup } from '../../../../functions/adapters/parquet-wasm/rewrite.js';
import { UnsupportedInputError } from '../../../../functions/core/errors.js';
import { memoryBudget, withMemoryBudget } from '../../../../functions/core/memory-budget.js';
import { decodedRowGroupBounds } from '../../../../functions/core/parquet/decoded-size.js';
import { parseFooterWithMetadata } from '../../../../functions/core/parquet/footer.js';
import { type DuckWorkspace, duckWorkspace } from './helpers.js';

let duck: DuckWorkspace;
beforeAll(async () => {
  duck = await duckWorkspace();
});
afterAll(async () => {
  await duck.close();
});

/** The appendix's dictionary bomb: 1,500 rows of one 1 MiB string, zstd (about 4 KB); `pad` makes it larger. */
function bombSelect(pad = false): string {
  return `SELECT i::BIGINT AS id, repeat('x', 1048576) AS s${pad ? ', sha256(i::VARCHAR) || sha256((i + 7)::VARCHAR) || sha256((i + 11)::VARCHAR) || sha256((i + 13)::VARCHAR) || sha256((i + 17)::VARCHAR) AS pad' : ", 'p' AS pad"} FROM range(1500) t(i)`;
}

async function rewriteWith(bomb: Uint8Array, memoryMb: number) {
  const source = new MemoryObjectStore();
  const target = new MemoryObjectStore();
  const files: { key: string; size: number; etag: string }[] = [];
  for (let i = 0; i < 3; i++) {
    const bytes = await duck.parquet(
      `SELECT (i + ${i * 10})::BIGINT AS id, 'v' || i::VARCHAR AS s, 'p' AS pad FROM range(10) t(i)`,
      { compression: 'zstd' },
    );
    files.push({
      key: `in/good-${i}.parquet`,
      size: bytes.length,
      ...(await source.put(`in/good-${i}.parquet`, bytes)),
    });
  }
  files.push({ key: 'in/bomb.parquet', size: bomb.length, ...(await source.put('in/bomb.parquet', bomb)) });
  const outcome = await withMemoryBudget(
    memoryBudget(memoryMb, `raise the memory (now ${memoryMb} MB)`),
    () =>
      rewriteGroup(
        { source, target },
        { groupId: 'g', files, expectedOutputFiles: 1 },
        { outputKey: (i) => `out/${i}.parquet` },
      ),
  ).then(
    () => undefined,
    (err: unknown) => err,
  );
  const left: string[] = [];
  for await (const o of target.listAll('')) left.push(o.key);
  return { err: outcome, left, target };
}

describe('decoded size is bounded before decoding', () => {
  it("refuses the 4 KB dictionary bomb in pre-flight under the compact function's 3,008 MB, writing nothing", async () => {
    // Prepare
    const bomb = await duck.parquet(bombSelect(), { compression: 'zstd' });

    // Act
    const { err, left, target } = await rewriteWith(bomb, 3008);

    // Assess
    expect(bomb.length).toBeLessThan(8 * 1024);
    expect(err).toBeInstanceOf(UnsupportedInputError);
    expect((err as UnsupportedInputError).key).toBe('in/bomb.parquet');
    expect((err as UnsupportedInputError).reason).toMatch(
      /^row group 0 could decode to 1501 MiB \(column s the most\), more than the 752 MiB one row group may take in this process's memory; raise the memory \(now 3008 MB\), or rewrite the file with smaller row groups$/,
    );
    expect(left).toEqual([]);
    expect(target.requests.putStream).toBe(0);
  });

  it('refuses a bomb too large for pre-flight to hold whole once it is fetched, before decoding it', async () => {
    // Prepare: a column of hashes makes the file larger than pre-flight's first read, so its dictionary waits
    const bomb = await duck.parquet(bombSelect(true), { compression: 'zstd' });

    // Act
    const { err, left } = await rewriteWith(bomb, 3008);

    // Assess
    expect(bomb.length).toBeGreaterThan(64 * 1024);
    expect(err).toBeInstanceOf(UnsupportedInputError);
    expect((err as UnsupportedInputError).reason).toMatch(
      /^row group 0 could decode to 150\d MiB \(column s the most\)/,
    );
    expect(left).toEqual([]);
  });

  it('compacts large files of ordinary dictionary columns (strings and integers) under 512 MB: their check waits for their bytes', async () => {
    // Prepare: files past pre-flight's 64 KiB first read, whose footers alone cannot clear their dictionaries
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    const files: { key: string; size: number; etag: string }[] = [];
    for (let f = 0; f < 2; f++) {
      const bytes = await duck.parquet(
        `SELECT (i % 500)::BIGINT AS code, 'session-' || ((i + ${f}) % 5000)::VARCHAR AS s, md5(i::VARCHAR) AS h FROM range(40000) t(i)`,
      );
      files.push({
        key: `in/big-${f}.parquet`,
        size: bytes.length,
        ...(await source.put(`in/big-${f}.parquet`, bytes)),
      });
    }

    // Act
    const result = await withMemoryBudget(memoryBudget(512), () =>
      rewriteGroup(
        { source, target },
        { groupId: 'g', files, expectedOutputFiles: 1 },
        { outputKey: (i) => `out/${i}.parquet` },
      ),
    );

    // Assess
    expect(files.every((f) => f.size > 64 * 1024)).toBe(true);
    expect(result.outputs.reduce((n, o) => n + o.rows, 0)).toBe(80_000);
  });

  it('bounds an ordinary dictionary column by its longest value: 1,000,000 rows of 1,000 short strings', async () => {
    // Prepare
    const bytes = await duck.parquet(
      `SELECT i::BIGINT AS id, 'user-' || (i % 1000)::VARCHAR AS s FROM range(1000000) t(i)`,
    );
    const { footer, metadata } = parseFooterWithMetadata('normal', bytes.length, bytes);

    // Act
    const fromFooter = decodedRowGroupBounds(metadata, footer.columns, 128 * 1024 * 1024);
    const fromDictionary = decodedRowGroupBounds(metadata, footer.columns, 128 * 1024 * 1024, bytes);

    // Assess: the footer alone cannot clear it (any value could be the whole chunk); the dictionary can
    expect(fromFooter.kind).toBe('needs-bytes');
    expect(fromDictionary.kind).toBe('bounded');
    // 122,880 rows per row group: 8 bytes of id and at most 8 + 8 bytes of string per row, plus the pages
    expect(fromDictionary.worst.bytes).toBeLessThan(122_880 * 40);
    expect(fromDictionary.worst.bytes).toBeGreaterThan(122_880 * 16);
  });
});

describe('stitched inputs are bounded before they are copied (verify decodes every stitched output)', () => {
  /** Row groups of 10,000 rows count as large here, as in stitch.test.ts. */
  const STITCH = { minRowGroupRows: 10_000, minRowGroupBytes: 64 * 1024 * 1024 };

  /** An input pre-flight cannot hold whole (a column of hashes), in the target's codec, one 10,000-row row group. */
  async function stitchable(select: string): Promise<Uint8Array> {
    return duck.parquet(select, { compression: 'zstd', rowGroupSize: 10_000 });
  }

  async function rewriteStitching(inputs: Record<string, Uint8Array>, memoryMb: number) {
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    const files: { key: string; size: number; etag: string }[] = [];
    for (const [key, bytes] of Object.entries(inputs))
      files.push({ key, size: bytes.length, ...(await source.put(key, bytes)) });
    const outcome = await withMemoryBudget(memoryBudget(memoryMb), () =>
      rewriteGroup(
        { source, target },
        { groupId: 'g', files },
        { outputKey: (i) => `out/${i}.parquet`, stitch: STITCH },
      ),
    ).then(
      (result) => ({ result, err: undefined }),
      (err: unknown) => ({ result: undefined, err }),
    );
    const left: string[] = [];
    for await (const o of target.listAll('')) left.push(o.key);
    return { ...outcome, left };
  }

  it('refuses a stitchable dictionary bomb (10,000 rows of one 8 KiB string) by name under 128 MB, writing nothing', async () => {
    // Prepare: 80 MiB decoded, over the 32 MiB a row group may take in 128 MB; larger than pre-flight's first read
    const select = (seed: number, long: boolean) =>
      `SELECT i::BIGINT AS id, ${long ? "repeat('x', 8192)" : `'v' || (i % 100)::VARCHAR`} AS s, md5((i + ${seed})::VARCHAR) AS h FROM range(10000) t(i)`;
    const good = await stitchable(select(0, false));
    const bomb = await stitchable(select(1, true));

    // Act
    const { err, left } = await rewriteStitching({ 'in/good.parquet': good, 'in/bomb.parquet': bomb }, 128);

    // Assess
    expect(bomb.length).toBeGreaterThan(64 * 1024);
    expect(err).toBeInstanceOf(UnsupportedInputError);
    expect((err as UnsupportedInputError).key).toBe('in/bomb.parquet');
    expect((err as UnsupportedInputError).reason).toMatch(
      /^row group 0 could decode to 7\d\.\d MiB \(column s the most\), more than the 32\.0 MiB one row group may take/,
    );
    expect(left).toEqual([]);
  });

  it('still stitches large inputs of ordinary dictionary columns under 128 MB, their check made from the dictionary pages alone', async () => {
    // Prepare: 2,000 distinct strings: the footer alone cannot clear them under 128 MB (any value could be the chunk)
    const select = (seed: number) =>
      `SELECT i::BIGINT AS id, 'session-' || ((i + ${seed}) % 2000)::VARCHAR AS s, md5((i + ${seed})::VARCHAR) AS h FROM range(10000) t(i)`;
    const inputs = {
      'in/a.parquet': await stitchable(select(0)),
      'in/b.parquet': await stitchable(select(1)),
    };

    // Act
    const { err, result } = await rewriteStitching(inputs, 128);

    // Assess: copied, not re-encoded, with every row
    expect(err).toBeUndefined();
    expect(result?.outputs.reduce((n, o) => n + o.rows, 0)).toBe(20_000);
    const fingerprint = result?.fingerprint as
      | { segments?: { kind: string; sources: { key: string }[] }[] }
      | undefined;
    const segments = fingerprint?.segments;
    expect(
      segments?.filter((s) => s.kind === 'stitched-v1').flatMap((s) => s.sources.map((x) => x.key)),
    ).toEqual(['in/a.parquet', 'in/b.parquet']);
  });
});
