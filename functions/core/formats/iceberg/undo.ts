// `lake-compactor undo` of a finished run on an Iceberg table: refused, with the rollback to run instead. Why not
// here: an Iceberg revert is a new snapshot (or a rollback) committed through the table's catalog, with the
// manifests, sequence numbers and row lineage a replace carries; done half right it would hide rows from every
// reader. The table's own engines do it safely, and the journal knows which snapshots to name.
import type { GroupJournalEntry } from '../../../ports/journal.js';
import type { RunUndo, RunUndoRequest, RunUndoResult } from '../table-format.js';
import { undoRefused } from '../table-format.js';
import { icebergGroupState } from './group-commit.js';

/** The refusal, naming the snapshots the run committed and the one it started from. */
export function icebergUndoRefusal(runId: string, groups: readonly GroupJournalEntry[]): string {
  const states = groups.map((g) => icebergGroupState(g));
  const committed = states.flatMap((s) =>
    s.committedSnapshotId === undefined ? [] : [s.committedSnapshotId],
  );
  const start = states[0]?.snapshotId ?? '(unknown)';
  return (
    `lake-compactor does not revert an Iceberg run itself; nothing was changed. Run ${runId} committed ` +
    `${committed.length === 0 ? 'no snapshot' : `snapshot(s) ${committed.join(', ')}`}, planned at snapshot ${start}. ` +
    `If no other snapshot was committed since, roll back in your engine, e.g. Spark: ` +
    `CALL <catalog>.system.rollback_to_snapshot('<db>.<table>', ${start}) (check the parent of its first snapshot ` +
    `in <table>.snapshots first); its files stay until expire_snapshots removes them. If others were committed ` +
    `since, a rollback would drop them too: leave the compaction in place (it changed no row)`
  );
}

async function undoRun(_deps: unknown, request: RunUndoRequest): Promise<RunUndoResult> {
  return undoRefused(icebergUndoRefusal(request.runId, request.groups));
}

/** The Iceberg format's undo: a refusal saying which rollback to run (see the file's head). */
export const icebergUndo: RunUndo = { undoRun };
