// The runs the CLI recorded in a location's own journal (`<work root>journal/runs/<run>/<group>.json`, written by
// `compact` through the StoreJournal), for `history <uri>` and `report`: a local folder or a bucket compacted by the
// CLI keeps no state table, so its journal is the only record of what its runs replaced, wrote and took.
import type { OpenedStore } from '../adapters/open-store.js';
import { StoreJournal } from '../adapters/store-journal.js';
import { normalizeRoot } from '../core/partition.js';
import { formatBytes } from '../core/stats.js';
import { plural } from '../core/words.js';
import { type JournalRun, journalRunsOf } from '../core/workflow/journal-runs.js';
import {
  parseJournalSegment,
  parseStoreJournalEntryKey,
  storeJournalRunsPrefix,
  undoRecordKey,
  workFolder,
} from '../core/workflow/layout.js';
import type { GroupJournalEntry } from '../ports/journal.js';
import { renderTable } from './table.js';

export type { JournalRun } from '../core/workflow/journal-runs.js';

/**
 * The newest `limit` runs of `table` (rooted at `root`) in the journal of `opened`, newest first. Only the runs'
 * keys are listed until `limit` of this table's runs are found, so an old journal costs a listing, not a read of
 * every entry. Entries of other tables sharing the work root (a bucket's) are left out: their table name, or an
 * input outside `root`, says whose they are.
 */
export async function readJournalRuns(
  opened: Pick<OpenedStore, 'store' | 'workRoot'>,
  table: { readonly name: string; readonly root: string },
  limit: number,
): Promise<JournalRun[]> {
  const runIds = new Set<string>();
  for await (const object of opened.store.listAll(storeJournalRunsPrefix(opened.workRoot))) {
    const parsed = parseStoreJournalEntryKey(opened.workRoot, object.key);
    if (parsed !== undefined) runIds.add(parsed.runId);
  }
  // Unchecked reads (no `table` option): a foreign entry is only left out here, as nothing is done on its word.
  const journal = new StoreJournal(opened.store, { workRoot: opened.workRoot });
  const root = normalizeRoot(table.root);
  const ours = (e: GroupJournalEntry) =>
    e.table === table.name && e.inputs.every((i) => root === '' || i.key.startsWith(`${root}/`));
  const entries: GroupJournalEntry[] = [];
  let found = 0;
  // Run ids begin with their start time: newest first by id, then by what the entries say.
  for (const runId of [...runIds].sort().reverse()) {
    if (found >= limit) break;
    const run = (await journal.listRun(runId)).filter(ours);
    if (run.length === 0) continue;
    entries.push(...run);
    found += 1;
  }
  return journalRunsOf(entries, await undoneRuns(opened)).slice(0, limit);
}

/** When each undone run was undone (`journal/undone/<run>.json` records in state `done`), by the id undo was given. */
async function undoneRuns(opened: Pick<OpenedStore, 'store' | 'workRoot'>): Promise<Map<string, number>> {
  const undone = new Map<string, number>();
  const prefix = `${workFolder(opened.workRoot, 'journal')}undone/`;
  for await (const object of opened.store.listAll(prefix)) {
    if (!object.key.endsWith('.json')) continue;
    const runId = parseJournalSegment(object.key.slice(prefix.length, -'.json'.length));
    if (object.key !== undoRecordKey(opened.workRoot, runId)) continue;
    try {
      const record = JSON.parse(new TextDecoder().decode(await opened.store.get(object.key))) as {
        state?: unknown;
        finishedAt?: unknown;
      };
      if (record.state === 'done' && typeof record.finishedAt === 'number')
        undone.set(runId, record.finishedAt);
    } catch {
      // A record that is not JSON says nothing about the run; the run is shown as its entries say.
    }
  }
  return undone;
}

/** What a run came to, as `history` prints it: its state, and `undone` once undo reverted it. */
export function journalRunStateLabel(run: JournalRun): string {
  return run.undoneAt === undefined ? run.state : `${run.state}, undone`;
}

/** The runs as a text table (newest first), the way `history` prints the state table's. */
export function renderJournalRuns(runs: readonly JournalRun[]): string {
  return renderTable(
    [
      { header: 'started', value: (r) => new Date(r.startedAt).toISOString() },
      { header: 'partition', value: (r) => r.partition || '(root)' },
      { header: 'state', value: journalRunStateLabel },
      {
        header: 'files',
        value: (r) => `${r.inputFiles} → ${r.outputFiles}`,
        align: 'right',
      },
      { header: 'rows', value: (r) => r.rows, align: 'right' },
      {
        header: 'bytes',
        value: (r) => `${formatBytes(r.bytesBefore)} → ${formatBytes(r.bytesAfter)}`,
        align: 'right',
      },
      {
        header: 'took',
        value: (r) => (r.durationMs === undefined ? 'open' : `${(r.durationMs / 1000).toFixed(1)} s`),
        align: 'right',
      },
      { header: 'format', value: (r) => r.format },
      { header: 'run', value: (r) => r.runId },
      { header: 'error', value: (r) => r.firstError ?? '' },
    ],
    runs,
  );
}

/** The line under the table: how many runs, and where they were read. */
export function journalRunsFooter(runs: readonly JournalRun[], limit: number, workRoot: string): string {
  return `${plural(runs.length, 'run')} in the CLI's journal (${workRoot}journal/)${runs.length === limit ? ` (newest ${limit}; --limit shows more)` : ''}`;
}
