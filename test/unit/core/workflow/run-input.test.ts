// Unit tests of the operator input: every problem is reported at once before anything changes, and a
// valid request is normalised with the table's defaults (or fanned out with deterministic child names).
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../../../functions/core/errors.js';
import {
  buildRunContext,
  childExecutionName,
  normalizeRunInput,
  type RunInput,
  retireModeOf,
  runContextSchema,
  runInputSchema,
  wherePartitionsWanted,
} from '../../../../functions/core/run-input.js';
import { parseTableConfigs } from '../../../../functions/core/table-config.js';

const tables = parseTableConfigs([
  { name: 'events', bucket: 'lake', prefix: 'events/', partitionColumns: ['date'] },
  {
    name: 'clicks',
    bucket: 'versioned-lake',
    prefix: 'clicks',
    partitionColumns: ['day', 'hour'],
    sortColumns: ['ts'],
    codec: 'snappy',
    deltaEncoding: true,
    schemaFidelity: 'logical',
    targetFileSizeMB: 256,
  },
]);
const options = {
  executionName: 'run-1',
  startedAt: 1_700_000_000_000,
  versionedBuckets: ['versioned-lake'],
};

function problems(raw: unknown): string[] {
  try {
    normalizeRunInput(raw, tables, options);
  } catch (err) {
    if (err instanceof InvalidInputError) return [...err.issues];
    throw err;
  }
  return [];
}

describe('normalizeRunInput', () => {
  it('resolves a one-partition request with the table policy defaults and delete-rebuild mode on an unversioned bucket', () => {
    // Prepare
    const raw = { table: 'events', partition: 'date=2024-01-15' };

    // Act
    const result = normalizeRunInput(raw, tables, options);

    // Assess
    expect(result).toEqual({
      mode: 'single',
      run: expect.objectContaining({
        runId: 'run-1',
        bucket: 'lake',
        tableRoot: 'events',
        partition: 'date=2024-01-15',
        partitionDir: 'events/date=2024-01-15/',
        strategy: 'binpack',
        codec: 'zstd',
        targetFileSizeBytes: 128 * 1024 * 1024,
        quietMinutes: 15,
        dryRun: false,
        force: false,
        trigger: 'operator',
        retireMode: 'delete-rebuild',
      }),
    });
  });

  it('takes the table sort strategy, codec and target, accepts a full key prefix, and deletes on a versioned bucket', () => {
    // Prepare
    const raw = { table: 'clicks', partition: 'clicks/day=2024-01-15/hour=03/', generation: 4 };

    // Act
    const result = normalizeRunInput(raw, tables, options);

    // Assess
    expect(result.mode === 'single' && result.run).toMatchObject({
      partition: 'day=2024-01-15/hour=03',
      strategy: 'sort',
      sortColumns: ['ts'],
      codec: 'snappy',
      targetFileSizeBytes: 256 * 1024 * 1024,
      trigger: 'profiler',
      generation: 4,
      retireMode: 'delete-versioned',
    });
  });

  it("Z-orders by the table's zOrderColumns, or by a request's sortColumns with strategy zorder (two at least)", () => {
    // Prepare
    const zTables = parseTableConfigs([
      {
        name: 'events',
        bucket: 'lake',
        prefix: 'events/',
        partitionColumns: ['date'],
        zOrderColumns: ['a', 'b'],
      },
    ]);
    const partition = { table: 'events', partition: 'date=2024-01-15' };

    // Act
    const fromTable = normalizeRunInput(partition, zTables, options);
    const requested = normalizeRunInput(
      { ...partition, strategy: 'zorder', sortColumns: ['x', 'y', 'z'] },
      tables,
      options,
    );
    const binpacked = normalizeRunInput({ ...partition, strategy: 'binpack' }, zTables, options);

    // Assess
    expect(fromTable.mode === 'single' && fromTable.run).toMatchObject({
      strategy: 'zorder',
      sortColumns: ['a', 'b'],
    });
    expect(requested.mode === 'single' && requested.run).toMatchObject({
      strategy: 'zorder',
      sortColumns: ['x', 'y', 'z'],
    });
    expect(binpacked.mode === 'single' && 'sortColumns' in binpacked.run).toBe(false);
    expect(problems({ ...partition, strategy: 'zorder', sortColumns: ['x'] })).toEqual([
      expect.stringMatching(/^sortColumns: strategy "zorder" needs at least two sortColumns/),
    ]);
    expect(() =>
      parseTableConfigs([{ name: 't', prefix: 't', sortColumns: ['a'], zOrderColumns: ['a', 'b'] }]),
    ).toThrow(/sortColumns \(a sort\) or zOrderColumns \(a Z-order\), not both/);
  });

  it('takes DELTA encoding from the table unless the request turns it off, and leaves it off by default', () => {
    // Prepare
    const partition = { partition: 'day=2024-01-15/hour=03' };

    // Act
    const fromTable = normalizeRunInput({ table: 'clicks', ...partition }, tables, options);
    const turnedOff = normalizeRunInput(
      { table: 'clicks', ...partition, deltaEncoding: false },
      tables,
      options,
    );
    const byDefault = normalizeRunInput({ table: 'events', partition: 'date=2024-01-15' }, tables, options);
    const requested = normalizeRunInput(
      { table: 'events', partition: 'date=2024-01-15', deltaEncoding: true },
      tables,
      options,
    );

    // Assess
    expect(fromTable.mode === 'single' && fromTable.run.deltaEncoding).toBe(true);
    expect(turnedOff.mode === 'single' && 'deltaEncoding' in turnedOff.run).toBe(false);
    expect(byDefault.mode === 'single' && 'deltaEncoding' in byDefault.run).toBe(false);
    expect(requested.mode === 'single' && requested.run.deltaEncoding).toBe(true);
    expect(problems({ table: 'events', partition: 'date=2024-01-15', deltaEncoding: 'yes' })).toEqual([
      expect.stringContaining('deltaEncoding'),
    ]);
  });

  it('takes logical schema fidelity from the table unless the request asks for exact, and is exact by default', () => {
    // Prepare
    const partition = { partition: 'day=2024-01-15/hour=03' };

    // Act
    const fromTable = normalizeRunInput({ table: 'clicks', ...partition }, tables, options);
    const exact = normalizeRunInput(
      { table: 'clicks', ...partition, schemaFidelity: 'exact' },
      tables,
      options,
    );
    const byDefault = normalizeRunInput({ table: 'events', partition: 'date=2024-01-15' }, tables, options);
    const requested = normalizeRunInput(
      { table: 'events', partition: 'date=2024-01-15', schemaFidelity: 'logical' },
      tables,
      options,
    );

    // Assess
    expect(fromTable.mode === 'single' && fromTable.run.schemaFidelity).toBe('logical');
    expect(exact.mode === 'single' && 'schemaFidelity' in exact.run).toBe(false);
    expect(byDefault.mode === 'single' && 'schemaFidelity' in byDefault.run).toBe(false);
    expect(requested.mode === 'single' && requested.run.schemaFidelity).toBe('logical');
    expect(problems({ table: 'events', partition: 'date=2024-01-15', schemaFidelity: 'loose' })).toEqual([
      expect.stringContaining('schemaFidelity'),
    ]);
    expect(() => parseTableConfigs([{ name: 't', prefix: 't', schemaFidelity: 'loose' }])).toThrow(
      /schemaFidelity/,
    );
  });

  it('lists every problem at once: unknown table with the configured names, sort without columns, typos', () => {
    // Prepare
    const raw = { table: 'orders', partition: 'x', strategy: 'sort', targetFileSizeMB: -1, sortColum: ['a'] };

    // Act
    const found = problems(raw);

    // Assess
    expect(found).toEqual(
      expect.arrayContaining([
        'table: "orders" is not configured; configured tables: "events", "clicks"',
        'sortColumns: strategy "sort" needs sortColumns, e.g. ["event_time"]',
        expect.stringContaining('Unrecognized key: "sortColum"'),
        expect.stringMatching(/^targetFileSizeMB: /),
      ]),
    );
  });

  it('refuses partitions that do not match the partition columns, hidden or relative segments, and both forms at once', () => {
    // Prepare / Act / Assess
    expect(problems({ table: 'events', partition: 'day=2024-01-15' })[0]).toContain(
      'expected "date=<value>"',
    );
    expect(problems({ table: 'events', partition: 'date=1/../x' })[0]).toContain(
      'relative or hidden segment',
    );
    expect(problems({ table: 'events', partition: '' })[0]).toContain('partitioned by date');
    expect(problems({ table: 'events', partition: 'date=1', partitions: ['date=2'] })[0]).toContain(
      'exactly one of',
    );
    expect(problems({ table: 'events', partitions: ['date=1', '/date=1/'] })).toEqual([
      'partitions: "date=1" is listed twice; list each partition once',
    ]);
    expect(
      problems({ table: 'events', partition: 'date=1', targetFileSizeMB: 64, maxGroupMB: 100 })[0],
    ).toContain('maxGroupMB must be at least 2 × targetFileSizeMB (128)');
  });

  it('fans several partitions out into children whose names are deterministic and at most 80 characters', () => {
    // Prepare
    const raw = { table: 'events', partitions: ['date=2024-01-01', 'date=2024-01-02'], dryRun: true };

    // Act
    const first = normalizeRunInput(raw, tables, options);
    const again = normalizeRunInput(raw, tables, options);

    // Assess
    expect(first).toEqual(again);
    expect(first.mode === 'fanout' && first.children.map((c) => [c.partition, c.input])).toEqual([
      [
        'date=2024-01-01',
        { table: 'events', partition: 'date=2024-01-01', dryRun: true, trigger: 'operator' },
      ],
      [
        'date=2024-01-02',
        { table: 'events', partition: 'date=2024-01-02', dryRun: true, trigger: 'operator' },
      ],
    ]);
    const long = childExecutionName('x'.repeat(80), 'date=2024-01-01', 12);
    expect(long.length).toBeLessThanOrEqual(80);
    expect(long).toMatch(/^x+-p12-[0-9a-f]{8}$/);
  });
});

describe('buildRunContext', () => {
  it('gives a terminal run (no table config, only the CLI choices) the workflow defaults and delete-rebuild mode', () => {
    // Prepare
    const table = { name: 'sales', prefix: 'data/sales', bucket: 'local' };

    // Act
    const run = buildRunContext(
      table,
      'date=2024-01-15',
      { targetFileSizeMB: 64, dryRun: false, force: true, quietMinutes: 0, trigger: 'operator' },
      { executionName: 'cli-1', startedAt: 5, workRoot: '_work/' },
    );

    // Assess: exactly the context `lake-compactor compact` built by hand before the builder existed, plus
    // the format every run now records (a table that names none is Hive Parquet)
    expect(run).toEqual({
      runId: 'cli-1',
      table: 'sales',
      format: 'parquet',
      bucket: 'local',
      tableRoot: 'data/sales',
      partition: 'date=2024-01-15',
      partitionDir: 'data/sales/date=2024-01-15/',
      strategy: 'binpack',
      codec: 'zstd',
      targetFileSizeBytes: 64 * 1024 * 1024,
      minInputFiles: 5,
      maxGroupBytes: 2048 * 1024 * 1024,
      smallFileRatio: 0.75,
      dryRun: false,
      force: true,
      quietMinutes: 0,
      trigger: 'operator',
      retireMode: 'delete-rebuild',
      startedAt: 5,
      workRoot: '_work/',
    });
  });

  it('builds what a handler accepts back: the context passes its own schema unchanged', () => {
    // Prepare
    const clicks = tables.find((t) => t.name === 'clicks');
    if (clicks?.bucket === undefined) throw new Error('fixture: clicks has a bucket');

    // Act
    const run = buildRunContext(
      { ...clicks, bucket: clicks.bucket },
      'day=1/hour=2',
      { generation: 3 },
      options,
    );

    // Assess
    expect(runContextSchema.parse(run)).toEqual(run);
    expect(run).toMatchObject({ strategy: 'sort', sortColumns: ['ts'], trigger: 'profiler', generation: 3 });
  });
});

describe('settle requests', () => {
  it('carry settle into the run context, and a settle dry run is refused before anything changes', () => {
    // Prepare / Act
    const settle = normalizeRunInput(
      { table: 'events', partition: 'date=2024-01-15', settle: true },
      tables,
      options,
    );
    const dry = problems({ table: 'events', partition: 'date=2024-01-15', settle: true, dryRun: true });

    // Assess
    expect(settle).toMatchObject({ mode: 'single', run: { settle: true, dryRun: false } });
    expect(dry).toEqual([
      expect.stringMatching(/^settle: settle changes the partition .* cannot be a dry run/),
    ]);
  });
});

describe('events/workflow-*.json', () => {
  it('are all valid requests for the example tables (Hive events, Delta transactions, Iceberg clickstream, Hudi trips)', async () => {
    // Prepare
    const { readdirSync, readFileSync } = await import('node:fs');
    const dir = new URL('../../../../events/', import.meta.url);
    const files = readdirSync(dir).filter((f) => f.startsWith('workflow-') && f.endsWith('.json'));
    // The Delta, Iceberg and Hudi inputs name such tables; kept out of `tables` so the other tests' "configured tables" stay.
    const examples = [
      ...tables,
      ...parseTableConfigs([
        {
          name: 'transactions',
          bucket: 'lake',
          prefix: 'transactions/',
          format: 'delta',
          deltaLogStore: { type: 's3-conditional' },
        },
        { name: 'clickstream', bucket: 'lake', prefix: 'clickstream/', format: 'iceberg' },
        {
          name: 'trips',
          bucket: 'lake',
          prefix: 'trips/',
          format: 'hudi',
          hudiLock: { provider: 'storage' },
          hudiIndexType: 'BLOOM',
        },
      ]),
    ];

    // Act: a where-only request's partitions are listed by the validate step first (validate-iceberg-where.test.ts)
    const inputs = files.map((f) => JSON.parse(readFileSync(new URL(f, dir), 'utf8')) as RunInput);
    const whereOnly = inputs.filter((i) => wherePartitionsWanted(i));
    const runs = inputs
      .filter((i) => !wherePartitionsWanted(i))
      .map((i) => normalizeRunInput(i, examples, options));

    // Assess
    expect(files.length).toBeGreaterThanOrEqual(8);
    expect(runs.filter((r) => r.mode === 'fanout')).toHaveLength(1);
    const deltaStrategies = runs.flatMap((r) =>
      r.mode === 'single' && r.run.format === 'delta' ? [r.run.strategy] : [],
    );
    expect(deltaStrategies.sort()).toEqual(['binpack', 'zorder']);
    const iceberg = runs.flatMap((r) => (r.mode === 'single' && r.run.format === 'iceberg' ? [r.run] : []));
    expect(iceberg.map((r) => [r.rewriteDataFiles?.['min-input-files'], r.where !== undefined])).toEqual([
      [10, true],
    ]);
    expect(whereOnly.map((i) => [i.table, runInputSchema.safeParse(i).success])).toEqual([
      ['clickstream', true],
    ]);
  });
});

describe('the run context’s table format', () => {
  it('is recorded from the table when the run starts, and a context from before it was recorded reads as parquet', () => {
    // Prepare
    const recorded = buildRunContext(
      { name: 'sales', prefix: 'data/sales', bucket: 'b', format: 'parquet' },
      '',
      {},
      { executionName: 'r1', startedAt: 1 },
    );
    const { format: _dropped, ...older } = recorded;

    // Act
    const reread = runContextSchema.parse(older);

    // Assess
    expect(recorded.format).toBe('parquet');
    expect(reread.format).toBe('parquet');
    expect(() => runContextSchema.parse({ ...recorded, format: 'orc' })).toThrow(/not supported/);
  });
});

describe('retireModeOf', () => {
  it('deletes on a versioned bucket, rebuilds on undo for a bin-pack of Hive Parquet, and copies to trash otherwise', () => {
    // Act / Assess
    expect(retireModeOf(true, 'parquet', 'sort')).toBe('delete-versioned');
    expect(retireModeOf(false, 'parquet', 'binpack')).toBe('delete-rebuild');
    expect(retireModeOf(false, 'parquet', 'sort')).toBe('trash');
    expect(retireModeOf(false, 'parquet', 'zorder')).toBe('trash');
    expect(retireModeOf(false, 'delta', 'binpack')).toBe('trash');
  });
});
