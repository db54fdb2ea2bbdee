// The runs a journal records, summed up from its group entries: what `history <folder>` and `report` show for runs
// the CLI made. Why from the entries: the CLI keeps no state table, so no run summary is stored anywhere; but every
// group of a run has an entry that says what it replaced (inputs with sizes), what it wrote (outputs with sizes and
// rows), when it was planned and when it settled — the run's real figures, not an estimate from a plan.
import { type GroupJournalEntry, isSettled, type RetireMode } from '../../ports/journal.js';
import { DEFAULT_TABLE_FORMAT } from '../formats/index.js';
import { estimateCost } from './cost.js';

/**
 * How far a journaled run got: every group `committed`; some committed and some `aborted` (`partly committed`);
 * every group aborted (`aborted`: the run changed nothing); or a group still `open` (the run was interrupted:
 * `settle` or the next compact ends it).
 */
export type JournalRunState = 'committed' | 'partly committed' | 'aborted' | 'open';

/** One run (one partition of a `compact`) as its journal entries record it. */
export interface JournalRun {
  readonly runId: string;
  /** The id the `compact` command printed (and `undo` takes): the run id without its `-p<index>-<hash>` suffix. */
  readonly commandRunId: string;
  readonly table: string;
  readonly partition: string;
  /** The table format the groups were planned with. */
  readonly format: string;
  readonly state: JournalRunState;
  readonly groups: number;
  readonly groupsDone: number;
  readonly groupsAborted: number;
  /** Files the committed groups replaced, and their bytes. */
  readonly inputFiles: number;
  readonly bytesBefore: number;
  /** Files the committed groups wrote in their place, their bytes and rows. */
  readonly outputFiles: number;
  readonly bytesAfter: number;
  readonly rows: number;
  /** When the run planned its groups (their entries' creation; epoch ms). */
  readonly startedAt: number;
  /** When its last group settled; absent while a group is open. */
  readonly finishedAt?: number;
  /** `finishedAt − startedAt`: planned to settled (the listing before planning is not journaled). */
  readonly durationMs?: number;
  /**
   * The plan step's estimate of what the same work costs on AWS at list prices, recomputed from the journal's
   * figures (see cost.ts): what a deployed run of it would cost, not a bill for this run.
   */
  readonly estimatedCostUsd: number;
  readonly retireMode: RetireMode;
  /** The first aborted group's reason. */
  readonly firstError?: string;
  /** Set when `lake-compactor undo` reverted the run (its record under `journal/undone/`). */
  readonly undoneAt?: number;
}

/** The `compact` command's run id a partition's run id was derived from (see childExecutionName). */
export function commandRunIdOf(runId: string): string {
  return runId.replace(/-p\d+-[0-9a-f]{8}$/, '');
}

/** Memory the CLI's compact plans with (compact-run.ts passes it to the plan step): the cost estimate's Lambda size. */
export const CLI_COMPACT_MEMORY_MB = 1024;

/**
 * Sums up the entries of runs, one {@link JournalRun} per run id, newest first (run ids begin with their start
 * time; ties by id). Pure.
 * @param undone when each run (or its command) was undone, by run id.
 */
export function journalRunsOf(
  entries: readonly GroupJournalEntry[],
  undone: ReadonlyMap<string, number> = new Map(),
): JournalRun[] {
  const byRun = new Map<string, GroupJournalEntry[]>();
  for (const entry of entries) {
    const list = byRun.get(entry.runId) ?? [];
    list.push(entry);
    byRun.set(entry.runId, list);
  }
  const runs = [...byRun].map(([runId, groups]) => summarize(runId, groups, undone));
  return runs.sort(
    (a, b) => b.startedAt - a.startedAt || (a.runId < b.runId ? 1 : a.runId > b.runId ? -1 : 0),
  );
}

function summarize(
  runId: string,
  groups: readonly GroupJournalEntry[],
  undone: ReadonlyMap<string, number>,
): JournalRun {
  const first = groups[0] as GroupJournalEntry;
  const done = groups.filter((g) => g.state === 'done');
  const aborted = groups.filter((g) => g.state === 'aborted');
  const open = groups.some((g) => !isSettled(g));
  const inputs = done.flatMap((g) => g.inputs);
  const outputs = done.flatMap((g) => g.outputs);
  const planned = groups.flatMap((g) => g.inputs);
  const startedAt = Math.min(...groups.map((g) => g.createdAt));
  const finishedAt = open ? undefined : Math.max(...groups.map((g) => g.updatedAt));
  const state: JournalRunState = open
    ? 'open'
    : aborted.length === groups.length
      ? 'aborted'
      : aborted.length > 0
        ? 'partly committed'
        : 'committed';
  const plannedRows = planned.reduce((n, i) => n + (i.rows ?? 0), 0);
  const cost = estimateCost({
    groups: groups.length,
    inputFiles: planned.length,
    inputBytes: planned.reduce((n, i) => n + i.size, 0),
    expectedOutputFiles: Math.max(outputs.length, done.length),
    retireMode: first.retireMode,
    compactMemoryMb: CLI_COMPACT_MEMORY_MB,
    ...(plannedRows > 0 ? { inputRows: plannedRows } : {}),
    partitionDepth: first.partition.split('/').filter((s) => s !== '').length + 1,
  });
  const commandRunId = commandRunIdOf(runId);
  const undoneAt = undone.get(runId) ?? undone.get(commandRunId);
  const firstError = aborted.find((g) => g.reason !== undefined)?.reason;
  return {
    runId,
    commandRunId,
    table: first.table,
    partition: first.partition,
    format: first.format ?? DEFAULT_TABLE_FORMAT,
    state,
    groups: groups.length,
    groupsDone: done.length,
    groupsAborted: aborted.length,
    inputFiles: inputs.length,
    bytesBefore: inputs.reduce((n, i) => n + i.size, 0),
    outputFiles: outputs.length,
    bytesAfter: outputs.reduce((n, o) => n + o.size, 0),
    rows: outputs.reduce((n, o) => n + o.rows, 0),
    startedAt,
    ...(finishedAt === undefined ? {} : { finishedAt, durationMs: Math.max(0, finishedAt - startedAt) }),
    estimatedCostUsd: cost.usd,
    retireMode: first.retireMode,
    ...(firstError === undefined ? {} : { firstError }),
    ...(undoneAt === undefined ? {} : { undoneAt }),
  };
}
