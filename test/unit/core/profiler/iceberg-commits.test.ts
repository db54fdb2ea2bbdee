// The profiler on an Iceberg table (`format: "iceberg"`): data-file and manifest PUTs change nothing, a new metadata
// file makes the profiler read the catalog's pointer and apply each new snapshot's data files exactly once, whatever
// the order and duplicates of the events and a batch retried after a failure; the counters always equal a recount
// of the snapshot's live files. An event naming metadata the pointer does not show yet is set aside, the rest applied.
import { beforeEach, describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { MemoryStatsStore } from '../../../../functions/adapters/memory-stats-store.js';
import { icebergChanges } from '../../../../functions/core/formats/iceberg/changes.js';
import { icebergTable } from '../../../../functions/core/formats/iceberg/format.js';
import {
  type IcebergCatalog,
  loadTable,
  readSnapshotFiles,
} from '../../../../functions/core/formats/iceberg/index.js';
import { DEFAULT_POLICY } from '../../../../functions/core/policy.js';
import { type CommitEvent, resolveEvent } from '../../../../functions/core/profiler/events.js';
import { sweepTable } from '../../../../functions/core/profiler/sweep.js';
import { profileCommits, type TableLogDeps } from '../../../../functions/core/profiler/table-log.js';
import { isSmallFile } from '../../../../functions/core/stats.js';
import { parseTableConfigs } from '../../../../functions/core/table-config.js';
import type { ObjectStore } from '../../../../functions/ports/object-store.js';
import { appendIcebergEvents, createIcebergEventsTable } from '../../../../functions/tools/sample-iceberg.js';
import { RecordingStarter } from '../../../support/recording-starter.js';

const NOW = Date.UTC(2026, 10, 30, 12, 0, 0);
const MINUTE = 60_000;
const DAYS = ['2026-11-28', '2026-11-29'];
const tables = parseTableConfigs([{ name: 'events', bucket: 'lake', prefix: 'events', format: 'iceberg' }]);
const policies = new Map(tables.map((t) => [t.name, DEFAULT_POLICY]));

let sequence = 0;

/** What the profiler makes of S3's creation event for `key`. */
function resolve(key: string, time = NOW) {
  sequence += 1;
  return resolveEvent(tables, policies, {
    bucket: 'lake',
    key,
    kind: 'created',
    size: 2048,
    sequencer: sequence.toString(16).toUpperCase().padStart(32, '0'),
    eventTime: time,
    eventName: 'ObjectCreated:Put',
  });
}

function commitOf(key: string, time = NOW): CommitEvent {
  const resolution = resolve(key, time);
  if (resolution.kind !== 'commit') throw new Error(`expected a commit for ${key}, got ${resolution.kind}`);
  return resolution;
}

type Counts = Record<string, { fileCount: number; totalBytes: number; smallCount: number }>;

async function storedCounts(stats: MemoryStatsStore): Promise<Counts> {
  const counts: Counts = {};
  for (const p of await stats.listPartitions('events')) {
    if (p.fileCount === 0 && p.totalBytes === 0) continue;
    counts[p.partition] = { fileCount: p.fileCount, totalBytes: p.totalBytes, smallCount: p.smallCount };
  }
  return counts;
}

/** Per partition folder: a recount of the live data files of the current snapshot (the manifests' own reader). */
async function recount(store: ObjectStore): Promise<Counts> {
  const files = await readSnapshotFiles(store, await loadTable(store, 'events'));
  const counts: Counts = {};
  for (const data of files.dataFiles) {
    const key = data.entry.file.key;
    const partition = key.slice('events/'.length, key.lastIndexOf('/'));
    const size = Number(data.entry.file.fileSizeInBytes);
    const entry = counts[partition] ?? { fileCount: 0, totalBytes: 0, smallCount: 0 };
    entry.fileCount += 1;
    entry.totalBytes += size;
    if (isSmallFile(size, DEFAULT_POLICY.targetFileSizeBytes, DEFAULT_POLICY.smallFileSizeRatio))
      entry.smallCount += 1;
    counts[partition] = entry;
  }
  return counts;
}

/** The metadata files of the table (`vN.metadata.json`), oldest first, as store keys. */
async function metadataKeys(store: ObjectStore): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of store.listAll('events/metadata/'))
    if (o.key.endsWith('.metadata.json')) keys.push(o.key);
  const version = (key: string) => Number(/\/v(\d+)\.metadata\.json$/.exec(key)?.[1]);
  return keys.sort((a, b) => version(a) - version(b));
}

describe('the profiler on an Iceberg table with a path catalog', () => {
  let store: MemoryObjectStore;
  let stats: MemoryStatsStore;
  let deps: TableLogDeps;
  let dataKeys: string[];

  beforeEach(async () => {
    store = new MemoryObjectStore();
    stats = new MemoryStatsStore();
    deps = { stats, tables, policies, storeFor: () => store };
    await createIcebergEventsTable(store, 'events', { now: NOW });
    // The profiler saw the table created: its cursor is at the empty table, so the appends are read one by one.
    await profileCommits(deps, [commitOf('events/metadata/v1.metadata.json')], NOW);
    dataKeys = [];
    let seed = 1;
    for (let b = 0; b < 3; b += 1)
      for (const day of DAYS)
        dataKeys.push(
          (await appendIcebergEvents(store, 'events', { day, rows: 20 + b, seed: seed++, now: NOW })).key,
        );
  });

  it('counts nothing for data files, manifests and manifest lists: they are written before their commit', async () => {
    // Prepare
    const metadataObjects: string[] = [];
    for await (const o of store.listAll('events/metadata/')) metadataObjects.push(o.key);
    const written = [...dataKeys, ...metadataObjects.filter((k) => k.endsWith('.avro'))];

    // Act
    const resolutions = written.map((key) => resolve(key));

    // Assess
    expect(written.length).toBeGreaterThan(dataKeys.length);
    expect(resolutions.map((r) => r.kind)).toEqual(written.map(() => 'ignored'));
  });

  it('applies every snapshot once, whatever the order and duplicates of the metadata events and a retried batch', async () => {
    // Prepare: every metadata file's event (reversed, two duplicated, the hint too); the first cursor write fails
    const keys = await metadataKeys(store);
    const events = [...keys].reverse().map((k) => commitOf(k));
    const batch = [
      ...events,
      events[0] as CommitEvent,
      events[3] as CommitEvent,
      commitOf('events/metadata/version-hint.text'),
    ];
    let failCursorOnce = true;
    const advance = stats.advanceChangeCursor.bind(stats);
    stats.advanceChangeCursor = async (table, cursor) => {
      if (failCursorOnce) {
        failCursorOnce = false;
        throw new Error('DynamoDB throttled the cursor write');
      }
      return advance(table, cursor);
    };
    const expected = await recount(store);

    // Act: the batch fails after the counters moved, is redelivered whole, then delivered once more
    const failed = (await profileCommits(deps, batch, NOW)).get('events');
    const retried = (await profileCommits(deps, batch, NOW)).get('events');
    const afterRetry = await storedCounts(stats);
    const again = (await profileCommits(deps, batch, NOW)).get('events');

    // Assess
    expect(failed?.ok).toBe(false);
    expect(retried).toMatchObject({ ok: true, mode: { kind: 'versions', count: keys.length - 1 } });
    expect(afterRetry).toEqual(expected);
    expect(Object.values(expected).map((c) => c.fileCount)).toEqual([3, 3]);
    expect(again).toMatchObject({ ok: true, applied: 0, stale: batch.length });
    expect(await storedCounts(stats)).toEqual(expected);
  });

  it('reads a gap (a lost event) as every snapshot in it, leaving the counters equal to a recount', async () => {
    // Prepare: the counters at the table as it is, then two more appends of which only the last event arrives
    await profileCommits(deps, [commitOf((await metadataKeys(store)).at(-1) as string)], NOW);
    const before = await storedCounts(stats);
    const expectedBefore = await recount(store);
    for (const [i, day] of DAYS.entries())
      await appendIcebergEvents(store, 'events', { day, rows: 50, seed: 100 + i, now: NOW });
    const last = (await metadataKeys(store)).at(-1) as string;

    // Act
    const result = (await profileCommits(deps, [commitOf(last, NOW + MINUTE)], NOW + MINUTE)).get('events');

    // Assess
    expect(before).toEqual(expectedBefore);
    expect(result).toMatchObject({ ok: true, mode: { kind: 'versions', count: 2 } });
    expect(await storedCounts(stats)).toEqual(await recount(store));
    expect(await storedCounts(stats)).not.toEqual(before);
    expect((await stats.changeCursor('events'))?.version).toBe(
      Number((await loadTable(store, 'events')).metadata.lastSequenceNumber),
    );
  });
});

describe('an Iceberg table whose catalog has not swapped to the metadata an event names', () => {
  it('applies what the pointer shows and sets aside only the events naming newer metadata', async () => {
    // Prepare: a metastore-style catalog whose pointer stays at the last committed file while a writer has put the
    // next metadata file but not swapped yet
    const store = new MemoryObjectStore();
    await createIcebergEventsTable(store, 'events', { now: NOW });
    await appendIcebergEvents(store, 'events', { day: DAYS[0] as string, rows: 20, seed: 1, now: NOW });
    const current = (await metadataKeys(store)).at(-1) as string;
    const catalog: IcebergCatalog = {
      load: (root) => loadTable(store, root, { metadataKey: current }),
      commit: () => Promise.reject(new Error('the profiler never commits')),
    };
    const stats = new MemoryStatsStore();
    const deps: TableLogDeps = {
      stats,
      tables,
      policies,
      storeFor: () => store,
      formatFor: () => ({ ...icebergTable, changes: icebergChanges(() => catalog) }),
    };
    const swapped = commitOf(
      current.replace(/v(\d+)\.metadata/, '00002-0f0f0f0f-0000-4000-8000-000000000000.metadata'),
    );
    const notYet = commitOf('events/metadata/00003-1e1e1e1e-0000-4000-8000-000000000000.metadata.json');

    // Act
    const result = (await profileCommits(deps, [swapped, notYet], NOW)).get('events');

    // Assess
    expect(result?.ok).toBe(true);
    if (!result?.ok) return;
    expect(result.notCurrent?.events).toEqual([notYet]);
    expect(result.notCurrent?.error).toMatchObject({ current: 2, retryable: true });
    expect(await storedCounts(stats)).toEqual(await recount(store));
  });
});

describe('the trigger on an Iceberg table', () => {
  it('waits out the quiet window after the last commit, then starts the partition once, with its reasons', async () => {
    // Prepare: six small appends to one day, each commit seen as it lands
    const store = new MemoryObjectStore();
    const stats = new MemoryStatsStore();
    const starter = new RecordingStarter();
    const deps: TableLogDeps = { stats, tables, policies, storeFor: () => store, starter };
    await createIcebergEventsTable(store, 'events', { now: NOW });
    await profileCommits(deps, [commitOf('events/metadata/v1.metadata.json')], NOW);
    const outcomes = [];
    for (let seed = 1; seed <= 6; seed += 1) {
      await appendIcebergEvents(store, 'events', { day: DAYS[1] as string, rows: 20, seed, now: NOW });
      const latest = (await metadataKeys(store)).at(-1) as string;
      const result = (await profileCommits(deps, [commitOf(latest)], NOW)).get('events');
      if (result?.ok) outcomes.push(...result.outcomes.map((o) => o.action));
    }

    // Act
    const quiet = NOW + DEFAULT_POLICY.quietMinutes * MINUTE;
    const early = await sweepTable({ stats, starter, policies }, 'events', quiet - MINUTE);
    const swept = await sweepTable({ stats, starter, policies }, 'events', quiet + MINUTE);

    // Assess
    // Below minInputFiles nothing is due (blocked); from it on, the quiet window is waited out.
    expect(outcomes).toEqual(
      Array.from({ length: 6 }, (_, i) => (i + 1 < DEFAULT_POLICY.minInputFiles ? 'blocked' : 'waiting')),
    );
    expect(early.due).toEqual([]);
    expect(swept.due.map((o) => o.action)).toEqual(['started']);
    expect(swept.due[0]?.decision.reasons.join(' ')).toMatch(/6 small files/);
    expect(starter.starts).toHaveLength(1);
  });
});
