// `lake-compactor compact --format iceberg` on tables whose data files have position deletes: the rewrite drops
// the deleted rows, so the live row multiset — each data file's rows minus the positions its delete files name for
// it, read by DuckDB and applied by this test's own reading of the spec (same path, data sequence number ≤ the
// delete's) — is the same after the `replace`, the files that had deletes are rewritten and the delete files left
// dangling are gone from the new snapshot. A position delete committed while the group runs aborts it with nothing
// of it visible. Equality deletes are applied too: the rows they match by value are dropped.
import { cp, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { runCompact } from '../../functions/cli/compact.js';
import { run } from '../../functions/cli/index.js';
import { loadTable, PathCatalog } from '../../functions/core/formats/iceberg/catalog.js';
import { commitAppend, commitRowDelta } from '../../functions/core/formats/iceberg/commit.js';
import { RUN_ID_PROPERTY } from '../../functions/core/formats/iceberg/group-commit.js';
import { readSnapshotFiles, type SnapshotFiles } from '../../functions/core/formats/iceberg/live-files.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';
import { appendIcebergEvents, createIcebergEventsTable } from '../../functions/tools/sample-iceberg.js';
import { captureIo } from './../support/cli-io.js';
import { type DuckDb, openDuckDb, sqlString } from './../support/duckdb.js';
import { ICEBERG_FIXTURES } from './../support/fixtures.js';
import { addedFile, type TableCopy, writeWithFieldIds } from './core/formats/iceberg/commit-harness.js';

const NOW = Date.UTC(2024, 2, 3);
const DAY = '2024-03-01';
const clock = { now: () => NOW };
/** The reserved field ids of a position-delete file's columns (Iceberg spec, "Position Delete Files"). */
const FILE_PATH_ID = 2147483546;
const POS_ID = 2147483545;

let db: DuckDb;
let dir: string;

interface Live {
  readonly files: SnapshotFiles;
  /** Every live row, canonical JSON, sorted. */
  readonly rows: string[];
  /** Data file keys that have at least one deleted position. */
  readonly withDeletes: string[];
  readonly snapshots: { operation: string; summary: Record<string, string> }[];
}

/**
 * The live rows of the table's current snapshot, computed here from the files: a position-delete row (file_path,
 * pos) removes row `pos` of the live data file whose path is `file_path` when that file's data sequence number is
 * at most the delete file's; equality deletes are not expected.
 */
async function liveRows(store: ObjectStore, root: string): Promise<Live> {
  const table = await loadTable(store, root);
  const files = await readSnapshotFiles(store, table);
  const sequenceOf = new Map(files.dataFiles.map((f) => [f.entry.file.path, f.entry.dataSequenceNumber]));
  const deleted = new Map<string, Set<number>>();
  for (const d of files.deleteFiles) {
    if (d.kind !== 'position') throw new Error(`the oracle reads position deletes only, not ${d.kind}`);
    const rows = await db.rows(
      `SELECT file_path, pos FROM read_parquet(${sqlString(join(dir, d.entry.file.key))})`,
    );
    for (const r of rows) {
      const path = r.file_path as string;
      const sequence = sequenceOf.get(path);
      if (sequence === undefined || sequence > d.entry.dataSequenceNumber) continue;
      const set = deleted.get(path) ?? new Set<number>();
      set.add(Number(r.pos));
      deleted.set(path, set);
    }
  }
  const columns = files.schema.fields.map((f) => `"${f.name}"`).join(', ');
  const rows: string[] = [];
  for (const f of files.dataFiles) {
    const gone = deleted.get(f.entry.file.path) ?? new Set<number>();
    const found = await db.rows(
      `SELECT ${columns}, file_row_number AS __pos FROM read_parquet(${sqlString(join(dir, f.entry.file.key))}, file_row_number = true)`,
    );
    for (const r of found) {
      if (gone.has(Number(r.__pos))) continue;
      const { __pos: _pos, ...row } = r;
      rows.push(JSON.stringify(row));
    }
  }
  return {
    files,
    rows: rows.sort(),
    withDeletes: files.dataFiles
      .filter((f) => (deleted.get(f.entry.file.path)?.size ?? 0) > 0)
      .map((f) => f.entry.file.key)
      .sort(),
    snapshots: table.metadata.snapshots.map((s) => ({
      operation: s.summary.operation ?? '?',
      summary: { ...s.summary },
    })),
  };
}

/**
 * Deletes rows the way a merge-on-read engine does: one Parquet position-delete file (written by DuckDB with the
 * spec's field ids, rows sorted by path and position) committed as a `delete` snapshot under the table's spec 0.
 */
async function deletePositions(
  store: ObjectStore,
  root: string,
  positions: ReadonlyMap<string, readonly number[]>,
  name: string,
): Promise<void> {
  const table = await loadTable(store, root);
  const files = await readSnapshotFiles(store, table);
  const byKey = new Map(files.dataFiles.map((f) => [f.entry.file.key, f.entry.file]));
  const values = [...positions].flatMap(([key, list]) =>
    list.map((p) => `(${sqlString(byKey.get(key)?.path ?? key)}, ${p}::BIGINT)`),
  );
  const first = byKey.get([...positions.keys()][0] ?? '');
  if (first === undefined) throw new Error('no such data file');
  const key = `${root === '' ? '' : `${root}/`}data/${name}-deletes.parquet`;
  await db.writeParquet(
    `SELECT * FROM (VALUES ${values.join(', ')}) AS t(file_path, pos) ORDER BY file_path, pos`,
    join(dir, key),
    { extraOptions: [`FIELD_IDS {file_path: ${FILE_PATH_ID}, pos: ${POS_ID}}`] },
  );
  const size = (await store.head(key))?.size ?? 0;
  await commitRowDelta(
    store,
    new PathCatalog(store),
    {
      tableLocation: root,
      addedDeleteFiles: [
        {
          content: 'position-deletes',
          path: table.paths.path(key),
          format: 'PARQUET',
          partition: first.partition,
          recordCount: BigInt(values.length),
          fileSizeInBytes: BigInt(size),
          columnSizes: new Map(),
          valueCounts: new Map(),
          nullValueCounts: new Map(),
          nanValueCounts: new Map(),
          lowerBounds: new Map(),
          upperBounds: new Map(),
          splitOffsets: undefined,
          sortOrderId: undefined,
          equalityIds: undefined,
          referencedDataFile: undefined,
          contentOffset: undefined,
          contentSizeInBytes: undefined,
          firstRowId: undefined,
        },
      ],
    },
    { clock },
  );
}

/** Runs `before` ahead of every put (awaited), then the put itself. */
function interceptPut(inner: ObjectStore, before: (key: string) => Promise<void>): ObjectStore {
  return new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop !== 'put') return Reflect.get(target, prop, receiver);
      return async (key: string, ...rest: unknown[]) => {
        await before(key);
        return (target.put as (...a: unknown[]) => unknown).call(target, key, ...rest);
      };
    },
  });
}

async function keysUnder(store: ObjectStore, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of store.listAll(prefix)) keys.push(o.key);
  return keys.sort();
}

beforeAll(async () => {
  db = await openDuckDb();
});

afterAll(async () => {
  db.close();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

beforeEach(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  dir = await mkdtemp(join(tmpdir(), 'lc-iceberg-deletes-'));
});

describe('lake-compactor compact --format iceberg, data files with position deletes', () => {
  it('spark_v2_position_deletes: rewrites the files with deletes, their deleted rows dropped, and the delete files left dangling leave the table', async () => {
    // Prepare
    const name = 'spark_v2_position_deletes';
    await cp(join(ICEBERG_FIXTURES, name), join(dir, name), { recursive: true });
    const store = new LocalObjectStore(dir);
    const before = await liveRows(store, name);
    const io = captureIo();

    // Act: its metadata files are named 000NN-<uuid> and no catalog manages this copy, which the run says
    const code = await run(
      [
        'compact',
        join(dir, name),
        '--format',
        'iceberg',
        '--catalog',
        'path',
        '--path-metadata-naming',
        'uuid',
      ],
      io,
    );

    // Assess: the same live rows; the files with deletes the plan took were rewritten
    expect(code, io.stderr.join('\n')).toBe(0);
    const after = await liveRows(store, name);
    expect(after.rows).toEqual(before.rows);
    const live = new Set(after.files.dataFiles.map((f) => f.entry.file.path));
    const rewritten = before.files.dataFiles.map((f) => f.entry.file).filter((f) => !live.has(f.path));
    const rewrittenWithDeletes = rewritten.filter((f) => before.withDeletes.includes(f.key));
    expect(rewrittenWithDeletes.length).toBeGreaterThan(1);
    // A delete file stays exactly when a data file it applied to is still live; the others left with the replace.
    const dangling = before.files.deleteFiles.filter((d) => d.appliesTo.every((p) => !live.has(p)));
    const kept = before.files.deleteFiles.filter((d) => !dangling.includes(d));
    expect(dangling.length).toBeGreaterThan(0);
    expect(after.files.deleteFiles.map((d) => d.entry.file.key)).toEqual(kept.map((d) => d.entry.file.key));
    // One replace, which says what it removed: the rewritten files, the dangling delete files and their positions.
    const replaces = after.snapshots.slice(before.snapshots.length);
    expect(replaces.map((s) => s.operation)).toEqual(['replace']);
    const outputs = after.files.dataFiles.filter(
      (f) => !before.files.dataFiles.some((b) => b.entry.file.path === f.entry.file.path),
    );
    expect(replaces[0]?.summary).toMatchObject({
      'deleted-data-files': String(rewritten.length),
      'removed-delete-files': String(dangling.length),
      'removed-position-deletes': String(dangling.reduce((a, d) => a + Number(d.entry.file.recordCount), 0)),
      'added-records': String(outputs.reduce((a, f) => a + Number(f.entry.file.recordCount), 0)),
      [RUN_ID_PROPERTY]: expect.stringMatching(/^cli-/),
    });
  });
});

describe('lake-compactor compact --format iceberg, position deletes written by another engine', () => {
  let store: LocalObjectStore;
  let keys: string[];

  beforeEach(async () => {
    store = new LocalObjectStore(dir);
    await createIcebergEventsTable(store, '', { now: NOW });
    keys = [];
    for (let b = 0; b < 6; b += 1)
      keys.push(
        (await appendIcebergEvents(store, '', { day: DAY, rows: 30 + b, seed: b + 1, now: NOW })).key,
      );
    // First and last rows of one file, a run of another; a third row of the first in a second delete file.
    await deletePositions(
      store,
      '',
      new Map([
        [keys[0] as string, [0, 29]],
        [keys[2] as string, [5, 6, 7, 8, 9]],
      ]),
      'first',
    );
    await deletePositions(store, '', new Map([[keys[0] as string, [12, 29]]]), 'second');
  });

  it('drops the deleted rows: the live rows are the same multiset and the two delete files are gone', async () => {
    // Prepare
    const before = await liveRows(store, '');
    const io = captureIo();

    // Act
    const code = await run(['compact', dir, '--format', 'iceberg'], io);

    // Assess
    expect(code, io.stderr.join('\n')).toBe(0);
    expect(before.withDeletes).toEqual([keys[0], keys[2]].sort());
    expect(before.rows).toHaveLength(30 + 31 + 32 + 33 + 34 + 35 - 3 - 5);
    const after = await liveRows(store, '');
    expect(after.rows).toEqual(before.rows);
    expect(after.files.dataFiles).toHaveLength(1);
    expect(after.files.deleteFiles).toEqual([]);
    expect(after.snapshots.slice(before.snapshots.length).map((s) => s.operation)).toEqual(['replace']);
    // The output holds exactly the live rows (nothing deleted is carried over to be "undeleted").
    expect(Number(after.files.dataFiles[0]?.entry.file.recordCount)).toBe(before.rows.length);
  });

  it('leaves alone, with why, a file whose position delete names a row it does not have, and compacts the others', async () => {
    // Prepare: a damaged delete names row 1000 of a 33-row file
    await deletePositions(store, '', new Map([[keys[3] as string, [1000]]]), 'damaged');
    const before = await liveRows(store, '');
    const io = captureIo();

    // Act
    const code = await run(['compact', dir, '--format', 'iceberg'], io);

    // Assess: the five others became one file; the damaged one is still live, reported with the reason
    expect(code, io.stderr.join('\n')).toBe(0);
    const after = await liveRows(store, '');
    expect(after.rows).toEqual(before.rows);
    const live = after.files.dataFiles.map((f) => f.entry.file.key);
    expect(live).toHaveLength(2);
    expect(live).toContain(keys[3]);
    expect(io.stdout.join('\n')).toMatch(/names row 1000, but the file holds 33 rows/);
  });

  it('aborts the group when a position delete on one of its inputs is committed while it runs, leaving nothing of it', async () => {
    // Prepare: at the compaction's first metadata write, another engine deletes one more row of an input.
    const before = await liveRows(store, '');
    const folder = `data/event_timestamp_day=${DAY}/`;
    const filesBefore = await keysUnder(store, folder);
    let raced = false;
    const hooks = {
      wrapStore: (inner: ObjectStore) =>
        interceptPut(inner, async (key) => {
          if (raced || !/^metadata\/v\d+\.metadata\.json$/.test(key)) return;
          raced = true;
          await deletePositions(inner, '', new Map([[keys[1] as string, [3]]]), 'concurrent');
        }),
    };

    // Act
    await runCompact(dir, { format: 'iceberg' }, { out: () => {}, clock, env: {} }, hooks);

    // Assess: the concurrent delete stands, no replace, the rows are the earlier ones minus the new deletion
    expect(raced).toBe(true);
    const after = await liveRows(store, '');
    expect(after.snapshots.slice(before.snapshots.length).map((s) => s.operation)).toEqual(['delete']);
    expect(after.rows).toHaveLength(before.rows.length - 1);
    expect(before.rows).toEqual(expect.arrayContaining(after.rows));
    expect(after.files.dataFiles.map((f) => f.entry.file.key).sort()).toEqual([...keys].sort());
    // No output of the aborted group is left in the partition's folder: only the new delete file was added.
    expect(await keysUnder(store, folder)).toEqual(filesBefore);
    expect(await keysUnder(store, 'data/')).toContain('data/concurrent-deletes.parquet');
  });
});

describe('lake-compactor compact --format iceberg, data files with equality deletes', () => {
  const name = 'java_v2_equality_deletes_identity_partitioned';
  const IDS = [[1, 2, 3], [4, 5], [6, 7, 8, 9], [10], [11, 12, 13]];

  /**
   * The live rows, computed here: a data file's row is deleted when an equality delete of its partition with a
   * higher data sequence number holds a row whose values of the delete's equality columns equal the row's.
   */
  async function equalityLiveRows(
    store: ObjectStore,
    base = dir,
  ): Promise<{ files: SnapshotFiles; rows: string[] }> {
    const table = await loadTable(store, name);
    const files = await readSnapshotFiles(store, table);
    const columnOf = new Map(files.schema.fields.map((f) => [f.id, f.name]));
    const deletes: { partition: string; sequence: bigint; columns: string[]; keys: Set<string> }[] = [];
    for (const d of files.deleteFiles) {
      const columns = (d.entry.file.equalityIds ?? []).map((id) => columnOf.get(id) ?? '?');
      const found = await db.rows(
        `SELECT ${columns.map((c) => `"${c}"`).join(', ')} FROM read_parquet(${sqlString(join(base, d.entry.file.key))})`,
      );
      deletes.push({
        partition: JSON.stringify(d.entry.file.partition, (_, v) => (typeof v === 'bigint' ? `${v}` : v)),
        sequence: d.entry.dataSequenceNumber,
        columns,
        keys: new Set(found.map((r) => JSON.stringify(columns.map((c) => r[c])))),
      });
    }
    const rows: string[] = [];
    for (const f of files.dataFiles) {
      const partition = JSON.stringify(f.entry.file.partition, (_, v) =>
        typeof v === 'bigint' ? `${v}` : v,
      );
      const mine = deletes.filter(
        (d) => d.partition === partition && d.sequence > f.entry.dataSequenceNumber,
      );
      for (const r of await db.rows(`SELECT * FROM read_parquet(${sqlString(join(base, f.entry.file.key))})`))
        if (!mine.some((d) => d.keys.has(JSON.stringify(d.columns.map((c) => r[c])))))
          rows.push(JSON.stringify([r.id, r.name, r.bir]));
    }
    return { files, rows: rows.sort() };
  }

  it('drops the rows an equality delete on id matches from five small files of partition b, leaving the others', async () => {
    // Prepare: five small files in partition name=b (written with the table's field ids), then an equality delete
    // on id of three of their rows and of one id no row has
    await cp(join(ICEBERG_FIXTURES, name), join(dir, name), { recursive: true });
    const store = new LocalObjectStore(dir);
    const copy: TableCopy = {
      dir,
      store,
      table: name,
      file: (key) => join(dir, key),
      remove: () => undefined,
    };
    const table = await loadTable(store, name);
    const original = (await readSnapshotFiles(store, table)).dataFiles.find((f) =>
      f.entry.file.key.includes('/name=b/'),
    );
    if (original === undefined) throw new Error('the fixture has a file in name=b');
    for (const [n, ids] of IDS.entries()) {
      const key = `${name}/data/name=b/small-${n}.parquet`;
      const values = ids.map((id) => `(${id}, 'b', DATE '2024-01-0${1 + (id % 9)}')`).join(', ');
      await writeWithFieldIds(db, copy, table, `SELECT * FROM (VALUES ${values}) AS t(id, name, bir)`, key);
      await commitAppend(
        store,
        new PathCatalog(store),
        {
          tableLocation: name,
          addedFiles: [await addedFile(store, table, key, original.entry.file.partition)],
        },
        { clock },
      );
    }
    const deleteKey = `${name}/data/name=b/delete-ids.parquet`;
    await db.writeParquet(`SELECT * FROM (VALUES (2), (7), (12), (99)) AS t(id)`, join(dir, deleteKey), {
      extraOptions: ['FIELD_IDS {id: 1}'],
    });
    await commitRowDelta(
      store,
      new PathCatalog(store),
      {
        tableLocation: name,
        addedDeleteFiles: [
          {
            content: 'equality-deletes',
            path: table.paths.path(deleteKey),
            format: 'PARQUET',
            partition: original.entry.file.partition,
            recordCount: 4n,
            fileSizeInBytes: BigInt((await store.head(deleteKey))?.size ?? 0),
            columnSizes: new Map(),
            valueCounts: new Map(),
            nullValueCounts: new Map(),
            nanValueCounts: new Map(),
            lowerBounds: new Map(),
            upperBounds: new Map(),
            splitOffsets: undefined,
            sortOrderId: undefined,
            equalityIds: [1],
            referencedDataFile: undefined,
            contentOffset: undefined,
            contentSizeInBytes: undefined,
            firstRowId: undefined,
          },
        ],
      },
      { clock },
    );
    const before = await equalityLiveRows(store);
    const io = captureIo();

    // Act
    const code = await run(['compact', join(dir, name), '--format', 'iceberg'], io);

    // Assess: the same live rows; the five small files are one now, holding 13 − 3 rows
    expect(code, io.stderr.join('\n')).toBe(0);
    const after = await equalityLiveRows(store);
    expect(after.rows).toEqual(before.rows);
    const small = before.files.dataFiles.filter((f) => f.entry.file.key.includes('/small-'));
    expect(small).toHaveLength(IDS.length);
    const live = after.files.dataFiles.map((f) => f.entry.file.key);
    for (const f of small) expect(live).not.toContain(f.entry.file.key);
    const outputs = after.files.dataFiles.filter(
      (f) => !before.files.dataFiles.some((b) => b.entry.file.key === f.entry.file.key),
    );
    expect(outputs.map((f) => Number(f.entry.file.recordCount))).toEqual([IDS.flat().length - 3]);
    // The output is not touched by the equality deletes before it (it carries the starting sequence number).
    expect(
      after.files.dataFiles.find((f) => f.entry.file.key === outputs[0]?.entry.file.key)?.deletes,
    ).toEqual([]);
    // Java's own files (another Parquet schema, one per partition) are left as they were.
    for (const f of before.files.dataFiles.filter((b) => !b.entry.file.key.includes('/small-')))
      expect(live).toContain(f.entry.file.key);
  });

  it('with remove-dangling-deletes, drops the equality delete its rewrite left dangling (all of partition z rewritten past it) and keeps those still deleting rows; without it, keeps it', async () => {
    // Prepare: a new partition name=z of five small files (written with the table's field ids), then an equality
    // delete on id of three of their rows; two copies of that table, one compacted with the option, one without
    const prepared: { root: string; store: LocalObjectStore }[] = [];
    for (const variant of ['with', 'without']) {
      const base = join(dir, variant);
      await cp(join(ICEBERG_FIXTURES, name), join(base, name), { recursive: true });
      const store = new LocalObjectStore(base);
      const copy: TableCopy = {
        dir: base,
        store,
        table: name,
        file: (key) => join(base, key),
        remove: () => undefined,
      };
      const table = await loadTable(store, name);
      const b = (await readSnapshotFiles(store, table)).dataFiles.find((f) =>
        f.entry.file.key.includes('/name=b/'),
      );
      if (b === undefined) throw new Error('the fixture has a file in name=b');
      await mkdir(join(base, name, 'data', 'name=z'), { recursive: true });
      const z = {
        ...b.entry.file.partition,
        values: b.entry.file.partition.values.map((v) => ({ ...v, value: 'z' })),
      };
      for (const [n, ids] of IDS.entries()) {
        const key = `${name}/data/name=z/small-${n}.parquet`;
        const values = ids.map((id) => `(${id}, 'z', DATE '2024-01-0${1 + (id % 9)}')`).join(', ');
        await writeWithFieldIds(db, copy, table, `SELECT * FROM (VALUES ${values}) AS t(id, name, bir)`, key);
        await commitAppend(
          store,
          new PathCatalog(store),
          { tableLocation: name, addedFiles: [await addedFile(store, table, key, z)] },
          { clock },
        );
      }
      const deleteKey = `${name}/data/name=z/delete-ids.parquet`;
      await db.writeParquet(`SELECT * FROM (VALUES (2), (7), (12)) AS t(id)`, join(base, deleteKey), {
        extraOptions: ['FIELD_IDS {id: 1}'],
      });
      await commitRowDelta(
        store,
        new PathCatalog(store),
        {
          tableLocation: name,
          addedDeleteFiles: [
            {
              content: 'equality-deletes',
              path: table.paths.path(deleteKey),
              format: 'PARQUET',
              partition: z,
              recordCount: 3n,
              fileSizeInBytes: BigInt((await store.head(deleteKey))?.size ?? 0),
              columnSizes: new Map(),
              valueCounts: new Map(),
              nullValueCounts: new Map(),
              nanValueCounts: new Map(),
              lowerBounds: new Map(),
              upperBounds: new Map(),
              splitOffsets: undefined,
              sortOrderId: undefined,
              equalityIds: [1],
              referencedDataFile: undefined,
              contentOffset: undefined,
              contentSizeInBytes: undefined,
              firstRowId: undefined,
            },
          ],
        },
        { clock },
      );
      prepared.push({ root: join(base, name), store });
    }
    const [withOption, withoutOption] = prepared as [(typeof prepared)[0], (typeof prepared)[0]];
    const before = await equalityLiveRows(withOption.store, join(dir, 'with'));
    const deletesBefore = before.files.deleteFiles.map((d) => d.entry.file.key).sort();
    const io = captureIo();
    const plain = captureIo();

    // Act
    const code = await run(
      ['compact', withOption.root, '--format', 'iceberg', '--rewrite-option', 'remove-dangling-deletes=true'],
      io,
    );
    const plainCode = await run(['compact', withoutOption.root, '--format', 'iceberg'], plain);

    // Assess: the same live rows (DuckDB reading the files the new snapshot names); partition z is one file now,
    // carrying the starting sequence number, so its equality delete (older) applies to nothing and is gone; the
    // fixture's equality deletes of b, c and f still delete their partitions' rows and stay
    expect(code, io.stderr.join('\n')).toBe(0);
    const after = await equalityLiveRows(withOption.store, join(dir, 'with'));
    expect(after.rows).toEqual(before.rows);
    const zDelete = `${name}/data/name=z/delete-ids.parquet`;
    expect(deletesBefore).toContain(zDelete);
    expect(after.files.deleteFiles.map((d) => d.entry.file.key).sort()).toEqual(
      deletesBefore.filter((k) => k !== zDelete),
    );
    const z = after.files.dataFiles.filter((f) => f.entry.file.key.includes('/name=z/'));
    expect(z.map((f) => Number(f.entry.file.recordCount))).toEqual([IDS.flat().length - 3]);
    expect(after.files.snapshot?.summary).toMatchObject({
      operation: 'replace',
      'removed-delete-files': '1',
      'removed-equality-delete-files': '1',
      'removed-equality-deletes': '3',
    });
    // Without the option the same compaction leaves the dangling delete in place (Iceberg's default)
    expect(plainCode, plain.stderr.join('\n')).toBe(0);
    const kept = await equalityLiveRows(withoutOption.store, join(dir, 'without'));
    expect(kept.files.deleteFiles.map((d) => d.entry.file.key)).toContain(zDelete);
    expect(kept.rows).toEqual(before.rows);
  });
});
