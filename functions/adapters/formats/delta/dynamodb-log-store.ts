// Delta commits coordinated through DynamoDB, speaking the commit-entry protocol of Delta's `S3DynamoDBLogStore`
// (Spark and Delta Kernel with delta-storage-s3-dynamodb), which delta-rs < 1.0 (Python `deltalake` <= 1.6.0) spoke
// as well with AWS_S3_LOCKING_PROVIDER=dynamodb: writers of one table that share the DynamoDB table exclude each
// other whichever engine they run in. delta-rs >= 1.0 no longer does (it logs an error and commits with
// put-if-absent), so a table shared by such a writer and a DynamoDB one is unsafe whatever lake-compactor does;
// `check` refuses a table whose recent versions have no entry (a writer not using the table).
//
// One item per commit file, in a table keyed by `tablePath` (hash, S) and `fileName` (range, S):
//   tablePath   the table's URI as the writers spell it: Spark writes Hadoop's `Path.toString()` of the table
//               (`s3://bucket/path/to/table`: no trailing slash, `s3://bucket/` for a bucket-root table, the
//               scheme as configured: `s3a://` and `s3://` are different keys and do not exclude each other).
//   fileName    `<20-digit version>.json`.
//   tempPath    where the commit was staged, relative to `_delta_log/`: `.tmp/<fileName>.<uuid>` (Spark).
//   complete    'true' | 'false' (strings, not booleans).
//   expireTime  N, epoch seconds; set only when complete, for the table's TTL (one day after completion, Spark's
//               default: long enough that a writer that lost the entry to TTL still finds N.json in S3).
//
// Writing version N (BaseExternalLogStore.write): N.json exists → lost. N-1's entry incomplete → finish it first;
// otherwise N-1.json must exist. Stage the body in the temp file, put the entry (complete=false) only if no entry
// exists — that conditional put decides the winner — copy the temp file to N.json, mark the entry complete.
// A writer that dies after the entry put has still committed: whoever reads next finishes the copy (fixDeltaLog).
import { randomUUID } from 'node:crypto';
import {
  type AttributeValue,
  type CreateTableCommandInput,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import {
  InvalidInputError,
  ObjectNotFoundError,
  PreconditionFailedError,
  TransientStoreError,
} from '../../../core/errors.js';
import { DeltaLogError } from '../../../core/formats/delta/errors.js';
import { classifyLogFile, commitFileName } from '../../../core/formats/delta/log-files.js';
import {
  type CommitEntryProbe,
  type CommitEntrySummary,
  type CommitWriteResult,
  type CoordinationCheckContext,
  type CoordinationFinding,
  type DeltaLogStore,
  listLogEvidence,
} from '../../../core/formats/delta/log-store.js';
import type { Clock } from '../../../ports/clock.js';
import type { ObjectStore } from '../../../ports/object-store.js';

/** Attribute names of a commit entry, spelled as Spark and delta-rs spell them. */
export const DELTA_LOG_ATTRIBUTES = {
  tablePath: 'tablePath',
  fileName: 'fileName',
  tempPath: 'tempPath',
  complete: 'complete',
  expireTime: 'expireTime',
} as const;

/** Spark's default delay between completing an entry and letting TTL delete it (`ddb.ttl`, 1 day). */
export const DEFAULT_EXPIRE_AFTER_SECONDS = 86_400;

/** Attempts at finishing an entry (copy + mark complete) before giving up, as Spark's fixDeltaLog. */
const REPAIR_ATTEMPTS = 4;

/**
 * The table a Spark deployment uses (what `S3DynamoDBLogStore` creates when the table is missing, and what the
 * Delta and delta-rs docs create with the AWS CLI), on demand. Enable TTL on `expireTime` as well (the CLI's
 * `update-time-to-live`), or completed entries are never removed.
 */
export function deltaLogTableInput(tableName: string): CreateTableCommandInput {
  return {
    TableName: tableName,
    KeySchema: [
      { AttributeName: DELTA_LOG_ATTRIBUTES.tablePath, KeyType: 'HASH' },
      { AttributeName: DELTA_LOG_ATTRIBUTES.fileName, KeyType: 'RANGE' },
    ],
    AttributeDefinitions: [
      { AttributeName: DELTA_LOG_ATTRIBUTES.tablePath, AttributeType: 'S' },
      { AttributeName: DELTA_LOG_ATTRIBUTES.fileName, AttributeType: 'S' },
    ],
    BillingMode: 'PAY_PER_REQUEST',
  };
}

/**
 * The `tablePath` Spark writes for a table at `tableRoot` of `bucket`: Hadoop's `Path.toString()`, so no trailing
 * slash (bucket root: `s3://bucket/`), duplicate slashes collapsed, characters not percent-encoded. Pass the scheme
 * the other writers configure (`s3a` for `spark.delta.logStore.s3a.impl`): entries of different schemes never meet.
 * delta-rs writes its table URL instead, which percent-encodes (`my%20table`): tables whose keys need encoding
 * only coordinate with delta-rs when this builder is replaced by one that encodes the same way.
 */
export function s3TablePath(bucket: string, scheme = 's3'): (tableRoot: string) => string {
  return (tableRoot) => {
    const path = tableRoot.replace(/\/{2,}/g, '/').replace(/^\/+|\/+$/g, '');
    return path === '' ? `${scheme}://${bucket}/` : `${scheme}://${bucket}/${path}`;
  };
}

/**
 * How recent a commit must be for "it has no entry" to prove a writer that bypasses the commit table when the
 * table holds no entry of this table at all (with entries, any version newer than the latest entry proves it, by
 * order alone — see `check`). Entries expire by TTL one day after completion by Spark's default (`ddb.ttl`), and
 * Delta's docs warn against much less; a commit younger than an hour whose entry is gone is no TTL's doing.
 */
export const UNCOORDINATED_COMMIT_RECENT_MS = 60 * 60_000;

export interface DynamoDbDeltaLogStoreOptions {
  readonly client: DynamoDBClient;
  /** The commit-entry table (Spark's `ddb.tableName`, delta-rs's `DELTA_DYNAMO_TABLE_NAME`; both default `delta_log`). */
  readonly tableName: string;
  /** Its region, for messages (the client is already bound to it). */
  readonly region?: string;
  /** Where the tables' `_delta_log/` folders are (the bucket `tablePath` names). */
  readonly store: ObjectStore;
  /** The `tablePath` of the table at a key prefix of `store`, spelled as every other writer spells it. */
  readonly tablePath: (tableRoot: string) => string;
  /** Sets `expireTime`. */
  readonly clock: Clock;
  /** Seconds between completing an entry and its `expireTime`. @default 86400 (Spark's default) */
  readonly expireAfterSeconds?: number;
}

/** One commit entry as stored. */
interface CommitEntry {
  readonly tablePath: string;
  readonly fileName: string;
  /** Relative to `_delta_log/`. */
  readonly tempPath: string;
  readonly complete: boolean;
}

export class DynamoDbDeltaLogStore implements DeltaLogStore, CommitEntryProbe {
  readonly description: string;
  private readonly expireAfterSeconds: number;

  constructor(private readonly options: DynamoDbDeltaLogStoreOptions) {
    this.description = `dynamodb:${options.tableName}${options.region === undefined ? '' : ` (${options.region})`}`;
    this.expireAfterSeconds = options.expireAfterSeconds ?? DEFAULT_EXPIRE_AFTER_SECONDS;
    if (!Number.isInteger(this.expireAfterSeconds) || this.expireAfterSeconds < 0) {
      throw new InvalidInputError(
        `expireAfterSeconds must be a non-negative whole number of seconds, not ${this.expireAfterSeconds}`,
      );
    }
  }

  /**
   * The protocol's write: `exists` when N.json is there or another writer holds the entry of N (its temp file is
   * then removed, so it can never become a commit). Once this writer's entry is in, the commit is decided: a
   * failure while copying or marking it complete is left for the next reader to finish and still `written`,
   * because a caller that retried the version would be told `exists` about its own commit.
   */
  async writeCommit(tableRoot: string, version: number, body: Uint8Array): Promise<CommitWriteResult> {
    const tablePath = this.options.tablePath(tableRoot);
    const fileName = commitFileName(version);
    if ((await this.options.store.head(logKey(tableRoot, fileName))) !== undefined) return 'exists';
    await this.ensurePrevious(tableRoot, tablePath, version);

    const entry: CommitEntry = {
      tablePath,
      fileName,
      tempPath: `.tmp/${fileName}.${randomUUID()}`,
      complete: false,
    };
    const tempKey = logKey(tableRoot, entry.tempPath);
    await this.options.store.put(tempKey, body, { contentType: 'application/json' });
    try {
      await this.putIncompleteEntry(entry);
    } catch (error) {
      if (!isConditionFailed(error)) throw mapDynamoError(error, this.options);
      await this.removeQuietly(tempKey);
      return 'exists';
    }

    let outcome: CommitWriteResult = 'written';
    try {
      outcome = await this.finish(tableRoot, entry, body);
    } catch {
      return 'written';
    }
    await this.removeQuietly(tempKey);
    return outcome;
  }

  /** The `tablePath` of the table at `tableRoot` in this commit table's entries. */
  tablePathOf(tableRoot: string): string {
    return this.options.tablePath(tableRoot);
  }

  /** The table's latest entry (read only; used as a probe by s3-conditional's `checkDynamoDbTable`). */
  async latestEntry(tableRoot: string): Promise<CommitEntrySummary | undefined> {
    const entry = await this.latestEntryOf(this.options.tablePath(tableRoot));
    return entry === undefined
      ? undefined
      : { tablePath: entry.tablePath, fileName: entry.fileName, complete: entry.complete };
  }

  /**
   * Whether every recent version of the log went through this commit table. The log is listed first and the
   * latest entry read after (an entry always precedes its commit file, so a writer that commits in between cannot
   * look uncoordinated): a commit file newer than the latest entry was written without one — by a writer that
   * bypasses the table (delta-rs >= 1.0, Spark's default log store, Delta Kernel defaults) or that addresses it by
   * another `tablePath`, table name or region. Entries expire by TTL in completion order, so "newer than the
   * latest entry" needs no clock; when the table has no entry at all, only a commit younger than
   * {@link UNCOORDINATED_COMMIT_RECENT_MS} proves it (older ones may have lost theirs to TTL).
   */
  async check(
    tableRoot: string,
    context: CoordinationCheckContext,
  ): Promise<CoordinationFinding | undefined> {
    const { commits } = await listLogEvidence(this.options.store, tableRoot);
    const latestCommit = commits.at(-1);
    if (latestCommit === undefined) return undefined;
    const tablePath = this.options.tablePath(tableRoot);
    const entry = await this.latestEntryOf(tablePath);
    const entryVersion = entry === undefined ? undefined : classifyLogFile(entry.fileName);
    const where = `the DynamoDB commit table ${this.description} for tablePath ${tablePath}`;
    const configure = `Every writer of a table declared "dynamodb" must commit through the same DynamoDB table, region and table path: check that the writer uses io.delta.storage.S3DynamoDBLogStore with this ddb.tableName and ddb.region and addresses the table with the same scheme (tablePathScheme "s3a" for s3a:// paths). A delta-rs >= 1.0 writer (Python deltalake >= 1.6.1) cannot use DynamoDB any more: beside it, a table written through DynamoDB is unsafe whatever lake-compactor does; if every writer commits with put-if-absent, declare "s3-conditional"`;
    if (entryVersion?.kind === 'commit') {
      const bypassing = commits.filter((c) => c.version > entryVersion.version);
      const first = bypassing[0];
      if (first === undefined) return undefined;
      return {
        kind: 'mismatch',
        message: `version(s) ${bypassing
          .slice(0, 5)
          .map((c) => c.version)
          .join(
            ', ',
          )}${bypassing.length > 5 ? ', …' : ''} (the first written ${first.lastModified.toISOString()}) are in the log but newer than the latest entry in ${where} (${entry?.fileName}): a writer commits to this table without the commit table. ${configure}`,
      };
    }
    const age = context.now - latestCommit.lastModified.getTime();
    if (age >= UNCOORDINATED_COMMIT_RECENT_MS) return undefined;
    return {
      kind: 'mismatch',
      message: `version ${latestCommit.version} was written ${latestCommit.lastModified.toISOString()} (less than an hour ago) and ${where} holds no entry of the table at all: a writer commits to this table without the commit table. ${configure}`,
    };
  }

  /** Finishes the table's latest entry when its writer stopped between the entry put and marking it complete. */
  async prepareRead(tableRoot: string): Promise<void> {
    const tablePath = this.options.tablePath(tableRoot);
    const latest = await this.latestEntryOf(tablePath);
    if (latest !== undefined && !latest.complete) await this.finish(tableRoot, latest);
  }

  /**
   * Version N follows N-1: an incomplete N-1 is finished first (its writer may have died), and without an
   * entry N-1.json must exist. Version 0 refuses a completed entry whose `0.json` is gone: the table was
   * deleted and re-created within the TTL, and the old entries would let two writers both "win".
   */
  private async ensurePrevious(tableRoot: string, tablePath: string, version: number): Promise<void> {
    if (version === 0) {
      const first = await this.getEntry(tablePath, commitFileName(0));
      if (
        first?.complete === true &&
        (await this.options.store.head(logKey(tableRoot, first.fileName))) === undefined
      ) {
        throw new DeltaLogError(
          tableRoot,
          `the DynamoDB table ${this.options.tableName} still holds commit entries of a deleted table at ${tablePath}; remove its items (tablePath = ${tablePath}) before creating the table again`,
        );
      }
      return;
    }
    const previous = await this.getEntry(tablePath, commitFileName(version - 1));
    if (previous !== undefined && !previous.complete) {
      await this.finish(tableRoot, previous);
      return;
    }
    if ((await this.options.store.head(logKey(tableRoot, commitFileName(version - 1)))) === undefined) {
      throw new DeltaLogError(
        tableRoot,
        `version ${version} cannot be committed because version ${version - 1} does not exist; read the table again`,
      );
    }
  }

  /**
   * Copies the entry's temp file to its log file unless the log file exists, then marks the entry complete
   * (fixDeltaLog; several readers may do this at once, and each step tolerates the others having done it).
   * The log file is put with `If-None-Match: *` where the store honours it, so a copy can never replace a
   * commit. `exists` when the log file that is there holds other bytes than `body` (someone wrote it without
   * this table's coordination); undefined `body` means "not this writer's".
   */
  private async finish(tableRoot: string, entry: CommitEntry, body?: Uint8Array): Promise<CommitWriteResult> {
    const fileKey = logKey(tableRoot, entry.fileName);
    const tempKey = logKey(tableRoot, checkedTempPath(tableRoot, entry));
    let outcome: CommitWriteResult | undefined;
    let lastError: unknown;
    for (let attempt = 0; attempt < REPAIR_ATTEMPTS; attempt++) {
      try {
        outcome ??= await this.copyOnce(tableRoot, fileKey, tempKey, body);
        await this.markComplete(entry);
        return outcome;
      } catch (error) {
        if (error instanceof DeltaLogError) throw error;
        lastError = error;
      }
    }
    throw lastError;
  }

  private async copyOnce(
    tableRoot: string,
    fileKey: string,
    tempKey: string,
    body: Uint8Array | undefined,
  ): Promise<CommitWriteResult> {
    const store = this.options.store;
    if ((await store.head(fileKey)) === undefined) {
      let bytes = body;
      if (bytes === undefined) {
        try {
          bytes = await store.get(tempKey);
        } catch (error) {
          if (!(error instanceof ObjectNotFoundError)) throw error;
          // Another reader finished the entry and its writer removed the temp file in between.
          if ((await store.head(fileKey)) !== undefined) return 'written';
          throw new DeltaLogError(
            tableRoot,
            `the commit entry of ${fileKey} is incomplete and its temp file ${tempKey} is gone, so the commit cannot be finished; check the table with the engine that wrote it`,
          );
        }
      }
      try {
        await store.put(fileKey, bytes, { ifNoneMatch: '*', contentType: 'application/json' });
        return 'written';
      } catch (error) {
        if (!(error instanceof PreconditionFailedError)) throw error;
      }
    }
    if (body === undefined) return 'written';
    return sameBytes(await store.get(fileKey), body) ? 'written' : 'exists';
  }

  private async putIncompleteEntry(entry: CommitEntry): Promise<void> {
    await this.options.client.send(
      new PutItemCommand({
        TableName: this.options.tableName,
        Item: {
          [DELTA_LOG_ATTRIBUTES.tablePath]: { S: entry.tablePath },
          [DELTA_LOG_ATTRIBUTES.fileName]: { S: entry.fileName },
          [DELTA_LOG_ATTRIBUTES.tempPath]: { S: entry.tempPath },
          [DELTA_LOG_ATTRIBUTES.complete]: { S: 'false' },
        },
        ConditionExpression: 'attribute_not_exists(#fileName)',
        ExpressionAttributeNames: { '#fileName': DELTA_LOG_ATTRIBUTES.fileName },
      }),
    );
  }

  /** complete='true' with its expireTime, only while incomplete: a finished (or expired) entry stays as it is. */
  private async markComplete(entry: CommitEntry): Promise<void> {
    const expireTime = Math.floor(this.options.clock.now() / 1000) + this.expireAfterSeconds;
    try {
      await this.options.client.send(
        new UpdateItemCommand({
          TableName: this.options.tableName,
          Key: key(entry.tablePath, entry.fileName),
          UpdateExpression: 'SET #complete = :true, #expireTime = :expireTime',
          ConditionExpression: '#complete = :false',
          ExpressionAttributeNames: {
            '#complete': DELTA_LOG_ATTRIBUTES.complete,
            '#expireTime': DELTA_LOG_ATTRIBUTES.expireTime,
          },
          ExpressionAttributeValues: {
            ':true': { S: 'true' },
            ':false': { S: 'false' },
            ':expireTime': { N: String(expireTime) },
          },
        }),
      );
    } catch (error) {
      if (!isConditionFailed(error)) throw mapDynamoError(error, this.options);
    }
  }

  private async getEntry(tablePath: string, fileName: string): Promise<CommitEntry | undefined> {
    try {
      const response = await this.options.client.send(
        new GetItemCommand({
          TableName: this.options.tableName,
          Key: key(tablePath, fileName),
          ConsistentRead: true,
        }),
      );
      return response.Item === undefined ? undefined : parseEntry(response.Item, tablePath);
    } catch (error) {
      throw mapDynamoError(error, this.options);
    }
  }

  /** The entry with the greatest fileName (zero-padded versions sort as numbers). */
  private async latestEntryOf(tablePath: string): Promise<CommitEntry | undefined> {
    try {
      const response = await this.options.client.send(
        new QueryCommand({
          TableName: this.options.tableName,
          KeyConditionExpression: '#tablePath = :tablePath',
          ExpressionAttributeNames: { '#tablePath': DELTA_LOG_ATTRIBUTES.tablePath },
          ExpressionAttributeValues: { ':tablePath': { S: tablePath } },
          ScanIndexForward: false,
          Limit: 1,
          ConsistentRead: true,
        }),
      );
      const item = response.Items?.[0];
      return item === undefined ? undefined : parseEntry(item, tablePath);
    } catch (error) {
      throw mapDynamoError(error, this.options);
    }
  }

  /** Temp files nobody will read again; a leftover is only a stray object under `.tmp/`, never a commit. */
  private async removeQuietly(key: string): Promise<void> {
    try {
      await this.options.store.deleteMany([{ key }]);
    } catch {
      // Best effort: Spark never removes them at all.
    }
  }
}

function key(tablePath: string, fileName: string): Record<string, AttributeValue> {
  return {
    [DELTA_LOG_ATTRIBUTES.tablePath]: { S: tablePath },
    [DELTA_LOG_ATTRIBUTES.fileName]: { S: fileName },
  };
}

/** The key of `name` (a log file name or a path relative to `_delta_log/`) in the table at `tableRoot`. */
function logKey(tableRoot: string, name: string): string {
  return `${tableRoot === '' ? '' : `${tableRoot.replace(/\/$/, '')}/`}_delta_log/${name}`;
}

function parseEntry(item: Record<string, AttributeValue>, tablePath: string): CommitEntry {
  const text = (name: string) => item[name]?.S;
  const fileName = text(DELTA_LOG_ATTRIBUTES.fileName);
  const tempPath = text(DELTA_LOG_ATTRIBUTES.tempPath);
  const complete = text(DELTA_LOG_ATTRIBUTES.complete);
  if (fileName === undefined || tempPath === undefined || (complete !== 'true' && complete !== 'false')) {
    throw new DeltaLogError(
      tablePath,
      `a commit entry of ${tablePath} lacks fileName, tempPath or a 'true'/'false' complete string: ${JSON.stringify(item)}`,
    );
  }
  return { tablePath, fileName, tempPath, complete: complete === 'true' };
}

/** A temp path must stay inside `_delta_log/`: an entry is data written by other programs. */
function checkedTempPath(tableRoot: string, entry: CommitEntry): string {
  const segments = entry.tempPath.split('/');
  if (entry.tempPath.startsWith('/') || segments.some((segment) => segment === '..' || segment === '')) {
    throw new DeltaLogError(
      tableRoot,
      `the commit entry of ${entry.fileName} has an unusable tempPath '${entry.tempPath}'`,
    );
  }
  return entry.tempPath;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, index) => byte === b[index]);
}

function isConditionFailed(error: unknown): boolean {
  return (error as { name?: string } | null)?.name === 'ConditionalCheckFailedException';
}

const THROTTLED = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'InternalServerError',
  'ServiceUnavailable',
]);

/**
 * Throttling becomes retryable; a missing table is a configuration error that names the region asked (never an
 * invitation to create a second lock table: writers that share no table exclude nobody); anything else passes.
 */
function mapDynamoError(
  error: unknown,
  table: Pick<DynamoDbDeltaLogStoreOptions, 'tableName' | 'region'>,
): unknown {
  const name = (error as { name?: string } | null)?.name;
  if (name !== undefined && THROTTLED.has(name)) {
    return new TransientStoreError(`DynamoDB table ${table.tableName} is busy (${name}); retry the commit.`, {
      cause: error,
    });
  }
  if (name === 'ResourceNotFoundException') {
    const region = table.region === undefined ? 'the region asked' : `region ${table.region}`;
    return new InvalidInputError(
      `The Delta commit table ${table.tableName} does not exist in ${region}. Do not create one here: the table must be the one the other writers already commit through, and a second table of that name excludes nobody. Set deltaLogStore.tableName and region to the writers' spark.io.delta.storage.S3DynamoDBLogStore.ddb.tableName and .ddb.region (Spark's defaults: delta_log in us-east-1); nothing was committed`,
      [],
      { cause: error },
    );
  }
  return error;
}
