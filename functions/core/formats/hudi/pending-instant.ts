// What a pending instant of ours (a clustering or a compaction) leaves beside its timeline files, as a Hudi writer
// leaves it for its own (HUDI-NOTES §4, §5.1 and §7), so Hudi's writers and table services treat our instant as one
// of theirs:
//
//   markers     `.hoodie/.temp/T/<partition>/<file>.marker.<IO type>`, one per output, written before the output is
//               written into the table (Hudi's DIRECT marker type: no MARKERS.type file, which only the timeline
//               server's markers have): CREATE for clustering's outputs, MERGE for compaction's (Hudi's merge
//               handle). Hudi's marker-based rollback of T — a writer, `rollback`, or a compactor that finds T
//               inflight — deletes exactly the files they name: ours, nothing else. Hudi's DirectWriteMarkers
//               takes every object under `.temp/T/` for a marker and refuses one without `.marker` in its name, so
//               nothing else of ours may live there.
//   heartbeat   clustering only: `.hoodie/.heartbeat/T`, empty, its modification time the signal. Writers with
//               `hoodie.cleaner.policy.failed.writes=LAZY` and clustering expiry roll back a pending instant whose
//               heartbeat is older than `hoodie.client.heartbeat.interval_in_ms` (60 s) × tolerable misses (2); so
//               it is renewed every {@link HEARTBEAT_RENEW_MS} while we work on T, and a run that died stops
//               renewing it, as a dead Hudi writer does. Hudi's compactor starts none: LAZY cleaning skips pending
//               compactions (BaseHoodieTableServiceClient `getInflightTimelineExcludeCompactionAndClustering`).
//
// On completion the markers and the heartbeat go (Hudi deletes both after a commit). On abort we roll T back as
// Hudi's rollback would: the files the markers name, then the markers, then the inflight (Hudi's
// `rollbackInflightCompaction` stops here: a compaction plan is kept and run again), then the requested file and
// the heartbeat — the heartbeat last, so no LAZY writer sees a plan without one while it is still on the timeline.
import type { ObjectStore } from '../../../ports/object-store.js';
import { deleteAll } from '../staging.js';
import { keyUnder } from './timeline.js';
import {
  heartbeatPath,
  type InstantOperation,
  type MarkerIoType,
  markerDir,
  markerPath,
  pendingInstantFiles,
} from './timeline-writer/index.js';

/** How often the heartbeat of a pending instant of ours is renewed: half of Hudi's 60 s default interval. */
export const HEARTBEAT_RENEW_MS = 30_000;

/** The suffixes of the direct markers whose files Hudi's marker-based rollback deletes (APPEND names a log). */
const FILE_MARKERS = ['.marker.CREATE', '.marker.MERGE'] as const;

/** A pending instant of ours, with its timeline files (keys relative to the store). */
export interface OwnInstant {
  readonly tableRoot: string;
  readonly instant: string;
  readonly requested: string;
  readonly inflight: string;
}

/** Where a table's instant files live: its root, version and timeline folder (`.hoodie` or `.hoodie/<path>`). */
export interface TimelineLocation {
  readonly tableRoot: string;
  readonly tableVersion: number;
  /** `.hoodie` (layout 1) or `.hoodie/<hoodie.timeline.path>` (layout 2), without a trailing slash. */
  readonly timelinePath: string;
}

/**
 * The store keys of the requested and inflight files of `operation` at `instant`: the one place clustering and
 * compaction name them, so both find and roll back their pending instants by the same names.
 */
export function pendingKeys(
  at: TimelineLocation,
  operation: InstantOperation,
  instant: string,
): { requested: string; inflight: string } {
  const path = at.timelinePath.replace(/\/+$/, '');
  const files = pendingInstantFiles({
    tableVersion: at.tableVersion,
    operation,
    instant,
    ...(path === '.hoodie' ? {} : { timelinePath: path.slice('.hoodie/'.length) }),
  });
  return {
    requested: keyUnder(at.tableRoot, files.requested),
    inflight: keyUnder(at.tableRoot, files.inflight),
  };
}

/** The store key of T's heartbeat. */
export function heartbeatKey(tableRoot: string, instant: string): string {
  return keyUnder(tableRoot, heartbeatPath(instant));
}

/** Writes (or renews: a new modification time) T's heartbeat. */
export async function renewHeartbeat(store: ObjectStore, tableRoot: string, instant: string): Promise<void> {
  await store.put(heartbeatKey(tableRoot, instant), new Uint8Array(0));
}

/**
 * How old a clustering instant's heartbeat may grow before Hudi's writers take T for a failed write: their
 * `hoodie.client.heartbeat.interval_in_ms` (60 s) × `hoodie.client.heartbeat.tolerable.misses` (2), at Hudi's
 * defaults (writer settings, not in hoodie.properties).
 */
export const HUDI_HEARTBEAT_TOLERANCE_MS = 2 * 60_000;

/**
 * Renews T's heartbeat only while it is alive, as Hudi's own writer treats its heartbeat: once older than
 * `toleranceMs`, T is a failed write to every writer that judges it (LAZY failed-writes cleaning, clustering expiry)
 * and one may already be rolling it back, so the heartbeat is not renewed — HoodieHeartbeatClient stops refreshing
 * a heartbeat it let expire, and HeartbeatUtils.abortIfHeartbeatExpired refuses the commit — since a renewal would
 * let our commit complete T over files that rollback deletes. Its age is read by the store's clock: the heartbeat's
 * modification time before the PUT (our last renewal) against the one after it (now). A heartbeat found missing
 * (rolled back, or declared dead before) or found lapsed is dead for good: it is deleted, and a missing heartbeat
 * reads as expired to Hudi and to every later call. Returns whether T is alive; the caller's commit aborts T when
 * not. Three requests (HEAD, PUT, HEAD) where {@link renewHeartbeat} takes one.
 */
export async function renewLiveHeartbeat(
  store: ObjectStore,
  tableRoot: string,
  instant: string,
  toleranceMs: number,
): Promise<boolean> {
  const key = heartbeatKey(tableRoot, instant);
  const last = await store.head(key);
  if (last === undefined) return false;
  await store.put(key, new Uint8Array(0));
  const now = await store.head(key);
  if (now !== undefined && now.lastModified.getTime() - last.lastModified.getTime() <= toleranceMs)
    return true;
  await store.deleteMany([{ key }]);
  return false;
}

/**
 * The direct marker of one output (a key under the table root), as Hudi's `DirectWriteMarkers.create` names it.
 * @throws HudiTimelineWriteError when the output is not under the table root.
 */
export function markerKeyOf(
  tableRoot: string,
  instant: string,
  outputKey: string,
  ioType: MarkerIoType = 'CREATE',
): string {
  const relative = tableRoot === '' ? outputKey : outputKey.slice(tableRoot.length + 1);
  const slash = relative.lastIndexOf('/');
  const partition = slash < 0 ? '' : relative.slice(0, slash);
  return keyUnder(tableRoot, markerPath(instant, partition, relative.slice(slash + 1), ioType));
}

/** Writes the marker of every output; idempotent (a marker is empty, rewriting it changes nothing Hudi reads). */
export async function writeMarkers(
  store: ObjectStore,
  tableRoot: string,
  instant: string,
  outputKeys: readonly string[],
  ioType: MarkerIoType = 'CREATE',
): Promise<void> {
  for (const key of outputKeys)
    await store.put(markerKeyOf(tableRoot, instant, key, ioType), new Uint8Array(0));
}

/** Every object under T's marker folder. */
async function markerObjects(store: ObjectStore, tableRoot: string, instant: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of store.listAll(`${keyUnder(tableRoot, markerDir(instant))}/`)) keys.push(o.key);
  return keys;
}

/** Removes T's markers once it completed (Hudi deletes `.temp/T` after its commit too). Idempotent. */
export async function removeMarkers(store: ObjectStore, tableRoot: string, instant: string): Promise<void> {
  await deleteAll(store, await markerObjects(store, tableRoot, instant));
}

/**
 * The data files T's markers name: what Hudi's marker-based rollback of T deletes. Only names carrying T (a base
 * file `<fileId>_<token>_T.parquet`) count: a marker folder holds nothing else of ours.
 */
export async function filesNamedByMarkers(
  store: ObjectStore,
  tableRoot: string,
  instant: string,
): Promise<string[]> {
  const folder = `${keyUnder(tableRoot, markerDir(instant))}/`;
  return (await markerObjects(store, tableRoot, instant))
    .flatMap((key) => {
      const suffix = FILE_MARKERS.find((s) => key.endsWith(s));
      return suffix === undefined ? [] : [keyUnder(tableRoot, key.slice(folder.length, -suffix.length))];
    })
    .filter((key) => key.endsWith(`_${instant}.parquet`));
}

/**
 * Rolls back our own pending instant T as Hudi's rollback would (see the module comment); the caller has checked
 * that T did not complete. Idempotent: every step deletes what may be there, so a crash anywhere is finished by
 * the next attempt.
 */
export async function rollBackOwnInstant(store: ObjectStore, own: OwnInstant): Promise<void> {
  await rollBackInflight(store, own);
  await deleteAll(store, [own.requested]);
  await deleteAll(store, [heartbeatKey(own.tableRoot, own.instant)]);
}

/**
 * Rolls T back to its requested plan, as Hudi's `rollbackInflightInstant` does before it runs a pending compaction
 * again: the files T's markers name, the markers, then the inflight file; the plan stays. Idempotent.
 */
export async function rollBackInflight(store: ObjectStore, own: OwnInstant): Promise<void> {
  await deleteAll(store, await filesNamedByMarkers(store, own.tableRoot, own.instant));
  await removeMarkers(store, own.tableRoot, own.instant);
  await deleteAll(store, [own.inflight]);
}
