// Action reconciliation as PROTOCOL.md defines it, on small synthetic logs: a logical file is (path, DV id), the
// order of actions inside one commit does not matter, a path has at most one live add, txns and domains reconcile.
import { describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../../../../functions/adapters/local-object-store.js';
import { DeltaLogError, readDeltaSnapshot } from '../../../../../functions/core/formats/delta/index.js';
import { DELTA_FIXTURES } from '../../../../support/fixtures.js';
import { addAction, metaDataAction, protocolAction, removeAction, syntheticTable } from './delta-test-kit.js';

const ROOT = 't/';
const DV = {
  storageType: 'i',
  pathOrInlineDv: 'wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L',
  sizeInBytes: 40,
  cardinality: 6,
};
const V0 = [
  protocolAction(3, 7, ['deletionVectors'], ['deletionVectors']),
  metaDataAction(),
  addAction('day=d1/a.parquet', 'd1'),
];

describe('Delta action reconciliation', () => {
  it('a DV update (remove without DV + add with DV) gives the same state whatever the order inside the commit', async () => {
    // Prepare
    const removeFirst = [
      removeAction('day=d1/a.parquet', 10),
      addAction('day=d1/a.parquet', 'd1', { deletionVector: DV }),
    ];
    const addFirst = [...removeFirst].reverse();
    const [s1, s2] = await Promise.all([
      syntheticTable(ROOT, [V0, removeFirst]),
      syntheticTable(ROOT, [V0, addFirst]),
    ]);
    // Act
    const [a, b] = await Promise.all([readDeltaSnapshot(s1, ROOT), readDeltaSnapshot(s2, ROOT)]);
    // Assess
    for (const snapshot of [a, b]) {
      expect(snapshot.files.map((f) => [f.path, f.deletionVector?.cardinality])).toEqual([
        ['day=d1/a.parquet', 6],
      ]);
      expect(snapshot.tombstones.map((t) => [t.path, t.deletionVector])).toEqual([
        ['day=d1/a.parquet', undefined],
      ]);
    }
  });

  it('a commit that adds and removes the same logical file is refused as invalid, naming the file and commit', async () => {
    // Prepare
    const store = await syntheticTable(ROOT, [
      V0,
      [addAction('day=d1/b.parquet', 'd1'), removeAction('day=d1/b.parquet', 5)],
    ]);
    // Act
    const read = readDeltaSnapshot(store, ROOT);
    // Assess
    await expect(read).rejects.toBeInstanceOf(DeltaLogError);
    await expect(read).rejects.toThrow(
      'commit 00000000000000000001.json both adds and removes the logical file day=d1/b.parquet, which the protocol does not allow in one version',
    );
  });

  it('a newer add of the same path with another DV supersedes the older one (one live add per path)', async () => {
    // Prepare: version 1 adds a DV to a.parquet without removing the DV-less entry (a sloppy writer)
    const store = await syntheticTable(ROOT, [
      V0,
      [addAction('day=d1/a.parquet', 'd1', { deletionVector: DV })],
    ]);
    // Act
    const snapshot = await readDeltaSnapshot(store, ROOT);
    // Assess
    expect(snapshot.files).toHaveLength(1);
    expect(snapshot.files[0]?.deletionVector).toEqual(DV);
  });

  it('re-adding a removed file makes it live again and drops its tombstone', async () => {
    // Prepare
    const store = await syntheticTable(ROOT, [
      V0,
      [removeAction('day=d1/a.parquet', 10)],
      [addAction('day=d1/a.parquet', 'd1')],
    ]);
    // Act
    const [v1, v2] = await Promise.all([1, 2].map((version) => readDeltaSnapshot(store, ROOT, { version })));
    // Assess
    expect(v1?.files).toEqual([]);
    expect(v1?.tombstones.map((t) => t.path)).toEqual(['day=d1/a.parquet']);
    expect(v2?.files.map((f) => f.path)).toEqual(['day=d1/a.parquet']);
    expect(v2?.tombstones).toEqual([]);
  });

  it('the latest txn per application and the live domains (removed ones dropped) are exposed; commitInfo only of the version read', async () => {
    // Prepare
    const store = await syntheticTable(ROOT, [
      [
        ...V0,
        { txn: { appId: 'stream-1', version: 7 } },
        { domainMetadata: { domain: 'app.x', configuration: '{"a":1}', removed: false } },
      ],
      [
        { commitInfo: { timestamp: 99, operation: 'STREAMING UPDATE', inCommitTimestamp: 98 } },
        { txn: { appId: 'stream-1', version: 8, lastUpdated: 5 } },
        { domainMetadata: { domain: 'app.x', configuration: '{"a":1}', removed: true } },
        { domainMetadata: { domain: 'app.y', configuration: '{}', removed: false } },
      ],
    ]);
    // Act
    const [v0, v1] = await Promise.all([0, 1].map((version) => readDeltaSnapshot(store, ROOT, { version })));
    // Assess
    expect(v0?.transactions).toEqual({ 'stream-1': { appId: 'stream-1', version: 7 } });
    expect(v0?.domains).toEqual({ 'app.x': '{"a":1}' });
    expect(v0?.commitInfo).toBeUndefined();
    expect(v1?.transactions).toEqual({ 'stream-1': { appId: 'stream-1', version: 8, lastUpdated: 5 } });
    expect(v1?.domains).toEqual({ 'app.y': '{}' });
    expect(v1?.commitInfo).toMatchObject({
      timestamp: 99,
      inCommitTimestamp: 98,
      operation: 'STREAMING UPDATE',
    });
  });

  it('delta.columnMapping.mode is not honoured on a protocol without column mapping (files use logical names)', async () => {
    // Prepare: the property is set, the protocol (1, 2) does not support the feature
    const store = await syntheticTable(ROOT, [
      [
        protocolAction(1, 2),
        metaDataAction({ 'delta.columnMapping.mode': 'name' }),
        addAction('day=d1/a.parquet', 'd1'),
      ],
    ]);
    // Act
    const snapshot = await readDeltaSnapshot(store, ROOT);
    // Assess
    expect(snapshot.metadata.columnMapping).toEqual({
      mode: 'none',
      columns: [
        { path: ['id'], physicalName: 'id' },
        { path: ['day'], physicalName: 'day' },
      ],
    });
    expect(snapshot.files[0]?.partitionValues).toEqual({ day: 'd1' });
  });

  for (const table of ['table_with_column_mapping', 'table_with_edge_timestamps']) {
    it(`${table}: file count and bytes agree with the writer's version checksum (00000000000000000000.crc)`, async () => {
      // Prepare: the .crc is written by the table's writer (Databricks), an oracle independent of this reader
      const store = new LocalObjectStore(DELTA_FIXTURES);
      const crc = JSON.parse(
        new TextDecoder().decode(await store.get(`${table}/_delta_log/00000000000000000000.crc`)),
      ) as { numFiles: number; tableSizeBytes: number };
      // Act
      const snapshot = await readDeltaSnapshot(store, table, { version: 0 });
      // Assess
      expect(snapshot.files).toHaveLength(crc.numFiles);
      expect(snapshot.files.reduce((sum, f) => sum + f.size, 0)).toBe(crc.tableSizeBytes);
    });
  }
});
