// What `lake-compactor profile` and `plan` do, loaded by index.ts only when one of them runs (help, --version and
// usage errors never load it, nor the AWS SDK and Parquet engine it reaches).
import { openStore } from '../adapters/open-store.js';
import { StoreQuarantine } from '../adapters/store-quarantine.js';
import { refuseForeignAmong } from '../core/formats/foreign-tables.js';
import {
  checkFormatRunInput,
  DEFAULT_TABLE_FORMAT,
  type FormatRunInput,
  formatRunOptions,
  type TableFormatName,
  type TableFormatSettings,
} from '../core/formats/index.js';
import type { TableSnapshot } from '../core/formats/table-format.js';
import { type PlanSet, planPartitions } from '../core/planning.js';
import { matchQuarantine } from '../core/quarantine.js';
import { buildRunContext } from '../core/run-input.js';
import { type PartitionProfile, profilePartition } from '../core/stats.js';
import { binpackOptionsOf } from '../core/workflow/plan.js';
import type { Clock } from '../ports/clock.js';
import { tableNameOf } from './args.js';
import { checkRewriteChoices } from './compact-run.js';
import { requireParquetFiles } from './errors.js';
import { readingFormat } from './format-services.js';
import { type PlanningFlags, planningChoicesOf, schemaEvolutionOf } from './planning-options.js';
import { refuseEnclosingForeignTable } from './table-format-guard.js';

/** What profile and plan read of the CLI's io (CliIo, which index.ts declares and which must not be imported here). */
interface CommandIo {
  readonly clock: Clock;
  readonly env: Readonly<Record<string, string | undefined>>;
}

export interface ProfileRow extends PartitionProfile {
  readonly partition: string;
}

/**
 * Profiles every partition of the table at `uri` (listing only; no object is read).
 * @throws TableFormatNotSupportedError, before anything is listed, when `format` is not an implemented format.
 * @throws UnsupportedTableFormatError when the location is, lies in or holds another format's table.
 * @throws InvalidInputError when the location holds no Parquet file.
 */
export async function profileTable(
  uri: string,
  options: {
    targetFileSizeBytes: number;
    format?: TableFormatName;
    /**
     * The settings the table is read through, as its format's options spell them (`formatSettingsOf(…, 'read')`:
     * e.g. a table's catalog). @default none: the format's defaults
     */
    formatSettings?: TableFormatSettings;
  },
  io: CommandIo,
): Promise<{ inventory: TableSnapshot; rows: ProfileRow[] }> {
  const formatName = options.format ?? DEFAULT_TABLE_FORMAT;
  const opened = openStore(uri, { env: io.env });
  const format = readingFormat(opened, tableNameOf(uri), formatName, options.formatSettings, io);
  const { store, prefix } = opened;
  await refuseEnclosingForeignTable(opened, { includeLocation: false });
  const inventory = await format.snapshot(store, prefix, { now: io.clock.now() });
  refuseForeignAmong(store, prefix, inventory.foreignTables);
  requireParquetFiles(inventory, uri, 'profile');
  const rows = inventory.partitions.map((p) => ({
    partition: p.partition === '' ? '(root)' : p.partition,
    ...profilePartition(p.files, { targetFileSizeBytes: options.targetFileSizeBytes }),
  }));
  return { inventory, rows };
}

/**
 * Plans every partition of the table at `uri`, reading each candidate's footer. Files `compact` quarantined
 * (and that are unchanged since) are skipped as `compact` would skip them.
 * @throws TableFormatNotSupportedError, before anything is listed, when `format` is not an implemented format.
 * @throws UnsupportedTableFormatError when the location is, lies in or holds another format's table.
 * @throws InvalidInputError when the location holds no Parquet file.
 * @throws UsageError, before anything is listed, naming each planning flag out of range (as `compact` does).
 */
export async function planTable(
  uri: string,
  options: PlanningFlags & {
    table?: string;
    workRoot?: string;
    format?: TableFormatName;
    /** `rewrite_data_files` options, for a format whose run input takes them. */
    rewriteDataFiles?: FormatRunInput['rewriteDataFiles'];
    /** Plan only the partitions this filter passes, for a format whose run input takes one. */
    where?: string;
    /** The settings the table is read through (see {@link profileTable}). @default none */
    formatSettings?: TableFormatSettings;
  },
  io: CommandIo,
): Promise<PlanSet> {
  const formatName = options.format ?? DEFAULT_TABLE_FORMAT;
  const choices = planningChoicesOf(options);
  const evolution = schemaEvolutionOf(options, formatName);
  const where = checkRewriteChoices(options, formatName);
  const opened = openStore(uri, { env: io.env, workRoot: options.workRoot });
  const format = readingFormat(
    opened,
    options.table ?? tableNameOf(uri),
    formatName,
    options.formatSettings,
    io,
  );
  const { store, prefix } = opened;
  const table = options.table ?? tableNameOf(uri);
  // The run compact would start with these choices (the same defaults, resolved in the same place), so the plan
  // below is planned with exactly the options compact's plan step uses (binpackOptionsOf, formatRunOptions).
  const run = buildRunContext(
    {
      name: table,
      prefix: prefix.replace(/\/$/, ''),
      bucket: /^s3a?:\/\/([^/]+)/i.exec(uri.trim())?.[1] ?? 'local',
      format: formatName,
    },
    '',
    {
      ...choices,
      ...evolution,
      ...(options.rewriteDataFiles === undefined ? {} : { rewriteDataFiles: options.rewriteDataFiles }),
      ...(where === undefined ? {} : { where: where.text }),
      dryRun: true,
    },
    { executionName: 'plan', startedAt: io.clock.now() },
  );
  // The format reads its own run options back from the run context, as the plan step hands them: its listing (a
  // schema union by column name) and its planner.
  const runOptions = formatRunOptions(format.name, run);
  await refuseEnclosingForeignTable(opened, { includeLocation: false });
  const inventory = await format.snapshot(store, prefix, {
    now: io.clock.now(),
    readFooters: true,
    ...(Object.keys(runOptions).length === 0 ? {} : { formatOptions: runOptions }),
  });
  refuseForeignAmong(store, prefix, inventory.foreignTables);
  // As compact refuses them: options that cannot hold for this table (e.g. option sizes against its target).
  checkFormatRunInput(formatName, options, { properties: inventory.properties });
  requireParquetFiles(inventory, uri, 'plan');
  const quarantined = await new StoreQuarantine(store, { workRoot: opened.workRoot }).listTable(table);
  const inputs = format.planInputs(inventory, table).map((input) => {
    const { active } = matchQuarantine(
      quarantined.filter((q) => q.partition === input.partition),
      input.files,
    );
    return active.length === 0 ? input : { ...input, quarantined: active };
  });
  const binpack = binpackOptionsOf(run);
  const planPartition = format.planPartition;
  if (planPartition === undefined) return planPartitions(inputs, binpack);
  // A format with its own rules (rewrite_data_files) plans as `compact` would: the same options, where
  // --target-mb stands in for target-file-size-bytes and --min-input-files for min-input-files.
  if (where !== undefined)
    where.checkFields([...new Set(inventory.partitions.flatMap((p) => p.values.map((v) => v.name)))]);
  const valuesOf = new Map(inventory.partitions.map((p) => [p.partition, p.values]));
  const partitions = inputs.map((input) =>
    planPartition(input, {
      binpack,
      // The format reads its own run options back from `options`, as the plan step hands them (formatRunOptions).
      ...(Object.keys(runOptions).length === 0 ? {} : { options: runOptions }),
      ...(where === undefined ? {} : { where: where.text }),
      values: valuesOf.get(input.partition) ?? [],
      ...(inventory.properties === undefined ? {} : { properties: inventory.properties }),
    }),
  );
  return {
    partitions: partitions.sort((a, b) =>
      a.partition < b.partition ? -1 : a.partition > b.partition ? 1 : 0,
    ),
  };
}
