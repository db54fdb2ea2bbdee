// The tables lake-compactor manages: a validated config (all problems reported at once) and the lookup
// from an object key to the one table that owns it (longest prefix; ambiguous layouts are refused).
import { z } from 'zod';
import { codecSchema, schemaFidelitySchema } from '../ports/parquet-engine.js';
import { InvalidInputError } from './errors.js';
import {
  DEFAULT_TABLE_FORMAT,
  FORMAT_TABLE_FIELDS,
  formatSettingsIssues,
  formatSettingsOf,
  isTableFormatName,
  type TableFormatSettings,
  tableFormat,
  tableFormatNameSchema,
} from './formats/index.js';
import { statisticsModeSchema } from './parquet/statistics-policy.js';
import { normalizeRoot, relativeToRoot } from './partition.js';
import {
  DEFAULT_POLICY,
  PARTITION_DATE_FORMATS,
  type Policy,
  policyOverridesSchema,
  resolvePolicy,
} from './policy.js';
import { deltaReadersConflict, type Reader, readersSchema } from './readers.js';
import { DEFAULT_WORK_ROOT } from './workflow/layout.js';

const MiB = 1024 * 1024;

/**
 * Why a table root is refused, or undefined. Readers (Spark, Hive, Trino, Athena) and the compactor itself
 * skip folders whose name starts with `_` or `.`, so a table under one would be invisible to its readers
 * and never compacted; every work root starts with such a folder (plans, staging, trash, journal), which
 * maintenance treats as a deployment's own — `_lake-compactor/`, the default one, is named as such.
 */
export function tableRootProblem(root: string): string | undefined {
  const segments = root === '' ? [] : root.split('/');
  if (segments[0] === normalizeRoot(DEFAULT_WORK_ROOT)) {
    return `"${root}" lies inside the work root ${DEFAULT_WORK_ROOT}, where the compactor keeps its plans, staging and trash; put the table elsewhere`;
  }
  const hidden = segments.find((segment) => segment.startsWith('_') || segment.startsWith('.'));
  if (hidden !== undefined) {
    return `"${root}" has the folder "${hidden}", and readers and the compactor skip folders starting with "_" or "."; use a root without such a folder`;
  }
  if (segments.some((segment) => segment === '')) {
    return `"${root}" has an empty folder ("//"); write the root with single slashes`;
  }
  return undefined;
}

/**
 * The fields a table has wherever it is configured: in the TABLES config the functions parse, and in the
 * construct's props (`LakeCompactorTable`, validated at synth with these same schemas).
 */
export const tableFieldSchemas = {
  /** Unique name, used in logs, metrics, state machine inputs and DynamoDB keys. */
  name: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, 'use letters, digits, _ . - (start with a letter or digit)'),
  /** Key prefix of the table root, without bucket; leading/trailing `/` are dropped; '' = bucket root. */
  prefix: z
    .string()
    .refine((p) => !/^[a-z0-9]+:\/\//i.test(p), 'a key prefix, not a URI: put the bucket in `bucket`')
    .transform((p) => normalizeRoot(p.replace(/^\/+/, '')))
    .superRefine((root, ctx) => {
      const problem = tableRootProblem(root);
      if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
    }),
  /** The table's format: one of the implemented formats of the registry (core/formats/index.ts). */
  format: tableFormatNameSchema.default(DEFAULT_TABLE_FORMAT),
  /** Hive partition columns in path order; [] for an unpartitioned table. */
  partitionColumns: z.array(z.string().min(1)).default([]),
  /** Partition column holding the date (for `year/month/day`: the three columns, comma-separated). */
  dateColumn: z.string().min(1).optional(),
  dateFormat: z.enum(PARTITION_DATE_FORMATS).optional(),
  /** Target output size in MiB (1024² bytes, like `target-file-size-bytes`' 512 MB default of 536870912). */
  targetFileSizeMB: z
    .number()
    .positive()
    .max(5 * 1024)
    .optional(),
  /** Output codec; ZSTD when omitted. */
  codec: codecSchema.optional(),
  /**
   * Let integer/date/time/timestamp columns use DELTA_BINARY_PACKED where smaller (readers must support it). When
   * omitted, `readers` decides: on iff they are declared and every one reads it (core/readers.ts); else off.
   */
  deltaEncoding: z.boolean().optional(),
  /**
   * The reader families the table must stay readable by (`spark-3.3`, `trino`, `athena-v3`, `duckdb`, …; see
   * READERS in core/readers.ts). Undeclared: any reader, so the writer uses only what every reader reads.
   */
  readers: readersSchema.optional(),
  /**
   * Column-chunk statistics: `all` (default) on every column; `auto` drops them on string columns whose sampled
   * values are nearly all distinct and in no order, where min/max cannot prune (core/parquet/statistics-policy.ts).
   */
  statistics: statisticsModeSchema.optional(),
  /** Columns that keep statistics under `auto` whatever the sample says (partition, sort and Z-order columns always do). */
  keepStatistics: z.array(z.string().min(1)).optional(),
  /**
   * `exact` (default): outputs keep the inputs' Parquet schema exactly, and inputs the writer cannot reproduce
   * are refused; `logical`: legacy forms (INT96, BYTE_ARRAY/FIXED decimals, 2-level lists, MAP_KEY_VALUE)
   * are written in the standard ones, values unchanged.
   */
  schemaFidelity: schemaFidelitySchema.optional(),
  /**
   * Worker threads that encode a group's outputs in parallel. Default: the compact function's vCPUs (two from
   * 2,654 MB, so at the 3,008 MB default). Set 1 to keep encoding on one thread, or more for a function with the
   * cores; never more than the function's cores and memory hold (256 MB per worker within half of it).
   */
  encodeWorkers: z.number().int().min(1).max(16).optional(),
  /** Sort outputs by these columns; input order is kept when omitted. */
  sortColumns: z.array(z.string().min(1)).min(1).optional(),
  /** Z-order outputs by these columns (at least two; OPTIMIZE's ZORDER BY); not together with sortColumns. */
  zOrderColumns: z
    .array(z.string().min(1))
    .min(2, 'Z-order needs at least two columns (for one, use sortColumns)')
    .optional(),
  /** Per-table overrides of the trigger policy. */
  policy: policyOverridesSchema.optional(),
  /**
   * The settings each format owns (`deltaLogStore`, `catalog`, `rewriteDataFiles`, …), declared
   * in the format's folder (its `settings.tableFields`) and merged by the registry; each is refused on a table of
   * another format (see `checkTableFields`).
   */
  ...FORMAT_TABLE_FIELDS,
};

/** The parsed table fields the cross-field rules read. */
type TableFields = TableFormatSettings & {
  readonly format?: string | undefined;
  readonly dateColumn?: string | undefined;
  readonly dateFormat?: string | undefined;
  readonly partitionColumns: readonly string[];
  readonly sortColumns?: readonly string[] | undefined;
  readonly zOrderColumns?: readonly string[] | undefined;
  readonly targetFileSizeMB?: number | undefined;
  readonly policy?: { readonly targetFileSizeBytes?: number | undefined } | undefined;
  readonly deltaEncoding?: boolean | undefined;
  readonly readers?: readonly Reader[] | undefined;
};

/** Rules between one table's fields (date column and format, partition columns, target size). */
export function checkTableFields(table: TableFields, ctx: z.RefinementCtx): void {
  // Each format's own settings: refused on another format's table, checked by the format on its own (e.g. a table
  // must declare its commit coordination).
  for (const { path, message } of formatSettingsIssues(table)) {
    ctx.addIssue({ code: 'custom', path: [path], message });
  }
  const conflict = deltaReadersConflict(table.deltaEncoding, table.readers);
  if (conflict !== undefined) ctx.addIssue({ code: 'custom', path: ['deltaEncoding'], message: conflict });
  if (table.sortColumns !== undefined && table.zOrderColumns !== undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['zOrderColumns'],
      message: 'give sortColumns (a sort) or zOrderColumns (a Z-order), not both',
    });
  }
  if (table.dateColumn !== undefined && table.dateFormat === undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['dateFormat'],
      message: 'dateColumn is set, so dateFormat is required',
    });
  }
  if (
    table.dateFormat !== undefined &&
    table.dateFormat !== 'year/month/day' &&
    table.dateColumn === undefined
  ) {
    ctx.addIssue({
      code: 'custom',
      path: ['dateColumn'],
      message: `dateFormat ${table.dateFormat} needs dateColumn`,
    });
  }
  const dateColumns =
    table.dateFormat === 'year/month/day'
      ? (table.dateColumn ?? 'year,month,day').split(',').map((c) => c.trim())
      : table.dateColumn !== undefined
        ? [table.dateColumn]
        : [];
  for (const column of dateColumns) {
    if (!table.partitionColumns.includes(column)) {
      ctx.addIssue({
        code: 'custom',
        path: ['dateColumn'],
        message: `date column "${column}" is not one of partitionColumns [${table.partitionColumns.join(', ')}]`,
      });
    }
  }
  if (new Set(table.partitionColumns).size !== table.partitionColumns.length) {
    ctx.addIssue({
      code: 'custom',
      path: ['partitionColumns'],
      message: 'a partition column is listed twice',
    });
  }
  if (table.targetFileSizeMB !== undefined && table.policy?.targetFileSizeBytes !== undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['policy', 'targetFileSizeBytes'],
      message: 'set the target once: either targetFileSizeMB or policy.targetFileSizeBytes',
    });
  }
}

/** One managed table. Unknown keys are refused so a typo (`partitionColumn`) does not pass silently. */
export const tableConfigSchema = z
  .strictObject({
    ...tableFieldSchemas,
    /** The bucket; omitted means "the deployment's data bucket" (a table then matches any bucket). */
    bucket: z.string().min(3).optional(),
  })
  .superRefine(checkTableFields);

export type TableConfig = z.output<typeof tableConfigSchema>;
export type TableConfigInput = z.input<typeof tableConfigSchema>;

/**
 * Parses the table list (a JSON string, e.g. the TABLES variable, or an already-parsed value). Every
 * problem — per-field ones with their path, duplicate names, identical or nested roots — is
 * collected into one error, so a config with three mistakes takes one deploy to fix, not three.
 * @throws InvalidInputError listing every issue as `path: message`.
 */
export function parseTableConfigs(json: unknown): TableConfig[] {
  let value = json;
  if (typeof json === 'string') {
    try {
      value = JSON.parse(json);
    } catch (cause) {
      throw new InvalidInputError(
        `The table configs are not valid JSON (${String(cause)}); fix the TABLES setting`,
      );
    }
  }
  const result = z.array(tableConfigSchema).safeParse(value);
  if (!result.success) {
    throw new InvalidInputError(
      'The table configs are invalid; fix these entries',
      result.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`),
    );
  }
  const tables = result.data;
  const issues = crossTableIssues(tables).map((i) => `${i.index}.${i.field}: ${i.message}`);
  if (issues.length > 0) throw new InvalidInputError('The table configs conflict; fix these entries', issues);
  return tables;
}

/** A conflict between two entries of a table list: the later entry's index, its field, and why. */
export interface CrossTableIssue {
  readonly index: number;
  readonly field: 'name' | 'prefix';
  readonly message: string;
}

/**
 * Overlap rules. Names are unique. Two tables in the same bucket may not share a root (they would own the
 * same keys), and no root may lie inside another table's root: the outer table's listings (inventory,
 * reconcile, vacuum, tiering) would take the inner table's files for its own partitions, and nothing may
 * nest inside a table whose format's log or metadata owns every file under its root. A table without bucket counts as
 * being in every bucket (but may share its root with a table that names its bucket, which wins its keys).
 */
export function crossTableIssues(
  tables: readonly (Pick<TableConfig, 'name' | 'prefix' | 'format'> & { readonly bucket?: string })[],
): CrossTableIssue[] {
  const issues: CrossTableIssue[] = [];
  tables.forEach((table, i) => {
    tables.forEach((other, j) => {
      if (j <= i) return;
      if (table.name === other.name) {
        issues.push({ index: j, field: 'name', message: `"${other.name}" is also the name of entry ${i}` });
      }
      const sameBucket =
        table.bucket === undefined || other.bucket === undefined || table.bucket === other.bucket;
      if (!sameBucket) return;
      if (table.prefix === other.prefix && table.bucket === other.bucket) {
        issues.push({
          index: j,
          field: 'prefix',
          message: `"${other.prefix}" is also the root of table "${table.name}" (entry ${i})`,
        });
        return;
      }
      for (const [outer, inner, innerIndex] of [
        [table, other, j],
        [other, table, i],
      ] as const) {
        if (!isUnder(inner.prefix, outer.prefix)) continue;
        const owning = tableFormat(outer.format);
        // Equal roots here: one table names no bucket, and the one naming it wins its keys.
        if (inner.prefix === outer.prefix && !owning.ownsEverythingUnderRoot) continue;
        issues.push({
          index: innerIndex,
          field: 'prefix',
          message: owning.ownsEverythingUnderRoot
            ? `"${inner.prefix}" lies inside ${owning.title} table "${outer.name}", whose log or metadata owns every file under "${outer.prefix}"`
            : `"${inner.prefix}" lies inside table "${outer.name}" (root "${outer.prefix}"), whose listings would take its files for partitions of "${outer.name}"; give each table its own root`,
        });
      }
    });
  });
  return issues;
}

/** True when `inner` is `outer` or below it, per path segment. */
function isUnder(inner: string, outer: string): boolean {
  return inner === outer || relativeToRoot(inner, outer) !== undefined;
}

/**
 * The table that owns `key` in `bucket`: among tables in that bucket (or without bucket) whose root
 * contains the key (per path segment), the longest root wins; on equal roots a table naming the bucket
 * beats one that does not. Undefined when no table claims the key.
 */
export function findTableForKey(
  tables: readonly TableConfig[],
  bucket: string,
  key: string,
): TableConfig | undefined {
  let best: TableConfig | undefined;
  for (const table of tables) {
    if (table.bucket !== undefined && table.bucket !== bucket) continue;
    const relative = relativeToRoot(key, table.prefix);
    if (relative === undefined || relative === '') continue;
    if (
      best === undefined ||
      table.prefix.length > best.prefix.length ||
      (table.prefix.length === best.prefix.length && best.bucket === undefined && table.bucket !== undefined)
    ) {
      best = table;
    }
  }
  return best;
}

/**
 * The table's effective trigger policy: defaults, then `targetFileSizeMB`, then `policy` overrides; and, when the
 * table's format plans by rules of its own (e.g. `rewriteDataFiles`), that format's trigger rule, which then
 * replaces the policy's size checks (see `decide`), so the trigger and the plan agree on what is worth a run.
 * @throws InvalidInputError when the merged policy is invalid.
 */
export function resolveTablePolicy(
  table: Pick<TableConfig, 'targetFileSizeMB' | 'policy'> &
    Partial<Pick<TableConfig, 'format'>> &
    TableFormatSettings,
  defaults: Policy = DEFAULT_POLICY,
): Policy {
  const target =
    table.targetFileSizeMB === undefined
      ? {}
      : { targetFileSizeBytes: Math.round(table.targetFileSizeMB * MiB) };
  const policy = resolvePolicy(defaults, { ...target, ...table.policy });
  // A table of a format this build does not implement has no rule: it is refused where it would be profiled,
  // compacted or vacuumed (the profiler and the sweep skip it and say why), not here, so one such table does not
  // stop every other table's trigger.
  const format = table.format ?? DEFAULT_TABLE_FORMAT;
  const registered = isTableFormatName(format) ? tableFormat(format) : undefined;
  const formatRule = registered?.triggerRule?.(formatSettingsOf(registered, table), target);
  return formatRule === undefined ? policy : { ...policy, formatRule };
}
