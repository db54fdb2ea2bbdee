// Template assertions for the guardrails: run caps reach the profiler and the sweep (and bad ones fail the
// synth), the profiler's reserved concurrency bounds its poller, and every scheduled target has a DLQ.
import { App, type CfnElement } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { LakeCompactorStack } from '../../infra/app.js';
import type { LakeCompactorProps } from '../../infra/lake-compactor.js';

const TABLES: LakeCompactorProps['tables'] = [
  { name: 'events', bucketName: 'lake', prefix: 'events/', partitionColumns: ['date'] },
  { name: 'clicks', bucketName: 'lake', prefix: 'clicks/' },
];

function synth(extra: Partial<LakeCompactorProps> = {}): { stack: LakeCompactorStack; template: Template } {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new LakeCompactorStack(app, 'Guardrails', { compactor: { tables: TABLES, ...extra } });
  return { stack, template: Template.fromStack(stack) };
}

type FunctionResource = {
  Properties: {
    Description?: string;
    ReservedConcurrentExecutions?: number;
    Environment?: { Variables?: Record<string, unknown> };
  };
};

function functionNamed(template: Template, description: RegExp): FunctionResource {
  const found = Object.values(template.findResources('AWS::Lambda::Function')).filter((f) =>
    description.test((f as FunctionResource).Properties.Description ?? ''),
  );
  expect(found).toHaveLength(1);
  return found[0] as FunctionResource;
}

const PROFILER = /statistics exact/;
const SWEEP = /stuck leases/;

describe('guardrails', () => {
  const { stack, template } = synth();
  const logicalId = (construct: { node: { defaultChild?: unknown } }) =>
    stack.getLogicalId(construct.node.defaultChild as CfnElement);

  it('gives the profiler and the sweep the default caps: 50 runs per deployment, 10 per table', () => {
    // Prepare / Act
    const caps = [PROFILER, SWEEP].map(
      (d) => functionNamed(template, d).Properties.Environment?.Variables?.RUN_CAPS,
    );

    // Assess
    for (const json of caps) {
      expect(JSON.parse(String(json))).toEqual({ total: 50, perTable: 10, byTable: {} });
    }
  });

  it('takes the caps from triggers props, with a per-table override', () => {
    // Prepare
    const { template: custom } = synth({
      triggers: {
        maxConcurrentRuns: 20,
        maxConcurrentRunsPerTable: 4,
        maxConcurrentRunsByTable: { clicks: 1 },
      },
    });

    // Act
    const caps = [PROFILER, SWEEP].map(
      (d) => functionNamed(custom, d).Properties.Environment?.Variables?.RUN_CAPS,
    );

    // Assess
    for (const json of caps) {
      expect(JSON.parse(String(json))).toEqual({ total: 20, perTable: 4, byTable: { clicks: 1 } });
    }
  });

  it('refuses bad caps at synth, every problem in one message naming the prop', () => {
    // Prepare
    const bad = () =>
      synth({
        triggers: {
          maxConcurrentRuns: 0,
          maxConcurrentRunsPerTable: 2.5,
          maxConcurrentRunsByTable: { orders: 3 },
        },
        profilerReservedConcurrency: 1,
      });

    // Act / Assess
    expect(bad).toThrow(/`triggers\.maxConcurrentRuns` is 0; use a whole number of runs from 1 to 10000/);
    expect(bad).toThrow(/`triggers\.maxConcurrentRunsPerTable` is 2\.5/);
    expect(bad).toThrow(
      /names table "orders", which is not configured; configured tables: "events", "clicks"/,
    );
    expect(bad).toThrow(/`profilerReservedConcurrency` is 1; use a whole number from 2 to 1000/);
  });

  it('reserves 5 concurrent executions for the profiler and polls its queue with at most that many', () => {
    // Prepare / Act
    const profiler = functionNamed(template, PROFILER);

    // Assess
    expect(profiler.Properties.ReservedConcurrentExecutions).toBe(5);
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      ScalingConfig: { MaximumConcurrency: 5 },
    });
    const others = Object.values(template.findResources('AWS::Lambda::Function')).filter(
      (f) => (f as FunctionResource).Properties.ReservedConcurrentExecutions !== undefined,
    );
    expect(others).toHaveLength(1);
  });

  it('takes the reservation from props, and reserves nothing when it is false', () => {
    // Prepare / Act
    const { template: eight } = synth({ profilerReservedConcurrency: 8 });
    const { template: none } = synth({ profilerReservedConcurrency: false });

    // Assess
    expect(functionNamed(eight, PROFILER).Properties.ReservedConcurrentExecutions).toBe(8);
    eight.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      ScalingConfig: { MaximumConcurrency: 8 },
    });
    expect(functionNamed(none, PROFILER).Properties.ReservedConcurrentExecutions).toBeUndefined();
    none.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      ScalingConfig: { MaximumConcurrency: 5 },
    });
  });

  it('gives every scheduled target (sweep, reconcile, vacuum, tiering) a retry policy and the schedule DLQ', () => {
    // Prepare
    const rules = Object.values(template.findResources('AWS::Events::Rule')) as {
      Properties: { ScheduleExpression?: string; Targets: Record<string, unknown>[] };
    }[];
    const dlqArn = { 'Fn::GetAtt': [logicalId(stack.compactor.scheduleDeadLetterQueue), 'Arn'] };

    // Act
    const targets = rules
      .filter((r) => r.Properties.ScheduleExpression !== undefined)
      .flatMap((r) => r.Properties.Targets);

    // Assess
    expect(targets).toHaveLength(4);
    for (const target of targets) {
      expect(target).toMatchObject({
        DeadLetterConfig: { Arn: dlqArn },
        RetryPolicy: { MaximumRetryAttempts: 4, MaximumEventAgeInSeconds: 3600 },
      });
    }
    template.hasResourceProperties('AWS::SQS::QueuePolicy', {
      Queues: [{ Ref: logicalId(stack.compactor.scheduleDeadLetterQueue) }],
    });
  });
});
