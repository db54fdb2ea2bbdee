// The registry's share of the command line (core/formats/cli.ts, FormatSettings.cli, TableMaintenance.cli,
// TableFormat.history): the CLI registers, parses and documents each format's options by iterating the registered
// formats, so what a command takes is exactly what the formats declare, in registration order.
import { describe, expect, it } from 'vitest';
import { historyFormats } from '../../../../functions/cli/history-table.js';
import { UsageError } from '../../../../functions/core/errors.js';
import {
  formatCliOptions,
  formatCommandHelp,
  formatSettingsFromFlags,
  runInputHelp,
} from '../../../../functions/core/formats/cli.js';
import { formatsTakingRunInput, TABLE_FORMATS } from '../../../../functions/core/formats/index.js';

const formats = [...TABLE_FORMATS.values()];

describe('the formats’ command-line options, composed by the registry', () => {
  it('a committing command takes every format’s options in registration order; a reading one only those read through', () => {
    // Prepare
    const declared = formats.flatMap((f) => f.settings?.cli?.options ?? []);
    const readThrough = formats.flatMap((f) =>
      f.settings?.cli?.forReading === true ? f.settings.cli.options : [],
    );

    // Act
    const commit = formatCliOptions('commit');
    const read = formatCliOptions('read');

    // Assess
    expect(commit.map((o) => o.flags)).toEqual(declared.map((o) => o.flags));
    expect(read.map((o) => o.flags)).toEqual(readThrough.map((o) => o.flags));
    expect(new Set(commit.map((o) => o.flags)).size).toBe(commit.length);
  });

  it('parses each format’s flags into its own settings, as a configured table would hold them', () => {
    // Act
    const delta = formatSettingsFromFlags('delta', { deltaLogStore: 's3-conditional' }, { s3: true });
    const iceberg = formatSettingsFromFlags(
      'iceberg',
      { catalog: 'glue', glueDatabase: 'lake', glueTable: 'events' },
      { s3: true },
    );
    const hive = formatSettingsFromFlags('parquet', {}, { s3: true });

    // Assess
    expect(delta).toEqual({ deltaLogStore: { type: 's3-conditional' } });
    expect(iceberg).toEqual({ catalog: { type: 'glue', database: 'lake', table: 'events' } });
    expect(hive).toEqual({});
  });

  it('refuses a format’s flags given for another format, and skips those a reading command does not take', () => {
    // Act
    const misplaced = () => formatSettingsFromFlags('parquet', { catalog: 'glue' }, { s3: false });
    const reading = formatSettingsFromFlags('delta', {}, { s3: true }, 'read');

    // Assess: on S3 a Delta table's coordination is required to commit, never to read
    expect(misplaced).toThrow(UsageError);
    expect(misplaced).toThrow(/--catalog is a setting of Iceberg tables/);
    expect(reading).toEqual({});
  });
});

describe('the formats’ vacuum options', () => {
  it('map one-to-one onto the vacuum request’s options of the format they belong to', () => {
    // Prepare
    const cliOf = (name: string) => TABLE_FORMATS.get(name)?.maintenance?.cli;

    // Act
    const delta = cliOf('delta')?.requestOf({ retentionHours: 200 });
    const iceberg = cliOf('iceberg')?.requestOf({
      olderThanHours: 0,
      retainLast: 2,
      orphanOlderThanHours: 96,
    });

    // Assess
    expect(delta).toEqual({ deltaRetentionHours: 200 });
    expect(iceberg).toEqual({ icebergOlderThanHours: 0, icebergRetainLast: 2, icebergOrphanGraceHours: 96 });
  });

  it('declare only request options their format’s maintenance accepts', () => {
    // Prepare
    const maintained = formats.flatMap((f) => (f.maintenance?.cli === undefined ? [] : [f.maintenance]));
    const everyFlag = { retentionHours: 200, olderThanHours: 1, retainLast: 1, orphanOlderThanHours: 96 };

    // Act
    const foreign = maintained.flatMap((m) =>
      Object.keys(m.cli?.requestOf(everyFlag) ?? {}).filter((key) => !Object.hasOwn(m.requestOptions, key)),
    );

    // Assess
    expect(maintained.length).toBeGreaterThan(0);
    expect(foreign).toEqual([]);
  });
});

describe('a table’s own history', () => {
  it('is read for exactly the formats that declare it', () => {
    // Act
    const keeping = historyFormats().map((f) => f.name);

    // Assess
    expect(keeping).toEqual(formats.filter((f) => f.history !== undefined).map((f) => f.name));
    expect(keeping).toContain('delta');
  });
});

describe('the formats’ words in the commands’ help, composed by the registry', () => {
  it('gives each format’s paragraph of a command under its title and name, in registration order, and none for a format without one', () => {
    // Prepare
    const withCompact = formats.filter((f) => f.help?.compact !== undefined);
    const withSettle = formats.filter((f) => f.help?.settle !== undefined);

    // Act
    const compact = formatCommandHelp('compact');
    const settle = formatCommandHelp('settle');

    // Assess
    expect(compact).toEqual(
      withCompact.map((f) => ({ name: f.name, title: f.title, text: f.help?.compact })),
    );
    expect(settle.map((p) => p.name)).toEqual(withSettle.map((f) => f.name));
    // Every format whose tables need options of their own to commit says in compact's help how it commits.
    const withOptions = formats.filter((f) => (f.settings?.cli?.options.length ?? 0) > 0).map((f) => f.name);
    expect(withOptions.filter((name) => !compact.some((p) => p.name === name))).toEqual([]);
  });

  it('describes a run input by the title of every format that takes it, and nothing for a field no format describes', () => {
    // Prepare
    const takingWhere = formatsTakingRunInput('where').map((f) => f.title);

    // Act
    const where = runInputHelp('where');
    const none = runInputHelp('noSuchField');

    // Assess
    expect(takingWhere.length).toBeGreaterThan(0);
    expect(where.split('; ').map((part) => part.slice(0, part.indexOf(':')))).toEqual(takingWhere);
    expect(none).toBe('');
  });
});
