// The DynamoDB access of the functions that commit, settle or vacuum Delta tables coordinated through a DynamoDB
// commit table (`deltaLogStore: { type: "dynamodb" }`): the table exists already (the Spark writers' own), so it is
// named, not created, and only the functions that may write a Delta commit (or finish one, as VACUUM does before
// reading the log) get the protocol's four actions on it. A table declared `s3-conditional` with
// `checkDynamoDbTable` only reads that table (Query), to refuse the table when it holds entries of it.
//
// Part of Delta's infra module (./index.ts grants these); the construct reaches it only through the registry
// (../index.ts).
import { Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type { IConstruct } from 'constructs';
import type { DeltaLogStoreSetting } from '../../../functions/core/formats/delta/coordination.js';

/** A DynamoDB commit table some Delta table is configured with. */
export interface DeltaLogTableRef {
  readonly tableName: string;
  /** The config requires it; @default the stack's region, for refs built by hand */
  readonly region?: string;
}

/**
 * What Spark's S3DynamoDBLogStore protocol does (functions/adapters/formats/delta/dynamodb-log-store.ts): GetItem (the
 * previous version's entry), PutItem (the conditional put that decides a version's winner), UpdateItem (mark an
 * entry complete), Query (the latest entry, finished before reading the log). Nothing creates, scans or deletes.
 */
export const DELTA_LOG_ACTIONS = [
  'dynamodb:GetItem',
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:Query',
] as const;

/** The distinct DynamoDB commit tables of `tables`, in first-seen order; [] when none coordinates that way. */
export function deltaLogTablesOf(
  tables: readonly { readonly deltaLogStore?: DeltaLogStoreSetting | undefined }[],
): DeltaLogTableRef[] {
  const seen = new Map<string, DeltaLogTableRef>();
  for (const t of tables) {
    const setting = t.deltaLogStore;
    if (setting?.type !== 'dynamodb') continue;
    const ref = {
      tableName: setting.tableName,
      ...(setting.region === undefined ? {} : { region: setting.region }),
    };
    seen.set(`${ref.region ?? ''}/${ref.tableName}`, ref);
  }
  return [...seen.values()];
}

/**
 * The statement granting {@link DELTA_LOG_ACTIONS} on `refs` (`arn:<partition>:dynamodb:<region>:<account>:table/
 * <name>`; the stack's region where a ref names none), or undefined when there are none, so a deployment without
 * DynamoDB-coordinated Delta tables gets no statement at all.
 */
export function deltaLogStatement(
  scope: IConstruct,
  refs: readonly DeltaLogTableRef[],
): iam.PolicyStatement | undefined {
  return tableStatement(scope, [...DELTA_LOG_ACTIONS], refs);
}

/** The distinct DynamoDB tables Delta tables declared `s3-conditional` check for entries (`checkDynamoDbTable`). */
export function deltaCheckedTablesOf(
  tables: readonly { readonly deltaLogStore?: DeltaLogStoreSetting | undefined }[],
): DeltaLogTableRef[] {
  const seen = new Map<string, DeltaLogTableRef>();
  for (const t of tables) {
    const setting = t.deltaLogStore;
    if (setting?.type !== 's3-conditional' || setting.checkDynamoDbTable === undefined) continue;
    const { tableName, region } = setting.checkDynamoDbTable;
    seen.set(`${region}/${tableName}`, { tableName, region });
  }
  return [...seen.values()];
}

/** Query on the checked tables (read only: nothing is ever written to a table another coordination owns). */
export function deltaCheckStatement(
  scope: IConstruct,
  refs: readonly DeltaLogTableRef[],
): iam.PolicyStatement | undefined {
  return tableStatement(scope, ['dynamodb:Query'], refs);
}

/**
 * `s3:PutObject` on the `_delta_log/` of the Delta tables coordinated through DynamoDB: VACUUM finishes an
 * incomplete commit entry (copies its temp file to `<version>.json`, conditionally) before it reads the log, as
 * Spark's VACUUM does. Nothing else of those tables, and no other table's log.
 */
export function deltaLogFinishStatement(
  tables: readonly {
    readonly bucketName: string;
    readonly prefix: string;
    readonly deltaLogStore?: DeltaLogStoreSetting | undefined;
  }[],
): iam.PolicyStatement | undefined {
  const arns = tables
    .filter((t) => t.deltaLogStore?.type === 'dynamodb')
    .map((t) => {
      const root = t.prefix.replace(/^\/+|\/+$/g, '');
      return `arn:aws:s3:::${t.bucketName}/${root === '' ? '' : `${root}/`}_delta_log/*`;
    });
  if (arns.length === 0) return undefined;
  return new iam.PolicyStatement({ actions: ['s3:PutObject'], resources: [...new Set(arns)] });
}

/** `actions` on the DynamoDB tables `refs` name (the stack's region where a ref names none); none without refs. */
function tableStatement(
  scope: IConstruct,
  actions: string[],
  refs: readonly DeltaLogTableRef[],
): iam.PolicyStatement | undefined {
  if (refs.length === 0) return undefined;
  const stack = Stack.of(scope);
  return new iam.PolicyStatement({
    actions,
    resources: refs.map((ref) =>
      stack.formatArn({
        service: 'dynamodb',
        resource: 'table',
        resourceName: ref.tableName,
        ...(ref.region === undefined ? {} : { region: ref.region }),
      }),
    ),
  });
}
