// The console's undo of a finished workflow run, on the local cloud: the synthesized stack's sweep function, invoked
// with `{ "mode": "undo", "table", "runId", "dryRun"? }` (events/sweep-undo*.json), reverts a run an execution of the
// synthesized state machine made — the same core undo as `lake-compactor undo --stack` — for a Hive-style table
// (inputs re-created, outputs removed), a Delta table (a RESTORE-like version) and an Iceberg table (main rolled back
// to the run's parent snapshot), with rows equal to those of before the run; a dry run and a refused undo (the
// Delta inputs vacuumed) change no byte; an invalid input is refused before anything is read.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { App } from 'aws-cdk-lib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3ObjectStore } from '../../functions/adapters/s3-object-store.js';
import { readCommitActions, readDeltaSnapshot } from '../../functions/core/formats/delta/log.js';
import { PathCatalog } from '../../functions/core/formats/iceberg/catalog.js';
import { readSnapshotFiles } from '../../functions/core/formats/iceberg/live-files.js';
import { appendDeltaEvents, createDeltaEventsTable } from '../../functions/tools/sample-delta.js';
import { appendIcebergEvents, createIcebergEventsTable } from '../../functions/tools/sample-iceberg.js';
import { LakeCompactorStack } from '../../infra/app.js';
import { LocalCloud } from '../../infra/local/local-cloud.js';
import { type DuckDb, openDuckDb } from '../support/duckdb.js';
import { sharedDynamoDb } from '../support/dynamodb-local.js';
import { keysUnder, listPartition, rowMultiset, writePartition } from '../support/workflow-harness.js';

const BUCKET = 'lake';

let cloud: LocalCloud;
let stack: LakeCompactorStack;
let store: S3ObjectStore;
let db: DuckDb;
let scratch: string;

beforeAll(async () => {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  stack = new LakeCompactorStack(app, 'UndoConsole', {
    compactor: {
      tables: [
        { name: 'events', bucketName: BUCKET, prefix: 'events/', partitionColumns: ['date'] },
        {
          name: 'orders',
          bucketName: BUCKET,
          prefix: 'orders/',
          partitionColumns: ['date'],
          format: 'delta',
          // The table's writer here (sample-delta.ts) commits with put-if-absent, as delta-rs does.
          deltaLogStore: { type: 's3-conditional' },
        },
        { name: 'clicks', bucketName: BUCKET, prefix: 'clicks/', format: 'iceberg' },
      ],
    },
  });
  const start = async () =>
    LocalCloud.start({
      stack,
      sharedDynamoDb: await sharedDynamoDb(),
      stepFunctions: { waitTimeMs: 0, retryIntervalMs: 0 },
    });
  cloud = await start().catch((error: unknown) => {
    if (error instanceof Error && error.name === 'LocalCloudStartupError') return start();
    throw error;
  });
  store = new S3ObjectStore({ client: cloud.s3, bucket: BUCKET });
  db = await openDuckDb();
  scratch = await mkdtemp(path.join(tmpdir(), 'undo-console-'));
}, 180_000);

afterAll(async () => {
  db?.close();
  await cloud?.stop();
  if (scratch !== undefined) await rm(scratch, { recursive: true, force: true });
});

/** The sweep function as the console invokes it. */
const sweep = (input: unknown) => cloud.invoke(stack.compactor.sweepFunction, input);

/** Runs one execution of the synthesized workflow and expects it to succeed. */
async function compact(input: Record<string, unknown>, name: string): Promise<void> {
  const execution = await cloud.runExecution(stack.compactor.workflow.stateMachine, input, name);
  expect(execution.status, `${execution.error}: ${execution.cause}`).toBe('SUCCEEDED');
}

/** Every object of the bucket with its ETag and size: equal before and after means no byte changed. */
async function bucketBytes(): Promise<string[]> {
  const objects: string[] = [];
  for await (const o of store.listAll('')) objects.push(`${o.key} ${o.etag} ${o.size}`);
  return objects.sort();
}

/** The Delta table's live files (the latest version's) and their rows. */
async function liveDelta(root: string): Promise<{ version: number; keys: string[]; rows: string[] }> {
  const snapshot = await readDeltaSnapshot(store, root);
  const keys = snapshot.files.map((f) => f.key ?? f.path).sort();
  return { version: snapshot.version, keys, rows: await rowMultiset(store, keys, scratch, db) };
}

/** The Iceberg table's current snapshot and the rows of its live data files (the sample has no delete files). */
async function liveIceberg(root: string): Promise<{ snapshot: string; rows: string[] }> {
  const table = await new PathCatalog(store).load(root);
  const files = await readSnapshotFiles(store, table);
  const keys = files.dataFiles.map((f) => f.entry.file.key).sort();
  return {
    snapshot: String(table.metadata.currentSnapshotId),
    rows: await rowMultiset(store, keys, scratch, db),
  };
}

describe("the sweep function's undo input (the console's undo)", () => {
  it('refuses an input without a run id before anything is read', async () => {
    // Act / Assess
    await expect(sweep({ mode: 'undo', table: 'events' })).rejects.toMatchObject({
      name: 'InvalidInputError',
    });
    await expect(sweep({ mode: 'undo', table: 'nope', runId: 'x' })).rejects.toThrow(/Unknown table "nope"/);
  });

  it("reverts a Hive-style run an execution made: a dry run changes nothing, the undo brings the partition's files and rows back, a second does nothing", async () => {
    // Prepare: eight small files of one day, compacted by an execution of the synthesized state machine
    const day = '2024-05-01';
    const { keys: inputs } = await writePartition(store, day, 8, 31);
    const rowsBefore = await rowMultiset(store, inputs, scratch, db);
    await compact({ table: 'events', partition: `date=${day}`, quietMinutes: 0 }, 'events-undo-1');
    const compacted = (await listPartition(store, day)).map((o) => o.key);
    expect(compacted.length).toBeLessThan(inputs.length);
    const bytesCompacted = await bucketBytes();

    // Act: the dry run
    const planned = (await sweep({
      mode: 'undo',
      table: 'events',
      runId: 'events-undo-1',
      dryRun: true,
    })) as {
      outcome: { kind: string; changes: { action: string; key: string }[] };
    };

    // Assess: every input it would restore and output it would remove is named; no byte changed
    expect(planned.outcome.kind).toBe('planned');
    expect(
      planned.outcome.changes
        .filter((c) => c.action === 'restore')
        .map((c) => c.key)
        .sort(),
    ).toEqual([...inputs].sort());
    expect(
      planned.outcome.changes
        .filter((c) => c.action === 'remove')
        .map((c) => c.key)
        .sort(),
    ).toEqual(compacted);
    expect(await bucketBytes()).toEqual(bytesCompacted);

    // Act: the undo
    const undone = (await sweep({ mode: 'undo', table: 'events', runId: 'events-undo-1' })) as {
      mode: string;
      outcome: { kind: string };
    };

    // Assess: the inputs are back at their keys, the outputs gone, the rows exactly those of before the run
    expect(undone).toMatchObject({ mode: 'undo', table: 'events', runId: 'events-undo-1', dryRun: false });
    expect(undone.outcome.kind).toBe('undone');
    const after = (await listPartition(store, day)).map((o) => o.key);
    expect(after).toEqual([...inputs].sort());
    expect(await rowMultiset(store, after, scratch, db)).toEqual(rowsBefore);
    expect(await keysUnder(store, '_lake-compactor/staging/')).toEqual([]);

    // Act / Assess: a second undo finds the record and changes nothing
    const bytesBetween = await bucketBytes();
    const again = (await sweep({ mode: 'undo', table: 'events', runId: 'events-undo-1' })) as {
      outcome: { kind: string; reason: string };
    };
    expect(again.outcome).toMatchObject({
      kind: 'already-undone',
      reason: expect.stringMatching(/undone at /),
    });
    expect(await bucketBytes()).toEqual(bytesBetween);
  });

  it('reverts a Delta run with one new version putting its inputs back, and refuses, changing no byte, once vacuum removed them', async () => {
    // Prepare: six appends to each of two days of a Delta table, each day compacted by an execution
    const now = Date.now();
    await createDeltaEventsTable(store, 'orders', { now });
    for (const [d, day] of ['2024-06-01', '2024-06-02'].entries()) {
      for (let b = 0; b < 6; b += 1) {
        await appendDeltaEvents(store, 'orders', { day, rows: 40 + b, seed: 10 * d + b, now });
      }
    }
    const before = await liveDelta('orders');
    await compact({ table: 'orders', partition: 'date=2024-06-01', quietMinutes: 0 }, 'orders-undo-1');
    await compact({ table: 'orders', partition: 'date=2024-06-02', quietMinutes: 0 }, 'orders-undo-2');
    const compacted = await liveDelta('orders');
    expect(compacted.keys.length).toBeLessThan(before.keys.length);
    expect([...compacted.rows].sort()).toEqual([...before.rows].sort());

    // Act: undo the first day's run
    const undone = (await sweep({ mode: 'undo', table: 'orders', runId: 'orders-undo-1' })) as {
      outcome: { kind: string };
    };

    // Assess: one new version, with the first day's inputs live again and its output removed (no data change);
    // the rows are those of before either run, each once
    expect(undone.outcome.kind).toBe('undone');
    const restored = await liveDelta('orders');
    expect(restored.version).toBe(compacted.version + 1);
    const actions = (await readCommitActions(store, 'orders', restored.version)) ?? [];
    expect(actions.filter((a) => a.kind === 'add').length).toBeGreaterThan(0);
    for (const a of actions) {
      if (a.kind === 'add') expect(a.add.dataChange).toBe(false);
      if (a.kind === 'remove') expect(a.remove.dataChange).toBe(false);
    }
    const firstDay = (keys: string[]) => keys.filter((k) => k.includes('date=2024-06-01/'));
    expect(firstDay(restored.keys)).toEqual(firstDay(before.keys));
    expect([...restored.rows].sort()).toEqual([...before.rows].sort());

    // Prepare: vacuum (a console run, retention below the minimum) deletes the second run's removed inputs
    await cloud.invoke(stack.compactor.maintenance.vacuumFunction, {
      tables: ['orders'],
      dryRun: false,
      deltaRetentionHours: 0,
      allowRetentionBelowMinimum: true,
    });
    const secondDayInputs = before.keys.filter((k) => k.includes('date=2024-06-02/'));
    expect(await store.head(secondDayInputs[0] as string)).toBeUndefined();
    const bytesVacuumed = await bucketBytes();

    // Act / Assess: the second run's undo is refused with the reason, and no byte changes
    await expect(sweep({ mode: 'undo', table: 'orders', runId: 'orders-undo-2' })).rejects.toMatchObject({
      name: 'UndoRefusedError',
      message: expect.stringMatching(
        /cannot undo run orders-undo-2: .*no longer on storage .*VACUUM deleted them/,
      ),
    });
    expect(await bucketBytes()).toEqual(bytesVacuumed);
  });

  it("rolls an Iceberg table's main back to the snapshot an execution's run started from, rows equal to before", async () => {
    // Prepare: six appends to one day of an Iceberg table (path catalog), compacted by an execution
    const now = Date.now();
    await createIcebergEventsTable(store, 'clicks/', { now });
    for (let b = 0; b < 6; b += 1) {
      await appendIcebergEvents(store, 'clicks/', { day: '2024-07-01', rows: 30 + b, seed: 50 + b, now });
    }
    const before = await liveIceberg('clicks');
    await compact(
      { table: 'clicks', partition: 'data/event_timestamp_day=2024-07-01', quietMinutes: 0 },
      'clicks-undo-1',
    );
    const compacted = await liveIceberg('clicks');
    expect(compacted.snapshot).not.toBe(before.snapshot);
    expect([...compacted.rows].sort()).toEqual([...before.rows].sort());

    // Act
    const undone = (await sweep({ mode: 'undo', table: 'clicks', runId: 'clicks-undo-1' })) as {
      outcome: { kind: string };
    };

    // Assess: the current snapshot is the one of before the run, with exactly its rows
    expect(undone.outcome.kind).toBe('undone');
    const after = await liveIceberg('clicks');
    expect(after.snapshot).toBe(before.snapshot);
    expect(after.rows).toEqual(before.rows);
  });
});
