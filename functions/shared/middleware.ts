// The one middy stack every handler uses: Powertools structured logs with the Lambda context injected and
// metrics flushed as EMF after each invocation, configured once per cold start.
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy, { type MiddyfiedHandler } from '@middy/core';
import type { Context } from 'aws-lambda';

/** Metric namespace of every lake-compactor function (dashboards and alarms key on it). */
export const METRICS_NAMESPACE = 'LakeCompactor';

export interface Observability {
  readonly logger: Logger;
  readonly metrics: Metrics;
}

/**
 * A logger and a metrics collector for one function. Service name and log level come from the standard
 * Powertools variables (`POWERTOOLS_SERVICE_NAME`, `POWERTOOLS_LOG_LEVEL`), which the construct sets.
 */
export function createObservability(serviceName = 'lake-compactor'): Observability {
  return {
    logger: new Logger({ serviceName }),
    metrics: new Metrics({ namespace: METRICS_NAMESPACE, serviceName }),
  };
}

/**
 * Wraps a handler with the shared middleware. Empty metric sets do not throw: a batch of test events
 * publishes nothing, and that is not an error worth failing the batch for.
 */
export function withObservability<E, R>(
  handler: (event: E, context: Context) => Promise<R>,
  observability: Observability,
): MiddyfiedHandler<E, R, Error, Context> {
  return middy<E, R, Error, Context>(handler)
    .use(injectLambdaContext(observability.logger, { resetKeys: true }))
    .use(logMetrics(observability.metrics, { captureColdStartMetric: true, throwOnEmptyMetrics: false }));
}
