// What every compaction-workflow handler needs, built once per cold start from its environment: the
// tables, one ObjectStore and Journal per bucket (per table with per-table isolation), the partition leases, the quarantine, the clock, and each
// run's table format bound to its table's settings.
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';
import { z } from 'zod';
import { DynamoJournal } from '../adapters/dynamodb-journal.js';
import { DynamoPartitionLease } from '../adapters/dynamodb-partition-lease.js';
import { DynamoQuarantine } from '../adapters/dynamodb-quarantine.js';
import { formatClientsFromEnv, formatServices } from '../adapters/formats/index.js';
import { formatForTable, type TableFormatName } from '../core/formats/index.js';
import type { TableFormat } from '../core/formats/table-format.js';
import { type MemoryBudget, withMemoryBudget } from '../core/memory-budget.js';
import { resolveTablePolicy, type TableConfig } from '../core/table-config.js';
import { journalManifestPrefix } from '../core/workflow/layout.js';
import type { PartitionLeases } from '../core/workflow/ports.js';
import { type Clock, systemClock } from '../ports/clock.js';
import type { Journal } from '../ports/journal.js';
import type { ObjectStore } from '../ports/object-store.js';
import type { Quarantine } from '../ports/quarantine.js';
import type { ScopedCredentialsProvider } from '../ports/scoped-credentials.js';
import { baseEnvSchema, lambdaMemoryBudget, parseEnv } from './env.js';
import { dynamoDbClientsByRegion } from './format-services.js';
import { createObservability, type Observability, withObservability } from './middleware.js';
import { loadTableConfigs } from './table-source.js';
import { tableStores } from './table-stores.js';

/** Variables of the workflow's functions (set by the CompactionWorkflow construct). */
export const workflowEnvSchema = baseEnvSchema.extend({
  /** Comma-separated buckets with versioning on: their inputs are retired by delete, not moved to trash. */
  VERSIONED_BUCKETS: z
    .string()
    .default('')
    .transform((v) =>
      v
        .split(',')
        .map((b) => b.trim())
        .filter((b) => b !== ''),
    ),
  /** Plans with at most this many groups use the inline Map (and list the groups in the state). */
  INLINE_GROUP_LIMIT: z.coerce.number().int().positive().default(40),
  /** Memory of the compact function (cost estimate and the sort budget). */
  COMPACT_MEMORY_MB: z.coerce.number().int().positive().default(3008),
  /** Set by Lambda: the running function's own memory (MB), which its engine workers follow (shared/engine-workers.ts). */
  AWS_LAMBDA_FUNCTION_MEMORY_SIZE: z.coerce.number().int().min(128).optional(),
  /** Quiet checks before a run gives up on a busy partition. */
  QUIET_MAX_ROUNDS: z.coerce.number().int().positive().default(6),
  QUIET_MAX_WAIT_SECONDS: z.coerce.number().int().positive().default(900),
});
export type WorkflowEnv = z.infer<typeof workflowEnvSchema>;

export interface WorkflowRuntime {
  readonly env: WorkflowEnv;
  readonly tables: readonly TableConfig[];
  readonly clock: Clock;
  readonly leases: PartitionLeases;
  /**
   * Input files a rewrite failed on, on the state table beside their partitions (one for every bucket:
   * records are keyed by table and partition). Operators list and clear them with the CLI's
   * `quarantine --state-table`; no execution input is needed for that.
   */
  readonly quarantine: Quarantine;
  /**
   * The store for `table`'s objects (and the work root) in `bucket`; without `table`, the work root alone. With
   * per-table isolation on (see shared/table-stores.ts), each table's store can reach nothing else: pass the table a
   * step serves.
   */
  storeFor(bucket: string, table?: string): ObjectStore;
  /** The journal of `bucket`'s runs, its oversized file lists kept through `storeFor(bucket, table)`. */
  journalFor(bucket: string, table?: string): Journal;
  /**
   * The format a run's steps commit and settle through: the run's format, bound to its table's settings (e.g. the
   * commit coordination it declares) with this runtime's DynamoDB clients. Handlers take it from here rather than
   * from the registry, so a step never commits a table differently from the way its configuration says.
   */
  formatFor(run: {
    readonly table: string;
    readonly bucket: string;
    readonly format: TableFormatName;
  }): TableFormat;
}

export interface RuntimeOptions {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly s3?: S3Client;
  readonly dynamodb?: DynamoDBClient;
  readonly clock?: Clock;
  /** Per-table credentials when isolation is on (tests); STS otherwise (see shared/table-stores.ts). */
  readonly credentials?: ScopedCredentialsProvider;
  /** Wraps every store (fault injection in tests). */
  readonly wrapStore?: (store: ObjectStore, bucket: string) => ObjectStore;
}

/** Builds the runtime; invalid variables fail the cold start naming every one. */
export function createWorkflowRuntime(options: RuntimeOptions): WorkflowRuntime {
  const env = parseEnv(workflowEnvSchema, options.env as NodeJS.ProcessEnv);
  const tables = loadTableConfigs(options.env);
  const dynamodb = options.dynamodb ?? new DynamoDBClient({});
  const journals = new Map<string, Journal>();
  const clock = options.clock ?? systemClock;
  const storeFor = tableStores({
    env: options.env,
    tables,
    workRoot: env.WORK_ROOT,
    clock,
    ...(options.s3 === undefined ? {} : { s3: options.s3 }),
    ...(options.credentials === undefined ? {} : { credentials: options.credentials }),
    ...(options.wrapStore === undefined ? {} : { wrapStore: options.wrapStore }),
  });
  const dynamodbIn = dynamoDbClientsByRegion(dynamodb);
  // The formats' own clients (catalog clients …), once per cold start like the DynamoDB clients.
  const formatClients = formatClientsFromEnv(options.env);
  return {
    env,
    tables,
    clock,
    leases: new DynamoPartitionLease({
      client: dynamodb,
      tableName: env.TABLE_NAME,
      tables,
      policies: new Map(tables.map((t) => [t.name, resolveTablePolicy(t)])),
    }),
    quarantine: new DynamoQuarantine({ client: dynamodb, tableName: env.TABLE_NAME }),
    storeFor,
    journalFor(bucket, table) {
      const key = `${bucket}\u0000${table ?? ''}`;
      let journal = journals.get(key);
      if (journal === undefined) {
        journal = new DynamoJournal({
          client: dynamodb,
          tableName: env.TABLE_NAME,
          manifests: { store: storeFor(bucket, table), prefix: journalManifestPrefix(env.WORK_ROOT) },
        });
        journals.set(key, journal);
      }
      return journal;
    },
    formatFor(run) {
      const services = formatServices(
        { dynamodb: dynamodbIn, clock, ...formatClients },
        { bucket: run.bucket },
      );
      return formatForTable(tables, run.table, services, run.format);
    },
  };
}

/** Log keys that tie a step's lines to its run: table, partition, run id, execution and group. */
export type CorrelationKeys = Partial<
  Record<'table' | 'partition' | 'runId' | 'executionArn' | 'groupId', string>
>;

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/**
 * The correlation keys found in a step's raw event (before it is validated, so even a malformed event's
 * failure is logged with what it had): the run context at `run` or `state.run` (finalize), the group at
 * `groupId` or `group.groupId`, and for validate the execution and the operator's table/partition.
 */
export function correlationKeys(event: unknown): CorrelationKeys {
  const root = record(event);
  if (root === undefined) return {};
  const run = record(root.run) ?? record(record(root.state)?.run);
  const execution = record(root.execution);
  const input = record(root.input);
  const keys: Record<string, unknown> = {
    table: run?.table ?? input?.table,
    partition: run?.partition ?? input?.partition,
    runId: run?.runId ?? execution?.name,
    executionArn: run?.executionArn ?? execution?.id,
    groupId: root.groupId ?? record(root.group)?.groupId,
  };
  return Object.fromEntries(
    Object.entries(keys).filter((e): e is [string, string] => typeof e[1] === 'string' && e[1] !== ''),
  );
}

/**
 * A Lambda entry for a workflow step: the environment is captured when the module loads (the cold start;
 * the local cloud sets each function's variables only then), the runtime is built on the first event —
 * so importing a handler module (tests, tools) never fails on a missing variable. Every invocation's logs
 * carry the run's correlation keys (cleared after it by the middleware's `resetKeys`), and a failing step
 * logs its error once with them before Step Functions' Retry/Catch sees it.
 */
export function workflowEntry<R>(
  create: (runtime: WorkflowRuntime, observability: Observability) => (event: unknown) => Promise<R>,
  env: Readonly<Record<string, string | undefined>> = { ...process.env },
  observability: Observability = createObservability(env.POWERTOOLS_SERVICE_NAME),
): ReturnType<typeof withObservability<unknown, R>> {
  let step: ((event: unknown) => Promise<R>) | undefined;
  let budget: { readonly value: MemoryBudget | undefined } | undefined;
  return withObservability(async (event: unknown) => {
    observability.logger.appendKeys(correlationKeys(event));
    try {
      step ??= create(createWorkflowRuntime({ env }), observability);
      // The step runs under the function's memory budget (core/memory-budget.ts), read on the first event.
      budget ??= { value: lambdaMemoryBudget(env) };
      const run = step;
      const { value } = budget;
      return await (value === undefined ? run(event) : withMemoryBudget(value, () => run(event)));
    } catch (err) {
      if (err instanceof Error) observability.logger.error('step failed', err);
      else observability.logger.error('step failed', { error: String(err) });
      throw err;
    }
  }, observability);
}
