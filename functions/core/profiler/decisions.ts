// The pure rules around a trigger verdict: execution names, due times and their slots, when a decision is
// stored or skipped, and the workflow input of a schedule — deterministic, so retries repeat them exactly.
import { createHash } from 'node:crypto';
import type { Decision, PartitionState } from '../policy.js';
import type { DecisionSummary, Lease, PartitionRef, PartitionSnapshot } from './model.js';

/** The policy's view of a snapshot. */
export function toPartitionState(snapshot: PartitionSnapshot): PartitionState {
  return {
    fileCount: snapshot.fileCount,
    totalBytes: snapshot.totalBytes,
    smallFileCount: snapshot.smallCount,
    smallFileBytes: snapshot.smallBytes,
    ...(snapshot.dueCount === undefined || snapshot.dueCount === 0
      ? {}
      : { serviceDueFiles: snapshot.dueCount }),
    state: snapshot.state,
    ...(snapshot.lastWriteAt === undefined ? {} : { lastWriteAt: snapshot.lastWriteAt }),
    ...(snapshot.lastCompactedAt === undefined ? {} : { lastCompactedAt: snapshot.lastCompactedAt }),
    ...(snapshot.partitionDate === undefined ? {} : { partitionDate: snapshot.partitionDate }),
  };
}

/** Characters Step Functions allows in execution names (a conservative subset: no unicode, no spaces). */
const NAME_UNSAFE = /[^A-Za-z0-9_-]/g;

/**
 * The execution name for a partition's `generation`-th schedule: `<table>-<12 hex of sha256(table/partition)>-g<n>`,
 * at most 80 characters of `[A-Za-z0-9_-]`. Deterministic, so a retried start of the same schedule names the
 * same execution (Step Functions then refuses or deduplicates it) and a new schedule gets a new name.
 */
export function executionName(ref: PartitionRef, generation: number): string {
  return nameOf(ref, `g${generation}`);
}

/**
 * The execution name of the sweep's `attempt`-th settle retry of a partition at `generation` (see settle-retry.ts):
 * `<table>-<12 hex>-g<generation>-s<attempt>`. Never a compaction's name, and never an earlier retry's: every settle
 * run that takes the lease moves the generation on, and a retry that never took it has another attempt number — a
 * name Step Functions kept from an earlier incident would be answered as already started, and nothing would run.
 */
export function settleExecutionName(ref: PartitionRef, generation: number, attempt: number): string {
  return nameOf(ref, `g${generation}-s${attempt}`);
}

function nameOf(ref: PartitionRef, tail: string): string {
  const hash = createHash('sha256').update(`${ref.table}\u0000${ref.partition}`).digest('hex').slice(0, 12);
  const suffix = `-${hash}-${tail}`;
  const table = ref.table.replace(NAME_UNSAFE, '_').slice(0, 80 - suffix.length);
  return `${table}${suffix}`;
}

/**
 * Due times are rounded up to this. A hot partition's due time moves with every batch; rounded, what the
 * store indexes it by changes at most every 5 minutes (all partitions of a table share one index partition
 * in DynamoDB), and the sweep, which runs every 15 minutes and re-decides on the partition itself, is late
 * by at most that.
 */
export const DUE_GRANULARITY_MS = 5 * 60_000;

/**
 * The slot a due time falls in: rounded up to {@link DUE_GRANULARITY_MS} (never before epoch 0), or
 * undefined when the partition is not due at all. Two due times in the same slot are the same to the sweep.
 */
export function dueSlot(dueAt: number | undefined): number | undefined {
  if (dueAt === undefined) return undefined;
  return Math.max(0, Math.ceil(dueAt / DUE_GRANULARITY_MS) * DUE_GRANULARITY_MS);
}

/**
 * When the sweep should come back to a partition after `decision`: now-ish when it says compact (the
 * start failed or no state machine is configured), at `eligibleAt` when only waiting stands in the way,
 * never (undefined) when the counters themselves say no.
 */
export function dueAtOf(decision: Decision, now: number): number | undefined {
  if (decision.compact) return now;
  return decision.eligibleAt;
}

/** Coarse verdict, to tell a changed decision from the same one with new numbers. */
export function decisionSignature(decision: Pick<Decision, 'compact' | 'eligibleAt'>): string {
  if (decision.compact) return 'compact';
  return decision.eligibleAt === undefined ? 'blocked' : 'waiting';
}

/** A decision item is kept at most this often per partition when its verdict does not change. */
export const DECISION_HEARTBEAT_MS = 60 * 60_000;

/**
 * Whether to store a decision item (the partition item always carries the latest decision). Rate: at most
 * one evaluation per partition per batch (or sweep visit); of those, an item is written when the verdict
 * changed (compact / waiting / blocked) or the last item is older than {@link DECISION_HEARTBEAT_MS}; a
 * schedule (a started compaction) always stores one. A partition receiving a file a second keeps ~1 item
 * an hour, not 3,600.
 */
export function shouldStoreDecision(
  previous: DecisionSummary | undefined,
  decision: Pick<Decision, 'compact' | 'eligibleAt'>,
  now: number,
): boolean {
  if (previous === undefined) return true;
  if (decisionSignature(previous) !== decisionSignature(decision)) return true;
  return now - previous.at >= DECISION_HEARTBEAT_MS;
}

/**
 * Whether recording `summary` would change nothing that matters: the stored decision has the same action,
 * the due slot (see {@link dueSlot}) stays the same, and it is younger than the heartbeat. Skipping saves a
 * write per partition and batch on a busy partition; its stored reasons then lag by at most the heartbeat.
 */
export function isUnchanged(
  snapshot: Pick<PartitionSnapshot, 'partition' | 'lastDecision' | 'dueAt'>,
  summary: DecisionSummary,
  dueAt: number | undefined,
): boolean {
  const previous = snapshot.lastDecision;
  if (previous === undefined || previous.action !== summary.action) return false;
  if (summary.at - previous.at >= DECISION_HEARTBEAT_MS) return false;
  return dueSlot(snapshot.dueAt) === dueSlot(dueAt);
}

/** The state machine input for a schedule: deterministic, so a retried start carries the same input. */
export interface CompactionRequest {
  /** Who scheduled it; the workflow's input schema knows `profiler` and `sweep`. */
  readonly trigger: 'profiler' | 'sweep';
  readonly table: string;
  readonly partition: string;
  readonly generation: number;
  readonly runId: string;
  /** When the lease was taken (ISO), the same on every retry of this schedule. */
  readonly requestedAt: string;
  readonly reasons: readonly string[];
}

export function compactionRequest(
  ref: PartitionRef,
  lease: Lease,
  generation: number,
  reasons: readonly string[],
  trigger: 'profiler' | 'sweep' = 'profiler',
): CompactionRequest {
  return {
    trigger,
    table: ref.table,
    partition: ref.partition,
    generation,
    runId: lease.runId,
    requestedAt: new Date(lease.acquiredAt).toISOString(),
    reasons,
  };
}
