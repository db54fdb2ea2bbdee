// The port through which workflow steps hold a partition's lease and record what a run did; the
// DynamoDB adapter keeps it on the profiler's partition item, tests keep it in memory.
import type { Attention, PartitionRef, ReleasePatch } from '../profiler/model.js';

export type { Attention };

/** What a granted lease is known by. */
export interface LeaseGrant {
  readonly runId: string;
  /** The partition item's generation while this run holds it; release is conditioned on it. */
  readonly generation: number;
  readonly acquiredAt: number;
  /** The partition's last write (epoch ms) when the lease was taken, for the quiet check. */
  readonly lastWriteAt?: number;
}

export interface LeaseRequest {
  readonly runId: string;
  readonly executionArn?: string;
  /** The profiler's schedule generation: the run takes over exactly that schedule. */
  readonly generation?: number;
  /** A settle run: it may also take a partition that `needs-attention` (to settle it and clear that). */
  readonly settle?: boolean;
  /**
   * Take the lease over from a run whose execution has ended without releasing it (it died in finalize):
   * granted only while that run still holds it at that generation. The new run settles before planning.
   */
  readonly takeOverFrom?: { readonly runId: string; readonly generation: number };
  readonly now: number;
}

/** One file's change in the partition, applied to the statistics at once rather than when S3's events arrive. */
export interface LayoutChange {
  readonly bucket: string;
  readonly removed: readonly { readonly key: string }[];
  readonly created: readonly { readonly key: string; readonly size: number; readonly etag: string }[];
  readonly at: number;
}

/** One history item per run (see finalize). */
export interface RunHistory {
  readonly runId: string;
  readonly table: string;
  readonly partition: string;
  readonly outcome: string;
  readonly status: 'SUCCEEDED' | 'FAILED';
  readonly startedAt: number;
  readonly finishedAt: number;
  readonly [field: string]: unknown;
}

export interface PartitionLeases {
  /**
   * Moves the partition to `compacting` for this run: from `idle`, or from `scheduled` at the request's
   * generation. Idempotent for the holder (a retried acquire succeeds).
   * @throws LeaseHeldError naming the holder when another run holds it.
   */
  acquire(ref: PartitionRef, request: LeaseRequest): Promise<LeaseGrant>;
  /** The partition's latest write time (epoch ms), undefined when never seen. */
  lastWriteAt(ref: PartitionRef): Promise<number | undefined>;
  /** Whether `runId` holds the partition's lease now (a redriven old execution no longer does). */
  holds(ref: PartitionRef, runId: string): Promise<boolean>;
  /**
   * Records that `runId`, which holds the partition's lease, is still at work (`Lease.renewedAt`): for holders the
   * sweep cannot describe (no execution), which would otherwise lose the lease once its grace period is over.
   * False, changing nothing, when `runId` no longer holds it.
   */
  renew(ref: PartitionRef, runId: string, now: number): Promise<boolean>;
  /**
   * Releases the lease if `runId` still holds it; false when it did not (idempotent). With `attention`
   * the partition is not released as idle but marked `needs-attention` (no trigger starts a run on it;
   * only a settle run takes it), because something a person must fix stands in the way.
   */
  release(ref: PartitionRef, runId: string, patch: ReleasePatch): Promise<boolean>;
  /** Applies the run's own file changes to the partition's statistics (idempotent with S3's later events). */
  applyLayoutChange(ref: PartitionRef, change: LayoutChange): Promise<void>;
  putHistory(item: RunHistory): Promise<void>;
}
