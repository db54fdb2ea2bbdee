// Delta commit coordination, declared per table, end to end on the local cloud (DynamoDB Local, s3rver with S3's
// conditional writes) through the synthesized workflow, the vacuum function and the CLI, beside a model of Spark's
// S3DynamoDBLogStore writer written as its code does it (test/support/spark-dynamodb-writer.ts):
// - declared "dynamodb": the OPTIMIZE commit is a complete entry under the table path Spark uses; a Spark commit in
//   DynamoDB but not yet in the log is finished and kept; Spark and lake-compactor racing on one table (at the
//   writer's thin steps, and free-running) commit every version exactly once and lose no commit on either side;
//   a delta-rs >= 1.0 writer (put-if-absent, no DynamoDB) beside it is detected and the table refused;
// - declared "s3-conditional": commits with conditional writes and writes no entry; the Spark DynamoDB writer beside
//   it is detected (its .tmp/ files) and the table refused, nothing committed;
// - an s3:// Delta table without a declaration is refused by the CLI with the choices;
// - Delta VACUUM (function and CLI) beside an incomplete entry finishes it first and deletes none of its files;
// - `compact` and `settle` of a local folder go through DynamoDB when told to.
// Rows are read back with DuckDB from the data objects every time.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateTableCommand, GetItemCommand, QueryCommand, ScanCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deltaLogTableInput } from '../../functions/adapters/formats/delta/dynamodb-log-store.js';
import { formatServices } from '../../functions/adapters/formats/index.js';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { MemoryJournal } from '../../functions/adapters/memory-journal.js';
import { runCompact } from '../../functions/cli/compact.js';
import { run as cli } from '../../functions/cli/index.js';
import { readCommitActions, readDeltaSnapshot } from '../../functions/core/formats/delta/log.js';
import { commitFileName } from '../../functions/core/formats/delta/log-files.js';
import { parseTableConfigs } from '../../functions/core/table-config.js';
import { createVacuumHandler } from '../../functions/handlers/vacuum.js';
import { ManualClock } from '../../functions/ports/clock.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';
import { createObservability } from '../../functions/shared/middleware.js';
import {
  appendDeltaEvents,
  createDeltaEventsTable,
  type DeltaAppend,
  type DeltaCommitWriter,
} from '../../functions/tools/sample-delta.js';
import { captureIo } from '../support/cli-io.js';
import { observedStore } from '../support/crash-store.js';
import { type DuckDb, openDuckDb } from '../support/duckdb.js';
import {
  SparkDriverDied,
  SparkDynamoDbWriter,
  type SparkStep,
  type SparkWriterOptions,
} from '../support/spark-dynamodb-writer.js';
import { rowMultiset, run, startWorkflowHarness, type WorkflowHarness } from '../support/workflow-harness.js';
import { WORKFLOW_BUCKET } from '../support/workflow-stack.js';

const NOW = Date.UTC(2024, 2, 3);
const COMMIT_TABLE = 'delta_log';
const REGION = 'us-east-1';
const BATCHES = 6;
const DYNAMODB = { type: 'dynamodb', tableName: COMMIT_TABLE, region: REGION } as const;
const CONDITIONAL = { type: 's3-conditional' } as const;

/** Delta tables in the bucket, each declared by the writers the test gives it. */
const TABLES = [
  ['events', DYNAMODB],
  ['raced', DYNAMODB],
  ['rs1', DYNAMODB],
  ['vac', DYNAMODB],
  ['vaccli', DYNAMODB],
  ['plain', CONDITIONAL],
  ['sparky', CONDITIONAL],
].map(([name, deltaLogStore]) => ({
  name: name as string,
  bucket: WORKFLOW_BUCKET,
  prefix: `${name as string}/`,
  format: 'delta',
  partitionColumns: ['date'],
  deltaLogStore,
}));

/** `BATCHES` micro-batches (one file and one WRITE commit each) per day into the Delta table at `root`. */
async function appendBatches(
  store: ObjectStore,
  root: string,
  days: readonly string[],
  writer?: DeltaCommitWriter,
  seed = 1,
): Promise<DeltaAppend[]> {
  const appended: DeltaAppend[] = [];
  let next = seed;
  for (const day of days) {
    for (let b = 0; b < BATCHES; b += 1) {
      appended.push(
        await appendDeltaEvents(store, root, {
          day,
          rows: 20 + b,
          seed: next++,
          now: NOW,
          ...(writer ? { writer } : {}),
        }),
      );
    }
  }
  return appended;
}

/** The commit's operation (`WRITE`, `OPTIMIZE`), or undefined when the version is not in the log. */
async function operationAt(store: ObjectStore, root: string, version: number): Promise<string | undefined> {
  const actions = await readCommitActions(store, root, version);
  const info = actions?.find((a) => a.kind === 'commitInfo');
  return info?.kind === 'commitInfo' ? info.commitInfo.operation : undefined;
}

/** The keys of the live files (of one partition, or all) at the latest version. */
async function liveKeys(store: ObjectStore, root: string, day?: string): Promise<string[]> {
  const snapshot = await readDeltaSnapshot(store, root);
  return snapshot.files
    .filter((f) => day === undefined || f.partitionValues.date === day)
    .flatMap((f) => (f.key === undefined ? [] : [f.key]));
}

/** A gate a Spark writer stops at (once) until released. */
function pauseAt(step: SparkStep): {
  onStep: NonNullable<SparkWriterOptions['onStep']>;
  reached: Promise<void>;
  release: () => void;
} {
  let reach: () => void = () => undefined;
  let release: () => void = () => undefined;
  const reached = new Promise<void>((resolve) => {
    reach = resolve;
  });
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  let armed = true;
  return {
    reached,
    release,
    onStep: async (at) => {
      if (!armed || at !== step) return;
      armed = false;
      reach();
      await gate;
    },
  };
}

describe('Delta commit coordination beside the writers it is declared for', () => {
  let h: WorkflowHarness;
  let db: DuckDb | undefined;

  beforeAll(async () => {
    h = await startWorkflowHarness({
      tablesJson: JSON.stringify(TABLES),
      tables: TABLES.map((t) => ({ bucketName: t.bucket, prefix: t.prefix })),
      deltaLogTables: [{ tableName: COMMIT_TABLE, region: REGION }],
    });
    await h.cloud.dynamodb.send(new CreateTableCommand(deltaLogTableInput(COMMIT_TABLE)));
    db = await openDuckDb();
  });

  afterAll(async () => {
    db?.close();
    await h?.stop();
  });

  /** Spark's S3DynamoDBLogStore writer on the harness's bucket and commit table. */
  const spark = (options: Partial<SparkWriterOptions> = {}) =>
    new SparkDynamoDbWriter({
      store: h.store,
      client: h.cloud.dynamodb,
      tableName: COMMIT_TABLE,
      bucketUri: `s3://${WORKFLOW_BUCKET}`,
      ...options,
    });

  /** Every row of the objects, as a multiset (DuckDB). */
  const rows = (keys: readonly string[]) => rowMultiset(h.store, keys, h.scratch, db);

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

  /** Every entry of a table path. */
  const entriesOf = async (tablePath: string) =>
    (
      await h.cloud.dynamodb.send(
        new QueryCommand({
          TableName: COMMIT_TABLE,
          KeyConditionExpression: 'tablePath = :p',
          ExpressionAttributeValues: { ':p': { S: tablePath } },
          ConsistentRead: true,
        }),
      )
    ).Items ?? [];

  const input = (table: string, day: string) => ({
    table,
    partition: `date=${day}`,
    strategy: 'binpack',
    quietMinutes: 0,
  });

  it('a workflow run commits its OPTIMIZE version through the DynamoDB table, as a complete entry under s3://bucket/table, rows unchanged', async () => {
    // Prepare: a Spark-written table
    const day = '2024-03-01';
    const writer = spark();
    await createDeltaEventsTable(h.store, 'events', { now: NOW, writer });
    await appendBatches(h.store, 'events', [day], writer);
    const before = await liveKeys(h.store, 'events', day);
    const beforeRows = await rows(before);
    const beforeVersion = (await readDeltaSnapshot(h.store, 'events')).version;

    // Act
    const execution = await run(h, input('events', day), 'delta-ddb-1');

    // Assess
    expect(execution.status, `${execution.error}: ${execution.cause}`).toBe('SUCCEEDED');
    const after = await liveKeys(h.store, 'events', day);
    expect(after).toHaveLength(1);
    expect(await rows(after)).toEqual(beforeRows);
    const version = (await readDeltaSnapshot(h.store, 'events')).version;
    expect(version).toBe(beforeVersion + 1);
    expect(await operationAt(h.store, 'events', version)).toBe('OPTIMIZE');
    const entry = await entryOf(`s3://${WORKFLOW_BUCKET}/events`, version);
    expect(entry?.complete?.S).toBe('true');
    expect(entry?.tempPath?.S).toMatch(new RegExp(`^\\.tmp/${commitFileName(version)}\\.`));
    expect(Number(entry?.expireTime?.N)).toBeGreaterThan(0);
  });

  it("finishes a Spark writer's commit that is in DynamoDB but not yet in the log, and commits the compaction after it", async () => {
    // Prepare: a Spark driver that dies right after its entry put (its body only in its temp file)
    const day = '2024-03-02';
    await appendBatches(h.store, 'events', [day], spark(), 100);
    const logged = await liveKeys(h.store, 'events', day);
    const version = (await readDeltaSnapshot(h.store, 'events')).version;
    const dying = spark({ dieAt: { step: 'entry-put', version: version + 1 } });
    await expect(
      appendDeltaEvents(h.store, 'events', { day, rows: 11, seed: 177, now: NOW, writer: dying }),
    ).rejects.toBeInstanceOf(SparkDriverDied);
    expect(await operationAt(h.store, 'events', version + 1)).toBeUndefined();
    const partitionFiles: string[] = [];
    for await (const o of h.store.listAll(`events/date=${day}/`)) partitionFiles.push(o.key);
    const pendingKey = partitionFiles.find((k) => !logged.includes(k)) as string;

    // Act
    const execution = await run(h, input('events', day), 'delta-ddb-2');

    // Assess: the writer's version is in the log as it wrote it, complete in DynamoDB; the OPTIMIZE follows it
    // and keeps every row, the dead driver's included.
    expect(execution.status, `${execution.error}: ${execution.cause}`).toBe('SUCCEEDED');
    expect(await operationAt(h.store, 'events', version + 1)).toBe('WRITE');
    expect((await entryOf(`s3://${WORKFLOW_BUCKET}/events`, version + 1))?.complete?.S).toBe('true');
    expect(await operationAt(h.store, 'events', version + 2)).toBe('OPTIMIZE');
    expect((await entryOf(`s3://${WORKFLOW_BUCKET}/events`, version + 2))?.complete?.S).toBe('true');
    expect(await rows(await liveKeys(h.store, 'events', day))).toEqual(await rows([...logged, pendingKey]));
  });

  it('Spark and lake-compactor racing on one table in dynamodb mode commit every version exactly once and lose no commit on either side', async () => {
    // Prepare: a Spark-written table with three days to compact
    const writer = spark();
    await createDeltaEventsTable(h.store, 'raced', { now: NOW, writer });
    const days = ['2024-04-01', '2024-04-02', '2024-04-03', '2024-04-04'];
    const appended = await appendBatches(h.store, 'raced', days, writer, 300);
    const sparkCommits: DeltaAppend[] = [...appended];
    const executions: { status: string; error?: string; cause?: string }[] = [];

    // Act: three runs, each with a Spark commit held at one of the protocol's thin steps while the run commits
    // (after its entry put, before its copy; between its copy's existence check and its PUT; between its own
    // existence check and its entry put), then a run with a Spark appender committing freely beside it.
    const steps: SparkStep[] = ['entry-put', 'copy-checked', 'checked-absent'];
    for (const [i, step] of steps.entries()) {
      const pause = pauseAt(step);
      const racer = spark({ onStep: pause.onStep });
      let append: Promise<DeltaAppend> | undefined;
      h.hooks.set('Commit group', async () => {
        if (append !== undefined) return;
        append = appendDeltaEvents(h.store, 'raced', {
          day: days[i] as string,
          rows: 13,
          seed: 400 + i,
          now: NOW,
          writer: racer,
        });
        await pause.reached;
      });
      executions.push(await run(h, input('raced', days[i] as string), `delta-race-${i}`));
      h.hooks.delete('Commit group');
      // While Spark is held: where did the run's OPTIMIZE land, and what of Spark's commit is in the log?
      const held = (await readDeltaSnapshot(h.store, 'raced')).version;
      const optimizeAt = (await operationAt(h.store, 'raced', held)) === 'OPTIMIZE' ? held : undefined;
      const wonWhileHeld = [...racer.won];
      pause.release();
      const done = await (append as Promise<DeltaAppend>);
      sparkCommits.push(done);
      if (step === 'checked-absent') {
        // The run took the version Spark had found absent; Spark lost its entry put and committed the next one.
        expect(wonWhileHeld).toEqual([]);
        expect(done.version).toBe((optimizeAt as number) + 1);
      } else {
        // Spark had won its version in DynamoDB; the run finished Spark's commit (its reader's duty) and committed
        // after it, and Spark's own late copy neither failed its job nor replaced anything.
        expect(wonWhileHeld).toEqual([done.version]);
        expect(optimizeAt).toBe(done.version + 1);
      }
    }
    const free = spark();
    const [last] = await Promise.all([
      run(h, input('raced', days[3] as string), 'delta-race-free'),
      (async () => {
        for (let b = 0; b < 8; b += 1) {
          sparkCommits.push(
            await appendDeltaEvents(h.store, 'raced', {
              day: days[b % 4] as string,
              rows: 7,
              seed: 500 + b,
              now: NOW,
              writer: free,
            }),
          );
        }
      })(),
    ]);
    executions.push(last);

    // Assess: every run compacted; the log is 0..L with one complete entry per version and nothing else
    for (const e of executions) expect(e.status, `${e.error}: ${e.cause}`).toBe('SUCCEEDED');
    const snapshot = await readDeltaSnapshot(h.store, 'raced');
    const versions = Array.from({ length: snapshot.version + 1 }, (_, v) => v);
    const entries = await entriesOf(`s3://${WORKFLOW_BUCKET}/raced`);
    expect(entries.map((e) => e.fileName?.S).sort()).toEqual(versions.map(commitFileName));
    expect(entries.every((e) => e.complete?.S === 'true')).toBe(true);
    // every Spark commit is in the log at the version it was told it won, with its file
    const operations = await Promise.all(versions.map((v) => readCommitActions(h.store, 'raced', v)));
    for (const commit of sparkCommits) {
      const actions = operations[commit.version];
      expect(actions?.some((a) => a.kind === 'add' && `raced/${a.add.path}` === commit.key)).toBe(true);
    }
    // four OPTIMIZE versions, one per run, none of them replaced
    const optimized = operations.filter((actions) =>
      actions?.some((a) => a.kind === 'commitInfo' && a.commitInfo.operation === 'OPTIMIZE'),
    );
    expect(optimized).toHaveLength(4);
    expect(versions.length).toBe(1 + sparkCommits.length + 4);
    // no row lost or doubled: the live files hold exactly the rows Spark wrote
    expect(await rows(await liveKeys(h.store, 'raced'))).toEqual(await rows(sparkCommits.map((c) => c.key)));
  });

  it('refuses a dynamodb table that a delta-rs >= 1.0 writer (put-if-absent, no DynamoDB) also commits to, committing nothing', async () => {
    // Prepare: created and appended through DynamoDB, then appended by a writer that bypasses it
    const day = '2024-05-01';
    const writer = spark();
    await createDeltaEventsTable(h.store, 'rs1', { now: NOW, writer });
    await appendBatches(h.store, 'rs1', [day], writer, 600);
    await appendBatches(h.store, 'rs1', [day], undefined, 700);
    const before = await readDeltaSnapshot(h.store, 'rs1');
    const beforeRows = await rows(await liveKeys(h.store, 'rs1'));

    // Act
    const execution = await run(h, input('rs1', day), 'delta-rs1');

    // Assess
    expect(execution.status).toBe('FAILED');
    expect(execution.error).toBe('CoordinationMismatchError');
    expect(execution.cause).toMatch(
      /newer than the latest entry in the DynamoDB commit table dynamodb:delta_log \(us-east-1\)/,
    );
    expect((await readDeltaSnapshot(h.store, 'rs1')).version).toBe(before.version);
    expect(await rows(await liveKeys(h.store, 'rs1'))).toEqual(beforeRows);
  });

  it('a table declared s3-conditional commits with S3 conditional writes and writes no entry', async () => {
    // Prepare: a put-if-absent writer (delta-rs style)
    const day = '2024-03-01';
    await createDeltaEventsTable(h.store, 'plain', { now: NOW });
    await appendBatches(h.store, 'plain', [day]);
    const before = await readDeltaSnapshot(h.store, 'plain');
    const beforeRows = await rows(await liveKeys(h.store, 'plain', day));

    // Act
    const execution = await run(h, input('plain', day), 'delta-plain-1');

    // Assess
    expect(execution.status, `${execution.error}: ${execution.cause}`).toBe('SUCCEEDED');
    expect(await operationAt(h.store, 'plain', before.version + 1)).toBe('OPTIMIZE');
    expect(await rows(await liveKeys(h.store, 'plain', day))).toEqual(beforeRows);
    expect(await entriesOf(`s3://${WORKFLOW_BUCKET}/plain`)).toEqual([]);
  });

  it("refuses a table declared s3-conditional that Spark's S3DynamoDBLogStore writes, naming its .tmp/ files and what to declare", async () => {
    // Prepare
    const day = '2024-03-01';
    const writer = spark();
    await createDeltaEventsTable(h.store, 'sparky', { now: NOW, writer });
    await appendBatches(h.store, 'sparky', [day], writer, 800);
    const before = await readDeltaSnapshot(h.store, 'sparky');
    const beforeRows = await rows(await liveKeys(h.store, 'sparky'));

    // Act
    const execution = await run(h, input('sparky', day), 'delta-sparky');

    // Assess: refused before anything was written; the table is as Spark left it
    expect(execution.status).toBe('FAILED');
    expect(execution.error).toBe('CoordinationMismatchError');
    expect(execution.cause).toMatch(
      /declared to coordinate its commits through s3-conditional, but 7 temp file\(s\) of Spark's S3DynamoDBLogStore are under _delta_log\/\.tmp\/.*Declare deltaLogStore \{ "type": "dynamodb"/,
    );
    expect((await readDeltaSnapshot(h.store, 'sparky')).version).toBe(before.version);
    expect(await rows(await liveKeys(h.store, 'sparky'))).toEqual(beforeRows);
    const ours = (await entriesOf(`s3://${WORKFLOW_BUCKET}/sparky`)).filter(
      (e) => Number(e.fileName?.S?.slice(0, 20)) > before.version,
    );
    expect(ours).toEqual([]);
  });

  it('refuses an s3:// Delta table without a declared coordination on the CLI, listing the choices, before anything is read', async () => {
    // Prepare
    const io = captureIo({ now: NOW, env: { ...h.cloud.env } });
    const beforeRows = await rows(await liveKeys(h.store, 'plain'));

    // Act
    const compact = await cli(['compact', `s3://${WORKFLOW_BUCKET}/plain`, '--format', 'delta'], io);
    const vacuum = await cli(['vacuum', `s3://${WORKFLOW_BUCKET}/plain`, '--format', 'delta', '--yes'], io);

    // Assess
    expect([compact, vacuum]).toEqual([2, 2]);
    const text = io.stderr.join('\n');
    expect(text).toMatch(
      /This s3:\/\/ Delta table has no declared commit coordination, and lake-compactor never assumes one on S3/,
    );
    expect(text).toMatch(/"s3-conditional": the other writers commit with put-if-absent \(delta-rs >= 1\.0/);
    expect(text).toMatch(
      /"dynamodb" \(with tableName and region\): the other writers use Spark's S3DynamoDBLogStore/,
    );
    expect(text).toMatch(/"quiet-window" .*Spark's default S3SingleDriverLogStore/);
    expect(await rows(await liveKeys(h.store, 'plain'))).toEqual(beforeRows);
  });

  it('Delta VACUUM (function and CLI) beside an incomplete DynamoDB entry finishes it first and deletes none of its files', async () => {
    for (const [root, how] of [
      ['vac', 'function'],
      ['vaccli', 'cli'],
    ] as const) {
      // Prepare: a Spark-written table whose last driver died after its entry put; an old untracked file beside it
      const day = '2024-06-01';
      const writer = spark();
      await createDeltaEventsTable(h.store, root, { now: NOW, writer });
      const committed = await appendBatches(h.store, root, [day], writer, 900);
      const version = (await readDeltaSnapshot(h.store, root)).version;
      await expect(
        appendDeltaEvents(h.store, root, {
          day,
          rows: 17,
          seed: 950,
          now: NOW,
          writer: spark({ dieAt: { step: 'entry-put', version: version + 1 } }),
        }),
      ).rejects.toBeInstanceOf(SparkDriverDied);
      const listed: string[] = [];
      for await (const o of h.store.listAll(`${root}/date=${day}/`)) listed.push(o.key);
      const pending = listed.find((k) => !committed.some((c) => c.key === k)) as string;
      const untracked = `${root}/date=${day}/part-99999-never-committed.c000.snappy.parquet`;
      await h.store.put(untracked, await h.store.get(committed[0]?.key as string));
      // Thirty days on: every data file is older than the 7-day retention.
      const later = Date.now() + 30 * 86_400_000;

      // Act
      if (how === 'function') {
        const tables = parseTableConfigs(TABLES.filter((t) => t.name === root));
        const clock = new ManualClock(later);
        const handler = createVacuumHandler(
          {
            tables,
            workRoot: '_lake-compactor/',
            storeFor: () => h.store,
            journalFor: () => new MemoryJournal(),
            clock,
            services: (bucket) => formatServices({ dynamodb: () => h.cloud.dynamodb, clock }, { bucket }),
          },
          createObservability('test'),
        );
        const report = await handler({ dryRun: false });
        expect(report.deltaTables?.map((t) => t.error)).toEqual([undefined]);
      } else {
        const io = captureIo({ now: later, env: { ...h.cloud.env } });
        const code = await cli(
          [
            'vacuum',
            `s3://${WORKFLOW_BUCKET}/${root}`,
            '--format',
            'delta',
            '--delta-log-store',
            'dynamodb',
            '--delta-ddb-table',
            COMMIT_TABLE,
            '--delta-ddb-region',
            REGION,
            '--yes',
          ],
          io,
        );
        expect(code, io.stderr.join('\n')).toBe(0);
      }

      // Assess: the dead driver's commit is in the log and complete, its file kept and live; the untracked one went
      expect(await operationAt(h.store, root, version + 1)).toBe('WRITE');
      expect((await entryOf(`s3://${WORKFLOW_BUCKET}/${root}`, version + 1))?.complete?.S).toBe('true');
      expect(await h.store.head(pending)).toBeDefined();
      expect(await h.store.head(untracked)).toBeUndefined();
      const live = await liveKeys(h.store, root);
      expect(live).toContain(pending);
      expect(await rows(live)).toEqual(await rows([...committed.map((c) => c.key), pending]));
    }
  });

  it('lake-compactor compact --delta-log-store dynamodb commits a local Delta table through the DynamoDB table', async () => {
    // Prepare: a folder written by a Spark-style writer whose entries name the folder's path
    const dir = await mkdtemp(join(tmpdir(), 'lc-delta-ddb-'));
    try {
      const store = new LocalObjectStore(dir);
      const writer = spark({ store, tablePath: () => `file://${dir}` });
      await createDeltaEventsTable(store, '', { now: NOW, writer });
      await appendBatches(store, '', ['2024-03-01', '2024-03-02'], writer);
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
          '--delta-ddb-region',
          REGION,
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
      expect(ours.map((i) => i.fileName?.S).sort()).toEqual(
        Array.from({ length: before.version + 3 }, (_, v) => commitFileName(v)),
      );
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
      const writer = spark({ store, tablePath: () => `file://${dir}` });
      await createDeltaEventsTable(store, '', { now: NOW, writer });
      await appendBatches(store, '', ['2024-03-01'], writer);
      const before = await readDeltaSnapshot(store, '');
      const env = { ...h.cloud.env };
      const options = [
        '--format',
        'delta',
        '--delta-log-store',
        'dynamodb',
        '--delta-ddb-table',
        COMMIT_TABLE,
        '--delta-ddb-region',
        REGION,
      ];
      let copied = false;
      let dead = false;
      await expect(
        runCompact(
          dir,
          { format: 'delta', deltaLogStore: 'dynamodb', deltaDdbTable: COMMIT_TABLE, deltaDdbRegion: REGION },
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
