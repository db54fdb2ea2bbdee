// A Delta table's commit coordination is a per-table declaration, never assumed: the config (functions' table list
// and the construct's props, one schema) requires `deltaLogStore` on Delta tables, accepts it on Delta tables only
// and refuses malformed values with what to write and which writers each choice is safe beside; `formatForTable`
// hands each table the format its setting makes (the DynamoDB log store the composition root builds, put-if-absent,
// or put-if-absent inside quiet windows), Hive is untouched, and a table whose setting needs DynamoDB is refused by
// an entry point without it instead of being committed another way. The CLI spells the same setting, and requires
// it for an s3:// Delta table.
import { describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../../../../functions/adapters/memory-journal.js';
import { MemoryObjectStore } from '../../../../../functions/adapters/memory-object-store.js';
import { InvalidInputError, UsageError } from '../../../../../functions/core/errors.js';
import { deltaLogStoreFromFlags as deltaLogStoreSettingOf } from '../../../../../functions/core/formats/delta/cli-options.js';
import type { DynamoDbLogStoreSetting } from '../../../../../functions/core/formats/delta/coordination.js';
import { deltaLake } from '../../../../../functions/core/formats/delta/format.js';
import type { DeltaLogStore } from '../../../../../functions/core/formats/delta/log-store.js';
import { hiveParquet } from '../../../../../functions/core/formats/hive/index.js';
import type { FormatServices } from '../../../../../functions/core/formats/index.js';
import { formatForTable } from '../../../../../functions/core/formats/index.js';
import { parseTableConfigs } from '../../../../../functions/core/table-config.js';
import type { ObjectStore } from '../../../../../functions/ports/object-store.js';
import { createDeltaEventsTable } from '../../../../../functions/tools/sample-delta.js';
import { lakeCompactorPropsProblems } from '../../../../../infra/props-schema.js';

const NOW = Date.UTC(2024, 2, 3);
const S3 = { s3: true } as const;
const LOCAL = { s3: false } as const;

function configIssues(table: Record<string, unknown>): readonly string[] {
  try {
    parseTableConfigs([{ name: 't', bucket: 'lake', prefix: 't', ...table }]);
    return [];
  } catch (err) {
    if (err instanceof InvalidInputError) return err.issues;
    throw err;
  }
}

function propsProblems(table: Record<string, unknown>): string[] {
  return lakeCompactorPropsProblems({ tables: [{ name: 't', bucketName: 'lake', prefix: 't/', ...table }] });
}

/** Services whose DynamoDB log store records what it was built for and every `prepareRead`. */
function recordingServices() {
  const built: { setting: DynamoDbLogStoreSetting; store: ObjectStore }[] = [];
  const reads: string[] = [];
  const services: FormatServices = {
    deltaLogStore: (setting, store): DeltaLogStore => {
      built.push({ setting, store });
      return {
        description: `recorded:${setting.tableName}`,
        writeCommit: async () => 'written',
        prepareRead: async (tableRoot) => {
          reads.push(tableRoot);
        },
        check: async () => undefined,
      };
    },
  };
  return { services, built, reads };
}

describe('deltaLogStore in the table config', () => {
  it('accepts the three coordinations on a Delta table and keeps what the config says', () => {
    // Prepare
    const dynamodb = {
      type: 'dynamodb',
      tableName: 'delta_log',
      region: 'eu-west-1',
      tablePathScheme: 's3a',
    };
    const checked = {
      type: 's3-conditional',
      checkDynamoDbTable: { tableName: 'delta_log', region: 'us-east-1' },
    };
    const quiet = {
      type: 'quiet-window',
      windows: ['02:00-05:00', 'sat,sun 00:00-24:00'],
      quietMinutes: 30,
      acceptUncoordinatedWriters: true,
    };

    // Act
    const [coordinated, conditional, probing, window] = parseTableConfigs([
      { name: 'a', bucket: 'lake', prefix: 'a', format: 'delta', deltaLogStore: dynamodb },
      { name: 'b', bucket: 'lake', prefix: 'b', format: 'delta', deltaLogStore: { type: 's3-conditional' } },
      { name: 'c', bucket: 'lake', prefix: 'c', format: 'delta', deltaLogStore: checked },
      { name: 'd', bucket: 'lake', prefix: 'd', format: 'delta', deltaLogStore: quiet },
    ]);

    // Assess
    expect(coordinated?.deltaLogStore).toEqual(dynamodb);
    expect(conditional?.deltaLogStore).toEqual({ type: 's3-conditional' });
    expect(probing?.deltaLogStore).toEqual(checked);
    expect(window?.deltaLogStore).toEqual(quiet);
    expect(
      propsProblems({
        format: 'delta',
        deltaLogStore: { type: 'dynamodb', tableName: 'delta_log', region: 'us-east-1' },
      }),
    ).toEqual([]);
  });

  it('refuses a Delta table without a declared coordination, in the functions and at synth, listing the choices by writer', () => {
    // Act
    const issues = configIssues({ format: 'delta' });
    const problems = propsProblems({ format: 'delta' });

    // Assess
    expect(issues).toHaveLength(1);
    expect(problems).toHaveLength(1);
    for (const text of [issues[0], problems[0]]) {
      expect(text).toMatch(/deltaLogStore: is required for a Delta table/);
      expect(text).toMatch(/lake-compactor never assumes one on S3/);
      expect(text).toMatch(/"s3-conditional": .*delta-rs >= 1\.0.*Not beside Spark or Delta Kernel/);
      expect(text).toMatch(/"dynamodb" .*S3DynamoDBLogStore.*deltalake <= 1\.6\.0/);
      expect(text).toMatch(/"quiet-window" .*acceptUncoordinatedWriters: true.*S3SingleDriverLogStore/);
    }
  });

  it('refuses the setting on a table that is not Delta, in the functions and at synth, saying what to do', () => {
    // Prepare
    const table = { deltaLogStore: { type: 'dynamodb', tableName: 'delta_log', region: 'us-east-1' } };

    // Act
    const issues = configIssues(table);
    const problems = propsProblems(table);

    // Assess
    const message =
      'deltaLogStore is a setting of Delta Lake tables (format "delta"), and this table\'s format is "parquet": remove it, or set format to "delta" if that is what the table is';
    expect(issues).toEqual([`0.deltaLogStore: ${message}`]);
    expect(problems).toEqual([`tables.0.deltaLogStore: ${message}`]);
  });

  it.each([
    [
      'an unknown type',
      { type: 'dynamo' },
      'deltaLogStore.type: must be "s3-conditional", "dynamodb" or "quiet-window", not "dynamo"; choose by the table\'s other writers',
    ],
    [
      'a bare type name',
      'dynamodb',
      'deltaLogStore: must be an object such as { "type": "s3-conditional" } or { "type": "dynamodb", "tableName": "delta_log", "region": "us-east-1" }',
    ],
    [
      'no type',
      {},
      'deltaLogStore.type: must be "s3-conditional", "dynamodb" or "quiet-window", and is missing',
    ],
    ['dynamodb without its table', { type: 'dynamodb', region: 'us-east-1' }, 'deltaLogStore.tableName:'],
    [
      'dynamodb without its region (Spark defaults to us-east-1; never a silent other one)',
      { type: 'dynamodb', tableName: 'delta_log' },
      "deltaLogStore.region: is required: the region of the DynamoDB table the other writers use, i.e. spark.io.delta.storage.S3DynamoDBLogStore.ddb.region — Spark's default when that is unset is us-east-1",
    ],
    [
      'a table name DynamoDB refuses',
      { type: 'dynamodb', tableName: 'delta log', region: 'us-east-1' },
      'deltaLogStore.tableName: "delta log" is not a DynamoDB table name',
    ],
    [
      'a region that is not a region code',
      { type: 'dynamodb', tableName: 'delta_log', region: 'Ireland' },
      'deltaLogStore.region: "Ireland" is not an AWS region code',
    ],
    [
      'a scheme other writers cannot use',
      { type: 'dynamodb', tableName: 'delta_log', region: 'us-east-1', tablePathScheme: 's3n' },
      'deltaLogStore.tablePathScheme: "s3n" is not a table path scheme',
    ],
    [
      "a Spark key instead of this config's",
      { type: 'dynamodb', tableName: 'delta_log', region: 'us-east-1', 'ddb.region': 'eu-west-1' },
      'deltaLogStore: Unrecognized key: "ddb.region"',
    ],
    [
      'a checked DynamoDB table without its region',
      { type: 's3-conditional', checkDynamoDbTable: { tableName: 'delta_log' } },
      'deltaLogStore.checkDynamoDbTable.region: is required',
    ],
    [
      'a quiet window without the explicit acceptance of its risk',
      { type: 'quiet-window', windows: ['02:00-05:00'] },
      'deltaLogStore.acceptUncoordinatedWriters: must be true: "quiet-window" commits beside writers that have no coordination',
    ],
    [
      'a quiet window without windows',
      { type: 'quiet-window', windows: [], acceptUncoordinatedWriters: true },
      'deltaLogStore.windows: needs at least one window',
    ],
    [
      'a window that is not one',
      { type: 'quiet-window', windows: ['2am-5am'], acceptUncoordinatedWriters: true },
      'deltaLogStore.windows.0: "2am-5am" is not a quiet window: write it as "HH:MM-HH:MM" in UTC',
    ],
    [
      'an empty window',
      { type: 'quiet-window', windows: ['03:00-03:00'], acceptUncoordinatedWriters: true },
      'deltaLogStore.windows.0: "03:00-03:00" is empty',
    ],
  ])('refuses %s', (_case, deltaLogStore, expected) => {
    // Act
    const issues = configIssues({ format: 'delta', deltaLogStore });

    // Assess
    expect(issues).toHaveLength(1);
    expect(issues[0]).toContain(`0.${expected}`);
  });
});

describe('formatForTable', () => {
  const tables = parseTableConfigs([
    {
      name: 'spark',
      bucket: 'lake',
      prefix: 'spark',
      format: 'delta',
      deltaLogStore: { type: 'dynamodb', tableName: 'delta_log', region: 'eu-west-1' },
    },
    { name: 'rs', bucket: 'lake', prefix: 'rs', format: 'delta', deltaLogStore: { type: 's3-conditional' } },
    {
      name: 'probing',
      bucket: 'lake',
      prefix: 'probing',
      format: 'delta',
      deltaLogStore: {
        type: 's3-conditional',
        checkDynamoDbTable: { tableName: 'delta_log', region: 'us-east-1' },
      },
    },
    { name: 'hive', bucket: 'lake', prefix: 'hive', format: 'parquet' },
  ]);

  it("reads and commits a DynamoDB-coordinated table through the log store built for the table's setting", async () => {
    // Prepare
    const store = new MemoryObjectStore();
    await createDeltaEventsTable(store, 'spark', { now: NOW });
    const { services, built, reads } = recordingServices();

    // Act
    const format = formatForTable(tables, 'spark', services, 'delta');
    const files = await format.partitionFiles(
      store,
      { tableRoot: 'spark', partition: 'date=2024-03-01', partitionDir: 'spark/date=2024-03-01/' },
      { now: NOW },
    );

    // Assess: the commit's store is the one built for this setting, and the plan's read finished entries first
    expect(format.name).toBe('delta');
    expect(format).not.toBe(deltaLake);
    expect(built).toEqual([
      { setting: { type: 'dynamodb', tableName: 'delta_log', region: 'eu-west-1' }, store },
    ]);
    expect(reads).toEqual(['spark']);
    expect(files.formatState).toEqual({ tableRoot: 'spark', readVersion: 0 });
  });

  it('binds a put-if-absent table without DynamoDB, and leaves a Hive table as registered', () => {
    // Prepare
    const { services, built } = recordingServices();

    // Act
    const rs = formatForTable(tables, 'rs', services, 'delta');
    const hive = formatForTable(tables, 'hive', services, 'parquet');

    // Assess
    expect(rs.name).toBe('delta');
    expect(rs).not.toBe(deltaLake);
    expect(hive).toBe(hiveParquet);
    expect(built).toEqual([]);
  });

  it('refuses a Delta table without a declaration (one no longer configured included) instead of assuming one', () => {
    // Act
    const removed = () => formatForTable(tables, 'gone', {}, 'delta');

    // Assess
    expect(removed).toThrow(InvalidInputError);
    expect(removed).toThrow(/has no declared commit coordination, and lake-compactor never assumes one/);
  });

  it("commits nothing through the registered format: a commit needs the table's declared coordination", async () => {
    // Prepare
    const store = new MemoryObjectStore();
    const journal = new MemoryJournal();
    await journal.create({
      runId: 'r',
      groupId: 'g',
      table: 't',
      partition: 'date=2024-03-01',
      state: 'published',
      inputs: [],
      outputs: [],
      retireMode: 'trash',
      format: 'delta',
      formatState: { tableRoot: 't', readVersion: 0 },
      stagingPrefix: '_lake-compactor/staging/r/g/',
      trashPrefix: '_lake-compactor/trash/r/',
      createdAt: NOW,
      updatedAt: NOW,
    });

    // Act
    const commit = deltaLake.commit({ store, journal, clock: { now: () => NOW } }, 'r', 'g');

    // Assess
    await expect(commit).rejects.toThrow(/has no declared commit coordination/);
    expect((await journal.get('r', 'g'))?.state).toBe('published');
  });

  it('refuses a table whose setting needs DynamoDB where no DynamoDB access can be built, naming the table to use', () => {
    // Act
    const coordinated = () => formatForTable(tables, 'spark', {}, 'delta');
    const probing = () => formatForTable(tables, 'probing', {}, 'delta');

    // Assess
    for (const bind of [coordinated, probing]) {
      expect(bind).toThrow(InvalidInputError);
      expect(bind).toThrow(/names the DynamoDB table delta_log .*nothing was committed/);
    }
  });
});

describe('the CLI spelling of the setting', () => {
  it('builds the same setting the config would hold', () => {
    // Act
    const dynamodb = deltaLogStoreSettingOf(
      'delta',
      {
        deltaLogStore: 'dynamodb',
        deltaDdbTable: 'delta_log',
        deltaDdbRegion: 'us-east-2',
        deltaTablePathScheme: 's3a',
      },
      S3,
    );
    const checked = deltaLogStoreSettingOf(
      'delta',
      { deltaLogStore: 's3-conditional', deltaDdbTable: 'delta_log', deltaDdbRegion: 'us-east-1' },
      S3,
    );
    const quiet = deltaLogStoreSettingOf(
      'delta',
      {
        deltaLogStore: 'quiet-window',
        deltaQuietWindow: ['02:00-05:00', 'sun 00:00-24:00'],
        deltaQuietMinutes: 20,
        deltaAcceptUncoordinatedWriters: true,
      },
      S3,
    );
    const local = deltaLogStoreSettingOf('delta', {}, LOCAL);
    const hive = deltaLogStoreSettingOf('parquet', {}, S3);

    // Assess
    expect(dynamodb).toEqual({
      type: 'dynamodb',
      tableName: 'delta_log',
      region: 'us-east-2',
      tablePathScheme: 's3a',
    });
    expect(checked).toEqual({
      type: 's3-conditional',
      checkDynamoDbTable: { tableName: 'delta_log', region: 'us-east-1' },
    });
    expect(quiet).toEqual({
      type: 'quiet-window',
      windows: ['02:00-05:00', 'sun 00:00-24:00'],
      quietMinutes: 20,
      acceptUncoordinatedWriters: true,
    });
    expect(local).toEqual({ type: 's3-conditional' });
    expect(hive).toBeUndefined();
  });

  it.each([
    [
      'missing for an s3:// Delta table, listing the choices by writer',
      'delta',
      {},
      S3,
      /This s3:\/\/ Delta table has no declared commit coordination[\s\S]*"s3-conditional"[\s\S]*"dynamodb"[\s\S]*"quiet-window"/,
    ],
    [
      'on a Hive location',
      'parquet',
      { deltaLogStore: 'dynamodb', deltaDdbTable: 'x_log', deltaDdbRegion: 'us-east-1' },
      S3,
      /--format delta/,
    ],
    [
      'without the DynamoDB table',
      'delta',
      { deltaLogStore: 'dynamodb', deltaDdbRegion: 'us-east-1' },
      S3,
      /needs --delta-ddb-table <name> and --delta-ddb-region/,
    ],
    [
      'without the DynamoDB region',
      'delta',
      { deltaLogStore: 'dynamodb', deltaDdbTable: 'delta_log' },
      S3,
      /Spark's defaults are delta_log and us-east-1/,
    ],
    [
      'a DynamoDB option without --delta-log-store',
      'delta',
      { deltaDdbTable: 'delta_log' },
      LOCAL,
      /These options give no --delta-log-store/,
    ],
    [
      'a quiet-window option with another coordination',
      'delta',
      {
        deltaLogStore: 'dynamodb',
        deltaDdbTable: 'd_log',
        deltaDdbRegion: 'us-east-1',
        deltaQuietMinutes: 5,
      },
      S3,
      /--delta-quiet-minutes do not apply with --delta-log-store dynamodb/,
    ],
    [
      'a quiet window without the acceptance of its risk',
      'delta',
      { deltaLogStore: 'quiet-window', deltaQuietWindow: ['02:00-05:00'] },
      S3,
      /acceptUncoordinatedWriters: must be true/,
    ],
    [
      'a malformed region',
      'delta',
      { deltaLogStore: 'dynamodb', deltaDdbTable: 'delta_log', deltaDdbRegion: 'Ireland' },
      S3,
      /not an AWS region code/,
    ],
  ] as const)('refuses the options %s as a usage error', (_case, format, options, location, expected) => {
    // Act
    const parse = () => deltaLogStoreSettingOf(format, options, location);

    // Assess
    expect(parse).toThrow(UsageError);
    expect(parse).toThrow(expected);
  });
});
