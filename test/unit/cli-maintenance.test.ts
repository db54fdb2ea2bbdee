// `lake-compactor vacuum` and `tier` on a compacted lake in a temp folder: a dry run changes nothing, a real
// run deletes exactly what the dry run listed and no live row, the retention gate holds, invalid usage exits 2;
// compact runs are judged by their journal in the folder, and old temp files of interrupted writes go.
import { randomUUID } from 'node:crypto';
import { cp, mkdir, mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LEGACY_TEMP_FILE_PREFIX, TEMP_FILE_HOST } from '../../functions/adapters/local-object-store.js';
import { runCompact } from '../../functions/cli/compact.js';
import { type CliIo, run } from '../../functions/cli/index.js';
import type { MaintenanceIo } from '../../functions/cli/maintenance-shared.js';
import type { VacuumCliReport } from '../../functions/cli/vacuum.js';
import { localFolderSink } from '../../functions/tools/generate.js';
import { writeSampleLake } from '../../functions/tools/sample-lake.js';
import { captureIo } from '../support/cli-io.js';
import { dyingStore } from '../support/crash-store.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';
import { folderSnapshot } from '../support/folder-snapshot.js';

const HOUR = 3_600_000;
/** Keys the fixture adds beside what `compact` leaves behind (relative to the table folder). */
const DEBRIS = '_temporary/0/_temporary/attempt_0/part-00000.parquet';
const CLI_STAGING = '_lake-compactor/staging/cli-20240101T000000Z-deadbeef-p0-00000000/g0001/part-x.parquet';
const SFN_STAGING = '_lake-compactor/staging/events-p0-1a2b3c4d-g1/g0001/part-y.parquet';
const SFN_TRASH = '_lake-compactor/trash/events-p0-1a2b3c4d-g1/date=2024-01-01/part-old.parquet';

type Io = MaintenanceIo & CliIo & { stdout: string[]; stderr: string[] };

/** An io whose clock is `hoursFromNow` ahead of the files' real modification times. */
function capture(hoursFromNow: number, confirm?: (q: string) => Promise<boolean>): Io {
  return {
    ...captureIo({ now: Date.now() + hoursFromNow * HOUR }),
    ...(confirm === undefined ? {} : { confirm }),
  };
}

const snapshot = folderSnapshot;

async function keys(dir: string): Promise<string[]> {
  return (await snapshot(dir)).map((line) => line.split(' ')[0] as string);
}

let db: DuckDb;
let template: string;
let root: string;
let table: string;

async function rowMultiset(): Promise<string[]> {
  const rows = await db.rows(
    `SELECT * FROM read_parquet(${sqlString(join(table, 'date=*', '*.parquet'))}) ORDER BY ALL`,
  );
  return rows.map((r) => JSON.stringify(r));
}

async function vacuumJson(
  args: readonly string[],
  io: Io,
): Promise<{ code: number; report?: VacuumCliReport }> {
  const code = await run(['vacuum', table, '--json', ...args], io);
  return code === 0 ? { code, report: JSON.parse(io.stdout.join('\n')) as VacuumCliReport } : { code };
}

beforeAll(async () => {
  db = await openDuckDb();
  // One compacted lake, copied (with modification times) for each test.
  template = await mkdtemp(join(tmpdir(), 'lc-vacuum-template-'));
  await writeSampleLake(localFolderSink(template), {
    days: 2,
    batches: 6,
    seed: 21,
    startDate: '2024-01-01',
  });
  // Sorted, so the inputs go to trash (a bin-pack deletes them without a copy): vacuum has trash to judge.
  const compacted = await run(
    ['compact', join(template, 'events'), '--strategy', 'sort', '--columns', 'user_id'],
    capture(0),
  );
  expect(compacted).toBe(0);
  for (const key of [DEBRIS, CLI_STAGING, SFN_STAGING, SFN_TRASH]) {
    const path = join(template, 'events', key);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, `leftover ${key}`);
  }
});

afterAll(async () => {
  db.close();
  await rm(template, { recursive: true, force: true });
});

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'lc-vacuum-'));
  await cp(template, root, { recursive: true, preserveTimestamps: true });
  table = join(root, 'events');
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('lake-compactor vacuum on a local folder', () => {
  it('a dry run past the retention lists the CLI run’s trash and settled journal entries, journal-less abandoned staging and old debris, and changes nothing', async () => {
    // Prepare
    const before = await snapshot(table);
    const cliTrash = (await keys(table)).filter((k) => k.startsWith('_lake-compactor/trash/cli-'));
    const cliJournal = (await keys(table)).filter((k) => k.startsWith('_lake-compactor/journal/runs/cli-'));
    const io = capture(200);

    // Act
    const { code, report } = await vacuumJson(['--dry-run'], io);

    // Assess
    expect(code).toBe(0);
    expect(cliTrash).toHaveLength(12);
    expect(cliJournal).toHaveLength(2);
    expect(report?.candidates.map((c) => c.key).sort()).toEqual(
      [...cliTrash, ...cliJournal, CLI_STAGING, DEBRIS].sort(),
    );
    expect(report?.candidates.find((c) => c.key === cliTrash[0])?.reason).toMatch(
      /^input retired by run cli-/,
    );
    expect(report?.candidates.find((c) => c.key === CLI_STAGING)?.reason).toMatch(
      /^staging without a journal entry/,
    );
    expect(report?.dryRun).toBe(true);
    expect(report?.notes).toEqual(['a local folder has no multipart uploads: nothing to abort']);
    // The state machine's run is not judged without its journal: kept, and the reason says what to do.
    expect(report?.kept.filter((k) => k.key === SFN_STAGING || k.key === SFN_TRASH)).toHaveLength(2);
    expect(report?.kept.find((k) => k.key === SFN_TRASH)?.reason).toMatch(/not a lake-compactor compact run/);
    expect(await snapshot(table)).toEqual(before);
  });

  it('counts each object once: examined is the number of files in the folder, and no candidate is listed twice', async () => {
    // Prepare: the table is the folder's root, so its listing holds the work area that vacuum's own steps list
    const files = await keys(table);
    const io = capture(200);
    const text = capture(200);

    // Act
    const { code, report } = await vacuumJson(['--dry-run'], io);
    await run(['vacuum', table, '--dry-run'], text);

    // Assess
    expect(code).toBe(0);
    expect(report?.examined).toBe(files.length);
    const ids = (report?.candidates ?? []).map((c) => JSON.stringify([c.bucket, c.key, c.versionId]));
    expect(new Set(ids).size).toBe(ids.length);
    expect(report?.totalRemoved.count).toBe(ids.length);
    expect(text.stdout.join('\n')).toContain(`would delete: ${ids.length} objects`);
    expect(text.stdout.join('\n')).toMatch(new RegExp(`; examined ${files.length}$`, 'm'));
  });

  it('a real run deletes exactly what the dry run listed, keeps every live row, and prints the totals', async () => {
    // Prepare
    const rowsBefore = await rowMultiset();
    const keysBefore = await keys(table);
    const { report: dry } = await vacuumJson(['--dry-run'], capture(200));
    const io = capture(200);

    // Act
    const code = await run(['vacuum', table, '--yes'], io);

    // Assess
    expect(code).toBe(0);
    const listed = (dry?.candidates ?? []).map((c) => c.key).sort();
    const keysAfter = await keys(table);
    expect(keysBefore.filter((k) => !keysAfter.includes(k)).sort()).toEqual(listed);
    expect(keysAfter.filter((k) => !keysBefore.includes(k))).toEqual([]);
    expect(await rowMultiset()).toEqual(rowsBefore);
    const text = io.stdout.join('\n');
    expect(text).toContain('REAL RUN, objects will be DELETED');
    expect(text).toContain(`will delete: ${listed.length} objects`);
    expect(text).toContain(`deleted ${listed.length} objects`);
  });

  it('inside the retention the trash is kept, and only staging and debris past their own ages are listed', async () => {
    // Prepare
    const io = capture(100);

    // Act
    const { code, report } = await vacuumJson(['--dry-run'], io);

    // Assess
    expect(code).toBe(0);
    expect(report?.candidates.map((c) => c.key).sort()).toEqual([CLI_STAGING, DEBRIS].sort());
    expect(report?.kept.filter((k) => k.key.startsWith('_lake-compactor/trash/cli-'))).toHaveLength(12);
  });

  it('refuses a retention below 168 h with exit 2 before listing anything, and accepts it with the override', async () => {
    // Prepare
    const before = await snapshot(table);
    const refused = capture(30);
    const allowed = capture(30);

    // Act
    const refusedCode = await run(['vacuum', table, '--retention-hours', '24', '--yes'], refused);
    const allowedResult = await vacuumJson(
      ['--retention-hours', '24', '--allow-retention-below-minimum', '--dry-run'],
      allowed,
    );

    // Assess
    expect(refusedCode).toBe(2);
    expect(refused.stdout).toEqual([]);
    expect(refused.stderr.join('\n')).toMatch(
      /--retention-hours 24 is below the minimum of 168 h.*--allow-retention-below-minimum/s,
    );
    expect(await snapshot(table)).toEqual(before);
    expect(allowedResult.code).toBe(0);
    expect(allowedResult.report?.retentionHours).toBe(24);
    expect(allowedResult.report?.candidates.filter((c) => c.kind === 'trash')).toHaveLength(12);
  });

  it.each([
    [['--retention-hours', '-5'], /'--retention-hours <h>' argument '-5' is invalid/],
    [['--retention-hours', 'week'], /expected a positive number/],
    [['--state-table', 'state', '--dry-run'], /--state-table applies to s3:\/\/ locations only/],
    [[], /stdin is not a terminal.*pass --yes.*or --dry-run/s],
  ])('vacuum %j exits 2 with a message saying what to do, and changes nothing', async (args, message) => {
    // Prepare
    const before = await snapshot(table);
    const io = capture(200);

    // Act
    const code = await run(['vacuum', table, ...args], io);

    // Assess
    expect(code).toBe(2);
    expect(io.stderr.join('\n')).toMatch(message);
    expect(io.stdout).toEqual([]);
    expect(await snapshot(table)).toEqual(before);
  });

  it('a missing folder exits 1 naming it, as in every command (the command line itself is well-formed)', async () => {
    // Prepare
    const io = capture(0);
    // Act
    const code = await run(['vacuum', join(root, 'nowhere'), '--dry-run'], io);
    // Assess
    expect(code).toBe(1);
    expect(io.stderr.join('\n')).toMatch(/nowhere.*does not exist/);
  });

  it('asks before deleting when it can: no leaves everything and exits 1, yes deletes what was listed', async () => {
    // Prepare
    const before = await snapshot(table);
    const questions: string[] = [];
    const declined = capture(200, async (q) => {
      questions.push(q);
      return false;
    });
    const accepted = capture(200, async () => true);

    // Act
    const declinedCode = await run(['vacuum', table], declined);
    const afterDecline = await snapshot(table);
    const acceptedCode = await run(['vacuum', table], accepted);

    // Assess
    expect(declinedCode).toBe(1);
    expect(questions).toEqual([expect.stringMatching(/^Delete these 16 objects \(.+\)\?$/)]);
    expect(declined.stderr.join('\n')).toContain('Vacuum cancelled: nothing was deleted');
    expect(afterDecline).toEqual(before);
    expect(acceptedCode).toBe(0);
    expect(accepted.stdout.join('\n')).toContain('deleted 16 objects');
  });
});

describe('lake-compactor vacuum and what compact leaves behind', () => {
  it('removes temp files older than the debris age, in the work area and beside table files, and keeps young ones', async () => {
    // Prepare: a killed write's temp file (old), a write in progress (young), and an old-style leftover
    const temp = join(table, '_lake-compactor', 'tmp');
    await mkdir(temp, { recursive: true });
    const old = `${TEMP_FILE_HOST}.${process.pid}.${randomUUID()}`;
    const young = `${TEMP_FILE_HOST}.${process.pid}.${randomUUID()}`;
    const legacy = `date=2024-01-01/${LEGACY_TEMP_FILE_PREFIX}${randomUUID()}`;
    await writeFile(join(temp, old), 'half');
    await writeFile(join(temp, young), 'half');
    await writeFile(join(table, legacy), 'half');
    const soon = new Date(Date.now() + 90 * HOUR);
    await utimes(join(temp, young), soon, soon);
    const rowsBefore = await rowMultiset();
    const { report: dry } = await vacuumJson(['--dry-run'], capture(100));
    const io = capture(100);

    // Act
    const code = await run(['vacuum', table, '--yes'], io);

    // Assess
    const debris = (dry?.candidates ?? []).filter((c) => c.kind === 'debris').map((c) => c.key);
    expect(debris).toEqual(expect.arrayContaining([`_lake-compactor/tmp/${old}`, legacy]));
    expect(debris).not.toContain(`_lake-compactor/tmp/${young}`);
    expect(dry?.kept.find((k) => k.key === `_lake-compactor/tmp/${young}`)?.reason).toMatch(
      /a write may still be in progress/,
    );
    expect(code).toBe(0);
    expect(await readdir(temp)).toEqual([young]);
    expect(await readdir(join(table, 'date=2024-01-01'))).not.toContain(legacy.split('/')[1]);
    expect(await rowMultiset()).toEqual(rowsBefore);
  });

  it('keeps what a compact run that died mid-publish needs, however old, until it is settled', async () => {
    // Prepare: a fresh table whose sorted compact (trash copies) dies as it retires the first partition's inputs
    await writeSampleLake(localFolderSink(join(root, 'fresh')), {
      days: 1,
      batches: 5,
      seed: 3,
      startDate: '2024-03-01',
    });
    const fresh = join(root, 'fresh', 'events');
    await runCompact(fresh, { strategy: 'sort', columns: ['user_id'] }, capture(0), {
      wrapStore: (s) =>
        dyingStore(
          s,
          (c) => c.method === 'deleteMany' && (c.refs ?? []).some((r) => r.ifMatch !== undefined),
        ),
    }).catch(() => {});
    const openVacuum = capture(200);
    const settledVacuum = capture(200);

    // Act
    const openCode = await run(['vacuum', fresh, '--json', '--dry-run'], openVacuum);
    const settleCode = await run(['settle', fresh], capture(0));
    const settledCode = await run(['vacuum', fresh, '--json', '--dry-run'], settledVacuum);

    // Assess
    const open = JSON.parse(openVacuum.stdout.join('\n')) as VacuumCliReport;
    const settled = JSON.parse(settledVacuum.stdout.join('\n')) as VacuumCliReport;
    expect([openCode, settleCode, settledCode]).toEqual([0, 0, 0]);
    expect(open.candidates.filter((c) => c.kind !== 'debris')).toEqual([]);
    const keptTrash = open.kept.filter((k) => k.key.startsWith('_lake-compactor/trash/cli-'));
    expect(keptTrash).toHaveLength(5);
    for (const k of keptTrash) expect(k.reason).toMatch(/mid-commit \(published\)/);
    expect(open.kept.find((k) => k.key.startsWith('_lake-compactor/journal/runs/'))?.reason).toMatch(
      /published, not settled/,
    );
    expect(settled.candidates.filter((c) => c.kind === 'trash')).toHaveLength(5);
    expect(settled.candidates.filter((c) => c.kind === 'journal')).toHaveLength(1);
  });
});

describe('lake-compactor tier without S3', () => {
  it.each([
    [
      () => [table, '--dry-run'],
      /tier needs an s3:\/\/bucket\/prefix location: storage classes exist only in S3/,
    ],
    [() => ['s3://lake/events', '--dry-run', '--rule', '30:WARM'], /rules\.0\.storageClass/],
    [
      () => ['s3://lake/events', '--dry-run', '--rule', '90:STANDARD_IA', '--rule', '30:GLACIER_IR'],
      /rules must be in ascending afterDays/,
    ],
    [() => ['s3://lake/events', '--dry-run', '--rule', 'monthly'], /is not <afterDays>:<STORAGE_CLASS>/],
    [() => ['s3://lake/events', '--dry-run', '--date-format', 'dd.MM.yyyy'], /Allowed choices are/],
  ])('tier %# exits 2 before touching any store, with a message saying what to do', async (args, message) => {
    // Prepare
    const io = capture(0);
    // Act
    const code = await run(['tier', ...args()], io);
    // Assess
    expect(code).toBe(2);
    expect(io.stderr.join('\n')).toMatch(message);
    expect(io.stdout).toEqual([]);
  });
});
