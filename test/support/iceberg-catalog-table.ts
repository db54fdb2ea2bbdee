// An Iceberg events table for catalog tests: built with the sample writer in a temporary folder (path catalog,
// a few appends per day), then handed to a metastore catalog by its current metadata location — the way a table
// is registered in Glue or a REST catalog (`register_table`). Also: a "rewrite" of one data file into a copy of
// it (same rows, a fresh name, metrics from its footer), which is all a commit test needs as a compaction output.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { type LoadedTable, loadTable } from '../../functions/core/formats/iceberg/catalog.js';
import type { AddedDataFile } from '../../functions/core/formats/iceberg/commit.js';
import { readSnapshotFiles } from '../../functions/core/formats/iceberg/live-files.js';
import { schemaById } from '../../functions/core/formats/iceberg/metadata.js';
import { metricsConfig, readParquetMetrics } from '../../functions/core/formats/iceberg/metrics.js';
import { appendIcebergEvents, createIcebergEventsTable } from '../../functions/tools/sample-iceberg.js';

export const CATALOG_TABLE_NOW = Date.UTC(2024, 2, 3);
export const CATALOG_TABLE_DAYS = ['2024-03-01', '2024-03-02'] as const;

export interface CatalogTable {
  readonly dir: string;
  readonly store: LocalObjectStore;
  /** The table root below the store: `events`. */
  readonly root: string;
  /** The writer's path of the current metadata file, as a catalog records it. */
  readonly metadataLocation: string;
  /** The table location recorded in the metadata. */
  readonly location: string;
  readonly initial: LoadedTable;
  remove(): Promise<void>;
}

/** An events table with `batches` single-file appends on each of two days, in a fresh temporary folder. */
export async function buildCatalogTable(batches = 3): Promise<CatalogTable> {
  const dir = await mkdtemp(join(tmpdir(), 'lc-iceberg-catalog-'));
  const store = new LocalObjectStore(dir);
  const root = 'events';
  await createIcebergEventsTable(store, root, { now: CATALOG_TABLE_NOW });
  let seed = 1;
  for (const day of CATALOG_TABLE_DAYS)
    for (let i = 0; i < batches; i++)
      await appendIcebergEvents(store, root, { day, rows: 40 + i, seed: seed++, now: CATALOG_TABLE_NOW });
  const initial = await loadTable(store, root);
  return {
    dir,
    store,
    root,
    metadataLocation: initial.paths.path(initial.metadataKey),
    location: initial.metadata.location,
    initial,
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

/**
 * A copy of the live data file `path` of `table` under a fresh name, as a replace adds it: the same rows, so
 * replacing the file with it keeps the table's rows.
 */
export async function copyOfDataFile(
  store: LocalObjectStore,
  table: LoadedTable,
  path: string,
): Promise<AddedDataFile> {
  const files = await readSnapshotFiles(store, table);
  const live = files.dataFiles.find((f) => f.entry.file.path === path);
  if (live === undefined) throw new Error(`${path} is not live`);
  const key = live.entry.file.key.replace(
    /\.parquet$/,
    `-copy-${Math.random().toString(36).slice(2)}.parquet`,
  );
  await store.put(key, await store.get(live.entry.file.key));
  const schema = schemaById(table.metadata);
  if (schema === undefined) throw new Error('no schema');
  return {
    path: table.paths.path(key),
    partition: live.entry.file.partition,
    metrics: await readParquetMetrics(store, key, schema, metricsConfig(table.metadata, schema)),
  };
}

/** The live data file paths of the table's current snapshot, sorted. */
export async function livePaths(store: LocalObjectStore, table: LoadedTable): Promise<string[]> {
  const files = await readSnapshotFiles(store, table);
  return files.dataFiles.map((f) => f.entry.file.path).sort();
}
