// What a pending clustering instant of ours leaves beside its timeline files, as a Hudi writer leaves it for its own
// (HUDI-NOTES §4 and §7), so Hudi's writers and table services treat our instant as one of theirs:
//
//   markers     `.hoodie/.temp/T/<partition>/<file>.marker.CREATE`, one per output, written before the output is
//               copied into the table (Hudi's DIRECT marker type: no MARKERS.type file, which only the timeline
//               server's markers have). Hudi's marker-based rollback of T — a writer or `rollback` that takes our
//               instant for a failed one — deletes exactly the files they name: ours, nothing else.
//   heartbeat   `.hoodie/.heartbeat/T`, empty, its modification time the signal. Writers with
//               `hoodie.cleaner.policy.failed.writes=LAZY` and clustering expiry roll back a pending instant whose
//               heartbeat is older than `hoodie.client.heartbeat.interval_in_ms` (60 s) × tolerable misses (2); so
//               it is renewed every {@link HEARTBEAT_RENEW_MS} while we work on T, and a run that died stops
//               renewing it, as a dead Hudi writer does.
//
// On completion the markers and the heartbeat go (Hudi deletes both after a commit). On abort we roll T back as
// Hudi's rollback would: the files the markers name, then the markers, then the inflight, the requested file and
// the heartbeat — the heartbeat last, so no LAZY writer sees a plan without one while it is still on the timeline.
import type { ObjectStore } from '../../../ports/object-store.js';
import { deleteAll } from '../staging.js';
import { keyUnder } from './timeline.js';
import { heartbeatPath, markerDir, markerPath } from './timeline-writer/index.js';

/** How often the heartbeat of a pending instant of ours is renewed: half of Hudi's 60 s default interval. */
export const HEARTBEAT_RENEW_MS = 30_000;

/** The suffix of a direct marker of a created file. */
const CREATE_MARKER = '.marker.CREATE';

/** A pending clustering instant of ours, with its timeline files (keys relative to the store). */
export interface OwnInstant {
  readonly tableRoot: string;
  readonly instant: string;
  readonly requested: string;
  readonly inflight: string;
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
 * The direct marker of one output (a key under the table root), as Hudi's `DirectWriteMarkers.create` names it.
 * @throws HudiTimelineWriteError when the output is not under the table root.
 */
export function markerKeyOf(tableRoot: string, instant: string, outputKey: string): string {
  const relative = tableRoot === '' ? outputKey : outputKey.slice(tableRoot.length + 1);
  const slash = relative.lastIndexOf('/');
  const partition = slash < 0 ? '' : relative.slice(0, slash);
  return keyUnder(tableRoot, markerPath(instant, partition, relative.slice(slash + 1)));
}

/** Writes the marker of every output; idempotent (a marker is empty, rewriting it changes nothing Hudi reads). */
export async function writeMarkers(
  store: ObjectStore,
  tableRoot: string,
  instant: string,
  outputKeys: readonly string[],
): Promise<void> {
  for (const key of outputKeys) await store.put(markerKeyOf(tableRoot, instant, key), new Uint8Array(0));
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
    .filter((key) => key.endsWith(CREATE_MARKER))
    .map((key) => keyUnder(tableRoot, key.slice(folder.length, -CREATE_MARKER.length)))
    .filter((key) => key.endsWith(`_${instant}.parquet`));
}

/**
 * Rolls back our own pending instant T as Hudi's rollback would (see the module comment); the caller has checked
 * that T did not complete. Idempotent: every step deletes what may be there, so a crash anywhere is finished by
 * the next attempt.
 */
export async function rollBackOwnInstant(store: ObjectStore, own: OwnInstant): Promise<void> {
  await deleteAll(store, await filesNamedByMarkers(store, own.tableRoot, own.instant));
  await removeMarkers(store, own.tableRoot, own.instant);
  await deleteAll(store, [own.inflight]);
  await deleteAll(store, [own.requested]);
  await deleteAll(store, [heartbeatKey(own.tableRoot, own.instant)]);
}
