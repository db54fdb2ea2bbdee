// Hudi file names, partition paths and the live file slices of a partition. A file group is every file of one file
// id in a partition; its slices are keyed by base instant, and only the live slice at the latest completed instant
// is data: older slices, replaced groups, uncommitted or rolled-back writes stay on storage until Hudi's cleaner
// removes them (notes §3). Pure functions over a listing and the timeline: table-state.ts does the I/O.

import type { PartitionValue } from '../../partition.js';
import type { IgnoredObject } from '../table-format.js';
import { HudiBaseFileFormatError, HudiBucketIndexError } from './errors.js';
import { compareInstantTimes } from './instants.js';
import { completionTimeOf, type HudiTimeline, isCommitted } from './timeline.js';

/** A base file's name: `<fileId>_<writeToken>_<instant>.<extension>`. */
export interface HudiBaseFileName {
  readonly fileId: string;
  readonly writeToken: string;
  /** The begin time of the action that wrote it. */
  readonly instantTime: string;
  /** `parquet`, `orc`, `hfile`, `lance` … as written. */
  readonly extension: string;
}

/** A log file's name: `.<fileId>_<instant>.log.<version>_<writeToken>[.cdc]`. */
export interface HudiLogFileName {
  readonly fileId: string;
  /** v6: the base instant of the slice it belongs to; v8+: the begin time of the deltacommit that wrote it. */
  readonly instantTime: string;
  readonly version: number;
  readonly writeToken?: string;
  /** A change-data-capture log (`-cdc`/`.cdc`), not data. */
  readonly cdc: boolean;
}

const BASE_FILE = /^([^_/]+)_(\d+-\d+-\d+)_(\d{14}|\d{17})\.([A-Za-z]+)$/;
const LOG_FILE = /^\.([^_/]+)_(\d{14}|\d{17})\.log\.(\d+)(?:_(\d+-\d+-\d+))?(-cdc|\.cdc)?$/;

/** Parses a base file name, or undefined when the name is not one. */
export function parseBaseFileName(name: string): HudiBaseFileName | undefined {
  const m = BASE_FILE.exec(name);
  if (m === null) return undefined;
  return {
    fileId: m[1] as string,
    writeToken: m[2] as string,
    instantTime: m[3] as string,
    extension: m[4] as string,
  };
}

/** Parses a log file name, or undefined when the name is not one. */
export function parseLogFileName(name: string): HudiLogFileName | undefined {
  const m = LOG_FILE.exec(name);
  if (m === null) return undefined;
  return {
    fileId: m[1] as string,
    instantTime: m[2] as string,
    version: Number(m[3]),
    ...(m[4] === undefined ? {} : { writeToken: m[4] }),
    cdc: m[5] !== undefined,
  };
}

/**
 * Whether a file id is a bucket index's: an 8-digit bucket number before a whole `<uuid>-<n>` (issue #5330). A plain
 * id is `<uuid>-<n>`, whose first group is 8 hex digits that may all be decimal, so the bucket form is told apart by
 * the full UUID after it.
 */
export function isBucketFileId(fileId: string): boolean {
  return /^\d{8}-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-\d+$/i.test(fileId);
}

/** The name of the partition marker Hudi writes in every partition folder (a properties or base-format file). */
export function isPartitionMarker(name: string): boolean {
  return name === '.hoodie_partition_metadata' || name.startsWith('.hoodie_partition_metadata.');
}

/** How partition paths are written: from `hoodie.properties`. */
export interface PartitionPathRules {
  readonly partitionFields: readonly string[];
  readonly hiveStylePartitioning: boolean;
  readonly urlEncodePartitioning: boolean;
}

/** Hive's (and Hudi's) name for a null partition value. */
const DEFAULT_PARTITION = '__HIVE_DEFAULT_PARTITION__';

function decodeSegment(value: string, urlEncoded: boolean): string {
  if (!urlEncoded) return value;
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/**
 * The partition values a partition path stands for: Hive-style segments (`field=value`) by their names, others by
 * position among `hoodie.table.partition.fields` (one field whose value holds `/`, as a timestamp key generator
 * writes `2024/01/01`, takes the whole path). Values are %-decoded when the table url-encodes partition paths;
 * `__HIVE_DEFAULT_PARTITION__` is null. Empty for an unpartitioned table.
 */
export function partitionValuesOf(partition: string, rules: PartitionPathRules): PartitionValue[] {
  if (partition === '') return [];
  const segments = partition.split('/');
  const value = (raw: string): string | null => {
    const v = decodeSegment(raw, rules.urlEncodePartitioning);
    return v === DEFAULT_PARTITION ? null : v;
  };
  if (rules.hiveStylePartitioning && segments.every((s) => s.includes('=')))
    return segments.map((s) => {
      const eq = s.indexOf('=');
      return { name: s.slice(0, eq), value: value(s.slice(eq + 1)) };
    });
  const fields = rules.partitionFields;
  if (fields.length === segments.length)
    return segments.map((s, i) => ({ name: fields[i] as string, value: value(s) }));
  if (fields.length === 1) return [{ name: fields[0] as string, value: value(partition) }];
  return [];
}

/** One object of a partition folder, as listed. */
export interface ListedFile {
  readonly key: string;
  readonly size: number;
  readonly etag: string;
}

/** A base file of a slice. */
export interface HudiBaseFile extends ListedFile {
  readonly name: string;
  readonly instantTime: string;
}

/** A log file of a slice. */
export interface HudiLogFile extends ListedFile {
  readonly name: string;
  readonly instantTime: string;
  readonly version: number;
}

/** The live file slice of a file group: what a snapshot read of the group reads. */
export interface HudiFileSlice {
  readonly fileId: string;
  readonly partition: string;
  /** The slice's base instant (its base file's instant; a log-only slice's first log instant). */
  readonly baseInstantTime: string;
  readonly baseFile?: HudiBaseFile;
  /** Ordered by instant, then version. */
  readonly logFiles: readonly HudiLogFile[];
}

/** What the timeline says about the file groups of one partition. */
export interface HudiPartitionFileGroups {
  readonly liveSlices: readonly HudiFileSlice[];
  readonly ignored: readonly IgnoredObject[];
}

/** The context {@link buildFileGroups} judges files in. */
export interface FileGroupContext {
  readonly table: string;
  readonly layoutVersion: number;
  readonly timeline: HudiTimeline;
  /** File ids replaced by completed replacecommits of this partition → the replacing instant. */
  readonly replaced: ReadonlyMap<string, string>;
  /** File ids in a pending plan of this partition → `<kind> <instant>`. */
  readonly pending: ReadonlyMap<string, string>;
}

/**
 * The live slices of one partition's file groups and, with a reason each, every other object of the folder: v6
 * takes each group's newest committed base and the logs named with that base instant; v8+ joins each committed log
 * to the newest committed base whose instant precedes the log's completion time (notes §3.2). Replaced groups and
 * groups in a pending clustering or compaction are set aside whole.
 * @throws HudiBucketIndexError when a file id is a bucket index's.
 * @throws HudiBaseFileFormatError when a base file is not Parquet.
 */
export function buildFileGroups(
  ctx: FileGroupContext,
  partition: string,
  files: readonly ListedFile[],
): HudiPartitionFileGroups {
  const ignored: IgnoredObject[] = [];
  const bases = new Map<string, HudiBaseFile[]>();
  const logs = new Map<string, HudiLogFile[]>();
  for (const f of files) {
    const name = f.key.slice(f.key.lastIndexOf('/') + 1);
    if (isPartitionMarker(name)) {
      ignored.push({ key: f.key, reason: 'Hudi partition marker' });
      continue;
    }
    const base = parseBaseFileName(name);
    const log = base === undefined ? parseLogFileName(name) : undefined;
    const fileId = base?.fileId ?? log?.fileId;
    if (fileId === undefined) {
      ignored.push({ key: f.key, reason: 'not a Hudi base or log file' });
      continue;
    }
    if (isBucketFileId(fileId)) throw new HudiBucketIndexError(ctx.table, `file id ${fileId} in ${f.key}`);
    // hoodie.properties may say PARQUET while a writer with another setting left other base files: refuse them
    // rather than leave their rows out of a rewrite that replaces their file group's neighbours.
    if (base !== undefined && base.extension.toLowerCase() !== 'parquet')
      throw new HudiBaseFileFormatError(ctx.table, `${base.extension.toUpperCase()} (${f.key})`);
    const why = ctx.replaced.has(fileId)
      ? `file group ${fileId} was replaced by replacecommit ${ctx.replaced.get(fileId)}`
      : ctx.pending.has(fileId)
        ? `file group ${fileId} is in pending ${ctx.pending.get(fileId)}`
        : undefined;
    if (why !== undefined) {
      ignored.push({ key: f.key, reason: why });
      continue;
    }
    if (base !== undefined) {
      const notCommitted = uncommittedReason(ctx.timeline, base.instantTime);
      if (notCommitted !== undefined) ignored.push({ key: f.key, reason: `base file ${notCommitted}` });
      else pushTo(bases, fileId, { ...f, name, instantTime: base.instantTime });
    } else if (log !== undefined) {
      if (log.cdc) {
        ignored.push({ key: f.key, reason: 'change-data-capture log, not data' });
        continue;
      }
      // v6 logs carry their slice's base instant, whose blocks the log reader filters; v8+ logs carry their own
      // deltacommit, which must be committed.
      const notCommitted =
        ctx.layoutVersion >= 2 ? uncommittedReason(ctx.timeline, log.instantTime) : undefined;
      if (notCommitted !== undefined) ignored.push({ key: f.key, reason: `log file ${notCommitted}` });
      else pushTo(logs, fileId, { ...f, name, instantTime: log.instantTime, version: log.version });
    }
  }

  const liveSlices: HudiFileSlice[] = [];
  for (const fileId of new Set([...bases.keys(), ...logs.keys()])) {
    const groupBases = (bases.get(fileId) ?? []).sort((a, b) =>
      compareInstantTimes(a.instantTime, b.instantTime),
    );
    const groupLogs = (logs.get(fileId) ?? []).sort(
      (a, b) => compareInstantTimes(a.instantTime, b.instantTime) || a.version - b.version,
    );
    const latest = groupBases.at(-1);
    for (const older of groupBases.slice(0, -1))
      ignored.push({
        key: older.key,
        reason: `older file slice of ${fileId} (live slice: ${latest?.instantTime})`,
      });
    let liveLogs: HudiLogFile[];
    if (latest === undefined) liveLogs = groupLogs;
    else if (ctx.layoutVersion >= 2) {
      liveLogs = [];
      for (const log of groupLogs) {
        const completion = completionTimeOf(ctx.timeline, log.instantTime) ?? log.instantTime;
        if (compareInstantTimes(latest.instantTime, completion) < 0) liveLogs.push(log);
        else
          ignored.push({
            key: log.key,
            reason: `log of an older file slice of ${fileId} (live slice: ${latest.instantTime})`,
          });
      }
    } else {
      liveLogs = [];
      for (const log of groupLogs) {
        if (log.instantTime === latest.instantTime) liveLogs.push(log);
        else
          ignored.push({
            key: log.key,
            reason: `log of an older file slice of ${fileId} (live slice: ${latest.instantTime})`,
          });
      }
    }
    const baseInstantTime = latest?.instantTime ?? (liveLogs[0] as HudiLogFile).instantTime;
    liveSlices.push({
      fileId,
      partition,
      baseInstantTime,
      ...(latest === undefined ? {} : { baseFile: latest }),
      logFiles: liveLogs,
    });
  }
  liveSlices.sort((a, b) => (a.fileId < b.fileId ? -1 : a.fileId > b.fileId ? 1 : 0));
  ignored.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return { liveSlices, ignored };
}

function pushTo<T>(map: Map<string, T[]>, key: string, value: T): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else list.push(value);
}

/** Why a file written at `instantTime` is not committed, or undefined when it is. */
function uncommittedReason(timeline: HudiTimeline, instantTime: string): string | undefined {
  if (isCommitted(timeline, instantTime)) return undefined;
  const undoneBy = timeline.rolledBack.get(instantTime);
  if (undoneBy !== undefined) return `written by instant ${instantTime}, rolled back by ${undoneBy}`;
  const pending = timeline.latest.find((i) => i.time === instantTime);
  if (pending !== undefined)
    return `written by instant ${instantTime}, not completed (${pending.action} ${pending.state})`;
  return `written by instant ${instantTime}, which the timeline does not hold (uncommitted or rolled back)`;
}
