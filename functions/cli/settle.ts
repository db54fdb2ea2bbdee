// The `settle` command's definition: its options and help, light to load; what it does is in settle-run.ts.
// `lake-compactor settle`: brings every group an interrupted `compact` left open under a location to its
// end through the location's own journal — forward once publishing started, back before — and says so per group.
//
// `compact` runs the same settle before it plans, so `settle` is for when you want the table consistent
// now without compacting more (or to see what a kill left). Exit 0 when every open group settled, 1 when
// one could not be (it stays fenced; the reason is printed), 2 on a usage error.

import type { Command } from 'commander';
import { plural } from '../core/words.js';
import { formatOption, workRootOption } from './args.js';
import { withInterruptReport } from './compact-progress.js';
import { formatsHelp } from './format-help.js';
import { addFormatOptions } from './format-options.js';
import type * as Impl from './settle-run.js';
import type { SettleCliOptions, SettledPartition, SettleIo, SettleProgressListener } from './settle-run.js';
import { addStackOption, type StackIo } from './stack-outputs.js';

export type { SettleCliOptions, SettledPartition, SettleIo } from './settle-run.js';

/** Runs `settle`, its implementation (and the AWS SDK and Parquet engine it reaches) loaded only when it runs: help, --version and usage errors stay fast. */
export const runSettle: typeof Impl.runSettle = async (...args) =>
  (await import('./settle-run.js')).runSettle(...args);

/** Adds `settle` to the CLI program. */
export function registerSettleCommand(program: Command, io: SettleIo & StackIo): void {
  const command = program
    .command('settle')
    .description('Finish or undo what an interrupted compact left (rolls each open group forward or back)')
    .argument('<uri>', 'table location: s3://bucket/prefix or a local folder')
    .option('--partition <path>', 'only this partition, e.g. date=2024-01-15 (default: every partition)')
    .option('--table <name>', 'the table name compact used (default: last segment of the URI)')
    .option(
      '--state-table <name>',
      "settle a deployment's partition (needs --partition): its workflow journal and lease in this DynamoDB table, as a console settle run",
    );
  addStackOption(command, io, ['stateTable']).addOption(workRootOption()).addOption(formatOption());
  addFormatOptions(command)
    .addHelpText(
      'after',
      `
Every group "lake-compactor compact" starts is journaled under the location's _lake-compactor/journal/.
A group that had started publishing when its run died is rolled forward (outputs in, inputs retired: deleted,
or copied to the trash first by a sort or z-order); one that had not is rolled back (staging removed; its
inputs left as they were). compact does this by itself before planning; settle does only this. Exit 1 when a
group could not be settled (reason printed).
${formatsHelp('settle')}`,
    )
    .action(async (uri: string, opts: SettleCliOptions) => {
      const progress = new SettleProgress(uri);
      await withInterruptReport(progress, io.out, () => runSettle(uri, opts, io, progress));
    });
}

/**
 * How far a `settle` got, kept as it goes, so Ctrl-C (through compact's withInterruptReport) can say which partitions
 * were settled, which one was being settled, and what to run next. Why it is safe to stop anywhere: every group moves
 * by one journaled transition at a time, so a group stopped midway is still open in the journal, and the next
 * settle (or compact) takes it from where it is.
 */
export class SettleProgress implements SettleProgressListener {
  private partitions: readonly string[] | undefined;
  private readonly done: SettledPartition[] = [];
  private current: string | undefined;
  private lease: { readonly runId: string; readonly stateTable: string } | undefined;

  constructor(private readonly uri: string) {}

  leased(lease: { readonly runId: string; readonly stateTable: string }): void {
    this.lease = lease;
  }

  listed(partitions: readonly string[]): void {
    this.partitions = partitions.map(labelOf);
  }

  started(partition: string): void {
    this.current = labelOf(partition);
  }

  settled(result: SettledPartition): void {
    this.done.push(result);
    this.current = undefined;
  }

  /** What Ctrl-C prints: what was settled, what was in flight and left, and what to run next. */
  interruptedReport(): string[] {
    const lines = ['\ninterrupted (Ctrl-C):'];
    const groups = this.done.reduce((n, p) => n + p.report.settled.length, 0);
    lines.push(
      `  settled: ${this.done.length === 0 ? 'nothing' : `${plural(groups, 'group')} in ${plural(this.done.length, 'partition')} (${this.done.map((p) => labelOf(p.partition)).join(', ')})`}`,
    );
    if (this.partitions === undefined)
      lines.push(
        '  in flight: finding or settling the open groups (each moves one journaled step at a time: a group stopped midway stays open, no row is lost or kept twice)',
      );
    else if (this.current !== undefined)
      lines.push(
        `  in flight: ${this.current}: each of its groups moves one journaled step at a time, so a group stopped midway is still open and no row is lost or kept twice`,
      );
    const left = (this.partitions ?? []).filter(
      (p) => p !== this.current && !this.done.some((d) => labelOf(d.partition) === p),
    );
    if (left.length > 0)
      lines.push(`  not started: ${plural(left.length, 'partition')} (${left.join(', ')})`);
    if (this.lease !== undefined && this.done.length === 0) {
      // A deployed partition's lease names this settle's own run id, which the next settle does not share: it is
      // refused (LeaseHeld) until the sweep finds no execution of that id and releases the lease.
      lines.push(
        `  the partition stays leased to ${this.lease.runId} in state table ${this.lease.stateTable} (no workflow run compacts it meanwhile) until the sweep releases it: at its first run 5 minutes or more after this command last renewed it (at most a minute ago); a settle run before then is refused (LeaseHeld), nothing changed.`,
      );
    }
    lines.push(
      `next: run lake-compactor settle ${this.uri} again (the same options): it settles what is still open.`,
    );
    return lines;
  }
}

const labelOf = (partition: string): string => partition || '(root)';
