// The registry's share of the command line: every registered format's table-setting options (FormatSettings.cli),
// and its words for the commands' help (TableFormat.help, FormatRunSettings.describe), composed so the CLI registers,
// validates, parses and describes them without naming a format. The CLI has no table config:
// the operator names the location's settings with these options as the deployment's config declares them, and each
// format turns its own options into its own settings value, which reaches the format through `formatForTable` as a
// configured table's settings would.
import type { FormatCliOption, FormatCliSettings } from './format-settings.js';
import { type FormatCliFlags, TABLE_FORMATS, type TableFormatSettings } from './index.js';
import type { FormatCommandHelp } from './table-format.js';

/**
 * What a command does with the table at its location: `commit` for what commits, settles or maintains it (every
 * format's options), `read` for what only reads it (profile, plan: the options of formats read through them).
 */
export type FormatCliUse = 'commit' | 'read';

/** The command-line settings of the registered formats a command of `use` takes, in registration order. */
function cliSettingsFor(use: FormatCliUse): FormatCliSettings[] {
  return [...TABLE_FORMATS.values()].flatMap((format) => {
    const cli = format.settings?.cli;
    return cli === undefined || (use === 'read' && !cli.forReading) ? [] : [cli];
  });
}

/** The table-setting options a command of `use` registers, format by format in registration order. */
export function formatCliOptions(use: FormatCliUse): FormatCliOption[] {
  return cliSettingsFor(use).flatMap((cli) => cli.options);
}

/**
 * The table settings the parsed `flags` spell for a command on a location of `format`, as a configured table of
 * that format would hold them (each format parses and checks its own options; none given: its defaults, if any).
 * @throws UsageError when a format's options are given for another format, contradict each other or are incomplete.
 */
export function formatSettingsFromFlags(
  format: string,
  flags: FormatCliFlags,
  location: { readonly s3: boolean },
  use: FormatCliUse = 'commit',
): TableFormatSettings {
  const command = { format, s3: location.s3 };
  return Object.assign({}, ...cliSettingsFor(use).map((cli) => cli.settingsOf(flags, command)));
}

/** A registered format's paragraph of one command's help (see `FormatCommandHelp`). */
export interface FormatHelpParagraph {
  /** The format's name, as `--format` spells it. */
  readonly name: string;
  readonly title: string;
  readonly text: string;
}

/** Each registered format's paragraph of `command`'s help, in registration order (formats without one left out). */
export function formatCommandHelp(command: keyof FormatCommandHelp): FormatHelpParagraph[] {
  return [...TABLE_FORMATS.values()].flatMap((f) => {
    const text = f.help?.[command];
    return text === undefined ? [] : [{ name: f.name, title: f.title, text }];
  });
}

/**
 * What a run-input field or run knob means on the tables of each registered format that describes it
 * (`FormatRunSettings.describe`), as `<title>: <words>` joined by "; ", for the help of the option that spells it;
 * empty when no format describes it.
 */
export function runInputHelp(field: string): string {
  return [...TABLE_FORMATS.values()]
    .flatMap((f) => {
      const words = (f.settings?.run?.describe as Readonly<Record<string, string>> | undefined)?.[field];
      return words === undefined ? [] : [`${f.title}: ${words}`];
    })
    .join('; ');
}
