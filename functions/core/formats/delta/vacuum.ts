// Delta VACUUM (issue #17 item 7): deletes the files under a table root that no version within the table's
// retention references — files of expired tombstones, and untracked files (never committed) older than the
// retention — with Spark's rules for what a listing may even consider, and nothing under `_delta_log/`.
//
// A pure planner decides over one snapshot and one listing; `vacuumDeltaTable` reads both through the ObjectStore
// port, re-checks the plan against the newest version, and deletes with conditional deletes in batches.

import type { ObjectInfo, ObjectStore } from '../../../ports/object-store.js';
import { CompactorError } from '../../errors.js';
import { keyRefusal, printable, refusedKeyReason } from '../../keys.js';
import { HOUR, hoursAgo, iso } from '../../maintenance/ages.js';
import type { DeletionVector } from './actions.js';
import { deletionVectorRelativePath } from './deletion-vectors.js';
import { type DeltaSnapshot, normalizeTableRoot, readDeltaSnapshot } from './log.js';
import type { DeltaLogStore } from './log-store.js';
import { coordinationMismatch } from './log-store-for.js';
import {
  DEFAULT_DELETED_FILE_RETENTION,
  DELETED_FILE_RETENTION_PROPERTY,
  parseDeltaInterval,
} from './retention.js';

export {
  DEFAULT_DELETED_FILE_RETENTION,
  DELETED_FILE_RETENTION_PROPERTY,
  parseDeltaInterval,
} from './retention.js';

/**
 * Retention below which VACUUM refuses to run unless the caller turns the check off: the same week the Parquet
 * vacuum enforces (maintenance/vacuum.ts MIN_RETENTION_HOURS, not imported to keep formats/ free of maintenance/).
 * A shorter one may delete the output of a writer still running, or a file a reader planned a query with.
 */
export const DELTA_MIN_RETENTION_HOURS = 168;

/** Objects per conditional `deleteMany` call: S3's DeleteObjects limit, so progress is kept batch by batch. */
export const DELTA_VACUUM_BATCH = 1000;

/**
 * Table features VACUUM knows how to honour, each with why. The `vacuumProtocolCheck` feature requires a vacuum
 * client to check the table's full reader AND writer protocol first (delta-io/delta PROTOCOL.md "VACUUM Protocol
 * Check"): `readDeltaSnapshot` refuses any feature it does not accept, and this list refuses, in addition, any
 * accepted feature whose effect on which files are referenced vacuum has not been thought through, so a feature
 * added to protocol.ts for compaction never silently widens what vacuum deletes.
 */
export const VACUUM_UNDERSTOOD_FEATURES: Readonly<Record<string, string>> = {
  appendOnly: 'changes which commits are allowed, not which files are referenced',
  invariants: 'constraints on rows, not on files',
  checkConstraints: 'constraints on rows, not on files',
  generatedColumns: 'a schema property, not a file reference',
  identityColumns: 'a schema property, not a file reference',
  changeDataFeed:
    '_change_data/ files are never in the state; like Spark, they go once older than the retention',
  columnMapping: 'data paths may have random prefixes; the log’s paths are used, never the directory names',
  deletionVectors: 'the deletion-vector file of every live or retained file is kept',
  timestampNtz: 'a column type only',
  typeWidening: 'column types only: which files are referenced is unchanged',
  'typeWidening-preview': 'column types only: which files are referenced is unchanged',
  domainMetadata: 'metadata in the log only',
  v2Checkpoint: 'checkpoints and sidecars live under _delta_log/, which vacuum never touches',
  inCommitTimestamp: 'commit timestamps; retention counts from each remove’s deletionTimestamp as in Spark',
  vacuumProtocolCheck: 'this check: the full reader and writer protocol is verified before planning',
};

/** Why a listed object stays. */
export type DeltaVacuumKeepReason =
  /** Not under the table root (only a malformed listing would hold it). */
  | 'outside-root'
  /** Under `_delta_log/`: the log is never vacuumed. */
  | 'log'
  /** A file or directory Delta ignores (`.`/`_`-prefixed, or `metadata`), except partition and `_change_data` dirs. */
  | 'hidden'
  /** Under a directory holding its own `_delta_log/`: another table's files. */
  | 'nested-table'
  /** A key the confinement rule refuses (control characters, dot segments): listed by name in `refused`. */
  | 'refused-key'
  /** A live file of the version read or its deletion-vector file (or a key an absolute URI in the log may name). */
  | 'live'
  /** A removed file (or its DV file) whose tombstone is still within the retention. */
  | 'retained-tombstone'
  /** Not referenced, but modified within the retention: a writer may still be about to commit it. */
  | 'young';

export type DeltaVacuumKind = 'tombstone' | 'untracked';

/** An object the plan deletes. */
export interface DeltaVacuumCandidate {
  readonly key: string;
  readonly size: number;
  /** ETag at listing: the delete is conditioned on it, so a rewritten object is left alone. */
  readonly etag: string;
  readonly kind: DeltaVacuumKind;
  readonly reason: string;
}

export interface DeltaVacuumPlanInput {
  /** The table's latest snapshot (readDeltaSnapshot). */
  readonly snapshot: DeltaSnapshot;
  /** Every object under the table root. */
  readonly listing: readonly ObjectInfo[];
  /** Epoch ms. */
  readonly now: number;
  /** Overrides the table's `delta.deletedFileRetentionDuration`. */
  readonly retentionMs?: number;
  /** Spark's `spark.databricks.delta.retentionDurationCheck.enabled`: false allows a short retention. */
  readonly retentionCheck: boolean;
}

export interface DeltaVacuumPlan {
  readonly tableRoot: string;
  readonly version: number;
  readonly retentionMs: number;
  /** Where the retention came from. */
  readonly retentionSource: 'option' | 'table property' | 'default';
  /** Objects modified or removed before this instant (epoch ms) may go. */
  readonly deleteBefore: number;
  readonly delete: readonly DeltaVacuumCandidate[];
  readonly kept: Readonly<Record<DeltaVacuumKeepReason, number>>;
  readonly examined: number;
  readonly notes: readonly string[];
  /** Listed keys the confinement rule refuses (counted as `refused-key`), by name with why: never deleted. */
  readonly refused: readonly { readonly key: string; readonly reason: string }[];
  /** Present when nothing may be deleted, with why; `delete` is then empty. */
  readonly refusedReason?: string;
}

/** VACUUM would not run: a retention below the safety gate, an unreadable retention, a feature vacuum does not know. */
export class DeltaVacuumRefusedError extends CompactorError {
  constructor(
    readonly tableRoot: string,
    readonly reason: string,
  ) {
    super(`VACUUM of Delta table ${tableRoot || '(store root)'} refused: ${reason}. Nothing was deleted.`);
  }
}

/**
 * Where a deletion vector is stored, relative to the table root (`u`: `<prefix>/deletion_vector_<uuid>.bin`, the
 * UUID being the last 20 Z85 characters), as an absolute URI (`p`), or nowhere (`i`: inline in the log).
 * PROTOCOL.md "Deletion Vector Descriptor Schema". Undefined `relative` and `absolute` with storage `u`: malformed.
 */
export function deletionVectorFile(
  dv: DeletionVector,
): { readonly relative?: string; readonly absolute?: string } | undefined {
  if (dv.storageType === 'i') return {};
  if (dv.storageType === 'p') return { absolute: dv.pathOrInlineDv };
  let relative: string;
  try {
    relative = deletionVectorRelativePath(dv.pathOrInlineDv);
  } catch {
    return undefined; // not a Z85-encoded UUID: malformed
  }
  // A file whose prefix leaves the table root is none vacuum could list, or may delete: like an inline DV.
  return keyRefusal('', relative) === undefined ? { relative } : {};
}

/**
 * Spark's `DeltaTableUtils.isHiddenDirectory`, applied to every directory and the file name of a key: names
 * starting with `.` or `_` are hidden (Delta never writes data there, and other tools keep state there), except
 * `<partition column>=…` directories, `_change_data` (change data files, which VACUUM cleans up by age) and
 * `_delta_index`; `metadata` is hidden too (UniForm's Iceberg metadata).
 */
export function isHiddenName(name: string, partitionColumns: readonly string[]): boolean {
  if (name === 'metadata') return true;
  if (!name.startsWith('.') && !name.startsWith('_')) return false;
  if (name.startsWith('_delta_index') || name.startsWith('_change_data')) return false;
  return !partitionColumns.some((c) => name.startsWith(`${c}=`));
}

function emptyKept(): Record<DeltaVacuumKeepReason, number> {
  return {
    'outside-root': 0,
    log: 0,
    hidden: 0,
    'nested-table': 0,
    'refused-key': 0,
    live: 0,
    'retained-tombstone': 0,
    young: 0,
  };
}

/** The retention in effect and where it came from, or why there is none. */
function resolveRetention(
  input: DeltaVacuumPlanInput,
): { ms: number; source: DeltaVacuumPlan['retentionSource'] } | { refused: string } {
  const configured = input.snapshot.metadata.configuration[DELETED_FILE_RETENTION_PROPERTY];
  const tableMs = parseDeltaInterval(configured ?? DEFAULT_DELETED_FILE_RETENTION);
  if (tableMs === undefined) {
    return {
      refused: `the table property ${DELETED_FILE_RETENTION_PROPERTY} is "${configured}", which is not an interval of weeks, days, hours, minutes or seconds (e.g. "interval 7 days"); fix the property with a Delta client`,
    };
  }
  const explicit = input.retentionMs;
  if (explicit !== undefined && !(Number.isFinite(explicit) && explicit >= 0)) {
    return { refused: `the retention ${explicit} ms is not a non-negative number` };
  }
  const ms = explicit ?? tableMs;
  const source = explicit !== undefined ? 'option' : configured === undefined ? 'default' : 'table property';
  if (input.retentionCheck) {
    const hours = ms / HOUR;
    const why =
      'a shorter one can delete the output of a writer still running (its files are untracked until it commits) and files that readers of recent versions still need';
    const override =
      'turn the retention check off (Spark: spark.databricks.delta.retentionDurationCheck.enabled=false) only if no writer, reader or time travel needs older versions';
    if (hours < DELTA_MIN_RETENTION_HOURS) {
      return {
        refused: `the retention of ${hours} h (${source === 'option' ? 'requested' : `from ${source === 'default' ? 'the default' : `${DELETED_FILE_RETENTION_PROPERTY} "${configured}"`}`}) is below the minimum of ${DELTA_MIN_RETENTION_HOURS} h: ${why}. Use ${DELTA_MIN_RETENTION_HOURS} h or more, or ${override}`,
      };
    }
    if (explicit !== undefined && explicit < tableMs) {
      return {
        refused: `the requested retention of ${hours} h is shorter than the table's ${DELETED_FILE_RETENTION_PROPERTY} of ${tableMs / HOUR} h, which readers and time travel of this table count on: ${why}. Use ${Math.ceil(tableMs / HOUR)} h or more, or ${override}`,
      };
    }
  }
  return { ms, source };
}

/** The features of the protocol VACUUM does not know how to honour (see {@link VACUUM_UNDERSTOOD_FEATURES}). */
function unknownToVacuum(snapshot: DeltaSnapshot): string[] {
  const { readerFeatures, writerFeatures } = snapshot.protocol;
  return [...new Set([...readerFeatures, ...writerFeatures])].filter(
    (f) => VACUUM_UNDERSTOOD_FEATURES[f] === undefined,
  );
}

/** The decoded path of an absolute URI, to match listed keys by suffix; the URI itself when it does not parse. */
function uriPath(uri: string): string {
  try {
    return decodeURIComponent(new URL(uri).pathname);
  } catch {
    return uri;
  }
}

/**
 * The files one snapshot references as vacuum sees them: keys of live files and their DV files, keys of retained
 * tombstones and theirs, keys of expired tombstones (for the reason only), and paths of absolute references.
 */
interface References {
  readonly live: Set<string>;
  readonly retained: Map<string, string>;
  readonly expired: Map<string, string>;
  /** Decoded URI paths of absolute live or retained references: a listed key any of them ends with is kept. */
  readonly absolute: string[];
  /** A live or retained DV whose file cannot be located: nothing can be deleted safely. */
  readonly unlocatable?: string;
}

function referencesOf(snapshot: DeltaSnapshot, now: number, deleteBefore: number): References {
  const root = snapshot.tableRoot;
  const live = new Set<string>();
  const retained = new Map<string, string>();
  const expired = new Map<string, string>();
  const absolute: string[] = [];
  let unlocatable: string | undefined;
  const dvKey = (dv: DeletionVector, owner: string, keep: boolean): string | undefined => {
    const file = deletionVectorFile(dv);
    if (file === undefined) {
      if (keep && unlocatable === undefined)
        unlocatable = `the deletion vector "${dv.pathOrInlineDv}" of ${owner} is not a valid Z85 UUID reference, so its file cannot be told apart from an untracked one`;
      return undefined;
    }
    if (file.absolute !== undefined && keep) absolute.push(uriPath(file.absolute));
    return file.relative === undefined ? undefined : `${root}${file.relative}`;
  };
  for (const file of snapshot.files) {
    if (file.key === undefined) absolute.push(uriPath(file.path));
    else live.add(file.key);
    if (file.deletionVector !== undefined) {
      const key = dvKey(file.deletionVector, file.path, true);
      if (key !== undefined) live.add(key);
    }
  }
  for (const tombstone of snapshot.tombstones) {
    // Spark and delta-rs both read a missing deletionTimestamp as 0 (long expired); the file's own age still counts.
    const at = tombstone.deletionTimestamp ?? 0;
    const keep = at >= deleteBefore;
    const why = `removed ${tombstone.deletionTimestamp === undefined ? 'at an unrecorded time' : `at ${iso(at)} (${hoursAgo(now, at)})`}`;
    if (tombstone.key === undefined) {
      if (keep) absolute.push(uriPath(tombstone.path));
    } else (keep ? retained : expired).set(tombstone.key, why);
    if (tombstone.deletionVector !== undefined) {
      const key = dvKey(tombstone.deletionVector, tombstone.path, keep);
      if (key !== undefined) (keep ? retained : expired).set(key, `deletion vector of a file ${why}`);
    }
  }
  return { live, retained, expired, absolute, ...(unlocatable === undefined ? {} : { unlocatable }) };
}

/**
 * What VACUUM deletes from `listing` given `snapshot`, and why each other object stays. Pure.
 *
 * A listed object under the table root is deleted only when all of these hold (Spark's VacuumCommand rules):
 * - no directory on its path and not its name is hidden ({@link isHiddenName}), so `_delta_log/` and
 *   `.crc` files are never touched, while `<part>=…/` and `_change_data/` are;
 * - it is not a live file of the snapshot nor a live file's deletion-vector file;
 * - it is not a tombstone (or its DV file) removed within the retention — readers of those versions need it;
 * - it was last modified before `now - retention`.
 *
 * The last rule is what makes an untracked file safe to delete: a writer's output is untracked until its commit,
 * and the log read here may already be older than that commit. A file younger than the retention is therefore
 * always kept, whatever the log says, and deleting an old untracked file is safe as long as no writer runs longer
 * than the retention between writing a file and committing it — the assumption Delta itself makes, and the reason
 * a retention below {@link DELTA_MIN_RETENTION_HOURS} is refused unless `retentionCheck` is false.
 * Extra to Spark: files under a nested directory with its own `_delta_log/` belong to that table and stay.
 */
export function planDeltaVacuum(input: DeltaVacuumPlanInput): DeltaVacuumPlan {
  const { snapshot, listing, now } = input;
  const root = snapshot.tableRoot;
  const kept = emptyKept();
  const notes: string[] = [];
  const refuse = (reason: string): DeltaVacuumPlan => ({
    tableRoot: root,
    version: snapshot.version,
    examined: listing.length,
    retentionMs: 0,
    retentionSource: 'default',
    deleteBefore: now,
    delete: [],
    kept,
    notes,
    refused: [],
    refusedReason: reason,
  });

  const unknown = unknownToVacuum(snapshot);
  if (unknown.length > 0) {
    return refuse(
      `the table uses the feature(s) ${unknown.join(', ')}, and VACUUM does not know whether they keep files it would otherwise delete (the vacuumProtocolCheck rule: check every feature before vacuuming)`,
    );
  }
  const retention = resolveRetention(input);
  if ('refused' in retention) return refuse(retention.refused);
  const deleteBefore = now - retention.ms;
  const refs = referencesOf(snapshot, now, deleteBefore);
  if (refs.unlocatable !== undefined) return refuse(refs.unlocatable);
  if (refs.absolute.length > 0) {
    notes.push(
      `${refs.absolute.length} live or retained file(s) are referenced by absolute URI: every listed key such a URI's path ends with is kept`,
    );
  }

  const partitionColumns = snapshot.metadata.partitionColumns;
  // Directories (relative to the root, ending with `/`) below the root that hold their own `_delta_log/`.
  const nestedRoots = new Set<string>();
  for (const object of listing) {
    if (!object.key.startsWith(root)) continue;
    const at = object.key.slice(root.length).indexOf('/_delta_log/');
    if (at > 0) nestedRoots.add(object.key.slice(root.length, root.length + at + 1));
  }

  const outside = snapshot.tombstones.filter((t) => t.refused !== undefined);
  if (outside.length > 0) {
    notes.push(
      `${outside.length} tombstone(s) name paths that leave the table root (e.g. "${printable(outside[0]?.path ?? '')}", which ${outside[0]?.refused}): ignored, as no file outside the root is vacuumed`,
    );
  }

  const candidates: DeltaVacuumCandidate[] = [];
  const refused: { key: string; reason: string }[] = [];
  const keep = (reason: DeltaVacuumKeepReason): void => {
    kept[reason] += 1;
  };
  for (const object of listing) {
    // The root's own folder marker is not a file of the table either.
    if (!object.key.startsWith(root) || object.key === root) {
      keep('outside-root');
      continue;
    }
    const relative = object.key.slice(root.length);
    if (relative.startsWith('_delta_log/')) {
      keep('log');
      continue;
    }
    if (relative.split('/').some((name) => isHiddenName(name, partitionColumns))) {
      keep('hidden');
      continue;
    }
    if ([...nestedRoots].some((nested) => relative.startsWith(nested))) {
      keep('nested-table');
      continue;
    }
    const refusal = keyRefusal(root, object.key);
    if (refusal !== undefined) {
      keep('refused-key');
      refused.push({
        key: object.key,
        reason: refusedKeyReason(refusal, 'never deleted by VACUUM; remove it by hand if it is debris'),
      });
      continue;
    }
    if (
      refs.live.has(object.key) ||
      refs.absolute.some((p) => p === object.key || p.endsWith(`/${object.key}`))
    ) {
      keep('live');
      continue;
    }
    if (refs.retained.has(object.key)) {
      keep('retained-tombstone');
      continue;
    }
    const modified = object.lastModified.getTime();
    if (modified >= deleteBefore) {
      keep('young');
      continue;
    }
    const tombstone = refs.expired.get(object.key);
    candidates.push({
      key: object.key,
      size: object.size,
      etag: object.etag,
      kind: tombstone === undefined ? 'untracked' : 'tombstone',
      reason:
        tombstone === undefined
          ? `not referenced by version ${snapshot.version}, last modified ${hoursAgo(now, modified)}`
          : `${tombstone}; retention ${retention.ms / HOUR} h`,
    });
  }
  return {
    tableRoot: root,
    version: snapshot.version,
    examined: listing.length,
    retentionMs: retention.ms,
    retentionSource: retention.source,
    deleteBefore,
    delete: candidates,
    kept,
    notes,
    refused,
  };
}

/** Counts and bytes of one kind (the shape of the Parquet vacuum's VacuumTally). */
export interface DeltaVacuumTally {
  count: number;
  bytes: number;
}

export interface DeltaVacuumOptions {
  /** Epoch ms. */
  readonly now: number;
  /** List what would be deleted, delete nothing. */
  readonly dryRun: boolean;
  /** Overrides the table's `delta.deletedFileRetentionDuration`. */
  readonly retentionHours?: number;
  /** The retention safety gate (default true); false allows a retention below the minimum. */
  readonly retentionCheck?: boolean;
  /** Candidates listed in the report (all are counted); 1000 when omitted. */
  readonly listLimit?: number;
  /** Objects per deleteMany call; {@link DELTA_VACUUM_BATCH} when omitted. */
  readonly batchSize?: number;
  /**
   * The table's declared coordination (format.ts `deltaLogStoreFor`). Before each read of the log it finishes an
   * incomplete commit entry (DynamoDB), as Spark's VACUUM does through `listFrom`: a decided commit whose copy was
   * interrupted is not in `_delta_log/` yet, and without this its data files would look untracked. It also checks
   * the declaration first: a writer that does not coordinate as declared refuses the table. Omitted (tests of the
   * planner, a local folder only other runs write): the log is read as it is.
   */
  readonly logStore?: DeltaLogStore;
}

export interface DeltaVacuumReport {
  readonly tableRoot: string;
  readonly dryRun: boolean;
  /** The version planned against. */
  readonly version: number;
  /** The version the plan was re-checked against just before deleting (equal when no commit came in between). */
  readonly recheckedVersion: number;
  readonly retentionHours: number;
  readonly retentionSource: DeltaVacuumPlan['retentionSource'];
  readonly examined: number;
  /** What was deleted (dry run: what would have been), by kind. */
  readonly removed: Readonly<Record<DeltaVacuumKind, DeltaVacuumTally>>;
  readonly totalRemoved: DeltaVacuumTally;
  /** Listed objects kept, by reason. */
  readonly kept: Readonly<Record<DeltaVacuumKeepReason, number>>;
  readonly keptCount: number;
  /** Candidates left alone at the end: changed since listing, or referenced by the re-checked version. */
  readonly spared: readonly { readonly key: string; readonly reason: string }[];
  /** Listed keys the confinement rule refuses: never deleted, by name with why. */
  readonly refused: readonly { readonly key: string; readonly reason: string }[];
  readonly failed: readonly { readonly key: string; readonly message: string }[];
  /** Up to `listLimit` of what was (or would be) deleted. */
  readonly candidates: readonly DeltaVacuumCandidate[];
  readonly notes: readonly string[];
}

/**
 * VACUUM of one Delta table: reads its latest snapshot (which checks the full reader and writer protocol, as the
 * vacuumProtocolCheck feature requires), lists everything under the root, plans ({@link planDeltaVacuum}), then
 * re-reads the latest snapshot and plans again over the same listing: only what both plans delete goes, so a
 * commit that landed while listing cannot lose a file it references. Deletes are conditional on the listed ETag
 * (an object rewritten since is spared) and batched. A dry run stops after planning.
 *
 * The snapshot keeps every tombstone the log still holds (checkpoints drop expired ones, which then count as
 * untracked files and go by their age, as in Spark).
 * @throws DeltaVacuumRefusedError when the plan is refused (retention gate, bad property, unknown feature).
 * @throws CoordinationMismatchError when `options.logStore` finds a writer that does not coordinate as declared.
 * @throws DeltaFeatureNotSupportedError, DeltaLogError from reading the log: nothing is deleted.
 */
export async function vacuumDeltaTable(
  store: ObjectStore,
  tableRoot: string,
  options: DeltaVacuumOptions,
): Promise<DeltaVacuumReport> {
  const root = normalizeTableRoot(tableRoot);
  const planOf = (snapshot: DeltaSnapshot, listing: readonly ObjectInfo[]): DeltaVacuumPlan => {
    const plan = planDeltaVacuum({
      snapshot,
      listing,
      now: options.now,
      retentionCheck: options.retentionCheck ?? true,
      ...(options.retentionHours === undefined ? {} : { retentionMs: options.retentionHours * HOUR }),
    });
    if (plan.refusedReason !== undefined) throw new DeltaVacuumRefusedError(root, plan.refusedReason);
    return plan;
  };

  const logStore = options.logStore;
  if (logStore !== undefined) {
    const finding = await logStore.check(root, { now: options.now, purpose: 'vacuum' });
    if (finding?.kind === 'mismatch') throw coordinationMismatch(root, logStore, finding.message);
  }
  // Every read of the log below goes through the coordination first (Spark: listFrom → fixDeltaLog), dry run or
  // not: finishing a decided commit is what any reader does, and it changes nothing any version says.
  const readLog = async (): Promise<DeltaSnapshot> => {
    await logStore?.prepareRead(root.replace(/\/$/, ''));
    return readDeltaSnapshot(store, root);
  };
  const snapshot = await readLog();
  const listing: ObjectInfo[] = [];
  for await (const object of store.listAll(root)) listing.push(object);
  const plan = planOf(snapshot, listing);

  let recheckedVersion = plan.version;
  let due: readonly DeltaVacuumCandidate[] = plan.delete;
  const spared: { key: string; reason: string }[] = [];
  const failed: { key: string; message: string }[] = [];
  const done: DeltaVacuumCandidate[] = [];
  if (options.dryRun) {
    done.push(...due);
  } else {
    const latest = await readLog();
    recheckedVersion = latest.version;
    if (latest.version !== snapshot.version) {
      const still = new Set(planOf(latest, listing).delete.map((c) => c.key));
      due = plan.delete.filter((c) => {
        if (still.has(c.key)) return true;
        spared.push({
          key: c.key,
          reason: `referenced by version ${latest.version}, committed while planning`,
        });
        return false;
      });
    }
    // The last line of the confinement rule: whatever planned it, no key outside the root is ever sent.
    due = due.filter((c) => {
      const refusal = keyRefusal(root, c.key);
      if (refusal !== undefined)
        failed.push({
          key: c.key,
          message: `not deleted: the key ${refusal}, so it is not the table's to delete`,
        });
      return refusal === undefined;
    });
    const batch = options.batchSize ?? DELTA_VACUUM_BATCH;
    for (let i = 0; i < due.length; i += batch) {
      const chunk = due.slice(i, i + batch);
      const outcome = await store.deleteMany(chunk.map((c) => ({ key: c.key, ifMatch: c.etag })));
      const errors = new Map(outcome.errors.map((e) => [e.key, e]));
      for (const candidate of chunk) {
        const error = errors.get(candidate.key);
        if (error === undefined) done.push(candidate);
        else if (error.code === 'PreconditionFailed')
          spared.push({ key: candidate.key, reason: 'changed since it was listed: left alone' });
        else failed.push({ key: candidate.key, message: error.message });
      }
    }
  }

  const removed: Record<DeltaVacuumKind, DeltaVacuumTally> = {
    tombstone: { count: 0, bytes: 0 },
    untracked: { count: 0, bytes: 0 },
  };
  const total = { count: 0, bytes: 0 };
  for (const c of done) {
    removed[c.kind].count += 1;
    removed[c.kind].bytes += c.size;
    total.count += 1;
    total.bytes += c.size;
  }
  return {
    tableRoot: root,
    dryRun: options.dryRun,
    version: plan.version,
    recheckedVersion,
    retentionHours: plan.retentionMs / HOUR,
    retentionSource: plan.retentionSource,
    examined: plan.examined,
    removed,
    totalRemoved: total,
    kept: plan.kept,
    keptCount: Object.values(plan.kept).reduce((a, b) => a + b, 0),
    spared,
    refused: plan.refused,
    failed,
    candidates: done.slice(0, options.listLimit ?? 1000),
    notes: plan.notes,
  };
}
