// What one table's work may touch in its bucket — the table's prefix and the deployment's work root — and the STS
// session policy that says exactly that, so a function serving one table can never act on another table's objects.
//
// Why per table: one function serves every configured table, so its role covers them all. A logic bug or crafted
// metadata that names another table's key (a path escaping its root on a dot-normalising endpoint, a forged
// journal entry) would be authorised by the role. Each invocation, once it knows its table, uses credentials whose
// session policy allows only that table's keys (intersected by IAM with the role's own per-step grants), and the
// same scope is checked in process before any request (ScopedObjectStore), also where no STS exists (locally).
import { CompactorError, InvalidInputError } from '../errors.js';

/** Where one invocation's object requests may go: one table's keys and the work root, in one bucket. */
export interface TableScope {
  readonly bucket: string;
  /**
   * The table's name, or undefined for the work root alone (the maintenance steps that judge `plans/`, `trash/`,
   * `staging/` and the journal of every table at once, and touch no table object).
   */
  readonly table?: string;
  /** The table root as a key prefix: '' (the whole bucket) or ending with `/`. Undefined with `table`. */
  readonly tablePrefix?: string;
  /** The deployment's work root (ends with `/`), or undefined when the function keeps nothing there. */
  readonly workRoot?: string;
  /** An S3 Tables table (its data is authorised by s3tables:GetTableData/PutTableData on the table, by name). */
  readonly s3Tables?: { readonly namespace: string; readonly table: string };
}

/** The table-config fields a scope is made of. */
export interface ScopedTable {
  readonly name: string;
  readonly bucket?: string | undefined;
  /** Without leading or trailing `/`; '' = the bucket root. */
  readonly prefix: string;
  readonly catalog?: unknown;
}

/** `events` → `events/`; '' stays ''. */
export function tablePrefixOf(prefix: string): string {
  const trimmed = prefix.replace(/^\/+/, '').replace(/\/+$/, '');
  return trimmed === '' ? '' : `${trimmed}/`;
}

/** The S3 Tables namespace and table of a REST catalog signed for `s3tables`, if the catalog is one. */
function s3TablesOf(catalog: unknown): TableScope['s3Tables'] {
  const c = catalog as
    | { type?: string; namespace?: string; table?: string; auth?: { type?: string; signingName?: string } }
    | undefined;
  if (c?.type !== 'rest' || c.auth?.type !== 'sigv4' || c.auth.signingName !== 's3tables') return undefined;
  if (typeof c.namespace !== 'string' || typeof c.table !== 'string') return undefined;
  return { namespace: c.namespace, table: c.table };
}

/** The scope of `table`'s work in its bucket (`bucket` when the config names none: the deployment's own). */
export function tableScopeOf(table: ScopedTable, bucket: string, workRoot: string | undefined): TableScope {
  const s3Tables = s3TablesOf(table.catalog);
  return {
    bucket,
    table: table.name,
    tablePrefix: tablePrefixOf(table.prefix),
    ...(workRoot === undefined ? {} : { workRoot }),
    ...(s3Tables === undefined ? {} : { s3Tables }),
  };
}

/** The scope of work that touches no table: the work root of `bucket` alone. */
export function workRootScopeOf(bucket: string, workRoot: string): TableScope {
  return { bucket, workRoot };
}

/** A stable identity of a scope (cache key): bucket, table, prefix, work root. */
export function scopeKey(scope: TableScope): string {
  return JSON.stringify([
    scope.bucket,
    scope.table ?? null,
    scope.tablePrefix ?? null,
    scope.workRoot ?? null,
  ]);
}

/** True when an object request on `key` stays inside `scope` (lists are bucket-level and never checked). */
export function keyInScope(scope: TableScope, key: string): boolean {
  if (scope.tablePrefix !== undefined && key.startsWith(scope.tablePrefix)) return true;
  return scope.workRoot !== undefined && key.startsWith(scope.workRoot);
}

/** How the scope reads in messages: `table events (lake/events/) and the work root lake/_lake-compactor/`. */
export function describeScope(scope: TableScope): string {
  const parts = [
    ...(scope.tablePrefix === undefined
      ? []
      : [`table ${scope.table} (${scope.bucket}/${scope.tablePrefix})`]),
    ...(scope.workRoot === undefined ? [] : [`the work root ${scope.bucket}/${scope.workRoot}`]),
  ];
  return parts.join(' and ') || `nothing of ${scope.bucket}`;
}

/**
 * An object request outside the table the invocation serves: refused before it is sent (and, on AWS, by the
 * session policy). Never retried: the key came from a bug or from metadata naming another table's object.
 */
export class OutsideTableScopeError extends CompactorError {
  constructor(
    readonly key: string,
    readonly operation: string,
    readonly scope: string,
  ) {
    super(
      `Refused S3 ${operation} of ${key}: it is outside ${scope}, all this invocation may touch. Nothing was sent. A key outside the table's root comes from a bug or from table metadata naming another table's object; check the table's metadata and report it`,
    );
  }
}

/** Object actions any step of the deployment uses (each role grants its own subset; IAM intersects). */
export const SESSION_OBJECT_ACTIONS = [
  's3:GetObject',
  's3:GetObjectVersion',
  's3:PutObject',
  's3:DeleteObject',
  's3:DeleteObjectVersion',
  's3:AbortMultipartUpload',
] as const;

/** Bucket actions the steps use (listing without an `s3:prefix` condition: see infra/s3-access.ts). */
export const SESSION_BUCKET_ACTIONS = [
  's3:ListBucket',
  's3:ListBucketMultipartUploads',
  's3:GetBucketVersioning',
] as const;

/** STS refuses an inline session policy longer than this (plain text, whitespace included). */
export const SESSION_POLICY_MAX_CHARS = 2048;

/** Characters IAM reads as wildcards or policy variables in a resource: a prefix with one would widen the grant. */
const IAM_SPECIAL = /[*?]|\$\{/;

/**
 * The session policy of `scope` (compact JSON): the object actions on the table's keys and the work root, the
 * bucket actions on its bucket, the keys of SSE-KMS only through S3 (`region`'s endpoint) for those objects or the
 * bucket (Bucket Key), and an S3 Tables table's data by namespace and name. Everything else is denied: the session
 * may do the intersection of this and the role's own policy, so each step keeps its own actions.
 * @throws InvalidInputError when a prefix holds an IAM wildcard or variable (the policy would cover more than the
 *   table), or the policy exceeds STS's {@link SESSION_POLICY_MAX_CHARS}: rename the prefix or the work root.
 */
export function sessionPolicyFor(
  scope: TableScope,
  environment: { readonly region: string; readonly partition?: string },
): string {
  const partition = environment.partition ?? 'aws';
  const prefixes = [scope.tablePrefix, scope.workRoot].filter((p): p is string => p !== undefined);
  for (const prefix of [scope.bucket, ...prefixes]) {
    if (IAM_SPECIAL.test(prefix)) {
      throw new InvalidInputError(
        `The key prefix ${JSON.stringify(prefix)} of ${describeScope(scope)} holds "*", "?" or "\${", which IAM reads as a wildcard or variable: per-table credentials would cover more than the table. Rename the prefix`,
      );
    }
  }
  const bucketArn = `arn:${partition}:s3:::${scope.bucket}`;
  const objects = [...new Set(prefixes.map((p) => `${bucketArn}/${p}*`))];
  const statements: Record<string, unknown>[] = [
    ...(objects.length === 0
      ? []
      : [{ Sid: 'Objects', Effect: 'Allow', Action: [...SESSION_OBJECT_ACTIONS], Resource: objects }]),
    { Sid: 'Bucket', Effect: 'Allow', Action: [...SESSION_BUCKET_ACTIONS], Resource: bucketArn },
    ...(objects.length === 0
      ? []
      : [
          {
            Sid: 'KeysViaS3',
            Effect: 'Allow',
            Action: ['kms:Decrypt', 'kms:GenerateDataKey'],
            Resource: '*',
            Condition: {
              StringEquals: { 'kms:ViaService': `s3.${environment.region}.amazonaws.com` },
              StringLike: { 'kms:EncryptionContext:aws:s3:arn': [bucketArn, ...objects] },
            },
          },
        ]),
    ...(scope.s3Tables === undefined
      ? []
      : [
          {
            Sid: 'TableData',
            Effect: 'Allow',
            Action: ['s3tables:GetTableData', 's3tables:PutTableData'],
            Resource: '*',
            Condition: {
              StringEquals: {
                's3tables:namespace': scope.s3Tables.namespace,
                's3tables:tableName': scope.s3Tables.table,
              },
            },
          },
        ]),
  ];
  const policy = JSON.stringify({ Version: '2012-10-17', Statement: statements });
  if (policy.length > SESSION_POLICY_MAX_CHARS) {
    throw new InvalidInputError(
      `The session policy of ${describeScope(scope)} is ${policy.length} characters; STS takes at most ${SESSION_POLICY_MAX_CHARS}. Shorten the table prefix or the work root`,
    );
  }
  return policy;
}
