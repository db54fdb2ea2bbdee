// Builds the HTML report's data model from a listing, stored plans, quarantine records and (optionally)
// history items: every figure comes from one of those sources and is labelled with it; nothing is guessed.
import type { QuarantinedFile } from '../quarantine.js';
import { partitionDir } from '../run-input.js';

const MiB = 1024 * 1024;

/** One size bucket of the histograms: `[minBytes, maxBytes)`; the last has no upper bound. */
export interface SizeBucket {
  /** `8–32 MiB`: for tables and tooltips. */
  readonly label: string;
  /** `8–32M`: for a chart axis. */
  readonly shortLabel: string;
  readonly minBytes: number;
  readonly maxBytes?: number;
}

function sizeText(bytes: number): { value: string; unit: string } {
  const [div, unit] = bytes >= MiB ? [MiB, 'MiB'] : [1024, 'KiB'];
  return { value: String(Number((bytes / div).toFixed(1))), unit };
}

/**
 * Log-scale buckets anchored on the target size T: below T/128 (writers' debris), T/128–T/16 and T/16–T/4
 * (micro-batches), T/4 up to the small-file threshold, and "not small" (≥ ratio·T) — so the last bucket is
 * exactly what the planner leaves alone. For T = 128 MiB: <1, 1–8, 8–32, 32–96, ≥96 MiB.
 */
export function sizeBuckets(targetFileSizeBytes: number, smallFileRatio: number): SizeBucket[] {
  const small = Math.ceil(smallFileRatio * targetFileSizeBytes);
  const edges = [targetFileSizeBytes / 128, targetFileSizeBytes / 16, targetFileSizeBytes / 4]
    .map(Math.round)
    .filter((e) => e < small);
  edges.push(small);
  const buckets: SizeBucket[] = [];
  let low = 0;
  for (const edge of edges) {
    const hi = sizeText(edge);
    if (low === 0) {
      buckets.push({
        label: `< ${hi.value} ${hi.unit}`,
        shortLabel: `<${hi.value}${hi.unit[0]}`,
        minBytes: 0,
        maxBytes: edge,
      });
    } else {
      const lo = sizeText(low);
      const from = lo.unit === hi.unit ? lo.value : `${lo.value} ${lo.unit} `;
      buckets.push({
        label: `${from}–${hi.value} ${hi.unit}`,
        shortLabel: `${lo.value}${lo.unit === hi.unit ? '' : lo.unit[0]}–${hi.value}${hi.unit[0]}`,
        minBytes: low,
        maxBytes: edge,
      });
    }
    low = edge;
  }
  const top = sizeText(low);
  buckets.push({
    label: `≥ ${top.value} ${top.unit}`,
    shortLabel: `≥${top.value}${top.unit[0]}`,
    minBytes: low,
  });
  return buckets;
}

/** The buckets for the default target (128 MiB, small below 75%). */
export const SIZE_BUCKETS: readonly SizeBucket[] = sizeBuckets(128 * MiB, 0.75);

export interface ReportFile {
  readonly key: string;
  readonly size: number;
}

/** A partition's data files as listed now. */
export interface ReportListingPartition {
  /** Raw partition path relative to the table root; '' when unpartitioned. */
  readonly partition: string;
  readonly files: readonly ReportFile[];
}

/** What the report needs of a stored plan (`<work root>plans/<runId>.json`). */
export interface ReportPlan {
  readonly runId: string;
  readonly partition: string;
  /** When the plan's listing was taken, epoch ms. */
  readonly listedAt: number;
  /** Every data file the partition had when planned, and their bytes. */
  readonly inputFiles: number;
  readonly inputBytes: number;
  /** The grouped (to-be-rewritten) files, with sizes. */
  readonly groupFiles: readonly ReportFile[];
  /** The files the plan left alone (the plan stores their keys, not their sizes). */
  readonly skippedKeys: readonly string[];
  readonly groups: number;
  /** The target size the plan used. */
  readonly targetFileSizeBytes?: number;
}

/** What the report needs of a history item (the state table's `RUN#` items). */
export interface ReportRun {
  readonly runId: string;
  readonly partition: string;
  readonly outcome: string;
  readonly status: string;
  readonly startedAt: number;
  readonly finishedAt: number;
  readonly dryRun?: boolean;
  readonly groupsDone?: number;
  readonly filesBefore?: number;
  readonly filesAfter?: number;
  readonly bytesBefore?: number;
  readonly bytesAfter?: number;
  readonly bytesRewritten?: number;
  readonly estimatedCostUsd?: number;
}

/** A quarantine record as the report shows it. */
export interface ReportQuarantined extends QuarantinedFile {
  /**
   * Whether the listing still holds the object the rewrite failed on (same key and ETag): then later runs
   * leave it out. Otherwise it was replaced or removed, and the next plan releases the record.
   */
  readonly held: boolean;
}

export interface ReportInput {
  /** Table name shown in the title. */
  readonly table: string;
  /** The location as the operator gave it. */
  readonly location: string;
  /** Key prefix of the table inside its store ('' or ending with `/`). */
  readonly tableRoot: string;
  /** When the listing was taken (epoch ms); the "now" of every figure. */
  readonly generatedAt: number;
  /** A file is small below `smallFileRatio × targetFileSizeBytes` (the planner's rule). */
  readonly targetFileSizeBytes: number;
  readonly smallFileRatio: number;
  readonly listing: readonly ReportListingPartition[];
  readonly plans: readonly ReportPlan[];
  /** History items of this table; undefined when no state table was given (not the same as none). */
  readonly history?: readonly ReportRun[];
  /**
   * The runs the CLI recorded in the location's journal (a run per partition of a `compact`): files and bytes are
   * the run's own inputs → outputs, not the partition's. Undefined when not read.
   */
  readonly journal?: readonly ReportRun[];
  /** Caveats the caller found while gathering (unreadable plans, limits hit...). */
  readonly notes?: readonly string[];
  /** This table's quarantined files, and where they were read; undefined when none was read. */
  readonly quarantine?: { readonly source: string; readonly files: readonly ReportQuarantined[] };
}

/** Counts and bytes of a set of files, with their size histogram over the model's `buckets`. */
export interface FileStats {
  readonly files: number;
  readonly bytes: number;
  /** Files whose size is known and below the small-file threshold. */
  readonly smallFiles: number;
  /** Per bucket of the model's `buckets`; files of unknown size are not in any bucket. */
  readonly histogram: readonly number[];
  /** Files known to exist whose size is unknown (see {@link PartitionBefore}). */
  readonly unknownSizeFiles: number;
}

/** The partition as its latest carried-out compaction run found it. */
export interface PartitionBefore extends FileStats {
  readonly runId: string;
  readonly at: number;
  /** How the run is known to have been carried out. */
  readonly evidence: 'history' | 'journal' | 'outputs-listed';
}

export interface PartitionReport {
  readonly partition: string;
  /** Display name: the partition path, or `(root)`. */
  readonly label: string;
  readonly now: FileStats;
  readonly before?: PartitionBefore;
  /** Why there is no "before", when there is none. */
  readonly beforeNote?: string;
}

export interface TimelinePoint {
  readonly at: number;
  readonly files: number;
  /** `before`: a run's start (history) or its plan's listing; `after`: a run's end; `now`: this listing. */
  readonly kind: 'before' | 'after' | 'now';
  readonly runId?: string;
}

export interface TimelineSeries {
  readonly partition: string;
  readonly label: string;
  /** Sorted by time. */
  readonly points: readonly TimelinePoint[];
}

/**
 * One row of the runs table: from history when there is a state table, from the CLI's journal for a run the CLI
 * made, else from the stored plans.
 */
export interface RunRow {
  readonly source: 'history' | 'journal' | 'plan';
  readonly runId: string;
  readonly partition: string;
  readonly label: string;
  readonly startedAt: number;
  readonly finishedAt?: number;
  /** History: the outcome; journal: how far the run got; plans: `carried out` or `no outputs listed`. */
  readonly outcome: string;
  readonly status?: string;
  /** History: the partition's files before and after; journal: the run's inputs and outputs; plans: listed files. */
  readonly filesBefore?: number;
  readonly filesAfter?: number;
  readonly bytesBefore?: number;
  readonly bytesAfter?: number;
  /** History: bytes of the retired inputs; plans: bytes of the grouped inputs (planned). */
  readonly bytesRewritten?: number;
  readonly estimatedCostUsd?: number;
}

export interface ReportSummary {
  readonly partitions: number;
  readonly filesNow: number;
  readonly bytesNow: number;
  readonly smallFilesNow: number;
  /** smallFilesNow / filesNow (0 for an empty table). */
  readonly smallRatioNow: number;
  /** Sums over the partitions that have a "before" only. */
  readonly partitionsWithBefore: number;
  readonly filesBefore?: number;
  readonly bytesBefore?: number;
  /** Small files among the before files of known size, over those files. */
  readonly smallRatioBefore?: number;
  /** Files now, in the partitions that have a "before" (comparable with filesBefore). */
  readonly filesNowInCompared?: number;
  readonly runs: number;
  /** From history, else from the CLI's journal (undefined when neither recorded a run). */
  readonly bytesRewritten?: number;
  readonly estimatedCostUsd?: number;
  /** Files later runs leave out because a rewrite failed on them (held quarantine records). */
  readonly quarantinedFiles: number;
}

export interface ReportModel {
  readonly table: string;
  readonly location: string;
  readonly generatedAt: number;
  readonly smallFileThresholdBytes: number;
  readonly buckets: readonly SizeBucket[];
  readonly summary: ReportSummary;
  /** Most files first (the most fragmented partitions lead). */
  readonly partitions: readonly PartitionReport[];
  readonly timeline: readonly TimelineSeries[];
  /** Newest first. */
  readonly runs: readonly RunRow[];
  /** Whether history came from a state table. */
  readonly hasHistory: boolean;
  /** Quarantined files by partition then key, with the label of their partition; where they were read. */
  readonly quarantine?: {
    readonly source: string;
    readonly files: readonly (ReportQuarantined & { readonly label: string })[];
  };
  /** Where each figure comes from and what is missing; shown on the page. */
  readonly notes: readonly string[];
}

/** Index of the bucket `size` falls in. */
export function bucketIndex(size: number, buckets: readonly SizeBucket[] = SIZE_BUCKETS): number {
  const i = buckets.findIndex((b) => size >= b.minBytes && (b.maxBytes === undefined || size < b.maxBytes));
  return i === -1 ? 0 : i;
}

/** Per-bucket counts of `sizes`. */
export function histogram(sizes: readonly number[], buckets: readonly SizeBucket[] = SIZE_BUCKETS): number[] {
  const counts = buckets.map(() => 0);
  for (const size of sizes) {
    const i = bucketIndex(size, buckets);
    counts[i] = (counts[i] ?? 0) + 1;
  }
  return counts;
}

function fileStats(
  sizes: readonly number[],
  buckets: readonly SizeBucket[],
  smallBelow: number,
  unknown = 0,
  unknownBytes = 0,
): FileStats {
  return {
    files: sizes.length + unknown,
    bytes: sizes.reduce((n, s) => n + s, 0) + unknownBytes,
    smallFiles: sizes.filter((s) => s < smallBelow).length,
    histogram: histogram(sizes, buckets),
    unknownSizeFiles: unknown,
  };
}

/** Whether `key` lies directly in `dir` (not in a sub-folder of it). */
function directlyIn(key: string, dir: string): boolean {
  return key.startsWith(dir) && !key.slice(dir.length).includes('/');
}

/** The table root as the workflow writes it into run contexts: no trailing slash. */
function rootOf(tableRoot: string): string {
  return tableRoot.replace(/\/+$/, '');
}

/** The plans whose files lie in `partition`'s directory of this table (plans of other tables are ignored). */
function plansOf(input: ReportInput, partition: string): ReportPlan[] {
  const dir = partitionDir(rootOf(input.tableRoot), partition);
  return input.plans.filter((plan) => {
    if (plan.partition !== partition) return false;
    const first = plan.groupFiles[0]?.key ?? plan.skippedKeys[0];
    return first !== undefined && directlyIn(first, dir);
  });
}

/**
 * The partition before its latest carried-out run: the plan's grouped inputs (sizes from the plan) plus
 * the files it left alone (sizes from today's listing when they are still there; else counted as "size
 * unknown", with the plan's remaining bytes). A plan counts as carried out when history says a group was
 * done, or — without history — when one of its outputs (`part-<runId>-…`) is listed now.
 */
function beforeOf(
  input: ReportInput,
  partition: ReportListingPartition,
  buckets: readonly SizeBucket[],
  smallBelow: number,
): { before?: PartitionBefore; beforeNote?: string } {
  const plans = plansOf(input, partition.partition)
    .filter((p) => p.groups > 0)
    .sort((a, b) => b.listedAt - a.listedAt || (a.runId < b.runId ? 1 : -1));
  if (plans.length === 0) return { beforeNote: 'no compaction run planned this partition' };
  const runs = new Map((input.history ?? []).map((r) => [r.runId, r]));
  const journaled = new Map((input.journal ?? []).map((r) => [r.runId, r]));
  const listed = new Map(partition.files.map((f) => [f.key, f.size]));
  const carriedOut = (run: ReportRun | undefined) =>
    run !== undefined && !run.dryRun && (run.groupsDone ?? 0) > 0;
  for (const plan of plans) {
    const historyDone = carriedOut(runs.get(plan.runId));
    const journalDone = carriedOut(journaled.get(plan.runId));
    const outputsListed = partition.files.some((f) => fileName(f.key).startsWith(`part-${plan.runId}-`));
    if (!historyDone && !journalDone && !outputsListed) continue;
    const sizes = plan.groupFiles.map((f) => f.size);
    let unknown = 0;
    for (const key of plan.skippedKeys) {
      const size = listed.get(key);
      if (size === undefined) unknown += 1;
      else sizes.push(size);
    }
    const knownBytes = sizes.reduce((n, s) => n + s, 0);
    const unknownBytes = unknown > 0 ? Math.max(0, plan.inputBytes - knownBytes) : 0;
    return {
      before: {
        ...fileStats(sizes, buckets, smallBelow, unknown, unknownBytes),
        runId: plan.runId,
        at: plan.listedAt,
        evidence: historyDone ? 'history' : journalDone ? 'journal' : 'outputs-listed',
      },
    };
  }
  return {
    beforeNote: `${plans.length} planned run${plans.length === 1 ? '' : 's'} found, none carried out (dry run, failed, or its outputs are gone)`,
  };
}

function fileName(key: string): string {
  return key.slice(key.lastIndexOf('/') + 1);
}

function labelOf(partition: string): string {
  return partition === '' ? '(root)' : partition;
}

/**
 * File counts of every partition over time: run starts and ends from history, the listing of every stored
 * plan history does not know (the CLI's `compact` records no history item), then now.
 */
function timelineOf(input: ReportInput, partitions: readonly PartitionReport[]): TimelineSeries[] {
  const inHistory = new Set((input.history ?? []).map((r) => r.runId));
  return partitions.map((p) => {
    const points: TimelinePoint[] = [];
    for (const run of (input.history ?? []).filter((r) => r.partition === p.partition && !r.dryRun)) {
      if (run.filesBefore !== undefined)
        points.push({ at: run.startedAt, files: run.filesBefore, kind: 'before', runId: run.runId });
      if (run.filesAfter !== undefined && (run.groupsDone ?? 0) > 0)
        points.push({ at: run.finishedAt, files: run.filesAfter, kind: 'after', runId: run.runId });
    }
    for (const plan of plansOf(input, p.partition).filter((x) => !inHistory.has(x.runId)))
      points.push({ at: plan.listedAt, files: plan.inputFiles, kind: 'before', runId: plan.runId });
    points.push({ at: input.generatedAt, files: p.now.files, kind: 'now' });
    points.sort((a, b) => a.at - b.at);
    return { partition: p.partition, label: p.label, points };
  });
}

/**
 * History items of this table's listed partitions, then the runs of the CLI's journal history does not know, then
 * the stored plans neither knows.
 */
function runsOf(input: ReportInput, partitions: readonly PartitionReport[]): RunRow[] {
  const known = new Set((input.history ?? []).map((r) => r.runId));
  const recorded = [
    ...(input.history ?? []).map((r) => ({ source: 'history' as const, r })),
    ...(input.journal ?? [])
      .filter((r) => !known.has(r.runId))
      .map((r) => ({ source: 'journal' as const, r })),
  ];
  const rows: RunRow[] = recorded.map(
    ({ source, r }): RunRow => ({
      source,
      runId: r.runId,
      partition: r.partition,
      label: labelOf(r.partition),
      startedAt: r.startedAt,
      // A journaled run still open (interrupted) has not finished: no duration.
      ...(r.status === 'OPEN' ? {} : { finishedAt: r.finishedAt }),
      outcome: r.dryRun ? `${r.outcome} (dry run)` : r.outcome,
      status: r.status,
      ...optional('filesBefore', r.filesBefore),
      ...optional('filesAfter', r.filesAfter),
      ...optional('bytesBefore', r.bytesBefore),
      ...optional('bytesAfter', r.bytesAfter),
      ...optional('bytesRewritten', r.bytesRewritten),
      ...optional('estimatedCostUsd', r.estimatedCostUsd),
    }),
  );
  const inHistory = new Set(rows.map((r) => r.runId));
  const carried = new Set(partitions.map((p) => p.before?.runId).filter((id) => id !== undefined));
  for (const listing of input.listing) {
    for (const plan of plansOf(input, listing.partition)) {
      if (inHistory.has(plan.runId)) continue;
      const outputs = listing.files.some((f) => fileName(f.key).startsWith(`part-${plan.runId}-`));
      rows.push({
        source: 'plan',
        runId: plan.runId,
        partition: listing.partition,
        label: labelOf(listing.partition),
        startedAt: plan.listedAt,
        outcome:
          plan.groups === 0
            ? 'nothing to do'
            : carried.has(plan.runId) || outputs
              ? 'outputs listed'
              : 'no outputs listed',
        filesBefore: plan.inputFiles,
        bytesBefore: plan.inputBytes,
        bytesRewritten: plan.groupFiles.reduce((n, f) => n + f.size, 0),
      });
    }
  }
  return rows.sort((a, b) => b.startedAt - a.startedAt || (a.runId < b.runId ? 1 : -1));
}

function optional<K extends string>(key: K, value: number | undefined): { [P in K]?: number } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: number };
}

/** Builds the report's model. Pure: the same input gives the same model. */
export function buildReportModel(input: ReportInput): ReportModel {
  const smallBelow = Math.ceil(input.smallFileRatio * input.targetFileSizeBytes);
  const buckets = sizeBuckets(input.targetFileSizeBytes, input.smallFileRatio);
  const partitions: PartitionReport[] = input.listing
    .map((p) => ({
      partition: p.partition,
      label: labelOf(p.partition),
      now: fileStats(
        p.files.map((f) => f.size),
        buckets,
        smallBelow,
      ),
      ...beforeOf(input, p, buckets, smallBelow),
    }))
    .sort((a, b) => b.now.files - a.now.files || (a.partition < b.partition ? -1 : 1));
  const runs = runsOf(input, partitions);
  const compared = partitions.filter((p) => p.before !== undefined);
  const sum = (xs: readonly number[]) => xs.reduce((n, x) => n + x, 0);
  const filesNow = sum(partitions.map((p) => p.now.files));
  const smallFilesNow = sum(partitions.map((p) => p.now.smallFiles));
  const knownBefore = sum(compared.map((p) => (p.before?.files ?? 0) - (p.before?.unknownSizeFiles ?? 0)));
  const history = input.history?.filter((r) => !r.dryRun);
  const quarantined = [...(input.quarantine?.files ?? [])]
    .sort((a, b) => (a.partition < b.partition ? -1 : a.partition > b.partition ? 1 : a.key < b.key ? -1 : 1))
    .map((q) => ({ ...q, label: labelOf(q.partition) }));
  const notes = [...(input.notes ?? [])];
  const journal = (input.journal ?? []).filter((r) => !r.dryRun);
  // Without history, the CLI's journal is what records the runs' work (the runs the CLI made).
  const recorded = history ?? (journal.length > 0 ? journal : undefined);
  if (input.history === undefined && journal.length === 0)
    notes.push(
      'No state table given (--state-table or LAKE_COMPACTOR_TABLE): bytes rewritten, estimated cost and file counts after each run are not shown; the runs table and the fragmentation chart use the stored plans (files when each run planned) and today’s listing.',
    );
  else if (input.history === undefined)
    notes.push(
      'No state table given (--state-table or LAKE_COMPACTOR_TABLE): the runs the CLI made come from its journal in the location (each run’s inputs → outputs, bytes, duration, and the estimate of what the same work costs on AWS); runs of a deployment are not shown.',
    );
  const unknown = sum(compared.map((p) => p.before?.unknownSizeFiles ?? 0));
  if (unknown > 0)
    notes.push(
      `${unknown} file${unknown === 1 ? '' : 's'} of a "before" no longer ${unknown === 1 ? 'exists' : 'exist'} and the plan did not record ${unknown === 1 ? 'its' : 'their'} size: counted in files and bytes, left out of the histograms.`,
    );
  const summary: ReportSummary = {
    partitions: partitions.length,
    filesNow,
    bytesNow: sum(partitions.map((p) => p.now.bytes)),
    smallFilesNow,
    smallRatioNow: filesNow === 0 ? 0 : smallFilesNow / filesNow,
    partitionsWithBefore: compared.length,
    ...(compared.length === 0
      ? {}
      : {
          filesBefore: sum(compared.map((p) => p.before?.files ?? 0)),
          bytesBefore: sum(compared.map((p) => p.before?.bytes ?? 0)),
          smallRatioBefore:
            knownBefore === 0 ? 0 : sum(compared.map((p) => p.before?.smallFiles ?? 0)) / knownBefore,
          filesNowInCompared: sum(compared.map((p) => p.now.files)),
        }),
    runs: runs.length,
    quarantinedFiles: quarantined.filter((q) => q.held).length,
    ...(recorded === undefined
      ? {}
      : {
          bytesRewritten: sum(recorded.map((r) => r.bytesRewritten ?? 0)),
          estimatedCostUsd: sum(recorded.map((r) => r.estimatedCostUsd ?? 0)),
        }),
  };
  return {
    table: input.table,
    location: input.location,
    generatedAt: input.generatedAt,
    smallFileThresholdBytes: smallBelow,
    buckets,
    summary,
    partitions,
    timeline: timelineOf(input, partitions),
    runs,
    hasHistory: input.history !== undefined,
    ...(input.quarantine === undefined
      ? {}
      : { quarantine: { source: input.quarantine.source, files: quarantined } }),
    notes,
  };
}
