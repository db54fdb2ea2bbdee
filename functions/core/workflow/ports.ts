// The port through which workflow steps hold a partition's lease and record what a run did; the
// DynamoDB adapter keeps it on the profiler's partition item, tests keep it in memory.
import type { PartitionRef } from '../profiler.js';

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
  /** Releases the lease if `runId` still holds it; false when it did not (idempotent). */
  release(ref: PartitionRef, runId: string, patch: { readonly lastCompactedAt?: number }): Promise<boolean>;
  /** Applies the run's own file changes to the partition's statistics (idempotent with S3's later events). */
  applyLayoutChange(ref: PartitionRef, change: LayoutChange): Promise<void>;
  putHistory(item: RunHistory): Promise<void>;
}
