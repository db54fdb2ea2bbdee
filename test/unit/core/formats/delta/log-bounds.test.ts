// A Delta log is read within the memory budget: a checkpoint name claiming 10^10 parts is judged by the parts
// listed (not counted up to), log files larger than the budget are refused before they are fetched, a checkpoint's
// rows are checked before they are decoded and then decoded a row group at a time, and a state with more live
// actions than the budget holds is a named MetadataTooLargeError, under a bigger budget the same table reads.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MetadataTooLargeError } from '../../../../../functions/core/errors.js';
import { DeltaLogError, readDeltaSnapshot } from '../../../../../functions/core/formats/delta/index.js';
import {
  classifyLogFile,
  completeCheckpoints,
  type LogFile,
} from '../../../../../functions/core/formats/delta/log-files.js';
import { memoryBudget, withMemoryBudget } from '../../../../../functions/core/memory-budget.js';
import { openDuckDb, sqlString } from '../../../../support/duckdb.js';
import {
  addAction,
  commitKey,
  commitText,
  memoryCopy,
  metaDataAction,
  protocolAction,
  syntheticTable,
} from './delta-test-kit.js';

const ROOT = 'lake/t/';
const LOG = `${ROOT}_delta_log/`;

async function failure(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a failure');
}

/** A table whose commit 0 adds `files` files (with stats), all in partition d1. */
async function tableOf(files: number) {
  const adds = Array.from({ length: files }, (_, i) =>
    addAction(`day=d1/part-${String(i).padStart(6, '0')}.parquet`, 'd1', { stats: '{"numRecords":1}' }),
  );
  return syntheticTable(ROOT, [[protocolAction(1, 2), metaDataAction(), ...adds]]);
}

/**
 * A classic checkpoint of version 0 written by DuckDB with row groups of `rowGroupRows`: protocol, metaData, then
 * `files` adds; `removeOfFirst` adds a remove of the first file's path as the last row (another row group).
 */
async function checkpointOf(files: number, rowGroupRows: number, removeOfFirst = false): Promise<Uint8Array> {
  const duck = await openDuckDb();
  const dir = mkdtempSync(join(tmpdir(), 'lc-delta-bounds-'));
  try {
    const path = join(dir, 'c.parquet');
    const schema = JSON.stringify({
      type: 'struct',
      fields: [
        { name: 'id', type: 'long', nullable: true, metadata: {} },
        { name: 'day', type: 'string', nullable: true, metadata: {} },
      ],
    });
    const add =
      'STRUCT(path VARCHAR, partitionValues MAP(VARCHAR, VARCHAR), size BIGINT, modificationTime BIGINT, dataChange BOOLEAN, stats VARCHAR)';
    const remove = 'STRUCT(path VARCHAR, deletionTimestamp BIGINT, dataChange BOOLEAN)';
    const protocol = 'STRUCT(minReaderVersion INTEGER, minWriterVersion INTEGER)';
    const meta =
      'STRUCT(id VARCHAR, format STRUCT(provider VARCHAR, options MAP(VARCHAR, VARCHAR)), schemaString VARCHAR, partitionColumns VARCHAR[], configuration MAP(VARCHAR, VARCHAR), createdTime BIGINT)';
    await duck.exec(`CREATE TABLE c AS
      SELECT {'minReaderVersion': 1, 'minWriterVersion': 2}::${protocol} AS protocol, NULL::${meta} AS metaData, NULL::${add} AS "add", NULL::${remove} AS "remove", 0 AS o
      UNION ALL SELECT NULL, {'id': 'id', 'format': {'provider': 'parquet', 'options': MAP {}}, 'schemaString': ${sqlString(schema)}, 'partitionColumns': ['day'], 'configuration': MAP {}, 'createdTime': 1}::${meta}, NULL, NULL, 1
      UNION ALL SELECT NULL, NULL, {'path': 'day=d1/part-' || lpad(i::VARCHAR, 6, '0') || '.parquet', 'partitionValues': MAP {'day': 'd1'}, 'size': 100, 'modificationTime': 1, 'dataChange': false, 'stats': '{"numRecords":1}'}::${add}, NULL, 2 + i FROM range(${files}) t(i)
      ${removeOfFirst ? `UNION ALL SELECT NULL, NULL, NULL, {'path': 'day=d1/part-000000.parquet', 'deletionTimestamp': 5, 'dataChange': true}::${remove}, ${files + 2}` : ''}`);
    await duck.exec(
      `COPY (SELECT protocol, metaData, "add", "remove" FROM c ORDER BY o) TO ${sqlString(path)} (FORMAT parquet, ROW_GROUP_SIZE ${rowGroupRows})`,
    );
    return readFileSync(path);
  } finally {
    duck.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('multi-part checkpoint names are judged by the parts listed', () => {
  const parts = (names: string[]): LogFile[] => names.map((n) => classifyLogFile(n) as LogFile);
  const v = '00000000000000000000';

  it('a lone part claiming 9,999,999,999 parts is no checkpoint, and neither are parts out of 1..n', () => {
    // Act
    const bomb = completeCheckpoints(parts([`${v}.checkpoint.0000000001.9999999999.parquet`]));
    const gap = completeCheckpoints(
      parts([
        `${v}.checkpoint.0000000001.0000000003.parquet`,
        `${v}.checkpoint.0000000002.0000000003.parquet`,
        `${v}.checkpoint.0000000005.0000000003.parquet`,
      ]),
    );
    const whole = completeCheckpoints(
      parts([
        `${v}.checkpoint.0000000002.0000000002.parquet`,
        `${v}.checkpoint.0000000001.0000000002.parquet`,
      ]),
    );

    // Assess
    expect(bomb).toEqual([]);
    expect(gap).toEqual([]);
    expect(whole).toEqual([
      {
        version: 0,
        names: [
          `${v}.checkpoint.0000000001.0000000002.parquet`,
          `${v}.checkpoint.0000000002.0000000002.parquet`,
        ],
        v2: false,
      },
    ]);
  });

  it('the empty file named ….checkpoint.0000000001.9999999999.parquet leaves the table readable as before', async () => {
    // Prepare
    const store = await memoryCopy('simple_table_with_checkpoint', ROOT);
    const before = await readDeltaSnapshot(store, ROOT);
    await store.put(`${LOG}00000000000000000010.checkpoint.0000000001.9999999999.parquet`, new Uint8Array());

    // Act
    const after = await readDeltaSnapshot(store, ROOT);

    // Assess
    expect(after.version).toBe(before.version);
    expect(after.files).toEqual(before.files);
    expect(after.checkpoint).toEqual(before.checkpoint);
  });
});

describe('the table state is bounded by the memory budget', () => {
  it('a commit adding 10,000 files is refused under 64 MB (8,192 actions) and read under 128 MB', async () => {
    // Prepare
    const store = await tableOf(10_000);

    // Act
    const err = await failure(
      withMemoryBudget(memoryBudget(64, 'run the CLI with a larger --memory-mb (now 64)'), () =>
        readDeltaSnapshot(store, ROOT),
      ),
    );
    const read = await withMemoryBudget(memoryBudget(128), () => readDeltaSnapshot(store, ROOT));

    // Assess
    expect(err).toBeInstanceOf(MetadataTooLargeError);
    expect(err.message).toMatch(
      /^Delta table lake\/t\/: log file lake\/t\/_delta_log\/00000000000000000000\.json is too large for this process's memory: after it the table state holds 10000 actions .*more than the 8192 it may hold here/,
    );
    expect(err.message).toMatch(
      /run the CLI with a larger --memory-mb \(now 64\), or have the table's owner compact it \(OPTIMIZE\)/,
    );
    expect(read.files).toHaveLength(10_000);
  });

  it('a log file larger than the budget allows is refused from its listed size, before it is fetched', async () => {
    // Prepare: a 5 MB commit against the 64 MB budget's 4 MiB per file
    const store = await syntheticTable(ROOT, [[protocolAction(1, 2), metaDataAction()]]);
    await store.put(
      commitKey(ROOT, 1),
      commitText([{ commitInfo: { operation: 'WRITE', padding: 'x'.repeat(5 * 1024 * 1024) } }]),
    );
    const getsBefore = store.requests.get;

    // Act
    const err = await failure(withMemoryBudget(memoryBudget(64), () => readDeltaSnapshot(store, ROOT)));

    // Assess
    expect(err).toBeInstanceOf(MetadataTooLargeError);
    expect(err.message).toMatch(
      /log file lake\/t\/_delta_log\/00000000000000000001\.json is too large .*it has 5\.0 MiB, more than the 4\.0 MiB one log file may have.*write a checkpoint/,
    );
    expect(store.requests.get).toBe(getsBefore);
  });

  it("a checkpoint's rows are checked against the budget before any row group is decoded", async () => {
    // Prepare
    const store = await syntheticTable(ROOT, []);
    await store.put(`${LOG}00000000000000000000.checkpoint.parquet`, await checkpointOf(10_000, 122_880));

    // Act
    const err = await failure(withMemoryBudget(memoryBudget(64), () => readDeltaSnapshot(store, ROOT)));
    const read = await withMemoryBudget(memoryBudget(128), () => readDeltaSnapshot(store, ROOT));

    // Assess
    expect(err).toBeInstanceOf(MetadataTooLargeError);
    expect(err.message).toMatch(
      /log file lake\/t\/_delta_log\/00000000000000000000\.checkpoint\.parquet is too large .*the checkpoint holds 10002 or more actions, more than the 8192/,
    );
    expect(read.files).toHaveLength(10_000);
  });

  it('a checkpoint read a row group at a time gives the state, and refuses a file added in one row group and removed in another', async () => {
    // Prepare: 5,000 adds in row groups of 2,048 rows; a second checkpoint whose last row removes the first add
    const store = await syntheticTable(ROOT, []);
    await store.put(`${LOG}00000000000000000000.checkpoint.parquet`, await checkpointOf(5_000, 2_048));
    const clashing = await syntheticTable(ROOT, []);
    await clashing.put(
      `${LOG}00000000000000000000.checkpoint.parquet`,
      await checkpointOf(5_000, 2_048, true),
    );

    // Act
    const read = await readDeltaSnapshot(store, ROOT);
    const err = await failure(readDeltaSnapshot(clashing, ROOT));

    // Assess
    expect(read.files.map((f) => f.path)).toEqual(
      Array.from({ length: 5_000 }, (_, i) => `day=d1/part-${String(i).padStart(6, '0')}.parquet`),
    );
    expect(err).toBeInstanceOf(DeltaLogError);
    expect(err.message).toMatch(/both adds and removes the logical file day=d1\/part-000000\.parquet/);
  });
});
