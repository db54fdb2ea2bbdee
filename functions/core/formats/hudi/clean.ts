// A Hudi `clean` as Hudi's cleaner writes one (HUDI-NOTES §8): under the table writers' lock, a `clean.requested`
// holding the HoodieCleanerPlan (version 2: absolute paths per partition), the inflight (0.x writes the plan into
// it, 1.x leaves it empty), the files deleted, then the completed `clean` holding HoodieCleanMetadata (version 2:
// file names per partition) — `T.clean` on layout 1, `T_C.clean` on layout 2. Nothing is deleted before the plan
// is on the timeline, so an interrupted clean is finished from its plan by the next run, or by Hudi's own cleaner,
// which runs pending cleans first; deleting a file that is already gone is success, as it is for Hudi.
//
// What is planned is clean-plan.ts's decision. A dry run reads only. A table with a savepoint is refused by name
// (its savepointed slices pin files this planner does not read), as is a pending clean that is not one we can read.
import type { Clock } from '../../../ports/clock.js';
import type { ObjectStore } from '../../../ports/object-store.js';
import { CompactorError, InvalidInputError } from '../../errors.js';
import {
  type HudiCleanerRules,
  type HudiCleanFile,
  type HudiCleanKept,
  type HudiCleanPlan,
  planHudiClean,
} from './clean-plan.js';
import {
  basePathOf,
  createOnce,
  type HudiCoordination,
  instantEpochMs,
  timelineTimes,
} from './clustering-commit.js';
import type { HudiInstant } from './instants.js';
import { withHudiLock } from './lock/index.js';
import { cachedBy, type HudiTableState, listPartitions, readHudiTable } from './table-state.js';
import { keyUnder } from './timeline.js';
import {
  CLEAN_METADATA_SCHEMA,
  CLEANER_PLAN_SCHEMA,
  completedInstantFile,
  decodeTimelineAvro,
  EMPTY_INFLIGHT_CONTENT,
  encodeTimelineAvro,
  type InstantTimeZone,
  instantTimeZoneFor,
  mintInstantTime,
  pendingInstantFiles,
} from './timeline-writer/index.js';

/** HoodieCleanerPlan's and HoodieCleanMetadata's version Hudi writes today (CleanPlanner.LATEST_CLEAN_PLAN_VERSION). */
const CLEAN_VERSION = 2;

/** Why lake-compactor does not clean a Hudi table (nothing of it was changed). */
export class HudiCleanRefusedError extends CompactorError {
  constructor(table: string, why: string) {
    super(`Hudi table ${table}: not cleaned, nothing of it was changed: ${why}`);
  }
}

/** How to clean. */
export interface HudiCleanOptions {
  readonly rules: HudiCleanerRules;
  /** The planning instant (epoch ms): ages are judged against it. */
  readonly now: number;
  /** Our vacuum's retention gate (hours). */
  readonly retentionHours: number;
  /** List only: nothing is written or deleted. */
  readonly dryRun: boolean;
  /** The table's declared coordination (its lock and LOCAL zone); required unless `dryRun`. */
  readonly coordination?: HudiCoordination;
  readonly clock: Clock;
}

/** What a clean did (or, dry, would do). */
export interface HudiCleanReport {
  readonly policy: string;
  readonly retained: number;
  readonly earliestCommitToRetain?: string;
  /** The clean instant written (not on a dry run, nor when nothing was due). */
  readonly instant?: string;
  /** A pending clean found on the timeline and finished from its plan. */
  readonly resumed?: string;
  readonly files: readonly HudiCleanFile[];
  readonly kept: readonly HudiCleanKept[];
  readonly notes: readonly string[];
}

function nameOf(root: string): string {
  return root === '' ? '(root)' : root;
}

function zoneOf(state: HudiTableState, coordination: HudiCoordination | undefined): InstantTimeZone {
  try {
    return instantTimeZoneFor(state.config.timelineTimezone, coordination?.localZone);
  } catch (err) {
    throw new InvalidInputError(
      `Hudi table ${nameOf(state.tableRoot)}: ${err instanceof Error ? err.message : String(err)} (hudiTimezone; on the CLI --hudi-timezone)`,
    );
  }
}

/** Reads the table and plans its clean (no write). */
async function planOn(
  store: ObjectStore,
  root: string,
  options: HudiCleanOptions,
): Promise<{ state: HudiTableState; plan: HudiCleanPlan }> {
  // Through a warm function's instant cache when the coordination carries one: each completed instant decoded once.
  const state = await readHudiTable(store, root, cachedBy(options.coordination));
  const savepoint = state.timeline.instants.find((i) => i.action === 'savepoint');
  if (savepoint !== undefined)
    throw new HudiCleanRefusedError(
      nameOf(root),
      `savepoint ${savepoint.time} pins file slices this cleaner does not read; leave cleaning to the table's own cleaner`,
    );
  const zone = zoneOf(state, options.coordination);
  const { byPartition } = await listPartitions(store, root);
  const plan = planHudiClean(
    {
      layoutVersion: state.config.layoutVersion,
      timeline: state.timeline,
      partitions: byPartition,
      epochMs: (instant) => instantEpochMs(instant, zone),
      now: options.now,
      retentionHours: options.retentionHours,
    },
    options.rules,
  );
  return { state, plan };
}

/** The timeline folder name for names.ts: `timeline` (or the table's `hoodie.timeline.path`) on layout 2. */
function timelineFolder(state: HudiTableState): string | undefined {
  const path = state.config.timelinePath.replace(/\/+$/, '');
  return path === '.hoodie' ? undefined : path.slice('.hoodie/'.length);
}

function location(state: HudiTableState, instant: string) {
  const timelinePath = timelineFolder(state);
  return {
    tableVersion: state.config.version,
    operation: 'clean' as const,
    instant,
    ...(timelinePath === undefined ? {} : { timelinePath }),
  };
}

/** A completed write as HoodieActionInstant (`state` as HoodieInstant.State names it). */
function actionInstant(i: HudiInstant) {
  return { timestamp: i.time, action: i.action, state: 'COMPLETED' };
}

/** The HoodieCleanerPlan of `plan` (CleanPlanActionExecutor.requestClean). */
export function cleanerPlanRecord(basePath: string, plan: HudiCleanPlan) {
  const perPartition = new Map<string, { filePath: string; isBootstrapBaseFile: boolean }[]>();
  for (const f of plan.files) {
    const list = perPartition.get(f.partition) ?? [];
    perPartition.set(f.partition, list);
    list.push({
      filePath: `${basePath}/${f.partition === '' ? '' : `${f.partition}/`}${f.name}`,
      isBootstrapBaseFile: false,
    });
  }
  return {
    earliestInstantToRetain:
      plan.earliestCommitToRetain === undefined ? null : actionInstant(plan.earliestCommitToRetain),
    policy: plan.rules.policy,
    filesToBeDeletedPerPartition: {},
    version: CLEAN_VERSION,
    filePathsToBeDeletedPerPartition: Object.fromEntries(perPartition),
    partitionsToBeDeleted: [],
  };
}

/** HoodieCleanerPlan as read back: the policy, ECTR and files per partition. */
interface ReadCleanerPlan {
  readonly policy: string;
  readonly earliestCommitToRetain: string;
  readonly files: ReadonlyMap<string, readonly string[]>;
}

function readCleanerPlan(bytes: Uint8Array): ReadCleanerPlan {
  const record = decodeTimelineAvro(bytes, CLEANER_PLAN_SCHEMA).records[0] as
    | {
        policy: string;
        earliestInstantToRetain: { timestamp: string } | null;
        filesToBeDeletedPerPartition: Record<string, string[]> | null;
        filePathsToBeDeletedPerPartition: Record<string, { filePath: string | null }[]> | null;
      }
    | undefined;
  if (record === undefined) throw new InvalidInputError('the clean plan holds no record');
  const files = new Map<string, string[]>();
  for (const [partition, infos] of Object.entries(record.filePathsToBeDeletedPerPartition ?? {}))
    files.set(
      partition,
      infos.flatMap((i) => (i.filePath === null ? [] : [i.filePath.slice(i.filePath.lastIndexOf('/') + 1)])),
    );
  // Version 1 plans name files in the deprecated field.
  for (const [partition, names] of Object.entries(record.filesToBeDeletedPerPartition ?? {}))
    if (!files.has(partition)) files.set(partition, names);
  return {
    policy: record.policy,
    earliestCommitToRetain: record.earliestInstantToRetain?.timestamp ?? '',
    files,
  };
}

/**
 * Deletes the plan's files (gone already counts as deleted, as for Hudi) and writes the completed clean.
 * @returns the files deleted per partition (names).
 */
async function executeAndComplete(
  store: ObjectStore,
  state: HudiTableState,
  instant: string,
  plan: ReadCleanerPlan,
  zone: InstantTimeZone,
  clock: Clock,
  startedAt: number,
  assertHeld: (during: string) => void,
): Promise<number> {
  const root = state.tableRoot;
  let total = 0;
  const partitionMetadata: Record<string, unknown> = {};
  for (const [partition, names] of plan.files) {
    const keys = names.map((n) => keyUnder(root, partition === '' ? n : `${partition}/${n}`));
    assertHeld('deleting the clean plan files');
    const failed = await deleteKeys(store, keys);
    const success = names.filter((_, i) => !failed.has(keys[i] as string));
    total += success.length;
    partitionMetadata[partition] = {
      partitionPath: partition,
      policy: plan.policy,
      deletePathPatterns: names,
      successDeleteFiles: success,
      failedDeleteFiles: names.filter((_, i) => failed.has(keys[i] as string)),
      isPartitionDeleted: false,
    };
  }
  const lastCompleted = state.timeline.latestCompletedWrite?.time ?? '';
  const metadata = {
    policy: plan.policy,
    startCleanTime: instant,
    timeTakenInMillis: Math.max(0, clock.now() - startedAt),
    totalFilesDeleted: total,
    earliestCommitToRetain: plan.earliestCommitToRetain,
    lastCompletedCommitTimestamp: lastCompleted,
    partitionMetadata,
    version: CLEAN_VERSION,
    bootstrapPartitionMetadata: {},
  };
  const completion =
    state.config.layoutVersion >= 2
      ? mintInstantTime(clock.now(), zone, [...timelineTimes(state), instant])
      : undefined;
  const completed = keyUnder(root, completedInstantFile(location(state, instant), completion));
  assertHeld('writing the completed clean');
  await createOnce(store, completed, encodeTimelineAvro(CLEAN_METADATA_SCHEMA, metadata));
  return total;
}

/** Deletes keys; returns the keys whose delete failed (a missing key is not a failure). */
async function deleteKeys(store: ObjectStore, keys: readonly string[]): Promise<Set<string>> {
  const failed = new Set<string>();
  for (let i = 0; i < keys.length; i += 1000) {
    const result = await store.deleteMany(keys.slice(i, i + 1000).map((key) => ({ key })));
    for (const e of result.errors) failed.add(e.key);
  }
  return failed;
}

/** A pending clean (requested or inflight, never completed) of the timeline, if any. */
function pendingClean(state: HudiTableState): HudiInstant | undefined {
  return state.timeline.latest.find((i) => i.action === 'clean' && i.state !== 'completed');
}

/**
 * Cleans the Hudi table at `tableRoot` (see the module comment), or — `dryRun` — says what it would clean.
 * @throws HudiCleanRefusedError for a table with a savepoint; InvalidInputError without declared coordination.
 */
export async function cleanHudiTable(
  store: ObjectStore,
  tableRoot: string,
  options: HudiCleanOptions,
): Promise<HudiCleanReport> {
  const root = tableRoot.replace(/\/+$/, '');
  const base = {
    policy: options.rules.policy,
    retained: options.rules.retained,
  };
  if (options.dryRun) {
    const { state, plan } = await planOn(store, root, options);
    const pending = pendingClean(state);
    return {
      ...base,
      ...(plan.earliestCommitToRetain === undefined
        ? {}
        : { earliestCommitToRetain: plan.earliestCommitToRetain.time }),
      files: plan.files,
      kept: plan.kept,
      notes: [
        ...(plan.note === undefined ? [] : [plan.note]),
        ...(pending === undefined
          ? []
          : [`clean ${pending.time} is pending: the real run finishes it from its plan first`]),
      ],
    };
  }
  const coordination = options.coordination;
  if (coordination === undefined)
    throw new InvalidInputError(
      `Hudi table ${nameOf(root)} declares no lock: nothing is written to a Hudi table without the coordination its writers use; declare hudiLock (on the CLI: --hudi-lock storage|dynamodb|none)`,
    );
  const startedAt = options.clock.now();
  // Read first without the lock: when nothing is due and no clean is pending, not even the lock's file is written.
  const first = await planOn(store, root, options);
  if (first.plan.files.length === 0 && pendingClean(first.state) === undefined)
    return {
      ...base,
      ...(first.plan.earliestCommitToRetain === undefined
        ? {}
        : { earliestCommitToRetain: first.plan.earliestCommitToRetain.time }),
      files: [],
      kept: first.plan.kept,
      notes: first.plan.note === undefined ? [] : [first.plan.note],
    };
  const lock = coordination.lockFor(store, root, first.state.config.name, options.clock);
  const work = async (assertHeld: (during: string) => void): Promise<HudiCleanReport> => {
    const { state, plan } = await planOn(store, root, options);
    const zone = zoneOf(state, coordination);
    const pending = pendingClean(state);
    if (pending !== undefined) {
      // Hudi runs a pending clean before planning another; so do we, from its own plan.
      const files = pendingInstantFiles(location(state, pending.time));
      const requestedKey = keyUnder(root, files.requested);
      let bytes: Uint8Array;
      try {
        bytes = await store.get(requestedKey);
      } catch (err) {
        throw new HudiCleanRefusedError(
          nameOf(root),
          `clean ${pending.time} is pending and its plan ${requestedKey} cannot be read (${err instanceof Error ? err.message : String(err)}); let the table's own cleaner finish it`,
        );
      }
      const read = readCleanerPlan(bytes);
      if (pending.state === 'requested') {
        assertHeld('marking the pending clean inflight');
        await createOnce(store, keyUnder(root, files.inflight), inflightContent(state, bytes));
      }
      const total = await executeAndComplete(
        store,
        state,
        pending.time,
        read,
        zone,
        options.clock,
        startedAt,
        assertHeld,
      );
      return {
        ...base,
        resumed: pending.time,
        files: [],
        kept: [],
        notes: [
          `finished clean ${pending.time} from its plan (${total} file(s) deleted); the next run plans a new clean`,
        ],
      };
    }
    const report = {
      ...base,
      ...(plan.earliestCommitToRetain === undefined
        ? {}
        : { earliestCommitToRetain: plan.earliestCommitToRetain.time }),
      files: plan.files,
      kept: plan.kept,
      notes: plan.note === undefined ? [] : [plan.note],
    };
    // Hudi schedules no clean with nothing to delete.
    if (plan.files.length === 0) return report;
    const instant = mintInstantTime(options.clock.now(), zone, timelineTimes(state));
    const record = cleanerPlanRecord(basePathOf(store, root), plan);
    const planBytes = encodeTimelineAvro(CLEANER_PLAN_SCHEMA, record);
    const files = pendingInstantFiles(location(state, instant));
    assertHeld('writing the clean plan');
    await createOnce(store, keyUnder(root, files.requested), planBytes);
    await createOnce(store, keyUnder(root, files.inflight), inflightContent(state, planBytes));
    await executeAndComplete(
      store,
      state,
      instant,
      readCleanerPlan(planBytes),
      zone,
      options.clock,
      startedAt,
      assertHeld,
    );
    return { ...report, instant };
  };
  if (lock === undefined) return work(() => {});
  return withHudiLock(lock, (handle) => work((during) => handle.assertHeld(during)));
}

/** The inflight's bytes: 0.x (layout 1) writes the plan into it, 1.x (layout 2) writes it empty. */
function inflightContent(state: HudiTableState, planBytes: Uint8Array): Uint8Array {
  return state.config.layoutVersion >= 2 ? EMPTY_INFLIGHT_CONTENT : planBytes;
}
