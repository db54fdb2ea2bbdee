// Delta Lake (`format: "delta"`) behind the TableFormat port: the log is the table. The snapshot is a log version,
// a group commits as one OPTIMIZE version through put-if-absent (commit.ts), and the inputs it removes stay on
// storage until Delta VACUUM, so a reader of an older version still finds them. How the put-if-absent is made is
// the table's `deltaLogStore` setting (coordination.ts), bound by `forTable`.
import type { FormatState, GroupJournalEntry, JournalInput } from '../../../ports/journal.js';
import type { ObjectStore } from '../../../ports/object-store.js';
import type { DeletedRows } from '../../deletes/deleted-rows.js';
import { InvalidInputError } from '../../errors.js';
import type { PlanInput } from '../../planning.js';
import { hiveVacuumRules } from '../hive/vacuum.js';
import type {
  FormatServices,
  PartitionFiles,
  PartitionLocation,
  SnapshotOptions,
  TableFormat,
  TableFormatSettings,
  TableSnapshot,
  VacuumRules,
} from '../table-format.js';
import { deletionVectorSchema, deletionVectorUniqueId } from './actions.js';
import { deltaChanges } from './changes.js';
import { deltaCommitter, deltaFormatState, deltaGroupState } from './commit.js';
import { DEFAULT_DELTA_LOG_STORE, dynamoDbCoordinationUnavailable } from './coordination.js';
import { readDeletionVector } from './deletion-vectors.js';
import type { DeltaLogStore } from './log-store.js';
import { deltaPlanInputs, snapshotDeltaTable } from './table-snapshot.js';

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

const committer = deltaCommitter();

/**
 * Delta Lake through its transaction log (see commit.ts for the protocol), committing with S3 conditional writes;
 * `forTable` gives the format of a table whose `deltaLogStore` says otherwise.
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
  isOwnMetadataWrite: (relativeKey: string) => relativeKey.startsWith('_delta_log/'),
  // A data-file PUT is not a change (uncommitted files are not data); each new commit of the log is.
  changes: deltaChanges,
  deletedRows,
  settings: ['deltaLogStore'],
  forTable: deltaForTable,
} as const satisfies TableFormat;

/**
 * The Delta format of one table. `s3-conditional` (or no setting) is the registered format itself. `dynamodb`
 * commits through the log store the services build for that DynamoDB table, and also finishes an entry another
 * writer left incomplete before the plan reads the log (as Spark's reader does), so the plan starts from the
 * version every writer already agreed on. Refused when the services cannot build that store: committing with
 * S3 conditional writes instead would go unseen by the table's other writers.
 */
function deltaForTable(settings: TableFormatSettings, services: FormatServices): TableFormat {
  const setting = settings.deltaLogStore ?? DEFAULT_DELTA_LOG_STORE;
  if (setting.type === 's3-conditional') return deltaLake;
  const build = services.deltaLogStore;
  if (build === undefined) throw dynamoDbCoordinationUnavailable(setting);
  const logStoreOf = (store: ObjectStore): DeltaLogStore => build(setting, store);
  const coordinated = deltaCommitter({ logStore: logStoreOf });
  return {
    ...deltaLake,
    snapshot: async (store, location, options) => {
      await logStoreOf(store).prepareRead(location.replace(/\/+$/, ''));
      return snapshot(store, location, options);
    },
    partitionFiles: async (store, where, options) => {
      await logStoreOf(store).prepareRead(where.tableRoot);
      return partitionFiles(store, where, options);
    },
    commit: coordinated.commit,
    rollback: coordinated.rollback,
  };
}
