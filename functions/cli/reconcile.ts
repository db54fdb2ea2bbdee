// The `reconcile` command's definition: its options and help, light to load; what it does is in reconcile-run.ts.
// `lake-compactor reconcile --stack <name> [--table <name>]`: runs the deployed sweep function in reconcile mode
// (the input of events/sweep-reconcile.json), which recounts each partition of the tables from their buckets (after
// the first deploy over existing data, or when counts drifted), and prints its report.

import type { Command } from 'commander';
import type * as Impl from './reconcile-run.js';
import type { ReconcileIo, ReconcileOptions } from './reconcile-run.js';
import { addStackOption, type StackIo } from './stack-outputs.js';

export type { LambdaPort, ReconcileIo, ReconcileOptions } from './reconcile-run.js';

/** Runs `reconcile`, its implementation (and the AWS SDK it reaches) loaded only when it runs: help, --version and usage errors stay fast. */
export const runReconcile: typeof Impl.runReconcile = async (...args) =>
  (await import('./reconcile-run.js')).runReconcile(...args);

/** Adds `reconcile` to the CLI program. */
export function registerReconcileCommand(program: Command, io: ReconcileIo & StackIo): void {
  const command = program
    .command('reconcile')
    .description(
      "Recount the deployment's partitions from their buckets: runs the sweep function in reconcile mode and prints its report",
    )
    .option('--table <name>', "only this table of the deployment's config (default: every table)")
    .option('--sweep-function <name>', 'the deployed sweep Lambda (default: from --stack)');
  addStackOption(command, io, ['sweepFunction'])
    .addHelpText(
      'after',
      `
Invokes the sweep function with {"mode":"reconcile"} (and "table" with --table), the input of
events/sweep-reconcile.json, and waits for it. Run it after the first deploy over existing data, or when
status shows counts that drifted. Exit 1 when the function fails (its error is printed).`,
    )
    .action(async (opts: ReconcileOptions) => {
      await runReconcile(opts, io);
    });
}
