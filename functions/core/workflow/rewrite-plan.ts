// An operator's partition rewrite, planned: the partition listed through its format, refused as a whole when it
// cannot be rewritten as one (no files, an unreadable footer, several schemas), the transformation planned against
// its columns, and the run's plan — one group holding every file of the partition, its inputs packed in key order
// into outputs of the target size as compaction packs a group, the transformation and the packing recorded as data. Shared by the workflow's plan step and `lake-compactor rewrite`, so both
// refuse and plan alike; nothing is written here (the caller stores the plan, or, in a dry run, does not).
import type { ObjectStore } from '../../ports/object-store.js';
import type { PartitionTransforms } from '../../ports/partition-transforms.js';
import { InvalidInputError } from '../errors.js';
import type { TableFormat } from '../formats/table-format.js';
import { printable } from '../keys.js';
import {
  cutBalanced,
  expectedOutputFiles,
  type PartitionPlan,
  type PlanInputFile,
  type PlanOptions,
  plannedBytesOf,
  sum,
} from '../planning.js';
import type { RunContext } from '../run-input.js';
import { canonicalValue } from '../transform/digest.js';
import {
  describePlan,
  type InputColumn,
  plannedTransform,
  planTransform,
  type RunTransform,
  type TransformPlan,
} from '../transform/spec.js';

/** The rows a dry run shows of the first input, as rewritten. */
export const PREVIEW_ROWS = 10;

/** A shown value longer than this is cut (a preview is for reading, not a copy of the data). */
const SHOWN_VALUE_CHARS = 200;

export interface PreparedRewrite {
  /** The partition's data files, sorted by key: the one group's inputs, in output order. */
  readonly files: readonly PlanInputFile[];
  /** The outputs: how many consecutive inputs each holds (see PlannedTransform.inputsPerOutput). */
  readonly inputsPerOutput: readonly number[];
  /** The first input's columns, which the transformation was planned against. */
  readonly columns: readonly InputColumn[];
  readonly plan: TransformPlan;
  /** The run's plan, to store under the run's plan key (its `transform` is what the later steps apply). */
  readonly stored: PartitionPlan;
}

export interface RewriteLocation
  extends Pick<RunContext, 'table' | 'tableRoot' | 'partition' | 'partitionDir'> {
  /** How messages name where the partition lies (the CLI: its URI; the workflow: `table <name>`). */
  readonly where: string;
}

/**
 * Lists and checks the partition, plans `transform` against it and packs its files into outputs of
 * `options.targetFileSizeBytes` (the run's bin-pack options).
 * @throws InvalidInputError, before anything is written, for a partition the format refuses, one without data files,
 * with an unreadable footer or of several Parquet schemas, and for a transformation that does not fit its columns
 * (an unknown column, an unconfirmed drop, an expression that does not type; see planTransform).
 */
export async function prepareRewrite(
  deps: {
    readonly store: ObjectStore;
    readonly format: TableFormat;
    readonly transforms: PartitionTransforms;
  },
  location: RewriteLocation,
  transform: RunTransform,
  now: number,
  options: PlanOptions,
): Promise<PreparedRewrite> {
  const { table, tableRoot, partition, partitionDir, where } = location;
  const listed = await deps.format.partitionFiles(
    deps.store,
    { tableRoot, partition, partitionDir },
    { now, readFooters: true },
  );
  if (listed.refusal !== undefined)
    throw new InvalidInputError(`Partition ${partition} of ${where}: ${listed.refusal}`);
  const files = [...listed.files].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  if (files.length === 0)
    throw new InvalidInputError(`Partition "${partition}" has no data files under ${where}`);
  const unreadable = files.filter((f) => f.unreadable !== undefined);
  if (unreadable.length > 0)
    throw new InvalidInputError(
      `Partition ${partition} holds files whose footer cannot be read; a rewrite must take every file of it, so nothing was written`,
      unreadable.map((f) => `${printable(f.key)}: ${f.unreadable}`),
    );
  const schemas = new Set(files.map((f) => f.schemaFingerprint));
  if (schemas.size > 1)
    throw new InvalidInputError(
      `Partition ${partition} holds files of ${schemas.size} Parquet schemas; a transformation is planned against one. Bring them to one schema first (compact with --schema-evolution union, where the table allows it)`,
    );
  const first = files[0] as PlanInputFile;
  const columns = await deps.transforms.columns(deps.store, first.key);
  const plan = planTransform(transform.spec, columns, transform.confirmDrop);
  const bytes = files.reduce((n, f) => n + f.size, 0);
  const rows = files.every((f) => f.rows !== undefined) ? files.reduce((n, f) => n + (f.rows ?? 0), 0) : null;
  // Compaction's packing: the output count the compaction's bin-packing gives the bytes (expectedOutputFiles), whole inputs cut by their byte midpoints
  // (an output holds whole inputs, so each is verified against exactly the inputs it was written from).
  const outputs = expectedOutputFiles(sum(files.map(plannedBytesOf)), options);
  const inputsPerOutput = cutBalanced(files, outputs, plannedBytesOf).map((run) => run.length);
  const stored: PartitionPlan = {
    version: 1,
    table,
    partition,
    options,
    snapshot: listed.snapshot,
    ...(listed.formatState === undefined ? {} : { formatState: listed.formatState }),
    groups: [
      {
        groupId: 'g0001',
        schemaFingerprint: first.schemaFingerprint ?? 'unknown',
        files,
        bytes,
        rows,
        expectedOutputFiles: inputsPerOutput.length,
      },
    ],
    skipped: [],
    summary: {
      inputFiles: files.length,
      inputBytes: bytes,
      plannedFiles: files.length,
      plannedBytes: bytes,
      groups: 1,
      expectedOutputFiles: inputsPerOutput.length,
    },
    transform: plannedTransform(transform, columns, inputsPerOutput),
  };
  return { files, inputsPerOutput, columns, plan, stored };
}

/**
 * What a rewrite run's plan step says of it (the execution's output carries it): the written schema, and in a dry run
 * where its preview lies. Never table rows: the output is logged with the execution data and sent to EventBridge.
 */
export interface RewriteSummary {
  /** The written schema, one line per column: name, type, where it comes from (`describePlan`). */
  readonly schema: readonly string[];
  /** Dry run: where the first rows of the first input as rewritten were written, and how many. */
  readonly preview?: RewritePreviewRef;
}

/** Where a dry run's preview lies (its rows are in the object, see {@link RewritePreview}). */
export interface RewritePreviewRef {
  /** The input previewed (the partition's first file). */
  readonly file: string;
  /** How many rows the object holds. */
  readonly rows: number;
  /** The object's key in the table's bucket, and its URI (`s3://bucket/key`, for the console and the AWS CLI). */
  readonly key: string;
  readonly uri: string;
}

/** The preview object's JSON: the schema and the first rows as rewritten, each value as an operator reads it. */
export interface RewritePreview {
  readonly runId: string;
  readonly table: string;
  readonly partition: string;
  readonly file: string;
  readonly schema: readonly string[];
  /** One object per row, by written column name; null: null. */
  readonly rows: readonly Readonly<Record<string, string | null>>[];
}

/**
 * The dry run's view of a prepared rewrite: the first {@link PREVIEW_ROWS} rows of its first input as rewritten,
 * written to `target.key` (the run's preview object), and the summary that points at them.
 */
export async function previewRewrite(
  deps: { readonly store: ObjectStore; readonly transforms: PartitionTransforms },
  prepared: Pick<PreparedRewrite, 'files' | 'plan'>,
  target: Pick<RewritePreview, 'runId' | 'table' | 'partition'> & {
    readonly key: string;
    readonly uri: string;
  },
  limit = PREVIEW_ROWS,
): Promise<RewriteSummary> {
  const first = prepared.files[0] as PlanInputFile;
  const rows = await deps.transforms.preview(deps.store, first.key, prepared.plan, limit);
  const schema = describePlan(prepared.plan);
  const file = printable(first.key);
  const preview: RewritePreview = {
    runId: target.runId,
    table: target.table,
    partition: target.partition,
    file,
    schema,
    rows: rows.map((row) =>
      Object.fromEntries(
        prepared.plan.columns.map((c, i) => [c.name, shownValue(row[i], SHOWN_VALUE_CHARS)]),
      ),
    ),
  };
  // A retried step writes the same object again (the same rows of the same file).
  await deps.store.put(target.key, JSON.stringify(preview, null, 2), { contentType: 'application/json' });
  return { schema, preview: { file, rows: preview.rows.length, key: target.key, uri: target.uri } };
}

/**
 * A previewed value as an operator reads it: integers exactly (int64 as digits, never a rounded number), times in
 * ISO form, anything else canonically; null as null. Cut to `max` characters when given (the console's output).
 */
export function shownValue(v: unknown, max?: number): string | null {
  if (v === null || v === undefined) return null;
  const text =
    typeof v === 'string'
      ? v
      : typeof v === 'bigint' || typeof v === 'number' || typeof v === 'boolean'
        ? String(v)
        : canonicalValue(v);
  return max !== undefined && text.length > max ? `${text.slice(0, max)}…` : text;
}
