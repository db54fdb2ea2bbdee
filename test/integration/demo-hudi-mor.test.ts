// `npm run demo -- --format hudi --hudi-table-type mor` in small: the appender streams insert and update
// deltacommits into a Merge-on-Read table on the embedded local cloud while the state machine compacts each
// partition: the demo's checks all hold (every compaction's base files = the merged view of its slices), and the
// kept table's merged view now equals the latest version of every record, rebuilt from every file the completed
// deltacommits wrote (base files by DuckDB, log blocks decoded one by one). A file of its own: each local cloud runs
// in a process of its own (run after the Copy-on-Write demo in one process, its profiler and sweep kept reaching
// the first cloud's stopped endpoints: ECONNREFUSED, every profiler message dead-lettered).
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readLogBlocks } from '../../functions/core/formats/hudi/log/blocks.js';
import { DecodeBudget } from '../../functions/core/formats/hudi/log/budget.js';
import { decodeBlockRecords } from '../../functions/core/formats/hudi/log/content.js';
import { decodeTimelineAvro } from '../../functions/core/formats/hudi/timeline-writer/index.js';
import { type DemoIo, main } from '../../functions/tools/demo.js';
import type { HudiMorDemoResult } from '../../functions/tools/demo-hudi-mor.js';
import { MOR_ROW_COLUMNS } from '../../functions/tools/sample-hudi.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';
import { hudiMergedView } from '../support/hudi-mor-view.js';

function capture(): DemoIo & { stdout: () => string; stderr: () => string } {
  let out = '';
  let err = '';
  return {
    out: (text) => {
      out += text;
    },
    err: (text) => {
      err += text;
    },
    tty: false,
    stdout: () => out,
    stderr: () => err,
  };
}

async function demoFolders(): Promise<string[]> {
  return (await readdir(tmpdir())).filter((name) => name.startsWith('lake-compactor-hudi-demo-'));
}

let db: DuckDb;
let kept: string | undefined;

/** The process's own temp folder (this file runs in a fork of its own): the other Hudi demo file, running beside it, creates demo folders of the same prefix in the shared one. */
let privateTmp: string | undefined;
const sharedTmp = process.env.TMPDIR;

beforeAll(async () => {
  privateTmp = await mkdtemp(join(tmpdir(), 'lc-demo-hudi-tmp-'));
  process.env.TMPDIR = privateTmp;
  db = await openDuckDb();
});

afterAll(async () => {
  db.close();
  if (kept !== undefined) await rm(kept, { recursive: true, force: true });
  if (sharedTmp === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = sharedTmp;
  if (privateTmp !== undefined) await rm(privateTmp, { recursive: true, force: true });
});

describe('npm run demo -- --format hudi --hudi-table-type mor', () => {
  it('compacts every partition of a 2-partition Merge-on-Read table beside its appender: the merged view keeps the latest version of every record', async () => {
    // Prepare
    const io = capture();
    const foldersBefore = await demoFolders();

    // Act
    const code = await main(
      ['--format', 'hudi', '--hudi-table-type', 'mor', '--days', '2', '--batches', '3', '--keep', '--json'],
      io,
    );

    // Assess: the demo's own checks
    expect(code, io.stderr()).toBe(0);
    const result = JSON.parse(io.stdout()) as HudiMorDemoResult;
    kept = result.dataDir;
    expect(result).toMatchObject({ format: 'hudi', tableType: 'MERGE_ON_READ', ok: true });
    expect(result.checks.map((c) => [c.name, c.ok])).toEqual([
      ['every partition compacted, no run failed', true],
      ['each compaction = the merged view of its slices', true],
      ['merged view = latest version of every record', true],
      ['every deltacommit completed', true],
      ['the writer committed while runs ran', true],
      ['no pending instant or held lock left', true],
      ['no staging left', true],
      ['no dead letters', true],
    ]);
    // 2 partitions × (3 inserts + 2 update deltacommits); each partition compacted at least once
    expect(result.appended).toMatchObject({ insertCommits: 6, deltaCommits: 4 });
    expect(result.timeline).toMatchObject({ tableVersion: 8, deltacommits: 10, pending: 0 });
    expect(result.timeline.compactions).toBeGreaterThanOrEqual(2);
    expect(new Set(result.compactions.flatMap((c) => c.partitions))).toEqual(new Set(['1', '2']));
    for (const c of result.compactions) {
      expect(c.logFiles).toBeGreaterThan(0);
      expect(c).toMatchObject({ rowsAfter: c.rowsBefore, onlyBefore: 0, onlyAfter: 0 });
    }

    // Assess: the kept table, the latest version of each record rebuilt from what the deltacommits wrote
    if (kept === undefined) throw new Error('--keep gave no data folder');
    const table = join(kept, 'table');
    const timeline = join(table, '.hoodie', 'timeline');
    const written: string[] = [];
    for (const name of (await readdir(timeline)).filter((n) => /^\d{17}_\d{17}\.deltacommit$/.test(n))) {
      const [meta] = decodeTimelineAvro(await readFile(join(timeline, name))).records as [
        { partitionToWriteStats: Record<string, { path: string }[]> },
      ];
      for (const stats of Object.values(meta.partitionToWriteStats))
        written.push(...stats.map((s) => s.path));
    }
    const versions: Record<string, unknown>[] = [];
    for (const file of written.filter((f) => f.endsWith('.parquet')))
      versions.push(...(await db.rows(`SELECT * FROM read_parquet(${sqlString(join(table, file))})`)));
    for (const file of written.filter((f) => !f.endsWith('.parquet')))
      for (const block of readLogBlocks(file, await readFile(join(table, file)))) {
        if (block.kind !== 'block') throw new Error(`corrupt block in ${file}`);
        const decoded = await decodeBlockRecords(block, new DecodeBudget());
        if (decoded.kind === 'data') versions.push(...decoded.records);
      }
    const latest = new Map<string, Record<string, unknown>>();
    for (const row of versions) {
      const key = String(row._hoodie_record_key);
      const seen = latest.get(key);
      if (seen === undefined || BigInt(String(row.ts)) > BigInt(String(seen.ts))) latest.set(key, row);
    }
    const columns = MOR_ROW_COLUMNS;
    const expected = [...latest.values()].map((r) => JSON.stringify(columns.map((c) => String(r[c])))).sort();
    expect(versions.length).toBeGreaterThan(latest.size);
    expect(await hudiMergedView(db, table, '', columns)).toEqual(expected);

    // Assess: nothing but the kept folder is left in the temp directory
    await rm(kept, { recursive: true, force: true });
    kept = undefined;
    expect(await demoFolders()).toEqual(foldersBefore);
  }, 420_000);

  it('exits 2 without starting anything for a Hudi table type other than cow or mor', async () => {
    // Prepare
    const io = capture();

    // Act
    const code = await main(['--format', 'hudi', '--hudi-table-type', 'hive'], io);

    // Assess
    expect(code).toBe(2);
    expect(io.stderr()).toContain('expected one of cow, mor');
    expect(io.stdout()).toBe('');
  });

  it('refuses a Merge-on-Read demo of fewer than 3 inserts per partition before starting the local cloud', async () => {
    // Prepare
    const io = capture();
    const foldersBefore = await demoFolders();

    // Act
    const code = await main(
      ['--format', 'hudi', '--hudi-table-type', 'mor', '--days', '1', '--batches', '2'],
      io,
    );

    // Assess
    expect(code).toBe(1);
    expect(io.stderr()).toContain('needs at least 3 inserts per partition');
    expect(io.stdout() + io.stderr()).not.toContain('Starting the local cloud');
    expect(await demoFolders()).toEqual(foldersBefore);
  });
});
