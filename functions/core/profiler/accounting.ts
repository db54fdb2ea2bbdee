// Exact partition statistics from at-least-once, unordered events: a file's state is the event with the greatest
// sequencer, and counters change by its new contribution minus its old one — never by counting events.
import { SIZE_BUCKETS } from '../stats.js';
import { type FileRecord, type PartitionRef, partitionId, type ResolvedEvent } from './model.js';

/** Additive change of a partition's counters. */
export interface CounterDelta {
  fileCount: number;
  totalBytes: number;
  smallCount: number;
  smallBytes: number;
  /** Files with a table service due (FileRecord.due). */
  dueCount: number;
  /** One entry per SIZE_BUCKETS bucket. */
  histogram: number[];
}

/** The SIZE_BUCKETS index of a file of `size` bytes. */
export function sizeBucket(size: number): number {
  const index = SIZE_BUCKETS.findIndex((b) => b.upperBytes === null || size < b.upperBytes);
  return index < 0 ? SIZE_BUCKETS.length - 1 : index;
}

export function emptyDelta(): CounterDelta {
  return {
    fileCount: 0,
    totalBytes: 0,
    smallCount: 0,
    smallBytes: 0,
    dueCount: 0,
    histogram: SIZE_BUCKETS.map(() => 0),
  };
}

export function isZeroDelta(delta: CounterDelta): boolean {
  return (
    delta.fileCount === 0 &&
    delta.totalBytes === 0 &&
    delta.smallCount === 0 &&
    delta.smallBytes === 0 &&
    delta.dueCount === 0 &&
    delta.histogram.every((n) => n === 0)
  );
}

function addContribution(delta: CounterDelta, file: FileRecord, sign: 1 | -1): void {
  if (!file.present) return;
  delta.fileCount += sign;
  delta.totalBytes += sign * file.size;
  if (file.small) {
    delta.smallCount += sign;
    delta.smallBytes += sign * file.size;
  }
  if (file.due === true) delta.dueCount += sign;
  delta.histogram[file.bucket] = (delta.histogram[file.bucket] ?? 0) + sign;
}

/** The record an event leaves behind. */
export function recordFromEvent(event: ResolvedEvent): FileRecord {
  const present = event.kind === 'created';
  const size = present ? (event.size ?? 0) : 0;
  return {
    fileId: event.fileId,
    present,
    size,
    small: present && event.small === true,
    bucket: sizeBucket(size),
    sequencer: event.sequencer,
    table: event.ref.table,
    partition: event.ref.partition,
    ...(event.etag === undefined ? {} : { etag: event.etag }),
    ...(event.versionId === undefined ? {} : { versionId: event.versionId }),
    eventTime: event.eventTime,
  };
}

/** One file write of a plan: the new record, conditioned on the store still holding `expected`. */
export interface FileWrite {
  readonly next: FileRecord;
  /** The record the delta was computed against; undefined = the store must hold no record. */
  readonly expected: FileRecord | undefined;
}

export interface AccountingPlan {
  readonly writes: readonly FileWrite[];
  /** Per partition id; only non-zero deltas. */
  readonly deltas: ReadonlyMap<string, { readonly ref: PartitionRef; readonly delta: CounterDelta }>;
  /** Events that change nothing: duplicates and events older than what is stored. */
  readonly stale: readonly ResolvedEvent[];
}

/**
 * Plans the writes for the latest event of each file against what the store is believed to hold
 * (`known`; a missing entry means "no record"). An event not newer than the stored sequencer changes
 * nothing (a duplicate, or an older event arriving late). Otherwise the file record is replaced and each
 * affected partition changes by new contribution minus old — so an overwrite counts once with the size
 * difference, a delete of an unknown file only leaves a tombstone, and a delete-then-create in either
 * order ends in the state of the greater sequencer.
 */
export function planAccounting(
  latest: Iterable<ResolvedEvent>,
  known: ReadonlyMap<string, FileRecord | undefined>,
): AccountingPlan {
  const writes: FileWrite[] = [];
  const stale: ResolvedEvent[] = [];
  const deltas = new Map<string, { ref: PartitionRef; delta: CounterDelta }>();
  const deltaOf = (ref: PartitionRef): CounterDelta => {
    const id = partitionId(ref);
    let entry = deltas.get(id);
    if (entry === undefined) {
      entry = { ref, delta: emptyDelta() };
      deltas.set(id, entry);
    }
    return entry.delta;
  };
  for (const event of latest) {
    const old = known.get(event.fileId);
    if (old !== undefined && old.sequencer >= event.sequencer) {
      stale.push(event);
      continue;
    }
    // Deleting a noncurrent version (e.g. vacuum of a retired input's old version) leaves the current file.
    const otherVersion =
      event.versionDelete === true &&
      old?.present === true &&
      old.versionId !== undefined &&
      old.versionId !== event.versionId;
    if (otherVersion) {
      stale.push(event);
      continue;
    }
    const next = recordFromEvent(event);
    writes.push({ next, expected: old });
    if (old?.present) addContribution(deltaOf({ table: old.table, partition: old.partition }), old, -1);
    if (next.present) addContribution(deltaOf(event.ref), next, 1);
  }
  for (const [id, entry] of deltas) if (isZeroDelta(entry.delta)) deltas.delete(id);
  return { writes, deltas, stale };
}
