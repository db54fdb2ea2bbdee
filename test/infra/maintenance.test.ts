// Template assertions for the Maintenance construct: the two schedules with an explicit dryRun in their
// Input, configurable schedules and rules, the retention gate at synthesis, and least-privilege grants.
import { App, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import { describe, expect, it } from 'vitest';
import { LakeCompactorStack } from '../../infra/app.js';
import { Maintenance, type MaintenanceProps } from '../../infra/maintenance.js';

type Statement = { Action: string | string[]; Resource: unknown; Effect: string };

function synth(props: Partial<Omit<MaintenanceProps, 'stateTable'>> = {}): {
  template: Template;
  stack: Stack;
} {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new Stack(app, 'MaintenanceTest');
  const stateTable = new dynamodb.Table(stack, 'State', {
    partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING },
    sortKey: { name: 'sk', type: dynamodb.AttributeType.STRING },
    removalPolicy: RemovalPolicy.DESTROY,
  });
  new Maintenance(stack, 'Maintenance', {
    stateTable,
    tablesJson: '[]',
    tables: [{ bucketName: 'lake', prefix: 'events/' }],
    ...props,
  });
  return { template: Template.fromStack(stack), stack };
}

/** The Input of the rule whose description starts with `prefix`, parsed. */
function ruleInput(template: Template, prefix: string): { schedule: string; input: Record<string, unknown> } {
  const rules = Object.values(template.findResources('AWS::Events::Rule')) as {
    Properties: { Description: string; ScheduleExpression: string; Targets: { Input: string }[] };
  }[];
  const rule = rules.find((r) => r.Properties.Description.startsWith(prefix));
  expect(rule).toBeDefined();
  const target = rule?.Properties.Targets[0];
  return { schedule: rule?.Properties.ScheduleExpression ?? '', input: JSON.parse(target?.Input ?? '{}') };
}

/** Statements of the role policy attached to the function whose logical id starts with `id`. */
function statementsOf(template: Template, id: string): Statement[] {
  const policies = template.findResources('AWS::IAM::Policy') as Record<
    string,
    { Properties: { PolicyDocument: { Statement: Statement[] }; Roles: { Ref: string }[] } }
  >;
  return Object.values(policies)
    .filter((p) => p.Properties.Roles.some((r) => r.Ref.startsWith(`Maintenance${id}ServiceRole`)))
    .flatMap((p) => p.Properties.PolicyDocument.Statement);
}

function actionsOf(statements: Statement[]): string[] {
  return statements.flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action])).sort();
}

describe('Maintenance construct', () => {
  it('schedules vacuum daily and tiering weekly by default, both with dryRun: true in the Input', () => {
    // Prepare
    const { template } = synth();
    // Act
    const vacuum = ruleInput(template, 'lake-compactor vacuum');
    const tiering = ruleInput(template, 'lake-compactor tiering');
    // Assess
    expect(vacuum.schedule).toBe('cron(0 4 * * ? *)');
    expect(vacuum.input).toEqual({
      dryRun: true,
      resume: true,
      retentionHours: 168,
      debrisAgeHours: 72,
      abandonedAfterHours: 24,
    });
    expect(tiering.schedule).toBe('cron(0 5 ? * SUN *)');
    expect(tiering.input).toEqual({ dryRun: true, resume: true });
  });

  it('takes the schedules, dry-run flags, retention and rules from props', () => {
    // Prepare
    const rules = [{ afterDays: 60, storageClass: 'GLACIER_IR' as const }];
    const { template } = synth({
      vacuum: { schedule: events.Schedule.expression('rate(12 hours)'), dryRun: false, retentionHours: 336 },
      tiering: { schedule: events.Schedule.expression('rate(1 day)'), dryRun: false, rules },
    });
    // Act
    const vacuum = ruleInput(template, 'lake-compactor vacuum');
    const tiering = ruleInput(template, 'lake-compactor tiering');
    // Assess
    expect(vacuum).toEqual({
      schedule: 'rate(12 hours)',
      input: expect.objectContaining({ dryRun: false, retentionHours: 336 }),
    });
    expect(tiering).toEqual({ schedule: 'rate(1 day)', input: { dryRun: false, resume: true } });
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ TIERING_RULES: JSON.stringify(rules) }) },
    });
  });

  it('refuses a vacuum retention below 168 h at synthesis unless explicitly allowed', () => {
    // Prepare
    const below = () => synth({ vacuum: { retentionHours: 167 } });
    // Act
    const allowed = synth({ vacuum: { retentionHours: 24, allowRetentionBelowMinimum: true } });
    // Assess
    expect(below).toThrow(/below the minimum of 168 h/);
    expect(ruleInput(allowed.template, 'lake-compactor vacuum').input).toMatchObject({
      retentionHours: 24,
      allowRetentionBelowMinimum: true,
    });
  });

  it('passes a Delta retention override to the vacuum schedule, with the same 168 h gate at synthesis', () => {
    // Prepare
    const below = () => synth({ vacuum: { deltaRetentionHours: 24 } });
    // Act
    const { template } = synth({ vacuum: { deltaRetentionHours: 336 } });
    // Assess
    expect(below).toThrow(/deltaRetentionHours: 24 is below the minimum of 168 h/);
    expect(ruleInput(template, 'lake-compactor vacuum').input).toMatchObject({
      retentionHours: 168,
      deltaRetentionHours: 336,
    });
  });

  it('refuses tiering rules that would warm data up', () => {
    // Prepare
    const rules = [
      { afterDays: 30, storageClass: 'GLACIER_IR' as const },
      { afterDays: 90, storageClass: 'STANDARD_IA' as const },
    ];
    // Act
    const act = () => synth({ tiering: { rules } });
    // Assess
    expect(act).toThrow(/not colder/);
  });

  it('gives each function its own log group', () => {
    // Prepare
    const { template } = synth();
    // Act
    const functions = Object.values(template.findResources('AWS::Lambda::Function')) as {
      Properties: { LoggingConfig?: { LogGroup?: unknown } };
    }[];
    // Assess
    expect(functions).toHaveLength(2);
    expect(functions.every((f) => f.Properties.LoggingConfig?.LogGroup !== undefined)).toBe(true);
    template.resourceCountIs('AWS::Logs::LogGroup', 2);
  });

  it('grants vacuum read-only journal access and deletes scoped to the work root and table prefixes', () => {
    // Prepare: the bucket's runs retire by a versioned delete
    const { template } = synth({ versionedBuckets: ['lake'] });
    // Act
    const statements = statementsOf(template, 'Vacuum');
    // Assess
    const actions = actionsOf(statements);
    expect(actions).not.toContain('dynamodb:PutItem');
    expect(actions).not.toContain('dynamodb:UpdateItem');
    expect(actions).toEqual(expect.arrayContaining(['dynamodb:Query', 'dynamodb:GetItem']));
    expect(statements).toContainEqual(
      expect.objectContaining({
        Action: ['s3:GetObject', 's3:DeleteObject', 's3:AbortMultipartUpload'],
        Resource: ['arn:aws:s3:::lake/_lake-compactor/*', 'arn:aws:s3:::lake/events/*'],
      }),
    );
    expect(statements).toContainEqual(
      expect.objectContaining({ Action: 's3:DeleteObjectVersion', Resource: 'arn:aws:s3:::lake/events/*' }),
    );
    expect(statements).toContainEqual(
      expect.objectContaining({
        Action: 's3:PutObject',
        Resource: 'arn:aws:s3:::lake/_lake-compactor/maintenance/*',
      }),
    );
    expect(actionsOf(statements).filter((a) => a === 's3:PutObject')).toHaveLength(1);
    expect(JSON.stringify(statements)).not.toContain('"s3:*"');
    // Listing (objects and unfinished uploads) is per bucket, unconditioned: see listStatements.
    expect(statements).toContainEqual({
      Effect: 'Allow',
      Action: ['s3:ListBucket', 's3:ListBucketMultipartUploads'],
      Resource: 'arn:aws:s3:::lake',
    });
  });

  it('grants tiering only list, read and write of the table prefixes, its checkpoint, and nothing in DynamoDB', () => {
    // Prepare
    const { template } = synth();
    // Act
    const statements = statementsOf(template, 'Tiering');
    // Assess
    expect(actionsOf(statements).filter((a) => !a.startsWith('xray:'))).toEqual([
      's3:DeleteObject',
      's3:GetObject',
      's3:GetObject',
      's3:ListBucket',
      's3:PutObject',
      's3:PutObject',
    ]);
    expect(statements).toContainEqual(
      expect.objectContaining({
        Action: ['s3:GetObject', 's3:PutObject'],
        Resource: 'arn:aws:s3:::lake/events/*',
      }),
    );
    expect(statements).toContainEqual(
      expect.objectContaining({
        Action: ['s3:GetObject', 's3:PutObject', 's3:DeleteObject'],
        Resource: 'arn:aws:s3:::lake/_lake-compactor/maintenance/*',
      }),
    );
    expect(statements).toContainEqual({
      Effect: 'Allow',
      Action: 's3:ListBucket',
      Resource: 'arn:aws:s3:::lake',
    });
  });

  it('is part of LakeCompactor, configurable from the JSON deployment config with schedule expressions', () => {
    // Prepare
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const config = JSON.parse(
      JSON.stringify({
        tables: [{ name: 'events', bucketName: 'lake', prefix: 'events/' }],
        maintenance: {
          vacuum: { schedule: 'rate(6 hours)', dryRun: false, retentionHours: 240 },
          tiering: { schedule: 'cron(0 6 * * ? *)', rules: [{ afterDays: 45, storageClass: 'STANDARD_IA' }] },
        },
      }),
    );
    // Act
    const stack = new LakeCompactorStack(app, 'WithMaintenance', { compactor: config });
    const template = Template.fromStack(stack);
    // Assess
    expect(ruleInput(template, 'lake-compactor vacuum')).toEqual({
      schedule: 'rate(6 hours)',
      input: expect.objectContaining({ dryRun: false, resume: true, retentionHours: 240 }),
    });
    expect(ruleInput(template, 'lake-compactor tiering')).toEqual({
      schedule: 'cron(0 6 * * ? *)',
      input: { dryRun: true, resume: true },
    });
    expect(stack.compactor.maintenance.vacuumFunction).toBeDefined();
  });
});
