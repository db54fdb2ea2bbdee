// How a Delta table's commits are coordinated, as declared per table (`deltaLogStore`), and what the composition
// root must hand the format so it can honour that declaration. All writers of a table must use the same
// coordination (two writers coordinating differently can both "win" the same version, and one commit is then
// silently lost), so it is a property of the table, never of the deployment, and it is never assumed: on S3 a
// Delta table without a declaration is refused, with the choices below and the writers each one is safe beside.
//
//   s3-conditional  put-if-absent (`If-None-Match: *`) on the commit file. Safe beside writers that commit the same
//                   way: delta-rs ≥ 0.23 without a locking provider and every delta-rs ≥ 1.0 (Rust `deltalake-aws`
//                   1.0 / Python `deltalake` ≥ 1.6.1, which ignore AWS_S3_LOCKING_PROVIDER=dynamodb), so the
//                   engines that write through it (Polars `write_delta`), and other lake-compactor runs.
//                   NOT beside Spark (any log store: S3SingleDriverLogStore checks `exists` then PUTs
//                   unconditionally) nor Delta Kernel (Java), which uses that same single-driver log store on S3.
//   dynamodb        Spark's `S3DynamoDBLogStore` commit-entry protocol in a DynamoDB table: Spark or Delta Kernel
//                   configured with `io.delta.storage.S3DynamoDBLogStore`, and delta-rs < 1.0 (Python `deltalake`
//                   ≤ 1.6.0) with AWS_S3_LOCKING_PROVIDER=dynamodb. A table shared by such a writer and a delta-rs
//                   ≥ 1.0 writer is unsafe whatever lake-compactor does (the two never exclude each other).
//   quiet-window    an explicit opt-in for tables whose writers have no coordination at all (Spark's default
//                   single-driver log store): lake-compactor commits only inside declared UTC windows in which
//                   every such writer is stopped, and re-checks the log right before its put. A writer that runs
//                   inside a window anyway can still overwrite the commit (or lose its own): the risk is the
//                   operator's, which is why the setting must say `acceptUncoordinatedWriters: true`.
//
// The dynamodb names follow what a data engineer already configured on the Spark side:
//   spark.delta.logStore.s3a.impl = io.delta.storage.S3DynamoDBLogStore   →  type: "dynamodb", tablePathScheme: "s3a"
//   spark.io.delta.storage.S3DynamoDBLogStore.ddb.tableName                →  tableName
//   spark.io.delta.storage.S3DynamoDBLogStore.ddb.region                   →  region (required: Spark's default is
//                                                                             us-east-1, and a silently different one
//                                                                             is a second lock table)
import { z } from 'zod';
import type { ObjectStore } from '../../../ports/object-store.js';
import { InvalidInputError } from '../../errors.js';
import type { CommitEntryProbe, DeltaLogStore } from './log-store.js';
import { parseQuietWindow } from './quiet-window.js';

/** DynamoDB's own rule for table names: 3–255 of letters, digits, `_`, `.` and `-`. */
const DYNAMODB_TABLE_NAME = /^[A-Za-z0-9_.-]{3,255}$/;

/** An AWS region code (`eu-west-1`, `us-gov-west-1`, `cn-north-1`), not a display name. */
const AWS_REGION = /^[a-z]{2}(-[a-z]+)+-\d+$/;

/**
 * The choices, each with the writers it is safe beside: the text of every message that asks for a declaration
 * (config, construct props, CLI), so the operator chooses by the writers they run, not by a name.
 */
export const DELTA_LOG_STORE_CHOICES = [
  '"s3-conditional": the other writers commit with put-if-absent (delta-rs >= 1.0, i.e. Python deltalake >= 1.6.1 and the engines writing through it such as Polars; delta-rs >= 0.23 without AWS_S3_LOCKING_PROVIDER; other lake-compactor runs). Not beside Spark or Delta Kernel (Java), whatever their log store',
  '"dynamodb" (with tableName and region): the other writers use Spark\'s S3DynamoDBLogStore (Spark or Delta Kernel with io.delta.storage.S3DynamoDBLogStore; delta-rs < 1.0, i.e. Python deltalake <= 1.6.0, with AWS_S3_LOCKING_PROVIDER=dynamodb)',
  '"quiet-window" (with windows and acceptUncoordinatedWriters: true): the other writers have no coordination (Spark\'s default S3SingleDriverLogStore, Delta Kernel defaults); lake-compactor then commits only inside the declared UTC windows, in which those writers must be stopped — a writer committing inside a window anyway can silently overwrite a commit',
] as const;

/** The sentence that asks for a declaration, with {@link DELTA_LOG_STORE_CHOICES}. */
export function undeclaredCoordinationMessage(subject: string, how: string): string {
  return `${subject} has no declared commit coordination, and lake-compactor never assumes one on S3: a commit coordinated differently from the table's other writers can be silently overwritten, or overwrite theirs. Declare it (${how}) by the writers the table has:\n  - ${DELTA_LOG_STORE_CHOICES.join('\n  - ')}`;
}

const tableNameSchema = z.string().regex(DYNAMODB_TABLE_NAME, {
  error: (issue) =>
    `${JSON.stringify(issue.input)} is not a DynamoDB table name (3-255 letters, digits, "_", "." or "-"); use the value of spark.io.delta.storage.S3DynamoDBLogStore.ddb.tableName (Spark's default: delta_log)`,
});

const regionSchema = z
  .string({
    error: (issue) =>
      issue.input === undefined
        ? "is required: the region of the DynamoDB table the other writers use, i.e. spark.io.delta.storage.S3DynamoDBLogStore.ddb.region — Spark's default when that is unset is us-east-1, and a table of the same name in another region is a second lock table that excludes nobody"
        : 'must be an AWS region code such as "us-east-1"',
  })
  .regex(AWS_REGION, {
    error: (issue) =>
      `${JSON.stringify(issue.input)} is not an AWS region code such as "eu-west-1"; use the value of spark.io.delta.storage.S3DynamoDBLogStore.ddb.region (Spark's default: us-east-1)`,
  });

/**
 * The scheme the other writers address the table with, which is part of every entry's key (`tablePath`): a
 * Spark writer configured through `spark.delta.logStore.s3a.impl` writes `s3a://bucket/path`, and entries of
 * `s3://` and `s3a://` never exclude each other. @default 's3'
 */
const tablePathSchemeSchema = z
  .enum(['s3', 's3a'], {
    error: (issue) =>
      `${JSON.stringify(issue.input)} is not a table path scheme: use "s3" or "s3a", the scheme of the table's path in the other writers' entries`,
  })
  .optional();

/** A DynamoDB commit table: where Spark's S3DynamoDBLogStore entries of the table live (or would). */
const dynamoDbTableFields = {
  /** The commit-entry table (Spark's `ddb.tableName`). */
  tableName: tableNameSchema,
  /** Its region (Spark's `ddb.region`). Required: never a silent default that differs from Spark's us-east-1. */
  region: regionSchema,
  tablePathScheme: tablePathSchemeSchema,
};

/**
 * `deltaLogStore: { type: "s3-conditional" }`: `PutObject` with `If-None-Match: *` on the commit file.
 * `checkDynamoDbTable` names a DynamoDB commit table Spark writers of the organisation use: an entry there for this
 * table means a writer coordinating through DynamoDB instead, and the table is refused (see log-store.ts).
 */
const s3ConditionalSchema = z.strictObject({
  type: z.literal('s3-conditional'),
  checkDynamoDbTable: z.strictObject(dynamoDbTableFields).optional(),
});

/** `deltaLogStore: { type: "dynamodb", ... }`: Spark's `S3DynamoDBLogStore` commit-entry protocol. */
const dynamoDbSchema = z.strictObject({ type: z.literal('dynamodb'), ...dynamoDbTableFields });

/**
 * `deltaLogStore: { type: "quiet-window", ... }`: for writers with no coordination. `windows` are when they are
 * stopped (UTC, see quiet-window.ts), `quietMinutes` how long the log must have had no commit before a commit
 * (a writer still running inside a window shows up there first), and `acceptUncoordinatedWriters: true` is the
 * operator's explicit acceptance of the residual risk.
 */
const quietWindowSchema = z.strictObject({
  type: z.literal('quiet-window'),
  windows: z
    .array(
      z.string().superRefine((text, ctx) => {
        const parsed = parseQuietWindow(text);
        if ('problem' in parsed) ctx.addIssue({ code: 'custom', message: parsed.problem });
      }),
    )
    .min(1, 'needs at least one window such as "02:00-05:00" (UTC): when every other writer is stopped'),
  quietMinutes: z
    .number()
    .int()
    .min(1)
    .max(24 * 60)
    .optional(),
  acceptUncoordinatedWriters: z.literal(true, {
    error:
      'must be true: "quiet-window" commits beside writers that have no coordination, so a writer that commits inside a window anyway can overwrite lake-compactor\'s commit, or have its own overwritten, and the loser\'s rows are silently gone. Set it only if every other writer of the table is stopped during the windows; otherwise make the writers use S3DynamoDBLogStore and declare "dynamodb"',
  }),
});

/** The `deltaLogStore` field of a Delta table's config. */
export const deltaLogStoreSchema = z.discriminatedUnion(
  'type',
  [s3ConditionalSchema, dynamoDbSchema, quietWindowSchema],
  {
    error: (issue) => {
      if (issue.code !== 'invalid_union') {
        return 'must be an object such as { "type": "s3-conditional" } or { "type": "dynamodb", "tableName": "delta_log", "region": "us-east-1" }';
      }
      const type = (issue.input as { type?: unknown } | undefined)?.type;
      return `must be "s3-conditional", "dynamodb" or "quiet-window", ${type === undefined ? 'and is missing' : `not ${JSON.stringify(type)}`}; choose by the table's other writers:\n  - ${DELTA_LOG_STORE_CHOICES.join('\n  - ')}`;
    },
  },
);

export type DeltaLogStoreSetting = z.output<typeof deltaLogStoreSchema>;
export type DynamoDbLogStoreSetting = Extract<DeltaLogStoreSetting, { type: 'dynamodb' }>;
export type S3ConditionalLogStoreSetting = Extract<DeltaLogStoreSetting, { type: 's3-conditional' }>;
export type QuietWindowLogStoreSetting = Extract<DeltaLogStoreSetting, { type: 'quiet-window' }>;

/** A DynamoDB commit table as a setting names it. */
export type DynamoDbTableRef = Pick<DynamoDbLogStoreSetting, 'tableName' | 'region' | 'tablePathScheme'>;

/**
 * What the Delta format needs from the composition root to honour a table's `deltaLogStore`: DynamoDB access is
 * an adapter (AWS SDK), which core may not build, so the handlers, the sweep and the CLI pass factories. They also
 * know where `store` is (its bucket, or folder), which the format never does, and so spell the table's `tablePath`
 * as the other writers do.
 */
export interface DeltaFormatServices {
  /** The log store coordinating through `setting`'s DynamoDB table, for the table at a key prefix of `store`. */
  readonly deltaLogStore?: (setting: DynamoDbLogStoreSetting, store: ObjectStore) => DeltaLogStore;
  /** A read-only view of a DynamoDB commit table (s3-conditional's `checkDynamoDbTable`). */
  readonly deltaCommitEntries?: (table: DynamoDbTableRef, store: ObjectStore) => CommitEntryProbe;
}

/**
 * The table is configured for DynamoDB coordination (or checks against a DynamoDB commit table) but this entry
 * point was built without DynamoDB access. Refused rather than committed (or checked) another way: a commit the
 * table's other writers do not see in DynamoDB is exactly the double-winner the setting exists to prevent. Never
 * retried (only a code or config change fixes it).
 */
export function dynamoDbCoordinationUnavailable(
  table: Pick<DynamoDbTableRef, 'tableName'>,
): InvalidInputError {
  return new InvalidInputError(
    `This Delta table's coordination names the DynamoDB table ${table.tableName} (deltaLogStore), but this entry point was started without DynamoDB access; nothing was committed. Run it where DynamoDB coordination is wired (the deployment's functions, or the CLI with --delta-log-store dynamodb --delta-ddb-table ${table.tableName} --delta-ddb-region <region>)`,
  );
}

/** The declaration is missing where the format is bound to a table: the config and CLI refuse it first. */
export function undeclaredCoordination(): InvalidInputError {
  return new InvalidInputError(
    undeclaredCoordinationMessage(
      'This Delta table',
      "the table's deltaLogStore in the config, or --delta-log-store on the CLI",
    ),
  );
}
