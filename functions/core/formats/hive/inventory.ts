// Turns a table's listing into per-partition candidate files: every object is either a candidate
// (with rows and schema fingerprint from its footer) or ignored with a reason; nothing is dropped.
import pLimit from 'p-limit';
import type { ObjectStore } from '../../../ports/object-store.js';
import { CorruptInputError } from '../../errors.js';
import { readFooter } from '../../parquet/footer.js';
import { classifyObject, type PartitionValue, parsePartition, relativeToRoot } from '../../partition.js';
import type { PlanInput, PlanInputFile } from '../../planning.js';
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
    pending.push(
      limit(async () => {
        try {
          const footer = await readFooter(store, object.key, object.size);
          files.push({ ...base, rows: footer.rows, schemaFingerprint: footer.schemaFingerprint });
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
      files: files.sort((a, b) => compareKeys(a.key, b.key)),
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
