// Delta VACUUM: the pure planner over synthetic tables read by the real log reader (what is deleted, what stays and
// why, the retention gate and where the retention comes from), and vacuumDeltaTable over copies of the vendored
// fixture tables with a clock far in the future: live files and their deletion vectors survive, the table reads
// with the same rows, and exactly the expired tombstones and old untracked files are gone.
import {
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { parquetMetadata } from 'hyparquet';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../../../../functions/adapters/local-object-store.js';
import {
  MemoryObjectStore,
  type StoreInterceptor,
} from '../../../../../functions/adapters/memory-object-store.js';
import {
  ACCEPTED_READER_FEATURES,
  ACCEPTED_WRITER_FEATURES,
  type DeltaSnapshot,
  DeltaVacuumRefusedError,
  deletionVectorFile,
  isHiddenName,
  parseDeltaInterval,
  planDeltaVacuum,
  readDeltaSnapshot,
  VACUUM_UNDERSTOOD_FEATURES,
  vacuumDeltaTable,
} from '../../../../../functions/core/formats/delta/index.js';
import type { ObjectInfo, ObjectStore } from '../../../../../functions/ports/object-store.js';
import { DELTA_FIXTURES } from '../../../../support/fixtures.js';
import {
  addAction,
  commitKey,
  commitText,
  metaDataAction,
  protocolAction,
  referenceReplay,
  removeAction,
  syntheticTable,
} from './delta-test-kit.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** A fixed instant the synthetic cases count back from. */
const NOW = Date.UTC(2030, 0, 1);
const ROOT = 't/';

/** A listed object, modified `ageMs` before NOW. */
function listed(key: string, ageMs: number, size = 10): ObjectInfo {
  return { key, size, etag: `etag-of-${key}`, lastModified: new Date(NOW - ageMs) };
}

/** Z85 (ZeroMQ RFC 32) of a UUID's 16 bytes: how Delta names a `u` deletion vector, written independently here. */
function z85OfUuid(uuid: string): string {
  const alphabet = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#';
  const bytes = Buffer.from(uuid.replaceAll('-', ''), 'hex');
  let text = '';
  for (let i = 0; i < bytes.length; i += 4) {
    let value = bytes.readUInt32BE(i);
    const digits: string[] = [];
    for (let j = 0; j < 5; j += 1) {
      digits.unshift(alphabet[value % 85] as string);
      value = Math.floor(value / 85);
    }
    text += digits.join('');
  }
  return text;
}

function dv(uuid: string, prefix = ''): Record<string, unknown> {
  return {
    deletionVector: {
      storageType: 'u',
      pathOrInlineDv: `${prefix}${z85OfUuid(uuid)}`,
      offset: 1,
      sizeInBytes: 36,
      cardinality: 2,
    },
  };
}

const DV_PROTOCOL = protocolAction(3, 7, ['deletionVectors'], ['deletionVectors']);

/** The snapshot of a synthetic table of these commits, as the real reader returns it. */
async function snapshotOf(commits: readonly (readonly object[])[]): Promise<DeltaSnapshot> {
  return readDeltaSnapshot(await syntheticTable(ROOT, commits), ROOT);
}

function keysOf(plan: { delete: readonly { key: string }[] }): string[] {
  return plan.delete.map((c) => c.key).sort();
}

describe('planDeltaVacuum: what goes and what stays', () => {
  it('deletes a file whose tombstone is older than the retention and keeps one removed within it', async () => {
    // Prepare
    const snapshot = await snapshotOf([
      [
        protocolAction(1, 2),
        metaDataAction(),
        addAction('day=1/a.parquet', '1'),
        addAction('day=1/b.parquet', '1'),
      ],
      [removeAction('day=1/a.parquet', NOW - 8 * DAY), removeAction('day=1/b.parquet', NOW - 2 * DAY)],
    ]);
    const listing = [listed('t/day=1/a.parquet', 30 * DAY), listed('t/day=1/b.parquet', 30 * DAY)];
    // Act
    const plan = planDeltaVacuum({ snapshot, listing, now: NOW, retentionCheck: true });
    // Assess
    expect(plan.delete.map((c) => [c.key, c.kind])).toEqual([['t/day=1/a.parquet', 'tombstone']]);
    expect(plan.kept['retained-tombstone']).toBe(1);
    expect(plan.retentionMs).toBe(7 * DAY);
    expect(plan.retentionSource).toBe('default');
  });

  it('deletes an untracked file older than the retention and keeps a young one a writer may still commit', async () => {
    // Prepare
    const snapshot = await snapshotOf([
      [protocolAction(1, 2), metaDataAction(), addAction('day=1/live.parquet', '1')],
    ]);
    const listing = [
      listed('t/day=1/live.parquet', 30 * DAY),
      listed('t/day=1/failed-writer-output.parquet', 8 * DAY),
      listed('t/day=1/being-written.parquet', 6 * DAY),
    ];
    // Act
    const plan = planDeltaVacuum({ snapshot, listing, now: NOW, retentionCheck: true });
    // Assess
    expect(plan.delete.map((c) => [c.key, c.kind])).toEqual([
      ['t/day=1/failed-writer-output.parquet', 'untracked'],
    ]);
    expect(plan.kept).toMatchObject({ live: 1, young: 1 });
  });

  it('never deletes anything under _delta_log/, however old and unreferenced', async () => {
    // Prepare
    const snapshot = await snapshotOf([[protocolAction(1, 2), metaDataAction()]]);
    const listing = [
      listed(commitKey(ROOT, 0), 400 * DAY),
      listed('t/_delta_log/00000000000000000000.checkpoint.parquet', 400 * DAY),
      listed('t/_delta_log/_sidecars/0a.parquet', 400 * DAY),
      listed('t/_delta_log/_last_checkpoint', 400 * DAY),
    ];
    // Act
    const plan = planDeltaVacuum({ snapshot, listing, now: NOW, retentionCheck: true });
    // Assess
    expect(plan.delete).toEqual([]);
    expect(plan.kept.log).toBe(4);
  });

  it('keeps hidden files and directories but vacuums partition directories named _col=… and _change_data/', async () => {
    // Prepare
    const schema = JSON.stringify({
      type: 'struct',
      fields: [
        { name: 'id', type: 'long', nullable: true, metadata: {} },
        { name: '_col', type: 'string', nullable: true, metadata: {} },
      ],
    });
    const meta = {
      metaData: {
        id: 'hidden',
        format: { provider: 'parquet', options: {} },
        schemaString: schema,
        partitionColumns: ['_col'],
        configuration: {},
      },
    };
    const snapshot = await snapshotOf([[protocolAction(1, 4), meta]]);
    const old = 30 * DAY;
    const listing = [
      listed('t/_col=x/stale.parquet', old),
      listed('t/_change_data/cdc-00000.snappy.parquet', old),
      listed('t/_delta_index/zorder.idx', old),
      listed('t/_other=x/not-a-partition.parquet', old),
      listed('t/_tmp/scratch.parquet', old),
      listed('t/_col=x/.stale.parquet.crc', old),
      listed('t/.hidden.parquet', old),
      listed('t/metadata/v1.metadata.json', old),
      listed('t/_SUCCESS', old),
    ];
    // Act
    const plan = planDeltaVacuum({ snapshot, listing, now: NOW, retentionCheck: true });
    // Assess
    expect(keysOf(plan)).toEqual([
      't/_change_data/cdc-00000.snappy.parquet',
      't/_col=x/stale.parquet',
      't/_delta_index/zorder.idx',
    ]);
    expect(plan.kept.hidden).toBe(6);
  });

  it('keeps the deletion-vector file of a live file and of a retained tombstone, deletes that of an expired one', async () => {
    // Prepare
    const liveDv = '11111111-2222-4333-8444-555555555555';
    const retainedDv = '21111111-2222-4333-8444-555555555555';
    const expiredDv = '31111111-2222-4333-8444-555555555555';
    const snapshot = await snapshotOf([
      [
        DV_PROTOCOL,
        metaDataAction(),
        addAction('day=1/live.parquet', '1', dv(liveDv, 'ab')),
        addAction('day=1/retained.parquet', '1', dv(retainedDv)),
        addAction('day=1/expired.parquet', '1', dv(expiredDv)),
      ],
      [
        removeAction('day=1/retained.parquet', NOW - DAY, dv(retainedDv)),
        removeAction('day=1/expired.parquet', NOW - 10 * DAY, dv(expiredDv)),
      ],
    ]);
    const old = 30 * DAY;
    const listing = [
      listed('t/day=1/live.parquet', old),
      listed(`t/ab/deletion_vector_${liveDv}.bin`, old),
      listed('t/day=1/retained.parquet', old),
      listed(`t/deletion_vector_${retainedDv}.bin`, old),
      listed('t/day=1/expired.parquet', old),
      listed(`t/deletion_vector_${expiredDv}.bin`, old),
    ];
    // Act
    const plan = planDeltaVacuum({ snapshot, listing, now: NOW, retentionCheck: true });
    // Assess
    expect(plan.delete.map((c) => [c.key, c.kind])).toEqual([
      ['t/day=1/expired.parquet', 'tombstone'],
      [`t/deletion_vector_${expiredDv}.bin`, 'tombstone'],
    ]);
    expect(plan.kept).toMatchObject({ live: 2, 'retained-tombstone': 2 });
  });

  it('keeps a listed key that a live absolute URI names, and the files of a nested table', async () => {
    // Prepare
    const snapshot = await snapshotOf([
      [protocolAction(1, 2), metaDataAction(), addAction('s3://bucket/t/day=1/absolute.parquet', '1')],
    ]);
    const old = 30 * DAY;
    const listing = [
      listed('t/day=1/absolute.parquet', old),
      listed('t/inner/_delta_log/00000000000000000000.json', old),
      listed('t/inner/part-0.parquet', old),
      listed('elsewhere/x.parquet', old),
    ];
    // Act
    const plan = planDeltaVacuum({ snapshot, listing, now: NOW, retentionCheck: true });
    // Assess
    expect(plan.delete).toEqual([]);
    expect(plan.kept).toMatchObject({ live: 1, hidden: 1, 'nested-table': 1, 'outside-root': 1 });
  });

  it('refuses to plan when a live deletion vector cannot be located', async () => {
    // Prepare
    const bad = {
      deletionVector: {
        storageType: 'u',
        pathOrInlineDv: 'not z85 ~~~~~~~~~~~~',
        sizeInBytes: 1,
        cardinality: 1,
      },
    };
    const snapshot = await snapshotOf([
      [DV_PROTOCOL, metaDataAction(), addAction('day=1/a.parquet', '1', bad)],
    ]);
    // Act
    const plan = planDeltaVacuum({
      snapshot,
      listing: [listed('t/deletion_vector_x.bin', 30 * DAY)],
      now: NOW,
      retentionCheck: true,
    });
    // Assess
    expect(plan.refusedReason).toMatch(/cannot be told apart/);
    expect(plan.delete).toEqual([]);
  });
});

describe('planDeltaVacuum: the retention and its safety gate', () => {
  const commits = [
    [protocolAction(1, 2), metaDataAction(), addAction('day=1/a.parquet', '1')],
    [removeAction('day=1/a.parquet', NOW - 2 * DAY)],
  ];
  const listing = [listed('t/day=1/a.parquet', 30 * DAY)];

  it('refuses a retention below 168 h, saying why and how to override', async () => {
    // Prepare
    const snapshot = await snapshotOf(commits);
    // Act
    const plan = planDeltaVacuum({
      snapshot,
      listing,
      now: NOW,
      retentionMs: 24 * HOUR,
      retentionCheck: true,
    });
    // Assess
    expect(plan.delete).toEqual([]);
    expect(plan.refusedReason).toMatch(/24 h .* below the minimum of 168 h/);
    expect(plan.refusedReason).toMatch(/writer still running/);
    expect(plan.refusedReason).toMatch(/retentionDurationCheck\.enabled=false/);
  });

  it('with the check turned off, a short retention deletes a file removed two days ago', async () => {
    // Prepare
    const snapshot = await snapshotOf(commits);
    // Act
    const plan = planDeltaVacuum({
      snapshot,
      listing,
      now: NOW,
      retentionMs: 24 * HOUR,
      retentionCheck: false,
    });
    // Assess
    expect(plan.refusedReason).toBeUndefined();
    expect(keysOf(plan)).toEqual(['t/day=1/a.parquet']);
  });

  it('takes the retention from delta.deletedFileRetentionDuration: 30 days keeps a file removed 10 days ago', async () => {
    // Prepare
    const snapshot = await snapshotOf([
      [
        protocolAction(1, 2),
        metaDataAction({ 'delta.deletedFileRetentionDuration': 'interval 30 days' }),
        addAction('day=1/a.parquet', '1'),
      ],
      [removeAction('day=1/a.parquet', NOW - 10 * DAY)],
    ]);
    // Act
    const plan = planDeltaVacuum({ snapshot, listing, now: NOW, retentionCheck: true });
    // Assess
    expect(plan.retentionSource).toBe('table property');
    expect(plan.retentionMs).toBe(30 * DAY);
    expect(plan.delete).toEqual([]);
    expect(plan.kept['retained-tombstone']).toBe(1);
  });

  it('refuses an explicit retention shorter than the table property, even above 168 h', async () => {
    // Prepare
    const snapshot = await snapshotOf([
      [protocolAction(1, 2), metaDataAction({ 'delta.deletedFileRetentionDuration': 'interval 30 days' })],
    ]);
    // Act
    const plan = planDeltaVacuum({
      snapshot,
      listing,
      now: NOW,
      retentionMs: 200 * HOUR,
      retentionCheck: true,
    });
    // Assess
    expect(plan.refusedReason).toMatch(
      /shorter than the table's delta\.deletedFileRetentionDuration of 720 h/,
    );
  });

  it('refuses a table property that is not an interval Delta accepts', async () => {
    // Prepare
    const snapshot = await snapshotOf([
      [protocolAction(1, 2), metaDataAction({ 'delta.deletedFileRetentionDuration': 'interval 1 month' })],
    ]);
    // Act
    const plan = planDeltaVacuum({ snapshot, listing, now: NOW, retentionCheck: true });
    // Assess
    expect(plan.refusedReason).toMatch(/"interval 1 month"/);
  });

  it('parses Delta interval syntax into milliseconds', () => {
    // Act
    const parsed = [
      'interval 7 days',
      'interval 1 week',
      '168 hours',
      'INTERVAL 1 day 12 hours',
      'interval 90 minutes',
    ].map(parseDeltaInterval);
    const rejected = [
      'interval 1 month',
      'interval 1 year',
      'interval -1 day',
      'seven days',
      'interval',
      '',
    ].map(parseDeltaInterval);
    // Assess
    expect(parsed).toEqual([7 * DAY, 7 * DAY, 168 * HOUR, 36 * HOUR, 90 * 60_000]);
    expect(rejected).toEqual([undefined, undefined, undefined, undefined, undefined, undefined]);
  });

  it('refuses a table whose protocol has a feature vacuum has not been taught', async () => {
    // Prepare
    const read = await snapshotOf(commits);
    const snapshot = { ...read, protocol: { ...read.protocol, writerFeatures: ['someFutureFeature'] } };
    // Act
    const plan = planDeltaVacuum({ snapshot, listing, now: NOW, retentionCheck: true });
    // Assess
    expect(plan.refusedReason).toMatch(/someFutureFeature/);
    expect(plan.delete).toEqual([]);
  });

  it('every feature the protocol check accepts is one vacuum has a rule for', () => {
    // Act
    const accepted = [...Object.keys(ACCEPTED_READER_FEATURES), ...Object.keys(ACCEPTED_WRITER_FEATURES)];
    // Assess
    expect(accepted.filter((f) => VACUUM_UNDERSTOOD_FEATURES[f] === undefined)).toEqual([]);
  });
});

describe('deletion-vector files and hidden names', () => {
  it('the fixture’s deletion vector descriptor names the deletion-vector file that lies beside its data', async () => {
    // Prepare
    const snapshot = await readDeltaSnapshot(new LocalObjectStore(DELTA_FIXTURES), 'table-with-dv-small');
    const descriptor = snapshot.files[0]?.deletionVector;
    // Act
    const file = descriptor === undefined ? undefined : deletionVectorFile(descriptor);
    // Assess
    expect(file?.relative).toMatch(/^deletion_vector_[0-9a-f-]{36}\.bin$/);
    expect(existsSync(join(DELTA_FIXTURES, 'table-with-dv-small', file?.relative as string))).toBe(true);
  });

  it('a partition directory is not hidden only for a partition column of the table', () => {
    // Act
    const verdicts = ['_col=1', '_col=1', '_delta_log', '.x', 'metadata', 'col=1'].map((name, i) =>
      isHiddenName(name, i === 0 ? ['_col'] : []),
    );
    // Assess
    expect(verdicts).toEqual([false, true, true, true, true, false]);
  });
});

// ---------------------------------------------------------------------------------------------------------
// vacuumDeltaTable over copies of the vendored fixture tables
// ---------------------------------------------------------------------------------------------------------

/** Far beyond every fixture's timestamps: every tombstone expired, every copied file old. */
const FAR_FUTURE = Date.UTC(2200, 0, 1);
const ORPHAN = 'part-99999-left-by-a-failed-writer.c000.snappy.parquet';
const YOUNG = 'part-99998-being-written-now.c000.snappy.parquet';

function fixtureFiles(table: string): string[] {
  const base = join(DELTA_FIXTURES, table);
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? walk(join(dir, e.name)) : [relative(base, join(dir, e.name)).split('\\').join('/')],
    );
  return walk(base).sort();
}

/**
 * A copy of a fixture at `table/` in a MemoryObjectStore whose clock the caller sets, plus an old untracked file
 * (written when the table was copied) and a young one (written an hour before FAR_FUTURE).
 */
async function fixtureCopy(table: string, interceptor?: StoreInterceptor): Promise<MemoryObjectStore> {
  let clock = 0;
  const store = new MemoryObjectStore({
    now: () => new Date(clock),
    ...(interceptor ? { interceptor } : {}),
  });
  for (const file of fixtureFiles(table))
    await store.put(`${table}/${file}`, readFileSync(join(DELTA_FIXTURES, table, file)));
  await store.put(`${table}/${ORPHAN}`, 'PAR1 never committed');
  clock = FAR_FUTURE - HOUR;
  await store.put(`${table}/${YOUNG}`, 'PAR1 not committed yet');
  return store;
}

async function keysUnder(store: ObjectStore, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of store.listAll(prefix)) keys.push(o.key);
  return keys.sort();
}

/** Rows of the table at its latest version: Parquet row counts of the live files minus deleted rows. */
async function rowCount(store: ObjectStore, table: string): Promise<number> {
  const snapshot = await readDeltaSnapshot(store, table);
  let rows = 0;
  for (const file of snapshot.files) {
    const bytes = await store.get(file.key as string);
    rows += Number(parquetMetadata(Uint8Array.from(bytes).buffer).num_rows);
    rows -= file.deletionVector?.cardinality ?? 0;
  }
  return rows;
}

/**
 * What VACUUM must delete from a fixture, derived from its files and JSON commits alone: every file outside
 * hidden names that the reference replay does not hold live, split into removed-by-some-commit and never-named.
 */
function expectedDeletions(table: string, latest: number): { tombstone: string[]; untracked: string[] } {
  const live = new Set(referenceReplay(table, latest).map((f) => decodeURIComponent(f.path)));
  const removed = new Set<string>();
  for (let v = 0; v <= latest; v += 1) {
    const text = readFileSync(
      join(DELTA_FIXTURES, table, '_delta_log', `${String(v).padStart(20, '0')}.json`),
      'utf8',
    );
    for (const line of text.split('\n').filter((l) => l.trim() !== '')) {
      const action = JSON.parse(line) as { remove?: { path: string } };
      if (action.remove) removed.add(decodeURIComponent(action.remove.path));
    }
  }
  const candidates = [...fixtureFiles(table), ORPHAN].filter(
    (f) => !f.split('/').some((name) => name.startsWith('.') || name.startsWith('_')) && !live.has(f),
  );
  // The deletion-vector files of these fixtures all belong to live files (table-with-dv-small's single DELETE).
  const dvFiles = candidates.filter((f) => /^deletion_vector_.*\.bin$/.test(f));
  const rest = candidates.filter((f) => !dvFiles.includes(f));
  return {
    tombstone: rest.filter((f) => removed.has(f)).map((f) => `${table}/${f}`),
    untracked: rest.filter((f) => !removed.has(f)).map((f) => `${table}/${f}`),
  };
}

const LATEST: Readonly<Record<string, number>> = {
  simple_table: 4,
  simple_table_with_checkpoint: 10,
  'table-with-dv-small': 1,
  'delta-0.8.0-partitioned': 0,
  'delta-2.2.0-partitioned-types': 0,
  'delta-0.8.0-special-partition': 0,
};

describe('vacuumDeltaTable over the fixture tables', () => {
  for (const [table, latest] of Object.entries(LATEST)) {
    it(`${table}: deletes exactly the expired tombstones and old untracked files; the table reads the same rows`, async () => {
      // Prepare
      const store = await fixtureCopy(table);
      const rowsBefore = await rowCount(store, table);
      const before = await readDeltaSnapshot(store, table);
      const expected = expectedDeletions(table, latest);
      const keysBefore = await keysUnder(store, `${table}/`);
      // Act
      const report = await vacuumDeltaTable(store, table, { now: FAR_FUTURE, dryRun: false });
      // Assess
      const keysAfter = await keysUnder(store, `${table}/`);
      const deleted = keysBefore.filter((k) => !keysAfter.includes(k));
      expect(deleted).toEqual([...expected.tombstone, ...expected.untracked].sort());
      expect(report.removed.tombstone.count).toBe(expected.tombstone.length);
      expect(report.removed.untracked.count).toBe(expected.untracked.length);
      expect(report.failed).toEqual([]);
      expect(keysAfter).toContain(`${table}/${YOUNG}`);
      for (const f of fixtureFiles(table).filter((f) => f.includes('deletion_vector_')))
        expect(keysAfter).toContain(`${table}/${f}`);
      const after = await readDeltaSnapshot(store, table);
      expect(after.files.map((f) => f.key)).toEqual(before.files.map((f) => f.key));
      expect(await rowCount(store, table)).toBe(rowsBefore);
      expect(rowsBefore).toBeGreaterThan(0);
    });
  }

  it('simple_table: a dry run reports the same deletions and deletes nothing', async () => {
    // Prepare
    const store = await fixtureCopy('simple_table');
    const keysBefore = await keysUnder(store, 'simple_table/');
    const expected = expectedDeletions('simple_table', 4);
    // Act
    const report = await vacuumDeltaTable(store, 'simple_table', { now: FAR_FUTURE, dryRun: true });
    // Assess
    expect(await keysUnder(store, 'simple_table/')).toEqual(keysBefore);
    expect(report.dryRun).toBe(true);
    expect(report.candidates.map((c) => c.key).sort()).toEqual(
      [...expected.tombstone, ...expected.untracked].sort(),
    );
    expect(report.totalRemoved.count).toBe(expected.tombstone.length + expected.untracked.length);
  });

  it('deletes in batches of batchSize, each one conditional deleteMany call', async () => {
    // Prepare
    let calls = 0;
    const store = await fixtureCopy('simple_table', (method) => {
      if (method === 'deleteMany') calls += 1;
    });
    const expected = expectedDeletions('simple_table', 4);
    const total = expected.tombstone.length + expected.untracked.length;
    // Act
    const report = await vacuumDeltaTable(store, 'simple_table', {
      now: FAR_FUTURE,
      dryRun: false,
      batchSize: 5,
    });
    // Assess
    expect(report.totalRemoved.count).toBe(total);
    expect(calls).toBe(Math.ceil(total / 5));
  });

  it('a retention below 168 h is refused with DeltaVacuumRefusedError and nothing is deleted', async () => {
    // Prepare
    const store = await fixtureCopy('simple_table');
    const keysBefore = await keysUnder(store, 'simple_table/');
    // Act
    const attempt = vacuumDeltaTable(store, 'simple_table', {
      now: FAR_FUTURE,
      dryRun: false,
      retentionHours: 1,
    });
    // Assess
    await expect(attempt).rejects.toBeInstanceOf(DeltaVacuumRefusedError);
    await expect(attempt).rejects.toThrow(/below the minimum of 168 h/);
    expect(await keysUnder(store, 'simple_table/')).toEqual(keysBefore);
  });

  it('an object rewritten after the listing is left alone (the delete is conditional on the listed ETag)', async () => {
    // Prepare
    let store: MemoryObjectStore | undefined;
    let rewritten = false;
    store = await fixtureCopy('simple_table', async (method) => {
      if (method !== 'deleteMany' || rewritten || store === undefined) return;
      rewritten = true;
      await store.put(`simple_table/${ORPHAN}`, 'PAR1 rewritten by a writer after the listing');
    });
    // Act
    const report = await vacuumDeltaTable(store, 'simple_table', { now: FAR_FUTURE, dryRun: false });
    // Assess
    expect(await store.head(`simple_table/${ORPHAN}`)).toBeDefined();
    expect(report.spared).toEqual([
      { key: `simple_table/${ORPHAN}`, reason: 'changed since it was listed: left alone' },
    ]);
    expect(report.removed.untracked.count).toBe(expectedDeletions('simple_table', 4).untracked.length - 1);
  });

  it('a commit that lands while listing and adds an old untracked file keeps that file', async () => {
    // Prepare: the commit lands just before the table root is listed (after the log was read)
    let store: MemoryObjectStore | undefined;
    let committed = false;
    store = await fixtureCopy('simple_table', async (method, key) => {
      if (method !== 'list' || key !== 'simple_table/' || committed || store === undefined) return;
      committed = true;
      await store.put(
        commitKey('simple_table/', 5),
        commitText([
          { add: { path: ORPHAN, partitionValues: {}, size: 21, modificationTime: 0, dataChange: true } },
        ]),
      );
    });
    // Act
    const report = await vacuumDeltaTable(store, 'simple_table', { now: FAR_FUTURE, dryRun: false });
    // Assess
    expect(await store.head(`simple_table/${ORPHAN}`)).toBeDefined();
    expect(report.version).toBe(4);
    expect(report.recheckedVersion).toBe(5);
    expect(report.spared.map((s) => s.key)).toEqual([`simple_table/${ORPHAN}`]);
  });
});

describe('vacuumDeltaTable on a local folder', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('table-with-dv-small: deletes the old orphan and keeps every file of the fixture, its deletion vector included', async () => {
    // Prepare
    const dir = mkdtempSync(join(tmpdir(), 'delta-vacuum-'));
    dirs.push(dir);
    cpSync(join(DELTA_FIXTURES, 'table-with-dv-small'), join(dir, 't'), { recursive: true });
    writeFileSync(join(dir, 't', ORPHAN), 'PAR1 never committed');
    const store = new LocalObjectStore(dir);
    const rowsBefore = await rowCount(store, 't');
    // Act
    const report = await vacuumDeltaTable(store, 't', { now: FAR_FUTURE, dryRun: false });
    // Assess
    expect(existsSync(join(dir, 't', ORPHAN))).toBe(false);
    expect(report.candidates.map((c) => c.key)).toEqual([`t/${ORPHAN}`]);
    expect(fixtureFiles('table-with-dv-small').every((f) => existsSync(join(dir, 't', f)))).toBe(true);
    expect(await rowCount(store, 't')).toBe(rowsBefore);
  });

  it('a file modified within the retention is kept although the log never named it', async () => {
    // Prepare
    const dir = mkdtempSync(join(tmpdir(), 'delta-vacuum-'));
    dirs.push(dir);
    cpSync(join(DELTA_FIXTURES, 'table-with-dv-small'), join(dir, 't'), { recursive: true });
    writeFileSync(join(dir, 't', YOUNG), 'PAR1 not committed yet');
    const written = new Date(FAR_FUTURE - HOUR);
    utimesSync(join(dir, 't', YOUNG), written, written);
    // Act
    const report = await vacuumDeltaTable(new LocalObjectStore(dir), 't', { now: FAR_FUTURE, dryRun: false });
    // Assess
    expect(existsSync(join(dir, 't', YOUNG))).toBe(true);
    expect(report.kept.young).toBe(1);
    expect(report.totalRemoved.count).toBe(0);
  });
});
