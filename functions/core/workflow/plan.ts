// The plan step: inventories one partition, plans it, stores the plan and the Map's items file, and
// creates one `planned` journal entry per group — idempotently, so a retried step reuses its own plan.
import type { Clock } from '../../ports/clock.js';
import type { Journal } from '../../ports/journal.js';
import type { ObjectStore } from '../../ports/object-store.js';
import { JournalConflictError, ObjectNotFoundError } from '../errors.js';
import { inventoryTable } from '../inventory.js';
import { type PartitionPlan, partitionPlanSchema, planPartition } from '../planning.js';
import type { RunContext } from '../run-input.js';
import { refuseForeignAmong, refuseForeignAround } from '../table-format.js';
import { type CostEstimate, estimateCost } from './cost.js';
import { itemsKey, planKey, stagingPrefix, trashPrefix } from './layout.js';

export interface PlanDeps {
  readonly store: ObjectStore;
  readonly journal: Journal;
  readonly clock: Clock;
}

export interface PlanStepOptions {
  /** Groups up to this many are listed in the result for the inline Map; more go through the items file only. */
  readonly inlineGroupLimit: number;
  /** Memory of the compact Lambda, for the cost estimate. */
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
  const plan = (await readPlan(deps.store, run.runId)) ?? (await makePlan(deps, run));
  const items: GroupItem[] = plan.groups.map((g) => ({
    groupId: g.groupId,
    expectedOutputFiles: g.expectedOutputFiles,
  }));
  if (!run.dryRun) {
    await deps.store.put(itemsKey(run.runId), JSON.stringify(items), { contentType: 'application/json' });
    const now = deps.clock.now();
    for (const group of plan.groups) {
      try {
        await deps.journal.create({
          runId: run.runId,
          groupId: group.groupId,
          table: run.table,
          partition: run.partition,
          state: 'planned',
          inputs: group.files.map((f) => ({ key: f.key, etag: f.etag, size: f.size })),
          outputs: [],
          retireMode: run.retireMode,
          stagingPrefix: stagingPrefix(run.runId, group.groupId),
          trashPrefix: trashPrefix(run.runId),
          createdAt: now,
          updatedAt: now,
        });
      } catch (err) {
        // A previous attempt created it: its state is the truth, leave it.
        if (!(err instanceof JournalConflictError)) throw err;
      }
    }
  }
  const summary = plan.summary;
  return {
    planKey: planKey(run.runId),
    itemsKey: itemsKey(run.runId),
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
      retireMode: run.retireMode,
      compactMemoryMb: options.compactMemoryMb,
    }),
    ...(plan.reason === undefined ? {} : { reason: plan.reason }),
  };
}

/** The run's stored plan, or undefined before the plan step wrote it. */
export async function readPlan(store: ObjectStore, runId: string): Promise<PartitionPlan | undefined> {
  if (!(await store.head(planKey(runId)))) return undefined;
  try {
    return partitionPlanSchema.parse(JSON.parse(new TextDecoder().decode(await store.get(planKey(runId)))));
  } catch (err) {
    if (err instanceof ObjectNotFoundError) return undefined;
    throw err;
  }
}

/**
 * Lists and plans the partition and stores the plan.
 * @throws UnsupportedTableFormatError, before anything is written, when the partition lies in or holds a
 * Delta or Iceberg table (a `_delta_log/` or Iceberg `metadata/` in a folder above it, or in its listing).
 */
async function makePlan(deps: PlanDeps, run: RunContext): Promise<PartitionPlan> {
  const now = deps.clock.now();
  // Listing the partition's directory only (not the table): files directly in it are partition ''.
  const root = run.partitionDir.replace(/\/$/, '');
  await refuseForeignAround(deps.store, run.partitionDir, { includeLocation: false });
  const inventory = await inventoryTable(deps.store, root, { now, readFooters: true });
  refuseForeignAmong(deps.store, run.partitionDir, inventory.foreignTables);
  const files = inventory.partitions.find((p) => p.partition === '')?.files ?? [];
  const plan = planPartition(
    { table: run.table, partition: run.partition, files: [...files], snapshot: { listedAt: now } },
    {
      targetFileSizeBytes: run.targetFileSizeBytes,
      minInputFiles: run.minInputFiles,
      smallFileRatio: run.smallFileRatio,
      maxGroupBytes: Math.max(2 * run.targetFileSizeBytes, run.maxGroupBytes),
    },
  );
  await deps.store.put(planKey(run.runId), JSON.stringify(plan, null, 2), {
    contentType: 'application/json',
  });
  return plan;
}
