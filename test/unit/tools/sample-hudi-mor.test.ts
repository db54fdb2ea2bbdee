// The sample Hudi writer on Merge-on-Read tables. Its delta commits are written as Hudi writes them: the inflight
// workload and the completed deltacommit of a log append rebuilt from the fixtures' values are the fixtures' own
// files (v6 text for text, v8 block for block). A table it builds — inserts, then delta commits updating records
// in log files of their slices, some twice — reads back through the project's timeline and file-group reader and
// log merger as exactly the latest version of every record the appender wrote; `lake-compactor compact` compacts it
// into base files holding that same multiset; and later delta commits extend the compacted slices.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../../functions/adapters/local-object-store.js';
import { run } from '../../../functions/cli/index.js';
import { readHudiTable } from '../../../functions/core/formats/hudi/table-state.js';
import {
  compactionCommitContent,
  decodeTimelineAvro,
} from '../../../functions/core/formats/hudi/timeline-writer/index.js';
import {
  type AppenderRow,
  type AppenderTable,
  type AppenderTableVersion,
  appenderLatestRows,
  appendHudiDeltaCommit,
  appendHudiInsert,
  createHudiMorTable,
  createHudiTable,
  deltaCommitInflightContent,
  deltaCommitMetadata,
} from '../../../functions/tools/sample-hudi.js';
import { captureIo } from '../../support/cli-io.js';
import { type DuckDb, openDuckDb, sqlString } from '../../support/duckdb.js';
import { hudiMergedView } from '../../support/hudi-mor-view.js';
import { blocksWithoutSync, hoodieFile } from '../core/formats/hudi/timeline-writer/support.js';

/** Every column the appender writes but `_hoodie_file_name` (which a compaction rewrites to name its output). */
const COLUMNS = [
  '_hoodie_commit_time',
  '_hoodie_commit_seqno',
  '_hoodie_record_key',
  '_hoodie_partition_path',
  'id',
  'name',
  'byteField',
  'ts',
];

let db: DuckDb;
const dirs: string[] = [];
beforeAll(async () => {
  db = await openDuckDb();
});
afterAll(() => db.close());
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'lc-sample-hudi-mor-'));
  dirs.push(dir);
  return dir;
}

/** The appender's rows as the merged view canonicalises rows: one JSON text per row, sorted. */
function canonical(rows: readonly AppenderRow[]): string[] {
  return rows.map((r) => JSON.stringify(COLUMNS.map((c) => String(r[c as keyof AppenderRow])))).sort();
}

/** Every row of the live base files (DuckDB), when no live slice has a log file. */
async function liveBaseRows(dir: string, root: string): Promise<string[]> {
  const state = await readHudiTable(new LocalObjectStore(dir), root);
  const files = state.partitions.flatMap((p) =>
    p.liveSlices.map((s) => {
      expect(s.logFiles, `live slice ${s.fileId} still has log files`).toEqual([]);
      return sqlString(join(dir, s.baseFile?.key ?? ''));
    }),
  );
  const rows = await db.rows(`SELECT ${COLUMNS.join(', ')} FROM read_parquet([${files.join(', ')}])`);
  return rows.map((r) => JSON.stringify(COLUMNS.map((c) => String(r[c])))).sort();
}

describe('delta commit files as Hudi writes them', () => {
  it("rebuilds the v6 fixture's update deltacommit and its inflight workload text for text", () => {
    // Prepare: mor_v6_trips_8i1u's second deltacommit updated one record of one file group in a v6 log
    const table = 'mor_v6_trips_8i1u';
    const completed = Buffer.from(hoodieFile(table, '20250331030645735.deltacommit')).toString('utf8');
    const inflight = Buffer.from(hoodieFile(table, '20250331030645735.deltacommit.inflight')).toString(
      'utf8',
    );
    const extra = JSON.parse(completed).extraMetadata as Record<string, string>;
    const partition = 'city=san_francisco';
    const fileId = 'd0304c53-6fd2-4b7a-a9d6-5ff632f79224-0';
    const log = `.${fileId}_20250331030642808.log.1_0-26-85`;

    // Act
    const metadata = deltaCommitMetadata(
      partition,
      [
        {
          partition,
          fileId,
          logFileName: log,
          logInstant: '20250331030642808',
          logVersion: 1,
          baseFile: `${fileId}_0-13-60_20250331030642808.parquet`,
          updates: 1,
          sizeInBytes: 1148,
          upsertTimeMs: 296,
        },
      ],
      extra,
      'UPSERT_PREPPED',
    );
    const workload = deltaCommitInflightContent(6, {
      partition,
      inserts: 0,
      updates: [{ fileId, baseInstant: '20250331030642808', records: 1 }],
      operationType: 'UPSERT_PREPPED',
    });

    // Assess
    expect(Buffer.from(compactionCommitContent(6, metadata)).toString('utf8')).toBe(completed);
    expect(Buffer.from(workload).toString('utf8')).toBe(inflight);
  });

  it("rebuilds the v8 fixture's update deltacommit and its inflight workload block for block", () => {
    // Prepare: mor_v8_trips_8i3u1d's deltacommit 20251220210127080 updated one record in a v8 log (named by itself)
    const table = 'mor_v8_trips_8i3u1d';
    const completed = hoodieFile(table, 'timeline/20251220210127080_20251220210127601.deltacommit');
    const inflight = hoodieFile(table, 'timeline/20251220210127080.deltacommit.inflight');
    const [record] = decodeTimelineAvro(completed).records as [{ extraMetadata: Record<string, string> }];
    const partition = 'city=chennai';
    const fileId = '6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0';

    // Act
    const metadata = deltaCommitMetadata(
      partition,
      [
        {
          partition,
          fileId,
          logFileName: `.${fileId}_20251220210127080.log.1_0-1072-3078`,
          logInstant: '20251220210127080',
          logVersion: 1,
          baseFile: '',
          updates: 1,
          sizeInBytes: 1141,
          upsertTimeMs: 79,
        },
      ],
      record.extraMetadata,
      'UPSERT_PREPPED',
    );
    const workload = deltaCommitInflightContent(8, {
      partition,
      inserts: 0,
      updates: [{ fileId, baseInstant: '20251220210108078', records: 1 }],
      operationType: 'UPSERT_PREPPED',
    });

    // Assess
    expect(blocksWithoutSync(compactionCommitContent(8, metadata)).equals(blocksWithoutSync(completed))).toBe(
      true,
    );
    expect(blocksWithoutSync(workload).equals(blocksWithoutSync(inflight))).toBe(true);
  });
});

/** Builds a MoR table: 2 partitions × 2 inserts, then 3 delta commits per partition (records updated up to twice). */
async function buildTable(
  dir: string,
  version: AppenderTableVersion,
): Promise<{ table: AppenderTable; store: LocalObjectStore; updated: number }> {
  const store = new LocalObjectStore(dir);
  const table = await createHudiMorTable(store, 'events', version);
  for (const partition of ['1', '2']) {
    await appendHudiInsert(table, partition, 10);
    await appendHudiInsert(table, partition, 7);
  }
  let updated = 0;
  for (let round = 0; round < 3; round++)
    for (const partition of ['1', '2']) {
      const commit = await appendHudiDeltaCommit(table, partition, { fraction: 0.4 });
      updated += commit?.updated ?? 0;
    }
  return { table, store, updated };
}

describe.each([6, 8] as const)('the Merge-on-Read appender on table version %i', (version) => {
  it('writes delta commits whose log files the reader merges into the latest version of every record', async () => {
    // Prepare
    const dir = await tempDir();

    // Act
    const { table, store, updated } = await buildTable(dir, version);

    // Assess: the timeline holds only deltacommits, every live slice has its base file and logs
    const state = await readHudiTable(store, 'events');
    expect(state.config.type).toBe('MERGE_ON_READ');
    expect(state.timeline.completedWrites.map((w) => w.instant.action)).toEqual(
      Array(10).fill('deltacommit'),
    );
    expect(state.timeline.pendingWrites).toEqual([]);
    const slices = state.partitions.flatMap((p) => p.liveSlices);
    expect(slices).toHaveLength(4);
    for (const slice of slices) {
      expect(slice.baseFile).toBeDefined();
      expect(slice.logFiles).toHaveLength(3);
    }
    // v6 logs extend their slice by version under its base instant; v8 logs are named by their own deltacommit.
    const names = slices.flatMap((s) =>
      s.logFiles.map((l) => [l.instantTime === s.baseInstantTime, l.version]),
    );
    if (version === 6) expect(names.every(([same]) => same)).toBe(true);
    else expect(names.every(([same, v]) => !same && v === 1)).toBe(true);
    // 34 records; each delta commit updates 40 % of a slice (4 of 10, 3 of 7), rotating so some get two versions
    const latest = appenderLatestRows(table);
    expect(latest).toHaveLength(34);
    expect(updated).toBe(3 * 2 * (4 + 3));
    expect(latest.filter((r) => r.name.includes('-u')).length).toBeGreaterThan(0);
    expect(latest.filter((r) => r.name.includes('-u')).length).toBeLessThan(updated);
    expect(await hudiMergedView(db, dir, 'events', COLUMNS)).toEqual(canonical(latest));
  });

  it('is compacted by lake-compactor compact into base files holding the same rows, and later delta commits extend the compacted slices', async () => {
    // Prepare
    const dir = await tempDir();
    const { table, store } = await buildTable(dir, version);
    const expected = canonical(appenderLatestRows(table));
    const io = captureIo({ now: Date.UTC(2026, 11, 1) });

    // Act
    const code = await run(
      [
        'compact',
        join(dir, 'events'),
        '--format',
        'hudi',
        '--hudi-lock',
        'storage',
        '--hudi-index-type',
        'BLOOM',
        '--hudi-timezone',
        'UTC',
        '--hudi-compaction-delta-commits',
        '1',
      ],
      io,
    );
    const compacted = await liveBaseRows(dir, 'events');
    const after = await appendHudiDeltaCommit(table, '1', { fraction: 0.5 });

    // Assess: one compaction commit, no pending instant, the base files hold exactly the merged view
    expect(code, io.stderr.join('\n')).toBe(0);
    expect(io.stdout.join('\n')).toContain('Hudi Merge-on-Read compaction');
    expect(compacted).toEqual(expected);
    const state = await readHudiTable(store, 'events');
    const compactions = state.timeline.completedWrites.filter((w) => w.metadata.compacted);
    expect(compactions).toHaveLength(1);
    expect(state.timeline.pendingPlans).toEqual([]);
    expect(state.timeline.pendingWrites).toEqual([]);
    // The delta commit after it lands in the compacted slices and the merged view follows it
    expect(after?.logKeys).toHaveLength(2);
    const compactedAt = compactions[0]?.instant.time;
    for (const slice of state.partitions.find((p) => p.partition === '1')?.liveSlices ?? []) {
      expect(slice.baseInstantTime).toBe(compactedAt);
      expect(slice.logFiles).toHaveLength(1);
    }
    expect(await hudiMergedView(db, dir, 'events', COLUMNS)).toEqual(canonical(appenderLatestRows(table)));
  });
});

describe('the Merge-on-Read appender refuses', () => {
  it.each([
    ['a delta commit on a Copy-on-Write table', 'cow', 0.2, /Merge-on-Read/],
    ['an update fraction outside (0, 1]', 'mor', 1.5, /fraction 1.5/],
  ] as const)('%s, writing nothing', async (_what, type, fraction, message) => {
    // Prepare
    const dir = await tempDir();
    const store = new LocalObjectStore(dir);
    const table =
      type === 'cow'
        ? await createHudiTable(store, 'events', 8)
        : await createHudiMorTable(store, 'events', 8);
    await appendHudiInsert(table, '1', 5);
    const before = (await readdir(dir, { recursive: true })).sort();

    // Act
    const act = appendHudiDeltaCommit(table, '1', { fraction });

    // Assess
    await expect(act).rejects.toThrow(message);
    expect((await readdir(dir, { recursive: true })).sort()).toEqual(before);
  });
});
