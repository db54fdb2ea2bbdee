// `lake-compactor settle --state-table` on s3rver and DynamoDB Local: a deployed partition left
// needs-attention by a run that could not retire its inputs is settled exactly as a console settle run
// would — rows exact, nothing open, the partition idle — and a run still holding the lease is refused.
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
import { normalizeRunInput } from '../../functions/core/run-input.js';
import { parseTableConfigs } from '../../functions/core/table-config.js';
import { commitStep } from '../../functions/core/workflow/commit.js';
import { compactGroup } from '../../functions/core/workflow/compact.js';
import { finalizeRun } from '../../functions/core/workflow/finalize.js';
import { acquireLease } from '../../functions/core/workflow/lease.js';
import { planRun } from '../../functions/core/workflow/plan.js';
import { verifyGroup } from '../../functions/core/workflow/verify.js';
import { ManualClock } from '../../functions/ports/clock.js';
import { defaultParquetEngine } from '../../functions/shared/parquet-engine.js';
import { writeSampleLake } from '../../functions/tools/sample-lake.js';
import type { DynamoDbLocalEndpoint } from '../../infra/local/dynamodb-local.js';
import { type RunningS3Server, startS3Server } from '../../infra/local/s3-server.js';
import { localAwsIo, rowsUnder } from '../support/deployed-s3.js';
import { type DuckDb, openDuckDb } from '../support/duckdb.js';
import { startTestDynamoDb } from '../support/dynamodb-local.js';
import { createKeyValueTable } from '../support/dynamodb-table.js';
import { faultyStore } from '../support/fault-store.js';

const STATE_TABLE = 'state';
const DAY = '2020-05-01';
const REF = { table: 'events', partition: `date=${DAY}` };
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
function rows(): Promise<string[]> {
  return rowsUnder(store, db, scratch, `events/date=${DAY}/`);
}

beforeAll(async () => {
  const dynamoStarting = startTestDynamoDb();
  s3 = await startS3Server({ buckets: ['lake'] });
  store = new S3ObjectStore({ client: s3.client(), bucket: 'lake' });
  db = await openDuckDb();
  scratch = await mkdtemp(join(tmpdir(), 'lc-settle-s3-'));
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

describe('lake-compactor settle --state-table', () => {
  it('settles a deployed partition left needs-attention, exactly as a console settle run', async () => {
    // Prepare: a workflow run whose role may not delete the table's objects: it publishes its output,
    // cannot retire the inputs (readers now see rows twice), and its finalize marks the partition.
    await writeSampleLake((key, bytes) => store.put(key, bytes).then(() => undefined), {
      table: 'events',
      days: 1,
      batches: 6,
      startDate: DAY,
      minRows: 20,
      maxRows: 60,
      seed: 11,
    });
    const before = await rows();
    const denying = faultyStore(store, {
      denied: (op, key) => op === 'deleteMany' && key.startsWith(`events/date=${DAY}/part-0`),
    });
    const journal = new DynamoJournal({ client, tableName: STATE_TABLE });
    const leases = new DynamoPartitionLease({ client, tableName: STATE_TABLE, tables, policies: new Map() });
    const clock = new ManualClock(Date.now());
    const normalized = normalizeRunInput({ ...REF, quietMinutes: 0 }, tables, {
      executionName: 'events-denied-g1',
      startedAt: clock.now(),
    });
    if (normalized.mode !== 'single') throw new Error('one partition expected');
    const runCtx = normalized.run;
    const deps = { store: denying, journal, clock, leases, engine: defaultParquetEngine };
    await acquireLease(leases, runCtx, clock.now());
    const plan = await planRun(deps, runCtx, { inlineGroupLimit: 40, compactMemoryMb: 1024 });
    const compacted = await compactGroup(deps, runCtx, { groupId: 'g0001', expectedOutputFiles: 1 });
    await verifyGroup(deps, runCtx, 'g0001', compacted.fingerprint);
    await expect(commitStep(deps, runCtx.runId, 'g0001')).rejects.toThrow(/AccessDenied/);
    const failed = await finalizeRun(deps, runCtx, { outcome: 'failed', plan, error: { Error: 'Error' } });
    expect(failed.needsAttention).toContain('AccessDenied');
    const stats = new DynamoStatsStore({ client, tableName: STATE_TABLE });
    expect((await stats.get(REF))?.state).toBe('needs-attention');
    expect((await rows()).length).toBe(2 * before.length);

    // Act: the permission is fixed; the operator settles from the CLI
    const cli = io();
    const code = await run(
      [
        'settle',
        's3://lake/events',
        '--partition',
        REF.partition,
        '--table',
        'events',
        '--state-table',
        STATE_TABLE,
      ],
      cli,
    );

    // Assess
    expect(cli.stderr).toEqual([]);
    expect(code).toBe(0);
    expect(cli.stdout.at(-1)).toBe('1 group(s) settled; the partition is idle again');
    expect(await rows()).toEqual(before);
    expect(await journal.listOpen(REF)).toEqual([]);
    expect((await stats.get(REF))?.state).toBe('idle');
  });

  it('is refused while a run holds the partition, changing nothing', async () => {
    // Prepare
    const leases = new DynamoPartitionLease({ client, tableName: STATE_TABLE, tables, policies: new Map() });
    const busy = { table: 'events', partition: 'date=2020-05-02' };
    await leases.acquire(busy, { runId: 'events-live-g1', now: Date.now() });

    // Act
    const cli = io();
    const code = await run(
      [
        'settle',
        's3://lake/events',
        '--partition',
        busy.partition,
        '--table',
        'events',
        '--state-table',
        STATE_TABLE,
      ],
      cli,
    );

    // Assess
    expect(code).toBe(1);
    expect(cli.stderr.join('\n')).toMatch(/LeaseHeld|is compacting by run events-live-g1/);
    expect(await leases.holds(busy, 'events-live-g1')).toBe(true);
  });
});
