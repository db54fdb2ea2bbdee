// `lake-compactor compact --format delta` when the engine cannot rewrite an input, on a Databricks-written Delta
// table with INT96 timestamps (delta-rs' `table_with_edge_timestamps`, plus four byte-copies of its files appended
// so the partition is worth compacting): the run fails loudly — the real cause, the setting and flag that fix it,
// the input quarantined, exit 1, no commit, no byte of the table changed — never "changed concurrently"; an input a
// writer genuinely replaced is still a concurrent change; and with `--schema-fidelity logical` the same table
// compacts, every row read back by DuckDB from the objects the log names, and a second run plans nothing.
import { copyFile, cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { runCompact } from '../../functions/cli/compact.js';
import { run } from '../../functions/cli/index.js';
import { readDeltaSnapshot } from '../../functions/core/formats/delta/log.js';
import type { ParquetEngine } from '../../functions/ports/parquet-engine.js';
import { defaultParquetEngine } from '../../functions/shared/parquet-engine.js';
import { captureIo } from '../support/cli-io.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';
import { DELTA_FIXTURES } from '../support/fixtures.js';
import { folderContentSnapshot } from '../support/folder-snapshot.js';

const ORIGINALS = [
  'part-00000-a9dd181d-61aa-491d-b3c9-3eea548de6cb-c000.snappy.parquet',
  'part-00001-f804d355-db40-4e13-a624-ddd50ce7f5c4-c000.snappy.parquet',
];

let db: DuckDb;
let dir: string;

/**
 * A copy of the Databricks table with version 1 appending four byte-copies of its two files (1,201 bytes, one row
 * each, INT96 `BIG_DATE`/`NORMAL_DATE`, Spark's `legacyINT96`/`legacyDateTime` footer keys): six live files.
 */
async function int96DeltaTable(): Promise<string> {
  const table = await mkdtemp(join(tmpdir(), 'lc-delta-int96-'));
  await cp(join(DELTA_FIXTURES, 'table_with_edge_timestamps'), table, { recursive: true });
  const adds: object[] = [];
  for (let i = 0; i < 4; i += 1) {
    const name = `part-0000${i + 2}-appended-${i}-c000.snappy.parquet`;
    await copyFile(join(table, ORIGINALS[i % 2] as string), join(table, name));
    adds.push({
      add: {
        path: name,
        partitionValues: {},
        size: 1201,
        modificationTime: 1649083192000,
        dataChange: true,
        stats: JSON.stringify({ numRecords: 1 }),
      },
    });
  }
  const commit = [
    {
      commitInfo: {
        timestamp: 1649083193054,
        operation: 'WRITE',
        operationParameters: { mode: 'Append', partitionBy: '[]' },
        readVersion: 0,
        isBlindAppend: true,
      },
    },
    ...adds,
  ];
  await writeFile(
    join(table, '_delta_log', '00000000000000000001.json'),
    `${commit.map((a) => JSON.stringify(a)).join('\n')}\n`,
  );
  return table;
}

/** The live files of the latest version and every row they hold (timestamps as text), canonically ordered. */
async function liveTable(): Promise<{ version: number; keys: string[]; rows: string[] }> {
  const snapshot = await readDeltaSnapshot(new LocalObjectStore(dir), '');
  const keys = snapshot.files.map((f) => f.key ?? f.path).sort();
  const files = keys.map((k) => sqlString(join(dir, k))).join(', ');
  const rows = await db.rows(
    `SELECT strftime(BIG_DATE, '%Y-%m-%d %H:%M:%S.%f') AS big, strftime(NORMAL_DATE, '%Y-%m-%d %H:%M:%S.%f') AS normal, SOME_VALUE FROM read_parquet([${files}]) ORDER BY ALL`,
  );
  return { version: snapshot.version, keys, rows: rows.map((r) => JSON.stringify(r)) };
}

/** The files `quarantine --json` lists: partition, key and the error that put each there. */
function quarantined(stdout: readonly string[]): { partition: string; key: string; errorName: string }[] {
  const listed = JSON.parse(stdout.join('\n')) as {
    quarantined: { partition: string; key: string; errorName: string }[];
  };
  return listed.quarantined.map(({ partition, key, errorName }) => ({ partition, key, errorName }));
}

/** Every byte of the table: its log and data files (not the run's own work area). */
async function tableBytes(): Promise<string[]> {
  return (await folderContentSnapshot(dir)).filter((line) => !line.startsWith('_lake-compactor'));
}

beforeAll(async () => {
  db = await openDuckDb();
});

afterAll(async () => {
  db.close();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

beforeEach(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  dir = await int96DeltaTable();
});

describe('compact --format delta when the engine cannot rewrite an input', () => {
  it('fails with the real cause and the flag that fixes it, quarantines the input, exits 1 and commits nothing', async () => {
    // Prepare
    const before = await liveTable();
    const bytes = await tableBytes();
    const io = captureIo();

    // Act
    const code = await run(['compact', dir, '--format', 'delta'], io);
    const listed = captureIo();
    await run(['quarantine', dir, '--json'], listed);

    // Assess: failed, named, quarantined; the log and every data file as they were
    const out = io.stdout.join('\n');
    expect(code).toBe(1);
    expect(out).toContain(
      `(root) g0001: FAILED UnsupportedInputError: Unsupported Parquet input ${ORIGINALS[0]}: columns BIG_DATE, NORMAL_DATE are INT96 timestamps, which the writer cannot write as they are; set schemaFidelity: "logical" on the table (on the CLI: --schema-fidelity logical)`,
    );
    expect(out).toContain('The file was left in place and quarantined');
    expect(out).toMatch(/1 partition: 6 → 6 files, 0 rows rewritten and verified, 1 failed/);
    expect(out).not.toContain('changed concurrently');
    expect(io.stderr).toEqual([
      'error: 1 of 1 partitions failed ((root): UnsupportedInputError); their inputs are untouched. Fix the cause and re-run; leftovers under _lake-compactor/ are removed by vacuum',
    ]);
    expect(quarantined(listed.stdout)).toEqual([
      { partition: '', key: ORIGINALS[0], errorName: 'UnsupportedInputError' },
    ]);
    expect(await liveTable()).toEqual(before);
    expect(await tableBytes()).toEqual(bytes);
  });

  it('still tells an input a writer replaced after planning as a concurrent change, quarantining nothing', async () => {
    // Prepare: a writer that breaks the protocol overwrites a live file in place between the plan and the rewrite,
    // with a file of the same size (the sibling's bytes): only its ETag tells the object changed
    const replaced = join(dir, ORIGINALS[0] as string);
    const sibling = await readFile(join(dir, ORIGINALS[1] as string));
    const engine: ParquetEngine = {
      ...defaultParquetEngine,
      rewriteGroup: async (io, group, options) => {
        await writeFile(replaced, sibling);
        return defaultParquetEngine.rewriteGroup(io, group, options);
      },
    };
    const io = captureIo();

    // Act
    const results = await runCompact(
      dir,
      { format: 'delta' },
      { out: io.out, clock: io.clock, env: {} },
      { engine },
    );
    const listed = captureIo();
    await run(['quarantine', dir, '--json'], listed);

    // Assess: left alone as a conflict (not a failure), nothing committed or quarantined
    const out = io.stdout.join('\n');
    expect(out).toMatch(
      new RegExp(
        `left alone \\(inputs changed concurrently, group left as it was: ${ORIGINALS[0]} \\(changed since planning \\(ETag [0-9a-f]+, planned [0-9a-f]+\\)\\)\\)`,
      ),
    );
    expect(out).toMatch(/0 failed/);
    expect(results.map((r) => r.groups.map((g) => g.state))).toEqual([['aborted']]);
    expect(quarantined(listed.stdout)).toEqual([]);
    expect((await readDeltaSnapshot(new LocalObjectStore(dir), '')).version).toBe(1);
  });

  it('compacts the same table with --schema-fidelity logical, every row kept, and a second run plans nothing', async () => {
    // Prepare
    const before = await liveTable();

    // Act
    const first = captureIo();
    const code = await run(['compact', dir, '--format', 'delta', '--schema-fidelity', 'logical'], first);
    const compacted = await liveTable();
    const second = captureIo();
    const again = await run(['compact', dir, '--format', 'delta', '--schema-fidelity', 'logical'], second);

    // Assess
    expect(code, first.stdout.join('\n')).toBe(0);
    expect(compacted.version).toBe(before.version + 1);
    expect(compacted.keys).toHaveLength(1);
    expect(compacted.rows).toEqual(before.rows);
    expect(before.rows).toHaveLength(6);
    expect(again).toBe(0);
    expect(second.stdout.join('\n')).toMatch(
      /1 partition: 1 → 1 file, 0 rows rewritten and verified, 0 failed/,
    );
    expect((await liveTable()).version).toBe(compacted.version);
  });
});
