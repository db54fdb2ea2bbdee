// The CLI on copies of real Delta Lake, Iceberg and Hudi tables in a temp folder: `compact`, `plan`, `profile` and
// `vacuum` refuse the table root, a folder inside it and a parent folder holding it — one line, exit 1 — and
// every byte (and folder) stays as it was. `tier` refuses local folders anyway; its S3 case is an integration test.
import { cp, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../../functions/cli/index.js';
import { captureIo } from '../support/cli-io.js';
import { DELTA_FIXTURES, HUDI_FIXTURES, ICEBERG_FIXTURES } from '../support/fixtures.js';
import { folderContentSnapshot } from '../support/folder-snapshot.js';

/**
 * The refusal, word for word (the location and the table root without trailing slash): Delta is a registered
 * format, so it says how to ask for it — for the table's own root.
 */
function deltaMessage(location: string, relation: string, table: string): string {
  const advice =
    relation === 'is'
      ? 'configure the table with format: "delta" (on the CLI: pass --format delta)'
      : `configure ${table} as a table with format: "delta" (on the CLI: point at ${table} and pass --format delta)`;
  return `error: ${location} ${relation} a Delta Lake table (found ${table}/_delta_log/): its transaction log, not the file listing, defines which files are live, so treating it as plain Parquet would break the table and could resurrect deleted rows; to compact or vacuum it through its log, ${advice}. Nothing was changed.`;
}

/**
 * Iceberg is a registered format too: the refusal says to configure it as one, at its own root, through the catalog
 * its writers use.
 */
function icebergMessage(location: string, relation: string, table: string, evidence: string): string {
  const advice =
    relation === 'is'
      ? 'configure the table with format: "iceberg" and the catalog its writers use (on the CLI: pass --format iceberg, with --catalog glue|rest when a catalog manages it; Amazon S3 Tables is rest)'
      : `configure ${table} as a table with format: "iceberg" and the catalog its writers use (on the CLI: point at ${table} and pass --format iceberg, with --catalog glue|rest when a catalog manages it; Amazon S3 Tables is rest)`;
  return `error: ${location} ${relation} an Apache Iceberg table (found ${evidence}): its table metadata and snapshots, not the file listing, define which files are live and which rows are deleted, so treating it as plain Parquet would break the table and could resurrect deleted rows; to compact and maintain it through its metadata, ${advice}. Nothing was changed.`;
}

/** Hudi is a registered format too: the refusal says to configure it as one, with its lock and index type. */
function hudiAdvice(relation: string, table: string): string {
  return relation === 'is'
    ? 'to cluster it through its timeline, configure the table with format: "hudi" and its hudiLock and hudiIndexType (on the CLI: pass --format hudi with --hudi-lock and --hudi-index-type)'
    : `to cluster it through its timeline, configure ${table} as a table with format: "hudi" (on the CLI: point at ${table} and pass --format hudi with --hudi-lock and --hudi-index-type)`;
}

function hudiMessage(location: string, relation: string, table: string): string {
  return `error: ${location} ${relation} an Apache Hudi table (found ${table}/.hoodie/hoodie.properties): its timeline, not the file listing, defines which file slices are live, and older slices and replaced file groups stay on storage until Hudi's cleaner removes them, so treating it as plain Parquet would duplicate rows and bring back deleted or replaced ones; ${hudiAdvice(relation, table)}. Nothing was changed.`;
}

interface Fixture {
  readonly source: string;
  readonly name: string;
  /** A folder inside the table (a partition, or Iceberg's data folder). */
  readonly inside: string;
  /** The refusal for `location`, which is the table, lies inside it or contains it. */
  readonly message: (location: string, relation: string, table: string) => string;
}

const FIXTURES: readonly Fixture[] = [
  {
    source: join(DELTA_FIXTURES, 'simple_table'),
    name: 'simple_table',
    inside: '_delta_log',
    message: deltaMessage,
  },
  {
    source: join(DELTA_FIXTURES, 'delta-0.8.0-partitioned'),
    name: 'delta-0.8.0-partitioned',
    inside: 'year=2021/month=12/day=4',
    message: deltaMessage,
  },
  {
    source: join(ICEBERG_FIXTURES, 'spark_v1_unpartitioned_small_files'),
    name: 'spark_v1_unpartitioned_small_files',
    inside: 'data',
    message: (location, relation, table) =>
      icebergMessage(location, relation, table, `${table}/metadata/v1.metadata.json`),
  },
  {
    source: join(ICEBERG_FIXTURES, 'spark_v2_position_deletes'),
    name: 'spark_v2_position_deletes',
    inside: 'data',
    message: (location, relation, table) =>
      icebergMessage(
        location,
        relation,
        table,
        `${table}/metadata/00000-e79de093-2976-491e-965a-e356a226956e.metadata.json`,
      ),
  },
  {
    source: join(HUDI_FIXTURES, 'cow_v6_simplekeygen_hivestyle_no_metafields'),
    name: 'cow_v6_simplekeygen_hivestyle_no_metafields',
    inside: 'byteField=10',
    message: hudiMessage,
  },
];

/** Every command that could change the lake, in its most eager form, plus the read-only ones. */
const COMMANDS: readonly (readonly string[])[] = [
  ['compact'],
  ['compact', '--dry-run'],
  ['plan'],
  ['profile'],
  ['vacuum', '--dry-run'],
  ['vacuum', '--yes', '--retention-hours', '1', '--allow-retention-below-minimum', '--debris-age-hours', '1'],
];

let scratch: string;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'lc-foreign-'));
});

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

describe.each(FIXTURES)('the CLI on a copy of $name', (fixture) => {
  let lake: string;
  let table: string;

  beforeAll(async () => {
    lake = join(scratch, fixture.name, 'lake');
    table = join(lake, fixture.name);
    await mkdir(lake, { recursive: true });
    await cp(fixture.source, table, { recursive: true, preserveTimestamps: true });
  });

  const locations = [
    { what: 'the table root', at: () => table, relation: 'is' },
    { what: 'a folder inside the table', at: () => join(table, fixture.inside), relation: 'is inside' },
    { what: 'a parent folder holding the table', at: () => lake, relation: 'contains' },
  ];

  for (const location of locations) {
    for (const command of COMMANDS) {
      it(`${command.join(' ')} refuses ${location.what} with one line, exit 1, and changes no byte`, async () => {
        // Prepare
        const before = await folderContentSnapshot(lake);
        const io = captureIo({ now: Date.now() + 1000 * 3_600_000 });
        const [verb, ...flags] = command;

        // Act
        const code = await run([verb as string, location.at(), ...flags], io);

        // Assess
        expect(io.stderr).toEqual([fixture.message(location.at(), location.relation, table)]);
        expect(code).toBe(1);
        if (verb !== 'vacuum' || location.relation !== 'contains') expect(io.stdout).toEqual([]);
        expect(await folderContentSnapshot(lake)).toEqual(before);
      });
    }
  }
});
