// The DynamoDB access of the functions that commit or settle Delta tables coordinated through a DynamoDB commit
// table (`deltaLogStore: { type: "dynamodb" }`): the table exists already (the Spark writers' own), so it is
// named, not created, and only the functions that may write a Delta commit get the protocol's four actions on it.
import { Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type { IConstruct } from 'constructs';
import type { DeltaLogStoreSetting } from '../functions/core/formats/delta/coordination.js';

/** A DynamoDB commit table some Delta table is configured with. */
export interface DeltaLogTableRef {
  readonly tableName: string;
  /** @default the stack's region (the functions' own, which their DynamoDB client uses) */
  readonly region?: string;
}

/**
 * What Spark's S3DynamoDBLogStore protocol does (functions/adapters/dynamodb-delta-log-store.ts): GetItem (the
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
  if (refs.length === 0) return undefined;
  const stack = Stack.of(scope);
  return new iam.PolicyStatement({
    actions: [...DELTA_LOG_ACTIONS],
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
