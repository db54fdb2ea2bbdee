// What an Iceberg table's changes are to the profiler: the table changes when its catalog pointer moves to a new
// metadata file, by the snapshots that file adds to the main branch. A data file or manifest written but not yet
// committed is not data, a metadata file written before the catalog swap (or one that lost the race) is not current,
// and a `replace` snapshot removes files it leaves on storage; so object events are only nudges to read the pointer
// through the table's catalog, and each new snapshot's own manifest entries (ADDED / DELETED by that snapshot) say
// which data files it added and removed.
import pLimit from 'p-limit';
import type { ObjectStore } from '../../../ports/object-store.js';
import type { PartitionValue } from '../../partition.js';
import {
  type ChangeCursor,
  type ChangeState,
  type ChangesRead,
  type CommitLogChanges,
  CommitNotCurrentError,
  type FileChange,
  type ObjectRole,
  type VersionChanges,
} from '../table-format.js';
import { type IcebergCatalog, type LoadedTable, PathCatalog } from './catalog.js';
import { metadataVersion } from './catalogs.js';
import { icebergCommittedVersion } from './group-commit.js';
import { readSnapshotFiles } from './live-files.js';
import { type ManifestEntry, readManifest, readManifestList } from './manifests.js';
import type { Snapshot } from './metadata.js';
import { icebergPartitionOf, specFolders } from './table-snapshot.js';

/**
 * Snapshots read one by one at most per call; beyond that the current snapshot's live files are read instead
 * (one manifest list and its manifests), where a long catch-up would read a manifest list per snapshot.
 */
export const MAX_SNAPSHOTS_PER_READ = 100;

/** Manifests read in flight while catching up. */
const READ_CONCURRENCY = 8;

const METADATA_FOLDER = 'metadata/';
/** `v12.metadata.json`, `00012-<uuid>.metadata.json`, gzipped or not, or any other name a catalog gives one. */
const METADATA_FILE = /\.metadata\.json(\.gz)?$/;
const VERSION_HINT = 'version-hint.text';

/**
 * The cursor's memo: the main branch's snapshot the counters are at (a decimal string: 64-bit ids stay exact;
 * null before the first snapshot), and what the table's layout was then — the format version (it decides what the
 * cursor's version counts) and the partition specs (their number and the default one: specs are only ever
 * added, so a change of either is a partition-spec change).
 */
interface Memo {
  readonly snapshot: string | null;
  readonly formatVersion: number;
  readonly specs: number;
  readonly defaultSpec: number;
}

function memoOf(table: LoadedTable): Memo {
  const m = table.metadata;
  return {
    snapshot: m.currentSnapshotId === undefined ? null : m.currentSnapshotId.toString(),
    formatVersion: m.formatVersion,
    specs: m.specs.length,
    defaultSpec: m.defaultSpecId,
  };
}

function decodeMemo(text: string): Memo | undefined {
  try {
    const parsed = JSON.parse(text) as Partial<Record<keyof Memo, unknown>>;
    const { snapshot, formatVersion, specs, defaultSpec } = parsed;
    if (snapshot !== null && (typeof snapshot !== 'string' || !/^-?\d+$/.test(snapshot))) return undefined;
    if (![formatVersion, specs, defaultSpec].every((n) => typeof n === 'number' && Number.isInteger(n)))
      return undefined;
    return parsed as Memo;
  } catch {
    return undefined;
  }
}

/**
 * The cursor's version for a table as loaded: a count that grows with every snapshot committed to the main branch,
 * so the stats store only ever moves the cursor forward (see `advanceChangeCursor`).
 *
 * - Format v2/v3: `last-sequence-number`, which every commit of a snapshot raises by one and nothing lowers
 *   (expiring snapshots keeps it; a rollback keeps it too, and is read as a rebuild).
 * - Format v1 has no sequence numbers (always 0). The snapshot log's length is not monotone (expire_snapshots
 *   trims it), nor is the metadata log's (`write.metadata.previous-versions-max`); the number in the metadata
 *   file's name is: every catalog names the file of a commit after its base's number plus one (`vN.metadata.json`,
 *   `000NN-<uuid>.metadata.json`), and a commit of a snapshot is a commit of a metadata file. `floor` (the
 *   previous cursor plus the snapshots applied since) keeps it growing for a catalog whose names carry no number.
 */
function cursorVersion(table: LoadedTable, floor = 0): number {
  const m = table.metadata;
  return m.formatVersion === 1 ? Math.max(table.version, floor) : Number(m.lastSequenceNumber);
}

/**
 * What an object event under an Iceberg table's root is: a new metadata file (`metadata/*.metadata.json`, the path
 * catalog's `metadata/version-hint.text` too) is a nudge to read the catalog's pointer, `version` being the number
 * its name carries (0 for the hint or a name without one); everything else is not a change of the table, with why.
 */
function roleOf(relativeKey: string, event: 'created' | 'removed'): ObjectRole {
  if (!relativeKey.startsWith(METADATA_FOLDER)) {
    return {
      kind: 'ignored',
      reason:
        'an Iceberg data file is not a table change until a snapshot the catalog points at commits it: metadata files are',
    };
  }
  const name = relativeKey.slice(METADATA_FOLDER.length);
  if (event === 'removed') {
    return {
      kind: 'ignored',
      reason:
        'an Iceberg metadata file removed (old metadata cleaned up, or expire_snapshots): the table did not change',
    };
  }
  if (name === VERSION_HINT) return { kind: 'commit', version: 0 };
  if (!name.includes('/') && METADATA_FILE.test(name))
    return { kind: 'commit', version: metadataVersion(name) };
  return {
    kind: 'ignored',
    reason:
      'an Iceberg manifest, manifest list or statistics file: written before its commit, it says nothing until a metadata file the catalog points at names it',
  };
}

/**
 * Refuses to read a table whose catalog points at an older metadata file than the event names: the writer put its
 * metadata file before swapping the pointer (Glue UpdateTable, a REST commit), so the swap is not done yet — or it
 * lost the race and the file never becomes current. Either way a redelivery decides (see CommitNotCurrentError).
 */
function requireCurrent(table: LoadedTable, upTo: number): void {
  if (upTo > 0 && table.version > 0 && upTo > table.version)
    throw new CommitNotCurrentError(
      table.name,
      `the event names metadata version ${upTo}, and the table's catalog points at version ${table.version} (${table.metadataKey})`,
      table.version,
    );
}

/** The snapshots of the main branch after `from` (exclusive) up to the current one, oldest first, or why not. */
function snapshotsAfter(
  table: LoadedTable,
  from: string | null,
): { readonly snapshots: Snapshot[] } | { readonly rebuild: string } {
  const m = table.metadata;
  const byId = new Map(m.snapshots.map((s) => [s.snapshotId, s]));
  const chain: Snapshot[] = [];
  let id = m.currentSnapshotId;
  while (id !== undefined && id.toString() !== from) {
    const snapshot = byId.get(id);
    if (snapshot === undefined)
      return {
        rebuild: `snapshot ${id} of the main branch is no longer in the metadata (expired), so snapshot ${from ?? '(none)'} cannot be reached`,
      };
    chain.push(snapshot);
    if (chain.length > MAX_SNAPSHOTS_PER_READ)
      return {
        rebuild: `more than ${MAX_SNAPSHOTS_PER_READ} snapshots behind: read the current snapshot's live files instead`,
      };
    id = snapshot.parentSnapshotId;
  }
  if (id === undefined && from !== null)
    return {
      rebuild: `snapshot ${from} is no longer an ancestor of the current snapshot ${m.currentSnapshotId ?? '(none)'} (rolled back, expired or the branch was reset)`,
    };
  return { snapshots: chain.reverse() };
}

/** A data file's change as the profiler counts it; undefined for delete files and non-Parquet data files. */
function fileChange(
  table: LoadedTable,
  folders: ReadonlyMap<number, string>,
  entry: ManifestEntry,
): FileChange | undefined {
  if (entry.file.content !== 'data' || entry.file.format !== 'PARQUET') return undefined;
  const { partition, values } = icebergPartitionOf(table.metadata, folders, { entry, deletes: [] });
  return entry.status === 'deleted'
    ? { kind: 'removed', key: entry.file.key, partition, values }
    : { kind: 'added', key: entry.file.key, size: Number(entry.file.fileSizeInBytes), partition, values };
}

/**
 * One snapshot's file changes: the entries of the manifests it wrote that it ADDED or DELETED itself (a manifest it
 * rewrote also carries EXISTING entries of earlier snapshots, which are not its changes). Removes first, then adds,
 * so a file removed and re-added by one snapshot ends added. Delete files are left out: the profiler counts the
 * data files a run may rewrite, and a delete file is never one (its rows are applied by the rewrite, not counted).
 */
async function snapshotChanges(
  store: ObjectStore,
  table: LoadedTable,
  snapshot: Snapshot,
  version: number,
): Promise<VersionChanges> {
  const ctx = { store, table: table.name, paths: table.paths, formatVersion: table.metadata.formatVersion };
  const manifests = (await readManifestList(ctx, snapshot.manifestList)).filter(
    (m) =>
      m.content === 'data' &&
      (m.addedSnapshotId === undefined || m.addedSnapshotId === snapshot.snapshotId) &&
      !(m.addedFilesCount === 0 && m.deletedFilesCount === 0),
  );
  const limit = pLimit(READ_CONCURRENCY);
  const entries = (await Promise.all(manifests.map((m) => limit(() => readManifest(ctx, m))))).flat();
  const folders = specFolders(table.metadata);
  const byKey = new Map<string, FileChange>();
  const own = entries.filter((e) => e.status !== 'existing' && e.snapshotId === snapshot.snapshotId);
  for (const status of ['deleted', 'added'] as const) {
    for (const entry of own) {
      if (entry.status !== status) continue;
      const change = fileChange(table, folders, entry);
      if (change !== undefined) byKey.set(change.key, change);
    }
  }
  return { version, files: [...byKey.values()] };
}

async function readChanges(
  catalog: IcebergCatalog,
  store: ObjectStore,
  tableRoot: string,
  from: ChangeCursor,
  upTo: number,
): Promise<ChangesRead> {
  const table = await catalog.load(tableRoot);
  requireCurrent(table, upTo);
  const memo = decodeMemo(from.memo);
  if (memo === undefined) return { kind: 'rebuild', reason: 'the stored cursor holds no Iceberg snapshot' };
  const now = memoOf(table);
  if (now.formatVersion !== memo.formatVersion)
    return {
      kind: 'rebuild',
      reason: `the table's format version changed from ${memo.formatVersion} to ${now.formatVersion}`,
    };
  if (now.specs !== memo.specs || now.defaultSpec !== memo.defaultSpec)
    return { kind: 'rebuild', reason: "the table's partition spec changed" };
  const after = snapshotsAfter(table, memo.snapshot);
  if ('rebuild' in after) return { kind: 'rebuild', reason: after.rebuild };
  const versions: VersionChanges[] = [];
  for (const [i, snapshot] of after.snapshots.entries()) {
    // v2/v3: the snapshot's sequence number, which grows along the branch; v1 (none): one more per snapshot.
    const version = now.formatVersion === 1 ? from.version + i + 1 : Number(snapshot.sequenceNumber);
    const previous = versions.at(-1)?.version ?? from.version;
    if (version <= previous)
      return {
        kind: 'rebuild',
        reason: `snapshot ${snapshot.snapshotId} has sequence number ${version}, not after ${previous}`,
      };
    versions.push(await snapshotChanges(store, table, snapshot, version));
  }
  const version = cursorVersion(table, from.version + after.snapshots.length);
  return {
    kind: 'versions',
    versions,
    cursor: { version: Math.max(version, from.version), memo: JSON.stringify(now) },
  };
}

/**
 * The live Parquet data files of the snapshot the catalog points at now, per partition (delete files and data
 * files of other formats left out, as in {@link snapshotChanges}). `upTo` is only checked against the pointer: the
 * catalog's current metadata is the one state there is to read.
 *
 * This is also what the sweep's reconcile counts (not the plan's snapshot, which leaves out data files a run
 * cannot rewrite now: deletes it cannot apply, v3 files without a first row id, tuples spelled alike). Whether a
 * file can be rewritten changes without the file changing (an equality delete committed later), which no
 * snapshot's ADDED/DELETED entries say, so the per-snapshot counts could not follow that narrower set; counting
 * it in reconcile alone would make reconcile and the profiler correct each other's counters forever.
 */
async function readState(
  catalog: IcebergCatalog,
  store: ObjectStore,
  tableRoot: string,
  upTo: number | undefined,
): Promise<ChangeState> {
  const table = await catalog.load(tableRoot);
  if (upTo !== undefined) requireCurrent(table, upTo);
  const files = await readSnapshotFiles(store, table, { concurrency: READ_CONCURRENCY });
  const folders = specFolders(table.metadata);
  const byPartition = new Map<
    string,
    { values: readonly PartitionValue[]; files: { key: string; size: number }[] }
  >();
  for (const data of files.dataFiles) {
    const change = fileChange(table, folders, data.entry);
    if (change === undefined) continue;
    const bucket = byPartition.get(change.partition) ?? { values: change.values, files: [] };
    bucket.files.push({ key: change.key, size: change.size ?? 0 });
    byPartition.set(change.partition, bucket);
  }
  return {
    cursor: { version: cursorVersion(table), memo: JSON.stringify(memoOf(table)) },
    partitions: [...byPartition]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([partition, p]) => ({ partition, values: p.values, files: p.files })),
  };
}

/**
 * The profiler's view of an Iceberg table whose current metadata `catalogOf(store)` knows (the path catalog by
 * default): the catalog's pointer, not an event's key, says which metadata is current.
 */
export function icebergChanges(
  catalogOf: (store: ObjectStore) => IcebergCatalog = (store) => new PathCatalog(store),
): CommitLogChanges {
  return {
    kind: 'commit-log',
    eventVersions: 'pointer',
    roleOf,
    readChanges: (store, tableRoot, from, upTo) =>
      readChanges(catalogOf(store), store, tableRoot, from, upTo),
    readState: (store, tableRoot, upTo) => readState(catalogOf(store), store, tableRoot, upTo),
    committedVersion: icebergCommittedVersion,
  };
}
