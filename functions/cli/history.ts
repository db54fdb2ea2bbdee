// The `history` command's definition: its options and help, light to load; what it does is in history-run.ts.
// `lake-compactor history`: reads the runs' history items (`PART#<table>#<partition>` / `RUN#<start>#<run>`)
// from the state table with key queries only (no scan) and prints them newest first, at most --limit; given a
// location (a folder or s3:// prefix), the runs the CLI recorded in its journal there and, for a table whose format
// records them (TableFormat.history), the runs its log records (history-table.ts).

import type { Command } from 'commander';
import { UsageError } from '../core/errors.js';
import { DEFAULT_TABLE_FORMAT, type TableFormatName } from '../core/formats/index.js';
import { formatOption, positiveInteger, workRootOption } from './args.js';
import type * as Impl from './history-run.js';
import type { HistoryIo, HistoryOptions } from './history-run.js';
import { historyFormats, runTableHistory } from './history-table.js';
import { addStackOption, type StackIo } from './stack-outputs.js';

export type { HistoryIo, HistoryOptions, HistoryRow } from './history-run.js';

/** Runs `history`, its implementation (and the AWS SDK and Parquet engine it reaches) loaded only when it runs: help, --version and usage errors stay fast. */
export const runHistory: typeof Impl.runHistory = async (...args) =>
  (await import('./history-run.js')).runHistory(...args);

/** Adds `history` to the CLI program: a deployment's runs from its state table, or a table's own from its log. */
export function registerHistoryCommand(program: Command, io: HistoryIo & StackIo): void {
  // The formats whose tables record our runs (TableFormat.history), as the help names them.
  const keeping = historyFormats();
  const command = program
    .command('history')
    .description(
      `Show compaction runs newest first: recorded in the state table, or (with <uri>) in the CLI's journal in the location and (${keeping.map((f) => `--format ${f.name}`).join(' or ')}) in the table’s log`,
    )
    .argument(
      '[uri]',
      `table location (s3://bucket/prefix or a local folder): read the runs compact recorded in its journal, and the log of ${keeping.map((f) => f.history.tableLabel).join(' or ')}`,
    )
    .option('--state-table <name>', 'DynamoDB state table (default: env LAKE_COMPACTOR_TABLE)');
  addStackOption(command, io, ['stateTable'])
    .option(
      '--table <name>',
      'only this table (default: every table in env TABLES; with <uri>: the name compact used, default the last segment of the URI)',
    )
    .option('--partition <path>', 'only this partition, e.g. date=2024-01-15 (needs --table)')
    .option('--limit <n>', 'most runs to show', positiveInteger, 20)
    .option('--json', 'print JSON (the full history items)')
    .addOption(formatOption())
    .addOption(workRootOption())
    .action(
      async (
        uri: string | undefined,
        opts: HistoryOptions & { format: TableFormatName; workRoot?: string },
      ) => {
        if (uri === undefined) {
          if (opts.format !== DEFAULT_TABLE_FORMAT) {
            throw new UsageError(
              `--format ${opts.format} names the format of a table location: pass the table's <uri> to read the runs its log records, or drop --format to read the state table`,
            );
          }
          if (opts.workRoot !== undefined) {
            throw new UsageError(
              "--work-root names where a location's journal lives: pass the table's <uri> with it, or drop it to read the state table",
            );
          }
          await runHistory(opts, io);
          return;
        }
        const stateOnly = (['stateTable', 'partition'] as const).filter((k) => opts[k] !== undefined);
        if (stateOnly.length > 0) {
          throw new UsageError(
            '--state-table and --partition read a deployment’s state table; with <uri> the runs come from the table’s own log and the CLI’s journal in the location: drop one or the other',
          );
        }
        await runTableHistory(
          uri,
          {
            format: opts.format,
            limit: opts.limit ?? 20,
            ...(opts.json ? { json: true } : {}),
            ...(opts.table === undefined ? {} : { table: opts.table }),
            ...(opts.workRoot === undefined ? {} : { workRoot: opts.workRoot }),
          },
          io,
        );
      },
    );
}
