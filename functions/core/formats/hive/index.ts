// Hive-style Parquet (`format: "parquet"`) behind the TableFormat port: the listing is the table, the journal
// commit protocol (commit.ts) carries the safety, and vacuum clears what that protocol retired.
import type { TableFormat } from '../table-format.js';
import { commitGroup, rollbackGroup } from './commit.js';
import { hiveHelp } from './help.js';
import { inventoryTable, partitionListing, toPlanInputs } from './inventory.js';
import { hiveSettings } from './settings.js';
import { hiveUndo } from './undo.js';
import { hiveVacuumRules } from './vacuum.js';

/**
 * Partitions are `name=value` folders of Parquet files and nothing else says which files are live: the
 * snapshot is a listing (footers read for rows and schema), and a commit copies outputs in and retires inputs
 * by ETag, journaled so that a crash at any request rolls back or forward.
 */
export const hiveParquet = {
  name: 'parquet',
  title: 'Hive-style Parquet',
  ownsEverythingUnderRoot: false,
  snapshot: inventoryTable,
  planInputs: toPlanInputs,
  partitionFiles: partitionListing,
  commit: commitGroup,
  rollback: rollbackGroup,
  vacuum: hiveVacuumRules,
  // Its commit undoes a deleted input by rebuilding it from the outputs' rows (commit.ts).
  rebuildsRetiredInputs: true,
  // No table schema but the files': an operator's transformation rewrites them (lake-compactor rewrite).
  partitionRewrite: { kind: 'transform' },
  // No log or metadata of its own: a `_delta_log/` or Iceberg `metadata/` inside it is a foreign table's.
  isOwnMetadataWrite: () => false,
  // Every data-file event is the change itself: the profiler counts it as it comes (events.ts).
  changes: { kind: 'object-events' },
  // `lake-compactor undo`: the retired inputs back from what their retire mode kept, the outputs gone (undo.ts).
  undo: hiveUndo,
  // `schemaEvolution` (settings.ts): the opt-in union of a partition's schema populations (schema-union.ts).
  settings: hiveSettings,
  // What compact --help says of the retire modes above (help.ts).
  help: hiveHelp,
} as const satisfies TableFormat;
