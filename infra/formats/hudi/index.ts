// What Apache Hudi tables (`format: "hudi"`) need from the construct, beyond the shared grants: the profiler reads
// their timeline (`.hoodie/`: completed instants, not data-file events, change the statistics); the compact step,
// which writes the clustering plan before its rewrite, writes and deletes under `.hoodie/` (instant files, the
// storage lock's file; the committing steps already may under the whole table prefix); the vacuum, for tables that
// opt in to its cleaning (`hudiCleaner`), writes their clean instants there too; and every function that
// clusters, commits or settles a table whose `hudiLock` is DynamoDB's gets that lock table's item actions.
// A deployment without Hudi tables gets none of this.
import { Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type { IConstruct } from 'constructs';
import { kmsViaS3Statement, s3EncryptionContexts } from '../../kms-access.js';
import { listStatements, normalizeTablePrefix, type TableLocation } from '../../s3-access.js';
import { COMMITTING_FUNCTIONS, type DeployedTable, type FormatInfra, present } from '../format-infra.js';
import type { HudiTableProps } from './props.js';

export type { HudiTableProps } from './props.js';

/** What `DynamoDBBasedLockProvider`'s client does on its table: read, conditional put, heartbeat, release. */
export const HUDI_DYNAMODB_LOCK_ACTIONS = [
  'dynamodb:GetItem',
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:DeleteItem',
] as const;

function timelineArns(tables: readonly TableLocation[]): string[] {
  return [
    ...new Set(tables.map((t) => `arn:aws:s3:::${t.bucketName}/${normalizeTablePrefix(t.prefix)}.hoodie/*`)),
  ];
}

/** The profiler's reads of the tables' timelines (and listing them), decrypting with the tables' keys. */
function timelineReadStatements(
  tables: readonly TableLocation[],
  keys: readonly kms.IKey[],
): iam.PolicyStatement[] {
  if (tables.length === 0) return [];
  const arns = timelineArns(tables);
  return present(
    new iam.PolicyStatement({ actions: ['s3:GetObject'], resources: arns }),
    ...listStatements(tables),
    kmsViaS3Statement(keys, ['kms:Decrypt'], s3EncryptionContexts(tables, arns)),
  );
}

/** The compact step's writes under `.hoodie/`: the clustering plan and inflight, the storage lock's file. */
function timelineWriteStatements(
  tables: readonly TableLocation[],
  keys: readonly kms.IKey[],
): iam.PolicyStatement[] {
  if (tables.length === 0) return [];
  const arns = timelineArns(tables);
  return present(
    new iam.PolicyStatement({ actions: ['s3:PutObject', 's3:DeleteObject'], resources: arns }),
    kmsViaS3Statement(keys, ['kms:GenerateDataKey', 'kms:Decrypt'], s3EncryptionContexts(tables, arns)),
  );
}

/** The DynamoDB lock tables of Hudi tables declaring `hudiLock: { provider: "dynamodb" }`, or undefined. */
function lockStatement(scope: IConstruct, tables: readonly DeployedTable[]): iam.PolicyStatement | undefined {
  const stack = Stack.of(scope);
  const arns = new Set<string>();
  for (const t of tables) {
    const lock = t.hudiLock;
    if (t.format !== 'hudi' || lock?.provider !== 'dynamodb') continue;
    arns.add(
      stack.formatArn({
        service: 'dynamodb',
        resource: 'table',
        resourceName: lock.table,
        ...(lock.region === undefined ? {} : { region: lock.region }),
      }),
    );
  }
  if (arns.size === 0) return undefined;
  return new iam.PolicyStatement({ actions: [...HUDI_DYNAMODB_LOCK_ACTIONS], resources: [...arns] });
}

/** Apache Hudi's contribution to the construct. */
export const hudiInfra: FormatInfra<Record<never, never>, HudiTableProps> = {
  format: 'hudi',
  words: { vacuumRemoves: 'opted-in Hudi tables’ superseded file slices' },
  grants(context) {
    const hudiTables = context.tables.filter((t) => t.format === 'hudi');
    if (hudiTables.length === 0) return [];
    const keys = context.keysOf(hudiTables);
    return [
      { stage: 'profiler', to: ['profiler'], statements: timelineReadStatements(hudiTables, keys) },
      { stage: 'log', to: ['compact'], statements: timelineWriteStatements(hudiTables, keys) },
      // Tables opting in to our cleaning (hudiCleaner): the vacuum writes their clean instants under `.hoodie/`.
      {
        stage: 'log',
        to: ['vacuum'],
        statements: timelineWriteStatements(
          hudiTables.filter((t) => t.hudiCleaner !== undefined),
          keys,
        ),
      },
      {
        stage: 'log',
        to: ['compact', ...COMMITTING_FUNCTIONS],
        statements: present(lockStatement(context.scope, hudiTables)),
      },
    ];
  },
};
