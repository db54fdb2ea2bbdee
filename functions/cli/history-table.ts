// `lake-compactor history <uri>`: the runs that compacted a table, read from the location itself rather than from a
// deployment's state table. Two records are read, so a table compacted by the CLI (which keeps no state table) shows
// its runs wherever it lives (a local folder or s3://):
//  - the CLI's own journal in the location's work root (`_lake-compactor/journal/`; journal-history.ts): every run
//    `compact` made, whatever the format, with its real inputs → outputs, bytes, duration and state;
//  - for a format whose log or metadata records our runs (TableFormat.history: e.g. every commit our runs made to a
//    table's log carries the run and group), that log too, which also
//    holds runs whose journal entries vacuum has since removed, and other writers' commits.
import type { OpenedStore } from '../adapters/open-store.js';
import { ForeignTableProbe } from '../core/formats/foreign-tables.js';
import { TABLE_FORMATS, type TableFormatName } from '../core/formats/index.js';
import type { TableHistoryCommit, TableHistoryReader } from '../core/formats/table-format.js';
import { formatBytes } from '../core/stats.js';
import { plural } from '../core/words.js';
import { tableNameOf } from './args.js';
import type { JournalRun } from './journal-history.js';
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
  /** The table name `compact` journaled its runs under. @default the URI's last path segment */
  readonly table?: string;
  /** The work root the CLI's journal lives in. @default `_lake-compactor/` */
  readonly workRoot?: string;
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
  /** The runs the CLI's journal in the location holds (newest first, at most `limit`); see journal-history.ts. */
  readonly journalRuns: readonly JournalRun[];
}

/** What `history <uri>` read: the table's log (for a format that records runs there) and the CLI's journal. */
export type LocationHistory = TableHistory | { readonly journalRuns: readonly JournalRun[] };

/** The registered formats whose tables record our runs, in registration order, with how each reads them. */
export function historyFormats(): { readonly name: string; readonly history: TableHistoryReader }[] {
  return [...TABLE_FORMATS.values()].flatMap((f) =>
    f.history === undefined ? [] : [{ name: f.name, history: f.history }],
  );
}

/**
 * Reads and prints the runs recorded at `uri`: the CLI journal's, and (for a format that records them) the table
 * log's.
 * @throws the format's own error (its log error) when the location is not a table of the format or
 * its log cannot be read.
 */
export async function runTableHistory(
  uri: string,
  options: TableHistoryOptions,
  io: TableHistoryIo,
): Promise<LocationHistory> {
  // Imported here, not at the top: `history --help` reads historyFormats, and needs no AWS SDK.
  const { openStore } = await import('../adapters/open-store.js');
  const { journalRunsFooter, readJournalRuns, renderJournalRuns } = await import('./journal-history.js');
  const opened = openStore(uri, { env: io.env, workRoot: options.workRoot });
  const limit = options.limit ?? 20;
  const journalRuns = await readJournalRuns(
    opened,
    { name: options.table ?? tableNameOf(uri), root: opened.prefix },
    limit,
  );
  const reader = TABLE_FORMATS.get(options.format)?.history;
  if (reader === undefined) {
    if (options.json) {
      io.out(JSON.stringify({ journalRuns }, null, 2));
    } else {
      if (journalRuns.length > 0) io.out(renderJournalRuns(journalRuns));
      io.out(
        `${journalRuns.length > 0 ? '\n' : ''}${journalRunsFooter(journalRuns, limit, opened.workRoot)}`,
      );
      const hint = await logHint(opened, options.format);
      if (hint !== undefined) io.out(hint);
    }
    return { journalRuns };
  }
  const { store, prefix } = opened;
  const history = await reader.read(store, prefix);
  const ours = history.commits.filter((c) => c.runId !== undefined);
  const otherCommits: Record<string, number> = {};
  for (const c of history.commits) {
    if (c.runId !== undefined) continue;
    const op = c.operation ?? '(no commitInfo)';
    otherCommits[op] = (otherCommits[op] ?? 0) + 1;
  }
  const runs = groupRuns(ours)
    .sort((a, b) => (b.versions[0]?.version ?? 0) - (a.versions[0]?.version ?? 0))
    .slice(0, limit);
  const result: TableHistory = {
    latestVersion: history.latestVersion,
    earliestVersion: history.earliestVersion,
    otherCommits,
    runs,
    journalRuns,
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
  // The journal's view of the same runs, with what the log does not say (duration, rows, state of an open run).
  if (journalRuns.length > 0) io.out(`\n${renderJournalRuns(journalRuns)}`);
  io.out(journalRunsFooter(journalRuns, limit, opened.workRoot));
  return result;
}

/**
 * When the location is a table whose format records our runs in its log and `--format` did not name it: a line saying
 * which `--format` reads that log too (the journal shows only runs whose entries vacuum has not removed yet).
 */
async function logHint(opened: OpenedStore, format: string): Promise<string | undefined> {
  const found = await new ForeignTableProbe(opened.store).at(opened.prefix);
  if (found === undefined || found.format === format) return undefined;
  const reader = TABLE_FORMATS.get(found.format as TableFormatName)?.history;
  if (reader === undefined) return undefined;
  return `this location is ${reader.tableLabel}: pass --format ${found.format} to read the runs its log records as well`;
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
