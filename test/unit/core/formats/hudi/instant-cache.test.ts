// The decoded instants a warm function keeps (instant-cache.ts): keyed by key and the listing's ETag, so an instant
// file written again under its name is decoded afresh, never served stale; bounded by the files' sizes, the least
// recently used evicted first.
import { describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../../functions/adapters/memory-object-store.js';
import { HudiInstantCache } from '../../../../../functions/core/formats/hudi/instant-cache.js';
import { readHudiTable } from '../../../../../functions/core/formats/hudi/table-state.js';
import type { HudiCommitMetadata } from '../../../../../functions/core/formats/hudi/timeline.js';
import { appendHudiInsert, createHudiTable } from '../../../../../functions/tools/sample-hudi.js';
import { countingStore } from '../../../../support/counting-store.js';

const metadata = (operationType: string): HudiCommitMetadata => ({
  partitionToWriteStats: new Map(),
  partitionToReplaceFileIds: new Map(),
  operationType,
  extraMetadata: new Map(),
  compacted: false,
});

describe('HudiInstantCache', () => {
  it('serves an instant only at the ETag it was decoded at', () => {
    // Prepare
    const cache = new HudiInstantCache();
    cache.set('t/.hoodie/1.commit', 'etag-1', metadata('insert'), 10);
    // Act / Assess
    expect(cache.get('t/.hoodie/1.commit', 'etag-1')?.operationType).toBe('insert');
    expect(cache.get('t/.hoodie/1.commit', 'etag-2')).toBeUndefined();
    expect(cache.get('t/.hoodie/2.commit', 'etag-1')).toBeUndefined();
  });

  it('keeps at most its bound of file bytes, evicting the least recently used, and never a file larger than it', () => {
    // Prepare: room for two 40-byte files
    const cache = new HudiInstantCache(100);
    cache.set('a', 'e', metadata('a'), 40);
    cache.set('b', 'e', metadata('b'), 40);
    cache.get('a', 'e');
    // Act: a third evicts b (a was used since)
    cache.set('c', 'e', metadata('c'), 40);
    cache.set('huge', 'e', metadata('huge'), 101);
    // Assess
    expect(cache.get('a', 'e')).toBeDefined();
    expect(cache.get('b', 'e')).toBeUndefined();
    expect(cache.get('c', 'e')).toBeDefined();
    expect(cache.get('huge', 'e')).toBeUndefined();
    expect(cache.size).toBe(2);
  });

  it('through a table read (version 6: JSON instants): a second read GETs no instant again; an instant file written again is decoded afresh', async () => {
    // Prepare: two inserts, read once through the cache
    const store = new MemoryObjectStore();
    const table = await createHudiTable(store, 'events', 6);
    await appendHudiInsert(table, '10', 3);
    const second = await appendHudiInsert(table, '20', 4);
    const cache = new HudiInstantCache();
    const counting = countingStore(store);
    await readHudiTable(counting.store, 'events', { instantCache: cache });
    const secondFile = (await store.list('events/.hoodie/')).objects
      .map((o) => o.key)
      .find((k) => k.endsWith(`/${second.instant}.commit`));
    if (secondFile === undefined) throw new Error('the second insert has no completed instant file');

    // Act: a read again; then the second instant's file written again with other metadata, and a third read
    counting.reset();
    await readHudiTable(counting.store, 'events', { instantCache: cache });
    const instantGets = () => counting.requests().filter((r) => r.op === 'get' && r.key.endsWith('.commit'));
    const again = instantGets();
    const original = new TextDecoder().decode(await store.get(secondFile));
    const upsert = original.replace(/("operationType"\s*:\s*)"INSERT"/, '$1"UPSERT"');
    await store.put(secondFile, upsert);
    counting.reset();
    const after = await readHudiTable(counting.store, 'events', { instantCache: cache });
    const rewritten = instantGets();

    // Assess
    expect(upsert).not.toBe(original);
    expect(again).toEqual([]);
    expect(rewritten.map((r) => r.key)).toEqual([secondFile]);
    expect(
      after.timeline.completedWrites.find((w) => w.instant.time === second.instant)?.metadata.operationType,
    ).toBe('UPSERT');
  });
});
