// The profiler on a Delta table (`format: "delta"`): only commits of `_delta_log/` change it, each version's add and
// remove actions are applied exactly once and in order whatever the duplicates and the order of their events, a
// log cleaned up under the cursor re-derives the table from its whole state, and the counters always equal a full
// recount of the log. Our own OPTIMIZE commit lowers the counts and does not start the partition again.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../../../functions/adapters/local-object-store.js';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { MemoryStatsStore } from '../../../../functions/adapters/memory-stats-store.js';
import { runCompact } from '../../../../functions/cli/compact.js';
import { writeCheckpoint } from '../../../../functions/core/formats/delta/checkpoint-writer.js';
import { readCommitActions, readDeltaSnapshot } from '../../../../functions/core/formats/delta/log.js';
import { commitFileName } from '../../../../functions/core/formats/delta/log-files.js';
import { ConditionalPutLogStore } from '../../../../functions/core/formats/delta/log-store.js';
import { partitionPath } from '../../../../functions/core/formats/delta/table-snapshot.js';
import { DEFAULT_POLICY } from '../../../../functions/core/policy.js';
import { type CommitEvent, resolveEvent } from '../../../../functions/core/profiler/events.js';
import { profileCommits, type TableLogDeps } from '../../../../functions/core/profiler/table-log.js';
import { evaluatePartition } from '../../../../functions/core/profiler/trigger.js';
import { isSmallFile } from '../../../../functions/core/stats.js';
import { parseTableConfigs, type TableConfig } from '../../../../functions/core/table-config.js';
import type { ObjectStore } from '../../../../functions/ports/object-store.js';
import type { StateMachineStarter } from '../../../../functions/ports/state-machine-starter.js';
import { appendDeltaEvents, createDeltaEventsTable } from '../../../../functions/tools/sample-delta.js';
import { RecordingStarter } from '../../../support/recording-starter.js';

const NOW = Date.UTC(2026, 10, 30, 12, 0, 0);
const MINUTE = 60_000;
const DAYS = ['2026-11-28', '2026-11-29'];

function deltaTable(prefix: string): TableConfig[] {
  return parseTableConfigs([
    {
      name: 'events',
      bucket: 'lake',
      prefix,
      format: 'delta',
      deltaLogStore: { type: 's3-conditional' },
      partitionColumns: ['date'],
    },
  ]);
}

function depsFor(tables: TableConfig[], store: ObjectStore, starter?: StateMachineStarter) {
  const stats = new MemoryStatsStore();
  const deps: TableLogDeps = {
    stats,
    tables,
    policies: new Map(tables.map((t) => [t.name, DEFAULT_POLICY])),
    storeFor: () => store,
    ...(starter === undefined ? {} : { starter }),
  };
  return { stats, deps };
}

let sequence = 0;

/** What the profiler makes of S3's event for `key` of table `tables` (created unless said otherwise). */
function resolve(tables: TableConfig[], key: string, kind: 'created' | 'removed' = 'created', time = NOW) {
  sequence += 1;
  return resolveEvent(tables, new Map(tables.map((t) => [t.name, DEFAULT_POLICY])), {
    bucket: 'lake',
    key,
    kind,
    ...(kind === 'created' ? { size: 2048 } : {}),
    sequencer: sequence.toString(16).toUpperCase().padStart(32, '0'),
    eventTime: time,
    eventName: kind === 'created' ? 'ObjectCreated:Put' : 'ObjectRemoved:Delete',
  });
}

/** The commit event of `version` of the table rooted at `root` ('' or ending with `/`). */
function commitOf(tables: TableConfig[], root: string, version: number, time = NOW): CommitEvent {
  const resolution = resolve(tables, `${root}_delta_log/${commitFileName(version)}`, 'created', time);
  if (resolution.kind !== 'commit') throw new Error(`expected a commit, got ${resolution.kind}`);
  return resolution;
}

type Counts = Record<string, { fileCount: number; totalBytes: number; smallCount: number }>;

/** Per partition with files: what the stats store holds. */
async function storedCounts(stats: MemoryStatsStore): Promise<Counts> {
  const counts: Counts = {};
  for (const p of await stats.listPartitions('events')) {
    if (p.fileCount === 0 && p.totalBytes === 0) continue;
    counts[p.partition] = { fileCount: p.fileCount, totalBytes: p.totalBytes, smallCount: p.smallCount };
  }
  return counts;
}

/** Per partition: a full recount of the live files of the log at `version` (latest when omitted). */
async function recount(store: ObjectStore, root: string, version?: number): Promise<Counts> {
  const snapshot = await readDeltaSnapshot(store, root, version === undefined ? {} : { version });
  const counts: Counts = {};
  for (const file of snapshot.files) {
    const partition = partitionPath([{ name: 'date', value: file.partitionValues.date ?? null }]);
    const entry = counts[partition] ?? { fileCount: 0, totalBytes: 0, smallCount: 0 };
    entry.fileCount += 1;
    entry.totalBytes += file.size;
    if (isSmallFile(file.size, DEFAULT_POLICY.targetFileSizeBytes, DEFAULT_POLICY.smallFileSizeRatio))
      entry.smallCount += 1;
    counts[partition] = entry;
  }
  return counts;
}

/** A Delta events table under `events/` with `batches` appends per day (versions 1…); returns the data keys. */
async function appendedTable(store: ObjectStore, root: string, batches: number): Promise<string[]> {
  await createDeltaEventsTable(store, root, { now: NOW });
  const keys: string[] = [];
  let seed = 1;
  for (let b = 0; b < batches; b += 1) {
    for (const day of DAYS) {
      keys.push((await appendDeltaEvents(store, root, { day, rows: 20 + b, seed: seed++, now: NOW })).key);
    }
  }
  return keys;
}

describe('which events of a Delta table the profiler counts', () => {
  it('takes a new commit of the log as a version of the table and ignores data files, checkpoints, .crc, temp files and log cleanup', () => {
    // Prepare
    const tables = deltaTable('events');

    // Act
    const roles = [
      'events/date=2026-11-28/part-00000-a.c000.snappy.parquet',
      'events/_delta_log/00000000000000000007.json',
      'events/_delta_log/00000000000000000010.checkpoint.parquet',
      'events/_delta_log/_last_checkpoint',
      'events/_delta_log/00000000000000000007.crc',
      'events/_delta_log/.tmp/00000000000000000008.json',
    ].map((key) => resolve(tables, key));
    const cleanup = resolve(tables, 'events/_delta_log/00000000000000000001.json', 'removed');
    const dataDelete = resolve(tables, 'events/date=2026-11-28/part-00000-a.c000.snappy.parquet', 'removed');

    // Assess
    expect(roles.map((r) => (r.kind === 'commit' ? `commit ${r.version}` : r.kind))).toEqual([
      'ignored',
      'commit 7',
      'ignored',
      'ignored',
      'ignored',
      'ignored',
    ]);
    expect(roles[0]?.kind === 'ignored' && roles[0].reason).toMatch(
      /only once a commit in _delta_log\/ adds it/,
    );
    expect(cleanup.kind).toBe('ignored');
    expect(dataDelete.kind).toBe('ignored');
  });
});

describe('Delta commits applied to the partition statistics', () => {
  it('after every append version by version, equals a full recount of the log and keeps the last version', async () => {
    // Prepare
    const store = new MemoryObjectStore();
    const tables = deltaTable('events');
    await appendedTable(store, 'events', 4);
    const latest = (await readDeltaSnapshot(store, 'events')).version;
    const { stats, deps } = depsFor(tables, store);

    // Act
    for (let v = 0; v <= latest; v += 1) {
      const results = await profileCommits(deps, [commitOf(tables, 'events/', v)], NOW);
      expect(results.get('events')?.ok).toBe(true);
    }

    // Assess
    expect(await storedCounts(stats)).toEqual(await recount(store, 'events'));
    expect((await storedCounts(stats))['date=2026-11-28']?.fileCount).toBe(4);
    expect((await stats.changeCursor('events'))?.version).toBe(latest);
  });

  it('applies a version once whatever duplicates and order its events come in, reading the versions an event skips', async () => {
    // Prepare: versions 0-1 applied, then appends up to version 9
    const store = new MemoryObjectStore();
    const tables = deltaTable('events');
    await createDeltaEventsTable(store, 'events', { now: NOW });
    await appendDeltaEvents(store, 'events', { day: DAYS[0] as string, rows: 10, seed: 1, now: NOW });
    const { stats, deps } = depsFor(tables, store);
    await profileCommits(deps, [commitOf(tables, 'events/', 0), commitOf(tables, 'events/', 1)], NOW);
    for (let s = 2; s <= 9; s += 1) {
      await appendDeltaEvents(store, 'events', {
        day: DAYS[s % 2] as string,
        rows: 10 + s,
        seed: s,
        now: NOW,
      });
    }

    // Act: version 4 first (2 and 3 are read with it), then late, duplicate and in-batch repeated events
    const afterFour = await profileCommits(deps, [commitOf(tables, 'events/', 4)], NOW);
    const countsAtFour = await storedCounts(stats);
    const late = [];
    for (const batch of [[2], [4, 3], [1, 4], [9, 7, 9], [8, 5]]) {
      const result = await profileCommits(
        deps,
        batch.map((v) => commitOf(tables, 'events/', v)),
        NOW,
      );
      late.push(result.get('events'));
    }

    // Assess
    expect(afterFour.get('events')).toMatchObject({ ok: true, mode: { kind: 'versions', count: 3 } });
    expect(countsAtFour).toEqual(await recount(store, 'events', 4));
    expect(late.map((r) => (r?.ok ? r.stale : 'failed'))).toEqual([1, 2, 2, 0, 2]);
    expect(await storedCounts(stats)).toEqual(await recount(store, 'events'));
    expect((await stats.changeCursor('events'))?.version).toBe(9);
  });

  it('takes a file off the partition it was counted in when its remove carries no partition values', async () => {
    // Prepare: two appends applied, then a DELETE whose remove leaves out the optional partition values
    const store = new MemoryObjectStore();
    const tables = deltaTable('events');
    await createDeltaEventsTable(store, 'events', { now: NOW });
    const kept = await appendDeltaEvents(store, 'events', {
      day: DAYS[0] as string,
      rows: 10,
      seed: 1,
      now: NOW,
    });
    const gone = await appendDeltaEvents(store, 'events', {
      day: DAYS[0] as string,
      rows: 10,
      seed: 2,
      now: NOW,
    });
    const { stats, deps } = depsFor(tables, store);
    await profileCommits(deps, [commitOf(tables, 'events/', 0), commitOf(tables, 'events/', 2)], NOW);
    const remove = { path: gone.key.slice('events/'.length), deletionTimestamp: NOW, dataChange: true };
    await new ConditionalPutLogStore(store).writeCommit(
      'events',
      3,
      new TextEncoder().encode(
        `${JSON.stringify({ commitInfo: { timestamp: NOW, operation: 'DELETE' } })}\n${JSON.stringify({ remove })}\n`,
      ),
    );

    // Act
    const results = await profileCommits(deps, [commitOf(tables, 'events/', 3)], NOW);

    // Assess
    const deleted = results.get('events');
    expect(deleted?.ok && deleted.outcomes.map((o) => o.ref.partition)).toEqual([`date=${DAYS[0]}`]);
    expect(await storedCounts(stats)).toEqual(await recount(store, 'events'));
    expect((await stats.listPartitions('events')).map((p) => p.partition)).toEqual([`date=${DAYS[0]}`]);
    expect((await readDeltaSnapshot(store, 'events')).files.map((f) => f.key)).toEqual([kept.key]);
  });

  it('re-derives the table from its whole state when the versions after the cursor were cleaned up', async () => {
    // Prepare: applied up to version 2; versions 3-6 appended, a checkpoint at 5, commits 0-5 removed
    const store = new MemoryObjectStore();
    const tables = deltaTable('events');
    await createDeltaEventsTable(store, 'events', { now: NOW });
    const { stats, deps } = depsFor(tables, store);
    for (let s = 1; s <= 2; s += 1) {
      await appendDeltaEvents(store, 'events', { day: DAYS[0] as string, rows: 10, seed: s, now: NOW });
    }
    await profileCommits(deps, [commitOf(tables, 'events/', 2)], NOW);
    for (let s = 3; s <= 6; s += 1) {
      await appendDeltaEvents(store, 'events', { day: DAYS[s % 2] as string, rows: 10, seed: s, now: NOW });
    }
    await writeCheckpoint(store, 'events', 5);
    await store.deleteMany(
      [0, 1, 2, 3, 4, 5].map((v) => ({ key: `events/_delta_log/${commitFileName(v)}` })),
    );

    // Act
    const results = await profileCommits(deps, [commitOf(tables, 'events/', 6)], NOW);

    // Assess
    expect(results.get('events')).toMatchObject({
      ok: true,
      mode: { kind: 'rebuild', reason: expect.stringMatching(/commit 3 is gone/) },
    });
    expect(await storedCounts(stats)).toEqual(await recount(store, 'events'));
    expect((await stats.changeCursor('events'))?.version).toBe(6);
  });
});

describe('our own OPTIMIZE commit on a Delta table', () => {
  let dir: string | undefined;
  afterEach(async () => {
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it('starts the partition after the quiet window, then lowers its counts to the log’s and does not start it again', async () => {
    // Prepare: 6 appends per day, applied as they came; the quiet window has passed at `later`
    dir = await mkdtemp(join(tmpdir(), 'lc-delta-profiler-'));
    const store = new LocalObjectStore(dir);
    const tables = deltaTable('');
    await appendedTable(store, '', 6);
    const latest = (await readDeltaSnapshot(store, '')).version;
    const starter = new RecordingStarter();
    const { stats, deps } = depsFor(tables, store, starter);
    const later = NOW + DEFAULT_POLICY.quietMinutes * MINUTE;
    const commits = Array.from({ length: latest + 1 }, (_, v) => commitOf(tables, '', v));
    const first = await profileCommits(deps, commits, later);
    const startedFirst = [...starter.starts];

    // Act: the run compacts, its OPTIMIZE commits arrive while the partitions are leased, then the leases end
    await runCompact(
      dir,
      { format: 'delta', table: 'events' },
      { out: () => {}, clock: { now: () => later }, env: {} },
    );
    const after = (await readDeltaSnapshot(store, '')).version;
    const optimize = await readCommitActions(store, '', after);
    const optimizeResults = await profileCommits(
      deps,
      Array.from({ length: after - latest }, (_, i) => commitOf(tables, '', latest + 1 + i, later + MINUTE)),
      later + 2 * MINUTE,
    );
    for (const leased of await stats.listLeased('events')) {
      await stats.release(leased, leased.generation, { lastCompactedAt: later + 3 * MINUTE });
    }
    const decisions = [];
    for (const partition of await stats.listPartitions('events')) {
      decisions.push(await evaluatePartition(deps, partition, later + 60 * MINUTE));
    }

    // Assess
    expect(first.get('events')?.ok).toBe(true);
    expect(startedFirst).toHaveLength(DAYS.length);
    expect(optimize?.find((a) => a.kind === 'commitInfo')).toMatchObject({
      commitInfo: { operation: 'OPTIMIZE', lakeCompactor: expect.anything() },
    });
    const optimized = optimizeResults.get('events');
    expect(optimized?.ok && optimized.outcomes.map((o) => o.action)).toEqual(['leased', 'leased']);
    expect(await storedCounts(stats)).toEqual(await recount(store, ''));
    expect(Object.values(await storedCounts(stats)).map((c) => c.fileCount)).toEqual([1, 1]);
    expect(decisions.map((d) => d.decision.compact)).toEqual([false, false]);
    expect(decisions[0]?.decision.reasons).toContain('1 small files < 5');
    expect(starter.starts).toEqual(startedFirst);
  });
});
