// The Journal port on DynamoDB: one item per (run, group) in the single table, every transition a
// conditional update on the revision; file lists too large for an item live in an S3 manifest.
import { ConditionalCheckFailedException, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { InvalidInputError, JournalConflictError } from '../core/errors.js';
import type {
  GroupJournalEntry,
  GroupState,
  Journal,
  JournalInput,
  JournalOutput,
  JournalPatch,
} from '../ports/journal.js';
import type { ObjectStore } from '../ports/object-store.js';

/** Item keys: `pk = RUN#<runId>`, `sk = GROUP#<groupId>` (see README, "State table"). */
export function journalKey(runId: string, groupId: string): { pk: string; sk: string } {
  return { pk: `RUN#${runId}`, sk: `GROUP#${groupId}` };
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
  readonly expiresAt?: number;
}

export interface DynamoJournalOptions {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  /** Where oversized file lists are written; required for groups of many thousands of files. */
  readonly manifests?: { readonly store: ObjectStore; readonly prefix: string };
  /** Keep journal items this long after their last change (TTL), in seconds. @default 90 days */
  readonly retentionSeconds?: number;
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
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.options.tableName,
          Item: await this.toItem(created),
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) {
        throw new JournalConflictError(
          `Journal entry ${entry.runId}/${entry.groupId} exists already; read it and continue from its state.`,
        );
      }
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
    try {
      // A whole-item put conditioned on the revision: simpler than an update expression per
      // field, and the item is small (or its file lists live in a manifest).
      await this.doc.send(
        new PutCommand({
          TableName: this.options.tableName,
          Item: await this.toItem(next),
          ConditionExpression: 'revision = :revision',
          ExpressionAttributeValues: { ':revision': current.revision },
        }),
      );
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) {
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
    return { ...keys, ...rest, manifestKey, expiresAt };
  }

  private async fromItem(item: StoredItem): Promise<GroupJournalEntry> {
    const { pk: _pk, sk: _sk, manifestKey, expiresAt: _expiresAt, inputs, outputs, ...rest } = item;
    if (manifestKey !== undefined && this.options.manifests) {
      const lists = JSON.parse(
        new TextDecoder().decode(await this.options.manifests.store.get(manifestKey)),
      ) as {
        inputs: JournalInput[];
        outputs: JournalOutput[];
      };
      return { ...rest, inputs: lists.inputs, outputs: lists.outputs };
    }
    return { ...rest, inputs: inputs ?? [], outputs: outputs ?? [] };
  }
}
