// Sweep Lambda entry (EventBridge schedules): starts partitions whose wait is over, releases leases of
// executions that ended, retries stuck partitions' settles, publishes per-table fragmentation, and in reconcile mode
// corrects drifted counts. Each table is its own turn (shared/table-turns.ts): one that fails is reported and metered
// (TableFailures), taken last next time, and the others are swept all the same.
import { randomUUID } from 'node:crypto';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SFNClient } from '@aws-sdk/client-sfn';
import type { Context } from 'aws-lambda';
import { z } from 'zod';
import { DynamoJournal } from '../adapters/dynamodb-journal.js';
import { DynamoStatsStore } from '../adapters/dynamodb-stats-store.js';
import { DynamoTableLedger } from '../adapters/dynamodb-table-ledger.js';
import {
  type FormatServicesOptions,
  formatClientsFromEnv,
  formatServices,
} from '../adapters/formats/index.js';
import { SfnStarter } from '../adapters/sfn-starter.js';
import { InvalidInputError } from '../core/errors.js';
import { formatForTable, refusedTables } from '../core/formats/index.js';
import type { TableFormat } from '../core/formats/table-format.js';
import {
  attentionMetric,
  fragmentationMetrics,
  settleRetryMetric,
  stuckLeaseMetric,
  tableFragmentation,
} from '../core/fragmentation.js';
import type { ReportedFailure } from '../core/isolation.js';
import { concurrentRunsMetric, decisionMetrics, unsupportedFormatMetrics } from '../core/metrics.js';
import type { PartitionRef } from '../core/profiler/model.js';
import { settleRetrySchedule } from '../core/profiler/settle-retry.js';
import {
  type ReconcileReport,
  reconcileTable,
  type SweepReport,
  sweepTable,
} from '../core/profiler/sweep.js';
import { sweepInputSchema } from '../core/profiler/sweep-input.js';
import type { TriggerDeps } from '../core/profiler/trigger.js';
import { parseRunCaps } from '../core/run-caps.js';
import type { TableConfig } from '../core/table-config.js';
import { journalManifestPrefix } from '../core/workflow/layout.js';
import { settleAfterDeadRun } from '../core/workflow/settle.js';
import { type UndoOutcome, undoRun } from '../core/workflow/undo-run.js';
import { type Clock, systemClock } from '../ports/clock.js';
import type { ObjectStore } from '../ports/object-store.js';
import type { TableLedger } from '../ports/table-ledger.js';
import { parseEnv } from '../shared/env.js';
import { dynamoDbClientsByRegion } from '../shared/format-services.js';
import { emitMetrics, lambdaEntry, type Observability } from '../shared/middleware.js';
import { defaultParquetEngine } from '../shared/parquet-engine.js';
import { stateTableUndoSource } from '../shared/state-table-undo.js';
import { reportTableFailures } from '../shared/table-failures.js';
import { loadTableConfigs } from '../shared/table-source.js';
import { type StoreFor, tableStores } from '../shared/table-stores.js';
import { type TableTurns, tableTurns } from '../shared/table-turns.js';
import { loggerFn, policiesOf, profilerEnvSchema } from './profiler.js';

/** The sweep's environment: the profiler's, and the period its settle retries start from. */
export const sweepEnvSchema = profilerEnvSchema.extend({
  /**
   * Minutes from a partition becoming needs-attention to the sweep's first settle retry, doubled after each retry up
   * to four times as long (see settleRetrySchedule): the sweep's own period, set by the construct from its schedule.
   */
  SETTLE_RETRY_MINUTES: z.coerce
    .number()
    .int()
    .positive()
    .max(24 * 60, 'at most 1440 minutes (a day)')
    .default(15),
});

export { type SweepInput, sweepInputSchema } from '../core/profiler/sweep-input.js';

export interface SweepDeps {
  readonly tables: readonly TableConfig[];
  readonly trigger: TriggerDeps;
  /** The object store of a table in its bucket (reconcile lists it; see shared/table-stores.ts). */
  readonly storeFor: StoreFor;
  /**
   * A table's format bound to its settings, as reconcile reads it (a table through the Glue or REST
   * catalog its config names). Absent: bound without services, so such a table's reconcile is refused, never read
   * through the path catalog.
   */
  readonly formatFor?: (table: TableConfig, bucket: string) => TableFormat;
  readonly clock: Clock;
  readonly observability: Observability;
  /** Where each table's turns are remembered between sweeps (the state table); absent: each sweep on its own. */
  readonly ledger?: TableLedger;
  /** The most one table's turn may take. @default what the invocation has left (before its margin) */
  readonly tableBudgetMs?: number;
  /**
   * Undoes a finished workflow run of `table` (the `undo` input: the console's `lake-compactor undo --stack`).
   * Absent: the `undo` input is refused.
   */
  readonly undo?: (table: TableConfig, runId: string, dryRun: boolean) => Promise<UndoOutcome>;
}

/** How a sweep's or reconcile's table turns went. */
export interface TurnsOutcome {
  /** Tables whose turn failed (or whose process died in it last time); the others were served all the same. */
  readonly tableFailures: readonly ReportedFailure[];
  /** Tables the invocation had no time left for (they go first next time, unless they are failing). */
  readonly notReached: readonly string[];
}

/** What a sweep or a reconcile returns (any input but `undo`). */
export type SweepTurnsResult = Exclude<SweepResult, { readonly mode: 'undo' }>;

export type SweepResult =
  | ((
      | { readonly mode: 'sweep'; readonly reports: readonly SweepReport[] }
      | { readonly mode: 'reconcile'; readonly reports: readonly ReconcileReport[] }
    ) &
      TurnsOutcome)
  | {
      readonly mode: 'undo';
      readonly table: string;
      readonly runId: string;
      readonly dryRun: boolean;
      /** What the undo did (or, with dryRun, would do); a refusal is thrown (UndoRefusedError), nothing changed. */
      readonly outcome: UndoOutcome;
    };

/** Time kept back from the sweep's timeout for the deployment-wide recount and the response. */
const SWEEP_MARGIN_MS = 30_000;

/** The handler without middleware. */
export function createSweepHandler(
  deps: SweepDeps,
): (event: unknown, context?: Context) => Promise<SweepResult> {
  return async (event, context) => {
    const parsed = sweepInputSchema.safeParse(event ?? {});
    if (!parsed.success) {
      throw new InvalidInputError(
        'Sweep input must be {"mode":"sweep"}, {"mode":"reconcile","table":"<name>"} or {"mode":"undo","table":"<name>","runId":"<execution name>","dryRun":true}',
        parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`),
      );
    }
    const input = parsed.data;
    const selected =
      input.table === undefined ? deps.tables : deps.tables.filter((t) => t.name === input.table);
    if (selected.length === 0) {
      throw new InvalidInputError(
        `Unknown table "${input.table}"; configured tables: ${deps.tables.map((t) => t.name).join(', ')}`,
      );
    }
    const { logger, metrics } = deps.observability;
    if (input.mode === 'undo') {
      const [table] = selected;
      if (table === undefined || refuseUnsupportedFormat(deps, table)) {
        throw new InvalidInputError(
          `Table ${input.table} is not served by this deployment; nothing was changed`,
        );
      }
      if (deps.undo === undefined) throw new InvalidInputError('This sweep function cannot undo runs');
      const outcome = await deps.undo(table, input.runId, input.dryRun);
      logger.info(input.dryRun ? 'undo planned' : 'undo finished', {
        table: table.name,
        runId: input.runId,
        outcome: outcome.kind,
        changes: outcome.kind === 'already-undone' ? 0 : outcome.changes.length,
      });
      return { mode: 'undo', table: table.name, runId: input.runId, dryRun: input.dryRun, outcome };
    }
    const now = deps.clock.now();
    const served = selected.filter((table) => !refuseUnsupportedFormat(deps, table));
    const byName = new Map(served.map((t) => [t.name, t]));
    // Each table is its own turn: one whose metadata throws, overruns or kills the process costs only itself.
    const turns = <T>(job: 'sweep' | 'reconcile', turn: (table: TableConfig) => Promise<T>) =>
      tableTurns({
        job,
        tables: served.map((t) => t.name),
        ...(deps.ledger === undefined ? {} : { ledger: deps.ledger }),
        clock: deps.clock,
        ...(context === undefined ? {} : { context }),
        marginMs: SWEEP_MARGIN_MS,
        ...(deps.tableBudgetMs === undefined ? {} : { budgetMs: deps.tableBudgetMs }),
        invocationId: context?.awsRequestId ?? randomUUID(),
        onFailure: (f) => reportTableFailures(deps.observability, job, [f]),
        onLedgerError: (error) =>
          logger.warn('the table ledger could not be read or written; tables are served all the same', {
            job,
            error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
          }),
        turn: (name) => turn(byName.get(name) as TableConfig),
      });
    if (input.mode === 'reconcile') {
      const done = await turns('reconcile', async (table) => {
        const bucket = table.bucket;
        if (bucket === undefined)
          throw new InvalidInputError(`Table ${table.name} names no bucket; set it in the table config`);
        const report = await reconcileTable(deps.trigger, deps.storeFor(bucket, table.name), table, now, {
          ...(deps.formatFor === undefined ? {} : { format: deps.formatFor(table, bucket) }),
        });
        logger.info('reconcile finished', {
          table: table.name,
          corrected: report.partitions.filter((p) => p.result === 'corrected').length,
          busy: report.partitions.filter((p) => p.result !== 'ok' && p.result !== 'corrected').length,
        });
        metrics.addMetric(
          'PartitionsReconciled',
          MetricUnit.Count,
          report.partitions.filter((p) => p.result === 'corrected').length,
        );
        return report;
      });
      return { mode: 'reconcile', reports: valuesOf(done), ...outcomeOf(done) };
    }
    const done = await turns('sweep', async (table) => {
      // Exact counts before anything is started: the caps are only as good as the counters.
      await recountRuns(deps, table.name);
      const report = await sweepTable(deps.trigger, table.name, now);
      logger.info('sweep finished', {
        table: table.name,
        due: report.due.length,
        started: report.due.filter((o) => o.action === 'started').length,
        leases: report.leases.length,
      });
      metrics.addMetric('PartitionsDue', MetricUnit.Count, report.due.length);
      metrics.addMetric('LeasesReleased', MetricUnit.Count, report.leases.length);
      metrics.addMetric(
        'CompactionsStarted',
        MetricUnit.Count,
        report.due.filter((o) => o.action === 'started').length,
      );
      emitMetrics(metrics, [
        stuckLeaseMetric(table.name, report.leases.length),
        attentionMetric(table.name, report.needingAttention),
        settleRetryMetric(
          table.name,
          report.settleRetries.filter((r) => r.action === 'started' || r.action === 'already-started').length,
        ),
        ...decisionMetrics(report.due),
      ]);
      if (report.needingAttention > 0) {
        logger.error(
          'partitions need attention: a run could not settle them (the sweep retries the settle on a backoff schedule); see `lake-compactor status`',
          {
            table: table.name,
            partitions: report.needingAttention,
            settleRetries: report.settleRetries.map((r) => ({
              partition: r.ref.partition,
              action: r.action,
              ...(r.retry === undefined
                ? {}
                : {
                    attempt: r.retry.attempts,
                    executionName: r.retry.executionName,
                    nextRetryAt: new Date(r.retry.nextAt).toISOString(),
                  }),
            })),
          },
        );
      }
      await publishFragmentation(deps, table.name);
      return report;
    });
    if (input.table === undefined) await recountRuns(deps, undefined);
    return { mode: 'sweep', reports: valuesOf(done), ...outcomeOf(done) };
  };
}

/** The reports of the turns that succeeded, in the order taken. */
function valuesOf<T>(turns: TableTurns<T>): T[] {
  return [...turns.results.values()].flatMap((r) => (r.ok ? [r.value] : []));
}

function outcomeOf(turns: TableTurns<unknown>): TurnsOutcome {
  return { tableFailures: turns.failures, notReached: turns.notReached };
}

/**
 * A table whose format is not implemented (a list that reached the sweep without passing the config schema):
 * nothing is started, released or reconciled for it; it is logged with the refusal message and counted as
 * `UnsupportedFormatRefusals`. True when refused.
 */
function refuseUnsupportedFormat(deps: SweepDeps, table: TableConfig): boolean {
  const [refused] = refusedTables([table]);
  if (refused === undefined) return false;
  deps.observability.logger.error(refused.message, { table: refused.name, format: refused.format });
  emitMetrics(deps.observability.metrics, unsupportedFormatMetrics(new Map([[refused.name, 1]])));
  return true;
}

/**
 * Makes the count of running compactions exact, for one table or (`table` undefined, after every table)
 * the deployment, and publishes it as `ConcurrentRuns`. Counts change in the same transaction as the leases,
 * so drift only comes from leases taken before the caps existed or from edited items; a failure costs this
 * sweep's repair only (the caps keep holding on the counters as they are), never the sweep.
 */
async function recountRuns(deps: SweepDeps, table: string | undefined): Promise<void> {
  const { logger, metrics } = deps.observability;
  try {
    const stats = deps.trigger.stats;
    const report =
      table === undefined ? await stats.reconcileTotalRunCount() : await stats.reconcileRunCount(table);
    emitMetrics(metrics, [concurrentRunsMetric(table, report.running)]);
    if (report.corrected !== undefined || report.countedIn.length > 0 || report.countedOut.length > 0) {
      logger.warn('running compactions recounted: the count had drifted from the leases', {
        ...(table === undefined ? { scope: 'deployment' } : { table }),
        ...report,
      });
    }
  } catch (err) {
    logger.warn('running compactions not recounted; the next sweep tries again', {
      ...(table === undefined ? { scope: 'deployment' } : { table }),
      error: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
    });
  }
}

/**
 * Per-table fragmentation gauges from every partition item of the table (a keys-only index query, then
 * consistent BatchGets: about one read unit per partition per sweep). A failure costs the gauges of this
 * sweep only — the sweep's real work (starts, leases) is done and must not be retried for a graph.
 */
async function publishFragmentation(deps: SweepDeps, table: string): Promise<void> {
  const { logger, metrics } = deps.observability;
  const policy = deps.trigger.policies.get(table);
  if (policy === undefined) return;
  try {
    const fragmentation = tableFragmentation(table, await deps.trigger.stats.listPartitions(table), policy);
    emitMetrics(metrics, fragmentationMetrics(fragmentation));
    logger.info('fragmentation', { ...fragmentation });
  } catch (err) {
    logger.warn('fragmentation not measured; the next sweep tries again', {
      table,
      error: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
    });
  }
}

/**
 * The format of each table as its settings make it, for reconcile: a table with a catalog is read at the metadata its
 * Glue or REST catalog points at (as the profiler and the workflow's steps read it), with the catalog clients the
 * entry point built once — never through the path catalog, whose newest metadata file may never have become current.
 */
export function sweepFormats(
  tables: readonly TableConfig[],
  services: FormatServicesOptions,
): (table: TableConfig, bucket: string) => TableFormat {
  return (table, bucket) => formatForTable(tables, table.name, formatServices(services, { bucket }));
}

/** Production dependencies from the environment; tests replace the clock or wrap the stores (faults). */
export function sweepDepsFromEnv(
  env: Readonly<Record<string, string | undefined>>,
  observability: Observability,
  options: {
    readonly clock?: Clock;
    readonly wrapStore?: (store: ObjectStore, bucket: string) => ObjectStore;
  } = {},
): SweepDeps {
  const clock = options.clock ?? systemClock;
  const config = parseEnv(sweepEnvSchema, env as NodeJS.ProcessEnv);
  const tables = loadTableConfigs(env);
  const dynamodb = new DynamoDBClient({});
  // Open groups are found through their partition's fence, which needs no manifest (so no store).
  const fences = new DynamoJournal({ client: dynamodb, tableName: config.TABLE_NAME });
  const dynamodbIn = dynamoDbClientsByRegion(dynamodb);
  // Catalog clients once per cold start, from the environment the deps are built from (not process.env).
  const formatClients = formatClientsFromEnv(env);
  const storeFor = tableStores({
    env,
    tables,
    workRoot: config.WORK_ROOT,
    clock,
    ...(options.wrapStore === undefined ? {} : { wrapStore: options.wrapStore }),
  });
  // Before releasing a dead run's lease, the sweep settles its groups through the commit protocol, as the
  // table's settings make it (its commits coordinated as its config says).
  const formatFor = sweepFormats(tables, { dynamodb: dynamodbIn, clock, ...formatClients });
  const settle = (ref: PartitionRef, deadRunId: string) => {
    const bucket = tables.find((t) => t.name === ref.table)?.bucket;
    if (bucket === undefined) {
      throw new InvalidInputError(`Table ${ref.table} names no bucket; set it in the table config`);
    }
    // The dead run's table only: settling touches its objects and the work root, nothing else.
    const store = storeFor(bucket, ref.table);
    const journal = new DynamoJournal({
      client: dynamodb,
      tableName: config.TABLE_NAME,
      manifests: { store, prefix: journalManifestPrefix(config.WORK_ROOT) },
    });
    return settleAfterDeadRun(
      {
        store,
        journal,
        clock,
        format: formatForTable(
          tables,
          ref.table,
          formatServices({ dynamodb: dynamodbIn, clock, ...formatClients }, { bucket }),
        ),
        // A dead run's delete-rebuild group may be mid-undo: re-creating its retired inputs from the outputs
        // takes the engine. Without it the sweep could not settle such a group, and the changed input's old
        // rows would stay published (a duplicate) until someone ran a settle.
        engine: defaultParquetEngine,
      },
      ref,
      deadRunId,
    );
  };
  const undo = (table: TableConfig, runId: string, dryRun: boolean) => {
    const bucket = table.bucket;
    if (bucket === undefined) {
      throw new InvalidInputError(`Table ${table.name} names no bucket; set it in the table config`);
    }
    const store = storeFor(bucket, table.name);
    const prefix = table.prefix === '' ? '' : `${table.prefix}/`;
    const location = `s3://${bucket}/${prefix}`;
    const source = stateTableUndoSource({
      client: dynamodb,
      stateTable: config.TABLE_NAME,
      store,
      workRoot: config.WORK_ROOT,
      table: table.name,
      prefix,
      location,
      clock,
      hints: {
        settle: (partitions) =>
          `Wait for the run to end, or start the state machine with {"mode":"settle","table":"${table.name}","partition":"${partitions[0] ?? '<path>'}"} first`,
        notFound: 'a run of lake-compactor compact is journaled in its location: undo it with the CLI',
        otherTable: (other) => `pass "table": "${other}"`,
        otherLocation: `its entries name files of another table; nothing was changed`,
      },
    });
    return undoRun(
      {
        store,
        workRoot: config.WORK_ROOT,
        format: formatFor(table, bucket),
        source,
        clock,
        engine: defaultParquetEngine,
      },
      { location, runId, dryRun },
    );
  };
  return {
    tables,
    undo,
    trigger: {
      stats: new DynamoStatsStore({ client: dynamodb, tableName: config.TABLE_NAME }),
      settle,
      settleRetry: {
        schedule: settleRetrySchedule(config.SETTLE_RETRY_MINUTES * 60_000),
        fenced: async (ref) => (await fences.listOpen(ref)).length > 0,
      },
      ...(config.STATE_MACHINE_ARN === undefined
        ? {}
        : { starter: new SfnStarter(new SFNClient({}), config.STATE_MACHINE_ARN) }),
      ...(config.TRIGGERS_DRY_RUN ? { dryRun: true } : {}),
      runCaps: parseRunCaps(config.RUN_CAPS),
      policies: policiesOf(tables),
      log: loggerFn(observability.logger),
      trigger: 'sweep',
    },
    storeFor,
    formatFor,
    clock,
    observability,
    ledger: new DynamoTableLedger({ client: dynamodb, tableName: config.TABLE_NAME }),
  };
}

/** The Lambda entry point (EventBridge schedule, or a console test with a reconcile or undo input). */
export const handler = lambdaEntry((env, observability) =>
  createSweepHandler(sweepDepsFromEnv(env, observability)),
);
