// The props of the LakeCompactor construct, the public configuration API (re-exported by lake-compactor.ts):
// readonly, each with its @default, and the shape the JSON deployment config and infra/props-schema.ts check.
import type { RemovalPolicy } from 'aws-cdk-lib';
import type * as events from 'aws-cdk-lib/aws-events';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import type { TableFormatName } from '../functions/core/formats/index.js';
import type { StatisticsMode } from '../functions/core/parquet/statistics-policy.js';
import type { Reader } from '../functions/core/readers.js';
import type { Codec, SchemaFidelity } from '../functions/ports/parquet-engine.js';
import type { CompactionWorkflowProps } from './compaction-workflow.js';
import type { FormatTableProps, FormatWorkflowProps } from './formats/index.js';
import type { MaintenanceSchedulesProps } from './maintenance-props.js';
import type { TableIsolationMode } from './table-isolation.js';

/**
 * One table the compactor looks after. The settings a table format owns (a catalog, a log store, …)
 * are declared by the format's infra module (infra/formats/<name>/props.ts) and composed here.
 */
export interface LakeCompactorTable extends FormatTableProps {
  /** Unique, stable name used in executions, metrics and DynamoDB keys. */
  readonly name: string;
  /**
   * Name of the existing bucket holding the table. Without it, the table lives in the data bucket the
   * construct creates (`LakeCompactor.dataBucket`, configured by `LakeCompactorProps.dataBucket`).
   * @default the construct's own data bucket
   */
  readonly bucketName?: string;
  /** Key prefix of the table root, e.g. `events/`. */
  readonly prefix: string;
  /**
   * ARN of the KMS key that encrypts the table's objects (SSE-KMS: the bucket's default encryption
   * key, or the key its writers set). The functions that read or write the table's objects get
   * `kms:Decrypt` and `kms:GenerateDataKey` on it and the state machine `kms:Decrypt` (it reads the
   * plans beside the table) — without them every GET of an SSE-KMS object is denied. A key ARN
   * (`arn:aws:kms:<region>:<account>:key/<id>`), not an alias: IAM matches decrypt requests by key.
   * The grant goes into the roles' policies, so the key's policy must delegate to IAM (the default key
   * policy does); a key in another account must also allow this account in its key policy. Tables in
   * the construct's own bucket use `dataBucket.encryptionKey` instead.
   * @default none — the table's objects use SSE-S3 (or SSE-KMS with the AWS-managed `aws/s3` key, which
   * needs no grant within the account)
   */
  readonly kmsKeyArn?: string;
  /**
   * Table format: one of the registered formats (functions/core/formats/index.ts; docs/table-formats.md lists
   * them); any other is refused at synth.
   * @default 'parquet'
   */
  readonly format?: TableFormatName;
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
  readonly codec?: Codec;
  /**
   * Let integer, date, time and timestamp columns be written DELTA_BINARY_PACKED where a trial
   * encoding finds it no larger than PLAIN: faster to write and usually smaller. Only when every
   * reader of the table supports Parquet's DELTA encodings (Spark's vectorized reader from 3.3,
   * Trino/Athena engine v3, DuckDB, pyarrow, Polars).
   * @default on iff `readers` are declared and every one reads it, else false — PLAIN and dictionary
   * encodings only, which every reader reads
   */
  readonly deltaEncoding?: boolean;
  /**
   * The reader families the table must stay readable by (`spark-3.3`, `spark-legacy`, `trino`, `athena-v3`,
   * `athena-v2`, `duckdb`, `pyarrow`, `polars`, `hive`, `impala`, `redshift-spectrum`, `any`): what the writer
   * may use follows from them (functions/core/readers.ts).
   * @default undeclared — any reader
   */
  readonly readers?: readonly Reader[];
  /**
   * Column-chunk statistics: `all` on every column, or `auto`: none on string columns whose sampled values are
   * nearly all distinct and in no order (min/max cannot prune them; ~11 % less encode time on such columns).
   * @default 'all'
   */
  readonly statistics?: StatisticsMode;
  /** Columns that keep statistics under `auto` (partition, sort and Z-order columns always do). */
  readonly keepStatistics?: readonly string[];
  /**
   * `logical`: inputs in legacy physical forms (INT96 timestamps, BYTE_ARRAY/FIXED decimals, 2-level lists,
   * MAP_KEY_VALUE maps) are written in the standard ones, values unchanged; `exact` refuses them instead.
   * @default 'exact'
   */
  readonly schemaFidelity?: SchemaFidelity;
  /**
   * Worker threads that encode a group's outputs in parallel: 1 keeps encoding on one thread; more only help a
   * compact function with the cores, and are capped at its cores and memory (256 MB per worker within half of it).
   * @default the compact function's vCPUs by its memory (two at the 3,008 MB default)
   */
  readonly encodeWorkers?: number;
  /**
   * Sort compacted files by these columns (strategy `sort`), for data skipping.
   * @default none — rows keep their order (strategy `binpack`)
   */
  readonly sortColumns?: readonly string[];
  /**
   * Z-order compacted files by these columns (strategy `zorder`, as `OPTIMIZE … ZORDER BY`; at least two), for data
   * skipping on several columns at once. Not together with `sortColumns`.
   * @default none — rows keep their order (strategy `binpack`)
   */
  readonly zOrderColumns?: readonly string[];
  /**
   * Overrides of the trigger policy for this table (`minInputFiles`, `smallFileRatioThreshold`,
   * `quietMinutes`, `cooldownMinutes`, `lookbackDays`, …; see functions/core/policy.ts).
   * @default the policy defaults
   */
  readonly policy?: Readonly<Record<string, number>>;
}

/**
 * The data bucket LakeCompactor creates when a table names no bucket: versioned (the commit protocol
 * retires inputs by delete and restores them from their previous version), private, TLS-only, encrypted,
 * and kept on stack deletion by default. Durations are whole days (S3 lifecycle granularity; JSON-friendly).
 */
export interface LakeCompactorDataBucketProps {
  /**
   * What happens to the bucket when the stack is deleted. `destroy` only succeeds on an empty bucket.
   * @default RemovalPolicy.RETAIN — it holds the tables' data
   */
  readonly removalPolicy?: RemovalPolicy;
  /**
   * Days a noncurrent version (a retired input, an overwritten or deleted object) is kept before S3
   * expires it. It backs up vacuum (which is dry-run by default) and must not undercut the vacuum
   * retention: within the retention a failed commit is undone, and readers may still hold, the previous
   * version. Delete markers left with no versions are removed too.
   * @default the vacuum retention in whole days, rounded up (168 h → 7)
   */
  readonly noncurrentVersionExpirationDays?: number;
  /**
   * Days after which objects under the work root's `staging/` expire (their noncurrent versions after one
   * more day). A group's staging lives from its compact step to its commit — at most a few hours, even with
   * every retry of 15-minute steps — and vacuum treats a run stuck before publishing as abandoned only after
   * `vacuum.abandonedAfterHours` (24 h). A week also leaves an operator time to finish a commit stuck in
   * `publishing` (which rolls forward from staging) after the failure alarm. A partition rewrite's dry-run
   * previews (`previews/`, rows of the table) expire after the same days.
   * @default 7 (at least 2, and more than vacuum.abandonedAfterHours)
   */
  readonly stagingExpirationDays?: number;
  /**
   * Days after which unfinished multipart uploads (a compact step that died mid-upload, writer debris) are
   * aborted. Compaction uploads last minutes.
   * @default vacuum.debrisAgeHours in whole days, rounded up (72 h → 3)
   */
  readonly abortIncompleteMultipartUploadDays?: number;
  /**
   * KMS key for SSE-KMS (with an S3 Bucket Key to keep KMS requests low). The functions that read or
   * write objects get `kms:Decrypt` and `kms:GenerateDataKey` on it, the state machine `kms:Decrypt`.
   * @default S3-managed keys (SSE-S3)
   */
  readonly encryptionKey?: kms.IKey;
  /**
   * Bucket receiving the data bucket's server access logs.
   * @default none — CloudTrail S3 data events are the recommended audit trail for a data lake; the
   * cdk-nag finding AwsSolutions-S1 is acknowledged with that reason
   */
  readonly serverAccessLogsBucket?: s3.IBucket;
  /**
   * Key prefix of the server access logs. Only with `serverAccessLogsBucket`.
   * @default no prefix
   */
  readonly serverAccessLogsPrefix?: string;
}

/** How the profiler and the sweep act on their verdicts. */
export interface LakeCompactorTriggerProps {
  /**
   * Record every verdict (shown by `lake-compactor status` and in the decision items) but start no
   * compaction: a trial mode for a new table, to see what would be compacted and when. Operators can still
   * start runs from the console (their leases are recovered as usual, and the sweep still starts settle runs
   * for a partition one of them left needs-attention: it only finishes what that run left). A due partition
   * stays due.
   * @default false
   */
  readonly dryRun?: boolean;
  /**
   * Most compactions running at once over all tables of this deployment. Counted exactly in DynamoDB, in
   * the same transaction that leases a partition and in the one that releases it; the profiler and the
   * sweep start a due partition only while fewer runs are counted, and otherwise record it as
   * `waiting: concurrency cap … reached` — it stays due and the next batch or sweep starts it once a run
   * ends. Each run fans out to up to `workflow.distributedMaxConcurrency` compact invocations, so this
   * bounds the Lambda concurrency compaction can take from the account. Runs operators start from the
   * console are counted but never refused.
   * @default 50
   */
  readonly maxConcurrentRuns?: number;
  /**
   * Most compactions running at once per table (see `maxConcurrentRuns`; both caps apply).
   * @default 10
   */
  readonly maxConcurrentRunsPerTable?: number;
  /**
   * Per-table caps by table name, winning over `maxConcurrentRunsPerTable`.
   * @default none
   */
  readonly maxConcurrentRunsByTable?: Readonly<Record<string, number>>;
}

/** The sweep's schedules. Strings are EventBridge schedule expressions, so the JSON config can set them. */
export interface LakeCompactorSweepProps {
  /**
   * The sweep. A partition waiting only for its quiet window or cooldown is started at most this late, and
   * a lease whose execution died is released at most this late (plus a 5-minute grace).
   * @default rate(15 minutes)
   */
  readonly schedule?: events.Schedule | string;
  /**
   * The reconcile pass, which lists every table (LIST requests cost money on large tables).
   * @default cron(0 3 ? * SUN *) — weekly
   */
  readonly reconcileSchedule?: events.Schedule | string;
}

/**
 * Everything a deployment configures; the JSON config file (`lake-compactor.config.json`) is these props plus
 * `stackName`. One schema checks them at synth (infra/props-schema.ts): an unknown key at any level, a schedule
 * EventBridge would refuse, an out-of-range limit or overlapping table roots fail synthesis, all reported together.
 */
export interface LakeCompactorProps {
  /** Tables to profile and compact. At least one. */
  readonly tables: readonly LakeCompactorTable[];
  /**
   * Removal policy of stateful resources (the DynamoDB table).
   * @default RemovalPolicy.RETAIN — the journal is what makes a crashed commit recoverable.
   */
  readonly removalPolicy?: RemovalPolicy;
  /**
   * Memory of the profiler function, MB (Lambda gives CPU in proportion). Each batch of up to 100 events
   * is a few DynamoDB transactions; more memory only shortens backlogs.
   * @default 512
   */
  readonly profilerMemoryMb?: number;
  /**
   * Reserved concurrency of the profiler: compaction runs can never take the concurrency the profiler needs
   * to keep statistics current, and the profiler never takes more than this. Its SQS event source polls
   * with at most this many concurrent invocations (2–1000), so it is never throttled by its own reservation
   * (throttled messages would count towards the dead-letter queue's 5 receives). Lambda keeps at least 100
   * of the account's concurrency unreserved, which the construct cannot check: in an account whose limit
   * leaves no room (new accounts may start at 10), deploying fails on this reservation — ask for a higher
   * limit, or set `false` to reserve nothing (the event source then polls with 5).
   * @default 5
   */
  readonly profilerReservedConcurrency?: number | false;
  /**
   * Memory of the sweep function, MB. The sweep reads every partition item of every table once per run
   * (fragmentation metrics) and lists the tables weekly (reconcile); raise it for very many partitions.
   * It also settles what a dead run left, which for a `delete-rebuild` group being undone means
   * re-creating inputs from outputs of up to 160 MiB with the Parquet engine (peak RSS ~650 MB measured
   * at 129 MB): the same 1,024 MB as the commit, rollback and finalize functions that run that undo.
   * @default 1024
   */
  readonly sweepMemoryMb?: number;
  /**
   * The data bucket the construct creates for every table without `bucketName`. Only valid when at least
   * one table has no `bucketName`.
   * @default the LakeCompactorDataBucketProps defaults (created only when some table has no `bucketName`)
   */
  readonly dataBucket?: LakeCompactorDataBucketProps;
  /**
   * Tuning of the compaction workflow (inline/Distributed Map limits, concurrency, memory, versioned buckets).
   * The owned data bucket is always treated as versioned.
   * @default the CompactionWorkflow defaults
   */
  readonly workflow?: Omit<
    CompactionWorkflowProps,
    // What the construct fills in, the formats' workflow props among them (from the tables' settings).
    'stateTable' | 'tablesJson' | 'tables' | 'encryptionKeys' | 'workRoot' | keyof FormatWorkflowProps
  >;
  /**
   * Automatic triggering by the profiler and the sweep.
   * @default triggers start executions (`dryRun: false`)
   */
  readonly triggers?: LakeCompactorTriggerProps;
  /**
   * When the sweep runs (catch-up trigger for partitions whose quiet window or cooldown passed, stuck-lease
   * recovery, fragmentation metrics) and when it reconciles counts against S3 listings.
   * @default sweep every 15 minutes, reconcile Sundays 03:00 UTC
   */
  readonly sweep?: LakeCompactorSweepProps;
  /**
   * Vacuum and tiering schedules: schedule, dry-run flag and retention / rules of each.
   * @default vacuum daily 04:00 UTC, tiering weekly Sunday 05:00 UTC, both dry-run (see Maintenance)
   */
  readonly maintenance?: MaintenanceSchedulesProps;
  /**
   * This deployment's work root in every bucket of its tables: where runs keep their plans, items files,
   * staging and trash, the journal its oversized file lists, and vacuum and tiering their checkpoints. Vacuum
   * lists and judges only this work root, and removes what it finds there that this deployment's journal does
   * not know (staging without an entry after `abandonedAfterHours`, trash after the retention): **two
   * deployments (stacks) on one bucket must each use a different work root, neither inside the other**, or
   * each vacuums the other's in-flight staging and trash. Synth refuses a clash between LakeCompactors of one
   * CDK app that name the same bucket; across apps nothing can check it.
   *
   * A relative key prefix ending with `/` whose first folder starts with `_` (table readers, the planner and
   * the profiler skip such folders), of letters, digits, `_`, `.` and `-`; it holds no table root. Run the
   * `lake-compactor` CLI beside a deployment with `--work-root` set to it. Change it only while no run is in
   * flight: what the previous work root holds is no longer vacuumed (remove it by hand once its runs ended).
   * @default '_lake-compactor/'
   */
  readonly workRoot?: string;
  /**
   * How far one run's S3 access reaches. Without isolation each function's role covers every configured table its
   * step touches, so a bug or forged table metadata naming another table's key would be authorised.
   *
   * - `"session-policy"`: each function that reaches table data gets a data-access role of its own holding exactly
   *   its table-data grants (S3, KMS through S3, S3 Tables data), and loses them from its own role; per table it
   *   serves, it assumes that role (`sts:AssumeRole`, trusted for its role alone) with a session policy naming only
   *   that table's prefix, the work root and the table's KMS and S3 Tables use. The state machine keeps its own
   *   read of `plans/`. Costs nothing at rest (IAM roles are free); per warm function environment, one
   *   AssumeRole per table and hour (STS is free; tens of milliseconds on the first request of a table). The
   *   functions run outside any VPC, so STS is reachable; a deployment that put them in one would need an STS
   *   interface endpoint.
   * - `"none"`: the function roles hold the table grants themselves (per step, on every configured table).
   *
   * Why `"session-policy"` by default: a table's metadata is written by systems we do not control, and the
   * in-process key check (which holds in both modes) is the only bound without it. Synth refuses a table whose
   * session policy would not fit STS's 2,048 characters (a very long prefix or work root), naming it. Choose
   * `"none"` only where STS cannot be reached (functions placed in a VPC without an STS endpoint) or while
   * diagnosing an IAM denial; upgrading from a release that defaulted to `"none"` adds the data-access roles and
   * moves the table grants on the next deploy, with no change to the tables.
   * @default "session-policy"
   */
  readonly tableIsolation?: TableIsolationMode;
  /**
   * Who hears the alarms and the run notifications. They all go to one SNS topic (the `AlarmTopicArn` output);
   * without a subscription nobody receives them. Settable from the JSON deployment config.
   * @default a new topic, no subscription
   */
  readonly alarms?: LakeCompactorAlarmProps;
}

/** Where the alarms and run notifications go (`LakeCompactorProps.alarms`). */
export interface LakeCompactorAlarmProps {
  /**
   * E-mail addresses subscribed to the topic. Each receives a confirmation message from AWS after the deploy and
   * gets nothing until it confirms.
   * @default none
   */
  readonly emails?: readonly string[];
  /**
   * An existing SNS topic to send to instead of a new one (the topic a team's pager, AWS Chatbot channel or
   * incident tool already subscribes to), by ARN. Its access policy must let CloudWatch alarms
   * (`cloudwatch.amazonaws.com`) publish, and this stack's state machine publishes with its role. Not together
   * with `workflow.notificationTopic` (the same choice from CDK code).
   * @default a new topic
   */
  readonly topicArn?: string;
  /**
   * HTTPS endpoints subscribed to the topic (a webhook of an incident tool; each must confirm the subscription
   * by visiting the SubscribeURL SNS posts to it).
   * @default none
   */
  readonly httpsEndpoints?: readonly string[];
}
