// Hudi table locks: the port (lock.ts), Hudi 1.1's storage-based lock over the ObjectStore port (storage-lock.ts), and
// which of Hudi's lock providers can be taken part in (providers.ts). The DynamoDB lock is an adapter:
// functions/adapters/formats/hudi/dynamodb-lock.ts.
export {
  HudiLockLostError,
  HudiLockProviderRefusedError,
  HudiLockStateError,
  HudiLockUnavailableError,
} from './errors.js';
export { hudiImplicitDynamoDbPartitionKey, s3aToS3 } from './implicit-partition-key.js';
export {
  DEFAULT_HUDI_LOCK_WAIT_MS,
  type HeartbeatTimers,
  type HudiLockAcquireOptions,
  type HudiLockHandle,
  type HudiLockReleaseOutcome,
  type HudiTableLock,
  LeaseState,
  type WithHudiLockOptions,
  withHudiLock,
} from './lock.js';
export {
  HUDI_LOCK_ALTERNATIVES,
  HUDI_LOCK_PROVIDER_CLASSES,
  type HudiLockProviderKind,
  hudiLockProviderKind,
  refusedHudiLockProvider,
} from './providers.js';
export {
  encodeStorageLockData,
  HUDI_STORAGE_LOCK_CLOCK_DRIFT_MS,
  HUDI_STORAGE_LOCK_DEFAULTS,
  HUDI_STORAGE_LOCK_FILE,
  isStorageLockLive,
  parseStorageLockData,
  StorageBasedHudiLock,
  type StorageBasedHudiLockOptions,
  type StorageLockData,
  storageLockKey,
} from './storage-lock.js';
