// The LakeCompactor L3 construct: everything one deployment needs to compact and maintain the
// configured Parquet tables, in existing buckets or one it creates. Synthesizes offline, validated at synth.
//
// This file wires the parts together in the construct's own scope, in a fixed order (logical IDs and the
// template's resource order follow construct paths and creation order): the props are in
// lake-compactor-props.ts, their validation in lake-compactor-validation.ts, the owned bucket in
// data-bucket.ts, the profiler and its event wiring in profiler.ts, the sweep in sweep.ts, the cdk-nag
// acknowledgements in lake-compactor-nag.ts, and what each table format needs beyond the shared grants in
// formats/ (composed here at the stages of formats/format-infra.ts; this file names no format).
import { type CfnOutput, Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as kms from 'aws-cdk-lib/aws-kms';
import type * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import type { StackOutputKey } from '../functions/core/stack-output-keys.js';
import { DEFAULT_WORK_ROOT } from '../functions/core/workflow/layout.js';
import { CompactionWorkflow } from './compaction-workflow.js';
import { createDataBucket } from './data-bucket.js';
import {
  addFormatGrants,
  type DeployedTable,
  formatGrantsOf,
  formatWorkflowPropsOf,
} from './formats/index.js';
import { tablesJsonOf, triggerEnvironmentOf } from './function-config.js';
import { acknowledgeNagFindings } from './lake-compactor-nag.js';
import type { LakeCompactorProps, LakeCompactorTable } from './lake-compactor-props.js';
import {
  assertValidProps,
  literalBucketsOf,
  type WorkRootClaim,
  workRootClashProblems,
} from './lake-compactor-validation.js';
import { Maintenance, scheduleOf, stoppedAfter } from './maintenance.js';
import { Observability } from './observability.js';
import {
  addProfilerWiring,
  createProfilerFunction,
  DEFAULT_PROFILER_RESERVED_CONCURRENCY,
} from './profiler.js';
import type { TableLocation } from './s3-access.js';
import { addStackOutputs } from './stack-outputs.js';
import { createStateTable } from './state-table.js';
import { addSweep } from './sweep.js';
import { tableConfigDelivery } from './table-config-file.js';
import { DEFAULT_TABLE_ISOLATION, TableIsolation } from './table-isolation.js';

export { wildcardGrants } from './lake-compactor-nag.js';
export type {
  LakeCompactorAlarmProps,
  LakeCompactorDataBucketProps,
  LakeCompactorProps,
  LakeCompactorSweepProps,
  LakeCompactorTable,
  LakeCompactorTriggerProps,
} from './lake-compactor-props.js';
export { outermostPrefixes } from './profiler.js';

/**
 * Serverless small-file compaction for Parquet tables on S3.
 *
 * State lives in one DynamoDB table (single-table design, see README): partition statistics,
 * per-file items, trigger decisions, run journals and history.
 */
export class LakeCompactor extends Construct {
  /** The single table holding partition stats, file items, decisions, journals and history. */
  public readonly table: dynamodb.Table;
  /** The data bucket of the tables without `bucketName`; undefined when every table names its bucket. */
  public readonly dataBucket?: s3.Bucket;
  /** Consumes S3 notifications and keeps partition statistics exact. */
  public readonly profilerFunction: nodejs.NodejsFunction;
  /** Object events of every table, consumed in batches by the profiler. */
  public readonly profilerQueue: sqs.Queue;
  /** Events the profiler failed five times; inspect, then redrive to `profilerQueue`. */
  public readonly profilerDeadLetterQueue: sqs.Queue;
  /** Catch-up trigger, stuck-lease release and weekly reconcile. */
  public readonly sweepFunction: nodejs.NodejsFunction;
  /**
   * Scheduled events (sweep, reconcile, vacuum, tiering) EventBridge could not deliver to their function
   * after its retries; alarmed. Inspect the message attributes (rule, error), fix, then invoke by hand.
   */
  public readonly scheduleDeadLetterQueue: sqs.Queue;
  /** The compaction workflow: one execution per partition run (operators start it from the console). */
  public readonly workflow: CompactionWorkflow;
  /** The workflow's state machine; the profiler and the sweep start it as STATE_MACHINE_ARN. */
  public readonly stateMachine: sfn.StateMachine;
  /** Vacuum and tiering Lambdas on their EventBridge schedules. */
  public readonly maintenance: Maintenance;
  /** Alarms (to the workflow's notification topic) and the CloudWatch dashboard. */
  public readonly observability: Observability;
  /** This deployment's work root in every bucket (see `LakeCompactorProps.workRoot`). */
  public readonly workRoot: string;
  /** The data-access roles of `tableIsolation: "session-policy"`; undefined without isolation. */
  public readonly tableIsolation?: TableIsolation;
  /** The tables' bucket names known at synth, for the work-root clash check between LakeCompactors. */
  private readonly literalBuckets: readonly string[];

  constructor(scope: Construct, id: string, props: LakeCompactorProps) {
    super(scope, id);
    this.workRoot = props.workRoot ?? DEFAULT_WORK_ROOT;
    this.literalBuckets = literalBucketsOf(props.tables);
    assertValidProps(props, this.workRootClashes());
    const ownedCount = props.tables.filter((t) => t.bucketName === undefined).length;

    this.table = createStateTable(this, 'State', props.removalPolicy ?? RemovalPolicy.RETAIN);
    if (ownedCount > 0) this.dataBucket = createDataBucket(this, props, this.workRoot);
    const ownedBucket = this.dataBucket;
    // From here on every table has a bucket: its own, or the owned bucket's name (a deploy-time token).
    const tables = props.tables.map((t) => ({
      ...t,
      bucketName: t.bucketName ?? (ownedBucket as s3.Bucket).bucketName,
    }));
    const locations: TableLocation[] = tables.map((t) => ({ bucketName: t.bucketName, prefix: t.prefix }));
    const encryptionKeys = [
      ...(ownedBucket?.encryptionKey === undefined ? [] : [ownedBucket.encryptionKey]),
      ...tableKeysOf(this, props.tables),
    ];
    const tablesJson = tablesJsonOf(tables, '');
    // What the tables' formats need beyond the shared grants, added stage by stage below (formats/index.ts).
    const inOwnedBucket = new Set(props.tables.filter((t) => t.bucketName === undefined).map((t) => t.name));
    const formatGrants = formatGrantsOf({
      scope: this,
      tables,
      keysOf: (some) => keysOfTables(some, inOwnedBucket, ownedBucket?.encryptionKey, encryptionKeys),
    });
    // Not in the environment: Lambda's 4 KB for all variables would end at about 20 tables.
    const tableConfig = tableConfigDelivery(tablesJson);
    const triggers = triggerEnvironmentOf(props.triggers ?? {});
    const reservedConcurrency = props.profilerReservedConcurrency ?? DEFAULT_PROFILER_RESERVED_CONCURRENCY;

    this.profilerFunction = createProfilerFunction(this, {
      stateTable: this.table,
      tableConfig,
      triggers,
      memorySize: props.profilerMemoryMb ?? 512,
      reservedConcurrency,
    });

    // A table whose format keeps a log or a catalog changes by its commits: what the profiler reads of them.
    addFormatGrants(formatGrants, 'profiler', { profiler: this.profilerFunction });

    this.scheduleDeadLetterQueue = new sqs.Queue(this, 'ScheduleDlq', {
      retentionPeriod: Duration.days(14),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
    });
    Validations.of(this.scheduleDeadLetterQueue).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason:
        'It is a dead-letter queue: the one of the scheduled EventBridge targets (sweep, reconcile, vacuum, tiering), which cdk-nag cannot see from the queue.',
    });
    const profiler = addProfilerWiring(this, this.profilerFunction, {
      tables,
      ownedBucket,
      reservedConcurrency,
    });
    this.profilerQueue = profiler.queue;
    this.profilerDeadLetterQueue = profiler.deadLetterQueue;
    const sweepSchedule = scheduleOf(props.sweep?.schedule, events.Schedule.rate(Duration.minutes(15)));
    this.sweepFunction = addSweep(this, {
      stateTable: this.table,
      tables: locations,
      tableConfig,
      memorySize: props.sweepMemoryMb ?? 1024,
      schedules: { ...props.sweep, schedule: sweepSchedule },
      triggers,
      encryptionKeys,
      workRoot: this.workRoot,
      deadLetterQueue: this.scheduleDeadLetterQueue,
    });
    addFormatGrants(formatGrants, 'sweep', { sweep: this.sweepFunction });

    // The owned bucket is versioned: retire inputs by delete (no trash copies), restore by version.
    const versionedBuckets = [
      ...(props.workflow?.versionedBuckets ?? []),
      ...(ownedBucket === undefined ? [] : [ownedBucket.bucketName]),
    ];
    const alarmTopic =
      props.alarms?.topicArn === undefined
        ? undefined
        : sns.Topic.fromTopicArn(this, 'AlarmTopic', props.alarms.topicArn);
    this.workflow = new CompactionWorkflow(this, 'Workflow', {
      ...props.workflow,
      ...(alarmTopic === undefined ? {} : { notificationTopic: alarmTopic }),
      stateTable: this.table,
      tablesJson,
      tables: locations,
      ...formatWorkflowPropsOf(props.tables),
      workRoot: this.workRoot,
      encryptionKeys,
      versionedBuckets,
    });
    this.stateMachine = this.workflow.stateMachine;
    this.useCompactionStateMachine(this.stateMachine);
    this.maintenance = new Maintenance(this, 'Maintenance', {
      ...props.maintenance,
      stateTable: this.table,
      tablesJson,
      tables: tables.map((t) => ({ bucketName: t.bucketName, prefix: t.prefix, format: t.format })),
      versionedBuckets,
      workRoot: this.workRoot,
      encryptionKeys,
      deadLetterQueue: this.scheduleDeadLetterQueue,
    });

    // Now that every function exists: what committing through the tables' catalogs and logs takes.
    const everyFunction = {
      ...this.workflow.functions,
      profiler: this.profilerFunction,
      sweep: this.sweepFunction,
      vacuum: this.maintenance.vacuumFunction,
      tiering: this.maintenance.tieringFunction,
    };
    addFormatGrants(formatGrants, 'catalog', everyFunction);
    addFormatGrants(formatGrants, 'log', everyFunction);

    const compactFunction = this.workflow.functions.compact;
    if (compactFunction === undefined) {
      throw new Error(
        'LakeCompactor: the compaction workflow has no `compact` function; keep its name in CompactionWorkflow.',
      );
    }
    this.observability = new Observability(this, 'Observability', {
      topic: this.workflow.notificationTopic,
      stateMachine: this.stateMachine,
      profilerQueue: this.profilerQueue,
      profilerDeadLetterQueue: this.profilerDeadLetterQueue,
      profilerFunction: this.profilerFunction,
      compactFunction,
      vacuumFunction: this.maintenance.vacuumFunction,
      tieringFunction: this.maintenance.tieringFunction,
      sweepFunction: this.sweepFunction,
      sweepStoppedAfter: stoppedAfter(sweepSchedule),
      workflowFunctions: this.workflow.functions,
      scheduleDeadLetterQueue: this.scheduleDeadLetterQueue,
      tables: props.tables.map((t) => t.name),
    });

    // Last, after every grant: each function serving tables gets its table-data grants moved to a data-access role.
    if ((props.tableIsolation ?? DEFAULT_TABLE_ISOLATION) === 'session-policy') {
      this.tableIsolation = new TableIsolation(this, 'TableIsolation', {
        functions: this.isolatedFunctions(),
      });
    }

    subscribeAlarmReceivers(this.workflow.notificationTopic, props.alarms);
    acknowledgeNagFindings(this, locations);
  }

  /**
   * Defines the outputs an operator needs after `cdk deploy` (state table, state machine, sweep, vacuum and tiering
   * functions, alarm topic, dashboard URL, the owned bucket), under the keys `lake-compactor --stack <name>` reads.
   * Not automatic: output ids are unique per stack, so a stack holding two LakeCompactors can define them for one.
   * @param scope where to define them; the construct's stack by default (`--stack` reads the stack's outputs).
   */
  public addOutputs(scope?: Construct): Partial<Record<StackOutputKey, CfnOutput>> {
    return addStackOutputs(this, scope);
  }

  /** Every function, by name; those holding no table-data grant (lease) get no data-access role. */
  private isolatedFunctions(): Record<string, nodejs.NodejsFunction | undefined> {
    return {
      Profiler: this.profilerFunction,
      Sweep: this.sweepFunction,
      ...Object.fromEntries(
        Object.entries(this.workflow.functions).map(([name, fn]) => [capitalize(name), fn]),
      ),
      Vacuum: this.maintenance.vacuumFunction,
      Tiering: this.maintenance.tieringFunction,
    };
  }

  /**
   * Other LakeCompactors of this CDK app that name one of this one's buckets with the same (or a nested) work
   * root: each one's vacuum would delete the other's staging and trash. Buckets known only at deploy time
   * (tokens) cannot be compared; each construct-owned bucket is its deployment's alone.
   */
  private workRootClashes(): string[] {
    if (typeof this.workRoot !== 'string') return []; // the props schema reports it
    const others = this.node.root.node
      .findAll()
      .filter(
        (c): c is LakeCompactor => c instanceof LakeCompactor && c !== this && typeof c.workRoot === 'string',
      );
    const claim = (c: LakeCompactor): WorkRootClaim => ({
      path: c.node.path,
      workRoot: c.workRoot,
      literalBuckets: c.literalBuckets,
    });
    return workRootClashProblems(claim(this), others.map(claim), Stack.of(this).stackName);
  }

  /**
   * Lets the profiler and the sweep start (and describe) executions of the compaction workflow. Until it
   * is called, decisions are recorded and logged but nothing is started.
   */
  public useCompactionStateMachine(stateMachine: sfn.IStateMachine): void {
    for (const fn of [this.profilerFunction, this.sweepFunction]) {
      fn.addEnvironment('STATE_MACHINE_ARN', stateMachine.stateMachineArn);
      stateMachine.grantStartExecution(fn);
      // Only DescribeExecution (idempotent starts look up the existing run): grantRead would add
      // states:DescribeStateMachine/ListActivities on `*`.
      stateMachine.grantExecution(fn, 'states:DescribeExecution');
    }
  }
}

/** `commit` → `Commit`. */
function capitalize(name: string): string {
  return name.charAt(0).toUpperCase() + name.slice(1);
}

/** The tables' KMS keys (each ARN once), imported for grants. */
function tableKeysOf(scope: Construct, tables: readonly LakeCompactorTable[]): kms.IKey[] {
  const arns = [...new Set(tables.flatMap((t) => (t.kmsKeyArn === undefined ? [] : [t.kmsKeyArn])))];
  return arns.map((arn, i) => kms.Key.fromKeyArn(scope, `TableKey${i}`, arn));
}

/**
 * The keys that may encrypt the objects of `some` tables: the owned bucket's when one of them is in it (by name,
 * `inOwnedBucket`), and those of `encryptionKeys` their `kmsKeyArn`s name.
 */
function keysOfTables(
  some: readonly DeployedTable[],
  inOwnedBucket: ReadonlySet<string>,
  ownedKey: kms.IKey | undefined,
  encryptionKeys: readonly kms.IKey[],
): kms.IKey[] {
  const arns = new Set(some.flatMap((t) => (t.kmsKeyArn === undefined ? [] : [t.kmsKeyArn])));
  return [
    ...(ownedKey !== undefined && some.some((t) => inOwnedBucket.has(t.name)) ? [ownedKey] : []),
    ...encryptionKeys.filter((k) => arns.has(k.keyArn)),
  ];
}

/**
 * Subscribes the receivers `alarms` names to `topic` (every alarm and run notification goes there): without a
 * subscription an alarm reaches nobody. E-mail and HTTPS subscriptions wait for their owner's confirmation.
 */
function subscribeAlarmReceivers(topic: sns.ITopic, alarms: LakeCompactorProps['alarms']): void {
  for (const email of alarms?.emails ?? []) topic.addSubscription(new subscriptions.EmailSubscription(email));
  for (const url of alarms?.httpsEndpoints ?? [])
    topic.addSubscription(new subscriptions.UrlSubscription(url));
}
