// Merge-on-Read compaction of a Hudi table, as Hudi's own compactor runs it (HUDI-NOTES §5.1; HoodieCompactor,
// ScheduleCompactionActionExecutor, RunCompactionActionExecutor):
//
//   trigger   Hudi's default NUM_COMMITS strategy: schedule once `deltaCommits` (hoodie.compact.inline.max.delta.
//             commits, default 5) delta commits completed since the table's last completed compaction; every live
//             file slice with log files and a base file is an operation (LogFileSizeBasedCompactionStrategy with
//             its default threshold 0 takes them all). A log-only slice is left for Hudi (reported).
//   refuse    payload classes other than OverwriteWithLatestAvroPayload / DefaultHoodieRecordPayload and merge modes
//             other than COMMIT_TIME_ORDERING / EVENT_TIME_ORDERING (log/merge.ts `mergePolicy`), before anything is
//             written.
//   schedule  under the table's lock: mint T above every instant, write `T.compaction.requested` (the plan), then
//             the empty `T.compaction.inflight`. Hudi writers keep appending to the file groups (new log files go to
//             the slice of T), readers keep reading the old slices until T completes.
//   execute   per operation: the direct marker `.hoodie/.temp/T/<partition>/<file>.marker.MERGE` before the output
//             (Hudi's merge handle writes one before its file; BaseHoodieTableServiceClient.completeCompaction
//             deletes them after the commit), then the slice merged at T (compaction-merge.ts), rewritten by the
//             Parquet engine from the base file (less the rows the logs replaced or deleted) and the surviving log
//             rows (staged under `.hoodie/.temp/lake-compactor-staging/T/`, outside Hudi's marker folder), into
//             `<fileId>_<token>_T.parquet` in the same file group — meta columns kept, `_hoodie_file_name` the new
//             name, the bloom filter and key range recomputed — then verified by re-reading it against the
//             rewrite's fingerprint, i.e. against the merged view.
//   complete  under the lock: the completed `commit` (v6 `T.commit`, JSON; v8+ `T_C.commit`, Avro) written with a
//             conditional create, the one atomic step.
//
// A pending compaction on the timeline is executed before anything new is scheduled, as Hudi does
// (runAnyPendingCompactions): an inflight one is first rolled back to its plan as Hudi's `compact` does
// (HoodieTable.rollbackInflightCompaction: the files its markers name, the markers, the inflight file), then run
// again, so a run that crashed anywhere is finished by the next run (the old view stays until then) — a plan carrying
// our mark that another run of ours scheduled only once that run is dead (abandoned-plans.ts `planRunLiveness`; else
// it is left, `held`), for rolling back a live run's inflight would delete the files it is writing. Our heartbeat
// (`.hoodie/.heartbeat/T`, renewed while a run works on T) is that sign of life; Hudi never reads a compaction's
// heartbeat (its compactor writes none, and its LAZY failed-writes cleaner never rolls back a compaction). A failure
// of the run that scheduled T rolls T back to its plan the same way and keeps the plan, as Hudi's compactor does
// (BaseHoodieTableServiceClient.compact: a scheduled compaction is completed, never removed — a v6 writer that began
// after T already puts its logs under base instant T), for the next run, or Hudi's compactor, to finish — unless the
// merge refused a slice by name, which every run would: then a plan of ours (scheduled by this run, or marked by any
// run of ours: plan-mark.ts) is unscheduled (`unscheduleRefusedPlan`), as the workflow does; a Hudi writer's stays.
//
// On table version 6 nothing is scheduled while a write is pending (`compactionDeferral`, shared with the workflow's
// plan step): see there why.
import type { Clock } from '../../../ports/clock.js';
import type { ObjectStore } from '../../../ports/object-store.js';
import type { ParquetEngine, WriterTuningMemo } from '../../../ports/parquet-engine.js';
import { InvalidInputError, PreconditionFailedError } from '../../errors.js';
import { whileAlive } from '../../workflow/keep-alive.js';
import { planRunLiveness } from './abandoned-plans.js';
import { HUDI_INDEX_FOOTER_KEYS, HudiIndexFooterBuilder } from './bloom/index.js';
import type { HudiCoordination } from './clustering-commit.js';
import { HudiCompactionUnsupportedError } from './compaction-errors.js';
import {
  checkSliceMergeable,
  logRowsParquet,
  MERGE_REFUSAL_ERRORS,
  mergeFileSlice,
} from './compaction-merge.js';
import { withHudiLock } from './lock/index.js';
import { droppedRows, type MergePolicy, mergePolicy } from './log/index.js';
import {
  HEARTBEAT_RENEW_MS,
  heartbeatKey,
  pendingKeys,
  removeMarkers,
  renewHeartbeat,
  rollBackInflight,
  type TimelineLocation,
  writeMarkers,
} from './pending-instant.js';
import { planMarkMetadata } from './plan-mark.js';
import type { HudiTableConfig } from './properties.js';
import { cachedBy, type HudiTableState, readHudiTable, readTableConfig } from './table-state.js';
import { type HudiPendingPlan, isCommitted, keyUnder, listFolder } from './timeline.js';
import {
  baseFileName,
  buildCompactionCommitMetadata,
  buildCompactionPlan,
  COMPACTION_PLAN_SCHEMA,
  type CompactionOperation,
  type CompactionOutput,
  compactionCommitContent,
  compactionRequestedContent,
  completedInstantFile,
  decodeTimelineAvro,
  EMPTY_INFLIGHT_CONTENT,
  type InstantTimeZone,
  instantTimeZoneFor,
  mintInstantTime,
  writeToken,
} from './timeline-writer/index.js';
import { listTraces, moveLogsOffInstant, removeTrace, traceOf, writeTrace } from './unschedule-logs.js';

/** Hudi's default `hoodie.compact.inline.max.delta.commits`. */
export const DEFAULT_COMPACTION_DELTA_COMMITS = 5;

export interface HudiCompactionDeps {
  readonly store: ObjectStore;
  readonly engine: Pick<ParquetEngine, 'rewriteGroup' | 'verifyOutputs'>;
  readonly clock: Clock;
  /** The table's declared coordination (its lock), as for clustering. */
  readonly coordination: HudiCoordination;
  /**
   * Whether a run still has a group holding an instant open in the caller's journal (abandoned-plans.ts
   * `holdsInstant`): with the heartbeat, how a pending plan another run of ours scheduled is told alive or dead.
   */
  readonly holdsInstant?: (runId: string, instant: string) => Promise<boolean>;
  /** Worker threads each slice's new base file is encoded and verified with (the engine splits a large one). */
  readonly workers?: number;
}

export interface HudiCompactionOptions {
  /** Delta commits since the last compaction that trigger one (NUM_COMMITS). @default 5 */
  readonly deltaCommits?: number;
  /** The run scheduling the plan, named by our mark in it (plan-mark.ts). @default `lake-compactor` and T */
  readonly runId?: string;
  /** A test's crash point: thrown after the named step, nothing undone (a killed process). */
  readonly crashAfter?: 'scheduled' | 'written';
}

/** One compacted file slice. */
export interface CompactedSlice {
  readonly partition: string;
  readonly fileId: string;
  readonly baseFile: string;
  readonly logFiles: readonly string[];
  /** The new base file's key. */
  readonly output: string;
  /** Rows of the new base file. */
  readonly rows: number;
  /** Rows of the compacted slice's base file: `rows` = `baseRows` − `deleted` + `inserted`. */
  readonly baseRows: number;
  readonly updated: number;
  readonly deleted: number;
  readonly inserted: number;
}

export type HudiCompactionResult =
  | { readonly kind: 'nothing'; readonly reason: string }
  | {
      /** A pending plan of ours whose run is alive: left to it (nothing written). */
      readonly kind: 'held';
      readonly instant: string;
      /** The run our mark in the plan names. */
      readonly run: string;
      /** Why that run is taken for alive (planRunLiveness). */
      readonly why: string;
    }
  | {
      readonly kind: 'compacted';
      readonly instant: string;
      /** Whether the plan was a pending one found on the timeline (a crashed run's, or Hudi's own). */
      readonly resumed: boolean;
      readonly slices: readonly CompactedSlice[];
      /** Slices with logs left to Hudi, with why. */
      readonly skipped: readonly { readonly key: string; readonly reason: string }[];
    };

/** The table's merge semantics, or a refusal by name (HudiMergeUnsupportedError) before anything is written. */
export function compactionPolicy(state: HudiTableState): MergePolicy {
  return mergePolicy(mergeSettingsOf(state.config));
}

/**
 * What of hoodie.properties decides the merge's semantics (and whether it is refused by name): the one list, so the
 * profiler's cursor can tell when it changed (changes.ts).
 */
export function mergeSettingsOf(c: HudiTableConfig): Parameters<typeof mergePolicy>[0] {
  return {
    tableVersion: c.version,
    ...(c.payloadClass === undefined ? {} : { payloadClass: c.payloadClass }),
    ...(c.mergeMode === undefined ? {} : { mergeMode: c.mergeMode }),
    orderingFields: c.orderingFields.join(','),
    ...(c.properties.get('hoodie.table.partial.update.mode') === undefined
      ? {}
      : { partialUpdateMode: c.properties.get('hoodie.table.partial.update.mode') }),
  };
}

/** Delta commits completed since the latest completed compaction (Hudi's NUM_COMMITS count). */
export function deltaCommitsSinceCompaction(state: HudiTableState): number {
  const writes = state.timeline.completedWrites;
  let last = -1;
  writes.forEach((w, i) => {
    if (w.instant.action === 'commit' && w.metadata.compacted) last = i;
  });
  return writes.slice(last + 1).filter((w) => w.instant.action === 'deltacommit').length;
}

/**
 * Why no compaction may be scheduled on `state` now, or undefined when one may. On table version 6 a compaction
 * instant must be below the earliest inflight write (Hudi's ScheduleCompactionActionExecutor: "Earliest write
 * inflight instant time must be later than compaction time"; newer Hudi skips scheduling on such tables): a write
 * that began before T resolves its file slices by start time, so it appends its logs under the old base instant,
 * which T's new base file supersedes — those rows would belong to no live slice once T completes. T is minted above
 * every instant, so on v6 the only safe moment is when no write is pending. From version 8 on, slices follow
 * completion time (non-blocking compaction) and the rule falls away. Checked before the lock and again under it.
 */
export function compactionDeferral(state: HudiTableState): string | undefined {
  if (state.config.version !== 6 || state.timeline.pendingWrites.length === 0) return undefined;
  const pending = state.timeline.pendingWrites.map((i) => `${i.time}.${i.action}.${i.state}`).join(', ');
  return `table version 6 with write(s) pending (${pending}): Hudi schedules a compaction only below the earliest inflight write, so it waits until they complete or are rolled back`;
}

/** The operations a new plan would hold: live slices with logs and a base file; log-only slices skipped. */
export function compactionCandidates(state: HudiTableState): {
  operations: {
    partition: string;
    fileId: string;
    baseInstant: string;
    base: { key: string; size: number };
    logs: { key: string; size: number }[];
  }[];
  skipped: { key: string; reason: string }[];
} {
  const operations = [];
  const skipped = [];
  for (const p of state.partitions)
    for (const slice of p.liveSlices) {
      if (slice.logFiles.length === 0) continue;
      if (slice.baseFile === undefined) {
        skipped.push({
          key: slice.logFiles[0]?.key ?? slice.fileId,
          reason: `file group ${slice.fileId} has log files but no base file: left to Hudi's compactor`,
        });
        continue;
      }
      operations.push({
        partition: p.partition,
        fileId: slice.fileId,
        baseInstant: slice.baseInstantTime,
        base: { key: slice.baseFile.key, size: slice.baseFile.size },
        logs: slice.logFiles.map((l) => ({ key: l.key, size: l.size })),
      });
    }
  return { operations, skipped };
}

export function timelineFolder(state: HudiTableState): string | undefined {
  const path = state.config.timelinePath.replace(/\/+$/, '');
  return path === '.hoodie' ? undefined : path.slice('.hoodie/'.length);
}

function locationOf(state: HudiTableState): TimelineLocation {
  return {
    tableRoot: state.tableRoot,
    tableVersion: state.config.version,
    timelinePath: state.config.timelinePath,
  };
}

/** The requested and inflight files of compaction `instant`. */
export function compactionKeys(
  state: HudiTableState,
  instant: string,
): { requested: string; inflight: string } {
  return pendingKeys(locationOf(state), 'compaction', instant);
}

export function zoneOf(state: HudiTableState, coordination: HudiCoordination): InstantTimeZone {
  try {
    return instantTimeZoneFor(state.config.timelineTimezone, coordination.localZone);
  } catch (err) {
    throw new InvalidInputError(
      `Hudi table ${state.tableRoot || '(root)'}: ${err instanceof Error ? err.message : String(err)} (hudiTimezone; on the CLI --hudi-timezone)`,
    );
  }
}

export function timelineTimes(state: HudiTableState): string[] {
  return state.timeline.instants.flatMap((i) =>
    i.completionTime === undefined ? [i.time] : [i.time, i.completionTime],
  );
}

/** Creates `key` only when absent; the same bytes there already are ours (a retry). */
export async function createOnce(store: ObjectStore, key: string, body: Uint8Array): Promise<void> {
  try {
    await store.put(key, body, { ifNoneMatch: '*' });
  } catch (err) {
    if (!(err instanceof PreconditionFailedError)) throw err;
    const there = await store.get(key);
    if (Buffer.compare(Buffer.from(there), Buffer.from(body)) !== 0)
      throw new InvalidInputError(
        `Hudi instant file ${key} already exists with other content: another writer minted the same instant`,
      );
  }
}

async function underLock<T>(
  deps: HudiCompactionDeps,
  tableRoot: string,
  work: (assertHeld: (during: string) => void) => Promise<T>,
): Promise<T> {
  const config = await readTableConfig(deps.store, tableRoot || '(root)', tableRoot);
  const lock = deps.coordination.lockFor(deps.store, tableRoot, config.name, deps.clock);
  if (lock === undefined) return work(() => {});
  return withHudiLock(lock, (handle) => work((during) => handle.assertHeld(during)));
}

/** The completed file of `instant` (`T.commit` / `T_C.commit`), when there is one. */
export async function findCompleted(
  store: ObjectStore,
  state: HudiTableState,
  instant: string,
): Promise<string | undefined> {
  return completedCompactionOf(
    store,
    { tableRoot: state.tableRoot, timelinePath: state.config.timelinePath },
    instant,
  );
}

export function partitionKey(state: HudiTableState, partition: string, name: string): string {
  return keyUnder(state.tableRoot, partition === '' ? name : `${partition}/${name}`);
}

/** The new base file's name: the operation's index is Spark's partition id in Hudi's compactor. */
export function outputName(fileId: string, index: number, instant: string): string {
  return baseFileName(fileId, writeToken({ partitionId: index, stageId: 0, attemptId: 0 }), instant);
}

/**
 * Compacts the Merge-on-Read table at `tableRoot` (see the module comment): finishes the oldest pending compaction
 * no live run of ours holds (several may be pending, one per partition the workflow compacts), else — none pending —
 * schedules and runs one when the trigger says so; `held` only when every pending one is held.
 * @throws HudiUnsupportedError / HudiMergeUnsupportedError for a table refused by name (nothing written).
 * @throws HudiCompactionUnsupportedError (or another of the merge's refusals) for a slice that cannot be merged
 *   exactly: our instant rolled back to its plan, and a plan of ours then unscheduled; a Hudi writer's plan is kept.
 */
export async function compactHudiMergeOnRead(
  deps: HudiCompactionDeps,
  tableRoot: string,
  options: HudiCompactionOptions = {},
): Promise<HudiCompactionResult> {
  const root = tableRoot.replace(/\/+$/, '');
  let state = await readHudiTable(deps.store, root, cachedBy(deps.coordination));
  if (state.config.type !== 'MERGE_ON_READ')
    return { kind: 'nothing', reason: 'a Copy-on-Write table has no log files to compact' };
  const policy = compactionPolicy(state);
  // A v6 unschedule of ours left unfinished: the logs it must still move join their slice before anything is read.
  if (await settleUnscheduledPlans(deps, root))
    state = await readHudiTable(deps.store, root, cachedBy(deps.coordination));
  await removeCompletedLeftovers(deps.store, state);
  // Pending compactions first, oldest first (several may be pending: the workflow compacts partitions side by side);
  // one a live run of ours holds is left to it, and the next is taken — only when every one is held is that said.
  let firstHeld: HudiCompactionResult | undefined;
  for (const pending of state.timeline.pendingPlans.filter((p) => p.kind === 'compaction')) {
    const held = await restartPending(deps, state, pending, options.runId);
    if (held !== undefined) {
      firstHeld ??= held;
      continue;
    }
    const operations = await readPlan(deps.store, state, pending.instant.time);
    try {
      return await execute(
        deps,
        state,
        policy,
        pending.instant.time,
        operations,
        { resumed: true, skipped: [] },
        options,
      );
    } catch (err) {
      // A plan carrying our mark is ours whichever run of ours wrote it (this one takes it over, as it takes over
      // any pending compaction): a refusal unschedules it. A Hudi writer's plan stays, as its failed run left it.
      if (pending.mark !== undefined && options.crashAfter === undefined && isMergeRefusal(err))
        await rollbackOwn(deps, state, pending.instant.time, true);
      throw err;
    }
  }
  if (firstHeld !== undefined) return firstHeld;
  const triggered = deltaCommitsSinceCompaction(state);
  const needed = options.deltaCommits ?? DEFAULT_COMPACTION_DELTA_COMMITS;
  if (triggered < needed)
    return {
      kind: 'nothing',
      reason: `${triggered} delta commit(s) since the last compaction, fewer than the ${needed} that trigger one (NUM_COMMITS)`,
    };
  const deferred = compactionDeferral(state);
  if (deferred !== undefined) return { kind: 'nothing', reason: deferred };
  const { operations, skipped } = compactionCandidates(state);
  if (operations.length === 0)
    return { kind: 'nothing', reason: 'no live file slice has both a base file and log files' };
  // Every refusal of the merge by name (what cannot be merged or written back exactly), before anything is written.
  for (const op of operations)
    await checkSliceMergeable(
      deps.store,
      { baseKey: op.base.key, baseSize: op.base.size, logKeys: op.logs.map((l) => l.key) },
      policy,
      (i) => isCommitted(state.timeline, i),
    );
  const scheduled = await underLock(deps, root, async (assertHeld) => {
    const now = await readHudiTable(deps.store, root, cachedBy(deps.coordination));
    if (now.timeline.pendingPlans.some((p) => p.kind === 'compaction')) return undefined;
    // A writer may have begun since the first read: the v6 rule holds under the lock, where no writer starts.
    const deferredNow = compactionDeferral(now);
    if (deferredNow !== undefined) return deferredNow;
    const instant = mintInstantTime(deps.clock.now(), zoneOf(now, deps.coordination), timelineTimes(now));
    // The slices as read under the lock: a base whose schema was checked above and is still live, with every log
    // file it has now — a log written since the first read must be in the plan, or the new base would orphan it.
    const stillLive = compactionCandidates(now).operations.filter((o) =>
      operations.some((op) => op.base.key === o.base.key),
    );
    if (stillLive.length === 0) return undefined;
    await recheckChangedSlices(deps.store, now, operations, stillLive);
    const plan = buildCompactionPlan({
      extraMetadata: planMarkMetadata({ run: options.runId ?? `lake-compactor ${instant}` }),
      operations: stillLive.map((op) => ({
        partitionPath: op.partition,
        fileId: op.fileId,
        baseInstantTime: op.baseInstant,
        baseFileName: nameOf(op.base.key),
        baseFileSizeBytes: op.base.size,
        logFileNames: op.logs.map((l) => nameOf(l.key)),
        logFileSizesBytes: op.logs.map((l) => l.size),
      })),
    });
    const keys = compactionKeys(now, instant);
    assertHeld('writing the compaction plan');
    await createOnce(deps.store, keys.requested, compactionRequestedContent(plan));
    await createOnce(deps.store, keys.inflight, EMPTY_INFLIGHT_CONTENT);
    await renewHeartbeat(deps.store, root, instant);
    return { instant, operations: plan.operations ?? [], state: now };
  });
  if (scheduled === undefined)
    return { kind: 'nothing', reason: 'the table changed while the compaction was being scheduled' };
  if (typeof scheduled === 'string') return { kind: 'nothing', reason: scheduled };
  if (options.crashAfter === 'scheduled') throw new Error('crash after scheduling (test)');
  try {
    // The run merges by the timeline the plan was made from (read under the lock): a log the plan names may be of
    // a delta commit completed after the first read, which that read's timeline calls uncommitted — merged by it,
    // the log's records would be left out of the new base file, and lost with the slice it supersedes.
    return await execute(
      deps,
      scheduled.state,
      policy,
      scheduled.instant,
      scheduled.operations,
      { resumed: false, skipped },
      options,
    );
  } catch (err) {
    if (options.crashAfter === undefined)
      await rollbackOwn(deps, state, scheduled.instant, isMergeRefusal(err));
    throw err;
  }
}

/**
 * Makes pending compaction `pending` ready to run (again), under the lock, as Hudi's `compact` does: an inflight one
 * rolled back to its plan (the files its markers name, the markers, the inflight file), then the inflight written
 * and this run's heartbeat started. Unless the plan carries our mark for another run and is inflight while that run
 * is alive by the rule every run of ours applies before it takes a plan of ours over (abandoned-plans.ts
 * `planRunLiveness`: no group of it unsettled in the caller's journal, heartbeat — or requested file — older than
 * ABANDONED_AFTER_MS): rolling its inflight back would delete the files that run is writing, so the plan is left
 * (`held`, nothing written). Only an inflight plan can be held: every run of ours writes T's inflight, under this
 * same lock, before it works on T and rolls it back when it stops, so a plan at requested is nobody's work in
 * progress. Checked under the lock, so two runs finding one dead run's plan do not both take it over. A Hudi
 * writer's plan (no mark) is run as Hudi's compactor runs any pending plan.
 */
async function restartPending(
  deps: HudiCompactionDeps,
  state: HudiTableState,
  pending: HudiPendingPlan,
  runId: string | undefined,
): Promise<HudiCompactionResult | undefined> {
  const instant = pending.instant.time;
  const own = { tableRoot: state.tableRoot, instant, ...compactionKeys(state, instant) };
  return underLock(deps, state.tableRoot, async (assertHeld) => {
    if ((await findCompleted(deps.store, state, instant)) !== undefined) return undefined;
    const mark = pending.mark;
    if (mark !== undefined && mark.run !== runId && (await deps.store.head(own.inflight)) !== undefined) {
      const liveness = await planRunLiveness(deps, state.tableRoot, pending, own);
      if (!liveness.dead) return { kind: 'held', instant, run: mark.run, why: liveness.why };
    }
    await rollBackInflight(deps.store, own);
    await deleteStaging(deps.store, state, instant);
    assertHeld('writing the compaction inflight');
    await createOnce(deps.store, own.inflight, EMPTY_INFLIGHT_CONTENT);
    // This run's sign of life while it works on T (renewed by execute): another run of ours leaves T alone.
    await renewHeartbeat(deps.store, state.tableRoot, instant);
    return undefined;
  });
}

/**
 * What a run that died after its completed commit left: the markers, staging and heartbeat of completed compactions
 * (Hudi deletes a completed instant's markers too), and staging of compactions no longer on the timeline.
 */
async function removeCompletedLeftovers(store: ObjectStore, state: HudiTableState): Promise<void> {
  const pending = new Set(
    state.timeline.pendingPlans.filter((p) => p.kind === 'compaction').map((p) => p.instant.time),
  );
  const completed = new Set(
    state.timeline.completedWrites
      .filter((w) => w.instant.action === 'commit' && w.metadata.compacted)
      .map((w) => w.instant.time),
  );
  const temp = keyUnder(state.tableRoot, '.hoodie/.temp/');
  for (const folder of (await listFolder(store, temp)).folders) {
    const name = folder.slice(temp.length).replace(/\/$/, '');
    if (completed.has(name)) await removeMarkers(store, state.tableRoot, name);
  }
  // Our heartbeat of a completed compaction (a run that died between the commit and its removal): Hudi's writers
  // name theirs by their own instants, never a compaction's.
  const beats = (await listFolder(store, keyUnder(state.tableRoot, '.hoodie/.heartbeat/'))).objects.filter(
    (o) => completed.has(o.key.slice(o.key.lastIndexOf('/') + 1)),
  );
  if (beats.length > 0) await store.deleteMany(beats.map((o) => ({ key: o.key })));
  const staging = `${stagingRoot(state)}/`;
  for (const folder of (await listFolder(store, staging)).folders) {
    const name = folder.slice(staging.length).replace(/\/$/, '');
    if (!pending.has(name)) await deleteStaging(store, state, name);
  }
}

/** A file slice as planning sees it: its base file and its log files. */
interface SliceFiles {
  readonly base: { readonly key: string; readonly size: number };
  readonly logs: readonly { readonly key: string; readonly size: number }[];
}

/**
 * Checks again, as they are in `state` (read under the lock, before the plan is written), the slices of `live` whose
 * logs changed since `checked` was checked: a log written meanwhile must be mergeable too, or the plan would be
 * refused at T. The CLI's table service and the workflow's plan step both schedule through it.
 * @throws the merge's refusals by name (see checkSliceMergeable).
 */
export async function recheckChangedSlices(
  store: ObjectStore,
  state: HudiTableState,
  checked: readonly SliceFiles[],
  live: readonly SliceFiles[],
): Promise<void> {
  for (const op of live) {
    const before = checked.find((c) => c.base.key === op.base.key);
    if (!sameFiles(before?.logs ?? [], op.logs))
      await checkSliceMergeable(
        store,
        { baseKey: op.base.key, baseSize: op.base.size, logKeys: op.logs.map((l) => l.key) },
        compactionPolicy(state),
        (i) => isCommitted(state.timeline, i),
      );
  }
}

/** Whether two file lists name the same files at the same sizes, in order. */
export function sameFiles(
  a: readonly { readonly key: string; readonly size: number }[],
  b: readonly { readonly key: string; readonly size: number }[],
): boolean {
  return a.length === b.length && a.every((f, i) => f.key === b[i]?.key && f.size === b[i]?.size);
}

function nameOf(key: string): string {
  return key.slice(key.lastIndexOf('/') + 1);
}

/** A pending compaction's operations, from its requested plan. */
export async function readPlan(
  store: ObjectStore,
  state: HudiTableState,
  instant: string,
): Promise<readonly CompactionOperation[]> {
  const bytes = await store.get(compactionKeys(state, instant).requested);
  const decoded = decodeTimelineAvro(bytes, COMPACTION_PLAN_SCHEMA);
  const plan = decoded.records[0] as { operations?: CompactionOperation[] | null } | undefined;
  return plan?.operations ?? [];
}

/**
 * Rolls our failed instant back to its plan (unless it completed) and keeps the plan, as Hudi's compactor does: a
 * scheduled compaction is completed, never removed (a v6 writer that began after T puts its logs under base instant
 * T, which only T's completion makes live). Under the lock, as Hudi's rollbackInflightCompaction; the next run, or
 * Hudi's compactor, finishes the plan. A plan the merge `refused` is then unscheduled, as the workflow does
 * ({@link unscheduleRefusedPlan}): every run would fail on it the same way.
 */
async function rollbackOwn(
  deps: HudiCompactionDeps,
  state: HudiTableState,
  instant: string,
  refused: boolean,
): Promise<void> {
  const keys = compactionKeys(state, instant);
  const own = { tableRoot: state.tableRoot, instant, ...keys };
  await underLock(deps, state.tableRoot, async (assertHeld) => {
    if ((await findCompleted(deps.store, state, instant)) !== undefined) return;
    await rollBackInflight(deps.store, own);
    await deleteStaging(deps.store, state, instant);
    if (refused) await unscheduleRefusedPlan(deps.store, locationOf(state), instant, keys, assertHeld);
    // No run works on T any more: the next run of ours takes the kept plan over without waiting.
    await deps.store.deleteMany([{ key: heartbeatKey(state.tableRoot, instant) }]);
  });
}

/** Our own staging folder: not under `.temp/T/`, where Hudi takes every object for a marker. */
function stagingRoot(state: HudiTableState): string {
  return keyUnder(state.tableRoot, '.hoodie/.temp/lake-compactor-staging');
}

/** Where the surviving log rows of compaction `instant`'s operations are staged. */
export function tempKeyPrefix(state: HudiTableState, instant: string): string {
  return `${stagingRoot(state)}/${instant}`;
}

export async function deleteStaging(
  store: ObjectStore,
  state: HudiTableState,
  instant: string,
): Promise<void> {
  const keys: { key: string }[] = [];
  for await (const o of store.listAll(`${tempKeyPrefix(state, instant)}/`)) keys.push({ key: o.key });
  if (keys.length > 0) await store.deleteMany(keys);
}

export const INDEX_FOOTER = {
  keys: HUDI_INDEX_FOOTER_KEYS,
  column: '_hoodie_record_key',
  begin: () => new HudiIndexFooterBuilder(),
};

/** Runs `instant`'s operations (executeOperations), renewing T's heartbeat while they run. */
async function execute(
  deps: HudiCompactionDeps,
  state: HudiTableState,
  policy: MergePolicy,
  instant: string,
  operations: readonly CompactionOperation[],
  context: { resumed: boolean; skipped: { key: string; reason: string }[] },
  options: HudiCompactionOptions,
): Promise<HudiCompactionResult> {
  return whileAlive(
    { everyMs: HEARTBEAT_RENEW_MS, renew: () => renewHeartbeat(deps.store, state.tableRoot, instant) },
    () => executeOperations(deps, state, policy, instant, operations, context, options),
  );
}

async function executeOperations(
  deps: HudiCompactionDeps,
  state: HudiTableState,
  policy: MergePolicy,
  instant: string,
  operations: readonly CompactionOperation[],
  context: { resumed: boolean; skipped: { key: string; reason: string }[] },
  options: HudiCompactionOptions,
): Promise<HudiCompactionResult> {
  const committed = (i: string) => isCommitted(state.timeline, i);
  // Every new base file has the table's schema and one slice's rows: the writer tuning sampled for the first is
  // every other's, so it is sampled once, not once per slice (several encodes of a whole slice each).
  const tuningMemo: WriterTuningMemo = new Map();
  const outputs: CompactionOutput[] = [];
  const slices: CompactedSlice[] = [];
  for (const [index, op] of operations.entries()) {
    const partition = op.partitionPath ?? '';
    const fileId = op.fileId ?? '';
    if (op.dataFilePath === null)
      throw new HudiCompactionUnsupportedError(fileId, 'a log-only file slice', 'no base file to merge into');
    const baseKey = partitionKey(state, partition, op.dataFilePath);
    const logKeys = (op.deltaFilePaths ?? []).map((n) => partitionKey(state, partition, n));
    const merged = await mergeFileSlice(deps.store, { baseKey, logKeys }, policy, committed, instant);
    const logRows = logRowsParquet(merged, baseKey);
    const tempKey = `${tempKeyPrefix(state, instant)}/${fileId}.parquet`;
    await deps.store.put(tempKey, logRows.bytes);
    const tempHead = await deps.store.head(tempKey);
    const baseHead = await deps.store.head(baseKey);
    if (tempHead === undefined || baseHead === undefined)
      throw new InvalidInputError(`Hudi compaction ${instant}: ${baseKey} or its log rows vanished`);
    const name = outputName(fileId, index, instant);
    const outputKey = partitionKey(state, partition, name);
    const dropped = new Set(merged.merge.dropPositions);
    const files = [
      {
        key: baseKey,
        size: baseHead.size,
        etag: baseHead.etag,
        rows: merged.counts.baseRows,
        ...(dropped.size === 0 ? {} : { deleted: droppedRows(merged.merge) }),
      },
      ...(logRows.rows === 0
        ? []
        : [{ key: tempKey, size: tempHead.size, etag: tempHead.etag, rows: logRows.rows }]),
    ];
    // The marker before the file (Hudi's merge handle order): a rollback of T by anyone deletes what it names.
    await writeMarkers(deps.store, state.tableRoot, instant, [outputKey], 'MERGE');
    // A rewrite of the earlier attempt's output is replaced whole.
    await deps.store.deleteMany([{ key: outputKey }]);
    const result = await deps.engine.rewriteGroup(
      { source: deps.store, target: deps.store },
      { groupId: `${instant}-${index}`, files, expectedOutputFiles: 1 },
      {
        outputKey: (i) => (i === 0 ? outputKey : `${outputKey}.extra-${i}`),
        targetFileSizeBytes: Number.MAX_SAFE_INTEGER,
        stitch: false,
        derivedColumns: [{ column: '_hoodie_file_name', value: 'output-file-name' }],
        outputFooterEntries: INDEX_FOOTER,
        tuningMemo,
        ...((deps.workers ?? 1) > 1 && { workers: deps.workers }),
      },
    );
    if (result.outputs.length !== 1) {
      await deps.store.deleteMany(result.outputs.map((o) => ({ key: o.key })));
      throw new HudiCompactionUnsupportedError(
        baseKey,
        `a slice whose merged rows the engine wrote as ${result.outputs.length} files`,
        'the log rows do not share the base file schema; one base file per file group is required',
      );
    }
    const out = result.outputs[0] as (typeof result.outputs)[number];
    await deps.engine.verifyOutputs(deps.store, [{ key: out.key, size: out.size }], result.fingerprint, {
      workers: deps.workers ?? 1,
    });
    await deps.store.deleteMany([{ key: tempKey }]);
    const logSizes = await Promise.all(logKeys.map(async (k) => (await deps.store.head(k))?.size ?? 0));
    outputs.push({
      partitionPath: partition,
      fileId,
      fileName: name,
      baseInstantTime: op.baseInstantTime ?? '',
      prevBaseFile: op.dataFilePath,
      numWrites: out.rows,
      numUpdateWrites: merged.counts.updated,
      numInserts: merged.counts.inserted,
      numDeletes: merged.counts.deleted,
      fileSizeInBytes: out.size,
      totalLogRecords: merged.counts.logRecords,
      totalLogBlocks: merged.counts.logBlocks,
      totalCorruptLogBlock: merged.counts.corruptBlocks,
      totalRollbackBlocks: merged.counts.rollbackBlocks,
      totalUpdatedRecordsCompacted: merged.counts.keysTouched,
      totalLogFilesCompacted: logKeys.length,
      totalLogSizeCompacted: logSizes.reduce((a, b) => a + b, 0),
    });
    slices.push({
      partition,
      fileId,
      baseFile: baseKey,
      logFiles: logKeys,
      output: outputKey,
      rows: out.rows,
      baseRows: merged.counts.baseRows,
      updated: merged.counts.updated,
      deleted: merged.counts.deleted,
      inserted: merged.counts.inserted,
    });
  }
  if (options.crashAfter === 'written') throw new Error('crash after writing the new base files (test)');
  await underLock(deps, state.tableRoot, async (assertHeld) => {
    if ((await findCompleted(deps.store, state, instant)) !== undefined) return;
    const now = await readHudiTable(deps.store, state.tableRoot, cachedBy(deps.coordination));
    if ((await deps.store.head(compactionKeys(now, instant).requested)) === undefined)
      throw new InvalidInputError(
        `Hudi compaction ${instant}: its plan is gone (rolled back by another writer?)`,
      );
    const schema = [...now.timeline.completedWrites]
      .reverse()
      .map((w) => w.metadata.extraMetadata.get('schema'))
      .find((s) => s !== undefined && s !== '');
    const metadata = buildCompactionCommitMetadata({ outputs, schema: schema ?? '' });
    const completion =
      now.config.version === 6
        ? undefined
        : mintInstantTime(deps.clock.now(), zoneOf(now, deps.coordination), [...timelineTimes(now), instant]);
    const timelinePath = timelineFolder(now);
    const completed = keyUnder(
      now.tableRoot,
      completedInstantFile(
        {
          tableVersion: now.config.version,
          operation: 'compaction',
          instant,
          ...(timelinePath === undefined ? {} : { timelinePath }),
        },
        completion,
      ),
    );
    assertHeld('writing the completed compaction commit');
    await createOnce(deps.store, completed, compactionCommitContent(now.config.version, metadata));
  });
  // As Hudi's completeCompaction: the markers go once the instant completed (a crash here: the next run's sweep).
  await removeMarkers(deps.store, state.tableRoot, instant);
  await deleteStaging(deps.store, state, instant);
  await deps.store.deleteMany([{ key: heartbeatKey(state.tableRoot, instant) }]);
  return { kind: 'compacted', instant, resumed: context.resumed, slices, skipped: context.skipped };
}

/** The completed file of compaction `instant` (`T.commit` on v6, `T_C.commit` on v8+), when there is one. */
export async function completedCompactionOf(
  store: ObjectStore,
  at: { readonly tableRoot: string; readonly timelinePath: string },
  instant: string,
): Promise<string | undefined> {
  const folder = keyUnder(at.tableRoot, `${at.timelinePath.replace(/\/+$/, '')}/`);
  const { objects } = await listFolder(store, folder);
  return objects
    .map((o) => o.key)
    .find((key) => {
      const name = key.slice(folder.length);
      return name === `${instant}.commit` || (name.startsWith(`${instant}_`) && name.endsWith('.commit'));
    });
}

/** Whether `err` is one of the merge's refusals by name: the same on every run until the slice's files change. */
export function isMergeRefusal(err: unknown): boolean {
  return err instanceof Error && MERGE_REFUSAL_ERRORS.includes(err.name);
}

/**
 * Removes a refused compaction plan of ours, already rolled back to requested, as Hudi's
 * `CompactionAdminClient.unscheduleCompactionPlan` removes one (the inflight rolled back first, then the requested
 * file deleted), so no run of ours or Hudi's resumes a plan none can finish. The caller holds the table's lock
 * (`assertHeld`) and has checked the plan is ours: minted by its own run, or marked by a run of ours that is dead
 * (plan-mark.ts) — never a Hudi writer's.
 *
 * On table version 6 a writer puts its logs of the plan's file groups under T, which the plan's removal would
 * orphan; so, as Hudi's unschedule does on 0.x, those logs are renamed into the slice they extend
 * (unschedule-logs.ts, which says why they are copied while the plan stands and their sources deleted only after,
 * and how a trace makes every step repeatable): the trace written, the logs under T copied, the plan deleted, then
 * the logs under T copied again (a writer's that raced the delete) and the sources deleted — the trace removed once
 * no write is pending. Not while a write is pending before the delete (its logs could land under T at any time):
 * then the plan stays, for a later run. A crash anywhere is finished by the next run's (or the sweep's) call here
 * or by {@link settleUnscheduledPlans}. Returns whether the plan is off the timeline. Idempotent.
 */
export async function unscheduleRefusedPlan(
  store: ObjectStore,
  at: { readonly tableRoot: string; readonly tableVersion: number; readonly timelinePath: string },
  instant: string,
  keys: { readonly requested: string; readonly inflight: string },
  assertHeld: (during: string) => void,
): Promise<boolean> {
  if ((await completedCompactionOf(store, at, instant)) !== undefined) return false;
  if ((await store.head(keys.inflight)) !== undefined) return false;
  const v6 = at.tableVersion === 6;
  if ((await store.head(keys.requested)) !== undefined) {
    if (v6) {
      const state = await readHudiTable(store, at.tableRoot);
      if (compactionDeferral(state) !== undefined) return false;
      const trace = (await traceOf(store, at.tableRoot, instant)) ?? {
        instant,
        groups: (await readPlan(store, state, instant)).map((op) => ({
          partition: op.partitionPath ?? '',
          fileId: op.fileId ?? '',
          baseInstant: op.baseInstantTime ?? '',
        })),
        moves: [],
      };
      await writeTrace(store, at.tableRoot, trace);
      // Copies only: while the plan stands, it pins T's slice and the logs under T stay where readers find them.
      await moveLogsOffInstant(store, at.tableRoot, trace, { removeSources: false });
    }
    assertHeld('removing the refused compaction plan');
    await store.deleteMany([{ key: keys.requested }]);
  } else if (!v6 || (await traceOf(store, at.tableRoot, instant)) === undefined) return false;
  if (v6) await settleTrace(store, at, instant);
  return true;
}

/**
 * Finishes the v6 unschedule of compaction `instant` its trace records (unschedule-logs.ts): nothing while the plan
 * is on the timeline (its own unschedule, or its completion, comes first); the trace dropped once T completed (its
 * logs are the new slice's then); else every log of its file groups still under T copied into its slice and the
 * source deleted, and the trace removed once none is left and no write is pending. Returns whether a log moved.
 */
async function settleTrace(
  store: ObjectStore,
  at: { readonly tableRoot: string; readonly tableVersion: number; readonly timelinePath: string },
  instant: string,
): Promise<boolean> {
  const trace = await traceOf(store, at.tableRoot, instant);
  if (trace === undefined) return false;
  if ((await completedCompactionOf(store, at, instant)) !== undefined) {
    await removeTrace(store, at.tableRoot, instant);
    return false;
  }
  const keys = pendingKeys(
    { tableRoot: at.tableRoot, tableVersion: at.tableVersion, timelinePath: at.timelinePath },
    'compaction',
    instant,
  );
  if ((await store.head(keys.requested)) !== undefined || (await store.head(keys.inflight)) !== undefined)
    return false;
  const moved = await moveLogsOffInstant(store, at.tableRoot, trace, { removeSources: true });
  const state = await readHudiTable(store, at.tableRoot);
  if (moved.remaining === 0 && state.timeline.pendingWrites.length === 0)
    await removeTrace(store, at.tableRoot, instant);
  return moved.changed;
}

/**
 * Finishes, under the table's lock, every v6 unschedule a run of ours left unfinished (a crash between its steps, or
 * a write still pending when it ended, whose logs under T must still join their slice): see {@link settleTrace}.
 * Every compaction run of ours — the CLI's table service, the workflow's plan step — calls it before it reads slices
 * to plan from, so a log under an unscheduled T is in its slice before a new plan is made. One listing when there is
 * nothing to settle. Returns whether a log moved (the caller reads the table again).
 */
export async function settleUnscheduledPlans(
  deps: Pick<HudiCompactionDeps, 'store' | 'clock' | 'coordination'>,
  tableRoot: string,
): Promise<boolean> {
  const traces = await listTraces(deps.store, tableRoot);
  if (traces.length === 0) return false;
  const config = await readTableConfig(deps.store, tableRoot || '(root)', tableRoot);
  const at = {
    tableRoot,
    tableVersion: config.version,
    timelinePath: config.timelinePath.replace(/\/+$/, ''),
  };
  const settle = async (): Promise<boolean> => {
    let changed = false;
    for (const trace of traces) if (await settleTrace(deps.store, at, trace.instant)) changed = true;
    return changed;
  };
  const lock = deps.coordination.lockFor(deps.store, tableRoot, config.name, deps.clock);
  return lock === undefined ? settle() : withHudiLock(lock, () => settle());
}
