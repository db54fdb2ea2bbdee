// The Journal port: one durable record per (run, group) that says how far its commit got, so a
// crashed or retried commit can roll forward or back without guessing. Transitions are conditional.

/** Ordered lifecycle of a group's commit; `done` and `aborted` are terminal. */
export const GROUP_STATES = [
  'planned',
  'staged',
  'verified',
  'publishing',
  'published',
  'retired',
  'done',
  'aborted',
] as const;
export type GroupState = (typeof GROUP_STATES)[number];

/** An input exactly as planned; it is retired only while its ETag is still this one. */
export interface JournalInput {
  readonly key: string;
  readonly etag: string;
  readonly size: number;
  /** Version seen at the pre-publish check (versioned buckets), to restore it on undo. */
  readonly versionId?: string;
}

/** One output: written to staging by the rewrite, copied to `finalKey` by the commit. */
export interface JournalOutput {
  readonly stagingKey: string;
  readonly finalKey: string;
  readonly etag: string;
  readonly size: number;
  readonly rows: number;
}

/** How inputs leave the table: a delete on a versioned bucket, a move to trash on an unversioned one. */
export type RetireMode = 'delete-versioned' | 'trash';

export interface GroupJournalEntry {
  readonly runId: string;
  readonly groupId: string;
  readonly table: string;
  readonly partition: string;
  readonly state: GroupState;
  readonly inputs: readonly JournalInput[];
  readonly outputs: readonly JournalOutput[];
  readonly retireMode: RetireMode;
  /** Where the run's staged outputs live; everything under it belongs to this group. */
  readonly stagingPrefix: string;
  /** Where `trash` mode moves inputs (keys keep their table-relative path under it). */
  readonly trashPrefix: string;
  /** Why the group was aborted, or the conflict that was resolved. */
  readonly reason?: string;
  /**
   * Set when an abort must undo a partial publish (outputs copied, some inputs retired): `pending`
   * until every output is removed and every retired input restored, then `done`.
   */
  readonly undo?: 'pending' | 'done';
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly publishStartedAt?: number;
  readonly retiredAt?: number;
  /** Incremented by every transition; transitions are conditioned on it. */
  readonly revision: number;
}

export type JournalPatch = Partial<
  Pick<GroupJournalEntry, 'inputs' | 'outputs' | 'reason' | 'undo' | 'publishStartedAt' | 'retiredAt'>
>;

export interface Journal {
  get(runId: string, groupId: string): Promise<GroupJournalEntry | undefined>;
  /** Creates the entry; JournalConflictError when it exists already. */
  create(entry: Omit<GroupJournalEntry, 'revision'>): Promise<GroupJournalEntry>;
  /**
   * Moves the entry to `to` only if it is still at `revision` (so two concurrent commits of the
   * same group cannot both act); JournalConflictError otherwise.
   */
  transition(
    current: GroupJournalEntry,
    to: GroupState,
    patch: JournalPatch,
    now: number,
  ): Promise<GroupJournalEntry>;
  /** Every group entry of a run. */
  listRun(runId: string): Promise<GroupJournalEntry[]>;
}
