// The profiler's dependencies over in-memory statistics, as the deployment builds them for log-based tables: each
// table's format bound to its settings, every start recorded.
import { MemoryStatsStore } from '../../functions/adapters/memory-stats-store.js';
import { formatForTable } from '../../functions/core/formats/index.js';
import type { Policy } from '../../functions/core/policy.js';
import type { TableLogDeps } from '../../functions/core/profiler/table-log.js';
import type { TableConfig } from '../../functions/core/table-config.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';
import { RecordingStarter } from './recording-starter.js';

/** A profiler over `store` (every table's bucket) for `tables`, with fresh statistics and a recording starter. */
export function profilerOf(
  tables: readonly TableConfig[],
  policies: ReadonlyMap<string, Policy>,
  store: ObjectStore,
): { stats: MemoryStatsStore; starter: RecordingStarter; deps: TableLogDeps } {
  const stats = new MemoryStatsStore();
  const starter = new RecordingStarter();
  const deps: TableLogDeps = {
    stats,
    starter,
    tables,
    policies,
    storeFor: () => store,
    formatFor: (table) => formatForTable(tables, table.name, {}),
  };
  return { stats, starter, deps };
}
