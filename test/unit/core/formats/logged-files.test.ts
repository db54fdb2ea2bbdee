// A data file a table's log names, as the plan records it: the object's own ETag (so the compact step can tell a
// replaced input from a bad one), its footer's rows — or, for a file missing or of another size than the log
// says, left alone with why instead of a footer read at the wrong offset.
import { describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { withStoredFooter } from '../../../../functions/core/formats/logged-files.js';
import { int96File } from '../../../support/legacy-parquet.js';

describe('withStoredFooter', () => {
  it("records the object's ETag and its footer's rows in place of the log's empty ETag and row count", async () => {
    // Prepare
    const store = new MemoryObjectStore();
    const bytes = int96File([1n, 2n, null]);
    const { etag } = await store.put('t/part-0.parquet', bytes);

    // Act
    const file = await withStoredFooter(
      store,
      { key: 't/part-0.parquet', size: bytes.length, etag: '', rows: 99 },
      'the Delta log',
      'a Delta client',
    );

    // Assess
    expect(file).toMatchObject({ key: 't/part-0.parquet', size: bytes.length, etag, rows: 3 });
    expect(file.etag).not.toBe('');
    expect(file.unreadable).toBeUndefined();
    expect(file.schemaFingerprint).toMatch(/^[0-9a-f]{64}$/);
  });

  it('leaves alone, with why, a file of another size than the log records and a file missing from storage', async () => {
    // Prepare
    const store = new MemoryObjectStore();
    const bytes = int96File([1n]);
    const { etag } = await store.put('t/part-0.parquet', bytes);

    // Act
    const resized = await withStoredFooter(
      store,
      { key: 't/part-0.parquet', size: bytes.length + 10, etag: '' },
      'the Delta log',
      'a Delta client',
    );
    const missing = await withStoredFooter(
      store,
      { key: 't/part-1.parquet', size: 100, etag: '' },
      'the Iceberg snapshot',
      'an Iceberg client',
    );

    // Assess
    expect(resized).toMatchObject({
      etag,
      unreadable: `the Delta log records ${bytes.length + 10} bytes but the object holds ${bytes.length}: it was replaced or damaged after it was committed, so it is left alone (check the table with a Delta client)`,
    });
    expect(resized.rows).toBeUndefined();
    expect(missing).toEqual({
      key: 't/part-1.parquet',
      size: 100,
      etag: '',
      unreadable:
        'live in the Iceberg snapshot but missing from storage (the table is damaged; check it with an Iceberg client)',
    });
  });
});
