// One Journal over two: each run's entries live in exactly one of them (chosen by its run id), and a
// partition's open groups are those of both — so a reader such as vacuum sees CLI and workflow runs alike.
import { CLI_RUN_ID } from '../core/run-input.js';
import type {
  GroupJournalEntry,
  GroupState,
  Journal,
  JournalPartition,
  JournalPatch,
  OpenGroup,
} from '../ports/journal.js';

/**
 * Routes by run id: `lake-compactor compact` runs (see {@link CLI_RUN_ID}) to `cliRuns` (the store journal
 * in the bucket or folder), every other run to `otherRuns` (the deployment's DynamoDB journal, or one that
 * knows nothing). Why: a bucket can hold both, and vacuum must judge each run's trash and staging by the
 * journal that run actually wrote.
 */
export class RoutedJournal implements Journal {
  constructor(
    private readonly cliRuns: Journal,
    private readonly otherRuns: Journal,
  ) {}

  private of(runId: string): Journal {
    return CLI_RUN_ID.test(runId) ? this.cliRuns : this.otherRuns;
  }

  get(runId: string, groupId: string): Promise<GroupJournalEntry | undefined> {
    return this.of(runId).get(runId, groupId);
  }

  create(entry: Omit<GroupJournalEntry, 'revision'>): Promise<GroupJournalEntry> {
    return this.of(entry.runId).create(entry);
  }

  transition(
    current: GroupJournalEntry,
    to: GroupState,
    patch: JournalPatch,
    now: number,
  ): Promise<GroupJournalEntry> {
    return this.of(current.runId).transition(current, to, patch, now);
  }

  listRun(runId: string): Promise<GroupJournalEntry[]> {
    return this.of(runId).listRun(runId);
  }

  async listOpen(partition: JournalPartition): Promise<OpenGroup[]> {
    const [cli, other] = await Promise.all([
      this.cliRuns.listOpen(partition),
      this.otherRuns.listOpen(partition),
    ]);
    return [
      ...cli.filter((g) => CLI_RUN_ID.test(g.runId)),
      ...other.filter((g) => !CLI_RUN_ID.test(g.runId)),
    ];
  }

  closeFence(partition: JournalPartition, group: OpenGroup): Promise<void> {
    return this.of(group.runId).closeFence(partition, group);
  }
}
