// Proves that a tiny input is fetched once per rewrite: pre-flight's footer read already covers a small file
// whole, and the rewrite decodes it from those bytes instead of making a second request — also for a group of
// tiny files larger than the 16 MiB fetch budget's old 8 MiB cache (each request is CPU and an S3 GET).

import { describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { rewriteGroup } from '../../../../functions/adapters/parquet-wasm/rewrite.js';
import type { ObjectStore } from '../../../../functions/ports/object-store.js';
import { generateEventsBatch, mulberry32 } from '../../../../functions/tools/sample-lake.js';

/** Counts the reads of each key (`get` and `getRange`) made through the store. */
function countingReads(store: ObjectStore): { store: ObjectStore; reads: Map<string, number> } {
  const reads = new Map<string, number>();
  const count = (key: string) => reads.set(key, (reads.get(key) ?? 0) + 1);
  return {
    reads,
    store: new Proxy(store, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver);
        if (prop === 'get' || prop === 'getRange') {
          return (key: string, ...rest: unknown[]) => {
            count(key);
            return (value as (...a: unknown[]) => unknown).call(target, key, ...rest);
          };
        }
        return typeof value === 'function' ? value.bind(target) : value;
      },
    }),
  };
}

describe('tiny inputs', () => {
  it('are each read from the store exactly once, even when the group holds more than 8 MiB of them', async () => {
    // Prepare: 200 inputs of ~45 KB (under the footer read's 64 KiB, so pre-flight fetches each whole): ~9 MB.
    const bytes = generateEventsBatch(mulberry32(7), { rows: 3_500, day: '2024-01-01' });
    expect(bytes.length).toBeLessThan(64 * 1024);
    const source = new MemoryObjectStore();
    const files = [];
    for (let i = 0; i < 200; i++) {
      const key = `in/${String(i).padStart(3, '0')}.parquet`;
      await source.put(key, bytes);
      files.push({ key, size: bytes.length, etag: '' });
    }
    expect(files.length * bytes.length).toBeGreaterThan(8 * 1024 * 1024);
    const counted = countingReads(source);

    // Act
    const result = await rewriteGroup(
      { source: counted.store, target: new MemoryObjectStore() },
      { groupId: 'g', files },
      { outputKey: (i) => `out/${i}.parquet` },
    );

    // Assess: every row rewritten, and no input read twice.
    expect(result.fingerprint.rows).toBe(200 * 3_500);
    expect([...counted.reads.keys()].sort()).toEqual(files.map((f) => f.key));
    expect([...counted.reads.values()].every((n) => n === 1)).toBe(true);
  });
});
