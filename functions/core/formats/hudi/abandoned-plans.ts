// A pending clustering plan of ours that no live run will finish, rolled back by the next run of ours on the table.
//
// Our clustering instant is journaled before its plan is written, so a run that dies is normally settled from the
// journal (clustering-commit.ts: rollback before `published`, roll forward after). A plan the journal cannot name —
// its run journaled elsewhere (another CLI working folder, a deployment torn down, an older version) — would stay:
// Spark writers reject upserts to its file groups, and our planning leaves them out, for good. Its mark
// (plan-mark.ts) says it is ours; it is abandoned when its run is dead:
//
//   - no group of its run holding T is open in the journal the caller reads (an open one is the sweep's to settle,
//     by the same rollback), and
//   - its heartbeat (or, if it has none, its requested file) was last written more than
//     {@link ABANDONED_AFTER_MS} ago: a run of ours renews it every 30 s while it works on T (pending-instant.ts),
//     and Hudi's own writers already take a heartbeat older than 2 minutes for a failed writer's. "Ago" by the
//     object store's clock ({@link storeNow}), which set the heartbeat's modification time: never this machine's,
//     which may be skewed.
//
// It is then rolled back under the table's lock exactly as its own run would have rolled it back (the files its
// markers name, the markers, the inflight, the requested file, the heartbeat: pending-instant.ts
// `rollBackOwnInstant`). Its outputs were never named by a completed instant, so no reader saw them; its inputs
// were never touched. A plan without our mark — a Hudi writer's — is never touched.
import { randomUUID } from 'node:crypto';
import type { Clock } from '../../../ports/clock.js';
import { isSettled, type Journal } from '../../../ports/journal.js';
import type { ObjectStore } from '../../../ports/object-store.js';
import type { HudiCoordination } from './clustering-commit.js';
import { withHudiLock } from './lock/index.js';
import { HEARTBEAT_RENEW_MS, heartbeatKey, pendingKeys, rollBackOwnInstant } from './pending-instant.js';
import type { HudiTableConfig } from './properties.js';
import { cachedBy, readHudiTable, readTableConfig } from './table-state.js';
import { type HudiPendingPlan, keyUnder, listFolder } from './timeline.js';

/** How long a plan of ours must have gone without a heartbeat before another run takes its run for dead. */
export const ABANDONED_AFTER_MS = 10 * 60_000;

export interface AbandonedPlanDeps {
  readonly store: ObjectStore;
  readonly clock: Clock;
  readonly coordination: HudiCoordination;
  /**
   * Whether `runId` still has an open group holding `instant` in the caller's journal (then the plan is the sweep's
   * to settle). Without a journal (the CLI's table service, after it settled its own), none is.
   */
  readonly holdsInstant?: (runId: string, instant: string) => Promise<boolean>;
  /** The store's clock now ({@link storeNow}), when a pass reads it once for all its judgements. */
  readonly storeTime?: () => Promise<number>;
}

/**
 * Rolls back every abandoned clustering plan of ours on the table at `tableRoot` (see the module comment) whose file
 * groups all lie in `partition` (every partition when undefined). `config`: the table's hoodie.properties when the
 * caller read it already. Returns the instants rolled back.
 */
export async function rollBackAbandonedClusterings(
  deps: AbandonedPlanDeps,
  tableRoot: string,
  partition?: string,
  config?: HudiTableConfig,
): Promise<string[]> {
  const properties = config ?? (await readTableConfig(deps.store, tableRoot || '(root)', tableRoot));
  if (!(await anyPendingClustering(deps.store, tableRoot, properties))) return [];
  const state = await readHudiTable(deps.store, tableRoot, cachedBy(deps.coordination));
  const location = {
    tableRoot: state.tableRoot,
    tableVersion: state.config.version,
    timelinePath: state.config.timelinePath.replace(/\/+$/, ''),
  };
  // One reading of the store's clock for the pass: the judgement under the lock reuses it, so a plan's age there is
  // never more than at the first judgement (a heartbeat renewed between them only makes it younger).
  let clockRead: Promise<number> | undefined;
  const judge: AbandonedPlanDeps = {
    ...deps,
    storeTime: () => {
      clockRead ??= storeNow(deps.store, tableRoot);
      return clockRead;
    },
  };
  const candidates: HudiPendingPlan[] = [];
  for (const plan of state.timeline.pendingPlans) {
    if (plan.kind !== 'clustering' || plan.mark === undefined) continue;
    if (partition !== undefined && plan.fileGroups.some((g) => g.partitionPath !== partition)) continue;
    if (
      await isAbandoned(judge, state.tableRoot, plan, pendingKeys(location, 'clustering', plan.instant.time))
    )
      candidates.push(plan);
  }
  if (candidates.length === 0) return [];
  const lock = deps.coordination.lockFor(deps.store, state.tableRoot, state.config.name, deps.clock);
  const work = async (assertHeld: (during: string) => void): Promise<string[]> => {
    // Under the lock, as read now: a plan completed, rolled back or renewed since the first read is left alone.
    const now = await readHudiTable(deps.store, state.tableRoot, cachedBy(deps.coordination));
    const done: string[] = [];
    for (const plan of candidates) {
      const still = now.timeline.pendingPlans.find(
        (p) => p.instant.time === plan.instant.time && p.kind === 'clustering' && p.mark !== undefined,
      );
      const keys = pendingKeys(location, 'clustering', plan.instant.time);
      if (still === undefined || !(await isAbandoned(judge, state.tableRoot, still, keys))) continue;
      assertHeld('rolling back an abandoned clustering plan');
      await rollBackOwnInstant(deps.store, {
        tableRoot: state.tableRoot,
        instant: plan.instant.time,
        ...keys,
      });
      done.push(plan.instant.time);
    }
    return done;
  };
  if (lock === undefined) return work(() => {});
  return withHudiLock(lock, (handle) => work((during) => handle.assertHeld(during)));
}

/**
 * Whether the timeline holds a clustering (or v6 replacecommit) requested without its completed file: one listing
 * of the timeline folder, so a table with none costs no more than that before the run plans it.
 */
async function anyPendingClustering(
  store: ObjectStore,
  tableRoot: string,
  config: HudiTableConfig,
): Promise<boolean> {
  const folder = keyUnder(
    tableRoot,
    config.timelinePath.endsWith('/') ? config.timelinePath : `${config.timelinePath}/`,
  );
  const names = (await listFolder(store, folder)).objects.map((o) => o.key.slice(folder.length));
  const completed = new Set(
    names.filter((n) => n.endsWith('.replacecommit')).map((n) => n.slice(0, n.search(/[._]/))),
  );
  return names.some((n) => {
    const m = /^(\d+)\.(clustering|replacecommit)\.requested$/.exec(n);
    return m !== null && !completed.has(m[1] ?? '');
  });
}

/** Whether a marked plan's run is dead (see the module comment). */
async function isAbandoned(
  deps: AbandonedPlanDeps,
  tableRoot: string,
  plan: HudiPendingPlan,
  keys: { readonly requested: string },
): Promise<boolean> {
  return (await planRunLiveness(deps, tableRoot, plan, keys)).dead;
}

/** Whether the run that scheduled a marked plan is dead, or why it is taken for alive. */
export type PlanRunLiveness = { readonly dead: true } | { readonly dead: false; readonly why: string };

/**
 * The rule every run of ours applies before it takes over a pending plan of ours that another run scheduled (see the
 * module comment): dead when no group of the plan's run holding T is unsettled in the caller's journal and its
 * heartbeat (or, with none, its requested file) is older than {@link ABANDONED_AFTER_MS}. A plan without our mark is
 * never ours to take over: alive, as far as we are concerned.
 */
export async function planRunLiveness(
  deps: AbandonedPlanDeps,
  tableRoot: string,
  plan: Pick<HudiPendingPlan, 'mark' | 'instant'>,
  keys: { readonly requested: string },
): Promise<PlanRunLiveness> {
  const mark = plan.mark;
  if (mark === undefined) return { dead: false, why: 'the plan does not carry our mark' };
  if (deps.holdsInstant !== undefined && (await deps.holdsInstant(mark.run, plan.instant.time)))
    return {
      dead: false,
      why: `run ${mark.run} has a group holding ${plan.instant.time} open in the journal`,
    };
  const beat =
    (await deps.store.head(heartbeatKey(tableRoot, plan.instant.time))) ??
    (await deps.store.head(keys.requested));
  if (beat === undefined) return { dead: false, why: `${keys.requested} is gone` };
  // The heartbeat's time is the object store's; so is the "now" it is compared with, never this machine's clock.
  const now = deps.storeTime === undefined ? await storeNow(deps.store, tableRoot) : await deps.storeTime();
  const age = now - beat.lastModified.getTime();
  if (age > ABANDONED_AFTER_MS) return { dead: true };
  return {
    dead: false,
    why: `its heartbeat was last written ${Math.max(0, Math.round(age / 1000))} s ago (a run of ours renews it every ${HEARTBEAT_RENEW_MS / 1000} s while it works; taken for dead after ${ABANDONED_AFTER_MS / 60_000} min)`,
  };
}

/**
 * The object store's clock now: the modification time of a probe object written (under `.hoodie/.temp/`, in a folder
 * no instant is named like) and removed at once. A heartbeat's age is its modification time — set by the store —
 * against this, so a machine whose clock runs ahead cannot take a live run for dead (nor one behind keep a dead
 * run's plan for longer): both times are the store's. One put, head and delete, made only for a plan of ours whose
 * run is being judged (once per pass: `AbandonedPlanDeps.storeTime`).
 */
export async function storeNow(store: ObjectStore, tableRoot: string): Promise<number> {
  const key = keyUnder(tableRoot, `.hoodie/.temp/lake-compactor-clock/${randomUUID()}`);
  await store.put(key, new Uint8Array(0));
  try {
    const probe = await store.head(key);
    if (probe === undefined) throw new Error(`the store lost ${key} right after writing it`);
    return probe.lastModified.getTime();
  } finally {
    await store.deleteMany([{ key }]);
  }
}

/**
 * Whether run `runId` still has an unsettled group of (clustering or compaction) instant `instant` in `journal`
 * (open, or aborted with its undo pending): a run that died with one is the sweep's to settle first (its settle rolls
 * T back); one with none — settled, or journaled elsewhere (the CLI's own journal, an older deployment's) — is dead
 * as far as T goes, once its heartbeat is stale.
 */
export async function holdsInstant(
  journal: Pick<Journal, 'listRun'>,
  runId: string,
  instant: string,
): Promise<boolean> {
  return (await journal.listRun(runId)).some((e) => e.formatState?.hudiInstant === instant && !isSettled(e));
}
