// An Iceberg table worth maintaining, for catalog maintenance tests: a streaming-style appender's table (one
// snapshot per micro-batch, two days) compacted by `lake-compactor compact --format iceberg`, so that older
// snapshots hold files the current one replaced. Built once into a template folder and copied per test; the copy is
// then registered in a metastore catalog by its current metadata location, the way `register_table` does.
// What expiring must delete is computed here from the snapshot reader (each snapshot's live files and manifests),
// never by the code under test.
import { cp, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { runCompact } from '../../functions/cli/compact.js';
import { type LoadedTable, loadTable } from '../../functions/core/formats/iceberg/catalog.js';
import type { AddedDataFile } from '../../functions/core/formats/iceberg/commit.js';
import { readSnapshotFiles } from '../../functions/core/formats/iceberg/live-files.js';
import { schemaById } from '../../functions/core/formats/iceberg/metadata.js';
import { metricsConfig, readParquetMetrics } from '../../functions/core/formats/iceberg/metrics.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';
import { appendIcebergEvents, createIcebergEventsTable } from '../../functions/tools/sample-iceberg.js';
import { captureIo } from './cli-io.js';

/** When the table was written and compacted: every snapshot carries this timestamp. */
export const MAINTAINED_WRITTEN = Date.UTC(2024, 2, 3);
/** A maintenance clock far past every snapshot and every file's modification time. */
export const MAINTENANCE_FAR = Date.UTC(2100, 0, 1);
export const MAINTAINED_DAYS = ['2024-03-01', '2024-03-02'] as const;
/** Appends per day: six small files, which compact merges into one. */
export const MAINTAINED_BATCHES = 6;

/** Builds the appended and compacted table under `<folder>/events`, returning the folder. */
export async function buildMaintainedTemplate(): Promise<string> {
  const folder = await mkdtemp(join(tmpdir(), 'lc-iceberg-maint-template-'));
  const store = new LocalObjectStore(folder);
  await createIcebergEventsTable(store, 'events', { now: MAINTAINED_WRITTEN });
  let seed = 1;
  for (const day of MAINTAINED_DAYS)
    for (let b = 0; b < MAINTAINED_BATCHES; b += 1)
      await appendIcebergEvents(store, 'events', {
        day,
        rows: 20 + b,
        seed: seed++,
        now: MAINTAINED_WRITTEN,
      });
  await runCompact(join(folder, 'events'), { format: 'iceberg' }, captureIo({ now: MAINTAINED_WRITTEN }));
  return folder;
}

export interface MaintainedTable {
  readonly dir: string;
  readonly store: LocalObjectStore;
  /** The table root below the store: `events`. */
  readonly root: string;
  /** The table as the path catalog leaves it, before any catalog is involved. */
  readonly initial: LoadedTable;
  /** The writer's path of the current metadata file, as a catalog records it. */
  readonly metadataLocation: string;
  remove(): Promise<void>;
}

/** A fresh copy of the template. */
export async function copyMaintainedTable(template: string): Promise<MaintainedTable> {
  const dir = await mkdtemp(join(tmpdir(), 'lc-iceberg-maint-'));
  await cp(template, dir, { recursive: true });
  const store = new LocalObjectStore(dir);
  const initial = await loadTable(store, 'events');
  return {
    dir,
    store,
    root: 'events',
    initial,
    metadataLocation: initial.paths.path(initial.metadataKey),
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

/** Every file under `dir` outside the work area, relative, sorted. */
export async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name).slice(dir.length + 1))
    .filter((k) => !k.startsWith('_lake-compactor/') && !k.includes('/_lake-compactor/'))
    .sort();
}

/**
 * What expiring every snapshot of `table` but `kept` must delete, by the snapshot reader: manifest lists of the
 * others, manifests only they list, data and delete files live in one of them and in none of the kept ones.
 */
export async function expectedExpiryDeletes(
  store: ObjectStore,
  table: LoadedTable,
  kept: ReadonlySet<bigint>,
): Promise<string[]> {
  const keptFiles = new Set<string>();
  const keptManifests = new Set<string>();
  const goneFiles = new Set<string>();
  const goneManifests = new Set<string>();
  const lists: string[] = [];
  for (const s of table.metadata.snapshots) {
    const read = await readSnapshotFiles(store, table, { snapshotId: s.snapshotId });
    const fileKeys = [...read.dataFiles, ...read.deleteFiles].map((f) => f.entry.file.key);
    const manifestKeys = read.manifests.map((m) => m.key);
    if (kept.has(s.snapshotId)) {
      for (const k of fileKeys) keptFiles.add(k);
      for (const k of manifestKeys) keptManifests.add(k);
    } else {
      for (const k of fileKeys) goneFiles.add(k);
      for (const k of manifestKeys) goneManifests.add(k);
      lists.push(table.paths.key(s.manifestList));
    }
  }
  return [
    ...lists,
    ...[...goneManifests].filter((k) => !keptManifests.has(k)),
    ...[...goneFiles].filter((k) => !keptFiles.has(k)),
  ].sort();
}

/**
 * A data file the current snapshot no longer lists (one of the appender's, replaced by the compaction), as an
 * append would add it back: the file a concurrent writer may reference while expire_snapshots would delete it.
 */
export async function replacedDataFile(store: LocalObjectStore, table: LoadedTable): Promise<AddedDataFile> {
  const live = new Set((await readSnapshotFiles(store, table)).dataFiles.map((f) => f.entry.file.key));
  const oldest = table.metadata.snapshots[0];
  if (oldest === undefined) throw new Error('the table has no snapshot');
  const old = (await readSnapshotFiles(store, table, { snapshotId: oldest.snapshotId })).dataFiles.find(
    (f) => !live.has(f.entry.file.key),
  );
  if (old === undefined) throw new Error('no replaced data file');
  const schema = schemaById(table.metadata);
  if (schema === undefined) throw new Error('no schema');
  return {
    path: old.entry.file.path,
    partition: old.entry.file.partition,
    metrics: await readParquetMetrics(
      store,
      old.entry.file.key,
      schema,
      metricsConfig(table.metadata, schema),
    ),
  };
}
