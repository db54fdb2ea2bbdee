// The `undo` command's definition: its options and help, light to load; what it does is in undo-run.ts.
// `lake-compactor undo <uri> <run>`: reverts a finished `compact` run of the location through the table format's
// own undo, or refuses with nothing changed. Exit 0 when undone (or already undone), 1 when refused, 2 on a usage
// error.

import type { Command } from 'commander';
import { TABLE_FORMATS } from '../core/formats/index.js';
import { formatOption, workRootOption } from './args.js';
import { withInterruptReport } from './compact-progress.js';
import { addFormatOptions } from './format-options.js';
import { addStackOption, type StackIo } from './stack-outputs.js';
import type * as Impl from './undo-run.js';
import type { UndoCliOptions, UndoIo } from './undo-run.js';

export type { UndoCliOptions, UndoHooks, UndoIo, UndoReport } from './undo-run.js';

/** Runs `undo`, its implementation (and the AWS SDK and Parquet engine it reaches) loaded only when it runs. */
export const runUndo: typeof Impl.runUndo = async (...args) =>
  (await import('./undo-run.js')).runUndo(...args);

/** Adds `undo` to the CLI program. */
export function registerUndoCommand(program: Command, io: UndoIo & StackIo): void {
  const command = program
    .command('undo')
    .description(
      "Revert a finished compact run: the table's files of before the run come back (or nothing changes)",
    )
    .argument('<uri>', 'table location the run compacted: s3://bucket/prefix or a local folder')
    .argument(
      '<run>',
      "the run id compact printed (cli-…), or a deployed run's execution name (with --stack)",
    )
    .option('--dry-run', 'say what would change; change nothing')
    .option('--table <name>', 'the table name compact used (default: last segment of the URI)')
    .option(
      '--state-table <name>',
      "undo a deployment's run (its execution name): read it from the workflow journal in this DynamoDB table",
    );
  addStackOption(command, io, ['stateTable']).addOption(workRootOption()).addOption(formatOption());
  addFormatOptions(command)
    .addHelpText(
      'after',
      `
Reads the run from the location's journal (_lake-compactor/journal/), or with --stack/--state-table a run of
the deployed workflow from the state table's journal, and reverts it the table format's way:
${undoFormatsHelp()}
Refused with nothing changed (exit 1) when the table moved on: an output rewritten or removed since (a later run:
undo it first), a file at an input's key again, a trash copy, an old version or an input removed by
a vacuum, a run that did not finish (settle it first), or a run id the journal does not hold. A second undo of the same run does nothing.`,
    )
    .action(async (uri: string, run: string, opts: UndoCliOptions) => {
      await withInterruptReport(
        { interruptedReport: () => undoInterruptedReport(uri, run, opts.stateTable) },
        io.out,
        () => runUndo(uri, run, opts, io),
      );
    });
}

/**
 * What Ctrl-C during `undo` prints: the undo restores every input before it deletes an output, so wherever it
 * stopped no row is missing (some may be listed twice), and its record says it started, so the same command
 * finishes it. A deployed run's undo may leave its partition leased to it (`undo-<run>`): the same command
 * takes that lease again as its holder, finishes, and releases it.
 */
export function undoInterruptedReport(uri: string, run: string, stateTable?: string): string[] {
  return [
    `\ninterrupted: the undo of run ${run} may be half done. Inputs are restored before any output is deleted, so no row is missing; rows of the run may be listed twice until it finishes.`,
    ...(stateTable === undefined
      ? []
      : [
          `the partition may stay leased to undo-${run} in state table ${stateTable} (no workflow run compacts it) until the undo is run again.`,
        ]),
    `next: run lake-compactor undo ${uri} ${run} again (the same options): it takes what is done as done and finishes.`,
  ];
}

/** The width `undo --help` wraps each format's summary to. */
const HELP_WIDTH = 116;

/** How each registered format reverts a run (its RunUndo.summary), and which formats refuse, for `undo --help`. */
function undoFormatsHelp(): string {
  const formats = [...TABLE_FORMATS.values()];
  const undoing = formats.flatMap((f) =>
    f.undo === undefined ? [] : [{ title: f.title, summary: f.undo.summary }],
  );
  const column = 2 + Math.max(...undoing.map((u) => u.title.length)) + 2;
  const lines: string[] = [];
  for (const { title, summary } of undoing) {
    let line = `  ${title}`.padEnd(column);
    let fresh = true;
    for (const word of summary.split(' ')) {
      if (!fresh && line.length + 1 + word.length > HELP_WIDTH) {
        lines.push(line);
        line = ' '.repeat(column);
        fresh = true;
      }
      line += fresh ? word : ` ${word}`;
      fresh = false;
    }
    lines.push(line);
  }
  const refusing = formats.filter((f) => f.undo === undefined).map((f) => f.title);
  if (refusing.length > 0)
    lines.push(
      `  ${refusing.join(', ')}: refused by name; its compaction changed no row, so the table can stay as it is.`,
    );
  return lines.join('\n');
}
