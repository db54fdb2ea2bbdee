// What `lake-compactor undo` does, loaded by undo.ts only when the command runs (help, --version and usage errors
// never load it, nor the AWS SDK and Parquet engine it reaches).
// `lake-compactor undo <uri> <run>`: reverts a finished `compact` run of the location, as its journal records it,
// through the table format's own undo (TableFormat.undo): the table's file set of before the run comes back, or the
// undo is refused with nothing changed, saying why and what to do instead. `--dry-run` says what would change.
// With `--state-table` (or `--stack`) the run is one the deployed workflow made, read from the state table's
// journal; only where the entries are read differs (RunJournalSource), never how the run is undone.
//
// Why it reads the run's own journal entries and keeps a record beside them: the entries say exactly what the run
// replaced (inputs with their ETags, versions or trash copies; outputs; the format's committed version), and the
// record (`journal/undone/<run>.json`) makes a second undo a no-op and lets an interrupted one finish.

import { DynamoJournal } from '../adapters/dynamodb-journal.js';
import { DynamoPartitionLease } from '../adapters/dynamodb-partition-lease.js';
import { type OpenedStore, openStore } from '../adapters/open-store.js';
import { StoreJournal } from '../adapters/store-journal.js';
import { CompactorError, ObjectNotFoundError, UsageError } from '../core/errors.js';
import { DEFAULT_TABLE_FORMAT, type TableFormatName } from '../core/formats/index.js';
import type { RunUndoResult, TableFormat, UndoChange } from '../core/formats/table-format.js';
import { printable } from '../core/keys.js';
import { plural } from '../core/words.js';
import {
  journalManifestPrefix,
  parseStoreJournalEntryKey,
  storeJournalEntryKey,
  storeJournalRunsPrefix,
  undoRecordKey,
} from '../core/workflow/layout.js';
import type { Clock } from '../ports/clock.js';
import { type GroupJournalEntry, isSettled, type Journal, type JournalPartition } from '../ports/journal.js';
import type { ObjectStore } from '../ports/object-store.js';
import type { ParquetEngine } from '../ports/parquet-engine.js';
import { dynamoDbClientFromEnv } from '../shared/aws-env.js';
import { defaultParquetEngine } from '../shared/parquet-engine.js';
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

/**
 * The undo was refused: nothing was changed (the table moved on since the run, retention removed what the undo
 * needs, the run is not finished, or the format does not revert runs itself). Exit 1, with what to do instead.
 */
export class UndoRefusedError extends CompactorError {}

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

/** The record of an undo kept beside the journal (see {@link undoRecordKey}). */
interface UndoRecord {
  readonly runId: string;
  readonly state: 'started' | 'done';
  readonly startedAt: number;
  readonly finishedAt?: number;
  readonly changes?: readonly UndoChange[];
}

async function readRecord(opened: OpenedStore, runId: string): Promise<UndoRecord | undefined> {
  try {
    const bytes = await opened.store.get(undoRecordKey(opened.workRoot, runId));
    return JSON.parse(new TextDecoder().decode(bytes)) as UndoRecord;
  } catch (err) {
    if (err instanceof ObjectNotFoundError) return undefined;
    throw err;
  }
}

async function writeRecord(opened: OpenedStore, record: UndoRecord): Promise<void> {
  await opened.store.put(undoRecordKey(opened.workRoot, record.runId), JSON.stringify(record, null, 2), {
    contentType: 'application/json',
  });
}

/**
 * Where a run's journal entries are read: the location's own journal (a run the CLI made) or a deployment's state
 * table (a run the deployed workflow made). Everything after reading them — the checks, the format's undo, the
 * record — is the same for both, so a deployed run is undone by exactly the code that undoes a CLI run.
 */
interface RunJournalSource {
  /** The journal the format's undo is handed (its CommitDeps). */
  readonly journal: Journal;
  /** The run's entries, as journaled (none when the journal does not hold the run). */
  entries(runId: string): Promise<GroupJournalEntry[]>;
  /** Why the run was not found: where the undo looked, and what else it can tell. */
  notFound(runId: string): Promise<string>;
  /** What to run to finish a run that left groups open in this journal. */
  settleHint(partitions: readonly string[]): string;
  /** See RunUndoRequest.settledAt: the store's own time of each group's `done`, where the journal is in the store. */
  settledAt(groups: readonly GroupJournalEntry[]): Promise<ReadonlyMap<string, number> | undefined>;
  /** Refuses entries that are not of the table at `uri` (a run id of another table of the deployment). */
  checkTable(runId: string, entries: readonly GroupJournalEntry[]): void;
  /** Runs the undo's changes to the run's partitions with nothing else compacting them (see stateTableJournal). */
  exclusive<T>(runId: string, groups: readonly GroupJournalEntry[], change: () => Promise<T>): Promise<T>;
}

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

/**
 * A deployment's journal in its DynamoDB state table, where the workflow journals each run (one per partition, its
 * id the execution's name). Read with the manifests' digests required: the undo deletes outputs and restores old
 * versions on the lists' word, so a list nothing proves the journal wrote is refused, as vacuum refuses it.
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
  const client = dynamoDbClientFromEnv(io.env);
  const journal = new DynamoJournal({
    client,
    tableName: stateTable,
    manifests: { store: opened.store, prefix: journalManifestPrefix(opened.workRoot) },
    requireManifestDigest: true,
  });
  return {
    journal,
    entries: (runId) => journal.listRun(runId),
    // A state table is not listed by run (that would be a scan of every item), so only where it looked is said.
    notFound: async (runId) =>
      `run ${runId} is not in the journal of state table ${stateTable} (no item with pk RUN#${runId}). A deployed run's id is its Step Functions execution's name (one per partition); a run of lake-compactor compact is journaled in the location: drop --stack and --state-table; a run's items expire after the journal's retention, and then the run can no longer be undone`,
    settleHint: (partitions) =>
      `Wait for the run to end, or run lake-compactor settle ${uri} --partition ${partitions[0] || '<path>'} --table ${table} --state-table ${stateTable} first`,
    // The journal is not in the store, so the store has no time of a group's `done`: the format falls back to the
    // entry's own updatedAt, written after the outputs were.
    settledAt: async () => undefined,
    checkTable(runId, entries) {
      const others = [...new Set(entries.map((e) => e.table))].filter((t) => t !== table);
      if (others.length > 0) {
        throw new UsageError(
          `run ${runId} compacted table ${others.join(', ')} of the deployment, not ${table}: pass --table ${others[0]} and that table's location`,
        );
      }
      const outside = entries
        .flatMap((e) => e.inputs.map((i) => i.key))
        .find((key) => !key.startsWith(opened.prefix));
      if (outside !== undefined) {
        throw new UsageError(
          `run ${runId} compacted ${printable(outside)}, outside ${uri}: pass the location of table ${table}`,
        );
      }
    },
    /**
     * Holds each partition's lease, as a console settle run does, while the undo changes it: a workflow run that
     * planned the restored inputs with the run's outputs still there would compact both into one file (every row
     * twice). Refused (LeaseHeld, nothing changed) while a run holds it. The lease's id is the undo's own, the same
     * for every attempt, so an undo killed holding it takes it again as its holder when run again, and releases it.
     */
    async exclusive(runId, groups, change) {
      const leases = new DynamoPartitionLease({
        client,
        tableName: stateTable,
        tables: [],
        policies: new Map(),
      });
      const holder = `cli-undo-${runId}`;
      const held: JournalPartition[] = [];
      try {
        for (const partition of [...new Set(groups.map((g) => g.partition))].sort()) {
          const ref = { table, partition };
          await leases.acquire(ref, { runId: holder, now: io.clock.now() });
          held.push(ref);
        }
        return await change();
      } finally {
        for (const ref of held) await leases.release(ref, holder, {});
      }
    },
  };
}

/**
 * The run's committed groups, checked: the run exists in the journal, was compacted as `formatName`, and every
 * group is settled.
 * @throws UndoRefusedError otherwise; UsageError when the run was compacted as another format.
 */
async function committedGroups(
  source: RunJournalSource,
  uri: string,
  runId: string,
  formatName: TableFormatName,
): Promise<GroupJournalEntry[]> {
  const entries = await source.entries(runId);
  if (entries.length === 0) throw new UndoRefusedError(await source.notFound(runId));
  source.checkTable(runId, entries);
  const formats = new Set(entries.map((e) => e.format ?? DEFAULT_TABLE_FORMAT));
  const other = [...formats].find((f) => f !== formatName);
  if (other !== undefined) {
    throw new UsageError(
      `run ${runId} compacted ${uri} as format "${other}", not "${formatName}": pass --format ${other}`,
    );
  }
  const open = entries.filter((e) => !isSettled(e));
  if (open.length > 0) {
    throw new UndoRefusedError(
      `run ${runId} did not finish: ${plural(open.length, 'group')} (e.g. ${open[0]?.groupId}, ${open[0]?.state}) ${open.length === 1 ? 'is' : 'are'} still open. ${source.settleHint([...new Set(open.map((e) => e.partition))])}, then undo what it committed; nothing was changed`,
    );
  }
  return entries.filter((e) => e.state === 'done');
}

function printChanges(io: UndoIo, changes: readonly UndoChange[], dryRun: boolean): void {
  const verb = {
    restore: dryRun ? 'would restore' : 'restored',
    remove: dryRun ? 'would remove' : 'removed',
    commit: dryRun ? 'would commit' : 'committed',
  } as const;
  for (const c of changes) io.out(`${verb[c.action]} ${printable(c.key)}: ${c.detail}`);
}

function refusal(runId: string, result: Extract<RunUndoResult, { kind: 'refused' }>): UndoRefusedError {
  return new UndoRefusedError(`cannot undo run ${runId}: ${result.reason}`);
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
  const engine = hooks.engine ?? defaultParquetEngine;
  const table = options.table ?? tableNameOf(uri);
  const formatName = options.format ?? DEFAULT_TABLE_FORMAT;
  const format: TableFormat = commandFormat(
    opened,
    table,
    formatName,
    formatSettingsOf(uri, formatName, options),
    io,
  );
  const dryRun = options.dryRun === true;
  const where = options.stateTable === undefined ? '' : ` in state table ${options.stateTable}`;
  io.out(
    `undo ${uri}: run ${runId} of table ${table}${where}${dryRun ? ' (dry run: nothing is changed)' : ''}`,
  );
  const record = await readRecord(opened, runId);
  if (record?.state === 'done') {
    const reason = `it was undone at ${new Date(record.finishedAt ?? record.startedAt).toISOString()}`;
    io.out(`nothing to do: ${reason}`);
    return { kind: 'already-undone', reason };
  }
  const source =
    options.stateTable === undefined
      ? locationJournal(opened, uri, table)
      : stateTableJournal(opened, uri, table, options.stateTable, io);
  const groups = await committedGroups(source, uri, runId, formatName);
  if (groups.length === 0) {
    const reason = 'every group of the run was aborted, so it changed nothing';
    io.out(`nothing to do: ${reason}`);
    return { kind: 'already-undone', reason };
  }
  if (format.undo === undefined) {
    throw new UndoRefusedError(
      `lake-compactor cannot undo a run on a ${format.title} table; nothing was changed. Its compaction changed no row, so the table can stay as it is`,
    );
  }
  const deps = { store: opened.store, journal: source.journal, clock: io.clock, engine };
  const resuming = record?.state === 'started';
  const request = { runId, groups, resuming, settledAt: await source.settledAt(groups) };
  // Checked first with nothing written, so a refused undo changes no byte (not even its record).
  const checked = await format.undo.undoRun(deps, { ...request, dryRun: true });
  if (checked.kind === 'refused') throw refusal(runId, checked);
  if (checked.kind === 'already-undone') {
    io.out(`nothing to do: ${checked.reason}`);
    return { kind: 'already-undone', reason: checked.reason };
  }
  if (dryRun) {
    printChanges(io, checked.changes, true);
    for (const note of checked.notes) io.out(`note: ${note}`);
    io.out(`dry run: ${plural(checked.changes.length, 'change')} would be made; nothing was changed`);
    return { kind: 'planned', changes: checked.changes };
  }
  const undo = format.undo;
  const { result, changes } = await source.exclusive(runId, groups, async () => {
    const startedAt = io.clock.now();
    if (!resuming) await writeRecord(opened, { runId, state: 'started', startedAt });
    const result = await undo.undoRun(deps, { ...request, dryRun: false });
    if (result.kind === 'refused') {
      // Refused at the second look (a writer came in between): nothing was changed, so no undo is under way.
      if (!resuming) await opened.store.deleteMany([{ key: undoRecordKey(opened.workRoot, runId) }]);
      throw refusal(runId, result);
    }
    const changes = result.kind === 'undone' ? result.changes : [];
    await writeRecord(opened, {
      runId,
      state: 'done',
      startedAt: record?.startedAt ?? startedAt,
      finishedAt: io.clock.now(),
      changes,
    });
    return { result, changes };
  });
  printChanges(io, changes, false);
  if (result.kind === 'undone') for (const note of result.notes) io.out(`note: ${note}`);
  io.out(
    `run ${runId} undone: ${plural(groups.length, 'group')}, ${plural(changes.length, 'change')}. The run's journal entries stay (vacuum removes them after its retention); compacting again plans the restored files like any others`,
  );
  return { kind: 'undone', changes };
}
