// The live files of one snapshot: every data file its manifests list as ADDED or EXISTING, each with exactly the
// delete files the spec says apply to it (partition, sequence number, referenced file and path-bound rules).
import pLimit from 'p-limit';
import type { ObjectStore } from '../../../ports/object-store.js';
import type { LoadedTable } from './catalog.js';
import { IcebergMetadataError } from './errors.js';
import {
  type ContentFile,
  type ManifestEntry,
  type ManifestFile,
  type PartitionTuple,
  POSITION_DELETE_FILE_PATH_ID,
  readManifest,
  readManifestList,
} from './manifests.js';
import { type IcebergSchema, type Snapshot, schemaById, specById } from './metadata.js';
import type { IcebergValue } from './transforms.js';

export type DeleteKind = 'position' | 'equality' | 'deletion-vector';

/** A live delete file and the live data files it applies to (by path, sorted). */
export interface LiveDeleteFile {
  readonly kind: DeleteKind;
  readonly entry: ManifestEntry;
  readonly appliesTo: readonly string[];
}

/** A live data file and the delete files that apply to it (by path). */
export interface LiveDataFile {
  readonly entry: ManifestEntry;
  readonly deletes: readonly {
    readonly kind: DeleteKind;
    readonly path: string;
    readonly dataSequenceNumber: bigint;
  }[];
}

/** What one snapshot holds. */
export interface SnapshotFiles {
  /** Undefined for a table without snapshots (then nothing is live). */
  readonly snapshot: Snapshot | undefined;
  /** The schema rows are read with: the snapshot's, else the table's current one. */
  readonly schema: IcebergSchema;
  readonly manifests: readonly ManifestFile[];
  /** Sorted by path. */
  readonly dataFiles: readonly LiveDataFile[];
  /** Sorted by path, then content offset (one Puffin file holds several DVs). */
  readonly deleteFiles: readonly LiveDeleteFile[];
}

/** Canonical text of a partition tuple: equal exactly when spec id and every value are equal. */
export function partitionKey(partition: PartitionTuple): string {
  const enc = (v: IcebergValue): string =>
    v === null
      ? 'null'
      : v instanceof Uint8Array
        ? `x${Buffer.from(v).toString('hex')}`
        : typeof v === 'bigint'
          ? `${v}`
          : JSON.stringify(v);
  return `${partition.specId}:${partition.values.map((p) => `${p.fieldId}=${enc(p.value)}`).join(',')}`;
}

function deleteKind(file: ContentFile): DeleteKind {
  if (file.content === 'equality-deletes') return 'equality';
  return file.format === 'PUFFIN' ? 'deletion-vector' : 'position';
}

/**
 * The live data and delete files of a snapshot (the current one when `snapshotId` is omitted), and which deletes
 * apply to which data file, by the spec's rules:
 * - a deletion vector applies to its `referenced_data_file` when that file's data sequence number is ≤ the DV's;
 * - a position delete applies to data files of the same partition (spec and values) with data sequence number ≤
 *   its own, restricted to its `referenced_data_file` when set and to its `file_path` bounds when recorded, and
 *   not to a data file that has a DV (a DV replaces the position deletes before it);
 * - an equality delete applies to data files with a strictly lower data sequence number, of the same partition,
 *   or of every partition when its spec is unpartitioned.
 *
 * Why "applies" is by metadata, not by reading rows: this is what every Iceberg reader must apply (an equality
 * delete whose values match no row still applies), and a rewrite that drops deletes must prove none applies.
 * @throws IcebergMetadataError when `snapshotId` names no snapshot of the table.
 */
export async function readSnapshotFiles(
  store: ObjectStore,
  table: LoadedTable,
  options: { readonly snapshotId?: bigint | string; readonly concurrency?: number } = {},
): Promise<SnapshotFiles> {
  const { metadata } = table;
  const wanted = options.snapshotId === undefined ? metadata.currentSnapshotId : BigInt(options.snapshotId);
  const snapshot = wanted === undefined ? undefined : metadata.snapshots.find((s) => s.snapshotId === wanted);
  const tableName = table.name;
  if (wanted !== undefined && snapshot === undefined)
    throw new IcebergMetadataError(tableName, `snapshot ${wanted} is not in the table's metadata`);
  const schema = schemaById(metadata, snapshot?.schemaId ?? metadata.currentSchemaId) ?? schemaById(metadata);
  if (schema === undefined) throw new IcebergMetadataError(tableName, 'the table has no current schema');
  if (snapshot === undefined) return { snapshot, schema, manifests: [], dataFiles: [], deleteFiles: [] };

  const ctx = { store, table: tableName, paths: table.paths, formatVersion: metadata.formatVersion };
  const manifests = await readManifestList(ctx, snapshot.manifestList);
  const limit = pLimit(options.concurrency ?? 16);
  const perManifest = await Promise.all(manifests.map((m) => limit(() => readManifest(ctx, m))));
  const live = perManifest.flat().filter((e) => e.status !== 'deleted');
  const data = live.filter((e) => e.file.content === 'data').sort((a, b) => cmp(a.file.path, b.file.path));
  const deletes = live
    .filter((e) => e.file.content !== 'data')
    .sort(
      (a, b) =>
        cmp(a.file.path, b.file.path) || Number((a.file.contentOffset ?? 0n) - (b.file.contentOffset ?? 0n)),
    );

  for (const d of deletes)
    if (deleteKind(d.file) === 'deletion-vector' && d.file.referencedDataFile === undefined)
      throw new IcebergMetadataError(
        tableName,
        `deletion vector in ${d.file.path} has no referenced_data_file`,
      );

  const unpartitioned = (specId: number) =>
    (specById(metadata, specId)?.fields ?? []).every((f) => f.transform.kind === 'void');
  const keyOf = new Map<ManifestEntry, string>(
    [...data, ...deletes].map((e) => [e, partitionKey(e.file.partition)]),
  );
  const order = new Map<ManifestEntry, number>(deletes.map((d, i) => [d, i]));

  // Candidate indexes, so each data file is compared only with the deletes that could apply to it (tables with
  // tens of thousands of files and thousands of deletes are the ones that need compacting).
  const dvByPath = new Map<string, ManifestEntry[]>();
  const byPartition = new Map<string, ManifestEntry[]>();
  const global: ManifestEntry[] = [];
  const push = (map: Map<string, ManifestEntry[]>, key: string, d: ManifestEntry) => {
    const list = map.get(key);
    if (list === undefined) map.set(key, [d]);
    else list.push(d);
  };
  for (const d of deletes) {
    const kind = deleteKind(d.file);
    if (kind === 'deletion-vector') push(dvByPath, d.file.referencedDataFile as string, d);
    else if (kind === 'equality' && unpartitioned(d.file.partition.specId)) global.push(d);
    else push(byPartition, keyOf.get(d) as string, d);
  }

  const applies = (d: ManifestEntry, f: ManifestEntry, hasDv: boolean): boolean => {
    const kind = deleteKind(d.file);
    if (kind === 'deletion-vector')
      return d.file.referencedDataFile === f.file.path && f.dataSequenceNumber <= d.dataSequenceNumber;
    if (kind === 'position') {
      if (f.dataSequenceNumber > d.dataSequenceNumber) return false;
      if (d.file.referencedDataFile !== undefined && d.file.referencedDataFile !== f.file.path) return false;
      if (keyOf.get(d) !== keyOf.get(f)) return false;
      if (hasDv) return false;
      const lower = d.file.lowerBounds.get(POSITION_DELETE_FILE_PATH_ID);
      const upper = d.file.upperBounds.get(POSITION_DELETE_FILE_PATH_ID);
      const path = Buffer.from(f.file.path, 'utf8');
      if (lower !== undefined && Buffer.compare(path, lower) < 0) return false;
      if (upper !== undefined && Buffer.compare(path, upper) > 0) return false;
      return true;
    }
    if (f.dataSequenceNumber >= d.dataSequenceNumber) return false;
    return unpartitioned(d.file.partition.specId) || keyOf.get(d) === keyOf.get(f);
  };

  const appliesTo = new Map<ManifestEntry, string[]>(deletes.map((d) => [d, []]));
  const dataFiles: LiveDataFile[] = data.map((f) => {
    const dvs = dvByPath.get(f.file.path) ?? [];
    const candidates = [...dvs, ...(byPartition.get(keyOf.get(f) as string) ?? []), ...global].sort(
      (a, b) => (order.get(a) as number) - (order.get(b) as number),
    );
    const mine = candidates.filter((d) => applies(d, f, dvs.length > 0));
    for (const d of mine) appliesTo.get(d)?.push(f.file.path);
    return {
      entry: f,
      deletes: mine.map((d) => ({
        kind: deleteKind(d.file),
        path: d.file.path,
        dataSequenceNumber: d.dataSequenceNumber,
      })),
    };
  });
  return {
    snapshot,
    schema,
    manifests,
    dataFiles,
    deleteFiles: deletes.map((d) => ({
      kind: deleteKind(d.file),
      entry: d,
      appliesTo: appliesTo.get(d) ?? [],
    })),
  };
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
