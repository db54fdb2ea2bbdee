// Merge-on-Read compaction as the Hudi format's table service (TableFormat.tableService): what `compact` runs on a
// Hudi table before it plans clustering, bound to the table's declared lock and trigger by the format's `forTable`.
// It reports in the CLI's words; a Copy-on-Write table, or one the trigger does not call due, is left as it is.
import type { TableServiceDeps, TableServiceOutcome } from '../table-format.js';
import { ABANDONED_AFTER_MS, holdsInstant, rollBackAbandonedClusterings } from './abandoned-plans.js';
import type { HudiCoordination } from './clustering-commit.js';
import { compactHudiMergeOnRead, DEFAULT_COMPACTION_DELTA_COMMITS } from './compaction-run.js';
import { readTableConfig } from './table-state.js';

/** The table service of a Hudi table coordinated by `coordination`, triggered after `deltaCommits` delta commits. */
export function hudiCompactionService(
  coordination: HudiCoordination,
  deltaCommits: number | undefined,
): (deps: TableServiceDeps, tableRoot: string) => Promise<TableServiceOutcome> {
  return async (deps, tableRoot) => {
    const root = tableRoot.replace(/\/+$/, '');
    // Our clustering plans whose run died and no journal names (the CLI settled its own before this): rolled back,
    // so this run plans their file groups again (abandoned-plans.ts).
    const config = await readTableConfig(deps.store, root || '(root)', root);
    const abandoned = await rollBackAbandonedClusterings({ ...deps, coordination }, root, undefined, config);
    const reclaimed = abandoned.map(
      (t) =>
        `Hudi clustering ${t}: a plan of ours whose run died, rolled back (its file groups are planned again)`,
    );
    // A Copy-on-Write table has no log files: nothing to say (its clustering is the plan's).
    if (config.type !== 'MERGE_ON_READ') return { changed: abandoned.length > 0, lines: reclaimed };
    const journal = deps.journal;
    const result = await compactHudiMergeOnRead(
      {
        ...deps,
        coordination,
        ...(journal === undefined
          ? {}
          : { holdsInstant: (run: string, instant: string) => holdsInstant(journal, run, instant) }),
      },
      root,
      {
        deltaCommits: deltaCommits ?? DEFAULT_COMPACTION_DELTA_COMMITS,
        ...(deps.runId === undefined ? {} : { runId: deps.runId }),
      },
    );
    if (result.kind === 'nothing')
      return {
        changed: abandoned.length > 0,
        lines: [...reclaimed, `Hudi Merge-on-Read compaction: nothing to compact (${result.reason})`],
      };
    if (result.kind === 'held')
      return {
        changed: abandoned.length > 0,
        lines: [
          ...reclaimed,
          `Hudi Merge-on-Read compaction ${result.instant}: left alone — a pending plan of ours held by run ${result.run}, which is still alive (${result.why}). That run finishes it; if it was killed, run compact again once its heartbeat is over ${ABANDONED_AFTER_MS / 60_000} min old (this run then takes the plan over), or settle that run if it was journaled (lake-compactor settle, or the deployment's sweep).`,
        ],
      };
    const rows = result.slices.reduce((n, s) => n + s.rows, 0);
    const deleted = result.slices.reduce((n, s) => n + s.deleted, 0);
    return {
      changed: true,
      lines: [
        ...reclaimed,
        `Hudi Merge-on-Read compaction ${result.instant}${result.resumed ? ' (a pending plan, finished)' : ''}: ${result.slices.length} file slice(s) → ${result.slices.length} new base file(s), ${rows} rows (${deleted} removed by log deletes), committed`,
        ...result.slices.map(
          (s) =>
            `  ${s.partition || '(root)'} ${s.fileId}: ${s.logFiles.length} log file(s) merged into ${s.output.slice(s.output.lastIndexOf('/') + 1)} (${s.baseRows} base rows, ${s.updated} updated, ${s.deleted} deleted, ${s.inserted} inserted)`,
        ),
        ...result.skipped.map((s) => `  left to Hudi: ${s.key} (${s.reason})`),
      ],
    };
  };
}
