// IAM of Hudi tables (`format: "hudi"`): the compact step, which writes the clustering plan before its rewrite, may
// put and delete under the tables' `.hoodie/` only (the committing steps already may under the table prefix); the
// profiler reads their timelines; a table whose `hudiLock` is DynamoDB's gets that lock table's item actions in
// exactly the functions that cluster, commit or settle; a deployment without Hudi tables gets none of it; cdk-nag
// stays clean.
import { App, type PolicyValidationPluginReport } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { flattenCfnReference } from 'cdk-nag/lib/utils/flatten-cfn-reference.js';
import { describe, expect, it } from 'vitest';
import { LakeCompactorStack } from '../../infra/app.js';
import { HUDI_DYNAMODB_LOCK_ACTIONS } from '../../infra/formats/hudi/index.js';
import type { LakeCompactorProps } from '../../infra/lake-compactor.js';

type Statement = { Effect: string; Action: string | string[]; Resource: unknown };
type Policy = { Properties: { PolicyDocument: { Statement: Statement[] }; Roles: { Ref: string }[] } };

const HUDI: LakeCompactorProps = {
  tables: [
    {
      name: 'trips',
      bucketName: 'lake',
      prefix: 'trips/',
      format: 'hudi',
      hudiLock: { provider: 'dynamodb', table: 'hudi_locks', region: 'us-east-1' },
      hudiIndexType: 'BLOOM',
    },
    { name: 'clicks', bucketName: 'lake', prefix: 'clicks/' },
  ],
};

function synth(props: LakeCompactorProps, id: string): { stack: LakeCompactorStack; template: Template } {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new LakeCompactorStack(app, id, { compactor: { tableIsolation: 'none', ...props } });
  return { stack, template: Template.fromStack(stack) };
}

const list = <T>(value: T | T[]): T[] => (Array.isArray(value) ? value : [value]);

/** `role: action resource` of every Allow whose resource matches `pattern`, flattened and sorted. */
function grantsOn(template: Template, pattern: RegExp): string[] {
  const policies = template.findResources('AWS::IAM::Policy') as Record<string, Policy>;
  return Object.values(policies)
    .flatMap((p) =>
      p.Properties.Roles.flatMap((role) =>
        p.Properties.PolicyDocument.Statement.filter((s) => s.Effect === 'Allow').flatMap((s) =>
          list(s.Action).flatMap((action) =>
            list(s.Resource)
              .map((r) => flattenCfnReference(r))
              .filter((r) => pattern.test(r))
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

describe('a deployment with a Hudi table', () => {
  const { stack, template } = synth(HUDI, 'HudiTables');

  it("lets the compact step put and delete under the table's .hoodie/ only, and the profiler read it", () => {
    // Act
    const grants = grantsOn(template, /\.hoodie\/\*$/);

    // Assess
    expect(grants).toEqual(
      [
        'CompactorWorkflowCompact: s3:PutObject arn:aws:s3:::lake/trips/.hoodie/*',
        'CompactorWorkflowCompact: s3:DeleteObject arn:aws:s3:::lake/trips/.hoodie/*',
        'CompactorProfiler: s3:GetObject arn:aws:s3:::lake/trips/.hoodie/*',
      ].sort(),
    );
  });

  it("grants the DynamoDB lock's item actions to exactly the functions that cluster, commit or settle", () => {
    // Prepare
    const roles = [
      'CompactorWorkflowCompact',
      'CompactorWorkflowPlan',
      'CompactorWorkflowCommit',
      'CompactorWorkflowRollback',
      'CompactorWorkflowFinalize',
      'CompactorSweep',
      'CompactorMaintenanceVacuum',
    ];
    const table = 'arn:<AWS::Partition>:dynamodb:us-east-1:<AWS::AccountId>:table/hudi_locks';

    // Act
    const grants = grantsOn(template, /:table\/hudi_locks$/);

    // Assess
    expect(grants).toEqual(
      roles.flatMap((role) => HUDI_DYNAMODB_LOCK_ACTIONS.map((a) => `${role}: ${a} ${table}`)).sort(),
    );
  });

  it('reports no unacknowledged cdk-nag AwsSolutions error', () => {
    // Act
    const report = new AwsSolutionsChecks().validateScope(stack);

    // Assess
    expect(errorsOf(report)).toEqual([]);
  });
});

describe('a deployment without a Hudi table', () => {
  it('grants nothing under .hoodie/ and no lock table', () => {
    // Prepare
    const { template } = synth(
      { tables: [{ name: 'clicks', bucketName: 'lake', prefix: 'clicks/' }] },
      'NoHudi',
    );

    // Act
    const grants = grantsOn(template, /\.hoodie\/|hudi_locks/);

    // Assess
    expect(grants).toEqual([]);
  });
});

describe('a deployment with a Hudi table that opts in to our cleaning', () => {
  it("lets the vacuum put and delete under that table's .hoodie/ (its clean instants), and no other table's", () => {
    // Prepare
    const props: LakeCompactorProps = {
      tables: [
        { ...(HUDI.tables[0] as object), hudiCleaner: { policy: 'KEEP_LATEST_COMMITS' } } as never,
        {
          name: 'rides',
          bucketName: 'lake',
          prefix: 'rides/',
          format: 'hudi',
          hudiLock: { provider: 'storage' },
          hudiIndexType: 'BLOOM',
        },
      ],
    };

    // Act
    const { template } = synth(props, 'HudiCleaner');
    const grants = grantsOn(template, /\.hoodie\/\*$/).filter((g) => /Vacuum/.test(g));

    // Assess
    expect(grants.map((g) => g.replace(/^[^:]+: /, ''))).toEqual(
      [
        's3:DeleteObject arn:aws:s3:::lake/trips/.hoodie/*',
        's3:PutObject arn:aws:s3:::lake/trips/.hoodie/*',
      ].sort(),
    );
  });
});
