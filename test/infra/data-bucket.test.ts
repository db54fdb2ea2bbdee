// Template assertions for the data bucket LakeCompactor creates for tables without `bucketName`: versioning,
// lifecycle rules tied to the vacuum settings, private, TLS-only, encrypted, retained, wired and granted.
import { App, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { flattenCfnReference } from 'cdk-nag/lib/utils/flatten-cfn-reference.js';
import { describe, expect, it } from 'vitest';
import { LakeCompactorStack } from '../../infra/app.js';
import { LakeCompactor, type LakeCompactorProps } from '../../infra/lake-compactor.js';
import { codeFilesOf } from '../../infra/node-function.js';

type Statement = { Effect: string; Action: string | string[]; Resource: unknown; Condition?: unknown };
type LifecycleRule = Record<string, unknown> & { Id: string };

/** One table in the owned bucket, one in an existing bucket. */
const MIXED: LakeCompactorProps = {
  tables: [
    { name: 'events', prefix: 'events/', partitionColumns: ['date'] },
    { name: 'orders', bucketName: 'lake', prefix: 'orders/' },
  ],
};

// The per-step grants as each function's own role holds them (`tableIsolation: "none"`): with the default isolation
// they move, unchanged, to per-function data-access roles (test/infra/table-isolation.test.ts proves the move).
function synth(props: LakeCompactorProps, id = 'Owned'): { stack: LakeCompactorStack; template: Template } {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new LakeCompactorStack(app, id, { compactor: { tableIsolation: 'none', ...props } });
  return { stack, template: Template.fromStack(stack) };
}

/** The message of the error `build` throws ('' when it does not throw). */
function errorOf(build: () => unknown): string {
  try {
    build();
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
  return '';
}

/** A template string value with `{ Ref }` parts joined in as `<LogicalId>` (the shape of TABLES). */
function joined(value: unknown): string {
  if (typeof value === 'string') return value;
  const join = (value as { 'Fn::Join'?: [string, unknown[]] })['Fn::Join'];
  if (join === undefined) return flattenCfnReference(value);
  return join[1].map((part) => (typeof part === 'string' ? part : flattenCfnReference(part))).join(join[0]);
}

/** The only AWS::S3::Bucket of the template: its logical id and resource. */
function bucketOf(template: Template): { id: string; resource: Record<string, unknown> } {
  const buckets = Object.entries(template.findResources('AWS::S3::Bucket'));
  expect(buckets).toHaveLength(1);
  const [id, resource] = buckets[0] as [string, Record<string, unknown>];
  return { id, resource };
}

function lifecycleRules(template: Template): LifecycleRule[] {
  const { resource } = bucketOf(template);
  return (resource as { Properties: { LifecycleConfiguration: { Rules: LifecycleRule[] } } }).Properties
    .LifecycleConfiguration.Rules;
}

/** Allow statements of the policies attached to roles whose logical id starts with `rolePrefix`. */
function statementsOf(template: Template, rolePrefix: string): Statement[] {
  const policies = template.findResources('AWS::IAM::Policy') as Record<
    string,
    { Properties: { PolicyDocument: { Statement: Statement[] }; Roles: { Ref: string }[] } }
  >;
  return Object.values(policies)
    .filter((p) => p.Properties.Roles.some((r) => r.Ref.startsWith(rolePrefix)))
    .flatMap((p) => p.Properties.PolicyDocument.Statement);
}

describe('the owned data bucket', () => {
  const { stack, template } = synth(MIXED);
  const { id, resource } = bucketOf(template);

  it('is created once, versioned, private, encrypted with S3-managed keys and retained on stack deletion', () => {
    // Prepare / Act: synthesized above
    // Assess
    expect(id).toMatch(/^CompactorDataBucket/);
    expect(resource).toMatchObject({
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
      Properties: {
        VersioningConfiguration: { Status: 'Enabled' },
        PublicAccessBlockConfiguration: {
          BlockPublicAcls: true,
          BlockPublicPolicy: true,
          IgnorePublicAcls: true,
          RestrictPublicBuckets: true,
        },
        BucketEncryption: {
          ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
        },
      },
    });
  });

  it('outputs the generated bucket name, where writers put the owned tables', () => {
    // Prepare / Act / Assess
    template.hasOutput('DataBucketName', { Value: { Ref: id } });
  });

  it('denies every request not made over TLS', () => {
    // Prepare / Act / Assess
    template.hasResourceProperties('AWS::S3::BucketPolicy', {
      Bucket: { Ref: id },
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Deny',
            Action: 's3:*',
            Condition: { Bool: { 'aws:SecureTransport': 'false' } },
          }),
        ]),
      },
    });
  });

  it('expires noncurrent versions after the 168 h vacuum retention (7 days) and then their delete markers', () => {
    // Prepare / Act
    const rule = lifecycleRules(template).find((r) => r.Id === 'NoncurrentVersions');
    // Assess
    expect(rule).toEqual({
      Id: 'NoncurrentVersions',
      Status: 'Enabled',
      NoncurrentVersionExpiration: { NoncurrentDays: 7 },
      ExpiredObjectDeleteMarker: true,
    });
  });

  it('expires staging leftovers after 7 days, and their noncurrent copies a day later', () => {
    // Prepare / Act
    const rule = lifecycleRules(template).find((r) => r.Id === 'StagingLeftovers');
    // Assess
    expect(rule).toEqual({
      Id: 'StagingLeftovers',
      Status: 'Enabled',
      Prefix: '_lake-compactor/staging/',
      ExpirationInDays: 7,
      NoncurrentVersionExpiration: { NoncurrentDays: 1 },
    });
  });

  it('expires rewrite dry-run previews (rows of the table) after the staging days, their noncurrent copies a day later', () => {
    // Prepare / Act
    const rule = lifecycleRules(template).find((r) => r.Id === 'DryRunPreviews');
    // Assess
    expect(rule).toEqual({
      Id: 'DryRunPreviews',
      Status: 'Enabled',
      Prefix: '_lake-compactor/previews/',
      ExpirationInDays: 7,
      NoncurrentVersionExpiration: { NoncurrentDays: 1 },
    });
  });

  it('aborts multipart uploads left unfinished for the 72 h debris age (3 days)', () => {
    // Prepare / Act
    const rule = lifecycleRules(template).find((r) => r.Id === 'IncompleteMultipartUploads');
    // Assess
    expect(rule).toEqual({
      Id: 'IncompleteMultipartUploads',
      Status: 'Enabled',
      AbortIncompleteMultipartUpload: { DaysAfterInitiation: 3 },
    });
    expect(lifecycleRules(template)).toHaveLength(4);
  });

  it('gives the functions the real bucket name (resolved at deploy, in TABLES_REF_0) beside the literal one', () => {
    // Prepare
    const fns = stack.node.findAll().filter((c): c is lambda.Function => codeFilesOf(c) !== undefined);
    // Act
    const delivered = fns.map((fn) => {
      const variables = (
        Stack.of(fn).resolve((fn.node.defaultChild as lambda.CfnFunction).environment) as {
          variables: Record<string, unknown>;
        }
      ).variables;
      const file = JSON.parse(codeFilesOf(fn)?.['tables.json'] ?? '[]') as { name: string; bucket: string }[];
      return { variables, tables: file.map((t) => [t.name, t.bucket]) };
    });
    // Assess
    expect(fns.length).toBeGreaterThanOrEqual(12);
    for (const { variables, tables } of delivered) {
      expect(variables.TABLES).toBeUndefined();
      expect(variables.TABLES_FILE).toBe('tables.json');
      expect(joined(variables.TABLES_REF_0)).toBe(`<${id}>`);
      expect(tables).toEqual([
        ['events', `\${TABLES_REF_0}`],
        ['orders', 'lake'],
      ]);
    }
  });

  it('treats the owned bucket as versioned in the workflow (retire by delete, restore by version)', () => {
    // Prepare
    const commit = Object.entries(template.findResources('AWS::Lambda::Function')).find(([logicalId]) =>
      logicalId.startsWith('CompactorWorkflowCommit'),
    )?.[1] as { Properties: { Environment: { Variables: Record<string, unknown> } } };
    // Act
    const versioned = flattenCfnReference(commit.Properties.Environment.Variables.VERSIONED_BUCKETS);
    // Assess
    expect(versioned).toBe(`<${id}>`);
  });

  it('sends the owned bucket’s object events under the table prefix to the profiler queue', () => {
    // Prepare / Act / Assess
    template.hasResourceProperties('Custom::S3BucketNotifications', {
      BucketName: { Ref: id },
      NotificationConfiguration: {
        QueueConfigurations: [
          Match.objectLike({
            Events: ['s3:ObjectCreated:*'],
            Filter: { Key: { FilterRules: [{ Name: 'prefix', Value: 'events/' }] } },
          }),
          Match.objectLike({
            Events: ['s3:ObjectRemoved:*'],
            Filter: { Key: { FilterRules: [{ Name: 'prefix', Value: 'events/' }] } },
          }),
        ],
      },
    });
    template.resourceCountIs('Custom::S3BucketNotifications', 2);
  });

  it('grants the workflow, vacuum and tiering the owned bucket’s table prefix, and the sweep its listing', () => {
    // Prepare
    const grantsOn = (rolePrefix: string) =>
      statementsOf(template, rolePrefix).flatMap((s) =>
        (Array.isArray(s.Resource) ? s.Resource : [s.Resource]).map((r) => flattenCfnReference(r)),
      );
    // Act
    const commit = grantsOn('CompactorWorkflowCommitServiceRole');
    const vacuum = grantsOn('CompactorMaintenanceVacuumServiceRole');
    const tiering = grantsOn('CompactorMaintenanceTieringServiceRole');
    const sweep = statementsOf(template, 'CompactorSweepServiceRole').filter(
      (s) => s.Action === 's3:ListBucket',
    );
    // Assess
    expect(commit).toEqual(
      expect.arrayContaining([`arn:aws:s3:::<${id}>/events/*`, 'arn:aws:s3:::lake/orders/*']),
    );
    expect(vacuum).toContain(`arn:aws:s3:::<${id}>/events/*`);
    expect(tiering).toContain(`arn:aws:s3:::<${id}>/events/*`);
    expect(
      sweep.map((s) => [
        (Array.isArray(s.Resource) ? s.Resource : [s.Resource]).map(flattenCfnReference),
        s.Condition,
      ]),
    ).toEqual([[[`arn:aws:s3:::<${id}>`, 'arn:aws:s3:::lake'], undefined]]);
  });

  it('is not created when every table names its bucket', () => {
    // Prepare / Act
    const { template: named } = synth(
      { tables: [MIXED.tables[1] as LakeCompactorProps['tables'][0]] },
      'Named',
    );
    // Assess
    named.resourceCountIs('AWS::S3::Bucket', 0);
  });
});

describe('owned data bucket settings', () => {
  it('ties the lifecycle to the vacuum settings and takes explicit days, logs and a removal policy', () => {
    // Prepare
    const logs = { bucketName: 'access-logs' };
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const stack = new Stack(app, 'Tuned');
    // Act
    new LakeCompactor(stack, 'Compactor', {
      tables: [{ name: 'events', prefix: 'events/' }],
      maintenance: { vacuum: { retentionHours: 240, debrisAgeHours: 30 } },
      dataBucket: {
        stagingExpirationDays: 3,
        removalPolicy: RemovalPolicy.DESTROY,
        serverAccessLogsBucket: s3.Bucket.fromBucketName(stack, 'Logs', logs.bucketName),
        serverAccessLogsPrefix: 'lake/',
      },
    });
    const template = Template.fromStack(stack);
    // Assess
    const rules = lifecycleRules(template);
    expect(rules.find((r) => r.Id === 'NoncurrentVersions')?.NoncurrentVersionExpiration).toEqual({
      NoncurrentDays: 10,
    });
    expect(rules.find((r) => r.Id === 'StagingLeftovers')?.ExpirationInDays).toBe(3);
    expect(rules.find((r) => r.Id === 'DryRunPreviews')?.ExpirationInDays).toBe(3);
    expect(rules.find((r) => r.Id === 'IncompleteMultipartUploads')?.AbortIncompleteMultipartUpload).toEqual({
      DaysAfterInitiation: 2,
    });
    expect(bucketOf(template).resource).toMatchObject({
      DeletionPolicy: 'Delete',
      Properties: { LoggingConfiguration: { DestinationBucketName: 'access-logs', LogFilePrefix: 'lake/' } },
    });
  });

  it('is configurable from the JSON deployment config (days as numbers, removal policy as a string)', () => {
    // Prepare
    const config = JSON.parse(
      '{"tables":[{"name":"events","prefix":"events/"}],"dataBucket":{"removalPolicy":"destroy","noncurrentVersionExpirationDays":14}}',
    ) as LakeCompactorProps;
    // Act
    const { template } = synth(config, 'FromJson');
    // Assess
    expect(bucketOf(template).resource).toMatchObject({ DeletionPolicy: 'Delete' });
    expect(
      lifecycleRules(template).find((r) => r.Id === 'NoncurrentVersions')?.NoncurrentVersionExpiration,
    ).toEqual({ NoncurrentDays: 14 });
  });

  it('encrypts with a given KMS key and a bucket key, and lets the object-touching roles use that key', () => {
    // Prepare
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const stack = new Stack(app, 'Kms');
    const key = new kms.Key(stack, 'Key', { enableKeyRotation: true });
    // Act
    new LakeCompactor(stack, 'Compactor', {
      tables: [{ name: 'events', prefix: 'events/' }],
      dataBucket: { encryptionKey: key },
      tableIsolation: 'none', // the grants on the function roles (see the note above `synth`)
    });
    const template = Template.fromStack(stack);
    const keyId = Object.keys(template.findResources('AWS::KMS::Key'))[0] ?? '';
    const kmsGrants = (rolePrefix: string) =>
      statementsOf(template, rolePrefix)
        .filter((s) => JSON.stringify(s.Action).includes('kms:'))
        .map((s) => [s.Action, flattenCfnReference(s.Resource)]);
    // Assess
    expect(bucketOf(template).resource).toMatchObject({
      Properties: {
        BucketEncryption: {
          ServerSideEncryptionConfiguration: [
            {
              BucketKeyEnabled: true,
              ServerSideEncryptionByDefault: {
                SSEAlgorithm: 'aws:kms',
                KMSMasterKeyID: { 'Fn::GetAtt': [keyId, 'Arn'] },
              },
            },
          ],
        },
      },
    });
    for (const role of ['CompactorWorkflowCompactServiceRole', 'CompactorMaintenanceVacuumServiceRole']) {
      expect(kmsGrants(role)).toEqual([[['kms:Decrypt', 'kms:GenerateDataKey'], `<${keyId}.Arn>`]]);
    }
    expect(kmsGrants('CompactorWorkflowStateMachineRole')).toEqual([['kms:Decrypt', `<${keyId}.Arn>`]]);
    expect(kmsGrants('CompactorProfilerServiceRole')).toEqual([]);
  });

  it('enables EventBridge on the owned bucket for a table fed by EventBridge, matching its real name', () => {
    // Prepare / Act
    const { template } = synth(
      { tables: [{ name: 'audit', prefix: 'audit/', eventSource: 'eventbridge' }] },
      'Bridged',
    );
    const { id } = bucketOf(template);
    // Assess
    template.hasResourceProperties('Custom::S3BucketNotifications', {
      BucketName: { Ref: id },
      NotificationConfiguration: { EventBridgeConfiguration: {} },
    });
    template.hasResourceProperties('AWS::Events::Rule', {
      EventPattern: Match.objectLike({
        detail: { bucket: { name: [{ Ref: id }] }, object: Match.anyValue() },
      }),
    });
  });
});

describe('owned data bucket validation', () => {
  const build = (props: LakeCompactorProps) => () =>
    new LakeCompactorStack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'Invalid', {
      compactor: props,
    });

  it('reports every invalid data bucket setting in one message, saying what to do', () => {
    // Prepare
    const props: LakeCompactorProps = {
      tables: [{ name: 'events', prefix: 'events/' }],
      dataBucket: {
        noncurrentVersionExpirationDays: 3,
        stagingExpirationDays: 1,
        abortIncompleteMultipartUploadDays: 0.5,
        serverAccessLogsPrefix: 'logs/',
      },
    };
    // Act
    const message = errorOf(build(props));
    // Assess
    expect(message).toMatch(/noncurrentVersionExpirationDays is 3; .*at least 7 \(the vacuum retention/);
    expect(message).toMatch(/stagingExpirationDays is 1; .*at least 2/);
    expect(message).toMatch(/abortIncompleteMultipartUploadDays is 0\.5/);
    expect(message).toMatch(/serverAccessLogsPrefix is set without dataBucket\.serverAccessLogsBucket/);
  });

  it('refuses data bucket settings when every table names its own bucket', () => {
    // Prepare
    const props: LakeCompactorProps = {
      tables: [{ name: 'events', bucketName: 'lake', prefix: 'events/' }],
      dataBucket: { stagingExpirationDays: 7 },
    };
    // Act / Assess
    expect(errorOf(build(props))).toMatch(/`dataBucket` is set, but every table names its `bucketName`/);
  });

  it('still finds two owned-bucket tables on one root, reported with the data bucket problems', () => {
    // Prepare
    const props: LakeCompactorProps = {
      tables: [
        { name: 'events', prefix: 'events/' },
        { name: 'copy', prefix: 'events' },
        { name: 'same-root-elsewhere', bucketName: 'lake', prefix: 'events/' },
      ],
      dataBucket: { stagingExpirationDays: 1 },
    };
    // Act
    const message = errorOf(build(props));
    // Assess
    expect(message).toMatch(/1\.prefix: "events" is also the root of table "events"/);
    expect(message).not.toMatch(/2\.prefix/);
    expect(message).toMatch(/stagingExpirationDays is 1/);
  });

  it('still validates a literal bucket name beside owned-bucket tables', () => {
    // Prepare
    const props: LakeCompactorProps = {
      tables: [
        { name: 'events', prefix: 'events/' },
        { name: 'short', bucketName: 'ab', prefix: 'x/' },
      ],
    };
    // Act / Assess
    expect(errorOf(build(props))).toMatch(/tables\.1\.bucketName: "ab" is not an S3 bucket name/);
  });
});
