// Exact partition statistics of log-based tables from their commits: each new version's file
// changes are applied once, in order, through the same per-file accounting as object events; the partitions a
// format can name but not express as file changes are re-derived whole, and a table whose versions cannot be applied
// one by one is re-derived from its whole state. Knows versions and cursors, never a
// log's layout or a catalog.
import pLimit from 'p-limit';
import type { ObjectStore } from '../../ports/object-store.js';
import type { ListedFile } from '../../ports/stats-store.js';
import { CompactorError, InvalidInputError } from '../errors.js';
import { TABLE_FORMATS } from '../formats/index.js';
import {
  type ChangeState,
  type CommitLogChanges,
  CommitNotCurrentError,
  type FileChange,
  type TableFormat,
  type VersionChanges,
} from '../formats/table-format.js';
import { isSmallUnderPolicy } from '../policy.js';
import type { TableConfig } from '../table-config.js';
import { type CommitEvent, partitionDateOf, SEQUENCER_WIDTH } from './events.js';
import {
  type PartitionRef,
  type PartitionSnapshot,
  partitionId,
  type ResolvedEvent,
  type TriggerOutcome,
} from './model.js';
import { evaluatePartition, policyOf, profileEvents, type TriggerDeps } from './trigger.js';

/** What applying a table's commits needs beyond the trigger: the tables, and the store holding each bucket. */
export interface TableLogDeps extends TriggerDeps {
  readonly tables: readonly TableConfig[];
  /** The object store of a table in its bucket, to read the table's log (it may reach only that table). */
  readonly storeFor: (bucket: string, table: string) => ObjectStore;
  /**
   * The format of a table as its settings make it (`formatForTable` with the composition root's services), so a
   * table's pointer is read through its own catalog (Glue, REST). Absent: the registered format, which reads a
   * table's pointer through its default (path) catalog.
   */
  readonly formatFor?: (table: TableConfig, bucket: string) => TableFormat;
}

/** What a table's commits of one batch did. */
export type TableLogResult =
  | {
      readonly ok: true;
      /** One per partition that was decided about. */
      readonly outcomes: readonly TriggerOutcome[];
      /** File records written (incremental), or partitions corrected (partitions, rebuild). */
      readonly applied: number;
      /** Commit events that changed nothing: duplicates, or versions already applied. */
      readonly stale: number;
      /** Versions read one by one, the partitions they changed re-derived, or `rebuild` with why the whole state was read instead. */
      readonly mode:
        | { readonly kind: 'versions'; readonly count: number }
        /** The partitions the versions changed, each re-derived whole (ChangesRead `partitions`). */
        | { readonly kind: 'partitions'; readonly count: number }
        | { readonly kind: 'rebuild'; readonly reason: string };
      /**
       * Commit events naming a commit the table's pointer does not show yet (see CommitNotCurrentError), with
       * why: everything current was applied, these are for the queue to redeliver (or to drop as a lost race).
       */
      readonly notCurrent?: {
        readonly events: readonly CommitEvent[];
        readonly error: CommitNotCurrentError;
      };
    }
  | { readonly ok: false; readonly error: unknown };

/**
 * A partition kept changing while its counters were re-derived, or a partition's update failed: the commits are
 * applied again on the message's redelivery (nothing is lost: the cursor did not move).
 */
export class TableChangesRetryError extends CompactorError {
  constructor(
    readonly table: string,
    reason: string,
    options?: { cause?: unknown },
  ) {
    super(`Commits of table ${table} are applied again on redelivery: ${reason}`, options);
  }
}

/** Re-derivations of a partition that lost to a concurrent update before the table's commits are retried. */
const REBUILD_ATTEMPTS = 3;

/**
 * The sequencer of version `version`'s file changes: the version in hex, padded like S3's, so that per file a later
 * version wins and a duplicate or older one is stale, exactly as for an object's events.
 */
export function versionSequencer(version: number): string {
  return version.toString(16).toUpperCase().padStart(SEQUENCER_WIDTH, '0');
}

/**
 * Applies each table's commit events of one batch (tables in parallel, each table's versions in order) and decides
 * about every partition they changed, as object events do for Hive tables.
 */
export async function profileCommits(
  deps: TableLogDeps,
  commits: readonly CommitEvent[],
  now: number,
  concurrency = 4,
): Promise<Map<string, TableLogResult>> {
  const byTable = new Map<string, CommitEvent[]>();
  for (const commit of commits) byTable.set(commit.table, [...(byTable.get(commit.table) ?? []), commit]);
  const results = new Map<string, TableLogResult>();
  const limit = pLimit(Math.max(1, concurrency));
  await Promise.all(
    [...byTable.entries()].map(([table, events]) =>
      limit(async () => {
        try {
          results.set(table, await profileTableCommits(deps, table, events, now, concurrency));
        } catch (error) {
          results.set(table, { ok: false, error });
        }
      }),
    ),
  );
  return results;
}

function commitLogOf(deps: TableLogDeps, table: TableConfig, bucket: string): CommitLogChanges {
  const changes = (deps.formatFor?.(table, bucket) ?? TABLE_FORMATS.get(table.format))?.changes;
  if (changes?.kind !== 'commit-log') {
    throw new InvalidInputError(
      `Table ${table.name} (format ${table.format}) has no log whose commits are its changes`,
    );
  }
  return changes;
}

/**
 * One table's commits: nothing when the cursor is at or past the newest (duplicates, late events); else every
 * version after the cursor up to the newest is read and applied (an event for N+2 reads N+1 first), or the whole
 * state is re-derived when they cannot be. The cursor moves only after everything was applied, so a failure retries
 * the same versions, which the per-file sequencers make harmless. A table whose events only nudge a read of its
 * catalog pointer (CommitLogChanges.eventVersions `pointer`) is always read; when some events name metadata newer than the pointer, what the pointer
 * shows is applied and those events are returned as `notCurrent`, for the caller to have redelivered.
 */
async function profileTableCommits(
  deps: TableLogDeps,
  name: string,
  commits: readonly CommitEvent[],
  now: number,
  concurrency: number,
): Promise<TableLogResult> {
  const table = deps.tables.find((t) => t.name === name);
  if (table === undefined) throw new InvalidInputError(`Table ${name} is not configured`);
  const bucket = (commits[0] as CommitEvent).bucket;
  const changes = commitLogOf(deps, table, bucket);
  if (changes.eventVersions === 'pointer') {
    try {
      return await applyTableCommits(deps, table, changes, bucket, commits, now, concurrency);
    } catch (err) {
      if (!(err instanceof CommitNotCurrentError)) throw err;
      // Apply what the pointer does show; the events naming a newer metadata file wait for a redelivery.
      const current = commits.filter((c) => c.version <= err.current);
      const notCurrent = { events: commits.filter((c) => c.version > err.current), error: err };
      if (current.length === 0)
        return {
          ok: true,
          outcomes: [],
          applied: 0,
          stale: 0,
          mode: { kind: 'versions', count: 0 },
          notCurrent,
        };
      const applied = await applyTableCommits(deps, table, changes, bucket, current, now, concurrency);
      return applied.ok ? { ...applied, notCurrent } : applied;
    }
  }
  return applyTableCommits(deps, table, changes, bucket, commits, now, concurrency);
}

/**
 * Applies one table's commits (see profileTableCommits). For a table whose events only nudge it to read its
 * pointer (`eventVersions: 'pointer'`), nothing is stale before the pointer is read: the read says what is new.
 */
async function applyTableCommits(
  deps: TableLogDeps,
  table: TableConfig,
  changes: CommitLogChanges,
  bucket: string,
  commits: readonly CommitEvent[],
  now: number,
  concurrency: number,
): Promise<TableLogResult> {
  const name = table.name;
  const byPointer = changes.eventVersions === 'pointer';
  const upTo = Math.max(...commits.map((c) => c.version));
  const cursor = await deps.stats.changeCursor(name);
  if (!byPointer && cursor !== undefined && cursor.version >= upTo) {
    return {
      ok: true,
      outcomes: [],
      applied: 0,
      stale: commits.length,
      mode: { kind: 'versions', count: 0 },
    };
  }
  const store = deps.storeFor(bucket, name);
  const read =
    cursor === undefined
      ? ({ kind: 'rebuild', reason: 'the first commit seen of this table' } as const)
      : await changes.readChanges(store, table.prefix, cursor, upTo);
  if (read.kind === 'rebuild') {
    return rebuildTable(deps, { table, changes, store, bucket, commits, upTo, reason: read.reason }, now);
  }
  if (read.kind === 'partitions') {
    const corrected = await rederivePartitions(
      { ...deps, changesAppliedThrough: read.cursor.version },
      { table, bucket, commits },
      read.partitions,
      'named',
      now,
    );
    await deps.stats.advanceChangeCursor(name, read.cursor);
    return {
      ok: true,
      outcomes: corrected.outcomes,
      applied: corrected.count,
      stale: 0,
      mode: { kind: 'partitions', count: read.partitions.length },
    };
  }
  const events = await placeRemoves(
    deps,
    read.versions.flatMap((v) =>
      resolvedChanges(
        deps,
        table,
        bucket,
        v,
        byPointer ? Math.max(...commits.map((c) => c.eventTime)) : timeOfVersion(commits, v.version),
      ),
    ),
  );
  // A pointer's events are stale when the pointer had not moved past the cursor; a log's, when at or below it.
  const stale = byPointer
    ? read.versions.length === 0
      ? commits.length
      : 0
    : commits.filter((c) => cursor !== undefined && c.version <= cursor.version).length;
  // Decided as counted through the versions just applied (the cursor is stored after them).
  const decideDeps = { ...deps, changesAppliedThrough: read.cursor.version };
  const results = events.length === 0 ? new Map() : await profileEvents(decideDeps, events, now, concurrency);
  const outcomes: TriggerOutcome[] = [];
  let applied = 0;
  for (const [id, result] of results) {
    if (!result.ok)
      throw new TableChangesRetryError(name, `partition ${id} could not be updated`, { cause: result.error });
    outcomes.push(result.outcome);
    applied += result.applied;
  }
  await deps.stats.advanceChangeCursor(name, read.cursor);
  return { ok: true, outcomes, applied, stale, mode: { kind: 'versions', count: read.versions.length } };
}

/**
 * The time of version `version`: its own event's, or (a version read to close a gap) that of the nearest later
 * commit of the batch — it was committed before that one, so the quiet window is never cut short.
 */
function timeOfVersion(commits: readonly CommitEvent[], version: number): number {
  const later = commits.filter((c) => c.version >= version).sort((a, b) => a.version - b.version);
  return (later[0] ?? (commits[0] as CommitEvent)).eventTime;
}

/** One version's file changes as the per-file events the accounting applies (small by the table's policy). */
function resolvedChanges(
  deps: TriggerDeps,
  table: TableConfig,
  bucket: string,
  version: VersionChanges,
  eventTime: number,
): ResolvedEvent[] {
  const policy = policyOf(deps, table.name);
  return version.files.map((change: FileChange) => {
    const partitionDate = partitionDateOf(table, change.values);
    const added = change.kind === 'added';
    const size = change.size ?? 0;
    return {
      bucket,
      key: change.key,
      kind: added ? 'created' : 'removed',
      ...(added ? { size, small: isSmallUnderPolicy(size, policy) } : {}),
      sequencer: versionSequencer(version.version),
      eventTime,
      eventName: `commit ${version.version}`,
      ref: { table: table.name, partition: change.partition },
      fileId: `${bucket}/${change.key}`,
      values: change.values,
      ...(partitionDate === undefined ? {} : { partitionDate }),
    };
  });
}

/**
 * Places each removal in the partition its file was counted in: a `remove` may leave out its partition values
 * (they are optional in the protocol), and the partition that loses the file is the one to re-decide.
 */
async function placeRemoves(deps: TriggerDeps, events: ResolvedEvent[]): Promise<ResolvedEvent[]> {
  const removed = events.filter((e) => e.kind === 'removed').map((e) => e.fileId);
  if (removed.length === 0) return events;
  const refs = new Map(events.filter((e) => e.kind === 'removed').map((e) => [partitionId(e.ref), e.ref]));
  const known = await deps.stats.getFiles([...new Set(removed)], [...refs.values()]);
  const missing = removed.filter((id) => !known.has(id));
  if (missing.length > 0) {
    // A remove without partition values: the file may be counted in any partition of the table.
    const table = events[0]?.ref.table ?? '';
    const others = (await deps.stats.listPartitions(table))
      .map((p) => ({ table: p.table, partition: p.partition }))
      .filter((p) => !refs.has(partitionId(p)));
    if (others.length > 0) for (const [id, r] of await deps.stats.getFiles(missing, others)) known.set(id, r);
  }
  return events.map((event) => {
    const record = event.kind === 'removed' ? known.get(event.fileId) : undefined;
    if (record === undefined || record.partition === event.ref.partition) return event;
    return { ...event, ref: { table: event.ref.table, partition: record.partition } };
  });
}

interface Rebuild {
  readonly table: TableConfig;
  readonly changes: CommitLogChanges;
  readonly store: ObjectStore;
  readonly bucket: string;
  readonly commits: readonly CommitEvent[];
  readonly upTo: number;
  readonly reason: string;
}

/**
 * Re-derives every partition of the table from its whole state (as reconcile does from a listing), marks the
 * partitions whose counters changed as written at the commits' time (so the quiet window holds), decides about
 * them, and moves the cursor to the state's version.
 */
async function rebuildTable(deps: TableLogDeps, job: Rebuild, now: number): Promise<TableLogResult> {
  const { table } = job;
  const state = await job.changes.readState(job.store, table.prefix, job.upTo);
  const corrected = await rederivePartitions(
    { ...deps, changesAppliedThrough: state.cursor.version },
    job,
    state.partitions,
    'all',
    now,
  );
  await deps.stats.advanceChangeCursor(table.name, state.cursor);
  (deps.log ?? (() => undefined))('warn', 'table statistics re-derived from its whole state', {
    table: table.name,
    reason: job.reason,
    version: state.cursor.version,
    partitionsCorrected: corrected.count,
  });
  return {
    ok: true,
    outcomes: corrected.outcomes,
    applied: corrected.count,
    stale: 0,
    mode: { kind: 'rebuild', reason: job.reason },
  };
}

/**
 * Makes the counters of each partition of `partitions` those of its counted files, marks the partitions whose
 * counters changed as written at the commits' time (so the quiet window holds) and decides about them. `scope`
 * `all`: `partitions` is the table's whole state, so a stored partition it does not name counts nothing now;
 * `named`: only the named partitions changed, the others are left as they are.
 */
async function rederivePartitions(
  deps: TableLogDeps,
  job: Pick<Rebuild, 'table' | 'bucket' | 'commits'>,
  partitions: ChangeState['partitions'],
  scope: 'all' | 'named',
  now: number,
): Promise<{ outcomes: TriggerOutcome[]; count: number }> {
  const { table, bucket } = job;
  const policy = policyOf(deps, table.name);
  const listed = new Map(partitions.map((p) => [p.partition, p]));
  // The named partitions' statistics alone (one read each), not the table's every partition.
  const stored =
    scope === 'all'
      ? new Map((await deps.stats.listPartitions(table.name)).map((s) => [s.partition, s]))
      : new Map(
          (
            await Promise.all(
              [...listed.keys()].map((partition) => deps.stats.get({ table: table.name, partition })),
            )
          ).flatMap((s) => (s === undefined ? [] : [[s.partition, s] as const])),
        );
  const times = job.commits.map((c) => c.eventTime);
  const outcomes: TriggerOutcome[] = [];
  let count = 0;
  const names = scope === 'all' ? [...listed.keys(), ...stored.keys()] : [...listed.keys()];
  for (const partition of [...new Set(names)].sort()) {
    const ref: PartitionRef = { table: table.name, partition };
    const values = listed.get(partition)?.values ?? [];
    const files: ListedFile[] = (listed.get(partition)?.files ?? []).map((f) => ({
      fileId: `${bucket}/${f.key}`,
      size: f.size,
      // A file the format's own table service has due is a candidate whatever its size (CountedFile.serviceDue).
      small: f.serviceDue === true || isSmallUnderPolicy(f.size, policy),
      ...(f.serviceDue === true ? { due: true } : {}),
      eventTime: Math.max(...times),
    }));
    const partitionDate = partitionDateOf(table, values);
    if (!(await rederive(deps, ref, files, stored.get(partition), partitionDate))) continue;
    count += 1;
    const snapshot = await deps.stats.touch(ref, {
      lastWriteAt: Math.max(...times),
      firstWriteAt: Math.min(...times),
      ...(partitionDate === undefined ? {} : { partitionDate }),
    });
    outcomes.push(await evaluatePartition(deps, snapshot, now));
  }
  return { outcomes, count };
}

/**
 * Makes one partition's counters those of `files`, conditioned on the partition not moving meanwhile (a
 * concurrent profiler applying a commit); retried on the fresh state a few times. True when they changed.
 */
async function rederive(
  deps: TriggerDeps,
  ref: PartitionRef,
  files: readonly ListedFile[],
  first: PartitionSnapshot | undefined,
  partitionDate: number | undefined,
): Promise<boolean> {
  let snapshot = first;
  const small = files.filter((f) => f.small);
  for (let attempt = 0; attempt < REBUILD_ATTEMPTS; attempt += 1) {
    const agrees =
      snapshot !== undefined &&
      snapshot.fileCount === files.length &&
      snapshot.totalBytes === files.reduce((n, f) => n + f.size, 0) &&
      snapshot.smallCount === small.length &&
      snapshot.smallBytes === small.reduce((n, f) => n + f.size, 0) &&
      (snapshot.dueCount ?? 0) === files.filter((f) => f.due === true).length;
    if (agrees || (snapshot === undefined && files.length === 0)) return false;
    const result = await deps.stats.reconcile(ref, files, snapshot?.version, {
      ...(partitionDate === undefined ? {} : { partitionDate }),
    });
    if (result.kind !== 'busy') return result.kind === 'corrected';
    snapshot = await deps.stats.get(ref);
  }
  throw new TableChangesRetryError(
    ref.table,
    `partition ${ref.partition} kept changing while it was re-derived`,
  );
}
