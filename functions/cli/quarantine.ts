// The `quarantine` command's definition: its options and help, light to load; what it does is in quarantine-run.ts.
// `lake-compactor quarantine <uri>`: lists the input files a rewrite failed on (which later plans leave out)
// and, with --clear, releases one or all of them; reads and writes quarantine records only, never data.

import type { Command } from 'commander';
import { workRootOption } from './args.js';
import type * as Impl from './quarantine-run.js';
import type { QuarantineIo, QuarantineOptions } from './quarantine-run.js';
import { addStackOption, type StackIo } from './stack-outputs.js';

export type { QuarantineIo, QuarantineOptions, QuarantineResult } from './quarantine-run.js';

/** Runs `quarantine`, its implementation (and the AWS SDK and Parquet engine it reaches) loaded only when it runs: help, --version and usage errors stay fast. */
export const runQuarantine: typeof Impl.runQuarantine = async (...args) =>
  (await import('./quarantine-run.js')).runQuarantine(...args);

/** Adds `quarantine` to the CLI program. */
export function registerQuarantineCommand(program: Command, io: QuarantineIo & StackIo): void {
  const command = program
    .command('quarantine')
    .description('List the files a rewrite failed on (left out of later plans), or release them with --clear')
    .argument('<uri>', 'table location: s3://bucket/prefix or a local folder')
    .option('--partition <path>', 'only this partition, e.g. date=2024-01-15')
    .option('--clear [key]', 'release this key (as listed), or without a key every listed file')
    .option(
      '--state-table <name>',
      "the deployed workflow's DynamoDB state table (default: env LAKE_COMPACTOR_TABLE; without one, the records `compact` keeps in the store)",
    );
  addStackOption(command, io, ['stateTable'])
    .option('--table <name>', 'table name the records are kept under (default: last segment of the URI)')
    .option('--json', 'print JSON')
    .addOption(workRootOption())
    .addHelpText(
      'after',
      `
A file is quarantined when a rewrite fails on it by itself (a corrupt page, an encoding the engine cannot
reproduce): its group fails that run, and later runs leave the file out and compact the rest of its
partition. Replacing or removing the file releases it automatically (the next plan sees a new ETag);
--clear releases it now, so the next run tries it again (and quarantines it again if it still fails).`,
    )
    .action(async (uri: string, opts: QuarantineOptions) => {
      await runQuarantine(uri, opts, io);
    });
}
