// The profiler and its event wiring, created in the LakeCompactor's own scope (construct ids unchanged):
// S3 notifications or EventBridge rules → SQS with a DLQ → the function, in batches with partial failures.
import { Duration } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import type { TriggerEnvironment } from './function-config.js';
import type { LakeCompactorTable } from './lake-compactor-props.js';
import { projectFunction } from './node-function.js';
import { normalizeTablePrefix, type TableLocation } from './s3-access.js';
import { AccountBoundQueueDestination } from './s3-queue-destination.js';
import { grantStateTableAccess } from './state-table-access.js';
import type { TableConfigDelivery } from './table-config-file.js';

/**
 * Receives of a profiler message before SQS moves it to the dead-letter queue. The handler drops an event naming
 * a commit its table's catalog never made current before that (`NOT_CURRENT_MAX_RECEIVES`), so a lost race does
 * not end in the DLQ.
 */
export const PROFILER_MAX_RECEIVES = 5;

/** Default of `profilerReservedConcurrency`: the profiler's SQS event source polled with 5 before it existed. */
export const DEFAULT_PROFILER_RESERVED_CONCURRENCY = 5;

/** What the profiler function is given (see `LakeCompactorProps.profilerMemoryMb` and neighbours). */
export interface ProfilerFunctionProps {
  readonly stateTable: dynamodb.ITable;
  readonly tableConfig: TableConfigDelivery;
  /** TRIGGERS_DRY_RUN and RUN_CAPS, shared with the sweep. */
  readonly triggers: TriggerEnvironment;
  readonly memorySize: number;
  /** Reserved concurrency, or `false` to reserve nothing (see `LakeCompactorProps.profilerReservedConcurrency`). */
  readonly reservedConcurrency: number | false;
}

/** The profiler Lambda as `Profiler` in `scope`, reading the state table and writing its own items of it. */
export function createProfilerFunction(
  scope: Construct,
  props: ProfilerFunctionProps,
): nodejs.NodejsFunction {
  const reserved = props.reservedConcurrency;
  const profiler = projectFunction(scope, 'Profiler', 'profiler.ts', {
    description: 'Keeps per-partition file statistics exact from S3 notifications',
    memorySize: props.memorySize,
    timeout: Duration.seconds(60),
    ...(reserved === false ? {} : { reservedConcurrentExecutions: reserved }),
    environment: {
      TABLE_NAME: props.stateTable.tableName,
      ...props.tableConfig.environment,
      ...props.triggers,
    },
    codeFiles: props.tableConfig.codeFiles,
  });
  // Statistics, per-file items, markers and run counts; never the workflow journal (state-table-access.ts).
  grantStateTableAccess(props.stateTable, profiler, 'profiler');
  return profiler;
}

/** Where the profiler's events come from. */
export interface ProfilerWiringProps {
  /** Every table, each with its bucket (the owned bucket's name is a deploy-time token). */
  readonly tables: readonly (LakeCompactorTable & { bucketName: string })[];
  /** The bucket the construct created, if any: its notifications are configured on it, not on an import. */
  readonly ownedBucket?: s3.Bucket;
  /** The profiler's reserved concurrency (see `ProfilerFunctionProps`); the event source polls with at most that. */
  readonly reservedConcurrency: number | false;
}

/**
 * S3 object events → SQS (DLQ after 5 receives) → profiler in batches with partial batch failures. One
 * notification per bucket and distinct outermost prefix (S3 refuses overlapping configurations); tables
 * whose bucket already sends its events to EventBridge get a rule targeting the same queue instead.
 */
export function addProfilerWiring(
  scope: Construct,
  profilerFunction: nodejs.NodejsFunction,
  props: ProfilerWiringProps,
): {
  queue: sqs.Queue;
  deadLetterQueue: sqs.Queue;
} {
  const { tables, ownedBucket } = props;
  // Without a reservation, the event source's own default.
  const maxConcurrency = props.reservedConcurrency === false ? 5 : props.reservedConcurrency;
  const deadLetterQueue = new sqs.Queue(scope, 'ProfilerDlq', {
    retentionPeriod: Duration.days(14),
    encryption: sqs.QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
  });
  const queue = new sqs.Queue(scope, 'ProfilerEvents', {
    // Six times the function timeout, as AWS recommends for SQS event sources (retries within a batch).
    visibilityTimeout: Duration.seconds(6 * 60),
    retentionPeriod: Duration.days(4),
    encryption: sqs.QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    deadLetterQueue: { queue: deadLetterQueue, maxReceiveCount: PROFILER_MAX_RECEIVES },
  });

  const buckets = new Map<string, s3.IBucket>();
  const bucketOf = (name: string): s3.IBucket => {
    // The owned bucket is the real Bucket (its notification configuration is managed like any other).
    if (ownedBucket !== undefined && name === ownedBucket.bucketName) return ownedBucket;
    let bucket = buckets.get(name);
    if (bucket === undefined) {
      bucket = s3.Bucket.fromBucketName(scope, `Bucket${buckets.size}`, name);
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
    // The queue policy names the bucket and its owner account (see AccountBoundQueueDestination).
    const destination = new AccountBoundQueueDestination(queue);
    bucket.addEventNotification(s3.EventType.OBJECT_CREATED, destination, ...filters);
    bucket.addEventNotification(s3.EventType.OBJECT_REMOVED, destination, ...filters);
  }
  const bridged = tables.filter((t) => t.eventSource === 'eventbridge');
  bridged.forEach((t, i) => {
    const prefix = normalizeTablePrefix(t.prefix);
    new events.Rule(scope, `ObjectEvents${i}`, {
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

  profilerFunction.addEventSource(
    new SqsEventSource(queue, {
      // The partition is written twice per batch (register, commit) whatever its events, so larger batches
      // spread that over more events: measured (npm run bench -- profiler --batch N, 18 partitions written,
      // 2026-12-06) 1.32 write units per event at 100, 1.10 at 250, 1.02 at 500, 0.98 at 1,000 and 0.94 at
      // 2,500, where two concurrent batches over the same partitions waited on each other's registrations
      // (0.43 read units per event against 0.14 at 1,000). 1,000 keeps a batch ~1.5 MB of notifications,
      // well inside Lambda's 6 MB payload (which caps a batch of long keys anyway), and ~2 s of handler CPU.
      batchSize: 1000,
      // A batch closes when full or when the window ends, so below BatchSize / window events per second the
      // window, not BatchSize, sets how many events share the partition writes: at 5 s, 100 events/s made
      // batches of ≤ 500 (1.02+ write units per event), at 30 s they fill. Statistics lag by at most the
      // window, against the 15-minute quiet window a trigger waits for. A received message spends at most the
      // window plus the 60 s timeout of its 360 s visibility timeout, so a writer's registration (90 s from
      // its start, plus 30 s of clock skew) has lapsed before the message is redelivered (profiler-wiring.test.ts
      // checks that sum against the visibility timeout).
      maxBatchingWindow: Duration.seconds(30),
      reportBatchItemFailures: true,
      // Bounds contention on a hot partition's item and DynamoDB spend during backlogs, and never polls
      // more than the reserved concurrency (see `profilerReservedConcurrency`).
      maxConcurrency,
    }),
  );
  return { queue, deadLetterQueue };
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
