// Vacuum Lambda entry (EventBridge schedule, or the console with a vacuum input): validates the input,
// runs the vacuum core until its budget or the invocation's time runs out, and returns the report and cursor.
// A table whose format maintains it itself (its VACUUM through the table's declared commit coordination, or
// expire_snapshots and remove_orphan_files through the catalog it names) gets that maintenance from the core, with
// the services built here: DynamoDB clients, and catalog clients built once per cold start from the function's
// environment, as the workflow's runtime and the sweep do. One that was refused or could not be read is logged as
// an error in its format's words and counted (VacuumTableErrors; a coordination mismatch also in
// CoordinationRefusals, which is alarmed), and the others are vacuumed all the same.
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Context } from 'aws-lambda';
import { DynamoJournal } from '../adapters/dynamodb-journal.js';
import { formatClientsFromEnv, formatServices } from '../adapters/formats/index.js';
import { RoutedJournal } from '../adapters/routed-journal.js';
import { StoreJournal } from '../adapters/store-journal.js';
import { CoordinationMismatchError } from '../core/errors.js';
import {
  formatSectionsOf,
  maintainedTablesOf,
  mergeVacuumReports,
  parseVacuumRequest,
  type VacuumDeps,
  type VacuumReport,
  type VacuumRequest,
  vacuum,
  vacuumCursorAfter,
  vacuumUnitAt,
} from '../core/maintenance/vacuum.js';
import { coordinationRefusalMetrics } from '../core/metrics.js';
import { journalManifestPrefix } from '../core/workflow/layout.js';
import type { Journal } from '../ports/journal.js';
import type { ObjectStore } from '../ports/object-store.js';
import { dynamoDbClientsByRegion } from '../shared/format-services.js';
import {
  checkpointOf,
  type IsolatedJob,
  type IsolationReport,
  isolatedPass,
  maintenanceInput,
  WORK_AREA,
} from '../shared/maintenance-runtime.js';
import { emitMetrics, lambdaEntry, type Observability } from '../shared/middleware.js';
import { reportTableFailures } from '../shared/table-failures.js';
import { createWorkflowRuntime } from '../shared/workflow-runtime.js';

/** The vacuum as an isolated pass drives it: the work area, then one table per call, in the pass's order. */
export function vacuumJob(deps: Omit<VacuumDeps, 'shouldStop'>): IsolatedJob<VacuumRequest, VacuumReport> {
  const byName = new Map(deps.tables.map((t) => [t.name, t]));
  const ordered = (order: readonly string[]) => order.flatMap((name) => byName.get(name) ?? []);
  return {
    name: 'vacuum',
    tables: deps.tables.map((t) => t.name),
    clock: deps.clock,
    parse: parseVacuumRequest,
    unitAt: (order, request, cursor) => vacuumUnitAt(ordered(order), request, cursor),
    after: (order, request, unit) => vacuumCursorAfter(ordered(order), request, unit),
    run: (order, request, shouldStop) =>
      vacuum({ ...deps, tables: ordered(order), shouldStop }, request, { unit: true, isolate: true }),
    failuresOf: (report) => [
      ...(report.failedSteps ?? []).map((f) => ({
        table: f.table,
        failure: { table: f.table ?? WORK_AREA, kind: 'error' as const, ...f.error },
      })),
      ...maintainedTablesOf(report).flatMap((t) =>
        t.error === undefined
          ? []
          : [{ table: t.table, failure: { table: t.table, kind: 'error' as const, ...t.error } }],
      ),
    ],
    cursorOf: (report) => report.cursor,
    examinedOf: (report) => report.examined,
    merge: (reports) => mergeVacuumReports(reports, reports[0] ?? { dryRun: true, retentionHours: 0 }),
  };
}

/** The handler without middleware, over injectable dependencies. */
export function createVacuumHandler(
  deps: Omit<VacuumDeps, 'shouldStop'>,
  observability: Observability,
): (event: unknown, context?: Context) => Promise<VacuumReport & IsolationReport> {
  const checkpoint = checkpointOf('vacuum', deps.tables, deps.storeFor, deps.workRoot);
  const base = vacuumJob(deps);
  // Errors of a format's own maintenance are logged below in its own words: here they are only metered.
  const formatErrors = new Set<string>();
  const job: IsolatedJob<VacuumRequest, VacuumReport> = {
    ...base,
    failuresOf: (report) => {
      for (const t of maintainedTablesOf(report))
        if (t.error !== undefined) formatErrors.add(`${t.table}\n${t.error.message}`);
      return base.failuresOf(report);
    },
  };
  return async (event, context) => {
    const input = maintenanceInput(event);
    // Each failed turn is reported as it happens (a crash found at the start even if this process dies too); a
    // self-maintained table's error is logged in its own words below and only metered here.
    const report = await isolatedPass(input, checkpoint, job, context, {
      onFailure: (f) =>
        reportTableFailures(
          observability,
          'vacuum',
          [{ ...f, table: f.table === WORK_AREA ? undefined : f.table }],
          {
            logged: (r) => r.kind === 'error' && formatErrors.has(`${r.table}\n${r.message}`),
          },
        ),
    });
    const { logger, metrics } = observability;
    logger.info('vacuum finished', {
      dryRun: report.dryRun,
      retentionHours: report.retentionHours,
      examined: report.examined,
      removed: report.removed,
      spared: report.spared.length,
      failed: report.failed.length,
      notes: report.notes,
      complete: report.cursor === undefined,
    });
    for (const spared of report.spared) logger.warn('vacuum spared a candidate', { ...spared });
    // Each format's failed tables, in its own words, format by format in registration order.
    const tableErrors = formatSectionsOf(report).flatMap(({ maintenance, tables }) => {
      const failed = tables.filter((t) => t.error !== undefined);
      for (const t of failed) {
        logger.error(maintenance.errorLog, {
          table: t.table,
          bucket: t.bucket,
          tableRoot: t.tableRoot,
          error: t.error,
        });
      }
      return failed;
    });
    const prefix = report.dryRun ? 'VacuumDryRun' : 'Vacuum';
    metrics.addMetric(`${prefix}Objects`, MetricUnit.Count, report.totalRemoved.count);
    metrics.addMetric(`${prefix}Bytes`, MetricUnit.Bytes, report.totalRemoved.bytes);
    metrics.addMetric('VacuumFailures', MetricUnit.Count, report.failed.length);
    metrics.addMetric('VacuumTableErrors', MetricUnit.Count, tableErrors.length);
    // A table whose log shows a writer that does not coordinate as declared: alarmed (CoordinationRefusals).
    const refused = new Map<string, number>();
    for (const t of tableErrors) {
      if (t.error?.name === CoordinationMismatchError.name)
        refused.set(t.table, (refused.get(t.table) ?? 0) + 1);
    }
    emitMetrics(metrics, coordinationRefusalMetrics(refused));
    if (report.cursor !== undefined) metrics.addMetric('VacuumIncomplete', MetricUnit.Count, 1);
    return report;
  };
}

/**
 * The journals the vacuum judges by, per bucket. Trash, staging and store-journal entries of `lake-compactor
 * compact` runs (with this deployment's work root) are judged by the store journal in the bucket, every other
 * run's by the state table: `journalFor`, routed by run id. Object versions are deleted on the word of the state
 * table alone (`retiredVersionJournalFor`), read so that a file list kept in the work area counts only if it has
 * the digest the table recorded: a file found under the work root never names a version to delete.
 * @param stateJournalFor the state table's journal of a bucket; `strict`: refuse manifests without a digest.
 */
export function vacuumJournals(
  storeFor: (bucket: string) => ObjectStore,
  workRoot: string,
  stateJournalFor: (bucket: string, strict: boolean) => Journal,
): Pick<VacuumDeps, 'journalFor' | 'retiredVersionJournalFor'> {
  const routed = new Map<string, Journal>();
  const strict = new Map<string, Journal>();
  return {
    journalFor: (bucket) => {
      let journal = routed.get(bucket);
      if (journal === undefined) {
        journal = new RoutedJournal(
          new StoreJournal(storeFor(bucket), { workRoot }),
          stateJournalFor(bucket, false),
        );
        routed.set(bucket, journal);
      }
      return journal;
    },
    retiredVersionJournalFor: (bucket) => {
      let journal = strict.get(bucket);
      if (journal === undefined) {
        journal = stateJournalFor(bucket, true);
        strict.set(bucket, journal);
      }
      return journal;
    },
  };
}

/** The Lambda entry point. */
export const handler = lambdaEntry((env, observability) => {
  const runtime = createWorkflowRuntime({ env });
  const workRoot = runtime.env.WORK_ROOT;
  const dynamodb = new DynamoDBClient({});
  const dynamodbIn = dynamoDbClientsByRegion(dynamodb);
  const journals = vacuumJournals(runtime.storeFor, workRoot, (bucket, strict) =>
    strict
      ? new DynamoJournal({
          client: dynamodb,
          tableName: runtime.env.TABLE_NAME,
          manifests: { store: runtime.storeFor(bucket), prefix: journalManifestPrefix(workRoot) },
          requireManifestDigest: true,
        })
      : runtime.journalFor(bucket),
  );
  const formatClients = formatClientsFromEnv(env);
  return createVacuumHandler(
    {
      tables: runtime.tables,
      workRoot,
      storeFor: runtime.storeFor,
      ...journals,
      clock: runtime.clock,
      // Every format's services in a bucket, composed as the workflow composes them: e.g. the DynamoDB commit
      // tables and the Glue and REST catalog clients the tables' settings name (each format's IAM: its folder under
      // infra/formats/).
      services: (bucket) =>
        formatServices({ dynamodb: dynamodbIn, clock: runtime.clock, ...formatClients }, { bucket }),
    },
    observability,
  );
});
