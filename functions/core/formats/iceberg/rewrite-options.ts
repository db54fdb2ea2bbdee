// The options of Iceberg's `rewrite_data_files` that lake-compactor takes, spelled and defaulted as Iceberg does:
// validated before any state changes (an unknown name suggests the nearest one), then resolved per table.
//
// Why Iceberg's own names (`min-input-files`, not `minInputFiles`): the people who configure an Iceberg table's
// compaction already have them in a Spark job (`CALL system.rewrite_data_files(options => map(...))`), so the map
// moves over verbatim, and the documentation they know applies word for word.
import { z } from 'zod';
import { InvalidInputError } from '../../errors.js';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/** Iceberg's default target when neither the option nor the table's `write.target-file-size-bytes` sets one. */
export const ICEBERG_DEFAULT_TARGET_BYTES = 512 * MiB;
/** The table property Iceberg's writers (and `rewrite_data_files`) take the target from. */
export const TARGET_SIZE_PROPERTY = 'write.target-file-size-bytes';
/** `min-file-size-bytes` defaults to this fraction of the target (Iceberg's MIN_FILE_SIZE_DEFAULT_RATIO). */
export const MIN_FILE_SIZE_DEFAULT_RATIO = 0.75;
/** `max-file-size-bytes` defaults to this multiple of the target (Iceberg's MAX_FILE_SIZE_DEFAULT_RATIO). */
export const MAX_FILE_SIZE_DEFAULT_RATIO = 1.8;
/** Java's Integer.MAX_VALUE: Iceberg's `delete-file-threshold` default, i.e. deletes alone never select a file. */
export const DELETE_FILE_THRESHOLD_DEFAULT = 2_147_483_647;
/** Iceberg's `max-file-group-size-bytes` default (100 GB); clamped here to what one compact step may rewrite. */
export const MAX_FILE_GROUP_SIZE_DEFAULT = 100 * GiB;
/** Iceberg's `partial-progress.max-commits` default. */
export const PARTIAL_PROGRESS_MAX_COMMITS_DEFAULT = 10;

type OptionKind = 'bytes' | 'count' | 'boolean';

/** The options taken, with their kind and least value. */
const OPTIONS = {
  'target-file-size-bytes': { kind: 'bytes', min: 1 },
  'min-file-size-bytes': { kind: 'bytes', min: 0 },
  'max-file-size-bytes': { kind: 'bytes', min: 1 },
  'min-input-files': { kind: 'count', min: 1 },
  'delete-file-threshold': { kind: 'count', min: 0 },
  'rewrite-all': { kind: 'boolean', min: 0 },
  'max-file-group-size-bytes': { kind: 'bytes', min: 1 },
  'partial-progress.enabled': { kind: 'boolean', min: 0 },
  'partial-progress.max-commits': { kind: 'count', min: 1 },
  'remove-dangling-deletes': { kind: 'boolean', min: 0 },
} as const satisfies Record<string, { kind: OptionKind; min: number }>;

export type RewriteOptionName = keyof typeof OPTIONS;

/** The names of the options taken, in the order the documentation lists them. */
export const REWRITE_OPTION_NAMES = Object.keys(OPTIONS) as RewriteOptionName[];

/**
 * Options of Iceberg's procedure this tool does not take, with why: refused rather than ignored, since a user who
 * sets one expects it to act.
 */
const NOT_TAKEN: Readonly<Record<string, string>> = {
  'max-concurrent-file-group-rewrites':
    'groups are rewritten in parallel by the workflow, whose concurrency the deployment sets',
  'use-starting-sequence-number':
    'it is always on here: rewritten files keep the starting snapshot’s sequence number, so equality deletes committed meanwhile still apply',
  'rewrite-job-order': 'groups are rewritten in the order of their first file’s key',
  'output-spec-id': 'outputs keep the partition spec of their inputs (a group never mixes specs)',
  'delete-ratio-threshold': 'it is not taken yet; use delete-file-threshold',
  'partial-progress.max-failed-commits':
    'each group is its own commit, and one that fails does not undo or stop the others',
};

/** The options as given, typed: bytes and counts as numbers, flags as booleans. */
export type RewriteDataFilesOptions = {
  readonly [K in RewriteOptionName]?: (typeof OPTIONS)[K]['kind'] extends 'boolean' ? boolean : number;
};

/**
 * The `rewriteDataFiles` map of a table config, of an operator's run input, or of the CLI's `--rewrite-option`s:
 * Iceberg's option names, values as numbers, booleans, or the strings Spark's options map holds (`"536870912"`,
 * `"true"`). Every problem is an issue at the option's path; relations between sizes are checked here when all the
 * sizes involved are given (the rest once the table's target is known, see {@link resolveRewriteOptions}).
 */
export const rewriteDataFilesSchema = z
  .record(z.string(), z.union([z.string(), z.number(), z.boolean()]))
  .transform((raw, ctx): RewriteDataFilesOptions => {
    const out: Record<string, number | boolean> = {};
    for (const [name, value] of Object.entries(raw)) {
      const problem = (message: string) => ctx.addIssue({ code: 'custom', path: [name], message });
      if (!isOptionName(name)) {
        problem(unknownOptionMessage(name));
        continue;
      }
      const spec = OPTIONS[name];
      const parsed = spec.kind === 'boolean' ? parseBoolean(value) : parseWhole(value);
      if (parsed === undefined) {
        problem(
          spec.kind === 'boolean'
            ? `${name} must be true or false, not ${JSON.stringify(value)}`
            : `${name} must be a whole number${spec.kind === 'bytes' ? ' of bytes' : ''}, not ${JSON.stringify(value)}; e.g. ${name === 'min-input-files' ? '5' : '536870912'}`,
        );
        continue;
      }
      if (typeof parsed === 'number' && parsed < spec.min) {
        problem(`${name} must be at least ${spec.min}, not ${parsed}`);
        continue;
      }
      out[name] = parsed;
    }
    const given = out as RewriteDataFilesOptions;
    for (const issue of sizeProblems(
      given['target-file-size-bytes'],
      given['min-file-size-bytes'],
      given['max-file-size-bytes'],
    ))
      ctx.addIssue({ code: 'custom', path: [issue.option], message: issue.message });
    return given;
  });

/** The input shape of {@link rewriteDataFilesSchema}. */
export type RewriteDataFilesInput = z.input<typeof rewriteDataFilesSchema>;

/**
 * What a plan was made with: every option resolved (defaults applied, the group size clamped), and the `where`
 * filter, so a stored plan says exactly which rule chose its groups.
 */
export const resolvedRewriteOptionsSchema = z.strictObject({
  /** Tells these apart from the bin-pack planner's options in a stored plan. */
  kind: z.literal('iceberg-rewrite-data-files'),
  targetFileSizeBytes: z.number().int().positive(),
  /** Where the target came from: the option, the table's `write.target-file-size-bytes`, or Iceberg's default. */
  targetSource: z.enum(['option', 'table-property', 'default']),
  minFileSizeBytes: z.number().int().nonnegative(),
  maxFileSizeBytes: z.number().int().positive(),
  minInputFiles: z.number().int().positive(),
  deleteFileThreshold: z.number().int().nonnegative(),
  rewriteAll: z.boolean(),
  /** `max-file-group-size-bytes` as asked. */
  maxFileGroupSizeBytes: z.number().int().positive(),
  /** What a group may hold here: the asked size, clamped to what one compact step rewrites (its memory). */
  groupCapBytes: z.number().int().positive(),
  partialProgressEnabled: z.boolean(),
  partialProgressMaxCommits: z.number().int().positive(),
  /**
   * `remove-dangling-deletes`: each group's replace also drops the delete files that apply to no live data file
   * any more, by the rule of Iceberg's RemoveDanglingDeletesSparkAction (commit.ts `danglingDeletes`). Absent in
   * plans stored before the option was taken: false.
   */
  removeDanglingDeletes: z.boolean().default(false),
  /** The operator's partition filter, as given. */
  where: z.string().optional(),
});
export type ResolvedRewriteOptions = z.infer<typeof resolvedRewriteOptionsSchema>;

/** What resolving needs besides the options: the table's properties and the engine's bound. */
export interface RewriteContext {
  /** The table's properties (for `write.target-file-size-bytes`). */
  readonly tableProperties?: Readonly<Record<string, string>>;
  /** The most input bytes one compact step may rewrite (its memory): `max-file-group-size-bytes` is clamped to it. */
  readonly engineGroupCapBytes: number;
  readonly where?: string;
}

/**
 * Applies Iceberg's defaults: the target from the option, else the table's `write.target-file-size-bytes`, else
 * 512 MiB; min 75 % and max 180 % of the target; 5 input files; deletes never select a file on their own; groups up
 * to 100 GB — clamped to `engineGroupCapBytes`, since one compact step rewrites a group in bounded memory;
 * partial progress off, 10 commits; dangling deletes left (Iceberg's `remove-dangling-deletes` default, false).
 * @throws InvalidInputError when the sizes contradict each other (saying which to change), or the table property is
 *   not a positive whole number.
 */
export function resolveRewriteOptions(
  options: RewriteDataFilesOptions,
  context: RewriteContext,
): ResolvedRewriteOptions {
  const fromProperty = context.tableProperties?.[TARGET_SIZE_PROPERTY];
  let target = options['target-file-size-bytes'];
  let targetSource: ResolvedRewriteOptions['targetSource'] = 'option';
  if (target === undefined && fromProperty !== undefined) {
    const parsed = parseWhole(fromProperty);
    if (parsed === undefined || parsed < 1)
      throw new InvalidInputError(
        `The Iceberg table property ${TARGET_SIZE_PROPERTY} is ${JSON.stringify(fromProperty)}, not a positive whole number of bytes; nothing was planned. Fix the property, or set the rewriteDataFiles option target-file-size-bytes`,
      );
    target = parsed;
    targetSource = 'table-property';
  }
  if (target === undefined) {
    target = ICEBERG_DEFAULT_TARGET_BYTES;
    targetSource = 'default';
  }
  const min = options['min-file-size-bytes'] ?? Math.floor(target * MIN_FILE_SIZE_DEFAULT_RATIO);
  const max = options['max-file-size-bytes'] ?? Math.floor(target * MAX_FILE_SIZE_DEFAULT_RATIO);
  const problems = sizeProblems(target, min, max);
  if (problems.length > 0)
    throw new InvalidInputError(
      `The rewriteDataFiles options contradict each other with a target of ${target} bytes (${targetSourceWords(targetSource)}); nothing was planned`,
      problems.map((p) => `${p.option}: ${p.message}`),
    );
  const asked = options['max-file-group-size-bytes'] ?? MAX_FILE_GROUP_SIZE_DEFAULT;
  return {
    kind: 'iceberg-rewrite-data-files',
    targetFileSizeBytes: target,
    targetSource,
    minFileSizeBytes: min,
    maxFileSizeBytes: max,
    minInputFiles: options['min-input-files'] ?? 5,
    deleteFileThreshold: options['delete-file-threshold'] ?? DELETE_FILE_THRESHOLD_DEFAULT,
    rewriteAll: options['rewrite-all'] ?? false,
    maxFileGroupSizeBytes: asked,
    groupCapBytes: Math.min(asked, context.engineGroupCapBytes),
    partialProgressEnabled: options['partial-progress.enabled'] ?? false,
    partialProgressMaxCommits:
      options['partial-progress.max-commits'] ?? PARTIAL_PROGRESS_MAX_COMMITS_DEFAULT,
    removeDanglingDeletes: options['remove-dangling-deletes'] ?? false,
    ...(context.where === undefined ? {} : { where: context.where }),
  };
}

/**
 * Parses `name=value` pairs (the CLI's `--rewrite-option`s) into the options map, later pairs winning.
 * @throws InvalidInputError listing every pair without `=`, and every problem of the options.
 */
export function parseRewriteOptionPairs(pairs: readonly string[]): RewriteDataFilesOptions {
  const raw: Record<string, string> = {};
  const issues: string[] = [];
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) {
      issues.push(`"${pair}" is not name=value; write e.g. --rewrite-option min-input-files=10`);
      continue;
    }
    raw[pair.slice(0, eq).trim()] = pair.slice(eq + 1).trim();
  }
  return parseRewriteOptions(raw, issues);
}

/**
 * Validates an options map.
 * @throws InvalidInputError listing every problem (`name: what to do`), with `issues` given first.
 */
export function parseRewriteOptions(raw: unknown, issues: readonly string[] = []): RewriteDataFilesOptions {
  const result = rewriteDataFilesSchema.safeParse(raw);
  const all = [
    ...issues,
    ...(result.success
      ? []
      : result.error.issues.map((i) => `${i.path.join('.') || '(options)'}: ${i.message}`)),
  ];
  if (!result.success || all.length > 0)
    throw new InvalidInputError('The rewriteDataFiles options are invalid; nothing was changed', all);
  return result.data;
}

/**
 * Later options win, name by name: a run's over its table's.
 */
export function mergeRewriteOptions(
  ...layers: readonly (RewriteDataFilesOptions | undefined)[]
): RewriteDataFilesOptions | undefined {
  const present = layers.filter((l): l is RewriteDataFilesOptions => l !== undefined);
  return present.length === 0 ? undefined : Object.assign({}, ...present);
}

function isOptionName(name: string): name is RewriteOptionName {
  return Object.hasOwn(OPTIONS, name);
}

/** Why `name` is refused: an Iceberg option not taken (and why), else the nearest option taken. */
export function unknownOptionMessage(name: string): string {
  const why = NOT_TAKEN[name];
  if (why !== undefined)
    return `${name} is an Iceberg option lake-compactor does not take: ${why}; remove it`;
  const nearest = nearestName(name, REWRITE_OPTION_NAMES);
  const all = REWRITE_OPTION_NAMES.join(', ');
  return nearest === undefined
    ? `unknown option "${name}"; the options are ${all}`
    : `unknown option "${name}": did you mean "${nearest}"? (the options are ${all})`;
}

/** The candidate closest to `name` by edit distance, when close enough to be a typo (a third of the longer name). */
export function nearestName(name: string, candidates: readonly string[]): string | undefined {
  let best: { name: string; distance: number } | undefined;
  const lower = name.toLowerCase();
  for (const candidate of candidates) {
    const distance = editDistance(lower, candidate.toLowerCase());
    const close = distance <= Math.max(2, Math.floor(Math.max(name.length, candidate.length) / 3));
    if (close && (best === undefined || distance < best.distance)) best = { name: candidate, distance };
  }
  return best?.name;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      row.push(Math.min((previous[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, substitution));
    }
    previous = row;
  }
  return previous[b.length] ?? 0;
}

/** Iceberg's size rules (SizeBasedFileRewriter): min < target < max, so an output is never rewritten again. */
function sizeProblems(
  target: number | undefined,
  min: number | undefined,
  max: number | undefined,
): { option: RewriteOptionName; message: string }[] {
  const problems: { option: RewriteOptionName; message: string }[] = [];
  if (min !== undefined && max !== undefined && min >= max)
    problems.push({
      option: 'min-file-size-bytes',
      message: `min-file-size-bytes (${min}) must be less than max-file-size-bytes (${max}); lower it or raise max-file-size-bytes`,
    });
  if (target !== undefined && min !== undefined && target <= min)
    problems.push({
      option: 'target-file-size-bytes',
      message: `target-file-size-bytes (${target}) must be greater than min-file-size-bytes (${min}), or every output would be small enough to rewrite again; raise it or lower min-file-size-bytes`,
    });
  if (target !== undefined && max !== undefined && target >= max)
    problems.push({
      option: 'target-file-size-bytes',
      message: `target-file-size-bytes (${target}) must be less than max-file-size-bytes (${max}), or every output would be large enough to rewrite again; lower it or raise max-file-size-bytes`,
    });
  return problems;
}

function targetSourceWords(source: ResolvedRewriteOptions['targetSource']): string {
  return source === 'option'
    ? 'the option'
    : source === 'table-property'
      ? `the table property ${TARGET_SIZE_PROPERTY}`
      : 'Iceberg’s default';
}

function parseWhole(value: string | number | boolean): number | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) ? value : undefined;
  if (typeof value === 'string' && /^\s*\d+\s*$/.test(value)) {
    const n = Number(value.trim());
    return Number.isSafeInteger(n) ? n : undefined;
  }
  return undefined;
}

function parseBoolean(value: string | number | boolean): boolean | undefined {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string' && /^\s*(true|false)\s*$/i.test(value))
    return value.trim().toLowerCase() === 'true';
  return undefined;
}
