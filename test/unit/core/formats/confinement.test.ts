// The confinement rule as each format applies it to paths its metadata names (in memory, every request logged): a
// Delta live file or deletion vector outside the root refuses the table before any data file is read, a tombstone
// outside it is only noted; an Iceberg path climbing out of its location, or in another bucket, is refused, a
// partition field name is escaped as Iceberg does; and the delete and move paths re-check every key before sending.
import { describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { deltaChanges } from '../../../../functions/core/formats/delta/changes.js';
import { logPathOf } from '../../../../functions/core/formats/delta/commit.js';
import { deltaLake as deltaTable } from '../../../../functions/core/formats/delta/format.js';
import {
  partitionPath as deltaPartitionPath,
  planDeltaVacuum,
  readDeltaSnapshot,
  vacuumDeltaTable,
} from '../../../../functions/core/formats/delta/index.js';
import { deleteIcebergFiles } from '../../../../functions/core/formats/iceberg/expire.js';
import {
  PathResolver,
  partitionPath,
  planOrphans,
} from '../../../../functions/core/formats/iceberg/index.js';
import type { TableMetadata } from '../../../../functions/core/formats/iceberg/metadata.js';
import { relocationRefusal } from '../../../../functions/core/formats/iceberg/paths.js';
import { refuseUnsafePartition } from '../../../../functions/core/formats/iceberg/snapshot.js';
import { KeyOutsideTableError, keyRefusal } from '../../../../functions/core/keys.js';
import { executeTiering, type TieringPlan } from '../../../../functions/core/maintenance/tiering.js';
import {
  executeVacuum,
  lastLineRefusal,
  type VacuumPlan,
} from '../../../../functions/core/maintenance/vacuum.js';
import { parseTableConfigs } from '../../../../functions/core/table-config.js';
import type { ObjectInfo } from '../../../../functions/ports/object-store.js';
import { countingStore } from '../../../support/counting-store.js';
import {
  addAction,
  metaDataAction,
  protocolAction,
  removeAction,
  syntheticTable,
} from './delta/delta-test-kit.js';

const ROOT = 'events/';
const NOW = Date.UTC(2030, 0, 1);
const DAY = 86_400_000;

/** A Delta table whose version 1 adds `path` next to two well-behaved files, and another table's file beside it. */
async function deltaWith(path: string, extra: Record<string, unknown> = {}): Promise<MemoryObjectStore> {
  const store = await syntheticTable(ROOT, [
    [
      protocolAction(1, 2),
      metaDataAction(),
      addAction('day=1/a.parquet', '1'),
      addAction('day=1/b.parquet', '1'),
    ],
    [addAction(path, '1', extra)],
  ]);
  await store.put('other_table/secret.parquet', 'SECRET');
  return store;
}

async function refusalOf(attempt: Promise<unknown>): Promise<unknown> {
  return attempt.then(
    () => {
      throw new Error('expected a refusal');
    },
    (err: unknown) => err,
  );
}

describe('Delta: a live file outside the table root refuses the table before any data file is read', () => {
  it.each([
    ['a ".." path', '../other_table/secret.parquet', 'has a ".." segment'],
    ['its %2e%2e%2f form', '%2e%2e%2fother_table%2fsecret.parquet', 'has a ".." segment'],
    ['a doubly encoded form', '%252e%252e%252fother_table%252fsecret.parquet', 'once percent-decoded'],
    ['an absolute path without a scheme', '/abs/part-2.parquet', 'is an absolute path'],
  ])('%s', async (_what, path, reason) => {
    // Prepare
    const counted = countingStore(await deltaWith(path));

    // Act
    const err = await refusalOf(
      deltaTable.snapshot(counted.store, 'events', { now: NOW, readFooters: true }),
    );

    // Assess: refused by name with the reason; only the log was read
    expect(err).toBeInstanceOf(KeyOutsideTableError);
    expect((err as KeyOutsideTableError).path).toBe(path);
    expect((err as KeyOutsideTableError).reason).toContain(reason);
    expect((err as Error).message).toContain(
      'Table events/: a live add action of its Delta log names the file',
    );
    const touched = counted.requests().filter((r) => r.op !== 'list');
    expect(touched.length).toBeGreaterThan(0);
    for (const r of touched) expect(r.key.startsWith('events/_delta_log/')).toBe(true);
    expect(counted.requests().some((r) => r.op === 'put' || r.op === 'delete')).toBe(false);
  });

  it('a deletion vector whose random prefix climbs out refuses the table too', async () => {
    // Prepare: a `u` descriptor is "<prefix><20 Z85 characters of a UUID>"; the prefix is the writer's text
    const store = await syntheticTable(ROOT, [
      [
        protocolAction(3, 7, ['deletionVectors'], ['deletionVectors']),
        metaDataAction(),
        addAction('day=1/a.parquet', '1', {
          deletionVector: {
            storageType: 'u',
            pathOrInlineDv: '../../other_tablevBn[lx{q8@P<9BNH/isA',
            offset: 1,
            sizeInBytes: 36,
            cardinality: 1,
          },
        }),
      ],
    ]);

    // Act
    const err = await refusalOf(readDeltaSnapshot(store, 'events'));

    // Assess
    expect(err).toBeInstanceOf(KeyOutsideTableError);
    expect((err as KeyOutsideTableError).source).toBe(
      'the deletion vector of the live file day=1/a.parquet in its Delta log',
    );
    expect((err as KeyOutsideTableError).path).toMatch(/^\.\.\/\.\.\/other_table\/deletion_vector_.*\.bin$/);
  });

  it('a tombstone outside the root is only noted: VACUUM reads the table and deletes nothing outside it', async () => {
    // Prepare: the outside path was added and removed long ago
    const store = await syntheticTable(ROOT, [
      [protocolAction(1, 2), metaDataAction(), addAction('day=1/a.parquet', '1')],
      [addAction('../other_table/secret.parquet', '1')],
      [removeAction('../other_table/secret.parquet', NOW - 30 * DAY)],
    ]);
    await store.put('other_table/secret.parquet', 'SECRET');
    const counted = countingStore(store);

    // Act
    const snapshot = await readDeltaSnapshot(counted.store, 'events');
    const report = await vacuumDeltaTable(counted.store, 'events', { now: NOW, dryRun: false });

    // Assess
    expect(snapshot.tombstones).toMatchObject([
      { path: '../other_table/secret.parquet', key: undefined, refused: 'has a ".." segment' },
    ]);
    expect(report.notes.join('\n')).toContain('1 tombstone(s) name paths that leave the table root');
    expect(counted.requests().filter((r) => !r.key.startsWith('events/'))).toEqual([]);
    expect(await store.get('other_table/secret.parquet')).toEqual(new TextEncoder().encode('SECRET'));
  });

  it('VACUUM refuses listed keys with control characters by name and deletes none of them', async () => {
    // Prepare: two old untracked files named to rewrite the operator's terminal (L3)
    const store = await syntheticTable(ROOT, [[protocolAction(1, 2), metaDataAction()]]);
    const snapshot = await readDeltaSnapshot(store, 'events');
    const old = new Date(NOW - 30 * DAY);
    const listing: ObjectInfo[] = [
      'events/zz.parquet\x1b[2K\x1b[1A\x1b[2K\rnothing to delete here\x1b[8m',
      'events/nl\nFAKE LINE: 0 objects.parquet',
      'events/old.parquet',
    ].map((key) => ({ key, size: 10, etag: 'e', lastModified: old }));

    // Act
    const plan = planDeltaVacuum({ snapshot, listing, now: NOW, retentionCheck: true });

    // Assess
    expect(plan.delete.map((c) => c.key)).toEqual(['events/old.parquet']);
    expect(plan.kept['refused-key']).toBe(2);
    expect(plan.refused.map((r) => r.key)).toEqual([listing[0]?.key, listing[1]?.key]);
    for (const r of plan.refused) expect(r.reason).toContain('contains control characters');
  });

  it('partition values become one Spark-escaped segment each; one a decoding reader would climb out with is still refused', () => {
    // Prepare
    const hostile = [
      { name: 'day', value: '../../../pwn' },
      { name: 'k/../x', value: 'a\\..\\b\u001b' },
      { name: 'n', value: null },
    ];
    const benign = [{ name: 'day', value: 'a/../b' }];

    // Act
    const hostilePath = deltaPartitionPath(hostile);
    const benignPath = deltaPartitionPath(benign);

    // Assess: no raw separator, dot segment or control character survives the escaping
    expect(hostilePath).toBe('day=..%2F..%2F..%2Fpwn/k%2F..%2Fx=a%5C..%5Cb%1B/n=__HIVE_DEFAULT_PARTITION__');
    expect(keyRefusal('events', `events/${hostilePath}/part-0.parquet`)).toMatch(
      /^climbs out of the table root once percent-decoded/,
    );
    expect(benignPath).toBe('day=a%2F..%2Fb');
    expect(keyRefusal('events', `events/${benignPath}/part-0.parquet`)).toBeUndefined();
  });

  it('a commit writes a log path only for an output key under the root, and refuses any other by name', () => {
    // Prepare
    const hostile = [
      'events/../other_table/x.parquet',
      'other_table/x.parquet',
      'events/day=1/x\u001b[2J.parquet',
    ];

    // Act
    const good = logPathOf(ROOT, 'events/day=1/part 0.parquet');
    const refusals = hostile.map((key) => {
      try {
        return logPathOf(ROOT, key);
      } catch (err) {
        return err as Error;
      }
    });

    // Assess
    expect(good).toBe('day=1/part%200.parquet');
    for (const refusal of refusals) {
      expect(refusal).toMatchObject({ name: 'InvalidInputError' });
      expect((refusal as Error).message).toContain(
        'only files under the Delta table root events/ are committed',
      );
      expect((refusal as Error).message).not.toMatch(/\p{Cc}/u);
    }
  });

  it("the profiler counts a commit's path outside the root as no file of the table, and the rest as usual", async () => {
    // Prepare: version 1 adds one well-behaved file and one climbing into another table
    const store = await syntheticTable(ROOT, [
      [protocolAction(1, 2), metaDataAction(), addAction('day=1/a.parquet', '1')],
      [addAction('day=1/c.parquet', '1'), addAction('../other_table/secret.parquet', '1')],
    ]);
    await store.put('other_table/secret.parquet', 'SECRET');
    const counted = countingStore(store);
    const { cursor } = await deltaChanges.readState(counted.store, ROOT, 0);

    // Act
    const read = await deltaChanges.readChanges(counted.store, ROOT, cursor, 1);

    // Assess
    expect(read.kind).toBe('versions');
    const files = read.kind === 'versions' ? read.versions.flatMap((v) => v.files) : [];
    expect(files.map((f) => [f.kind, f.key])).toEqual([['added', 'events/day=1/c.parquet']]);
    expect(counted.requests().filter((r) => !r.key.startsWith('events/'))).toEqual([]);
  });
});

describe('Iceberg: paths below the location, in its bucket, confined to the root', () => {
  const paths = new PathResolver('s3://lake/tbl', 's3://lake/tbl', 'tbl');

  it('resolves a well-behaved path, and an s3a:// spelling of the same bucket', () => {
    expect(paths.key('s3://lake/tbl/data/x.parquet')).toBe('tbl/data/x.parquet');
    expect(paths.key('s3a://lake/tbl/data/x.parquet')).toBe('tbl/data/x.parquet');
  });

  it.each([
    ['s3://lake/tbl/../other_table/secret.parquet', 'has a ".." segment'],
    ['s3://lake/tbl/data/../../other_table/canary.txt', 'has a ".." segment'],
    ['s3://lake/tbl/%2e%2e/other_table/x.parquet', 'once percent-decoded'],
    ['s3://lake/tbl/data/x\n.parquet', 'contains control characters'],
  ])('refuses %j with KeyOutsideTableError', (path, reason) => {
    // Act
    let err: unknown;
    try {
      paths.key(path, 'manifest m.avro');
    } catch (e) {
      err = e;
    }

    // Assess
    expect(err).toBeInstanceOf(KeyOutsideTableError);
    expect((err as KeyOutsideTableError).reason).toContain(reason);
    expect((err as Error).message).toContain('Table s3://lake/tbl: manifest m.avro names the file');
  });

  it('never relocates a path of another bucket, even below the location’s path (L5)', () => {
    expect(() => paths.key('s3://other-bucket/tbl/data/x.parquet')).toThrow(
      'a file in another bucket or filesystem (s3://other-bucket) than the table location s3://lake/tbl',
    );
  });

  it('refuses metadata whose location is not where the table is configured, s3a:// aside (L5)', () => {
    expect(relocationRefusal('s3a://lake/tbl/', 's3://lake/tbl')).toBeUndefined();
    expect(relocationRefusal('s3://other-bucket/tbl', 's3://lake/tbl')).toContain(
      'the table location s3://other-bucket/tbl while it is configured at s3://lake/tbl',
    );
  });

  it('escapes partition field names as Iceberg does, and refuses a name that climbs out once decoded', () => {
    // Prepare: spec field "../../../pwn" (identity of a string column)
    const metadata = {
      specs: [
        { specId: 0, fields: [{ name: '../../../pwn', transform: 'identity', sourceId: 1, fieldId: 1000 }] },
      ],
      schemas: [{ schemaId: 0, fields: [{ id: 1, name: 'action', type: 'string', required: false }] }],
    } as unknown as TableMetadata;

    // Act
    const { path } = partitionPath(metadata, { specId: 0, values: [{ fieldId: 1000, value: 'view' }] });
    const refused = (() => {
      try {
        refuseUnsafePartition({ name: 's3://lake/tbl', tableRoot: 'tbl' }, `data/${path}`, 0);
      } catch (e) {
        return e;
      }
      return undefined;
    })();

    // Assess
    expect(path).toBe('..%2F..%2F..%2Fpwn=view');
    expect(refused).toBeInstanceOf(KeyOutsideTableError);
    expect((refused as Error).message).toContain(
      'the partition spec 0 (as its partition folder) names the file',
    );
  });

  it('deleteIcebergFiles never sends a key the rule refuses (the last line of expire and orphan removal)', async () => {
    // Prepare
    const store = new MemoryObjectStore();
    await store.put('tbl/data/old.parquet', 'x');
    const counted = countingStore(store);

    // Act
    const outcome = await deleteIcebergFiles(counted.store, 'tbl', [
      { key: 'tbl/../other_table/secret.parquet' },
      { key: 'other_table/canary.txt' },
      { key: 'tbl/data/old.parquet' },
    ]);

    // Assess
    expect(outcome.done.map((c) => c.key)).toEqual(['tbl/data/old.parquet']);
    expect(outcome.failed.map((f) => f.key)).toEqual([
      'tbl/../other_table/secret.parquet',
      'other_table/canary.txt',
    ]);
    expect(counted.requests()).toEqual([{ op: 'delete', key: 'tbl/data/old.parquet' }]);
  });

  it('remove_orphan_files refuses listed keys the rule refuses, by name', () => {
    // Prepare
    const old = new Date(NOW - 30 * DAY);
    const listing = ['tbl/data/ok.parquet', 'tbl/data/x\x1b[2K.parquet'].map((key) => ({
      key,
      size: 1,
      etag: 'e',
      lastModified: old,
    }));

    // Act
    const plan = planOrphans({
      tableRoot: 'tbl',
      referenced: new Set(),
      version: 1,
      partitionNames: [],
      listing,
      now: NOW,
      graceMs: DAY,
    });

    // Assess
    expect(plan.delete.map((c) => c.key)).toEqual(['tbl/data/ok.parquet']);
    expect(plan.refused).toEqual([
      {
        key: 'tbl/data/x\x1b[2K.parquet',
        reason:
          'refused: the key contains control characters; never deleted by remove_orphan_files; remove it by hand if it is debris',
      },
    ]);
  });
});

describe('vacuum and tiering: the last-line check before every delete or move', () => {
  const tables = parseTableConfigs([
    { name: 'events', bucket: 'lake', prefix: 'events' },
    { name: 'payroll', bucket: 'lake', prefix: 'hr/payroll' },
  ]);

  it.each([
    [{ kind: 'retired-version', key: 'events/d=1/a.parquet', table: 'events' }, undefined],
    [
      { kind: 'retired-version', key: 'hr/payroll/salaries.parquet', table: 'events' },
      'is outside the table root events/',
    ],
    [{ kind: 'debris', key: 'events/_temporary/../../hr/x', table: 'events' }, 'has a ".." segment'],
    [
      { kind: 'trash', key: '_lake-compactor/trash/r/g/events/a\x1b[2K', table: 'events' },
      'contains control characters',
    ],
    [{ kind: 'staging', key: '_lake-compactor/staging/r/g/out.parquet' }, undefined],
  ] as const)('vacuum judges %j', (candidate, reason) => {
    // Act
    const refused = lastLineRefusal({ bucket: 'lake', ...candidate }, tables);

    // Assess
    if (reason === undefined) expect(refused).toBeUndefined();
    else expect(refused).toContain(reason);
  });

  it('vacuum refuses a table candidate in another bucket than its table’s', () => {
    expect(
      lastLineRefusal(
        { kind: 'retired-version', bucket: 'other', key: 'events/a.parquet', table: 'events' },
        tables,
      ),
    ).toBe("the key is in bucket other, not in table events's bucket lake");
  });

  it('executeVacuum fails candidates the rule refuses without a request, and deletes the rest', async () => {
    // Prepare: a plan (as a forged journal could make it) naming another table's key and a traversal
    const store = new MemoryObjectStore();
    await store.put('events/_temporary/0/part-0.parquet', 'debris');
    await store.put('hr/payroll/salaries.parquet', 'SALARIES');
    const counted = countingStore(store);
    const candidate = (kind: 'debris' | 'trash', key: string) => ({
      kind,
      bucket: 'lake',
      key,
      size: 1,
      reason: 'old',
      table: 'events',
    });
    const plan: VacuumPlan = {
      dryRun: false,
      retentionHours: 168,
      candidates: [
        candidate('debris', 'hr/payroll/salaries.parquet'),
        candidate('trash', '_lake-compactor/trash/r/../../hr/payroll/salaries.parquet'),
        candidate('debris', 'events/_temporary/0/part-0.parquet'),
      ],
      kept: [],
      examined: 3,
      notes: [],
    };

    // Act
    const report = await executeVacuum({ storeFor: () => counted.store, tables }, plan);

    // Assess
    expect(report.failed.map((f) => f.message)).toEqual([
      'not deleted: the key is outside the table root events/',
      'not deleted: the key has a ".." segment',
    ]);
    expect(counted.requests()).toEqual([{ op: 'delete', key: 'events/_temporary/0/part-0.parquet' }]);
    expect(new TextDecoder().decode(await store.get('hr/payroll/salaries.parquet'))).toBe('SALARIES');
  });

  it('executeTiering fails a move the rule refuses without sending a copy', async () => {
    // Prepare
    const store = new MemoryObjectStore();
    await store.put('events/d=2020-01-01/a.parquet', 'x');
    const counted = countingStore(store);
    const move = (key: string) => ({
      bucket: 'lake',
      key,
      table: 'events',
      partition: 'd=2020-01-01',
      size: 1,
      etag: 'e',
      from: 'STANDARD',
      to: 'STANDARD_IA' as const,
      reason: 'old',
    });
    const plan: TieringPlan = {
      dryRun: false,
      moves: [move('events/d=2020-01-01/../../hr/payroll/salaries.parquet'), move('hr/payroll/x.parquet')],
      kept: {},
      skippedTables: [],
      examined: 2,
    };

    // Act
    const report = await executeTiering({ storeFor: () => counted.store, tables }, plan);

    // Assess
    expect(report.failed.map((f) => f.message)).toEqual([
      'not moved: the key has a ".." segment',
      'not moved: the key is outside the table root events/',
    ]);
    expect(counted.requests()).toEqual([]);
  });
});
