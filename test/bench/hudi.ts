// Apache Hudi benchmark (issue #28): a Copy-on-Write table of small base files, written by the project's appender
// (functions/tools/sample-hudi.ts: one insert commit and one new file group each), is clustered through Hudi's own
// timeline by the CLI path (`runCompact` with `format: 'hudi'`, as `lake-compactor compact` runs it) — alone, and
// while a second writer, a child process, commits an insert commit every second under the table's storage lock —
// against the same base files compacted as a Hive-style Parquet table in the same run. Prints MB/s, our clustering
// instants won / lost, the appender's commits won / lost, and whether the live rows equal every row written.
//
// `npm run bench -- hudi [--scale 1] [--files 2000] [--rows 20000] [--append-rows 1000]`
import { cp, mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { HUDI_INDEX_FOOTER_KEYS } from '../../functions/core/formats/hudi/bloom/index.js';
import { withFooterEntries } from '../../functions/core/parquet/footer-entries.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';
import {
  type AppenderTableVersion,
  appendHudiInsert,
  createHudiTable,
} from '../../functions/tools/sample-hudi.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';
import { completedWrites, liveFiles } from '../support/hudi-replay.js';
import { type HudiInstantTally, type HudiTableService, tallyHudiInstants } from './hudi-instants.js';
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
  await cp(source, target, { recursive: true, filter: (src) => !src.endsWith('_COMPLETE') });
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

/** `store`, recording the key of every put: the timeline files our run wrote, for {@link tallyHudiInstants}. */
function recordingPuts(store: ObjectStore, keys: string[]): ObjectStore {
  return Object.assign(Object.create(store) as ObjectStore, {
    put: async (...args: Parameters<ObjectStore['put']>) => {
      const result = await store.put(...args);
      keys.push(args[0]);
      return result;
    },
  });
}

/** The live rows against every row written, as multisets (EXCEPT ALL both ways over {@link ROW_COLUMNS}). */
interface RowCheck {
  readonly live: number;
  readonly written: number;
  readonly onlyWritten: number;
  readonly onlyLive: number;
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
    onlyWritten: await count(`${scan(written)} EXCEPT ALL ${scan(live)}`),
    onlyLive: await count(`${scan(live)} EXCEPT ALL ${scan(written)}`),
  };
}

function instantsText(t: HudiInstantTally, service: HudiTableService): string {
  const what = service === 'clustering' ? 'replacecommits' : 'compaction commits';
  return `ours ${t.won.length} won / ${t.lost.length} lost (${service} ${what} completed / planned and aborted)`;
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
  const hudi = await timeCompact(work, HUDI);
  const hive = await timeCompact(`${work}-hive`, HIVE);
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
  const hive = await timeCompact(work, HIVE);
  console.log(line('Hive-style Parquet (peer)', data, hive));
  if (hive.outputs === 0)
    console.log(
      '    the Hive planner merged nothing at this size: the ratios below mean nothing (raise --files)',
    );

  await hudiCopyOf(source.dir, work);
  const quietKeys: string[] = [];
  const quiet = await timeCompact(work, HUDI, (s) => recordingPuts(s, quietKeys), 'report');
  const quietTally = tallyHudiInstants(quietKeys, 'clustering');
  console.log(line('Hudi CoW clustering, no other writer', data, quiet, ratio(quiet, hive)));
  console.log(`    instants: ${instantsText(quietTally, 'clustering')}${failureText(quiet)}`);
  console.log(`    ${rowsText(await checkCowRows(db, work))}`);

  await hudiCopyOf(source.dir, work);
  const busyKeys: string[] = [];
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
    busy = await timeCompact(work, HUDI, (s) => recordingPuts(s, busyKeys), 'report');
  } finally {
    tally = (await appender.stop()) as AppenderTally;
  }
  const busyTally = tallyHudiInstants(busyKeys, 'clustering');
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

function failureText(m: Timed): string {
  return m.failure === undefined ? '' : `; the run failed: ${m.failure}`;
}

/**
 * Flags: `--scale <x>` (default 1: the issue's 2,000 base files; `--scale 0.1` for a quick run) or `--files <n>`
 * size the table, `--rows <n>` (default 20,000) each base file, `--append-rows <n>` (default 1,000) each concurrent
 * insert commit. Figures are printed, not asserted.
 */
export async function run(flags: readonly string[]): Promise<void> {
  const scale = numberFlag(flags, 'scale', 1);
  const files = flag(flags, 'files', Math.max(2, Math.round(ISSUE_FILES * scale)));
  const rows = flag(flags, 'rows', 20_000);
  const appendRows = flag(flags, 'append-rows', 1000);
  console.log(`  hudi bench: ${machineNote()}`);
  const db = await openDuckDb();
  try {
    await benchClustering({ files, rows, appendRows, db });
  } finally {
    db.close();
  }
}
