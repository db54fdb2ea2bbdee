// `lake-compactor plan|compact --format hudi` on Hudi Copy-on-Write tables in a temp folder, written by the test's
// own appender (one insert commit and one new file group per batch): each partition's small base files are
// clustered into a new file group through Hudi's protocol — a pending plan, then a completed replacecommit naming
// the replaced file groups. The live rows, read by DuckDB from the files an independent replay of the completed
// timeline names, are identical; each output's `_hoodie_file_name` is its own name and its bloom filter finds every
// key; a second run plans nothing. Tables lake-compactor refuses (virtual keys, a metadata table) are refused by
// name with every byte unchanged.
import { cp, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { runCompact } from '../../functions/cli/compact.js';
import { run } from '../../functions/cli/index.js';
import { bloomFilterOfFooter } from '../../functions/core/formats/hudi/bloom/index.js';
import { readFooter } from '../../functions/core/parquet/footer.js';
import type { ParquetEngine, RewriteOptions, RewriteResult } from '../../functions/ports/parquet-engine.js';
import { defaultParquetEngine } from '../../functions/shared/parquet-engine.js';
import { captureIo } from '../support/cli-io.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';
import { HUDI_FIXTURES } from '../support/fixtures.js';
import { folderContentSnapshot } from '../support/folder-snapshot.js';
import { type AppenderTable, appendHudiInsert, createHudiTable } from '../support/hudi-appender.js';
import { completedWrites, liveFiles } from '../support/hudi-replay.js';

const NOW = Date.UTC(2024, 3, 1);
const PARTITIONS = ['10', '20'];
const BATCHES = 6;
const HUDI_FLAGS = ['--format', 'hudi', '--hudi-lock', 'storage', '--hudi-index-type', 'BLOOM'];

let db: DuckDb;
let dir: string;
let store: LocalObjectStore;

beforeAll(async () => {
  db = await openDuckDb();
});

afterAll(async () => {
  db.close();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

/** Every live row but its `_hoodie_file_name`, canonically ordered. */
async function liveRows(root: string, files: readonly string[]): Promise<string[]> {
  const list = files.map((f) => sqlString(join(root, f))).join(', ');
  const rows = await db.rows(
    `SELECT * EXCLUDE (_hoodie_file_name) FROM read_parquet([${list}]) ORDER BY ALL`,
  );
  return rows.map((r) => JSON.stringify(r));
}

async function cli(args: readonly string[]): Promise<{ code: number; out: string; err: string }> {
  const io = captureIo({ now: NOW });
  const code = await run([...args], io);
  return { code, out: io.stdout.join('\n'), err: io.stderr.join('\n') };
}

describe.each([6, 8] as const)('lake-compactor on a Hudi table of version %i', (version) => {
  let table: AppenderTable;

  beforeEach(async () => {
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
    dir = await mkdtemp(join(tmpdir(), 'lc-hudi-'));
    store = new LocalObjectStore(dir);
    table = await createHudiTable(store, '', version);
    for (const partition of PARTITIONS)
      for (let b = 0; b < BATCHES; b += 1) await appendHudiInsert(table, partition, 5 + b);
  });

  it('plans one clustering group of the small base files of each partition, writing nothing', async () => {
    // Prepare
    const before = await folderContentSnapshot(dir);

    // Act
    const result = await cli(['plan', dir, ...HUDI_FLAGS]);

    // Assess
    expect(result.code, result.err).toBe(0);
    expect(result.out).toContain(`2 groups: ${PARTITIONS.length * BATCHES} files → 2 files`);
    expect(await folderContentSnapshot(dir)).toEqual(before);
  });

  it('sizes the clustering by the rows it carries, not by the bloom filters it recomputes: one output under a 1 MiB target', async () => {
    // Prepare: each base file is ~430 kB of Hudi index footer around a few kB of rows, so a partition's 6 files weigh
    // 2.6 MB on disk against a 1 MiB target, while their rows fit one output many times over
    const beforeFiles = await liveFiles(dir, version);
    const beforeRows = await liveRows(dir, beforeFiles);
    const onDisk = (await Promise.all(beforeFiles.map((f) => store.head(f)))).map((h) => h?.size ?? 0);
    expect(Math.min(...onDisk)).toBeGreaterThan(400_000);

    // Act
    const result = await cli(['compact', dir, ...HUDI_FLAGS, '--target-mb', '1']);

    // Assess: one live output per partition, the same row multiset
    expect(result.code, result.err).toBe(0);
    const afterFiles = await liveFiles(dir, version);
    for (const p of PARTITIONS) expect(afterFiles.filter((f) => f.startsWith(`${p}/`))).toHaveLength(1);
    expect(await liveRows(dir, afterFiles)).toEqual(beforeRows);
  });

  it('clusters each partition into one new file group by a replacecommit: same rows, own file names, a bloom filter finding every key', async () => {
    // Prepare
    const beforeFiles = await liveFiles(dir, version);
    const beforeRows = await liveRows(dir, beforeFiles);

    // Act
    const result = await cli(['compact', dir, ...HUDI_FLAGS]);

    // Assess: one replacecommit per partition, replacing exactly the file groups it clustered
    expect(result.code, result.err).toBe(0);
    const writes = await completedWrites(dir, version);
    const clusterings = writes.filter((w) => w.name.endsWith('.replacecommit'));
    expect(clusterings).toHaveLength(PARTITIONS.length);
    const inputIds = writes
      .filter((w) => w.name.endsWith('.commit'))
      .flatMap((w) => w.stats.map((s) => s.fileId));
    expect(clusterings.flatMap((w) => w.replaced).sort()).toEqual([...inputIds].sort());
    // Live: one file per partition, the same row multiset
    const afterFiles = await liveFiles(dir, version);
    expect(afterFiles).toHaveLength(PARTITIONS.length);
    for (const p of PARTITIONS) expect(afterFiles.filter((f) => f.startsWith(`${p}/`))).toHaveLength(1);
    expect(await liveRows(dir, afterFiles)).toEqual(beforeRows);
    // Inputs stay on storage for Hudi's cleaner; no pending instant is left
    for (const f of beforeFiles) expect(await store.head(f), f).toBeDefined();
    const timeline = await readdir(join(dir, version === 6 ? '.hoodie' : '.hoodie/timeline'));
    const completedTimes = new Set(
      timeline.filter((n) => /^\d{17}(_\d{17})?\.[a-z]+$/.test(n)).map((n) => n.slice(0, 17)),
    );
    for (const n of timeline.filter((n) => n.endsWith('.requested') || n.endsWith('.inflight')))
      expect(completedTimes.has(n.slice(0, 17)), n).toBe(true);
    // Each output names itself in every row, and its footer's bloom filter and key range cover every key
    for (const file of afterFiles) {
      const names = await db.rows(
        `SELECT DISTINCT _hoodie_file_name AS name FROM read_parquet(${sqlString(join(dir, file))})`,
      );
      expect(names).toEqual([{ name: basename(file) }]);
      const keys = (
        await db.rows(`SELECT _hoodie_record_key AS k FROM read_parquet(${sqlString(join(dir, file))})`)
      ).map((r) => String(r.k));
      const kv = (await readFooter(store, file)).keyValueMetadata;
      const bloom = bloomFilterOfFooter(kv);
      expect(bloom).toBeDefined();
      expect(keys.filter((k) => !bloom?.mightContain(k))).toEqual([]);
      expect(kv.hoodie_min_record_key).toBe([...keys].sort()[0]);
      expect(kv.hoodie_max_record_key).toBe([...keys].sort().at(-1));
      expect(basename(file)).toMatch(
        new RegExp(`^[0-9a-f-]+-0_\\d+-0-0_${clusterings[0]?.name.slice(0, 4)}\\d{13}\\.parquet$`),
      );
    }
    // A second run plans nothing
    const again = await cli(['plan', dir, ...HUDI_FLAGS]);
    expect(again.code, again.err).toBe(0);
    expect(again.out).toContain('0 groups');
  });
});

/** A rewrite the engine was asked for: the options it was given and what it returned. */
interface SeenRewrite {
  readonly options: RewriteOptions;
  readonly result: RewriteResult;
}

describe('lake-compactor compact --workers 2 on a Hudi table', () => {
  it('clusters with the workers: each output split across them, the same rows, own file names, a bloom filter finding every key', async () => {
    // Prepare: the engine as deployed, but cutting row groups at 8 rows, so each partition's one output (30+ rows)
    // has several row groups and is split across the workers, as a real table's 128 MB output is.
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
    dir = await mkdtemp(join(tmpdir(), 'lc-hudi-'));
    store = new LocalObjectStore(dir);
    const table = await createHudiTable(store, '', 8);
    for (const partition of PARTITIONS)
      for (let b = 0; b < BATCHES; b += 1) await appendHudiInsert(table, partition, 5 + b);
    const beforeFiles = await liveFiles(dir, 8);
    const beforeRows = await liveRows(dir, beforeFiles);
    const seen: SeenRewrite[] = [];
    const engine: ParquetEngine = {
      ...defaultParquetEngine,
      rewriteGroup: async (io, group, options) => {
        const result = await defaultParquetEngine.rewriteGroup(io, group, { ...options, rowGroupRows: 8 });
        seen.push({ options, result });
        return result;
      },
    };

    // Act
    const results = await runCompact(
      dir,
      { format: 'hudi', hudiLock: 'storage', hudiIndexType: 'BLOOM', workers: 2 },
      { out: () => undefined, clock: { now: () => NOW }, env: {} },
      { engine },
    );

    // Assess: the format's per-output options reached the engine with the workers, and each output was split
    // across them (its digest is cut into the parts, which only a split output's is).
    expect(results.flatMap((r) => r.groups).every((g) => g.state === 'done')).toBe(true);
    expect(seen).toHaveLength(PARTITIONS.length);
    for (const { options, result } of seen) {
      expect(options.workers).toBe(2);
      expect(options.derivedColumns).toEqual([{ column: '_hoodie_file_name', value: 'output-file-name' }]);
      expect(options.outputFooterEntries?.column).toBe('_hoodie_record_key');
      const segment =
        result.fingerprint.kind === 'ordered-columns-v1' ? result.fingerprint.segments[0] : undefined;
      expect(segment !== undefined && 'cuts' in segment ? (segment.cuts?.length ?? 0) : 0).toBeGreaterThan(1);
    }
    const afterFiles = await liveFiles(dir, 8);
    expect(afterFiles).toHaveLength(PARTITIONS.length);
    expect(await liveRows(dir, afterFiles)).toEqual(beforeRows);
    for (const file of afterFiles) {
      const rows = await db.rows(
        `SELECT _hoodie_record_key AS k, _hoodie_file_name AS name FROM read_parquet(${sqlString(join(dir, file))})`,
      );
      expect(new Set(rows.map((r) => r.name))).toEqual(new Set([basename(file)]));
      const keys = rows.map((r) => String(r.k));
      const kv = (await readFooter(store, file)).keyValueMetadata;
      const bloom = bloomFilterOfFooter(kv);
      expect(keys.filter((k) => bloom?.mightContain(k) !== true)).toEqual([]);
      expect(kv.hoodie_min_record_key).toBe([...keys].sort()[0]);
      expect(kv.hoodie_max_record_key).toBe([...keys].sort().at(-1));
    }
  });
});

describe('lake-compactor on a Hudi table it refuses', () => {
  it.each([
    ['cow_v6_simplekeygen_hivestyle_no_metafields', /virtual keys|populate\.meta\.fields/],
    ['cow_v9_txns_simple_meta', /metadata table/],
  ])('refuses %s by name and changes no byte', async (fixture, reason) => {
    // Prepare
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
    dir = await mkdtemp(join(tmpdir(), 'lc-hudi-'));
    await cp(join(HUDI_FIXTURES, fixture), dir, { recursive: true });
    const before = await folderContentSnapshot(dir);

    // Act
    const plan = await cli(['plan', dir, ...HUDI_FLAGS]);
    const compact = await cli(['compact', dir, ...HUDI_FLAGS]);

    // Assess
    expect(plan.code).not.toBe(0);
    expect(plan.err).toMatch(reason);
    expect(compact.code).not.toBe(0);
    expect(compact.err).toMatch(reason);
    expect(await folderContentSnapshot(dir)).toEqual(before);
  });

  it('writes nothing to a Hudi table without a declared lock', async () => {
    // Prepare
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
    dir = await mkdtemp(join(tmpdir(), 'lc-hudi-'));
    store = new LocalObjectStore(dir);
    const table = await createHudiTable(store, '', 6);
    for (let b = 0; b < BATCHES; b += 1) await appendHudiInsert(table, '10', 5);
    const before = (await folderContentSnapshot(dir)).filter((l) => !l.startsWith('_lake-compactor'));

    // Act
    const result = await cli(['compact', dir, '--format', 'hudi', '--hudi-index-type', 'BLOOM']);

    // Assess
    expect(result.code).not.toBe(0);
    expect(`${result.out}\n${result.err}`).toContain('--hudi-lock');
    expect((await folderContentSnapshot(dir)).filter((l) => !l.startsWith('_lake-compactor'))).toEqual(
      before,
    );
  });
});
