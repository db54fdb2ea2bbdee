// The in-memory and object-store quarantines hold to the port's contract; the store's records live under
// `_lake-compactor/quarantine/` only (never the journal's folder), one object per file, long keys hashed.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../../functions/adapters/local-object-store.js';
import { MemoryObjectStore } from '../../../functions/adapters/memory-object-store.js';
import { MemoryQuarantine } from '../../../functions/adapters/memory-quarantine.js';
import { quarantineRecordKey, StoreQuarantine } from '../../../functions/adapters/store-quarantine.js';
import { DEFAULT_WORK_ROOT, quarantinePrefix } from '../../../functions/core/workflow/layout.js';
import { quarantineContract, quarantined } from '../../support/quarantine-contract.js';

const QUARANTINE_PREFIX = quarantinePrefix(DEFAULT_WORK_ROOT);
const folders: string[] = [];

afterAll(async () => {
  for (const folder of folders) await rm(folder, { recursive: true, force: true });
});

quarantineContract('memory', async () => ({ quarantine: new MemoryQuarantine(), table: 'events' }));
quarantineContract('object store (memory)', async () => ({
  quarantine: new StoreQuarantine(new MemoryObjectStore()),
  table: 'events',
}));
quarantineContract('object store (local folder)', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'quarantine-'));
  folders.push(folder);
  return { quarantine: new StoreQuarantine(new LocalObjectStore(folder)), table: 'events' };
});

describe('StoreQuarantine', () => {
  it('writes one JSON object per file under _lake-compactor/quarantine/<table>/<partition>/, never under the journal', async () => {
    // Prepare
    const store = new MemoryObjectStore();
    const q = new StoreQuarantine(store);
    const record = quarantined('date=2024-01-01', 'events/date=2024-01-01/part-1.parquet');

    // Act
    await q.record(record);

    // Assess
    const keys: string[] = [];
    for await (const o of store.listAll('')) keys.push(o.key);
    expect(keys).toEqual([
      '_lake-compactor/quarantine/events/date%3D2024-01-01/events%2Fdate%3D2024-01-01%2Fpart-1.parquet.json',
    ]);
    expect(
      keys.every((k) => k.startsWith(QUARANTINE_PREFIX) && !k.startsWith('_lake-compactor/journal/')),
    ).toBe(true);
    expect(JSON.parse(new TextDecoder().decode(await store.get(keys[0] as string)))).toEqual(record);
    expect(q.description).toBe('memory://_lake-compactor/quarantine/');
  });

  it('names a very long key’s record by its hash, which a local folder can hold, and still lists and clears it', async () => {
    // Prepare: an encoded name far over one path segment's 255 bytes
    const folder = await mkdtemp(join(tmpdir(), 'quarantine-long-'));
    folders.push(folder);
    const q = new StoreQuarantine(new LocalObjectStore(folder));
    const key = `events/date=1/${'ü'.repeat(120)}.parquet`;
    const record = quarantined('date=1', key);

    // Act
    await q.record(record);
    const listed = await q.list({ table: 'events', partition: 'date=1' });
    const cleared = await q.clear({ table: 'events', partition: 'date=1' }, key);

    // Assess
    expect(quarantineRecordKey(DEFAULT_WORK_ROOT, record, key)).toMatch(/\/%sha256-[0-9a-f]{64}\.json$/);
    expect(listed).toEqual([record]);
    expect(cleared).toEqual([record]);
    expect(await q.list({ table: 'events', partition: 'date=1' })).toEqual([]);
  });

  it('skips a record that is not valid JSON of the right shape instead of failing every plan of its partition', async () => {
    // Prepare
    const store = new MemoryObjectStore();
    const q = new StoreQuarantine(store);
    const good = quarantined('date=1', 'events/date=1/good.parquet');
    await q.record(good);
    await store.put(`${QUARANTINE_PREFIX}events/date%3D1/broken.json`, '{"key": "events/date=1/broken.parq');
    await store.put(`${QUARANTINE_PREFIX}events/date%3D1/other.json`, '{"key": 1}');

    // Act
    const listed = await q.list({ table: 'events', partition: 'date=1' });

    // Assess
    expect(listed).toEqual([good]);
  });
});
