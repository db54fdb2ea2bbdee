// `lake-compactor history <uri> --format delta`: the runs that compacted a table, read from the table itself rather
// than from a deployment's state table. A Delta table's log is its history: every OPTIMIZE version our runs
// committed carries the run and group in `commitInfo.lakeCompactor`, so a table compacted by the CLI (which keeps
// no state table) shows its runs too, wherever it lives (a local folder or s3://).
import { openStore } from '../adapters/open-store.js';
import { UsageError } from '../core/errors.js';
import {
  compactorCommits,
  type DeltaCommitSummary,
  readDeltaHistory,
} from '../core/formats/delta/history.js';
import type { TableFormatName } from '../core/formats/index.js';
import { formatBytes } from '../core/stats.js';
import { renderTable } from './table.js';

export interface TableHistoryIo {
  readonly out: (text: string) => void;
  readonly env: Readonly<Record<string, string | undefined>>;
}

export interface TableHistoryOptions {
  readonly format: TableFormatName;
  /** Most runs to print, newest first. @default 20 */
  readonly limit?: number;
  readonly json?: boolean;
}

/** One run of ours as the table's log records it: the versions it committed, one per group. */
export interface TableRun {
  readonly runId: string;
  /** The earliest commit time of its versions (epoch ms). */
  readonly committedAt?: number;
  readonly versions: readonly DeltaCommitSummary[];
  readonly filesRemoved: number;
  readonly filesAdded: number;
  readonly bytesRemoved: number;
  readonly bytesAdded: number;
}

export interface TableHistory {
  readonly latestVersion: number;
  /** The oldest JSON commit still in the log: runs before it were cleaned up with the log. */
  readonly earliestVersion: number;
  /** Commits of other writers (their operation → count), for context beside ours. */
  readonly otherCommits: Readonly<Record<string, number>>;
  /** Newest first, at most `limit`. */
  readonly runs: readonly TableRun[];
}

/**
 * Reads and prints the runs recorded in the table at `uri`.
 * @throws UsageError when the format keeps no history in the table that we read (everything but `delta`): the
 * message says where those runs are recorded instead.
 * @throws DeltaLogError when the location is not a Delta table or its log cannot be read.
 */
export async function runTableHistory(
  uri: string,
  options: TableHistoryOptions,
  io: TableHistoryIo,
): Promise<TableHistory> {
  if (options.format !== 'delta') {
    throw new UsageError(
      `history <uri> reads the runs a table records in its own log, which only --format delta does (format "${options.format}"): pass --format delta for a Delta table, or drop <uri> and pass --state-table <name> to read a deployment's runs`,
    );
  }
  const { store, prefix } = openStore(uri, { env: io.env });
  const history = await readDeltaHistory(store, prefix);
  const ours = compactorCommits(history);
  const otherCommits: Record<string, number> = {};
  for (const c of history.commits) {
    if (c.runId !== undefined) continue;
    const op = c.operation ?? '(no commitInfo)';
    otherCommits[op] = (otherCommits[op] ?? 0) + 1;
  }
  const limit = options.limit ?? 20;
  const runs = groupRuns(ours)
    .sort((a, b) => (b.versions[0]?.version ?? 0) - (a.versions[0]?.version ?? 0))
    .slice(0, limit);
  const result: TableHistory = {
    latestVersion: history.latestVersion,
    earliestVersion: history.earliestVersion,
    otherCommits,
    runs,
  };
  if (options.json) {
    io.out(JSON.stringify(result, null, 2));
    return result;
  }
  const lines = runs.flatMap((run) => run.versions.map((v) => ({ run, v })));
  io.out(
    renderTable(
      [
        { header: 'version', value: (l) => l.v.version, align: 'right' },
        {
          header: 'committed',
          value: (l) => (l.v.timestamp === undefined ? '' : new Date(l.v.timestamp).toISOString()),
        },
        { header: 'operation', value: (l) => l.v.operation ?? '' },
        { header: 'partition', value: (l) => l.v.predicate ?? '' },
        { header: 'files', value: (l) => `${l.v.filesRemoved} → ${l.v.filesAdded}`, align: 'right' },
        {
          header: 'bytes',
          value: (l) => `${formatBytes(l.v.bytesRemoved)} → ${formatBytes(l.v.bytesAdded)}`,
          align: 'right',
        },
        { header: 'run', value: (l) => l.run.runId },
        { header: 'group', value: (l) => l.v.groupId ?? '' },
      ],
      lines,
    ),
  );
  const others = Object.entries(otherCommits)
    .map(([op, n]) => `${n} ${op}`)
    .join(', ');
  io.out(
    `\n${runs.length} runs, ${lines.length} OPTIMIZE versions by lake-compactor${runs.length === limit ? ` (newest ${limit} runs; --limit shows more)` : ''}; table at version ${history.latestVersion}, log from version ${history.earliestVersion}; other commits: ${others || 'none'}`,
  );
  return result;
}

/** Our commits by run, each run's versions oldest first. */
function groupRuns(commits: readonly DeltaCommitSummary[]): TableRun[] {
  const byRun = new Map<string, DeltaCommitSummary[]>();
  for (const c of commits) {
    const list = byRun.get(c.runId as string) ?? [];
    list.push(c);
    byRun.set(c.runId as string, list);
  }
  return [...byRun].map(([runId, versions]) => {
    const times = versions.flatMap((v) => (v.timestamp === undefined ? [] : [v.timestamp]));
    return {
      runId,
      ...(times.length === 0 ? {} : { committedAt: Math.min(...times) }),
      versions,
      filesRemoved: versions.reduce((n, v) => n + v.filesRemoved, 0),
      filesAdded: versions.reduce((n, v) => n + v.filesAdded, 0),
      bytesRemoved: versions.reduce((n, v) => n + v.bytesRemoved, 0),
      bytesAdded: versions.reduce((n, v) => n + v.bytesAdded, 0),
    };
  });
}
