// What `lake-compactor rewrite` does, loaded by rewrite.ts only when the command runs. An operator's transformation
// of one partition (core/transform/) through the workflow's own steps — plan → rewrite → verify → commit, journaled
// in the location like `compact` — with one group holding every file of the partition, so the partition is either
// all old or all new: a crash at any request is settled back or forward by the next run (or `settle`).
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { MemoryLeases } from '../adapters/memory-leases.js';
import { openStore } from '../adapters/open-store.js';
import { transformingEngine } from '../adapters/parquet-wasm/transform-rewrite.js';
import { partitionColumns, previewRows } from '../adapters/parquet-wasm/transform-verify.js';
import { StoreJournal } from '../adapters/store-journal.js';
import {
  CompactionFailedError,
  InvalidInputError,
  UnsettledPartitionError,
  UsageError,
} from '../core/errors.js';
import { DEFAULT_TABLE_FORMAT, type TableFormatName, tableFormat } from '../core/formats/index.js';
import { printable } from '../core/keys.js';
import { DEFAULT_PLAN_OPTIONS, type PartitionPlan, type PlanInputFile } from '../core/planning.js';
import { buildRunContext, childExecutionName } from '../core/run-input.js';
import { canonicalValue } from '../core/transform/digest.js';
import {
  describePlan,
  parseTransformSpec,
  planTransform,
  type TransformPlan,
} from '../core/transform/spec.js';
import { plural } from '../core/words.js';
import { planKey } from '../core/workflow/layout.js';
import { runPartition } from '../core/workflow/run.js';
import type { Clock } from '../ports/clock.js';
import type { ObjectStore } from '../ports/object-store.js';
import type { Codec, ParquetEngine } from '../ports/parquet-engine.js';
import { defaultParquetEngine } from '../shared/parquet-engine.js';
import { tableNameOf } from './args.js';
import { type FormatCliOptions, formatSettingsOf } from './format-options.js';
import { commandFormat } from './format-services.js';
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
  /** Input files (one output each), rows rewritten; 0 for a dry run. */
  readonly files: number;
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
  const run = {
    ...buildRunContext(
      { name: table, prefix: tableRoot, bucket, format: formatName },
      wanted,
      {
        ...(options.codec === undefined ? {} : { codec: options.codec }),
        strategy: 'binpack',
        dryRun: options.dryRun ?? false,
        force: true,
        quietMinutes: 0,
        trigger: 'operator',
      },
      {
        executionName: childExecutionName(parent, wanted, 0),
        startedAt: io.clock.now(),
        workRoot: opened.workRoot,
      },
    ),
    // The outputs hold transformed rows, so an input cannot be rebuilt from them: inputs are copied to trash first.
    retireMode: 'trash' as const,
  };
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
  const listed = await format.partitionFiles(
    live,
    { tableRoot, partition: run.partition, partitionDir: run.partitionDir },
    { now: io.clock.now(), readFooters: true },
  );
  if (listed.refusal !== undefined)
    throw new InvalidInputError(`Partition ${wanted} of ${uri}: ${listed.refusal}`);
  const files = [...listed.files].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  if (files.length === 0) throw new InvalidInputError(`Partition "${wanted}" has no data files under ${uri}`);
  const unreadable = files.filter((f) => f.unreadable !== undefined);
  if (unreadable.length > 0)
    throw new InvalidInputError(
      `Partition ${wanted} holds files whose footer cannot be read; a rewrite must take every file of it, so nothing was written`,
      unreadable.map((f) => `${printable(f.key)}: ${f.unreadable}`),
    );
  const schemas = new Set(files.map((f) => f.schemaFingerprint));
  if (schemas.size > 1)
    throw new InvalidInputError(
      `Partition ${wanted} holds files of ${schemas.size} Parquet schemas; a transformation is planned against one. Bring them to one schema first (compact with --schema-evolution union, where the table allows it)`,
    );
  const first = files[0] as PlanInputFile;
  const columns = await partitionColumns(live, first.key);
  const plan = planTransform(spec, columns, options.confirmDrop ?? []);
  io.out(
    `${wanted}: ${plural(files.length, 'file')}, ${plural(
      files.reduce((n, f) => n + (f.rows ?? 0), 0),
      'row',
    )}; written schema:`,
  );
  for (const line of describePlan(plan)) io.out(`  ${line}`);
  if (options.dryRun === true) {
    const preview = await previewRows(live, first.key, plan, options.previewRows ?? 10);
    io.out(`first ${plural(preview.length, 'row')} of ${printable(first.key)} as rewritten:`);
    io.out(
      renderTable(
        plan.columns.map((c, i) => ({ header: c.name, value: (row: unknown[]) => shownValue(row[i]) })),
        preview,
      ),
    );
    io.out('dry run: nothing was changed');
    return { partition: wanted, plan, files: files.length, rows: 0 };
  }
  // The plan is the run's stored plan: the plan step finds it and journals its one group (a retry re-reads it).
  const bytes = files.reduce((n, f) => n + f.size, 0);
  const rows = files.every((f) => f.rows !== undefined) ? files.reduce((n, f) => n + (f.rows ?? 0), 0) : null;
  const stored: PartitionPlan = {
    version: 1,
    table,
    partition: run.partition,
    options: DEFAULT_PLAN_OPTIONS,
    snapshot: listed.snapshot,
    ...(listed.formatState === undefined ? {} : { formatState: listed.formatState }),
    groups: [
      {
        groupId: 'g0001',
        schemaFingerprint: first.schemaFingerprint ?? 'unknown',
        files,
        bytes,
        rows,
        expectedOutputFiles: files.length,
      },
    ],
    skipped: [],
    summary: {
      inputFiles: files.length,
      inputBytes: bytes,
      plannedFiles: files.length,
      plannedBytes: bytes,
      groups: 1,
      expectedOutputFiles: files.length,
    },
  };
  await live.put(planKey(run.workRoot, run.runId), JSON.stringify(stored, null, 2), {
    contentType: 'application/json',
  });
  const ran = await runPartition(
    {
      store: live,
      journal,
      clock: io.clock,
      format,
      engine: transformingEngine(plan, columns, base),
      leases: new MemoryLeases(),
      wait: async () => {},
    },
    run,
    { plan: { inlineGroupLimit: Number.MAX_SAFE_INTEGER, compactMemoryMb: 1024 } },
  );
  const group = ran.groups[0];
  if (group?.error !== undefined || group?.result.state !== 'done')
    throw new CompactionFailedError(
      `The rewrite of partition ${wanted} failed: ${group?.error?.message ?? group?.result.reason ?? ran.summary.firstError?.error ?? 'no group ran'}. Nothing of it was published; its inputs are untouched. Fix the data or the transformation, then rewrite again`,
    );
  const written = group.compacted?.rows ?? 0;
  io.out(
    `${wanted}: ${plural(files.length, 'file')} rewritten (${plural(written, 'row')}), verified against the inputs re-derived, committed`,
  );
  // Its inputs' trash copies are the undo (until vacuum's retention): the same undo as a compact run's.
  io.out(`run ${run.runId}: lake-compactor undo ${uri} ${run.runId} reverts it`);
  return { partition: wanted, plan, files: files.length, rows: written, runId: run.runId };
}

function shownValue(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'string') return v;
  if (typeof v === 'bigint' || typeof v === 'number' || typeof v === 'boolean') return String(v);
  return canonicalValue(v);
}
