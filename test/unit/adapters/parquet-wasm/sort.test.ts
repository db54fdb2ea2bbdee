// Proves the sort strategy: outputs are ordered by the given columns (nulls first, stable), keep the
// row multiset and verify, and a group over the memory budget is refused before anything is written.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { rewriteGroup } from '../../../../functions/adapters/parquet-wasm/rewrite.js';
import { verifyOutputs } from '../../../../functions/adapters/parquet-wasm/verify.js';
import { InvalidInputError, MemoryBudgetExceededError } from '../../../../functions/core/errors.js';
import { type DuckWorkspace, duckWorkspace, eventsSelect } from './helpers.js';

let duck: DuckWorkspace;
beforeAll(async () => {
  duck = await duckWorkspace();
});
afterAll(async () => {
  await duck.close();
});

async function eventsGroup() {
  const source = new MemoryObjectStore();
  const files = [];
  for (let i = 0; i < 3; i++) {
    const bytes = await duck.parquet(eventsSelect(1_500, i * 31));
    const key = `in/${i}.parquet`;
    files.push({ key, size: bytes.length, ...(await source.put(key, bytes)) });
  }
  return { source, files };
}

describe('rewriteGroup with sort', () => {
  it('orders rows by the sort columns (nulls first, ties in input order) and keeps the multiset', async () => {
    // Prepare
    const { source, files } = await eventsGroup();
    const target = new MemoryObjectStore();

    // Act
    const result = await rewriteGroup(
      { source, target },
      { groupId: 's', files, expectedOutputFiles: 2 },
      {
        outputKey: (i) => `out/${i}.parquet`,
        sort: { columns: ['revenue_usd', 'user_id'], memoryBudgetBytes: 64 * 1024 * 1024 },
        batchRows: 500,
      },
    );
    await verifyOutputs(target, result.outputs, result.fingerprint);

    // Assess
    const inputs = await duck.materialise(
      source,
      files.map((f) => f.key),
    );
    const outputs = await duck.materialise(
      target,
      result.outputs.map((o) => o.key),
    );
    const expected = await duck.db.rows(
      `SELECT revenue_usd, user_id, session_id FROM (SELECT *, row_number() OVER () AS n FROM read_parquet(${inputs}))
        ORDER BY revenue_usd NULLS FIRST, user_id NULLS FIRST, n`,
    );
    const actual = await duck.db.rows(
      `SELECT revenue_usd, user_id, session_id FROM read_parquet(${outputs})`,
    );
    expect(actual).toEqual(expected);
    expect(result.outputs.map((o) => o.rows)).toEqual([2_250, 2_250]);
  });

  it('refuses a group whose decoded size exceeds the memory budget before writing anything', async () => {
    // Prepare
    const { source, files } = await eventsGroup();
    const target = new MemoryObjectStore();

    // Act
    const err = await rewriteGroup(
      { source, target },
      { groupId: 'big', files },
      { outputKey: (i) => `out/${i}.parquet`, sort: { columns: ['user_id'], memoryBudgetBytes: 10_000 } },
    ).catch((e: unknown) => e);

    // Assess
    expect(err).toBeInstanceOf(MemoryBudgetExceededError);
    expect((err as Error).message).toMatch(
      /needs about \d+ bytes decoded.*budget is 10000 bytes.*raise sort\.memoryBudgetBytes/,
    );
    expect(target.requests.putStream).toBe(0);
  });

  it('refuses a sort column that does not exist', async () => {
    // Prepare
    const { source, files } = await eventsGroup();
    const target = new MemoryObjectStore();

    // Act
    const err = await rewriteGroup(
      { source, target },
      { groupId: 'nocol', files },
      { outputKey: (i) => `out/${i}.parquet`, sort: { columns: ['nope'], memoryBudgetBytes: 1 << 30 } },
    ).catch((e: unknown) => e);

    // Assess
    expect(err).toBeInstanceOf(InvalidInputError);
    const left = [];
    for await (const o of target.listAll('')) left.push(o.key);
    expect(left).toEqual([]);
  });
});
