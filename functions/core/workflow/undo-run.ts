// Undo of a finished run, over the ports: the checks, the format's undo and the record that makes it resumable.
// `lake-compactor undo` (a CLI run or, with --stack, a deployed one) and the sweep function's `undo` input (the
// console's way) both run it; they differ only in where the run's journal entries are read (RunJournalSource) and in
// how the outcome is shown. So a run is undone by the same code whichever way an operator asks.
//
// Why it reads the run's own journal entries and keeps a record beside them: the entries say exactly what the run
// replaced (inputs with their ETags, versions or trash copies; outputs; the format's committed version), and the
// record (`journal/undone/<run>.json`) makes a second undo a no-op and lets an interrupted one finish.

import type { Clock } from '../../ports/clock.js';
import { type GroupJournalEntry, isSettled, type Journal } from '../../ports/journal.js';
import type { ObjectStore } from '../../ports/object-store.js';
import type { ParquetEngine } from '../../ports/parquet-engine.js';
import { CompactorError, ObjectNotFoundError, UsageError } from '../errors.js';
import { DEFAULT_TABLE_FORMAT } from '../formats/index.js';
import type { TableFormat, UndoChange } from '../formats/table-format.js';
import { plural } from '../words.js';
import { undoRecordKey } from './layout.js';

/**
 * The undo was refused: nothing was changed (the table moved on since the run, retention removed what the undo
 * needs, the run is not finished, or the format does not revert runs itself). The message says what to do instead.
 */
export class UndoRefusedError extends CompactorError {}

/** The record of an undo kept beside the journal (see {@link undoRecordKey}). */
export interface UndoRecord {
  readonly runId: string;
  readonly state: 'started' | 'done';
  readonly startedAt: number;
  readonly finishedAt?: number;
  readonly changes?: readonly UndoChange[];
}

/**
 * The undo record of `runId` under `workRoot`, or undefined when there is none. A record that is not JSON is an
 * error here (the undo must not guess whether it started); `history` reads records leniently itself.
 */
export async function readUndoRecord(
  store: ObjectStore,
  workRoot: string,
  runId: string,
): Promise<UndoRecord | undefined> {
  try {
    const bytes = await store.get(undoRecordKey(workRoot, runId));
    return JSON.parse(new TextDecoder().decode(bytes)) as UndoRecord;
  } catch (err) {
    if (err instanceof ObjectNotFoundError) return undefined;
    throw err;
  }
}

async function writeUndoRecord(store: ObjectStore, workRoot: string, record: UndoRecord): Promise<void> {
  await store.put(undoRecordKey(workRoot, record.runId), JSON.stringify(record, null, 2), {
    contentType: 'application/json',
  });
}

/**
 * Where a run's journal entries are read: the location's own journal (a run the CLI made) or a deployment's state
 * table (a run the deployed workflow made). Everything after reading them — the checks, the format's undo, the
 * record — is the same for both, so a deployed run is undone by exactly the code that undoes a CLI run.
 */
export interface RunJournalSource {
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
  /** Refuses entries that are not of the table undone (a run id of another table of the deployment). */
  checkTable(runId: string, entries: readonly GroupJournalEntry[]): void;
  /** Runs the undo's changes to the run's partitions with nothing else compacting them. */
  exclusive<T>(runId: string, groups: readonly GroupJournalEntry[], change: () => Promise<T>): Promise<T>;
}

/** What {@link undoRun} works with. */
export interface UndoRunDeps {
  /** The store of the table's objects and of the work root the undo record is kept in. */
  readonly store: ObjectStore;
  readonly workRoot: string;
  /** The table's format, bound to its settings as compact used them. */
  readonly format: TableFormat;
  readonly source: RunJournalSource;
  readonly clock: Clock;
  /** Re-creates a `delete-rebuild` group's inputs (see CommitDeps.engine). */
  readonly engine: Pick<ParquetEngine, 'rewriteGroup' | 'verifyOutputs'>;
}

/** What an undo came to. */
export type UndoOutcome =
  | { readonly kind: 'already-undone'; readonly reason: string }
  /** A dry run: what would change. */
  | { readonly kind: 'planned'; readonly changes: readonly UndoChange[]; readonly notes: readonly string[] }
  | {
      readonly kind: 'undone';
      readonly groups: number;
      readonly changes: readonly UndoChange[];
      readonly notes: readonly string[];
    };

/**
 * The run's committed groups, checked: the run exists in the journal, was compacted as the format, and every group
 * is settled.
 * @throws UndoRefusedError otherwise; UsageError when the run was compacted as another format.
 */
async function committedGroups(
  source: RunJournalSource,
  location: string,
  runId: string,
  formatName: string,
): Promise<GroupJournalEntry[]> {
  const entries = await source.entries(runId);
  if (entries.length === 0) throw new UndoRefusedError(await source.notFound(runId));
  source.checkTable(runId, entries);
  const formats = new Set(entries.map((e) => e.format ?? DEFAULT_TABLE_FORMAT));
  const other = [...formats].find((f) => f !== formatName);
  if (other !== undefined) {
    throw new UsageError(
      `run ${runId} compacted ${location} as format "${other}", not "${formatName}": pass --format ${other}`,
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

/**
 * Undoes `runId` of the table at `location` (as named in messages), or says what it would change (`dryRun`).
 * Checked first with nothing written, so a refused undo changes no byte (not even its record); then, with the run's
 * partitions held (RunJournalSource.exclusive), the record says `started`, the format's undo runs and the record
 * says `done`. An undo that died between is resumed by the same request (the record's `started`).
 * @throws UndoRefusedError when refused (nothing was changed); UsageError when the run is of another format.
 */
export async function undoRun(
  deps: UndoRunDeps,
  request: { readonly location: string; readonly runId: string; readonly dryRun: boolean },
): Promise<UndoOutcome> {
  const { store, workRoot, format, source, clock, engine } = deps;
  const { runId, dryRun } = request;
  const record = await readUndoRecord(store, workRoot, runId);
  if (record?.state === 'done') {
    const reason = `it was undone at ${new Date(record.finishedAt ?? record.startedAt).toISOString()}`;
    return { kind: 'already-undone', reason };
  }
  const groups = await committedGroups(source, request.location, runId, format.name);
  if (groups.length === 0) {
    return { kind: 'already-undone', reason: 'every group of the run was aborted, so it changed nothing' };
  }
  if (format.undo === undefined) {
    throw new UndoRefusedError(
      `lake-compactor cannot undo a run on a ${format.title} table; nothing was changed. Its compaction changed no row, so the table can stay as it is`,
    );
  }
  const commitDeps = { store, journal: source.journal, clock, engine };
  const resuming = record?.state === 'started';
  const undoRequest = { runId, groups, resuming, settledAt: await source.settledAt(groups) };
  const checked = await format.undo.undoRun(commitDeps, { ...undoRequest, dryRun: true });
  if (checked.kind === 'refused') throw refusal(runId, checked.reason);
  if (checked.kind === 'already-undone') return { kind: 'already-undone', reason: checked.reason };
  if (dryRun) return { kind: 'planned', changes: checked.changes, notes: checked.notes };
  const undo = format.undo;
  return source.exclusive(runId, groups, async () => {
    const startedAt = clock.now();
    if (!resuming) await writeUndoRecord(store, workRoot, { runId, state: 'started', startedAt });
    const result = await undo.undoRun(commitDeps, { ...undoRequest, dryRun: false });
    if (result.kind === 'refused') {
      // Refused at the second look (a writer came in between): nothing was changed, so no undo is under way.
      if (!resuming) await store.deleteMany([{ key: undoRecordKey(workRoot, runId) }]);
      throw refusal(runId, result.reason);
    }
    const changes = result.kind === 'undone' ? result.changes : [];
    await writeUndoRecord(store, workRoot, {
      runId,
      state: 'done',
      startedAt: record?.startedAt ?? startedAt,
      finishedAt: clock.now(),
      changes,
    });
    return {
      kind: 'undone',
      groups: groups.length,
      changes,
      notes: result.kind === 'undone' ? result.notes : [],
    } as const;
  });
}

function refusal(runId: string, reason: string): UndoRefusedError {
  return new UndoRefusedError(`cannot undo run ${runId}: ${reason}`);
}

/**
 * The lease holder of an undo of `runId` on a deployment's partitions: the undo's own id, the same for every attempt
 * and whichever way it was asked (CLI or console), so an undo killed holding the lease takes it again as its holder
 * when run again, and releases it.
 */
export function undoLeaseHolder(runId: string): string {
  return `undo-${runId}`;
}
