// What a Delta table's changes are to the profiler: only a commit `_delta_log/<20 digits>.json` changes the table,
// by its `add` and `remove` actions; a data file written but not committed is not data, and checkpoints, `.crc`,
// `_last_checkpoint` and temp files repeat or prepare what commits say. A version that can no longer be read one
// by one (log cleaned up) or that changes the table's layout (a `metaData` action) asks for a rebuild instead.
import pLimit from 'p-limit';
import type { ObjectStore } from '../../../ports/object-store.js';
import { keyUnderRoot } from '../../keys.js';
import type { PartitionValue } from '../../partition.js';
import type {
  ChangeCursor,
  ChangeState,
  ChangesRead,
  CommitLogChanges,
  FileChange,
  ObjectRole,
  VersionChanges,
} from '../table-format.js';
import type { AddAction, DeltaAction, RemoveAction } from './actions.js';
import { deltaCommittedVersion } from './commit.js';
import { DeltaLogError } from './errors.js';
import { type DeltaSnapshot, normalizeTableRoot, readCommitActions, readDeltaSnapshot } from './log.js';
import { classifyLogFile } from './log-files.js';
import { partitionPath, toTableSnapshot, untouchable } from './table-snapshot.js';

/**
 * Versions read one by one at most per call; beyond that the state is read from the newest checkpoint instead,
 * which costs a few requests where a long catch-up (a profiler that was down) would cost one GET per version.
 */
export const MAX_VERSIONS_PER_READ = 100;

/** Commits fetched in flight while catching up. */
const READ_CONCURRENCY = 8;

const LOG_FOLDER = '_delta_log/';
const ABSOLUTE_URI = /^[A-Za-z][A-Za-z0-9+.-]*:/;

/** The cursor's memo: the partition columns in the table's order, each `[logical name, physical name]`. */
interface Layout {
  readonly columns: readonly (readonly [string, string])[];
}

function encodeLayout(layout: Layout): string {
  return JSON.stringify({ columns: layout.columns });
}

function decodeLayout(memo: string): Layout | undefined {
  try {
    const parsed = JSON.parse(memo) as { columns?: unknown };
    const columns = parsed.columns;
    if (
      !Array.isArray(columns) ||
      !columns.every(
        (c) => Array.isArray(c) && c.length === 2 && c.every((part: unknown) => typeof part === 'string'),
      )
    ) {
      return undefined;
    }
    return { columns: columns as [string, string][] };
  } catch {
    return undefined;
  }
}

/** The layout a snapshot's metadata defines: logical partition columns and their physical names (column mapping). */
function layoutOf(snapshot: DeltaSnapshot): Layout {
  const physical = new Map(
    snapshot.metadata.columnMapping.columns
      .filter((c) => c.path.length === 1)
      .map((c) => [c.path[0] as string, c.physicalName]),
  );
  return {
    columns: snapshot.metadata.partitionColumns.map((name) => [name, physical.get(name) ?? name] as const),
  };
}

/**
 * What an object event under a Delta table's root is: the creation of a commit file is version N of the table;
 * everything else is not a change of it, with why.
 */
function roleOf(relativeKey: string, event: 'created' | 'removed'): ObjectRole {
  if (!relativeKey.startsWith(LOG_FOLDER)) {
    return {
      kind: 'ignored',
      reason:
        'a data file of a Delta table: it is data only once a commit in _delta_log/ adds it, and that commit is counted',
    };
  }
  const name = relativeKey.slice(LOG_FOLDER.length);
  const file = name.includes('/') ? undefined : classifyLogFile(name);
  if (file?.kind !== 'commit') {
    return {
      kind: 'ignored',
      reason: `not a Delta commit (${file?.kind ?? 'temp, sidecar, .crc or other'} file of the log): commits alone change the table`,
    };
  }
  if (event === 'removed') {
    return { kind: 'ignored', reason: 'a Delta commit removed by log cleanup: the table did not change' };
  }
  return { kind: 'commit', version: file.version };
}

function decodePath(path: string): string | undefined {
  if (ABSOLUTE_URI.test(path)) return undefined;
  try {
    return decodeURIComponent(path);
  } catch {
    return undefined;
  }
}

/** Logical partition values of an action from the physical ones it carries, in the table's column order. */
function valuesOf(
  layout: Layout,
  raw: Readonly<Record<string, string | null>> | undefined,
): PartitionValue[] {
  if (raw === undefined) return [];
  return layout.columns.map(([name, physical]) => ({ name, value: raw[physical] ?? raw[name] ?? null }));
}

/**
 * One commit's actions as file changes: removes first, then adds, so a file removed and re-added in one version
 * (a deletion vector replaced) ends added. An add the snapshot would not offer a run (deletion vector, row ids)
 * counts as removed: the profiler counts what a run may rewrite. Absolute URIs name no key of the store, and paths
 * that leave the table root no key of the table: skipped.
 */
function versionChanges(
  root: string,
  layout: Layout,
  version: number,
  actions: readonly DeltaAction[],
): VersionChanges {
  const byKey = new Map<string, FileChange>();
  const place = (
    action: AddAction | RemoveAction,
  ): { key: string; partition: string; values: PartitionValue[] } | undefined => {
    const decoded = decodePath(action.path);
    if (decoded === undefined) return undefined;
    // A path the confinement rule refuses names no file of this table (a run refuses the table by name).
    const built = keyUnderRoot(root, decoded);
    if ('refused' in built) return undefined;
    const values = valuesOf(layout, action.partitionValues);
    return { key: built.key, partition: partitionPath(values), values };
  };
  for (const action of actions) {
    if (action.kind !== 'remove') continue;
    const at = place(action.remove);
    if (at !== undefined) byKey.set(at.key, { kind: 'removed', ...at });
  }
  for (const action of actions) {
    if (action.kind !== 'add') continue;
    const add = action.add;
    const at = place(add);
    if (at === undefined) continue;
    const refused = untouchable({ ...add, key: at.key });
    byKey.set(
      at.key,
      refused === undefined ? { kind: 'added', ...at, size: add.size } : { kind: 'removed', ...at },
    );
  }
  return { version, files: [...byKey.values()] };
}

async function readChanges(
  store: ObjectStore,
  tableRoot: string,
  from: ChangeCursor,
  upTo: number,
): Promise<ChangesRead> {
  const layout = decodeLayout(from.memo);
  if (layout === undefined) return { kind: 'rebuild', reason: 'the stored cursor holds no partition layout' };
  if (upTo - from.version > MAX_VERSIONS_PER_READ) {
    return {
      kind: 'rebuild',
      reason: `${upTo - from.version} versions behind (more than ${MAX_VERSIONS_PER_READ}): read from the newest checkpoint`,
    };
  }
  const root = normalizeTableRoot(tableRoot);
  const limit = pLimit(READ_CONCURRENCY);
  const count = Math.max(0, upTo - from.version);
  const read = await Promise.all(
    Array.from({ length: count }, (_, i) =>
      limit(() => readCommitActions(store, root, from.version + 1 + i)),
    ),
  );
  const versions: VersionChanges[] = [];
  for (const [i, actions] of read.entries()) {
    const version = from.version + 1 + i;
    if (actions === undefined) {
      return { kind: 'rebuild', reason: `commit ${version} is gone (the log was cleaned up)` };
    }
    if (actions.some((a) => a.kind === 'metaData')) {
      return { kind: 'rebuild', reason: `commit ${version} changes the table's metadata` };
    }
    versions.push(versionChanges(root, layout, version, actions));
  }
  return { kind: 'versions', versions, cursor: { version: Math.max(from.version, upTo), memo: from.memo } };
}

async function readState(store: ObjectStore, tableRoot: string, upTo?: number): Promise<ChangeState> {
  let snapshot: DeltaSnapshot;
  try {
    snapshot = await readDeltaSnapshot(store, tableRoot, upTo === undefined ? {} : { version: upTo });
  } catch (err) {
    // The version asked for may be unreadable once its history is cleaned up; the latest one still is.
    if (!(err instanceof DeltaLogError)) throw err;
    snapshot = await readDeltaSnapshot(store, tableRoot);
  }
  const table = toTableSnapshot(snapshot, 0);
  return {
    cursor: { version: snapshot.version, memo: encodeLayout(layoutOf(snapshot)) },
    partitions: table.partitions.map((p) => ({
      partition: p.partition,
      values: p.values,
      files: p.files.map((f) => ({ key: f.key, size: f.size })),
    })),
  };
}

/** The profiler's view of a Delta table: its log's commits are its changes. */
export const deltaChanges = {
  kind: 'commit-log',
  roleOf,
  readChanges,
  readState,
  // The cursor counts log versions: the version our OPTIMIZE commit took is the one to wait for.
  committedVersion: deltaCommittedVersion,
} as const satisfies CommitLogChanges;
