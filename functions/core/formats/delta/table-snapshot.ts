// Maps a Delta log version onto the TableFormat port's TableSnapshot: live files grouped by their partition values
// from the log, rows from stats (or footers when asked), and each file it must not rewrite with why.
import type { SchemaElement } from 'hyparquet';
import pLimit from 'p-limit';
import type { ObjectStore } from '../../../ports/object-store.js';
import { escapePathName } from '../../keys.js';
import { HIVE_DEFAULT_PARTITION, type PartitionValue } from '../../partition.js';
import type { InputDeletes, PlanInput, PlanInputFile } from '../../planning.js';
import { withStoredFooter } from '../logged-files.js';
import type { IgnoredObject, SnapshotOptions, SnapshotPartition, TableSnapshot } from '../table-format.js';
import { type DeletionVector, deletionVectorUniqueId } from './actions.js';
import { type DeltaFile, type DeltaSnapshot, readDeltaSnapshot } from './log.js';
import { hasTypeWidening, projectDeltaFile } from './projection.js';

/** The port snapshot of a Delta table's latest version, and the version it was read at. */
export interface DeltaTableSnapshot {
  readonly snapshot: TableSnapshot;
  /** The log version the live files are from: what a commit's readVersion and the plan's deltaVersion are. */
  readonly version: number;
  readonly delta: DeltaSnapshot;
}

/**
 * The latest version of the Delta table at `location` in the port's shape (the `TableFormat.snapshot` signature's
 * arguments, plus the version). With `readFooters`, each live file's footer replaces the log's row count and the
 * table-schema fingerprint with the file's own (what the rewrite engine groups and verifies by); a footer that
 * cannot be read, or a live file missing from storage, marks the file `unreadable` with why, so it is reported and
 * left alone. Other errors (throttling, network) fail the snapshot rather than hide files.
 */
export async function snapshotDeltaTable(
  store: ObjectStore,
  location: string,
  options: SnapshotOptions,
): Promise<DeltaTableSnapshot> {
  const delta = await readDeltaSnapshot(store, location, {
    ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
  });
  const snapshot = toTableSnapshot(delta, options.now);
  if (!options.readFooters) return { snapshot, version: delta.version, delta };
  const limit = pLimit(options.concurrency ?? 64);
  const inspect = projectionInspector(delta);
  const partitions = await Promise.all(
    snapshot.partitions.map(async (partition) => ({
      ...partition,
      files: settleProjections(
        await Promise.all(
          partition.files.map((file) =>
            limit(() => withStoredFooter(store, file, 'the Delta log', 'a Delta client', undefined, inspect)),
          ),
        ),
      ),
    })),
  );
  return { snapshot: { ...snapshot, partitions }, version: delta.version, delta };
}

/**
 * Each data file's projection onto the table's current schema, from its footer's schema elements (projection.ts):
 * what the planner groups by, so files written under older schemas compact with current ones into files of the
 * current schema. A refused file carries why (the planner skips it, naming it); a file the projection does not
 * describe carries nothing and is grouped by its own Parquet schema, as before.
 */
function projectionInspector(
  delta: DeltaSnapshot,
): (schema: readonly SchemaElement[]) => Partial<PlanInputFile> {
  const table = {
    schema: delta.metadata.schema,
    partitionColumns: delta.metadata.partitionColumns,
    mode: delta.metadata.columnMapping.mode,
    typeWidening: hasTypeWidening(delta.protocol, delta.metadata.configuration),
  };
  return (elements) => {
    const projected = projectDeltaFile(elements, table);
    if (projected.kind === 'projected')
      return {
        projection: projected.projection,
        ...(projected.restates ? { projectionIdentity: true } : {}),
      };
    if (projected.kind === 'refused') return { projectionRefused: projected.reason };
    return {};
  };
}

/**
 * One partition's files as the planner gets them. When every projectable file only restates its own footer under one
 * Parquet schema (a partition that lived through no schema change), the projections are dropped: its files are
 * rewritten as written, exactly as before (a sorted rewrite projects like the bin-pack, so either runs). Otherwise
 * every projectable file keeps its projection, those already in the current schema too, so all of them group
 * together by the current schema.
 */
export function settleProjections(files: readonly PlanInputFile[]): PlanInputFile[] {
  const projected = files.filter((f) => f.projection !== undefined);
  const fingerprint = projected[0]?.schemaFingerprint;
  const asWritten = projected.every(
    (f) => f.projectionIdentity === true && f.schemaFingerprint === fingerprint,
  );
  return files.map(({ projection, projectionIdentity: _identity, ...rest }) =>
    asWritten || projection === undefined ? rest : { ...rest, projection },
  );
}

/** The planner's input per partition, recording the Delta version the files were read at (`snapshot.deltaVersion`). */
export function deltaPlanInputs(snapshot: TableSnapshot, version: number, table: string): PlanInput[] {
  return snapshot.partitions.map((p) => ({
    table,
    partition: p.partition,
    files: [...p.files],
    snapshot: { listedAt: snapshot.listedAt, deltaVersion: version },
  }));
}

/**
 * The port's view of one version. The partition's identity is built from the log's values (Hive-style, Spark's
 * escaping, logical names), never from the directory, which in Delta is only a writer's habit (column-mapped
 * tables use random prefixes). ETags are empty: the log, not the object's ETag, says which file is live, and a
 * Delta commit removes by path. The schema fingerprint is the table schema's (`delta:` + sha256), the same for
 * every file of a version, until footers are read. A file with a deletion vector carries it as `deletes` (the
 * rewrite drops its rows); files with row-tracking ids, an absolute path or a DV at an absolute path are listed in
 * `ignored` with why: rewriting them needs what the later slices add.
 */
export function toTableSnapshot(snapshot: DeltaSnapshot, now: number): TableSnapshot {
  const byPartition = new Map<string, { values: PartitionValue[]; files: PlanInputFile[] }>();
  const ignored: IgnoredObject[] = [];
  for (const file of snapshot.files) {
    const reason = untouchable(file);
    if (file.key === undefined || reason !== undefined) {
      ignored.push({ key: file.key ?? file.path, reason: reason ?? 'absolute path' });
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
      ...(file.deletionVector === undefined ? {} : { deletes: inputDeletesOf(file.deletionVector) }),
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

/**
 * What the plan carries of a file's deletion vector: its unique id (the commit aborts when the file's DV is
 * another one by then), its cardinality (`numRecords − cardinality` rows are live) and the descriptor the
 * compact step reads the positions from. `rows` (the plan's) stay the file's physical `numRecords`.
 */
function inputDeletesOf(dv: DeletionVector): InputDeletes {
  return {
    id: deletionVectorUniqueId(dv),
    rows: dv.cardinality,
    descriptor: {
      storageType: dv.storageType,
      pathOrInlineDv: dv.pathOrInlineDv,
      ...(dv.offset === undefined ? {} : { offset: dv.offset }),
      sizeInBytes: dv.sizeInBytes,
      cardinality: dv.cardinality,
    },
  };
}

/**
 * Why a live file must not be rewritten yet, or undefined. Exported for the profiler's change reader, which
 * counts exactly the files a snapshot offers a run.
 */
export function untouchable(
  file: Pick<DeltaFile, 'key' | 'path' | 'deletionVector' | 'baseRowId' | 'defaultRowCommitVersion'>,
): string | undefined {
  if (file.key === undefined)
    return `absolute path ${file.path}: an absolute URI is not resolved to a key of the store (a shallow clone’s source, or a writer that records full URIs), so it is left alone`;
  if (file.deletionVector?.storageType === 'p') {
    return `its deletion vector is stored at the absolute path ${file.deletionVector.pathOrInlineDv}, which is not resolved to a key of the store, so the rows it deletes cannot be read and the file is left alone`;
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

function compareBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}
