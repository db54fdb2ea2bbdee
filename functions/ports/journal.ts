// The Journal port: one durable record per (run, group) that says how far its commit got, so a
// crashed or retried commit can roll forward or back without guessing. Transitions are conditional.
//
// Every group that is not settled is also findable from its partition (`listOpen`): a fence that is
// written with the entry and removed only when the group settles. Runs settle a partition's open
// groups before planning it, so a half-published group can never be planned over (DESIGN: fence rule).
import type { RowSource } from '../core/parquet/provenance.js';
import type { ColumnProjection } from '../core/projection.js';

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
  /**
   * Version of it (versioned buckets), to restore it on undo and for vacuum to delete once retired: the version the
   * rewrite read, as its GET responses named it (see workflow/input-reads.ts), else the one the pre-publish HEAD saw.
   */
  readonly versionId?: string;
  /** Rows its footer had at planning (deleted rows included): the rewrite refuses a file that now has others. */
  readonly rows?: number;
  /**
   * Rows the table format deletes from it without rewriting it, as planned: the rewrite drops them, verify
   * expects the outputs to hold `rows − deletes.rows` per input, and the commit aborts if the format's deletes
   * of the file are no longer these (`id`).
   */
  readonly deletes?: JournalInputDeletes;
  /**
   * Row lineage the rewrite writes into every row (Iceberg v3): what a row without its own `_row_id` /
   * `_last_updated_sequence_number` inherits, as decimal text (planning's `InputRowLineage`).
   */
  readonly rowLineage?: { readonly firstRowId: string; readonly sequenceNumber: string };
  /** The input projected onto the schema its table format writes (see core/projection.ts), as planned. */
  readonly projection?: ColumnProjection;
  /**
   * Planned from the listing without its footer (a tiny file, see planning's `footerDeferred`): the rewrite learns its
   * rows and schema from the one read that fetches it whole, and may leave it out (ParquetEngine's `InputFile`).
   */
  readonly footerDeferred?: boolean;
}

/** See {@link JournalInput.deletes} (planning's `InputDeletes`, as the journal keeps it). */
export interface JournalInputDeletes {
  /** The format's unique id of the deletes (e.g. a deletion vector's unique id). */
  readonly id: string;
  /** How many rows they delete. */
  readonly rows: number;
  /** What the format reads the positions from (e.g. a deletion vector's descriptor). */
  readonly descriptor: Readonly<Record<string, string | number>>;
}

/** One output: written to staging by the rewrite, copied to `finalKey` by the commit. */
export interface JournalOutput {
  readonly stagingKey: string;
  readonly finalKey: string;
  readonly etag: string;
  readonly size: number;
  readonly rows: number;
  /**
   * Where the output's rows come from, in order (the rewrite's `sources`): what retire mode `delete-rebuild`
   * re-creates a retired input from on undo. Absent when the rewrite reordered rows. Kept with the outputs, so a
   * group too large for one DynamoDB item has them in its S3 manifest with the rest of its file lists.
   */
  readonly sources?: readonly RowSource[];
}

/**
 * What a table format records about a group beyond the generic fields, as flat JSON (e.g. the table root,
 * the log version the inputs were read at and, once written, the version that committed the group). Opaque to
 * everything but the format that wrote it.
 */
export type FormatState = Readonly<Record<string, string | number | boolean>>;

/**
 * How inputs leave the table, and what an undo restores them from: `delete-versioned` deletes (undo: the
 * input's old version, versioned buckets only); `trash` copies every input to trash first (undo: the copy);
 * `delete-rebuild` deletes without a copy (undo: the input re-created from the outputs' rows, as the
 * rewrite's `sources` locate them — row-identical, not byte-identical; only for rewrites that keep row order).
 */
export const RETIRE_MODES = ['delete-versioned', 'trash', 'delete-rebuild'] as const;
export type RetireMode = (typeof RETIRE_MODES)[number];

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
  /** Why the group retires differently than its run asked (e.g. delete mode fell back to trash). */
  readonly note?: string;
  /**
   * The name of the table format the group was planned with (`parquet`, `delta`, …): it must be committed and
   * settled by that format's protocol, whatever settles it (absent on entries written before it was recorded,
   * which were all `parquet`).
   */
  readonly format?: string;
  /** The table format's own record of the group (see {@link FormatState}). */
  readonly formatState?: FormatState;
  /**
   * How the outputs order rows, when not in input order: a format may record it in its commit (an
   * OPTIMIZE's `zOrderBy`). Absent for bin-packing.
   */
  readonly layout?: { readonly strategy: 'sort' | 'zorder'; readonly columns: readonly string[] };
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
  Pick<
    GroupJournalEntry,
    | 'inputs'
    | 'outputs'
    | 'reason'
    | 'undo'
    | 'publishStartedAt'
    | 'retiredAt'
    | 'retireMode'
    | 'note'
    | 'formatState'
  >
>;

/** The partition a group belongs to (structurally the profiler's PartitionRef). */
export interface JournalPartition {
  readonly table: string;
  readonly partition: string;
}

/** A group found through its partition's fence: its entry may or may not be settled yet. */
export interface OpenGroup {
  readonly runId: string;
  readonly groupId: string;
}

/**
 * Whether a group's commit has ended for good: `done`, or `aborted` with nothing left to undo. Only
 * then may the partition be planned again; anything else is rolled forward or back first.
 */
export function isSettled(entry: Pick<GroupJournalEntry, 'state' | 'undo'>): boolean {
  return entry.state === 'done' || (entry.state === 'aborted' && entry.undo !== 'pending');
}

export interface Journal {
  get(runId: string, groupId: string): Promise<GroupJournalEntry | undefined>;
  /**
   * Creates the entry and its partition fence (the fence first, or both at once); JournalConflictError
   * when the entry exists already.
   */
  create(entry: Omit<GroupJournalEntry, 'revision'>): Promise<GroupJournalEntry>;
  /**
   * Moves the entry to `to` only if it is still at `revision` (so two concurrent commits of the
   * same group cannot both act); JournalConflictError otherwise. A transition that settles the group
   * (see {@link isSettled}) removes its fence (with the entry, or after it).
   */
  transition(
    current: GroupJournalEntry,
    to: GroupState,
    patch: JournalPatch,
    now: number,
  ): Promise<GroupJournalEntry>;
  /** Every group entry of a run. */
  listRun(runId: string): Promise<GroupJournalEntry[]>;
  /**
   * The groups of a partition that may not be settled, strongly consistent: every unsettled entry is
   * listed; an entry whose fence removal was interrupted (or never created) may be listed too.
   */
  listOpen(partition: JournalPartition): Promise<OpenGroup[]>;
  /** Removes the fence of a group whose entry is settled or missing (idempotent). */
  closeFence(partition: JournalPartition, group: OpenGroup): Promise<void>;
}
