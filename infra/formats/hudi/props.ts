// The props Apache Hudi adds to the construct's (composed into `LakeCompactorTable` by the registry, ../index.ts):
// declared here so that what a user reads on a Hudi prop lives with the rest of Hudi's infrastructure.
import type {
  HudiCleanerSetting,
  HudiIndexType,
  HudiLockSetting,
} from '../../../functions/core/formats/hudi/settings.js';

/** What a table's props may say of Apache Hudi. */
export interface HudiTableProps {
  /**
   * Hudi tables only (`format: "hudi"`), and **required** there: the lock the table's writers take, which
   * lake-compactor takes too around its two short critical sections (writing the clustering plan, completing it):
   * - `{ provider: "storage" }`: Hudi >= 1.1's `StorageBasedLockProvider` (`.hoodie/.locks/table_lock.json`);
   * - `{ provider: "dynamodb", table, region?, partitionKey? }`: `DynamoDBBasedLockProvider`'s table
   *   (`hoodie.write.lock.dynamodb.table`) and partition key (default the table's `hoodie.table.name`); the
   *   functions that cluster, commit or settle get `dynamodb:GetItem/PutItem/UpdateItem/DeleteItem` on it;
   * - `{ provider: "none", quietWindowMinutes, singleWriterAcknowledged: true }`: a table with one writer whose table
   *   services are off; nothing is planned or committed until its timeline shows no other instant for that long.
   */
  readonly hudiLock?: HudiLockSetting;
  /** Hudi tables only, and **required**: the writers' `hoodie.index.type` (BLOOM, SIMPLE, GLOBAL_BLOOM, GLOBAL_SIMPLE). */
  readonly hudiIndexType?: HudiIndexType;
  /** The IANA zone the writers mint instants in, required when the table's timeline timezone is LOCAL (Hudi's default). */
  readonly hudiTimezone?: string;
  /**
   * Opt-in cleaning by the vacuum schedule: the writers' `hoodie.cleaner.policy` (`KEEP_LATEST_COMMITS`,
   * `KEEP_LATEST_BY_HOURS`, `KEEP_LATEST_FILE_VERSIONS`) and what it retains (Hudi's default when omitted). The
   * vacuum then deletes replaced file groups and older slices through a `clean` instant under the table's lock,
   * never what its own `retentionHours` still keeps. Omitted: cleaning is left to the table's own cleaner.
   */
  readonly hudiCleaner?: HudiCleanerSetting;
  /**
   * Merge-on-Read tables: delta commits since the last compaction that trigger one (Hudi's
   * `hoodie.compact.inline.max.delta.commits`); default 5. Read by `lake-compactor compact` (table-wide) and by the
   * workflow's plan function (per partition: delta commits that wrote to the run's partition since its last
   * compaction), which then schedules the partition's compaction under the table's lock.
   */
  readonly hudiCompactionDeltaCommits?: number;
}
