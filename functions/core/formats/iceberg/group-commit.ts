// The commit of a verified group on an Iceberg table: the snapshot, not the listing, is the table, so a file is data
// only once a snapshot adds it. Every step is driven by the group's journal state and is idempotent:
//
//   verified    → publishing  nothing to check on storage: the commit checks the inputs against the snapshots.
//   publishing  copy staged outputs into the partition's folder under fresh names. No manifest names them, so no
//               reader sees them (an Iceberg reader never lists data files).                        → published
//   published   a `replace` snapshot through the catalog (commit.ts `commitReplace`): the inputs removed, the
//               outputs added with the starting snapshot's data sequence number, the summary tagged with this
//               run and group. First every snapshot of the table is searched for that tag: one found means an
//               earlier attempt committed (done). A snapshot since the starting one that removed an input or added
//               a position delete / DV to one is a conflict (the group aborts and its never-committed outputs are
//               deleted); anything else (appends, other partitions, equality deletes) is rebased over; lost races
//               are retried inside the commit and end in a retryable error.                           → retired
//   retired     remove the staging objects (the inputs stay on storage until expire_snapshots).     → done
//
// Why no row is ever lost or doubled: the catalog is linear (put-if-absent of the next metadata version), and a
// replace is written only onto a base in which every input is still live. Of two attempts of the same group (a
// retry racing a slow first attempt) the later one finds either the earlier one's tagged snapshot before it
// writes, or — when it loaded the table just after that snapshot — its inputs no longer live; a conflict is
// therefore always checked again for our own tag before the group aborts. Outputs are deleted only in states from
// which no attempt may commit (before `published`, or aborted with no snapshot of ours in the table).
import pLimit from 'p-limit';
import type { FormatState, GroupJournalEntry, Journal } from '../../../ports/journal.js';
import type { ObjectStore } from '../../../ports/object-store.js';
import { InvalidInputError, NotVerifiedError } from '../../errors.js';
import { stagingLeftovers } from '../staging.js';
import type { CommitConflict, CommitDeps, CommitOutcome } from '../table-format.js';
import { type IcebergCatalog, type LoadedTable, PathCatalog } from './catalog.js';
import { type AddedDataFile, commitReplace } from './commit.js';
import { IcebergCommitConflictError, IcebergUnsupportedError } from './errors.js';
import { partitionKey, readSnapshotFiles } from './live-files.js';
import { schemaById } from './metadata.js';
import { metricsConfig, readParquetMetrics } from './metrics.js';
import { appliedDeleteOf, deletesByDataFile, deletesId } from './row-deletes.js';

/** The snapshot summary property naming the run that committed a group: how a retry finds its own snapshot. */
export const RUN_ID_PROPERTY = 'lake-compactor.run-id';
/** The snapshot summary property naming the group (with {@link RUN_ID_PROPERTY}). */
export const GROUP_ID_PROPERTY = 'lake-compactor.group-id';

/** What the Iceberg format records per group: where the table is, the snapshot planned at, the one committed. */
export interface IcebergGroupState {
  readonly tableRoot: string;
  /** The starting snapshot's id, as decimal text (a 64-bit id does not fit a JSON number). */
  readonly snapshotId: string;
  readonly committedSnapshotId?: string;
}

/** The journal's record of an Iceberg group. @throws InvalidInputError when the entry was not planned as Iceberg. */
export function icebergGroupState(
  entry: Pick<GroupJournalEntry, 'runId' | 'groupId' | 'formatState'>,
): IcebergGroupState {
  const s = entry.formatState;
  if (
    s === undefined ||
    typeof s.tableRoot !== 'string' ||
    typeof s.snapshotId !== 'string' ||
    !/^-?\d+$/.test(s.snapshotId)
  ) {
    throw new InvalidInputError(
      `Group ${entry.groupId} of run ${entry.runId} has no Iceberg snapshot id in its journal entry: it was not planned as an Iceberg table. Settle it with the format it was planned with`,
    );
  }
  return {
    tableRoot: s.tableRoot,
    snapshotId: s.snapshotId,
    ...(typeof s.committedSnapshotId === 'string' ? { committedSnapshotId: s.committedSnapshotId } : {}),
  };
}

/** The journal's formatState of a group planned at snapshot `snapshotId`. */
export function icebergFormatState(tableRoot: string, snapshotId: bigint): FormatState {
  return { tableRoot, snapshotId: snapshotId.toString() };
}

/** How the Iceberg commit reaches the table (replaceable per table and in tests). */
export interface IcebergCommitterOptions {
  /** @default the path-based catalog through the commit's object store */
  readonly catalog?: (store: ObjectStore) => IcebergCatalog;
  /** Commit attempts against other writers before a retryable error. @default 8 */
  readonly maxAttempts?: number;
  /** First pause after a lost race, doubled after each. @default 100 ms */
  readonly backoffMs?: number;
  readonly sleep?: (ms: number) => Promise<void>;
}

/** The Iceberg commit and rollback, bound to how the table's commits are coordinated. */
export function icebergCommitter(options: IcebergCommitterOptions = {}) {
  const catalogOf = options.catalog ?? ((store: ObjectStore) => new PathCatalog(store));

  async function commit(deps: CommitDeps, runId: string, groupId: string): Promise<CommitOutcome> {
    let entry = await requireEntry(deps.journal, runId, groupId);
    const conflicts: CommitConflict[] = [];
    for (;;) {
      switch (entry.state) {
        case 'planned':
        case 'staged':
          throw new NotVerifiedError(
            `Group ${groupId} of run ${runId} is ${entry.state}, not verified: verify its outputs before committing (or roll it back).`,
          );
        case 'verified':
          entry = await deps.journal.transition(
            entry,
            'publishing',
            { publishStartedAt: deps.clock.now() },
            deps.clock.now(),
          );
          break;
        case 'publishing':
          entry = await placeOutputs(deps, entry);
          break;
        case 'published': {
          const result = await commitToTable(deps, entry, catalogOf(deps.store), options);
          if (result.kind === 'committed') {
            entry = await deps.journal.transition(
              entry,
              'retired',
              {
                formatState: { ...entry.formatState, committedSnapshotId: result.snapshotId },
                retiredAt: deps.clock.now(),
              },
              deps.clock.now(),
            );
          } else {
            conflicts.push(...result.conflicts);
            entry = await deps.journal.transition(
              entry,
              'aborted',
              {
                reason: `conflict with a concurrent commit, nothing of the group was committed: ${describe(result.conflicts)}`,
              },
              deps.clock.now(),
            );
          }
          break;
        }
        case 'retired':
          await deleteAll(deps.store, await stagingLeftovers(deps.store, entry.stagingPrefix));
          entry = await deps.journal.transition(entry, 'done', {}, deps.clock.now());
          break;
        case 'done':
          return outcome(entry, conflicts);
        case 'aborted':
          await removeUncommitted(deps, entry);
          return outcome(entry, conflicts);
      }
    }
  }

  /**
   * Abandons a group: before `published` no attempt may commit, so the group aborts and its outputs (in staging,
   * and any already copied into the table, which no manifest names) are removed; from `published` on an attempt
   * may have committed, so the only safe direction is forward: the commit finds its own snapshot, or commits, or
   * finds the conflict that aborts it.
   */
  async function rollback(
    deps: CommitDeps,
    runId: string,
    groupId: string,
    reason: string,
  ): Promise<CommitOutcome> {
    const entry = await deps.journal.get(runId, groupId);
    if (!entry) return { state: 'aborted', published: [], retired: [], conflicts: [], reason };
    switch (entry.state) {
      case 'planned':
      case 'staged':
      case 'verified':
      case 'publishing': {
        const aborted = await deps.journal.transition(entry, 'aborted', { reason }, deps.clock.now());
        await removeUncommitted(deps, aborted);
        return outcome(aborted, []);
      }
      default:
        return commit(deps, runId, groupId);
    }
  }

  return { commit, rollback };
}

async function requireEntry(journal: Journal, runId: string, groupId: string): Promise<GroupJournalEntry> {
  const entry = await journal.get(runId, groupId);
  if (!entry) {
    throw new InvalidInputError(
      `No journal entry for group ${groupId} of run ${runId}: the group was never planned in this run; check the run id`,
    );
  }
  return entry;
}

/** publishing → published: copies every staged output to its (fresh, unique) key in the table. Idempotent. */
async function placeOutputs(deps: CommitDeps, entry: GroupJournalEntry): Promise<GroupJournalEntry> {
  const limit = pLimit(deps.concurrency ?? 16);
  await Promise.all(
    entry.outputs.map((output) =>
      limit(async () => {
        try {
          await deps.store.copy(output.stagingKey, output.finalKey, { ifMatch: output.etag });
        } catch (err) {
          // A previous attempt may have copied it already (and staging may be gone since); else a real failure.
          const there = await deps.store.head(output.finalKey);
          if (there === undefined || there.size !== output.size) throw err;
        }
      }),
    ),
  );
  return deps.journal.transition(entry, 'published', {}, deps.clock.now());
}

type CommitResultKind =
  | { readonly kind: 'committed'; readonly snapshotId: string }
  | { readonly kind: 'conflict'; readonly conflicts: readonly CommitConflict[] };

/** The id of a snapshot of the table tagged with this run and group, if any (an earlier attempt's commit). */
export function ownSnapshotId(
  table: LoadedTable,
  entry: Pick<GroupJournalEntry, 'runId' | 'groupId'>,
): string | undefined {
  const own = table.metadata.snapshots.find(
    (s) => s.summary[RUN_ID_PROPERTY] === entry.runId && s.summary[GROUP_ID_PROPERTY] === entry.groupId,
  );
  return own?.snapshotId.toString();
}

/** published: finds this group's snapshot, or the conflict that forbids it, or commits it. */
async function commitToTable(
  deps: CommitDeps,
  entry: GroupJournalEntry,
  catalog: IcebergCatalog,
  options: IcebergCommitterOptions,
): Promise<CommitResultKind> {
  const state = icebergGroupState(entry);
  if (state.committedSnapshotId !== undefined)
    return { kind: 'committed', snapshotId: state.committedSnapshotId };
  const table = await catalog.load(state.tableRoot);
  const earlier = ownSnapshotId(table, entry);
  if (earlier !== undefined) return { kind: 'committed', snapshotId: earlier };
  const metadataDir = `${table.tableRoot === '' ? '' : `${table.tableRoot}/`}metadata/`;
  const startingId = BigInt(state.snapshotId);
  if (!table.metadata.snapshots.some((s) => s.snapshotId === startingId)) {
    return conflict([
      {
        key: metadataDir,
        reason: `the starting snapshot ${state.snapshotId} is no longer in the table's metadata (expired before this group committed)`,
      },
    ]);
  }

  // The inputs as the starting snapshot recorded them: their paths (exactly as written) and their one partition.
  const starting = await readSnapshotFiles(deps.store, table, { snapshotId: startingId });
  const byKey = new Map(starting.dataFiles.map((f) => [f.entry.file.key, f]));
  const inputs = entry.inputs.map((i) => ({ key: i.key, file: byKey.get(i.key) }));
  const absent = inputs.filter((i) => i.file === undefined);
  if (absent.length > 0)
    return conflict(
      absent.map((i) => ({ key: i.key, reason: `not a live data file of snapshot ${state.snapshotId}` })),
    );
  // The deletes the rewrite dropped must be exactly those that applied to each input at the starting snapshot;
  // commitReplace then checks that none was added or removed since.
  const deletesOf = deletesByDataFile(starting);
  const otherDeletes = entry.inputs.flatMap((input) => {
    const path = byKey.get(input.key)?.entry.file.path ?? input.key;
    const applied = (deletesOf.get(path) ?? []).map(appliedDeleteOf);
    const expected = applied.length === 0 ? undefined : deletesId(applied);
    return expected === input.deletes?.id
      ? []
      : [
          {
            key: input.key,
            reason: `the deletes applying to it in snapshot ${state.snapshotId} (${expected ?? 'none'}) are not those the rewrite dropped (${input.deletes?.id ?? 'none'})`,
          },
        ];
  });
  if (otherDeletes.length > 0) return conflict(otherDeletes);
  const partitions = new Set(
    inputs.map((i) => partitionKey(i.file?.entry.file.partition ?? { specId: -1, values: [] })),
  );
  const partition = inputs[0]?.file?.entry.file.partition;
  if (partition === undefined || partitions.size !== 1)
    throw new InvalidInputError(
      `Group ${entry.groupId} of run ${entry.runId} has inputs of ${partitions.size} Iceberg partitions (${[...partitions].join(', ')}): a group is planned within one partition; plan the partition again`,
    );

  const schema = schemaById(table.metadata);
  if (schema === undefined) throw new InvalidInputError(`${table.name} has no current schema`);
  const config = metricsConfig(table.metadata, schema);
  const limit = pLimit(deps.concurrency ?? 16);
  const addedFiles: AddedDataFile[] = await Promise.all(
    entry.outputs.map((o) =>
      limit(async () => ({
        path: table.paths.path(o.finalKey),
        partition,
        metrics: await readParquetMetrics(deps.store, o.finalKey, schema, config),
      })),
    ),
  );
  try {
    const result = await commitReplace(
      deps.store,
      catalog,
      {
        tableLocation: state.tableRoot,
        startingSnapshotId: startingId,
        removedFiles: inputs.map((i) => i.file?.entry.file.path ?? i.key),
        addedFiles,
        summaryProperties: { [RUN_ID_PROPERTY]: entry.runId, [GROUP_ID_PROPERTY]: entry.groupId },
      },
      {
        clock: deps.clock,
        maxAttempts: options.maxAttempts ?? 8,
        ...(options.backoffMs === undefined ? {} : { backoffMs: options.backoffMs }),
        ...(options.sleep === undefined ? {} : { sleep: options.sleep }),
      },
    );
    return { kind: 'committed', snapshotId: result.snapshotId.toString() };
  } catch (err) {
    // Both are thrown before anything of the attempt is written; anything else leaves the outcome unknown.
    if (!(err instanceof IcebergCommitConflictError) && !(err instanceof IcebergUnsupportedError)) throw err;
    // A twin attempt of this group may have committed meanwhile: its snapshot removing our inputs is the conflict.
    const twin = ownSnapshotId(await catalog.load(state.tableRoot), entry);
    if (twin !== undefined) return { kind: 'committed', snapshotId: twin };
    if (err instanceof IcebergUnsupportedError)
      // The table changed to something this writer may not commit to (e.g. upgraded to format v3) since planning.
      return conflict([{ key: metadataDir, reason: err.message }]);
    return conflict(
      err.reasons.map((reason) => ({
        key:
          inputs.find((i) => i.file !== undefined && reason.includes(i.file.entry.file.path))?.key ??
          metadataDir,
        reason,
      })),
    );
  }
}

function conflict(conflicts: readonly CommitConflict[]): CommitResultKind {
  return { kind: 'conflict', conflicts };
}

/**
 * An aborted group's outputs: in staging, and any copy in the table's folders (no snapshot names it: the group
 * aborted before or instead of committing). Idempotent.
 */
async function removeUncommitted(deps: CommitDeps, entry: GroupJournalEntry): Promise<void> {
  const state = entry.formatState === undefined ? undefined : icebergGroupState(entry);
  if (state?.committedSnapshotId !== undefined) return;
  const copies = entry.outputs.map((o) => o.finalKey);
  await deleteAll(deps.store, [...copies, ...(await stagingLeftovers(deps.store, entry.stagingPrefix))]);
}

async function deleteAll(store: ObjectStore, keys: readonly string[]): Promise<void> {
  if (keys.length === 0) return;
  const result = await store.deleteMany(keys.map((key) => ({ key })));
  if (result.errors.length > 0) {
    throw new Error(
      `Could not delete ${result.errors.length} object(s): ${result.errors
        .map((e) => `${e.key}: ${e.code === undefined ? '' : `${e.code}: `}${e.message}`)
        .join('; ')}. Retry; the step is idempotent.`,
    );
  }
}

function describe(conflicts: readonly CommitConflict[]): string {
  return conflicts.map((c) => `${c.key} (${c.reason})`).join(', ');
}

/** No visibility window: an Iceberg reader switches from the inputs to the outputs at one snapshot, never both. */
function outcome(entry: GroupJournalEntry, conflicts: readonly CommitConflict[]): CommitOutcome {
  const done = entry.state === 'done';
  return {
    state: done ? 'done' : 'aborted',
    published: done ? entry.outputs.map((o) => o.finalKey) : [],
    retired: done ? entry.inputs.map((i) => i.key) : [],
    conflicts,
    ...(entry.reason === undefined ? {} : { reason: entry.reason }),
  };
}
