// The one middy stack every handler uses: Powertools structured logs with the Lambda context injected and
// metrics flushed as EMF after each invocation, configured once per cold start.
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { Metrics } from '@aws-lambda-powertools/metrics';
import middy, { type MiddyfiedHandler } from '@middy/core';
import type { Context } from 'aws-lambda';
import { type MemoryBudget, withMemoryBudget } from '../core/memory-budget.js';
import { METRICS_NAMESPACE, METRICS_SERVICE, type MetricDatum } from '../core/metrics.js';
import { lambdaMemoryBudget } from './env.js';

/** Metric namespace of every lake-compactor function (dashboards and alarms key on it). */
export { METRICS_NAMESPACE };

export interface Observability {
  readonly logger: Logger;
  readonly metrics: Metrics;
}

/**
 * A logger and a metrics collector for one function. The logs' service name and level come from the
 * standard Powertools variables (`POWERTOOLS_SERVICE_NAME`, `POWERTOOLS_LOG_LEVEL`), which the construct
 * sets; the metrics' `service` dimension is always METRICS_SERVICE, because the dashboard and alarms name
 * it and a metric with any other value would be a different metric they never show.
 */
export function createObservability(serviceName = METRICS_SERVICE): Observability {
  return {
    logger: new Logger({ serviceName }),
    metrics: new Metrics({ namespace: METRICS_NAMESPACE, serviceName: METRICS_SERVICE }),
  };
}

/**
 * Publishes metrics that carry their own dimensions. Powertools puts every buffered metric of a flush under
 * the same dimension sets, so each datum goes out as a single metric (one EMF line, published at once)
 * with its sets added; metrics without per-metric dimensions keep using `metrics.addMetric`.
 */
export function emitMetrics(metrics: Metrics, data: readonly MetricDatum[]): void {
  for (const datum of data) {
    const single = metrics.singleMetric();
    for (const set of datum.dimensionSets) single.addDimensions({ ...set });
    single.addMetric(datum.name, datum.unit, datum.value);
  }
}

/**
 * Captures the cold-start metric before an invocation and flushes the stored metrics after it (also after
 * an error) — only when there are any. Powertools' own `logMetrics` flushes every time and warns "No
 * application metrics to publish" on each invocation that added none, which is most workflow steps: a
 * warning per step in every log group, for nothing.
 */
export function flushMetrics(metrics: Metrics): middy.MiddlewareObj<unknown, unknown, Error, Context> {
  const flush = () => {
    if (metrics.hasStoredMetrics()) metrics.publishStoredMetrics();
  };
  return {
    before: (request) => {
      metrics.captureColdStartMetric(request.context.functionName);
    },
    after: flush,
    onError: flush,
  };
}

/** Wraps a handler with the shared middleware: structured logs with the Lambda context, metrics flushed. */
export function withObservability<E, R>(
  handler: (event: E, context: Context) => Promise<R>,
  observability: Observability,
): MiddyfiedHandler<E, R, Error, Context> {
  return middy<E, R, Error, Context>(handler)
    .use(injectLambdaContext(observability.logger, { resetKeys: true }))
    .use(flushMetrics(observability.metrics));
}

/**
 * A Lambda entry that captures the environment when the module loads (the cold start; the local cloud sets
 * each function's variables only then) and builds the handler on the first event, so importing a handler
 * module (tests, tools) never fails on a missing variable and a bad variable fails the invocation with a
 * message naming it. The handler then runs under the shared middleware.
 */
export function lambdaEntry<E, R>(
  create: (
    env: Readonly<Record<string, string | undefined>>,
    observability: Observability,
  ) => (event: E, context: Context) => Promise<R>,
): MiddyfiedHandler<E, R, Error, Context> {
  const env = { ...process.env };
  const observability = createObservability(env.POWERTOOLS_SERVICE_NAME);
  let budget: { readonly value: MemoryBudget | undefined } | undefined;
  let run: ((event: E, context: Context) => Promise<R>) | undefined;
  return withObservability(async (event: E, context: Context) => {
    run ??= create(env, observability);
    // Every invocation runs under the function's memory budget (core/memory-budget.ts), read on the first event.
    budget ??= { value: lambdaMemoryBudget(env) };
    const invocation = run;
    const { value } = budget;
    return value === undefined
      ? invocation(event, context)
      : withMemoryBudget(value, () => invocation(event, context));
  }, observability);
}
