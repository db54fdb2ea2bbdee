// Names Hudi gives things, for the files a clustering or compaction writes: the timeline's instant files in both
// layouts, new file ids, write tokens, base file names, direct markers and the heartbeat. All pure and
// deterministic: a run records its seed, instant and ordinals in its journal and a resumed run re-derives the very
// same names (so it finds its own outputs, markers and instant files instead of minting new ones).
import { createHash } from 'node:crypto';
import { HudiTimelineWriteError } from './errors.js';

/** The table versions whose timeline this module writes (HUDI-NOTES §2.1). */
export type HudiTableVersion = 6 | 8 | 9;

/** Timeline layout 1 (instants directly in `.hoodie/`) or 2 (`.hoodie/timeline/`, `T_C.action` when completed). */
export type TimelineLayout = 1 | 2;

/** The table's timeline layout; refuses versions whose layout this module has not been checked against. */
export function timelineLayoutOf(tableVersion: number): TimelineLayout {
  if (tableVersion === 6) return 1;
  if (tableVersion === 8 || tableVersion === 9) return 2;
  throw new HudiTimelineWriteError(`table version ${tableVersion} is not one of 6, 8, 9`);
}

/**
 * What an instant does, as the caller thinks of it. `clustering` is a `replacecommit` on version 6 and its own
 * `clustering` action while pending on 8+; `compaction` completes as a `commit` in both layouts.
 */
export type InstantOperation =
  | 'clustering'
  | 'compaction'
  | 'commit'
  | 'deltacommit'
  | 'replacecommit'
  | 'clean'
  | 'rollback';

/** Where one instant's files live, relative to the table's base path. */
export interface InstantLocation {
  readonly tableVersion: number;
  readonly operation: InstantOperation;
  /** The instant (begin) time, 17 digits. */
  readonly instant: string;
  /** `hoodie.timeline.path` of a layout-2 table (default `timeline`). */
  readonly timelinePath?: string;
}

/** The requested and inflight files of a pending instant (paths relative to the base path). */
export interface PendingInstantFiles {
  readonly requested: string;
  readonly inflight: string;
}

/**
 * The requested and inflight file of an instant, as Hudi names them (HUDI-NOTES §2.2): `T.<action>.requested`, and
 * `T.inflight` for a commit but `T.<action>.inflight` for every other action.
 */
export function pendingInstantFiles(location: InstantLocation): PendingInstantFiles {
  const { dir, pending } = resolve(location);
  const inflight =
    pending === 'commit' ? `${location.instant}.inflight` : `${location.instant}.${pending}.inflight`;
  return { requested: `${dir}/${location.instant}.${pending}.requested`, inflight: `${dir}/${inflight}` };
}

/**
 * The completed file of an instant: `T.<action>` in layout 1, `T_C.<action>` in layout 2 (C is the completion time,
 * minted under the lock at commit). Clustering completes as `replacecommit`, compaction as `commit`.
 * @throws HudiTimelineWriteError on layout 2 without a completion time, or one not after the instant.
 */
export function completedInstantFile(location: InstantLocation, completionTime?: string): string {
  const { dir, completed, layout } = resolve(location);
  if (layout === 1) return `${dir}/${location.instant}.${completed}`;
  if (completionTime === undefined || !INSTANT.test(completionTime) || completionTime <= location.instant) {
    throw new HudiTimelineWriteError(
      `a completed instant on table version ${location.tableVersion} needs a 17-digit completion time after ${location.instant} (got ${completionTime})`,
    );
  }
  return `${dir}/${location.instant}_${completionTime}.${completed}`;
}

const INSTANT = /^\d{17}$/;

function resolve(location: InstantLocation): {
  dir: string;
  pending: string;
  completed: string;
  layout: TimelineLayout;
} {
  const layout = timelineLayoutOf(location.tableVersion);
  if (!INSTANT.test(location.instant)) {
    throw new HudiTimelineWriteError(`"${location.instant}" is not a 17-digit instant time`);
  }
  const timelinePath = location.timelinePath ?? 'timeline';
  if (layout === 2 && !/^[A-Za-z0-9._-]+$/.test(timelinePath)) {
    throw new HudiTimelineWriteError(`hoodie.timeline.path "${timelinePath}" is not a plain folder name`);
  }
  const dir = layout === 1 ? '.hoodie' : `.hoodie/${timelinePath}`;
  switch (location.operation) {
    case 'clustering':
      return {
        dir,
        layout,
        pending: layout === 1 ? 'replacecommit' : 'clustering',
        completed: 'replacecommit',
      };
    case 'compaction':
      return { dir, layout, pending: 'compaction', completed: 'commit' };
    default:
      return { dir, layout, pending: location.operation, completed: location.operation };
  }
}

/**
 * A new file group id as Hudi mints them — a UUID plus `-0` — derived from `seed` and `ordinal` instead of a random
 * source, shaped as a version-4 UUID so Hudi's parsers and anyone reading it see an ordinary id.
 */
export function newFileId(seed: string, ordinal: number): string {
  if (!Number.isSafeInteger(ordinal) || ordinal < 0) {
    throw new HudiTimelineWriteError(`file id ordinal ${ordinal} is not a non-negative integer`);
  }
  const h = createHash('sha256').update(`hudi-file-id\0${seed}\0${ordinal}`).digest();
  h[6] = ((h[6] as number) & 0x0f) | 0x40;
  h[8] = ((h[8] as number) & 0x3f) | 0x80;
  const hex = h.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}-0`;
}

/** The Spark task coordinates Hudi puts in a file name (`FSUtils.makeWriteToken`). */
export interface WriteTokenParts {
  /** Spark's partition id: Hudi's clustering and compaction use the group's / operation's index in the plan. */
  readonly partitionId: number;
  readonly stageId: number;
  readonly attemptId: number;
}

/** `<partitionId>-<stageId>-<attemptId>`, e.g. `0-235-586`. */
export function writeToken(parts: WriteTokenParts): string {
  for (const n of [parts.partitionId, parts.stageId, parts.attemptId]) {
    if (!Number.isSafeInteger(n) || n < 0)
      throw new HudiTimelineWriteError(`write token part ${n} is not a count`);
  }
  return `${parts.partitionId}-${parts.stageId}-${parts.attemptId}`;
}

/** A base file name: `<fileId>_<writeToken>_<instant>.parquet` (the instant is the writing action's begin time). */
export function baseFileName(fileId: string, token: string, instant: string): string {
  if (fileId === '' || fileId.includes('_') || fileId.includes('/')) {
    throw new HudiTimelineWriteError(`"${fileId}" cannot be a file id (empty, or with "_" or "/")`);
  }
  if (!/^\d+-\d+-\d+$/.test(token)) throw new HudiTimelineWriteError(`"${token}" is not a write token`);
  if (!INSTANT.test(instant)) throw new HudiTimelineWriteError(`"${instant}" is not a 17-digit instant time`);
  return `${fileId}_${token}_${instant}.parquet`;
}

/** A file's path relative to the base path, as write stats record it (`region=eu/<file>`; the bare name when unpartitioned). */
export function relativeFilePath(partitionPath: string, fileName: string): string {
  checkPartitionPath(partitionPath);
  return partitionPath === '' ? fileName : `${partitionPath}/${fileName}`;
}

/**
 * The IO type a direct marker names, as Hudi's write handles set it: CREATE for a file written from scratch
 * (clustering's HoodieCreateHandle), MERGE for a new base file merged from an older one (compaction's merge handle).
 * Hudi's marker-based rollback deletes the file either names.
 */
export type MarkerIoType = 'CREATE' | 'MERGE';

/**
 * The direct marker of a file being written: `.hoodie/.temp/<T>/<partition>/<file>.marker.<IO type>`. Hudi's
 * marker-based rollback deletes what these name if it ever rolls the instant back, so each output gets one before
 * it is written.
 */
export function markerPath(
  instant: string,
  partitionPath: string,
  fileName: string,
  ioType: MarkerIoType = 'CREATE',
): string {
  if (!INSTANT.test(instant)) throw new HudiTimelineWriteError(`"${instant}" is not a 17-digit instant time`);
  return `.hoodie/.temp/${instant}/${relativeFilePath(partitionPath, fileName)}.marker.${ioType}`;
}

/** The markers folder of an instant, deleted once the instant completes or is rolled back. */
export function markerDir(instant: string): string {
  if (!INSTANT.test(instant)) throw new HudiTimelineWriteError(`"${instant}" is not a 17-digit instant time`);
  return `.hoodie/.temp/${instant}`;
}

/**
 * The heartbeat file of an instant, `.hoodie/.heartbeat/<T>` (empty; Hudi reads its modification time). A live
 * heartbeat keeps Hudi's lazy failed-writes cleaner and clustering expiry from rolling our pending instant back.
 */
export function heartbeatPath(instant: string): string {
  if (!INSTANT.test(instant)) throw new HudiTimelineWriteError(`"${instant}" is not a 17-digit instant time`);
  return `.hoodie/.heartbeat/${instant}`;
}

function checkPartitionPath(partitionPath: string): void {
  if (
    partitionPath.startsWith('/') ||
    partitionPath.endsWith('/') ||
    partitionPath.split('/').includes('..')
  ) {
    throw new HudiTimelineWriteError(`"${partitionPath}" is not a relative partition path`);
  }
}
