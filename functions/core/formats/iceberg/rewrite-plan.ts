// Plans one partition of an Iceberg table as `rewrite_data_files` would (SizeBasedFileRewriter's rules, with the
// user's option names): the same candidates, the same groups chosen, every other file skipped with why, as a
// replayable plan in the shape every format's plan has. Groups never mix partitions (a plan is one partition
// tuple of one spec), nor schemas (the engine writes one schema per output).
import { InvalidInputError } from '../../errors.js';
import type { PartitionValue } from '../../partition.js';
import {
  compareStrings,
  contentSkip,
  nothingToDoReason,
  type PartitionPlan,
  type PlanGroup,
  type PlanInput,
  type PlanInputFile,
  planInputSchema,
  splitBalanced,
  sum,
} from '../../planning.js';
import { projectionTargetKey } from '../../projection.js';
import { formatBytes } from '../../stats.js';
import { type ResolvedRewriteOptions, resolvedRewriteOptionsSchema } from './rewrite-options.js';
import { matchesWhere, parseWhere } from './where.js';

type Category =
  | 'outside-where'
  | 'quarantined'
  | 'archived'
  | 'unreadable'
  | 'empty'
  | 'well-sized'
  | 'no-fingerprint'
  | 'not-projectable'
  | 'group-not-selected'
  | 'deferred';

interface Skip {
  readonly key: string;
  readonly reason: string;
  readonly category: Category;
}

/** How many delete files apply to a planned file: what Iceberg's `delete-file-threshold` counts (a DV is one). */
export function deleteFileCount(file: PlanInputFile): number {
  const files = file.deletes?.descriptor.files;
  if (typeof files !== 'string') return 0;
  try {
    const parsed: unknown = JSON.parse(files);
    return Array.isArray(parsed) ? parsed.length : 0;
  } catch {
    return 0;
  }
}

/**
 * Iceberg's output count for a group of `bytes`: one file below the target; else one per target, keeping a
 * remainder file when it is over `min-file-size-bytes`, or when spreading it would make the files more than 10 %
 * (or half-way to `max-file-size-bytes`) over the target.
 *
 * One deviation, so that planning converges: when Iceberg's count would make the outputs candidates again (their
 * average below `min-file-size-bytes` or above `max-file-size-bytes`: 1200 B at a 1000 B target would be two
 * files of 600 B, merged again by the next run) and the other rounding would not, the other one is taken.
 */
export function icebergOutputFiles(
  bytes: number,
  options: Pick<ResolvedRewriteOptions, 'targetFileSizeBytes' | 'minFileSizeBytes' | 'maxFileSizeBytes'>,
): number {
  const target = options.targetFileSizeBytes;
  if (bytes < target) return 1;
  const withRemainder = Math.ceil(bytes / target);
  const withoutRemainder = Math.floor(bytes / target);
  const writeMax = target + (options.maxFileSizeBytes - target) / 2;
  const iceberg =
    bytes % target > options.minFileSizeBytes
      ? withRemainder
      : bytes / withoutRemainder < Math.min(1.1 * target, writeMax)
        ? withoutRemainder
        : withRemainder;
  const other = iceberg === withRemainder ? withoutRemainder : withRemainder;
  const inRange = (n: number) =>
    bytes / n >= options.minFileSizeBytes && bytes / n <= options.maxFileSizeBytes;
  return inRange(iceberg) || !inRange(other) ? iceberg : other;
}

/**
 * Plans one partition with `rewrite_data_files` semantics:
 *   - outside the `where` filter (by the partition's `values`): nothing is planned;
 *   - a file is a candidate when `rewrite-all`, or its size is below `min-file-size-bytes` or above
 *     `max-file-size-bytes`, or at least `delete-file-threshold` delete files apply to it; files that cannot be
 *     rewritten for what they are (quarantined, archived, unreadable, zero rows) never are;
 *   - candidates (per schema, in key order) are cut into byte-balanced groups of at most the group cap
 *     (`max-file-group-size-bytes`, clamped to one compact step's bound);
 *   - a group is rewritten when `rewrite-all`, or it has more than one file and at least `min-input-files`, or more
 *     than one file and more bytes than the target, or more bytes than `max-file-size-bytes`, or a file with
 *     too many deletes;
 *   - each group is one commit (lake-compactor cannot commit several groups atomically). With
 *     `partial-progress.enabled` false (Iceberg's default, where the whole rewrite is one commit) every group
 *     planned is rewritten and committed on its own, so a run makes all the progress it planned and a failed group
 *     undoes nothing of the others; with it true, at most `partial-progress.max-commits` groups per run, the rest
 *     deferred to the next run (Iceberg would batch them into that many commits; a bound on commits per run is
 *     what the option is set for).
 * Converges: outputs are sized within [min, max] and carry no deletes, so they are not candidates again (unless
 * `rewrite-all`, which always rewrites, as in Iceberg).
 * @throws InvalidInputError for an invalid input or options, or a key listed twice; InvalidWhereError for a filter
 *   that does not parse.
 */
export function planIcebergPartition(
  input: PlanInput,
  options: ResolvedRewriteOptions,
  values: readonly PartitionValue[] = [],
): PartitionPlan {
  const opts = resolvedRewriteOptionsSchema.parse(options);
  const parsed = planInputSchema.safeParse(input);
  if (!parsed.success)
    throw new InvalidInputError(
      'Plan input is invalid; fix the listing that produced it',
      parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`),
    );
  const files = [...parsed.data.files].sort((a, b) => compareStrings(a.key, b.key));
  for (let i = 1; i < files.length; i++) {
    if (files[i]?.key === files[i - 1]?.key)
      throw new InvalidInputError(
        `File ${files[i]?.key} is listed twice in partition "${input.partition}"; list each key once`,
      );
  }
  const skips: Skip[] = [];
  const groupsOut: { fingerprint: string; files: PlanInputFile[] }[] = [];
  if (opts.where !== undefined && !matchesWhere(parseWhere(opts.where), values)) {
    const shown = values.map((v) => `${v.name}=${v.value ?? 'null'}`).join(', ') || 'unpartitioned';
    for (const f of files)
      skips.push({
        key: f.key,
        category: 'outside-where',
        reason: `its partition (${shown}) is outside where ${opts.where}`,
      });
  } else {
    const tooManyDeletes = (f: PlanInputFile) => deleteFileCount(f) >= opts.deleteFileThreshold;
    const quarantined = new Map((parsed.data.quarantined ?? []).map((q) => [q.key, q]));
    const candidates = new Map<string, PlanInputFile[]>();
    for (const file of files) {
      const content = contentSkip(file, quarantined);
      const wronglySized = file.size < opts.minFileSizeBytes || file.size > opts.maxFileSizeBytes;
      if (content !== undefined) skips.push({ key: file.key, ...content });
      else if (!(opts.rewriteAll || wronglySized || tooManyDeletes(file))) {
        const deletes = deleteFileCount(file);
        skips.push({
          key: file.key,
          category: 'well-sized',
          reason: `well-sized (${formatBytes(file.size)} within min-file-size-bytes ${opts.minFileSizeBytes} and max-file-size-bytes ${opts.maxFileSizeBytes})${deletes === 0 ? '' : ` with ${deletes} delete file${deletes === 1 ? '' : 's'}, under delete-file-threshold ${opts.deleteFileThreshold}`}`,
        });
      } else if (file.schemaFingerprint === undefined)
        skips.push({
          key: file.key,
          category: 'no-fingerprint',
          reason: 'schema fingerprint unknown: read the footer before planning, schemas must never be mixed',
        });
      else if (opts.rewriteAll && file.projectionRefused !== undefined)
        skips.push({ key: file.key, category: 'not-projectable', reason: file.projectionRefused });
      else {
        const key = schemaGroupOf(file, file.schemaFingerprint);
        const list = candidates.get(key) ?? [];
        list.push(file);
        candidates.set(key, list);
      }
    }
    for (const fingerprint of [...candidates.keys()].sort(compareStrings)) {
      for (const group of splitBalanced(candidates.get(fingerprint) ?? [], opts.groupCapBytes)) {
        const bytes = sum(group.map((f) => f.size));
        const selected =
          opts.rewriteAll ||
          (group.length > 1 && group.length >= opts.minInputFiles) ||
          (group.length > 1 && bytes > opts.targetFileSizeBytes) ||
          bytes > opts.maxFileSizeBytes ||
          group.some(tooManyDeletes);
        if (selected) groupsOut.push(plannedGroup(fingerprint, group));
        else
          for (const f of group)
            skips.push({
              key: f.key,
              category: 'group-not-selected',
              reason: `a candidate, but its group of ${group.length} file${group.length === 1 ? '' : 's'} (${formatBytes(bytes)}) has fewer than min-input-files ${opts.minInputFiles}, is not over target-file-size-bytes ${opts.targetFileSizeBytes} and holds no file with delete-file-threshold ${opts.deleteFileThreshold} delete files`,
            });
      }
    }
  }
  groupsOut.sort((a, b) => compareStrings(a.files[0]?.key ?? '', b.files[0]?.key ?? ''));
  const commits = opts.partialProgressEnabled ? opts.partialProgressMaxCommits : groupsOut.length;
  for (const deferred of groupsOut.splice(commits))
    for (const f of deferred.files)
      skips.push({
        key: f.key,
        category: 'deferred',
        reason: `deferred to the next run: each group is one commit and partial-progress.max-commits is ${opts.partialProgressMaxCommits}`,
      });

  const groups: PlanGroup[] = groupsOut.map((g, i) => {
    const bytes = sum(g.files.map((f) => f.size));
    return {
      groupId: `g${String(i + 1).padStart(4, '0')}`,
      schemaFingerprint: g.fingerprint,
      files: g.files,
      bytes,
      rows: g.files.every((f) => f.rows !== undefined)
        ? sum(g.files.map((f) => (f.rows ?? 0) - (f.deletes?.rows ?? 0)))
        : null,
      expectedOutputFiles: icebergOutputFiles(bytes, opts),
    };
  });
  skips.sort((a, b) => compareStrings(a.key, b.key));
  const plan: PartitionPlan = {
    version: 1,
    table: input.table,
    partition: input.partition,
    options: opts,
    snapshot: parsed.data.snapshot,
    groups,
    skipped: skips.map(({ key, reason }) => ({ key, reason })),
    summary: {
      inputFiles: files.length,
      inputBytes: sum(files.map((f) => f.size)),
      plannedFiles: sum(groups.map((g) => g.files.length)),
      plannedBytes: sum(groups.map((g) => g.bytes)),
      groups: groups.length,
      expectedOutputFiles: sum(groups.map((g) => g.expectedOutputFiles)),
    },
  };
  return groups.length > 0 ? plan : { ...plan, reason: nothingToDoReason(skips, WORDS) };
}

/**
 * The schema a candidate is grouped by. A file the inventory could project onto the table's current schema exactly
 * is grouped by that schema, as Iceberg's own rewrite reads it (by field id), so files written under any schema group
 * together and the outputs have the current schema (field ids, names, types): otherwise every schema change would
 * split a streaming partition into populations that never compact together. A file without a projection (refused,
 * or as-written) is grouped by the schema it was written with, among files of that Parquet schema only:
 * what cannot be projected exactly is left apart, never approximated (`rewrite-all`, which promises the current
 * schema, skips a refused file instead; see the caller).
 */
function schemaGroupOf(file: PlanInputFile, fingerprint: string): string {
  return file.projection === undefined ? fingerprint : projectionTargetKey(file.projection);
}

/**
 * A selected group as the plan carries it. A group whose files all are of the current schema already, under one
 * Parquet schema, is rewritten as written (no projection): the plan a table whose schema never changed always had.
 * Any other group keeps its files' projections (a sorted rewrite projects them as the bin-pack does).
 */
function plannedGroup(
  key: string,
  group: readonly PlanInputFile[],
): { fingerprint: string; files: PlanInputFile[] } {
  const fingerprint = group[0]?.schemaFingerprint;
  const asWritten = group.every(
    (f) =>
      f.projection === undefined || (f.projectionIdentity === true && f.schemaFingerprint === fingerprint),
  );
  return {
    fingerprint: asWritten && fingerprint !== undefined ? fingerprint : key,
    files: group.map(({ projection, projectionIdentity: _identity, projectionRefused: _refused, ...rest }) =>
      asWritten || projection === undefined ? rest : { ...rest, projection },
    ),
  };
}

const WORDS: Record<Category, string> = {
  'outside-where': 'outside the where filter',
  quarantined: 'quarantined',
  archived: 'archived',
  unreadable: 'unreadable',
  empty: 'empty (zero rows)',
  'well-sized': 'well-sized',
  'no-fingerprint': 'without schema fingerprint',
  'not-projectable': 'not projectable onto the current schema',
  'group-not-selected': 'candidates in a group rewrite_data_files would not rewrite',
  deferred: 'deferred to the next run',
};
