// The IAM statements a function needs to commit to the Iceberg tables whose `catalog` names a metastore: Glue
// (GetTable, UpdateTable on that table, with its database and catalog as Glue's resource model requires) and an
// Iceberg REST endpoint signed with SigV4 — Amazon S3 Tables (`s3tables`: the data-plane actions its Iceberg REST
// endpoint authorises, on the one configured table of the table bucket `warehouse` names) or Glue's REST endpoint
// (`glue`). A bearer
// token or an unsigned REST catalog needs no IAM. No metastore catalog, no statement: the default templates stay
// as they are.
//
// Part of Iceberg's infra module (./index.ts attaches these statements to the functions that read, commit, settle
// or vacuum Iceberg tables); the construct reaches it only through the registry (../index.ts).
import { Stack, Token } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type { IConstruct } from 'constructs';
import type {
  IcebergCatalogSetting,
  RestCatalogSetting,
} from '../../../functions/core/formats/iceberg/catalogs.js';
import { normalizeTablePrefix } from '../../s3-access.js';

/** S3 Tables actions its Iceberg REST endpoint checks for config, load and commit of a table. */
export const S3_TABLES_REST_ACTIONS = [
  's3tables:GetTableBucket',
  's3tables:GetNamespace',
  's3tables:GetTable',
  's3tables:GetTableMetadataLocation',
  's3tables:UpdateTableMetadataLocation',
  's3tables:GetTableData',
  's3tables:PutTableData',
] as const;

/** Glue actions the Glue catalog (and Glue's REST endpoint) needs to load and commit one table. */
export const GLUE_COMMIT_ACTIONS = ['glue:GetTable', 'glue:UpdateTable'] as const;

/**
 * S3 Tables actions its Iceberg REST endpoint checks to load a table (config, namespace, table, its metadata
 * location and files): what a reader of the pointer needs, without the commit's Update/Put.
 */
export const S3_TABLES_REST_READ_ACTIONS = [
  's3tables:GetTableBucket',
  's3tables:GetNamespace',
  's3tables:GetTable',
  's3tables:GetTableMetadataLocation',
  's3tables:GetTableData',
] as const;

/** S3 Tables actions on the table bucket itself (no namespace or table in their request context). */
const S3_TABLES_BUCKET_ACTIONS = new Set(['s3tables:GetTableBucket']);
/** S3 Tables actions on a namespace: their request context names it (`s3tables:namespace`), not a table. */
const S3_TABLES_NAMESPACE_ACTIONS = new Set(['s3tables:GetNamespace']);

/**
 * The S3 Tables grants of one configured table: `actions` split by what S3 Tables authorises them on — the table
 * bucket (`<warehouse>`), the namespace (`<warehouse>`, `s3tables:namespace`), and the table (`<warehouse>/table/*`
 * with `s3tables:namespace` and `s3tables:tableName`: a table ARN ends with the table's id, unknown at synth and
 * changed by a re-create, so the name conditions are how IAM names one table, as AWS's own examples do).
 */
export function s3TablesStatements(
  warehouse: string,
  namespace: string,
  table: string,
  actions: readonly string[],
): iam.PolicyStatement[] {
  const bucket = actions.filter((a) => S3_TABLES_BUCKET_ACTIONS.has(a));
  const inNamespace = actions.filter((a) => S3_TABLES_NAMESPACE_ACTIONS.has(a));
  const onTable = actions.filter(
    (a) => !S3_TABLES_BUCKET_ACTIONS.has(a) && !S3_TABLES_NAMESPACE_ACTIONS.has(a),
  );
  return [
    ...(bucket.length === 0 ? [] : [new iam.PolicyStatement({ actions: bucket, resources: [warehouse] })]),
    ...(inNamespace.length === 0
      ? []
      : [
          new iam.PolicyStatement({
            actions: inNamespace,
            resources: [warehouse],
            conditions: { StringEquals: { 's3tables:namespace': namespace } },
          }),
        ]),
    ...(onTable.length === 0
      ? []
      : [
          new iam.PolicyStatement({
            actions: onTable,
            resources: [`${warehouse}/table/*`],
            conditions: { StringEquals: { 's3tables:namespace': namespace, 's3tables:tableName': table } },
          }),
        ]),
  ];
}

/** Why an S3 Tables catalog must name its `warehouse` (shown by the props validation and the grant itself). */
export const S3_TABLES_WAREHOUSE_REQUIRED =
  'an S3 Tables catalog (auth signingName "s3tables") needs `catalog.warehouse`, the table bucket\'s ARN (arn:aws:s3tables:<region>:<account>:bucket/<name>, as `aws s3tables list-table-buckets` prints it): the grants name that table bucket and this one table in it, never every table bucket of the account';

/** A table bucket ARN, in any partition. */
const S3_TABLES_BUCKET_ARN =
  /^arn:aws[a-z-]*:s3tables:([a-z0-9-]+):\d{12}:bucket\/[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/;

/**
 * The props problems of S3 Tables catalogs (none for other tables): a missing or malformed `warehouse`, or one in
 * another region than the catalog's signing region (S3 Tables' endpoint serves its own region's table buckets).
 */
export function s3TablesCatalogProblems(tables: readonly Record<string, unknown>[]): string[] {
  const problems: string[] = [];
  for (const t of tables) {
    const catalog = t.catalog as Partial<RestCatalogSetting> | undefined;
    if (catalog?.type !== 'rest' || catalog.auth?.type !== 'sigv4' || catalog.auth.signingName !== 's3tables')
      continue;
    const name = String(t.name);
    const warehouse = catalog.warehouse;
    if (typeof warehouse !== 'string') {
      problems.push(`table ${name}: ${S3_TABLES_WAREHOUSE_REQUIRED}.`);
      continue;
    }
    if (Token.isUnresolved(warehouse)) continue;
    const region = S3_TABLES_BUCKET_ARN.exec(warehouse)?.[1];
    if (region === undefined) {
      problems.push(
        `table ${name}: \`catalog.warehouse\` is ${JSON.stringify(warehouse)}; give the table bucket's ARN, arn:aws:s3tables:<region>:<account>:bucket/<name>.`,
      );
    } else if (region !== catalog.auth.region) {
      problems.push(
        `table ${name}: \`catalog.warehouse\` is a table bucket in ${region}, but the catalog signs for ${catalog.auth.region}; S3 Tables' endpoint serves its own region's table buckets: make them agree.`,
      );
    }
  }
  return problems;
}

/** Glue actions that load one table: the pointer (`metadata_location`) only. */
export const GLUE_READ_ACTIONS = ['glue:GetTable'] as const;

/**
 * What a function does with the catalogs: `commit` (load and swap the pointer: the steps that plan, commit and
 * settle, and the sweep) or `read` (load only: the profiler, which follows the pointer and never moves it).
 */
export type CatalogAccess = 'commit' | 'read';

interface TableWithCatalog {
  readonly name: string;
  readonly catalog?: IcebergCatalogSetting | undefined;
}

/** An Iceberg table's place in S3 and catalog, for the metadata-write grant. */
interface IcebergTableLocation extends TableWithCatalog {
  readonly bucketName: string;
  readonly prefix: string;
  readonly format?: string | undefined;
}

/**
 * `s3:PutObject` on `metadata/` of every Iceberg table whose new metadata file the writer itself puts (the path
 * catalog's `v<N+1>.metadata.json`, Glue's `<N+1>-<uuid>.metadata.json`; a REST catalog writes its own), or
 * undefined when there is none. For a function that otherwise only deletes under the table prefixes (the vacuum):
 * expire_snapshots commits new metadata, and nothing else of the table is ever written by it.
 */
export function icebergMetadataWriteStatement(
  tables: readonly IcebergTableLocation[],
): iam.PolicyStatement | undefined {
  const resources = [
    ...new Set(
      tables
        .filter((t) => t.format === 'iceberg' && t.catalog?.type !== 'rest')
        .map((t) => `arn:aws:s3:::${t.bucketName}/${normalizeTablePrefix(t.prefix)}metadata/*`),
    ),
  ];
  return resources.length === 0
    ? undefined
    : new iam.PolicyStatement({ actions: ['s3:PutObject'], resources });
}

/** The Glue catalog, database and table ARNs of `database.table` in `account`/`region`. */
function glueArns(
  scope: IConstruct,
  region: string,
  account: string,
  database: string,
  table: string,
): string[] {
  const stack = Stack.of(scope);
  const arn = (resource: string) =>
    stack.formatArn({ service: 'glue', region, account, resource, resourceName: undefined });
  return [arn('catalog'), arn(`database/${database}`), arn(`table/${database}/${table}`)];
}

/**
 * Read on the one secret or SSM parameter an OAuth2 REST catalog's token comes from (none when it is an environment
 * variable): `secretsmanager:GetSecretValue` on the secret's full ARN, `ssm:GetParameter` on the parameter's ARN (a
 * name is placed in the stack's region and account). A SecureString under the default `aws/ssm` key needs no KMS
 * grant; one under a customer key needs `kms:Decrypt` on it, granted by whoever owns that key.
 */
function restTokenStatement(
  stack: Stack,
  auth: { readonly tokenSecretArn?: string | undefined; readonly tokenParameter?: string | undefined },
): iam.PolicyStatement | undefined {
  if (auth.tokenSecretArn !== undefined)
    return new iam.PolicyStatement({
      actions: ['secretsmanager:GetSecretValue'],
      resources: [auth.tokenSecretArn],
    });
  const parameter = auth.tokenParameter;
  if (parameter === undefined) return undefined;
  const resource = parameter.startsWith('arn:')
    ? parameter
    : stack.formatArn({
        service: 'ssm',
        resource: 'parameter',
        resourceName: parameter.replace(/^\//, ''),
      });
  return new iam.PolicyStatement({ actions: ['ssm:GetParameter'], resources: [resource] });
}

/**
 * The statements for every table configured with a Glue or SigV4-signed REST catalog (none otherwise), for a
 * function that commits through them or (`access: 'read'`) only loads their current metadata.
 */
export function icebergCatalogStatements(
  scope: IConstruct,
  tables: readonly TableWithCatalog[],
  access: CatalogAccess = 'commit',
): iam.PolicyStatement[] {
  const stack = Stack.of(scope);
  const glueActions = access === 'commit' ? GLUE_COMMIT_ACTIONS : GLUE_READ_ACTIONS;
  const s3TablesActions = access === 'commit' ? S3_TABLES_REST_ACTIONS : S3_TABLES_REST_READ_ACTIONS;
  const statements: iam.PolicyStatement[] = [];
  for (const t of tables) {
    const c = t.catalog;
    if (c === undefined || c.type === 'path') continue;
    if (c.type === 'glue') {
      statements.push(
        new iam.PolicyStatement({
          actions: [...glueActions],
          resources: glueArns(
            scope,
            c.region ?? stack.region,
            c.catalogId ?? stack.account,
            c.database,
            c.table,
          ),
        }),
      );
      continue;
    }
    if (c.auth.type === 'oauth2') {
      const token = restTokenStatement(stack, c.auth);
      if (token !== undefined) statements.push(token);
      continue;
    }
    if (c.auth.type !== 'sigv4') continue;
    if (c.auth.signingName === 's3tables') {
      if (c.warehouse === undefined) {
        throw new Error(`table ${t.name}: ${S3_TABLES_WAREHOUSE_REQUIRED}`);
      }
      statements.push(...s3TablesStatements(c.warehouse, c.namespace, c.table, s3TablesActions));
    } else if (c.auth.signingName === 'glue') {
      statements.push(
        new iam.PolicyStatement({
          actions: [...glueActions, 'glue:GetCatalog', 'glue:GetDatabase'],
          resources: glueArns(scope, c.auth.region, stack.account, c.namespace, c.table),
        }),
      );
    }
  }
  return statements;
}
