// The Maintenance construct on the local cloud (s3rver + DynamoDB Local): its schedule rules fire the real
// handlers with the rule's Input, vacuum deletes by the journal in DynamoDB, tiering changes HEAD's class.
// s3rver has no versioning, no multipart listing and rejects GLACIER_IR: those paths are unit-tested on
// the memory store (test/unit/core/maintenance/); here tiering moves to STANDARD_IA, which s3rver keeps.
// A table configured with format "delta" gets Delta VACUUM from the same function, through S3.
import { App, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoJournal } from '../../functions/adapters/dynamodb-journal.js';
import { S3ObjectStore } from '../../functions/adapters/s3-object-store.js';
import type { TieringReport } from '../../functions/core/maintenance/tiering.js';
import type { VacuumReport } from '../../functions/core/maintenance/vacuum.js';
import {
  DEFAULT_WORK_ROOT,
  maintenanceCursorKey,
  stagingPrefix,
  trashPrefix,
} from '../../functions/core/workflow/layout.js';
import type { GroupJournalEntry } from '../../functions/ports/journal.js';
import { appendDeltaEvents, createDeltaEventsTable } from '../../functions/tools/sample-delta.js';
import { LocalCloud } from '../../infra/local/local-cloud.js';
import { Maintenance } from '../../infra/maintenance.js';
import { sharedDynamoDb } from '../support/dynamodb-local.js';

const BUCKET = 'lake';
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const TABLES = [
  {
    name: 'events',
    bucket: BUCKET,
    prefix: 'events/',
    partitionColumns: ['date'],
    dateColumn: 'date',
    dateFormat: 'yyyy-MM-dd',
  },
  {
    name: 'orders',
    bucket: BUCKET,
    prefix: 'orders/',
    partitionColumns: ['date'],
    format: 'delta',
    deltaLogStore: { type: 's3-conditional' },
  },
];

class MaintenanceStack extends Stack {
  readonly table: dynamodb.Table;
  readonly maintenance: Maintenance;
  constructor(app: App) {
    super(app, 'MaintenanceIntegration');
    this.table = new dynamodb.Table(this, 'State', {
      partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING },
      sortKey: { name: 'sk', type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    this.maintenance = new Maintenance(this, 'Maintenance', {
      stateTable: this.table,
      tablesJson: JSON.stringify(TABLES),
      tables: [
        { bucketName: BUCKET, prefix: 'events/' },
        { bucketName: BUCKET, prefix: 'orders/' },
      ],
      // Vacuum's schedule keeps the default dry-run; tiering's is switched to a real run.
      tiering: { dryRun: false, rules: [{ afterDays: 30, storageClass: 'STANDARD_IA' }] },
    });
  }
}

let cloud: LocalCloud;
let stack: MaintenanceStack;
let store: S3ObjectStore;
let journal: DynamoJournal;

beforeAll(async () => {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  stack = new MaintenanceStack(app);
  const start = async () =>
    LocalCloud.start({ stack, buckets: [BUCKET], sharedDynamoDb: await sharedDynamoDb() });
  // DynamoDB Local occasionally misses its start deadline on a loaded machine: one more try.
  cloud = await start().catch((error: unknown) => {
    if (error instanceof Error && error.name === 'LocalCloudStartupError') return start();
    throw error;
  });
  store = new S3ObjectStore({ client: cloud.s3, bucket: BUCKET });
  journal = new DynamoJournal({ client: cloud.dynamodb, tableName: cloud.tableName(stack.table) });
}, 120_000);

afterAll(async () => {
  await cloud?.stop();
});

function entry(runId: string, patch: Partial<GroupJournalEntry> & Pick<GroupJournalEntry, 'state'>) {
  const at = Date.now() - 300 * HOUR;
  return {
    runId,
    groupId: 'g1',
    table: 'events',
    partition: 'date=2026-01-01',
    inputs: [],
    outputs: [],
    retireMode: 'trash' as const,
    stagingPrefix: stagingPrefix(DEFAULT_WORK_ROOT, runId, 'g1'),
    trashPrefix: trashPrefix(DEFAULT_WORK_ROOT, runId),
    createdAt: at,
    updatedAt: at,
    ...patch,
  };
}

async function keys(prefix: string): Promise<string[]> {
  const out: string[] = [];
  for await (const o of store.listAll(prefix)) out.push(o.key);
  return out.sort();
}

describe('maintenance on the local cloud', () => {
  it('vacuum: the scheduled dry-run deletes nothing, then a console run deletes by the journal and keeps the rest', async () => {
    // Prepare: one run retired its input 200 h ago (due), one 10 h ago (kept); one run aborted with staging.
    const input = 'events/date=2026-01-01/part-0.parquet';
    await journal.create(
      entry('run-due', {
        state: 'done',
        inputs: [{ key: input, etag: 'a', size: 9 }],
        retiredAt: Date.now() - 200 * HOUR,
      }),
    );
    await journal.create(
      entry('run-young', {
        state: 'done',
        inputs: [{ key: input, etag: 'b', size: 9 }],
        retiredAt: Date.now() - 10 * HOUR,
      }),
    );
    await journal.create(entry('run-aborted', { state: 'aborted' }));
    await store.put(`${trashPrefix(DEFAULT_WORK_ROOT, 'run-due')}${input}`, 'old input');
    await store.put(`${trashPrefix(DEFAULT_WORK_ROOT, 'run-young')}${input}`, 'new input');
    await store.put(`${stagingPrefix(DEFAULT_WORK_ROOT, 'run-aborted', 'g1')}part-x.parquet`, 'staged');
    await store.put('events/_temporary/0/part-0.parquet', 'fresh scratch');
    const before = await keys('');
    // The pass's own checkpoint: it remembers a table whose turn failed (orders has no log yet), to take it last.
    const checkpoint = maintenanceCursorKey(DEFAULT_WORK_ROOT, 'vacuum');
    const withoutCheckpoint = (list: string[]) => list.filter((k) => k !== checkpoint);

    // Act
    const [fired] = await cloud.fire(stack.maintenance.vacuumRule);
    const afterDryRun = await keys('');
    const real = (await cloud.invoke(stack.maintenance.vacuumFunction, { dryRun: false })) as VacuumReport;
    const health = JSON.parse(new TextDecoder().decode(await store.get(checkpoint))) as {
      health?: Record<string, { failures: number }>;
    };

    // Assess
    expect(fired).toMatchObject({ kind: 'lambda' });
    const dry = (fired as { result: VacuumReport }).result;
    expect(dry.dryRun).toBe(true);
    expect(dry.candidates.map((c) => c.key).sort()).toEqual([
      `${stagingPrefix(DEFAULT_WORK_ROOT, 'run-aborted', 'g1')}part-x.parquet`,
      `${trashPrefix(DEFAULT_WORK_ROOT, 'run-due')}${input}`,
    ]);
    expect(withoutCheckpoint(afterDryRun)).toEqual(before);
    expect(real.totalRemoved).toEqual({ count: 2, bytes: 15 });
    expect(Object.keys(health.health ?? {})).toEqual(['orders']);
    expect(withoutCheckpoint(await keys(''))).toEqual([
      '_lake-compactor/trash/run-young/events/date=2026-01-01/part-0.parquet',
      'events/_temporary/0/part-0.parquet',
    ]);
    // The Delta table has no log yet: that table's error, and the rest was vacuumed all the same.
    expect(real.deltaTables?.map((t) => [t.table, t.error?.name])).toEqual([['orders', 'DeltaLogError']]);
    expect(real.notes.join('\n')).toMatch(/cannot list multipart uploads|ListMultipartUploads/);
  }, 60_000);

  it('vacuum: refuses a retention below 168 h from the console with a clear error', async () => {
    // Prepare
    const event = { retentionHours: 100, dryRun: false };
    // Act
    const act = cloud.invoke(stack.maintenance.vacuumFunction, event);
    // Assess
    await expect(act).rejects.toThrow(/below the minimum of 168 h/);
  }, 30_000);

  it('tiering: the schedule moves a 40-day-old partition to STANDARD_IA (HEAD shows it) and leaves a young one', async () => {
    // Prepare
    const day = (ago: number) => new Date(Date.now() - ago * DAY).toISOString().slice(0, 10);
    const big = new Uint8Array(200 * 1024).fill(7);
    await store.put(`events/date=${day(40)}/part-0.parquet`, big);
    await store.put(`events/date=${day(40)}/part-small.parquet`, new Uint8Array(1024).fill(7));
    await store.put(`events/date=${day(2)}/part-0.parquet`, big);
    // Act
    const [fired] = await cloud.fire(stack.maintenance.tieringRule);
    // Assess
    const report = (fired as { result: TieringReport }).result;
    expect(report.dryRun).toBe(false);
    expect((await store.head(`events/date=${day(40)}/part-0.parquet`))?.storageClass).toBe('STANDARD_IA');
    expect((await store.head(`events/date=${day(40)}/part-small.parquet`))?.storageClass).toBe('STANDARD');
    expect((await store.head(`events/date=${day(2)}/part-0.parquet`))?.storageClass).toBe('STANDARD');
    expect(report.moved).toEqual({ STANDARD_IA: { count: 1, bytes: big.byteLength } });
  }, 60_000);

  it('vacuum: a table configured as delta gets Delta VACUUM — the removed file and an untracked one go, the live file and the log stay', async () => {
    // Prepare: the table keeps removed files for 0 hours (allowed only with allowRetentionBelowMinimum), since
    // every object s3rver holds was written just now.
    const written = Date.now() - 300 * HOUR;
    await createDeltaEventsTable(store, 'orders', {
      now: written,
      configuration: { 'delta.deletedFileRetentionDuration': 'interval 0 hours' },
    });
    const removed = await appendDeltaEvents(store, 'orders', {
      day: '2026-01-01',
      rows: 5,
      seed: 1,
      now: written,
    });
    const kept = await appendDeltaEvents(store, 'orders', {
      day: '2026-01-01',
      rows: 7,
      seed: 2,
      now: written,
    });
    const remove = {
      path: removed.key.slice('orders/'.length),
      deletionTimestamp: written,
      dataChange: true,
    };
    await store.put('orders/_delta_log/00000000000000000003.json', `${JSON.stringify({ remove })}\n`);
    await store.put('orders/date=2026-01-01/part-stray.parquet', 'never committed');
    const log = await keys('orders/_delta_log/');

    // Act
    const refused = (await cloud.invoke(stack.maintenance.vacuumFunction, { dryRun: false })) as VacuumReport;
    const report = (await cloud.invoke(stack.maintenance.vacuumFunction, {
      dryRun: false,
      allowRetentionBelowMinimum: true,
    })) as VacuumReport;

    // Assess: without the override the table's 0 h is refused and nothing of it goes
    expect(refused.deltaTables?.[0]?.error?.name).toBe('DeltaVacuumRefusedError');
    expect(report.deltaTables?.[0]?.report).toMatchObject({
      retentionHours: 0,
      retentionSource: 'table property',
    });
    expect(report.removed['delta-tombstone']).toMatchObject({ count: 1 });
    expect(report.removed['delta-untracked']).toMatchObject({ count: 1 });
    expect(await keys('orders/')).toEqual([...log, kept.key].sort());
    expect(report.notes.join('\n')).not.toMatch(/left alone/);
  }, 60_000);
});
