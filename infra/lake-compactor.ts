// The LakeCompactor L3 construct: everything one deployment needs to compact and maintain the
// configured Parquet tables. Synthesizes offline; later issues add the workflow and schedules.
import { Aspects, Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as s3n from 'aws-cdk-lib/aws-s3-notifications';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import { parseTableConfigs } from '../functions/core/table-config.js';
import { CompactionWorkflow, type CompactionWorkflowProps } from './compaction-workflow.js';
import { Maintenance, type MaintenanceProps } from './maintenance.js';
import { AcknowledgeWildcards, type WildcardGrant } from './nag-acknowledgements.js';
import { projectFunction } from './node-function.js';
import { Observability } from './observability.js';
import { createStateTable } from './state-table.js';

/** One table the compactor looks after. */
export interface LakeCompactorTable {
  /** Unique, stable name used in executions, metrics and DynamoDB keys. */
  readonly name: string;
  /** Bucket name of the table. */
  readonly bucketName: string;
  /** Key prefix of the table root, e.g. `events/`. */
  readonly prefix: string;
  /**
   * Table format.
   * @default 'parquet'
   */
  readonly format?: 'parquet' | 'delta';
  /**
   * Hive partition columns, outermost first.
   * @default []
   */
  readonly partitionColumns?: readonly string[];
  /**
   * Partition column holding the partition's date (look-back window, tiering). For `year/month/day`, the
   * three columns comma-separated.
   * @default none — the look-back window is not applied
   */
  readonly dateColumn?: string;
  /**
   * Layout of the date column (`yyyy-MM-dd`, `yyyyMMdd`, `yyyy-MM-dd-HH`, `yyyyMMddHH`, `yyyy-MM`,
   * `year/month/day`). Required with `dateColumn`.
   * @default none
   */
  readonly dateFormat?: string;
  /**
   * How object events reach the profiler: bucket notifications to the queue, or an EventBridge rule on
   * the bucket's events (for buckets whose notifications already go to EventBridge; a bucket has only
   * one notification configuration per prefix and event type).
   * @default 's3-notifications'
   */
  readonly eventSource?: 's3-notifications' | 'eventbridge';
  /**
   * Target size of compacted files, MiB.
   * @default 128
   */
  readonly targetFileSizeMB?: number;
  /**
   * Codec of compacted files.
   * @default 'zstd'
   */
  readonly codec?: 'zstd' | 'snappy';
  /**
   * Sort compacted files by these columns (strategy `sort`), for data skipping.
   * @default none — rows keep their order (strategy `binpack`)
   */
  readonly sortColumns?: readonly string[];
  /**
   * Overrides of the trigger policy for this table (`minInputFiles`, `smallFileRatioThreshold`,
   * `quietMinutes`, `cooldownMinutes`, `lookbackDays`, …; see functions/core/policy.ts).
   * @default the policy defaults
   */
  readonly policy?: Readonly<Record<string, number>>;
}

export interface LakeCompactorProps {
  /** Tables to profile and compact. At least one. */
  readonly tables: readonly LakeCompactorTable[];
  /**
   * Removal policy of stateful resources (the DynamoDB table).
   * @default RemovalPolicy.RETAIN — the journal is what makes a crashed commit recoverable.
   */
  readonly removalPolicy?: RemovalPolicy;
  /**
   * Tuning of the compaction workflow (inline/Distributed Map limits, concurrency, memory, versioned buckets).
   * @default the CompactionWorkflow defaults
   */
  readonly workflow?: Omit<CompactionWorkflowProps, 'stateTable' | 'tablesJson' | 'bucketNames'>;
  /**
   * Vacuum and tiering schedules: schedule, dry-run flag and retention / rules of each.
   * @default vacuum daily 04:00 UTC, tiering weekly Sunday 05:00 UTC, both dry-run (see Maintenance)
   */
  readonly maintenance?: Pick<MaintenanceProps, 'vacuum' | 'tiering'>;
}

/**
 * Serverless small-file compaction for Parquet tables on S3.
 *
 * State lives in one DynamoDB table (single-table design, see README): partition statistics,
 * per-file items, trigger decisions, run journals and history.
 */
export class LakeCompactor extends Construct {
  /** The single table holding partition stats, file items, decisions, journals and history. */
  public readonly table: dynamodb.Table;
  /** Consumes S3 notifications and keeps partition statistics exact. */
  public readonly profilerFunction: nodejs.NodejsFunction;
  /** Object events of every table, consumed in batches by the profiler. */
  public readonly profilerQueue: sqs.Queue;
  /** Events the profiler failed five times; inspect, then redrive to `profilerQueue`. */
  public readonly profilerDeadLetterQueue: sqs.Queue;
  /** Catch-up trigger, stuck-lease release and weekly reconcile. */
  public readonly sweepFunction: nodejs.NodejsFunction;
  /** The compaction workflow: one execution per partition run (operators start it from the console). */
  public readonly workflow: CompactionWorkflow;
  /** The workflow's state machine; the profiler and the sweep start it as STATE_MACHINE_ARN. */
  public readonly stateMachine: sfn.StateMachine;
  /** Vacuum and tiering Lambdas on their EventBridge schedules. */
  public readonly maintenance: Maintenance;
  /** Alarms (to the workflow's notification topic) and the CloudWatch dashboard. */
  public readonly observability: Observability;

  constructor(scope: Construct, id: string, props: LakeCompactorProps) {
    super(scope, id);
    if (props.tables.length === 0) {
      throw new Error('LakeCompactor: `tables` must name at least one table to compact.');
    }

    this.table = createStateTable(this, 'State', props.removalPolicy ?? RemovalPolicy.RETAIN);

    const tablesJson = JSON.stringify(
      props.tables.map((t) => ({
        name: t.name,
        bucket: t.bucketName,
        prefix: t.prefix,
        format: t.format ?? 'parquet',
        partitionColumns: t.partitionColumns ?? [],
        ...(t.dateColumn === undefined ? {} : { dateColumn: t.dateColumn }),
        ...(t.dateFormat === undefined ? {} : { dateFormat: t.dateFormat }),
        ...(t.targetFileSizeMB === undefined ? {} : { targetFileSizeMB: t.targetFileSizeMB }),
        ...(t.codec === undefined ? {} : { codec: t.codec }),
        ...(t.sortColumns === undefined ? {} : { sortColumns: t.sortColumns }),
        ...(t.policy === undefined ? {} : { policy: t.policy }),
      })),
    );
    // Validated at synth time with the schema the functions use at cold start: every problem of
    // every table in one message, instead of a deploy that fails at run time.
    try {
      parseTableConfigs(tablesJson);
    } catch (err) {
      throw new Error(
        `LakeCompactor: invalid \`tables\`. ${err instanceof Error ? err.message : String(err)}`,
      );
    }

    this.profilerFunction = projectFunction(this, 'Profiler', 'profiler.ts', {
      description: 'Keeps per-partition file statistics exact from S3 notifications',
      memorySize: 512,
      timeout: Duration.seconds(60),
      environment: { TABLE_NAME: this.table.tableName, TABLES: tablesJson },
    });
    this.table.grantReadWriteData(this.profilerFunction);

    const profiler = this.addProfilerWiring(props.tables);
    this.profilerQueue = profiler.queue;
    this.profilerDeadLetterQueue = profiler.deadLetterQueue;
    this.sweepFunction = this.addSweep(props.tables, tablesJson);

    this.workflow = new CompactionWorkflow(this, 'Workflow', {
      ...props.workflow,
      stateTable: this.table,
      tablesJson,
      bucketNames: [...new Set(props.tables.map((t) => t.bucketName))],
    });
    this.stateMachine = this.workflow.stateMachine;
    this.useCompactionStateMachine(this.stateMachine);

    this.maintenance = new Maintenance(this, 'Maintenance', {
      ...props.maintenance,
      stateTable: this.table,
      tablesJson,
      tables: props.tables.map((t) => ({ bucketName: t.bucketName, prefix: t.prefix })),
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
    });

    this.acknowledgeNagFindings();
  }

  /**
   * The cdk-nag (AwsSolutions) findings this design needs, each with its reason. Wildcards are acknowledged
   * per policy and finding by `AcknowledgeWildcards`, so a new, unexplained wildcard still fails the check.
   */
  private acknowledgeNagFindings(): void {
    Aspects.of(this).add(new AcknowledgeWildcards(WILDCARD_GRANTS));
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
  private addProfilerWiring(tables: readonly LakeCompactorTable[]): {
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
      const prefix = normalizePrefix(t.prefix);
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
        // Bounds contention on a hot partition's item and DynamoDB spend during backlogs.
        maxConcurrency: 5,
      }),
    );
    return { queue, deadLetterQueue };
  }

  /** The sweep Lambda, run every 15 minutes (catch-up, leases) and weekly in reconcile mode. */
  private addSweep(tables: readonly LakeCompactorTable[], tablesJson: string): nodejs.NodejsFunction {
    const sweep = projectFunction(this, 'Sweep', 'sweep.ts', {
      description: 'Starts partitions whose quiet window passed, releases stuck leases, reconciles counts',
      memorySize: 512,
      timeout: Duration.minutes(10),
      environment: { TABLE_NAME: this.table.tableName, TABLES: tablesJson },
    });
    this.table.grantReadWriteData(sweep);
    // Reconcile lists the tables' prefixes (no object is read).
    sweep.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['s3:ListBucket'],
        resources: [...new Set(tables.map((t) => t.bucketName))].map((b) => `arn:aws:s3:::${b}`),
      }),
    );
    new events.Rule(this, 'SweepSchedule', {
      description: 'lake-compactor sweep: due partitions and stuck leases',
      schedule: events.Schedule.rate(Duration.minutes(15)),
      targets: [
        new targets.LambdaFunction(sweep, { event: events.RuleTargetInput.fromObject({ mode: 'sweep' }) }),
      ],
    });
    new events.Rule(this, 'ReconcileSchedule', {
      description: 'lake-compactor reconcile: correct counts drifted through lost S3 events',
      schedule: events.Schedule.cron({ weekDay: 'SUN', hour: '3', minute: '0' }),
      targets: [
        new targets.LambdaFunction(sweep, {
          event: events.RuleTargetInput.fromObject({ mode: 'reconcile' }),
        }),
      ],
    });
    return sweep;
  }
}

/** The wildcards the design needs (see `AcknowledgeWildcards`): anything else is a cdk-nag error. */
const WILDCARD_GRANTS: readonly WildcardGrant[] = [
  {
    actions: /^(xray|logs):[A-Za-z]+$/,
    resource: /^\*$/,
    reason:
      'X-Ray trace submission and CloudWatch Logs vended-log delivery (state machine logging) do not support resource-level permissions.',
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
    resource: /^arn:aws:s3:::[a-z0-9.-]+\/[^*]+\/\*$/,
    reason:
      'Object keys under a configured table prefix or the `_lake-compactor/` work root: prefix-scoped S3 access is inherently a key wildcard.',
  },
  {
    actions: /^s3:[A-Za-z]+$/,
    resource: /^arn:aws:s3:::[a-z0-9.-]+\/\*$/,
    reason:
      "Whole-bucket object keys: a table at the bucket root, or the compaction workflow's functions and Distributed Map, which read and write the tables' prefixes plus staging and trash under `_lake-compactor/` (narrowing the workflow to those prefixes is an open item of issue 8).",
  },
];

/** `events`, `/events/` → `events/`; '' stays '' (the whole bucket). */
function normalizePrefix(prefix: string): string {
  const trimmed = prefix.replace(/^\/+/, '').replace(/\/+$/, '');
  return trimmed === '' ? '' : `${trimmed}/`;
}

/**
 * One (bucket, prefix) per notification: prefixes nested inside another table's prefix of the same bucket
 * are covered by the outer notification (the profiler resolves the owning table by longest prefix).
 */
export function outermostPrefixes(
  tables: readonly Pick<LakeCompactorTable, 'bucketName' | 'prefix'>[],
): { bucketName: string; prefix: string }[] {
  const all = [...new Set(tables.map((t) => `${t.bucketName}\u0000${normalizePrefix(t.prefix)}`))].map(
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
