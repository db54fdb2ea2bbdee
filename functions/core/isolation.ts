// Per-table isolation of the functions that serve every table in one invocation (sweep, vacuum, tiering,
// profiler): what one table's failure is, and the order that keeps a failing table from going first every time.
//
// Why: a table's metadata is written by someone else, buggy or malicious (SECURITY-NOTES H2). Its read can throw
// deep in a format, outlast any budget, or kill the process (out of memory, a V8 fatal error). Each of those must
// cost that table its turn — reported by name, metered, alarmed — and never the other tables theirs: a failing
// table is put last in line, and the table a process died in is found by the attempt it left open.
import { CompactorError } from './errors.js';

/**
 * How a table's turn ended without its work done: `error` (an error was thrown: unreadable metadata, a refusal, a
 * denied request), `time-budget` (its work outlasted the time it was given and was abandoned), `crash` (the process
 * died while working on it — out of memory, a runtime timeout, a fatal error — found by the next invocation).
 */
export const TABLE_FAILURE_KINDS = ['error', 'time-budget', 'crash'] as const;
export type TableFailureKind = (typeof TABLE_FAILURE_KINDS)[number];

/** One table's failed turn in one job. */
export interface TableFailure {
  readonly table: string;
  readonly kind: TableFailureKind;
  /** The error's name (`TableTimeBudgetExceededError`, `TableCrashedError`, a format's typed error …). */
  readonly name: string;
  readonly message: string;
}

/** A failed turn as reported: the failure, and how many turns of that table in a row failed, this one included. */
export type ReportedFailure = TableFailure & { readonly failuresInARow: number };

/** What a job remembers of a table between invocations: failures in a row, and the last one. */
export interface TableHealth {
  /** Turns in a row that failed, since the last one that did not: 0 = healthy. */
  readonly failures: number;
  readonly last?: TableFailure & { readonly at: number };
}

/**
 * A table's work outlasted the time its invocation gave it, and was abandoned (what it changed already stays: every
 * step of the maintenance it runs is idempotent and is judged again next time). The table is put last in line; if
 * it keeps happening, its metadata is too large or too slow to read for the function: see its log lines.
 */
export class TableTimeBudgetExceededError extends CompactorError {}

/**
 * The process died while working on the table (it left its attempt open past the invocation's deadline): out of
 * memory, the function's timeout, or a fatal runtime error, usually caused by the table's metadata. Reported by the
 * next invocation, which puts the table last in line.
 */
export class TableCrashedError extends CompactorError {}

/** A thrown value as the failure of `table`'s turn. */
export function tableFailureOf(table: string, err: unknown): TableFailure {
  const kind: TableFailureKind =
    err instanceof TableTimeBudgetExceededError
      ? 'time-budget'
      : err instanceof TableCrashedError
        ? 'crash'
        : 'error';
  return err instanceof Error
    ? { table, kind, name: err.name || 'Error', message: err.message }
    : { table, kind, name: 'Error', message: String(err) };
}

/** The failure recorded for a table whose process died in an attempt opened at `since`. */
export function crashOf(table: string, job: string, since: number): TableFailure {
  return tableFailureOf(
    table,
    new TableCrashedError(
      `The ${job} process died while working on table ${table} (attempt started ${new Date(since).toISOString()}, not ended by its deadline): out of memory, the function's timeout or a fatal runtime error, most likely caused by the table's metadata. The table goes last in line from now on; read the function's log for that invocation (REPORT line, "Runtime exited"), check the table's log or metadata size, and raise the function's memory or fix the table.`,
    ),
  );
}

/** The health after one turn: reset by a success (undefined failure), else one more failure in a row. */
export function healthAfter(
  before: TableHealth | undefined,
  failure: TableFailure | undefined,
  at: number,
): TableHealth {
  return failure === undefined
    ? { failures: 0 }
    : { failures: (before?.failures ?? 0) + 1, last: { ...failure, at } };
}

/**
 * The order one pass takes `tables` in: every table whose last turn succeeded (or that has none) in configured
 * order, then the failing ones, the one failing longest last. So a table that throws, overruns or crashes the
 * process costs the others nothing after its first time: they are done before it is tried again.
 */
export function passOrder(
  tables: readonly string[],
  health: (table: string) => TableHealth | undefined,
): string[] {
  const healthy = tables.filter((t) => (health(t)?.failures ?? 0) === 0);
  const failing = tables
    .filter((t) => (health(t)?.failures ?? 0) > 0)
    .map((t, i) => ({ t, i, failures: health(t)?.failures ?? 0 }))
    .sort((a, b) => a.failures - b.failures || a.i - b.i)
    .map(({ t }) => t);
  return [...healthy, ...failing];
}
