// Iceberg rewrite_data_files benchmark (issue #18): a path-catalog Iceberg table of N small files in one partition,
// written by the sample appender, is compacted into `replace` snapshots while a second writer — a child process —
// commits an append every second; against the same data files compacted as a Hive-style Parquet table in the same
// run. Prints MB/s, our commit retries and rebases, the appender's commits won / lost, and the metadata's overhead.
//
// `npm run bench -- iceberg [--files 2000] [--rows 20000] [--append-rows 1000]`
import { cp, mkdir, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { loadTable } from '../../functions/core/formats/iceberg/catalog.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';
import {
  appendIcebergEventFiles,
  createIcebergEventsTable,
  ICEBERG_EVENTS_PARTITION_FIELD,
} from '../../functions/tools/sample-iceberg.js';
import {
  bytesIn,
  flag,
  line,
  MB,
  machineNote,
  ratio,
  startAppenderChild,
  type Timed,
  timeCompact,
} from './table-bench.js';

const ROOT = join(process.cwd(), '.tmp', 'bench-iceberg');
const DAY = '2024-01-01';
const PARTITION_DIR = `${ICEBERG_EVENTS_PARTITION_FIELD.name}=${DAY}`;
/** A fixed epoch for the generated table, so its commits do not depend on when the set was made. */
const EPOCH = Date.UTC(2024, 0, 2);
const APPENDER = fileURLToPath(new URL('./iceberg-appender.ts', import.meta.url));
const HIVE = { format: 'parquet', table: 'events' } as const;
const ICEBERG = { format: 'iceberg', table: 'events' } as const;

/** A manifest list: every commit attempt (won or lost) writes exactly one, before it asks the catalog to swap. */
const MANIFEST_LIST_KEY = /(^|\/)metadata\/snap-[^/]+\.avro$/;

/**
 * `store`, counting commit attempts by the manifest lists it writes. An attempt loses when another writer committed
 * first (the path catalog sees a newer metadata file, or its put-if-absent is refused): attempts - commits won =
 * retries, each a reload and rebase onto the newer snapshot.
 */
export function countingCommitAttempts(store: ObjectStore, counter: { attempts: number }): ObjectStore {
  return Object.assign(Object.create(store) as ObjectStore, {
    put: async (...args: Parameters<ObjectStore['put']>) => {
      const result = await store.put(...args);
      if (MANIFEST_LIST_KEY.test(args[0])) counter.attempts += 1;
      return result;
    },
  });
}

/** Data files per `append` snapshot when the source table is generated. */
const FILES_PER_COMMIT = 100;

/**
 * The Iceberg source table, generated once through the sample appender and cached under .tmp keyed by its size:
 * one data file per seeded micro-batch, committed 100 files to an `append` snapshot (what a writer that merges
 * manifests leaves — Iceberg's `commit.manifest-merge.min-count-to-merge` is 100 — and without which each append
 * would read every earlier manifest, so generation would grow with the square of the file count).
 */
async function ensureIcebergSet(files: number, rows: number): Promise<string> {
  const dir = join(ROOT, `iceberg-${files}x${rows}-seed1-c${FILES_PER_COMMIT}`);
  const done = join(dir, '_COMPLETE');
  if (await stat(done).catch(() => undefined)) return dir;
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const t0 = performance.now();
  const store = new LocalObjectStore(dir);
  await createIcebergEventsTable(store, '', { now: EPOCH });
  for (let first = 0; first < files; first += FILES_PER_COMMIT) {
    const batch = Array.from({ length: Math.min(FILES_PER_COMMIT, files - first) }, (_, j) => ({
      day: DAY,
      rows,
      seed: 1_000_003 * (first + j) + 1,
    }));
    await appendIcebergEventFiles(store, '', batch, EPOCH + first);
  }
  await store.put('_COMPLETE', '');
  console.log(
    `  generated: ${files} Iceberg data files in ${Math.ceil(files / FILES_PER_COMMIT)} appends in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );
  return dir;
}

/** The same data files, without the metadata, as a Hive-style Parquet table (the peer). */
async function hiveCopyOf(source: string, target: string): Promise<void> {
  await rm(target, { recursive: true, force: true });
  await cp(join(source, 'data', PARTITION_DIR), join(target, PARTITION_DIR), { recursive: true });
}

async function icebergCopyOf(source: string, target: string): Promise<void> {
  await rm(target, { recursive: true, force: true });
  await cp(source, target, { recursive: true, filter: (src) => !src.endsWith('_COMPLETE') });
}

/** The appender child: started, and resolved once it has committed its first append (so it runs beside us). */
async function startAppender(dir: string, rows: number): Promise<{ stop: () => Promise<AppenderTally> }> {
  const child = await startAppenderChild(APPENDER, [dir, DAY, String(rows), '7000001']);
  return { stop: async () => (await child.stop()) as AppenderTally };
}

interface AppenderTally {
  /** Appends committed. */
  readonly won: number;
  /** Commit attempts (manifest lists written): `attempts - won` lost to another writer and were retried. */
  readonly attempts: number;
}

interface SnapshotTally {
  readonly replaces: number;
  readonly appends: number;
  /** Replace snapshots whose parent is an append committed after the run started: re-checked and rebased over it. */
  readonly rebased: number;
}

/** Snapshots committed after `since` (the current snapshot when the run started), by operation. */
async function tallySnapshots(dir: string, since: bigint | undefined): Promise<SnapshotTally> {
  const { metadata } = await loadTable(new LocalObjectStore(dir), '');
  const newer = metadata.snapshots.filter((s) => since === undefined || s.sequenceNumber > sequenceOf(since));
  function sequenceOf(id: bigint): bigint {
    return metadata.snapshots.find((s) => s.snapshotId === id)?.sequenceNumber ?? 0n;
  }
  const appendIds = new Set(newer.filter((s) => s.operation === 'append').map((s) => s.snapshotId));
  const replaces = newer.filter((s) => s.operation === 'replace');
  return {
    replaces: replaces.length,
    appends: appendIds.size,
    rebased: replaces.filter((s) => s.parentSnapshotId !== undefined && appendIds.has(s.parentSnapshotId))
      .length,
  };
}

async function currentSnapshot(dir: string): Promise<bigint | undefined> {
  return (await loadTable(new LocalObjectStore(dir), '')).metadata.currentSnapshotId;
}

/**
 * Flags: `--files <n>` (default 2,000) and `--rows <n>` (default 20,000) size the table, `--append-rows <n>`
 * (default 1,000) each concurrent append. Three compactions of the same files, in this order: Hive-style Parquet
 * (the peer), Iceberg alone, Iceberg beside the appender child. Figures are printed, not asserted.
 */
export async function run(flags: readonly string[]): Promise<void> {
  const files = flag(flags, 'files', 2000);
  const rows = flag(flags, 'rows', 20_000);
  const appendRows = flag(flags, 'append-rows', 1000);
  console.log(`  iceberg bench: ${files} files × ${rows} rows in one partition, ${machineNote()}`);
  const source = await ensureIcebergSet(files, rows);
  const input = await bytesIn(join(source, 'data', PARTITION_DIR));
  const metadataAtRest = await bytesIn(join(source, 'metadata'));
  console.log(
    `  input: ${(input.bytes / MB).toFixed(1)} MB in ${input.files} data files; ${metadataAtRest.files} metadata files (${(metadataAtRest.bytes / MB).toFixed(1)} MB)`,
  );
  const work = join(ROOT, 'work');

  // Warm-up (module loading, parquet-wasm's instance) on two files, so the first measured run does not pay it.
  await hiveCopyOf(source, work);
  const part = join(work, PARTITION_DIR);
  for (const name of (await readdir(part)).sort().slice(2)) await rm(join(part, name));
  await timeCompact(work, HIVE);

  await hiveCopyOf(source, work);
  const hive = await timeCompact(work, HIVE);
  console.log(line('Hive-style Parquet (peer)', input.bytes, hive));

  await icebergCopyOf(source, work);
  const quietRaces = { attempts: 0 };
  const quietStart = await currentSnapshot(work);
  const metadataBefore = await bytesIn(join(work, 'metadata'));
  const quiet = await timeCompact(work, ICEBERG, (s) => countingCommitAttempts(s, quietRaces));
  const metadataAfter = await bytesIn(join(work, 'metadata'));
  const quietSnapshots = await tallySnapshots(work, quietStart);
  console.log(line('Iceberg, no other writer', input.bytes, quiet, ratio(quiet, hive)));
  console.log(
    `    commits: ${quietSnapshots.replaces} replace snapshots in ${quietRaces.attempts} attempts (${quietRaces.attempts - quietSnapshots.replaces} retries); metadata written: ${metadataAfter.files - metadataBefore.files} files, ${((metadataAfter.bytes - metadataBefore.bytes) / 1000).toFixed(1)} kB`,
  );

  await icebergCopyOf(source, work);
  const races = { attempts: 0 };
  const busyStart = await currentSnapshot(work);
  const appender = await startAppender(work, appendRows);
  let busy: Timed;
  let tally: AppenderTally;
  try {
    busy = await timeCompact(work, ICEBERG, (s) => countingCommitAttempts(s, races));
  } finally {
    tally = await appender.stop();
  }
  const busySnapshots = await tallySnapshots(work, busyStart);
  console.log(line('Iceberg, appender committing every 1 s', input.bytes, busy, ratio(busy, hive)));
  console.log(
    `    commits: ${busySnapshots.replaces} replace snapshots in ${races.attempts} attempts (${races.attempts - busySnapshots.replaces} retries: another commit came first, reloaded and rebased), ${busySnapshots.rebased} replace snapshots committed onto an appender snapshot`,
  );
  console.log(
    `    appender (child process): ${tally.won} appends of ${appendRows} rows won (${busySnapshots.appends} in the table's snapshots), ${tally.attempts - tally.won} lost (attempts retried after another commit)`,
  );
  console.log(
    `  metadata overhead vs the Hive rewrite of the same data: ${ratio(quiet, hive)} alone, ${ratio(busy, hive)} beside the appender`,
  );
  await rm(work, { recursive: true, force: true });
}
