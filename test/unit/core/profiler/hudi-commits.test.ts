// The profiler on a Hudi Copy-on-Write table (`format: "hudi"`): each event of a completed instant reads only what
// the instants completed since the cursor need — their commit metadata and the partitions they wrote — and the
// counters always equal those of the whole state at the latest completed instant, whatever the duplicates and the
// order of the events. Fewer object reads than a read of the whole state prove the incremental path.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { MemoryStatsStore } from '../../../../functions/adapters/memory-stats-store.js';
import { hudiTable } from '../../../../functions/core/formats/hudi/format.js';
import {
  baseFileName,
  completedInstantFile,
  newFileId,
  newFileWriteStat,
  replaceCommitContent,
  writeToken,
} from '../../../../functions/core/formats/hudi/timeline-writer/index.js';
import { DEFAULT_POLICY } from '../../../../functions/core/policy.js';
import { profileCommits, type TableLogDeps } from '../../../../functions/core/profiler/table-log.js';
import { isSmallFile } from '../../../../functions/core/stats.js';
import { parseTableConfigs, type TableConfig } from '../../../../functions/core/table-config.js';
import type { ObjectStore } from '../../../../functions/ports/object-store.js';
import { countingStore } from '../../../support/counting-store.js';
import {
  APPENDER_SCHEMA,
  type AppenderTable,
  appendHudiInsert,
  createHudiTable,
  insertBaseFile,
  upsertHudiFileGroup,
} from '../../../support/hudi-appender.js';
import { commitEventsOf, completedInstantNames } from '../../../support/hudi-commit-events.js';

const NOW = Date.UTC(2026, 11, 7, 12, 0, 0);
const ROOT = 'trips';

const TABLES: TableConfig[] = parseTableConfigs([
  {
    name: 'trips',
    bucket: 'lake',
    prefix: ROOT,
    format: 'hudi',
    partitionColumns: ['byteField'],
    hudiLock: { provider: 'storage' },
    hudiIndexType: 'BLOOM',
  },
]);

const events = commitEventsOf(TABLES, new Map([['trips', DEFAULT_POLICY]]), ROOT, NOW);
/** The commit event S3 sends for the completed instant file `name` of the table's timeline. */
const commitEvent = (table: AppenderTable, name: string) => events(table.version, name);

function depsFor(store: ObjectStore) {
  const stats = new MemoryStatsStore();
  const deps: TableLogDeps = {
    stats,
    tables: TABLES,
    policies: new Map([['trips', DEFAULT_POLICY]]),
    storeFor: () => store,
  };
  return { stats, deps };
}

type Counts = Record<string, { fileCount: number; totalBytes: number; smallCount: number }>;

async function storedCounts(stats: MemoryStatsStore): Promise<Counts> {
  const counts: Counts = {};
  for (const p of await stats.listPartitions('trips')) {
    if (p.fileCount === 0 && p.totalBytes === 0) continue;
    counts[p.partition] = { fileCount: p.fileCount, totalBytes: p.totalBytes, smallCount: p.smallCount };
  }
  return counts;
}

/** The counters of the whole state at the latest completed instant (the rebuild's source). */
async function recount(store: ObjectStore): Promise<Counts> {
  const state = await hudiTable.changes.readState(store, ROOT);
  const counts: Counts = {};
  for (const p of state.partitions) {
    if (p.files.length === 0) continue;
    counts[p.partition] = {
      fileCount: p.files.length,
      totalBytes: p.files.reduce((n, f) => n + f.size, 0),
      smallCount: p.files.filter((f) =>
        isSmallFile(f.size, DEFAULT_POLICY.targetFileSizeBytes, DEFAULT_POLICY.smallFileSizeRatio),
      ).length,
    };
  }
  return counts;
}

/** An instant time `second` seconds after the start (UTC, 17 digits). */
function at(second: number): string {
  return new Date(Date.UTC(2026, 11, 1) + second * 1000).toISOString().replace(/\D/g, '').slice(0, 17);
}

/** The completed instant files of the timeline, newest last (the events a table's writes raise). */
const completedNames = (store: ObjectStore, table: AppenderTable) =>
  completedInstantNames(store, ROOT, table.version, ['commit', 'replacecommit']);

/**
 * One write of the test table: an insert into a new file group, an upsert of an existing one (a new slice), or a
 * clustering of a partition (a replacecommit replacing every file group of it with one new group).
 */
type Write =
  | { kind: 'insert'; partition: number; rows: number }
  | { kind: 'upsert'; pick: number }
  | { kind: 'cluster'; partition: number };

/** A clustering's completed replacecommit at `instant`: the groups' rows in one new base file. */
async function clusterGroups(
  table: AppenderTable,
  partition: string,
  groups: readonly { fileId: string; ids: number[] }[],
  instant: string,
): Promise<{ fileId: string; ids: number[] }> {
  const fileId = newFileId(`cluster/${instant}`, 0);
  const name = baseFileName(fileId, writeToken({ partitionId: 0, stageId: 3, attemptId: 0 }), instant);
  const ids = groups.flatMap((g) => g.ids);
  const body = insertBaseFile(instant, name, partition, ids);
  await table.store.put(`${ROOT}/${partition}/${name}`, body);
  const completion = table.version === 6 ? undefined : instant.replace(/\d{3}$/, '500');
  const location = { tableVersion: table.version, operation: 'clustering' as const, instant };
  await table.store.put(
    `${ROOT}/${completedInstantFile(location, completion)}`,
    replaceCommitContent(table.version, {
      partitionToWriteStats: {
        [partition]: [
          newFileWriteStat({
            partitionPath: partition,
            fileId,
            fileName: name,
            numWrites: ids.length,
            fileSizeInBytes: body.length,
          }),
        ],
      },
      partitionToReplaceFileIds: { [partition]: groups.map((g) => g.fileId) },
      compacted: false,
      extraMetadata: { schema: APPENDER_SCHEMA },
      version: null,
      operationType: 'CLUSTER',
    }),
  );
  table.last = completion ?? instant;
  return { fileId, ids };
}

/** A writer of the test table: each write one second after the last; returns the instant files it completed. */
function writerOf(table: AppenderTable): (w: Write) => Promise<string[]> {
  const groups: { partition: string; fileId: string; ids: number[] }[] = [];
  let second = 0;
  return async (w) => {
    second += 1;
    const before = new Set(await completedNames(table.store, table));
    const clustered = w.kind === 'cluster' ? groups.filter((g) => g.partition === String(w.partition)) : [];
    if (w.kind === 'cluster' && clustered.length > 0) {
      const partition = String(w.partition);
      const made = await clusterGroups(table, partition, clustered, at(second));
      groups.splice(0, groups.length, ...groups.filter((g) => !clustered.includes(g)), {
        partition,
        ...made,
      });
    } else if (w.kind !== 'upsert' || groups.length === 0) {
      const partition = String(w.kind === 'upsert' ? 10 : w.partition);
      const rows = w.kind === 'insert' ? w.rows : 2;
      const ids = Array.from({ length: rows }, (_, i) => table.written + i + 1);
      const t = second;
      const made = await appendHudiInsert(table, partition, rows, { clock: () => Date.parse(isoOf(at(t))) });
      groups.push({ partition, fileId: made.fileId, ids });
    } else {
      const g = groups[w.pick % groups.length] as (typeof groups)[number];
      g.ids = [...g.ids, 100_000 + second];
      table.last = at(second);
      await upsertHudiFileGroup(table, g.partition, g.fileId, g.ids);
    }
    return (await completedNames(table.store, table)).filter((n) => !before.has(n));
  };
}

function isoOf(instant: string): string {
  return `${instant.slice(0, 4)}-${instant.slice(4, 6)}-${instant.slice(6, 8)}T${instant.slice(8, 10)}:${instant.slice(10, 12)}:${instant.slice(12, 14)}.${instant.slice(14, 17)}Z`;
}

describe.each([6, 8] as const)(
  'Hudi commits of a version %i Copy-on-Write table applied to the partition statistics',
  (version) => {
    it('after the first instant, reads each new instant incrementally with fewer reads than the whole state, and equals it', async () => {
      // Prepare: 12 writes (inserts, upserts, a clustering), each one's event applied as it completed
      const memory = new MemoryObjectStore();
      const counting = countingStore(memory);
      const table = await createHudiTable(memory, ROOT, version, at(0));
      const write = writerOf(table);
      const writes: Write[] = [
        ...Array.from({ length: 8 }, (_, i): Write => ({ kind: 'insert', partition: 10 + (i % 3), rows: 3 })),
        { kind: 'upsert', pick: 1 },
        { kind: 'upsert', pick: 4 },
        { kind: 'cluster', partition: 12 },
        { kind: 'insert', partition: 11, rows: 2 },
      ];
      const { stats, deps } = depsFor(counting.store);
      const modes: string[] = [];
      for (const w of writes)
        for (const name of await write(w)) {
          const result = (await profileCommits(deps, [commitEvent(table, name)], NOW)).get('trips');
          modes.push(result?.ok === true ? result.mode.kind : 'failed');
        }
      const countsBefore = await storedCounts(stats);
      const last = (await write({ kind: 'upsert', pick: 0 }))[0] as string;

      // Act: the last instant's event, incrementally; then the whole state, for the reads it costs
      counting.reset();
      const result = await profileCommits(deps, [commitEvent(table, last)], NOW);
      const incremental = counting.counts();
      counting.reset();
      await hudiTable.changes.readState(counting.store, ROOT);
      const whole = counting.counts();

      // Assess
      expect(result.get('trips')).toMatchObject({ ok: true, mode: { kind: 'versions', count: 1 } });
      expect(modes).toEqual(['rebuild', ...Array.from({ length: writes.length - 1 }, () => 'versions')]);
      expect(await storedCounts(stats)).toEqual(await recount(memory));
      expect(await storedCounts(stats)).not.toEqual(countsBefore);
      expect(incremental.get + incremental.put).toBeLessThan(whole.get + whole.put);
      expect(incremental.get).toBeLessThan(whole.get);
    });

    it('converges on the whole state whatever the writes and the duplicates and order of their events (property)', async () => {
      const write = fc.oneof(
        fc.record({
          kind: fc.constant('insert' as const),
          partition: fc.integer({ min: 10, max: 12 }),
          rows: fc.integer({ min: 1, max: 4 }),
        }),
        fc.record({ kind: fc.constant('upsert' as const), pick: fc.nat(20) }),
        fc.record({ kind: fc.constant('cluster' as const), partition: fc.integer({ min: 10, max: 12 }) }),
      );
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.record({ write, deliver: fc.array(fc.nat(30), { maxLength: 3 }) }), {
            minLength: 1,
            maxLength: 8,
          }),
          async (steps) => {
            // Prepare
            const store = new MemoryObjectStore();
            const table = await createHudiTable(store, ROOT, version, at(0));
            const write = writerOf(table);
            const { stats, deps } = depsFor(store);
            const names: string[] = [];

            // Act: after each write, a random batch of the events so far (none, duplicates, late ones, out of
            // order), then every event once more (a redelivery of all of them)
            const modes: string[] = [];
            const deliver = async (indexes: readonly number[]) => {
              if (indexes.length === 0) return;
              const events = indexes.map((i) => commitEvent(table, names[i % names.length] as string));
              const result = (await profileCommits(deps, events, NOW)).get('trips');
              if (!result?.ok)
                throw new Error(`not applied: ${String(result?.ok === false && result.error)}`);
              modes.push(result.mode.kind);
            };
            for (const step of steps) {
              names.push(...(await write(step.write)));
              await deliver(step.deliver);
            }
            await deliver(names.map((_, i) => i));

            // Assess: the whole state's counters; after the first read, never a read of the whole state
            expect(await storedCounts(stats)).toEqual(await recount(store));
            expect(modes.slice(1).every((m) => m === 'versions')).toBe(true);
          },
        ),
        { numRuns: 25, seed: 0x4d0d1 + version },
      );
    }, 120_000);
  },
);
