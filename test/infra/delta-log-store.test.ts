// IAM of DynamoDB-coordinated Delta tables (`deltaLogStore: { type: "dynamodb" }`): exactly the functions that
// commit, settle or vacuum a group's table (plan, commit, rollback, finalize, sweep, vacuum) get the protocol's four
// actions on the named commit table, in its configured region; the vacuum also gets PutObject on those tables'
// `_delta_log/` (it finishes an incomplete entry before reading the log, as Spark's VACUUM does); a table declared
// s3-conditional that checks a DynamoDB table gets Query on it only; no other function gets anything, a deployment
// whose tables do not name a DynamoDB table gets no such statement at all, and cdk-nag stays clean.
import { App, type PolicyValidationPluginReport } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { flattenCfnReference } from 'cdk-nag/lib/utils/flatten-cfn-reference.js';
import { describe, expect, it } from 'vitest';
import { parseTableConfigs } from '../../functions/core/table-config.js';
import { LakeCompactorStack } from '../../infra/app.js';
import { DELTA_LOG_ACTIONS } from '../../infra/formats/delta/log-access.js';
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
      deltaLogStore: { type: 'dynamodb', tableName: 'delta_log', region: 'us-east-1' },
    },
    {
      name: 'refunds',
      bucketName: 'lake',
      prefix: 'refunds/',
      format: 'delta',
      deltaLogStore: { type: 'dynamodb', tableName: 'delta_log', region: 'us-east-1' },
    },
    {
      name: 'archive',
      bucketName: 'lake',
      prefix: 'archive/',
      format: 'delta',
      deltaLogStore: { type: 'dynamodb', tableName: 'spark_commits', region: 'eu-west-1' },
    },
    {
      name: 'events',
      bucketName: 'lake',
      prefix: 'events/',
      format: 'delta',
      deltaLogStore: {
        type: 's3-conditional',
        checkDynamoDbTable: { tableName: 'org_delta_log', region: 'us-west-2' },
      },
    },
    { name: 'clicks', bucketName: 'lake', prefix: 'clicks/' },
  ],
};

/** The same tables, every Delta one declared put-if-absent without a DynamoDB table to check. */
const UNCOORDINATED: LakeCompactorProps = {
  tables: COORDINATED.tables.map(({ deltaLogStore, ...table }) =>
    deltaLogStore === undefined ? table : { ...table, deltaLogStore: { type: 's3-conditional' } },
  ),
};

// The per-step grants as each function's own role holds them (`tableIsolation: "none"`): with the default isolation
// they move, unchanged, to per-function data-access roles (test/infra/table-isolation.test.ts proves the move).
function synth(props: LakeCompactorProps, id: string): { stack: LakeCompactorStack; template: Template } {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new LakeCompactorStack(app, id, { compactor: { tableIsolation: 'none', ...props } });
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
              .filter((r) => /:table\/(delta_log|spark_commits|org_delta_log)$/.test(r))
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

  it('grants GetItem, PutItem, UpdateItem and Query on each commit table to exactly the functions that commit, settle or vacuum, and Query alone on a checked table', () => {
    // Prepare
    const committers = [
      'CompactorWorkflowPlan',
      'CompactorWorkflowCommit',
      'CompactorWorkflowRollback',
      'CompactorWorkflowFinalize',
      'CompactorSweep',
      'CompactorMaintenanceVacuum',
    ];
    const tables = [
      'arn:<AWS::Partition>:dynamodb:us-east-1:<AWS::AccountId>:table/delta_log',
      'arn:<AWS::Partition>:dynamodb:eu-west-1:<AWS::AccountId>:table/spark_commits',
    ];
    const checked = 'arn:<AWS::Partition>:dynamodb:us-west-2:<AWS::AccountId>:table/org_delta_log';

    // Act
    const grants = commitTableGrants(template);

    // Assess
    const expected = committers.flatMap((role) => [
      ...DELTA_LOG_ACTIONS.flatMap((action) => tables.map((table) => `${role}: ${action} ${table}`)),
      `${role}: dynamodb:Query ${checked}`,
    ]);
    expect(grants).toEqual(expected.sort());
    expect(DELTA_LOG_ACTIONS).toEqual([
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:UpdateItem',
      'dynamodb:Query',
    ]);
  });

  it('lets the vacuum put only into the logs of the DynamoDB-coordinated tables (to finish an incomplete entry)', () => {
    // Act
    const policies = template.findResources('AWS::IAM::Policy') as Record<string, Policy>;
    const logPuts = Object.values(policies).flatMap((p) =>
      p.Properties.PolicyDocument.Statement.filter(
        (s) =>
          list(s.Action).includes('s3:PutObject') &&
          list(s.Resource).some((r) => flattenCfnReference(r).includes('_delta_log')),
      ).map((s) => ({
        roles: p.Properties.Roles.map((r) => r.Ref.replace(/ServiceRole[A-F0-9]+$/, '')),
        resources: list(s.Resource)
          .map((r) => flattenCfnReference(r))
          .sort(),
      })),
    );

    // Assess
    expect(logPuts).toEqual([
      {
        roles: ['CompactorMaintenanceVacuum'],
        resources: [
          'arn:aws:s3:::lake/archive/_delta_log/*',
          'arn:aws:s3:::lake/orders/_delta_log/*',
          'arn:aws:s3:::lake/refunds/_delta_log/*',
        ],
      },
    ]);
  });

  it('hands the functions the setting in their table config, as they parse it', () => {
    // Act
    const parsed = parseTableConfigs(tablesJsonOf(COORDINATED.tables, 'owned'));

    // Assess
    expect(parsed.map((t) => [t.name, t.deltaLogStore])).toEqual([
      ['orders', { type: 'dynamodb', tableName: 'delta_log', region: 'us-east-1' }],
      ['refunds', { type: 'dynamodb', tableName: 'delta_log', region: 'us-east-1' }],
      ['archive', { type: 'dynamodb', tableName: 'spark_commits', region: 'eu-west-1' }],
      [
        'events',
        { type: 's3-conditional', checkDynamoDbTable: { tableName: 'org_delta_log', region: 'us-west-2' } },
      ],
      ['clicks', undefined],
    ]);
  });

  it('reports no unacknowledged cdk-nag AwsSolutions error', () => {
    // Act
    const report = new AwsSolutionsChecks().validateScope(stack);

    // Assess
    expect(errorsOf(report)).toEqual([]);
  });

  it('grants nothing on any commit table when no table names a DynamoDB table', () => {
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
