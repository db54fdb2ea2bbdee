// Proves the hand-off of bytes to engine workers (inputs for the parallel rewrite, output ranges for
// parallel verification) never detaches memory the store still shares: a store may return views into a
// larger ArrayBuffer, as Node's pooled Buffers are, and transferring such a view's buffer would empty
// every other view of it.

import { describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { rewriteGroup } from '../../../../functions/adapters/parquet-wasm/rewrite.js';
import { verifyOutputs } from '../../../../functions/adapters/parquet-wasm/verify.js';
import { writeSampleLake } from '../../../../functions/tools/sample-lake.js';
import { fileOf } from './helpers.js';

/** Returns every read as a Buffer view in the middle of a larger pool, beside a sentinel view of the same pool. */
class PooledViews extends MemoryObjectStore {
  readonly sentinels: Buffer[] = [];
  private pooled(bytes: Uint8Array): Uint8Array {
    const pool = Buffer.alloc(bytes.byteLength + 16, 7);
    pool.set(bytes, 8);
    this.sentinels.push(pool.subarray(0, 8));
    return pool.subarray(8, 8 + bytes.byteLength);
  }
  override async get(key: string): Promise<Uint8Array> {
    return this.pooled(await super.get(key));
  }
  override async getRange(key: string, start: number, end: number): Promise<Uint8Array> {
    return this.pooled(await super.getRange(key, start, end));
  }
}

describe('bytes handed to engine workers', () => {
  it('are copied when they are a view, so no other view of the store’s buffers is detached', async () => {
    // Prepare
    const store = new PooledViews();
    const keys: string[] = [];
    await writeSampleLake(
      async (key, bytes) => {
        await store.put(key, bytes);
        keys.push(key);
      },
      { files: 6, rows: 1_000, partitions: 'single', seed: 11 },
    );
    const files = await Promise.all(keys.map((k) => fileOf(store, k)));

    // Act: inputs go to two encoding workers, then the outputs' ranges to two hashing workers.
    const result = await rewriteGroup(
      { source: store, target: store },
      { groupId: 't', files, expectedOutputFiles: 3 },
      { outputKey: (i) => `out/${i}.parquet`, workers: 2 },
    );
    const report = await verifyOutputs(store, result.outputs, result.fingerprint, { workers: 2 });

    // Assess
    expect(report.rows).toBe(6_000);
    expect(store.sentinels.length).toBeGreaterThan(0);
    const detached = store.sentinels.filter((s) => s.byteLength !== 8 || s.some((b) => b !== 7));
    expect(detached).toHaveLength(0);
  });
});
