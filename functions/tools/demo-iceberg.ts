// `npm run demo -- --format iceberg`: a streaming writer commits small appends to a path-catalog Iceberg table on the
// embedded local cloud while the real stack (profiler, sweep, state machine) compacts it, then expire_snapshots runs.
//
// As in the Parquet demo (demo-run.ts), nothing here decides what the system does: the appender is the project's
// sample writer (sample-iceberg.ts), compaction is triggered by the profiler and the sweep as deployed, and expiry is
// expire.ts as the scheduled vacuum calls it. The checks read the table back: the live rows of the current snapshot
// (DuckDB over the files it lists) must be the multiset of every appended row, before and after the expiry, and the
// expiry must delete only files that no remaining snapshot references.
import { rmSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { App } from 'aws-cdk-lib';
import { LakeCompactorStack } from '../../infra/app.js';
import type { LocalCloud } from '../../infra/local/local-cloud.js';
import { onProcessExit } from '../../infra/local/process-hygiene.js';
import { S3ObjectStore } from '../adapters/s3-object-store.js';
import { type LoadedTable, loadTable } from '../core/formats/iceberg/catalog.js';
import { type ExpireSnapshotsReport, expireSnapshots } from '../core/formats/iceberg/expire.js';
import { readSnapshotFiles } from '../core/formats/iceberg/live-files.js';
import { readManifest, readManifestList } from '../core/formats/iceberg/manifests.js';
import { DEFAULT_WORK_ROOT, workFolder } from '../core/workflow/layout.js';
import type { ObjectStore } from '../ports/object-store.js';
import { type DemoDuckDb, openDemoDuckDb, sqlString } from './demo-duckdb.js';
import {
  DEMO_BUCKET,
  DEMO_TABLE,
  type DemoCheck,
  type DemoProgress,
  type DemoRun,
  demoDays,
  demoPolicy,
  PartitionRunWatcher,
  quietHandlers,
  SweepLoop,
  startDemoCloud,
} from './demo-run.js';
import {
  appendIcebergEvents,
  createIcebergEventsTable,
  ICEBERG_EVENTS_PARTITION_FIELD,
} from './sample-iceberg.js';

/**
 * The Iceberg demo's size when `--days`/`--batches` are not given: smaller than the Parquet demo's 30 × 20, because
 * each append of the sample writer reads every manifest of the table (it adds one per append and never merges), so
 * the stream's cost grows with the square of its length, and the writer shares the process (and a loaded machine)
 * with the local cloud's functions, whose steps time out when starved.
 */
export const ICEBERG_DEMO_DEFAULTS = { days: 3, batches: 10 } as const;
const ROW_COLUMNS = 'user_id, event_type, event_timestamp, session_id, revenue_usd';

export interface IcebergDemoOptions {
  /** Days (Iceberg partitions, `day(event_timestamp)`); the last one is today (UTC). */
  readonly days: number;
  /** Appends (one data file and one snapshot each) per day. */
  readonly batches: number;
  /** Keep the local copies (appended files, live files before and after expiry). */
  readonly keep?: boolean;
  /** How often the sweep schedule is fired, ms (stands in for its 15-minute rate). @default 1000 */
  readonly sweepIntervalMs?: number;
  /** Give up waiting for compactions this long after the last append, ms. @default 120000 */
  readonly settleTimeoutMs?: number;
  /** The wall clock's "today" (for the partition days). @default now */
  readonly now?: number;
  readonly seed?: number;
}

/** Snapshots of the table before expiry, by operation. */
export interface IcebergSnapshotCounts {
  readonly total: number;
  readonly appends: number;
  /** `replace` snapshots: the compaction's commits, one per group. */
  readonly replaces: number;
}

/** One copy of the table: live data files (the current snapshot's) and data files on storage. */
export interface IcebergFileCounts {
  readonly liveDataFiles: number;
  readonly dataFilesOnStorage: number;
  readonly objectsOnStorage: number;
}

export interface IcebergDemoResult {
  readonly ok: boolean;
  readonly format: 'iceberg';
  readonly checks: readonly DemoCheck[];
  readonly options: {
    readonly days: number;
    readonly batches: number;
    readonly policy: Readonly<Record<string, number>>;
  };
  /**
   * Appends the writer committed, and their rows; its commit attempts (manifest lists written), of which
   * `commitAttempts - files` lost to another commit (the compaction's) and were rebased.
   */
  readonly appended: { readonly files: number; readonly rows: number; readonly commitAttempts: number };
  readonly snapshots: IcebergSnapshotCounts;
  /** After compaction, before expiry. */
  readonly beforeExpire: IcebergFileCounts;
  readonly afterExpire: IcebergFileCounts;
  /** Live rows of the current snapshot against every appended row (EXCEPT ALL both ways), before/after expiry. */
  readonly rows: {
    readonly beforeExpire: {
      readonly live: number;
      readonly onlyAppended: number;
      readonly onlyLive: number;
    };
    readonly afterExpire: { readonly live: number; readonly onlyAppended: number; readonly onlyLive: number };
  };
  readonly expire: {
    readonly expiredSnapshots: number;
    readonly retainedSnapshots: number;
    readonly deletedFiles: number;
    readonly deletedBytes: number;
    readonly deletedByKind: Readonly<Record<string, number>>;
    /** Deleted files a remaining snapshot still references (must be none). */
    readonly deletedButReferenced: readonly string[];
    /** Files a remaining snapshot references that are gone (must be none). */
    readonly referencedButMissing: readonly string[];
    readonly failed: number;
  };
  readonly runs: readonly DemoRun[];
  readonly stagingLeft: readonly string[];
  readonly deadLetters: number;
  readonly timingsMs: {
    readonly startup: number;
    readonly stream: number;
    readonly settle: number;
    readonly expire: number;
    readonly total: number;
  };
  readonly dataDir?: string;
}

/** The port's partition of day `day`: the spec's folder and `name=value`, as the profiler and the planner name it. */
export function icebergDemoPartition(day: string): string {
  return `data/${ICEBERG_EVENTS_PARTITION_FIELD.name}=${day}`;
}

/**
 * The demo configuration of the real stack: one Iceberg table `events` on bucket `lake` through the path catalog.
 * No partition columns: an Iceberg partition is a tuple in the manifests, and its port path
 * (`data/event_timestamp_day=…`) is not a Hive path the run input could check column by column.
 */
export function icebergDemoStack(options: { batches: number; days: number }): LakeCompactorStack {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  return new LakeCompactorStack(app, 'LakeCompactorIcebergDemo', {
    compactor: {
      tables: [
        {
          name: DEMO_TABLE,
          bucketName: DEMO_BUCKET,
          prefix: `${DEMO_TABLE}/`,
          format: 'iceberg',
          policy: demoPolicy(options),
        },
      ],
    },
  });
}

/** Rows of append `i` of the stream: varied, so files differ in size as a real stream's do. */
function rowsOf(i: number): number {
  return 80 + ((i * 37) % 120);
}

/**
 * Runs the Iceberg demo. Never throws for a failed check (see `ok`); throws only when it cannot run at all.
 */
export async function runIcebergDemo(
  options: IcebergDemoOptions,
  progress: DemoProgress,
): Promise<IcebergDemoResult> {
  const started = performance.now();
  const restoreEnv = quietHandlers();
  const root = await mkdtemp(path.join(tmpdir(), 'lake-compactor-iceberg-demo-'));
  const unhookRoot = options.keep
    ? () => undefined
    : onProcessExit(() => rmSync(root, { recursive: true, force: true }));
  let cloud: LocalCloud | undefined;
  let db: DemoDuckDb | undefined;
  let sweep: SweepLoop | undefined;
  try {
    const stack = icebergDemoStack(options);
    progress.line('Starting the local cloud (s3rver, DynamoDB Local, Step Functions) with the real stack…');
    cloud = await startDemoCloud(stack);
    const running = cloud;
    const startupMs = performance.now() - started;
    progress.line(`Local cloud up in ${(startupMs / 1000).toFixed(1)} s.`);

    const now = options.now ?? Date.now();
    const days = demoDays(now, options.days);
    const total = options.days * options.batches;
    const watcher = new PartitionRunWatcher(running, days.map(icebergDemoPartition), progress);

    // The writer's store tees every data file it writes to a local folder: the oracle of "every appended row".
    const appendedDir = path.join(root, 'appended');
    await mkdir(appendedDir, { recursive: true });
    const lake = new S3ObjectStore({ client: running.s3, bucket: DEMO_BUCKET });
    let attempts = 0;
    const writer = teeDataFiles(lake, appendedDir, () => {
      attempts += 1;
    });
    await createIcebergEventsTable(lake, DEMO_TABLE, { now });

    sweep = new SweepLoop(running, stack, () => watcher.poll(), progress, options.sweepIntervalMs ?? 1000);

    // Stream: one append (data file + `append` snapshot) at a time, day after day, while compaction runs.
    const streamStarted = performance.now();
    let appendedRows = 0;
    progress.written?.(0, total);
    for (const [d, day] of days.entries()) {
      for (let b = 0; b < options.batches; b += 1) {
        const i = d * options.batches + b;
        const rows = rowsOf(i);
        await appendIcebergEvents(writer, DEMO_TABLE, {
          day,
          rows,
          seed: (options.seed ?? 1) * 1_000_003 + i,
          now: Date.now(),
        });
        appendedRows += rows;
        progress.written?.(i + 1, total);
        watcher.poll();
      }
    }
    const streamMs = performance.now() - streamStarted;
    progress.line(
      `Committed ${total} appends in ${(streamMs / 1000).toFixed(1)} s; waiting for compactions…`,
    );

    const settleStarted = performance.now();
    const deadline = settleStarted + (options.settleTimeoutMs ?? 120_000);
    while (!watcher.allCompacted() && performance.now() < deadline && !watcher.anyFailed()) {
      await sleep(200);
      watcher.poll();
    }
    await sweep.stop();
    await running.drain(60_000).catch((error: unknown) => {
      progress.line(`drain: ${error instanceof Error ? error.message : String(error)}`);
    });
    watcher.poll();
    const settleMs = performance.now() - settleStarted;

    // The table after compaction, before expiry.
    db = await openDemoDuckDb();
    const tableBefore = await loadTable(lake, DEMO_TABLE);
    const snapshots = countSnapshots(tableBefore);
    const beforeExpire = await fileCounts(lake, tableBefore);
    const rowsBefore = await compareLiveRows(
      db,
      lake,
      tableBefore,
      appendedDir,
      path.join(root, 'live-before'),
    );

    // expire_snapshots as the scheduled vacuum runs it (expire.ts), with the retention compressed to now: every
    // snapshot but the current one goes, and with them the files only they referenced.
    const expireStarted = performance.now();
    progress.line('Expiring snapshots older than now (retain the last 1)…');
    const expired = await expireSnapshots(lake, DEMO_TABLE, {
      now: Date.now() + 1,
      dryRun: false,
      olderThanHours: 0,
      retainLast: 1,
      listLimit: Number.MAX_SAFE_INTEGER,
    });
    const expireMs = performance.now() - expireStarted;
    const tableAfter = await loadTable(lake, DEMO_TABLE);
    const afterExpire = await fileCounts(lake, tableAfter);
    const rowsAfter = await compareLiveRows(db, lake, tableAfter, appendedDir, path.join(root, 'live-after'));
    const referenced = await referencedKeys(lake, tableAfter);
    const deletedKeys = expired.candidates.map((c) => c.key);
    const deletedButReferenced = deletedKeys.filter((k) => referenced.has(k));
    const referencedButMissing: string[] = [];
    for (const key of referenced) if ((await lake.head(key)) === undefined) referencedButMissing.push(key);

    const stagingLeft: string[] = [];
    const staging = workFolder(DEFAULT_WORK_ROOT, 'staging');
    for await (const object of lake.listAll(staging)) stagingLeft.push(object.key);

    const runs = watcher.runs();
    const compacted = runs.filter((r) => r.status === 'SUCCEEDED' && r.outcome === 'compacted');
    const compactedPartitions = new Set(compacted.map((r) => r.partition));
    const notCompacted = days.map(icebergDemoPartition).filter((p) => !compactedPartitions.has(p));
    const failedRuns = runs.filter((r) => r.status !== 'SUCCEEDED' && r.status !== 'RUNNING');
    const unverified = compacted.filter((r) => r.failedGroups > 0 || r.groupsVerified !== r.groupsDone);
    const sameRows = (r: { live: number; onlyAppended: number; onlyLive: number }) =>
      r.live === appendedRows && r.onlyAppended === 0 && r.onlyLive === 0;
    const checks: DemoCheck[] = [
      {
        name: 'every partition compacted',
        ok: notCompacted.length === 0 && failedRuns.length === 0 && snapshots.replaces > 0,
        detail:
          notCompacted.length === 0 && failedRuns.length === 0
            ? `${compactedPartitions.size}/${days.length} partitions, ${runs.length} runs, ${snapshots.replaces} replace snapshots`
            : `not compacted: ${notCompacted.join(', ') || 'none'}; failed runs: ${failedRuns.map((r) => `${r.execution} (${r.error ?? r.status})`).join(', ') || 'none'}`,
      },
      {
        name: 'every committed group verified',
        ok: compacted.length > 0 && unverified.length === 0,
        detail:
          unverified.length === 0
            ? `${compacted.reduce((n, r) => n + r.groupsVerified, 0)} groups re-read before their replace commit`
            : `unverified: ${unverified.map((r) => `${r.partition} (${r.groupsVerified}/${r.groupsDone} groups)`).join(', ')}`,
      },
      {
        name: 'live rows = every appended row (before expiry)',
        ok: sameRows(rowsBefore),
        detail: `${rowsBefore.live} live of ${appendedRows} appended; ${rowsBefore.onlyAppended} only appended, ${rowsBefore.onlyLive} only live`,
      },
      {
        name: 'live rows = every appended row (after expiry)',
        ok: sameRows(rowsAfter),
        detail: `${rowsAfter.live} live of ${appendedRows} appended; ${rowsAfter.onlyAppended} only appended, ${rowsAfter.onlyLive} only live`,
      },
      {
        name: 'expiry deleted only files no remaining snapshot references',
        ok:
          expired.expiredSnapshots.length > 0 &&
          deletedButReferenced.length === 0 &&
          referencedButMissing.length === 0 &&
          expired.failed.length === 0,
        detail: `${expired.totalRemoved.count} files deleted; ${deletedButReferenced.length} of them still referenced, ${referencedButMissing.length} referenced files missing, ${expired.failed.length} failed deletes`,
      },
      {
        name: 'no data file left that no snapshot lists',
        ok: afterExpire.dataFilesOnStorage === afterExpire.liveDataFiles,
        detail: `${afterExpire.dataFilesOnStorage} data files on storage, ${afterExpire.liveDataFiles} live`,
      },
      {
        name: 'no staging left',
        ok: stagingLeft.length === 0,
        detail: stagingLeft.length === 0 ? `${staging} is empty` : stagingLeft.join(', '),
      },
      {
        name: 'no dead letters',
        ok: running.deadLetters.length === 0,
        detail: `${running.deadLetters.length} profiler messages dead-lettered`,
      },
    ];
    return {
      ok: checks.every((c) => c.ok),
      format: 'iceberg',
      checks,
      options: { days: options.days, batches: options.batches, policy: demoPolicy(options) },
      appended: { files: total, rows: appendedRows, commitAttempts: attempts },
      snapshots,
      beforeExpire,
      afterExpire,
      rows: { beforeExpire: rowsBefore, afterExpire: rowsAfter },
      expire: expireSummary(expired, deletedButReferenced, referencedButMissing),
      runs,
      stagingLeft,
      deadLetters: running.deadLetters.length,
      timingsMs: {
        startup: Math.round(startupMs),
        stream: Math.round(streamMs),
        settle: Math.round(settleMs),
        expire: Math.round(expireMs),
        total: Math.round(performance.now() - started),
      },
      ...(options.keep ? { dataDir: root } : {}),
    };
  } finally {
    sweep?.halt();
    db?.close();
    await cloud?.stop();
    if (!options.keep) await rm(root, { recursive: true, force: true });
    unhookRoot();
    restoreEnv();
  }
}

function expireSummary(
  report: ExpireSnapshotsReport,
  deletedButReferenced: readonly string[],
  referencedButMissing: readonly string[],
): IcebergDemoResult['expire'] {
  const byKind: Record<string, number> = {};
  for (const [kind, tally] of Object.entries(report.removed)) if (tally.count > 0) byKind[kind] = tally.count;
  return {
    expiredSnapshots: report.expiredSnapshots.length,
    retainedSnapshots: report.retainedSnapshots.length,
    deletedFiles: report.totalRemoved.count,
    deletedBytes: report.totalRemoved.bytes,
    deletedByKind: byKind,
    deletedButReferenced,
    referencedButMissing,
    failed: report.failed.length,
  };
}

/**
 * The store the writer uses, with every data file it puts (a `.parquet` under `data/`) also written to `dir`, and
 * every manifest list it writes counted (`onCommitAttempt`): each commit attempt, won or lost, writes exactly one.
 */
function teeDataFiles(store: ObjectStore, dir: string, onCommitAttempt: () => void): ObjectStore {
  return Object.assign(Object.create(store) as ObjectStore, {
    put: async (...args: Parameters<ObjectStore['put']>) => {
      const [key, body] = args;
      const result = await store.put(...args);
      if (/\/metadata\/snap-[^/]+\.avro$/.test(key)) onCommitAttempt();
      if (key.includes('/data/') && key.endsWith('.parquet')) {
        const bytes = typeof body === 'string' ? new TextEncoder().encode(body) : body;
        await writeFile(path.join(dir, path.basename(key)), bytes);
      }
      return result;
    },
  });
}

function countSnapshots(table: LoadedTable): IcebergSnapshotCounts {
  const ops = table.metadata.snapshots.map((s) => s.operation);
  return {
    total: ops.length,
    appends: ops.filter((o) => o === 'append').length,
    replaces: ops.filter((o) => o === 'replace').length,
  };
}

async function fileCounts(store: ObjectStore, table: LoadedTable): Promise<IcebergFileCounts> {
  const live = await readSnapshotFiles(store, table);
  let dataFilesOnStorage = 0;
  let objectsOnStorage = 0;
  for await (const object of store.listAll(`${table.tableRoot}/`)) {
    objectsOnStorage += 1;
    if (object.key.startsWith(`${table.tableRoot}/data/`) && object.key.endsWith('.parquet'))
      dataFilesOnStorage += 1;
  }
  return { liveDataFiles: live.dataFiles.length, dataFilesOnStorage, objectsOnStorage };
}

/**
 * The current snapshot's live rows (its data files, downloaded to `copyDir`; the demo writes no deletes) against
 * the appended files in `appendedDir`, as multisets (EXCEPT ALL both ways) in DuckDB.
 */
async function compareLiveRows(
  db: DemoDuckDb,
  store: ObjectStore,
  table: LoadedTable,
  appendedDir: string,
  copyDir: string,
): Promise<{ live: number; onlyAppended: number; onlyLive: number }> {
  await mkdir(copyDir, { recursive: true });
  const live = await readSnapshotFiles(store, table);
  for (const file of live.dataFiles) {
    if (file.deletes.length > 0) throw new Error(`${file.entry.file.key} has deletes; the demo writes none`);
    await writeFile(
      path.join(copyDir, path.basename(file.entry.file.key)),
      await store.get(file.entry.file.key),
    );
  }
  const scan = (dir: string) => `SELECT ${ROW_COLUMNS} FROM read_parquet(${sqlString(`${dir}/*.parquet`)})`;
  const count = async (sql: string) => Number(await db.scalar(`SELECT count(*) FROM (${sql})`));
  if (live.dataFiles.length === 0)
    return { live: 0, onlyAppended: await count(scan(appendedDir)), onlyLive: 0 };
  return {
    live: await count(scan(copyDir)),
    onlyAppended: await count(`${scan(appendedDir)} EXCEPT ALL ${scan(copyDir)}`),
    onlyLive: await count(`${scan(copyDir)} EXCEPT ALL ${scan(appendedDir)}`),
  };
}

/** Every file the table's remaining snapshots reference: manifest lists, manifests, live data and delete files. */
async function referencedKeys(store: ObjectStore, table: LoadedTable): Promise<Set<string>> {
  const ctx = {
    store,
    table: table.name,
    paths: table.paths,
    formatVersion: table.metadata.formatVersion,
  };
  const keys = new Set<string>();
  for (const snapshot of table.metadata.snapshots) {
    keys.add(table.paths.key(snapshot.manifestList));
    for (const manifest of await readManifestList(ctx, snapshot.manifestList)) {
      keys.add(manifest.key);
      for (const entry of await readManifest(ctx, manifest))
        if (entry.status !== 'deleted') keys.add(entry.file.key);
    }
  }
  return keys;
}

/** The text report of an Iceberg demo run. Pure formatting. */
export function formatIcebergDemoReport(result: IcebergDemoResult): string {
  const out: string[] = [];
  const { days, batches } = result.options;
  const e = result.expire;
  out.push(
    '',
    `== Iceberg table events: ${days} days × ${batches} appends (path catalog on local S3) ==`,
    '',
    `appends committed: ${result.appended.files} files, ${result.appended.rows} rows; the writer's commits lost ${result.appended.commitAttempts - result.appended.files} races to the compaction (rebased and retried)`,
    `snapshots before expiry: ${result.snapshots.total} (${result.snapshots.appends} append, ${result.snapshots.replaces} replace = the compaction's commits)`,
    '',
    ...table([
      ['', 'after compaction', 'after expiry'],
      [
        'live data files',
        String(result.beforeExpire.liveDataFiles),
        String(result.afterExpire.liveDataFiles),
      ],
      [
        'data files on storage',
        String(result.beforeExpire.dataFilesOnStorage),
        String(result.afterExpire.dataFilesOnStorage),
      ],
      [
        'objects under the table',
        String(result.beforeExpire.objectsOnStorage),
        String(result.afterExpire.objectsOnStorage),
      ],
      ['live rows', String(result.rows.beforeExpire.live), String(result.rows.afterExpire.live)],
    ]),
    '',
    `expire_snapshots: ${e.expiredSnapshots} snapshots expired, ${e.retainedSnapshots} retained; ${e.deletedFiles} files deleted (${
      Object.entries(e.deletedByKind)
        .map(([k, n]) => `${n} ${k}`)
        .join(', ') || 'none'
    }), ${e.deletedBytes} bytes`,
  );
  out.push('', `== Runs (${result.runs.length}) ==`);
  out.push(
    ...table([
      ['partition', 'status', 'files', 'rows', 'replace commits', 'took'],
      ...result.runs.map((r) => [
        r.partition,
        r.outcome ?? r.status,
        `${r.filesBefore}→${r.filesAfter}`,
        String(r.rows),
        String(r.groupsDone),
        `${(r.durationMs / 1000).toFixed(1)} s`,
      ]),
    ]),
  );
  if (result.runs.some((r) => r.outcome === 'nothing-to-do'))
    out.push(
      '',
      "nothing-to-do: until the profiler follows the catalog pointer, a data file's PUT counts before its append",
      'commits, so a run can find one file fewer than the trigger saw and plan nothing; the sweep starts it again.',
    );
  out.push('', '== Checks ==');
  for (const check of result.checks) out.push(`${check.ok ? '✔' : '✘'} ${check.name}: ${check.detail}`);
  const t = result.timingsMs;
  const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  out.push(
    '',
    `Time: ${s(t.total)} (local cloud start ${s(t.startup)}, streaming ${s(t.stream)}, last runs ${s(t.settle)}, expiry ${s(t.expire)})`,
  );
  if (result.dataDir !== undefined)
    out.push(`Kept: ${result.dataDir} (appended files, live files before and after expiry).`);
  out.push(result.ok ? 'All checks held.' : 'FAILED: see the ✘ checks above.');
  return `${out.join('\n')}\n`;
}

/** Left-aligned first column, right-aligned others. */
function table(rows: readonly (readonly string[])[]): string[] {
  const widths: number[] = [];
  for (const row of rows)
    for (const [i, cell] of row.entries()) widths[i] = Math.max(widths[i] ?? 0, cell.length);
  return rows.map((row) =>
    row
      .map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0)))
      .join('   ')
      .trimEnd(),
  );
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
