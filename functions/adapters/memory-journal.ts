// An in-memory Journal with the same conditional semantics as the DynamoDB one, for unit and
// fault tests of the commit protocol; entries are deep-copied so callers cannot mutate state.
import { JournalConflictError } from '../core/errors.js';
import type { GroupJournalEntry, GroupState, Journal, JournalPatch } from '../ports/journal.js';

export type JournalMethod = 'get' | 'create' | 'transition' | 'listRun';

export class MemoryJournal implements Journal {
  private readonly entries = new Map<string, GroupJournalEntry>();

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
    return structuredClone(next);
  }

  async listRun(runId: string): Promise<GroupJournalEntry[]> {
    await this.interceptor?.('listRun');
    return [...this.entries.values()].filter((e) => e.runId === runId).map((e) => structuredClone(e));
  }
}
