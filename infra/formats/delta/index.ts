// What Delta Lake tables (`format: "delta"`) need from the construct, beyond the shared grants: the profiler reads
// their `_delta_log/` (their commits, not their data-file events, change the statistics), and the functions that
// commit, settle or vacuum them get the commit coordination their `deltaLogStore` declares — the DynamoDB commit
// table of `dynamodb` (its statements in ./log-access.ts), Query on the table an `s3-conditional` one checks.
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import { vacuumInputSchema } from '../../../functions/core/maintenance/vacuum.js';
import { kmsViaS3Statement, s3EncryptionContexts } from '../../kms-access.js';
import { listStatements, normalizeTablePrefix, type TableLocation } from '../../s3-access.js';
import { COMMITTING_FUNCTIONS, type FormatInfra, present } from '../format-infra.js';
import type { DeltaTableProps, DeltaVacuumProps } from './props.js';

export type { DeltaTableProps, DeltaVacuumProps } from './props.js';

import {
  type DeltaLogTableRef,
  deltaCheckedTablesOf,
  deltaCheckStatement,
  deltaLogFinishStatement,
  deltaLogStatement,
  deltaLogTablesOf,
} from './log-access.js';

/** What a standalone CompactionWorkflow takes for Delta tables. */
export interface DeltaWorkflowProps {
  /**
   * The DynamoDB commit tables of Delta tables configured with `deltaLogStore: { type: "dynamodb" }` (see
   * `deltaLogTablesOf`): the steps that commit or settle a group (plan, commit, rollback, finalize) may read and
   * write their commit entries.
   * @default [] — no Delta table coordinates through DynamoDB, and no step gets any access for it
   */
  readonly deltaLogTables?: readonly DeltaLogTableRef[];
}

/**
 * The profiler's reads of Delta tables' logs: GetObject on `_delta_log/`, ListBucket to find a checkpoint when it
 * re-derives a table, and decrypt with the tables' keys. Data files stay out of reach: it never reads them.
 * None when there is no Delta table.
 */
function logReadStatements(
  deltaTables: readonly TableLocation[],
  keys: readonly kms.IKey[],
): iam.PolicyStatement[] {
  if (deltaTables.length === 0) return [];
  const logs = [
    ...new Set(
      deltaTables.map((t) => `arn:aws:s3:::${t.bucketName}/${normalizeTablePrefix(t.prefix)}_delta_log/*`),
    ),
  ];
  return present(
    new iam.PolicyStatement({ actions: ['s3:GetObject'], resources: logs }),
    ...listStatements(deltaTables),
    kmsViaS3Statement(keys, ['kms:Decrypt'], s3EncryptionContexts(deltaTables, logs)),
  );
}

/** Delta Lake's contribution to the construct. */
export const deltaInfra: FormatInfra<DeltaWorkflowProps, DeltaTableProps, DeltaVacuumProps> = {
  format: 'delta',
  grants(context) {
    const { scope, tables } = context;
    const deltaTables = tables.filter((t) => t.format === 'delta');
    const deltaLog = deltaLogStatement(scope, deltaLogTablesOf(tables));
    return [
      {
        stage: 'profiler',
        to: ['profiler'],
        statements: logReadStatements(deltaTables, context.keysOf(deltaTables)),
      },
      // Settling a dead run's Delta group may commit it.
      { stage: 'sweep', to: ['sweep'], statements: present(deltaLog) },
      // A table coordinated through DynamoDB is vacuumed after its latest commit entry is finished (Spark's VACUUM
      // does the same through listFrom): the protocol's actions and the log's PutObject.
      { stage: 'log', to: ['vacuum'], statements: present(deltaLog, deltaLogFinishStatement(tables)) },
      // A table declared s3-conditional that checks a DynamoDB table for entries only queries it, wherever read.
      {
        stage: 'log',
        to: COMMITTING_FUNCTIONS,
        statements: present(deltaCheckStatement(scope, deltaCheckedTablesOf(tables))),
      },
    ];
  },
  workflow: {
    propsOf: (tables) => ({ deltaLogTables: deltaLogTablesOf(tables) }),
    // A group is committed (commit), and settled forward through the same commit (rollback, finalize, and plan
    // before it plans); plan also finishes another writer's incomplete entry before reading the log.
    grants: (scope, props) => [
      {
        to: ['plan', 'commit', 'rollback', 'finalize'],
        statements: present(deltaLogStatement(scope, props.deltaLogTables ?? [])),
      },
    ],
  },
  words: {
    vacuumRemoves: 'Delta tables’ expired files',
    coordinationRefusal:
      "a Delta table declared dynamodb whose recent versions have no DynamoDB entry, or one declared s3-conditional with Spark S3DynamoDBLogStore temp files under _delta_log/.tmp/, entries in the checked DynamoDB table or Spark commits, or a commit inside a declared quiet window (fix the table's deltaLogStore, or stop the writer that bypasses it)",
  },
  vacuum: {
    // The vacuum function's own option for Delta tables (see the Delta format's maintenance), parsed the same way.
    shape: { deltaRetentionHours: vacuumInputSchema.shape.deltaRetentionHours },
    retentionProps: ['deltaRetentionHours'] satisfies (keyof DeltaVacuumProps)[],
    inputOf: (props) =>
      props.deltaRetentionHours === undefined ? {} : { deltaRetentionHours: props.deltaRetentionHours },
  },
};
