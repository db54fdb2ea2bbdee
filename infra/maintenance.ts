// The Maintenance construct: the vacuum and tiering Lambdas, each on its own EventBridge schedule whose
// Input carries an explicit dryRun flag, with log groups and grants scoped to the tables' keys.
import { Duration } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { DEFAULT_TABLE_FORMAT, type TableFormatName, tableFormat } from '../functions/core/formats/index.js';
import { MIN_RETENTION_HOURS } from '../functions/core/maintenance/vacuum.js';
import { DEFAULT_WORK_ROOT, workRootProblem } from '../functions/core/workflow/layout.js';
import { formatVacuumInputOf, formatVacuumRemovals } from './formats/index.js';
import { grantKmsViaS3, s3EncryptionContexts } from './kms-access.js';
import type { MaintenanceSchedulesProps } from './maintenance-props.js';
import { projectFunction } from './node-function.js';
import { maintenancePropsProblems } from './props-schema.js';
import {
  KMS_OBJECT_ACTIONS,
  listStatements,
  type TableLocation,
  tableObjectArns,
  workObjectArns,
} from './s3-access.js';
import { grantStateTableAccess } from './state-table-access.js';
import { tableConfigDelivery } from './table-config-file.js';

export type {
  MaintenanceScheduleProps,
  MaintenanceSchedulesProps,
  TieringScheduleProps,
  VacuumScheduleProps,
} from './maintenance-props.js';

/** One table's location and format, for scoping grants (`bucketName` may be the owned bucket's token). */
export interface MaintenanceTable extends TableLocation {
  /** @default 'parquet' (see `DEFAULT_TABLE_FORMAT`) */
  readonly format?: TableFormatName | undefined;
}

/**
 * The tables whose retired inputs vacuum deletes by version: those of a format that retires by version (its vacuum
 * rules say so: `VacuumRules.retiresByVersion`) in a bucket of `versionedBuckets` (their runs retire by
 * `delete-versioned`; elsewhere inputs go to trash or are rebuilt). A format whose log or snapshots remove its
 * inputs leaves them to the table's own VACUUM or snapshot expiry (test/infra/versioned-retirement.test.ts checks
 * the capability against each format's vacuum rules).
 */
export function versionRetiringTables(
  tables: readonly MaintenanceTable[],
  versionedBuckets: readonly string[],
): MaintenanceTable[] {
  return tables.filter(
    (t) =>
      tableFormat(t.format ?? DEFAULT_TABLE_FORMAT).vacuum.retiresByVersion &&
      versionedBuckets.includes(t.bucketName),
  );
}

export interface MaintenanceProps extends MaintenanceSchedulesProps {
  /** The single table (journal entries are read from it). */
  readonly stateTable: dynamodb.ITable;
  /** The TABLES JSON every function receives (as a file in its code, see `tableConfigDelivery`). */
  readonly tablesJson: string;
  /** Where the tables live; grants are scoped to these prefixes and the buckets' work root. */
  readonly tables: readonly MaintenanceTable[];
  /**
   * The deployment's work root in every bucket (see `LakeCompactorProps.workRoot`): the only work area vacuum
   * lists and judges, and where both functions keep their checkpoints. It reaches them as WORK_ROOT.
   * @default '_lake-compactor/'
   */
  readonly workRoot?: string;
  /**
   * Buckets whose runs retire inputs by a versioned delete (see `CompactionWorkflowProps.versionedBuckets`): vacuum
   * may delete object versions (`s3:DeleteObjectVersion`) under the prefixes of their Hive-style Parquet tables, and
   * nowhere else.
   * @default [] — vacuum deletes no object version (noncurrent versions expire by the bucket's lifecycle rules)
   */
  readonly versionedBuckets?: readonly string[];
  /**
   * KMS keys encrypting the data buckets (SSE-KMS); both functions may encrypt and decrypt with them.
   * @default [] — S3-managed keys, no grant needed
   */
  readonly encryptionKeys?: readonly kms.IKey[];
  /**
   * Where EventBridge puts a scheduled event it could not deliver to its function (after its retries).
   * @default none — such an event is dropped (the functions' error alarms still see failed runs)
   */
  readonly deadLetterQueue?: sqs.IQueue;
}

/** Vacuum and tiering, on schedules, runnable from the console with the inputs in `events/`. */
export class Maintenance extends Construct {
  public readonly vacuumFunction: nodejs.NodejsFunction;
  public readonly tieringFunction: nodejs.NodejsFunction;
  public readonly vacuumRule: events.Rule;
  public readonly tieringRule: events.Rule;
  /** The work root vacuum judges (see `MaintenanceProps.workRoot`). */
  public readonly workRoot: string;

  constructor(scope: Construct, id: string, props: MaintenanceProps) {
    super(scope, id);
    const vacuum = props.vacuum ?? {};
    const tiering = props.tiering ?? {};
    this.workRoot = props.workRoot ?? DEFAULT_WORK_ROOT;
    const problems = maintenancePropsProblems({ vacuum: props.vacuum, tiering: props.tiering });
    const workRootIssue = workRootProblem(this.workRoot);
    if (workRootIssue !== undefined) problems.push(`workRoot: ${workRootIssue}`);
    if (problems.length > 0) {
      throw new Error(`Maintenance: invalid props; fix every line:\n  - ${problems.join('\n  - ')}`);
    }
    const retentionHours = vacuum.retentionHours ?? MIN_RETENTION_HOURS;

    const tableConfig = tableConfigDelivery(props.tablesJson);
    const environment = {
      TABLE_NAME: props.stateTable.tableName,
      ...tableConfig.environment,
      WORK_ROOT: this.workRoot,
    };
    this.vacuumFunction = projectFunction(this, 'Vacuum', 'vacuum.ts', {
      description: vacuumDescription(),
      memorySize: 1024,
      timeout: Duration.minutes(15),
      environment,
      codeFiles: tableConfig.codeFiles,
    });
    this.tieringFunction = projectFunction(this, 'Tiering', 'tiering.ts', {
      description: "Moves cold partitions' files to colder storage classes by partition date",
      memorySize: 512,
      timeout: Duration.minutes(15),
      codeFiles: tableConfig.codeFiles,
      environment: {
        ...environment,
        ...(tiering.rules === undefined ? {} : { TIERING_RULES: JSON.stringify(tiering.rules) }),
        ...(tiering.tableRules === undefined
          ? {}
          : { TIERING_TABLE_RULES: JSON.stringify(tiering.tableRules) }),
      },
    });
    this.grantVacuum(props);
    this.grantTiering(props);
    // The keys only through S3, for the objects each function may touch (or their bucket's, with a Bucket Key).
    const keys = props.encryptionKeys ?? [];
    const contexts = (objects: string[]) => s3EncryptionContexts(props.tables, objects);
    const work = workObjectArns(props.tables, this.workRoot);
    const data = tableObjectArns(props.tables);
    const maintenance = workObjectArns(props.tables, this.workRoot, 'maintenance');
    grantKmsViaS3(this.vacuumFunction, keys, KMS_OBJECT_ACTIONS, contexts([...work, ...data]));
    grantKmsViaS3(this.tieringFunction, keys, KMS_OBJECT_ACTIONS, contexts([...data, ...maintenance]));

    this.vacuumRule = new events.Rule(this, 'VacuumSchedule', {
      description: 'lake-compactor vacuum: retired versions, trash, failed staging, writer debris',
      schedule: scheduleOf(vacuum.schedule, events.Schedule.cron({ hour: '4', minute: '0' })),
      enabled: vacuum.enabled ?? true,
      targets: [
        new targets.LambdaFunction(this.vacuumFunction, {
          event: events.RuleTargetInput.fromObject({
            dryRun: vacuum.dryRun ?? true,
            resume: true,
            retentionHours,
            ...formatVacuumInputOf(vacuum),
            ...(vacuum.allowRetentionBelowMinimum === true ? { allowRetentionBelowMinimum: true } : {}),
            debrisAgeHours: vacuum.debrisAgeHours ?? 72,
            abandonedAfterHours: vacuum.abandonedAfterHours ?? 24,
          }),
          ...scheduledTargetOptions(props.deadLetterQueue),
        }),
      ],
    });
    this.tieringRule = new events.Rule(this, 'TieringSchedule', {
      description: 'lake-compactor tiering: cold partitions to colder storage classes',
      schedule: scheduleOf(
        tiering.schedule,
        events.Schedule.cron({ weekDay: 'SUN', hour: '5', minute: '0' }),
      ),
      enabled: tiering.enabled ?? true,
      targets: [
        new targets.LambdaFunction(this.tieringFunction, {
          event: events.RuleTargetInput.fromObject({ dryRun: tiering.dryRun ?? true, resume: true }),
          ...scheduledTargetOptions(props.deadLetterQueue),
        }),
      ],
    });
  }

  /**
   * Vacuum reads journal entries (no DynamoDB writes), lists and HEADs, and deletes: current objects only
   * under the work root and the table prefixes, object versions only under the prefixes of the tables whose runs
   * retire by a versioned delete (that is where retired inputs live), and aborts unfinished uploads in both. Listing (objects and unfinished
   * uploads) is per bucket: see `listStatements` for why it carries no `s3:prefix` condition.
   */
  private grantVacuum(props: MaintenanceProps): void {
    const fn = this.vacuumFunction;
    grantStateTableAccess(props.stateTable, fn, 'vacuum');
    const work = workObjectArns(props.tables, this.workRoot);
    const data = tableObjectArns(props.tables);
    for (const statement of listStatements(props.tables, [
      's3:ListBucket',
      's3:ListBucketMultipartUploads',
    ])) {
      fn.addToRolePolicy(statement);
    }
    fn.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['s3:GetObject', 's3:DeleteObject', 's3:AbortMultipartUpload'],
        resources: [...work, ...data],
      }),
    );
    // Retired versions exist only where runs retire by a versioned delete: nowhere else may a version go.
    const versioned = versionRetiringTables(props.tables, props.versionedBuckets ?? []);
    if (versioned.length > 0) {
      fn.addToRolePolicy(
        new iam.PolicyStatement({
          actions: ['s3:DeleteObjectVersion'],
          resources: tableObjectArns(versioned),
        }),
      );
    }
    fn.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['s3:PutObject'],
        resources: workObjectArns(props.tables, this.workRoot, 'maintenance'),
      }),
    );
  }

  /** Tiering lists and copies each data object onto itself: read and write under the table prefixes only. */
  private grantTiering(props: MaintenanceProps): void {
    const fn = this.tieringFunction;
    for (const statement of listStatements(props.tables)) {
      fn.addToRolePolicy(statement);
    }
    fn.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['s3:GetObject', 's3:PutObject'],
        resources: tableObjectArns(props.tables),
      }),
    );
    fn.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['s3:GetObject', 's3:PutObject', 's3:DeleteObject'],
        resources: workObjectArns(props.tables, this.workRoot, 'maintenance'),
      }),
    );
  }
}

/** A schedule prop: an EventBridge expression string (from JSON config) or a Schedule, else `fallback`. */
export function scheduleOf(
  schedule: events.Schedule | string | undefined,
  fallback: events.Schedule,
): events.Schedule {
  if (schedule === undefined) return fallback;
  return typeof schedule === 'string' ? events.Schedule.expression(schedule) : schedule;
}

/**
 * Retry policy (and dead-letter queue) of a scheduled Lambda target. EventBridge retries an event it could
 * not hand to Lambda (throttled, function missing or not permitted) for up to an hour — by then the next
 * scheduled run of the sweep has come, and a daily one is better reported than retried for 24 h (the
 * default) — then puts it in `deadLetterQueue` with the rule and the error as message attributes.
 */
export function scheduledTargetOptions(
  deadLetterQueue: sqs.IQueue | undefined,
): Pick<targets.LambdaFunctionProps, 'deadLetterQueue' | 'retryAttempts' | 'maxEventAge'> {
  return {
    retryAttempts: 4,
    maxEventAge: Duration.hours(1),
    ...(deadLetterQueue === undefined ? {} : { deadLetterQueue }),
  };
}

/** Longest a CloudWatch alarm with one evaluation period may look back (7 days). */
const MAX_ALARM_PERIOD = Duration.days(7);

/**
 * How long without a run of a function on `schedule` means it stopped: two periods of a `rate`, so one late
 * or lost invocation is not an alarm; a day for a `cron` (its spacing cannot be read off the expression;
 * the sweep, the only schedule alarmed this way, should run at least daily to release stuck leases).
 */
export function stoppedAfter(schedule: events.Schedule): Duration {
  const minutes = rateMinutes(schedule);
  if (minutes === undefined) return Duration.days(1);
  return Duration.minutes(Math.min(2 * minutes, MAX_ALARM_PERIOD.toMinutes()));
}

/** The period of a `rate(...)` schedule in minutes; undefined for a `cron(...)`, whose spacing is not read off it. */
export function rateMinutes(schedule: events.Schedule): number | undefined {
  const rate = /^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$/.exec(schedule.expressionString);
  if (rate === null) return undefined;
  const amount = Number(rate[1]);
  const unit = rate[2] ?? 'minutes';
  return unit.startsWith('minute') ? amount : unit.startsWith('hour') ? amount * 60 : amount * 1440;
}

/** The vacuum function's description: the shared work, then what each format adds (`FormatInfra.words`). */
function vacuumDescription(): string {
  const removed = ['retired versions', 'trash', 'failed staging', 'writer debris', ...formatVacuumRemovals()];
  return `Deletes ${removed.slice(0, -1).join(', ')} and ${removed.at(-1)} past their age`;
}
