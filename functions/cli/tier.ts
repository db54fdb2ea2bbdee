// The `tier` command's definition: its options and help, light to load; what it does is in tier-run.ts.
// `lake-compactor tier`: the scheduled tiering's own core, run to completion on one S3 table location; a dry
// run moves nothing, and a real run prints every move before it makes any (in-place copies, ETag-conditioned).
//
// Its options map one-to-one onto the tiering function's input (events/tiering-*.json) and are validated by
// the same schema before any object is listed. Invalid usage exits 2; a run that could not move all exits 1.
// A table whose log or metadata owns its files is not tiered (its `--format` is refused, and so is such a table met
// in the location): see core/maintenance/tiering.ts for why a copy in place is not harmless there.

import { type Command, InvalidArgumentError, Option } from 'commander';
import { PARTITION_DATE_FORMATS } from '../core/policy.js';
import { formatOption } from './args.js';
import { withInterruptReport } from './compact-progress.js';
import { type MaintenanceIo, MaintenanceProgress } from './maintenance-shared.js';
import type * as Impl from './tier-run.js';
import type { TierCliOptions } from './tier-run.js';

export type { TierCliOptions, TierCliReport, TierJob } from './tier-run.js';

/** Runs `tier`, its implementation (and the AWS SDK and Parquet engine it reaches) loaded only when it runs: help, --version and usage errors stay fast. */
export const runTier: typeof Impl.runTier = async (...args) =>
  (await import('./tier-run.js')).runTier(...args);

/** Adds `tier` to the CLI program. */
export function registerTierCommand(program: Command, io: MaintenanceIo): void {
  program
    .command('tier')
    .description('Move data files of old partitions to colder S3 storage classes (lists first)')
    .argument('<uri>', 'table location: s3://bucket/prefix')
    .option('--dry-run', 'list what would move where, and why; move nothing')
    .option(
      '--rule <days:class>',
      'after <days> move to <class>; repeat for more (default: 30:STANDARD_IA 90:GLACIER_IR)',
      collect,
    )
    .option('--date-column <name>', 'partition column holding the date (default: date)')
    .addOption(
      new Option(
        '--date-format <format>',
        'format of the date partition value (default: yyyy-MM-dd)',
      ).choices(PARTITION_DATE_FORMATS),
    )
    .option(
      '--min-object-kb <n>',
      'smaller objects stay out of the 128 KB-minimum classes (default: 128)',
      nonNegativeNumber,
    )
    .option('--table <name>', 'table name in the report (default: last segment of the URI)')
    .option('--yes', 'move without asking (required when stdin is not a terminal)')
    .option('--json', 'print the report as JSON (the tiering function’s report, every move listed)')
    .addOption(formatOption())
    .addHelpText(
      'after',
      `
Same rules as the scheduled tiering function (events/tiering-*.json): by the partition's date value,
never warmer, never objects under 128 KB into IA or Glacier IR. Each move is an in-place copy with the
new storage class, conditioned on the listed ETag. Unlike the schedule, the CLI moves unless --dry-run is
given; it always prints the list first and asks, or needs --yes.`,
    )
    .action(async (uri: string, opts: TierCliOptions) => {
      // Ctrl-C says how many objects were moved and that the same tier finishes the rest (exit 130).
      const progress = new MaintenanceProgress(uri, opts.dryRun === true, {
        command: 'tier',
        past: 'moved',
        safe: 'Each move is one in-place copy: an object is in its old class or its new one, never lost or doubled.',
      });
      await withInterruptReport(progress, io.out, () => runTier(uri, opts, io, progress));
    });
}

function nonNegativeNumber(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < 0) {
    throw new InvalidArgumentError('expected a number of 0 or more.');
  }
  return n;
}

function collect(value: string, previous: readonly string[] | undefined): string[] {
  return [...(previous ?? []), value];
}
