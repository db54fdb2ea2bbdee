// The trigger policy: decides from a partition's counters whether to compact it now, always with one
// reason per check (numbers included), and says when to come back if only time stands in the way.
import { z } from 'zod';
import { InvalidInputError } from './errors.js';
import type { PartitionValue } from './partition.js';
import { formatBytes, isSmallFile } from './stats.js';

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

/**
 * Policy fields without defaults: the shape of a per-table override (every field optional). Kept apart
 * from the defaults because zod applies `.default()` even inside `.partial()`, which would make every
 * override silently reset the fields it does not mention.
 */
const policyFields = {
  /** Small files needed before a run is worth its fixed cost (`min-input-files` of `rewrite_data_files`). */
  minInputFiles: z.number().int().min(2),
  /** Share of the partition's files that must be small (by count) — or the average must be small. */
  smallFileRatioThreshold: z.number().min(0).max(1),
  /** T; small = size < smallFileSizeRatio·T. */
  targetFileSizeBytes: z.number().int().positive(),
  smallFileSizeRatio: z.number().gt(0).max(1),
  /** Minutes without writes before compacting: never fight the live writer (hot-partition exclusion). */
  quietMinutes: z.number().nonnegative(),
  /** Minutes after a compaction before the next: a trickling writer must not cause a run per file. */
  cooldownMinutes: z.number().nonnegative(),
  /** Partitions older than this (by their date value) are left to tiering, not compacted. */
  lookbackDays: z.number().positive(),
  /** A partition date more than this far in the future is a writer or clock bug: not compacted. */
  futureToleranceDays: z.number().nonnegative(),
};

/** A complete policy. */
export const policySchema = z.strictObject(policyFields);

/**
 * A format's own answer to "which files are small" and "are there enough of them", so the trigger starts a run
 * exactly when the format's planner would plan something (e.g. `rewrite_data_files`' rules, see
 * the format's trigger-rule.ts). Supplied by the table's format from its config (`TableFormat.triggerRule`):
 * only the format knows its option names, so it also words the reason. Not configurable as such, hence not
 * part of the policy's schema.
 */
export interface FormatTriggerRule {
  /** A file is a candidate (counted as small) when its size is below this; undefined: every file is one. */
  readonly candidateBelowBytes: number | undefined;
  /**
   * Whether a partition's candidates (their number and bytes) would make the planner plan a group, with the
   * reason in the format's words: it replaces the policy's "small files ≥ minInputFiles" and ratio checks.
   */
  due(candidates: { readonly count: number; readonly bytes: number }): {
    readonly ok: boolean;
    readonly reason: string;
  };
}

/**
 * A complete policy; with a {@link FormatTriggerRule} when the table's format plans by its own rules, in which
 * case `minInputFiles`, `smallFileRatioThreshold`, `targetFileSizeBytes` and `smallFileSizeRatio` are not read.
 */
export type Policy = z.infer<typeof policySchema> & { readonly formatRule?: FormatTriggerRule };

/** Whether a file of `size` bytes counts as small (a candidate) under `policy`: the format's rule when it has one. */
export function isSmallUnderPolicy(size: number, policy: Policy): boolean {
  const rule = policy.formatRule;
  if (rule === undefined) return isSmallFile(size, policy.targetFileSizeBytes, policy.smallFileSizeRatio);
  return rule.candidateBelowBytes === undefined || size < rule.candidateBelowBytes;
}

/** A per-table override: any subset of the policy's fields; unknown fields are refused (typos). */
export const policyOverridesSchema = z.strictObject(policyFields).partial();
export type PolicyOverrides = z.infer<typeof policyOverridesSchema>;

/**
 * Defaults, and why:
 * - minInputFiles 5: `rewrite_data_files`' default; below it a run's fixed cost (Lambda start, LIST, commit) exceeds
 *   what merging saves.
 * - smallFileRatioThreshold 0.4: the design's "40% of the files are small".
 * - targetFileSizeBytes 128 MiB, smallFileSizeRatio 0.75: the planner's T and `rewrite_data_files`' min = 0.75·T, so
 *   the trigger and the planner agree on what "small" means.
 * - quietMinutes 15: micro-batch writers commit every 1–10 minutes; 15 minutes of silence means the
 *   batch is over, and waiting costs little since small files are a read-side problem.
 * - cooldownMinutes 360: at most four runs a day per partition, so a writer trickling a file every
 *   16 minutes costs four rewrites a day, not ninety.
 * - lookbackDays 30: older partitions are cold; rewriting them resets object age for lifecycle rules and
 *   tiering handles them instead.
 * - futureToleranceDays 1: time zones put "tomorrow's" partition up to a day ahead of UTC.
 */
export const DEFAULT_POLICY: Policy = Object.freeze({
  minInputFiles: 5,
  smallFileRatioThreshold: 0.4,
  targetFileSizeBytes: 128 * 1024 * 1024,
  smallFileSizeRatio: 0.75,
  quietMinutes: 15,
  cooldownMinutes: 360,
  lookbackDays: 30,
  futureToleranceDays: 1,
});

type DeepPartial<T> = { [K in keyof T]?: T[K] extends object ? DeepPartial<T[K]> : T[K] };

/**
 * Merges per-table overrides over defaults (deep for nested plain objects, arrays and scalars replace;
 * `undefined` leaves the default) and validates the result.
 * @throws InvalidInputError naming every bad field.
 */
export function resolvePolicy(
  defaults: Policy,
  overrides: DeepPartial<Omit<Policy, 'formatRule'>> | undefined = {},
): Policy {
  // The format's rule is not configuration: kept out of the schema's strict check, and carried over as it is.
  const { formatRule, ...base } = defaults;
  const merged = deepMerge(base, overrides ?? {});
  const result = policySchema.safeParse(merged);
  if (!result.success) {
    throw new InvalidInputError(
      'The compaction policy is invalid; fix the table config overrides',
      result.error.issues.map((issue) => `policy.${issue.path.join('.')}: ${issue.message}`),
    );
  }
  return formatRule === undefined ? result.data : { ...result.data, formatRule };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function deepMerge(base: unknown, override: unknown): unknown {
  if (!isPlainObject(base) || !isPlainObject(override)) return override === undefined ? base : override;
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(override)) {
    if (value !== undefined) out[key] = deepMerge(base[key], value);
  }
  return out;
}

/** The counters the profiler keeps per partition. Times are epoch ms. */
export interface PartitionState {
  readonly fileCount: number;
  readonly totalBytes: number;
  readonly smallFileCount: number;
  readonly smallFileBytes: number;
  /**
   * Files on which the table's format has its own table service due (a format's `CountedFile.serviceDue`, counted per
   * file by the profiler). When any is, the partition is due by that service's own trigger, which the format already
   * applied: the size checks (`minInputFiles`, the small-file share, or the format's rule) are not applied, since the
   * service rewrites those files whatever their number (a streaming table's one due file slice is two files).
   */
  readonly serviceDueFiles?: number;
  readonly lastWriteAt?: number;
  readonly lastCompactedAt?: number;
  /** The partition's date value (start of the day/hour), from `partitionDateFromValues`. */
  readonly partitionDate?: number;
  readonly state: 'idle' | 'scheduled' | 'compacting' | 'needs-attention';
}

export interface Decision {
  readonly compact: boolean;
  /** One line per check, in a fixed order, passed or not. */
  readonly reasons: readonly string[];
  /**
   * When only waiting stands in the way (quiet period and/or cooldown), the epoch ms at which the
   * decision would turn to compact if nothing else changes, so the sweep knows when to come back.
   */
  readonly eligibleAt?: number;
}

interface Check {
  readonly ok: boolean;
  readonly reason: string;
  /** For checks that pass by waiting: when they pass. */
  readonly dueAt?: number;
}

/**
 * Decides whether to compact `partition` at `now`. Compact only when every check passes:
 * state idle; small files ≥ minInputFiles; small-file ratio ≥ threshold OR average size < small
 * threshold; quiet for ≥ quietMinutes; cooldown passed; inside the look-back window (when the
 * partition has a date). All boundaries are inclusive on the passing side (exactly 5 files, exactly
 * 40%, exactly 15 minutes pass). A partition with no recorded write, compaction or date passes those
 * checks: the counters cannot prove it hot, recent or old.
 *
 * With a format rule (`policy.formatRule`, e.g. a table's `rewrite_data_files` options), the two
 * size checks are that rule's one check, worded by the format: the partition is due exactly when the format's
 * planner would plan a group of its small files; state, quiet window, cooldown and look-back are as above.
 * A partition with files on which the format's own table service is due (`serviceDueFiles`) passes the size checks
 * whatever its counts: that service's trigger already decided, and it rewrites those files however few they are.
 */
export function decide(partition: PartitionState, policy: Policy, now: number): Decision {
  const checks: Check[] = [];

  checks.push(
    partition.state === 'idle'
      ? { ok: true, reason: 'state idle' }
      : partition.state === 'needs-attention'
        ? {
            ok: false,
            reason:
              'state needs-attention: an earlier run could not be settled; fix the cause, then start a settle run',
          }
        : { ok: false, reason: `state ${partition.state}: a run is already queued or in progress` },
  );

  const serviceDue = partition.serviceDueFiles ?? 0;
  if (serviceDue > 0) {
    checks.push({
      ok: true,
      reason: `a table service of the table's format is due on ${serviceDue} file(s): size checks not applied (minInputFiles ${policy.minInputFiles})`,
    });
  } else if (policy.formatRule !== undefined) {
    checks.push(policy.formatRule.due({ count: partition.smallFileCount, bytes: partition.smallFileBytes }));
  } else {
    checks.push(...sizeChecks(partition, policy));
  }

  const quietMs = policy.quietMinutes * MINUTE;
  if (partition.lastWriteAt === undefined) {
    checks.push({ ok: true, reason: 'no write recorded: quiet' });
  } else {
    const quietFor = now - partition.lastWriteAt;
    const ok = quietFor >= quietMs;
    checks.push({
      ok,
      reason: `quiet for ${minutes(quietFor)} ${ok ? '≥' : '<'} ${policy.quietMinutes} min`,
      dueAt: partition.lastWriteAt + quietMs,
    });
  }

  const cooldownMs = policy.cooldownMinutes * MINUTE;
  if (partition.lastCompactedAt === undefined) {
    checks.push({ ok: true, reason: 'never compacted: no cooldown' });
  } else {
    const since = now - partition.lastCompactedAt;
    const ok = since >= cooldownMs;
    checks.push({
      ok,
      reason: `last compacted ${minutes(since)} ago ${ok ? '≥' : '<'} cooldown ${policy.cooldownMinutes} min`,
      dueAt: partition.lastCompactedAt + cooldownMs,
    });
  }

  if (partition.partitionDate === undefined) {
    checks.push({ ok: true, reason: 'no partition date: look-back not applied' });
  } else {
    const age = now - partition.partitionDate;
    if (age < -policy.futureToleranceDays * DAY) {
      checks.push({
        ok: false,
        reason: `partition date is ${days(-age)} days in the future (> ${policy.futureToleranceDays}): check the writer's clock or partition values`,
      });
    } else {
      const ok = age <= policy.lookbackDays * DAY;
      checks.push({
        ok,
        reason: `partition ${days(Math.max(0, age))} days old ${ok ? '≤' : '>'} look-back ${policy.lookbackDays} days`,
      });
    }
  }

  const failing = checks.filter((c) => !c.ok);
  const reasons = checks.map((c) => c.reason);
  if (failing.length === 0) return { compact: true, reasons };
  const onlyWaiting = failing.every((c) => c.dueAt !== undefined);
  if (!onlyWaiting) return { compact: false, reasons };
  return { compact: false, reasons, eligibleAt: Math.max(...failing.map((c) => c.dueAt ?? 0)) };
}

/** The policy's own size checks: enough small files, and a high enough share of them (or small files on average). */
function sizeChecks(partition: PartitionState, policy: Policy): Check[] {
  const smallThreshold = policy.smallFileSizeRatio * policy.targetFileSizeBytes;
  const enough = partition.smallFileCount >= policy.minInputFiles;
  const count: Check = {
    ok: enough,
    reason: `${partition.smallFileCount} small files ${enough ? '≥' : '<'} ${policy.minInputFiles}`,
  };

  // Division (not multiplication) so that e.g. 2/5 compares equal to the configured 0.4.
  const ratio = partition.fileCount === 0 ? 0 : partition.smallFileCount / partition.fileCount;
  const avg = partition.fileCount === 0 ? 0 : partition.totalBytes / partition.fileCount;
  const ratioOk = ratio >= policy.smallFileRatioThreshold;
  const avgOk = avg < smallThreshold;
  const ratioText = `small-file ratio ${percent(ratio)} ${ratioOk ? '≥' : '<'} ${percent(policy.smallFileRatioThreshold)}`;
  const avgText = `average size ${formatBytes(Math.round(avg))} ${avgOk ? '<' : '≥'} ${formatBytes(Math.round(smallThreshold))}`;
  return [
    count,
    { ok: ratioOk || avgOk, reason: `${ratioText} ${ratioOk || avgOk ? 'or' : 'and'} ${avgText}` },
  ];
}

function percent(ratio: number): string {
  return `${Math.round(ratio * 1000) / 10}%`;
}

/** Whole minutes, rounded down, so "14 min < 15 min" is never shown for 14:59 as "15 min < 15 min". */
function minutes(ms: number): string {
  return `${Math.floor(ms / MINUTE)} min`;
}

function days(ms: number): string {
  return String(Math.floor(ms / DAY));
}

/** Partition date layouts the look-back and tiering understand. */
export const PARTITION_DATE_FORMATS = [
  'yyyy-MM-dd',
  'yyyyMMdd',
  'yyyy-MM-dd-HH',
  'yyyyMMddHH',
  'yyyy-MM',
  'year/month/day',
] as const;
export type PartitionDateFormat = (typeof PARTITION_DATE_FORMATS)[number];

const SINGLE_COLUMN_PATTERNS: Record<Exclude<PartitionDateFormat, 'year/month/day'>, RegExp> = {
  'yyyy-MM-dd': /^(\d{4})-(\d{2})-(\d{2})$/,
  yyyyMMdd: /^(\d{4})(\d{2})(\d{2})$/,
  'yyyy-MM-dd-HH': /^(\d{4})-(\d{2})-(\d{2})-(\d{2})$/,
  yyyyMMddHH: /^(\d{4})(\d{2})(\d{2})(\d{2})$/,
  'yyyy-MM': /^(\d{4})-(\d{2})()$/,
};

/**
 * The partition's date as epoch ms UTC (start of the day, hour or month), or undefined when the column
 * is missing, null, or does not hold a real date in that format (2024-02-30 is not one).
 *
 * For `year/month/day`, `column` names the three Hive columns comma-separated (default
 * `year,month,day`); month and day may be unpadded (`month=1`), as Spark writes integer columns.
 */
export function partitionDateFromValues(
  values: readonly PartitionValue[],
  spec: { readonly column?: string; readonly format: PartitionDateFormat },
): number | undefined {
  const lookup = (name: string): string | undefined =>
    values.find((v) => v.name === name)?.value ?? undefined;
  if (spec.format === 'year/month/day') {
    const [y = 'year', m = 'month', d = 'day'] = (spec.column || 'year,month,day')
      .split(',')
      .map((s) => s.trim());
    const parts = [lookup(y), lookup(m), lookup(d)];
    if (!parts.every((p) => p !== undefined && /^\d{1,4}$/.test(p))) return undefined;
    return utc(Number(parts[0]), Number(parts[1]), Number(parts[2]), 0);
  }
  if (spec.column === undefined) return undefined;
  const raw = lookup(spec.column);
  const match = raw === undefined ? null : SINGLE_COLUMN_PATTERNS[spec.format].exec(raw);
  if (!match) return undefined;
  const [, y, m, d, h] = match;
  return utc(Number(y), Number(m), d ? Number(d) : 1, h ? Number(h) : 0);
}

/** Date.UTC, but undefined instead of silently rolling 2024-02-30 over to March. */
function utc(year: number, month: number, day: number, hour: number): number | undefined {
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23) return undefined;
  const ms = Date.UTC(year, month - 1, day, hour);
  const check = new Date(ms);
  return check.getUTCFullYear() === year && check.getUTCMonth() === month - 1 && check.getUTCDate() === day
    ? ms
    : undefined;
}
