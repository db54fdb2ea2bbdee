// The StatsStore port on DynamoDB (single table): a batch's file records for one partition are one new segment
// item, listed by the partition item in the same conditional write that adds their delta, so counts stay exact.
import { randomUUID } from 'node:crypto';
import {
  ConditionalCheckFailedException,
  type DynamoDBClient,
  TransactionCanceledException,
} from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  type BatchGetCommandOutput,
  DeleteCommand,
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  type QueryCommandInput,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { TransientStoreError } from '../core/errors.js';
import { type ForeignFormatMarker, isForeignFormat } from '../core/formats/foreign-tables.js';
import type { ChangeCursor } from '../core/formats/table-format.js';
import { type CounterDelta, emptyDelta, planAccounting, sizeBucket } from '../core/profiler/accounting.js';
import { latestPerFile, SEQUENCER_WIDTH } from '../core/profiler/events.js';
import {
  type DecisionSummary,
  type FileRecord,
  type Lease,
  type PartitionRef,
  type PartitionSnapshot,
  partitionId,
  type ReleasePatch,
  type ResolvedEvent,
  type SettleRetry,
} from '../core/profiler/model.js';
import type { RunCapReached, RunLimits } from '../core/run-caps.js';
import { SIZE_BUCKETS } from '../core/stats.js';
import type {
  ApplyResult,
  BatchApplyResult,
  ListedFile,
  ReconcileResult,
  RunCountReport,
  StatsStore,
  TouchInput,
} from '../ports/stats-store.js';
import {
  ATTENTION_PREFIX,
  DECISION_PREFIX,
  dueRange,
  FORMAT_PREFIX,
  gsiSortKey,
  LEASE_PREFIX,
  refFromPartitionKey,
  statsKeys,
} from './dynamodb-keys.js';
import {
  capReachedOf,
  countInItems,
  countOutItems,
  failedAt,
  isInvalid,
  mustWait,
  runCountKeys,
  SLOT_INDEX,
  slotCheckItem,
} from './dynamodb-run-counts.js';
import {
  currentState,
  decodeSegment,
  encodeSegment,
  planSegments,
  SEGMENT_PREFIX,
  type Segment,
  segmentId,
} from './dynamodb-segments.js';
import {
  countedState,
  decisionFromPlain,
  type FileItem,
  fileFromItem,
  num,
  plainFromAttributes,
  type StoredFile,
  snapshotFromItem,
  storedFromItem,
  writersOf,
} from './dynamodb-stats-items.js';

const DAY_SECONDS = 86_400;
/** Most items one TransactWriteItems may hold. */
const MAX_TRANSACTION_ITEMS = 100;
const MAX_ATTEMPTS = 12;
/** Segment items written or deleted at once (their writes are independent; this bounds sockets, not cost). */
const PUT_CONCURRENCY = 16;
/** Clock skew allowed between a writer's deadline check and a reader's: a writer is dead this long after it. */
export const WRITER_SKEW_MS = 30_000;
/**
 * How long a writer of the per-file write path (before segments) could take from registering to committing: its
 * registrations, still read on partitions written before segments, name deadlines this far after they were made,
 * and the profiler's queue must not redeliver a batch before such a dead writer's deadline plus the skew has lapsed
 * (its template is checked against both).
 */
export const DEFAULT_WRITER_LEASE_MS = 90_000;

/** The partition item's `files` value once every record of the partition is in its segments (no per-file items). */
const SEGMENTS_MARK = 'segments';
/** An unlisted segment older than this is a leftover (a batch lives at most the profiler's Lambda timeout). */
const STRAY_SEGMENT_MS = 3_600_000;
/** Segments a store instance remembers (~a few MB at most: a segment is ≤ 300 KB and most are a few KB). */
const SEGMENT_CACHE_ENTRIES = 2_048;
/** Attempts of one partition's batch against concurrent batches on the same partition (each re-plans). */
const SEGMENT_ATTEMPTS = 24;

/** What a batch reads of its partition before planning. */
interface PartitionRead {
  readonly exists: boolean;
  readonly version: number | undefined;
  readonly lastWriteAt: number | undefined;
  /** Written before segments: a file in no segment may still have a per-file item. */
  readonly legacy: boolean;
  /** The listed segments, oldest first. */
  readonly segments: readonly Segment[];
}

/** Whether a record held in another partition than `ref` (the file moved: a changed table config). */
function movedFrom(expected: FileRecord | undefined, ref: PartitionRef): boolean {
  return expected?.present === true && (expected.table !== ref.table || expected.partition !== ref.partition);
}

/** Runs `fn` over `items` with at most `limit` at once; results in input order. */
async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      for (let i = next++; i < items.length; i = next++) results[i] = await fn(items[i] as T);
    }),
  );
  return results;
}

export interface DynamoStatsStoreOptions {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  /**
   * How long a delete's tombstone is kept (TTL), in seconds. It must outlive any late delivery of an older
   * create of the same key: SQS keeps messages at most 14 days, a DLQ redrive restarts that clock once.
   * @default 45 days
   */
  readonly tombstoneSeconds?: number;
  /** Decision items expire after this many seconds. @default 30 days */
  readonly decisionSeconds?: number;
  /** Waits between retries of conflicting transactions (tests shorten it). @default 10 ms base, doubling */
  readonly backoffBaseMs?: number;
  /** The clock of registrations and deadlines (tests move it). @default Date.now */
  readonly now?: () => number;
}

export class DynamoStatsStore implements StatsStore {
  private readonly doc: DynamoDBDocumentClient;
  private readonly tombstoneSeconds: number;
  private readonly decisionSeconds: number;
  private readonly backoffBaseMs: number;
  private readonly now: () => number;
  /** Segments by `pk#id` (immutable once written), most recently used last. */
  private readonly segmentCache = new Map<string, Segment>();

  constructor(private readonly options: DynamoStatsStoreOptions) {
    this.doc = DynamoDBDocumentClient.from(options.client, {
      marshallOptions: { removeUndefinedValues: true },
    });
    this.tombstoneSeconds = options.tombstoneSeconds ?? 45 * DAY_SECONDS;
    this.decisionSeconds = options.decisionSeconds ?? 30 * DAY_SECONDS;
    this.backoffBaseMs = options.backoffBaseMs ?? 10;
    this.now = options.now ?? Date.now;
  }

  private get table(): string {
    return this.options.tableName;
  }

  // ------------------------------------------------------------------------------------------------------
  // Accounting
  // ------------------------------------------------------------------------------------------------------

  async applyEvents(events: readonly ResolvedEvent[]): Promise<ApplyResult> {
    const byPartition = new Map<string, ResolvedEvent[]>();
    for (const event of events) {
      const id = partitionId(event.ref);
      const list = byPartition.get(id) ?? [];
      list.push(event);
      byPartition.set(id, list);
    }
    let applied = 0;
    let stale = 0;
    let retries = 0;
    for (const group of byPartition.values()) {
      const result = await this.applyPartition((group[0] as ResolvedEvent).ref, group, undefined);
      applied += result.applied;
      stale += result.stale;
      retries += result.retries;
    }
    return { applied, stale, retries };
  }

  async applyBatch(
    ref: PartitionRef,
    events: readonly ResolvedEvent[],
    touch: TouchInput,
  ): Promise<BatchApplyResult> {
    const result = await this.applyPartition(ref, events, touch);
    return { ...result, snapshot: result.snapshot ?? (await this.touch(ref, touch)) };
  }

  /**
   * Applies one partition's events as one conditional write of the partition item: read the partition item (its
   * version and the segments it lists) and those segments, plan the batch against each key's state there, put
   * the batch's records as one new segment item (unlisted, so no reader sees it yet), then list it, add the
   * delta and move the write times in one update conditioned on the version read. A concurrent batch on the
   * same partition makes that update fail: this one deletes its segment, reads again and re-plans. A crash
   * before the update leaves only an unlisted segment (never read; reconcile deletes it), so counts never see
   * half a batch. No transaction: one write unit per started KB of the new segment plus one for the partition.
   * Files that moved here from another partition (a changed table config, only visible through per-file items
   * of a table written before segments) take one transaction that also takes them off their old partition.
   */
  private async applyPartition(
    ref: PartitionRef,
    events: readonly ResolvedEvent[],
    touch: TouchInput | undefined,
  ): Promise<ApplyResult & { snapshot?: PartitionSnapshot }> {
    const latest = [...latestPerFile(events).values()];
    const duplicates = events.length - latest.length;
    let retries = 0;
    for (let attempt = 0; attempt < SEGMENT_ATTEMPTS; attempt++) {
      const read = await this.readPartition(ref);
      if (read === 'moved') {
        retries += 1;
        continue; // a listed segment was deleted meanwhile: a newer commit, read again
      }
      const known = currentState(read.segments);
      if (read.legacy) {
        const legacy = await this.readCounted(latest.map((e) => e.fileId).filter((id) => !known.has(id)));
        if (legacy.busy) {
          retries += 1;
          await this.backoff(attempt);
          continue;
        }
        for (const [id, record] of legacy.known) known.set(id, record);
      }
      const plan = planAccounting(latest, known);
      const stale = duplicates + plan.stale.length;
      if (plan.writes.length === 0) return { applied: 0, stale, retries };
      const changed = plan.writes.map((w) => w.next);
      const nonce = randomUUID().slice(0, 8);
      const next = (read.version ?? 0) + 1;
      const segments = planSegments(read.segments, changed, this.now() - this.tombstoneSeconds * 1000, (n) =>
        segmentId(next, `${nonce}${n}`),
      );
      const delta = plan.deltas.get(partitionId(ref))?.delta ?? emptyDelta();
      const update = this.segmentCommit(ref, read, segments.listed, next, delta, touch);
      const moved = plan.writes.filter((w) => movedFrom(w.expected, ref));
      try {
        let snapshot: PartitionSnapshot;
        if (moved.length > 0) {
          snapshot = await this.commitMoved(ref, segments.puts, update, moved, plan.deltas);
        } else {
          await mapLimit(segments.puts, PUT_CONCURRENCY, (put) => this.putSegment(ref, put.id, put.records));
          const result = await this.doc.send(new UpdateCommand({ ...update, ReturnValues: 'ALL_NEW' }));
          snapshot = snapshotFromItem(result.Attributes ?? {});
        }
        const pk = statsKeys.partition(ref).pk;
        for (const put of segments.puts) {
          this.cacheSegment(`${pk}#${put.id}`, decodeSegment(put.id, ref, encodeSegment(put.records)));
        }
        await this.deleteSegments(ref, segments.drops);
        return { applied: plan.writes.length, stale, retries, snapshot };
      } catch (err) {
        const lost =
          err instanceof ConditionalCheckFailedException ||
          (err instanceof TransactionCanceledException &&
            !(err.CancellationReasons ?? []).some((r) => r.Code === 'ValidationError'));
        if (!lost) throw err;
        // Another batch committed on this partition since it was read: its segments are what counts now.
        await this.deleteSegments(
          ref,
          segments.puts.map((p) => p.id),
        );
        retries += 1;
        await this.backoff(attempt);
      }
    }
    throw new TransientStoreError(
      `Partition ${partitionId(ref)} stayed contended for ${SEGMENT_ATTEMPTS} attempts; the batch item is retried by SQS`,
    );
  }

  /**
   * The partition item (strongly consistent) and the segments it lists, read after it: a segment is written once
   * and deleted only after a commit unlisted it, so a listed segment that is missing means a newer commit
   * happened ('moved'; the caller reads again). `legacy`: the partition was written before segments, so files
   * not in any segment may still have a per-file item.
   */
  private async readPartition(ref: PartitionRef): Promise<PartitionRead | 'moved'> {
    const item = await this.getItem(statsKeys.partition(ref));
    const ids = Array.isArray(item?.segs) ? item.segs.map(String) : [];
    const pk = statsKeys.partition(ref).pk;
    const found = new Map<string, Segment>();
    for (const id of ids) {
      const cached = this.segmentCache.get(`${pk}#${id}`);
      if (cached !== undefined) found.set(id, cached);
    }
    const missing = ids.filter((id) => !found.has(id));
    for (let i = 0; i < missing.length; i += 100) {
      let keys: Record<string, unknown>[] | undefined = missing
        .slice(i, i + 100)
        .map((id) => ({ pk: statsKeys.partition(ref).pk, sk: `${SEGMENT_PREFIX}${id}` }));
      for (let attempt = 0; keys !== undefined && keys.length > 0; attempt++) {
        const result: BatchGetCommandOutput = await this.doc.send(
          new BatchGetCommand({ RequestItems: { [this.table]: { Keys: keys, ConsistentRead: true } } }),
        );
        for (const raw of result.Responses?.[this.table] ?? []) {
          const id = String(raw.sk).slice(SEGMENT_PREFIX.length);
          const segment = decodeSegment(id, ref, raw);
          found.set(id, segment);
          this.cacheSegment(`${pk}#${id}`, segment);
        }
        keys = result.UnprocessedKeys?.[this.table]?.Keys;
        if (keys !== undefined && keys.length > 0) await this.backoff(attempt);
      }
    }
    const segments: Segment[] = [];
    for (const id of ids) {
      const segment = found.get(id);
      if (segment === undefined) return 'moved';
      segments.push(segment);
    }
    return {
      exists: item !== undefined,
      version: num(item?.version),
      lastWriteAt: num(item?.lastWriteAt),
      legacy: item !== undefined && item.files !== SEGMENTS_MARK,
      segments,
    };
  }

  /**
   * Remembers a segment read or written: a segment item is written once and never changed (only deleted once no
   * partition lists it), so a later batch of this function instance, or a retry after a lost commit, reads only
   * the segments listed since — the retry window and the read units stay small on a hot partition.
   */
  private cacheSegment(key: string, segment: Segment): void {
    this.segmentCache.delete(key);
    this.segmentCache.set(key, segment);
    while (this.segmentCache.size > SEGMENT_CACHE_ENTRIES) {
      const oldest = this.segmentCache.keys().next().value;
      if (oldest === undefined) break;
      this.segmentCache.delete(oldest);
    }
  }

  private async putSegment(ref: PartitionRef, id: string, records: readonly FileRecord[]): Promise<void> {
    await this.doc.send(
      new PutCommand({
        TableName: this.table,
        Item: {
          pk: statsKeys.partition(ref).pk,
          sk: `${SEGMENT_PREFIX}${id}`,
          at: this.now(),
          ...encodeSegment(records),
        },
      }),
    );
  }

  /** Deletes unlisted segments; best effort (a leftover is never read, and reconcile deletes it). */
  private async deleteSegments(ref: PartitionRef, ids: readonly string[]): Promise<void> {
    await Promise.allSettled(
      ids.map((id) =>
        this.doc.send(
          new DeleteCommand({
            TableName: this.table,
            Key: { pk: statsKeys.partition(ref).pk, sk: `${SEGMENT_PREFIX}${id}` },
          }),
        ),
      ),
    );
  }

  /**
   * The partition update of a commit: lists `listed`, sets the version to `next`, adds the delta, moves the
   * write times (forward only: the stored time was read at the version this is conditioned on).
   */
  private segmentCommit(
    ref: PartitionRef,
    read: PartitionRead,
    listed: readonly string[],
    next: number,
    delta: CounterDelta,
    touch: TouchInput | undefined,
  ) {
    const adds = ['fileCount :fc', 'totalBytes :tb', 'smallCount :sc', 'smallBytes :sb'];
    const values: Record<string, unknown> = {
      ...this.staticValues(ref),
      ':fc': delta.fileCount,
      ':tb': delta.totalBytes,
      ':sc': delta.smallCount,
      ':sb': delta.smallBytes,
      ':segs': [...listed],
      ':next': next,
    };
    addDue(adds, values, delta);
    delta.histogram.forEach((n, i) => {
      if (n !== 0) {
        adds.push(`hist${i} :h${i}`);
        values[`:h${i}`] = n;
      }
    });
    const sets = [STATIC_SET, 'segs = :segs', 'version = :next'];
    if (!read.exists) {
      sets.push('#files = :segmentsMark');
      values[':segmentsMark'] = SEGMENTS_MARK;
    }
    if (touch !== undefined) {
      sets.push('firstWriteAt = if_not_exists(firstWriteAt, :first)');
      values[':first'] = touch.firstWriteAt;
      sets.push('lastWriteAt = :last');
      values[':last'] = Math.max(touch.lastWriteAt, read.lastWriteAt ?? touch.lastWriteAt);
      if (touch.partitionDate !== undefined) {
        sets.push('partitionDate = :pdate');
        values[':pdate'] = touch.partitionDate;
      }
    }
    if (read.version !== undefined) values[':version'] = read.version;
    return {
      TableName: this.table,
      Key: statsKeys.partition(ref),
      UpdateExpression: `SET ${sets.join(', ')} ADD ${adds.join(', ')}`,
      ConditionExpression: !read.exists
        ? 'attribute_not_exists(pk)'
        : read.version === undefined
          ? 'attribute_not_exists(version)'
          : 'version = :version',
      ExpressionAttributeNames: { ...STATIC_NAMES, ...(read.exists ? {} : { '#files': 'files' }) },
      ExpressionAttributeValues: values,
    };
  }

  /**
   * A commit that also takes files off the partition their per-file item counted them in (they moved: a changed
   * table config): the new segments, this partition's update, the other partitions' counters and the per-file
   * items (now naming this partition, conditioned on what was read) in one transaction, retried by the caller.
   */
  private async commitMoved(
    ref: PartitionRef,
    puts: readonly { readonly id: string; readonly records: readonly FileRecord[] }[],
    update: ReturnType<DynamoStatsStore['segmentCommit']>,
    moved: readonly { readonly next: FileRecord; readonly expected: FileRecord | undefined }[],
    deltas: ReadonlyMap<string, { readonly ref: PartitionRef; readonly delta: CounterDelta }>,
  ): Promise<PartitionSnapshot> {
    const items = [
      ...puts.map((put) => ({
        Put: {
          TableName: this.table,
          Item: {
            pk: statsKeys.partition(ref).pk,
            sk: `${SEGMENT_PREFIX}${put.id}`,
            at: this.now(),
            ...encodeSegment(put.records),
          },
        },
      })),
      { Update: update },
      ...[...deltas.values()]
        .filter((d) => partitionId(d.ref) !== partitionId(ref))
        .map(({ ref: other, delta }) => ({ Update: this.counterUpdate(other, delta) })),
      ...moved.map((w) => ({ Put: this.filePut(w.next, w.expected) })),
    ];
    if (items.length > MAX_TRANSACTION_ITEMS) {
      throw new TransientStoreError(
        `Partition ${partitionId(ref)}: ${moved.length} files moved from other partitions in one batch, more than one transaction holds; reconcile the table`,
      );
    }
    await this.doc.send(new TransactWriteCommand({ TransactItems: items }));
    const after = await this.get(ref);
    if (after === undefined)
      throw new TransientStoreError(`Partition ${partitionId(ref)} vanished after its commit`);
    return after;
  }
  /** Records of `fileIds` read first, then the registrations of their partitions (order matters: countedState). */
  private async readCounted(fileIds: readonly string[]) {
    const stored = await this.readStored(fileIds);
    const partitions = new Map<string, PartitionRef>();
    for (const file of stored.values()) {
      if (file.pid !== undefined) partitions.set(partitionId(file.record), file.record);
    }
    const writers = new Map<string, Map<string, number>>();
    for (const [id, p] of partitions) writers.set(id, writersOf(await this.getItem(statsKeys.partition(p))));
    return { stored, ...countedState(stored, writers, this.now(), WRITER_SKEW_MS) };
  }

  /** File records as stored (with their writer), strongly consistent. */
  private async readStored(fileIds: readonly string[]): Promise<Map<string, StoredFile>> {
    const found = new Map<string, StoredFile>();
    for (const item of await this.fileItems([...new Set(fileIds)])) {
      const file = storedFromItem(item);
      found.set(file.record.fileId, file);
    }
    return found;
  }

  /** The per-file items of `fileIds` (distinct) that exist, read strongly consistent 100 keys a request. */
  private async fileItems(fileIds: readonly string[]): Promise<FileItem[]> {
    const items: FileItem[] = [];
    for (let i = 0; i < fileIds.length; i += 100) {
      let keys: Record<string, unknown>[] | undefined = fileIds
        .slice(i, i + 100)
        .map((id) => statsKeys.file(id));
      for (let attempt = 0; keys !== undefined && keys.length > 0; attempt++) {
        const result: BatchGetCommandOutput = await this.doc.send(
          new BatchGetCommand({ RequestItems: { [this.table]: { Keys: keys, ConsistentRead: true } } }),
        );
        for (const item of result.Responses?.[this.table] ?? []) items.push(item as FileItem);
        keys = result.UnprocessedKeys?.[this.table]?.Keys;
        if (keys !== undefined && keys.length > 0) await this.backoff(attempt);
      }
    }
    return items;
  }

  /**
   * A file record's put, conditioned on the store holding `expected`; with `expectedPid` (a string, or null
   * for none) also on the writer that wrote it, so a record rewritten with the same content is not mistaken.
   */
  private filePut(next: FileRecord, expected: FileRecord | undefined, expectedPid?: string | null) {
    const item: FileItem = {
      ...statsKeys.file(next.fileId),
      present: next.present,
      size: next.size,
      small: next.small,
      ...(next.due === true ? { due: true } : {}),
      sizeBucket: next.bucket,
      seq: next.sequencer,
      table: next.table,
      partition: next.partition,
      ...(next.etag === undefined ? {} : { etag: next.etag }),
      ...(next.versionId === undefined ? {} : { versionId: next.versionId }),
      eventTime: next.eventTime,
      // Tombstones expire; a present file's record lives as long as the file.
      ...(next.present ? {} : { expiresAt: Math.floor(next.eventTime / 1000) + this.tombstoneSeconds }),
    };
    return {
      TableName: this.table,
      Item: item,
      ...this.expectCondition(expected, expectedPid),
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
    };
  }

  /** The condition that the store still holds exactly `expected` (content, not only the sequencer). */
  private expectCondition(expected: FileRecord | undefined, expectedPid?: string | null) {
    if (expected === undefined) return { ConditionExpression: 'attribute_not_exists(pk)' };
    const pid =
      expectedPid === undefined
        ? ''
        : expectedPid === null
          ? ' AND attribute_not_exists(pid)'
          : ' AND pid = :epid';
    return {
      // A record written before `due` existed has none: false.
      ConditionExpression: `seq = :eseq AND present = :epresent AND #size = :esize AND small = :esmall AND ${expected.due === true ? 'due = :edue' : '(attribute_not_exists(due) OR due = :edue)'} AND #partition = :epart${pid}`,
      ExpressionAttributeNames: { '#size': 'size', '#partition': 'partition' },
      ExpressionAttributeValues: {
        ':eseq': expected.sequencer,
        ':epresent': expected.present,
        ':esize': expected.size,
        ':esmall': expected.small,
        ':edue': expected.due === true,
        ':epart': expected.partition,
        ...(typeof expectedPid === 'string' ? { ':epid': expectedPid } : {}),
      },
    };
  }

  private counterUpdate(ref: PartitionRef, delta: CounterDelta) {
    const adds = ['fileCount :fc', 'totalBytes :tb', 'smallCount :sc', 'smallBytes :sb', 'version :one'];
    const values: Record<string, unknown> = {
      ':fc': delta.fileCount,
      ':tb': delta.totalBytes,
      ':sc': delta.smallCount,
      ':sb': delta.smallBytes,
      ':one': 1,
      ...this.staticValues(ref),
    };
    addDue(adds, values, delta);
    delta.histogram.forEach((n, i) => {
      if (n !== 0) {
        adds.push(`hist${i} :h${i}`);
        values[`:h${i}`] = n;
      }
    });
    return {
      TableName: this.table,
      Key: statsKeys.partition(ref),
      UpdateExpression: `SET ${STATIC_SET} ADD ${adds.join(', ')}`,
      ExpressionAttributeNames: STATIC_NAMES,
      ExpressionAttributeValues: values,
    };
  }

  private staticValues(ref: PartitionRef): Record<string, unknown> {
    return {
      ':table': ref.table,
      ':partition': ref.partition,
      ':gsi1pk': statsKeys.tableIndex(ref.table),
      ':idleSk': gsiSortKey({ partition: ref.partition, state: 'idle' }, undefined),
      ':idle': 'idle',
      ':zero': 0,
    };
  }

  async touch(ref: PartitionRef, input: TouchInput): Promise<PartitionSnapshot> {
    const counters = ['fileCount', 'totalBytes', 'smallCount', 'smallBytes'].map(
      (n) => `${n} = if_not_exists(${n}, :zero)`,
    );
    const sets = [
      STATIC_SET,
      'lastWriteAt = :last',
      'firstWriteAt = if_not_exists(firstWriteAt, :first)',
      ...counters,
      ...(input.partitionDate === undefined ? [] : ['partitionDate = :pdate']),
    ];
    try {
      const result = await this.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: statsKeys.partition(ref),
          UpdateExpression: `SET ${sets.join(', ')} ADD version :one`,
          ConditionExpression: 'attribute_not_exists(lastWriteAt) OR lastWriteAt < :last',
          ExpressionAttributeNames: STATIC_NAMES,
          ExpressionAttributeValues: {
            ...this.staticValues(ref),
            ':last': input.lastWriteAt,
            ':first': input.firstWriteAt,
            ':one': 1,
            ...(input.partitionDate === undefined ? {} : { ':pdate': input.partitionDate }),
          },
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return snapshotFromItem(result.Attributes ?? {});
    } catch (err) {
      // The stored lastWriteAt is newer already (a later batch was here first): that is the fresh state.
      if (err instanceof ConditionalCheckFailedException && err.Item !== undefined) {
        return snapshotFromItem(plainFromAttributes({ M: err.Item }) as Record<string, unknown>);
      }
      throw err;
    }
  }

  async get(ref: PartitionRef): Promise<PartitionSnapshot | undefined> {
    const result = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: statsKeys.partition(ref), ConsistentRead: true }),
    );
    return result.Item === undefined ? undefined : snapshotFromItem(result.Item);
  }

  async getFiles(
    fileIds: readonly string[],
    within: readonly PartitionRef[] = [],
  ): Promise<Map<string, FileRecord>> {
    const found = new Map<string, FileRecord>();
    const wanted = new Set(fileIds);
    let legacy = within.length === 0;
    for (const ref of within) {
      let read = await this.readPartition(ref);
      for (let attempt = 0; read === 'moved' && attempt < MAX_ATTEMPTS; attempt++) {
        read = await this.readPartition(ref);
      }
      if (read === 'moved') {
        throw new TransientStoreError(
          `Partition ${partitionId(ref)} kept changing while its files were read`,
        );
      }
      legacy ||= read.legacy;
      for (const [id, record] of currentState(read.segments)) if (wanted.has(id)) found.set(id, record);
    }
    if (!legacy) return found;
    // Partitions written before segments: their files may still have a per-file item.
    for (const item of await this.fileItems([...wanted].filter((id) => !found.has(id)))) {
      const record = fileFromItem(item);
      found.set(record.fileId, record);
    }
    return found;
  }

  // ------------------------------------------------------------------------------------------------------
  // Trigger state
  // ------------------------------------------------------------------------------------------------------

  async recordDecision(
    snapshot: PartitionSnapshot,
    decision: DecisionSummary,
    options: { readonly dueAt?: number; readonly storeItem: boolean },
  ): Promise<boolean> {
    const dueSet = options.dueAt === undefined ? '' : ', dueAt = :due';
    const dueRemove = options.dueAt === undefined ? ' REMOVE dueAt' : '';
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: statsKeys.partition(snapshot),
          UpdateExpression: `SET lastDecision = :decision, gsi1sk = :sk${dueSet}${dueRemove}`,
          ConditionExpression: 'version = :version AND #state = :idle',
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: {
            ':decision': decision,
            ':sk': gsiSortKey({ partition: snapshot.partition, state: 'idle' }, options.dueAt),
            ':version': snapshot.version,
            ':idle': 'idle',
            ...(options.dueAt === undefined ? {} : { ':due': options.dueAt }),
          },
        }),
      );
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) return false;
      throw err;
    }
    if (options.storeItem) await this.putDecision(snapshot, decision);
    return true;
  }

  private async putDecision(ref: PartitionRef, decision: DecisionSummary): Promise<void> {
    await this.doc.send(
      new PutCommand({
        TableName: this.table,
        Item: {
          ...statsKeys.decision(ref, decision.at, randomUUID().slice(0, 8)),
          ...decision,
          table: ref.table,
          partition: ref.partition,
          expiresAt: Math.floor(decision.at / 1000) + this.decisionSeconds,
        },
      }),
    );
  }

  async schedule(
    snapshot: PartitionSnapshot,
    lease: Lease,
    decision: DecisionSummary,
    limits?: RunLimits,
  ): Promise<PartitionSnapshot | RunCapReached | undefined> {
    const partition = {
      TableName: this.table,
      Key: statsKeys.partition(snapshot),
      UpdateExpression:
        'SET #state = :scheduled, lease = :lease, lastDecision = :decision, gsi1sk = :sk REMOVE dueAt ADD generation :one',
      ConditionExpression: '#state = :idle AND version = :version AND generation = :generation',
      ExpressionAttributeNames: { '#state': 'state' },
      ExpressionAttributeValues: {
        ':scheduled': 'scheduled',
        ':idle': 'idle',
        ':lease': lease,
        ':decision': decision,
        ':sk': gsiSortKey({ partition: snapshot.partition, state: 'scheduled', lease }, undefined),
        ':version': snapshot.version,
        ':generation': snapshot.generation,
        ':one': 1,
      },
    };
    // Counted in the same transaction as the schedule, under both caps: concurrent profilers and the sweep
    // can never start more runs than the caps allow. A slot left by a lease that was never counted out
    // (see reconcileRunCount) is adopted instead: it already counts, so the caps still hold.
    let adopt = false;
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const counting = adopt
        ? [
            {
              Put: {
                TableName: this.table,
                Item: {
                  ...runCountKeys.slot(snapshot),
                  partition: snapshot.partition,
                  since: lease.acquiredAt,
                  by: lease.runId,
                },
                ConditionExpression: 'attribute_exists(pk)',
              },
            },
          ]
        : countInItems(this.table, snapshot, lease.acquiredAt, lease.runId, limits);
      try {
        await this.doc.send(
          new TransactWriteCommand({ TransactItems: [{ Update: partition }, ...counting] }),
        );
        await this.putDecision(snapshot, decision);
        // The transaction returns no item: the new state is the old one with this update applied.
        const { dueAt: _dueAt, ...rest } = snapshot;
        return {
          ...rest,
          state: 'scheduled',
          lease,
          lastDecision: decision,
          generation: snapshot.generation + 1,
        };
      } catch (err) {
        if (!(err instanceof TransactionCanceledException)) throw err;
        const reasons = err.CancellationReasons ?? [];
        if (failedAt(reasons, 0)) return undefined;
        if (isInvalid(reasons)) throw err;
        const capped = adopt || limits === undefined ? undefined : capReachedOf(reasons, limits);
        if (capped !== undefined) return capped;
        if (failedAt(reasons, SLOT_INDEX)) {
          adopt = !adopt; // a slot appeared (adopt it) or the adopted one went (count in after all)
          continue;
        }
        if (mustWait(reasons)) await this.backoff(attempt);
      }
    }
    throw new TransientStoreError(
      `Scheduling partition ${partitionId(snapshot)} stayed contended for ${MAX_ATTEMPTS} attempts; the next batch or sweep decides again`,
    );
  }

  async release(ref: PartitionRef, generation: number, patch: ReleasePatch): Promise<boolean> {
    const compacted = patch.lastCompactedAt === undefined ? '' : ', lastCompactedAt = :compacted';
    // Every release says what the counters wait for: a run's version, or nothing (an earlier run's is dropped).
    const awaited = patch.awaitedVersion === undefined ? '' : ', awaitedVersion = :awaited';
    const attention = patch.attention;
    const removed = [
      ...(attention === undefined ? ['lease', 'attention', 'settleRetry'] : []),
      ...(patch.awaitedVersion === undefined ? ['awaitedVersion'] : []),
    ];
    const remove = removed.length === 0 ? '' : ` REMOVE ${removed.join(', ')}`;
    const partition = {
      TableName: this.table,
      Key: statsKeys.partition(ref),
      // needs-attention keeps the lease (who could not settle it), says why and keeps the sweep's retry schedule;
      // idle drops all three (a later incident starts its schedule afresh).
      UpdateExpression:
        attention === undefined
          ? `SET #state = :idle, gsi1sk = :sk${compacted}${awaited}${remove} ADD version :one`
          : `SET #state = :attention, attention = :why, gsi1sk = :sk${compacted}${awaited}${remove} ADD version :one`,
      ConditionExpression: 'generation = :generation AND #state IN (:scheduled, :compacting)',
      ExpressionAttributeNames: { '#state': 'state' },
      ExpressionAttributeValues: {
        ':scheduled': 'scheduled',
        ':compacting': 'compacting',
        ':generation': generation,
        ':one': 1,
        ...(attention === undefined
          ? {
              ':idle': 'idle',
              // Due now: whoever released it re-decides at once; the sweep picks it up otherwise.
              ':sk': gsiSortKey({ partition: ref.partition, state: 'idle' }, 0),
            }
          : {
              ':attention': 'needs-attention',
              ':why': attention,
              ':sk': gsiSortKey({ partition: ref.partition, state: 'needs-attention', attention }, undefined),
            }),
        ...(patch.lastCompactedAt === undefined ? {} : { ':compacted': patch.lastCompactedAt }),
        ...(patch.awaitedVersion === undefined ? {} : { ':awaited': patch.awaitedVersion }),
      },
    };
    // The run's slot goes in the same transaction (a run that ended stops counting at once, whoever ends
    // it: finalize, or the sweep for a dead run). A lease that never counted (taken before the caps
    // existed) has no slot and is released without touching the counters.
    let counted = true;
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const counting = counted ? countOutItems(this.table, ref) : [slotCheckItem(this.table, ref, false)];
      try {
        await this.doc.send(
          new TransactWriteCommand({ TransactItems: [{ Update: partition }, ...counting] }),
        );
        return true;
      } catch (err) {
        if (!(err instanceof TransactionCanceledException)) throw err;
        const reasons = err.CancellationReasons ?? [];
        if (failedAt(reasons, 0)) return false;
        if (isInvalid(reasons)) throw err;
        if (failedAt(reasons, SLOT_INDEX)) {
          counted = !counted;
          continue;
        }
        if (mustWait(reasons)) await this.backoff(attempt);
      }
    }
    throw new TransientStoreError(
      `Releasing partition ${partitionId(ref)} stayed contended for ${MAX_ATTEMPTS} attempts; retry (the release is idempotent)`,
    );
  }

  async claimSettleRetry(snapshot: PartitionSnapshot, retry: SettleRetry): Promise<boolean> {
    const previous = snapshot.settleRetry?.attempts;
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: statsKeys.partition(snapshot),
          UpdateExpression: 'SET settleRetry = :retry',
          ConditionExpression: `#state = :attention AND generation = :generation AND ${
            previous === undefined ? 'attribute_not_exists(settleRetry)' : 'settleRetry.attempts = :attempts'
          }`,
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: {
            ':retry': retry,
            ':attention': 'needs-attention',
            ':generation': snapshot.generation,
            ...(previous === undefined ? {} : { ':attempts': previous }),
          },
        }),
      );
      return true;
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) return false;
      throw err;
    }
  }

  async listDue(table: string, now: number): Promise<PartitionRef[]> {
    const range = dueRange(now);
    const keys = await this.queryIndex({
      KeyConditionExpression: 'gsi1pk = :pk AND gsi1sk BETWEEN :from AND :to',
      ExpressionAttributeValues: { ':pk': statsKeys.tableIndex(table), ':from': range.from, ':to': range.to },
    });
    return keys.map((key) => refFromPartitionKey(String(key.pk)));
  }

  async listLeased(table: string): Promise<PartitionSnapshot[]> {
    const keys = await this.queryIndex({
      KeyConditionExpression: 'gsi1pk = :pk AND begins_with(gsi1sk, :lease)',
      ExpressionAttributeValues: { ':pk': statsKeys.tableIndex(table), ':lease': LEASE_PREFIX },
    });
    return (await this.getPartitions(keys)).filter((s) => s.state !== 'idle');
  }

  async listNeedingAttention(table: string): Promise<PartitionSnapshot[]> {
    const keys = await this.queryIndex({
      KeyConditionExpression: 'gsi1pk = :pk AND begins_with(gsi1sk, :attention)',
      ExpressionAttributeValues: { ':pk': statsKeys.tableIndex(table), ':attention': ATTENTION_PREFIX },
    });
    return (await this.getPartitions(keys)).filter((s) => s.state === 'needs-attention');
  }

  async listPartitions(table: string): Promise<PartitionSnapshot[]> {
    const keys = await this.queryIndex({
      KeyConditionExpression: 'gsi1pk = :pk',
      ExpressionAttributeValues: { ':pk': statsKeys.tableIndex(table) },
    });
    return this.getPartitions(keys);
  }

  /** The items behind index keys, read consistently (the index is keys-only and eventually consistent). */
  private async getPartitions(keys: readonly Record<string, unknown>[]): Promise<PartitionSnapshot[]> {
    const snapshots: PartitionSnapshot[] = [];
    for (let i = 0; i < keys.length; i += 100) {
      let pending: Record<string, unknown>[] | undefined = keys
        .slice(i, i + 100)
        .map((k) => ({ pk: k.pk, sk: k.sk }));
      for (let attempt = 0; pending !== undefined && pending.length > 0; attempt++) {
        const result: BatchGetCommandOutput = await this.doc.send(
          new BatchGetCommand({ RequestItems: { [this.table]: { Keys: pending, ConsistentRead: true } } }),
        );
        snapshots.push(...(result.Responses?.[this.table] ?? []).map(snapshotFromItem));
        pending = result.UnprocessedKeys?.[this.table]?.Keys;
        if (pending !== undefined && pending.length > 0) await this.backoff(attempt);
      }
    }
    return snapshots.sort((a, b) => (a.partition < b.partition ? -1 : a.partition > b.partition ? 1 : 0));
  }

  async listDecisions(ref: PartitionRef, limit: number): Promise<DecisionSummary[]> {
    const result = await this.doc.send(
      new QueryCommand({
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :decision)',
        ExpressionAttributeValues: { ':pk': statsKeys.partition(ref).pk, ':decision': DECISION_PREFIX },
        ScanIndexForward: false,
        Limit: limit,
      }),
    );
    return (result.Items ?? []).map((item) => decisionFromPlain(item) as DecisionSummary);
  }

  private async queryIndex(
    input: Pick<QueryCommandInput, 'KeyConditionExpression' | 'ExpressionAttributeValues'>,
  ): Promise<Record<string, unknown>[]> {
    const items: Record<string, unknown>[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.doc.send(
        new QueryCommand({ TableName: this.table, IndexName: 'gsi1', ...input, ExclusiveStartKey: start }),
      );
      items.push(...(page.Items ?? []));
      start = page.LastEvaluatedKey;
    } while (start);
    return items;
  }

  // ------------------------------------------------------------------------------------------------------
  // Run counts
  // ------------------------------------------------------------------------------------------------------

  async reconcileRunCount(table: string): Promise<RunCountReport> {
    const countedIn: string[] = [];
    const countedOut: string[] = [];
    const slots = await this.slotsOf(table);
    const leased = await this.listLeased(table);
    const leasedNow = new Set(leased.map((s) => s.partition));
    const leasedStates = { ':scheduled': 'scheduled', ':compacting': 'compacting' };
    // A lease without a slot (taken before the caps existed): counted in while it is still held.
    for (const snapshot of leased) {
      if (slots.has(snapshot.partition)) continue;
      const ref = { table, partition: snapshot.partition };
      const check = {
        ConditionCheck: {
          TableName: this.table,
          Key: statsKeys.partition(ref),
          ConditionExpression: '#state IN (:scheduled, :compacting)',
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: leasedStates,
        },
      };
      const by = snapshot.lease?.runId ?? 'unknown';
      const items = [check, ...countInItems(this.table, ref, snapshot.lease?.acquiredAt ?? 0, by)];
      if (await this.transactUnlessMoved(items)) countedIn.push(snapshot.partition);
    }
    // A slot whose partition no longer holds a lease: counted out, unless the partition is leased again.
    for (const partition of slots) {
      if (leasedNow.has(partition)) continue;
      const ref = { table, partition };
      const current = await this.get(ref);
      if (current?.state === 'scheduled' || current?.state === 'compacting') continue; // the index lagged
      const check = {
        ConditionCheck: {
          TableName: this.table,
          Key: statsKeys.partition(ref),
          ConditionExpression: 'attribute_not_exists(pk) OR NOT (#state IN (:scheduled, :compacting))',
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: leasedStates,
        },
      };
      if (await this.transactUnlessMoved([check, ...countOutItems(this.table, ref)])) {
        countedOut.push(partition);
      }
    }
    // The counter equals its slots unless someone edited the items: recounted, conditioned on the counter's
    // version (bumped by every count change) being the one read before the slots were.
    const counter = await this.getItem(runCountKeys.table(table));
    const count = (await this.slotsOf(table)).size;
    const corrected = await this.setCounter(runCountKeys.table(table), counter, count);
    return {
      running: corrected === undefined ? (num(counter?.running) ?? 0) : count,
      countedIn,
      countedOut,
      ...(corrected === undefined ? {} : { corrected }),
    };
  }

  async reconcileTotalRunCount(): Promise<RunCountReport> {
    // Every change of a table's counter changes the deployment's in the same transaction (and bumps its
    // version): read it first, then the tables' counters, then set it only if its version did not move.
    const total = await this.getItem(runCountKeys.total);
    let sum = 0;
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.doc.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :tables)',
          ExpressionAttributeValues: { ':pk': runCountKeys.total.pk, ':tables': runCountKeys.tablePrefix },
          ConsistentRead: true,
          ExclusiveStartKey: start,
        }),
      );
      for (const item of page.Items ?? []) sum += num(item.running) ?? 0;
      start = page.LastEvaluatedKey;
    } while (start);
    const corrected = await this.setCounter(runCountKeys.total, total, sum);
    return {
      running: corrected === undefined ? (num(total?.running) ?? 0) : sum,
      countedIn: [],
      countedOut: [],
      ...(corrected === undefined ? {} : { corrected }),
    };
  }

  /** The partitions of a table holding a slot (strongly consistent). */
  private async slotsOf(table: string): Promise<Set<string>> {
    const { pk, skPrefix } = runCountKeys.slotsOf(table);
    const partitions = new Set<string>();
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.doc.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :slot)',
          ExpressionAttributeValues: { ':pk': pk, ':slot': skPrefix },
          ConsistentRead: true,
          ExclusiveStartKey: start,
        }),
      );
      for (const item of page.Items ?? []) partitions.add(String(item.sk).slice(skPrefix.length));
      start = page.LastEvaluatedKey;
    } while (start);
    return partitions;
  }

  private async getItem(key: { pk: string; sk: string }): Promise<Record<string, unknown> | undefined> {
    const result = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: key, ConsistentRead: true }),
    );
    return result.Item;
  }

  /** Sets a counter to `count` if it is still the item read as `read`; what it corrected, if anything. */
  private async setCounter(
    key: { pk: string; sk: string },
    read: Record<string, unknown> | undefined,
    count: number,
  ): Promise<{ from: number; to: number } | undefined> {
    const from = num(read?.running) ?? 0;
    if (from === count) return undefined;
    const version = num(read?.version);
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: key,
          UpdateExpression: 'SET running = :count ADD version :one',
          ConditionExpression: version === undefined ? 'attribute_not_exists(version)' : 'version = :version',
          ExpressionAttributeValues: {
            ':count': count,
            ':one': 1,
            ...(version === undefined ? {} : { ':version': version }),
          },
        }),
      );
      return { from, to: count };
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) return undefined; // it moved: the next sweep
      throw err;
    }
  }

  /** Runs a repair transaction; false when a condition no longer held (the state moved on meanwhile). */
  private async transactUnlessMoved(items: readonly Record<string, unknown>[]): Promise<boolean> {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      try {
        await this.doc.send(new TransactWriteCommand({ TransactItems: [...items] }));
        return true;
      } catch (err) {
        if (!(err instanceof TransactionCanceledException)) throw err;
        const reasons = err.CancellationReasons ?? [];
        if (isInvalid(reasons)) throw err;
        if (reasons.some((r) => r.Code === 'ConditionalCheckFailed')) return false;
        await this.backoff(attempt);
      }
    }
    return false;
  }

  // ------------------------------------------------------------------------------------------------------
  // Reconcile
  // ------------------------------------------------------------------------------------------------------

  /**
   * Rewrites the partition from a listing: its segments are replaced by new ones holding every listed file
   * (present, listed size, the stored sequencer kept so any real event still in flight is newer and wins) and a
   * tombstone for every file the segments held present that the listing lacks; the counters are set from the
   * listing in the same update, conditioned on the version read (`expectedVersion`), so an event applied
   * meanwhile makes it `busy` rather than lost. Marks the partition as holding all its records in segments (a
   * partition written before segments stops consulting per-file items), then deletes the old segments and any
   * unlisted one older than an hour (left by a crashed or out-raced batch; a batch lives at most the Lambda's
   * timeout, so none is still about to be listed).
   */
  async reconcile(
    ref: PartitionRef,
    files: readonly ListedFile[],
    expectedVersion: number | undefined,
    facts: { readonly partitionDate?: number },
  ): Promise<ReconcileResult> {
    const read = await this.readPartition(ref);
    if (read === 'moved' || read.version !== expectedVersion) return { kind: 'busy' };
    const held = currentState(read.segments);
    if (read.legacy) {
      for (const [id, record] of await this.getFiles(
        files.map((f) => f.fileId).filter((id) => !held.has(id)),
      )) {
        held.set(id, record);
      }
    }
    const now = this.now();
    const listedIds = new Set(files.map((f) => f.fileId));
    const records: FileRecord[] = [];
    let filesFixed = 0;
    for (const file of files) {
      const old = held.get(file.fileId);
      const bucket = sizeBucket(file.size);
      const same =
        old?.present === true &&
        old.size === file.size &&
        old.small === file.small &&
        (old.due === true) === (file.due === true) &&
        old.partition === ref.partition;
      if (!same) filesFixed += 1;
      records.push({
        fileId: file.fileId,
        present: true,
        size: file.size,
        small: file.small,
        ...(file.due === true ? { due: true } : {}),
        bucket,
        sequencer: old?.sequencer ?? '0'.repeat(SEQUENCER_WIDTH),
        table: ref.table,
        partition: ref.partition,
        eventTime: same ? old.eventTime : file.eventTime,
        ...(old?.versionId === undefined ? {} : { versionId: old.versionId }),
      });
    }
    for (const [id, record] of held) {
      if (listedIds.has(id)) continue;
      // Tombstones stay as they are; a file held present that is not listed is gone: its tombstone starts now.
      records.push(
        record.present
          ? { ...record, present: false, size: 0, small: false, bucket: 0, eventTime: now }
          : record,
      );
    }
    const next = (read.version ?? 0) + 1;
    const nonce = randomUUID().slice(0, 8);
    const plan = planSegments([], records, now - this.tombstoneSeconds * 1000, (n) =>
      segmentId(next, `${nonce}${n}`),
    );
    const totals = { fileCount: 0, totalBytes: 0, smallCount: 0, smallBytes: 0, dueCount: 0 };
    const histogram = SIZE_BUCKETS.map(() => 0);
    for (const file of files) {
      totals.fileCount += 1;
      if (file.due === true) totals.dueCount += 1;
      totals.totalBytes += file.size;
      if (file.small) {
        totals.smallCount += 1;
        totals.smallBytes += file.size;
      }
      const b = sizeBucket(file.size);
      histogram[b] = (histogram[b] ?? 0) + 1;
    }
    const histSet = histogram.map((_n, i) => `hist${i} = :h${i}`);
    const histValues = Object.fromEntries(histogram.map((n, i) => [`:h${i}`, n]));
    await mapLimit(plan.puts, PUT_CONCURRENCY, (put) => this.putSegment(ref, put.id, put.records));
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: statsKeys.partition(ref),
          UpdateExpression: `SET ${STATIC_SET}, fileCount = :fc, totalBytes = :tb, smallCount = :sc, smallBytes = :sb, ${totals.dueCount > 0 ? 'dueCount = :dc, ' : ''}${histSet.join(', ')}, segs = :segs, #files = :segmentsMark, version = :next${facts.partitionDate === undefined ? '' : ', partitionDate = :pdate'}${totals.dueCount > 0 ? '' : ' REMOVE dueCount'}`,
          ConditionExpression:
            expectedVersion === undefined ? 'attribute_not_exists(version)' : 'version = :expectedVersion',
          ExpressionAttributeNames: { ...STATIC_NAMES, '#files': 'files' },
          ExpressionAttributeValues: {
            ...this.staticValues(ref),
            ':fc': totals.fileCount,
            ':tb': totals.totalBytes,
            ':sc': totals.smallCount,
            ':sb': totals.smallBytes,
            ...(totals.dueCount > 0 ? { ':dc': totals.dueCount } : {}),
            ':segs': plan.listed,
            ':segmentsMark': SEGMENTS_MARK,
            ':next': next,
            ...histValues,
            ...(expectedVersion === undefined ? {} : { ':expectedVersion': expectedVersion }),
            ...(facts.partitionDate === undefined ? {} : { ':pdate': facts.partitionDate }),
          },
        }),
      );
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) {
        await this.deleteSegments(
          ref,
          plan.puts.map((p) => p.id),
        );
        return { kind: 'busy' };
      }
      throw err;
    }
    await this.deleteSegments(ref, [
      ...read.segments.map((s) => s.id),
      ...(await this.straySegments(ref, new Set(plan.listed), now - STRAY_SEGMENT_MS)),
    ]);
    return { kind: 'corrected', filesFixed };
  }

  /** Segment ids under the partition that it does not list and that were written before `before`. */
  private async straySegments(
    ref: PartitionRef,
    listed: ReadonlySet<string>,
    before: number,
  ): Promise<string[]> {
    const stray: string[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.doc.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :seg)',
          ExpressionAttributeValues: { ':pk': statsKeys.partition(ref).pk, ':seg': SEGMENT_PREFIX },
          ProjectionExpression: 'sk, #at',
          ExpressionAttributeNames: { '#at': 'at' },
          ExclusiveStartKey: start,
        }),
      );
      for (const item of page.Items ?? []) {
        const id = String(item.sk).slice(SEGMENT_PREFIX.length);
        if (!listed.has(id) && (num(item.at) ?? 0) < before) stray.push(id);
      }
      start = page.LastEvaluatedKey;
    } while (start);
    return stray;
  }

  // ------------------------------------------------------------------------------------------------------
  // Foreign formats
  // ------------------------------------------------------------------------------------------------------

  async markForeignFormat(table: string, marker: ForeignFormatMarker): Promise<boolean> {
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.table,
          Item: {
            ...statsKeys.foreignFormat(table, marker.root),
            table,
            format: marker.format,
            root: marker.root,
            evidenceKey: marker.evidenceKey,
            seenAt: marker.seenAt,
          },
          // The first evidence stays: a redelivered or later commit of the same table changes nothing.
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
      return true;
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) return false;
      throw err;
    }
  }

  async foreignFormats(table: string): Promise<ForeignFormatMarker[]> {
    const markers: ForeignFormatMarker[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.doc.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :format)',
          ExpressionAttributeValues: {
            ':pk': statsKeys.foreignFormat(table, '').pk,
            ':format': FORMAT_PREFIX,
          },
          ConsistentRead: true,
          ExclusiveStartKey: start,
        }),
      );
      for (const item of page.Items ?? []) {
        if (!isForeignFormat(item.format)) continue;
        markers.push({
          format: item.format,
          root: String(item.root ?? ''),
          evidenceKey: String(item.evidenceKey ?? ''),
          seenAt: num(item.seenAt) ?? 0,
        });
      }
      start = page.LastEvaluatedKey;
    } while (start);
    return markers;
  }

  async changeCursor(table: string): Promise<ChangeCursor | undefined> {
    const { Item } = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: statsKeys.changeCursor(table), ConsistentRead: true }),
    );
    const version = num(Item?.version);
    if (Item === undefined || version === undefined) return undefined;
    return { version, memo: String(Item.memo ?? '') };
  }

  async advanceChangeCursor(table: string, cursor: ChangeCursor): Promise<boolean> {
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.table,
          Item: { ...statsKeys.changeCursor(table), table, version: cursor.version, memo: cursor.memo },
          // Only forward: a profiler that read an older cursor must not undo a newer one's progress.
          ConditionExpression: 'attribute_not_exists(pk) OR version < :version',
          ExpressionAttributeValues: { ':version': cursor.version },
        }),
      );
      return true;
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) return false;
      throw err;
    }
  }

  private async backoff(attempt: number): Promise<void> {
    const cap = this.backoffBaseMs * 2 ** Math.min(attempt, 6);
    await new Promise((resolve) => setTimeout(resolve, Math.random() * cap));
  }
}

/** SET clause shared by every partition write: identity, index key, and defaults of a new partition. */
const STATIC_SET = [
  '#table = :table',
  '#partition = :partition',
  'gsi1pk = :gsi1pk',
  'gsi1sk = if_not_exists(gsi1sk, :idleSk)',
  '#state = if_not_exists(#state, :idle)',
  'generation = if_not_exists(generation, :zero)',
].join(', ');
const STATIC_NAMES = { '#table': 'table', '#partition': 'partition', '#state': 'state' };

/**
 * The due-file counter's share of a counter update, only when it moves: a table whose format never has a service due
 * (most) gets no extra attribute on its partition items.
 */
function addDue(adds: string[], values: Record<string, unknown>, delta: CounterDelta): void {
  if (delta.dueCount === 0) return;
  adds.push('dueCount :dc');
  values[':dc'] = delta.dueCount;
}
