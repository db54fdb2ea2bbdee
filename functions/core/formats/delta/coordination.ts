// How a Delta table's commits are coordinated, as configured per table (`deltaLogStore`), and what the composition
// root must hand the format so it can honour that setting. All writers of a table must use the same coordination
// (two writers coordinating differently can both "win" the same version), so it is a property of the table, never
// of the deployment: one table may share a DynamoDB commit table with its Spark writers while another, written
// only by delta-rs, relies on S3 conditional writes.
//
// The names follow what a data engineer already configured on the Spark side:
//   spark.delta.logStore.s3a.impl = io.delta.storage.S3DynamoDBLogStore   →  type: "dynamodb", tablePathScheme: "s3a"
//   spark.io.delta.storage.S3DynamoDBLogStore.ddb.tableName                →  tableName
//   spark.io.delta.storage.S3DynamoDBLogStore.ddb.region                   →  region
import { z } from 'zod';
import type { ObjectStore } from '../../../ports/object-store.js';
import { InvalidInputError } from '../../errors.js';
import type { DeltaLogStore } from './log-store.js';

/** DynamoDB's own rule for table names: 3–255 of letters, digits, `_`, `.` and `-`. */
const DYNAMODB_TABLE_NAME = /^[A-Za-z0-9_.-]{3,255}$/;

/** An AWS region code (`eu-west-1`, `us-gov-west-1`, `cn-north-1`), not a display name. */
const AWS_REGION = /^[a-z]{2}(-[a-z]+)+-\d+$/;

/** The coordination of the table's commits when its config names none: what delta-rs and Delta Kernel use on S3. */
export const DEFAULT_DELTA_LOG_STORE = { type: 's3-conditional' } as const;

/** `deltaLogStore: { type: "s3-conditional" }`: `PutObject` with `If-None-Match: *` on the commit file. */
const s3ConditionalSchema = z.strictObject({ type: z.literal('s3-conditional') });

/** `deltaLogStore: { type: "dynamodb", ... }`: Spark's `S3DynamoDBLogStore` commit-entry protocol. */
const dynamoDbSchema = z.strictObject({
  type: z.literal('dynamodb'),
  /** The commit-entry table the table's other writers use (Spark's `ddb.tableName`; both default `delta_log`). */
  tableName: z.string().regex(DYNAMODB_TABLE_NAME, {
    error: (issue) =>
      `${JSON.stringify(issue.input)} is not a DynamoDB table name (3-255 letters, digits, "_", "." or "-"); use the value of spark.io.delta.storage.S3DynamoDBLogStore.ddb.tableName`,
  }),
  /** Region of that table (Spark's `ddb.region`). @default the function's (the CLI's: AWS_REGION) */
  region: z
    .string()
    .regex(AWS_REGION, {
      error: (issue) =>
        `${JSON.stringify(issue.input)} is not an AWS region code such as "eu-west-1"; use the value of spark.io.delta.storage.S3DynamoDBLogStore.ddb.region`,
    })
    .optional(),
  /**
   * The scheme the other writers address the table with, which is part of every entry's key (`tablePath`): a
   * Spark writer configured through `spark.delta.logStore.s3a.impl` writes `s3a://bucket/path`, and entries of
   * `s3://` and `s3a://` never exclude each other. @default 's3'
   */
  tablePathScheme: z
    .enum(['s3', 's3a'], {
      error: (issue) =>
        `${JSON.stringify(issue.input)} is not a table path scheme: use "s3" or "s3a", the scheme of the table's path in the other writers' entries`,
    })
    .optional(),
});

/** The `deltaLogStore` field of a Delta table's config. */
export const deltaLogStoreSchema = z.discriminatedUnion('type', [s3ConditionalSchema, dynamoDbSchema], {
  error: (issue) => {
    if (issue.code !== 'invalid_union') {
      return 'must be an object such as { "type": "s3-conditional" } or { "type": "dynamodb", "tableName": "delta_log" }';
    }
    const type = (issue.input as { type?: unknown } | undefined)?.type;
    return `must be "s3-conditional" (S3 conditional writes, the default) or "dynamodb" (Spark's S3DynamoDBLogStore, with tableName), ${type === undefined ? 'and is missing' : `not ${JSON.stringify(type)}`}`;
  },
});

export type DeltaLogStoreSetting = z.output<typeof deltaLogStoreSchema>;
export type DynamoDbLogStoreSetting = Extract<DeltaLogStoreSetting, { type: 'dynamodb' }>;

/**
 * What the Delta format needs from the composition root to honour a table's `deltaLogStore`: the DynamoDB log
 * store is an adapter (AWS SDK), which core may not build, so the handlers, the sweep and the CLI pass a factory.
 * The factory also knows where `store` is (its bucket, or folder), which the format never does, and so spells the
 * table's `tablePath` as the other writers do.
 */
export interface DeltaFormatServices {
  /** The log store coordinating through `setting`'s DynamoDB table, for the table at a key prefix of `store`. */
  readonly deltaLogStore?: (setting: DynamoDbLogStoreSetting, store: ObjectStore) => DeltaLogStore;
}

/**
 * The table is configured for DynamoDB coordination but this entry point was built without it. Refused rather
 * than committed through S3 conditional writes: a commit the table's other writers do not see in DynamoDB is
 * exactly the double-winner the setting exists to prevent. Never retried (only a code or config change fixes it).
 */
export function dynamoDbCoordinationUnavailable(setting: DynamoDbLogStoreSetting): InvalidInputError {
  return new InvalidInputError(
    `This Delta table coordinates its commits through the DynamoDB table ${setting.tableName} (deltaLogStore type "dynamodb"), but this entry point was started without DynamoDB coordination; nothing was committed. Run it where DynamoDB coordination is wired (the deployment's functions, or the CLI with --delta-log-store dynamodb --delta-ddb-table ${setting.tableName})`,
  );
}
