// What a table format declares of its own settings, so the shared code that reads configuration (the table config
// schema, the construct's props, the run input, the CLI) composes them from the registry instead of naming a
// format: a new format with settings of its own is still one folder plus one registration line.
//
// Why a descriptor and not fields on TableFormatSettings: a shared settings interface had to import every format's
// types and grew with each format. Here each format owns its fragment (its zod fields, its checks), the registry
// (formats/index.ts) merges the fragments, and a format reads its settings back as its own typed value; the port
// (table-format.ts) carries that value opaquely.
import type { z } from 'zod';
import type { PartitionValue } from '../partition.js';
import type { Reader } from '../readers.js';

/** The parsed values of a fragment's fields: each one optional, as a table of another format lacks them. */
export type SettingsOf<Fields extends z.ZodRawShape> = {
  readonly [K in keyof Fields]?: z.output<Fields[K]> | undefined;
};

/** One problem of a table's settings: the field (as the config spells it) and why. */
export interface SettingsIssue {
  readonly path: string;
  readonly message: string;
}

/**
 * One command-line option of a format, as plain data so core never depends on the CLI library (the CLI registers
 * it: cli/format-options.ts). `flags` and `description` are commander's.
 */
export interface FormatCliOption {
  readonly flags: string;
  readonly description: string;
  /** The only values accepted. */
  readonly choices?: readonly string[];
  /** The value when the option is not given (shown in the help). */
  readonly defaultValue?: string;
  /** Given more than once, the values are collected in order. */
  readonly repeatable?: boolean;
  /** Turns the text into the option's value; throws an Error whose message says what is expected. */
  readonly parse?: (value: string) => unknown;
}

/**
 * A format's table settings: the table-config fields it owns (keys exactly as users write them in `tables[]`),
 * which the registry refuses on tables of every other format, and the rules among them a table of this format must
 * follow.
 */
export interface FormatSettings<
  Fields extends z.ZodRawShape = z.ZodRawShape,
  RunInput extends z.ZodRawShape = z.ZodRawShape,
  RunContext extends z.ZodRawShape = z.ZodRawShape,
  CliFlags extends object = object,
> {
  /** The table-config fields of this format, each optional in the schema (other formats' tables lack them). */
  readonly tableFields: Fields;
  /**
   * Problems of a table of this format with its own settings that the field schemas cannot see alone (e.g. the
   * commit coordination is required). Called only for tables of this format.
   */
  readonly tableIssues?: (settings: SettingsOf<Fields>) => readonly SettingsIssue[];
  /** What a run of a table of this format may be asked for beyond every format's run input (run-input.ts). */
  readonly run?: FormatRunSettings<Fields, RunInput, RunContext>;
  /** How a command line spells these settings (the CLI has no table config), see {@link FormatCliSettings}. */
  readonly cli?: FormatCliSettings<Fields, CliFlags>;
}

/**
 * A format's fragment of the run input (the console's, the profiler's) and of the run context it resolves into: the
 * request fields only its tables take (refused on a table of any other format), and the context fields its plan
 * reads back (`FormatPlanRequest.options`).
 */
export interface FormatRunSettings<
  Fields extends z.ZodRawShape,
  RunInput extends z.ZodRawShape,
  RunContext extends z.ZodRawShape,
> {
  /** Fields of the run input, each optional in the schema. */
  readonly input: RunInput;
  /** Fields of the run context (JSON carried between the steps), each optional in the schema. */
  readonly context: RunContext;
  /**
   * The run context's values of {@link context}: the request's choices over the table's settings (its explicit
   * `targetFileSizeMB` too, for a format whose own options name the target, and its declared `readers`, for a format
   * whose choices depend on them). Nothing is validated here.
   */
  readonly resolve: (
    table: SettingsOf<Fields> & {
      readonly targetFileSizeMB?: number | undefined;
      readonly readers?: readonly Reader[] | undefined;
    },
    request: SettingsOf<RunInput> & RunKnobs,
  ) => SettingsOf<RunContext>;
  /**
   * The format's reading of the run input's `where` partition filter, for a format whose input takes one: the
   * filter as a predicate over one partition's values (the validate step and `compact` list the partitions it
   * passes). Called with a filter of the run input's own schema, or an operator's flag.
   * @throws InvalidInputError when the filter does not parse, saying where and what was expected.
   */
  readonly partitionFilter?: (text: string) => PartitionFilter;
  /**
   * Refuses this run's own inputs that cannot hold for the table as its snapshot shows it (e.g. option sizes
   * against the table's target property), before anything is settled or planned; the plan step would refuse them
   * anyway, later.
   * @throws InvalidInputError saying which input to change.
   */
  readonly checkAgainstTable?: (
    request: SettingsOf<RunInput>,
    table: { readonly properties?: Readonly<Record<string, string>> | undefined },
  ) => void;
  /**
   * Run-input fields the command line spells as repeated `name=value` pairs (e.g. `rewriteDataFiles` as
   * `--rewrite-option`s), each with the parser of its pairs.
   * @throws InvalidInputError listing every problem of the pairs.
   */
  readonly fromPairs?: {
    readonly [K in keyof RunInput]?: (pairs: readonly string[]) => z.output<RunInput[K]>;
  };
  /**
   * What a run-input field of this format, or a knob every run takes ({@link RunKnobs}), means on a table of this
   * format, for the help of the command-line options that spell it (cli: `--where`, `--rewrite-option`,
   * `--target-mb`, `--min-input-files`): the CLI prefixes each with the format's title, so it names no format.
   */
  readonly describe?: {
    readonly [K in (keyof RunInput | keyof RunKnobs) & string]?: string;
  };
}

/**
 * What every format's run may be asked for of its planner whatever the format (`targetFileSizeMB` of the run input;
 * the CLI `plan`'s `--min-input-files`), for a format whose own options are the same knobs (e.g.
 * `target-file-size-bytes`, `min-input-files`).
 */
export interface RunKnobs {
  readonly targetFileSizeMB?: number | undefined;
  readonly minInputFiles?: number | undefined;
  /** The reader families the run's outputs must stay readable by (what a format may write depends on them). */
  readonly readers?: readonly Reader[] | undefined;
}

/** A run's partition filter as its format reads it (see {@link FormatRunSettings.partitionFilter}). */
export interface PartitionFilter {
  /** The filter as given. */
  readonly text: string;
  /** Whether a partition with these values passes. */
  passes(values: readonly PartitionValue[]): boolean;
  /**
   * Refuses a filter naming a field that none of `known` is (the table's partition fields), suggesting the nearest.
   * @throws InvalidInputError
   */
  checkFields(known: readonly string[]): void;
}

/**
 * A format's settings, typed by its own fields: its `tableIssues` and `run.resolve` see exactly those fields'
 * values, and the registry composes the config, run input and run context from the inferred fields.
 */
export function defineFormatSettings<
  Fields extends z.ZodRawShape,
  RunInput extends z.ZodRawShape = Record<never, never>,
  RunContext extends z.ZodRawShape = Record<never, never>,
  CliFlags extends object = Record<never, never>,
>(
  settings: FormatSettings<Fields, RunInput, RunContext, CliFlags>,
): FormatSettings<Fields, RunInput, RunContext, CliFlags> {
  return settings;
}

/** The parsed settings of a table of a format declaring `S`. */
export type SettingsValue<S> =
  S extends FormatSettings<infer Fields, z.ZodRawShape, z.ZodRawShape, object> ? SettingsOf<Fields> : never;

/** The command a format's options are parsed for: the location's format (`--format`) and where it lies. */
export interface FormatCliCommand {
  /** The registered name `--format` gave (a format's options given for another format are refused). */
  readonly format: string;
  /** True for an s3:// location (a format may require options there that a local folder defaults). */
  readonly s3: boolean;
}

/**
 * A format's command-line spelling of its table settings, for the commands that read, commit to, settle or
 * maintain one table location (the CLI has no table config: the operator names the location's settings as the
 * deployment's config declares them). The CLI registers `options` for every registered format (cli/format-options.ts)
 * and hands the parsed flags back to `settingsOf`, so it names no format's flag or setting; `Flags` is how commander
 * parses `options` (camel-cased long names), which the registry merges into the CLI's option types.
 */
export interface FormatCliSettings<
  Fields extends z.ZodRawShape = z.ZodRawShape,
  Flags extends object = object,
> {
  /** The options, in help order. */
  readonly options: readonly FormatCliOption[];
  /**
   * Whether commands that only read the table (profile, plan) take the options too: a table read through
   * its catalog needs them to read, while a commit coordination matters only to what commits or settles.
   */
  readonly forReading: boolean;
  /**
   * The table settings the flags spell, checked as the config checks them; none when no option of this format was
   * given (and the format defaults nothing for the location).
   * @throws UsageError when options of this format are given for another format (`command.format`), contradict
   * each other or are incomplete.
   */
  settingsOf(flags: Flags, command: FormatCliCommand): SettingsOf<Fields>;
}
