// Our checkpoints hold the table: for real fixtures (partitioned, null and special partition values, column
// mapping, deletion vectors) and synthetic logs (txns, tags, domains, table features), a read that starts from our
// checkpoint alone equals the read of the JSON commits; DuckDB reads the file independently; the layout matches
// Spark's; the write never replaces a checkpoint and never moves `_last_checkpoint` backwards.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parquetMetadata, parquetReadObjects, type SchemaElement } from 'hyparquet';
import { describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../../functions/adapters/memory-object-store.js';
import {
  checkpointDue,
  checkpointInterval,
  checkpointKey,
  DeltaCheckpointError,
  type DeltaSnapshot,
  lastCheckpointChecksum,
  readDeltaSnapshot,
  tombstoneRetentionMs,
  writeCheckpoint,
} from '../../../../../functions/core/formats/delta/index.js';
import { openDuckDb, sqlString } from '../../../../support/duckdb.js';
import { DELTA_FIXTURES } from '../../../../support/fixtures.js';
import {
  addAction,
  commitKey,
  commitText,
  memoryCopy,
  metaDataAction,
  protocolAction,
  removeAction,
  syntheticTable,
} from './delta-test-kit.js';

const ROOT = 'lake/t/';
const LOG = `${ROOT}_delta_log/`;
const HINT = `${LOG}_last_checkpoint`;

/** Everything of a snapshot that is table state (not how it was read). */
function state(s: DeltaSnapshot): Omit<DeltaSnapshot, 'checkpoint' | 'commitInfo'> {
  const { checkpoint: _c, commitInfo: _i, ...rest } = s;
  return rest;
}

/** Removes every checkpoint and `_last_checkpoint` of the copy, so reads replay the JSON commits. */
async function withoutCheckpoints(store: MemoryObjectStore): Promise<void> {
  const keys: { key: string }[] = [];
  for await (const o of store.listAll(LOG)) if (/checkpoint/.test(o.key)) keys.push({ key: o.key });
  await store.deleteMany(keys);
}

async function deleteCommits(store: MemoryObjectStore, upTo: number): Promise<void> {
  await store.deleteMany(Array.from({ length: upTo + 1 }, (_, v) => ({ key: commitKey(ROOT, v) })));
}

async function hint(store: MemoryObjectStore): Promise<Record<string, unknown>> {
  return JSON.parse(new TextDecoder().decode(await store.get(HINT))) as Record<string, unknown>;
}

function arrayBuffer(bytes: Uint8Array): ArrayBuffer {
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
}

describe('writeCheckpoint on real tables', () => {
  const hasFeature: readonly [string, (s: DeltaSnapshot) => boolean][] = [
    ['delta-0.8.0-partitioned', (s) => s.metadata.partitionColumns.length > 1],
    [
      'delta-0.8.0-null-partition',
      (s) => s.files.some((f) => Object.values(f.partitionValues).includes(null)),
    ],
    ['delta-0.8.0-special-partition', (s) => s.files.some((f) => /%/.test(f.path))],
    ['delta-2.2.0-partitioned-types', (s) => s.metadata.partitionColumns.length > 1],
    ['table_with_column_mapping', (s) => s.metadata.columnMapping.mode !== 'none'],
    ['table-with-dv-small', (s) => s.files.some((f) => f.deletionVector) && s.tombstones.length > 0],
    ['table_with_edge_timestamps', (s) => s.files.some((f) => f.statsJson !== undefined)],
    ['simple_table', (s) => s.tombstones.length > 0],
    ['simple_table_with_checkpoint', (s) => s.version === 10],
  ];

  it.each(hasFeature)(
    '%s: a read from our checkpoint alone (commits deleted) equals the read of the JSON commits',
    async (table, exercises) => {
      // Prepare: the table without any checkpoint, so the expected state comes from the JSON commits only
      const store = await memoryCopy(table, ROOT);
      await withoutCheckpoints(store);
      const expected = await readDeltaSnapshot(store, ROOT);
      expect(exercises(expected)).toBe(true);
      // Act
      const written = await writeCheckpoint(store, ROOT, expected.version);
      await deleteCommits(store, expected.version);
      const fromCheckpoint = await readDeltaSnapshot(store, ROOT);
      // Assess
      expect(written).toMatchObject({ key: checkpointKey(ROOT, expected.version), written: true });
      expect(fromCheckpoint.checkpoint?.version).toBe(expected.version);
      expect(state(fromCheckpoint)).toEqual(state(expected));
    },
  );

  it('checkpoint_with_partitions: the state delta-rs checkpointed (with stats_parsed) survives into our checkpoint', async () => {
    // Prepare: their checkpoint is at 2 (commit 0 is gone), so ours is written at 3, a commitInfo-only commit
    const store = await memoryCopy('checkpoint_with_partitions', ROOT);
    await store.put(commitKey(ROOT, 3), commitText([{ commitInfo: { timestamp: 1, operation: 'NOOP' } }]));
    const expected = await readDeltaSnapshot(store, ROOT);
    // Act
    await writeCheckpoint(store, ROOT, 3);
    await store.deleteMany([{ key: checkpointKey(ROOT, 2) }]);
    await deleteCommits(store, 3);
    const fromCheckpoint = await readDeltaSnapshot(store, ROOT);
    // Assess
    expect(expected.checkpoint?.version).toBe(2);
    expect(fromCheckpoint.checkpoint?.version).toBe(3);
    expect(state(fromCheckpoint)).toEqual(state(expected));
  });

  it('DuckDB reads our checkpoint of table-with-dv-small with the deletion vector and tags of the JSON log', async () => {
    // Prepare
    const table = 'table-with-dv-small';
    const store = await memoryCopy(table, ROOT);
    const commit = readFileSync(
      join(DELTA_FIXTURES, table, '_delta_log', '00000000000000000001.json'),
      'utf8',
    );
    const add = commit
      .split('\n')
      .filter((l) => l.includes('"add"'))
      .map((l) => (JSON.parse(l) as { add: Record<string, unknown> }).add)[0] as {
      path: string;
      tags: Record<string, string>;
      deletionVector: Record<string, unknown>;
    };
    const { key } = await writeCheckpoint(store, ROOT, 1);
    const dir = mkdtempSync(join(tmpdir(), 'delta-checkpoint-writer-'));
    const duck = await openDuckDb();
    try {
      const path = join(dir, 'checkpoint.parquet');
      writeFileSync(path, await store.get(key));
      // Act
      const rows = await duck.rows(
        `SELECT add.path AS path, map_entries(add.tags) AS tags, add.deletionVector AS dv FROM read_parquet(${sqlString(path)}) WHERE add IS NOT NULL`,
      );
      // Assess
      expect(rows).toHaveLength(1);
      const row = rows[0] as {
        path: string;
        tags: { key: string; value: string }[];
        dv: Record<string, unknown>;
      };
      expect(row.path).toBe(add.path);
      expect(Object.fromEntries(row.tags.map((t) => [t.key, t.value]))).toEqual(add.tags);
      expect({ ...row.dv, cardinality: Number(row.dv.cardinality) }).toEqual(add.deletionVector);
    } finally {
      duck.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('DuckDB reads a null partition value of our checkpoint as a null map value, not an absent key', async () => {
    // Prepare
    const store = await memoryCopy('delta-0.8.0-null-partition', ROOT);
    const expected = await readDeltaSnapshot(store, ROOT);
    const { key } = await writeCheckpoint(store, ROOT, expected.version);
    const dir = mkdtempSync(join(tmpdir(), 'delta-checkpoint-writer-'));
    const duck = await openDuckDb();
    try {
      const path = join(dir, 'checkpoint.parquet');
      writeFileSync(path, await store.get(key));
      // Act
      const rows = await duck.rows(
        `SELECT add.path AS path, map_entries(add.partitionValues) AS pv FROM read_parquet(${sqlString(path)}) WHERE add IS NOT NULL ORDER BY add.path`,
      );
      // Assess
      const read = rows.map((r) => {
        const { path, pv } = r as { path: string; pv: { key: string; value: string | null }[] };
        return { path, pv: Object.fromEntries(pv.map((e) => [e.key, e.value])) };
      });
      expect(read).toEqual(expected.files.map((f) => ({ path: f.path, pv: f.physicalPartitionValues })));
    } finally {
      duck.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('writeCheckpoint on synthetic logs', () => {
  const DV = {
    storageType: 'i',
    pathOrInlineDv: 'wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L',
    sizeInBytes: 40,
    cardinality: 6,
  };
  const COMMITS: readonly (readonly object[])[] = [
    [
      protocolAction(
        3,
        7,
        ['deletionVectors', 'v2Checkpoint'],
        ['deletionVectors', 'v2Checkpoint', 'domainMetadata'],
      ),
      {
        metaData: {
          id: 'synthetic',
          name: 'events',
          description: 'a table with everything a checkpoint carries',
          format: { provider: 'parquet', options: { compression: 'snappy' } },
          schemaString: JSON.stringify({
            type: 'struct',
            fields: [
              { name: 'id', type: 'long', nullable: true, metadata: {} },
              { name: 'day', type: 'string', nullable: true, metadata: {} },
            ],
          }),
          partitionColumns: ['day'],
          configuration: { 'delta.enableDeletionVectors': 'true', 'delta.checkpointInterval': '5' },
          createdTime: 7,
        },
      },
      { txn: { appId: 'stream-a', version: 4, lastUpdated: 100 } },
      { domainMetadata: { domain: 'delta.clustering', configuration: '{"x":1}', removed: false } },
      { domainMetadata: { domain: 'app.gone', configuration: '{}', removed: false } },
      addAction('day=d1/a.parquet', 'd1', { stats: '{"numRecords":3}', tags: { owner: 'x', empty: null } }),
      addAction('day=__HIVE_DEFAULT_PARTITION__/b.parquet', null, { tags: {} }),
      addAction('day=d2/c.parquet', 'd2'),
    ],
    [
      { txn: { appId: 'stream-a', version: 5 } },
      { txn: { appId: 'stream-b', version: 1, lastUpdated: 200 } },
      { domainMetadata: { domain: 'app.gone', configuration: '{}', removed: true } },
      removeAction('day=d2/c.parquet', 5000, {
        extendedFileMetadata: true,
        partitionValues: { day: 'd2' },
        size: 100,
      }),
      removeAction('day=d1/a.parquet', 6000, {
        extendedFileMetadata: true,
        partitionValues: { day: 'd1' },
        size: 100,
      }),
      addAction('day=d1/a.parquet', 'd1', {
        stats: '{"numRecords":3}',
        deletionVector: DV,
        baseRowId: 10,
        defaultRowCommitVersion: 1,
      }),
    ],
  ];

  it('txns, live domains, tags (empty, null values), DVs, row ids, tombstones and features come back from our checkpoint alone', async () => {
    // Prepare
    const store = await syntheticTable(ROOT, COMMITS);
    const expected = await readDeltaSnapshot(store, ROOT);
    // Act
    await writeCheckpoint(store, ROOT, 1);
    await deleteCommits(store, 1);
    const fromCheckpoint = await readDeltaSnapshot(store, ROOT);
    // Assess
    expect(Object.keys(expected.transactions)).toHaveLength(2);
    expect(Object.keys(expected.domains)).toEqual(['delta.clustering']);
    expect(fromCheckpoint.checkpoint?.version).toBe(1);
    expect(state(fromCheckpoint)).toEqual(state(expected));
  });

  it('a table with the v2Checkpoint feature gets exactly one checkpointMetadata row naming the version', async () => {
    // Prepare
    const store = await syntheticTable(ROOT, COMMITS);
    // Act
    const { key } = await writeCheckpoint(store, ROOT, 1);
    const rows = await parquetReadObjects({ file: arrayBuffer(await store.get(key)) });
    // Assess
    const meta = rows.flatMap((r) => (r.checkpointMetadata ? [r.checkpointMetadata] : []));
    expect(meta).toEqual([{ version: 1n, tags: null }]);
  });

  it('a table without table features gets null readerFeatures/writerFeatures and no V2 or domain columns', async () => {
    // Prepare
    const store = await syntheticTable(ROOT, [
      [protocolAction(1, 2), metaDataAction(), addAction('day=d1/a.parquet', 'd1')],
    ]);
    // Act
    const { key } = await writeCheckpoint(store, ROOT, 0);
    const bytes = arrayBuffer(await store.get(key));
    const rows = await parquetReadObjects({ file: bytes });
    // Assess
    const topLevel = topLevelColumns(parquetMetadata(bytes).schema);
    expect(topLevel).toEqual(['txn', 'add', 'remove', 'metaData', 'protocol']);
    const protocol = rows.flatMap((r) => (r.protocol ? [r.protocol] : []));
    expect(protocol).toEqual([
      { minReaderVersion: 1, minWriterVersion: 2, readerFeatures: null, writerFeatures: null },
    ]);
  });

  it('with a clock, tombstones older than delta.deletedFileRetentionDuration are left out; without one all are kept', async () => {
    // Prepare: two removes a day apart, a retention of one day, and a clock just after the second one
    const day = 24 * 3600 * 1000;
    const old = 10 * day;
    const recent = old + day + 1;
    const commits = [
      [
        protocolAction(1, 2),
        metaDataAction({ 'delta.deletedFileRetentionDuration': 'interval 1 day' }),
        addAction('day=d1/old.parquet', 'd1'),
        addAction('day=d1/recent.parquet', 'd1'),
      ],
      [removeAction('day=d1/old.parquet', old), removeAction('day=d1/recent.parquet', recent)],
    ];
    const withClock = await syntheticTable(ROOT, commits);
    const withoutClock = await syntheticTable(ROOT, commits);
    // Act
    await writeCheckpoint(withClock, ROOT, 1, { now: recent + 1 });
    await writeCheckpoint(withoutClock, ROOT, 1);
    await deleteCommits(withClock, 1);
    await deleteCommits(withoutClock, 1);
    // Assess
    const paths = async (s: MemoryObjectStore): Promise<string[]> =>
      (await readDeltaSnapshot(s, ROOT)).tombstones.map((t) => t.path);
    expect(await paths(withClock)).toEqual(['day=d1/recent.parquet']);
    expect(await paths(withoutClock)).toEqual(['day=d1/old.parquet', 'day=d1/recent.parquet']);
  });

  it('refuses a table that sets delta.checkpoint.writeStatsAsStruct=true and writes nothing', async () => {
    // Prepare
    const store = await syntheticTable(ROOT, [
      [
        protocolAction(1, 2),
        metaDataAction({ 'delta.checkpoint.writeStatsAsStruct': 'true' }),
        addAction('day=d1/a.parquet', 'd1'),
      ],
    ]);
    // Act
    const attempt = writeCheckpoint(store, ROOT, 0);
    // Assess
    await expect(attempt).rejects.toBeInstanceOf(DeltaCheckpointError);
    const keys: string[] = [];
    for await (const o of store.listAll(LOG)) keys.push(o.key);
    expect(keys).toEqual([commitKey(ROOT, 0)]);
  });
});

describe('the checkpoint layout next to Spark’s', () => {
  /** Every leaf as `path: repetition/…/repetition type`, e.g. `add.partitionValues.key_value.key: O/O/R/Q BYTE_ARRAY UTF8`. */
  function leaves(schema: readonly SchemaElement[]): Map<string, string> {
    const out = new Map<string, string>();
    let i = 1;
    const walk = (path: string[], reps: string[]): void => {
      const e = schema[i++] as SchemaElement;
      const p = [...path, e.name];
      const r = [...reps, (e.repetition_type ?? 'REQUIRED').slice(0, 1)];
      if (e.num_children) {
        for (let c = 0; c < e.num_children; c += 1) walk(p, r);
      } else {
        out.set(p.join('.'), `${r.join('/')} ${e.type} ${e.converted_type ?? ''}`.trim());
      }
    };
    const root = schema[0] as SchemaElement;
    for (let c = 0; c < (root.num_children ?? 0); c += 1) walk([], []);
    return out;
  }

  it('every column Spark 3.0 wrote at version 10 has the same nesting, repetition and type in ours, except what the protocol leaves out', async () => {
    // Prepare: Spark's checkpoint of simple_table_with_checkpoint, then ours of the same version
    const store = await memoryCopy('simple_table_with_checkpoint', ROOT);
    const spark = arrayBuffer(await store.get(checkpointKey(ROOT, 10)));
    await withoutCheckpoints(store);
    // Act
    const { key } = await writeCheckpoint(store, ROOT, 10);
    const ours = leaves(parquetMetadata(arrayBuffer(await store.get(key))).schema);
    const theirs = leaves(parquetMetadata(spark).schema);
    // Assess: Spark 3.0 also wrote `cdc` and `remove.tags`, which PROTOCOL.md keeps out of checkpoints
    const sparkOnly = [...theirs.keys()].filter((k) => !ours.has(k));
    expect(sparkOnly.every((k) => k.startsWith('cdc.') || k.startsWith('remove.tags.'))).toBe(true);
    for (const [path, shape] of theirs)
      if (ours.has(path)) expect([path, ours.get(path)]).toEqual([path, shape]);
    const oursOnly = [...ours.keys()].filter((k) => !theirs.has(k));
    expect(oursOnly.every((k) => /deletionVector|baseRowId|defaultRowCommitVersion|Features/.test(k))).toBe(
      true,
    );
  });
});

describe('_last_checkpoint and put-if-absent', () => {
  it('an existing checkpoint of the version is kept byte for byte and returned, and a hint naming it stays', async () => {
    // Prepare: Spark's checkpoint at 10, and its _last_checkpoint naming 10
    const store = await memoryCopy('simple_table_with_checkpoint', ROOT);
    const before = await store.get(checkpointKey(ROOT, 10));
    const hintBefore = await store.get(HINT);
    // Act
    const result = await writeCheckpoint(store, ROOT, 10);
    // Assess
    expect(result).toMatchObject({ written: false, size: before.byteLength, lastCheckpointUpdated: false });
    expect(result.actions).toBe(Number(parquetMetadata(arrayBuffer(before)).num_rows));
    expect(await store.get(checkpointKey(ROOT, 10))).toEqual(before);
    expect(await store.get(HINT)).toEqual(hintBefore);
  });

  it('the hint names the new checkpoint with its rows, bytes, adds and a valid checksum, and a later older checkpoint leaves it', async () => {
    // Prepare
    const store = await memoryCopy('simple_table', ROOT);
    const latest = await readDeltaSnapshot(store, ROOT);
    // Act
    const newest = await writeCheckpoint(store, ROOT, latest.version);
    const older = await writeCheckpoint(store, ROOT, latest.version - 2);
    // Assess
    const bytes = await store.get(newest.key);
    const written = await hint(store);
    expect(written).toEqual({
      version: latest.version,
      size: Number(parquetMetadata(arrayBuffer(bytes)).num_rows),
      sizeInBytes: bytes.byteLength,
      numOfAddFiles: latest.files.length,
      checksum: lastCheckpointChecksum(written),
    });
    expect(older).toMatchObject({ written: true, lastCheckpointUpdated: false });
    expect(await store.head(older.key)).toBeDefined();
  });

  it('a checkpoint whose hint was never written (a crash in between) gets its hint on the next attempt', async () => {
    // Prepare
    const store = await memoryCopy('simple_table', ROOT);
    const first = await writeCheckpoint(store, ROOT, 3);
    await store.deleteMany([{ key: HINT }]);
    // Act
    const again = await writeCheckpoint(store, ROOT, 3);
    // Assess
    expect(again).toMatchObject({
      written: false,
      size: first.size,
      actions: first.actions,
      lastCheckpointUpdated: true,
    });
    expect(await hint(store)).toMatchObject({ version: 3, size: first.actions, sizeInBytes: first.size });
  });

  it('a newer hint written by another writer between our read and our write is not overwritten', async () => {
    // Prepare: a hint at 1; while we move it to 2, another writer moves it to 4 first
    let raced = false;
    const store = new MemoryObjectStore({
      now: () => new Date(0),
      interceptor: async (method, key) => {
        if (method === 'put' && key === HINT && !raced && ready) {
          raced = true;
          await store.put(HINT, JSON.stringify({ version: 4, size: 1 }));
        }
      },
    });
    let ready = false;
    const source = await memoryCopy('simple_table', ROOT);
    for await (const o of source.listAll(ROOT)) await store.put(o.key, await source.get(o.key));
    await writeCheckpoint(store, ROOT, 1);
    ready = true;
    // Act
    const result = await writeCheckpoint(store, ROOT, 2);
    // Assess
    expect(raced).toBe(true);
    expect(result.lastCheckpointUpdated).toBe(false);
    expect((await hint(store)).version).toBe(4);
  });

  it('computes the checksum of PROTOCOL.md’s own example (JSON checksum section)', () => {
    // Prepare: the example and its published checksum, verbatim from the protocol
    const example = JSON.parse(
      '{"k0":"\'v 0\'", "checksum": "adsaskfljadfkjadfkj", "k1":{"k2": 2, "k3": ["v3", [1, 2], {"k4": "v4", "k5": ["v5", "v6", "v7"]}]}}',
    ) as Record<string, unknown>;
    // Act
    const checksum = lastCheckpointChecksum(example);
    // Assess
    expect(checksum).toBe('6a92d155a59bf2eecbd4b4ec7fd1f875');
  });
});

describe('checkpointDue and the table properties it reads', () => {
  it('is due at every positive multiple of delta.checkpointInterval (10 by default), never at version 0', () => {
    // Prepare
    const versions = Array.from({ length: 31 }, (_, v) => v);
    // Act
    const byDefault = versions.filter((v) => checkpointDue(v, {}));
    const everyThree = versions.filter((v) => checkpointDue(v, { 'delta.checkpointInterval': '3' }));
    // Assess
    expect(byDefault).toEqual(versions.filter((v) => v > 0 && v % 10 === 0));
    expect(everyThree).toEqual(versions.filter((v) => v > 0 && v % 3 === 0));
  });

  it('falls back to the default interval for a value Delta would have refused', () => {
    // Prepare
    const invalid = ['0', '-5', '2.5', 'ten', ''];
    // Act
    const intervals = invalid.map((v) => checkpointInterval({ 'delta.checkpointInterval': v }));
    // Assess
    expect(intervals).toEqual(invalid.map(() => checkpointInterval({})));
  });

  it('reads Spark interval texts for the tombstone retention, and nothing it cannot read', () => {
    // Prepare
    const hour = 3600 * 1000;
    // Act
    const read = (text: string): number | undefined =>
      tombstoneRetentionMs({ 'delta.deletedFileRetentionDuration': text });
    // Assess
    expect(read('interval 1 week')).toBe(168 * hour);
    expect(read('interval 2 days 12 hours')).toBe(60 * hour);
    expect(read('30 minutes')).toBe(hour / 2);
    expect(read('interval 1 fortnight')).toBeUndefined();
    expect(read('interval')).toBeUndefined();
    expect(tombstoneRetentionMs({})).toBe(read('interval 1 week'));
  });
});

function topLevelColumns(schema: readonly SchemaElement[]): string[] {
  const names: string[] = [];
  let i = 1;
  const skip = (): void => {
    const e = schema[i++] as SchemaElement;
    for (let c = 0; c < (e.num_children ?? 0); c += 1) skip();
  };
  while (i < schema.length) {
    names.push((schema[i] as SchemaElement).name);
    skip();
  }
  return names;
}
