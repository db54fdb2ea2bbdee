// Apache Hudi benchmark (issue #28), two parts, each against the Hive rewrite of the same base files measured in the
// same run (the same pages as a Hive-style Parquet table, compacted by `format: 'parquet'`):
// 1. Copy-on-Write clustering: a table of small base files, written by the project's appender
//    (functions/tools/sample-hudi.ts: one insert commit and one new file group each), is clustered through Hudi's own
//    timeline by the CLI path (`runCompact` with `format: 'hudi'`, as `lake-compactor compact` runs it) — alone, and
//    while a second writer, a child process, commits an insert commit every second under the table's storage lock.
//    Prints MB/s, our clustering instants won / lost, the appender's commits won / lost, and whether the live rows
//    equal every row written.
// 2. Merge-on-Read compaction: a table of as many base files, then one delta commit updating 20 % of every file
//    slice's records in a log file of the slice, is compacted by the same command (the compaction table service,
//    then the clustering of the compacted base files). Prints MB/s, our instants, and whether the live rows equal the
//    appender's latest version of every record.
//
// `npm run bench -- hudi [--scale 1] [--files 2000] [--rows 20000] [--append-rows 1000] [--only cow|mor] [--workers 1]`
import { cp, mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { HUDI_INDEX_FOOTER_KEYS } from '../../functions/core/formats/hudi/bloom/index.js';
import { readHudiTable } from '../../functions/core/formats/hudi/table-state.js';
import { withFooterEntries } from '../../functions/core/parquet/footer-entries.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';
import {
  type AppenderRow,
  type AppenderTableVersion,
  appenderLatestRows,
  appendHudiDeltaCommit,
  appendHudiInsert,
  createHudiMorTable,
  createHudiTable,
} from '../../functions/tools/sample-hudi.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';
import { completedWrites, liveFiles } from '../support/hudi-replay.js';
import {
  completedInstantOf,
  type HudiInstantTally,
  type HudiTableService,
  tallyHudiInstants,
} from './hudi-instants.js';
import {
  flag,
  line,
  MB,
  machineNote,
  numberFlag,
  ratio,
  startAppenderChild,
  type Timed,
  timeCompact,
} from './table-bench.js';

const ROOT = join(process.cwd(), '.tmp', 'bench-hudi');
const APPENDER = fileURLToPath(new URL('./hudi-appender.ts', import.meta.url));
/** The issue's table: 2,000 small base files (`--scale` multiplies it). */
const ISSUE_FILES = 2000;
/** Table version 8 (the 1.x timeline layout under `.hoodie/timeline/`), as the demo writes. */
const VERSION: AppenderTableVersion = 8;
/** The appender's partition path: the value of its `byteField` column, not Hive-style. */
const PARTITION = '1';
/** The same base files as a Hive-style Parquet table, partitioned by the same column. */
const HIVE_PARTITION_DIR = `byteField=${PARTITION}`;
const HIVE = { format: 'parquet', table: 'events' } as const;
/** How the demo declares its Hudi table: Hudi 1.1's storage lock, bloom-filter index (what the appender's footers carry). */
const HUDI = { format: 'hudi', table: 'events', hudiLock: 'storage', hudiIndexType: 'BLOOM' } as const;
/** Engine worker threads every run of this bench compacts with (`--workers`, the CLI's flag): the peer's too. */
let workers = 1;

/** {@link timeCompact} with the bench's `--workers` (none passed at 1, the CLI's default). */
function compactTimed(
  ...[dir, options, ...rest]: Parameters<typeof timeCompact>
): ReturnType<typeof timeCompact> {
  return timeCompact(dir, workers > 1 ? { ...options, workers } : options, ...rest);
}
/** Every column but `_hoodie_file_name`, which a clustering rewrites to name each output file (Hudi's rule). */
const ROW_COLUMNS =
  '_hoodie_commit_time, _hoodie_commit_seqno, _hoodie_record_key, _hoodie_partition_path, id, name, byteField';

/** A generated table and what its appender needs to go on writing it: the keys written and the last instant. */
interface HudiSet {
  readonly dir: string;
  readonly written: number;
  readonly last: string;
}

/**
 * The Copy-on-Write source table, generated once through the sample appender and cached under .tmp keyed by its
 * size: `files` insert commits of `rows` rows into one partition, instants following each other from the appender's
 * fixed start (no clock), so the timeline is the same every time; file ids are random, as Hudi's are.
 */
async function ensureCowSet(files: number, rows: number): Promise<HudiSet> {
  const dir = join(ROOT, `cow-v${VERSION}-${files}x${rows}`);
  const done = join(dir, '_COMPLETE');
  const cached = await readFile(done, 'utf8').catch(() => undefined);
  if (cached !== undefined) return { dir, ...(JSON.parse(cached) as { written: number; last: string }) };
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const t0 = performance.now();
  const store = new LocalObjectStore(dir);
  const table = await createHudiTable(store, '', VERSION);
  for (let i = 0; i < files; i++) await appendHudiInsert(table, PARTITION, rows);
  const state = { written: table.written, last: table.last };
  await store.put('_COMPLETE', JSON.stringify(state));
  console.log(
    `  generated: ${files} Hudi insert commits in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );
  return { dir, ...state };
}

/**
 * The base files, without the timeline, as a Hive-style Parquet table (the peer): the same pages, the footer without
 * Hudi's index entries (bloom filter, min/max record keys). A Hive table has no index, and the entries differ from
 * file to file, so the Hive planner — which keeps files of differing footer metadata apart — would merge nothing.
 */
async function hiveCopyOf(source: string, target: string): Promise<void> {
  await rm(target, { recursive: true, force: true });
  await mkdir(join(target, HIVE_PARTITION_DIR), { recursive: true });
  for (const name of await readdir(join(source, PARTITION))) {
    if (!name.endsWith('.parquet')) continue;
    const bytes = new Uint8Array(await readFile(join(source, PARTITION, name)));
    await writeFile(
      join(target, HIVE_PARTITION_DIR, name),
      withFooterEntries(bytes, {}, HUDI_INDEX_FOOTER_KEYS),
    );
  }
}

async function hudiCopyOf(source: string, target: string): Promise<void> {
  await rm(target, { recursive: true, force: true });
  // The bench's own files beside the cached table (its completion mark, the Merge-on-Read updates) are not the table's.
  await cp(source, target, {
    recursive: true,
    filter: (src) => !src.endsWith('_COMPLETE') && !src.endsWith(UPDATES_FILE),
  });
}

/** Bytes and count of the base files of `partitionDir`. */
async function baseFiles(partitionDir: string): Promise<{ files: number; bytes: number }> {
  let files = 0;
  let bytes = 0;
  for (const n of await readdir(partitionDir)) {
    if (!n.endsWith('.parquet')) continue;
    files += 1;
    bytes += (await stat(join(partitionDir, n))).size;
  }
  return { files, bytes };
}

/** A put our run made: its key, and when it returned (performance.now()). */
interface Put {
  readonly key: string;
  readonly at: number;
}

/** `store`, recording every put: the timeline files our run wrote, for {@link tallyHudiInstants}, and when. */
function recordingPuts(store: ObjectStore, puts: Put[]): ObjectStore {
  return Object.assign(Object.create(store) as ObjectStore, {
    put: async (...args: Parameters<ObjectStore['put']>) => {
      const result = await store.put(...args);
      puts.push({ key: args[0], at: performance.now() });
      return result;
    },
  });
}

const keysOf = (puts: readonly Put[]) => puts.map((p) => p.key);

/** The live rows against every row written, as multisets (EXCEPT ALL both ways over {@link ROW_COLUMNS}). */
interface RowCheck {
  readonly live: number;
  readonly written: number;
  readonly onlyWritten: number;
  readonly onlyLive: number;
}

/** The rows of query `a` less those of `b`, as multisets; each side parenthesised, so a UNION in one stays inside it. */
function exceptAll(a: string, b: string): string {
  return `SELECT * FROM (${a}) EXCEPT ALL SELECT * FROM (${b})`;
}

function rowsEqual(check: RowCheck): boolean {
  return check.live === check.written && check.onlyWritten === 0 && check.onlyLive === 0;
}

/**
 * A Copy-on-Write table's rows after clustering, checked by an independent replay of its completed timeline
 * (test/support/hudi-replay.ts, not the format's reader) and DuckDB: the rows of the live base files must be, as a
 * multiset, the rows of every base file an insert commit wrote (the generation's and the appender's alike).
 */
async function checkCowRows(db: DuckDb, dir: string): Promise<RowCheck> {
  const writes = await completedWrites(dir, VERSION);
  const written = writes.filter((w) => w.name.endsWith('.commit')).flatMap((w) => w.stats.map((s) => s.path));
  const live = await liveFiles(dir, VERSION);
  const scan = (paths: readonly string[]) =>
    `SELECT ${ROW_COLUMNS} FROM read_parquet([${paths.map((p) => sqlString(join(dir, p))).join(', ')}])`;
  const count = async (sql: string) => Number(await db.scalar(`SELECT count(*) FROM (${sql})`));
  return {
    live: await count(scan(live)),
    written: await count(scan(written)),
    onlyWritten: await count(exceptAll(scan(written), scan(live))),
    onlyLive: await count(exceptAll(scan(live), scan(written))),
  };
}

function instantsText(t: HudiInstantTally, service: HudiTableService): string {
  const what = service === 'clustering' ? 'clustering replacecommits' : 'compaction commits';
  return `ours ${t.won.length} won / ${t.lost.length} lost (${what} completed / planned and aborted)`;
}

function rowsText(check: RowCheck): string {
  return rowsEqual(check)
    ? `rows checked equal: ${check.live} live = ${check.written} written`
    : `ROWS DIFFER: ${check.live} live, ${check.written} written; ${check.onlyWritten} only written, ${check.onlyLive} only live`;
}

interface AppenderTally {
  /** Insert commits completed. */
  readonly won: number;
  /** Insert commits that threw after the first (see hudi-appender.ts). */
  readonly failed: number;
}

/**
 * Warm-up (module loading, parquet-wasm's instance and JIT, the Hudi timeline and index code) by compacting
 * throw-away tables of six small files each way, so the first measured run does not pay it: several seconds of CPU
 * on this machine, more than a small run's rewrite.
 */
async function warmUp(work: string): Promise<string> {
  await rm(work, { recursive: true, force: true });
  const table = await createHudiTable(new LocalObjectStore(work), '', VERSION);
  for (let i = 0; i < 6; i++) await appendHudiInsert(table, PARTITION, 100);
  await hiveCopyOf(work, `${work}-hive`);
  const hudi = await compactTimed(work, HUDI);
  const hive = await compactTimed(`${work}-hive`, HIVE);
  await rm(`${work}-hive`, { recursive: true, force: true });
  return `warm-up: 6 files clustered into ${hudi.outputs} (Hudi), compacted into ${hive.outputs} (Hive)`;
}

/**
 * Part 1, Copy-on-Write clustering: three compactions of the same base files, in this order: Hive-style Parquet (the
 * peer), the Hudi table alone, the Hudi table beside the appender child.
 */
async function benchClustering(options: {
  readonly files: number;
  readonly rows: number;
  readonly appendRows: number;
  readonly db: DuckDb;
}): Promise<void> {
  const { files, rows, appendRows, db } = options;
  console.log(
    `  Copy-on-Write clustering: ${files} base files × ${rows} rows in partition ${PARTITION} (table version ${VERSION}), ${machineNote()}`,
  );
  const source = await ensureCowSet(files, rows);
  const input = await baseFiles(join(source.dir, PARTITION));
  const work = join(ROOT, 'work');
  console.log(`  ${await warmUp(work)}`);

  await hiveCopyOf(source.dir, work);
  const hiveInput = await baseFiles(join(work, HIVE_PARTITION_DIR));
  // MB/s of the rows' pages, the same bytes in both tables: what each run rewrote, so MB/s compare as times do.
  const data = hiveInput.bytes;
  console.log(
    `  input: ${(input.bytes / MB).toFixed(1)} MB in ${input.files} base files, of which ${((input.bytes - data) / MB).toFixed(1)} MB Hudi's index footers (bloom filters); the Hive copy's ${(data / MB).toFixed(1)} MB are the same pages without them, and MB/s below are of those`,
  );
  const hive = await compactTimed(work, HIVE);
  console.log(line('Hive-style Parquet (peer)', data, hive));
  if (hive.outputs === 0)
    console.log(
      '    the Hive planner merged nothing at this size: the ratios below mean nothing (raise --files)',
    );

  await hudiCopyOf(source.dir, work);
  const quietPuts: Put[] = [];
  const quiet = await compactTimed(work, HUDI, (s) => recordingPuts(s, quietPuts), 'report');
  const quietTally = tallyHudiInstants(keysOf(quietPuts), 'clustering');
  console.log(line('Hudi CoW clustering, no other writer', data, quiet, ratio(quiet, hive)));
  console.log(`    instants: ${instantsText(quietTally, 'clustering')}${failureText(quiet)}`);
  console.log(`    ${rowsText(await checkCowRows(db, work))}`);

  await hudiCopyOf(source.dir, work);
  const busyPuts: Put[] = [];
  const appender = await startAppenderChild(APPENDER, [
    work,
    String(VERSION),
    PARTITION,
    String(appendRows),
    String(source.written),
    source.last,
  ]);
  let busy: Timed;
  let tally: AppenderTally;
  try {
    busy = await compactTimed(work, HUDI, (s) => recordingPuts(s, busyPuts), 'report');
  } finally {
    tally = (await appender.stop()) as AppenderTally;
  }
  const busyTally = tallyHudiInstants(keysOf(busyPuts), 'clustering');
  const appended = (await completedWrites(work, VERSION)).filter(
    (w) => w.name.endsWith('.commit') && w.name.slice(0, 17) > source.last,
  ).length;
  console.log(line('Hudi CoW clustering, appender every 1 s', data, busy, ratio(busy, hive)));
  console.log(
    `    instants: ${instantsText(busyTally, 'clustering')}; theirs ${tally.won} won / ${tally.failed} lost (appender insert commits of ${appendRows} rows completed / failed; ${appended} in the timeline)${failureText(busy)}`,
  );
  console.log(`    ${rowsText(await checkCowRows(db, work))}`);
  console.log(
    `  ratio to the Hive rewrite of the same base files: ${ratio(quiet, hive)} alone, ${ratio(busy, hive)} beside the appender; load now ${machineNote()}`,
  );
  await rm(work, { recursive: true, force: true });
}

/** The share of every file slice's records the Merge-on-Read table's delta commit updates (the issue's 20 %). */
const UPDATE_FRACTION = 0.2;
/** The Merge-on-Read table's columns: the Copy-on-Write ones and the ordering field `ts`. */
const MOR_ROW_COLUMNS = `${ROW_COLUMNS}, ts`;
/** The compaction runs at once: one delta commit is enough (`hoodie.compact.inline.max.delta.commits`). */
const HUDI_MOR = { ...HUDI, hudiCompactionDeltaCommits: 1 } as const;
/** The records the delta commit updated, their new versions, kept beside the cached table for the row check. */
const UPDATES_FILE = '_updates.parquet';

/**
 * The Merge-on-Read source table, generated once and cached like the Copy-on-Write one: `files` inserts (each a
 * deltacommit writing a base file), then one delta commit updating {@link UPDATE_FRACTION} of every slice's records
 * into one log file per slice. The updated records' new versions — the appender's own record of what it wrote — are
 * kept in {@link UPDATES_FILE}, so the check after compaction does not read the logs through the format's reader.
 */
async function ensureMorSet(files: number, rows: number): Promise<{ dir: string; updated: number }> {
  const dir = join(ROOT, `mor-v${VERSION}-${files}x${rows}-u${UPDATE_FRACTION}`);
  const done = join(dir, '_COMPLETE');
  const cached = await readFile(done, 'utf8').catch(() => undefined);
  if (cached !== undefined) return { dir, ...(JSON.parse(cached) as { updated: number }) };
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const t0 = performance.now();
  const store = new LocalObjectStore(dir);
  const table = await createHudiMorTable(store, '', VERSION);
  for (let i = 0; i < files; i++) await appendHudiInsert(table, PARTITION, rows);
  const delta = await appendHudiDeltaCommit(table, PARTITION, { fraction: UPDATE_FRACTION });
  if (delta === undefined) throw new Error('the delta commit found no file slice to update');
  const updates = appenderLatestRows(table).filter((r) => r._hoodie_commit_time === delta.instant);
  await writeFile(join(dir, UPDATES_FILE), rowsFile(updates));
  await store.put('_COMPLETE', JSON.stringify({ updated: updates.length }));
  console.log(
    `  generated: ${files} Hudi inserts and a delta commit of ${updates.length} updates in ${delta.logKeys.length} log files in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );
  return { dir, updated: updates.length };
}

/** Appender rows as a plain Parquet file (no Hudi footer), for DuckDB. */
function rowsFile(rows: readonly AppenderRow[]): Uint8Array {
  const text = (name: keyof AppenderRow) => ({
    name,
    data: rows.map((r) => String(r[name])),
    type: 'STRING' as const,
  });
  return new Uint8Array(
    parquetWriteBuffer({
      columnData: [
        text('_hoodie_commit_time'),
        text('_hoodie_commit_seqno'),
        text('_hoodie_record_key'),
        text('_hoodie_partition_path'),
        { name: 'id', data: Int32Array.from(rows, (r) => r.id), type: 'INT32' },
        text('name'),
        { name: 'byteField', data: Int32Array.from(rows, (r) => r.byteField), type: 'INT32' },
        { name: 'ts', data: BigInt64Array.from(rows, (r) => r.ts), type: 'INT64' },
      ],
    } as never),
  );
}

/** Bytes and count of the log files of `partitionDir` (Hudi names them `.<fileId>_<instant>.log.<version>_<token>`). */
async function logFiles(partitionDir: string): Promise<{ files: number; bytes: number }> {
  let files = 0;
  let bytes = 0;
  for (const n of await readdir(partitionDir)) {
    if (!/\.log\.\d+/.test(n)) continue;
    files += 1;
    bytes += (await stat(join(partitionDir, n))).size;
  }
  return { files, bytes };
}

/**
 * A Merge-on-Read table's rows after compaction: the live slices (the format's reader) must hold base files only,
 * and their rows (DuckDB) must be, as a multiset, what the appender wrote last for each record: the source's base
 * rows whose record was not updated, and the updates' new versions ({@link UPDATES_FILE}).
 */
async function checkMorRows(db: DuckDb, dir: string, source: string): Promise<RowCheck & { logs: number }> {
  const state = await readHudiTable(new LocalObjectStore(dir), '');
  const slices = state.partitions.flatMap((p) => p.liveSlices);
  const live = slices.flatMap((s) => (s.baseFile === undefined ? [] : [join(dir, s.baseFile.key)]));
  const bases = (await readdir(join(source, PARTITION)))
    .filter((n) => n.endsWith('.parquet'))
    .map((n) => join(source, PARTITION, n));
  const list = (paths: readonly string[]) => `[${paths.map(sqlString).join(', ')}]`;
  const updates = `SELECT ${MOR_ROW_COLUMNS} FROM read_parquet(${sqlString(join(source, UPDATES_FILE))})`;
  // The updates file holds every column as written; cast to the base files' types so the multisets compare.
  const typedUpdates = `SELECT _hoodie_commit_time, _hoodie_commit_seqno, _hoodie_record_key, _hoodie_partition_path, id, name, byteField, CAST(ts AS BIGINT) AS ts FROM (${updates})`;
  const written = `SELECT ${MOR_ROW_COLUMNS} FROM read_parquet(${list(bases)}) WHERE _hoodie_record_key NOT IN (SELECT _hoodie_record_key FROM (${updates})) UNION ALL ${typedUpdates}`;
  const liveRows = `SELECT ${MOR_ROW_COLUMNS} FROM read_parquet(${list(live)})`;
  const count = async (sql: string) => Number(await db.scalar(`SELECT count(*) FROM (${sql})`));
  return {
    live: await count(liveRows),
    written: await count(written),
    onlyWritten: await count(exceptAll(written, liveRows)),
    onlyLive: await count(exceptAll(liveRows, written)),
    logs: slices.reduce((n, s) => n + s.logFiles.length, 0),
  };
}

/**
 * Part 2, Merge-on-Read compaction: the base files as a Hive-style Parquet table (the peer: it has no logs to merge,
 * so the ratio includes the merge), then the Hudi table compacted by the same command — its compaction table service
 * (every slice's logs merged into a new base file, one compaction instant), then the clustering of those base files.
 */
async function benchCompaction(options: {
  readonly files: number;
  readonly rows: number;
  readonly db: DuckDb;
}): Promise<void> {
  const { files, rows, db } = options;
  console.log(
    `  Merge-on-Read compaction: ${files} base files × ${rows} rows in partition ${PARTITION} (table version ${VERSION}), ${UPDATE_FRACTION * 100} % of every slice's records updated in a log file, ${machineNote()}`,
  );
  const source = await ensureMorSet(files, rows);
  const input = await baseFiles(join(source.dir, PARTITION));
  const logs = await logFiles(join(source.dir, PARTITION));
  const work = join(ROOT, 'work');
  console.log(`  ${await warmUp(work)}`);

  await hiveCopyOf(source.dir, work);
  const pages = (await baseFiles(join(work, HIVE_PARTITION_DIR))).bytes;
  console.log(
    `  input: ${(input.bytes / MB).toFixed(1)} MB in ${input.files} base files (${(pages / MB).toFixed(1)} MB of pages, the rest Hudi's index footers) and ${(logs.bytes / MB).toFixed(1)} MB in ${logs.files} log files (${source.updated} updates); MB/s below are of the pages, and of the logs too for Hudi`,
  );
  const hive = await compactTimed(work, HIVE);
  console.log(line('Hive-style Parquet (peer, base files)', pages, hive));
  if (hive.outputs === 0)
    console.log(
      '    the Hive planner merged nothing at this size: the ratios below mean nothing (raise --files)',
    );

  await hudiCopyOf(source.dir, work);
  const puts: Put[] = [];
  const t0 = performance.now();
  const compacted = await compactTimed(work, HUDI_MOR, (s) => recordingPuts(s, puts), 'report');
  const compaction = tallyHudiInstants(keysOf(puts), 'compaction');
  const clustering = tallyHudiInstants(keysOf(puts), 'clustering');
  console.log(
    line('Hudi MoR compaction + clustering', pages + logs.bytes, compacted, ratio(compacted, hive)),
  );
  // When the compaction's completed commit was put: the rest of the run is the clustering of its outputs.
  const compactionDone = puts.find((p) => {
    const time = completedInstantOf(p.key, 'compaction');
    return time !== undefined && compaction.won.includes(time);
  });
  if (compactionDone !== undefined)
    console.log(
      `    of which the compaction (until its completed commit): ${((compactionDone.at - t0) / 1000).toFixed(2)} s wall (${((pages + logs.bytes) / MB / ((compactionDone.at - t0) / 1000)).toFixed(1)} MB/s)`,
    );
  console.log(
    `    instants: ${instantsText(compaction, 'compaction')}; ${instantsText(clustering, 'clustering')}${failureText(compacted)}`,
  );
  const check = await checkMorRows(db, work, source.dir);
  console.log(`    ${rowsText(check)}; ${check.logs} log files left in live slices`);
  console.log(
    `  ratio to the Hive rewrite of the same base files: ${ratio(compacted, hive)}; load now ${machineNote()}`,
  );
  await rm(work, { recursive: true, force: true });
}

function failureText(m: Timed): string {
  return m.failure === undefined ? '' : `; the run failed: ${m.failure}`;
}

/**
 * Flags: `--scale <x>` (default 1: the issue's 2,000 base files; `--scale 0.1` for a quick run) or `--files <n>`
 * size each table, `--rows <n>` (default 20,000) each base file, `--append-rows <n>` (default 1,000) each concurrent
 * insert commit; `--only cow` or `--only mor` runs one part; `--workers <n>` (default 1) compacts every run, the peer's
 * too, with `n` engine worker threads, as `compact --workers` does. Figures are printed, not asserted.
 */
export async function run(flags: readonly string[]): Promise<void> {
  const scale = numberFlag(flags, 'scale', 1);
  const files = flag(flags, 'files', Math.max(2, Math.round(ISSUE_FILES * scale)));
  const rows = flag(flags, 'rows', 20_000);
  const appendRows = flag(flags, 'append-rows', 1000);
  const only = flags[flags.indexOf('--only') + 1];
  if (flags.includes('--only') && only !== 'cow' && only !== 'mor')
    throw new Error('--only expects cow or mor');
  workers = flag(flags, 'workers', 1);
  console.log(`  hudi bench: ${machineNote()}; engine workers: ${workers} (--workers)`);
  const db = await openDuckDb();
  try {
    if (only !== 'mor') await benchClustering({ files, rows, appendRows, db });
    if (only !== 'cow') await benchCompaction({ files, rows, db });
  } finally {
    db.close();
  }
}
