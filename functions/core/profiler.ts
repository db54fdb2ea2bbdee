// Exact partition accounting from at-least-once, unordered S3 events: a file's state is the event with the
// greatest sequencer, counters change by new-minus-old contribution, and every trigger decision is explained.
import { createHash } from 'node:crypto';
import pLimit from 'p-limit';
import { z } from 'zod';
import type { ObjectStore } from '../ports/object-store.js';
import type { StateMachineStarter } from '../ports/state-machine-starter.js';
import type { StatsStore } from '../ports/stats-store.js';
import { InvalidInputError } from './errors.js';
import { executionEnded } from './executions.js';
import { inventoryTable } from './inventory.js';
import {
  classifyObject,
  decodeS3EventKey,
  MIN_PARQUET_BYTES,
  type PartitionValue,
  parsePartition,
  relativeToRoot,
} from './partition.js';
import {
  type Decision,
  decide,
  type PartitionState,
  type Policy,
  partitionDateFromValues,
} from './policy.js';
import { capAction, limitsFor, type RunCapReached, type RunCaps } from './run-caps.js';
import { isSmallFile, SIZE_BUCKETS } from './stats.js';
import { findTableForKey, type TableConfig } from './table-config.js';
import { type ForeignFormat, foreignFormatOfKey, foreignFormatReason, markerCovers } from './table-format.js';

// ---------------------------------------------------------------------------------------------------------
// Events
// ---------------------------------------------------------------------------------------------------------

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
  /** Normalized sequencer (see {@link normalizeSequencer}); orders events of the same key. */
  readonly sequencer: string;
  /** When S3 processed the request, epoch ms. */
  readonly eventTime: number;
  /** The transport's event name, for logs (`ObjectCreated:Put`, `Object Deleted`). */
  readonly eventName: string;
}

/**
 * Width sequencers are padded to. S3 sequencers are hex strings of varying length (16–18 digits seen);
 * AWS says to left-pad the shorter with zeros and compare lexicographically. A fixed width lets DynamoDB
 * compare them as plain strings in condition expressions.
 */
export const SEQUENCER_WIDTH = 32;

/**
 * Upper-cases and left-pads a sequencer to {@link SEQUENCER_WIDTH} hex digits, so that string order is
 * event order for one key (AWS: "left pad the shorter value with zeros, and then do a lexicographical
 * comparison"; https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-content-structure.html).
 * @throws InvalidInputError when it is not hex or longer than the width.
 */
export function normalizeSequencer(raw: string): string {
  if (!/^[0-9A-Fa-f]{1,32}$/.test(raw)) {
    throw new InvalidInputError(
      `S3 sequencer "${raw}" is not 1-${SEQUENCER_WIDTH} hex digits; the record is not an S3 object event and is not counted`,
    );
  }
  return raw.toUpperCase().padStart(SEQUENCER_WIDTH, '0');
}

const isoTime = z.string().refine((s) => Number.isFinite(Date.parse(s)), 'an ISO-8601 time');

const s3RecordSchema = z.object({
  eventSource: z.literal('aws:s3'),
  eventName: z.string(),
  eventTime: isoTime,
  s3: z.object({
    bucket: z.object({ name: z.string().min(1) }),
    object: z.object({
      key: z.string().min(1),
      size: z.number().int().nonnegative().optional(),
      eTag: z.string().optional(),
      versionId: z.string().nullish(),
      sequencer: z.string().optional(),
    }),
  }),
});

const eventBridgeSchema = z.object({
  source: z.literal('aws.s3'),
  'detail-type': z.string(),
  time: isoTime,
  detail: z.object({
    bucket: z.object({ name: z.string().min(1) }),
    object: z.object({
      key: z.string().min(1),
      size: z.number().int().nonnegative().optional(),
      etag: z.string().optional(),
      'version-id': z.string().nullish(),
      sequencer: z.string().optional(),
    }),
    'deletion-type': z.string().optional(),
  }),
});

/** What one queue message held: object events, or nothing to count (S3's test event, other event types). */
export interface ParsedMessage {
  readonly events: readonly ObjectEvent[];
  /** Records that are valid but carry no object change we count (restores, tagging, `s3:TestEvent`). */
  readonly skipped: readonly string[];
}

/**
 * Parses one SQS message body: an S3 notification (`{"Records":[...]}`), S3's `s3:TestEvent`, or an
 * EventBridge S3 event (when an EventBridge rule targets the same queue).
 * @throws InvalidInputError for anything else, so only this message fails its batch.
 */
export function parseQueueMessage(body: string): ParsedMessage {
  let document: unknown;
  try {
    document = JSON.parse(body);
  } catch (cause) {
    throw new InvalidInputError(
      `Queue message is not JSON (${String(cause)}); only S3 or EventBridge object events belong on this queue`,
    );
  }
  return parseEventDocument(document);
}

/** Parses an already-decoded S3 notification, test event or EventBridge event (see {@link parseQueueMessage}). */
export function parseEventDocument(document: unknown): ParsedMessage {
  if (typeof document === 'object' && document !== null) {
    const record = document as Record<string, unknown>;
    if (record.Event === 's3:TestEvent') return { events: [], skipped: ['s3:TestEvent'] };
    if (Array.isArray(record.Records)) {
      const events: ObjectEvent[] = [];
      const skipped: string[] = [];
      record.Records.forEach((raw, index) => {
        const event = parseS3Record(raw, index);
        if (typeof event === 'string') skipped.push(event);
        else events.push(event);
      });
      return { events, skipped };
    }
    if (record.source === 'aws.s3' && 'detail-type' in record) {
      const event = parseEventBridgeEvent(record);
      return typeof event === 'string' ? { events: [], skipped: [event] } : { events: [event], skipped: [] };
    }
  }
  throw new InvalidInputError(
    'Queue message is neither an S3 notification (Records[]), an s3:TestEvent nor an EventBridge aws.s3 event; remove it from the queue',
  );
}

function issues(error: z.ZodError): string[] {
  return error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`);
}

/** One S3 notification record → an event, or a string saying why it is not counted. */
export function parseS3Record(raw: unknown, index = 0): ObjectEvent | string {
  const parsed = s3RecordSchema.safeParse(raw);
  if (!parsed.success) {
    throw new InvalidInputError(`S3 notification record #${index} is malformed`, issues(parsed.error));
  }
  const record = parsed.data;
  const kind = record.eventName.startsWith('ObjectCreated:')
    ? 'created'
    : record.eventName.startsWith('ObjectRemoved:')
      ? 'removed'
      : undefined;
  if (kind === undefined) return `${record.eventName} does not change what a key holds`;
  const object = record.s3.object;
  return buildEvent({
    bucket: record.s3.bucket.name,
    rawKey: object.key,
    kind,
    size: object.size,
    etag: object.eTag,
    versionId: object.versionId ?? undefined,
    versionDelete: record.eventName === 'ObjectRemoved:Delete' && Boolean(object.versionId),
    sequencer: object.sequencer,
    eventTime: Date.parse(record.eventTime),
    eventName: record.eventName,
  });
}

/**
 * One EventBridge S3 event → an event. Keys are decoded like notification keys (S3 URL-encodes them in
 * both transports; decoding a key without escapes is the identity).
 */
export function parseEventBridgeEvent(raw: unknown): ObjectEvent | string {
  const parsed = eventBridgeSchema.safeParse(raw);
  if (!parsed.success) throw new InvalidInputError('EventBridge S3 event is malformed', issues(parsed.error));
  const event = parsed.data;
  const detailType = event['detail-type'];
  const kind =
    detailType === 'Object Created' ? 'created' : detailType === 'Object Deleted' ? 'removed' : undefined;
  if (kind === undefined) return `${detailType} does not change what a key holds`;
  const object = event.detail.object;
  return buildEvent({
    bucket: event.detail.bucket.name,
    rawKey: object.key,
    kind,
    size: object.size,
    etag: object.etag,
    versionId: object['version-id'] ?? undefined,
    versionDelete: event.detail['deletion-type'] === 'Permanently Deleted' && Boolean(object['version-id']),
    sequencer: object.sequencer,
    eventTime: Date.parse(event.time),
    eventName: detailType,
  });
}

function buildEvent(input: {
  bucket: string;
  rawKey: string;
  kind: 'created' | 'removed';
  size: number | undefined;
  etag: string | undefined;
  versionId: string | undefined;
  versionDelete?: boolean;
  sequencer: string | undefined;
  eventTime: number;
  eventName: string;
}): ObjectEvent {
  const key = decodeS3EventKey(input.rawKey);
  if (input.sequencer === undefined) {
    throw new InvalidInputError(
      `${input.eventName} for s3://${input.bucket}/${key} has no sequencer, so it cannot be ordered; it is not counted (redrive it after checking the producer)`,
    );
  }
  if (input.kind === 'created' && input.size === undefined) {
    throw new InvalidInputError(`${input.eventName} for s3://${input.bucket}/${key} has no object size`);
  }
  return {
    bucket: input.bucket,
    key,
    kind: input.kind,
    ...(input.kind === 'created' ? { size: input.size } : {}),
    ...(input.etag ? { etag: input.etag.replaceAll('"', '') } : {}),
    ...(input.versionId ? { versionId: input.versionId } : {}),
    ...(input.kind === 'removed' && input.versionDelete ? { versionDelete: true } : {}),
    sequencer: normalizeSequencer(input.sequencer),
    eventTime: input.eventTime,
    eventName: input.eventName,
  };
}

// ---------------------------------------------------------------------------------------------------------
// Resolution: event → table, partition, file
// ---------------------------------------------------------------------------------------------------------

/** A partition's identity: table name + raw partition path ('' when unpartitioned). */
export interface PartitionRef {
  readonly table: string;
  readonly partition: string;
}

/** The string that identifies a partition in maps and keys. */
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

/** A Delta log or Iceberg metadata write inside a configured table: that table (or part) is not plain Parquet. */
export interface ForeignFormatEvent {
  readonly kind: 'foreign';
  readonly table: string;
  readonly format: ForeignFormat;
  /** The foreign table's root relative to the configured table's root: '' = all of it, else ending with `/`. */
  readonly root: string;
  readonly bucket: string;
  readonly key: string;
  readonly eventTime: number;
}

export type Resolution =
  | { readonly kind: 'data'; readonly event: ResolvedEvent }
  | ForeignFormatEvent
  | { readonly kind: 'ignored'; readonly reason: string };

/**
 * Places an event in the table that owns its key. Ignored: keys outside every table, and non-data objects
 * by name (markers, logs, hidden, non-Parquet). A create too small to be Parquet (zero-byte marker) counts
 * as a removal: the key no longer holds a data file, which keeps an overwrite-with-empty exact. A Delta log
 * or Iceberg metadata key (a commit of such a table) is not ignored but resolves to `foreign`, so the
 * table's partitions under that root are never scheduled as plain Parquet.
 */
export function resolveEvent(
  tables: readonly TableConfig[],
  policies: ReadonlyMap<string, Policy>,
  event: ObjectEvent,
): Resolution {
  const table = findTableForKey(tables, event.bucket, event.key);
  if (table === undefined) return { kind: 'ignored', reason: 'outside every configured table' };
  const foreign = foreignFormatOfKey(relativeToRoot(event.key, table.prefix) ?? event.key);
  if (foreign !== undefined && foreign.format !== table.format) {
    return {
      kind: 'foreign',
      table: table.name,
      format: foreign.format,
      root: foreign.root,
      bucket: event.bucket,
      key: event.key,
      eventTime: event.eventTime,
    };
  }
  const parsed = parsePartition(event.key, table.prefix);
  if (parsed === undefined) return { kind: 'ignored', reason: `names no file under table ${table.name}` };
  // Deletes carry no size: classify by name only (a size that passes the size checks).
  const byName = classifyObject({ key: event.key, size: MIN_PARQUET_BYTES, tableRoot: table.prefix });
  if (byName.kind === 'ignored') return { kind: 'ignored', reason: byName.reason };
  const policy = policies.get(table.name);
  if (policy === undefined) {
    throw new InvalidInputError(
      `No policy resolved for table ${table.name}; build the policies from the same table list`,
    );
  }
  const tooSmall = event.kind === 'created' && (event.size ?? 0) < MIN_PARQUET_BYTES;
  const kind = tooSmall ? 'removed' : event.kind;
  const partitionDate =
    table.dateFormat === undefined
      ? undefined
      : partitionDateFromValues(parsed.values, {
          format: table.dateFormat,
          ...(table.dateColumn === undefined ? {} : { column: table.dateColumn }),
        });
  const { size: _size, ...rest } = event;
  return {
    kind: 'data',
    event: {
      ...rest,
      kind,
      ...(kind === 'created'
        ? {
            size: event.size,
            small: isSmallFile(event.size ?? 0, policy.targetFileSizeBytes, policy.smallFileSizeRatio),
          }
        : {}),
      ref: { table: table.name, partition: parsed.partitionPath },
      fileId: `${event.bucket}/${event.key}`,
      values: parsed.values,
      ...(partitionDate === undefined ? {} : { partitionDate }),
    },
  };
}

/**
 * Keeps, per file, only the event with the greatest sequencer. A key's state after any set of events is
 * the state its latest event says, so earlier events of the same key in one batch change nothing.
 */
export function latestPerFile<E extends { readonly fileId: string; readonly sequencer: string }>(
  events: readonly E[],
): Map<string, E> {
  const latest = new Map<string, E>();
  for (const event of events) {
    const seen = latest.get(event.fileId);
    if (seen === undefined || event.sequencer > seen.sequencer) latest.set(event.fileId, event);
  }
  return latest;
}

// ---------------------------------------------------------------------------------------------------------
// Accounting
// ---------------------------------------------------------------------------------------------------------

/** A file as the stats store remembers it: the state its latest applied event gave it. */
export interface FileRecord {
  readonly fileId: string;
  readonly present: boolean;
  readonly size: number;
  readonly small: boolean;
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

/** Additive change of a partition's counters. */
export interface CounterDelta {
  fileCount: number;
  totalBytes: number;
  smallCount: number;
  smallBytes: number;
  /** One entry per SIZE_BUCKETS bucket. */
  histogram: number[];
}

/** The SIZE_BUCKETS index of a file of `size` bytes. */
export function sizeBucket(size: number): number {
  const index = SIZE_BUCKETS.findIndex((b) => b.upperBytes === null || size < b.upperBytes);
  return index < 0 ? SIZE_BUCKETS.length - 1 : index;
}

export function emptyDelta(): CounterDelta {
  return { fileCount: 0, totalBytes: 0, smallCount: 0, smallBytes: 0, histogram: SIZE_BUCKETS.map(() => 0) };
}

export function isZeroDelta(delta: CounterDelta): boolean {
  return (
    delta.fileCount === 0 &&
    delta.totalBytes === 0 &&
    delta.smallCount === 0 &&
    delta.smallBytes === 0 &&
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

// ---------------------------------------------------------------------------------------------------------
// Partition state and the trigger
// ---------------------------------------------------------------------------------------------------------

export interface Lease {
  /** The run id the workflow journals under; equals the execution name. */
  readonly runId: string;
  readonly executionName: string;
  /** Undefined when no state machine is configured. */
  readonly executionArn?: string;
  readonly acquiredAt: number;
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
 * kept failing, e.g. AccessDenied), or the run found a cause only a person can fix. No trigger starts a run
 * on it; an operator fixes the cause, then starts a settle run (`"settle": true`).
 */
export interface Attention {
  readonly reason: string;
  /** The run that could not settle it. */
  readonly runId: string;
  readonly since: number;
}

/** A partition's stored statistics and trigger state. */
export interface PartitionSnapshot extends PartitionRef {
  readonly fileCount: number;
  readonly totalBytes: number;
  readonly smallCount: number;
  readonly smallBytes: number;
  /** Counts per SIZE_BUCKETS bucket. */
  readonly histogram: readonly number[];
  readonly firstWriteAt?: number;
  readonly lastWriteAt?: number;
  /**
   * `idle` → `scheduled` (profiler/sweep) → `compacting` (a run holds the lease) → `idle`; or
   * `needs-attention` when a run could not settle it (see {@link Attention}).
   */
  readonly state: PartitionState['state'];
  /** Set while `needs-attention`. */
  readonly attention?: Attention;
  /** Incremented on every schedule; part of the execution name. */
  readonly generation: number;
  readonly lastCompactedAt?: number;
  readonly lease?: Lease;
  readonly partitionDate?: number;
  /** Bumped by every change of counters or write times: decisions are only stored against the newest. */
  readonly version: number;
  readonly lastDecision?: DecisionSummary;
  /** When the sweep should look again (epoch ms); undefined when only new events can change the verdict. */
  readonly dueAt?: number;
}

/** The policy's view of a snapshot. */
export function toPartitionState(snapshot: PartitionSnapshot): PartitionState {
  return {
    fileCount: snapshot.fileCount,
    totalBytes: snapshot.totalBytes,
    smallFileCount: snapshot.smallCount,
    smallFileBytes: snapshot.smallBytes,
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
  const hash = createHash('sha256').update(`${ref.table}\u0000${ref.partition}`).digest('hex').slice(0, 12);
  const suffix = `-${hash}-g${generation}`;
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

// ---------------------------------------------------------------------------------------------------------
// Orchestration over the ports: profile a batch, evaluate a partition, sweep, reconcile
// ---------------------------------------------------------------------------------------------------------

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFn = (level: LogLevel, message: string, data?: Record<string, unknown>) => void;

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
   * Triggers in dry-run: every verdict is recorded (and shown by `status`) but no execution is started, so a
   * team can watch what would be compacted before letting it write. The starter is still used to recover
   * leases of runs operators start from the console. A due partition stays due, so nothing repeats.
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
   * Caps on running compactions per table and per deployment. A schedule is counted in the same write that
   * takes the partition, so concurrent profilers and the sweep never exceed them; a capped partition is
   * recorded as waiting and stays due. Absent: runs are counted but never refused (tests, tools).
   */
  readonly runCaps?: RunCaps;
}

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

const NO_STARTER = 'not started: no state machine configured (STATE_MACHINE_ARN unset)';
const DRY_RUN =
  'not started: triggers are in dry-run (TRIGGERS_DRY_RUN); start it from the console, or turn dry-run off';

function policyOf(deps: TriggerDeps, table: string): Policy {
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
  const decision = decided.compact ? await unlessForeignFormat(deps, ref, decided) : decided;
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
 * The decision, blocked when a Delta or Iceberg table was seen in the partition's table at a root covering
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

async function startScheduled(
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
  const applied = await deps.stats.applyEvents(group);
  const times = group.map((e) => e.eventTime);
  const snapshot = await deps.stats.touch(first.ref, {
    lastWriteAt: Math.max(...times),
    firstWriteAt: Math.min(...times),
    ...(first.partitionDate === undefined ? {} : { partitionDate: first.partitionDate }),
  });
  const outcome = await evaluatePartition(deps, snapshot, now);
  return { ok: true, outcome, applied: applied.applied, stale: applied.stale };
}

export interface SweepOptions {
  /** A lease younger than this is not checked (its start may be in flight). @default 5 minutes */
  readonly leaseGraceMs?: number;
}

export interface SweepReport {
  readonly table: string;
  readonly due: readonly TriggerOutcome[];
  /** Leases whose execution had ended (or never started) and were released or restarted. */
  readonly leases: readonly { readonly ref: PartitionRef; readonly action: string }[];
  /** Partitions of the table that are needs-attention after this sweep. */
  readonly needingAttention: number;
}

/**
 * The scheduled catch-up: evaluates every partition whose due time has passed (their quiet window or
 * cooldown is over, or a start is pending) and checks every lease older than the grace period — an
 * execution that never started is started under its name; one that ended without releasing its lease is
 * released (a success also sets lastCompactedAt) and the partition is evaluated again. Due partitions are
 * started oldest first until a run cap is reached; the rest are recorded as waiting for the next sweep.
 */
export async function sweepTable(
  deps: TriggerDeps,
  table: string,
  now: number,
  options: SweepOptions = {},
): Promise<SweepReport> {
  const log = deps.log ?? (() => undefined);
  const due: TriggerOutcome[] = [];
  // Oldest due first (the index order), so partitions a cap kept waiting are started first once slots free.
  const gate: CapGate = {};
  for (const ref of await deps.stats.listDue(table, now)) {
    // The index is eventually consistent: decide on the item itself.
    const snapshot = await deps.stats.get(ref);
    if (snapshot !== undefined) due.push(await evaluatePartition(deps, snapshot, now, gate));
  }
  const leases: { ref: PartitionRef; action: string }[] = [];
  const grace = options.leaseGraceMs ?? 5 * 60_000;
  const starter = deps.starter;
  for (const leased of await deps.stats.listLeased(table)) {
    const lease = leased.lease;
    if (starter === undefined || lease === undefined || now - lease.acquiredAt < grace) continue;
    const ref = { table: leased.table, partition: leased.partition };
    const arn = lease.executionArn ?? starter.executionArn(lease.executionName);
    const info = await starter.describe(arn);
    if (info !== undefined && !executionEnded(info, now)) continue;
    // A scheduled run whose start was lost is started again — unless triggers are in dry-run (then the
    // lease is released below, and the partition waits, recorded as due, like every other).
    if (info === undefined && leased.state === 'scheduled' && deps.dryRun !== true) {
      const decision: Decision = { compact: true, reasons: leased.lastDecision?.reasons ?? [] };
      const outcome = await startScheduled(deps, starter, ref, lease, leased.generation, decision);
      leases.push({ ref, action: `restart ${outcome.action}` });
      continue;
    }
    // Fence rule: settle what the dead run left before letting the partition go; a group that cannot be
    // settled makes it needs-attention instead of idle. A settle that fails outright keeps the lease for
    // the next sweep.
    let settled: SettleOutcome = { settled: 0, unsettled: [], completed: false };
    if (deps.settle !== undefined) {
      try {
        settled = await deps.settle(ref, lease.runId);
      } catch (err) {
        log('error', 'could not settle the partition of an ended execution; the next sweep retries', {
          ...ref,
          runId: lease.runId,
          error: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
        });
        leases.push({ ref, action: 'kept (settle failed)' });
        continue;
      }
    }
    const attention =
      settled.unsettled.length === 0
        ? undefined
        : {
            reason: `${settled.unsettled.length} group(s) left by run ${lease.runId} could not be settled: ${settled.unsettled.map((u) => u.replace(/\.+$/, '')).join('; ')}. Listing readers may see some rows twice until they are.`,
            runId: lease.runId,
            since: now,
          };
    const released = await deps.stats.release(ref, leased.generation, {
      ...(info?.status === 'SUCCEEDED' || settled.completed
        ? { lastCompactedAt: info?.stoppedAt ?? now }
        : {}),
      ...(attention === undefined ? {} : { attention }),
    });
    log('warn', 'released a lease whose execution is no longer running', {
      ...ref,
      generation: leased.generation,
      status: info?.status ?? 'NOT_FOUND',
      released,
      settledGroups: settled.settled,
      ...(attention === undefined ? {} : { needsAttention: attention.reason }),
    });
    leases.push({
      ref,
      action: `${attention === undefined ? 'released' : 'needs-attention'} (${info?.status ?? 'NOT_FOUND'}${settled.settled > 0 ? `, ${settled.settled} group(s) settled` : ''})`,
    });
    const fresh = released ? await deps.stats.get(ref) : undefined;
    if (fresh !== undefined) due.push(await evaluatePartition(deps, fresh, now));
  }
  const needingAttention = (await deps.stats.listNeedingAttention(table)).length;
  return { table, due, leases, needingAttention };
}

export interface ReconcileOptions {
  /** Partitions written to more recently than this are skipped (events may be in flight). @default 1 hour */
  readonly settleMs?: number;
}

export interface ReconcileReport {
  readonly table: string;
  readonly partitions: readonly {
    readonly partition: string;
    readonly result: 'ok' | 'corrected' | 'busy' | 'recent';
    readonly stored?: { readonly fileCount: number; readonly totalBytes: number };
    readonly listed: { readonly fileCount: number; readonly totalBytes: number };
  }[];
}

/**
 * Corrects drift from lost events: lists the table (the listing is the truth), and for every partition
 * whose stored counters differ and that has been quiet for `settleMs`, repairs the listed files' records
 * and overwrites the counters — conditioned on the partition not changing meanwhile. A partition the
 * listing no longer has is zeroed the same way. A Delta log or Iceberg metadata in the listing is recorded
 * as a foreign-format marker first, as its commit events would have been.
 */
export async function reconcileTable(
  deps: TriggerDeps,
  store: ObjectStore,
  table: TableConfig,
  now: number,
  options: ReconcileOptions = {},
): Promise<ReconcileReport> {
  const policy = policyOf(deps, table.name);
  const bucket = table.bucket;
  if (bucket === undefined) {
    throw new InvalidInputError(`Table "${table.name}" names no bucket; reconcile needs the bucket to list`);
  }
  const settle = options.settleMs ?? 60 * 60_000;
  const rootDir = table.prefix === '' ? '' : `${table.prefix}/`;
  const inventory = await inventoryTable(store, rootDir, { now });
  // A Delta or Iceberg table the listing met (one that predates the deployment sends no commit event):
  // recorded before any partition is re-decided below, so none of its partitions is scheduled.
  for (const found of inventory.foreignTables) {
    await deps.stats.markForeignFormat(table.name, {
      format: found.format,
      root: found.root.startsWith(rootDir) ? found.root.slice(rootDir.length) : '',
      evidenceKey: found.evidenceKey,
      seenAt: now,
    });
  }
  const stored = new Map((await deps.stats.listPartitions(table.name)).map((s) => [s.partition, s]));
  const listed = new Map(inventory.partitions.map((p) => [p.partition, p]));
  const names = [...new Set([...listed.keys(), ...stored.keys()])].sort();
  const partitions: ReconcileReport['partitions'][number][] = [];
  for (const partition of names) {
    const files = (listed.get(partition)?.files ?? []).map((f) => ({
      fileId: `${bucket}/${f.key}`,
      size: f.size,
      small: isSmallFile(f.size, policy.targetFileSizeBytes, policy.smallFileSizeRatio),
      ...(f.etag === '' ? {} : { etag: f.etag }),
      eventTime: now,
    }));
    const snapshot = stored.get(partition);
    const listedTotals = { fileCount: files.length, totalBytes: files.reduce((n, f) => n + f.size, 0) };
    const smallCount = files.filter((f) => f.small).length;
    const storedTotals =
      snapshot === undefined ? undefined : { fileCount: snapshot.fileCount, totalBytes: snapshot.totalBytes };
    const entry = {
      partition,
      listed: listedTotals,
      ...(storedTotals === undefined ? {} : { stored: storedTotals }),
    };
    const agrees =
      snapshot !== undefined &&
      snapshot.fileCount === listedTotals.fileCount &&
      snapshot.totalBytes === listedTotals.totalBytes &&
      snapshot.smallCount === smallCount;
    if (agrees) {
      partitions.push({ ...entry, result: 'ok' });
      continue;
    }
    if (snapshot?.lastWriteAt !== undefined && now - snapshot.lastWriteAt < settle) {
      partitions.push({ ...entry, result: 'recent' });
      continue;
    }
    const values = listed.get(partition)?.values ?? [];
    const partitionDate =
      table.dateFormat === undefined
        ? undefined
        : partitionDateFromValues(values, {
            format: table.dateFormat,
            ...(table.dateColumn === undefined ? {} : { column: table.dateColumn }),
          });
    const result = await deps.stats.reconcile({ table: table.name, partition }, files, snapshot?.version, {
      ...(partitionDate === undefined ? {} : { partitionDate }),
    });
    (deps.log ?? (() => undefined))(
      result.kind === 'corrected' ? 'warn' : 'info',
      `reconcile: ${result.kind}`,
      {
        table: table.name,
        partition,
        stored: storedTotals,
        listed: listedTotals,
      },
    );
    partitions.push({ ...entry, result: result.kind === 'unchanged' ? 'ok' : result.kind });
    if (result.kind === 'corrected') {
      // Decide on the corrected counts at once, so the partition is due (or not) without waiting for an event.
      const corrected = await deps.stats.get({ table: table.name, partition });
      if (corrected !== undefined) await evaluatePartition(deps, corrected, now);
    }
  }
  return { table: table.name, partitions };
}
