// What `lake-compactor undo` does, loaded by undo.ts only when the command runs (help, --version and usage errors
// never load it, nor the AWS SDK and Parquet engine it reaches).
// `lake-compactor undo <uri> <run>`: reverts a finished `compact` run of the location, as its journal records it,
// through the table format's own undo (TableFormat.undo): the table's file set of before the run comes back, or the
// undo is refused with nothing changed, saying why and what to do instead. `--dry-run` says what would change.
// With `--state-table` (or `--stack`) the run is one the deployed workflow made, read from the state table's
// journal; only where the entries are read differs (RunJournalSource), never how the run is undone.
// The undo itself (checks, record, the format's undo) is core/workflow/undo-run.ts, which the sweep function's
// console input runs too; this module builds its source and prints its outcome.

import { type OpenedStore, openStore } from '../adapters/open-store.js';
import { StoreJournal } from '../adapters/store-journal.js';
import { UsageError } from '../core/errors.js';
import { DEFAULT_TABLE_FORMAT, type TableFormatName } from '../core/formats/index.js';
import type { UndoChange } from '../core/formats/table-format.js';
import { printable } from '../core/keys.js';
import { plural } from '../core/words.js';
import {
  parseStoreJournalEntryKey,
  storeJournalEntryKey,
  storeJournalRunsPrefix,
} from '../core/workflow/layout.js';
import { type RunJournalSource, undoRun } from '../core/workflow/undo-run.js';
import type { Clock } from '../ports/clock.js';
import type { ObjectStore } from '../ports/object-store.js';
import type { ParquetEngine } from '../ports/parquet-engine.js';
import { dynamoDbClientFromEnv } from '../shared/aws-env.js';
import { defaultParquetEngine } from '../shared/parquet-engine.js';
import { stateTableUndoSource } from '../shared/state-table-undo.js';
import { tableNameOf } from './args.js';
import { type FormatCliOptions, formatSettingsOf } from './format-options.js';
import { commandFormat } from './format-services.js';

export interface UndoIo {
  readonly out: (text: string) => void;
  readonly clock: Clock;
  readonly env: Readonly<Record<string, string | undefined>>;
}

export interface UndoCliOptions extends FormatCliOptions {
  /** Say what would change; change nothing. */
  readonly dryRun?: boolean;
  /** The table's name as `compact` recorded it. @default the URI's last path segment */
  readonly table?: string;
  /** The work root the journal lives in. @default `_lake-compactor/` */
  readonly workRoot?: string;
  /**
   * A deployment's DynamoDB state table: the run is one the deployed workflow made, read from the state table's
   * journal instead of the location's own. @default the location's journal
   */
  readonly stateTable?: string;
  /** The location's table format: the run is undone by that format's undo. @default 'parquet' */
  readonly format?: TableFormatName;
}

/** Test seams of {@link runUndo}. */
export interface UndoHooks {
  /** Replaces the Parquet engine a `delete-rebuild` undo re-creates inputs with. @default defaultParquetEngine */
  readonly engine?: Pick<ParquetEngine, 'rewriteGroup' | 'verifyOutputs'>;
  /** Wraps the opened store (tests kill the undo at a chosen request). */
  readonly wrapStore?: (store: ObjectStore) => ObjectStore;
}

/** What `undo` came to, as the caller (and a test) sees it. */
export type UndoReport =
  | { readonly kind: 'undone' | 'planned'; readonly changes: readonly UndoChange[] }
  | { readonly kind: 'already-undone'; readonly reason: string };

/** The runs the location's journal still holds, newest first (run ids begin with their start time). */
async function journaledRuns(opened: OpenedStore): Promise<string[]> {
  const runs = new Set<string>();
  for await (const object of opened.store.listAll(storeJournalRunsPrefix(opened.workRoot))) {
    const parsed = parseStoreJournalEntryKey(opened.workRoot, object.key);
    if (parsed !== undefined) runs.add(parsed.runId);
  }
  return [...runs].sort().reverse();
}

/** The location's own journal (`_lake-compactor/journal/`), where every run of `lake-compactor compact` is. */
function locationJournal(opened: OpenedStore, uri: string, table: string): RunJournalSource {
  const journal = new StoreJournal(opened.store, {
    workRoot: opened.workRoot,
    table: { name: table, root: opened.prefix },
  });
  return {
    journal,
    async entries(runId) {
      let entries = await journal.listRun(runId);
      if (entries.length === 0) {
        const runs = await journaledRuns(opened);
        // The id compact prints names the whole command: one run per partition, `<id>-p<index>-<hash>`.
        const partitions = runs.filter((r) => r.startsWith(`${runId}-p`)).sort();
        for (const child of partitions) entries = [...entries, ...(await journal.listRun(child))];
      }
      return entries;
    },
    async notFound(runId) {
      const runs = await journaledRuns(opened);
      const known =
        runs.length === 0
          ? 'it holds no run'
          : `it holds ${plural(runs.length, 'run')}: ${runs.slice(0, 5).join(', ')}${runs.length > 5 ? ', …' : ''}`;
      return `run ${runId} is not in the journal of ${uri} (${opened.workRoot}journal/; ${known}). A run of a deployment is journaled in its state table: pass --stack <stack-name> or --state-table <name>; a finished run's entries are removed by vacuum after its retention, and then the run can no longer be undone`;
    },
    settleHint: () => `Run lake-compactor settle ${uri} first`,
    async settledAt(groups) {
      const times = new Map<string, number>();
      for (const g of groups) {
        const head = await opened.store.head(storeJournalEntryKey(opened.workRoot, g.runId, g.groupId));
        if (head !== undefined) times.set(`${g.runId}/${g.groupId}`, head.lastModified.getTime());
      }
      return times;
    },
    // The location's journal holds only this location's runs.
    checkTable: () => undefined,
    // A CLI run is not leased: the format's undo checks each file's ETag as it changes it, as compact's commit does.
    exclusive: (_runId, _groups, change) => change(),
  };
}

function printChanges(io: UndoIo, changes: readonly UndoChange[], dryRun: boolean): void {
  const verb = {
    restore: dryRun ? 'would restore' : 'restored',
    remove: dryRun ? 'would remove' : 'removed',
    commit: dryRun ? 'would commit' : 'committed',
  } as const;
  for (const c of changes) io.out(`${verb[c.action]} ${printable(c.key)}: ${c.detail}`);
}

/**
 * Runs `undo` of `runId` on `uri`.
 * @throws UndoRefusedError (exit 1) when the undo is refused; nothing was changed then.
 */
export async function runUndo(
  uri: string,
  runId: string,
  options: UndoCliOptions,
  io: UndoIo,
  hooks: UndoHooks = {},
): Promise<UndoReport> {
  const given = openStore(uri, { env: io.env, workRoot: options.workRoot });
  const opened: OpenedStore = { ...given, store: hooks.wrapStore?.(given.store) ?? given.store };
  const table = options.table ?? tableNameOf(uri);
  const formatName = options.format ?? DEFAULT_TABLE_FORMAT;
  const format = commandFormat(opened, table, formatName, formatSettingsOf(uri, formatName, options), io);
  const dryRun = options.dryRun === true;
  const where = options.stateTable === undefined ? '' : ` in state table ${options.stateTable}`;
  io.out(
    `undo ${uri}: run ${runId} of table ${table}${where}${dryRun ? ' (dry run: nothing is changed)' : ''}`,
  );
  const source =
    options.stateTable === undefined
      ? locationJournal(opened, uri, table)
      : stateTableJournal(opened, uri, table, options.stateTable, io);
  const outcome = await undoRun(
    {
      store: opened.store,
      workRoot: opened.workRoot,
      format,
      source,
      clock: io.clock,
      engine: hooks.engine ?? defaultParquetEngine,
    },
    { location: uri, runId, dryRun },
  );
  switch (outcome.kind) {
    case 'already-undone':
      io.out(`nothing to do: ${outcome.reason}`);
      return { kind: 'already-undone', reason: outcome.reason };
    case 'planned':
      printChanges(io, outcome.changes, true);
      for (const note of outcome.notes) io.out(`note: ${note}`);
      io.out(`dry run: ${plural(outcome.changes.length, 'change')} would be made; nothing was changed`);
      return { kind: 'planned', changes: outcome.changes };
    case 'undone':
      printChanges(io, outcome.changes, false);
      for (const note of outcome.notes) io.out(`note: ${note}`);
      io.out(
        `run ${runId} undone: ${plural(outcome.groups, 'group')}, ${plural(outcome.changes.length, 'change')}. The run's journal entries stay (vacuum removes them after its retention); compacting again plans the restored files like any others`,
      );
      return { kind: 'undone', changes: outcome.changes };
  }
}

/**
 * A deployment's journal in its DynamoDB state table (see stateTableUndoSource), with the CLI's hints: what to pass
 * or run next is said in its flags.
 */
function stateTableJournal(
  opened: OpenedStore,
  uri: string,
  table: string,
  stateTable: string,
  io: UndoIo,
): RunJournalSource {
  if (!/^s3a?:\/\//i.test(uri.trim())) {
    throw new UsageError(
      `--state-table undoes a deployed table's run on S3; ${uri} is a local folder, whose runs journal in the folder: drop --state-table and --stack`,
    );
  }
  return stateTableUndoSource({
    client: dynamoDbClientFromEnv(io.env),
    stateTable,
    store: opened.store,
    workRoot: opened.workRoot,
    table,
    prefix: opened.prefix,
    location: uri,
    clock: io.clock,
    hints: {
      settle: (partitions) =>
        `Wait for the run to end, or run lake-compactor settle ${uri} --partition ${partitions[0] || '<path>'} --table ${table} --state-table ${stateTable} first`,
      notFound:
        'a run of lake-compactor compact is journaled in the location: drop --stack and --state-table',
      otherTable: (other) => `pass --table ${other} and that table's location`,
      otherLocation: `pass the location of table ${table}`,
    },
  });
}
