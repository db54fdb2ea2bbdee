// The formats' words in a command's --help, from the registry: each registered format's paragraph of the command
// (TableFormat.help) under its title, and an option's words per format (FormatRunSettings.describe), so no command
// describes a format itself and a new format's help is written in its folder only.
import { formatCommandHelp, runInputHelp } from '../core/formats/cli.js';
import type { FormatCommandHelp } from '../core/formats/table-format.js';

/** The width the formats' paragraphs are wrapped to (the commands' own help text is wrapped by hand to it). */
const HELP_WIDTH = 112;

/** `text` as lines of at most `width` characters, broken between words (a longer word keeps its own line). */
export function wrapHelp(text: string, width = HELP_WIDTH): string {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/).filter((w) => w !== '')) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  if (line !== '') lines.push(line);
  return lines.join('\n');
}

/**
 * Each registered format's paragraph of `command`'s help, as `<title> (--format <name>): <text>`, wrapped, one
 * after the other; empty when no format has one.
 */
export function formatsHelp(command: keyof FormatCommandHelp): string {
  return formatCommandHelp(command)
    .map((p) => wrapHelp(`${p.title} (--format ${p.name}): ${p.text}`))
    .join('\n');
}

/**
 * The help of an option spelling a run-input field only some formats take: what it is for on each (`<title>:
 * <words>`), else `fallback`.
 */
export function runOptionHelp(field: string, fallback: string): string {
  const words = runInputHelp(field);
  return words === '' ? fallback : words;
}

/** `"; <title>: <words>"` for each format that says what a run knob means on its tables, for a default's parentheses. */
export function knobHelp(knob: string): string {
  const words = runInputHelp(knob);
  return words === '' ? '' : `; ${words}`;
}
