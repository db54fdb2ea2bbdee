// The `vacuum` command's definition: its options and help, light to load; what it does is in vacuum-run.ts.
// `lake-compactor vacuum`: the scheduled vacuum's own core, run to completion on one table location; a dry
// run deletes nothing, and a real run prints everything it will delete, and why, before it does. A format whose
// log or metadata owns its table (its own VACUUM, or expire_snapshots then
// remove_orphan_files) is maintained its own way, through TableFormat.maintenance: that format declares its vacuum
// options, their help and their checks (MaintenanceCli), and its table settings' options (FormatSettings.cli: the
// catalog or commit coordination it is read through), so this command names no format.
//
// Its options map one-to-one onto the vacuum function's input (events/vacuum-*.json) and are validated by
// the same schema, with the same retention gate, before any object is listed. Invalid usage exits 2; a run
// that could not delete everything exits 1.

import type { Command } from 'commander';
import { MIN_RETENTION_HOURS } from '../core/maintenance/vacuum.js';
import { formatOption, positiveNumber, workRootOption } from './args.js';
import { withInterruptReport } from './compact-progress.js';
import { addFormatCliOptions, addFormatOptions } from './format-options.js';
import { type MaintenanceIo, MaintenanceProgress } from './maintenance-shared.js';
import { addStackOption, type StackIo } from './stack-outputs.js';
import { maintenanceClis, type VacuumCliOptions } from './vacuum-options.js';
import type * as Impl from './vacuum-run.js';

export type { VacuumCliOptions } from './vacuum-options.js';
export type { VacuumCliReport, VacuumJob } from './vacuum-run.js';

/** Runs `vacuum`, its implementation (and the AWS SDK and Parquet engine it reaches) loaded only when it runs: help, --version and usage errors stay fast. */
export const runVacuum: typeof Impl.runVacuum = async (...args) =>
  (await import('./vacuum-run.js')).runVacuum(...args);

/** Adds `vacuum` to the CLI program. */
export function registerVacuumCommand(program: Command, io: MaintenanceIo & StackIo): void {
  const command = program
    .command('vacuum')
    .description('Delete what compaction left behind once it is past the retention (lists first)')
    .argument('<uri>', 'table location: s3://bucket/prefix or a local folder')
    .option('--dry-run', 'list what would be deleted, with sizes and reasons; delete nothing')
    .option(
      '--retention-hours <h>',
      `keep retired inputs and trash this long (default and minimum ${MIN_RETENTION_HOURS} unless overridden)${maintenanceClis()
        .map((cli) => cli.retentionHoursHelp ?? '')
        .join('')}`,
      positiveNumber,
    )
    .option(
      '--allow-retention-below-minimum',
      `accept a retention under ${MIN_RETENTION_HOURS} h (readers and restores need that window)`,
    )
    .option('--debris-age-hours <h>', 'age after which writer scratch (_temporary/) goes', positiveNumber, 72)
    .option(
      '--abandoned-after-hours <h>',
      'age after which staging of a run that never published goes',
      positiveNumber,
      24,
    )
    .option(
      '--state-table <name>',
      'DynamoDB state table with the workflow journal (default: env LAKE_COMPACTOR_TABLE)',
    );
  addStackOption(command, io, ['stateTable'])
    .option(
      '--table <name>',
      "the table's name in the deployment's config (default: last segment of the URI)",
    )
    .option('--yes', 'delete without asking (required when stdin is not a terminal)')
    .option('--json', 'print the report as JSON (the vacuum function’s report, every candidate listed)');
  // Each format's own vacuum options, then where and what the location is, then each format's table settings.
  addFormatCliOptions(
    command,
    maintenanceClis().flatMap((cli) => cli.options),
  )
    .addOption(workRootOption())
    .addOption(formatOption());
  addFormatOptions(command)
    .addHelpText(
      'after',
      `
${maintenanceClis()
  .map((cli) => `${cli.help}\n`)
  .join('')}Same input as the scheduled vacuum function (events/vacuum-*.json): --retention-hours, --dry-run,
--allow-retention-below-minimum, --debris-age-hours, --abandoned-after-hours. Unlike the schedule, the CLI
deletes unless --dry-run is given; it always prints the list first and asks, or needs --yes.
Without a state table, retired object versions are not looked for and the trash and staging of
state-machine runs are kept (their journal decides). Runs of "lake-compactor compact" are judged by their
journal in the location's _lake-compactor/journal/ (an unsettled group keeps what it needs; a settled
group's journal entry goes after the retention), or by age when an older version left no journal.
On a local folder, temp files of interrupted writes go once older than --debris-age-hours.
Scope: trash copies and writer debris of keys under <uri>; staged outputs and unfinished uploads of the
bucket's (or folder's) _lake-compactor/ work area, judged run by run; unfinished uploads under <uri>.`,
    )
    .action(async (uri: string, opts: VacuumCliOptions) => {
      // Ctrl-C says how many objects were deleted and that the same vacuum finishes the rest (exit 130).
      const progress = new MaintenanceProgress(uri, opts.dryRun === true, {
        command: 'vacuum',
        past: 'deleted',
        safe: 'Each delete is final and on its own: nothing is half deleted, and nothing a run still needs was listed.',
      });
      await withInterruptReport(progress, io.out, () => runVacuum(uri, opts, io, undefined, progress));
    });
}
