// IAM of DynamoDB-coordinated Delta tables (`deltaLogStore: { type: "dynamodb" }`): exactly the functions that
// commit or settle a group (plan, commit, rollback, finalize, sweep) get the protocol's four actions on the named
// commit table, in its configured region or the stack's; no other function does, a deployment whose tables do not
// coordinate through DynamoDB gets no such statement at all, and cdk-nag stays clean.
import { App, type PolicyValidationPluginReport } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { flattenCfnReference } from 'cdk-nag/lib/utils/flatten-cfn-reference.js';
import { describe, expect, it } from 'vitest';
import { parseTableConfigs } from '../../functions/core/table-config.js';
import { LakeCompactorStack } from '../../infra/app.js';
import { DELTA_LOG_ACTIONS } from '../../infra/delta-log-access.js';
import { tablesJsonOf } from '../../infra/function-config.js';
import type { LakeCompactorProps } from '../../infra/lake-compactor.js';

type Statement = { Effect: string; Action: string | string[]; Resource: unknown };
type Policy = { Properties: { PolicyDocument: { Statement: Statement[] }; Roles: { Ref: string }[] } };

/** A Spark-written Delta table coordinated through DynamoDB (two of them share a table), and other tables. */
const COORDINATED: LakeCompactorProps = {
  tables: [
    {
      name: 'orders',
      bucketName: 'lake',
      prefix: 'orders/',
      format: 'delta',
      deltaLogStore: { type: 'dynamodb', tableName: 'delta_log' },
    },
    {
      name: 'refunds',
      bucketName: 'lake',
      prefix: 'refunds/',
      format: 'delta',
      deltaLogStore: { type: 'dynamodb', tableName: 'delta_log' },
    },
    {
      name: 'archive',
      bucketName: 'lake',
      prefix: 'archive/',
      format: 'delta',
      deltaLogStore: { type: 'dynamodb', tableName: 'spark_commits', region: 'eu-west-1' },
    },
    { name: 'events', bucketName: 'lake', prefix: 'events/', format: 'delta' },
    { name: 'clicks', bucketName: 'lake', prefix: 'clicks/' },
  ],
};

/** The same tables without DynamoDB coordination. */
const UNCOORDINATED: LakeCompactorProps = {
  tables: COORDINATED.tables.map(({ deltaLogStore: _deltaLogStore, ...table }) => table),
};

function synth(props: LakeCompactorProps, id: string): { stack: LakeCompactorStack; template: Template } {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new LakeCompactorStack(app, id, { compactor: props });
  return { stack, template: Template.fromStack(stack) };
}

const list = <T>(value: T | T[]): T[] => (Array.isArray(value) ? value : [value]);

/** `role: action resource` of every Allow on a DynamoDB table that is not the state table, flattened. */
function commitTableGrants(template: Template): string[] {
  const policies = template.findResources('AWS::IAM::Policy') as Record<string, Policy>;
  return Object.values(policies)
    .flatMap((p) =>
      p.Properties.Roles.flatMap((role) =>
        p.Properties.PolicyDocument.Statement.filter((s) => s.Effect === 'Allow').flatMap((s) =>
          list(s.Action).flatMap((action) =>
            list(s.Resource)
              .map((r) => flattenCfnReference(r))
              .filter((r) => /:table\/(delta_log|spark_commits)$/.test(r))
              .map((r) => `${role.Ref.replace(/ServiceRole[A-F0-9]+$/, '')}: ${action} ${r}`),
          ),
        ),
      ),
    )
    .sort();
}

function errorsOf(report: PolicyValidationPluginReport): string[] {
  return report.violations
    .filter((v) => v.severity === 'error')
    .flatMap((v) =>
      v.violatingResources.map((r) => `${v.ruleName} @ ${r.constructPath ?? r.resourceLogicalId}`),
    );
}

describe('DynamoDB-coordinated Delta tables', () => {
  const { stack, template } = synth(COORDINATED, 'DeltaCoordinated');

  it('grants GetItem, PutItem, UpdateItem and Query on each named commit table to exactly the functions that commit or settle', () => {
    // Prepare
    const committers = [
      'CompactorWorkflowPlan',
      'CompactorWorkflowCommit',
      'CompactorWorkflowRollback',
      'CompactorWorkflowFinalize',
      'CompactorSweep',
    ];
    const tables = [
      'arn:<AWS::Partition>:dynamodb:<AWS::Region>:<AWS::AccountId>:table/delta_log',
      'arn:<AWS::Partition>:dynamodb:eu-west-1:<AWS::AccountId>:table/spark_commits',
    ];

    // Act
    const grants = commitTableGrants(template);

    // Assess
    const expected = committers.flatMap((role) =>
      DELTA_LOG_ACTIONS.flatMap((action) => tables.map((table) => `${role}: ${action} ${table}`)),
    );
    expect(grants).toEqual(expected.sort());
    expect(DELTA_LOG_ACTIONS).toEqual([
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:UpdateItem',
      'dynamodb:Query',
    ]);
  });

  it('hands the functions the setting in their table config, as they parse it', () => {
    // Act
    const parsed = parseTableConfigs(tablesJsonOf(COORDINATED.tables, 'owned'));

    // Assess
    expect(parsed.map((t) => [t.name, t.deltaLogStore])).toEqual([
      ['orders', { type: 'dynamodb', tableName: 'delta_log' }],
      ['refunds', { type: 'dynamodb', tableName: 'delta_log' }],
      ['archive', { type: 'dynamodb', tableName: 'spark_commits', region: 'eu-west-1' }],
      ['events', undefined],
      ['clicks', undefined],
    ]);
  });

  it('reports no unacknowledged cdk-nag AwsSolutions error', () => {
    // Act
    const report = new AwsSolutionsChecks().validateScope(stack);

    // Assess
    expect(errorsOf(report)).toEqual([]);
  });

  it('grants nothing on any commit table when no table coordinates through DynamoDB', () => {
    // Prepare
    const { template: plain } = synth(UNCOORDINATED, 'DeltaUncoordinated');

    // Act
    const grants = commitTableGrants(plain);
    const anyCommitTableAction = Object.values(
      plain.findResources('AWS::IAM::Policy') as Record<string, Policy>,
    ).flatMap((p) =>
      p.Properties.PolicyDocument.Statement.filter(
        (s) =>
          list(s.Action).length === DELTA_LOG_ACTIONS.length &&
          DELTA_LOG_ACTIONS.every((a) => list(s.Action).includes(a)),
      ),
    );

    // Assess
    expect(grants).toEqual([]);
    expect(anyCommitTableAction).toEqual([]);
  });
});
