// The Quarantine port on the DynamoDB state table: one item per quarantined file beside its partition's
// item, read per partition with a consistent query and per table through the keys-only index; no TTL.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  type BatchGetCommandOutput,
  DeleteCommand,
  DynamoDBDocumentClient,
  PutCommand,
  QueryCommand,
} from '@aws-sdk/lib-dynamodb';
import { type QuarantinedFile, quarantinedFileSchema, sortQuarantine } from '../core/quarantine.js';
import type { Quarantine, QuarantinePartition } from '../ports/quarantine.js';
import { statsKeys } from './dynamodb-keys.js';

/** Sort-key prefix of quarantine items under a partition's `pk` (beside `STATE`, `DECISION#`, `OPEN#`, `RUN#`). */
const QUARANTINE_SK = 'QUARANTINE#';

/**
 * Item keys: `pk = PART#<table>#<partition>` (the partition item's), `sk = QUARANTINE#<object key>`, so
 * one partition's quarantine is one consistent query. `gsi1pk = QUARANTINE#<table>` puts the items in the
 * state table's keys-only index under a partition key of their own (the profiler's queries ask for
 * `TABLE#<table>` only), which lists a whole table without a scan. A sort key holds at most 1024 bytes,
 * so an object key over 1013 bytes cannot be recorded: the compact step then says so in its error.
 */
export function quarantineKey(partition: QuarantinePartition, key: string): { pk: string; sk: string } {
  return { pk: statsKeys.partition(partition).pk, sk: `${QUARANTINE_SK}${key}` };
}

export interface DynamoQuarantineOptions {
  readonly client: DynamoDBClient;
  readonly tableName: string;
}

export class DynamoQuarantine implements Quarantine {
  readonly description: string;
  private readonly doc: DynamoDBDocumentClient;

  constructor(private readonly options: DynamoQuarantineOptions) {
    this.description = `state table ${options.tableName}`;
    this.doc = DynamoDBDocumentClient.from(options.client, {
      marshallOptions: { removeUndefinedValues: true },
    });
  }

  /**
   * A plain put: the record of a key is replaced whole, and no TTL is set — a quarantine must last until
   * its object changes or an operator clears it, however long that takes.
   */
  async record(file: QuarantinedFile): Promise<void> {
    const record = quarantinedFileSchema.parse(file);
    await this.doc.send(
      new PutCommand({
        TableName: this.options.tableName,
        Item: {
          ...quarantineKey(record, record.key),
          type: 'quarantine',
          gsi1pk: `${QUARANTINE_SK}${record.table}`,
          gsi1sk: `${record.partition}#${record.key}`,
          ...record,
        },
      }),
    );
  }

  async list(partition: QuarantinePartition): Promise<QuarantinedFile[]> {
    const records: QuarantinedFile[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.doc.send(
        new QueryCommand({
          TableName: this.options.tableName,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :quarantine)',
          ExpressionAttributeValues: {
            ':pk': statsKeys.partition(partition).pk,
            ':quarantine': QUARANTINE_SK,
          },
          ConsistentRead: true,
          ExclusiveStartKey: start,
        }),
      );
      for (const item of page.Items ?? []) {
        const record = fromItem(item);
        if (record !== undefined) records.push(record);
      }
      start = page.LastEvaluatedKey;
    } while (start);
    return sortQuarantine(records);
  }

  /** Index keys (eventually consistent), then the items themselves, read consistently. */
  async listTable(table: string): Promise<QuarantinedFile[]> {
    const keys: Record<string, unknown>[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.doc.send(
        new QueryCommand({
          TableName: this.options.tableName,
          IndexName: 'gsi1',
          KeyConditionExpression: 'gsi1pk = :pk',
          ExpressionAttributeValues: { ':pk': `${QUARANTINE_SK}${table}` },
          ExclusiveStartKey: start,
        }),
      );
      for (const item of page.Items ?? []) keys.push({ pk: item.pk, sk: item.sk });
      start = page.LastEvaluatedKey;
    } while (start);
    const records: QuarantinedFile[] = [];
    for (let i = 0; i < keys.length; i += 100) {
      let pending: Record<string, unknown>[] | undefined = keys.slice(i, i + 100);
      for (let attempt = 0; pending !== undefined && pending.length > 0; attempt++) {
        if (attempt > 0)
          await new Promise((resolve) => setTimeout(resolve, Math.min(1000, 10 * 2 ** attempt)));
        const result: BatchGetCommandOutput = await this.doc.send(
          new BatchGetCommand({
            RequestItems: { [this.options.tableName]: { Keys: pending, ConsistentRead: true } },
          }),
        );
        for (const item of result.Responses?.[this.options.tableName] ?? []) {
          const record = fromItem(item);
          if (record !== undefined && record.table === table) records.push(record);
        }
        pending = result.UnprocessedKeys?.[this.options.tableName]?.Keys;
      }
    }
    return sortQuarantine(records);
  }

  async clear(partition: QuarantinePartition, key?: string): Promise<QuarantinedFile[]> {
    const targets = key === undefined ? (await this.list(partition)).map((r) => r.key) : [key];
    const removed: QuarantinedFile[] = [];
    for (const target of targets) {
      const result = await this.doc.send(
        new DeleteCommand({
          TableName: this.options.tableName,
          Key: quarantineKey(partition, target),
          ReturnValues: 'ALL_OLD',
        }),
      );
      const record = result.Attributes === undefined ? undefined : fromItem(result.Attributes);
      if (record !== undefined) removed.push(record);
    }
    return sortQuarantine(removed);
  }
}

/** The record of an item; undefined for an item that is not a valid one (it is then not honoured). */
function fromItem(item: Record<string, unknown>): QuarantinedFile | undefined {
  // The schema keeps the record's fields only (zod strips the keys, type and index attributes).
  const parsed = quarantinedFileSchema.safeParse(item);
  return parsed.success ? parsed.data : undefined;
}
