// What an Iceberg table's changes are to the profiler (formats/iceberg/changes.ts), over the vendored tables: only a
// new metadata file is a nudge; from a cursor, the snapshots the catalog's pointer adds are read one by one, each as
// the data files it ADDED and DELETED itself (delete files left out), so the state at the cursor plus the changes is
// the state at the pointer; a cursor whose snapshot is no longer reachable, or a changed partition spec, asks for a
// rebuild; an event naming a metadata file newer than the pointer is not read as current.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { icebergChanges } from '../../../../../functions/core/formats/iceberg/changes.js';
import { icebergTable } from '../../../../../functions/core/formats/iceberg/format.js';
import {
  type IcebergCatalog,
  type LoadedTable,
  loadTable,
  readSnapshotFiles,
} from '../../../../../functions/core/formats/iceberg/index.js';
import {
  parseJsonKeepingLongs,
  stringifyJsonKeepingLongs,
} from '../../../../../functions/core/formats/iceberg/json.js';
import {
  type ChangeCursor,
  type ChangeState,
  type CommitLogChanges,
  CommitNotCurrentError,
  type VersionChanges,
} from '../../../../../functions/core/formats/table-format.js';
import type { ObjectStore } from '../../../../../functions/ports/object-store.js';
import { copyFixtureTable, type TableCopy } from './commit-harness.js';
import { FIXTURE_TABLES, fixtureStore, ICEBERG_FIXTURES, recordedSnapshots } from './fixture-tables.js';

/** The metadata files of a vendored table, oldest first (their names carry the version). */
function metadataFiles(table: string): string[] {
  const version = (name: string) => Number(/^v?(\d+)/.exec(name)?.[1]);
  return readdirSync(join(ICEBERG_FIXTURES, table, 'metadata'))
    .filter((n) => n.endsWith('.metadata.json'))
    .sort((a, b) => version(a) - version(b));
}

/** A catalog whose pointer is wherever the test puts it: `at.file` of the table's metadata/ folder. */
function movablePointer(
  store: ObjectStore,
  table: string,
): { at: { file: string }; catalog: IcebergCatalog } {
  const at = { file: '' };
  return {
    at,
    catalog: {
      load: (root: string): Promise<LoadedTable> =>
        loadTable(store, root, { metadataKey: `${table}/metadata/${at.file}` }),
      commit: () => Promise.reject(new Error('the profiler never commits')),
    },
  };
}

type Files = Map<string, Map<string, number>>;

/** Per partition, key → size, of a state. */
function filesOf(state: ChangeState): Files {
  return new Map(state.partitions.map((p) => [p.partition, new Map(p.files.map((f) => [f.key, f.size]))]));
}

/** `files` with the versions' changes applied in order: a removal takes the key out of whichever partition held it. */
function applied(files: Files, versions: readonly VersionChanges[]): Files {
  const out: Files = new Map([...files].map(([p, f]) => [p, new Map(f)]));
  for (const v of versions)
    for (const change of v.files) {
      for (const f of out.values()) f.delete(change.key);
      if (change.kind === 'added') {
        const partition = out.get(change.partition) ?? new Map<string, number>();
        partition.set(change.key, change.size as number);
        out.set(change.partition, partition);
      }
    }
  for (const [p, f] of out) if (f.size === 0) out.delete(p);
  return out;
}

function numberOf(summary: Readonly<Record<string, string>>, name: string): number {
  return Number(summary[name] ?? 0);
}

describe('which object events of an Iceberg table are commits', () => {
  it('takes a new metadata file (and the path catalog version hint) as a nudge and ignores data files, manifests, manifest lists and removals', () => {
    // Prepare
    const { roleOf } = icebergTable.changes as CommitLogChanges;

    // Act
    const roles = [
      'data/event_timestamp_day=2026-11-29/00000-0-a-00001.parquet',
      'metadata/v7.metadata.json',
      'metadata/00012-2b5d4ce3-154e-4498-a648-89be96ebd74a.metadata.json',
      'metadata/v8.gz.metadata.json',
      'metadata/version-hint.text',
      'metadata/2b5d4ce3-154e-4498-a648-89be96ebd74a-m0.avro',
      'metadata/snap-3138177759849079112-1-ff275eec-b23b-435f-a6a5-1ab7ce1c8749.avro',
      'metadata/3138177759849079112-stats.puffin',
    ].map((key) => roleOf(key, 'created'));
    const cleanup = roleOf('metadata/v1.metadata.json', 'removed');

    // Assess
    expect(roles.map((r) => (r.kind === 'commit' ? `commit ${r.version}` : r.kind))).toEqual([
      'ignored',
      'commit 7',
      'commit 12',
      'commit 8',
      'commit 0',
      'ignored',
      'ignored',
      'ignored',
    ]);
    expect(cleanup.kind).toBe('ignored');
    expect((icebergTable.changes as CommitLogChanges).eventVersions).toBe('pointer');
  });
});

describe('the changes of an Iceberg table from a cursor to the catalog pointer', () => {
  it.each(FIXTURE_TABLES)(
    '%s: every later snapshot is one version of the data files it added and deleted, and the cursor state plus the changes is the pointer state',
    async (table) => {
      // Prepare: the state (and cursor) at every metadata file, and the pointer at the last one
      const store = fixtureStore();
      const { at, catalog } = movablePointer(store, table);
      const changes = icebergChanges(() => catalog);
      const files = metadataFiles(table);
      const last = files.at(-1) as string;
      const states: ChangeState[] = [];
      for (const file of files) {
        at.file = file;
        states.push(await changes.readState(store, table, 0));
      }
      at.file = last;
      const target = states.at(-1) as ChangeState;
      const recorded = recordedSnapshots(table, last);

      for (const [i, from] of states.entries()) {
        // Act
        const read = await changes.readChanges(store, table, from.cursor, 0);

        // Assess
        if (read.kind !== 'versions') throw new Error(`${files[i]}: ${JSON.stringify(read)}`);
        const before = recordedSnapshots(table, files[i] as string).length;
        const added = recorded.slice(before);
        expect(read.versions).toHaveLength(added.length);
        expect(read.versions.map((v) => v.files.filter((f) => f.kind === 'added').length)).toEqual(
          added.map((s) => numberOf(s.summary, 'added-data-files')),
        );
        expect(read.versions.map((v) => v.files.filter((f) => f.kind === 'removed').length)).toEqual(
          added.map((s) => numberOf(s.summary, 'deleted-data-files')),
        );
        const versions = read.versions.map((v) => v.version);
        if (added.every((s) => s.sequenceNumber !== undefined))
          expect(versions).toEqual(added.map((s) => s.sequenceNumber));
        expect([from.cursor.version, ...versions]).toEqual(
          [from.cursor.version, ...versions].sort((a, b) => a - b),
        );
        expect(new Set(versions).size).toBe(versions.length);
        expect(applied(filesOf(from), read.versions)).toEqual(filesOf(target));
        expect(read.cursor).toEqual(target.cursor);
      }
    },
  );

  it('leaves delete files out of the changes: a snapshot committing only deletes changes no counted file', async () => {
    // Prepare: the equality-delete table, whose snapshots 2, 3 and 5 commit delete files only
    const table = 'java_v2_equality_deletes_identity_partitioned';
    const store = fixtureStore();
    const { at, catalog } = movablePointer(store, table);
    const changes = icebergChanges(() => catalog);
    at.file = 'v1.metadata.json';
    const empty = await changes.readState(store, table, 0);
    at.file = 'v6.metadata.json';
    const live = await readSnapshotFiles(store, await catalog.load(table));

    // Act
    const read = await changes.readChanges(store, table, empty.cursor, 6);

    // Assess
    if (read.kind !== 'versions') throw new Error(JSON.stringify(read));
    const changed = new Set(read.versions.flatMap((v) => v.files.map((f) => f.key)));
    expect(live.deleteFiles.length).toBeGreaterThan(0);
    expect(live.deleteFiles.filter((d) => changed.has(d.entry.file.key))).toEqual([]);
    const recorded = recordedSnapshots(table, 'v6.metadata.json');
    expect(read.versions.map((v) => v.files.length)).toEqual(
      recorded.map(
        (s) => numberOf(s.summary, 'added-data-files') + numberOf(s.summary, 'deleted-data-files'),
      ),
    );
  });

  it('reads a replace snapshot as the files it removed and added, so the partition holds fewer files', async () => {
    // Prepare: the table whose fourth snapshot rewrote its data files
    const table = 'spark_v3_row_lineage_rewrite';
    const store = fixtureStore();
    const { at, catalog } = movablePointer(store, table);
    const changes = icebergChanges(() => catalog);
    at.file = 'v4.metadata.json';
    const before = await changes.readState(store, table, 0);
    at.file = 'v5.metadata.json';

    // Act
    const read = await changes.readChanges(store, table, before.cursor, 5);

    // Assess
    if (read.kind !== 'versions') throw new Error(JSON.stringify(read));
    const [replace] = read.versions;
    const count = (files: Files) => [...files.values()].reduce((n, f) => n + f.size, 0);
    expect(read.versions).toHaveLength(1);
    expect(replace?.files.some((f) => f.kind === 'removed')).toBe(true);
    expect(count(applied(filesOf(before), read.versions))).toBeLessThan(count(filesOf(before)));
  });

  it('reads the same changes again from the same cursor, so a retried batch applies the same versions', async () => {
    // Prepare
    const table = 'spark_v2_position_deletes';
    const store = fixtureStore();
    const { at, catalog } = movablePointer(store, table);
    const changes = icebergChanges(() => catalog);
    at.file = metadataFiles(table)[2] as string;
    const from = (await changes.readState(store, table, 0)).cursor;
    at.file = metadataFiles(table).at(-1) as string;

    // Act
    const first = await changes.readChanges(store, table, from, 0);
    const second = await changes.readChanges(store, table, from, 0);
    const fromPointer =
      first.kind === 'versions' ? await changes.readChanges(store, table, first.cursor, 0) : first;

    // Assess
    expect(first.kind).toBe('versions');
    expect(second).toEqual(first);
    expect(fromPointer).toMatchObject({ kind: 'versions', versions: [] });
  });
});

describe('when an Iceberg table must be re-derived from its current snapshot', () => {
  let copy: TableCopy | undefined;
  afterEach(() => copy?.remove());

  const TABLE = 'spark_v2_position_deletes';
  const LAST = '00009-5c29aedb-463b-4b80-b0d5-c1d7fc957770.metadata.json';

  /** The last metadata file of the copy edited by `edit`, written as a new file the pointer is then moved to. */
  async function editedPointer(edit: (metadata: Record<string, unknown>) => void): Promise<{
    changes: CommitLogChanges;
    store: ObjectStore;
    cursorAt: (file: string) => Promise<ChangeCursor>;
  }> {
    copy = copyFixtureTable(TABLE);
    const store = copy.store;
    const { at, catalog } = movablePointer(store, TABLE);
    const changes = icebergChanges(() => catalog);
    const metadata = parseJsonKeepingLongs(
      new TextDecoder().decode(await store.get(`${TABLE}/metadata/${LAST}`)),
    ) as Record<string, unknown>;
    edit(metadata);
    const edited = '00010-00000000-0000-0000-0000-000000000000.metadata.json';
    await store.put(`${TABLE}/metadata/${edited}`, stringifyJsonKeepingLongs(metadata));
    return {
      changes,
      store,
      cursorAt: async (file) => {
        at.file = file;
        const cursor = (await changes.readState(store, TABLE, 0)).cursor;
        at.file = edited;
        return cursor;
      },
    };
  }

  it('rebuilds when the cursor snapshot was expired from the metadata', async () => {
    // Prepare: the first three snapshots expired
    const { changes, store, cursorAt } = await editedPointer((m) => {
      m.snapshots = (m.snapshots as unknown[]).slice(3);
      m['snapshot-log'] = (m['snapshot-log'] as unknown[]).slice(3);
    });
    const cursor = await cursorAt('00001-416a5bad-4ede-4f79-b364-2951426146cf.metadata.json');

    // Act
    const read = await changes.readChanges(store, TABLE, cursor, 10);

    // Assess
    expect(read).toMatchObject({ kind: 'rebuild', reason: expect.stringContaining('expired') });
  });

  it('rebuilds when the table was rolled back past the cursor snapshot', async () => {
    // Prepare: the current snapshot set back to the fifth one
    const { changes, store, cursorAt } = await editedPointer((m) => {
      const snapshots = m.snapshots as Record<string, unknown>[];
      m['current-snapshot-id'] = snapshots[4]?.['snapshot-id'];
      m.refs = { main: { 'snapshot-id': snapshots[4]?.['snapshot-id'], type: 'branch' } };
    });
    const cursor = await cursorAt(LAST);

    // Act
    const read = await changes.readChanges(store, TABLE, cursor, 10);

    // Assess
    expect(read).toMatchObject({ kind: 'rebuild', reason: expect.stringContaining('no longer an ancestor') });
  });

  it('rebuilds when the partition spec changed', async () => {
    // Prepare: a second spec made the default (identity of the first column)
    const { changes, store, cursorAt } = await editedPointer((m) => {
      const schema = (m.schemas as { fields: { id: number; name: string }[] }[])[0];
      const source = schema?.fields[0] as { id: number; name: string };
      m['partition-specs'] = [
        ...(m['partition-specs'] as unknown[]),
        {
          'spec-id': 1,
          fields: [{ name: source.name, transform: 'identity', 'source-id': source.id, 'field-id': 1000 }],
        },
      ];
      m['default-spec-id'] = 1;
      m['last-partition-id'] = 1000;
    });
    const cursor = await cursorAt('00004-9eeb9ec3-bfbf-432c-8c2f-0880b8f5ad68.metadata.json');

    // Act
    const read = await changes.readChanges(store, TABLE, cursor, 10);

    // Assess
    expect(read).toMatchObject({ kind: 'rebuild', reason: expect.stringContaining('partition spec') });
  });

  it('rebuilds from a cursor holding no Iceberg snapshot', async () => {
    // Prepare
    const store = fixtureStore();
    const { at, catalog } = movablePointer(store, TABLE);
    at.file = LAST;

    // Act
    const read = await icebergChanges(() => catalog).readChanges(store, TABLE, { version: 3, memo: '{}' }, 9);

    // Assess
    expect(read.kind).toBe('rebuild');
  });
});

describe('an event naming a metadata file the catalog does not point at yet', () => {
  it('is refused as not current (retryable), with the version the pointer is at, by both reads', async () => {
    // Prepare: the pointer at version 8, an event naming version 9
    const table = 'spark_v2_position_deletes';
    const store = fixtureStore();
    const { at, catalog } = movablePointer(store, table);
    const changes = icebergChanges(() => catalog);
    at.file = metadataFiles(table)[1] as string;
    const cursor = (await changes.readState(store, table, 0)).cursor;
    at.file = metadataFiles(table)[8] as string;

    const outcome = (read: Promise<unknown>) =>
      read.then(
        () => undefined,
        (err: unknown) => err,
      );

    // Act
    const read = await outcome(changes.readChanges(store, table, cursor, 9));
    const state = await outcome(changes.readState(store, table, 9));
    const current = await changes.readChanges(store, table, cursor, 8);

    // Assess
    expect(read).toBeInstanceOf(CommitNotCurrentError);
    expect(read).toMatchObject({ current: 8, retryable: true });
    expect(state).toBeInstanceOf(CommitNotCurrentError);
    expect(current.kind).toBe('versions');
  });
});
