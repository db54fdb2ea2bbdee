// The scheduled catch-up over the ports: due partitions are re-decided oldest first, leases of ended runs are
// settled and released (or restarted), stuck partitions' settles retried, and reconcile fixes drifted counters.
import type { ObjectStore } from '../../ports/object-store.js';
import { InvalidInputError } from '../errors.js';
import { executionEnded } from '../executions.js';
import { formatForTable } from '../formats/index.js';
import type { SnapshotPartition, TableFormat, TableSnapshot } from '../formats/table-format.js';
import type { PlanInputFile } from '../planning.js';
import { type Decision, isSmallUnderPolicy, partitionDateFromValues } from '../policy.js';
import type { TableConfig } from '../table-config.js';
import type { PartitionRef, SettleOutcome, TriggerOutcome } from './model.js';
import { retrySettles, type SettleRetryOutcome } from './settle-retry.js';
import { type CapGate, evaluatePartition, policyOf, startScheduled, type TriggerDeps } from './trigger.js';

export interface SweepOptions {
  /** A lease taken (or renewed) more recently than this is not checked (its start may be in flight). @default 5 minutes */
  readonly leaseGraceMs?: number;
}

export interface SweepReport {
  readonly table: string;
  readonly due: readonly TriggerOutcome[];
  /** Leases whose execution had ended (or never started) and were released or restarted. */
  readonly leases: readonly { readonly ref: PartitionRef; readonly action: string }[];
  /** Needs-attention partitions whose settle retry was due (settle-retry.ts): what this sweep did about each. */
  readonly settleRetries: readonly SettleRetryOutcome[];
  /**
   * Partitions of the table that need attention after this sweep: needs-attention, or held by a settle run that
   * took them from needs-attention and has not ended (they are not settled until it has).
   */
  readonly needingAttention: number;
}

/**
 * How long the sweep lets a lease be before it asks after its holder: an execution still running keeps it; one that
 * ended, or no execution at all, loses it. A holder without an execution renews well within it (lease-keeper.ts).
 */
export const LEASE_GRACE_MS = 5 * 60_000;

/**
 * The scheduled catch-up: evaluates every partition whose due time has passed (their quiet window or
 * cooldown is over, or a start is pending) and checks every lease taken (or last renewed) longer ago than the
 * grace period — an execution that never started is started under its name; one that ended without releasing its
 * lease is released (a success also sets lastCompactedAt) and the partition is evaluated again. Due partitions are
 * started oldest first until a run cap is reached; the rest are recorded as waiting for the next sweep.
 * Last, a settle run is started for each needs-attention partition whose settle retry is due.
 */
export async function sweepTable(
  deps: TriggerDeps,
  table: string,
  now: number,
  options: SweepOptions = {},
): Promise<SweepReport> {
  const log = deps.log ?? (() => undefined);
  const due: TriggerOutcome[] = [];
  // Oldest due first (the index order), so partitions a cap kept waiting are started first once slots free.
  const gate: CapGate = {};
  for (const ref of await deps.stats.listDue(table, now)) {
    // The index is eventually consistent: decide on the item itself.
    const snapshot = await deps.stats.get(ref);
    if (snapshot !== undefined) due.push(await evaluatePartition(deps, snapshot, now, gate));
  }
  const leases: { ref: PartitionRef; action: string }[] = [];
  const grace = options.leaseGraceMs ?? LEASE_GRACE_MS;
  const starter = deps.starter;
  const leasedPartitions = await deps.stats.listLeased(table);
  const releasedNow = new Set<string>();
  for (const leased of leasedPartitions) {
    const lease = leased.lease;
    // A holder that renews (an operator's settle or undo: no execution to describe) is left alone while it does.
    const heldSince = Math.max(lease?.acquiredAt ?? 0, lease?.renewedAt ?? 0);
    if (starter === undefined || lease === undefined || now - heldSince < grace) continue;
    const ref = { table: leased.table, partition: leased.partition };
    const arn = lease.executionArn ?? starter.executionArn(lease.executionName);
    const info = await starter.describe(arn);
    if (info !== undefined && !executionEnded(info, now)) continue;
    // A scheduled run whose start was lost is started again — unless triggers are in dry-run (then the
    // lease is released below, and the partition waits, recorded as due, like every other).
    if (info === undefined && leased.state === 'scheduled' && deps.dryRun !== true) {
      const decision: Decision = { compact: true, reasons: leased.lastDecision?.reasons ?? [] };
      const outcome = await startScheduled(deps, starter, ref, lease, leased.generation, decision);
      leases.push({ ref, action: `restart ${outcome.action}` });
      continue;
    }
    // Fence rule: settle what the dead run left before letting the partition go; a group that cannot be
    // settled makes it needs-attention instead of idle. A settle that fails outright keeps the lease for
    // the next sweep.
    let settled: SettleOutcome = { settled: 0, unsettled: [], completed: false };
    if (deps.settle !== undefined) {
      try {
        settled = await deps.settle(ref, lease.runId);
      } catch (err) {
        log('error', 'could not settle the partition of an ended execution; the next sweep retries', {
          ...ref,
          runId: lease.runId,
          error: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
        });
        leases.push({ ref, action: 'kept (settle failed)' });
        continue;
      }
    }
    const attention =
      settled.unsettled.length === 0
        ? undefined
        : {
            reason: `${settled.unsettled.length} group(s) left by run ${lease.runId} could not be settled: ${settled.unsettled.map((u) => u.replace(/\.+$/, '')).join('; ')}. Listing readers may see some rows twice until they are.`,
            runId: lease.runId,
            since: now,
          };
    const released = await deps.stats.release(ref, leased.generation, {
      ...(info?.status === 'SUCCEEDED' || settled.completed
        ? { lastCompactedAt: info?.stoppedAt ?? now }
        : {}),
      ...(attention === undefined ? {} : { attention }),
    });
    log('warn', 'released a lease whose execution is no longer running', {
      ...ref,
      generation: leased.generation,
      status: info?.status ?? 'NOT_FOUND',
      released,
      settledGroups: settled.settled,
      ...(attention === undefined ? {} : { needsAttention: attention.reason }),
    });
    leases.push({
      ref,
      action: `${attention === undefined ? 'released' : 'needs-attention'} (${info?.status ?? 'NOT_FOUND'}${settled.settled > 0 ? `, ${settled.settled} group(s) settled` : ''})`,
    });
    if (released) releasedNow.add(leased.partition);
    const fresh = released ? await deps.stats.get(ref) : undefined;
    if (fresh !== undefined) due.push(await evaluatePartition(deps, fresh, now));
  }
  // Fence rule, without an operator: a partition left needs-attention by a group that could not be settled gets a
  // settle run when its retry is due (settle-retry.ts), until the cause is gone and the run ends it idle.
  const needing = await deps.stats.listNeedingAttention(table);
  const settleRetries = await retrySettles(deps, needing, now);
  const settling = leasedPartitions.filter(
    (s) =>
      s.attention !== undefined &&
      !releasedNow.has(s.partition) &&
      !needing.some((n) => n.partition === s.partition),
  );
  return { table, due, leases, settleRetries, needingAttention: needing.length + settling.length };
}

export interface ReconcileOptions {
  /** Partitions written to more recently than this are skipped (events may be in flight). @default 1 hour */
  readonly settleMs?: number;
  /**
   * The table's format bound to its settings (`formatForTable` with the entry point's services): a table
   * named in Glue or a REST catalog is read at the metadata that catalog points at.
   * @default the format bound with no services — a table whose settings need one (a Glue or REST catalog) is
   *   refused rather than read through the path catalog, whose newest metadata file may be one that never became
   *   current (a writer that lost the race).
   */
  readonly format?: TableFormat;
}

export interface ReconcileReport {
  readonly table: string;
  readonly partitions: readonly {
    readonly partition: string;
    readonly result: 'ok' | 'corrected' | 'busy' | 'recent';
    readonly stored?: { readonly fileCount: number; readonly totalBytes: number };
    readonly listed: { readonly fileCount: number; readonly totalBytes: number };
  }[];
}

/**
 * Corrects drift from lost events: lists the table (the listing is the truth), and for every partition
 * whose stored counters differ and that has been quiet for `settleMs`, repairs the listed files' records
 * and overwrites the counters — conditioned on the partition not changing meanwhile. A partition the
 * listing no longer has is zeroed the same way. A foreign table's log or metadata in the listing is recorded
 * as a foreign-format marker first, as its commit events would have been.
 *
 * A table whose log says what changed is counted as the profiler counts it when it re-derives
 * the table (`changes.readState`, through the table's catalog), not by the plan's snapshot: the two may differ
 * (a file whose deletes cannot be applied is counted but not planned), and counters corrected to another
 * set than the profiler keeps would be corrected back and forth.
 */
export async function reconcileTable(
  deps: TriggerDeps,
  store: ObjectStore,
  table: TableConfig,
  now: number,
  options: ReconcileOptions = {},
): Promise<ReconcileReport> {
  const policy = policyOf(deps, table.name);
  const bucket = table.bucket;
  if (bucket === undefined) {
    throw new InvalidInputError(`Table "${table.name}" names no bucket; reconcile needs the bucket to list`);
  }
  const settle = options.settleMs ?? 60 * 60_000;
  const rootDir = table.prefix === '' ? '' : `${table.prefix}/`;
  const format = options.format ?? formatForTable([table], table.name, {});
  const inventory = await countedFiles(format, store, table.prefix, rootDir, now);
  // A foreign table the listing met (one that predates the deployment sends no commit event):
  // recorded before any partition is re-decided below, so none of its partitions is scheduled.
  for (const found of inventory.foreignTables) {
    await deps.stats.markForeignFormat(table.name, {
      format: found.format,
      root: found.root.startsWith(rootDir) ? found.root.slice(rootDir.length) : '',
      evidenceKey: found.evidenceKey,
      seenAt: now,
    });
  }
  const stored = new Map((await deps.stats.listPartitions(table.name)).map((s) => [s.partition, s]));
  const listed = new Map(inventory.partitions.map((p) => [p.partition, p]));
  const names = [...new Set([...listed.keys(), ...stored.keys()])].sort();
  const partitions: ReconcileReport['partitions'][number][] = [];
  for (const partition of names) {
    const files = (listed.get(partition)?.files ?? []).map((f) => ({
      fileId: `${bucket}/${f.key}`,
      size: f.size,
      // As the profiler counts it (table-log.ts): a file its format's table service has due is a candidate.
      small: f.serviceDue === true || isSmallUnderPolicy(f.size, policy),
      ...(f.serviceDue === true ? { due: true } : {}),
      ...(f.etag === '' ? {} : { etag: f.etag }),
      eventTime: now,
    }));
    const snapshot = stored.get(partition);
    const listedTotals = { fileCount: files.length, totalBytes: files.reduce((n, f) => n + f.size, 0) };
    const smallCount = files.filter((f) => f.small).length;
    const storedTotals =
      snapshot === undefined ? undefined : { fileCount: snapshot.fileCount, totalBytes: snapshot.totalBytes };
    const entry = {
      partition,
      listed: listedTotals,
      ...(storedTotals === undefined ? {} : { stored: storedTotals }),
    };
    const agrees =
      snapshot !== undefined &&
      snapshot.fileCount === listedTotals.fileCount &&
      snapshot.totalBytes === listedTotals.totalBytes &&
      snapshot.smallCount === smallCount &&
      (snapshot.dueCount ?? 0) === files.filter((f) => f.due === true).length;
    if (agrees) {
      partitions.push({ ...entry, result: 'ok' });
      continue;
    }
    if (snapshot?.lastWriteAt !== undefined && now - snapshot.lastWriteAt < settle) {
      partitions.push({ ...entry, result: 'recent' });
      continue;
    }
    const values = listed.get(partition)?.values ?? [];
    const partitionDate =
      table.dateFormat === undefined
        ? undefined
        : partitionDateFromValues(values, {
            format: table.dateFormat,
            ...(table.dateColumn === undefined ? {} : { column: table.dateColumn }),
          });
    const result = await deps.stats.reconcile({ table: table.name, partition }, files, snapshot?.version, {
      ...(partitionDate === undefined ? {} : { partitionDate }),
    });
    (deps.log ?? (() => undefined))(
      result.kind === 'corrected' ? 'warn' : 'info',
      `reconcile: ${result.kind}`,
      {
        table: table.name,
        partition,
        stored: storedTotals,
        listed: listedTotals,
      },
    );
    partitions.push({ ...entry, result: result.kind === 'unchanged' ? 'ok' : result.kind });
    if (result.kind === 'corrected') {
      // Decide on the corrected counts at once, so the partition is due (or not) without waiting for an event.
      const corrected = await deps.stats.get({ table: table.name, partition });
      if (corrected !== undefined) await evaluatePartition(deps, corrected, now);
    }
  }
  return { table: table.name, partitions };
}

/** What reconcile counts of one partition: its files, each as the profiler counts it. */
interface ReconciledPartition {
  readonly partition: string;
  readonly values: SnapshotPartition['values'];
  readonly files: readonly (Pick<PlanInputFile, 'key' | 'size' | 'etag'> & {
    readonly serviceDue?: boolean;
  })[];
}

/** What reconcile counts: the profiler's whole-state read for a log-based table, else the listing snapshot. */
async function countedFiles(
  format: TableFormat,
  store: ObjectStore,
  tableRoot: string,
  rootDir: string,
  now: number,
): Promise<{
  readonly partitions: readonly ReconciledPartition[];
  readonly foreignTables: TableSnapshot['foreignTables'];
}> {
  if (format.changes.kind === 'object-events') return format.snapshot(store, rootDir, { now });
  const state = await format.changes.readState(store, tableRoot);
  return {
    // A log-based table's files are named by its log, never met as another format's metadata.
    foreignTables: [],
    partitions: state.partitions.map((p) => ({
      partition: p.partition,
      values: p.values,
      files: p.files.map((f) => ({
        key: f.key,
        size: f.size,
        etag: '',
        ...(f.serviceDue === true ? { serviceDue: true } : {}),
      })),
    })),
  };
}
