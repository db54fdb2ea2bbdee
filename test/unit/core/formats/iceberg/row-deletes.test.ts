// The deletes the Iceberg format hands the rewrite: a planned file's position deletes read into the positions the
// delete files name for it (DuckDB reading them is the reference), a v3 deletion vector into its blob's
// positions, the plan's descriptor refused when it is not the one its id names or counts other rows, and the
// commit aborted when the deletes the rewrite dropped are not those of the starting snapshot.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../../../../functions/adapters/memory-journal.js';
import { InvalidInputError } from '../../../../../functions/core/errors.js';
import { PathCatalog } from '../../../../../functions/core/formats/iceberg/catalog.js';
import { icebergForCatalog } from '../../../../../functions/core/formats/iceberg/format.js';
import {
  icebergTable,
  loadTable,
  readDeletionVector,
  readSnapshotFiles,
} from '../../../../../functions/core/formats/iceberg/index.js';
import {
  type AppliedDelete,
  appliedDeleteOf,
  deletesByDataFile,
  MAX_EQUALITY_DELETE_ROWS,
  readDeletedRows,
  unappliableDeletes,
} from '../../../../../functions/core/formats/iceberg/row-deletes.js';
import { snapshotIcebergTable } from '../../../../../functions/core/formats/iceberg/table-snapshot.js';
import type { PlanInputFile } from '../../../../../functions/core/planning.js';
import type { GroupJournalEntry, JournalInput } from '../../../../../functions/ports/journal.js';
import { type DuckDb, openDuckDb, sqlString } from '../../../../support/duckdb.js';
import { copyFixtureTable, type TableCopy } from './commit-harness.js';
import { fixtureStore } from './fixture-tables.js';

const NOW = Date.UTC(2026, 10, 30, 12);
const TABLE = 'spark_v2_position_deletes';
/** Its metadata files are named 000NN-<uuid>, and no catalog manages the copy: a path table, as said here. */
const UUID_NAMED = { type: 'path', metadataNaming: 'uuid' } as const;
const format = icebergForCatalog(UUID_NAMED, {});

let duckdb: DuckDb;
let copy: TableCopy;

beforeAll(async () => {
  duckdb = await openDuckDb();
  copy = copyFixtureTable(TABLE);
});
afterAll(() => {
  duckdb.close();
  copy.remove();
});

/** The table's planned files with deletes (footers read, so their deleted rows are counted) and the snapshot id. */
async function planned(): Promise<{ files: PlanInputFile[]; snapshotId: string }> {
  const read = await snapshotIcebergTable(copy.store, TABLE, {
    now: NOW,
    readFooters: true,
    catalog: new PathCatalog(copy.store, UUID_NAMED),
  });
  return {
    files: read.snapshot.partitions.flatMap((p) => p.files).filter((f) => f.deletes !== undefined),
    snapshotId: String(read.snapshotId),
  };
}

/** A journal entry of one group of `inputs`, planned at `snapshotId`, in `state`. */
function entryOf(
  inputs: readonly PlanInputFile[],
  snapshotId: string,
  state: GroupJournalEntry['state'] = 'staged',
): GroupJournalEntry {
  return {
    runId: 'r1',
    groupId: 'g0001',
    table: TABLE,
    partition: 'data',
    state,
    inputs: inputs.map(
      (f): JournalInput => ({
        key: f.key,
        etag: f.etag,
        size: f.size,
        ...(f.rows === undefined ? {} : { rows: f.rows }),
        ...(f.deletes === undefined ? {} : { deletes: f.deletes }),
      }),
    ),
    outputs: [],
    retireMode: 'trash',
    stagingPrefix: `${TABLE}/_compactor/staging/r1/g0001/`,
    trashPrefix: `${TABLE}/_compactor/trash/r1/g0001/`,
    format: 'iceberg',
    formatState: { tableRoot: TABLE, snapshotId },
    createdAt: NOW,
    updatedAt: NOW,
    revision: 1,
  };
}

/** What the delete files name for each data file path (every delete applies by sequence number in this table). */
async function referencePositions(): Promise<Map<string, number[]>> {
  const table = await loadTable(copy.store, TABLE);
  const files = await readSnapshotFiles(copy.store, table);
  const out = new Map<string, number[]>();
  for (const d of files.deleteFiles) {
    const rows = await duckdb.rows(
      `SELECT file_path, pos FROM read_parquet(${sqlString(copy.file(d.entry.file.key))})`,
    );
    for (const r of rows)
      out.set(r.file_path as string, [...(out.get(r.file_path as string) ?? []), Number(r.pos)]);
  }
  for (const list of out.values()) list.sort((a, b) => a - b);
  return out;
}

function positionsOf(rows: { ranges: Uint32Array }): number[] {
  const out: number[] = [];
  for (let i = 0; i < rows.ranges.length; i += 2)
    for (let p = rows.ranges[i] as number; p < (rows.ranges[i + 1] as number); p++) out.push(p);
  return out;
}

describe('the Iceberg format’s deleted rows', () => {
  it('plans each file with position deletes with the exact count of rows they delete, and hands the rewrite exactly those positions', async () => {
    // Prepare
    const { files, snapshotId } = await planned();
    const entry = entryOf(files, snapshotId);
    const reference = await referencePositions();

    // Act
    const deleted = await Promise.all(
      entry.inputs.map(async (i) => icebergTable.deletedRows(copy.store, entry, i)),
    );

    // Assess: every file with deletes is planned (ten in this table), with the positions DuckDB reads for it
    expect(files).toHaveLength(10);
    for (const [n, input] of entry.inputs.entries()) {
      const path = String(input.deletes?.descriptor.dataPath);
      const expected = [...new Set(reference.get(path) ?? [])];
      expect(positionsOf(deleted[n] as { ranges: Uint32Array }), input.key).toEqual(expected);
      expect(input.deletes?.rows, input.key).toBe(expected.length);
    }
    expect(deleted.reduce((a, d) => a + d.count, 0)).toBe(82);
  });

  it('refuses deletes whose descriptor is not the one its id names, or that count other rows than the plan', async () => {
    // Prepare
    const { files, snapshotId } = await planned();
    const withRows = files.filter((f) => (f.deletes?.rows ?? 0) > 0);
    const [first] = withRows;
    if (first?.deletes === undefined) throw new Error('no planned deletes');
    const otherId = { ...first, deletes: { ...first.deletes, id: `${first.deletes.id}0` } };
    const otherCount = { ...first, deletes: { ...first.deletes, rows: first.deletes.rows + 1 } };

    // Act
    const byId = entryOf([otherId], snapshotId);
    const byCount = entryOf([otherCount], snapshotId);
    const idError = await icebergTable
      .deletedRows(copy.store, byId, byId.inputs[0] as JournalInput)
      .catch((e: unknown) => e);
    const countError = await icebergTable
      .deletedRows(copy.store, byCount, byCount.inputs[0] as JournalInput)
      .catch((e: unknown) => e);

    // Assess
    expect(idError).toBeInstanceOf(InvalidInputError);
    expect((idError as Error).message).toMatch(/are not those of id/);
    expect(countError).toBeInstanceOf(InvalidInputError);
    expect((countError as Error).message).toMatch(/now delete \d+ rows, the plan says \d+/);
  });

  it('aborts the commit, writing nothing, when an input’s deletes are not those of the starting snapshot', async () => {
    // Prepare: a published group whose one input the plan recorded without its deletes
    const { files, snapshotId } = await planned();
    const { deletes: _deletes, ...without } = files[0] as PlanInputFile;
    const journal = new MemoryJournal();
    await journal.create(entryOf([without], snapshotId, 'published'));
    const snapshotsBefore = (await loadTable(copy.store, TABLE)).metadata.snapshots.length;

    // Act
    const outcome = await format.commit(
      { store: copy.store, journal, clock: { now: () => NOW } },
      'r1',
      'g0001',
    );

    // Assess
    expect(outcome.state).toBe('aborted');
    expect(outcome.conflicts).toEqual([
      { key: without.key, reason: expect.stringMatching(/are not those the rewrite dropped \(none\)/) },
    ]);
    expect((await loadTable(copy.store, TABLE)).metadata.snapshots).toHaveLength(snapshotsBefore);
  });

  it('reads a v3 deletion vector into the positions of its Puffin blob', async () => {
    // Prepare
    const store = fixtureStore();
    const table = await loadTable(store, 'spark_v3_deletion_vectors');
    const files = await readSnapshotFiles(store, table);
    const byData = deletesByDataFile(files);
    const targets = files.dataFiles
      .filter((f) => byData.has(f.entry.file.path))
      .map((f) => ({
        dataPath: f.entry.file.path,
        dataKey: f.entry.file.key,
        recordCount: Number(f.entry.file.recordCount),
        deletes: (byData.get(f.entry.file.path) ?? []).map(appliedDeleteOf),
      }));

    // Act
    const read = await readDeletedRows(store, table.name, targets);

    // Assess: each file's rows are its one DV's positions, as many as the DV's cardinality
    expect(targets.length).toBeGreaterThan(0);
    for (const t of targets) {
      expect(t.deletes.map((d) => d.kind)).toEqual(['deletion-vector']);
      const dv = files.deleteFiles.find((d) => d.appliesTo.includes(t.dataPath));
      if (dv === undefined) throw new Error('no DV');
      const blob = (await readDeletionVector(store, table.name, dv.entry.file)).map(Number);
      const rows = read.get(t.dataPath);
      expect(rows && positionsOf(rows)).toEqual(blob);
      expect(rows?.count).toBe(Number(dv.entry.file.recordCount));
    }
  });

  it('applies equality deletes only on exactly matched column types without an initial-default, and within the rows it holds in memory', () => {
    // Prepare
    const schema = {
      fields: [
        { id: 1, name: 'id', required: true, type: 'long' },
        { id: 2, name: 'price', required: false, type: 'double' },
        { id: 3, name: 'at', required: false, type: 'timestamptz' },
        { id: 4, name: 'tag', required: false, type: 'string' },
        { id: 5, name: 'added', required: false, type: 'int', 'initial-default': 3 },
        { id: 6, name: 'plain', required: false, type: 'int', 'initial-default': null },
      ],
    } as unknown as Parameters<typeof unappliableDeletes>[1];
    const equality = (ids: number[], records = 10): AppliedDelete => ({
      kind: 'equality',
      key: 'k',
      path: 'p',
      format: 'PARQUET',
      sequence: '5',
      records,
      equalityIds: ids,
    });

    // Act
    const reasons = [
      unappliableDeletes([equality([1, 4])], schema),
      unappliableDeletes([equality([2])], schema),
      unappliableDeletes([equality([1, 3])], schema),
      unappliableDeletes([equality([7])], schema),
      unappliableDeletes([equality([1], MAX_EQUALITY_DELETE_ROWS), equality([4], 1)], schema),
      unappliableDeletes([{ ...equality([1]), format: 'AVRO' }], schema),
      unappliableDeletes([equality([1, 5])], schema),
      unappliableDeletes([equality([6])], schema),
    ];

    // Assess
    expect(reasons[0]).toBeUndefined();
    expect(reasons[1]).toMatch(/equality deletes on price \(double\) are not matched by value/);
    expect(reasons[2]).toMatch(/equality deletes on at \(timestamptz\)/);
    expect(reasons[3]).toMatch(/field 7 \(not a top-level column\)/);
    expect(reasons[4]).toMatch(/their \d+ rows are more than the \d+ held in memory/);
    expect(reasons[5]).toMatch(/equality delete in AVRO/);
    // a file written before `added` existed reads it as 3, where matching by value would read null
    expect(reasons[6]).toMatch(/equality deletes on added, which has an initial-default, are not matched/);
    expect(reasons[7]).toBeUndefined();
  });
});
