// `lake-compactor vacuum` and `tier` on s3rver (and DynamoDB Local for the journal) on 127.0.0.1: a vacuum
// deletes exactly what its dry run listed and no row, judges state-machine runs only with the state table
// (compact's runs by their journal in the bucket), and `tier` changes the storage class HEAD reports.
// s3rver has no versioning, so retired versions are not here.

import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoJournal } from '../../functions/adapters/dynamodb-journal.js';
import { S3ObjectStore } from '../../functions/adapters/s3-object-store.js';
import { run } from '../../functions/cli/index.js';
import type { TierCliReport } from '../../functions/cli/tier.js';
import type { VacuumCliReport } from '../../functions/cli/vacuum.js';
import { DEFAULT_WORK_ROOT, stagingPrefix, trashPrefix } from '../../functions/core/workflow/layout.js';
import { writeSampleLake } from '../../functions/tools/sample-lake.js';
import type { DynamoDbLocalEndpoint } from '../../infra/local/dynamodb-local.js';
import { type RunningS3Server, startS3Server } from '../../infra/local/s3-server.js';
import { captureIo } from '../support/cli-io.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';
import { startTestDynamoDb } from '../support/dynamodb-local.js';
import { createKeyValueTable } from '../support/dynamodb-table.js';

const HOUR = 3_600_000;
const STATE_TABLE = 'state';
const TABLE_URI = 's3://lake/warehouse/events';
/** A state-machine run that retired an input 300 h ago (due), and one stuck while publishing. */
const SFN_DONE = 'events-p0-5f5f5f5f-g1';
const SFN_PUBLISHING = 'events-p1-6e6e6e6e-g1';
const SFN_TRASH = `${trashPrefix(DEFAULT_WORK_ROOT, SFN_DONE)}warehouse/events/date=2024-01-01/part-sfn.parquet`;
const SFN_STAGING = `${stagingPrefix(DEFAULT_WORK_ROOT, SFN_PUBLISHING, 'g1')}part-out.parquet`;
/** Trash of another table in the same bucket: outside `warehouse/events`, never this vacuum's business. */
const OTHER_TABLE_TRASH =
  '_lake-compactor/trash/cli-x-p0-00000000/warehouse/clicks/date=2024-01-01/p.parquet';
const DEBRIS = 'warehouse/events/_temporary/0/part-00000.parquet';

let s3: RunningS3Server;
let dynamo: DynamoDbLocalEndpoint;
let dynamoClient: DynamoDBClient;
let store: S3ObjectStore;
let db: DuckDb;
let scratch: string;
let rowsWritten: string[];

function capture(clockMs: number) {
  return captureIo({
    now: clockMs,
    env: {
      AWS_ENDPOINT_URL_S3: s3.endpoint,
      AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
    },
  });
}

async function keysUnder(prefix: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of store.listAll(prefix)) keys.push(o.key);
  return keys.sort();
}

/** Every row of the table's data files, read by DuckDB from a download: a multiset comparable with toEqual. */
async function rowMultiset(): Promise<string[]> {
  const folder = await mkdtemp(join(scratch, 'rows-'));
  const files = (await keysUnder('warehouse/events/date=')).filter((k) => k.endsWith('.parquet'));
  for (const key of files) {
    const path = join(folder, key);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, await store.get(key));
  }
  const rows = await db.rows(
    `SELECT * FROM read_parquet(${sqlString(join(folder, 'warehouse/events/date=*/*.parquet'))}) ORDER BY ALL`,
  );
  return rows.map((r) => JSON.stringify(r));
}

async function json<T>(args: readonly string[], clockMs: number): Promise<{ code: number; report: T }> {
  const io = capture(clockMs);
  const code = await run([...args, '--json'], io);
  expect(io.stderr).toEqual([]);
  return { code, report: JSON.parse(io.stdout.join('\n')) as T };
}

beforeAll(async () => {
  const dynamoStarting = startTestDynamoDb();
  s3 = await startS3Server({ buckets: ['lake'] });
  store = new S3ObjectStore({ client: s3.client(), bucket: 'lake' });
  db = await openDuckDb();
  scratch = await mkdtemp(join(tmpdir(), 'lc-maint-s3-'));
  await writeSampleLake(
    async (key, bytes) => {
      await store.put(`warehouse/${key}`, bytes);
    },
    { days: 2, batches: 6, seed: 8, startDate: '2024-01-01', minRows: 20, maxRows: 60 },
  );
  rowsWritten = await rowMultiset();
  dynamo = await dynamoStarting;
  dynamoClient = dynamo.client();
  await createKeyValueTable(dynamoClient, STATE_TABLE);
  // Prepare the lake as operators find it: compacted by the CLI, plus state-machine runs and leftovers. Sorted,
  // because on an unversioned bucket only a sort (or z-order) copies its inputs to trash, which vacuum removes;
  // a bin-pack retires by delete-rebuild and leaves no trash.
  const compacting = capture(Date.now());
  const compacted = await run(
    ['compact', TABLE_URI, '--strategy', 'sort', '--columns', 'user_id'],
    compacting,
  );
  // What the run said, should it fail: the set-up's failure is otherwise only an exit code.
  expect(compacted, [...compacting.stdout, ...compacting.stderr].join('\n')).toBe(0);
  const journal = new DynamoJournal({ client: dynamoClient, tableName: STATE_TABLE });
  const at = Date.now() - 300 * HOUR;
  const base = { table: 'events', partition: 'date=2024-01-01', outputs: [], retireMode: 'trash' as const };
  await journal.create({
    ...base,
    runId: SFN_DONE,
    groupId: 'g1',
    state: 'done',
    inputs: [{ key: 'warehouse/events/date=2024-01-01/part-sfn.parquet', etag: 'e', size: 11 }],
    stagingPrefix: stagingPrefix(DEFAULT_WORK_ROOT, SFN_DONE, 'g1'),
    trashPrefix: trashPrefix(DEFAULT_WORK_ROOT, SFN_DONE),
    createdAt: at,
    updatedAt: at,
    retiredAt: at,
  });
  await journal.create({
    ...base,
    runId: SFN_PUBLISHING,
    groupId: 'g1',
    state: 'publishing',
    inputs: [],
    stagingPrefix: stagingPrefix(DEFAULT_WORK_ROOT, SFN_PUBLISHING, 'g1'),
    trashPrefix: trashPrefix(DEFAULT_WORK_ROOT, SFN_PUBLISHING),
    createdAt: at,
    updatedAt: at,
    publishStartedAt: at,
  });
  for (const key of [SFN_TRASH, SFN_STAGING, OTHER_TABLE_TRASH, DEBRIS])
    await store.put(key, `leftover ${key}`);
}, 180_000);

afterAll(async () => {
  db?.close();
  dynamoClient?.destroy();
  await Promise.all([s3?.stop(), dynamo?.stop()]);
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe('lake-compactor vacuum on S3', () => {
  it('without a state table: the dry run changes nothing, the real run deletes exactly its list, every row stays', async () => {
    // Prepare
    const later = Date.now() + 200 * HOUR;
    const before = await keysUnder('');
    const cliTrash = before.filter(
      (k) => k.startsWith('_lake-compactor/trash/cli-') && k.includes('/warehouse/events/'),
    );
    // compact's journal lives in the bucket: its settled entries go with the trash, past the retention.
    const cliJournal = before.filter((k) => k.startsWith('_lake-compactor/journal/runs/cli-'));

    // Act
    const dry = await json<VacuumCliReport>(['vacuum', TABLE_URI, '--dry-run'], later);
    const afterDryRun = await keysUnder('');
    const real = await json<VacuumCliReport>(['vacuum', TABLE_URI, '--yes'], later);
    const after = await keysUnder('');

    // Assess
    const listed = dry.report.candidates.map((c) => c.key).sort();
    expect(dry.code).toBe(0);
    expect(cliTrash).toHaveLength(12);
    expect(cliJournal).toHaveLength(2);
    expect(listed).toEqual([...cliTrash, ...cliJournal, DEBRIS].sort());
    expect(afterDryRun).toEqual(before);
    expect(dry.report.kept.find((k) => k.key === SFN_TRASH)?.reason).toMatch(
      /pass --stack <stack-name> .* or --state-table <name>/,
    );
    expect(dry.report.kept.find((k) => k.key === SFN_STAGING)?.reason).toMatch(
      /pass --stack <stack-name> .* or --state-table <name>/,
    );
    expect(dry.report.notes.join('\n')).toMatch(/retired object versions .* were not looked for/);
    expect(real.code).toBe(0);
    expect(real.report.candidates.map((c) => c.key).sort()).toEqual(listed);
    expect(before.filter((k) => !after.includes(k))).toEqual(listed);
    expect(after).toEqual(expect.arrayContaining([SFN_TRASH, SFN_STAGING, OTHER_TABLE_TRASH]));
    expect(await rowMultiset()).toEqual(rowsWritten);
  }, 60_000);

  it("with --state-table: the journal decides a state-machine run's trash (due) and staging (mid-commit: kept)", async () => {
    // Prepare
    const later = Date.now() + 200 * HOUR;

    // Act
    const dry = await json<VacuumCliReport>(
      ['vacuum', TABLE_URI, '--dry-run', '--state-table', STATE_TABLE],
      later,
    );
    const real = await json<VacuumCliReport>(
      ['vacuum', TABLE_URI, '--yes', '--state-table', STATE_TABLE],
      later,
    );
    const after = await keysUnder('');

    // Assess
    expect(dry.code).toBe(0);
    expect(dry.report.stateTable).toBe(STATE_TABLE);
    expect(dry.report.candidates.find((c) => c.key === SFN_TRASH)?.reason).toMatch(
      `retired by run ${SFN_DONE}`,
    );
    expect(dry.report.kept.find((k) => k.key === SFN_STAGING)?.reason).toMatch(/resume its commit/);
    expect(real.code).toBe(0);
    expect(real.report.candidates.map((c) => c.key).sort()).toEqual(
      dry.report.candidates.map((c) => c.key).sort(),
    );
    expect(after).not.toContain(SFN_TRASH);
    expect(after).toEqual(expect.arrayContaining([SFN_STAGING, OTHER_TABLE_TRASH]));
    expect(await rowMultiset()).toEqual(rowsWritten);
  }, 60_000);
});

describe('lake-compactor tier on S3', () => {
  const clock = Date.UTC(2024, 5, 1);
  const big = new Uint8Array(200 * 1024).fill(7);
  const OLD = 'cold/events/date=2024-04-01/part-0.parquet';
  const OLD_SMALL = 'cold/events/date=2024-04-01/part-small.parquet';
  const YOUNG = 'cold/events/date=2024-05-30/part-0.parquet';

  it('the dry run lists the old partition’s large file and moves nothing; the real run changes its class (HEAD)', async () => {
    // Prepare
    await store.put(OLD, big);
    await store.put(OLD_SMALL, new Uint8Array(1024).fill(7));
    await store.put(YOUNG, big);
    const classes = async () =>
      Promise.all([OLD, OLD_SMALL, YOUNG].map(async (k) => (await store.head(k))?.storageClass));
    const text = capture(clock);

    // Act
    const dry = await json<TierCliReport>(['tier', 's3://lake/cold/events', '--dry-run'], clock);
    const afterDryRun = await classes();
    const code = await run(['tier', 's3://lake/cold/events', '--yes'], text);

    // Assess
    expect(dry.code).toBe(0);
    expect(dry.report.moves.map((m) => [m.key, m.from, m.to])).toEqual([[OLD, 'STANDARD', 'STANDARD_IA']]);
    expect(dry.report.kept).toMatchObject({ 'partition is N days old: no rule applies yet': 1 });
    expect(Object.keys(dry.report.kept).join('\n')).toMatch(/bills at least 128 KB/);
    expect(afterDryRun).toEqual(['STANDARD', 'STANDARD', 'STANDARD']);
    expect(code).toBe(0);
    expect(text.stdout.join('\n')).toContain('will move: 1 object, 200.0 KiB — 1 → STANDARD_IA');
    expect(text.stdout.join('\n')).toContain('moved 1 object;');
    expect(await classes()).toEqual(['STANDARD_IA', 'STANDARD', 'STANDARD']);
  }, 60_000);
});
