// Shared plumbing of the maintenance Lambdas (vacuum, tiering): what a scheduled event means, when an
// invocation must stop paging, the checkpoint that lets a large lake be processed across runs, and the per-table
// isolation of a pass (each table its own turn, time budget and recorded attempt; a failing table goes last).
import type { Context } from 'aws-lambda';
import { z } from 'zod';
import { InvalidInputError, ObjectNotFoundError } from '../core/errors.js';
import {
  crashOf,
  healthAfter,
  passOrder,
  type ReportedFailure,
  type TableFailure,
  type TableHealth,
  tableFailureOf,
} from '../core/isolation.js';
import { maintenanceCursorKey } from '../core/workflow/layout.js';
import type { Clock } from '../ports/clock.js';
import type { ObjectStore } from '../ports/object-store.js';
import { remainingMs, withTimeBudget } from './time-budget.js';

/** Time kept back from the Lambda timeout for the last page's deletes and the response. */
export const SAFETY_MARGIN_MS = 90_000;

/**
 * The input an operator or a rule meant. A rule without Input delivers the bare scheduled event, which
 * carries no settings: it means "the defaults" (which include dryRun: true).
 */
export function maintenanceInput(event: unknown): unknown {
  if (
    event !== null &&
    typeof event === 'object' &&
    (event as Record<string, unknown>)['detail-type'] === 'Scheduled Event'
  ) {
    return {};
  }
  return event ?? {};
}

/** Where a scheduled run keeps its place between invocations: one small JSON object in the work root. */
export interface Checkpoint {
  readonly store: ObjectStore;
  readonly key: string;
}

/** The checkpoint of `job` for these tables: in the first table's bucket, under the work root's `maintenance/`. */
export function checkpointOf(
  job: 'vacuum' | 'tiering',
  tables: readonly { readonly bucket?: string | undefined }[],
  storeFor: (bucket: string) => ObjectStore,
  workRoot: string,
): Checkpoint | undefined {
  const bucket = tables.find((t) => t.bucket !== undefined)?.bucket;
  return bucket === undefined
    ? undefined
    : { store: storeFor(bucket), key: maintenanceCursorKey(workRoot, job) };
}

/**
 * The unit of a pass that is no table: vacuum's work-area steps (every bucket's runs, trash, staging, journal and
 * uploads). Its attempt and health are kept under this name, which no table can have (names start alphanumeric).
 */
export const WORK_AREA = '(work area)';

/** An attempt left open while a unit runs: found by a later invocation, the process died in it. */
interface InFlight {
  readonly unit: string;
  readonly since: number;
}

/** What a scheduled pass keeps between invocations (`<work root>maintenance/<job>.cursor.json`). */
interface PassState {
  /** Where the pass is; absent between passes. */
  readonly cursor?: string;
  /** The table selection the cursor belongs to (`*` = all). */
  readonly tables: string;
  /** The pass's order of tables (stable while it runs; absent in checkpoints of older versions: configured). */
  readonly order?: readonly string[];
  /** The unit being worked on, written before it starts and cleared after. */
  readonly inFlight?: InFlight;
  /** Units whose last turn failed, by name (healthy ones are not kept). */
  readonly health?: Readonly<Record<string, TableHealth>>;
}

/** A maintenance job as the isolated pass drives it, one unit (the work area, or a table) per call. */
export interface IsolatedJob<Q extends { readonly maxObjects: number; readonly cursor?: string }, R> {
  readonly name: 'vacuum' | 'tiering';
  /** The configured tables' names, in configured order. */
  readonly tables: readonly string[];
  readonly clock: Clock;
  /** Validates the input (without `resume` and `tableTimeBudgetSeconds`); throws InvalidInputError. */
  parse(input: Record<string, unknown>): Q;
  /**
   * The table whose unit a call from `cursor` (undefined: the pass's start) works on, over `order`; undefined for
   * a unit that is no table. Throws InvalidInputError for a cursor that does not fit.
   */
  unitAt(order: readonly string[], request: Q, cursor: string | undefined): string | undefined;
  /** The cursor of the unit after `unit` (undefined: the work area) over `order`; undefined when none follows. */
  after(order: readonly string[], request: Q, unit: string | undefined): string | undefined;
  /** Runs one unit from `request.cursor`, with the tables in `order`; stops early when `shouldStop` says so. */
  run(order: readonly string[], request: Q, shouldStop: () => boolean): Promise<R>;
  /** What `report` says failed, per table (undefined: the unit that is no table). */
  failuresOf(report: R): readonly { readonly table: string | undefined; readonly failure: TableFailure }[];
  cursorOf(report: R): string | undefined;
  examinedOf(report: R): number;
  /** One report of the units run, as if one call had run them all (cursor: the last one's). */
  merge(reports: readonly R[]): R;
}

/** What an isolated pass adds to its job's report. */
export interface IsolationReport {
  /**
   * Every table (or the work area) whose turn failed in this invocation — an error, its time budget spent, or the
   * process dying in it in the previous invocation (`crash`) — each with its failures in a row so far.
   */
  readonly tableFailures: readonly ReportedFailure[];
}

const budgetSchema = z.number().positive().max(86_400).optional();

/**
 * Runs a maintenance pass unit by unit — the work area, then each table in turn — from the saved cursor (with
 * `resume: true`, as the schedules send) or the input's. Each table gets its own turn:
 * - an error (thrown deep in a format read, a refusal, a denied listing) is that table's failure, and the pass
 *   goes on with the next table;
 * - its time budget (`tableTimeBudgetSeconds`, at most what the invocation has left before its safety margin) is
 *   raced; when it runs out the table is abandoned as failed and the pass goes on;
 * - before it starts, the checkpoint records the attempt (and the pass's place, so nothing done before it is lost
 *   or redone): if the process dies in it (out of memory, the function's timeout, a fatal error), the next
 *   invocation finds the attempt open, reports the table as crashed and goes on after it. The functions run one
 *   at a time (reserved concurrency 1), so an attempt found open is always one whose process died.
 * A failed table is remembered: the next pass takes it last, after every healthy table, so a poison table never
 * starves the others; its next success forgets it. Errors of the input itself (InvalidInputError) still fail the
 * invocation before anything is done.
 */
export async function isolatedPass<Q extends { readonly maxObjects: number; readonly cursor?: string }, R>(
  input: unknown,
  checkpoint: Checkpoint | undefined,
  job: IsolatedJob<Q, R>,
  context: Context | undefined,
  options: {
    /**
     * Told of each failure as it is found, before the pass goes on: a crash found at the start is reported even if
     * this process dies too (on the same table, tried again last).
     */
    readonly onFailure?: (failure: ReportedFailure) => void;
  } = {},
): Promise<R & IsolationReport> {
  const { resume, tableTimeBudgetSeconds, ...rest } = (input ?? {}) as Record<string, unknown>;
  const budget = budgetSchema.safeParse(tableTimeBudgetSeconds);
  if (!budget.success) {
    throw new InvalidInputError(
      `tableTimeBudgetSeconds must be a number of seconds above 0 and at most 86400 (it was ${JSON.stringify(tableTimeBudgetSeconds)}); omit it to give a table whatever the invocation has left`,
    );
  }
  const request = job.parse(rest);
  const persist = resume === true && checkpoint !== undefined && request.cursor === undefined;
  const selection = Array.isArray(rest.tables) ? [...(rest.tables as string[])].sort().join(',') : '*';
  const saved = persist ? await loadPassState(checkpoint as Checkpoint) : undefined;
  const ledger = new Ledger(saved?.health, options.onFailure);
  const start = job.clock.now();

  // Where this invocation starts: the saved place of the pass (past a unit the last process died in), or the top.
  let order = passOrder(job.tables, (t) => ledger.health(t));
  let cursor = request.cursor;
  if (saved !== undefined && saved.tables === selection) {
    if (saved.cursor !== undefined) {
      order = continuedOrder(saved.order, job.tables);
      cursor = saved.cursor;
    }
    const crashed = saved.inFlight;
    if (crashed !== undefined) {
      ledger.record(crashed.unit, crashOf(crashed.unit, job.name, crashed.since), start);
      if (saved.cursor === undefined) order = passOrder(job.tables, (t) => ledger.health(t));
      const unit = crashed.unit === WORK_AREA ? undefined : crashed.unit;
      const at = unitAtOrError(job, order, request, cursor);
      if (!('error' in at) && at.unit === unit) {
        // Its turn is given up: the pass goes on after it. A crashed table moves to the end of the pass (the steps
        // stay the same, only that table's move, so the cursor stays valid) and is tried again last.
        cursor = job.after(order, request, unit);
        if (unit !== undefined) order = [...order.filter((t) => t !== unit), unit];
        // It was the pass's last unit: the next pass starts now, the crashed table last in it.
        if (cursor === undefined) order = passOrder(job.tables, (t) => ledger.health(t));
      }
    }
  }

  const reports: R[] = [];
  let examined = 0;
  // Budgets run on real time (the invocation's deadline is real); what is recorded on the job's clock.
  const t0 = performance.now();
  const lambdaLeft = remainingMs(context);
  const left = () =>
    lambdaLeft === undefined ? undefined : lambdaLeft - (performance.now() - t0) - SAFETY_MARGIN_MS;
  let restarted = false;
  const restart = (err: unknown): void => {
    // A saved cursor that no longer fits (tables reconfigured): the pass starts over, once.
    if (
      saved === undefined ||
      restarted ||
      !(err instanceof InvalidInputError) ||
      !/cursor/.test(err.message)
    )
      throw err;
    restarted = true;
    cursor = undefined;
    order = passOrder(job.tables, (t) => ledger.health(t));
  };
  for (;;) {
    const remaining = left();
    if ((remaining !== undefined && remaining <= 0) || examined >= request.maxObjects) break;
    const at = unitAtOrError(job, order, request, cursor);
    if ('error' in at) {
      restart(at.error);
      continue;
    }
    const name = at.unit ?? WORK_AREA;
    const unitBudgetMs = minDefined(budget.data === undefined ? undefined : budget.data * 1000, remaining);
    const began = job.clock.now();
    const startedAt = performance.now();
    if (persist) {
      await savePassState(checkpoint as Checkpoint, {
        ...(cursor === undefined ? {} : { cursor }),
        tables: selection,
        order,
        inFlight: { unit: name, since: began },
        ...ledger.state(),
      });
    }
    // Paged steps stop by themselves (a cursor inside the unit) before the hard limit takes the unit away.
    const shouldStop = () =>
      (left() ?? 1) <= 0 ||
      (unitBudgetMs !== undefined && performance.now() - startedAt >= unitBudgetMs * 0.8);
    const unitRequest = { ...request, maxObjects: request.maxObjects - examined };
    const current = (cursor === undefined ? withoutCursor(unitRequest) : { ...unitRequest, cursor }) as Q;
    let report: R;
    try {
      report = await withTimeBudget(
        () => job.run(order, current, shouldStop),
        unitBudgetMs,
        at.unit === undefined ? `${job.name} of the work area` : `${job.name} of table ${at.unit}`,
      );
    } catch (err) {
      if (err instanceof InvalidInputError) {
        restart(err);
        continue;
      }
      ledger.record(name, tableFailureOf(name, err), job.clock.now());
      cursor = job.after(order, request, at.unit);
      if (cursor === undefined) break;
      continue;
    }
    reports.push(report);
    examined += job.examinedOf(report);
    cursor = job.cursorOf(report);
    const failed = job.failuresOf(report).map((f) => ({ unit: f.table ?? WORK_AREA, failure: f.failure }));
    for (const f of failed) if (f.unit !== name) ledger.record(f.unit, f.failure, job.clock.now());
    const own = failed.find((f) => f.unit === name)?.failure;
    const finished = cursor === undefined || unitAtOrError(job, order, request, cursor).unit !== at.unit;
    // A unit stopped inside (budget, deadline) is judged when it ends; its failures so far are reported now.
    if (finished) ledger.record(name, own, job.clock.now());
    else if (own !== undefined) ledger.report(name, own);
    if (cursor === undefined || !finished) break;
  }

  if (persist) {
    const state: PassState = {
      ...(cursor === undefined ? {} : { cursor, order }),
      tables: selection,
      ...ledger.state(),
    };
    if (state.cursor === undefined && state.health === undefined) {
      await (checkpoint as Checkpoint).store.deleteMany([{ key: (checkpoint as Checkpoint).key }]);
    } else await savePassState(checkpoint as Checkpoint, state);
  }
  const { cursor: _last, ...merged } = job.merge(reports) as R & { cursor?: string };
  return {
    ...(merged as R),
    ...(cursor === undefined ? {} : { cursor }),
    tableFailures: ledger.reported,
  } as R & IsolationReport;
}

/** Health of the pass's units between invocations, and the failures of this one. */
class Ledger {
  private readonly healthOf: Map<string, TableHealth>;
  readonly reported: ReportedFailure[] = [];

  constructor(
    saved: Readonly<Record<string, TableHealth>> | undefined,
    private readonly onFailure: ((failure: ReportedFailure) => void) | undefined,
  ) {
    this.healthOf = new Map(Object.entries(saved ?? {}));
  }

  health(unit: string): TableHealth | undefined {
    return this.healthOf.get(unit);
  }

  /** A finished turn: a success forgets the unit's failures, a failure is one more in a row (and reported). */
  record(unit: string, failure: TableFailure | undefined, at: number): void {
    const next = healthAfter(this.healthOf.get(unit), failure, at);
    if (next.failures === 0) this.healthOf.delete(unit);
    else this.healthOf.set(unit, next);
    if (failure !== undefined) this.push({ ...failure, failuresInARow: next.failures });
  }

  /** A failure of a turn not finished yet: reported, counted when the turn ends. */
  report(unit: string, failure: TableFailure): void {
    this.push({ ...failure, failuresInARow: (this.healthOf.get(unit)?.failures ?? 0) + 1 });
  }

  private push(failure: ReportedFailure): void {
    this.reported.push(failure);
    this.onFailure?.(failure);
  }

  state(): Pick<PassState, 'health'> {
    return this.healthOf.size === 0 ? {} : { health: Object.fromEntries(this.healthOf) };
  }
}

function withoutCursor<T extends { readonly cursor?: string }>(request: T): T {
  const { cursor: _cursor, ...rest } = request;
  return rest as T;
}

function minDefined(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : Math.min(a, b);
}

function unitAtOrError<Q extends { readonly maxObjects: number; readonly cursor?: string }, R>(
  job: IsolatedJob<Q, R>,
  order: readonly string[],
  request: Q,
  cursor: string | undefined,
): { unit: string | undefined } | { unit?: undefined; error: unknown } {
  try {
    return { unit: job.unitAt(order, request, cursor) };
  } catch (error) {
    if (error instanceof InvalidInputError) return { error };
    throw error;
  }
}

/** The saved order of a pass, made to hold exactly the configured tables (new ones last, removed ones dropped). */
function continuedOrder(saved: readonly string[] | undefined, tables: readonly string[]): string[] {
  if (saved === undefined) return [...tables];
  const kept = saved.filter((t) => tables.includes(t));
  return [...kept, ...tables.filter((t) => !kept.includes(t))];
}

async function loadPassState(checkpoint: Checkpoint): Promise<PassState | undefined> {
  if (!(await checkpoint.store.head(checkpoint.key))) return undefined;
  try {
    const parsed = JSON.parse(
      new TextDecoder().decode(await checkpoint.store.get(checkpoint.key)),
    ) as PassState;
    return typeof parsed === 'object' && parsed !== null && typeof parsed.tables === 'string'
      ? parsed
      : undefined;
  } catch (err) {
    if (err instanceof ObjectNotFoundError || err instanceof SyntaxError) return undefined;
    throw err;
  }
}

async function savePassState(checkpoint: Checkpoint, state: PassState): Promise<void> {
  await checkpoint.store.put(checkpoint.key, JSON.stringify(state), { contentType: 'application/json' });
}
