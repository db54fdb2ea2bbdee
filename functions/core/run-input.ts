// The compaction workflow's input: validated in full before anything changes (every problem listed at
// once, each saying what is expected) and normalised into one self-contained, JSON-safe RunContext.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { RETIRE_MODES, type RetireMode } from '../ports/journal.js';
import { codecSchema, DEFAULT_CODEC, schemaFidelitySchema } from '../ports/parquet-engine.js';
import { InvalidInputError } from './errors.js';
import {
  DEFAULT_TABLE_FORMAT,
  FORMAT_RUN_CONTEXT_FIELDS,
  FORMAT_RUN_INPUT_FIELDS,
  FORMAT_RUN_INPUT_NAMES,
  formatPartitionFilter,
  formatRunContext,
  formatTakesRunInput,
  isTableFormatName,
  misplacedRunInputMessage,
  type TableFormatName,
  type TableFormatSettings,
  tableFormat,
  tableFormatNameSchema,
  unsupportedFormatMessage,
} from './formats/index.js';
import {
  DEFAULT_STATISTICS_MODE,
  type StatisticsMode,
  statisticsKeepColumns,
  statisticsModeSchema,
} from './parquet/statistics-policy.js';
import type { PartitionValue } from './partition.js';
import {
  checkPlanningChoices,
  DEFAULT_MAX_GROUP_MIB,
  planningChoiceFields,
  RUN_INPUT_CHOICE_NAMES,
} from './planning-choices.js';
import { deltaReadersConflict, readersSchema, resolveDeltaEncoding } from './readers.js';
import { resolveTablePolicy, type TableConfig } from './table-config.js';
import { dropConfirmationProblems, runTransformSchema, transformSpecSchema } from './transform/spec.js';
import { DEFAULT_WORK_ROOT, workRootSchema } from './workflow/layout.js';

const MiB = 1024 * 1024;

/** The most partitions one request fans out to (the `partitions` schema's bound). */
export const MAX_PARTITIONS_PER_REQUEST = 500;

/** Why a run was started; the profiler and the sweep say so, anything else is an operator. */
export const TRIGGERS = ['profiler', 'sweep', 'operator'] as const;
export type Trigger = (typeof TRIGGERS)[number];

/**
 * How a run rewrites: `binpack` keeps row order, `sort` orders each output by the sort columns (lexicographically),
 * `zorder` clusters rows along a Z-order curve of the columns, so ranges of every listed column cluster (not only
 * of the first, as a sort does): what an `OPTIMIZE … ZORDER BY` does.
 */
export const STRATEGIES = ['binpack', 'sort', 'zorder'] as const;
export type Strategy = (typeof STRATEGIES)[number];
const strategySchema = z.enum(STRATEGIES);

/**
 * What an operator pastes into the console (or the profiler sends). Unknown keys are refused, so a
 * typo (`sortColumn`) fails loudly instead of being ignored; the profiler's own fields (`runId`,
 * `requestedAt`, `reasons`) are accepted and only informative.
 */
export const runInputSchema = z
  .strictObject({
    /** Name of a configured table. */
    table: z.string().min(1, 'name one of the configured tables'),
    /** One partition path relative to the table root, e.g. `date=2024-01-15` ('' when unpartitioned). */
    partition: z.string().optional(),
    /** Several partitions: one child execution is started per partition. */
    partitions: z
      .array(z.string())
      .min(1, 'list at least one partition')
      .max(MAX_PARTITIONS_PER_REQUEST, `at most ${MAX_PARTITIONS_PER_REQUEST} partitions per request`)
      .optional(),
    /** `binpack` keeps row order; `sort` orders each output by `sortColumns`; `zorder` Z-orders by them. Default: the table's. */
    strategy: strategySchema.optional(),
    sortColumns: z.array(z.string().min(1)).min(1, 'name at least one column').optional(),
    /**
     * The planning choices `plan` and `compact` take too (targetFileSizeMB, minInputFiles, maxGroupMB), with their
     * limits and messages: defined once in planning-choices.ts.
     */
    ...planningChoiceFields(RUN_INPUT_CHOICE_NAMES),
    codec: codecSchema.optional(),
    /** DELTA_BINARY_PACKED for integer/timestamp columns where smaller. Default: the table's, else what `readers` allow. */
    deltaEncoding: z.boolean().optional(),
    /** The reader families this run's outputs must be readable by. Default: the table's (undeclared: any reader). */
    readers: readersSchema.optional(),
    /** Column-chunk statistics, `all` or `auto` (see core/parquet/statistics-policy.ts). Default: the table's, else all. */
    statistics: statisticsModeSchema.optional(),
    /** `exact` or `logical` (legacy physical forms written in the standard ones). Default: the table's, else exact. */
    schemaFidelity: schemaFidelitySchema.optional(),
    /**
     * The run inputs each format owns, refused on a table of any other format (its planner's options, a partition
     * filter, …): declared in the format's folder (`settings.run.input`), merged by the registry.
     */
    ...FORMAT_RUN_INPUT_FIELDS,
    /**
     * An operator's partition rewrite (cast, rename, drop, added columns): the very JSON `lake-compactor rewrite
     * --transform <file.json>` reads, parsed by the same schema. The run rewrites every file of `partition` through
     * it, packed in key order into outputs of the target size (`targetFileSizeMB`), each verified against its inputs
     * re-derived (see core/transform/).
     */
    transform: transformSpecSchema.optional(),
    /** The columns a `drop` step of `transform` may drop (each drop needs its column here; `--confirm-drop`). */
    confirmDrop: z
      .array(z.string().min(1))
      .min(1, 'list the dropped columns, or leave confirmDrop out')
      .optional(),
    /** Plan and estimate only: nothing is written but the plan (a rewrite: nothing at all; its output shows the new schema and first rows). */
    dryRun: z.boolean().optional(),
    /** Skip the quiet-partition wait. Never breaks another run's lease. */
    force: z.boolean().optional(),
    /**
     * Only settle: finish (roll forward or back) every group earlier runs left unsettled in the partition,
     * then release it — also from `needs-attention`, once the cause (e.g. a denied permission) is fixed.
     * Plans nothing.
     */
    settle: z.boolean().optional(),
    /** Minutes without writes before compacting. Default: the table policy's. */
    quietMinutes: z
      .number()
      .nonnegative()
      .max(24 * 60)
      .optional(),
    /** The profiler's schedule generation of the partition (set by the profiler and the sweep). */
    generation: z.number().int().positive().optional(),
    trigger: z.enum(TRIGGERS).optional(),
    runId: z.string().optional(),
    requestedAt: z.string().optional(),
    reasons: z.array(z.string()).optional(),
  })
  .superRefine((input, ctx) => {
    if (input.partition !== undefined && input.partitions !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['partition'],
        message: 'give exactly one of `partition` (one partition) or `partitions` (several)',
      });
    }
    if (input.partition === undefined && input.partitions === undefined && input.where === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['partition'],
        message:
          'give `partition` (one partition) or `partitions` (several); on a table whose format takes a `where` filter, `where` alone compacts every partition it passes',
      });
    }
    if (input.strategy === 'sort' && input.sortColumns === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['sortColumns'],
        message: 'strategy "sort" needs sortColumns, e.g. ["event_time"]',
      });
    }
    if (input.strategy === 'zorder' && (input.sortColumns === undefined || input.sortColumns.length < 2)) {
      ctx.addIssue({
        code: 'custom',
        path: ['sortColumns'],
        message:
          'strategy "zorder" needs at least two sortColumns to interleave, e.g. ["user_id", "event_time"] (for one column use strategy "sort")',
      });
    }
    if (input.strategy === 'binpack' && input.sortColumns !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['sortColumns'],
        message:
          'sortColumns only apply with strategy "sort" or "zorder"; remove them or set strategy to "sort" or "zorder"',
      });
    }
    checkPlanningChoices(input, ctx, RUN_INPUT_CHOICE_NAMES);
    if (input.settle === true && input.dryRun === true) {
      ctx.addIssue({
        code: 'custom',
        path: ['settle'],
        message:
          'settle changes the partition (it finishes earlier runs) and cannot be a dry run; drop dryRun (status shows what is unsettled)',
      });
    }
    transformProblems(input).forEach((issue) => {
      ctx.addIssue({ code: 'custom', ...issue });
    });
    if (input.partitions !== undefined && input.generation !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['generation'],
        message: 'generation belongs to one scheduled partition; use `partition`, not `partitions`',
      });
    }
  });

export type RunInput = z.infer<typeof runInputSchema>;

/**
 * What a request with a `transform` may not combine it with, and its drop confirmations: a rewrite is an operator's
 * job on one partition, in input order (whole inputs packed into outputs), so several partitions, a sort, a settle or a schema
 * union are refused rather than ignored; and each `drop` needs its column in `confirmDrop`, checked here, before the
 * partition is read (its columns are checked by the plan step, before anything is written).
 */
function transformProblems(input: {
  readonly transform?: z.infer<typeof transformSpecSchema>;
  readonly confirmDrop?: readonly string[];
  readonly partition?: string;
  readonly partitions?: readonly string[];
  readonly strategy?: Strategy;
  readonly sortColumns?: readonly string[];
  readonly settle?: boolean;
  readonly schemaEvolution?: unknown;
}): { path: string[]; message: string }[] {
  if (input.transform === undefined)
    return input.confirmDrop === undefined
      ? []
      : [
          {
            path: ['confirmDrop'],
            message: 'confirmDrop confirms the drop steps of a `transform`; there is none',
          },
        ];
  const problems: { path: string[]; message: string }[] = [];
  if (input.partition === undefined)
    problems.push({
      path: ['partition'],
      message: 'a transform rewrites one partition: give `partition` (not `partitions` or a `where` filter)',
    });
  if ((input.strategy !== undefined && input.strategy !== 'binpack') || input.sortColumns !== undefined)
    problems.push({
      path: ['strategy'],
      message:
        "a transform keeps each file's rows in order (whole files packed into outputs); remove strategy and sortColumns",
    });
  if (input.settle === true)
    problems.push({ path: ['settle'], message: 'settle plans nothing; remove settle or transform' });
  if (input.schemaEvolution !== undefined)
    problems.push({
      path: ['schemaEvolution'],
      message:
        'a transform is planned against a partition of one schema; compact with schemaEvolution first, then rewrite',
    });
  const drops = dropConfirmationProblems(input.transform, input.confirmDrop ?? []);
  for (const column of drops.unconfirmed)
    problems.push({
      path: ['confirmDrop'],
      message: `the transform drops column ${column}, which loses its values; confirm with "confirmDrop": [${JSON.stringify(column)}]`,
    });
  for (const column of drops.stray)
    problems.push({ path: ['confirmDrop'], message: `the transform does not drop column ${column}` });
  return problems;
}

/**
 * Everything one partition run needs, decided once by {@link buildRunContext} (the validate step's, the
 * CLI's) and carried in the execution state. Derived from {@link runContextSchema}, which every handler
 * re-validates it with, so the type and the check cannot drift apart.
 */
export type RunContext = Readonly<z.output<typeof runContextSchema>>;

/** A child execution the validate step starts for one of several partitions. */
export interface ChildRun {
  readonly name: string;
  readonly partition: string;
  readonly input: RunInput;
}

export type NormalizedRun =
  | { readonly mode: 'single'; readonly run: RunContext }
  | { readonly mode: 'fanout'; readonly children: readonly ChildRun[] };

export interface NormalizeOptions {
  /** The execution's name (becomes the run id) and ARN. */
  readonly executionName: string;
  readonly executionArn?: string;
  /** When the execution started, epoch ms. */
  readonly startedAt: number;
  /** Buckets with versioning on: inputs are retired by delete (the old version stays until vacuum). */
  readonly versionedBuckets?: readonly string[];
  /** The deployment's work root (see workflow/layout.ts). @default DEFAULT_WORK_ROOT */
  readonly workRoot?: string;
}

/**
 * Validates `raw` against the schema and the configured tables and normalises it. A request for several
 * partitions becomes one child run each (deterministic names, so a retried validate starts the same
 * executions); one partition becomes a RunContext with every default resolved from the table config.
 *
 * @throws InvalidInputError listing every problem (unknown table → the configured table names).
 */
export function normalizeRunInput(
  raw: unknown,
  tables: readonly TableConfig[],
  options: NormalizeOptions,
): NormalizedRun {
  const parsed = runInputSchema.safeParse(raw);
  const issues = parsed.success
    ? []
    : parsed.error.issues.map((issue) => `${issue.path.join('.') || '(input)'}: ${issue.message}`);
  const tableName = parsed.success
    ? parsed.data.table
    : typeof (raw as { table?: unknown } | null)?.table === 'string'
      ? (raw as { table: string }).table
      : undefined;
  const table = tableName === undefined ? undefined : tables.find((t) => t.name === tableName);
  if (tableName !== undefined && table === undefined) {
    issues.push(
      `table: "${tableName}" is not configured; configured tables: ${tables.map((t) => `"${t.name}"`).join(', ') || '(none)'}`,
    );
  }
  if (table !== undefined && !isTableFormatName(table.format)) {
    issues.push(`table: "${table.name}": ${unsupportedFormatMessage(table.format)}`);
  }
  if (table !== undefined) {
    for (const field of FORMAT_RUN_INPUT_NAMES) {
      if ((raw as Record<string, unknown> | null)?.[field] === undefined) continue;
      const message = misplacedRunInputMessage(table, field);
      if (message !== undefined) issues.push(message);
    }
  }
  if (
    table !== undefined &&
    isTableFormatName(table.format) &&
    parsed.success &&
    parsed.data.transform !== undefined
  ) {
    // By capability, never by name: a format whose schema belongs to the table says what to run instead.
    const format = tableFormat(table.format);
    const capability = format.partitionRewrite;
    if (capability?.kind !== 'transform')
      issues.push(
        `transform: table "${table.name}" is a ${format.title} table, which a transform does not rewrite: ${capability?.advice ?? `the ${format.title} format has no partition rewrite`}`,
      );
  }
  if (table !== undefined && parsed.success) {
    const conflict = deltaReadersConflict(
      parsed.data.deltaEncoding ?? table.deltaEncoding,
      parsed.data.readers ?? table.readers,
    );
    if (conflict !== undefined) issues.push(`deltaEncoding: ${conflict}`);
  }
  if (table !== undefined && table.bucket === undefined) {
    issues.push(
      `table: "${table.name}" has no bucket in the configuration; set its bucketName in the construct props`,
    );
  }
  if (parsed.success && wherePartitionsWanted(parsed.data)) {
    // The validate step lists the partitions the filter passes first (see selectWherePartitions); an entry
    // point that cannot list them must not run the table root as if it were the one partition.
    issues.push(
      "where: a filter without `partition`/`partitions` needs the table listed first, which only the state machine's validate step does; list the partitions in `partitions`",
    );
  }
  const partitions = parsed.success ? (parsed.data.partitions ?? [parsed.data.partition ?? '']) : [];
  const normalized: string[] = [];
  if (table !== undefined) {
    partitions.forEach((p, i) => {
      const result = normalizePartition(p, table);
      const path = parsed.success && parsed.data.partitions !== undefined ? `partitions.${i}` : 'partition';
      if (typeof result === 'string') normalized.push(result);
      else issues.push(`${path}: ${result.problem}`);
    });
    const seen = new Set<string>();
    for (const p of normalized) {
      if (seen.has(p)) issues.push(`partitions: "${p}" is listed twice; list each partition once`);
      seen.add(p);
    }
  }
  if (!parsed.success || table === undefined || issues.length > 0) {
    throw new InvalidInputError(
      'The compaction request is invalid; nothing was changed. Fix these fields (examples: events/workflow-*.json)',
      issues,
    );
  }
  const input = parsed.data;
  if (input.partitions !== undefined) {
    const { partitions: _all, ...rest } = input;
    return {
      mode: 'fanout',
      children: normalized.map((partition, index) => ({
        name: childExecutionName(options.executionName, partition, index),
        partition,
        input: { ...rest, partition, trigger: input.trigger ?? 'operator' },
      })),
    };
  }
  const run = buildRunContext(
    { ...table, bucket: table.bucket as string },
    normalized[0] ?? '',
    input,
    options,
  );
  return { mode: 'single', run };
}

/** True when `input` names neither `partition` nor `partitions` but a `where` filter: its partitions are to be listed. */
export function wherePartitionsWanted(input: Pick<RunInput, 'partition' | 'partitions' | 'where'>): boolean {
  return input.partition === undefined && input.partitions === undefined && input.where !== undefined;
}

/**
 * The table whose partitions must be listed before `raw` can be normalized: a table whose format takes `where`, named by a request
 * with a `where` filter and no `partition`/`partitions` (see {@link selectWherePartitions}); undefined for every
 * other input, which {@link normalizeRunInput} checks as it is. Lets an entry point read storage only when needed.
 */
export function tableToListForWhere(raw: unknown, tables: readonly TableConfig[]): TableConfig | undefined {
  const parsed = runInputSchema.safeParse(raw);
  if (!parsed.success || !wherePartitionsWanted(parsed.data)) return undefined;
  const table = tables.find((t) => t.name === parsed.data.table);
  return table !== undefined && formatTakesRunInput(table.format, 'where') && table.bucket !== undefined
    ? table
    : undefined;
}

/**
 * An operator's `{ "table", "where" }` (no `partition`/`partitions`) as the request it means: `partitions` set to
 * every partition of the table's current snapshot whose values the filter passes, sorted, each child then run with
 * the filter too. Any other input is returned as it is, and so is one whose filter does not parse or whose table is
 * not of a format that takes `where`: {@link normalizeRunInput} reports those with every other problem.
 * @throws InvalidInputError when no partition passes (nothing to compact: a filter that selects nothing is
 *   likelier a mistake than a wish), or more than {@link MAX_PARTITIONS_PER_REQUEST} do (narrow it, or split it).
 */
export function selectWherePartitions(
  raw: unknown,
  table: Pick<TableConfig, 'name' | 'format'>,
  listed: readonly { readonly partition: string; readonly values: readonly PartitionValue[] }[],
): unknown {
  const parsed = runInputSchema.safeParse(raw);
  if (!parsed.success || !wherePartitionsWanted(parsed.data) || !formatTakesRunInput(table.format, 'where'))
    return raw;
  const where = parsed.data.where as string;
  // The table's format reads its own filter (the schema checked that it parses).
  const filter = formatPartitionFilter(table.format, where);
  if (filter === undefined) return raw;
  const passing = listed
    .filter((p) => filter.passes(p.values))
    .map((p) => p.partition)
    .sort();
  const examples = (list: readonly string[]) =>
    list.length === 0
      ? ''
      : ` (e.g. ${list
          .slice(0, 3)
          .map((p) => `"${p}"`)
          .join(', ')})`;
  if (passing.length === 0)
    throw new InvalidInputError(
      `No partition of table "${table.name}" passes where ${where}; nothing was changed. Its current snapshot has ${listed.length} partition(s)${examples(listed.map((p) => p.partition))}: check the partition field names and values`,
    );
  if (passing.length > MAX_PARTITIONS_PER_REQUEST)
    throw new InvalidInputError(
      `where ${where} passes ${passing.length} partitions of table "${table.name}", more than the ${MAX_PARTITIONS_PER_REQUEST} one request starts; nothing was changed. Narrow the filter, or start one request per range`,
    );
  return { ...(raw as Record<string, unknown>), partitions: passing };
}

/** What a run reads of its table: where it lies and the table's own defaults (a configured table, or the CLI's location). */
export type RunTable = Pick<
  TableConfig,
  | 'name'
  | 'prefix'
  | 'codec'
  | 'deltaEncoding'
  | 'schemaFidelity'
  | 'encodeWorkers'
  | 'sortColumns'
  | 'zOrderColumns'
  | 'targetFileSizeMB'
  | 'policy'
> &
  Partial<Pick<TableConfig, 'readers' | 'statistics' | 'keepStatistics' | 'partitionColumns'>> & {
    readonly bucket: string;
    readonly format?: TableFormatName;
  } & TableFormatSettings;

/** What one request chooses for its run; whatever it leaves out is the table's choice, else the default. */
export type RunChoices = Pick<
  RunInput,
  | 'strategy'
  | 'sortColumns'
  | 'targetFileSizeMB'
  | 'codec'
  | 'deltaEncoding'
  | 'readers'
  | 'statistics'
  | 'schemaFidelity'
  | 'maxGroupMB'
  | 'minInputFiles'
  | 'dryRun'
  | 'force'
  | 'settle'
  | 'quietMinutes'
  | 'generation'
  | 'trigger'
  | 'rewriteDataFiles'
  | 'where'
  | 'schemaEvolution'
  | 'transform'
  | 'confirmDrop'
>;

/**
 * The one place a run's defaults are decided, for every way a run starts (the validate step of the state
 * machine, `lake-compactor compact`, `lake-compactor settle`): the request's choice, else the table's, else
 * the policy's or this function's default. `partition` must already be normalised (see
 * {@link normalizeRunInput}); nothing is validated here, so the caller decides what input it trusts.
 */
export function buildRunContext(
  table: RunTable,
  partition: string,
  choices: RunChoices,
  options: NormalizeOptions,
): RunContext {
  const policy = resolveTablePolicy(table);
  const strategy =
    choices.strategy ??
    (table.zOrderColumns !== undefined ? 'zorder' : table.sortColumns !== undefined ? 'sort' : 'binpack');
  const sortColumns =
    strategy === 'sort'
      ? (choices.sortColumns ?? table.sortColumns)
      : strategy === 'zorder'
        ? (choices.sortColumns ?? table.zOrderColumns)
        : undefined;
  const targetMiB = choices.targetFileSizeMB ?? table.targetFileSizeMB;
  const format = table.format ?? DEFAULT_TABLE_FORMAT;
  const statistics: StatisticsMode = choices.statistics ?? table.statistics ?? DEFAULT_STATISTICS_MODE;
  // The format's own run inputs over its table settings (its planner's options, its partition filter).
  const formatContext = formatRunContext(format, table, choices);
  return {
    runId: options.executionName,
    ...(options.executionArn === undefined ? {} : { executionArn: options.executionArn }),
    table: table.name,
    format,
    bucket: table.bucket,
    tableRoot: table.prefix,
    partition,
    partitionDir: partitionDir(table.prefix, partition),
    strategy,
    ...(sortColumns === undefined ? {} : { sortColumns }),
    codec: choices.codec ?? table.codec ?? DEFAULT_CODEC,
    ...(resolveDeltaEncoding(
      choices.deltaEncoding ?? table.deltaEncoding,
      choices.readers ?? table.readers,
    ) && { deltaEncoding: true }),
    ...(statistics === 'auto' && {
      statistics,
      keepStatistics: [...new Set([...statisticsKeepColumns(table), ...(sortColumns ?? [])])],
    }),
    ...((choices.schemaFidelity ?? table.schemaFidelity) === 'logical' && {
      schemaFidelity: 'logical' as const,
    }),
    ...(table.encodeWorkers !== undefined && { encodeWorkers: table.encodeWorkers }),
    targetFileSizeBytes: targetMiB === undefined ? policy.targetFileSizeBytes : Math.round(targetMiB * MiB),
    minInputFiles: choices.minInputFiles ?? policy.minInputFiles,
    maxGroupBytes: Math.round((choices.maxGroupMB ?? DEFAULT_MAX_GROUP_MIB) * MiB),
    smallFileRatio: policy.smallFileSizeRatio,
    ...formatContext,
    dryRun: choices.dryRun ?? false,
    force: choices.force ?? false,
    ...(choices.settle === true && { settle: true }),
    quietMinutes: choices.quietMinutes ?? policy.quietMinutes,
    ...(choices.generation === undefined ? {} : { generation: choices.generation }),
    trigger: choices.trigger ?? (choices.generation !== undefined ? 'profiler' : 'operator'),
    ...(choices.transform === undefined
      ? {}
      : { transform: { spec: choices.transform, confirmDrop: choices.confirmDrop ?? [] } }),
    // A rewrite's outputs hold transformed rows, from which no input can be rebuilt: trash, unless versioned.
    retireMode: retireModeOf(
      (options.versionedBuckets ?? []).includes(table.bucket),
      format,
      choices.transform === undefined ? strategy : 'transform',
    ),
    startedAt: options.startedAt,
    workRoot: options.workRoot ?? DEFAULT_WORK_ROOT,
  };
}

/**
 * How a run's groups retire their inputs. A versioned bucket deletes (free; the old version is the undo). An
 * unversioned one deletes too when the rewrite keeps row order (bin-pack) and the table's format can undo that
 * (`rebuildsRetiredInputs`: Hive-style Parquet): an undo, which
 * almost never runs, rebuilds retired inputs from the outputs' rows instead of a trash copy made of every input
 * up front (a COPY each, ≈ $19/TB at 257 KB files). A sort or z-order scatters an input's rows, and a transform
 * changes them (no input can be rebuilt from its outputs), so those still copy to trash; the compact and commit steps fall back to trash for any group they cannot cover.
 */
export function retireModeOf(
  versioned: boolean,
  format: TableFormatName,
  strategy: Strategy | 'transform',
): RetireMode {
  if (versioned) return 'delete-versioned';
  return tableFormat(format).rebuildsRetiredInputs === true && strategy === 'binpack'
    ? 'delete-rebuild'
    : 'trash';
}

/** The key prefix of a partition's directory, ending with `/` ('' for the root of a bucket-root table). */
export function partitionDir(tableRoot: string, partition: string): string {
  const parts = [tableRoot, partition].filter((p) => p !== '');
  return parts.length === 0 ? '' : `${parts.join('/')}/`;
}

/**
 * Accepts `date=2024-01-15`, `/date=2024-01-15/` or the full key prefix `events/date=2024-01-15/`, and
 * checks it against the table's partition columns (in order, `name=value` each).
 */
function normalizePartition(raw: string, table: TableConfig): string | { problem: string } {
  let p = raw.trim().replace(/^\/+/, '').replace(/\/+$/, '');
  if (table.prefix !== '' && (p === table.prefix || p.startsWith(`${table.prefix}/`))) {
    p = p.slice(table.prefix.length).replace(/^\/+/, '');
  }
  const expected =
    table.partitionColumns.length === 0
      ? 'a directory path below the table root'
      : `"${table.partitionColumns.map((c) => `${c}=<value>`).join('/')}"`;
  if (p === '') {
    return table.partitionColumns.length === 0
      ? ''
      : { problem: `the table is partitioned by ${table.partitionColumns.join(', ')}; expected ${expected}` };
  }
  const segments = p.split('/');
  if (segments.some((s) => s === '' || s === '.' || s === '..' || s.startsWith('_') || s.startsWith('.'))) {
    return { problem: `"${raw}" has an empty, relative or hidden segment; expected ${expected}` };
  }
  if (table.partitionColumns.length > 0) {
    const names = segments.map((s) => (s.includes('=') ? s.slice(0, s.indexOf('=')) : undefined));
    if (
      names.length !== table.partitionColumns.length ||
      names.some((n, i) => n !== table.partitionColumns[i])
    ) {
      return { problem: `"${raw}" does not match the table's partition columns; expected ${expected}` };
    }
  }
  return p;
}

/**
 * Run ids of `lake-compactor compact`: `cli-<UTC yyyyMMddTHHmmssZ>-<8 hex>-p<index>-<8 hex>` (a
 * {@link childExecutionName} of `cli-<time>-<8 hex>`). Their journal lives in the store itself
 * (the work root's `journal/`, see adapters/store-journal.ts), not in DynamoDB, so vacuum looks their
 * entries up there — and judges by age only the runs of versions that kept it in memory. State-machine runs
 * (`<table>-<12 hex>-g<n>`, or a console name) never match this exact shape, nor do `compact --state-table` runs
 * (`cli-deployed-…`), which journal in the deployment's state table.
 */
export const CLI_RUN_ID = /^cli-\d{8}T\d{6}Z-[0-9a-f]{8}-p\d+-[0-9a-f]{8}$/;

/**
 * A child execution's name: the parent's name, the partition's index and a hash of the partition,
 * ≤ 80 characters of `[A-Za-z0-9_-]` — the same request always names the same children.
 */
export function childExecutionName(parent: string, partition: string, index: number): string {
  const hash = createHash('sha256').update(partition).digest('hex').slice(0, 8);
  const suffix = `-p${index}-${hash}`;
  return `${parent.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 80 - suffix.length)}${suffix}`;
}

/** A {@link RunContext} as it comes back from the execution state (every handler re-validates it). */
export const runContextSchema = z.object({
  /** The execution name: journal entries, staging, plan and output keys are named after it. */
  runId: z.string().min(1),
  executionArn: z.string().optional(),
  table: z.string().min(1),
  bucket: z.string().min(1),
  /** Table root without trailing slash ('' = bucket root). */
  tableRoot: z.string(),
  /** Partition path relative to the table root ('' when unpartitioned). */
  partition: z.string(),
  /** Key prefix of the partition's directory, ending with `/` (or '' for an unpartitioned bucket-root table). */
  partitionDir: z.string(),
  strategy: strategySchema,
  sortColumns: z.array(z.string()).readonly().optional(),
  codec: codecSchema,
  /** Integer/date/time/timestamp columns may be written DELTA_BINARY_PACKED (absent: off); resolved from `readers`. */
  deltaEncoding: z.boolean().optional(),
  /** `auto`: statistics are dropped where the sample shows min/max cannot prune (absent: all columns keep them). */
  statistics: statisticsModeSchema.optional(),
  /** Under `auto`, columns that keep statistics whatever the sample says (partition, sort, Z-order, listed). */
  keepStatistics: z.array(z.string()).readonly().optional(),
  /** `logical`: legacy physical forms are written in the standard ones (absent: exact). */
  schemaFidelity: schemaFidelitySchema.optional(),
  /** The table's `encodeWorkers` (absent: the compact function's default, by its memory). */
  encodeWorkers: z.number().int().min(1).max(16).optional(),
  targetFileSizeBytes: z.number().int().positive(),
  minInputFiles: z.number().int().min(2),
  /** Cap of one group's input bytes (one compact Lambda's work). */
  maxGroupBytes: z.number().int().positive(),
  smallFileRatio: z.number().gt(0).max(1),
  /** What the table's format resolved of its own run inputs (its `settings.run.context`), for its plan to read. */
  ...FORMAT_RUN_CONTEXT_FIELDS,
  dryRun: z.boolean(),
  force: z.boolean(),
  /** Settle the partition's unsettled groups and release it; plan nothing (absent: a compaction run). */
  settle: z.boolean().optional(),
  /** An operator's partition rewrite: the plan step plans it, compact applies it, verify re-derives it (absent: a compaction). */
  transform: runTransformSchema.optional(),
  quietMinutes: z.number().nonnegative(),
  generation: z.number().int().positive().optional(),
  trigger: z.enum(TRIGGERS),
  retireMode: z.enum(RETIRE_MODES),
  /** When the execution started, epoch ms (for the run's duration). */
  startedAt: z.number(),
  /**
   * The deployment's work root, where the run's plan, items, staging and trash are kept (see
   * workflow/layout.ts). Executions started before it was recorded ran (and keep running) under the default.
   */
  workRoot: workRootSchema.default(DEFAULT_WORK_ROOT),
  /**
   * The table's format, decided once when the run starts: every step commits and settles through it, even if
   * the configuration changes while the run is in flight. Runs started before it was recorded are Hive Parquet.
   */
  format: tableFormatNameSchema.default(DEFAULT_TABLE_FORMAT),
});

/**
 * Parses a step's event with `schema`; a malformed event means the state machine and the handler disagree.
 * @throws InvalidInputError listing every problem.
 */
export function parseStepEvent<S extends z.ZodType>(schema: S, event: unknown, step: string): z.infer<S> {
  const result = schema.safeParse(event);
  if (!result.success) {
    throw new InvalidInputError(
      `The ${step} step received a malformed event; the state machine definition and the handler disagree — redeploy both together`,
      result.error.issues.map((issue) => `${issue.path.join('.') || '(event)'}: ${issue.message}`),
    );
  }
  return result.data;
}
