// `lake-compactor compact --format iceberg` with rewrite_data_files options and a where filter, on a vendored table
// Spark wrote (partitioned by hour(event_time) and action; 8 small files in the view partition, 6 in click and
// download): the filter keeps other partitions out, min-input-files decides which partitions are worth a rewrite,
// the live rows stay the same multiset, and a filter naming an unknown field changes nothing.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../../functions/cli/index.js';
import { loadTable } from '../../functions/core/formats/iceberg/catalog.js';
import { readSnapshotFiles } from '../../functions/core/formats/iceberg/live-files.js';
import { captureIo } from '../support/cli-io.js';
import { type DuckDb, openDuckDb } from '../support/duckdb.js';
import { copyFixtureTable, liveRows, type TableCopy } from './core/formats/iceberg/commit-harness.js';

const FIXTURE = 'spark_v1_hour_identity_partitioned';
const VIEW = 'data/event_time_hour=2020-01-01-08/action=view';
const CLICK = 'data/event_time_hour=2020-01-01-09/action=click';
const DOWNLOAD = 'data/event_time_hour=2020-01-01-10/action=download';

let db: DuckDb;
let copy: TableCopy | undefined;

/** Live data files per partition folder, the live rows, and how many snapshots the table has. */
async function current(table: TableCopy) {
  const loaded = await loadTable(table.store, table.table);
  const files = await readSnapshotFiles(table.store, loaded);
  const perPartition: Record<string, number> = {};
  for (const f of files.dataFiles) {
    const folder = f.entry.file.key.slice(table.table.length + 1).replace(/\/[^/]+$/, '');
    perPartition[folder] = (perPartition[folder] ?? 0) + 1;
  }
  return {
    perPartition,
    rows: await liveRows(db, table, loaded, files),
    snapshots: loaded.metadata.snapshots.length,
    metadataKey: loaded.metadataKey,
  };
}

beforeAll(async () => {
  db = await openDuckDb();
});

afterAll(() => {
  db.close();
});

afterEach(() => {
  copy?.remove();
  copy = undefined;
});

describe('lake-compactor compact --format iceberg with rewrite_data_files options', () => {
  it('compacts only the partitions the where filter passes, every row kept', async () => {
    // Prepare
    copy = copyFixtureTable(FIXTURE);
    const before = await current(copy);
    const io = captureIo();

    // Act
    const code = await run(
      ['compact', copy.file(copy.table), '--format', 'iceberg', '--where', "action IN ('click', 'download')"],
      io,
    );

    // Assess: click and download are one file each, view keeps its 8; one replace per compacted partition
    expect(code, io.stderr.join('\n')).toBe(0);
    const after = await current(copy);
    expect(before.perPartition).toEqual({ [VIEW]: 8, [CLICK]: 6, [DOWNLOAD]: 6 });
    expect(after.perPartition).toEqual({ [VIEW]: 8, [CLICK]: 1, [DOWNLOAD]: 1 });
    expect(after.snapshots).toBe(before.snapshots + 2);
    expect(after.rows).toEqual(before.rows);
  });

  it('leaves partitions with fewer than min-input-files small files alone', async () => {
    // Prepare
    copy = copyFixtureTable(FIXTURE);
    const before = await current(copy);
    const io = captureIo();

    // Act
    const code = await run(
      ['compact', copy.file(copy.table), '--format', 'iceberg', '--rewrite-option', 'min-input-files=7'],
      io,
    );

    // Assess: only view (8 files ≥ 7) is rewritten; click and download (6 each) say why not
    expect(code, io.stderr.join('\n')).toBe(0);
    const after = await current(copy);
    expect(after.perPartition).toEqual({ [VIEW]: 1, [CLICK]: 6, [DOWNLOAD]: 6 });
    expect(after.snapshots).toBe(before.snapshots + 1);
    expect(after.rows).toEqual(before.rows);
    expect(io.stdout).toContain(
      `${CLICK}: nothing to do (nothing to compact: 6 candidates in a group rewrite_data_files would not rewrite (see skipped for each file))`,
    );
  });

  it('plans as compact does: lake-compactor plan shows the rewrite_data_files plan with the same options and filter', async () => {
    // Prepare
    copy = copyFixtureTable(FIXTURE);
    const io = captureIo();

    // Act
    const code = await run(
      [
        'plan',
        copy.file(copy.table),
        '--format',
        'iceberg',
        '--json',
        '--where',
        "action != 'click'",
        '--rewrite-option',
        'min-input-files=7',
      ],
      io,
    );

    // Assess
    expect(code, io.stderr.join('\n')).toBe(0);
    const plan = JSON.parse(io.stdout.join('\n')) as {
      partitions: { partition: string; summary: { plannedFiles: number }; options: { kind?: string } }[];
    };
    expect(plan.partitions.map((p) => [p.partition, p.summary.plannedFiles])).toEqual([
      [VIEW, 8],
      [CLICK, 0],
      [DOWNLOAD, 0],
    ]);
    expect(plan.partitions.every((p) => p.options.kind === 'iceberg-rewrite-data-files')).toBe(true);
  });

  it('refuses a filter naming a field no partition has, and an unknown option, changing nothing', async () => {
    // Prepare
    copy = copyFixtureTable(FIXTURE);
    const before = await current(copy);
    const badField = captureIo();
    const badOption = captureIo();

    // Act
    const fieldCode = await run(
      ['compact', copy.file(copy.table), '--format', 'iceberg', '--where', "actoin = 'click'"],
      badField,
    );
    const optionCode = await run(
      ['compact', copy.file(copy.table), '--format', 'iceberg', '--rewrite-option', 'min-input-file=2'],
      badOption,
    );

    // Assess
    expect(fieldCode).toBe(1);
    expect(badField.stderr[0]).toBe(
      `error: The where filter "actoin = 'click'" is invalid: no partition has a field "actoin" (did you mean "action"?); its partition fields are event_time_hour, action. Nothing was changed; write e.g. action = 'click' AND event_time_hour >= '2020-01-01-09' (partition fields; =, !=, <, <=, >, >=, IN (…), IS NULL, AND, OR, NOT, parentheses)`,
    );
    expect(optionCode).toBe(2);
    expect(badOption.stderr.join('\n')).toContain(
      'min-input-file: unknown option "min-input-file": did you mean "min-input-files"?',
    );
    const after = await current(copy);
    expect(after.metadataKey).toBe(before.metadataKey);
    expect(after.perPartition).toEqual(before.perPartition);
  });
});
