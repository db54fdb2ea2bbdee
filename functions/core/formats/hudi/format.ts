// Apache Hudi (`format: "hudi"`) behind the TableFormat port: the timeline is the table. The snapshot is the live
// base files of base-only file groups at the latest completed instant (table-state.ts); a group is clustered into
// new file groups through Hudi's own clustering protocol (clustering-commit.ts): a pending plan written before the
// rewrite (`prepareGroup`), a completed replacecommit as the atomic commit. Replaced file groups stay on storage for
// Hudi's cleaner, exactly as after Hudi's own clustering, unless the table opts in to our vacuum cleaning it through
// a `clean` instant (`hudiCleaner`, clean-maintenance.ts). How the lock is taken is the table's declared `hudiLock`,
// bound by `forTable`; without one nothing is written to the table.
import pLimit from 'p-limit';
import type { GroupJournalEntry } from '../../../ports/journal.js';
import type { ObjectStore } from '../../../ports/object-store.js';
import { InvalidInputError } from '../../errors.js';
import type { PlanInput } from '../../planning.js';
import { hiveVacuumRules } from '../hive/vacuum.js';
import { withStoredFooter } from '../logged-files.js';
import type {
  CommitDeps,
  KeepAlive,
  PartitionFiles,
  PartitionLocation,
  PreparedGroup,
  SnapshotOptions,
  TableFormat,
  TableSnapshot,
  VacuumRules,
} from '../table-format.js';
import { versionCommitter } from '../version-commit.js';
import { HUDI_INDEX_FOOTER_KEYS } from './bloom/index.js';
import { hudiChanges, hudiChangesFor } from './changes.js';
import { hudiCleanMaintenance } from './clean-maintenance.js';
import {
  clusteringKeepAlive,
  clusteringProtocol,
  type HudiCoordination,
  hudiFormatState,
  prepareHudiGroup,
} from './clustering-commit.js';
import { MERGE_REFUSAL_ERRORS } from './compaction-merge.js';
import { hudiCompactionService } from './compaction-service.js';
import {
  afterCompactionAbort,
  afterCompactionCommit,
  beforeCompactionPublish,
  commitCompactionGroup,
  hudiCompactionPlanService,
  isCompactionGroup,
  prepareCompactionGroup,
} from './compaction-workflow.js';
import { hudiHelp } from './help.js';
import { type HudiTableLock, StorageBasedHudiLock } from './lock/index.js';
import { HEARTBEAT_RENEW_MS, renewHeartbeat } from './pending-instant.js';
import { HUDI_FORMAT_NAME, type HudiLockSetting, type HudiTableSettings, hudiSettings } from './settings.js';
import { cachedBy, type HudiTableState, readHudiTable, toTableSnapshot } from './table-state.js';
import type { InstantMetadataCache } from './timeline.js';

/**
 * The services Hudi's `forTable` takes: the DynamoDB lock of a table declaring `hudiLock: { provider: "dynamodb" }`,
 * and the decoded instants a warm function keeps across its reads (instant-cache.ts; one per cold start).
 */
export interface HudiFormatServices {
  readonly hudiDynamoDbLock?: (setting: {
    readonly table: string;
    readonly region?: string | undefined;
    readonly partitionKey: string;
  }) => HudiTableLock;
  readonly hudiInstantCache?: InstantMetadataCache;
}

/** The snapshot of a read table state, footers read when asked (rows and schema for planning). */
async function snapshotOf(
  store: ObjectStore,
  state: HudiTableState,
  options: SnapshotOptions,
): Promise<TableSnapshot> {
  const snapshot = toTableSnapshot(state, options.now);
  const limit = pLimit(options.concurrency ?? 32);
  const partitions = options.readFooters
    ? await Promise.all(
        snapshot.partitions.map(async (p) => ({
          ...p,
          files: await Promise.all(
            p.files.map((f) =>
              limit(() =>
                withStoredFooter(store, f, 'the Hudi timeline', 'a Hudi reader', HUDI_INDEX_FOOTER_KEYS),
              ),
            ),
          ),
        })),
      )
    : snapshot.partitions;
  return { ...snapshot, partitions, formatState: hudiFormatState(state) };
}

async function snapshot(
  store: ObjectStore,
  location: string,
  options: SnapshotOptions,
  instantCache?: InstantMetadataCache,
): Promise<TableSnapshot> {
  const state = await readHudiTable(store, location.replace(/\/+$/, ''), {
    ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
    ...cachedBy({ instantCache }),
  });
  return snapshotOf(store, state, options);
}

function planInputs(snapshot: TableSnapshot, table: string): PlanInput[] {
  return snapshot.partitions.map((p) => ({
    table,
    partition: p.partition,
    files: [...p.files],
    snapshot: { listedAt: snapshot.listedAt },
  }));
}

/**
 * One partition's live base-only files. A pending insert_overwrite or delete_partition names its file groups only
 * once it completes, so while one is pending no partition is planned (notes §10).
 */
async function partitionFiles(
  store: ObjectStore,
  where: PartitionLocation,
  options: SnapshotOptions,
  instantCache?: InstantMetadataCache,
): Promise<PartitionFiles> {
  const state = await readHudiTable(store, where.tableRoot, {
    ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
    ...cachedBy({ instantCache }),
  });
  const pending = state.timeline.pendingReplaces[0];
  if (pending !== undefined)
    return {
      files: [],
      snapshot: { listedAt: options.now },
      refusal: `a replacecommit (insert_overwrite or delete_partition) ${pending.time} is pending on the Hudi table: its file groups are unknown until it completes or is rolled back`,
    };
  const snap = await snapshotOf(store, state, options);
  const partition = snap.partitions.find((p) => p.partition === where.partition);
  return {
    files: partition?.files ?? [],
    snapshot: { listedAt: options.now },
    ...(snap.formatState === undefined ? {} : { formatState: snap.formatState }),
    values: partition?.values ?? [],
  };
}

/**
 * Vacuum of the work root for Hudi groups: no input is ever deleted or trashed by these rules (the replacecommit
 * replaces the file groups; Hudi's cleaner deletes them after the table's retention, as after Hudi's own clustering,
 * or — opted in — our clean instant does, through `maintenance`),
 * and nothing under a Hudi root is writer debris of ours: `.hoodie/` (its `.temp/`, `.heartbeat/`, `.locks/`) is
 * the table's.
 */
const hudiVacuumRules: VacuumRules = {
  ...hiveVacuumRules,
  retiresByVersion: false,
  retiredInputs: () => ({ due: [], kept: [] }),
  writerDebris: () => undefined,
};

/**
 * The commit and rollback of Hudi groups under `coordination` (none: reads and rollbacks only): a clustering group
 * completes its own replacecommit; a Merge-on-Read compaction group is one file slice of a compaction its run's groups
 * complete together (compaction-workflow.ts).
 */
function hudiCommitter(coordination?: HudiCoordination) {
  const clustering = clusteringProtocol(coordination);
  return versionCommitter({
    commitVersion: (deps, entry, context) =>
      isCompactionGroup(entry)
        ? commitCompactionGroup(coordination, deps, entry, context)
        : clustering.commitVersion(deps, entry, context),
    isCommitted: clustering.isCommitted,
    beforePublish: async (deps, entry) =>
      isCompactionGroup(entry)
        ? beforeCompactionPublish(deps, entry)
        : clustering.beforePublish?.(deps, entry),
    // The group's pending instant kept alive while its outputs are copied in, as while it was rewritten and verified.
    keepAlive: (deps, entry) => groupKeepAlive(deps.store, entry),
    afterCommit: async (deps, entry) =>
      isCompactionGroup(entry) ? afterCompactionCommit(deps, entry) : clustering.afterCommit?.(deps, entry),
    afterAbort: async (deps, entry) =>
      isCompactionGroup(entry)
        ? afterCompactionAbort(coordination, deps, entry)
        : clustering.afterAbort?.(deps, entry),
  });
}

/** A group's work before its rewrite: a compaction group's merged slice, or a clustering group's instant. */
function prepareGroup(
  coordination: HudiCoordination | undefined,
  deps: CommitDeps,
  entry: GroupJournalEntry,
): Promise<PreparedGroup> {
  return isCompactionGroup(entry)
    ? prepareCompactionGroup(deps, entry, coordination)
    : prepareHudiGroup(coordination, deps, entry);
}

/**
 * A prepared group's pending instant (its clustering, or the compaction its file slice belongs to) keeps its heartbeat
 * while verify re-reads the outputs: a LAZY Hudi writer rolls back a pending clustering whose heartbeat is 2 minutes
 * old — so a lapsed one is never renewed, and the commit aborts T (clustering-commit.ts `clusteringKeepAlive`) — and
 * another run of ours takes a plan for dead after 10 minutes without one (abandoned-plans.ts; the heartbeat:
 * pending-instant.ts).
 */
function groupKeepAlive(store: ObjectStore, entry: GroupJournalEntry): KeepAlive | undefined {
  const s = entry.formatState ?? {};
  const { tableRoot, hudiInstant } = s;
  if (typeof tableRoot !== 'string' || typeof hudiInstant !== 'string' || s.hudiCommitted === true)
    return undefined;
  // A compaction's heartbeat is read by our own runs only (Hudi's writers never roll a pending compaction back), which
  // take a plan over after 10 minutes without one and only when no journal holds it: renewed as it is. A
  // clustering's is Hudi's judgement of a failed write: renewed only while alive.
  if (isCompactionGroup(entry))
    return { everyMs: HEARTBEAT_RENEW_MS, renew: () => renewHeartbeat(store, tableRoot, hudiInstant) };
  return clusteringKeepAlive(store, tableRoot, hudiInstant);
}

const unbound = hudiCommitter();

/**
 * Apache Hudi through its timeline. The registered format reads and plans; it writes nothing to a table: `forTable`
 * gives the format of a table as its declared `hudiLock` makes it.
 */
export const hudiTable = {
  name: HUDI_FORMAT_NAME,
  title: 'Apache Hudi',
  ownsEverythingUnderRoot: true,
  snapshot,
  planInputs,
  partitionFiles,
  prepareGroup: (deps, entry) => prepareGroup(undefined, deps, entry),
  groupKeepAlive,
  commit: unbound.commit,
  rollback: unbound.rollback,
  vacuum: hudiVacuumRules,
  // Cleaning through Hudi's own clean instant, opt-in per table (hudiCleaner; clean-maintenance.ts).
  maintenance: hudiCleanMaintenance<HudiFormatServices>(coordinationOf),
  isOwnMetadataWrite: (relativeKey: string) => relativeKey.startsWith('.hoodie/'),
  changes: hudiChanges,
  settings: hudiSettings,
  help: hudiHelp,
  forTable: hudiForTable,
  // A slice the merge refuses by name is refused the same way by every run until its files change
  // (compaction-merge.ts): the partition waits for an operator instead of being restarted each sweep.
  operatorErrors: MERGE_REFUSAL_ERRORS,
} as const satisfies TableFormat;

/**
 * The Hudi format of one table, as its declared settings make it: the lock its writers take, the zone it mints
 * instants in.
 * @throws InvalidInputError when the table declares a DynamoDB lock and `services` cannot build one.
 */
function hudiForTable(settings: HudiTableSettings, services: HudiFormatServices): TableFormat {
  const lock = settings.hudiLock;
  // The profiler starts a run when the plan step would compact: by the table's own trigger (compaction-trigger.ts).
  const cache = services.hudiInstantCache;
  const changes = hudiChangesFor(settings.hudiCompactionDeltaCommits, cache);
  // Every read of the table through this format decodes each completed instant once per function (instant-cache.ts).
  const reads = {
    snapshot: (store: ObjectStore, location: string, options: SnapshotOptions) =>
      snapshot(store, location, options, cache),
    partitionFiles: (store: ObjectStore, where: PartitionLocation, options: SnapshotOptions) =>
      partitionFiles(store, where, options, cache),
  };
  if (lock === undefined) return { ...hudiTable, ...reads, changes };
  const coordination = coordinationOf(lock, settings.hudiTimezone, services);
  const committer = hudiCommitter(coordination);
  return {
    ...hudiTable,
    ...reads,
    changes,
    prepareGroup: (deps, entry) => prepareGroup(coordination, deps, entry),
    commit: committer.commit,
    rollback: committer.rollback,
    tableService: hudiCompactionService(coordination, settings.hudiCompactionDeltaCommits),
    // The same compaction as the deployed workflow runs it: planned by the plan step, committed after the Map.
    planService: hudiCompactionPlanService(coordination, settings.hudiCompactionDeltaCommits),
  };
}

function coordinationOf(
  lock: HudiLockSetting,
  localZone: string | undefined,
  services: HudiFormatServices,
): HudiCoordination {
  // What every provider's coordination carries: the zone instants are minted in, the function's instant cache.
  const common = {
    ...(localZone === undefined ? {} : { localZone }),
    ...(services.hudiInstantCache === undefined ? {} : { instantCache: services.hudiInstantCache }),
  };
  switch (lock.provider) {
    case 'storage':
      return {
        ...common,
        lockFor: (store, tableRoot, _name, clock) => new StorageBasedHudiLock({ store, tableRoot, clock }),
      };
    case 'dynamodb': {
      const build = services.hudiDynamoDbLock;
      if (build === undefined)
        throw new InvalidInputError(
          'hudiLock { provider: "dynamodb" } needs DynamoDB access, which this entry point does not have',
        );
      return {
        ...common,
        lockFor: (_store, tableRoot, tableName) =>
          build({
            table: lock.table,
            region: lock.region,
            // Hudi's default partition key is the table name; without it, the root's last folder stands in.
            partitionKey: lock.partitionKey ?? tableName ?? tableRoot.slice(tableRoot.lastIndexOf('/') + 1),
          }),
      };
    }
    case 'none':
      return { ...common, quietWindowMinutes: lock.quietWindowMinutes, lockFor: () => undefined };
  }
}
