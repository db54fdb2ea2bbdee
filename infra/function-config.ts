// What LakeCompactor's props become for its functions: the TABLES JSON (every table with its bucket) and the
// trigger variables, in exactly the shapes the functions parse (functions/core/table-config.ts, run-caps.ts).
import {
  DEFAULT_TABLE_FORMAT,
  FORMAT_SETTING_NAMES,
  type TableFormatSettings,
} from '../functions/core/formats/index.js';
import {
  DEFAULT_MAX_CONCURRENT_RUNS,
  DEFAULT_MAX_CONCURRENT_RUNS_PER_TABLE,
  type RunCaps,
} from '../functions/core/run-caps.js';
import type { LakeCompactorTable, LakeCompactorTriggerProps } from './lake-compactor-props.js';

/**
 * The TABLES JSON of the functions (see `tableConfigDelivery`); a table without `bucketName` gets `ownedBucketName`.
 * Each format's own settings (its log store, its catalog, its rewrite options, …) are passed as the table gives
 * them, whichever the registered formats declare: listing them here by name once left out a format's catalog
 * setting, so a table of a named catalog was committed by the functions through the path catalog.
 */
export function tablesJsonOf(tables: readonly LakeCompactorTable[], ownedBucketName: string): string {
  return JSON.stringify(
    tables.map((t) => ({
      name: t.name,
      bucket: t.bucketName ?? ownedBucketName,
      prefix: t.prefix,
      format: t.format ?? DEFAULT_TABLE_FORMAT,
      partitionColumns: t.partitionColumns ?? [],
      ...(t.dateColumn === undefined ? {} : { dateColumn: t.dateColumn }),
      ...(t.dateFormat === undefined ? {} : { dateFormat: t.dateFormat }),
      ...(t.targetFileSizeMB === undefined ? {} : { targetFileSizeMB: t.targetFileSizeMB }),
      ...(t.codec === undefined ? {} : { codec: t.codec }),
      ...(t.deltaEncoding === undefined ? {} : { deltaEncoding: t.deltaEncoding }),
      ...(t.readers === undefined ? {} : { readers: t.readers }),
      ...(t.statistics === undefined ? {} : { statistics: t.statistics }),
      ...(t.keepStatistics === undefined ? {} : { keepStatistics: t.keepStatistics }),
      ...(t.schemaFidelity === undefined ? {} : { schemaFidelity: t.schemaFidelity }),
      ...(t.encodeWorkers === undefined ? {} : { encodeWorkers: t.encodeWorkers }),
      ...(t.sortColumns === undefined ? {} : { sortColumns: t.sortColumns }),
      ...(t.zOrderColumns === undefined ? {} : { zOrderColumns: t.zOrderColumns }),
      ...(t.policy === undefined ? {} : { policy: t.policy }),
      ...formatSettingsOf(t),
    })),
  );
}

/** The format settings `table` gives, in the registry's order (a table has those of its own format only). */
function formatSettingsOf(table: TableFormatSettings): Partial<Record<string, unknown>> {
  const settings: Partial<Record<string, unknown>> = {};
  for (const name of FORMAT_SETTING_NAMES) {
    if (table[name] !== undefined) settings[name] = table[name];
  }
  return settings;
}

/** The variables telling the profiler and the sweep how to act on their verdicts. */
export interface TriggerEnvironment {
  /** `true`: record verdicts, start nothing (see `LakeCompactorTriggerProps.dryRun`). */
  readonly TRIGGERS_DRY_RUN: string;
  /** The run caps as JSON (see `parseRunCaps`). */
  readonly RUN_CAPS: string;
}

/** TRIGGERS_DRY_RUN and RUN_CAPS of the profiler and the sweep. */
export function triggerEnvironmentOf(triggers: LakeCompactorTriggerProps): TriggerEnvironment {
  return { TRIGGERS_DRY_RUN: triggers.dryRun === true ? 'true' : 'false', RUN_CAPS: runCapsJsonOf(triggers) };
}

/** The RUN_CAPS variable of the profiler and the sweep (see `parseRunCaps`). */
function runCapsJsonOf(triggers: LakeCompactorTriggerProps): string {
  const caps: RunCaps = {
    total: triggers.maxConcurrentRuns ?? DEFAULT_MAX_CONCURRENT_RUNS,
    perTable: triggers.maxConcurrentRunsPerTable ?? DEFAULT_MAX_CONCURRENT_RUNS_PER_TABLE,
    byTable: triggers.maxConcurrentRunsByTable ?? {},
  };
  return JSON.stringify(caps);
}
