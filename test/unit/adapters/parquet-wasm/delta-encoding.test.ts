// Proves the opt-in DELTA_BINARY_PACKED writing: with `deltaEncoding`, integer and timestamp columns the
// trial finds no larger are written DELTA_BINARY_PACKED and the rows read back by DuckDB (an independent
// reader) are the inputs' exact multiset, in order; without it, no DELTA encoding appears in any column.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { rewriteGroup } from '../../../../functions/adapters/parquet-wasm/rewrite.js';
import { verifyOutputs } from '../../../../functions/adapters/parquet-wasm/verify.js';
import { writeSampleLake } from '../../../../functions/tools/sample-lake.js';
import { type DuckWorkspace, duckWorkspace, fileOf } from './helpers.js';

let duck: DuckWorkspace;
beforeAll(async () => {
  duck = await duckWorkspace();
});
afterAll(async () => {
  await duck.close();
});

async function lake(): Promise<{
  source: MemoryObjectStore;
  files: { key: string; size: number; etag: string }[];
}> {
  const source = new MemoryObjectStore();
  const keys: string[] = [];
  await writeSampleLake(
    async (key, bytes) => {
      keys.push(key);
      await source.put(key, bytes);
    },
    { files: 6, rows: 4_000, partitions: 'single', seed: 21 },
  );
  return { source, files: await Promise.all(keys.map((k) => fileOf(source, k))) };
}

/** Column path → the encodings DuckDB reports for it, over every row group of `paths`. */
async function encodingsOf(paths: string): Promise<Record<string, string>> {
  const rows = await duck.db.rows(
    `SELECT path_in_schema AS col, string_agg(DISTINCT encodings, ',' ORDER BY encodings) AS enc
       FROM parquet_metadata(${paths}) GROUP BY 1 ORDER BY 1`,
  );
  return Object.fromEntries(rows.map((r) => [String(r.col), String(r.enc)]));
}

describe('rewriteGroup with deltaEncoding', () => {
  it.each(['zstd', 'snappy'] as const)(
    'writes DELTA_BINARY_PACKED where it wins (%s) and keeps every row, in order',
    async (codec) => {
      // Prepare
      const { source, files } = await lake();
      const target = new MemoryObjectStore();

      // Act
      const result = await rewriteGroup(
        { source, target },
        { groupId: 'd', files, expectedOutputFiles: 2 },
        { outputKey: (i) => `out/${i}.parquet`, codec, deltaEncoding: true },
      );
      await verifyOutputs(target, result.outputs, result.fingerprint);

      // Assess: the sorted millisecond timestamps always delta-encode smaller than PLAIN.
      const outputs = await duck.materialise(
        target,
        result.outputs.map((o) => o.key),
      );
      const encodings = await encodingsOf(outputs);
      expect(encodings.event_timestamp).toContain('DELTA_BINARY_PACKED');
      expect(encodings.session_id).not.toContain('DELTA');
      const inputs = await duck.materialise(
        source,
        files.map((f) => f.key),
      );
      const differing = await duck.db.scalar(
        `SELECT count(*) FROM (SELECT *, row_number() OVER () AS n FROM read_parquet(${inputs})) x
          FULL JOIN (SELECT *, row_number() OVER () AS n FROM read_parquet(${outputs})) y USING (n)
          WHERE x.user_id IS DISTINCT FROM y.user_id OR x.event_type IS DISTINCT FROM y.event_type
             OR x.event_timestamp IS DISTINCT FROM y.event_timestamp OR x.session_id IS DISTINCT FROM y.session_id
             OR x.revenue_usd IS DISTINCT FROM y.revenue_usd`,
      );
      expect(Number(differing)).toBe(0);
      expect(Number(await duck.db.scalar(`SELECT count(*) FROM read_parquet(${outputs})`))).toBe(24_000);
    },
  );

  it('writes no DELTA encoding without it, so every reader can read the outputs', async () => {
    // Prepare
    const { source, files } = await lake();
    const target = new MemoryObjectStore();

    // Act
    const result = await rewriteGroup(
      { source, target },
      { groupId: 'p', files },
      { outputKey: (i) => `out/${i}.parquet` },
    );

    // Assess
    const encodings = await encodingsOf(
      await duck.materialise(
        target,
        result.outputs.map((o) => o.key),
      ),
    );
    expect(Object.keys(encodings).length).toBe(5);
    expect(Object.values(encodings).filter((e) => e.includes('DELTA'))).toEqual([]);
  });
});
