// Proves the writer settings chosen from the data and the declared readers, end to end through rewriteGroup:
// under `auto` statistics the sampled high-cardinality unordered string column is written without statistics and
// every other column keeps min/max/null count (DuckDB reads the footers), the rows read back identically; and
// stitching copies DELTA_BINARY_PACKED inputs only when the declared readers resolve deltaEncoding on.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { rewriteGroup } from '../../../../functions/adapters/parquet-wasm/rewrite.js';
import { verifyOutputs } from '../../../../functions/adapters/parquet-wasm/verify.js';
import { pw } from '../../../../functions/adapters/parquet-wasm/wasm.js';
import { type Reader, resolveDeltaEncoding } from '../../../../functions/core/readers.js';
import type { InputFile } from '../../../../functions/ports/parquet-engine.js';
import { type DuckWorkspace, duckWorkspace, eventsSelect, fileOf } from './helpers.js';

let duck: DuckWorkspace;
beforeAll(async () => {
  duck = await duckWorkspace();
});
afterAll(async () => {
  await duck.close();
});

/** Four inputs: an ordered id, a random hex request id, an ordered key, a low-cardinality label, some nulls. */
async function inputs(source: MemoryObjectStore): Promise<InputFile[]> {
  const files: InputFile[] = [];
  for (let part = 0; part < 4; part++) {
    const bytes = await duck.parquet(
      `SELECT i::BIGINT AS id,
              md5((i * 7919)::VARCHAR) AS request_id,
              md5((i * 104729)::VARCHAR) AS trace_id,
              printf('key-%08d', i) AS order_key,
              (['a','b','c'])[(i % 3) + 1] AS label,
              CASE WHEN i % 9 = 0 THEN NULL ELSE i * 2 END AS amount
         FROM range(${part * 5_000}, ${(part + 1) * 5_000}) t(i)`,
    );
    await source.put(`in/${part}.parquet`, bytes);
    files.push(await fileOf(source, `in/${part}.parquet`));
  }
  return files;
}

/** Column → whether every chunk of `paths` has min, max and null count. */
async function statisticsOf(paths: string): Promise<Record<string, boolean>> {
  const rows = await duck.db.rows(
    `SELECT path_in_schema AS col,
            bool_and(stats_min_value IS NOT NULL AND stats_max_value IS NOT NULL AND stats_null_count IS NOT NULL) AS full
       FROM parquet_metadata(${paths}) GROUP BY 1 ORDER BY 1`,
  );
  return Object.fromEntries(rows.map((r) => [String(r.col), r.full === true]));
}

describe('rewriteGroup with the auto statistics policy', () => {
  it('writes no statistics on the unordered high-cardinality strings and full statistics elsewhere, rows unchanged', async () => {
    // Prepare
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    const files = await inputs(source);

    // Act
    const result = await rewriteGroup(
      { source, target },
      { groupId: 'auto', files },
      { outputKey: (i) => `out/${i}.parquet`, statistics: { mode: 'auto', keep: ['trace_id'] } },
    );
    await verifyOutputs(target, result.outputs, result.fingerprint);

    // Assess
    const outputs = await duck.materialise(
      target,
      result.outputs.map((o) => o.key),
    );
    expect(await statisticsOf(outputs)).toEqual({
      amount: true,
      id: true,
      label: true,
      order_key: true,
      request_id: false,
      trace_id: true,
    });
    const originals = await duck.materialise(
      source,
      files.map((f) => f.key),
    );
    const differing = await duck.db.scalar(
      `SELECT count(*) FROM (SELECT *, row_number() OVER () AS n FROM read_parquet(${originals})) x
        FULL JOIN (SELECT *, row_number() OVER () AS n FROM read_parquet(${outputs})) y USING (n)
        WHERE x IS DISTINCT FROM y OR x.id IS DISTINCT FROM y.id OR x.request_id IS DISTINCT FROM y.request_id
           OR x.trace_id IS DISTINCT FROM y.trace_id OR x.order_key IS DISTINCT FROM y.order_key
           OR x.label IS DISTINCT FROM y.label OR x.amount IS DISTINCT FROM y.amount`,
    );
    expect(Number(differing)).toBe(0);
    const filtered = await duck.db.scalar(
      `SELECT count(*) FROM read_parquet(${outputs}) WHERE request_id = md5((4242 * 7919)::VARCHAR)`,
    );
    expect(Number(filtered)).toBe(1);
  });

  it('keeps statistics on every column under the default, and on sort columns under auto', async () => {
    // Prepare
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    const files = await inputs(source);

    // Act
    const all = await rewriteGroup(
      { source, target },
      { groupId: 'all', files },
      { outputKey: (i) => `all/${i}.parquet` },
    );
    const sorted = await rewriteGroup(
      { source, target },
      { groupId: 'sorted', files },
      {
        outputKey: (i) => `sorted/${i}.parquet`,
        statistics: { mode: 'auto' },
        sort: { columns: ['request_id'], memoryBudgetBytes: 256 * 1024 * 1024 },
      },
    );

    // Assess
    const full = (keys: readonly { key: string }[]) =>
      duck.materialise(
        target,
        keys.map((o) => o.key),
      );
    expect(Object.values(await statisticsOf(await full(all.outputs))).every(Boolean)).toBe(true);
    const sortedStats = await statisticsOf(await full(sorted.outputs));
    expect(sortedStats.request_id).toBe(true);
    expect(sortedStats.trace_id).toBe(false);
  });
});

describe('stitching under the declared readers', () => {
  /** An input with one large row group, user_id written DELTA_BINARY_PACKED by another writer. */
  async function deltaInput(source: MemoryObjectStore): Promise<InputFile[]> {
    const from = await duck.parquet(eventsSelect(20_000, 5));
    const props = new pw.WriterPropertiesBuilder()
      .setCompression(pw.Compression.ZSTD)
      .setStatisticsEnabled(pw.EnabledStatistics.Chunk)
      .setMaxRowGroupSize(20_000)
      .setCreatedBy('readers-test writer')
      .setColumnDictionaryEnabled('user_id', false)
      .setColumnEncoding('user_id', pw.Encoding.DELTA_BINARY_PACKED)
      .build();
    await source.put('delta.parquet', pw.writeParquet(pw.readParquet(from), props));
    return [await fileOf(source, 'delta.parquet')];
  }

  it.each([
    [['spark-3.3', 'trino', 'duckdb'], true],
    [['trino', 'spark-legacy'], false],
  ] as [Reader[], boolean][])('readers %j: the DELTA input is stitched = %s', async (readers, stitched) => {
    // Prepare
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    const files = await deltaInput(source);

    // Act
    const result = await rewriteGroup(
      { source, target },
      { groupId: 'g', files },
      {
        outputKey: (i) => `out/${i}.parquet`,
        deltaEncoding: resolveDeltaEncoding(undefined, readers),
        stitch: { minRowGroupRows: 10_000, minRowGroupBytes: 1024 * 1024 * 1024 },
      },
    );
    await verifyOutputs(target, result.outputs, result.fingerprint, { sources: source });

    // Assess
    const outputs = await duck.materialise(
      target,
      result.outputs.map((o) => o.key),
    );
    const createdBy = await duck.db.scalar(
      `SELECT DISTINCT created_by FROM parquet_file_metadata(${outputs})`,
    );
    const userIdEncodings = await duck.db.scalar(
      `SELECT string_agg(DISTINCT encodings, ',') FROM parquet_metadata(${outputs}) WHERE path_in_schema = 'user_id'`,
    );
    expect(String(createdBy) === 'readers-test writer').toBe(stitched);
    expect(String(userIdEncodings).includes('DELTA_BINARY_PACKED')).toBe(stitched);
  });
});
