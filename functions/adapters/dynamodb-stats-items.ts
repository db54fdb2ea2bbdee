// Decodes the state table's items into the profiler's records (files, partitions, decisions), tolerating
// absent attributes (a partition item written before a field existed reads as its default), never throwing.
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import {
  type DecisionSummary,
  type FileRecord,
  type PartitionSnapshot,
  partitionId,
} from '../core/profiler/model.js';
import { SIZE_BUCKETS } from '../core/stats.js';
import { fileIdFromKey } from './dynamodb-keys.js';

/** The stored shape of a file record. */
export interface FileItem {
  readonly pk: string;
  readonly sk: string;
  readonly present: boolean;
  readonly size: number;
  readonly small: boolean;
  /** Written only when true (FileRecord.due); absent on every other record. */
  readonly due?: boolean;
  readonly sizeBucket: number;
  readonly seq: string;
  readonly table: string;
  readonly partition: string;
  readonly etag?: string;
  readonly versionId?: string;
  readonly eventTime: number;
  readonly expiresAt?: number;
}

export function num(value: unknown): number | undefined {
  return typeof value === 'number' ? value : undefined;
}

export function fileFromItem(item: FileItem): FileRecord {
  return {
    fileId: fileIdFromKey(item.pk),
    present: item.present,
    size: item.size,
    small: item.small,
    ...(item.due === true ? { due: true } : {}),
    bucket: item.sizeBucket,
    sequencer: item.seq,
    table: item.table,
    partition: item.partition,
    ...(item.etag === undefined ? {} : { etag: item.etag }),
    ...(item.versionId === undefined ? {} : { versionId: item.versionId }),
    eventTime: item.eventTime,
  };
}

export function fileFromAttributes(item: Record<string, AttributeValue>): FileRecord {
  return fileFromItem(plainFromAttributes({ M: item }) as FileItem);
}

/**
 * Decodes raw attribute values. Needed where the document client does not unmarshall: the items that
 * cancellation reasons and ConditionalCheckFailedException carry.
 */
export function plainFromAttributes(value: AttributeValue): unknown {
  if (value.S !== undefined) return value.S;
  if (value.N !== undefined) return Number(value.N);
  if (value.BOOL !== undefined) return value.BOOL;
  if (value.NULL !== undefined) return null;
  if (value.L !== undefined) return value.L.map(plainFromAttributes);
  if (value.M !== undefined) {
    return Object.fromEntries(Object.entries(value.M).map(([k, v]) => [k, plainFromAttributes(v)]));
  }
  if (value.SS !== undefined) return new Set(value.SS);
  if (value.NS !== undefined) return new Set(value.NS.map(Number));
  return undefined;
}

export function decisionFromPlain(value: unknown): DecisionSummary | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const d = value as Record<string, unknown>;
  return {
    at: num(d.at) ?? 0,
    compact: d.compact === true,
    reasons: Array.isArray(d.reasons) ? d.reasons.map(String) : [],
    ...(num(d.eligibleAt) === undefined ? {} : { eligibleAt: num(d.eligibleAt) }),
    action: typeof d.action === 'string' ? d.action : '',
  };
}

/** A stored partition item as a snapshot; absent counters read as 0. */
export function snapshotFromItem(item: Record<string, unknown>): PartitionSnapshot {
  const lease = item.lease as Record<string, unknown> | undefined;
  const state =
    item.state === 'scheduled' || item.state === 'compacting' || item.state === 'needs-attention'
      ? item.state
      : 'idle';
  const attention = item.attention as Record<string, unknown> | undefined;
  const settleRetry = item.settleRetry as Record<string, unknown> | undefined;
  const lastDecision = decisionFromPlain(item.lastDecision);
  const optional = {
    firstWriteAt: num(item.firstWriteAt),
    lastWriteAt: num(item.lastWriteAt),
    lastCompactedAt: num(item.lastCompactedAt),
    awaitedVersion: num(item.awaitedVersion),
    partitionDate: num(item.partitionDate),
    dueAt: num(item.dueAt),
  };
  return {
    table: String(item.table ?? ''),
    partition: String(item.partition ?? ''),
    fileCount: num(item.fileCount) ?? 0,
    totalBytes: num(item.totalBytes) ?? 0,
    smallCount: num(item.smallCount) ?? 0,
    smallBytes: num(item.smallBytes) ?? 0,
    ...(num(item.dueCount) === undefined ? {} : { dueCount: num(item.dueCount) }),
    histogram: SIZE_BUCKETS.map((_, i) => num(item[`hist${i}`]) ?? 0),
    state,
    generation: num(item.generation) ?? 0,
    version: num(item.version) ?? 0,
    ...Object.fromEntries(Object.entries(optional).filter(([, v]) => v !== undefined)),
    ...(lease === undefined
      ? {}
      : {
          lease: {
            runId: String(lease.runId),
            executionName: String(lease.executionName),
            ...(typeof lease.executionArn === 'string' ? { executionArn: lease.executionArn } : {}),
            acquiredAt: num(lease.acquiredAt) ?? 0,
            ...(num(lease.renewedAt) === undefined ? {} : { renewedAt: num(lease.renewedAt) }),
          },
        }),
    ...(lastDecision === undefined ? {} : { lastDecision }),
    ...(attention === undefined
      ? {}
      : {
          attention: {
            reason: String(attention.reason ?? ''),
            runId: String(attention.runId ?? ''),
            since: num(attention.since) ?? 0,
          },
        }),
    ...(settleRetry === undefined
      ? {}
      : {
          settleRetry: {
            attempts: num(settleRetry.attempts) ?? 0,
            lastAt: num(settleRetry.lastAt) ?? 0,
            nextAt: num(settleRetry.nextAt) ?? 0,
            executionName: String(settleRetry.executionName ?? ''),
          },
        }),
  };
}

/**
 * Prefix of a writer's registration on a partition item: `w#<pid>` = the epoch ms until which the writer may
 * still commit. A file record written by a registered writer is not counted yet (see {@link countedState}).
 */
export const WRITER_PREFIX = 'w#';

/** A file record as stored, with the writer that wrote it and the state it replaced. */
export interface StoredFile {
  readonly record: FileRecord;
  /** The writer (one apply of one partition's events) that wrote this state; absent on older items. */
  readonly pid?: string;
  /** What the record held before this writer's change; null = no record. Absent on older items. */
  readonly prev?: FileRecord | null;
}

/** The stored shape of `prev` (the partition and table are the record's own unless it moved). */
export interface PrevItem {
  readonly present: boolean;
  readonly size: number;
  readonly small: boolean;
  readonly due?: boolean;
  readonly sizeBucket: number;
  readonly seq: string;
  readonly table: string;
  readonly partition: string;
  readonly eventTime: number;
  readonly etag?: string;
  readonly versionId?: string;
}

export function prevItemOf(record: FileRecord): PrevItem {
  return {
    present: record.present,
    size: record.size,
    small: record.small,
    ...(record.due === true ? { due: true } : {}),
    sizeBucket: record.bucket,
    seq: record.sequencer,
    table: record.table,
    partition: record.partition,
    eventTime: record.eventTime,
    ...(record.etag === undefined ? {} : { etag: record.etag }),
    ...(record.versionId === undefined ? {} : { versionId: record.versionId }),
  };
}

export function storedFromItem(
  item: FileItem & { pid?: unknown; prev?: unknown; prevNone?: unknown },
): StoredFile {
  const record = fileFromItem(item);
  const pid = typeof item.pid === 'string' ? item.pid : undefined;
  const prevItem = item.prev as PrevItem | undefined;
  const prev: FileRecord | null | undefined =
    item.prevNone === true
      ? null
      : prevItem === undefined
        ? undefined
        : {
            fileId: record.fileId,
            present: prevItem.present === true,
            size: num(prevItem.size) ?? 0,
            small: prevItem.small === true,
            ...(prevItem.due === true ? { due: true } : {}),
            bucket: num(prevItem.sizeBucket) ?? 0,
            sequencer: String(prevItem.seq),
            table: String(prevItem.table),
            partition: String(prevItem.partition),
            eventTime: num(prevItem.eventTime) ?? 0,
            ...(typeof prevItem.etag === 'string' ? { etag: prevItem.etag } : {}),
            ...(typeof prevItem.versionId === 'string' ? { versionId: prevItem.versionId } : {}),
          };
  return { record, ...(pid === undefined ? {} : { pid }), ...(prev === undefined ? {} : { prev }) };
}

/** The writer registrations (`w#<pid>` → deadline) of a raw partition item. */
export function writersOf(item: Record<string, unknown> | undefined): Map<string, number> {
  const writers = new Map<string, number>();
  for (const [name, value] of Object.entries(item ?? {})) {
    if (name.startsWith(WRITER_PREFIX) && typeof value === 'number') {
      writers.set(name.slice(WRITER_PREFIX.length), value);
    }
  }
  return writers;
}

/** What the partition counters hold for each file, and whether some file is held by a live writer. */
export interface CountedState {
  /** Per file id: the state its partition counters include (a missing entry = no record). */
  readonly known: Map<string, FileRecord>;
  /** A file's latest record belongs to a writer that may still commit: wait for it, then read again. */
  readonly busy: boolean;
}

/**
 * Which state of each file the counters include. A writer registers on the partition item, writes its file
 * records (each naming it and keeping the state it replaced), then adds their delta to the counters while
 * removing its registration, in one conditional write before its deadline. So a record whose writer is still
 * registered is not counted: while the writer may commit (deadline + `marginMs` of clock skew not passed) the
 * file is busy; after that the writer is dead, never commits, and the replaced state (`prev`) is what counts —
 * the next writer of the file takes it over from there. A record whose writer is not registered was committed.
 * `writers` holds the registrations of each record's partition (`partitionId`-keyed), read AFTER the records:
 * a registration is removed only by the commit, so a record written by an uncommitted writer is never missed.
 */
export function countedState(
  stored: ReadonlyMap<string, StoredFile>,
  writers: ReadonlyMap<string, ReadonlyMap<string, number>>,
  now: number,
  marginMs: number,
): CountedState {
  const known = new Map<string, FileRecord>();
  let busy = false;
  for (const [fileId, file] of stored) {
    const deadline =
      file.pid === undefined ? undefined : writers.get(partitionId(file.record))?.get(file.pid);
    if (deadline === undefined) {
      known.set(fileId, file.record);
    } else if (deadline + marginMs > now) {
      busy = true;
    } else if (file.prev !== undefined && file.prev !== null) {
      known.set(fileId, file.prev);
    } else if (file.prev === undefined) {
      // A registered writer always keeps `prev`; without it the record cannot be taken over safely.
      busy = true;
    }
  }
  return { known, busy };
}
