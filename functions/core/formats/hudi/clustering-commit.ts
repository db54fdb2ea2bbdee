// The clustering of one planned group of base-only file groups, as Hudi's own clustering runs it (HUDI-NOTES §4),
// over the journal-driven commit every log-based format shares (version-commit.ts):
//
//   prepare (compact step, before the rewrite; under the table's lock): re-read the table, check the inputs are still
//     live and in no other plan, mint the clustering instant T above every instant of the timeline, record T in the
//     journal, then write `T.replacecommit.requested` (v6) / `T.clustering.requested` (v8+) and the empty inflight.
//     Hudi writers now see the pending plan (Spark rejects upserts to its file groups), and the outputs' names
//     `<newFileId>_<token>_T.parquet` — which each row's `_hoodie_file_name` carries — are known before the rewrite.
//   rewrite → verify → publish: the outputs are copied into the partition under those names (no instant names them
//     yet, so no Hudi reader sees them).
//   commit (under the lock): re-read hoodie.properties and the timeline; our own completed instant means done (a
//     retry); a changed table version, a metadata table, a pending rollback or restore, a pending insert_overwrite
//     or delete_partition, or a newer slice, replacement or other plan of an input file group aborts the group;
//     else the completed replacecommit is written with a conditional create — the one atomic step. A lock another
//     writer holds past its wait aborts the group as a failure naming HudiLockUnavailableError (nothing was written
//     under it): rolled back below, the partition released, the next run plans it afresh.
//   abort: outputs removed (version-commit.ts), then T rolled back as Hudi would: the files its markers name, the
//     markers, the inflight, the requested file, the heartbeat (notes §4 step 4; pending-instant.ts).
//
// T is in the journal from before its requested file exists, so a crash anywhere is finished or undone by a retry,
// `settle` or the sweep: rollback before `published` aborts (and removes T's files), from `published` on rolls
// forward while T's heartbeat is alive — a settle that finds it lapsed (over Hudi's 2 minutes) aborts T, as any
// commit does; an abort keeps the group open until T is rolled back (version-commit.ts `undo`). The instant's
// heartbeat is written before its plan, renewed while the group is rewritten and published (never once lapsed:
// pending-instant.ts `renewLiveHeartbeat`), and removed with it; each output's
// direct marker is written before the output enters the table (pending-instant.ts), so a Hudi writer rolling our
// instant back deletes exactly our files.
import type { Clock } from '../../../ports/clock.js';
import type { FormatState, GroupJournalEntry } from '../../../ports/journal.js';
import type { ObjectStore } from '../../../ports/object-store.js';
import type { OutputFooterEntries } from '../../../ports/parquet-engine.js';
import { CompactorError, InvalidInputError, PreconditionFailedError } from '../../errors.js';
import type { CommitConflict, CommitDeps, KeepAlive, PreparedGroup } from '../table-format.js';
import { type VersionCommitResult, type VersionProtocol, versionCommitter } from '../version-commit.js';
import { HUDI_INDEX_FOOTER_KEYS, HudiIndexFooterBuilder } from './bloom/index.js';
import { parseBaseFileName } from './file-groups.js';
import { HudiLockUnavailableError, type HudiTableLock, withHudiLock } from './lock/index.js';
import {
  HEARTBEAT_RENEW_MS,
  HUDI_HEARTBEAT_TOLERANCE_MS,
  heartbeatKey,
  pendingKeys,
  removeMarkers,
  renewHeartbeat,
  renewLiveHeartbeat,
  rollBackOwnInstant,
  writeMarkers,
} from './pending-instant.js';
import { markedClusteringPlan } from './plan-mark.js';
import type { HudiTableState } from './table-state.js';
import { cachedBy, readHudiTable, readTableConfig } from './table-state.js';
import { type InstantMetadataCache, keyUnder, listFolder } from './timeline.js';
import {
  baseFileName,
  buildClusteringCommitMetadata,
  buildClusteringPlan,
  clusteringRequestedContent,
  completedInstantFile,
  EMPTY_INFLIGHT_CONTENT,
  type InstantTimeZone,
  instantTimeZoneFor,
  mintInstantTime,
  newFileId,
  replaceCommitContent,
  writeToken,
} from './timeline-writer/index.js';

/** How a table's Hudi writers coordinate, as its settings declare it (bound by the format's `forTable`). */
export interface HudiCoordination {
  /** The table's lock, or undefined for the declared no-lock opt-in (then `quietWindowMinutes` is set). */
  lockFor(
    store: ObjectStore,
    tableRoot: string,
    tableName: string | undefined,
    clock: Clock,
  ): HudiTableLock | undefined;
  /** With no lock: minutes the timeline must show no other completed instant. */
  readonly quietWindowMinutes?: number;
  /** The IANA zone instants are minted in when the table's timeline timezone is LOCAL. */
  readonly localZone?: string;
  /** A warm function's decoded instants (instant-cache.ts), for every read of the table under this coordination. */
  readonly instantCache?: InstantMetadataCache;
}

/** The journal's record of a Hudi group (flat JSON in `formatState`). */
export interface HudiGroupState {
  readonly tableRoot: string;
  readonly tableVersion: number;
  readonly timelinePath: string;
  /** The clustering instant, once prepared. */
  readonly instant?: string;
  /** True once the completed replacecommit is written. */
  readonly committed: boolean;
}

/** The formatState a snapshot records for planning (merged into every group's journal entry). */
export function hudiFormatState(state: HudiTableState): FormatState {
  const latest = state.timeline.latestCompletedWrite;
  return {
    tableRoot: state.tableRoot,
    tableVersion: state.config.version,
    layoutVersion: state.config.layoutVersion,
    // `.hoodie` (layout 1) or `.hoodie/<hoodie.timeline.path>` (layout 2).
    timelinePath: state.config.timelinePath.replace(/\/+$/, ''),
    timelineTimezone: state.config.timelineTimezone,
    ...(latest === undefined ? {} : { latestInstant: latest.time }),
    ...(latest?.completionTime === undefined ? {} : { latestCompletionTime: latest.completionTime }),
  };
}

/** @throws InvalidInputError for an entry not planned from a Hudi snapshot. */
export function hudiGroupState(entry: GroupJournalEntry): HudiGroupState {
  const s = entry.formatState ?? {};
  if (typeof s.tableRoot !== 'string' || typeof s.tableVersion !== 'number') {
    throw new InvalidInputError(
      `Group ${entry.groupId} of run ${entry.runId} was not planned from a Hudi snapshot (no table root or version in its journal entry); settle it with the format it was planned with`,
    );
  }
  const timelinePath = typeof s.timelinePath === 'string' ? s.timelinePath : '.hoodie';
  return {
    tableRoot: s.tableRoot,
    tableVersion: s.tableVersion,
    timelinePath,
    ...(typeof s.hudiInstant === 'string' ? { instant: s.hudiInstant } : {}),
    committed: s.hudiCommitted === true,
  };
}

/** The timeline folder name inside `.hoodie/` for names.ts (`timeline` on v8+). */
function timelineFolderOf(g: HudiGroupState): string | undefined {
  return g.timelinePath === '.hoodie' ? undefined : g.timelinePath.slice('.hoodie/'.length);
}

/** The partition path of a key under the table root ('' when unpartitioned). */
function partitionOfKey(tableRoot: string, key: string): string {
  const rel = tableRoot === '' ? key : key.slice(tableRoot.length + 1);
  const slash = rel.lastIndexOf('/');
  return slash < 0 ? '' : rel.slice(0, slash);
}

function fileNameOf(key: string): string {
  return key.slice(key.lastIndexOf('/') + 1);
}

/** The table's base path as Hudi writers spell it in a plan's absolute paths. */
export function basePathOf(store: ObjectStore, tableRoot: string): string {
  const d = store.description.replace(/\/+$/, '');
  const base = d.startsWith('s3://')
    ? `s3a://${d.slice('s3://'.length)}`
    : d.includes('://')
      ? d
      : `file:${d}`;
  return tableRoot === '' ? base : `${base}/${tableRoot}`;
}

/** The write token of output `index`: Hudi's clustering uses the group's index as Spark's partition id. */
function outputName(instant: string, groupId: string, index: number): string {
  return baseFileName(
    newFileId(`${instant}/${groupId}`, index),
    writeToken({ partitionId: index, stageId: 0, attemptId: 0 }),
    instant,
  );
}

/** The conflicts of a group's inputs with the table as read now (notes §4 step 3). */
function conflictsOf(
  state: HudiTableState,
  entry: GroupJournalEntry,
  g: HudiGroupState,
  own: string | undefined,
): CommitConflict[] {
  const conflicts: CommitConflict[] = [];
  if (state.config.version !== g.tableVersion)
    conflicts.push({
      key: 'hoodie.properties',
      reason: `the table version changed from ${g.tableVersion} to ${state.config.version}`,
    });
  for (const pending of state.timeline.pendingReplaces)
    conflicts.push({
      key: pending.fileName,
      reason: `a replacecommit (insert_overwrite or delete_partition) ${pending.time} is pending`,
    });
  for (const input of entry.inputs) {
    const name = parseBaseFileName(fileNameOf(input.key));
    if (name === undefined) {
      conflicts.push({ key: input.key, reason: 'not a Hudi base file name' });
      continue;
    }
    const partition = partitionOfKey(g.tableRoot, input.key);
    for (const write of state.timeline.completedWrites) {
      if (write.instant.time === own) continue;
      if ((write.metadata.partitionToReplaceFileIds.get(partition) ?? []).includes(name.fileId))
        conflicts.push({
          key: input.key,
          reason: `file group ${name.fileId} was replaced by ${write.instant.action} ${write.instant.time}`,
        });
      if (
        write.instant.time > name.instantTime &&
        (write.metadata.partitionToWriteStats.get(partition) ?? []).some((s) => s.fileId === name.fileId)
      )
        conflicts.push({
          key: input.key,
          reason: `file group ${name.fileId} got a newer slice from ${write.instant.action} ${write.instant.time}`,
        });
    }
    for (const plan of state.timeline.pendingPlans) {
      if (plan.instant.time === own) continue;
      if (plan.fileGroups.some((f) => f.fileId === name.fileId && f.partitionPath === partition))
        conflicts.push({
          key: input.key,
          reason: `file group ${name.fileId} is in pending ${plan.kind} ${plan.instant.time}`,
        });
    }
  }
  return conflicts;
}

/** Every instant and completion time on the timeline: what a new instant must be above. */
export function timelineTimes(state: HudiTableState): string[] {
  return state.timeline.instants.flatMap((i) =>
    i.completionTime === undefined ? [i.time] : [i.time, i.completionTime],
  );
}

/**
 * The completed file of `instant` when it exists (v6: `T.replacecommit`; v8+: `T_<C>.replacecommit`), relative to
 * the store.
 */
async function findCompleted(
  store: ObjectStore,
  g: HudiGroupState,
  instant: string,
): Promise<string | undefined> {
  const folder = keyUnder(g.tableRoot, `${g.timelinePath}/`);
  const { objects } = await listFolder(store, folder);
  return objects
    .map((o) => o.key)
    .find((key) => {
      const name = key.slice(folder.length);
      return (
        name === `${instant}.replacecommit` ||
        (name.startsWith(`${instant}_`) && name.endsWith('.replacecommit'))
      );
    });
}

/**
 * A commit the declared no-lock opt-in must not make now: another instant completed inside the quiet window. Times
 * are the timeline files' instants read in the minting zone (v8+: completion times).
 */
function quietWindowProblem(
  state: HudiTableState,
  zone: InstantTimeZone,
  minutes: number,
  now: number,
  own: string | undefined,
): string | undefined {
  const bound = now - minutes * 60_000;
  for (const i of state.timeline.latest) {
    if (i.time === own || i.state !== 'completed') continue;
    const at = instantEpochMs(i.completionTime ?? i.time, zone);
    if (at !== undefined && at > bound)
      return `hudiLock "none": ${i.action} ${i.time} completed inside the declared ${minutes}-minute quiet window; the table's writer must be quiet before lake-compactor commits`;
  }
  return undefined;
}

/** An instant time as epoch ms in `zone` (14- or 17-digit); undefined for Hudi's special instants. */
export function instantEpochMs(instant: string, zone: InstantTimeZone): number | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\d{3})?$/.exec(instant);
  if (m === null || m[1] === '0000') return undefined;
  const n = (i: number) => Number(m[i] ?? '0');
  // The wall-clock digits read as if UTC; in another zone, less the zone's offset at about that moment.
  const naive = Date.UTC(n(1), n(2) - 1, n(3), n(4), n(5), n(6), n(7));
  if (zone === 'UTC') return naive;
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: zone.iana,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  }).formatToParts(new Date(naive));
  const part = (t: string) => Number(parts.find((p) => p.type === t)?.value ?? '0');
  const wall = Date.UTC(
    part('year'),
    part('month') - 1,
    part('day'),
    part('hour'),
    part('minute'),
    part('second'),
  );
  return naive - (wall - (naive - (naive % 1000)));
}

/** The lock's critical section, or the section alone for the declared no-lock opt-in. */
async function underLock<T>(
  coordination: HudiCoordination,
  deps: CommitDeps,
  g: HudiGroupState,
  work: (assertHeld: (during: string) => void) => Promise<T>,
): Promise<T> {
  // hoodie.table.name: the DynamoDB lock's default partition key, as Hudi's.
  const config = await readTableConfig(deps.store, g.tableRoot || '(root)', g.tableRoot);
  const lock = coordination.lockFor(deps.store, g.tableRoot, config.name, deps.clock);
  if (lock === undefined) return work(() => {});
  return withHudiLock(lock, (handle) => work((during) => handle.assertHeld(during)));
}

/** The zone the table mints instants in. */
function zoneOf(state: HudiTableState, coordination: HudiCoordination): InstantTimeZone {
  try {
    return instantTimeZoneFor(state.config.timelineTimezone, coordination.localZone);
  } catch (err) {
    throw new InvalidInputError(
      `Hudi table ${state.tableRoot || '(root)'}: ${err instanceof Error ? err.message : String(err)} (hudiTimezone; on the CLI --hudi-timezone)`,
    );
  }
}

/** A put that creates `key` only when absent; an existing object with the same bytes is ours (a retry). */
export async function createOnce(store: ObjectStore, key: string, body: Uint8Array): Promise<void> {
  try {
    await store.put(key, body, { ifNoneMatch: '*' });
  } catch (err) {
    if (!(err instanceof PreconditionFailedError)) throw err;
    const there = await store.get(key);
    if (Buffer.compare(Buffer.from(there), Buffer.from(body)) !== 0) throw new HudiInstantCollisionError(key);
  }
}

/** Another writer created an instant file we meant to create, with other content. */
export class HudiInstantCollisionError extends CompactorError {
  constructor(readonly key: string) {
    super(
      `Hudi instant file ${key} already exists with other content: another writer minted the same instant; the group is rolled back and nothing of it is committed`,
    );
  }
}

/** The footer entries Hudi's index reads (bloom filter, type code, min/max record keys), from each output's keys. */
const INDEX_FOOTER: OutputFooterEntries = {
  keys: HUDI_INDEX_FOOTER_KEYS,
  column: '_hoodie_record_key',
  begin: () => new HudiIndexFooterBuilder(),
};

/**
 * Prepares a group (see the module comment): idempotent, a retry finds T recorded and its files present.
 */
export async function prepareHudiGroup(
  coordination: HudiCoordination | undefined,
  deps: CommitDeps,
  entry: GroupJournalEntry,
): Promise<PreparedGroup> {
  const g = hudiGroupState(entry);
  const ready = (e: GroupJournalEntry, instant: string): PreparedGroup => ({
    kind: 'ready',
    entry: e,
    outputFileName: (index) => outputName(instant, e.groupId, index),
    // Every index type gets the bloom filter and key range: Hudi's writers put them in every base file, and the
    // inputs' entries describe other rows.
    rewrite: {
      derivedColumns: [{ column: '_hoodie_file_name', value: 'output-file-name' }],
      outputFooterEntries: INDEX_FOOTER,
      // Outputs keep the table's physical schema exactly (Avro-written decimals stay fixed or bytes), whatever the
      // table's fidelity: Hudi's readers and writers read every file of a table by one schema.
      schemaFidelity: 'exact',
    },
    keepAlive: clusteringKeepAlive(deps.store, g.tableRoot, instant),
  });
  // A retry: T recorded and its plan written (the inflight may still be missing: written below, under the lock).
  let planned = false;
  if (g.instant !== undefined) {
    const keys = pendingKeys(g, 'clustering', g.instant);
    planned = (await deps.store.head(keys.requested)) !== undefined;
    if (planned && (await deps.store.head(keys.inflight)) !== undefined) return ready(entry, g.instant);
  }
  if (coordination === undefined) throw undeclared(g.tableRoot);
  return underLock(coordination, deps, g, async (assertHeld) => {
    const state = await readHudiTable(deps.store, g.tableRoot, cachedBy(coordination));
    const conflicts = conflictsOf(state, entry, g, g.instant);
    // Inputs must still be the live base files: a newer slice is caught above; a file group in our own earlier
    // attempt's plan is ours. A conflict found on a retry undoes that attempt's plan first: the caller aborts the
    // group without a rollback, and nothing may stay pending for Hudi writers to block on.
    const refuse = async (reason: string): Promise<PreparedGroup> => {
      if (g.instant !== undefined) await removePendingInstant(deps, entry);
      return { kind: 'conflict', reason };
    };
    if (conflicts.length > 0) return refuse(conflicts.map((c) => `${c.key} (${c.reason})`).join(', '));
    const zone = zoneOf(state, coordination);
    if (coordination.quietWindowMinutes !== undefined) {
      const problem = quietWindowProblem(
        state,
        zone,
        coordination.quietWindowMinutes,
        deps.clock.now(),
        g.instant,
      );
      if (problem !== undefined) return refuse(problem);
    }
    // Minted under the lock right before its plan is written (notes §4: on v6 conflicts are found by instant time);
    // a recorded T whose plan was never written is minted anew, as nothing names it.
    const instant =
      planned && g.instant !== undefined
        ? g.instant
        : mintInstantTime(deps.clock.now(), zone, timelineTimes(state));
    const recorded =
      g.instant === instant
        ? entry
        : await deps.journal.transition(
            entry,
            'planned',
            { formatState: { ...entry.formatState, hudiInstant: instant } },
            deps.clock.now(),
          );
    const plan = buildClusteringPlan({
      tableVersion: g.tableVersion,
      basePath: basePathOf(deps.store, g.tableRoot),
      groups: [
        {
          slices: entry.inputs.map((input) => ({
            partitionPath: partitionOfKey(g.tableRoot, input.key),
            fileId: parseBaseFileName(fileNameOf(input.key))?.fileId ?? '',
            baseFileName: fileNameOf(input.key),
            baseFileSizeBytes: input.size,
          })),
        },
      ],
    });
    const keys = pendingKeys(g, 'clustering', instant);
    assertHeld('writing the clustering plan');
    // Our mark names the run and group (plan-mark.ts): a plan its run left is then told from a Hudi writer's.
    const marked = markedClusteringPlan(plan, { run: entry.runId, group: entry.groupId });
    // The instant's heartbeat (Hudi reads its modification time) before its plan: Hudi's lazy failed-writes cleaner
    // and clustering expiry treat a pending instant without a fresh one as failed, so T is never on the timeline
    // without it. Renewed while the group is rewritten (`keepAlive`) and published, never once it lapsed; then, or
    // should a Hudi writer roll T back, our commit aborts, and the writer's rollback deleted only the files our
    // markers name.
    await renewHeartbeat(deps.store, g.tableRoot, instant);
    await createOnce(deps.store, keys.requested, clusteringRequestedContent(g.tableVersion, marked));
    await createOnce(deps.store, keys.inflight, EMPTY_INFLIGHT_CONTENT);
    return ready(recorded, instant);
  });
}

function undeclared(tableRoot: string): InvalidInputError {
  return new InvalidInputError(
    `Hudi table ${tableRoot || '(root)'} declares no lock: nothing is written to a Hudi table without the coordination its writers use; declare hudiLock (on the CLI: --hudi-lock storage|dynamodb|none)`,
  );
}

/** The requested plan of our instant, read back (the commit names exactly its file groups as replaced). */
async function commitVersion(
  coordination: HudiCoordination | undefined,
  deps: CommitDeps,
  entry: GroupJournalEntry,
): Promise<VersionCommitResult> {
  const g = hudiGroupState(entry);
  if (g.instant === undefined)
    throw new InvalidInputError(
      `Group ${entry.groupId} of run ${entry.runId} has no Hudi clustering instant recorded: it was not prepared before its rewrite`,
    );
  const instant = g.instant;
  const already = await findCompleted(deps.store, g, instant);
  if (already !== undefined)
    return { kind: 'committed', state: { hudiCommitted: true, hudiCompleted: already } };
  if (coordination === undefined) throw undeclared(g.tableRoot);
  // A fresh heartbeat before the wait for the lock (up to Hudi's 60 s), after the outputs' copies: the wait and the
  // checks under the lock then fit in Hudi's 2-minute tolerance. A heartbeat that lapsed since its last renewal (a
  // step retried late, a slow Map slot) is not renewed but aborts T, as a Hudi writer aborts its own commit
  // (HeartbeatUtils.abortIfHeartbeatExpired): a writer may be rolling T back. Should T be rolled back already, the
  // checks below abort the group too; either way its rollback removes what is left of T.
  if (!(await renewLiveHeartbeat(deps.store, g.tableRoot, instant, HUDI_HEARTBEAT_TOLERANCE_MS)))
    return {
      kind: 'conflict',
      conflicts: [
        {
          key: heartbeatKey(g.tableRoot, instant),
          reason: `the heartbeat of clustering ${instant} lapsed (not renewed for over ${HUDI_HEARTBEAT_TOLERANCE_MS / 60_000} minutes, or removed): Hudi writers take it for a failed write and may be rolling it back, so it is rolled back as a Hudi writer aborts; the next run clusters the partition again`,
        },
      ],
    };
  try {
    return await completeUnderLock(coordination, deps, entry, g, instant);
  } catch (err) {
    if (!(err instanceof HudiLockUnavailableError)) throw err;
    // Another writer held the lock past its wait, so nothing was written under it: T cannot complete in this
    // attempt. Rolled back as a failure naming the error (outputs, markers, inflight, requested plan, heartbeat)
    // rather than thrown: a throw would fail the group's rollback too (it rolls a published group forward, through
    // this same lock), leaving the pending plan — on which Spark writers reject upserts to its file groups — and
    // the partition needs-attention until the holder lets go. The next run plans the partition afresh.
    return {
      kind: 'conflict',
      failure: err,
      conflicts: [
        {
          key: pendingKeys(g, 'clustering', instant).requested,
          reason: `the table's lock was not free to complete clustering ${instant}: rolled back, the next run clusters the partition again`,
        },
      ],
    };
  }
}

/** T's completed replacecommit, written under the table's lock after the conflict checks (see {@link commitVersion}). */
async function completeUnderLock(
  coordination: HudiCoordination,
  deps: CommitDeps,
  entry: GroupJournalEntry,
  g: HudiGroupState,
  instant: string,
): Promise<VersionCommitResult> {
  return underLock(coordination, deps, g, async (assertHeld) => {
    const found = await findCompleted(deps.store, g, instant);
    if (found !== undefined)
      return { kind: 'committed', state: { hudiCommitted: true, hudiCompleted: found } };
    let state: HudiTableState;
    try {
      state = await readHudiTable(deps.store, g.tableRoot, cachedBy(coordination));
    } catch (err) {
      if (err instanceof CompactorError)
        return { kind: 'conflict', conflicts: [{ key: '.hoodie/', reason: err.message }] };
      throw err;
    }
    const keys = pendingKeys(g, 'clustering', instant);
    if ((await deps.store.head(keys.requested)) === undefined)
      return {
        kind: 'conflict',
        conflicts: [
          { key: keys.requested, reason: 'our clustering plan is gone (rolled back by a Hudi writer?)' },
        ],
      };
    const conflicts = conflictsOf(state, entry, g, instant);
    if (conflicts.length > 0) return { kind: 'conflict', conflicts };
    const zone = zoneOf(state, coordination);
    if (coordination.quietWindowMinutes !== undefined) {
      const problem = quietWindowProblem(
        state,
        zone,
        coordination.quietWindowMinutes,
        deps.clock.now(),
        instant,
      );
      if (problem !== undefined)
        return { kind: 'conflict', conflicts: [{ key: '.hoodie/', reason: problem }] };
    }
    const schema = [...state.timeline.completedWrites]
      .reverse()
      .map((w) => w.metadata.extraMetadata.get('schema'))
      .find((s) => s !== undefined && s !== '');
    const plan = buildClusteringPlan({
      tableVersion: g.tableVersion,
      basePath: basePathOf(deps.store, g.tableRoot),
      groups: [
        {
          slices: entry.inputs.map((input) => ({
            partitionPath: partitionOfKey(g.tableRoot, input.key),
            fileId: parseBaseFileName(fileNameOf(input.key))?.fileId ?? '',
            baseFileName: fileNameOf(input.key),
            baseFileSizeBytes: input.size,
          })),
        },
      ],
    });
    const metadata = buildClusteringCommitMetadata({
      plan,
      schema: schema ?? '',
      outputs: entry.outputs.map((o) => ({
        partitionPath: partitionOfKey(g.tableRoot, o.finalKey),
        fileId: parseBaseFileName(fileNameOf(o.finalKey))?.fileId ?? '',
        fileName: fileNameOf(o.finalKey),
        numWrites: o.rows,
        fileSizeInBytes: o.size,
      })),
    });
    const completion =
      g.tableVersion === 6
        ? undefined
        : mintInstantTime(deps.clock.now(), zone, [...timelineTimes(state), instant]);
    const timelinePath = timelineFolderOf(g);
    const completed = keyUnder(
      g.tableRoot,
      completedInstantFile(
        {
          tableVersion: g.tableVersion,
          operation: 'clustering',
          instant,
          ...(timelinePath === undefined ? {} : { timelinePath }),
        },
        completion,
      ),
    );
    assertHeld('writing the completed replacecommit');
    await createOnce(deps.store, completed, replaceCommitContent(g.tableVersion, metadata));
    return { kind: 'committed', state: { hudiCommitted: true, hudiCompleted: completed } };
  });
}

/**
 * Rolls back our pending instant (pending-instant.ts: the files its markers name, the markers, the inflight, the
 * requested file, the heartbeat), unless it completed (then it is the table's).
 */
async function removePendingInstant(deps: CommitDeps, entry: GroupJournalEntry): Promise<void> {
  const g = hudiGroupState(entry);
  if (g.instant === undefined || g.committed) return;
  if ((await findCompleted(deps.store, g, g.instant)) !== undefined) return;
  const keys = pendingKeys(g, 'clustering', g.instant);
  await rollBackOwnInstant(deps.store, { tableRoot: g.tableRoot, instant: g.instant, ...keys });
}

/**
 * The sign of life of our pending clustering T while a step works on it: its heartbeat renewed every
 * {@link HEARTBEAT_RENEW_MS} while alive, never once it lapsed (pending-instant.ts `renewLiveHeartbeat`; the commit
 * then aborts T).
 */
export function clusteringKeepAlive(store: ObjectStore, tableRoot: string, instant: string): KeepAlive {
  return {
    everyMs: HEARTBEAT_RENEW_MS,
    renew: async () => {
      await renewLiveHeartbeat(store, tableRoot, instant, HUDI_HEARTBEAT_TOLERANCE_MS);
    },
  };
}

/** The commit and rollback of Hudi clustering groups under `coordination` (none: reads and rollbacks only). */
export function hudiCommitter(coordination?: HudiCoordination) {
  return versionCommitter(clusteringProtocol(coordination));
}

/** The clustering half of a Hudi group commit (format.ts composes it with compaction's). */
export function clusteringProtocol(coordination?: HudiCoordination): VersionProtocol {
  return {
    commitVersion: (deps, entry) => commitVersion(coordination, deps, entry),
    isCommitted: (entry) => entry.formatState?.hudiCommitted === true,
    // A marker per output before it enters the table, and a fresh heartbeat for the commit still to come (unless it
    // lapsed: then it stays dead, and the commit aborts T).
    beforePublish: async (deps, entry) => {
      const g = hudiGroupState(entry);
      if (g.instant === undefined) return;
      await renewLiveHeartbeat(deps.store, g.tableRoot, g.instant, HUDI_HEARTBEAT_TOLERANCE_MS);
      await writeMarkers(
        deps.store,
        g.tableRoot,
        g.instant,
        entry.outputs.map((o) => o.finalKey),
      );
    },
    // The heartbeat renewed while the outputs are copied in (many, or large: their copies may outlast its tolerance).
    keepAlive: (deps, entry) => {
      const g = hudiGroupState(entry);
      return g.instant === undefined ? undefined : clusteringKeepAlive(deps.store, g.tableRoot, g.instant);
    },
    // The completed instant needs neither markers nor a heartbeat (Hudi deletes both on completion too).
    afterCommit: async (deps, entry) => {
      const g = hudiGroupState(entry);
      if (g.instant === undefined) return;
      await removeMarkers(deps.store, g.tableRoot, g.instant);
      await deps.store.deleteMany([{ key: heartbeatKey(g.tableRoot, g.instant) }]);
    },
    afterAbort: removePendingInstant,
  };
}
