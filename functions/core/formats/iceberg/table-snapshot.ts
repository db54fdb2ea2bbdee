// Maps an Iceberg table's current snapshot onto the TableFormat port: live data files grouped by (partition spec,
// partition tuple) under a stable partition path, footers read on request, each file's applicable deletes carried
// as its `deletes` (counted exactly when footers are read), and every file the rewrite must not touch yet (data
// files with deletes it cannot apply, non-Parquet data files, delete files) in `ignored` with why.

import type { SchemaElement } from 'hyparquet';
import pLimit from 'p-limit';
import type { ObjectStore } from '../../../ports/object-store.js';
import type { PartitionValue } from '../../partition.js';
import type { PlanInputFile } from '../../planning.js';
import { withStoredFooter } from '../logged-files.js';
import type { IgnoredObject, SnapshotPartition, TableSnapshot } from '../table-format.js';
import { type IcebergCatalog, type LoadedTable, PathCatalog } from './catalog.js';
import { IcebergMetadataError } from './errors.js';
import { type LiveDataFile, partitionKey, readSnapshotFiles, type SnapshotFiles } from './live-files.js';
import { type IcebergSchema, schemaById, type TableMetadata } from './metadata.js';
import { projectDataFile, projectionRestatesFile } from './projection.js';
import {
  appliedDeleteOf,
  deletesByDataFile,
  estimatedDeletedRows,
  inputDeletesOf,
  parseInputDeletes,
  readDeletedRows,
  unappliableDeletes,
} from './row-deletes.js';
import { partitionPath, refuseUnsafePartition } from './snapshot.js';

/** The port's view of a table's current snapshot, and what it was read from. */
export interface IcebergTableSnapshot {
  readonly snapshot: TableSnapshot;
  readonly table: LoadedTable;
  readonly files: SnapshotFiles;
  /** The current snapshot's id; undefined for a table without snapshots (then nothing is live). */
  readonly snapshotId: bigint | undefined;
}

/**
 * The folder (relative to the table root) under which each partition spec's partitions are named: `data`, where
 * Iceberg writers put data files by default (`<location>/data/<partitionToPath>`), for the lowest spec id of every
 * list of partition field names, and `data/spec-<id>` for a later spec with the same names (whose paths could
 * spell the same text for another tuple, e.g. identity then bucket of one column under one name).
 *
 * Why this is stable and unique: specs are immutable and only ever added, so the choice depends on nothing but
 * the spec's id and definition; within one folder `partitionToPath` is one-to-one for one spec, and a
 * `spec-<id>` segment has no `=`, so it can never be a `name=value` segment of another spec's path.
 */
export function specFolders(metadata: TableMetadata): ReadonlyMap<number, string> {
  const firstByNames = new Map<string, number>();
  for (const spec of [...metadata.specs].sort((a, b) => a.specId - b.specId)) {
    const names = JSON.stringify(spec.fields.map((f) => f.name));
    if (!firstByNames.has(names)) firstByNames.set(names, spec.specId);
  }
  const folders = new Map<number, string>();
  for (const spec of metadata.specs) {
    const names = JSON.stringify(spec.fields.map((f) => f.name));
    folders.set(spec.specId, firstByNames.get(names) === spec.specId ? 'data' : `data/spec-${spec.specId}`);
  }
  return folders;
}

/**
 * A data file's partition as the port names it: `data/event_timestamp_day=2024-03-01` (Hive-style `name=value` of
 * the transformed values, as Iceberg's `partitionToPath` renders them, under the spec's folder; `data` when
 * unpartitioned), and the named values. It is also the folder a rewrite's outputs are written to, which is where
 * an Iceberg writer with the default layout would have put them: below the table location, as Iceberg requires.
 */
export function icebergPartitionOf(
  metadata: TableMetadata,
  folders: ReadonlyMap<number, string>,
  file: LiveDataFile,
): { partition: string; values: PartitionValue[] } {
  const tuple = file.entry.file.partition;
  const { path, values } = partitionPath(metadata, tuple);
  const folder = folders.get(tuple.specId) ?? `data/spec-${tuple.specId}`;
  return { partition: path === '' ? folder : `${folder}/${path}`, values };
}

/**
 * What the rows of a live data file of a v3 table inherit as their lineage (Iceberg spec, "Row Lineage"): its
 * `first_row_id` (read or inherited from its manifest) and its data sequence number; undefined below v3, where rows
 * have no lineage. A v3 data file without a first row id (added before the table was upgraded to v3) gives a
 * reason to leave it alone instead: its rows' `_row_id` is null, and a rewrite would have to keep it null while
 * the spec has its new file inherit ids.
 */
export function rowLineageOf(
  metadata: TableMetadata,
  data: LiveDataFile,
): { firstRowId: string; sequenceNumber: string } | string | undefined {
  if (metadata.formatVersion < 3) return undefined;
  const { firstRowId } = data.entry.file;
  if (firstRowId === undefined)
    return 'Iceberg v3 data file without first_row_id (added before the upgrade to v3): its rows have no _row_id to keep';
  return { firstRowId: firstRowId.toString(), sequenceNumber: data.entry.dataSequenceNumber.toString() };
}

/** The port's view of the files of one snapshot (footers not read). */
export function toPortSnapshot(table: LoadedTable, files: SnapshotFiles, now: number): TableSnapshot {
  const folders = specFolders(table.metadata);
  const byPartition = new Map<string, { values: PartitionValue[]; tuple: string; files: PlanInputFile[] }>();
  const ignored: IgnoredObject[] = [];
  const deletesOf = deletesByDataFile(files);
  for (const data of files.dataFiles) {
    const file = data.entry.file;
    // Where outputs of this file's partition would go is checked for every live file, before any is read.
    const { partition, values } = icebergPartitionOf(table.metadata, folders, data);
    refuseUnsafePartition(table, partition, file.partition.specId);
    const applied = (deletesOf.get(file.path) ?? []).map(appliedDeleteOf);
    const unappliable = applied.length === 0 ? undefined : unappliableDeletes(applied, files.schema);
    if (unappliable !== undefined) {
      ignored.push({ key: file.key, reason: unappliable });
      continue;
    }
    if (file.format !== 'PARQUET') {
      ignored.push({ key: file.key, reason: `Iceberg ${file.format} data file: only Parquet is rewritten` });
      continue;
    }
    const lineage = rowLineageOf(table.metadata, data);
    if (typeof lineage === 'string') {
      ignored.push({ key: file.key, reason: lineage });
      continue;
    }
    const tuple = partitionKey(file.partition);
    let bucket = byPartition.get(partition);
    if (bucket === undefined) {
      bucket = { values, tuple, files: [] };
      byPartition.set(partition, bucket);
    } else if (bucket.tuple !== tuple) {
      // Two tuples spelled alike (a value rendering ambiguously): never grouped together, never guessed at.
      ignored.push({
        key: file.key,
        reason: `its partition (${tuple}) renders as "${partition}" like another one (${bucket.tuple}), so it is left alone`,
      });
      continue;
    }
    bucket.files.push({
      key: file.key,
      size: Number(file.fileSizeInBytes),
      etag: '',
      rows: Number(file.recordCount),
      ...(lineage === undefined ? {} : { rowLineage: lineage }),
      ...(applied.length === 0
        ? {}
        : {
            deletes: inputDeletesOf(
              file.path,
              applied,
              estimatedDeletedRows(applied, Number(file.recordCount)),
            ),
          }),
    });
  }
  for (const d of files.deleteFiles) {
    const f = d.entry.file;
    ignored.push({
      key: f.key,
      reason: `Iceberg ${d.kind} delete file${d.kind === 'deletion-vector' ? ` (blob at ${f.contentOffset})` : ''} applying to ${d.appliesTo.length} live data file${d.appliesTo.length === 1 ? '' : 's'}`,
    });
  }
  const partitions: SnapshotPartition[] = [...byPartition]
    .map(([partition, { values, files: list }]) => ({
      partition,
      values,
      files: list.sort((a, b) => compareBytes(a.key, b.key)),
    }))
    .sort((a, b) => compareBytes(a.partition, b.partition));
  return {
    tableRoot: table.tableRoot,
    listedAt: now,
    partitions,
    ignored: ignored.sort((a, b) => compareBytes(a.key, b.key)),
    foreignTables: [],
  };
}

/**
 * The current snapshot of the path-based table at `location` in the port's shape. With `partition`, only that
 * partition's files have their footers read (`readFooters`); a footer that cannot be read, or a live file missing
 * from storage, marks the file `unreadable` with why. Other errors (throttling, network) fail the snapshot.
 */
export async function snapshotIcebergTable(
  store: ObjectStore,
  location: string,
  options: {
    readonly now: number;
    readonly readFooters?: boolean;
    readonly concurrency?: number;
    readonly partition?: string;
    /** Where the current metadata is found. @default the path catalog (the table root's metadata/ folder) */
    readonly catalog?: IcebergCatalog;
  },
): Promise<IcebergTableSnapshot> {
  const table = await (options.catalog ?? new PathCatalog(store)).load(location);
  const files = await readSnapshotFiles(store, table, {
    ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
  });
  let snapshot = toPortSnapshot(table, files, options.now);
  if (options.partition !== undefined)
    snapshot = {
      ...snapshot,
      partitions: snapshot.partitions.filter((p) => p.partition === options.partition),
    };
  if (options.readFooters) {
    const limit = pLimit(options.concurrency ?? 64);
    const partitions = await Promise.all(
      snapshot.partitions.map(async (p) => ({
        ...p,
        files: await Promise.all(
          p.files.map((f) =>
            limit(() =>
              withStoredFooter(
                store,
                f,
                'the Iceberg snapshot',
                'an Iceberg client',
                undefined,
                projectionInspector(table.metadata, schemaById(table.metadata) ?? files.schema),
              ),
            ),
          ),
        ),
      })),
    );
    snapshot = { ...snapshot, partitions: await withDeletedCounts(store, table.name, partitions) };
  }
  return { snapshot, table, files, snapshotId: files.snapshot?.snapshotId };
}

/**
 * The partitions with each file's `deletes.rows` the exact number of rows its deletes remove (their positions
 * read): what a plan, and so verify, counts on. A file whose deletes cannot be read is marked `unreadable` with
 * why, so it is reported and left alone while the partition's other files are planned.
 */
async function withDeletedCounts(
  store: ObjectStore,
  table: string,
  partitions: readonly SnapshotPartition[],
): Promise<SnapshotPartition[]> {
  return Promise.all(
    partitions.map(async (p) => {
      const targets = p.files.flatMap((f) =>
        f.deletes === undefined || f.unreadable !== undefined
          ? []
          : [
              {
                key: f.key,
                planned: f.deletes,
                target: parseInputDeletes(table, f.key, f.deletes),
                rows: f.rows,
              },
            ],
      );
      if (targets.length === 0) return p;
      const counted = new Map<string, PlanInputFile['deletes'] | string>();
      const count = async (list: typeof targets) => {
        const read = await readDeletedRows(
          store,
          table,
          list.map((t) => ({ ...t.target, recordCount: t.rows })),
        );
        for (const t of list) {
          const deleted = read.get(t.target.dataPath);
          if (deleted !== undefined) counted.set(t.key, { ...t.planned, rows: deleted.count });
        }
      };
      try {
        await count(targets); // each delete file read once for the whole partition
      } catch (err) {
        if (!(err instanceof IcebergMetadataError)) throw err;
        // Which files the failure is about: each on its own, so the others are still planned.
        for (const t of targets)
          await count([t]).catch((one: unknown) => {
            if (!(one instanceof IcebergMetadataError)) throw one;
            counted.set(t.key, one.reason);
          });
      }
      return {
        ...p,
        files: p.files.map((f) => {
          const c = counted.get(f.key);
          if (c === undefined) return f;
          if (typeof c === 'string')
            return { ...f, unreadable: `its Iceberg deletes cannot be applied: ${c}` };
          return { ...f, deletes: c };
        }),
      };
    }),
  );
}

function compareBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

/**
 * Each data file's projection onto the current schema, from its footer's schema elements (see projection.ts): what
 * the planner groups by, so every compaction writes the current schema where the projection is exact. A v3 table's
 * projection carries the row lineage columns through, which the engine fills for every row before projecting.
 */
function projectionInspector(
  metadata: TableMetadata,
  current: IcebergSchema,
): (schema: readonly SchemaElement[]) => Partial<PlanInputFile> {
  const json = JSON.stringify({ type: 'struct', 'schema-id': current.schemaId, fields: current.fields });
  const options = { formatVersion: metadata.formatVersion };
  return (elements) => {
    const projected = projectDataFile(elements, current, json, options);
    if (projected.kind === 'projected')
      return {
        projection: projected.projection,
        ...(projectionRestatesFile(elements, current, projected.projection, options)
          ? { projectionIdentity: true }
          : {}),
      };
    if (projected.kind === 'refused') return { projectionRefused: projected.reason };
    return {};
  };
}
