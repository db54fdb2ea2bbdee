// Proves one output's row groups encoded on several workers and joined into one file (split-output.ts) hold exactly
// the rows of the same output written on one thread, in the same order — read row for row by DuckDB — for every
// physical type, nulls, nested columns and dictionary pages, with the same row groups and valid page indexes; that
// verify passes the joined output and catches a byte flipped in one worker's part; and that a worker's failure
// fails the group with its typed error and leaves nothing staged.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { rewriteGroup } from '../../../../functions/adapters/parquet-wasm/rewrite.js';
import { splitQuotas } from '../../../../functions/adapters/parquet-wasm/split-output.js';
import { verifyOutputs } from '../../../../functions/adapters/parquet-wasm/verify.js';
import { CorruptInputError, VerificationError } from '../../../../functions/core/errors.js';
import { groupFingerprintSchema } from '../../../../functions/core/fingerprint/fingerprint.js';
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

const FILES = 6;
const ROWS_PER_FILE = 4_000;
const KEYS = Array.from({ length: FILES }, (_, f) => `in/part-${f}.parquet`);
/** 12 row groups of 2,000 rows in the output: parts of whole row groups straddle the inputs (4,000 rows each). */
const ROW_GROUP_ROWS = 2_000;

/** Every physical type the engine writes, with nulls, nested columns and a dictionary-friendly string; seeded per file. */
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

async function inputs(): Promise<MemoryObjectStore> {
  const source = new MemoryObjectStore();
  for (let f = 0; f < FILES; f++) {
    await source.put(KEYS[f] as string, await duck.parquet(inputSelect(f * 100_000, ROWS_PER_FILE)));
  }
  return source;
}

async function rewrite(
  source: MemoryObjectStore,
  options: Partial<RewriteOptions>,
  target = new MemoryObjectStore(),
) {
  const files = await Promise.all(KEYS.map((key) => fileOf(source, key)));
  const result = await rewriteGroup(
    { source, target },
    { groupId: 'g', files, expectedOutputFiles: 1 },
    {
      outputKey: (i) => `out/part-${i}.parquet`,
      rowGroupRows: ROW_GROUP_ROWS,
      batchRows: 1_500,
      ...options,
    },
  );
  return { target, result, outputs: result.outputs };
}

/** Rows that differ between two lists of files read in order, row for row (position and every column), by DuckDB. */
async function rowForRowDifference(a: string, b: string): Promise<number> {
  const numbered = (list: string) => `SELECT row_number() OVER () AS n, * FROM read_parquet(${list})`;
  return Number(
    await duck.db.scalar(
      `SELECT count(*) FROM ((${numbered(a)} EXCEPT ALL ${numbered(b)}) UNION ALL (${numbered(b)} EXCEPT ALL ${numbered(a)}))`,
    ),
  );
}

const list = (s: ThriftStruct, id: number) =>
  ((field(s, id)?.value as ThriftList | undefined)?.items ?? []) as ThriftStruct[];
const num = (s: ThriftStruct, id: number) => {
  const v = field(s, id)?.value;
  return v === undefined ? undefined : Number(v);
};

/** The FileMetaData of a whole Parquet file. */
function metaOf(bytes: Uint8Array): ThriftStruct {
  const length = new DataView(bytes.buffer, bytes.byteOffset).getUint32(bytes.length - 8, true);
  return decodeStruct(bytes.subarray(bytes.length - 8 - length, bytes.length - 8)).struct;
}

/**
 * Every column chunk's offset index, checked against the bytes: each page location is a page header whose page ends
 * where the location says, the first at the chunk's first data page; every column index lies before the footer.
 * Returns how many offset indexes were checked.
 */
function checkPageIndexes(bytes: Uint8Array): number {
  const meta = metaOf(bytes);
  const footerStart =
    bytes.length - 8 - new DataView(bytes.buffer, bytes.byteOffset).getUint32(bytes.length - 8, true);
  let checked = 0;
  for (const rg of list(meta, 4)) {
    for (const cc of list(rg, 1)) {
      const md = field(cc, 3)?.value as ThriftStruct;
      const oiOffset = num(cc, 4) as number;
      const oiLength = num(cc, 5) as number;
      expect(oiOffset + oiLength).toBeLessThanOrEqual(footerStart);
      const locations = list(decodeStruct(bytes.subarray(oiOffset, oiOffset + oiLength)).struct, 1);
      expect(num(locations[0] as ThriftStruct, 1)).toBe(num(md, 9));
      for (const loc of locations) {
        const at = num(loc, 1) as number;
        const { struct: header, end } = decodeStruct(bytes, at);
        expect(end - at + (num(header, 3) as number)).toBe(num(loc, 2));
      }
      const ciOffset = num(cc, 6);
      if (ciOffset !== undefined) expect(ciOffset + (num(cc, 7) as number)).toBeLessThanOrEqual(footerStart);
      checked++;
    }
  }
  return checked;
}

describe('one output encoded on several workers and joined', () => {
  for (const workers of [2, 3]) {
    it(`holds the one-thread output's rows in the same order, row groups and page indexes (${workers} workers)`, async () => {
      // Prepare
      const source = await inputs();
      const single = await rewrite(source, {});

      // Act
      const split = await rewrite(source, { workers });

      // Assess: one output, joined from several parts, the same rows row for row as on one thread and as the inputs.
      expect(split.outputs.length).toBe(1);
      const out = split.outputs[0] as WrittenOutput;
      expect(out.rows).toBe(FILES * ROWS_PER_FILE);
      const segment =
        split.result.fingerprint.kind === 'ordered-columns-v1'
          ? split.result.fingerprint.segments[0]
          : undefined;
      expect(segment !== undefined && 'cuts' in segment ? segment.cuts : undefined).toEqual(
        splitQuotas(FILES * ROWS_PER_FILE, ROW_GROUP_ROWS, 16 * 1024 * 1024, workers),
      );
      const one = await duck.materialise(single.target, [single.outputs[0]?.key as string]);
      const joined = await duck.materialise(split.target, [out.key]);
      const inputList = await duck.materialise(source, KEYS);
      expect(Number(await duck.db.scalar(`SELECT count(*) FROM read_parquet(${joined})`))).toBe(
        FILES * ROWS_PER_FILE,
      );
      expect(await rowForRowDifference(one, joined)).toBe(0);
      expect(await rowForRowDifference(inputList, joined)).toBe(0);
      const bytes = await split.target.get(out.key);
      const oneBytes = await single.target.get(single.outputs[0]?.key as string);
      const rowGroups = (b: Uint8Array) => list(metaOf(b), 4).map((rg) => num(rg, 3));
      expect(rowGroups(bytes)).toEqual(rowGroups(oneBytes));
      expect(checkPageIndexes(bytes)).toBeGreaterThan(0);
      const withDictionary = list(metaOf(bytes), 4).map(
        (rg) => list(rg, 1).filter((cc) => num(field(cc, 3)?.value as ThriftStruct, 11) !== undefined).length,
      );
      expect(withDictionary.every((n) => n > 0)).toBe(true);
      expect(Buffer.from(bytes).equals(Buffer.from(oneBytes))).toBe(true);
      const report = await verifyOutputs(split.target, split.outputs, split.result.fingerprint, { workers });
      expect(report.rows).toBe(FILES * ROWS_PER_FILE);
    });
  }

  it('writes natively compressed parts that join into the one-thread output, row for row', async () => {
    // Prepare
    const source = await inputs();
    const single = await rewrite(source, { pageCompression: 'native' });

    // Act
    const split = await rewrite(source, { pageCompression: 'native', workers: 2 });

    // Assess
    expect(split.outputs.length).toBe(1);
    const one = await duck.materialise(single.target, [single.outputs[0]?.key as string]);
    const joined = await duck.materialise(split.target, [split.outputs[0]?.key as string]);
    expect(await rowForRowDifference(one, joined)).toBe(0);
    expect(checkPageIndexes(await split.target.get(split.outputs[0]?.key as string))).toBeGreaterThan(0);
    await verifyOutputs(split.target, split.outputs, split.result.fingerprint, { workers: 2 });
  });

  it("has verify catch a byte flipped in the pages of the second worker's part", async () => {
    // Prepare: flip a byte in the middle of the largest page of the first row group the second part brought.
    const source = await inputs();
    const { target, outputs, result } = await rewrite(source, { workers: 2 });
    const out = outputs[0] as WrittenOutput;
    const segment =
      result.fingerprint.kind === 'ordered-columns-v1' ? result.fingerprint.segments[0] : undefined;
    const cuts = segment !== undefined && 'cuts' in segment ? (segment.cuts ?? []) : [];
    const secondPartFirstGroup = (cuts[0] ?? 0) / ROW_GROUP_ROWS;
    const bytes = new Uint8Array(await target.get(out.key));
    let largest = { start: 0, size: 0 };
    for (const cc of list(list(metaOf(bytes), 4)[secondPartFirstGroup] as ThriftStruct, 1)) {
      const at = num(field(cc, 3)?.value as ThriftStruct, 9) as number;
      const { struct: header, end } = decodeStruct(bytes, at);
      const size = num(header, 3) as number;
      if (size > largest.size) largest = { start: end, size };
    }
    const at = largest.start + Math.floor(largest.size / 2);
    bytes[at] = (bytes[at] as number) ^ 0x5a;
    await target.put(out.key, bytes);
    const tampered = { ...out, etag: (await target.head(out.key))?.etag as string };

    // Act
    const outcome = await verifyOutputs(target, [tampered], result.fingerprint, { workers: 2 }).then(
      () => undefined,
      (err: unknown) => err,
    );

    // Assess
    expect(cuts.length).toBeGreaterThan(1);
    expect(largest.size).toBeGreaterThan(100);
    expect(outcome instanceof VerificationError || outcome instanceof CorruptInputError).toBe(true);
  });

  it("fails the group with the worker's typed error when an input of a later part is damaged, leaving nothing staged", async () => {
    // Prepare: the first data page header of input 4 (rows 16,000–19,999: the third and fourth parts) overwritten.
    const source = await inputs();
    const damaged = new Uint8Array(await source.get('in/part-4.parquet'));
    const rg = list(metaOf(damaged), 4)[0] as ThriftStruct;
    const at = num(field(list(rg, 1)[0] as ThriftStruct, 3)?.value as ThriftStruct, 9) as number;
    damaged.fill(0xff, at, at + 16);
    await source.put('in/part-4.parquet', damaged);

    const target = new MemoryObjectStore();

    // Act
    const outcome = await rewrite(source, { workers: 2 }, target).then(
      () => undefined,
      (err: unknown) => err,
    );

    // Assess
    expect(outcome).toBeInstanceOf(CorruptInputError);
    expect((outcome as CorruptInputError).key).toBe('in/part-4.parquet');
    expect(target.keys()).toEqual([]);
  });
});

describe('splitQuotas', () => {
  it('cuts an output into parts of whole row groups, about two per worker, one part when there is one row group', () => {
    // Act / Assess
    expect(splitQuotas(24_000, 2_000, 16 * 1024 * 1024, 2)).toEqual([6_000, 6_000, 6_000, 6_000]);
    // 13 row groups on 3 workers: 3 a part; the last part is the last row group, short as on one thread.
    expect(splitQuotas(25_000, 2_000, 16 * 1024 * 1024, 3)).toEqual([6_000, 6_000, 6_000, 6_000, 1_000]);
    expect(splitQuotas(2_000, 2_000, 16 * 1024 * 1024, 4)).toEqual([2_000]);
    expect(splitQuotas(24_000, 2_000, 16 * 1024 * 1024, 1)).toEqual([24_000]);
    // At most 64 MiB of decoded row groups a part: 4 row groups of 16 MiB, however few the workers.
    expect(splitQuotas(100 * 1_000, 1_000, 16 * 1024 * 1024, 2)).toEqual(
      Array.from({ length: 25 }, () => 4_000),
    );
  });
});

describe("a split output's fingerprint", () => {
  it('survives the step schema with its cuts, and a segment with one cut is refused', () => {
    // Prepare
    const fingerprint = {
      kind: 'ordered-columns-v1',
      rows: 3,
      schemaFingerprint: 's',
      nullCounts: {},
      hash: 'h',
      segments: [{ rows: 3, digest: 'd', cuts: [2, 1] }],
    };

    // Act
    const parsed = groupFingerprintSchema.parse(fingerprint);
    const one = groupFingerprintSchema.safeParse({
      ...fingerprint,
      segments: [{ rows: 3, digest: 'd', cuts: [3] }],
    });

    // Assess
    expect(parsed.segments).toEqual([{ rows: 3, digest: 'd', cuts: [2, 1] }]);
    expect(one.success).toBe(false);
  });
});
