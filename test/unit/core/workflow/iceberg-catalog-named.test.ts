// The Lambda side of the refusal of an Iceberg table whose metadata a metastore catalog names
// (`00000-<uuid>.metadata.json`): the workflow's plan, commit and settle steps over the format the composition
// root builds from the table config (`formatForTable`, as workflow-runtime.ts does), and the scheduled vacuum
// handler, all refuse it under the path catalog — the config's default — with IcebergCatalogMismatchError and not
// one byte of the table changed. With `catalog: { type: "path", metadataNaming: "uuid" }` in the config the same
// steps settle a group a crash left published, every row kept (DuckDB reading the files the snapshot names).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../../../functions/adapters/local-object-store.js';
import { MemoryJournal } from '../../../../functions/adapters/memory-journal.js';
import { StoreJournal } from '../../../../functions/adapters/store-journal.js';
import { runCompact } from '../../../../functions/cli/compact.js';
import { loadTable } from '../../../../functions/core/formats/iceberg/catalog.js';
import { readSnapshotFiles } from '../../../../functions/core/formats/iceberg/live-files.js';
import { formatForTable } from '../../../../functions/core/formats/index.js';
import { normalizeRunInput } from '../../../../functions/core/run-input.js';
import { parseTableConfigs } from '../../../../functions/core/table-config.js';
import { commitStep } from '../../../../functions/core/workflow/commit.js';
import { planRun } from '../../../../functions/core/workflow/plan.js';
import { settlePartition } from '../../../../functions/core/workflow/settle.js';
import { createVacuumHandler } from '../../../../functions/handlers/vacuum.js';
import { ManualClock } from '../../../../functions/ports/clock.js';
import { createObservability } from '../../../../functions/shared/middleware.js';
import { dyingStore } from '../../../support/crash-store.js';
import { type DuckDb, openDuckDb, sqlString } from '../../../support/duckdb.js';
import { folderContentSnapshot } from '../../../support/folder-snapshot.js';
import { catalogNamedCopy } from '../../../support/iceberg-catalog-named.js';

const SOURCE = 'spark_v1_unpartitioned_small_files';
const NOW = Date.UTC(2026, 0, 2);
const MISMATCH =
  /is read through the path catalog \(the default\), but its metadata\/ folder holds no v<N>\.metadata\.json/;

let db: DuckDb;
let dir: string;

/** The table `events` at the bucket's `events/`, as a deployment configures it; `uuid` adds the acknowledgement. */
function tablesOf(uuid: boolean, prefix = 'events') {
  return parseTableConfigs([
    {
      name: 'events',
      bucket: 'lake',
      prefix,
      format: 'iceberg',
      ...(uuid ? { catalog: { type: 'path', metadataNaming: 'uuid' } } : {}),
    },
  ]);
}

/** Every live row of the current snapshot under `root` of `store`, canonically ordered. */
async function liveRows(store: LocalObjectStore, base: string, root: string): Promise<string[]> {
  const files = await readSnapshotFiles(store, await loadTable(store, root));
  const list = files.dataFiles.map((f) => sqlString(join(base, f.entry.file.key))).join(', ');
  return (await db.rows(`SELECT * FROM read_parquet([${list}]) ORDER BY ALL`)).map((r) => JSON.stringify(r));
}

beforeAll(async () => {
  db = await openDuckDb();
});
afterAll(() => db.close());
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'lc-iceberg-catalog-named-steps-'));
  await catalogNamedCopy(SOURCE, dir);
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('the workflow steps on an Iceberg table with catalog-named metadata, configured with the path catalog', () => {
  it('the plan step refuses it before any plan or journal entry is written', async () => {
    // Prepare
    const tables = tablesOf(false);
    const store = new LocalObjectStore(dir);
    const journal = new MemoryJournal();
    const normalized = normalizeRunInput(
      { table: 'events', partition: '', quietMinutes: 0, force: true },
      tables,
      { executionName: 'r1', startedAt: NOW },
    );
    if (normalized.mode !== 'single') throw new Error('expected one partition');
    const before = await folderContentSnapshot(dir);

    // Act
    const planned = planRun(
      {
        store,
        journal,
        clock: new ManualClock(NOW),
        leases: { holds: async () => true },
        format: formatForTable(tables, 'events', {}),
      },
      normalized.run,
      { inlineGroupLimit: 40, compactMemoryMb: 1024 },
    );

    // Assess
    await expect(planned).rejects.toMatchObject({
      name: 'IcebergCatalogMismatchError',
      message: expect.stringMatching(MISMATCH),
    });
    expect(await folderContentSnapshot(dir)).toEqual(before);
    expect(await journal.listRun('r1')).toEqual([]);
  });

  it('the commit and settle steps refuse a group a crash left published, changing no byte; with metadataNaming "uuid" settle rolls it forward, every row kept', async () => {
    // Prepare: an acknowledged compaction dies at its commit (the put of the next metadata file); the journal and
    // the table are at the CLI's layout (the table is the folder's root), which the steps then read
    const root = join(dir, 'events');
    const store = new LocalObjectStore(root);
    const rows = await liveRows(store, root, '');
    await expect(
      runCompact(
        root,
        { format: 'iceberg', catalog: 'path', pathMetadataNaming: 'uuid' },
        { out: () => {}, clock: { now: () => NOW }, env: {} },
        {
          wrapStore: (s) =>
            dyingStore(
              s,
              (call) => call.method === 'put' && /^metadata\/v\d+\.metadata\.json$/.test(call.key),
            ),
        },
      ),
    ).rejects.toThrow(/injected: the process died/);
    const journal = new StoreJournal(store);
    const entries: string[] = [];
    for await (const o of store.listAll('_lake-compactor/journal/runs/')) entries.push(o.key);
    const [runId, groupFile] = entries[0]?.split('/').slice(-2) ?? [];
    const entry = await journal.get(runId ?? '', (groupFile ?? '').replace(/\.json$/, ''));
    if (runId === undefined || entry === undefined) throw new Error('the crash left no journal entry');
    const partition = entry.partition;
    const [group] = await journal.listOpen({ table: 'events', partition });
    if (group === undefined) throw new Error('the crash left no open group');
    expect((await journal.get(runId, group.groupId))?.state).toBe('published');
    const deps = (uuid: boolean) => ({
      store,
      journal,
      clock: new ManualClock(NOW),
      format: formatForTable(tablesOf(uuid, ''), 'events', {}),
    });
    const before = await folderContentSnapshot(dir);

    // Act
    const commit = commitStep(deps(false), runId, group.groupId);
    await commit.catch(() => undefined);
    const refused = await settlePartition(deps(false), { table: 'events', partition }, { reason: 'test' });
    const afterRefusals = await folderContentSnapshot(dir);
    const settled = await settlePartition(deps(true), { table: 'events', partition }, { reason: 'test' });

    // Assess
    await expect(commit).rejects.toMatchObject({
      name: 'IcebergCatalogMismatchError',
      message: expect.stringMatching(MISMATCH),
    });
    expect(refused.settled).toEqual([]);
    expect(refused.unsettled).toEqual([
      expect.objectContaining({
        groupId: group.groupId,
        state: 'published',
        error: expect.stringMatching(/^IcebergCatalogMismatchError: .*holds no v<N>\.metadata\.json/),
      }),
    ]);
    expect(afterRefusals).toEqual(before);
    expect(settled.unsettled).toEqual([]);
    expect(settled.settled.map((g) => g.to)).toEqual(['done']);
    expect((await loadTable(store, '')).metadataKey).toBe('metadata/v2.metadata.json');
    expect(await liveRows(store, root, '')).toEqual(rows);
  });

  it('the scheduled vacuum makes the table its error and deletes nothing of it', async () => {
    // Prepare
    const before = await folderContentSnapshot(dir);
    const handler = createVacuumHandler(
      {
        tables: tablesOf(false),
        workRoot: '_lake-compactor/',
        storeFor: () => new LocalObjectStore(dir),
        journalFor: () => new MemoryJournal(),
        clock: new ManualClock(NOW + 400 * 24 * 3600 * 1000),
      },
      createObservability('test'),
    );

    // Act
    const report = await handler({ dryRun: false, resume: true });

    // Assess
    const [table] = report.icebergTables ?? [];
    expect(table?.error?.name).toBe('IcebergCatalogMismatchError');
    expect(table?.error?.message).toMatch(MISMATCH);
    expect(report.removed['iceberg-expired'].count).toBe(0);
    // Every byte of the table unchanged (the work area holds the pass's checkpoint, which remembers the failed table)
    const tableBytes = (lines: string[]) => lines.filter((line) => !line.startsWith('_lake-compactor/'));
    expect(tableBytes(await folderContentSnapshot(dir))).toEqual(tableBytes(before));
  });
});
