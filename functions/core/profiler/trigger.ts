// Decides about a partition and acts over the ports: every verdict is recorded with its reasons, a schedule is
// one conditional write (one winner, counted against the run caps) and starts one deterministically named run.
import pLimit from 'p-limit';
import type { StateMachineStarter } from '../../ports/state-machine-starter.js';
import type { StatsStore } from '../../ports/stats-store.js';
import { InvalidInputError } from '../errors.js';
import { foreignFormatReason, markerCovers } from '../formats/foreign-tables.js';
import { type Decision, decide, type Policy } from '../policy.js';
import { capAction, limitsFor, type RunCapReached, type RunCaps } from '../run-caps.js';
import {
  compactionRequest,
  dueAtOf,
  executionName,
  isUnchanged,
  shouldStoreDecision,
  toPartitionState,
} from './decisions.js';
import {
  type DecisionSummary,
  type Lease,
  type LogFn,
  type PartitionRef,
  type PartitionSnapshot,
  partitionId,
  type ResolvedEvent,
  type SettleOutcome,
  type TriggerAction,
  type TriggerOutcome,
} from './model.js';
import type { SettleRetryDeps } from './settle-retry.js';

export interface TriggerDeps {
  readonly stats: StatsStore;
  /** Absent when no state machine is configured: decisions are recorded, nothing is started. */
  readonly starter?: StateMachineStarter;
  /** Effective policy per table name. */
  readonly policies: ReadonlyMap<string, Policy>;
  readonly log?: LogFn;
  /** Recorded in the workflow input. @default 'profiler' */
  readonly trigger?: 'profiler' | 'sweep';
  /**
   * Triggers in dry-run: every verdict is recorded (and shown by `status`) but no compaction is started, so a
   * team can watch what would be compacted before letting it write. The starter is still used to recover
   * leases of runs operators start from the console, and to retry the settle of a partition one of them left
   * needs-attention (`settleRetry`). A due partition stays due, so nothing repeats.
   * @default false
   */
  readonly dryRun?: boolean;
  /**
   * Settles what a dead run left in a partition (workflow/settle.ts) before the sweep releases its lease:
   * a partition is never released as idle while a group is half-published. Absent (profiler, tests of
   * the trigger alone): leases are released without settling, which only the sweep ever does.
   */
  readonly settle?: (ref: PartitionRef, deadRunId: string) => Promise<SettleOutcome>;
  /**
   * The sweep's settle retries of needs-attention partitions (profiler/settle-retry.ts): settle runs started
   * through `starter` on this schedule. Absent (profiler, tools): a needs-attention partition waits for an operator.
   */
  readonly settleRetry?: SettleRetryDeps;
  /**
   * Caps on running compactions per table and per deployment. A schedule is counted in the same write that
   * takes the partition, so concurrent profilers and the sweep never exceed them; a capped partition is
   * recorded as waiting and stays due. Absent: runs are counted but never refused (tests, tools).
   */
  readonly runCaps?: RunCaps;
  /**
   * How far the profiler has applied the evaluated table's log in the batch at hand (the cursor it stores once the
   * batch is applied): what a partition whose counters wait for its last run's commit (`awaitedVersion`) is
   * compared with. Absent (the sweep, object-event tables): the stored cursor, read only for such a partition.
   */
  readonly changesAppliedThrough?: number;
}

/**
 * When a partition whose counters wait for its last run's commit is decided again: the sweep's next visit, or
 * sooner the profiler applying that commit (it decides about the partition then).
 */
export const AWAITED_COMMIT_RETRY_MS = 60_000;

/**
 * How long after a run's release its partition waits at most for the profiler to count the run's commit. The
 * profiler reads a commit within seconds of its event; one that never comes (a lost notification, a table no writer
 * commits to any more) would otherwise hold the partition for good. Past it the counters are taken as they are —
 * at worst a run that finds the partition compacted — and the weekly reconcile corrects them.
 */
export const AWAITED_COMMIT_PATIENCE_MS = 60 * 60_000;

const NO_STARTER = 'not started: no state machine configured (STATE_MACHINE_ARN unset)';

const DRY_RUN =
  'not started: triggers are in dry-run (TRIGGERS_DRY_RUN); start it from the console, or turn dry-run off';

/** The table's effective policy; a table missing from the configuration is refused, never given defaults. */
export function policyOf(deps: TriggerDeps, table: string): Policy {
  const policy = deps.policies.get(table);
  if (policy === undefined) {
    throw new InvalidInputError(
      `No policy for table "${table}"; the table is missing from the TABLES configuration`,
    );
  }
  return policy;
}

/**
 * Decides about one partition and acts: records the decision (when the partition is still at the decided
 * version), and when it says compact, moves it idle → scheduled with one conditional write (one winner
 * among concurrent callers), counted against the run caps in that same write, and starts the workflow under
 * a deterministic name. At a cap the partition is recorded as waiting and stays due (`gate`: see CapGate).
 * Without a starter, the decision is recorded and nothing is started. A start that fails leaves the lease
 * for the sweep to retry.
 */
export async function evaluatePartition(
  deps: TriggerDeps,
  snapshot: PartitionSnapshot,
  now: number,
  gate?: CapGate,
): Promise<TriggerOutcome> {
  const ref = { table: snapshot.table, partition: snapshot.partition };
  const decided = decide(toPartitionState(snapshot), policyOf(deps, snapshot.table), now);
  const log = deps.log ?? (() => undefined);
  if (snapshot.state !== 'idle') {
    log('debug', 'partition holds a lease; the sweep watches it', { ...ref, state: snapshot.state });
    return { ref, decision: decided, action: 'leased' };
  }
  // Only a verdict to compact pays for reading the markers: waiting and blocked partitions read nothing more.
  const decision = decided.compact
    ? await unlessAwaitingCommit(deps, snapshot, await unlessForeignFormat(deps, ref, decided), now)
    : decided;
  if (!decision.compact || deps.starter === undefined || deps.dryRun === true) {
    const action: TriggerAction = decision.compact
      ? 'not-started'
      : decision.eligibleAt === undefined
        ? 'blocked'
        : 'waiting';
    const summary: DecisionSummary = {
      at: now,
      compact: decision.compact,
      reasons: decision.reasons,
      ...(decision.eligibleAt === undefined ? {} : { eligibleAt: decision.eligibleAt }),
      action: action !== 'not-started' ? action : deps.dryRun === true ? DRY_RUN : NO_STARTER,
    };
    const dueAt = dueAtOf(decision, now);
    if (isUnchanged(snapshot, summary, dueAt)) {
      // Same verdict, same due slot, recent enough: a write would change nothing the sweep or status uses.
      log('debug', `decision unchanged: ${summary.action}`, { ...ref, reasons: decision.reasons });
      return { ref, decision, action };
    }
    const stored = await deps.stats.recordDecision(snapshot, summary, {
      ...(dueAt === undefined ? {} : { dueAt }),
      storeItem: shouldStoreDecision(snapshot.lastDecision, decision, now),
    });
    if (!stored) {
      log('debug', 'decision superseded by a newer partition state', { ...ref, version: snapshot.version });
      return { ref, decision, action: 'superseded' };
    }
    log(action === 'not-started' ? 'warn' : 'info', `decision: ${summary.action}`, {
      ...ref,
      compact: decision.compact,
      reasons: decision.reasons,
      ...(dueAt === undefined ? {} : { dueAt: new Date(dueAt).toISOString() }),
    });
    return { ref, decision, action };
  }

  const starter = deps.starter;
  const generation = snapshot.generation + 1;
  const name = executionName(ref, generation);
  const lease: Lease = {
    runId: name,
    executionName: name,
    executionArn: starter.executionArn(name),
    acquiredAt: now,
  };
  const summary: DecisionSummary = {
    at: now,
    compact: true,
    reasons: decision.reasons,
    action: `started ${name}`,
  };
  if (gate?.reached !== undefined) return recordCapped(deps, snapshot, decision, gate.reached, now);
  const limits = deps.runCaps === undefined ? undefined : limitsFor(deps.runCaps, ref.table);
  const scheduled = await deps.stats.schedule(snapshot, lease, summary, limits);
  if (scheduled === undefined) {
    log('info', 'another invocation scheduled this partition first, or its state moved on', ref);
    return { ref, decision, action: 'superseded' };
  }
  if ('kind' in scheduled) {
    if (gate !== undefined) gate.reached = scheduled;
    return recordCapped(deps, snapshot, decision, scheduled, now);
  }
  return startScheduled(deps, starter, ref, lease, generation, decision);
}

/**
 * What a sweep learnt about the caps while it went through a table's due partitions: once a cap refused a
 * schedule, the rest are recorded as waiting without another attempt (a first sweep of a large lake finds
 * thousands due; each attempt would be a refused transaction). Slots freed meanwhile are used next sweep.
 */
export interface CapGate {
  reached?: RunCapReached;
}

/**
 * Records a partition the policy says to compact but a cap kept waiting: it stays idle and due (its due
 * time is kept when already passed, so it keeps its place in the sweep's oldest-first order), and the next
 * profiler batch or sweep starts it once a run ends.
 */
async function recordCapped(
  deps: TriggerDeps,
  snapshot: PartitionSnapshot,
  decision: Decision,
  reached: RunCapReached,
  now: number,
): Promise<TriggerOutcome> {
  const ref = { table: snapshot.table, partition: snapshot.partition };
  const log = deps.log ?? (() => undefined);
  const summary: DecisionSummary = {
    at: now,
    compact: true,
    reasons: decision.reasons,
    action: capAction(ref.table, reached),
  };
  const dueAt = snapshot.dueAt !== undefined && snapshot.dueAt <= now ? snapshot.dueAt : now;
  if (isUnchanged(snapshot, summary, dueAt)) return { ref, decision, action: 'capped' };
  const stored = await deps.stats.recordDecision(snapshot, summary, {
    dueAt,
    storeItem: shouldStoreDecision(snapshot.lastDecision, decision, now),
  });
  if (!stored) return { ref, decision, action: 'superseded' };
  log('info', `decision: ${summary.action}`, {
    ...ref,
    scope: reached.scope,
    cap: reached.cap,
    running: reached.running,
    reasons: decision.reasons,
  });
  return { ref, decision, action: 'capped' };
}

/**
 * The decision, blocked when a foreign table was seen in the partition's table at a root covering
 * it (the marker's reason joins the checks): its log, not the listing, says which files are live.
 */
async function unlessForeignFormat(
  deps: TriggerDeps,
  ref: PartitionRef,
  decision: Decision,
): Promise<Decision> {
  const marker = (await deps.stats.foreignFormats(ref.table)).find((m) => markerCovers(m, ref.partition));
  return marker === undefined
    ? decision
    : { compact: false, reasons: [...decision.reasons, foreignFormatReason(marker)] };
}

/**
 * The decision, waiting when the partition's counters predate the commit its last run made to the table's log
 * (`awaitedVersion`, recorded at the run's release): until the profiler has applied that version they still count
 * the files the run retired, and a run started on them would find the partition compacted and do nothing.
 */
async function unlessAwaitingCommit(
  deps: TriggerDeps,
  snapshot: PartitionSnapshot,
  decision: Decision,
  now: number,
): Promise<Decision> {
  const awaited = snapshot.awaitedVersion;
  if (!decision.compact || awaited === undefined) return decision;
  const waitedUntil = (snapshot.lastCompactedAt ?? 0) + AWAITED_COMMIT_PATIENCE_MS;
  if (now >= waitedUntil) return decision;
  const applied = deps.changesAppliedThrough ?? (await deps.stats.changeCursor(snapshot.table))?.version;
  if (applied !== undefined && applied >= awaited) return decision;
  return {
    compact: false,
    reasons: [
      ...decision.reasons,
      `the counters predate version ${awaited} of the table's log, which the last run committed (the profiler has applied ${applied === undefined ? 'none of it' : `it up to ${applied}`}): waiting for the profiler to count that commit, until ${new Date(waitedUntil).toISOString()} at most`,
    ],
    eligibleAt: Math.min(now + AWAITED_COMMIT_RETRY_MS, waitedUntil),
  };
}

/**
 * Starts the run a schedule leased under its deterministic name (a retry finds it already started). A start
 * that fails keeps the lease: the sweep finds the execution missing and starts it again under the same name.
 */
export async function startScheduled(
  deps: TriggerDeps,
  starter: StateMachineStarter,
  ref: PartitionRef,
  lease: Lease,
  generation: number,
  decision: Decision,
): Promise<TriggerOutcome> {
  const log = deps.log ?? (() => undefined);
  try {
    const started = await starter.start(
      lease.executionName,
      compactionRequest(ref, lease, generation, decision.reasons, deps.trigger ?? 'profiler'),
    );
    log('info', started.alreadyStarted ? 'compaction was already started' : 'compaction started', {
      ...ref,
      generation,
      executionArn: started.executionArn,
      reasons: decision.reasons,
    });
    return {
      ref,
      decision,
      action: started.alreadyStarted ? 'already-started' : 'started',
      executionName: lease.executionName,
    };
  } catch (err) {
    // The lease stays: the sweep finds the execution missing and starts it under the same name.
    log('error', 'starting the compaction failed; the sweep retries it', {
      ...ref,
      executionName: lease.executionName,
      error: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
    });
    return { ref, decision, action: 'start-failed', executionName: lease.executionName };
  }
}

/** Per partition: what happened, or the error that failed it (its messages are retried). */
export type PartitionResult =
  | { readonly ok: true; readonly outcome: TriggerOutcome; readonly applied: number; readonly stale: number }
  | { readonly ok: false; readonly error: unknown };

/**
 * Profiles one batch's events: per partition (independently, so one contended partition fails only its
 * own messages), apply the events exactly, move the write times, then evaluate the partition once.
 */
export async function profileEvents(
  deps: TriggerDeps,
  events: readonly ResolvedEvent[],
  now: number,
  concurrency = 4,
): Promise<Map<string, PartitionResult>> {
  const groups = new Map<string, ResolvedEvent[]>();
  for (const event of events) {
    const id = partitionId(event.ref);
    const list = groups.get(id) ?? [];
    list.push(event);
    groups.set(id, list);
  }
  const results = new Map<string, PartitionResult>();
  const limit = pLimit(Math.max(1, concurrency));
  await Promise.all(
    [...groups.entries()].map(([id, group]) =>
      limit(async () => {
        try {
          results.set(id, await profilePartition(deps, group, now));
        } catch (error) {
          results.set(id, { ok: false, error });
        }
      }),
    ),
  );
  return results;
}

async function profilePartition(
  deps: TriggerDeps,
  group: readonly ResolvedEvent[],
  now: number,
): Promise<PartitionResult> {
  const first = group[0] as ResolvedEvent;
  const times = group.map((e) => e.eventTime);
  // One step, so the store writes the partition once for the batch (counters and write times together).
  const applied = await deps.stats.applyBatch(first.ref, group, {
    lastWriteAt: Math.max(...times),
    firstWriteAt: Math.min(...times),
    ...(first.partitionDate === undefined ? {} : { partitionDate: first.partitionDate }),
  });
  const snapshot = applied.snapshot;
  const outcome = await evaluatePartition(deps, snapshot, now);
  return { ok: true, outcome, applied: applied.applied, stale: applied.stale };
}
