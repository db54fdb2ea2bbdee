// Iceberg remove_orphan_files (issue #18 item 6): deletes the files under a table's location that no
// metadata references — writer output never committed, files a crashed expire_snapshots left behind, metadata files
// fallen out of the metadata log — once they are older than a grace period.
//
// The current metadata is whatever the table's catalog points at (the path catalog's newest file, Glue's
// `metadata_location`, a REST catalog's table): read through the catalog, never by listing metadata/ of a table a
// metastore owns, where a file of a writer that lost a commit race looks like the newest version.
//
// Referenced is everything any snapshot still in the metadata reaches (its manifest list, every manifest the list
// names, every file any entry of those manifests names, whatever the entry's status), the current metadata file,
// every file of its metadata log, the version hint, and statistics files. The grace period is what makes deleting
// an unreferenced file safe at all: a writer writes its data files and manifests *before* its commit makes them
// referenced, so a file that is young may be exactly such a file; only one older than any writer takes between
// writing and committing may go. Hence a minimum of three days (Spark's default `older_than`), refused below unless
// the caller turns the check off knowing no writer runs that long.
import type { ObjectInfo, ObjectStore } from '../../../ports/object-store.js';
import { keyRefusal, refusedKeyReason } from '../../keys.js';
import { HOUR, hoursAgo, iso } from '../../maintenance/ages.js';
import { foreignFormatOfKey } from '../foreign-tables.js';
import { type IcebergCatalog, type LoadedTable, PathCatalog, readMetadataText } from './catalog.js';
import { IcebergMaintenanceRefusedError } from './errors.js';
import { deleteIcebergFiles, GC_ENABLED_PROPERTY, type IcebergTally } from './expire.js';
import { parseJsonKeepingLongs } from './json.js';
import { type ReadContext, readManifest, readManifestList } from './manifests.js';

/** The grace period below which remove_orphan_files refuses to run unless told otherwise: Spark's default, 3 days. */
export const MIN_ORPHAN_GRACE_HOURS = 72;

/** `v12.metadata.json`, `00012-<uuid>.metadata.json` (maybe gzipped): the version a metadata file name carries. */
const METADATA_VERSION = /^(?:v(\d+)|(\d+)-[0-9a-fA-F-]+)(?:\.gz)?\.metadata\.json(?:\.gz)?$/;

/** Why a listed object stays. */
export type OrphanKeepReason =
  /** Not below the table root (only a malformed listing holds one). */
  | 'outside-root'
  /** Listed below the root, but a key the confinement rule refuses (`..`, control characters): see `refused`. */
  | 'refused-key'
  /** Named by the metadata. */
  | 'referenced'
  /** A `.`/`_`-prefixed file or directory (Spark's hidden-path filter; our own work area is one). */
  | 'hidden'
  /** Below a directory that is a Delta or Iceberg table of its own. */
  | 'nested-table'
  /** A metadata file of the current version or a newer one (a commit that landed after the table was read). */
  | 'newer-metadata'
  /** Not referenced, but modified within the grace period: a writer may be about to commit it. */
  | 'young';

/** An object remove_orphan_files deletes. */
export interface OrphanCandidate {
  readonly key: string;
  readonly size: number;
  readonly reason: string;
}

/**
 * Every store key the table's metadata references: see the module comment. Reads every snapshot's manifest list and
 * manifests.
 */
export async function referencedKeys(store: ObjectStore, table: LoadedTable): Promise<Set<string>> {
  const { metadata, paths } = table;
  const keys = new Set<string>([table.metadataKey]);
  const root = table.tableRoot === '' ? '' : `${table.tableRoot}/`;
  keys.add(`${root}metadata/version-hint.text`);
  for (const entry of metadata.metadataLog) keys.add(paths.key(entry.metadataFile));
  const raw = parseJsonKeepingLongs(await readMetadataText(store, table.metadataKey)) as Record<
    string,
    unknown
  >;
  for (const field of ['statistics', 'partition-statistics'])
    for (const s of (raw[field] as { 'statistics-path'?: unknown }[] | undefined) ?? [])
      if (typeof s['statistics-path'] === 'string') keys.add(paths.key(s['statistics-path']));
  const ctx: ReadContext = { store, table: table.name, paths, formatVersion: metadata.formatVersion };
  const manifests = new Map<string, Awaited<ReturnType<typeof readManifestList>>[number]>();
  for (const s of metadata.snapshots) {
    keys.add(paths.key(s.manifestList));
    for (const m of await readManifestList(ctx, s.manifestList)) manifests.set(m.key, m);
  }
  for (const m of manifests.values()) {
    keys.add(m.key);
    for (const e of await readManifest(ctx, m)) keys.add(e.file.key);
  }
  return keys;
}

export interface OrphanPlanInput {
  /** The table root as a key prefix ('' or without trailing slash). */
  readonly tableRoot: string;
  readonly referenced: ReadonlySet<string>;
  /** The version of the metadata file read: metadata files of this version or a newer one are never orphans. */
  readonly version: number;
  /**
   * True when a metastore's pointer, not a file's existence, makes a metadata file current (Glue, REST; see
   * `IcebergCatalog.metastore`): then a metadata file of the version read or a newer one that nothing references
   * is a writer's that lost the race or has not swapped yet, and is judged like any other file — the grace period
   * keeps one whose swap may still be coming. False (the path catalog): such a file is a commit, never an orphan.
   */
  readonly metastore?: boolean;
  /** Partition field names of every spec: a `_name=…` directory is a partition, not hidden. */
  readonly partitionNames: readonly string[];
  readonly listing: readonly ObjectInfo[];
  /** Epoch ms. */
  readonly now: number;
  readonly graceMs: number;
}

export interface OrphanPlan {
  readonly deleteBefore: number;
  readonly delete: readonly OrphanCandidate[];
  readonly kept: Readonly<Record<OrphanKeepReason, number>>;
  /** Listed keys the confinement rule refuses (counted as `refused-key`), by name with why: never deleted. */
  readonly refused: readonly { readonly key: string; readonly reason: string }[];
}

function isHidden(name: string, partitionNames: readonly string[]): boolean {
  if (!name.startsWith('.') && !name.startsWith('_')) return false;
  return !partitionNames.some((p) => name.startsWith(`${p}=`));
}

/**
 * Which listed objects are orphans. Pure. An object goes only when it lies below the root, in no hidden directory
 * and no nested table, is not referenced, is not a metadata file of the version read or a newer one, and was last
 * modified before `now - graceMs`.
 */
export function planOrphans(input: OrphanPlanInput): OrphanPlan {
  const root = input.tableRoot === '' ? '' : `${input.tableRoot}/`;
  const kept: Record<OrphanKeepReason, number> = {
    'outside-root': 0,
    'refused-key': 0,
    referenced: 0,
    hidden: 0,
    'nested-table': 0,
    'newer-metadata': 0,
    young: 0,
  };
  const deleteBefore = input.now - input.graceMs;
  const nested = new Set<string>();
  for (const o of input.listing) {
    if (!o.key.startsWith(root)) continue;
    const found = foreignFormatOfKey(o.key.slice(root.length));
    if (found !== undefined && found.root !== '') nested.add(found.root);
  }
  const out: OrphanCandidate[] = [];
  const refused: { key: string; reason: string }[] = [];
  for (const o of input.listing) {
    if (!o.key.startsWith(root) || o.key === root) {
      kept['outside-root'] += 1;
      continue;
    }
    const refusal = keyRefusal(input.tableRoot, o.key);
    if (refusal !== undefined) {
      kept['refused-key'] += 1;
      refused.push({
        key: o.key,
        reason: refusedKeyReason(
          refusal,
          'never deleted by remove_orphan_files; remove it by hand if it is debris',
        ),
      });
      continue;
    }
    const relative = o.key.slice(root.length);
    if (relative.split('/').some((name) => isHidden(name, input.partitionNames))) kept.hidden += 1;
    else if ([...nested].some((n) => relative.startsWith(n))) kept['nested-table'] += 1;
    else if (input.referenced.has(o.key)) kept.referenced += 1;
    else if (input.metastore !== true && isCurrentOrNewerMetadata(relative, input.version))
      kept['newer-metadata'] += 1;
    else if (o.lastModified.getTime() >= deleteBefore) kept.young += 1;
    else
      out.push({
        key: o.key,
        size: o.size,
        reason: `referenced by no snapshot or metadata file, last modified ${hoursAgo(input.now, o.lastModified.getTime())}`,
      });
  }
  return { deleteBefore, delete: out, kept, refused };
}

function isCurrentOrNewerMetadata(relative: string, version: number): boolean {
  if (!relative.startsWith('metadata/')) return false;
  const m = METADATA_VERSION.exec(relative.slice('metadata/'.length));
  return m !== null && Number(m[1] ?? m[2]) >= version;
}

export interface RemoveOrphanFilesOptions {
  /** Epoch ms. */
  readonly now: number;
  readonly dryRun: boolean;
  /** Spark's `older_than`, as an age in hours; {@link MIN_ORPHAN_GRACE_HOURS} when omitted. */
  readonly olderThanHours?: number;
  /** The grace-period check (default true); false allows a grace period below the minimum. */
  readonly graceCheck?: boolean;
  readonly catalog?: IcebergCatalog;
  readonly listLimit?: number;
  readonly batchSize?: number;
}

export interface RemoveOrphanFilesReport {
  readonly tableRoot: string;
  readonly dryRun: boolean;
  /** The metadata file planned against. */
  readonly metadataKey: string;
  /** The metadata file re-checked against just before deleting (equal when nobody committed meanwhile). */
  readonly recheckedMetadataKey: string;
  readonly olderThanHours: number;
  readonly deleteBefore: string;
  readonly examined: number;
  readonly kept: Readonly<Record<OrphanKeepReason, number>>;
  readonly removed: IcebergTally;
  /** Candidates referenced by metadata committed while planning: left alone. */
  readonly spared: readonly { readonly key: string; readonly reason: string }[];
  /** Listed keys the confinement rule refuses: never deleted, by name with why. */
  readonly refused: readonly { readonly key: string; readonly reason: string }[];
  readonly failed: readonly { readonly key: string; readonly message: string }[];
  readonly candidates: readonly OrphanCandidate[];
}

/**
 * remove_orphan_files on one table: loads the current metadata, collects what it references
 * ({@link referencedKeys}), lists everything under the root and plans ({@link planOrphans}); then, unless a dry run,
 * reloads the metadata and spares every candidate a newer version references (a commit that landed while listing),
 * and deletes the rest in batches.
 *
 * The race it cannot see: a writer's data file or manifest exists before the commit that references it, and may be
 * committed after the re-check. Only the grace period protects such a file — it is young — so the grace period must
 * exceed the longest time any writer of the table takes from writing a file to committing it.
 * @throws IcebergMaintenanceRefusedError for `gc.enabled=false` or a grace period below the minimum with the check on.
 * @throws IcebergMetadataError, IcebergUnsupportedError from reading the table: nothing was deleted.
 */
export async function removeOrphanFiles(
  store: ObjectStore,
  tableRoot: string,
  options: RemoveOrphanFilesOptions,
): Promise<RemoveOrphanFilesReport> {
  const root = tableRoot.replace(/\/+$/, '');
  const catalog = options.catalog ?? new PathCatalog(store);
  const hours = options.olderThanHours ?? MIN_ORPHAN_GRACE_HOURS;
  const table = await catalog.load(root);
  if (!(Number.isFinite(hours) && hours >= 0))
    throw new IcebergMaintenanceRefusedError(table.name, `the grace period of ${hours} h is not an age`);
  if ((options.graceCheck ?? true) && hours < MIN_ORPHAN_GRACE_HOURS)
    throw new IcebergMaintenanceRefusedError(
      table.name,
      `the orphan grace period of ${hours} h is below the minimum of ${MIN_ORPHAN_GRACE_HOURS} h: a writer's files exist before its commit references them, and a shorter grace period can delete the output of a writer still running. Use ${MIN_ORPHAN_GRACE_HOURS} h or more, or turn the check off only if no writer of this table takes that long`,
    );
  if ((table.metadata.properties[GC_ENABLED_PROPERTY] ?? 'true').trim().toLowerCase() === 'false')
    throw new IcebergMaintenanceRefusedError(
      table.name,
      `${GC_ENABLED_PROPERTY} is false: the table's files may be shared with another table, so no engine may delete any`,
    );
  const referenced = await referencedKeys(store, table);
  const listing: ObjectInfo[] = [];
  for await (const o of store.listAll(root === '' ? '' : `${root}/`)) listing.push(o);
  const partitionNames = [...new Set(table.metadata.specs.flatMap((s) => s.fields.map((f) => f.name)))];
  const plan = planOrphans({
    tableRoot: root,
    referenced,
    version: table.version,
    metastore: catalog.metastore === true,
    partitionNames,
    listing,
    now: options.now,
    graceMs: hours * HOUR,
  });

  let recheckedMetadataKey = table.metadataKey;
  const spared: { key: string; reason: string }[] = [];
  let due: readonly OrphanCandidate[] = plan.delete;
  let done: OrphanCandidate[] = [...due];
  let failed: { key: string; message: string }[] = [];
  if (!options.dryRun) {
    const latest = await catalog.load(root);
    recheckedMetadataKey = latest.metadataKey;
    if (latest.metadataKey !== table.metadataKey) {
      const now = await referencedKeys(store, latest);
      due = plan.delete.filter((c) => {
        if (!now.has(c.key)) return true;
        spared.push({ key: c.key, reason: `referenced by ${latest.metadataKey}, committed while planning` });
        return false;
      });
    }
    ({ done, failed } = await deleteIcebergFiles(store, root, due, options.batchSize));
  }
  return {
    tableRoot: root,
    dryRun: options.dryRun,
    metadataKey: table.metadataKey,
    recheckedMetadataKey,
    olderThanHours: hours,
    deleteBefore: iso(plan.deleteBefore),
    examined: listing.length,
    kept: plan.kept,
    removed: { count: done.length, bytes: done.reduce((n, c) => n + c.size, 0) },
    spared,
    refused: plan.refused,
    failed,
    candidates: done.slice(0, options.listLimit ?? 1000),
  };
}
