// Shapes an Iceberg snapshot's live files as the TableFormat port's TableSnapshot: one partition per partition
// tuple (as Iceberg writers render its path), files with deletes or of another file format set aside with why.
import type { ObjectStore } from '../../../ports/object-store.js';
import { icebergPathEscape, KeyOutsideTableError, keyRefusal } from '../../keys.js';
import type { PartitionValue } from '../../partition.js';
import type { PlanInputFile } from '../../planning.js';
import type { IgnoredObject, SnapshotPartition, TableSnapshot } from '../table-format.js';
import { type LoadedTable, loadTable } from './catalog.js';
import { IcebergUnsupportedError } from './errors.js';
import { type LiveDataFile, readSnapshotFiles, type SnapshotFiles } from './live-files.js';
import type { PartitionTuple } from './manifests.js';
import { findField, type TableMetadata } from './metadata.js';
import { humanPartitionValue } from './transforms.js';

/**
 * A partition tuple rendered as Iceberg's `PartitionSpec.partitionToPath` does — field names and values each escaped
 * with Java's `URLEncoder` (see {@link icebergPathEscape}), so neither can add a path segment — and its named values.
 */
export function partitionPath(
  metadata: TableMetadata,
  partition: PartitionTuple,
): { path: string; values: PartitionValue[] } {
  const spec = metadata.specs.find((s) => s.specId === partition.specId);
  const values: PartitionValue[] = (spec?.fields ?? []).map((field) => {
    const raw = partition.values.find((v) => v.fieldId === field.fieldId)?.value ?? null;
    const source = metadata.schemas.map((s) => findField(s, field.sourceId)).find((f) => f !== undefined);
    const sourceType = typeof source?.type === 'string' ? source.type : 'unknown';
    return { name: field.name, value: humanPartitionValue(field.transform, sourceType, raw) };
  });
  const path = values
    .map((v) => `${icebergPathEscape(v.name)}=${v.value === null ? 'null' : icebergPathEscape(v.value)}`)
    .join('/');
  return { path, values };
}

/**
 * Refuses a partition folder (relative to the table root) that the confinement rule would not accept for the files
 * written into it: a partition field name such as `../../../pwn` escapes to `..%2F..%2F..%2Fpwn`, one literal
 * segment, but a reader that decodes it resolves it above the table root.
 * @throws KeyOutsideTableError naming the table, the folder and the spec.
 */
export function refuseUnsafePartition(
  table: Pick<LoadedTable, 'name' | 'tableRoot'>,
  folder: string,
  specId: number,
): void {
  const root = table.tableRoot.replace(/\/+$/, '');
  const probe = `${root === '' ? '' : `${root}/`}${folder}/part-0.parquet`;
  const refused = keyRefusal(root, probe);
  if (refused !== undefined)
    throw new KeyOutsideTableError(
      table.name,
      folder,
      refused.replace('part-0.parquet', ''),
      `the partition spec ${specId} (as its partition folder)`,
    );
}

function describeDeletes(file: LiveDataFile): string {
  const counts = new Map<string, number>();
  for (const d of file.deletes) counts.set(d.kind, (counts.get(d.kind) ?? 0) + 1);
  const what = [...counts].map(([kind, n]) => `${n} ${kind} delete${n === 1 ? '' : 's'}`).join(', ');
  return `Iceberg data file with ${what} applied to it: its rows cannot be rewritten until deletes are applied while rewriting`;
}

/**
 * The port's view of a snapshot's files. Data files without deletes are the candidates (size and row count from
 * the manifest; `etag` is empty because Iceberg files are immutable and named by the snapshot, not by an ETag);
 * data files with deletes, data files not in Parquet and every delete file go to `ignored` with why.
 * @throws IcebergUnsupportedError when one partition path holds files of two partition specs (spec evolution
 *   inside one group), which a rewrite could not commit under one spec.
 */
export function toTableSnapshot(
  table: LoadedTable,
  files: SnapshotFiles,
  options: { readonly now: number },
): TableSnapshot {
  const name = table.name;
  const partitions = new Map<string, { values: PartitionValue[]; specId: number; files: PlanInputFile[] }>();
  const ignored: IgnoredObject[] = [];
  for (const data of files.dataFiles) {
    const file = data.entry.file;
    const { path, values } = partitionPath(table.metadata, file.partition);
    refuseUnsafePartition(table, path === '' ? 'data' : `data/${path}`, file.partition.specId);
    let bucket = partitions.get(path);
    if (bucket === undefined) {
      bucket = { values, specId: file.partition.specId, files: [] };
      partitions.set(path, bucket);
    } else if (bucket.specId !== file.partition.specId)
      throw new IcebergUnsupportedError(
        name,
        `partition-spec evolution inside one group (partition "${path}" holds files of specs ${Math.min(bucket.specId, file.partition.specId)} and ${Math.max(bucket.specId, file.partition.specId)})`,
      );
    if (data.deletes.length > 0) {
      ignored.push({ key: file.key, reason: describeDeletes(data) });
      continue;
    }
    if (file.format !== 'PARQUET') {
      ignored.push({ key: file.key, reason: `Iceberg ${file.format} data file: only Parquet is rewritten` });
      continue;
    }
    bucket.files.push({
      key: file.key,
      size: Number(file.fileSizeInBytes),
      etag: '',
      rows: Number(file.recordCount),
    });
  }
  for (const d of files.deleteFiles) {
    const f = d.entry.file;
    ignored.push({
      key: f.key,
      reason: `Iceberg ${d.kind} delete file${d.kind === 'deletion-vector' ? ` (blob at ${f.contentOffset})` : ''} applying to ${d.appliesTo.length} live data file${d.appliesTo.length === 1 ? '' : 's'}`,
    });
  }
  const sorted: SnapshotPartition[] = [...partitions]
    .map(([partition, { values, files: list }]) => ({
      partition,
      values,
      files: list.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)),
    }))
    .sort((a, b) => (a.partition < b.partition ? -1 : a.partition > b.partition ? 1 : 0));
  return {
    tableRoot: table.tableRoot,
    listedAt: options.now,
    partitions: sorted,
    ignored: ignored.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)),
    foreignTables: [],
  };
}

/**
 * Loads a path-based table and returns a snapshot's live files both in Iceberg terms and as the port's
 * TableSnapshot — what `TableFormat.snapshot` will call once Iceberg is registered.
 */
export async function readIcebergSnapshot(
  store: ObjectStore,
  tableRoot: string,
  options: { readonly now: number; readonly snapshotId?: bigint | string; readonly concurrency?: number },
): Promise<{ table: LoadedTable; files: SnapshotFiles; snapshot: TableSnapshot }> {
  const table = await loadTable(store, tableRoot);
  const files = await readSnapshotFiles(store, table, options);
  return { table, files, snapshot: toTableSnapshot(table, files, { now: options.now }) };
}
