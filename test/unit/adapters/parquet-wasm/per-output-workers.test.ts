import { basename } from 'node:path';
import { parquetMetadata } from 'hyparquet';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { rewriteGroup } from '../../../../functions/adapters/parquet-wasm/rewrite.js';
import { splitQuotas } from '../../../../functions/adapters/parquet-wasm/split-output.js';
import { verifyOutputs } from '../../../../functions/adapters/parquet-wasm/verify.js';
import {
  closeIdleWorkers,
  engineWorkerStats,
} from '../../../../functions/adapters/parquet-wasm/worker-pool.js';
import { InvalidInputError } from '../../../../functions/core/errors.js';
import {
  bloomFilterOfFooter,
  HUDI_INDEX_FOOTER_KEYS,
  HUDI_MAX_RECORD_KEY_KEY,
  HUDI_MIN_RECORD_KEY_KEY,
  HudiIndexFooterBuilder,
  recordKeyRange,
} from '../../../../functions/core/formats/hudi/bloom/index.js';
import { keyValueRecord } from '../../../../functions/core/parquet/key-value.js';
import type {
  OutputFooterAccumulator,
  OutputFooterEntries,
  RewriteOptions,
  RewriteResult,
} from '../../../../functions/ports/parquet-engine.js';
import { insertBaseFile } from '../../../../functions/tools/sample-hudi.js';
import { storedHudiPartition } from '../../../support/fixtures.js';
import { type DuckWorkspace, duckWorkspace, fileOf } from './helpers.js';

let duck: DuckWorkspace;
beforeAll(async () => {
  duck = await duckWorkspace();
});
afterAll(async () => {
  await duck.close();
});
// Every test counts the workers it starts: none left idle by an earlier one.
beforeEach(closeIdleWorkers);

/** The options a Hudi clustering passes: the file name derived, the index entries computed from each output's keys. */
const HUDI_PER_OUTPUT: Partial<RewriteOptions> = {
  derivedColumns: [{ column: '_hoodie_file_name', value: 'output-file-name' }],
  outputFooterEntries: {
    keys: HUDI_INDEX_FOOTER_KEYS,
    column: '_hoodie_record_key',
    begin: () => new HudiIndexFooterBuilder(),
  },
};

interface Rewritten {
  readonly target: MemoryObjectStore;
  readonly result: RewriteResult;
  /** Engine workers started by the rewrite. */
  readonly spawned: number;
}

async function rewrite(
  source: MemoryObjectStore,
  keys: readonly string[],
  expectedOutputFiles: number,
  options: Partial<RewriteOptions>,
): Promise<Rewritten> {
  const target = new MemoryObjectStore();
  const files = await Promise.all(keys.map((k) => fileOf(source, k)));
  const before = engineWorkerStats().spawned;
  const result = await rewriteGroup(
    { source, target },
    { groupId: 'g', files, expectedOutputFiles },
    {
      outputKey: (i) => `out/0000000${i}-aaaa-bbbb-cccc-dddddddddddd-0_0-1-1_20260101000000000.parquet`,
      ...options,
    },
  );
  return { target, result, spawned: engineWorkerStats().spawned - before };
}

/** Bytes of a Parquet file before its footer: its pages (and page indexes, bloom filters). */
function beforeFooter(bytes: Uint8Array): Uint8Array {
  const length = new DataView(bytes.buffer, bytes.byteOffset).getUint32(bytes.length - 8, true);
  return bytes.subarray(0, bytes.length - 8 - length);
}

/** A file's footer as hyparquet decodes it, key-value entries as a record (see `expectSameOutputs`), as JSON. */
function footerOf(bytes: Uint8Array): string {
  const meta = parquetMetadata(bytes.slice().buffer as ArrayBuffer);
  const entries = keyValueRecord(meta.key_value_metadata ?? []);
  return JSON.stringify(
    {
      ...meta,
      key_value_metadata: Object.keys(entries)
        .sort()
        .map((k) => [k, entries[k]]),
    },
    (_k, v) => (typeof v === 'bigint' ? String(v) : v),
  );
}

/**
 * Every output of `b` is the output of `a` under the same key: the same bytes before the footer (pages, page
 * indexes), and the same footer — the derived column's statistics and the hook's entries included. Key-value entries
 * are compared as a record: the encoder's order of the ones it copies from the inputs differs between wasm instances
 * (a worker's and this thread's), per-output values or not; the hook's entries always come last, in its order.
 */
async function expectSameOutputs(a: Rewritten, b: Rewritten): Promise<void> {
  expect(b.result.outputs.map((o) => [o.key, o.rows, o.size])).toEqual(
    a.result.outputs.map((o) => [o.key, o.rows, o.size]),
  );
  for (const output of a.result.outputs) {
    const one = await a.target.get(output.key);
    const other = await b.target.get(output.key);
    expect(Buffer.from(beforeFooter(other)).equals(Buffer.from(beforeFooter(one))), output.key).toBe(true);
    expect(footerOf(other)).toBe(footerOf(one));
  }
}

/** Each output's `_hoodie_file_name` is its own name, and its bloom filter and key range cover its own keys. */
async function expectHudiIndexOfEachOutput(r: Rewritten): Promise<void> {
  for (const output of r.result.outputs) {
    const list = await duck.materialise(r.target, [output.key]);
    const rows = await duck.db.rows(
      `SELECT _hoodie_record_key AS k, _hoodie_file_name AS f FROM read_parquet(${list})`,
    );
    const keys = rows.map((row) => String(row.k));
    expect(new Set(rows.map((row) => row.f))).toEqual(new Set([basename(output.key)]));
    const footer = keyValueRecord(
      parquetMetadata((await r.target.get(output.key)).buffer as ArrayBuffer).key_value_metadata ?? [],
    );
    const filter = bloomFilterOfFooter(footer);
    expect(keys.filter((k) => filter?.mightContain(k) !== true)).toEqual([]);
    expect({ min: footer[HUDI_MIN_RECORD_KEY_KEY], max: footer[HUDI_MAX_RECORD_KEY_KEY] }).toEqual(
      recordKeyRange(keys),
    );
  }
}

/** Partitions of vendored Hudi tables (Spark- and Avro-written base files, 1.x and 0.x). */
const PARTITIONS: readonly { readonly partition: string; readonly fidelity: 'exact' | 'logical' }[] = [
  { partition: 'mor_v8_trips_8i3u1d/city=san_francisco', fidelity: 'exact' },
  { partition: 'cow_v9_txns_simple_meta/region=us', fidelity: 'logical' },
];

describe.each(PARTITIONS)('per-output values of the Hudi base files of $partition on two workers', (p) => {
  it('writes the one-thread outputs, one output per worker task, and they verify', async () => {
    // Prepare
    const { store, keys } = await storedHudiPartition(p.partition);
    const options = { ...HUDI_PER_OUTPUT, schemaFidelity: p.fidelity };
    const single = await rewrite(store, keys, 2, options);

    // Act
    const parallel = await rewrite(store, keys, 2, { ...options, workers: 2 });

    // Assess: encoded on the workers (one-thread rewrites start none), the same outputs as on one thread.
    expect(single.spawned).toBe(0);
    expect(parallel.spawned).toBe(2);
    expect(parallel.result.outputs.length).toBe(2);
    await expectSameOutputs(single, parallel);
    expect(parallel.result.fingerprint).toEqual(single.result.fingerprint);
    await expectHudiIndexOfEachOutput(parallel);
    const report = await verifyOutputs(
      parallel.target,
      parallel.result.outputs,
      parallel.result.fingerprint,
      {
        workers: 2,
      },
    );
    expect(report.rows).toBe(single.result.fingerprint.rows);
  });
});

/** Base files as the project's Hudi appender writes them: `files` of `rows` rows, keys 1… in order. */
async function appenderBaseFiles(
  files: number,
  rows: number,
): Promise<{ store: MemoryObjectStore; keys: string[] }> {
  const store = new MemoryObjectStore();
  const keys: string[] = [];
  for (let f = 0; f < files; f++) {
    const instant = `2026010100000${f}000`;
    const name = `0000000${f}-ffff-ffff-ffff-ffffffffffff-0_0-1-0_${instant}.parquet`;
    const ids = Array.from({ length: rows }, (_, i) => f * rows + i + 1);
    await store.put(`in/${name}`, insertBaseFile(instant, name, '1', ids));
    keys.push(`in/${name}`);
  }
  return { store, keys };
}

describe('per-output values of one output split across the workers', () => {
  const FILES = 6;
  const ROWS = 3_000;
  const ROW_GROUP_ROWS = 2_000;

  it('writes the one-thread output, its index covering every key, and it verifies', async () => {
    // Prepare: 18,000 rows in 9 row groups of the one output, split into parts of whole row groups.
    const { store, keys } = await appenderBaseFiles(FILES, ROWS);
    const options = { ...HUDI_PER_OUTPUT, rowGroupRows: ROW_GROUP_ROWS, batchRows: 1_500 };
    const single = await rewrite(store, keys, 1, options);

    // Act
    const split = await rewrite(store, keys, 1, { ...options, workers: 2 });

    // Assess: one output, joined from the parts the split cut (so encoded on the workers), the one-thread output.
    expect(split.result.outputs.length).toBe(1);
    const segment =
      split.result.fingerprint.kind === 'ordered-columns-v1'
        ? split.result.fingerprint.segments[0]
        : undefined;
    expect(segment !== undefined && 'cuts' in segment ? segment.cuts : undefined).toEqual(
      splitQuotas(FILES * ROWS, ROW_GROUP_ROWS, 16 * 1024 * 1024, 2),
    );
    expect(split.spawned).toBe(2);
    await expectSameOutputs(single, split);
    await expectHudiIndexOfEachOutput(split);
    const report = await verifyOutputs(split.target, split.result.outputs, split.result.fingerprint, {
      workers: 2,
    });
    expect(report.rows).toBe(FILES * ROWS);
  });
});

/** A footer hook recording, per output, every call it gets (value and door), its entry a digest of them. */
function recordingHook(calls: Map<string, string[]>): OutputFooterEntries {
  return {
    keys: ['test.calls'],
    column: 'k',
    begin: (outputKey) => {
      const seen: string[] = [];
      calls.set(outputKey, seen);
      const text = new TextDecoder();
      const accumulator: OutputFooterAccumulator = {
        add: (value) => {
          seen.push(value === null ? 'add:null' : `add:${value}`);
        },
        addUtf8: (bytes) => {
          seen.push(`bytes:${text.decode(bytes)}`);
        },
        finish: () => ({ 'test.calls': `${seen.length}:${seen.at(-1) ?? ''}` }),
      };
      return accumulator;
    },
  };
}

describe('a footer hook fed from the workers', () => {
  /** Rows with a key column of nulls, empty, non-ASCII and supplementary characters, and a derived column `f`. */
  const select = (seed: number, rows: number) => `SELECT (i + ${seed})::BIGINT AS id,
    CASE WHEN i % 7 = 0 THEN NULL WHEN i % 11 = 0 THEN '' WHEN i % 5 = 0 THEN 'clé-' || i || '-😀' ELSE 'k' || (i + ${seed}) END AS k,
    'input-name' AS f
    FROM range(${rows}) t(i)`;

  for (const expected of [1, 3]) {
    it(`gets the one-thread calls in the same order for each of ${expected} output(s)`, async () => {
      // Prepare
      const store = new MemoryObjectStore();
      const keys: string[] = [];
      for (let f = 0; f < 4; f++) {
        await store.put(`in/${f}.parquet`, await duck.parquet(select(f * 10_000, 3_000)));
        keys.push(`in/${f}.parquet`);
      }
      const oneThread = new Map<string, string[]>();
      const onWorkers = new Map<string, string[]>();
      const options = (calls: Map<string, string[]>): Partial<RewriteOptions> => ({
        derivedColumns: [{ column: 'f', value: 'output-file-name' }],
        outputFooterEntries: recordingHook(calls),
        rowGroupRows: 1_000,
        batchRows: 700,
      });
      const single = await rewrite(store, keys, expected, options(oneThread));

      // Act
      const parallel = await rewrite(store, keys, expected, { ...options(onWorkers), workers: 2 });

      // Assess
      expect(parallel.spawned).toBe(2);
      expect(parallel.result.outputs.length).toBe(expected);
      expect(onWorkers).toEqual(oneThread);
      expect([...oneThread.values()].flat()).toContain('add:null');
      expect([...oneThread.values()].flat()).toContain('bytes:');
      await expectSameOutputs(single, parallel);
      await verifyOutputs(parallel.target, parallel.result.outputs, parallel.result.fingerprint);
    });
  }

  it('refuses a derived column the rows do not have with the typed error, and leaves no output', async () => {
    // Prepare
    const store = new MemoryObjectStore();
    const keys: string[] = [];
    for (let f = 0; f < 4; f++) {
      await store.put(`in/${f}.parquet`, await duck.parquet(select(f * 10_000, 3_000)));
      keys.push(`in/${f}.parquet`);
    }
    const files = await Promise.all(keys.map((k) => fileOf(store, k)));

    // Act
    const rewriting = rewriteGroup(
      { source: store, target: store },
      { groupId: 'g', files, expectedOutputFiles: 2 },
      {
        outputKey: (i) => `out/${i}.parquet`,
        derivedColumns: [{ column: 'no_such_column', value: 'output-file-name' }],
        workers: 2,
      },
    );

    // Assess
    const error = await rewriting.then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(InvalidInputError);
    expect((error as InvalidInputError).issues).toEqual([
      expect.stringMatching(/no_such_column is not in the rows/),
    ]);
    expect((await store.list('out/')).objects.length).toBe(0);
  });
});
