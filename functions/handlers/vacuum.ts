// Vacuum Lambda entry (EventBridge schedule, or the console with a vacuum input): validates the input,
// runs the vacuum core until its budget or the invocation's time runs out, and returns the report and cursor.
// Tables with `format: "delta"` get Delta VACUUM from the core, read through each table's declared commit
// coordination (DynamoDB clients built here); one that was refused or could not be read is logged as an error and
// counted (VacuumTableErrors; a coordination mismatch also in CoordinationRefusals, which is alarmed), and the
// others are vacuumed all the same. Tables with
// `format: "iceberg"` get expire_snapshots and remove_orphan_files, with the same per-table error rule, through
// the catalog each names (path, Glue or REST): the composition root below builds the catalog clients once per cold
// start from the function's environment, as the workflow's runtime and the sweep do.
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Context } from 'aws-lambda';
import { RoutedJournal } from '../adapters/routed-journal.js';
import { StoreJournal } from '../adapters/store-journal.js';
import { CoordinationMismatchError } from '../core/errors.js';
import {
  parseVacuumRequest,
  type VacuumDeps,
  type VacuumReport,
  vacuum,
} from '../core/maintenance/vacuum.js';
import { coordinationRefusalMetrics } from '../core/metrics.js';
import { dynamoDbClientsByRegion, formatServices } from '../shared/format-services.js';
import { icebergCatalogServices } from '../shared/iceberg-catalog-services.js';
import { checkpointOf, deadlineOf, maintenanceInput, resumable } from '../shared/maintenance-runtime.js';
import { emitMetrics, lambdaEntry, type Observability } from '../shared/middleware.js';
import { createWorkflowRuntime } from '../shared/workflow-runtime.js';

/** The handler without middleware, over injectable dependencies. */
export function createVacuumHandler(
  deps: Omit<VacuumDeps, 'shouldStop'>,
  observability: Observability,
): (event: unknown, context?: Context) => Promise<VacuumReport> {
  const checkpoint = checkpointOf('vacuum', deps.tables, deps.storeFor, deps.workRoot);
  return async (event, context) => {
    const report = await resumable(maintenanceInput(event), checkpoint, (input) =>
      vacuum({ ...deps, shouldStop: deadlineOf(context) }, parseVacuumRequest(input)),
    );
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
    const deltaErrors = (report.deltaTables ?? []).filter((t) => t.error !== undefined);
    for (const t of deltaErrors) {
      logger.error('Delta VACUUM not run for a table; nothing of it was deleted', {
        table: t.table,
        bucket: t.bucket,
        tableRoot: t.tableRoot,
        error: t.error,
      });
    }
    const icebergErrors = (report.icebergTables ?? []).filter((t) => t.error !== undefined);
    for (const t of icebergErrors) {
      logger.error(
        'Iceberg expire_snapshots and remove_orphan_files not run for a table; nothing of it was deleted',
        {
          table: t.table,
          bucket: t.bucket,
          tableRoot: t.tableRoot,
          error: t.error,
        },
      );
    }
    const prefix = report.dryRun ? 'VacuumDryRun' : 'Vacuum';
    metrics.addMetric(`${prefix}Objects`, MetricUnit.Count, report.totalRemoved.count);
    metrics.addMetric(`${prefix}Bytes`, MetricUnit.Bytes, report.totalRemoved.bytes);
    metrics.addMetric('VacuumFailures', MetricUnit.Count, report.failed.length);
    metrics.addMetric('VacuumTableErrors', MetricUnit.Count, deltaErrors.length + icebergErrors.length);
    // A table whose log shows a writer that does not coordinate as declared: alarmed (CoordinationRefusals).
    const refused = new Map<string, number>();
    for (const t of [...deltaErrors, ...icebergErrors]) {
      if (t.error?.name === CoordinationMismatchError.name)
        refused.set(t.table, (refused.get(t.table) ?? 0) + 1);
    }
    emitMetrics(metrics, coordinationRefusalMetrics(refused));
    if (report.cursor !== undefined) metrics.addMetric('VacuumIncomplete', MetricUnit.Count, 1);
    return report;
  };
}

/** The Lambda entry point. */
export const handler = lambdaEntry((env, observability) => {
  const runtime = createWorkflowRuntime({ env });
  const dynamodbIn = dynamoDbClientsByRegion(new DynamoDBClient({}));
  const workRoot = runtime.env.WORK_ROOT;
  // Runs of `lake-compactor compact` (with this deployment's work root) journal in the bucket itself: their
  // trash and staging are judged by it.
  const journals = new Map<string, RoutedJournal>();
  const journalFor = (bucket: string): RoutedJournal => {
    let journal = journals.get(bucket);
    if (journal === undefined) {
      journal = new RoutedJournal(
        new StoreJournal(runtime.storeFor(bucket), { workRoot }),
        runtime.journalFor(bucket),
      );
      journals.set(bucket, journal);
    }
    return journal;
  };
  return createVacuumHandler(
    {
      tables: runtime.tables,
      workRoot,
      storeFor: runtime.storeFor,
      journalFor,
      clock: runtime.clock,
      // Glue and REST catalog clients for Iceberg tables configured with one (IAM: iceberg-catalog-access.ts).
      iceberg: icebergCatalogServices(env),
      // DynamoDB commit tables of Delta tables declared with one (IAM: delta-log-access.ts): VACUUM finishes an
      // incomplete entry before reading the log, and checks the declared coordination.
      delta: (bucket) => formatServices({ dynamodb: dynamodbIn, clock: runtime.clock }, { bucket }),
    },
    observability,
  );
});
