// Tiering Lambda entry (EventBridge schedule, or the console with a tiering input): validates the input,
// applies the storage-class rules until its budget or the invocation's time runs out, returns report and cursor.
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Context } from 'aws-lambda';
import { z } from 'zod';
import { InvalidInputError } from '../core/errors.js';
import {
  parseTieringRequest,
  type TieringDeps,
  type TieringReport,
  tier,
  tieringRulesSchema,
} from '../core/maintenance/tiering.js';
import { baseEnvSchema, parseEnv } from '../shared/env.js';
import { checkpointOf, deadlineOf, maintenanceInput, resumable } from '../shared/maintenance-runtime.js';
import { lambdaEntry, type Observability } from '../shared/middleware.js';
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
): (event: unknown, context?: Context) => Promise<TieringReport> {
  const checkpoint = checkpointOf('tiering', deps.tables, deps.storeFor, deps.workRoot);
  return async (event, context) => {
    const report = await resumable(maintenanceInput(event), checkpoint, (input) =>
      tier(
        { ...deps, shouldStop: deadlineOf(context) },
        parseTieringRequest({
          ...(defaults.rules === undefined ? {} : { rules: defaults.rules }),
          ...(defaults.tableRules === undefined ? {} : { tableRules: defaults.tableRules }),
          ...input,
        }),
      ),
    );
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
