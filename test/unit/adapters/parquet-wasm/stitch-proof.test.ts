// Proves the byte-level fingerprint of stitched outputs: the rewrite records the source row groups without
// decoding a stitched input, verify proves the claim from the objects themselves, and every way of getting a
// stitched output wrong — a changed byte, swapped chunks, an offset or an offset-index entry off by one, a row
// group dropped or duplicated, a source replaced after the rewrite — fails verification.

import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { InputReader } from '../../../../functions/adapters/parquet-wasm/read.js';
import { rewriteGroup } from '../../../../functions/adapters/parquet-wasm/rewrite.js';
import { verifyOutputs } from '../../../../functions/adapters/parquet-wasm/verify.js';
import { pw } from '../../../../functions/adapters/parquet-wasm/wasm.js';
import { VerificationError } from '../../../../functions/core/errors.js';
import {
  type GroupFingerprint,
  isStitchedSegment,
  type StitchedSegment,
  toOrderedFingerprint,
} from '../../../../functions/core/fingerprint/fingerprint.js';
import { metadataBytesOf, stitchSourceOf } from '../../../../functions/core/parquet/stitch.js';
import {
  decodeStruct,
  encodeStruct,
  field,
  type ThriftList,
  type ThriftStruct,
} from '../../../../functions/core/parquet/thrift-compact.js';
import type { InputFile, RewriteResult } from '../../../../functions/ports/parquet-engine.js';
import { type DuckWorkspace, duckWorkspace, eventsSelect, fileOf } from './helpers.js';

let duck: DuckWorkspace;
beforeAll(async () => {
  duck = await duckWorkspace();
});
afterAll(async () => {
  await duck.close();
});
afterEach(() => {
  vi.restoreAllMocks();
});

/** Thresholds scaled to test-sized files: 10,000-row row groups count as large. */
const STITCH = { minRowGroupRows: 10_000, minRowGroupBytes: 64 * 1024 * 1024 };

/** An events file written by parquet-wasm, snappy, with page indexes (column and offset indexes). */
async function input(rows: number, seed: number, rowGroupRows = rows): Promise<Uint8Array> {
  const from = await duck.parquet(eventsSelect(rows, seed));
  const props = new pw.WriterPropertiesBuilder()
    .setCompression(pw.Compression.SNAPPY)
    .setStatisticsEnabled(pw.EnabledStatistics.Page)
    .setMaxRowGroupSize(rowGroupRows)
    .setDataPageSizeLimit(64 * 1024)
    .setCreatedBy('stitch-proof test writer')
    .build();
  return pw.writeParquet(pw.readParquet(from), props);
}

async function stored(store: MemoryObjectStore, inputs: Record<string, Uint8Array>): Promise<InputFile[]> {
  const files: InputFile[] = [];
  for (const [key, bytes] of Object.entries(inputs)) {
    await store.put(key, bytes);
    files.push(await fileOf(store, key));
  }
  return files;
}

function structsOf(s: ThriftStruct, id: number): ThriftStruct[] {
  return ((field(s, id)?.value as ThriftList | undefined)?.items ?? []) as ThriftStruct[];
}

function metaOf(cc: ThriftStruct): ThriftStruct {
  return field(cc, 3)?.value as ThriftStruct;
}

/**
 * `file` with its footer replaced by `edit`'s (given the decoded FileMetaData, and `append`, which places bytes
 * after the data and before the new footer and returns their offset).
 */
function withFooter(
  file: Uint8Array,
  edit: (meta: ThriftStruct, append: (bytes: Uint8Array) => bigint) => void,
): Uint8Array {
  const metadata = metadataBytesOf('out', file);
  const dataEnd = file.length - 8 - metadata.length;
  const meta = decodeStruct(metadata).struct;
  const extra: Uint8Array[] = [];
  let at = dataEnd;
  edit(meta, (bytes) => {
    extra.push(bytes);
    at += bytes.length;
    return BigInt(at - bytes.length);
  });
  const footer = encodeStruct(meta);
  const out = new Uint8Array(at + footer.length + 8);
  out.set(file.subarray(0, dataEnd));
  let pos = dataEnd;
  for (const e of extra) {
    out.set(e, pos);
    pos += e.length;
  }
  out.set(footer, at);
  new DataView(out.buffer).setUint32(at + footer.length, footer.length, true);
  out.set([0x50, 0x41, 0x52, 0x31], out.length - 4);
  return out;
}

/** The problems a rejected verification lists (its message), or a failure when it passed. */
async function verifyProblems(
  store: MemoryObjectStore,
  outputs: readonly { key: string; size: number }[],
  fingerprint: GroupFingerprint,
): Promise<string> {
  const err = await verifyOutputs(store, outputs, fingerprint).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(VerificationError);
  return (err as VerificationError).message;
}

interface Stitched {
  readonly store: MemoryObjectStore;
  readonly result: RewriteResult;
  readonly key: string;
  readonly good: Uint8Array;
}

/** Two inputs (the first with two row groups) stitched into one output; the store holds inputs and output. */
async function stitchedGroup(): Promise<Stitched> {
  const store = new MemoryObjectStore();
  const files = await stored(store, {
    'in/a.parquet': await input(24_000, 51, 12_000),
    'in/b.parquet': await input(20_000, 52),
  });
  const result = await rewriteGroup(
    { source: store, target: store },
    { groupId: 'g', files },
    { outputKey: (i) => `out/part-${i}.parquet`, codec: 'snappy', stitch: STITCH },
  );
  const key = result.outputs[0]?.key as string;
  return { store, result, key, good: await store.get(key) };
}

/** Puts `bytes` as the stitched output and verifies it against the rewrite's fingerprint. */
async function tampered(s: Stitched, bytes: Uint8Array, fingerprint = s.result.fingerprint): Promise<string> {
  await s.store.put(s.key, bytes);
  return verifyProblems(s.store, [{ key: s.key, size: bytes.length }], fingerprint);
}

describe('stitched outputs: the rewrite records sources, verify proves them from bytes', () => {
  it('records each stitched output as its source row groups without decoding a stitched input, and the mixed group verifies', async () => {
    // Prepare
    const store = new MemoryObjectStore();
    const files = await stored(store, {
      'in/a-small.parquet': await input(3_000, 61),
      'in/b-large.parquet': await input(24_000, 62, 12_000),
      'in/c-large.parquet': await input(15_000, 63),
    });
    const decoded: string[] = [];
    const decode = InputReader.prototype.decode;
    const decodeRun = InputReader.prototype.decodeRun;
    vi.spyOn(InputReader.prototype, 'decode').mockImplementation(function (this: InputReader, i) {
      decoded.push(i.file.key);
      return decode.call(this, i);
    });
    vi.spyOn(InputReader.prototype, 'decodeRun').mockImplementation(function (this: InputReader, inputs) {
      decoded.push(...inputs.map((i) => i.file.key));
      return decodeRun.call(this, inputs);
    });

    // Act
    const result = await rewriteGroup(
      { source: store, target: store },
      { groupId: 'g', files },
      { outputKey: (i) => `out/part-${i}.parquet`, codec: 'snappy', stitch: STITCH },
    );
    const report = await verifyOutputs(store, result.outputs, result.fingerprint);

    // Assess
    expect(decoded).toContain('in/a-small.parquet');
    expect(decoded.filter((k) => k.includes('large'))).toEqual([]);
    const segments = result.fingerprint.kind === 'ordered-columns-v1' ? result.fingerprint.segments : [];
    expect(segments.map((s) => (isStitchedSegment(s) ? 'stitched' : 'digest'))).toEqual([
      'digest',
      'stitched',
    ]);
    const byKey = new Map(files.map((f) => [f.key, f.etag]));
    expect((segments[1] as StitchedSegment).sources).toEqual([
      { key: 'in/b-large.parquet', etag: byKey.get('in/b-large.parquet'), rowGroup: 0, rows: 12_000 },
      { key: 'in/b-large.parquet', etag: byKey.get('in/b-large.parquet'), rowGroup: 1, rows: 12_000 },
      { key: 'in/c-large.parquet', etag: byKey.get('in/c-large.parquet'), rowGroup: 0, rows: 15_000 },
    ]);
    expect(report.rows).toBe(42_000);
  });

  it('fails verification when one byte of a copied column chunk differs in the output', async () => {
    // Prepare
    const s = await stitchedGroup();
    const chunk = stitchSourceOf('out', metadataBytesOf('out', s.good), 0).rowGroups[1]?.chunks[3]?.data;
    const bytes = s.good.slice();
    const at = (chunk?.offset ?? 0) + Math.floor((chunk?.length ?? 0) / 2);
    bytes[at] = (bytes[at] as number) ^ 0x01;

    // Act
    const problems = await tampered(s, bytes);

    // Assess
    expect(problems).toMatch(/row group 1 \(in\/a\.parquet row group 1\) column 3 pages: bytes differ/);
  });

  it("fails verification when two columns point at each other's chunks", async () => {
    // Prepare
    const s = await stitchedGroup();
    // user_id (0) and event_timestamp (2) are both INT64: each takes the other's whole chunk but keeps its name.
    const bytes = withFooter(s.good, (meta) => {
      const [a, , b] = structsOf(structsOf(meta, 4)[1] as ThriftStruct, 1) as [
        ThriftStruct,
        ThriftStruct,
        ThriftStruct,
      ];
      [a.fields, b.fields] = [b.fields, a.fields];
      const [pa, pb] = [field(metaOf(a), 3), field(metaOf(b), 3)];
      if (pa !== undefined && pb !== undefined) [pa.value, pb.value] = [pb.value, pa.value];
    });

    // Act
    const problems = await tampered(s, bytes);

    // Assess
    expect(problems).toMatch(/row group 1 .* column 0: column metadata differs from the source's/);
  });

  it('fails verification when one offset of a chunk is moved by one byte, the others right', async () => {
    // Prepare
    const s = await stitchedGroup();
    const bytes = withFooter(s.good, (meta) => {
      const cc = structsOf(structsOf(meta, 4)[2] as ThriftStruct, 1)[1] as ThriftStruct;
      const data = field(metaOf(cc), 9);
      if (data !== undefined) data.value = (data.value as bigint) + 1n;
    });

    // Act
    const problems = await tampered(s, bytes);

    // Assess
    expect(problems).toMatch(/row group 2 .* column 1: column metadata differs .* did not all move/);
  });

  it('fails verification when an offset index page location is wrong while data_page_offset is right', async () => {
    // Prepare
    const s = await stitchedGroup();
    const bytes = withFooter(s.good, (meta, append) => {
      const cc = structsOf(structsOf(meta, 4)[0] as ThriftStruct, 1)[0] as ThriftStruct;
      const offset = Number(field(cc, 4)?.value);
      const length = Number(field(cc, 5)?.value);
      const index = decodeStruct(s.good.subarray(offset, offset + length)).struct;
      // The first page's location, which data_page_offset (left right) also gives: parquet-rs reads by the former.
      const first = field(structsOf(index, 1)[0] as ThriftStruct, 1);
      expect(first?.value).toBe(field(metaOf(cc), 9)?.value);
      if (first !== undefined) first.value = (first.value as bigint) + 1n;
      const moved = encodeStruct(index);
      (field(cc, 4) as { value: bigint }).value = append(moved);
      (field(cc, 5) as { value: number }).value = moved.length;
    });

    // Act
    const problems = await tampered(s, bytes);

    // Assess
    expect(problems).toMatch(/row group 0 .* column 0 offset index: offset index is not the source's/);
  });

  it('fails verification when the output drops a listed row group', async () => {
    // Prepare
    const s = await stitchedGroup();
    const bytes = withFooter(s.good, (meta) => {
      const groups = field(meta, 4)?.value as ThriftList;
      groups.items.splice(1, 1);
      (field(meta, 3) as { value: bigint }).value = 32_000n;
    });

    // Act
    const problems = await tampered(s, bytes);

    // Assess
    expect(problems).toMatch(/2 row groups, its sources list 3/);
  });

  it('fails verification when an output duplicates a source row group and its fingerprint says so', async () => {
    // Prepare
    const s = await stitchedGroup();
    const bytes = withFooter(s.good, (meta) => {
      const groups = field(meta, 4)?.value as ThriftList;
      const copy = decodeStruct(encodeStruct(groups.items[0] as ThriftStruct)).struct;
      groups.items.splice(1, 0, copy);
      groups.items.forEach((g, i) => {
        const ordinal = field(g as ThriftStruct, 7);
        if (ordinal !== undefined) ordinal.value = i;
      });
      (field(meta, 3) as { value: bigint }).value = 56_000n;
    });
    const claim = (s.result.fingerprint as { segments: readonly StitchedSegment[] })
      .segments[0] as StitchedSegment;
    const first = claim.sources[0] as StitchedSegment['sources'][number];
    const forged: StitchedSegment = { ...claim, rows: 56_000, sources: [first, ...claim.sources] };
    const fingerprint = {
      ...toOrderedFingerprint([forged], []),
      schemaFingerprint: s.result.fingerprint.schemaFingerprint,
    };

    // Act
    const problems = await tampered(s, bytes, fingerprint);

    // Assess
    expect(problems).toMatch(/in\/a\.parquet: row groups 0, 0, 1 copied, the source has 2/);
  });

  it('refuses a stitched output whose source was replaced after the rewrite', async () => {
    // Prepare
    const s = await stitchedGroup();
    await s.store.put('in/b.parquet', await input(20_000, 99));

    // Act
    const problems = await verifyProblems(s.store, s.result.outputs, s.result.fingerprint);

    // Assess
    expect(problems).toMatch(/source in\/b\.parquet changed since it was planned/);
  });

  it('refuses a fingerprint segment of a kind it does not know, before reading anything', async () => {
    // Prepare
    const s = await stitchedGroup();
    const fingerprint = {
      ...s.result.fingerprint,
      segments: [{ kind: 'stitched-v9', rows: 44_000, sources: [] }],
    } as unknown as GroupFingerprint;
    const get = vi.spyOn(s.store, 'getRange');

    // Act
    const problems = await verifyProblems(s.store, s.result.outputs, fingerprint);

    // Assess
    expect(problems).toMatch(/segments of kind stitched-v9/);
    expect(get).not.toHaveBeenCalled();
  });
});
