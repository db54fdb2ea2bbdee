// The compact step learns which object it rewrote from its reads' own responses: each GET of an input names the ETag
// and version id of the bytes returned, recorded without a request more; reads that disagree, or an ETag other than
// the planned one, make the input a conflict; only a version read at the planned ETag is kept for the commit.
import { describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import {
  readConflict,
  recordInputReads,
  withReadVersions,
} from '../../../../functions/core/workflow/input-reads.js';
import type { JournalInput } from '../../../../functions/ports/journal.js';
import type { ObjectStore } from '../../../../functions/ports/object-store.js';
import { countingStore } from '../../../support/counting-store.js';

const KEY = 'events/date=2024-01-01/part-0.parquet';
const OTHER = '_lake-compactor/staging/run/g/part.parquet';

async function versionedStore(): Promise<{ store: MemoryObjectStore; etag: string; versionId: string }> {
  const store = new MemoryObjectStore({ versioned: true });
  const { etag } = await store.put(KEY, 'PAR1 the planned bytes PAR1');
  await store.put(OTHER, 'staged');
  const versionId = (await store.head(KEY))?.versionId ?? '';
  return { store, etag, versionId };
}

describe('recordInputReads', () => {
  it('records the ETag and version id that ranged and whole reads of an input returned, in the same requests', async () => {
    // Prepare
    const { store, etag, versionId } = await versionedStore();
    const counting = countingStore(store);
    const reads = recordInputReads(counting.store, [KEY]);

    // Act
    const tail = await reads.store.getRange(KEY, 5, 8);
    const whole = await reads.store.get(KEY);
    await reads.store.get(OTHER);

    // Assess: the bytes are the store's, one GET per read and nothing else sent; only the input is recorded.
    expect(new TextDecoder().decode(tail)).toBe('the ');
    expect(new TextDecoder().decode(whole)).toBe('PAR1 the planned bytes PAR1');
    expect(counting.requests()).toEqual([
      { op: 'get', key: KEY },
      { op: 'get', key: KEY },
      { op: 'get', key: OTHER },
    ]);
    expect(versionId).not.toBe('');
    expect(reads.readOf(KEY)).toEqual({ kind: 'one', etag, versionId });
    expect(reads.readOf(OTHER)).toBeUndefined();
  });

  it('says the reads differ when the input was replaced between two of them', async () => {
    // Prepare
    const { store, etag } = await versionedStore();
    const reads = recordInputReads(store, [KEY]);
    await reads.store.getRange(KEY, 0, 3);
    const replaced = await store.put(KEY, 'PAR1 a writer replaced it PAR1');

    // Act
    await reads.store.get(KEY);

    // Assess
    const read = reads.readOf(KEY);
    expect(read).toEqual({ kind: 'differing', etags: [etag, replaced.etag] });
    expect(readConflict({ key: KEY, etag }, read)).toMatch(/replaced while being read/);
  });

  it('records nothing, and sends the same requests, through a store that cannot say what it read', async () => {
    // Prepare: the port without `read` (a local folder, a test double).
    const { store } = await versionedStore();
    const bare: ObjectStore = {
      description: store.description,
      list: store.list.bind(store),
      listAll: store.listAll.bind(store),
      head: store.head.bind(store),
      getRange: store.getRange.bind(store),
      get: store.get.bind(store),
      put: store.put.bind(store),
      putStream: store.putStream.bind(store),
      copy: store.copy.bind(store),
      deleteMany: store.deleteMany.bind(store),
    };

    // Act
    const reads = recordInputReads(bare, [KEY]);
    const bytes = await reads.store.get(KEY);

    // Assess
    expect(reads.store).toBe(bare);
    expect(bytes.length).toBeGreaterThan(0);
    expect(reads.readOf(KEY)).toBeUndefined();
  });
});

describe('readConflict and withReadVersions', () => {
  const planned: JournalInput = { key: KEY, etag: 'e1', size: 10 };

  it('keeps the version read at the planned ETag, and only that', () => {
    // Act
    const kept = withReadVersions([planned], () => ({ kind: 'one', etag: 'e1', versionId: 'v1' }));
    const other = withReadVersions([planned], () => ({ kind: 'one', etag: 'e2', versionId: 'v2' }));
    const unplanned = withReadVersions([{ ...planned, etag: '' }], () => ({
      kind: 'one',
      etag: 'e1',
      versionId: 'v1',
    }));
    const journaled = withReadVersions([{ ...planned, versionId: 'v0' }], () => ({
      kind: 'one',
      etag: 'e1',
      versionId: 'v1',
    }));

    // Assess
    expect(kept).toEqual([{ ...planned, versionId: 'v1' }]);
    expect(other).toEqual([planned]);
    expect(unplanned).toEqual([{ ...planned, etag: '' }]);
    expect(journaled).toEqual([{ ...planned, versionId: 'v0' }]);
  });

  it('makes an input read at another ETag than planned a conflict, and one never read (or planned without an ETag) none', () => {
    // Act / Assess
    expect(readConflict(planned, { kind: 'one', etag: 'e2' })).toBe(
      'changed since planning (read at ETag e2, planned e1)',
    );
    expect(readConflict(planned, { kind: 'one', etag: 'e1', versionId: 'v1' })).toBeUndefined();
    expect(readConflict(planned, undefined)).toBeUndefined();
    expect(readConflict({ ...planned, etag: '' }, { kind: 'one', etag: 'e2' })).toBeUndefined();
  });
});
