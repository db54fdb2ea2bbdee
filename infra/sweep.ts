// The sweep, created in the LakeCompactor's own scope (construct ids unchanged): one function, run every
// 15 minutes (due partitions, stuck leases, settle retries) and weekly (reconcile), each with a dead-letter queue.
import { Duration } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import type { TriggerEnvironment } from './function-config.js';
import { grantKmsViaS3, s3EncryptionContexts } from './kms-access.js';
import type { LakeCompactorSweepProps } from './lake-compactor-props.js';
import { rateMinutes, scheduledTargetOptions, scheduleOf } from './maintenance.js';
import { projectFunction } from './node-function.js';
import {
  KMS_OBJECT_ACTIONS,
  listStatements,
  publisherStatements,
  type TableLocation,
  versioningStatements,
} from './s3-access.js';
import { grantStateTableAccess } from './state-table-access.js';
import type { TableConfigDelivery } from './table-config-file.js';

/** What the sweep is given. */
export interface SweepProps {
  /** The single table: partitions, leases and journals. */
  readonly stateTable: dynamodb.ITable;
  /** Where the tables live: reconcile lists them, settling touches them like the commit step. */
  readonly tables: readonly TableLocation[];
  readonly tableConfig: TableConfigDelivery;
  readonly memorySize: number;
  /** The sweep's schedules, its own resolved (see `scheduleOf`). */
  readonly schedules: LakeCompactorSweepProps & { schedule: events.Schedule };
  /** TRIGGERS_DRY_RUN and RUN_CAPS, shared with the profiler. */
  readonly triggers: TriggerEnvironment;
  /** KMS keys of the tables' objects. */
  readonly encryptionKeys: readonly kms.IKey[];
  /** The deployment's work root (see `LakeCompactorProps.workRoot`). */
  readonly workRoot: string;
  /** Where EventBridge puts a scheduled event it could not deliver after its retries. */
  readonly deadLetterQueue: sqs.IQueue;
}

/** The handler's default for SETTLE_RETRY_MINUTES: the default sweep period. */
const DEFAULT_SETTLE_RETRY_MINUTES = 15;

/**
 * A needs-attention partition's settle is retried one sweep period after it got stuck, then after two, four, and
 * every four periods (handlers/sweep.ts): the period of a `rate(...)` sweep, at most a day. A cron sweep's spacing
 * cannot be read off it: the default. Only a period other than the default is set (environments stay small).
 */
function settleRetryEnvironment(schedule: events.Schedule): Record<string, string> {
  const minutes = Math.min(24 * 60, rateMinutes(schedule) ?? DEFAULT_SETTLE_RETRY_MINUTES);
  return minutes === DEFAULT_SETTLE_RETRY_MINUTES ? {} : { SETTLE_RETRY_MINUTES: String(minutes) };
}

/** The sweep Lambda, run every 15 minutes (catch-up, leases) and weekly in reconcile mode. */
export function addSweep(scope: Construct, props: SweepProps): nodejs.NodejsFunction {
  const { stateTable, tables, tableConfig, schedules, workRoot, deadLetterQueue } = props;
  const sweep = projectFunction(scope, 'Sweep', 'sweep.ts', {
    description: 'Starts partitions whose quiet window passed, releases stuck leases, reconciles counts',
    memorySize: props.memorySize,
    timeout: Duration.minutes(10),
    environment: {
      TABLE_NAME: stateTable.tableName,
      ...tableConfig.environment,
      ...props.triggers,
      WORK_ROOT: workRoot,
      ...settleRetryEnvironment(schedules.schedule),
    },
    codeFiles: tableConfig.codeFiles,
    // Settling a dead run's delete-rebuild undo re-creates inputs with the Parquet engine (handlers/sweep.ts).
    parquetWasm: true,
  });
  grantStateTableAccess(stateTable, sweep, 'sweep');
  // Reconcile lists the tables' prefixes. Before releasing the lease of a run that died, the sweep settles
  // the groups it left through the commit protocol (workflow/settle.ts): the commit step's object access.
  for (const statement of [...listStatements(tables), ...versioningStatements(tables)]) {
    sweep.addToRolePolicy(statement);
  }
  const publisher = publisherStatements(tables, workRoot);
  for (const statement of publisher) sweep.addToRolePolicy(new iam.PolicyStatement(statement));
  const objects = publisher.flatMap((s) => s.resources);
  grantKmsViaS3(sweep, props.encryptionKeys, KMS_OBJECT_ACTIONS, s3EncryptionContexts(tables, objects));
  // What settling a group takes beyond this (a table format's commit coordination) is added by the construct
  // right after, at the formats' `sweep` stage (formats/format-infra.ts).
  new events.Rule(scope, 'SweepSchedule', {
    description: 'lake-compactor sweep: due partitions and stuck leases',
    schedule: schedules.schedule,
    targets: [
      new targets.LambdaFunction(sweep, {
        event: events.RuleTargetInput.fromObject({ mode: 'sweep' }),
        ...scheduledTargetOptions(deadLetterQueue),
      }),
    ],
  });
  new events.Rule(scope, 'ReconcileSchedule', {
    description: 'lake-compactor reconcile: correct counts drifted through lost S3 events',
    schedule: scheduleOf(
      schedules.reconcileSchedule,
      events.Schedule.cron({ weekDay: 'SUN', hour: '3', minute: '0' }),
    ),
    targets: [
      new targets.LambdaFunction(sweep, {
        event: events.RuleTargetInput.fromObject({ mode: 'reconcile' }),
        ...scheduledTargetOptions(deadLetterQueue),
      }),
    ],
  });
  return sweep;
}
