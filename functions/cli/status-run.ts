// What `lake-compactor status` does, loaded by status.ts only when the command runs (help, --version and usage errors
// never load it, nor the AWS SDK and Parquet engine it reaches).
// `lake-compactor status`: reads partition statistics, trigger state and quarantined files from the state
// table (index queries, no scan) and prints them by compaction priority with the last decision's reasons.

import { existsSync, readFileSync } from 'node:fs';
import { DynamoQuarantine } from '../adapters/dynamodb-quarantine.js';
import { DynamoStatsStore } from '../adapters/dynamodb-stats-store.js';
import { InvalidInputError, UsageError } from '../core/errors.js';
import { printable } from '../core/keys.js';
import type { PartitionSnapshot } from '../core/profiler/model.js';
import type { QuarantinedFile } from '../core/quarantine.js';
import { formatBytes, priorityOf } from '../core/stats.js';
import { plural } from '../core/words.js';
import type { Clock } from '../ports/clock.js';
import type { Quarantine } from '../ports/quarantine.js';
import type { StatsStore } from '../ports/stats-store.js';
import { dynamoDbClientFromEnv } from '../shared/aws-env.js';
import { renderTable } from './table.js';

export interface StatusIo {
  readonly out: (text: string) => void;
  readonly clock: Clock;
  readonly env: Readonly<Record<string, string | undefined>>;
}

export interface StatusOptions {
  /** Only this table; otherwise every table of TABLES / the config file. */
  readonly table?: string;
  /** Only partitions due now (the sweep's next work). */
  readonly due?: boolean;
  /** The DynamoDB state table; else env LAKE_COMPACTOR_TABLE. */
  readonly stateTable?: string;
  /** Deployment config naming the tables. @default ./lake-compactor.config.json when present */
  readonly config?: string;
  readonly json?: boolean;
  /** Also print every quarantined file's key, run and reason under the table (JSON always has them). */
  readonly quarantined?: boolean;
}

export interface StatusRow extends PartitionSnapshot {
  readonly priority: 'HIGH' | 'MEDIUM' | 'LOW';
  /** The partition's files left out of plans since a rewrite failed on them (see `quarantine`). */
  readonly quarantined: readonly QuarantinedFile[];
}

const rank = { HIGH: 0, MEDIUM: 1, LOW: 2 } as const;

/** Table names to show: `--table`, else the TABLES variable, else the deployment config file. */
function tableNames(options: StatusOptions, env: StatusIo['env']): string[] {
  if (options.table !== undefined) return [options.table];
  const fromJson = (json: string, source: string): string[] => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(json);
    } catch (err) {
      throw new InvalidInputError(
        `${source} is not JSON (${(err as Error).message}): it must hold the deployment's tables, e.g. [{"name":"events"}]; or pass --table <name>`,
      );
    }
    const list = Array.isArray(parsed) ? parsed : ((parsed as { tables?: unknown }).tables ?? []);
    return (list as { name?: unknown }[]).map((t) => String(t.name));
  };
  if (env.TABLES) return fromJson(env.TABLES, 'TABLES');
  const file = options.config ?? 'lake-compactor.config.json';
  if (existsSync(file)) return fromJson(readFileSync(file, 'utf8'), file);
  if (options.config !== undefined) {
    throw new InvalidInputError(
      `--config ${file} does not exist: pass the deployment's config file, or name the table with --table <name>`,
    );
  }
  throw new UsageError(
    'Name the table: pass --table <name>, set TABLES, or run where lake-compactor.config.json is',
  );
}

/**
 * Reads the rows `status` prints, sorted by priority, then most small files first. With a quarantine, each
 * row carries its partition's quarantined files (one index query per table, not one per partition).
 */
export async function readStatus(
  stats: StatsStore,
  names: readonly string[],
  options: StatusOptions,
  now: number,
  quarantine?: Quarantine,
): Promise<StatusRow[]> {
  const rows: StatusRow[] = [];
  for (const table of names) {
    const snapshots = options.due
      ? (await Promise.all((await stats.listDue(table, now)).map((ref) => stats.get(ref)))).filter(
          (s): s is PartitionSnapshot => s !== undefined,
        )
      : await stats.listPartitions(table);
    const quarantined = quarantine === undefined ? [] : await quarantine.listTable(table);
    for (const s of snapshots) {
      rows.push({
        ...s,
        priority: priorityOf(s.fileCount, s.fileCount === 0 ? 0 : s.totalBytes / s.fileCount),
        quarantined: quarantined.filter((q) => q.partition === s.partition),
      });
    }
  }
  // Partitions that need an operator come first: nothing else will end them.
  const attention = (r: StatusRow) => (r.state === 'needs-attention' ? 0 : 1);
  return rows.sort(
    (a, b) =>
      attention(a) - attention(b) ||
      rank[a.priority] - rank[b.priority] ||
      b.smallCount - a.smallCount ||
      a.partition.localeCompare(b.partition),
  );
}

/**
 * Runs `status`: opens the state table from the options and env, prints a table or JSON.
 * @param stats replaces the state table's statistics (tests); then only `quarantine`, when given, is read
 * for quarantined files.
 */
export async function runStatus(
  options: StatusOptions,
  io: StatusIo,
  stats?: StatsStore,
  quarantine?: Quarantine,
): Promise<StatusRow[]> {
  const store = stats ?? openStatsStore(options, io.env);
  const quarantined = stats === undefined ? openQuarantine(options, io.env) : quarantine;
  const rows = await readStatus(store, tableNames(options, io.env), options, io.clock.now(), quarantined);
  if (options.json) {
    io.out(JSON.stringify(rows, null, 2));
    return rows;
  }
  io.out(
    renderTable(
      [
        { header: 'table', value: (r) => r.table },
        { header: 'partition', value: (r) => r.partition || '(root)' },
        { header: 'files', value: (r) => r.fileCount, align: 'right' },
        { header: 'small', value: (r) => r.smallCount, align: 'right' },
        { header: 'total', value: (r) => formatBytes(r.totalBytes), align: 'right' },
        {
          header: 'quarantined',
          value: (r) => (r.quarantined.length === 0 ? '' : r.quarantined.length),
          align: 'right',
        },
        { header: 'priority', value: (r) => r.priority },
        { header: 'state', value: (r) => (r.lease ? `${r.state} g${r.generation}` : r.state) },
        { header: 'due', value: (r) => (r.dueAt === undefined ? '' : new Date(r.dueAt).toISOString()) },
        {
          header: 'last decision',
          value: (r) =>
            r.attention !== undefined && r.state === 'needs-attention'
              ? `NEEDS ATTENTION since ${new Date(r.attention.since).toISOString()}: ${r.attention.reason}${
                  r.settleRetry === undefined
                    ? ''
                    : ` (the sweep's settle retry ${r.settleRetry.attempts} was ${r.settleRetry.executionName}; next from ${new Date(r.settleRetry.nextAt).toISOString()})`
                }`
              : r.lastDecision
                ? `${r.lastDecision.action}: ${r.lastDecision.reasons.join('; ')}`
                : '',
        },
      ],
      rows,
    ),
  );
  io.out(`\n${plural(rows.length, 'partition')}${options.due ? ' due now' : ''}`);
  const held = rows.flatMap((r) => r.quarantined);
  if (held.length > 0) {
    const partitions = rows.filter((r) => r.quarantined.length > 0).length;
    io.out(
      `${plural(held.length, 'file')} quarantined in ${plural(partitions, 'partition')}: a rewrite failed on them, later runs leave them out until they are replaced or removed${options.quarantined ? ':' : ' (--quarantined lists them)'}; release with lake-compactor quarantine <uri> --state-table <name> --clear [key]`,
    );
    if (options.quarantined) {
      for (const q of held) {
        io.out(
          `  ${q.table} ${printable(q.partition) || '(root)'} ${printable(q.key)} since ${new Date(q.since).toISOString()} by run ${q.runId}: ${q.errorName}: ${printable(q.reason)}`,
        );
      }
    }
  }
  const stuck = rows.filter((r) => r.state === 'needs-attention');
  if (stuck.length > 0) {
    io.out(
      `${plural(stuck.length, 'partition')} ${stuck.length === 1 ? 'needs' : 'need'} attention: fix the cause shown. The sweep retries the settle of each with an open group on a backoff schedule and ends it once the cause is gone; to act sooner (or when no group is open), settle it with an execution input {"table": "<table>", "partition": "<partition>", "settle": true} (events/workflow-settle.json)`,
    );
  }
  return rows;
}

function stateTableName(options: StatusOptions, env: StatusIo['env']): string {
  const tableName = options.stateTable ?? env.LAKE_COMPACTOR_TABLE;
  if (!tableName) {
    throw new UsageError('Name the state table: pass --state-table <name> or set LAKE_COMPACTOR_TABLE');
  }
  return tableName;
}

function openStatsStore(options: StatusOptions, env: StatusIo['env']): StatsStore {
  const client = dynamoDbClientFromEnv(env);
  return new DynamoStatsStore({ client, tableName: stateTableName(options, env) });
}

function openQuarantine(options: StatusOptions, env: StatusIo['env']): Quarantine {
  const client = dynamoDbClientFromEnv(env);
  return new DynamoQuarantine({ client, tableName: stateTableName(options, env) });
}
