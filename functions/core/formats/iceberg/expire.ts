// Iceberg expire_snapshots (issue #18 item 6): removes old snapshots from a table's metadata, commits that through
// the table's catalog (path: put-if-absent of the next version; Glue: UpdateTable with the VersionId read; REST: a
// `remove-snapshots` update under assert-ref-snapshot-id of every ref), reloads and plans again when another writer
// won, and only then deletes the files no remaining snapshot needs — data and delete files, manifests, manifest
// lists, statistics files of expired snapshots.
//
// Which snapshots stay follows Iceberg's RemoveSnapshots: refs first (main always; another branch or tag while its
// head is younger than its max-ref-age-ms), then along every kept branch the last `min-snapshots-to-keep` ancestors and
// every ancestor younger than the cut-off, the head of every kept tag, and snapshots on no branch younger than the
// cut-off. Which files go follows ReachableFileCleanup: a file is deleted only when it is listed as ADDED or EXISTING
// in a manifest that only expired snapshots reach, and in no ADDED or EXISTING entry of any manifest a remaining
// snapshot reaches (a DELETED entry keeps nothing: the snapshot it belongs to no longer has the file).
import pLimit from 'p-limit';
import type { ObjectStore } from '../../../ports/object-store.js';
import { TransientStoreError } from '../../errors.js';
import { keyRefusal } from '../../keys.js';
import { HOUR, hoursAgo, iso } from '../../maintenance/ages.js';
import { type IcebergCatalog, type LoadedTable, PathCatalog, readMetadataText } from './catalog.js';
import { IcebergMaintenanceRefusedError } from './errors.js';
import { parseJsonKeepingLongs, stringifyJsonKeepingLongs } from './json.js';
import { type ManifestFile, type ReadContext, readManifest, readManifestList } from './manifests.js';
import { parseTableMetadata, type Snapshot, type TableMetadata } from './metadata.js';
import { appendMetadataLog } from './metadata-log.js';

/** Table property: how old a snapshot may get before expire_snapshots removes it (Iceberg's name and default). */
export const MAX_SNAPSHOT_AGE_PROPERTY = 'history.expire.max-snapshot-age-ms';
/** Table property: how many snapshots of each branch expire_snapshots keeps whatever their age. */
export const MIN_SNAPSHOTS_TO_KEEP_PROPERTY = 'history.expire.min-snapshots-to-keep';
/** Table property: how old the head of a branch or tag (other than main) may get before the ref itself goes. */
export const MAX_REF_AGE_PROPERTY = 'history.expire.max-ref-age-ms';
/** Table property: `false` when files may be shared with another table, so no engine may delete any (Iceberg's rule). */
export const GC_ENABLED_PROPERTY = 'gc.enabled';
/** Iceberg's default of `history.expire.max-snapshot-age-ms`: five days. */
export const DEFAULT_MAX_SNAPSHOT_AGE_MS = 5 * 24 * HOUR;
/** Iceberg's default of `history.expire.min-snapshots-to-keep`. */
export const DEFAULT_MIN_SNAPSHOTS_TO_KEEP = 1;
/** Objects per `deleteMany` call: S3's DeleteObjects limit. */
export const ICEBERG_DELETE_BATCH = 1000;

/** What expire_snapshots deletes, by what the file is to the table. */
export type IcebergExpiredKind = 'data' | 'delete' | 'manifest' | 'manifest-list' | 'statistics';

/** A file expire_snapshots deletes (or, in a dry run, would). */
export interface IcebergFileCandidate {
  readonly key: string;
  readonly size: number;
  readonly kind: IcebergExpiredKind;
  readonly reason: string;
}

export interface ExpiryRules {
  /** Epoch ms: ages are measured against it. */
  readonly now: number;
  /** Spark's `older_than` as an age: overrides the table's `history.expire.max-snapshot-age-ms` (5 days by default). */
  readonly olderThanMs?: number;
  /** Spark's `retain_last`: overrides the table's `history.expire.min-snapshots-to-keep` (1 by default). */
  readonly retainLast?: number;
}

/** Which snapshots stay, with why, and which go. */
export interface SnapshotExpiry {
  /** Snapshots committed before this instant (epoch ms) may go unless something keeps them. */
  readonly expireOlderThan: number;
  readonly olderThanSource: 'option' | 'table property' | 'default';
  readonly retainLast: number;
  readonly retained: ReadonlyMap<bigint, string>;
  /** In metadata order. */
  readonly expired: readonly Snapshot[];
  /** Branches and tags whose head is older than their max-ref-age-ms (or names no snapshot): removed with them. */
  readonly removedRefs: readonly string[];
}

function longProperty(metadata: TableMetadata, name: string, table: string): number | undefined {
  const value = metadata.properties[name];
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value.trim()))
    throw new IcebergMaintenanceRefusedError(
      table,
      `the table property ${name} is "${value}", not a whole non-negative number; fix it with an Iceberg client`,
    );
  return Number(value.trim());
}

/** The snapshot and its ancestors, newest first, as far as the metadata still holds them. */
function ancestry(byId: ReadonlyMap<bigint, Snapshot>, id: bigint): Snapshot[] {
  const out: Snapshot[] = [];
  const seen = new Set<bigint>();
  let at = byId.get(id);
  while (at !== undefined && !seen.has(at.snapshotId)) {
    out.push(at);
    seen.add(at.snapshotId);
    at = at.parentSnapshotId === undefined ? undefined : byId.get(at.parentSnapshotId);
  }
  return out;
}

/**
 * Which snapshots of `metadata` expire_snapshots keeps, and why, and which it removes. Pure.
 *
 * The cut-off is `now - olderThanMs`, else `now - history.expire.max-snapshot-age-ms`, else five days before `now`;
 * retain-last is the option, else `history.expire.min-snapshots-to-keep`, else 1. A branch's own
 * `max-snapshot-age-ms` and `min-snapshots-to-keep` override both for that branch, as in Iceberg. The current
 * snapshot and the head of every kept ref always stay.
 * @throws IcebergMaintenanceRefusedError for `gc.enabled=false`, a malformed property, or retain-last below 1.
 */
export function planSnapshotExpiry(metadata: TableMetadata, rules: ExpiryRules, table = ''): SnapshotExpiry {
  const { now } = rules;
  if ((metadata.properties[GC_ENABLED_PROPERTY] ?? 'true').trim().toLowerCase() === 'false')
    throw new IcebergMaintenanceRefusedError(
      table,
      `${GC_ENABLED_PROPERTY} is false: the table's files may be shared with another table, so no engine may delete any`,
    );
  const propertyAge = longProperty(metadata, MAX_SNAPSHOT_AGE_PROPERTY, table);
  const propertyKeep = longProperty(metadata, MIN_SNAPSHOTS_TO_KEEP_PROPERTY, table);
  const maxRefAge = longProperty(metadata, MAX_REF_AGE_PROPERTY, table) ?? Number.POSITIVE_INFINITY;
  if (rules.olderThanMs !== undefined && !(Number.isFinite(rules.olderThanMs) && rules.olderThanMs >= 0))
    throw new IcebergMaintenanceRefusedError(table, `older-than ${rules.olderThanMs} ms is not an age`);
  const olderThanMs = rules.olderThanMs ?? propertyAge ?? DEFAULT_MAX_SNAPSHOT_AGE_MS;
  const olderThanSource =
    rules.olderThanMs !== undefined ? 'option' : propertyAge !== undefined ? 'table property' : 'default';
  const retainLast = rules.retainLast ?? propertyKeep ?? DEFAULT_MIN_SNAPSHOTS_TO_KEEP;
  if (!Number.isInteger(retainLast) || retainLast < 1)
    throw new IcebergMaintenanceRefusedError(
      table,
      `retain-last ${retainLast}: at least the newest snapshot of each branch must stay (1 or more)`,
    );
  const expireOlderThan = now - olderThanMs;

  const byId = new Map(metadata.snapshots.map((s) => [s.snapshotId, s]));
  const retained = new Map<bigint, string>();
  const keep = (id: bigint, why: string) => {
    if (byId.has(id) && !retained.has(id)) retained.set(id, why);
  };
  if (metadata.currentSnapshotId !== undefined) keep(metadata.currentSnapshotId, 'the current snapshot');

  const keptRefs: [string, NonNullable<ReturnType<TableMetadata['refs']['get']>>][] = [];
  const removedRefs: string[] = [];
  for (const [name, ref] of metadata.refs) {
    const head = byId.get(ref.snapshotId);
    if (name === 'main') keptRefs.push([name, ref]);
    else if (head !== undefined && now - head.timestampMs <= (ref.maxRefAgeMs ?? maxRefAge))
      keptRefs.push([name, ref]);
    else removedRefs.push(name);
  }
  for (const [name, ref] of keptRefs) keep(ref.snapshotId, `head of ${ref.type} ${name}`);

  const onRefs = new Set<bigint>();
  for (const [name, ref] of keptRefs) {
    if (ref.type === 'tag') {
      onRefs.add(ref.snapshotId);
      continue;
    }
    const cutOff = ref.maxSnapshotAgeMs === undefined ? expireOlderThan : now - ref.maxSnapshotAgeMs;
    const minimum = ref.minSnapshotsToKeep ?? retainLast;
    const line = ancestry(byId, ref.snapshotId);
    for (const s of line) onRefs.add(s.snapshotId);
    for (const [i, s] of line.entries()) {
      if (i < minimum) keep(s.snapshotId, `one of the last ${minimum} snapshot(s) of branch ${name}`);
      else if (s.timestampMs >= cutOff)
        keep(
          s.snapshotId,
          `on branch ${name}, committed ${hoursAgo(now, s.timestampMs)}, after the cut-off ${iso(cutOff)}`,
        );
      else break;
    }
  }
  for (const s of metadata.snapshots)
    if (!onRefs.has(s.snapshotId) && s.timestampMs >= expireOlderThan)
      keep(
        s.snapshotId,
        `on no branch, committed ${hoursAgo(now, s.timestampMs)}, after the cut-off ${iso(expireOlderThan)}`,
      );

  return {
    expireOlderThan,
    olderThanSource,
    retainLast,
    retained,
    expired: metadata.snapshots.filter((s) => !retained.has(s.snapshotId)),
    removedRefs,
  };
}

/** `\u0000long:123` (a kept long) or a number → bigint; undefined for anything else. */
function rawLong(value: unknown): bigint | undefined {
  if (typeof value === 'number' && Number.isInteger(value)) return BigInt(value);
  if (typeof value === 'string') {
    const mark = '\u0000long:';
    const digits = value.startsWith(mark) ? value.slice(mark.length) : value;
    if (/^-?\d+$/.test(digits)) return BigInt(digits);
  }
  return undefined;
}

type RawStatistics = { readonly 'snapshot-id'?: unknown; readonly 'statistics-path'?: unknown };

/** Statistics and partition-statistics paths of the raw metadata, split by whether their snapshot is in `ids`. */
function statisticsPaths(
  raw: Record<string, unknown>,
  ids: ReadonlySet<bigint>,
): { of: string[]; others: string[] } {
  const of: string[] = [];
  const others: string[] = [];
  for (const field of ['statistics', 'partition-statistics'])
    for (const s of (raw[field] as RawStatistics[] | undefined) ?? []) {
      const id = rawLong(s['snapshot-id']);
      const path = s['statistics-path'];
      if (typeof path !== 'string') continue;
      (id !== undefined && ids.has(id) ? of : others).push(path);
    }
  return { of, others };
}

/**
 * The metadata file after expiry: `base`'s JSON with every field kept, the expired snapshots, their statistics and
 * the removed refs taken out, the snapshot log pruned as Iceberg does (an entry of a removed snapshot drops it and
 * every entry before it, so the history has no gap), and `base` appended to the metadata log, which is trimmed to
 * `write.metadata.previous-versions-max`.
 */
export function expiredMetadataText(
  baseText: string,
  base: LoadedTable,
  expiry: SnapshotExpiry,
  now: number,
): string {
  const raw = parseJsonKeepingLongs(baseText) as Record<string, unknown>;
  const gone = new Set(expiry.expired.map((s) => s.snapshotId));
  const isGone = (v: unknown) => {
    const id = rawLong(v);
    return id !== undefined && gone.has(id);
  };
  raw['last-updated-ms'] = Math.max(now, base.metadata.lastUpdatedMs);
  raw.snapshots = ((raw.snapshots as Record<string, unknown>[] | undefined) ?? []).filter(
    (s) => !isGone(s['snapshot-id']),
  );
  const log: unknown[] = [];
  for (const entry of (raw['snapshot-log'] as Record<string, unknown>[] | undefined) ?? []) {
    if (isGone(entry['snapshot-id'])) log.length = 0;
    else log.push(entry);
  }
  raw['snapshot-log'] = log;
  for (const field of ['statistics', 'partition-statistics'])
    if (Array.isArray(raw[field]))
      raw[field] = (raw[field] as Record<string, unknown>[]).filter((s) => !isGone(s['snapshot-id']));
  if (raw.refs !== undefined && raw.refs !== null && expiry.removedRefs.length > 0) {
    const refs = { ...(raw.refs as Record<string, unknown>) };
    for (const name of expiry.removedRefs) delete refs[name];
    raw.refs = refs;
  }
  appendMetadataLog(raw, base);
  const text = stringifyJsonKeepingLongs(raw);
  parseTableMetadata(text, base.name); // what we commit must be what we (and every reader) can read
  return text;
}

/** The manifests `snapshots` reach, by store key, with the snapshot (id) that first reached each. */
async function manifestsOf(
  ctx: ReadContext,
  snapshots: readonly Snapshot[],
  concurrency: number,
): Promise<Map<string, ManifestFile>> {
  const limit = pLimit(concurrency);
  const lists = await Promise.all(snapshots.map((s) => limit(() => readManifestList(ctx, s.manifestList))));
  const out = new Map<string, ManifestFile>();
  for (const list of lists) for (const m of list) if (!out.has(m.key)) out.set(m.key, m);
  return out;
}

/**
 * What expiring `expired` frees, given the snapshots that remain (`remaining`, of the newest metadata): manifest lists
 * of expired snapshots, manifests only expired snapshots reach, data and delete files listed live only in those
 * manifests and live in no manifest a remaining snapshot reaches, statistics files of expired snapshots no remaining
 * one names. Reads manifest lists and manifests; deletes nothing.
 */
export async function unreachableAfterExpiry(
  store: ObjectStore,
  table: Pick<LoadedTable, 'name' | 'paths'> & { readonly formatVersion: 1 | 2 | 3 },
  expired: readonly Snapshot[],
  remaining: readonly Snapshot[],
  statistics: { readonly expired: readonly string[]; readonly remaining: readonly string[] },
  options: { readonly now: number; readonly concurrency?: number },
): Promise<IcebergFileCandidate[]> {
  const concurrency = options.concurrency ?? 16;
  const ctx: ReadContext = {
    store,
    table: table.name,
    paths: table.paths,
    formatVersion: table.formatVersion,
  };
  const remainingLists = new Set(remaining.map((s) => table.paths.key(s.manifestList)));
  const candidates = new Map<string, Omit<IcebergFileCandidate, 'size'> & { size?: number }>();
  for (const s of expired) {
    const key = table.paths.key(s.manifestList);
    if (!remainingLists.has(key))
      candidates.set(key, {
        key,
        kind: 'manifest-list',
        reason: `manifest list of expired snapshot ${s.snapshotId} (committed ${hoursAgo(options.now, s.timestampMs)})`,
      });
  }
  const expiredManifests = await manifestsOf(ctx, expired, concurrency);
  const remainingManifests = await manifestsOf(ctx, remaining, concurrency);
  const doomed = [...expiredManifests.values()].filter((m) => !remainingManifests.has(m.key));
  for (const m of doomed)
    candidates.set(m.key, {
      key: m.key,
      size: Number(m.length),
      kind: 'manifest',
      reason: `manifest reached only by expired snapshots (added by snapshot ${m.addedSnapshotId ?? 'unknown'})`,
    });

  const limit = pLimit(concurrency);
  const contentCandidates = new Map<string, IcebergFileCandidate>();
  const doomedEntries = await Promise.all(doomed.map((m) => limit(() => readManifest(ctx, m))));
  for (const [i, entries] of doomedEntries.entries())
    for (const e of entries) {
      if (e.status === 'deleted' || contentCandidates.has(e.file.key)) continue;
      contentCandidates.set(e.file.key, {
        key: e.file.key,
        size: Number(e.file.fileSizeInBytes),
        kind: e.file.content === 'data' ? 'data' : 'delete',
        reason: `${e.file.content} file live only in manifest ${doomed[i]?.key} of expired snapshots, live in no remaining snapshot`,
      });
    }
  if (contentCandidates.size > 0) {
    const kept = await Promise.all(
      [...remainingManifests.values()].map((m) => limit(() => readManifest(ctx, m))),
    );
    for (const entries of kept)
      for (const e of entries) if (e.status !== 'deleted') contentCandidates.delete(e.file.key);
  }
  for (const [key, c] of contentCandidates) if (!candidates.has(key)) candidates.set(key, c);

  const stillNamed = new Set(statistics.remaining.map((p) => table.paths.key(p)));
  for (const path of statistics.expired) {
    const key = table.paths.key(path);
    if (!stillNamed.has(key) && !candidates.has(key))
      candidates.set(key, { key, kind: 'statistics', reason: 'statistics file of an expired snapshot' });
  }
  // Sizes the metadata does not record (manifest lists, statistics files) come from the store; a file already
  // gone is no candidate.
  const out: IcebergFileCandidate[] = [];
  await Promise.all(
    [...candidates.values()].map((c) =>
      limit(async () => {
        if (c.size !== undefined) {
          out.push({ ...c, size: c.size });
          return;
        }
        const head = await store.head(c.key);
        if (head !== undefined) out.push({ ...c, size: head.size });
      }),
    ),
  );
  return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/** Counts and bytes. */
export interface IcebergTally {
  count: number;
  bytes: number;
}

/**
 * Deletes `candidates` in batches (no ETag condition: Iceberg files are immutable, written once under a unique
 * name); what was deleted and what failed. The last line of the confinement rule: a candidate the rule does not
 * accept under `tableRoot` is never sent, and fails with why (whoever computed the list, it may not leave the table).
 */
export async function deleteIcebergFiles<C extends { readonly key: string }>(
  store: ObjectStore,
  tableRoot: string,
  candidates: readonly C[],
  batchSize = ICEBERG_DELETE_BATCH,
): Promise<{ done: C[]; failed: { key: string; message: string }[] }> {
  const done: C[] = [];
  const failed: { key: string; message: string }[] = [];
  const allowed = candidates.filter((c) => {
    const refused = keyRefusal(tableRoot, c.key);
    if (refused !== undefined)
      failed.push({
        key: c.key,
        message: `not deleted: the key ${refused}, so it is not the table's to delete`,
      });
    return refused === undefined;
  });
  for (let i = 0; i < allowed.length; i += batchSize) {
    const chunk = allowed.slice(i, i + batchSize);
    const outcome = await store.deleteMany(chunk.map((c) => ({ key: c.key })));
    const errors = new Map(outcome.errors.map((e) => [e.key, e]));
    for (const c of chunk) {
      const error = errors.get(c.key);
      if (error === undefined) done.push(c);
      else failed.push({ key: c.key, message: error.message });
    }
  }
  return { done, failed };
}

export interface ExpireSnapshotsOptions {
  /** Epoch ms: snapshot ages and the new metadata's last-updated-ms. */
  readonly now: number;
  /** Plan and list what would go; commit and delete nothing. */
  readonly dryRun: boolean;
  /** Spark's `older_than`, as an age in hours; the table's property (or five days) when omitted. */
  readonly olderThanHours?: number;
  /** Spark's `retain_last`; the table's property (or 1) when omitted. */
  readonly retainLast?: number;
  /** The catalog that loads the table and commits the new metadata; the path catalog over `store` by default. */
  readonly catalog?: IcebergCatalog;
  /** Commits tried when other writers keep winning. Default 4. */
  readonly maxAttempts?: number;
  /** First wait after a lost race, doubled after each. Default 100 ms. */
  readonly backoffMs?: number;
  readonly sleep?: (ms: number) => Promise<void>;
  /** Candidates listed in the report (all are counted); 1000 when omitted. */
  readonly listLimit?: number;
  readonly batchSize?: number;
}

export interface ExpireSnapshotsReport {
  readonly tableRoot: string;
  readonly dryRun: boolean;
  /** The metadata file the expiry was planned on (the last attempt's). */
  readonly metadataKey: string;
  /** The metadata file committed; absent in a dry run or when nothing expired. */
  readonly committedMetadataKey?: string;
  /** Commit attempts (0 when nothing was committed). */
  readonly attempts: number;
  readonly expireOlderThan: string;
  readonly olderThanSource: SnapshotExpiry['olderThanSource'];
  readonly retainLast: number;
  readonly expiredSnapshots: readonly { readonly snapshotId: string; readonly committedAt: string }[];
  readonly retainedSnapshots: readonly { readonly snapshotId: string; readonly reason: string }[];
  readonly removedRefs: readonly string[];
  /** What was deleted (dry run: what would be), by kind. */
  readonly removed: Readonly<Record<IcebergExpiredKind, IcebergTally>>;
  readonly totalRemoved: IcebergTally;
  readonly failed: readonly { readonly key: string; readonly message: string }[];
  /** Up to `listLimit` of what was (or would be) deleted. */
  readonly candidates: readonly IcebergFileCandidate[];
  readonly notes: readonly string[];
}

const sleepFor = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function tallies(done: readonly IcebergFileCandidate[]): {
  removed: Record<IcebergExpiredKind, IcebergTally>;
  total: IcebergTally;
} {
  const removed: Record<IcebergExpiredKind, IcebergTally> = {
    data: { count: 0, bytes: 0 },
    delete: { count: 0, bytes: 0 },
    manifest: { count: 0, bytes: 0 },
    'manifest-list': { count: 0, bytes: 0 },
    statistics: { count: 0, bytes: 0 },
  };
  const total = { count: 0, bytes: 0 };
  for (const c of done) {
    removed[c.kind].count += 1;
    removed[c.kind].bytes += c.size;
    total.count += 1;
    total.bytes += c.size;
  }
  return { removed, total };
}

/**
 * expire_snapshots on one table: plans ({@link planSnapshotExpiry}) on the latest metadata, commits the metadata
 * without the expired snapshots through the catalog — when another writer committed first, reloads and plans again
 * on its metadata (bounded, with backoff) — and only after the commit deletes what {@link unreachableAfterExpiry}
 * finds, against the snapshots of the metadata read *after* the commit, so a snapshot another writer committed
 * meanwhile keeps every file it references. A dry run plans and lists, against the snapshots that would remain.
 *
 * Files are deleted after the commit, never before: a crash in between leaves unreferenced files (which
 * remove_orphan_files finds later), never a snapshot pointing at a deleted file.
 * @throws IcebergMaintenanceRefusedError (gc.enabled=false, a malformed property, retain-last below 1).
 * @throws TransientStoreError when other writers won every commit attempt: nothing was committed or deleted.
 * @throws IcebergMetadataError, IcebergUnsupportedError from reading the table: nothing was changed.
 */
export async function expireSnapshots(
  store: ObjectStore,
  tableRoot: string,
  options: ExpireSnapshotsOptions,
): Promise<ExpireSnapshotsReport> {
  const root = tableRoot.replace(/\/+$/, '');
  const catalog = options.catalog ?? new PathCatalog(store);
  const rules: ExpiryRules = {
    now: options.now,
    ...(options.olderThanHours === undefined ? {} : { olderThanMs: options.olderThanHours * HOUR }),
    ...(options.retainLast === undefined ? {} : { retainLast: options.retainLast }),
  };
  const maxAttempts = options.maxAttempts ?? 4;
  const notes: string[] = [];
  let base: LoadedTable | undefined;
  let expiry: SnapshotExpiry | undefined;
  let baseRaw: Record<string, unknown> = {};
  let committedMetadataKey: string | undefined;
  let attempts = 0;
  let candidates: IcebergFileCandidate[] = [];
  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    base = await catalog.load(root);
    expiry = planSnapshotExpiry(base.metadata, rules, base.name);
    const text = await readMetadataText(store, base.metadataKey);
    baseRaw = parseJsonKeepingLongs(text) as Record<string, unknown>;
    if (expiry.expired.length === 0) break;
    // What expiring frees, against the snapshots that would remain, is read before anything is committed: every
    // path of the expired snapshots' manifests is resolved (and checked against the table root) here, so a
    // manifest naming another table's file refuses the table with nothing changed.
    const kept = expiry.retained;
    const gone = statisticsPaths(baseRaw, new Set(expiry.expired.map((s) => s.snapshotId)));
    candidates = await unreachableAfterExpiry(
      store,
      { name: base.name, paths: base.paths, formatVersion: base.metadata.formatVersion },
      expiry.expired,
      base.metadata.snapshots.filter((s) => kept.has(s.snapshotId)),
      { expired: gone.of, remaining: gone.others },
      { now: options.now },
    );
    if (options.dryRun) break;
    attempts = attempt;
    const outcome = await catalog.commit(base, expiredMetadataText(text, base, expiry, options.now));
    if (outcome.outcome === 'committed') {
      committedMetadataKey = outcome.metadataKey;
      break;
    }
    notes.push(`attempt ${attempt}: another writer committed first; reloaded and planned again`);
    if (attempt < maxAttempts)
      await (options.sleep ?? sleepFor)((options.backoffMs ?? 100) * 2 ** (attempt - 1));
    else
      throw new TransientStoreError(
        `expire_snapshots on Iceberg table ${base.name} lost the commit race to other writers on each of ${maxAttempts} attempts: nothing was committed or deleted. Retry when the table is quieter`,
      );
  }
  if (base === undefined || expiry === undefined) throw new Error('unreachable: no attempt ran');

  // After a real commit, what remains is what the newest metadata holds: when another writer committed after us,
  // its snapshots keep every file they reference, so the candidates are found again against them.
  const after = committedMetadataKey === undefined ? undefined : await catalog.load(root);
  if (after !== undefined && after.metadataKey !== committedMetadataKey) {
    const remaining = after.metadata.snapshots;
    const gone = statisticsPaths(baseRaw, new Set(expiry.expired.map((s) => s.snapshotId)));
    const remainingStats = statisticsPaths(
      parseJsonKeepingLongs(await readMetadataText(store, after.metadataKey)) as Record<string, unknown>,
      new Set(),
    ).others;
    candidates = await unreachableAfterExpiry(
      store,
      { name: base.name, paths: base.paths, formatVersion: base.metadata.formatVersion },
      expiry.expired.filter((s) => !remaining.some((r) => r.snapshotId === s.snapshotId)),
      remaining,
      { expired: gone.of, remaining: remainingStats },
      { now: options.now },
    );
  }
  let done: IcebergFileCandidate[] = candidates;
  let failed: { key: string; message: string }[] = [];
  if (!options.dryRun)
    ({ done, failed } = await deleteIcebergFiles(store, root, candidates, options.batchSize));
  const { removed, total } = tallies(done);
  return {
    tableRoot: root,
    dryRun: options.dryRun,
    metadataKey: base.metadataKey,
    ...(committedMetadataKey === undefined ? {} : { committedMetadataKey }),
    attempts,
    expireOlderThan: iso(expiry.expireOlderThan),
    olderThanSource: expiry.olderThanSource,
    retainLast: expiry.retainLast,
    expiredSnapshots: expiry.expired.map((s) => ({
      snapshotId: String(s.snapshotId),
      committedAt: iso(s.timestampMs),
    })),
    retainedSnapshots: [...expiry.retained].map(([id, reason]) => ({ snapshotId: String(id), reason })),
    removedRefs: expiry.removedRefs,
    removed,
    totalRemoved: total,
    failed,
    candidates: done.slice(0, options.listLimit ?? 1000),
    notes,
  };
}
