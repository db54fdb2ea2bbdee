// Decodes the state table's items into the profiler's records (files, partitions, decisions), tolerating
// absent attributes (a partition item written before a field existed reads as its default), never throwing.
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { DecisionSummary, FileRecord, PartitionSnapshot } from '../core/profiler/model.js';
import { SIZE_BUCKETS } from '../core/stats.js';
import { fileIdFromKey } from './dynamodb-keys.js';

/** The stored shape of a file record. */
export interface FileItem {
  readonly pk: string;
  readonly sk: string;
  readonly present: boolean;
  readonly size: number;
  readonly small: boolean;
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
