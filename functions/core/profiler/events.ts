// S3 notifications and EventBridge S3 events → object changes, ordered per key by a normalized sequencer and
// placed in their table, partition and file; anything else is refused with a reason (or ignored, with one).
import { z } from 'zod';
import { InvalidInputError } from '../errors.js';
import { type ForeignFormat, foreignFormatOfKey } from '../formats/foreign-tables.js';
import { TABLE_FORMATS } from '../formats/index.js';
import {
  classifyObject,
  decodeS3EventKey,
  MIN_PARQUET_BYTES,
  type PartitionValue,
  parsePartition,
  relativeToRoot,
} from '../partition.js';
import { isSmallUnderPolicy, type Policy, partitionDateFromValues } from '../policy.js';
import { findTableForKey, type TableConfig } from '../table-config.js';
import type { ObjectEvent, ResolvedEvent } from './model.js';

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

/** A foreign table's log or metadata write inside a configured table: that table (or part) is not plain Parquet. */
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

/**
 * A commit of a log-based table's log (`<version>.json`), or a nudge to read its catalog pointer
 * (a metadata file: `version` is the number its name carries, see `CommitLogChanges.eventVersions`): the
 * table changed by what the log or the new snapshots say, which the profiler reads (table-log.ts); the object
 * itself is no data file.
 */
export interface CommitEvent {
  readonly kind: 'commit';
  readonly table: string;
  readonly version: number;
  readonly bucket: string;
  readonly key: string;
  /** When S3 stored the commit, epoch ms: the commit's time for the quiet window. */
  readonly eventTime: number;
}

export type Resolution =
  | { readonly kind: 'data'; readonly event: ResolvedEvent }
  | ForeignFormatEvent
  | CommitEvent
  | { readonly kind: 'ignored'; readonly reason: string };

/**
 * Places an event in the table that owns its key. Ignored: keys outside every table, and non-data objects
 * by name (markers, logs, hidden, non-Parquet). A create too small to be Parquet (zero-byte marker) counts
 * as a removal: the key no longer holds a data file, which keeps an overwrite-with-empty exact. A foreign
 * table's log or metadata key (a commit of such a table) is not ignored but resolves to `foreign`, so the
 * table's partitions under that root are never scheduled as plain Parquet.
 */
export function resolveEvent(
  tables: readonly TableConfig[],
  policies: ReadonlyMap<string, Policy>,
  event: ObjectEvent,
): Resolution {
  const table = findTableForKey(tables, event.bucket, event.key);
  if (table === undefined) return { kind: 'ignored', reason: 'outside every configured table' };
  const relative = relativeToRoot(event.key, table.prefix) ?? event.key;
  const foreign = foreignFormatOfKey(relative);
  if (foreign !== undefined && TABLE_FORMATS.get(table.format)?.isOwnMetadataWrite(relative) !== true) {
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
  const changes = TABLE_FORMATS.get(table.format)?.changes;
  if (changes?.kind === 'commit-log') {
    // Only the log says what changed: a commit is read, everything else (data files too) is not a change.
    const role = changes.roleOf(relative, event.kind);
    if (role.kind === 'ignored') return { kind: 'ignored', reason: role.reason };
    return {
      kind: 'commit',
      table: table.name,
      version: role.version,
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
  const partitionDate = partitionDateOf(table, parsed.values);
  const { size: _size, ...rest } = event;
  return {
    kind: 'data',
    event: {
      ...rest,
      kind,
      ...(kind === 'created'
        ? {
            size: event.size,
            small: isSmallUnderPolicy(event.size ?? 0, policy),
          }
        : {}),
      ref: { table: table.name, partition: parsed.partitionPath },
      fileId: `${event.bucket}/${event.key}`,
      values: parsed.values,
      ...(partitionDate === undefined ? {} : { partitionDate }),
    },
  };
}

/** The partition's date from its values, when the table names a date format (for the look-back check). */
export function partitionDateOf(
  table: Pick<TableConfig, 'dateFormat' | 'dateColumn'>,
  values: readonly PartitionValue[],
): number | undefined {
  return table.dateFormat === undefined
    ? undefined
    : partitionDateFromValues(values, {
        format: table.dateFormat,
        ...(table.dateColumn === undefined ? {} : { column: table.dateColumn }),
      });
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
