// The `status` command's definition: its options and help, light to load; what it does is in status-run.ts.
// `lake-compactor status`: reads partition statistics, trigger state and quarantined files from the state
// table (index queries, no scan) and prints them by compaction priority with the last decision's reasons.

import type { Command } from 'commander';
import { addStackOption, type StackIo } from './stack-outputs.js';
import type * as Impl from './status-run.js';
import type { StatusIo, StatusOptions } from './status-run.js';

export type { StatusIo, StatusOptions, StatusRow } from './status-run.js';

/** Runs `status`, its implementation (and the AWS SDK and Parquet engine it reaches) loaded only when it runs: help, --version and usage errors stay fast. */
export const runStatus: typeof Impl.runStatus = async (...args) =>
  (await import('./status-run.js')).runStatus(...args);

/** Adds `status` to the CLI program. */
export function registerStatusCommand(program: Command, io: StatusIo & StackIo): void {
  const command = program
    .command('status')
    .description('Show partitions by compaction priority with their trigger state and last decision')
    .option('--table <name>', 'only this table')
    .option('--due', 'only partitions the sweep would evaluate now')
    .option('--state-table <name>', 'DynamoDB state table (default: env LAKE_COMPACTOR_TABLE)');
  addStackOption(command, io, ['stateTable'])
    .option('--config <file>', 'deployment config naming the tables (default: ./lake-compactor.config.json)')
    .option('--quarantined', 'also list each quarantined file (key, since, run, reason)')
    .option('--json', 'print JSON (each partition with its quarantined files)')
    .action(async (opts: StatusOptions) => {
      await runStatus(opts, io);
    });
}
