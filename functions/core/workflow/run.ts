// The in-process run of one partition: the workflow's own step services, called in the state machine's
// order and with its error handling, so a run outside Step Functions (the CLI) ends as a cloud run would.
import type { ObjectStore } from '../../ports/object-store.js';
import { errorName } from '../errors.js';
import type { TableFormat } from '../formats/table-format.js';
import type { RunContext } from '../run-input.js';
import { type CaughtError, commitStep, type GroupStepResult, rollbackStep } from './commit.js';
import { type CompactDeps, type CompactStepResult, compactGroup } from './compact.js';
import { finalizeRun, type RunOutcome, type RunSummary } from './finalize.js';
import { acquireLease, checkQuiet, DEFAULT_QUIET_OPTIONS, type QuietOptions } from './lease.js';
import { type GroupItem, type PlanStepOptions, type PlanStepResult, planRun } from './plan.js';
import type { PartitionLeases } from './ports.js';
import { verifyGroup } from './verify.js';

/**
 * The step services a run calls: the very functions the workflow's Lambdas call (handlers/lease.ts, plan.ts,
 * compact.ts, verify.ts, commit.ts, rollback.ts, finalize.ts). Replaceable as a whole only so that a test can
 * record the calls and compare their order with the state machine's.
 */
export const WORKFLOW_STEPS = {
  acquireLease,
  checkQuiet,
  planRun,
  compactGroup,
  verifyGroup,
  commitStep,
  rollbackStep,
  finalizeRun,
} as const;
export type WorkflowSteps = typeof WORKFLOW_STEPS;

/**
 * Errors of the lease step that end a run without recording it: the partition belongs to another run, or
 * waits for an operator. The state machine's `Acquire lease` catches exactly these into its `Lease held` and
 * `Partition needs attention` Fail states, ahead of the catch-all into `Record failure`.
 */
export const UNRECORDED_LEASE_ERRORS: readonly string[] = ['LeaseHeldError', 'PartitionNeedsAttentionError'];

export interface RunDeps extends CompactDeps {
  readonly leases: PartitionLeases;
  /** The table's format: it snapshots the partition, commits and settles groups (see StepCommitDeps). */
  readonly format?: TableFormat;
  /** Pauses between quiet checks: the state machine's `Wait for quiet` state. */
  readonly wait: (seconds: number) => Promise<void>;
}

export interface RunOptions {
  readonly plan: PlanStepOptions;
  /** @default DEFAULT_QUIET_OPTIONS */
  readonly quiet?: QuietOptions;
}

/** One group's way through compact → verify → commit, or to the rollback. */
export interface GroupRun {
  readonly item: GroupItem;
  /** The compact step's result; absent when the step threw. */
  readonly compacted?: CompactStepResult;
  /**
   * Whether the verify step passed on outputs: they matched, or the group was past `staged` already. False for a
   * group that wrote none (left alone before the rewrite, or every input left out of it): the step ran and did
   * nothing, and saying such a group was verified would tell an operator rows were checked when none were written.
   */
  readonly verified: boolean;
  /** The commit step's result, or the rollback's when a step threw. */
  readonly result: GroupStepResult;
  /** What failed the group and sent it to the rollback. */
  readonly error?: Error;
}

/** Callbacks while a run goes on (the CLI prints from them). */
export interface RunObserver {
  /** After the plan step, before any group. */
  readonly planned?: (plan: PlanStepResult) => Promise<void> | void;
  /** After each group ended: committed, left alone, or rolled back. */
  readonly groupEnded?: (group: GroupRun) => void;
}

export interface PartitionRunResult {
  /** The finalize step's summary; `status: 'FAILED'` when a group failed (the state machine's `Group failed`). */
  readonly summary: RunSummary;
  /** The plan step's result, when the run got that far. */
  readonly plan?: PlanStepResult;
  readonly groups: readonly GroupRun[];
}

/**
 * Runs one partition in this process exactly as the `compact-partition` state machine runs it
 * (infra/compaction-workflow.ts; test/infra/run-orchestrator.test.ts runs both on the same scripted step
 * outcomes and compares the calls):
 *
 * acquire lease → settle only? finalize `settled` : quiet checks (waiting `waitSeconds` between them; given up
 * → finalize `gave-up`) → plan → dry run? finalize `dry-run` : no group? finalize `nothing-to-do` : for every
 * group compact → verify → commit → finalize `compacted`.
 *
 * Error handling, as the state machine's Catch clauses:
 * - any error of a group's compact, verify or commit sends that group to the rollback (staged outputs
 *   removed; from publishing on the commit is completed instead) and the run goes on with the next group.
 *   That covers a failed verification, a corrupt or unsupported input (which the compact step has quarantined
 *   before it throws) and every other failure alike;
 * - a conflict is not an error: a group whose inputs changed since planning comes back `aborted` from the
 *   compact or commit step (left alone, nothing lost) and goes through the remaining steps, which do nothing;
 * - {@link UNRECORDED_LEASE_ERRORS} from the lease step end the run as they are, unrecorded;
 * - any other error (of the lease, quiet, plan or finalize step, or of a rollback) ends the run through finalize
 *   `failed`, which settles the run's open groups, records it and releases the partition, and is then
 *   rethrown — the original error even when that finalize fails too.
 *
 * Two differences, both because a process is not a state machine: groups run one after another (the Map runs
 * up to 10 or 50 at once), and a retryable error (see `RETRYABLE_ERROR_NAMES`) is not retried here but fails
 * its group like any other — the next run compacts what is left. A summary whose status is FAILED is returned,
 * not thrown, so a caller can go on with other partitions.
 */
export async function runPartition(
  deps: RunDeps,
  run: RunContext,
  options: RunOptions,
  observer: RunObserver = {},
  steps: WorkflowSteps = WORKFLOW_STEPS,
): Promise<PartitionRunResult> {
  const quietOptions = options.quiet ?? DEFAULT_QUIET_OPTIONS;
  const groups: GroupRun[] = [];
  let plan: PlanStepResult | undefined;
  let leased = false;
  const finish = async (outcome: RunOutcome, reason?: string): Promise<PartitionRunResult> => {
    const summary = await steps.finalizeRun(deps, run, {
      outcome,
      ...(plan === undefined ? {} : { plan }),
      ...(reason === undefined ? {} : { reason }),
    });
    return { summary, ...(plan === undefined ? {} : { plan }), groups };
  };
  try {
    const lease = await steps.acquireLease(deps.leases, run, deps.clock.now(), quietOptions);
    leased = true;
    if (run.settle === true) return await finish('settled');
    let quiet = lease.quiet;
    while (!quiet.quiet) {
      if (quiet.giveUp) return await finish('gave-up', quiet.reason);
      await deps.wait(quiet.waitSeconds);
      quiet = await steps.checkQuiet(deps.leases, run, quiet.round, deps.clock.now(), quietOptions);
    }
    plan = await steps.planRun(deps, run, options.plan);
    await observer.planned?.(plan);
    if (run.dryRun) return await finish('dry-run');
    if (plan.groupCount === 0) return await finish('nothing-to-do', plan.reason);
    for (const item of await groupItems(deps.store, plan)) {
      const group = await runGroup(deps, run, item, steps);
      groups.push(group);
      observer.groupEnded?.(group);
    }
    return await finish('compacted');
  } catch (err) {
    if (!leased && UNRECORDED_LEASE_ERRORS.includes(errorName(err))) throw err;
    const error = asError(err);
    try {
      await steps.finalizeRun(deps, run, {
        outcome: 'failed',
        ...(plan === undefined ? {} : { plan }),
        error: caught(error),
      });
    } catch {
      // The state machine's `Record failure` catches its own failure the same way: the run fails with the
      // error that ended it; what finalize left open, the next run or the sweep settles.
    }
    throw error;
  }
}

/** compact → verify → commit, and on any error of the three the rollback (the Map iteration's Catch). */
async function runGroup(
  deps: RunDeps,
  run: RunContext,
  item: GroupItem,
  steps: WorkflowSteps,
): Promise<GroupRun> {
  let compacted: CompactStepResult | undefined;
  let verified = false;
  try {
    compacted = await steps.compactGroup(deps, run, item);
    await steps.verifyGroup(deps, run, item.groupId, compacted.fingerprint);
    verified = compacted.outputs > 0;
    const result = await steps.commitStep(deps, run.runId, item.groupId);
    return { item, compacted, verified, result };
  } catch (err) {
    const error = asError(err);
    const result = await steps.rollbackStep(deps, run.runId, item.groupId, caught(error));
    return { item, ...(compacted === undefined ? {} : { compacted }), verified, result, error };
  }
}

/** The plan's groups: listed in its result up to the inline limit, else read from its items file (as the Distributed Map does). */
async function groupItems(store: ObjectStore, plan: PlanStepResult): Promise<readonly GroupItem[]> {
  if (plan.groups.length === plan.groupCount) return plan.groups;
  return JSON.parse(new TextDecoder().decode(await store.get(plan.itemsKey))) as GroupItem[];
}

/** The error as a Catch hands it over: its name, and its message as the cause. */
function caught(error: Error): CaughtError {
  return { Error: error.name, Cause: error.message };
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}
