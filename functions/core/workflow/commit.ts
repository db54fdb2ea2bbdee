// The commit and rollback steps: thin wrappers over the table format's commit that return small results for
// the Map, and record a failed group's error name in its journal entry so finalize can report it.
import { FAILURE_PREFIX, failureText } from '../errors.js';
import { DEFAULT_TABLE_FORMAT, tableFormat } from '../formats/index.js';
import type { CommitDeps, TableFormat } from '../formats/table-format.js';

/** What a step needs to commit, roll back or settle groups: the commit's dependencies and the table's format. */
export interface StepCommitDeps extends CommitDeps {
  /** The run's table format (see formats/index.ts `formatOfTable`). @default the default format, `parquet` */
  readonly format?: TableFormat;
}

/** The format a step commits through. */
export function stepFormat(deps: Pick<StepCommitDeps, 'format'>): TableFormat {
  return deps.format ?? tableFormat(DEFAULT_TABLE_FORMAT);
}

/**
 * The format that must settle or commit a journaled group: the one it was planned with. Usually the step's own
 * (configured per table, e.g. with its commit coordination); when they differ — a settle that does not know the
 * table (`lake-compactor settle <dir>`), or a table whose format was changed while a group was open — the
 * registered format of that name, never another protocol: settling a group of a log-based format by the listing's protocol would retire
 * inputs the log still has live.
 * @throws TableFormatNotSupportedError when the group's format is no longer implemented.
 */
export function groupFormat(
  deps: Pick<StepCommitDeps, 'format'>,
  entry: { readonly format?: string | undefined },
): TableFormat {
  const own = stepFormat(deps);
  if (entry.format === undefined || entry.format === own.name) return own;
  return tableFormat(entry.format);
}

export interface GroupStepResult {
  readonly groupId: string;
  /** `pending`: published, committed with the run's other groups after the Map (see CommitOutcome.state). */
  readonly state: 'done' | 'aborted' | 'pending';
  readonly published: number;
  readonly retired: number;
  readonly conflicts: number;
  readonly visibilityWindowMs?: number;
  /** The error that made the group fail, when it did. */
  readonly error?: string;
  readonly reason?: string;
  /** The group aborted because the table's log shows a writer that does not coordinate as declared (alarmed). */
  readonly coordinationMismatch?: boolean;
}

/** Publishes a verified group's outputs and retires its inputs, through the table format's commit. */
export async function commitStep(
  deps: StepCommitDeps,
  runId: string,
  groupId: string,
): Promise<GroupStepResult> {
  const entry = await deps.journal.get(runId, groupId);
  const outcome = await groupFormat(deps, entry ?? {}).commit(deps, runId, groupId);
  return {
    groupId,
    state: outcome.state,
    published: outcome.published.length,
    retired: outcome.retired.length,
    conflicts: outcome.conflicts.length,
    ...(outcome.visibilityWindowMs === undefined ? {} : { visibilityWindowMs: outcome.visibilityWindowMs }),
    ...(outcome.reason === undefined ? {} : { reason: outcome.reason }),
    ...(outcome.conflicts.some((c) => c.coordinationMismatch === true) ? { coordinationMismatch: true } : {}),
  };
}

/** The error a Step Functions Catch hands over: `Error` is the name, `Cause` the Lambda's JSON error document. */
export interface CaughtError {
  readonly Error?: string;
  readonly Cause?: string;
}

export { FAILURE_PREFIX };

/** `FAILED <ErrorName>: <message>` — parsed back by {@link parseFailure}. */
export function failureReason(error: CaughtError): string {
  return failureText(error.Error ?? 'UnknownError', causeMessage(error.Cause));
}

/** The error name and message of a failure reason, or undefined for any other reason. */
export function parseFailure(reason: string | undefined): { error: string; cause: string } | undefined {
  if (reason === undefined || !reason.startsWith(FAILURE_PREFIX)) return undefined;
  const rest = reason.slice(FAILURE_PREFIX.length);
  const colon = rest.indexOf(': ');
  return colon < 0
    ? { error: rest, cause: '' }
    : { error: rest.slice(0, colon), cause: rest.slice(colon + 2) };
}

/** The message inside a Lambda error document (`{"errorType","errorMessage",...}`), else the cause as is. */
export function causeMessage(cause: string | undefined): string {
  if (cause === undefined) return '';
  try {
    const parsed = JSON.parse(cause) as { errorMessage?: unknown };
    if (typeof parsed.errorMessage === 'string') return parsed.errorMessage;
  } catch {
    // not JSON: a plain cause
  }
  return cause;
}

/**
 * Abandons a group after `error`: before publishing, staged outputs are removed and the entry is
 * `aborted` with the failure recorded; from publishing on, the commit is completed instead (the only
 * safe direction), in which case the group ends `done` and the failure was healed.
 */
export async function rollbackStep(
  deps: StepCommitDeps,
  runId: string,
  groupId: string,
  error: CaughtError,
): Promise<GroupStepResult> {
  const entry = await deps.journal.get(runId, groupId);
  const outcome = await groupFormat(deps, entry ?? {}).rollback(deps, runId, groupId, failureReason(error));
  const failed = outcome.state === 'aborted' ? parseFailure(outcome.reason) : undefined;
  return {
    groupId,
    state: outcome.state,
    published: outcome.published.length,
    retired: outcome.retired.length,
    conflicts: outcome.conflicts.length,
    ...(failed === undefined ? {} : { error: failed.error }),
    ...(outcome.reason === undefined ? {} : { reason: outcome.reason }),
  };
}
