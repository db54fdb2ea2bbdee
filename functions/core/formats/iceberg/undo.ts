// `lake-compactor undo` of a finished run on an Iceberg table: a rollback of the table's main branch to the snapshot
// the run started from, as Iceberg's own `rollback_to_snapshot` does it — one new metadata version, committed through
// the table's catalog, whose current snapshot (and `main` ref) is the run's parent; the run's snapshots stay in the
// history until expire_snapshots removes them. Why a rollback and not a new snapshot re-adding the inputs: a replace
// carries manifests, data sequence numbers and row lineage that a re-add would have to reproduce exactly, or hide
// rows from readers; a rollback changes one pointer to a snapshot every reader already read.
//
// Allowed only while the run's snapshots are the newest of the branch, one after another: a snapshot another writer
// committed after (or between) them would be dropped from the branch by the rollback — its rows lost to readers —
// so the undo is refused, nothing changed, and the compaction stays (it changed no row).

import type { GroupJournalEntry } from '../../../ports/journal.js';
import type { ObjectStore } from '../../../ports/object-store.js';
import type { RunUndo, RunUndoRequest, RunUndoResult, UndoChange } from '../table-format.js';
import { undoRefused } from '../table-format.js';
import { type IcebergCatalog, type LoadedTable, PathCatalog, readMetadataText } from './catalog.js';
import { icebergGroupState } from './group-commit.js';
import { jsonLong, parseJsonKeepingLongs, stringifyJsonKeepingLongs } from './json.js';
import { parseTableMetadata } from './metadata.js';
import { appendMetadataLog } from './metadata-log.js';

/** How many times the rollback re-reads and retries after another writer committed a version first. */
const MAX_ATTEMPTS = 5;

/** The rollback of a run: the run's snapshots, newest first, and the snapshot before them. */
interface RollbackPlan {
  readonly tableRoot: string;
  readonly committed: ReadonlySet<bigint>;
  /** The snapshot the branch returns to: the parent of the run's first snapshot. */
  readonly target: bigint;
}

/** The run's committed snapshots and where it started, from its groups' journal entries. */
function runSnapshots(
  groups: readonly GroupJournalEntry[],
): { tableRoot: string; committed: Set<bigint> } | { refused: string } {
  const states = groups.map((g) => icebergGroupState(g));
  const roots = new Set(states.map((s) => s.tableRoot));
  const [tableRoot] = roots;
  if (tableRoot === undefined || roots.size > 1) return { refused: 'the run names no single table root' };
  const committed = new Set(
    states.flatMap((s) => (s.committedSnapshotId === undefined ? [] : [BigInt(s.committedSnapshotId)])),
  );
  if (committed.size === 0) return { refused: 'the run committed no snapshot' };
  return { tableRoot, committed };
}

/**
 * Checks the table against the run: its current snapshot must be the run's last, and the branch must reach the run's
 * snapshots one after another down to their parent — else a rollback would drop another writer's snapshot.
 */
function plan(
  table: LoadedTable,
  tableRoot: string,
  committed: ReadonlySet<bigint>,
): RollbackPlan | RunUndoResult {
  const { metadata } = table;
  const byId = new Map(metadata.snapshots.map((s) => [s.snapshotId, s]));
  const current = metadata.refs.get('main')?.snapshotId ?? metadata.currentSnapshotId;
  const missing = [...committed].find((id) => !byId.has(id));
  if (missing !== undefined) {
    return undoRefused(
      `snapshot ${missing}, committed by the run, is no longer in the table's metadata (expire_snapshots removed it): the table's history before the run cannot be restored; nothing was changed`,
    );
  }
  // The parent of the run's earliest snapshot on the branch: walk the run's snapshots' parents.
  let target: bigint | undefined;
  for (const id of committed) {
    const parent = byId.get(id)?.parentSnapshotId;
    if (parent !== undefined && !committed.has(parent)) {
      if (target !== undefined && target !== parent) {
        return undoRefused(
          `the run's snapshots do not follow one another (another writer committed snapshot ${parent > target ? parent : target} between them): a rollback would drop it; nothing was changed, and the compaction can stay (it changed no row)`,
        );
      }
      target = parent;
    }
  }
  if (target === undefined) {
    return undoRefused(
      'the snapshot the run started from is not recorded (its first snapshot has no parent); nothing was changed',
    );
  }
  if (current === target) {
    return {
      kind: 'already-undone',
      reason: `the table's current snapshot is ${target}, the one the run started from`,
    };
  }
  // From the current snapshot down, every snapshot must be the run's until the target.
  let walked = current;
  let seen = 0;
  while (walked !== undefined && walked !== target) {
    if (!committed.has(walked)) {
      const later = byId.get(walked);
      return undoRefused(
        `snapshot ${walked}${later?.operation === undefined ? '' : ` (${later.operation})`} was committed after the run: rolling back to snapshot ${target} would drop it from the table. Nothing was changed; the compaction can stay (it changed no row), or undo the later change first`,
      );
    }
    seen += 1;
    walked = byId.get(walked)?.parentSnapshotId;
  }
  if (walked !== target || seen !== committed.size) {
    return undoRefused(
      `the table's current snapshot ${current} does not descend from the run's snapshots: the run was already rolled back or the branch was reset; nothing was changed`,
    );
  }
  return { tableRoot, committed, target };
}

/**
 * The next metadata: `base`'s JSON with every field kept, the current snapshot and `main` set to `target`, the
 * snapshot log and the metadata log appended, as Iceberg's SetSnapshotRef does.
 */
function rolledBackText(baseText: string, base: LoadedTable, target: bigint, now: number): string {
  const raw = parseJsonKeepingLongs(baseText) as Record<string, unknown>;
  const at = Math.max(now, base.metadata.lastUpdatedMs + 1);
  raw['last-updated-ms'] = at;
  raw['current-snapshot-id'] = jsonLong(target);
  const refs = (raw.refs as Record<string, Record<string, unknown>> | undefined) ?? {};
  raw.refs = { ...refs, main: { ...refs.main, 'snapshot-id': jsonLong(target), type: 'branch' } };
  raw['snapshot-log'] = [
    ...((raw['snapshot-log'] as unknown[] | undefined) ?? []),
    { 'timestamp-ms': at, 'snapshot-id': jsonLong(target) },
  ];
  appendMetadataLog(raw, base);
  const text = stringifyJsonKeepingLongs(raw);
  parseTableMetadata(text, base.name); // what we commit must be what we (and every reader) can read
  return text;
}

/** The Iceberg format's undo: a rollback to the run's parent snapshot through `catalogOf(store)`. */
export function icebergUndo(
  catalogOf: (store: ObjectStore) => IcebergCatalog = (store) => new PathCatalog(store),
): RunUndo {
  return {
    summary:
      'one new metadata version, as rollback_to_snapshot does: main goes back to the snapshot the run started from (refused when a writer committed a snapshot since: it would be dropped).',
    async undoRun(deps, request: RunUndoRequest): Promise<RunUndoResult> {
      const run = runSnapshots(request.groups);
      if ('refused' in run) return undoRefused(`${run.refused}; nothing was changed`);
      const catalog = catalogOf(deps.store);
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt += 1) {
        const table = await catalog.load(run.tableRoot);
        const checked = plan(table, run.tableRoot, run.committed);
        if (!('target' in checked)) return checked;
        const changes: UndoChange[] = [
          {
            action: 'commit',
            key: table.metadataKey,
            detail: `the next metadata version after this one: main rolled back to snapshot ${checked.target} (the run's ${checked.committed.size === 1 ? 'snapshot' : 'snapshots'} ${[...checked.committed].join(', ')} stay in the history until expire_snapshots)`,
          },
        ];
        const notes = [
          "one metadata version: readers see the table of before the run or of after it, never a mix; the run's output files stay on storage until expire_snapshots and remove_orphan_files remove them",
        ];
        if (request.dryRun) return { kind: 'undone', changes, notes };
        const text = rolledBackText(
          await readMetadataText(deps.store, table.metadataKey),
          table,
          checked.target,
          deps.clock.now(),
        );
        const outcome = await catalog.commit(table, text);
        if (outcome.outcome === 'committed') return { kind: 'undone', changes, notes };
      }
      return undoRefused(
        `lost the race for the next metadata version ${MAX_ATTEMPTS} times in a row: writers are committing faster than the undo can; nothing was changed, try again when the table is quieter`,
      );
    },
  };
}
