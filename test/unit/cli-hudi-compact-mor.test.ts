// `lake-compactor compact --format hudi` on Merge-on-Read tables (copies of the vendored fixtures in a temp folder):
// before planning, the format's table service compacts every file slice with log files through Hudi's compaction
// protocol, under the declared storage lock, once the configured number of delta commits is reached. The rows
// DuckDB reads from the live base files afterwards equal the merged view of base + logs before (DuckDB over the base
// files, the log records merged by the project's log reader); the live slices are the new base files alone, each
// output's bloom filter finds every key of its file; a second run compacts nothing; a refused payload class changes
// no byte.
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { runCompact } from '../../functions/cli/compact.js';
import { run } from '../../functions/cli/index.js';
import { bloomFilterOfFooter } from '../../functions/core/formats/hudi/bloom/index.js';
import { mergeFileSlice } from '../../functions/core/formats/hudi/compaction-merge.js';
import { compactionPolicy } from '../../functions/core/formats/hudi/compaction-run.js';
import { readHudiTable } from '../../functions/core/formats/hudi/table-state.js';
import { isCommitted } from '../../functions/core/formats/hudi/timeline.js';
import { readFooter } from '../../functions/core/parquet/footer.js';
import type { ParquetEngine } from '../../functions/ports/parquet-engine.js';
import { defaultParquetEngine } from '../../functions/shared/parquet-engine.js';
import { captureIo } from '../support/cli-io.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';
import { HUDI_FIXTURES } from '../support/fixtures.js';
import { folderContentSnapshot } from '../support/folder-snapshot.js';

const NOW = Date.UTC(2026, 11, 1);
const FLAGS = [
  '--format',
  'hudi',
  '--hudi-lock',
  'storage',
  '--hudi-index-type',
  'BLOOM',
  '--hudi-timezone',
  'UTC',
  '--hudi-compaction-delta-commits',
  '1',
];
const COLUMNS = [
  '_hoodie_commit_time',
  '_hoodie_commit_seqno',
  '_hoodie_record_key',
  'ts',
  'uuid',
  'rider',
  'driver',
  'fare',
  'city',
];

let db: DuckDb;
const dirs: string[] = [];
beforeAll(async () => {
  db = await openDuckDb();
});
afterAll(() => db.close());
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function copyFixture(name: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'lc-cli-hudi-mor-'));
  dirs.push(dir);
  await cp(join(HUDI_FIXTURES, name), dir, { recursive: true });
  return dir;
}

async function cli(args: readonly string[]): Promise<{ code: number; out: string; err: string }> {
  const io = captureIo({ now: NOW });
  const code = await run([...args], io);
  return { code, out: io.stdout.join('\n'), err: io.stderr.join('\n') };
}

function canonical(rows: readonly Record<string, unknown>[]): string[] {
  return rows
    .map((r) => JSON.stringify(COLUMNS.map((c) => (typeof r[c] === 'bigint' ? String(r[c]) : r[c]))))
    .sort();
}

/** Hudi's snapshot view of the table: per live slice, the base rows less the merge's drops plus its log rows. */
async function mergedView(dir: string): Promise<string[]> {
  const store = new LocalObjectStore(dir);
  const state = await readHudiTable(store, '');
  const rows: Record<string, unknown>[] = [];
  for (const slice of state.partitions.flatMap((p) => p.liveSlices)) {
    const key = slice.baseFile?.key ?? '';
    const base = await db.rows(
      `SELECT ${COLUMNS.join(', ')} FROM read_parquet(${sqlString(join(dir, key))}, file_row_number = true) ORDER BY file_row_number`,
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
  return canonical(rows);
}

describe('lake-compactor compact on a Hudi Merge-on-Read table (mor_v6_trips_8i1u)', () => {
  it('compacts the slice with a log file into a new base file holding the merged view, then compacts nothing', async () => {
    // Prepare
    const dir = await copyFixture('mor_v6_trips_8i1u');
    const expected = await mergedView(dir);

    // Act
    const first = await cli(['compact', dir, ...FLAGS]);
    const second = await cli(['compact', dir, ...FLAGS]);

    // Assess
    expect(first.code, first.err).toBe(0);
    expect(first.out).toContain('Hudi Merge-on-Read compaction 20261201000000000: 1 file slice(s)');
    const store = new LocalObjectStore(dir);
    const state = await readHudiTable(store, '');
    const slices = state.partitions.flatMap((p) => p.liveSlices);
    expect(slices.every((s) => s.logFiles.length === 0)).toBe(true);
    const compacted = slices.filter((s) => s.baseInstantTime === '20261201000000000');
    expect(compacted.map((s) => s.partition)).toEqual(['city=san_francisco']);
    const files = slices.map((s) => sqlString(join(dir, s.baseFile?.key ?? '')));
    expect(
      canonical(await db.rows(`SELECT ${COLUMNS.join(', ')} FROM read_parquet([${files.join(', ')}])`)),
    ).toEqual(expected);
    for (const s of compacted) {
      const key = s.baseFile?.key ?? '';
      const own = await db.rows(
        `SELECT DISTINCT _hoodie_file_name AS f FROM read_parquet(${sqlString(join(dir, key))})`,
      );
      expect(own).toEqual([{ f: key.slice(key.lastIndexOf('/') + 1) }]);
      const keys = (
        await db.rows(`SELECT _hoodie_record_key AS k FROM read_parquet(${sqlString(join(dir, key))})`)
      ).map((r) => String(r.k));
      const kv = (await readFooter(store, key)).keyValueMetadata;
      const bloom = bloomFilterOfFooter(kv);
      expect(bloom).toBeDefined();
      expect(keys.filter((k) => !bloom?.mightContain(k))).toEqual([]);
      expect(kv.hoodie_min_record_key).toBe([...keys].sort()[0]);
      expect(kv.hoodie_max_record_key).toBe([...keys].sort().at(-1));
    }
    expect(second.code, second.err).toBe(0);
    expect(second.out).toContain('Hudi Merge-on-Read compaction: nothing to compact (0 delta commit(s)');
  });

  it('compacts with the workers the command asks for (--workers 2): the engine encodes and verifies each new base file on them, the merged view unchanged', async () => {
    // Prepare: the engine as deployed, recording the workers each rewrite and verification was handed
    const dir = await copyFixture('mor_v6_trips_8i1u');
    const expected = await mergedView(dir);
    const asked: { rewrite: (number | undefined)[]; verify: (number | undefined)[] } = {
      rewrite: [],
      verify: [],
    };
    const engine: ParquetEngine = {
      ...defaultParquetEngine,
      rewriteGroup: async (io, group, options) => {
        asked.rewrite.push(options.workers);
        return defaultParquetEngine.rewriteGroup(io, group, options);
      },
      verifyOutputs: async (store, outputs, fingerprint, options) => {
        asked.verify.push(options?.workers);
        return defaultParquetEngine.verifyOutputs(store, outputs, fingerprint, options);
      },
    };

    // Act
    await runCompact(
      dir,
      {
        format: 'hudi',
        hudiLock: 'storage',
        hudiIndexType: 'BLOOM',
        hudiTimezone: 'UTC',
        hudiCompactionDeltaCommits: 1,
        workers: 2,
      },
      { out: () => undefined, clock: { now: () => NOW }, env: {} },
      { engine },
    );

    // Assess: the compaction's one slice was rewritten and verified with 2 workers; the merged view is unchanged
    expect(asked.rewrite[0]).toBe(2);
    expect(asked.verify[0]).toBe(2);
    const store = new LocalObjectStore(dir);
    const slices = (await readHudiTable(store, '')).partitions.flatMap((p) => p.liveSlices);
    expect(slices.every((s) => s.logFiles.length === 0)).toBe(true);
    const files = slices.map((s) => sqlString(join(dir, s.baseFile?.key ?? '')));
    expect(
      canonical(await db.rows(`SELECT ${COLUMNS.join(', ')} FROM read_parquet([${files.join(', ')}])`)),
    ).toEqual(expected);
  });

  it('refuses a table with another payload class by name and changes no byte', async () => {
    // Prepare
    const dir = await copyFixture('mor_v6_trips_8i1u');
    const props = join(dir, '.hoodie', 'hoodie.properties');
    await writeFile(
      props,
      (await readFile(props, 'utf8')).replace('OverwriteWithLatestAvroPayload', 'EventTimeAvroPayload'),
    );
    const before = await folderContentSnapshot(dir);

    // Act
    const result = await cli(['compact', dir, ...FLAGS]);

    // Assess
    expect(result.code).not.toBe(0);
    expect(result.err).toContain('payload class org.apache.hudi.common.model.EventTimeAvroPayload');
    expect(await folderContentSnapshot(dir)).toEqual(before);
  });
});
