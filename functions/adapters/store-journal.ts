// The Journal port on an ObjectStore (a local folder or an S3 bucket), for runs without DynamoDB: one JSON
// object per (run, group), created put-if-absent and moved by compare-and-swap on its ETag, plus one fence.
//
// Layout under the store's work root (`_lake-compactor/` by default; see core/workflow/layout.ts):
//   <work root>journal/runs/<runId>/<groupId>.json                     the entry (GroupJournalEntry)
//   <work root>journal/open/<table>/<partition>/<runId>/<groupId>      its fence, while unsettled
// (each segment URI-encoded; see layout.ts `journalSegment`). Unlike DynamoDB, two objects cannot change in one request, so
// the order carries the invariant "every unsettled entry has a fence" across a crash at any moment: `create`
// writes the fence BEFORE the entry, and a settling `transition` removes it AFTER the entry moved. A crash
// in between leaves a fence whose entry is missing or settled — which `listOpen` may list (the port allows
// it) and `settlePartition` closes.
import pLimit from 'p-limit';
import {
  ForeignJournalEntryError,
  JournalConflictError,
  ObjectNotFoundError,
  PreconditionFailedError,
} from '../core/errors.js';
import { normalizeRoot, relativeToRoot } from '../core/partition.js';
import {
  DEFAULT_WORK_ROOT,
  journalSegment as segment,
  storeJournalEntryKey,
  storeJournalFencesPrefix,
  storeJournalRunsPrefix,
  parseJournalSegment as unsegment,
} from '../core/workflow/layout.js';
import {
  type GroupJournalEntry,
  type GroupState,
  isSettled,
  type Journal,
  type JournalPartition,
  type JournalPatch,
  type OpenGroup,
} from '../ports/journal.js';
import type { ObjectInfo, ObjectStore } from '../ports/object-store.js';

/** Prefix of every fence of a partition (or, without one, of a table). */
function fencePrefix(workRoot: string, table: string, partition?: string): string {
  const base = `${storeJournalFencesPrefix(workRoot)}${segment(table)}/`;
  return partition === undefined ? base : `${base}${segment(partition)}/`;
}

/** Key of a group's fence. */
export function storeJournalFenceKey(
  workRoot: string,
  partition: JournalPartition,
  group: OpenGroup,
): string {
  return `${fencePrefix(workRoot, partition.table, partition.partition)}${segment(group.runId)}/${segment(group.groupId)}`;
}

export interface StoreJournalOptions {
  /**
   * The work root the journal lives in: a CLI run beside a deployment must use the deployment's, so the
   * deployment's vacuum judges its trash and staging by this journal.
   * @default DEFAULT_WORK_ROOT
   */
  readonly workRoot?: string;
  /**
   * The one table this journal serves (the CLI's location): every entry read must be this table's and name only
   * keys under its root, or reading it throws ForeignJournalEntryError. The work area of a bucket can be written by
   * more principals than the table, so an entry planted there must not make a settle restore, publish or delete
   * keys of another table. Unset (the vacuum, which holds each entry to its own table itself): entries are not
   * checked.
   */
  readonly table?: { readonly name: string; readonly root: string };
}

/** A stored entry with the object it was read from (a transition is conditioned on its ETag). */
interface StoredJournalEntry {
  readonly entry: GroupJournalEntry;
  readonly object: ObjectInfo;
}

const JSON_TYPE = { contentType: 'application/json' } as const;
/** Entries read at once when a run is listed. */
const READ_CONCURRENCY = 8;

/**
 * A durable journal in the same store as the data it journals, so `lake-compactor compact` on a folder
 * or an `s3://` prefix can be killed at any moment and the next run (or `settle`) rolls every group forward
 * or back exactly like the state machine does with its DynamoDB journal.
 *
 * Conditional semantics come from the store: on S3 (and the in-memory store) create and transition are
 * atomic against any other writer; on a local folder create is atomic (a hard link) but a transition's
 * compare-and-swap is atomic only within one process (see LocalObjectStore.put) — two processes driving
 * the same group on one folder are not supported.
 */
export class StoreJournal implements Journal {
  private readonly workRoot: string;
  private readonly table: { readonly name: string; readonly root: string } | undefined;

  constructor(
    private readonly store: ObjectStore,
    options: StoreJournalOptions = {},
  ) {
    this.workRoot = options.workRoot ?? DEFAULT_WORK_ROOT;
    this.table = options.table;
  }

  async get(runId: string, groupId: string): Promise<GroupJournalEntry | undefined> {
    return (await this.read(runId, groupId))?.entry;
  }

  async create(entry: Omit<GroupJournalEntry, 'revision'>): Promise<GroupJournalEntry> {
    const created: GroupJournalEntry = { ...entry, revision: 1 };
    // Fence first: a crash after it leaves a fence without an entry (closed by the next settle), never an
    // unsettled entry without a fence (which no settle would find).
    if (!isSettled(created)) {
      await this.store.put(
        storeJournalFenceKey(this.workRoot, created, created),
        fenceBody(created),
        JSON_TYPE,
      );
    }
    try {
      await this.store.put(
        storeJournalEntryKey(this.workRoot, entry.runId, entry.groupId),
        JSON.stringify(created),
        {
          ...JSON_TYPE,
          ifNoneMatch: '*',
        },
      );
    } catch (err) {
      if (!(err instanceof PreconditionFailedError)) throw err;
      // The fence just written belongs to an entry that exists already; if that one is settled, its
      // fence must not come back.
      const existing = await this.get(entry.runId, entry.groupId);
      if (existing !== undefined && isSettled(existing)) await this.closeFence(existing, existing);
      throw new JournalConflictError(
        `Journal entry ${entry.runId}/${entry.groupId} exists already; read it and continue from its state.`,
      );
    }
    return created;
  }

  async transition(
    current: GroupJournalEntry,
    to: GroupState,
    patch: JournalPatch,
    now: number,
  ): Promise<GroupJournalEntry> {
    const conflict = (seen: GroupJournalEntry | undefined) =>
      new JournalConflictError(
        `Journal entry ${current.runId}/${current.groupId} moved past revision ${current.revision} concurrently (it is ${seen === undefined ? 'gone' : `${seen.state} at revision ${seen.revision}`}); re-read it and continue.`,
      );
    const found = await this.read(current.runId, current.groupId);
    if (found === undefined || found.entry.revision !== current.revision) throw conflict(found?.entry);
    const next: GroupJournalEntry = {
      ...found.entry,
      ...patch,
      state: to,
      updatedAt: now,
      revision: current.revision + 1,
    };
    try {
      // Compare-and-swap: only the object read above (revision `current.revision`) may be replaced.
      await this.store.put(
        storeJournalEntryKey(this.workRoot, current.runId, current.groupId),
        JSON.stringify(next),
        {
          ...JSON_TYPE,
          ifMatch: found.object.etag,
        },
      );
    } catch (err) {
      if (err instanceof PreconditionFailedError || err instanceof ObjectNotFoundError) {
        throw conflict(await this.get(current.runId, current.groupId).catch(() => undefined));
      }
      throw err;
    }
    // After the entry: a crash before this leaves a settled entry's fence, which the next settle closes.
    if (isSettled(next)) await this.closeFence(next, next);
    return next;
  }

  async listRun(runId: string): Promise<GroupJournalEntry[]> {
    const keys: string[] = [];
    for await (const object of this.store.listAll(
      `${storeJournalRunsPrefix(this.workRoot)}${segment(runId)}/`,
    )) {
      if (object.key.endsWith('.json')) keys.push(object.key);
    }
    const entries = await this.readAll(keys);
    return entries
      .map((e) => e.entry)
      .sort((a, b) => (a.groupId < b.groupId ? -1 : a.groupId > b.groupId ? 1 : 0));
  }

  async listOpen(partition: JournalPartition): Promise<OpenGroup[]> {
    const prefix = fencePrefix(this.workRoot, partition.table, partition.partition);
    const open: OpenGroup[] = [];
    for await (const object of this.store.listAll(prefix)) {
      const [run, group, ...rest] = object.key.slice(prefix.length).split('/');
      if (run === undefined || group === undefined || rest.length > 0) continue;
      open.push({ runId: unsegment(run), groupId: unsegment(group) });
    }
    return open;
  }

  async closeFence(partition: JournalPartition, group: OpenGroup): Promise<void> {
    const key = storeJournalFenceKey(this.workRoot, partition, group);
    const result = await this.store.deleteMany([{ key }]);
    const failed = result.errors[0];
    if (failed !== undefined) {
      throw new Error(
        `Could not remove the fence ${key} of group ${group.runId}/${group.groupId}: ${failed.message}. Retry; the settle is idempotent.`,
      );
    }
  }

  /**
   * Every partition of `table` with at least one fence (all tables when omitted): where a crashed run may
   * have left a group, including partitions a listing of the data no longer shows (every input retired).
   */
  async openPartitions(table?: string): Promise<JournalPartition[]> {
    const fences = storeJournalFencesPrefix(this.workRoot);
    const prefix = table === undefined ? fences : fencePrefix(this.workRoot, table);
    const found = new Map<string, JournalPartition>();
    for await (const object of this.store.listAll(prefix)) {
      const parts = object.key.slice(fences.length).split('/');
      if (parts.length !== 4) continue;
      const [t = '', p = ''] = parts;
      found.set(`${t}/${p}`, { table: unsegment(t), partition: unsegment(p) });
    }
    return [...found.values()];
  }

  private async readAll(keys: readonly string[]): Promise<StoredJournalEntry[]> {
    const limit = pLimit(READ_CONCURRENCY);
    const read = await Promise.all(keys.map((key) => limit(() => this.readKey(key))));
    return read.filter((r): r is StoredJournalEntry => r !== undefined);
  }

  private read(runId: string, groupId: string): Promise<StoredJournalEntry | undefined> {
    return this.readKey(storeJournalEntryKey(this.workRoot, runId, groupId));
  }

  /**
   * The entry and the ETag of the object it came from. HEAD then GET: if the object was replaced in
   * between, the body shows a higher revision than the HEAD's object had, and a transition conditioned on
   * that ETag then fails (or was refused already on the revision) — never a swap from the wrong revision.
   */
  private async readKey(key: string): Promise<StoredJournalEntry | undefined> {
    const object = await this.store.head(key);
    if (object === undefined) return undefined;
    let body: Uint8Array;
    try {
      body = await this.store.get(key);
    } catch (err) {
      if (err instanceof ObjectNotFoundError) return undefined;
      throw err;
    }
    const entry = JSON.parse(new TextDecoder().decode(body)) as GroupJournalEntry;
    if (this.table !== undefined) refuseForeignEntry(key, entry, this.table);
    return { entry, object };
  }
}

/** Throws unless `entry` is `table`'s and names only keys under its root (see StoreJournalOptions.table). */
function refuseForeignEntry(
  key: string,
  entry: GroupJournalEntry,
  table: { readonly name: string; readonly root: string },
): void {
  const root = normalizeRoot(table.root);
  const where = root === '' ? 'the bucket root' : `${root}/`;
  const refuse = (what: string) => {
    throw new ForeignJournalEntryError(
      `Journal entry ${key} ${what}, but this journal serves table ${table.name} (${where}): lake-compactor never journals another table's keys, so something else wrote it, and nothing is done on its word. Find who can write the work area (CloudTrail PutObject on that key), then delete the entry and its fence under journal/open/.`,
    );
  };
  if (entry.table !== table.name) refuse(`belongs to table "${String(entry.table)}"`);
  const keys = [...(entry.inputs ?? []).map((i) => i.key), ...(entry.outputs ?? []).map((o) => o.finalKey)];
  const stray = keys.find((k) => typeof k !== 'string' || relativeToRoot(k, root) === undefined);
  if (stray !== undefined) refuse(`names ${String(stray)}, outside the table`);
}

function fenceBody(entry: GroupJournalEntry): string {
  return JSON.stringify({
    runId: entry.runId,
    groupId: entry.groupId,
    table: entry.table,
    partition: entry.partition,
    createdAt: entry.createdAt,
  });
}
