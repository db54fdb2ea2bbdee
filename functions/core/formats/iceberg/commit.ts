// Commits a `replace` snapshot (a compaction: some data files' rows moved into new files) to an Iceberg table
// through a catalog, as Iceberg's RewriteFiles does: new manifests for the added files, the manifests holding a
// removed file rewritten (removed → DELETED, the rest → EXISTING), every other manifest with a live entry reused
// (one left with DELETED entries only is dropped, as Java drops it), the new files
// carrying the starting snapshot's data sequence number, and a rebase over concurrent commits that do not
// touch the removed files. On format v3 each snapshot also assigns row ids (see `assignRowIds`).
import { randomBytes, randomUUID } from 'node:crypto';
import type { Clock } from '../../../ports/clock.js';
import type { ObjectStore } from '../../../ports/object-store.js';
import { InvalidInputError, TransientStoreError } from '../../errors.js';
import { type IcebergCatalog, type LoadedTable, readMetadataText } from './catalog.js';
import { IcebergCatalogError } from './catalogs.js';
import {
  IcebergCatalogMismatchError,
  IcebergCommitConflictError,
  IcebergMetadataError,
  IcebergUnsupportedError,
} from './errors.js';
import { jsonLong, parseJsonKeepingLongs, stringifyJsonKeepingLongs } from './json.js';
import { type LiveDeleteFile, partitionKey, readSnapshotFiles, type SnapshotFiles } from './live-files.js';
import {
  type ManifestContentFile,
  type ManifestListEntry,
  type ManifestWriteEntry,
  writeManifest,
  writeManifestList,
} from './manifest-writer.js';
import { type PartitionTuple, readManifest } from './manifests.js';
import { parseTableMetadata, schemaById, specById, type TableMetadata } from './metadata.js';
import { appendMetadataLog } from './metadata-log.js';
import type { DataFileMetrics } from './metrics.js';

/** A data file the rewrite wrote, as the commit adds it. */
export interface AddedDataFile {
  /** As the metadata records it (see `PathResolver.path`): below the table location. */
  readonly path: string;
  /** The partition the file's rows belong to, under one of the table's specs. */
  readonly partition: PartitionTuple;
  readonly metrics: DataFileMetrics;
  readonly sortOrderId?: number;
}

export interface ReplaceRequest {
  /** The table root as a key prefix of the store. */
  readonly tableLocation: string;
  /** The snapshot the rewrite read its inputs from. */
  readonly startingSnapshotId: bigint | string;
  /**
   * Data file paths (as the metadata records them) whose rows the added files hold, with every delete that
   * applied to them in the starting snapshot already applied.
   */
  readonly removedFiles: readonly string[];
  readonly addedFiles: readonly AddedDataFile[];
  /**
   * Extra properties of the new snapshot's summary (as Java's `SnapshotProducer.set`): how a writer tags its
   * commit, so a retry whose earlier attempt may have committed finds that snapshot instead of committing twice.
   * They may not replace a property the commit computes (`operation`, the counters and totals).
   */
  readonly summaryProperties?: Readonly<Record<string, string>>;
}

export interface CommitOptions {
  readonly clock: Clock;
  /** Commits tried before giving up on a table other writers keep changing. Default 4. */
  readonly maxAttempts?: number;
  /** First wait after a lost race, doubled after each. Default 100 ms. */
  readonly backoffMs?: number;
  /** How to wait (tests pass one that does not). */
  readonly sleep?: (ms: number) => Promise<void>;
  /** Drop position-delete files and DVs that apply only to removed files. Default true. */
  readonly dropDanglingDeletes?: boolean;
  /**
   * Iceberg's `remove-dangling-deletes`: also drop every delete file — equality deletes included — that applies to
   * no live data file after this commit, by RemoveDanglingDeletesSparkAction's rule ({@link danglingDeletes}).
   * Default false (Iceberg's default).
   */
  readonly removeDanglingDeletes?: boolean;
}

export interface CommitResult {
  readonly snapshotId: bigint;
  readonly sequenceNumber: bigint;
  readonly metadataKey: string;
  readonly summary: Readonly<Record<string, string>>;
  /** 1 when nobody else committed meanwhile. */
  readonly attempts: number;
  /** Delete files (path, and content offset for DVs) the snapshot dropped as dangling. */
  readonly droppedDeleteFiles: readonly string[];
}

/** What one attempt would write, computed without writing anything. */
export interface ReplacePlan {
  readonly snapshotId: bigint;
  readonly sequenceNumber: bigint;
  /** Manifests and the manifest list, by store key. */
  readonly files: readonly { readonly key: string; readonly bytes: Uint8Array }[];
  readonly metadataText: string;
  readonly summary: Readonly<Record<string, string>>;
  readonly droppedDeleteFiles: readonly string[];
}

const sleepFor = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function newSnapshotId(taken: ReadonlySet<bigint>): bigint {
  for (;;) {
    const id = randomBytes(8).readBigUInt64BE() & 0x7fff_ffff_ffff_ffffn;
    if (id !== 0n && !taken.has(id)) return id;
  }
}

function deleteId(path: string, offset: bigint | undefined): string {
  return offset === undefined ? path : `${path}@${offset}`;
}

/**
 * Why a rebase from `starting` onto `current` is impossible, one reason per removed file: it is no longer live,
 * a position delete / DV not in the starting snapshot now applies to it, or a delete that applied to it then (and
 * that the rewrite dropped the rows of) no longer does. Equality deletes committed meanwhile
 * are no reason: their sequence number is above the starting one the added files carry, so they apply to those.
 */
export function rebaseConflicts(
  starting: SnapshotFiles,
  current: SnapshotFiles,
  removedFiles: readonly string[],
): string[] {
  const before = new Map(starting.dataFiles.map((f) => [f.entry.file.path, f]));
  const now = new Map(current.dataFiles.map((f) => [f.entry.file.path, f]));
  const reasons: string[] = [];
  for (const path of removedFiles) {
    const was = before.get(path);
    const is = now.get(path);
    if (was === undefined) reasons.push(`${path} is not a live data file of the starting snapshot`);
    else if (is === undefined)
      reasons.push(`${path} is no longer live: a snapshot committed after the starting one removed it`);
    else {
      for (const d of is.deletes)
        if (
          d.kind !== 'equality' &&
          !was.deletes.some((w) => w.path === d.path && w.dataSequenceNumber === d.dataSequenceNumber)
        )
          reasons.push(
            `${path}: ${d.kind} delete ${d.path} was committed after the starting snapshot and applies to it`,
          );
      // A delete the rewrite applied that no longer applies: the table brought those rows back meanwhile.
      for (const w of was.deletes)
        if (!is.deletes.some((d) => d.path === w.path && d.dataSequenceNumber === w.dataSequenceNumber))
          reasons.push(
            `${path}: ${w.kind} delete ${w.path} applied to it in the starting snapshot and was removed since`,
          );
    }
  }
  return reasons;
}

/**
 * The delete files that apply to no live data file once `removed` left the table and `added` joined it (carrying
 * data sequence number `addedSequence`), by the rule of Iceberg's RemoveDanglingDeletesSparkAction: live data files
 * are grouped by partition (spec id and tuple) and the least data sequence number of each taken;
 * - a position delete (a DV too) is dangling when its partition has no live data file, or its data sequence number
 *   is below that least one (it applies to files of its sequence number or older);
 * - an equality delete is dangling when its partition has no live data file, or its data sequence number is at or
 *   below that least one (it applies to strictly older files only);
 * - a DV is dangling when the data file it references is not live.
 * One deviation, to the safe side: an equality delete of an unpartitioned spec applies to every partition (the
 * spec says so), so it is judged against the least data sequence number of the whole table, where Spark's join
 * compares it with the unpartitioned spec's files only and could drop one still deleting rows of a partitioned
 * spec's files.
 */
export function danglingDeletes(
  metadata: TableMetadata,
  current: SnapshotFiles,
  removed: ReadonlySet<string>,
  added: readonly AddedDataFile[],
  addedSequence: bigint,
): LiveDeleteFile[] {
  const least = new Map<string, bigint>();
  let tableLeast: bigint | undefined;
  const live = new Set<string>();
  const note = (partition: PartitionTuple, seq: bigint) => {
    const key = partitionKey(partition);
    const was = least.get(key);
    if (was === undefined || seq < was) least.set(key, seq);
    if (tableLeast === undefined || seq < tableLeast) tableLeast = seq;
  };
  for (const f of current.dataFiles) {
    if (removed.has(f.entry.file.path)) continue;
    live.add(f.entry.file.path);
    note(f.entry.file.partition, f.entry.dataSequenceNumber);
  }
  for (const f of added) {
    live.add(f.path);
    note(f.partition, addedSequence);
  }
  const unpartitioned = (specId: number) =>
    (specById(metadata, specId)?.fields ?? []).every((f) => f.transform.kind === 'void');
  return current.deleteFiles.filter((d) => {
    const seq = d.entry.dataSequenceNumber;
    if (d.kind === 'deletion-vector' && !live.has(d.entry.file.referencedDataFile ?? '')) return true;
    if (d.kind === 'equality' && unpartitioned(d.entry.file.partition.specId))
      return tableLeast === undefined || seq <= tableLeast;
    const min = least.get(partitionKey(d.entry.file.partition));
    if (min === undefined) return true;
    return d.kind === 'equality' ? seq <= min : seq < min;
  });
}

function sumBig(values: readonly bigint[]): bigint {
  return values.reduce((a, b) => a + b, 0n);
}

/**
 * Plans one commit attempt on `base` (whose current snapshot's files are `current`): the new snapshot's
 * manifests, manifest list and metadata file text. Reads the current manifests; writes nothing.
 * @param dataSequenceNumber what the added files' entries carry: the starting snapshot's sequence number for a
 *   rewrite; undefined to inherit the new snapshot's (an append).
 */
export async function planSnapshot(
  store: ObjectStore,
  base: LoadedTable,
  current: SnapshotFiles,
  change: {
    readonly operation: 'replace' | 'append' | 'delete';
    readonly removedFiles: readonly string[];
    readonly addedFiles: readonly AddedDataFile[];
    /** Delete files the snapshot adds (a row-level delete); their entries inherit its sequence number. */
    readonly addedDeleteFiles?: readonly ManifestContentFile[];
    readonly dataSequenceNumber: bigint | undefined;
    readonly dropDanglingDeletes: boolean;
    /** See {@link CommitOptions.removeDanglingDeletes}. */
    readonly removeDanglingDeletes?: boolean;
    readonly timestampMs: number;
    readonly attempt: number;
    readonly summaryProperties?: Readonly<Record<string, string>>;
  },
): Promise<ReplacePlan> {
  const { metadata, paths } = base;
  const v = metadata.formatVersion;
  const table = base.name;
  const schema = schemaById(metadata);
  if (schema === undefined) throw new IcebergUnsupportedError(table, 'a table without a current schema');
  const snapshotId = newSnapshotId(new Set(metadata.snapshots.map((s) => s.snapshotId)));
  const sequenceNumber = v === 1 ? 0n : metadata.lastSequenceNumber + 1n;
  const dataSeq = v === 1 ? undefined : change.dataSequenceNumber;
  const removed = new Set(change.removedFiles);
  const dropped = new Set<string>();
  if (change.dropDanglingDeletes)
    for (const d of current.deleteFiles)
      if (d.kind !== 'equality' && d.appliesTo.length > 0 && d.appliesTo.every((p) => removed.has(p)))
        dropped.add(deleteId(d.entry.file.path, d.entry.file.contentOffset));
  if (change.removeDanglingDeletes && v >= 2)
    for (const d of danglingDeletes(metadata, current, removed, change.addedFiles, dataSeq ?? sequenceNumber))
      dropped.add(deleteId(d.entry.file.path, d.entry.file.contentOffset));

  const files: { key: string; bytes: Uint8Array }[] = [];
  const metadataDir = `${metadata.location.replace(/\/+$/, '')}/metadata`;
  const prefix = randomUUID();
  let manifestCount = 0;
  const newManifestPath = () => `${metadataDir}/${prefix}-m${manifestCount++}.avro`;
  const listed: ManifestListEntry[] = [];
  const emit = (
    specId: number,
    content: 'data' | 'deletes',
    entries: readonly ManifestWriteEntry[],
  ): ManifestListEntry => {
    const spec = specById(metadata, specId);
    if (spec === undefined) throw new InvalidInputError(`partition spec ${specId} is not one of ${table}'s`);
    const { bytes, stats } = writeManifest({ metadata, schema, spec, content, entries });
    const path = newManifestPath();
    files.push({ key: paths.key(path), bytes });
    return {
      path,
      length: BigInt(bytes.byteLength),
      specId,
      content,
      sequenceNumber,
      minSequenceNumber: stats.minDataSequenceNumber ?? sequenceNumber,
      addedSnapshotId: snapshotId,
      addedFilesCount: stats.addedFilesCount,
      existingFilesCount: stats.existingFilesCount,
      deletedFilesCount: stats.deletedFilesCount,
      addedRowsCount: stats.addedRowsCount,
      existingRowsCount: stats.existingRowsCount,
      deletedRowsCount: stats.deletedRowsCount,
      firstRowId: undefined,
      partitions: stats.partitions,
    };
  };

  // New files first, one manifest per partition spec (as Java writers list them).
  const bySpec = new Map<number, AddedDataFile[]>();
  for (const f of change.addedFiles)
    bySpec.set(f.partition.specId, [...(bySpec.get(f.partition.specId) ?? []), f]);
  for (const [specId, list] of [...bySpec].sort(([a], [b]) => a - b))
    listed.push(
      emit(
        specId,
        'data',
        list.map((f) => ({
          status: 'added',
          snapshotId,
          dataSequenceNumber: dataSeq,
          fileSequenceNumber: undefined,
          file: addedContentFile(f),
        })),
      ),
    );

  const deletesBySpec = new Map<number, ManifestContentFile[]>();
  for (const f of change.addedDeleteFiles ?? [])
    deletesBySpec.set(f.partition.specId, [...(deletesBySpec.get(f.partition.specId) ?? []), f]);
  for (const [specId, list] of [...deletesBySpec].sort(([a], [b]) => a - b))
    listed.push(
      emit(
        specId,
        'deletes',
        list.map((file) => ({
          status: 'added',
          snapshotId,
          dataSequenceNumber: undefined,
          fileSequenceNumber: undefined,
          file,
        })),
      ),
    );

  // Existing manifests: rewritten when they hold a removed file or a dropped delete, else listed unchanged.
  const ctx = { store, table, paths, formatVersion: v };
  const found = new Set<string>();
  const removedEntries: ManifestContentFile[] = [];
  const droppedEntries: ManifestContentFile[] = [];
  for (const manifest of current.manifests) {
    const entries = await readManifest(ctx, manifest);
    const hit = (e: (typeof entries)[number]) =>
      e.status !== 'deleted' &&
      (e.file.content === 'data'
        ? removed.has(e.file.path)
        : dropped.has(deleteId(e.file.path, e.file.contentOffset)));
    if (!entries.some(hit)) {
      // As Iceberg's MergingSnapshotProducer: a manifest is kept when it has live files or this commit wrote it.
      // One holding only DELETED entries says what an earlier snapshot removed, which is that snapshot's
      // business; carried on, it would be read by every later snapshot for nothing.
      if (!entries.some((e) => e.status !== 'deleted')) continue;
      const { key: _key, ...reused } = manifest;
      listed.push(reused);
      continue;
    }
    const rewritten: ManifestWriteEntry[] = [];
    for (const e of entries) {
      if (e.status === 'deleted') continue; // a DELETED entry lives only in the snapshot that deleted the file
      const { key: _key, ...file } = e.file;
      const seq = v === 1 ? undefined : e.dataSequenceNumber;
      const fileSeq = v === 1 ? undefined : e.fileSequenceNumber;
      if (hit(e)) {
        if (e.file.content === 'data') {
          found.add(e.file.path);
          removedEntries.push(file);
        } else droppedEntries.push(file);
        rewritten.push({
          status: 'deleted',
          snapshotId,
          dataSequenceNumber: seq,
          fileSequenceNumber: fileSeq,
          file,
        });
      } else
        rewritten.push({
          status: 'existing',
          snapshotId: e.snapshotId,
          dataSequenceNumber: seq,
          fileSequenceNumber: fileSeq,
          file,
        });
    }
    listed.push(emit(manifest.specId, manifest.content, rewritten));
  }
  const missing = change.removedFiles.filter((p) => !found.has(p));
  if (missing.length > 0)
    throw new IcebergCommitConflictError(
      table,
      missing.map((p) => `${p} is not a live data file of snapshot ${current.snapshot?.snapshotId}`),
    );

  const lineage = v >= 3 ? assignRowIds(table, metadata.nextRowId, listed) : undefined;
  const listPath = `${metadataDir}/snap-${snapshotId}-${change.attempt}-${prefix}.avro`;
  files.push({
    key: paths.key(listPath),
    bytes: writeManifestList({
      formatVersion: v,
      snapshotId,
      parentSnapshotId: current.snapshot?.snapshotId,
      sequenceNumber,
      ...(lineage === undefined ? {} : { firstRowId: lineage.firstRowId }),
      manifests: lineage?.manifests ?? listed,
    }),
  });

  const computed = snapshotSummary(change.operation, current, {
    added: change.addedFiles,
    removed: removedEntries,
    dropped: droppedEntries,
    addedDeletes: change.addedDeleteFiles ?? [],
  });
  const extra = change.summaryProperties ?? {};
  const clashing = Object.keys(extra).filter((k) => k === 'operation' || k in computed);
  if (clashing.length > 0)
    throw new InvalidInputError(
      `summary properties ${clashing.join(', ')} are computed by the commit and cannot be set by its caller`,
    );
  const summary = { ...computed, ...extra };
  const metadataText = await nextMetadataText(store, base, {
    snapshotId,
    parentSnapshotId: current.snapshot?.snapshotId,
    sequenceNumber,
    timestampMs: Math.max(change.timestampMs, metadata.lastUpdatedMs),
    manifestList: listPath,
    summary,
    schemaId: schema.schemaId,
    ...(lineage === undefined ? {} : { lineage }),
  });
  return {
    snapshotId,
    sequenceNumber,
    files,
    metadataText,
    summary,
    droppedDeleteFiles: droppedEntries.map((f) => deleteId(f.path, f.contentOffset)),
  };
}

/** A v3 snapshot's row-id range: `first-row-id` (the table's `next-row-id` before it) and `added-rows`. */
interface RowIdAssignment {
  readonly firstRowId: bigint;
  readonly addedRows: bigint;
  /** The manifest list's entries, every data manifest written by this snapshot given its `first_row_id`. */
  readonly manifests: readonly ManifestListEntry[];
}

/**
 * Row lineage (format v3): each data manifest this snapshot writes (`first_row_id` still null) is given the next
 * free row ids, as many as its ADDED and EXISTING rows, in list order; reused manifests keep theirs. That is the
 * spec's assignment and what Iceberg Java's manifest list writer does, so `added-rows` counts the EXISTING rows of
 * rewritten manifests too (those ids are spent, never reused), and a replace spends ids on its rewritten rows even
 * though they keep their own: the rewrite writes every row's `_row_id` into the new files, which wins over the
 * inherited `first_row_id` + position. Delete manifests carry no row ids.
 * @throws IcebergMetadataError for a v3 table without `next-row-id` (the spec requires it).
 */
function assignRowIds(
  table: string,
  nextRowId: bigint | undefined,
  manifests: readonly ManifestListEntry[],
): RowIdAssignment {
  if (nextRowId === undefined)
    throw new IcebergMetadataError(table, 'a format-version 3 table without next-row-id');
  let next = nextRowId;
  const assigned = manifests.map((m) => {
    if (m.content !== 'data' || m.firstRowId !== undefined) return m;
    const firstRowId = next;
    next += (m.addedRowsCount ?? 0n) + (m.existingRowsCount ?? 0n);
    return { ...m, firstRowId };
  });
  return { firstRowId: nextRowId, addedRows: next - nextRowId, manifests: assigned };
}

function addedContentFile(f: AddedDataFile): ManifestContentFile {
  const m = f.metrics;
  return {
    content: 'data',
    path: f.path,
    format: 'PARQUET',
    partition: f.partition,
    recordCount: m.recordCount,
    fileSizeInBytes: m.fileSizeInBytes,
    columnSizes: m.columnSizes,
    valueCounts: m.valueCounts,
    nullValueCounts: m.nullValueCounts,
    nanValueCounts: m.nanValueCounts,
    lowerBounds: m.lowerBounds,
    upperBounds: m.upperBounds,
    splitOffsets: m.splitOffsets,
    sortOrderId: f.sortOrderId,
    equalityIds: undefined,
    referencedDataFile: undefined,
    contentOffset: undefined,
    contentSizeInBytes: undefined,
    firstRowId: undefined,
  };
}

/**
 * The snapshot summary Java writers record (SnapshotSummary): the change's counters, set only when non-zero, and
 * the totals of the new state, computed from its live files (exact, whatever the previous summaries said).
 */
function snapshotSummary(
  operation: string,
  current: SnapshotFiles,
  change: {
    readonly added: readonly AddedDataFile[];
    readonly removed: readonly ManifestContentFile[];
    readonly dropped: readonly ManifestContentFile[];
    readonly addedDeletes: readonly ManifestContentFile[];
  },
): Record<string, string> {
  const out: Record<string, string> = { operation };
  const setIf = (key: string, value: bigint | number) => {
    if (BigInt(value) > 0n) out[key] = String(value);
  };
  const addedRecords = sumBig(change.added.map((f) => f.metrics.recordCount));
  const addedSize = sumBig(change.added.map((f) => f.metrics.fileSizeInBytes));
  const position = change.dropped.filter((f) => f.content === 'position-deletes');
  const dvs = position.filter((f) => f.format === 'PUFFIN');
  setIf('added-data-files', change.added.length);
  setIf('deleted-data-files', change.removed.length);
  setIf('added-records', addedRecords);
  setIf('deleted-records', sumBig(change.removed.map((f) => f.recordCount)));
  setIf('added-files-size', addedSize);
  setIf('removed-files-size', sumBig([...change.removed, ...change.dropped].map((f) => f.fileSizeInBytes)));
  const addedPosition = change.addedDeletes.filter((f) => f.content === 'position-deletes');
  const addedEquality = change.addedDeletes.filter((f) => f.content === 'equality-deletes');
  setIf('added-delete-files', change.addedDeletes.length);
  setIf('added-position-delete-files', addedPosition.length);
  setIf('added-position-deletes', sumBig(addedPosition.map((f) => f.recordCount)));
  setIf('added-equality-delete-files', addedEquality.length);
  setIf('added-equality-deletes', sumBig(addedEquality.map((f) => f.recordCount)));
  setIf('removed-delete-files', change.dropped.length);
  setIf('removed-position-delete-files', position.length - dvs.length);
  setIf('removed-dvs', dvs.length);
  setIf('removed-position-deletes', sumBig(position.map((f) => f.recordCount)));
  const equality = change.dropped.filter((f) => f.content === 'equality-deletes');
  setIf('removed-equality-delete-files', equality.length);
  setIf('removed-equality-deletes', sumBig(equality.map((f) => f.recordCount)));
  const partitions = new Set(
    [
      ...change.added.map((f) => f.partition),
      ...[...change.removed, ...change.dropped, ...change.addedDeletes].map((f) => f.partition),
    ].map(partitionKey),
  );
  setIf('changed-partition-count', partitions.size);

  // Totals of the new state: the current live files, minus removed and dropped, plus added.
  const removedPaths = new Set(change.removed.map((f) => f.path));
  const droppedIds = new Set(change.dropped.map((f) => deleteId(f.path, f.contentOffset)));
  const data = current.dataFiles.map((f) => f.entry.file).filter((f) => !removedPaths.has(f.path));
  const deletes: ManifestContentFile[] = [
    ...current.deleteFiles
      .map((d) => d.entry.file)
      .filter((f) => !droppedIds.has(deleteId(f.path, f.contentOffset))),
    ...change.addedDeletes,
  ];
  // A Puffin file holding several DVs is one file.
  const deleteFiles = new Set(deletes.map((f) => f.path));
  const deleteFileSizes = new Map(deletes.map((f) => [f.path, f.fileSizeInBytes]));
  out['total-records'] = String(sumBig(data.map((f) => f.recordCount)) + addedRecords);
  out['total-files-size'] = String(
    sumBig(data.map((f) => f.fileSizeInBytes)) + addedSize + sumBig([...deleteFileSizes.values()]),
  );
  out['total-data-files'] = String(data.length + change.added.length);
  out['total-delete-files'] = String(deleteFiles.size);
  out['total-position-deletes'] = String(
    sumBig(deletes.filter((f) => f.content === 'position-deletes').map((f) => f.recordCount)),
  );
  out['total-equality-deletes'] = String(
    sumBig(deletes.filter((f) => f.content === 'equality-deletes').map((f) => f.recordCount)),
  );
  return out;
}

/**
 * The next metadata file: the current one's JSON with every field kept (including ones this reader does not know),
 * the new snapshot appended and made current on `main`, the logs extended, the sequence number advanced.
 */
async function nextMetadataText(
  store: ObjectStore,
  base: LoadedTable,
  s: {
    readonly snapshotId: bigint;
    readonly parentSnapshotId: bigint | undefined;
    readonly sequenceNumber: bigint;
    readonly timestampMs: number;
    readonly manifestList: string;
    readonly summary: Record<string, string>;
    readonly schemaId: number;
    readonly lineage?: Pick<RowIdAssignment, 'firstRowId' | 'addedRows'>;
  },
): Promise<string> {
  const raw = parseJsonKeepingLongs(await readMetadataText(store, base.metadataKey)) as Record<
    string,
    unknown
  >;
  const v = base.metadata.formatVersion;
  const id = jsonLong(s.snapshotId);
  raw['last-updated-ms'] = s.timestampMs;
  if (v >= 2) raw['last-sequence-number'] = jsonLong(s.sequenceNumber);
  raw['current-snapshot-id'] = id;
  raw.snapshots = [
    ...((raw.snapshots as unknown[] | undefined) ?? []),
    {
      'snapshot-id': id,
      ...(s.parentSnapshotId !== undefined && { 'parent-snapshot-id': jsonLong(s.parentSnapshotId) }),
      ...(v >= 2 && { 'sequence-number': jsonLong(s.sequenceNumber) }),
      'timestamp-ms': s.timestampMs,
      summary: s.summary,
      'manifest-list': s.manifestList,
      'schema-id': s.schemaId,
      ...(s.lineage !== undefined && {
        'first-row-id': jsonLong(s.lineage.firstRowId),
        'added-rows': jsonLong(s.lineage.addedRows),
      }),
    },
  ];
  // The table's next-row-id moves past every id the snapshot assigned, whichever branch it is on.
  if (s.lineage !== undefined) raw['next-row-id'] = jsonLong(s.lineage.firstRowId + s.lineage.addedRows);
  raw['snapshot-log'] = [
    ...((raw['snapshot-log'] as unknown[] | undefined) ?? []),
    { 'timestamp-ms': s.timestampMs, 'snapshot-id': id },
  ];
  appendMetadataLog(raw, base);

  const refs = (raw.refs as Record<string, Record<string, unknown>> | undefined) ?? {};
  raw.refs = { ...refs, main: { ...refs.main, 'snapshot-id': id, type: 'branch' } };
  const text = stringifyJsonKeepingLongs(raw);
  parseTableMetadata(text, base.name); // what we commit must be what we (and every reader) can read
  return text;
}

async function cleanUp(store: ObjectStore, keys: readonly string[]): Promise<void> {
  if (keys.length > 0) await store.deleteMany(keys.map((key) => ({ key })));
}

/**
 * Runs the commit loop: load, check, plan, write manifests, hand the metadata to the catalog; on a lost race,
 * remove this attempt's never-committed files, wait, reload and try again on the new state.
 */
async function commitLoop(
  store: ObjectStore,
  catalog: IcebergCatalog,
  tableLocation: string,
  options: CommitOptions,
  attemptOnce: (base: LoadedTable, attempt: number) => Promise<ReplacePlan>,
): Promise<CommitResult> {
  const maxAttempts = options.maxAttempts ?? 4;
  const sleep = options.sleep ?? sleepFor;
  let table = '';
  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    const base = await catalog.load(tableLocation);
    table = base.name;
    const plan = await attemptOnce(base, attempt);
    const written: string[] = [];
    try {
      for (const f of plan.files) {
        await store.put(f.key, f.bytes, { ifNoneMatch: '*' });
        written.push(f.key);
      }
    } catch (err) {
      await cleanUp(store, written);
      throw err;
    }
    // An error here leaves the outcome unknown: the files stay, as they may now be part of the table — unless the
    // catalog refused before anything could become current (its own typed refusals say "nothing was committed").
    let outcome: Awaited<ReturnType<IcebergCatalog['commit']>>;
    try {
      outcome = await catalog.commit(base, plan.metadataText);
    } catch (err) {
      if (err instanceof IcebergCatalogError || err instanceof IcebergCatalogMismatchError)
        await cleanUp(store, written);
      throw err;
    }
    if (outcome.outcome === 'committed')
      return {
        snapshotId: plan.snapshotId,
        sequenceNumber: plan.sequenceNumber,
        metadataKey: outcome.metadataKey,
        summary: plan.summary,
        attempts: attempt,
        droppedDeleteFiles: plan.droppedDeleteFiles,
      };
    await cleanUp(store, written);
    if (attempt < maxAttempts) await sleep((options.backoffMs ?? 100) * 2 ** (attempt - 1));
  }
  // Nothing about the table forbids this commit: other writers were only faster. Retryable, unlike a conflict.
  throw new TransientStoreError(
    `Iceberg commit to ${table || tableLocation} lost the race to other writers on each of ${maxAttempts} attempts: nothing of it is visible (its manifests were removed). Retry when the table is quieter`,
  );
}

/**
 * Commits a `replace` snapshot: `removedFiles` leave the table, `addedFiles` (holding exactly their rows, deletes
 * applied) join it with the starting snapshot's data sequence number (Iceberg's use-starting-sequence-number), so
 * equality deletes committed since still apply to the rows they now hold.
 *
 * When other writers committed since the starting snapshot, the commit is rebased onto their snapshot if none of
 * the removed files was removed meanwhile and no new position delete or DV applies to one; otherwise it aborts.
 * Only this commit's own never-committed manifests are ever deleted; the added data files are the caller's.
 * @throws IcebergCommitConflictError when the table changed in a way a rebase cannot absorb.
 * @throws TransientStoreError (retryable) when other writers won every attempt.
 * @throws InvalidInputError when the added files do not hold as many rows as the removed ones can (more than the
 *   removed files' rows, or a different count when none of them had deletes).
 */
export async function commitReplace(
  store: ObjectStore,
  catalog: IcebergCatalog,
  request: ReplaceRequest,
  options: CommitOptions,
): Promise<CommitResult> {
  const startingId = BigInt(request.startingSnapshotId);
  let starting: SnapshotFiles | undefined;
  if (request.removedFiles.length === 0)
    throw new InvalidInputError('a replace must remove at least one data file');
  if (new Set(request.removedFiles).size !== request.removedFiles.length)
    throw new InvalidInputError('the removed files list a file twice');
  return commitLoop(store, catalog, request.tableLocation, options, async (base, attempt) => {
    if (starting === undefined) {
      if (!base.metadata.snapshots.some((s) => s.snapshotId === startingId))
        throw new IcebergCommitConflictError(base.name, [
          `the starting snapshot ${startingId} is no longer in the table's metadata (expired)`,
        ]);
      starting = await readSnapshotFiles(store, base, { snapshotId: startingId });
      checkRows(base.name, starting, request);
    }
    const current =
      base.metadata.currentSnapshotId === startingId ? starting : await readSnapshotFiles(store, base);
    const reasons = rebaseConflicts(starting, current, request.removedFiles);
    if (reasons.length > 0) throw new IcebergCommitConflictError(base.name, reasons);
    return planSnapshot(store, base, current, {
      operation: 'replace',
      removedFiles: request.removedFiles,
      addedFiles: request.addedFiles,
      dataSequenceNumber: starting.snapshot?.sequenceNumber,
      dropDanglingDeletes: options.dropDanglingDeletes ?? true,
      removeDanglingDeletes: options.removeDanglingDeletes ?? false,
      timestampMs: options.clock.now(),
      attempt,
      ...(request.summaryProperties === undefined ? {} : { summaryProperties: request.summaryProperties }),
    });
  });
}

function checkRows(table: string, starting: SnapshotFiles, request: ReplaceRequest): void {
  const byPath = new Map(starting.dataFiles.map((f) => [f.entry.file.path, f]));
  const removed = request.removedFiles.map((p) => byPath.get(p));
  const missing = request.removedFiles.filter((_, i) => removed[i] === undefined);
  if (missing.length > 0)
    throw new IcebergCommitConflictError(
      table,
      missing.map((p) => `${p} is not a live data file of the starting snapshot`),
    );
  const removedRows = sumBig(removed.map((f) => f?.entry.file.recordCount ?? 0n));
  const addedRows = sumBig(request.addedFiles.map((f) => f.metrics.recordCount));
  const withDeletes = removed.some((f) => (f?.deletes.length ?? 0) > 0);
  if (withDeletes ? addedRows > removedRows : addedRows !== removedRows)
    throw new InvalidInputError(
      `the added files of the replace on ${table} hold ${addedRows} rows where the removed files hold ${removedRows}${withDeletes ? ' before deletes' : ''}: a rewrite neither adds nor loses rows`,
    );
}

/**
 * Commits a `delete` snapshot adding position- or equality-delete files (Iceberg's RowDelta without data files):
 * their entries inherit the new snapshot's sequence number, so they apply to the data files before them. Any
 * concurrent commit is rebased over. Used by tests and tools to delete rows the way a merge-on-read engine does.
 * @throws InvalidInputError for a data file among them, or a format-version 1 table (which has no deletes).
 */
export async function commitRowDelta(
  store: ObjectStore,
  catalog: IcebergCatalog,
  request: { readonly tableLocation: string; readonly addedDeleteFiles: readonly ManifestContentFile[] },
  options: CommitOptions,
): Promise<CommitResult> {
  if (request.addedDeleteFiles.some((f) => f.content === 'data'))
    throw new InvalidInputError('a row delta adds delete files only');
  return commitLoop(store, catalog, request.tableLocation, options, async (base, attempt) => {
    if (base.metadata.formatVersion < 2)
      throw new InvalidInputError(`${base.name} is a format-version 1 table, which has no delete files`);
    return planSnapshot(store, base, await readSnapshotFiles(store, base), {
      operation: 'delete',
      removedFiles: [],
      addedFiles: [],
      addedDeleteFiles: request.addedDeleteFiles,
      dataSequenceNumber: undefined,
      dropDanglingDeletes: false,
      timestampMs: options.clock.now(),
      attempt,
    });
  });
}

/**
 * Commits an `append` snapshot adding data files (their entries inherit the new snapshot's sequence number). Any
 * concurrent commit is simply rebased over. Used by tests and tools to write tables the way an ingest job does.
 */
export async function commitAppend(
  store: ObjectStore,
  catalog: IcebergCatalog,
  request: { readonly tableLocation: string; readonly addedFiles: readonly AddedDataFile[] },
  options: CommitOptions,
): Promise<CommitResult> {
  return commitLoop(store, catalog, request.tableLocation, options, async (base, attempt) =>
    planSnapshot(store, base, await readSnapshotFiles(store, base), {
      operation: 'append',
      removedFiles: [],
      addedFiles: request.addedFiles,
      dataSequenceNumber: undefined,
      dropDanglingDeletes: false,
      timestampMs: options.clock.now(),
      attempt,
    }),
  );
}
