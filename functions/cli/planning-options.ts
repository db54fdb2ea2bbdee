// The planning flags `plan` and `compact` share — --target-mb, --min-input-files, --max-group-mb — declared once
// and parsed once, so `plan` shows what `compact` with the same flags does, and a value one refuses the other
// refuses with the same words and exit code. Their limits and the check between them are the console input's
// too (core/planning-choices.ts); here they are only spelled as flags.
import { type Command, InvalidArgumentError, Option } from 'commander';
import { UsageError } from '../core/errors.js';
import { formatsTakingRunInput, formatTakesRunInput } from '../core/formats/index.js';
import {
  CLI_CHOICE_NAMES,
  DEFAULT_MAX_GROUP_MIB,
  DEFAULT_TARGET_FILE_SIZE_MIB,
  MIN_INPUT_FILES_FLOOR,
  type PlanningChoices,
  parsePlanningChoices,
  SCHEMA_EVOLUTION_MODES,
  SCHEMA_EVOLUTION_NAMES,
  type SchemaEvolution,
} from '../core/planning-choices.js';
import { DEFAULT_POLICY } from '../core/policy.js';
import { knobHelp } from './format-help.js';

/** The planning flags as commander hands them to an action. */
export interface PlanningFlags {
  /** Target output size, MiB. @default the table's (a format may read its own property), else 128 */
  readonly targetMb?: number;
  /** The fewest files a group merges. @default 5 */
  readonly minInputFiles?: number;
  /** The most one group rewrites, MiB. @default 2048, raised to 2 × the target */
  readonly maxGroupMb?: number;
  /** `union`: a partition's schema populations are unified by column name (Hive-style tables). @default never */
  readonly schemaEvolution?: SchemaEvolution;
}

/**
 * A flag's value as a number; its range is {@link planningChoicesOf}'s to check (with the others, naming the flag).
 * Why not checked here: a range also depends on another flag (the group cap on the target), and one parser for
 * every check keeps the words the same as the console input's.
 */
function numberArgument(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n))
    throw new InvalidArgumentError('expected a positive number.');
  return n;
}

/** Adds the planning flags to `command` (`plan`, `compact`), with help texts whose defaults are the code's. */
export function addPlanningOptions(command: Command): Command {
  return command
    .option(
      `${CLI_CHOICE_NAMES.targetFileSizeMB} <n>`,
      `target file size in MiB (default: ${DEFAULT_TARGET_FILE_SIZE_MIB}${knobHelp('targetFileSizeMB')})`,
      numberArgument,
    )
    .option(
      `${CLI_CHOICE_NAMES.minInputFiles} <n>`,
      `fewest files a group merges, at least ${MIN_INPUT_FILES_FLOOR}, unless they are all the partition has (default: ${DEFAULT_POLICY.minInputFiles}${knobHelp('minInputFiles')})`,
      numberArgument,
    )
    .option(
      `${CLI_CHOICE_NAMES.maxGroupMB} <n>`,
      `largest group, in MiB of input, at least 2 × ${CLI_CHOICE_NAMES.targetFileSizeMB} (default: ${DEFAULT_MAX_GROUP_MIB}, or 2 × ${CLI_CHOICE_NAMES.targetFileSizeMB} if more)`,
      numberArgument,
    )
    .addOption(
      new Option(
        `${SCHEMA_EVOLUTION_NAMES.cli} <mode>`,
        `${schemaEvolutionFormats()
          .map((f) => f.title)
          .join(
            ', ',
          )}: "union" groups files whose schemas unify by column name (union of columns, nulls where a file lacks one, int32 → int64 and float → double widened), refusing the rest by file and column (default: never, files of different schemas are never grouped)`,
      ).choices(SCHEMA_EVOLUTION_MODES),
    );
}

/** The formats whose tables take `--schema-evolution` (the registry's word), as its help and its refusal name them. */
function schemaEvolutionFormats() {
  return formatsTakingRunInput(SCHEMA_EVOLUTION_NAMES.runInput);
}

/**
 * The `--schema-evolution` choice as the run input field it is, refused on a table whose format does not take it
 * (the registry's word: a format declaring `schemaEvolution` among its run inputs).
 * @throws UsageError (exit 2) before anything is listed or written.
 */
export function schemaEvolutionOf(
  flags: Pick<PlanningFlags, 'schemaEvolution'>,
  format: string,
): { schemaEvolution?: SchemaEvolution } {
  if (flags.schemaEvolution === undefined) return {};
  if (!formatTakesRunInput(format, SCHEMA_EVOLUTION_NAMES.runInput))
    throw new UsageError(
      `${SCHEMA_EVOLUTION_NAMES.cli} applies to ${schemaEvolutionFormats()
        .map((f) => `${f.title} tables (--format ${f.name})`)
        .join(' and ')}, not to format "${format}", whose table schema decides; drop it`,
    );
  return { schemaEvolution: flags.schemaEvolution };
}

/**
 * The planning flags as the run's choices.
 * @throws UsageError (exit 2) naming each flag that is out of range, before anything is listed or written.
 */
export function planningChoicesOf(flags: PlanningFlags): PlanningChoices {
  const parsed = parsePlanningChoices(
    { targetFileSizeMB: flags.targetMb, minInputFiles: flags.minInputFiles, maxGroupMB: flags.maxGroupMb },
    CLI_CHOICE_NAMES,
  );
  if (!parsed.ok) throw new UsageError(parsed.problems.join('; '));
  return parsed.choices;
}
