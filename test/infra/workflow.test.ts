// Template assertions for the compaction workflow: logging and X-Ray on, JSONPath only, retries only on
// transient errors by name (never on verification or corrupt input), a rollback Catch on every group step.
import { App } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CLASSES } from '../../functions/core/errors.js';
import { LakeCompactorStack } from '../../infra/app.js';
import { PERMANENT_ERRORS, TRANSIENT_ERRORS } from '../../infra/compaction-workflow.js';
import { WorkflowStack } from '../support/workflow-stack.js';

type State = {
  Type: string;
  Resource?: string;
  Retry?: { ErrorEquals: string[]; MaxAttempts?: number }[];
  Catch?: { ErrorEquals: string[]; Next: string; ResultPath?: string | null }[];
  ItemProcessor?: { States: Record<string, State> };
  ItemReader?: { Resource: string; ReaderConfig?: unknown; Parameters?: Record<string, unknown> };
  Choices?: { Variable?: string; NumericLessThanEquals?: number; Next: string }[];
  ErrorPath?: string;
  CausePath?: string;
  [key: string]: unknown;
};
type Definition = {
  StartAt: string;
  States: Record<string, State>;
  QueryLanguage?: string;
  TimeoutSeconds?: number;
};

/** The ASL of the template's only state machine, tokens replaced by a marker. */
function definitionOf(template: Template): Definition {
  const machines = Object.values(template.findResources('AWS::StepFunctions::StateMachine'));
  expect(machines).toHaveLength(1);
  const body = (machines[0] as { Properties: { DefinitionString: unknown } }).Properties.DefinitionString;
  const parts = (body as { 'Fn::Join': [string, unknown[]] })['Fn::Join'][1];
  return JSON.parse(parts.map((p) => (typeof p === 'string' ? p : 'TOKEN')).join('')) as Definition;
}

/** Every state, inside Maps too. */
function allStates(states: Record<string, State>): [string, State][] {
  return Object.entries(states).flatMap(([name, state]) => [
    [name, state] as [string, State],
    ...(state.ItemProcessor ? allStates(state.ItemProcessor.States) : []),
  ]);
}

describe('CompactionWorkflow template', () => {
  let template: Template;
  let definition: Definition;

  beforeAll(() => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    template = Template.fromStack(new WorkflowStack(app, 'Template', { workflow: { inlineGroupLimit: 7 } }));
    definition = definitionOf(template);
  });

  it('logs every execution with its data to its own log group and traces with X-Ray', () => {
    // Prepare / Act: synthesized in beforeAll
    // Assess
    template.hasResourceProperties('AWS::StepFunctions::StateMachine', {
      LoggingConfiguration: Match.objectLike({ Level: 'ALL', IncludeExecutionData: true }),
      TracingConfiguration: { Enabled: true },
    });
    expect(definition.QueryLanguage).toBeUndefined();
  });

  it('runs every step function on Node.js 22 arm64 with active tracing', () => {
    // Prepare / Act: synthesized in beforeAll
    const functions = Object.values(template.findResources('AWS::Lambda::Function')) as {
      Properties: { Runtime: string; Architectures: string[]; TracingConfig: { Mode: string } };
    }[];

    // Assess
    expect(functions).toHaveLength(8);
    for (const fn of functions) {
      expect(fn.Properties).toMatchObject({
        Runtime: 'nodejs22.x',
        Architectures: ['arm64'],
        TracingConfig: { Mode: 'Active' },
      });
    }
  });

  it('retries every Lambda task on transient errors by name, and never on permanent ones or States.ALL', () => {
    // Prepare
    const lambdaTasks = allStates(definition.States).filter(
      ([, s]) => s.Type === 'Task' && s.Resource === 'TOKEN',
    );

    // Act
    const retried = lambdaTasks.map(
      ([name, s]) => [name, (s.Retry ?? []).flatMap((r) => r.ErrorEquals)] as const,
    );

    // Assess
    expect(lambdaTasks.length).toBeGreaterThanOrEqual(14);
    for (const [name, errors] of retried) {
      expect(errors, name).toEqual(expect.arrayContaining([...TRANSIENT_ERRORS]));
      for (const permanent of [...PERMANENT_ERRORS, 'States.ALL', 'States.TaskFailed'])
        expect(errors, name).not.toContain(permanent);
    }
    const compact = retried.find(([name]) => name === 'Compact group')?.[1];
    expect(compact).toContain('States.Timeout');
  });

  it('retries exactly the error classes flagged retryable, on every Lambda task, and no other class of ours', () => {
    // Prepare
    const retryable = ERROR_CLASSES.filter((c) => c.retryable).map((c) => c.name);
    const ours = new Set<string>(ERROR_CLASSES.map((c) => c.name));
    const lambdaTasks = allStates(definition.States).filter(
      ([, s]) => s.Type === 'Task' && s.Resource === 'TOKEN',
    );

    // Act
    const retriedOfOurs = lambdaTasks.map(
      ([name, s]) =>
        [name, (s.Retry ?? []).flatMap((r) => r.ErrorEquals).filter((error) => ours.has(error))] as const,
    );

    // Assess
    expect(retryable).toEqual(['TransientStoreError', 'JournalConflictError']);
    expect(lambdaTasks.length).toBeGreaterThanOrEqual(14);
    for (const [name, errors] of retriedOfOurs) expect(errors, name).toEqual(retryable);
  });

  it('catches every failure of a group step into that group rollback, in both Maps', () => {
    // Prepare
    const steps = ['Compact group', 'Verify group', 'Commit group'];

    // Act
    const states = Object.fromEntries(allStates(definition.States));

    // Assess
    for (const suffix of ['', ' (distributed)']) {
      for (const step of steps) {
        expect(states[`${step}${suffix}`]?.Catch, step + suffix).toEqual([
          expect.objectContaining({ ErrorEquals: ['States.ALL'], Next: `Roll back group${suffix}` }),
        ]);
      }
    }
  });

  it('fails fast on a held lease before the generic failure path, and fails with the caught error names', () => {
    // Prepare / Act
    const states = Object.fromEntries(allStates(definition.States));

    // Assess
    expect(states['Acquire lease']?.Catch?.map((c) => [c.ErrorEquals, c.Next])).toEqual([
      [['LeaseHeldError'], 'Lease held'],
      [['PartitionNeedsAttentionError'], 'Partition needs attention'],
      [['States.ALL'], 'Record failure'],
    ]);
    expect(states['Group failed']).toMatchObject({ Type: 'Fail', ErrorPath: '$.result.firstError.error' });
    expect(states['Run failed']).toMatchObject({
      Type: 'Fail',
      ErrorPath: '$.error.Error',
      CausePath: '$.error.Cause',
    });
    for (const name of [
      'Plan partition',
      'Compact groups',
      'Compact groups (distributed)',
      'Finalize run',
      'Check quiet',
    ]) {
      expect(states[name]?.Catch?.at(-1), name).toMatchObject({
        ErrorEquals: ['States.ALL'],
        Next: 'Record failure',
      });
    }
  });

  it('chooses the inline Map up to the inline limit and the Distributed Map reading the items file above it', () => {
    // Prepare / Act
    const states = Object.fromEntries(allStates(definition.States));

    // Assess
    expect(states['Groups fit inline?']?.Choices).toEqual([
      expect.objectContaining({
        Variable: '$.plan.groupCount',
        NumericLessThanEquals: 7,
        Next: 'Compact groups',
      }),
    ]);
    expect(states['Compact groups']).toMatchObject({ Type: 'Map', ItemsPath: '$.plan.groups' });
    expect(states['Compact groups (distributed)']).toMatchObject({
      Type: 'Map',
      ItemReader: {
        Resource: 'arn:TOKEN:states:::s3:getObject',
        ReaderConfig: { InputType: 'JSON' },
        Parameters: { 'Bucket.$': '$.plan.bucket', 'Key.$': '$.plan.itemsKey' },
      },
      ItemProcessor: expect.objectContaining({
        ProcessorConfig: { Mode: 'DISTRIBUTED', ExecutionType: 'STANDARD' },
      }),
    });
  });

  it('announces every run end on EventBridge and SNS through direct integrations', () => {
    // Prepare / Act
    const states = Object.fromEntries(allStates(definition.States));

    // Assess
    for (const name of ['Announce completion', 'Announce failure']) {
      expect(states[name]?.Resource, name).toBe('arn:TOKEN:states:::events:putEvents');
    }
    for (const name of ['Notify completion', 'Notify failure']) {
      expect(states[name]?.Resource, name).toBe('arn:TOKEN:states:::sns:publish');
    }
  });

  it('ends a recorded run with its own outcome when announcing or notifying it fails, never on the failure path', () => {
    // Prepare / Act
    const states = Object.fromEntries(allStates(definition.States));
    const catches = (name: string) => states[name]?.Catch?.map((c) => [c.ErrorEquals, c.Next, c.ResultPath]);

    // Assess: a failed announcement still notifies; a failed notification goes on to the outcome
    expect(catches('Announce completion')).toEqual([
      [['States.ALL'], 'Notify completion', '$.result.announceError'],
    ]);
    expect(catches('Announce failure')).toEqual([
      [['States.ALL'], 'Notify failure', '$.result.announceError'],
    ]);
    for (const name of ['Notify completion', 'Notify failure']) {
      expect(catches(name), name).toEqual([
        [['States.ALL'], 'Run announced and notified?', '$.result.notifyError'],
      ]);
      expect(states[name]?.Next, name).toBe('Run announced and notified?');
    }
    expect(states['Run not notified']).toMatchObject({
      Type: 'Pass',
      Result: false,
      ResultPath: '$.result.notified',
    });
    expect(states['Run notified']).toMatchObject({
      Type: 'Pass',
      Result: true,
      Next: 'Failed before finalize?',
    });
    expect(states['Count notification failure']).toMatchObject({
      Type: 'Task',
      Resource: 'arn:TOKEN:states:::aws-sdk:cloudwatch:putMetricData',
      Parameters: {
        Namespace: 'LakeCompactor',
        MetricData: [expect.objectContaining({ MetricName: 'NotificationsFailed', Value: 1 })],
      },
      ResultPath: null,
      Next: 'Failed before finalize?',
      Catch: [expect.objectContaining({ ErrorEquals: ['States.ALL'], Next: 'Failed before finalize?' })],
    });
    expect(states['Failed before finalize?']?.Choices).toEqual([
      expect.objectContaining({ Variable: '$.error', IsPresent: true, Next: 'Run failed' }),
    ]);
    expect(states['Failed before finalize?']?.Default).toBe('Any group failed?');
    const intoFailurePath = allStates(definition.States).filter(
      ([name, state]) =>
        ['Announce', 'Notify', 'Count', 'Run notified', 'Run not notified'].some((p) => name.startsWith(p)) &&
        (state.Catch ?? []).some((c) => c.Next === 'Record failure'),
    );
    expect(intoFailurePath).toEqual([]);
  });

  it('lets the state machine publish its one metric only into the LakeCompactor namespace, and stops runs after 24 hours', () => {
    // Prepare
    const statements = Object.values(template.findResources('AWS::IAM::Policy')).flatMap(
      (p) =>
        (p as { Properties: { PolicyDocument: { Statement: Record<string, unknown>[] } } }).Properties
          .PolicyDocument.Statement,
    );

    // Act
    const putMetric = statements.filter((s) => s.Action === 'cloudwatch:PutMetricData');

    // Assess
    expect(putMetric).toEqual([
      {
        Effect: 'Allow',
        Action: 'cloudwatch:PutMetricData',
        Resource: '*',
        Condition: { StringEquals: { 'cloudwatch:namespace': 'LakeCompactor' } },
      },
    ]);
    expect(definition.TimeoutSeconds).toBe(86_400);
  });

  it('is part of LakeCompactor, which passes its ARN to the profiler as STATE_MACHINE_ARN', () => {
    // Prepare
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const stack = new LakeCompactorStack(app, 'Full', {
      compactor: {
        tables: [{ name: 'events', bucketName: 'lake', prefix: 'events/', partitionColumns: ['date'] }],
      },
    });

    // Act
    const full = Template.fromStack(stack);

    // Assess
    full.resourceCountIs('AWS::StepFunctions::StateMachine', 1);
    expect(stack.compactor.stateMachine).toBeDefined();
    full.hasResourceProperties('AWS::Lambda::Function', {
      Description: Match.stringLikeRegexp('statistics'),
      Environment: {
        Variables: Match.objectLike({
          STATE_MACHINE_ARN: { Ref: Match.stringLikeRegexp('WorkflowStateMachine') },
        }),
      },
    });
  });
});
