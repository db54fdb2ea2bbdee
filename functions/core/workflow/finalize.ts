// The finalize step: reads what every group of the run did from the journal (never from the Map's
// output), settles groups a failed run left midway — its own and, while it holds the lease, any other
// run's — records history, updates the partition and releases it: idle, or needs-attention when a group
// could not be settled (a half-published partition is never released as idle).
import type { Clock } from '../../ports/clock.js';
import { type GroupJournalEntry, isSettled, type Journal } from '../../ports/journal.js';
import type { ObjectStore } from '../../ports/object-store.js';
import type { Quarantine } from '../../ports/quarantine.js';
import type { CommitDeps, TableFormat } from '../formats/table-format.js';
import type { RunContext } from '../run-input.js';
import { type CaughtError, causeMessage, failureReason, parseFailure, stepFormat } from './commit.js';
import { refOf } from './lease.js';
import type { PlanStepResult } from './plan.js';
import type { PartitionLeases, RunHistory } from './ports.js';
import { rewriteWindowMs } from './run-metrics.js';
import type { RunOutcome, RunSummary } from './run-summary.js';
import { settlePartition } from './settle.js';

// The run's outcome and summary live in a model module (metrics and run-metrics read them without
// importing this step, which would close an import cycle); re-exported for this step's callers.
export type { RunOutcome, RunSummary } from './run-summary.js';

/**
 * Errors whose cause a person must fix before the partition is tried again (a configuration that points
 * at something this deployment must not compact): the partition is marked needs-attention, not idle, so
 * the triggers do not start the same failing run again and again.
 */
export const NEEDS_OPERATOR_ERRORS: readonly string[] = ['UnsupportedTableFormatError'];

export interface FinalizeDeps {
  readonly store: ObjectStore;
  readonly journal: Journal;
  readonly leases: PartitionLeases;
  readonly clock: Clock;
  /** Read for the summary's `quarantined` count; absent (tools, tests of other steps): no count. */
  readonly quarantine?: Quarantine;
  /** The run's table format, which settles its groups (see StepCommitDeps). @default `parquet` */
  readonly format?: TableFormat;
  /** Re-creates inputs when settling undoes a delete-rebuild group (see CommitDeps.engine). */
  readonly engine?: CommitDeps['engine'];
}

export interface FinalizeRequest {
  readonly outcome: RunOutcome;
  /** The plan step's result, when the run got that far. */
  readonly plan?: PlanStepResult;
  /** The error a top-level Catch caught (outcome `failed`). */
  readonly error?: CaughtError;
  /** Why the run gave up waiting for a quiet partition. */
  readonly reason?: string;
}

/**
 * Ends a run, whatever happened before: (1) on failure, groups left between `planned` and `retired` are
 * rolled back (before publishing) or forward (after) — a half-published group is never left behind;
 * (2) the summary is computed from the journal and a listing of the partition; (3) the history item is
 * written, the run's own file changes are applied to the partition statistics, and (4) the lease is
 * released (setting lastCompactedAt when any group was published). Every part is idempotent.
 */
export async function finalizeRun(
  deps: FinalizeDeps,
  run: RunContext,
  request: FinalizeRequest,
): Promise<RunSummary> {
  const now = deps.clock.now();
  const journaled = request.outcome === 'compacted' || request.outcome === 'failed';
  let entries: GroupJournalEntry[] = journaled ? await deps.journal.listRun(run.runId) : [];
  const unsettled: string[] = [];
  const commitDeps = {
    store: deps.store,
    journal: deps.journal,
    clock: deps.clock,
    ...(deps.format === undefined ? {} : { format: deps.format }),
    ...(deps.engine === undefined ? {} : { engine: deps.engine }),
  };
  if (entries.some((e) => !isSettled(e))) {
    const reason = failureReason(
      request.error ?? { Error: 'RunInterrupted', Cause: 'the run ended before this group' },
    );
    for (const entry of entries) {
      if (isSettled(entry)) continue;
      try {
        await stepFormat(commitDeps).rollback(commitDeps, run.runId, entry.groupId, reason);
      } catch (err) {
        unsettled.push(
          `${entry.groupId}: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`,
        );
      }
    }
    entries = await deps.journal.listRun(run.runId);
    for (const entry of entries) {
      if (!isSettled(entry) && !unsettled.some((u) => u.startsWith(`${entry.groupId}:`))) {
        unsettled.push(`${entry.groupId}: still ${entry.state} after settling`);
      }
    }
  }
  // Other runs' groups, only while this run holds the lease (a run that never got it must not touch a
  // partition another run is compacting). Whoever holds the partition settles it before letting go.
  const ref = refOf(run);
  // A dry run changes nothing, not even what others left (a real run settles it).
  const holding = !run.dryRun && (await deps.leases.holds(ref, run.runId));
  const others = holding
    ? await settlePartition(commitDeps, ref, {
        reason: failureReason({
          Error: 'RunInterrupted',
          Cause: `its run ended before this group did; settled by run ${run.runId}`,
        }),
        exceptRun: run.runId,
      })
    : { settled: [], unsettled: [] };
  for (const u of others.unsettled) unsettled.push(`${u.runId}/${u.groupId} (${u.state}): ${u.error}`);
  const settledDone = others.settled.filter((g) => g.to === 'done').map((g) => g.entry);
  entries.sort((a, b) => (a.groupId < b.groupId ? -1 : a.groupId > b.groupId ? 1 : 0));
  const done = entries.filter((e) => e.state === 'done');
  const failures = entries
    .map((e) => ({ entry: e, failure: e.state === 'aborted' ? parseFailure(e.reason) : undefined }))
    .filter(
      (f): f is { entry: GroupJournalEntry; failure: { error: string; cause: string } } =>
        f.failure !== undefined,
    );
  const aborted = entries.filter((e) => e.state === 'aborted').length - failures.length;

  const firstFailure = failures[0];
  const firstError =
    firstFailure !== undefined
      ? {
          error: firstFailure.failure.error,
          cause: firstFailure.failure.cause,
          groupId: firstFailure.entry.groupId,
        }
      : request.outcome === 'failed'
        ? { error: request.error?.Error ?? 'UnknownError', cause: causeMessage(request.error?.Cause) }
        : unsettled.length > 0
          ? { error: 'UnsettledGroupError', cause: unsettled.join('; ') }
          : undefined;
  const failed = request.outcome === 'failed' || failures.length > 0 || unsettled.length > 0;
  const operatorCause = operatorCauseOf(request, failures, deps.format?.operatorErrors ?? []);
  const needsAttention =
    unsettled.length > 0
      ? `${unsettled.length} group(s) could not be settled: ${unsettled.map(stripPeriod).join('; ')}. Listing readers may see some rows twice until they are.`
      : operatorCause;

  const after = journaled ? await liveFiles(deps, run, now) : undefined;
  const filesBefore = request.plan?.inputFiles ?? 0;
  const bytesBefore = request.plan?.inputBytes ?? 0;
  const retired = done.flatMap((e) => e.inputs);
  const published = done.flatMap((e) => e.outputs);
  const windows = done.map((e) =>
    e.publishStartedAt !== undefined && e.retiredAt !== undefined ? e.retiredAt - e.publishStartedAt : 0,
  );
  const rewriteWindow = rewriteWindowMs(entries);
  const quarantined = deps.quarantine === undefined ? undefined : (await deps.quarantine.list(ref)).length;
  const summary: RunSummary = {
    runId: run.runId,
    table: run.table,
    partition: run.partition,
    outcome: request.outcome,
    status: failed ? 'FAILED' : 'SUCCEEDED',
    trigger: run.trigger,
    dryRun: run.dryRun,
    groups: request.plan?.groupCount ?? entries.length,
    groupsDone: done.length,
    groupsAborted: aborted,
    failedGroups: failures.length,
    ...(firstError === undefined ? {} : { firstError }),
    filesBefore,
    bytesBefore,
    filesAfter: after?.files ?? filesBefore,
    bytesAfter: after?.bytes ?? bytesBefore,
    filesRetired: retired.length,
    filesPublished: published.length,
    rows: published.reduce((n, o) => n + o.rows, 0),
    bytesRewritten: retired.reduce((n, i) => n + i.size, 0),
    durationMs: Math.max(0, now - run.startedAt),
    visibilityWindowMs: Math.max(0, ...windows),
    ...(rewriteWindow === undefined ? {} : { rewriteWindowMs: rewriteWindow }),
    ...(request.plan === undefined
      ? {}
      : { estimatedCost: request.plan.estimatedCost, planKey: request.plan.planKey }),
    ...(request.reason === undefined ? {} : { reason: request.reason }),
    ...(unsettled.length === 0 ? {} : { unsettled }),
    ...(others.settled.length === 0 ? {} : { settledGroups: others.settled.length }),
    ...(needsAttention === undefined ? {} : { needsAttention }),
    ...(quarantined === undefined ? {} : { quarantined }),
    ...(request.plan?.rewrite === undefined ? {} : { rewrite: request.plan.rewrite }),
  };

  const history: RunHistory = {
    ...summary,
    startedAt: run.startedAt,
    finishedAt: now,
    strategy: run.strategy,
    codec: run.codec,
    groupResults: entries.map((e) => ({
      groupId: e.groupId,
      state: e.state,
      ...(e.reason ? { reason: e.reason } : {}),
    })),
  };
  await deps.leases.putHistory(history);
  const changed = [...done, ...settledDone];
  if (changed.length > 0) {
    await deps.leases.applyLayoutChange(ref, {
      bucket: run.bucket,
      removed: changed.flatMap((e) => e.inputs).map((i) => ({ key: i.key })),
      created: changed
        .flatMap((e) => e.outputs)
        .map((o) => ({ key: o.finalKey, size: o.size, etag: o.etag })),
      at: now,
    });
  }
  const awaitedVersion = newestCommittedVersion(stepFormat(deps), changed);
  await deps.leases.release(ref, run.runId, {
    ...(changed.length > 0 ? { lastCompactedAt: now } : {}),
    ...(awaitedVersion === undefined ? {} : { awaitedVersion }),
    ...(needsAttention === undefined
      ? {}
      : { attention: { reason: needsAttention, runId: run.runId, since: now } }),
  });
  return summary;
}

/**
 * The newest version of the table's log that `groups` committed, as the profiler's cursor counts versions, for a
 * table whose log is its changes (undefined for any other, or when the format cannot tell). The layout change above
 * counts nothing for such a table — only its log says what changed — so this is what the partition's counters wait
 * for before a trigger may act on them again.
 */
function newestCommittedVersion(
  format: TableFormat,
  groups: readonly Pick<GroupJournalEntry, 'formatState'>[],
): number | undefined {
  const changes = format.changes;
  if (changes.kind !== 'commit-log' || changes.committedVersion === undefined) return undefined;
  const versions = groups.flatMap((g) => {
    const version = g.formatState === undefined ? undefined : changes.committedVersion?.(g.formatState);
    return version === undefined ? [] : [version];
  });
  return versions.length === 0 ? undefined : Math.max(...versions);
}

/**
 * Why the run's partition must wait for a person: the run's error, or the first group failure, when it is one the
 * triggers would only meet again ({@link NEEDS_OPERATOR_ERRORS}, or one the table's format names as such).
 */
function operatorCauseOf(
  request: FinalizeRequest,
  failures: readonly { readonly failure: { readonly error: string; readonly cause: string } }[],
  formatErrors: readonly string[],
): string | undefined {
  const error = request.error?.Error;
  if (error !== undefined && (NEEDS_OPERATOR_ERRORS.includes(error) || formatErrors.includes(error)))
    return `${error}: ${causeMessage(request.error?.Cause)}`;
  const refused = failures.find((f) => formatErrors.includes(f.failure.error));
  if (refused === undefined) return undefined;
  return `${refused.failure.error}: ${refused.failure.cause}`;
}

function stripPeriod(text: string): string {
  return text.replace(/\.+$/, '');
}

/**
 * The partition's live data files after the run, as its format sees them (a listing, or the table's log, so a
 * removed input still on storage for older versions is not counted). No footer is read.
 */
async function liveFiles(
  deps: FinalizeDeps,
  run: RunContext,
  now: number,
): Promise<{ files: number; bytes: number }> {
  const { files } = await stepFormat(deps).partitionFiles(
    deps.store,
    { tableRoot: run.tableRoot, partition: run.partition, partitionDir: run.partitionDir },
    { now, readFooters: false },
  );
  return { files: files.length, bytes: files.reduce((n, f) => n + f.size, 0) };
}
