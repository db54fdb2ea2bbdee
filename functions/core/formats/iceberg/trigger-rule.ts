// The profiler's trigger for an Iceberg table, by the rules its groups are planned with (`rewrite_data_files`,
// rewrite-plan.ts): a partition is due exactly when the planner would plan a group of its small files, so a run is
// never started to plan nothing (and then hold the cooldown against a real one), nor withheld from one it would do.
import { InvalidInputError } from '../../errors.js';
import type { FormatTriggerRule } from '../../policy.js';
import { formatBytes } from '../../stats.js';
import {
  ICEBERG_DEFAULT_TARGET_BYTES,
  type ResolvedRewriteOptions,
  type RewriteDataFilesOptions,
  resolveRewriteOptions,
  TARGET_SIZE_PROPERTY,
} from './rewrite-options.js';

/**
 * The trigger rule of an Iceberg table configured with `options` (its `rewriteDataFiles`).
 *
 * The target: `target-file-size-bytes` when set (the format passes the table's `targetFileSizeMB` as that option, under
 * its `rewriteDataFiles`, as a run's plan takes them), else Iceberg's default of 512 MiB
 * ({@link ICEBERG_DEFAULT_TARGET_BYTES}) — not the table's `write.target-file-size-bytes` property, because the
 * policy is resolved once from the configuration when a function starts, before any of the table's metadata is
 * read, and the profiler keeps no table properties. 512 MiB is what the plan itself uses when the property is
 * unset; a table that sets the property should repeat it as the `target-file-size-bytes` option so that both
 * agree (the plan then takes the option too). With that default, `min-file-size-bytes` defaults to 75 % of it.
 *
 * Options that contradict each other at that target do not fail the profiler (one table's typo must not stop
 * every table's trigger): the rule is then never due, and says why, as the plan would refuse them too.
 */
export function icebergTriggerRule(options: RewriteDataFilesOptions | undefined): FormatTriggerRule {
  try {
    // The group cap does not matter here: the trigger sees a partition's candidates as one group (see below).
    return triggerRuleOf(
      resolveRewriteOptions(options ?? {}, { engineGroupCapBytes: Number.MAX_SAFE_INTEGER }),
    );
  } catch (err) {
    if (!(err instanceof InvalidInputError)) throw err;
    const why = err.message.replace(/\n\s*-\s*/g, ' ');
    return {
      candidateBelowBytes: 0,
      due: () => ({
        ok: false,
        reason: `rewriteDataFiles cannot be planned (${why}): fix the table's rewriteDataFiles options (or set target-file-size-bytes when the table's ${TARGET_SIZE_PROPERTY} is what makes them valid)`,
      }),
    };
  }
}

/**
 * The rule for resolved options, the plan's own rules (planIcebergPartition) over the counters the profiler keeps:
 *   - a file is a candidate when below `min-file-size-bytes` (every file with `rewrite-all`);
 *   - the partition is due when its candidates make a group the plan selects: with `rewrite-all`, any file; else
 *     at least two files and at least `min-input-files` of them, or at least two whose bytes exceed
 *     `target-file-size-bytes` (candidates are below min, so one alone is never over the target or the max).
 *
 * What the counters cannot see, and so does not start a run on its own: files over `max-file-size-bytes` (the plan
 * splits them), files with `delete-file-threshold` delete files, and candidates split over several groups when
 * they exceed one group's bytes (each group then holds about half the cap or more, so with a cap above twice the
 * target every group is over the target and still selected). Files the plan skips for what they are (quarantined,
 * archived, empty) are counted, as for every format.
 */
export function triggerRuleOf(options: ResolvedRewriteOptions): FormatTriggerRule {
  if (options.rewriteAll) {
    return {
      candidateBelowBytes: undefined,
      due: ({ count }) =>
        count > 0
          ? { ok: true, reason: `rewrite-all: ${count} file${count === 1 ? '' : 's'} to rewrite` }
          : { ok: false, reason: 'rewrite-all, but no file to rewrite' },
    };
  }
  const min = options.minFileSizeBytes;
  const target = options.targetFileSizeBytes;
  const need = Math.max(2, options.minInputFiles);
  return {
    candidateBelowBytes: min,
    due: ({ count, bytes }) => {
      const enough = count >= need;
      const over = count >= 2 && bytes > target;
      const ok = enough || over;
      const files = `${count} file${count === 1 ? '' : 's'} below min-file-size-bytes ${formatBytes(min)}`;
      const countText = `${count} ${enough ? '≥' : '<'} min-input-files ${options.minInputFiles}${options.minInputFiles < 2 ? ' (and 2 to merge)' : ''}`;
      const bytesText = `${formatBytes(bytes)} ${bytes > target ? '>' : '≤'} target-file-size-bytes ${formatBytes(target)}${count < 2 && bytes > target ? ' (but one file alone is not merged)' : ''}`;
      return { ok, reason: `${files}: ${countText} ${ok ? 'or' : 'and'} ${bytesText}` };
    },
  };
}
