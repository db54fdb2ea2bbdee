// Records every item write a function sends to a DynamoDB table while running on the local cloud (which function,
// which IAM action, which partition key), so a test can check them against the template's IAM statements: DynamoDB
// Local authorises nothing, so this is how a local run proves the per-function LeadingKeys conditions suffice.
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { runningFunction } from '../../infra/local/functions.js';

/** One item write as IAM authorises it: the action, the table and the item's partition key. */
export interface RecordedWrite {
  /** Logical id of the function that sent it (undefined: sent outside any invocation, by the test). */
  readonly functionLogicalId: string | undefined;
  readonly action:
    | 'dynamodb:PutItem'
    | 'dynamodb:UpdateItem'
    | 'dynamodb:DeleteItem'
    | 'dynamodb:BatchWriteItem';
  readonly tableName: string;
  readonly pk: string;
}

type Sendable = { send: (command: unknown, ...rest: unknown[]) => Promise<unknown> };

/** `x` or `{ S: x }` (document or low-level attribute value) → x. */
function plain(value: unknown): string {
  if (typeof value === 'string') return value;
  const s = (value as { S?: unknown } | undefined)?.S;
  return typeof s === 'string' ? s : JSON.stringify(value);
}

type Input = Record<string, unknown> & { TableName?: string };
const pkOf = (input: Input, field: 'Key' | 'Item') =>
  plain((input[field] as Record<string, unknown> | undefined)?.pk);

/** The item writes one command makes (TransactWriteItems is authorised item by item, as its actions). */
function writesOf(name: string, input: Input): Omit<RecordedWrite, 'functionLogicalId'>[] {
  const table = String(input.TableName ?? '');
  if (/^Put(Item)?Command$/.test(name))
    return [{ action: 'dynamodb:PutItem', tableName: table, pk: pkOf(input, 'Item') }];
  if (/^Update(Item)?Command$/.test(name))
    return [{ action: 'dynamodb:UpdateItem', tableName: table, pk: pkOf(input, 'Key') }];
  if (/^Delete(Item)?Command$/.test(name))
    return [{ action: 'dynamodb:DeleteItem', tableName: table, pk: pkOf(input, 'Key') }];
  if (/^TransactWrite(Items)?Command$/.test(name)) {
    return ((input.TransactItems ?? []) as Record<string, Input>[]).flatMap(
      (item): Omit<RecordedWrite, 'functionLogicalId'>[] => {
        if (item.Put)
          return [
            {
              action: 'dynamodb:PutItem' as const,
              tableName: String(item.Put.TableName),
              pk: pkOf(item.Put, 'Item'),
            },
          ];
        if (item.Update)
          return [
            {
              action: 'dynamodb:UpdateItem' as const,
              tableName: String(item.Update.TableName),
              pk: pkOf(item.Update, 'Key'),
            },
          ];
        if (item.Delete)
          return [
            {
              action: 'dynamodb:DeleteItem' as const,
              tableName: String(item.Delete.TableName),
              pk: pkOf(item.Delete, 'Key'),
            },
          ];
        return []; // ConditionCheck: a read (dynamodb:ConditionCheckItem), granted with the table's reads
      },
    );
  }
  if (/^BatchWrite(Item)?Command$/.test(name)) {
    return Object.entries((input.RequestItems ?? {}) as Record<string, Record<string, Input>[]>).flatMap(
      ([tableName, requests]) =>
        requests.map((r) => ({
          action: 'dynamodb:BatchWriteItem' as const,
          tableName,
          pk: r.PutRequest ? pkOf(r.PutRequest, 'Item') : pkOf(r.DeleteRequest ?? {}, 'Key'),
        })),
    );
  }
  return [];
}

/**
 * Starts recording the writes of every DynamoDB client (low-level and document) in this process; the returned
 * function stops it and gives back what was recorded. Only one recording at a time.
 */
export function recordStateTableWrites(): { writes: RecordedWrite[]; stop: () => void } {
  const writes: RecordedWrite[] = [];
  const patched = [DynamoDBClient.prototype, DynamoDBDocumentClient.prototype] as unknown as Sendable[];
  const originals = patched.map((proto) => Object.getOwnPropertyDescriptor(proto, 'send'));
  for (const proto of patched) {
    const inherited = proto.send;
    proto.send = function (this: Sendable, command: unknown, ...rest: unknown[]) {
      const c = command as { constructor: { name: string }; input?: Input };
      for (const w of writesOf(c.constructor.name, c.input ?? {})) {
        writes.push({ functionLogicalId: runningFunction(), ...w });
      }
      return inherited.call(this, command, ...rest);
    };
  }
  return {
    writes,
    stop: () => {
      patched.forEach((proto, i) => {
        const original = originals[i];
        if (original === undefined) delete (proto as Partial<Sendable>).send;
        else Object.defineProperty(proto, 'send', original);
      });
    },
  };
}
