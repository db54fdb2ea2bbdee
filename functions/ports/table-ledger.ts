// The TableLedger port: what a function serving every table remembers of each table's turns between invocations —
// failures in a row, and the attempts in progress, so the process that dies in one is found by the next invocation.
import type { TableFailure, TableHealth } from '../core/isolation.js';

/** One table's turn in one job, open from `since` until it ends or, at the latest, `until`. */
export interface TableAttempt {
  /** The function's job: `sweep`, `reconcile`, `profiler`. */
  readonly job: string;
  readonly table: string;
  /** Unique per attempt (an invocation id and the table). */
  readonly id: string;
  readonly since: number;
  /** The invocation's deadline: an attempt still open after it is one whose process died. */
  readonly until: number;
}

export interface TableLedger {
  /**
   * Every table's health in `job`, after each attempt still open past its deadline has been turned into a crash:
   * those come back in `crashed`, each claimed by exactly one caller however many review at once, and counted in
   * the health returned.
   */
  review(
    job: string,
    now: number,
  ): Promise<{ health: ReadonlyMap<string, TableHealth>; crashed: readonly TableAttempt[] }>;
  /** Opens an attempt (before the table's work starts). */
  begin(attempt: TableAttempt): Promise<void>;
  /** Closes it: a success (no failure) forgets the table's failures, a failure is one more in a row. */
  end(attempt: TableAttempt, failure: TableFailure | undefined, now: number): Promise<TableHealth>;
}
