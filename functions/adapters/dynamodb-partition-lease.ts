// The workflow's PartitionLeases on the profiler's partition item (`PART#<table>#<partition>` / `STATE`):
// the lease is one conditional write (counting the run in), release and statistics reuse the profiler's store.
import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  TransactionCanceledException,
} from '@aws-sdk/client-dynamodb';
import {
  DynamoDBDocumentClient,
  PutCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { LeaseHeldError, PartitionNeedsAttentionError, TransientStoreError } from '../core/errors.js';
import type { Policy } from '../core/policy.js';
import { resolveEvent, SEQUENCER_WIDTH } from '../core/profiler/events.js';
import type {
  Lease,
  ObjectEvent,
  PartitionRef,
  PartitionSnapshot,
  ReleasePatch,
  ResolvedEvent,
} from '../core/profiler/model.js';
import type { TableConfig } from '../core/table-config.js';
import type {
  LayoutChange,
  LeaseGrant,
  LeaseRequest,
  PartitionLeases,
  RunHistory,
} from '../core/workflow/ports.js';
import { gsiSortKey, statsKeys } from './dynamodb-keys.js';
import {
  countInItems,
  failedAt,
  isInvalid,
  mustWait,
  SLOT_INDEX,
  slotCheckItem,
} from './dynamodb-run-counts.js';
import { plainFromAttributes, snapshotFromItem } from './dynamodb-stats-items.js';
import { DynamoStatsStore } from './dynamodb-stats-store.js';

/** Attempts of a contended lease transaction before the step fails (and Step Functions retries it). */
const MAX_ATTEMPTS = 8;

export interface DynamoPartitionLeaseOptions {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  /** Configured tables and their policies: the run's file changes are classified like S3's events. */
  readonly tables: readonly TableConfig[];
  readonly policies: ReadonlyMap<string, Policy>;
  /** History items expire after this many seconds. @default 400 days */
  readonly historySeconds?: number;
}

/** History items: `pk = PART#<table>#<partition>`, `sk = RUN#<ISO start>#<runId>`, next to the partition. */
export function historyKey(ref: PartitionRef, startedAt: number, runId: string): { pk: string; sk: string } {
  return { pk: statsKeys.partition(ref).pk, sk: `RUN#${new Date(startedAt).toISOString()}#${runId}` };
}

export class DynamoPartitionLease implements PartitionLeases {
  private readonly doc: DynamoDBDocumentClient;
  private readonly stats: DynamoStatsStore;

  constructor(private readonly options: DynamoPartitionLeaseOptions) {
    this.doc = DynamoDBDocumentClient.from(options.client, {
      marshallOptions: { removeUndefinedValues: true },
    });
    this.stats = new DynamoStatsStore({ client: options.client, tableName: options.tableName });
  }

  /**
   * One conditional write: operator runs take an idle (or never seen) partition and bump its generation,
   * so a concurrent profiler schedule of the old generation loses; profiler runs take over exactly the
   * `scheduled` generation they were started for. The holder's own retry succeeds. A lease taken from a
   * free partition (idle, never seen, or needs-attention for a settle run) is counted as a running
   * compaction in the same transaction — operator runs are counted but never refused by the caps; a lease
   * handed over (the scheduled generation, or a dead run's lease taken over) was counted already.
   */
  async acquire(ref: PartitionRef, request: LeaseRequest): Promise<LeaseGrant> {
    const lease: Lease = {
      runId: request.runId,
      executionName: request.runId,
      ...(request.executionArn === undefined ? {} : { executionArn: request.executionArn }),
      acquiredAt: request.now,
    };
    const scheduled = request.generation !== undefined;
    const takeOver = request.takeOverFrom;
    const values: Record<string, unknown> = {
      ':compacting': 'compacting',
      ':idle': 'idle',
      ':lease': lease,
      ':sk': gsiSortKey({ partition: ref.partition, state: 'compacting', lease }, undefined),
      ':table': ref.table,
      ':partition': ref.partition,
      ':gsi1pk': statsKeys.tableIndex(ref.table),
      ':zero': 0,
      ':one': 1,
      ...(scheduled ? { ':scheduled': 'scheduled', ':generation': request.generation } : {}),
      ...(request.settle === true ? { ':attention': 'needs-attention' } : {}),
      ...(takeOver === undefined
        ? {}
        : {
            ':staleScheduled': 'scheduled',
            ':staleRun': takeOver.runId,
            ':staleGeneration': takeOver.generation,
          }),
    };
    // Free states (the lease is counted in): idle or never seen; needs-attention for a settle run.
    const free = [
      scheduled ? '#state = :idle' : 'attribute_not_exists(#state) OR #state = :idle',
      ...(request.settle === true ? ['#state = :attention'] : []),
    ].join(' OR ');
    // Handed over (the count does not change): the schedule this run was started for; the lease of a run
    // whose execution ended without releasing it, at exactly that holder.
    const handOver = [
      ...(scheduled ? ['(#state = :scheduled AND generation = :generation)'] : []),
      ...(takeOver === undefined
        ? []
        : [
            '(#state IN (:staleScheduled, :compacting) AND lease.runId = :staleRun AND generation = :staleGeneration)',
          ]),
    ].join(' OR ');
    const counters = ['fileCount', 'totalBytes', 'smallCount', 'smallBytes'].map(
      (n) => `${n} = if_not_exists(${n}, :zero)`,
    );
    const set = [
      '#state = :compacting',
      'lease = :lease',
      'gsi1sk = :sk',
      'gsi1pk = :gsi1pk',
      '#table = :table',
      '#partition = :partition',
      ...counters,
      ...(scheduled ? ['generation = if_not_exists(generation, :zero)'] : []),
    ];
    const update = (condition: string) => {
      const expression = `SET ${set.join(', ')} ADD version :one${scheduled ? '' : ', generation :one'}`;
      return {
        TableName: this.options.tableName,
        Key: statsKeys.partition(ref),
        UpdateExpression: expression,
        ConditionExpression: condition,
        ExpressionAttributeNames: { '#state': 'state', '#table': 'table', '#partition': 'partition' },
        // DynamoDB refuses values an expression does not use.
        ExpressionAttributeValues: Object.fromEntries(
          Object.entries(values).filter(([name]) =>
            new RegExp(`${name}(?![A-Za-z0-9_])`).test(`${expression} ${condition}`),
          ),
        ),
      };
    };
    let old: PartitionSnapshot | undefined;
    if (handOver !== '') {
      try {
        const result = await this.doc.send(
          new UpdateCommand({
            ...update(handOver),
            ReturnValues: 'ALL_NEW',
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        );
        return grantOf(request, snapshotFromItem(result.Attributes ?? {}));
      } catch (err) {
        if (!(err instanceof ConditionalCheckFailedException)) throw err;
        old = err.Item === undefined ? undefined : snapshotOfAttributes(err.Item);
      }
    }
    const taken = await this.takeFree(ref, update(free), request.runId, request.now);
    if (taken.ok) {
      // A transaction returns no item: read what the lease was granted at (only this run changes it now).
      return grantOf(request, (await this.stats.get(ref)) ?? snapshotFromItem({}));
    }
    old = taken.old ?? old;
    if (old?.lease?.runId === request.runId && old.state === 'compacting') {
      // Our own earlier attempt took it: the retry succeeds with what that attempt got.
      return {
        runId: request.runId,
        generation: old.generation,
        acquiredAt: old.lease.acquiredAt,
        ...(old.lastWriteAt === undefined ? {} : { lastWriteAt: old.lastWriteAt }),
      };
    }
    const holder = old?.lease;
    if (old?.state === 'needs-attention') {
      throw new PartitionNeedsAttentionError(
        `Partition "${ref.partition}" of table ${ref.table} needs attention since ${new Date(old.attention?.since ?? 0).toISOString()}: ${old.attention?.reason ?? 'no reason recorded'} No run plans it until the cause is fixed and a settle run has ended it: {"table": "${ref.table}", "partition": "${ref.partition}", "settle": true} (or \`lake-compactor settle\`).`,
      );
    }
    throw new LeaseHeldError(
      holder !== undefined
        ? `Partition "${ref.partition}" of table ${ref.table} is ${old?.state} by run ${holder.executionName}${holder.executionArn ? ` (${holder.executionArn})` : ''} since ${new Date(holder.acquiredAt).toISOString()}; wait for it to finish (or stop it), then re-run. force does not break a live lease.`
        : `Partition "${ref.partition}" of table ${ref.table} is ${old?.state ?? 'unknown'} at generation ${old?.generation ?? '?'}, not the scheduled generation ${request.generation ?? '-'} this run was started for; a newer schedule replaced it, nothing to do.`,
      holder === undefined || old === undefined
        ? undefined
        : {
            runId: holder.runId,
            ...(holder.executionArn === undefined ? {} : { executionArn: holder.executionArn }),
            generation: old.generation,
            state: old.state,
            acquiredAt: holder.acquiredAt,
          },
    );
  }

  /**
   * Takes a free partition and counts the run in, in one transaction (no cap: see `acquire`). A slot left
   * by a lease that was never counted out is adopted instead of counted twice. `old` is what the partition
   * held when it was not free.
   */
  private async takeFree(
    ref: PartitionRef,
    update: Record<string, unknown>,
    runId: string,
    now: number,
  ): Promise<{ readonly ok: true } | { readonly ok: false; readonly old: PartitionSnapshot | undefined }> {
    const tableName = this.options.tableName;
    let adopt = false;
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const counting = adopt
        ? [slotCheckItem(tableName, ref, true)]
        : countInItems(tableName, ref, now, runId);
      try {
        await this.doc.send(
          new TransactWriteCommand({
            TransactItems: [
              { Update: { ...update, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' } },
              ...counting,
            ],
          }),
        );
        return { ok: true };
      } catch (err) {
        if (!(err instanceof TransactionCanceledException)) throw err;
        const reasons = err.CancellationReasons ?? [];
        if (failedAt(reasons, 0)) {
          const item = reasons[0]?.Item;
          return { ok: false, old: item === undefined ? undefined : snapshotOfAttributes(item) };
        }
        if (isInvalid(reasons)) throw err;
        if (failedAt(reasons, SLOT_INDEX)) {
          adopt = !adopt;
          continue;
        }
        if (mustWait(reasons)) await backoff(attempt);
      }
    }
    throw new TransientStoreError(
      `Partition "${ref.partition}" of table ${ref.table}: taking its lease stayed contended for ${MAX_ATTEMPTS} attempts; the step is retried`,
    );
  }

  async lastWriteAt(ref: PartitionRef): Promise<number | undefined> {
    return (await this.stats.get(ref))?.lastWriteAt;
  }

  async holds(ref: PartitionRef, runId: string): Promise<boolean> {
    const current = await this.stats.get(ref);
    return current?.state === 'compacting' && current.lease?.runId === runId;
  }

  /**
   * One conditional update of the lease's `renewedAt`, only while `runId` holds the partition (`compacting`): a lease
   * the sweep released, or another run took, is not renewed (false), and nothing else of the item changes.
   */
  async renew(ref: PartitionRef, runId: string, now: number): Promise<boolean> {
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.options.tableName,
          Key: statsKeys.partition(ref),
          UpdateExpression: 'SET lease.renewedAt = :now',
          ConditionExpression: '#state = :compacting AND lease.runId = :runId',
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: { ':now': now, ':compacting': 'compacting', ':runId': runId },
        }),
      );
      return true;
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) return false;
      throw err;
    }
  }

  /** Released through the profiler's own release, at the generation the run holds (read, then conditional). */
  async release(ref: PartitionRef, runId: string, patch: ReleasePatch): Promise<boolean> {
    const current = await this.stats.get(ref);
    if (current === undefined || current.lease?.runId !== runId) return false;
    if (current.state !== 'scheduled' && current.state !== 'compacting') return false;
    return this.stats.release(ref, current.generation, patch);
  }

  /**
   * Applies the run's deletes and creates through the profiler's exactly-once accounting. Each synthetic
   * event gets a sequencer just above the stored record's (a delete) or the lowest one (a new output), so
   * the real S3 events that follow are either stale or change nothing — never counted twice.
   */
  async applyLayoutChange(ref: PartitionRef, change: LayoutChange): Promise<void> {
    const fileIds = change.removed.map((r) => `${change.bucket}/${r.key}`);
    const known = await this.stats.getFiles(
      [...fileIds, ...change.created.map((c) => `${change.bucket}/${c.key}`)],
      [ref],
    );
    const events: ObjectEvent[] = [];
    for (const removed of change.removed) {
      const record = known.get(`${change.bucket}/${removed.key}`);
      if (record === undefined || !record.present) continue;
      events.push({
        bucket: change.bucket,
        key: removed.key,
        kind: 'removed',
        sequencer: nextSequencer(record.sequencer),
        eventTime: change.at,
        eventName: 'LakeCompactor:Retired',
      });
    }
    for (const created of change.created) {
      if (known.get(`${change.bucket}/${created.key}`) !== undefined) continue;
      events.push({
        bucket: change.bucket,
        key: created.key,
        kind: 'created',
        size: created.size,
        etag: created.etag,
        sequencer: '1'.padStart(SEQUENCER_WIDTH, '0'),
        eventTime: change.at,
        eventName: 'LakeCompactor:Published',
      });
    }
    const resolved: ResolvedEvent[] = [];
    for (const event of events) {
      const resolution = resolveEvent(this.options.tables, this.options.policies, event);
      if (resolution.kind === 'data' && resolution.event.ref.partition === ref.partition)
        resolved.push(resolution.event);
    }
    if (resolved.length > 0) await this.stats.applyEvents(resolved);
  }

  async putHistory(item: RunHistory): Promise<void> {
    const ref = { table: item.table, partition: item.partition };
    await this.doc.send(
      new PutCommand({
        TableName: this.options.tableName,
        Item: {
          ...item,
          ...historyKey(ref, item.startedAt, item.runId),
          type: 'run',
          expiresAt: Math.floor(item.finishedAt / 1000) + (this.options.historySeconds ?? 400 * 86_400),
        },
      }),
    );
  }
}

function snapshotOfAttributes(item: Record<string, AttributeValue>): PartitionSnapshot {
  return snapshotFromItem(plainFromAttributes({ M: item }) as Record<string, unknown>);
}

/** The grant of a lease this run now holds, from the partition item. */
function grantOf(request: LeaseRequest, snapshot: PartitionSnapshot): LeaseGrant {
  return {
    runId: request.runId,
    generation: snapshot.generation,
    acquiredAt: request.now,
    ...(snapshot.lastWriteAt === undefined ? {} : { lastWriteAt: snapshot.lastWriteAt }),
  };
}

async function backoff(attempt: number): Promise<void> {
  const cap = 10 * 2 ** Math.min(attempt, 6);
  await new Promise((resolve) => setTimeout(resolve, Math.random() * cap));
}

/** The smallest sequencer above `sequencer` (fixed-width upper-case hex). */
export function nextSequencer(sequencer: string): string {
  const next = (BigInt(`0x${sequencer}`) + 1n).toString(16).toUpperCase();
  return next.padStart(SEQUENCER_WIDTH, '0').slice(-SEQUENCER_WIDTH);
}
