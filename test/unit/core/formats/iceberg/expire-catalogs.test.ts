// expire_snapshots and remove_orphan_files on Iceberg tables registered in a metastore catalog: AWS Glue through the
// real Glue SDK client against test/support/fake-glue.ts — a narrow in-process emulation of GetTable/UpdateTable with
// Glue's VersionId lock, because no local Glue server exists — and an Iceberg REST catalog through our REST client
// against test/support/rest-catalog-server.ts (requirements, updates, its own metadata files). Both on 127.0.0.1.
//
// The table is an appender's, compacted (older snapshots hold the replaced files), maintained with a clock far past
// every snapshot. What must be deleted is computed from the snapshot reader, not by the code under test. Each test
// proves one thing: the catalog's pointer moved and exactly the unreferenced files went; a commit that won the race
// between expire's read and its swap makes it reload and keep everything that commit references; a branch's or a
// tag's snapshots stay; orphans are judged against what the catalog points at, a race loser's metadata file being an
// orphan only once past the grace period.
import { randomUUID } from 'node:crypto';
import { rm, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { GlueIcebergCatalog } from '../../../../../functions/adapters/formats/iceberg/glue-catalog.js';
import { RestIcebergCatalog } from '../../../../../functions/adapters/formats/iceberg/rest-catalog.js';
import {
  type IcebergCatalog,
  type LoadedTable,
  readMetadataText,
} from '../../../../../functions/core/formats/iceberg/catalog.js';
import { commitAppend } from '../../../../../functions/core/formats/iceberg/commit.js';
import { expireSnapshots } from '../../../../../functions/core/formats/iceberg/expire.js';
import {
  parseJsonKeepingLongs,
  stringifyJsonKeepingLongs,
} from '../../../../../functions/core/formats/iceberg/json.js';
import { readSnapshotFiles } from '../../../../../functions/core/formats/iceberg/live-files.js';
import { removeOrphanFiles } from '../../../../../functions/core/formats/iceberg/orphans.js';
import { ManualClock } from '../../../../../functions/ports/clock.js';
import { type FakeGlue, startFakeGlue } from '../../../../support/fake-glue.js';
import {
  buildMaintainedTemplate,
  copyMaintainedTable,
  expectedExpiryDeletes,
  filesUnder,
  MAINTENANCE_FAR,
  type MaintainedTable,
  replacedDataFile,
} from '../../../../support/iceberg-maintenance-table.js';
import { type RestCatalogServer, startRestCatalogServer } from '../../../../support/rest-catalog-server.js';

const HOUR = 3_600_000;
const noSleep = async () => {};
const noWait = { clock: new ManualClock(MAINTENANCE_FAR), sleep: noSleep, backoffMs: 0 };
const long = (id: bigint | undefined) => `\u0000long:${id}`;
/** A snapshot id as a request body carries it (a number, or a long kept as a marked string), as decimal text. */
const idText = (v: unknown) => String(v).replace('\u0000long:', '');

let template: string;
let t: MaintainedTable;

beforeAll(async () => {
  template = await buildMaintainedTemplate();
});

afterAll(async () => {
  await rm(template, { recursive: true, force: true });
});

beforeEach(async () => {
  t = await copyMaintainedTable(template);
});

afterEach(async () => {
  await t.remove();
});

/** Commits, through `catalog`, the metadata it points at with `edit` applied (a ref set or moved). */
async function commitEdited(catalog: IcebergCatalog, edit: (raw: Record<string, unknown>) => void) {
  const base = await catalog.load(t.root);
  const raw = parseJsonKeepingLongs(await readMetadataText(t.store, base.metadataKey)) as Record<
    string,
    unknown
  >;
  edit(raw);
  const outcome = await catalog.commit(base, stringifyJsonKeepingLongs(raw));
  expect(outcome.outcome).toBe('committed');
}

/** Sets (or moves) the ref `name` to snapshot `id`. */
const setRef =
  (name: string, type: 'tag' | 'branch', id: bigint | undefined) => (raw: Record<string, unknown>) => {
    raw.refs = { ...(raw.refs as Record<string, unknown>), [name]: { 'snapshot-id': long(id), type } };
  };

/** Files deleted between two listings, metadata files aside (a refused commit's file is the catalog's business). */
const deletedBetween = (before: readonly string[], after: readonly string[]) =>
  before.filter((f) => !after.includes(f) && !f.endsWith('.metadata.json'));

/** Every data file the catalog's snapshots reference still exists. */
async function expectEveryReferencedFilePresent(table: LoadedTable): Promise<void> {
  const present = new Set(await filesUnder(t.dir));
  for (const s of table.metadata.snapshots) {
    const read = await readSnapshotFiles(t.store, table, { snapshotId: s.snapshotId });
    for (const f of read.dataFiles) expect(present).toContain(f.entry.file.key);
  }
}

describe('expire_snapshots through AWS Glue', () => {
  let glue: FakeGlue;
  const catalog = () =>
    new GlueIcebergCatalog({
      client: glue.client(),
      setting: { type: 'glue', database: 'lake', table: 'events' },
      store: t.store,
    });

  beforeEach(async () => {
    glue = await startFakeGlue();
    glue.putTable('lake', {
      Name: 'events',
      TableType: 'EXTERNAL_TABLE',
      Parameters: { table_type: 'ICEBERG', metadata_location: t.metadataLocation },
      StorageDescriptor: { Location: t.initial.metadata.location },
    });
  });

  afterEach(async () => {
    await glue.close();
  });

  it('swaps the Glue pointer with the VersionId read, keeps a tagged snapshot, and deletes exactly what no remaining snapshot references', async () => {
    // Prepare: tag the oldest snapshot through Glue
    const oldest = t.initial.metadata.snapshots[0]?.snapshotId;
    await commitEdited(catalog(), setRef('audit', 'tag', oldest));
    const tagged = await catalog().load(t.root);
    const kept = new Set([tagged.metadata.currentSnapshotId as bigint, oldest as bigint]);
    const expected = await expectedExpiryDeletes(t.store, tagged, kept);
    const before = await filesUnder(t.dir);
    const version = glue.table('lake', 'events')?.VersionId;

    // Act
    const report = await expireSnapshots(t.store, t.root, {
      now: MAINTENANCE_FAR,
      dryRun: false,
      catalog: catalog(),
      sleep: noSleep,
    });

    // Assess: Glue points at the committed file, previous_metadata_location at the one it was planned on
    const parameters = glue.table('lake', 'events')?.Parameters ?? {};
    expect(parameters.metadata_location).toBe(tagged.paths.path(report.committedMetadataKey ?? '?'));
    expect(parameters.previous_metadata_location).toBe(tagged.paths.path(tagged.metadataKey));
    const update = glue.requests.filter((r) => r.operation === 'UpdateTable').at(-1);
    expect(update?.body.VersionId).toBe(version);
    const after = await catalog().load(t.root);
    expect(new Set(after.metadata.snapshots.map((s) => s.snapshotId))).toEqual(kept);
    expect([...after.metadata.refs.keys()].sort()).toEqual(['audit', 'main']);
    expect(deletedBetween(before, await filesUnder(t.dir))).toEqual(expected);
    expect(report.totalRemoved.count).toBe(expected.length);
    expect(report.removed.data.count).toBeGreaterThan(0);
    await expectEveryReferencedFilePresent(after);
    // No path-catalog version was written beside Glue's pointer.
    expect(
      (await filesUnder(t.dir)).filter((f) => /^events\/metadata\/v\d+\.metadata\.json$/.test(f)),
    ).toEqual(before.filter((f) => /^events\/metadata\/v\d+\.metadata\.json$/.test(f)));
  });

  it('reloads after an append won the race between its GetTable and UpdateTable, and deletes nothing that append references', async () => {
    // Prepare: between expire's read and its swap, another writer appends a file only expired snapshots list
    const restored = await replacedDataFile(t.store, t.initial);
    let afterAppend: LoadedTable | undefined;
    let listed: string[] = [];
    let expected: string[] = [];
    glue.beforeUpdate(async () => {
      await commitAppend(t.store, catalog(), { tableLocation: t.root, addedFiles: [restored] }, noWait);
      afterAppend = await catalog().load(t.root);
      listed = await filesUnder(t.dir);
      const current = afterAppend.metadata.currentSnapshotId as bigint;
      expected = await expectedExpiryDeletes(t.store, afterAppend, new Set([current]));
    });

    // Act
    const report = await expireSnapshots(t.store, t.root, {
      now: MAINTENANCE_FAR,
      dryRun: false,
      catalog: catalog(),
      sleep: noSleep,
    });

    // Assess: the second attempt planned on the append; its file, and every file it lists, stays
    expect(report.attempts).toBe(2);
    const winner = afterAppend as LoadedTable;
    const after = await catalog().load(t.root);
    expect(after.metadata.currentSnapshotId).toBe(winner.metadata.currentSnapshotId);
    expect(after.metadata.snapshots.map((s) => s.snapshotId)).toEqual([winner.metadata.currentSnapshotId]);
    const restoredKey = winner.paths.key(restored.path);
    expect(await filesUnder(t.dir)).toContain(restoredKey);
    expect(expected.length).toBeGreaterThan(0);
    expect(expected).not.toContain(restoredKey);
    expect(deletedBetween(listed, await filesUnder(t.dir))).toEqual(expected);
    await expectEveryReferencedFilePresent(after);
  });
});

describe('expire_snapshots through an Iceberg REST catalog', () => {
  let server: RestCatalogServer;
  const catalog = () =>
    new RestIcebergCatalog({
      setting: {
        type: 'rest',
        uri: server.uri,
        namespace: 'lake',
        table: 'events',
        auth: { type: 'none' },
      },
      auth: { type: 'none' },
      store: t.store,
    });
  const commits = () => server.requests.filter((r) => r.method === 'POST');

  beforeEach(async () => {
    server = await startRestCatalogServer({ store: t.store, now: () => MAINTENANCE_FAR });
    await server.register('lake', 'events', t.root, t.metadataLocation);
  });

  afterEach(async () => {
    await server.close();
  });

  it('commits a remove-snapshots update under assert-table-uuid and every ref, keeps a branch, and deletes exactly what no remaining snapshot references', async () => {
    // Prepare: a branch on the oldest snapshot
    const oldest = t.initial.metadata.snapshots[0]?.snapshotId;
    await commitEdited(catalog(), setRef('audit-branch', 'branch', oldest));
    const branched = await catalog().load(t.root);
    const kept = new Set([branched.metadata.currentSnapshotId as bigint, oldest as bigint]);
    const expected = await expectedExpiryDeletes(t.store, branched, kept);
    const before = await filesUnder(t.dir);

    // Act
    const report = await expireSnapshots(t.store, t.root, {
      now: MAINTENANCE_FAR,
      dryRun: false,
      catalog: catalog(),
      sleep: noSleep,
    });

    // Assess: one commit, naming exactly the expired snapshots, asserting the table and both refs as read
    const body = commits().at(-1)?.body as {
      requirements: Record<string, unknown>[];
      updates: Record<string, unknown>[];
    };
    expect(body.updates.map((u) => u.action)).toEqual(['remove-snapshots']);
    const removed = (body.updates[0]?.['snapshot-ids'] ?? []) as unknown[];
    expect(removed.map(idText).sort()).toEqual(report.expiredSnapshots.map((s) => s.snapshotId).sort());
    expect(
      body.requirements.map((r) =>
        r.type === 'assert-table-uuid' ? `uuid ${r.uuid}` : `${r.ref} at ${idText(r['snapshot-id'])}`,
      ),
    ).toEqual([
      `uuid ${branched.metadata.tableUuid}`,
      `main at ${branched.metadata.currentSnapshotId}`,
      `audit-branch at ${oldest}`,
    ]);
    expect(server.metadataLocation('lake', 'events')).toBe(
      branched.paths.path(report.committedMetadataKey ?? '?'),
    );
    const after = await catalog().load(t.root);
    expect(new Set(after.metadata.snapshots.map((s) => s.snapshotId))).toEqual(kept);
    expect(deletedBetween(before, await filesUnder(t.dir))).toEqual(expected);
    await expectEveryReferencedFilePresent(after);
  });

  it('reloads when a tag moved onto a snapshot it meant to expire, and keeps that snapshot and its files', async () => {
    // Prepare: a tag on the current snapshot; before expire's commit is applied, another writer moves it to the oldest
    const current = t.initial.metadata.currentSnapshotId;
    const oldest = t.initial.metadata.snapshots[0]?.snapshotId;
    await commitEdited(catalog(), setRef('audit', 'tag', current));
    const kept = new Set([current as bigint, oldest as bigint]);
    let listed: string[] = [];
    let expected: string[] = [];
    server.beforeCommit(async () => {
      await commitEdited(catalog(), setRef('audit', 'tag', oldest));
      listed = await filesUnder(t.dir);
      expected = await expectedExpiryDeletes(t.store, await catalog().load(t.root), kept);
    });

    // Act
    const report = await expireSnapshots(t.store, t.root, {
      now: MAINTENANCE_FAR,
      dryRun: false,
      catalog: catalog(),
      sleep: noSleep,
    });

    // Assess: the first commit was refused (the tag moved), the second planned on the moved tag
    expect(report.attempts).toBe(2);
    const after = await catalog().load(t.root);
    expect(new Set(after.metadata.snapshots.map((s) => s.snapshotId))).toEqual(kept);
    expect(after.metadata.refs.get('audit')?.snapshotId).toBe(oldest);
    expect(expected.length).toBeGreaterThan(0);
    expect(deletedBetween(listed, await filesUnder(t.dir))).toEqual(expected);
    await expectEveryReferencedFilePresent(after);
  });
});

describe('remove_orphan_files through AWS Glue', () => {
  let glue: FakeGlue;
  const catalog = () =>
    new GlueIcebergCatalog({
      client: glue.client(),
      setting: { type: 'glue', database: 'lake', table: 'events' },
      store: t.store,
    });

  beforeEach(async () => {
    glue = await startFakeGlue();
    glue.putTable('lake', {
      Name: 'events',
      TableType: 'EXTERNAL_TABLE',
      Parameters: { table_type: 'ICEBERG', metadata_location: t.metadataLocation },
    });
  });

  afterEach(async () => {
    await glue.close();
  });

  it('judges files against the metadata Glue points at: an old race loser’s metadata file goes, a young one stays', async () => {
    // Prepare: two metadata files of the next version that Glue never pointed at (writers that lost the race or
    // have not swapped yet), one old and one young, and an old stray data file
    const text = await readMetadataText(t.store, t.initial.metadataKey);
    const next = String(t.initial.version + 1).padStart(5, '0');
    const oldLoser = `events/metadata/${next}-${randomUUID()}.metadata.json`;
    const youngLoser = `events/metadata/${next}-${randomUUID()}.metadata.json`;
    const stray = 'events/data/event_timestamp_day=2024-03-01/00000-9-stray-00001.parquet';
    for (const key of [oldLoser, youngLoser, stray]) await writeFile(join(t.dir, key), text);
    const old = new Date(MAINTENANCE_FAR - 100 * HOUR);
    for (const key of [oldLoser, stray]) await utimes(join(t.dir, key), old, old);
    const young = new Date(MAINTENANCE_FAR - HOUR);
    await utimes(join(t.dir, youngLoser), young, young);
    const before = await filesUnder(t.dir);

    // Act
    const report = await removeOrphanFiles(t.store, t.root, {
      now: MAINTENANCE_FAR,
      dryRun: false,
      catalog: catalog(),
    });

    // Assess
    expect(report.metadataKey).toBe(t.initial.metadataKey);
    expect(report.candidates.map((c) => c.key).sort()).toEqual([oldLoser, stray].sort());
    expect(await filesUnder(t.dir)).toEqual(before.filter((f) => f !== oldLoser && f !== stray));
    expect(report.kept.young).toBe(1);
    expect(report.kept['newer-metadata']).toBe(0);
    await expectEveryReferencedFilePresent(await catalog().load(t.root));
  });
});
