// Every vendored Iceberg table (test/fixtures/iceberg, written by Spark 2.4/3/4 and Iceberg Java) through
// `lake-compactor compact --format iceberg`, each in a temp copy. The live rows of a snapshot are computed by DuckDB
// alone from the files the snapshot lists: every data file projected onto the table's current schema by Parquet
// field id, then position deletes and equality deletes applied in SQL (anti-joins on file_path/pos and on the
// equality columns, with Iceberg's sequence-number rules). The new snapshot's live rows equal the old one's as a
// multiset, every output carries the current schema's field ids, the tables with deletes end with the live counts
// their writers recorded and no delete file that applies to no live data file, and a second run plans nothing.
// Tables the format refuses (none today: format v3 is compacted, its row lineage kept) are refused with their exact
// message and left byte for byte as they were: move a table from REFUSED to COMPACTED when the format accepts it.
import { cp, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { run } from '../../functions/cli/index.js';
import { loadTable, PathCatalog } from '../../functions/core/formats/iceberg/catalog.js';
import { commitAppend } from '../../functions/core/formats/iceberg/commit.js';
import { readDeletionVector } from '../../functions/core/formats/iceberg/deletion-vectors.js';
import { GROUP_ID_PROPERTY, RUN_ID_PROPERTY } from '../../functions/core/formats/iceberg/group-commit.js';
import {
  partitionKey,
  readSnapshotFiles,
  type SnapshotFiles,
} from '../../functions/core/formats/iceberg/live-files.js';
import type { IcebergSchema, IcebergType } from '../../functions/core/formats/iceberg/metadata.js';
import { LAST_UPDATED_SEQUENCE_NUMBER_FIELD, ROW_ID_FIELD } from '../../functions/ports/parquet-engine.js';
import { captureIo } from '../support/cli-io.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';
import { acknowledgeUuidNaming, ICEBERG_FIXTURES, pathCatalogOptions } from '../support/fixtures.js';
import { addedFile } from './core/formats/iceberg/commit-harness.js';

/**
 * The tables the format compacts, with what their writers recorded (test/fixtures/NOTICE.md): the live row count,
 * and whether the default policy finds a group to rewrite (a partition of one file has nothing worth merging; seven
 * files under six schemas do, since every compaction projects them onto the current schema by field id).
 */
const COMPACTED: Readonly<Record<string, { readonly liveRows: number; readonly rewrites: boolean }>> = {
  java_v2_equality_deletes_identity_partitioned: { liveRows: 3, rewrites: false },
  spark_v1_hour_identity_partitioned: { liveRows: 20, rewrites: true },
  spark_v1_unpartitioned_small_files: { liveRows: 20, rewrites: true },
  spark_v2_position_deletes: { liveRows: 110, rewrites: true },
  spark_v2_schema_evolution: { liveRows: 7, rewrites: true },
  spark_v3_deletion_vectors: { liveRows: 3, rewrites: true },
  spark_v3_row_lineage_rewrite: { liveRows: 3, rewrites: false },
};

/** The tables the format refuses, with the feature the refusal names (none since format v3 is compacted). */
const REFUSED: Readonly<Record<string, string>> = {};

/** The CLI's message refusing the table copied to `root`. */
const refusal = (root: string, feature: string): string =>
  `error: Iceberg table ${root}/ uses ${feature}, which lake-compactor does not support: nothing of it was read or changed. Leave this table to an Iceberg engine (Spark's rewrite_data_files), or remove it from the configuration`;

let db: DuckDb;
let dir: string | undefined;

beforeAll(async () => {
  db = await openDuckDb();
});

afterAll(() => {
  db.close();
});

afterEach(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

/** A writable copy of the vendored table `name` in a fresh temp folder; the store's keys are `<name>/…`. */
async function copyTable(name: string): Promise<{ store: LocalObjectStore; root: string }> {
  dir = await mkdtemp(join(tmpdir(), 'lc-iceberg-fixture-'));
  await cp(join(ICEBERG_FIXTURES, name), join(dir, name), { recursive: true });
  return { store: new LocalObjectStore(dir), root: join(dir, name) };
}

/** DuckDB's type for an Iceberg type (the primitives and structs these tables use); undefined: read as written. */
function duckType(type: IcebergType): string | undefined {
  if (typeof type === 'string') {
    const decimal = /^decimal\((\d+),\s*(\d+)\)$/.exec(type);
    if (decimal !== null) return `DECIMAL(${decimal[1]}, ${decimal[2]})`;
    const primitive: Record<string, string> = {
      boolean: 'BOOLEAN',
      int: 'INTEGER',
      long: 'BIGINT',
      float: 'FLOAT',
      double: 'DOUBLE',
      date: 'DATE',
      timestamp: 'TIMESTAMP',
      timestamptz: 'TIMESTAMPTZ',
      string: 'VARCHAR',
      binary: 'BLOB',
    };
    return primitive[type];
  }
  if (type.type === 'struct') {
    const fields = (type.fields ?? []) as { name: string; type: IcebergType }[];
    const inner = fields.map((f) => [f.name, duckType(f.type)] as const);
    if (inner.some(([, t]) => t === undefined)) return undefined;
    return `STRUCT(${inner.map(([n, t]) => `"${n}" ${t}`).join(', ')})`;
  }
  return undefined;
}

/** Every field id of a schema by name, nested fields included (the names in these tables are unique). */
function idsByName(schema: IcebergSchema): Record<string, number> {
  const out: Record<string, number> = {};
  const walk = (fields: readonly { id: number; name: string; type: IcebergType }[]) => {
    for (const f of fields) {
      out[f.name] = f.id;
      if (typeof f.type !== 'string' && f.type.type === 'struct')
        walk(f.type.fields as { id: number; name: string; type: IcebergType }[]);
    }
  };
  walk(schema.fields);
  return out;
}

/** The top-level columns of a Parquet file by field id (what DuckDB's parquet_schema reads from its footer). */
async function topLevelColumns(path: string): Promise<Map<number, string>> {
  const elements = await db.rows(
    `SELECT name, num_children, field_id FROM parquet_schema(${sqlString(path)})`,
  );
  const out = new Map<number, string>();
  // Pre-order: the root, then each column and its children; a top-level column is a direct child of the root.
  const [root, ...rest] = elements;
  let remaining = [Number(root?.num_children ?? 0)];
  for (const e of rest) {
    const depth = remaining.length;
    if (depth === 1 && e.field_id !== null) out.set(Number(e.field_id), e.name as string);
    remaining[remaining.length - 1] = (remaining.at(-1) as number) - 1;
    const children = Number(e.num_children ?? 0);
    if (children > 0) remaining.push(children);
    while (remaining.length > 0 && remaining.at(-1) === 0) remaining = remaining.slice(0, -1);
  }
  return out;
}

/** `{ name: field id }` of every column (nested too) of a Parquet file that has a field id. */
async function fieldIdsOf(path: string): Promise<Record<string, number>> {
  const rows = await db.rows(
    `SELECT name, field_id FROM parquet_schema(${sqlString(path)}) WHERE field_id IS NOT NULL`,
  );
  return Object.fromEntries(rows.map((r) => [r.name as string, Number(r.field_id)]));
}

/** A SELECT of one Parquet file's rows as `schema`'s top-level columns, matched by field id (NULL when absent). */
async function projected(path: string, schema: IcebergSchema): Promise<string> {
  const columns = await topLevelColumns(path);
  const select = schema.fields.map((f) => {
    const name = columns.get(f.id);
    const type = duckType(f.type);
    const value = name === undefined ? 'NULL' : `"${name}"`;
    return `${type === undefined ? value : `CAST(${value} AS ${type})`} AS "${f.name}"`;
  });
  return `SELECT ${select.join(', ')}, file_row_number AS __pos FROM read_parquet(${sqlString(path)}, file_row_number = true)`;
}

interface Live {
  readonly files: SnapshotFiles;
  /** Every live row as canonical JSON of the current schema's columns, sorted. */
  readonly rows: string[];
  /** Store keys of delete files that apply to no live data file, by the spec's rules, computed in SQL. */
  readonly dangling: string[];
}

/**
 * The live rows of the table's current snapshot, computed by DuckDB from the files it lists: a position delete
 * (file_path, pos) removes row `pos` of the data file at `file_path` when the data file's data sequence number is
 * at most the delete's; an equality delete removes a row of a data file of the same partition (any, for an
 * unpartitioned delete) with a lower data sequence number whose equality columns equal the delete row's.
 */
async function liveRows(store: LocalObjectStore, name: string): Promise<Live> {
  const table = await loadTable(store, name);
  const files = await readSnapshotFiles(store, table);
  const schema = files.schema;
  const file = (key: string) => join(dir as string, key);
  await db.exec(
    'DROP TABLE IF EXISTS data; DROP TABLE IF EXISTS pos_deletes; DROP TABLE IF EXISTS eq_deletes',
  );
  const dataParts: string[] = [];
  for (const f of files.dataFiles) {
    const meta = `${sqlString(f.entry.file.path)} AS __path, ${f.entry.dataSequenceNumber}::BIGINT AS __seq, ${sqlString(partitionKey(f.entry.file.partition))} AS __part`;
    dataParts.push(`SELECT *, ${meta} FROM (${await projected(file(f.entry.file.key), schema)})`);
  }
  await db.exec(`CREATE TEMP TABLE data AS ${dataParts.join(' UNION ALL ')}`);
  const posParts: string[] = [];
  const eqDeletes: { key: string; sql: string; columns: string[]; seq: bigint; part: string | undefined }[] =
    [];
  for (const d of files.deleteFiles) {
    const key = d.entry.file.key;
    const seq = d.entry.dataSequenceNumber;
    if (d.kind === 'position') {
      posParts.push(
        `SELECT file_path, pos, ${seq}::BIGINT AS __seq, ${sqlString(key)} AS __key FROM read_parquet(${sqlString(file(key))})`,
      );
    } else if (d.kind === 'equality') {
      const ids = d.entry.file.equalityIds ?? [];
      const columns = ids.map((id) => schema.fields.find((f) => f.id === id)?.name ?? `?${id}`);
      const unpartitioned = d.entry.file.partition.values.length === 0;
      eqDeletes.push({
        key,
        sql: await projected(file(key), schema),
        columns,
        seq,
        part: unpartitioned ? undefined : partitionKey(d.entry.file.partition),
      });
    } else if (d.kind === 'deletion-vector') {
      // A DV is a position delete of its referenced data file stored as a Roaring bitmap in Puffin: the oracle
      // reads its positions with the project's decoder (tested against what Spark recorded) and applies them in
      // SQL like a position delete file.
      const target = d.entry.file.referencedDataFile;
      if (target === undefined) throw new Error(`deletion vector ${key} names no data file`);
      const positions = await readDeletionVector(store, name, d.entry.file);
      const values = positions.map((pos) => `(${sqlString(target)}, ${pos}::BIGINT)`).join(', ');
      posParts.push(
        `SELECT v.file_path, v.pos, ${seq}::BIGINT AS __seq, ${sqlString(key)} AS __key FROM (VALUES ${values}) v(file_path, pos)`,
      );
    } else throw new Error(`the oracle applies position, equality and DV deletes, not ${d.kind} (${key})`);
  }
  const conditions: string[] = [];
  if (posParts.length > 0) {
    await db.exec(`CREATE TEMP TABLE pos_deletes AS ${posParts.join(' UNION ALL ')}`);
    conditions.push(
      'NOT EXISTS (SELECT 1 FROM pos_deletes p WHERE p.file_path = d.__path AND p.pos = d.__pos AND d.__seq <= p.__seq)',
    );
  }
  for (const e of eqDeletes) {
    const equal = e.columns.map((c) => `e."${c}" IS NOT DISTINCT FROM d."${c}"`).join(' AND ');
    const scope = e.part === undefined ? '' : ` AND d.__part = ${sqlString(e.part)}`;
    conditions.push(`NOT EXISTS (SELECT 1 FROM (${e.sql}) e WHERE d.__seq < ${e.seq}${scope} AND ${equal})`);
  }
  const columns = schema.fields.map((f) => `"${f.name}"`).join(', ');
  const where = conditions.length === 0 ? '' : ` WHERE ${conditions.join(' AND ')}`;
  const rows = await db.rows(`SELECT ${columns} FROM data d${where}`);
  // A delete file dangles when no live data file is one its rows may apply to.
  const dangling: string[] = [];
  if (posParts.length > 0) {
    const used = await db.rows(
      'SELECT DISTINCT p.__key FROM pos_deletes p JOIN (SELECT DISTINCT __path, __seq FROM data) d ON p.file_path = d.__path AND d.__seq <= p.__seq',
    );
    const usedKeys = new Set(used.map((r) => r.__key as string));
    for (const d of files.deleteFiles)
      if (d.kind === 'position' && !usedKeys.has(d.entry.file.key)) dangling.push(d.entry.file.key);
  }
  for (const e of eqDeletes) {
    const scope = e.part === undefined ? '' : ` AND __part = ${sqlString(e.part)}`;
    const n = await db.scalar(`SELECT count(*)::INTEGER FROM data WHERE __seq < ${e.seq}${scope}`);
    if (Number(n) === 0) dangling.push(e.key);
  }
  return {
    files,
    rows: rows.map((r) => JSON.stringify(schema.fields.map((f) => r[f.name] ?? null))).sort(),
    dangling: dangling.sort(),
  };
}

/** The table's files (metadata and data), without the run's own work area. */
function withoutWorkArea(files: Map<string, Buffer>): Map<string, Buffer> {
  return new Map([...files].filter(([path]) => !path.includes('/_lake-compactor/')));
}

async function treeBytes(root: string): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>();
  for (const e of await readdir(root, { recursive: true, withFileTypes: true }))
    if (e.isFile()) out.set(join(e.parentPath, e.name), await readFile(join(e.parentPath, e.name)));
  return out;
}

describe('lake-compactor compact --format iceberg on every vendored Iceberg table', () => {
  it('covers every vendored table: each is either compacted or refused', async () => {
    // Prepare
    const vendored = (await readdir(ICEBERG_FIXTURES, { withFileTypes: true }))
      .filter((e) => e.isDirectory())
      .map((e) => e.name)
      .sort();

    // Act
    const listed = [...Object.keys(COMPACTED), ...Object.keys(REFUSED)].sort();

    // Assess
    expect(listed).toEqual(vendored);
  });

  for (const [name, expected] of Object.entries(COMPACTED)) {
    it(`${name}: the new snapshot's live rows are the old one's, outputs carry the current field ids, no delete file dangles, and a second run plans nothing`, async () => {
      // Prepare
      const { store, root } = await copyTable(name);
      const before = await liveRows(store, name);
      const snapshotsBefore = (await loadTable(store, name)).metadata.snapshots.length;
      const io = captureIo();

      // Act
      const code = await run(['compact', root, '--format', 'iceberg', ...acknowledgeUuidNaming(name)], io);

      // Assess: the same live rows, as many as the writer recorded
      expect(code, io.stderr.join('\n')).toBe(0);
      const after = await liveRows(store, name);
      expect(before.rows).toHaveLength(expected.liveRows);
      expect(after.rows).toEqual(before.rows);
      // One tagged replace per rewritten group, or nothing committed at all
      const table = await loadTable(store, name);
      const added = table.metadata.snapshots.slice(snapshotsBefore).map((s) => s.summary);
      if (expected.rewrites) {
        expect(added.length).toBeGreaterThan(0);
        for (const summary of added) {
          expect(summary.operation).toBe('replace');
          expect(summary[RUN_ID_PROPERTY]).toMatch(/^cli-/);
          expect(summary[GROUP_ID_PROPERTY]).toMatch(/^g/);
        }
      } else {
        expect(added).toEqual([]);
        expect(io.stdout.join('\n')).toMatch(/nothing to do/);
      }
      // Every output's Parquet footer carries the current schema's field ids, nested ones too
      const beforePaths = new Set(before.files.dataFiles.map((f) => f.entry.file.path));
      const outputs = after.files.dataFiles.filter((f) => !beforePaths.has(f.entry.file.path));
      expect(outputs.length > 0).toBe(expected.rewrites);
      // Format v3 keeps row lineage: outputs also carry the two lineage columns under their reserved ids
      const v3 = (await loadTable(store, name)).metadata.formatVersion === 3;
      const ids = {
        ...idsByName(after.files.schema),
        ...(v3
          ? {
              [ROW_ID_FIELD.name]: ROW_ID_FIELD.id,
              [LAST_UPDATED_SEQUENCE_NUMBER_FIELD.name]: LAST_UPDATED_SEQUENCE_NUMBER_FIELD.id,
            }
          : {}),
      };
      for (const o of outputs)
        expect(await fieldIdsOf(join(dir as string, o.entry.file.key)), o.entry.file.key).toEqual(ids);
      // No delete file is left that applies to no live data file
      expect(after.dangling).toEqual([]);
      // A second run plans nothing: no snapshot, no byte of the table changed
      const bytes = await treeBytes(root);
      const again = captureIo();
      expect(
        await run(['compact', root, '--format', 'iceberg', ...acknowledgeUuidNaming(name)], again),
        again.stderr.join('\n'),
      ).toBe(0);
      expect(again.stdout.join('\n')).toMatch(/nothing to do/);
      expect(again.stdout.join('\n')).not.toMatch(/ g\d{4}: /);
      expect((await loadTable(store, name)).metadata.snapshots.length).toBe(snapshotsBefore + added.length);
      expect(withoutWorkArea(await treeBytes(root))).toEqual(withoutWorkArea(bytes));
    });
  }

  it('spark_v2_position_deletes: the delete files the rewrite left dangling leave the new snapshot', async () => {
    // Prepare
    const name = 'spark_v2_position_deletes';
    const { store, root } = await copyTable(name);
    const before = await liveRows(store, name);
    const io = captureIo();

    // Act
    const code = await run(['compact', root, '--format', 'iceberg', ...acknowledgeUuidNaming(name)], io);

    // Assess: fewer delete files, each still applying to a live data file; 110 live rows of 192 written
    expect(code, io.stderr.join('\n')).toBe(0);
    const after = await liveRows(store, name);
    expect(before.files.deleteFiles).toHaveLength(3);
    expect(after.files.deleteFiles.length).toBeLessThan(before.files.deleteFiles.length);
    expect(after.dangling).toEqual([]);
    expect(after.rows).toHaveLength(110);
    const written = before.files.dataFiles.reduce((n, f) => n + Number(f.entry.file.recordCount), 0);
    expect(written).toBe(192);
  });

  it('spark_v2_schema_evolution: files of the current schema (a struct added) are rewritten with every field id, nested ones too, together with the files of older schemas projected onto it', async () => {
    // Prepare: Spark's one file of the current schema (id 1, point 3 with x 4 and y 5) appended four more times
    // under new names, so it has company worth merging: the same bytes, so the same Parquet schema and key-value
    // metadata, and four duplicate rows the multiset must keep
    const name = 'spark_v2_schema_evolution';
    const { store, root } = await copyTable(name);
    const table = await loadTable(store, name);
    const spark = (await readSnapshotFiles(store, table)).dataFiles;
    const current = spark.find((f) => f.entry.file.key.includes('/00000-8-'));
    if (current === undefined) throw new Error('the fixture has a file of its current schema');
    for (let n = 0; n < 4; n += 1) {
      const key = `${name}/data/appended-${n}.parquet`;
      await store.put(key, await store.get(current.entry.file.key));
      await commitAppend(
        store,
        new PathCatalog(store, pathCatalogOptions(name)),
        {
          tableLocation: name,
          addedFiles: [await addedFile(store, table, key, current.entry.file.partition)],
        },
        { clock: { now: () => Date.UTC(2024, 2, 3) } },
      );
    }
    const before = await liveRows(store, name);
    const io = captureIo();

    // Act
    const code = await run(['compact', root, '--format', 'iceberg', ...acknowledgeUuidNaming(name)], io);

    // Assess: the same rows (older files read through their field ids), one output for the five current-schema
    // files and the six of older schemas, which the default bin-pack projects onto the current schema by field id
    expect(code, io.stderr.join('\n')).toBe(0);
    const after = await liveRows(store, name);
    expect(before.rows).toHaveLength(7 + 4);
    expect(after.rows).toEqual(before.rows);
    const beforePaths = new Set(before.files.dataFiles.map((f) => f.entry.file.path));
    const outputs = after.files.dataFiles.filter((f) => !beforePaths.has(f.entry.file.path));
    expect(outputs).toHaveLength(1);
    expect(after.files.dataFiles).toHaveLength(1);
    expect(Number(outputs[0]?.entry.file.recordCount)).toBe(7 + 4);
    expect(await fieldIdsOf(join(dir as string, outputs[0]?.entry.file.key ?? ''))).toEqual({
      id: 1,
      point: 3,
      x: 4,
      y: 5,
    });
    expect(idsByName(after.files.schema)).toEqual({ id: 1, point: 3, x: 4, y: 5 });
    // None of Spark's seven files, of whichever schema, is still live
    const live = new Set(after.files.dataFiles.map((f) => f.entry.file.path));
    expect(spark.filter((f) => !live.has(f.entry.file.path))).toHaveLength(7);
  });

  it('spark_v2_schema_evolution with rewrite-all: its seven files of six schemas (added, renamed, promoted, reordered, dropped columns, a struct added) become one file of the current schema, rows projected by field id', async () => {
    // Prepare: Spark's table as written — id; + new_column int (2); renamed payload; promoted to long; reordered;
    // payload dropped and point struct (3: x 4, y 5) added — one or two files under each schema
    const name = 'spark_v2_schema_evolution';
    const { store, root } = await copyTable(name);
    const before = await liveRows(store, name);
    const io = captureIo();

    // Act
    const code = await run(
      [
        'compact',
        root,
        '--format',
        'iceberg',
        '--rewrite-option',
        'rewrite-all=true',
        ...acknowledgeUuidNaming(name),
      ],
      io,
    );

    // Assess: one data file (the table is unpartitioned), of the current schema's names, field ids and types,
    // holding every live row as DuckDB projects each input by field id onto the current schema
    expect(code, io.stderr.join('\n')).toBe(0);
    const after = await liveRows(store, name);
    expect(before.files.dataFiles).toHaveLength(7);
    expect(after.files.dataFiles).toHaveLength(1);
    expect(after.rows).toHaveLength(7);
    expect(after.rows).toEqual(before.rows);
    const output = join(dir as string, after.files.dataFiles[0]?.entry.file.key ?? '');
    const schema = await db.rows(
      `SELECT name, type, num_children, field_id, repetition_type FROM parquet_schema(${sqlString(output)})`,
    );
    expect(
      schema.slice(1).map((e) => [e.name, e.type, Number(e.num_children ?? 0), Number(e.field_id)]),
    ).toEqual([
      ['id', 'INT64', 0, 1],
      ['point', null, 2, 3],
      ['x', 'DOUBLE', 0, 4],
      ['y', 'DOUBLE', 0, 5],
    ]);
    expect(schema.slice(1).every((e) => e.repetition_type === 'OPTIONAL')).toBe(true);
    const [kv] = await db.rows(
      `SELECT decode(value) AS v FROM parquet_kv_metadata(${sqlString(output)}) WHERE decode(key) = 'iceberg.schema'`,
    );
    expect(JSON.parse(String(kv?.v)).fields.map((f: { id: number }) => f.id)).toEqual([1, 3]);
    expect(
      await db.rows(`SELECT count(*)::INT AS n FROM read_parquet(${sqlString(output)}) WHERE point IS NULL`),
    ).toEqual([{ n: 6 }]);
  });

  for (const [name, feature] of Object.entries(REFUSED)) {
    it(`${name}: refused with a message naming ${feature.split(' (')[0]}, nothing of it changed`, async () => {
      // Prepare
      const { root } = await copyTable(name);
      const bytesBefore = await treeBytes(root);
      const io = captureIo();

      // Act
      const code = await run(['compact', root, '--format', 'iceberg', ...acknowledgeUuidNaming(name)], io);

      // Assess
      expect(code).not.toBe(0);
      expect(io.stderr.join('\n')).toBe(refusal(root, feature));
      expect(await treeBytes(root)).toEqual(bytesBefore);
    });
  }
});
