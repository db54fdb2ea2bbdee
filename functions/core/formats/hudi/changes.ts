// The profiler's view of a Hudi table (CommitLogChanges): completed instants are the table's changes; a data file is
// not data until its instant completes. What the profiler counts is what a run of the partition would rewrite now:
// the snapshot's plan inputs (toTableSnapshot: the base files of live, base-only file slices, outside replaced file
// groups and pending plans) or, in a Merge-on-Read partition whose compaction is due by the very rule the plan step
// schedules it by (compaction-trigger.ts: the table's hudiCompactionDeltaCommits), the base and log files of every
// slice that compaction rewrites — a run of such a partition compacts and plans nothing else — marked `serviceDue` so
// they count as candidates whatever their size.
// A partition whose slices all have log files thus starts a run once its compaction is due, and not before: a run
// started earlier would plan nothing and, released at once, be started again.
//
// Incremental read: the instants that completed since the cursor, found by one listing of the timeline, and only
// their commit metadata read — each write stat's base file added, the older base files of its file group (found by
// one listing of each partition the instant wrote) and every base file of a replaced file group removed. That is
// exact only where the write stats alone say what the counted set becomes. On a Merge-on-Read table they never do —
// a slice counts only while it has no log files, which logs a slice has (a v6 log joins a slice by base instant, a v8
// one by completion time) is not in the stats of the write that changed it, and whether a partition's compaction is
// due depends on its delta commits since its last one — so each partition the new instants wrote is counted whole
// instead (ChangesRead `partitions`: the active timeline and one listing of that partition, never the rest of the
// table; readMergeOnReadChanges says when more is read). The whole state is read instead (`rebuild`, with why) when:
//   - a clustering, compaction or replacecommit is pending now or was at the cursor: the whole-state read sets its
//     file groups aside while it is pending;
//   - a rollback or restore undid an instant that may have been applied, or a savepoint, restore or index instant
//     completed;
//   - the cursor's instant left the active timeline (archived), or its memo predates this reader;
//   - Copy-on-Write: an instant completed in the same second as the cursor's (the per-file sequencer counts seconds: a
//     remove of the same second as the cursor's add would be taken for stale);
//   - Copy-on-Write: a file a new instant added is not where its stat says (cleaned since, or outside a partition
//     Hudi marked);
//   - Merge-on-Read: the active timeline was archived since the cursor, a rollback, restore, savepoint or index
//     instant completed, the table's merge settings changed, or the cursor predates the memo's ` since` or ` merge`.
//
// Which instants are new: those whose completion time (v8+; v6: instant time) is after the cursor's, and those that
// were pending when the cursor was taken — a v6 write begun before the cursor's instant completes after it with an
// older time. The cursor's memo is the last completed instant's time, followed by ` pending ` and the pending
// instants (`<time>.<action>`, comma-separated) when there were any. Reading depends on the storage and the cursor
// only, never on the event: duplicate and reordered events converge on the same state.
import { createHash } from 'node:crypto';
import type { FormatState } from '../../../ports/journal.js';
import type { ObjectStore } from '../../../ports/object-store.js';
import type {
  ChangeCursor,
  ChangeState,
  ChangesRead,
  CommitLogChanges,
  CountedFile,
  FileChange,
  ObjectRole,
  VersionChanges,
} from '../table-format.js';
import { DEFAULT_COMPACTION_DELTA_COMMITS, mergeSettingsOf } from './compaction-run.js';
import { compactionDueIn } from './compaction-trigger.js';
import {
  isBucketFileId,
  isPartitionMarker,
  parseBaseFileName,
  parseLogFileName,
  partitionValuesOf,
} from './file-groups.js';
import { compareInstants, type HudiInstant, parseInstantFileName } from './instants.js';
import type { HudiTableConfig } from './properties.js';
import {
  type CheckedHead,
  type HudiTableState,
  readCheckedHead,
  readHudiTable,
  toTableSnapshot,
} from './table-state.js';
import {
  decodeCommitMetadata,
  type HudiCommitMetadata,
  type HudiTimeline,
  type InstantMetadataCache,
  keyUnder,
  listFolder,
  readTimelineFile,
  undoneInstants,
} from './timeline.js';

/** The timeline's completed write instants (`.hoodie/T.action`, `.hoodie/timeline/T_C.action`). */
const COMPLETED_WRITE =
  /^\.hoodie\/(?:[A-Za-z0-9._-]+\/)?(\d{14}|\d{17})(?:_(\d{14}|\d{17}))?\.(commit|deltacommit|replacecommit)$/;

/**
 * The cursor's version of the instant a group committed (its formatState's `hudiCompleted`, the completed instant
 * file): the second it completed, as {@link versionOf} counts. Instants completing in the same second share it (and on
 * table version 6 an instant counts by its start), so the cursor may reach it before this instant is applied: the
 * wait it guards then ends early — a run that finds nothing to do, never a run held back.
 */
function committedVersion(state: FormatState): number | undefined {
  const key = state.hudiCompleted;
  if (typeof key !== 'string') return undefined;
  // The key from the timeline folder on, as a completed write's event names it relative to the table root.
  const m = COMPLETED_WRITE.exec(key.slice(key.lastIndexOf('.hoodie/')));
  const completed = m?.[2] ?? m?.[1];
  return completed === undefined ? undefined : Number(completed.slice(0, 14));
}

/** Pending actions whose file groups the whole-state read sets aside (a plan, or a replace naming none yet). */
const PLAN_ACTIONS: ReadonlySet<string> = new Set([
  'compaction',
  'logcompaction',
  'clustering',
  'replacecommit',
]);

/** Completed actions that change no counted file: a clean deletes only older slices and replaced groups. */
const NEUTRAL_ACTIONS: ReadonlySet<string> = new Set(['clean']);

/** Completed actions whose commit metadata names the partitions (and files) they wrote. */
const WRITE_ACTIONS: ReadonlySet<string> = new Set(['commit', 'deltacommit', 'replacecommit']);

/**
 * What the cursor remembers: the last completed instant, the instants then pending and, when known, where the active
 * timeline then began (its first completed write; '' with none): a Merge-on-Read read continues only from the same.
 */
export interface HudiChangeMemo {
  readonly latest: string;
  readonly pending: readonly { readonly time: string; readonly action: string }[];
  readonly since?: string;
  /** The table's merge settings then, as a short digest ({@link mergeDigest}). */
  readonly merge?: string;
}

const TIME = '(?:\\d{14}|\\d{17})';
/**
 * `<latest> pending <time.action,…|none>[ since <time|none>]`. The ` pending` part is always written: a memo of the
 * reader before it (the bare instant time) records no pending instants, not that there were none, so it must not
 * decode as a memo of this reader (a v6 write pending then, completing later with an older time, would never be
 * counted). ` since` came later: a memo without it does not say where the timeline began; ` merge` later still: one
 * without it does not say under which merge settings its partitions were counted.
 */
const MEMO = new RegExp(
  `^(${TIME})? pending (none|${TIME}\\.[a-z]+(?:,${TIME}\\.[a-z]+)*)(?: since (none|${TIME}))?(?: merge ([0-9a-f]{12}))?$`,
);

export function encodeHudiMemo(memo: HudiChangeMemo): string {
  const pending = memo.pending.map((p) => `${p.time}.${p.action}`).join(',');
  const since = memo.since === undefined ? '' : ` since ${memo.since === '' ? 'none' : memo.since}`;
  const merge = memo.merge === undefined ? '' : ` merge ${memo.merge}`;
  return `${memo.latest} pending ${pending === '' ? 'none' : pending}${since}${merge}`;
}

/** The memo, or undefined when it is not one this reader wrote. */
export function decodeHudiMemo(text: string): HudiChangeMemo | undefined {
  const m = MEMO.exec(text);
  if (m === null) return undefined;
  const pending = (m[2] === 'none' ? '' : (m[2] ?? ''))
    .split(',')
    .filter((p) => p !== '')
    .map((p) => {
      const dot = p.indexOf('.');
      return { time: p.slice(0, dot), action: p.slice(dot + 1) };
    });
  const since = m[3] === undefined ? undefined : m[3] === 'none' ? '' : m[3];
  return {
    latest: m[1] ?? '',
    pending,
    ...(since === undefined ? {} : { since }),
    ...(m[4] === undefined ? {} : { merge: m[4] }),
  };
}

/** When an instant completed, as the timeline orders completions: its completion time (v8+), else its time. */
function completedAt(i: HudiInstant): string {
  return i.completionTime ?? i.time;
}

/** The cursor's version: the completion's second (an instant's 17 digits exceed Number.MAX_SAFE_INTEGER). */
function versionOf(i: HudiInstant | undefined): number {
  return i === undefined ? 0 : Number(completedAt(i).slice(0, 14));
}

/** What a memo records of a timeline: each time's furthest state, the last completed instant, the pending ones. */
interface TimelineSummary {
  readonly latest: HudiInstant[];
  readonly last: HudiInstant | undefined;
  readonly pending: HudiInstant[];
  /** The first completed write's time ('' with none): where the active timeline begins (older ones archived). */
  readonly since: string;
}

function summarize(instants: readonly HudiInstant[]): TimelineSummary {
  const byTime = new Map<string, HudiInstant>();
  for (const i of [...instants].sort(compareInstants)) byTime.set(i.time, i);
  const latest = [...byTime.values()];
  let last: HudiInstant | undefined;
  for (const i of latest)
    if (i.state === 'completed' && (last === undefined || completedAt(i) >= completedAt(last))) last = i;
  const first = latest.find((i) => i.state === 'completed' && WRITE_ACTIONS.has(i.action));
  return { latest, last, pending: latest.filter((i) => i.state !== 'completed'), since: first?.time ?? '' };
}

function memoOf(
  summary: Pick<TimelineSummary, 'last' | 'pending' | 'since'>,
  config: HudiTableConfig,
): string {
  return encodeHudiMemo({
    latest: summary.last?.time ?? '',
    pending: summary.pending.map((i) => ({ time: i.time, action: i.action })),
    since: summary.since,
    merge: mergeDigest(config),
  });
}

/**
 * The table's merge settings (compaction-run.ts `mergeSettingsOf`: payload class, merge mode, ordering fields, …) as a
 * 12-hex digest: whether a compaction is due, or refused by name, in every partition follows them, so a cursor counted
 * under other settings is not continued from.
 */
export function mergeDigest(config: HudiTableConfig): string {
  return createHash('sha256')
    .update(JSON.stringify(mergeSettingsOf(config)))
    .digest('hex')
    .slice(0, 12);
}

/** A listed partition folder: its objects by key, and whether Hudi marked it a partition. */
interface ListedPartition {
  readonly files: ReadonlyMap<string, { readonly key: string; readonly size: number }>;
  readonly marked: boolean;
}

/**
 * The file changes of the instants completed since `from` (see the module comment), or `rebuild` with why.
 * Reads hoodie.properties, lists `.hoodie/` (and the timeline folder on layout 2), reads the new instants'
 * metadata and lists the partitions they wrote.
 */
export async function readHudiChanges(
  store: ObjectStore,
  tableRoot: string,
  from: ChangeCursor,
  deltaCommits = DEFAULT_COMPACTION_DELTA_COMMITS,
  cache?: InstantMetadataCache,
): Promise<ChangesRead> {
  const rebuild = (reason: string): ChangesRead => ({ kind: 'rebuild', reason });
  const memo = decodeHudiMemo(from.memo);
  if (memo === undefined || memo.latest === '')
    return rebuild('the cursor names no completed Hudi instant this reader can continue from');
  const root = tableRoot.replace(/\/+$/, '');
  const head = await readCheckedHead(store, root);
  const { table, config, hoodie } = head;
  const folder = keyUnder(root, config.timelinePath);
  const listing = config.layoutVersion >= 2 ? (await listFolder(store, folder)).objects : hoodie.objects;
  const sizeOf = new Map<string, number>();
  const instants: HudiInstant[] = [];
  for (const o of listing) {
    const name = o.key.slice(folder.length);
    const instant = parseInstantFileName(table, name, config.layoutVersion);
    if (instant === undefined) continue;
    instants.push(instant);
    sizeOf.set(name, o.size);
  }
  const summary = summarize(instants);
  const { latest, last, pending } = summary;
  if (memo.pending.some((p) => PLAN_ACTIONS.has(p.action)))
    return rebuild(
      'a clustering, compaction or replace was pending at the cursor: its file groups were set aside',
    );
  const plan = pending.find((i) => PLAN_ACTIONS.has(i.action));
  if (plan !== undefined)
    return rebuild(`${plan.action} ${plan.time} is pending: the whole-state read sets its file groups aside`);
  const undoing = pending.find((i) => i.action === 'rollback' || i.action === 'restore');
  if (undoing !== undefined) return rebuild(`${undoing.action} ${undoing.time} is pending`);
  const cursorInstant = latest.find((i) => i.time === memo.latest && i.state === 'completed');
  if (cursorInstant === undefined)
    return rebuild(`the cursor's instant ${memo.latest} is no longer on the active timeline`);
  const wasPending = new Set(memo.pending.map((p) => p.time));
  const cursorAt = completedAt(cursorInstant);
  const fresh = latest
    .filter(
      (i) =>
        i.state === 'completed' &&
        i !== cursorInstant &&
        (completedAt(i) > cursorAt || wasPending.has(i.time)),
    )
    .sort((a, b) => (completedAt(a) < completedAt(b) ? -1 : completedAt(a) > completedAt(b) ? 1 : 0));
  const cursor = { version: Math.max(from.version, versionOf(last)), memo: memoOf(summary, config) };
  if (fresh.length === 0) return { kind: 'versions', versions: [], cursor };
  if (config.type !== 'COPY_ON_WRITE')
    return readMergeOnReadChanges(store, {
      root,
      head,
      listing,
      memo,
      summary,
      fresh,
      cursor,
      deltaCommits,
      ...(cache === undefined ? {} : { cache }),
    });
  const early = fresh.find((i) => versionOf(i) <= from.version);
  if (early !== undefined)
    return rebuild(`instant ${early.time} completed in the same second as the cursor's, or before it`);

  const read = async (i: HudiInstant) =>
    readTimelineFile(store, table, `${folder}${i.fileName}`, sizeOf.get(i.fileName) ?? 0);
  const freshTimes = new Set(fresh.map((i) => i.time));
  const writes: { instant: HudiInstant; metadata: HudiCommitMetadata }[] = [];
  for (const instant of fresh) {
    if (NEUTRAL_ACTIONS.has(instant.action)) continue;
    if (instant.action === 'rollback') {
      // A rollback of a write that never completed changes nothing counted; of one that may have been applied, it does.
      for (const t of await undoneInstants(table, instant, await read(instant)))
        if (freshTimes.has(t) || (t <= memo.latest && !wasPending.has(t)))
          return rebuild(`rollback ${instant.time} undid instant ${t}, which may have been applied`);
      continue;
    }
    if (instant.action !== 'commit' && instant.action !== 'replacecommit')
      return rebuild(`a completed ${instant.action} (${instant.time}) is not read incrementally`);
    writes.push({
      instant,
      metadata: await decodeCommitMetadata(
        table,
        instant.fileName,
        await read(instant),
        config.layoutVersion,
      ),
    });
  }

  const partitions = new Map<string, ListedPartition>();
  const partitionOf = async (partition: string): Promise<ListedPartition> => {
    const known = partitions.get(partition);
    if (known !== undefined) return known;
    const listed = await listFolder(store, keyUnder(root, partition === '' ? '' : `${partition}/`));
    const entry = {
      files: new Map(listed.objects.map((o) => [o.key, { key: o.key, size: o.size }])),
      marked: listed.objects.some((o) => isPartitionMarker(o.key.slice(o.key.lastIndexOf('/') + 1))),
    };
    partitions.set(partition, entry);
    return entry;
  };

  const versions = new Map<number, Map<string, FileChange>>();
  for (const { instant, metadata } of writes) {
    const changes = versions.get(versionOf(instant)) ?? new Map<string, FileChange>();
    versions.set(versionOf(instant), changes);
    const outcome = await applyWrite(config, root, instant, metadata, partitionOf, changes);
    if (outcome !== undefined) return rebuild(outcome);
  }
  return {
    kind: 'versions',
    versions: [...versions.entries()]
      .sort(([a], [b]) => a - b)
      .map(([version, files]) => ({ version, files: [...files.values()] }) satisfies VersionChanges),
    cursor,
  };
}

/**
 * One completed commit or replacecommit's changes into `changes` (the version's last word per key): each written
 * base file added, the older base files of its group and every base file of a replaced group removed. Returns why
 * the write cannot be applied alone, or undefined.
 */
async function applyWrite(
  config: HudiTableConfig,
  root: string,
  instant: HudiInstant,
  metadata: HudiCommitMetadata,
  partitionOf: (partition: string) => Promise<ListedPartition>,
  changes: Map<string, FileChange>,
): Promise<string | undefined> {
  const put = (change: FileChange) => changes.set(change.key, change);
  const removeGroup = (
    partition: string,
    listed: ListedPartition,
    fileId: string,
    keep: (instantTime: string) => boolean,
  ) => {
    for (const f of listed.files.values()) {
      const base = parseBaseFileName(f.key.slice(f.key.lastIndexOf('/') + 1));
      if (base === undefined || base.fileId !== fileId || keep(base.instantTime)) continue;
      put({ kind: 'removed', key: f.key, partition, values: partitionValuesOf(partition, config) });
    }
  };
  for (const [partition, ids] of metadata.partitionToReplaceFileIds) {
    const listed = await partitionOf(partition);
    for (const id of ids) removeGroup(partition, listed, id, () => false);
  }
  for (const [partition, stats] of metadata.partitionToWriteStats) {
    const listed = await partitionOf(partition);
    for (const stat of stats) {
      if (stat.path === undefined || stat.path === '') continue;
      const key = keyUnder(root, stat.path);
      const name = key.slice(key.lastIndexOf('/') + 1);
      const base = parseBaseFileName(name);
      if (base === undefined || base.fileId !== stat.fileId || isBucketFileId(base.fileId))
        return `${instant.action} ${instant.time} wrote ${stat.path}, not a base file of its file group`;
      if (base.instantTime !== instant.time)
        return `${instant.action} ${instant.time} names ${stat.path}, a base file of another instant`;
      const file = listed.files.get(key);
      if (file === undefined || !listed.marked)
        return `${stat.path}, which ${instant.action} ${instant.time} wrote, is not in its Hudi partition any more`;
      removeGroup(partition, listed, base.fileId, (t) => t >= instant.time);
      put({
        kind: 'added',
        key,
        size: file.size,
        partition,
        values: partitionValuesOf(partition, config),
      });
    }
  }
  return undefined;
}

/**
 * The whole state at the last completed instant: per partition, the live base files of base-only slices or, where a
 * Merge-on-Read compaction of `deltaCommits` is due (compaction-trigger.ts), the files of the slices it rewrites.
 * Depends on the storage only, so duplicate and reordered events read the same counted set.
 */
export async function readHudiState(
  store: ObjectStore,
  tableRoot: string,
  deltaCommits = DEFAULT_COMPACTION_DELTA_COMMITS,
  cache?: InstantMetadataCache,
): Promise<ChangeState> {
  const state = await readHudiTable(
    store,
    tableRoot.replace(/\/+$/, ''),
    cache === undefined ? {} : { instantCache: cache },
  );
  const summary = summarize(state.timeline.instants);
  const partitions = (await countedPartitions(store, state, deltaCommits)).filter((p) => p.files.length > 0);
  return { cursor: { version: versionOf(summary.last), memo: memoOf(summary, state.config) }, partitions };
}

/**
 * What the profiler counts in each partition of `state` (see {@link readHudiState}), and in each of `named` — a
 * partition there without a live slice counts nothing — when given.
 */
async function countedPartitions(
  store: ObjectStore,
  state: HudiTableState,
  deltaCommits: number,
  named?: ReadonlySet<string>,
): Promise<ChangeState['partitions'][number][]> {
  const snap = toTableSnapshot(state, 0);
  const baseOnly = new Map(snap.partitions.map((p) => [p.partition, p.files]));
  const partitions: ChangeState['partitions'][number][] = [];
  // A partition whose every file group is in a pending compaction has no live slice, yet its run finishes the plan.
  const planned = state.timeline.pendingPlans
    .filter((plan) => plan.kind === 'compaction')
    .flatMap((plan) => plan.fileGroups.map((g) => g.partitionPath));
  const listed = new Set(state.partitions.map((p) => p.partition));
  const setAside = [...new Set([...planned, ...(named ?? [])])]
    .filter((partition) => !listed.has(partition))
    .map((partition) => ({ partition, values: partitionValuesOf(partition, state.config) }));
  for (const p of [...state.partitions, ...setAside].sort((a, b) =>
    a.partition < b.partition ? -1 : a.partition > b.partition ? 1 : 0,
  )) {
    // A run of a partition whose compaction is due compacts and plans nothing else (TableFormat.planService): its
    // counted files are the slices it rewrites, so the policy's ratio is not diluted by base files it leaves alone.
    const verdict = compactionDueIn(state, p.partition, deltaCommits);
    const files: CountedFile[] = !verdict.due
      ? (baseOnly.get(p.partition) ?? []).map((f) => ({ key: f.key, size: f.size }))
      : verdict.resumes !== undefined
        ? await pendingGroupFiles(store, state.tableRoot, p.partition, verdict.resumes.fileIds)
        : verdict.slices.flatMap((slice) =>
            [slice.base, ...slice.logs].map((f) => ({ key: f.key, size: f.size, serviceDue: true })),
          );
    files.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    partitions.push({ partition: p.partition, values: p.values, files });
  }
  return partitions;
}

/** What the Merge-on-Read read continues from (see {@link readMergeOnReadChanges}). */
interface MergeOnReadRead {
  /** The table root ('' or without a trailing `/`). */
  readonly root: string;
  readonly head: CheckedHead;
  /** The timeline folder as listed a moment ago. */
  readonly listing: readonly { readonly key: string; readonly size: number; readonly etag: string }[];
  readonly memo: HudiChangeMemo;
  /** The timeline as listed now. */
  readonly summary: TimelineSummary;
  /** The instants completed since the cursor, in completion order. */
  readonly fresh: readonly HudiInstant[];
  readonly cursor: ChangeCursor;
  readonly deltaCommits: number;
  /** A warm function's decoded instants (instant-cache.ts): the active timeline is then mostly not read again. */
  readonly cache?: InstantMetadataCache;
}

/**
 * The changes of a Merge-on-Read table since the cursor, as the partitions they touched (ChangesRead `partitions`):
 * what such a partition counts depends on which log files its slices have and on how many delta commits wrote to it
 * since its compaction, which no write stat says, so each touched partition is counted whole — from the active
 * timeline (every completed instant's metadata, as the whole-state read reads it) and one listing of that partition
 * only, never of the rest of the table. A partition no new instant wrote keeps what it counted: its slices did not
 * change, nor did its delta-commit count, unless
 *   - the active timeline was archived since the cursor (its first completed write moved): a count may have fallen
 *     with no write to the partition — the whole state is read;
 *   - on table version 6, whether a write is pending changed (compactionDeferral holds every partition's compaction
 *     back while one is): every partition a completed write on the active timeline names is counted again (only those
 *     can have a delta commit to count);
 *   - a rollback or restore completed (on Merge-on-Read it may add or delete log files of any slice it names), or a
 *     savepoint or index instant did — the whole state is read, as is for pending plans and the rest (readHudiChanges).
 *   - the table's merge settings in hoodie.properties changed (or the cursor does not record them): every partition's
 *     verdict follows them — the whole state is read.
 */
async function readMergeOnReadChanges(store: ObjectStore, read: MergeOnReadRead): Promise<ChangesRead> {
  const { head, memo, summary, fresh } = read;
  const rebuild = (reason: string): ChangesRead => ({ kind: 'rebuild', reason });
  if (memo.since === undefined)
    return rebuild('the cursor does not say where the active timeline began (written by an earlier reader)');
  if (memo.merge !== mergeDigest(head.config))
    return rebuild(
      memo.merge === undefined
        ? 'the cursor does not record the merge settings its partitions were counted under (written by an earlier reader)'
        : "the table's merge settings in hoodie.properties changed since the cursor: whether compaction is due, or refused, follows them in every partition",
    );
  if (memo.since !== summary.since)
    return rebuild(
      `the active timeline was archived since the cursor (its first completed write was ${memo.since || 'none'}, now ${summary.since || 'none'}): a partition's delta-commit count may have fallen without a write to it`,
    );
  for (const instant of fresh) {
    if (NEUTRAL_ACTIONS.has(instant.action) || WRITE_ACTIONS.has(instant.action)) continue;
    return rebuild(
      instant.action === 'rollback'
        ? `rollback ${instant.time} completed: on a Merge-on-Read table it may change the log files of any slice it names`
        : `a completed ${instant.action} (${instant.time}) is not read incrementally`,
    );
  }
  const writing = (pending: readonly { readonly action: string }[]) =>
    pending.some((p) => p.action === 'commit' || p.action === 'deltacommit');
  const deferralMoved = head.config.version === 6 && writing(memo.pending) !== writing(summary.pending);
  const freshTimes = new Set(fresh.map((i) => i.time));
  // The partitions to count again: those the new instants wrote, or — the v6 deferral moved — every one the active
  // timeline names. Chosen from the timeline the state is read with, so only they are listed.
  const touchedBy = (timeline: HudiTimeline): Set<string> =>
    new Set(
      timeline.completedWrites
        .filter((w) => deferralMoved || freshTimes.has(w.instant.time))
        .flatMap((w) => [
          ...w.metadata.partitionToWriteStats.keys(),
          ...w.metadata.partitionToReplaceFileIds.keys(),
        ]),
    );
  const state = await readHudiTable(store, read.root, {
    head,
    timelineListing: read.listing,
    partitions: touchedBy,
    ...(read.cache === undefined ? {} : { instantCache: read.cache }),
  });
  return {
    kind: 'partitions',
    partitions: await countedPartitions(store, state, read.deltaCommits, touchedBy(state.timeline)),
    cursor: read.cursor,
  };
}

/**
 * The files of a pending compaction's file groups in `partition` (set aside from the live slices while it is pending),
 * counted for the run that finishes it: each group's newest base file and its log files, as listed now.
 */
async function pendingGroupFiles(
  store: ObjectStore,
  root: string,
  partition: string,
  fileIds: readonly string[],
): Promise<CountedFile[]> {
  const ids = new Set(fileIds);
  const newestBase = new Map<string, { key: string; size: number; instant: string }>();
  const files: CountedFile[] = [];
  for (const o of (await listFolder(store, keyUnder(root, partition === '' ? '' : `${partition}/`)))
    .objects) {
    const name = o.key.slice(o.key.lastIndexOf('/') + 1);
    const base = parseBaseFileName(name);
    if (base !== undefined && ids.has(base.fileId)) {
      const known = newestBase.get(base.fileId);
      if (known === undefined || known.instant < base.instantTime)
        newestBase.set(base.fileId, { key: o.key, size: o.size, instant: base.instantTime });
      continue;
    }
    const log = parseLogFileName(name);
    if (log !== undefined && !log.cdc && ids.has(log.fileId))
      files.push({ key: o.key, size: o.size, serviceDue: true });
  }
  for (const b of newestBase.values()) files.push({ key: b.key, size: b.size, serviceDue: true });
  return files;
}

/**
 * The profiler's view of a Hudi table whose Merge-on-Read compaction is due after `deltaCommits` delta commits (the
 * table's `hudiCompactionDeltaCommits`; see the module comment). The format's `forTable` binds it per table.
 */
export function hudiChangesFor(
  deltaCommits = DEFAULT_COMPACTION_DELTA_COMMITS,
  cache?: InstantMetadataCache,
): CommitLogChanges {
  return {
    ...hudiChanges,
    readChanges: (store, tableRoot, from) => readHudiChanges(store, tableRoot, from, deltaCommits, cache),
    readState: (store, tableRoot) => readHudiState(store, tableRoot, deltaCommits, cache),
  };
}

/** The profiler's view of a Hudi table (see the module comment), with Hudi's default compaction trigger. */
export const hudiChanges: CommitLogChanges = {
  kind: 'commit-log',
  // An instant's 17 digits exceed Number.MAX_SAFE_INTEGER: the number only nudges a read after the cursor.
  eventVersions: 'pointer',
  roleOf: (relativeKey, event): ObjectRole => {
    const m = COMPLETED_WRITE.exec(relativeKey);
    if (m !== null && event === 'created') return { kind: 'commit', version: Number(m[1]?.slice(0, 14)) };
    return {
      kind: 'ignored',
      reason: relativeKey.startsWith('.hoodie/')
        ? 'Hudi timeline or table-service file, not a completed write'
        : 'a Hudi file is data only once its instant completes',
    };
  },
  readChanges: (store, tableRoot, from) => readHudiChanges(store, tableRoot, from),
  readState: (store, tableRoot) => readHudiState(store, tableRoot),
  committedVersion,
};
