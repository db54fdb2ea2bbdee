// Merge-on-Read compaction as the deployed workflow runs it: the same protocol as the CLI's table service
// (compaction-run.ts), cut into the workflow's steps, with the plan as data and the journal naming everything written.
//
//   plan     (plan step, TableFormat.planService; under the table's lock) when the run's partition is due — Hudi's
//            NUM_COMMITS trigger counted over the delta commits that wrote to the partition since the last compaction
//            that did (the workflow runs per partition: a table-wide count reset by one partition's compaction would
//            starve the others) — mint T above every instant, fix one group per file slice with its output name
//            `<fileId>_<token>_T.parquet`, store the plan and journal the groups (T in each entry), then write
//            `T.compaction.requested` and the empty inflight. A pending compaction whose operations all lie in the
//            partition (one of ours rolled back to its plan, or Hudi's) is planned again the same way, after its
//            inflight is rolled back to the plan, as Hudi's compactor does before it runs a pending plan; one pending
//            in another partition only is that partition's and holds nothing back (compaction-trigger.ts
//            `pendingCompactionIn`: Hudi lets compactions of disjoint file groups be pending at once). On table
//            version 6 nothing is scheduled while a write is pending (compaction-run.ts `compactionDeferral`, which
//            the CLI applies too: Hudi requires no write inflight before T).
//   compact  (prepareGroup) the slice merged at T (compaction-merge.ts): the surviving log rows staged under
//            `.hoodie/.temp/lake-compactor-staging/T/`, the output's MERGE marker written, and the engine handed the
//            base file less the rows the logs replace or delete plus the staged rows — so its fingerprint, which
//            verify checks the output against, is the merged view's.
//   commit   (commit step) the output published under its planned name (no completed instant names it: invisible);
//            the group is then `pending`, never committed alone: Hudi completes a compaction once, for all of its
//            slices.
//   complete (rollback, which finalize calls on every group left open after the Map, and settle and the sweep on a
//            dead run's) once every group of T is published: one completed `commit` for all of them under the lock,
//            then the markers and staging removed. A group of T that aborted (or, when settling, is not published)
//            means T cannot complete in this run: every group of T aborts, and T is rolled back to its plan (the files
//            its markers name, the markers, the inflight) and kept — Hudi never removes a scheduled compaction, and
//            the next run, the CLI or Hudi's compactor finishes it. Only a plan of ours the merge refused by name
//            (minted by this run, or marked by a dead run of ours: plan-mark.ts) is then unscheduled.
//
// The plan step also rolls back a clustering plan of ours in the partition that a dead run left and no journal
// names (abandoned-plans.ts), so its file groups are planned again.
import type { Clock } from '../../../ports/clock.js';
import type { FormatState, GroupJournalEntry, Journal } from '../../../ports/journal.js';
import type { ObjectStore } from '../../../ports/object-store.js';
import type { InputFile } from '../../../ports/parquet-engine.js';
import { FAILURE_PREFIX, InvalidInputError } from '../../errors.js';
import type { PartitionPlan, PlanInputFile } from '../../planning.js';
import { withStoredFooter } from '../logged-files.js';
import type { CommitDeps, PreparedGroup, ServicePlanRequest } from '../table-format.js';
import type { VersionCommitContext, VersionCommitResult } from '../version-commit.js';
import { holdsInstant, rollBackAbandonedClusterings } from './abandoned-plans.js';
import { HUDI_INDEX_FOOTER_KEYS } from './bloom/index.js';
import { type HudiCoordination, hudiFormatState } from './clustering-commit.js';
import {
  checkSliceMergeable,
  logRowsParquet,
  MERGE_REFUSAL_ERRORS,
  mergeFileSlice,
} from './compaction-merge.js';
import {
  compactionCandidates,
  compactionDeferral,
  compactionPolicy,
  completedCompactionOf,
  createOnce,
  DEFAULT_COMPACTION_DELTA_COMMITS,
  INDEX_FOOTER,
  outputName,
  readPlan,
  recheckChangedSlices,
  settleUnscheduledPlans,
  timelineTimes,
  unscheduleRefusedPlan,
  zoneOf,
} from './compaction-run.js';
import { compactionDueIn, pendingCompactionIn } from './compaction-trigger.js';
import { HudiLockUnavailableError } from './lock/errors.js';
import { withHudiLock } from './lock/index.js';
import { droppedRows } from './log/index.js';
import {
  HEARTBEAT_RENEW_MS,
  heartbeatKey,
  pendingKeys,
  removeMarkers,
  renewHeartbeat,
  rollBackInflight,
  writeMarkers,
} from './pending-instant.js';
import { planMarkMetadata } from './plan-mark.js';
import { cachedBy, type HudiTableState, readHudiTable, readTableConfig } from './table-state.js';
import { isCommitted, keyUnder } from './timeline.js';
import {
  buildCompactionCommitMetadata,
  buildCompactionPlan,
  type CompactionOutput,
  compactionCommitContent,
  compactionRequestedContent,
  completedInstantFile,
  EMPTY_INFLIGHT_CONTENT,
  mintInstantTime,
} from './timeline-writer/index.js';

/** The journal's `formatState.hudiService` of a compaction group (clustering groups have none). */
const COMPACTION = 'compaction';

/** A compaction group as its journal entry records it (flat JSON in `formatState`). */
interface CompactionGroup {
  readonly tableRoot: string;
  readonly tableVersion: number;
  readonly timelinePath: string;
  readonly instant: string;
  readonly partition: string;
  readonly fileId: string;
  /** The new base file's name, fixed by the plan. */
  readonly output: string;
  /** The compacted slice's base instant (the write stat's prevCommit). */
  readonly baseInstant: string;
}

/** Whether a journaled group is one file slice of a Merge-on-Read compaction (else a clustering group). */
export function isCompactionGroup(entry: Pick<GroupJournalEntry, 'formatState'>): boolean {
  return entry.formatState?.hudiService === COMPACTION;
}

function compactionGroupOf(entry: GroupJournalEntry): CompactionGroup {
  const s = entry.formatState ?? {};
  const text = (name: string): string => {
    const v = s[name];
    if (typeof v !== 'string')
      throw new InvalidInputError(
        `Group ${entry.groupId} of run ${entry.runId} is a Hudi compaction group without ${name} in its journal entry`,
      );
    return v;
  };
  if (typeof s.tableVersion !== 'number')
    throw new InvalidInputError(`Group ${entry.groupId} of run ${entry.runId} records no Hudi table version`);
  return {
    tableRoot: text('tableRoot'),
    tableVersion: s.tableVersion,
    timelinePath: typeof s.timelinePath === 'string' ? s.timelinePath : '.hoodie',
    instant: text('hudiInstant'),
    partition: typeof s.hudiPartition === 'string' ? s.hudiPartition : '',
    fileId: text('hudiFileId'),
    output: text('hudiOutput'),
    baseInstant: typeof s.hudiBaseInstant === 'string' ? s.hudiBaseInstant : '',
  };
}

function keyIn(tableRoot: string, partition: string, name: string): string {
  return keyUnder(tableRoot, partition === '' ? name : `${partition}/${name}`);
}

function nameOf(key: string): string {
  return key.slice(key.lastIndexOf('/') + 1);
}

/** Where compaction T's surviving log rows are staged: outside `.temp/T/`, where Hudi takes everything for a marker. */
function stagingOf(tableRoot: string, instant: string): string {
  return `${keyUnder(tableRoot, '.hoodie/.temp/lake-compactor-staging')}/${instant}/`;
}

async function deleteStagingOf(store: ObjectStore, tableRoot: string, instant: string): Promise<void> {
  const keys: { key: string }[] = [];
  for await (const o of store.listAll(stagingOf(tableRoot, instant))) keys.push({ key: o.key });
  if (keys.length > 0) await store.deleteMany(keys);
}

/** The table's lock around `work`, or `work` alone for the declared no-lock opt-in. */
async function underLock<T>(
  coordination: HudiCoordination,
  deps: { readonly store: ObjectStore; readonly clock: Clock },
  tableRoot: string,
  work: (assertHeld: (during: string) => void) => Promise<T>,
): Promise<T> {
  const config = await readTableConfig(deps.store, tableRoot || '(root)', tableRoot);
  const lock = coordination.lockFor(deps.store, tableRoot, config.name, deps.clock);
  if (lock === undefined) return work(() => {});
  return withHudiLock(lock, (handle) => work((during) => handle.assertHeld(during)));
}

/** One operation as the workflow plans it: the slice's files as read now. */
interface PlannedOperation {
  readonly partition: string;
  readonly fileId: string;
  readonly baseInstant: string;
  readonly base: PlanInputFile;
  readonly logs: readonly PlanInputFile[];
}

async function logFile(store: ObjectStore, key: string, size: number): Promise<PlanInputFile> {
  const head = await store.head(key);
  return { key, size: head?.size ?? size, etag: head?.etag ?? '' };
}

async function plannedOperation(
  store: ObjectStore,
  op: {
    partition: string;
    fileId: string;
    baseInstant: string;
    base: { key: string; size: number };
    logs: readonly { key: string; size: number }[];
  },
): Promise<PlannedOperation> {
  // A plan read back from the timeline names the base file only: its size is the object's.
  const size = op.base.size > 0 ? op.base.size : ((await store.head(op.base.key))?.size ?? 0);
  const base = await withStoredFooter(
    store,
    { key: op.base.key, size, etag: '' },
    'the Hudi timeline',
    'a Hudi reader',
    HUDI_INDEX_FOOTER_KEYS,
  );
  if (base.unreadable !== undefined)
    throw new InvalidInputError(`Hudi compaction: base file ${op.base.key}: ${base.unreadable}`);
  return {
    partition: op.partition,
    fileId: op.fileId,
    baseInstant: op.baseInstant,
    base,
    logs: await Promise.all(op.logs.map((l) => logFile(store, l.key, l.size))),
  };
}

/** The run's plan for compaction `instant` of `operations`: one group per file slice, its output named. */
function compactionPlanOf(
  request: ServicePlanRequest,
  state: HudiTableState,
  instant: string,
  operations: readonly PlannedOperation[],
  skipped: readonly { key: string; reason: string }[],
  owner: PlanOwner,
): PartitionPlan {
  const groups = operations.map((op, index) => {
    const files = [op.base, ...op.logs];
    const bytes = files.reduce((n, f) => n + f.size, 0);
    return {
      groupId: `g${String(index + 1).padStart(4, '0')}`,
      schemaFingerprint: op.base.schemaFingerprint ?? 'hudi-compaction',
      files,
      bytes,
      // Log records are counted by the merge, not planned: the output's rows are the merged view's.
      rows: null,
      expectedOutputFiles: 1,
      formatState: {
        hudiPartition: op.partition,
        hudiFileId: op.fileId,
        hudiBaseInstant: op.baseInstant,
        hudiOutput: outputName(op.fileId, index, instant),
      },
    };
  });
  const files = groups.flatMap((g) => g.files);
  const bytes = files.reduce((n, f) => n + f.size, 0);
  return {
    version: 1,
    table: request.table,
    partition: request.location.partition,
    options: request.binpack,
    snapshot: { listedAt: request.now },
    // hudiPlanRun: the run our mark in T's plan names (none: Hudi's plan). hudiOwnPlan: T is ours to unschedule —
    // this run minted it, or its plan carries our mark and the run it names is dead (a Hudi writer's plan never is).
    formatState: {
      ...hudiFormatState(state),
      hudiService: COMPACTION,
      hudiInstant: instant,
      ...(owner.markedBy === undefined ? {} : { hudiPlanRun: owner.markedBy }),
      ...(owner.own ? { hudiOwnPlan: true } : {}),
    },
    groups,
    skipped: [...skipped],
    summary: {
      inputFiles: files.length,
      inputBytes: bytes,
      plannedFiles: files.length,
      plannedBytes: bytes,
      groups: groups.length,
      expectedOutputFiles: groups.length,
    },
  };
}

/** Who a plan of the workflow belongs to (see {@link compactionPlanOf}'s formatState). */
interface PlanOwner {
  /** The run our mark names in T's plan; undefined for a plan without it (Hudi's). */
  readonly markedBy?: string;
  /** Whether a refused T is ours to unschedule. */
  readonly own: boolean;
}

/**
 * The requested plan of the groups of a stored plan (its operations in group order, as the plan named them), with
 * our mark naming the run that scheduled it (plan-mark.ts).
 */
function requestedPlanOf(plan: PartitionPlan): Uint8Array {
  const run = plan.formatState?.hudiPlanRun;
  return compactionRequestedContent(
    buildCompactionPlan({
      ...(typeof run === 'string' ? { extraMetadata: planMarkMetadata({ run }) } : {}),
      operations: plan.groups.map((g) => {
        const [base, ...logs] = g.files;
        return {
          partitionPath: String(g.formatState?.hudiPartition ?? ''),
          fileId: String(g.formatState?.hudiFileId ?? ''),
          baseInstantTime: String(g.formatState?.hudiBaseInstant ?? ''),
          baseFileName: nameOf(base?.key ?? ''),
          baseFileSizeBytes: base?.size ?? 0,
          logFileNames: logs.map((l) => nameOf(l.key)),
          logFileSizesBytes: logs.map((l) => l.size),
        };
      }),
    }),
  );
}

/**
 * The plan step's Merge-on-Read compaction of the run's partition (see the module comment), as the format's
 * `planService` bound to the table's declared lock and trigger.
 * @throws HudiMergeUnsupportedError / HudiCompactionUnsupportedError for a table or slice refused by name, before
 *   anything is written.
 */
export function hudiCompactionPlanService(
  coordination: HudiCoordination,
  deltaCommits: number | undefined,
): (deps: CommitDeps, request: ServicePlanRequest) => Promise<PartitionPlan | undefined> {
  const needed = deltaCommits ?? DEFAULT_COMPACTION_DELTA_COMMITS;
  return async (deps, request) => {
    const root = request.location.tableRoot;
    const partition = request.location.partition;
    if (request.stored !== undefined) {
      if (request.stored.formatState?.hudiService !== COMPACTION) return undefined;
      await ensureScheduled(coordination, deps, request.stored);
      return request.stored;
    }
    // A clustering plan of ours in the partition that its dead run left and no journal names: rolled back first,
    // so this run plans its file groups again (abandoned-plans.ts).
    const config = await readTableConfig(deps.store, root || '(root)', root);
    await rollBackAbandonedClusterings(
      {
        store: deps.store,
        clock: deps.clock,
        coordination,
        holdsInstant: (run, instant) => holdsInstant(deps.journal, run, instant),
      },
      root,
      partition,
      config,
    );
    if (config.type !== 'MERGE_ON_READ') return undefined;
    // A v6 unschedule of ours left unfinished: its logs join their slice before the slices are read to plan from.
    await settleUnscheduledPlans({ store: deps.store, clock: deps.clock, coordination }, root);
    const first = await readHudiTable(deps.store, root, cachedBy(coordination));
    compactionPolicy(first);
    // A pending compaction of this partition is finished first; one of another partition is that partition's own.
    const pending = pendingCompactionIn(first, partition);
    if (pending !== undefined) return resumePending(coordination, deps, request, first, pending.instant.time);
    // The profiler's change reader starts a run by this same verdict (compaction-trigger.ts).
    const verdict = compactionDueIn(first, partition, needed);
    if (!verdict.due || verdict.resumes !== undefined) return undefined;
    const candidates = verdict.slices;
    // Every refusal of the compact step's merge, by name, before anything is written (compaction-merge.ts).
    const policy = compactionPolicy(first);
    for (const op of candidates)
      await checkSliceMergeable(
        deps.store,
        { baseKey: op.base.key, baseSize: op.base.size, logKeys: op.logs.map((l) => l.key) },
        policy,
        (i) => isCommitted(first.timeline, i),
      );
    return underLock(coordination, deps, root, async (assertHeld) => {
      const now = await readHudiTable(deps.store, root, cachedBy(coordination));
      if (pendingCompactionIn(now, partition) !== undefined) return undefined;
      if (compactionDeferral(now) !== undefined) return undefined;
      // The slices as read under the lock, with every log file they have now (a log written since the first read
      // must be in the plan, or the new base file would orphan it); only bases checked above.
      const { operations, skipped } = compactionCandidates(now);
      const live = operations.filter(
        (o) => o.partition === partition && candidates.some((c) => c.base.key === o.base.key),
      );
      if (live.length === 0) return undefined;
      await recheckChangedSlices(deps.store, now, candidates, live);
      const planned = await Promise.all(live.map((op) => plannedOperation(deps.store, op)));
      const instant = mintInstantTime(deps.clock.now(), zoneOf(now, coordination), timelineTimes(now));
      const plan = compactionPlanOf(
        request,
        now,
        instant,
        planned,
        skipped.filter((s) => s.key.startsWith(keyIn(root, partition, ''))),
        { markedBy: request.runId, own: true },
      );
      // Stored and journaled (T in every entry) before the requested file exists.
      await request.record(plan);
      const keys = pendingKeys(locationOf(now), COMPACTION, instant);
      assertHeld('writing the compaction plan');
      await createOnce(deps.store, keys.requested, requestedPlanOf(plan));
      await createOnce(deps.store, keys.inflight, EMPTY_INFLIGHT_CONTENT);
      return plan;
    });
  };
}

function locationOf(state: HudiTableState): {
  tableRoot: string;
  tableVersion: number;
  timelinePath: string;
} {
  return {
    tableRoot: state.tableRoot,
    tableVersion: state.config.version,
    timelinePath: state.config.timelinePath.replace(/\/+$/, ''),
  };
}

/**
 * A retried plan step: the stored plan's T gets its requested and inflight files when an earlier attempt died
 * after journaling it, as long as T is still above every instant (else nothing is written, and the groups find no
 * plan and abort with nothing of theirs on the table).
 */
async function ensureScheduled(
  coordination: HudiCoordination,
  deps: CommitDeps,
  plan: PartitionPlan,
): Promise<void> {
  const instant = String(plan.formatState?.hudiInstant ?? '');
  const root = String(plan.formatState?.tableRoot ?? '');
  await underLock(coordination, deps, root, async (assertHeld) => {
    const state = await readHudiTable(deps.store, root, cachedBy(coordination));
    if ((await completedCompactionOf(deps.store, locationOf(state), instant)) !== undefined) return;
    const keys = pendingKeys(locationOf(state), COMPACTION, instant);
    if ((await deps.store.head(keys.requested)) === undefined) {
      if (timelineTimes(state).some((t) => t >= instant)) return;
      assertHeld('writing the compaction plan');
      await createOnce(deps.store, keys.requested, requestedPlanOf(plan));
    }
    assertHeld('writing the compaction inflight');
    await createOnce(deps.store, keys.inflight, EMPTY_INFLIGHT_CONTENT);
  });
}

/**
 * A pending compaction planned again by this run when all of its operations lie in the run's partition: under the
 * lock, its inflight rolled back to the plan (the files its markers name, the markers, the inflight: Hudi's
 * `rollbackInflightCompaction`), the groups journaled, then the inflight written. One spanning other partitions is
 * left to Hudi's compactor or `lake-compactor compact`, which run a table's whole plan. A plan carrying our mark is
 * this run's to unschedule should the merge refuse it when the run the mark names is this one or is dead (no open
 * group of T in the journal); a plan without the mark (a Hudi writer's) never is.
 */
async function resumePending(
  coordination: HudiCoordination,
  deps: CommitDeps,
  request: ServicePlanRequest,
  state: HudiTableState,
  instant: string,
): Promise<PartitionPlan | undefined> {
  const operations = await readPlan(deps.store, state, instant);
  const mark = state.timeline.pendingPlans.find((p) => p.instant.time === instant)?.mark;
  const partition = request.location.partition;
  if (operations.length === 0 || operations.some((op) => (op.partitionPath ?? '') !== partition))
    return undefined;
  if (operations.some((op) => op.dataFilePath === null || op.dataFilePath === undefined)) return undefined;
  const root = state.tableRoot;
  return underLock(coordination, deps, root, async (assertHeld) => {
    const now = await readHudiTable(deps.store, root, cachedBy(coordination));
    const at = locationOf(now);
    if ((await completedCompactionOf(deps.store, at, instant)) !== undefined) return undefined;
    const keys = pendingKeys(at, COMPACTION, instant);
    const planned = await Promise.all(
      operations.map((op) =>
        plannedOperation(deps.store, {
          partition,
          fileId: op.fileId ?? '',
          baseInstant: op.baseInstantTime ?? '',
          base: { key: keyIn(root, partition, op.dataFilePath ?? ''), size: 0 },
          logs: (op.deltaFilePaths ?? []).map((n) => ({ key: keyIn(root, partition, n), size: 0 })),
        }),
      ),
    );
    const plan = compactionPlanOf(request, now, instant, planned, [], {
      ...(mark === undefined ? {} : { markedBy: mark.run }),
      own:
        mark !== undefined &&
        (mark.run === request.runId || !(await holdsInstant(deps.journal, mark.run, instant))),
    });
    await rollBackInflight(deps.store, { tableRoot: root, instant, ...keys });
    await deleteStagingOf(deps.store, root, instant);
    await request.record(plan);
    assertHeld('writing the compaction inflight');
    await createOnce(deps.store, keys.inflight, EMPTY_INFLIGHT_CONTENT);
    return plan;
  });
}

/**
 * The compact step's work before a compaction group's rewrite: T still pending with its plan and inflight, the slice
 * merged at T, its surviving log rows staged, the output's MERGE marker written (Hudi's merge handle writes it before
 * the file), and the engine's inputs: the base file less the rows the logs replace or delete, and the staged rows.
 */
export async function prepareCompactionGroup(
  deps: CommitDeps,
  entry: GroupJournalEntry,
  coordination?: HudiCoordination,
): Promise<PreparedGroup> {
  const g = compactionGroupOf(entry);
  const keys = pendingKeys(g, COMPACTION, g.instant);
  if ((await completedCompactionOf(deps.store, g, g.instant)) !== undefined)
    return { kind: 'conflict', reason: `compaction ${g.instant} already completed without this group` };
  if ((await deps.store.head(keys.requested)) === undefined)
    return {
      kind: 'conflict',
      reason: `compaction ${g.instant} has no plan on the timeline (${keys.requested})`,
    };
  if ((await deps.store.head(keys.inflight)) === undefined)
    return {
      kind: 'conflict',
      reason: `compaction ${g.instant} was rolled back to its plan (no ${keys.inflight}); the next run finishes it`,
    };
  // T's heartbeat, as `compact` keeps it (renewed below while the group is rewritten): the sign of life another run of
  // ours reads before it takes a marked plan over (abandoned-plans.ts `planRunLiveness`); Hudi reads none for a
  // compaction.
  await renewHeartbeat(deps.store, g.tableRoot, g.instant);
  const state = await readHudiTable(deps.store, g.tableRoot, cachedBy(coordination));
  const [base, ...logs] = entry.inputs;
  if (base === undefined) throw new InvalidInputError(`Group ${entry.groupId} has no base file`);
  const merged = await mergeFileSlice(
    deps.store,
    { baseKey: base.key, logKeys: logs.map((l) => l.key) },
    compactionPolicy(state),
    (i) => isCommitted(state.timeline, i),
    g.instant,
  );
  const logRows = logRowsParquet(merged, base.key);
  const stagedKey = `${stagingOf(g.tableRoot, g.instant)}${g.fileId}.parquet`;
  const inputs: InputFile[] = [
    {
      key: base.key,
      size: base.size,
      etag: base.etag,
      rows: merged.counts.baseRows,
      ...(merged.merge.dropPositions.length === 0 ? {} : { deleted: droppedRows(merged.merge) }),
    },
  ];
  if (logRows.rows > 0) {
    await deps.store.put(stagedKey, logRows.bytes);
    const head = await deps.store.head(stagedKey);
    if (head === undefined)
      throw new InvalidInputError(`Hudi compaction ${g.instant}: ${stagedKey} vanished`);
    inputs.push({ key: stagedKey, size: head.size, etag: head.etag, rows: logRows.rows });
  }
  // The marker before the file (Hudi's merge handle order): a rollback of T by anyone deletes what it names.
  await writeMarkers(
    deps.store,
    g.tableRoot,
    g.instant,
    [keyIn(g.tableRoot, g.partition, g.output)],
    'MERGE',
  );
  const logSizes = logs.reduce((n, l) => n + l.size, 0);
  const counts: FormatState = {
    hudiUpdated: merged.counts.updated,
    hudiInserted: merged.counts.inserted,
    hudiDeleted: merged.counts.deleted,
    hudiLogRecords: merged.counts.logRecords,
    hudiLogBlocks: merged.counts.logBlocks,
    hudiCorruptBlocks: merged.counts.corruptBlocks,
    hudiRollbackBlocks: merged.counts.rollbackBlocks,
    hudiKeysTouched: merged.counts.keysTouched,
    hudiLogFiles: logs.length,
    hudiLogSize: logSizes,
  };
  const recorded = await deps.journal.transition(
    entry,
    'planned',
    { formatState: { ...entry.formatState, ...counts } },
    deps.clock.now(),
  );
  return {
    kind: 'ready',
    entry: recorded,
    outputFileName: () => g.output,
    rewrite: {
      derivedColumns: [{ column: '_hoodie_file_name', value: 'output-file-name' }],
      outputFooterEntries: INDEX_FOOTER,
      // One new base file per file group, whatever its size.
      targetFileSizeBytes: Number.MAX_SAFE_INTEGER,
      // A base file keeps its own schema exactly (Avro-written decimals stay fixed or bytes), whatever the table's
      // fidelity: Hudi's readers merge later logs into it by that schema.
      schemaFidelity: 'exact',
    },
    inputs,
    keepAlive: {
      everyMs: HEARTBEAT_RENEW_MS,
      renew: () => renewHeartbeat(deps.store, g.tableRoot, g.instant),
    },
  };
}

/** The groups of the run that hold compaction `instant`, as journaled now. */
async function groupsOf(journal: Journal, runId: string, instant: string): Promise<GroupJournalEntry[]> {
  return (await journal.listRun(runId)).filter(
    (e) => isCompactionGroup(e) && e.formatState?.hudiInstant === instant,
  );
}

const PUBLISHED_STATES: ReadonlySet<GroupJournalEntry['state']> = new Set(['published', 'retired', 'done']);

function numberOf(entry: GroupJournalEntry, name: string): number {
  const v = entry.formatState?.[name];
  return typeof v === 'number' ? v : 0;
}

/** The write stat of one published group's new base file. */
function outputOf(entry: GroupJournalEntry): CompactionOutput {
  const g = compactionGroupOf(entry);
  const out = entry.outputs[0];
  return {
    partitionPath: g.partition,
    fileId: g.fileId,
    fileName: g.output,
    baseInstantTime: g.baseInstant,
    prevBaseFile: nameOf(entry.inputs[0]?.key ?? ''),
    numWrites: out?.rows ?? 0,
    numUpdateWrites: numberOf(entry, 'hudiUpdated'),
    numInserts: numberOf(entry, 'hudiInserted'),
    numDeletes: numberOf(entry, 'hudiDeleted'),
    fileSizeInBytes: out?.size ?? 0,
    totalLogRecords: numberOf(entry, 'hudiLogRecords'),
    totalLogBlocks: numberOf(entry, 'hudiLogBlocks'),
    totalCorruptLogBlock: numberOf(entry, 'hudiCorruptBlocks'),
    totalRollbackBlocks: numberOf(entry, 'hudiRollbackBlocks'),
    totalUpdatedRecordsCompacted: numberOf(entry, 'hudiKeysTouched'),
    totalLogFilesCompacted: numberOf(entry, 'hudiLogFiles'),
    totalLogSizeCompacted: numberOf(entry, 'hudiLogSize'),
  };
}

/**
 * A published compaction group's commit (see the module comment): committed once T completed; deferred by the
 * commit step until every group of T is published; completed for all of them by a settling call; a conflict when T
 * cannot complete in this run (a group of T aborted, or — settling — is not published).
 */
export async function commitCompactionGroup(
  coordination: HudiCoordination | undefined,
  deps: CommitDeps,
  entry: GroupJournalEntry,
  context: VersionCommitContext,
): Promise<VersionCommitResult> {
  const g = compactionGroupOf(entry);
  const done = (completed: string): VersionCommitResult => ({
    kind: 'committed',
    state: { hudiCommitted: true, hudiCompleted: completed },
  });
  const already = await completedCompactionOf(deps.store, g, g.instant);
  if (already !== undefined) return done(already);
  const siblings = await groupsOf(deps.journal, entry.runId, g.instant);
  const aborted = siblings.find((e) => e.state === 'aborted');
  const keys = pendingKeys(g, COMPACTION, g.instant);
  if (aborted !== undefined)
    return {
      kind: 'conflict',
      conflicts: [
        {
          key: keys.requested,
          reason: `group ${aborted.groupId} of compaction ${g.instant} aborted (${aborted.reason ?? 'no reason recorded'}), so it cannot complete in this run: rolled back to its plan, which the next run finishes`,
        },
      ],
    };
  const waiting = siblings.filter((e) => !PUBLISHED_STATES.has(e.state));
  if (waiting.length > 0) {
    const which = waiting.map((e) => `${e.groupId} (${e.state})`).join(', ');
    if (!context.settling)
      return {
        kind: 'deferred',
        reason: `published; compaction ${g.instant} completes once for all of its groups, after the run's other groups: ${which}`,
      };
    return {
      kind: 'conflict',
      conflicts: [
        {
          key: keys.requested,
          reason: `compaction ${g.instant} cannot complete: its group(s) ${which} did not publish; rolled back to its plan, which the next run finishes`,
        },
      ],
    };
  }
  if (!context.settling)
    return {
      kind: 'deferred',
      reason: `published; compaction ${g.instant} is completed once for all of its groups when the run ends`,
    };
  if (coordination === undefined)
    throw new InvalidInputError(
      `Hudi table ${g.tableRoot || '(root)'} declares no lock: compaction ${g.instant} is completed only under the lock its writers take; declare hudiLock`,
    );
  try {
    return await completeUnderLock(coordination, deps, g, siblings, keys, done);
  } catch (err) {
    if (!(err instanceof HudiLockUnavailableError)) throw err;
    // Another writer held the lock past its wait: T cannot complete in this run. Aborted as a failure naming the
    // error, so T is rolled back to its plan (afterCompactionAbort: outputs, markers, inflight) instead of leaving a
    // published group, an inflight and an output on the table for a settle retry; the next run finishes the plan.
    return {
      kind: 'conflict',
      failure: err,
      conflicts: [
        {
          key: keys.requested,
          reason: `the table's lock was not free to complete compaction ${g.instant}: rolled back to its plan, which the next run finishes`,
        },
      ],
    };
  }
}

/** T's completed commit, written under the table's lock (see {@link commitCompactionGroup}). */
async function completeUnderLock(
  coordination: HudiCoordination,
  deps: CommitDeps,
  g: CompactionGroup,
  siblings: readonly GroupJournalEntry[],
  keys: { readonly requested: string; readonly inflight: string },
  done: (completed: string) => VersionCommitResult,
): Promise<VersionCommitResult> {
  return underLock(coordination, deps, g.tableRoot, async (assertHeld) => {
    const found = await completedCompactionOf(deps.store, g, g.instant);
    if (found !== undefined) return done(found);
    for (const key of [keys.requested, keys.inflight])
      if ((await deps.store.head(key)) === undefined)
        return {
          kind: 'conflict',
          conflicts: [{ key, reason: `compaction ${g.instant} lost ${key} (rolled back by a Hudi writer?)` }],
        };
    const state = await readHudiTable(deps.store, g.tableRoot, cachedBy(coordination));
    const schema = [...state.timeline.completedWrites]
      .reverse()
      .map((w) => w.metadata.extraMetadata.get('schema'))
      .find((s) => s !== undefined && s !== '');
    const metadata = buildCompactionCommitMetadata({
      outputs: [...siblings].sort((a, b) => (a.groupId < b.groupId ? -1 : 1)).map(outputOf),
      schema: schema ?? '',
    });
    const completion =
      g.tableVersion === 6
        ? undefined
        : mintInstantTime(deps.clock.now(), zoneOf(state, coordination), [
            ...timelineTimes(state),
            g.instant,
          ]);
    const timelinePath = g.timelinePath === '.hoodie' ? undefined : g.timelinePath.slice('.hoodie/'.length);
    const completed = keyUnder(
      g.tableRoot,
      completedInstantFile(
        {
          tableVersion: g.tableVersion,
          operation: COMPACTION,
          instant: g.instant,
          ...(timelinePath === undefined ? {} : { timelinePath }),
        },
        completion,
      ),
    );
    assertHeld('writing the completed compaction commit');
    await createOnce(deps.store, completed, compactionCommitContent(g.tableVersion, metadata));
    return done(completed);
  });
}

/** A group's output marker before it is copied into the table (written by prepare already; idempotent). */
export async function beforeCompactionPublish(deps: CommitDeps, entry: GroupJournalEntry): Promise<void> {
  const g = compactionGroupOf(entry);
  await writeMarkers(
    deps.store,
    g.tableRoot,
    g.instant,
    [keyIn(g.tableRoot, g.partition, g.output)],
    'MERGE',
  );
}

/**
 * After T completed: its markers and staging go, as Hudi's completeCompaction removes its markers, and its heartbeat.
 * Idempotent.
 */
export async function afterCompactionCommit(deps: CommitDeps, entry: GroupJournalEntry): Promise<void> {
  const g = compactionGroupOf(entry);
  await removeMarkers(deps.store, g.tableRoot, g.instant);
  await deleteStagingOf(deps.store, g.tableRoot, g.instant);
  await deps.store.deleteMany([{ key: heartbeatKey(g.tableRoot, g.instant) }]);
}

/**
 * An aborted group's undo: unless T completed, T is rolled back to its plan (the files its markers name — every
 * group's output, none of which any completed instant names —, the markers, the inflight) and its staging and
 * heartbeat removed;
 * the requested plan stays, for the next run (or Hudi's compactor) to finish. Idempotent.
 */
export async function afterCompactionAbort(
  coordination: HudiCoordination | undefined,
  deps: CommitDeps,
  entry: GroupJournalEntry,
): Promise<void> {
  const g = compactionGroupOf(entry);
  if ((await completedCompactionOf(deps.store, g, g.instant)) !== undefined) return;
  const keys = pendingKeys(g, COMPACTION, g.instant);
  await rollBackInflight(deps.store, { tableRoot: g.tableRoot, instant: g.instant, ...keys });
  await deleteStagingOf(deps.store, g.tableRoot, g.instant);
  await deps.store.deleteMany([{ key: heartbeatKey(g.tableRoot, g.instant) }]);
  if (coordination !== undefined && entry.formatState?.hudiOwnPlan === true && refusedByMerge(entry.reason))
    await unscheduleRefused(coordination, deps, g, keys);
}

/** Whether an aborted group's reason is a failure by one of the merge's refusals (the same on every run). */
function refusedByMerge(reason: string | undefined): boolean {
  return (
    reason !== undefined && MERGE_REFUSAL_ERRORS.some((name) => reason.startsWith(`${FAILURE_PREFIX}${name}`))
  );
}

/**
 * A plan of ours that the merge refused (a block committed below T after the plan-time check) — minted by this run,
 * or marked by a run of ours that is dead (plan-mark.ts) —, unscheduled under the table's lock as
 * compaction-run.ts `unscheduleRefusedPlan` says. A crash before the delete leaves the plan rolled back to
 * requested: the next run resumes it by its mark, fails on the same refusal and unschedules it then. On table
 * version 6 a crash after it leaves the trace of the logs still to rename into their slice (unschedule-logs.ts): this
 * same call, made again by the sweep's settle of the dead run, or the next run's plan step finishes it. Idempotent.
 */
async function unscheduleRefused(
  coordination: HudiCoordination,
  deps: CommitDeps,
  g: CompactionGroup,
  keys: { readonly requested: string; readonly inflight: string },
): Promise<void> {
  await underLock(coordination, deps, g.tableRoot, (assertHeld) =>
    unscheduleRefusedPlan(deps.store, g, g.instant, keys, assertHeld),
  );
}
