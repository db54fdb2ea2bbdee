// Table version 6: the log files a v6 writer named with the base instant T of a compaction plan we unschedule, moved
// back to the slice they extend — what Hudi's `CompactionAdminClient.unscheduleCompactionPlan` does on 0.x
// (getRenamingActionsForUnschedulingCompactionOperation, then runRenamingOps, then the requested file deleted).
//
// Why: on v6 a log joins its file slice by the base instant in its name (HUDI-NOTES §3.1). Once T is scheduled, a
// writer puts its new logs of T's file groups under T (`.<fileId>_T.log.N_<token>`): while the plan is pending,
// readers merge T's slice into the one before it; once the plan is gone, T names no base file and no instant, and
// such a log is read by no one — its records lost. Hudi's rule for each operation of the plan (fileId, base instant
// B): the logs of the file group named with T, in Hudi's log order (version, then write token), become
// `.<fileId>_B.log.<V>_1-0-1` with V counting on from the highest version of B's slice (1 when it has none), and
// `1-0-1` Hudi's UNKNOWN_WRITE_TOKEN — so they sort after every log of B's slice, in their own order.
//
// Hudi requires every writer stopped for this ("MUST be executed with compactions and writer turned OFF"): a writer
// that read the timeline while T was pending may still write a log under T after the last rename. We run beside
// writers, so the move is made safe, and repeatable, by three rules:
//
//   - a trace first: `.hoodie/.temp/lake-compactor-unscheduled/<T>.json` (outside Hudi's marker folders, which are
//     named by instants) names T's file groups and every move decided (source → target) before it is made, so a run
//     killed anywhere is finished by the next run of ours or the sweep (compaction-run.ts `settleUnscheduledPlans`),
//     and a target version once given is never given again;
//   - copy, never move, while the plan is on the timeline: the plan pins T's slice, so the source stays readable
//     (Hudi's reader merges a pending compaction's two slices by record key, so a record present in both is read
//     once — reasoned from its merge; the project's reader sets a pending compaction's groups aside) and Hudi's
//     compactor may still complete T without losing a log. The sources are deleted only after the plan is gone,
//     when the copies are the readable ones: at no point is a log's record left unreadable by the move itself;
//   - the trace stays until, after the plan is gone, no log of its file groups is named with T and no write is
//     pending on the timeline (a writer pending then may still write under T): every later run of ours moves what
//     such a writer wrote, before it schedules anything.
//
// A log written under T after the last listing before the plan's delete is unreadable from that delete until the
// copy made right after it (two requests later in the same call, or the next run's settle after a crash): the only
// window left. Hudi's own unschedule, which renames before it deletes and never looks again, leaves such a log
// unread for good (it asks for every writer to be stopped instead).
//
// Objects are copied server-side with create-only CopyObject (`If-None-Match: *`): a target a writer took first is
// never overwritten, and the move is given the next free version instead; a log's bytes are read only to tell an
// existing target apart (our earlier copy, or a writer's log), range by range.

import type { ObjectStore } from '../../../ports/object-store.js';
import { PreconditionFailedError } from '../../errors.js';
import { parseLogFileName } from './file-groups.js';
import { logFileName } from './log/index.js';
import { keyUnder, listFolder } from './timeline.js';

/** Hudi's HoodieLogFormat.UNKNOWN_WRITE_TOKEN: the write token of a log its unschedule renames. */
export const UNSCHEDULE_WRITE_TOKEN = '1-0-1';

/** One file group of an unscheduled plan: where its logs under T go. */
export interface UnscheduledGroup {
  readonly partition: string;
  readonly fileId: string;
  /** The operation's baseInstantTime: the slice the group's logs under T extend. */
  readonly baseInstant: string;
}

/** One move decided: a log under T (its store key) and the key of its copy in the base instant's slice. */
export interface LogMove {
  readonly from: string;
  readonly to: string;
}

/** What an unschedule in progress left on the table (the trace file's content). */
export interface UnscheduleTrace {
  readonly instant: string;
  readonly groups: readonly UnscheduledGroup[];
  readonly moves: readonly LogMove[];
}

const TRACE_FOLDER = '.hoodie/.temp/lake-compactor-unscheduled';

/** The trace file of compaction `instant` on the table at `tableRoot`. */
export function traceKey(tableRoot: string, instant: string): string {
  return keyUnder(tableRoot, `${TRACE_FOLDER}/${instant}.json`);
}

/** The traces on the table at `tableRoot` (one listing; none on a table we never unscheduled a plan of). */
export async function listTraces(store: ObjectStore, tableRoot: string): Promise<UnscheduleTrace[]> {
  const folder = keyUnder(tableRoot, `${TRACE_FOLDER}/`);
  const traces: UnscheduleTrace[] = [];
  for (const o of (await listFolder(store, folder)).objects) {
    const trace = await readTrace(store, o.key);
    if (trace !== undefined) traces.push(trace);
  }
  return traces;
}

/** The trace of `instant`, when there is one. */
export async function traceOf(
  store: ObjectStore,
  tableRoot: string,
  instant: string,
): Promise<UnscheduleTrace | undefined> {
  const key = traceKey(tableRoot, instant);
  return (await store.head(key)) === undefined ? undefined : readTrace(store, key);
}

async function readTrace(store: ObjectStore, key: string): Promise<UnscheduleTrace | undefined> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(await store.get(key)).toString('utf8'));
  } catch {
    return undefined;
  }
  const t = parsed as Partial<UnscheduleTrace>;
  if (typeof t.instant !== 'string' || !Array.isArray(t.groups) || !Array.isArray(t.moves)) return undefined;
  return { instant: t.instant, groups: t.groups, moves: t.moves };
}

/** Writes (or rewrites) `trace` on the table at `tableRoot`. */
export async function writeTrace(
  store: ObjectStore,
  tableRoot: string,
  trace: UnscheduleTrace,
): Promise<void> {
  await store.put(traceKey(tableRoot, trace.instant), JSON.stringify(trace), {
    contentType: 'application/json',
  });
}

export async function removeTrace(store: ObjectStore, tableRoot: string, instant: string): Promise<void> {
  await store.deleteMany([{ key: traceKey(tableRoot, instant) }]);
}

/** A log of the table as listed. */
interface ListedLog {
  readonly key: string;
  readonly size: number;
  readonly fileId: string;
  readonly instant: string;
  readonly version: number;
  readonly writeToken: string;
}

/** The data logs of `partition` (its folder listed once). */
async function logsOf(store: ObjectStore, tableRoot: string, partition: string): Promise<ListedLog[]> {
  const folder = keyUnder(tableRoot, partition);
  const prefix = folder === '' || folder.endsWith('/') ? folder : `${folder}/`;
  const logs: ListedLog[] = [];
  for (const o of (await listFolder(store, prefix)).objects) {
    const log = parseLogFileName(o.key.slice(o.key.lastIndexOf('/') + 1));
    if (log === undefined || log.cdc) continue;
    logs.push({
      key: o.key,
      size: o.size,
      fileId: log.fileId,
      instant: log.instantTime,
      version: log.version,
      writeToken: log.writeToken ?? '',
    });
  }
  return logs;
}

/** Where the copies of `trace`'s logs under T stand after {@link moveLogsOffInstant}. */
export interface MoveOutcome {
  readonly trace: UnscheduleTrace;
  /** Logs still named with T (copied, not yet deleted; or not copied: a target taken, retried next time). */
  readonly remaining: number;
  /** Whether anything was copied or deleted. */
  readonly changed: boolean;
}

/** How many times a pass re-decides moves whose targets a writer took first, before it leaves them to the next. */
const MAX_ROUNDS = 3;

/**
 * Copies every log of `trace`'s file groups named with T into its base instant's slice by Hudi's rule (module
 * comment), recording each move in the trace before it is made; with `removeSources` (only once the plan is off the
 * timeline) a source whose copy holds its bytes is then deleted. Idempotent: a move already made is recognised by
 * its target holding the source's bytes; a source written again under a name already moved (a writer starting T's
 * numbering afresh) is given a new target.
 */
export async function moveLogsOffInstant(
  store: ObjectStore,
  tableRoot: string,
  start: UnscheduleTrace,
  options: { readonly removeSources: boolean },
): Promise<MoveOutcome> {
  let trace = start;
  let changed = false;
  let remaining = 0;
  for (let round = 0; round < MAX_ROUNDS; round += 1) {
    remaining = 0;
    let conflicts = 0;
    const moves = [...trace.moves];
    const copied: { from: string; to: string }[] = [];
    // In Hudi's log order per file group (`group`: its partition and file id).
    const work: { from: ListedLog; to: string; listed: ListedLog | undefined; group: string }[] = [];
    for (const partition of new Set(trace.groups.map((g) => g.partition))) {
      const logs = await logsOf(store, tableRoot, partition);
      const byKey = new Map(logs.map((l) => [l.key, l]));
      for (const group of trace.groups.filter((g) => g.partition === partition)) {
        const groupKey = `${partition}/${group.fileId}`;
        const underT = logs
          .filter((l) => l.fileId === group.fileId && l.instant === trace.instant)
          .sort(
            (a, b) =>
              a.version - b.version ||
              (a.writeToken < b.writeToken ? -1 : a.writeToken > b.writeToken ? 1 : 0),
          );
        if (underT.length === 0) continue;
        // The highest version the base instant's slice has, listed or already given to a move of this group.
        let highest = Math.max(
          0,
          ...logs
            .filter((l) => l.fileId === group.fileId && l.instant === group.baseInstant)
            .map((l) => l.version),
          ...moves
            .filter((m) => byFileGroup(m.to, group))
            .map((m) => parseLogFileName(nameOf(m.to))?.version ?? 0),
        );
        for (const source of underT) {
          const decided = moves.filter((m) => m.from === source.key).at(-1);
          if (decided !== undefined) {
            work.push({ from: source, to: decided.to, listed: byKey.get(decided.to), group: groupKey });
            continue;
          }
          highest += 1;
          const to = keyUnder(
            tableRoot,
            joinPartition(
              partition,
              logFileName({
                fileId: group.fileId,
                instant: group.baseInstant,
                version: highest,
                writeToken: UNSCHEDULE_WRITE_TOKEN,
              }),
            ),
          );
          moves.push({ from: source.key, to });
          work.push({ from: source, to, listed: byKey.get(to), group: groupKey });
        }
      }
    }
    if (moves.length !== trace.moves.length) {
      trace = { ...trace, moves };
      // Recorded before any copy is made: a run killed after the copy finds it by this move, not a new version.
      await writeTrace(store, tableRoot, trace);
    }
    const retry: LogMove[] = [];
    // File groups whose next target a writer took: their later logs wait for the next round, so every log keeps its
    // place in Hudi's order (a later log copied now would sort before the one given the next free version).
    const blocked = new Set<string>();
    for (const w of work) {
      if (await alreadyCopied(store, w)) {
        copied.push({ from: w.from.key, to: w.to });
        continue;
      }
      if (!blocked.has(w.group) && w.listed === undefined) {
        try {
          // Server-side, create-only: the log's bytes never pass through this process, and a target a writer
          // took first is never overwritten.
          await store.copy(w.from.key, w.to, { ifNoneMatch: '*' });
          changed = true;
          copied.push({ from: w.from.key, to: w.to });
          continue;
        } catch (err) {
          if (!(err instanceof PreconditionFailedError)) throw err;
          if (await alreadyCopied(store, { ...w, listed: { size: w.from.size } })) {
            copied.push({ from: w.from.key, to: w.to });
            continue;
          }
        }
      }
      // The target holds another log (a writer took that version first), or an earlier log of the group is waiting:
      // this source needs a new target, decided in order next round.
      blocked.add(w.group);
      conflicts += 1;
      retry.push({ from: w.from.key, to: w.to });
    }
    if (options.removeSources && copied.length > 0) {
      await store.deleteMany(copied.map((c) => ({ key: c.from })));
      changed = true;
    } else remaining += copied.length;
    remaining += conflicts;
    if (conflicts === 0) break;
    // Forget the taken targets, so the next round gives these sources the next free versions.
    trace = {
      ...trace,
      moves: trace.moves.filter((m) => !retry.some((r) => r.from === m.from && r.to === m.to)),
    };
    await writeTrace(store, tableRoot, trace);
  }
  return { trace, remaining, changed };
}

/**
 * Whether a move's target already holds its source's bytes (this source's copy an earlier attempt made): only a
 * target that exists, as listed, with the source's size is read.
 */
async function alreadyCopied(
  store: ObjectStore,
  w: {
    readonly from: ListedLog;
    readonly to: string;
    readonly listed: { readonly size: number } | undefined;
  },
): Promise<boolean> {
  if (w.listed === undefined || w.listed.size !== w.from.size) return false;
  return sameBytes(store, w.from.key, w.to);
}

/** How much of two objects {@link sameBytes} compares at a time: memory bounded whatever the logs' sizes. */
const COMPARE_CHUNK_BYTES = 8 * 1024 * 1024;

/** Whether `a` and `b` hold the same bytes (sizes from a HEAD each, then the bytes range by range). */
async function sameBytes(store: ObjectStore, a: string, b: string): Promise<boolean> {
  const [headA, headB] = [await store.head(a), await store.head(b)];
  if (headA === undefined || headB === undefined || headA.size !== headB.size) return false;
  for (let start = 0; start < headA.size; start += COMPARE_CHUNK_BYTES) {
    const end = Math.min(headA.size, start + COMPARE_CHUNK_BYTES) - 1;
    const [bytesA, bytesB] = [await store.getRange(a, start, end), await store.getRange(b, start, end)];
    if (Buffer.compare(Buffer.from(bytesA), Buffer.from(bytesB)) !== 0) return false;
  }
  return true;
}

function byFileGroup(key: string, group: UnscheduledGroup): boolean {
  const log = parseLogFileName(nameOf(key));
  return log !== undefined && log.fileId === group.fileId && log.instantTime === group.baseInstant;
}

function nameOf(key: string): string {
  return key.slice(key.lastIndexOf('/') + 1);
}

function joinPartition(partition: string, name: string): string {
  return partition === '' ? name : `${partition}/${name}`;
}
