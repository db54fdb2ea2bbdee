// The synthesized state machine compacting a Hudi Merge-on-Read table on the local cloud (a table Hudi 1.x wrote,
// vendored as test/fixtures/hudi/mor_v8_trips_8i3u1d, copied into the local S3 without its metadata table): the plan
// Lambda schedules the compaction under Hudi's storage lock once the declared trigger is met, the Map's compact,
// verify and commit steps merge and publish each file slice, and finalize completes one compaction `commit` for all
// of them. The rows Hudi's snapshot view reads (latest slices: base files by DuckDB, log records merged by the
// project's log reader) are identical before and after; the new base files carry the names the stored plan fixed.
// The same table declaring Hudi's DynamoDB lock provider (the lock table in DynamoDB Local): a simulated Hudi writer
// holding the lock holds back the scheduling and the completion, which happen only once it released the lock, and
// the lock is free between them and after the run. A Hudi writer's insert commit into a new file group landing
// between our plan and our commit: the compaction completes, and the view holds both the writer's rows and ours.

import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { CreateTableCommand, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoDbHudiLock, hudiLockTableInput } from '../../functions/adapters/formats/hudi/dynamodb-lock.js';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { instantEpochMs } from '../../functions/core/formats/hudi/clustering-commit.js';
import { mergeFileSlice } from '../../functions/core/formats/hudi/compaction-merge.js';
import { compactionPolicy } from '../../functions/core/formats/hudi/compaction-run.js';
import type { HudiLockHandle } from '../../functions/core/formats/hudi/lock/index.js';
import { StorageBasedHudiLock } from '../../functions/core/formats/hudi/lock/index.js';
import { readHudiTable } from '../../functions/core/formats/hudi/table-state.js';
import { isCommitted } from '../../functions/core/formats/hudi/timeline.js';
import { partitionPlanSchema } from '../../functions/core/planning.js';
import { systemClock } from '../../functions/ports/clock.js';
import { appendHudiInsert } from '../../functions/tools/sample-hudi.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';
import { HUDI_FIXTURES } from '../support/fixtures.js';
import { keysUnder, run, startWorkflowHarness, type WorkflowHarness } from '../support/workflow-harness.js';
import { WORKFLOW_BUCKET, WORKFLOW_TABLES } from '../support/workflow-stack.js';

const ROOT = 'trips';
/** The same fixture declaring Hudi's DynamoDB lock provider (its default partition key: hoodie.table.name). */
const DDB_ROOT = 'trips-ddb';
const LOCK_TABLE = 'hudi_locks';
const LOCK_KEY = 'v8_trips_8i3u1d';
/** The same fixture beside a concurrent Hudi writer. */
const WRITER_ROOT = 'trips-writer';
const PARTITION = 'city=sao_paulo';
const FIXTURE = 'mor_v8_trips_8i3u1d';
const COLUMNS = [
  '_hoodie_commit_time',
  '_hoodie_commit_seqno',
  '_hoodie_record_key',
  '_hoodie_partition_path',
  'ts',
  'uuid',
  'rider',
  'driver',
  'fare',
  'city',
];

const TABLES = [
  ...WORKFLOW_TABLES,
  {
    name: 'trips',
    bucket: WORKFLOW_BUCKET,
    prefix: `${ROOT}/`,
    format: 'hudi',
    partitionColumns: ['city'],
    hudiLock: { provider: 'storage' },
    hudiIndexType: 'BLOOM',
    hudiTimezone: 'UTC',
    hudiCompactionDeltaCommits: 1,
  },
  {
    name: 'trips_ddb',
    bucket: WORKFLOW_BUCKET,
    prefix: `${DDB_ROOT}/`,
    format: 'hudi',
    partitionColumns: ['city'],
    hudiLock: { provider: 'dynamodb', table: LOCK_TABLE },
    hudiIndexType: 'BLOOM',
    hudiTimezone: 'UTC',
    hudiCompactionDeltaCommits: 1,
  },
  {
    name: 'trips_writer',
    bucket: WORKFLOW_BUCKET,
    prefix: `${WRITER_ROOT}/`,
    format: 'hudi',
    partitionColumns: ['city'],
    hudiLock: { provider: 'storage' },
    hudiIndexType: 'BLOOM',
    hudiTimezone: 'UTC',
    hudiCompactionDeltaCommits: 1,
  },
];

/** `ms` of real time (a Hudi writer's lock held across a workflow step, heartbeating). */
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A value as JSON compares it (whole numbers and 64-bit integers as text). */
function plainValue(v: unknown): unknown {
  return typeof v === 'bigint' || (typeof v === 'number' && Number.isInteger(v)) ? String(v) : v;
}

/** Every file of a folder, relative paths. */
async function filesOf(dir: string): Promise<string[]> {
  return (await readdir(dir, { recursive: true, withFileTypes: true }))
    .filter((d) => d.isFile())
    .map((d) => relative(dir, join(d.parentPath, d.name)));
}

describe('compaction workflow on a Hudi Merge-on-Read table, on the local cloud', () => {
  let h: WorkflowHarness;
  let db: DuckDb;

  beforeAll(async () => {
    h = await startWorkflowHarness({
      tablesJson: JSON.stringify(TABLES),
      tables: TABLES.map((t) => ({ bucketName: t.bucket, prefix: t.prefix })),
    });
    db = await openDuckDb();
  });

  afterAll(async () => {
    db?.close();
    await h?.stop();
  });

  /** The fixture in the local S3 under `<root>/`, as if written with hoodie.metadata.enable=false. */
  async function uploadFixture(root = ROOT): Promise<void> {
    const dir = join(HUDI_FIXTURES, FIXTURE);
    for (const file of await filesOf(dir)) {
      if (file.startsWith('.hoodie/metadata/') || file.startsWith('.hoodie/.index_defs/')) continue;
      let bytes: Uint8Array = await readFile(join(dir, file));
      if (file === '.hoodie/hoodie.properties')
        bytes = new TextEncoder().encode(
          new TextDecoder()
            .decode(bytes)
            .split('\n')
            .filter(
              (l) =>
                !l.startsWith('hoodie.table.metadata.partitions') &&
                !l.startsWith('hoodie.table.index.defs.path'),
            )
            .join('\n'),
        );
      await h.store.put(`${root}/${file}`, bytes);
    }
  }

  /** The table as it is in S3, downloaded to a local folder (for DuckDB and the log reader). */
  async function download(root = ROOT): Promise<string> {
    const dir = await mkdtemp(join(h.scratch, 'hudi-'));
    for (const key of await keysUnder(h.store, `${root}/`)) {
      const file = join(dir, key);
      await mkdir(join(file, '..'), { recursive: true });
      await writeFile(file, await h.store.get(key));
    }
    return dir;
  }

  /**
   * Hudi's snapshot view of the table: per latest slice, base rows less the merge's drops plus its log rows. A base
   * file of another schema (a concurrent writer's) counts with its own columns, `_hoodie_file_name` aside.
   */
  async function hudiView(root = ROOT): Promise<string[]> {
    const dir = await download(root);
    try {
      const store = new LocalObjectStore(dir);
      const state = await readHudiTable(store, root);
      const rows: Record<string, unknown>[] = [];
      const foreign: string[] = [];
      for (const slice of state.partitions.flatMap((p) => p.liveSlices)) {
        const key = slice.baseFile?.key ?? '';
        const file = sqlString(join(dir, key));
        const columns = (await db.rows(`DESCRIBE SELECT * FROM read_parquet(${file})`)).map((r) =>
          String(r.column_name),
        );
        if (!COLUMNS.every((c) => columns.includes(c))) {
          const own = columns.filter((c) => c !== '_hoodie_file_name');
          for (const r of await db.rows(`SELECT ${own.join(', ')} FROM read_parquet(${file})`))
            foreign.push(JSON.stringify(own.map((c) => plainValue(r[c]))));
          continue;
        }
        const base = await db.rows(
          `SELECT ${COLUMNS.join(', ')} FROM read_parquet(${file}, file_row_number = true) ORDER BY file_row_number`,
        );
        if (slice.logFiles.length === 0) {
          rows.push(...base);
          continue;
        }
        const merged = await mergeFileSlice(
          store,
          { baseKey: key, logKeys: slice.logFiles.map((l) => l.key) },
          compactionPolicy(state),
          (i) => isCommitted(state.timeline, i),
          '99999999999999999',
        );
        const dropped = new Set(merged.merge.dropPositions);
        rows.push(...base.filter((_, i) => !dropped.has(i)), ...merged.merge.append);
      }
      return [...rows.map((r) => JSON.stringify(COLUMNS.map((c) => plainValue(r[c])))), ...foreign].sort();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  /** The instant and completion times of the completed compaction commit of `instant` (`T_C.commit`, v8). */
  async function completedCompaction(root: string, instant: string): Promise<string | undefined> {
    return (await keysUnder(h.store, `${root}/.hoodie/timeline/`))
      .map((k) => k.slice(k.lastIndexOf('/') + 1))
      .find((n) => n.startsWith(`${instant}_`) && n.endsWith('.commit'));
  }

  /** The Hudi DynamoDB lock item of the table, as a waiter reads it (undefined: the lock is free). */
  async function lockItem(): Promise<Record<string, unknown> | undefined> {
    const response = await h.cloud.dynamodb.send(
      new GetItemCommand({ TableName: LOCK_TABLE, Key: { key: { S: LOCK_KEY } }, ConsistentRead: true }),
    );
    return response.Item;
  }

  /**
   * A Hudi writer holding the table's DynamoDB lock for `ms` of real time, heartbeating every second as Hudi's
   * lock client does (so a waiter never takes it over), then releasing it; resolves with the time of the release.
   */
  async function holdLock(handle: HudiLockHandle, ms: number, during: () => Promise<void>): Promise<number> {
    for (let waited = 0; waited < ms; waited += 1_000) {
      await pause(1_000);
      await handle.renew();
      await during();
    }
    const releasedAt = Date.now();
    expect(await handle.release()).toBe('released');
    return releasedAt;
  }

  it('schedules, merges and completes one compaction of the partition, the Hudi view unchanged', async () => {
    // Prepare
    await uploadFixture();
    const before = await hudiView();
    const timelineBefore = await keysUnder(h.store, `${ROOT}/.hoodie/timeline/`);

    // Act
    const execution = await run(h, { table: 'trips', partition: PARTITION, quietMinutes: 0 }, 'hudi-mor-1');

    // Assess
    expect(execution.status, `${execution.error}: ${execution.cause}`).toBe('SUCCEEDED');
    const output = execution.output as { groups: number; groupsDone: number; planKey: string };
    expect(output.groups, JSON.stringify(execution.output)).toBeGreaterThan(0);
    expect(output.groupsDone).toBe(output.groups);
    const plan = partitionPlanSchema.parse(
      JSON.parse(new TextDecoder().decode(await h.store.get(output.planKey))),
    );
    const instant = String(plan.formatState?.hudiInstant);
    expect(plan.formatState?.hudiService).toBe('compaction');
    // One completed compaction commit on the timeline, besides its plan and inflight.
    const added = (await keysUnder(h.store, `${ROOT}/.hoodie/timeline/`))
      .filter((k) => !timelineBefore.includes(k))
      .map((k) => k.slice(k.lastIndexOf('/') + 1))
      .filter((n) => /^\d/.test(n))
      .sort();
    expect(added.filter((n) => n.endsWith('.commit'))).toHaveLength(1);
    expect(added.every((n) => n.startsWith(instant))).toBe(true);
    // The new base files are the names the plan fixed, now the latest slices.
    const dir = await download();
    const state = await readHudiTable(new LocalObjectStore(dir), ROOT);
    await rm(dir, { recursive: true, force: true });
    expect(state.timeline.pendingPlans).toEqual([]);
    const compacted = state.timeline.completedWrites.filter((w) => w.instant.time === instant);
    expect(compacted.map((w) => `${w.instant.action} ${w.metadata.compacted}`)).toEqual(['commit true']);
    const latest = state.partitions
      .flatMap((p) => p.liveSlices)
      .filter((s) => s.baseInstantTime === instant)
      .map((s) => s.baseFile?.key.slice(s.baseFile.key.lastIndexOf('/') + 1))
      .sort();
    expect(latest).toEqual(plan.groups.map((g) => String(g.formatState?.hudiOutput)).sort());
    expect(await hudiView()).toEqual(before);
    // Nothing of the run is left under the table's temp folder or in staging.
    expect(await keysUnder(h.store, `${ROOT}/.hoodie/.temp/`)).toEqual([]);
    expect(await keysUnder(h.store, '_lake-compactor/staging/')).toEqual([]);
  });
  it('takes the Hudi DynamoDB lock around scheduling and completion: a Hudi writer holding it holds both back, and it is free between them and after', async () => {
    // Prepare: the lock table as Hudi creates it; a simulated Hudi writer (the Java lock client's item, 3 s lease)
    // holds the lock when the run starts
    await h.cloud.dynamodb.send(new CreateTableCommand(hudiLockTableInput(LOCK_TABLE)));
    await uploadFixture(DDB_ROOT);
    const before = await hudiView(DDB_ROOT);
    const timelineBefore = await keysUnder(h.store, `${DDB_ROOT}/.hoodie/timeline/`);
    const hudiWriter = new DynamoDbHudiLock({
      client: h.cloud.dynamodb,
      tableName: LOCK_TABLE,
      partitionKey: LOCK_KEY,
      clock: systemClock,
      leaseDurationMs: 3_000,
      heartbeatIntervalMs: 1_000,
      safetyMarginMs: 300,
      newOwnerName: () => 'hudi-spark-writer',
    });
    const newCompactionFiles = async () =>
      (await keysUnder(h.store, `${DDB_ROOT}/.hoodie/timeline/`)).filter(
        (k) => !timelineBefore.includes(k) && k.includes('.compaction'),
      );
    const planHeld = await hudiWriter.acquire({ waitMs: 0 });
    const scheduledWhileHeld: string[] = [];
    let planStarted: () => void = () => undefined;
    const planReached = new Promise<void>((resolve) => {
      planStarted = resolve;
    });
    h.hooks.set('Plan partition', () => planStarted());
    // Between the plan and the completion the lock is free: the writer takes it (no wait) at the commit step and
    // holds it across the run's completion.
    let lockDuringMap: Record<string, unknown> | undefined | 'unread' = 'unread';
    let completionHold: Promise<number> | undefined;
    h.hooks.set('Commit group', async () => {
      if (completionHold !== undefined) return;
      lockDuringMap = await lockItem();
      const handle = await hudiWriter.acquire({ waitMs: 0 });
      completionHold = holdLock(handle, 3_000, async () => undefined);
    });

    // Act: the run starts while the writer holds the lock; the writer releases it 3 s after the plan step began
    const execution = run(h, { table: 'trips_ddb', partition: PARTITION, quietMinutes: 0 }, 'hudi-mor-ddb');
    await planReached;
    const planReleasedAt = await holdLock(planHeld, 3_000, async () => {
      scheduledWhileHeld.push(...(await newCompactionFiles()));
    });
    const result = await execution;
    h.hooks.delete('Plan partition');
    h.hooks.delete('Commit group');
    const completionReleasedAt = await (completionHold ?? Promise.resolve(Number.NaN));

    // Assess: nothing scheduled while the writer held the lock; T minted after it released it, and the completion
    // time after its second hold ended; the lock free between plan and commit and after the run
    expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
    const output = result.output as { groups: number; groupsDone: number; planKey: string };
    expect(output.groupsDone).toBe(output.groups);
    const plan = partitionPlanSchema.parse(
      JSON.parse(new TextDecoder().decode(await h.store.get(output.planKey))),
    );
    const instant = String(plan.formatState?.hudiInstant);
    expect(scheduledWhileHeld).toEqual([]);
    expect(instantEpochMs(instant, 'UTC')).toBeGreaterThanOrEqual(planReleasedAt);
    const completed = await completedCompaction(DDB_ROOT, instant);
    expect(completed).toBeDefined();
    const completion = completed?.slice(instant.length + 1, instant.length + 18) ?? '';
    expect(instantEpochMs(completion, 'UTC')).toBeGreaterThanOrEqual(completionReleasedAt);
    expect(lockDuringMap).toBeUndefined();
    expect(await lockItem()).toBeUndefined();
    expect(await hudiView(DDB_ROOT)).toEqual(before);
  });

  it('completes beside a Hudi writer whose insert commit into a new file group lands between plan and commit: the view holds both', async () => {
    // Prepare: the writer commits (under the table's storage lock, its instant from the clock) while our compaction
    // is pending — at the commit step, after our plan and the merge
    await uploadFixture(WRITER_ROOT);
    const before = await hudiView(WRITER_ROOT);
    let appended: { key: string; instant: string; fileId: string } | undefined;
    h.hooks.set('Commit group', async () => {
      if (appended !== undefined) return;
      appended = await appendHudiInsert(
        { store: h.store, root: WRITER_ROOT, version: 8, last: '20251220210129235', written: 1_000 },
        PARTITION,
        3,
        {
          clock: () => Date.now(),
          lock: new StorageBasedHudiLock({ store: h.store, tableRoot: WRITER_ROOT, clock: systemClock }),
        },
      );
    });

    // Act
    const execution = await run(
      h,
      { table: 'trips_writer', partition: PARTITION, quietMinutes: 0 },
      'hudi-mor-writer',
    );
    h.hooks.delete('Commit group');

    // Assess: our compaction completed after the writer's commit; the writer's file group is live beside our new
    // base files, and the view is the old one plus the writer's three rows
    expect(execution.status, `${execution.error}: ${execution.cause}`).toBe('SUCCEEDED');
    const output = execution.output as { groups: number; groupsDone: number; planKey: string };
    expect(output.groupsDone).toBe(output.groups);
    const plan = partitionPlanSchema.parse(
      JSON.parse(new TextDecoder().decode(await h.store.get(output.planKey))),
    );
    const instant = String(plan.formatState?.hudiInstant);
    expect(appended).toBeDefined();
    expect((appended?.instant ?? '') > instant).toBe(true);
    expect(await completedCompaction(WRITER_ROOT, instant)).toBeDefined();
    const dir = await download(WRITER_ROOT);
    const state = await readHudiTable(new LocalObjectStore(dir), WRITER_ROOT);
    await rm(dir, { recursive: true, force: true });
    expect(state.timeline.pendingPlans).toEqual([]);
    const live = state.partitions.flatMap((p) => p.liveSlices);
    expect(live.find((s) => s.fileId === appended?.fileId)?.baseFile?.key).toBe(appended?.key);
    expect(
      live.filter((s) => s.baseInstantTime === instant).map((s) => s.baseFile?.key.split('/').at(-1)),
    ).toEqual(plan.groups.map((g) => String(g.formatState?.hudiOutput)));
    const after = await hudiView(WRITER_ROOT);
    const writerRows = after.filter((r) => !before.includes(r));
    expect(writerRows).toHaveLength(3);
    expect(writerRows.every((r) => r.includes(appended?.instant ?? '?'))).toBe(true);
    expect([...before, ...writerRows].sort()).toEqual(after);
  });
});
