// Reads manifest lists and manifests (Avro) by Iceberg field id, with the spec's inheritance rules applied:
// snapshot ids and sequence numbers of ADDED entries from their manifest, v1 sequence numbers as 0, v3 first row ids.
import type { ObjectStore } from '../../../ports/object-store.js';
import { MetadataTooLargeError } from '../../errors.js';
import { currentMemoryBudget, currentMetadataLimits, readWithin } from '../../memory-budget.js';
import { AvroLimitError, decodeAvroContainer, type IdRecord } from './avro.js';
import { IcebergMetadataError, IcebergUnsupportedError } from './errors.js';
import type { PathResolver } from './paths.js';
import type { IcebergValue } from './transforms.js';

/** Field ids of `manifest_file` (the manifest list's records), from the spec. */
const MF = {
  path: 500,
  length: 501,
  specId: 502,
  addedSnapshotId: 503,
  addedFiles: 504,
  existingFiles: 505,
  deletedFiles: 506,
  partitions: 507,
  addedRows: 512,
  existingRows: 513,
  deletedRows: 514,
  sequenceNumber: 515,
  minSequenceNumber: 516,
  content: 517,
  keyMetadata: 519,
  firstRowId: 520,
} as const;

/** Field ids of `manifest_entry` and its `data_file`, from the spec. */
const ME = { status: 0, snapshotId: 1, dataFile: 2, sequenceNumber: 3, fileSequenceNumber: 4 } as const;
const DF = {
  content: 134,
  path: 100,
  format: 101,
  partition: 102,
  recordCount: 103,
  fileSize: 104,
  columnSizes: 108,
  valueCounts: 109,
  nullValueCounts: 110,
  nanValueCounts: 137,
  lowerBounds: 125,
  upperBounds: 128,
  keyMetadata: 131,
  splitOffsets: 132,
  equalityIds: 135,
  sortOrderId: 140,
  firstRowId: 142,
  referencedDataFile: 143,
  contentOffset: 144,
  contentSize: 145,
} as const;

/** The reserved field id of a position-delete file's `file_path` column (its bounds narrow what it applies to). */
export const POSITION_DELETE_FILE_PATH_ID = 2147483546;

/** One manifest as the manifest list describes it. */
export interface ManifestFile {
  /** As the writer recorded it. */
  readonly path: string;
  /** Where it lies in the store. */
  readonly key: string;
  readonly length: bigint;
  readonly specId: number;
  readonly content: 'data' | 'deletes';
  /** 0 in v1. */
  readonly sequenceNumber: bigint;
  readonly minSequenceNumber: bigint;
  readonly addedSnapshotId: bigint | undefined;
  readonly addedFilesCount: number | undefined;
  readonly existingFilesCount: number | undefined;
  readonly deletedFilesCount: number | undefined;
  readonly addedRowsCount: bigint | undefined;
  readonly existingRowsCount: bigint | undefined;
  readonly deletedRowsCount: bigint | undefined;
  /** v3 row lineage: the first row id of the manifest's data files that have none of their own. */
  readonly firstRowId: bigint | undefined;
  /** Per partition field: the bounds of its values in the manifest (kept so a commit can list the manifest again). */
  readonly partitions: readonly PartitionFieldSummary[] | undefined;
}

/** A manifest list's summary of one partition field over a manifest's files (bounds in single-value form). */
export interface PartitionFieldSummary {
  readonly containsNull: boolean;
  readonly containsNan: boolean | undefined;
  readonly lowerBound: Uint8Array | undefined;
  readonly upperBound: Uint8Array | undefined;
}

export type ContentKind = 'data' | 'position-deletes' | 'equality-deletes';

/** A partition tuple: the spec it was written under and its values by partition field id, in spec order. */
export interface PartitionTuple {
  readonly specId: number;
  readonly values: readonly { readonly fieldId: number; readonly value: IcebergValue }[];
}

/** A data or delete file as a manifest entry describes it, inheritance applied. */
export interface ContentFile {
  readonly content: ContentKind;
  readonly path: string;
  readonly key: string;
  /** Upper case, as writers record it: `PARQUET`, `AVRO`, `ORC`, `PUFFIN`. */
  readonly format: string;
  readonly partition: PartitionTuple;
  readonly recordCount: bigint;
  readonly fileSizeInBytes: bigint;
  readonly columnSizes: ReadonlyMap<number, bigint>;
  readonly valueCounts: ReadonlyMap<number, bigint>;
  readonly nullValueCounts: ReadonlyMap<number, bigint>;
  readonly nanValueCounts: ReadonlyMap<number, bigint>;
  /** Iceberg single-value serialisation, by column field id (see `decodeSingleValue`). */
  readonly lowerBounds: ReadonlyMap<number, Uint8Array>;
  readonly upperBounds: ReadonlyMap<number, Uint8Array>;
  readonly splitOffsets: readonly bigint[] | undefined;
  readonly sortOrderId: number | undefined;
  /** Equality deletes: the field ids whose values identify deleted rows. */
  readonly equalityIds: readonly number[] | undefined;
  /** Position deletes and DVs: the one data file they apply to, when the writer says so. */
  readonly referencedDataFile: string | undefined;
  /** DVs: where the `deletion-vector-v1` blob lies in the Puffin file. */
  readonly contentOffset: bigint | undefined;
  readonly contentSizeInBytes: bigint | undefined;
  /** v3 data files: the row id of the file's first row (inherited from the manifest when the entry has none). */
  readonly firstRowId: bigint | undefined;
}

export interface ManifestEntry {
  readonly status: 'existing' | 'added' | 'deleted';
  readonly snapshotId: bigint;
  /** The data sequence number (0 in v1): what delete files are compared against. */
  readonly dataSequenceNumber: bigint;
  readonly fileSequenceNumber: bigint;
  readonly file: ContentFile;
}

interface ReadContext {
  readonly store: ObjectStore;
  readonly table: string;
  readonly paths: PathResolver;
  readonly formatVersion: 1 | 2 | 3;
}

/** What a table's owner can do about a manifest list or manifest too large to read. */
const MANIFEST_REMEDY =
  "have the table's owner rewrite its manifests into smaller ones (Iceberg's rewrite_manifests procedure)";

/**
 * A manifest list or manifest, read (at most the memory budget's file size) and decoded within the budget.
 * @throws MetadataTooLargeError naming the file and the table when it is over the budget.
 * @throws IcebergMetadataError when it is not a readable Avro file.
 */
async function decode(ctx: ReadContext, key: string, what: string) {
  const label = `Iceberg table ${ctx.table}: ${what}`;
  const bytes = await readWithin(ctx.store, key, currentMetadataLimits().fileBytes, label, MANIFEST_REMEDY);
  try {
    return await decodeAvroContainer(bytes);
  } catch (err) {
    if (err instanceof AvroLimitError)
      throw new MetadataTooLargeError(
        key,
        label,
        err.message,
        currentMemoryBudget().advice,
        MANIFEST_REMEDY,
        {
          cause: err,
        },
      );
    throw new IcebergMetadataError(
      ctx.table,
      `${what} ${key} is not a readable Avro file (${(err as Error).message})`,
      {
        cause: err,
      },
    );
  }
}

function required<T>(ctx: ReadContext, record: IdRecord, id: number, what: string): T {
  const v = record.get(id);
  if (v === undefined) throw new IcebergMetadataError(ctx.table, `${what} has no field ${id}`);
  return v as T;
}

const toNumber = (v: unknown): number | undefined => (v === undefined ? undefined : Number(v));
const toBig = (v: unknown): bigint | undefined =>
  v === undefined ? undefined : BigInt(v as number | bigint);

/**
 * The manifests of one snapshot's manifest list.
 * @throws IcebergUnsupportedError for encrypted manifests; IcebergMetadataError for a malformed list.
 */
export async function readManifestList(ctx: ReadContext, manifestListPath: string): Promise<ManifestFile[]> {
  const key = ctx.paths.key(manifestListPath, 'a snapshot (its manifest list)');
  const file = await decode(ctx, key, 'manifest list');
  return file.records.map((r) => {
    const what = `an entry of manifest list ${key}`;
    if (r.get(MF.keyMetadata) !== undefined)
      throw new IcebergUnsupportedError(ctx.table, 'encrypted manifests (key_metadata)');
    const path = required<string>(ctx, r, MF.path, what);
    const content = toNumber(r.get(MF.content)) ?? 0;
    if (content !== 0 && content !== 1)
      throw new IcebergMetadataError(
        ctx.table,
        `manifest ${path} has content ${content} (0 = data, 1 = deletes)`,
      );
    const sequenceNumber = toBig(r.get(MF.sequenceNumber)) ?? 0n;
    return {
      path,
      key: ctx.paths.key(path, `manifest list ${key}`),
      length: BigInt(required<bigint>(ctx, r, MF.length, what)),
      specId: required<number>(ctx, r, MF.specId, what),
      content: content === 0 ? 'data' : 'deletes',
      sequenceNumber,
      minSequenceNumber: toBig(r.get(MF.minSequenceNumber)) ?? sequenceNumber,
      addedSnapshotId: toBig(r.get(MF.addedSnapshotId)),
      addedFilesCount: toNumber(r.get(MF.addedFiles)),
      existingFilesCount: toNumber(r.get(MF.existingFiles)),
      deletedFilesCount: toNumber(r.get(MF.deletedFiles)),
      addedRowsCount: toBig(r.get(MF.addedRows)),
      existingRowsCount: toBig(r.get(MF.existingRows)),
      deletedRowsCount: toBig(r.get(MF.deletedRows)),
      firstRowId: toBig(r.get(MF.firstRowId)),
      partitions: r.records(MF.partitions)?.map((p) => ({
        containsNull: p.get(509) === true,
        containsNan: p.get(518) as boolean | undefined,
        lowerBound: bytesOrUndefined(p.get(510)),
        upperBound: bytesOrUndefined(p.get(511)),
      })),
    } satisfies ManifestFile;
  });
}

function bytesOrUndefined(v: unknown): Uint8Array | undefined {
  return v === undefined ? undefined : Uint8Array.from(v as Uint8Array);
}

/** An Iceberg map (an Avro array of key/value records) keyed by int, as a Map. */
function intMap<V>(record: IdRecord, id: number, value: (v: unknown) => V): Map<number, V> {
  const out = new Map<number, V>();
  for (const kv of record.records(id) ?? []) {
    const [k, v] = kv.fieldIds;
    if (k === undefined || v === undefined) continue;
    out.set(Number(kv.get(k)), value(kv.get(v)));
  }
  return out;
}

function partitionValue(v: unknown): IcebergValue {
  if (v === undefined || v === null) return null;
  if (v instanceof Uint8Array) return Uint8Array.from(v);
  return v as IcebergValue;
}

/**
 * The entries of one manifest, with the spec's inheritance applied: a null snapshot id is the manifest's
 * `added_snapshot_id`; a null (data or file) sequence number of an ADDED entry is the manifest's sequence number
 * (v1: all 0); a v3 data file without `first_row_id` gets the manifest's `first_row_id` plus the record counts of
 * the live data files before it that had none either.
 * @throws IcebergUnsupportedError for encrypted files; IcebergMetadataError for a malformed manifest.
 */
export async function readManifest(ctx: ReadContext, manifest: ManifestFile): Promise<ManifestEntry[]> {
  const file = await decode(ctx, manifest.key, 'manifest');
  const entries: ManifestEntry[] = [];
  let nextRowId = manifest.firstRowId;
  for (const r of file.records) {
    const what = `an entry of manifest ${manifest.key}`;
    const statusCode = required<number>(ctx, r, ME.status, what);
    const status =
      statusCode === 0 ? 'existing' : statusCode === 1 ? 'added' : statusCode === 2 ? 'deleted' : undefined;
    if (status === undefined) throw new IcebergMetadataError(ctx.table, `${what} has status ${statusCode}`);
    const df = r.record(ME.dataFile);
    if (df === undefined) throw new IcebergMetadataError(ctx.table, `${what} has no data_file`);
    if (df.get(DF.keyMetadata) !== undefined)
      throw new IcebergUnsupportedError(ctx.table, 'encrypted data or delete files (key_metadata)');
    const contentCode = toNumber(df.get(DF.content)) ?? 0;
    const content: ContentKind | undefined =
      contentCode === 0
        ? 'data'
        : contentCode === 1
          ? 'position-deletes'
          : contentCode === 2
            ? 'equality-deletes'
            : undefined;
    if (content === undefined)
      throw new IcebergMetadataError(ctx.table, `${what} has content ${contentCode}`);
    if ((content === 'data') !== (manifest.content === 'data'))
      throw new IcebergMetadataError(
        ctx.table,
        `${what} is a ${content} file in a ${manifest.content} manifest`,
      );

    const snapshotId = toBig(r.get(ME.snapshotId)) ?? manifest.addedSnapshotId;
    if (snapshotId === undefined)
      throw new IcebergMetadataError(ctx.table, `${what} has no snapshot id to inherit`);
    const inherit = (v: unknown): bigint => {
      const own = toBig(v);
      if (own !== undefined) return own;
      if (ctx.formatVersion === 1 || status === 'added') return manifest.sequenceNumber;
      throw new IcebergMetadataError(ctx.table, `${what} is ${status} without a sequence number`);
    };
    const dataSequenceNumber = ctx.formatVersion === 1 ? 0n : inherit(r.get(ME.sequenceNumber));
    const fileSequenceNumber = ctx.formatVersion === 1 ? 0n : inherit(r.get(ME.fileSequenceNumber));

    const path = required<string>(ctx, df, DF.path, what);
    const recordCount = BigInt(required<bigint>(ctx, df, DF.recordCount, what));
    let firstRowId = toBig(df.get(DF.firstRowId));
    if (content === 'data' && status !== 'deleted' && firstRowId === undefined && nextRowId !== undefined) {
      firstRowId = nextRowId;
      nextRowId += recordCount;
    }
    const partition = df.record(DF.partition);
    const toBytes = (v: unknown) => Uint8Array.from(v as Uint8Array);
    entries.push({
      status,
      snapshotId,
      dataSequenceNumber,
      fileSequenceNumber,
      file: {
        content,
        path,
        key: ctx.paths.key(path, `manifest ${manifest.key}`),
        format: String(required<string>(ctx, df, DF.format, what)).toUpperCase(),
        partition: {
          specId: manifest.specId,
          values: (partition?.entries() ?? []).map(([fieldId, value]) => ({
            fieldId,
            value: partitionValue(value),
          })),
        },
        recordCount,
        fileSizeInBytes: BigInt(required<bigint>(ctx, df, DF.fileSize, what)),
        columnSizes: intMap(df, DF.columnSizes, (v) => BigInt(v as bigint)),
        valueCounts: intMap(df, DF.valueCounts, (v) => BigInt(v as bigint)),
        nullValueCounts: intMap(df, DF.nullValueCounts, (v) => BigInt(v as bigint)),
        nanValueCounts: intMap(df, DF.nanValueCounts, (v) => BigInt(v as bigint)),
        lowerBounds: intMap(df, DF.lowerBounds, toBytes),
        upperBounds: intMap(df, DF.upperBounds, toBytes),
        splitOffsets: (df.get(DF.splitOffsets) as bigint[] | undefined)?.map((o) => BigInt(o)),
        sortOrderId: toNumber(df.get(DF.sortOrderId)),
        equalityIds: (df.get(DF.equalityIds) as number[] | undefined)?.map(Number),
        referencedDataFile: df.get(DF.referencedDataFile) as string | undefined,
        contentOffset: toBig(df.get(DF.contentOffset)),
        contentSizeInBytes: toBig(df.get(DF.contentSize)),
        firstRowId: content === 'data' ? firstRowId : undefined,
      },
    });
  }
  return entries;
}

export type { ReadContext };
