// The commit of a verified group on an Iceberg table: the snapshot, not the listing, is the table, so a file is data
// only once a snapshot adds it. The journal-driven steps are the shared ones of version-commit.ts (outputs copied
// into the partition's folder under fresh names, invisible until a snapshot adds them); this file is the atomic
// commit itself:
//
//   published   a `replace` snapshot through the catalog (commit.ts `commitReplace`): the inputs removed, the
//               outputs added with the starting snapshot's data sequence number, the summary tagged with this
//               run and group. First every snapshot of the table is searched for that tag: one found means an
//               earlier attempt committed (done). A snapshot since the starting one that removed an input or added
//               a position delete / DV to one is a conflict (the group aborts and its never-committed outputs are
//               deleted); anything else (appends, other partitions, equality deletes) is rebased over; lost races
//               are retried inside the commit and end in a retryable error.                           → retired
//   retired     the inputs stay on storage until expire_snapshots.                                    → done
//
// Why no row is ever lost or doubled: the catalog is linear (put-if-absent of the next metadata version), and a
// replace is written only onto a base in which every input is still live. Of two attempts of the same group (a
// retry racing a slow first attempt) the later one finds either the earlier one's tagged snapshot before it
// writes, or — when it loaded the table just after that snapshot — its inputs no longer live; a conflict is
// therefore always checked again for our own tag before the group aborts. Outputs are deleted only in states from
// which no attempt may commit (before `published`, or aborted with no snapshot of ours in the table).
import pLimit from 'p-limit';
import type { FormatState, GroupJournalEntry } from '../../../ports/journal.js';
import type { ObjectStore } from '../../../ports/object-store.js';
import { LAST_UPDATED_SEQUENCE_NUMBER_FIELD, ROW_ID_FIELD } from '../../../ports/parquet-engine.js';
import { InvalidInputError } from '../../errors.js';
import { KeyOutsideTableError } from '../../keys.js';
import type { CommitConflict, CommitDeps } from '../table-format.js';
import { versionCommitter } from '../version-commit.js';
import { type IcebergCatalog, type LoadedTable, PathCatalog } from './catalog.js';
import { metadataVersion } from './catalogs.js';
import { type AddedDataFile, commitReplace } from './commit.js';
import { IcebergCommitConflictError, IcebergUnsupportedError } from './errors.js';
import { partitionKey, readSnapshotFiles } from './live-files.js';
import { type IcebergSchema, schemaById } from './metadata.js';
import { metricsConfig, readParquetMetrics } from './metrics.js';
import { appliedDeleteOf, deletesByDataFile, deletesId } from './row-deletes.js';

/** The snapshot summary property naming the run that committed a group: how a retry finds its own snapshot. */
export const RUN_ID_PROPERTY = 'lake-compactor.run-id';
/** The snapshot summary property naming the group (with {@link RUN_ID_PROPERTY}). */
export const GROUP_ID_PROPERTY = 'lake-compactor.group-id';

/** The formatState key saying the run was planned with `remove-dangling-deletes` (see rewrite-options.ts). */
export const REMOVE_DANGLING_DELETES_STATE = 'removeDanglingDeletes';

/** What the Iceberg format records per group: where the table is, the snapshot planned at, the one committed. */
export interface IcebergGroupState {
  readonly tableRoot: string;
  /** The starting snapshot's id, as decimal text (a 64-bit id does not fit a JSON number). */
  readonly snapshotId: string;
  readonly committedSnapshotId?: string;
  /** The replace also drops the delete files left dangling (`remove-dangling-deletes`). */
  readonly removeDanglingDeletes?: boolean;
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
    ...(s[REMOVE_DANGLING_DELETES_STATE] === true ? { removeDanglingDeletes: true } : {}),
  };
}

/** Where a group's formatState keeps the cursor version of its commit (see {@link icebergCommittedVersion}). */
const COMMITTED_CURSOR_STATE = 'committedCursorVersion';

/**
 * The version of the profiler's cursor from which it includes a group's commit, from the group's formatState: the
 * snapshot's sequence number, or on format version 1 (no sequence numbers) the number of the metadata file that
 * made it current — counted as changes.ts's cursor counts. Undefined before the commit.
 */
export function icebergCommittedVersion(state: FormatState): number | undefined {
  const version = state[COMMITTED_CURSOR_STATE];
  return typeof version === 'number' ? version : undefined;
}

/**
 * Our group's snapshot `snapshotId`, found in `table` (an earlier attempt committed it): its sequence number, or on
 * format version 1 the table's current metadata version — no earlier than the one that committed it, so a wait for
 * it never ends before the commit is counted.
 */
export function committedIn(table: LoadedTable, snapshotId: string): CommitResultKind {
  const snapshot = table.metadata.snapshots.find((s) => s.snapshotId.toString() === snapshotId);
  const cursorVersion =
    table.metadata.formatVersion === 1 || snapshot === undefined
      ? table.version
      : Number(snapshot.sequenceNumber);
  return { kind: 'committed', snapshotId, cursorVersion };
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

/** The Iceberg commit and rollback, bound to how the table's commits are coordinated (version-commit.ts). */
export function icebergCommitter(options: IcebergCommitterOptions = {}) {
  const catalogOf = options.catalog ?? ((store: ObjectStore) => new PathCatalog(store));
  return versionCommitter({
    async commitVersion(deps, entry) {
      const result = await commitToTable(deps, entry, catalogOf(deps.store), options);
      return result.kind === 'committed'
        ? {
            kind: 'committed',
            state: {
              committedSnapshotId: result.snapshotId,
              ...(result.cursorVersion === undefined
                ? {}
                : { [COMMITTED_CURSOR_STATE]: result.cursorVersion }),
            },
          }
        : result;
    },
    isCommitted: (entry) =>
      entry.formatState !== undefined && icebergGroupState(entry).committedSnapshotId !== undefined,
  });
}

type CommitResultKind =
  | {
      readonly kind: 'committed';
      readonly snapshotId: string;
      /** The profiler's cursor version that includes it (see {@link icebergCommittedVersion}), when known. */
      readonly cursorVersion?: number;
    }
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
  if (earlier !== undefined) return committedIn(table, earlier);
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

  // A v3 table's rows keep their lineage only if the rewrite wrote it into every output row.
  if (table.metadata.formatVersion >= 3) {
    const without = entry.inputs.filter((i) => i.rowLineage === undefined);
    if (without.length > 0)
      return conflict(
        without.map((i) => ({
          key: i.key,
          reason:
            'rewritten without its row lineage, but the table is at format version 3 now: its rows would lose their _row_id',
        })),
      );
  }
  const current = schemaById(table.metadata);
  if (current === undefined) throw new InvalidInputError(`${table.name} has no current schema`);
  // The lineage columns are metadata columns, not in the table schema: metrics for them too, as Iceberg Java writes.
  const schema = table.metadata.formatVersion >= 3 ? withRowLineageFields(current) : current;
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
        ...(state.removeDanglingDeletes === true ? { removeDanglingDeletes: true } : {}),
        maxAttempts: options.maxAttempts ?? 8,
        ...(options.backoffMs === undefined ? {} : { backoffMs: options.backoffMs }),
        ...(options.sleep === undefined ? {} : { sleep: options.sleep }),
      },
    );
    return {
      kind: 'committed',
      snapshotId: result.snapshotId.toString(),
      // As the profiler's cursor counts (changes.ts): sequence numbers, or on format version 1 metadata versions.
      cursorVersion:
        table.metadata.formatVersion === 1
          ? metadataVersion(result.metadataKey)
          : Number(result.sequenceNumber),
    };
  } catch (err) {
    // These are thrown before anything of the attempt is written; anything else leaves the outcome unknown. A
    // metadata path that leaves the table root (KeyOutsideTableError) is met while reading, like a refused feature.
    const refusal = err instanceof IcebergUnsupportedError || err instanceof KeyOutsideTableError;
    if (!(err instanceof IcebergCommitConflictError) && !refusal) throw err;
    // A twin attempt of this group may have committed meanwhile: its snapshot removing our inputs is the conflict.
    const reloaded = await catalog.load(state.tableRoot);
    const twin = ownSnapshotId(reloaded, entry);
    if (twin !== undefined) return committedIn(reloaded, twin);
    if (refusal)
      // The table changed since planning to something this writer may not commit to (a feature it refuses).
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

/** `schema` with the row lineage metadata columns (optional longs) after its fields. */
function withRowLineageFields(schema: IcebergSchema): IcebergSchema {
  return {
    ...schema,
    fields: [
      ...schema.fields,
      { id: ROW_ID_FIELD.id, name: ROW_ID_FIELD.name, required: false, type: 'long' },
      {
        id: LAST_UPDATED_SEQUENCE_NUMBER_FIELD.id,
        name: LAST_UPDATED_SEQUENCE_NUMBER_FIELD.name,
        required: false,
        type: 'long',
      },
    ],
  };
}

function conflict(conflicts: readonly CommitConflict[]): CommitResultKind {
  return { kind: 'conflict', conflicts };
}
