// The per-table scope and its STS session policy: the policy of a table is exactly its prefix and the work root,
// its bucket, the keys via S3 for those objects, and an S3 Tables table's data by name — nothing else; the same
// scope decides in process which keys a request may name.
import { describe, expect, it } from 'vitest';
import {
  describeScope,
  keyInScope,
  OutsideTableScopeError,
  SESSION_BUCKET_ACTIONS,
  SESSION_OBJECT_ACTIONS,
  SESSION_POLICY_MAX_CHARS,
  sessionPolicyFor,
  tableScopeOf,
  workRootScopeOf,
} from '../../../../functions/core/access/table-scope.js';
import { InvalidInputError } from '../../../../functions/core/errors.js';

const WORK_ROOT = '_lake-compactor/';
const events = tableScopeOf({ name: 'events', prefix: 'events', bucket: 'lake' }, 'lake', WORK_ROOT);

describe('tableScopeOf and keyInScope', () => {
  it("admits the table's keys and the work root's, and no other table's, even one sharing a name prefix", () => {
    // Prepare / Act / Assess
    expect(events).toEqual({ bucket: 'lake', table: 'events', tablePrefix: 'events/', workRoot: WORK_ROOT });
    expect(keyInScope(events, 'events/date=2024-01-01/a.parquet')).toBe(true);
    expect(keyInScope(events, '_lake-compactor/staging/run/g/out.parquet')).toBe(true);
    expect(keyInScope(events, 'events2/date=2024-01-01/a.parquet')).toBe(false);
    expect(keyInScope(events, 'hr/payroll/salaries.parquet')).toBe(false);
    expect(keyInScope(events, 'events')).toBe(false);
  });

  it('gives a bucket-root table the whole bucket, and a work-root scope the work root alone', () => {
    // Prepare
    const root = tableScopeOf({ name: 'root', prefix: '' }, 'root-lake', WORK_ROOT);
    const work = workRootScopeOf('lake', WORK_ROOT);
    // Act / Assess
    expect(keyInScope(root, 'anything/at/all.parquet')).toBe(true);
    expect(keyInScope(work, '_lake-compactor/trash/x')).toBe(true);
    expect(keyInScope(work, 'events/date=2024-01-01/a.parquet')).toBe(false);
    expect(describeScope(work)).toBe('the work root lake/_lake-compactor/');
  });

  it('names the scope and the refused key in the error, and it is not retryable', () => {
    // Prepare / Act
    const error = new OutsideTableScopeError('hr/payroll/x.parquet', 'DeleteObject', describeScope(events));
    // Assess
    expect(error.name).toBe('OutsideTableScopeError');
    expect(error.retryable).toBe(false);
    expect(error.message).toMatch(
      /^Refused S3 DeleteObject of hr\/payroll\/x\.parquet: it is outside table events \(lake\/events\/\) and the work root lake\/_lake-compactor\//,
    );
  });
});

describe('sessionPolicyFor', () => {
  it("is exactly the table's prefix and the work root, its bucket, and the keys via S3 for those objects", () => {
    // Act
    const policy = JSON.parse(sessionPolicyFor(events, { region: 'eu-west-1' }));
    // Assess
    const objects = ['arn:aws:s3:::lake/events/*', 'arn:aws:s3:::lake/_lake-compactor/*'];
    expect(policy).toEqual({
      Version: '2012-10-17',
      Statement: [
        { Sid: 'Objects', Effect: 'Allow', Action: [...SESSION_OBJECT_ACTIONS], Resource: objects },
        {
          Sid: 'Bucket',
          Effect: 'Allow',
          Action: [...SESSION_BUCKET_ACTIONS],
          Resource: 'arn:aws:s3:::lake',
        },
        {
          Sid: 'KeysViaS3',
          Effect: 'Allow',
          Action: ['kms:Decrypt', 'kms:GenerateDataKey'],
          Resource: '*',
          Condition: {
            StringEquals: { 'kms:ViaService': 's3.eu-west-1.amazonaws.com' },
            StringLike: { 'kms:EncryptionContext:aws:s3:arn': ['arn:aws:s3:::lake', ...objects] },
          },
        },
      ],
    });
  });

  it("adds an S3 Tables table's data by namespace and name, and writes ARNs in the role's partition", () => {
    // Prepare
    const scope = tableScopeOf(
      {
        name: 'orders',
        prefix: 'orders',
        catalog: {
          type: 'rest',
          namespace: 'shop',
          table: 'orders',
          auth: { type: 'sigv4', signingName: 's3tables', region: 'cn-north-1' },
        },
      },
      'x--table-s3',
      WORK_ROOT,
    );
    // Act
    const policy = JSON.parse(sessionPolicyFor(scope, { region: 'cn-north-1', partition: 'aws-cn' }));
    // Assess
    expect(policy.Statement[0].Resource).toEqual([
      'arn:aws-cn:s3:::x--table-s3/orders/*',
      'arn:aws-cn:s3:::x--table-s3/_lake-compactor/*',
    ]);
    expect(policy.Statement.at(-1)).toEqual({
      Sid: 'TableData',
      Effect: 'Allow',
      Action: ['s3tables:GetTableData', 's3tables:PutTableData'],
      Resource: '*',
      Condition: { StringEquals: { 's3tables:namespace': 'shop', 's3tables:tableName': 'orders' } },
    });
  });

  it('covers a bucket-root table with the bucket, once, and a work-root scope with the work root only', () => {
    // Prepare
    const root = tableScopeOf({ name: 'root', prefix: '' }, 'root-lake', WORK_ROOT);
    // Act
    const rootPolicy = JSON.parse(sessionPolicyFor(root, { region: 'eu-west-1' }));
    const workPolicy = JSON.parse(
      sessionPolicyFor(workRootScopeOf('lake', WORK_ROOT), { region: 'eu-west-1' }),
    );
    // Assess
    expect(rootPolicy.Statement[0].Resource).toEqual([
      'arn:aws:s3:::root-lake/*',
      'arn:aws:s3:::root-lake/_lake-compactor/*',
    ]);
    expect(workPolicy.Statement[0].Resource).toEqual(['arn:aws:s3:::lake/_lake-compactor/*']);
  });

  it('refuses a prefix IAM would read as a wildcard or variable, and a policy longer than STS takes', () => {
    // Prepare
    const star = tableScopeOf({ name: 'x', prefix: 'ev*ents' }, 'lake', WORK_ROOT);
    const variable = tableScopeOf({ name: 'x', prefix: `e/\${aws:username}` }, 'lake', WORK_ROOT);
    const long = tableScopeOf({ name: 'x', prefix: 'p'.repeat(900) }, 'lake', WORK_ROOT);
    // Act / Assess
    expect(() => sessionPolicyFor(star, { region: 'eu-west-1' })).toThrow(InvalidInputError);
    expect(() => sessionPolicyFor(variable, { region: 'eu-west-1' })).toThrow(/wildcard or variable/);
    expect(() => sessionPolicyFor(long, { region: 'eu-west-1' })).toThrow(
      new RegExp(`STS takes at most ${SESSION_POLICY_MAX_CHARS}. Shorten the table prefix`),
    );
    const fits = tableScopeOf({ name: 'x', prefix: 'p'.repeat(300) }, 'lake', WORK_ROOT);
    expect(sessionPolicyFor(fits, { region: 'eu-west-1' }).length).toBeLessThanOrEqual(
      SESSION_POLICY_MAX_CHARS,
    );
  });
});
