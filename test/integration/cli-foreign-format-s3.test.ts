// The CLI against s3rver on copies of real Delta Lake, Iceberg and Hudi tables: `compact`, `plan`, `profile`,
// `vacuum` and `tier` (which needs S3) refuse the table root, a partition inside it and a parent prefix holding
// it — one line, exit 1 — and every object keeps its bytes, ETag and storage class; nothing is added.
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3ObjectStore } from '../../functions/adapters/s3-object-store.js';
import { run } from '../../functions/cli/index.js';
import { type RunningS3Server, startS3Server } from '../../infra/local/s3-server.js';
import { captureIo } from '../support/cli-io.js';
import { DELTA_FIXTURES, HUDI_FIXTURES, ICEBERG_FIXTURES } from '../support/fixtures.js';

let s3: RunningS3Server;
let store: S3ObjectStore;
/**
 * The bucket as uploaded. Every test compares the bucket with it after its command, not with a state read just
 * before: no command may change an object, so before each command the bucket is this (and a test after one that
 * changed something fails too, naming the same change). It halves the listings and HEADs of every object, most of
 * what each test costs.
 */
let pristine: string[];

function capture() {
  return captureIo({
    now: Date.UTC(2030, 0, 1),
    env: {
      AWS_ENDPOINT_URL_S3: s3.endpoint,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
    },
  });
}

/** Uploads a copy of a fixture folder under `prefix`. */
async function upload(folder: string, prefix: string): Promise<void> {
  const entries = await readdir(folder, { recursive: true, withFileTypes: true });
  for (const entry of entries.filter((e) => e.isFile())) {
    const path = join(entry.parentPath, entry.name);
    await store.put(`${prefix}${relative(folder, path).split('\\').join('/')}`, await readFile(path));
  }
}

/** Every object of the bucket: key, size, ETag (md5 of the bytes), time and storage class. */
async function bucketState(): Promise<string[]> {
  const lines: string[] = [];
  for await (const o of store.listAll('')) {
    const head = await store.head(o.key);
    lines.push(`${o.key} ${o.size} ${o.etag} ${o.lastModified.toISOString()} ${head?.storageClass}`);
  }
  return lines;
}

const DELTA = 's3://lake/delta-home/sales';
const ICEBERG = 's3://lake/iceberg-home/orders';
const HUDI = 's3://lake/hudi-home/trips';

beforeAll(async () => {
  s3 = await startS3Server({ buckets: ['lake'] });
  store = new S3ObjectStore({ client: s3.client(), bucket: 'lake' });
  await upload(join(DELTA_FIXTURES, 'delta-0.8.0-partitioned'), 'delta-home/sales/');
  await upload(join(ICEBERG_FIXTURES, 'spark_v1_unpartitioned_small_files'), 'iceberg-home/orders/');
  await upload(join(HUDI_FIXTURES, 'cow_v6_simplekeygen_hivestyle_no_metafields'), 'hudi-home/trips/');
  pristine = await bucketState();
}, 120_000);

afterAll(async () => {
  await s3?.stop();
});

const TABLES = [
  {
    name: 'a Delta table',
    table: DELTA,
    inside: `${DELTA}/year=2021/month=12/day=4`,
    parent: 's3://lake/delta-home',
    // Delta is a registered format: the refusal says how to ask for it (tier cannot tier a Delta table yet).
    message: (location: string, relation: string, verb: string) => {
      const advice =
        verb === 'tier'
          ? 'tiering is not supported for Delta tables yet; use S3 lifecycle rules on the table prefix'
          : relation === 'is'
            ? 'to compact or vacuum it through its log, configure the table with format: "delta" (on the CLI: pass --format delta)'
            : `to compact or vacuum it through its log, configure ${DELTA} as a table with format: "delta" (on the CLI: point at ${DELTA} and pass --format delta)`;
      return `error: ${location} ${relation} a Delta Lake table (found ${DELTA}/_delta_log/): its transaction log, not the file listing, defines which files are live, so treating it as plain Parquet would break the table and could resurrect deleted rows; ${advice}. Nothing was changed.`;
    },
  },
  {
    name: 'an Iceberg table',
    table: ICEBERG,
    inside: `${ICEBERG}/data`,
    parent: 's3://lake/iceberg-home',
    message: (location: string, relation: string, verb: string) => {
      // Iceberg is a registered format: configure it as one, through its writers' catalog; tier cannot tier it yet.
      const advice =
        verb === 'tier'
          ? "tiering is not supported for Iceberg tables yet; use S3 lifecycle rules on the table's data/ prefix"
          : relation === 'is'
            ? 'to compact and maintain it through its metadata, configure the table with format: "iceberg" and the catalog its writers use (on the CLI: pass --format iceberg, with --catalog glue|rest when a catalog manages it; Amazon S3 Tables is rest)'
            : `to compact and maintain it through its metadata, configure ${ICEBERG} as a table with format: "iceberg" and the catalog its writers use (on the CLI: point at ${ICEBERG} and pass --format iceberg, with --catalog glue|rest when a catalog manages it; Amazon S3 Tables is rest)`;
      return `error: ${location} ${relation} an Apache Iceberg table (found ${ICEBERG}/metadata/v1.metadata.json): its table metadata and snapshots, not the file listing, define which files are live and which rows are deleted, so treating it as plain Parquet would break the table and could resurrect deleted rows; ${advice}. Nothing was changed.`;
    },
  },
  {
    name: 'a Hudi table',
    table: HUDI,
    inside: `${HUDI}/byteField=10`,
    parent: 's3://lake/hudi-home',
    message: (location: string, relation: string, _verb: string) =>
      `error: ${location} ${relation} an Apache Hudi table (found ${HUDI}/.hoodie/hoodie.properties): its timeline, not the file listing, defines which file slices are live, and older slices and replaced file groups stay on storage until Hudi's cleaner removes them, so treating it as plain Parquet would duplicate rows and bring back deleted or replaced ones; ${
        relation === 'is'
          ? 'to cluster it through its timeline, configure the table with format: "hudi" and its hudiLock and hudiIndexType (on the CLI: pass --format hudi with --hudi-lock and --hudi-index-type)'
          : `to cluster it through its timeline, configure ${HUDI} as a table with format: "hudi" (on the CLI: point at ${HUDI} and pass --format hudi with --hudi-lock and --hudi-index-type)`
      }. Nothing was changed.`,
  },
];

const COMMANDS: readonly (readonly string[])[] = [
  ['compact'],
  ['compact', '--dry-run'],
  ['plan'],
  ['profile'],
  ['vacuum', '--dry-run'],
  ['vacuum', '--yes', '--retention-hours', '1', '--allow-retention-below-minimum', '--debris-age-hours', '1'],
  // Dates from the Delta table's year/month/day partitions, and no size floor: tiering would move every file.
  ['tier', '--yes', '--date-format', 'year/month/day', '--min-object-kb', '0', '--rule', '1:STANDARD_IA'],
];

describe.each(TABLES)('the CLI on S3 on a copy of $name', (fixture) => {
  const locations = [
    { what: 'the table root', at: fixture.table, relation: 'is' },
    { what: 'a folder inside it', at: fixture.inside, relation: 'is inside' },
    { what: 'a parent prefix holding it', at: fixture.parent, relation: 'contains' },
  ];
  for (const location of locations) {
    for (const command of COMMANDS) {
      it(`${command.join(' ')} refuses ${location.what} with one line, exit 1, and changes no object`, async () => {
        // Prepare: the bucket as uploaded (`pristine`)
        const io = capture();
        const [verb, ...flags] = command;

        // Act
        const code = await run([verb as string, location.at, ...flags], io);

        // Assess
        expect(io.stderr).toEqual([fixture.message(location.at, location.relation, verb as string)]);
        expect(code).toBe(1);
        expect(await bucketState()).toEqual(pristine);
      }, 60_000);
    }
  }
});
