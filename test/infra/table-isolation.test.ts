// Per-table isolation in the template (`tableIsolation: "session-policy"`): each function that reaches table data
// gets a data-access role of its own, trusted for that function's role alone, holding exactly the table-data grants
// the function held without isolation; the function's role keeps none of them, may assume that one role, and the
// function is told its ARN. Compared against the same props synthesized without isolation, so a grant added
// anywhere later is checked too.
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { flattenCfnReference } from 'cdk-nag/lib/utils/flatten-cfn-reference.js';
import { describe, expect, it } from 'vitest';
import { LakeCompactorStack } from '../../infra/app.js';
import type { LakeCompactorProps } from '../../infra/lake-compactor.js';
import { lakeCompactorPropsProblems } from '../../infra/props-schema.js';
import { splitTableDataStatements } from '../../infra/table-isolation.js';

type Statement = {
  Effect: string;
  Action: string | string[];
  Resource?: unknown;
  Principal?: unknown;
  Condition?: unknown;
};
type Resource = { Type: string; Properties: Record<string, unknown> };

const KEY = 'arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab';
const TABLE_BUCKET = 'arn:aws:s3tables:eu-west-1:111122223333:bucket/warehouse';

/** Parquet in an imported bucket with a KMS key, Delta (the profiler reads its log), Iceberg on S3 Tables. */
const TABLES: LakeCompactorProps['tables'] = [
  { name: 'events', bucketName: 'lake', prefix: 'events/', partitionColumns: ['date'], kmsKeyArn: KEY },
  {
    name: 'orders',
    bucketName: 'lake',
    prefix: 'sales/orders',
    format: 'delta',
    deltaLogStore: { type: 's3-conditional' },
  },
  {
    name: 'clicks',
    bucketName: 'tables-data',
    prefix: 'clicks',
    format: 'iceberg',
    catalog: {
      type: 'rest',
      uri: 'https://s3tables.eu-west-1.amazonaws.com/iceberg',
      warehouse: TABLE_BUCKET,
      namespace: 'web',
      table: 'clicks',
      auth: { type: 'sigv4', signingName: 's3tables', region: 'eu-west-1' },
    },
  },
];

function synth(props: LakeCompactorProps, id: string): { stack: LakeCompactorStack; template: Template } {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new LakeCompactorStack(app, id, { compactor: props });
  return { stack, template: Template.fromStack(stack) };
}

const list = <T>(value: T | T[] | undefined): T[] =>
  value === undefined ? [] : Array.isArray(value) ? value : [value];

/** Logical id of each Lambda function of the construct → its role's logical id and its environment. */
function functionsOf(template: Template): Map<string, { role: string; env: Record<string, unknown> }> {
  const functions = template.findResources('AWS::Lambda::Function') as Record<string, Resource>;
  const out = new Map<string, { role: string; env: Record<string, unknown> }>();
  for (const [id, fn] of Object.entries(functions)) {
    if (!id.startsWith('Compactor')) continue; // CDK's bucket-notifications handler
    const role = (fn.Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
    const env = (fn.Properties.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables;
    out.set(id, { role, env: env ?? {} });
  }
  return out;
}

/** Allow statements of every AWS::IAM::Policy attached to `roleId`. */
function statementsOf(template: Template, roleId: string): Statement[] {
  const policies = template.findResources('AWS::IAM::Policy') as Record<string, Resource>;
  return Object.values(policies)
    .filter((p) => (p.Properties.Roles as { Ref: string }[]).some((r) => r.Ref === roleId))
    .flatMap((p) => (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement)
    .filter((s) => s.Effect === 'Allow');
}

/** `action resource [condition]` triples of the table-data statements (S3, KMS through S3, S3 Tables data). */
function tableDataGrants(statements: Statement[]): string[] {
  return statements
    .filter((s) =>
      list(s.Action).some(
        (a) =>
          a.startsWith('s3:') ||
          a === 's3tables:GetTableData' ||
          a === 's3tables:PutTableData' ||
          (a.startsWith('kms:') && JSON.stringify(s.Condition ?? {}).includes('kms:ViaService')),
      ),
    )
    .flatMap((s) =>
      list(s.Action)
        .filter((a) => a.startsWith('s3:') || a.startsWith('kms:') || a.endsWith('TableData'))
        .flatMap((a) =>
          list(s.Resource).map(
            (r) => `${a} ${flattenCfnReference(r)} ${JSON.stringify(s.Condition ?? null)}`,
          ),
        ),
    )
    .sort();
}

/** The logical id of the role `DATA_ACCESS_ROLE_ARN` names, if the variable is set. */
function dataRoleOf(env: Record<string, unknown>): string | undefined {
  const value = env.DATA_ACCESS_ROLE_ARN as { 'Fn::GetAtt'?: [string, string] } | undefined;
  return value?.['Fn::GetAtt']?.[0];
}

describe('tableIsolation: "session-policy"', () => {
  const plain = synth({ tables: TABLES, tableIsolation: 'none' }, 'Plain');
  const isolated = synth({ tables: TABLES, tableIsolation: 'session-policy' }, 'Isolated');
  const plainFunctions = functionsOf(plain.template);
  const isolatedFunctions = functionsOf(isolated.template);

  it('sets DATA_ACCESS_ROLE_ARN on exactly the functions whose role holds table-data grants without isolation', () => {
    // Prepare
    const serving = [...plainFunctions]
      .filter(([, f]) => tableDataGrants(statementsOf(plain.template, f.role)).length > 0)
      .map(([id]) => id)
      .sort();
    // Act
    const told = [...isolatedFunctions]
      .filter(([, f]) => f.env.DATA_ACCESS_ROLE_ARN !== undefined)
      .map(([id]) => id)
      .sort();
    // Assess: every table-touching function, the lease (which touches no object) not
    expect(told).toEqual(serving);
    expect(told.some((id) => id.startsWith('CompactorWorkflowCommit'))).toBe(true);
    expect(told.some((id) => id.startsWith('CompactorProfiler'))).toBe(true);
    expect(told.some((id) => id.startsWith('CompactorWorkflowLease'))).toBe(false);
  });

  it("gives each serving function its own data-access role, assumable by that function's role alone", () => {
    // Prepare
    const roles = isolated.template.findResources('AWS::IAM::Role') as Record<string, Resource>;
    const serving = [...isolatedFunctions].filter(([, f]) => dataRoleOf(f.env) !== undefined);
    // Act
    const trusts = serving.map(([, f]) => {
      const dataRole = roles[dataRoleOf(f.env) as string];
      return {
        functionRole: f.role,
        trust: (dataRole?.Properties.AssumeRolePolicyDocument as { Statement?: Statement[] } | undefined)
          ?.Statement,
      };
    });
    // Assess: one statement, AssumeRole only (no TagSession), the one function role by its ARN
    expect(new Set(serving.map(([, f]) => dataRoleOf(f.env))).size).toBe(serving.length);
    for (const { functionRole, trust } of trusts) {
      expect(trust).toEqual([
        {
          Action: 'sts:AssumeRole',
          Effect: 'Allow',
          Principal: { AWS: { 'Fn::GetAtt': [functionRole, 'Arn'] } },
        },
      ]);
    }
  });

  it('moves every table-data grant of a function to its data-access role, unchanged, and leaves none behind', () => {
    // Prepare
    const byName = (fns: typeof plainFunctions, id: string) => {
      const stem = id.replace(/[A-F0-9]{8}$/, '');
      return [...fns].find(([other]) => other.replace(/[A-F0-9]{8}$/, '') === stem)?.[1];
    };
    // Act
    const compared = [...isolatedFunctions]
      .filter(([, f]) => dataRoleOf(f.env) !== undefined)
      .map(([id, f]) => ({
        id,
        before: tableDataGrants(statementsOf(plain.template, byName(plainFunctions, id)?.role ?? '')),
        onDataRole: tableDataGrants(statementsOf(isolated.template, dataRoleOf(f.env) as string)),
        left: tableDataGrants(statementsOf(isolated.template, f.role)).filter(
          (g) => !g.startsWith('s3tables:'),
        ),
      }));
    // Assess
    expect(compared.length).toBeGreaterThan(5);
    for (const { id, before, onDataRole, left } of compared) {
      expect({ id, grants: onDataRole }).toEqual({ id, grants: before });
      expect({ id, left }).toEqual({ id, left: [] });
    }
  });

  it('keeps every other grant on the function roles, adds each one AssumeRole on its own data-access role only', () => {
    // Prepare
    const other = (statements: Statement[]) =>
      statements
        .flatMap((s) =>
          list(s.Action)
            .filter((a) => !a.startsWith('s3:') && !a.startsWith('kms:') && a !== 'sts:AssumeRole')
            .map((a) => `${a} ${JSON.stringify(s.Resource)} ${JSON.stringify(s.Condition ?? null)}`),
        )
        .sort();
    const commit = (fns: typeof plainFunctions) =>
      [...fns].find(([id]) => id.startsWith('CompactorWorkflowCommit'))?.[1];
    const before = commit(plainFunctions);
    const after = commit(isolatedFunctions);
    // Act
    const statements = statementsOf(isolated.template, after?.role ?? '');
    const assumes = statements.filter((s) => list(s.Action).includes('sts:AssumeRole'));
    // Assess: DynamoDB, S3 Tables catalog and the rest as before; STS on the one role, never TagSession
    expect(other(statements)).toEqual(other(statementsOf(plain.template, before?.role ?? '')));
    expect(other(statements)).toContain(
      `s3tables:GetTableData "${TABLE_BUCKET}/table/*" {"StringEquals":{"s3tables:namespace":"web","s3tables:tableName":"clicks"}}`,
    );
    expect(assumes).toEqual([
      {
        Action: 'sts:AssumeRole',
        Effect: 'Allow',
        Resource: { 'Fn::GetAtt': [dataRoleOf(after?.env ?? {}), 'Arn'] },
      },
    ]);
    expect(statements.flatMap((s) => list(s.Action)).filter((a) => a.startsWith('sts:'))).toEqual([
      'sts:AssumeRole',
    ]);
  });

  it("keeps the state machine's own read of the plans beside the tables (its Distributed Map)", () => {
    // Prepare
    const machineRole = (template: Template) =>
      Object.keys(template.findResources('AWS::IAM::Role')).find((id) =>
        id.startsWith('CompactorWorkflowStateMachineRole'),
      ) ?? '';
    // Act
    const before = tableDataGrants(statementsOf(plain.template, machineRole(plain.template)));
    const after = tableDataGrants(statementsOf(isolated.template, machineRole(isolated.template)));
    // Assess
    expect(after).toEqual(before);
    expect(after.some((g) => g.startsWith('s3:GetObject') && g.includes('/_lake-compactor/plans/*'))).toBe(
      true,
    );
  });

  it('passes the AwsSolutions checks: the data-access roles carry only the acknowledged prefix wildcards', () => {
    // Prepare / Act
    const report = new AwsSolutionsChecks().validateScope(isolated.stack);
    // Assess
    const errors = report.violations
      .filter((v) => v.severity === 'error')
      .flatMap((v) => v.violatingResources.map((r) => `${v.ruleName} @ ${r.resourceLogicalId}`));
    expect(errors).toEqual([]);
  });
});

describe('tableIsolation default and validation', () => {
  it('isolates by default: the same template as asking for "session-policy"', () => {
    // Prepare
    // (Assets are not bundled here, so their keys differ between two syntheses of the same stack.)
    const withoutAssetKeys = (template: Template) =>
      JSON.stringify(template.toJSON()).replace(/"S3Key":"[0-9a-f]{64}\.zip"/g, '"S3Key":"<asset>"');
    const asked = withoutAssetKeys(
      synth({ tables: TABLES, tableIsolation: 'session-policy' }, 'Same').template,
    );
    // Act
    const byDefault = withoutAssetKeys(synth({ tables: TABLES }, 'Same').template);
    // Assess
    expect(byDefault).toMatch(/DataAccess/);
    expect(byDefault).toEqual(asked);
  });

  it('with "none", creates no data-access role and sets no DATA_ACCESS_ROLE_ARN', () => {
    // Prepare / Act
    const { template } = synth({ tables: TABLES, tableIsolation: 'none' }, 'Default');
    // Assess
    const roles = Object.keys(template.findResources('AWS::IAM::Role'));
    expect(roles.filter((id) => id.includes('DataAccess'))).toEqual([]);
    expect([...functionsOf(template).values()].filter((f) => dataRoleOf(f.env) !== undefined)).toEqual([]);
  });

  it('refuses at synth a table whose session policy STS would refuse, naming it; "none" synthesizes it', () => {
    // Prepare: a prefix long enough that the policy (which names it twice) passes 2,048 characters
    const long = [{ name: 'deep', bucketName: 'lake', prefix: `${'p'.repeat(60)}/`.repeat(12) }, ...TABLES];
    // Act
    const refused = () => synth({ tables: long }, 'Long');
    const unisolated = () => synth({ tables: long, tableIsolation: 'none' }, 'LongNone');
    // Assess
    expect(refused).toThrow(/table "deep" cannot be isolated .*STS takes at most 2048/s);
    expect(refused).not.toThrow(/table "events"/);
    expect(unisolated).not.toThrow();
  });

  it('refuses an unknown mode, naming the ones there are', () => {
    // Prepare / Act
    const problems = lakeCompactorPropsProblems({ tables: TABLES, tableIsolation: 'per-table' as never });
    // Assess
    expect(problems.join('\n')).toMatch(/tableIsolation.*"session-policy".*"none"/s);
  });
});

describe('splitTableDataStatements', () => {
  it('splits a statement mixing S3 Tables data with catalog actions, and keeps deny statements', () => {
    // Prepare
    const statements = [
      {
        Effect: 'Allow',
        Action: ['s3tables:GetTable', 's3tables:GetTableData'],
        Resource: 'arn:t',
        Condition: { StringEquals: { 's3tables:tableName': 'clicks' } },
      },
      { Effect: 'Deny', Action: 's3:DeleteObject', Resource: '*' },
      { Effect: 'Allow', Action: ['dynamodb:GetItem', 's3:GetObject'], Resource: 'arn:x' },
    ];
    // Act
    const { kept, moved } = splitTableDataStatements(statements);
    // Assess
    expect(moved).toEqual([
      {
        Effect: 'Allow',
        Action: 's3tables:GetTableData',
        Resource: 'arn:t',
        Condition: { StringEquals: { 's3tables:tableName': 'clicks' } },
      },
      { Effect: 'Allow', Action: 's3:GetObject', Resource: 'arn:x' },
    ]);
    expect(kept).toEqual([
      statements[0],
      statements[1],
      { Effect: 'Allow', Action: 'dynamodb:GetItem', Resource: 'arn:x' },
    ]);
  });
});
