// Caps on concurrently running compactions, per table and per deployment: the configuration (defaults, the
// RUN_CAPS variable, synth-time checks) and the words a capped decision is recorded with. Pure, no I/O.
import { z } from 'zod';
import { InvalidInputError } from './errors.js';

/**
 * Runs at once per table when nothing else is configured. A first reconcile of a large lake finds
 * thousands of due partitions; without a cap the sweep would start them all and take the account's whole
 * Lambda concurrency (each run fans out to up to 50 compact invocations), throttling the profiler.
 */
export const DEFAULT_MAX_CONCURRENT_RUNS_PER_TABLE = 10;

/** Runs at once over every table of one deployment when nothing else is configured. */
export const DEFAULT_MAX_CONCURRENT_RUNS = 50;

/** The caps one deployment enforces (the `RUN_CAPS` variable of the profiler and the sweep). */
export interface RunCaps {
  /** Runs at once over all tables of the deployment. */
  readonly total: number;
  /** Runs at once per table, unless `byTable` names the table. */
  readonly perTable: number;
  /** Per-table caps winning over `perTable`. */
  readonly byTable: Readonly<Record<string, number>>;
}

export const DEFAULT_RUN_CAPS: RunCaps = {
  total: DEFAULT_MAX_CONCURRENT_RUNS,
  perTable: DEFAULT_MAX_CONCURRENT_RUNS_PER_TABLE,
  byTable: {},
};

/** The two limits a schedule of one table is checked against. */
export interface RunLimits {
  readonly table: number;
  readonly total: number;
}

/** A schedule the store refused because a cap was reached: which one, and how many runs it counted. */
export interface RunCapReached {
  readonly kind: 'cap-reached';
  readonly scope: 'table' | 'deployment';
  readonly cap: number;
  /** Runs the counter held when the schedule was refused. */
  readonly running: number;
}

const cap = z.number().int().min(1).max(10_000);

/** RUN_CAPS as the construct writes it: `{"total":50,"perTable":10,"byTable":{"events":5}}`. */
export const runCapsSchema = z.strictObject({
  total: cap,
  perTable: cap,
  byTable: z.record(z.string().min(1), cap).default({}),
});

/**
 * Parses RUN_CAPS; unset means the defaults (a function deployed by hand, tests).
 * @throws InvalidInputError naming every problem.
 */
export function parseRunCaps(json: string | undefined): RunCaps {
  if (json === undefined || json === '') return DEFAULT_RUN_CAPS;
  let document: unknown;
  try {
    document = JSON.parse(json);
  } catch (cause) {
    throw new InvalidInputError(
      `RUN_CAPS is not JSON (${String(cause)}); set it through the construct props`,
    );
  }
  const parsed = runCapsSchema.safeParse(document);
  if (!parsed.success) {
    throw new InvalidInputError(
      'RUN_CAPS is invalid; set triggers.maxConcurrentRuns, maxConcurrentRunsPerTable and maxConcurrentRunsByTable',
      parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`),
    );
  }
  return parsed.data;
}

/** The limits a schedule of `table` is checked against. */
export function limitsFor(caps: RunCaps, table: string): RunLimits {
  return { table: caps.byTable[table] ?? caps.perTable, total: caps.total };
}

/**
 * The recorded action of a partition that is due but was not started because a cap was reached. Stable
 * (no running count in it), so a partition that stays capped sweep after sweep is not rewritten each time.
 */
export function capAction(table: string, reached: Pick<RunCapReached, 'scope' | 'cap'>): string {
  return reached.scope === 'table'
    ? `waiting: concurrency cap ${reached.cap} of table ${table} reached`
    : `waiting: concurrency cap ${reached.cap} of the deployment reached`;
}

/**
 * Every problem of the cap props, each saying what to do; [] when they are fine. `tables` are the
 * configured table names (a per-table cap for an unknown table is a typo).
 */
export function runCapIssues(
  props: {
    readonly maxConcurrentRuns?: number;
    readonly maxConcurrentRunsPerTable?: number;
    readonly maxConcurrentRunsByTable?: Readonly<Record<string, number>>;
  },
  tables: readonly string[],
): string[] {
  const issues: string[] = [];
  const check = (field: string, value: number | undefined) => {
    if (value !== undefined && !cap.safeParse(value).success) {
      issues.push(`\`triggers.${field}\` is ${value}; use a whole number of runs from 1 to 10000.`);
    }
  };
  check('maxConcurrentRuns', props.maxConcurrentRuns);
  check('maxConcurrentRunsPerTable', props.maxConcurrentRunsPerTable);
  for (const [table, value] of Object.entries(props.maxConcurrentRunsByTable ?? {})) {
    check(`maxConcurrentRunsByTable.${table}`, value);
    if (!tables.includes(table)) {
      issues.push(
        `\`triggers.maxConcurrentRunsByTable\` names table ${JSON.stringify(table)}, which is not configured; configured tables: ${tables.map((t) => JSON.stringify(t)).join(', ')}.`,
      );
    }
  }
  return issues;
}
