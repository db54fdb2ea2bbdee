// The active Hudi timeline, read through the ObjectStore: one listing of `.hoodie/` (layout 1) or
// `.hoodie/timeline/` (layout 2), every instant of every action with its state, the completed writes' metadata
// (write stats, replaced file groups), the completed rollbacks and restores (which writes they undid), and the
// pending plans whose file groups must not be planned (clustering, compaction, logcompaction). The archive is not
// read: an instant older than the first completed write of the active timeline counts as committed, as Hudi's
// `isBeforeTimelineStarts` says, since archival only moves completed instants out.
import pLimit from 'p-limit';
import type { ObjectStore } from '../../../ports/object-store.js';
import { AvroLimitError, decodeContainer } from '../../avro/container.js';
import { MetadataTooLargeError } from '../../errors.js';
import { currentMemoryBudget, currentMetadataLimits, readWithin } from '../../memory-budget.js';
import { HudiTimelineError } from './errors.js';
import {
  compareInstants,
  compareInstantTimes,
  type HudiAction,
  type HudiInstant,
  parseInstantFileName,
} from './instants.js';
import { type HudiPlanMark, planMarkOf } from './plan-mark.js';

/** One file written by a completed write, as its commit metadata's `partitionToWriteStats` records it. */
export interface HudiWriteStat {
  readonly fileId: string;
  /** Relative to the table root; absent for a stat of a file that was not written (an inflight's placeholder). */
  readonly path?: string;
  readonly partitionPath?: string;
  /** The previous slice's instant (`"null"` for a new file group), as written. */
  readonly prevCommit?: string;
  readonly numWrites?: number;
  readonly numInserts?: number;
  readonly numDeletes?: number;
  readonly numUpdateWrites?: number;
  readonly fileSizeInBytes?: number;
}

/** The parts of a completed commit, deltacommit or replacecommit the reader uses. */
export interface HudiCommitMetadata {
  /** Partition path → the files the write wrote. */
  readonly partitionToWriteStats: ReadonlyMap<string, readonly HudiWriteStat[]>;
  /** Partition path → the file group ids a replacecommit replaced (empty for other actions). */
  readonly partitionToReplaceFileIds: ReadonlyMap<string, readonly string[]>;
  readonly operationType?: string;
  /** True for a compaction's commit. */
  readonly compacted: boolean;
  /** `extraMetadata` (`schema`: the table's Avro schema at this commit). */
  readonly extraMetadata: ReadonlyMap<string, string>;
}

/**
 * Completed writes' decoded metadata kept across reads, by key and the ETag the listing gave the file (instant-cache.ts
 * `HudiInstantCache`, one per warm function): a file written again under its name is decoded afresh.
 */
export interface InstantMetadataCache {
  get(key: string, etag: string): HudiCommitMetadata | undefined;
  set(key: string, etag: string, metadata: HudiCommitMetadata, bytes: number): void;
}

/** A completed commit, deltacommit or replacecommit (compactions and clusterings complete as these) with its metadata. */
export interface HudiCompletedWrite {
  readonly instant: HudiInstant;
  readonly metadata: HudiCommitMetadata;
}

/** One file group a pending plan holds. */
export interface HudiPlannedFileGroup {
  readonly partitionPath: string;
  readonly fileId: string;
  /**
   * Compaction plans only: whether the operation names a base file (`dataFilePath`); a log-only slice's has none,
   * and such a plan is left to Hudi's compactor (compaction-workflow.ts `resumePending`).
   */
  readonly hasBaseFile?: boolean;
}

/** A requested or inflight clustering, compaction or logcompaction, and the file groups its plan names. */
export interface HudiPendingPlan {
  readonly instant: HudiInstant;
  readonly kind: 'clustering' | 'compaction' | 'logcompaction';
  readonly fileGroups: readonly HudiPlannedFileGroup[];
  /** Who of lake-compactor scheduled the plan, from the mark in its extraMetadata (plan-mark.ts); none: Hudi's. */
  readonly mark?: HudiPlanMark;
}

/** The active timeline as the reader needs it. */
export interface HudiTimeline {
  readonly layoutVersion: number;
  /** Every instant file, ordered by time then state. */
  readonly instants: readonly HudiInstant[];
  /** Each instant time's furthest state (its completed file when there is one), ordered by time. */
  readonly latest: readonly HudiInstant[];
  /** Completed commits, deltacommits and replacecommits with their metadata, ordered by instant time. */
  readonly completedWrites: readonly HudiCompletedWrite[];
  /** The newest completed write (by instant time), when there is one. */
  readonly latestCompletedWrite?: HudiInstant;
  /** The first completed write's time: older instants were archived, hence committed. */
  readonly timelineStart?: string;
  /** Instant time → the rollback or restore instant that undid it. */
  readonly rolledBack: ReadonlyMap<string, string>;
  /** Requested or inflight rollbacks and restores (a table in this state is refused). */
  readonly pendingRollbacks: readonly HudiInstant[];
  /** Pending clusterings, compactions and logcompactions with their plans' file groups. */
  readonly pendingPlans: readonly HudiPendingPlan[];
  /** Pending replacecommits that are not clustering (insert_overwrite, delete_partition): file groups unknown. */
  readonly pendingReplaces: readonly HudiInstant[];
  /** Other pending writes (commit, deltacommit requested or inflight): their files are not committed yet. */
  readonly pendingWrites: readonly HudiInstant[];
}

/** What the table's owner can do about a timeline file too large to read. */
const TIMELINE_REMEDY =
  "have the table's owner let Hudi archive the timeline (hoodie.keep.min.commits / hoodie.keep.max.commits)";

const WRITE_ACTIONS: ReadonlySet<HudiAction> = new Set(['commit', 'deltacommit', 'replacecommit']);

/** The key of `relative` under the table root `root` ('' or without a trailing `/`). */
export function keyUnder(root: string, relative: string): string {
  return root === '' ? relative : `${root}/${relative}`;
}

/** Every object directly in the folder `prefix` (ending with `/`) and its subfolders' prefixes, all pages. */
export async function listFolder(
  store: ObjectStore,
  prefix: string,
): Promise<{ objects: { key: string; size: number; etag: string }[]; folders: string[] }> {
  const objects: { key: string; size: number; etag: string }[] = [];
  const folders: string[] = [];
  let token: string | undefined;
  do {
    const page = await store.list(prefix, { delimiter: '/', ...(token === undefined ? {} : { token }) });
    for (const o of page.objects) objects.push({ key: o.key, size: o.size, etag: o.etag });
    folders.push(...page.commonPrefixes);
    token = page.nextToken;
  } while (token !== undefined);
  return { objects, folders };
}

/**
 * Reads the active timeline of the table at `root` with timeline layout `layoutVersion` (from hoodie.properties),
 * whose instants lie in `timelinePath` (`.hoodie/` or `.hoodie/timeline/`): one listing, then the completed writes'
 * and rollbacks' metadata and the pending plans, a few at a time.
 * @throws HudiTimelineError when a timeline file is not what Hudi writes (the message names it).
 * @throws MetadataTooLargeError when one is larger than the memory budget allows.
 */
export async function readTimeline(
  store: ObjectStore,
  table: string,
  root: string,
  layoutVersion: number,
  timelinePath: string,
  options: {
    readonly concurrency?: number;
    /** The timeline folder's listing when the caller already holds it (layout 1: the `.hoodie/` listing). */
    readonly listing?: readonly { readonly key: string; readonly size: number; readonly etag?: string }[];
    /** Completed writes' metadata decoded by earlier reads, by key and listed ETag (instant-cache.ts). */
    readonly cache?: InstantMetadataCache;
  } = {},
): Promise<HudiTimeline> {
  const folder = keyUnder(root, timelinePath);
  const objects = options.listing ?? (await listFolder(store, folder)).objects;
  const instants: HudiInstant[] = [];
  const sizeOf = new Map<string, number>();
  const etagOf = new Map<string, string>();
  for (const o of objects) {
    const name = o.key.slice(folder.length);
    const instant = parseInstantFileName(table, name, layoutVersion);
    if (instant === undefined) continue;
    instants.push(instant);
    sizeOf.set(name, o.size);
    if (o.etag !== undefined) etagOf.set(name, o.etag);
  }
  instants.sort(compareInstants);

  // Each time's furthest state: the last of its files in (time, state) order.
  const byTime = new Map<string, HudiInstant>();
  for (const i of instants) byTime.set(i.time, i);
  const latest = [...byTime.values()];
  const requestedOf = (time: string, action: HudiAction): HudiInstant | undefined =>
    instants.find((i) => i.time === time && i.action === action && i.state === 'requested');

  const read = (fileName: string) =>
    readTimelineFile(store, table, `${folder}${fileName}`, sizeOf.get(fileName) ?? 0);
  const limit = pLimit(options.concurrency ?? 8);

  const completedWriteInstants = latest.filter((i) => i.state === 'completed' && WRITE_ACTIONS.has(i.action));
  const completedWrites = await Promise.all(
    completedWriteInstants.map((instant) =>
      limit(async () => {
        // The store's own name too: one warm function reads tables of several buckets.
        const key = `${store.description}\u0000${folder}${instant.fileName}`;
        const etag = etagOf.get(instant.fileName);
        const cached = etag === undefined ? undefined : options.cache?.get(key, etag);
        if (cached !== undefined) return { instant, metadata: cached };
        const metadata = await decodeCommitMetadata(
          table,
          instant.fileName,
          await read(instant.fileName),
          layoutVersion,
        );
        if (etag !== undefined) options.cache?.set(key, etag, metadata, sizeOf.get(instant.fileName) ?? 0);
        return { instant, metadata };
      }),
    ),
  );

  const rolledBack = new Map<string, string>();
  const pendingRollbacks: HudiInstant[] = [];
  const pendingPlans: HudiPendingPlan[] = [];
  const pendingReplaces: HudiInstant[] = [];
  const pendingWrites: HudiInstant[] = [];
  await Promise.all(
    latest.map((instant) =>
      limit(async () => {
        const { action, state } = instant;
        if (action === 'rollback' || action === 'restore') {
          if (state !== 'completed') pendingRollbacks.push(instant);
          else
            for (const t of await undoneInstants(table, instant, await read(instant.fileName)))
              rolledBack.set(t, instant.time);
          return;
        }
        if (state === 'completed') return;
        if (action === 'compaction' || action === 'logcompaction' || action === 'clustering') {
          const requested = requestedOf(instant.time, action);
          if (requested === undefined)
            throw new HudiTimelineError(
              table,
              `pending ${action} ${instant.time} has no ${action}.requested plan`,
            );
          const plan = await read(requested.fileName);
          const found =
            action === 'clustering'
              ? await clusteringFileGroups(table, requested.fileName, plan, true)
              : await compactionFileGroups(table, requested.fileName, plan);
          pendingPlans.push({
            instant,
            kind: action,
            fileGroups: found.groups,
            ...(found.mark === undefined ? {} : { mark: found.mark }),
          });
        } else if (action === 'replacecommit') {
          // v6 clustering is a replacecommit whose requested file holds a clustering plan; other replacecommits
          // (insert_overwrite, delete_partition) name no file groups until they complete.
          const requested = requestedOf(instant.time, action);
          const plan =
            requested === undefined
              ? undefined
              : await clusteringFileGroups(table, requested.fileName, await read(requested.fileName), false);
          if (plan === undefined) pendingReplaces.push(instant);
          else
            pendingPlans.push({
              instant,
              kind: 'clustering',
              fileGroups: plan.groups,
              ...(plan.mark === undefined ? {} : { mark: plan.mark }),
            });
        } else if (action === 'commit' || action === 'deltacommit') pendingWrites.push(instant);
      }),
    ),
  );
  const byInstant = (a: { instant: HudiInstant }, b: { instant: HudiInstant }) =>
    compareInstants(a.instant, b.instant);
  completedWrites.sort(byInstant);
  pendingPlans.sort(byInstant);
  pendingRollbacks.sort(compareInstants);
  pendingReplaces.sort(compareInstants);
  pendingWrites.sort(compareInstants);
  const first = completedWrites[0]?.instant;
  const last = completedWrites.at(-1)?.instant;
  return {
    layoutVersion,
    instants,
    latest,
    completedWrites,
    ...(last === undefined ? {} : { latestCompletedWrite: last }),
    ...(first === undefined ? {} : { timelineStart: first.time }),
    rolledBack,
    pendingRollbacks,
    pendingPlans,
    pendingReplaces,
    pendingWrites,
  };
}

/**
 * Whether a file written at `instantTime` is committed: its instant is a completed write of the active timeline,
 * or it is older than the timeline's start (archived), and no rollback or restore undid it. A file whose instant is
 * pending, unknown (its instant files removed) or rolled back is not.
 */
export function isCommitted(timeline: HudiTimeline, instantTime: string): boolean {
  if (timeline.rolledBack.has(instantTime)) return false;
  const index = indexOf(timeline);
  if (index.completedWrites.has(instantTime)) return true;
  if (index.onTimeline.has(instantTime)) return false;
  return timeline.timelineStart !== undefined && compareInstantTimes(instantTime, timeline.timelineStart) < 0;
}

/** A timeline's lookups by instant time, built once per timeline: every listed file asks them. */
interface TimelineIndex {
  readonly completedWrites: ReadonlyMap<string, HudiInstant>;
  readonly onTimeline: ReadonlySet<string>;
}

const indexes = new WeakMap<HudiTimeline, TimelineIndex>();

function indexOf(timeline: HudiTimeline): TimelineIndex {
  let index = indexes.get(timeline);
  if (index === undefined) {
    index = {
      completedWrites: new Map(timeline.completedWrites.map((w) => [w.instant.time, w.instant])),
      onTimeline: new Set(timeline.latest.map((i) => i.time)),
    };
    indexes.set(timeline, index);
  }
  return index;
}

/** The completion time of a completed write (layout 2; layout 1 has none, so its instant time stands in). */
export function completionTimeOf(timeline: HudiTimeline, instantTime: string): string | undefined {
  const write = indexOf(timeline).completedWrites.get(instantTime);
  return write === undefined ? undefined : (write.completionTime ?? write.time);
}

/** A timeline file's bytes, within the memory budget. */
export async function readTimelineFile(
  store: ObjectStore,
  table: string,
  key: string,
  size: number,
): Promise<Uint8Array> {
  if (size === 0) return new Uint8Array();
  return readWithin(
    store,
    key,
    currentMetadataLimits().fileBytes,
    `Hudi table ${table}: timeline file`,
    TIMELINE_REMEDY,
  );
}

/** A timeline file's one Avro record (Hudi writes each plan and metadata as one record), within the budget. */
async function avroRecordOf(
  table: string,
  key: string,
  bytes: Uint8Array,
): Promise<Readonly<Record<string, unknown>>> {
  let decoded: Awaited<ReturnType<typeof decodeContainer>>;
  try {
    decoded = await decodeContainer(bytes);
  } catch (err) {
    if (err instanceof AvroLimitError)
      throw new MetadataTooLargeError(
        key,
        `Hudi table ${table}: timeline file`,
        err.message,
        currentMemoryBudget().advice,
        TIMELINE_REMEDY,
        { cause: err },
      );
    throw new HudiTimelineError(
      table,
      `timeline file ${key} is not a readable Avro file (${(err as Error).message})`,
      { cause: err },
    );
  }
  const [record, ...more] = decoded.records;
  if (record === undefined || more.length > 0)
    throw new HudiTimelineError(
      table,
      `timeline file ${key} holds ${decoded.records.length} records, not one`,
    );
  return record;
}

type Json = Readonly<Record<string, unknown>>;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);
}

/** A numeric field as a number (Avro longs are BigInt, JSON numbers numbers), or undefined when absent or null. */
function num(table: string, file: string, field: string, v: unknown): number | undefined {
  if (v === null || v === undefined) return undefined;
  if (typeof v === 'bigint') {
    if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < -BigInt(Number.MAX_SAFE_INTEGER))
      throw new HudiTimelineError(table, `${file}: ${field} ${v} is out of range`);
    return Number(v);
  }
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  throw new HudiTimelineError(table, `${file}: ${field} is ${JSON.stringify(v)}, not a number`);
}

function str(table: string, file: string, field: string, v: unknown): string | undefined {
  if (v === null || v === undefined) return undefined;
  if (typeof v === 'string') return v;
  throw new HudiTimelineError(table, `${file}: ${field} is not a string`);
}

function mapOf(table: string, file: string, field: string, v: unknown): [string, unknown][] {
  if (v === null || v === undefined) return [];
  if (!isObject(v)) throw new HudiTimelineError(table, `${file}: ${field} is not a map`);
  return Object.entries(v);
}

function arrayOf(table: string, file: string, field: string, v: unknown): unknown[] {
  if (v === null || v === undefined) return [];
  if (!Array.isArray(v)) throw new HudiTimelineError(table, `${file}: ${field} is not an array`);
  return v;
}

/**
 * Decodes a completed commit's metadata (see {@link HudiCommitMetadata}): JSON in layout 1 (Jackson's
 * HoodieCommitMetadata or HoodieReplaceCommitMetadata), Avro in layout 2; an empty file is an empty commit. Every
 * field the reader uses is checked to have the type Hudi writes.
 * @throws HudiTimelineError when the bytes are not JSON or Avro of that shape.
 */
export async function decodeCommitMetadata(
  table: string,
  fileName: string,
  bytes: Uint8Array,
  layoutVersion: number,
): Promise<HudiCommitMetadata> {
  if (bytes.length === 0)
    return {
      partitionToWriteStats: new Map(),
      partitionToReplaceFileIds: new Map(),
      compacted: false,
      extraMetadata: new Map(),
    };
  let raw: unknown;
  if (layoutVersion >= 2) raw = await avroRecordOf(table, fileName, bytes);
  else {
    try {
      raw = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
    } catch (err) {
      throw new HudiTimelineError(
        table,
        `commit metadata ${fileName} is not valid JSON (${(err as Error).message})`,
        { cause: err },
      );
    }
  }
  if (!isObject(raw)) throw new HudiTimelineError(table, `commit metadata ${fileName} is not an object`);
  const partitionToWriteStats = new Map<string, HudiWriteStat[]>();
  for (const [partition, stats] of mapOf(
    table,
    fileName,
    'partitionToWriteStats',
    raw.partitionToWriteStats,
  )) {
    const out: HudiWriteStat[] = [];
    for (const s of arrayOf(table, fileName, `partitionToWriteStats[${partition}]`, stats)) {
      if (!isObject(s))
        throw new HudiTimelineError(table, `${fileName}: a write stat of ${partition} is not an object`);
      const fileId = str(table, fileName, 'fileId', s.fileId);
      if (fileId === undefined)
        throw new HudiTimelineError(table, `${fileName}: a write stat of ${partition} has no fileId`);
      const stat: Record<string, unknown> = { fileId };
      for (const f of ['path', 'partitionPath', 'prevCommit'] as const) {
        const v = str(table, fileName, f, s[f]);
        if (v !== undefined) stat[f] = v;
      }
      for (const f of [
        'numWrites',
        'numInserts',
        'numDeletes',
        'numUpdateWrites',
        'fileSizeInBytes',
      ] as const) {
        const v = num(table, fileName, f, s[f]);
        if (v !== undefined) stat[f] = v;
      }
      out.push(stat as unknown as HudiWriteStat);
    }
    partitionToWriteStats.set(partition, out);
  }
  const partitionToReplaceFileIds = new Map<string, string[]>();
  for (const [partition, ids] of mapOf(
    table,
    fileName,
    'partitionToReplaceFileIds',
    raw.partitionToReplaceFileIds,
  )) {
    const list = arrayOf(table, fileName, `partitionToReplaceFileIds[${partition}]`, ids);
    if (!list.every((id) => typeof id === 'string'))
      throw new HudiTimelineError(
        table,
        `${fileName}: partitionToReplaceFileIds[${partition}] holds a non-string`,
      );
    partitionToReplaceFileIds.set(partition, list as string[]);
  }
  const extraMetadata = new Map<string, string>();
  for (const [k, v] of mapOf(table, fileName, 'extraMetadata', raw.extraMetadata))
    if (typeof v === 'string') extraMetadata.set(k, v);
  const operationType = str(table, fileName, 'operationType', raw.operationType);
  if (raw.compacted !== undefined && raw.compacted !== null && typeof raw.compacted !== 'boolean')
    throw new HudiTimelineError(table, `${fileName}: compacted is not a boolean`);
  return {
    partitionToWriteStats,
    partitionToReplaceFileIds,
    ...(operationType === undefined ? {} : { operationType }),
    compacted: raw.compacted === true,
    extraMetadata,
  };
}

/** The instants a completed rollback (`commitsRollback`) or restore (`instantsToRollback`) undid. */
export async function undoneInstants(
  table: string,
  instant: HudiInstant,
  bytes: Uint8Array,
): Promise<string[]> {
  if (bytes.length === 0) return [];
  const record = await avroRecordOf(table, instant.fileName, bytes);
  const field = instant.action === 'rollback' ? 'commitsRollback' : 'instantsToRollback';
  const list = arrayOf(table, instant.fileName, field, record[field]);
  return list.map((v) => {
    // Restores list instants as HoodieInstantInfo records in later versions, as strings in earlier ones.
    const t = isObject(v) ? v.commitTime : v;
    if (typeof t !== 'string')
      throw new HudiTimelineError(table, `${instant.fileName}: ${field} holds a non-instant`);
    return t;
  });
}

/**
 * The file groups of a clustering plan (HoodieRequestedReplaceMetadata's `clusteringPlan.inputGroups[].slices[]`),
 * and our mark from its top-level extraMetadata.
 * For a v6 replacecommit (`required` false), undefined when the file holds no clustering plan: an insert_overwrite.
 */
function clusteringFileGroups(
  table: string,
  fileName: string,
  bytes: Uint8Array,
  required: true,
): Promise<PlanRead>;
function clusteringFileGroups(
  table: string,
  fileName: string,
  bytes: Uint8Array,
  required: false,
): Promise<PlanRead | undefined>;
async function clusteringFileGroups(
  table: string,
  fileName: string,
  bytes: Uint8Array,
  required: boolean,
): Promise<PlanRead | undefined> {
  if (bytes.length === 0) {
    if (required) throw new HudiTimelineError(table, `clustering plan ${fileName} is empty`);
    return undefined;
  }
  const record = await avroRecordOf(table, fileName, bytes);
  const plan = record.clusteringPlan;
  if (plan === null || plan === undefined) {
    if (required) throw new HudiTimelineError(table, `clustering plan ${fileName} has no clusteringPlan`);
    return undefined;
  }
  if (!isObject(plan)) throw new HudiTimelineError(table, `${fileName}: clusteringPlan is not a record`);
  const groups: HudiPlannedFileGroup[] = [];
  for (const group of arrayOf(table, fileName, 'clusteringPlan.inputGroups', plan.inputGroups)) {
    if (!isObject(group)) throw new HudiTimelineError(table, `${fileName}: an input group is not a record`);
    for (const slice of arrayOf(table, fileName, 'inputGroups[].slices', group.slices))
      groups.push(plannedGroup(table, fileName, slice));
  }
  const mark = planMarkOf(record.extraMetadata);
  return mark === undefined ? { groups } : { groups, mark };
}

/** The file groups of a compaction or logcompaction plan (HoodieCompactionPlan's `operations[]`). */
async function compactionFileGroups(table: string, fileName: string, bytes: Uint8Array): Promise<PlanRead> {
  if (bytes.length === 0) throw new HudiTimelineError(table, `compaction plan ${fileName} is empty`);
  const record = await avroRecordOf(table, fileName, bytes);
  const groups = arrayOf(table, fileName, 'operations', record.operations).map((op) => ({
    ...plannedGroup(table, fileName, op),
    hasBaseFile: isObject(op) && typeof op.dataFilePath === 'string' && op.dataFilePath !== '',
  }));
  const mark = planMarkOf(record.extraMetadata);
  return mark === undefined ? { groups } : { groups, mark };
}

/** What a pending plan's requested file says: the file groups it holds, and our mark when it is ours. */
interface PlanRead {
  readonly groups: HudiPlannedFileGroup[];
  readonly mark?: HudiPlanMark;
}

function plannedGroup(table: string, fileName: string, v: unknown): HudiPlannedFileGroup {
  if (!isObject(v)) throw new HudiTimelineError(table, `${fileName}: a planned slice is not a record`);
  const fileId = str(table, fileName, 'fileId', v.fileId);
  const partitionPath = str(table, fileName, 'partitionPath', v.partitionPath);
  if (fileId === undefined || fileId === '' || partitionPath === undefined)
    throw new HudiTimelineError(table, `${fileName}: a planned slice has no fileId or partitionPath`);
  return { partitionPath, fileId };
}
