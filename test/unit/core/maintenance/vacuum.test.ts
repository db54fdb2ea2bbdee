// Vacuum over the in-memory store and journal with a manual clock: the retention gate, dry-run, what is
// deleted when, that the live version always survives, that a vacuum pages and resumes by cursor, and that
// compact runs are judged by the journal they keep in the store.
import { describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../../../functions/adapters/memory-journal.js';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { RoutedJournal } from '../../../../functions/adapters/routed-journal.js';
import { StoreJournal } from '../../../../functions/adapters/store-journal.js';
import { InvalidInputError, ObjectNotFoundError } from '../../../../functions/core/errors.js';
import { decideTrash, isWriterDebris } from '../../../../functions/core/formats/hive/vacuum.js';
import {
  decideStaging,
  parseVacuumRequest,
  planVacuum,
  type VacuumDeps,
  type VacuumPlan,
  vacuum,
} from '../../../../functions/core/maintenance/vacuum.js';
import { parseTableConfigs } from '../../../../functions/core/table-config.js';
import {
  DEFAULT_WORK_ROOT,
  planKey,
  previewKey,
  stagingPrefix,
  storeJournalEntryKey,
  trashPrefix,
} from '../../../../functions/core/workflow/layout.js';
import { ManualClock } from '../../../../functions/ports/clock.js';
import type { GroupJournalEntry } from '../../../../functions/ports/journal.js';

const HOUR = 3_600_000;
const W = DEFAULT_WORK_ROOT;
const T0 = Date.UTC(2026, 0, 1);
const TABLES = parseTableConfigs([
  { name: 'events', bucket: 'lake', prefix: 'events/', partitionColumns: ['date'] },
]);

interface World {
  clock: ManualClock;
  store: MemoryObjectStore;
  journal: MemoryJournal;
  deps: VacuumDeps;
}

function world(versioned = false): World {
  const clock = new ManualClock(T0);
  const store = new MemoryObjectStore({ versioned, now: () => new Date(clock.now()) });
  const journal = new MemoryJournal();
  return {
    clock,
    store,
    journal,
    deps: {
      tables: TABLES,
      workRoot: W,
      storeFor: () => store,
      journalFor: () => journal,
      retiredVersionJournalFor: () => journal,
      clock,
    },
  };
}

function entry(
  runId: string,
  patch: Partial<GroupJournalEntry> & Pick<GroupJournalEntry, 'state'>,
): Omit<GroupJournalEntry, 'revision'> {
  return {
    runId,
    groupId: 'g1',
    table: 'events',
    partition: 'date=2026-01-01',
    inputs: [],
    outputs: [],
    retireMode: 'trash',
    stagingPrefix: stagingPrefix(W, runId, 'g1'),
    trashPrefix: trashPrefix(W, runId),
    createdAt: T0,
    updatedAt: T0,
    ...patch,
  };
}

/** A versioned-bucket run that retired `key` (its version `versionId`) at `retiredAt`. */
async function retiredRun(w: World, runId: string, key: string, versionId: string, retiredAt: number) {
  await w.store.put(planKey(W, runId), '{}');
  await w.journal.create(
    entry(runId, {
      state: 'done',
      retireMode: 'delete-versioned',
      inputs: [{ key, etag: 'e', size: 10, versionId }],
      retiredAt,
    }),
  );
}

async function versionExists(store: MemoryObjectStore, key: string, versionId: string): Promise<boolean> {
  try {
    await store.copy(key, `probe/${versionId}`, { sourceVersionId: versionId });
    return true;
  } catch (err) {
    if (err instanceof ObjectNotFoundError) return false;
    throw err;
  }
}

describe('parseVacuumRequest', () => {
  it('refuses a retention of 167 h and names the override', () => {
    // Prepare
    const input = { retentionHours: 167 };
    // Act
    const act = () => parseVacuumRequest(input);
    // Assess
    expect(act).toThrow(InvalidInputError);
    expect(act).toThrow(/below the minimum of 168 h.*allowRetentionBelowMinimum/s);
  });

  it('accepts a retention of 168 h and defaults to it and to a dry-run', () => {
    // Prepare
    const explicit = { retentionHours: 168, dryRun: false };
    // Act
    const accepted = parseVacuumRequest(explicit);
    const defaults = parseVacuumRequest({});
    // Assess
    expect(accepted.retentionHours).toBe(168);
    expect(defaults).toMatchObject({ retentionHours: 168, dryRun: true });
  });

  it('accepts a retention below the minimum when the override is given explicitly', () => {
    // Prepare
    const input = { retentionHours: 24, allowRetentionBelowMinimum: true };
    // Act
    const request = parseVacuumRequest(input);
    // Assess
    expect(request.retentionHours).toBe(24);
  });

  it('refuses a Delta retention override (deltaRetentionHours) below 168 h unless the override is given', () => {
    // Prepare / Act
    const refused = () => parseVacuumRequest({ deltaRetentionHours: 24 });
    const allowed = parseVacuumRequest({ deltaRetentionHours: 24, allowRetentionBelowMinimum: true });

    // Assess
    expect(refused).toThrow(InvalidInputError);
    expect(refused).toThrow(/deltaRetentionHours 24 is below the minimum of 168 h/);
    expect(allowed.deltaRetentionHours).toBe(24);
  });

  it('refuses unknown fields so a typo does not silently fall back to a default', () => {
    // Prepare
    const input = { retentionHour: 200 };
    // Act
    const act = () => parseVacuumRequest(input);
    // Assess
    expect(act).toThrow(/retentionHour/);
  });
});

describe('vacuum', () => {
  it('in dry-run lists candidates with sizes and reasons and deletes nothing', async () => {
    // Prepare
    const w = world();
    await w.store.put('events/_temporary/0/part-1.parquet', 'scratch!');
    await w.store.put(`${stagingPrefix(W, 'r1', 'g1')}part-out.parquet`, 'staged');
    await w.journal.create(entry('r1', { state: 'aborted' }));
    w.clock.advance(200 * HOUR);
    const before = w.store.keys();
    // Act
    const report = await vacuum(w.deps, parseVacuumRequest({ dryRun: true }));
    // Assess
    expect(w.store.keys()).toEqual(before);
    expect(report.dryRun).toBe(true);
    expect(report.candidates.map((c) => [c.kind, c.key, c.size])).toEqual([
      ['staging', `${stagingPrefix(W, 'r1', 'g1')}part-out.parquet`, 6],
      ['debris', 'events/_temporary/0/part-1.parquet', 8],
    ]);
    expect(report.candidates.every((c) => c.reason.length > 0)).toBe(true);
    expect(report.totalRemoved).toEqual({ count: 2, bytes: 14 });
  });

  it('deletes a version retired 169 h ago and keeps one retired 100 h ago', async () => {
    // Prepare
    const w = world(true);
    await w.store.put('events/date=2026-01-01/old.parquet', 'old input');
    await w.store.put('events/date=2026-01-01/new.parquet', 'new input');
    const oldVersion = (await w.store.head('events/date=2026-01-01/old.parquet'))?.versionId as string;
    const newVersion = (await w.store.head('events/date=2026-01-01/new.parquet'))?.versionId as string;
    await w.store.deleteMany([
      { key: 'events/date=2026-01-01/old.parquet' },
      { key: 'events/date=2026-01-01/new.parquet' },
    ]);
    await retiredRun(w, 'r-old', 'events/date=2026-01-01/old.parquet', oldVersion, T0);
    await retiredRun(w, 'r-new', 'events/date=2026-01-01/new.parquet', newVersion, T0 + 69 * HOUR);
    w.clock.set(T0 + 169 * HOUR);
    // Act
    const report = await vacuum(w.deps, parseVacuumRequest({ dryRun: false }));
    // Assess
    expect(await versionExists(w.store, 'events/date=2026-01-01/old.parquet', oldVersion)).toBe(false);
    expect(await versionExists(w.store, 'events/date=2026-01-01/new.parquet', newVersion)).toBe(true);
    expect(report.removed['retired-version']).toEqual({ count: 1, bytes: 10 });
  });

  it('never deletes the live version of a key, even when the journal claims it was retired', async () => {
    // Prepare
    const w = world(true);
    await w.store.put('events/date=2026-01-01/live.parquet', 'still here');
    const live = (await w.store.head('events/date=2026-01-01/live.parquet'))?.versionId as string;
    await retiredRun(w, 'r-wrong', 'events/date=2026-01-01/live.parquet', live, T0);
    w.clock.set(T0 + 500 * HOUR);
    // Act
    const report = await vacuum(w.deps, parseVacuumRequest({ dryRun: false }));
    // Assess
    expect((await w.store.head('events/date=2026-01-01/live.parquet'))?.versionId).toBe(live);
    expect(report.removed['retired-version'].count).toBe(0);
    expect(report.spared).toEqual([
      expect.objectContaining({
        key: 'events/date=2026-01-01/live.parquet',
        reason: expect.stringMatching(/live/),
      }),
    ]);
  });

  it('deletes trash copies once their run retired them longer ago than the retention, not before', async () => {
    // Prepare
    const w = world();
    const input = 'events/date=2026-01-01/a.parquet';
    await w.store.put(`${trashPrefix(W, 'r-due')}${input}`, 'copy one');
    await w.store.put(`${trashPrefix(W, 'r-young')}${input}`, 'copy two');
    await w.journal.create(
      entry('r-due', { state: 'done', inputs: [{ key: input, etag: 'x', size: 8 }], retiredAt: T0 }),
    );
    await w.journal.create(
      entry('r-young', {
        state: 'done',
        inputs: [{ key: input, etag: 'y', size: 8 }],
        retiredAt: T0 + 100 * HOUR,
      }),
    );
    w.clock.set(T0 + 169 * HOUR);
    // Act
    const report = await vacuum(w.deps, parseVacuumRequest({ dryRun: false }));
    // Assess
    expect(w.store.keys()).toEqual([`${trashPrefix(W, 'r-young')}${input}`]);
    expect(report.removed.trash).toEqual({ count: 1, bytes: 8 });
  });

  it('cleans staging of aborted and abandoned runs but keeps a run that is mid-publish or young', async () => {
    // Prepare
    const w = world();
    const runs = {
      aborted: entry('r-aborted', { state: 'aborted' }),
      abandoned: entry('r-abandoned', { state: 'staged' }),
      publishing: entry('r-publishing', { state: 'publishing' }),
    };
    for (const e of Object.values(runs)) {
      await w.journal.create(e);
      await w.store.put(`${e.stagingPrefix}part-0.parquet`, 'staged output');
    }
    await w.store.put(`${stagingPrefix(W, 'r-orphan', 'g1')}part-0.parquet`, 'no journal entry');
    w.clock.advance(25 * HOUR);
    await w.journal.create(
      entry('r-young', { state: 'staged', createdAt: w.clock.now(), updatedAt: w.clock.now() }),
    );
    await w.store.put(`${stagingPrefix(W, 'r-young', 'g1')}part-0.parquet`, 'just written');
    // Act
    const report = await vacuum(w.deps, parseVacuumRequest({ dryRun: false }));
    // Assess
    expect(w.store.keys()).toEqual([
      `${stagingPrefix(W, 'r-publishing', 'g1')}part-0.parquet`,
      `${stagingPrefix(W, 'r-young', 'g1')}part-0.parquet`,
    ]);
    expect(report.removed.staging.count).toBe(3);
  });

  it('removes rewrite dry-run previews (rows of a table) past the retention, keeps a young one, and leaves them to a vacuum of every table', async () => {
    // Prepare
    const w = world();
    await w.store.put(previewKey(W, 'dry-old'), '{"rows":[]}');
    w.clock.advance(100 * HOUR);
    await w.store.put(previewKey(W, 'dry-young'), '{"rows":[]}');
    w.clock.advance(69 * HOUR);
    // Act
    const selected = await vacuum(w.deps, parseVacuumRequest({ dryRun: false, tables: ['events'] }));
    const all = await vacuum(w.deps, parseVacuumRequest({ dryRun: false }));
    // Assess
    expect(selected.removed.preview.count).toBe(0);
    expect(all.removed.preview).toEqual({ count: 1, bytes: 11 });
    expect(w.store.keys()).toEqual([previewKey(W, 'dry-young')]);
  });

  it('removes writer debris older than the configured age and never touches data files', async () => {
    // Prepare
    const w = world();
    await w.store.put('events/_temporary/0/_temporary/attempt/part-0.parquet', 'old scratch');
    await w.store.put('events/.spark-staging-1234/date=2026-01-01/part-0.parquet', 'old staging');
    await w.store.put('events/date=2026-01-01/part-0.parquet', 'data');
    w.clock.advance(30 * HOUR);
    await w.store.put('events/_temporary/1/part-9.parquet', 'young scratch');
    // Act
    const report = await vacuum(w.deps, parseVacuumRequest({ dryRun: false, debrisAgeHours: 24 }));
    // Assess
    expect(w.store.keys()).toEqual([
      'events/_temporary/1/part-9.parquet',
      'events/date=2026-01-01/part-0.parquet',
    ]);
    expect(report.removed.debris.count).toBe(2);
  });

  // s3rver does not implement ListMultipartUploads/AbortMultipartUpload, so this runs on the memory store.
  it('aborts multipart uploads left unfinished longer than the debris age', async () => {
    // Prepare
    const w = world();
    w.store.startMultipartUpload('events/date=2026-01-01/part-dead.parquet');
    w.clock.advance(100 * HOUR);
    w.store.startMultipartUpload('events/date=2026-01-01/part-running.parquet');
    // Act
    const report = await vacuum(w.deps, parseVacuumRequest({ dryRun: false }));
    // Assess
    const left = await w.store.listMultipartUploads('');
    expect(left.uploads.map((u) => u.key)).toEqual(['events/date=2026-01-01/part-running.parquet']);
    expect(report.removed.upload.count).toBe(1);
  });

  it('pages through a large prefix with a cursor and finds the same candidates as one big call', async () => {
    // Prepare
    const w = world();
    for (let i = 0; i < 25; i++)
      await w.store.put(`events/_temporary/0/part-${String(i).padStart(2, '0')}.parquet`, 'x');
    w.clock.advance(100 * HOUR);
    const whole = await planVacuum(w.deps, parseVacuumRequest({}));
    // Act
    const paged: string[] = [];
    let cursor: string | undefined;
    let calls = 0;
    do {
      const page = await planVacuum(
        w.deps,
        parseVacuumRequest({ maxObjects: 7, ...(cursor ? { cursor } : {}) }),
      );
      paged.push(...page.candidates.map((c) => c.key));
      expect(page.examined).toBeLessThanOrEqual(7);
      cursor = page.cursor;
      calls++;
    } while (cursor !== undefined);
    // Assess
    expect(calls).toBeGreaterThanOrEqual(4);
    expect(paged).toEqual(whole.candidates.map((c) => c.key));
    expect(paged).toHaveLength(25);
  });

  it('refuses a cursor it did not issue', async () => {
    // Prepare
    const w = world();
    // Act
    const act = planVacuum(w.deps, parseVacuumRequest({ cursor: 'not-a-cursor' }));
    // Assess
    await expect(act).rejects.toThrow(InvalidInputError);
  });
});

describe('vacuum of lake-compactor compact runs (journal in the store)', () => {
  /** A world whose journal routes CLI run ids to a StoreJournal in the bucket, as the vacuum Lambda's does. */
  function cliWorld() {
    const w = world();
    const cli = new StoreJournal(w.store);
    const deps: VacuumDeps = { ...w.deps, journalFor: () => new RoutedJournal(cli, w.journal) };
    return { ...w, cli, deps };
  }
  const SETTLED = 'cli-20260101T000000Z-aaaaaaaa-p0-11111111';
  const OPEN = 'cli-20260101T000000Z-aaaaaaaa-p1-22222222';
  const LEGACY = 'cli-20251201T000000Z-bbbbbbbb-p0-33333333';
  const input = (runId: string) => ({
    key: `events/date=2026-01-01/part-${runId}.parquet`,
    etag: 'e',
    size: 4,
  });

  it('judges a CLI run by its journal: keeps what an unsettled group needs, removes a settled group’s trash and entry', async () => {
    // Prepare: one run settled (done), one that died publishing, one of an older version with no journal
    const w = cliWorld();
    for (const runId of [SETTLED, OPEN, LEGACY]) {
      await w.store.put(`${trashPrefix(W, runId)}${input(runId).key}`, 'copy');
      await w.store.put(`${stagingPrefix(W, runId, 'g1')}part.parquet`, 'staged');
    }
    const done = await w.cli.create(entry(SETTLED, { state: 'planned', inputs: [input(SETTLED)] }));
    await w.cli.transition(done, 'done', { retiredAt: T0 }, T0);
    await w.cli.create(entry(OPEN, { state: 'publishing', inputs: [input(OPEN)] }));
    w.clock.advance(200 * HOUR);

    // Act
    const plan = await planVacuum(w.deps, parseVacuumRequest({}));

    // Assess
    const candidates = plan.candidates.map((c) => `${c.kind} ${c.key}`).sort();
    expect(candidates).toEqual(
      [
        `journal ${storeJournalEntryKey(W, SETTLED, 'g1')}`,
        `staging ${stagingPrefix(W, LEGACY, 'g1')}part.parquet`,
        `staging ${stagingPrefix(W, SETTLED, 'g1')}part.parquet`,
        `trash ${trashPrefix(W, LEGACY)}${input(LEGACY).key}`,
        `trash ${trashPrefix(W, SETTLED)}${input(SETTLED).key}`,
      ].sort(),
    );
    const keptReason = (key: string) => plan.kept.find((k) => k.key === key)?.reason;
    expect(keptReason(`${trashPrefix(W, OPEN)}${input(OPEN).key}`)).toMatch(/mid-commit \(publishing\)/);
    expect(keptReason(`${stagingPrefix(W, OPEN, 'g1')}part.parquet`)).toMatch(/resume its commit/);
    expect(keptReason(storeJournalEntryKey(W, OPEN, 'g1'))).toMatch(/not settled/);
  });

  it('keeps a settled group’s journal entry inside the retention', async () => {
    // Prepare
    const w = cliWorld();
    const created = await w.cli.create(entry(SETTLED, { state: 'planned' }));
    await w.cli.transition(created, 'aborted', { reason: 'rolled back' }, T0);
    w.clock.advance(100 * HOUR);

    // Act
    const plan = await planVacuum(w.deps, parseVacuumRequest({}));

    // Assess
    expect(plan.candidates).toEqual([]);
    expect(plan.kept.find((k) => k.key === storeJournalEntryKey(W, SETTLED, 'g1'))?.reason).toMatch(
      /inside the retention/,
    );
  });
});

describe('the work area is not a trust root', () => {
  const FORGED = 'cli-20200101T000000Z-deadbeef-p0-00000000';
  const GOOD = 'cli-20260101T000000Z-aaaaaaaa-p0-11111111';
  const TWO_TABLES = parseTableConfigs([
    { name: 'events', bucket: 'lake', prefix: 'events/', partitionColumns: ['date'] },
    { name: 'payroll', bucket: 'lake', prefix: 'hr/payroll/' },
  ]);
  /** Two tables in one bucket; CLI run ids routed to the store journal in the bucket, as the Lambda's are. */
  function trustWorld(versioned: boolean) {
    const w = world(versioned);
    const cli = new StoreJournal(w.store);
    const deps: VacuumDeps = {
      ...w.deps,
      tables: TWO_TABLES,
      journalFor: () => new RoutedJournal(cli, w.journal),
    };
    return { ...w, cli, deps };
  }

  it('deletes no object version on the word of a journal entry in the bucket, not even one of its own table', async () => {
    // Prepare: payroll's salaries has a noncurrent version; entries planted in the work area claim runs retired
    // it (as table events, and as table payroll itself), with a plan file so the runs step asks about them
    const w = trustWorld(true);
    await w.store.put('hr/payroll/salaries.parquet', 'v1');
    const v1 = (await w.store.head('hr/payroll/salaries.parquet'))?.versionId as string;
    await w.store.put('hr/payroll/salaries.parquet', 'v2');
    const input = { key: 'hr/payroll/salaries.parquet', etag: 'e', size: 2, versionId: v1 };
    const retired = {
      state: 'done' as const,
      retireMode: 'delete-versioned' as const,
      retiredAt: T0 - 900 * HOUR,
    };
    await w.store.put(planKey(W, FORGED), '{}');
    await w.cli.create(entry(FORGED, { ...retired, table: 'events', inputs: [input] }));
    await w.cli.create(entry(FORGED, { ...retired, groupId: 'g2', table: 'payroll', inputs: [input] }));
    w.clock.advance(500 * HOUR);

    // Act
    const report = await vacuum(w.deps, parseVacuumRequest({ dryRun: false }));

    // Assess
    expect(await versionExists(w.store, 'hr/payroll/salaries.parquet', v1)).toBe(true);
    expect(report.removed['retired-version']).toEqual({ count: 0, bytes: 0 });
    expect(report.candidates.filter((c) => c.kind === 'retired-version')).toEqual([]);
  });

  it('holds the state table’s entries to their own table: one naming another table’s key deletes none of its versions', async () => {
    // Prepare: a journal entry of table events (as only someone with write access to the state table could make
    // it) names a payroll key beside one of its own
    const w = trustWorld(true);
    await w.store.put('hr/payroll/salaries.parquet', 'v1');
    const payroll = (await w.store.head('hr/payroll/salaries.parquet'))?.versionId as string;
    await w.store.put('hr/payroll/salaries.parquet', 'v2');
    await w.store.put('events/date=2026-01-01/a.parquet', 'old');
    const own = (await w.store.head('events/date=2026-01-01/a.parquet'))?.versionId as string;
    await w.store.deleteMany([{ key: 'events/date=2026-01-01/a.parquet' }]);
    await w.store.put(planKey(W, 'r-mixed'), '{}');
    await w.journal.create(
      entry('r-mixed', {
        state: 'done',
        retireMode: 'delete-versioned',
        retiredAt: T0,
        inputs: [
          { key: 'events/date=2026-01-01/a.parquet', etag: 'e', size: 3, versionId: own },
          { key: 'hr/payroll/salaries.parquet', etag: 'e', size: 2, versionId: payroll },
        ],
      }),
    );
    w.clock.advance(500 * HOUR);

    // Act
    const report = await vacuum(w.deps, parseVacuumRequest({ dryRun: false }));

    // Assess: the whole entry is refused, not only the stray key
    expect(await versionExists(w.store, 'hr/payroll/salaries.parquet', payroll)).toBe(true);
    expect(await versionExists(w.store, 'events/date=2026-01-01/a.parquet', own)).toBe(true);
    expect(report.removed['retired-version'].count).toBe(0);
    expect(report.notes.join('\n')).toMatch(
      /events: journal entry of group g1 of run r-mixed names hr\/payroll\/salaries\.parquet, outside its table events \(events\/\).*no version it names is deleted/,
    );
  });

  it('does not judge a trash copy by a bucket entry that names keys outside its table: the copy is kept', async () => {
    // Prepare: a settled entry of events claims payroll's input; a genuine one of events retired its own
    const w = trustWorld(false);
    const stray = 'hr/payroll/salaries.parquet';
    const own = 'events/date=2026-01-01/a.parquet';
    await w.store.put(`${trashPrefix(W, FORGED)}${stray}`, 'copy of payroll');
    await w.store.put(`${trashPrefix(W, GOOD)}${own}`, 'copy of events');
    await w.cli.create(
      entry(FORGED, { state: 'done', retiredAt: T0, inputs: [{ key: stray, etag: 'e', size: 15 }] }),
    );
    await w.cli.create(
      entry(GOOD, { state: 'done', retiredAt: T0, inputs: [{ key: own, etag: 'e', size: 14 }] }),
    );
    w.clock.advance(200 * HOUR);

    // Act
    const plan = await planVacuum(w.deps, parseVacuumRequest({}));

    // Assess
    expect(plan.candidates.filter((c) => c.kind === 'trash').map((c) => c.key)).toEqual([
      `${trashPrefix(W, GOOD)}${own}`,
    ]);
    expect(plan.kept.find((k) => k.key === `${trashPrefix(W, FORGED)}${stray}`)?.reason).toMatch(
      /names hr\/payroll\/salaries\.parquet, outside its table events .*not judged by it/,
    );
  });

  it('keeps the objects of a run whose journal cannot be read, says so, and judges the other runs', async () => {
    // Prepare: one run's entry object is not JSON (a truncated or planted file); another run is due
    const w = trustWorld(false);
    const own = 'events/date=2026-01-01/a.parquet';
    await w.store.put(`${trashPrefix(W, FORGED)}${own}`, 'copy one');
    await w.store.put(`${stagingPrefix(W, FORGED, 'g1')}part.parquet`, 'staged');
    await w.store.put(storeJournalEntryKey(W, FORGED, 'g1'), '{"runId": "cli-2020');
    await w.store.put(`${trashPrefix(W, GOOD)}${own}`, 'copy two');
    await w.cli.create(
      entry(GOOD, { state: 'done', retiredAt: T0, inputs: [{ key: own, etag: 'e', size: 8 }] }),
    );
    w.clock.advance(200 * HOUR);

    // Act
    const report = await vacuum(w.deps, parseVacuumRequest({ dryRun: false }));

    // Assess
    expect(report.candidates.map((c) => c.key)).toContain(`${trashPrefix(W, GOOD)}${own}`);
    expect(w.store.keys()).toEqual(
      expect.arrayContaining([
        `${trashPrefix(W, FORGED)}${own}`,
        `${stagingPrefix(W, FORGED, 'g1')}part.parquet`,
        storeJournalEntryKey(W, FORGED, 'g1'),
      ]),
    );
    expect(w.store.keys()).not.toContain(`${trashPrefix(W, GOOD)}${own}`);
    expect(report.notes.join('\n')).toMatch(
      new RegExp(
        `the journal of run ${FORGED} could not be read \\(SyntaxError: .*\\); its trash, staging and entries are kept`,
      ),
    );
  });
});

describe('two deployments on one bucket, each with its own work root', () => {
  const B = '_lake-compactor-b/';
  /** Deployment A (default work root, table `events`) and B (`_lake-compactor-b/`, table `clicks`) share `lake`. */
  function twoDeployments(tables: { a: string; b: string } = { a: 'events/', b: 'clicks/' }) {
    const clock = new ManualClock(T0);
    const store = new MemoryObjectStore({ now: () => new Date(clock.now()) });
    const deployment = (workRoot: string, name: string, prefix: string) => {
      const journal = new MemoryJournal();
      const deps: VacuumDeps = {
        tables: parseTableConfigs([{ name, bucket: 'lake', prefix }]),
        workRoot,
        storeFor: () => store,
        journalFor: () => journal,
        clock,
      };
      return { workRoot, journal, deps };
    };
    return { clock, store, a: deployment(W, 'events', tables.a), b: deployment(B, 'clicks', tables.b) };
  }
  /** Staging and trash of a run its deployment's journal does not know, and of one it knows is publishing. */
  async function leftovers(
    world: ReturnType<typeof twoDeployments>,
    d: ReturnType<typeof twoDeployments>['a'],
    table: string,
  ): Promise<{ orphans: string[]; inFlight: string[] }> {
    const orphans = [
      `${d.workRoot}staging/${table}-orphan/g1/part.parquet`,
      `${d.workRoot}trash/${table}-orphan/${table}/date=2026-01-01/part-0.parquet`,
    ];
    const inFlight = [
      `${d.workRoot}staging/${table}-publishing/g1/part.parquet`,
      `${d.workRoot}trash/${table}-publishing/${table}/date=2026-01-01/part-1.parquet`,
    ];
    for (const key of [...orphans, ...inFlight]) await world.store.put(key, 'bytes');
    await d.journal.create({
      ...entry(`${table}-publishing`, { state: 'publishing' }),
      table,
      inputs: [{ key: `${table}/date=2026-01-01/part-1.parquet`, etag: 'e', size: 5 }],
      stagingPrefix: `${d.workRoot}staging/${table}-publishing/g1/`,
      trashPrefix: `${d.workRoot}trash/${table}-publishing/`,
    });
    return { orphans, inFlight };
  }

  it('each vacuum lists and judges only its own work root: the other deployment’s staging and trash are never candidates', async () => {
    // Prepare: both deployments left orphans (no journal entry of their own) and have a run mid-publish
    const world = twoDeployments();
    const a = await leftovers(world, world.a, 'events');
    const b = await leftovers(world, world.b, 'clicks');
    world.clock.advance(200 * HOUR); // past the retention and the abandonment age

    // Act
    const planA = await planVacuum(world.a.deps, parseVacuumRequest({}));
    const planB = await planVacuum(world.b.deps, parseVacuumRequest({}));
    await vacuum(world.a.deps, parseVacuumRequest({ dryRun: false }));
    const afterA = world.store.keys();
    await vacuum(world.b.deps, parseVacuumRequest({ dryRun: false }));

    // Assess: A judged only `_lake-compactor/`, B only `_lake-compactor-b/`; each removed its own orphans
    const judged = (plan: VacuumPlan) => [...plan.candidates, ...plan.kept].map((c) => c.key);
    expect(judged(planA).sort()).toEqual([...a.orphans, ...a.inFlight].sort());
    expect(judged(planB).sort()).toEqual([...b.orphans, ...b.inFlight].sort());
    expect(afterA.sort()).toEqual([...a.inFlight, ...b.orphans, ...b.inFlight].sort());
    expect(world.store.keys().sort()).toEqual([...a.inFlight, ...b.inFlight].sort());
  });

  it('leaves the other deployment’s work root alone also from a bucket-root table: no debris, no aborted upload', async () => {
    // Prepare: A compacts a table at the bucket root, so its per-table steps list the whole bucket
    const world = twoDeployments({ a: '', b: 'clicks/' });
    const b = await leftovers(world, world.b, 'clicks');
    await world.store.put(`${B}staging/clicks-scratch/_temporary/0/part.parquet`, 'in B, not writer debris');
    world.store.startMultipartUpload(`${B}staging/clicks-publishing/g1/part-1.parquet`);
    await world.store.put('_temporary/0/part-0.parquet', 'writer scratch at the bucket root');
    world.clock.advance(200 * HOUR);

    // Act
    const report = await vacuum(world.a.deps, parseVacuumRequest({ dryRun: false }));

    // Assess: only the writers' scratch went; everything of B is there, its upload not aborted
    expect(report.candidates.map((c) => c.key)).toEqual(['_temporary/0/part-0.parquet']);
    expect(world.store.keys().sort()).toEqual(
      [...b.orphans, ...b.inFlight, `${B}staging/clicks-scratch/_temporary/0/part.parquet`].sort(),
    );
    expect((await world.store.listMultipartUploads('')).uploads).toHaveLength(1);
  });
});

describe('isWriterDebris', () => {
  it('matches _temporary and .spark-staging directories but not data, hidden files or the Delta log', () => {
    // Prepare
    const keys = [
      '_temporary/0/part-0.parquet',
      'date=2026-01-01/_temporary/x',
      '.spark-staging-ab12/date=1/part.parquet',
      'date=2026-01-01/part-0.parquet',
      '_delta_log/_temporary/00001.json',
      '_SUCCESS',
    ];
    // Act
    const matched = keys.filter(isWriterDebris);
    // Assess
    expect(matched).toEqual(keys.slice(0, 3));
  });
});

describe('decideTrash', () => {
  it('keeps the trash copies of an aborted run whose undo is still pending, however old', () => {
    // Prepare
    const object = { lastModified: new Date(T0) };
    const aborted = { ...entry('r-undo', { state: 'aborted', undo: 'pending' }), revision: 3 };
    // Act
    const decision = decideTrash(object, aborted, T0 + 1000 * HOUR, 168 * HOUR);
    // Assess
    expect(decision).toEqual({ action: 'keep', reason: expect.stringMatching(/restores inputs/) });
  });

  it('deletes the copies of an aborted run once its undo is done and the retention passed', () => {
    // Prepare
    const object = { lastModified: new Date(T0) };
    const aborted = { ...entry('r-undone', { state: 'aborted', undo: 'done' }), revision: 3 };
    // Act
    const decision = decideTrash(object, aborted, T0 + 200 * HOUR, 168 * HOUR);
    // Assess
    expect(decision.action).toBe('delete');
  });
});

describe('decideStaging', () => {
  it('keeps the staged outputs of an aborted run whose undo is still pending: a delete-rebuild undo rebuilds inputs from them', () => {
    // Prepare
    const object = { lastModified: new Date(T0) };
    const pending = {
      ...entry('r-rebuild', { state: 'aborted', undo: 'pending', retireMode: 'delete-rebuild' }),
      revision: 3,
    };
    const undone = { ...pending, undo: 'done' as const };
    // Act
    const whilePending = decideStaging(object, pending, T0 + 1000 * HOUR, 24 * HOUR);
    const afterUndo = decideStaging(object, undone, T0 + 1000 * HOUR, 24 * HOUR);
    // Assess
    expect(whilePending).toEqual({ action: 'keep', reason: expect.stringMatching(/rebuild inputs/) });
    expect(afterUndo.action).toBe('delete');
  });
});
