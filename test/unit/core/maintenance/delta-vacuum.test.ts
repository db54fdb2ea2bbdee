// The scheduled vacuum over a table configured with format "delta": a Delta table written by a streaming-style
// appender and compacted by `lake-compactor compact --format delta` (so its log holds tombstones), vacuumed with a
// clock far past every retention. Delta VACUUM deletes exactly the expired tombstones' files and an old untracked
// file, keeps every live file (the live row count, read back by DuckDB, is unchanged), the log, a young untracked
// file and our own work area; the work-root steps still judge the compact run's journal; a dry run deletes nothing;
// the table is never reported as foreign; and a pass split by its budget vacuums the table once.
import { mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../../../functions/adapters/local-object-store.js';
import { MemoryJournal } from '../../../../functions/adapters/memory-journal.js';
import { RoutedJournal } from '../../../../functions/adapters/routed-journal.js';
import { StoreJournal } from '../../../../functions/adapters/store-journal.js';
import { runCompact } from '../../../../functions/cli/compact.js';
import { readDeltaSnapshot } from '../../../../functions/core/formats/delta/log.js';
import {
  parseVacuumRequest,
  type VacuumDeps,
  type VacuumReport,
  vacuum,
} from '../../../../functions/core/maintenance/vacuum.js';
import { parseTableConfigs } from '../../../../functions/core/table-config.js';
import { DEFAULT_WORK_ROOT } from '../../../../functions/core/workflow/layout.js';
import { ManualClock } from '../../../../functions/ports/clock.js';
import { appendDeltaEvents, createDeltaEventsTable } from '../../../../functions/tools/sample-delta.js';
import { captureIo } from '../../../support/cli-io.js';
import { type DuckDb, openDuckDb, sqlString } from '../../../support/duckdb.js';
import { folderContentSnapshot } from '../../../support/folder-snapshot.js';

const HOUR = 3_600_000;
const DAYS = ['2024-03-01', '2024-03-02'];
const BATCHES = 6;
/** When the table was written and compacted: its tombstones are stamped with this. */
const WRITTEN = Date.UTC(2024, 2, 3);
/** The vacuum's clock: far past every tombstone and every file's modification time. */
const FAR = Date.UTC(2100, 0, 1);
const TABLES = parseTableConfigs([
  {
    name: 'events',
    bucket: 'lake',
    prefix: '',
    partitionColumns: ['date'],
    format: 'delta',
    deltaLogStore: { type: 's3-conditional' },
  },
]);

let db: DuckDb;
let dir: string;
let store: LocalObjectStore;
/** The files OPTIMIZE removed from the log (each one an input of the compaction). */
let tombstoned: string[];
/** A file no version references, written long before the clock. */
const STRAY = 'date=2024-03-01/part-99999-stray.c000.snappy.parquet';
/** A file no version references, written an hour before the clock (a writer about to commit it). */
const YOUNG = 'date=2024-03-02/part-99998-young.c000.snappy.parquet';

function deps(clock = new ManualClock(FAR)): VacuumDeps {
  const journal = new RoutedJournal(
    new StoreJournal(store, { workRoot: DEFAULT_WORK_ROOT }),
    new MemoryJournal(),
  );
  return {
    tables: TABLES,
    workRoot: DEFAULT_WORK_ROOT,
    storeFor: () => store,
    journalFor: () => journal,
    clock,
  };
}

/** The live files of the latest version and the number of rows they hold (read by DuckDB). */
async function live(): Promise<{ keys: string[]; rows: number }> {
  const snapshot = await readDeltaSnapshot(store, '');
  const keys = snapshot.files.map((f) => f.key ?? f.path).sort();
  const files = keys.map((k) => sqlString(join(dir, k))).join(', ');
  const rows = Number(await db.scalar(`SELECT count(*) FROM read_parquet([${files}])`));
  return { keys, rows };
}

/** Every file under the folder, relative (the work area included). */
async function files(): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name).slice(dir.length + 1))
    .sort();
}

beforeAll(async () => {
  db = await openDuckDb();
});

afterAll(async () => {
  db.close();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

beforeEach(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  dir = await mkdtemp(join(tmpdir(), 'lc-delta-vacuum-'));
  store = new LocalObjectStore(dir);
  await createDeltaEventsTable(store, '', { now: WRITTEN });
  let seed = 1;
  for (const day of DAYS) {
    for (let b = 0; b < BATCHES; b += 1) {
      await appendDeltaEvents(store, '', { day, rows: 30 + b, seed: seed++, now: WRITTEN });
    }
  }
  const before = (await readDeltaSnapshot(store, '')).files.map((f) => f.key as string);
  await runCompact(dir, { format: 'delta', table: 'events' }, captureIo({ now: WRITTEN }));
  const after = new Set((await readDeltaSnapshot(store, '')).files.map((f) => f.key as string));
  tombstoned = before.filter((k) => !after.has(k)).sort();
  await writeFile(join(dir, STRAY), 'PAR1 never committed PAR1');
  await writeFile(join(dir, YOUNG), 'PAR1 about to be committed PAR1');
  const hourAgo = new Date(FAR - HOUR);
  await utimes(join(dir, YOUNG), hourAgo, hourAgo);
});

describe('scheduled vacuum of a table configured with format "delta"', () => {
  it('deletes exactly the expired tombstones and the old untracked file, and keeps every live row, the log and the young file', async () => {
    // Prepare
    expect(tombstoned).toHaveLength(DAYS.length * BATCHES);
    const liveBefore = await live();
    const filesBefore = await files();
    const log = (await folderContentSnapshot(dir)).filter((l) => l.startsWith('_delta_log/'));

    // Act
    const report = await vacuum(deps(), parseVacuumRequest({ dryRun: false }));

    // Assess: what went is the tombstoned inputs and the stray, nothing else of the table
    const filesAfter = await files();
    const deleted = filesBefore.filter((f) => !filesAfter.includes(f));
    const tableDeleted = deleted.filter((f) => !f.startsWith(DEFAULT_WORK_ROOT));
    expect(tableDeleted).toEqual([...tombstoned, STRAY].sort());
    expect(report.removed['delta-tombstone'].count).toBe(tombstoned.length);
    expect(report.removed['delta-untracked'].count).toBe(1);
    expect(filesAfter).toContain(YOUNG);
    const liveAfter = await live();
    expect(liveAfter).toEqual(liveBefore);
    expect((await folderContentSnapshot(dir)).filter((l) => l.startsWith('_delta_log/'))).toEqual(log);
    // The table is vacuumed as what it is: no foreign-table note, the table's report with the default retention.
    expect(report.notes.join('\n')).not.toMatch(/left alone|foreign/);
    expect(report.deltaTables).toEqual([
      expect.objectContaining({
        table: 'events',
        report: expect.objectContaining({ retentionHours: 168, retentionSource: 'default' }),
      }),
    ]);
    expect(report.failed).toEqual([]);
  });

  it('still judges the work root: the compact run’s settled journal entries go, and Delta VACUUM never touches them', async () => {
    // Prepare
    const journalBefore = (await files()).filter((f) => f.startsWith(`${DEFAULT_WORK_ROOT}journal/`));

    // Act
    const report = await vacuum(deps(), parseVacuumRequest({ dryRun: true }));

    // Assess
    expect(journalBefore.length).toBeGreaterThan(0);
    const journal = report.candidates.filter((c) => c.kind === 'journal').map((c) => c.key);
    expect(journal.length).toBe(report.removed.journal.count);
    expect(journal.length).toBeGreaterThan(0);
    expect(journal.every((k) => journalBefore.includes(k))).toBe(true);
    const delta = report.candidates.filter((c) => c.kind.startsWith('delta-'));
    expect(delta.some((c) => c.key.startsWith(DEFAULT_WORK_ROOT))).toBe(false);
  });

  it('in a dry run lists the same candidates with reasons and deletes nothing', async () => {
    // Prepare
    const before = await folderContentSnapshot(dir);

    // Act
    const report = await vacuum(deps(), parseVacuumRequest({ dryRun: true }));

    // Assess
    expect(await folderContentSnapshot(dir)).toEqual(before);
    const delta = report.candidates.filter((c) => c.kind.startsWith('delta-'));
    expect(delta.map((c) => c.key).sort()).toEqual([...tombstoned, STRAY].sort());
    expect(delta.every((c) => c.table === 'events' && c.reason.length > 0)).toBe(true);
    expect(report.totalRemoved.count).toBe(report.candidates.length);
  });

  it('uses the operator’s deltaRetentionHours over the table’s own, and keeps tombstones inside it', async () => {
    // Prepare: 200 years is longer than any of these files has existed
    const before = await folderContentSnapshot(dir);
    const hours = 200 * 365 * 24;

    // Act
    const report = await vacuum(deps(), parseVacuumRequest({ dryRun: false, deltaRetentionHours: hours }));

    // Assess
    expect(report.deltaTables?.[0]?.report).toMatchObject({
      retentionHours: hours,
      retentionSource: 'option',
    });
    expect(report.removed['delta-tombstone'].count + report.removed['delta-untracked'].count).toBe(0);
    expect((await folderContentSnapshot(dir)).filter((l) => !l.startsWith(DEFAULT_WORK_ROOT))).toEqual(
      before.filter((l) => !l.startsWith(DEFAULT_WORK_ROOT)),
    );
  });

  it('vacuums the table once when a pass is split by its budget, deleting what one call deletes', async () => {
    // Prepare
    const reports: VacuumReport[] = [];

    // Act
    let cursor: string | undefined;
    do {
      const report = await vacuum(
        deps(),
        parseVacuumRequest({ dryRun: false, maxObjects: 1, ...(cursor ? { cursor } : {}) }),
      );
      reports.push(report);
      cursor = report.cursor;
    } while (cursor !== undefined);

    // Assess
    expect(reports.length).toBeGreaterThan(1);
    expect(reports.flatMap((r) => r.deltaTables ?? [])).toHaveLength(1);
    const deleted = reports.flatMap((r) => r.candidates.filter((c) => c.kind.startsWith('delta-')));
    expect(deleted.map((c) => c.key).sort()).toEqual([...tombstoned, STRAY].sort());
    expect(await files()).toContain(YOUNG);
  });
});
