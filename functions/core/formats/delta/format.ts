// Delta Lake (`format: "delta"`) behind the TableFormat port: the log is the table. The snapshot is a log version,
// a group commits as one OPTIMIZE version through put-if-absent (commit.ts), and the inputs it removes stay on
// storage until Delta VACUUM, so a reader of an older version still finds them. How the put-if-absent is made is
// the table's declared `deltaLogStore` (coordination.ts), bound by `forTable`; without one nothing is committed.
import type { FormatState, GroupJournalEntry, JournalInput } from '../../../ports/journal.js';
import type { ObjectStore } from '../../../ports/object-store.js';
import type { DeletedRows } from '../../deletes/deleted-rows.js';
import { InvalidInputError } from '../../errors.js';
import type { PlanInput } from '../../planning.js';
import { hiveVacuumRules } from '../hive/vacuum.js';
import type {
  PartitionFiles,
  PartitionLocation,
  SnapshotOptions,
  TableFormat,
  TableSnapshot,
  VacuumRules,
} from '../table-format.js';
import { deletionVectorSchema, deletionVectorUniqueId } from './actions.js';
import { deltaChanges } from './changes.js';
import { deltaCommitter, deltaFormatState, deltaGroupState } from './commit.js';
import type { DeltaFormatServices } from './coordination.js';
import { readDeletionVector } from './deletion-vectors.js';
import { deltaHelp } from './help.js';
import { deltaHistory } from './history.js';
import { coordinationMismatch, deltaLogStoreFor } from './log-store-for.js';
import { deltaMaintenance } from './maintenance.js';
import { type DeltaTableSettings, deltaSettings } from './settings.js';
import { deltaPlanInputs, snapshotDeltaTable } from './table-snapshot.js';
import { deltaUndo } from './undo.js';

// Where they always were, for their callers (commit, compact, the handlers).
export { coordinationMismatch, deltaLogStoreFor } from './log-store-for.js';

/** The table's latest version as the port's snapshot, with the version in `formatState`. */
async function snapshot(
  store: ObjectStore,
  location: string,
  options: SnapshotOptions,
): Promise<TableSnapshot> {
  const read = await snapshotDeltaTable(store, location, options);
  return { ...read.snapshot, formatState: deltaFormatState(location.replace(/\/+$/, ''), read.version) };
}

function readVersionOf(state: FormatState | undefined): number {
  const version = state?.readVersion;
  if (typeof version !== 'number') {
    throw new InvalidInputError(
      'A Delta snapshot without its log version cannot be planned: take it with the Delta format',
    );
  }
  return version;
}

function planInputs(snapshot: TableSnapshot, table: string): PlanInput[] {
  return deltaPlanInputs(snapshot, readVersionOf(snapshot.formatState), table);
}

/**
 * One partition's live files at the latest version: the whole log is read (a Delta partition is a set of partition
 * values, not a directory), then the partition whose path the values spell is taken.
 */
async function partitionFiles(
  store: ObjectStore,
  where: PartitionLocation,
  options: SnapshotOptions,
): Promise<PartitionFiles> {
  const read = await snapshotDeltaTable(store, where.tableRoot, options);
  const partition = read.snapshot.partitions.find((p) => p.partition === where.partition);
  return {
    files: partition?.files ?? [],
    snapshot: { listedAt: options.now, deltaVersion: read.version },
    formatState: deltaFormatState(where.tableRoot, read.version),
  };
}

/**
 * Vacuum of the work root for Delta groups: a group never deletes or trashes an input (the log removes it and
 * Delta VACUUM deletes it after the table's retention), so no retired input is ever due; trash and removal rules
 * are the shared ones.
 */
const deltaVacuumRules: VacuumRules = {
  ...hiveVacuumRules,
  retiresByVersion: false,
  // Nothing is due and nothing is reported kept: the inputs are the table's (its log removed them), not ours, and
  // Delta VACUUM of the table deletes them once its deletedFileRetentionDuration has passed.
  retiredInputs: () => ({ due: [], kept: [] }),
  writerDebris: () => undefined,
};

/**
 * The positions an input's deletion vector (as the plan recorded it) deletes, read from the table: inline, or from
 * its DV file under the table root. The descriptor must still be the one whose unique id the plan recorded.
 * @throws InvalidInputError for a journal entry whose descriptor is not a DV's; DeltaLogError for a DV that cannot
 * be read or disagrees with its descriptor.
 */
async function deletedRows(
  store: ObjectStore,
  entry: GroupJournalEntry,
  input: JournalInput,
): Promise<DeletedRows> {
  const parsed = deletionVectorSchema.safeParse(input.deletes?.descriptor);
  if (
    input.deletes === undefined ||
    !parsed.success ||
    deletionVectorUniqueId(parsed.data) !== input.deletes.id
  ) {
    throw new InvalidInputError(
      `Group ${entry.groupId} of run ${entry.runId}: the journal's deletion vector of ${input.key} is not a valid descriptor of id ${input.deletes?.id ?? '(none)'}`,
    );
  }
  if (parsed.data.cardinality !== input.deletes.rows) {
    throw new InvalidInputError(
      `Group ${entry.groupId} of run ${entry.runId}: the journal's deletion vector of ${input.key} deletes ${parsed.data.cardinality} rows, its entry says ${input.deletes.rows}`,
    );
  }
  return readDeletionVector(store, deltaGroupState(entry).tableRoot, input.key, parsed.data);
}

// No coordination: the registered format reads, plans and rolls back; a commit (or roll-forward) needs the table's
// declared coordination, so it is refused until `forTable` binds one (see deltaCommitter).
const committer = deltaCommitter();

/**
 * Delta Lake through its transaction log (see commit.ts for the protocol). The registered format reads and plans;
 * it commits nothing: `forTable` gives the format of a table as its declared `deltaLogStore` makes it.
 */
export const deltaLake = {
  name: 'delta',
  title: 'Delta Lake',
  ownsEverythingUnderRoot: true,
  snapshot,
  planInputs,
  partitionFiles,
  commit: committer.commit,
  rollback: committer.rollback,
  vacuum: deltaVacuumRules,
  partitionRewrite: {
    kind: 'table-schema',
    advice:
      "a Delta table's schema is its log's: change it with ALTER TABLE in the table's own engine (Spark, delta-rs), then lake-compactor compact <uri> --format delta rewrites small files under the table's current schema",
  },
  isOwnMetadataWrite: (relativeKey: string) => relativeKey.startsWith('_delta_log/'),
  // A data-file PUT is not a change (uncommitted files are not data); each new commit of the log is.
  changes: deltaChanges,
  deletedRows,
  settings: deltaSettings,
  help: deltaHelp,
  forTable: deltaForTable,
  // VACUUM through the log, read through the table's declared coordination (maintenance.ts).
  maintenance: deltaMaintenance,
  // The log records every OPTIMIZE version our runs committed (history.ts).
  history: deltaHistory,
  // `lake-compactor undo`: one RESTORE-like version putting the run's files back (undo.ts); it commits only through
  // the table's declared coordination, which `forTable` binds.
  undo: deltaUndo(),
} as const satisfies TableFormat;

/**
 * The Delta format of one table, as its declared `deltaLogStore` makes it. Before the plan reads the log, the
 * log store finishes an entry another writer left incomplete (DynamoDB, as Spark's reader does) and checks the
 * declaration against what the log shows: a writer that does not coordinate that way refuses the table
 * (CoordinationMismatchError, alarmed); a closed quiet window plans nothing, saying why. Every commit checks
 * again right before its put (commit.ts).
 * @throws InvalidInputError when the table declares no coordination, or needs DynamoDB access `services` lacks.
 */
function deltaForTable(settings: DeltaTableSettings, services: DeltaFormatServices): TableFormat {
  const logStoreOf = deltaLogStoreFor(settings.deltaLogStore, services);
  const coordinated = deltaCommitter({ logStore: logStoreOf });
  return {
    ...deltaLake,
    snapshot: async (store, location, options) => {
      const root = location.replace(/\/+$/, '');
      const logStore = logStoreOf(store);
      await logStore.prepareRead(root);
      // A whole-table read (the CLI's inventory, a fan-out): refused on a mismatch; a closed quiet window is said
      // per partition, when its plan plans nothing.
      const finding = await logStore.check(root, { now: options.now, purpose: 'plan' });
      if (finding?.kind === 'mismatch') throw coordinationMismatch(root, logStore, finding.message);
      return snapshot(store, location, options);
    },
    partitionFiles: async (store, where, options) => {
      const logStore = logStoreOf(store);
      await logStore.prepareRead(where.tableRoot);
      const finding = await logStore.check(where.tableRoot, { now: options.now, purpose: 'plan' });
      if (finding?.kind === 'mismatch')
        throw coordinationMismatch(where.tableRoot, logStore, finding.message);
      if (finding?.kind === 'not-now') {
        return { files: [], snapshot: { listedAt: options.now }, refusal: finding.message };
      }
      return partitionFiles(store, where, options);
    },
    commit: coordinated.commit,
    rollback: coordinated.rollback,
    undo: deltaUndo(logStoreOf),
  };
}
