// The CLI's table settings of a format (a Delta table's commit coordination, an Iceberg table's catalog …) and the
// format a command commits and settles through. The CLI has no table config: the operator names the location's
// format with --format and its settings with the options each registered format declares (FormatSettings.cli,
// composed by the registry: core/formats/cli.ts) as the deployment's config declares them — a compact, settle or
// vacuum that committed any other way would race the table's writers. Nothing here names a format.
import { resolve } from 'node:path';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { formatClientsFromEnv, formatServices } from '../adapters/formats/index.js';
import { LocalObjectStore } from '../adapters/local-object-store.js';
import type { OpenedStore } from '../adapters/open-store.js';
import { type FormatCliUse, formatCliOptions, formatSettingsFromFlags } from '../core/formats/cli.js';
import type { FormatCliOption } from '../core/formats/format-settings.js';
import type { FormatCliFlags, FormatServices, TableFormatSettings } from '../core/formats/index.js';
import { formatForTable, type TableFormatName, tableFormat } from '../core/formats/index.js';
import type { TableFormat } from '../core/formats/table-format.js';
import type { Clock } from '../ports/clock.js';
import { dynamoDbClientFromEnv, type Env } from '../shared/aws-env.js';
import type { TableLocation } from '../shared/format-services.js';

/** Every registered format's table-setting options, as commander parses them (see core/formats/index.ts). */
export type FormatCliOptions = FormatCliFlags;

/**
 * Registers a format's command-line options (plain data its folder declares, see `FormatCliOption`) on `command`,
 * in order, with commander's own help and validation: choices, repeatable values, a parser whose error is the
 * option's usage error.
 */
export function addFormatCliOptions(command: Command, options: readonly FormatCliOption[]): Command {
  for (const spec of options) {
    const option = new Option(spec.flags, spec.description);
    if (spec.choices !== undefined) option.choices(spec.choices);
    if (spec.defaultValue !== undefined) option.default(spec.defaultValue);
    const parse = spec.parse;
    if (parse !== undefined)
      option.argParser((value: string) => {
        try {
          return parse(value);
        } catch (err) {
          throw new InvalidArgumentError(err instanceof Error ? err.message : String(err));
        }
      });
    else if (spec.repeatable === true)
      option.argParser((value: string, previous: string[] | undefined) => [...(previous ?? []), value]);
    command.addOption(option);
  }
  return command;
}

/**
 * Adds every registered format's table-setting options to `command`, format by format in registration order: all of
 * them for a command that commits, settles or maintains the table (`commit`), those of formats read through them
 * for one that only reads it (`read`: profile, plan).
 */
export function addFormatOptions(command: Command, use: FormatCliUse = 'commit'): Command {
  return addFormatCliOptions(command, formatCliOptions(use));
}

/**
 * The table settings the options spell for a command on `uri` (a location of `format`), each format's checked as
 * the config checks it, so both refuse the same things.
 * @throws UsageError when a format's options are given for another format, contradict each other or are missing
 * where the format requires them (a Delta table on S3 needs its coordination).
 */
export function formatSettingsOf(
  uri: string,
  format: TableFormatName,
  options: FormatCliOptions,
  use: FormatCliUse = 'commit',
): TableFormatSettings {
  return formatSettingsFromFlags(format, options, { s3: isS3Location(uri) }, use);
}

/** Whether a CLI location is on S3 (the Delta coordination options are required there). */
export function isS3Location(uri: string): boolean {
  return /^s3a?:\/\//i.test(uri.trim());
}

/**
 * The format a command on `opened` commits and settles through: `format` bound to the table's settings (as
 * {@link formatSettingsOf} parsed them, or a caller's), with the services of {@link cliFormatServices}.
 */
export function commandFormat(
  opened: OpenedStore,
  table: string,
  format: TableFormatName,
  settings: TableFormatSettings,
  io: { readonly env: Env; readonly clock: Clock },
): TableFormat {
  return formatForTable([{ ...settings, name: table, format }], table, cliFormatServices(opened, io));
}

/**
 * The format a command that only reads `opened` (profile, plan, a dry run) reads it through: bound, as
 * {@link commandFormat}, to the settings it reads through (`formatSettingsOf(…, 'read')`: an Iceberg table's
 * catalog), or, given none, the registered format unbound — no client is built for a table read as its format's
 * defaults say.
 */
export function readingFormat(
  opened: OpenedStore,
  table: string,
  format: TableFormatName,
  settings: TableFormatSettings | undefined,
  io: { readonly env: Env; readonly clock: Clock },
): TableFormat {
  const given = settings !== undefined && Object.values(settings).some((value) => value !== undefined);
  return given ? commandFormat(opened, table, format, settings, io) : tableFormat(format);
}

/**
 * The format services of a CLI command on `opened`: Glue/REST catalog clients and DynamoDB clients from the CLI's
 * environment (AWS_ENDPOINT_URL_DYNAMODB, keys; the region a setting names). On S3 the commit entries'
 * table path is the bucket's, as Spark spells it; in a local folder it is the folder's `file://` path (no other
 * engine shares a local folder's entries, only other runs).
 */
export function cliFormatServices(
  opened: OpenedStore,
  io: { readonly env: Env; readonly clock: Clock },
): FormatServices {
  return formatServices(
    {
      dynamodb: (region) =>
        dynamoDbClientFromEnv(
          region === undefined ? io.env : { ...io.env, AWS_REGION: region, AWS_DEFAULT_REGION: region },
        ),
      clock: io.clock,
      ...formatClientsFromEnv(io.env),
    },
    tableLocationOf(opened),
  );
}

function tableLocationOf(opened: OpenedStore): TableLocation {
  const bucket = /^s3a?:\/\/([^/]+)/i.exec(opened.uri.trim())?.[1];
  if (bucket !== undefined) return { bucket };
  const root = opened.store instanceof LocalObjectStore ? opened.store.root : resolve(opened.uri);
  return {
    tablePath: (tableRoot) => `file://${resolve(root, tableRoot).replace(/\/+$/, '') || '/'}`,
  };
}
