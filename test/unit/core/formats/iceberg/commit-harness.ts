// A writable copy of a vendored Iceberg table in a temporary folder, and DuckDB as the independent oracle: the
// live table's row multiset (position deletes applied), and Parquet files written with the table's field ids —
// what a compaction's rewrite would produce — with their Iceberg metrics computed from the footer.
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalObjectStore } from '../../../../../functions/adapters/local-object-store.js';
import {
  type AddedDataFile,
  type LiveDataFile,
  type LoadedTable,
  metricsConfig,
  type PartitionTuple,
  readParquetMetrics,
  readSnapshotFiles,
  type SnapshotFiles,
  schemaById,
} from '../../../../../functions/core/formats/iceberg/index.js';
import type { ObjectStore } from '../../../../../functions/ports/object-store.js';
import type { DuckDb } from '../../../../support/duckdb.js';
import { sqlString } from '../../../../support/duckdb.js';
import { ICEBERG_FIXTURES } from './fixture-tables.js';

/** A copy of one vendored table under a fresh temporary folder; the store's keys are `<table>/…`. */
export interface TableCopy {
  readonly dir: string;
  readonly store: LocalObjectStore;
  readonly table: string;
  /** The file path of a store key. */
  file(key: string): string;
  remove(): void;
}

export function copyFixtureTable(table: string): TableCopy {
  const dir = mkdtempSync(join(tmpdir(), 'lc-iceberg-commit-'));
  cpSync(join(ICEBERG_FIXTURES, table), join(dir, table), { recursive: true });
  return {
    dir,
    store: new LocalObjectStore(dir),
    table,
    file: (key) => join(dir, key),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** The position deletes (by data file store key) that apply to `files`, read from the delete files themselves. */
async function deletedPositions(
  duckdb: DuckDb,
  copy: TableCopy,
  table: LoadedTable,
  files: SnapshotFiles,
): Promise<Map<string, Set<number>>> {
  const out = new Map<string, Set<number>>();
  for (const d of files.deleteFiles) {
    if (d.kind !== 'position') throw new Error(`the oracle applies position deletes only, not ${d.kind}`);
    const rows = await duckdb.rows(
      `SELECT file_path, pos FROM read_parquet(${sqlString(copy.file(d.entry.file.key))})`,
    );
    for (const r of rows) {
      const path = r.file_path as string;
      if (!d.appliesTo.includes(path)) continue;
      const key = table.paths.key(path);
      const set = out.get(key) ?? new Set<number>();
      set.add(Number(r.pos));
      out.set(key, set);
    }
  }
  return out;
}

/** The rows of one data file (deletes applied) as canonical JSON strings of the schema's columns. */
async function fileRows(
  duckdb: DuckDb,
  copy: TableCopy,
  key: string,
  columns: readonly string[],
  deleted: ReadonlySet<number> | undefined,
): Promise<string[]> {
  const select = columns.map((c) => `"${c}"`).join(', ');
  const rows = await duckdb.rows(
    `SELECT ${select}, file_row_number AS __pos FROM read_parquet(${sqlString(copy.file(key))}, file_row_number = true)`,
  );
  return rows
    .filter((r) => !deleted?.has(Number(r.__pos)))
    .map((r) => JSON.stringify(columns.map((c) => r[c] ?? null)));
}

/** The multiset of the live rows of a snapshot (sorted canonical strings), position deletes applied. */
export async function liveRows(
  duckdb: DuckDb,
  copy: TableCopy,
  table: LoadedTable,
  files: SnapshotFiles,
): Promise<string[]> {
  const columns = files.schema.fields.map((f) => f.name);
  const deleted = await deletedPositions(duckdb, copy, table, files);
  const out: string[] = [];
  for (const f of files.dataFiles)
    out.push(...(await fileRows(duckdb, copy, f.entry.file.key, columns, deleted.get(f.entry.file.key))));
  return out.sort();
}

/**
 * Writes the rows of `inputs` (their applicable position deletes applied) into one Parquet file at `key`, with the
 * table's field ids — the rewrite's output — and returns it as the commit adds it (metrics from its footer).
 */
export async function rewriteInto(
  duckdb: DuckDb,
  copy: TableCopy,
  table: LoadedTable,
  files: SnapshotFiles,
  inputs: readonly LiveDataFile[],
  key: string,
  partition?: PartitionTuple,
): Promise<AddedDataFile> {
  const schema = schemaById(table.metadata);
  if (schema === undefined) throw new Error('no schema');
  const columns = schema.fields.map((f) => f.name);
  const deleted = await deletedPositions(duckdb, copy, table, files);
  const parts: string[] = [];
  for (const input of inputs) {
    const k = input.entry.file.key;
    const gone = [...(deleted.get(k) ?? [])];
    const where = gone.length === 0 ? '' : ` WHERE file_row_number NOT IN (${gone.join(', ')})`;
    parts.push(
      `SELECT ${columns.map((c) => `"${c}"`).join(', ')} FROM read_parquet(${sqlString(copy.file(k))}, file_row_number = true)${where}`,
    );
  }
  await writeWithFieldIds(duckdb, copy, table, parts.join(' UNION ALL '), key);
  return addedFile(copy.store, table, key, partition ?? (inputs[0] as LiveDataFile).entry.file.partition);
}

/** Writes the result of `select` (the table's columns) to `key` with the table's field ids. */
export async function writeWithFieldIds(
  duckdb: DuckDb,
  copy: TableCopy,
  table: LoadedTable,
  select: string,
  key: string,
): Promise<void> {
  const schema = schemaById(table.metadata);
  if (schema === undefined) throw new Error('no schema');
  const ids = schema.fields.map((f) => `'${f.name}': ${f.id}`).join(', ');
  await duckdb.writeParquet(select, copy.file(key), { extraOptions: [`FIELD_IDS {${ids}}`] });
}

/** A written file as the commit adds it: its metadata path, partition, and metrics read from its footer. */
export async function addedFile(
  store: ObjectStore,
  table: LoadedTable,
  key: string,
  partition: PartitionTuple,
): Promise<AddedDataFile> {
  const schema = schemaById(table.metadata);
  if (schema === undefined) throw new Error('no schema');
  return {
    path: table.paths.path(key),
    partition,
    metrics: await readParquetMetrics(store, key, schema, metricsConfig(table.metadata)),
  };
}

/** Every store key the table's snapshots reach (manifest lists and their manifests), to find orphans. */
export async function reachableMetadataKeys(store: ObjectStore, table: LoadedTable): Promise<Set<string>> {
  const keys = new Set<string>();
  for (const s of table.metadata.snapshots) {
    const files = await readSnapshotFiles(store, table, { snapshotId: s.snapshotId });
    keys.add(table.paths.key(s.manifestList));
    for (const m of files.manifests) keys.add(m.key);
  }
  return keys;
}

/** The Avro files under the table's metadata folder. */
export async function avroKeys(store: ObjectStore, tableRoot: string): Promise<string[]> {
  const out: string[] = [];
  for await (const o of store.listAll(`${tableRoot}/metadata/`)) if (o.key.endsWith('.avro')) out.push(o.key);
  return out.sort();
}
