// The TableLedger port on the state table: per job, one item per failing table and one per attempt in progress,
// so an attempt a dead process left open is found — and claimed as a crash by exactly one reader — by a conditional
// delete, however many invocations review at once (the profiler's run concurrently).
//
// Items (docs/architecture.md, "State table"): `pk = HEALTH#<job>`, `sk = TABLE#<table>` (failures in a row, the
// last failure; deleted on a success) and `sk = ATTEMPT#<table>#<id>` (since, until; expires 30 days after `until`
// should no invocation of the job ever review it again).
import { ConditionalCheckFailedException, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DeleteCommand,
  DynamoDBDocumentClient,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { crashOf, type TableFailure, type TableHealth } from '../core/isolation.js';
import type { TableAttempt, TableLedger } from '../ports/table-ledger.js';

const HEALTH_PREFIX = 'HEALTH#';
const TABLE_PREFIX = 'TABLE#';
const ATTEMPT_PREFIX = 'ATTEMPT#';
/** How long an attempt item outlives its deadline when no one reviews the job again. */
const ATTEMPT_TTL_SECONDS = 30 * 86_400;

interface HealthItem {
  readonly sk: string;
  readonly table: string;
  readonly failures?: number;
  readonly last?: TableHealth['last'];
  readonly id?: string;
  readonly since?: number;
  readonly until?: number;
}

export class DynamoTableLedger implements TableLedger {
  private readonly doc: DynamoDBDocumentClient;

  constructor(private readonly options: { readonly client: DynamoDBClient; readonly tableName: string }) {
    this.doc = DynamoDBDocumentClient.from(options.client, {
      marshallOptions: { removeUndefinedValues: true },
    });
  }

  async review(
    job: string,
    now: number,
  ): Promise<{ health: ReadonlyMap<string, TableHealth>; crashed: readonly TableAttempt[] }> {
    const crashed: TableAttempt[] = [];
    for (const item of await this.items(job)) {
      if (!item.sk.startsWith(ATTEMPT_PREFIX) || (item.until ?? 0) >= now) continue;
      const attempt: TableAttempt = {
        job,
        table: item.table,
        id: item.id ?? item.sk,
        since: item.since ?? 0,
        until: item.until ?? 0,
      };
      try {
        await this.doc.send(
          new DeleteCommand({
            TableName: this.options.tableName,
            Key: { pk: `${HEALTH_PREFIX}${job}`, sk: item.sk },
            ConditionExpression: 'attribute_exists(pk)',
          }),
        );
      } catch (err) {
        // Another invocation claimed this crash first.
        if (err instanceof ConditionalCheckFailedException) continue;
        throw err;
      }
      await this.fail(job, attempt.table, crashOf(attempt.table, job, attempt.since), now);
      crashed.push(attempt);
    }
    const health = new Map<string, TableHealth>();
    for (const item of await this.items(job)) {
      if (!item.sk.startsWith(TABLE_PREFIX)) continue;
      health.set(item.table, {
        failures: item.failures ?? 0,
        ...(item.last === undefined ? {} : { last: item.last }),
      });
    }
    return { health, crashed };
  }

  async begin(attempt: TableAttempt): Promise<void> {
    await this.doc.send(
      new PutCommand({
        TableName: this.options.tableName,
        Item: {
          pk: `${HEALTH_PREFIX}${attempt.job}`,
          sk: attemptSortKey(attempt),
          table: attempt.table,
          id: attempt.id,
          since: attempt.since,
          until: attempt.until,
          expiresAt: Math.floor(attempt.until / 1000) + ATTEMPT_TTL_SECONDS,
        },
      }),
    );
  }

  async end(attempt: TableAttempt, failure: TableFailure | undefined, now: number): Promise<TableHealth> {
    await this.doc.send(
      new DeleteCommand({
        TableName: this.options.tableName,
        Key: { pk: `${HEALTH_PREFIX}${attempt.job}`, sk: attemptSortKey(attempt) },
      }),
    );
    if (failure !== undefined) return this.fail(attempt.job, attempt.table, failure, now);
    await this.doc.send(
      new DeleteCommand({
        TableName: this.options.tableName,
        Key: { pk: `${HEALTH_PREFIX}${attempt.job}`, sk: `${TABLE_PREFIX}${attempt.table}` },
      }),
    );
    return { failures: 0 };
  }

  /** One more failure in a row (an atomic counter: concurrent failures all count). */
  private async fail(job: string, table: string, failure: TableFailure, at: number): Promise<TableHealth> {
    const last = { ...failure, at };
    const result = await this.doc.send(
      new UpdateCommand({
        TableName: this.options.tableName,
        Key: { pk: `${HEALTH_PREFIX}${job}`, sk: `${TABLE_PREFIX}${table}` },
        UpdateExpression: 'ADD failures :one SET #last = :last, #table = :table',
        ExpressionAttributeNames: { '#last': 'last', '#table': 'table' },
        ExpressionAttributeValues: { ':one': 1, ':last': last, ':table': table },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return { failures: Number(result.Attributes?.failures ?? 1), last };
  }

  private async items(job: string): Promise<HealthItem[]> {
    const items: HealthItem[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.doc.send(
        new QueryCommand({
          TableName: this.options.tableName,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': `${HEALTH_PREFIX}${job}` },
          ConsistentRead: true,
          ExclusiveStartKey: start,
        }),
      );
      items.push(...((page.Items ?? []) as HealthItem[]));
      start = page.LastEvaluatedKey;
    } while (start);
    return items;
  }
}

function attemptSortKey(attempt: TableAttempt): string {
  return `${ATTEMPT_PREFIX}${attempt.table}#${attempt.id}`;
}
