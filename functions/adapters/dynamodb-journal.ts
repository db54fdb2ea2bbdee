// The Journal port on DynamoDB: one item per (run, group) in the single table, every transition a
// conditional update on the revision; file lists too large for an item live in an S3 manifest, bound to the
// item by its SHA-256 (a manifest changed in the work area is refused, never read as the journal's word).
// An unsettled group's fence item sits beside its partition's item, written and removed in the same
// transaction as the entry, so "listOpen is exactly the unsettled groups" holds after any crash.
import { createHash } from 'node:crypto';
import {
  ConditionalCheckFailedException,
  type DynamoDBClient,
  TransactionCanceledException,
} from '@aws-sdk/client-dynamodb';
import {
  DeleteCommand,
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
} from '@aws-sdk/lib-dynamodb';
import { InvalidInputError, JournalConflictError, JournalManifestMismatchError } from '../core/errors.js';
import {
  type GroupJournalEntry,
  type GroupState,
  isSettled,
  type Journal,
  type JournalInput,
  type JournalOutput,
  type JournalPartition,
  type JournalPatch,
  type OpenGroup,
} from '../ports/journal.js';
import type { ObjectStore } from '../ports/object-store.js';
import { statsKeys } from './dynamodb-keys.js';

/** Item keys: `pk = RUN#<runId>`, `sk = GROUP#<groupId>` (see README, "State table"). */
export function journalKey(runId: string, groupId: string): { pk: string; sk: string } {
  return { pk: `RUN#${runId}`, sk: `GROUP#${groupId}` };
}

/** Prefix of fence items' sort keys, under the partition's own `pk` (its statistics item is `STATE`). */
const FENCE_PREFIX = 'OPEN#';

/**
 * Fence item keys: `pk = PART#<table>#<partition>` (the partition item's), `sk = OPEN#<runId>#<groupId>`.
 * Execution names and group ids never contain `#`, so the sort key splits back unambiguously.
 */
export function fenceKey(partition: JournalPartition, group: OpenGroup): { pk: string; sk: string } {
  return {
    pk: statsKeys.partition(partition).pk,
    sk: `${FENCE_PREFIX}${group.runId}#${group.groupId}`,
  };
}

/** Above this many bytes of JSON, inputs and outputs go to an S3 manifest (items are capped at 400 KB). */
const INLINE_LIMIT_BYTES = 300_000;

interface StoredItem extends Omit<GroupJournalEntry, 'inputs' | 'outputs'> {
  readonly pk: string;
  readonly sk: string;
  readonly inputs?: readonly JournalInput[];
  readonly outputs?: readonly JournalOutput[];
  /** Set when the file lists were offloaded: an immutable S3 object per revision. */
  readonly manifestKey?: string;
  /** SHA-256 (hex) of that object's body as written: items written before it existed have none. */
  readonly manifestSha256?: string;
  readonly expiresAt?: number;
}

export interface DynamoJournalOptions {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  /** Where oversized file lists are written; required for groups of many thousands of files. */
  readonly manifests?: { readonly store: ObjectStore; readonly prefix: string };
  /** Keep journal items this long after their last change (TTL), in seconds. @default 90 days */
  readonly retentionSeconds?: number;
  /**
   * Refuse a manifest whose item records no digest (written before digests were), as well as one whose digest
   * differs. For a reader that acts on the lists without a second source of truth — vacuum deletes object versions
   * on their word — an unverifiable list is as good as a forged one. The commit and settle path keeps reading such
   * items, so a group journaled before the upgrade still settles. @default false
   */
  readonly requireManifestDigest?: boolean;
}

export class DynamoJournal implements Journal {
  private readonly doc: DynamoDBDocumentClient;

  constructor(private readonly options: DynamoJournalOptions) {
    this.doc = DynamoDBDocumentClient.from(options.client, {
      marshallOptions: { removeUndefinedValues: true },
    });
  }

  async get(runId: string, groupId: string): Promise<GroupJournalEntry | undefined> {
    const result = await this.doc.send(
      new GetCommand({
        TableName: this.options.tableName,
        Key: journalKey(runId, groupId),
        ConsistentRead: true,
      }),
    );
    return result.Item ? this.fromItem(result.Item as StoredItem) : undefined;
  }

  async create(entry: Omit<GroupJournalEntry, 'revision'>): Promise<GroupJournalEntry> {
    const created: GroupJournalEntry = { ...entry, revision: 1 };
    const put = {
      TableName: this.options.tableName,
      Item: await this.toItem(created),
      ConditionExpression: 'attribute_not_exists(pk)',
    };
    const conflict = () =>
      new JournalConflictError(
        `Journal entry ${entry.runId}/${entry.groupId} exists already; read it and continue from its state.`,
      );
    try {
      if (isSettled(created)) await this.doc.send(new PutCommand(put));
      else
        await this.doc.send(
          new TransactWriteCommand({
            TransactItems: [
              { Put: put },
              { Put: { TableName: this.options.tableName, Item: fenceItem(created) } },
            ],
          }),
        );
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException || conditionFailed(err, 0)) throw conflict();
      throw err;
    }
    return created;
  }

  async transition(
    current: GroupJournalEntry,
    to: GroupState,
    patch: JournalPatch,
    now: number,
  ): Promise<GroupJournalEntry> {
    const next: GroupJournalEntry = {
      ...current,
      ...patch,
      state: to,
      updatedAt: now,
      revision: current.revision + 1,
    };
    // A whole-item put conditioned on the revision: simpler than an update expression per field, and the
    // item is small (or its file lists live in a manifest). Settling removes the fence in the same write.
    const put = {
      TableName: this.options.tableName,
      Item: await this.toItem(next),
      ConditionExpression: 'revision = :revision',
      ExpressionAttributeValues: { ':revision': current.revision },
    };
    try {
      if (!isSettled(next)) await this.doc.send(new PutCommand(put));
      else
        await this.doc.send(
          new TransactWriteCommand({
            TransactItems: [
              { Put: put },
              { Delete: { TableName: this.options.tableName, Key: fenceKey(next, next) } },
            ],
          }),
        );
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException || conditionFailed(err, 0)) {
        throw new JournalConflictError(
          `Journal entry ${current.runId}/${current.groupId} moved past revision ${current.revision} concurrently; re-read it and continue.`,
        );
      }
      throw err;
    }
    return next;
  }

  async listRun(runId: string): Promise<GroupJournalEntry[]> {
    const entries: GroupJournalEntry[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.doc.send(
        new QueryCommand({
          TableName: this.options.tableName,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :group)',
          ExpressionAttributeValues: { ':pk': `RUN#${runId}`, ':group': 'GROUP#' },
          ConsistentRead: true,
          ExclusiveStartKey: start,
        }),
      );
      for (const item of page.Items ?? []) entries.push(await this.fromItem(item as StoredItem));
      start = page.LastEvaluatedKey;
    } while (start);
    return entries;
  }

  async listOpen(partition: JournalPartition): Promise<OpenGroup[]> {
    const open: OpenGroup[] = [];
    let start: Record<string, unknown> | undefined;
    const { pk } = fenceKey(partition, { runId: '', groupId: '' });
    do {
      const page = await this.doc.send(
        new QueryCommand({
          TableName: this.options.tableName,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :open)',
          ExpressionAttributeValues: { ':pk': pk, ':open': FENCE_PREFIX },
          ConsistentRead: true,
          ExclusiveStartKey: start,
        }),
      );
      for (const item of page.Items ?? []) {
        open.push({ runId: String(item.runId), groupId: String(item.groupId) });
      }
      start = page.LastEvaluatedKey;
    } while (start);
    return open;
  }

  async closeFence(partition: JournalPartition, group: OpenGroup): Promise<void> {
    await this.doc.send(
      new DeleteCommand({ TableName: this.options.tableName, Key: fenceKey(partition, group) }),
    );
  }

  private async toItem(entry: GroupJournalEntry): Promise<StoredItem> {
    const keys = journalKey(entry.runId, entry.groupId);
    const expiresAt = Math.floor(entry.updatedAt / 1000) + (this.options.retentionSeconds ?? 90 * 86_400);
    const lists = JSON.stringify({ inputs: entry.inputs, outputs: entry.outputs });
    if (lists.length <= INLINE_LIMIT_BYTES) return { ...keys, ...entry, expiresAt };
    const manifests = this.options.manifests;
    if (!manifests) {
      throw new InvalidInputError(
        `Group ${entry.groupId} of run ${entry.runId} lists ${entry.inputs.length} inputs, too many for one DynamoDB item; configure a manifest store for the journal.`,
      );
    }
    const manifestKey = `${manifests.prefix}${entry.runId}/${entry.groupId}/r${entry.revision}.json`;
    await manifests.store.put(manifestKey, lists, { contentType: 'application/json' });
    const { inputs: _inputs, outputs: _outputs, ...rest } = entry;
    return { ...keys, ...rest, manifestKey, manifestSha256: sha256(lists), expiresAt };
  }

  private async fromItem(item: StoredItem): Promise<GroupJournalEntry> {
    const {
      pk: _pk,
      sk: _sk,
      manifestKey,
      manifestSha256,
      expiresAt: _expiresAt,
      inputs,
      outputs,
      ...rest
    } = item;
    if (manifestKey !== undefined && this.options.manifests) {
      const body = await this.options.manifests.store.get(manifestKey);
      const where = `the file lists of group ${item.groupId} of run ${item.runId} (${this.options.manifests.store.description} ${manifestKey})`;
      if (manifestSha256 === undefined && this.options.requireManifestDigest === true) {
        throw new JournalManifestMismatchError(
          `${where} were written before the journal recorded their digest, so nothing proves they are the ones it wrote: nothing is done on their word. The item expires with the journal's retention; delete what it names by hand if it must go sooner.`,
        );
      }
      if (manifestSha256 !== undefined && sha256(body) !== manifestSha256) {
        throw new JournalManifestMismatchError(
          `${where} do not match the SHA-256 the journal recorded: the object was changed after it was written, by something other than lake-compactor. Nothing is done on its word. Find who can write the work area (CloudTrail PutObject on that key) and restrict it to the deployment's roles.`,
        );
      }
      const lists = JSON.parse(new TextDecoder().decode(body)) as {
        inputs: JournalInput[];
        outputs: JournalOutput[];
      };
      return { ...rest, inputs: lists.inputs, outputs: lists.outputs };
    }
    return { ...rest, inputs: inputs ?? [], outputs: outputs ?? [] };
  }
}

function sha256(body: string | Uint8Array): string {
  return createHash('sha256').update(body).digest('hex');
}

/** The fence of an unsettled group: no TTL (it must outlive any outage), small and fixed-size. */
function fenceItem(entry: GroupJournalEntry): Record<string, unknown> {
  return {
    ...fenceKey(entry, entry),
    type: 'fence',
    runId: entry.runId,
    groupId: entry.groupId,
    table: entry.table,
    partition: entry.partition,
    createdAt: entry.createdAt,
  };
}

/** Whether a cancelled transaction failed on the condition of its `index`-th item. */
function conditionFailed(err: unknown, index: number): boolean {
  return (
    err instanceof TransactionCanceledException &&
    err.CancellationReasons?.[index]?.Code === 'ConditionalCheckFailed'
  );
}
