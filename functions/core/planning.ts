// Plans a partition's compaction as replayable JSON data: every input file ends up in exactly one group
// or one skip reason, the plan does not depend on input order, and planning the planned output plans nothing.
import { z } from 'zod';
import { InvalidInputError } from './errors.js';
import { FORMAT_PLAN_OPTIONS } from './formats/plan-options.js';
import { columnProjectionSchema, projectionTargetKey } from './projection.js';
import { type QuarantinedFile, quarantinedFileSchema, quarantineSkipReason } from './quarantine.js';
import { formatBytes } from './stats.js';
import { plannedTransformSchema } from './transform/spec.js';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/**
 * Storage classes whose objects are never planned. GLACIER and DEEP_ARCHIVE cannot be read without a
 * restore. GLACIER_IR can be read instantly but every GET is billed per GB retrieved and objects carry a
 * 90-day minimum storage charge, so rewriting them costs more than the small files do; tiering put them
 * there on purpose. INTELLIGENT_TIERING and the IA classes are planned (their archive tiers are opt-in
 * and the look-back window keeps cold partitions out of the trigger).
 */
export const ARCHIVE_STORAGE_CLASSES: readonly string[] = ['GLACIER', 'DEEP_ARCHIVE', 'GLACIER_IR'];

/**
 * The largest file planned without reading its footer (with `SnapshotOptions.deferFootersUpTo`): the first ranged read
 * of a footer fetches the file's last 64 KiB (`FOOTER_FIRST_READ_BYTES`), so a file no larger is fetched whole at
 * planning and again, whole, by the rewrite. Planned from its listing (size, ETag), it is fetched once, by the
 * rewrite. Larger files keep their footer read at planning: it costs one or two ranged GETs of the file's tail
 * against a rewrite that would otherwise have to fetch a file whole before it knows whether the file belongs in
 * the group. Equal to FOOTER_FIRST_READ_BYTES (core/parquet/footer.ts), which a test holds.
 */
export const FOOTER_DEFERRED_MAX_BYTES = 64 * 1024;

/** The schema key of the files planned without footers: never a footer's fingerprint, so they group only together. */
export const DEFERRED_SCHEMA = '(footers unread: the rewrite splits these by schema)';

/** Planner knobs, with the names and defaults of the usual bin-pack `rewrite_data_files`. Unknown keys are refused to catch typos. */
export const planOptionsSchema = z
  .strictObject({
    /** T: the size outputs aim for. 128 MiB: one HDFS-sized block, a good Athena/Trino split. */
    targetFileSizeBytes: z
      .number()
      .int()
      .positive()
      .default(128 * MiB),
    /** A group of fewer files is planned only when it is all that is left of its schema (see planPartition). */
    minInputFiles: z.number().int().min(2).default(5),
    /** Cap per group, so one compact Lambda finishes in minutes with bounded memory. Must be ≥ 2·T. */
    maxGroupBytes: z
      .number()
      .int()
      .positive()
      .default(2 * GiB),
    /** A file is small when size < smallFileRatio·T (`min-file-size-bytes` of `rewrite_data_files`). */
    smallFileRatio: z.number().gt(0).max(1).default(0.75),
    /** A file is large when size > largeFileRatio·T (`max-file-size-bytes`); large files are left alone. */
    largeFileRatio: z.number().gt(1).default(1.8),
  })
  .refine((o) => o.maxGroupBytes >= 2 * o.targetFileSizeBytes, {
    message:
      'maxGroupBytes must be at least 2 × targetFileSizeBytes, so a group can hold more than one output file',
    path: ['maxGroupBytes'],
  });

export type PlanOptions = z.output<typeof planOptionsSchema>;
export type PlanOptionsInput = z.input<typeof planOptionsSchema>;

/** The planner's defaults, resolved. */
export const DEFAULT_PLAN_OPTIONS: PlanOptions = planOptionsSchema.parse({});

/**
 * The rows a table format deletes from a file without rewriting it (a deletion vector): carried from the
 * snapshot through the plan into the group's journal entry, so the rewrite drops them and the commit can tell
 * whether they changed since planning.
 */
export const inputDeletesSchema = z.object({
  /** The format's unique id of the deletes (e.g. a deletion vector's unique id): another id later means other rows deleted. */
  id: z.string().min(1),
  /** How many rows they delete (the DV's cardinality). */
  rows: z.number().int().nonnegative(),
  /** What the format reads the deleted positions from (e.g. a deletion vector's descriptor); opaque to all but the format. */
  descriptor: z.record(z.string(), z.union([z.string(), z.number()])),
});
export type InputDeletes = z.infer<typeof inputDeletesSchema>;

/**
 * What a row of the file inherits when it stores no lineage of its own (row lineage of a format that keeps it: the data file's
 * `first_row_id` and data sequence number), as decimal text: 64-bit values that JSON numbers would round. Carried
 * through the plan into the journal so the rewrite writes every row's `_row_id` and `_last_updated_sequence_number`.
 */
export const inputRowLineageSchema = z.object({
  firstRowId: z.string().regex(/^\d+$/),
  sequenceNumber: z.string().regex(/^\d+$/),
});
export type InputRowLineage = z.infer<typeof inputRowLineageSchema>;

/** One candidate file as listed (and, for fingerprint and rows, as its footer was read). */
export const planInputFileSchema = z.object({
  key: z.string().min(1),
  size: z.number().int().nonnegative(),
  /** Entity tag without quotes; commit retires the input only while it still has this ETag. */
  etag: z.string(),
  versionId: z.string().optional(),
  storageClass: z.string().optional(),
  /** Row count from the footer (deleted rows included: see `deletes`). */
  rows: z.number().int().nonnegative().optional(),
  /** Rows the table format deletes from the file; the rewrite drops them. */
  deletes: inputDeletesSchema.optional(),
  /** Row lineage the rewrite must write into every row (a format with row lineage); see `inputRowLineageSchema`. */
  rowLineage: inputRowLineageSchema.optional(),
  /** Fingerprint of the file's Parquet schema; files of different fingerprints are never grouped. */
  schemaFingerprint: z.string().min(1).optional(),
  /**
   * The file projected onto the schema its table format writes (see core/projection.ts): set by a format that keeps
   * its own schema, read by the format's own planner or the bin-pack planner, which group the file by the written
   * schema instead of its own; or by a format's opt-in union of a partition's schemas (a format that takes
   * `schemaEvolution: 'union'`), which the bin-pack planner groups alike.
   */
  projection: columnProjectionSchema.optional(),
  /**
   * Set with `projection` when the file already is of the written schema (the projection only restates it): its
   * planner may rewrite a group of such files of one Parquet schema as written, as it would a table whose schema
   * never changed (its outputs byte-identical in schema and footer to what they always were).
   */
  projectionIdentity: z.boolean().optional(),
  /**
   * Why the file cannot be projected onto the table's current schema, or join its partition's schema union (its
   * planner leaves it alone and says why).
   */
  projectionRefused: z.string().optional(),
  /**
   * Planned from the listing alone, its footer not read (a tiny file: see {@link FOOTER_DEFERRED_MAX_BYTES}): no `rows`
   * nor `schemaFingerprint` yet. The rewrite reads it whole once, learns both from those bytes, writes one output
   * set per schema population and leaves out — in place, reported — what planning would have skipped (an
   * unreadable footer, zero rows) and a file alone of its schema. Such files are grouped with each other only.
   */
  footerDeferred: z.boolean().optional(),
  /** Set when the footer could not be read: why. Such a file is skipped. */
  unreadable: z.string().optional(),
  /**
   * Bytes of the footer's key-value entries the format's rewrite drops and recomputes per output (its index over
   * the file's own rows, e.g. a bloom filter of its keys: `OutputFooterEntries.keys`). They are a fixed cost per
   * file, not data the rewrite carries into an output, so planning weighs the file without them
   * ({@link plannedBytesOf}): a few hundred kB of index on a file of a few kB of rows would otherwise make one
   * partition's small files look twelve times their size, and plan twelve small outputs where one is due.
   */
  recomputedFooterBytes: z.number().int().nonnegative().optional(),
  /**
   * Set when the engine would copy the file row group by row group rather than re-encode it, in an output of this
   * codec (core/parquet/stitch.ts `stitchCostOf`): what the run's cost estimate prices for its stitched path.
   */
  stitch: z
    .object({
      codec: z.enum(['snappy', 'zstd']),
      rowGroups: z.number().int().nonnegative(),
      proofReadsPerSide: z.number().int().nonnegative(),
      pageHeaderRead: z.boolean(),
    })
    .optional(),
});
export type PlanInputFile = z.infer<typeof planInputFileSchema>;

/** What the table looked like when it was planned; commit refuses to act on a different table state. */
export const planSnapshotSchema = z.object({
  /** When the listing was taken, epoch ms. */
  listedAt: z.number().int().nonnegative(),
  /** The log version a format whose log is the table read the live files from. */
  deltaVersion: z.number().int().nonnegative().optional(),
});
export type PlanSnapshot = z.infer<typeof planSnapshotSchema>;

export const planInputSchema = z.object({
  table: z.string().min(1),
  /** The partition's identity (its raw directory path relative to the table root; '' when unpartitioned). */
  partition: z.string(),
  files: z.array(planInputFileSchema),
  snapshot: planSnapshotSchema,
  /**
   * Files whose rewrite failed on the file itself (see core/quarantine.ts). A listed file with the same key
   * and ETag is skipped with the quarantine's reason, so one bad file does not fail its neighbours' group
   * on every run; a record of another ETag is not this object and does not apply. The caller reads them
   * (planning does no I/O).
   */
  quarantined: z.array(quarantinedFileSchema).optional(),
});
export type PlanInput = z.infer<typeof planInputSchema>;

export const planGroupSchema = z.object({
  /** `g0001`, `g0002`, ... in key order of each group's first file; stable across replans. */
  groupId: z.string().regex(/^g\d{4,}$/),
  schemaFingerprint: z.string().min(1),
  /**
   * Sorted by key: the order rows are rewritten in. The bin-pack planner never plans fewer than 2; a format's
   * own planner (`rewrite_data_files` rules) rewrites a lone file that is too large (split), carries too many deletes, or `rewrite-all`.
   */
  files: z.array(planInputFileSchema).min(1),
  bytes: z.number().int().nonnegative(),
  /** Sum of the inputs' rows; null when any input's row count is unknown. */
  rows: z.number().int().nonnegative().nullable(),
  /** How many files the rewrite should produce (the bin-pack rule, see expectedOutputFiles). */
  expectedOutputFiles: z.number().int().positive(),
  /**
   * What the format records of this group alone (a table service's operation: the file group it rewrites, the
   * service's instant and its output's name), merged over the plan's into the group's journal entry: the plan stays data.
   */
  formatState: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional(),
});
export type PlanGroup = z.infer<typeof planGroupSchema>;

export const skippedFileSchema = z.object({ key: z.string(), reason: z.string() });
export type SkippedFile = z.infer<typeof skippedFileSchema>;

export const partitionPlanSchema = z.object({
  version: z.literal(1),
  table: z.string().min(1),
  partition: z.string(),
  /**
   * The bin-pack planner's options, or those a format's own planner resolved (e.g. its
   * `rewrite_data_files` options), each format's declared in its folder (formats/plan-options.ts).
   */
  options: z.union([planOptionsSchema, ...FORMAT_PLAN_OPTIONS]),
  snapshot: planSnapshotSchema,
  /** What the table format must remember to commit against this plan's snapshot (see TableSnapshot.formatState). */
  formatState: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional(),
  groups: z.array(planGroupSchema),
  /** Every input file not in a group, with why; sorted by key. */
  skipped: z.array(skippedFileSchema),
  summary: z.object({
    inputFiles: z.number().int().nonnegative(),
    inputBytes: z.number().int().nonnegative(),
    plannedFiles: z.number().int().nonnegative(),
    plannedBytes: z.number().int().nonnegative(),
    groups: z.number().int().nonnegative(),
    expectedOutputFiles: z.number().int().nonnegative(),
  }),
  /** Present when there are no groups: why nothing is planned. */
  reason: z.string().optional(),
  /**
   * An operator's partition rewrite (see core/workflow/rewrite-plan.ts): the transformation and the columns it was
   * planned against, which the compact and verify steps re-plan it from. Absent: a compaction.
   */
  transform: plannedTransformSchema.optional(),
});
export type PartitionPlan = z.infer<typeof partitionPlanSchema>;

export const planSetSchema = z.object({ partitions: z.array(partitionPlanSchema) });
export type PlanSet = z.infer<typeof planSetSchema>;

/** Smallest size that is not small: sizes are integers, so `size < r·T` ⟺ `size < ceil(r·T)`. */
export function minWellSizedBytes(
  options: Pick<PlanOptions, 'smallFileRatio' | 'targetFileSizeBytes'>,
): number {
  return Math.ceil(options.smallFileRatio * options.targetFileSizeBytes);
}

/**
 * The bytes of `file` a rewrite carries into its outputs, which planning sizes, groups and counts outputs by: the
 * file's size without the footer entries its format recomputes per output (`recomputedFooterBytes`). The plan
 * still records the file's real size (what is read, and what commit checks the object by).
 */
export function plannedBytesOf(file: Pick<PlanInputFile, 'size' | 'recomputedFooterBytes'>): number {
  return file.size - Math.min(file.size, file.recomputedFooterBytes ?? 0);
}

/**
 * The output count of `rewrite_data_files` bin-packing for `bytes` of input: floor(bytes / T) files, one more when the remainder is at
 * least the small-file threshold (so no output is small unless the whole group is), and at least one.
 * Consequence the convergence proof uses: when bytes ≥ ceil(r·T), every one of the (near-)equal outputs is
 * ≥ ceil(r·T), i.e. not small.
 */
export function expectedOutputFiles(bytes: number, options: PlanOptions): number {
  const target = options.targetFileSizeBytes;
  const whole = Math.floor(bytes / target);
  const remainder = bytes - whole * target;
  return Math.max(1, remainder >= minWellSizedBytes(options) ? whole + 1 : whole);
}

/**
 * Plans one partition.
 *
 * Files are classified in this order: quarantined (same key and ETag as a quarantine record), archived
 * storage class, unreadable footer, zero rows, large (> largeFileRatio·T),
 * well-sized (between), no schema fingerprint, refused by the schema it would be written in (its table's current
 * schema or its partition's schema union) — each skipped with a
 * reason — and small, which are grouped per schema fingerprint (a file projected onto a schema union: per the
 * schema it is written in, see PlanInputFile.projection). Within a fingerprint the small files (sorted by key) are cut into
 * ceil(bytes / maxGroupBytes) contiguous, byte-balanced groups, never over maxGroupBytes (more groups
 * only when whole files cannot be balanced under the cap; see splitBalanced). A group is planned when
 *   - it has ≥ minInputFiles files and (when the fingerprint needs several groups) at least ceil(r·T)
 *     bytes, so its outputs are not small; or
 *   - it is all of the fingerprint's small files that no other planned group takes, has ≥ 2 files and
 *     at least ceil(r·T) bytes (merging makes a well-sized file).
 * The rest are regrouped and the rule applied again until nothing more qualifies. That loop is what makes
 * planning converge: whatever is left unplanned is exactly what a second run over the output would see,
 * and it would not qualify then either. A handful of tiny files (fewer than minInputFiles, under r·T in
 * total) is left alone: a run that merges 3 files of 20 KB costs more than the files do.
 *
 * @throws InvalidInputError for an invalid input or options, or a key listed twice.
 */
export function planPartition(input: PlanInput, options: PlanOptionsInput = {}): PartitionPlan {
  const opts = parseOrThrow(planOptionsSchema, options, 'Plan options are invalid; fix them');
  const parsed = parseOrThrow(
    planInputSchema,
    input,
    'Plan input is invalid; fix the listing that produced it',
  );
  return planValidated(parsed, opts);
}

/**
 * Plans many partitions with the same options. Partitions come back sorted by table, then partition, so
 * the result is byte-identical whatever order the inputs arrive in; each partition without groups
 * carries a `reason`.
 * @throws InvalidInputError for invalid inputs or options, or one table/partition given twice.
 */
export function planPartitions(inputs: readonly PlanInput[], options: PlanOptionsInput = {}): PlanSet {
  const opts = parseOrThrow(planOptionsSchema, options, 'Plan options are invalid; fix them');
  const parsed = parseOrThrow(z.array(planInputSchema), inputs, 'Plan inputs are invalid; fix the listing');
  const seen = new Set<string>();
  for (const p of parsed) {
    const id = JSON.stringify([p.table, p.partition]);
    if (seen.has(id)) {
      throw new InvalidInputError(
        `Partition "${p.partition}" of table "${p.table}" is given twice; merge its file lists into one input`,
      );
    }
    seen.add(id);
  }
  const plans = parsed.map((p) => planValidated(p, opts));
  plans.sort((a, b) => compareStrings(a.table, b.table) || compareStrings(a.partition, b.partition));
  return { partitions: plans };
}

type SkipCategory =
  | 'quarantined'
  | 'archived'
  | 'unreadable'
  | 'empty'
  | 'large'
  | 'well-sized'
  | 'no-fingerprint'
  | 'not-unifiable'
  | 'small-unmerged';

interface Skip {
  readonly key: string;
  readonly reason: string;
  readonly category: SkipCategory;
}

/**
 * Whether a skip `reason` (as in a plan's `skipped`) is about the file itself — its footer cannot be read,
 * it holds zero rows, it is quarantined or in an archive class — rather than its size. Such a file needs an
 * operator's look, so commands name it instead of only counting it. Matches the reasons written below (and
 * quarantineSkipReason's).
 */
export function isSkippedForContent(reason: string): boolean {
  return /^(footer unreadable: |holds zero rows|quarantined since |in archive storage class |left out by the rewrite: )/.test(
    reason,
  );
}

/**
 * The skip entry of a file planned without its footer that the rewrite left out for what it is (see
 * `footerDeferred`), worded as planning words the same finding when it reads the footer, so it is reported with the
 * plan's skips; undefined for a file left out only for being alone of its schema (a size matter, not its content).
 */
export function leftOutSkip(left: {
  readonly key: string;
  readonly kind: 'unreadable' | 'empty' | 'alone';
  readonly reason: string;
}): SkippedFile | undefined {
  switch (left.kind) {
    case 'unreadable':
      return {
        key: left.key,
        reason: `footer unreadable: ${left.reason} (found by the rewrite; quarantined)`,
      };
    case 'empty':
      return {
        key: left.key,
        reason:
          'holds zero rows: left alone, there is nothing to rewrite (found by the rewrite; quarantined)',
      };
    case 'alone':
      return undefined;
  }
}

function planValidated(input: PlanInput, opts: PlanOptions): PartitionPlan {
  const files = [...input.files].sort((a, b) => compareStrings(a.key, b.key));
  for (let i = 1; i < files.length; i++) {
    if (files[i]?.key === files[i - 1]?.key) {
      throw new InvalidInputError(
        `File ${files[i]?.key} is listed twice in partition "${input.partition}"; list each key once (latest version)`,
      );
    }
  }
  const target = opts.targetFileSizeBytes;
  const minWell = minWellSizedBytes(opts);
  const maxWell = Math.floor(opts.largeFileRatio * target);
  const skips: Skip[] = [];
  const smallByFingerprint = new Map<string, PlanInputFile[]>();
  const quarantined = new Map((input.quarantined ?? []).map((q) => [q.key, q]));

  for (const file of files) {
    const content = contentSkip(file, quarantined);
    const weight = plannedBytesOf(file);
    if (content !== undefined) {
      skips.push({ key: file.key, ...content });
    } else if (weight > maxWell) {
      skips.push({
        key: file.key,
        category: 'large',
        reason: `large file (${formatBytes(weight)} > ${opts.largeFileRatio}·T = ${formatBytes(maxWell)}): left alone, splitting is not planned`,
      });
    } else if (weight >= minWell) {
      skips.push({
        key: file.key,
        category: 'well-sized',
        reason: `well-sized (${formatBytes(weight)} between ${formatBytes(minWell)} and ${formatBytes(maxWell)})`,
      });
    } else if (file.footerDeferred === true && file.schemaFingerprint === undefined) {
      // Tiny files planned from the listing: one population of their own, which the rewrite splits by schema.
      const list = smallByFingerprint.get(DEFERRED_SCHEMA) ?? [];
      list.push(file);
      smallByFingerprint.set(DEFERRED_SCHEMA, list);
    } else if (file.schemaFingerprint === undefined) {
      skips.push({
        key: file.key,
        category: 'no-fingerprint',
        reason: 'schema fingerprint unknown: read the footer before planning, schemas must never be mixed',
      });
    } else if (file.projectionRefused !== undefined) {
      skips.push({ key: file.key, category: 'not-unifiable', reason: file.projectionRefused });
    } else {
      // A file projected onto its table's current schema or its partition's schema union (see
      // PlanInputFile.projection) is grouped by the schema it is written in, with every file projected onto the same one.
      const schema =
        file.projection === undefined ? file.schemaFingerprint : projectionTargetKey(file.projection);
      const list = smallByFingerprint.get(schema) ?? [];
      list.push(file);
      smallByFingerprint.set(schema, list);
    }
  }

  const planned: { fingerprint: string; files: PlanInputFile[] }[] = [];
  const fingerprints = [...smallByFingerprint.keys()].sort(compareStrings);
  for (const fingerprint of fingerprints) {
    const small = smallByFingerprint.get(fingerprint) ?? [];
    const result = groupFingerprint(small, opts);
    for (const group of result.planned) planned.push({ fingerprint, files: group });
    const reason = leftoverReason(fingerprint, result, opts);
    for (const file of result.leftover) skips.push({ key: file.key, category: 'small-unmerged', reason });
  }
  planned.sort((a, b) => compareStrings(a.files[0]?.key ?? '', b.files[0]?.key ?? ''));

  const groups: PlanGroup[] = planned.map((g, i) => {
    const bytes = sum(g.files.map((f) => f.size));
    // Rows the group holds for readers: a file's deleted rows are not among them (the rewrite drops them).
    const total = g.files.every((f) => f.rows !== undefined)
      ? sum(g.files.map((f) => (f.rows ?? 0) - (f.deletes?.rows ?? 0)))
      : null;
    // Footers' row counts are the writers' word: a sum past 2^53 is not a count this plan can carry, so unknown.
    const rows = total !== null && Number.isSafeInteger(total) ? total : null;
    return {
      groupId: `g${String(i + 1).padStart(4, '0')}`,
      schemaFingerprint: g.fingerprint,
      files: g.files,
      bytes,
      rows,
      expectedOutputFiles: expectedOutputFiles(sum(g.files.map(plannedBytesOf)), opts),
    };
  });
  skips.sort((a, b) => compareStrings(a.key, b.key));

  const plan: PartitionPlan = {
    version: 1,
    table: input.table,
    partition: input.partition,
    options: opts,
    snapshot: input.snapshot,
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
  return groups.length > 0 ? plan : { ...plan, reason: nothingToDoReason(skips, CATEGORY_WORDS) };
}

/**
 * Why a file is not planned for what it is rather than its size, whatever the planner: quarantined (same key and
 * ETag as a record), in an archive storage class, an unreadable footer, zero rows. Undefined when none applies.
 */
export function contentSkip(
  file: PlanInputFile,
  quarantined: ReadonlyMap<string, QuarantinedFile>,
): { category: 'quarantined' | 'archived' | 'unreadable' | 'empty'; reason: string } | undefined {
  const storageClass = (file.storageClass ?? 'STANDARD').toUpperCase();
  const quarantine = quarantined.get(file.key);
  if (quarantine !== undefined && quarantine.etag === file.etag)
    return { category: 'quarantined', reason: quarantineSkipReason(quarantine) };
  if (ARCHIVE_STORAGE_CLASSES.includes(storageClass))
    return {
      category: 'archived',
      reason: `in archive storage class ${storageClass}: never compacted, because reading it needs a restore (GLACIER, DEEP_ARCHIVE) or is billed per GB read with a 90-day minimum (GLACIER_IR); restore or re-tier it first if it must be`,
    };
  if (file.unreadable !== undefined)
    return { category: 'unreadable', reason: `footer unreadable: ${file.unreadable}` };
  // The engine refuses zero-row inputs (nothing to rewrite, and a group of them would fail the run);
  // writers such as Spark leave them behind for empty tasks. Left in place: removing them is a
  // table-format decision (a table's log may still reference them), not the compactor's.
  if (file.rows === 0)
    return {
      category: 'empty',
      reason: 'holds zero rows: left alone, there is nothing to rewrite (the engine refuses empty inputs)',
    };
  return undefined;
}

interface FingerprintGrouping {
  readonly planned: PlanInputFile[][];
  readonly leftover: PlanInputFile[];
  /** How the leftover was last cut into groups (for the reason). */
  readonly leftoverGroups: number;
}

/** Groups one fingerprint's small files (sorted by key); see planPartition for the rule. */
function groupFingerprint(small: readonly PlanInputFile[], opts: PlanOptions): FingerprintGrouping {
  const minWell = minWellSizedBytes(opts);
  const planned: PlanInputFile[][] = [];
  let remaining = [...small];
  let leftoverGroups = remaining.length > 0 ? 1 : 0;
  while (remaining.length >= 2) {
    const candidates = splitBalanced(remaining, opts.maxGroupBytes, plannedBytesOf);
    leftoverGroups = candidates.length;
    const single = candidates.length === 1;
    const chosen = candidates.filter((group) => {
      const bytes = sum(group.map(plannedBytesOf));
      if (single) return group.length >= opts.minInputFiles || (group.length >= 2 && bytes >= minWell);
      return group.length >= opts.minInputFiles && bytes >= minWell;
    });
    if (chosen.length === 0) break;
    planned.push(...chosen);
    const taken = new Set(chosen.flat().map((f) => f.key));
    remaining = remaining.filter((f) => !taken.has(f.key));
    leftoverGroups = remaining.length > 0 ? 1 : 0;
  }
  return { planned, leftover: remaining, leftoverGroups };
}

/**
 * Cuts key-ordered files into contiguous groups of about equal bytes, none over `cap`. With n groups, a
 * file goes to group floor(n · midpoint / total), where midpoint is the middle of the file's byte range
 * in the concatenation: each group then holds total / n bytes give or take half a file at each end,
 * and errors do not accumulate from group to group. n starts at ceil(total / cap) and grows only when
 * whole files cannot be balanced under the cap (it must end: one file per group always fits, as a small
 * file is < T ≤ cap / 2). `bytesOf`: a file's bytes as planning weighs them (default its size).
 */
export function splitBalanced<F extends { readonly size: number }>(
  files: readonly F[],
  cap: number,
  bytesOf: (file: F) => number = (f) => f.size,
): F[][] {
  const total = sum(files.map(bytesOf));
  if (files.length === 0) return [];
  for (let n = Math.max(1, Math.ceil(total / cap)); ; n++) {
    const groups = cutBalanced(files, n, bytesOf);
    if (n >= files.length || groups.every((g) => sum(g.map(bytesOf)) <= cap)) return groups;
  }
}

/**
 * Key-ordered files cut into `n` contiguous runs of about equal bytes by their midpoints, as {@link splitBalanced}
 * cuts a group: fewer when a file larger than a run's share leaves a run empty (empty runs are dropped), never more.
 * Also how a partition rewrite packs its inputs into outputs of the target size (workflow/rewrite-plan.ts).
 */
export function cutBalanced<F extends { readonly size: number }>(
  files: readonly F[],
  n: number,
  bytesOf: (file: F) => number = (f) => f.size,
): F[][] {
  const total = sum(files.map(bytesOf));
  const groups: F[][] = Array.from({ length: Math.max(1, n) }, () => []);
  let start = 0;
  for (const file of files) {
    const bytes = bytesOf(file);
    const index =
      total === 0
        ? 0
        : Math.min(groups.length - 1, Math.floor(((start + bytes / 2) * groups.length) / total));
    groups[index]?.push(file);
    start += bytes;
  }
  return groups.filter((g) => g.length > 0);
}

function leftoverReason(fingerprint: string, grouping: FingerprintGrouping, opts: PlanOptions): string {
  const { leftover, planned, leftoverGroups } = grouping;
  const schema = `schema ${fingerprint}`;
  if (leftover.length === 1) {
    return planned.length === 0
      ? `1 small file of ${schema}: nothing to merge with`
      : `1 small file of ${schema} left after grouping the others: nothing to merge with`;
  }
  const bytes = formatBytes(sum(leftover.map(plannedBytesOf)));
  if (leftoverGroups <= 1) {
    return (
      `${leftover.length} small files (${bytes}) of ${schema}: fewer than minInputFiles ${opts.minInputFiles} ` +
      `and under ${formatBytes(minWellSizedBytes(opts))} together, too little to be worth a run`
    );
  }
  return (
    `${leftover.length} small files (${bytes}) of ${schema} cannot be cut into groups of ≥ ${opts.minInputFiles} ` +
    `files under maxGroupBytes ${formatBytes(opts.maxGroupBytes)}; raise maxGroupBytes or lower minInputFiles to merge them`
  );
}

const CATEGORY_WORDS: Record<SkipCategory, string> = {
  quarantined: 'quarantined',
  archived: 'archived',
  unreadable: 'unreadable',
  empty: 'empty (zero rows)',
  large: 'large',
  'well-sized': 'well-sized',
  'no-fingerprint': 'without schema fingerprint',
  'not-unifiable':
    'not projectable onto the schema written (the table’s current one or the partition’s union)',
  'small-unmerged': 'small but not worth merging',
};

/**
 * Why a partition plans nothing, counted by category in `words`' order (the planner's {@link CATEGORY_WORDS}, or
 * the categories of a format with selection rules of its own).
 */
export function nothingToDoReason<C extends string>(
  skips: readonly { readonly category: C }[],
  words: Readonly<Record<C, string>>,
): string {
  if (skips.length === 0) return 'nothing to compact: the partition has no files';
  const counts = new Map<C, number>();
  for (const s of skips) counts.set(s.category, (counts.get(s.category) ?? 0) + 1);
  const parts = (Object.keys(words) as C[])
    .filter((c) => counts.has(c))
    .map((c) => `${counts.get(c)} ${words[c]}`);
  return `nothing to compact: ${parts.join(', ')} (see skipped for each file)`;
}

/** Code-unit order: locale-independent, so every machine sorts keys the same way. */
export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function sum(values: readonly number[]): number {
  let total = 0;
  for (const v of values) total += v;
  return total;
}

function parseOrThrow<S extends z.ZodType>(schema: S, value: unknown, message: string): z.output<S> {
  const result = schema.safeParse(value);
  if (!result.success) {
    throw new InvalidInputError(
      message,
      result.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`),
    );
  }
  return result.data;
}
