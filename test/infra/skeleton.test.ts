// Template assertions for the construct skeleton: the state table and the profiler function are
// synthesized as the design requires (Node.js 22 on arm64, PITR, TTL), with no AWS account.
import { App, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { STACK_OUTPUT_KEYS } from '../../functions/core/stack-output-keys.js';
import { LakeCompactorStack } from '../../infra/app.js';
import { LakeCompactor } from '../../infra/lake-compactor.js';
import { codeFilesOf } from '../../infra/node-function.js';

function synthStack(): LakeCompactorStack {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  return new LakeCompactorStack(app, 'Test', {
    compactor: {
      tables: [{ name: 'events', bucketName: 'lake', prefix: 'events/', partitionColumns: ['date'] }],
    },
  });
}

function synth(): Template {
  return Template.fromStack(synthStack());
}

describe('LakeCompactor skeleton', () => {
  it('names, as stack outputs, every resource an operator needs after deploy: state table, workflow, sweep, vacuum, tiering, alarm topic, dashboard', () => {
    // Prepare
    const stack = synthStack();
    const template = Template.fromStack(stack);
    const refOf = (construct: { node: { defaultChild?: unknown } }) =>
      stack.resolve((construct.node.defaultChild as { ref: string }).ref);
    // Act
    const outputs = template.findOutputs('*') as Record<string, { Value: unknown; Description: string }>;
    // Assess
    expect(Object.keys(outputs).sort()).toEqual(
      [
        'AlarmTopicArn',
        'DashboardUrl',
        'StateMachineArn',
        'StateTableName',
        'SweepFunctionName',
        'TieringFunctionName',
        'VacuumFunctionName',
      ].sort(),
    );
    const c = stack.compactor;
    expect(outputs.StateTableName?.Value).toEqual(refOf(c.table));
    expect(outputs.StateMachineArn?.Value).toEqual(refOf(c.stateMachine));
    expect(outputs.SweepFunctionName?.Value).toEqual(refOf(c.sweepFunction));
    expect(outputs.VacuumFunctionName?.Value).toEqual(refOf(c.maintenance.vacuumFunction));
    expect(outputs.TieringFunctionName?.Value).toEqual(refOf(c.maintenance.tieringFunction));
    expect(outputs.AlarmTopicArn?.Value).toEqual(stack.resolve(c.workflow.notificationTopic.topicArn));
    expect(JSON.stringify(outputs.DashboardUrl?.Value)).toContain(
      JSON.stringify(refOf(c.observability.dashboard)).slice(1, -1),
    );
    expect(JSON.stringify(outputs.DashboardUrl?.Value)).toContain(
      '.console.aws.amazon.com/cloudwatch/home?region=',
    );
    // Every alarm notifies the topic the output names.
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm')) as {
      Properties: { AlarmActions?: unknown[] };
    }[];
    expect(alarms.length).toBeGreaterThan(0);
    for (const alarm of alarms)
      expect(alarm.Properties.AlarmActions).toContainEqual(outputs.AlarmTopicArn?.Value);
  });

  it('gives a user stack the same outputs by addOutputs(), none without it, and refuses a second set in one stack', () => {
    // Prepare: the construct in a user's own stack, as an installed package is used.
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const userStack = new Stack(app, 'UserLake');
    const props = {
      tables: [{ name: 'events', bucketName: 'lake', prefix: 'events/', partitionColumns: ['date'] }],
    };
    const first = new LakeCompactor(userStack, 'First', props);
    const second = new LakeCompactor(userStack, 'Second', { ...props, workRoot: '_second/' });
    const bare = new LakeCompactor(new Stack(app, 'Bare'), 'C', { ...props, workRoot: '_bare/' });
    // Act
    const made = first.addOutputs();
    // Assess: the keys --stack reads, valued from this construct; a stack that did not ask has none.
    const outputs = Template.fromStack(userStack).findOutputs('*') as Record<string, { Value: unknown }>;
    expect(Object.keys(outputs).sort()).toEqual(Object.keys(made).sort());
    expect(Object.keys(outputs).sort()).toEqual(
      Object.values(STACK_OUTPUT_KEYS)
        .filter((k) => k !== STACK_OUTPUT_KEYS.dataBucket)
        .sort(),
    );
    expect(outputs.StateTableName?.Value).toEqual(
      userStack.resolve((first.table.node.defaultChild as unknown as { ref: string }).ref),
    );
    expect(Template.fromStack(Stack.of(bare)).findOutputs('*')).toEqual({});
    expect(() => second.addOutputs()).toThrow(/There is already a Construct with name 'StateTableName'/);
  });

  it('creates the single state table with on-demand billing, point-in-time recovery and TTL', () => {
    // Prepare / Act
    const template = synth();
    // Assess
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      KeySchema: [
        { AttributeName: 'pk', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ],
      BillingMode: 'PAY_PER_REQUEST',
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      TimeToLiveSpecification: { AttributeName: 'expiresAt', Enabled: true },
    });
  });

  it('runs the profiler on Node.js 22 arm64 with the table configs in its code, named by TABLES_FILE', () => {
    // Prepare
    const stack = synthStack();
    // Act
    const template = Template.fromStack(stack);
    // Assess
    template.hasResourceProperties('AWS::Lambda::Function', {
      Runtime: 'nodejs22.x',
      Architectures: ['arm64'],
      Description: Match.stringLikeRegexp('^Keeps per-partition file statistics'),
      Environment: { Variables: Match.objectLike({ TABLES_FILE: 'tables.json', TABLES: Match.absent() }) },
    });
    expect(codeFilesOf(stack.compactor.profilerFunction)?.['tables.json']).toMatch(/"prefix":"events\/"/);
  });

  it('refuses a construct with no tables, saying what is missing', () => {
    // Prepare
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    // Act / Assess
    expect(() => new LakeCompactorStack(app, 'Empty', { compactor: { tables: [] } })).toThrow(
      /at least one table/,
    );
  });
});

describe('LakeCompactor props validation', () => {
  it('reports every invalid table setting in one synth-time error', () => {
    // Prepare
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    // Act
    const build = () =>
      new LakeCompactorStack(app, 'Invalid', {
        compactor: {
          tables: [
            { name: 'events', bucketName: 'lake', prefix: 'events/', dateColumn: 'day' },
            { name: 'events', bucketName: 'lake', prefix: 'clicks/', codec: 'lz4' as 'zstd' },
          ],
        },
      });
    // Assess: one error names both problems
    let message = '';
    try {
      build();
    } catch (err) {
      message = err instanceof Error ? err.message : String(err);
    }
    expect(message).toMatch(/dateFormat is required/);
    expect(message).toMatch(/1\.codec/);
  });

  it('reports invalid function memory sizes together with invalid tables', () => {
    // Prepare
    const build = () =>
      new LakeCompactorStack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'BadMemory', {
        compactor: {
          tables: [{ name: 'events', bucketName: 'lake', prefix: 'events/', dateColumn: 'day' }],
          profilerMemoryMb: 64,
          sweepMemoryMb: 1024.5,
          workflow: { compactMemoryMb: 20_000 },
        },
      });
    // Act / Assess: each call synthesizes a fresh app and fails with every problem
    expect(build).toThrow(/dateFormat is required/);
    expect(build).toThrow(
      /`profilerMemoryMb` is 64; Lambda memory is a whole number of MB from 128 to 10240/,
    );
    expect(build).toThrow(/`sweepMemoryMb` is 1024\.5/);
    expect(build).toThrow(/`workflow\.compactMemoryMb` is 20000/);
  });

  it('sizes the profiler and the sweep from props', () => {
    // Prepare
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const stack = new LakeCompactorStack(app, 'Sized', {
      compactor: {
        tables: [{ name: 'events', bucketName: 'lake', prefix: 'events/' }],
        profilerMemoryMb: 1024,
        sweepMemoryMb: 2048,
      },
    });
    // Act
    const template = Template.fromStack(stack);
    // Assess
    template.hasResourceProperties('AWS::Lambda::Function', {
      Description: Match.stringLikeRegexp('^Keeps per-partition file statistics'),
      MemorySize: 1024,
    });
    template.hasResourceProperties('AWS::Lambda::Function', {
      Description: Match.stringLikeRegexp('^Starts partitions whose quiet window passed'),
      MemorySize: 2048,
    });
  });

  it('passes per-table policy, codec, DELTA encoding, sort columns and target size to every function', () => {
    // Prepare
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const stack = new LakeCompactorStack(app, 'Tuned', {
      compactor: {
        tables: [
          {
            name: 'events',
            bucketName: 'lake',
            prefix: 'events/',
            targetFileSizeMB: 256,
            codec: 'snappy',
            deltaEncoding: true,
            sortColumns: ['user_id'],
            policy: { quietMinutes: 5 },
          },
        ],
      },
    });
    // Act
    const delivered = [
      stack.compactor.profilerFunction,
      stack.compactor.sweepFunction,
      ...Object.values(stack.compactor.workflow.functions),
      stack.compactor.maintenance.vacuumFunction,
      stack.compactor.maintenance.tieringFunction,
    ].map((fn) => codeFilesOf(fn)?.['tables.json']);
    // Assess
    expect(delivered).toHaveLength(12);
    for (const file of delivered) {
      expect(file).toContain(
        '"targetFileSizeMB":256,"codec":"snappy","deltaEncoding":true,"sortColumns":["user_id"],"policy":{"quietMinutes":5}',
      );
    }
  });
});
