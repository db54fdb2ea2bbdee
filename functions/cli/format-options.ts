import { type Command, InvalidArgumentError, Option } from 'commander';
import { type FormatCliUse, formatCliOptions, formatSettingsFromFlags } from '../core/formats/cli.js';
import type { FormatCliOption } from '../core/formats/format-settings.js';
import type { FormatCliFlags, TableFormatName, TableFormatSettings } from '../core/formats/index.js';

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
 * where the format requires them (a format may require its commit coordination on S3).
 */
export function formatSettingsOf(
  uri: string,
  format: TableFormatName,
  options: FormatCliOptions,
  use: FormatCliUse = 'commit',
): TableFormatSettings {
  return formatSettingsFromFlags(format, options, { s3: isS3Location(uri) }, use);
}

/** Whether a CLI location is on S3 (a format may require options there that a local folder defaults). */
export function isS3Location(uri: string): boolean {
  return /^s3a?:\/\//i.test(uri.trim());
}
