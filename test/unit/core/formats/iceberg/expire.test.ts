// expire_snapshots and remove_orphan_files on path-based Iceberg tables in a temp folder: an appender's table (one
// snapshot per micro-batch) compacted by `lake-compactor compact --format iceberg` (so older snapshots hold files the
// current one replaced), maintained with a clock far in the future. What is expected to go is computed here from the
// metadata before, through the snapshot reader (each snapshot's live files and manifests), not by the code under test;
// the current table's rows are read by DuckDB over the live files before and after.
import { cp, mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../../../../functions/adapters/local-object-store.js';
import { runCompact } from '../../../../../functions/cli/compact.js';
import {
  type IcebergCatalog,
  type LoadedTable,
  loadTable,
  PathCatalog,
  readMetadataText,
} from '../../../../../functions/core/formats/iceberg/catalog.js';
import { commitAppend } from '../../../../../functions/core/formats/iceberg/commit.js';
import { IcebergMaintenanceRefusedError } from '../../../../../functions/core/formats/iceberg/errors.js';
import { expireSnapshots } from '../../../../../functions/core/formats/iceberg/expire.js';
import {
  parseJsonKeepingLongs,
  stringifyJsonKeepingLongs,
} from '../../../../../functions/core/formats/iceberg/json.js';
import { readSnapshotFiles } from '../../../../../functions/core/formats/iceberg/live-files.js';
import { schemaById } from '../../../../../functions/core/formats/iceberg/metadata.js';
import { metricsConfig, readParquetMetrics } from '../../../../../functions/core/formats/iceberg/metrics.js';
import { removeOrphanFiles } from '../../../../../functions/core/formats/iceberg/orphans.js';
import {
  appendIcebergEvents,
  createIcebergEventsTable,
  generateIcebergEventsBatch,
} from '../../../../../functions/tools/sample-iceberg.js';
import { dayStartMs } from '../../../../../functions/tools/sample-lake.js';
import { captureIo } from '../../../../support/cli-io.js';
import { type DuckDb, openDuckDb, sqlString } from '../../../../support/duckdb.js';
import { pathCatalogOptions } from '../../../../support/fixtures.js';
import { copyFixtureTable, liveRows } from './commit-harness.js';

const HOUR = 3_600_000;
const DAYS = ['2024-03-01', '2024-03-02'];
const BATCHES = 6;
/** When the table was written and compacted: every snapshot carries this timestamp. */
const WRITTEN = Date.UTC(2024, 2, 3);
/** The maintenance clock: far past every snapshot and every file's modification time. */
const FAR = Date.UTC(2100, 0, 1);
const noSleep = async () => {};

let db: DuckDb;
/** The appended and compacted table, built once; each test works on its own copy. */
let template: string;
let dir: string;
let store: LocalObjectStore;

/** Every file under the folder, relative, sorted. */
async function files(): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name).slice(dir.length + 1))
    .sort();
}

/** The current snapshot's live data files and the multiset of their rows (DuckDB). */
async function live(): Promise<{ keys: string[]; rows: string[] }> {
  const table = await loadTable(store, '');
  const keys = (await readSnapshotFiles(store, table)).dataFiles.map((f) => f.entry.file.key).sort();
  const list = keys.map((k) => sqlString(join(dir, k))).join(', ');
  const rows = await db.rows(`SELECT * FROM read_parquet([${list}]) ORDER BY ALL`);
  return { keys, rows: rows.map((r) => JSON.stringify(r, (_k, v) => (typeof v === 'bigint' ? `${v}` : v))) };
}

/**
 * What expiring every snapshot but `kept` must delete, from the snapshot reader: manifest lists of the others,
 * manifests only they list, and data files live in one of them and live in none of the kept ones.
 */
async function expectedDeletes(table: LoadedTable, kept: ReadonlySet<bigint>): Promise<string[]> {
  const keptFiles = new Set<string>();
  const keptManifests = new Set<string>();
  const goneFiles = new Set<string>();
  const goneManifests = new Set<string>();
  const lists: string[] = [];
  for (const s of table.metadata.snapshots) {
    const read = await readSnapshotFiles(store, table, { snapshotId: s.snapshotId });
    const fileKeys = [...read.dataFiles, ...read.deleteFiles].map((f) => f.entry.file.key);
    const manifestKeys = read.manifests.map((m) => m.key);
    if (kept.has(s.snapshotId)) {
      for (const k of fileKeys) keptFiles.add(k);
      for (const k of manifestKeys) keptManifests.add(k);
    } else {
      for (const k of fileKeys) goneFiles.add(k);
      for (const k of manifestKeys) goneManifests.add(k);
      lists.push(table.paths.key(s.manifestList));
    }
  }
  return [
    ...lists,
    ...[...goneManifests].filter((k) => !keptManifests.has(k)),
    ...[...goneFiles].filter((k) => !keptFiles.has(k)),
  ].sort();
}

/** The last `n` snapshots of the current branch (current first). */
function lastOfMain(table: LoadedTable, n: number): Set<bigint> {
  const byId = new Map(table.metadata.snapshots.map((s) => [s.snapshotId, s]));
  const out = new Set<bigint>();
  let at = table.metadata.currentSnapshotId;
  while (at !== undefined && out.size < n) {
    out.add(at);
    at = byId.get(at)?.parentSnapshotId;
  }
  return out;
}

/** Commits a hand-edited copy of the current metadata (refs, properties) through the path catalog. */
async function editMetadata(edit: (raw: Record<string, unknown>) => void): Promise<void> {
  const base = await loadTable(store, '');
  const raw = parseJsonKeepingLongs(await readMetadataText(store, base.metadataKey)) as Record<
    string,
    unknown
  >;
  edit(raw);
  const outcome = await new PathCatalog(store).commit(base, stringifyJsonKeepingLongs(raw));
  expect(outcome.outcome).toBe('committed');
}

beforeAll(async () => {
  db = await openDuckDb();
  template = await mkdtemp(join(tmpdir(), 'lc-iceberg-expire-template-'));
  const writer = new LocalObjectStore(template);
  await createIcebergEventsTable(writer, '', { now: WRITTEN });
  let seed = 1;
  for (const day of DAYS)
    for (let b = 0; b < BATCHES; b += 1)
      await appendIcebergEvents(writer, '', { day, rows: 20 + b, seed: seed++, now: WRITTEN });
  await runCompact(template, { format: 'iceberg' }, captureIo({ now: WRITTEN }));
});

afterAll(async () => {
  db.close();
  for (const d of [dir, template]) if (d !== undefined) await rm(d, { recursive: true, force: true });
});

beforeEach(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  dir = await mkdtemp(join(tmpdir(), 'lc-iceberg-expire-'));
  await cp(template, dir, { recursive: true });
  store = new LocalObjectStore(dir);
});

describe('expire_snapshots', () => {
  it('removes every snapshot but the current one and deletes exactly the files only they referenced, the live rows unchanged', async () => {
    // Prepare
    const table = await loadTable(store, '');
    expect(table.metadata.snapshots).toHaveLength(DAYS.length * BATCHES + DAYS.length);
    const expected = await expectedDeletes(table, lastOfMain(table, 1));
    const before = await files();
    const liveBefore = await live();

    // Act
    const report = await expireSnapshots(store, '', { now: FAR, dryRun: false, sleep: noSleep });

    // Assess: the new metadata holds only the current snapshot; exactly the expected files went
    const after = await loadTable(store, '');
    expect(after.metadata.snapshots.map((s) => s.snapshotId)).toEqual([table.metadata.currentSnapshotId]);
    expect(after.metadata.snapshotLog.map((e) => e.snapshotId)).toEqual([table.metadata.currentSnapshotId]);
    expect(after.metadata.metadataLog.at(-1)?.metadataFile).toBe(table.paths.path(table.metadataKey));
    const now = await files();
    expect(before.filter((f) => !now.includes(f))).toEqual(expected);
    expect(report.totalRemoved.count).toBe(expected.length);
    expect(report.removed.data.count).toBe(DAYS.length * BATCHES);
    expect(report.expiredSnapshots).toHaveLength(table.metadata.snapshots.length - 1);
    const liveAfter = await live();
    expect(liveAfter).toEqual(liveBefore);
    for (const key of liveAfter.keys) expect(now).toContain(key);
  });

  it('deletes nothing and commits nothing in a dry run, and lists what the real run deletes', async () => {
    // Prepare
    const table = await loadTable(store, '');
    const expected = await expectedDeletes(table, lastOfMain(table, 1));
    const before = await files();

    // Act
    const report = await expireSnapshots(store, '', { now: FAR, dryRun: true });

    // Assess
    expect(await files()).toEqual(before);
    expect((await loadTable(store, '')).metadataKey).toBe(table.metadataKey);
    expect(report.candidates.map((c) => c.key).sort()).toEqual(expected);
    expect(report.attempts).toBe(0);
  });

  it('keeps the last N snapshots of main with retain-last, and their files', async () => {
    // Prepare
    const table = await loadTable(store, '');
    const kept = lastOfMain(table, 3);
    const expected = await expectedDeletes(table, kept);
    const before = await files();

    // Act
    await expireSnapshots(store, '', { now: FAR, dryRun: false, retainLast: 3 });

    // Assess
    const after = await loadTable(store, '');
    expect(new Set(after.metadata.snapshots.map((s) => s.snapshotId))).toEqual(kept);
    const now = await files();
    expect(before.filter((f) => !now.includes(f))).toEqual(expected);
    for (const id of kept) {
      const read = await readSnapshotFiles(store, after, { snapshotId: id });
      for (const f of read.dataFiles) expect(now).toContain(f.entry.file.key);
    }
  });

  it('keeps a tagged snapshot and what it references, drops a tag past its max-ref-age-ms, and honours main’s min-snapshots-to-keep', async () => {
    // Prepare: tag the first snapshot (kept) and the second (with a max ref age it has outlived); main keeps 2
    const table = await loadTable(store, '');
    const [first, second] = table.metadata.snapshots;
    await editMetadata((raw) => {
      const refs = raw.refs as Record<string, Record<string, unknown>>;
      refs.main = { ...refs.main, 'min-snapshots-to-keep': 2 };
      refs.audit = { 'snapshot-id': `\u0000long:${first?.snapshotId}`, type: 'tag' };
      refs.stale = {
        'snapshot-id': `\u0000long:${second?.snapshotId}`,
        type: 'tag',
        'max-ref-age-ms': 24 * HOUR,
      };
    });
    const edited = await loadTable(store, '');
    const kept = new Set([...lastOfMain(edited, 2), first?.snapshotId as bigint]);
    const expected = await expectedDeletes(edited, kept);
    const before = await files();

    // Act
    const report = await expireSnapshots(store, '', { now: FAR, dryRun: false });

    // Assess
    const after = await loadTable(store, '');
    expect(new Set(after.metadata.snapshots.map((s) => s.snapshotId))).toEqual(kept);
    expect([...after.metadata.refs.keys()].sort()).toEqual(['audit', 'main']);
    expect(report.removedRefs).toEqual(['stale']);
    const now = await files();
    expect(before.filter((f) => !now.includes(f))).toEqual(expected);
    const tagged = await readSnapshotFiles(store, after, { snapshotId: first?.snapshotId as bigint });
    expect(tagged.dataFiles).toHaveLength(1);
    expect(now).toContain(tagged.dataFiles[0]?.entry.file.key);
  });

  it("keeps every snapshot younger than the table's history.expire.max-snapshot-age-ms", async () => {
    // Prepare: a max age longer than the clock is ahead
    const table = await loadTable(store, '');
    await editMetadata((raw) => {
      raw.properties = {
        ...(raw.properties as Record<string, string>),
        'history.expire.max-snapshot-age-ms': String(FAR - WRITTEN + HOUR),
      };
    });
    const before = await files();

    // Act
    const report = await expireSnapshots(store, '', { now: FAR, dryRun: false });

    // Assess
    expect(report.olderThanSource).toBe('table property');
    expect(report.expiredSnapshots).toEqual([]);
    expect((await loadTable(store, '')).metadata.snapshots).toHaveLength(table.metadata.snapshots.length);
    expect(await files()).toEqual(before);
  });

  it('reloads and plans again when another writer commits first, losing neither its snapshot nor its file', async () => {
    // Prepare: a catalog that lets an appender commit just before expire's first commit
    const path = new PathCatalog(store);
    let appended: { key: string; snapshotId: bigint } | undefined;
    const racing: IcebergCatalog = {
      load: (root) => path.load(root),
      commit: async (base, text) => {
        if (appended === undefined)
          appended = await appendIcebergEvents(store, '', {
            day: DAYS[0] as string,
            rows: 7,
            seed: 99,
            now: FAR,
          });
        return path.commit(base, text);
      },
    };
    const liveBefore = await live();

    // Act
    const report = await expireSnapshots(store, '', {
      now: FAR,
      dryRun: false,
      catalog: racing,
      sleep: noSleep,
    });

    // Assess: two attempts; the appended snapshot is current, its file live and present, every earlier row kept
    expect(report.attempts).toBe(2);
    const after = await loadTable(store, '');
    expect(after.metadata.currentSnapshotId).toBe(appended?.snapshotId);
    const liveAfter = await live();
    expect(liveAfter.keys).toContain(appended?.key);
    expect(await files()).toContain(appended?.key);
    const appendedRows = await db.rows(
      `SELECT * FROM read_parquet(${sqlString(join(dir, appended?.key ?? ''))})`,
    );
    expect(liveAfter.rows).toHaveLength(liveBefore.rows.length + appendedRows.length);
    for (const row of liveBefore.rows) expect(liveAfter.rows).toContain(row);
  });

  it('refuses a table with gc.enabled=false and changes nothing', async () => {
    // Prepare
    await editMetadata((raw) => {
      raw.properties = { ...(raw.properties as Record<string, string>), 'gc.enabled': 'false' };
    });
    const before = await files();

    // Act
    const attempt = expireSnapshots(store, '', { now: FAR, dryRun: false });

    // Assess
    await expect(attempt).rejects.toBeInstanceOf(IcebergMaintenanceRefusedError);
    expect(await files()).toEqual(before);
  });
});

describe('remove_orphan_files', () => {
  const STRAY = 'data/event_timestamp_day=2024-03-01/00000-9-stray-00001.parquet';
  const YOUNG = 'data/event_timestamp_day=2024-03-02/00000-9-young-00001.parquet';

  async function strays(): Promise<void> {
    await writeFile(join(dir, STRAY), 'PAR1 never committed PAR1');
    await writeFile(join(dir, YOUNG), 'PAR1 about to be committed PAR1');
    const hourAgo = new Date(FAR - HOUR);
    await utimes(join(dir, YOUNG), hourAgo, hourAgo);
  }

  it('deletes an old untracked file and keeps a young one, every referenced file and the work area', async () => {
    // Prepare
    await strays();
    const before = await files();

    // Act
    const report = await removeOrphanFiles(store, '', { now: FAR, dryRun: false });

    // Assess
    const now = await files();
    expect(before.filter((f) => !now.includes(f))).toEqual([STRAY]);
    expect(report.kept.young).toBe(1);
    expect(report.kept.hidden).toBeGreaterThan(0); // the compact run's journal under _lake-compactor/
    const table = await loadTable(store, '');
    for (const s of table.metadata.snapshots) {
      const read = await readSnapshotFiles(store, table, { snapshotId: s.snapshotId });
      for (const f of read.dataFiles) expect(now).toContain(f.entry.file.key);
    }
  });

  it('deletes nothing in a dry run and lists the old untracked file', async () => {
    // Prepare
    await strays();
    const before = await files();

    // Act
    const report = await removeOrphanFiles(store, '', { now: FAR, dryRun: true });

    // Assess
    expect(await files()).toEqual(before);
    expect(report.candidates.map((c) => c.key)).toEqual([STRAY]);
  });

  it('refuses a grace period below 72 h unless the check is off', async () => {
    // Prepare
    await strays();
    const before = await files();

    // Act
    const refused = removeOrphanFiles(store, '', { now: FAR, dryRun: false, olderThanHours: 1 });
    await expect(refused).rejects.toBeInstanceOf(IcebergMaintenanceRefusedError);
    const unchanged = await files();
    const allowed = await removeOrphanFiles(store, '', {
      now: FAR,
      dryRun: true,
      olderThanHours: 0.5,
      graceCheck: false,
    });

    // Assess: the young file (an hour old) is an orphan under a half-hour grace period
    expect(unchanged).toEqual(before);
    expect(allowed.candidates.map((c) => c.key).sort()).toEqual([STRAY, YOUNG].sort());
  });

  it('spares an old file that a commit landing while it planned made part of the table', async () => {
    // Prepare: the stray is a real data file a slow writer wrote long ago; it commits it after the orphan plan
    await writeFile(join(dir, STRAY), generateIcebergEventsBatch(77, 9, '2024-03-01'));
    const path = new PathCatalog(store);
    let loads = 0;
    const racing: IcebergCatalog = {
      load: async (root) => {
        loads += 1;
        if (loads === 2) {
          const table = await path.load(root);
          const schema = schemaById(table.metadata);
          if (schema === undefined) throw new Error('no schema');
          await commitAppend(
            store,
            path,
            {
              tableLocation: root,
              addedFiles: [
                {
                  path: table.paths.path(STRAY),
                  partition: {
                    specId: 0,
                    values: [{ fieldId: 1000, value: dayStartMs('2024-03-01') / (24 * HOUR) }],
                  },
                  metrics: await readParquetMetrics(
                    store,
                    STRAY,
                    schema,
                    metricsConfig(table.metadata, schema),
                  ),
                },
              ],
            },
            { clock: { now: () => FAR } },
          );
        }
        return path.load(root);
      },
      commit: (base, text) => path.commit(base, text),
    };

    // Act
    const report = await removeOrphanFiles(store, '', { now: FAR, dryRun: false, catalog: racing });

    // Assess: planned as an orphan, spared at the re-check, still there and live
    expect(report.spared.map((s) => s.key)).toEqual([STRAY]);
    expect(report.removed.count).toBe(0);
    expect(await files()).toContain(STRAY);
    expect((await live()).keys).toContain(STRAY);
  });

  it('after expire_snapshots finds nothing of the table to delete but the strays', async () => {
    // Prepare
    await expireSnapshots(store, '', { now: FAR, dryRun: false });
    await strays();

    // Act
    const report = await removeOrphanFiles(store, '', { now: FAR, dryRun: true });

    // Assess
    expect(report.candidates.map((c) => c.key)).toEqual([STRAY]);
  });
});

describe('expire_snapshots on tables written by Spark', () => {
  for (const name of ['spark_v1_unpartitioned_small_files', 'spark_v2_position_deletes']) {
    it(`${name}: expires to the current snapshot without losing a live row`, async () => {
      // Prepare
      const copy = copyFixtureTable(name);
      try {
        const before = await loadTable(copy.store, name);
        const rowsBefore = await liveRows(db, copy, before, await readSnapshotFiles(copy.store, before));

        // Act
        const report = await expireSnapshots(copy.store, name, {
          now: FAR,
          dryRun: false,
          // spark_v2_position_deletes's files are named 000NN-<uuid>; no catalog manages this copy, as said here
          catalog: new PathCatalog(copy.store, pathCatalogOptions(name)),
        });

        // Assess
        const after = await loadTable(copy.store, name);
        const files = await readSnapshotFiles(copy.store, after);
        expect(after.metadata.snapshots.map((s) => s.snapshotId)).toEqual([
          before.metadata.currentSnapshotId,
        ]);
        expect(await liveRows(db, copy, after, files)).toEqual(rowsBefore);
        for (const f of [...files.dataFiles, ...files.deleteFiles])
          expect(await copy.store.head(f.entry.file.key)).toBeDefined();
        expect(report.expiredSnapshots).toHaveLength(before.metadata.snapshots.length - 1);
      } finally {
        copy.remove();
      }
    });
  }
});
