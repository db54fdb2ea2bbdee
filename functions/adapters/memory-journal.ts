// An in-memory Journal with the same conditional semantics as the DynamoDB one, for unit and
// fault tests of the commit protocol; entries are deep-copied so callers cannot mutate state.
import { JournalConflictError } from '../core/errors.js';
import {
  type GroupJournalEntry,
  type GroupState,
  isSettled,
  type Journal,
  type JournalPartition,
  type JournalPatch,
  type OpenGroup,
} from '../ports/journal.js';

export type JournalMethod = 'get' | 'create' | 'transition' | 'listRun' | 'listOpen' | 'closeFence';

export class MemoryJournal implements Journal {
  private readonly entries = new Map<string, GroupJournalEntry>();
  /** Fences by partition (`table#partition`), each a set of `runId/groupId`. */
  private readonly fences = new Map<string, Set<string>>();

  /** Runs before every request; throwing fails it before it changes anything (crash injection). */
  constructor(private readonly interceptor?: (method: JournalMethod) => void | Promise<void>) {}

  async get(runId: string, groupId: string): Promise<GroupJournalEntry | undefined> {
    await this.interceptor?.('get');
    const entry = this.entries.get(`${runId}/${groupId}`);
    return entry ? structuredClone(entry) : undefined;
  }

  async create(entry: Omit<GroupJournalEntry, 'revision'>): Promise<GroupJournalEntry> {
    await this.interceptor?.('create');
    const id = `${entry.runId}/${entry.groupId}`;
    if (this.entries.has(id)) {
      throw new JournalConflictError(
        `Journal entry ${id} exists already; read it and continue from its state.`,
      );
    }
    const created = { ...structuredClone(entry), revision: 1 };
    this.entries.set(id, created);
    if (!isSettled(created)) this.fencesOf(entry).add(id);
    return structuredClone(created);
  }

  async transition(
    current: GroupJournalEntry,
    to: GroupState,
    patch: JournalPatch,
    now: number,
  ): Promise<GroupJournalEntry> {
    await this.interceptor?.('transition');
    const id = `${current.runId}/${current.groupId}`;
    const stored = this.entries.get(id);
    if (!stored || stored.revision !== current.revision) {
      throw new JournalConflictError(
        `Journal entry ${id} moved to ${stored?.state ?? 'nothing'} concurrently; re-read it and continue.`,
      );
    }
    const next: GroupJournalEntry = {
      ...stored,
      ...structuredClone(patch),
      state: to,
      updatedAt: now,
      revision: stored.revision + 1,
    };
    this.entries.set(id, next);
    if (isSettled(next)) this.fencesOf(next).delete(id);
    return structuredClone(next);
  }

  async listRun(runId: string): Promise<GroupJournalEntry[]> {
    await this.interceptor?.('listRun');
    return [...this.entries.values()].filter((e) => e.runId === runId).map((e) => structuredClone(e));
  }

  async listOpen(partition: JournalPartition): Promise<OpenGroup[]> {
    await this.interceptor?.('listOpen');
    return [...this.fencesOf(partition)].sort().map((id) => {
      const slash = id.indexOf('/');
      return { runId: id.slice(0, slash), groupId: id.slice(slash + 1) };
    });
  }

  async closeFence(partition: JournalPartition, group: OpenGroup): Promise<void> {
    await this.interceptor?.('closeFence');
    this.fencesOf(partition).delete(`${group.runId}/${group.groupId}`);
  }

  private fencesOf(partition: JournalPartition): Set<string> {
    const key = `${partition.table}#${partition.partition}`;
    let set = this.fences.get(key);
    if (set === undefined) {
      set = new Set();
      this.fences.set(key, set);
    }
    return set;
  }
}
