// The LakeCompactor L3 construct: everything one deployment needs to compact and maintain the
// configured Parquet tables, in existing buckets or one it creates. Synthesizes offline, validated at synth.
import { Aspects, Duration, RemovalPolicy, Stack, Token, Validations } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as s3n from 'aws-cdk-lib/aws-s3-notifications';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { flattenCfnReference } from 'cdk-nag/lib/utils/flatten-cfn-reference.js';
import { Construct } from 'constructs';
import { DEFAULT_WORK_ROOT, workFolder } from '../functions/core/workflow/layout.js';
import { CompactionWorkflow } from './compaction-workflow.js';
import { runCapsJsonOf, tablesJsonOf } from './function-config.js';
import type {
  LakeCompactorProps,
  LakeCompactorSweepProps,
  LakeCompactorTable,
} from './lake-compactor-props.js';
import {
  assertValidProps,
  literalBucketsOf,
  type WorkRootClaim,
  workRootClashProblems,
} from './lake-compactor-validation.js';
import { Maintenance, scheduledTargetOptions, scheduleOf, stoppedAfter } from './maintenance.js';
import { AcknowledgeWildcards, type WildcardGrant } from './nag-acknowledgements.js';
import { projectFunction } from './node-function.js';
import { Observability } from './observability.js';
import { minimumDataBucketDays } from './props-schema.js';
import {
  KMS_OBJECT_ACTIONS,
  listStatements,
  normalizeTablePrefix,
  publisherStatements,
  type TableLocation,
  versioningStatements,
} from './s3-access.js';
import { createStateTable } from './state-table.js';
import { type TableConfigDelivery, tableConfigDelivery } from './table-config-file.js';

export type {
  LakeCompactorDataBucketProps,
  LakeCompactorProps,
  LakeCompactorSweepProps,
  LakeCompactorTable,
  LakeCompactorTriggerProps,
} from './lake-compactor-props.js';

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
  /** The tables' bucket names known at synth, for the work-root clash check between LakeCompactors. */
  private readonly literalBuckets: readonly string[];

  constructor(scope: Construct, id: string, props: LakeCompactorProps) {
    super(scope, id);
    this.workRoot = props.workRoot ?? DEFAULT_WORK_ROOT;
    this.literalBuckets = literalBucketsOf(props.tables);
    assertValidProps(props, this.workRootClashes());
    const ownedCount = props.tables.filter((t) => t.bucketName === undefined).length;

    this.table = createStateTable(this, 'State', props.removalPolicy ?? RemovalPolicy.RETAIN);
    if (ownedCount > 0) this.dataBucket = this.createDataBucket(props);
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
    // Not in the environment: Lambda's 4 KB for all variables would end at about 20 tables.
    const tableConfig = tableConfigDelivery(tablesJson);
    const triggersDryRun = props.triggers?.dryRun === true ? 'true' : 'false';
    const runCaps = runCapsJsonOf(props.triggers ?? {});
    const reserved = props.profilerReservedConcurrency ?? DEFAULT_PROFILER_RESERVED_CONCURRENCY;

    this.profilerFunction = projectFunction(this, 'Profiler', 'profiler.ts', {
      description: 'Keeps per-partition file statistics exact from S3 notifications',
      memorySize: props.profilerMemoryMb ?? 512,
      timeout: Duration.seconds(60),
      ...(reserved === false ? {} : { reservedConcurrentExecutions: reserved }),
      environment: {
        TABLE_NAME: this.table.tableName,
        ...tableConfig.environment,
        TRIGGERS_DRY_RUN: triggersDryRun,
        RUN_CAPS: runCaps,
      },
      codeFiles: tableConfig.codeFiles,
    });
    this.table.grantReadWriteData(this.profilerFunction);

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
    const profiler = this.addProfilerWiring(tables, reserved === false ? 5 : reserved);
    this.profilerQueue = profiler.queue;
    this.profilerDeadLetterQueue = profiler.deadLetterQueue;
    const sweepSchedule = scheduleOf(props.sweep?.schedule, events.Schedule.rate(Duration.minutes(15)));
    this.sweepFunction = this.addSweep(
      locations,
      tableConfig,
      props.sweepMemoryMb ?? 512,
      { ...props.sweep, schedule: sweepSchedule },
      { TRIGGERS_DRY_RUN: triggersDryRun, RUN_CAPS: runCaps },
      encryptionKeys,
    );

    this.workflow = new CompactionWorkflow(this, 'Workflow', {
      ...props.workflow,
      stateTable: this.table,
      tablesJson,
      tables: locations,
      workRoot: this.workRoot,
      encryptionKeys,
      // The owned bucket is versioned: retire inputs by delete (no trash copies), restore by version.
      versionedBuckets: [
        ...(props.workflow?.versionedBuckets ?? []),
        ...(ownedBucket === undefined ? [] : [ownedBucket.bucketName]),
      ],
    });
    this.stateMachine = this.workflow.stateMachine;
    this.useCompactionStateMachine(this.stateMachine);

    this.maintenance = new Maintenance(this, 'Maintenance', {
      ...props.maintenance,
      stateTable: this.table,
      tablesJson,
      tables: locations,
      workRoot: this.workRoot,
      encryptionKeys,
      deadLetterQueue: this.scheduleDeadLetterQueue,
    });

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

    this.acknowledgeNagFindings(locations);
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
   * The owned data bucket (see LakeCompactorDataBucketProps): versioned, lifecycle rules for noncurrent
   * versions, staging leftovers and unfinished uploads, all public access blocked, TLS only, encrypted.
   */
  private createDataBucket(props: LakeCompactorProps): s3.Bucket {
    const settings = props.dataBucket ?? {};
    const days = dataBucketDays(props);
    const bucket = new s3.Bucket(this, 'DataBucket', {
      versioned: true,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      ...(settings.encryptionKey === undefined
        ? { encryption: s3.BucketEncryption.S3_MANAGED }
        : {
            encryption: s3.BucketEncryption.KMS,
            encryptionKey: settings.encryptionKey,
            bucketKeyEnabled: true,
          }),
      // A table fed by EventBridge needs the bucket to send its events there.
      eventBridgeEnabled: props.tables.some(
        (t) => t.bucketName === undefined && t.eventSource === 'eventbridge',
      ),
      removalPolicy: settings.removalPolicy ?? RemovalPolicy.RETAIN,
      ...(settings.serverAccessLogsBucket === undefined
        ? {}
        : {
            serverAccessLogsBucket: settings.serverAccessLogsBucket,
            ...(settings.serverAccessLogsPrefix === undefined
              ? {}
              : { serverAccessLogsPrefix: settings.serverAccessLogsPrefix }),
          }),
      lifecycleRules: [
        {
          id: 'NoncurrentVersions',
          noncurrentVersionExpiration: Duration.days(days.noncurrent),
          expiredObjectDeleteMarker: true,
        },
        {
          id: 'StagingLeftovers',
          prefix: workFolder(this.workRoot, 'staging'),
          expiration: Duration.days(days.staging),
          // A staged output is worthless once published or rolled back: S3 applies the earliest
          // expiration due, so its noncurrent copy goes after a day instead of the full retention.
          noncurrentVersionExpiration: Duration.days(1),
        },
        {
          id: 'IncompleteMultipartUploads',
          abortIncompleteMultipartUploadAfter: Duration.days(days.abortUploads),
        },
      ],
    });
    if (settings.serverAccessLogsBucket === undefined) {
      Validations.of(bucket).acknowledge({
        id: 'AwsSolutions-S1',
        reason:
          'Server access logs are optional (LakeCompactorDataBucketProps.serverAccessLogsBucket): a log bucket per deployment would itself need logging, and CloudTrail S3 data events are the recommended, queryable audit trail for a data lake.',
      });
    }
    return bucket;
  }

  /**
   * The cdk-nag (AwsSolutions) findings this design needs, each with its reason. Wildcards are acknowledged
   * per policy and finding by `AcknowledgeWildcards`, so a new, unexplained wildcard still fails the check.
   */
  private acknowledgeNagFindings(locations: readonly TableLocation[]): void {
    Aspects.of(this).add(new AcknowledgeWildcards(wildcardGrants(this.rootBuckets(locations))));
    // The stack-wide singleton CDK adds for bucket notifications on imported buckets.
    const notificationsHandler = Stack.of(this).node.tryFindChild(
      'BucketNotificationsHandler050a0587b7544547bf325f094a3db834',
    );
    if (notificationsHandler !== undefined) {
      Validations.of(notificationsHandler).acknowledge({
        id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
        reason:
          "CDK's bucket-notifications custom resource handler: its managed policy only writes its own logs, and it runs at deploy time only.",
      });
    }
  }

  /**
   * Buckets holding a table at their root, as cdk-nag prints them in a resource: a literal name, or
   * `<LogicalId>` for the owned bucket (its name is a `Ref`).
   */
  private rootBuckets(locations: readonly TableLocation[]): string[] {
    const names = locations.filter((l) => normalizeTablePrefix(l.prefix) === '').map((l) => l.bucketName);
    return [...new Set(names)].map((name) =>
      Token.isUnresolved(name) ? flattenCfnReference(Stack.of(this).resolve(name)) : name,
    );
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

  /**
   * S3 object events → SQS (DLQ after 5 receives) → profiler in batches with partial batch failures. One
   * notification per bucket and distinct outermost prefix (S3 refuses overlapping configurations); tables
   * whose bucket already sends its events to EventBridge get a rule targeting the same queue instead.
   */
  private addProfilerWiring(
    tables: readonly (LakeCompactorTable & { bucketName: string })[],
    maxConcurrency: number,
  ): {
    queue: sqs.Queue;
    deadLetterQueue: sqs.Queue;
  } {
    const deadLetterQueue = new sqs.Queue(this, 'ProfilerDlq', {
      retentionPeriod: Duration.days(14),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
    });
    const queue = new sqs.Queue(this, 'ProfilerEvents', {
      // Six times the function timeout, as AWS recommends for SQS event sources (retries within a batch).
      visibilityTimeout: Duration.seconds(6 * 60),
      retentionPeriod: Duration.days(4),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      deadLetterQueue: { queue: deadLetterQueue, maxReceiveCount: 5 },
    });

    const buckets = new Map<string, s3.IBucket>();
    const bucketOf = (name: string): s3.IBucket => {
      // The owned bucket is the real Bucket (its notification configuration is managed like any other).
      if (this.dataBucket !== undefined && name === this.dataBucket.bucketName) return this.dataBucket;
      let bucket = buckets.get(name);
      if (bucket === undefined) {
        bucket = s3.Bucket.fromBucketName(this, `Bucket${buckets.size}`, name);
        buckets.set(name, bucket);
      }
      return bucket;
    };
    const notified = outermostPrefixes(
      tables.filter((t) => (t.eventSource ?? 's3-notifications') === 's3-notifications'),
    );
    for (const { bucketName, prefix } of notified) {
      const bucket = bucketOf(bucketName);
      const filters = prefix === '' ? [] : [{ prefix }];
      bucket.addEventNotification(s3.EventType.OBJECT_CREATED, new s3n.SqsDestination(queue), ...filters);
      bucket.addEventNotification(s3.EventType.OBJECT_REMOVED, new s3n.SqsDestination(queue), ...filters);
    }
    const bridged = tables.filter((t) => t.eventSource === 'eventbridge');
    bridged.forEach((t, i) => {
      const prefix = normalizeTablePrefix(t.prefix);
      new events.Rule(this, `ObjectEvents${i}`, {
        description: `S3 object events of table ${t.name} to the profiler queue`,
        eventPattern: {
          source: ['aws.s3'],
          detailType: ['Object Created', 'Object Deleted'],
          detail: {
            bucket: { name: [t.bucketName] },
            ...(prefix === '' ? {} : { object: { key: [{ prefix }] } }),
          },
        },
        targets: [new targets.SqsQueue(queue)],
      });
    });

    this.profilerFunction.addEventSource(
      new SqsEventSource(queue, {
        // Larger batches mean one transaction and one decision per partition for many events.
        batchSize: 100,
        maxBatchingWindow: Duration.seconds(5),
        reportBatchItemFailures: true,
        // Bounds contention on a hot partition's item and DynamoDB spend during backlogs, and never polls
        // more than the reserved concurrency (see `profilerReservedConcurrency`).
        maxConcurrency,
      }),
    );
    return { queue, deadLetterQueue };
  }

  /** The sweep Lambda, run every 15 minutes (catch-up, leases) and weekly in reconcile mode. */
  private addSweep(
    tables: readonly TableLocation[],
    tableConfig: TableConfigDelivery,
    memorySize: number,
    schedules: LakeCompactorSweepProps & { schedule: events.Schedule },
    triggers: { TRIGGERS_DRY_RUN: string; RUN_CAPS: string },
    encryptionKeys: readonly kms.IKey[],
  ): nodejs.NodejsFunction {
    const sweep = projectFunction(this, 'Sweep', 'sweep.ts', {
      description: 'Starts partitions whose quiet window passed, releases stuck leases, reconciles counts',
      memorySize,
      timeout: Duration.minutes(10),
      environment: {
        TABLE_NAME: this.table.tableName,
        ...tableConfig.environment,
        ...triggers,
        WORK_ROOT: this.workRoot,
      },
      codeFiles: tableConfig.codeFiles,
    });
    this.table.grantReadWriteData(sweep);
    // Reconcile lists the tables' prefixes. Before releasing the lease of a run that died, the sweep settles
    // the groups it left through the commit protocol (workflow/settle.ts): the commit step's object access.
    for (const statement of [...listStatements(tables), ...versioningStatements(tables)]) {
      sweep.addToRolePolicy(statement);
    }
    for (const statement of publisherStatements(tables, this.workRoot)) {
      sweep.addToRolePolicy(new iam.PolicyStatement(statement));
    }
    for (const key of encryptionKeys) key.grant(sweep, ...KMS_OBJECT_ACTIONS);
    new events.Rule(this, 'SweepSchedule', {
      description: 'lake-compactor sweep: due partitions and stuck leases',
      schedule: schedules.schedule,
      targets: [
        new targets.LambdaFunction(sweep, {
          event: events.RuleTargetInput.fromObject({ mode: 'sweep' }),
          ...scheduledTargetOptions(this.scheduleDeadLetterQueue),
        }),
      ],
    });
    new events.Rule(this, 'ReconcileSchedule', {
      description: 'lake-compactor reconcile: correct counts drifted through lost S3 events',
      schedule: scheduleOf(
        schedules.reconcileSchedule,
        events.Schedule.cron({ weekDay: 'SUN', hour: '3', minute: '0' }),
      ),
      targets: [
        new targets.LambdaFunction(sweep, {
          event: events.RuleTargetInput.fromObject({ mode: 'reconcile' }),
          ...scheduledTargetOptions(this.scheduleDeadLetterQueue),
        }),
      ],
    });
    return sweep;
  }
}

/** Default days staging leftovers are kept (see LakeCompactorDataBucketProps.stagingExpirationDays). */
const DEFAULT_STAGING_DAYS = 7;

/** Default of `profilerReservedConcurrency`: the profiler's SQS event source polled with 5 before it existed. */
const DEFAULT_PROFILER_RESERVED_CONCURRENCY = 5;

/** The owned bucket's lifecycle periods, in days, and the least each may be. */
function dataBucketDays(props: LakeCompactorProps): {
  noncurrent: number;
  staging: number;
  abortUploads: number;
  min: { noncurrent: number; staging: number; abortUploads: number };
} {
  const vacuum = props.maintenance?.vacuum ?? {};
  const settings = props.dataBucket ?? {};
  const min = minimumDataBucketDays(vacuum);
  return {
    noncurrent: settings.noncurrentVersionExpirationDays ?? min.noncurrent,
    staging: settings.stagingExpirationDays ?? Math.max(DEFAULT_STAGING_DAYS, min.staging),
    abortUploads:
      settings.abortIncompleteMultipartUploadDays ??
      Math.max(1, Math.ceil((vacuum.debrisAgeHours ?? 72) / 24)),
    min,
  };
}

/** The tables' KMS keys (each ARN once), imported for grants. */
function tableKeysOf(scope: Construct, tables: readonly LakeCompactorTable[]): kms.IKey[] {
  const arns = [...new Set(tables.flatMap((t) => (t.kmsKeyArn === undefined ? [] : [t.kmsKeyArn])))];
  return arns.map((arn, i) => kms.Key.fromKeyArn(scope, `TableKey${i}`, arn));
}

/**
 * The wildcards the design needs (see `AcknowledgeWildcards`): anything else is a cdk-nag error. Whole-bucket
 * object access (`<bucket>/*`) is acknowledged only for `rootBuckets`, the buckets holding a table at their
 * root; everywhere else S3 grants name a table prefix or a folder of the work root (`workRoot`).
 */
export function wildcardGrants(rootBuckets: readonly string[]): WildcardGrant[] {
  const grants: WildcardGrant[] = [
    {
      actions: /^(xray|logs):[A-Za-z]+$/,
      resource: /^\*$/,
      reason:
        'X-Ray trace submission and CloudWatch Logs vended-log delivery (state machine logging) do not support resource-level permissions.',
    },
    {
      actions: /^cloudwatch:PutMetricData$/,
      resource: /^\*$/,
      reason:
        'The state machine counts failed run notifications (NotificationsFailed); PutMetricData has no resource-level permissions, so the grant is conditioned on the LakeCompactor namespace instead.',
    },
    {
      actions: /^dynamodb:[A-Za-z]+$/,
      resource: /^<[A-Za-z0-9]+\.Arn>\/index\/\*$/,
      reason:
        "The state table's own indexes (gsi1), granted with the table by grantReadData/grantReadWriteData.",
    },
    {
      actions: /^states:[A-Za-z]+$/,
      resource: /^arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:.+:\*$/,
      reason:
        'Executions of the compaction state machine only: execution ARNs carry a per-run name (and the Distributed Map a per-run child), so they are matched by the machine name plus a wildcard.',
    },
    {
      actions: /^lambda:InvokeFunction$/,
      resource: /^<[A-Za-z0-9]+\.Arn>:\*$/,
      reason: "The state machine invokes the versions and aliases of the workflow's own functions only.",
    },
    {
      actions: /^s3:[A-Za-z]+$/,
      // A literal bucket name, or `<LogicalId>` for the owned bucket; at least one key segment before `/*`.
      resource: /^arn:aws:s3:::(?:[a-z0-9.-]+|<[A-Za-z0-9]+>)\/[^*]+\/\*$/,
      reason:
        "Object keys under a configured table prefix, or the deployment's work root (`workRoot`, default `_lake-compactor/`) or one of its folders (plans, staging, trash, journal, maintenance): prefix-scoped S3 access is inherently a key wildcard.",
    },
  ];
  if (rootBuckets.length > 0) {
    const names = rootBuckets.map((b) => b.replace(/[.*+?^${}()|[\]\\<>]/g, '\\$&')).join('|');
    grants.push({
      actions: /^s3:[A-Za-z]+$/,
      resource: new RegExp(`^arn:aws:s3:::(?:${names})\\/\\*$`),
      reason:
        'Whole-bucket object keys of a bucket holding a table at its root (prefix ""): every key of the bucket belongs to that table or to the work root (`workRoot`).',
    });
  }
  return grants;
}

/**
 * One (bucket, prefix) per notification: prefixes nested inside another table's prefix of the same bucket
 * are covered by the outer notification (the profiler resolves the owning table by longest prefix).
 */
export function outermostPrefixes(tables: readonly TableLocation[]): TableLocation[] {
  const all = [...new Set(tables.map((t) => `${t.bucketName}\u0000${normalizeTablePrefix(t.prefix)}`))].map(
    (k) => {
      const [bucketName = '', prefix = ''] = k.split('\u0000');
      return { bucketName, prefix };
    },
  );
  return all.filter(
    (candidate) =>
      !all.some(
        (other) =>
          other !== candidate &&
          other.bucketName === candidate.bucketName &&
          other.prefix.length < candidate.prefix.length &&
          candidate.prefix.startsWith(other.prefix),
      ),
  );
}
