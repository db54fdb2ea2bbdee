// What `lake-compactor compact` does, loaded by compact.ts only when the command runs (help, --version and usage errors
// never load it, nor the AWS SDK and Parquet engine it reaches).
// `lake-compactor compact`: runs the workflow's own steps (plan → rewrite → verify → commit → finalize)
// in-process on a local folder or S3 prefix; `--dry-run` writes nothing, and any failed group exits non-zero.
//
// Its journal lives in the location itself, so a run killed at any moment is settled by the next one
// (or by `lake-compactor settle`) exactly as the workflow settles a dead execution: no row lost or doubled.

import { randomUUID } from 'node:crypto';
import { MemoryJournal } from '../adapters/memory-journal.js';
import { MemoryLeases } from '../adapters/memory-leases.js';
import { type OpenedStore, openStore } from '../adapters/open-store.js';
import { StoreJournal } from '../adapters/store-journal.js';
import { StoreQuarantine } from '../adapters/store-quarantine.js';
import {
  CompactionFailedError,
  CoordinationMismatchError,
  InvalidInputError,
  UnsettledPartitionError,
  UsageError,
} from '../core/errors.js';
import { refuseForeignAmong } from '../core/formats/foreign-tables.js';
import type { PartitionFilter } from '../core/formats/format-settings.js';
import {
  checkFormatRunInput,
  DEFAULT_TABLE_FORMAT,
  type FormatRunInput,
  formatPartitionFilter,
  formatsTakingRunInput,
  formatTakesRunInput,
  type TableFormatName,
} from '../core/formats/index.js';
import { printable } from '../core/keys.js';
import { currentMemoryBudget } from '../core/memory-budget.js';
import type { StatisticsMode } from '../core/parquet/statistics-policy.js';
import {
  isSkippedForContent,
  leftOutSkip,
  type PartitionPlan,
  partitionPlanSchema,
  type SkippedFile,
} from '../core/planning.js';
import { deltaReadersConflict, type Reader, readersSchema } from '../core/readers.js';
import { buildRunContext, childExecutionName, type RunContext, type Strategy } from '../core/run-input.js';
import { formatBytes } from '../core/stats.js';
import { plural } from '../core/words.js';
import type { GroupStepResult } from '../core/workflow/commit.js';
import type { RunSummary } from '../core/workflow/finalize.js';
import type { PartitionLeases } from '../core/workflow/ports.js';
import { type RunDeps, runPartition } from '../core/workflow/run.js';
import type { Clock } from '../ports/clock.js';
import type { Journal } from '../ports/journal.js';
import type { ObjectStore, PutOptions } from '../ports/object-store.js';
import type { Codec, ParquetEngine, SchemaFidelity } from '../ports/parquet-engine.js';
import { whileRenewing } from '../shared/lease-keeper.js';
import { defaultParquetEngine } from '../shared/parquet-engine.js';
import { tableNameOf } from './args.js';
import type { CompactProgress } from './compact-progress.js';
import { type DeploymentPorts, deploymentPorts } from './deployment-ports.js';
import { requireParquetFiles } from './errors.js';
import { type FormatCliOptions, formatSettingsOf } from './format-options.js';
import { commandFormat, readingFormat } from './format-services.js';
import { type PlanningFlags, planningChoicesOf, schemaEvolutionOf } from './planning-options.js';
import { removeStaleTempFiles, settleOpenGroups } from './settle-run.js';
import { renderTable } from './table.js';
import { refuseEnclosingForeignTable } from './table-format-guard.js';

export interface CompactIo {
  readonly out: (text: string) => void;
  readonly clock: Clock;
  readonly env: Readonly<Record<string, string | undefined>>;
}

export interface CompactOptions extends FormatCliOptions, PlanningFlags {
  /** Only this partition (path relative to the table root, e.g. `date=2024-01-15`). */
  readonly partition?: string;
  /** Plan and print only; nothing is written. */
  readonly dryRun?: boolean;
  /** @default 'zstd' */
  readonly codec?: Codec;
  /** DELTA_BINARY_PACKED for integer/timestamp columns where smaller; `false` forbids it. @default what `readers` allow */
  readonly deltaEncoding?: boolean;
  /** Reader families the outputs must stay readable by (READERS in core/readers.ts). @default undeclared: any reader */
  readonly readers?: readonly string[];
  /** Column-chunk statistics: `all`, or `auto` (none where the sample shows min/max cannot prune). @default 'all' */
  readonly statistics?: StatisticsMode;
  /** `logical`: write legacy physical forms (INT96, old decimals, 2-level lists) in the standard ones. @default 'exact' */
  readonly schemaFidelity?: SchemaFidelity;
  /** Table name recorded in plans and summaries. @default the URI's last path segment */
  readonly table?: string;
  /** Where plans, staging, trash, the journal and quarantine live in the location. @default `_lake-compactor/` */
  readonly workRoot?: string;
  /** The location's table format (see core/formats/index.ts). @default 'parquet' */
  readonly format?: TableFormatName;
  /** How outputs order rows: `binpack` (input order), `sort` or `zorder` by `columns`. @default 'binpack' */
  readonly strategy?: Strategy;
  /** The columns of a sort or Z-order. */
  readonly columns?: readonly string[];
  /** The planner options of a format that takes them (`formatTakesRunInput(format, 'rewriteDataFiles')`), in its own names. */
  readonly rewriteDataFiles?: FormatRunInput['rewriteDataFiles'];
  /** For a format that takes a partition filter (`formatTakesRunInput(format, 'where')`): only the partitions it passes. */
  readonly where?: string;
  /**
   * A deployment's DynamoDB state table (`--state-table`, or `--stack`'s output): the run then takes each
   * partition's lease there, as a workflow run does (refused while one holds it; renewed while this works, so the
   * sweep leaves it be), and journals there, so the deployment's plan step, sweep, settle and undo see its groups.
   * Without it the lease is in memory and excludes nothing: see {@link runCompact}.
   */
  readonly stateTable?: string;
  /**
   * Parquet engine worker threads each group is encoded and verified with (`--workers`), and the most a table's
   * `encodeWorkers` may ask for here. @default 1: everything on this thread
   */
  readonly workers?: number;
}

/** One partition's outcome, as printed in the summary. */
export interface CompactPartitionResult {
  readonly partition: string;
  /** The partition's run id (its journal entries, staging and plan are named after it). */
  readonly runId: string;
  readonly summary: RunSummary;
  /**
   * Files the plan left alone for what they are (unreadable footer, not Parquet, zero rows, quarantined,
   * archived), with the plan's reason: the summary names each, since only an operator can deal with them.
   */
  readonly skipped: readonly SkippedFile[];
  /** Groups whose outputs were verified against the inputs' fingerprint. */
  readonly verifiedGroups: number;
  readonly groups: readonly GroupStepResult[];
}

/** Test seams of {@link runCompact}. */
export interface CompactHooks {
  /** Replaces the Parquet engine (tests inject faults). @default defaultParquetEngine */
  readonly engine?: ParquetEngine;
  /** Wraps the opened store (tests count requests, inject faults or kill the process mid-run). */
  readonly wrapStore?: (store: ObjectStore) => ObjectStore;
  /** Kept up to date as partitions are planned and groups end (the command prints it on Ctrl-C). */
  readonly progress?: CompactProgress;
}

/**
 * Compacts every partition of the table at `uri` (or only `options.partition`) through `runPartition`
 * (core/workflow/run.ts): the state machine's step services, in its order and with its error handling, one
 * group after another.
 *
 * The journal is a {@link StoreJournal} in the location's own store (`_lake-compactor/journal/` at the root
 * of the folder, or of the bucket for `s3://`, beside the plans, staging and trash that vacuum knows), so
 * a run killed at any moment — even while a group publishes — is recovered by the next run: before anything
 * is listed or planned, every open group of the table (also of partitions a listing no longer shows) is
 * settled, forward from `publishing` on and back before it, exactly like the workflow's plan step does; the
 * planner then only ever sees a partition with no half-published group. Temp files a killed process left in
 * a local folder are removed first.
 *
 * A bin-pack deletes its inputs once its outputs are in (retire mode `delete-rebuild`: until the group is done,
 * its undo rebuilds an input from the outputs' rows); a sort or Z-order, whose outputs scatter an input's rows, first
 * copies its inputs to `_lake-compactor/trash/<run>/` (retire mode `trash`). So nothing is lost either way.
 * The lease is an in-memory one: it does not exclude a second CLI or a concurrent state-machine run on the
 * same partition — run one compact per table at a time (on a local folder the journal's compare-and-swap is atomic
 * only within one process). Beside a deployment, give its state table (`stateTable`): each partition's lease is
 * then the deployment's, and its groups are journaled in the deployment's journal (run ids `cli-deployed-…`, which
 * vacuum routes there), so the workflow, the sweep and an operator's settle or undo treat the run as one of their
 * own — a run killed mid-way is settled by the sweep once its lease's renewals have stopped.
 *
 * @throws TableFormatNotSupportedError, before anything is listed, when `format` is not an implemented format.
 * @throws UnsupportedTableFormatError, before anything is written, when the location is, lies in or holds
 * a table of a format whose own log or metadata, not the listing, says which files are live.
 * @throws UnsettledPartitionError when an interrupted group could not be settled (nothing was planned).
 * @throws InvalidInputError when the location holds no Parquet file (nothing is written).
 * @throws CompactionFailedError when any group failed (after every partition was tried and settled).
 */
export async function runCompact(
  uri: string,
  options: CompactOptions,
  io: CompactIo,
  hooks: CompactHooks = {},
): Promise<CompactPartitionResult[]> {
  return compactTable(uri, options, io, hooks, openStore(uri, { env: io.env, workRoot: options.workRoot }));
}

async function compactTable(
  uri: string,
  options: CompactOptions,
  io: CompactIo,
  hooks: CompactHooks,
  opened: OpenedStore,
): Promise<CompactPartitionResult[]> {
  const formatName = options.format ?? DEFAULT_TABLE_FORMAT;
  // The planning flags are plan's: the same parser, the same refusals (exit 2), before anything is listed.
  const choices = planningChoicesOf(options);
  const evolution = schemaEvolutionOf(options, formatName);
  checkStrategy(options);
  const readers = readersOf(options.readers);
  const conflict = deltaReadersConflict(options.deltaEncoding, readers, {
    name: '--delta-encoding',
    given: 'is given',
  });
  if (conflict !== undefined) throw new UsageError(conflict);
  const where = checkRewriteChoices(options, formatName);
  const dryRun = options.dryRun ?? false;
  // Beside a deployment: its journal and leases (a local folder is refused here, before anything is read).
  const deployment = deployedRun(options.stateTable, uri, opened, io);
  const live = hooks.wrapStore?.(opened.store) ?? opened.store;
  const store = dryRun ? dryRunStore(live) : live;
  const tableRoot = opened.prefix.replace(/\/$/, '');
  const table = options.table ?? tableNameOf(uri);
  // A format's commit coordination is declared on S3 even for a dry run (the same command line then commits). A dry
  // run commits nothing, and must not finish another writer's commit either: the registered format reads, bound
  // only to the settings it reads through (a catalog, which says where the table's current metadata is), and
  // unbound when none is given.
  const settings = formatSettingsOf(uri, formatName, options);
  const readSettings = formatSettingsOf(uri, formatName, options, 'read');
  const format = dryRun
    ? readingFormat(opened, table, formatName, readSettings, io)
    : commandFormat(opened, table, formatName, settings, io);
  const bucket = /^s3a?:\/\/([^/]+)/i.exec(uri.trim())?.[1] ?? 'local';
  // A foreign table's log or metadata, not the listing, says which files are live: refuse before any write.
  await refuseEnclosingForeignTable(opened, { includeLocation: false });
  let inventory = await format.snapshot(store, opened.prefix, { now: io.clock.now() });
  refuseForeignAmong(opened.store, opened.prefix, inventory.foreignTables);
  // Options that cannot hold for this table (sizes against its target) and a filter naming a field no partition
  // has are refused now, before an interrupted run is settled or anything is planned.
  checkFormatRunInput(formatName, options, { properties: inventory.properties });
  if (where !== undefined)
    where.checkFields([...new Set(inventory.partitions.flatMap((p) => p.values.map((v) => v.name)))]);
  const wanted = options.partition?.replace(/^\/+|\/+$/g, '');
  const storeJournal = new StoreJournal(live, {
    workRoot: opened.workRoot,
    table: { name: table, root: tableRoot },
  });
  if (dryRun) {
    await noteOpenGroups(storeJournal, table, wanted, io);
  } else {
    // Fence rule, for the whole table before its listing: no plan may see a half-published group.
    await removeStaleTempFiles(opened.store, io.clock.now(), io.out);
    const settled = await settleOpenGroups(
      { store, journal: storeJournal, clock: io.clock, format, engine: hooks.engine ?? defaultParquetEngine },
      table,
      {
        ...(wanted === undefined ? {} : { partition: wanted }),
        settledBy: 'lake-compactor compact before planning',
      },
      io.out,
    );
    const unsettled = settled.flatMap((p) => p.report.unsettled);
    if (unsettled.length > 0) {
      throw new UnsettledPartitionError(
        `${unsettled.length} group(s) an interrupted run left could not be settled (listed above); nothing was planned, so no row is counted twice by this run. Fix the cause (e.g. a permission), then run lake-compactor settle ${uri} or compact again`,
      );
    }
    // Settling moved files (outputs published, inputs retired or restored): plan from what is there now.
    if (settled.some((p) => p.report.settled.length > 0)) {
      inventory = await format.snapshot(store, opened.prefix, { now: io.clock.now() });
    }
  }
  // A dry run writes no journal (its plan is thrown away) and takes no lease; a real one journals where it compacts,
  // or in the deployment's journal under its lease.
  const deployed = dryRun ? undefined : deployment;
  // Keep in step with CLI_RUN_ID: vacuum routes this command's runs to the store journal by it.
  const parent = `${deployed === undefined ? 'cli' : 'cli-deployed'}-${new Date(io.clock.now()).toISOString().replace(/[-:]|\.\d+/g, '')}-${randomUUID().slice(0, 8)}`;
  // The format's own table service (TableFormat.tableService: log files merged into base files), after settling and before planning.
  if (!dryRun && format.tableService !== undefined) {
    const service = await format.tableService(
      {
        store,
        clock: io.clock,
        engine: hooks.engine ?? defaultParquetEngine,
        runId: parent,
        // Where this command's runs (and, beside a deployment, the deployment's) are journaled.
        journal: deployed?.journal ?? storeJournal,
        ...(options.workers !== undefined && { workers: options.workers }),
      },
      tableRoot,
    );
    for (const line of service.lines) io.out(line);
    if (service.changed) inventory = await format.snapshot(store, opened.prefix, { now: io.clock.now() });
  }
  // After settling, which may have brought files back: only then is an empty location really empty.
  requireParquetFiles(inventory, uri, 'compact');
  const partitions = inventory.partitions
    .filter((p) => where === undefined || where.passes(p.values))
    .map((p) => p.partition)
    .filter((p) => wanted === undefined || p === wanted);
  if (where !== undefined && partitions.length === 0)
    io.out(`no partition matches where ${where.text}: nothing to compact`);
  if (wanted !== undefined && partitions.length === 0 && where === undefined) {
    const known = inventory.partitions.map((p) => p.partition || '(root)');
    throw new InvalidInputError(
      `Partition "${wanted}" has no data files under ${uri}; known partitions: ${known.slice(0, 10).join(', ') || '(none)'}`,
    );
  }
  const journal: Journal = dryRun ? new MemoryJournal() : (deployed?.journal ?? storeJournal);
  const leases = new MemoryLeases();
  // Files a rewrite failed on are kept out of later runs' plans (until they change or `quarantine --clear`).
  const deps = {
    store,
    journal,
    clock: io.clock,
    format,
    quarantine: new StoreQuarantine(store, { workRoot: opened.workRoot }),
    engine: hooks.engine ?? defaultParquetEngine,
    ...(options.workers !== undefined && { workers: options.workers, maxWorkers: options.workers }),
  };
  const results: CompactPartitionResult[] = [];
  hooks.progress?.listed(partitions);
  for (const [index, partition] of partitions.entries()) {
    // An operator at the terminal: no quiet wait, everything else the workflow's defaults.
    const run = buildRunContext(
      { name: table, prefix: tableRoot, bucket, format: formatName },
      partition,
      {
        codec: options.codec,
        ...(options.strategy === undefined ? {} : { strategy: options.strategy }),
        ...(options.columns === undefined ? {} : { sortColumns: [...options.columns] }),
        deltaEncoding: options.deltaEncoding,
        ...(readers === undefined ? {} : { readers }),
        ...(options.statistics === undefined ? {} : { statistics: options.statistics }),
        ...(options.schemaFidelity === undefined ? {} : { schemaFidelity: options.schemaFidelity }),
        ...choices,
        ...evolution,
        dryRun,
        force: true,
        quietMinutes: 0,
        trigger: 'operator',
        ...(options.rewriteDataFiles === undefined ? {} : { rewriteDataFiles: options.rewriteDataFiles }),
        ...(where === undefined ? {} : { where: where.text }),
      },
      {
        executionName: childExecutionName(parent, partition, index),
        startedAt: io.clock.now(),
        workRoot: opened.workRoot,
      },
    );
    results.push(
      deployed === undefined
        ? await compactPartition(deps, leases, run, io, hooks.progress)
        : // Renewed while it works: the sweep has no execution to ask after, and would release it otherwise.
          await whileRenewing(deployed.leases, run.runId, io.clock, (kept) =>
            compactPartition(deps, kept, run, io, hooks.progress),
          ),
    );
    hooks.progress?.partitionDone(partition);
  }
  printSummary(io, results, options.dryRun ?? false);
  if (!dryRun && deployed === undefined && results.some((r) => r.groups.some((g) => g.state === 'done'))) {
    io.out(`run ${parent}: lake-compactor undo ${uri} ${parent} reverts it`);
  }
  // A deployment's journal keeps one run per partition (as the workflow's executions), and its undo takes one.
  for (const r of deployed === undefined ? [] : results) {
    if (!r.groups.some((g) => g.state === 'done')) continue;
    io.out(
      `run ${r.runId} (${r.partition || '(root)'}): lake-compactor undo ${uri} ${r.runId} --state-table ${deployed?.stateTable} reverts it`,
    );
  }
  // A group aborted right before its put because the log shows a writer that does not coordinate as declared is
  // not "an input changed": only a configuration change (or stopping that writer) fixes it, so the command fails.
  const mismatch = results.flatMap((r) => r.groups).find((g) => g.coordinationMismatch === true);
  if (mismatch !== undefined) {
    throw new CoordinationMismatchError(
      tableRoot,
      `A group of ${uri} was not committed: ${mismatch.reason ?? 'the log shows a writer that does not coordinate as declared'}. Nothing of it is in the table; compact again once the commit coordination declared in the format's options matches the table's writers`,
    );
  }
  const failed = results.filter((r) => r.summary.status === 'FAILED');
  if (failed.length > 0) {
    throw new CompactionFailedError(
      `${failed.length} of ${results.length} partitions failed (${failed
        .map((r) => `${r.partition || '(root)'}: ${r.summary.firstError?.error ?? 'failed'}`)
        .join(
          '; ',
        )}); their inputs are untouched. Fix the cause and re-run; leftovers under ${opened.workRoot} are removed by vacuum`,
    );
  }
  return results;
}

/**
 * Why a group wrote nothing, in words: every input left out (each listed with its reason under the run's skipped
 * files, so not repeated here), or the group's own reason (a conflict with the table, an input changed).
 */
function nothingRewritten(leftOut: number, reason: string | undefined): string {
  if (leftOut > 0) return `${plural(leftOut, 'input')} left in place (listed with the skipped files below)`;
  return `left alone (${reason ?? 'an input changed'})`;
}

/**
 * One partition through the workflow's orchestrator (core/workflow/run.ts), printing as it goes. The plan
 * files are held back until the plan has a group: a partition with nothing to do keeps no plan, so a run
 * that changes nothing leaves the location as it was.
 */
async function compactPartition(
  deps: Omit<RunDeps, 'leases' | 'wait'>,
  leases: PartitionLeases,
  run: RunContext,
  io: CompactIo,
  progress: CompactProgress | undefined,
): Promise<CompactPartitionResult> {
  const label = run.partition || '(root)';
  const held = holdPlanFiles(deps.store, run.runId);
  const ran = await runPartition(
    { ...deps, store: held.store, leases, wait: sleepSeconds },
    run,
    // The compact step runs in this process: its memory is the one refusals were made under (and the estimate's).
    { plan: { inlineGroupLimit: Number.MAX_SAFE_INTEGER, compactMemoryMb: currentMemoryBudget().memoryMb } },
    {
      planned: async (plan) => {
        progress?.planned(run.partition, run.dryRun ? 0 : plan.groupCount);
        if (plan.groupCount > 0) await held.release();
        if (run.dryRun || plan.groupCount === 0) {
          io.out(
            plan.groupCount === 0
              ? `${label}: nothing to do (${plan.reason ?? 'no group planned'})`
              : `${label}: would rewrite ${plural(plan.plannedFiles, 'file')} (${formatBytes(plan.plannedBytes)}) into ${plan.expectedOutputFiles} in ${plural(plan.groupCount, 'group')}`,
          );
        }
      },
      groupEnded: ({ item, compacted, result, error }) => {
        progress?.groupEnded(run.partition, item.groupId, error === undefined && result.state === 'done');
        io.out(
          error !== undefined
            ? `${label} ${item.groupId}: FAILED ${error.name}: ${error.message} (${result.state})`
            : (compacted?.outputs ?? 0) === 0 && result.state === 'aborted'
              ? `${label} ${item.groupId}: nothing rewritten, ${nothingRewritten(compacted?.leftOut?.length ?? 0, result.reason)}`
              : `${label} ${item.groupId}: ${plural(result.retired, 'file')} → ${result.published}, ${plural(compacted?.rows ?? 0, 'row')}, verified, ${result.state === 'done' ? 'committed' : result.state === 'pending' ? "published, committed with the run's other groups" : `left alone (${result.reason ?? 'an input changed'})`}`,
        );
      },
    },
  );
  // What the plan skipped for its content, and what the rewrite left out for the same (tiny files planned without
  // their footers): one list, reported alike.
  const skipped = [
    ...(held.plan()?.skipped ?? []).filter((s) => isSkippedForContent(s.reason)),
    ...ran.groups.flatMap((g) => (g.compacted?.leftOut ?? []).flatMap((l) => leftOutSkip(l) ?? [])),
  ];
  return {
    partition: run.partition,
    runId: run.runId,
    summary: ran.summary,
    skipped,
    verifiedGroups: ran.groups.filter((g) => g.verified).length,
    groups: ran.groups.map((g) => g.result),
  };
}

/** The quiet wait; never taken by `compact`, which runs with `force` (the operator is the one who knows). */
function sleepSeconds(seconds: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, seconds * 1000));
}

/**
 * A partition's outcome as the summary table says it: the run's, except that a run whose every group was left alone
 * (a conflict, or every input left out) says `left alone`, not `compacted`: nothing of it was.
 */
function outcomeWords(r: CompactPartitionResult): string {
  if (r.summary.status === 'FAILED') return 'FAILED';
  if (
    r.summary.outcome === 'compacted' &&
    r.groups.length > 0 &&
    r.groups.every((g) => g.state === 'aborted')
  )
    return 'left alone';
  return r.summary.outcome;
}

function printSummary(io: CompactIo, results: readonly CompactPartitionResult[], dryRun: boolean): void {
  io.out(
    renderTable(
      [
        { header: 'partition', value: (r) => r.partition || '(root)' },
        { header: 'outcome', value: outcomeWords },
        { header: 'files before', value: (r) => r.summary.filesBefore, align: 'right' },
        { header: 'files after', value: (r) => (dryRun ? '-' : r.summary.filesAfter), align: 'right' },
        { header: 'rows', value: (r) => (dryRun ? '-' : r.summary.rows), align: 'right' },
        { header: 'bytes before', value: (r) => formatBytes(r.summary.bytesBefore), align: 'right' },
        {
          header: 'bytes after',
          value: (r) => (dryRun ? '-' : formatBytes(r.summary.bytesAfter)),
          align: 'right',
        },
        {
          header: 'verified',
          value: (r) => (dryRun ? '-' : `${r.verifiedGroups}/${r.summary.groups}`),
          align: 'right',
        },
      ],
      results,
    ),
  );
  const sum = (f: (s: RunSummary) => number) => results.reduce((n, r) => n + f(r.summary), 0);
  const failed = results.filter((r) => r.summary.status === 'FAILED').length;
  io.out(
    dryRun
      ? `\ndry run: ${plural(results.length, 'partition')}, ${plural(
          sum((s) => s.groups),
          'group',
        )} planned; nothing was changed`
      : `\n${plural(results.length, 'partition')}: ${sum((s) => s.filesBefore)} → ${plural(
          sum((s) => s.filesAfter),
          'file',
        )}, ${plural(
          sum((s) => s.rows),
          'row',
        )} rewritten and verified, ${failed} failed`,
  );
  const skipped = results.flatMap((r) => r.skipped);
  if (skipped.length > 0) {
    io.out(`${plural(skipped.length, 'file')} skipped and left in place:`);
    for (const s of skipped.slice(0, PRINTED_SKIPS)) io.out(`  ${printable(s.key)}: ${printable(s.reason)}`);
    if (skipped.length > PRINTED_SKIPS) io.out(`  … and ${skipped.length - PRINTED_SKIPS} more`);
  }
}

/** Skipped files named in the summary; a lake with thousands of broken files gets the first ones and a count. */
const PRINTED_SKIPS = 50;

/**
 * The store the plan step writes through, holding back the run's plan and items files (`<runId>.json`,
 * `<runId>.items.json`) until {@link release}: the step writes them whatever it planned, and a compact that
 * finds nothing to do should leave no trace. Every other request passes through at once, in order.
 */
function holdPlanFiles(
  store: ObjectStore,
  runId: string,
): { store: ObjectStore; release: () => Promise<void>; plan: () => PartitionPlan | undefined } {
  const held: { key: string; body: Uint8Array | string; options: PutOptions | undefined }[] = [];
  const isPlanFile = (key: string) => key.endsWith(`/${runId}.json`) || key.endsWith(`/${runId}.items.json`);
  let plan: PartitionPlan | undefined;
  const holding: ObjectStore = {
    description: store.description,
    list: (prefix, options) => store.list(prefix, options),
    listAll: (prefix) => store.listAll(prefix),
    head: (key) => store.head(key),
    getRange: (key, start, end) => store.getRange(key, start, end),
    get: (key) => store.get(key),
    put: async (key, body, options) => {
      if (!isPlanFile(key)) return store.put(key, body, options);
      held.push({ key, body, options });
      if (key.endsWith(`/${runId}.json`)) {
        const text = typeof body === 'string' ? body : new TextDecoder().decode(body);
        plan = partitionPlanSchema.parse(JSON.parse(text));
      }
      return { etag: '"held"' };
    },
    putStream: (key, body, options) => store.putStream(key, body, options),
    copy: (source, destination, options) => store.copy(source, destination, options),
    deleteMany: (refs) => store.deleteMany(refs),
    ...(store.versioning === undefined
      ? {}
      : { versioning: async () => (await store.versioning?.()) ?? 'disabled' }),
  };
  return {
    store: holding,
    release: async () => {
      for (const { key, body, options } of held.splice(0)) await store.put(key, body, options);
    },
    /** The plan the step wrote (held or released), as data. */
    plan: () => plan,
  };
}

/**
 * A dry run settles nothing (it writes nothing), so it says where an interrupted run left groups open:
 * the real run settles them first, and its plan for those partitions may differ from this one.
 */
async function noteOpenGroups(
  journal: StoreJournal,
  table: string,
  wanted: string | undefined,
  io: CompactIo,
): Promise<void> {
  const open = (await journal.openPartitions(table)).filter(
    (p) => wanted === undefined || p.partition === wanted,
  );
  for (const p of open) {
    const groups = await journal.listOpen(p);
    io.out(
      `${p.partition || '(root)'}: ${groups.length} group(s) of an interrupted run are open; a real run settles them before planning (or run lake-compactor settle), so its plan may differ`,
    );
  }
}

/**
 * The store a dry run plans through: reads pass through, the plan step's own plan file is dropped, and
 * any other write is a bug (it throws instead of changing the lake).
 */
function dryRunStore(store: ObjectStore): ObjectStore {
  const refuse = (what: string): never => {
    throw new InvalidInputError(`A dry run tried to ${what}; nothing was changed. Report this as a bug`);
  };
  return {
    description: `${store.description} (dry run)`,
    list: (prefix, options) => store.list(prefix, options),
    listAll: (prefix) => store.listAll(prefix),
    head: (key) => store.head(key),
    getRange: (key, start, end) => store.getRange(key, start, end),
    get: (key) => store.get(key),
    put: async () => ({ etag: '"dry-run"' }),
    putStream: async (key) => refuse(`upload ${key}`),
    copy: async (source) => refuse(`copy ${source}`),
    deleteMany: async (refs) => refuse(`delete ${refs.length} objects`),
  };
}

/**
 * A sort needs a column, a Z-order two (one column is a sort), bin-packing none.
 * @throws UsageError before anything is listed or written.
 */
function checkStrategy(options: Pick<CompactOptions, 'strategy' | 'columns'>): void {
  const strategy = options.strategy ?? 'binpack';
  const columns = options.columns?.length ?? 0;
  if (strategy === 'binpack' && columns > 0)
    throw new UsageError(
      '--columns applies to --strategy sort or zorder; add one of them, or drop --columns',
    );
  if (strategy === 'sort' && columns === 0)
    throw new UsageError('--strategy sort needs the columns to sort by: --columns event_time[,user_id]');
  if (strategy === 'zorder' && columns < 2)
    throw new UsageError(
      '--strategy zorder needs at least two columns to interleave: --columns user_id,event_time (for one column use --strategy sort)',
    );
}

/**
 * The `--readers` list as reader families.
 * @throws UsageError naming every unknown reader and the accepted ones, before anything is listed or written.
 */
export function readersOf(names: readonly string[] | undefined): Reader[] | undefined {
  if (names === undefined) return undefined;
  const parsed = readersSchema.safeParse(names);
  if (parsed.success) return parsed.data;
  throw new UsageError(`--readers: ${parsed.error.issues.map((i) => i.message).join('; ')}`);
}

/**
 * `rewriteDataFiles` and `where` belong to the formats whose run input declares them, and a filter must parse:
 * checked before anything is listed.
 * @throws UsageError otherwise.
 */
export function checkRewriteChoices(
  options: Pick<CompactOptions, 'rewriteDataFiles' | 'where'>,
  format: TableFormatName,
): PartitionFilter | undefined {
  // Whose inputs these are is the registry's word (the format's run-input fragment), not a name compared here.
  const misplaced = (['rewriteDataFiles', 'where'] as const).some(
    (field) => options[field] !== undefined && !formatTakesRunInput(format, field),
  );
  if (misplaced)
    throw new UsageError(
      `--rewrite-option and --where apply to ${formatsTakingRunInput('rewriteDataFiles')
        .map((f) => `${f.title} tables (--format ${f.name})`)
        .join(' or ')}, not to format "${format}"; drop them`,
    );
  if (options.where === undefined) return undefined;
  // The table's format reads its own filter; one that does not parse is a usage error.
  try {
    return formatPartitionFilter(format, options.where);
  } catch (err) {
    if (err instanceof InvalidInputError) throw new UsageError(err.message);
    throw err;
  }
}

/**
 * The deployment's journal and leases when `stateTable` is given, for a table on S3 (a deployment's tables are);
 * undefined without it.
 * @throws UsageError for a local folder.
 */
function deployedRun(
  stateTable: string | undefined,
  uri: string,
  opened: OpenedStore,
  io: CompactIo,
): DeploymentPorts | undefined {
  if (stateTable === undefined) return undefined;
  if (!/^s3a?:\/\//i.test(uri.trim())) {
    throw new UsageError(
      `--state-table compacts a deployed table on S3 under the deployment's leases; ${uri} is a local folder, whose runs journal in the folder: drop --state-table`,
    );
  }
  return deploymentPorts(stateTable, opened, io.env);
}
