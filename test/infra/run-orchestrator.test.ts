// The in-process orchestrator against the state machine: both run the same scripted step outcomes — the
// synthesized definition in the local Step Functions engine, `runPartition` in process — and call the same steps.
//
// Each scenario scripts what every step returns or throws. The state machine's Lambdas and the orchestrator's
// step services are stubbed with that one script and record their calls, so a difference in order, in which
// errors roll a group back, end the run unrecorded or go through finalize `failed`, fails here.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';
import { App, type CfnElement } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  CorruptInputError,
  LeaseHeldError,
  LeaseLostError,
  NotVerifiedError,
  ObjectNotFoundError,
  PartitionNeedsAttentionError,
  PreconditionFailedError,
  RETRYABLE_ERROR_NAMES,
  UnsettledPartitionError,
  VerificationError,
} from '../../functions/core/errors.js';
import { buildRunContext, type RunContext } from '../../functions/core/run-input.js';
import { estimateCost } from '../../functions/core/workflow/cost.js';
import type { RunOutcome, RunSummary } from '../../functions/core/workflow/finalize.js';
import type { QuietCheck } from '../../functions/core/workflow/lease.js';
import type { PlanStepResult } from '../../functions/core/workflow/plan.js';
import type { PartitionLeases } from '../../functions/core/workflow/ports.js';
import {
  runPartition,
  UNRECORDED_LEASE_ERRORS,
  type WorkflowSteps,
} from '../../functions/core/workflow/run.js';
import type { Journal } from '../../functions/ports/journal.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';
import type { ParquetEngine } from '../../functions/ports/parquet-engine.js';
import { StepFunctionsRunner, stateMachinesFromTemplate } from '../../infra/local/step-functions.js';
import { type CfnTemplate, TemplateModel } from '../../infra/local/template.js';
import { WorkflowStack } from '../support/workflow-stack.js';

type GroupStep = 'compact' | 'verify' | 'commit' | 'rollback';

interface Scenario {
  /** Overrides of the run context the validate step returns. */
  readonly run?: Partial<Pick<RunContext, 'dryRun' | 'settle'>>;
  /** Thrown by the lease step's acquire. */
  readonly lease?: () => Error;
  /** Quiet verdicts in order: the acquire's, then each check's. @default one quiet verdict */
  readonly quiet?: readonly QuietCheck[];
  /** Groups the plan step plans. @default 1 */
  readonly groups?: number;
  /** Thrown by the plan step. */
  readonly plan?: () => Error;
  /** Thrown by a group's steps, by group id. */
  readonly failures?: Readonly<Record<string, Partial<Record<GroupStep, () => Error>>>>;
  /** Thrown by finalize for this outcome. */
  readonly finalize?: { readonly outcome: RunOutcome; readonly error: () => Error };
  /** What both sides must observe (spelled out, so the scenario reads as the order it proves). */
  readonly expected: Observed;
}

/** What both sides recorded, and how the run ended. */
interface Observed {
  readonly run: string[];
  readonly groups: Record<string, string[]>;
  end?: { readonly status: string; readonly error?: string };
}

const ok = { status: 'SUCCEEDED' };
const failedWith = (error: string) => ({ status: 'FAILED', error });

const verdict = (round: number, state: 'quiet' | 'wait' | 'give-up'): QuietCheck => ({
  round,
  quiet: state === 'quiet',
  giveUp: state === 'give-up',
  waitSeconds: 1,
  reason: state,
});

/** The scripted steps, independent of who calls them: each records its call and returns or throws. */
function scripted(scenario: Scenario, observed: Observed) {
  const failed: string[] = [];
  const group = (groupId: string, step: GroupStep, entry: string = step): void => {
    const calls = observed.groups[groupId] ?? [];
    observed.groups[groupId] = [...calls, entry];
    const failure = scenario.failures?.[groupId]?.[step];
    if (failure !== undefined) {
      if (step !== 'rollback') failed.push(groupId);
      throw failure();
    }
  };
  const verdicts = scenario.quiet ?? [verdict(1, 'quiet')];
  const verdictAt = (index: number): QuietCheck => {
    const found = verdicts[index];
    if (found === undefined) throw new Error(`scenario: no quiet verdict ${index}`);
    return found;
  };
  return {
    acquire(): QuietCheck {
      observed.run.push('lease:acquire');
      if (scenario.lease !== undefined) throw scenario.lease();
      return verdictAt(0);
    },
    checkQuiet(previousRound: number): QuietCheck {
      observed.run.push('lease:quiet');
      return verdictAt(previousRound);
    },
    plan(): PlanStepResult {
      observed.run.push('plan');
      if (scenario.plan !== undefined) throw scenario.plan();
      const count = scenario.groups ?? 1;
      const groups = Array.from({ length: count }, (_, i) => ({
        groupId: `g${i + 1}`,
        expectedOutputFiles: 1,
      }));
      return {
        planKey: 'plans/run.json',
        itemsKey: 'plans/run.items.json',
        bucket: 'lake',
        groupCount: count,
        groups,
        inputFiles: 5 * count,
        inputBytes: 5000 * count,
        plannedFiles: 5 * count,
        plannedBytes: 5000 * count,
        expectedOutputFiles: count,
        skippedFiles: 0,
        estimatedCost: estimateCost({
          groups: count,
          inputFiles: 5 * count,
          inputBytes: 5000 * count,
          expectedOutputFiles: count,
          retireMode: 'trash',
          compactMemoryMb: 1024,
        }),
        ...(count === 0 ? { reason: 'nothing small enough' } : {}),
        retireMode: 'trash',
      };
    },
    compact: (groupId: string) => {
      group(groupId, 'compact');
      return { groupId, state: 'staged' as const, outputs: 1, rows: 10, bytesRead: 5000 };
    },
    verify: (groupId: string) => {
      group(groupId, 'verify');
      return { groupId, state: 'verified', rows: 10, outputs: 1 };
    },
    commit: (groupId: string) => {
      group(groupId, 'commit');
      return { groupId, state: 'done' as const, published: 1, retired: 5, conflicts: 0 };
    },
    rollback: (groupId: string, error: string | undefined) => {
      group(groupId, 'rollback', `rollback(${error})`);
      return { groupId, state: 'aborted' as const, published: 0, retired: 0, conflicts: 0, error };
    },
    finalize(run: RunContext, outcome: RunOutcome, error: string | undefined): RunSummary {
      observed.run.push(`finalize:${outcome}${error === undefined ? '' : `(${error})`}`);
      if (scenario.finalize?.outcome === outcome) throw scenario.finalize.error();
      const first = [...failed].sort()[0];
      const status = outcome === 'failed' || first !== undefined ? 'FAILED' : 'SUCCEEDED';
      return {
        runId: run.runId,
        table: run.table,
        partition: run.partition,
        outcome,
        status,
        trigger: run.trigger,
        dryRun: run.dryRun,
        groups: 0,
        groupsDone: 0,
        groupsAborted: 0,
        failedGroups: failed.length,
        ...(first === undefined
          ? {}
          : { firstError: { error: 'GroupFailed', cause: first, groupId: first } }),
        filesBefore: 0,
        bytesBefore: 0,
        filesAfter: 0,
        bytesAfter: 0,
        filesRetired: 0,
        filesPublished: 0,
        rows: 0,
        bytesRewritten: 0,
        durationMs: 0,
        visibilityWindowMs: 0,
      };
    },
  };
}

function runContext(scenario: Scenario): RunContext {
  return {
    ...buildRunContext(
      { name: 'events', prefix: 'events', bucket: 'lake' },
      'date=2024-01-15',
      { force: true, ...scenario.run },
      { executionName: 'run-1', startedAt: 0 },
    ),
  };
}

/** The orchestrator with every step service replaced by the script. */
async function inProcess(scenario: Scenario): Promise<Observed> {
  const observed: Observed = { run: [], groups: {} };
  const script = scripted(scenario, observed);
  const steps: WorkflowSteps = {
    acquireLease: async (_leases, run) => ({
      runId: run.runId,
      generation: 1,
      acquiredAt: 0,
      quiet: script.acquire(),
    }),
    checkQuiet: async (_leases, _run, previousRound) => script.checkQuiet(previousRound),
    planRun: async () => script.plan(),
    compactGroup: async (_deps, _run, item) => script.compact(item.groupId),
    verifyGroup: async (_deps, _run, groupId) => script.verify(groupId),
    commitStep: async (_deps, _runId, groupId) => script.commit(groupId),
    rollbackStep: async (_deps, _runId, groupId, error) => script.rollback(groupId, error.Error),
    finalizeRun: async (_deps, run, request) => script.finalize(run, request.outcome, request.error?.Error),
  };
  const deps = {
    store: {} as ObjectStore,
    journal: {} as Journal,
    clock: { now: () => 0 },
    leases: {} as PartitionLeases,
    wait: async () => undefined,
    engine: {} as ParquetEngine, // the scripted steps never rewrite
  };
  try {
    const result = await runPartition(
      deps,
      runContext(scenario),
      { plan: { inlineGroupLimit: 40, compactMemoryMb: 1024 } },
      {},
      steps,
    );
    observed.end =
      result.summary.status === 'FAILED'
        ? { status: 'FAILED', error: result.summary.firstError?.error ?? 'failed' }
        : { status: 'SUCCEEDED' };
  } catch (err) {
    observed.end = { status: 'FAILED', error: err instanceof Error ? err.name : String(err) };
  }
  return observed;
}

/** The synthesized state machine in the local engine, its Lambdas replaced by the script. */
async function inStateMachine(machine: StateMachineUnderTest, scenario: Scenario): Promise<Observed> {
  const observed: Observed = { run: [], groups: {} };
  const script = scripted(scenario, observed);
  type Event = {
    action?: string;
    round?: number;
    run: RunContext;
    group?: { groupId: string };
    groupId?: string;
    error?: { Error?: string };
    outcome?: RunOutcome;
    state?: { run: RunContext; error?: { Error?: string } };
  };
  const lambdas: Record<string, (event: Event) => unknown> = {
    validate: () => ({ mode: 'single', run: runContext(scenario) }),
    lease: (event) =>
      event.action === 'acquire'
        ? { runId: event.run.runId, generation: 1, acquiredAt: 0, quiet: script.acquire() }
        : script.checkQuiet(event.round ?? 0),
    plan: () => script.plan(),
    compact: (event) => script.compact(event.group?.groupId ?? ''),
    verify: (event) => script.verify(event.groupId ?? ''),
    commit: (event) => script.commit(event.groupId ?? ''),
    rollback: (event) => script.rollback(event.groupId ?? '', event.error?.Error),
    finalize: (event) =>
      script.finalize(event.state?.run ?? event.run, event.outcome ?? 'failed', event.state?.error?.Error),
  };
  const runner = new StepFunctionsRunner(
    machine.machines,
    {
      model: machine.model,
      dynamodb: {} as DynamoDBClient,
      s3: {} as S3Client,
      invokeFunction: async (logicalId, payload) => {
        const step = machine.stepOf.get(logicalId);
        const lambda = step === undefined ? undefined : lambdas[step];
        if (lambda === undefined) throw new Error(`no scripted Lambda for ${logicalId}`);
        return lambda(payload as Event);
      },
      invokeFunctionAsync: () => undefined,
      sendToQueue: () => 'unused',
      putEvent: () => undefined,
      notifications: [],
    },
    { waitTimeMs: 0, retryIntervalMs: 0 },
  );
  const execution = await runner.start(machine.logicalId, { table: 'events' }, 'run-1').done;
  observed.end =
    execution.status === 'SUCCEEDED'
      ? { status: 'SUCCEEDED' }
      : { status: execution.status, ...(execution.error === undefined ? {} : { error: execution.error }) };
  return observed;
}

interface StateMachineUnderTest {
  readonly model: TemplateModel;
  readonly machines: ReturnType<typeof stateMachinesFromTemplate>;
  readonly logicalId: string;
  /** The workflow's step (its `functions` key) behind each Lambda's logical id. */
  readonly stepOf: ReadonlyMap<string, string>;
}

describe('runPartition mirrors the compaction state machine', () => {
  let machine: StateMachineUnderTest;

  beforeAll(() => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const stack = new WorkflowStack(app, 'Mirror');
    const model = new TemplateModel(Template.fromStack(stack).toJSON() as CfnTemplate);
    const machines = stateMachinesFromTemplate(model);
    const [logicalId] = [...machines.keys()];
    if (logicalId === undefined) throw new Error('the stack has no state machine');
    const stepOf = new Map(
      Object.entries(stack.workflow.functions).map(([step, fn]) => [
        stack.getLogicalId(fn.node.defaultChild as CfnElement),
        step,
      ]),
    );
    machine = { model, machines, logicalId, stepOf };
  });

  const scenarios: Record<string, Scenario> = {
    'compacts every group, and rolls back each group whose compact, verify or commit fails': {
      groups: 4,
      failures: {
        g2: { verify: () => new VerificationError('rows differ') },
        g3: { compact: () => new CorruptInputError('events/a.parquet', 'truncated') },
        g4: { commit: () => new NotVerifiedError('not verified') },
      },
      expected: {
        run: ['lease:acquire', 'plan', 'finalize:compacted'],
        groups: {
          g1: ['compact', 'verify', 'commit'],
          g2: ['compact', 'verify', 'rollback(VerificationError)'],
          g3: ['compact', 'rollback(CorruptInputError)'],
          g4: ['compact', 'verify', 'commit', 'rollback(NotVerifiedError)'],
        },
        end: failedWith('GroupFailed'),
      },
    },
    'plans and finalizes a dry run without touching a group': {
      run: { dryRun: true },
      groups: 2,
      expected: { run: ['lease:acquire', 'plan', 'finalize:dry-run'], groups: {}, end: ok },
    },
    'finalizes nothing-to-do when the plan has no group': {
      groups: 0,
      expected: { run: ['lease:acquire', 'plan', 'finalize:nothing-to-do'], groups: {}, end: ok },
    },
    'goes from the lease straight to finalize in a settle run': {
      run: { settle: true },
      expected: { run: ['lease:acquire', 'finalize:settled'], groups: {}, end: ok },
    },
    'checks quiet again after each wait, then compacts': {
      quiet: [verdict(1, 'wait'), verdict(2, 'wait'), verdict(3, 'quiet')],
      expected: {
        run: ['lease:acquire', 'lease:quiet', 'lease:quiet', 'plan', 'finalize:compacted'],
        groups: { g1: ['compact', 'verify', 'commit'] },
        end: ok,
      },
    },
    'finalizes gave-up when the partition stays busy': {
      quiet: [verdict(1, 'wait'), verdict(2, 'give-up')],
      expected: { run: ['lease:acquire', 'lease:quiet', 'finalize:gave-up'], groups: {}, end: ok },
    },
    'ends unrecorded when another run holds the lease': {
      lease: () => new LeaseHeldError('held by run-0'),
      expected: { run: ['lease:acquire'], groups: {}, end: failedWith('LeaseHeldError') },
    },
    'ends unrecorded when the partition needs attention': {
      lease: () => new PartitionNeedsAttentionError('settle it first'),
      expected: { run: ['lease:acquire'], groups: {}, end: failedWith('PartitionNeedsAttentionError') },
    },
    'records any other lease failure through finalize failed': {
      lease: () => new LeaseLostError('gone'),
      expected: {
        run: ['lease:acquire', 'finalize:failed(LeaseLostError)'],
        groups: {},
        end: failedWith('LeaseLostError'),
      },
    },
    'records a plan failure through finalize failed': {
      plan: () => new UnsettledPartitionError('an old group is stuck'),
      expected: {
        run: ['lease:acquire', 'plan', 'finalize:failed(UnsettledPartitionError)'],
        groups: {},
        end: failedWith('UnsettledPartitionError'),
      },
    },
    'records a failed rollback through finalize failed': {
      failures: {
        g1: {
          compact: () => new CorruptInputError('events/a.parquet', 'truncated'),
          rollback: () => new PreconditionFailedError('staging/x'),
        },
      },
      expected: {
        run: ['lease:acquire', 'plan', 'finalize:failed(PreconditionFailedError)'],
        groups: { g1: ['compact', 'rollback(CorruptInputError)'] },
        end: failedWith('PreconditionFailedError'),
      },
    },
    'records a failed finalize through finalize failed, and fails with its error': {
      finalize: { outcome: 'compacted', error: () => new ObjectNotFoundError('events/') },
      expected: {
        run: ['lease:acquire', 'plan', 'finalize:compacted', 'finalize:failed(ObjectNotFoundError)'],
        groups: { g1: ['compact', 'verify', 'commit'] },
        end: failedWith('ObjectNotFoundError'),
      },
    },
  };

  it.each(Object.entries(scenarios))('%s', async (_name, scenario) => {
    // Prepare: the scenario's script

    // Act
    const cloud = await inStateMachine(machine, scenario);
    const local = await inProcess(scenario);

    // Assess
    expect(cloud).toEqual(scenario.expected);
    expect(local).toEqual(cloud);
  });

  it('lists as unrecorded exactly the errors the lease step catches into its own Fail states', () => {
    // Prepare
    const states = (machine.machines.get(machine.logicalId)?.originalDefinition.States ?? {}) as Record<
      string,
      { Type: string; Catch?: { ErrorEquals: string[]; Next: string }[] }
    >;
    const acquire = states['Acquire lease'];

    // Act
    const unrecorded = (acquire?.Catch ?? [])
      .filter((c) => states[c.Next]?.Type === 'Fail')
      .flatMap((c) => c.ErrorEquals);

    // Assess
    expect(unrecorded).toEqual([...UNRECORDED_LEASE_ERRORS]);
  });

  it('scripts only errors that the state machine does not retry, since the orchestrator retries none', () => {
    // Prepare
    const thrown = Object.values(scenarios).flatMap((s) => [
      ...(s.lease === undefined ? [] : [s.lease()]),
      ...(s.plan === undefined ? [] : [s.plan()]),
      ...Object.values(s.failures ?? {}).flatMap((f) => Object.values(f).map((error) => error())),
      ...(s.finalize === undefined ? [] : [s.finalize.error()]),
    ]);

    // Act
    const retried = thrown.filter((e) => RETRYABLE_ERROR_NAMES.includes(e.name));

    // Assess
    expect(thrown.length).toBeGreaterThan(5);
    expect(retried).toEqual([]);
  });
});
