// Unit tests of the rewrite_data_files options wherever they are given (an options map, the table config, the
// operator's run input): Iceberg's names and defaults, every invalid option refused at once with what to do (an
// unknown name suggests the nearest), and a run's options laid over its table's, name by name.
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../../../../functions/core/errors.js';
import {
  parseRewriteOptionPairs,
  parseRewriteOptions,
  resolveRewriteOptions,
} from '../../../../../functions/core/formats/iceberg/rewrite-options.js';
import { normalizeRunInput, type RunContext } from '../../../../../functions/core/run-input.js';
import { parseTableConfigs } from '../../../../../functions/core/table-config.js';
import { tablesJsonOf } from '../../../../../infra/function-config.js';

const MiB = 1024 * 1024;

function issuesOf(act: () => unknown): readonly string[] {
  try {
    act();
  } catch (err) {
    if (err instanceof InvalidInputError) return err.issues;
    throw err;
  }
  throw new Error('expected InvalidInputError, nothing was thrown');
}

function messageOf(act: () => unknown): string {
  try {
    act();
  } catch (err) {
    if (err instanceof InvalidInputError) return err.message;
    throw err;
  }
  throw new Error('expected InvalidInputError, nothing was thrown');
}

describe('parseRewriteOptions', () => {
  it('takes Iceberg’s names with values as numbers, booleans or the strings of Spark’s options map', () => {
    // Act
    const options = parseRewriteOptions({
      'target-file-size-bytes': '268435456',
      'min-input-files': 2,
      'rewrite-all': 'TRUE',
      'partial-progress.enabled': true,
      'delete-file-threshold': '0',
    });

    // Assess
    expect(options).toEqual({
      'target-file-size-bytes': 268435456,
      'min-input-files': 2,
      'rewrite-all': true,
      'partial-progress.enabled': true,
      'delete-file-threshold': 0,
    });
  });

  it('refuses every invalid option at once, saying what to do, and suggests the nearest name for a typo', () => {
    // Act
    const issues = issuesOf(() =>
      parseRewriteOptions({
        'min-input-file': 5,
        'compression-codec': 'zstd',
        'max-concurrent-file-group-rewrites': 4,
        'rewrite-all': 'yes',
        'min-input-files': 0,
        'max-file-size-bytes': '1.5',
      }),
    );

    // Assess
    const all =
      'target-file-size-bytes, min-file-size-bytes, max-file-size-bytes, min-input-files, delete-file-threshold, rewrite-all, max-file-group-size-bytes, partial-progress.enabled, partial-progress.max-commits, remove-dangling-deletes';
    expect(issues).toEqual([
      `min-input-file: unknown option "min-input-file": did you mean "min-input-files"? (the options are ${all})`,
      `compression-codec: unknown option "compression-codec"; the options are ${all}`,
      'max-concurrent-file-group-rewrites: max-concurrent-file-group-rewrites is an Iceberg option lake-compactor does not take: groups are rewritten in parallel by the workflow, whose concurrency the deployment sets; remove it',
      'rewrite-all: rewrite-all must be true or false, not "yes"',
      'min-input-files: min-input-files must be at least 1, not 0',
      'max-file-size-bytes: max-file-size-bytes must be a whole number of bytes, not "1.5"; e.g. 536870912',
    ]);
  });

  it('refuses sizes that contradict each other when all of them are given: min < target < max', () => {
    // Act
    const issues = issuesOf(() =>
      parseRewriteOptions({
        'target-file-size-bytes': 100,
        'min-file-size-bytes': 200,
        'max-file-size-bytes': 150,
      }),
    );

    // Assess
    expect(issues).toEqual([
      'min-file-size-bytes: min-file-size-bytes (200) must be less than max-file-size-bytes (150); lower it or raise max-file-size-bytes',
      'target-file-size-bytes: target-file-size-bytes (100) must be greater than min-file-size-bytes (200), or every output would be small enough to rewrite again; raise it or lower min-file-size-bytes',
    ]);
  });

  it('reads the CLI’s name=value pairs, refusing one without =', () => {
    // Act
    const options = parseRewriteOptionPairs(['min-input-files=2', 'rewrite-all = true']);
    const issues = issuesOf(() => parseRewriteOptionPairs(['min-input-files']));

    // Assess
    expect(options).toEqual({ 'min-input-files': 2, 'rewrite-all': true });
    expect(issues).toEqual([
      '"min-input-files" is not name=value; write e.g. --rewrite-option min-input-files=10',
    ]);
  });
});

describe('resolveRewriteOptions', () => {
  it('applies Iceberg’s defaults: 512 MiB, min 75 %, max 180 %, 5 files, no delete threshold, 100 GB groups clamped, one commit, dangling deletes kept', () => {
    // Act
    const resolved = resolveRewriteOptions({}, { engineGroupCapBytes: 2048 * MiB });

    // Assess
    expect(resolved).toEqual({
      kind: 'iceberg-rewrite-data-files',
      targetFileSizeBytes: 536870912,
      targetSource: 'default',
      minFileSizeBytes: 402653184,
      maxFileSizeBytes: 966367641,
      minInputFiles: 5,
      deleteFileThreshold: 2147483647,
      rewriteAll: false,
      maxFileGroupSizeBytes: 107374182400,
      groupCapBytes: 2147483648,
      partialProgressEnabled: false,
      partialProgressMaxCommits: 10,
      removeDanglingDeletes: false,
    });
    expect(
      resolveRewriteOptions({ 'remove-dangling-deletes': true }, { engineGroupCapBytes: MiB })
        .removeDanglingDeletes,
    ).toBe(true);
  });

  it('takes the target from the table’s write.target-file-size-bytes unless the option sets it', () => {
    // Prepare
    const tableProperties = { 'write.target-file-size-bytes': '134217728' };

    // Act
    const fromProperty = resolveRewriteOptions({}, { tableProperties, engineGroupCapBytes: 1 });
    const fromOption = resolveRewriteOptions(
      { 'target-file-size-bytes': 64 * MiB },
      { tableProperties, engineGroupCapBytes: 1 },
    );

    // Assess
    expect(fromProperty).toMatchObject({
      targetFileSizeBytes: 134217728,
      targetSource: 'table-property',
      minFileSizeBytes: 100663296,
    });
    expect(fromOption).toMatchObject({ targetFileSizeBytes: 64 * MiB, targetSource: 'option' });
  });

  it('refuses sizes that contradict the target they meet, and a table property that is not a size', () => {
    // Act
    const contradiction = messageOf(() =>
      resolveRewriteOptions({ 'min-file-size-bytes': 600 * MiB }, { engineGroupCapBytes: 1 }),
    );
    const badProperty = messageOf(() =>
      resolveRewriteOptions(
        {},
        { tableProperties: { 'write.target-file-size-bytes': '512MB' }, engineGroupCapBytes: 1 },
      ),
    );

    // Assess
    expect(contradiction).toBe(
      'The rewriteDataFiles options contradict each other with a target of 536870912 bytes (Iceberg’s default); nothing was planned:\n' +
        '  - target-file-size-bytes: target-file-size-bytes (536870912) must be greater than min-file-size-bytes (629145600), or every output would be small enough to rewrite again; raise it or lower min-file-size-bytes',
    );
    expect(badProperty).toBe(
      'The Iceberg table property write.target-file-size-bytes is "512MB", not a positive whole number of bytes; nothing was planned. Fix the property, or set the rewriteDataFiles option target-file-size-bytes',
    );
  });
});

describe('rewriteDataFiles in the table config', () => {
  it('is taken on an Iceberg table, typed, and refused on a table of another format', () => {
    // Act
    const [iceberg] = parseTableConfigs([
      {
        name: 'clicks',
        prefix: 'clicks',
        format: 'iceberg',
        rewriteDataFiles: { 'min-input-files': '10' },
      },
    ]);
    const issues = issuesOf(() =>
      parseTableConfigs([{ name: 'events', prefix: 'events', rewriteDataFiles: { 'min-input-files': 10 } }]),
    );

    // Assess
    expect(iceberg?.rewriteDataFiles).toEqual({ 'min-input-files': 10 });
    expect(issues).toEqual([
      '0.rewriteDataFiles: rewriteDataFiles is a setting of Apache Iceberg tables (format "iceberg"), and this table\'s format is "parquet": remove it, or set format to "iceberg" if that is what the table is',
    ]);
  });

  it('reaches the functions’ table config from the construct’s props', () => {
    // Prepare
    const props = [
      {
        name: 'clicks',
        prefix: 'clicks/',
        format: 'iceberg' as const,
        rewriteDataFiles: { 'delete-file-threshold': 3, 'rewrite-all': 'false' },
      },
    ];

    // Act
    const [parsed] = parseTableConfigs(tablesJsonOf(props, 'owned-bucket'));

    // Assess
    expect(parsed?.rewriteDataFiles).toEqual({ 'delete-file-threshold': 3, 'rewrite-all': false });
  });

  it('refuses an unknown option with the nearest name, at its path', () => {
    // Act
    const issues = issuesOf(() =>
      parseTableConfigs([
        {
          name: 'clicks',
          prefix: 'clicks',
          format: 'iceberg',
          rewriteDataFiles: { 'target-file-size': 1 },
        },
      ]),
    );

    // Assess
    expect(issues).toEqual([
      '0.rewriteDataFiles.target-file-size: unknown option "target-file-size": did you mean "target-file-size-bytes"? (the options are target-file-size-bytes, min-file-size-bytes, max-file-size-bytes, min-input-files, delete-file-threshold, rewrite-all, max-file-group-size-bytes, partial-progress.enabled, partial-progress.max-commits, remove-dangling-deletes)',
    ]);
  });
});

describe('rewriteDataFiles and where in the run input', () => {
  const tables = parseTableConfigs([
    { name: 'events', bucket: 'lake', prefix: 'events', partitionColumns: ['date'] },
    {
      name: 'clicks',
      bucket: 'lake',
      prefix: 'clicks',
      format: 'iceberg',
      targetFileSizeMB: 256,
      rewriteDataFiles: { 'min-input-files': 10, 'rewrite-all': true },
    },
  ]);
  const options = { executionName: 'run-1', startedAt: 1 };
  const partition = 'data/event_time_hour=2020-01-01-09/action=click';

  function runOf(raw: unknown): RunContext {
    const result = normalizeRunInput(raw, tables, options);
    if (result.mode !== 'single') throw new Error('expected one run');
    return result.run;
  }

  it('lays the request’s options over the table’s name by name, its target in MiB standing in for target-file-size-bytes', () => {
    // Act
    const byTable = runOf({ table: 'clicks', partition });
    const byRequest = runOf({
      table: 'clicks',
      partition,
      targetFileSizeMB: 64,
      rewriteDataFiles: { 'min-input-files': '2' },
      where: "action = 'click'",
    });

    // Assess
    expect(byTable.rewriteDataFiles).toEqual({
      'target-file-size-bytes': 256 * MiB,
      'min-input-files': 10,
      'rewrite-all': true,
    });
    expect(byTable.where).toBeUndefined();
    expect(byRequest.rewriteDataFiles).toEqual({
      'target-file-size-bytes': 64 * MiB,
      'min-input-files': 2,
      'rewrite-all': true,
    });
    expect(byRequest.where).toBe("action = 'click'");
  });

  it('refuses a bad option, a filter that does not parse, and both on a table that is not Iceberg, before any change', () => {
    // Act
    const onIceberg = issuesOf(() =>
      normalizeRunInput(
        {
          table: 'clicks',
          partition,
          rewriteDataFiles: { 'min-input-files': 'many' },
          where: "action = 'click' AND",
        },
        tables,
        options,
      ),
    );
    const onParquet = issuesOf(() =>
      normalizeRunInput(
        {
          table: 'events',
          partition: 'date=2024-01-15',
          rewriteDataFiles: { 'min-input-files': 2 },
          where: "date = '2024-01-15'",
        },
        tables,
        options,
      ),
    );

    // Assess
    expect(onIceberg).toEqual([
      'rewriteDataFiles.min-input-files: min-input-files must be a whole number, not "many"; e.g. 5',
      `where: expected a partition field name, found the end; write e.g. "action = 'click' AND event_time_hour >= '2020-01-01-09'"`,
    ]);
    expect(onParquet).toEqual([
      'rewriteDataFiles: applies to Apache Iceberg tables (format "iceberg"), and table "events" is "parquet"; remove it',
      'where: applies to Apache Iceberg tables (format "iceberg"), and table "events" is "parquet"; remove it',
    ]);
  });
});
