// A Delta table configured with `deltaLogStore: { type: "dynamodb" }` commits through Spark's S3DynamoDBLogStore
// protocol end to end: the synthesized workflow on the local cloud (DynamoDB Local, s3rver) and the CLI on a local
// folder both leave their OPTIMIZE commit as a complete entry in the configured DynamoDB table, with the table
// path Spark uses; a Spark writer's commit that is in DynamoDB but not yet in the log is finished and kept, the
// compaction taking the next version; `settle` rolls a killed compaction forward through DynamoDB too; and an
// unconfigured Delta table still commits with S3 conditional writes.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CreateTableCommand,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  ScanCommand,
} from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deltaLogTableInput } from '../../functions/adapters/dynamodb-delta-log-store.js';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { runCompact } from '../../functions/cli/compact.js';
import { run as cli } from '../../functions/cli/index.js';
import { readCommitActions, readDeltaSnapshot } from '../../functions/core/formats/delta/log.js';
import { commitFileName } from '../../functions/core/formats/delta/log-files.js';
import { commitKey } from '../../functions/core/formats/delta/log-store.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';
import { appendDeltaEvents, createDeltaEventsTable } from '../../functions/tools/sample-delta.js';
import { captureIo } from '../support/cli-io.js';
import { observedStore } from '../support/crash-store.js';
import { run, startWorkflowHarness, type WorkflowHarness } from '../support/workflow-harness.js';
import { WORKFLOW_BUCKET } from '../support/workflow-stack.js';

const NOW = Date.UTC(2024, 2, 3);
const COMMIT_TABLE = 'delta_log';
const BATCHES = 6;

/** Two Delta tables in the bucket: `events` coordinated through DynamoDB, `plain` with the default. */
const TABLES = [
  {
    name: 'events',
    bucket: WORKFLOW_BUCKET,
    prefix: 'events/',
    format: 'delta',
    partitionColumns: ['date'],
    deltaLogStore: { type: 'dynamodb', tableName: COMMIT_TABLE },
  },
  { name: 'plain', bucket: WORKFLOW_BUCKET, prefix: 'plain/', format: 'delta', partitionColumns: ['date'] },
];

/** `BATCHES` micro-batches (one file and one WRITE commit each) per day into the Delta table at `root`. */
async function appendBatches(store: ObjectStore, root: string, days: readonly string[]): Promise<void> {
  let seed = 1;
  for (const day of days) {
    for (let b = 0; b < BATCHES; b += 1) {
      await appendDeltaEvents(store, root, { day, rows: 20 + b, seed: seed++, now: NOW });
    }
  }
}

/** The commit's operation (`WRITE`, `OPTIMIZE`), or undefined when the version is not in the log. */
async function operationAt(store: ObjectStore, root: string, version: number): Promise<string | undefined> {
  const actions = await readCommitActions(store, root, version);
  const info = actions?.find((a) => a.kind === 'commitInfo');
  return info?.kind === 'commitInfo' ? info.commitInfo.operation : undefined;
}

/** Live files and rows of one partition at the latest version. */
async function partitionState(store: ObjectStore, root: string, day: string) {
  const snapshot = await readDeltaSnapshot(store, root);
  const files = snapshot.files.filter((f) => f.partitionValues.date === day);
  const rows = files.reduce((n, f) => n + (f.stats?.numRecords ?? 0), 0);
  return { version: snapshot.version, files: files.length, rows };
}

describe('Delta commits coordinated through the DynamoDB table the config names', () => {
  let h: WorkflowHarness;

  beforeAll(async () => {
    h = await startWorkflowHarness({
      tablesJson: JSON.stringify(TABLES),
      tables: TABLES.map((t) => ({ bucketName: t.bucket, prefix: t.prefix })),
      deltaLogTables: [{ tableName: COMMIT_TABLE }],
    });
    await h.cloud.dynamodb.send(new CreateTableCommand(deltaLogTableInput(COMMIT_TABLE)));
    for (const root of ['events', 'plain']) await createDeltaEventsTable(h.store, root, { now: NOW });
  });

  afterAll(async () => {
    await h?.stop();
  });

  /** The commit entry of `version` of the table at `tablePath`, as Spark reads it. */
  const entryOf = async (tablePath: string, version: number) =>
    (
      await h.cloud.dynamodb.send(
        new GetItemCommand({
          TableName: COMMIT_TABLE,
          Key: { tablePath: { S: tablePath }, fileName: { S: commitFileName(version) } },
          ConsistentRead: true,
        }),
      )
    ).Item;

  const input = (table: string, day: string) => ({
    table,
    partition: `date=${day}`,
    strategy: 'binpack',
    quietMinutes: 0,
  });

  it('a workflow run commits its OPTIMIZE version through the DynamoDB table, as a complete entry under s3://bucket/table', async () => {
    // Prepare
    const day = '2024-03-01';
    await appendBatches(h.store, 'events', [day]);
    const before = await partitionState(h.store, 'events', day);

    // Act
    const execution = await run(h, input('events', day), 'delta-ddb-1');

    // Assess
    expect(execution.status, `${execution.error}: ${execution.cause}`).toBe('SUCCEEDED');
    const after = await partitionState(h.store, 'events', day);
    expect(after).toEqual({ version: before.version + 1, files: 1, rows: before.rows });
    expect(await operationAt(h.store, 'events', after.version)).toBe('OPTIMIZE');
    const entry = await entryOf(`s3://${WORKFLOW_BUCKET}/events`, after.version);
    expect(entry?.complete?.S).toBe('true');
    expect(entry?.tempPath?.S).toMatch(new RegExp(`^\\.tmp/${commitFileName(after.version)}\\.`));
    expect(Number(entry?.expireTime?.N)).toBeGreaterThan(0);
  });

  it("finishes a Spark writer's commit that is in DynamoDB but not yet in the log, and commits the compaction after it", async () => {
    // Prepare: a writer's blind append whose entry is in DynamoDB (incomplete) and whose body is still only in its
    // temp file: what a Spark writer that died between the entry put and the copy leaves.
    const day = '2024-03-02';
    await appendBatches(h.store, 'events', [day]);
    const pending = await appendDeltaEvents(h.store, 'events', { day, rows: 11, seed: 77, now: NOW });
    const fileName = commitFileName(pending.version);
    const tempPath = `.tmp/${fileName}.spark-writer`;
    const body = await h.store.get(commitKey('events', pending.version));
    await h.store.put(`events/_delta_log/${tempPath}`, body);
    await h.store.deleteMany([{ key: commitKey('events', pending.version) }]);
    await h.cloud.dynamodb.send(
      new PutItemCommand({
        TableName: COMMIT_TABLE,
        Item: {
          tablePath: { S: `s3://${WORKFLOW_BUCKET}/events` },
          fileName: { S: fileName },
          tempPath: { S: tempPath },
          complete: { S: 'false' },
        },
      }),
    );
    const logged = await partitionState(h.store, 'events', day);
    expect(logged.version).toBe(pending.version - 1);

    // Act
    const execution = await run(h, input('events', day), 'delta-ddb-2');

    // Assess: the writer's version is in the log as it wrote it, complete in DynamoDB; the OPTIMIZE follows it
    // and keeps the writer's rows.
    expect(execution.status, `${execution.error}: ${execution.cause}`).toBe('SUCCEEDED');
    expect(await operationAt(h.store, 'events', pending.version)).toBe('WRITE');
    expect((await entryOf(`s3://${WORKFLOW_BUCKET}/events`, pending.version))?.complete?.S).toBe('true');
    const after = await partitionState(h.store, 'events', day);
    expect(after).toEqual({ version: pending.version + 1, files: 1, rows: logged.rows + pending.rows });
    expect(await operationAt(h.store, 'events', after.version)).toBe('OPTIMIZE');
    expect((await entryOf(`s3://${WORKFLOW_BUCKET}/events`, after.version))?.complete?.S).toBe('true');
  });

  it('a Delta table without the setting commits with S3 conditional writes and writes no entry', async () => {
    // Prepare
    const day = '2024-03-01';
    await appendBatches(h.store, 'plain', [day]);
    const before = await partitionState(h.store, 'plain', day);

    // Act
    const execution = await run(h, input('plain', day), 'delta-plain-1');

    // Assess
    expect(execution.status, `${execution.error}: ${execution.cause}`).toBe('SUCCEEDED');
    expect(await operationAt(h.store, 'plain', before.version + 1)).toBe('OPTIMIZE');
    const entries = await h.cloud.dynamodb.send(
      new QueryCommand({
        TableName: COMMIT_TABLE,
        KeyConditionExpression: 'tablePath = :p',
        ExpressionAttributeValues: { ':p': { S: `s3://${WORKFLOW_BUCKET}/plain` } },
      }),
    );
    expect(entries.Items ?? []).toEqual([]);
  });

  it('lake-compactor compact --delta-log-store dynamodb commits a local Delta table through the DynamoDB table', async () => {
    // Prepare
    const dir = await mkdtemp(join(tmpdir(), 'lc-delta-ddb-'));
    try {
      const store = new LocalObjectStore(dir);
      await createDeltaEventsTable(store, '', { now: NOW });
      await appendBatches(store, '', ['2024-03-01', '2024-03-02']);
      const before = await readDeltaSnapshot(store, '');
      const io = captureIo({ now: NOW, env: { ...h.cloud.env } });

      // Act
      const code = await cli(
        [
          'compact',
          dir,
          '--format',
          'delta',
          '--delta-log-store',
          'dynamodb',
          '--delta-ddb-table',
          COMMIT_TABLE,
        ],
        io,
      );

      // Assess: one OPTIMIZE per partition, each a complete entry under the folder's own path
      expect(code, io.stderr.join('\n')).toBe(0);
      const versions = [before.version + 1, before.version + 2];
      for (const version of versions) {
        expect(await operationAt(store, '', version)).toBe('OPTIMIZE');
        expect((await entryOf(`file://${dir}`, version))?.complete?.S).toBe('true');
      }
      const all = await h.cloud.dynamodb.send(new ScanCommand({ TableName: COMMIT_TABLE }));
      const ours = (all.Items ?? []).filter((i) => i.tablePath?.S === `file://${dir}`);
      expect(ours.map((i) => i.fileName?.S).sort()).toEqual(versions.map(commitFileName));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('lake-compactor settle --delta-log-store dynamodb rolls a compaction killed before its log commit forward through the DynamoDB table', async () => {
    // Prepare: a compact whose process dies once its outputs are in the table and the group is published, right
    // before it reads the log to commit (nothing of it in the log yet, so only a roll forward completes it)
    const dir = await mkdtemp(join(tmpdir(), 'lc-delta-ddb-settle-'));
    try {
      const store = new LocalObjectStore(dir);
      await createDeltaEventsTable(store, '', { now: NOW });
      await appendBatches(store, '', ['2024-03-01']);
      const before = await readDeltaSnapshot(store, '');
      const env = { ...h.cloud.env };
      const options = [
        '--format',
        'delta',
        '--delta-log-store',
        'dynamodb',
        '--delta-ddb-table',
        COMMIT_TABLE,
      ];
      let copied = false;
      let dead = false;
      await expect(
        runCompact(
          dir,
          { format: 'delta', deltaLogStore: 'dynamodb', deltaDdbTable: COMMIT_TABLE },
          captureIo({ now: NOW, env }),
          {
            wrapStore: (inner) =>
              observedStore(inner, {
                before: (call) => {
                  if (copied && call.key.includes('_delta_log')) dead = true;
                  if (dead) throw new Error(`injected: the process died before ${call.method} ${call.key}`);
                },
                after: (call) => {
                  if (call.method === 'copy') copied = true;
                },
              }),
          },
        ),
      ).rejects.toThrow();
      expect((await readDeltaSnapshot(store, '')).version).toBe(before.version);
      const io = captureIo({ now: NOW, env });

      // Act
      const code = await cli(['settle', dir, ...options], io);

      // Assess: the group's one OPTIMIZE is in the log and complete in DynamoDB; nothing committed twice
      expect(code, io.stderr.join('\n')).toBe(0);
      expect(io.stdout.join('\n')).toContain('rolled forward');
      expect(await operationAt(store, '', before.version + 1)).toBe('OPTIMIZE');
      expect(await operationAt(store, '', before.version + 2)).toBeUndefined();
      expect((await entryOf(`file://${dir}`, before.version + 1))?.complete?.S).toBe('true');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
