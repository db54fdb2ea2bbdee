import { createHash } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { MemoryObjectStore, type StoreMethod } from '../../../functions/adapters/memory-object-store.js';
import {
  InvalidInputError,
  ObjectNotFoundError,
  TransientStoreError,
} from '../../../functions/core/errors.js';

describe('MemoryObjectStore', () => {
  it('uses the md5 of the content as ETag, like S3 single-part uploads', async () => {
    // Prepare
    const store = new MemoryObjectStore();
    // Act
    const { etag } = await store.put('k', 'hello');
    // Assess
    expect(etag).toBe(createHash('md5').update('hello').digest('hex'));
  });

  it("gives streamed multi-part bodies S3's md5-of-md5s-N ETag", async () => {
    // Prepare
    const store = new MemoryObjectStore();
    const part = new Uint8Array(5).fill(1);
    async function* body(): AsyncGenerator<Uint8Array> {
      yield part;
      yield part;
      yield new Uint8Array([2]);
    }
    const md5 = (data: Uint8Array) => createHash('md5').update(data).digest();
    const expected = createHash('md5')
      .update(Buffer.concat([md5(part), md5(part), md5(new Uint8Array([2]))]))
      .digest('hex');
    // Act
    const { etag, size } = await store.putStream('k', body(), { partSize: 5 });
    // Assess
    expect(size).toBe(11);
    expect(etag).toBe(`${expected}-3`);
  });

  it('fails only the next request of the named method when told to, then recovers', async () => {
    // Prepare
    const store = new MemoryObjectStore();
    await store.put('k', 'v');
    store.failNext('get', new TransientStoreError('injected'));
    // Act
    const head = await store.head('k');
    const first = await store.get('k').catch((error: unknown) => error);
    const second = await store.get('k');
    // Assess
    expect(head?.size).toBe(1);
    expect(first).toBeInstanceOf(TransientStoreError);
    expect(new TextDecoder().decode(second)).toBe('v');
  });

  it('lets an interceptor see every request and fail one before it changes anything', async () => {
    // Prepare
    const seen: [StoreMethod, string][] = [];
    const store = new MemoryObjectStore({
      interceptor: (method, key) => {
        seen.push([method, key]);
        if (method === 'copy') throw new TransientStoreError(`copy of ${key} refused`);
      },
    });
    await store.put('a', 'x');
    // Act
    const copy = await store.copy('a', 'b').catch((error: unknown) => error);
    await store.deleteMany([{ key: 'a' }]);
    // Assess
    expect(copy).toBeInstanceOf(TransientStoreError);
    expect(await store.head('b')).toBeUndefined();
    expect(seen).toEqual([
      ['put', 'a'],
      ['copy', 'a'],
      ['deleteMany', 'a'],
      ['head', 'b'],
    ]);
    expect(store.requests.copy).toBe(1);
  });

  it('refuses a range that starts past the end, as S3 answers 416', async () => {
    // Prepare
    const store = new MemoryObjectStore();
    await store.put('k', '12345');
    // Act
    const range = store.getRange('k', 5, 9);
    // Assess
    await expect(range).rejects.toBeInstanceOf(InvalidInputError);
  });

  it('delays every request by latencyMs, to stand in for S3 round trips in benchmarks', async () => {
    // Prepare
    vi.useFakeTimers();
    try {
      const store = new MemoryObjectStore({ latencyMs: 50 });
      let done = false;
      // Act
      const pending = store.head('k').then(() => {
        done = true;
      });
      await vi.advanceTimersByTimeAsync(49);
      const doneBefore = done;
      await vi.advanceTimersByTimeAsync(1);
      await pending;
      // Assess
      expect(doneBefore).toBe(false);
      expect(done).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });

  it('keeps versions when versioned: a delete leaves a marker and copying an old version restores it', async () => {
    // Prepare
    const store = new MemoryObjectStore({ versioned: true });
    await store.put('t/a.parquet', 'v1');
    await store.put('t/a.parquet', 'v2');
    const planned = await store.head('t/a.parquet');
    // Act
    await store.deleteMany([{ key: 't/a.parquet' }]);
    const afterDelete = await store.head('t/a.parquet');
    await store.copy('t/a.parquet', 't/a.parquet', { sourceVersionId: planned?.versionId as string });
    const restored = await store.get('t/a.parquet');
    // Assess
    expect(planned?.versionId).toMatch(/^v\d+$/);
    expect(afterDelete).toBeUndefined();
    expect(new TextDecoder().decode(restored)).toBe('v2');
    expect((await store.head('t/a.parquet'))?.versionId).not.toBe(planned?.versionId);
  });

  it('removes one version for good when a delete names it, making the previous one current', async () => {
    // Prepare
    const store = new MemoryObjectStore({ versioned: true });
    await store.put('k', 'old');
    const { etag } = await store.put('k', 'new');
    const newest = await store.head('k');
    // Act
    await store.deleteMany([{ key: 'k', versionId: newest?.versionId as string }]);
    const copyOfRemoved = await store
      .copy('k', 'k2', { sourceVersionId: newest?.versionId as string })
      .catch((error: unknown) => error);
    // Assess
    expect(new TextDecoder().decode(await store.get('k'))).toBe('old');
    expect((await store.head('k'))?.etag).not.toBe(etag);
    expect(copyOfRemoved).toBeInstanceOf(ObjectNotFoundError);
  });

  it('refuses sourceVersionId on an unversioned store, saying how to get versions', async () => {
    // Prepare
    const store = new MemoryObjectStore();
    await store.put('k', 'x');
    // Act
    const copy = store.copy('k', 'k2', { sourceVersionId: 'v1' });
    // Assess
    await expect(copy).rejects.toThrow(/versioned: true/);
  });
});
