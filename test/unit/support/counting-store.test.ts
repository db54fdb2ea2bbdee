// The request-counting store counts port calls as the S3 requests they become, so the cost model's tests and the
// bench's request lines compare like with like: multipart uploads, DeleteObjects batches and LIST pages.
import { describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../functions/adapters/memory-object-store.js';
import { countingStore } from '../../support/counting-store.js';

const MiB = 1024 * 1024;

async function* chunks(total: number, size = MiB): AsyncIterable<Uint8Array> {
  for (let sent = 0; sent < total; sent += size) yield new Uint8Array(Math.min(size, total - sent));
}

describe('countingStore', () => {
  it('counts an upload above one part as create + parts + complete, and a small one as one PUT', async () => {
    // Prepare
    const counting = countingStore(new MemoryObjectStore());

    // Act
    await counting.store.putStream('big', chunks(20 * MiB));
    const big = counting.counts().put;
    counting.reset();
    await counting.store.putStream('small', chunks(1024));

    // Assess: 20 MiB in 8 MiB parts is 3 parts.
    expect(big).toBe(3 + 2);
    expect(counting.counts()).toEqual({ get: 0, put: 1, copy: 0, delete: 0 });
  });

  it('counts one DeleteObjects per 1,000 keys and one LIST per page of 1,000 keys', async () => {
    // Prepare
    const inner = new MemoryObjectStore();
    const keys = Array.from({ length: 2_500 }, (_, i) => `p/${String(i).padStart(5, '0')}`);
    for (const key of keys) await inner.put(key, 'x');
    const counting = countingStore(inner);

    // Act
    let listed = 0;
    for await (const _ of counting.store.listAll('p/')) listed++;
    const afterList = counting.counts();
    await counting.store.deleteMany(keys.map((key) => ({ key })));
    await counting.store.deleteMany([]);

    // Assess
    expect(listed).toBe(2_500);
    expect(afterList).toEqual({ get: 0, put: 3, copy: 0, delete: 0 });
    expect(counting.counts().delete).toBe(3);
    expect(inner.keys()).toEqual([]);
  });

  it('bills HEAD, whole and ranged GETs and the versioning check as GET class, and COPY apart', async () => {
    // Prepare
    const counting = countingStore(new MemoryObjectStore({ versioned: true }));
    await counting.store.put('a', 'hello');
    counting.reset();

    // Act
    await counting.store.head('a');
    await counting.store.get('a');
    await counting.store.getRange('a', 0, 1);
    await counting.store.versioning?.();
    await counting.store.copy('a', 'b');

    // Assess
    expect(counting.counts()).toEqual({ get: 4, put: 0, copy: 1, delete: 0 });
  });
});
