// `lake-compactor vacuum <folder> --format delta` on a Delta table written by a streaming-style appender and
// compacted by `compact --format delta` (its log holds the inputs as tombstones), with a clock far past every
// retention: the dry run lists the expired tombstones and the old untracked file in the Parquet vacuum's style and
// changes nothing; the real run deletes exactly those and keeps every live row; --retention-hours overrides the
// table's retention (and keeps the 168 h gate); a refusal or a folder without a log exits 1 with nothing deleted;
// and `tier --format delta` says tiering is not supported for Delta tables yet.
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { run } from '../../functions/cli/index.js';
import type { VacuumCliReport } from '../../functions/cli/vacuum.js';
import { readDeltaSnapshot } from '../../functions/core/formats/delta/log.js';
import { appendDeltaEvents, createDeltaEventsTable } from '../../functions/tools/sample-delta.js';
import { captureIo } from '../support/cli-io.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';
import { folderContentSnapshot } from '../support/folder-snapshot.js';

const DAYS = ['2024-03-01', '2024-03-02'];
const BATCHES = 6;
const WRITTEN = Date.UTC(2024, 2, 3);
/** The vacuum's clock: far past every tombstone and every file's modification time. */
const FAR = Date.UTC(2100, 0, 1);
const STRAY = 'date=2024-03-01/part-99999-stray.c000.snappy.parquet';

let db: DuckDb;
let dir: string;
let store: LocalObjectStore;
let tombstoned: string[];

async function liveRows(): Promise<number> {
  const snapshot = await readDeltaSnapshot(store, '');
  const files = snapshot.files.map((f) => sqlString(join(dir, f.key ?? f.path))).join(', ');
  return Number(await db.scalar(`SELECT count(*) FROM read_parquet([${files}])`));
}

async function tableFiles(): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name).slice(dir.length + 1))
    .filter((k) => !k.startsWith('_lake-compactor/'))
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
  dir = await mkdtemp(join(tmpdir(), 'lc-delta-vacuum-cli-'));
  store = new LocalObjectStore(dir);
  await createDeltaEventsTable(store, '', { now: WRITTEN });
  let seed = 1;
  for (const day of DAYS) {
    for (let b = 0; b < BATCHES; b += 1) {
      await appendDeltaEvents(store, '', { day, rows: 20 + b, seed: seed++, now: WRITTEN });
    }
  }
  const before = (await readDeltaSnapshot(store, '')).files.map((f) => f.key as string);
  const compacted = captureIo({ now: WRITTEN });
  expect(await run(['compact', dir, '--format', 'delta'], compacted), compacted.stderr.join('\n')).toBe(0);
  const after = new Set((await readDeltaSnapshot(store, '')).files.map((f) => f.key as string));
  tombstoned = before.filter((k) => !after.has(k)).sort();
  expect(tombstoned).toHaveLength(DAYS.length * BATCHES);
  await writeFile(join(dir, STRAY), 'PAR1 never committed PAR1');
});

describe('lake-compactor vacuum --format delta', () => {
  it('a dry run lists the expired tombstones and the old untracked file with reasons, in the vacuum’s style, and changes nothing', async () => {
    // Prepare
    const before = await folderContentSnapshot(dir);
    const io = captureIo({ now: FAR });

    // Act
    const code = await run(['vacuum', dir, '--format', 'delta', '--dry-run'], io);

    // Assess
    expect(code, io.stderr.join('\n')).toBe(0);
    expect(await folderContentSnapshot(dir)).toEqual(before);
    const out = io.stdout.join('\n');
    expect(io.stdout[0]).toMatch(
      /^vacuum .* \(Delta table\): DRY RUN, nothing will be deleted; Delta VACUUM retention the table's delta\.deletedFileRetentionDuration, work area retention 168 h/,
    );
    for (const key of [...tombstoned, STRAY]) expect(out).toContain(key);
    expect(out).toMatch(
      new RegExp(
        `would delete: \\d+ objects, .* — .*delta-tombstone ${tombstoned.length} \\(.*\\), delta-untracked 1 \\(`,
      ),
    );
    expect(out).toMatch(
      /Delta table at version \d+: retention 168 h \(from the default\); kept \d+ — .*live \d+/,
    );
    expect(out).not.toMatch(/left alone|foreign/);
    // The compact run's journal does not claim the inputs Delta VACUUM deletes in the same run are kept.
    expect(out).not.toMatch(/removed from the Delta log/);
    expect(io.stdout.at(-1)).toBe(
      '\ndry run: nothing was changed; run again without --dry-run to delete the objects above',
    );
  });

  it('a real run deletes exactly the expired tombstones and the old untracked file, and keeps every live row', async () => {
    // Prepare
    const rows = await liveRows();
    const before = await tableFiles();
    const io = captureIo({ now: FAR });

    // Act
    const code = await run(['vacuum', dir, '--format', 'delta', '--yes', '--json'], io);

    // Assess
    expect(code, io.stderr.join('\n')).toBe(0);
    const report = JSON.parse(io.stdout.join('\n')) as VacuumCliReport;
    const after = await tableFiles();
    expect(before.filter((k) => !after.includes(k))).toEqual([...tombstoned, STRAY].sort());
    expect(report.removed['delta-tombstone'].count).toBe(tombstoned.length);
    expect(report.removed['delta-untracked'].count).toBe(1);
    expect(report.failed).toEqual([]);
    expect(await liveRows()).toBe(rows);
  });

  it('--retention-hours overrides the table’s retention: inside it nothing of the table goes', async () => {
    // Prepare: 200 years, longer than any of these files has existed
    const before = await folderContentSnapshot(dir);
    const hours = String(200 * 365 * 24);
    const io = captureIo({ now: FAR });

    // Act
    const code = await run(
      ['vacuum', dir, '--format', 'delta', '--retention-hours', hours, '--yes', '--json'],
      io,
    );

    // Assess
    expect(code, io.stderr.join('\n')).toBe(0);
    const report = JSON.parse(io.stdout.join('\n')) as VacuumCliReport;
    expect(report.deltaTables?.[0]?.report).toMatchObject({
      retentionHours: Number(hours),
      retentionSource: 'option',
    });
    expect(report.removed['delta-tombstone'].count + report.removed['delta-untracked'].count).toBe(0);
    expect((await folderContentSnapshot(dir)).filter((l) => !l.startsWith('_lake-compactor/'))).toEqual(
      before.filter((l) => !l.startsWith('_lake-compactor/')),
    );
  });

  it('keeps the 168 h gate: --retention-hours 24 exits 2 before listing, unless --allow-retention-below-minimum', async () => {
    // Prepare
    const before = await folderContentSnapshot(dir);
    const refused = captureIo({ now: FAR });
    const allowed = captureIo({ now: FAR });

    // Act
    const refusedCode = await run(
      ['vacuum', dir, '--format', 'delta', '--retention-hours', '24', '--yes'],
      refused,
    );
    const allowedCode = await run(
      [
        'vacuum',
        dir,
        '--format',
        'delta',
        '--retention-hours',
        '24',
        '--allow-retention-below-minimum',
        '--dry-run',
      ],
      allowed,
    );

    // Assess
    expect(refusedCode).toBe(2);
    expect(refused.stderr.join('\n')).toMatch(/--retention-hours 24 is below the minimum of 168 h/);
    expect(refused.stdout).toEqual([]);
    expect(allowedCode, allowed.stderr.join('\n')).toBe(0);
    expect(allowed.stdout.join('\n')).toMatch(/retention 24 h \(requested\)/);
    expect(await folderContentSnapshot(dir)).toEqual(before);
  });

  it('exits 1 with Delta VACUUM’s refusal when the table’s own retention is below the gate, and deletes nothing', async () => {
    // Prepare
    const short = await mkdtemp(join(tmpdir(), 'lc-delta-short-'));
    const shortStore = new LocalObjectStore(short);
    await createDeltaEventsTable(shortStore, '', {
      now: WRITTEN,
      configuration: { 'delta.deletedFileRetentionDuration': 'interval 1 day' },
    });
    await appendDeltaEvents(shortStore, '', { day: '2024-03-01', rows: 5, seed: 1, now: WRITTEN });
    const before = await folderContentSnapshot(short);
    const io = captureIo({ now: FAR });

    // Act
    const code = await run(['vacuum', short, '--format', 'delta', '--yes'], io);

    // Assess
    try {
      expect(code).toBe(1);
      expect(io.stderr).toHaveLength(1);
      expect(io.stderr[0]).toMatch(
        /^error: VACUUM of Delta table .* refused: the retention of 24 h \(from delta\.deletedFileRetentionDuration "interval 1 day"\) is below the minimum of 168 h.*Nothing was deleted\.$/,
      );
      expect(await folderContentSnapshot(short)).toEqual(before);
    } finally {
      await rm(short, { recursive: true, force: true });
    }
  });

  it('exits 1 naming the missing log when the folder is not a Delta table, and deletes nothing', async () => {
    // Prepare
    const plain = await mkdtemp(join(tmpdir(), 'lc-not-delta-'));
    await writeFile(join(plain, 'part-0.parquet'), 'PAR1');
    const io = captureIo({ now: FAR });

    // Act
    const code = await run(['vacuum', plain, '--format', 'delta', '--yes'], io);

    // Assess
    try {
      expect(code).toBe(1);
      expect(io.stderr[0]).toMatch(/^error: Delta log of .* cannot be read/);
      expect(await readdir(plain)).toEqual(['part-0.parquet']);
    } finally {
      await rm(plain, { recursive: true, force: true });
    }
  });
});

describe('lake-compactor tier --format delta', () => {
  it('refuses with exit 2, saying tiering is not supported for Delta tables yet, before touching any store', async () => {
    // Prepare
    const before = await folderContentSnapshot(dir);
    const io = captureIo({ now: FAR });

    // Act
    const code = await run(['tier', 's3://lake/events', '--format', 'delta', '--yes'], io);

    // Assess
    expect(code).toBe(2);
    expect(io.stderr).toEqual([
      'error: tier --format delta: tiering is not supported for Delta tables yet; use S3 lifecycle rules on the table prefix. Nothing was listed or changed',
    ]);
    expect(await folderContentSnapshot(dir)).toEqual(before);
  });
});
