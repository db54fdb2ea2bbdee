// The `compact` command's definition: its options and help, light to load; what it does is in compact-run.ts.
// `lake-compactor compact`: runs the workflow's own steps (plan → rewrite → verify → commit → finalize)
// in-process on a local folder or S3 prefix; `--dry-run` writes nothing, and any failed group exits non-zero.
//
// Its journal lives in the location itself, so a run killed at any moment is settled by the next one
// (or by `lake-compactor settle`) exactly as the workflow settles a dead execution: no row lost or doubled.

import { type Command, InvalidArgumentError, Option } from 'commander';
import { InvalidInputError, UsageError } from '../core/errors.js';
import { type FormatRunInput, formatRunInputFromPairs } from '../core/formats/index.js';
import { STATISTICS_MODES } from '../core/parquet/statistics-policy.js';
import { READERS } from '../core/readers.js';
import { STRATEGIES } from '../core/run-input.js';
import {
  CODECS,
  DEFAULT_CODEC,
  DEFAULT_SCHEMA_FIDELITY,
  SCHEMA_FIDELITIES,
} from '../ports/parquet-engine.js';
import { formatOption, workRootOption } from './args.js';
import { CompactProgress, withInterruptReport } from './compact-progress.js';
import { formatsHelp, runOptionHelp } from './format-help.js';
import { addFormatOptions } from './format-options.js';
import { addPlanningOptions } from './planning-options.js';

export { CLI_RUN_ID } from '../core/run-input.js';

import type * as Impl from './compact-run.js';
import type { CompactIo, CompactOptions } from './compact-run.js';
import { addStackOption, type StackIo } from './stack-outputs.js';

export type { CompactHooks, CompactIo, CompactOptions, CompactPartitionResult } from './compact-run.js';

/** Runs `compact`, its implementation (and the AWS SDK and Parquet engine it reaches) loaded only when it runs: help, --version and usage errors stay fast. */
export const runCompact: typeof Impl.runCompact = async (...args) =>
  (await import('./compact-run.js')).runCompact(...args);

/** Adds `compact` to the CLI program. */
export function registerCompactCommand(program: Command, io: CompactIo & StackIo): void {
  const command: Command = program
    .command('compact')
    .description('Compact small files now: plan → rewrite → verify → commit, in this process')
    .argument('<uri>', 'table location: s3://bucket/prefix or a local folder')
    .option('--partition <path>', 'only this partition, e.g. date=2024-01-15 (default: every partition)')
    .option('--dry-run', 'plan and print only; nothing is written');
  addPlanningOptions(command)
    .option(
      '--rewrite-option <name=value>',
      runOptionHelp('rewriteDataFiles', 'a planner option of the format, repeatable'),
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .option('--where <filter>', runOptionHelp('where', 'a partition filter of the format'))
    .addOption(new Option('--codec <codec>', 'output compression').choices(CODECS).default(DEFAULT_CODEC))
    .option(
      '--delta-encoding',
      'write integer and timestamp columns DELTA_BINARY_PACKED where smaller (readers must support it: Spark >= 3.3, Trino, Athena v3, DuckDB, pyarrow)',
    )
    .option('--no-delta-encoding', 'never write DELTA_BINARY_PACKED, whatever --readers allow')
    .option(
      '--readers <list>',
      `comma-separated reader families the outputs must stay readable by (${READERS.join(', ')}); DELTA_BINARY_PACKED is used iff every one reads it`,
      (v: string) =>
        v
          .split(',')
          .map((r) => r.trim())
          .filter((r) => r !== ''),
    )
    .addOption(
      new Option(
        '--statistics <mode>',
        'column-chunk statistics: all, or auto (none on string columns whose sampled values are nearly all distinct and in no order: min/max cannot prune them)',
      ).choices(STATISTICS_MODES),
    )
    .addOption(
      new Option(
        '--schema-fidelity <fidelity>',
        "exact: outputs keep the inputs' Parquet schema, inputs the writer cannot reproduce are refused; logical: legacy forms (INT96, BYTE_ARRAY/FIXED decimals, 2-level lists, MAP_KEY_VALUE) are written in the standard ones, values unchanged",
      )
        .choices(SCHEMA_FIDELITIES)
        .default(DEFAULT_SCHEMA_FIDELITY),
    )
    .addOption(
      new Option('--strategy <strategy>', 'row order of the outputs: input order, a sort, or a Z-order')
        .choices(STRATEGIES)
        .default('binpack'),
    )
    .option('--columns <list>', 'comma-separated columns of --strategy sort or zorder', (v: string) =>
      v
        .split(',')
        .map((c) => c.trim())
        .filter((c) => c !== ''),
    )
    .option(
      '--workers <n>',
      "Parquet engine worker threads each group is encoded and verified with, 1-16 (default 1: this thread); also the most a table's encodeWorkers may take",
      workersOf,
    )
    .option('--table <name>', 'table name in summaries (default: last segment of the URI)')
    .option(
      '--state-table <name>',
      "beside a deployment: take each partition's lease in its DynamoDB state table and journal there, as a workflow run (--table must be the deployment's table name)",
    )
    .addOption(workRootOption())
    .addOption(formatOption());
  addStackOption(command, io, ['stateTable']);
  addFormatOptions(command)
    .addHelpText(
      'after',
      `
Each group's progress is journaled in the location itself (_lake-compactor/journal/), so a run killed at
any moment is recovered by the next compact, before it plans anything (or by lake-compactor settle <uri>):
a group that had started publishing is rolled forward, any other rolled back — no row is lost or kept
twice. Until then a reader listing the table may see a publishing group's rows twice. Temp files a killed
run left are removed by the next run; vacuum removes old ones.
Beside a deployment, give --stack <name> (or --state-table): each partition's lease is then taken in the
deployment's state table (refused while a workflow run holds it; renewed while compact works) and its groups are
journaled there, so the workflow, the sweep, settle --stack and undo --stack see them; --table must be the
deployment's table name. Without it no lease is taken in DynamoDB: run one compact per table at a time, pause the
deployment's triggers first, or use the Step Functions workflow for deployed, unattended or large runs.
${formatsHelp('compact')}`,
    )
    .action(async (uri: string, opts: CompactOptions & { rewriteOption?: string[] }) => {
      const { rewriteOption, ...rest } = opts;
      const rewriteDataFiles = rewriteOption === undefined ? undefined : rewriteOptionsOf(rewriteOption);
      // Ctrl-C prints what was committed and rolled back, and what to run next, then exits 130.
      const progress = new CompactProgress(uri, opts.dryRun ?? false);
      await withInterruptReport(progress, io.out, () =>
        runCompact(uri, { ...rest, ...(rewriteDataFiles === undefined ? {} : { rewriteDataFiles }) }, io, {
          progress,
        }),
      );
    });
}

/** The `--rewrite-option` pairs as options. @throws UsageError listing every problem. */
export function rewriteOptionsOf(pairs: readonly string[]): FormatRunInput['rewriteDataFiles'] {
  try {
    return formatRunInputFromPairs('rewriteDataFiles', pairs);
  } catch (err) {
    if (err instanceof InvalidInputError)
      throw new UsageError(err.message.replace('rewriteDataFiles options', '--rewrite-option values'));
    throw err;
  }
}

/** The `--workers` value: an integer from 1 to 16, the range of the table setting `encodeWorkers`. */
function workersOf(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isInteger(n) || n < 1 || n > 16)
    throw new InvalidArgumentError('expected an integer from 1 to 16.');
  return n;
}
