// Apache Iceberg (`format: "iceberg"`) behind the TableFormat port, for path-based tables (a local folder or an S3
// prefix whose metadata/ holds vN.metadata.json and version-hint.text): the snapshot is the table. A group commits
// as one `replace` snapshot through the path catalog (group-commit.ts), and the inputs it removes stay on storage
// until expire_snapshots, so a reader of an older snapshot still finds them. The rows a data file's position
// deletes, DVs and equality deletes remove are dropped by the rewrite (row-deletes.ts, as positions).
import type { FormatState, GroupJournalEntry, JournalInput } from '../../../ports/journal.js';
import type { ObjectStore } from '../../../ports/object-store.js';
import { DeletedRows } from '../../deletes/deleted-rows.js';
import { InvalidInputError } from '../../errors.js';
import type { PartitionPlan, PlanInput } from '../../planning.js';
import { hiveVacuumRules } from '../hive/vacuum.js';
import type {
  FormatPlanRequest,
  PartitionFiles,
  PartitionLocation,
  SnapshotOptions,
  TableFormat,
  TableSnapshot,
  VacuumRules,
} from '../table-format.js';
import type { IcebergCatalog } from './catalog.js';
import {
  catalogUnavailable,
  DEFAULT_ICEBERG_CATALOG,
  type IcebergCatalogServices,
  type IcebergCatalogSetting,
  pathCatalogOf,
} from './catalogs.js';
import { icebergChanges } from './changes.js';
import { IcebergMetadataError, IcebergUnsupportedError } from './errors.js';
import {
  icebergCommitter,
  icebergFormatState,
  icebergGroupState,
  REMOVE_DANGLING_DELETES_STATE,
} from './group-commit.js';
import { icebergHelp } from './help.js';
import { icebergMaintenance } from './maintenance.js';
import {
  mergeRewriteOptions,
  type RewriteDataFilesOptions,
  resolveRewriteOptions,
} from './rewrite-options.js';
import { planIcebergPartition } from './rewrite-plan.js';
import { parseInputDeletes, readDeletedRows } from './row-deletes.js';
import { type IcebergTableSettings, icebergSettings } from './settings.js';
import { type IcebergTableSnapshot, snapshotIcebergTable } from './table-snapshot.js';
import { icebergTriggerRule } from './trigger-rule.js';
import { icebergUndo } from './undo.js';

/** Iceberg v3 types the rewrite does not carry: no Parquet mapping is checked for them, nor metrics written. */
const UNSUPPORTED_TYPES = /^(variant|geometry|geography)\b/;

/**
 * Why a table's schemas hold something this writer may not rewrite, or undefined: a column of a v3 type it does
 * not handle (`variant`, `geometry`, `geography`: their values have no exact path through the engine), or an
 * `unknown` list element, map key or value (the projection does not rebuild lists or maps, so it could not leave
 * out what the spec says is never stored). Nested fields (struct, list element, map key and value) count. A column
 * or struct field of the `unknown` type is not refused: it is always null and never stored in data files, so the
 * projection writes no column for it (projection.ts), as Iceberg's own writers do. Column default values are not
 * refused: a file written before a column existed is projected with the column's `initial-default` (projection.ts)
 * or rewritten as written — still without the column, so readers fill the default as they did —, and
 * `write-default` is for rows a writer adds, which a rewrite never does.
 */
export function unsupportedSchemaFeature(
  metadata: IcebergTableSnapshot['table']['metadata'],
): string | undefined {
  const visit = (path: string, field: Readonly<Record<string, unknown>>): string | undefined =>
    visitType(path, field.type, false);
  const visitType = (path: string, type: unknown, inCollection: boolean): string | undefined => {
    if (typeof type === 'string') {
      if (UNSUPPORTED_TYPES.test(type) || (inCollection && type === 'unknown'))
        return `the ${type} type (column ${path})`;
      return undefined;
    }
    if (typeof type !== 'object' || type === null) return undefined;
    const t = type as Readonly<Record<string, unknown>>;
    if (t.type === 'struct' && Array.isArray(t.fields))
      for (const f of t.fields as Readonly<Record<string, unknown>>[]) {
        const why = visitType(`${path}.${String(f.name)}`, f.type, inCollection);
        if (why !== undefined) return why;
      }
    if (t.type === 'list') return visitType(`${path}.element`, t.element, true);
    if (t.type === 'map')
      return visitType(`${path}.key`, t.key, true) ?? visitType(`${path}.value`, t.value, true);
    return undefined;
  };
  for (const schema of metadata.schemas)
    for (const field of schema.fields) {
      const why = visit(field.name, field);
      if (why !== undefined) return why;
    }
  return undefined;
}

/**
 * Refuses, before anything is planned or written, a table this writer may not rewrite, so no rewrite is spent on
 * a commit that must be refused. Format v3 is rewritten (row lineage is written into every output row, see
 * `rowLineageOf`); what v3 adds beyond it and this writer does not carry is refused by name.
 */
function refuseUncommittable(read: IcebergTableSnapshot): void {
  const why = unsupportedSchemaFeature(read.table.metadata);
  if (why !== undefined) throw new IcebergUnsupportedError(read.table.name, why);
}

function formatStateOf(read: IcebergTableSnapshot): FormatState | undefined {
  return read.snapshotId === undefined
    ? undefined
    : icebergFormatState(read.table.tableRoot, read.snapshotId);
}

/** The table's current snapshot as the port's snapshot, with its id in `formatState`. */
async function snapshot(
  store: ObjectStore,
  location: string,
  options: SnapshotOptions,
  catalog?: IcebergCatalog,
): Promise<TableSnapshot> {
  const read = await snapshotIcebergTable(store, location.replace(/\/+$/, ''), {
    now: options.now,
    ...(catalog === undefined ? {} : { catalog }),
    ...(options.readFooters === undefined ? {} : { readFooters: options.readFooters }),
    ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
  });
  refuseUncommittable(read);
  const formatState = formatStateOf(read);
  const properties = read.table.metadata.properties;
  return formatState === undefined
    ? { ...read.snapshot, properties }
    : { ...read.snapshot, formatState, properties };
}

/** The planner's input per partition (the snapshot id travels in the plan's formatState). */
function planInputs(snapshot: TableSnapshot, table: string): PlanInput[] {
  return snapshot.partitions.map((p) => ({
    table,
    partition: p.partition,
    files: [...p.files],
    snapshot: { listedAt: snapshot.listedAt },
  }));
}

/**
 * One partition's live files at the current snapshot, footers read for that partition only: the manifests are
 * read whole (an Iceberg partition is a partition tuple, not a directory), then the partition whose port path
 * (see `icebergPartitionOf`) matches is taken.
 */
async function partitionFiles(
  store: ObjectStore,
  where: PartitionLocation,
  options: Omit<SnapshotOptions, 'readFooters'>,
  catalog?: IcebergCatalog,
): Promise<PartitionFiles> {
  const read = await snapshotIcebergTable(store, where.tableRoot, {
    now: options.now,
    ...(catalog === undefined ? {} : { catalog }),
    readFooters: true,
    partition: where.partition,
    ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
  });
  refuseUncommittable(read);
  const formatState = formatStateOf(read);
  const found = read.snapshot.partitions[0];
  return {
    files: found?.files ?? [],
    snapshot: { listedAt: options.now },
    ...(formatState === undefined ? {} : { formatState }),
    ...(found === undefined ? {} : { values: found.values }),
    properties: read.table.metadata.properties,
  };
}

/**
 * The run's `rewrite_data_files` options the plan carries for this format (`request.options`, filled from the run
 * context's `rewriteDataFiles`, which run-input.ts resolved and checked with this format's schema), else none.
 */
function runRewriteOptions(request: FormatPlanRequest): RewriteDataFilesOptions {
  return (request.options?.['rewriteDataFiles'] as RewriteDataFilesOptions | undefined) ?? {};
}

/**
 * Plans a partition as Iceberg's `rewrite_data_files` would, with the run's options over Iceberg's defaults (the
 * target from the table's `write.target-file-size-bytes` unless an option sets it) and the operator's `where`; a
 * group is clamped to what one compact step may rewrite (`request.binpack.maxGroupBytes`).
 */
function planPartition(input: PlanInput, request: FormatPlanRequest): PartitionPlan {
  const options = resolveRewriteOptions(runRewriteOptions(request), {
    tableProperties: request.properties ?? {},
    engineGroupCapBytes: request.binpack.maxGroupBytes,
    ...(request.where === undefined ? {} : { where: request.where }),
  });
  const plan = planIcebergPartition(input, options, request.values ?? []);
  // What the commit must know of the options (it reads the journal, not the plan): carried in the groups' state.
  return options.removeDanglingDeletes
    ? { ...plan, formatState: { ...plan.formatState, [REMOVE_DANGLING_DELETES_STATE]: true } }
    : plan;
}

/**
 * Vacuum of the work root for Iceberg groups: a group never deletes or trashes an input (its replace snapshot
 * removes it from the table and expire_snapshots deletes it once no retained snapshot needs it), so no retired
 * input is ever due; trash and removal rules are the shared ones.
 */
const icebergVacuumRules: VacuumRules = {
  ...hiveVacuumRules,
  retiresByVersion: false,
  retiredInputs: (entry: GroupJournalEntry) => {
    const committed =
      entry.formatState === undefined ? undefined : icebergGroupState(entry).committedSnapshotId;
    const why = `removed from the Iceberg table${committed === undefined ? '' : ` by snapshot ${committed}`}: expire_snapshots deletes it once no retained snapshot references it, so readers of older snapshots still find it`;
    return { due: [], kept: entry.inputs.map((i) => ({ key: i.key, reason: why })) };
  },
  writerDebris: () => undefined,
};

/** Per group journal entry: the deleted rows of all its inputs, read together (each delete file once). */
const deletedRowsOfEntry = new WeakMap<GroupJournalEntry, Promise<Map<string, DeletedRows>>>();

/**
 * The positions an input's deletes (as the plan recorded them) delete, read from the delete files (and, for
 * equality deletes, from the input's equality columns). For a group, those of all its inputs are read at the
 * first call, so a delete file naming several inputs is read once. The count must be the plan's (`deletes.rows`), which verify expects the outputs to lack.
 * @throws InvalidInputError for a journal entry whose deletes are not a valid Iceberg descriptor of their id or
 *   count other rows; IcebergMetadataError for a delete file that cannot be read or disagrees with its manifest.
 */
async function deletedRows(
  store: ObjectStore,
  entry: GroupJournalEntry,
  input: JournalInput,
): Promise<DeletedRows> {
  const { tableRoot } = icebergGroupState(entry);
  const table = tableRoot === '' ? '(bucket root)' : tableRoot;
  const targetOf = (i: JournalInput) => {
    if (i.deletes === undefined) return undefined;
    try {
      return { ...parseInputDeletes(table, i.key, i.deletes), recordCount: i.rows };
    } catch (err) {
      if (!(err instanceof IcebergMetadataError)) throw err;
      throw new InvalidInputError(`Group ${entry.groupId} of run ${entry.runId}: ${err.reason}`);
    }
  };
  const mine = targetOf(input);
  if (mine === undefined || input.deletes === undefined) return DeletedRows.NONE;
  let all = deletedRowsOfEntry.get(entry);
  if (all === undefined) {
    const targets = entry.inputs.flatMap((i) => {
      const t = targetOf(i);
      return t === undefined ? [] : [t];
    });
    all = readDeletedRows(store, table, targets);
    deletedRowsOfEntry.set(entry, all);
  }
  const rows = (await all).get(mine.dataPath) ?? DeletedRows.NONE;
  if (rows.count !== input.deletes.rows)
    throw new InvalidInputError(
      `Group ${entry.groupId} of run ${entry.runId}: the Iceberg deletes of ${input.key} now delete ${rows.count} rows, the plan says ${input.deletes.rows}; nothing was rewritten`,
    );
  return rows;
}

const committer = icebergCommitter();

/** Apache Iceberg path-based tables through their snapshots (see group-commit.ts for the protocol). */
export const icebergTable = {
  name: 'iceberg',
  title: 'Apache Iceberg',
  ownsEverythingUnderRoot: true,
  snapshot,
  planInputs,
  planPartition,
  partitionFiles,
  commit: committer.commit,
  rollback: committer.rollback,
  partitionRewrite: {
    kind: 'table-schema',
    advice:
      "an Iceberg table's schema is its metadata's: change it with ALTER TABLE in the table's own engine, then lake-compactor compact <uri> --format iceberg --rewrite-option rewrite-all=true rewrites every file of the partitions it selects",
  },
  vacuum: icebergVacuumRules,
  // The table changes when its catalog's pointer moves: a new metadata file is a nudge to read it, and the new
  // snapshots' manifests say which data files were added and removed (changes.ts); data-file PUTs are not changes.
  changes: icebergChanges(),
  isOwnMetadataWrite: (relativeKey: string) => relativeKey.startsWith('metadata/'),
  // The table's catalog decides where its current metadata is and how a commit swaps it: a Glue or REST table
  // committed through the path catalog would be a commit its readers never see.
  // `rewriteDataFiles` is read by planPartition, from the run (which took the table's and the request's).
  settings: icebergSettings,
  help: icebergHelp,
  // The trigger decides by the table's options as a run's plan reads them (run-input.ts): the table's explicit
  // target in MiB stands in for target-file-size-bytes, its rewriteDataFiles over it. A run's own options are
  // unknown to the profiler.
  triggerRule: (
    settings: IcebergTableSettings,
    table: { readonly targetFileSizeBytes?: number | undefined },
  ) =>
    icebergTriggerRule(
      mergeRewriteOptions(
        table.targetFileSizeBytes === undefined
          ? undefined
          : { 'target-file-size-bytes': table.targetFileSizeBytes },
        settings.rewriteDataFiles,
      ),
    ),
  forTable: (settings: IcebergTableSettings, services: IcebergCatalogServices): TableFormat =>
    icebergForCatalog(settings.catalog, services),
  deletedRows,
  // expire_snapshots and remove_orphan_files through the table's catalog (maintenance.ts).
  maintenance: icebergMaintenance,
  // `lake-compactor undo` rolls main back to the run's parent snapshot while the run's are the newest (undo.ts).
  undo: icebergUndo(),
} as const satisfies TableFormat;

/**
 * The Iceberg format of a table whose commits go through `catalogOf(store)`: the snapshot is read from the
 * metadata the catalog points at, and groups commit through it (group-commit.ts is the same protocol whatever the
 * catalog: its atomic swap is the catalog's).
 */
export function icebergTableWithCatalog(catalogOf: (store: ObjectStore) => IcebergCatalog): TableFormat {
  const coordinated = icebergCommitter({ catalog: catalogOf });
  return {
    ...icebergTable,
    snapshot: (store, location, options) => snapshot(store, location, options, catalogOf(store)),
    partitionFiles: (store, where, options) => partitionFiles(store, where, options, catalogOf(store)),
    commit: coordinated.commit,
    rollback: coordinated.rollback,
    changes: icebergChanges(catalogOf),
    undo: icebergUndo(catalogOf),
  };
}

/**
 * The Iceberg format of a table configured with `catalog` (see catalogs.ts): the registered format for the path
 * catalog (or none) with its default naming, one over the path catalog accepting metastore-named metadata files
 * when the setting says so, else one committing through the catalog client `services` builds for the setting.
 * @throws InvalidInputError when the setting names a metastore catalog and `services` cannot build its client.
 */
export function icebergForCatalog(
  setting: IcebergCatalogSetting | undefined,
  services: IcebergCatalogServices,
): TableFormat {
  const catalog: IcebergCatalogSetting = setting ?? DEFAULT_ICEBERG_CATALOG;
  if (catalog.type === 'path')
    return (catalog.metadataNaming ?? 'hadoop') === 'hadoop'
      ? icebergTable
      : icebergTableWithCatalog((store) => pathCatalogOf(catalog, store));
  const build = services.icebergCatalog;
  if (build === undefined) throw catalogUnavailable(catalog);
  return icebergTableWithCatalog((store) => build(catalog, store));
}
