// The planning choices a run may be started with — the size outputs aim for, the fewest files a group merges and
// the most one group rewrites — defined once for every way a run starts: `lake-compactor plan` and `compact`, and
// the Step Functions console input. Why one place: "plan shows what compact would do" holds only if both accept
// the same choices within the same limits, and an error must name the choice as the user spelled it (a flag on
// the command line, a field in the console input), never a field of the planner's own options.
import { z } from 'zod';
import { DEFAULT_POLICY } from './policy.js';

const MiB = 1024 * 1024;

/** The largest target output size: one S3 CopyObject (what retiring and publishing an output does) copies 5 GiB. */
export const MAX_TARGET_FILE_SIZE_MIB = 5 * 1024;

/** The largest group one compact step may rewrite: 10 GiB, what the largest compact Lambda streams in minutes. */
export const MAX_GROUP_MIB = 10 * 1024;

/**
 * Bytes one compact step rewrites at most unless the request says otherwise: 2 GiB, so one compact Lambda finishes
 * in minutes with bounded memory. The plan step raises it to 2 × the target when
 * that is more (workflow/plan.ts, binpackOptionsOf), so a target above 1 GiB with no cap given is a valid request.
 */
export const DEFAULT_MAX_GROUP_MIB = 2048;

/** A group merges at least two files: one file rewritten alone is a cost and no compaction. */
export const MIN_INPUT_FILES_FLOOR = 2;

/** The target output size when neither the request nor the table chooses one, MiB (the policy's, 128). */
export const DEFAULT_TARGET_FILE_SIZE_MIB = DEFAULT_POLICY.targetFileSizeBytes / MiB;

/** The planning choices of one request, in MiB and files; absent = the table's, else the default. */
export interface PlanningChoices {
  readonly targetFileSizeMB?: number | undefined;
  readonly minInputFiles?: number | undefined;
  readonly maxGroupMB?: number | undefined;
}

/** How the user spelled each choice where they gave it (a flag, an input field): every message names it so. */
export type PlanningChoiceNames = Readonly<Record<keyof PlanningChoices, string>>;

/** The console input's names: its fields. */
export const RUN_INPUT_CHOICE_NAMES: PlanningChoiceNames = {
  targetFileSizeMB: 'targetFileSizeMB',
  minInputFiles: 'minInputFiles',
  maxGroupMB: 'maxGroupMB',
};

/** The CLI's names: the flags of `plan` and `compact`. */
export const CLI_CHOICE_NAMES: PlanningChoiceNames = {
  targetFileSizeMB: '--target-mb',
  minInputFiles: '--min-input-files',
  maxGroupMB: '--max-group-mb',
};

const got = (input: unknown): string => `got ${typeof input === 'number' ? input : JSON.stringify(input)}`;

/**
 * The choices as zod fields whose messages name each choice as `names` spells it; spread into an object schema
 * together with {@link checkPlanningChoices} as its refinement (the console input does, {@link parsePlanningChoices}
 * does for the CLI).
 */
export function planningChoiceFields(names: PlanningChoiceNames) {
  return {
    /** Target output size in MiB. Default: the table's, else 128. */
    targetFileSizeMB: z
      .number({ error: (i) => `${names.targetFileSizeMB} must be a number of MiB, ${got(i.input)}` })
      .positive({ error: (i) => `${names.targetFileSizeMB} must be more than 0 MiB, ${got(i.input)}` })
      .max(MAX_TARGET_FILE_SIZE_MIB, {
        error: (i) =>
          `${names.targetFileSizeMB} must be at most ${MAX_TARGET_FILE_SIZE_MIB} MiB (the S3 single-copy limit), ${got(i.input)}`,
      })
      .optional(),
    /** The fewest files a group merges (unless they are all its partition has of their schema). Default: the table's, else 5. */
    minInputFiles: z
      .number({ error: (i) => `${names.minInputFiles} must be a whole number of files, ${got(i.input)}` })
      .int({ error: (i) => `${names.minInputFiles} must be a whole number of files, ${got(i.input)}` })
      .min(MIN_INPUT_FILES_FLOOR, {
        error: (i) =>
          `${names.minInputFiles} must be at least ${MIN_INPUT_FILES_FLOOR} (a group merges two files or more), ${got(i.input)}`,
      })
      .optional(),
    /** Bytes one compact step rewrites at most, MiB (≥ 2 × target). Default 2048. */
    maxGroupMB: z
      .number({ error: (i) => `${names.maxGroupMB} must be a number of MiB, ${got(i.input)}` })
      .positive({ error: (i) => `${names.maxGroupMB} must be more than 0 MiB, ${got(i.input)}` })
      .max(MAX_GROUP_MIB, {
        error: (i) => `${names.maxGroupMB} must be at most ${MAX_GROUP_MIB} MiB per group, ${got(i.input)}`,
      })
      .optional(),
  };
}

/**
 * The one check between the choices: a group must hold more than one output file, so the group cap is at least
 * twice the target (given, else the default). Its issue is added on the group cap's field.
 */
export function checkPlanningChoices(
  choices: PlanningChoices,
  ctx: z.RefinementCtx,
  names: PlanningChoiceNames,
): void {
  const problem = maxGroupProblem(choices, names);
  if (problem !== undefined) ctx.addIssue({ code: 'custom', path: ['maxGroupMB'], message: problem });
}

function maxGroupProblem(choices: PlanningChoices, names: PlanningChoiceNames): string | undefined {
  if (choices.maxGroupMB === undefined) return undefined;
  const target = choices.targetFileSizeMB ?? DEFAULT_TARGET_FILE_SIZE_MIB;
  if (choices.maxGroupMB >= 2 * target) return undefined;
  const defaulted =
    choices.targetFileSizeMB === undefined
      ? `; ${names.targetFileSizeMB} is ${DEFAULT_TARGET_FILE_SIZE_MIB} unless given`
      : '';
  return `${names.maxGroupMB} must be at least 2 × ${names.targetFileSizeMB} (${2 * target}${defaulted}), so a group can hold more than one output file; ${got(choices.maxGroupMB)}`;
}

/**
 * Parses the planning choices as the user gave them, naming each as `names` spells it.
 * @returns the choices, or every problem (each message names its choice).
 */
export function parsePlanningChoices(
  raw: Readonly<Record<keyof PlanningChoices, unknown>>,
  names: PlanningChoiceNames,
):
  | { readonly ok: true; readonly choices: PlanningChoices }
  | { readonly ok: false; readonly problems: string[] } {
  const schema = z
    .object(planningChoiceFields(names))
    .superRefine((choices, ctx) => checkPlanningChoices(choices, ctx, names));
  const given = Object.fromEntries(Object.entries(raw).filter(([, value]) => value !== undefined));
  const parsed = schema.safeParse(given);
  if (parsed.success) return { ok: true, choices: parsed.data };
  return { ok: false, problems: parsed.error.issues.map((issue) => issue.message) };
}

/**
 * How a run treats files of one partition written under different Parquet schemas: `never` (the default) groups
 * only files of one schema, as always; `union` groups files whose schemas unify by column name into outputs of the
 * union of their columns (a table format declares whether its tables take it: one with no table
 * schema of its own). One definition for the table config, the console input and the `--schema-evolution` flag of
 * `plan` and `compact`.
 */
export const SCHEMA_EVOLUTION_MODES = ['never', 'union'] as const;
export type SchemaEvolution = (typeof SCHEMA_EVOLUTION_MODES)[number];

/** The schema-evolution choice's names where the user gives it. */
export const SCHEMA_EVOLUTION_NAMES = { runInput: 'schemaEvolution', cli: '--schema-evolution' } as const;

/** The choice as a zod field whose message names it as `name` spells it and lists the modes. */
export function schemaEvolutionSchema(name: string = SCHEMA_EVOLUTION_NAMES.runInput) {
  return z.enum(SCHEMA_EVOLUTION_MODES, {
    error: (i) => `${name} must be one of ${SCHEMA_EVOLUTION_MODES.join(', ')}, ${got(i.input)}`,
  });
}
