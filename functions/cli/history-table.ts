// `lake-compactor history <uri> --format <name>`: the runs that compacted a table, read from the table itself rather
// than from a deployment's state table, for a format whose log or metadata records them (TableFormat.history; a
// Delta table's log: every OPTIMIZE version our runs committed carries the run and group in
// `commitInfo.lakeCompactor`), so a table compacted by the CLI (which keeps no state table) shows its runs too,
// wherever it lives (a local folder or s3://). A format without it is refused with what to pass instead.
import { UsageError } from '../core/errors.js';
import { TABLE_FORMATS, type TableFormatName } from '../core/formats/index.js';
import type { TableHistoryCommit, TableHistoryReader } from '../core/formats/table-format.js';
import { formatBytes } from '../core/stats.js';
import { plural } from '../core/words.js';
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
  readonly versions: readonly TableHistoryCommit[];
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

/** The registered formats whose tables record our runs, in registration order, with how each reads them. */
export function historyFormats(): { readonly name: string; readonly history: TableHistoryReader }[] {
  return [...TABLE_FORMATS.values()].flatMap((f) =>
    f.history === undefined ? [] : [{ name: f.name, history: f.history }],
  );
}

/** Why `history <uri>` cannot read a table of `format`: it keeps no history we read; where the runs are instead. */
function noTableHistoryMessage(format: string): string {
  const keeping = historyFormats();
  const flags = keeping.map((f) => `--format ${f.name}`).join(' or ');
  const pass = keeping.map((f) => `--format ${f.name} for ${f.history.tableLabel}`).join(', or ');
  return `history <uri> reads the runs a table records in its own log, which only ${flags} ${keeping.length === 1 ? 'does' : 'do'} (format "${format}"): pass ${pass}, or drop <uri> and pass --state-table <name> to read a deployment's runs`;
}

/**
 * Reads and prints the runs recorded in the table at `uri`.
 * @throws UsageError when the format keeps no history in the table that we read (TableFormat.history): the
 * message says where those runs are recorded instead.
 * @throws the format's own error (a Delta table's DeltaLogError) when the location is not a table of the format or
 * its log cannot be read.
 */
export async function runTableHistory(
  uri: string,
  options: TableHistoryOptions,
  io: TableHistoryIo,
): Promise<TableHistory> {
  const reader = TABLE_FORMATS.get(options.format)?.history;
  if (reader === undefined) throw new UsageError(noTableHistoryMessage(options.format));
  // Imported here, not at the top: `history --help` reads historyFormats, and needs no AWS SDK.
  const { openStore } = await import('../adapters/open-store.js');
  const { store, prefix } = openStore(uri, { env: io.env });
  const history = await reader.read(store, prefix);
  const ours = history.commits.filter((c) => c.runId !== undefined);
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
    `\n${plural(runs.length, 'run')}, ${lines.length} ${reader.commitsLabel} by lake-compactor${runs.length === limit ? ` (newest ${limit} runs; --limit shows more)` : ''}; ${reader.describeExtent(history)}; other commits: ${others || 'none'}`,
  );
  return result;
}

/** Our commits by run, each run's versions oldest first. */
function groupRuns(commits: readonly TableHistoryCommit[]): TableRun[] {
  const byRun = new Map<string, TableHistoryCommit[]>();
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
