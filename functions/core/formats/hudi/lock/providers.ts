// Which of Hudi's lock providers lake-compactor can take part in, by the class name the table's writers configure
// (`hoodie.write.lock.provider`). A commit must take the very lock the writers take, so every other provider is
// refused by name, with what to configure instead — never replaced by a lock the writers do not see.
// Class names read from apache/hudi: hudi-client/hudi-client-common/src/main/java/org/apache/hudi/client/transaction/
// lock/ (StorageBasedLockProvider, ZookeeperBasedLockProvider, ZookeeperBasedImplicitBasePathLockProvider,
// FileSystemBasedLockProvider, InProcessLockProvider, LocalProcessLockProvider), hudi-aws/.../aws/transaction/lock/
// (DynamoDBBasedLockProvider, DynamoDBBasedImplicitPartitionKeyLockProvider) and hudi-sync/hudi-hive-sync/.../hive/
// transaction/lock/HiveMetastoreBasedLockProvider.
import { HudiLockProviderRefusedError } from './errors.js';

/** The providers lake-compactor speaks, by their fully qualified class names. */
export const HUDI_LOCK_PROVIDER_CLASSES = {
  dynamodb: 'org.apache.hudi.aws.transaction.lock.DynamoDBBasedLockProvider',
  'dynamodb-implicit': 'org.apache.hudi.aws.transaction.lock.DynamoDBBasedImplicitPartitionKeyLockProvider',
  storage: 'org.apache.hudi.client.transaction.lock.StorageBasedLockProvider',
} as const;

/**
 * A provider lake-compactor takes the lock of: the DynamoDB lock (adapter) with a configured partition key or one
 * derived from the base path (implicit-partition-key.ts), or the storage-based lock (core).
 */
export type HudiLockProviderKind = keyof typeof HUDI_LOCK_PROVIDER_CLASSES;

/** What to configure instead of a refused provider: the two supported locks, or the explicit no-lock opt-in. */
export const HUDI_LOCK_ALTERNATIVES = `Configure the table's writers and lake-compactor with one lock both take: ${HUDI_LOCK_PROVIDER_CLASSES.dynamodb} (hoodie.write.lock.dynamodb.table, .region and .partition_key — declare the same table, region and partition key here) or, with Hudi >= 1.1, ${HUDI_LOCK_PROVIDER_CLASSES.storage} (the lock file .hoodie/.locks/table_lock.json beside the table; nothing else to declare). Only for a table with a single writer whose table services (async compaction, clustering, cleaning) are off: the explicit no-lock opt-in with a quiet window, in which that writer must not commit — a commit inside the window can conflict with lake-compactor's, and the loser's rows are then lost or resurrected`;

interface Refusal {
  readonly reason: string;
  readonly remedy?: string;
}

const REFUSED: ReadonlyMap<string, Refusal> = new Map([
  [
    'ZookeeperBasedLockProvider',
    {
      reason:
        'its lock is an ephemeral ZooKeeper node held through a live ZooKeeper session, and lake-compactor has no ZooKeeper client (nor could a short-lived function keep a session)',
    },
  ],
  [
    'ZookeeperBasedImplicitBasePathLockProvider',
    {
      reason:
        'its lock is an ephemeral ZooKeeper node (at a path derived from the base path) held through a live ZooKeeper session, and lake-compactor has no ZooKeeper client',
    },
  ],
  [
    'HiveMetastoreBasedLockProvider',
    {
      reason:
        "its lock lives in the Hive Metastore's lock manager (Thrift lock/heartbeat calls, ZooKeeper or DbTxnManager behind it), which lake-compactor does not speak; the AWS Glue Data Catalog has no such lock",
    },
  ],
  [
    'FileSystemBasedLockProvider',
    {
      reason:
        'it relies on an atomic create-if-absent of a lock file through the Hadoop file system, which object stores do not give through S3A (Hudi documents it for HDFS-like file systems), so beside it no lock excludes anybody on S3',
    },
  ],
  [
    'InProcessLockProvider',
    {
      reason:
        "it is a lock inside one JVM: it excludes only the writer's own threads (its async table services), never another process such as lake-compactor",
      remedy:
        "If that writer's table services are off and it is the only writer, use the explicit no-lock opt-in with a quiet window; otherwise",
    },
  ],
  [
    'LocalProcessLockProvider',
    {
      reason:
        "it is a lock inside one JVM, which excludes only that writer's own threads, never another process",
      remedy:
        "If that writer's table services are off and it is the only writer, use the explicit no-lock opt-in with a quiet window; otherwise",
    },
  ],
]);

/** `org.apache.hudi.….ZookeeperBasedLockProvider` → `ZookeeperBasedLockProvider`. */
function simpleName(className: string): string {
  return className.trim().split('.').at(-1) ?? '';
}

/**
 * The lock lake-compactor must take for a table whose writers configure `providerClass`. The package is not
 * compared (Hudi moved the DynamoDB provider between modules), only the class's own name.
 * @throws HudiLockProviderRefusedError for every provider lake-compactor cannot take part in, and unknown ones.
 */
export function hudiLockProviderKind(providerClass: string): HudiLockProviderKind {
  const name = simpleName(providerClass);
  if (name === 'DynamoDBBasedLockProvider') return 'dynamodb';
  if (name === 'DynamoDBBasedImplicitPartitionKeyLockProvider') return 'dynamodb-implicit';
  if (name === 'StorageBasedLockProvider') return 'storage';
  throw refusedHudiLockProvider(providerClass);
}

/** The refusal of `providerClass` (also for a class no Hudi release ships). */
export function refusedHudiLockProvider(providerClass: string): HudiLockProviderRefusedError {
  const refusal = REFUSED.get(simpleName(providerClass));
  if (refusal === undefined) {
    return new HudiLockProviderRefusedError(
      providerClass,
      'it is not a Hudi lock provider lake-compactor knows, so it cannot tell which lock the writers take',
      `${HUDI_LOCK_ALTERNATIVES}.`,
    );
  }
  const alternatives = HUDI_LOCK_ALTERNATIVES.charAt(0).toLowerCase() + HUDI_LOCK_ALTERNATIVES.slice(1);
  return new HudiLockProviderRefusedError(
    providerClass,
    refusal.reason,
    refusal.remedy === undefined ? `${HUDI_LOCK_ALTERNATIVES}.` : `${refusal.remedy} ${alternatives}.`,
  );
}
