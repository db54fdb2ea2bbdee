// A model of a Spark writer configured with Delta's `io.delta.storage.S3DynamoDBLogStore`, written as its code does
// it (delta-io/delta storage-s3-dynamodb BaseExternalLogStore.write / fixDeltaLog / listFrom, S3DynamoDBLogStore):
// the commit file is checked with `exists`, the body goes to `_delta_log/.tmp/<N>.json.<uuid>` (never removed), the
// winner is decided by a conditional DynamoDB put, then the temp file is copied to N.json the way Hadoop's S3A
// `create(overwrite=false)` does it — an existence check and then a plain, unconditional PUT — and the entry is
// overwritten as complete; any failure after the entry put is swallowed ("ignoring recoverable error"). A test
// can pause the writer at each step (to interleave it with lake-compactor exactly where the protocol is thin) or
// let it die there. Not lake-compactor's code: only the key layout is shared, so the two meet as strangers do.
import { randomUUID } from 'node:crypto';
import { type DynamoDBClient, GetItemCommand, PutItemCommand, QueryCommand } from '@aws-sdk/client-dynamodb';
import { commitFileName } from '../../functions/core/formats/delta/log-files.js';
import type { CommitWriteResult } from '../../functions/core/formats/delta/log-store.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';
import type { DeltaCommitWriter } from '../../functions/tools/sample-delta.js';

/** The places a test can stop the writer at, in the order `write` reaches them. */
export type SparkStep =
  /** After Step 0 (`exists(N.json)` said no), before the previous version is checked. */
  | 'checked-absent'
  /** After the temp file T(N) is written, before the entry put. */
  | 'temp-written'
  /** After the conditional entry put won, before the copy (the window in which readers must finish it). */
  | 'entry-put'
  /** After the copy's `exists(N.json)` said no, before its PUT (the S3A create's race window). */
  | 'copy-checked'
  /** After the copy's PUT, before the entry is marked complete. */
  | 'copied';

/** The writer was told to die at a step: what a killed driver leaves behind. */
export class SparkDriverDied extends Error {}

export interface SparkWriterOptions {
  readonly store: ObjectStore;
  readonly client: DynamoDBClient;
  /** `spark.io.delta.storage.S3DynamoDBLogStore.ddb.tableName`. */
  readonly tableName: string;
  /** `s3://bucket` (or `s3a://bucket`): the table path is this plus the table root, as Hadoop's Path prints it. */
  readonly bucketUri: string;
  /** Overrides the table path (a local folder's `file://` path). */
  readonly tablePath?: (tableRoot: string) => string;
  /** Epoch seconds of "now" for expireTime. */
  readonly nowSeconds?: () => number;
  /** Called on reaching each step (await it to pause the writer there). */
  readonly onStep?: (step: SparkStep, version: number) => Promise<void> | void;
  /** Dies (throws SparkDriverDied) on reaching this step of this version. */
  readonly dieAt?: { readonly step: SparkStep; readonly version: number };
}

interface Entry {
  readonly fileName: string;
  readonly tempPath: string;
  readonly complete: boolean;
}

/** Spark's engineInfo (delta-io/delta Actions.scala `getEngineInfo`). */
export const SPARK_ENGINE_INFO = 'Apache-Spark/3.5.3 Delta-Lake/3.3.0';

/** Spark's S3DynamoDBLogStore as a commit writer for sample-delta.ts (and direct use). */
export class SparkDynamoDbWriter implements DeltaCommitWriter {
  readonly engineInfo = SPARK_ENGINE_INFO;
  /** Versions this writer won (its entry put succeeded), whatever happened after. */
  readonly won: number[] = [];

  constructor(private readonly options: SparkWriterOptions) {}

  private tablePath(tableRoot: string): string {
    if (this.options.tablePath !== undefined) return this.options.tablePath(tableRoot);
    const root = tableRoot.replace(/^\/+|\/+$/g, '');
    return root === '' ? `${this.options.bucketUri}/` : `${this.options.bucketUri}/${root}`;
  }

  private logKey(tableRoot: string, name: string): string {
    const root = tableRoot.replace(/^\/+|\/+$/g, '');
    return `${root === '' ? '' : `${root}/`}_delta_log/${name}`;
  }

  private async step(step: SparkStep, version: number): Promise<void> {
    await this.options.onStep?.(step, version);
    const die = this.options.dieAt;
    if (die !== undefined && die.step === step && die.version === version) {
      throw new SparkDriverDied(`the Spark driver died at ${step} of version ${version}`);
    }
  }

  /** BaseExternalLogStore.write with overwrite=false: `exists` where Spark throws FileAlreadyExistsException. */
  async writeCommit(tableRoot: string, version: number, body: Uint8Array): Promise<CommitWriteResult> {
    const { store } = this.options;
    const fileName = commitFileName(version);
    const tablePath = this.tablePath(tableRoot);
    // Step 0: fail if N.json exists.
    if ((await store.head(this.logKey(tableRoot, fileName))) !== undefined) return 'exists';
    await this.step('checked-absent', version);
    // Step 1: N-1.json must exist, or its incomplete entry is fixed.
    if (version > 0) {
      const previous = await this.getEntry(tablePath, commitFileName(version - 1));
      if (previous !== undefined && !previous.complete)
        await this.fixDeltaLog(tableRoot, tablePath, previous);
      else if ((await store.head(this.logKey(tableRoot, commitFileName(version - 1)))) === undefined) {
        throw new Error(`previous commit ${commitFileName(version - 1)} doesn't exist`);
      }
    }
    // Step 2: temp file, then the entry put that decides the winner.
    const tempPath = `.tmp/${fileName}.${randomUUID()}`;
    await store.put(this.logKey(tableRoot, tempPath), body);
    await this.step('temp-written', version);
    try {
      await this.options.client.send(
        new PutItemCommand({
          TableName: this.options.tableName,
          Item: {
            tablePath: { S: tablePath },
            fileName: { S: fileName },
            tempPath: { S: tempPath },
            complete: { S: 'false' },
          },
          ConditionExpression: 'attribute_not_exists(fileName)',
        }),
      );
    } catch (error) {
      if ((error as { name?: string }).name === 'ConditionalCheckFailedException') return 'exists';
      throw error;
    }
    this.won.push(version);
    await this.step('entry-put', version);
    // Steps 3 and 4; errors are "recoverable" and ignored.
    try {
      await this.copyFile(tableRoot, tempPath, fileName, version);
      await this.putComplete(tablePath, fileName, tempPath);
    } catch (error) {
      if (error instanceof SparkDriverDied) throw error;
    }
    return 'written';
  }

  /** listFrom: the latest entry, when incomplete, is fixed before the log is listed. */
  async prepareRead(tableRoot: string): Promise<void> {
    const tablePath = this.tablePath(tableRoot);
    const result = await this.options.client.send(
      new QueryCommand({
        TableName: this.options.tableName,
        KeyConditionExpression: 'tablePath = :p',
        ExpressionAttributeValues: { ':p': { S: tablePath } },
        ScanIndexForward: false,
        Limit: 1,
        ConsistentRead: true,
      }),
    );
    const item = result.Items?.[0];
    if (item === undefined) return;
    const entry = entryOf(item);
    if (!entry.complete) await this.fixDeltaLog(tableRoot, tablePath, entry);
  }

  /** fixDeltaLog: copy unless N.json exists, then overwrite the entry as complete; four tries. */
  private async fixDeltaLog(tableRoot: string, tablePath: string, entry: Entry): Promise<void> {
    let copied = false;
    for (let retry = 0; ; retry += 1) {
      try {
        if (
          !copied &&
          (await this.options.store.head(this.logKey(tableRoot, entry.fileName))) === undefined
        ) {
          await this.copyFile(tableRoot, entry.tempPath, entry.fileName, undefined);
          copied = true;
        }
        await this.putComplete(tablePath, entry.fileName, entry.tempPath);
        return;
      } catch (error) {
        if (retry >= 3) throw error;
      }
    }
  }

  /** S3A `create(dst, overwrite=false)` + copy: an existence check, then a plain PUT (no If-None-Match). */
  private async copyFile(
    tableRoot: string,
    tempPath: string,
    fileName: string,
    version: number | undefined,
  ): Promise<void> {
    const { store } = this.options;
    const bytes = await store.get(this.logKey(tableRoot, tempPath));
    const target = this.logKey(tableRoot, fileName);
    if ((await store.head(target)) !== undefined) throw new Error(`FileAlreadyExistsException: ${target}`);
    if (version !== undefined) await this.step('copy-checked', version);
    await store.put(target, bytes);
    if (version !== undefined) await this.step('copied', version);
  }

  /** The unconditional overwrite of the entry as complete, with Spark's one-day expireTime. */
  private async putComplete(tablePath: string, fileName: string, tempPath: string): Promise<void> {
    const now = this.options.nowSeconds?.() ?? Math.floor(Date.now() / 1000);
    await this.options.client.send(
      new PutItemCommand({
        TableName: this.options.tableName,
        Item: {
          tablePath: { S: tablePath },
          fileName: { S: fileName },
          tempPath: { S: tempPath },
          complete: { S: 'true' },
          expireTime: { N: String(now + 86_400) },
        },
      }),
    );
  }

  private async getEntry(tablePath: string, fileName: string): Promise<Entry | undefined> {
    const result = await this.options.client.send(
      new GetItemCommand({
        TableName: this.options.tableName,
        Key: { tablePath: { S: tablePath }, fileName: { S: fileName } },
        ConsistentRead: true,
      }),
    );
    return result.Item === undefined ? undefined : entryOf(result.Item);
  }
}

function entryOf(item: Record<string, { S?: string }>): Entry {
  return {
    fileName: item.fileName?.S ?? '',
    tempPath: item.tempPath?.S ?? '',
    complete: item.complete?.S === 'true',
  };
}
