// The `report` command's definition: its options and help, light to load; what it does is in report-run.ts.
// `lake-compactor report <uri> --html out.html`: gathers the table's live files (through its format's view, as plan
// and compact read it), the stored plans, the quarantined files, the runs the CLI journaled in the location and (with
// a state table) the run history, and writes one self-contained HTML page; it reads only.

import type { Command } from 'commander';
import { DEFAULT_TABLE_FORMAT, TABLE_FORMATS, type TableFormatName } from '../core/formats/index.js';
import { formatOption, positiveInteger, positiveNumber, workRootOption } from './args.js';
import { wrapHelp } from './format-help.js';
import { addFormatOptions, type FormatCliOptions, formatSettingsOf } from './format-options.js';
import type * as Impl from './report-run.js';
import type { ReportIo, ReportOptions } from './report-run.js';
import { addStackOption, type StackIo } from './stack-outputs.js';

export type { HistorySource, ReportIo, ReportOptions, ReportResult } from './report-run.js';

/** Runs `report`, its implementation (and the AWS SDK and Parquet engine it reaches) loaded only when it runs: help, --version and usage errors stay fast. */
export const runReport: typeof Impl.runReport = async (...args) =>
  (await import('./report-run.js')).runReport(...args);

/** Adds `report` to the CLI program. */
export function registerReportCommand(program: Command, io: ReportIo & StackIo): void {
  const command = program
    .command('report')
    .description(
      'Write an HTML report: file-size histograms before/after, fragmentation over time, bytes and cost',
    )
    .argument('<uri>', 'table location: s3://bucket/prefix or a local folder')
    .requiredOption('--html <file>', 'where to write the self-contained HTML page')
    .option(
      '--state-table <name>',
      'DynamoDB state table with the run history (default: env LAKE_COMPACTOR_TABLE)',
    );
  addStackOption(command, io, ['stateTable'])
    .option('--table <name>', 'table name the history is recorded under (default: last segment of the URI)')
    .option(
      '--target-mb <n>',
      'target file size in MiB; small = below 75% of it (default: the newest plan’s target, else 128)',
      positiveNumber,
    )
    .option('--max-plans <n>', 'newest stored plans to read', positiveInteger, 1000)
    .option('--limit <n>', 'newest history items to read', positiveInteger, 500)
    .addOption(workRootOption())
    .addOption(formatOption());
  addFormatOptions(command, 'read')
    .addHelpText(
      'after',
      `\n${wrapHelp(`Reads only. "Now" is the table's live data files: the listing of a Hive-style folder, the live files of a ${loggedTitles()} table as its log or metadata says (--format), never files it has removed but not yet deleted. "Before" is each partition's latest carried-out run as its stored plan (_lake-compactor/plans/) recorded it. Each run's inputs → outputs, bytes, estimated cost and duration come from the state table's history, or, for runs the CLI made, from its journal in the location (_lake-compactor/journal/).`)}`,
    )
    .action(async (uri: string, opts: ReportOptions & FormatCliOptions & { format?: TableFormatName }) => {
      const formatSettings = formatSettingsOf(uri, opts.format ?? DEFAULT_TABLE_FORMAT, opts, 'read');
      await runReport(uri, { ...opts, formatSettings }, io);
    });
}

/** The titles of the registered formats whose log or metadata says which files are live, as "A, B or C". */
function loggedTitles(): string {
  const titles = [...TABLE_FORMATS.values()].filter((f) => f.ownsEverythingUnderRoot).map((f) => f.title);
  return titles.length <= 1 ? titles.join('') : `${titles.slice(0, -1).join(', ')} or ${titles.at(-1)}`;
}
