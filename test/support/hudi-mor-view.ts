// Test helper: Hudi's snapshot view of a Merge-on-Read table in a local folder, as a reader of its latest file slices
// sees it (base rows read by DuckDB, an independent Parquet reader; log records merged by the project's log reader),
// and the same view while a compaction of ours is pending (a reader sets a pending compaction's slice aside).
// Also: a refused block appended to a log, for the tests of a slice the merge refuses.
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { mergeFileSlice } from '../../functions/core/formats/hudi/compaction-merge.js';
import { compactionPolicy, readPlan } from '../../functions/core/formats/hudi/compaction-run.js';
import { encodeLogBlock } from '../../functions/core/formats/hudi/log/writer.js';
import { readHudiTable } from '../../functions/core/formats/hudi/table-state.js';
import { isCommitted } from '../../functions/core/formats/hudi/timeline.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';
import { type DuckDb, sqlString } from './duckdb.js';
import { HUDI_FIXTURES } from './fixtures.js';

/** The trips fixtures' columns, meta columns included. */
export const TRIPS_COLUMNS = [
  '_hoodie_commit_time',
  '_hoodie_commit_seqno',
  '_hoodie_record_key',
  '_hoodie_partition_path',
  'ts',
  'uuid',
  'rider',
  'driver',
  'fare',
  'city',
];

/**
 * A copy of a vendored table under `<new temp dir>/<root>`, as if written with hoodie.metadata.enable=false (its
 * metadata table removed: lake-compactor refuses one by name). The temp dir is pushed to `dirs` for cleanup.
 */
export async function copyHudiFixture(name: string, root: string, dirs: string[]): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'lc-hudi-mor-'));
  dirs.push(dir);
  const table = join(dir, root);
  await cp(join(HUDI_FIXTURES, name), table, { recursive: true });
  await rm(join(table, '.hoodie', 'metadata'), { recursive: true, force: true });
  await rm(join(table, '.hoodie', '.index_defs'), { recursive: true, force: true });
  const props = join(table, '.hoodie', 'hoodie.properties');
  const text = await readFile(props, 'utf8');
  await writeFile(
    props,
    text
      .split('\n')
      .filter(
        (l) =>
          !l.startsWith('hoodie.table.metadata.partitions') && !l.startsWith('hoodie.table.index.defs.path'),
      )
      .join('\n'),
  );
  return dir;
}

function plain(v: unknown): unknown {
  if (typeof v === 'bigint') return String(v);
  if (typeof v === 'number' && Number.isInteger(v)) return String(v);
  return v;
}

/**
 * The Hudi view of the table at `<dir>/<root>`: per latest slice, base rows less the merge's drops plus log rows, as
 * sorted JSON texts of `columns` (the trips fixtures' by default).
 */
export async function hudiMergedView(
  db: DuckDb,
  dir: string,
  root: string,
  columns: readonly string[] = TRIPS_COLUMNS,
): Promise<string[]> {
  const store = new LocalObjectStore(dir);
  const state = await readHudiTable(store, root);
  const rows: Record<string, unknown>[] = [];
  for (const slice of state.partitions.flatMap((p) => p.liveSlices)) {
    const key = slice.baseFile?.key ?? '';
    const base = await db.rows(
      `SELECT ${columns.join(', ')} FROM read_parquet(${sqlString(join(dir, key))}, file_row_number = true) ORDER BY file_row_number`,
    );
    if (slice.logFiles.length === 0) {
      rows.push(...base);
      continue;
    }
    const merged = await mergeFileSlice(
      store,
      { baseKey: key, logKeys: slice.logFiles.map((l) => l.key) },
      compactionPolicy(state),
      (i) => isCommitted(state.timeline, i),
      '99999999999999999',
    );
    const dropped = new Set(merged.merge.dropPositions);
    rows.push(...base.filter((_, i) => !dropped.has(i)), ...merged.merge.append);
  }
  return rows.map((r) => JSON.stringify(columns.map((c) => plain(r[c])))).sort();
}

/**
 * The view a reader has now: with a compaction pending (requested or inflight, not completed), the old slices — the
 * table as if its pending compaction files were not there; read from a copy, the table left as it is.
 */
export async function hudiVisibleView(
  db: DuckDb,
  dir: string,
  root: string,
  timelineFolder: string,
  dirs: string[],
  columns: readonly string[] = TRIPS_COLUMNS,
): Promise<string[]> {
  const names = await readdir(join(dir, root, timelineFolder));
  const completed = new Set(
    names.filter((n) => /^\d+(_\d+)?\.[a-z]+$/.test(n)).map((n) => n.split(/[._]/)[0]),
  );
  const pending = names.filter(
    (n) => /\.compaction\.(requested|inflight)$/.test(n) && !completed.has(n.split('.')[0]),
  );
  if (pending.length === 0) return hudiMergedView(db, dir, root, columns);
  const view = await mkdtemp(join(tmpdir(), 'lc-hudi-mor-view-'));
  dirs.push(view);
  await cp(dir, view, { recursive: true });
  for (const name of pending) await rm(join(view, root, timelineFolder, name));
  return hudiMergedView(db, view, root, columns);
}

/**
 * Appends an HFILE_DATA block of a committed instant to the last log file of the partition's slice with logs (a
 * block type the merge refuses by name); returns the log's key and its bytes before.
 */
export async function appendRefusedBlock(
  store: ObjectStore,
  root: string,
  partition: string,
): Promise<{ key: string; before: Uint8Array }> {
  const state = await readHudiTable(store, root);
  const pending = state.timeline.pendingPlans.find((p) => p.kind === 'compaction');
  // While a compaction is pending its slices are set aside: the log is one its plan names.
  const planned =
    pending === undefined
      ? undefined
      : (await readPlan(store, state, pending.instant.time)).at(0)?.deltaFilePaths?.at(-1);
  const key =
    planned !== undefined
      ? `${root}/${partition}/${planned}`
      : state.partitions
          .find((p) => p.partition === partition)
          ?.liveSlices.find((s) => s.logFiles.length > 0 && s.baseFile !== undefined)
          ?.logFiles.at(-1)?.key;
  const instant = state.timeline.completedWrites.at(-1)?.instant.time;
  if (key === undefined || instant === undefined) throw new Error('the fixture has no slice with logs');
  const log = { key };
  const before = await store.get(log.key);
  const block = encodeLogBlock({
    type: 'HFILE_DATA_BLOCK',
    header: [['INSTANT_TIME', instant]],
    content: new Uint8Array([1, 2, 3]),
  });
  const after = new Uint8Array(before.length + block.length);
  after.set(before);
  after.set(block, before.length);
  await store.put(log.key, after);
  return { key: log.key, before };
}
