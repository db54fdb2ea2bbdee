// The options of `vacuum` as commander parses them, and the registered formats' own vacuum options: shared by the
// command's definition (vacuum.ts) and what it does (vacuum-run.ts), which must not import each other.
import type { FormatVacuumFlags, TableFormatName } from '../core/formats/index.js';
import { TABLE_FORMATS } from '../core/formats/index.js';
import type { MaintenanceCli } from '../core/formats/table-format.js';
import { MIN_RETENTION_HOURS } from '../core/maintenance/vacuum.js';
import type { FormatCliOptions } from './format-options.js';

/**
 * The options of `vacuum`: its own, every registered format's table-setting options (FormatCliOptions) and every
 * format's vacuum options (FormatVacuumFlags: e.g. `olderThanHours`, `retainLast`, `orphanOlderThanHours`).
 */
export interface VacuumCliOptions extends FormatCliOptions, FormatVacuumFlags {
  /** List what would go; delete nothing. */
  readonly dryRun?: boolean;
  /**
   * @default 168 ({@link MIN_RETENTION_HOURS}); a format may read it too (its `retentionHoursHelp` says how: a
   * table's own retention may be overridden by it).
   */
  readonly retentionHours?: number;
  /** The location's table format; its own maintenance runs on it, if it has one. @default 'parquet' */
  readonly format?: TableFormatName;
  /** Required for a retention below {@link MIN_RETENTION_HOURS}, as in the function's input. */
  readonly allowRetentionBelowMinimum?: boolean;
  /** @default 72 */
  readonly debrisAgeHours?: number;
  /** @default 24 */
  readonly abandonedAfterHours?: number;
  /** The DynamoDB state table holding the workflow's journal; else env LAKE_COMPACTOR_TABLE (S3 only). */
  readonly stateTable?: string;
  /** The table's name in the deployment (journal entries are matched by it). @default the URI's last segment */
  readonly table?: string;
  /** Delete without asking (needed when stdin is not a terminal). */
  readonly yes?: boolean;
  readonly json?: boolean;
  /** The work root to vacuum (a deployment's, beside one). @default `_lake-compactor/` */
  readonly workRoot?: string;
}

/** The registered formats' vacuum options and help (MaintenanceCli), in registration order. */
export function maintenanceClis(): MaintenanceCli<VacuumCliOptions>[] {
  return [...TABLE_FORMATS.values()].flatMap((f) =>
    f.maintenance?.cli === undefined ? [] : [f.maintenance.cli],
  );
}
