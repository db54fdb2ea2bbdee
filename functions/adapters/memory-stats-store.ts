// An in-memory StatsStore with the DynamoDB adapter's semantics: every conditional write holds or is refused as
// there (each call reads and writes without yielding, so it is atomic), and the index listings keep its order.

import type { ForeignFormatMarker } from '../core/formats/foreign-tables.js';
import type { ChangeCursor } from '../core/formats/table-format.js';
import { planAccounting, sizeBucket } from '../core/profiler/accounting.js';
import { dueSlot } from '../core/profiler/decisions.js';
import { latestPerFile, SEQUENCER_WIDTH } from '../core/profiler/events.js';
import {
  type DecisionSummary,
  type FileRecord,
  type Lease,
  type PartitionRef,
  type PartitionSnapshot,
  partitionId,
  type ReleasePatch,
  type ResolvedEvent,
  type SettleRetry,
} from '../core/profiler/model.js';
import type { RunCapReached, RunLimits } from '../core/run-caps.js';
import { SIZE_BUCKETS } from '../core/stats.js';
import type {
  ApplyResult,
  BatchApplyResult,
  ListedFile,
  ReconcileResult,
  RunCountReport,
  StatsStore,
  TouchInput,
} from '../ports/stats-store.js';

/** File writes per atomic step, as the DynamoDB adapter's transactions (so versions move alike). */
const FILES_PER_STEP = 96;

/**
 * Where the partition sits in the table's index (DynamoDB: its gsi1 sort key). It is not derived from the
 * item's attributes: a release makes a partition due at once without giving it a `dueAt`.
 */
type IndexEntry =
  | { readonly kind: 'due'; readonly at: number }
  | { readonly kind: 'lease'; readonly at: number }
  | { readonly kind: 'attention'; readonly at: number }
  | { readonly kind: 'idle' };

/** A stored partition: the snapshot's fields, mutable. */
type PartitionItem = { -readonly [K in keyof PartitionSnapshot]: PartitionSnapshot[K] };

interface StoredPartition {
  item: PartitionItem;
  index: IndexEntry;
}

interface Counter {
  running: number;
  version: number;
}

/** Due times are indexed by their slot, as the DynamoDB adapter's keys hold them (the sweep's order). */
function dueEntry(dueAt: number | undefined): IndexEntry {
  const slot = dueSlot(dueAt);
  return slot === undefined ? { kind: 'idle' } : { kind: 'due', at: slot };
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * The StatsStore for tests of the trigger and the sweep, and for tools without AWS. Held to the DynamoDB
 * adapter by test/support/stats-store-contract.ts. What it does not mirror, because nothing decides on it:
 * TTLs (tombstones and decision items live as long as the store), and contention (`retries` is always 0).
 */
export class MemoryStatsStore implements StatsStore {
  private readonly partitions = new Map<string, StoredPartition>();
  private readonly files = new Map<string, FileRecord>();
  private readonly decisions = new Map<string, DecisionSummary[]>();
  private readonly markers = new Map<string, Map<string, ForeignFormatMarker>>();
  private readonly cursors = new Map<string, ChangeCursor>();
  /** Per table: partition → the slot of its counted lease. */
  private readonly slots = new Map<string, Map<string, { since: number; by: string }>>();
  private readonly tableCounters = new Map<string, Counter>();
  private total: Counter | undefined;

  // ------------------------------------------------------------------------------------------------------
  // Accounting
  // ------------------------------------------------------------------------------------------------------

  async applyEvents(events: readonly ResolvedEvent[]): Promise<ApplyResult> {
    const latest = [...latestPerFile(events).values()];
    const byPartition = new Map<string, ResolvedEvent[]>();
    for (const event of latest) {
      const id = partitionId(event.ref);
      const list = byPartition.get(id) ?? [];
      list.push(event);
      byPartition.set(id, list);
    }
    let applied = 0;
    let stale = events.length - latest.length;
    for (const group of byPartition.values()) {
      for (let i = 0; i < group.length; i += FILES_PER_STEP) {
        const plan = planAccounting(group.slice(i, i + FILES_PER_STEP), this.files);
        stale += plan.stale.length;
        applied += plan.writes.length;
        for (const write of plan.writes) this.files.set(write.next.fileId, { ...write.next });
        for (const { ref, delta } of plan.deltas.values()) {
          const item = this.upsert(ref).item;
          item.fileCount += delta.fileCount;
          item.totalBytes += delta.totalBytes;
          item.smallCount += delta.smallCount;
          item.smallBytes += delta.smallBytes;
          if (delta.dueCount !== 0) item.dueCount = (item.dueCount ?? 0) + delta.dueCount;
          item.histogram = item.histogram.map((n, b) => n + (delta.histogram[b] ?? 0));
          item.version += 1;
        }
      }
    }
    return { applied, stale, retries: 0 };
  }

  async applyBatch(
    ref: PartitionRef,
    events: readonly ResolvedEvent[],
    touch: TouchInput,
  ): Promise<BatchApplyResult> {
    const applied = await this.applyEvents(events);
    return { ...applied, snapshot: await this.touch(ref, touch) };
  }

  async touch(ref: PartitionRef, input: TouchInput): Promise<PartitionSnapshot> {
    const existing = this.partitions.get(partitionId(ref));
    // Only forward: a later batch that was here first already holds the fresh state.
    const lastWriteAt = existing?.item.lastWriteAt;
    if (existing !== undefined && lastWriteAt !== undefined && lastWriteAt >= input.lastWriteAt) {
      return snapshotOf(existing.item);
    }
    const item = this.upsert(ref).item;
    item.lastWriteAt = input.lastWriteAt;
    if (item.firstWriteAt === undefined) item.firstWriteAt = input.firstWriteAt;
    if (input.partitionDate !== undefined) item.partitionDate = input.partitionDate;
    item.version += 1;
    return snapshotOf(item);
  }

  async get(ref: PartitionRef): Promise<PartitionSnapshot | undefined> {
    const stored = this.partitions.get(partitionId(ref));
    return stored === undefined ? undefined : snapshotOf(stored.item);
  }

  async getFiles(
    fileIds: readonly string[],
    _within?: readonly PartitionRef[],
  ): Promise<Map<string, FileRecord>> {
    const found = new Map<string, FileRecord>();
    for (const id of fileIds) {
      const record = this.files.get(id);
      if (record !== undefined) found.set(id, { ...record });
    }
    return found;
  }

  // ------------------------------------------------------------------------------------------------------
  // Trigger state
  // ------------------------------------------------------------------------------------------------------

  async recordDecision(
    snapshot: PartitionSnapshot,
    decision: DecisionSummary,
    options: { readonly dueAt?: number; readonly storeItem: boolean },
  ): Promise<boolean> {
    const stored = this.partitions.get(partitionId(snapshot));
    if (stored === undefined || stored.item.version !== snapshot.version || stored.item.state !== 'idle') {
      return false;
    }
    stored.item.lastDecision = clone(decision);
    stored.index = dueEntry(options.dueAt);
    if (options.dueAt === undefined) delete stored.item.dueAt;
    else stored.item.dueAt = options.dueAt;
    if (options.storeItem) this.putDecision(snapshot, decision);
    return true;
  }

  async schedule(
    snapshot: PartitionSnapshot,
    lease: Lease,
    decision: DecisionSummary,
    limits?: RunLimits,
  ): Promise<PartitionSnapshot | RunCapReached | undefined> {
    const stored = this.partitions.get(partitionId(snapshot));
    const item = stored?.item;
    if (
      stored === undefined ||
      item === undefined ||
      item.state !== 'idle' ||
      item.version !== snapshot.version ||
      item.generation !== snapshot.generation
    ) {
      return undefined;
    }
    const slots = this.slotsOf(snapshot.table);
    // A slot left by a lease that was never counted out already counts: adopted, the caps still hold.
    // Otherwise the run is counted in, under both caps (the table's first, as the adapter reports it).
    if (limits !== undefined) {
      const table = this.tableCounters.get(snapshot.table);
      if (table !== undefined && table.running >= limits.table) {
        return { kind: 'cap-reached', scope: 'table', cap: limits.table, running: table.running };
      }
      if (this.total !== undefined && this.total.running >= limits.total) {
        return { kind: 'cap-reached', scope: 'deployment', cap: limits.total, running: this.total.running };
      }
    }
    if (!slots.has(snapshot.partition)) this.count(snapshot.table, 1);
    slots.set(snapshot.partition, { since: lease.acquiredAt, by: lease.runId });
    item.state = 'scheduled';
    item.lease = clone(lease);
    item.lastDecision = clone(decision);
    item.generation += 1;
    delete item.dueAt;
    stored.index = { kind: 'lease', at: lease.acquiredAt };
    this.putDecision(snapshot, decision);
    // As the adapter answers: the caller's snapshot with this update applied.
    const { dueAt: _dueAt, ...rest } = snapshot;
    return {
      ...rest,
      state: 'scheduled',
      lease,
      lastDecision: decision,
      generation: snapshot.generation + 1,
    };
  }

  async release(ref: PartitionRef, generation: number, patch: ReleasePatch): Promise<boolean> {
    const stored = this.partitions.get(partitionId(ref));
    const item = stored?.item;
    if (
      stored === undefined ||
      item === undefined ||
      item.generation !== generation ||
      (item.state !== 'scheduled' && item.state !== 'compacting')
    ) {
      return false;
    }
    const attention = patch.attention;
    if (attention === undefined) {
      item.state = 'idle';
      delete item.lease;
      delete item.attention;
      delete item.settleRetry;
      // Due now: whoever released it re-decides at once; the sweep picks it up otherwise.
      stored.index = dueEntry(0);
    } else {
      // needs-attention keeps the lease (who could not settle it), says why and keeps the sweep's retry schedule.
      item.state = 'needs-attention';
      item.attention = clone(attention);
      stored.index = { kind: 'attention', at: attention.since };
    }
    if (patch.lastCompactedAt !== undefined) item.lastCompactedAt = patch.lastCompactedAt;
    if (patch.awaitedVersion === undefined) delete item.awaitedVersion;
    else item.awaitedVersion = patch.awaitedVersion;
    item.version += 1;
    // A lease that never counted (taken before the caps existed) has no slot: the counters stay.
    const slots = this.slotsOf(ref.table);
    if (slots.delete(ref.partition)) this.count(ref.table, -1);
    return true;
  }

  async claimSettleRetry(snapshot: PartitionSnapshot, retry: SettleRetry): Promise<boolean> {
    const item = this.partitions.get(partitionId(snapshot))?.item;
    if (
      item === undefined ||
      item.state !== 'needs-attention' ||
      item.generation !== snapshot.generation ||
      item.settleRetry?.attempts !== snapshot.settleRetry?.attempts
    ) {
      return false;
    }
    item.settleRetry = clone(retry);
    return true;
  }

  async listDue(table: string, now: number): Promise<PartitionRef[]> {
    const limit = Math.max(0, Math.floor(now));
    return this.indexed(table)
      .filter(({ index }) => index.kind === 'due' && index.at <= limit)
      .sort((a, b) => indexAt(a.index) - indexAt(b.index) || cmp(a.item.partition, b.item.partition))
      .map(({ item }) => ({ table: item.table, partition: item.partition }));
  }

  async listLeased(table: string): Promise<PartitionSnapshot[]> {
    return this.snapshotsWhere(table, (s) => s.index.kind === 'lease' && s.item.state !== 'idle');
  }

  async listNeedingAttention(table: string): Promise<PartitionSnapshot[]> {
    return this.snapshotsWhere(
      table,
      (s) => s.index.kind === 'attention' && s.item.state === 'needs-attention',
    );
  }

  async listPartitions(table: string): Promise<PartitionSnapshot[]> {
    return this.snapshotsWhere(table, () => true);
  }

  async listDecisions(ref: PartitionRef, limit: number): Promise<DecisionSummary[]> {
    const items = this.decisions.get(partitionId(ref)) ?? [];
    // Newest first; of two at the same time, the later stored (the adapter orders those by a random id).
    return items
      .map((decision, order) => ({ decision, order }))
      .sort((a, b) => b.decision.at - a.decision.at || b.order - a.order)
      .slice(0, limit)
      .map(({ decision }) => clone(decision));
  }

  // ------------------------------------------------------------------------------------------------------
  // Reconcile
  // ------------------------------------------------------------------------------------------------------

  async reconcile(
    ref: PartitionRef,
    files: readonly ListedFile[],
    expectedVersion: number | undefined,
    facts: { readonly partitionDate?: number },
  ): Promise<ReconcileResult> {
    let filesFixed = 0;
    for (const file of files) {
      const old = this.files.get(file.fileId);
      if (
        old?.present &&
        old.size === file.size &&
        old.small === file.small &&
        (old.due === true) === (file.due === true) &&
        old.partition === ref.partition
      )
        continue;
      // Keep the stored sequencer: any real event still in flight is newer and wins over this repair.
      this.files.set(file.fileId, {
        fileId: file.fileId,
        present: true,
        size: file.size,
        small: file.small,
        ...(file.due === true ? { due: true } : {}),
        bucket: sizeBucket(file.size),
        sequencer: old?.sequencer ?? '0'.repeat(SEQUENCER_WIDTH),
        table: ref.table,
        partition: ref.partition,
        ...(file.etag === undefined ? {} : { etag: file.etag }),
        eventTime: file.eventTime,
      });
      filesFixed += 1;
    }
    const existing = this.partitions.get(partitionId(ref));
    const moved =
      expectedVersion === undefined ? existing !== undefined : existing?.item.version !== expectedVersion;
    if (moved) return { kind: 'busy' };
    const item = this.upsert(ref).item;
    item.fileCount = files.length;
    item.totalBytes = files.reduce((n, f) => n + f.size, 0);
    item.smallCount = files.filter((f) => f.small).length;
    item.smallBytes = files.filter((f) => f.small).reduce((n, f) => n + f.size, 0);
    // As the DynamoDB adapter: the attribute only while some file is due.
    const due = files.filter((f) => f.due === true).length;
    if (due > 0) item.dueCount = due;
    else delete item.dueCount;
    const histogram = SIZE_BUCKETS.map(() => 0);
    for (const file of files) {
      const b = sizeBucket(file.size);
      histogram[b] = (histogram[b] ?? 0) + 1;
    }
    item.histogram = histogram;
    if (facts.partitionDate !== undefined) item.partitionDate = facts.partitionDate;
    item.version += 1;
    return { kind: 'corrected', filesFixed };
  }

  // ------------------------------------------------------------------------------------------------------
  // Foreign formats
  // ------------------------------------------------------------------------------------------------------

  async markForeignFormat(table: string, marker: ForeignFormatMarker): Promise<boolean> {
    const markers = this.markers.get(table) ?? new Map<string, ForeignFormatMarker>();
    this.markers.set(table, markers);
    // The first evidence stays: a redelivered or later commit of the same table changes nothing.
    if (markers.has(marker.root)) return false;
    markers.set(marker.root, { ...marker });
    return true;
  }

  async foreignFormats(table: string): Promise<ForeignFormatMarker[]> {
    return [...(this.markers.get(table)?.values() ?? [])]
      .sort((a, b) => cmp(a.root, b.root))
      .map((m) => ({ ...m }));
  }

  // ------------------------------------------------------------------------------------------------------
  // Change cursors
  // ------------------------------------------------------------------------------------------------------

  async changeCursor(table: string): Promise<ChangeCursor | undefined> {
    const cursor = this.cursors.get(table);
    return cursor === undefined ? undefined : { ...cursor };
  }

  async advanceChangeCursor(table: string, cursor: ChangeCursor): Promise<boolean> {
    const stored = this.cursors.get(table);
    if (stored !== undefined && stored.version >= cursor.version) return false;
    this.cursors.set(table, { version: cursor.version, memo: cursor.memo });
    return true;
  }

  // ------------------------------------------------------------------------------------------------------
  // Run counts
  // ------------------------------------------------------------------------------------------------------

  async reconcileRunCount(table: string): Promise<RunCountReport> {
    const countedIn: string[] = [];
    const countedOut: string[] = [];
    const slots = this.slotsOf(table);
    const leased = await this.listLeased(table);
    const leasedNow = new Set(leased.map((s) => s.partition));
    // A lease without a slot (taken before the caps existed): counted in while it is still held.
    for (const snapshot of leased) {
      if (slots.has(snapshot.partition)) continue;
      slots.set(snapshot.partition, {
        since: snapshot.lease?.acquiredAt ?? 0,
        by: snapshot.lease?.runId ?? 'unknown',
      });
      this.count(table, 1);
      countedIn.push(snapshot.partition);
    }
    // A slot whose partition no longer holds a lease: counted out.
    for (const partition of [...slots.keys()]) {
      if (leasedNow.has(partition)) continue;
      slots.delete(partition);
      this.count(table, -1);
      countedOut.push(partition);
    }
    const counter = this.tableCounters.get(table);
    const from = counter?.running ?? 0;
    if (from === slots.size) return { running: from, countedIn, countedOut };
    this.tableCounters.set(table, { running: slots.size, version: (counter?.version ?? 0) + 1 });
    return { running: slots.size, countedIn, countedOut, corrected: { from, to: slots.size } };
  }

  async reconcileTotalRunCount(): Promise<RunCountReport> {
    const sum = [...this.tableCounters.values()].reduce((n, c) => n + c.running, 0);
    const from = this.total?.running ?? 0;
    if (from === sum) return { running: from, countedIn: [], countedOut: [] };
    this.total = { running: sum, version: (this.total?.version ?? 0) + 1 };
    return { running: sum, countedIn: [], countedOut: [], corrected: { from, to: sum } };
  }

  // ------------------------------------------------------------------------------------------------------
  // Internals
  // ------------------------------------------------------------------------------------------------------

  /** The partition, created as the adapter's first write of one creates it (idle, generation 0, no counts). */
  private upsert(ref: PartitionRef): StoredPartition {
    const id = partitionId(ref);
    let stored = this.partitions.get(id);
    if (stored === undefined) {
      stored = {
        item: {
          table: ref.table,
          partition: ref.partition,
          fileCount: 0,
          totalBytes: 0,
          smallCount: 0,
          smallBytes: 0,
          histogram: SIZE_BUCKETS.map(() => 0),
          state: 'idle',
          generation: 0,
          version: 0,
        },
        index: { kind: 'idle' },
      };
      this.partitions.set(id, stored);
    }
    return stored;
  }

  private indexed(table: string): StoredPartition[] {
    return [...this.partitions.values()].filter((s) => s.item.table === table);
  }

  private snapshotsWhere(table: string, keep: (stored: StoredPartition) => boolean): PartitionSnapshot[] {
    return this.indexed(table)
      .filter(keep)
      .map((s) => snapshotOf(s.item))
      .sort((a, b) => cmp(a.partition, b.partition));
  }

  private putDecision(ref: PartitionRef, decision: DecisionSummary): void {
    const id = partitionId(ref);
    const list = this.decisions.get(id) ?? [];
    list.push(clone(decision));
    this.decisions.set(id, list);
  }

  private slotsOf(table: string): Map<string, { since: number; by: string }> {
    let slots = this.slots.get(table);
    if (slots === undefined) {
      slots = new Map();
      this.slots.set(table, slots);
    }
    return slots;
  }

  /** Moves the table's and the deployment's counters together, as the adapter's transactions do. */
  private count(table: string, delta: 1 | -1): void {
    const counter = this.tableCounters.get(table) ?? { running: 0, version: 0 };
    this.tableCounters.set(table, { running: counter.running + delta, version: counter.version + 1 });
    const total = this.total ?? { running: 0, version: 0 };
    this.total = { running: total.running + delta, version: total.version + 1 };
  }
}

function indexAt(index: IndexEntry): number {
  return index.kind === 'idle' ? 0 : index.at;
}

function clone<T>(value: T): T {
  return structuredClone(value);
}

/** A copy of the stored partition without the attributes it does not have (as the adapter reads items). */
function snapshotOf(item: PartitionItem): PartitionSnapshot {
  const copy = clone(item) as Record<string, unknown>;
  for (const key of Object.keys(copy)) if (copy[key] === undefined) delete copy[key];
  return copy as unknown as PartitionSnapshot;
}
