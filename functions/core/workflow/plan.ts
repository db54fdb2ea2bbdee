// The plan step: settles what earlier runs left in the partition, inventories it, plans it, stores the
// plan and the Map's items file, and creates one `planned` journal entry per group — idempotently, so a
// retried step reuses its own plan.
import type { Clock } from '../../ports/clock.js';
import type { Journal, RetireMode } from '../../ports/journal.js';
import type { ObjectStore } from '../../ports/object-store.js';
import type { PartitionTransforms } from '../../ports/partition-transforms.js';
import type { Quarantine } from '../../ports/quarantine.js';
import {
  InvalidInputError,
  JournalConflictError,
  LeaseLostError,
  ObjectNotFoundError,
  UnsettledPartitionError,
} from '../errors.js';
import { formatRunOptions } from '../formats/index.js';
import type { CommitDeps, TableFormat } from '../formats/table-format.js';
import { keyRefusal, printable } from '../keys.js';
import {
  DEFAULT_PLAN_OPTIONS,
  FOOTER_DEFERRED_MAX_BYTES,
  type PartitionPlan,
  type PlanOptions,
  partitionPlanSchema,
  planPartition,
} from '../planning.js';
import { matchQuarantine } from '../quarantine.js';
import type { RunContext } from '../run-input.js';
import { describePlan, type RunTransform, replanTransform } from '../transform/spec.js';
import { failureReason, stepFormat } from './commit.js';
import { type CostEstimate, estimateCost, type StitchedInputs } from './cost.js';
import { itemsKey, outputFileName, planKey, previewKey, stagingPrefix, trashPrefix } from './layout.js';
import type { PartitionLeases } from './ports.js';
import { prepareRewrite, previewRewrite, type RewriteSummary } from './rewrite-plan.js';
import { settlePartition } from './settle.js';

export interface PlanDeps {
  readonly store: ObjectStore;
  readonly journal: Journal;
  readonly clock: Clock;
  /** Checked before planning: only the run holding the partition's lease may plan it. */
  readonly leases: Pick<PartitionLeases, 'holds'>;
  /**
   * Files whose rewrite failed on the file itself: planned around while unchanged, released when replaced
   * or removed. Absent (tools, tests of other steps): nothing is quarantined.
   */
  readonly quarantine?: Quarantine;
  /** The table's format: it snapshots the partition and settles earlier groups. @default `parquet` */
  readonly format?: TableFormat;
  /** Re-creates inputs when settling undoes a delete-rebuild group (see CommitDeps.engine). */
  readonly engine?: CommitDeps['engine'];
  /** Reads the partition's columns and previews rows for a run with a `transform`; needed by such runs only. */
  readonly transforms?: PartitionTransforms;
}

export interface PlanStepOptions {
  /** Groups up to this many are listed in the result for the inline Map; more go through the items file only. */
  readonly inlineGroupLimit: number;
  /**
   * Memory of the compact Lambda (or the CLI's process), for the cost estimate and to release quarantined files
   * refused for a memory the compact step now exceeds.
   */
  readonly compactMemoryMb: number;
}

/** One Map item: what a group's compact step needs besides the journal. */
export interface GroupItem {
  readonly groupId: string;
  readonly expectedOutputFiles: number;
}

/** Small on purpose (it travels in the execution state): counts, cost and where the plan is. */
export interface PlanStepResult {
  readonly planKey: string;
  readonly itemsKey: string;
  readonly bucket: string;
  readonly groupCount: number;
  /** The groups, when at most `inlineGroupLimit`; else empty (the Distributed Map reads the items file). */
  readonly groups: readonly GroupItem[];
  readonly inputFiles: number;
  readonly inputBytes: number;
  readonly plannedFiles: number;
  readonly plannedBytes: number;
  readonly expectedOutputFiles: number;
  readonly skippedFiles: number;
  readonly estimatedCost: CostEstimate;
  /** Why nothing is planned, when groupCount is 0. */
  readonly reason?: string;
  /** How this run's groups retire their inputs (the run's mode, unless delete mode had to fall back). */
  readonly retireMode: RetireMode;
  /** Why the retire mode differs from the run's, when it does. */
  readonly retireNote?: string;
  /** Groups of earlier runs this step settled before planning (e.g. after a run died mid-commit). */
  readonly settledGroups?: number;
  /** Dry runs: groups of earlier runs still open, which a real run settles before it plans. */
  readonly openGroups?: number;
  /** A partition rewrite: the written schema, and in a dry run where its preview rows were written. */
  readonly rewrite?: RewriteSummary;
}

/**
 * Plans the run's partition. A retry after a crash finds the stored plan and re-creates only missing
 * journal entries, so the groups never change between attempts (a new listing could differ).
 */
export async function planRun(
  deps: PlanDeps,
  run: RunContext,
  options: PlanStepOptions,
): Promise<PlanStepResult> {
  const ref = { table: run.table, partition: run.partition };
  // Outputs are written as `<partitionDir><file name>`: a partition folder the confinement rule refuses is refused
  // before anything is listed, settled or written (the formats refuse such a partition first; this is the last line).
  const outputRefusal = keyRefusal(run.tableRoot, `${run.partitionDir}${outputFileName(run, 'g0', 0)}`);
  if (outputRefusal !== undefined)
    throw new InvalidInputError(
      `Partition "${printable(run.partition)}" of table ${run.table}: its outputs would be written at a key that ${outputRefusal}; nothing was planned`,
    );
  if (!(await deps.leases.holds(ref, run.runId))) {
    throw new LeaseLostError(
      `Run ${run.runId} does not hold the lease of partition "${run.partition}" of table ${run.table} (it was released or taken over, e.g. this is a redrive of an old execution); nothing was planned. Start a new execution instead`,
    );
  }
  // Fence rule: no plan may list a partition in which an earlier group is half-published. A dry run
  // changes nothing, so it does not settle: it says how many groups a real run would settle first.
  const settled = run.dryRun
    ? { settled: [], unsettled: [] }
    : await settlePartition(deps, ref, {
        reason: failureReason({
          Error: 'RunInterrupted',
          Cause: `its run ended before this group did; settled by run ${run.runId} before planning again`,
        }),
        exceptRun: run.runId,
      });
  const open = run.dryRun
    ? (await deps.journal.listOpen(ref)).filter((g) => g.runId !== run.runId).length
    : 0;
  if (settled.unsettled.length > 0) {
    throw new UnsettledPartitionError(
      `Partition "${run.partition}" of table ${run.table} has ${settled.unsettled.length} group(s) of earlier runs that could not be settled (${settled.unsettled
        .map((u) => `${u.runId}/${u.groupId} ${u.state}: ${u.error}`)
        .join(
          '; ',
        )}). Nothing was planned; the partition is marked needs-attention. Fix the cause, then start a settle run`,
    );
  }
  const retirement = run.dryRun ? { retireMode: run.retireMode } : await retirementOf(deps.store, run);
  const stored = await readPlan(deps.store, run);
  const rewritten =
    run.transform === undefined ? undefined : await rewritePlan(deps, run, run.transform, stored);
  const plan =
    rewritten?.plan ??
    (await servicePlan(deps, run, stored, retirement)) ??
    stored ??
    (await makePlan(deps, run, options.compactMemoryMb));
  const items: GroupItem[] = plan.groups.map((g) => ({
    groupId: g.groupId,
    expectedOutputFiles: g.expectedOutputFiles,
  }));
  if (!run.dryRun) {
    await deps.store.put(itemsKey(run.workRoot, run.runId), JSON.stringify(items), {
      contentType: 'application/json',
    });
    await journalGroups(deps, run, plan, retirement);
  }
  const summary = plan.summary;
  return {
    planKey: planKey(run.workRoot, run.runId),
    itemsKey: itemsKey(run.workRoot, run.runId),
    bucket: run.bucket,
    groupCount: plan.groups.length,
    groups: plan.groups.length <= options.inlineGroupLimit ? items : [],
    inputFiles: summary.inputFiles,
    inputBytes: summary.inputBytes,
    plannedFiles: summary.plannedFiles,
    plannedBytes: summary.plannedBytes,
    expectedOutputFiles: summary.expectedOutputFiles,
    skippedFiles: plan.skipped.length,
    estimatedCost: estimateCost({
      groups: plan.groups.length,
      inputFiles: summary.plannedFiles,
      inputBytes: summary.plannedBytes,
      expectedOutputFiles: summary.expectedOutputFiles,
      retireMode: retirement.retireMode,
      compactMemoryMb: options.compactMemoryMb,
      listedFiles: summary.inputFiles,
      // Skipped files planned from the listing are not known here: counted as read, the estimate stays an upper bound.
      deferredFiles: plan.groups.reduce(
        (n, g) => n + g.files.filter((f) => f.footerDeferred === true).length,
        0,
      ),
      ...rowsOf(plan),
      partitionDepth: run.partitionDir.split('/').filter((s) => s !== '').length,
      ...stitchedOf(plan, run),
      composes: deps.store.putComposed !== undefined,
    }),
    ...(plan.reason === undefined ? {} : { reason: plan.reason }),
    retireMode: retirement.retireMode,
    ...(retirement.note === undefined ? {} : { retireNote: retirement.note }),
    ...(settled.settled.length === 0 ? {} : { settledGroups: settled.settled.length }),
    ...(open === 0 ? {} : { openGroups: open }),
    ...(rewritten === undefined ? {} : { rewrite: rewritten.summary }),
  };
}

/**
 * A rewrite run's plan: the stored one when an earlier attempt (or `lake-compactor rewrite`) made it, else the
 * partition listed, checked and planned through the run's transformation (see rewrite-plan.ts) and stored — not in a
 * dry run, which writes no plan: only its preview of the first rows, to the work area's `previews/`.
 * @throws InvalidInputError before anything is written: a partition or transformation the rewrite refuses, a step
 * without the means to read columns, a stored plan without a transformation.
 */
async function rewritePlan(
  deps: PlanDeps,
  run: RunContext,
  transform: RunTransform,
  stored: PartitionPlan | undefined,
): Promise<{ plan: PartitionPlan; summary: RewriteSummary }> {
  if (stored !== undefined) {
    if (stored.transform === undefined)
      throw new InvalidInputError(
        `Run ${run.runId} rewrites its partition through a transformation, but its stored plan records none; nothing was planned. Start a new execution`,
      );
    return { plan: stored, summary: { schema: describePlan(replanTransform(stored.transform).plan) } };
  }
  if (deps.transforms === undefined)
    throw new InvalidInputError(
      `Run ${run.runId} rewrites its partition through a transformation, which this step was not given the means to plan; nothing was planned`,
    );
  const sources = { store: deps.store, format: stepFormat(deps), transforms: deps.transforms };
  const prepared = await prepareRewrite(
    sources,
    { ...run, where: `table ${run.table}` },
    transform,
    deps.clock.now(),
    binpackOptionsOf(run),
  );
  if (run.dryRun) {
    // The preview's rows go to the work area, the output says where: no table row in the execution's data.
    const key = previewKey(run.workRoot, run.runId);
    const target = { runId: run.runId, table: run.table, partition: run.partition, key };
    const summary = await previewRewrite(sources, prepared, { ...target, uri: `s3://${run.bucket}/${key}` });
    return { plan: prepared.stored, summary };
  }
  await deps.store.put(planKey(run.workRoot, run.runId), JSON.stringify(prepared.stored, null, 2), {
    contentType: 'application/json',
  });
  return { plan: prepared.stored, summary: { schema: describePlan(prepared.plan) } };
}

/**
 * The format's table service as this run's plan (see TableFormat.planService), when it is due in the partition or an
 * earlier attempt stored it; undefined otherwise (and in a dry run, which writes nothing), so the run plans as usual.
 * The format records the plan through this step — stored and journaled — before it writes anything of it.
 */
async function servicePlan(
  deps: PlanDeps,
  run: RunContext,
  stored: PartitionPlan | undefined,
  retirement: { retireMode: RetireMode; note?: string },
): Promise<PartitionPlan | undefined> {
  const format = stepFormat(deps);
  if (run.dryRun || format.planService === undefined) return undefined;
  return format.planService(
    { store: deps.store, journal: deps.journal, clock: deps.clock },
    {
      location: { tableRoot: run.tableRoot, partition: run.partition, partitionDir: run.partitionDir },
      table: run.table,
      runId: run.runId,
      now: deps.clock.now(),
      binpack: binpackOptionsOf(run),
      ...(stored === undefined ? {} : { stored }),
      record: async (plan) => {
        await deps.store.put(planKey(run.workRoot, run.runId), JSON.stringify(plan, null, 2), {
          contentType: 'application/json',
        });
        await journalGroups(deps, run, plan, retirement);
      },
    },
  );
}

/**
 * One `planned` journal entry per group of `plan` (its inputs, the plan's formatState with the group's own over it),
 * skipping those an earlier attempt created: their state is the truth.
 */
async function journalGroups(
  deps: PlanDeps,
  run: RunContext,
  plan: PartitionPlan,
  retirement: { retireMode: RetireMode; note?: string },
): Promise<void> {
  const now = deps.clock.now();
  for (const group of plan.groups) {
    const formatState =
      plan.formatState === undefined && group.formatState === undefined
        ? undefined
        : { ...plan.formatState, ...group.formatState };
    try {
      await deps.journal.create({
        runId: run.runId,
        groupId: group.groupId,
        table: run.table,
        partition: run.partition,
        state: 'planned',
        inputs: group.files.map((f) => ({
          key: f.key,
          etag: f.etag,
          size: f.size,
          ...(f.rows === undefined ? {} : { rows: f.rows }),
          ...(f.deletes === undefined ? {} : { deletes: f.deletes }),
          ...(f.rowLineage === undefined ? {} : { rowLineage: f.rowLineage }),
          ...(f.projection === undefined ? {} : { projection: f.projection }),
          ...(f.footerDeferred === true ? { footerDeferred: true } : {}),
        })),
        outputs: [],
        retireMode: retirement.retireMode,
        ...(retirement.note === undefined ? {} : { note: retirement.note }),
        format: stepFormat(deps).name,
        ...(formatState === undefined ? {} : { formatState }),
        ...(run.strategy !== 'binpack' && run.sortColumns !== undefined
          ? { layout: { strategy: run.strategy, columns: run.sortColumns } }
          : {}),
        stagingPrefix: stagingPrefix(run.workRoot, run.runId, group.groupId),
        trashPrefix: trashPrefix(run.workRoot, run.runId),
        createdAt: now,
        updatedAt: now,
      });
    } catch (err) {
      // A previous attempt created it: its state is the truth, leave it.
      if (!(err instanceof JournalConflictError)) throw err;
    }
  }
}

/**
 * Delete mode (`versionedBuckets`) is trusted only as far as the bucket confirms it: a delete on a bucket
 * whose versioning is not Enabled cannot be undone, so the run's groups retire to trash instead, and the
 * plan says why. (The commit checks again per group, with the inputs' version ids.)
 */
async function retirementOf(
  store: ObjectStore,
  run: RunContext,
): Promise<{ retireMode: RetireMode; note?: string }> {
  if (run.retireMode !== 'delete-versioned') return { retireMode: run.retireMode };
  const versioning = store.versioning === undefined ? 'unknown' : await store.versioning();
  if (versioning === 'enabled') return { retireMode: 'delete-versioned' };
  return {
    retireMode: 'trash',
    note: `bucket ${run.bucket} is configured as versioned (versionedBuckets) but its versioning is ${versioning}, not Enabled: inputs are moved to trash instead of deleted, so they can be restored. Enable versioning on the bucket, or drop it from versionedBuckets`,
  };
}

/**
 * The planned inputs the engine will copy row group by row group (the cost estimate's stitched path): those whose
 * footer showed every row group large in a layout it copies (planning's `stitch`), in the run's codec, in an
 * order-keeping rewrite (a sort re-encodes every row), carrying nothing that changes which rows they give (deleted
 * rows, row lineage, a projection). Each group's are balanced into outputs of the target size, as the engine does.
 */
function stitchedOf(plan: PartitionPlan, run: RunContext): { stitched?: StitchedInputs } {
  if (run.strategy !== 'binpack') return {};
  const total = {
    files: 0,
    bytes: 0,
    rows: 0,
    rowGroups: 0,
    outputs: 0,
    proofReadsPerSide: 0,
    pageHeaderReads: 0,
  };
  for (const group of plan.groups) {
    const copied = group.files.filter(
      (f) =>
        f.stitch?.codec === run.codec &&
        f.deletes === undefined &&
        f.rowLineage === undefined &&
        f.projection === undefined,
    );
    if (copied.length === 0) continue;
    const bytes = copied.reduce((n, f) => n + f.size, 0);
    total.files += copied.length;
    total.bytes += bytes;
    total.outputs += Math.max(1, Math.min(copied.length, Math.ceil(bytes / run.targetFileSizeBytes)));
    for (const f of copied) {
      total.rows += f.rows ?? 0;
      total.rowGroups += f.stitch?.rowGroups ?? 0;
      total.proofReadsPerSide += f.stitch?.proofReadsPerSide ?? 0;
      total.pageHeaderReads += f.stitch?.pageHeaderRead === true ? 1 : 0;
    }
  }
  return total.files === 0 ? {} : { stitched: total };
}

/** The planned inputs' rows, when every footer gave them (the cost estimate's row groups and sample). */
function rowsOf(plan: PartitionPlan): { inputRows?: number } {
  const files = plan.groups.flatMap((g) => g.files);
  if (files.some((f) => f.rows === undefined)) return {};
  return { inputRows: files.reduce((n, f) => n + (f.rows ?? 0), 0) };
}

/** The run's stored plan, or undefined before the plan step wrote it. */
export async function readPlan(
  store: ObjectStore,
  run: Pick<RunContext, 'runId' | 'workRoot'>,
): Promise<PartitionPlan | undefined> {
  const key = planKey(run.workRoot, run.runId);
  if (!(await store.head(key))) return undefined;
  try {
    return partitionPlanSchema.parse(JSON.parse(new TextDecoder().decode(await store.get(key))));
  } catch (err) {
    if (err instanceof ObjectNotFoundError) return undefined;
    throw err;
  }
}

/**
 * Lists and plans the partition and stores the plan. Quarantined files still listed with their quarantined
 * ETag are left out (the plan's `skipped` says since when, by which run and why); records whose object was
 * replaced or removed since are cleared first — the failure was about an object that no longer exists — so
 * a writer's or an operator's new file is planned like any other (not in a dry run, which writes nothing) — and so
 * are records of a refusal the compact function's settings now lift (`compactMemoryMb`, the run's fidelity).
 * @throws UnsupportedTableFormatError, before anything is written, when the partition lies in or holds a
 * table of another format (its log or metadata folder above it, or in its listing).
 */
async function makePlan(deps: PlanDeps, run: RunContext, compactMemoryMb: number): Promise<PartitionPlan> {
  const now = deps.clock.now();
  // The run's own options of its format: what its listing may depend on (a schema union by column name) and its plan reads.
  const options = formatRunOptions(run.format, run);
  const { files, snapshot, formatState, values, properties, refusal } = await stepFormat(deps).partitionFiles(
    deps.store,
    { tableRoot: run.tableRoot, partition: run.partition, partitionDir: run.partitionDir },
    {
      now,
      readFooters: true,
      // A dry run writes nothing and is there to show what a run would do, file by file: it reads every footer, so its
      // plan names the tiny files a run's rewrite would leave out (unreadable, zero rows, alone of a schema) as skips.
      ...(run.dryRun ? {} : { deferFootersUpTo: FOOTER_DEFERRED_MAX_BYTES }),
      ...(Object.keys(options).length === 0 ? {} : { formatOptions: options }),
    },
  );
  const ref = { table: run.table, partition: run.partition };
  const records = deps.quarantine === undefined ? [] : await deps.quarantine.list(ref);
  // The compact function's settings: a refusal they lift (more memory, or logical fidelity) is tried again.
  const { active, released } = matchQuarantine(records, files, {
    schemaFidelity: run.schemaFidelity ?? 'exact',
    memoryMb: compactMemoryMb,
  });
  if (!run.dryRun && deps.quarantine !== undefined) {
    for (const record of released) await deps.quarantine.clear(ref, record.key);
  }
  const input = {
    table: run.table,
    partition: run.partition,
    files: [...files],
    snapshot,
    ...(active.length === 0 ? {} : { quarantined: active }),
  };
  const binpack = binpackOptionsOf(run);
  // A format with its own planning rules (its rewrite_data_files) plans with them; the rest bin-pack.
  const format = stepFormat(deps);
  const plan =
    format.planPartition === undefined
      ? planPartition(input, binpack)
      : format.planPartition(input, {
          binpack,
          ...(Object.keys(options).length === 0 ? {} : { options }),
          ...(run.where === undefined ? {} : { where: run.where }),
          ...(values === undefined ? {} : { values }),
          ...(properties === undefined ? {} : { properties }),
        });
  const planned: PartitionPlan = refusal === undefined ? plan : { ...plan, reason: refusal };
  // The snapshot's state (what to commit against) and the format's plan's own (what the commit must know) together.
  const stored: PartitionPlan =
    formatState === undefined
      ? planned
      : { ...planned, formatState: { ...planned.formatState, ...formatState } };
  await deps.store.put(planKey(run.workRoot, run.runId), JSON.stringify(stored, null, 2), {
    contentType: 'application/json',
  });
  return stored;
}

/**
 * The bin-pack planner's options of a run: its target, fewest files and small-file ratio, and its group cap raised
 * to twice the target when that is more (a target above 1 GiB with the default 2 GiB cap is a valid request).
 * Exported so `lake-compactor plan` plans with exactly the options this step plans a `compact` run with.
 */
export function binpackOptionsOf(
  run: Pick<RunContext, 'targetFileSizeBytes' | 'minInputFiles' | 'smallFileRatio' | 'maxGroupBytes'>,
): PlanOptions {
  return {
    ...DEFAULT_PLAN_OPTIONS,
    targetFileSizeBytes: run.targetFileSizeBytes,
    minInputFiles: run.minInputFiles,
    smallFileRatio: run.smallFileRatio,
    maxGroupBytes: Math.max(2 * run.targetFileSizeBytes, run.maxGroupBytes),
  };
}
