// What a `lake-compactor compact` has done so far, kept as it goes, so Ctrl-C can say it: which groups were committed,
// which were rolled back, which one was in flight (its journal entry decides its fate at the next run) and what to run
// next. Why: an interrupted run is recovered exactly (the journal; see compact.ts), but an operator who sees the
// process exit 130 in silence does not know that, nor what is already done.
import { plural } from '../core/words.js';

/** The exit code of a process ended by SIGINT, as a shell reports it (128 + 2). */
export const SIGINT_EXIT_CODE = 130;

export class CompactProgress {
  private partitions: readonly string[] | undefined;
  private readonly committed: string[] = [];
  private readonly rolledBack: string[] = [];
  private readonly done = new Set<string>();
  private current: { label: string; planned: number; ended: number } | undefined;

  constructor(
    private readonly uri: string,
    private readonly dryRun: boolean,
  ) {}

  /** The partitions this run will compact, in order (after settling what an earlier run left). */
  listed(partitions: readonly string[]): void {
    this.partitions = partitions.map(labelOf);
  }

  /** A partition's plan has `groups` groups; they run one after another. */
  planned(partition: string, groups: number): void {
    this.current = { label: labelOf(partition), planned: groups, ended: 0 };
  }

  /** A group ended: committed, or rolled back (left alone because an input changed, or failed and undone). */
  groupEnded(partition: string, groupId: string, committed: boolean): void {
    (committed ? this.committed : this.rolledBack).push(`${labelOf(partition)} ${groupId}`);
    if (this.current !== undefined) this.current.ended += 1;
  }

  /** A partition is finished (every group ended, or there was nothing to do). */
  partitionDone(partition: string): void {
    this.done.add(labelOf(partition));
    this.current = undefined;
  }

  /** What Ctrl-C prints: what this run committed and rolled back, what was in flight, and what to run next. */
  interruptedReport(): string[] {
    if (this.dryRun) return ['interrupted (Ctrl-C) during a dry run: nothing was written.'];
    const lines = ['interrupted (Ctrl-C):'];
    lines.push(`  committed: ${listed(this.committed)}`);
    lines.push(`  rolled back: ${listed(this.rolledBack)}`);
    const current = this.current;
    if (this.partitions === undefined) {
      lines.push(
        '  in flight: settling what an earlier run left, or listing the table; nothing of this run was planned',
      );
    } else if (current !== undefined && current.ended < current.planned) {
      lines.push(
        `  in flight: ${current.label}, group ${current.ended + 1} of ${current.planned}: journaled, so the next run rolls it forward if it had started publishing and back otherwise; no row is lost or kept twice`,
      );
    }
    const notStarted = this.partitions?.filter((p) => !this.done.has(p) && p !== current?.label) ?? [];
    if (notStarted.length > 0)
      lines.push(`  not started: ${plural(notStarted.length, 'partition')} (${preview(notStarted)})`);
    lines.push(
      `next: run the same compact again (it settles the interrupted group first, then compacts the rest), or lake-compactor settle ${this.uri} (with the same --format options) to only settle it.`,
    );
    return lines;
  }
}

const labelOf = (partition: string): string => partition || '(root)';

function listed(groups: readonly string[]): string {
  return groups.length === 0 ? 'nothing' : `${plural(groups.length, 'group')} (${preview(groups)})`;
}

/** The first few of a list and a count of the rest: a table with thousands of partitions prints one line. */
function preview(items: readonly string[]): string {
  const shown = items.slice(0, 5).join(', ');
  return items.length > 5 ? `${shown}, … and ${items.length - 5} more` : shown;
}

/**
 * Runs `work` with a SIGINT handler that prints `progress`'s report through `print` and ends the process with
 * {@link SIGINT_EXIT_CODE}: what a signal interrupts (a put, a commit) is what a killed run leaves, which the journal
 * settles. A second Ctrl-C while it prints gets Node's default (the handler is installed once).
 */
export async function withInterruptReport<T>(
  progress: Pick<CompactProgress, 'interruptedReport'>,
  print: (text: string) => void,
  work: () => Promise<T>,
): Promise<T> {
  const onSigint = (): void => {
    for (const line of progress.interruptedReport()) print(line);
    process.exit(SIGINT_EXIT_CODE);
  };
  process.once('SIGINT', onSigint);
  try {
    return await work();
  } finally {
    process.removeListener('SIGINT', onSigint);
  }
}
