// Checkpoint-based reads equal JSON-replay reads at the same version: the fixture's classic checkpoint, multi-part
// and V2 (sidecar) checkpoints written by an independent writer (DuckDB), with commits after them; incomplete
// checkpoints, stale `_last_checkpoint` hints and log compaction files never change the answer.
import { describe, expect, it } from 'vitest';
import type { MemoryObjectStore } from '../../../../../functions/adapters/memory-object-store.js';
import { DeltaLogError, readDeltaSnapshot } from '../../../../../functions/core/formats/delta/index.js';
import {
  actionsParquet,
  addAction,
  asReference,
  commitKey,
  commitText,
  memoryCopy,
  metaDataAction,
  protocolAction,
  referenceReplay,
  referenceReplayOf,
  removeAction,
  syntheticTable,
} from './delta-test-kit.js';

const ROOT = 'lake/t/';
const LOG = `${ROOT}_delta_log/`;

/** Four commits: two appends, a replace of `a`, a null-partition add that removes `b`, one more add. */
const COMMITS: readonly (readonly object[])[] = [
  [
    protocolAction(1, 2),
    metaDataAction(),
    addAction('day=d1/a.parquet', 'd1'),
    addAction('day=d2/b.parquet', 'd2'),
  ],
  [
    addAction('day=d1/c.parquet', 'd1', { stats: '{"numRecords":3}' }),
    removeAction('day=d1/a.parquet', 1000),
  ],
  [addAction('day=__HIVE_DEFAULT_PARTITION__/d.parquet', null), removeAction('day=d2/b.parquet', 2000)],
  [addAction('day=d1/a2.parquet', 'd1')],
];

/** The state at version 3 as a checkpoint holds it (protocol, metadata, live adds, tombstones). */
const STATE_AT_3 = {
  head: [protocolAction(1, 2), metaDataAction()],
  adds: [
    addAction('day=d1/c.parquet', 'd1', { stats: '{"numRecords":3}' }),
    addAction('day=__HIVE_DEFAULT_PARTITION__/d.parquet', null),
    addAction('day=d1/a2.parquet', 'd1'),
  ],
  removes: [removeAction('day=d1/a.parquet', 1000), removeAction('day=d2/b.parquet', 2000)],
};

async function deleteCommits(store: MemoryObjectStore, upTo: number): Promise<void> {
  await store.deleteMany(Array.from({ length: upTo + 1 }, (_, v) => ({ key: commitKey(ROOT, v) })));
}

function checkpointName(version: number, part: number, parts: number): string {
  const v = String(version).padStart(20, '0');
  return parts === 1
    ? `${v}.checkpoint.parquet`
    : `${v}.checkpoint.${String(part).padStart(10, '0')}.${String(parts).padStart(10, '0')}.parquet`;
}

describe('Delta checkpoints', () => {
  it('simple_table_with_checkpoint: the version-10 checkpoint alone (commits 0–10 deleted) gives the JSON replay of 0–10', async () => {
    // Prepare
    const store = await memoryCopy('simple_table_with_checkpoint', ROOT);
    await deleteCommits(store, 10);
    const expected = referenceReplay('simple_table_with_checkpoint', 10);
    // Act
    const snapshot = await readDeltaSnapshot(store, ROOT);
    // Assess
    expect(snapshot.checkpoint?.version).toBe(10);
    expect(snapshot.version).toBe(10);
    expect(asReference(snapshot.files)).toEqual(expected);
    expect(snapshot.metadata.schema.fields.map((f) => f.name)).toEqual(['version']);
  });

  it('simple_table_with_checkpoint: a commit after the checkpoint is replayed on top of it', async () => {
    // Prepare: version 11 removes one checkpointed file and adds a new one
    const store = await memoryCopy('simple_table_with_checkpoint', ROOT);
    const gone = 'part-00000-1abe25d3-0da6-46c5-98c1-7a69872fd797-c000.snappy.parquet';
    const v11 = [
      { commitInfo: { timestamp: 2, operation: 'DELETE' } },
      removeAction(gone, 5000),
      {
        add: {
          path: 'part-new.parquet',
          partitionValues: {},
          size: 7,
          modificationTime: 2,
          dataChange: true,
        },
      },
    ];
    await store.put(commitKey(ROOT, 11), commitText(v11));
    const expectedPaths = referenceReplay('simple_table_with_checkpoint', 10)
      .map((f) => f.path)
      .filter((p) => p !== gone)
      .concat('part-new.parquet')
      .sort();
    // Act
    const snapshot = await readDeltaSnapshot(store, ROOT);
    // Assess
    expect(snapshot.checkpoint?.version).toBe(10);
    expect(snapshot.version).toBe(11);
    expect(snapshot.files.map((f) => f.path).sort()).toEqual(expectedPaths);
    expect(snapshot.tombstones.map((t) => [t.path, t.deletionTimestamp])).toEqual([[gone, 5000]]);
    expect(snapshot.commitInfo?.operation).toBe('DELETE');
  });

  it('a multi-part classic checkpoint (2 parts) with its commits deleted equals the JSON replay, and later commits apply', async () => {
    // Prepare
    const store = await syntheticTable(ROOT, COMMITS);
    await store.put(
      `${LOG}${checkpointName(3, 1, 2)}`,
      await actionsParquet([...STATE_AT_3.head, ...STATE_AT_3.adds.slice(0, 2)], 'checkpoint'),
    );
    await store.put(
      `${LOG}${checkpointName(3, 2, 2)}`,
      await actionsParquet([STATE_AT_3.adds[2] as object, ...STATE_AT_3.removes], 'checkpoint'),
    );
    await store.put(`${LOG}_last_checkpoint`, JSON.stringify({ version: 3, size: 7, parts: 2 }));
    const fromJson = await readDeltaSnapshot(store, ROOT, { version: 2 });
    await deleteCommits(store, 3);
    const v4 = [addAction('day=d2/e.parquet', 'd2'), removeAction('day=d1/c.parquet', 3000)];
    await store.put(commitKey(ROOT, 4), commitText(v4));
    // Act
    const at3 = await readDeltaSnapshot(store, ROOT, { version: 3 });
    const at4 = await readDeltaSnapshot(store, ROOT);
    // Assess
    expect(fromJson.checkpoint).toBeUndefined();
    expect(at3.checkpoint).toEqual({
      version: 3,
      files: [checkpointName(3, 1, 2), checkpointName(3, 2, 2)],
      v2: false,
    });
    expect(asReference(at3.files)).toEqual(referenceReplayOf(COMMITS));
    expect(at3.tombstones.map((t) => [t.path, t.deletionTimestamp])).toEqual([
      ['day=d1/a.parquet', 1000],
      ['day=d2/b.parquet', 2000],
    ]);
    expect(at3.files.find((f) => f.path === 'day=d1/c.parquet')?.stats).toEqual({ numRecords: 3 });
    expect(at3.files.find((f) => f.path.includes('__HIVE_DEFAULT_PARTITION__'))?.partitionValues).toEqual({
      day: null,
    });
    expect(asReference(at4.files)).toEqual(referenceReplayOf([...COMMITS, v4]));
  });

  it('a multi-part checkpoint missing a part is not used: the JSON commits are replayed instead', async () => {
    // Prepare: only part 1 of 2 made it (a writer died), and _last_checkpoint already names it
    const store = await syntheticTable(ROOT, COMMITS);
    await store.put(
      `${LOG}${checkpointName(3, 1, 2)}`,
      await actionsParquet([...STATE_AT_3.head, ...STATE_AT_3.adds.slice(0, 2)], 'checkpoint'),
    );
    await store.put(`${LOG}_last_checkpoint`, JSON.stringify({ version: 3, size: 7, parts: 2 }));
    // Act
    const snapshot = await readDeltaSnapshot(store, ROOT);
    // Assess
    expect(snapshot.checkpoint).toBeUndefined();
    expect(asReference(snapshot.files)).toEqual(referenceReplayOf(COMMITS));
  });

  it('a V2 checkpoint (JSON top level pointing to a Parquet sidecar) with its commits deleted equals the JSON replay', async () => {
    // Prepare
    const v2Protocol = protocolAction(3, 7, ['v2Checkpoint'], ['v2Checkpoint']);
    const commits = [[v2Protocol, ...(COMMITS[0]?.slice(1) ?? [])], ...COMMITS.slice(1)];
    const store = await syntheticTable(ROOT, commits);
    const sidecarName = '3a0d65cd-4056-49b8-937b-95f9e3ee90e5.parquet';
    const sidecar = await actionsParquet([...STATE_AT_3.adds, ...STATE_AT_3.removes], 'sidecar');
    await store.put(`${LOG}_sidecars/${sidecarName}`, sidecar);
    const topName = '00000000000000000003.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.json';
    await store.put(
      `${LOG}${topName}`,
      commitText([
        { checkpointMetadata: { version: 3 } },
        v2Protocol,
        metaDataAction(),
        { sidecar: { path: sidecarName, sizeInBytes: sidecar.length, modificationTime: 1 } },
      ]),
    );
    await deleteCommits(store, 3);
    // Act
    const snapshot = await readDeltaSnapshot(store, ROOT);
    // Assess
    expect(snapshot.checkpoint).toEqual({ version: 3, files: [topName], v2: true });
    expect(snapshot.protocol.readerFeatures).toEqual(['v2Checkpoint']);
    expect(asReference(snapshot.files)).toEqual(referenceReplayOf(commits));
    expect(snapshot.tombstones.map((t) => t.path)).toEqual(['day=d1/a.parquet', 'day=d2/b.parquet']);
  });

  it('a UUID-named V2 checkpoint in Parquet without sidecars (the state inline) equals the JSON replay', async () => {
    // Prepare
    const v2Protocol = protocolAction(3, 7, ['v2Checkpoint'], ['v2Checkpoint']);
    const commits = [[v2Protocol, ...(COMMITS[0]?.slice(1) ?? [])], ...COMMITS.slice(1)];
    const store = await syntheticTable(ROOT, commits);
    const name = '00000000000000000003.checkpoint.016ae953-37a9-438e-8683-9a9a4a79a395.parquet';
    await store.put(
      `${LOG}${name}`,
      await actionsParquet(
        [v2Protocol, metaDataAction(), ...STATE_AT_3.adds, ...STATE_AT_3.removes],
        'checkpoint',
      ),
    );
    await deleteCommits(store, 3);
    // Act
    const snapshot = await readDeltaSnapshot(store, ROOT);
    // Assess
    expect(snapshot.checkpoint).toEqual({ version: 3, files: [name], v2: true });
    expect(asReference(snapshot.files)).toEqual(referenceReplayOf(commits));
  });

  it('a sidecar holding anything but add and remove actions is refused, naming the sidecar and the action', async () => {
    // Prepare
    const v2Protocol = protocolAction(3, 7, ['v2Checkpoint'], ['v2Checkpoint']);
    const store = await syntheticTable(ROOT, [[v2Protocol, ...(COMMITS[0]?.slice(1) ?? [])]]);
    const sidecarName = '7d17ac10-5cc3-401b-bd1a-9c82dd2ea032.parquet';
    await store.put(
      `${LOG}_sidecars/${sidecarName}`,
      await actionsParquet([v2Protocol, ...STATE_AT_3.adds], 'checkpoint'),
    );
    await store.put(
      `${LOG}00000000000000000000.checkpoint.3ae45b72-24e1-865a-a211-34987ae02f2a.json`,
      commitText([
        { checkpointMetadata: { version: 0 } },
        v2Protocol,
        metaDataAction(),
        { sidecar: { path: sidecarName, sizeInBytes: 1, modificationTime: 1 } },
      ]),
    );
    // Act
    const read = readDeltaSnapshot(store, ROOT);
    // Assess
    await expect(read).rejects.toThrow(
      `sidecar ${LOG}_sidecars/${sidecarName} holds a protocol action; sidecars may hold only add and remove`,
    );
  });

  it('a stale or unreadable _last_checkpoint does not change the version read', async () => {
    // Prepare: the hint names a checkpoint that does not exist, then one that is garbage
    const store = await syntheticTable(ROOT, COMMITS);
    await store.put(`${LOG}_last_checkpoint`, JSON.stringify({ version: 2, size: 3 }));
    const withStaleHint = await readDeltaSnapshot(store, ROOT);
    await store.put(`${LOG}_last_checkpoint`, '{not json');
    // Act
    const withGarbageHint = await readDeltaSnapshot(store, ROOT);
    // Assess
    for (const snapshot of [withStaleHint, withGarbageHint]) {
      expect(snapshot.version).toBe(3);
      expect(asReference(snapshot.files)).toEqual(referenceReplayOf(COMMITS));
    }
  });

  it('a _last_checkpoint newer than every listed file means the listing lags: the read stops instead of going back in time', async () => {
    // Prepare
    const store = await syntheticTable(ROOT, COMMITS);
    await store.put(`${LOG}_last_checkpoint`, JSON.stringify({ version: 12, size: 40 }));
    // Act
    const read = readDeltaSnapshot(store, ROOT);
    // Assess
    await expect(read).rejects.toBeInstanceOf(DeltaLogError);
    await expect(read).rejects.toThrow(
      '_last_checkpoint names version 12 but the listing shows versions up to 3 only: the listing is incomplete (an eventually consistent store?); retry later',
    );
  });

  it('log compaction files are ignored: a contradicting x.y.compacted.json does not change the live set', async () => {
    // Prepare: a compaction of 1–2 that (wrongly) claims a file that no commit adds
    const store = await syntheticTable(ROOT, COMMITS);
    await store.put(
      `${LOG}00000000000000000001.00000000000000000002.compacted.json`,
      commitText([addAction('day=d9/phantom.parquet', 'd9')]),
    );
    // Act
    const snapshot = await readDeltaSnapshot(store, ROOT);
    // Assess
    expect(asReference(snapshot.files)).toEqual(referenceReplayOf(COMMITS));
  });

  it('a commit missing between the checkpoint and the version asked for is an error naming it', async () => {
    // Prepare
    const store = await syntheticTable(ROOT, COMMITS);
    await store.deleteMany([{ key: commitKey(ROOT, 2) }]);
    // Act
    const read = readDeltaSnapshot(store, ROOT);
    // Assess
    await expect(read).rejects.toBeInstanceOf(DeltaLogError);
    await expect(read).rejects.toThrow('commit 00000000000000000002.json is missing between 0 and 3');
  });

  it('a malformed commit line is an error naming the file and the line', async () => {
    // Prepare
    const store = await syntheticTable(ROOT, COMMITS);
    await store.put(
      commitKey(ROOT, 4),
      `${JSON.stringify(addAction('x.parquet', 'd1'))}\n{"add":{"path":"y.parquet"}}\n`,
    );
    // Act
    const read = readDeltaSnapshot(store, ROOT);
    // Assess
    await expect(read).rejects.toThrow(`${LOG}00000000000000000004.json line 2 is not a valid Delta action`);
  });
});
