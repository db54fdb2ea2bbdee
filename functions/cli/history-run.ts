// What `lake-compactor history` does, loaded by history.ts only when the command runs (help, --version and usage errors
// never load it, nor the AWS SDK and Parquet engine it reaches).
// `lake-compactor history`: reads the runs' history items (`PART#<table>#<partition>` / `RUN#<start>#<run>`)
// from the state table with key queries only (no scan) and prints them newest first, at most --limit; given the
// location of a table whose format records them (TableFormat.history), the runs its log records (history-table.ts).

import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { statsKeys } from '../adapters/dynamodb-keys.js';
import { DynamoStatsStore } from '../adapters/dynamodb-stats-store.js';
import { InvalidInputError, UsageError } from '../core/errors.js';
import { formatBytes } from '../core/stats.js';
import { plural } from '../core/words.js';
import { dynamoDbClientFromEnv } from '../shared/aws-env.js';
import { NAME_THE_STATE_TABLE } from './stack-outputs.js';
import { renderTable } from './table.js';

export interface HistoryIo {
  readonly out: (text: string) => void;
  readonly env: Readonly<Record<string, string | undefined>>;
}

export interface HistoryOptions {
  /** The DynamoDB state table; else env LAKE_COMPACTOR_TABLE. */
  readonly stateTable?: string;
  /** Only this table; else every table named by env TABLES. */
  readonly table?: string;
  /** Only this partition (needs a table). */
  readonly partition?: string;
  /** Most runs to print. @default 20 */
  readonly limit?: number;
  readonly json?: boolean;
}

/** The fields of a history item `history` shows (the item holds the whole run summary). */
export interface HistoryRow {
  readonly runId: string;
  readonly table: string;
  readonly partition: string;
  readonly outcome: string;
  readonly status: string;
  readonly startedAt: number;
  readonly finishedAt: number;
  readonly filesBefore?: number;
  readonly filesAfter?: number;
  readonly rows?: number;
  readonly bytesBefore?: number;
  readonly bytesAfter?: number;
  readonly firstError?: { readonly error: string; readonly cause: string };
  readonly [field: string]: unknown;
}

/**
 * Reads history newest first. With a partition: one descending key query (the sort key starts with the
 * ISO start time). With a table only: its partitions come from the table index, each is queried for its
 * newest `limit` runs, and the merge keeps the newest `limit` overall.
 */
export async function readHistory(
  doc: DynamoDBDocumentClient,
  tableName: string,
  refs: readonly { readonly table: string; readonly partition: string }[],
  limit: number,
): Promise<HistoryRow[]> {
  const rows: HistoryRow[] = [];
  for (const ref of refs) {
    let key: Record<string, unknown> | undefined;
    let taken = 0;
    do {
      const page = await doc.send(
        new QueryCommand({
          TableName: tableName,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :run)',
          ExpressionAttributeValues: { ':pk': statsKeys.partition(ref).pk, ':run': 'RUN#' },
          ScanIndexForward: false,
          Limit: limit - taken,
          ...(key === undefined ? {} : { ExclusiveStartKey: key }),
        }),
      );
      for (const item of page.Items ?? []) rows.push(item as HistoryRow);
      taken += page.Items?.length ?? 0;
      key = page.LastEvaluatedKey;
    } while (key !== undefined && taken < limit);
  }
  return rows
    .sort((a, b) => b.startedAt - a.startedAt || (a.runId < b.runId ? 1 : a.runId > b.runId ? -1 : 0))
    .slice(0, limit);
}

/** Runs `history`: resolves the state table and partitions from the options and env, prints a table or JSON. */
export async function runHistory(
  options: HistoryOptions,
  io: HistoryIo,
  client: DynamoDBClient = dynamoDbClientFromEnv(io.env),
): Promise<HistoryRow[]> {
  const tableName = options.stateTable ?? io.env.LAKE_COMPACTOR_TABLE;
  if (!tableName) {
    throw new UsageError(`Name the state table: ${NAME_THE_STATE_TABLE}`);
  }
  const limit = options.limit ?? 20;
  const names = options.table !== undefined ? [options.table] : tablesFromEnv(io.env);
  if (options.partition !== undefined && names.length !== 1) {
    throw new UsageError('--partition needs exactly one table: pass --table <name> as well');
  }
  let refs: { table: string; partition: string }[];
  if (options.partition !== undefined) {
    refs = names.map((table) => ({ table, partition: options.partition as string }));
  } else {
    const stats = new DynamoStatsStore({ client, tableName });
    refs = [];
    for (const table of names) {
      for (const p of await stats.listPartitions(table)) refs.push({ table, partition: p.partition });
    }
  }
  const rows = await readHistory(DynamoDBDocumentClient.from(client), tableName, refs, limit);
  if (options.json) {
    io.out(JSON.stringify(rows, null, 2));
    return rows;
  }
  io.out(
    renderTable(
      [
        { header: 'started', value: (r) => new Date(r.startedAt).toISOString() },
        { header: 'table', value: (r) => r.table },
        { header: 'partition', value: (r) => r.partition || '(root)' },
        { header: 'outcome', value: (r) => r.outcome },
        { header: 'status', value: (r) => r.status },
        {
          header: 'files',
          value: (r) => (r.filesBefore === undefined ? '' : `${r.filesBefore} → ${r.filesAfter ?? '?'}`),
          align: 'right',
        },
        { header: 'rows', value: (r) => r.rows ?? '', align: 'right' },
        {
          header: 'bytes',
          value: (r) =>
            r.bytesBefore === undefined
              ? ''
              : `${formatBytes(r.bytesBefore)} → ${formatBytes(r.bytesAfter ?? 0)}`,
          align: 'right',
        },
        {
          header: 'took',
          value: (r) => `${((r.finishedAt - r.startedAt) / 1000).toFixed(1)} s`,
          align: 'right',
        },
        { header: 'run', value: (r) => r.runId },
        {
          header: 'error',
          value: (r) => (r.firstError ? `${r.firstError.error}: ${r.firstError.cause}` : ''),
        },
      ],
      rows,
    ),
  );
  io.out(
    `\n${plural(rows.length, 'run')}${rows.length === limit ? ` (newest ${limit}; --limit shows more)` : ''}`,
  );
  return rows;
}

/** Table names from env TABLES (the deployment's JSON list of `{ name }`). */
function tablesFromEnv(env: HistoryIo['env']): string[] {
  if (!env.TABLES) {
    throw new UsageError('Name the table: pass --table <name>, or set TABLES to the deployment’s table list');
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(env.TABLES);
  } catch (err) {
    throw new InvalidInputError(
      `TABLES is not JSON (${(err as Error).message}): it must hold the deployment's tables, e.g. [{"name":"events"}]; or pass --table <name>`,
    );
  }
  const list = Array.isArray(parsed) ? parsed : ((parsed as { tables?: unknown }).tables ?? []);
  return (list as { name?: unknown }[]).map((t) => String(t.name));
}
