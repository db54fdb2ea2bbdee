// `lake-compactor undo --state-table | --stack` on s3rver and DynamoDB Local: a run the deployed workflow made (its
// steps run as the state machine runs them, journaled in the state table) is undone by the same per-format undo as a
// CLI run — the partition's rows (DuckDB) equal those of before the run — and a run id the state table does not
// hold, or a run that did not finish, is refused with no byte of the bucket changed.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoJournal } from '../../functions/adapters/dynamodb-journal.js';
import { DynamoPartitionLease } from '../../functions/adapters/dynamodb-partition-lease.js';
import { DynamoStatsStore } from '../../functions/adapters/dynamodb-stats-store.js';
import { S3ObjectStore } from '../../functions/adapters/s3-object-store.js';
import { run } from '../../functions/cli/index.js';
import { normalizeRunInput, type RunContext } from '../../functions/core/run-input.js';
import { STACK_OUTPUT_KEYS } from '../../functions/core/stack-output-keys.js';
import { parseTableConfigs } from '../../functions/core/table-config.js';
import { commitStep } from '../../functions/core/workflow/commit.js';
import { compactGroup } from '../../functions/core/workflow/compact.js';
import { finalizeRun } from '../../functions/core/workflow/finalize.js';
import { acquireLease } from '../../functions/core/workflow/lease.js';
import { planRun } from '../../functions/core/workflow/plan.js';
import { verifyGroup } from '../../functions/core/workflow/verify.js';
import { policiesOf } from '../../functions/handlers/profiler.js';
import { ManualClock } from '../../functions/ports/clock.js';
import { defaultParquetEngine } from '../../functions/shared/parquet-engine.js';
import { writeSampleLake } from '../../functions/tools/sample-lake.js';
import type { DynamoDbLocalEndpoint } from '../../infra/local/dynamodb-local.js';
import { type RunningS3Server, startS3Server } from '../../infra/local/s3-server.js';
import { localAwsIo, rowsUnder, storeBytes } from '../support/deployed-s3.js';
import { type DuckDb, openDuckDb } from '../support/duckdb.js';
import { startTestDynamoDb } from '../support/dynamodb-local.js';
import { createKeyValueTable } from '../support/dynamodb-table.js';
import { fakeCloudFormation } from '../support/fake-cloudformation.js';

const STATE_TABLE = 'state';
const tables = parseTableConfigs([
  { name: 'events', bucket: 'lake', prefix: 'events', partitionColumns: ['date'] },
]);

let s3: RunningS3Server;
let dynamo: DynamoDbLocalEndpoint;
let client: DynamoDBClient;
let store: S3ObjectStore;
let db: DuckDb;
let scratch: string;

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

/** A workflow run of one partition, its steps as the state machine runs them, up to (not including) the commit. */
async function workflowRun(day: string, executionName: string) {
  const journal = new DynamoJournal({ client, tableName: STATE_TABLE });
  const leases = new DynamoPartitionLease({
    client,
    tableName: STATE_TABLE,
    tables,
    policies: policiesOf(tables),
  });
  const clock = new ManualClock(Date.now());
  const normalized = normalizeRunInput(
    { table: 'events', partition: `date=${day}`, quietMinutes: 0 },
    tables,
    { executionName, startedAt: clock.now() },
  );
  if (normalized.mode !== 'single') throw new Error('one partition expected');
  const runCtx: RunContext = normalized.run;
  const deps = { store, journal, clock, leases, engine: defaultParquetEngine };
  await acquireLease(leases, runCtx, clock.now());
  const plan = await planRun(deps, runCtx, { inlineGroupLimit: 40, compactMemoryMb: 1024 });
  const compacted = await compactGroup(deps, runCtx, { groupId: 'g0001', expectedOutputFiles: 1 });
  await verifyGroup(deps, runCtx, 'g0001', compacted.fingerprint);
  return { deps, runCtx, plan };
}

beforeAll(async () => {
  const dynamoStarting = startTestDynamoDb();
  s3 = await startS3Server({ buckets: ['lake'] });
  store = new S3ObjectStore({ client: s3.client(), bucket: 'lake' });
  db = await openDuckDb();
  scratch = await mkdtemp(join(tmpdir(), 'lc-undo-deployed-'));
  dynamo = await dynamoStarting;
  client = dynamo.client();
  await createKeyValueTable(client, STATE_TABLE);
});

afterAll(async () => {
  db?.close();
  await s3?.stop();
  await dynamo?.stop();
  if (scratch !== undefined) await rm(scratch, { recursive: true, force: true });
});

describe('lake-compactor undo of a deployed run', () => {
  it("reverts a finished workflow run read from the state table's journal: rows equal those of before the run", async () => {
    // Prepare: a partition of six files, compacted by a complete workflow run (journaled in DynamoDB only)
    const day = '2020-06-01';
    await writeDay(day, 21);
    const before = await rows(day);
    const keysBefore = (await bucketBytes()).filter((o) => o.startsWith(`events/date=${day}/`));
    const { deps, runCtx, plan } = await workflowRun(day, 'events-undo-g1');
    await commitStep(deps, runCtx.runId, 'g0001');
    const finished = await finalizeRun(deps, runCtx, { outcome: 'compacted', plan });
    expect(finished.needsAttention).toBeUndefined();
    const compactedFiles = (await bucketBytes()).filter((o) => o.startsWith(`events/date=${day}/`));
    expect(compactedFiles.length).toBeLessThan(keysBefore.length);
    expect(await rows(day)).toEqual(before);

    // Act
    const cli = io();
    const code = await run(['undo', 's3://lake/events', runCtx.runId, '--state-table', STATE_TABLE], cli);

    // Assess: the run's output is gone and the six inputs are back, rows exactly those of before the run
    expect(cli.stderr).toEqual([]);
    expect(code).toBe(0);
    expect(cli.stdout[0]).toBe(
      `undo s3://lake/events: run events-undo-g1 of table events in state table ${STATE_TABLE}`,
    );
    expect(cli.stdout.at(-1)).toMatch(/^run events-undo-g1 undone: 1 group, \d+ changes/);
    expect(await rows(day)).toEqual(before);
    const keysAfter = (await bucketBytes())
      .filter((o) => o.startsWith(`events/date=${day}/`))
      .map((o) => o.split(' ')[0]);
    expect(keysAfter).toEqual(keysBefore.map((o) => o.split(' ')[0]));

    const stats = new DynamoStatsStore({ client, tableName: STATE_TABLE });
    expect((await stats.get({ table: 'events', partition: `date=${day}` }))?.state).toBe('idle');

    // Act again: a second undo of the same run finds its record and changes nothing
    const again = io();
    const bytesBetween = await bucketBytes();
    expect(await run(['undo', 's3://lake/events', runCtx.runId, '--state-table', STATE_TABLE], again)).toBe(
      0,
    );
    expect(again.stdout.join('\n')).toMatch(/nothing to do: it was undone at /);
    expect(await bucketBytes()).toEqual(bytesBetween);
  });

  it('is refused while a run holds the partition, changing no byte and leaving its lease', async () => {
    // Prepare: a finished run, then another run of the deployment compacting the same partition
    const day = '2020-06-04';
    await writeDay(day, 24);
    const { deps, runCtx, plan } = await workflowRun(day, 'events-done-g1');
    await commitStep(deps, runCtx.runId, 'g0001');
    await finalizeRun(deps, runCtx, { outcome: 'compacted', plan });
    const ref = { table: 'events', partition: `date=${day}` };
    await deps.leases.acquire(ref, { runId: 'events-live-g2', now: Date.now() });
    const before = await bucketBytes();

    // Act
    const cli = io();
    const code = await run(['undo', 's3://lake/events', runCtx.runId, '--state-table', STATE_TABLE], cli);

    // Assess
    expect(code).toBe(1);
    expect(cli.stderr.join('\n')).toMatch(/LeaseHeld|is compacting by run events-live-g2/);
    expect(await bucketBytes()).toEqual(before);
    expect(await deps.leases.holds(ref, 'events-live-g2')).toBe(true);
  });

  it("refuses a run id the state table does not hold, named through --stack's StateTableName output, changing no byte", async () => {
    // Prepare: a template-shaped fake of the deployed stack (no local CloudFormation exists), its state table output
    // mapped to the DynamoDB Local table; and a partition with a finished run in that table
    const day = '2020-06-02';
    await writeDay(day, 22);
    const { deps, runCtx, plan } = await workflowRun(day, 'events-kept-g1');
    await commitStep(deps, runCtx.runId, 'g0001');
    await finalizeRun(deps, runCtx, { outcome: 'compacted', plan });
    const cloudFormation = fakeCloudFormation(
      'Deployed',
      { Outputs: { [STACK_OUTPUT_KEYS.stateTable]: { Value: { Ref: 'StateTable' } } } },
      { [STACK_OUTPUT_KEYS.stateTable]: STATE_TABLE },
    );
    const before = await bucketBytes();
    const cli = { ...io(), aws: { cloudFormation } };

    // Act
    const code = await run(['undo', 's3://lake/events', 'events-no-such-run', '--stack', 'Deployed'], cli);

    // Assess
    expect(code).toBe(1);
    expect(cloudFormation.requests).toEqual(['Deployed']);
    expect(cli.stderr.join('\n')).toMatch(
      /run events-no-such-run is not in the journal of state table state \(no item with pk RUN#events-no-such-run\)/,
    );
    expect(await bucketBytes()).toEqual(before);
  });

  it('refuses a deployed run that did not finish, naming the settle to run, changing no byte', async () => {
    // Prepare: a workflow run stopped after its verify: its group is journaled open, the partition leased
    const day = '2020-06-03';
    await writeDay(day, 23);
    const { runCtx } = await workflowRun(day, 'events-open-g1');
    const before = await bucketBytes();

    // Act
    const cli = io();
    const code = await run(['undo', 's3://lake/events', runCtx.runId, '--state-table', STATE_TABLE], cli);

    // Assess
    expect(code).toBe(1);
    expect(cli.stderr.join('\n')).toMatch(
      new RegExp(
        `run events-open-g1 did not finish: 1 group .* still open\\. Wait for the run to end, or run lake-compactor settle s3://lake/events --partition date=${day} --table events --state-table ${STATE_TABLE} first`,
      ),
    );
    expect(await bucketBytes()).toEqual(before);
  });

  it('refuses --state-table on a local folder, whose runs journal in the folder', async () => {
    // Prepare
    const folder = await mkdtemp(join(scratch, 'local-'));

    // Act
    const cli = io();
    const code = await run(['undo', folder, 'cli-x', '--state-table', STATE_TABLE], cli);

    // Assess
    expect(code).toBe(2);
    expect(cli.stderr.join('\n')).toMatch(
      /is a local folder, whose runs journal in the folder: drop --state-table/,
    );
  });
});
