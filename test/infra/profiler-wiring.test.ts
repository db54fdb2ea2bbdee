// Template assertions for the profiler wiring: S3 notifications per table prefix → SQS with a DLQ →
// profiler with partial batch failures, EventBridge-sourced tables, and the sweep and reconcile schedules.
import { App } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { DEFAULT_WRITER_LEASE_MS, WRITER_SKEW_MS } from '../../functions/adapters/dynamodb-stats-store.js';
import { LakeCompactorStack } from '../../infra/app.js';
import { type LakeCompactorTable, outermostPrefixes } from '../../infra/lake-compactor.js';

const TABLES: (LakeCompactorTable & { bucketName: string })[] = [
  { name: 'events', bucketName: 'lake', prefix: 'events/', partitionColumns: ['date'] },
  { name: 'clicks', bucketName: 'lake', prefix: 'clicks' },
  { name: 'orders', bucketName: 'other-lake', prefix: 'orders/' },
  { name: 'bridged', bucketName: 'bridge-lake', prefix: 'audit/', eventSource: 'eventbridge' },
];

// The per-step grants as each function's own role holds them (`tableIsolation: "none"`): with the default isolation
// they move, unchanged, to per-function data-access roles (test/infra/table-isolation.test.ts proves the move).
function synth(tables: LakeCompactorTable[] = TABLES): { template: Template; stack: LakeCompactorStack } {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new LakeCompactorStack(app, 'Wiring', { compactor: { tables, tableIsolation: 'none' } });
  return { template: Template.fromStack(stack), stack };
}

describe('profiler wiring', () => {
  const { template } = synth();

  it('sends events to a queue whose dead-letter queue takes messages after 5 receives', () => {
    // Prepare
    const queues = template.findResources('AWS::SQS::Queue');

    // Act
    const withDlq = Object.values(queues).filter((q) => q.Properties?.RedrivePolicy !== undefined);

    // Assess: the profiler's queue and its DLQ, and the scheduled targets' DLQ
    expect(Object.keys(queues).filter((id) => id.includes('Profiler'))).toHaveLength(2);
    expect(withDlq).toHaveLength(1);
    expect(withDlq[0]?.Properties.RedrivePolicy).toMatchObject({ maxReceiveCount: 5 });
    expect(withDlq[0]?.Properties.VisibilityTimeout).toBeGreaterThanOrEqual(60 * 6);
  });

  it('consumes the queue in batches with ReportBatchItemFailures', () => {
    // Prepare / Act / Assess
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      BatchSize: 1000,
      MaximumBatchingWindowInSeconds: 30,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      EventSourceArn: { 'Fn::GetAtt': [Match.stringLikeRegexp('ProfilerEvents'), 'Arn'] },
    });
  });

  it('redelivers a batch only after a writer that died in it has lapsed, whatever the batching window waited', () => {
    // Prepare: a message is invisible from its receive; the batch may wait out the window, then run to the
    // function's timeout, registering on a partition at any moment of that run
    const queue = Object.values(template.findResources('AWS::SQS::Queue')).find(
      (q) => q.Properties?.RedrivePolicy !== undefined,
    );
    const mapping = Object.values(template.findResources('AWS::Lambda::EventSourceMapping'))[0];
    const profiler = Object.values(template.findResources('AWS::Lambda::Function')).find((f) =>
      String(f.Properties?.Description).startsWith('Keeps per-partition'),
    );
    const visibilityMs = Number(queue?.Properties.VisibilityTimeout) * 1000;
    const windowMs = Number(mapping?.Properties.MaximumBatchingWindowInSeconds) * 1000;
    const timeoutMs = Number(profiler?.Properties.Timeout) * 1000;

    // Act: the latest moment a dead writer's registration may still be honoured, counted from the receive
    const writerLapsedMs = windowMs + timeoutMs + DEFAULT_WRITER_LEASE_MS + WRITER_SKEW_MS;

    // Assess: the redelivered batch finds the dead writer's files free instead of busy
    expect([visibilityMs, windowMs, timeoutMs].every(Number.isFinite)).toBe(true);
    expect(writerLapsedMs).toBeLessThanOrEqual(visibilityMs);
  });

  it('notifies created and removed objects once per bucket and outermost table prefix', () => {
    // Prepare
    const notifications = template.findResources('Custom::S3BucketNotifications');

    // Act
    const configs = Object.values(notifications).map((n) => ({
      bucket: n.Properties.BucketName,
      queue: (
        n.Properties.NotificationConfiguration.QueueConfigurations as {
          Events: string[];
          Filter?: { Key: { FilterRules: { Name: string; Value: string }[] } };
        }[]
      ).map((c) => ({
        events: c.Events,
        prefix: c.Filter?.Key.FilterRules.find((r) => r.Name === 'prefix')?.Value,
      })),
    }));

    // Assess
    expect(configs).toEqual(
      expect.arrayContaining([
        {
          bucket: 'lake',
          queue: [
            { events: ['s3:ObjectCreated:*'], prefix: 'events/' },
            { events: ['s3:ObjectRemoved:*'], prefix: 'events/' },
            { events: ['s3:ObjectCreated:*'], prefix: 'clicks/' },
            { events: ['s3:ObjectRemoved:*'], prefix: 'clicks/' },
          ],
        },
        {
          bucket: 'other-lake',
          queue: [
            { events: ['s3:ObjectCreated:*'], prefix: 'orders/' },
            { events: ['s3:ObjectRemoved:*'], prefix: 'orders/' },
          ],
        },
      ]),
    );
    expect(configs.map((c) => c.bucket).sort()).toEqual(['lake', 'other-lake']);
  });

  it('lets S3 send to the queue only for each notified bucket of this account (aws:SourceArn and aws:SourceAccount)', () => {
    // Prepare
    const policies = Object.values(template.findResources('AWS::SQS::QueuePolicy'));
    // Act
    const fromS3 = policies
      .flatMap((p) => p.Properties.PolicyDocument.Statement as Record<string, unknown>[])
      .filter((s) => JSON.stringify(s.Principal) === '{"Service":"s3.amazonaws.com"}');
    // Assess: one statement per notified bucket (not the bridged one), each bound to the bucket and its account
    expect(fromS3.map((s) => s.Condition)).toEqual(
      ['lake', 'other-lake'].map((bucket) => ({
        ArnLike: {
          'aws:SourceArn': { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, `:s3:::${bucket}`]] },
        },
        StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } },
      })),
    );
    for (const statement of fromS3) expect(statement.Effect).toBe('Allow');
  });

  it('routes EventBridge "Object Created"/"Object Deleted" events of bridged tables to the same queue', () => {
    // Prepare / Act / Assess
    template.hasResourceProperties('AWS::Events::Rule', {
      EventPattern: {
        source: ['aws.s3'],
        'detail-type': ['Object Created', 'Object Deleted'],
        detail: { bucket: { name: ['bridge-lake'] }, object: { key: [{ prefix: 'audit/' }] } },
      },
      Targets: [
        Match.objectLike({ Arn: { 'Fn::GetAtt': [Match.stringLikeRegexp('ProfilerEvents'), 'Arn'] } }),
      ],
    });
  });

  it('runs the sweep every 15 minutes and reconcile weekly, each with its mode as input', () => {
    // Prepare
    const rules = Object.values(template.findResources('AWS::Events::Rule')).filter(
      (r) => r.Properties.ScheduleExpression,
    );

    // Act
    const schedules = rules.map((r) => ({
      schedule: r.Properties.ScheduleExpression,
      input: r.Properties.Targets[0].Input,
    }));

    // Assess
    expect(schedules).toEqual(
      expect.arrayContaining([
        { schedule: 'rate(15 minutes)', input: '{"mode":"sweep"}' },
        { schedule: 'cron(0 3 ? * SUN *)', input: '{"mode":"reconcile"}' },
      ]),
    );
  });

  it('tells the profiler and the sweep whether triggers are in dry-run (off unless asked)', () => {
    // Prepare
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const dry = new LakeCompactorStack(app, 'DryTriggers', {
      compactor: { tables: TABLES.slice(0, 1), triggers: { dryRun: true } },
    });
    // Act
    const flags = (t: Template) =>
      Object.values(t.findResources('AWS::Lambda::Function'))
        .map((f) => f.Properties.Environment?.Variables?.TRIGGERS_DRY_RUN)
        .filter((v) => v !== undefined);
    // Assess: exactly the two trigger functions carry the flag
    expect(flags(Template.fromStack(dry))).toEqual(['true', 'true']);
    expect(flags(template)).toEqual(['false', 'false']);
  });

  it('takes the sweep and reconcile schedules from props as schedule expressions (JSON config)', () => {
    // Prepare
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const stack = new LakeCompactorStack(app, 'Scheduled', {
      compactor: {
        tables: TABLES.slice(0, 1),
        sweep: { schedule: 'rate(5 minutes)', reconcileSchedule: 'cron(30 2 1 * ? *)' },
      },
    });
    // Act
    const rules = Object.values(Template.fromStack(stack).findResources('AWS::Events::Rule'))
      .filter((r) => r.Properties.ScheduleExpression)
      .map((r) => [r.Properties.ScheduleExpression, r.Properties.Targets[0].Input]);
    // Assess
    expect(rules).toEqual(
      expect.arrayContaining([
        ['rate(5 minutes)', '{"mode":"sweep"}'],
        ['cron(30 2 1 * ? *)', '{"mode":"reconcile"}'],
      ]),
    );
    expect(rules.map(([expression]) => expression)).not.toContain('rate(15 minutes)');
  });

  it('starts the sweep’s settle-retry backoff from the sweep’s own period (set only when it is not the default 15 minutes)', () => {
    // Prepare
    const retryMinutes = (schedule: string | undefined) => {
      const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
      const stack = new LakeCompactorStack(app, 'Retry', {
        compactor: { tables: TABLES.slice(0, 1), ...(schedule === undefined ? {} : { sweep: { schedule } }) },
      });
      const [sweep] = Object.values(Template.fromStack(stack).findResources('AWS::Lambda::Function')).filter(
        (f) => String(f.Properties.Description).startsWith('Starts partitions whose quiet window passed'),
      );
      if (sweep === undefined) throw new Error('no sweep function in the template');
      return sweep.Properties.Environment.Variables.SETTLE_RETRY_MINUTES;
    };

    // Act
    const minutes = [
      undefined,
      'rate(5 minutes)',
      'rate(2 hours)',
      'rate(3 days)',
      'cron(0/10 * * * ? *)',
    ].map(retryMinutes);

    // Assess: the handler's default (15) stands for the default and for a cron; a day at most
    expect(minutes).toEqual([undefined, '5', '120', '1440', undefined]);
  });

  it('gives the sweep ListBucket on each table bucket (reconcile) and the commit protocol’s object access (settling)', () => {
    // Prepare / Act / Assess
    template.hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Action: 's3:ListBucket',
            Resource: ['arn:aws:s3:::lake', 'arn:aws:s3:::other-lake', 'arn:aws:s3:::bridge-lake'],
            Condition: Match.absent(),
          }),
        ]),
      },
      Roles: [{ Ref: Match.stringLikeRegexp('^CompactorSweepServiceRole') }],
    });
    const sweepPolicies = Object.values(template.findResources('AWS::IAM::Policy')).filter((p) =>
      JSON.stringify(p.Properties.Roles).includes('CompactorSweepServiceRole'),
    );
    // It settles a dead run's groups before releasing its lease: staging, trash, journal and table objects,
    // and restoring a retired version; never deleting a version or listing versions (only vacuum does).
    const actions = JSON.stringify(sweepPolicies);
    for (const action of ['s3:GetObject', 's3:PutObject', 's3:DeleteObject', 's3:GetObjectVersion']) {
      expect(actions).toContain(`"${action}"`);
    }
    expect(actions).toContain('arn:aws:s3:::lake/_lake-compactor/staging/*');
    expect(actions).not.toMatch(/s3:DeleteObjectVersion|s3:ListBucketVersions/);
  });

  it('lets the profiler and the sweep start and describe executions of the attached state machine', () => {
    // Prepare
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const stack = new LakeCompactorStack(app, 'Attached', { compactor: { tables: TABLES.slice(0, 1) } });
    const machine = new sfn.StateMachine(stack, 'OtherWorkflow', {
      definitionBody: sfn.DefinitionBody.fromChainable(new sfn.Pass(stack, 'Noop')),
    });

    // Act
    stack.compactor.useCompactionStateMachine(machine);

    // Assess
    const attached = Template.fromStack(stack);
    const machineId = stack.getLogicalId(machine.node.defaultChild as sfn.CfnStateMachine);
    const withArn = Object.entries(attached.findResources('AWS::Lambda::Function'))
      .filter(([, f]) =>
        JSON.stringify(f.Properties.Environment?.Variables?.STATE_MACHINE_ARN ?? null).includes(machineId),
      )
      .map(([id]) => id);
    expect(withArn).toEqual([expect.stringMatching(/Profiler/), expect.stringMatching(/Sweep/)]);
    attached.hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Action: 'states:StartExecution', Resource: { Ref: machineId } }),
        ]),
      },
    });
  });

  it('delivers every object event of a Delta table’s root, its _delta_log/ commits included, and lets the profiler read only the log', () => {
    // Prepare
    const KEY = 'arn:aws:kms:us-east-1:111122223333:key/11111111-2222-3333-4444-555555555555';
    const { template, stack } = synth([
      { name: 'plain', bucketName: 'lake', prefix: 'plain/', kmsKeyArn: `${KEY}0` },
      {
        name: 'sales',
        bucketName: 'lake',
        prefix: 'sales/',
        format: 'delta',
        deltaLogStore: { type: 's3-conditional' },
        kmsKeyArn: KEY,
      },
    ]);

    // Act
    const notifications = Object.values(template.findResources('Custom::S3BucketNotifications'));
    const filters = notifications.flatMap((n) =>
      (
        n.Properties.NotificationConfiguration.QueueConfigurations as {
          Filter?: { Key: { FilterRules: { Name: string; Value: string }[] } };
        }[]
      ).map((c) => c.Filter?.Key.FilterRules ?? []),
    );
    const profilerPolicies = JSON.stringify(
      Object.values(template.findResources('AWS::IAM::Policy')).filter((p) =>
        JSON.stringify(p.Properties.Roles).includes('CompactorProfilerServiceRole'),
      ),
    );

    // Assess: a prefix filter only (no suffix drops the commits), and read access to the log alone
    const nagErrors = new AwsSolutionsChecks()
      .validateScope(stack)
      .violations.filter((v) => v.severity === 'error' && JSON.stringify(v).includes('Profiler'));
    expect(nagErrors.map((v) => v.ruleName)).toEqual([]);
    expect(filters).toContainEqual([{ Name: 'prefix', Value: 'sales/' }]);
    expect(filters.flat().filter((r) => r.Name === 'suffix')).toEqual([]);
    expect(profilerPolicies).toContain('"arn:aws:s3:::lake/sales/_delta_log/*"');
    expect(profilerPolicies).toContain('"s3:ListBucket"');
    expect(profilerPolicies).not.toMatch(/lake\/sales\/\*|lake\/plain|s3:PutObject|s3:DeleteObject/);
    expect(profilerPolicies).toContain(KEY);
    expect(profilerPolicies).not.toContain(`${KEY}0`);
  });

  it('gives the profiler no S3 or KMS access when no table is a Delta table', () => {
    // Prepare / Act
    const policies = JSON.stringify(
      Object.values(template.findResources('AWS::IAM::Policy')).filter((p) =>
        JSON.stringify(p.Properties.Roles).includes('CompactorProfilerServiceRole'),
      ),
    );

    // Assess
    expect(policies).not.toMatch(/"s3:|"kms:/);
  });

  it('drops prefixes nested in another table’s prefix of the same bucket (S3 refuses overlapping filters)', () => {
    // Prepare: synth refuses nested tables; the notification plan stays safe on its own
    const tables = [...TABLES, { name: 'nested', bucketName: 'lake', prefix: 'events/nested/' }];

    // Act
    const prefixes = outermostPrefixes(tables);

    // Assess
    expect(prefixes).toEqual([
      { bucketName: 'lake', prefix: 'events/' },
      { bucketName: 'lake', prefix: 'clicks/' },
      { bucketName: 'other-lake', prefix: 'orders/' },
      { bucketName: 'bridge-lake', prefix: 'audit/' },
    ]);
  });
});
