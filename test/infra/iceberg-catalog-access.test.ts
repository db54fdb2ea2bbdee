// The IAM statements for Iceberg tables committing through a metastore catalog: a Glue catalog gets GetTable and
// UpdateTable on exactly its table (with its database and catalog, in the catalog's account and region), an S3
// Tables REST catalog the S3 Tables data-plane actions on its table bucket and that bucket's tables, a bearer-token
// catalog read on its token's secret or parameter alone, and a path or unsigned catalog nothing at all. In a stack, the vacuum (expire_snapshots swaps the pointer) gets
// them beside the steps that commit and settle, and s3:PutObject on the table's metadata/ for the file it commits.
import { App, type PolicyValidationPluginReport, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { flattenCfnReference } from 'cdk-nag/lib/utils/flatten-cfn-reference.js';
import { describe, expect, it } from 'vitest';
import { parseTableConfigs } from '../../functions/core/table-config.js';
import { LakeCompactorStack } from '../../infra/app.js';
import {
  type CatalogAccess,
  icebergCatalogStatements,
  S3_TABLES_REST_ACTIONS,
  S3_TABLES_REST_READ_ACTIONS,
} from '../../infra/formats/iceberg/catalog-access.js';
import { tablesJsonOf } from '../../infra/function-config.js';

const BUCKET_ARN = 'arn:aws:s3tables:eu-west-1:111122223333:bucket/lake';

/** A resolved ARN with the partition written as `aws` (`Fn::Join` of "arn:", the partition, the rest). */
function flatten(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(flatten);
  if (typeof value !== 'object' || value === null) return value;
  const join = (value as { 'Fn::Join'?: [string, unknown[]] })['Fn::Join'];
  if (join !== undefined)
    return join[1]
      .map((p) =>
        typeof p === 'string'
          ? p
          : (p as { Ref?: string }).Ref === 'AWS::Partition'
            ? 'aws'
            : JSON.stringify(p),
      )
      .join(join[0]);
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, flatten(v)]));
}

function resolved(tables: Parameters<typeof icebergCatalogStatements>[1], access?: CatalogAccess) {
  const stack = new Stack(new App(), 'Catalogs', { env: { account: '111122223333', region: 'eu-west-1' } });
  return icebergCatalogStatements(stack, tables, access).map((s) =>
    flatten(stack.resolve(s.toStatementJson())),
  );
}

describe('icebergCatalogStatements', () => {
  it('grants GetTable and UpdateTable on the Glue table, its database and catalog, in the catalog account and region', () => {
    // Act
    const statements = resolved([
      { name: 'events', catalog: { type: 'glue', database: 'lake', table: 'events' } },
      {
        name: 'shared',
        catalog: {
          type: 'glue',
          database: 'hub',
          table: 'orders',
          catalogId: '444455556666',
          region: 'us-east-1',
        },
      },
    ]);
    // Assess
    expect(statements).toEqual([
      {
        Effect: 'Allow',
        Action: ['glue:GetTable', 'glue:UpdateTable'],
        Resource: [
          'arn:aws:glue:eu-west-1:111122223333:catalog',
          'arn:aws:glue:eu-west-1:111122223333:database/lake',
          'arn:aws:glue:eu-west-1:111122223333:table/lake/events',
        ],
      },
      {
        Effect: 'Allow',
        Action: ['glue:GetTable', 'glue:UpdateTable'],
        Resource: [
          'arn:aws:glue:us-east-1:444455556666:catalog',
          'arn:aws:glue:us-east-1:444455556666:database/hub',
          'arn:aws:glue:us-east-1:444455556666:table/hub/orders',
        ],
      },
    ]);
  });

  it('grants the S3 Tables REST actions on the warehouse table bucket and its tables', () => {
    // Act
    const statements = resolved([
      {
        name: 'events',
        catalog: {
          type: 'rest',
          uri: 'https://s3tables.eu-west-1.amazonaws.com/iceberg',
          warehouse: BUCKET_ARN,
          namespace: 'web',
          table: 'events',
          auth: { type: 'sigv4', signingName: 's3tables', region: 'eu-west-1' },
        },
      },
    ]);
    // Assess: the table bucket, the namespace, and the one table by name (a table ARN ends with its id)
    expect(statements).toEqual([
      { Effect: 'Allow', Action: 's3tables:GetTableBucket', Resource: BUCKET_ARN },
      {
        Effect: 'Allow',
        Action: 's3tables:GetNamespace',
        Resource: BUCKET_ARN,
        Condition: { StringEquals: { 's3tables:namespace': 'web' } },
      },
      {
        Effect: 'Allow',
        Action: S3_TABLES_REST_ACTIONS.filter((a) => !/GetTableBucket|GetNamespace/.test(a)),
        Resource: `${BUCKET_ARN}/table/*`,
        Condition: { StringEquals: { 's3tables:namespace': 'web', 's3tables:tableName': 'events' } },
      },
    ]);
  });

  it('refuses an S3 Tables catalog without a warehouse rather than granting every table bucket', () => {
    // Act
    const build = () =>
      resolved([
        {
          name: 'events',
          catalog: {
            type: 'rest',
            uri: 'https://s3tables.eu-west-1.amazonaws.com/iceberg',
            namespace: 'web',
            table: 'events',
            auth: { type: 'sigv4', signingName: 's3tables', region: 'eu-west-1' },
          },
        },
      ]);
    // Assess
    expect(build).toThrow(/table events: an S3 Tables catalog .* needs `catalog.warehouse`/);
  });

  it('grants a reader of the pointer (the profiler) only the loading actions: Glue GetTable, S3 Tables reads', () => {
    // Act
    const statements = resolved(
      [
        { name: 'events', catalog: { type: 'glue', database: 'lake', table: 'events' } },
        {
          name: 'clicks',
          catalog: {
            type: 'rest',
            uri: 'https://s3tables.eu-west-1.amazonaws.com/iceberg',
            warehouse: BUCKET_ARN,
            namespace: 'web',
            table: 'clicks',
            auth: { type: 'sigv4', signingName: 's3tables', region: 'eu-west-1' },
          },
        },
      ],
      'read',
    );
    // Assess
    expect(statements).toEqual([
      {
        Effect: 'Allow',
        Action: 'glue:GetTable',
        Resource: [
          'arn:aws:glue:eu-west-1:111122223333:catalog',
          'arn:aws:glue:eu-west-1:111122223333:database/lake',
          'arn:aws:glue:eu-west-1:111122223333:table/lake/events',
        ],
      },
      { Effect: 'Allow', Action: 's3tables:GetTableBucket', Resource: BUCKET_ARN },
      {
        Effect: 'Allow',
        Action: 's3tables:GetNamespace',
        Resource: BUCKET_ARN,
        Condition: { StringEquals: { 's3tables:namespace': 'web' } },
      },
      {
        Effect: 'Allow',
        Action: S3_TABLES_REST_READ_ACTIONS.filter((a) => !/GetTableBucket|GetNamespace/.test(a)),
        Resource: `${BUCKET_ARN}/table/*`,
        Condition: { StringEquals: { 's3tables:namespace': 'web', 's3tables:tableName': 'clicks' } },
      },
    ]);
    expect(S3_TABLES_REST_READ_ACTIONS.filter((a) => /Update|Put/.test(a))).toEqual([]);
  });

  it('grants nothing for path, env-variable bearer-token and unsigned catalogs, or tables without a catalog', () => {
    // Act
    const statements = resolved([
      { name: 'a' },
      { name: 'b', catalog: { type: 'path' } },
      {
        name: 'c',
        catalog: {
          type: 'rest',
          uri: 'https://polaris.example/api/catalog',
          namespace: 'n',
          table: 't',
          auth: { type: 'oauth2' },
        },
      },
      {
        name: 'd',
        catalog: {
          type: 'rest',
          uri: 'http://127.0.0.1:8181',
          namespace: 'n',
          table: 't',
          auth: { type: 'none' },
        },
      },
    ]);
    // Assess
    expect(statements).toEqual([]);
  });

  it("grants read on exactly the secret or SSM parameter a bearer-token catalog's token comes from", () => {
    // Prepare
    const secret = 'arn:aws:secretsmanager:eu-west-1:111122223333:secret:lake/rest-token-AbC123';
    const rest = (name: string, auth: Record<string, string>) => ({
      name,
      catalog: {
        type: 'rest' as const,
        uri: 'https://polaris.example/api/catalog',
        namespace: 'n',
        table: name,
        auth: { type: 'oauth2' as const, ...auth },
      },
    });
    // Act
    const statements = resolved([
      rest('a', { tokenSecretArn: secret }),
      rest('b', { tokenParameter: '/lake/rest-token' }),
      rest('c', { tokenParameter: 'arn:aws:ssm:us-east-1:444455556666:parameter/shared/token' }),
    ]);
    // Assess
    expect(statements).toEqual([
      { Effect: 'Allow', Action: 'secretsmanager:GetSecretValue', Resource: secret },
      {
        Effect: 'Allow',
        Action: 'ssm:GetParameter',
        Resource: 'arn:aws:ssm:eu-west-1:111122223333:parameter/lake/rest-token',
      },
      {
        Effect: 'Allow',
        Action: 'ssm:GetParameter',
        Resource: 'arn:aws:ssm:us-east-1:444455556666:parameter/shared/token',
      },
    ]);
  });
});

type Statement = { Effect: string; Action: string | string[]; Resource: unknown };
type Policy = { Properties: { PolicyDocument: { Statement: Statement[] }; Roles: { Ref: string }[] } };

const list = <T>(value: T | T[]): T[] => (Array.isArray(value) ? value : [value]);

/** `role: action resource` of every Allow whose action or resource `keep` selects, flattened and sorted. */
function grants(template: Template, keep: (action: string, resource: string) => boolean): string[] {
  const policies = template.findResources('AWS::IAM::Policy') as Record<string, Policy>;
  return Object.values(policies)
    .flatMap((p) =>
      p.Properties.Roles.flatMap((role) =>
        p.Properties.PolicyDocument.Statement.filter((s) => s.Effect === 'Allow').flatMap((s) =>
          list(s.Action).flatMap((action) =>
            list(s.Resource)
              .map((r) => flattenCfnReference(r))
              .filter((r) => keep(action, r))
              .map((r) => `${role.Ref.replace(/ServiceRole[A-F0-9]+$/, '')}: ${action} ${r}`),
          ),
        ),
      ),
    )
    .sort();
}

describe('the functions an Iceberg catalog table grants to', () => {
  // The per-step grants as each function's own role holds them (`tableIsolation: "none"`): with the default isolation
  // they move, unchanged, to per-function data-access roles (test/infra/table-isolation.test.ts proves the move).
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new LakeCompactorStack(app, 'IcebergCatalogRoles', {
    compactor: {
      tableIsolation: 'none',
      tables: [
        {
          name: 'events',
          bucketName: 'lake',
          prefix: 'events/',
          format: 'iceberg',
          catalog: { type: 'glue', database: 'lake', table: 'events' },
        },
        { name: 'clicks', bucketName: 'lake', prefix: 'clicks/' },
      ],
    },
  });
  const template = Template.fromStack(stack);

  it('grants the vacuum GetTable and UpdateTable on the Glue table, beside the steps that commit and settle, and the profiler and Validate GetTable alone', () => {
    // Act
    const glue = grants(template, (action) => action.startsWith('glue:'));

    // Assess
    const roles = [
      'CompactorMaintenanceVacuum',
      'CompactorSweep',
      'CompactorWorkflowCommit',
      'CompactorWorkflowFinalize',
      'CompactorWorkflowPlan',
      'CompactorWorkflowRollback',
    ];
    const resources = ['catalog', 'database/lake', 'table/lake/events'].map(
      (r) => `arn:<AWS::Partition>:glue:<AWS::Region>:<AWS::AccountId>:${r}`,
    );
    expect(glue).toEqual(
      [
        ...roles.flatMap((role) =>
          ['glue:GetTable', 'glue:UpdateTable'].flatMap((a) => resources.map((r) => `${role}: ${a} ${r}`)),
        ),
        // The profiler and Validate (which lists the partitions a `where` filter passes) only read the pointer.
        ...resources.map((r) => `CompactorProfiler: glue:GetTable ${r}`),
        ...resources.map((r) => `CompactorWorkflowValidate: glue:GetTable ${r}`),
      ].sort(),
    );
  });

  it("grants the vacuum s3:PutObject on the Iceberg table's metadata/ only, for the metadata file expire commits", () => {
    // Act
    const puts = grants(
      template,
      (action, resource) => action === 's3:PutObject' && resource.startsWith('arn:aws:s3:::lake/events/'),
    ).filter((g) => g.startsWith('CompactorMaintenanceVacuum:'));

    // Assess
    expect(puts).toEqual(['CompactorMaintenanceVacuum: s3:PutObject arn:aws:s3:::lake/events/metadata/*']);
  });

  it('reports no unacknowledged cdk-nag AwsSolutions error', () => {
    // Act
    const report: PolicyValidationPluginReport = new AwsSolutionsChecks().validateScope(stack);

    // Assess
    const errors = report.violations
      .filter((v) => v.severity === 'error')
      .flatMap((v) =>
        v.violatingResources.map((r) => `${v.ruleName} @ ${r.constructPath ?? r.resourceLogicalId}`),
      );
    expect(errors).toEqual([]);
  });
});

describe("an Iceberg table's catalog in the functions' table config", () => {
  it('hands the functions the catalog each table commits through, as they parse it (none for a table without one)', () => {
    // Prepare: a table per catalog kind, and one that names none (the path catalog by default)
    const tables = [
      {
        name: 'glued',
        prefix: 'glued/',
        format: 'iceberg' as const,
        catalog: { type: 'glue' as const, database: 'lake', table: 'glued' },
      },
      {
        name: 'tabled',
        prefix: 'tabled/',
        format: 'iceberg' as const,
        catalog: {
          type: 'rest' as const,
          uri: 'https://s3tables.eu-west-1.amazonaws.com/iceberg',
          namespace: 'web',
          table: 'tabled',
          warehouse: BUCKET_ARN,
          auth: { type: 'sigv4' as const, signingName: 's3tables', region: 'eu-west-1' },
        },
      },
      {
        name: 'pathed',
        prefix: 'pathed/',
        format: 'iceberg' as const,
        catalog: { type: 'path' as const, metadataNaming: 'uuid' as const },
      },
      { name: 'plain', prefix: 'plain/', format: 'iceberg' as const },
    ];

    // Act
    const parsed = parseTableConfigs(tablesJsonOf(tables, 'owned'));

    // Assess: without it a Glue or REST table would be committed through the path catalog, which its other
    // writers and readers never see
    expect(parsed.map((t) => [t.name, t.catalog])).toEqual(tables.map((t) => [t.name, t.catalog]));
  });
});

describe('an S3 Tables table in a stack', () => {
  const s3TablesTable = (catalog: Record<string, unknown>) => ({
    name: 'events',
    bucketName: 'lake',
    prefix: 'events/',
    format: 'iceberg' as const,
    catalog: {
      type: 'rest' as const,
      uri: 'https://s3tables.eu-west-1.amazonaws.com/iceberg',
      namespace: 'web',
      table: 'events',
      auth: { type: 'sigv4' as const, signingName: 's3tables', region: 'eu-west-1' },
      ...catalog,
    },
  });
  const synthesize = (id: string, catalog: Record<string, unknown>) =>
    new LakeCompactorStack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), id, {
      compactor: { tables: [s3TablesTable(catalog) as never] },
    });

  it('is refused at synth without a warehouse, or with one that is not a table bucket of its region, saying what to give', () => {
    // Act / Assess
    expect(() => synthesize('NoWarehouse', {})).toThrow(
      /table events: an S3 Tables catalog \(auth signingName "s3tables"\) needs `catalog.warehouse`, the table bucket's ARN/,
    );
    expect(() => synthesize('BadWarehouse', { warehouse: 'lake' })).toThrow(
      /table events: `catalog.warehouse` is "lake"; give the table bucket's ARN/,
    );
    expect(() =>
      synthesize('OtherRegion', { warehouse: 'arn:aws:s3tables:us-east-1:111122223333:bucket/lake' }),
    ).toThrow(/table bucket in us-east-1, but the catalog signs for eu-west-1/);
  });

  it('grants only the configured table by name, and reports no unacknowledged cdk-nag error', () => {
    // Prepare
    const stack = synthesize('S3TablesScoped', { warehouse: BUCKET_ARN });
    // Act
    const template = Template.fromStack(stack);
    const report = new AwsSolutionsChecks().validateScope(stack);
    const tableGrants = (Object.values(template.findResources('AWS::IAM::Policy')) as Policy[])
      .flatMap((p) => p.Properties.PolicyDocument.Statement as (Statement & { Condition?: unknown })[])
      .filter((s) => list(s.Resource).includes(`${BUCKET_ARN}/table/*`));
    // Assess
    expect(tableGrants.length).toBeGreaterThan(0);
    for (const statement of tableGrants) {
      expect(statement.Condition).toEqual({
        StringEquals: { 's3tables:namespace': 'web', 's3tables:tableName': 'events' },
      });
    }
    expect(JSON.stringify(template.findResources('AWS::IAM::Policy'))).not.toContain('bucket/*');
    const errors = report.violations
      .filter((v) => v.severity === 'error')
      .flatMap((v) => v.violatingResources.map((r) => `${v.ruleName} @ ${r.constructPath}`));
    expect(errors).toEqual([]);
  });
});
