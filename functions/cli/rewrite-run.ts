// What `lake-compactor rewrite` does, loaded by rewrite.ts only when the command runs. An operator's transformation
// of one partition (core/transform/) through the workflow's own steps — plan → rewrite → verify → commit, journaled
// in the location like `compact` — with one group holding every file of the partition (packed into outputs of the
// target size), so the partition is either all old or all new: a crash at any request is settled back or forward by
// the next run (or `settle`).
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { MemoryLeases } from '../adapters/memory-leases.js';
import { openStore } from '../adapters/open-store.js';
import { StoreJournal } from '../adapters/store-journal.js';
import { CompactionFailedError, UnsettledPartitionError, UsageError } from '../core/errors.js';
import { DEFAULT_TABLE_FORMAT, type TableFormatName, tableFormat } from '../core/formats/index.js';
import { printable } from '../core/keys.js';
import { currentMemoryBudget } from '../core/memory-budget.js';
import type { PlanInputFile } from '../core/planning.js';
import { buildRunContext, childExecutionName } from '../core/run-input.js';
import { formatBytes } from '../core/stats.js';
import { describePlan, parseTransformSpec, type TransformPlan } from '../core/transform/spec.js';
import { plural } from '../core/words.js';
import { planKey } from '../core/workflow/layout.js';
import { binpackOptionsOf } from '../core/workflow/plan.js';
import { prepareRewrite, shownValue } from '../core/workflow/rewrite-plan.js';
import { runPartition } from '../core/workflow/run.js';
import type { Clock } from '../ports/clock.js';
import type { ObjectStore } from '../ports/object-store.js';
import type { Codec, ParquetEngine } from '../ports/parquet-engine.js';
import { defaultParquetEngine, defaultPartitionTransforms } from '../shared/parquet-engine.js';
import { tableNameOf } from './args.js';
import { type FormatCliOptions, formatSettingsOf } from './format-options.js';
import { commandFormat } from './format-services.js';
import { planningChoicesOf } from './planning-options.js';
import { removeStaleTempFiles, settleOpenGroups } from './settle-run.js';
import { renderTable } from './table.js';
import { refuseEnclosingForeignTable } from './table-format-guard.js';

export interface RewriteIo {
  readonly out: (text: string) => void;
  readonly clock: Clock;
  readonly env: Readonly<Record<string, string | undefined>>;
}

export interface RewriteOptions extends FormatCliOptions {
  /** The partition to rewrite (path relative to the table root, e.g. `date=2024-01-15`). */
  readonly partition: string;
  /** Path of the transformation file (JSON, see core/transform/spec.ts). */
  readonly transform: string;
  /** Columns the operator confirms dropping (each `drop` step needs its column here). */
  readonly confirmDrop?: readonly string[];
  /** Print the new schema and the first rows; change nothing. */
  readonly dryRun?: boolean;
  /** Rows the dry run prints. @default 10 */
  readonly previewRows?: number;
  /** @default 'zstd' */
  readonly codec?: Codec;
  /** Target output size, MiB: the partition's files are packed into outputs of about this size. @default 128 */
  readonly targetMb?: number;
  readonly table?: string;
  readonly workRoot?: string;
  /** @default DEFAULT_TABLE_FORMAT */
  readonly format?: TableFormatName;
}

/** Test seams of {@link runRewrite}. */
export interface RewriteHooks {
  /** The engine the transforming engine reads footers with. @default defaultParquetEngine */
  readonly engine?: ParquetEngine;
  /** Wraps the opened store (tests inject crashes). */
  readonly wrapStore?: (store: ObjectStore) => ObjectStore;
}

/** What a rewrite did. */
export interface RewriteResult {
  readonly partition: string;
  readonly plan: TransformPlan;
  /** Input files, and the outputs they were packed into (planned, in a dry run); rows rewritten, 0 for a dry run. */
  readonly files: number;
  readonly outputs: number;
  readonly rows: number;
  readonly runId?: string;
}

/**
 * Rewrites partition `options.partition` of the table at `uri` through the transformation in `options.transform`.
 * Refused before anything is listed: a transformation file that does not parse, a format whose schema belongs to the
 * table (its `partitionRewrite` capability says what it offers instead). Refused before anything is
 * written: a transformation that does not fit the partition's columns (an unknown column, an unconfirmed drop, an
 * expression that does not type), a partition of files of several schemas.
 * @throws CompactionFailedError when the rewrite failed (a value that does not convert, a verification that did not
 * match): nothing of it was published and the inputs are untouched.
 */
export async function runRewrite(
  uri: string,
  options: RewriteOptions,
  io: RewriteIo,
  hooks: RewriteHooks = {},
): Promise<RewriteResult> {
  const formatName = options.format ?? DEFAULT_TABLE_FORMAT;
  const capability = tableFormat(formatName).partitionRewrite;
  if (capability?.kind !== 'transform') {
    const title = tableFormat(formatName).title;
    throw new UsageError(
      `lake-compactor rewrite does not transform ${title} tables: ${capability?.advice ?? `the ${title} format has no partition rewrite`}`,
    );
  }
  const text = await readFile(options.transform, 'utf8').catch((err: unknown) => {
    throw new UsageError(
      `--transform ${options.transform} cannot be read (${err instanceof Error ? err.message : String(err)})`,
    );
  });
  const spec = parseTransformSpec(text, options.transform);
  const choices = planningChoicesOf({
    ...(options.targetMb === undefined ? {} : { targetMb: options.targetMb }),
  });
  const opened = openStore(uri, { env: io.env, workRoot: options.workRoot });
  const live = hooks.wrapStore?.(opened.store) ?? opened.store;
  const tableRoot = opened.prefix.replace(/\/$/, '');
  const table = options.table ?? tableNameOf(uri);
  const bucket = /^s3a?:\/\/([^/]+)/i.exec(uri.trim())?.[1] ?? 'local';
  const format = commandFormat(opened, table, formatName, formatSettingsOf(uri, formatName, options), io);
  const base = hooks.engine ?? defaultParquetEngine;
  await refuseEnclosingForeignTable(opened, { includeLocation: false });
  const wanted = options.partition.replace(/^\/+|\/+$/g, '');
  const parent = `cli-${new Date(io.clock.now()).toISOString().replace(/[-:]|\.\d+/g, '')}-${randomUUID().slice(0, 8)}`;
  // The run's transformation is in its context, so the plan, compact and verify steps treat it as the workflow's do;
  // its outputs hold transformed rows, from which no input can be rebuilt, so its inputs retire to trash.
  const run = buildRunContext(
    { name: table, prefix: tableRoot, bucket, format: formatName },
    wanted,
    {
      ...(options.codec === undefined ? {} : { codec: options.codec }),
      ...choices,
      strategy: 'binpack',
      dryRun: options.dryRun ?? false,
      force: true,
      quietMinutes: 0,
      trigger: 'operator',
      transform: spec,
      ...(options.confirmDrop === undefined ? {} : { confirmDrop: [...options.confirmDrop] }),
    },
    {
      executionName: childExecutionName(parent, wanted, 0),
      startedAt: io.clock.now(),
      workRoot: opened.workRoot,
    },
  );
  const journal = new StoreJournal(live, {
    workRoot: opened.workRoot,
    table: { name: table, root: tableRoot },
  });
  if (options.dryRun !== true) {
    // Fence rule, as compact: no plan may see a half-published group of this partition.
    await removeStaleTempFiles(opened.store, io.clock.now(), io.out);
    const settled = await settleOpenGroups(
      { store: live, journal, clock: io.clock, format, engine: base },
      table,
      { partition: wanted, settledBy: 'lake-compactor rewrite before planning' },
      io.out,
    );
    if (settled.some((p) => p.report.unsettled.length > 0))
      throw new UnsettledPartitionError(
        `groups an interrupted run left in partition ${wanted} could not be settled (listed above); nothing was rewritten. Run lake-compactor settle ${uri}, then rewrite again`,
      );
  }
  const transforms = defaultPartitionTransforms;
  const transform = { spec, confirmDrop: options.confirmDrop ?? [] };
  const prepared = await prepareRewrite(
    { store: live, format, transforms },
    { ...run, where: uri },
    transform,
    io.clock.now(),
    binpackOptionsOf(run),
  );
  const { files, plan, inputsPerOutput } = prepared;
  const outputs = inputsPerOutput.length;
  const first = files[0] as PlanInputFile;
  io.out(
    `${wanted}: ${plural(files.length, 'file')}, ${plural(
      files.reduce((n, f) => n + (f.rows ?? 0), 0),
      'row',
    )} → ${plural(outputs, 'output')} of about ${formatBytes(run.targetFileSizeBytes)}; written schema:`,
  );
  for (const line of describePlan(plan)) io.out(`  ${line}`);
  if (options.dryRun === true) {
    const preview = await transforms.preview(live, first.key, plan, options.previewRows ?? 10);
    io.out(`first ${plural(preview.length, 'row')} of ${printable(first.key)} as rewritten:`);
    io.out(
      renderTable(
        plan.columns.map((c, i) => ({
          header: c.name,
          value: (row: unknown[]) => shownValue(row[i]) ?? 'null',
        })),
        preview,
      ),
    );
    io.out('dry run: nothing was changed');
    return { partition: wanted, plan, files: files.length, outputs, rows: 0 };
  }
  // The plan is the run's stored plan, its transformation recorded in it: the plan step finds it and journals its
  // one group (a retry re-reads it); the compact and verify steps re-plan the transformation from it.
  await live.put(planKey(run.workRoot, run.runId), JSON.stringify(prepared.stored, null, 2), {
    contentType: 'application/json',
  });
  const ran = await runPartition(
    {
      store: live,
      journal,
      clock: io.clock,
      format,
      engine: base,
      transforms,
      leases: new MemoryLeases(),
      wait: async () => {},
    },
    run,
    // The compact step runs in this process: its memory is the one refusals were made under (and the estimate's).
    { plan: { inlineGroupLimit: Number.MAX_SAFE_INTEGER, compactMemoryMb: currentMemoryBudget().memoryMb } },
  );
  const group = ran.groups[0];
  if (group?.error !== undefined || group?.result.state !== 'done')
    throw new CompactionFailedError(
      `The rewrite of partition ${wanted} failed: ${group?.error?.message ?? group?.result.reason ?? ran.summary.firstError?.error ?? 'no group ran'}. Nothing of it was published; its inputs are untouched. Fix the data or the transformation, then rewrite again`,
    );
  const written = group.compacted?.rows ?? 0;
  const published = group.compacted?.outputs ?? outputs;
  io.out(
    `${wanted}: ${plural(files.length, 'file')} rewritten into ${plural(published, 'file')} (${plural(written, 'row')}), verified against the inputs re-derived, committed`,
  );
  // Its inputs' trash copies are the undo (until vacuum's retention): the same undo as a compact run's.
  io.out(`run ${run.runId}: lake-compactor undo ${uri} ${run.runId} reverts it`);
  return {
    partition: wanted,
    plan,
    files: files.length,
    outputs: published,
    rows: written,
    runId: run.runId,
  };
}
