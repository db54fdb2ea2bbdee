// The StatsStore port: exact per-file and per-partition statistics plus the trigger state machine of a
// partition (idle → scheduled → idle); every state change is conditional, so concurrent writers cannot lose updates.

import type { ForeignFormatMarker } from '../core/formats/foreign-tables.js';
import type { ChangeCursor } from '../core/formats/table-format.js';
import type {
  DecisionSummary,
  FileRecord,
  Lease,
  PartitionRef,
  PartitionSnapshot,
  ReleasePatch,
  ResolvedEvent,
  SettleRetry,
} from '../core/profiler/model.js';
import type { RunCapReached, RunLimits } from '../core/run-caps.js';

/** What applying a batch of events did. */
export interface ApplyResult {
  /** File records written (new state stored). */
  readonly applied: number;
  /** Events that changed nothing: duplicates, or older than the stored state. */
  readonly stale: number;
  /** Store requests that lost a race or a guess and were retried with what the store said. */
  readonly retries: number;
}

/** What applying one partition's batch did, and the partition's state after it (as `touch` returns it). */
export interface BatchApplyResult extends ApplyResult {
  readonly snapshot: PartitionSnapshot;
}

/** Static facts of a partition, written with its write times. */
export interface TouchInput {
  /** Latest event time of the batch, epoch ms; the stored value only moves forward. */
  readonly lastWriteAt: number;
  /** Earliest event time of the batch; kept only when the partition has none yet. */
  readonly firstWriteAt: number;
  readonly partitionDate?: number;
}

/** A listed file, as reconcile sees it. */
export interface ListedFile {
  readonly fileId: string;
  readonly size: number;
  readonly small: boolean;
  /** The format has its own table service due on the file (FileRecord.due). @default false */
  readonly due?: boolean;
  readonly etag?: string;
  readonly eventTime: number;
}

export type ReconcileResult =
  | { readonly kind: 'corrected'; readonly filesFixed: number }
  | { readonly kind: 'unchanged' }
  /** An event changed the partition while reconciling; nothing was overwritten, try again later. */
  | { readonly kind: 'busy' };

/** What recounting one table's (or the deployment's) running compactions found and did. */
export interface RunCountReport {
  /** Runs counted after the repair. */
  readonly running: number;
  /** Partitions holding a lease that was not counted (taken before the caps existed): now counted. */
  readonly countedIn: readonly string[];
  /** Partitions counted as running that no longer hold a lease: no longer counted. */
  readonly countedOut: readonly string[];
  /** The counter disagreed with what it counts and was set (only when nothing changed meanwhile). */
  readonly corrected?: { readonly from: number; readonly to: number };
}

export interface StatsStore {
  /**
   * Applies the latest event of each file exactly once: the file records and the counters of the affected
   * partitions change in one conditional write, conditioned on the state the delta was computed from.
   * Events must be unique per file (see `latestPerFile`).
   */
  applyEvents(events: readonly ResolvedEvent[]): Promise<ApplyResult>;
  /**
   * `applyEvents` and `touch` of one partition's events (all of `ref`) as one step, so a store can write the
   * partition once per batch rather than once per event: the profiler's per-batch path.
   */
  applyBatch(
    ref: PartitionRef,
    events: readonly ResolvedEvent[],
    touch: TouchInput,
  ): Promise<BatchApplyResult>;
  /** Moves lastWriteAt forward (never back), records the partition's static facts, and returns the fresh state. */
  touch(ref: PartitionRef, input: TouchInput): Promise<PartitionSnapshot>;
  /** The partition's state (strongly consistent), or undefined when it has never been seen. */
  get(ref: PartitionRef): Promise<PartitionSnapshot | undefined>;
  /**
   * File records (strongly consistent); a missing entry means no record. `within`: the partitions the files are
   * counted in, as far as the caller knows — a store that keeps records per partition looks only there (and, for
   * partitions written before it did, in its older per-file records).
   */
  getFiles(fileIds: readonly string[], within?: readonly PartitionRef[]): Promise<Map<string, FileRecord>>;
  /**
   * Stores an idle partition's decision and when the sweep should look again, only if the partition is
   * still at `snapshot.version` and idle. Returns false when superseded (a newer state will be decided).
   * `storeItem` also keeps a decision item (TTL 30 days).
   */
  recordDecision(
    snapshot: PartitionSnapshot,
    decision: DecisionSummary,
    options: { readonly dueAt?: number; readonly storeItem: boolean },
  ): Promise<boolean>;
  /**
   * idle → scheduled: increments the generation and records the lease, only if the partition is idle and
   * at `snapshot.version` (exactly one concurrent caller wins), and counts the run in the same write: with
   * `limits`, only while fewer runs than each cap are counted for the table and the deployment. Returns the
   * new state, undefined on a lost race, or which cap was reached (the partition stays idle).
   */
  schedule(
    snapshot: PartitionSnapshot,
    lease: Lease,
    decision: DecisionSummary,
    limits?: RunLimits,
  ): Promise<PartitionSnapshot | RunCapReached | undefined>;
  /**
   * scheduled|compacting → idle for `generation` (a later generation is left alone), counting the run out
   * in the same write. False when it was not held. With `attention`, → needs-attention instead (no trigger
   * starts a run; a settle run clears it), keeping the sweep's settle-retry record; idle drops it.
   */
  release(ref: PartitionRef, generation: number, patch: ReleasePatch): Promise<boolean>;
  /**
   * Records the sweep's next settle retry of a needs-attention partition, only if the partition is still
   * needs-attention at `snapshot.generation` with the retry record `snapshot` holds (none, or the same attempt
   * count): of concurrent sweeps exactly one claims each retry, and none claims once a settle run took the
   * partition. True when this call recorded it.
   */
  claimSettleRetry(snapshot: PartitionSnapshot, retry: SettleRetry): Promise<boolean>;
  /** Idle partitions of a table whose due time is at or before `now` (index query, eventually consistent). */
  listDue(table: string, now: number): Promise<PartitionRef[]>;
  /** Partitions of a table holding a lease (scheduled or compacting). */
  listLeased(table: string): Promise<PartitionSnapshot[]>;
  /** Partitions of a table marked needs-attention (index query, then strongly consistent reads). */
  listNeedingAttention(table: string): Promise<PartitionSnapshot[]>;
  /** Every partition of a table (index query). */
  listPartitions(table: string): Promise<PartitionSnapshot[]>;
  /** The newest decision items of a partition, newest first. */
  listDecisions(ref: PartitionRef, limit: number): Promise<DecisionSummary[]>;
  /**
   * Makes a partition agree with a listing: file records of listed files are fixed (present, listed size),
   * then the counters are overwritten from the listing, only if the partition is still at `expectedVersion`.
   */
  reconcile(
    ref: PartitionRef,
    files: readonly ListedFile[],
    expectedVersion: number | undefined,
    facts: { readonly partitionDate?: number },
  ): Promise<ReconcileResult>;
  /**
   * Records, once and for good, that a foreign table lives in (or is) configured table `table` at
   * `marker.root`: put-if-absent, so redelivered events change nothing. True when this call recorded it.
   */
  markForeignFormat(table: string, marker: ForeignFormatMarker): Promise<boolean>;
  /** The foreign-format markers of a table (strongly consistent), in root order; [] for a plain table. */
  foreignFormats(table: string): Promise<ForeignFormatMarker[]>;
  /**
   * How far the profiler has applied the log of a log-based table, strongly consistent; undefined
   * before its first commit was applied.
   */
  changeCursor(table: string): Promise<ChangeCursor | undefined>;
  /**
   * Stores `cursor` only if it is ahead of the stored one (or none is stored), so concurrent profilers only ever
   * move it forward. True when this call stored it.
   */
  advanceChangeCursor(table: string, cursor: ChangeCursor): Promise<boolean>;
  /**
   * Makes the table's count of running compactions exact: leases held but not counted (taken before the
   * caps existed) are counted, counted partitions that hold no lease are not, and the counter is recounted.
   * Every change is conditioned on the partition's own state, so it is safe while runs start and end.
   */
  reconcileRunCount(table: string): Promise<RunCountReport>;
  /** Recounts the deployment's running compactions from the tables' counts (after `reconcileRunCount`). */
  reconcileTotalRunCount(): Promise<RunCountReport>;
}
