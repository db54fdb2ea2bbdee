// The Hudi reader on every vendored table: the live file slices its timeline defines (each expectation written out
// from the fixture's own files), the rows DuckDB reads from the live base files against the rows hudi-rs's own tests
// expect, the snapshot the TableFormat port gets, and every refusal by name with every byte unchanged.
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../../../../functions/adapters/local-object-store.js';
import { decodeContainer, encodeContainer } from '../../../../../functions/core/avro/container.js';
import {
  HudiBaseFileFormatError,
  HudiBootstrapError,
  HudiBucketIndexError,
  HudiMetadataTableError,
  HudiPendingRollbackError,
  HudiSchemaOnReadError,
  HudiTimelineError,
  HudiVirtualKeysError,
} from '../../../../../functions/core/formats/hudi/errors.js';
import { readHudiTable, toTableSnapshot } from '../../../../../functions/core/formats/hudi/table-state.js';
import { type DuckDb, openDuckDb, sqlString } from '../../../../support/duckdb.js';
import { HUDI_FIXTURES, HUDI_TABLES } from '../../../../support/fixtures.js';
import { folderContentSnapshot } from '../../../../support/folder-snapshot.js';

const fixtures = new LocalObjectStore(HUDI_FIXTURES);

/** A live slice as the expectations spell it: partition, base file name, log file names. */
type Slice = [partition: string, base: string, logs?: string[]];

/**
 * Every table's live slices at its latest completed instant, read off the fixture's files and timeline by hand (see
 * test/fixtures/NOTICE.md for what each table shows).
 */
const EXPECTED: Readonly<Record<string, { slices: Slice[]; refusedWith?: new (...a: never[]) => Error }>> = {
  // Two commits; partition byteField=10/shortField=300's group a22e8257 has a base of each: only the newer is live.
  cow_v6_complexkeygen_hivestyle: {
    slices: [
      [
        'byteField=10/shortField=300',
        'a22e8257-e249-45e9-ba46-115bc85adcba-0_0-161-223_20240418173235694.parquet',
      ],
      [
        'byteField=20/shortField=100',
        'bb7c3a45-387f-490d-aab2-981c3f1a8ada-0_0-140-198_20240418173213674.parquet',
      ],
      [
        'byteField=30/shortField=100',
        '4668e35e-bff8-4be9-9ff2-e7fb17ecb1a7-0_1-161-224_20240418173235694.parquet',
      ],
    ],
  },
  // One commit, three base files, refused for virtual keys (read here with inspectOnly).
  cow_v6_simplekeygen_hivestyle_no_metafields: {
    refusedWith: HudiVirtualKeysError,
    slices: [
      ['byteField=10', '1ebfc908-fcc7-4229-b368-664440f7663c-0_0-35-78_20240426205419518.parquet'],
      ['byteField=20', '3345afaa-7014-49b3-bfd7-8b89385e6c87-0_1-35-79_20240426205419518.parquet'],
      ['byteField=30', '6b107d08-e901-4d2c-96e0-d0ae9d2cbd94-0_2-35-80_20240426205419518.parquet'],
    ],
  },
  // 4 base files; group 97de74b1 (partition 10) has 2 slices, only the newer is live: 3 live files.
  cow_v6_simplekeygen_nonhivestyle: {
    slices: [
      ['10', '97de74b1-2a8e-4bb7-874c-0a74e1f42a77-0_0-119-166_20240418172804498.parquet'],
      ['20', '76e0556b-390d-4249-b7ad-9059e2bc2cbd-0_0-98-141_20240418172802262.parquet'],
      ['30', '6db57019-98ee-480e-8eb1-fb3de48e1c24-0_1-119-167_20240418172804498.parquet'],
    ],
  },
  // The INSERT_OVERWRITE_TABLE replacecommit 20240707001303088 replaces groups 4f2685a3, 88163884 and d398fae1 and
  // writes ebcb261d in partition 30: one live file of five.
  cow_v6_simplekeygen_nonhivestyle_overwritetable: {
    slices: [['30', 'ebcb261d-62d3-4895-90ec-5b3c9622dff4-0_0-111-154_20240707001303088.parquet']],
  },
  // The 1.x timeline: group 7b0ea4f9 has two slices, the newer (commit 20250713011316909) is live.
  cow_v8_simplekeygen_nonhivestyle: {
    slices: [
      ['10', '7b0ea4f9-3768-4e87-b12c-8d33efd22b55-0_0-136-193_20250713011316909.parquet'],
      ['20', '352d465e-0bef-4a4c-b558-3079e02459ed-0_0-115-168_20250713011315930.parquet'],
      ['30', '6653c109-b3c0-470e-8ad4-f45947474a34-0_1-136-194_20250713011316909.parquet'],
    ],
  },
  // Metadata table (refused). An insert_overwrite (20260307162450901) replaces 2578f9c2 and 68aaee55 in eu; the
  // clustering 20260307162454799 replaces 07838327, 7dcb7583, d28b4196, a4ab4ec1 and c7bbe63e into e1d239c0,
  // 04a47f87 and 6d0f5b25; the last commit adds a7c7d197 and cfac0ac4.
  cow_v9_txns_simple_meta: {
    refusedWith: HudiMetadataTableError,
    slices: [
      ['region=apac', 'e1d239c0-049d-43de-a138-e1915a3e29a7-0_0-235-586_20260307162454799.parquet'],
      ['region=eu', '04a47f87-3cc6-4c8b-a583-df8602967032-0_1-235-587_20260307162454799.parquet'],
      ['region=eu', 'a7c7d197-4f4c-4552-9b08-b19ad21297b3-0_0-249-645_20260307162456179.parquet'],
      ['region=us', '6d0f5b25-276e-4c1b-8ed0-c74a7d393fc9-0_2-235-588_20260307162454799.parquet'],
      ['region=us', 'cfac0ac4-94d0-48b8-9af4-f0dbc7acfe0c-0_1-249-646_20260307162456179.parquet'],
    ],
  },
  // v6 MoR, unpartitioned: one base and its three logs (log.1 holds the blocks of the rolled-back deltacommit
  // 20250126040826878, log.2 the rollback command block; the log reader drops the cancelled blocks). The rolled-back
  // write's base file was deleted by the rollback.
  mor_v6_nonpartitioned_rollback: {
    slices: [
      [
        '',
        '0712b9f9-d2d5-4cae-bcf4-8fd7146af503-0_0-13-23_20250126040823628.parquet',
        [
          '.0712b9f9-d2d5-4cae-bcf4-8fd7146af503-0_20250126040823628.log.1_0-33-43',
          '.0712b9f9-d2d5-4cae-bcf4-8fd7146af503-0_20250126040823628.log.2_1-0-1',
          '.0712b9f9-d2d5-4cae-bcf4-8fd7146af503-0_20250126040823628.log.3_0-13-9',
        ],
      ],
    ],
  },
  // v6 MoR: three base files of the first deltacommit; the update went to a log of san_francisco's slice.
  mor_v6_trips_8i1u: {
    slices: [
      ['city=chennai', '84e82649-b1ee-4a25-a316-17cc6872616b-0_2-13-62_20250331030642808.parquet'],
      [
        'city=san_francisco',
        'd0304c53-6fd2-4b7a-a9d6-5ff632f79224-0_0-13-60_20250331030642808.parquet',
        ['.d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0_20250331030642808.log.1_0-26-85'],
      ],
      ['city=sao_paulo', '061498b3-e8ef-42f9-9d17-a509b2779501-0_1-13-61_20250331030642808.parquet'],
    ],
  },
  // v8 MoR, metadata table (refused). Compaction 20251220210129235 (completed 129883) rewrote all three groups: the
  // logs completed before it belong to the older slices; only sao_paulo's deltacommit 20251220210130911 (completed
  // 131755, after the compaction's instant) joins the live slice.
  mor_v8_trips_8i3u1d: {
    refusedWith: HudiMetadataTableError,
    slices: [
      ['city=chennai', '6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0_0-1112-3190_20251220210129235.parquet'],
      ['city=san_francisco', '036ded81-9ed4-479f-bcea-7145dfa0079b-0_1-1112-3191_20251220210129235.parquet'],
      [
        'city=sao_paulo',
        '8aa68f7e-afd6-4c94-b86c-8a886552e08d-0_2-1112-3192_20251220210129235.parquet',
        ['.8aa68f7e-afd6-4c94-b86c-8a886552e08d-0_20251220210130911.log.1_0-1139-3316'],
      ],
    ],
  },
  // v9 MoR without a metadata table: an insert_overwrite (20260307135837782) replaces eu's be8660fe and c06fe141
  // (and c06fe141's logs); a compaction then a clustering (20260307135840454) replace the rest into db3ba9f9,
  // b151ed41 and 4625f1ea; the last deltacommit inserts c1690aed and 7e0f3c9f.
  mor_v9_txns_simple_nometa: {
    slices: [
      ['region=apac', 'db3ba9f9-d2c3-4bf4-a2e7-03ea74dd032f-0_0-66-139_20260307135840454.parquet'],
      ['region=eu', 'b151ed41-bdc8-4b95-a733-69266ed89edd-0_1-66-140_20260307135840454.parquet'],
      ['region=eu', 'c1690aed-ab5b-4e4a-aa70-d8de21cdf5df-0_0-70-148_20260307135840975.parquet'],
      ['region=us', '4625f1ea-a436-4846-a24a-1328e1c036a6-0_2-66-141_20260307135840454.parquet'],
      ['region=us', '7e0f3c9f-f99a-439a-9e9b-e504f87f9ae5-0_1-70-149_20260307135840975.parquet'],
    ],
  },
};

describe('live file slices of every vendored Hudi table', () => {
  it('has an expectation for every vendored table', () => {
    // Assess
    expect(Object.keys(EXPECTED).sort()).toEqual([...HUDI_TABLES]);
  });

  it.each(HUDI_TABLES)('%s: the live slices are exactly those its timeline defines', async (table) => {
    // Prepare
    const expected = EXPECTED[table];
    if (expected === undefined) throw new Error(`no expectation for ${table}`);

    // Act
    const state = await readHudiTable(fixtures, table, { inspectOnly: expected.refusedWith !== undefined });
    const slices: Slice[] = state.partitions.flatMap((p) =>
      p.liveSlices.map((s): Slice => {
        const logs = s.logFiles.map((l) => l.name);
        return logs.length === 0
          ? [p.partition, s.baseFile?.name ?? '']
          : [p.partition, s.baseFile?.name ?? '', logs];
      }),
    );

    // Assess
    expect(slices).toEqual(expected.slices);
    const live = new Set(
      state.partitions.flatMap((p) =>
        p.liveSlices.flatMap((s) => [s.baseFile?.key, ...s.logFiles.map((l) => l.key)]),
      ),
    );
    expect(state.ignored.filter((i) => live.has(i.key))).toEqual([]);
  });

  it.each(HUDI_TABLES.filter((t) => EXPECTED[t]?.refusedWith !== undefined))(
    '%s is refused by name, every byte unchanged',
    async (table) => {
      // Prepare
      const before = await folderContentSnapshot(join(HUDI_FIXTURES, table));

      // Act
      const reading = readHudiTable(fixtures, table);

      // Assess
      await expect(reading).rejects.toThrow(EXPECTED[table]?.refusedWith as new () => Error);
      expect(await folderContentSnapshot(join(HUDI_FIXTURES, table))).toEqual(before);
    },
  );

  it('says what the operator must do about a metadata table, as the notes §6 say it', async () => {
    // Act
    const reading = readHudiTable(fixtures, 'mor_v8_trips_8i3u1d');

    // Assess
    await expect(reading).rejects.toThrow(/run a Hudi writer once with hoodie\.metadata\.enable=false/);
    await expect(reading).rejects.toThrow(/keep hoodie\.metadata\.enable=false on every writer/);
    await expect(reading).rejects.toThrow(/re-creates it/);
  });
});

describe('the snapshot the TableFormat port gets', () => {
  it('plans the live base files of base-only groups and sets aside a slice with logs, older slices and markers', async () => {
    // Act
    const snapshot = toTableSnapshot(await readHudiTable(fixtures, 'mor_v6_trips_8i1u'), 1000);

    // Assess
    expect(snapshot.partitions.map((p) => [p.partition, p.values, p.files.map((f) => f.key)])).toEqual([
      [
        'city=chennai',
        [{ name: 'city', value: 'chennai' }],
        [
          'mor_v6_trips_8i1u/city=chennai/84e82649-b1ee-4a25-a316-17cc6872616b-0_2-13-62_20250331030642808.parquet',
        ],
      ],
      [
        'city=sao_paulo',
        [{ name: 'city', value: 'sao_paulo' }],
        [
          'mor_v6_trips_8i1u/city=sao_paulo/061498b3-e8ef-42f9-9d17-a509b2779501-0_1-13-61_20250331030642808.parquet',
        ],
      ],
    ]);
    const reasons = new Map(
      snapshot.ignored.map((i) => [i.key.slice('mor_v6_trips_8i1u/'.length), i.reason]),
    );
    expect(
      reasons.get(
        'city=san_francisco/d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0_0-13-60_20250331030642808.parquet',
      ),
    ).toMatch(/has 1 log file/);
    expect(
      reasons.get(
        'city=san_francisco/.d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0_20250331030642808.log.1_0-26-85',
      ),
    ).toMatch(/compaction/);
    expect(reasons.get('city=chennai/.hoodie_partition_metadata')).toBe('Hudi partition marker');
    expect(snapshot.formatState).toEqual({
      tableVersion: 6,
      layoutVersion: 1,
      timelineTimezone: 'LOCAL',
      latestInstant: '20250331030645735',
    });
    expect(snapshot.partitions[0]?.files[0]).toMatchObject({
      size: expect.any(Number),
      etag: expect.any(String),
    });
  });

  it('records the latest completion time of a 1.x table and names older slices and replaced groups', async () => {
    // Act
    const snapshot = toTableSnapshot(
      await readHudiTable(fixtures, 'cow_v6_simplekeygen_nonhivestyle_overwritetable'),
      1,
    );
    const v8 = toTableSnapshot(await readHudiTable(fixtures, 'cow_v8_simplekeygen_nonhivestyle'), 1);

    // Assess
    expect(
      snapshot.ignored.filter((i) => /replaced by replacecommit 20240707001303088/.test(i.reason)),
    ).toHaveLength(4);
    expect(v8.formatState).toMatchObject({
      latestInstant: '20250713011316909',
      latestCompletionTime: '20250713011317225',
    });
    expect(v8.ignored.filter((i) => /older file slice/.test(i.reason)).map((i) => i.key)).toEqual([
      'cow_v8_simplekeygen_nonhivestyle/10/7b0ea4f9-3768-4e87-b12c-8d33efd22b55-0_1-115-169_20250713011315930.parquet',
    ]);
  });
});

describe('rows read from the live base files (DuckDB) equal the rows hudi-rs expects', () => {
  let db: DuckDb;
  beforeAll(async () => {
    db = await openDuckDb();
  });
  afterAll(() => db.close());

  async function liveRows(table: string, where = 'true'): Promise<Record<string, unknown>[]> {
    const state = await readHudiTable(fixtures, table);
    const files = state.partitions.flatMap((p) =>
      p.liveSlices.map((s) => join(HUDI_FIXTURES, s.baseFile?.key ?? '')),
    );
    return db.rows(
      `SELECT id, name, isActive, structField.field2 AS field2 FROM read_parquet([${files.map(sqlString).join(', ')}], union_by_name = true) WHERE ${where} ORDER BY id`,
    );
  }

  // hudi-rs crates/datafusion/tests (verify_data): `WHERE id % 2 = 0 AND name != 'Alice' AND structField.field2 > 30`
  // gives (2, Bob, false, 40) and (4, Diana, true, 50) on v6_complexkeygen_hivestyle, v6_simplekeygen_nonhivestyle
  // and v8_simplekeygen_nonhivestyle; verify_data_with_replacecommits gives only (4, Diana, false, 50) on
  // v6_simplekeygen_nonhivestyle_overwritetable.
  const FILTER = "id % 2 = 0 AND name != 'Alice' AND structField.field2 > 30";
  it.each([
    [
      'cow_v6_complexkeygen_hivestyle',
      [
        [2, 'Bob', false, 40],
        [4, 'Diana', true, 50],
      ],
    ],
    [
      'cow_v6_simplekeygen_nonhivestyle',
      [
        [2, 'Bob', false, 40],
        [4, 'Diana', true, 50],
      ],
    ],
    [
      'cow_v8_simplekeygen_nonhivestyle',
      [
        [2, 'Bob', false, 40],
        [4, 'Diana', true, 50],
      ],
    ],
    ['cow_v6_simplekeygen_nonhivestyle_overwritetable', [[4, 'Diana', false, 50]]],
  ] as const)("%s: the filtered rows are hudi-rs's", async (table, expected) => {
    // Act
    const rows = await liveRows(table, FILTER);

    // Assess
    expect(rows.map((r) => [r.id, r.name, r.isActive, r.field2])).toEqual(expected);
  });

  // hudi-rs crates/test/src/v9_verification.rs (verify_partitioned_records, at hudi-rs 0910ca7d, the fixtures' commit):
  // after inserts, updates, deletes, an INSERT OVERWRITE of eu, compaction (MoR) and clustering, 12 rows survive.
  it.each([
    ['cow_v9_txns_simple_meta', true],
    ['mor_v9_txns_simple_nometa', false],
  ] as const)(
    '%s: the live base files hold the 12 rows v9_verification.rs expects',
    async (table, inspectOnly) => {
      // Prepare
      const state = await readHudiTable(fixtures, table, { inspectOnly });
      const files = state.partitions.flatMap((p) =>
        p.liveSlices.map((s) => join(HUDI_FIXTURES, s.baseFile?.key ?? '')),
      );
      const from = `read_parquet([${files.map(sqlString).join(', ')}])`;

      // Act
      const ids = await db.rows(`SELECT txn_id, region FROM ${from} ORDER BY txn_id`);
      const updated = await db.rows(
        `SELECT txn_id, txn_type, CAST(fee_amount AS VARCHAR) AS fee FROM ${from} WHERE txn_id IN ('TXN-001', 'TXN-007') ORDER BY txn_id`,
      );

      // Assess
      expect(state.partitions.flatMap((p) => p.liveSlices).every((s) => s.logFiles.length === 0)).toBe(true);
      expect(ids.map((r) => r.txn_id)).toEqual([
        'TXN-001',
        'TXN-003',
        'TXN-007',
        'TXN-008',
        'TXN-011',
        'TXN-012',
        'TXN-013',
        'TXN-014',
        'TXN-015',
        'TXN-016',
        'TXN-017',
        'TXN-018',
      ]);
      const byRegion = (region: string) => ids.filter((r) => r.region === region).map((r) => r.txn_id);
      expect(byRegion('eu')).toEqual(['TXN-011', 'TXN-012', 'TXN-018']);
      expect(byRegion('us')).toEqual(['TXN-001', 'TXN-003', 'TXN-013', 'TXN-014', 'TXN-017']);
      expect(byRegion('apac')).toEqual(['TXN-007', 'TXN-008', 'TXN-015', 'TXN-016']);
      expect(updated[0]?.txn_type).toBe('reversal');
      expect(Number(updated[1]?.fee)).toBe(75);
    },
  );

  it("v6_simplekeygen_nonhivestyle: all four live rows are hudi-rs's, where a naive listing reads six", async () => {
    // Prepare: hudi-rs python/tests/test_datafusion_ffi.py (and crates/core/tests/table_read_tests.rs's sample rows)
    // read (1, Alice, false), (2, Bob, false), (3, Carol, true), (4, Diana, true).
    const all = join(HUDI_FIXTURES, 'cow_v6_simplekeygen_nonhivestyle', '*', '*.parquet');

    // Act
    const rows = await liveRows('cow_v6_simplekeygen_nonhivestyle');
    const naive = await db.scalar(`SELECT count(*) FROM read_parquet(${sqlString(all)})`);

    // Assess
    expect(rows.map((r) => [r.id, r.name, r.isActive])).toEqual([
      [1, 'Alice', false],
      [2, 'Bob', false],
      [3, 'Carol', true],
      [4, 'Diana', true],
    ]);
    expect(Number(naive)).toBe(6);
  });

  it('v6_complexkeygen_hivestyle: partition byteField=10/shortField=300 holds Alice and Carol, as hudi-rs filters it', async () => {
    // Prepare: hudi-rs crates/core/tests/table_read_tests.rs, test_complex_keygen_hive_style_with_filters.
    const state = await readHudiTable(fixtures, 'cow_v6_complexkeygen_hivestyle');
    const partition = state.partitions.find((p) => p.partition === 'byteField=10/shortField=300');

    // Act
    const rows = await db.rows(
      `SELECT id, name, isActive FROM read_parquet(${sqlString(join(HUDI_FIXTURES, partition?.liveSlices[0]?.baseFile?.key ?? ''))}) ORDER BY id`,
    );

    // Assess
    expect(rows.map((r) => [r.id, r.name, r.isActive])).toEqual([
      [1, 'Alice', false],
      [3, 'Carol', true],
    ]);
  });
});

describe('crafted tables', () => {
  let dir: string;
  afterEach(async () => {
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  /** A copy of a vendored table in a temp folder, as `t/`. */
  async function copyOf(table: string): Promise<LocalObjectStore> {
    dir = await mkdtemp(join(tmpdir(), 'lc-hudi-'));
    await cp(join(HUDI_FIXTURES, table), join(dir, 't'), { recursive: true });
    return new LocalObjectStore(dir);
  }

  async function put(relative: string, body: string | Uint8Array): Promise<void> {
    const path = join(dir, 't', relative);
    await mkdir(join(path, '..'), { recursive: true });
    await writeFile(path, body);
  }

  it.each([
    [
      'a metadata table folder without the property',
      '.hoodie/metadata/.hoodie/hoodie.properties',
      HudiMetadataTableError,
    ],
    ['schema-on-read history', '.hoodie/.schema/20240101000000000', HudiSchemaOnReadError],
    ['a bucket index folder', '.hoodie/.bucket_index/consistent_hashing_metadata/x', HudiBucketIndexError],
    ['a bootstrap index', '.hoodie/.aux/.bootstrap/.partitions/x', HudiBootstrapError],
    [
      'a bucket-numbered file id',
      '10/00000001-97de74b1-2a8e-4bb7-874c-0a74e1f42a77-0_0-1-1_20240418172804498.parquet',
      HudiBucketIndexError,
    ],
    [
      'an ORC base file',
      '20/76e0556b-390d-4249-b7ad-9059e2bc2cbd-0_0-1-1_20240418172804498.orc',
      HudiBaseFileFormatError,
    ],
    ['a pending rollback', '.hoodie/20990101000000000.rollback.requested', HudiPendingRollbackError],
    ['a pending restore', '.hoodie/20990101000000000.restore.inflight', HudiPendingRollbackError],
  ] as const)('refuses %s by name, every byte unchanged', async (_what, file, error) => {
    // Prepare
    const store = await copyOf('cow_v6_simplekeygen_nonhivestyle');
    await put(file, 'x');
    const before = await folderContentSnapshot(dir);

    // Act
    const reading = readHudiTable(store, 't');

    // Assess
    await expect(reading).rejects.toThrow(error);
    expect(await folderContentSnapshot(dir)).toEqual(before);
  });

  it('sets aside a base file whose instant is in flight, or unknown to the timeline, as uncommitted', async () => {
    // Prepare
    const store = await copyOf('cow_v6_simplekeygen_nonhivestyle');
    await put('.hoodie/20990101000000000.commit.requested', '');
    await put('.hoodie/20990101000000000.inflight', '');
    await put('20/76e0556b-390d-4249-b7ad-9059e2bc2cbd-0_0-1-1_20990101000000000.parquet', 'x');
    await put('30/6db57019-98ee-480e-8eb1-fb3de48e1c24-0_0-1-1_20990202000000000.parquet', 'x');

    // Act
    const state = await readHudiTable(store, 't');

    // Assess
    const reasons = new Map(state.ignored.map((i) => [i.key, i.reason]));
    expect(
      reasons.get('t/20/76e0556b-390d-4249-b7ad-9059e2bc2cbd-0_0-1-1_20990101000000000.parquet'),
    ).toMatch(/not completed \(commit inflight\)/);
    expect(
      reasons.get('t/30/6db57019-98ee-480e-8eb1-fb3de48e1c24-0_0-1-1_20990202000000000.parquet'),
    ).toMatch(/does not hold/);
    expect(state.partitions.flatMap((p) => p.liveSlices.map((s) => s.baseFile?.instantTime))).toEqual([
      '20240418172804498',
      '20240418172802262',
      '20240418172804498',
    ]);
    expect(state.timeline.pendingWrites.map((i) => i.time)).toEqual(['20990101000000000']);
  });

  it('counts a base file older than the active timeline as committed (its instant was archived)', async () => {
    // Prepare: archival moved the first commit out of the active timeline.
    const store = await copyOf('cow_v6_simplekeygen_nonhivestyle');
    for (const suffix of ['commit', 'commit.requested', 'inflight'])
      await rm(join(dir, 't', `.hoodie/20240418172802262.${suffix}`));

    // Act
    const state = await readHudiTable(store, 't');

    // Assess
    expect(state.timeline.timelineStart).toBe('20240418172804498');
    expect(state.partitions.find((p) => p.partition === '20')?.liveSlices[0]?.baseFile?.instantTime).toBe(
      '20240418172802262',
    );
  });

  it('sets aside a 1.x log file whose deltacommit is not on the timeline', async () => {
    // Prepare
    const store = await copyOf('mor_v9_txns_simple_nometa');
    const log = 'region=us/.7e0f3c9f-f99a-439a-9e9b-e504f87f9ae5-0_20990101000000000.log.1_0-1-1';
    await put(log, 'x');

    // Act
    const state = await readHudiTable(store, 't');

    // Assess
    expect(state.ignored.find((i) => i.key === `t/${log}`)?.reason).toMatch(
      /^log file written by instant 20990101000000000/,
    );
    expect(state.partitions.flatMap((p) => p.liveSlices.flatMap((s) => s.logFiles))).toEqual([]);
  });

  it('excludes the file groups of a pending clustering plan from planning, naming the plan', async () => {
    // Prepare: the v9 fixture's own clustering plan, re-encoded to name one live group of the v9 MoR table.
    const plan = await decodeContainer(
      new Uint8Array(
        await readFile(
          join(
            HUDI_FIXTURES,
            'cow_v9_txns_simple_meta/.hoodie/timeline/20260307162454799.clustering.requested',
          ),
        ),
      ),
    );
    const record = structuredClone(plan.records[0]) as {
      clusteringPlan: { inputGroups: { slices: { fileId: string; partitionPath: string }[] }[] };
    };
    record.clusteringPlan.inputGroups = record.clusteringPlan.inputGroups.slice(0, 1);
    const group = record.clusteringPlan.inputGroups[0];
    if (group === undefined) throw new Error('the fixture plan has no group');
    group.slices = group.slices
      .slice(0, 1)
      .map((s) => ({ ...s, fileId: '7e0f3c9f-f99a-439a-9e9b-e504f87f9ae5-0', partitionPath: 'region=us' }));
    const store = await copyOf('mor_v9_txns_simple_nometa');
    await put(
      '.hoodie/timeline/20990101000000000.clustering.requested',
      encodeContainer(plan.schema, [record], {}, { codec: 'null' }),
    );

    // Act
    const state = await readHudiTable(store, 't');

    // Assess
    expect(state.timeline.pendingPlans.map((p) => [p.kind, p.instant.time, p.fileGroups])).toEqual([
      [
        'clustering',
        '20990101000000000',
        [{ partitionPath: 'region=us', fileId: '7e0f3c9f-f99a-439a-9e9b-e504f87f9ae5-0' }],
      ],
    ]);
    const us = state.partitions.find((p) => p.partition === 'region=us');
    expect(us?.liveSlices.map((s) => s.fileId)).toEqual(['4625f1ea-a436-4846-a24a-1328e1c036a6-0']);
    expect(state.ignored.find((i) => i.key.includes('7e0f3c9f'))?.reason).toMatch(
      /pending clustering 20990101000000000/,
    );
  });

  it.each([
    [
      'commit JSON that is not JSON',
      '.hoodie/20240418172804498.commit',
      '{"partitionToWriteStats": {',
      /not valid JSON/,
    ],
    [
      'write stats that are not a list',
      '.hoodie/20240418172804498.commit',
      '{"partitionToWriteStats": {"10": "x"}}',
      /not an array/,
    ],
    [
      'a write stat without a fileId',
      '.hoodie/20240418172804498.commit',
      '{"partitionToWriteStats": {"10": [{"path": "x"}]}}',
      /has no fileId/,
    ],
    [
      'replaced ids that are not strings',
      '.hoodie/20240418172804498.commit',
      '{"partitionToReplaceFileIds": {"10": [1]}}',
      /non-string/,
    ],
    [
      'a size that is not a number',
      '.hoodie/20240418172804498.commit',
      '{"partitionToWriteStats": {"10": [{"fileId": "a", "fileSizeInBytes": "big"}]}}',
      /not a number/,
    ],
    ['an instant of an unknown action', '.hoodie/20240418172804498.frobnicate', '', /names no instant/],
  ] as const)('refuses %s with a bounded HudiTimelineError', async (_what, file, body, message) => {
    // Prepare
    const store = await copyOf('cow_v6_simplekeygen_nonhivestyle');
    await put(file, body);

    // Act
    const reading = readHudiTable(store, 't');

    // Assess
    await expect(reading).rejects.toThrow(HudiTimelineError);
    await expect(reading).rejects.toThrow(message);
  });

  it('refuses Avro commit metadata that lies (a truncated file, a count beyond its bytes) with a HudiTimelineError', async () => {
    // Prepare
    const store = await copyOf('cow_v8_simplekeygen_nonhivestyle');
    const file = '.hoodie/timeline/20250713011316909_20250713011317225.commit';
    const bytes = await readFile(join(dir, 't', file));
    await put(file, bytes.subarray(0, Math.floor(bytes.length / 2)));

    // Act
    const reading = readHudiTable(store, 't');

    // Assess
    await expect(reading).rejects.toThrow(HudiTimelineError);
    await expect(reading).rejects.toThrow(/is not a readable Avro file/);
  });

  it('refuses a pending compaction whose plan is missing, and a location without hoodie.properties', async () => {
    // Prepare
    const store = await copyOf('mor_v9_txns_simple_nometa');
    await put('.hoodie/timeline/20990101000000000.compaction.inflight', '');

    // Assess
    await expect(readHudiTable(store, 't')).rejects.toThrow(/has no compaction.requested plan/);
    await expect(readHudiTable(store, 'nowhere')).rejects.toThrow(HudiTimelineError);
  });
});
