// Table turns for the functions that serve every table in one invocation without a cursor (the sweep, reconcile,
// the profiler's log reads): each table's work runs as its own attempt — recorded in the ledger, raced against its
// time budget — healthy tables first, so one whose metadata throws, overruns or kills the process costs only itself.
import type { Context } from 'aws-lambda';
import pLimit from 'p-limit';
import {
  passOrder,
  type ReportedFailure,
  type TableFailure,
  type TableHealth,
  tableFailureOf,
} from '../core/isolation.js';
import type { Clock } from '../ports/clock.js';
import type { TableAttempt, TableLedger } from '../ports/table-ledger.js';
import { remainingMs, withTimeBudget } from './time-budget.js';

export interface TableTurnsOptions<T> {
  /** The job the ledger keeps the turns under (`sweep`, `reconcile`, `profiler`). */
  readonly job: string;
  /** The tables to serve, in configured order (failing ones are taken last). */
  readonly tables: readonly string[];
  /** Where attempts and failures are kept between invocations; absent: each invocation on its own. */
  readonly ledger?: TableLedger;
  readonly clock: Clock;
  /** The Lambda context: its deadline bounds every turn, and dates the attempts. */
  readonly context?: Context;
  /** Kept back from the invocation's deadline for what comes after the turns (the response, metrics). */
  readonly marginMs: number;
  /** The most one table's turn may take; what is left of the invocation in any case. @default what is left */
  readonly budgetMs?: number;
  /**
   * The share of what is left of the invocation one turn may take (0 < share ≤ 1), so a table that hangs leaves time
   * for the tables after it. @default 1
   */
  readonly budgetShare?: number;
  /** Turns at once. @default 1 */
  readonly concurrency?: number;
  /** A unique id of this invocation (the Lambda request id), for the attempts. */
  readonly invocationId: string;
  /** Told of each failure as it happens, including the crashes of earlier invocations found at the start. */
  readonly onFailure: (failure: ReportedFailure) => void;
  /** The ledger could not be read or written: the turns go on without it. */
  readonly onLedgerError?: (error: unknown) => void;
  /**
   * A table not to take this time, and the error its result fails with (not a turn: nothing is recorded), e.g. a
   * table whose last turn killed the process, beside others a second death would take with it.
   */
  readonly skip?: (table: string, health: TableHealth | undefined) => Error | undefined;
  /** One table's work; `shouldStop` says when it should wrap up (its budget is nearly spent). */
  readonly turn: (table: string, shouldStop: () => boolean) => Promise<T>;
}

export type TurnResult<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly failure: TableFailure };

export interface TableTurns<T> {
  /** Each table taken (or skipped), in the order taken, with its result. */
  readonly results: ReadonlyMap<string, TurnResult<T>>;
  /** Health as the ledger had it at the start (after this invocation's review of crashes). */
  readonly health: ReadonlyMap<string, TableHealth>;
  /** Every failure reported (crashes found, then failed turns). */
  readonly failures: readonly ReportedFailure[];
  /** Tables not taken: the invocation had no time left for them. */
  readonly notReached: readonly string[];
}

/** How long an attempt stays open without a Lambda deadline (tests, local runs). */
const DEFAULT_ATTEMPT_MS = 15 * 60_000;

/** Runs `turn` for each table, isolated (see the module comment). */
export async function tableTurns<T>(options: TableTurnsOptions<T>): Promise<TableTurns<T>> {
  const { clock, ledger } = options;
  // Budgets run on real time (the invocation's deadline is real); the ledger's dates on the clock.
  const start = clock.now();
  const t0 = performance.now();
  const lambdaLeft = remainingMs(options.context);
  const end = lambdaLeft === undefined ? undefined : start + lambdaLeft;
  const left = () =>
    lambdaLeft === undefined ? undefined : lambdaLeft - (performance.now() - t0) - options.marginMs;
  const failures: ReportedFailure[] = [];
  const report = (failure: ReportedFailure) => {
    failures.push(failure);
    options.onFailure(failure);
  };
  let health: ReadonlyMap<string, TableHealth> = new Map();
  if (ledger !== undefined) {
    try {
      const reviewed = await ledger.review(options.job, start);
      health = reviewed.health;
      for (const crashed of reviewed.crashed) {
        const h = health.get(crashed.table);
        if (h?.last !== undefined) report({ ...h.last, failuresInARow: h.failures });
      }
    } catch (error) {
      options.onLedgerError?.(error);
    }
  }
  const order = passOrder(options.tables, (t) => health.get(t));
  const results = new Map<string, TurnResult<T>>();
  const notReached: string[] = [];
  const limit = pLimit(Math.max(1, options.concurrency ?? 1));
  await Promise.all(
    order.map((table) =>
      limit(async () => {
        const skipped = options.skip?.(table, health.get(table));
        if (skipped !== undefined) {
          results.set(table, { ok: false, failure: tableFailureOf(table, skipped) });
          return;
        }
        const remaining = left();
        if (remaining !== undefined && remaining <= 0) {
          notReached.push(table);
          return;
        }
        const budget = minDefined(
          options.budgetMs,
          remaining === undefined ? undefined : remaining * (options.budgetShare ?? 1),
        );
        const began = clock.now();
        const startedAt = performance.now();
        const attempt: TableAttempt = {
          job: options.job,
          table,
          id: `${options.invocationId}#${table}`,
          since: began,
          until: end ?? began + DEFAULT_ATTEMPT_MS,
        };
        await ledger?.begin(attempt).catch((error: unknown) => options.onLedgerError?.(error));
        const shouldStop = () =>
          (left() ?? 1) <= 0 || (budget !== undefined && performance.now() - startedAt >= budget * 0.8);
        let result: TurnResult<T>;
        try {
          result = {
            ok: true,
            value: await withTimeBudget(
              () => options.turn(table, shouldStop),
              budget,
              `${options.job} of table ${table}`,
            ),
          };
        } catch (err) {
          result = { ok: false, failure: tableFailureOf(table, err) };
        }
        results.set(table, result);
        const failure = result.ok ? undefined : result.failure;
        let after: TableHealth | undefined;
        if (ledger !== undefined) {
          after = await ledger.end(attempt, failure, clock.now()).catch((error: unknown) => {
            options.onLedgerError?.(error);
            return undefined;
          });
        }
        if (failure !== undefined) {
          report({ ...failure, failuresInARow: after?.failures ?? (health.get(table)?.failures ?? 0) + 1 });
        }
      }),
    ),
  );
  return { results, health, failures, notReached };
}

function minDefined(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : Math.min(a, b);
}
