// Proves the streaming rewrite keeps every row (multiset and order), rolls over into balanced
// outputs, writes ZSTD or snappy with statistics, and that the fingerprint verifies — read back by DuckDB.

import { tableFromArrays, tableFromIPC, tableToIPC } from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { rewriteGroup } from '../../../../functions/adapters/parquet-wasm/rewrite.js';
import { balancedQuotas } from '../../../../functions/adapters/parquet-wasm/runs.js';
import { verifyOutputs } from '../../../../functions/adapters/parquet-wasm/verify.js';
import { pw, writerProperties } from '../../../../functions/adapters/parquet-wasm/wasm.js';
import { InvalidInputError } from '../../../../functions/core/errors.js';
import { readFooter } from '../../../../functions/core/parquet/footer.js';
import { writeSampleLake } from '../../../../functions/tools/sample-lake.js';
import { type DuckWorkspace, duckWorkspace, fileOf } from './helpers.js';

let duck: DuckWorkspace;
beforeAll(async () => {
  duck = await duckWorkspace();
});
afterAll(async () => {
  await duck.close();
});

async function sampleLake(store: MemoryObjectStore, files: number, rows: number): Promise<string[]> {
  const keys: string[] = [];
  await writeSampleLake(
    async (key, bytes) => {
      keys.push(key);
      await store.put(key, bytes);
    },
    { files, rows, partitions: 'single', seed: 7 },
  );
  return keys;
}

describe('rewriteGroup', () => {
  it('rewrites sample-lake files into balanced outputs whose rows equal the inputs as a multiset and in order', async () => {
    // Prepare
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    const keys = await sampleLake(source, 12, 2_500);
    const files = await Promise.all(keys.map((k) => fileOf(source, k)));

    // Act
    const result = await rewriteGroup(
      { source, target },
      { groupId: 'g1', files, expectedOutputFiles: 3 },
      { outputKey: (i) => `staging/g1/part-${i}.zstd.parquet`, rowGroupRows: 4_000, batchRows: 1_000 },
    );

    // Assess
    expect(result.outputs.map((o) => o.rows)).toEqual([10_000, 10_000, 10_000]);
    expect(result.fingerprint.rows).toBe(30_000);
    const inputs = await duck.materialise(source, keys);
    const outputs = await duck.materialise(
      target,
      result.outputs.map((o) => o.key),
    );
    const diff = await duck.db.scalar(
      `SELECT count(*) FROM ((SELECT * FROM read_parquet(${inputs}) EXCEPT ALL SELECT * FROM read_parquet(${outputs}))
        UNION ALL (SELECT * FROM read_parquet(${outputs}) EXCEPT ALL SELECT * FROM read_parquet(${inputs})))`,
    );
    expect(Number(diff)).toBe(0);
    const orderDiff = await duck.db.scalar(
      `SELECT count(*) FROM (SELECT *, row_number() OVER () AS n FROM read_parquet(${inputs})) a
        FULL JOIN (SELECT *, row_number() OVER () AS n FROM read_parquet(${outputs})) b USING (n)
        WHERE a.user_id IS DISTINCT FROM b.user_id OR a.session_id IS DISTINCT FROM b.session_id
          OR a.event_timestamp IS DISTINCT FROM b.event_timestamp`,
    );
    expect(Number(orderDiff)).toBe(0);
    const types = await duck.db.columnTypes(`SELECT * FROM read_parquet(${outputs})`);
    expect(types).toEqual(await duck.db.columnTypes(`SELECT * FROM read_parquet(${inputs})`));
    const footer = await readFooter(target, result.outputs[0]?.key as string);
    expect(footer.codecs).toEqual(['ZSTD']);
    expect(footer.rowGroups.map((g) => g.rows)).toEqual([4_000, 4_000, 2_000]);
    const stats = await duck.db.scalar(
      `SELECT count(*) FROM parquet_metadata(${outputs}) WHERE stats_min_value IS NULL OR stats_max_value IS NULL OR stats_null_count IS NULL`,
    );
    expect(Number(stats)).toBe(0);
  });

  it('produces a fingerprint that verifyOutputs recomputes from the stored outputs alone', async () => {
    // Prepare
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    const keys = await sampleLake(source, 6, 1_000);
    const files = await Promise.all(keys.map((k) => fileOf(source, k)));
    const result = await rewriteGroup(
      { source, target },
      { groupId: 'g2', files },
      { outputKey: (i) => `out/${i}.parquet`, codec: 'snappy', targetFileSizeBytes: 64 * 1024 },
    );

    // Act
    const report = await verifyOutputs(target, result.outputs, result.fingerprint);

    // Assess
    expect(report.fingerprint).toEqual(result.fingerprint);
    expect(result.outputs.length).toBeGreaterThan(1);
    const rows = result.outputs.map((o) => o.rows);
    expect(Math.max(...rows) - Math.min(...rows)).toBeLessThanOrEqual(1);
    expect((await readFooter(target, result.outputs[0]?.key as string)).codecs).toEqual(['SNAPPY']);
    expect(JSON.parse(JSON.stringify(result.fingerprint))).toEqual(result.fingerprint);
  });

  it('sizes outputs from the encoded size of a sample, not the larger input size, and balances them', async () => {
    // Prepare: snappy inputs shrink under ZSTD, so input bytes / target would give too many outputs.
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    const keys = await sampleLake(source, 12, 5_000);
    const files = await Promise.all(keys.map((k) => fileOf(source, k)));
    const inputBytes = files.reduce((n, f) => n + f.size, 0);
    const targetSize = Math.floor(inputBytes / 4);

    // Act
    const result = await rewriteGroup(
      { source, target },
      { groupId: 'size', files },
      { outputKey: (i) => `o/${i}`, targetFileSizeBytes: targetSize },
    );

    // Assess
    const sizes = result.outputs.map((o) => o.size);
    const total = sizes.reduce((a, b) => a + b, 0);
    expect(total).toBeLessThan(inputBytes * 0.8);
    expect(result.outputs.length).toBeLessThan(Math.ceil(inputBytes / targetSize));
    expect(result.outputs.length).toBe(Math.ceil(total / targetSize));
    expect(Math.max(...sizes)).toBeLessThanOrEqual(targetSize * 1.1);
    const rows = result.outputs.map((o) => o.rows);
    expect(Math.max(...rows) - Math.min(...rows)).toBeLessThanOrEqual(1);
  });

  it('hides per-request latency by keeping many GETs in flight', async () => {
    // Prepare
    const plain = new MemoryObjectStore();
    const keys = await sampleLake(plain, 40, 50);
    const slow = new MemoryObjectStore({ latencyMs: 20 });
    for (const k of keys) await slow.put(k, await plain.get(k));
    const files = await Promise.all(keys.map((k) => fileOf(slow, k)));
    let inFlight = 0;
    let maxInFlight = 0;
    const counted = Object.create(slow) as MemoryObjectStore;
    for (const method of ['get', 'getRange'] as const) {
      const original = slow[method].bind(slow) as (...args: unknown[]) => Promise<Uint8Array>;
      (counted as unknown as Record<string, unknown>)[method] = async (...args: unknown[]) => {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        try {
          return await original(...args);
        } finally {
          inFlight--;
        }
      };
    }

    // Act
    const result = await rewriteGroup(
      { source: counted, target: new MemoryObjectStore() },
      { groupId: 'g3', files },
      { outputKey: (i) => `o/${i}`, maxRequestsInFlight: 16 },
    );

    // Assess: requests overlap up to the limit, and small files read whole by pre-flight are not
    // fetched again (one request per file).
    expect(result.fingerprint.rows).toBe(2_000);
    expect(maxInFlight).toBe(16);
    expect(slow.requests.getRange + slow.requests.get).toBe(40);
  });

  it('gives the same outputs and fingerprint with two worker threads as with one thread', async () => {
    // Prepare
    const source = new MemoryObjectStore();
    const keys = await sampleLake(source, 9, 1_000);
    const files = await Promise.all(keys.map((k) => fileOf(source, k)));
    const one = new MemoryObjectStore();
    const two = new MemoryObjectStore();
    const group = { groupId: 'w', files, expectedOutputFiles: 4 };

    // Act
    const single = await rewriteGroup({ source, target: one }, group, { outputKey: (i) => `o/${i}` });
    const parallel = await rewriteGroup({ source, target: two }, group, {
      outputKey: (i) => `o/${i}`,
      workers: 2,
    });

    // Assess
    expect(parallel.fingerprint).toEqual(single.fingerprint);
    expect(parallel.outputs.map((o) => [o.key, o.rows])).toEqual(single.outputs.map((o) => [o.key, o.rows]));
    await verifyOutputs(two, parallel.outputs, single.fingerprint);
    const a = await duck.materialise(
      one,
      single.outputs.map((o) => o.key),
    );
    const b = await duck.materialise(
      two,
      parallel.outputs.map((o) => o.key),
    );
    const diff = await duck.db.scalar(
      `SELECT count(*) FROM (SELECT *, row_number() OVER () AS n FROM read_parquet(${a})) x
        FULL JOIN (SELECT *, row_number() OVER () AS n FROM read_parquet(${b})) y USING (n)
        WHERE x.session_id IS DISTINCT FROM y.session_id OR x.user_id IS DISTINCT FROM y.user_id`,
    );
    expect(Number(diff)).toBe(0);
  });

  it('keeps every input’s rows when one schema run is encoded on workers and the next in order', async () => {
    // Prepare: six inputs of one schema, then one written in Spark's LEGACY calendar mode (same columns, but a
    // run of its own: its key-value metadata changes how its values read): the first run gets several outputs, on workers;
    // the second one output, written in order. All inputs hold the same number of rows.
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    const rowsPerFile = 2_000;
    const files = [];
    for (let f = 0; f < 7; f++) {
      const table = tableFromArrays({
        id: Int32Array.from({ length: rowsPerFile }, (_, i) => f * 1_000_000 + i),
        v: Array.from({ length: rowsPerFile }, (_, i) => `${f}-${(i * 2_654_435_761) % 1e9}`),
      });
      const bytes = pw.writeParquet(
        pw.Table.fromIPCStream(tableToIPC(table, 'stream')),
        writerProperties({
          codec: 'snappy',
          rowGroupRows: 100_000,
          keyValueMetadata: {
            'org.apache.spark.version': '3.5.0',
            ...(f === 6 && { 'org.apache.spark.legacyDateTime': '' }),
          },
        }),
      );
      await source.put(`in/${f}.parquet`, bytes);
      files.push(await fileOf(source, `in/${f}.parquet`));
    }

    // Act
    const result = await rewriteGroup(
      { source, target },
      { groupId: 'runs', files },
      { outputKey: (i) => `o/${i}`, workers: 2, targetFileSizeBytes: 2 * (files[0]?.size ?? 0) },
    );

    // Assess: each input's rows are in the outputs exactly once, and the outputs verify.
    expect(result.outputs.length).toBeGreaterThan(2);
    const perInput = new Map<number, number>();
    for (const output of result.outputs) {
      const table = tableFromIPC(pw.readParquet(await target.get(output.key)).intoIPCStream());
      for (const id of table.getChild('id')?.toArray() ?? []) {
        const input = Math.floor(Number(id) / 1_000_000);
        perInput.set(input, (perInput.get(input) ?? 0) + 1);
      }
    }
    expect(Object.fromEntries(perInput)).toEqual(Object.fromEntries(files.map((_, f) => [f, rowsPerFile])));
    await verifyOutputs(target, result.outputs, result.fingerprint);
  });

  it('refuses an invalid group before reading anything', async () => {
    // Prepare
    const source = new MemoryObjectStore();

    // Act
    const act = rewriteGroup(
      { source, target: source },
      { groupId: 'bad', files: [], expectedOutputFiles: 0 },
      { outputKey: (i) => `o/${i}` },
    );

    // Assess
    await expect(act).rejects.toBeInstanceOf(InvalidInputError);
    expect(source.requests.getRange).toBe(0);
  });
});

describe('balancedQuotas', () => {
  it('splits rows evenly so no output is a tiny remainder', () => {
    // Prepare / Act
    const quotas = balancedQuotas(10_001, 3);

    // Assess
    expect(quotas).toEqual([3_334, 3_334, 3_333]);
    expect(balancedQuotas(2, 5)).toEqual([1, 1]);
  });
});
