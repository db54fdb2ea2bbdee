// What `lake-compactor settle` does, loaded by settle.ts only when the command runs (help, --version and usage errors
// never load it, nor the AWS SDK and Parquet engine it reaches).
// `lake-compactor settle`: brings every group an interrupted `compact` left open under a location to its
// end through the location's own journal — forward once publishing started, back before — and says so per group.
//
// `compact` runs the same settle before it plans, so `settle` is for when you want the table consistent
// now without compacting more (or to see what a kill left). Exit 0 when every open group settled, 1 when
// one could not be (it stays fenced; the reason is printed), 2 on a usage error.

import { randomUUID } from 'node:crypto';
import { LocalObjectStore } from '../adapters/local-object-store.js';
import { type OpenedStore, openStore } from '../adapters/open-store.js';
import { StoreJournal } from '../adapters/store-journal.js';
import { UnsettledPartitionError, UsageError } from '../core/errors.js';
import { DEFAULT_TABLE_FORMAT, type TableFormatName } from '../core/formats/index.js';
import type { TableFormat } from '../core/formats/table-format.js';
import { buildRunContext } from '../core/run-input.js';
import { failureReason, type StepCommitDeps } from '../core/workflow/commit.js';
import { finalizeRun } from '../core/workflow/finalize.js';
import { type SettleReport, settlePartition } from '../core/workflow/settle.js';
import type { Clock } from '../ports/clock.js';
import type { GroupState, JournalPartition } from '../ports/journal.js';
import type { ObjectStore } from '../ports/object-store.js';
import { whileRenewing } from '../shared/lease-keeper.js';
import { defaultParquetEngine } from '../shared/parquet-engine.js';
import { tableNameOf } from './args.js';
import { deploymentPorts } from './deployment-ports.js';
import { type FormatCliOptions, formatSettingsOf } from './format-options.js';
import { commandFormat } from './format-services.js';

export interface SettleIo {
  readonly out: (text: string) => void;
  readonly clock: Clock;
  readonly env: Readonly<Record<string, string | undefined>>;
}

/**
 * A table's settle reads and commits through the settings its compact used (each format's options, e.g. a
 * catalog's `--catalog glue|rest`: a group's snapshot is found, or not, in the metadata the catalog points
 * at, and a roll-forward swaps that pointer; the path catalog would judge a Glue table by the newest file in
 * metadata/, which may be a writer's that lost the race, and roll a group forward that Glue never committed).
 */
export interface SettleCliOptions extends FormatCliOptions {
  /** Only this partition (path relative to the table root). */
  readonly partition?: string;
  /** The table's name as `compact` recorded it. @default the URI's last path segment */
  readonly table?: string;
  /**
   * A deployment's DynamoDB state table: settle the deployment's partition (its workflow journal and lease)
   * instead of the location's own journal, as a console settle run does — also from needs-attention.
   */
  readonly stateTable?: string;
  /** The work root the journal lives in (a deployment's, beside one). @default `_lake-compactor/` */
  readonly workRoot?: string;
  /** The location's table format: its groups settle through that format's commit. @default 'parquet' */
  readonly format?: TableFormatName;
}

/** What {@link settleOpenGroups} tells as it goes (see settle.ts's SettleProgress). */
export interface SettleProgressListener {
  /** The partitions with open groups, in the order they are settled. */
  listed(partitions: readonly string[]): void;
  /** A partition's groups are being settled. */
  started(partition: string): void;
  /** A partition's groups are settled (or reported unsettled). */
  settled(result: SettledPartition): void;
  /** A deployed partition's lease is held by this settle (`--state-table`), as `runId` in `stateTable`. */
  leased?(lease: { readonly runId: string; readonly stateTable: string }): void;
}

/** What one partition's settle did, as printed. */
export interface SettledPartition {
  readonly partition: string;
  readonly report: SettleReport;
}

const BEFORE_PUBLISH: readonly GroupState[] = ['planned', 'staged', 'verified'];

/**
 * Settles the open groups of `table` in `store` — of every partition that has a fence, or only `partition`
 * — printing one line per group. Shared by `settle` and by `compact` (which settles before it plans).
 * A group whose requests keep failing is reported, not thrown: the caller decides.
 */
export async function settleOpenGroups(
  deps: StepCommitDeps & { readonly journal: StoreJournal },
  table: string,
  options: {
    readonly partition?: string;
    readonly settledBy: string;
    /** Told what is settled as it goes (`settle` prints it on Ctrl-C). */
    readonly progress?: SettleProgressListener;
  },
  out: (text: string) => void,
): Promise<SettledPartition[]> {
  const fenced = await deps.journal.openPartitions(table);
  const partitions: JournalPartition[] = fenced
    .filter((p) => options.partition === undefined || p.partition === options.partition)
    .sort((a, b) => (a.partition < b.partition ? -1 : a.partition > b.partition ? 1 : 0));
  options.progress?.listed(partitions.map((p) => p.partition));
  const results: SettledPartition[] = [];
  for (const ref of partitions) {
    options.progress?.started(ref.partition);
    const report = await settlePartition(deps, ref, {
      reason: failureReason({
        Error: 'RunInterrupted',
        Cause: `its run ended before this group did; settled by ${options.settledBy}`,
      }),
    });
    const label = ref.partition || '(root)';
    for (const g of report.settled) {
      const what =
        g.to === 'done'
          ? 'rolled forward'
          : BEFORE_PUBLISH.includes(g.from)
            ? 'rolled back'
            : 'undone (an input changed while it published)';
      out(`${label} ${g.groupId} of run ${g.runId}: ${what} (${g.from} → ${g.to})`);
    }
    for (const u of report.unsettled) {
      out(`${label} ${u.groupId} of run ${u.runId}: could not settle (${u.state}): ${u.error}`);
    }
    results.push({ partition: ref.partition, report });
    options.progress?.settled({ partition: ref.partition, report });
  }
  return results;
}

/**
 * Removes temp files that killed processes left in a local folder's work area (nothing to do on S3:
 * an interrupted upload leaves no object). Prints how many it removed.
 */
export async function removeStaleTempFiles(
  store: ObjectStore,
  now: number,
  out: (text: string) => void,
): Promise<number> {
  if (!(store instanceof LocalObjectStore)) return 0;
  const removed = await store.removeStaleTempFiles(now);
  if (removed.length > 0) {
    out(`removed ${removed.length} temp file(s) of interrupted writes (${removed[0]?.reason ?? ''}…)`);
  }
  return removed.length;
}

/**
 * Runs `settle` on `uri`.
 * @throws UnsettledPartitionError (exit 1) when a group could not be settled, after printing every group.
 */
export async function runSettle(
  uri: string,
  options: SettleCliOptions,
  io: SettleIo,
  progress?: SettleProgressListener,
): Promise<SettledPartition[]> {
  const opened = openStore(uri, { env: io.env, workRoot: options.workRoot });
  const table = options.table ?? tableNameOf(uri);
  const partition = options.partition?.replace(/^\/+|\/+$/g, '');
  const formatName = options.format ?? DEFAULT_TABLE_FORMAT;
  const format = commandFormat(opened, table, formatName, formatSettingsOf(uri, formatName, options), io);
  if (options.stateTable !== undefined) {
    return [
      await settleDeployedPartition(
        uri,
        opened,
        { name: table, formatName, format },
        partition,
        options.stateTable,
        io,
        progress,
      ),
    ];
  }
  const journal = new StoreJournal(opened.store, {
    workRoot: opened.workRoot,
    table: { name: table, root: opened.prefix },
  });
  io.out(
    `settle ${uri}: table ${table}${partition === undefined ? '' : `, partition ${partition || '(root)'}`}`,
  );
  await removeStaleTempFiles(opened.store, io.clock.now(), io.out);
  const results = await settleOpenGroups(
    { store: opened.store, journal, clock: io.clock, format, engine: defaultParquetEngine },
    table,
    {
      ...(partition === undefined ? {} : { partition }),
      settledBy: 'lake-compactor settle',
      ...(progress === undefined ? {} : { progress }),
    },
    io.out,
  );
  const settled = results.reduce((n, r) => n + r.report.settled.length, 0);
  const unsettled = results.flatMap((r) => r.report.unsettled);
  io.out(
    results.length === 0
      ? 'nothing to settle: no group is open'
      : `${settled} group(s) settled, ${unsettled.length} could not be, in ${results.length} partition(s)`,
  );
  if (unsettled.length > 0) {
    throw new UnsettledPartitionError(
      `${unsettled.length} group(s) could not be settled (listed above); they stay open and their partitions are not compacted until they are. Fix the cause (e.g. a permission or a full disk), then run lake-compactor settle again`,
    );
  }
  return results;
}

/**
 * Settles one partition of a deployment, exactly as a console settle run (`{"settle": true}`) does: takes
 * the partition's lease as a settle run (also from needs-attention; refused while a run holds it), then
 * the workflow's own finalize settles every open group from the DynamoDB journal and releases the lease —
 * idle, or needs-attention again with the reason when a group still cannot be settled.
 * @throws UnsettledPartitionError (exit 1) when a group could not be settled.
 */
async function settleDeployedPartition(
  uri: string,
  opened: OpenedStore,
  of: { readonly name: string; readonly formatName: TableFormatName; readonly format: TableFormat },
  partition: string | undefined,
  stateTable: string,
  io: SettleIo,
  progress?: SettleProgressListener,
): Promise<SettledPartition> {
  const table = of.name;
  const bucket = /^s3a?:\/\/([^/]+)/i.exec(uri.trim())?.[1];
  if (bucket === undefined) {
    throw new UsageError(
      `--state-table settles a deployed table on S3; ${uri} is a local folder, whose runs journal in the folder: drop --state-table`,
    );
  }
  if (partition === undefined) {
    throw new UsageError(
      '--state-table settles one partition of the deployment at a time: add --partition <path> (lake-compactor status --stack <stack-name> lists those that need attention)',
    );
  }
  const { journal, leases } = deploymentPorts(stateTable, opened, io.env);
  const now = io.clock.now();
  const runId = `cli-settle-${new Date(now).toISOString().replace(/[-:]|\.\d+/g, '')}-${randomUUID().slice(0, 8)}`;
  const ref = { table, partition };
  io.out(
    `settle ${uri}: partition ${partition || '(root)'} of table ${table} in state table ${stateTable} (run ${runId})`,
  );
  progress?.listed([partition]);
  progress?.started(partition);
  const tableRoot = opened.prefix.replace(/\/$/, '');
  const run = buildRunContext(
    { name: table, prefix: tableRoot, bucket, format: of.formatName },
    partition,
    { settle: true, quietMinutes: 0, trigger: 'operator' },
    { executionName: runId, startedAt: now, workRoot: opened.workRoot },
  );
  // Renewed while the settle works: the sweep has no execution to ask after, and would release it otherwise.
  const summary = await whileRenewing(leases, runId, io.clock, async (kept) => {
    await kept.acquire(ref, { runId, settle: true, now });
    progress?.leased?.({ runId, stateTable });
    return finalizeRun(
      {
        store: opened.store,
        journal,
        leases: kept,
        clock: io.clock,
        format: of.format,
        engine: defaultParquetEngine,
      },
      run,
      { outcome: 'settled' },
    );
  });
  const settled = summary.settledGroups ?? 0;
  io.out(
    summary.needsAttention === undefined
      ? `${settled} group(s) settled; the partition is idle again`
      : `${settled} group(s) settled; still needs attention: ${summary.needsAttention}`,
  );
  if (summary.needsAttention !== undefined) {
    throw new UnsettledPartitionError(
      `partition ${partition || '(root)'} still needs attention (above); fix the cause, then run this again`,
    );
  }
  const result = { partition, report: { settled: [], unsettled: [] } };
  progress?.settled(result);
  return result;
}
