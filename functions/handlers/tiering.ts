// Tiering Lambda entry (EventBridge schedule, or the console with a tiering input): validates the input,
// applies the storage-class rules until its budget or the invocation's time runs out, returns report and cursor.
// Each table is its own turn (shared/maintenance-runtime.ts isolatedPass): one that fails is reported and metered
// (TableFailures), goes last in line, and the others are tiered all the same.
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Context } from 'aws-lambda';
import { z } from 'zod';
import { InvalidInputError } from '../core/errors.js';
import {
  mergeTieringReports,
  parseTieringRequest,
  type TieringDeps,
  type TieringReport,
  type TieringRequest,
  tier,
  tieringCursorAfter,
  tieringRulesSchema,
  tieringUnitAt,
} from '../core/maintenance/tiering.js';
import { baseEnvSchema, parseEnv } from '../shared/env.js';
import {
  checkpointOf,
  type IsolatedJob,
  type IsolationReport,
  isolatedPass,
  maintenanceInput,
} from '../shared/maintenance-runtime.js';
import { lambdaEntry, type Observability } from '../shared/middleware.js';
import { reportTableFailures } from '../shared/table-failures.js';
import { createWorkflowRuntime } from '../shared/workflow-runtime.js';

/** Variables set by the Maintenance construct. */
export const tieringEnvSchema = baseEnvSchema.extend({
  /** JSON of the default rules (`[{ afterDays, storageClass }]`) and per-table rules; an input's own rules win. */
  TIERING_RULES: z.string().optional(),
  TIERING_TABLE_RULES: z.string().optional(),
});

const tableRulesSchema = z.record(z.string(), tieringRulesSchema);

/** The handler without middleware, over injectable dependencies and configured default rules. */
export function createTieringHandler(
  deps: Omit<TieringDeps, 'shouldStop'> & {
    /** The deployment's work root: the checkpoint lives in its `maintenance/` folder. */
    readonly workRoot: string;
  },
  observability: Observability,
  defaults: { readonly rules?: unknown; readonly tableRules?: unknown } = {},
): (event: unknown, context?: Context) => Promise<TieringReport & IsolationReport> {
  const checkpoint = checkpointOf('tiering', deps.tables, deps.storeFor, deps.workRoot);
  const byName = new Map(deps.tables.map((t) => [t.name, t]));
  const ordered = (order: readonly string[]) => order.flatMap((name) => byName.get(name) ?? []);
  const job: IsolatedJob<TieringRequest, TieringReport> = {
    name: 'tiering',
    tables: deps.tables.map((t) => t.name),
    clock: deps.clock,
    parse: (input) =>
      parseTieringRequest({
        ...(defaults.rules === undefined ? {} : { rules: defaults.rules }),
        ...(defaults.tableRules === undefined ? {} : { tableRules: defaults.tableRules }),
        ...input,
      }),
    unitAt: (order, request, cursor) => tieringUnitAt(ordered(order), request, cursor),
    after: (order, request, unit) => tieringCursorAfter(ordered(order), request, unit),
    run: (order, request, shouldStop) =>
      tier({ ...deps, tables: ordered(order), shouldStop }, request, { unit: true }),
    // A table's tiering reads no metadata: what fails is its listing or its copies, thrown (and caught per turn).
    failuresOf: () => [],
    cursorOf: (report) => report.cursor,
    examinedOf: (report) => report.examined,
    merge: (reports) => mergeTieringReports(reports, reports[0]?.dryRun ?? true),
  };
  return async (event, context) => {
    const report = await isolatedPass(maintenanceInput(event), checkpoint, job, context, {
      onFailure: (f) => reportTableFailures(observability, 'tiering', [f]),
    });
    const { logger, metrics } = observability;
    logger.info('tiering finished', {
      dryRun: report.dryRun,
      examined: report.examined,
      moved: report.moved,
      kept: report.kept,
      skippedTables: report.skippedTables,
      ...(report.notes === undefined ? {} : { notes: report.notes }),
      changed: report.changed.length,
      failed: report.failed.length,
      complete: report.cursor === undefined,
    });
    const prefix = report.dryRun ? 'TieringDryRun' : 'Tiering';
    const totals = Object.values(report.moved).reduce(
      (sum, t) => ({ count: sum.count + t.count, bytes: sum.bytes + t.bytes }),
      { count: 0, bytes: 0 },
    );
    metrics.addMetric(`${prefix}Objects`, MetricUnit.Count, totals.count);
    metrics.addMetric(`${prefix}Bytes`, MetricUnit.Bytes, totals.bytes);
    metrics.addMetric('TieringFailures', MetricUnit.Count, report.failed.length);
    return report;
  };
}

/** Parses the configured default rules once, at cold start; a malformed value fails it naming the variable. */
export function tieringDefaultsFromEnv(env: Readonly<Record<string, string | undefined>>): {
  rules?: unknown;
  tableRules?: unknown;
} {
  const config = parseEnv(tieringEnvSchema, env as NodeJS.ProcessEnv);
  const parse = (name: string, raw: string | undefined, schema: z.ZodType): unknown => {
    if (raw === undefined || raw === '') return undefined;
    try {
      return schema.parse(JSON.parse(raw));
    } catch (cause) {
      throw new InvalidInputError(
        `${name} is not valid tiering rules JSON (${String(cause)}); fix the construct's tiering rules`,
      );
    }
  };
  const rules = parse('TIERING_RULES', config.TIERING_RULES, tieringRulesSchema);
  const tableRules = parse('TIERING_TABLE_RULES', config.TIERING_TABLE_RULES, tableRulesSchema);
  return {
    ...(rules === undefined ? {} : { rules }),
    ...(tableRules === undefined ? {} : { tableRules }),
  };
}

/** The Lambda entry point. */
export const handler = lambdaEntry((env, observability) => {
  const runtime = createWorkflowRuntime({ env });
  return createTieringHandler(
    {
      tables: runtime.tables,
      storeFor: runtime.storeFor,
      clock: runtime.clock,
      workRoot: runtime.env.WORK_ROOT,
    },
    observability,
    tieringDefaultsFromEnv(env),
  );
});
