// The scheduled vacuum over a table configured with format "iceberg": a path-based Iceberg table written by a
// streaming-style appender and compacted by `lake-compactor compact --format iceberg` (so older snapshots hold the
// replaced inputs), vacuumed with a clock far past every snapshot. expire_snapshots removes every snapshot but the
// current one and deletes exactly what only they referenced (computed here from the metadata before, through the
// snapshot reader), remove_orphan_files deletes an old untracked file and keeps a young one; the live rows (DuckDB)
// are unchanged; a dry run deletes nothing; a refused table is that table's error, not the vacuum's; the table is
// never reported as foreign; and tiering skips it as not supported, not as foreign.
import { cp, mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../../../functions/adapters/local-object-store.js';
import { MemoryJournal } from '../../../../functions/adapters/memory-journal.js';
import { RoutedJournal } from '../../../../functions/adapters/routed-journal.js';
import { StoreJournal } from '../../../../functions/adapters/store-journal.js';
import { runCompact } from '../../../../functions/cli/compact.js';
import {
  loadTable,
  PathCatalog,
  readMetadataText,
} from '../../../../functions/core/formats/iceberg/catalog.js';
import {
  parseJsonKeepingLongs,
  stringifyJsonKeepingLongs,
} from '../../../../functions/core/formats/iceberg/json.js';
import { readSnapshotFiles } from '../../../../functions/core/formats/iceberg/live-files.js';
import { parseTieringRequest, tier } from '../../../../functions/core/maintenance/tiering.js';
import {
  parseVacuumRequest,
  type VacuumDeps,
  vacuum,
} from '../../../../functions/core/maintenance/vacuum.js';
import { parseTableConfigs } from '../../../../functions/core/table-config.js';
import { DEFAULT_WORK_ROOT } from '../../../../functions/core/workflow/layout.js';
import { ManualClock } from '../../../../functions/ports/clock.js';
import { appendIcebergEvents, createIcebergEventsTable } from '../../../../functions/tools/sample-iceberg.js';
import { captureIo } from '../../../support/cli-io.js';
import { type DuckDb, openDuckDb, sqlString } from '../../../support/duckdb.js';

const HOUR = 3_600_000;
const DAYS = ['2024-03-01', '2024-03-02'];
const BATCHES = 6;
const WRITTEN = Date.UTC(2024, 2, 3);
const FAR = Date.UTC(2100, 0, 1);
const TABLES = parseTableConfigs([{ name: 'events', bucket: 'lake', prefix: '', format: 'iceberg' }]);
const STRAY = 'data/event_timestamp_day=2024-03-01/00000-9-stray-00001.parquet';
const YOUNG = 'data/event_timestamp_day=2024-03-02/00000-9-young-00001.parquet';

let db: DuckDb;
let template: string;
let dir: string;
let store: LocalObjectStore;

function deps(tables = TABLES): VacuumDeps {
  const journal = new RoutedJournal(
    new StoreJournal(store, { workRoot: DEFAULT_WORK_ROOT }),
    new MemoryJournal(),
  );
  return {
    tables,
    workRoot: DEFAULT_WORK_ROOT,
    storeFor: () => store,
    journalFor: () => journal,
    clock: new ManualClock(FAR),
  };
}

async function files(): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name).slice(dir.length + 1))
    .sort();
}

/** The current snapshot's live data files and their row count (DuckDB). */
async function live(): Promise<{ keys: string[]; rows: number }> {
  const table = await loadTable(store, '');
  const keys = (await readSnapshotFiles(store, table)).dataFiles.map((f) => f.entry.file.key).sort();
  const list = keys.map((k) => sqlString(join(dir, k))).join(', ');
  return { keys, rows: Number(await db.scalar(`SELECT count(*) FROM read_parquet([${list}])`)) };
}

/** Files only non-current snapshots reach (manifest lists, manifests, data files), from the snapshot reader. */
async function onlyOlderSnapshots(): Promise<string[]> {
  const table = await loadTable(store, '');
  const current = await readSnapshotFiles(store, table);
  const keep = new Set([
    ...current.manifests.map((m) => m.key),
    ...current.dataFiles.map((f) => f.entry.file.key),
  ]);
  const out = new Set<string>();
  for (const s of table.metadata.snapshots) {
    if (s.snapshotId === table.metadata.currentSnapshotId) continue;
    const read = await readSnapshotFiles(store, table, { snapshotId: s.snapshotId });
    out.add(table.paths.key(s.manifestList));
    for (const k of [...read.manifests.map((m) => m.key), ...read.dataFiles.map((f) => f.entry.file.key)])
      if (!keep.has(k)) out.add(k);
  }
  return [...out].sort();
}

beforeAll(async () => {
  db = await openDuckDb();
  template = await mkdtemp(join(tmpdir(), 'lc-iceberg-vacuum-template-'));
  const writer = new LocalObjectStore(template);
  await createIcebergEventsTable(writer, '', { now: WRITTEN });
  let seed = 1;
  for (const day of DAYS)
    for (let b = 0; b < BATCHES; b += 1)
      await appendIcebergEvents(writer, '', { day, rows: 20 + b, seed: seed++, now: WRITTEN });
  await runCompact(template, { format: 'iceberg', table: 'events' }, captureIo({ now: WRITTEN }));
});

afterAll(async () => {
  db.close();
  for (const d of [dir, template]) if (d !== undefined) await rm(d, { recursive: true, force: true });
});

beforeEach(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  dir = await mkdtemp(join(tmpdir(), 'lc-iceberg-vacuum-'));
  await cp(template, dir, { recursive: true });
  store = new LocalObjectStore(dir);
  await writeFile(join(dir, STRAY), 'PAR1 never committed PAR1');
  await writeFile(join(dir, YOUNG), 'PAR1 about to be committed PAR1');
  const hourAgo = new Date(FAR - HOUR);
  await utimes(join(dir, YOUNG), hourAgo, hourAgo);
});

describe('scheduled vacuum of a table configured with format "iceberg"', () => {
  it('expires the old snapshots, deletes exactly what only they referenced and the old stray, and keeps every live row', async () => {
    // Prepare
    const expected = await onlyOlderSnapshots();
    expect(expected.filter((k) => k.startsWith('data/'))).toHaveLength(DAYS.length * BATCHES);
    const before = await files();
    const liveBefore = await live();

    // Act
    const report = await vacuum(deps(), parseVacuumRequest({ dryRun: false }));

    // Assess
    const after = await files();
    const tableDeleted = before.filter((f) => !after.includes(f) && !f.startsWith(DEFAULT_WORK_ROOT));
    expect(tableDeleted).toEqual([...expected, STRAY].sort());
    expect(report.removed['iceberg-expired'].count).toBe(expected.length);
    expect(report.removed['iceberg-orphan'].count).toBe(1);
    expect(after).toContain(YOUNG);
    const liveAfter = await live();
    expect(liveAfter).toEqual(liveBefore);
    expect((await loadTable(store, '')).metadata.snapshots).toHaveLength(1);
    expect(report.notes.join('\n')).not.toMatch(/left alone|foreign/);
    expect(report.icebergTables).toEqual([
      expect.objectContaining({
        table: 'events',
        report: expect.objectContaining({
          expire: expect.objectContaining({ olderThanSource: 'default', retainLast: 1 }),
          orphans: expect.objectContaining({ olderThanHours: 72 }),
        }),
      }),
    ]);
    expect(report.failed).toEqual([]);
  });

  it('in a dry run lists the same candidates with reasons and deletes nothing', async () => {
    // Prepare
    const expected = await onlyOlderSnapshots();
    const before = await files();

    // Act
    const report = await vacuum(deps(), parseVacuumRequest({ dryRun: true }));

    // Assess
    expect(await files()).toEqual(before);
    const expired = report.candidates.filter((c) => c.kind === 'iceberg-expired').map((c) => c.key);
    const orphans = report.candidates.filter((c) => c.kind === 'iceberg-orphan').map((c) => c.key);
    expect(expired.sort()).toEqual(expected);
    expect(orphans).toEqual([STRAY]);
    expect(report.candidates.every((c) => c.reason.length > 0)).toBe(true);
  });

  it('reports a refused table as that table’s error and deletes nothing of it', async () => {
    // Prepare: gc.enabled=false forbids every engine to delete the table's files
    const base = await loadTable(store, '');
    const raw = parseJsonKeepingLongs(await readMetadataText(store, base.metadataKey)) as {
      properties: Record<string, string>;
    };
    raw.properties['gc.enabled'] = 'false';
    const edited = stringifyJsonKeepingLongs(raw);
    expect((await new PathCatalog(store).commit(base, edited)).outcome).toBe('committed');
    const before = await files();

    // Act
    const report = await vacuum(deps(), parseVacuumRequest({ dryRun: false }));

    // Assess
    expect(before.filter((f) => !f.startsWith(DEFAULT_WORK_ROOT))).toEqual(
      (await files()).filter((f) => !f.startsWith(DEFAULT_WORK_ROOT)),
    );
    expect(report.icebergTables?.[0]?.error?.name).toBe('IcebergMaintenanceRefusedError');
    expect(report.notes.join('\n')).toMatch(
      /^events: Iceberg expire_snapshots and remove_orphan_files not run/m,
    );
  });

  it('refuses an orphan grace period below 72 h without allowRetentionBelowMinimum', () => {
    // Act
    const refused = () => parseVacuumRequest({ icebergOrphanGraceHours: 24 });
    const allowed = parseVacuumRequest({ icebergOrphanGraceHours: 24, allowRetentionBelowMinimum: true });

    // Assess
    expect(refused).toThrow(/icebergOrphanGraceHours 24 is below the minimum of 72 h/);
    expect(allowed.icebergOrphanGraceHours).toBe(24);
  });
});

describe('scheduled tiering of a table configured with format "iceberg"', () => {
  it('skips it as not supported, never as a foreign table, and moves nothing', async () => {
    // Prepare
    const tables = parseTableConfigs([
      {
        name: 'events',
        bucket: 'lake',
        prefix: '',
        format: 'iceberg',
        partitionColumns: ['event_timestamp_day'],
        dateColumn: 'event_timestamp_day',
        dateFormat: 'yyyy-MM-dd',
      },
    ]);
    const before = await files();

    // Act
    const report = await tier(
      { tables, storeFor: () => store, clock: new ManualClock(FAR) },
      parseTieringRequest({ dryRun: false }),
    );

    // Assess
    expect(report.skippedTables).toEqual([
      {
        table: 'events',
        reason:
          "tiering is not supported for Iceberg tables yet; use S3 lifecycle rules on the table's data/ prefix",
      },
    ]);
    expect(report.notes).toBeUndefined();
    expect(await files()).toEqual(before);
  });
});
