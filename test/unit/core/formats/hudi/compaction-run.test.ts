// Merge-on-Read compaction of the vendored Hudi fixtures, run as Hudi's compactor runs it (plan requested →
// inflight → completed commit) under the table's storage lock. The oracle is the merged view of every live slice
// *before* compaction — base rows read by DuckDB (an independent Parquet reader), less the rows the log merge drops,
// plus the log records it keeps — and, for mor_v6_trips_8i1u, the rows hudi-rs's own tests expect. After compaction
// the live slices are the new base files alone, DuckDB reads the same rows from them, a second run does nothing, a
// crash before or after the new base files leaves the old view until a re-run finishes the pending plan, and a
// refused table keeps every byte.
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../../../../functions/adapters/local-object-store.js';
import { ABANDONED_AFTER_MS } from '../../../../../functions/core/formats/hudi/abandoned-plans.js';
import type { HudiCoordination } from '../../../../../functions/core/formats/hudi/clustering-commit.js';
import { HudiCompactionUnsupportedError } from '../../../../../functions/core/formats/hudi/compaction-errors.js';
import { mergeFileSlice } from '../../../../../functions/core/formats/hudi/compaction-merge.js';
import {
  compactHudiMergeOnRead,
  compactionPolicy,
} from '../../../../../functions/core/formats/hudi/compaction-run.js';
import { HudiMetadataTableError } from '../../../../../functions/core/formats/hudi/errors.js';
import { StorageBasedHudiLock } from '../../../../../functions/core/formats/hudi/lock/index.js';
import {
  HudiLogUnsupportedError,
  HudiMergeUnsupportedError,
} from '../../../../../functions/core/formats/hudi/log/index.js';
import { avroDataBlock, encodeLogBlock } from '../../../../../functions/core/formats/hudi/log/writer.js';
import { filesNamedByMarkers } from '../../../../../functions/core/formats/hudi/pending-instant.js';
import { readHudiTable } from '../../../../../functions/core/formats/hudi/table-state.js';
import { isCommitted } from '../../../../../functions/core/formats/hudi/timeline.js';
import { ManualClock } from '../../../../../functions/ports/clock.js';
import type { ObjectStore } from '../../../../../functions/ports/object-store.js';
import { defaultParquetEngine } from '../../../../../functions/shared/parquet-engine.js';
import { ageFiles } from '../../../../support/age-files.js';
import { type DuckDb, openDuckDb, sqlString } from '../../../../support/duckdb.js';
import { HUDI_FIXTURES } from '../../../../support/fixtures.js';
import { folderContentSnapshot } from '../../../../support/folder-snapshot.js';
import { block, H, int32, rollback, T } from './log/craft.js';

type Row = Record<string, unknown>;

const NOW = Date.UTC(2026, 11, 1);
// The fixtures mint instants in their writers' LOCAL zone (the table does not record it): declared UTC here.
const STORAGE_LOCK: HudiCoordination = {
  localZone: 'UTC',
  lockFor: (store, tableRoot, _name, clock) => new StorageBasedHudiLock({ store, tableRoot, clock }),
};

/** The storage lock (UTC instants) whose every acquisition first runs `before`: a writer acting as our lock is taken. */
function storageLockAfter(before: (store: ObjectStore) => Promise<unknown>): HudiCoordination {
  return {
    localZone: 'UTC',
    lockFor: (s, tableRoot, name, clock) => {
      const lock = STORAGE_LOCK.lockFor(s, tableRoot, name, clock);
      if (lock === undefined) throw new Error('the storage lock is declared');
      return {
        description: lock.description,
        heartbeatIntervalMs: lock.heartbeatIntervalMs,
        acquire: async (options) => {
          await before(s);
          return lock.acquire(options);
        },
      };
    },
  };
}

let db: DuckDb;
const dirs: string[] = [];

beforeAll(async () => {
  db = await openDuckDb();
});
afterAll(() => db.close());
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function copyFixture(
  name: string,
  withoutMetadataTable = false,
): Promise<{ dir: string; store: LocalObjectStore }> {
  const dir = await mkdtemp(join(tmpdir(), 'lc-hudi-mor-'));
  dirs.push(dir);
  await cp(join(HUDI_FIXTURES, name), dir, { recursive: true });
  if (withoutMetadataTable) await dropMetadataTable(dir);
  return { dir, store: new LocalObjectStore(dir) };
}

/**
 * The table as if written with hoodie.metadata.enable=false: its metadata table (which lake-compactor refuses, as it
 * does not write it) and the index definitions over it removed, the data files and timeline kept as Hudi wrote them.
 */
async function dropMetadataTable(dir: string): Promise<void> {
  await rm(join(dir, '.hoodie', 'metadata'), { recursive: true, force: true });
  await rm(join(dir, '.hoodie', '.index_defs'), { recursive: true, force: true });
  const props = join(dir, '.hoodie', 'hoodie.properties');
  const text = await readFile(props, 'utf8');
  await writeFile(
    props,
    text
      .split('\n')
      .filter(
        (l) =>
          !l.startsWith('hoodie.table.metadata.partitions') && !l.startsWith('hoodie.table.index.defs.path'),
      )
      .join('\n'),
  );
}

function deps(store: LocalObjectStore, clock = new ManualClock(NOW)) {
  return { store, engine: defaultParquetEngine, clock, coordination: STORAGE_LOCK };
}

/** A value as JSON can compare it (64-bit integers as text, bytes as hex). */
function plain(v: unknown): unknown {
  if (typeof v === 'bigint') return v.toString();
  if (v instanceof Uint8Array) return Buffer.from(v).toString('hex');
  return v;
}

function canonical(rows: readonly Row[], columns: readonly string[]): string[] {
  return rows.map((r) => JSON.stringify(columns.map((c) => plain(r[c])))).sort();
}

/** The merged view of every live slice (Hudi's snapshot read), before compaction: the oracle. */
async function mergedView(
  dir: string,
  store: LocalObjectStore,
  columns: readonly string[],
): Promise<string[]> {
  const state = await readHudiTable(store, '');
  const policy = compactionPolicy(state);
  const rows: Row[] = [];
  for (const p of state.partitions)
    for (const slice of p.liveSlices) {
      if (slice.baseFile === undefined) throw new Error(`log-only slice ${slice.fileId}`);
      const base = await db.rows(
        `SELECT ${columns.join(', ')} FROM read_parquet(${sqlString(join(dir, slice.baseFile.key))}, file_row_number = true) ORDER BY file_row_number`,
      );
      if (slice.logFiles.length === 0) {
        rows.push(...base);
        continue;
      }
      const merged = await mergeFileSlice(
        store,
        { baseKey: slice.baseFile.key, logKeys: slice.logFiles.map((l) => l.key) },
        policy,
        (i) => isCommitted(state.timeline, i),
        '99999999999999999',
      );
      const dropped = new Set(merged.merge.dropPositions);
      rows.push(...base.filter((_, i) => !dropped.has(i)), ...merged.merge.append);
    }
  return canonical(rows, columns);
}

/** The rows DuckDB reads from the live base files (every live slice must be base-only). */
async function liveBaseRows(
  dir: string,
  store: LocalObjectStore,
  columns: readonly string[],
): Promise<string[]> {
  const state = await readHudiTable(store, '');
  const files = state.partitions.flatMap((p) =>
    p.liveSlices.map((s) => {
      expect(s.logFiles, `live slice ${s.fileId} still has log files`).toEqual([]);
      return sqlString(join(dir, s.baseFile?.key ?? ''));
    }),
  );
  return canonical(
    await db.rows(`SELECT ${columns.join(', ')} FROM read_parquet([${files.join(', ')}])`),
    columns,
  );
}

const TRIPS = [
  '_hoodie_commit_time',
  '_hoodie_commit_seqno',
  '_hoodie_record_key',
  '_hoodie_partition_path',
  'ts',
  'uuid',
  'rider',
  'driver',
  'fare',
  'city',
];

describe.each([
  { fixture: 'mor_v6_trips_8i1u', noMdt: false, columns: TRIPS, rows: 8, compacted: 1, deletes: 0 },
  { fixture: 'mor_v8_trips_8i3u1d', noMdt: true, columns: TRIPS, rows: 6, compacted: 1, deletes: 0 },
])('Merge-on-Read compaction of $fixture', ({ fixture, noMdt, columns, rows, compacted, deletes }) => {
  it('writes one new base file per slice with logs, holding exactly the merged view, and a second run does nothing', async () => {
    // Prepare
    const { dir, store } = await copyFixture(fixture, noMdt);
    const expected = await mergedView(dir, store, columns);

    // Act
    const result = await compactHudiMergeOnRead(deps(store), '', { deltaCommits: 1 });
    const again = await compactHudiMergeOnRead(deps(store), '', { deltaCommits: 1 });

    // Assess
    expect(result.kind).toBe('compacted');
    if (result.kind !== 'compacted') return;
    expect(result.slices).toHaveLength(compacted);
    if (rows !== undefined) expect(expected).toHaveLength(rows);
    expect(await liveBaseRows(dir, store, columns)).toEqual(expected);
    const state = await readHudiTable(store, '');
    for (const s of result.slices) {
      const live = state.partitions.flatMap((p) => p.liveSlices).find((l) => l.fileId === s.fileId);
      expect(live?.baseFile?.key).toBe(s.output);
      expect(live?.baseInstantTime).toBe(result.instant);
    }
    for (const s of result.slices) expect(s.rows).toBe(s.baseRows - s.deleted + s.inserted);
    expect(result.slices.reduce((n, s) => n + s.deleted, 0)).toBe(deletes);
    expect(again.kind).toBe('nothing');
  });
});

/** The instant minted at NOW (UTC), which names every file of our compaction. */
const INSTANT = '20261201000000000';

/**
 * Lines of a folder snapshot that are not the table's data or timeline: the local store's own work area, the
 * storage lock's file (Hudi's `.hoodie/.locks/`, left released) and folders of Hudi's per-instant scratch space.
 */
function tableBytes(lines: readonly string[]): string[] {
  return lines.filter(
    (l) =>
      !l.startsWith('_lake-compactor/') &&
      !l.startsWith('.hoodie/.locks') &&
      !/^\.hoodie\/\.(temp|heartbeat)\/(.*\/)?$/.test(l),
  );
}

/**
 * What a crashed run wrote, made as old as a dead run's (abandoned-plans.ts `planRunLiveness` judges its heartbeat by
 * the store's times), and the clock of a run after it.
 */
async function afterTheCrashedRunDied(dir: string): Promise<ManualClock> {
  await ageFiles(dir, ABANDONED_AFTER_MS + 60_000);
  return new ManualClock(NOW + 60_000);
}

describe('a crash of the compaction of mor_v6_trips_8i1u', () => {
  it.each(['scheduled', 'written'] as const)(
    'after the plan is %s leaves every old byte as it was and no completed instant; a re-run finishes the pending plan with the merged view',
    async (crashAfter) => {
      // Prepare
      const { dir, store } = await copyFixture('mor_v6_trips_8i1u');
      const expected = await mergedView(dir, store, TRIPS);
      const before = await folderContentSnapshot(dir);

      // Act
      await expect(compactHudiMergeOnRead(deps(store), '', { deltaCommits: 1, crashAfter })).rejects.toThrow(
        /crash after/,
      );
      const crashed = await folderContentSnapshot(dir);
      const rerun = await compactHudiMergeOnRead(deps(store, await afterTheCrashedRunDied(dir)), '', {
        deltaCommits: 1,
      });

      // Assess: the old view — every old file byte for byte, nothing of ours but the pending instant's files.
      expect(tableBytes(crashed).filter((l) => !l.includes(INSTANT))).toEqual(before);
      expect(crashed.some((l) => l.startsWith(`.hoodie/${INSTANT}.commit `))).toBe(false);
      expect(crashed.some((l) => l.startsWith(`.hoodie/${INSTANT}.compaction.requested `))).toBe(true);
      expect(rerun).toMatchObject({ kind: 'compacted', instant: INSTANT, resumed: true });
      expect(await liveBaseRows(dir, store, TRIPS)).toEqual(expected);
    },
  );
});

describe('what a pending compaction of ours leaves for Hudi (mor_v6_trips_8i1u)', () => {
  it('a MERGE marker naming each new base file and our heartbeat; the re-run (once the crashed run is dead) rolls the inflight back to its plan, then commits and removes the markers and the heartbeat', async () => {
    // Prepare
    const { dir, store } = await copyFixture('mor_v6_trips_8i1u');
    const expected = await mergedView(dir, store, TRIPS);
    await expect(
      compactHudiMergeOnRead(deps(store), '', { deltaCommits: 1, crashAfter: 'written' }),
    ).rejects.toThrow(/crash after/);
    const plan = await readHudiTable(store, '');
    const outputs = (await readdir(dir, { recursive: true }))
      .filter((f) => f.endsWith(`_${INSTANT}.parquet`) && !f.startsWith('.hoodie'))
      .sort();

    // Act
    const named = (await filesNamedByMarkers(store, '', INSTANT)).sort();
    const markers = (await readdir(join(dir, '.hoodie', '.temp', INSTANT), { recursive: true })).filter((f) =>
      f.includes('.marker.'),
    );
    const heartbeats = await readdir(join(dir, '.hoodie', '.heartbeat')).catch(() => []);
    const rerun = await compactHudiMergeOnRead(deps(store, await afterTheCrashedRunDied(dir)), '', {
      deltaCommits: 1,
    });

    // Assess: Hudi's marker-based rollback of T would delete exactly our outputs; our heartbeat of T (which Hudi
    // never reads for a compaction) says a run of ours works on it, and goes with the completion.
    expect(plan.timeline.pendingPlans.map((p) => `${p.kind} ${p.instant.time} ${p.instant.state}`)).toEqual([
      `compaction ${INSTANT} inflight`,
    ]);
    expect(outputs).toHaveLength(1);
    expect(named).toEqual(outputs);
    expect(markers.every((m) => m.endsWith('.marker.MERGE'))).toBe(true);
    expect(heartbeats).toEqual([INSTANT]);
    expect(rerun).toMatchObject({ kind: 'compacted', instant: INSTANT, resumed: true });
    expect(await readdir(join(dir, '.hoodie', '.heartbeat')).catch(() => [])).toEqual([]);
    expect(await liveBaseRows(dir, store, TRIPS)).toEqual(expected);
    expect(await readdir(join(dir, '.hoodie', '.temp'), { recursive: true }).catch(() => [])).toEqual([]);
  });

  it('keeps its plan when its rewrite fails after a writer began a later instant, and a re-run finishes it', async () => {
    // Prepare: the rewrite fails once a writer started a delta commit after T (a v6 writer puts its logs under
    // base instant T: removing the plan would leave them in no slice).
    const { dir, store } = await copyFixture('mor_v6_trips_8i1u');
    const expected = await mergedView(dir, store, TRIPS);
    const later = '20261201000500000';
    const failing = {
      ...deps(store),
      engine: {
        ...defaultParquetEngine,
        rewriteGroup: async () => {
          await store.put(`.hoodie/${later}.deltacommit.requested`, new Uint8Array(0));
          throw new Error('disk full (test)');
        },
      },
    };

    // Act
    await expect(compactHudiMergeOnRead(failing, '', { deltaCommits: 1 })).rejects.toThrow(
      'disk full (test)',
    );
    const timeline = (await readdir(join(dir, '.hoodie'))).filter((n) => n.startsWith(INSTANT)).sort();
    const leftovers = (await readdir(dir, { recursive: true })).filter(
      (f) => f.endsWith(`_${INSTANT}.parquet`) || f.includes('.marker.'),
    );
    await rm(join(dir, '.hoodie', `${later}.deltacommit.requested`));
    const rerun = await compactHudiMergeOnRead(deps(store, new ManualClock(NOW + 600_000)), '', {
      deltaCommits: 1,
    });

    // Assess: rolled back to its plan as Hudi rolls back an inflight compaction, then finished
    expect(timeline).toEqual([`${INSTANT}.compaction.requested`]);
    expect(leftovers).toEqual([]);
    expect(rerun).toMatchObject({ kind: 'compacted', instant: INSTANT, resumed: true });
    expect(await liveBaseRows(dir, store, TRIPS)).toEqual(expected);
  });
});

/** Rewrites the table's payload class in hoodie.properties (the fixtures' is OverwriteWithLatestAvroPayload). */
async function setPayloadClass(dir: string, payloadClass: string): Promise<void> {
  const props = join(dir, '.hoodie', 'hoodie.properties');
  await writeFile(
    props,
    (await readFile(props, 'utf8')).replace('OverwriteWithLatestAvroPayload', payloadClass),
  );
}

describe('Merge-on-Read compaction refusals', () => {
  it('refuses a table whose payload class is not one of the two implemented, by name, every byte unchanged', async () => {
    // Prepare
    const { dir, store } = await copyFixture('mor_v6_trips_8i1u');
    await setPayloadClass(dir, 'PartialUpdateAvroPayload');
    const before = await folderContentSnapshot(dir);

    // Act
    const attempt = compactHudiMergeOnRead(deps(store), '', { deltaCommits: 1 });

    // Assess
    await expect(attempt).rejects.toThrow(HudiMergeUnsupportedError);
    await expect(attempt).rejects.toThrow(/PartialUpdateAvroPayload/);
    expect(await folderContentSnapshot(dir)).toEqual(before);
  });

  it('refuses a slice whose nested columns the log rows cannot be written in (mor_v6_nonpartitioned_rollback), every byte unchanged', async () => {
    // Prepare
    const { dir, store } = await copyFixture('mor_v6_nonpartitioned_rollback');
    const before = await folderContentSnapshot(dir);

    // Act
    const attempt = compactHudiMergeOnRead(deps(store), '', { deltaCommits: 1 });

    // Assess
    await expect(attempt).rejects.toThrow(HudiCompactionUnsupportedError);
    await expect(attempt).rejects.toThrow(/nested column arrayField/);
    expect(await folderContentSnapshot(dir)).toEqual(before);
  });

  it('refuses a slice whose log holds a block the merge refuses (HFILE_DATA) before scheduling: no plan is left, every byte unchanged', async () => {
    // Prepare: an HFILE_DATA block of a committed instant appended to a log of a slice the trigger compacts
    const { dir, store } = await copyFixture('mor_v6_trips_8i1u');
    const state = await readHudiTable(store, '');
    const log = state.partitions
      .flatMap((p) => p.liveSlices)
      .find((s) => s.baseFile !== undefined && s.logFiles.length > 0)
      ?.logFiles.at(-1);
    const instant = state.timeline.completedWrites.at(-1)?.instant.time;
    if (log === undefined || instant === undefined) throw new Error('the fixture has no slice with logs');
    const bytes = await store.get(log.key);
    const hfile = encodeLogBlock({
      type: 'HFILE_DATA_BLOCK',
      header: [['INSTANT_TIME', instant]],
      content: new Uint8Array([1, 2, 3]),
    });
    await store.put(log.key, new Uint8Array([...bytes, ...hfile]));
    const before = await folderContentSnapshot(dir);

    // Act
    const attempt = compactHudiMergeOnRead(deps(store), '', { deltaCommits: 1 });

    // Assess: refused by name, before the plan (before, the plan was written and left behind)
    await expect(attempt).rejects.toThrow(HudiLogUnsupportedError);
    await expect(attempt).rejects.toThrow(/an HFILE_DATA block/);
    expect(await folderContentSnapshot(dir)).toEqual(before);
    expect((await readHudiTable(store, '')).timeline.pendingPlans).toEqual([]);
  });

  it('refuses, before the plan, a log ordering value of a type the base row of its key has no order with (DefaultHoodieRecordPayload), every byte unchanged', async () => {
    // Prepare: the table merged by DefaultHoodieRecordPayload (which compares a log record's `ts` with its base row's),
    // and a committed delta commit whose log holds a string `ts` for a base key no other log record has
    const { dir, store, partition, victim: key, instant } = await sanFranciscoSliceToDeleteFrom();
    await setPayloadClass(dir, 'DefaultHoodieRecordPayload');
    const schema = JSON.stringify({
      type: 'record',
      name: 'r',
      fields: [
        { name: '_hoodie_record_key', type: 'string' },
        { name: 'ts', type: 'string' },
      ],
    });
    await writeFile(
      join(partition, '.d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0_20250331030642808.log.2_0-40-90'),
      avroDataBlock(instant, schema, [{ _hoodie_record_key: key, ts: 'late' }]),
    );
    await cp(
      join(dir, '.hoodie', '20250331030645735.deltacommit'),
      join(dir, '.hoodie', `${instant}.deltacommit`),
    );
    const before = await folderContentSnapshot(dir);

    // Act
    const attempt = compactHudiMergeOnRead(deps(store), '', { deltaCommits: 1 });

    // Assess
    await expect(attempt).rejects.toThrow(HudiMergeUnsupportedError);
    await expect(attempt).rejects.toThrow(/ordering values of types bigint and string/);
    expect(await folderContentSnapshot(dir)).toEqual(before);
    expect((await readHudiTable(store, '')).timeline.pendingPlans).toEqual([]);
  });

  it('refuses mor_v8_trips_8i3u1d as Hudi wrote it, with its metadata table, every byte unchanged', async () => {
    // Prepare
    const { dir, store } = await copyFixture('mor_v8_trips_8i3u1d');
    const before = await folderContentSnapshot(dir);

    // Act
    const attempt = compactHudiMergeOnRead(deps(store), '', { deltaCommits: 1 });

    // Assess
    await expect(attempt).rejects.toThrow(HudiMetadataTableError);
    expect(await folderContentSnapshot(dir)).toEqual(before);
  });

  it('plans nothing on mor_v9_txns_simple_nometa, whose live slices Hudi already compacted or clustered', async () => {
    // Prepare
    const { dir, store } = await copyFixture('mor_v9_txns_simple_nometa');
    const before = await folderContentSnapshot(dir);

    // Act
    const result = await compactHudiMergeOnRead(deps(store), '', { deltaCommits: 1 });

    // Assess
    expect(result).toEqual({
      kind: 'nothing',
      reason: 'no live file slice has both a base file and log files',
    });
    expect(await folderContentSnapshot(dir)).toEqual(before);
  });

  it('does not schedule before the configured number of delta commits (Hudi NUM_COMMITS)', async () => {
    // Prepare: mor_v6_trips_8i1u has 2 delta commits.
    const { dir, store } = await copyFixture('mor_v6_trips_8i1u');
    const before = await folderContentSnapshot(dir);

    // Act
    const result = await compactHudiMergeOnRead(deps(store), '', { deltaCommits: 3 });

    // Assess
    expect(result.kind).toBe('nothing');
    expect(result.kind === 'nothing' && result.reason).toMatch(/^2 delta commit\(s\)/);
    expect(await folderContentSnapshot(dir)).toEqual(before);
  });

  it('defers on a table version 6 with a write pending, naming it, every byte unchanged; runs once it completed', async () => {
    // Prepare: a delta commit begun (requested + inflight) and not completed: a v6 compaction must stay below it
    const { dir, store } = await copyFixture('mor_v6_trips_8i1u');
    const pending = '20250331030650000';
    await cp(
      join(dir, '.hoodie', '20250331030645735.deltacommit.requested'),
      join(dir, '.hoodie', `${pending}.deltacommit.requested`),
    );
    await cp(
      join(dir, '.hoodie', '20250331030645735.deltacommit.inflight'),
      join(dir, '.hoodie', `${pending}.deltacommit.inflight`),
    );
    const before = await folderContentSnapshot(dir);

    // Act
    const result = await compactHudiMergeOnRead(deps(store), '', { deltaCommits: 1 });
    const after = await folderContentSnapshot(dir);
    await cp(
      join(dir, '.hoodie', '20250331030645735.deltacommit'),
      join(dir, '.hoodie', `${pending}.deltacommit`),
    );
    const completed = await compactHudiMergeOnRead(deps(store), '', { deltaCommits: 1 });

    // Assess
    expect(result.kind).toBe('nothing');
    expect(result.kind === 'nothing' && result.reason).toMatch(
      new RegExp(`^table version 6 with write\\(s\\) pending \\(${pending}\\.deltacommit\\.inflight\\)`),
    );
    expect(after).toEqual(before);
    expect(completed.kind).toBe('compacted');
  });

  it('defers when a v6 write begins between its first read and the lock: nothing scheduled, the lock released', async () => {
    // Prepare: the writer's requested file lands as our lock is taken (after the first read, before the re-read)
    const { dir, store } = await copyFixture('mor_v6_trips_8i1u');
    const before = await folderContentSnapshot(dir);
    const pending = '20250331030650000';
    const racing = storageLockAfter((s) =>
      s.put(`.hoodie/${pending}.deltacommit.requested`, new Uint8Array(0)),
    );

    // Act
    const result = await compactHudiMergeOnRead({ ...deps(store), coordination: racing }, '', {
      deltaCommits: 1,
    });

    // Assess: only the writer's file is new; no instant of ours, the storage lock released
    expect(result.kind === 'nothing' && result.reason).toMatch(
      new RegExp(`^table version 6 with write\\(s\\) pending \\(${pending}\\.deltacommit\\.requested\\)`),
    );
    const after = tableBytes(await folderContentSnapshot(dir));
    expect(after.filter((l) => !l.startsWith(`.hoodie/${pending}.deltacommit.requested `))).toEqual(before);
    expect(after.some((l) => l.includes(INSTANT))).toBe(false);
    const next = await STORAGE_LOCK.lockFor(store, '', 'trips', new ManualClock(NOW))?.acquire({ waitMs: 0 });
    expect(await next?.release()).toBe('released');
  });

  it('rolls a failed run back to its plan and keeps it: no output, no marker; a re-run finishes it with the merged view', async () => {
    // Prepare: the verification fails after the new base file was written (mid-compaction, output on disk)
    const { dir, store } = await copyFixture('mor_v6_trips_8i1u');
    const expected = await mergedView(dir, store, TRIPS);
    const before = await folderContentSnapshot(dir);
    const failing = {
      ...deps(store),
      engine: {
        ...defaultParquetEngine,
        verifyOutputs: async () => {
          throw new Error('verification failed (test)');
        },
      },
    };

    // Act
    await expect(compactHudiMergeOnRead(failing, '', { deltaCommits: 1 })).rejects.toThrow(
      'verification failed (test)',
    );
    const after = tableBytes(await folderContentSnapshot(dir));
    const rerun = await compactHudiMergeOnRead(deps(store, new ManualClock(NOW + 60_000)), '', {
      deltaCommits: 1,
    });

    // Assess: Hudi's files unchanged, only the requested plan of ours (the inflight, output and markers rolled
    // back), then the plan finished by the next run with the same rows
    expect(after.filter((l) => !l.includes(INSTANT))).toEqual(before);
    expect(after.filter((l) => l.includes(INSTANT)).map((l) => l.split(' ')[0])).toEqual([
      `.hoodie/${INSTANT}.compaction.requested`,
    ]);
    expect(rerun).toMatchObject({ kind: 'compacted', instant: INSTANT, resumed: true });
    expect(await liveBaseRows(dir, store, TRIPS)).toEqual(expected);
  });
});

/** A zig-zag Avro long of a small non-negative number. */
function avroLong(n: number): Buffer {
  const bytes: number[] = [];
  let v = n * 2;
  while (v >= 0x80) {
    bytes.push((v & 0x7f) | 0x80);
    v = Math.floor(v / 128);
  }
  bytes.push(v);
  return Buffer.from(bytes);
}

function avroString(text: string): Buffer {
  const b = Buffer.from(text, 'utf8');
  return Buffer.concat([avroLong(b.length), b]);
}

/** A DELETE_BLOCK (content version 3) of natural-order deletes (no ordering value), as SQL DELETE writes them. */
function deleteBlock(instant: string, deletes: readonly { key: string; partition: string }[]): Buffer {
  const entries = deletes.map((d) =>
    Buffer.concat([
      Buffer.from([2]),
      avroString(d.key),
      Buffer.from([2]),
      avroString(d.partition),
      Buffer.from([0]),
    ]),
  );
  const datum = Buffer.concat([avroLong(deletes.length), ...entries, Buffer.from([0])]);
  return block(T.DELETE, [[H.INSTANT_TIME, instant]], Buffer.concat([int32(3), int32(datum.length), datum]));
}

/**
 * A copy of mor_v6_trips_8i1u, its san_francisco partition folder, the keys of that slice's base file, one of them to
 * delete (not the one the fixture's own log updates) and the instant of the delta commit that deletes it.
 */
async function sanFranciscoSliceToDeleteFrom() {
  const { dir, store } = await copyFixture('mor_v6_trips_8i1u');
  const partition = join(dir, 'city=san_francisco');
  const base = join(partition, 'd0304c53-6fd2-4b7a-a9d6-5ff632f79224-0_0-13-60_20250331030642808.parquet');
  const keys = (
    await db.rows(`SELECT _hoodie_record_key AS k FROM read_parquet(${sqlString(base)}) ORDER BY 1`)
  ).map((r) => String(r.k));
  const victim = keys.find((k) => k !== '9909a8b1-2d15-4d3d-8ec9-efc48c536a00') as string;
  const instant = '20250331030650000';
  /**
   * A delta commit at `instant` appending a delete block for `victim` to the slice's logs (a second log version),
   * followed in that log by `after` (e.g. a rollback command block).
   */
  const commitDelete = async (after: readonly Buffer[] = []) => {
    await writeFile(
      join(partition, '.d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0_20250331030642808.log.2_0-40-90'),
      Buffer.concat([deleteBlock(instant, [{ key: victim, partition: 'city=san_francisco' }]), ...after]),
    );
    await cp(
      join(dir, '.hoodie', '20250331030645735.deltacommit'),
      join(dir, '.hoodie', `${instant}.deltacommit`),
    );
  };
  return { dir, store, partition, keys, victim, instant, commitDelete };
}

describe('Merge-on-Read compaction with a delete block', () => {
  it('drops the deleted row from the new base file and counts it as deleted, not lost', async () => {
    // Prepare: a second delta commit on mor_v6_trips_8i1u appending a delete block for one san_francisco key to the
    // slice's logs (a second log version, as Hudi appends one), committed by its completed deltacommit.
    const { dir, store, keys, victim, commitDelete } = await sanFranciscoSliceToDeleteFrom();
    await commitDelete();
    const expected = await mergedView(dir, store, TRIPS);

    // Act
    const result = await compactHudiMergeOnRead(deps(store), '', { deltaCommits: 1 });

    // Assess
    expect(expected).toHaveLength(7);
    expect(expected.some((r) => r.includes(victim))).toBe(false);
    expect(result).toMatchObject({
      kind: 'compacted',
      slices: [
        {
          partition: 'city=san_francisco',
          baseRows: keys.length,
          deleted: 1,
          updated: 1,
          rows: keys.length - 1,
        },
      ],
    });
    expect(await liveBaseRows(dir, store, TRIPS)).toEqual(expected);
  });
});

describe('Merge-on-Read compaction with a rollback command block', () => {
  it('honours the rollback: the delete it voids removes nothing', async () => {
    // Prepare: the delete block of a write, then a rollback command block voiding that write (Hudi appends one when
    // it rolls back a delta commit whose log blocks it cannot delete).
    const { dir, store, keys, victim, instant, commitDelete } = await sanFranciscoSliceToDeleteFrom();
    await commitDelete([rollback('20250331030651000', instant)]);
    const expected = await mergedView(dir, store, TRIPS);

    // Act
    const result = await compactHudiMergeOnRead(deps(store), '', { deltaCommits: 1 });

    // Assess
    expect(expected).toHaveLength(8);
    expect(expected.some((r) => r.includes(victim))).toBe(true);
    expect(result).toMatchObject({
      kind: 'compacted',
      slices: [
        { partition: 'city=san_francisco', baseRows: keys.length, deleted: 0, updated: 1, rows: keys.length },
      ],
    });
    expect(await liveBaseRows(dir, store, TRIPS)).toEqual(expected);
  });
});

describe('Merge-on-Read compaction with a delta commit completed while it schedules', () => {
  it('merges the log that commit wrote, which its plan names: the deleted row is gone from the new base file', async () => {
    // Prepare: as our lock is first taken (after the first read and the plan-time check, before the plan), a writer
    // completes a delta commit appending a delete block for one san_francisco key to that slice's logs.
    const { dir, store, keys, victim, instant, commitDelete } = await sanFranciscoSliceToDeleteFrom();
    let written = false;
    const racing = storageLockAfter(async () => {
      if (written) return;
      written = true;
      await commitDelete();
    });

    // Act
    const result = await compactHudiMergeOnRead({ ...deps(store), coordination: racing }, '', {
      deltaCommits: 1,
    });
    const planned = await readHudiTable(store, '');

    // Assess: the plan took the new log, and the run merged it (the delete removed its row), as the merged view of
    // the table at the plan says
    expect(written).toBe(true);
    expect(result).toMatchObject({
      kind: 'compacted',
      slices: [{ partition: 'city=san_francisco', deleted: 1, rows: keys.length - 1 }],
    });
    expect(planned.timeline.completedWrites.some((w) => w.instant.time === instant)).toBe(true);
    const live = await liveBaseRows(dir, store, TRIPS);
    expect(live).toHaveLength(7);
    expect(live.some((r) => r.includes(victim))).toBe(false);
  });
});
