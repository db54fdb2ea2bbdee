// Profiler Lambda entry: SQS batches of S3 (or EventBridge) object events in, exact partition statistics and
// trigger decisions out; a message fails alone (partial batch response) when it or its partition fails.
import { randomUUID } from 'node:crypto';
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Logger } from '@aws-lambda-powertools/logger';
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SFNClient } from '@aws-sdk/client-sfn';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { z } from 'zod';
import { DynamoStatsStore } from '../adapters/dynamodb-stats-store.js';
import { DynamoTableLedger } from '../adapters/dynamodb-table-ledger.js';
import { formatClientsFromEnv, formatServices } from '../adapters/formats/index.js';
import { SfnStarter } from '../adapters/sfn-starter.js';
import { InvalidInputError } from '../core/errors.js';
import { FORMAT_NAMES, foreignMarkerAdvice } from '../core/formats/foreign-tables.js';
import { formatForTable, type RefusedTable, refusedTables } from '../core/formats/index.js';
import type { TableFormat } from '../core/formats/table-format.js';
import { TableCrashedError } from '../core/isolation.js';
import { decisionMetrics, foreignFormatMetrics, unsupportedFormatMetrics } from '../core/metrics.js';
import type { Policy } from '../core/policy.js';
import {
  type CommitEvent,
  type ForeignFormatEvent,
  parseEventDocument,
  parseQueueMessage,
  resolveEvent,
} from '../core/profiler/events.js';
import { type LogFn, partitionId, type ResolvedEvent, type TriggerOutcome } from '../core/profiler/model.js';
import { profileCommits, type TableLogResult } from '../core/profiler/table-log.js';
import { type PartitionResult, profileEvents, type TriggerDeps } from '../core/profiler/trigger.js';
import { parseRunCaps, type RunCaps } from '../core/run-caps.js';
import { resolveTablePolicy, type TableConfig } from '../core/table-config.js';
import { type Clock, systemClock } from '../ports/clock.js';
import type { ObjectStore } from '../ports/object-store.js';
import type { StateMachineStarter } from '../ports/state-machine-starter.js';
import type { StatsStore } from '../ports/stats-store.js';
import type { TableLedger } from '../ports/table-ledger.js';
import { baseEnvSchema, parseEnv } from '../shared/env.js';
import { dynamoDbClientsByRegion } from '../shared/format-services.js';
import { emitMetrics, lambdaEntry, type Observability } from '../shared/middleware.js';
import { reportTableFailures } from '../shared/table-failures.js';
import { loadTableConfigs } from '../shared/table-source.js';
import { tableStores } from '../shared/table-stores.js';
import { tableTurns } from '../shared/table-turns.js';

/** The profiler's variables: the base ones plus the workflow to start (optional until it exists). */
export const profilerEnvSchema = baseEnvSchema.extend({
  /** Compaction state machine; unset or empty = decisions are recorded, nothing is started. */
  STATE_MACHINE_ARN: z
    .string()
    .optional()
    .transform((v) => (v === '' ? undefined : v)),
  /** `true`: verdicts are recorded, no execution is started (the construct's `triggers.dryRun`). */
  TRIGGERS_DRY_RUN: z
    .enum(['true', 'false'], { message: 'TRIGGERS_DRY_RUN must be "true" or "false"' })
    .optional()
    .transform((v) => v === 'true'),
  /** Caps on running compactions (see `parseRunCaps`); unset = the defaults. */
  RUN_CAPS: z.string().optional(),
});

/** Everything the profiler needs, injectable for tests. */
export interface ProfilerDeps {
  readonly tables: readonly TableConfig[];
  readonly policies: ReadonlyMap<string, Policy>;
  readonly stats: StatsStore;
  /**
   * The object store of a bucket: a log-based table's commits are read from its log or the metadata its
   * catalog points at. Absent: such a table's commit events fail (and are retried), since their changes
   * cannot be known.
   */
  readonly storeFor?: (bucket: string, table: string) => ObjectStore;
  readonly starter?: StateMachineStarter;
  /** Record verdicts only, start nothing (see TriggerDeps.dryRun). @default false */
  readonly dryRun?: boolean;
  /** Caps on running compactions (see TriggerDeps.runCaps). @default counted, never refused */
  readonly runCaps?: RunCaps;
  readonly clock: Clock;
  readonly observability: Observability;
  /** Partitions of one batch processed at once. @default 4 */
  readonly concurrency?: number;
  /**
   * A table's format bound to its settings (see TableLogDeps.formatFor): how a table's pointer is read through
   * the Glue or REST catalog it names. Absent: the registered formats (their defaults, e.g. a path catalog).
   */
  readonly formatFor?: (table: TableConfig, bucket: string) => TableFormat;
  /**
   * Where each table's log reads are remembered between invocations (the state table): a read the process died in
   * is found by the next invocation. Absent: each invocation on its own.
   */
  readonly ledger?: TableLedger;
}

/**
 * Receives of a message whose commit the table's pointer does not show yet (see CommitNotCurrentError) after which
 * it is dropped with a log line as a lost race instead of failing again: below the queue's five receives before
 * the dead-letter queue, so a metadata file that never becomes current does not end there, while a catalog swap
 * still in progress gets three redeliveries (each after the visibility timeout) to land.
 */
export const NOT_CURRENT_MAX_RECEIVES = 4;

/** An EventBridge S3 event invoking the function directly (no queue in between). */
interface EventBridgeInvocation {
  readonly source: string;
  readonly 'detail-type': string;
}

export type ProfilerEvent = SQSEvent | EventBridgeInvocation;

/** Policies of every table, resolved once. */
export function policiesOf(tables: readonly TableConfig[]): Map<string, Policy> {
  return new Map(tables.map((t) => [t.name, resolveTablePolicy(t)]));
}

/** A LogFn writing to the Powertools logger. */
export function loggerFn(logger: Logger): LogFn {
  return (level, message, data) => logger[level](message, data ?? {});
}

/** The handler without middleware; `handler` below wraps it. */
export function createProfilerHandler(
  deps: ProfilerDeps,
): (event: ProfilerEvent, context: Context) => Promise<SQSBatchResponse | undefined> {
  const { logger, metrics } = deps.observability;
  const trigger: TriggerDeps = {
    stats: deps.stats,
    ...(deps.starter === undefined ? {} : { starter: deps.starter }),
    ...(deps.dryRun === true ? { dryRun: true } : {}),
    ...(deps.runCaps === undefined ? {} : { runCaps: deps.runCaps }),
    policies: deps.policies,
    log: loggerFn(logger),
  };
  const refused = refusedFormats(deps.tables, logger);
  return async (event, context) => {
    if ('Records' in event) return processQueueBatch(deps, trigger, refused, event, context);
    // Direct EventBridge invocation: one event; a failure throws so EventBridge/Lambda retry it.
    const messages = [{ id: 'eventbridge', parse: () => parseEventDocument(event) }];
    const failures = await profileMessages(deps, trigger, refused, messages, metrics, logger, context);
    const failure = failures.get('eventbridge');
    if (failure !== undefined) throw failure;
    return undefined;
  };
}

/**
 * The tables whose format is not implemented (a list that reached the profiler without passing the config
 * schema), each logged once with the refusal message: their events are counted, never profiled or triggered.
 */
function refusedFormats(tables: readonly TableConfig[], logger: Logger): ReadonlyMap<string, RefusedTable> {
  const refused = refusedTables(tables);
  for (const table of refused) logger.error(table.message, { table: table.name, format: table.format });
  return new Map(refused.map((t) => [t.name, t]));
}

async function processQueueBatch(
  deps: ProfilerDeps,
  trigger: TriggerDeps,
  refused: ReadonlyMap<string, RefusedTable>,
  event: SQSEvent,
  context: Context,
): Promise<SQSBatchResponse> {
  const { logger, metrics } = deps.observability;
  const messages = event.Records.map((record) => {
    const receives = Number(record.attributes?.ApproximateReceiveCount);
    return {
      id: record.messageId,
      parse: () => parseQueueMessage(record.body),
      ...(Number.isInteger(receives) && receives > 0 ? { receives } : {}),
    };
  });
  const failures = await profileMessages(deps, trigger, refused, messages, metrics, logger, context);
  const processor = new BatchProcessor(EventType.SQS);
  // The batch was processed as a whole above (grouped per partition); the record handler only reports each
  // message's outcome, so Powertools builds the partial batch response.
  const recordHandler = async (record: SQSRecord): Promise<void> => {
    const failure = failures.get(record.messageId);
    if (failure !== undefined) throw failure;
  };
  return processPartialResponse(event, recordHandler, processor, { context, throwOnFullBatchFailure: false });
}

/**
 * Parses and resolves every message, profiles all their events together (one transaction per partition
 * per batch, one decision per partition per batch), and returns the failure of each failed message: its
 * own parse error, or the error of a partition one of its events belongs to.
 */
async function profileMessages(
  deps: ProfilerDeps,
  trigger: TriggerDeps,
  refused: ReadonlyMap<string, RefusedTable>,
  messages: readonly {
    readonly id: string;
    readonly parse: () => ReturnType<typeof parseQueueMessage>;
    /** How often the queue delivered it (SQS's ApproximateReceiveCount); undefined when not queued. */
    readonly receives?: number;
  }[],
  metrics: Metrics,
  logger: Logger,
  context: Context | undefined,
): Promise<Map<string, unknown>> {
  const failures = new Map<string, unknown>();
  const partitionsOf = new Map<string, Set<string>>();
  const events: ResolvedEvent[] = [];
  /** Commits of log-based tables, and per table the messages that carried one. */
  const commits: CommitEvent[] = [];
  const commitsOf = new Map<string, Set<string>>();
  const messageOfCommit = new Map<CommitEvent, (typeof messages)[number]>();
  /** Per configured table and foreign root: the first such event, and the messages that carried one. */
  const foreign = new Map<string, { readonly event: ForeignFormatEvent; readonly messages: Set<string> }>();
  const foreignCounts = new Map<string, number>();
  const refusedCounts = new Map<string, number>();
  let ignored = 0;
  let received = 0;
  for (const message of messages) {
    try {
      const parsed = message.parse();
      const partitions = new Set<string>();
      for (const skipped of parsed.skipped)
        logger.debug('record not counted', { messageId: message.id, skipped });
      for (const event of parsed.events) {
        received += 1;
        const resolution = resolveEvent(deps.tables, deps.policies, event);
        if (resolution.kind === 'ignored') {
          ignored += 1;
          logger.debug('object ignored', { bucket: event.bucket, key: event.key, reason: resolution.reason });
          continue;
        }
        const owner = resolution.kind === 'data' ? resolution.event.ref.table : resolution.table;
        const refusal = refused.get(owner);
        if (refusal !== undefined) {
          // Not this deployment's to profile: no statistics, no marker, no trigger.
          refusedCounts.set(owner, (refusedCounts.get(owner) ?? 0) + 1);
          continue;
        }
        if (resolution.kind === 'foreign') {
          const id = `${resolution.table}#${resolution.root}`;
          const seen = foreign.get(id) ?? { event: resolution, messages: new Set<string>() };
          seen.messages.add(message.id);
          foreign.set(id, seen);
          foreignCounts.set(resolution.table, (foreignCounts.get(resolution.table) ?? 0) + 1);
          continue;
        }
        if (resolution.kind === 'commit') {
          commits.push(resolution);
          messageOfCommit.set(resolution, message);
          commitsOf.set(resolution.table, (commitsOf.get(resolution.table) ?? new Set()).add(message.id));
          continue;
        }
        events.push(resolution.event);
        partitions.add(partitionId(resolution.event.ref));
      }
      partitionsOf.set(message.id, partitions);
    } catch (err) {
      logger.error('malformed message; only it fails', { messageId: message.id, error: describe(err) });
      failures.set(message.id, err);
    }
  }
  // Before the partitions are evaluated, so a batch holding a commit and its data files schedules nothing.
  for (const { event, messages: carriers } of foreign.values()) {
    try {
      const recorded = await deps.stats.markForeignFormat(event.table, {
        format: event.format,
        root: event.root,
        evidenceKey: event.key,
        seenAt: event.eventTime,
      });
      logger.warn(
        `${FORMAT_NAMES[event.format]} table ${event.root === '' ? `at configured table ${event.table}: none of its partitions is` : `inside configured table ${event.table} at ${event.root}: no partition under it is`} ever compacted (its log or metadata, not the listing, defines the live files); ${foreignMarkerAdvice({ format: event.format, root: event.root, evidenceKey: event.key })}`,
        { table: event.table, format: event.format, root: event.root, key: event.key, recorded },
      );
    } catch (err) {
      logger.error(
        'recording a table whose log or metadata owns its files failed; its messages are retried',
        {
          table: event.table,
          root: event.root,
          error: describe(err),
        },
      );
      for (const id of carriers) failures.set(id, err);
    }
  }
  const results: Map<string, PartitionResult> =
    events.length === 0
      ? new Map()
      : await profileEvents(trigger, events, deps.clock.now(), deps.concurrency ?? 4);
  const others = events.length > 0 || foreign.size > 0;
  const tableResults = await applyCommits(deps, trigger, commits, logger, context, others);
  let applied = 0;
  let stale = 0;
  let started = 0;
  const outcomes: TriggerOutcome[] = [];
  for (const [table, result] of tableResults) {
    if (!result.ok) {
      logger.error('applying commits of a table failed; its messages are retried', {
        table,
        error: describe(result.error),
      });
      for (const id of commitsOf.get(table) ?? []) failures.set(id, result.error);
      continue;
    }
    if (result.notCurrent !== undefined) notCurrent(result.notCurrent, messageOfCommit, failures, logger);
    applied += result.applied;
    stale += result.stale;
    outcomes.push(...result.outcomes);
    started += result.outcomes.filter((o) => o.action === 'started').length;
  }
  for (const [id, result] of results) {
    if (result.ok) {
      applied += result.applied;
      stale += result.stale;
      outcomes.push(result.outcome);
      if (result.outcome.action === 'started') started += 1;
    } else {
      logger.error('partition update failed; its messages are retried', {
        partition: id,
        error: describe(result.error),
      });
    }
  }
  for (const [messageId, partitions] of partitionsOf) {
    for (const id of partitions) {
      const result = results.get(id);
      if (result !== undefined && !result.ok) {
        failures.set(messageId, result.error);
        break;
      }
    }
  }
  metrics.addMetric('EventsReceived', MetricUnit.Count, received);
  metrics.addMetric('EventsApplied', MetricUnit.Count, applied);
  metrics.addMetric('EventsStale', MetricUnit.Count, stale);
  metrics.addMetric('EventsIgnored', MetricUnit.Count, ignored);
  metrics.addMetric('MessagesFailed', MetricUnit.Count, failures.size);
  metrics.addMetric('CompactionsStarted', MetricUnit.Count, started);
  emitMetrics(metrics, decisionMetrics(outcomes));
  emitMetrics(metrics, foreignFormatMetrics(foreignCounts));
  for (const [table, events] of refusedCounts) {
    logger.warn(refused.get(table)?.message ?? '', { table, events });
  }
  emitMetrics(metrics, unsupportedFormatMetrics(refusedCounts));
  return failures;
}

/**
 * The messages of commit events naming a commit their table's pointer does not show yet: failed, so the queue
 * redelivers them (the catalog swap may be in progress), until NOT_CURRENT_MAX_RECEIVES; then dropped with a
 * warning, since a metadata file that lost the race is never current. A direct invocation (no receive count) fails
 * and is retried by Lambda's own bounded retries of asynchronous invocations.
 */
function notCurrent(
  behind: NonNullable<Extract<TableLogResult, { ok: true }>['notCurrent']>,
  messageOf: ReadonlyMap<CommitEvent, { readonly id: string; readonly receives?: number }>,
  failures: Map<string, unknown>,
  logger: Logger,
): void {
  for (const event of behind.events) {
    const message = messageOf.get(event);
    if (message === undefined) continue;
    const data = {
      table: event.table,
      key: event.key,
      receives: message.receives,
      reason: behind.error.reason,
    };
    if (message.receives !== undefined && message.receives >= NOT_CURRENT_MAX_RECEIVES) {
      logger.warn(
        "a commit's metadata file never became the table's current one: a writer lost the race to its catalog; the event is dropped",
        data,
      );
      continue;
    }
    logger.info("the table's catalog does not point at this commit yet; the message is redelivered", data);
    failures.set(message.id, behind.error);
  }
}

/**
 * The batch's commits of log-based tables, applied per table (see profileCommits); none → no store needed. Each
 * table is its own turn (shared/table-turns.ts): a table whose log read throws, overruns the invocation or killed
 * the process fails its own messages only, so the partial batch response carries every other table's. A table whose
 * last turn killed the process is not read again while the batch holds anything else: its messages fail at once
 * (redelivered, and after the queue's receives in the dead-letter queue), since a second death would take the whole
 * batch with it; a batch of its own messages only still tries it.
 */
async function applyCommits(
  deps: ProfilerDeps,
  trigger: TriggerDeps,
  commits: readonly CommitEvent[],
  logger: Logger,
  context: Context | undefined,
  othersInBatch: boolean,
): Promise<Map<string, TableLogResult>> {
  if (commits.length === 0) return new Map();
  const storeFor = deps.storeFor;
  if (storeFor === undefined) {
    const error = new InvalidInputError(
      'The profiler has no object store to read table logs with; give it `storeFor`',
    );
    return new Map(commits.map((c) => [c.table, { ok: false, error }]));
  }
  const byTable = new Map<string, CommitEvent[]>();
  for (const c of commits) byTable.set(c.table, [...(byTable.get(c.table) ?? []), c]);
  const logDeps = {
    ...trigger,
    tables: deps.tables,
    storeFor,
    ...(deps.formatFor === undefined ? {} : { formatFor: deps.formatFor }),
  };
  const concurrency = deps.concurrency ?? 4;
  /** The error each failed table's messages fail with (the turn's own, not its summary). */
  const errors = new Map<string, unknown>();
  const results = new Map<string, TableLogResult>();
  const turns = await tableTurns({
    job: 'profiler',
    tables: [...byTable.keys()],
    ...(deps.ledger === undefined ? {} : { ledger: deps.ledger }),
    clock: deps.clock,
    ...(context === undefined ? {} : { context }),
    marginMs: PROFILER_MARGIN_MS,
    // A table that hangs leaves at least half of the time for the tables after it.
    budgetShare: 0.5,
    // One table at a time (each table's partitions still `concurrency` at once): a process that dies is then
    // known to have died in that table, never blamed on another read in flight beside it.
    invocationId: context?.awsRequestId ?? randomUUID(),
    onFailure: (f) => reportTableFailures(deps.observability, 'profiler', [f]),
    onLedgerError: (error) =>
      logger.warn('the table ledger could not be read or written; tables are profiled all the same', {
        error: describe(error),
      }),
    skip: (table, health) =>
      othersInBatch || byTable.size > 1
        ? health?.last?.kind === 'crash'
          ? new TableCrashedError(
              `Table ${table}'s commits are not read in this batch: reading them killed the profiler last time (${health.last.message.slice(0, 200)}), and the batch holds other tables' events, which a second death would take with it. Its messages are redelivered; once they reach the dead-letter queue, fix the table (or raise the profiler's memory) and redrive them.`,
            )
          : undefined
        : undefined,
    turn: async (table) => {
      const result = (
        await profileCommits(logDeps, byTable.get(table) ?? [], deps.clock.now(), concurrency)
      ).get(table);
      if (result === undefined) throw new Error(`No result for table ${table}'s commits`);
      if (!result.ok) {
        errors.set(table, result.error);
        throw result.error;
      }
      return result;
    },
  });
  for (const [table, turn] of turns.results) {
    if (turn.ok) {
      results.set(table, turn.value);
      logger.debug('table commits applied', { table, mode: turn.value.mode, stale: turn.value.stale });
    } else {
      const error =
        errors.get(table) ?? Object.assign(new Error(turn.failure.message), { name: turn.failure.name });
      results.set(table, { ok: false, error });
    }
  }
  for (const table of turns.notReached) {
    results.set(table, {
      ok: false,
      error: new Error(
        `Table ${table}'s commits were not read: the invocation ran out of time; they are redelivered`,
      ),
    });
  }
  return results;
}

/** Time kept back from the profiler's timeout (60 s) for the other tables' results and the batch response. */
const PROFILER_MARGIN_MS = 5_000;

function describe(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

/**
 * The format of each table as its settings make it, for the profiler: a table's pointer is read through
 * the catalog its config names (Glue, REST), as the workflow's steps read it, with catalog clients built once per
 * cold start from `env` (the environment the deps are built from, not process.env).
 */
export function profilerFormats(
  tables: readonly TableConfig[],
  env: Readonly<Record<string, string | undefined>>,
  dynamodb: DynamoDBClient,
): (table: TableConfig, bucket: string) => TableFormat {
  const dynamodbIn = dynamoDbClientsByRegion(dynamodb);
  const formatClients = formatClientsFromEnv(env);
  return (table, bucket) =>
    formatForTable(
      tables,
      table.name,
      formatServices({ dynamodb: dynamodbIn, clock: systemClock, ...formatClients }, { bucket }),
    );
}

/** Builds the production dependencies from a (validated) environment. */
export function depsFromEnv(
  env: Readonly<Record<string, string | undefined>>,
  observability: Observability,
): ProfilerDeps {
  const config = parseEnv(profilerEnvSchema, env as NodeJS.ProcessEnv);
  const tables = loadTableConfigs(env);
  const dynamodb = new DynamoDBClient({});
  const stats = new DynamoStatsStore({ client: dynamodb, tableName: config.TABLE_NAME });
  // Only log-based tables' commits are read (a log, or metadata a catalog points at), each through its table's store.
  const storeFor = tableStores({ env, tables, workRoot: config.WORK_ROOT });
  const starter =
    config.STATE_MACHINE_ARN === undefined
      ? undefined
      : new SfnStarter(new SFNClient({}), config.STATE_MACHINE_ARN);
  if (starter === undefined) {
    observability.logger.warn(
      'STATE_MACHINE_ARN is not set: decisions are recorded but no compaction is started',
    );
  }
  const formatFor = profilerFormats(tables, env, dynamodb);
  return {
    tables,
    policies: policiesOf(tables),
    stats,
    storeFor,
    formatFor,
    ...(starter === undefined ? {} : { starter }),
    ...(config.TRIGGERS_DRY_RUN ? { dryRun: true } : {}),
    runCaps: parseRunCaps(config.RUN_CAPS),
    clock: systemClock,
    observability,
    ledger: new DynamoTableLedger({ client: dynamodb, tableName: config.TABLE_NAME }),
  };
}

/** The Lambda entry point (SQS event source with ReportBatchItemFailures, or EventBridge). */
export const handler = lambdaEntry<ProfilerEvent, SQSBatchResponse | undefined>((env, observability) =>
  createProfilerHandler(depsFromEnv(env, observability)),
);
