// Cleaning a Hudi Copy-on-Write table (v6 and v8) through a `clean` instant as Hudi writes one: after the test's
// appender committed inserts, lake-compactor clustered them (replaced file groups) and a writer upserted the
// clustered group (an older slice), the clean deletes exactly what Hudi's policy and our retention allow, through
// clean.requested → inflight → completed. Live rows (read by DuckDB from the files an independent replay of the
// timeline names) are identical before and after; a dry run changes no byte; what retention keeps stays; the
// format's own reader after the clean finds every file it names; an interrupted clean is finished from its plan.
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../../../../functions/adapters/local-object-store.js';
import { run } from '../../../../../functions/cli/index.js';
import { cleanHudiTable } from '../../../../../functions/core/formats/hudi/clean.js';
import type { HudiCoordination } from '../../../../../functions/core/formats/hudi/clustering-commit.js';
import { HudiInstantCache } from '../../../../../functions/core/formats/hudi/instant-cache.js';
import { StorageBasedHudiLock } from '../../../../../functions/core/formats/hudi/lock/index.js';
import { readHudiTable } from '../../../../../functions/core/formats/hudi/table-state.js';
import {
  CLEAN_METADATA_SCHEMA,
  CLEANER_PLAN_SCHEMA,
  decodeTimelineAvro,
} from '../../../../../functions/core/formats/hudi/timeline-writer/index.js';
import { ManualClock } from '../../../../../functions/ports/clock.js';
import type { DeleteRef, ObjectStore } from '../../../../../functions/ports/object-store.js';
import { captureIo } from '../../../../support/cli-io.js';
import { type DuckDb, openDuckDb, sqlString } from '../../../../support/duckdb.js';
import { folderContentSnapshot } from '../../../../support/folder-snapshot.js';
import {
  type AppenderTable,
  appendHudiInsert,
  createHudiTable,
  upsertHudiFileGroup,
} from '../../../../support/hudi-appender.js';
import { completedWrites, liveFiles } from '../../../../support/hudi-replay.js';

const CLUSTERED_AT = Date.UTC(2024, 3, 1);
const DAY = 86_400_000;
const HUDI_FLAGS = ['--format', 'hudi', '--hudi-lock', 'storage', '--hudi-index-type', 'BLOOM'];
const PARTITIONS = ['10', '20'];

let db: DuckDb;
let dir: string;

beforeAll(async () => {
  db = await openDuckDb();
});

afterAll(async () => {
  db.close();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

const storageLock: HudiCoordination = {
  lockFor: (store, tableRoot, _name, clock) => new StorageBasedHudiLock({ store, tableRoot, clock }),
};

async function liveRows(files: readonly string[]): Promise<string[]> {
  const list = files.map((f) => sqlString(join(dir, f))).join(', ');
  const rows = await db.rows(`SELECT * FROM read_parquet([${list}]) ORDER BY ALL`);
  return rows.map((r) => JSON.stringify(r));
}

/** Every data file under the root (outside `.hoodie/`), relative. */
async function dataFiles(): Promise<string[]> {
  const out: string[] = [];
  for (const p of PARTITIONS)
    for (const n of await readdir(join(dir, p))) if (n.endsWith('.parquet')) out.push(`${p}/${n}`);
  return out.sort();
}

function timelineDir(version: 6 | 8): string {
  return join(dir, version === 6 ? '.hoodie' : '.hoodie/timeline');
}

describe.each([6, 8] as const)('cleaning a Hudi table of version %i', (version) => {
  let table: AppenderTable;
  let store: LocalObjectStore;
  /** The file of the clustered slice the upsert superseded. */
  let supersededSlice: string;
  /** The base files of the file groups the clustering replaced. */
  let replacedFiles: string[];

  beforeEach(async () => {
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
    dir = await mkdtemp(join(tmpdir(), 'lc-hudi-clean-'));
    store = new LocalObjectStore(dir);
    table = await createHudiTable(store, '', version);
    for (const partition of PARTITIONS)
      for (let b = 0; b < 6; b += 1) await appendHudiInsert(table, partition, 5 + b);
    replacedFiles = await liveFiles(dir, version);
    const io = captureIo({ now: CLUSTERED_AT });
    expect(await run(['compact', dir, ...HUDI_FLAGS], io), io.stderr.join('\n')).toBe(0);
    // A writer then upserts the clustered group of partition 10, and inserts once more.
    table.last = '20240401000100000';
    const clustered = (await liveFiles(dir, version)).filter((f) => f.startsWith('10/'));
    expect(clustered).toHaveLength(1);
    supersededSlice = clustered[0] as string;
    const fileId = supersededSlice.slice(3).split('_')[0] as string;
    const ids = (
      await db.rows(`SELECT id FROM read_parquet(${sqlString(join(dir, supersededSlice))}) ORDER BY id`)
    ).map((r) => Number(r.id));
    await upsertHudiFileGroup(table, '10', fileId, ids);
    await appendHudiInsert(table, '20', 2);
  });

  it('a dry run lists the replaced file groups and the superseded slice, and changes no byte', async () => {
    // Prepare
    const before = await folderContentSnapshot(dir);

    // Act
    const report = await cleanHudiTable(store, '', {
      rules: { policy: 'KEEP_LATEST_COMMITS', retained: 1 },
      now: CLUSTERED_AT + 30 * DAY,
      retentionHours: 168,
      dryRun: true,
      clock: new ManualClock(CLUSTERED_AT + 30 * DAY),
    });

    // Assess
    expect(report.files.map((f) => f.key).sort()).toEqual([...replacedFiles, supersededSlice].sort());
    expect(report.instant).toBeUndefined();
    expect(await folderContentSnapshot(dir)).toEqual(before);
  });

  it('deletes them through clean.requested, inflight and a completed clean; the live rows are identical', async () => {
    // Prepare: the coordination carries a warm function's instant cache, as a deployed one's does
    const liveBefore = await liveFiles(dir, version);
    const rowsBefore = await liveRows(liveBefore);
    const stateBefore = await readHudiTable(store, '');
    const now = CLUSTERED_AT + 30 * DAY;
    const instantCache = new HudiInstantCache();

    // Act
    const report = await cleanHudiTable(store, '', {
      rules: { policy: 'KEEP_LATEST_COMMITS', retained: 1 },
      now,
      retentionHours: 168,
      dryRun: false,
      coordination: { ...storageLock, instantCache },
      clock: new ManualClock(now),
    });

    // Assess: the table was read through the cache (every completed write's metadata kept in it)
    expect(instantCache.size).toBe(stateBefore.timeline.completedWrites.length);

    // Assess: exactly the planned files are gone, the live ones stay with the same rows
    const expectedGone = [...replacedFiles, supersededSlice].sort();
    expect(report.files.map((f) => f.key).sort()).toEqual(expectedGone);
    const remaining = await dataFiles();
    for (const f of expectedGone) expect(remaining, f).not.toContain(f);
    expect(remaining).toEqual(liveBefore);
    expect(await liveFiles(dir, version)).toEqual(liveBefore);
    expect(await liveRows(liveBefore)).toEqual(rowsBefore);
    // The clean instant as Hudi writes it: requested plan, inflight, completed metadata
    const instant = report.instant as string;
    const names = await readdir(timelineDir(version));
    expect(names).toContain(`${instant}.clean.requested`);
    expect(names).toContain(`${instant}.clean.inflight`);
    const completed = names.find((n) =>
      version === 6 ? n === `${instant}.clean` : new RegExp(`^${instant}_\\d{17}\\.clean$`).test(n),
    );
    expect(completed).toBeDefined();
    const plan = decodeTimelineAvro(
      new Uint8Array(await readFile(join(timelineDir(version), `${instant}.clean.requested`))),
      CLEANER_PLAN_SCHEMA,
    ).records[0] as {
      policy: string;
      version: number;
      earliestInstantToRetain: { timestamp: string; action: string; state: string };
      filePathsToBeDeletedPerPartition: Record<string, { filePath: string; isBootstrapBaseFile: boolean }[]>;
    };
    expect(plan.policy).toBe('KEEP_LATEST_COMMITS');
    expect(plan.version).toBe(2);
    const lastWrite = (await completedWrites(dir, version)).at(-1)?.name.slice(0, 17);
    expect(plan.earliestInstantToRetain).toEqual({
      timestamp: lastWrite,
      action: 'commit',
      state: 'COMPLETED',
    });
    expect(
      Object.entries(plan.filePathsToBeDeletedPerPartition)
        .flatMap(([p, infos]) =>
          infos.map((i) => `${p}/${i.filePath.slice(i.filePath.lastIndexOf('/') + 1)}`),
        )
        .sort(),
    ).toEqual(expectedGone);
    for (const infos of Object.values(plan.filePathsToBeDeletedPerPartition))
      for (const i of infos) expect(i.filePath).toMatch(/^file:\//);
    const metadata = decodeTimelineAvro(
      new Uint8Array(await readFile(join(timelineDir(version), completed as string))),
      CLEAN_METADATA_SCHEMA,
    ).records[0] as {
      startCleanTime: string;
      totalFilesDeleted: number;
      earliestCommitToRetain: string;
      partitionMetadata: Record<string, { successDeleteFiles: string[]; failedDeleteFiles: string[] }>;
    };
    expect(metadata.startCleanTime).toBe(instant);
    expect(metadata.totalFilesDeleted).toBe(expectedGone.length);
    expect(metadata.earliestCommitToRetain).toBe(lastWrite);
    expect(
      Object.entries(metadata.partitionMetadata)
        .flatMap(([p, m]) => m.successDeleteFiles.map((n) => `${p}/${n}`))
        .sort(),
    ).toEqual(expectedGone);
    // The format's own view after the clean: same live slices, each of its files present, nothing pending
    const stateAfter = await readHudiTable(store, '');
    const slices = (s: typeof stateAfter) =>
      s.partitions.flatMap((p) => p.liveSlices.map((l) => l.baseFile?.key)).sort();
    expect(slices(stateAfter)).toEqual(slices(stateBefore));
    for (const key of slices(stateAfter)) expect(await store.head(key as string), key).toBeDefined();
    expect(stateAfter.timeline.latest.filter((i) => i.action === 'clean').map((i) => i.state)).toEqual([
      'completed',
    ]);
  });

  it('keeps what the policy retains: with two commits retained, the slice before the earliest commit to retain stays', async () => {
    // Prepare
    const now = CLUSTERED_AT + 30 * DAY;

    // Act
    const report = await cleanHudiTable(store, '', {
      rules: { policy: 'KEEP_LATEST_COMMITS', retained: 2 },
      now,
      retentionHours: 168,
      dryRun: false,
      coordination: storageLock,
      clock: new ManualClock(now),
    });

    // Assess
    expect(report.files.map((f) => f.key).sort()).toEqual([...replacedFiles].sort());
    expect(await store.head(supersededSlice)).toBeDefined();
  });

  it("keeps everything superseded inside the vacuum's retention, and writes no instant when nothing is due", async () => {
    // Prepare: one day after the clustering, inside a 168 h retention
    const before = await folderContentSnapshot(dir);
    const now = CLUSTERED_AT + DAY;

    // Act
    const report = await cleanHudiTable(store, '', {
      rules: { policy: 'KEEP_LATEST_COMMITS', retained: 1 },
      now,
      retentionHours: 168,
      dryRun: false,
      coordination: storageLock,
      clock: new ManualClock(now),
    });

    // Assess
    expect(report.files).toEqual([]);
    expect(report.instant).toBeUndefined();
    expect(await folderContentSnapshot(dir)).toEqual(before);
  });

  it('keeps the newest file versions under KEEP_LATEST_FILE_VERSIONS and deletes the replaced groups', async () => {
    // Prepare
    const now = CLUSTERED_AT + 30 * DAY;

    // Act
    const report = await cleanHudiTable(store, '', {
      rules: { policy: 'KEEP_LATEST_FILE_VERSIONS', retained: 1 },
      now,
      retentionHours: 168,
      dryRun: false,
      coordination: storageLock,
      clock: new ManualClock(now),
    });

    // Assess
    expect(report.files.map((f) => f.key).sort()).toEqual([...replacedFiles, supersededSlice].sort());
    expect(report.earliestCommitToRetain).toBeUndefined();
    expect(await dataFiles()).toEqual(await liveFiles(dir, version));
  });

  it('finishes a clean interrupted after its plan was written, from that plan, on the next run', async () => {
    // Prepare: the first run's deletes fail (a crash between the plan and the deletes)
    const now = CLUSTERED_AT + 30 * DAY;
    const liveBefore = await liveFiles(dir, version);
    const rowsBefore = await liveRows(liveBefore);
    const crashing: ObjectStore = Object.create(store, {
      deleteMany: {
        value: async (refs: readonly DeleteRef[]) => {
          if (refs.some((r) => r.key.endsWith('.parquet'))) throw new Error('crash before deleting');
          return store.deleteMany(refs);
        },
      },
    });
    const options = {
      rules: { policy: 'KEEP_LATEST_COMMITS', retained: 1 } as const,
      now,
      retentionHours: 168,
      dryRun: false,
      coordination: storageLock,
      clock: new ManualClock(now),
    };
    await expect(cleanHudiTable(crashing, '', options)).rejects.toThrow('crash before deleting');
    const pending = (await readdir(timelineDir(version))).filter((n) => n.includes('.clean'));
    expect(pending.some((n) => n.endsWith('.clean.requested'))).toBe(true);
    expect(pending.some((n) => /\.clean$/.test(n))).toBe(false);

    // Act
    const report = await cleanHudiTable(store, '', options);

    // Assess
    expect(report.resumed).toBeDefined();
    expect(await dataFiles()).toEqual(liveBefore);
    expect(await liveRows(liveBefore)).toEqual(rowsBefore);
    const names = await readdir(timelineDir(version));
    expect(names.filter((n) => /\.clean$/.test(n))).toHaveLength(1);
    expect((await readHudiTable(store, '')).timeline.latest.filter((i) => i.action === 'clean')).toEqual([
      expect.objectContaining({ state: 'completed', time: report.resumed }),
    ]);
  });
});
