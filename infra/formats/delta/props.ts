// The props Delta Lake adds to the construct's (composed into `LakeCompactorTable` and `VacuumScheduleProps` by
// the registry, ../index.ts): declared here so that what a user reads on a Delta prop lives with the rest of
// Delta's infrastructure, and the shared props name no format.
import type { DeltaLogStoreSetting } from '../../../functions/core/formats/delta/coordination.js';

/** What a table's props may say of Delta Lake. */
export interface DeltaTableProps {
  /**
   * Delta Lake tables only (`format: "delta"`; refused on any other), and **required** there: how the table's
   * commits are coordinated with its other writers, which must all coordinate the same way. Nothing is assumed:
   * the wrong coordination loses commits silently. Choose by the writers the table has:
   * - `{ type: "s3-conditional" }`: they commit with put-if-absent (`If-None-Match: *`): delta-rs ≥ 1.0 (Python
   *   `deltalake` ≥ 1.6.1, and Polars writing through it), delta-rs ≥ 0.23 without a locking provider. Not
   *   Spark or Delta Kernel (Java), whatever their log store. `checkDynamoDbTable: { tableName, region }` names a
   *   DynamoDB commit table to refuse the table if it holds entries of it (the functions get `dynamodb:Query`).
   * - `{ type: "dynamodb", tableName, region, tablePathScheme? }`: they use Spark's
   *   `io.delta.storage.S3DynamoDBLogStore` (Spark, Delta Kernel, or delta-rs < 1.0 with
   *   AWS_S3_LOCKING_PROVIDER=dynamodb) through that existing DynamoDB table
   *   (`spark.io.delta.storage.S3DynamoDBLogStore.ddb.tableName` / `.ddb.region`, Spark's default region being
   *   us-east-1; `tablePathScheme: "s3a"` when Spark addresses the table as `s3a://`); the functions that commit,
   *   settle or vacuum get `dynamodb:GetItem/PutItem/UpdateItem/Query` on it.
   * - `{ type: "quiet-window", windows: ["02:00-05:00"], quietMinutes?, acceptUncoordinatedWriters: true }`: they
   *   have no coordination (Spark's default S3SingleDriverLogStore): commits happen only inside the UTC windows in
   *   which those writers are stopped; a writer committing inside one anyway can silently overwrite a commit.
   * See docs/table-formats.md, "Commit coordination".
   */
  readonly deltaLogStore?: DeltaLogStoreSetting;
}

/** What the vacuum schedule's props may say of Delta Lake. */
export interface DeltaVacuumProps {
  /**
   * Hours a Delta table's (`format: "delta"`) removed files are kept before Delta VACUUM deletes them, for every
   * Delta table: overrides each table's own `delta.deletedFileRetentionDuration`, which is used when unset.
   * @default unset — each table's property (one week when the table sets none)
   */
  readonly deltaRetentionHours?: number;
}
