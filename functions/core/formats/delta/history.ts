// What a Delta table's own log says happened to it: every JSON commit still in `_delta_log/`, summarised (operation,
// files and bytes removed and added), and which of them were OPTIMIZE versions our runs committed (tagged
// `commitInfo.lakeCompactor`). The log is the table's history wherever it lives (a local folder, S3), so a table
// compacted without a deployment's state table — by the CLI — still shows its runs.
import pLimit from 'p-limit';
import type { ObjectStore } from '../../../ports/object-store.js';
import type { TableHistoryCommit, TableHistoryReader } from '../table-format.js';
import type { DeltaAction } from './actions.js';
import { COMMIT_TAG } from './commit.js';
import { DeltaLogError } from './errors.js';
import { normalizeTableRoot, readCommitActions } from './log.js';
import { classifyLogFile } from './log-files.js';

/**
 * One JSON commit of the log, as a history line: the port's commit (`timestamp` is `inCommitTimestamp` when the
 * table writes it, else commitInfo's; `predicate` is OPTIMIZE's `operationParameters.predicate`; the run and group
 * are commitInfo's `lakeCompactor` tag), plus the version the writer read.
 */
export interface DeltaCommitSummary extends TableHistoryCommit {
  readonly readVersion?: number;
}

/** The log as history: its commits oldest first and where the readable part of it starts. */
export interface DeltaHistory {
  /** The newest version (-1 when the folder holds no commit). */
  readonly latestVersion: number;
  /**
   * The oldest JSON commit still there: a writer's log cleanup deletes commits older than its retention once a
   * checkpoint covers them, so history before this version is gone (the checkpoint holds state, not history).
   */
  readonly earliestVersion: number;
  /** Versions with a checkpoint (any kind). */
  readonly checkpoints: readonly number[];
  readonly commits: readonly DeltaCommitSummary[];
}

/**
 * Reads every JSON commit in the table's log and summarises each.
 * @throws DeltaLogError when the log holds no commit, or a commit is malformed.
 */
export async function readDeltaHistory(
  store: ObjectStore,
  tableRoot: string,
  options: { readonly concurrency?: number } = {},
): Promise<DeltaHistory> {
  const root = normalizeTableRoot(tableRoot);
  const logPrefix = `${root}_delta_log/`;
  const versions: number[] = [];
  const checkpoints = new Set<number>();
  for await (const object of store.listAll(logPrefix)) {
    const name = object.key.slice(logPrefix.length);
    if (name.includes('/')) continue;
    const file = classifyLogFile(name);
    if (file?.kind === 'commit') versions.push(file.version);
    else if (file?.kind === 'checkpoint') checkpoints.add(file.version);
  }
  if (versions.length === 0) {
    throw new DeltaLogError(root, `no commit under ${logPrefix}: it is not a Delta table`);
  }
  versions.sort((a, b) => a - b);
  const limit = pLimit(options.concurrency ?? 16);
  const commits = await Promise.all(
    versions.map((version) =>
      limit(async () => summarise(version, (await readCommitActions(store, root, version)) ?? [])),
    ),
  );
  return {
    latestVersion: versions.at(-1) ?? -1,
    earliestVersion: versions[0] ?? -1,
    checkpoints: [...checkpoints].sort((a, b) => a - b),
    commits,
  };
}

/** The commits of `history` that our runs committed (OPTIMIZE versions tagged with a run), oldest first. */
export function compactorCommits(history: Pick<DeltaHistory, 'commits'>): DeltaCommitSummary[] {
  return history.commits.filter((c) => c.runId !== undefined);
}

/**
 * A Delta table's history as the TableFormat port reads it (`lake-compactor history <uri> --format delta`): the
 * log's commits, ours among them as OPTIMIZE versions.
 * @throws DeltaLogError when the location is not a Delta table or a commit is malformed.
 */
export const deltaHistory: TableHistoryReader = {
  tableLabel: 'a Delta table',
  commitsLabel: 'OPTIMIZE versions',
  read: (store, tableRoot) => readDeltaHistory(store, tableRoot),
  describeExtent: (history) =>
    `table at version ${history.latestVersion}, log from version ${history.earliestVersion}`,
};

function summarise(version: number, actions: readonly DeltaAction[]): DeltaCommitSummary {
  let filesRemoved = 0;
  let filesAdded = 0;
  let bytesRemoved = 0;
  let bytesAdded = 0;
  let info: Readonly<Record<string, unknown>> | undefined;
  for (const action of actions) {
    if (action.kind === 'add') {
      filesAdded += 1;
      bytesAdded += action.add.size;
    } else if (action.kind === 'remove') {
      filesRemoved += 1;
      bytesRemoved += action.remove.size ?? 0;
    } else if (action.kind === 'commitInfo') info = action.commitInfo;
  }
  const tag = info?.[COMMIT_TAG] as { runId?: unknown; groupId?: unknown } | undefined;
  const parameters = info?.operationParameters as { predicate?: unknown } | undefined;
  const timestamp = numberOr(info?.inCommitTimestamp) ?? numberOr(info?.timestamp);
  const readVersion = numberOr(info?.readVersion);
  return {
    version,
    ...(timestamp === undefined ? {} : { timestamp }),
    ...(typeof info?.operation === 'string' ? { operation: info.operation } : {}),
    ...(typeof tag?.runId === 'string' ? { runId: tag.runId } : {}),
    ...(typeof tag?.groupId === 'string' ? { groupId: tag.groupId } : {}),
    ...(typeof parameters?.predicate === 'string' ? { predicate: parameters.predicate } : {}),
    ...(readVersion === undefined ? {} : { readVersion }),
    filesRemoved,
    filesAdded,
    bytesRemoved,
    bytesAdded,
  };
}

function numberOr(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}
