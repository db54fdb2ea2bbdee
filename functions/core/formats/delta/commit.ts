// The OPTIMIZE commit of a verified group on a Delta table: the log, not the listing, is the table, so a file is
// data only once a commit adds it. The journal-driven steps are the shared ones of version-commit.ts (outputs
// copied into the partition folder under fresh names, invisible until a version adds them); this file is the
// atomic commit itself:
//
//   published   commit version N+1 (put-if-absent through the table's DeltaLogStore): `commitInfo` (OPTIMIZE,
//               tagged with this run and group), `remove` of every input (dataChange false), `add` of every output.
//               Before each attempt the commits since the plan's read version are read: one tagged with this
//               group means an earlier attempt committed (done); one that removed an input, changed the metadata
//               or the protocol is a conflict (the group aborts and its never-committed outputs are deleted);
//               anything else (blind appends, other partitions) is rebased over.            → retired
//   retired     a checkpoint when the version crosses the interval (the inputs stay until Delta VACUUM). → done
//
// Why no row is ever lost or doubled: the log is linear, and a commit of version V is attempted only after every
// commit between the read version and V was read; so of two attempts of the same group (a retry racing a slow
// first attempt) the second sees the first's tagged commit before it could write, and a group whose conflict was
// found can never be committed later by a twin (the twin would have to skip the conflicting version to do so).
// Outputs are deleted only in states from which no attempt may write the log (before `published`, or aborted).
import { randomUUID } from 'node:crypto';
import pLimit from 'p-limit';
import type { FormatState, GroupJournalEntry } from '../../../ports/journal.js';
import type { ObjectStore } from '../../../ports/object-store.js';
import { InvalidInputError, TransientStoreError } from '../../errors.js';
import { keyRefusal, keyUnderRoot, printable } from '../../keys.js';
import type { CommitConflict, CommitDeps } from '../table-format.js';
import { versionCommitter } from '../version-commit.js';
import { type DeltaAction, deletionVectorUniqueId } from './actions.js';
import { checkpointDue, DeltaCheckpointError, writeCheckpoint } from './checkpoint-writer.js';
import { undeclaredCoordination } from './coordination.js';
import {
  type DeltaFile,
  type DeltaSnapshot,
  normalizeTableRoot,
  readCommitActions,
  readDeltaSnapshot,
} from './log.js';
import { type DeltaLogStore, LAKE_COMPACTOR_ENGINE_INFO } from './log-store.js';
import { deltaFileStatsOf } from './stats.js';

/** The field of `commitInfo` that names the run and group a commit belongs to: how a retry finds its own commit. */
export const COMMIT_TAG = 'lakeCompactor';

/** Attempts at one commit before the step gives up for now (a retryable error: the workflow retries the step). */
export const MAX_COMMIT_ATTEMPTS = 8;

/** What the Delta format records per group: where the table is, the version planned at, the version committed. */
export interface DeltaGroupState {
  readonly tableRoot: string;
  readonly readVersion: number;
  readonly committedVersion?: number;
}

/** The journal's record of a Delta group. @throws InvalidInputError when the entry was not planned as Delta. */
export function deltaGroupState(
  entry: Pick<GroupJournalEntry, 'runId' | 'groupId' | 'formatState'>,
): DeltaGroupState {
  const s = entry.formatState;
  if (s === undefined || typeof s.tableRoot !== 'string' || typeof s.readVersion !== 'number') {
    throw new InvalidInputError(
      `Group ${entry.groupId} of run ${entry.runId} has no Delta read version in its journal entry: it was not planned as a Delta table. Settle it with the format it was planned with`,
    );
  }
  return {
    tableRoot: s.tableRoot,
    readVersion: s.readVersion,
    ...(typeof s.committedVersion === 'number' ? { committedVersion: s.committedVersion } : {}),
  };
}

/** The log version that committed a group, from its formatState (see {@link DeltaGroupState}); undefined before. */
export function deltaCommittedVersion(state: FormatState): number | undefined {
  return typeof state.committedVersion === 'number' ? state.committedVersion : undefined;
}

/** The journal's formatState of a group planned at `readVersion`. */
export function deltaFormatState(tableRoot: string, readVersion: number): FormatState {
  return { tableRoot, readVersion };
}

/** Per-file statistics of an output: the JSON of its `add` action's `stats`. */
export type OutputStats = (
  store: ObjectStore,
  output: { readonly key: string; readonly size: number; readonly rows: number },
  snapshot: DeltaSnapshot,
) => Promise<string>;

/**
 * The statistics a good Delta writer records (numRecords, min/max, null counts of the indexed columns), from the
 * output's footer (stats.ts); `tightBounds` where the table may carry deletion vectors, as the protocol asks.
 */
export const footerStats: OutputStats = (store, output, snapshot) =>
  deltaFileStatsOf(store, output.key, output.size, snapshot.metadata, {
    ...(snapshot.protocol.writerFeatures.includes('deletionVectors') ? { tightBounds: true } : {}),
  });

/** How the Delta commit reaches the log and computes statistics (replaceable per table and in tests). */
export interface DeltaCommitOptions {
  /**
   * The table's declared coordination (coordination.ts). @default none: a commit (or a roll-forward) is refused
   * with the choices, never made with an assumed coordination; a rollback before `published` needs none.
   */
  readonly logStore?: (store: ObjectStore) => DeltaLogStore;
  /** @default {@link footerStats} */
  readonly stats?: OutputStats;
  /** Pause between lost races, ms, by attempt. @default 50·2^attempt with jitter */
  readonly backoff?: (attempt: number) => Promise<void>;
}

/** The Delta commit and rollback, bound to how the table's commits are coordinated (version-commit.ts). */
export function deltaCommitter(options: DeltaCommitOptions = {}) {
  const logStoreOf =
    options.logStore ??
    (() => {
      throw undeclaredCoordination();
    });
  const stats = options.stats ?? footerStats;
  const backoff =
    options.backoff ??
    ((attempt: number) =>
      new Promise<void>((resolve) => setTimeout(resolve, 50 * 2 ** attempt * (0.5 + Math.random()))));
  return versionCommitter({
    async commitVersion(deps, entry) {
      const result = await commitToLog(
        deps,
        entry,
        deltaGroupState(entry),
        logStoreOf(deps.store),
        stats,
        backoff,
      );
      return result.kind === 'committed'
        ? {
            kind: 'committed',
            state: {
              committedVersion: result.version,
              ...(result.configuration !== undefined && {
                checkpointDue: checkpointDue(result.version, result.configuration),
              }),
            },
          }
        : result;
    },
    isCommitted: (entry) =>
      entry.formatState !== undefined && deltaGroupState(entry).committedVersion !== undefined,
    afterCommit: checkpointIfDue,
  });
}

type LogResult =
  | {
      readonly kind: 'committed';
      readonly version: number;
      /** The table's properties the commit read (unknown when a recorded version is taken as it is). */
      readonly configuration?: Readonly<Record<string, string>>;
    }
  | { readonly kind: 'conflict'; readonly conflicts: readonly CommitConflict[] };

/** published: finds this group's commit, or the conflict that forbids it, or writes it at the next version. */
async function commitToLog(
  deps: CommitDeps,
  entry: GroupJournalEntry,
  state: DeltaGroupState,
  logStore: DeltaLogStore,
  stats: OutputStats,
  backoff: (attempt: number) => Promise<void>,
): Promise<LogResult> {
  if (state.committedVersion !== undefined) return { kind: 'committed', version: state.committedVersion };
  const root = normalizeTableRoot(state.tableRoot);
  const inputs = new Set(entry.inputs.map((i) => i.key));
  let checkedUpTo = state.readVersion;
  for (let attempt = 0; ; attempt += 1) {
    await logStore.prepareRead(state.tableRoot);
    const snapshot = await readDeltaSnapshot(deps.store, state.tableRoot);
    // Every commit since the plan's read version, in order: our own (an earlier attempt), or a conflict.
    for (let v = checkedUpTo + 1; v <= snapshot.version; v += 1) {
      const actions = await readCommitActions(deps.store, state.tableRoot, v);
      if (actions === undefined) {
        return conflict([
          {
            key: `${root}_delta_log/`,
            reason: `commit ${v} is no longer in the log (cleaned up before this group committed), so it cannot be checked`,
          },
        ]);
      }
      if (isOurs(actions, entry))
        return { kind: 'committed', version: v, configuration: snapshot.metadata.configuration };
      const found = conflictsIn(actions, v, root, inputs);
      if (found.length > 0) return conflict(found);
      checkedUpTo = v;
    }
    // The inputs as the latest version has them: still live, with the deletion vector the rewrite dropped the
    // rows of (or still none). Another DV deletes other rows: the outputs would bring them back.
    const live = new Map(snapshot.files.map((f) => [f.key, f]));
    const missing: CommitConflict[] = [];
    const inputFiles: DeltaFile[] = [];
    for (const input of entry.inputs) {
      const file = live.get(input.key);
      const changed = file === undefined ? undefined : deletionVectorChange(input.deletes?.id, file);
      if (file === undefined) missing.push({ key: input.key, reason: 'no longer live in the Delta log' });
      else if (changed !== undefined) missing.push({ key: input.key, reason: changed });
      else inputFiles.push(file);
    }
    if (missing.length > 0) return conflict(missing);

    const version = snapshot.version + 1;
    const body = await commitBody(deps, entry, state, snapshot, inputFiles, stats);
    // Right before the put: does the log still show only writers that coordinate as declared (and, for a quiet
    // window, is it open and quiet)? A finding aborts the group like a conflict: nothing is committed, and a
    // twin attempt finds the same evidence in the log (or has committed already, which the scan above finds).
    const finding = await logStore.check(state.tableRoot, { now: deps.clock.now(), purpose: 'commit' });
    if (finding !== undefined) {
      return conflict([
        {
          key: `${root}_delta_log/`,
          reason: `not committed through ${logStore.description}: ${finding.message}`,
          ...(finding.kind === 'mismatch' ? { coordinationMismatch: true } : {}),
        },
      ]);
    }
    if ((await logStore.writeCommit(state.tableRoot, version, body)) === 'written') {
      return { kind: 'committed', version, configuration: snapshot.metadata.configuration };
    }
    if (attempt + 1 >= MAX_COMMIT_ATTEMPTS) {
      throw new TransientStoreError(
        `Lost the race for a Delta commit of ${root || '(bucket root)'} ${MAX_COMMIT_ATTEMPTS} times in a row (last at version ${version}; coordination ${logStore.description}): writers are committing faster than this group can. Nothing was committed; the step is retried, and the group commits once the table is quieter`,
      );
    }
    await backoff(attempt);
  }
}

/** Why a live input's deletion vector is not the one planned (`planned`: its unique id), or undefined. */
function deletionVectorChange(planned: string | undefined, file: DeltaFile): string | undefined {
  const now = file.deletionVector === undefined ? undefined : deletionVectorUniqueId(file.deletionVector);
  if (now === planned) return undefined;
  if (planned === undefined) return 'a deletion vector was added to it since planning';
  if (now === undefined) return 'its deletion vector was removed since planning';
  return `its deletion vector changed since planning (${planned} → ${now}): other rows are deleted now`;
}

function conflict(conflicts: readonly CommitConflict[]): LogResult {
  return { kind: 'conflict', conflicts };
}

/** Whether a commit is this group's own: its commitInfo carries the run and group. */
function isOurs(
  actions: readonly DeltaAction[],
  entry: Pick<GroupJournalEntry, 'runId' | 'groupId'>,
): boolean {
  return actions.some((a) => {
    if (a.kind !== 'commitInfo') return false;
    const tag = (a.commitInfo as Record<string, unknown>)[COMMIT_TAG] as Record<string, unknown> | undefined;
    return tag?.runId === entry.runId && tag?.groupId === entry.groupId;
  });
}

/**
 * What in a winning commit forbids this group's commit: a remove of one of its inputs (a delete, update, merge or
 * another optimize rewrote it), or a metadata or protocol change (the schema, partitioning or features the outputs
 * were written for may be gone). Adds of other files (blind appends) do not conflict.
 */
function conflictsIn(
  actions: readonly DeltaAction[],
  version: number,
  root: string,
  inputs: ReadonlySet<string>,
): CommitConflict[] {
  const operation = actions.find((a) => a.kind === 'commitInfo');
  const by =
    operation?.kind === 'commitInfo' && operation.commitInfo.operation
      ? ` (${operation.commitInfo.operation})`
      : '';
  const found: CommitConflict[] = [];
  for (const a of actions) {
    if (a.kind === 'metaData')
      found.push({
        key: `${root}_delta_log/`,
        reason: `the table's metadata changed at version ${version}${by}`,
      });
    else if (a.kind === 'protocol')
      found.push({
        key: `${root}_delta_log/`,
        reason: `the table's protocol changed at version ${version}${by}`,
      });
    else if (a.kind === 'remove') {
      const key = keyOfPath(root, a.remove.path);
      if (key !== undefined && inputs.has(key))
        found.push({ key, reason: `removed at version ${version}${by}` });
    }
  }
  return found;
}

/**
 * The object key a log path names (relative paths are percent-encoded URIs), or undefined for an absolute URI or a
 * path the confinement rule refuses (no input of ours can be such a key, so it never conflicts with one).
 */
export function keyOfPath(root: string, path: string): string | undefined {
  if (/^[A-Za-z][A-Za-z0-9+.-]*:/.test(path)) return undefined;
  let relative: string;
  try {
    relative = decodeURIComponent(path);
  } catch {
    return undefined;
  }
  const built = keyUnderRoot(root, relative);
  return 'key' in built ? built.key : undefined;
}

/**
 * A log path for a key under the table root: a relative URI, each segment percent-encoded as a Hadoop `Path`
 * renders it (`%` → `%25`, space → `%20`), characters a URI path allows left as they are (`=`, `:`, `@`, …).
 */
export function logPathOf(root: string, key: string): string {
  const refused = keyRefusal(root, key);
  if (refused !== undefined)
    throw new InvalidInputError(
      `${printable(key)} ${refused}: only files under the Delta table root ${root || '(store root)'} are committed`,
    );
  return key
    .slice(root.length)
    .split('/')
    .map((segment) =>
      encodeURIComponent(segment).replace(/%(3D|3A|40|21|24|26|27|28|29|2A|2B|2C|3B)/g, (m) =>
        decodeURIComponent(m),
      ),
    )
    .join('/');
}

/** The JSON lines of the OPTIMIZE commit: commitInfo first (with inCommitTimestamp when enabled), removes, adds. */
async function commitBody(
  deps: CommitDeps,
  entry: GroupJournalEntry,
  state: DeltaGroupState,
  snapshot: DeltaSnapshot,
  inputs: readonly DeltaFile[],
  stats: OutputStats,
): Promise<Uint8Array> {
  const root = normalizeTableRoot(state.tableRoot);
  const now = deps.clock.now();
  const partitionValues = inputs[0]?.physicalPartitionValues ?? {};
  const logicalValues = inputs[0]?.partitionValues ?? {};
  const limit = pLimit(deps.concurrency ?? 16);
  const adds = await Promise.all(
    entry.outputs.map((output) =>
      limit(async () => {
        const head = await deps.store.head(output.finalKey);
        return {
          add: {
            path: logPathOf(root, output.finalKey),
            partitionValues,
            size: output.size,
            modificationTime: head?.lastModified.getTime() ?? now,
            dataChange: false,
            stats: await stats(
              deps.store,
              { key: output.finalKey, size: output.size, rows: output.rows },
              snapshot,
            ),
          },
        };
      }),
    ),
  );
  const removes = inputs.map((file) => ({
    remove: {
      path: file.path,
      deletionTimestamp: now,
      dataChange: false,
      extendedFileMetadata: true,
      partitionValues: file.physicalPartitionValues,
      size: file.size,
      ...(file.statsJson === undefined ? {} : { stats: file.statsJson }),
      ...(file.tags === undefined ? {} : { tags: file.tags }),
      ...(file.deletionVector === undefined ? {} : { deletionVector: file.deletionVector }),
    },
  }));
  const removedBytes = inputs.reduce((n, f) => n + f.size, 0);
  const addedBytes = entry.outputs.reduce((n, o) => n + o.size, 0);
  const sizes = entry.outputs.map((o) => o.size).sort((a, b) => a - b);
  const commitInfo = {
    ...(snapshot.inCommitTimestamps
      ? { inCommitTimestamp: await nextInCommitTimestamp(deps, state, snapshot, now) }
      : {}),
    timestamp: now,
    operation: 'OPTIMIZE',
    operationParameters: {
      predicate: JSON.stringify(predicates(logicalValues)),
      zOrderBy: JSON.stringify(entry.layout?.strategy === 'zorder' ? entry.layout.columns : []),
      auto: false,
    },
    readVersion: state.readVersion,
    isolationLevel: 'SnapshotIsolation',
    isBlindAppend: false,
    operationMetrics: {
      numRemovedFiles: String(inputs.length),
      numRemovedBytes: String(removedBytes),
      numAddedFiles: String(entry.outputs.length),
      numAddedBytes: String(addedBytes),
      minFileSize: String(sizes[0] ?? 0),
      maxFileSize: String(sizes.at(-1) ?? 0),
      // Every input's DV goes with it: its rows were dropped from the outputs.
      numDeletionVectorsRemoved: String(inputs.filter((f) => f.deletionVector !== undefined).length),
    },
    engineInfo: LAKE_COMPACTOR_ENGINE_INFO,
    txnId: randomUUID(),
    [COMMIT_TAG]: { runId: entry.runId, groupId: entry.groupId },
  };
  const lines = [{ commitInfo }, ...removes, ...adds].map((a) => JSON.stringify(a));
  return new TextEncoder().encode(`${lines.join('\n')}\n`);
}

/** `["(`date` = '2024-01-15')"]`: the partition the group was planned in, as Spark prints an OPTIMIZE's WHERE. */
function predicates(values: Readonly<Record<string, string | null>>): string[] {
  const parts = Object.entries(values).map(([name, value]) =>
    value === null ? `(\`${name}\` IS NULL)` : `(\`${name}\` = '${value.replaceAll("'", "\\'")}')`,
  );
  return parts.length === 0 ? [] : [parts.join(' AND ')];
}

/** In-commit timestamps must increase strictly: the later of now and the previous commit's plus one. */
export async function nextInCommitTimestamp(
  deps: CommitDeps,
  state: DeltaGroupState,
  snapshot: DeltaSnapshot,
  now: number,
): Promise<number> {
  let previous = snapshot.commitInfo?.inCommitTimestamp;
  if (previous === undefined) {
    const actions = await readCommitActions(deps.store, state.tableRoot, snapshot.version);
    const info = actions?.find((a) => a.kind === 'commitInfo');
    previous = info?.kind === 'commitInfo' ? info.commitInfo.inCommitTimestamp : undefined;
  }
  return previous === undefined ? now : Math.max(now, previous + 1);
}

/**
 * After a commit whose version crosses `delta.checkpointInterval`, the checkpoint a good writer leaves so readers
 * need not replay the whole log. The commit is durable already: a checkpoint the table's settings forbid us to
 * write (DeltaCheckpointError) is skipped, as any writer may; other errors fail the step, which is retried.
 */
async function checkpointIfDue(deps: CommitDeps, entry: GroupJournalEntry): Promise<void> {
  const state = deltaGroupState(entry);
  // Decided when the commit was written, from the table properties it read: no second read of the log.
  if (state.committedVersion === undefined || entry.formatState?.checkpointDue !== true) return;
  try {
    await writeCheckpoint(deps.store, state.tableRoot, state.committedVersion, { now: deps.clock.now() });
  } catch (err) {
    if (!(err instanceof DeltaCheckpointError)) throw err;
  }
}
