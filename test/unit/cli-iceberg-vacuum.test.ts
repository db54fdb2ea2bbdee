// `lake-compactor vacuum <folder> --format iceberg` on a path-based Iceberg table written by a streaming-style
// appender and compacted by `compact --format iceberg`, with a clock far past every snapshot: the dry run lists the
// files of expired snapshots and the old stray in the vacuum's style and changes nothing; the real run deletes exactly
// those and keeps every live row; --retain-last keeps snapshots; the Iceberg options are refused without
// --format iceberg and the orphan grace period below 72 h without the override; `tier --format iceberg` is refused.
import { cp, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { run } from '../../functions/cli/index.js';
import type { VacuumCliReport } from '../../functions/cli/vacuum.js';
import { loadTable } from '../../functions/core/formats/iceberg/catalog.js';
import { readSnapshotFiles } from '../../functions/core/formats/iceberg/live-files.js';
import { appendIcebergEvents, createIcebergEventsTable } from '../../functions/tools/sample-iceberg.js';
import { captureIo } from '../support/cli-io.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';
import { folderContentSnapshot } from '../support/folder-snapshot.js';

const DAYS = ['2024-03-01', '2024-03-02'];
const BATCHES = 6;
const WRITTEN = Date.UTC(2024, 2, 3);
const FAR = Date.UTC(2100, 0, 1);
const STRAY = 'data/event_timestamp_day=2024-03-01/00000-9-stray-00001.parquet';

let db: DuckDb;
let template: string;
let dir: string;
let store: LocalObjectStore;

async function liveRows(): Promise<number> {
  const table = await loadTable(store, '');
  const keys = (await readSnapshotFiles(store, table)).dataFiles.map((f) =>
    sqlString(join(dir, f.entry.file.key)),
  );
  return Number(await db.scalar(`SELECT count(*) FROM read_parquet([${keys.join(', ')}])`));
}

async function tableFiles(): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name).slice(dir.length + 1))
    .filter((k) => !k.startsWith('_lake-compactor/'))
    .sort();
}

/** What only the non-current snapshots reach (manifest lists, manifests, data files), by the snapshot reader. */
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
  template = await mkdtemp(join(tmpdir(), 'lc-iceberg-vacuum-cli-template-'));
  const writer = new LocalObjectStore(template);
  await createIcebergEventsTable(writer, '', { now: WRITTEN });
  let seed = 1;
  for (const day of DAYS)
    for (let b = 0; b < BATCHES; b += 1)
      await appendIcebergEvents(writer, '', { day, rows: 20 + b, seed: seed++, now: WRITTEN });
  const compacted = captureIo({ now: WRITTEN });
  expect(
    await run(['compact', template, '--format', 'iceberg'], compacted),
    compacted.stderr.join('\n'),
  ).toBe(0);
});

afterAll(async () => {
  db.close();
  for (const d of [dir, template]) if (d !== undefined) await rm(d, { recursive: true, force: true });
});

beforeEach(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  dir = await mkdtemp(join(tmpdir(), 'lc-iceberg-vacuum-cli-'));
  await cp(template, dir, { recursive: true });
  store = new LocalObjectStore(dir);
  await writeFile(join(dir, STRAY), 'PAR1 never committed PAR1');
});

describe('lake-compactor vacuum --format iceberg', () => {
  it('a dry run lists the files of expired snapshots and the old stray with reasons, and changes nothing', async () => {
    // Prepare
    const expected = await onlyOlderSnapshots();
    const before = await folderContentSnapshot(dir);
    const io = captureIo({ now: FAR });

    // Act
    const code = await run(['vacuum', dir, '--format', 'iceberg', '--dry-run'], io);

    // Assess
    expect(code, io.stderr.join('\n')).toBe(0);
    expect(await folderContentSnapshot(dir)).toEqual(before);
    const out = io.stdout.join('\n');
    expect(out).toMatch(/\(Iceberg table\): DRY RUN, nothing will be deleted/);
    expect(out).toMatch(/Iceberg table: expire_snapshots would expire 13 of 14 snapshots/);
    expect(out).toMatch(/iceberg-expired/);
    expect(out).toMatch(/iceberg-orphan/);
    expect(out).toContain(STRAY);
    expect(out).toMatch(/dry run: nothing was changed/);
    const json = captureIo({ now: FAR });
    await run(['vacuum', dir, '--format', 'iceberg', '--dry-run', '--json'], json);
    const report = JSON.parse(json.stdout.join('\n')) as VacuumCliReport;
    const listed = report.candidates.filter((c) => c.kind === 'iceberg-expired').map((c) => c.key);
    expect(listed.sort()).toEqual(expected);
    expect(report.candidates.filter((c) => c.kind === 'iceberg-orphan').map((c) => c.key)).toEqual([STRAY]);
  });

  it('a real run deletes exactly those files and keeps every live row', async () => {
    // Prepare
    const expected = await onlyOlderSnapshots();
    const before = await tableFiles();
    const rows = await liveRows();
    const io = captureIo({ now: FAR });

    // Act
    const code = await run(['vacuum', dir, '--format', 'iceberg', '--yes'], io);

    // Assess: the new metadata file is the only file added
    expect(code, io.stderr.join('\n')).toBe(0);
    const after = await tableFiles();
    expect(before.filter((f) => !after.includes(f))).toEqual([...expected, STRAY].sort());
    expect(await liveRows()).toBe(rows);
    expect(after.filter((f) => !before.includes(f))).toEqual([(await loadTable(store, '')).metadataKey]);
  });

  it('--retain-last keeps the newest snapshots of main', async () => {
    // Prepare
    const io = captureIo({ now: FAR });

    // Act
    const code = await run(['vacuum', dir, '--format', 'iceberg', '--retain-last', '3', '--yes'], io);

    // Assess
    expect(code, io.stderr.join('\n')).toBe(0);
    expect((await loadTable(store, '')).metadata.snapshots).toHaveLength(3);
  });

  it('refuses the Iceberg options without --format iceberg, and an orphan grace period below 72 h, with exit 2 and nothing deleted', async () => {
    // Prepare
    const before = await folderContentSnapshot(dir);
    const noFormat = captureIo({ now: FAR });
    const short = captureIo({ now: FAR });

    // Act
    const a = await run(['vacuum', dir, '--older-than-hours', '1', '--yes'], noFormat);
    const b = await run(
      ['vacuum', dir, '--format', 'iceberg', '--orphan-older-than-hours', '1', '--yes'],
      short,
    );

    // Assess
    expect(a).toBe(2);
    expect(noFormat.stderr.join('\n')).toMatch(/--older-than-hours apply to Iceberg tables only/);
    expect(b).toBe(2);
    expect(short.stderr.join('\n')).toMatch(/--orphan-older-than-hours 1 is below the minimum of 72 h/);
    expect(await folderContentSnapshot(dir)).toEqual(before);
  });
});

describe('lake-compactor tier --format iceberg', () => {
  it('refuses with exit 2, saying tiering is not supported for Iceberg tables yet', async () => {
    // Prepare
    const io = captureIo({ now: FAR });

    // Act
    const code = await run(['tier', 's3://lake/events', '--format', 'iceberg', '--yes'], io);

    // Assess
    expect(code).toBe(2);
    expect(io.stderr.join('\n')).toContain(
      "error: tier --format iceberg: tiering is not supported for Iceberg tables yet; use S3 lifecycle rules on the table's data/ prefix. Nothing was listed or changed",
    );
  });
});
