// `lake-compactor compact --state-table` beside a deployment, on s3rver and DynamoDB Local: the run takes each
// partition's lease in the deployment's state table (so it is refused, changing no byte, while a workflow run holds
// the partition) and journals its groups there, so `undo --state-table` reverts it and the partition is idle after.
// Rows are compared by DuckDB over the partition's files before and after.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoJournal } from '../../functions/adapters/dynamodb-journal.js';
import { DynamoPartitionLease } from '../../functions/adapters/dynamodb-partition-lease.js';
import { DynamoStatsStore } from '../../functions/adapters/dynamodb-stats-store.js';
import { S3ObjectStore } from '../../functions/adapters/s3-object-store.js';
import { runCompact } from '../../functions/cli/compact.js';
import { run } from '../../functions/cli/index.js';
import { DEFAULT_POLICY } from '../../functions/core/policy.js';
import { LEASE_GRACE_MS, sweepTable } from '../../functions/core/profiler/sweep.js';
import { CLI_RUN_ID } from '../../functions/core/run-input.js';
import { settleAfterDeadRun } from '../../functions/core/workflow/settle.js';
import { systemClock } from '../../functions/ports/clock.js';
import type { StateMachineStarter } from '../../functions/ports/state-machine-starter.js';
import { defaultParquetEngine } from '../../functions/shared/parquet-engine.js';
import { writeSampleLake } from '../../functions/tools/sample-lake.js';
import { LakeCompactorStack } from '../../infra/app.js';
import { createTablesFromTemplate, type DynamoDbLocalEndpoint } from '../../infra/local/dynamodb-local.js';
import { type RunningS3Server, startS3Server } from '../../infra/local/s3-server.js';
import { TemplateModel } from '../../infra/local/template.js';
import { dyingStore } from '../support/crash-store.js';
import { localAwsIo, rowsUnder, storeBytes } from '../support/deployed-s3.js';
import { type DuckDb, openDuckDb } from '../support/duckdb.js';
import { startTestDynamoDb } from '../support/dynamodb-local.js';

/** The state table as the construct synthesizes it (its gsi1 included: the sweep lists leases through it). */
let STATE_TABLE: string;

let s3: RunningS3Server;
let dynamo: DynamoDbLocalEndpoint;
let client: DynamoDBClient;
let store: S3ObjectStore;
let db: DuckDb;
let scratch: string;

/** The sweep's view of an operator's run: no Step Functions execution to describe. */
const noExecutions: StateMachineStarter = {
  executionArn: (name) => `arn:aws:states:us-east-1:000000000000:execution:compact:${name}`,
  start: async () => {
    throw new Error('the sweep must start nothing here');
  },
  describe: async () => undefined,
};

function io() {
  return localAwsIo({ s3: s3.endpoint, dynamodb: dynamo.endpoint });
}

/** The partition's rows (DuckDB), canonically sorted. */
function rows(day: string): Promise<string[]> {
  return rowsUnder(store, db, scratch, `events/date=${day}/`);
}

function bucketBytes(): Promise<string[]> {
  return storeBytes(store);
}

/** The data files of a day's partition (the work root excluded). */
async function dataFiles(day: string): Promise<string[]> {
  return (await bucketBytes())
    .filter((o) => o.startsWith(`events/date=${day}/`))
    .map((o) => o.split(' ')[0] ?? '');
}

async function writeDay(day: string, seed: number): Promise<void> {
  await writeSampleLake((key, bytes) => store.put(key, bytes).then(() => undefined), {
    table: 'events',
    days: 1,
    batches: 6,
    startDate: day,
    minRows: 20,
    maxRows: 60,
    seed,
  });
}

beforeAll(async () => {
  const dynamoStarting = startTestDynamoDb();
  s3 = await startS3Server({ buckets: ['lake'] });
  store = new S3ObjectStore({ client: s3.client(), bucket: 'lake' });
  db = await openDuckDb();
  scratch = await mkdtemp(join(tmpdir(), 'lc-compact-deployed-'));
  dynamo = await dynamoStarting;
  client = dynamo.client();
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new LakeCompactorStack(app, 'CompactDeployed', {
    compactor: { tables: [{ name: 'events', bucketName: 'lake', prefix: 'events/' }] },
  });
  const created = await createTablesFromTemplate(
    client,
    new TemplateModel(Template.fromStack(stack).toJSON()),
  );
  const name = [...created.values()][0];
  if (name === undefined) throw new Error('the template defines no DynamoDB table');
  STATE_TABLE = name;
});

afterAll(async () => {
  db?.close();
  await s3?.stop();
  await dynamo?.stop();
  if (scratch !== undefined) await rm(scratch, { recursive: true, force: true });
});

describe('lake-compactor compact --state-table (beside a deployment)', () => {
  it("journals in the deployment's state table under its lease, keeps the rows, and is undone by undo --state-table", async () => {
    // Prepare
    const day = '2021-03-01';
    await writeDay(day, 31);
    const before = await rows(day);
    const inputs = await dataFiles(day);

    // Act 1: compact beside the deployment
    const cli = io();
    const code = await run(
      ['compact', 's3://lake/events', '--partition', `date=${day}`, '--state-table', STATE_TABLE],
      cli,
    );

    // Assess 1: one output, the same rows, the run in the deployment's journal (not the bucket's), lease released
    expect(cli.stderr).toEqual([]);
    expect(code).toBe(0);
    expect((await dataFiles(day)).length).toBeLessThan(inputs.length);
    expect(await rows(day)).toEqual(before);
    const hint = cli.stdout.find((l) => l.includes('--state-table'));
    const runId =
      /^run (\S+) \(date=2021-03-01\): lake-compactor undo s3:\/\/lake\/events \1 --state-table (\S+) reverts it$/.exec(
        hint ?? '',
      );
    expect(runId?.[2]).toBe(STATE_TABLE);
    const id = runId?.[1] ?? '';
    expect(id).toMatch(/^cli-deployed-/);
    expect(CLI_RUN_ID.test(id)).toBe(false);
    const journal = new DynamoJournal({ client, tableName: STATE_TABLE });
    expect((await journal.get(id, 'g0001'))?.state).toBe('done');
    expect((await bucketBytes()).some((o) => o.includes('/journal/runs/'))).toBe(false);
    const stats = new DynamoStatsStore({ client, tableName: STATE_TABLE });
    const item = await stats.get({ table: 'events', partition: `date=${day}` });
    expect(item?.state).toBe('idle');
    expect(item?.generation).toBe(1);

    // Act 2: the deployment's undo reverts it
    const undo = io();
    const undone = await run(['undo', 's3://lake/events', id, '--state-table', STATE_TABLE], undo);

    // Assess 2: the inputs are back with the rows of before
    expect(undo.stderr).toEqual([]);
    expect(undone).toBe(0);
    expect(await dataFiles(day)).toEqual(inputs);
    expect(await rows(day)).toEqual(before);
  });

  it('is refused while a workflow run holds the partition, changing no byte and leaving its lease', async () => {
    // Prepare
    const day = '2021-03-02';
    await writeDay(day, 32);
    const ref = { table: 'events', partition: `date=${day}` };
    const leases = new DynamoPartitionLease({
      client,
      tableName: STATE_TABLE,
      tables: [],
      policies: new Map(),
    });
    await leases.acquire(ref, { runId: 'events-live-g1', now: Date.now() });
    const before = await bucketBytes();

    // Act
    const cli = io();
    const code = await run(
      ['compact', 's3://lake/events', '--partition', `date=${day}`, '--state-table', STATE_TABLE],
      cli,
    );

    // Assess
    expect(code).toBe(1);
    expect(cli.stderr.join('\n')).toMatch(/events-live-g1/);
    expect(await bucketBytes()).toEqual(before);
    expect(await leases.holds(ref, 'events-live-g1')).toBe(true);
  });

  it('dies while retiring its inputs, and the sweep settles it once the lease is no longer renewed: rows of before, partition idle', async () => {
    // Prepare
    const day = '2021-03-03';
    await writeDay(day, 33);
    const before = await rows(day);
    const ref = { table: 'events', partition: `date=${day}` };

    // Act 1: every request fails from the first delete of an input on (the process died there, its outputs in)
    const died = runCompact('s3://lake/events', { partition: `date=${day}`, stateTable: STATE_TABLE }, io(), {
      wrapStore: (s) =>
        dyingStore(s, (call) => call.method === 'deleteMany' && call.key.startsWith(`events/date=${day}/`)),
    });
    await expect(died).rejects.toThrow();
    const stats = new DynamoStatsStore({ client, tableName: STATE_TABLE });
    const left = await stats.get(ref);
    const deadRun = left?.lease?.runId ?? '';
    const retry = io();
    const retried = await run(
      ['compact', 's3://lake/events', '--partition', `date=${day}`, '--state-table', STATE_TABLE],
      retry,
    );

    // Act 2: the deployment's sweep, past its grace with no renewal since the lease was taken, settles the dead
    // run's groups from the state table's journal (as its handler composes it) and releases the partition
    const journal = new DynamoJournal({ client, tableName: STATE_TABLE });
    const sweep = await sweepTable(
      {
        stats,
        policies: new Map([['events', DEFAULT_POLICY]]),
        starter: noExecutions,
        settle: (at, runId) =>
          settleAfterDeadRun({ store, journal, clock: systemClock, engine: defaultParquetEngine }, at, runId),
      },
      'events',
      Date.now() + LEASE_GRACE_MS + 60_000,
    );

    // Assess: the dead run held the partition (a compact in between was refused, nothing changed); the sweep
    // settled its group and released it; the rows are those of before, none twice
    expect(left).toMatchObject({
      state: 'compacting',
      lease: { runId: expect.stringMatching(/^cli-deployed-/) },
    });
    expect(retried).toBe(1);
    expect(retry.stderr.join('\n')).toContain(deadRun);
    expect(sweep.leases.filter((l) => l.ref.partition === ref.partition).map((l) => l.action)).toEqual([
      'released (NOT_FOUND, 1 group(s) settled)',
    ]);
    expect((await stats.get(ref))?.state).toBe('idle');
    expect(await rows(day)).toEqual(before);
    expect((await journal.get(deadRun, 'g0001'))?.state).toMatch(/^(done|aborted)$/);
  });

  it('refuses --state-table on a local folder before anything is read', async () => {
    // Prepare
    const folder = await mkdtemp(join(scratch, 'local-'));

    // Act
    const cli = io();
    const code = await run(['compact', folder, '--state-table', STATE_TABLE], cli);

    // Assess
    expect(code).toBe(2);
    expect(cli.stderr.join('\n')).toMatch(
      /--state-table compacts a deployed table on S3.*drop --state-table/,
    );
  });
});
