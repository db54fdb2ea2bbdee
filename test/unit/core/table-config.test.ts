import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../../functions/core/errors.js';
import { unsupportedFormatMessage } from '../../../functions/core/formats/index.js';
import { DEFAULT_POLICY } from '../../../functions/core/policy.js';
import {
  findTableForKey,
  parseTableConfigs,
  resolveTablePolicy,
  type TableConfig,
} from '../../../functions/core/table-config.js';

function issuesOf(act: () => unknown): readonly string[] {
  try {
    act();
  } catch (err) {
    if (err instanceof InvalidInputError) return err.issues;
    throw err;
  }
  throw new Error('expected InvalidInputError, nothing was thrown');
}

describe('parseTableConfigs', () => {
  it('parses a JSON string, normalises prefixes and applies defaults', () => {
    // Prepare
    const json = JSON.stringify([
      {
        name: 'events',
        prefix: '/lake/events/',
        partitionColumns: ['date'],
        dateColumn: 'date',
        dateFormat: 'yyyy-MM-dd',
      },
      { name: 'orders', bucket: 'data-bkt', prefix: 'lake/orders', format: 'parquet', codec: 'snappy' },
    ]);
    // Act
    const tables = parseTableConfigs(json);
    // Assess
    expect(tables).toEqual([
      {
        name: 'events',
        prefix: 'lake/events',
        format: 'parquet',
        partitionColumns: ['date'],
        dateColumn: 'date',
        dateFormat: 'yyyy-MM-dd',
      },
      {
        name: 'orders',
        bucket: 'data-bkt',
        prefix: 'lake/orders',
        format: 'parquet',
        partitionColumns: [],
        codec: 'snappy',
      },
    ]);
  });

  it('collects every field problem of every entry into one InvalidInputError with paths', () => {
    // Prepare
    const value = [
      { name: 'bad name!', prefix: 's3://bucket/x', format: 'orc' },
      { name: 'ok', prefix: 'x', partitionColumn: ['d'], policy: { quietMinutes: -1 } },
      { name: 'dates', prefix: 'y', partitionColumns: ['dt'], dateColumn: 'day' },
    ];
    // Act
    const issues = issuesOf(() => parseTableConfigs(value));
    // Assess
    const paths = issues.map((i) => i.split(':')[0]);
    expect(paths).toEqual(
      expect.arrayContaining([
        '0.name',
        '0.prefix',
        '0.format',
        '1',
        '1.policy.quietMinutes',
        '2.dateFormat',
        '2.dateColumn',
      ]),
    );
    expect(issues.find((i) => i.startsWith('1:'))).toMatch(/partitionColumn/);
  });

  it('refuses invalid JSON with an InvalidInputError that says to fix TABLES', () => {
    // Prepare
    const json = '[{"name": "x",';
    // Act
    const act = () => parseTableConfigs(json);
    // Assess
    expect(act).toThrow(InvalidInputError);
    expect(act).toThrow(/fix the TABLES setting/);
  });

  it('refuses duplicate names, identical roots and nested roots, all at once', () => {
    // Prepare
    const value = [
      { name: 'a', prefix: 'lake/a' },
      { name: 'a', prefix: 'lake/b' },
      { name: 'c', prefix: 'lake/a/' },
      { name: 'outer', prefix: 'lake/d' },
      { name: 'inner', prefix: 'lake/d/sub' },
    ];
    // Act
    const issues = issuesOf(() => parseTableConfigs(value));
    // Assess
    expect(issues).toEqual([
      '1.name: "a" is also the name of entry 0',
      '2.prefix: "lake/a" is also the root of table "a" (entry 0)',
      '4.prefix: "lake/d/sub" lies inside table "outer" (root "lake/d"), whose listings would take its files for partitions of "outer"; give each table its own root',
    ]);
  });

  it('refuses a table format that is not implemented, naming what is supported, with every other problem', () => {
    // Prepare
    const value = [
      { name: 'events', prefix: 'lake/events' },
      { name: 'orders', prefix: 'lake/orders', format: 'orc' },
      { name: 'clicks', prefix: 'lake/clicks', format: 'orc', codec: 'lz4' },
    ];
    // Act
    const issues = issuesOf(() => parseTableConfigs(value));
    // Assess
    expect(issues).toEqual([
      `1.format: ${unsupportedFormatMessage('orc')}`,
      `2.format: ${unsupportedFormatMessage('orc')}`,
      expect.stringMatching(/^2\.codec: /),
    ]);
    expect(issues[0]).toContain(
      'supports "parquet" (Hive-style Parquet), "delta" (Delta Lake), "iceberg" (Apache Iceberg), "hudi" (Apache Hudi) only',
    );
  });

  it('allows the same root in different buckets, and sibling roots that share a name prefix', () => {
    // Prepare
    const value = [
      { name: 'a1', bucket: 'one', prefix: 'lake/a' },
      { name: 'a2', bucket: 'two', prefix: 'lake/a' },
      { name: 'events', bucket: 'one', prefix: 'lake/events' },
      { name: 'events2', bucket: 'one', prefix: 'lake/events2' },
    ];
    // Act
    const tables = parseTableConfigs(value);
    // Assess
    expect(tables.map((t) => t.name)).toEqual(['a1', 'a2', 'events', 'events2']);
  });

  it('refuses a table inside another table’s root or partition, in the same bucket or bucket-less', () => {
    // Prepare
    const value = [
      { name: 'events', bucket: 'lake', prefix: 'events', partitionColumns: ['date'] },
      { name: 'day', bucket: 'lake', prefix: 'events/date=2024-01-15' },
      { name: 'elsewhere', bucket: 'other', prefix: 'events/clicks' },
      { name: 'anywhere', prefix: 'events/views' },
      { name: 'root', bucket: 'raw', prefix: '' },
      { name: 'raw-events', bucket: 'raw', prefix: 'x/events' },
    ];
    // Act
    const issues = issuesOf(() => parseTableConfigs(value));
    // Assess
    expect(issues).toEqual([
      '1.prefix: "events/date=2024-01-15" lies inside table "events" (root "events"), whose listings would take its files for partitions of "events"; give each table its own root',
      '3.prefix: "events/views" lies inside table "events" (root "events"), whose listings would take its files for partitions of "events"; give each table its own root',
      '3.prefix: "events/views" lies inside table "root" (root ""), whose listings would take its files for partitions of "root"; give each table its own root',
      '5.prefix: "x/events" lies inside table "root" (root ""), whose listings would take its files for partitions of "root"; give each table its own root',
    ]);
  });

  it('refuses a root in the work root _lake-compactor/ or under a folder readers skip (_ or .)', () => {
    // Prepare
    const value = [
      { name: 'work', prefix: '_lake-compactor/' },
      { name: 'staging', prefix: '_lake-compactor/staging/x' },
      { name: 'temp', prefix: 'lake/_temporary/events' },
      { name: 'hidden', prefix: '.hidden/events' },
      { name: 'double', prefix: 'lake//events' },
      { name: 'fine', prefix: 'lake/events_v2/' },
    ];
    // Act
    const issues = issuesOf(() => parseTableConfigs(value));
    // Assess
    expect(issues.map((i) => i.split(':')[0])).toEqual([
      '0.prefix',
      '1.prefix',
      '2.prefix',
      '3.prefix',
      '4.prefix',
    ]);
    expect(issues[0]).toMatch(/inside the work root _lake-compactor\//);
    expect(issues[1]).toMatch(/inside the work root _lake-compactor\//);
    expect(issues[2]).toMatch(/the folder "_temporary", and readers and the compactor skip folders/);
    expect(issues[3]).toMatch(/the folder "\.hidden"/);
  });
});

describe('findTableForKey', () => {
  // Overlapping roots, which configs refuse: the lookup still resolves them by the longest root on its own.
  const tables: TableConfig[] = [
    { name: 'lake', prefix: 'lake' },
    { name: 'events', prefix: 'lake/events' },
    { name: 'events-eu', bucket: 'eu-bucket', prefix: 'lake/events' },
    { name: 'root', bucket: 'raw', prefix: '' },
  ].flatMap((table) => parseTableConfigs([table]));

  it('picks the longest matching root', () => {
    // Prepare
    const key = 'lake/events/date=2024-01-15/part-0.parquet';
    // Act
    const table = findTableForKey(tables, 'data', key);
    // Assess
    expect(table?.name).toBe('events');
  });

  it('matches roots per path segment, so lake/events does not claim lake/events2', () => {
    // Prepare
    const key = 'lake/events2/part-0.parquet';
    // Act
    const table = findTableForKey(tables, 'data', key);
    // Assess
    expect(table?.name).toBe('lake');
  });

  it('prefers the table that names the bucket over a bucket-less one with the same root', () => {
    // Prepare
    const key = 'lake/events/part-0.parquet';
    // Act
    const table = findTableForKey(tables, 'eu-bucket', key);
    // Assess
    expect(table?.name).toBe('events-eu');
  });

  it('returns undefined when no table claims the key, and lets a bucket-root table claim everything in its bucket', () => {
    // Prepare
    const key = 'other/part-0.parquet';
    // Act
    const none = findTableForKey(tables, 'data', key);
    const root = findTableForKey(tables, 'raw', key);
    // Assess
    expect(none).toBeUndefined();
    expect(root?.name).toBe('root');
  });
});

describe('resolveTablePolicy', () => {
  it('applies targetFileSizeMB in MiB and the table policy overrides over the defaults', () => {
    // Prepare
    const [table] = parseTableConfigs([
      { name: 't', prefix: 't', targetFileSizeMB: 256, policy: { quietMinutes: 60 } },
    ]);
    // Act
    const policy = resolveTablePolicy(table as TableConfig);
    // Assess
    expect(policy).toEqual({ ...DEFAULT_POLICY, targetFileSizeBytes: 256 * 1024 * 1024, quietMinutes: 60 });
  });

  it('refuses a target set twice', () => {
    // Prepare
    const value = [{ name: 't', prefix: 't', targetFileSizeMB: 256, policy: { targetFileSizeBytes: 1 } }];
    // Act
    const issues = issuesOf(() => parseTableConfigs(value));
    // Assess
    expect(issues).toEqual(
      [
        'policy.targetFileSizeBytes: set the target once: either targetFileSizeMB or policy.targetFileSizeBytes',
      ].map((i) => `0.${i}`),
    );
  });
});
