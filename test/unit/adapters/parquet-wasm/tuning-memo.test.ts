// The writer tuning memo (`RewriteOptions.tuningMemo`): a run of an output schema already sampled by an earlier
// group of the caller's job is written with that sample's decisions instead of sampling its own input, and the rows
// are the same either way. Observed through a decision that differs between two inputs of one schema: the `auto`
// statistics policy drops min/max only on a sampled string column whose values are nearly all distinct and in no
// order — true of the first group's `request_id`, false of the second's.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { rewriteGroup } from '../../../../functions/adapters/parquet-wasm/rewrite.js';
import type { RewriteOptions, WriterTuningMemo } from '../../../../functions/ports/parquet-engine.js';
import { type DuckWorkspace, duckWorkspace, fileOf } from './helpers.js';

let duck: DuckWorkspace;
beforeAll(async () => {
  duck = await duckWorkspace();
});
afterAll(async () => {
  await duck.close();
});

/** One input of 5,000 rows: `request_id` random hex (`random`) or an ordered key (`ordered`). */
async function input(store: MemoryObjectStore, key: string, ids: 'random' | 'ordered'): Promise<void> {
  const id = ids === 'random' ? 'md5((i * 7919)::VARCHAR)' : "printf('req-%08d', i)";
  await store.put(
    key,
    await duck.parquet(
      `SELECT i::BIGINT AS id, ${id} AS request_id, (['a','b','c'])[(i % 3) + 1] AS label FROM range(0, 5000) t(i)`,
    ),
  );
}

/** Whether every chunk of `request_id` in `key` has min and max. */
async function requestIdHasStatistics(store: MemoryObjectStore, key: string): Promise<boolean> {
  const list = await duck.materialise(store, [key]);
  const rows = await duck.db.rows(
    `SELECT bool_and(stats_min_value IS NOT NULL AND stats_max_value IS NOT NULL) AS full
       FROM parquet_metadata(${list}) WHERE path_in_schema = 'request_id'`,
  );
  return rows[0]?.full === true;
}

/** Rows of `a` not in `b` plus rows of `b` not in `a`, as multisets. */
async function rowDifference(store: MemoryObjectStore, a: string, b: string): Promise<number> {
  const [x, y] = [await duck.materialise(store, [a]), await duck.materialise(store, [b])];
  const rows = await duck.db.rows(
    `SELECT (SELECT count(*) FROM (SELECT * FROM read_parquet(${x}) EXCEPT ALL SELECT * FROM read_parquet(${y})))
          + (SELECT count(*) FROM (SELECT * FROM read_parquet(${y}) EXCEPT ALL SELECT * FROM read_parquet(${x}))) AS n`,
  );
  return Number(rows[0]?.n);
}

async function rewriteOne(
  store: MemoryObjectStore,
  inputKey: string,
  outputKey: string,
  extra: Partial<RewriteOptions>,
): Promise<void> {
  await rewriteGroup(
    { source: store, target: store },
    { groupId: outputKey, files: [await fileOf(store, inputKey)], expectedOutputFiles: 1 },
    { outputKey: () => outputKey, statistics: { mode: 'auto' }, stitch: false, ...extra },
  );
}

describe('rewriteGroup with a tuning memo', () => {
  it("writes a later group of the same schema with the first group's sampled decisions, rows unchanged", async () => {
    // Prepare: the first group's ids are random, the second's ordered.
    const store = new MemoryObjectStore();
    await input(store, 'in/random.parquet', 'random');
    await input(store, 'in/ordered.parquet', 'ordered');
    const tuningMemo: WriterTuningMemo = new Map();

    // Act
    await rewriteOne(store, 'in/random.parquet', 'out/first.parquet', { tuningMemo });
    await rewriteOne(store, 'in/ordered.parquet', 'out/second-memo.parquet', { tuningMemo });
    await rewriteOne(store, 'in/ordered.parquet', 'out/second-alone.parquet', {});

    // Assess: one tuning kept; the second group sampled alone keeps request_id's statistics, with the memo it
    // takes the first group's decision to drop them; its rows are the input's either way.
    expect(tuningMemo.size).toBe(1);
    expect(await requestIdHasStatistics(store, 'out/first.parquet')).toBe(false);
    expect(await requestIdHasStatistics(store, 'out/second-alone.parquet')).toBe(true);
    expect(await requestIdHasStatistics(store, 'out/second-memo.parquet')).toBe(false);
    expect(await rowDifference(store, 'in/ordered.parquet', 'out/second-memo.parquet')).toBe(0);
    expect(await rowDifference(store, 'in/ordered.parquet', 'out/second-alone.parquet')).toBe(0);
  });

  it('keeps tunings of different schemas apart', async () => {
    // Prepare: a second schema (one more column) after the first.
    const store = new MemoryObjectStore();
    await input(store, 'in/random.parquet', 'random');
    await store.put(
      'in/wider.parquet',
      await duck.parquet(
        `SELECT i::BIGINT AS id, printf('req-%08d', i) AS request_id, 'x' AS label, i AS extra FROM range(0, 5000) t(i)`,
      ),
    );
    const tuningMemo: WriterTuningMemo = new Map();

    // Act
    await rewriteOne(store, 'in/random.parquet', 'out/first.parquet', { tuningMemo });
    await rewriteOne(store, 'in/wider.parquet', 'out/wider.parquet', { tuningMemo });

    // Assess: the wider schema sampled its own input (ordered ids keep their statistics).
    expect(tuningMemo.size).toBe(2);
    expect(await requestIdHasStatistics(store, 'out/wider.parquet')).toBe(true);
  });
});
