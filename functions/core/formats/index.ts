// The registry of implemented table formats — the single source of which formats exist: the config schema,
// the construct's props, the CLI and every refusal read it, so an unimplemented format is refused everywhere.
//
// Adding a format: a folder under `formats/` implementing TableFormat, and one line in REGISTERED.
import { z } from 'zod';
import { CompactorError } from '../errors.js';
import type { Reader } from '../readers.js';
import { deltaLake } from './delta/format.js';
import { FORMAT_NAMES, isForeignFormat } from './foreign-tables.js';
import type {
  FormatSettings,
  PartitionFilter,
  RunKnobs,
  SettingsIssue,
  SettingsOf,
} from './format-settings.js';
import { hiveParquet } from './hive/index.js';
import { hudiTable } from './hudi/format.js';
import { icebergTable } from './iceberg/format.js';
import type {
  MaintenanceCli,
  MaintenanceOutcomeEntry,
  MaintenancePlanEntry,
  MaintenanceTablePlan,
  TableFormat,
  TableMaintenance,
} from './table-format.js';

/** Every implemented format, one registration line each. */
const REGISTERED = [
  hiveParquet, // format: "parquet"
  deltaLake, // format: "delta"
  icebergTable, // format: "iceberg"
  hudiTable, // format: "hudi"
] as const satisfies readonly TableFormat[];

/** The name of an implemented format, as the table config and the construct's props spell it. */
export type TableFormatName = (typeof REGISTERED)[number]['name'];

/** The implemented formats by name. */
export const TABLE_FORMATS: ReadonlyMap<string, TableFormat> = new Map(REGISTERED.map((f) => [f.name, f]));

/** Names of the implemented formats, in registration order. */
export const TABLE_FORMAT_NAMES: readonly TableFormatName[] = REGISTERED.map((f) => f.name);

/** A table's format when its config names none. */
export const DEFAULT_TABLE_FORMAT: TableFormatName = 'parquet';

/** True when `name` is an implemented format. */
export function isTableFormatName(name: unknown): name is TableFormatName {
  return typeof name === 'string' && TABLE_FORMATS.has(name);
}

/**
 * THE message refusing a format that is not implemented (or not a format at all), wherever it is met: at synth,
 * at config load, in the profiler, the sweep, the CLI and the validate step. It names what is supported, from
 * the registry, and what to do; a format recognised by its metadata but not implemented (Hudi) is named as such.
 */
export function unsupportedFormatMessage(format: unknown): string {
  const supported = REGISTERED.map((f) => `"${f.name}" (${f.title})`).join(', ');
  if (isForeignFormat(format) && !TABLE_FORMATS.has(format)) {
    // Recognised by its own metadata (and refused wherever met), but not implemented: say so, not "unknown".
    return `table format ${JSON.stringify(format)} (${FORMAT_NAMES[format]}) is recognised but not supported yet: lake-compactor refuses ${FORMAT_NAMES[format]} tables wherever it meets them and compacts only ${supported}. Remove the table from the configuration and leave it to ${FORMAT_NAMES[format]}'s own table services; nothing of it is compacted, vacuumed or tiered until then`;
  }
  return `table format ${JSON.stringify(format)} is not supported: lake-compactor supports ${supported} only. Remove the table from the configuration, or set its format to one of these if that is what it is; nothing of it is compacted, vacuumed or tiered until then`;
}

/**
 * A table format that is not implemented was asked for (an operator's CLI option, or a table list that did not
 * pass the config schema). Never retried: only a configuration change fixes it.
 */
export class TableFormatNotSupportedError extends CompactorError {
  constructor(readonly format: unknown) {
    super(unsupportedFormatMessage(format));
  }
}

/**
 * The implemented format named `name`.
 * @throws TableFormatNotSupportedError with {@link unsupportedFormatMessage} otherwise.
 */
export function tableFormat(name: unknown): TableFormat {
  const format = typeof name === 'string' ? TABLE_FORMATS.get(name) : undefined;
  if (format === undefined) throw new TableFormatNotSupportedError(name);
  return format;
}

/**
 * The format of the configured table named `table`. A table no longer configured (removed while one of its runs
 * was in flight) gets the default format, so that run still settles through the protocol it started with.
 * @throws TableFormatNotSupportedError when the table's format is not implemented.
 */
export function formatOfTable(
  tables: readonly { readonly name: string; readonly format: TableFormatName }[],
  table: string,
): TableFormat {
  return tableFormat(tables.find((t) => t.name === table)?.format ?? DEFAULT_TABLE_FORMAT);
}

/** Which fragment of a format's settings (see format-settings.ts). */
export type Fragment = 'table' | 'runInput' | 'runContext';
/** The fields a registered format declares in one fragment of its settings, none for a format without. */
type FieldsOf<F, Part extends Fragment> = F extends {
  readonly settings: FormatSettings<infer Fields, infer RunInput, infer RunContext>;
}
  ? Part extends 'table'
    ? Fields
    : Part extends 'runInput'
      ? RunInput
      : RunContext
  : Record<never, never>;
/** The fields of one fragment of every format of a registration list, merged. */
type MergedFields<T extends readonly unknown[], Part extends Fragment> = T extends readonly [
  infer Head,
  ...infer Rest,
]
  ? FieldsOf<Head, Part> & MergedFields<Rest, Part>
  : Record<never, never>;
/** The services a registered format's `forTable` takes (see `FormatServices`), none for a format without. */
type ServicesOf<F> = F extends { readonly forTable: (settings: never, services: infer S) => unknown }
  ? S
  : unknown;
/** The services of every format of a registration list, merged. */
type MergedServices<T extends readonly unknown[]> = T extends readonly [infer Head, ...infer Rest]
  ? ServicesOf<Head> & MergedServices<Rest>
  : unknown;

/**
 * One fragment of the settings of `formats`, merged in their order: what the registry spreads into the table
 * config, the run input and the run context. Exported so a test can compose a list with a format of its own.
 */
export function mergeFormatFields(formats: readonly TableFormat[], part: Fragment): z.ZodRawShape {
  const fragmentOf = (settings: FormatSettings | undefined) =>
    part === 'table'
      ? settings?.tableFields
      : part === 'runInput'
        ? settings?.run?.input
        : settings?.run?.context;
  return Object.assign({}, ...formats.map((f) => fragmentOf(f.settings) ?? {}));
}

/**
 * The I/O every registered format may need to honour a table's settings: the union of what each format's
 * `forTable` asks for (Delta: its DynamoDB log stores; Iceberg: its catalog clients), composed here so that the
 * port and the composition roots name no format's services type.
 */
export type FormatServices = MergedServices<typeof REGISTERED>;

/** How commander parses a registered format's table-setting options (`FormatSettings.cli`), none for a format without. */
type CliFlagsOf<F> = F extends {
  readonly settings: FormatSettings<infer _Fields, infer _RunInput, infer _RunContext, infer Flags>;
}
  ? Flags
  : unknown;
/** How commander parses a registered format's `vacuum` options (`TableMaintenance.cli`), none for a format without. */
type VacuumFlagsOf<F> = F extends { readonly maintenance: { readonly cli: MaintenanceCli<infer Flags> } }
  ? Flags
  : unknown;
/** One kind of flags of every format of a registration list, merged. */
type MergedFlags<T extends readonly unknown[], Kind extends 'settings' | 'vacuum'> = T extends readonly [
  infer Head,
  ...infer Rest,
]
  ? (Kind extends 'settings' ? CliFlagsOf<Head> : VacuumFlagsOf<Head>) & MergedFlags<Rest, Kind>
  : unknown;

/**
 * The table-setting options of every registered format, as commander parses them: what a CLI command that takes
 * them (cli/format-options.ts) declares its options as, composed here so the CLI names no format's flags.
 */
export type FormatCliFlags = MergedFlags<typeof REGISTERED, 'settings'>;

/** The `vacuum` options of every registered format's maintenance, as commander parses them (see FormatCliFlags). */
export type FormatVacuumFlags = MergedFlags<typeof REGISTERED, 'vacuum'>;

/** Every format-owned table-config field, by the name users write it, with its schema (optional). */
export type FormatTableFields = MergedFields<typeof REGISTERED, 'table'>;

/**
 * The table-config fields of every registered format, merged in registration order: the table config and the
 * construct's props spread them into their table schema, so a new format's setting is declared in its folder only.
 */
export const FORMAT_TABLE_FIELDS = mergeFormatFields(REGISTERED, 'table') as FormatTableFields;

/** Every format-owned field of the run input (run-input.ts), by name, with its schema (optional). */
export type FormatRunInputFields = MergedFields<typeof REGISTERED, 'runInput'>;
/** Every format-owned field of the run context, by name, with its schema (optional). */
export type FormatRunContextFields = MergedFields<typeof REGISTERED, 'runContext'>;

/** The run-input fields of every registered format, merged: run-input.ts spreads them into the request's schema. */
export const FORMAT_RUN_INPUT_FIELDS = mergeFormatFields(REGISTERED, 'runInput') as FormatRunInputFields;

/** The run-context fields of every registered format, merged: run-input.ts spreads them into the context's schema. */
export const FORMAT_RUN_CONTEXT_FIELDS = mergeFormatFields(
  REGISTERED,
  'runContext',
) as FormatRunContextFields;

/** The names of the format-owned run-input fields, in registration order. */
export const FORMAT_RUN_INPUT_NAMES = Object.keys(FORMAT_RUN_INPUT_FIELDS) as (keyof FormatRunInputFields &
  string)[];

/** Whether a table of `format` takes the run-input field `field` (false for a format that is not implemented). */
export function formatTakesRunInput(format: unknown, field: string): boolean {
  const run = typeof format === 'string' ? TABLE_FORMATS.get(format)?.settings?.run : undefined;
  return run !== undefined && Object.hasOwn(run.input, field);
}

/** The registered formats whose run input declares `field`, for words that name who takes it. */
export function formatsTakingRunInput(field: string): readonly TableFormat[] {
  const formats: readonly TableFormat[] = REGISTERED;
  return formats.filter((f) => f.settings?.run !== undefined && Object.hasOwn(f.settings.run.input, field));
}

/** Why a run of `table` may not be given the run-input field `field`, or undefined when its format takes it. */
export function misplacedRunInputMessage(
  table: { readonly name: string; readonly format: unknown },
  field: string,
): string | undefined {
  if (formatTakesRunInput(table.format, field)) return undefined;
  const whose = formatsTakingRunInput(field)
    .map((f) => `${f.title} tables (format "${f.name}")`)
    .join(' and ');
  return `${field}: applies to ${whose}, and table "${table.name}" is "${String(table.format)}"; remove it`;
}

/**
 * The run context's format-owned values for a run of `table` (its format's `run.resolve`: the request's choices
 * over the table's settings); none for a format without run settings.
 */
export function formatRunContext(
  format: string,
  table: TableFormatSettings & {
    readonly targetFileSizeMB?: number | undefined;
    readonly readers?: readonly Reader[] | undefined;
  },
  request: Readonly<Record<string, unknown>> & RunKnobs,
): Record<string, unknown> {
  const registered = TABLE_FORMATS.get(format);
  const run = registered?.settings?.run;
  if (registered === undefined || run === undefined) return {};
  const own = Object.fromEntries(Object.keys(run.input).map((name) => [name, request[name]]));
  return run.resolve(
    {
      ...formatSettingsOf(registered, table),
      targetFileSizeMB: table.targetFileSizeMB,
      readers: table.readers,
    },
    {
      ...own,
      targetFileSizeMB: request.targetFileSizeMB,
      minInputFiles: request.minInputFiles,
      readers: request.readers,
    },
  );
}

/** A run's format-owned inputs, as parsed: every registered format's run-input fields, each optional. */
export type FormatRunInput = SettingsOf<FormatRunInputFields>;

/**
 * The run input's `where` partition filter as the format named `format` reads it, or undefined for a format whose
 * run input takes none (whether it may be given at all is {@link misplacedRunInputMessage}'s to say).
 * @throws InvalidInputError when the filter does not parse.
 */
export function formatPartitionFilter(format: unknown, text: string): PartitionFilter | undefined {
  const run = typeof format === 'string' ? TABLE_FORMATS.get(format)?.settings?.run : undefined;
  return run?.partitionFilter?.(text);
}

/**
 * Refuses the format-owned inputs of a run of a `format` table that cannot hold for the table as its snapshot shows
 * it (the format's `checkAgainstTable`); nothing for a format without such rules.
 * @throws InvalidInputError saying which input to change.
 */
export function checkFormatRunInput(
  format: unknown,
  request: object,
  table: { readonly properties?: Readonly<Record<string, string>> | undefined },
): void {
  const run = typeof format === 'string' ? TABLE_FORMATS.get(format)?.settings?.run : undefined;
  if (run?.checkAgainstTable === undefined) return;
  const values = request as Readonly<Record<string, unknown>>;
  // Only the format's own inputs, whatever else the request carries (a CLI command's other options).
  const own = Object.fromEntries(Object.keys(run.input).map((name) => [name, values[name]]));
  run.checkAgainstTable(own, table);
}

/**
 * The run-input field `field` from the command line's repeated `name=value` pairs, parsed by the format that
 * declares it so (`fromPairs`).
 * @throws InvalidInputError listing every problem of the pairs.
 */
export function formatRunInputFromPairs<F extends keyof FormatRunInput & string>(
  field: F,
  pairs: readonly string[],
): FormatRunInput[F] {
  const formats: readonly TableFormat[] = REGISTERED;
  for (const format of formats) {
    const parse = (
      format.settings?.run?.fromPairs as
        | Readonly<Record<string, ((pairs: readonly string[]) => unknown) | undefined>>
        | undefined
    )?.[field];
    if (parse !== undefined) return parse(pairs) as FormatRunInput[F];
  }
  throw new TypeError(`No registered format reads the run input ${field} from name=value pairs`);
}

/**
 * The run context's values the format named `format` reads back in its plan (`FormatPlanRequest.options`): its own
 * context fields that are set, nothing of another format's.
 */
export function formatRunOptions(format: string, run: object): Record<string, unknown> {
  const fields = TABLE_FORMATS.get(format)?.settings?.run?.context ?? {};
  const values = run as Readonly<Record<string, unknown>>;
  return Object.fromEntries(
    Object.keys(fields)
      .filter((name) => values[name] !== undefined)
      .map((name) => [name, values[name]]),
  );
}

/** A table's format-owned settings, as parsed: every registered format's fields, each optional. */
export type TableFormatSettings = SettingsOf<FormatTableFields>;

/** The name of a format-owned table setting. */
export type TableFormatSettingName = keyof FormatTableFields & string;

/** The names of the format-owned table settings, in registration order. */
export const FORMAT_SETTING_NAMES = Object.keys(FORMAT_TABLE_FIELDS) as TableFormatSettingName[];

/** Whether `format` declares the table-config field `setting`. */
function ownsSetting(format: TableFormat, setting: string): boolean {
  return format.settings !== undefined && Object.hasOwn(format.settings.tableFields, setting);
}

/**
 * Why a table of `format` may not carry `setting`, or undefined when its format reads it. A setting of another
 * format would be silently ignored (a `deltaLogStore` on a Hive table coordinates nothing), so it is refused.
 */
export function misplacedSettingMessage(format: string, setting: string): string | undefined {
  const formats: readonly TableFormat[] = REGISTERED;
  if (formats.some((f) => f.name === format && ownsSetting(f, setting))) return undefined;
  const owners = formats.filter((f) => ownsSetting(f, setting));
  const whose = owners.map((f) => `${f.title} tables (format "${f.name}")`).join(' and ');
  const suggestion =
    owners[0] === undefined ? '' : `, or set format to "${owners[0].name}" if that is what the table is`;
  return `${setting} is a setting of ${whose}, and this table's format is "${format}": remove it${suggestion}`;
}

/**
 * The problems of one table's format-owned settings: any setting of another format (refused, see
 * {@link misplacedSettingMessage}), then what the table's own format requires of its settings (`tableIssues`).
 */
export function formatSettingsIssues(
  table: TableFormatSettings & { readonly format?: string | undefined },
  format: string = table.format ?? DEFAULT_TABLE_FORMAT,
): SettingsIssue[] {
  const issues: SettingsIssue[] = [];
  for (const setting of FORMAT_SETTING_NAMES) {
    if (table[setting] === undefined) continue;
    const message = misplacedSettingMessage(format, setting);
    if (message !== undefined) issues.push({ path: setting, message });
  }
  const own = TABLE_FORMATS.get(format)?.settings;
  if (own?.tableIssues !== undefined) issues.push(...own.tableIssues(settingsOf(own, table)));
  return issues;
}

/** The values of `settings`' fields in `table`: the format's own settings value, nothing of any other format. */
function settingsOf(settings: FormatSettings | undefined, table: object): Record<string, unknown> {
  if (settings === undefined) return {};
  const values = table as Readonly<Record<string, unknown>>;
  return Object.fromEntries(Object.keys(settings.tableFields).map((name) => [name, values[name]]));
}

/**
 * The settings value `format` reads of `table` (its `forTable` and `triggerRule` take it): exactly the fields the
 * format declares, so a format never sees another's.
 */
export function formatSettingsOf(format: TableFormat, table: object): Record<string, unknown> {
  return settingsOf(format.settings, table);
}

/** A configured table as far as choosing its format goes: its name, format and format-specific settings. */
export type FormatOfTable = { readonly name: string; readonly format: TableFormatName } & TableFormatSettings;

/**
 * The format the steps of `table` commit and settle through: the registered format (`format`, the one its run
 * started with, else the configured one), bound to the table's settings with `services` (see
 * `TableFormat.forTable`). Settings apply only while the table is still configured with that format; a table no
 * longer configured gets the format's defaults, as {@link formatOfTable}.
 * @throws TableFormatNotSupportedError when the format is not implemented.
 * @throws InvalidInputError when a setting needs a service `services` lacks.
 */
export function formatForTable(
  tables: readonly FormatOfTable[],
  table: string,
  services: FormatServices,
  format?: TableFormatName,
): TableFormat {
  const configured = tables.find((t) => t.name === table);
  const registered = tableFormat(format ?? configured?.format ?? DEFAULT_TABLE_FORMAT);
  if (registered.forTable === undefined) return registered;
  const settings =
    configured === undefined || configured.format !== registered.name
      ? {}
      : formatSettingsOf(registered, configured);
  return registered.forTable(settings, services);
}

/** A configured table whose format is not implemented, with THE message refusing it. */
export interface RefusedTable {
  readonly name: string;
  readonly format: unknown;
  readonly message: string;
}

/**
 * The tables of a list whose format is not implemented. The config schema refuses them first; a long-running
 * function (profiler, sweep) checks again, so a list that reached it without passing the schema (a hand-built
 * one, or one a newer version wrote) starts nothing for them instead of running the wrong commit.
 */
export function refusedTables(
  tables: readonly { readonly name: string; readonly format: unknown }[],
): RefusedTable[] {
  return tables
    .filter((t) => !isTableFormatName(t.format))
    .map((t) => ({ name: t.name, format: t.format, message: unsupportedFormatMessage(t.format) }));
}

/** The `format` field wherever a table is configured: an implemented format's name, refused with THE message. */
export const tableFormatNameSchema = z
  .string({ error: (issue) => unsupportedFormatMessage(issue.input) })
  .refine(isTableFormatName, { error: (issue) => unsupportedFormatMessage(issue.input) })
  .transform((name) => name as TableFormatName);

// ---------------------------------------------------------------------------------------------------------
// Format-owned maintenance (issue #27 item 2): what vacuum, its entry points and the CLI know of the formats that
// maintain their tables themselves, taken from REGISTERED so none of them names a format.
// ---------------------------------------------------------------------------------------------------------

/** A registered format that maintains its tables itself (see `TableFormat.maintenance`). */
type MaintainingFormat = Extract<(typeof REGISTERED)[number], { readonly maintenance: TableMaintenance }>;

/** The formats with their own maintenance, in registration order (the order of their report fields). */
export const MAINTAINING_FORMATS: readonly (TableFormat & { readonly maintenance: TableMaintenance })[] =
  REGISTERED.filter((f): f is MaintainingFormat => 'maintenance' in f);

/** The candidate kinds of the formats' own maintenance (`delta-tombstone` …), in registration order. */
export type FormatCandidateKind = MaintainingFormat['maintenance']['candidateKinds'][number];

/** Every format's own candidate kinds, in registration order. */
export const FORMAT_CANDIDATE_KINDS: readonly FormatCandidateKind[] = MAINTAINING_FORMATS.flatMap(
  (f) => f.maintenance.candidateKinds as readonly FormatCandidateKind[],
);

type PlanEntryOf<M> =
  M extends TableMaintenance<infer Plan, infer Summary> ? MaintenancePlanEntry<Plan, Summary> : never;
type OutcomeEntryOf<M> =
  M extends TableMaintenance<MaintenanceTablePlan, infer Summary> ? MaintenanceOutcomeEntry<Summary> : never;

/** A vacuum plan's per-format sections: each format's planned tables under its own report field. */
export type FormatMaintenancePlans = {
  readonly [F in MaintainingFormat as F['maintenance']['reportKey']]?: readonly PlanEntryOf<
    F['maintenance']
  >[];
};

/** A vacuum report's per-format sections: each format's tables as carried out, under its own report field. */
export type FormatMaintenanceOutcomes = {
  readonly [F in MaintainingFormat as F['maintenance']['reportKey']]?: readonly OutcomeEntryOf<
    F['maintenance']
  >[];
};

/** The vacuum input's format options (`deltaRetentionHours` …), each format's spelled as it declares them. */
export const FORMAT_VACUUM_OPTIONS: UnionToIntersection<MaintainingFormat['maintenance']['requestOptions']> =
  Object.assign({}, ...MAINTAINING_FORMATS.map((f) => f.maintenance.requestOptions));

type UnionToIntersection<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void
  ? I
  : never;
