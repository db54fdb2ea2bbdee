// IAM assertions on the compaction workflow's S3 grants: each step gets only the actions it uses, on the
// table prefixes and `_lake-compactor/` folders it touches; whole-bucket `/*` only for a bucket-root table.
import { App, type PolicyValidationPluginReport } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as iam from 'aws-cdk-lib/aws-iam';
import { AwsSolutionsChecks } from 'cdk-nag';
import { flattenCfnReference } from 'cdk-nag/lib/utils/flatten-cfn-reference.js';
import { describe, expect, it } from 'vitest';
import { LakeCompactorStack } from '../../infra/app.js';
import type { LakeCompactorProps } from '../../infra/lake-compactor.js';

type Statement = { Effect: string; Action: string | string[]; Resource: unknown; Condition?: unknown };
type Policy = { Properties: { PolicyDocument: { Statement: Statement[] }; Roles: { Ref: string }[] } };

/** An imported bucket with two tables, and a table in the construct's own bucket; none at a bucket root. */
const PREFIXED: LakeCompactorProps = {
  tables: [
    { name: 'events', bucketName: 'lake', prefix: 'events/', partitionColumns: ['date'] },
    { name: 'orders', bucketName: 'lake', prefix: 'sales/orders' },
    { name: 'clicks', prefix: 'clicks/' },
  ],
};

const STEPS = ['Validate', 'Lease', 'Plan', 'Compact', 'Verify', 'Commit', 'Rollback', 'Finalize'] as const;

// The per-step grants as each function's own role holds them (`tableIsolation: "none"`): with the default isolation
// they move, unchanged, to per-function data-access roles (test/infra/table-isolation.test.ts proves the move).
function synth(props: LakeCompactorProps, id: string): { stack: LakeCompactorStack; template: Template } {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new LakeCompactorStack(app, id, { compactor: { tableIsolation: 'none', ...props } });
  return { stack, template: Template.fromStack(stack) };
}

/** Allow statements of every policy attached to the role whose logical id starts with `rolePrefix`. */
function statementsOf(template: Template, rolePrefix: string): Statement[] {
  const policies = template.findResources('AWS::IAM::Policy') as Record<string, Policy>;
  return Object.values(policies)
    .filter((p) => p.Properties.Roles.some((r) => r.Ref.startsWith(rolePrefix)))
    .flatMap((p) => p.Properties.PolicyDocument.Statement)
    .filter((s) => s.Effect === 'Allow');
}

const list = <T>(value: T | T[]): T[] => (Array.isArray(value) ? value : [value]);

/** `action resource` pairs of the S3 statements, resources flattened as cdk-nag prints them. */
function s3Grants(statements: Statement[]): string[] {
  return statements
    .filter((s) => list(s.Action).some((a) => a.startsWith('s3:')))
    .flatMap((s) =>
      list(s.Action).flatMap((a) => list(s.Resource).map((r) => `${a} ${flattenCfnReference(r)}`)),
    )
    .sort();
}

function s3Actions(statements: Statement[]): Set<string> {
  return new Set(s3Grants(statements).map((g) => g.split(' ')[0] ?? ''));
}

function errorsOf(report: PolicyValidationPluginReport): string[] {
  return report.violations
    .filter((v) => v.severity === 'error')
    .flatMap((v) =>
      v.violatingResources.map((r) => `${v.ruleName} @ ${r.constructPath ?? r.resourceLogicalId}`),
    );
}

describe('compaction workflow S3 grants without a bucket-root table', () => {
  const { template } = synth(PREFIXED, 'Prefixed');
  const role = (step: string) => `CompactorWorkflow${step}ServiceRole`;
  const bucket = /^CompactorDataBucket[A-F0-9]+$/;
  const owned = Object.keys(template.findResources('AWS::S3::Bucket')).find((id) => bucket.test(id));

  it('grants no workflow step and not the state machine any object on a whole-bucket `/*` resource', () => {
    // Prepare
    const roles = [...STEPS.map(role), 'CompactorWorkflowStateMachineRole'];
    // Act
    const wholeBucket = roles.flatMap((r) =>
      s3Grants(statementsOf(template, r)).filter((g) => /^s3:\w+ arn:aws:s3:::[^/]+\/\*$/.test(g)),
    );
    // Assess
    expect(owned).toBeDefined();
    expect(s3Grants(statementsOf(template, role('Commit')))).toContain(
      `s3:DeleteObject arn:aws:s3:::<${owned}>/clicks/*`,
    );
    expect(wholeBucket).toEqual([]);
  });

  it('gives validate and lease no S3 access at all', () => {
    // Prepare / Act
    const validate = s3Actions(statementsOf(template, role('Validate')));
    const lease = s3Actions(statementsOf(template, role('Lease')));
    // Assess
    expect([...validate, ...lease]).toEqual([]);
  });

  it('lets plan settle earlier runs exactly as commit may, plus read and write its plans and write dry-run previews', () => {
    // Prepare / Act: plan settles the partition's unsettled groups before planning (fence rule)
    const plan = s3Grants(statementsOf(template, role('Plan')));
    const commit = s3Grants(statementsOf(template, role('Commit')));
    const own = (g: string) =>
      g.includes('/_lake-compactor/plans/') || g.includes('/_lake-compactor/previews/');
    // Assess
    expect(plan.filter((g) => !own(g))).toEqual(commit);
    expect(plan.filter(own)).toEqual([
      `s3:GetObject arn:aws:s3:::<${owned}>/_lake-compactor/plans/*`,
      's3:GetObject arn:aws:s3:::lake/_lake-compactor/plans/*',
      `s3:PutObject arn:aws:s3:::<${owned}>/_lake-compactor/plans/*`,
      `s3:PutObject arn:aws:s3:::<${owned}>/_lake-compactor/previews/*`,
      's3:PutObject arn:aws:s3:::lake/_lake-compactor/plans/*',
      's3:PutObject arn:aws:s3:::lake/_lake-compactor/previews/*',
    ]);
    expect(s3Actions(statementsOf(template, role('Plan')))).toEqual(
      new Set([
        's3:GetObject',
        's3:GetObjectVersion',
        's3:PutObject',
        's3:DeleteObject',
        's3:AbortMultipartUpload',
        's3:ListBucket',
        's3:GetBucketVersioning',
      ]),
    );
  });

  it('lets compact write and abort uploads only under staging, and delete nothing in the tables', () => {
    // Prepare / Act
    const grants = s3Grants(statementsOf(template, role('Compact')));
    // Assess
    for (const action of ['s3:DeleteObject', 's3:AbortMultipartUpload']) {
      expect(grants.filter((g) => g.startsWith(`${action} `))).toEqual([
        `${action} arn:aws:s3:::<${owned}>/_lake-compactor/staging/*`,
        `${action} arn:aws:s3:::lake/_lake-compactor/staging/*`,
      ]);
    }
    expect(grants.filter((g) => g.startsWith('s3:PutObject ') && !g.includes('/_lake-compactor/'))).toEqual(
      [],
    );
    expect(s3Actions(statementsOf(template, role('Compact')))).not.toContain('s3:GetObjectVersion');
  });

  it('lets verify only read staging (and its journal lists), never a table object', () => {
    // Prepare / Act
    const grants = s3Grants(statementsOf(template, role('Verify')));
    // Assess
    expect(s3Actions(statementsOf(template, role('Verify')))).toEqual(
      new Set(['s3:GetObject', 's3:PutObject', 's3:ListBucket']),
    );
    expect(grants.filter((g) => g.startsWith('s3:GetObject ') && !g.includes('/_lake-compactor/'))).toEqual(
      [],
    );
    expect(grants.filter((g) => g.startsWith('s3:PutObject '))).toEqual([
      `s3:PutObject arn:aws:s3:::<${owned}>/_lake-compactor/journal/*`,
      's3:PutObject arn:aws:s3:::lake/_lake-compactor/journal/*',
    ]);
  });

  it('lets commit, rollback and finalize restore inputs by version and abort uploads only under trash, but none lists or deletes versions', () => {
    // Prepare / Act
    const publishers = ['Commit', 'Rollback', 'Finalize'].map((s) => statementsOf(template, role(s)));
    const all = STEPS.flatMap((s) => [...s3Actions(statementsOf(template, role(s)))]);
    // Assess
    for (const statements of publishers) {
      expect(s3Grants(statements).filter((g) => g.startsWith('s3:GetObjectVersion '))).toEqual([
        `s3:GetObjectVersion arn:aws:s3:::<${owned}>/clicks/*`,
        's3:GetObjectVersion arn:aws:s3:::lake/events/*',
        's3:GetObjectVersion arn:aws:s3:::lake/sales/orders/*',
      ]);
      // A delete-rebuild undo writes re-created inputs to trash keys (in parts above 8 MiB).
      expect(s3Grants(statements).filter((g) => g.startsWith('s3:AbortMultipartUpload '))).toEqual([
        `s3:AbortMultipartUpload arn:aws:s3:::<${owned}>/_lake-compactor/trash/*`,
        's3:AbortMultipartUpload arn:aws:s3:::lake/_lake-compactor/trash/*',
      ]);
    }
    for (const never of ['s3:ListBucketVersions', 's3:DeleteObjectVersion', 's3:*']) {
      expect(all).not.toContain(never);
    }
  });

  it('lets every object-touching step list its buckets, unconditioned, so a missing key answers 404', () => {
    // Prepare
    const lists = (step: string) =>
      statementsOf(template, role(step)).filter((s) => list(s.Action).includes('s3:ListBucket'));
    // Act
    const objectSteps = STEPS.filter((s) => s !== 'Validate' && s !== 'Lease');
    // Assess: the commit protocol treats a missing staged output or retired input as a state, which it can
    // only see as 404 — S3 answers 403 without ListBucket, and an s3:prefix condition is not known to apply
    for (const step of objectSteps) {
      const statements = lists(step);
      expect(statements, step).toHaveLength(1);
      expect(statements[0]?.Condition, step).toBeUndefined();
      expect(list(statements[0]?.Action), step).toEqual(['s3:ListBucket']);
    }
    expect(lists('Validate')).toEqual([]);
    expect(lists('Lease')).toEqual([]);
  });

  it('lets the Distributed Map read only the plans folder', () => {
    // Prepare / Act
    const grants = s3Grants(statementsOf(template, 'CompactorWorkflowStateMachineRole'));
    // Assess
    expect(grants).toEqual([
      `s3:GetObject arn:aws:s3:::<${owned}>/_lake-compactor/plans/*`,
      's3:GetObject arn:aws:s3:::lake/_lake-compactor/plans/*',
    ]);
  });
});

describe('compaction workflow S3 grants with a bucket-root table', () => {
  const props: LakeCompactorProps = {
    tables: [
      { name: 'root', bucketName: 'root-lake', prefix: '', partitionColumns: ['date'] },
      { name: 'events', bucketName: 'lake', prefix: 'events/' },
    ],
  };
  const { stack, template } = synth(props, 'Root');

  it('grants whole-bucket objects in the root table’s bucket only, the other bucket its prefixes', () => {
    // Prepare / Act
    const commit = statementsOf(template, 'CompactorWorkflowCommitServiceRole');
    // Assess
    expect(s3Grants(commit)).toContain('s3:DeleteObject arn:aws:s3:::root-lake/*');
    expect(s3Grants(commit).filter((g) => g.endsWith(' arn:aws:s3:::lake/*'))).toEqual([]);
    expect(s3Grants(commit).some((g) => g.startsWith('s3:DeleteObject arn:aws:s3:::lake/'))).toBe(true);
  });

  it('acknowledges whole-bucket access for the root table’s bucket only, so cdk-nag stays clean', () => {
    // Prepare / Act
    const report = new AwsSolutionsChecks().validateScope(stack);
    // Assess
    expect(errorsOf(report)).toEqual([]);
  });

  it('acknowledges whole-bucket access to the owned bucket when its table sits at the root', () => {
    // Prepare
    const { stack: owned, template: ownedTemplate } = synth(
      { tables: [{ name: 'root', prefix: '', partitionColumns: ['date'] }] },
      'OwnedRoot',
    );
    const bucketId = Object.keys(ownedTemplate.findResources('AWS::S3::Bucket'))[0];
    // Act
    const report = new AwsSolutionsChecks().validateScope(owned);
    // Assess
    expect(s3Grants(statementsOf(ownedTemplate, 'CompactorWorkflowCommitServiceRole'))).toContain(
      `s3:DeleteObject arn:aws:s3:::<${bucketId}>/*`,
    );
    expect(errorsOf(report)).toEqual([]);
  });

  it('still reports a whole-bucket grant on a bucket without a root table', () => {
    // Prepare
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const widened = new LakeCompactorStack(app, 'Widened', {
      compactor: { tableIsolation: 'none', ...props },
    });
    widened.compactor.workflow.functions.plan?.addToRolePolicy(
      new iam.PolicyStatement({ actions: ['s3:GetObject'], resources: ['arn:aws:s3:::lake/*'] }),
    );
    Template.fromStack(widened); // synthesis runs the aspects that record the acknowledgements
    // Act
    const report = new AwsSolutionsChecks().validateScope(widened);
    // Assess
    expect(errorsOf(report)).toEqual([
      'AwsSolutions-IAM5[Resource::arn:aws:s3:::lake/*] @ Widened/Compactor/Workflow/Plan/ServiceRole/DefaultPolicy/Resource',
    ]);
  });
});

describe('SSE-KMS keys of tables in existing buckets', () => {
  const KEY_A = 'arn:aws:kms:eu-west-1:111122223333:key/1a2b3c4d-0000-1111-2222-333344445555';
  const KEY_B = 'arn:aws:kms:eu-west-1:444455556666:key/9f8e7d6c-0000-1111-2222-333344445555';
  const kmsGrants = (template: Template, rolePrefix: string) =>
    statementsOf(template, rolePrefix)
      .filter((s) => list(s.Action).some((a) => a.startsWith('kms:')))
      .map((s) => [s.Action, list(s.Resource).map((r) => flattenCfnReference(r))]);

  it('lets every object-touching role use the table keys once, and the state machine decrypt with them', () => {
    // Prepare: two tables on one key, a third on another account's key, a fourth without one.
    const props: LakeCompactorProps = {
      tables: [
        { name: 'events', bucketName: 'lake', prefix: 'events/', kmsKeyArn: KEY_A },
        { name: 'orders', bucketName: 'lake', prefix: 'orders/', kmsKeyArn: KEY_A },
        { name: 'shared', bucketName: 'partner-lake', prefix: 'shared/', kmsKeyArn: KEY_B },
        { name: 'plain', bucketName: 'other', prefix: 'plain/' },
      ],
    };
    // Act
    const { stack, template } = synth(props, 'TableKeys');
    // Assess
    const both = [
      [
        ['kms:Decrypt', 'kms:GenerateDataKey'],
        [KEY_A, KEY_B],
      ],
    ];
    for (const role of [
      'CompactorWorkflowPlanServiceRole',
      'CompactorWorkflowCompactServiceRole',
      'CompactorWorkflowCommitServiceRole',
      'CompactorMaintenanceVacuumServiceRole',
      'CompactorMaintenanceTieringServiceRole',
      'CompactorSweepServiceRole',
    ]) {
      expect(kmsGrants(template, role), role).toEqual(both);
    }
    expect(kmsGrants(template, 'CompactorWorkflowStateMachineRole')).toEqual([
      ['kms:Decrypt', [KEY_A, KEY_B]],
    ]);
    // Roles that touch no object get no key.
    expect(kmsGrants(template, 'CompactorWorkflowLeaseServiceRole')).toEqual([]);
    expect(kmsGrants(template, 'CompactorProfilerServiceRole')).toEqual([]);
    expect(errorsOf(new AwsSolutionsChecks().validateScope(stack))).toEqual([]);
  });

  it('lets a role use a key only through S3 and only for objects it may touch, or their bucket (Bucket Key)', () => {
    // Prepare
    const props: LakeCompactorProps = {
      tables: [
        { name: 'events', bucketName: 'lake', prefix: 'events/', kmsKeyArn: KEY_A },
        { name: 'shared', bucketName: 'partner-lake', prefix: 'shared/', kmsKeyArn: KEY_B },
      ],
    };
    // Act
    const { template } = synth(props, 'KeyConditions');
    const conditionsOf = (role: string) =>
      statementsOf(template, role)
        .filter((s) => list(s.Action).some((a) => a.startsWith('kms:')))
        .map((s) =>
          JSON.parse(JSON.stringify(s.Condition).replace(/\{"Ref":"AWS::Region"\}/g, '"<region>"')),
        );
    const via = (contexts: string[]) => ({
      StringEquals: { 'kms:ViaService': { 'Fn::Join': ['', ['s3.', '<region>', '.amazonaws.com']] } },
      StringLike: { 'kms:EncryptionContext:aws:s3:arn': contexts },
    });
    // Assess: the Bucket Key case (the context is the bucket ARN) and each object ARN the role's S3 grants name
    expect(conditionsOf('CompactorWorkflowVerifyServiceRole')).toEqual([
      via([
        'arn:aws:s3:::lake',
        'arn:aws:s3:::partner-lake',
        'arn:aws:s3:::lake/_lake-compactor/staging/*',
        'arn:aws:s3:::partner-lake/_lake-compactor/staging/*',
        'arn:aws:s3:::lake/_lake-compactor/journal/*',
        'arn:aws:s3:::partner-lake/_lake-compactor/journal/*',
      ]),
    ]);
    expect(conditionsOf('CompactorWorkflowStateMachineRole')).toEqual([
      via([
        'arn:aws:s3:::lake',
        'arn:aws:s3:::partner-lake',
        'arn:aws:s3:::lake/_lake-compactor/plans/*',
        'arn:aws:s3:::partner-lake/_lake-compactor/plans/*',
      ]),
    ]);
    const commit = conditionsOf('CompactorWorkflowCommitServiceRole');
    expect(commit).toHaveLength(1);
    expect(commit[0].StringLike['kms:EncryptionContext:aws:s3:arn']).toEqual(
      expect.arrayContaining(['arn:aws:s3:::lake/events/*', 'arn:aws:s3:::partner-lake/shared/*']),
    );
    const policies = template.findResources('AWS::IAM::Policy') as Record<string, Policy>;
    const unconditioned = Object.values(policies)
      .flatMap((p) => p.Properties.PolicyDocument.Statement)
      .filter((s) => list(s.Action).some((a) => a.startsWith('kms:')) && s.Condition === undefined);
    expect(unconditioned).toEqual([]);
  });

  it('grants no KMS access when no table names a key', () => {
    // Prepare / Act
    const { template } = synth(PREFIXED, 'NoKeys');
    // Assess
    const policies = JSON.stringify(template.findResources('AWS::IAM::Policy'));
    expect(policies).not.toContain('kms:');
  });

  it('refuses an alias, a malformed ARN, and a key on a table in the owned bucket, naming each fix', () => {
    // Prepare
    const props: LakeCompactorProps = {
      tables: [
        {
          name: 'aliased',
          bucketName: 'lake',
          prefix: 'a/',
          kmsKeyArn: 'arn:aws:kms:eu-west-1:111122223333:alias/lake',
        },
        { name: 'typo', bucketName: 'lake', prefix: 'b/', kmsKeyArn: '1a2b3c4d-0000-1111-2222-333344445555' },
        { name: 'owned', prefix: 'c/', kmsKeyArn: KEY_A },
      ],
    };
    // Act
    const build = () =>
      new LakeCompactorStack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'BadKeys', {
        compactor: props,
      });
    // Assess
    expect(build).toThrow(
      /table aliased: `kmsKeyArn` is "arn:aws:kms:eu-west-1:111122223333:alias\/lake"; give the key's ARN/,
    );
    expect(build).toThrow(/table typo: `kmsKeyArn` is "1a2b3c4d-[^"]*"; give the key's ARN/);
    expect(build).toThrow(
      /table owned: `kmsKeyArn` applies to tables in an existing bucket.*`dataBucket\.encryptionKey`/,
    );
  });
});

describe('the profiler on Iceberg tables', () => {
  it('reads the metadata folder and loads the Glue table it follows, never data files and never UpdateTable', () => {
    // Prepare / Act
    const { template } = synth(
      {
        tables: [
          { name: 'events', bucketName: 'lake', prefix: 'events/', partitionColumns: ['date'] },
          {
            name: 'orders',
            bucketName: 'lake',
            prefix: 'iceberg/orders',
            format: 'iceberg',
            catalog: { type: 'glue', database: 'shop', table: 'orders' },
          },
        ],
      },
      'IcebergProfilerGrants',
    );
    const statements = statementsOf(template, 'CompactorProfilerServiceRole');

    // Assess
    expect(s3Grants(statements)).toEqual(
      ['s3:GetObject arn:aws:s3:::lake/iceberg/orders/metadata/*', 's3:ListBucket arn:aws:s3:::lake'].sort(),
    );
    const glue = statements.flatMap((s) => list(s.Action)).filter((a) => a.startsWith('glue:'));
    expect(glue).toEqual(['glue:GetTable']);
  });

  it("lets the validate step read what the profiler reads of them, to list a where filter's partitions", () => {
    // Prepare / Act
    const { template } = synth(
      {
        tables: [
          { name: 'events', bucketName: 'lake', prefix: 'events/', partitionColumns: ['date'] },
          {
            name: 'orders',
            bucketName: 'lake',
            prefix: 'iceberg/orders',
            format: 'iceberg',
            catalog: { type: 'glue', database: 'shop', table: 'orders' },
          },
        ],
      },
      'IcebergValidateGrants',
    );
    const statements = statementsOf(template, 'CompactorWorkflowValidateServiceRole');

    // Assess
    expect(s3Grants(statements)).toEqual(
      ['s3:GetObject arn:aws:s3:::lake/iceberg/orders/metadata/*', 's3:ListBucket arn:aws:s3:::lake'].sort(),
    );
    const glue = statements.flatMap((s) => list(s.Action)).filter((a) => a.startsWith('glue:'));
    expect(glue).toEqual(['glue:GetTable']);
  });
});
