// What a Hudi `clean` removes, decided as Hudi's CleanPlanner decides it (HUDI-NOTES §8), then narrowed by our
// vacuum's retention gate. Pure: the listing and the timeline come from clean.ts.
//
// Policies (the table's writers' `hoodie.cleaner.policy`, which the table does not record, so it is declared):
// - KEEP_LATEST_COMMITS (n): the earliest commit to retain (ECTR) is the n-th completed write from the end, never
//   after the earliest pending one; a file group keeps its latest slice and its latest slice before the ECTR, and
//   loses every other slice older than the ECTR; a replaced group goes whole once its replacecommit precedes it.
// - KEEP_LATEST_BY_HOURS (h): the same, the ECTR being the first completed write at or after now − h.
// - KEEP_LATEST_FILE_VERSIONS (n): no ECTR; a group keeps its n newest slices; every replaced group goes.
//
// The retention gate (our vacuum's `retentionHours`): a file goes only once what superseded it completed before
// now − retentionHours. Under the commit-based policies this is one bound on the ECTR — it is moved back to the
// first write that completed inside the retention — so the plan is exactly the plan Hudi would make with that ECTR,
// and the ECTR recorded in the completed clean stays true for Hudi's incremental cleaner (it only revisits
// partitions written after the last clean's ECTR: an ECTR later than what we really cleaned would leak files).
//
// What no policy touches here: files of uncommitted or rolled-back writes (Hudi's rollback owns them), file groups
// in a pending clustering or compaction (the pending plan reads them), partition markers and anything else.

import { isPartitionMarker, type ListedFile, parseBaseFileName, parseLogFileName } from './file-groups.js';
import { compareInstantTimes, type HudiInstant } from './instants.js';
import { completionTimeOf, type HudiTimeline, isCommitted } from './timeline.js';

/** Hudi's cleaner policies (`hoodie.cleaner.policy`). */
export const HUDI_CLEANER_POLICIES = [
  'KEEP_LATEST_COMMITS',
  'KEEP_LATEST_BY_HOURS',
  'KEEP_LATEST_FILE_VERSIONS',
] as const;
export type HudiCleanerPolicy = (typeof HUDI_CLEANER_POLICIES)[number];

/** The policy and how much it retains (`hoodie.cleaner.commits.retained`, `.hours.retained`, `.fileversions.retained`). */
export interface HudiCleanerRules {
  readonly policy: HudiCleanerPolicy;
  readonly retained: number;
}

/** Hudi's defaults for each policy's retention (HoodieCleanConfig). */
export const HUDI_CLEANER_DEFAULT_RETAINED: Readonly<Record<HudiCleanerPolicy, number>> = {
  KEEP_LATEST_COMMITS: 10,
  KEEP_LATEST_BY_HOURS: 24,
  KEEP_LATEST_FILE_VERSIONS: 1,
};

/** One file the clean deletes. */
export interface HudiCleanFile extends ListedFile {
  readonly partition: string;
  readonly name: string;
  readonly reason: string;
}

/** One file a policy would delete that the retention gate keeps for now. */
export interface HudiCleanKept {
  readonly key: string;
  readonly reason: string;
}

/** A clean as planned. */
export interface HudiCleanPlan {
  readonly rules: HudiCleanerRules;
  /** The earliest commit to retain (commit-based policies with enough history); undefined otherwise. */
  readonly earliestCommitToRetain?: HudiInstant;
  /** Files to delete, sorted by key. */
  readonly files: readonly HudiCleanFile[];
  /** Files the policy alone would delete but our retention keeps (file-versions policy: see the module comment). */
  readonly kept: readonly HudiCleanKept[];
  /** Why nothing is cleaned, when the history is too short for the policy. */
  readonly note?: string;
}

/** What the planner judges against. */
export interface HudiCleanContext {
  readonly layoutVersion: number;
  readonly timeline: HudiTimeline;
  /** Every file of every partition folder (partition path → files). */
  readonly partitions: ReadonlyMap<string, readonly ListedFile[]>;
  /** An instant time as epoch ms in the table's zone; undefined for Hudi's special instants. */
  readonly epochMs: (instant: string) => number | undefined;
  /** The planning instant (epoch ms). */
  readonly now: number;
  /** Our vacuum's retention (hours): nothing superseded more recently goes. */
  readonly retentionHours: number;
}

const HOUR = 3_600_000;

/** One slice of a file group: its base instant, base file and logs. */
interface Slice {
  readonly baseInstant: string;
  readonly files: ListedFile[];
}

/** A completed write's time for ageing: its completion time on layout 2, its instant time on layout 1. */
function completedAtMs(ctx: HudiCleanContext, instant: HudiInstant): number | undefined {
  return ctx.epochMs(instant.completionTime ?? instant.time);
}

/** Whether `instant` completed before the retention cutoff (unknown ages count as recent: kept). */
function beforeCutoff(ctx: HudiCleanContext, instant: HudiInstant): boolean {
  const at = completedAtMs(ctx, instant);
  return at !== undefined && at < ctx.now - ctx.retentionHours * HOUR;
}

/** The instants of pending writes and plans: Hudi never lets the ECTR pass the earliest of them. */
function earliestPending(timeline: HudiTimeline): string | undefined {
  const times = [
    ...timeline.pendingWrites.map((i) => i.time),
    ...timeline.pendingReplaces.map((i) => i.time),
    ...timeline.pendingPlans.map((p) => p.instant.time),
  ].sort(compareInstantTimes);
  return times[0];
}

/**
 * The ECTR Hudi's policy gives (CleanerUtils.getEarliestCommitToRetain), before our retention gate; undefined when
 * the history is too short.
 */
export function policyEarliestCommitToRetain(
  ctx: HudiCleanContext,
  rules: HudiCleanerRules,
): HudiInstant | undefined {
  const commits = ctx.timeline.completedWrites.map((w) => w.instant);
  if (rules.policy === 'KEEP_LATEST_COMMITS') {
    if (commits.length <= rules.retained) return undefined;
    const nth = commits[commits.length - rules.retained];
    const pending = earliestPending(ctx.timeline);
    if (nth === undefined || pending === undefined || compareInstantTimes(nth.time, pending) <= 0) return nth;
    return commits.filter((c) => compareInstantTimes(c.time, pending) < 0).at(-1);
  }
  if (rules.policy === 'KEEP_LATEST_BY_HOURS') {
    const cutoff = ctx.now - rules.retained * HOUR;
    return commits.find((c) => {
      const at = ctx.epochMs(c.time);
      return at !== undefined && at >= cutoff;
    });
  }
  return undefined;
}

/**
 * The clean Hudi's policy would plan now, narrowed by our retention (see the module comment).
 */
export function planHudiClean(ctx: HudiCleanContext, rules: HudiCleanerRules): HudiCleanPlan {
  const timeline = ctx.timeline;
  const replacedBy = new Map<string, HudiInstant>();
  for (const w of timeline.completedWrites)
    for (const [partition, ids] of w.metadata.partitionToReplaceFileIds)
      for (const id of ids) replacedBy.set(`${partition}\0${id}`, w.instant);
  const inPlan = new Set<string>();
  for (const p of timeline.pendingPlans)
    for (const g of p.fileGroups) inPlan.add(`${g.partitionPath}\0${g.fileId}`);

  const commitBased = rules.policy !== 'KEEP_LATEST_FILE_VERSIONS';
  let ectr: HudiInstant | undefined;
  if (commitBased) {
    const byPolicy = policyEarliestCommitToRetain(ctx, rules);
    if (byPolicy === undefined)
      return {
        rules,
        files: [],
        kept: [],
        note:
          rules.policy === 'KEEP_LATEST_COMMITS'
            ? `the timeline holds ${timeline.completedWrites.length} completed write(s), not more than the ${rules.retained} ${rules.policy} retains`
            : `no completed write is within the last ${rules.retained} h that ${rules.policy} retains`,
      };
    // Our retention: the ECTR moves back to the first write that completed inside it.
    const recent = timeline.completedWrites.map((w) => w.instant).find((i) => !beforeCutoff(ctx, i));
    ectr = recent !== undefined && compareInstantTimes(recent.time, byPolicy.time) < 0 ? recent : byPolicy;
  }

  const files: HudiCleanFile[] = [];
  const kept: HudiCleanKept[] = [];
  for (const [partition, listed] of ctx.partitions) {
    const groups = groupsOf(ctx, listed);
    for (const [fileId, slices] of groups) {
      const id = `${partition}\0${fileId}`;
      if (inPlan.has(id)) continue;
      const replacing = replacedBy.get(id);
      if (replacing !== undefined) {
        const due = commitBased
          ? ectr !== undefined && compareInstantTimes(replacing.time, ectr.time) < 0
          : beforeCutoff(ctx, replacing);
        const reason = `file group ${fileId} was replaced by replacecommit ${replacing.time}`;
        for (const s of slices)
          for (const f of s.files) {
            if (due) files.push(cleanFile(partition, f, reason));
            else if (!commitBased)
              kept.push({ key: f.key, reason: `${reason}, inside the vacuum's retention` });
          }
        continue;
      }
      // Newest first.
      const desc = [...slices].sort((a, b) => compareInstantTimes(b.baseInstant, a.baseInstant));
      if (commitBased && ectr !== undefined) {
        const cut = ectr.time;
        const latest = desc[0]?.baseInstant;
        const latestBeforeEctr = desc.find((s) => compareInstantTimes(s.baseInstant, cut) < 0)?.baseInstant;
        for (const s of desc) {
          if (s.baseInstant === latest || s.baseInstant === latestBeforeEctr) continue;
          if (compareInstantTimes(s.baseInstant, cut) >= 0) continue;
          const reason = `file slice ${s.baseInstant} of ${fileId} is older than the earliest commit to retain ${cut} and not the latest before it`;
          for (const f of s.files) files.push(cleanFile(partition, f, reason));
        }
      } else if (!commitBased) {
        desc.forEach((s, i) => {
          if (i < rules.retained) return;
          // The slice that superseded this one must have completed before our retention's cutoff.
          const newer = desc[i - 1] as Slice;
          const newerInstant = writeOf(timeline, newer.baseInstant);
          const reason = `file slice ${s.baseInstant} of ${fileId} is beyond the ${rules.retained} newest version(s) kept`;
          const due = newerInstant !== undefined && beforeCutoff(ctx, newerInstant);
          for (const f of s.files)
            if (due) files.push(cleanFile(partition, f, reason));
            else kept.push({ key: f.key, reason: `${reason}, superseded inside the vacuum's retention` });
        });
      }
    }
  }
  files.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  kept.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return { rules, ...(ectr === undefined ? {} : { earliestCommitToRetain: ectr }), files, kept };
}

function cleanFile(partition: string, f: ListedFile, reason: string): HudiCleanFile {
  return { ...f, partition, name: f.key.slice(f.key.lastIndexOf('/') + 1), reason };
}

/** The completed write of `time`, or a stand-in for an archived one (older than the active timeline). */
function writeOf(timeline: HudiTimeline, time: string): HudiInstant | undefined {
  const w = timeline.completedWrites.find((c) => c.instant.time === time);
  if (w !== undefined) return w.instant;
  if (!isCommitted(timeline, time)) return undefined;
  return { time, action: 'commit', state: 'completed', fileName: '' };
}

/**
 * The committed slices of each file group of one partition (file id → slices). A base file starts a slice; a log
 * joins its slice as the reader joins it (v6: by the base instant its name carries; v8+: the newest base before the
 * log's completion). Files of uncommitted or rolled-back writes are left out: they are not the cleaner's.
 */
function groupsOf(ctx: HudiCleanContext, listed: readonly ListedFile[]): Map<string, Slice[]> {
  const bases = new Map<string, Map<string, ListedFile[]>>();
  const logs: { fileId: string; instant: string; file: ListedFile }[] = [];
  for (const f of listed) {
    const name = f.key.slice(f.key.lastIndexOf('/') + 1);
    if (isPartitionMarker(name)) continue;
    const base = parseBaseFileName(name);
    if (base !== undefined) {
      if (!isCommitted(ctx.timeline, base.instantTime)) continue;
      let group = bases.get(base.fileId);
      if (group === undefined) {
        group = new Map();
        bases.set(base.fileId, group);
      }
      const slice = group.get(base.instantTime);
      if (slice === undefined) group.set(base.instantTime, [f]);
      else slice.push(f);
      continue;
    }
    const log = parseLogFileName(name);
    if (log === undefined || log.cdc) continue;
    if (ctx.layoutVersion >= 2 && !isCommitted(ctx.timeline, log.instantTime)) continue;
    logs.push({ fileId: log.fileId, instant: log.instantTime, file: f });
  }
  const out = new Map<string, Slice[]>();
  for (const [fileId, slices] of bases)
    out.set(
      fileId,
      [...slices].map(([baseInstant, files]) => ({ baseInstant, files })),
    );
  for (const log of logs) {
    const slices = out.get(log.fileId) ?? [];
    out.set(log.fileId, slices);
    let owner: Slice | undefined;
    if (ctx.layoutVersion >= 2) {
      const completion = completionTimeOf(ctx.timeline, log.instant) ?? log.instant;
      owner = slices
        .filter((s) => compareInstantTimes(s.baseInstant, completion) < 0)
        .sort((a, b) => compareInstantTimes(b.baseInstant, a.baseInstant))[0];
    } else {
      owner = slices.find((s) => s.baseInstant === log.instant);
      // A v6 log of an uncommitted base instant is not the cleaner's.
      if (owner === undefined && !isCommitted(ctx.timeline, log.instant)) continue;
    }
    if (owner === undefined) {
      owner = { baseInstant: log.instant, files: [] };
      slices.push(owner);
    }
    owner.files.push(log.file);
  }
  return out;
}
