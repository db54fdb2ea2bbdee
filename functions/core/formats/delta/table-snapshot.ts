// Maps a Delta log version onto the TableFormat port's TableSnapshot: live files grouped by their partition values
// from the log, rows from stats, one schema fingerprint per version, and each file it must not rewrite with why.
import { HIVE_DEFAULT_PARTITION, type PartitionValue } from '../../partition.js';
import type { PlanInputFile } from '../../planning.js';
import type { IgnoredObject, SnapshotPartition, TableSnapshot } from '../table-format.js';
import type { DeltaFile, DeltaSnapshot } from './log.js';

/**
 * The port's view of one version. The partition's identity is built from the log's values (Hive-style, Spark's
 * escaping, logical names), never from the directory, which in Delta is only a writer's habit (column-mapped
 * tables use random prefixes). ETags are empty: the log, not the object's ETag, says which file is live, and a
 * Delta commit removes by path. The schema fingerprint is the table schema's (`delta:` + sha256), the same for
 * every file of a version, until footers are read. Files with a deletion vector, row-tracking ids or an absolute
 * path are listed in `ignored` with why: rewriting them needs what the later slices add.
 */
export function toTableSnapshot(snapshot: DeltaSnapshot, now: number): TableSnapshot {
  const byPartition = new Map<string, { values: PartitionValue[]; files: PlanInputFile[] }>();
  const ignored: IgnoredObject[] = [];
  for (const file of snapshot.files) {
    const reason = untouchable(file);
    if (file.key === undefined || reason !== undefined) {
      ignored.push({ key: file.key ?? file.path, reason: reason ?? 'absolute path outside the table root' });
      continue;
    }
    const values = snapshot.metadata.partitionColumns.map((name) => ({
      name,
      value: file.partitionValues[name] ?? null,
    }));
    const partition = partitionPath(values);
    let bucket = byPartition.get(partition);
    if (bucket === undefined) {
      bucket = { values, files: [] };
      byPartition.set(partition, bucket);
    }
    bucket.files.push({
      key: file.key,
      size: file.size,
      etag: '',
      ...(file.stats?.numRecords === undefined ? {} : { rows: file.stats.numRecords }),
      schemaFingerprint: snapshot.metadata.schemaFingerprint,
    });
  }
  const partitions: SnapshotPartition[] = [...byPartition.entries()]
    .map(([partition, { values, files }]) => ({
      partition,
      values,
      files: files.sort((a, b) => compareBytes(a.key, b.key)),
    }))
    .sort((a, b) => compareBytes(a.partition, b.partition));
  return { tableRoot: snapshot.tableRoot, listedAt: now, partitions, ignored, foreignTables: [] };
}

/** Why a live file must not be rewritten yet, or undefined. */
function untouchable(file: DeltaFile): string | undefined {
  if (file.key === undefined)
    return `absolute path ${file.path}: the file lies outside the table root (a shallow clone?)`;
  if (file.deletionVector !== undefined) {
    return `has a deletion vector (${file.deletionVector.cardinality} deleted rows): rewriting it must drop those rows, which is not implemented yet`;
  }
  if (file.baseRowId !== undefined || file.defaultRowCommitVersion !== undefined) {
    return 'carries row-tracking ids, which a rewrite would have to preserve';
  }
  return undefined;
}

/** `a=1/b=x%2Fy`, Spark's escaping, `__HIVE_DEFAULT_PARTITION__` for null; '' when unpartitioned. */
export function partitionPath(values: readonly PartitionValue[]): string {
  return values
    .map(
      ({ name, value }) =>
        `${escapePathName(name)}=${value === null ? HIVE_DEFAULT_PARTITION : escapePathName(value)}`,
    )
    .join('/');
}

/** Spark's `ExternalCatalogUtils.escapePathName`: control characters and the characters below become `%XX`. */
const ESCAPED = '"#%\'*/:=?\\{[]^';
function escapePathName(s: string): string {
  let out = '';
  for (const ch of s) {
    const code = ch.codePointAt(0) ?? 0;
    out +=
      code < 0x20 || code === 0x7f || ESCAPED.includes(ch)
        ? `%${code.toString(16).toUpperCase().padStart(2, '0')}`
        : ch;
  }
  return out;
}

function compareBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}
