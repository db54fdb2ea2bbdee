// The profiler's vocabulary as plain data: object events, partitions, file records, leases, decisions and
// trigger outcomes. Types only (and the partition id), so the StatsStore port and every module share them.
import type { PartitionValue } from '../partition.js';
import type { Decision, PartitionState } from '../policy.js';

/** One object change, whatever transport (S3 notification or EventBridge) carried it. */
export interface ObjectEvent {
  readonly bucket: string;
  /** Decoded object key. */
  readonly key: string;
  /** `created` = the key now holds this object; `removed` = the key holds nothing (or a delete marker). */
  readonly kind: 'created' | 'removed';
  /** Bytes (created only). */
  readonly size?: number;
  readonly etag?: string;
  readonly versionId?: string;
  /**
   * A removal that permanently deleted one version (`ObjectRemoved:Delete` with a version id) rather than
   * putting a delete marker: it removes the file only if that version is the one the key holds.
   */
  readonly versionDelete?: boolean;
  /** Normalized sequencer (see `normalizeSequencer`, events.ts); orders events of the same key. */
  readonly sequencer: string;
  /** When S3 processed the request, epoch ms. */
  readonly eventTime: number;
  /** The transport's event name, for logs (`ObjectCreated:Put`, `Object Deleted`). */
  readonly eventName: string;
}

/** A partition's identity: table name + raw partition path ('' when unpartitioned). */
export interface PartitionRef {
  readonly table: string;
  readonly partition: string;
}

/** The string that identifies a partition in maps and messages (not a store key: adapters build those). */
export function partitionId(ref: PartitionRef): string {
  return `${ref.table}#${ref.partition}`;
}

/** An event placed in its table and partition. */
export interface ResolvedEvent extends ObjectEvent {
  readonly ref: PartitionRef;
  /** `bucket/key`, the file's identity. */
  readonly fileId: string;
  /** Size-class of the new state (created only), decided with the table's policy at event time. */
  readonly small?: boolean;
  readonly partitionDate?: number;
  readonly values: readonly PartitionValue[];
}

/** A file as the stats store remembers it: the state its latest applied event gave it. */
export interface FileRecord {
  readonly fileId: string;
  readonly present: boolean;
  readonly size: number;
  readonly small: boolean;
  /**
   * The table's format has its own table service due on this file (TableFormat's `CountedFile.serviceDue`), as the
   * last whole-state count of its partition found it. Only such a count sets it; an event about the file never does
   * (a file an event names again was written or removed since). Absent: false.
   */
  readonly due?: boolean;
  /** Index into SIZE_BUCKETS. */
  readonly bucket: number;
  readonly sequencer: string;
  readonly table: string;
  readonly partition: string;
  readonly etag?: string;
  readonly versionId?: string;
  /** When the event that made this state happened, epoch ms. */
  readonly eventTime: number;
}

export interface Lease {
  /** The run id the workflow journals under; equals the execution name. */
  readonly runId: string;
  readonly executionName: string;
  /** Undefined when no state machine is configured. */
  readonly executionArn?: string;
  readonly acquiredAt: number;
  /**
   * The holder's last renewal (epoch ms). A holder that is not a Step Functions execution — an operator's settle or
   * undo from the CLI, an undo from the console — cannot be described by the sweep, which would take it for a run
   * whose start was lost and release the partition under it once the grace period is over. Such a holder renews
   * while it works (`PartitionLeases.renew`), and the sweep counts the grace period from here.
   */
  readonly renewedAt?: number;
}

export interface DecisionSummary {
  readonly at: number;
  readonly compact: boolean;
  readonly reasons: readonly string[];
  readonly eligibleAt?: number;
  /** What was done about it (`started`, `not started: no state machine configured`, `waiting`, ...). */
  readonly action: string;
}

/**
 * Why a partition is `needs-attention` rather than idle: a group of a run could not be settled (a request
 * kept failing, e.g. AccessDenied), or the run found a cause only a person can fix. No trigger starts a
 * compaction on it. While a group is left unsettled the sweep starts settle runs (`"settle": true`) on a
 * backoff schedule, so the partition is settled once the cause is gone; an operator's settle run acts sooner.
 */
export interface Attention {
  readonly reason: string;
  /** The run that could not settle it. */
  readonly runId: string;
  readonly since: number;
}

/** What releasing a partition records besides its new state (idle, or needs-attention with `attention`). */
export interface ReleasePatch {
  /** The run compacted something: the cooldown counts from here. */
  readonly lastCompactedAt?: number;
  /** Something a person must fix stands in the way: needs-attention instead of idle. */
  readonly attention?: Attention;
  /**
   * For a table whose log is its changes: the newest version of its log the run committed, as the profiler's cursor
   * counts (`CommitLogChanges.committedVersion`). The finalize step cannot count the run's files in and out itself
   * (only the log says what changed), so until the profiler has applied this version the counters still count the
   * inputs the run retired; no trigger starts a run on them meanwhile (see {@link PartitionSnapshot.awaitedVersion}).
   * Absent: nothing to wait for — a release drops what an earlier one recorded.
   */
  readonly awaitedVersion?: number;
}

/**
 * The sweep's settle retries of a needs-attention partition (see profiler/settle-retry.ts), kept on the partition so
 * the backoff survives function restarts and concurrent sweeps claim each retry once. It lasts as long as the
 * partition needs attention: a release to idle removes it, so the next incident starts the schedule again.
 */
export interface SettleRetry {
  /** Settle runs the sweep has started for this partition since it last was idle (1 after the first). */
  readonly attempts: number;
  /** When the sweep started the last one (its clock at that sweep), epoch ms. */
  readonly lastAt: number;
  /** From when the sweep starts the next one if the partition still needs attention, epoch ms. */
  readonly nextAt: number;
  /** The execution name of the last settle run (its history item and the Step Functions console have its outcome). */
  readonly executionName: string;
}

/** A partition's stored statistics and trigger state. */
export interface PartitionSnapshot extends PartitionRef {
  readonly fileCount: number;
  readonly totalBytes: number;
  readonly smallCount: number;
  readonly smallBytes: number;
  /**
   * Files of the partition whose format has its own table service due on them ({@link FileRecord.due}), kept with the
   * other counters by the same per-file accounting, so exact under duplicate and reordered events. Absent: 0.
   */
  readonly dueCount?: number;
  /** Counts per SIZE_BUCKETS bucket. */
  readonly histogram: readonly number[];
  readonly firstWriteAt?: number;
  readonly lastWriteAt?: number;
  /**
   * `idle` → `scheduled` (profiler/sweep) → `compacting` (a run holds the lease) → `idle`; or
   * `needs-attention` when a run could not settle it (see {@link Attention}).
   */
  readonly state: PartitionState['state'];
  /** Set while `needs-attention` (and while a settle run holds a partition it took from needs-attention). */
  readonly attention?: Attention;
  /** The sweep's settle retries while `needs-attention` (see {@link SettleRetry}). */
  readonly settleRetry?: SettleRetry;
  /** Incremented on every schedule; part of the execution name. */
  readonly generation: number;
  readonly lastCompactedAt?: number;
  /**
   * The version of the table's log the last run committed, recorded at its release (see {@link ReleasePatch}): a
   * verdict to compact waits until the profiler's cursor has reached it, since counters read before count files
   * that run retired.
   */
  readonly awaitedVersion?: number;
  readonly lease?: Lease;
  readonly partitionDate?: number;
  /** Bumped by every change of counters or write times: decisions are only stored against the newest. */
  readonly version: number;
  readonly lastDecision?: DecisionSummary;
  /** When the sweep should look again (epoch ms); undefined when only new events can change the verdict. */
  readonly dueAt?: number;
}

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export type LogFn = (level: LogLevel, message: string, data?: Record<string, unknown>) => void;

/** What settling a partition for the sweep did. */
export interface SettleOutcome {
  readonly settled: number;
  /** One line per group that could not be settled (the partition becomes needs-attention). */
  readonly unsettled: readonly string[];
  /** At least one group was rolled forward to done (a compaction completed). */
  readonly completed: boolean;
}

export type TriggerAction =
  | 'started'
  /** The policy says compact, but a concurrency cap was reached: recorded as waiting, still due. */
  | 'capped'
  | 'already-started'
  | 'start-failed'
  | 'not-started'
  | 'waiting'
  | 'blocked'
  | 'superseded'
  | 'leased';

export interface TriggerOutcome {
  readonly ref: PartitionRef;
  readonly decision: Decision;
  readonly action: TriggerAction;
  readonly executionName?: string;
}
