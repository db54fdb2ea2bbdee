// Which pending Hudi plans are ours, durably: the mark lake-compactor writes into the `extraMetadata` of every plan
// it schedules — the HoodieCompactionPlan of `T.compaction.requested`, and the HoodieRequestedReplaceMetadata of
// `T.replacecommit.requested` (v6) / `T.clustering.requested` (v8+). In Hudi's Avro schemas both fields are a
// nullable map of strings that Hudi copies along and never interprets beyond the keys it knows (`schema`, Spark
// SQL's `_hoodie.spark.sql.writes.prepped`, …), so extra keys change nothing for Hudi's writers, readers or table
// services.
//
// Without a mark, "ours" could only mean "minted by this same run": a plan left by a run that died (or by an older
// deployment) looked like a Hudi writer's, which we must never remove, so it stayed and its partition went
// needs-attention. With the mark, a plan whose writer run is dead is settled by the next run as that run would
// have settled it (compaction-workflow.ts, compaction-run.ts, abandoned-plans.ts); a plan without it — a Hudi
// writer's own, or one written before the mark existed — is never touched.
import type { RequestedReplaceMetadata } from './timeline-writer/index.js';

/** The writer key's value: the tool that wrote the plan. */
export const PLAN_WRITER = 'lake-compactor';

/** The keys of the mark in a plan's extraMetadata (prefixed, so no Hudi key can clash). */
export const PLAN_MARK_KEYS = {
  writer: 'lake-compactor.writer',
  run: 'lake-compactor.run',
  group: 'lake-compactor.group',
} as const;

/** Who scheduled a plan of ours: the run, and for clustering the group of that run. */
export interface HudiPlanMark {
  readonly run: string;
  readonly group?: string;
}

/** The extraMetadata entries naming `mark`'s run (and group) as the plan's writer. */
export function planMarkMetadata(mark: HudiPlanMark): Record<string, string> {
  return {
    [PLAN_MARK_KEYS.writer]: PLAN_WRITER,
    [PLAN_MARK_KEYS.run]: mark.run,
    ...(mark.group === undefined ? {} : { [PLAN_MARK_KEYS.group]: mark.group }),
  };
}

/** A clustering plan with the mark added to its top-level extraMetadata (the plan itself unchanged). */
export function markedClusteringPlan(
  plan: RequestedReplaceMetadata,
  mark: HudiPlanMark,
): RequestedReplaceMetadata {
  return { ...plan, extraMetadata: { ...(plan.extraMetadata ?? {}), ...planMarkMetadata(mark) } };
}

/**
 * The mark in a decoded plan's extraMetadata (an Avro map: a plain object or a Map), or undefined when the plan is
 * not ours — no writer key naming lake-compactor, or no run.
 */
export function planMarkOf(extraMetadata: unknown): HudiPlanMark | undefined {
  const get = (key: string): unknown =>
    extraMetadata instanceof Map
      ? extraMetadata.get(key)
      : typeof extraMetadata === 'object' && extraMetadata !== null
        ? (extraMetadata as Record<string, unknown>)[key]
        : undefined;
  const run = get(PLAN_MARK_KEYS.run);
  if (get(PLAN_MARK_KEYS.writer) !== PLAN_WRITER || typeof run !== 'string' || run === '') return undefined;
  const group = get(PLAN_MARK_KEYS.group);
  return typeof group === 'string' && group !== '' ? { run, group } : { run };
}
