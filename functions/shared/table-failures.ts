// How a function serving every table reports a table whose turn failed: one ERROR log line naming the table, its
// failure and how many turns in a row failed, and the `TableFailures` metric the TableFailures alarm watches.
import type { TableFailure } from '../core/isolation.js';
import { tableFailureMetrics } from '../core/metrics.js';
import { emitMetrics, type Observability } from './middleware.js';

/** A failure as reported; the table is undefined for a unit that is no table (vacuum's work area). */
export type FailureToReport = Omit<TableFailure, 'table'> & {
  readonly table: string | undefined;
  readonly failuresInARow?: number;
};

/** Logs and meters each failure of `job` (`vacuum`, `tiering`, `sweep`, `reconcile`, `profiler`). */
export function reportTableFailures(
  observability: Observability,
  job: string,
  failures: readonly FailureToReport[],
  options: {
    /** Failures the caller logged already in its own words (metered here all the same). */
    readonly logged?: (failure: FailureToReport) => boolean;
  } = {},
): void {
  for (const f of failures) {
    if (options.logged?.(f) === true) continue;
    observability.logger.error(
      `${job}: a table's turn failed (${f.kind}); the other tables were served all the same, and this one goes last in line until it succeeds`,
      {
        job,
        table: f.table ?? '(work area)',
        kind: f.kind,
        error: `${f.name}: ${f.message}`,
        ...(f.failuresInARow === undefined ? {} : { failuresInARow: f.failuresInARow }),
      },
    );
  }
  emitMetrics(observability.metrics, tableFailureMetrics(failures));
}
