// Merge-on-Read compaction as the Hudi format's table service (TableFormat.tableService): what `compact` runs on a
// Hudi table before it plans clustering, bound to the table's declared lock and trigger by the format's `forTable`.
// It reports in the CLI's words; a Copy-on-Write table, or one the trigger does not call due, is left as it is.
import type { TableServiceDeps, TableServiceOutcome } from '../table-format.js';
import { rollBackAbandonedClusterings } from './abandoned-plans.js';
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
    const result = await compactHudiMergeOnRead({ ...deps, coordination }, root, {
      deltaCommits: deltaCommits ?? DEFAULT_COMPACTION_DELTA_COMMITS,
      ...(deps.runId === undefined ? {} : { runId: deps.runId }),
    });
    if (result.kind === 'nothing')
      return {
        changed: abandoned.length > 0,
        lines: [...reclaimed, `Hudi Merge-on-Read compaction: nothing to compact (${result.reason})`],
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
