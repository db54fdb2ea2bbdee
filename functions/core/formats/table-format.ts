// The TableFormat port: the one interface every table format implements (snapshot, plan input, commit, vacuum
// rules, own metadata writes), so the workflow, the CLI, vacuum and the profiler never branch on a format.
//
// Where a format goes: **a format's support is one folder under `functions/core/formats/` (e.g.
// `formats/<name>/`) implementing this interface, plus one registration line in `formats/index.ts`** — the config
// schema, the construct's props, the CLI and every refusal take the list of formats from that registry.
//
// Why the port lives here and not in `functions/ports/`: the ports there are I/O boundaries that adapters
// implement (S3, DynamoDB, Step Functions). A table format is pure core logic over those ports (it lists,
// reads footers or logs and commits through an ObjectStore and a Journal it is handed), its types are core
// types (plan inputs, journal outcomes, vacuum decisions), and no adapter ever implements it. Keeping the port
// beside its implementations makes "a format is one folder" literally true.
import type { z } from 'zod';
import type { Clock } from '../../ports/clock.js';
import type { FormatState, GroupJournalEntry, Journal, JournalInput } from '../../ports/journal.js';
import type { ObjectInfo, ObjectStore } from '../../ports/object-store.js';
import type { InputFile, ParquetEngine, RewriteOptions } from '../../ports/parquet-engine.js';
import type { DeletedRows } from '../deletes/deleted-rows.js';
import { CompactorError } from '../errors.js';
import type { PartitionValue } from '../partition.js';
import type { PartitionPlan, PlanInput, PlanInputFile, PlanOptions, PlanSnapshot } from '../planning.js';
import type { FormatTriggerRule } from '../policy.js';
import type { ForeignTable } from './foreign-tables.js';
import type { FormatCliOption, FormatSettings } from './format-settings.js';

// ---------------------------------------------------------------------------------------------------------
// Snapshot: what the table holds now
// ---------------------------------------------------------------------------------------------------------

export interface SnapshotOptions {
  /** Read every candidate's footer for row count and schema fingerprint (2 ranged GETs at most per file). */
  readonly readFooters?: boolean;
  /**
   * With `readFooters`: files of at most this many bytes are not read; they are listed with `footerDeferred` for the
   * rewrite to read whole once (see planning's FOOTER_DEFERRED_MAX_BYTES). A format that plans from its own metadata
   * (rows and schema from a log, not from footers) may ignore it. Absent: every footer is read.
   */
  readonly deferFootersUpTo?: number;
  /** Footer reads in flight; small-file latency dominates, so this is high by default. */
  readonly concurrency?: number;
  /** When the snapshot is taken (epoch ms), recorded as the plan's snapshot. */
  readonly now: number;
  /**
   * The run's options this format owns, as its run context resolved them (what `FormatPlanRequest.options` carries),
   * for a format whose listing depends on them (Hive-style Parquet: whether a partition's schema populations are
   * unified, which needs the footers' schemas the listing reads). None: the format's defaults.
   */
  readonly formatOptions?: Readonly<Record<string, unknown>>;
}

/** Something under the location the format will not rewrite, and why. */
export interface IgnoredObject {
  readonly key: string;
  readonly reason: string;
}

/** One partition's live data files. */
export interface SnapshotPartition {
  /** Raw partition path relative to the table root ('' when unpartitioned). */
  readonly partition: string;
  readonly values: readonly PartitionValue[];
  /**
   * Live data files, sorted by key: size, ETag, and with footers read, rows and schema fingerprint. A file
   * that must stay in its partition but cannot be rewritten (an unreadable footer) carries `unreadable`.
   */
  readonly files: readonly PlanInputFile[];
}

/** A table's current state, as one format reads it (a listing, a log version or a snapshot). */
export interface TableSnapshot {
  readonly tableRoot: string;
  /** When it was taken, epoch ms: the plan's snapshot. */
  readonly listedAt: number;
  /** Sorted by partition path. */
  readonly partitions: readonly SnapshotPartition[];
  /**
   * Everything under the root that must not be touched, each with why: non-data objects (markers, logs, hidden,
   * non-Parquet) and — in a format with deletes — data files with deletes or features the engine cannot keep.
   */
  readonly ignored: readonly IgnoredObject[];
  /**
   * Tables of another format whose log or metadata the snapshot met (one per root, keys relative to the store):
   * non-empty means the location is, or holds, a table this format must not treat as its own.
   */
  readonly foreignTables: readonly ForeignTable[];
  /**
   * What the format must remember of this snapshot to commit against it (e.g. the log version read), carried by
   * the plan into every group's journal entry. Undefined for a format whose listing is its own state (Hive).
   */
  readonly formatState?: FormatState;
  /** The table's own properties, for a format whose planning reads them (e.g. `write.target-file-size-bytes`). */
  readonly properties?: Readonly<Record<string, string>>;
}

/** Where one partition of a table lies: what a run knows before it plans. */
export interface PartitionLocation {
  /** The table's key prefix ('' for a bucket-root table, else without a trailing `/`). */
  readonly tableRoot: string;
  /** The partition's path relative to the table root ('' when unpartitioned). */
  readonly partition: string;
  /** The key prefix of the partition's directory ('' or ending with `/`). */
  readonly partitionDir: string;
}

/** The live files of one partition, as a run plans them. */
export interface PartitionFiles {
  /** Live data files of the partition, sorted by key, footers read. */
  readonly files: readonly PlanInputFile[];
  /** The plan's snapshot: when it was taken and, per format, which table version. */
  readonly snapshot: PlanSnapshot;
  /** See {@link TableSnapshot.formatState}: recorded in the plan and in every group's journal entry. */
  readonly formatState?: FormatState;
  /** The partition's values by field name, for a `where` filter (e.g. the partition tuple's fields). */
  readonly values?: readonly PartitionValue[];
  /** See {@link TableSnapshot.properties}. */
  readonly properties?: Readonly<Record<string, string>>;
  /**
   * Why the format offers nothing to plan now although nothing is wrong (the table's declared quiet window is
   * closed): `files` is empty, and the plan plans nothing and gives this as its reason.
   */
  readonly refusal?: string;
}

/** What a format's own planner gets besides the partition's files (see {@link TableFormat.planPartition}). */
export interface FormatPlanRequest {
  /** The bin-pack options the run resolved; `maxGroupBytes` is what one compact step may rewrite. */
  readonly binpack: PlanOptions;
  /**
   * The run's inputs this format owns, as its run-input fragment resolved them into the run context (e.g. the
   * `rewrite_data_files` options, the table's then the request's); opaque here, read only by the format.
   */
  readonly options?: Readonly<Record<string, unknown>>;
  /** The operator's partition filter, in the format's own language (`FormatRunSettings.partitionFilter`). */
  readonly where?: string;
  /** The partition's values, as {@link PartitionFiles.values}. */
  readonly values?: readonly PartitionValue[];
  /** The table's properties, as {@link PartitionFiles.properties}. */
  readonly properties?: Readonly<Record<string, string>>;
}

// ---------------------------------------------------------------------------------------------------------
// Commit: publish a verified group, retire exactly its planned inputs
// ---------------------------------------------------------------------------------------------------------

export interface CommitDeps {
  readonly store: ObjectStore;
  readonly journal: Journal;
  readonly clock: Clock;
  /** Requests in flight per step (HEADs, copies). */
  readonly concurrency?: number;
  /**
   * The Parquet engine, needed only to undo a `delete-rebuild` group (Hive): a retired input is re-created by
   * rewriting the staged outputs that hold its rows with every other row dropped. Absent: such an undo stops
   * with InputRebuildError and the group stays fenced (nothing lost: its rows are in the published outputs)
   * until a step that has the engine settles it. Every other commit, rollback and undo works without it.
   */
  readonly engine?: Pick<ParquetEngine, 'rewriteGroup' | 'verifyOutputs'>;
}

export interface CommitConflict {
  readonly key: string;
  readonly reason: string;
  /**
   * Not a concurrent change but a writer that does not coordinate its commits the way the table's configuration
   * declares (see CoordinationMismatchError): the group aborts like on a conflict, and the step reports it so the
   * function counts it in `CoordinationRefusals`, which is alarmed.
   */
  readonly coordinationMismatch?: boolean;
}

export interface CommitOutcome {
  /**
   * `pending`: the group's outputs are in the table, but its format commits the run's groups together, once (e.g.
   * one completed compaction instant for all of its file slices); the group stays open until that run-level commit,
   * which its `rollback` makes — finalize, `settle` and the sweep call it — or until it is aborted with its siblings.
   */
  readonly state: 'done' | 'aborted' | 'pending';
  /** Output keys now in the partition. */
  readonly published: readonly string[];
  /** Input keys retired from the partition. */
  readonly retired: readonly string[];
  /** Inputs that changed or vanished since planning and were therefore left alone. */
  readonly conflicts: readonly CommitConflict[];
  /**
   * How long a listing reader could see both the inputs and the outputs: from the first output
   * copy to the end of the retiring round, in ms. Undefined when nothing was published.
   */
  readonly visibilityWindowMs?: number;
  readonly reason?: string;
}

/** What a format's {@link TableFormat.tableService} is handed. */
export interface TableServiceDeps {
  readonly store: ObjectStore;
  readonly clock: Clock;
  readonly engine: Pick<ParquetEngine, 'rewriteGroup' | 'verifyOutputs'>;
  /**
   * The run the service works for: a format names it in what it schedules on the table, so a later run can tell a
   * pending plan of a dead run of ours from another writer's.
   */
  readonly runId?: string;
  /**
   * The journal the caller's runs are recorded in: a format tells a pending plan of a live run of ours (a group of
   * its run still unsettled there) from a dead one's before it takes the plan over.
   */
  readonly journal?: Pick<Journal, 'listRun'>;
  /** Worker threads the engine may encode and verify the service's outputs with (the caller's `--workers`). @default 1 */
  readonly workers?: number;
}

/**
 * What the plan step hands a format's {@link TableFormat.planService}: where the run's partition lies, the run, and
 * how to record a plan before anything of it is written to the table.
 */
export interface ServicePlanRequest {
  readonly location: PartitionLocation;
  readonly table: string;
  readonly runId: string;
  /** When the plan is made (epoch ms): its snapshot. */
  readonly now: number;
  /** The run's bin-pack options, recorded in the plan as every plan records its options. */
  readonly binpack: PlanOptions;
  /**
   * The plan an earlier attempt of this step stored (a retry): the format returns it when it is one of its service's,
   * after making sure the table holds what it wrote for it (e.g. its pending instant), else undefined, writing nothing.
   */
  readonly stored?: PartitionPlan;
  /**
   * Stores `plan` as the run's plan and journals its groups (`planned`, each with the plan's and its own
   * formatState): the format calls it once the plan is fixed and before it writes anything of it to the table, so
   * whatever it then writes is named by the journal and settled from it after a crash. Idempotent.
   */
  record(plan: PartitionPlan): Promise<void>;
}

/** What a table service did: whether it changed the table, and its report lines. */
export interface TableServiceOutcome {
  readonly changed: boolean;
  readonly lines: readonly string[];
}

/** A liveness signal the table's own writers read, renewed every `everyMs` while a step works on a pending group. */
export interface KeepAlive {
  readonly everyMs: number;
  renew(): Promise<void>;
}

/**
 * What a format decided before one group is rewritten (see {@link TableFormat.prepareGroup}): the group may go on,
 * with the journal entry as the format left it, the names its outputs must have and what the rewrite must set in
 * them; or it conflicts with the table already, and is aborted with nothing written.
 */
export type PreparedGroup =
  | {
      readonly kind: 'ready';
      /** The entry as the format left it (its `formatState` may record what it wrote, e.g. a pending instant). */
      readonly entry: GroupJournalEntry;
      /**
       * The file name of the group's `index`-th output, staged and published alike (the rows may name their own file,
       * so the staged name is the final one); the workflow's own naming when omitted.
       */
      readonly outputFileName?: (index: number) => string;
      /**
       * Per-output values the format's readers need in the files (a column naming the file, index footer entries);
       * `targetFileSizeBytes` when the group's output count is the format's, not the run's target (e.g. a log
       * merge: one new base file per file group, whatever its size). `schemaFidelity: 'exact'` when the format's own
       * readers need every file in the table's exact physical schema: it wins over the run's `logical`.
       */
      readonly rewrite?: Pick<
        RewriteOptions,
        'derivedColumns' | 'outputFooterEntries' | 'targetFileSizeBytes' | 'schemaFidelity'
      >;
      /**
       * The engine's inputs, when the group's rows are not its planned files' rows (a log merge: the base file less
       * the rows its log files replace or delete, and the surviving log records staged as one Parquet file of the base
       * file's schema), so the rewrite's fingerprint, which verify compares the outputs with, is of that merged view.
       * Omitted: the planned files, as planned.
       */
      readonly inputs?: readonly InputFile[];
      /**
       * A liveness signal the table's own writers read while the group is pending (e.g. a pending instant's heartbeat,
       * without which a writer takes the plan for a dead one and rolls it back), renewed every `everyMs` while the
       * group is rewritten. A failed renewal is not the group's failure: its commit re-checks the table.
       */
      readonly keepAlive?: KeepAlive;
    }
  | { readonly kind: 'conflict'; readonly reason: string };

// ---------------------------------------------------------------------------------------------------------
// Vacuum: what may go, what must stay
// ---------------------------------------------------------------------------------------------------------

/** A pure decision over one object: remove it (with reason) or keep it (with reason), or ignore it. */
export type VacuumDecision =
  | { readonly action: 'delete'; readonly reason: string }
  | { readonly action: 'keep'; readonly reason: string }
  | { readonly action: 'ignore' };

/** A retired input version vacuum may delete for good. */
export interface RetiredVersion {
  readonly key: string;
  readonly versionId: string;
  readonly etag: string;
  readonly size: number;
  readonly reason: string;
}

/** The format's answers to vacuum: which of its leftovers may go, which must stay, and how to remove them. */
export interface VacuumRules {
  /**
   * Whether this format's commits retire inputs by a versioned delete that vacuum later finishes with
   * DeleteObjectVersion (`retiredInputs` makes such versions due). The construct grants vacuum that action on the
   * format's tables in versioned buckets, and on no other: a format whose own log or snapshots remove its inputs
   * leaves deleting them to the table's own VACUUM or snapshot expiry.
   */
  readonly retiresByVersion: boolean;
  /**
   * Of one journaled group, the retired input versions past `retentionMs` (vacuum may delete them) and the
   * inputs it must keep, each with why (inside the retention, no version id recorded).
   */
  retiredInputs(
    entry: GroupJournalEntry,
    now: number,
    retentionMs: number,
  ): { due: RetiredVersion[]; kept: { key: string; reason: string }[] };
  /** Over one copy in the work root's trash, given the journal entry of the group that made it (if any is left). */
  trashCopy(
    object: Pick<ObjectInfo, 'lastModified'>,
    entry: GroupJournalEntry | undefined,
    now: number,
    retentionMs: number,
  ): VacuumDecision;
  /**
   * Writer scratch below a table root that vacuum may remove once old (never the table's own log or
   * metadata): the folder (relative, '' or ending with `/`) holding its first scratch directory, else undefined.
   */
  writerDebris(relativeKey: string): { readonly owner: string } | undefined;
  /**
   * Why a retired version must not be deleted after all, given what the bucket says now (`current`: a HEAD of
   * its key), or undefined when it may go. The journal can be wrong; the bucket is the truth.
   */
  spareRetiredVersion(
    candidate: { readonly versionId?: string | undefined; readonly etag?: string | undefined },
    current: Pick<ObjectInfo, 'versionId' | 'etag'> | undefined,
  ): string | undefined;
  /**
   * Removes vacuum's candidates of one bucket (retired versions by version id, other objects only while they
   * still have the ETag they were listed with) and says, per key, what happened.
   */
  remove(store: ObjectStore, candidates: readonly RemovableObject[]): Promise<RemovalOutcome>;
}

/** An object vacuum decided to remove: by version id (a retired version) or as listed (with its ETag). */
export interface RemovableObject {
  readonly key: string;
  readonly versionId?: string;
  readonly etag?: string;
}

/** Per key of a removal: removed, changed since listed (left alone), or failed with a message. */
export interface RemovalOutcome {
  readonly changed: ReadonlySet<string>;
  readonly failed: ReadonlyMap<string, string>;
}

// ---------------------------------------------------------------------------------------------------------
// Profiling: which object events change the table, and how
// ---------------------------------------------------------------------------------------------------------

/** What one object event under a table root is to the profiler (see {@link CommitLogChanges.roleOf}). */
export type ObjectRole =
  /** The table changed by one commit of its log: the version's actions say what changed. */
  | { readonly kind: 'commit'; readonly version: number }
  /** Not a table change (a data file not committed yet, a checkpoint, a temp file), and why. */
  | { readonly kind: 'ignored'; readonly reason: string };

/** One data file a version added or removed, as the profiler counts it. */
export interface FileChange {
  readonly kind: 'added' | 'removed';
  /** The object key in the store (the file's identity, as a listing or an S3 event would name it). */
  readonly key: string;
  /** Bytes; always set on `added`. A remove is counted by what its add counted, so it may leave it out. */
  readonly size?: number;
  /** Raw partition path relative to the table root ('' when unpartitioned): the id a run compacts by. */
  readonly partition: string;
  readonly values: readonly PartitionValue[];
}

/** The file changes of one version of a log-based table: at most one per key, the version's last word on it. */
export interface VersionChanges {
  readonly version: number;
  readonly files: readonly FileChange[];
}

/**
 * How far the profiler has applied a table's log: the last version applied, and what the format must remember to
 * read the next versions (e.g. the partition columns and their physical names), as the format encodes it. Kept
 * by the stats store per table; opaque to it and to the profiler.
 */
export interface ChangeCursor {
  readonly version: number;
  readonly memo: string;
}

/** The outcome of reading the versions after a cursor. */
export type ChangesRead =
  | {
      readonly kind: 'versions';
      /** In version order, every version after the cursor up to the one asked for. */
      readonly versions: readonly VersionChanges[];
      readonly cursor: ChangeCursor;
    }
  /**
   * The versions changed only these partitions, but what a partition counts is not in the versions' file changes
   * alone (e.g. it depends on files they did not name): each named partition's whole counted set, as
   * {@link ChangeState} gives it, read now. Partitions not named are unchanged; a named one with no files counts none.
   */
  | {
      readonly kind: 'partitions';
      readonly partitions: ChangeState['partitions'];
      readonly cursor: ChangeCursor;
    }
  /** The versions cannot be applied one by one (cleaned up, or the table's layout changed): read the whole state. */
  | { readonly kind: 'rebuild'; readonly reason: string };

/** One file a log-based table's whole state counts (see {@link ChangeState}). */
export interface CountedFile {
  readonly key: string;
  readonly size: number;
  /**
   * The format's own table service (see {@link TableFormat.planService}) is due on this file now, so a run of its
   * partition rewrites it whatever its size (e.g. a file slice whose merge of update logs into its base file is
   * due, base file and log files alike). The profiler counts it as a candidate (small), so the
   * partition's trigger sees the work; a format reports it only when its plan step would plan that service in the
   * partition now, or a run would start that plans nothing — and, released at once, would be started again.
   * Absent: the table policy's size decides.
   */
  readonly serviceDue?: boolean;
}

/** A log-based table's whole state at one version, for the profiler to re-derive its counters from. */
export interface ChangeState {
  readonly cursor: ChangeCursor;
  /**
   * Live data files the profiler counts, per partition: the ones a run may rewrite now (a file its table service
   * would rewrite only later, e.g. a slice with update logs whose merge is not due yet, is not counted).
   */
  readonly partitions: readonly {
    readonly partition: string;
    readonly values: readonly PartitionValue[];
    readonly files: readonly CountedFile[];
  }[];
}

/**
 * A table whose log, not its object events, says what changed: a data file written but not committed is
 * not data, and a commit changes files it never writes (an OPTIMIZE removes files it leaves on storage).
 */
export interface CommitLogChanges {
  readonly kind: 'commit-log';
  /**
   * What a commit event's `version` (from {@link roleOf}) is. `log` (the default): the version of the
   * commit itself, counted as the cursor counts, so an event at or below the cursor is stale without reading
   * anything. `pointer` (a table behind a catalog): only a nudge to read the table's catalog pointer — the number a metadata file's
   * name carries neither orders snapshots (the cursor counts sequence numbers) nor proves that the file became
   * current — so the changes are always read, and `upTo` only says which metadata the event named: newer than the
   * pointer, and the read throws {@link CommitNotCurrentError}.
   */
  readonly eventVersions?: 'log' | 'pointer';
  /** What an object event is, by the key relative to the table root and the event's kind. */
  roleOf(relativeKey: string, event: 'created' | 'removed'): ObjectRole;
  /**
   * The file changes of every version after `from.version` up to `upTo`, in order, or `rebuild` when one of them
   * cannot be read or applied alone. Only the table's log is read.
   */
  readChanges(store: ObjectStore, tableRoot: string, from: ChangeCursor, upTo: number): Promise<ChangesRead>;
  /**
   * The table's state at version `upTo` (or, when that version cannot be reconstructed any more, its latest);
   * `upTo` undefined: its latest (reconcile, which no event drives).
   */
  readState(store: ObjectStore, tableRoot: string, upTo?: number): Promise<ChangeState>;
  /**
   * The version, as the profiler's cursor counts this table's versions, from which the cursor includes the commit a
   * group's `formatState` records (undefined: not committed, or not known). The finalize step records the newest of
   * its run's on the partition it releases: until the profiler has applied it, the partition's counters still
   * count the files the run retired, and no trigger starts a run on them (it would find nothing to do).
   */
  committedVersion?(state: FormatState): number | undefined;
}

/**
 * An event names a commit the table's pointer does not show: a metadata file written before the catalog's swap
 * (Glue UpdateTable, a REST commit), so either the swap is not done yet or the writer lost the race and the file is
 * never current. Retryable: the profiler lets the queue redeliver the event a bounded number of times, then drops
 * it as a lost race. `current` is the version the pointer is at, so what is already current can still be applied.
 */
export class CommitNotCurrentError extends CompactorError {
  static override readonly retryable = true;
  constructor(
    readonly table: string,
    readonly reason: string,
    readonly current: number,
  ) {
    super(`Table ${table} does not show the commit its event names yet: ${reason}`);
  }
}

/** See {@link TableFormat.partitionRewrite}. */
export type PartitionRewriteCapability =
  | { readonly kind: 'transform' }
  | { readonly kind: 'table-schema'; readonly advice: string };

/**
 * Where the profiler learns what changed: `object-events` — every data-file event is the change itself (Hive:
 * the listing is the table); `commit-log` — only commits of the table's log are (see {@link CommitLogChanges}).
 */
export type TableChanges = { readonly kind: 'object-events' } | CommitLogChanges;

// ---------------------------------------------------------------------------------------------------------
// The port
// ---------------------------------------------------------------------------------------------------------

// The I/O a format's `forTable` needs (FormatServices) is composed by the registry (formats/index.ts) from each
// format's own `forTable` parameter, so this port names no format; import it from there.

/**
 * One table format. A format's support goes in one folder under `functions/core/formats/` implementing this
 * interface, plus one registration line in `functions/core/formats/index.ts`.
 *
 * Mirrors delta-rs's optimize: `snapshot → planInputs → (rewrite → verify, format-independent) → commit`; the
 * commit knows nothing about how the outputs were written, the rewrite nothing about how they are published.
 */
export interface TableFormat {
  /** The name in the table config and the construct's props (`format: "parquet"`). */
  readonly name: string;
  /** How people call it, in messages: `Hive-style Parquet`. */
  readonly title: string;
  /**
   * Whether the table's own log or metadata owns every file under its root, so no other
   * configured table may lie inside it. Hive-style Parquet owns only its listing: false.
   */
  readonly ownsEverythingUnderRoot: boolean;
  /**
   * The table's current state under `location` (a key prefix of `store`): live data files with partition
   * values, rows, sizes and schema fingerprints, and what must not be touched, with why.
   */
  snapshot(store: ObjectStore, location: string, options: SnapshotOptions): Promise<TableSnapshot>;
  /** The planner's input for every partition of a snapshot. */
  planInputs(snapshot: TableSnapshot, table: string): PlanInput[];
  /**
   * Plans one partition the format's own way (e.g. `rewrite_data_files` semantics and options); when omitted,
   * the bin-pack planner (core/planning.ts) plans it with `request.binpack`.
   * @throws InvalidInputError for options or a filter that are invalid for this table; nothing was changed.
   */
  planPartition?(input: PlanInput, request: FormatPlanRequest): PartitionPlan;
  /**
   * One partition's live files (footers read with `readFooters`), for a run's plan step and its summary: a listing format lists the partition's
   * directory (and refuses another format's table around or inside it); a log format reads its log's latest version.
   * @throws UnsupportedTableFormatError when the location is another format's table.
   */
  partitionFiles(
    store: ObjectStore,
    where: PartitionLocation,
    options: SnapshotOptions,
  ): Promise<PartitionFiles>;
  /**
   * Brings a verified group to `done` (or `aborted` when an input changed), resuming from whatever state a
   * previous attempt reached; safe to call any number of times, also concurrently.
   */
  commit(deps: CommitDeps, runId: string, groupId: string): Promise<CommitOutcome>;
  /**
   * Abandons a group after a failure: rolled back while nothing of it is visible, rolled forward (completed)
   * once it may be. Also how a partition is settled.
   */
  rollback(deps: CommitDeps, runId: string, groupId: string, reason: string): Promise<CommitOutcome>;
  /**
   * Work the format must do on the table before a group's rewrite, called by the compact step on a `planned` entry
   * (every attempt: it must be idempotent, finding what an earlier attempt recorded). Why before and not at commit: a
   * format whose rows name their own file, or whose writers must see a pending plan before the files exist (e.g.
   * an instant T minted and its requested plan written under the table's lock, so the outputs are named after T,
   * each row's file-name column says so, and the table's writers reject upserts to the groups being rewritten) cannot leave it to the commit. Whatever it writes, its `rollback` must undo. Omitted:
   * nothing happens before the rewrite.
   */
  prepareGroup?(deps: CommitDeps, entry: GroupJournalEntry): Promise<PreparedGroup>;
  /**
   * The liveness signal of a group that `prepareGroup` left pending on the table (its `keepAlive`), for the steps
   * after the rewrite that work on the group while it is still pending: verify re-reads every output, which takes
   * minutes on a large group, and the table's writers must not take the plan for a dead one meanwhile (a writer
   * may roll back a pending plan whose heartbeat is 2 minutes old). Renewed when such a step starts and every
   * `everyMs` while it runs, never after it ends. Undefined: nothing of the group is pending on the table (not
   * prepared, already committed, or a format that keeps no such signal). A renewal that lands after the table's
   * writers rolled the plan back costs nothing: the commit finds the plan gone and aborts the group, whose rollback
   * removes what the renewal wrote.
   */
  groupKeepAlive?(store: ObjectStore, entry: GroupJournalEntry): KeepAlive | undefined;
  /**
   * The format's own table service a `compact` runs before it plans (after settling): work the bin-pack plan cannot
   * express because its inputs are not data files alone (e.g. a Merge-on-Read compaction of base + log files
   * into new base files, through the table's own timeline and lock). Says what it did, one line each; the caller
   * re-reads the table's snapshot when it did anything. Omitted: nothing runs.
   */
  tableService?(deps: TableServiceDeps, tableRoot: string): Promise<TableServiceOutcome>;
  /**
   * The same table service, as the workflow runs it: groups of the run's partition, planned as data by the plan step
   * (which calls this before its own planning, not in a dry run) and rewritten by the Map's compact, verify and
   * commit steps. Returns the plan when the service is due in the partition (recorded through `request.record`
   * before the format wrote anything for it), else undefined and the run plans as usual. Its groups' commit may be
   * `pending` (see {@link CommitOutcome.state}): the run-level commit is then made by `rollback`, which finalize
   * calls on every group still open after the Map. Omitted: the workflow runs no table service.
   */
  planService?(deps: CommitDeps, request: ServicePlanRequest): Promise<PartitionPlan | undefined>;
  /** What vacuum may consider, what it must keep, and how it removes it. */
  readonly vacuum: VacuumRules;
  /**
   * Whether a run that keeps row order (bin-pack) on an unversioned bucket may retire its inputs by deleting them,
   * an undo rebuilding a retired input from the outputs' rows (`delete-rebuild`, see {@link CommitDeps.engine}):
   * only a format whose commit implements that undo (Hive). Absent or false: such a run copies its inputs to trash.
   */
  readonly rebuildsRetiredInputs?: boolean;
  /**
   * What `lake-compactor rewrite` (an operator's transformation of a partition: cast, rename, drop, added columns)
   * may do on the format's tables. `transform`: its files are the table and carry the schema (Hive-style), so the
   * transformation is applied to them. `table-schema`: the schema belongs to the table (its `ALTER TABLE`), and a
   * file rewritten to another schema would contradict it; `advice` says what the format offers instead (a rewrite
   * to the table's current schema). Absent: refused, with the generic words.
   */
  readonly partitionRewrite?: PartitionRewriteCapability;
  /**
   * Whether a key (relative to the table root) is one of the table's own metadata writes (its log or
   * metadata folder), which the profiler must not take for another format's table or for data. Hive-style
   * Parquet has none: its work root and non-data objects are recognised for every format by name (see
   * `classifyObject`), so any log or metadata met inside it belongs to a foreign table.
   */
  isOwnMetadataWrite(relativeKey: string): boolean;
  /** How the profiler learns what changed in the table (see {@link TableChanges}). */
  readonly changes: TableChanges;
  /**
   * The positions the format deletes from a planned input (`input.deletes`, as the plan recorded them), for the
   * rewrite to drop: read and checked against what the plan recorded (their count). Only formats with deletes
   * implement it (e.g. deletion vectors); the compact step refuses a group with deletes its format cannot read.
   */
  deletedRows?(store: ObjectStore, entry: GroupJournalEntry, input: JournalInput): Promise<DeletedRows>;
  /**
   * The trigger's notion of "small" and "enough" for a table with these settings, when the format plans by rules of
   * its own (e.g. its `rewriteDataFiles`), so the profiler starts a run exactly when the plan would plan a
   * group; when omitted, the table policy's size checks decide (they mirror the bin-pack planner's).
   * `table.targetFileSizeBytes` is the table's explicit target (`targetFileSizeMB`), for a format whose plan reads it.
   */
  triggerRule?(
    settings: unknown,
    table: { readonly targetFileSizeBytes?: number | undefined },
  ): FormatTriggerRule;
  /**
   * The table settings this format owns (format-settings.ts): its table-config fields and their rules. `forTable`
   * and `triggerRule` get the table's values of exactly these fields, as the format's own typed value (opaque to
   * everything else); none when omitted.
   */
  readonly settings?: FormatSettings;
  /**
   * This format as one table's settings make it: the same format, committing and settling the way that table's
   * other writers do (e.g. through the DynamoDB commit table the config names). Every step that commits or
   * settles takes its format through here (`formatForTable` in formats/index.ts), so only the format knows what
   * a setting means; a format without per-table settings (Hive) omits it and is used as it is.
   * @throws InvalidInputError when a setting needs a service `services` lacks.
   */
  forTable?(settings: unknown, services: object): TableFormat;
  /**
   * Names of this format's errors (the class names) that refuse a partition the same way on every run until a
   * person or another writer changes its files — a feature refused by name, not a fault that passes. A run that
   * fails with one (thrown by a step, or as a group's failure) leaves the partition `needs-attention` with the
   * error, instead of idle for the next trigger to start the same failing run each sweep; an operator's settle run
   * clears it once the cause is gone. None when omitted.
   */
  readonly operatorErrors?: readonly string[];
  /**
   * The format's own table maintenance (see {@link TableMaintenance}), for a format whose log or metadata owns
   * every file under its root; omitted (Hive), vacuum's listing steps judge the table by {@link vacuum}.
   */
  readonly maintenance?: TableMaintenance;
  /**
   * The runs our commits left in the table's own log or metadata (see {@link TableHistoryReader}), which
   * `lake-compactor history <uri>` reads; omitted when the format keeps none there (Hive: the state table holds
   * a deployment's runs, and a CLI run keeps only its journal).
   */
  readonly history?: TableHistoryReader;
  /**
   * How `lake-compactor undo` reverts a finished run of ours (see {@link RunUndo}); a format that cannot revert one
   * itself implements it as a refusal saying what to do instead. Omitted: undo refuses the format by its title.
   */
  readonly undo?: RunUndo;
  /**
   * What the format adds to the operator commands' `--help` (see {@link FormatCommandHelp}), in its own words: the
   * CLI prints each registered format's paragraph under its title and never describes a format itself. Omitted: the
   * command's own words cover the format.
   */
  readonly help?: FormatCommandHelp;
}

/**
 * A format's paragraphs of command help, one sentence or a few each, unwrapped (the CLI wraps them): how the command
 * treats a table of this format, and which of the format's options (its `settings.cli`) it needs there.
 */
export interface FormatCommandHelp {
  /** How `compact` commits a group of a table of this format, and what its options choose. */
  readonly compact?: string;
  /** How `settle` settles a group of a table of this format, and the options it needs to. */
  readonly settle?: string;
}

// =========================================================================================================
// Format-owned maintenance (issue #27 item 2)
//
// Kept as its own block, apart from the settings above, so work on either merges cleanly. A format whose log or
// metadata owns every file under its root maintains a table its own way — a VACUUM, or
// expire_snapshots and remove_orphan_files — and says so here; vacuum (core/maintenance/vacuum.ts), its entry
// points and the CLI reach it through `TableFormat.maintenance` and never name a format. A format without it
// (Hive) is vacuumed by the work-area and listing steps, judged by its `vacuum` rules.
// =========================================================================================================

/**
 * A configured table, as a format's maintenance sees it: where it lies, and (as the format's own typed value, read
 * only inside its folder: see `settingsOf`) its format's settings. The port names none of them.
 */
export interface MaintainedTable {
  readonly name: string;
  readonly bucket: string;
  /** The table root as configured ('' for a bucket-root table, else without a trailing `/`). */
  readonly prefix: string;
}

/**
 * The vacuum request as a format reads its own options from it (already validated by the vacuum input schema,
 * which takes those options from the format: {@link TableMaintenance.requestOptions}).
 */
export interface MaintenanceRequest {
  /** The operator's consent to retentions below the minimums; a format also turns its own checks off with it. */
  readonly allowRetentionBelowMinimum: boolean;
  readonly [option: string]: unknown;
}

/** An error that stopped one table's maintenance, and only that table's. */
export interface MaintenanceTableError {
  readonly name: string;
  readonly message: string;
}

/**
 * What a format's maintenance decided to remove, as one of vacuum's candidates: `kind` is one of the format's
 * {@link TableMaintenance.candidateKinds}, so reports count it under the format's own name.
 */
export interface MaintenanceCandidate {
  readonly kind: string;
  readonly bucket: string;
  readonly key: string;
  readonly size: number;
  /** ETag when listed, when the format knows it. */
  readonly etag?: string | undefined;
  readonly reason: string;
  readonly table: string;
}

/** Something a format's maintenance kept although it might look removable, with why. */
export interface MaintenanceKept {
  readonly bucket: string;
  readonly key: string;
  readonly reason: string;
}

/**
 * The identity of one table's maintenance in a plan or report entry (`{ table, bucket, tableRoot }`, in this
 * order: the entries are printed as JSON, and a format's entries extend this).
 */
export interface MaintenanceTableRef {
  readonly table: string;
  readonly bucket: string;
  readonly tableRoot: string;
}

/** One table's maintenance as planned: what the real run needs to judge the same way (the planning instant…). */
export interface MaintenanceTablePlan extends MaintenanceTableRef {
  /** The planning instant (epoch ms): the real run judges ages against it, so what became due since waits. */
  readonly now: number;
}

/** A format's dry run of one table: its summary, and what vacuum lists from it. */
export interface MaintenanceDryRun<Summary> {
  readonly summary: Summary;
  /** In the order the format found them. */
  readonly candidates: readonly MaintenanceCandidate[];
  readonly kept: readonly MaintenanceKept[];
  /** Notes about the table, without its name (vacuum prefixes it). */
  readonly notes: readonly string[];
  /** Objects listed, counted against the call's budget. */
  readonly examined: number;
}

/**
 * Where a format's real run says what became of each object as it goes, so what it did before a failure is
 * still reported (a table whose orphan pass throws after its expiry deleted files).
 */
export interface MaintenanceSink {
  done(candidate: MaintenanceCandidate): void;
  spared(kept: MaintenanceKept): void;
  failed(failure: { readonly key: string; readonly message: string }): void;
}

/**
 * A format's own table maintenance. `Plan` is its plan entry (the {@link MaintenanceTablePlan} plus the options the
 * real run repeats), `Summary` what a run of it reports. Every method may throw: vacuum makes that the table's
 * error (`errorNote` words it), never the whole vacuum's, and deletes nothing more of that table.
 */
export interface TableMaintenance<
  Plan extends MaintenanceTablePlan = MaintenanceTablePlan,
  Summary = unknown,
  // The services the format's `forTable` takes (its own; the port names none): vacuum hands it the composed ones.
  Services = unknown,
  // How commander parses the format's `vacuum` options (see MaintenanceCli): the registry merges it into the CLI's.
  CliFlags extends object = object,
> {
  /**
   * The report field holding the format's tables (`deltaTables`): vacuum's plans and reports, and so the JSON the
   * CLI prints and the handlers log, carry each format's entries under its own field, as they always have.
   */
  readonly reportKey: string;
  /** The candidate kinds it removes (`delta-tombstone` …), counted apart in every report, in this order. */
  readonly candidateKinds: readonly string[];
  /** Its options in the vacuum input (`deltaRetentionHours` …), spelled as the input spells them. */
  readonly requestOptions: z.ZodRawShape;
  /** Why the request may not run (a retention below the format's minimum without consent), else undefined. */
  requestRefusal(request: MaintenanceRequest): string | undefined;
  /** The plan entry of `table` at `now` under `request`, before anything is read. */
  planOf(table: MaintainedTable, request: MaintenanceRequest, now: number): Plan;
  /** The dry run: reads the table and lists what the real run would remove; deletes nothing. */
  dryRun(store: ObjectStore, plan: Plan, services: Services): Promise<MaintenanceDryRun<Summary>>;
  /**
   * The real run at the plan's instant: re-reads the table and removes what is due then, telling `sink` as it
   * goes; its summary.
   */
  run(store: ObjectStore, plan: Plan, services: Services, sink: MaintenanceSink): Promise<Summary>;
  /** The note of a table whose maintenance failed: what was not run, and that nothing of it was deleted. */
  errorNote(error: MaintenanceTableError): string;
  /** The message an entry point logs (as an error, with the table's fields) for a table whose maintenance failed. */
  readonly errorLog: string;
  /**
   * Why tiering never moves this format's files (its log or metadata reads their modification times, its
   * partitions are not folders a date can be read from), with what to use instead; the tiering pass skips such a
   * table with this reason and `tier --format` refuses with it. Absent: the format's tables are tiered by listing.
   */
  readonly tieringUnsupported?: string;
  /** How `lake-compactor vacuum` names a table of the format in its first line (`<title> table`). */
  readonly tableLabel: string;
  /**
   * The rules a request maintains a table by, as `lake-compactor vacuum`'s first line says them (it goes on with
   * the work area's retention in hours): the format's retention, its own options or the table's properties.
   */
  describeRequest(request: MaintenanceRequest): string;
  /** The lines `lake-compactor vacuum` prints about one table's dry run (`dryRun`: nothing will be deleted). */
  describePlanned(summary: Summary, dryRun: boolean): string[];
  /** How `lake-compactor vacuum` spells the format's {@link requestOptions}; none when omitted. */
  readonly cli?: MaintenanceCli<CliFlags>;
}

/**
 * A format's options of `lake-compactor vacuum` (its {@link TableMaintenance.requestOptions} as flags), with their
 * help and their checks, so the CLI registers, documents and validates them for every registered format without
 * naming one. `Flags` is how commander parses them (and the shared `--retention-hours`, which a format may read too).
 */
export interface MaintenanceCli<Flags extends object = object> {
  /** The format's own options, in help order (after the shared ones). */
  readonly options: readonly FormatCliOption[];
  /** What `--retention-hours` also means for a table of the format, appended to its help (from `; `). */
  readonly retentionHoursHelp?: string;
  /** The paragraph of `vacuum --help` on what vacuum does to a table of the format (lines without a final newline). */
  readonly help: string;
  /**
   * Why the flags may not run, said in the CLI's words before anything is listed: options of this format given for
   * another (`command.format`), or a value below the format's minimum without `--allow-retention-below-minimum`.
   */
  refusal(
    flags: Flags,
    command: { readonly format: string; readonly allowRetentionBelowMinimum: boolean },
  ): string | undefined;
  /** The vacuum request's options (as {@link TableMaintenance.requestOptions} spells them) the flags give a table of the format. */
  requestOf(flags: Flags): Readonly<Record<string, unknown>>;
}

/** One table's maintenance as planned, in a plan: the format's plan, then its dry run's summary or its error. */
export type MaintenancePlanEntry<Plan extends MaintenanceTablePlan, Summary> = Plan & {
  /** The dry run's summary; absent when it failed. */
  readonly planned?: Summary;
  /** Why the table is not maintained (refused, or its log or metadata cannot be read): nothing of it is deleted. */
  readonly error?: MaintenanceTableError;
};

/** One table's maintenance as carried out (a dry run: as planned), in a report. */
export type MaintenanceOutcomeEntry<Summary> = MaintenanceTableRef & {
  readonly report?: Summary;
  readonly error?: MaintenanceTableError;
};

// =========================================================================================================
// Format-owned history (issue #27 item 2)
//
// A format whose log or metadata records each commit (e.g. commit info tagged `lakeCompactor`) holds the history
// of the runs that compacted a table wherever it lives, a CLI-compacted folder included; `lake-compactor history
// <uri>` reads it through `TableFormat.history`, groups it by run and prints it, naming no format.
// =========================================================================================================

/** One commit of a table's own history, as `lake-compactor history` lists and prints it (`--json`: as read). */
export interface TableHistoryCommit {
  /** The table version (or sequence) the commit made. */
  readonly version: number;
  /** When it was committed (epoch ms), when the commit says. */
  readonly timestamp?: number;
  /** The writer's operation (`WRITE`, `OPTIMIZE` …), when the commit says. */
  readonly operation?: string;
  /** The run and group of ours that committed it; absent for other writers' commits. */
  readonly runId?: string;
  readonly groupId?: string;
  /** The partition our commit was planned in, as the commit writes it. */
  readonly predicate?: string;
  readonly filesRemoved: number;
  readonly filesAdded: number;
  readonly bytesRemoved: number;
  readonly bytesAdded: number;
}

/** A table's own history: every commit still recorded, oldest first, and the versions it spans. */
export interface TableOwnHistory {
  /** The newest version. */
  readonly latestVersion: number;
  /** The oldest commit still recorded: runs before it were cleaned up with the log. */
  readonly earliestVersion: number;
  readonly commits: readonly TableHistoryCommit[];
}

/** How a format reads the history its tables record, and the words `lake-compactor history` says it in. */
export interface TableHistoryReader {
  /** A table of the format, with its article, as `history`'s help and refusal name it (`a <title> table`). */
  readonly tableLabel: string;
  /** What our commits are called in the summary line (`OPTIMIZE versions`). */
  readonly commitsLabel: string;
  /**
   * Every commit recorded under `tableRoot`.
   * @throws when the location is not a table of the format or its log cannot be read (the format's own error).
   */
  read(store: ObjectStore, tableRoot: string): Promise<TableOwnHistory>;
  /** Where the history stands, for the summary line (`table at version 12, log from version 0`). */
  describeExtent(history: TableOwnHistory): string;
}

// =========================================================================================================
// Undo of a finished run (issue #33 item 4)
//
// Kept as its own block, apart from the commit above (which undoes a group whose commit failed half-way): this
// reverts a run that completed, on an operator's request (`lake-compactor undo`). Each format reverts the run its
// own way — Hive restores the retired inputs and removes the outputs, a log format commits a version restoring
// the previous file set — or refuses, saying what to do instead; the CLI names no format.
// =========================================================================================================

/** What `lake-compactor undo` hands a format: the run's completed groups of one table, as journaled. */
export interface RunUndoRequest {
  readonly runId: string;
  /** The run's groups that committed (`done`), in the journal's order; aborted groups changed nothing. */
  readonly groups: readonly GroupJournalEntry[];
  /** Only say what would change: read, never write. */
  readonly dryRun: boolean;
  /**
   * An earlier undo of this run started and did not finish (its record says so): what it already changed (an input
   * back, an output gone) is taken as done, not as a later writer's change.
   */
  readonly resuming: boolean;
  /**
   * When the store itself recorded each group done (epoch ms on the store's clock, by `<runId>/<groupId>`): the
   * modification time of its journal object, where the journal lives in the store. A format that cannot tell its
   * outputs by ETag after a copy (a local folder's ETag is the file's identity; S3 re-computes a multipart one)
   * holds an output to be the run's while it is no newer than this; absent, the entry's own `updatedAt`.
   */
  readonly settledAt?: ReadonlyMap<string, number>;
}

/** One change an undo makes (or would make), as printed. */
export interface UndoChange {
  readonly action: 'restore' | 'remove' | 'commit';
  /** The object key restored or removed, or the log or metadata written. */
  readonly key: string;
  /** From where (`trash copy`, `version 3Lg…`, `rebuilt from the outputs' rows`) or why. */
  readonly detail: string;
}

/** What a format's undo of a run came to. */
export type RunUndoResult =
  /** Nothing was changed, and why it cannot be: what the undo needs is gone, or a later change conflicts. */
  | { readonly kind: 'refused'; readonly reason: string }
  /** The run's changes are reverted already (found in the table itself): nothing to do. */
  | { readonly kind: 'already-undone'; readonly reason: string }
  /** Reverted (with `dryRun`: what would be). */
  | {
      readonly kind: 'undone';
      readonly changes: readonly UndoChange[];
      /** What an operator should know: a visibility window, what stays for vacuum. */
      readonly notes: readonly string[];
    };

/**
 * How a format reverts a finished run of ours: reads the table, refuses (changing nothing) when a later change
 * touched the run's files or what the undo needs is gone, else restores the table's file set of before the run.
 */
export interface RunUndo {
  /** How the format reverts a run, one sentence for `lake-compactor undo --help` (which names no format itself). */
  readonly summary: string;
  undoRun(deps: CommitDeps, request: RunUndoRequest): Promise<RunUndoResult>;
}

/** A refusal of an undo, in the form every format returns it. */
export function undoRefused(reason: string): RunUndoResult {
  return { kind: 'refused', reason };
}
