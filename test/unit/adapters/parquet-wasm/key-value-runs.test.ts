// Inputs of one schema whose footers differ only in writer stamps (Databricks' write timestamp, Spark's version)
// are one schema run: compacted together, every output carrying the first input's key-value metadata, verified
// from the objects alone. Entries that change how values read (Spark's calendar rebase) or describe a file's
// contents (a bloom filter) still keep files apart, each output with its own run's entries.
import { parquetMetadata } from 'hyparquet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { parquetWasmEngine } from '../../../../functions/adapters/parquet-wasm/engine.js';
import { rewriteGroup } from '../../../../functions/adapters/parquet-wasm/rewrite.js';
import { type DuckWorkspace, duckWorkspace, eventsSelect, fileOf } from './helpers.js';

const ROW_METADATA =
  '{"type":"struct","fields":[{"name":"user_id","type":"long","nullable":true,"metadata":{}}]}';

let duck: DuckWorkspace;

beforeAll(async () => {
  duck = await duckWorkspace();
});

afterAll(async () => {
  await duck.close();
});

/** DuckDB's KV_METADATA option for `entries`. */
function kvOption(entries: Readonly<Record<string, string>>): string {
  const pairs = Object.entries(entries).map(([k, v]) => `'${k}': '${v}'`);
  return `KV_METADATA {${pairs.join(', ')}}`;
}

/** Stores `count` event files of 200 rows each, the i-th with the key-value metadata `kv(i)`. */
async function inputs(
  store: MemoryObjectStore,
  count: number,
  kv: (i: number) => Readonly<Record<string, string>>,
): Promise<{ key: string; size: number; etag: string }[]> {
  const files = [];
  for (let i = 0; i < count; i++) {
    const key = `in/part-${i}.parquet`;
    await store.put(
      key,
      await duck.parquet(eventsSelect(200, i * 1000), { extraOptions: [kvOption(kv(i))] }),
    );
    files.push(await fileOf(store, key));
  }
  return files;
}

/** The key-value metadata of a stored output, without the Arrow schema the writer writes itself. */
async function kvOf(store: MemoryObjectStore, key: string): Promise<Record<string, string>> {
  const bytes = await store.get(key);
  const meta = parquetMetadata(
    bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer,
  );
  return Object.fromEntries(
    (meta.key_value_metadata ?? [])
      .filter((e) => e.key !== 'ARROW:schema')
      .map((e) => [e.key, e.value ?? '']),
  );
}

/** Every row of the stored objects, canonically ordered (read by DuckDB). */
async function rowsOf(store: MemoryObjectStore, keys: readonly string[]): Promise<string[]> {
  const rows = await duck.db.rows(
    `SELECT * FROM read_parquet(${await duck.materialise(store, keys)}) ORDER BY ALL`,
  );
  return rows.map((r) => JSON.stringify(r, (_, v) => (typeof v === 'bigint' ? String(v) : v)));
}

/** A Databricks-style footer: Spark 3.5's version and row schema, and the file's own write timestamp. */
function databricks(i: number): Record<string, string> {
  return {
    'org.apache.spark.version': '3.5.0',
    'org.apache.spark.sql.parquet.row.metadata': ROW_METADATA,
    'com.databricks.spark.writeTimestamp': String(1_717_000_000_000 + i * 60_000),
  };
}

describe('schema runs and key-value metadata', () => {
  it('compacts eight files that differ only in their write timestamp into one output with the first one’s metadata', async () => {
    // Prepare
    const store = new MemoryObjectStore();
    const files = await inputs(store, 8, databricks);
    const before = await rowsOf(
      store,
      files.map((f) => f.key),
    );

    // Act
    const result = await rewriteGroup(
      { source: store, target: store },
      { groupId: 'g', files },
      { outputKey: (i) => `out/${i}.parquet`, codec: 'zstd' },
    );

    // Assess: one output, the first input's entries, verified from the object, the same rows
    expect(result.outputs.map((o) => o.key)).toEqual(['out/0.parquet']);
    expect(await kvOf(store, 'out/0.parquet')).toEqual(databricks(0));
    await parquetWasmEngine.verifyOutputs(store, result.outputs, result.fingerprint);
    expect(await rowsOf(store, ['out/0.parquet'])).toEqual(before);
  });

  it('writes the first input’s metadata into every output of the run, on worker threads too', async () => {
    // Prepare: a target small enough for several outputs
    const store = new MemoryObjectStore();
    const files = await inputs(store, 8, databricks);
    const before = await rowsOf(
      store,
      files.map((f) => f.key),
    );

    // Act
    const result = await rewriteGroup(
      { source: store, target: store },
      { groupId: 'g', files, expectedOutputFiles: 3 },
      { outputKey: (i) => `out/${i}.parquet`, codec: 'zstd', workers: 2 },
    );

    // Assess
    expect(result.outputs).toHaveLength(3);
    for (const o of result.outputs) expect(await kvOf(store, o.key), o.key).toEqual(databricks(0));
    await parquetWasmEngine.verifyOutputs(store, result.outputs, result.fingerprint);
    expect(
      await rowsOf(
        store,
        result.outputs.map((o) => o.key),
      ),
    ).toEqual(before);
  });

  it('keeps files Spark reads with another calendar, or with another bloom filter, in runs of their own', async () => {
    // Prepare: inputs 0-1 modern, 2-3 written in Spark's LEGACY rebase mode, 4-5 with another content entry
    const store = new MemoryObjectStore();
    const kv = (i: number): Record<string, string> =>
      i < 2
        ? databricks(i)
        : i < 4
          ? { ...databricks(i), 'org.apache.spark.legacyDateTime': '', 'org.apache.spark.timeZone': 'UTC' }
          : { ...databricks(i), hoodie_min_record_key: `k${i}` };
    const files = await inputs(store, 6, kv);
    const before = await rowsOf(
      store,
      files.map((f) => f.key),
    );

    // Act
    const result = await rewriteGroup(
      { source: store, target: store },
      { groupId: 'g', files },
      { outputKey: (i) => `out/${i}.parquet`, codec: 'zstd' },
    );

    // Assess: four runs — the two modern files, the two legacy ones, then each file with its own record-key range
    const written = [];
    for (const o of result.outputs) written.push(await kvOf(store, o.key));
    expect(written).toEqual([kv(0), kv(2), kv(4), kv(5)]);
    await parquetWasmEngine.verifyOutputs(store, result.outputs, result.fingerprint);
    expect(
      await rowsOf(
        store,
        result.outputs.map((o) => o.key),
      ),
    ).toEqual(before);
  });
});
