// Convergence on real files: every vendored Delta table (test/fixtures/delta, written by Spark, Databricks and
// delta-rs), in a temp copy given work to do, is compacted by `compact --format delta`, every live row kept (read
// back by DuckDB from the files the log names), and a second run plans nothing — no version, no byte changed. The
// vendored Hudi table is refused both times with every byte unchanged. (The Iceberg tables' second runs are in
// iceberg-fixtures-compact.test.ts.)
import { copyFile, cp, mkdtemp, readdir, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { run } from '../../functions/cli/index.js';
import { readDeltaSnapshot } from '../../functions/core/formats/delta/log.js';
import { captureIo } from '../support/cli-io.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';
import { DELTA_FIXTURES, FIXTURES_ROOT, HUDI_FIXTURES, HUDI_TABLES } from '../support/fixtures.js';
import { folderContentSnapshot } from '../support/folder-snapshot.js';

/** Byte-copies of each live file a writer appends, so every partition holds enough small files to compact. */
const COPIES = 4;

/** The runs' clock: the CLI io's default time. */
const RUN_AT = Date.UTC(2024, 1, 1);
/** When the writers' commits (the vendored ones and the appended one) landed: two days before the runs. */
const COMMITTED_AT = RUN_AT - 2 * 24 * 3_600_000;

/**
 * The declaration of a table whose Spark writers use the default S3SingleDriverLogStore: a quiet window around the
 * runs (23:00-02:00 UTC, crossing midnight), opened after the writers' last commits, and the risk accepted.
 */
const SPARK_WITHOUT_COORDINATION = [
  '--delta-log-store',
  'quiet-window',
  '--delta-quiet-window',
  '23:00-02:00',
  '--delta-accept-uncoordinated-writers',
];

/**
 * Every vendored Delta table, with the flags its compaction needs and whether it has a partition to compact once
 * copies are appended (checkpoint_with_partitions keeps its log only: its data files were never vendored).
 */
const DELTA: Readonly<Record<string, { readonly flags: readonly string[]; readonly compacts: boolean }>> = {
  checkpoint_with_partitions: { flags: [], compacts: false },
  'delta-0.8.0-null-partition': { flags: [], compacts: true },
  'delta-0.8.0-partitioned': { flags: [], compacts: true },
  'delta-0.8.0-special-partition': { flags: [], compacts: true },
  // Written by Spark 3.3.1 (its engineInfo), which never commits with put-if-absent: declared as Spark's default
  // log store must be, quiet windows (here always open, the writers' commits two days old) and the risk accepted.
  'delta-2.2.0-partitioned-types': { flags: SPARK_WITHOUT_COORDINATION, compacts: true },
  simple_table: { flags: [], compacts: true },
  simple_table_with_checkpoint: { flags: [], compacts: true },
  'table-with-dv-small': { flags: [], compacts: true },
  table_with_column_mapping: { flags: [], compacts: true },
  // Databricks' INT96 timestamps: the writer writes them as INT64 only under logical fidelity.
  table_with_edge_timestamps: { flags: ['--schema-fidelity', 'logical'], compacts: true },
};

let db: DuckDb;
let dir: string | undefined;

beforeAll(async () => {
  db = await openDuckDb();
});

afterAll(() => {
  db.close();
});

afterEach(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

/**
 * A copy of the Delta table `name` whose next version appends, as a blind-appending writer would, COPIES
 * byte-copies of every live file whose object exists, each in its file's partition (same partition values, size
 * and stats; deletion vectors stay with the original file, so a copy holds all of its rows).
 */
async function deltaTableWithCopies(name: string): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), `lc-converge-${name}-`));
  dir = root;
  await cp(join(DELTA_FIXTURES, name), root, { recursive: true });
  const snapshot = await readDeltaSnapshot(new LocalObjectStore(root), '');
  const adds: object[] = [];
  for (const file of snapshot.files) {
    if (file.key === undefined || !(await exists(join(root, file.key)))) continue;
    for (let i = 0; i < COPIES; i += 1) {
      const copyKey = file.key.replace(/[^/]*$/, `appended-${i}-$&`);
      await copyFile(join(root, file.key), join(root, copyKey));
      adds.push({
        add: {
          path: file.path.replace(/[^/]*$/, `appended-${i}-$&`),
          partitionValues: file.physicalPartitionValues,
          size: file.size,
          modificationTime: file.modificationTime,
          dataChange: true,
          ...(file.statsJson === undefined ? {} : { stats: file.statsJson }),
        },
      });
    }
  }
  if (adds.length > 0) {
    const commit = [
      {
        commitInfo: {
          timestamp: 1_700_000_000_000,
          operation: 'WRITE',
          operationParameters: { mode: 'Append', partitionBy: '[]' },
          readVersion: snapshot.version,
          isBlindAppend: true,
        },
      },
      ...adds,
    ];
    const version = String(snapshot.version + 1).padStart(20, '0');
    await writeFile(
      join(root, '_delta_log', `${version}.json`),
      `${commit.map((a) => JSON.stringify(a)).join('\n')}\n`,
    );
  }
  const log = join(root, '_delta_log');
  for (const entry of await readdir(log)) {
    if (entry.endsWith('.json')) await utimes(join(log, entry), COMMITTED_AT / 1000, COMMITTED_AT / 1000);
  }
  return root;
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

/** What a table version holds, as DuckDB reads it from the files the log names. */
interface LiveTable {
  readonly version: number;
  /** Live rows per partition (the log's partition values), every value as text, canonically ordered. */
  readonly rows: Record<string, string[]>;
  /** Live row count per partition: a file with a deletion vector counts its rows less the vector's cardinality. */
  readonly counts: Record<string, number>;
  /** Whether a live file has a deletion vector (its rows are then counted, not listed). */
  readonly deletionVectors: boolean;
}

/**
 * Every value of the file at `path` as text, read by DuckDB without Hive partitioning (Databricks files sit under
 * random prefixes, outputs under `column=value/`). Timestamps as epoch microseconds: logical fidelity writes INT96
 * as UTC-adjusted INT64 (docs/engine.md), which DuckDB types TIMESTAMP WITH TIME ZONE, the same instant.
 */
async function fileRows(path: string): Promise<string[]> {
  const from = `FROM read_parquet(${sqlString(path)}, hive_partitioning = false)`;
  const select = (await db.columnTypes(`SELECT * ${from}`)).map(({ name, type }) => {
    const column = `"${name.replaceAll('"', '""')}"`;
    return type.startsWith('TIMESTAMP') ? `epoch_us(${column})::VARCHAR AS ${column}` : `${column}::VARCHAR`;
  });
  return (await db.rows(`SELECT ${select.join(', ')} ${from}`)).map((r) => JSON.stringify(r));
}

/** The latest version of the table at `root` and its live rows. */
async function liveTable(root: string): Promise<LiveTable> {
  const snapshot = await readDeltaSnapshot(new LocalObjectStore(root), '');
  const rows: Record<string, string[]> = {};
  const counts: Record<string, number> = {};
  let deletionVectors = false;
  for (const file of snapshot.files) {
    if (file.key === undefined || !(await exists(join(root, file.key)))) continue;
    const partition = JSON.stringify(file.partitionValues);
    const found = await fileRows(join(root, file.key));
    const deleted = file.deletionVector?.cardinality ?? 0;
    deletionVectors ||= file.deletionVector !== undefined;
    if (file.deletionVector === undefined) rows[partition] = [...(rows[partition] ?? []), ...found];
    counts[partition] = (counts[partition] ?? 0) + found.length - deleted;
  }
  for (const list of Object.values(rows)) list.sort();
  return { version: snapshot.version, rows, counts, deletionVectors };
}

/** Every byte of the table but the run's own work area. */
async function tableBytes(root: string): Promise<string[]> {
  return (await folderContentSnapshot(root)).filter((line) => !line.startsWith('_lake-compactor'));
}

describe('a second run after a successful one plans nothing, on every vendored table', () => {
  it('covers every vendored Delta table, and the vendored formats are Delta, Iceberg and Hudi', async () => {
    // Prepare
    const vendored = (await readdir(DELTA_FIXTURES, { withFileTypes: true }))
      .filter((e) => e.isDirectory())
      .map((e) => e.name)
      .sort();
    const formats = (await readdir(FIXTURES_ROOT, { withFileTypes: true }))
      .filter((e) => e.isDirectory())
      .map((e) => e.name)
      .sort();

    // Act
    const listed = Object.keys(DELTA).sort();

    // Assess
    expect(listed).toEqual(vendored);
    expect(formats).toEqual(['delta', 'hudi', 'iceberg']);
  });

  for (const [name, expected] of Object.entries(DELTA)) {
    it(`${name}: compacted with every live row kept, then a second run commits nothing and changes no byte`, async () => {
      // Prepare
      const root = await deltaTableWithCopies(name);
      const before = await liveTable(root);
      const first = captureIo({ now: RUN_AT });

      // Act
      const firstCode = await run(['compact', root, '--format', 'delta', ...expected.flags], first);
      const afterFirst = await liveTable(root);
      const bytes = await tableBytes(root);
      const second = captureIo({ now: RUN_AT });
      const secondCode = await run(['compact', root, '--format', 'delta', ...expected.flags], second);

      // Assess: the first run compacted what it could, every live row kept
      expect(firstCode, first.stderr.join('\n')).toBe(0);
      expect(afterFirst.counts).toEqual(before.counts);
      if (!before.deletionVectors) expect(afterFirst.rows).toEqual(before.rows);
      if (expected.compacts) expect(afterFirst.version).toBeGreaterThan(before.version);
      else expect(afterFirst.version).toBe(before.version);
      expect(first.stdout.join('\n')).toMatch(expected.compacts ? /compacted/ : /nothing to do/);
      // The second plans nothing: every partition has nothing to do, no version, no byte changed
      expect(secondCode, second.stderr.join('\n')).toBe(0);
      const summary = second.stdout.join('\n');
      expect(summary).not.toMatch(/ g\d{4}: /);
      expect(summary).toMatch(/ 0 rows rewritten and verified, 0 failed/);
      expect((await liveTable(root)).version).toBe(afterFirst.version);
      expect(await tableBytes(root)).toEqual(bytes);
    });
  }

  for (const name of HUDI_TABLES) {
    it(`${name} (Hudi): refused as plain Parquet on a first and a second run, every byte unchanged`, async () => {
      // Prepare
      const root = await mkdtemp(join(tmpdir(), 'lc-converge-hudi-'));
      dir = root;
      await cp(join(HUDI_FIXTURES, name), root, { recursive: true });
      const bytes = await folderContentSnapshot(root);

      // Act
      const runs = [];
      for (let i = 0; i < 2; i += 1) {
        const io = captureIo();
        runs.push({ code: await run(['compact', root], io), stderr: io.stderr.join('\n') });
      }

      // Assess
      for (const r of runs) {
        expect(r.code).not.toBe(0);
        expect(r.stderr).toMatch(/Hudi/);
      }
      expect(await folderContentSnapshot(root)).toEqual(bytes);
    });
  }
});
