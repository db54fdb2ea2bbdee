// `lake-compactor undo` of a finished run on a Delta table: one new version that restores the file set the run
// replaced, as Delta's RESTORE does — every file the run's OPTIMIZE versions removed is added back, every file they
// added is removed, all with `dataChange: false` (the rows are the same ones; streaming readers have nothing new to
// read) — in a single commit, so readers see the table before or after the undo, never in between.
//
// Refused, with nothing written, when:
//   - a run version is no longer in the log (log cleanup), or is not the run's (the journal and log disagree);
//   - a later version touched the run's files (removed an output: a DELETE, MERGE or another OPTIMIZE rewrote its
//     rows; or added an input back) or changed the metadata or protocol the inputs were written under;
//   - an input is no longer on storage (Delta VACUUM deleted it after deletedFileRetentionDuration).
// Other writers' later versions (blind appends, other partitions) stay: unlike RESTORE TABLE … TO VERSION AS OF,
// only the run's files change. A second undo finds the first's version (tagged `undoOf`) and does nothing.
import { randomUUID } from 'node:crypto';
import pLimit from 'p-limit';
import type { GroupJournalEntry } from '../../../ports/journal.js';
import type { ObjectStore } from '../../../ports/object-store.js';
import { printable } from '../../keys.js';
import {
  type CommitDeps,
  type RunUndo,
  type RunUndoRequest,
  type RunUndoResult,
  type UndoChange,
  undoRefused,
} from '../table-format.js';
import type { DeltaAction, RemoveAction } from './actions.js';
import {
  COMMIT_TAG,
  deltaGroupState,
  keyOfPath,
  MAX_COMMIT_ATTEMPTS,
  nextInCommitTimestamp,
} from './commit.js';
import { undeclaredCoordination } from './coordination.js';
import { type DeltaSnapshot, normalizeTableRoot, readCommitActions, readDeltaSnapshot } from './log.js';
import { commitFileName } from './log-files.js';
import { type DeltaLogStore, LAKE_COMPACTOR_ENGINE_INFO } from './log-store.js';

/** The field of our undo's commit tag naming the run it reverts: how a second undo finds the first. */
export const UNDO_OF = 'undoOf';

/** What the run's versions did, read from the log. */
interface RunVersions {
  /** The versions, ascending. */
  readonly versions: readonly number[];
  /** The inputs the run removed, by key, as its remove actions describe them. */
  readonly removed: ReadonlyMap<string, RemoveAction>;
  /** The outputs the run added, by key. */
  readonly added: ReadonlySet<string>;
}

type Read<T> = { readonly ok: T } | { readonly result: RunUndoResult };

function tagOf(actions: readonly DeltaAction[]): Readonly<Record<string, unknown>> | undefined {
  const info = actions.find((a) => a.kind === 'commitInfo');
  if (info?.kind !== 'commitInfo') return undefined;
  return (info.commitInfo as Record<string, unknown>)[COMMIT_TAG] as Record<string, unknown> | undefined;
}

function operationOf(actions: readonly DeltaAction[]): string {
  const info = actions.find((a) => a.kind === 'commitInfo');
  return info?.kind === 'commitInfo' && info.commitInfo.operation ? ` (${info.commitInfo.operation})` : '';
}

/** The run's versions from the journal, checked against the log: each must be there, tagged with its group. */
async function readRunVersions(
  store: ObjectStore,
  tableRoot: string,
  groups: readonly GroupJournalEntry[],
): Promise<Read<RunVersions>> {
  const root = normalizeTableRoot(tableRoot);
  const removed = new Map<string, RemoveAction>();
  const added = new Set<string>();
  const versions: number[] = [];
  for (const group of groups) {
    const version = deltaGroupState(group).committedVersion;
    if (version === undefined)
      return { result: undoRefused(`group ${group.groupId} has no committed version in its journal entry`) };
    const actions = await readCommitActions(store, tableRoot, version);
    if (actions === undefined) {
      return {
        result: undoRefused(
          `version ${version}, which group ${group.groupId} committed, is no longer in the log (log cleanup removed it), so what it changed cannot be read back; nothing was changed`,
        ),
      };
    }
    const tag = tagOf(actions);
    if (tag?.runId !== group.runId || tag?.groupId !== group.groupId) {
      return {
        result: undoRefused(
          `version ${version} is not the commit of group ${group.groupId} of run ${group.runId} (its commitInfo says otherwise); nothing was changed`,
        ),
      };
    }
    versions.push(version);
    for (const a of actions) {
      const key =
        a.kind === 'remove'
          ? keyOfPath(root, a.remove.path)
          : a.kind === 'add'
            ? keyOfPath(root, a.add.path)
            : undefined;
      if (key === undefined) continue;
      if (a.kind === 'remove') removed.set(key, a.remove);
      else if (a.kind === 'add') added.add(key);
    }
  }
  return { ok: { versions: versions.sort((a, b) => a - b), removed, added } };
}

/**
 * What the versions after the run did to its files: the first conflict (refused), an earlier undo of the run
 * (already undone), or nothing.
 */
async function laterVersions(
  store: ObjectStore,
  tableRoot: string,
  runId: string,
  run: RunVersions,
  latest: number,
): Promise<RunUndoResult | undefined> {
  const root = normalizeTableRoot(tableRoot);
  const own = new Set(run.versions);
  for (let v = (run.versions[0] ?? latest) + 1; v <= latest; v += 1) {
    if (own.has(v)) continue;
    const actions = await readCommitActions(store, tableRoot, v);
    if (actions === undefined) {
      return undoRefused(
        `version ${v}, committed after the run, is no longer in the log, so it cannot be checked against the run's files; nothing was changed`,
      );
    }
    const undoOf = tagOf(actions)?.[UNDO_OF];
    // This run's undo, or the undo of the whole compact command it was one partition of (`<command>-p<i>-…`).
    if (typeof undoOf === 'string' && (undoOf === runId || runId.startsWith(`${undoOf}-p`))) {
      return { kind: 'already-undone', reason: `version ${v} reverted it` };
    }
    const by = operationOf(actions);
    for (const a of actions) {
      if (a.kind === 'metaData' || a.kind === 'protocol') {
        return undoRefused(
          `the table's ${a.kind === 'metaData' ? 'metadata' : 'protocol'} changed at version ${v}${by}, after the run: its inputs may not match the table any more; nothing was changed`,
        );
      }
      const key =
        a.kind === 'remove'
          ? keyOfPath(root, a.remove.path)
          : a.kind === 'add'
            ? keyOfPath(root, a.add.path)
            : undefined;
      if (key === undefined) continue;
      if (a.kind === 'remove' && run.added.has(key)) {
        return undoRefused(
          `version ${v}${by} removed ${printable(key)}, an output of the run (its rows were rewritten or deleted since): undoing would bring back rows that changed; nothing was changed. Use RESTORE TABLE … TO VERSION AS OF ${(run.versions[0] ?? 1) - 1} if losing every later change is what you want`,
        );
      }
      if (a.kind === 'add' && run.removed.has(key)) {
        return undoRefused(
          `version ${v}${by} added ${printable(key)}, an input of the run, again; nothing was changed`,
        );
      }
    }
  }
  return undefined;
}

/** The lines of the undo's commit: commitInfo first, then the adds of the inputs and the removes of the outputs. */
async function undoBody(
  deps: CommitDeps,
  tableRoot: string,
  runId: string,
  snapshot: DeltaSnapshot,
  run: RunVersions,
  modified: ReadonlyMap<string, number>,
): Promise<Uint8Array> {
  const now = deps.clock.now();
  const adds = [...run.removed].map(([key, r]) => ({
    add: {
      path: r.path,
      partitionValues: r.partitionValues ?? {},
      size: r.size ?? 0,
      modificationTime: modified.get(key) ?? now,
      dataChange: false,
      ...(r.stats === undefined || r.stats === null ? {} : { stats: r.stats }),
      ...(r.tags === undefined || r.tags === null ? {} : { tags: r.tags }),
      ...(r.deletionVector === undefined || r.deletionVector === null
        ? {}
        : { deletionVector: r.deletionVector }),
    },
  }));
  const outputs = snapshot.files.filter((f) => f.key !== undefined && run.added.has(f.key));
  const removes = outputs.map((f) => ({
    remove: {
      path: f.path,
      deletionTimestamp: now,
      dataChange: false,
      extendedFileMetadata: true,
      partitionValues: f.physicalPartitionValues,
      size: f.size,
      ...(f.statsJson === undefined ? {} : { stats: f.statsJson }),
      ...(f.tags === undefined ? {} : { tags: f.tags }),
    },
  }));
  const before = (run.versions[0] ?? 1) - 1;
  const commitInfo = {
    ...(snapshot.inCommitTimestamps
      ? {
          inCommitTimestamp: await nextInCommitTimestamp(
            deps,
            { tableRoot, readVersion: snapshot.version },
            snapshot,
            now,
          ),
        }
      : {}),
    timestamp: now,
    operation: 'RESTORE',
    operationParameters: { version: before },
    readVersion: snapshot.version,
    isolationLevel: 'Serializable',
    isBlindAppend: false,
    operationMetrics: {
      numRestoredFiles: String(adds.length),
      restoredFilesSize: String(adds.reduce((n, a) => n + a.add.size, 0)),
      numRemovedFiles: String(removes.length),
      removedFilesSize: String(removes.reduce((n, r) => n + r.remove.size, 0)),
    },
    engineInfo: LAKE_COMPACTOR_ENGINE_INFO,
    txnId: randomUUID(),
    [COMMIT_TAG]: { runId: `undo-${runId}`, [UNDO_OF]: runId },
  };
  const lines = [{ commitInfo }, ...adds, ...removes].map((a) => JSON.stringify(a));
  return new TextEncoder().encode(`${lines.join('\n')}\n`);
}

/** One attempt: read, check, and (unless a dry run) write the next version; `exists` when another writer won it. */
async function attempt(
  deps: CommitDeps,
  request: RunUndoRequest,
  logStore: DeltaLogStore | undefined,
): Promise<RunUndoResult | 'lost-race'> {
  const first = request.groups[0];
  if (first === undefined) return { kind: 'already-undone', reason: 'the run committed no version' };
  const tableRoot = deltaGroupState(first).tableRoot;
  await logStore?.prepareRead(tableRoot);
  const snapshot = await readDeltaSnapshot(deps.store, tableRoot);
  const read = await readRunVersions(deps.store, tableRoot, request.groups);
  if ('result' in read) return read.result;
  const run = read.ok;
  const later = await laterVersions(deps.store, tableRoot, request.runId, run, snapshot.version);
  if (later !== undefined) return later;
  const live = new Set(snapshot.files.flatMap((f) => (f.key === undefined ? [] : [f.key])));
  const notLive = [...run.added].filter((k) => !live.has(k));
  if (notLive.length > 0) {
    return undoRefused(
      `${printable(notLive[0] ?? '')} (an output of the run) is not live at version ${snapshot.version}; nothing was changed`,
    );
  }
  // Every input must still be on storage: a commit adding a file VACUUM deleted would break every reader.
  const limit = pLimit(deps.concurrency ?? 16);
  const modified = new Map<string, number>();
  const gone: string[] = [];
  await Promise.all(
    [...run.removed.keys()].map((key) =>
      limit(async () => {
        const head = await deps.store.head(key);
        if (head === undefined) gone.push(key);
        else modified.set(key, head.lastModified.getTime());
      }),
    ),
  );
  if (gone.length > 0) {
    return undoRefused(
      `${gone.length} input(s) of the run are no longer on storage (e.g. ${printable(gone.sort()[0] ?? '')}): Delta VACUUM deleted them after the table's deletedFileRetentionDuration, and no version can add them back; nothing was changed`,
    );
  }
  const version = snapshot.version + 1;
  const changes: UndoChange[] = [
    ...[...run.removed.keys()].sort().map((key) => ({
      action: 'restore' as const,
      key,
      detail: `added back (removed by version ${run.versions.join(', ')})`,
    })),
    ...[...run.added].sort().map((key) => ({
      action: 'remove' as const,
      key,
      detail: 'removed from the log (stays on storage until Delta VACUUM)',
    })),
    {
      action: 'commit' as const,
      key: `${normalizeTableRoot(tableRoot)}_delta_log/${commitFileName(version)}`,
      detail: `RESTORE of the run's files, dataChange false, on version ${snapshot.version}`,
    },
  ];
  const notes = [
    `one version: readers see the table of before the run (with any later writers' other changes), or of after it, never a mix`,
  ];
  if (request.dryRun) return { kind: 'undone', changes, notes };
  if (logStore === undefined) throw undeclaredCoordination();
  const finding = await logStore.check(tableRoot, { now: deps.clock.now(), purpose: 'commit' });
  if (finding !== undefined) {
    return undoRefused(
      `not committed through ${logStore.description}: ${finding.message}; nothing was changed`,
    );
  }
  const body = await undoBody(deps, tableRoot, request.runId, snapshot, run, modified);
  if ((await logStore.writeCommit(tableRoot, version, body)) === 'written')
    return { kind: 'undone', changes, notes };
  return 'lost-race';
}

/**
 * The Delta format's undo of a finished run, committing through `logStoreOf` (the table's declared coordination);
 * without one it reads and dry-runs, and refuses to commit as the compaction would.
 */
export function deltaUndo(logStoreOf?: (store: ObjectStore) => DeltaLogStore): RunUndo {
  return {
    summary:
      "one new version, as RESTORE does: the run's removed files added back and its outputs removed, dataChange false; later writers' other changes stay. Pass the --delta-log-store options compact used.",
    async undoRun(deps, request) {
      const logStore = logStoreOf?.(deps.store);
      for (let i = 0; i < MAX_COMMIT_ATTEMPTS; i += 1) {
        const result = await attempt(deps, request, logStore);
        if (result !== 'lost-race') return result;
      }
      return undoRefused(
        `lost the race for the next version ${MAX_COMMIT_ATTEMPTS} times in a row: writers are committing faster than the undo can; nothing was changed, try again when the table is quieter`,
      );
    },
  };
}
