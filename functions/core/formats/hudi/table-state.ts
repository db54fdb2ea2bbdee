// A Hudi table's state as lake-compactor reads it: hoodie.properties, the features it refuses by name, the active
// timeline and, per partition, the live file slices at the latest completed instant with everything else set aside
// with its reason. Only reads: a refusal leaves every byte of the table as it was. `toTableSnapshot` shapes the state
// for the TableFormat port (notes §11.2): the plan's inputs are the live base files of base-only file groups.
import type { ObjectStore } from '../../../ports/object-store.js';
import { ObjectNotFoundError } from '../../errors.js';
import { currentMetadataLimits, readWithin } from '../../memory-budget.js';
import type { PartitionValue } from '../../partition.js';
import type { PlanInputFile } from '../../planning.js';
import type { IgnoredObject, SnapshotPartition, TableSnapshot } from '../table-format.js';
import {
  HudiBootstrapError,
  HudiBucketIndexError,
  HudiMetadataTableError,
  HudiPendingRollbackError,
  HudiSchemaOnReadError,
  HudiTimelineError,
} from './errors.js';
import {
  buildFileGroups,
  type HudiFileSlice,
  isPartitionMarker,
  type ListedFile,
  partitionValuesOf,
} from './file-groups.js';
import { checkTableConfig, type HudiTableConfig, parseTableConfig } from './properties.js';
import {
  type HudiTimeline,
  type InstantMetadataCache,
  keyUnder,
  listFolder,
  readTimeline,
} from './timeline.js';

/** One partition's live file slices. */
export interface HudiPartitionState {
  /** Relative to the table root ('' when unpartitioned). */
  readonly partition: string;
  readonly values: readonly PartitionValue[];
  /** Sorted by file id. */
  readonly liveSlices: readonly HudiFileSlice[];
}

/** A Hudi table as read at its latest completed instant. */
export interface HudiTableState {
  /** The table root key prefix ('' or without a trailing `/`). */
  readonly tableRoot: string;
  readonly config: HudiTableConfig;
  readonly timeline: HudiTimeline;
  /** Partitions holding at least one live slice, sorted by path. */
  readonly partitions: readonly HudiPartitionState[];
  /** Every other object under the root outside `.hoodie/`, with why it is not data to plan. */
  readonly ignored: readonly IgnoredObject[];
}

/** Reading options. */
export interface ReadHudiTableOptions {
  /** Timeline files and partition listings in flight. */
  readonly concurrency?: number;
  /**
   * Read a table lake-compactor refuses (metadata table, virtual keys …) anyway, to describe it (history, a dry
   * run's explanation, tests): the refusals are skipped, malformed files still fail. Never plan or commit from such
   * a state.
   */
  readonly inspectOnly?: boolean;
  /** The table's properties and `.hoodie/` listing when the caller read them a moment ago ({@link readCheckedHead}). */
  readonly head?: CheckedHead;
  /** The timeline folder's listing when the caller holds it too (layout 2: `.hoodie/timeline/`). */
  readonly timelineListing?: readonly {
    readonly key: string;
    readonly size: number;
    readonly etag?: string;
  }[];
  /** Completed writes' metadata decoded by earlier reads (a warm function's: instant-cache.ts). */
  readonly instantCache?: InstantMetadataCache;
  /**
   * Only these partitions, chosen from the timeline once it is read: the others are not listed, so the state names
   * none of them (the profiler's read of the partitions new instants wrote). Absent: every partition.
   */
  readonly partitions?: (timeline: HudiTimeline, config: HudiTableConfig) => ReadonlySet<string>;
}

/**
 * The read options of a caller that holds a warm function's instant cache (its coordination, or a bound format's
 * services), or none: every completed instant is then decoded once per function, not once per read.
 */
export function cachedBy(
  holder: { readonly instantCache?: InstantMetadataCache | undefined } | undefined,
): Pick<ReadHudiTableOptions, 'instantCache'> {
  return holder?.instantCache === undefined ? {} : { instantCache: holder.instantCache };
}

/** What every read of a table starts with (see {@link readCheckedHead}). */
export interface CheckedHead {
  readonly table: string;
  readonly config: HudiTableConfig;
  readonly hoodie: { objects: { key: string; size: number; etag: string }[]; folders: string[] };
}

/** What to name the table in messages: its root, or the store's description for a root table. */
function tableName(store: ObjectStore, root: string): string {
  return root === '' ? store.description : `${store.description.replace(/\/$/, '')}/${root}`;
}

/**
 * Reads the Hudi table at `tableRoot` (a key prefix, '' or without a trailing `/`): its properties, the refusals
 * (see errors.ts), its active timeline and its partitions' live file slices.
 * @throws HudiUnsupportedError (a subclass naming the feature) for a table lake-compactor refuses.
 * @throws HudiTimelineError when hoodie.properties or a timeline file is missing or malformed.
 */
export async function readHudiTable(
  store: ObjectStore,
  tableRoot: string,
  options: ReadHudiTableOptions = {},
): Promise<HudiTableState> {
  const root = tableRoot.replace(/\/+$/, '');
  const inspectOnly = options.inspectOnly === true;
  const { table, config, hoodie } = options.head ?? (await readCheckedHead(store, root, inspectOnly));

  const timeline = await readTimeline(store, table, root, config.layoutVersion, config.timelinePath, {
    ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
    ...(options.instantCache === undefined ? {} : { cache: options.instantCache }),
    ...(config.layoutVersion === 1
      ? { listing: hoodie.objects }
      : options.timelineListing === undefined
        ? {}
        : { listing: options.timelineListing }),
  });
  const pending = timeline.pendingRollbacks[0];
  if (pending !== undefined && !inspectOnly)
    throw new HudiPendingRollbackError(
      table,
      pending.action === 'restore' ? 'restore' : 'rollback',
      pending.time,
    );

  const { byPartition, ignored } = await listPartitions(store, root, options.partitions?.(timeline, config));
  const replaced = new Map<string, Map<string, string>>();
  for (const write of timeline.completedWrites)
    for (const [partition, ids] of write.metadata.partitionToReplaceFileIds)
      for (const id of ids) mapIn(replaced, partition).set(id, write.instant.time);
  const inPlans = new Map<string, Map<string, string>>();
  for (const plan of timeline.pendingPlans)
    for (const g of plan.fileGroups)
      mapIn(inPlans, g.partitionPath).set(g.fileId, `${plan.kind} ${plan.instant.time}`);

  const partitions: HudiPartitionState[] = [];
  for (const [partition, files] of [...byPartition.entries()].sort(([a], [b]) =>
    a < b ? -1 : a > b ? 1 : 0,
  )) {
    const groups = buildFileGroups(
      {
        table,
        layoutVersion: config.layoutVersion,
        timeline,
        replaced: replaced.get(partition) ?? new Map(),
        pending: inPlans.get(partition) ?? new Map(),
      },
      partition,
      files,
    );
    ignored.push(...groups.ignored);
    if (groups.liveSlices.length > 0)
      partitions.push({
        partition,
        values: partitionValuesOf(partition, config),
        liveSlices: groups.liveSlices,
      });
  }
  ignored.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return { tableRoot: root, config, timeline, partitions, ignored };
}

/**
 * What every read of the table starts with: its properties and the one listing of `.hoodie/` (layout 1: the timeline
 * itself), with the refusals they show checked (unless `inspectOnly`). The profiler's incremental read starts here
 * too, so a table refused as a whole is refused by it alike.
 */
export async function readCheckedHead(
  store: ObjectStore,
  root: string,
  inspectOnly = false,
): Promise<CheckedHead> {
  const table = tableName(store, root);
  const config = await readTableConfig(store, table, root);
  if (!inspectOnly) checkTableConfig(table, config);
  const hoodie = await listFolder(store, keyUnder(root, '.hoodie/'));
  if (!inspectOnly) await checkHoodieFolder(store, table, root, config, hoodie.folders);
  return { table, config, hoodie };
}

function mapIn(outer: Map<string, Map<string, string>>, key: string): Map<string, string> {
  let inner = outer.get(key);
  if (inner === undefined) {
    inner = new Map();
    outer.set(key, inner);
  }
  return inner;
}

/**
 * `.hoodie/hoodie.properties`, parsed.
 * @throws HudiTimelineError when it is missing or unreadable.
 */
export async function readTableConfig(
  store: ObjectStore,
  table: string,
  root: string,
): Promise<HudiTableConfig> {
  const key = keyUnder(root, '.hoodie/hoodie.properties');
  let bytes: Uint8Array;
  try {
    if ((await store.head(key)) === undefined) throw new ObjectNotFoundError(key);
    bytes = await readWithin(
      store,
      key,
      currentMetadataLimits().fileBytes,
      `Hudi table ${table}: hoodie.properties`,
    );
  } catch (err) {
    if (err instanceof ObjectNotFoundError)
      throw new HudiTimelineError(table, `${key} does not exist (not a Hudi table base path)`, {
        cause: err,
      });
    throw err;
  }
  return parseTableConfig(table, new TextDecoder().decode(bytes));
}

/**
 * Refuses what `.hoodie/`'s folders and the properties show: a metadata table, schema-on-read evolution, a bucket
 * index, a populated bootstrap index.
 */
async function checkHoodieFolder(
  store: ObjectStore,
  table: string,
  root: string,
  config: HudiTableConfig,
  folders: readonly string[],
): Promise<void> {
  const has = (name: string) => folders.includes(keyUnder(root, `.hoodie/${name}/`));
  if (config.metadataPartitions.length > 0 || config.metadataPartitionsInflight.length > 0)
    throw new HudiMetadataTableError(
      table,
      `hoodie.table.metadata.partitions=${[...config.metadataPartitions, ...config.metadataPartitionsInflight].join(',')}`,
    );
  if (
    has('metadata') &&
    (await store.head(keyUnder(root, '.hoodie/metadata/.hoodie/hoodie.properties'))) !== undefined
  )
    throw new HudiMetadataTableError(table, '.hoodie/metadata/.hoodie/hoodie.properties exists');
  if (has('.schema') && (await nonEmpty(store, keyUnder(root, '.hoodie/.schema/'))))
    throw new HudiSchemaOnReadError(table, '.hoodie/.schema/ holds schema history');
  if (config.properties.get('hoodie.schema.on.read.enable')?.trim().toLowerCase() === 'true')
    throw new HudiSchemaOnReadError(table, 'hoodie.schema.on.read.enable=true');
  if (has('.bucket_index') && (await nonEmpty(store, keyUnder(root, '.hoodie/.bucket_index/'))))
    throw new HudiBucketIndexError(table, '.hoodie/.bucket_index/ exists');
  if (has('.aux') && (await nonEmpty(store, keyUnder(root, '.hoodie/.aux/.bootstrap/'))))
    throw new HudiBootstrapError(table, '.hoodie/.aux/.bootstrap/ holds a bootstrap index');
}

async function nonEmpty(store: ObjectStore, prefix: string): Promise<boolean> {
  const page = await store.list(prefix, { maxKeys: 1 });
  return page.objects.length > 0 || page.commonPrefixes.length > 0;
}

/**
 * Every object under the root outside its hidden folders (`.hoodie/` and the like), grouped by the partition folder
 * holding it: a folder is a partition when it holds Hudi's partition marker. One listing of the root's first level,
 * then one (paginated) listing per top-level folder.
 */
export async function listPartitions(
  store: ObjectStore,
  root: string,
  only?: ReadonlySet<string>,
): Promise<{ byPartition: Map<string, ListedFile[]>; ignored: IgnoredObject[] }> {
  const prefix = root === '' ? '' : `${root}/`;
  const files: ListedFile[] = [];
  if (only === undefined) {
    const top = await listFolder(store, prefix);
    files.push(...top.objects);
    for (const folder of top.folders) {
      const name = folder.slice(prefix.length, -1);
      if (name.startsWith('.')) continue;
      for await (const o of store.listAll(folder)) files.push({ key: o.key, size: o.size, etag: o.etag });
    }
  } else {
    // One listing of each partition's own folder (its files lie directly in it), none of the rest of the table.
    for (const partition of [...only].sort())
      if (partition === '' || !partition.split('/').some((part) => part === '' || part.startsWith('.')))
        files.push(
          ...(await listFolder(store, partition === '' ? prefix : `${prefix}${partition}/`)).objects,
        );
  }
  const byDir = new Map<string, ListedFile[]>();
  for (const f of files) {
    const rel = f.key.slice(prefix.length);
    const slash = rel.lastIndexOf('/');
    const dir = slash < 0 ? '' : rel.slice(0, slash);
    const list = byDir.get(dir);
    if (list === undefined) byDir.set(dir, [f]);
    else list.push(f);
  }
  const byPartition = new Map<string, ListedFile[]>();
  const ignored: IgnoredObject[] = [];
  for (const [dir, list] of byDir) {
    if (list.some((f) => isPartitionMarker(f.key.slice(f.key.lastIndexOf('/') + 1))))
      byPartition.set(dir, list);
    else
      for (const f of list)
        ignored.push({ key: f.key, reason: 'outside any Hudi partition (no .hoodie_partition_metadata)' });
  }
  return { byPartition, ignored };
}

/**
 * The table state as the TableFormat port's snapshot (notes §11.2): each partition's plan inputs are the live base
 * files of its base-only file groups; a live slice with log files awaits compaction, so its base and logs are
 * ignored with that reason. `formatState` records what a commit must find unchanged.
 */
export function toTableSnapshot(state: HudiTableState, now: number): TableSnapshot {
  const ignored: IgnoredObject[] = [...state.ignored];
  const partitions: SnapshotPartition[] = [];
  for (const p of state.partitions) {
    const files: PlanInputFile[] = [];
    for (const slice of p.liveSlices) {
      if (slice.logFiles.length > 0) {
        const why = `live file slice of ${slice.fileId} has ${slice.logFiles.length} log file(s): Merge-on-Read compaction rewrites it, clustering does not`;
        if (slice.baseFile !== undefined) ignored.push({ key: slice.baseFile.key, reason: why });
        for (const log of slice.logFiles) ignored.push({ key: log.key, reason: why });
      } else if (slice.baseFile !== undefined)
        files.push({ key: slice.baseFile.key, size: slice.baseFile.size, etag: slice.baseFile.etag });
    }
    files.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    if (files.length > 0) partitions.push({ partition: p.partition, values: p.values, files });
  }
  ignored.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const latest = state.timeline.latestCompletedWrite;
  return {
    tableRoot: state.tableRoot,
    listedAt: now,
    partitions,
    ignored,
    foreignTables: [],
    formatState: {
      tableVersion: state.config.version,
      layoutVersion: state.config.layoutVersion,
      timelineTimezone: state.config.timelineTimezone,
      ...(latest === undefined ? {} : { latestInstant: latest.time }),
      ...(latest?.completionTime === undefined ? {} : { latestCompletionTime: latest.completionTime }),
    },
  };
}
