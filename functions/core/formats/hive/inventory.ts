// Turns a table's listing into per-partition candidate files: every object is either a candidate
// (with rows and schema fingerprint from its footer) or ignored with a reason; nothing is dropped.
import type { SchemaElement } from 'hyparquet';
import pLimit from 'p-limit';
import type { ObjectStore } from '../../../ports/object-store.js';
import { CorruptInputError } from '../../errors.js';
import {
  type ParquetFooter,
  parseFooter,
  parseFooterWithMetadata,
  readFooterBytes,
} from '../../parquet/footer.js';
import {
  DEFAULT_STITCH_THRESHOLDS,
  metadataBytesOf,
  stitchCostOf,
  stitchSourceOf,
} from '../../parquet/stitch.js';
import { classifyObject, type PartitionValue, parsePartition, relativeToRoot } from '../../partition.js';
import type { PlanInput, PlanInputFile } from '../../planning.js';
import { readersReadWidenedDecimals } from '../../readers.js';
import {
  type ForeignTable,
  foreignFormatOfKey,
  noteForeignMarker,
  refuseForeignAmong,
  refuseForeignAround,
} from '../foreign-tables.js';
import type {
  IgnoredObject,
  PartitionFiles,
  PartitionLocation,
  SnapshotOptions,
  TableSnapshot,
} from '../table-format.js';
import { unifySchemas } from './schema-union.js';
import { hiveRunOptionsSchema } from './settings.js';

/**
 * The file's `stitch` field when the engine would copy it row group by row group (every row group at or above the
 * default thresholds, and a layout it copies), from the footer bytes already read; else nothing. Only the run's
 * cost estimate reads it.
 */
function stitchOf(footer: ParquetFooter, tail: Uint8Array): Pick<PlanInputFile, 'stitch'> {
  const { minRowGroupRows, minRowGroupBytes } = DEFAULT_STITCH_THRESHOLDS;
  const large = footer.rowGroups.every(
    (g) => g.rows >= minRowGroupRows || g.compressedBytes >= minRowGroupBytes,
  );
  if (footer.rowGroups.length === 0 || !large) return {};
  try {
    const metadata = metadataBytesOf(footer.key, tail);
    const stitch = stitchCostOf(stitchSourceOf(footer.key, metadata, footer.size - 8 - metadata.length));
    return stitch === undefined ? {} : { stitch };
  } catch (err) {
    if (err instanceof CorruptInputError) return {};
    throw err;
  }
}

/** A run's schema union, while the listing reads footers: its options and every readable footer's schema. */
interface UnionState {
  readonly widenDecimals: boolean;
  readonly schemas: Map<string, readonly SchemaElement[]>;
}

/** The union the run asks for (`schemaEvolution: 'union'` in its options, footers read), else undefined. */
function unionOptionsOf(options: SnapshotOptions): UnionState | undefined {
  if (!options.readFooters || options.formatOptions === undefined) return undefined;
  const parsed = hiveRunOptionsSchema.parse(options.formatOptions);
  if (parsed.schemaEvolution !== 'union') return undefined;
  return { widenDecimals: readersReadWidenedDecimals(parsed.schemaUnionReaders), schemas: new Map() };
}

/**
 * One partition's files with the union's verdicts: each readable file projected onto the partition's union
 * (`projection`, which the planner groups by) or refused (`projectionRefused`, which it skips with the reason);
 * unchanged without a union, or when the partition holds one schema population only.
 */
function unified(files: PlanInputFile[], union: UnionState | undefined): PlanInputFile[] {
  if (union === undefined) return files;
  const readable = files.flatMap((f) => {
    const schema = union.schemas.get(f.key);
    // A zero-row file is never planned (the engine refuses empty inputs): its columns do not widen the union.
    return schema === undefined || f.schemaFingerprint === undefined || f.rows === 0
      ? []
      : [{ key: f.key, schemaFingerprint: f.schemaFingerprint, schema }];
  });
  const verdicts = unifySchemas(readable, { widenDecimals: union.widenDecimals });
  return files.map((f) => {
    const verdict = verdicts.get(f.key);
    if (verdict === undefined) return f;
    return verdict.kind === 'projected'
      ? { ...f, projection: verdict.projection }
      : { ...f, projectionRefused: verdict.reason };
  });
}

/**
 * Lists everything under `tableRoot` and sorts it into partitions. A file whose footer cannot be
 * read stays in its partition marked `unreadable` (so the planner reports it and leaves it alone);
 * any other error (throttling, network) fails the whole inventory rather than hide files.
 */
export async function inventoryTable(
  store: ObjectStore,
  tableRoot: string,
  options: SnapshotOptions,
): Promise<TableSnapshot> {
  const byPartition = new Map<string, { values: readonly PartitionValue[]; files: PlanInputFile[] }>();
  const ignored: IgnoredObject[] = [];
  const foreign = new Map<string, ForeignTable>();
  const limit = pLimit(options.concurrency ?? 64);
  const pending: Promise<void>[] = [];
  const union = unionOptionsOf(options);

  for await (const object of store.listAll(tableRoot)) {
    // Matched on the whole key (a marker above the root counts too), only for keys under the root by segment.
    const format =
      relativeToRoot(object.key, tableRoot) === undefined ? undefined : foreignFormatOfKey(object.key);
    if (format !== undefined) noteForeignMarker(foreign, format, object.key);
    const parsed = parsePartition(object.key, tableRoot);
    const verdict = classifyObject({ key: object.key, size: object.size, tableRoot });
    if (!parsed || verdict.kind === 'ignored') {
      ignored.push({
        key: object.key,
        reason: verdict.kind === 'ignored' ? verdict.reason : 'outside the table root',
      });
      continue;
    }
    let bucket = byPartition.get(parsed.partitionPath);
    if (!bucket) {
      bucket = { values: parsed.values, files: [] };
      byPartition.set(parsed.partitionPath, bucket);
    }
    const files = bucket.files;
    const base: PlanInputFile = {
      key: object.key,
      size: object.size,
      etag: object.etag,
      ...(object.versionId === undefined ? {} : { versionId: object.versionId }),
      ...(object.storageClass === undefined ? {} : { storageClass: object.storageClass }),
    };
    if (!options.readFooters) {
      files.push(base);
      continue;
    }
    // A tiny file is planned from its listing: its footer read would fetch it whole, and the rewrite fetches it again.
    // Not under a schema union, which needs every file's schema before it can plan.
    if (
      union === undefined &&
      options.deferFootersUpTo !== undefined &&
      object.size <= options.deferFootersUpTo
    ) {
      files.push({ ...base, footerDeferred: true });
      continue;
    }
    pending.push(
      limit(async () => {
        try {
          if (union !== undefined) {
            // The union needs every footer's schema elements: the same reads, parsed with the metadata kept.
            const { size, tail } = await readFooterBytes(store, object.key, object.size);
            const { footer, metadata } = parseFooterWithMetadata(object.key, size, tail);
            files.push({
              ...base,
              rows: footer.rows,
              schemaFingerprint: footer.schemaFingerprint,
              ...stitchOf(footer, tail),
            });
            union.schemas.set(object.key, metadata.schema);
            return;
          }
          // readFooter's reads, with the bytes kept for the stitched path's price.
          const { size, tail } = await readFooterBytes(store, object.key, object.size);
          const footer = parseFooter(object.key, size, tail);
          files.push({
            ...base,
            rows: footer.rows,
            schemaFingerprint: footer.schemaFingerprint,
            ...stitchOf(footer, tail),
          });
        } catch (err) {
          if (!(err instanceof CorruptInputError)) throw err;
          files.push({ ...base, unreadable: err.reason });
        }
      }),
    );
  }
  await Promise.all(pending);

  const partitions = [...byPartition.entries()]
    .map(([partition, { values, files }]) => ({
      partition,
      values,
      files: unified(
        files.sort((a, b) => compareKeys(a.key, b.key)),
        union,
      ),
    }))
    .sort((a, b) => compareKeys(a.partition, b.partition));
  return { tableRoot, listedAt: options.now, partitions, ignored, foreignTables: [...foreign.values()] };
}

/** The planner's input for every partition of an inventory. */
export function toPlanInputs(inventory: TableSnapshot, table: string): PlanInput[] {
  return inventory.partitions.map((p) => ({
    table,
    partition: p.partition,
    files: [...p.files],
    snapshot: { listedAt: inventory.listedAt },
  }));
}

/**
 * One partition's files: a listing of its directory only (files directly in it are partition ''), footers read
 * when asked.
 * The listing is the table, so a Delta log or Iceberg metadata in a folder above the partition or anywhere in it
 * means the files are not what they seem: refused before anything is planned.
 * @throws UnsupportedTableFormatError
 */
export async function partitionListing(
  store: ObjectStore,
  where: PartitionLocation,
  options: SnapshotOptions,
): Promise<PartitionFiles> {
  await refuseForeignAround(store, where.partitionDir, { includeLocation: false });
  const root = where.partitionDir.replace(/\/$/, '');
  const inventory = await inventoryTable(store, root, options);
  refuseForeignAmong(store, where.partitionDir, inventory.foreignTables);
  return {
    files: inventory.partitions.find((p) => p.partition === '')?.files ?? [],
    snapshot: { listedAt: options.now },
  };
}

/** Byte order, as S3 lists keys (not locale order). */
function compareKeys(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}
