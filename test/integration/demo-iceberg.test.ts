// `npm run demo -- --format iceberg` in small: appends stream into an Iceberg table on the embedded local cloud while
// the real stack compacts it; the live rows stay every appended row and expire_snapshots deletes only what no
// remaining snapshot references. Bad formats are usage errors; the report shows a failed check as FAILED.
import { readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { type DemoIo, main } from '../../functions/tools/demo.js';
import { formatIcebergDemoReport, type IcebergDemoResult } from '../../functions/tools/demo-iceberg.js';

/** Collects what the demo writes. */
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
  return (await readdir(tmpdir())).filter((name) => name.startsWith('lake-compactor-iceberg-demo-'));
}

describe('npm run demo -- --format iceberg', () => {
  it('compacts a streamed 2-day × 5-append Iceberg table with identical rows, then expires only unreferenced files', async () => {
    // Prepare
    const io = capture();
    const foldersBefore = await demoFolders();

    // Act
    const code = await main(['--format', 'iceberg', '--days', '2', '--batches', '5', '--json'], io);

    // Assess
    expect(code, io.stderr()).toBe(0);
    const result = JSON.parse(io.stdout()) as IcebergDemoResult;
    expect(result.checks.filter((c) => !c.ok)).toEqual([]);
    expect(result.appended.files).toBe(10);
    // Rows: the current snapshot's live rows are every appended row, as a multiset, before and after expiry.
    for (const rows of [result.rows.beforeExpire, result.rows.afterExpire]) {
      expect(rows).toEqual({ live: result.appended.rows, onlyAppended: 0, onlyLive: 0 });
    }
    expect(result.appended.rows).toBeGreaterThan(0);
    // Compaction committed replace snapshots beside the writer's appends, one partition at least once each.
    expect(result.snapshots.appends).toBe(10);
    expect(result.snapshots.replaces).toBeGreaterThanOrEqual(1);
    expect(result.beforeExpire.liveDataFiles).toBeLessThan(10);
    expect(new Set(result.runs.filter((r) => r.outcome === 'compacted').map((r) => r.partition)).size).toBe(
      2,
    );
    // Expiry: every snapshot but the current went; what it deleted no remaining snapshot references, and every
    // file a remaining snapshot references is still there; the compacted-away inputs are gone from storage.
    expect(result.expire.expiredSnapshots).toBe(result.snapshots.total - 1);
    expect(result.expire.deletedByKind.data).toBe(
      result.beforeExpire.dataFilesOnStorage - result.beforeExpire.liveDataFiles,
    );
    expect(result.expire.deletedButReferenced).toEqual([]);
    expect(result.expire.referencedButMissing).toEqual([]);
    expect(result.afterExpire.dataFilesOnStorage).toBe(result.afterExpire.liveDataFiles);
    expect(result.afterExpire.liveDataFiles).toBe(result.beforeExpire.liveDataFiles);
    expect(io.stderr()).toContain('replace commits');
    expect(await demoFolders()).toEqual(foldersBefore);
  }, 240_000);

  it('exits 2 without starting anything when the format is not one the demo knows', async () => {
    // Prepare
    const io = capture();

    // Act
    const code = await main(['--format', 'orc'], io);

    // Assess
    expect(code).toBe(2);
    expect(io.stderr()).toContain('expected one of parquet, delta, iceberg');
    expect(io.stdout()).toBe('');
  });

  it('reports FAILED and marks the check when expiry deleted a file a remaining snapshot references', () => {
    // Prepare
    const files = { liveDataFiles: 2, dataFilesOnStorage: 2, objectsOnStorage: 30 };
    const rows = { live: 10, onlyAppended: 0, onlyLive: 0 };
    const result: IcebergDemoResult = {
      ok: false,
      format: 'iceberg',
      checks: [
        { name: 'every partition compacted', ok: true, detail: '1/1 partitions' },
        {
          name: 'expiry deleted only files no remaining snapshot references',
          ok: false,
          detail: '3 files deleted; 1 of them still referenced',
        },
      ],
      options: { days: 1, batches: 2, policy: {} },
      appended: { files: 2, rows: 10, commitAttempts: 3 },
      snapshots: { total: 3, appends: 2, replaces: 1 },
      beforeExpire: files,
      afterExpire: files,
      rows: { beforeExpire: rows, afterExpire: rows },
      expire: {
        expiredSnapshots: 2,
        retainedSnapshots: 1,
        deletedFiles: 3,
        deletedBytes: 300,
        deletedByKind: { data: 2, 'manifest-list': 1 },
        deletedButReferenced: ['events/data/x.parquet'],
        referencedButMissing: [],
        failed: 0,
      },
      runs: [],
      stagingLeft: [],
      deadLetters: 0,
      timingsMs: { startup: 0, stream: 0, settle: 0, expire: 0, total: 0 },
    };

    // Act
    const report = formatIcebergDemoReport(result);

    // Assess
    expect(report).toContain('✘ expiry deleted only files no remaining snapshot references');
    expect(report).toContain('2 snapshots expired, 1 retained; 3 files deleted (2 data, 1 manifest-list)');
    expect(report).toContain('lost 1 races to the compaction');
    expect(report).toContain('FAILED');
    expect(report).not.toContain('All checks held.');
  });
});
