// A Delta table's commit coordination is a per-table setting: the config (functions' table list and the
// construct's props, one schema) accepts `deltaLogStore` on Delta tables only and refuses malformed values with
// what to write; `formatForTable` hands each table the format its setting makes (the DynamoDB log store the
// composition root builds, or the registered format itself), Hive is untouched, and a table that needs DynamoDB
// is refused by an entry point without it instead of being committed another way. The CLI spells the same setting.
import { describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../../functions/adapters/memory-object-store.js';
import { deltaLogStoreSettingOf } from '../../../../../functions/cli/format-options.js';
import { InvalidInputError, UsageError } from '../../../../../functions/core/errors.js';
import type { DynamoDbLogStoreSetting } from '../../../../../functions/core/formats/delta/coordination.js';
import { deltaLake } from '../../../../../functions/core/formats/delta/format.js';
import type { DeltaLogStore } from '../../../../../functions/core/formats/delta/log-store.js';
import { hiveParquet } from '../../../../../functions/core/formats/hive/index.js';
import { formatForTable } from '../../../../../functions/core/formats/index.js';
import type { FormatServices } from '../../../../../functions/core/formats/table-format.js';
import { parseTableConfigs } from '../../../../../functions/core/table-config.js';
import type { ObjectStore } from '../../../../../functions/ports/object-store.js';
import { createDeltaEventsTable } from '../../../../../functions/tools/sample-delta.js';
import { lakeCompactorPropsProblems } from '../../../../../infra/props-schema.js';

const NOW = Date.UTC(2024, 2, 3);

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
      };
    },
  };
  return { services, built, reads };
}

describe('deltaLogStore in the table config', () => {
  it('accepts both coordinations on a Delta table and keeps what the config says', () => {
    // Prepare
    const dynamodb = {
      type: 'dynamodb',
      tableName: 'delta_log',
      region: 'eu-west-1',
      tablePathScheme: 's3a',
    };

    // Act
    const [coordinated, conditional, unset] = parseTableConfigs([
      { name: 'a', bucket: 'lake', prefix: 'a', format: 'delta', deltaLogStore: dynamodb },
      { name: 'b', bucket: 'lake', prefix: 'b', format: 'delta', deltaLogStore: { type: 's3-conditional' } },
      { name: 'c', bucket: 'lake', prefix: 'c', format: 'delta' },
    ]);

    // Assess
    expect(coordinated?.deltaLogStore).toEqual(dynamodb);
    expect(conditional?.deltaLogStore).toEqual({ type: 's3-conditional' });
    expect(unset?.deltaLogStore).toBeUndefined();
    expect(
      propsProblems({ format: 'delta', deltaLogStore: { type: 'dynamodb', tableName: 'delta_log' } }),
    ).toEqual([]);
  });

  it('refuses the setting on a table that is not Delta, in the functions and at synth, saying what to do', () => {
    // Prepare
    const table = { deltaLogStore: { type: 'dynamodb', tableName: 'delta_log' } };

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
      'deltaLogStore.type: must be "s3-conditional" (S3 conditional writes, the default) or "dynamodb" (Spark\'s S3DynamoDBLogStore, with tableName), not "dynamo"',
    ],
    [
      'a bare type name',
      'dynamodb',
      'deltaLogStore: must be an object such as { "type": "s3-conditional" } or { "type": "dynamodb", "tableName": "delta_log" }',
    ],
    ['no type', {}, 'deltaLogStore.type: must be "s3-conditional"'],
    ['dynamodb without its table', { type: 'dynamodb' }, 'deltaLogStore.tableName:'],
    [
      'a table name DynamoDB refuses',
      { type: 'dynamodb', tableName: 'delta log' },
      'deltaLogStore.tableName: "delta log" is not a DynamoDB table name',
    ],
    [
      'a region that is not a region code',
      { type: 'dynamodb', tableName: 'delta_log', region: 'Ireland' },
      'deltaLogStore.region: "Ireland" is not an AWS region code',
    ],
    [
      'a scheme other writers cannot use',
      { type: 'dynamodb', tableName: 'delta_log', tablePathScheme: 's3n' },
      'deltaLogStore.tablePathScheme: "s3n" is not a table path scheme',
    ],
    [
      "a Spark key instead of this config's",
      { type: 'dynamodb', tableName: 'delta_log', 'ddb.region': 'eu-west-1' },
      'deltaLogStore: Unrecognized key: "ddb.region"',
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
    { name: 'rs', bucket: 'lake', prefix: 'rs', format: 'delta' },
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

  it('gives a Delta table without the setting, a Hive table and a table no longer configured their registered formats', () => {
    // Prepare
    const { services, built } = recordingServices();

    // Act
    const rs = formatForTable(tables, 'rs', services, 'delta');
    const hive = formatForTable(tables, 'hive', services, 'parquet');
    const removed = formatForTable(tables, 'gone', services, 'delta');

    // Assess
    expect(rs).toBe(deltaLake);
    expect(hive).toBe(hiveParquet);
    expect(removed).toBe(deltaLake);
    expect(built).toEqual([]);
  });

  it('refuses a DynamoDB-coordinated table where no DynamoDB log store can be built, naming the table to use', () => {
    // Act
    const bind = () => formatForTable(tables, 'spark', {}, 'delta');

    // Assess
    expect(bind).toThrow(InvalidInputError);
    expect(bind).toThrow(/through the DynamoDB table delta_log .*nothing was committed/);
  });
});

describe('the CLI spelling of the setting', () => {
  it('builds the same setting the config would hold', () => {
    // Act
    const setting = deltaLogStoreSettingOf('delta', {
      deltaLogStore: 'dynamodb',
      deltaDdbTable: 'delta_log',
      deltaDdbRegion: 'us-east-2',
      deltaTablePathScheme: 's3a',
    });
    const none = deltaLogStoreSettingOf('delta', {});

    // Assess
    expect(setting).toEqual({
      type: 'dynamodb',
      tableName: 'delta_log',
      region: 'us-east-2',
      tablePathScheme: 's3a',
    });
    expect(none).toBeUndefined();
  });

  it.each([
    [
      'on a Hive location',
      'parquet',
      { deltaLogStore: 'dynamodb', deltaDdbTable: 'x_log' },
      /--format delta/,
    ],
    ['without the DynamoDB table', 'delta', { deltaLogStore: 'dynamodb' }, /needs --delta-ddb-table/],
    [
      'a DynamoDB option without --delta-log-store dynamodb',
      'delta',
      { deltaDdbTable: 'delta_log' },
      /--delta-ddb-table only apply with --delta-log-store dynamodb/,
    ],
    [
      'a malformed region',
      'delta',
      { deltaLogStore: 'dynamodb', deltaDdbTable: 'delta_log', deltaDdbRegion: 'Ireland' },
      /not an AWS region code/,
    ],
  ] as const)('refuses the options %s as a usage error', (_case, format, options, expected) => {
    // Act
    const parse = () => deltaLogStoreSettingOf(format, options);

    // Assess
    expect(parse).toThrow(UsageError);
    expect(parse).toThrow(expected);
  });
});
