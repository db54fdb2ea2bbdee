// The sweep settles needs-attention partitions itself once their cause is gone: a partition left fenced by a group
// that could not be settled gets a settle run on a backoff schedule recorded on it, each retry claimed by one sweep.
//
// The retry is the operator's settle, not a copy of it: the sweep starts the state machine with the console's settle
// input (`{"table", "partition", "settle": true}`, here with `trigger: "sweep"`). That run takes the partition's
// lease from needs-attention in one conditional write, so it and an operator's settle run (or `lake-compactor
// settle --state-table`), another sweep's retry, or a compaction never act on one group together; its finalize
// settles every open group from the journal and releases the partition — idle, or needs-attention again with the
// reason. Until the partition is idle its fence stays, so no run plans it (DESIGN: fence rule).
import type { StateMachineStarter } from '../../ports/state-machine-starter.js';
import type { StatsStore } from '../../ports/stats-store.js';
import { settleExecutionName } from './decisions.js';
import type { LogFn, PartitionRef, PartitionSnapshot, SettleRetry } from './model.js';

/** When the sweep retries a settle: the first wait, doubled after each retry, up to the longest. */
export interface SettleRetrySchedule {
  /** Wait from the partition becoming needs-attention to the first retry, and the base of the doubling (ms). */
  readonly firstMs: number;
  /** Longest wait between two retries (ms). */
  readonly maxMs: number;
}

/** How many doublings of the first wait the schedule makes before it stays at the longest wait. */
const DOUBLINGS = 2;

/**
 * The schedule for a sweep that runs every `periodMs`: one period to the first retry, then two, four, and every
 * four periods from then on (15 min, 30 min, 1 h, 1 h, … for the default 15-minute sweep). A retry costs a Step
 * Functions execution and a few requests, so hourly is cheap; it bounds how long readers keep seeing duplicate rows
 * after the cause is fixed without an operator (an operator's settle run acts at once).
 */
export function settleRetrySchedule(periodMs: number): SettleRetrySchedule {
  return { firstMs: periodMs, maxMs: periodMs * 2 ** DOUBLINGS };
}

/**
 * The wait after the `attempts`-th retry (`attempts` ≥ 1): the first wait doubled `attempts` times, at most the
 * longest wait. (Before the first retry the wait is the first wait, from `attention.since`.)
 */
export function settleRetryInterval(attempts: number, schedule: SettleRetrySchedule): number {
  return Math.min(schedule.maxMs, schedule.firstMs * 2 ** Math.min(attempts, 30));
}

/** When the next retry is due: the recorded one, or (before the first) one first wait after the partition got stuck. */
export function settleRetryDueAt(
  snapshot: Pick<PartitionSnapshot, 'attention' | 'settleRetry'>,
  schedule: SettleRetrySchedule,
): number {
  return snapshot.settleRetry?.nextAt ?? (snapshot.attention?.since ?? 0) + schedule.firstMs;
}

/**
 * Whether a sweep at `now` retries. A sweep runs on its period give or take a few seconds: a retry due one period
 * after the last would otherwise miss the tick that comes a second early and wait a whole period more.
 */
export function settleRetryDue(
  snapshot: Pick<PartitionSnapshot, 'attention' | 'settleRetry'>,
  now: number,
  schedule: SettleRetrySchedule,
): boolean {
  const slack = Math.min(60_000, schedule.firstMs / 4);
  return now >= settleRetryDueAt(snapshot, schedule) - slack;
}

/** The retry a sweep at `now` claims for `snapshot`: one more attempt, the next due after the grown wait. */
export function nextSettleRetry(
  snapshot: Pick<PartitionSnapshot, 'table' | 'partition' | 'generation' | 'settleRetry'>,
  now: number,
  schedule: SettleRetrySchedule,
): SettleRetry {
  const attempts = (snapshot.settleRetry?.attempts ?? 0) + 1;
  return {
    attempts,
    lastAt: now,
    nextAt: now + settleRetryInterval(attempts, schedule),
    executionName: settleExecutionName(snapshot, snapshot.generation, attempts),
  };
}

/** The settle run's input: the console's settle input, marked as the sweep's, with why (informative only). */
export interface SettleRunRequest {
  readonly table: string;
  readonly partition: string;
  readonly settle: true;
  readonly trigger: 'sweep';
  readonly requestedAt: string;
  readonly reasons: readonly string[];
}

export function settleRunRequest(snapshot: PartitionSnapshot, retry: SettleRetry): SettleRunRequest {
  const since = snapshot.attention?.since;
  return {
    table: snapshot.table,
    partition: snapshot.partition,
    settle: true,
    trigger: 'sweep',
    requestedAt: new Date(retry.lastAt).toISOString(),
    reasons: [
      `needs attention${since === undefined ? '' : ` since ${new Date(since).toISOString()}`}: ${snapshot.attention?.reason ?? 'no reason recorded'}`,
      `settle retry ${retry.attempts} by the sweep; the next one from ${new Date(retry.nextAt).toISOString()} if this one cannot settle it`,
    ],
  };
}

/** What the sweep needs to retry settles. */
export interface SettleRetryDeps {
  readonly schedule: SettleRetrySchedule;
  /**
   * Whether a group of the partition is still open in the journal (its fence). A partition that needs attention
   * with no open group was left for a person (e.g. the location is another format's table): a settle run would
   * release it, and the next compaction would fail the same way, so the sweep leaves it alone.
   */
  readonly fenced: (ref: PartitionRef) => Promise<boolean>;
}

export type SettleRetryAction =
  /** The settle run was started (or found started: a retried start of the same claim). */
  | 'started'
  | 'already-started'
  /** Another sweep claimed this retry first, or the partition moved on (a settle run took it) since it was read. */
  | 'claimed-elsewhere'
  /** Starting it failed; the claim stands, so the next retry is on the schedule (logged). */
  | 'start-failed'
  /** No group is open: only a person can end it (see SettleRetryDeps.fenced). */
  | 'operator-only';

export interface SettleRetryOutcome {
  readonly ref: PartitionRef;
  readonly action: SettleRetryAction;
  readonly retry?: SettleRetry;
}

/**
 * Starts a settle run for every partition of `needing` (needs-attention partitions of one table) whose retry is due
 * at `now` and that still has an open group. Each retry is first claimed on the partition — one conditional write,
 * at the partition's generation and recorded attempt count — so of concurrent sweeps one starts it, and the next
 * retry's time is stored before anything runs (a sweep that dies after the claim costs one retry, never a loop).
 */
export async function retrySettles(
  deps: {
    readonly stats: StatsStore;
    readonly starter?: StateMachineStarter;
    readonly settleRetry?: SettleRetryDeps;
    readonly log?: LogFn;
  },
  needing: readonly PartitionSnapshot[],
  now: number,
): Promise<SettleRetryOutcome[]> {
  const { starter, settleRetry } = deps;
  if (starter === undefined || settleRetry === undefined) return [];
  const log = deps.log ?? (() => undefined);
  const outcomes: SettleRetryOutcome[] = [];
  for (const snapshot of needing) {
    if (snapshot.state !== 'needs-attention' || !settleRetryDue(snapshot, now, settleRetry.schedule))
      continue;
    const ref = { table: snapshot.table, partition: snapshot.partition };
    if (!(await settleRetry.fenced(ref))) {
      log('debug', 'needs attention with no open group: left for an operator', {
        ...ref,
        reason: snapshot.attention?.reason,
      });
      outcomes.push({ ref, action: 'operator-only' });
      continue;
    }
    const retry = nextSettleRetry(snapshot, now, settleRetry.schedule);
    if (!(await deps.stats.claimSettleRetry(snapshot, retry))) {
      log('info', 'settle retry claimed by another sweep, or the partition moved on', { ...ref });
      outcomes.push({ ref, action: 'claimed-elsewhere' });
      continue;
    }
    try {
      const started = await starter.start(retry.executionName, settleRunRequest(snapshot, retry));
      log('warn', 'settle retry started for a partition that needs attention', {
        ...ref,
        attempt: retry.attempts,
        executionArn: started.executionArn,
        nextRetryAt: new Date(retry.nextAt).toISOString(),
        reason: snapshot.attention?.reason,
      });
      outcomes.push({ ref, action: started.alreadyStarted ? 'already-started' : 'started', retry });
    } catch (err) {
      log('error', 'starting a settle retry failed; the next one is on the schedule', {
        ...ref,
        attempt: retry.attempts,
        executionName: retry.executionName,
        nextRetryAt: new Date(retry.nextAt).toISOString(),
        error: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
      });
      outcomes.push({ ref, action: 'start-failed', retry });
    }
  }
  return outcomes;
}
