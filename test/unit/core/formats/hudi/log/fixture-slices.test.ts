// Every Merge-on-Read fixture read through the log reader: for each live file slice, the base file's rows (read by
// DuckDB, an independent Parquet reader) merged with the slice's log records (this reader) give the rows hudi-rs's own
// tests expect of the table; and every slice Hudi itself compacted, merged the same way, gives the rows of the base
// file Hudi's compactor wrote for it (a second, independent oracle: Hudi's own merge).
//
// Expected rows, from apache/hudi-rs (the fixtures' source, commit 0910ca7d):
//   mor_v6_trips_8i1u             crates/core/tests/table_read_tests.rs, v6 mor_log_file_queries
//                                 `test_quickstart_trips_inserts_updates`: rider-D (uuid 9909a8b1…) has fare 25.0
//                                 (8 rows: the table's datagen SQL in hudi-rs inserts 8 trips, then updates one).
//   mor_v6_nonpartitioned_rollback crates/core/tests/table_read_tests.rs `test_non_partitioned_rollback`:
//                                 (1, Alice, true), (2, Bob, true), (3, Carol, true).
//   mor_v8_trips_8i3u1d           crates/core/tests/table_read_tests.rs, v8 mor_log_file_queries
//                                 `test_quickstart_trips_inserts_updates_deletes`: 6 riders, rider-F and rider-J
//                                 deleted, rider-A and rider-G with fare 0.
//   mor_v9_txns_simple_nometa     crates/test/src/v9_verification.rs `verify_partitioned_records`: the txn ids of
//                                 EXPECTED_PARTITIONED_TXN_IDS, TXN-001 of type reversal, the ids per region.
//
// Which slice is live is decided here by a small local rule, since the timeline reader lives elsewhere: v6, the
// newest committed base of a file group and the logs named with its instant; v8+, the newest committed base of a
// file group no completed replacecommit replaced, and the committed logs that completed after it (research notes
// §3.2).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import avro from 'avsc';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DecodeBudget } from '../../../../../../functions/core/formats/hudi/log/budget.js';
import {
  type MergePolicy,
  mergeLogBlocks,
  mergePolicy,
  mergeSlice,
} from '../../../../../../functions/core/formats/hudi/log/merge.js';
import { parseLogFileName, scanLogFiles } from '../../../../../../functions/core/formats/hudi/log/scanner.js';
import { type DuckDb, openDuckDb, sqlString } from '../../../../../support/duckdb.js';
import { HUDI_FIXTURES } from '../../../../../support/fixtures.js';

type Row = Record<string, unknown>;

interface Table {
  readonly root: string;
  readonly props: ReadonlyMap<string, string>;
  readonly version: number;
  /** Completed instants: begin time → completion time (v6: the begin time itself). */
  readonly completed: ReadonlyMap<string, string>;
  /** Actions of completed instants by begin time. */
  readonly actions: ReadonlyMap<string, string>;
  readonly replaced: ReadonlySet<string>;
  readonly groups: readonly FileGroup[];
}

interface FileGroup {
  readonly partition: string;
  readonly fileId: string;
  readonly bases: readonly { instant: string; path: string }[];
  readonly logs: readonly { instant: string; path: string }[];
}

function properties(path: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (line.startsWith('#') || !line.includes('=')) continue;
    const i = line.indexOf('=');
    out.set(line.slice(0, i), line.slice(i + 1).replaceAll('\\:', ':'));
  }
  return out;
}

async function replacedFileIds(path: string): Promise<string[]> {
  const records: { partitionToReplaceFileIds?: Record<string, string[]> | null }[] = [];
  await new Promise<void>((resolve, reject) => {
    avro
      .createFileDecoder(path)
      .on('data', (r: (typeof records)[number]) => records.push(r))
      .on('end', resolve)
      .on('error', reject);
  });
  return records.flatMap((r) => Object.values(r.partitionToReplaceFileIds ?? {}).flat());
}

async function loadTable(name: string): Promise<Table> {
  const root = join(HUDI_FIXTURES, name);
  const props = properties(join(root, '.hoodie', 'hoodie.properties'));
  const version = Number(props.get('hoodie.table.version'));
  const completed = new Map<string, string>();
  const actions = new Map<string, string>();
  const replaced = new Set<string>();
  const timeline = version === 6 ? join(root, '.hoodie') : join(root, '.hoodie', 'timeline');
  for (const f of readdirSync(timeline)) {
    const m = /^(\d+)(?:_(\d+))?\.([a-z]+)$/.exec(f);
    if (m === null) continue;
    const begin = m[1] as string;
    completed.set(begin, m[2] ?? begin);
    actions.set(begin, m[3] as string);
    if (m[3] === 'replacecommit' && version >= 8)
      for (const id of await replacedFileIds(join(timeline, f))) replaced.add(id);
  }
  const groups = new Map<
    string,
    {
      partition: string;
      fileId: string;
      bases: FileGroup['bases'][number][];
      logs: FileGroup['logs'][number][];
    }
  >();
  const walk = (dir: string, partition: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.isDirectory()) {
        if (e.name !== '.hoodie')
          walk(join(dir, e.name), partition === '' ? e.name : `${partition}/${e.name}`);
        continue;
      }
      const path = join(dir, e.name);
      const log = parseLogFileName(e.name);
      const base = /^([^_]+)_[^_]+_(\d+)\.parquet$/.exec(e.name);
      const fileId = log?.fileId ?? base?.[1];
      if (fileId === undefined) continue;
      const key = `${partition}/${fileId}`;
      const g = groups.get(key) ?? { partition, fileId, bases: [], logs: [] };
      groups.set(key, g);
      if (log !== undefined) g.logs.push({ instant: log.instant, path });
      else g.bases.push({ instant: base?.[2] as string, path });
    }
  };
  walk(root, '');
  return { root, props, version, completed, actions, replaced, groups: [...groups.values()] };
}

function policyOf(t: Table): MergePolicy {
  return mergePolicy({
    tableVersion: t.version,
    payloadClass: t.props.get('hoodie.compaction.payload.class'),
    mergeMode: t.props.get('hoodie.record.merge.mode'),
    orderingFields:
      t.props.get('hoodie.table.ordering.fields') ?? t.props.get('hoodie.table.precombine.field'),
  });
}

/** The slice of `g` whose base is `base` (the newest committed one when absent), by the local rule above. */
function sliceOf(t: Table, g: FileGroup, baseInstant?: string) {
  const bases = g.bases
    .filter((b) => t.completed.has(b.instant))
    .sort((a, b) => (a.instant < b.instant ? -1 : 1));
  const i = baseInstant === undefined ? bases.length - 1 : bases.findIndex((b) => b.instant === baseInstant);
  const base = bases[i];
  const next = bases[i + 1];
  if (base === undefined) throw new Error(`no committed base in ${g.fileId}`);
  const logs = g.logs.filter((l) => {
    if (t.version === 6) return l.instant === base.instant;
    const completion = t.completed.get(l.instant);
    return (
      completion !== undefined &&
      completion > base.instant &&
      (next === undefined || completion < next.instant)
    );
  });
  return { base, logs };
}

let db: DuckDb;
beforeAll(async () => {
  db = await openDuckDb();
});
afterAll(() => db.close());

const plain = (row: Row): Row =>
  Object.fromEntries(Object.entries(row).map(([k, v]) => [k, typeof v === 'bigint' ? v.toString() : v]));

/** The merged view of one slice: base rows (DuckDB) minus dropped positions, plus appended log rows. */
async function mergedView(
  t: Table,
  slice: ReturnType<typeof sliceOf>,
  columns: readonly string[],
): Promise<Row[]> {
  const policy = policyOf(t);
  const ordering = policy.orderingField;
  const path = sqlString(slice.base.path);
  const keys = await db.rows(
    `SELECT file_row_number AS pos, _hoodie_record_key AS k, ${ordering === undefined ? 'NULL' : `CAST(${ordering} AS VARCHAR)`} AS o FROM read_parquet(${path}, file_row_number = true)`,
  );
  const baseRows = await db.rows(
    `SELECT ${columns.join(', ')} FROM read_parquet(${path}, file_row_number = true) ORDER BY file_row_number`,
  );
  const scan = scanLogFiles(
    slice.logs.map((l) => ({ key: l.path, bytes: readFileSync(l.path) })),
    { isCommitted: (i) => t.completed.has(i) },
  );
  const log = await mergeLogBlocks(scan.blocks, policy, new DecodeBudget());
  const merged = mergeSlice(
    keys.map((r) => ({
      position: Number(r.pos),
      recordKey: String(r.k),
      orderingValue: r.o === null ? null : BigInt(String(r.o)),
    })),
    log,
    policy,
  );
  const dropped = new Set(merged.dropPositions);
  return [
    ...baseRows.filter((_, i) => !dropped.has(i)),
    ...merged.append.map((r) => plain(Object.fromEntries(columns.map((c) => [c, r[c]])))),
  ];
}

async function liveRows(name: string, columns: readonly string[]): Promise<Row[]> {
  const t = await loadTable(name);
  const rows: Row[] = [];
  for (const g of t.groups) {
    if (t.replaced.has(g.fileId)) continue;
    if (!g.bases.some((b) => t.completed.has(b.instant))) continue;
    rows.push(...(await mergedView(t, sliceOf(t, g), columns)));
  }
  return rows;
}

const TRIPS = [
  '_hoodie_record_key',
  '_hoodie_commit_time',
  '_hoodie_commit_seqno',
  'uuid',
  'rider',
  'fare',
  'ts',
];

describe('Hudi Merge-on-Read fixtures through the log reader', () => {
  it('mor_v6_trips_8i1u reads rider-D updated to fare 25.0 by its Avro log block, among 8 rows', async () => {
    // Act
    const rows = await liveRows('mor_v6_trips_8i1u', TRIPS);

    // Assess
    expect(rows).toHaveLength(8);
    expect(rows.filter((r) => r.rider === 'rider-D')).toEqual([
      expect.objectContaining({
        uuid: '9909a8b1-2d15-4d3d-8ec9-efc48c536a00',
        fare: 25,
        // The appended row carries its log record's commit meta, not the base row's.
        _hoodie_commit_time: '20250331030645735',
        _hoodie_commit_seqno: '20250331030645735_0_1',
      }),
    ]);
  });

  it('mor_v6_nonpartitioned_rollback reads Alice as before the rolled-back write and Bob as updated after it', async () => {
    // Act
    const rows = await liveRows('mor_v6_nonpartitioned_rollback', ['id', 'name', 'isActive']);

    // Assess
    expect(rows.sort((a, b) => Number(a.id) - Number(b.id))).toEqual([
      { id: 1, name: 'Alice', isActive: true },
      { id: 2, name: 'Bob', isActive: true },
      { id: 3, name: 'Carol', isActive: true },
    ]);
  });

  it('mor_v6_nonpartitioned_rollback voids the rolled-back block by its command block alone', async () => {
    // Prepare: a timeline that would call every instant committed, so only the rollback block can void it.
    const t = await loadTable('mor_v6_nonpartitioned_rollback');
    const g = t.groups[0] as FileGroup;
    const { logs } = sliceOf(t, g);

    // Act
    const scan = scanLogFiles(
      logs.map((l) => ({ key: l.path, bytes: readFileSync(l.path) })),
      { isCommitted: () => true },
    );

    // Assess
    expect(scan.rolledBack).toEqual(['20250126040826878']);
    expect(scan.blocks.map((b) => b.header.get('INSTANT_TIME'))).toEqual(['20250126060846931']);
  });

  it('mor_v8_trips_8i3u1d reads 6 riders, F and J deleted, A and G at fare 0', async () => {
    // Act
    const rows = await liveRows('mor_v8_trips_8i3u1d', TRIPS);

    // Assess
    const riders = rows.map((r) => r.rider).sort();
    expect(riders).toHaveLength(6);
    expect(riders).not.toContain('rider-F');
    expect(riders).not.toContain('rider-J');
    expect(rows.find((r) => r.rider === 'rider-A')?.fare).toBe(0);
    expect(rows.find((r) => r.rider === 'rider-G')?.fare).toBe(0);
  });

  it('mor_v9_txns_simple_nometa reads the 12 transactions hudi-rs expects, per region', async () => {
    // Act
    const rows = await liveRows('mor_v9_txns_simple_nometa', ['txn_id', 'txn_type', 'region']);

    // Assess
    const ids = (region?: string) =>
      rows
        .filter((r) => region === undefined || r.region === region)
        .map((r) => r.txn_id)
        .sort();
    expect(ids()).toEqual([
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
    expect(rows.find((r) => r.txn_id === 'TXN-001')?.txn_type).toBe('reversal');
    expect(ids('eu')).toEqual(['TXN-011', 'TXN-012', 'TXN-018']);
    expect(ids('us')).toEqual(['TXN-001', 'TXN-003', 'TXN-013', 'TXN-014', 'TXN-017']);
    expect(ids('apac')).toEqual(['TXN-007', 'TXN-008', 'TXN-015', 'TXN-016']);
  });

  it.each([
    [
      'mor_v8_trips_8i3u1d',
      ['_hoodie_record_key', '_hoodie_commit_time', '_hoodie_commit_seqno', 'rider', 'fare', 'ts'],
    ],
    [
      'mor_v9_txns_simple_nometa',
      [
        '_hoodie_record_key',
        '_hoodie_commit_time',
        '_hoodie_commit_seqno',
        'txn_type',
        'merchant_name',
        'txn_ts',
      ],
    ],
  ])(
    '%s: each slice Hudi compacted merges to the rows of the base file Hudi wrote for it',
    async (name, columns) => {
      // Prepare: every file group with a base written by a completed compaction, and the slice before it.
      const t = await loadTable(name);
      const compacted = t.groups.flatMap((g) =>
        g.bases
          .filter((b) => t.actions.get(b.instant) === 'commit' && g.bases.some((o) => o.instant < b.instant))
          .map((b) => ({ g, b })),
      );
      expect(compacted.length).toBe(name === 'mor_v8_trips_8i3u1d' ? 3 : 2);

      for (const { g, b } of compacted) {
        const previous = g.bases
          .filter((o) => o.instant < b.instant)
          .sort((x, y) => (x.instant < y.instant ? 1 : -1))[0];
        const slice = sliceOf(t, g, previous?.instant);
        expect(slice.logs.length, `${g.fileId} has logs to compact`).toBeGreaterThan(0);

        // Act
        const merged = await mergedView(t, slice, columns);

        // Assess
        const written = await db.rows(`SELECT ${columns.join(', ')} FROM read_parquet(${sqlString(b.path)})`);
        const key = (r: Row) => String(r._hoodie_record_key);
        expect(merged.sort((x, y) => key(x).localeCompare(key(y)))).toEqual(
          written.sort((x, y) => key(x).localeCompare(key(y))),
        );
      }
    },
  );
});
