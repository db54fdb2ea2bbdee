// An operator's partition rewrite started through the console (events/workflow-rewrite-*.json), run by the synthesized
// state machine on the local cloud: a checked cast string → bigint rewrites a Hive partition with every untouched
// column equal and the cast column equal to DuckDB's cast of the inputs (row multisets by DuckDB), and `lake-compactor
// undo` brings the old partition back; a row that does not convert fails the execution naming file, column and value
// with the inputs untouched; an invalid input fails at validation before the partition is read; a dry run writes its
// first rows to the work area's previews/ only, its output carrying the new schema and where they are, no table row.
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { S3ObjectStore } from '../../functions/adapters/s3-object-store.js';
import { run as runCli } from '../../functions/cli/index.js';
import { captureIo } from '../support/cli-io.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';
import {
  keysUnder,
  listPartition,
  run,
  startWorkflowHarness,
  type WorkflowHarness,
} from '../support/workflow-harness.js';

const CAST = { steps: [{ op: 'cast', column: 'user_id', to: 'int64' }] };

let h: WorkflowHarness;
let db: DuckDb;

beforeAll(async () => {
  h = await startWorkflowHarness();
  db = await openDuckDb();
});

afterAll(async () => {
  db?.close();
  await h?.stop();
});

/**
 * Three files of (user_id VARCHAR of digits, name, ts TIMESTAMP, amount DOUBLE) in `events/date=<day>/`; `bad` puts a
 * value that is not an integer in the 4th row of the last file. Returns their local copies (for DuckDB).
 */
async function writeDay(day: string, options: { bad?: string } = {}): Promise<string[]> {
  const local: string[] = [];
  for (let i = 0; i < 3; i++) {
    const id =
      options.bad !== undefined && i === 2
        ? `CASE WHEN range = 3 THEN ${sqlString(options.bad)} ELSE (range * 7 + ${i * 100})::VARCHAR END`
        : `(range * 7 + ${i * 100})::VARCHAR`;
    const file = path.join(h.scratch, `${day}-part-${i}.parquet`);
    await db.writeParquet(
      `SELECT ${id} AS user_id, 'User-' || range || '-' || ${i} AS name,
              TIMESTAMP '2023-12-30 21:00:00' + INTERVAL (range * 5 + ${i}) HOUR AS ts,
              CASE WHEN range = 2 THEN NULL ELSE range * 1.25 + ${i} END::DOUBLE AS amount
       FROM range(6)`,
      file,
    );
    await h.store.put(`events/date=${day}/part-${i}.parquet`, readFileSync(file));
    local.push(file);
  }
  return local;
}

/** `columns` of every row of the files (local paths) as DuckDB reads them, one JSON text per row, sorted. */
async function rowsOf(files: readonly string[], columns: string): Promise<string[]> {
  const list = files.map(sqlString).join(', ');
  const rows = await db.rows(`SELECT ${columns} FROM read_parquet([${list}], hive_partitioning = false)`);
  return rows.map((r) => JSON.stringify(r)).sort();
}

/** The partition's data files downloaded for DuckDB. */
async function download(store: S3ObjectStore, day: string): Promise<string[]> {
  const files: string[] = [];
  for (const [i, o] of (await listPartition(store, day)).entries()) {
    const file = path.join(h.scratch, `${day}-now-${i}-${Date.now()}.parquet`);
    await writeFile(file, await store.get(o.key));
    files.push(file);
  }
  return files;
}

/** Every object of the bucket by key and ETag (the table and the work root alike). */
async function bucketState(): Promise<string[]> {
  const out: string[] = [];
  for await (const o of h.store.listAll('')) out.push(`${o.key} ${o.etag} ${o.size}`);
  return out.sort();
}

describe('partition rewrite through the deployed workflow (console input), on the local cloud', () => {
  it('casts string → bigint: untouched columns equal row for row, the cast column DuckDB’s cast of the inputs; undo brings the old partition back', async () => {
    // Prepare
    const day = '2024-03-01';
    const inputs = await writeDay(day);
    const untouched = await rowsOf(inputs, 'name, ts, amount');
    const expected = await rowsOf(inputs, 'user_id::BIGINT AS user_id, name, ts, amount');
    const before = await rowsOf(inputs, '*');
    const inputKeys = (await listPartition(h.store, day)).map((o) => o.key);

    // Act
    const execution = await run(
      h,
      { table: 'events', partition: `date=${day}`, transform: CAST, quietMinutes: 0 },
      'rewrite-cast-1',
    );

    // Assess
    expect(execution.status, `${execution.error}: ${execution.cause}`).toBe('SUCCEEDED');
    const output = execution.output as {
      groupsDone: number;
      filesPublished: number;
      rewrite: { schema: string[] };
    };
    expect(output.groupsDone).toBe(1);
    // Three small files packed into one output at the table's target size
    expect(output.filesPublished).toBe(1);
    expect(output.rewrite.schema).toEqual([
      'user_id  int64  (cast, checked)',
      'name  string',
      'ts  timestamp-us',
      'amount  float64',
    ]);
    const after = await listPartition(h.store, day);
    expect(after.map((o) => o.key).filter((k) => inputKeys.includes(k))).toEqual([]);
    const written = await download(h.store, day);
    expect(written).toHaveLength(1);
    const types = await db.columnTypes(
      `SELECT * FROM read_parquet([${written.map(sqlString).join(', ')}], hive_partitioning = false)`,
    );
    expect(types.map((t) => `${t.name} ${t.type}`)).toEqual([
      'user_id BIGINT',
      'name VARCHAR',
      'ts TIMESTAMP',
      'amount DOUBLE',
    ]);
    expect(await rowsOf(written, 'name, ts, amount')).toEqual(untouched);
    expect(await rowsOf(written, 'user_id, name, ts, amount')).toEqual(expected);
    // Nothing left staged; the inputs' trash copies are the run's undo.
    expect(await keysUnder(h.store, '_lake-compactor/staging/')).toEqual([]);
    expect(await keysUnder(h.store, '_lake-compactor/trash/rewrite-cast-1/')).toHaveLength(3);

    // Act again: the operator's undo of the run, through the state table, as for a compaction run
    const io = captureIo({ now: Date.now(), env: { ...h.cloud.env } });
    const code = await runCli(
      ['undo', 's3://lake/events', 'rewrite-cast-1', '--state-table', h.cloud.tableName(h.stack.table)],
      io,
    );

    // Assess: the old partition is back, rows and keys
    expect(io.stderr).toEqual([]);
    expect(code).toBe(0);
    expect((await listPartition(h.store, day)).map((o) => o.key)).toEqual(inputKeys);
    expect(await rowsOf(await download(h.store, day), '*')).toEqual(before);
  });

  it('fails the execution naming file, column and value on a row that does not convert, inputs untouched', async () => {
    // Prepare
    const day = '2024-03-02';
    await writeDay(day, { bad: '12.5' });
    const before = await listPartition(h.store, day);

    // Act
    const execution = await run(
      h,
      { table: 'events', partition: `date=${day}`, transform: CAST, quietMinutes: 0 },
      'rewrite-bad-1',
    );

    // Assess
    expect(execution.status).toBe('FAILED');
    expect(execution.error).toBe('TransformValueError');
    expect(execution.cause).toContain(`Row 4 of events/date=${day}/part-2.parquet`);
    expect(execution.cause).toContain('column user_id value "12.5"');
    const after = await listPartition(h.store, day);
    expect(after.map((o) => `${o.key} ${o.etag} ${o.size}`)).toEqual(
      before.map((o) => `${o.key} ${o.etag} ${o.size}`),
    );
    expect(await keysUnder(h.store, '_lake-compactor/staging/rewrite-bad-1/')).toEqual([]);
    expect(await keysUnder(h.store, '_lake-compactor/trash/rewrite-bad-1/')).toEqual([]);
  });

  it('fails an invalid input at validation, by InvalidInputError, before the partition is read', async () => {
    // Prepare: a drop without its confirmation; the plan step (the first to read the partition) is watched
    const day = '2024-03-03';
    await writeDay(day);
    const planned: unknown[] = [];
    h.hooks.set('Plan partition', (input) => {
      planned.push(input);
    });
    const before = await bucketState();

    // Act
    const execution = await run(
      h,
      {
        table: 'events',
        partition: `date=${day}`,
        transform: { steps: [{ op: 'drop', column: 'amount' }] },
        quietMinutes: 0,
      },
      'rewrite-invalid-1',
    );
    h.hooks.delete('Plan partition');

    // Assess
    expect(execution.status).toBe('FAILED');
    expect(execution.error).toBe('InvalidInputError');
    expect(execution.cause).toContain('confirmDrop');
    expect(execution.cause).toContain('amount');
    expect(planned).toEqual([]);
    expect(await bucketState()).toEqual(before);
  });

  it('a dry run writes its preview rows to the work area and its output says where: no table row in the output, the execution history or the run finished event', async () => {
    // Prepare
    const day = '2024-03-04';
    const inputs = await writeDay(day);
    const firstRows = await db.rows(
      `SELECT user_id::BIGINT AS user_id, name FROM read_parquet(${sqlString(inputs[0] as string)}) LIMIT 10`,
    );
    const names = (await db.rows(`SELECT name FROM read_parquet(${sqlString(inputs[0] as string)})`)).map(
      (r) => r.name as string,
    );
    const before = await bucketState();
    const eventsBefore = h.cloud.events.length;

    // Act
    const execution = await run(
      h,
      { table: 'events', partition: `date=${day}`, transform: CAST, dryRun: true, quietMinutes: 0 },
      'rewrite-dry-1',
    );

    // Assess: the output names the schema and the preview's object, and holds none of the table's values
    expect(execution.status, `${execution.error}: ${execution.cause}`).toBe('SUCCEEDED');
    const output = execution.output as {
      outcome: string;
      rewrite: { schema: string[]; preview: { file: string; rows: number; key: string; uri: string } };
    };
    expect(output.outcome).toBe('dry-run');
    expect(output.rewrite.schema[0]).toBe('user_id  int64  (cast, checked)');
    expect(output.rewrite.preview).toEqual({
      file: `events/date=${day}/part-0.parquet`,
      rows: 6,
      key: '_lake-compactor/previews/rewrite-dry-1.json',
      uri: 's3://lake/_lake-compactor/previews/rewrite-dry-1.json',
    });
    // What Step Functions logs (level ALL, with execution data) and sends to EventBridge is the states' data.
    const carried = [
      JSON.stringify(execution.output),
      JSON.stringify(execution.history),
      JSON.stringify(h.cloud.events.slice(eventsBefore)),
      JSON.stringify(h.cloud.notifications),
    ];
    expect(names).toHaveLength(6);
    for (const name of names) for (const text of carried) expect(text).not.toContain(name);
    // The preview object holds the rows as rewritten; nothing else was written
    const preview = JSON.parse(new TextDecoder().decode(await h.store.get(output.rewrite.preview.key))) as {
      runId: string;
      file: string;
      schema: string[];
      rows: Record<string, string | null>[];
    };
    expect(preview.runId).toBe('rewrite-dry-1');
    expect(preview.file).toBe(`events/date=${day}/part-0.parquet`);
    expect(preview.schema).toEqual(output.rewrite.schema);
    expect(preview.rows.map((r) => ({ user_id: r.user_id, name: r.name }))).toEqual(firstRows);
    const after = await bucketState();
    expect(after.filter((o) => !before.includes(o)).map((o) => o.split(' ')[0])).toEqual([
      output.rewrite.preview.key,
    ]);
    expect(before.filter((o) => !after.includes(o))).toEqual([]);
  });
});
